"""What verify reports: the check codes, :class:`Problem`, :class:`FileReport` and :class:`VerifyReport`."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from rmqlab.errors import RmqlabError

#: What verify_path can verify.
KINDS = ("store", "commitlog", "consumequeue", "index", "checkpoint", "batchconsumequeue", "dledger", "rocksdbcq")
Kind = Literal["store", "commitlog", "consumequeue", "index", "checkpoint", "batchconsumequeue", "dledger", "rocksdbcq"]

#: Every check code a :class:`Problem` can carry, and what it means.
CHECKS: dict[str, str] = {
    # IndexFile, per file
    "index.geometry": "the file size does not fit the geometry (or no geometry could be inferred)",
    "index.header": "a header field contradicts the geometry (index_count, hash_slot_count range)",
    "index.hash-slot-count": "hash_slot_count disagrees with the slot-count rule",
    "index.header-range": "begin/end phy offsets or timestamps disagree with the first/last entries",
    "index.slot-range": "a slot value lies outside 0..index_count-1",
    "index.slot-chain": "a slot points at an entry hashed to another slot",
    "index.prev-range": "a prev_index is not older than its entry (out of range, self-loop or cycle)",
    "index.prev-slot": "a prev_index links entries of different slots",
    "index.entry-refs": "an entry is on no chain, or on more than one",
    "index.negative-hash": "an entry's key_hash is negative",
    "index.negative-time-diff": "an entry's time_diff is negative",
    "index.time-order": "an older entry of a chain has a greater time_diff than a newer one",
    "index.tail": "entry 0 or an entry from index_count on holds non-zero bytes",
    # IndexFile, across files
    "index.file-order": "index files (by name) overlap in CommitLog offsets",
    "index.phy-offset": "an entry's phy_offset is not where a message starts",
    "index.key-hash": "an entry's key_hash is not index_hash(topic#key) of any key of its message",
    "index.entry-time": "an entry's time_diff is not what putKey stored for its message's store time",
    "index.rolled-back": "an entry points at a rolled-back transaction record (buildIndex skips them)",
    "index.missing-key": "a key of a message inside the indexed range has no entry",
    "index.lost-keys": "keys of messages between two consecutive index files are in neither: an abnormal restart "
                       "destroyed the file that held them and its recovery did not re-index them (a warning)",
    "index.interrupted-put": "keys of the last message indexed have no entry in a store that did not shut down "
                             "cleanly: the broker was killed between that message's putKey calls, and its restart "
                             "destroys the file (a warning)",
    # CommitLog, per file
    "commitlog.file-size": "the file size is not the mapped file size",
    "commitlog.file-name": "the file name is not a multiple of the mapped file size",
    "commitlog.continuity": "a file does not start where the previous one ends",
    "commitlog.record": "a record breaks the walk (TOTALSIZE, MAGICCODE, lengths)",
    "commitlog.skipped-pairs": "a PROPERTIES block holds a pair the broker's parser skips (a warning)",
    "commitlog.torn-tail": "the last file ends in a torn write (the broker truncates it at recovery)",
    "commitlog.body-crc": "BODYCRC is not CRC32(body) & 0x7FFFFFFF",
    "commitlog.prop-crc": "a __CRC32# property (5.2+) does not match the record's bytes before it",
    "commitlog.body-codec": "a compressed body (SYSFLAG 0x1) does not decompress with the codec SYSFLAG names",
    "commitlog.phy-offset-field": "PHYSICALOFFSET is not the file's start offset + the record's position",
    "commitlog.blank": "a file other than the last does not end with the end-of-file blank record",
    # ConsumeQueue, per queue folder
    "cq.file-name": "a file name is not a 20-digit offset, not a multiple of the file size, or leaves a gap",
    "cq.file-size": "a file size is not the mapped file size",
    "store.empty-last-file": ("an empty last file of a mapped-file queue, which 4.5.x-4.9.1 and 4.9.3-5.1.2 "
                              "refuse to load"),
    "cq.unit": "an invalid unit (offset < 0 or size <= 0) before the end of the queue",
    "cq.end-marker": "the unit ending the queue is not all zeros",
    "cq.tail": "non-zero bytes after the end of the queue",
    "cq.dirty-file": "a file after the end of the queue holds data",
    "cq.blank-unit": "a blank filler unit after the first real unit",
    "cq.order": "commitlog offsets do not increase",
    "cq.overlap": "a unit's message starts inside the previous unit's message",
    "cq.past-commitlog-end": "a unit's message ends past the CommitLog's end",
    # ConsumeQueue, across files
    "cq.phy-offset": "a unit's commitlog offset is not where a message starts",
    "cq.size": "a unit's size is not its message's TOTALSIZE",
    "cq.tags-code": "a unit's tags code is not the broker's tags code of its message",
    "cq.queue": "a unit's message belongs to another topic or queue",
    "cq.queue-offset": "a unit's message has another QUEUEOFFSET than the unit's queue offset",
    "cq.transaction": "a unit points at a prepared or rolled-back transaction record",
    "cq.missing-unit": "a dispatchable message before the dispatched end has no unit",
    # BatchConsumeQueue (5.x), per queue folder and against the CommitLog
    "bcq.file-name": "a file name is not a 20-digit offset, not a multiple of the file size, or leaves a gap",
    "bcq.file-size": "a file size is not the mapped file size",
    "bcq.unit": "an invalid unit in a file recover() takes as full",
    "bcq.end": "the unit ending the queue is not all zeros",
    "bcq.tail": "non-zero bytes after the end of the queue, or in a file after it",
    "bcq.base-offset": "a unit's msg_base_offset is not the previous base + batch size",
    "bcq.order": "commitlog offsets do not increase",
    "bcq.reserved": "compacted_offset is not -1 or reserved is not 0",
    "bcq.past-commitlog-end": "a unit's message ends past the CommitLog's end",
    "bcq.phy-offset": "a unit's commitlog offset is not where a message starts",
    "bcq.queue": "a unit's message belongs to another topic or queue",
    "bcq.size": "a unit's size is not its message's TOTALSIZE",
    "bcq.tags-code": "a unit's tags code is not the broker's tags code of its message",
    "bcq.store-time": "a unit's store time is not its message's STORETIMESTAMP",
    "bcq.transaction": "a unit points at a prepared or rolled-back transaction record",
    "bcq.batch": "a unit's (msg_base_offset, batch_size) is not what the message's INNER_BASE / INNER_NUM give",
    "bcq.invariant": "another BatchConsumeQueue invariant",
    # light message queues (consumequeue/%LMQ%.../0)
    "lmq.unit": "an LMQ unit points at no message naming the queue with that offset",
    "lmq.missing-unit": "a message names an LMQ offset before the queue's end that has no unit",
    # ConsumeQueueExt (consumequeue_ext/<topic>/<queueId>)
    "cqext.file": "an ext file name or size is wrong, or files leave a gap",
    "cqext.unit": "an ext unit's size or bit map size is impossible, or it runs into the file's last 4 bytes",
    "cqext.end": "an ext file's data ends badly (no fill marker before a later file, non-zero tail)",
    "cq.ext-address": "a unit's tagsCode is an ext address that points at no ext unit",
    "cq.ext-order": "the ext addresses of a queue's units do not increase",
    "cqext.store-time": "an ext unit's store time is not its message's store time",
    # a RocksDB ConsumeQueue (storeType=defaultRocksDB, 5.2.0+: consumequeue/ is one database)
    "rcq.not-read": "the database was not read (the rocksdict package is missing: a warning)",
    "rcq.key": "a key or value does not have the layout of RocksDBConsumeQueueTable / OffsetTable",
    "rcq.phy-offset": "a unit's commitlog offset is not where a message starts",
    "rcq.size": "a unit's size is not its message's TOTALSIZE",
    "rcq.store-time": "a unit's store time is not its message's STORETIMESTAMP",
    "rcq.transaction": "a unit points at a prepared or rolled-back transaction record",
    "rcq.queue": "a unit's message belongs to another topic or queue",
    "rcq.queue-offset": "a unit's message has another QUEUEOFFSET than the unit's key",
    "rcq.tags-code": "a unit's tags code is not the broker's tags code of its message",
    "rcq.max-offset": "a queue's max entry (offset column family) is not its last unit",
    "rcq.missing-unit": "a dispatchable message before the dispatched end (CHECKPOINT_TOPIC) has no unit",
    # checkpoint
    # a DLedger CommitLog's ledger (dledger-<selfId>/), per ledger
    "dledger.load": "a data file's length is not the configured size (DLedger's load refuses the ledger)",
    "dledger.entry": "an entry's head fails a recovery check (DLedger's recovery truncates the ledger there)",
    "dledger.index": "an index unit disagrees with its entry, or is missing (recovery rewrites the index from there)",
    "dledger.checkpoint": "the checkpoint or term file contradicts the entries (committedIndex past the end, "
                          "currTerm below the last entry's term)",
    # the timer store (5.x: timerwheel, timerlog/, config/timercheck), per store
    "timer.file": "the wheel or the timer log is missing or of a size the broker refuses to load",
    "timer.unit": "a timer log unit's size or magic is wrong (recovery truncates the log there)",
    "timer.chain": "a pending slot's chain, ends or count disagree with the units due in it",
    "timer.message": "a pending unit's message is missing, of another topic or size, due in another slot, "
                     "or of another real topic",
    "timer.checkpoint": "the timer checkpoint is past the timer log's end (a warning)",
    # pop consumption (5.x): the revive log's records not yet read by PopReviveService
    "pop.body": "a revive log record's body does not parse (the revive service fails there every round)",
    "pop.lost": "a pop checkpoint's timer is older than the wheel's window: never revived (a warning)",
    "pop.skipped": "popped, unacknowledged messages the revive service will skip, not re-put (a warning)",
    # the tiered store's index files (RIP-65: tiered_index_file/, its compacting/)
    "tiered.geometry": "a tiered index file's size does not fit the geometry (pass it when not the default)",
    "tiered.index": "a tiered index file's magic, slots or chains break IndexStoreFile's rules (5.1's "
                    "TieredIndexFile's for 0000, 1111, 2222)",
    "mrocks.record": "a record of rocksdbstore/ (5.5's message RocksDB) has a key or value of another form",
    "mrocks.index": "a RocksDB index record points at no message, or at one of another topic, key or time",
    "mrocks.timer": "a RocksDB timer record points at no timer message of its size, unique key and time",
    "mrocks.trans": "a RocksDB transaction record points at no half message of its size and unique key",
    "tiered.segment": "a tiered segment's name, place in its queue's chain or size against the metadata is wrong",
    "tiered.commitlog": "a tiered CommitLog segment's records do not chain, or PHYSICALOFFSET is not their own",
    "tiered.item": "a tiered ConsumeQueue item points at no record, or at another queue's or size",
    "tiered.copy": "an uploaded message differs from the local queue's at the same queue offset",
    # the compaction store (5.1+: compaction/compactionLog, compactionCq, position-checkpoint)
    "compaction.files": "a queue's log and queue files differ in names (the broker's load throws)",
    "compaction.cq": "a compaction queue's files or units break the SparseConsumeQueue rules",
    "compaction.unit": "a compaction queue unit disagrees with its record in the compaction log",
    "compaction.checkpoint": "the position checkpoint is not CompactionPositionMgr's JSON",
    "checkpoint.file": "the file is not 4096 bytes or has non-zero padding",
    "checkpoint.value": "a field is negative",
    "checkpoint.physic-timestamp": "physicMsgTimestamp is after every message's store time",
    "checkpoint.logics-timestamp": "logicsMsgTimestamp is after every dispatched message's store time",
    "checkpoint.index-timestamp": "indexMsgTimestamp is neither 0 nor the end timestamp of a full index file",
    "checkpoint.confirm-offset": "confirmPhyOffset is past the CommitLog's end",
    # anything a format module reports that has no finer code
    "index.invariant": "another IndexFile invariant",
    "cq.invariant": "another ConsumeQueue invariant",
}

_SUCH = re.compile(r"\((\d+) such\)")


@dataclass(frozen=True)
class Problem:
    """One finding: a check code (:data:`CHECKS`), the typed error naming file, byte offset and
    field, a severity, and how many such were found in that file (the error names the first)."""

    check: str
    error: RmqlabError
    severity: str = "error"
    count: int = 1

    @property
    def path(self) -> str | None:
        return self.error.path

    @property
    def offset(self) -> int | None:
        return self.error.offset

    @property
    def field(self) -> str | None:
        return self.error.field

    @property
    def message(self) -> str:
        return self.error.reason

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "severity": self.severity, "type": type(self.error).__name__,
                "path": self.path, "offset": self.offset, "field": self.field, "count": self.count,
                "message": self.message}

    def __str__(self) -> str:
        return f"{self.severity}: [{self.check}] {self.error}"


def make_problem(check: str, cls: type, message: str, path: Any, offset: int | None, fld: str | None, *,
             count: int = 1, severity: str = "error") -> Problem:
    assert check in CHECKS, check
    if count > 1:
        message = f"{message} ({count} such)"
    return Problem(check, cls(message, path=path, offset=None if offset is None else int(offset), field=fld),
                   severity, int(count))


def problem_from_error(check: str, err: RmqlabError, severity: str = "error") -> Problem:
    """A format module's own error as a Problem (its "(N such)" becomes the count)."""
    m = _SUCH.search(err.reason)
    count = int(m.group(1)) if m else 1
    if count == 1 and m:   # "(1 such)" says nothing: drop it
        reason = (err.reason[:m.start()] + err.reason[m.end():]).replace("  ", " ").rstrip()
        err = type(err)(reason, path=err.path, offset=err.offset, field=err.field)
    return Problem(check, err, severity, count)


