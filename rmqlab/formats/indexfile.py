"""RocketMQ's IndexFile: the on-disk hash index behind "query message by key".

Mirrors ``org.apache.rocketmq.store.index.IndexFile`` and ``IndexHeader`` (RocketMQ store
module; checked against 5.3.x and the golden files written by that Java code).

A file is three regions, all integers big-endian and signed::

    header   40 bytes                      IndexHeader below
    slots    hash_slot_num x 4 bytes       slot i -> number of the newest entry hashed to i
    entries  index_num x 20 bytes          IndexEntry below; entry 0 is never written

A key is the string ``topic + "#" + key``; its stored hash is ``abs(String.hashCode)`` with
Integer.MIN_VALUE mapped to 0, and its slot is ``hash % hash_slot_num``. Each slot heads a
chain of entries linked by ``prev_index`` from newest to oldest.

Entry points, in the npTDMS manner:

* :meth:`IndexFile.open` maps a file read-only; nothing is read until asked, so opening a
  420 MB default-size file costs O(1), as for a small one. :attr:`IndexFile.slots` and
  :attr:`IndexFile.entries` are NumPy views over the map (no copy).
* :func:`read_header` reads only the 40-byte header.
* :meth:`IndexFile.create` + :meth:`IndexFile.put_key` behave exactly as the broker's putKey;
  :func:`build_index_file` produces the same bytes for millions of keys at once, in C.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "20240610061524062")
>>> with IndexFile.create(path, hash_slot_num=8, index_num=5) as f:
...     f.put_key("TopicTest#k1", 100, 1718000000000)
...     f.select_phy_offsets("TopicTest#k1", 64, 0, 2**63 - 1)
True
[100]
>>> read_header(path).index_count      # one put: entry 0 unused, so the count is 2
2
"""
from __future__ import annotations

import functools
import mmap
import os
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dc_fields
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

import rmqlab._indexcore as _indexcore
from rmqlab.errors import (
    CorruptIndexError,
    GeometryError,
    ReadOnlyError,
    TruncatedFileError,
)
from rmqlab.formats.layout import Layout
from rmqlab.jvm.hashcode import index_hash, index_hash_many, java_hash_many
from rmqlab.jvm.longs import INT_MAX, LONG_MAX, LONG_MIN, as_longs, check_long, wrap_long
from rmqlab.tables.arrays import FirstFlagged, distinct_counts

__all__ = [
    "HEADER",
    "SLOT",
    "ENTRY",
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "Geometry",
    "Flagged",
    "Invariants",
    "IndexHeader",
    "IndexFile",
    "QueryTrace",
    "TraceStep",
    "BatchResult",
    "read_header",
    "build_index_file",
]

# IndexHeader.java
HEADER = Layout("IndexHeader", [
    ("begin_timestamp", "q", "store time (ms) of the first entry; "
                             "a follow-on file starts with the previous file's end"),
    ("end_timestamp", "q", "store time (ms) of the last entry"),
    ("begin_phy_offset", "q", "CommitLog offset of the first entry's message"),
    ("end_phy_offset", "q", "CommitLog offset of the last entry's message"),
    ("hash_slot_count", "i", "slots used (>= 4.7.1: slots that were empty when written to; <= 4.7.0: every put)"),
    ("index_count", "i", "next entry number; starts at 1 because entry 0 is never written"),
])

# IndexFile.java, hashSlotSize = 4
SLOT = Layout("HashSlot", [
    ("newest_entry", "i", "number of the newest entry of this slot's chain; 0 = empty"),
])

# IndexFile.java, indexSize = 20
ENTRY = Layout("IndexEntry", [
    ("key_hash", "i", "abs(String.hashCode(topic#key)), Integer.MIN_VALUE stored as 0"),
    ("phy_offset", "q", "CommitLog offset of the message"),
    ("time_diff", "i", "whole seconds after header.begin_timestamp, truncated toward zero, clamped to [0, 2^31-1]"),
    ("prev_index", "i", "older entry of the same slot; 0 ends the chain"),
])

DEFAULT_HASH_SLOT_NUM = 5_000_000  # MessageStoreConfig.maxHashSlotNum
DEFAULT_INDEX_NUM = 5_000_000 * 4  # MessageStoreConfig.maxIndexNum

SlotCountRule = Literal["new-slot", "every-put"]
#: hashSlotCount += 1 only when the slot was empty (RocketMQ >= 4.7.1, the default) ...
NEW_SLOT: SlotCountRule = "new-slot"
#: ... or on every put (RocketMQ <= 4.7.0).
EVERY_PUT: SlotCountRule = "every-put"


def slot_count_rule_of(broker_version: str | None) -> SlotCountRule:
    """The hashSlotCount rule a broker release's putKey follows (:func:`rmqlab.rules.versions.layout_facts`);
    None (release unknown) gives :data:`NEW_SLOT`, the rule of every release since 4.7.1.

    >>> slot_count_rule_of("4.5.2"), slot_count_rule_of("4.9.7"), slot_count_rule_of(None)
    ('every-put', 'new-slot', 'new-slot')
    """
    from rmqlab.rules.versions import layout_facts

    return EVERY_PUT if layout_facts(broker_version).slot_count_every_put else NEW_SLOT

_SLOT_I32 = SLOT.field_struct("newest_entry")
# From this many keys put_keys writes through the file descriptor: that path reads and writes
# the whole slot table once a call, which a large batch repays and a small one does not.
_STREAM_MIN_KEYS = 100_000
_HEADER_FIELD_STRUCTS = {f.name: (f.offset, HEADER.field_struct(f.name)) for f in HEADER.fields}


