"""The checks of a DLedger CommitLog's ledger (``dledger-<selfId>/``): DLedger's own load and
recovery rules (:meth:`rmqlab.formats.dledger.Ledger.check`), one report a ledger. The records in
the entries are checked as every CommitLog's are (check_commitlog reads the data folder)."""
from __future__ import annotations

from pathlib import Path

from rmqlab.errors import FormatError
from rmqlab.formats.dledger import Ledger
from rmqlab.verify.report import FileReport, make_problem


def verify_ledger(folder: Path, file_size: int | None = None) -> FileReport:
    """One ledger's report: its summary as counts (entries, begin, end and committed index, terms),
    every problem of :meth:`Ledger.check` as an error (the broker refuses the ledger or truncates
    it there) or a warning (recovery repairs it: the index rewritten, the committed index capped).
    Read-only. Cost: :meth:`Ledger.check`, a walk of every data file's entry heads.

    >>> import tempfile
    >>> r = verify_ledger(Path(tempfile.mkdtemp()) / "dledger-n0")
    >>> r.kind, r.counts["entries"], r.problems
    ('dledger', 0, [])
    """
    ledger = Ledger(folder, file_size=file_size)
    rep = FileReport(str(folder), "dledger")
    rep.counts = ledger.summary()
    for p in ledger.check():     # check codes dledger.<kind>: dledger.PROBLEM_KINDS
        rep.problems.append(make_problem(f"dledger.{p.kind}", FormatError, p.reason, p.path, p.offset, p.field,
                                         severity="error" if p.fatal else "warning"))
    return rep
