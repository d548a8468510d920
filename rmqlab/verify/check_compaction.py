"""The checks of a 5.1+ compaction store (``compaction/``), by the rules of ``CompactionLog`` and
``SparseConsumeQueue`` (:mod:`rmqlab.formats.compaction` names the release read): per queue, the
log and queue files the broker's load accepts (``sanityCheck``: the same file names), the units
as recovery takes them, and each unit against the record it points at in the compaction log;
the position checkpoint's JSON."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rmqlab.errors import CorruptIndexError, FormatError, RmqlabError
from rmqlab.formats import commitlog as cl
from rmqlab.formats import compaction as cpt
from rmqlab.verify.report import FileReport, make_problem, problem_from_error


def verify_compaction(root: Path) -> list[FileReport]:
    """One report a compaction queue (``compaction/compactionCq/<topic>/<queueId>``) and one for
    the position checkpoint. Errors: log and queue files that differ in names (the broker's load
    throws, ``compaction.files``), queue files recovery rejects (``compaction.cq``), a unit whose
    record in the compaction log is missing, of another size, queue offset, topic or queue, or
    whose PHYSICALOFFSET is not its position there (``compaction.unit``), a checkpoint that is
    not the manager's JSON (``compaction.checkpoint``). Read-only. Cost: per queue, the units
    and one read of the records they point at.

    >>> import tempfile
    >>> verify_compaction(Path(tempfile.mkdtemp()))
    []
    """
    reports = [_queue_report(root, topic, qid) for topic, qid in cpt.queues(root)]
    checkpoint = root / cpt.COMPACTION_DIR / "position-checkpoint"
    if checkpoint.is_file():
        rep = FileReport(str(checkpoint), "compaction-checkpoint")
        try:
            cp = cpt.read_position_checkpoint(checkpoint)
            rep.counts = {"empty": cp.empty, "queues": len(cp.queue_offsets)}
        except RmqlabError as e:
            rep.problems.append(problem_from_error("compaction.checkpoint", e))
        reports.append(rep)
    return reports


def _queue_report(root: Path, topic: str, queue_id: int) -> FileReport:
    qdir, ldir = cpt.cq_dir(root, topic, queue_id), cpt.log_dir(root, topic, queue_id)
    rep = FileReport(str(qdir), "compaction")
    names = {p.name for p in qdir.iterdir() if p.is_file()} if qdir.is_dir() else set()
    log_names = {p.name for p in ldir.iterdir() if p.is_file()} if ldir.is_dir() else set()
    if names != log_names:
        odd = sorted(names ^ log_names)[0]
        rep.problems.append(make_problem(
            "compaction.files", FormatError, f"log files {sorted(log_names)} and queue files {sorted(names)} differ "
            f"(CompactionLog's sanityCheck throws: the broker does not load the queue)",
            (qdir if odd in names else ldir) / odd, 0, "file name"))
    try:
        q = cpt.SparseQueue.open(qdir)
    except RmqlabError as e:
        rep.problems.append(problem_from_error("compaction.cq", e))
        return rep
    with q:
        units = q.queue.units
        rep.counts = {"topic": topic, "queue_id": queue_id, "units": int(len(units)), "min_offset": q.min_offset,
                      "max_offset": q.max_offset}
        # a compacted queue has gaps by design: its offsets need only increase
        rep.problems += [problem_from_error("compaction.cq", e) for e in q.queue.problems(contiguous=False)]
        if len(units):
            _units_against_log(units, ldir, topic, queue_id, q, rep)
    return rep


def _units_against_log(units: np.ndarray, ldir: Path, topic: str, queue_id: int, q: cpt.SparseQueue,
                       rep: FileReport) -> None:
    """Each unit's record in the compaction log, read where the unit says."""
    phy = units["commitlog_offset"].astype(np.int64)
    files = cl.store_files(ldir) if ldir.is_dir() else []
    inside = np.zeros(len(phy), bool)
    for f in files:
        inside |= (phy >= f.start_offset) & (phy + units["size"] <= f.start_offset + f.size)
    bad: list[tuple[int, str, str]] = []
    if (~inside).any():
        k = int(np.flatnonzero(~inside)[0])
        bad.append((k, "commitlog_offset", f"points past the compaction log's files ({int((~inside).sum())} such)"))
    ok = np.flatnonzero(inside)
    if len(ok):
        try:
            got = cl.read_at(ldir, phy[ok], body=False)
        except (FormatError, ValueError) as e:
            bad.append((int(ok[0]), "commitlog_offset", f"is not where a record starts: {e}"))
        else:
            checks = (
                ("size", got["total_size"].to_numpy() != units["size"][ok], "size is not its record's TOTALSIZE"),
                ("msg_base_offset", got["queue_offset"].to_numpy() != units["msg_base_offset"][ok],
                 "base offset is not its record's QUEUEOFFSET"),
                ("commitlog_offset", got["phy_offset"].to_numpy() != phy[ok],
                 "record's PHYSICALOFFSET is not its position in the compaction log"),
                ("commitlog_offset", (got["topic"].to_numpy() != topic) | (got["queue_id"].to_numpy() != queue_id),
                 "record is of another topic or queue"),
            )
            for fld, mask, what in checks:
                if mask.any():
                    bad.append((int(ok[np.flatnonzero(mask)[0]]), fld, f"{what} ({int(mask.sum())} such)"))
    for k, fld, what in bad:
        seg_pos = _unit_place(q, k)
        rep.problems.append(make_problem("compaction.unit", CorruptIndexError, f"unit {k}: {what}", seg_pos[0],
                                         seg_pos[1] + cpt.bcq.UNIT.offset(fld), fld))


def _unit_place(q: cpt.SparseQueue, k: int) -> tuple[Path, int]:
    """The file and byte position of the k-th unit of the queue."""
    for f, units in q.queue.segments():
        if k < len(units):
            return f.path, k * cpt.bcq.UNIT_SIZE
        k -= len(units)
    return q.queue.folder, 0