def with_hint(p: Problem, hint: str | None) -> Problem:
    """`p` with `hint` (what leaves such a problem) after its reason, before its "(N such)"."""
    if not hint:
        return p
    err = p.error
    reason = _SUCH.sub("", err.reason).rstrip()
    reason = f"{reason}: {hint}" + (f" ({p.count} such)" if p.count > 1 else "")
    return Problem(p.check, type(err)(reason, path=err.path, offset=err.offset, field=err.field), p.severity, p.count)


@dataclass
class FileReport:
    """What the checks of one file (or one ConsumeQueue folder) found. ``ok``: no error
    (warnings allowed)."""

    path: str
    kind: str
    counts: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def _details(self) -> str:
        c = self.counts
        if "unreadable" in c:
            return "unreadable"
        if self.kind == "index":
            return (f"{c['keys']} keys of {c['capacity']}, {c['slots_used']} of {c['hash_slot_num']} "
                    f"slots used, longest chain {c['longest_chain']}")
        if self.kind == "commitlog":
            return (f"{c['messages']} messages, {c['bytes_used']:,} of {c['file_size']:,} bytes"
                    + (", end-of-file blank" if c.get("blank") else ""))
        if self.kind == "consumequeue":
            return (f"{c['units']} units in {c['files']} files, queue offsets "
                    f"{c['min_offset']}..{c['max_offset']}")
        if self.kind == "checkpoint":
            return (f"physicMsgTimestamp {c['physic_msg_timestamp']}, logicsMsgTimestamp "
                    f"{c['logics_msg_timestamp']}, indexMsgTimestamp {c['index_msg_timestamp']}")
        return ", ".join(f"{k} {v}" for k, v in c.items())

    def check(self) -> None:
        """Raise the first error's typed :class:`~rmqlab.errors.RmqlabError` (as
        :meth:`IndexFile.check` does); nothing when :attr:`ok`."""
        if self.errors:
            raise self.errors[0].error

    def summary(self) -> str:
        """One line, like kafka-dump-log's per-file summary (and :meth:`SegmentReport.summary`)."""
        state = "ok" if self.ok else "FAILED"
        return f"{self.path}: {state}: {self._details()}" + _problem_tail(self.problems)

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "ok": self.ok, "counts": dict(self.counts),
                "problems": [p.as_dict() for p in self.problems], "notes": list(self.notes)}


