"""Check every file of a RocketMQ store, and the files against each other.

:func:`verify_path` takes a store directory (``commitlog/``, ``consumequeue/``, ``index/``,
``checkpoint``), a ``commitlog/`` or ``index/`` folder, a ConsumeQueue folder, or one
CommitLog, ConsumeQueue, IndexFile or checkpoint file (found by location, name and content;
``kind=`` forces it), and returns a :class:`VerifyReport`: one :class:`FileReport` a file (a
ConsumeQueue *folder* for queues: the queue is the unit its format checks), the problems found
across files, and notes. Nothing is written: every input is opened read-only (memory maps), so
bytes and modification times stay as they were.

Per file, the format modules' own ``problems()`` plus what they leave out:

* **IndexFile** (:meth:`IndexFile.problems`): header against the geometry; slots and
  prev_index in range, each prev older than its entry (so no cycle can exist and every walk is
  bounded); every chain inside its slot (``key_hash % hash_slot_num``); every entry on exactly
  one chain; hash_slot_count by the slot-count rule. Added here: the header against the entries
  (begin/end phy offsets are the first and last entries', the last entry's time_diff is
  ``(end - begin) // 1000``), entry 0 and every entry from index_count on all zeros, and time
  order along each chain (newest first: time_diff never grows towards older entries; entry 1's
  time_diff is measured from the seed of a follow-on file, so it counts as 0 here).
* **CommitLog**: file size = the mapped file size, names = start offsets, files continuous;
  the record walk (TOTALSIZE, MAGICCODE, field lengths, property block); BODYCRC; the
  PHYSICALOFFSET field = file start + position; every file but the last ends in the 8-byte
  end-of-file blank record; a torn tail of the last file is a warning (a broker truncates it).
* **ConsumeQueue** (:meth:`ConsumeQueue.problems`): file names and sizes, 20-byte units,
  valid units up to the end, zero end marker and zero tail, no data after the end, blank
  filler units only in front, commitlog offsets increasing and messages not overlapping.
* **checkpoint**: 4096 bytes, zero padding, no negative field.

Across files (store directories only), joined in NumPy over the message table (no Python loop
per entry):

* each index entry's phy_offset is a message boundary; ``index_hash(topic#key)`` of one of that
  message's keys (UNIQ_KEY, KEYS tokens) is its key_hash; its time_diff is what putKey stored
  for the message's store time; no rolled-back message is indexed; every key of every message
  between the first and last indexed offsets has its entry;
* each ConsumeQueue unit's (offset, size, tags code) matches its message: a boundary, TOTALSIZE,
  the broker's tags code (``TAGS.hashCode()``, the delivery time for SCHEDULE_TOPIC_XXXX), the
  queue's topic and queue id, QUEUEOFFSET = the unit's queue offset, not a prepared or rolled
  back record; every dispatchable message before the dispatched end has its unit;
* the checkpoint agrees with the data: physicMsgTimestamp and logicsMsgTimestamp are not
  after the last store time of the messages they stand for, indexMsgTimestamp is 0 or the end
  timestamp of a full index file, confirmPhyOffset is not past the CommitLog's end.

Index entries and ConsumeQueue units below the CommitLog's first file (expired by retention)
are counted in a note, not checked. Each problem is a :class:`Problem`: a check code from
:data:`CHECKS`, a typed :class:`~rmqlab.errors.RmqlabError` naming file, byte offset and field,
a severity ("error" or "warning") and how many such were found (the first is the one named).

>>> import tempfile, os
>>> from rmqlab.formats.indexfile import IndexFile
>>> path = os.path.join(tempfile.mkdtemp(), "20240610061524062")
>>> with IndexFile.create(path, hash_slot_num=8, index_num=5) as f:
...     f.put_key("T#a", 100, 1718000000000)
True
>>> report = verify_path(path, hash_slot_num=8)
>>> report.ok, report.files[0].kind, report.files[0].counts["keys"]
(True, 'index', 1)
>>> print(report.summary()[0].replace(os.path.dirname(path) + os.sep, ""))
20240610061524062: ok: 1 keys of 4, 1 of 8 slots used, longest chain 1
"""
from __future__ import annotations

import mmap
import os
import re
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

import numpy as np

from rmqlab.errors import (
    CorruptIndexError,
    FormatError,
    GeometryError,
    RmqlabError,
    TruncatedFileError,
)
from rmqlab.dispatch import (
    TRANSACTION_PREPARED_TYPE,
    goes_to_consume_queue_many,
    goes_to_index_many,
    message_tags_codes,
    transaction_type,
)
from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.indexfile import (
    ENTRY,
    HEADER,
    NEW_SLOT,
    SLOT,
    Geometry,
    IndexFile,
    SlotCountRule,
    time_diff_seconds,
)

__all__ = [
    "CHECKS",
    "KINDS",
    "Problem",
    "FileReport",
    "VerifyReport",
    "verify_path",
    "verify_index_file",
    "verify_commitlog",
    "verify_consume_queue",
    "verify_checkpoint",
    "detect_kind",
    "infer_index_geometry",
]

#: What verify_path can verify.
KINDS = ("store", "commitlog", "consumequeue", "index", "checkpoint")
Kind = Literal["store", "commitlog", "consumequeue", "index", "checkpoint"]

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
    # CommitLog, per file
    "commitlog.file-size": "the file size is not the mapped file size",
    "commitlog.file-name": "the file name is not a multiple of the mapped file size",
    "commitlog.continuity": "a file does not start where the previous one ends",
    "commitlog.record": "a record breaks the walk (TOTALSIZE, MAGICCODE, lengths, properties)",
    "commitlog.torn-tail": "the last file ends in a torn write (the broker truncates it at recovery)",
    "commitlog.body-crc": "BODYCRC is not CRC32(body) & 0x7FFFFFFF",
    "commitlog.phy-offset-field": "PHYSICALOFFSET is not the file's start offset + the record's position",
    "commitlog.blank": "a file other than the last does not end with the end-of-file blank record",
    # ConsumeQueue, per queue folder
    "cq.file-name": "a file name is not a 20-digit offset, not a multiple of the file size, or leaves a gap",
    "cq.file-size": "a file size is not the mapped file size",
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
    # checkpoint
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
_DIGITS20 = re.compile(r"\d{20}")
_DIGITS17 = re.compile(r"\d{17}")
#: bits of the (row, key hash) codes used for joins: hash < 2^31
_HASH_BITS = 31


# ------------------------------------------------------------------------------ reports


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


def _problem(check: str, cls: type, message: str, path: Any, offset: int | None, fld: str | None, *,
             count: int = 1, severity: str = "error") -> Problem:
    assert check in CHECKS, check
    if count > 1:
        message = f"{message} ({count} such)"
    return Problem(check, cls(message, path=path, offset=None if offset is None else int(offset), field=fld),
                   severity, int(count))


def _wrap(check: str, err: RmqlabError, severity: str = "error") -> Problem:
    """A format module's own error as a Problem (its "(N such)" becomes the count)."""
    m = _SUCH.search(err.reason)
    count = int(m.group(1)) if m else 1
    if count == 1 and m:   # "(1 such)" says nothing: drop it
        reason = (err.reason[:m.start()] + err.reason[m.end():]).replace("  ", " ").rstrip()
        err = type(err)(reason, path=err.path, offset=err.offset, field=err.field)
    return Problem(check, err, severity, count)


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

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target, "kind": self.kind, "ok": self.ok, "files": len(self.files),
                "failed_files": self.failed_files, "errors": len(self.errors),
                "warnings": len(self.problems) - len(self.errors), "settings": dict(self.settings),
                "reports": [f.as_dict() for f in self.files],
                "cross": {"counts": dict(self.cross_counts), "problems": [p.as_dict() for p in self.cross]},
                "notes": list(self.notes)}


# ----------------------------------------------------------------------------- helpers


def _first(mask: np.ndarray, make) -> Problem | None:
    """`make(i, count)` for the first True of `mask`, None when there is none."""
    bad = np.flatnonzero(mask)
    return make(int(bad[0]), len(bad)) if len(bad) else None


def _add(out: list, p: Problem | None) -> None:
    if p is not None:
        out.append(p)


def _first_nonzero(a: np.ndarray, chunk: int = 1 << 24) -> int:
    """Index of the first non-zero byte of the uint8 array `a`, -1 when all zero. Scans in
    chunks so a mostly-zero 420 MB region costs no index array. Cost: O(len(a))."""
    for lo in range(0, len(a), chunk):
        part = a[lo:lo + chunk]
        if part.any():
            return lo + int(np.argmax(part != 0))
    return -1


