"""The checks of the checkpoint file."""
from __future__ import annotations

import os
from pathlib import Path

from rmqlab.errors import FormatError, RmqlabError
from rmqlab.formats import checkpoint as cpf
from rmqlab.verify.report import FileReport, make_problem, problem_from_error


def verify_checkpoint(path: str | os.PathLike) -> FileReport:
    """The per-file checks of a checkpoint file: 4096 bytes, zero padding, no negative field.
    Read-only. Cost: one 4 KiB read.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "checkpoint")
    >>> cpf.write_checkpoint(p, cpf.StoreCheckpoint(1718000005000, -1, 0))
    >>> [(x.check, x.offset, x.field) for x in verify_checkpoint(p).problems]
    [('checkpoint.value', 8, 'logics_msg_timestamp')]
    """
    return checkpoint_report(Path(path))[0]


def checkpoint_report(path: Path) -> tuple[FileReport, cpf.StoreCheckpoint]:
    rep = FileReport(str(path), "checkpoint")
    try:
        cpf.read_checkpoint(path, strict=True)
    except RmqlabError as e:
        rep.problems.append(problem_from_error("checkpoint.file", e))
    c = cpf.read_checkpoint(path, strict=False)
    rep.counts = c.as_dict()
    for f in cpf.CHECKPOINT.fields:
        v = getattr(c, f.name)
        if v < 0:
            rep.problems.append(make_problem("checkpoint.value", FormatError, f"{f.name} {v} is negative",
                                         path, f.offset, f.name))
    return rep, c