def _relocated(x: Any, old: str, new: str) -> Any:
    """`x` (a report, its parts, or plain data) with every string's `old` replaced by `new`."""
    if isinstance(x, str):
        return x.replace(old, new)
    if isinstance(x, (list, tuple)):
        return type(x)(_relocated(v, old, new) for v in x)
    if isinstance(x, dict):
        return {_relocated(k, old, new): _relocated(v, old, new) for k, v in x.items()}
    if isinstance(x, RmqlabError):
        e = type(x).__new__(type(x))
        e.args = _relocated(x.args, old, new)
        e.__dict__.update(_relocated(dict(x.__dict__), old, new))
        return e
    if isinstance(x, (Problem, FileReport, VerifyReport)):
        return type(x)(**{f.name: _relocated(getattr(x, f.name), old, new) for f in fields(x)})
    return x


def _problem_tail(problems: list[Problem]) -> str:
    if not problems:
        return ""
    w = sum(p.severity != "error" for p in problems)
    n = len(problems)
    return f"; {n} problem{'s' if n != 1 else ''}" + (f" ({w} warning{'s' if w != 1 else ''})" if w else "")


@dataclass
class VerifyReport:
    """Everything :func:`verify_path` found: per-file reports, cross-file problems, notes.
    ``ok``: no error anywhere (warnings allowed)."""

    target: str
    kind: str
    files: list[FileReport] = field(default_factory=list)
    cross: list[Problem] = field(default_factory=list)
    cross_counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def problems(self) -> list[Problem]:
        """Every problem: each file's, then the cross-file ones."""
        return [p for f in self.files for p in f.problems] + list(self.cross)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def failed_files(self) -> int:
        return sum(not f.ok for f in self.files)

    def check(self) -> None:
        """Raise the first error's typed :class:`~rmqlab.errors.RmqlabError`; nothing when :attr:`ok`."""
        if self.errors:
            raise self.errors[0].error

    def problems_at(self, path: str | os.PathLike) -> list[Problem]:
        """Problems (per-file and cross-file) whose error names `path`."""
        p = os.fspath(path)
        return [x for x in self.problems if x.path == p]

    def summary(self) -> list[str]:
        """One line a file, one for the cross-file checks (store directories), and a total."""
        lines = [f.summary() for f in self.files]
        if self.kind == "store":
            c = self.cross_counts
            state = "ok" if not any(p.severity == "error" for p in self.cross) else "FAILED"
            lines.append(f"cross-file: {state}: {c.get('index_entries', 0)} index entries and "
                         f"{c.get('cq_units', 0)} ConsumeQueue units against {c.get('messages', 0)} "
                         f"messages" + ("; checkpoint against the data" if c.get("checkpoint") else "")
                         + _problem_tail(self.cross))
        lines.append(f"{len(self.files)} files, {self.failed_files} failed, {len(self.errors)} errors, "
                     f"{len(self.problems) - len(self.errors)} warnings: {'ok' if self.ok else 'FAILED'}")
        return lines

    def relocated(self, old: str, new: str) -> VerifyReport:
        """This report with the path prefix `old` named `new` everywhere (target, file paths,
        problems, notes): the report of a copy, as the files it copies would read it (a store
        at a URI checked through its local mirror, :mod:`rmqlab.spark.mirror`). Cost: one pass
        over the report's strings.

        >>> r = VerifyReport("/tmp/m/store", "store", notes=["/tmp/m/store/abort: present"])
        >>> r.relocated("/tmp/m/store", "s3://b/store").notes
        ['s3://b/store/abort: present']
        """
        return _relocated(self, old, new)

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target, "kind": self.kind, "ok": self.ok, "files": len(self.files),
                "failed_files": self.failed_files, "errors": len(self.errors),
                "warnings": len(self.problems) - len(self.errors), "settings": dict(self.settings),
                "reports": [f.as_dict() for f in self.files],
                "cross": {"counts": dict(self.cross_counts), "problems": [p.as_dict() for p in self.cross]},
                "notes": list(self.notes)}