def time_diff_seconds(store_timestamp: Any, begin_timestamp: Any) -> Any:
    """The time_diff putKey stores: whole seconds after begin, truncated toward zero, clamped.

    0 whenever ``begin_timestamp <= 0``; negative differences become 0; more than 2^31-1
    seconds becomes 2^31-1. The subtraction wraps like Java's long arithmetic. Units: ms in,
    s out. Ints give an int; integer arrays (either argument, broadcast) give an int64 array.
    This is the definition; the C put loop of ``rmqlab._indexcore`` repeats it for speed and
    the tests hold the two equal. Cost: O(n), NumPy.

    >>> time_diff_seconds(1718000001999, 1718000000000), time_diff_seconds(5, 1718000000000)
    (1, 0)
    """
    begin = np.asarray(begin_timestamp, dtype=np.int64)
    with np.errstate(over="ignore"):
        diff = np.asarray(store_timestamp, dtype=np.int64) - begin
    # Java's / truncates toward zero where // floors; they differ only below zero, which the
    # clamp makes 0 either way
    out = np.where(begin > 0, np.clip(diff // 1000, 0, INT_MAX), 0)
    return int(out) if out.ndim == 0 else out.astype(np.int64)


@dataclass(frozen=True)
class Geometry:
    """Sizes of one index file: ``40 + 4*hash_slot_num + 20*index_num`` bytes.

    >>> Geometry(5_000_000, 20_000_000).file_size
    420000040
    """

    hash_slot_num: int
    index_num: int

    def __post_init__(self):
        for name in ("hash_slot_num", "index_num"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0 or v > INT_MAX:
                raise ValueError(f"{name} must be a positive 32-bit int, got {v!r}")

    @property
    def slots_offset(self) -> int:
        return HEADER.size

    @property
    def entries_offset(self) -> int:
        return HEADER.size + SLOT.size * self.hash_slot_num

    @property
    def file_size(self) -> int:
        return self.entries_offset + ENTRY.size * self.index_num

    @property
    def capacity(self) -> int:
        """Keys a file can hold: ``index_num - 1``, because entry 0 is never written."""
        return self.index_num - 1

    def region_at(self, offset: int) -> str:
        """Which structure holds byte `offset`: "header", "slot[i]" or "entry[n]"."""
        if offset < self.slots_offset:
            return "header"
        if offset < self.entries_offset:
            return f"slot[{(offset - self.slots_offset) // SLOT.size}]"
        return f"entry[{(offset - self.entries_offset) // ENTRY.size}]"

    def slot_offset(self, slot: int) -> int:
        return self.slots_offset + SLOT.size * slot

    def entry_offset(self, entry: int) -> int:
        return self.entries_offset + ENTRY.size * entry

    @classmethod
    def default(cls) -> Geometry:
        return cls(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM)

    @classmethod
    def infer(cls, file_size: int, hash_slot_num: int | None = None, index_num: int | None = None,
              *, path: str | os.PathLike | None = None) -> Geometry:
        """The geometry of a file of `file_size` bytes, given at most one of the two counts.

        With neither count, only the default size (420,000,040 bytes) has one sensible answer;
        any other size raises :class:`GeometryError` saying which argument to pass.
        """
        body = file_size - HEADER.size
        if hash_slot_num is not None and index_num is not None:
            g = cls(int(hash_slot_num), int(index_num))
            rest = body - SLOT.size * g.hash_slot_num
            fits = rest > 0 and rest % ENTRY.size == 0
            if file_size < g.file_size and not fits:
                raise TruncatedFileError(
                    f"file is {file_size} bytes but hash_slot_num={hash_slot_num}, index_num={index_num} "
                    f"need {g.file_size}: it ends inside {g.region_at(file_size)}",
                    path=path, offset=file_size, field=g.region_at(file_size))
            if g.file_size != file_size:
                hint = (f"; with hash_slot_num={hash_slot_num} the file holds index_num={rest // ENTRY.size} "
                        f"(or it was cut on an entry boundary)" if fits else "")
                raise GeometryError(
                    f"file is {file_size} bytes but hash_slot_num={hash_slot_num}, index_num={index_num} "
                    f"need {HEADER.size} + {SLOT.size}*{hash_slot_num} + {ENTRY.size}*{index_num} = "
                    f"{g.file_size} bytes{hint}",
                    path=path, offset=file_size, field="file size")
            return g
        if file_size < HEADER.size:
            raise TruncatedFileError(
                f"file is {file_size} bytes, shorter than the {HEADER.size}-byte header",
                path=path, offset=file_size, field="header")
        if hash_slot_num is not None:
            rest = body - SLOT.size * int(hash_slot_num)
            if rest <= 0 or rest % ENTRY.size:
                raise GeometryError(
                    f"file is {file_size} bytes: with hash_slot_num={hash_slot_num} the remaining "
                    f"{rest} bytes are not a whole positive number of {ENTRY.size}-byte entries",
                    path=path, offset=file_size, field="file size")
            return cls(int(hash_slot_num), rest // ENTRY.size)
        if index_num is not None:
            rest = body - ENTRY.size * int(index_num)
            if rest <= 0 or rest % SLOT.size:
                raise GeometryError(
                    f"file is {file_size} bytes: with index_num={index_num} the remaining "
                    f"{rest} bytes are not a whole positive number of {SLOT.size}-byte slots",
                    path=path, offset=file_size, field="file size")
            return cls(rest // SLOT.size, int(index_num))
        default = cls.default()
        if file_size == default.file_size:
            return default
        raise GeometryError(
            f"file is {file_size} bytes, not the default {default.file_size}; many slot/entry "
            f"splits fit this size, so pass hash_slot_num= or index_num= (the broker's "
            f"maxHashSlotNum / maxIndexNum)", path=path, offset=file_size, field="file size")


@dataclass(frozen=True)
class IndexHeader:
    """The six header fields, as the broker holds them after ``IndexHeader.load()``."""

    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int

    @property
    def keys(self) -> int:
        """Number of entries written: ``index_count - 1``."""
        return max(self.index_count - 1, 0)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dc_fields(self)}


def _unpack_header(buf) -> tuple[IndexHeader, int]:
    """Header as loaded by Java (index_count <= 0 reads as 1), and the raw index_count."""
    raw = HEADER.unpack_from(buf, 0)
    loaded = raw._replace(index_count=raw.index_count if raw.index_count > 0 else 1)
    return IndexHeader(*loaded), raw.index_count


def read_header(path: str | os.PathLike) -> IndexHeader:
    """Read only the 40-byte header of an index file (as the broker loads it). Cost: one read."""
    with open(path, "rb") as fh:
        data = fh.read(HEADER.size)
    if len(data) < HEADER.size:
        raise TruncatedFileError(f"file is {len(data)} bytes, shorter than the {HEADER.size}-byte header",
                                 path=path, offset=len(data), field="header")
    return _unpack_header(data)[0]


# ----------------------------------------------------------------------------------- trace


@dataclass(frozen=True)
class TraceStep:
    """One entry read by a chain walk."""

    entry: int          # entry number
    key_hash: int       # stored hash
    phy_offset: int
    time_diff: int      # stored seconds
    time_read: int      # begin_timestamp + time_diff*1000, what the broker compares (ms)
    prev_index: int
    hash_match: bool
    time_match: bool
    returned: bool      # appended to the result (hash and time matched)


#: Why a walk stopped, in the broker's order of checks.
STOP_REASONS = {
    "empty-slot": "the slot is empty (0) or points past index_count: no chain to walk",
    "empty-file": "index_count <= 1: the file holds no entries",
    "max-num": "the result list reached max_num (checked before each read)",
    "negative-time-diff": "the entry's time_diff is negative (a corrupt entry): the broker stops",
    "end-of-chain": "prev_index is 0: the oldest entry of this slot was read",
    "older-than-begin": "the entry's time is before `begin`; older entries are assumed older still",
    "prev-out-of-range": "prev_index points past index_count (corrupt or torn): the broker stops",
    "self-loop": "prev_index points at the entry itself: the broker stops",
    "cycle": "as many reads as the file has entries without a new result: a cycle the broker would never leave",
    "entry-past-end": "an entry number lies beyond the file (index_count larger than index_num)",
}


@dataclass
class QueryTrace:
    """Everything a select_phy_offsets walk did, for explaining a query's answer.

    ``steps`` lists every entry read in order; ``stop`` is a key of :data:`STOP_REASONS`.
    """

    path: str | None
    key: str
    key_hash: int
    slot: int
    slot_value: int
    max_num: int
    begin: int
    end: int
    steps: list[TraceStep] = field(default_factory=list)
    results: list[int] = field(default_factory=list)
    stop: str = ""

    @property
    def stop_reason(self) -> str:
        return STOP_REASONS[self.stop]

    @property
    def hash_matches(self) -> int:
        """Entries read whose stored hash equals the key's. Some may belong to other keys with the
        same hash: only the CommitLog can tell (the verified query mode reads it)."""
        return sum(1 for s in self.steps if s.hash_match)

    @property
    def revisited(self) -> list[int]:
        """Entry numbers read more than once: non-empty only when a corrupt chain has a cycle."""
        seen, again = set(), []
        for s in self.steps:
            if s.entry in seen and s.entry not in again:
                again.append(s.entry)
            seen.add(s.entry)
        return again

    def to_frame(self):
        """The steps as a pandas DataFrame, one row per entry read."""
        import pandas as pd

        cols = [f.name for f in dc_fields(TraceStep)]
        return pd.DataFrame([[getattr(s, c) for c in cols] for s in self.steps], columns=cols)

    def __str__(self) -> str:
        lines = [f"key {self.key!r}: hash {self.key_hash}, slot {self.slot} -> entry {self.slot_value}"]
        for s in self.steps:
            mark = "returned" if s.returned else ("hash match, outside time range" if s.hash_match
                                                  else "other hash")
            lines.append(f"  entry {s.entry:>10}  hash {s.key_hash:>10}  phy {s.phy_offset:>14}  "
                         f"time {s.time_read}  prev {s.prev_index:>10}  {mark}")
        lines.append(f"stopped: {self.stop} ({self.stop_reason}); {len(self.results)} offsets")
        return "\n".join(lines)


@dataclass(frozen=True)
class BatchResult:
    """Answers for many keys at once, in CSR form: key i's offsets are
    ``phy_offsets[starts[i]:starts[i+1]]``, newest first."""

    starts: np.ndarray       # int64, len(keys) + 1
    phy_offsets: np.ndarray  # int64
    entries_read: np.ndarray  # int32 per key

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, i: int) -> list[int]:
        return self.phy_offsets[self.starts[i]:self.starts[i + 1]].tolist()

    def counts(self) -> np.ndarray:
        return np.diff(self.starts)

    def to_frame(self, keys: Sequence[str] | None = None):
        """One row per returned offset: key number (and key), phy_offset."""
        import pandas as pd

        idx = np.repeat(np.arange(len(self)), self.counts())
        df = pd.DataFrame({"key_index": idx, "phy_offset": self.phy_offsets})
        if keys is not None:
            df.insert(1, "key", np.asarray(keys, dtype=object)[idx])
        return df


# ------------------------------------------------------------------------------- the file


class Flagged(NamedTuple):
    """A check over the slots or entries: the first element it flags (-1 for none; a slot
    index, or an entry number - 1) and how many it flags."""

    first: int
    total: int


class Invariants(NamedTuple):
    """What one pass over an index file's slots and written entries finds
    (:meth:`IndexFile.invariants`): occupied slots, the longest chain by key hash, and nine
    checks (:class:`Flagged`): slot values out of range, chain heads hashed to another slot,
    negative key hashes and time diffs, prev_index not older than its entry, prev_index into
    another slot, entries referenced twice or never, and chain entries older in time_diff than
    the entry before them (entry 1 counted as 0)."""

    occupied: int
    longest_chain: int
    slot_out_of_range: Flagged
    wrong_head: Flagged
    negative_hash: Flagged
    negative_time: Flagged
    bad_prev: Flagged
    prev_slot: Flagged
    twice: Flagged
    unreached: Flagged
    time_order: Flagged


class IndexFile:
    """One RocketMQ index file: create and write it like the broker, or map it read-only.

    Use :meth:`create` for a new file and :meth:`open` for an existing one; do not call the
    constructor directly. Also a context manager (``close()`` on exit).

    Costs: open O(1) (a memory map); put_key O(1); select_phy_offsets O(chain length);
    :meth:`check` O(file) vectorized.
    """

    def __init__(self, path: Path, geometry: Geometry, fileobj, mm: mmap.mmap, *,
                 writable: bool, slot_count_rule: SlotCountRule):
        self.path = path
        self.geometry = geometry
        self._file = fileobj
        self._mm = mm
        self.writable = writable
        if slot_count_rule not in (NEW_SLOT, EVERY_PUT):
            raise ValueError(f"slot_count_rule must be {NEW_SLOT!r} or {EVERY_PUT!r}")
        self.slot_count_rule = slot_count_rule
        hdr, self.raw_index_count = _unpack_header(mm)
        # the header's bytes as opened: changed_on_disk compares them with the file's now
        self._opened_header = bytes(mm[:HEADER.size]) if not writable else b""
        # The broker's in-memory header (IndexHeader's atomics); the bytes follow each setter.
        self._h = hdr.as_dict()
        self._views: dict[str, np.ndarray] = {}
        self._closed = False
        # All select_phy_offsets hands the C look-up besides its own arguments: the map, the
        # geometry and the header dict itself (C reads index_count and begin_timestamp from it
        # at each call, so no put can leave a stale copy behind). close() puts the closed
        # file's error message in place of the map: a look-up bound to this list raises it.
        self._lookup: list[Any] = [mm, geometry.hash_slot_num, geometry.index_num, self._h]
        # An open file's look-up is the C entry bound to that list: one C call from Python, not
        # a method's frame and then the call (the frame is about a tenth of a look-up).
        self.select_phy_offsets = functools.partial(_indexcore.select_key, self._lookup)  # type: ignore[method-assign]

    # -- construction -------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
               index_num: int = DEFAULT_INDEX_NUM, end_phy_offset: int = 0, end_timestamp: int = 0,
               *, slot_count_rule: SlotCountRule = NEW_SLOT, overwrite: bool = False) -> IndexFile:
        """A new, zero-filled index file, as ``new IndexFile(name, slots, num, endPhy, endTs)``.

        A follow-on file is seeded with the previous file's `end_phy_offset` and
        `end_timestamp` (when > 0): they become both begin and end values until the first put
        replaces the begin values. The header's counts stay 0 on disk until the first put or
        :meth:`flush`, as in the broker. Refuses to replace an existing file unless `overwrite`.
        """
        geometry = Geometry(hash_slot_num, index_num)
        end_phy_offset = check_long("end_phy_offset", end_phy_offset)
        end_timestamp = check_long("end_timestamp", end_timestamp)
        path = Path(path)
        fh = open(path, "w+b" if overwrite else "x+b")
        try:
            fh.truncate(geometry.file_size)
            mm = mmap.mmap(fh.fileno(), geometry.file_size, access=mmap.ACCESS_WRITE)
        except BaseException:
            fh.close()
            raise
        f = cls(path, geometry, fh, mm, writable=True, slot_count_rule=slot_count_rule)
        f._h["index_count"] = 1  # IndexHeader's AtomicInteger starts at 1
        if end_phy_offset > 0:
            f._set("begin_phy_offset", end_phy_offset)
            f._set("end_phy_offset", end_phy_offset)
        if end_timestamp > 0:
            f._set("begin_timestamp", end_timestamp)
            f._set("end_timestamp", end_timestamp)
        return f

    @classmethod
    def open(cls, path: str | os.PathLike, hash_slot_num: int | None = None,
             index_num: int | None = None, *, writable: bool = False,
             slot_count_rule: SlotCountRule = NEW_SLOT, strict: bool = True) -> IndexFile:
        """Map an existing file; read-only unless `writable` (then puts continue after the last
        entry, as a broker does after a restart).

        Pass the broker's ``maxHashSlotNum`` / ``maxIndexNum``; with neither, only the default
        size is accepted (see :meth:`Geometry.infer`). With `strict` (the default) a header that
        contradicts the geometry raises :class:`CorruptIndexError`; with ``strict=False`` the
        file opens anyway and queries stay bounded (see :meth:`problems`).
        """
        path = Path(path)
        fh = open(path, "r+b" if writable else "rb")
        try:
            size = os.fstat(fh.fileno()).st_size
            geometry = Geometry.infer(size, hash_slot_num, index_num, path=path)
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            mm = mmap.mmap(fh.fileno(), size, access=access)
        except BaseException:
            fh.close()
            raise
        f = cls(path, geometry, fh, mm, writable=writable, slot_count_rule=slot_count_rule)
        if strict:
            problems = f._header_problems()
            if problems:
                f.close()
                raise problems[0]
        return f

    # -- header -------------------------------------------------------------------------

    @property
    def header(self) -> IndexHeader:
        """The header as the broker holds it (a snapshot)."""
        return IndexHeader(**self._h)

    def header_value(self, name: str) -> int:
        """One field of :attr:`header` (e.g. "end_timestamp") without making the snapshot: what a
        query reads of each file it visits. Cost: a dict look-up."""
        return self._h[name]

    def _set(self, name: str, value: int) -> None:
        self._h[name] = value
        off, st = _HEADER_FIELD_STRUCTS[name]
        st.pack_into(self._mm, off, value)

    def _header_problems(self) -> list[CorruptIndexError]:
        h, g, p = self._h, self.geometry, str(self.path)
        out = []
        if self.raw_index_count < 0:
            out.append(CorruptIndexError(f"index_count {self.raw_index_count} is negative",
                                         path=p, offset=HEADER.offset("index_count"), field="header.index_count"))
        if h["index_count"] > g.index_num:
            out.append(CorruptIndexError(
                f"index_count {h['index_count']} exceeds index_num {g.index_num}: the header "
                f"contradicts the geometry (wrong index_num, or a corrupt header)",
                path=p, offset=HEADER.offset("index_count"), field="header.index_count"))
        if h["hash_slot_count"] < 0 or h["hash_slot_count"] > max(h["index_count"] - 1, 0):
            out.append(CorruptIndexError(
                f"hash_slot_count {h['hash_slot_count']} is outside 0..index_count-1 "
                f"({h['index_count'] - 1}); each put adds at most one",
                path=p, offset=HEADER.offset("hash_slot_count"), field="header.hash_slot_count"))
        return out

    @property
    def is_write_full(self) -> bool:
        """True when ``index_count >= index_num`` (IndexFile.isWriteFull)."""
        return self._h["index_count"] >= self.geometry.index_num

    def is_time_matched(self, begin: int, end: int) -> bool:
        """IndexFile.isTimeMatched: does [begin, end] (ms) touch this file's time range?

        For begin <= end this is closed-interval overlap with [begin_timestamp, end_timestamp];
        the three clauses are kept as in Java, which also decides inverted ranges.
        """
        b, e = self._h["begin_timestamp"], self._h["end_timestamp"]
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    # -- NumPy views ----------------------------------------------------------------------

    def _view(self, name: str, dtype, offset: int, count: int) -> np.ndarray:
        v = self._views.get(name)
        if v is None:
            v = np.frombuffer(self._mm, dtype=dtype, count=count, offset=offset)
            self._views[name] = v
        return v

    @property
    def slots(self) -> np.ndarray:
        """All ``hash_slot_num`` slots as a big-endian int32 view of the map (no copy)."""
        g = self.geometry
        return self._view("slots", SLOT.dtype["newest_entry"], g.slots_offset, g.hash_slot_num)

    @property
    def entries(self) -> np.ndarray:
        """All ``index_num`` entries (entry 0 included) as a structured view (no copy)."""
        g = self.geometry
        return self._view("entries", ENTRY.dtype, g.entries_offset, g.index_num)

    @property
    def used_entries(self) -> np.ndarray:
        """Entries 1 .. index_count-1, the ones written. Element i is entry number i+1."""
        n = min(self._h["index_count"], self.geometry.index_num)
        return self.entries[1:n]

    def entry(self, number: int):
        """Entry `number` as a named tuple (key_hash, phy_offset, time_diff, prev_index)."""
        if not 0 <= number < self.geometry.index_num:
            raise IndexError(f"entry {number} outside 0..{self.geometry.index_num - 1}")
        return ENTRY.unpack_from(self._mm, self.geometry.entry_offset(number))

    # -- writing --------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run: nothing can be read or written any more."""
        return self._closed

    def _closed_error(self) -> ValueError:
        return ValueError(f"{self.path}: index file is closed")

    def _require_open(self) -> None:
        if self._closed:
            raise self._closed_error()

    def _require_writable(self) -> None:
        self._require_open()
        if not self.writable:
            raise ReadOnlyError("opened read-only; use IndexFile.create or open(..., writable=True)",
                                path=self.path)

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """IndexFile.putKey: index `key` (already ``topic#key``). False once the file is full.

        In order: refuse when index_count >= index_num; read the slot (a value outside
        1..index_count counts as empty); write the entry at index_count with the time diff
        against the current begin_timestamp; point the slot at it; on the first entry take its
        begin values; count the slot (only if it was empty, unless the <= 4.7.0 rule); advance
        index_count and the end values. Cost: O(1): one hash of the key and one put in C (the
        same code as :meth:`put_keys`).
        """
        self._require_writable()
        h = self._h
        state = _indexcore.put_one(
            self._mm, self.geometry.hash_slot_num, self.geometry.index_num,
            (h["begin_timestamp"], h["end_timestamp"], h["begin_phy_offset"], h["end_phy_offset"],
             h["hash_slot_count"], h["index_count"]),
            index_hash(key), check_long("phy_offset", phy_offset),
            check_long("store_timestamp", store_timestamp), self.slot_count_rule == EVERY_PUT)
        if state is None:
            return False
        (h["begin_timestamp"], h["end_timestamp"], h["begin_phy_offset"], h["end_phy_offset"],
         h["hash_slot_count"], h["index_count"]) = state
        return True

    def put_keys(self, keys: Any, phy_offsets: Any, store_timestamps: Any, *,
                 hashes: np.ndarray | None = None, threads: int | None = None) -> int:
        """Put many keys in order, exactly as repeated :meth:`put_key` would; returns how many
        fit. Cost: O(n) in C, no Python loop; once hashed, the time goes to the put loop (bound
        by its random slot-table reads) and to the kernel's copy of the entries into the page
        cache (see :func:`build_index_file` for the whole build).

        `keys` is anything :func:`rmqlab.jvm.hashcode.index_hash_many` accepts; pass `hashes`
        (int32, already index hashes) instead to skip hashing. A batch of 100,000 keys or more
        writes its entries through the file descriptor rather than the map (the same bytes;
        Linux's page cache keeps the map coherent), which spares a page fault per page written
        and keeps those pages out of this process's resident memory. Such a batch of
        :data:`THREADED_PUT_KEYS` or more is put on `threads` threads (default: every usable
        core): the chains split by slot range, the entries by key range, the bytes the same.
        """
        self._require_writable()
        phy = as_longs("phy_offsets", phy_offsets)
        ts = as_longs("store_timestamps", store_timestamps)
        n = len(phy)
        if len(ts) != n:
            raise ValueError(f"{n} phy_offsets but {len(ts)} store_timestamps")
        room = max(self.geometry.index_num - self._h["index_count"], 0)
        take = min(n, room)
        java_hashes = hashes is None
        if hashes is None:
            if len(keys) != n:
                raise ValueError(f"{len(keys)} keys but {n} phy_offsets")
            # Raw String.hashCode values: the C loop maps them to index hashes on the fly,
            # sparing two passes over an array of n int32.
            hashes = java_hash_many(_head(keys, take) if take < n else keys)
        hashes = np.ascontiguousarray(hashes[:take], dtype=np.int32)
        if take == 0:
            return 0
        if not java_hashes and hashes.min() < 0:
            raise ValueError("index hashes must be >= 0 (use index_hash_many)")
        state = (self._h["begin_timestamp"], self._h["end_timestamp"], self._h["begin_phy_offset"],
                 self._h["end_phy_offset"], self._h["hash_slot_count"], self._h["index_count"])
        fd = self._file.fileno() if take >= _STREAM_MIN_KEYS else -1
        if threads is None:
            threads = _threads_from(take, THREADED_PUT_KEYS)
        elif isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads!r}")
        try:
            new_state = _indexcore.put_entries(
                self._mm, self.geometry.hash_slot_num, self.geometry.index_num, state,
                hashes, phy[:take], ts[:take], self.slot_count_rule == EVERY_PUT, fd, java_hashes, threads)
        except OSError as e:
            raise OSError(e.errno, e.strerror, str(self.path)) from None
        for name, value in zip(("begin_timestamp", "end_timestamp", "begin_phy_offset",
                                "end_phy_offset", "hash_slot_count", "index_count"), new_state):
            self._set(name, value)
        return take

    def flush(self, sync: bool = True) -> None:
        """Write the whole header (IndexHeader.updateByteBuffer) and, with `sync`, force the
        map to disk (MappedByteBuffer.force: one write-back of the map's dirty pages, O(file))."""
        self._require_writable()
        for name, value in self._h.items():
            self._set(name, value)
        if sync:
            self._mm.flush()

    def close(self, sync: bool = True) -> None:
        """Flush (when writable; see :meth:`flush`) and unmap. NumPy views handed out keep the
        map alive until they are collected."""
        if self._closed:
            return
        if self.writable:
            self.flush(sync)
        self._views.clear()
        try:
            self._mm.close()
        except BufferError:
            pass  # a caller still holds a view; the map closes when that view is collected
        self._file.close()
        self._closed = True
        self._lookup[0] = str(self._closed_error())   # every bound look-up now raises it

    def __enter__(self) -> IndexFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        h = self._h
        mode = "rw" if self.writable else "r"
        return (f"IndexFile({str(self.path)!r}, mode={mode!r}, hash_slot_num={self.geometry.hash_slot_num}, "
                f"index_num={self.geometry.index_num}, keys={h['index_count'] - 1})")

    # -- queries --------------------------------------------------------------------------

    def select_phy_offsets(self, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """IndexFile.selectPhyOffset: offsets whose stored hash equals `key`'s and whose stored
        time (whole seconds after begin_timestamp) lies in [begin, end] ms, newest first.

        Only hashes are compared: other keys with the same stored hash come back too.
        Cost: O(len(key) + entries walked), at most the chain length; bounded even on corrupt
        files. Hashing the key, checking the arguments and the walk are one C call, no Python
        object an entry; :meth:`trace_query` walks the same way in Python. An open file's
        ``select_phy_offsets`` is that C call bound to the file (no Python frame); a closed
        file's raises ValueError naming the file.
        """
        # The C entry hashes the key as index_hash does and checks the arguments in the order,
        # and with the errors, of index_hash, _clamp_max_num and check_long: done in Python they
        # cost about 1 us a call, as much as half of a walk's reads from a full file.
        return _indexcore.select_key(self._lookup, key, max_num, begin, end)

    def changed_on_disk(self) -> bool:
        """Whether another writer has changed this read-only file's header since it was opened
        (a broker putting keys: each put rewrites index_count and the end fields), so that a
        reopened file would answer differently. False for a writable file, whose header is this
        object's own. Cost: a 40-byte read of the map.

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "f")
        >>> IndexFile.create(path, 4, 8).close()
        >>> with IndexFile.open(path, 4, 8) as seen, IndexFile.open(path, 4, 8, writable=True) as w:
        ...     before = seen.changed_on_disk()
        ...     _ = w.put_key("T#a", 10, 1000)
        ...     (before, seen.changed_on_disk())
        (False, True)
        """
        if self.writable:
            return False
        self._require_open()
        return self._mm[:HEADER.size] != self._opened_header

    def trace_query(self, key: str, max_num: int = 64, begin: int = 0, end: int = LONG_MAX) -> QueryTrace:
        """Like :meth:`select_phy_offsets`, and record every entry read and why the walk stopped.

        >>> import tempfile, os
        >>> with IndexFile.create(os.path.join(tempfile.mkdtemp(), "f"), 4, 8) as f:
        ...     for offset, ms in ((10, 1000), (20, 3000), (30, 5000)):
        ...         _ = f.put_key("T#a", offset, ms)
        ...     t = f.trace_query("T#a", begin=4000)
        >>> t.results, [s.entry for s in t.steps], t.stop    # entry 2 (3000 ms) is older than begin
        ([30], [3, 2], 'older-than-begin')
        """
        self._require_open()
        h = index_hash(key)
        t = QueryTrace(str(self.path), key, h, h % self.geometry.hash_slot_num, 0, max_num, begin, end)
        t.stop = self._walk(h, max_num, begin, end, t.results, t)
        return t

    def _walk(self, key_hash: int, max_num: int, begin: int, end: int,
              results: list[int], trace: QueryTrace | None) -> str:
        g, mm = self.geometry, self._mm
        count = self._h["index_count"]
        begin_ts = self._h["begin_timestamp"]
        slot_value = _SLOT_I32.unpack_from(mm, g.slot_offset(key_hash % g.hash_slot_num))[0]
        if trace is not None:
            trace.slot_value = slot_value
        if slot_value <= 0 or slot_value > count:
            return "empty-slot"
        if count <= 1:
            return "empty-file"
        unpack, entries_offset, limit = ENTRY.struct.unpack_from, g.entries_offset, g.index_num
        entry_size = ENTRY.size
        # A sound chain visits each entry once, so `limit` reads without a new result means a
        # cycle the broker would never leave. A cycle that keeps matching is walked as the broker
        # walks it, until max_num: at most max_num * limit reads.
        reads_since_result = 0
        current = slot_value
        while True:
            if len(results) >= max_num:
                return "max-num"
            if current >= limit:
                return "entry-past-end"
            if reads_since_result >= limit:
                return "cycle"
            stored_hash, phy, time_diff, prev = unpack(mm, entries_offset + entry_size * current)
            reads_since_result += 1
            time_read = begin_ts + time_diff * 1000
            if time_read > LONG_MAX or time_read < LONG_MIN:
                time_read = wrap_long(time_read)
            hash_match = stored_hash == key_hash
            time_match = time_diff >= 0 and begin <= time_read <= end
            returned = hash_match and time_match
            if trace is not None:
                trace.steps.append(TraceStep(current, stored_hash, phy, time_diff, time_read, prev,
                                             hash_match, time_match, returned))
            if time_diff < 0:
                return "negative-time-diff"
            if returned:
                results.append(phy)
                reads_since_result = 0
            if prev <= 0:
                return "end-of-chain"
            if prev > count:
                return "prev-out-of-range"
            if prev == current:
                return "self-loop"
            if time_read < begin:
                return "older-than-begin"
            current = prev

    def select_phy_offsets_many(self, keys: Any, max_num: int = 64, begin: int = 0,
                                end: int = LONG_MAX, *, hashes: np.ndarray | None = None,
                                rooms: Any = None, threads: int | None = None) -> BatchResult:
        """:meth:`select_phy_offsets` for many keys at once, in C. Cost: O(total entries walked),
        spread over `threads` threads (the walks run without the GIL; None: the usable cores
        from :data:`THREADED_LOOKUPS` keys on, else 1), each walking a contiguous share of the
        keys; the answer is the same with any number.

        Returns a :class:`BatchResult` (CSR arrays); ``result[i]`` is the list for key i.
        `rooms`, one int per key, replaces `max_num` key by key: the room left in a result list
        that other files filled in part (queryOffset hands each file the shared list).
        """
        if hashes is None:
            hashes = index_hash_many(keys)
        hashes = np.ascontiguousarray(hashes, dtype=np.int32)
        if rooms is not None:
            rooms = np.ascontiguousarray([_clamp_max_num(r) for r in rooms] if not isinstance(rooms, np.ndarray)
                                         else np.clip(rooms, -1, INT_MAX), dtype=np.int32)
            if len(rooms) != len(hashes):
                raise ValueError(f"{len(rooms)} rooms for {len(hashes)} keys")
        self._require_open()
        max_num, begin, end = _clamp_max_num(max_num), check_long("begin", begin), check_long("end", end)
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")

        def walk(lo: int, hi: int) -> tuple[Any, Any, Any]:
            return _indexcore.select_many(self._mm, self.geometry.hash_slot_num, self.geometry.index_num,
                                          self._h["index_count"], self._h["begin_timestamp"], hashes[lo:hi],
                                          max_num, begin, end, None if rooms is None else rooms[lo:hi])

        n = len(hashes)
        threads = max(1, min(_lookup_threads(n) if threads is None else threads, n))
        bounds = [n * k // threads for k in range(threads + 1)]
        if threads == 1:
            parts = [walk(0, n)]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(threads, thread_name_prefix="rmqlab-lookup") as ex:
                parts = list(ex.map(walk, bounds[:-1], bounds[1:]))
        # each share's CSR starts count from its own offsets: move them past the shares before
        base = np.cumsum([0] + [len(o) // 8 for _, o, _ in parts])
        joined = np.concatenate([np.frombuffer(st, np.int64)[:-1] + base[k] for k, (st, _, _) in enumerate(parts)]
                                + [np.array([base[-1]], np.int64)])
        return BatchResult(joined, np.frombuffer(b"".join(o for _, o, _ in parts), np.int64),
                           np.frombuffer(b"".join(r for _, _, r in parts), np.int32))

    # -- invariants -----------------------------------------------------------------------

    def invariants(self) -> Invariants:
        """The counts behind :meth:`problems` and verify's index checks, in one pass in C
        (``_indexcore.check_file``) over the slots and the written entries: see
        :class:`Invariants`. Cost: O(file), one read of each slot and entry; memory a byte an
        entry and 4 bytes a slot. :meth:`_invariants_numpy` is its vectorised twin."""
        g = self.geometry
        count = min(self._h["index_count"], g.index_num)
        found = _indexcore.check_file(self._mm, g.hash_slot_num, g.index_num, max(count, 0))
        return Invariants(found[0], found[1], *(Flagged(*f) for f in found[2:]))

    def _invariants_numpy(self) -> Invariants:
        """:meth:`invariants` vectorised with NumPy, CHECK_CHUNK slots or entries at a time
        (the model the tests hold the C pass to). Cost: O(file); memory two flags an entry."""
        g = self.geometry
        count = min(self._h["index_count"], g.index_num)
        e = self.used_entries
        key_hash = e["key_hash"]

        def slot_of(hashes: np.ndarray) -> np.ndarray:
            hashes = hashes.astype(np.int64)
            return np.where(hashes >= 0, hashes % g.hash_slot_num, -1)

        # each written entry must be referenced exactly once: by a slot (chain head) or a prev
        once, twice = np.zeros(max(count, 1), bool), np.zeros(max(count, 1), bool)

        def refer(refs: np.ndarray) -> None:
            targets, times = distinct_counts(refs)
            twice[targets[times > 1]] = True
            twice[targets] |= once[targets]
            once[targets] = True

        out_of_range, wrong_head, occupied = FirstFlagged(), FirstFlagged(), 0
        for lo in range(0, g.hash_slot_num, CHECK_CHUNK):
            values = self.slots[lo:lo + CHECK_CHUNK].astype(np.int64)
            out_of_range.add((values < 0) | (values >= count), lo)
            occupied += int(np.count_nonzero(values))
            heads = np.flatnonzero((values > 0) & (values < count))
            refer(values[heads])
            wrong = np.zeros(len(values), bool)
            wrong[heads] = slot_of(key_hash[values[heads] - 1]) != lo + heads
            wrong_head.add(wrong, lo)
        checks = {name: FirstFlagged() for name in ("key_hash", "time_diff", "prev", "prev_slot", "time_order")}
        chains = np.zeros(g.hash_slot_num, np.int64)
        time_diff = e["time_diff"]

        def effective(numbers: np.ndarray) -> np.ndarray:   # entry 1's time_diff is from a seed: 0
            td = time_diff[numbers - 1].astype(np.int64)
            td[numbers == 1] = 0
            return td

        for lo in range(0, len(e), CHECK_CHUNK):
            chunk = e[lo:lo + CHECK_CHUNK]
            numbers = np.arange(lo + 1, lo + 1 + len(chunk), dtype=np.int64)
            hashes = chunk["key_hash"].astype(np.int64)
            prev = chunk["prev_index"].astype(np.int64)
            checks["key_hash"].add(hashes < 0, lo)
            chains += np.bincount(hashes[hashes >= 0] % g.hash_slot_num, minlength=g.hash_slot_num)
            checks["time_diff"].add(chunk["time_diff"] < 0, lo)
            checks["prev"].add((prev < 0) | (prev >= numbers), lo)
            linked = (prev > 0) & (prev < numbers)
            wrong_slot = np.zeros(len(prev), dtype=bool)
            wrong_slot[linked] = slot_of(key_hash[prev[linked] - 1]) != slot_of(hashes[linked])
            checks["prev_slot"].add(wrong_slot, lo)
            older = np.zeros(len(prev), dtype=bool)
            older[linked] = effective(prev[linked]) > effective(numbers[linked])
            checks["time_order"].add(older, lo)
            refer(prev[linked])
        flags = [FirstFlagged.of(twice[1:count]), FirstFlagged.of(~once[1:count])]
        return Invariants(occupied, int(chains.max()) if len(chains) else 0,
                          *(Flagged(f.first, f.count) for f in (
                              out_of_range, wrong_head, checks["key_hash"], checks["time_diff"], checks["prev"],
                              checks["prev_slot"], *flags, checks["time_order"])))

    def problems(self, invariants: Invariants | None = None) -> list[CorruptIndexError]:
        """Every invariant violation found (empty for a healthy file), from :meth:`invariants`
        (pass them when they are at hand). Cost: O(file), one pass in C.

        Checks: the header against the geometry; every slot and prev_index in range; each
        prev_index older than its entry (so no cycles); every chain's entries hashed to its slot;
        every written entry on exactly one chain; non-negative hashes and time diffs; and
        hash_slot_count against the slot-count rule.
        """
        out = list(self._header_problems())
        g, p = self.geometry, str(self.path)
        count = min(self._h["index_count"], g.index_num)
        inv = self.invariants() if invariants is None else invariants

        def report(found: Flagged, what: str, field_name: str, offset_of) -> None:
            if found.total:
                i = found.first
                out.append(CorruptIndexError(f"{what} ({found.total} such)", path=p, offset=int(offset_of(i)),
                                             field=field_name.format(i=i)))

        def slot_offset(i):
            return g.slots_offset + SLOT.size * i

        def entry_offset(i):           # element i of used_entries is entry number i + 1
            return g.entries_offset + ENTRY.size * (i + 1)

        prev_field = ENTRY.offset("prev_index")
        report(inv.slot_out_of_range, f"slot value outside 0..{count - 1}", "slot[{i}]", slot_offset)
        report(inv.negative_hash, "negative key_hash", "entry.key_hash", entry_offset)
        report(inv.negative_time, "negative time_diff", "entry.time_diff",
               lambda i: entry_offset(i) + ENTRY.offset("time_diff"))
        report(inv.bad_prev, "prev_index not older than its entry (out of range, self-loop or cycle)",
               "entry.prev_index", lambda i: entry_offset(i) + prev_field)
        report(inv.prev_slot, "prev_index links entries of different slots", "entry.prev_index",
               lambda i: entry_offset(i) + prev_field)
        report(inv.wrong_head, "slot points at an entry hashed to another slot", "slot", slot_offset)
        report(inv.twice, "entry referenced by more than one slot/prev_index", "entry", entry_offset)
        report(inv.unreached, "entry not reachable from any slot", "entry", entry_offset)
        want = inv.occupied if self.slot_count_rule == NEW_SLOT else count - 1
        if not (inv.bad_prev.total or self._h["hash_slot_count"] == want):
            rule = ">= 4.7.1: occupied slots" if self.slot_count_rule == NEW_SLOT else "<= 4.7.0: puts"
            out.append(CorruptIndexError(
                f"hash_slot_count {self._h['hash_slot_count']} but the slot-count rule ({rule}) gives {want}",
                path=p, offset=HEADER.offset("hash_slot_count"), field="header.hash_slot_count"))
        return out

    def check(self) -> None:
        """Raise the first invariant violation as :class:`CorruptIndexError`; see :meth:`problems`."""
        problems = self.problems()
        if problems:
            raise problems[0]

    def chain(self, slot: int) -> Iterator[int]:
        """Entry numbers of `slot`'s chain, newest first. Bounded by the entries the file holds
        (min(index_count, index_num)): a corrupt chain with a cycle repeats entries up to that
        many, never more, even when a strict=False header claims a huge index_count."""
        count = self._h["index_count"]
        current = int(self.slots[slot])
        for _ in range(min(count, self.geometry.index_num)):
            if current <= 0 or current >= min(count, self.geometry.index_num):
                return
            yield current
            nxt = int(self.entries[current]["prev_index"])
            if nxt == current:
                return
            current = nxt


#: Entries :meth:`IndexFile.problems` (and verify's own index checks) read at a time.
CHECK_CHUNK = 1 << 20


#: keys from which :meth:`IndexFile.select_phy_offsets_many` walks on every usable core by
#: default: below it starting the threads costs more than a share of the walks saves
THREADED_LOOKUPS = 1 << 16


def _lookup_threads(keys: int) -> int:
    """The default threads of a batch look-up of `keys` keys (:data:`THREADED_LOOKUPS`)."""
    return _threads_from(keys, THREADED_LOOKUPS)


def _threads_from(keys: int, threaded_keys: int) -> int:
    """Every usable core for `threaded_keys` keys or more, else one thread."""
    if keys < threaded_keys:
        return 1
    from rmqlab.tables.pool import usable_cores

    return usable_cores()


#: keys from which :meth:`IndexFile.put_keys` puts on every usable core by default: below it the
#: threads' start and their second pass over the hashes cost more than they save
THREADED_PUT_KEYS = 1 << 19


def _clamp_max_num(max_num: Any) -> int:
    """int(max_num) as a Java int would compare it: any value <= 0 returns nothing (negatives
    become -1), and no list can reach 2^31 entries, so larger values behave as INT_MAX.
    The rule lives in C (``rmqlab._indexcore``), where select_phy_offsets applies it too."""
    return _indexcore.clamp_max_num(max_num)


def _head(keys: Any, n: int):
    """The first n keys of a list, NumPy array or Arrow array."""
    return keys[:n] if not hasattr(keys, "slice") else keys.slice(0, n)


def build_index_file(path: str | os.PathLike, keys: Any, phy_offsets: Any, store_timestamps: Any, *,
                     hash_slot_num: int = DEFAULT_HASH_SLOT_NUM, index_num: int = DEFAULT_INDEX_NUM,
                     end_phy_offset: int = 0, end_timestamp: int = 0,
                     slot_count_rule: SlotCountRule = NEW_SLOT, hashes: np.ndarray | None = None,
                     fsync: bool = False, threads: int | None = None) -> int:
    """Write a whole index file in one call: the same bytes as create + put_key in order + close.

    Keys beyond the capacity (``index_num - 1``) are not written. The file appears atomically:
    it is written under a temporary name in the same folder, then renamed over `path`, so a
    reader sees either no file or the whole file. With `fsync` the bytes are also forced to disk
    before the rename, so the file survives a power loss too (one more write-back of the whole
    file). Returns the number of keys written.
    Cost: O(n) in C, in three parts: hashing (on several threads for large inputs), the put
    loop, bound by its random slot-table reads, and the kernel's copy into the page cache; the
    put loop of a large input on `threads` threads (:meth:`IndexFile.put_keys`).
    Memory: the hashes and the slot table (4 bytes a key and 4 a slot) over the inputs, and 4
    bytes a key more on several threads, as the file's pages are written with pwrite and never
    mapped into the process (no page fault a page written). Measured builds:
    benchmarks/RESULTS.md.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> build_index_file(os.path.join(d, "f"), ["T#a", "T#b"], [100, 200], [1000, 2000],
    ...                  hash_slot_num=8, index_num=16)
    2
    """
    path = Path(path)
    # A unique hidden name in the same folder, so the rename stays on one file system.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        f = IndexFile.create(tmp, hash_slot_num, index_num, end_phy_offset, end_timestamp,
                             slot_count_rule=slot_count_rule)
        try:
            written = f.put_keys(keys, phy_offsets, store_timestamps, hashes=hashes, threads=threads)
        finally:
            f.close(sync=fsync)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return written