def _last_nonzero(a: np.ndarray, chunk: int = 1 << 24) -> int:
    """Index of the last non-zero byte of the uint8 array `a`, -1 when all zero. Cost: O(len(a))."""
    for hi in range(len(a), 0, -chunk):
        part = a[max(hi - chunk, 0):hi]
        if part.any():
            return max(hi - chunk, 0) + int(np.flatnonzero(part)[-1])
    return -1


def _broker_text(s):
    """A string read with surrogate escapes (invalid UTF-8) as Java decodes the same bytes."""
    if not isinstance(s, str):
        return s
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _gather_field(buf: np.ndarray, record_offsets: np.ndarray, layout, name: str) -> np.ndarray:
    """Field `name` of `layout` read from the record starting at each of `record_offsets` in the
    byte array `buf`, widened to int64. Cost: O(records), NumPy."""
    f = layout.field(name)
    idx = (record_offsets + f.offset)[:, None] + np.arange(f.size, dtype=np.int64)
    return buf[idx].view(layout.dtype[name]).reshape(-1).astype(np.int64)


def _most_common(values: Iterable[int]) -> int | None:
    c = Counter(values)
    return c.most_common(1)[0][0] if c else None


# ------------------------------------------------------------------------- kind detection


def _is_commitlog_bytes(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return False
    if len(head) < 8:
        return False
    magic = int.from_bytes(head[4:8], "big", signed=True)
    return magic in (cl.MAGIC_V1, cl.MAGIC_V2, cl.MAGIC_BLANK)


def detect_kind(path: str | os.PathLike) -> str:
    """What `path` is, from its location, name and first bytes: one of :data:`KINDS`.

    A folder holding ``commitlog/``, ``consumequeue/``, ``index/`` or ``checkpoint`` is a
    store; a folder named ``commitlog`` / ``index`` / ``consumequeue`` (or inside
    ``consumequeue/``) is that part; a file is judged by its folder, then its name (17 digits:
    an index file; ``checkpoint``), then its bytes (a CommitLog record magic at byte 4).
    Raises ValueError when nothing fits (pass ``kind=``).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "commitlog").mkdir(); detect_kind(d)
    'store'
    """
    p = Path(path)
    if p.is_dir():
        if any((p / n).exists() for n in ("commitlog", "consumequeue", "index", "checkpoint")):
            return "store"
        if p.name in ("commitlog", "index", "consumequeue"):
            return p.name
        if "consumequeue" in (p.parent.name, p.parent.parent.name):
            return "consumequeue"
        names = sorted(c.name for c in p.iterdir() if c.is_file())
        if any(_DIGITS17.fullmatch(n) for n in names):
            return "index"
        twenty = [n for n in names if _DIGITS20.fullmatch(n)]
        if twenty:
            return "commitlog" if _is_commitlog_bytes(p / twenty[0]) else "consumequeue"
        raise ValueError(f"{p}: cannot tell what this folder holds (no store parts, no index, CommitLog "
                         f"or ConsumeQueue files); pass kind=")
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or directory")
    parent = p.parent.name
    if p.name == "checkpoint":
        return "checkpoint"
    if parent == "commitlog":
        return "commitlog"
    if parent == "index" or _DIGITS17.fullmatch(p.name):
        return "index"
    if p.parent.parent.parent.name == "consumequeue":
        return "consumequeue"
    if _is_commitlog_bytes(p):
        return "commitlog"
    size = p.stat().st_size
    if _DIGITS20.fullmatch(p.name) and size % cq.UNIT_SIZE == 0:
        return "consumequeue"
    if size == cpf.FILE_SIZE:
        return "checkpoint"
    raise ValueError(f"{p}: cannot tell what this file is (not in commitlog/, index/ or consumequeue/, "
                     f"and its name and bytes do not say); pass kind=")


# ----------------------------------------------------------------------- index geometry


def infer_index_geometry(path: str | os.PathLike) -> Geometry:
    """The geometry of an index file of any size, from its own bytes.

    The default size has one answer. Otherwise every split ``40 + 4*slots + 20*entries`` that
    holds ``index_count`` entries is tried, and kept when the bytes agree with what putKey
    always writes: entry 0 all zeros and nothing after entry index_count - 1; entry 1's
    phy_offset is the header's begin_phy_offset and its prev_index 0; the last entry's
    phy_offset is end_phy_offset and its time_diff ``(end - begin) // 1000``.
    Raises :class:`GeometryError` when no split or several splits agree (an empty file fits
    any). Cost: two reads per candidate split, vectorized (memory map).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "f")
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> build_index_file(p, ["T#a", "T#b", "T#c"], [0, 200, 400], [1000, 2000, 5000],
    ...                  hash_slot_num=7, index_num=30)
    3
    >>> infer_index_geometry(p)
    Geometry(hash_slot_num=7, index_num=30)
    """
    path = Path(path)
    size = path.stat().st_size
    default = Geometry.default()
    if size == default.file_size:
        return default
    if size < HEADER.size:
        raise TruncatedFileError(f"file is {size} bytes, shorter than the {HEADER.size}-byte header",
                                 path=path, offset=size, field="header")
    with open(path, "rb") as fh:
        h = HEADER.unpack(fh.read(HEADER.size))
        count = h.index_count
        body = size - HEADER.size
        hint = "pass hash_slot_num= or index_num= (the broker's maxHashSlotNum / maxIndexNum)"
        if count <= 1:
            raise GeometryError(f"file is {size} bytes and holds no entries (index_count {count}): any split "
                                f"of slots and entries fits; {hint}", path=path, offset=size, field="file size")
        if body % SLOT.size:
            raise GeometryError(f"file is {size} bytes: 40 + 4*slots + 20*entries can never make it",
                                path=path, offset=size, field="file size")
        # body = SLOT.size * slots + ENTRY.size * entries, so slots is fixed modulo the size ratio
        ratio = ENTRY.size // SLOT.size
        first = (body // SLOT.size) % ratio or ratio
        last = (body - ENTRY.size * count) // SLOT.size
        slots = np.arange(first, last + 1, ratio, dtype=np.int64)
        if not len(slots):
            raise GeometryError(f"file is {size} bytes: too small for index_count {count}", path=path,
                                offset=size, field="file size")
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            U = np.frombuffer(mm, np.uint8)
            # nothing is written after entry index_count - 1: the last non-zero byte bounds the split
            slots = slots[HEADER.size + SLOT.size * slots + ENTRY.size * count > _last_nonzero(U)]
            eo = HEADER.size + SLOT.size * slots

            e1 = eo + ENTRY.size
            el = eo + ENTRY.size * (count - 1)
            ok = ((_gather_field(U, e1, ENTRY, "phy_offset") == h.begin_phy_offset)
                  & (_gather_field(U, e1, ENTRY, "prev_index") == 0)
                  & (_gather_field(U, el, ENTRY, "phy_offset") == h.end_phy_offset))
            if count > 2:
                want = time_diff_seconds(h.end_timestamp, h.begin_timestamp)
                ok &= _gather_field(U, el, ENTRY, "time_diff") == want
            found = slots[ok]
            if len(found):   # entry 0 is never written
                zero = ~U[(HEADER.size + SLOT.size * found)[:, None] + np.arange(ENTRY.size, dtype=np.int64)].any(axis=1)
                found = found[zero]
            del U
        finally:
            mm.close()
    if len(found) == 1:
        s = int(found[0])
        return Geometry(s, (body - SLOT.size * s) // ENTRY.size)
    if not len(found):
        raise GeometryError(f"file is {size} bytes and no split of slots and entries agrees with its header; "
                            f"{hint}", path=path, offset=size, field="file size")
    some = ", ".join(f"hash_slot_num={int(s)}" for s in found[:3])
    raise GeometryError(f"file is {size} bytes and {len(found)} splits agree with its header ({some}, ...); "
                        f"{hint}", path=path, offset=size, field="file size")


def _index_geometries(paths: list[Path], hash_slot_num, index_num) -> dict[Path, tuple[int | None, int | None]]:
    """(hash_slot_num, index_num) to open each file with: as given, else inferred per size."""
    if hash_slot_num is not None or index_num is not None:
        return {p: (hash_slot_num, index_num) for p in paths}
    by_size: dict[int, set] = {}
    for p in paths:
        try:
            g = infer_index_geometry(p)
        except (RmqlabError, OSError):
            continue
        by_size.setdefault(p.stat().st_size, set()).add((g.hash_slot_num, g.index_num))
    out = {}
    for p in paths:
        found = by_size.get(p.stat().st_size, set())
        out[p] = next(iter(found)) if len(found) == 1 else (None, None)
    return out


# ------------------------------------------------------------------------------ IndexFile

_INDEX_CODES = (
    ("slot value outside", "index.slot-range"),
    ("negative key_hash", "index.negative-hash"),
    ("negative time_diff", "index.negative-time-diff"),
    ("prev_index not older", "index.prev-range"),
    ("prev_index links entries of different slots", "index.prev-slot"),
    ("slot points at an entry hashed to another slot", "index.slot-chain"),
    ("referenced by more than one", "index.entry-refs"),
    ("not reachable", "index.entry-refs"),
    ("slot-count rule", "index.hash-slot-count"),
)


def _index_code(err: RmqlabError) -> str:
    for text, code in _INDEX_CODES:
        if text in err.reason:
            return code
    if (err.field or "").startswith("header"):
        return "index.header"
    return "index.invariant"


def _index_checks(f: IndexFile) -> tuple[dict[str, Any], list[Problem]]:
    """The per-file checks of an open index file: its own problems() plus header against
    entries, zero tail and chain time order. Vectorized: O(file)."""
    g, h, p = f.geometry, f.header, str(f.path)
    out = [_wrap(_index_code(e), e) for e in f.problems()]
    count = min(h.index_count, g.index_num)
    e = f.used_entries
    n = len(e)
    key_hash = e["key_hash"].astype(np.int64)
    slot_of = key_hash[key_hash >= 0] % g.hash_slot_num
    chains = np.bincount(slot_of, minlength=g.hash_slot_num)
    counts = {"keys": h.keys, "capacity": g.capacity, "hash_slot_num": g.hash_slot_num,
              "index_num": g.index_num, "slots_used": int(np.count_nonzero(f.slots)),
              "longest_chain": int(chains.max()) if len(chains) else 0, "file_size": g.file_size,
              "begin_timestamp": h.begin_timestamp, "end_timestamp": h.end_timestamp,
              "begin_phy_offset": h.begin_phy_offset, "end_phy_offset": h.end_phy_offset,
              "is_write_full": f.is_write_full}

    def header(fld, what):
        out.append(_problem("index.header-range", CorruptIndexError, what, p, HEADER.offset(fld),
                            f"header.{fld}"))

    if n:
        first, last = e[0], e[n - 1]
        if int(first["phy_offset"]) != h.begin_phy_offset:
            header("begin_phy_offset", f"begin_phy_offset {h.begin_phy_offset} but entry 1 (the first put, "
                                       f"which sets it) has phy_offset {int(first['phy_offset'])}")
        if int(last["phy_offset"]) != h.end_phy_offset:
            header("end_phy_offset", f"end_phy_offset {h.end_phy_offset} but the last entry ({n}) has "
                                     f"phy_offset {int(last['phy_offset'])}")
        if n == 1 and h.begin_timestamp != h.end_timestamp:
            header("end_timestamp", f"one entry, so begin_timestamp and end_timestamp are the same put's, "
                                    f"but they are {h.begin_timestamp} and {h.end_timestamp}")
        elif n > 1:
            want = time_diff_seconds(h.end_timestamp, h.begin_timestamp)
            if int(last["time_diff"]) != want:
                header("end_timestamp", f"end_timestamp {h.end_timestamp} is {want} s after begin_timestamp "
                                        f"{h.begin_timestamp}, but the last entry ({n}) has time_diff "
                                        f"{int(last['time_diff'])}")
    # entry 0 and everything from index_count on: never written, so zeros
    raw = f.entries.view(np.uint8)
    nz = _first_nonzero(raw[:ENTRY.size])
    if nz >= 0:
        out.append(_problem("index.tail", CorruptIndexError, "entry 0 is never written but holds non-zero bytes",
                            p, g.entries_offset + nz, "entry[0]"))
    start = max(count, 1) * ENTRY.size
    nz = _first_nonzero(raw[start:])
    if nz >= 0:
        entry = (start + nz) // ENTRY.size
        out.append(_problem("index.tail", CorruptIndexError,
                            f"entry {entry} lies at or after index_count {h.index_count} but holds non-zero "
                            f"bytes (a put the header does not count, or a wrong index_count)",
                            p, g.entries_offset + ENTRY.size * entry, f"entry[{entry}]"))
    # time order along chains: newest first, so an older entry never has a greater time_diff.
    if n > 1:
        numbers = np.arange(1, count, dtype=np.int64)
        prev = e["prev_index"].astype(np.int64)
        td = e["time_diff"].astype(np.int64)
        td_eff = td.copy()
        td_eff[0] = 0  # entry 1: measured from a follow-on file's seed; its own time is begin
        linked = (prev > 0) & (prev < numbers)
        older_td = np.where(linked, td_eff[np.where(linked, prev - 1, 0)], 0)
        bad = linked & (older_td > td_eff)

        def make(i, c):
            num = i + 1
            return _problem("index.time-order", CorruptIndexError,
                            f"entry {num} has time_diff {td[i]} s but the older entry {prev[i]} on its chain has "
                            f"{older_td[i]} s: chains run newest to oldest, and the broker's walk stops at the "
                            f"first entry older than a query's begin (a broker clock stepping back does this too)",
                            p, g.entry_offset(num) + ENTRY.offset("time_diff"), "entry.time_diff",
                            count=c, severity="warning")

        _add(out, _first(bad, make))
    return counts, out


def verify_index_file(path: str | os.PathLike, hash_slot_num: int | None = None, index_num: int | None = None,
                      *, slot_count_rule: SlotCountRule = NEW_SLOT) -> FileReport:
    """The per-file checks of one index file (see the module docstring). Read-only.

    With neither count the geometry is inferred (:func:`infer_index_geometry`). Cost: O(file),
    vectorized: about a second for a full default-size (420 MB) file.
    """
    rep, f = _open_index(Path(path), hash_slot_num, index_num, slot_count_rule)
    if f is not None:
        f.close()
    return rep


def _open_index(path: Path, hsn, inum, rule) -> tuple[FileReport, IndexFile | None]:
    rep = FileReport(str(path), "index")
    try:
        if hsn is None and inum is None:
            g = infer_index_geometry(path)
            hsn, inum = g.hash_slot_num, g.index_num
        f = IndexFile.open(path, hsn, inum, slot_count_rule=rule, strict=False)
    except RmqlabError as e:
        rep.counts = {"unreadable": True}
        rep.problems.append(_wrap("index.geometry", e))
        return rep, None
    rep.counts, rep.problems = _index_checks(f)
    return rep, f


# ------------------------------------------------------------------------------ CommitLog


class _Messages:
    """The message table of a CommitLog (the readable prefix of each file), with each
    message's real position (file start + offset in the file), for the cross-file joins."""

    def __init__(self, frame, positions, files, file_of, file_pos, min_offset, end_offset):
        self.frame = frame
        self.positions = positions          # int64, sorted: CommitLog offset of each message
        self.files = files                  # list of paths
        self.file_of = file_of              # int32 per message: index into files
        self.file_pos = file_pos            # int64 per message: position inside its file
        self.min_offset = min_offset        # first file's start (None: no files)
        self.end_offset = end_offset        # the CommitLog's max offset after recovery
        n = len(positions)
        self.n = n
        self.total_size = frame["total_size"].to_numpy(np.int64) if n else np.zeros(0, np.int64)
        self.sys_flag = frame["sys_flag"].to_numpy(np.int64) if n else np.zeros(0, np.int64)
        self.store_ts = frame["store_timestamp"].to_numpy(np.int64) if n else np.zeros(0, np.int64)
        self._key_codes = None
        self._tags = None

    def lookup(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row of the message starting at each offset or -1, is-a-boundary mask)."""
        if not self.n:
            return np.full(len(offsets), -1, np.int64), np.zeros(len(offsets), bool)
        row = np.searchsorted(self.positions, offsets)
        inside = row < self.n
        hit = inside.copy()
        hit[inside] = self.positions[row[inside]] == offsets[inside]
        return np.where(hit, row, -1), hit

    def expired(self, offsets: np.ndarray) -> np.ndarray:
        """Offsets below the first CommitLog file: messages deleted by retention (not checked)."""
        if self.min_offset is None:
            return np.zeros(len(offsets), bool)
        return offsets < self.min_offset

    def where(self, offset: int) -> str:
        """Words for a CommitLog offset that is not a message start."""
        if self.min_offset is None:
            return "the CommitLog has no files"
        if offset < self.min_offset:
            return "before the CommitLog's first file"
        if offset >= self.end_offset:
            return f"at or past the CommitLog's end ({self.end_offset})"
        row = int(np.searchsorted(self.positions, offset, side="right")) - 1
        if row >= 0 and offset < self.positions[row] + self.total_size[row]:
            return f"inside the message at {int(self.positions[row])} ({int(self.total_size[row])} bytes)"
        return "in no message (a blank record, zeros, or an unreadable part of a file)"

    def describe(self, row: int) -> str:
        r = self.frame.iloc[row]
        return (f"topic {r['topic']!r}, KEYS {r['keys']!r}, UNIQ_KEY {r['uniq_key']!r}, "
                f"store time {int(r['store_timestamp'])}")

    @property
    def key_codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every key buildIndex would put for each message, rollbacks included, as sorted
        unique codes ``row << 31 | index_hash``; plus, per code of the expansion (unsorted),
        the code and row. Cost: O(messages + key bytes), in Arrow and C."""
        if self._key_codes is None:
            from rmqlab.indexservice import expand_columns
            from rmqlab.javahash import index_hash_many

            f = self.frame
            cols = {"topic": f["topic"].to_numpy(object), "phy_offset": self.positions,
                    "store_timestamp": self.store_ts, "keys": f["keys"].to_numpy(object),
                    "uniq_key": f["uniq_key"].to_numpy(object), "sys_flag": np.zeros(self.n, np.int64)}
            try:
                ex = expand_columns(cols)
            except UnicodeEncodeError:
                # invalid UTF-8 in a property (read back with surrogate escapes): the broker's
                # new String(bytes, UTF_8) puts U+FFFD there, so hash that (a loop, damaged data only)
                fix = np.frompyfunc(_broker_text, 1, 1)
                for name in ("topic", "keys", "uniq_key"):
                    cols[name] = fix(cols[name]).astype(object)
                ex = expand_columns(cols)
            rows = np.asarray(ex.message_index, np.int64)
            hashes = index_hash_many(ex.keys).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
            codes = (rows << _HASH_BITS) | hashes
            self._key_codes = (np.unique(codes), codes, rows)
        return self._key_codes

    @property
    def tags_codes(self) -> np.ndarray:
        """The tags code the broker dispatches for each message (ConsumeQueue):
        :func:`rmqlab.dispatch.message_tags_codes`."""
        if self._tags is None:
            f = self.frame
            codes = message_tags_codes(f["topic"].to_numpy(object), f["tags"].to_numpy(object),
                                       f["delay_level"].to_numpy(np.int64), self.store_ts) if self.n \
                else np.zeros(0, np.int64)
            self._tags = codes
        return self._tags


#: the message columns the cross-file joins use (the rest is dropped file by file)
_MESSAGE_COLUMNS = ("topic", "queue_id", "queue_offset", "phy_offset", "sys_flag", "store_timestamp", "keys",
                    "uniq_key", "tags", "delay_level", "total_size")


def _message_frame(parts: list[dict]):
    import pandas as pd

    if not parts:
        return cl._frame([], False, False)[list(_MESSAGE_COLUMNS)]
    return pd.DataFrame({c: np.concatenate([p[c] for p in parts]) for c in _MESSAGE_COLUMNS})


def _commitlog_files(path: Path) -> tuple[list[cl.StoreFile], list[FileReport]]:
    """The CommitLog files (cl.store_files), each listed on its own so that a file the format
    module refuses (a name past Long.MAX_VALUE) becomes a report, not an exception."""
    if not path.is_dir():
        children = [path]
    else:
        children = [c for c in path.iterdir() if _DIGITS20.fullmatch(c.name) and c.is_file()]
    files, refused = [], []
    for c in children:
        try:
            files += cl.store_files(c)
        except RmqlabError as e:
            r = FileReport(str(c), "commitlog", counts={"unreadable": True})
            r.problems.append(_wrap("commitlog.file-name", e))
            refused.append(r)
    return sorted(files, key=lambda f: f.start_offset), refused


def _crc_check(U: np.ndarray, pos: np.ndarray, sys_flag: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """True where BODYCRC is right (or BODYLEN is 0) for records at positions `pos` of a file."""
    from rmqlab import _records

    if not len(pos):
        return np.zeros(0, bool)
    bw = np.where(sys_flag & cl.BORNHOST_V6_FLAG, 16, 4)
    sw = np.where(sys_flag & cl.STOREHOSTADDRESS_V6_FLAG, 16, 4)
    o_tail = cl.HEAD.size + bw + cl.PORT.size + cl.STORE_TIME.size + sw + cl.PORT.size
    o_body = o_tail + cl.TAIL.size
    body_len = _gather_field(U, pos + o_tail, cl.TAIL, "body_len")
    crc = np.empty(len(pos), np.uint32)
    _records.crc32_spans(U, np.ascontiguousarray(pos + o_body, np.int64),
                         np.ascontiguousarray(body_len, np.int64), crc)
    return (body_len == 0) | ((crc.astype(np.int64) & 0x7FFFFFFF) == stored.astype(np.int64))


def _commitlog_file_checks(rep: FileReport, f: cl.StoreFile, rr: cl.ReadReport, cols: dict, pos: np.ndarray,
                           used: int, blank: bool, last: bool, crc_buf) -> None:
    """Damage, torn tail, end-of-file blank, PHYSICALOFFSET and (with `crc_buf`) BODYCRC of one
    walked file; problems go to `rep`."""
    p = str(f.path)
    for d in rr.damage:
        rep.problems.append(_problem("commitlog.record", FormatError,
                                     d.reason + "; the rest of the file cannot be read", d.path, d.offset, d.field))
    if rr.torn_tail is not None:
        d = rr.torn_tail
        if last:
            rep.problems.append(_problem("commitlog.torn-tail", TruncatedFileError,
                                         d.reason + " (the broker truncates it at recovery)", d.path, d.offset,
                                         d.field, severity="warning"))
        else:
            rep.problems.append(_problem("commitlog.record", FormatError,
                                         d.reason.replace("torn tail: ", "") + " (not the last file: a torn "
                                         "write cannot be here); the rest of the file cannot be read",
                                         d.path, d.offset, d.field))
    readable = not rr.damage and rr.torn_tail is None
    if readable and not last and not blank:
        rep.problems.append(_problem(
            "commitlog.blank", FormatError,
            f"the last message ends at {used} and {f.size - used} bytes are left, but no end-of-file blank "
            f"record (TOTALSIZE = bytes left, MAGICCODE 0xCBD43194) follows: only the last file may end "
            f"without one", p, used, "MAGICCODE"))
    stored_phy = cols["phy_offset"].astype(np.int64)

    def make_phy(k, c):
        return _problem("commitlog.phy-offset-field", FormatError,
                        f"PHYSICALOFFSET {stored_phy[k]} but the record is at {f.start_offset + pos[k]} "
                        f"(file start {f.start_offset} + position {pos[k]})", p, int(pos[k]), "PHYSICALOFFSET",
                        count=c)

    _add(rep.problems, _first(stored_phy != f.start_offset + pos, make_phy))
    if crc_buf is not None and len(pos):
        U = np.frombuffer(crc_buf, np.uint8)
        good = _crc_check(U, pos, cols["sys_flag"].astype(np.int64), cols["body_crc"].astype(np.int64))
        del U

        def make_crc(k, c):
            return _problem("commitlog.body-crc", FormatError,
                            f"BODYCRC {int(cols['body_crc'][k])} does not match the body (CRC32(body) & 0x7FFFFFFF)",
                            p, int(pos[k]), "BODYCRC", count=c)

        _add(rep.problems, _first(~good, make_crc))


def _scan_commitlog(path: Path, file_size: int | None, check_crc: bool) -> tuple[list[FileReport], _Messages, dict]:
    """Per-file checks of a CommitLog file or folder, and the message table."""
    files, reports = _commitlog_files(path)
    mapped = file_size or _most_common(f.size for f in files)
    frames, positions, file_of, file_pos = [], [], [], []
    end_offset = files[0].start_offset if files else 0
    for i, f in enumerate(files):
        last = i == len(files) - 1
        p = str(f.path)
        rep = FileReport(p, "commitlog")
        reports.append(rep)
        if f.size != mapped:
            cls = TruncatedFileError if f.size < mapped else GeometryError
            rep.problems.append(_problem("commitlog.file-size", cls,
                                         f"file is {f.size} bytes, not the mapped file size {mapped} "
                                         f"(mappedFileSizeCommitLog; the broker preallocates every file)",
                                         p, f.size, "file size"))
        if not _DIGITS20.fullmatch(f.path.name):
            rep.notes.append(f"{p}: name is not a 20-digit offset: read as starting at offset {f.start_offset}")
        elif mapped and f.start_offset % mapped:
            rep.problems.append(_problem("commitlog.file-name", FormatError,
                                         f"name {f.start_offset} is not a multiple of the mapped file size {mapped}",
                                         p, 0, "file name"))
        if i and mapped:
            want = files[i - 1].start_offset + mapped
            if f.start_offset != want:
                what = "missing file(s) before it" if f.start_offset > want else "overlaps the previous file"
                rep.problems.append(_problem("commitlog.continuity", FormatError,
                                             f"starts at {f.start_offset} but the previous file "
                                             f"{files[i - 1].path.name} ends at {want}: {what}",
                                             p, 0, "file name"))
        rr = cl.ReadReport()
        with open(f.path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if f.size else None
            try:
                buf = mm if mm is not None else b""
                # the format module's own walk and decode (C walk + NumPy gathers), each file as if it
                # were the last: zeros after the last message are no damage there; a missing
                # end-of-file blank record is judged below
                cols, _, _, _ = cl._scan_file(buf, f, last=True, check_crc=False, report=rr,
                                              on_error="report", body=False)
                sizes = cols["total_size"].astype(np.int64)
                pos = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) \
                    else np.zeros(0, np.int64)
                used = int(sizes.sum())
                blank = False
                if used + cl.BLANK.size <= len(buf):
                    bsize, bmagic = cl.BLANK.unpack_from(buf, used)
                    blank = bmagic == cl.MAGIC_BLANK and bsize == len(buf) - used
                _commitlog_file_checks(rep, f, rr, cols, pos, used, blank, last, buf if check_crc else None)
            finally:
                if mm is not None:
                    try:
                        mm.close()
                    except BufferError:   # a view still alive: the map closes when it is freed
                        pass
        readable = not rr.damage and rr.torn_tail is None
        n = len(sizes)
        rep.counts = {"messages": n, "bytes_used": used, "file_size": f.size, "blank": blank,
                      "start_offset": f.start_offset}
        if n:
            frames.append({c: cols[c] for c in _MESSAGE_COLUMNS})
            positions.append(f.start_offset + pos)
            file_of.append(np.full(n, i, np.int32))
            file_pos.append(pos)
        if last:
            end_offset = f.start_offset + f.size if blank and readable else f.start_offset + used
    frame = _message_frame(frames)
    pos_all = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    msgs = _Messages(frame, pos_all, [str(f.path) for f in files],
                     np.concatenate(file_of) if file_of else np.zeros(0, np.int32),
                     np.concatenate(file_pos) if file_pos else np.zeros(0, np.int64),
                     files[0].start_offset if files else None, end_offset)
    if len(pos_all) > 1 and (np.diff(pos_all) <= 0).any():
        # overlapping files (already reported as continuity problems): keep the joins sound
        order = np.argsort(pos_all, kind="stable")
        msgs = _Messages(frame.iloc[order].reset_index(drop=True), pos_all[order], msgs.files,
                         msgs.file_of[order], msgs.file_pos[order], msgs.min_offset, end_offset)
    return reports, msgs, {"mapped_file_size": mapped}


def verify_commitlog(path: str | os.PathLike, *, file_size: int | None = None,
                     check_crc: bool = True) -> list[FileReport]:
    """The per-file checks of a CommitLog file or ``commitlog/`` folder (see the module
    docstring). `file_size` is mappedFileSizeCommitLog (default: the most common file size).
    Read-only. Cost: one walk of every file (C) and one CRC pass (C), a few million messages/s.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with cl.CommitLogWriter(d, file_size=4096) as w:
    ...     _ = w.append({"topic": ["T"] * 40, "body": [b"x" * 20] * 40})
    >>> [(r.ok, r.counts["messages"], r.counts["blank"]) for r in verify_commitlog(d)]
    [(True, 36, True), (True, 4, False)]
    """
    return _scan_commitlog(Path(path), file_size, check_crc)[0]


# --------------------------------------------------------------------------- ConsumeQueue

_CQ_CODES = (
    ("not a 20-digit offset", "cq.file-name"),
    ("not a multiple of the mapped file size", "cq.file-name"),
    ("missing file(s)", "cq.file-name"),
    ("overlaps the previous file", "cq.file-name"),
    ("invalid unit before the end", "cq.unit"),
    ("not a zero end marker", "cq.end-marker"),
    ("non-zero bytes after the end", "cq.tail"),
    ("file starts after the end", "cq.dirty-file"),
    ("blank filler unit", "cq.blank-unit"),
    ("not greater than the previous", "cq.order"),
    ("starts inside the previous", "cq.overlap"),
    ("past the CommitLog's max offset", "cq.past-commitlog-end"),
)


def _cq_code(err: RmqlabError) -> str:
    if err.field == "file size":
        return "cq.file-size"
    for text, code in _CQ_CODES:
        if text in err.reason:
            return code
    return "cq.invariant"


def _queue_folders(path: Path) -> list[Path]:
    """Queue folders under a consumequeue root, a topic folder, or a queue folder itself."""
    subs = sorted(c for c in path.iterdir() if c.is_dir())
    root = path.name == "consumequeue"
    if not root and (any(c.is_file() for c in path.iterdir()) or not subs):
        return [path]                                       # a queue folder
    if not root and (path.parent.name == "consumequeue" or all(c.name.isdigit() for c in subs)):
        return sorted(subs, key=lambda c: (not c.name.isdigit(), int(c.name) if c.name.isdigit() else 0, c.name))
    out = []
    for t in subs:                                          # the consumequeue root
        out += sorted((q for q in t.iterdir() if q.is_dir()), key=lambda q: (not q.name.isdigit(), q.name))
    return out


def _cq_size(files: list[Path], given: int | None) -> int:
    if given is not None:
        return cq.mapped_file_size_for(given)
    common = _most_common(p.stat().st_size for p in files if p.stat().st_size > 0)
    if common and common % cq.UNIT_SIZE == 0:
        return common
    return cq.DEFAULT_MAPPED_FILE_SIZE


class _OneFileQueue:
    """A ConsumeQueue opened from one file alone: a private folder holding a link to it (or a
    copy where links are not allowed), so the queue module reads it as a one-file queue. Paths in
    its errors are mapped back to the real file."""

    def __init__(self, path: Path):
        self.real = path
        self.tmp = tempfile.mkdtemp(prefix="rmqlab-verify-")
        name = path.name if _DIGITS20.fullmatch(path.name) else "0" * 20
        self.link = Path(self.tmp) / name
        try:
            os.symlink(path.resolve(), self.link)
        except OSError:
            shutil.copyfile(path, self.link)

    def fix(self, err: RmqlabError) -> RmqlabError:
        if err.path is not None and Path(err.path).parent == Path(self.tmp):
            return type(err)(err.reason, path=self.real, offset=err.offset, field=err.field)
        return err

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def _open_queue(folder: Path, mapped_file_size: int | None, one_file: _OneFileQueue | None = None):
    real = one_file.real if one_file else folder
    files = [real] if one_file else [c for c in folder.iterdir() if c.is_file()]
    size = _cq_size(files, mapped_file_size)
    topic = queue_id = None
    if one_file:
        qdir = real.parent
        topic = qdir.parent.name or None
        queue_id = int(qdir.name) if qdir.name.isdigit() else None
    q = cq.ConsumeQueue.open(one_file.tmp if one_file else folder, size, strict=False,
                             topic=topic, queue_id=queue_id)
    return q, size


def _queue_checks(q, report_path: str, commitlog_max_offset: int | None,
                  fix=lambda e: e) -> FileReport:
    rep = FileReport(report_path, "consumequeue")
    rep.problems = [_wrap(_cq_code(e), fix(e)) for e in q.problems(commitlog_max_offset)]
    rep.counts = {"topic": q.topic, "queue_id": q.queue_id, "files": len(q.info.files), "units": q.count,
                  "min_offset": q.min_offset, "max_offset": q.max_offset, "blank_units": q.blank_units,
                  "mapped_file_size": q.mapped_file_size}
    if q.dirty_files:
        rep.notes.append(f"{report_path}: {len(q.dirty_files)} files after the end of the queue (the broker "
                         f"deletes them at restart)")
    return rep


def verify_consume_queue(path: str | os.PathLike, *, mapped_file_size: int | None = None) -> list[FileReport]:
    """The per-queue checks of a ConsumeQueue file, queue folder, topic folder or
    ``consumequeue/`` root: one report per queue (:meth:`ConsumeQueue.problems`).
    `mapped_file_size` is mappedFileSizeConsumeQueue (default: the most common file size).
    Read-only. Cost: O(units), vectorized.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()) / "T" / "0"; d.mkdir(parents=True)
    >>> units = [(0, 100, 0), (200, 100, 0), (100, 100, 0)]     # the third goes back: out of order
    >>> _ = (d / cq.file_name(0)).write_bytes(b"".join(cq.UNIT.pack(*u) for u in units).ljust(100, bytes(1)))
    >>> [(p.check, p.offset, p.field) for p in verify_consume_queue(d)[0].problems]
    [('cq.order', 40, 'unit.commitlog_offset')]
    """
    path = Path(path)
    if path.is_file():
        one = _OneFileQueue(path)
        try:
            q, _ = _open_queue(path.parent, mapped_file_size, one)
            with q:
                return [_queue_checks(q, str(path), None, one.fix)]
        finally:
            one.close()
    out = []
    for folder in _queue_folders(path):
        q, _ = _open_queue(folder, mapped_file_size)
        with q:
            out.append(_queue_checks(q, str(folder), None))
    return out


# ----------------------------------------------------------------------------- checkpoint


def verify_checkpoint(path: str | os.PathLike) -> FileReport:
    """The per-file checks of a checkpoint file: 4096 bytes, zero padding, no negative field.
    Read-only. Cost: one 4 KiB read.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "checkpoint")
    >>> cpf.write_checkpoint(p, cpf.StoreCheckpoint(1718000005000, -1, 0))
    >>> [(x.check, x.offset, x.field) for x in verify_checkpoint(p).problems]
    [('checkpoint.value', 8, 'logics_msg_timestamp')]
    """
    return _checkpoint_report(Path(path))[0]


def _checkpoint_report(path: Path) -> tuple[FileReport, cpf.StoreCheckpoint | None]:
    rep = FileReport(str(path), "checkpoint")
    try:
        cpf.read_checkpoint(path, strict=True)
    except RmqlabError as e:
        rep.problems.append(_wrap("checkpoint.file", e))
    c = cpf.read_checkpoint(path, strict=False)
    rep.counts = c.as_dict()
    for f in cpf.CHECKPOINT.fields:
        v = getattr(c, f.name)
        if v < 0:
            rep.problems.append(_problem("checkpoint.value", FormatError, f"{f.name} {v} is negative",
                                         path, f.offset, f.name))
    return rep, c


# ---------------------------------------------------------------------------- cross-file


def _index_cross(f: IndexFile, msgs: _Messages, seed: int | None, found: list[np.ndarray],
                 notes: list[str]) -> list[Problem]:
    """Entries of one open index file against the message table."""
    out: list[Problem] = []
    g, h, p = f.geometry, f.header, str(f.path)
    e = f.used_entries
    n = len(e)
    if not n:
        return out
    numbers = np.arange(1, n + 1, dtype=np.int64)
    off = g.entries_offset + ENTRY.size * numbers
    phy = e["phy_offset"].astype(np.int64)
    kh = e["key_hash"].astype(np.int64)
    td = e["time_diff"].astype(np.int64)
    expired = msgs.expired(phy)
    if expired.any():
        notes.append(f"{p}: {int(expired.sum())} entries point below the CommitLog's first file "
                     f"(expired messages): not checked")
    row, hit = msgs.lookup(phy)

    def not_boundary(i, c):
        return _problem("index.phy-offset", CorruptIndexError,
                        f"entry {i + 1}: phy_offset {phy[i]} is not where a message starts: {msgs.where(int(phy[i]))}",
                        p, off[i] + ENTRY.offset("phy_offset"), "entry.phy_offset", count=c)

    _add(out, _first(~hit & ~expired, not_boundary))
    if not msgs.n:
        return out
    r = np.where(hit, row, 0)
    if hit[0] and int(msgs.store_ts[r[0]]) != h.begin_timestamp:
        out.append(_problem("index.header-range", CorruptIndexError,
                            f"begin_timestamp {h.begin_timestamp} but entry 1's message (the first put, which sets "
                            f"it) was stored at {int(msgs.store_ts[r[0]])}", p, HEADER.offset("begin_timestamp"),
                            "header.begin_timestamp"))
    if hit[-1] and int(msgs.store_ts[r[-1]]) != h.end_timestamp:
        out.append(_problem("index.header-range", CorruptIndexError,
                            f"end_timestamp {h.end_timestamp} but the last entry's message ({n}) was stored at "
                            f"{int(msgs.store_ts[r[-1]])}", p, HEADER.offset("end_timestamp"), "header.end_timestamp"))
    codes = (r << _HASH_BITS) | np.where(kh >= 0, kh, 0)
    uniq, _, _ = msgs.key_codes
    at = np.searchsorted(uniq, codes)
    matched = hit & (kh >= 0) & (at < len(uniq))
    matched[matched] = uniq[at[matched]] == codes[matched]
    found.append(codes[matched])

    def bad_hash(i, c):
        return _problem("index.key-hash", CorruptIndexError,
                        f"entry {i + 1}: key_hash {kh[i]} is not index_hash(topic#key) of any key of the message "
                        f"at {phy[i]} ({msgs.describe(int(r[i]))})", p, off[i] + ENTRY.offset("key_hash"),
                        "entry.key_hash", count=c)

    _add(out, _first(hit & ~matched, bad_hash))
    rolled = hit & ~goes_to_index_many(msgs.sys_flag[r])

    def rollback(i, c):
        return _problem("index.rolled-back", CorruptIndexError,
                        f"entry {i + 1}: the message at {phy[i]} is a rolled-back transaction record, which "
                        f"buildIndex never indexes", p, off[i] + ENTRY.offset("phy_offset"), "entry.phy_offset",
                        count=c)

    _add(out, _first(rolled, rollback))
    want = time_diff_seconds(msgs.store_ts[r], h.begin_timestamp)
    checkable = hit & (numbers >= 2)
    if seed is not None:
        want[0] = time_diff_seconds(int(msgs.store_ts[r[0]]), seed)
        checkable[0] = hit[0]

    def bad_time(i, c):
        base = h.begin_timestamp if i else seed
        return _problem("index.entry-time", CorruptIndexError,
                        f"entry {i + 1}: time_diff {td[i]} s but its message was stored at "
                        f"{int(msgs.store_ts[r[i]])}, {want[i]} s after {'begin_timestamp' if i else 'the seed'} "
                        f"{base}", p, off[i] + ENTRY.offset("time_diff"), "entry.time_diff", count=c)

    _add(out, _first(checkable & (td != want), bad_time))
    return out


def _index_dir_cross(opened: list[tuple[FileReport, IndexFile | None]], msgs: _Messages | None,
                     notes: list[str], counts: dict) -> list[Problem]:
    out: list[Problem] = []
    live = [f for _, f in opened if f is not None]
    prev: IndexFile | None = None
    found: list[np.ndarray] = []
    entries = 0
    for f in live:
        h = f.header
        if prev is not None and h.keys and prev.header.keys and h.begin_phy_offset < prev.header.end_phy_offset:
            out.append(_problem("index.file-order", CorruptIndexError,
                                f"begin_phy_offset {h.begin_phy_offset} is before the end_phy_offset "
                                f"{prev.header.end_phy_offset} of the previous file {prev.path.name}: files are "
                                f"written one after the other", f.path, HEADER.offset("begin_phy_offset"),
                                "header.begin_phy_offset"))
        if prev is not None and not prev.is_write_full:
            notes.append(f"{prev.path}: not full, yet a newer index file exists (the broker only starts a new "
                         f"file when the last one is full)")
        if msgs is not None:
            seed = None
            if prev is not None and prev.is_write_full and prev.header.end_timestamp > 0:
                seed = prev.header.end_timestamp
            out += _index_cross(f, msgs, seed, found, notes)
        entries += f.header.keys
        prev = f
    counts["index_entries"] = entries
    if msgs is None or not msgs.n:
        return out
    # every key of every message between the first and last indexed offsets has an entry
    with_keys = [f for f in live if f.header.keys]
    if not with_keys:
        return out
    lo = min(f.header.begin_phy_offset for f in with_keys)
    hi = max(f.header.end_phy_offset for f in with_keys)
    _, codes, rows = msgs.key_codes
    pos = msgs.positions[rows]
    want = (pos >= lo) & (pos <= hi) & goes_to_index_many(msgs.sys_flag[rows])
    have = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    at = np.searchsorted(have, codes)
    present = at < len(have)
    present[present] = have[at[present]] == codes[present]
    missing = want & ~present

    def make(i, c):
        from rmqlab.javahash import index_hash

        rr = int(rows[i])
        key_hash = int(codes[i]) & ((1 << _HASH_BITS) - 1)
        uniq, topic = msgs.frame["uniq_key"].iat[rr], msgs.frame["topic"].iat[rr]
        fld = "UNIQ_KEY" if isinstance(uniq, str) and index_hash(_broker_text(f"{topic}#{uniq}")) == key_hash \
            else "KEYS"
        return _problem("index.missing-key", CorruptIndexError,
                        f"the message at {int(msgs.positions[rr])} ({msgs.describe(rr)}) has a key ({fld}) with "
                        f"hash {key_hash} but no index entry, though it lies inside the indexed range {lo}..{hi}: "
                        f"a key query will not find it", msgs.files[int(msgs.file_of[rr])], int(msgs.file_pos[rr]),
                        fld, count=c)

    _add(out, _first(missing, make))
    return out


def _queue_cross(q, msgs: _Messages, report_path: str, fix, notes: list[str]) -> tuple[list[Problem], int]:
    """Units of one open queue against the message table; returns problems and the queue's
    dispatched end (the end of the last message a unit rightly points at, 0 when none)."""
    out: list[Problem] = []
    parts = []
    for qf, (first, units) in zip(q.files, q.segments()):
        if len(units):
            parts.append((str(qf.path), first, units))
    if not parts:
        return out, 0
    co = np.concatenate([u["commitlog_offset"].astype(np.int64) for _, _, u in parts])
    sz = np.concatenate([u["size"].astype(np.int64) for _, _, u in parts])
    tc = np.concatenate([u["tags_code"].astype(np.int64) for _, _, u in parts])
    qoff = np.concatenate([first + np.arange(len(u), dtype=np.int64) for _, first, u in parts])
    upos = np.concatenate([np.arange(len(u), dtype=np.int64) * cq.UNIT_SIZE for _, _, u in parts])
    fidx = np.concatenate([np.full(len(u), k, np.int32) for k, (_, _, u) in enumerate(parts)])
    paths = [_fix_path(pth, fix) for pth, _, _ in parts]
    real = ~((co == 0) & (sz == cq.INT_MAX) & (tc == 0)) & (qoff >= q.min_offset)
    expired = real & msgs.expired(co)
    if expired.any():
        notes.append(f"{report_path}: {int(expired.sum())} units point below the CommitLog's first file "
                     f"(expired messages): not checked")
    check = real & ~expired
    row, hit = msgs.lookup(co)
    r = np.where(hit, row, 0)
    fields = {f.name: f.offset for f in cq.UNIT.fields}

    def unit_problem(check_code, mask, fld, what):
        def make(i, c):
            return _problem(check_code, CorruptIndexError, f"queue offset {qoff[i]}: {what(i)}", paths[fidx[i]],
                            int(upos[i]) + fields[fld], f"unit.{fld}", count=c)
        _add(out, _first(mask, make))

    unit_problem("cq.phy-offset", check & ~hit, "commitlog_offset",
                 lambda i: f"commitlog offset {co[i]} is not where a message starts: {msgs.where(int(co[i]))}")
    if not msgs.n:
        return out, 0
    m = check & hit
    sound = m & (sz == msgs.total_size[r])      # a corrupt unit must not move the dispatched end
    end = int((co[sound] + sz[sound]).max()) if sound.any() else 0
    topics = msgs.frame["topic"].to_numpy(object)
    qids = msgs.frame["queue_id"].to_numpy(np.int64)
    mqoff = msgs.frame["queue_offset"].to_numpy(np.int64)
    other = m & ((topics[r] != q.topic) | (qids[r] != (q.queue_id if q.queue_id is not None else -1)))
    unit_problem("cq.queue", other, "commitlog_offset",
                 lambda i: f"the message at {co[i]} belongs to topic {topics[r[i]]!r} queue {qids[r[i]]}, "
                           f"not this queue ({q.topic!r}, {q.queue_id})")
    unit_problem("cq.size", m & (sz != msgs.total_size[r]), "size",
                 lambda i: f"size {sz[i]} but the message at {co[i]} has TOTALSIZE {msgs.total_size[r[i]]}")
    ext = m & (tc <= cq.EXT_ADDR_MAX)
    if ext.any():
        notes.append(f"{report_path}: {int(ext.sum())} units hold ConsumeQueueExt addresses instead of tags "
                     f"codes: not checked")
    want_tc = msgs.tags_codes[r]
    unit_problem("cq.tags-code", m & ~ext & (tc != want_tc), "tags_code",
                 lambda i: f"tags code {tc[i]} but the message at {co[i]} gives {want_tc[i]} "
                           f"(TAGS {msgs.frame['tags'].iat[int(r[i])]!r}, topic {topics[r[i]]!r})")
    unit_problem("cq.queue-offset", m & ~other & (mqoff[r] != qoff), "commitlog_offset",
                 lambda i: f"the message at {co[i]} has QUEUEOFFSET {mqoff[r[i]]}")
    tran = transaction_type(msgs.sys_flag[r])
    unit_problem("cq.transaction", m & ~goes_to_consume_queue_many(msgs.sys_flag[r]), "commitlog_offset",
                 lambda i: f"the message at {co[i]} is a "
                           f"{'prepared' if tran[i] == TRANSACTION_PREPARED_TYPE else 'rolled-back'} "
                           f"transaction record: only plain and committed messages are dispatched to a queue")
    return out, end


def _fix_path(path: str, fix) -> str:
    e = fix(FormatError("", path=path))
    return e.path


def _missing_units(queues: list[tuple[str, int, int, int]], msgs: _Messages, dispatched_end: int) -> Problem | None:
    """Dispatchable messages before the dispatched end without a unit in their queue."""
    import pandas as pd

    if not msgs.n or dispatched_end <= 0:
        return None
    elig = goes_to_consume_queue_many(msgs.sys_flag) & (msgs.positions < dispatched_end)
    if not elig.any():
        return None
    frame = pd.DataFrame({"topic": msgs.frame["topic"].to_numpy(object), "queue_id": msgs.frame["queue_id"].to_numpy(np.int64),
                          "qoff": msgs.frame["queue_offset"].to_numpy(np.int64), "row": np.arange(msgs.n)})[elig]
    qs = pd.DataFrame(queues, columns=["topic", "queue_id", "qmin", "qmax"])
    j = frame.merge(qs, on=["topic", "queue_id"], how="left")
    missing = j["qmax"].isna() | (j["qoff"] >= j["qmax"])
    if not missing.any():
        return None
    first = j[missing].sort_values("row").iloc[0]
    rr = int(first["row"])
    where = "no such queue folder" if pd.isna(first["qmax"]) else f"the queue ends at {int(first['qmax'])}"
    return _problem("cq.missing-unit", CorruptIndexError,
                    f"the message at {int(msgs.positions[rr])} (topic {first['topic']!r}, queue {int(first['queue_id'])}, "
                    f"QUEUEOFFSET {int(first['qoff'])}) lies before the dispatched end {dispatched_end} but has no "
                    f"ConsumeQueue unit ({where})", msgs.files[int(msgs.file_of[rr])], int(msgs.file_pos[rr]),
                    "QUEUEOFFSET", count=int(missing.sum()))


def _checkpoint_cross(path: Path, c: cpf.StoreCheckpoint, msgs: _Messages | None, have_cq: bool,
                      index_files: list[IndexFile] | None, notes: list[str]) -> list[Problem]:
    out: list[Problem] = []

    def bad(check, fld, what):
        out.append(_problem(check, FormatError, what, path, cpf.CHECKPOINT.offset(fld), fld))

    if msgs is not None and msgs.n:
        last = int(msgs.store_ts.max())
        if c.physic_msg_timestamp > last:
            bad("checkpoint.physic-timestamp", "physic_msg_timestamp",
                f"physicMsgTimestamp {c.physic_msg_timestamp} is after the last store time in the CommitLog "
                f"({last}): the checkpoint records messages the CommitLog does not hold")
        disp = msgs.store_ts[goes_to_consume_queue_many(msgs.sys_flag)]
        if have_cq and len(disp) and c.logics_msg_timestamp > int(disp.max()):
            bad("checkpoint.logics-timestamp", "logics_msg_timestamp",
                f"logicsMsgTimestamp {c.logics_msg_timestamp} is after the last store time of any message a "
                f"ConsumeQueue can hold ({int(disp.max())})")
        if c.confirm_phy_offset > msgs.end_offset:
            bad("checkpoint.confirm-offset", "confirm_phy_offset",
                f"confirmPhyOffset {c.confirm_phy_offset} is past the CommitLog's end {msgs.end_offset}")
    if index_files is not None:
        full_ends = {f.header.end_timestamp for f in index_files if f.is_write_full}
        ts = c.index_msg_timestamp
        if ts != 0 and ts not in full_ends:
            bad("checkpoint.index-timestamp", "index_msg_timestamp",
                f"indexMsgTimestamp {ts} is not the end_timestamp of any full index file "
                f"({len(full_ends)} full files): the broker sets it to one when a file fills")
        lost = [f for f in index_files if f.header.end_timestamp > ts]
        if lost:
            notes.append(f"{path}: after an abnormal shutdown the broker would delete {len(lost)} index files "
                         f"(end_timestamp > indexMsgTimestamp {ts}), {sum(f.header.keys for f in lost)} keys")
    return out


# ------------------------------------------------------------------------------ entry point


def verify_path(path: str | os.PathLike, *, kind: Kind | None = None, hash_slot_num: int | None = None,
                index_num: int | None = None, commitlog_file_size: int | None = None,
                consume_queue_file_size: int | None = None, slot_count_rule: SlotCountRule = NEW_SLOT,
                check_crc: bool = True) -> VerifyReport:
    """Verify a store directory, a part of one, or one file (see the module docstring).

    `kind` forces what `path` is (one of :data:`KINDS`; default :func:`detect_kind`).
    `hash_slot_num` / `index_num`: the broker's maxHashSlotNum / maxIndexNum (default: inferred
    from each index file, :func:`infer_index_geometry`); `commitlog_file_size` /
    `consume_queue_file_size`: mappedFileSizeCommitLog / mappedFileSizeConsumeQueue (default:
    the most common file size). `check_crc`: compute every BODYCRC. Read-only. Raises
    FileNotFoundError / ValueError for a missing or unrecognisable `path`; bad bytes are
    problems in the report, never exceptions. Cost: O(store), vectorized: about 0.3 s for a
    store of 2,000 messages in small files, dominated by a fixed cost per CommitLog file.

    >>> import tempfile
    >>> from rmqlab.store import generate_store
    >>> from rmqlab.workload import Workload
    >>> root = Path(tempfile.mkdtemp()) / "store"
    >>> _ = generate_store(root, Workload(messages=300, seed=1), commitlog_file_size=1 << 16,
    ...                    hash_slot_num=16, index_num=128, consume_queue_file_size=2000)
    >>> r = verify_path(root)
    >>> r.ok, r.cross_counts["messages"], r.summary()[-1]
    (True, 300, '12 files, 0 failed, 0 errors, 0 warnings: ok')
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or directory")
    if kind is None:
        kind = detect_kind(p)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    rep = VerifyReport(str(p), kind, settings={"hash_slot_num": hash_slot_num, "index_num": index_num,
                                               "commitlog_file_size": commitlog_file_size,
                                               "consume_queue_file_size": consume_queue_file_size,
                                               "slot_count_rule": slot_count_rule, "check_crc": check_crc})
    if kind == "store":
        if not p.is_dir():
            raise NotADirectoryError(f"{p}: a store is a directory")
        _verify_store(p, rep, hash_slot_num, index_num, commitlog_file_size, consume_queue_file_size,
                      slot_count_rule, check_crc)
    elif kind == "commitlog":
        files, _, s = _scan_commitlog(p, commitlog_file_size, check_crc)
        rep.files = files
        rep.settings["commitlog_file_size"] = s["mapped_file_size"]
    elif kind == "index":
        paths = sorted(c for c in p.iterdir() if c.is_file() and _DIGITS17.fullmatch(c.name)) if p.is_dir() else [p]
        opened = _open_indexes(paths, hash_slot_num, index_num, slot_count_rule)
        try:
            rep.files = [r for r, _ in opened]
            rep.cross = _index_dir_cross(opened, None, rep.notes, rep.cross_counts)
        finally:
            for _, f in opened:
                if f is not None:
                    f.close()
    elif kind == "consumequeue":
        rep.files = verify_consume_queue(p, mapped_file_size=consume_queue_file_size)
    else:
        if p.is_dir():
            raise IsADirectoryError(f"{p}: a checkpoint is a file")
        r, _ = _checkpoint_report(p)
        rep.files = [r]
    for f in rep.files:
        rep.notes.extend(f.notes)
    return rep


def _open_indexes(paths: list[Path], hsn, inum, rule) -> list[tuple[FileReport, IndexFile | None]]:
    geos = _index_geometries(paths, hsn, inum)
    out = []
    try:
        for q in paths:
            out.append(_open_index(q, *geos[q], rule))
    except BaseException:
        for _, f in out:
            if f is not None:
                f.close()
        raise
    return out


def _verify_store(root: Path, rep: VerifyReport, hsn, inum, cl_size, cq_size, rule, check_crc) -> None:
    commitlog, index_dir, cq_dir, checkpoint = (root / "commitlog", root / "index", root / "consumequeue",
                                                root / "checkpoint")
    notes = rep.notes
    if (root / "abort").exists():
        notes.append(f"{root / 'abort'}: present: the broker did not shut down cleanly (recovery will re-dispatch "
                     f"from the checkpoint and may delete index files)")
    msgs: _Messages | None = None
    if commitlog.is_dir():
        files, msgs, s = _scan_commitlog(commitlog, cl_size, check_crc)
        rep.files += files
        rep.settings["commitlog_file_size"] = s["mapped_file_size"]
        rep.cross_counts["messages"] = msgs.n
    else:
        notes.append(f"{commitlog}: missing: nothing to check index entries and queue units against")
    index_files: list[IndexFile] | None = None
    opened: list[tuple[FileReport, IndexFile | None]] = []
    try:
        if index_dir.is_dir():
            paths = sorted(c for c in index_dir.iterdir() if c.is_file() and _DIGITS17.fullmatch(c.name))
            ignored = [c.name for c in index_dir.iterdir() if c.is_file() and not _DIGITS17.fullmatch(c.name)]
            if ignored:
                notes.append(f"{index_dir}: ignored (not 17-digit names, as the broker ignores them): "
                             + ", ".join(sorted(ignored)))
            opened = _open_indexes(paths, hsn, inum, rule)
            rep.files += [r for r, _ in opened]
            rep.cross += _index_dir_cross(opened, msgs, notes, rep.cross_counts)
            index_files = [f for _, f in opened if f is not None]
        if cq_dir.is_dir():
            queues, dispatched_end, units = [], 0, 0
            for folder in _queue_folders(cq_dir):
                if folder == cq_dir:
                    continue
                q, _ = _open_queue(folder, cq_size)
                with q:
                    r = _queue_checks(q, str(folder), msgs.end_offset if msgs is not None else None)
                    rep.files.append(r)
                    units += q.count
                    if msgs is not None and q.topic is not None and q.queue_id is not None:
                        probs, end = _queue_cross(q, msgs, str(folder), lambda e: e, notes)
                        rep.cross += probs
                        dispatched_end = max(dispatched_end, end)
                        queues.append((q.topic, q.queue_id, q.min_offset, q.max_offset))
            rep.cross_counts["cq_units"] = units
            if msgs is not None:
                _add(rep.cross, _missing_units(queues, msgs, dispatched_end))
        if checkpoint.exists():
            r, c = _checkpoint_report(checkpoint)
            rep.files.append(r)
            rep.cross += _checkpoint_cross(checkpoint, c, msgs, cq_dir.is_dir(), index_files, notes)
            rep.cross_counts["checkpoint"] = True
        else:
            notes.append(f"{checkpoint}: missing")
    finally:
        for _, f in opened:
            if f is not None:
                f.close()
