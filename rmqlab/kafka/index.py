"""Kafka's per-segment sparse indexes: the offset index (``.index``) and the time index (``.timeindex``).

Mirrors ``org.apache.kafka.storage.internals.log.AbstractIndex``, ``OffsetIndex`` and
``TimeIndex`` (storage module, read on apache/kafka trunk, 4.x), the file-name rules of
``LogFileUtils``, the roll step of ``LogSegment.onBecomeInactiveSegment`` and the zero-tail rule
of the ``DumpLogSegments`` tool. Older behaviour comes from the Scala originals
``kafka.log.AbstractIndex`` / ``OffsetIndex`` / ``TimeIndex`` (read in 0.11.0, 1.0.2 and 2.0.0)
where noted.

A segment with base offset B is the files ``<B as 20 digits>.log``, ``.index``, ``.timeindex``
(and ``.txnindex``). Both indexes are arrays of fixed-size big-endian entries: no header, no
checksum, no padding::

    .index       relative_offset i32, position i32           8 bytes   OFFSET_ENTRY below
    .timeindex   timestamp i64, relative_offset i32          12 bytes  TIME_ENTRY below

An absolute offset is ``B + relative_offset``. Entries are sparse: the broker appends one when
more than ``index.interval.bytes`` (4096) of records were written since the last one.

Facts settled from the Java source (not guesses):

* **Entry count.** ``AbstractIndex``'s constructor maps the whole file and, for a file that
  already exists, sets the position to ``length`` rounded down to a whole entry; the entry count
  is ``position / entrySize``. So Kafka counts *every whole entry in the file*, with no look at
  the bytes. A new file is preallocated (``setLength(roundDownToExactMultiple(maxIndexSize,
  entrySize))``, zero-filled) and starts at 0 entries. ``close()`` and
  ``LogSegment.onBecomeInactiveSegment`` (roll) call ``trimToValidSize()``, which truncates the
  file to ``entries * entrySize``; the active segment's trimmed indexes are resized back to
  ``segment.index.bytes`` on load, keeping the position.
* **Untrimmed files.** A broker that crashed, or a copy taken while it ran, leaves the active
  segment's indexes at their preallocated size: real entries then a zero-filled tail. Opened
  the broker's way (``count="broker"``, the default here) the tail counts as entries of
  relative offset 0 (and position 0 / timestamp 0). ``OffsetIndex.sanityCheck`` still passes
  (last offset = base offset is not *below* it) while ``TimeIndex.sanityCheck`` fails (last
  timestamp 0 < first timestamp); the broker never serves lookups from such a file, because
  after an unclean shutdown it recovers every segment past the recovery point
  (``LogSegment.recover`` resets and rebuilds the indexes). ``DumpLogSegments`` instead stops at
  the first entry after entry 0 whose offset equals the base offset; ``count="dump"`` applies
  that rule and so sees only the written entries.
* **Sanity checks** (run by the broker when it loads a segment; failing ones are deleted and
  rebuilt). OffsetIndex: last offset >= base offset (0.10-1.0 demanded last offset *>* base
  offset: ``legacy=True``), then file length a multiple of 8. TimeIndex: last timestamp >= first
  timestamp, last offset >= base offset, then length a multiple of 12. Here they raise
  :class:`~rmqlab.errors.CorruptIndexError`.
* **Lookup.** ``indexSlotRangeFor``: empty -> none; if the entry ``firstHotEntry = max(0,
  entries - 1 - warmEntries)`` is *below* the target, binary-search the warm section
  ``[firstHotEntry, entries - 1]`` (``warmEntries = 8192 / entrySize``: 1024 offset entries, 682
  time entries: the last 8 KiB, whose pages every in-sync lookup keeps in the page cache);
  otherwise if entry 0 is above the target -> none; else binary-search ``[0, firstHotEntry]``.
  The search takes ``mid = (lo + hi + 1) >>> 1`` and returns at once on equality. Offset lookup
  of nothing gives ``(baseOffset, 0)``, time lookup ``(-1, baseOffset)`` (``NO_TIMESTAMP``).
  Before the warm section (0.11 and earlier) the search checked entry 0 then searched the whole
  index: ``algorithm="classic"``. Both find the same entry in a sorted index.
* **Appends.** ``OffsetIndex.append``: full (``entries >= maxEntries``) -> error; the offset must
  be larger than the last one (any offset when empty), else ``InvalidOffsetException``; the
  relative offset must fit 0..2^31-1 (``IndexOffsetOverflowException``).
  ``TimeIndex.maybeAppend(ts, offset, skipFullCheck)``: full means ``entries >= maxEntries - 1``
  (the last slot is kept for the roll entry, which passes ``skipFullCheck``); when not empty an
  offset below the last one or a timestamp below the last one is an error; the entry is written
  only if the timestamp is larger than the last one (-1 when empty), so equal timestamps are
  skipped silently.

Entry points, in the npTDMS manner:

* :meth:`OffsetIndex.open` / :meth:`TimeIndex.open` map a file read-only (lazy: nothing is read
  until asked); ``.entries`` is a structured NumPy view over the map.
* :func:`read_offset_index` / :func:`read_time_index` load the entries eagerly as absolute values.
* :func:`entry_count` reads only the file size.
* :class:`OffsetIndexWriter` / :class:`TimeIndexWriter` append as the broker does into a
  preallocated temporary file, trimmed and renamed into place on close;
  :func:`build_offset_index` / :func:`build_time_index` do it in one call.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> path = os.path.join(d, segment_file_name(100, ".index"))
>>> build_offset_index(path, [(105, 4130), (112, 8290)])
2
>>> with OffsetIndex.open(path) as idx:
...     idx.entry_count, idx.lookup(110), idx.lookup(99)
(2, OffsetPosition(offset=105, position=4130), OffsetPosition(offset=100, position=0))
"""
from __future__ import annotations

import mmap
import os
import secrets
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from rmqlab.errors import CorruptIndexError, FormatError, RmqlabError
from rmqlab.formats.layout import Layout
from rmqlab.jvm.longs import as_longs, check_long, wrap_long

__all__ = [
    "OFFSET_ENTRY",
    "TIME_ENTRY",
    "INDEX_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "LOG_SUFFIX",
    "DEFAULT_MAX_INDEX_SIZE",
    "NO_TIMESTAMP",
    "WARM_SECTION_BYTES",
    "OFFSET_POSITION_DTYPE",
    "TIMESTAMP_OFFSET_DTYPE",
    "OffsetPosition",
    "TimestampOffset",
    "IndexAppendError",
    "InvalidOffsetError",
    "IndexOffsetOverflowError",
    "TimestampOrderError",
    "IndexFullError",
    "PAGE_SIZE",
    "SECTIONS",
    "ProbeStep",
    "LookupTrace",
    "segment_file_name",
    "base_offset_of",
    "round_down_to_entries",
    "OffsetIndex",
    "TimeIndex",
    "read_offset_index",
    "read_time_index",
    "entry_count",
    "OffsetIndexWriter",
    "TimeIndexWriter",
    "build_offset_index",
    "build_time_index",
]

# OffsetIndex.java: ENTRY_SIZE = 8
OFFSET_ENTRY = Layout("OffsetIndexEntry", [
    ("relative_offset", "i", "offset - base offset; the last offset of the batch (or appended batches) indexed"),
    ("position", "i", "byte position in the .log file of the batch holding that offset"),
])

# TimeIndex.java: ENTRY_SIZE = 12
TIME_ENTRY = Layout("TimeIndexEntry", [
    ("timestamp", "q", "largest record timestamp (ms) in the segment up to this entry's offset"),
    ("relative_offset", "i", "offset of the record holding that timestamp, minus the base offset "
                             "(the batch's last offset from 3.8 and in recovered indexes)"),
])

INDEX_SUFFIX = ".index"            # LogFileUtils.INDEX_FILE_SUFFIX
TIME_INDEX_SUFFIX = ".timeindex"   # LogFileUtils.TIME_INDEX_FILE_SUFFIX
LOG_SUFFIX = ".log"                # LogFileUtils.LOG_FILE_SUFFIX
#: segment.index.bytes default (LogConfig): 10 MiB.
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
#: RecordBatch.NO_TIMESTAMP: what a time lookup below the first entry returns.
NO_TIMESTAMP = -1
#: AbstractIndex.warmEntries() = 8192 / entrySize.
WARM_SECTION_BYTES = 8192
#: Page size used to count pages touched by a lookup (the smallest page size Kafka assumes).
PAGE_SIZE = 4096

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

#: Eager reads return absolute values in native byte order.
OFFSET_POSITION_DTYPE = np.dtype([("offset", np.int64), ("position", np.int32)])
TIMESTAMP_OFFSET_DTYPE = np.dtype([("timestamp", np.int64), ("offset", np.int64)])

CountRule = Literal["broker", "dump"]
Algorithm = Literal["warm", "classic"]

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# One field of entry `slot` is read at slot * size + its offset (the binary search reads one).
_OFFSET_ENTRY_SIZE = OFFSET_ENTRY.size
_OFFSET_ENTRY_POSITION_AT = OFFSET_ENTRY.offset("position")
_TIME_ENTRY_SIZE = TIME_ENTRY.size
_TIME_ENTRY_RELATIVE_OFFSET_AT = TIME_ENTRY.offset("relative_offset")


class OffsetPosition(NamedTuple):
    """OffsetPosition.java: an absolute offset and a byte position in the segment's .log."""

    offset: int
    position: int


class TimestampOffset(NamedTuple):
    """TimestampOffset.java: a timestamp (ms) and an absolute offset."""

    timestamp: int
    offset: int


# ------------------------------------------------------------------------------ errors


class IndexAppendError(RmqlabError, ValueError):
    """An append the broker would refuse. Names the file being written, the byte offset the
    entry would have gone to, and the field."""


class InvalidOffsetError(IndexAppendError):
    """InvalidOffsetException: the offset is not larger than the last one (offset index) or is
    below the last one (time index)."""


class IndexOffsetOverflowError(InvalidOffsetError):
    """IndexOffsetOverflowException: offset - base offset does not fit 0..2^31-1."""


class TimestampOrderError(IndexAppendError):
    """TimeIndex.maybeAppend's IllegalStateException: a timestamp below the last one."""


class IndexFullError(IndexAppendError):
    """The index has no free slot (IllegalArgumentException "Attempt to append to a full index")."""


# ------------------------------------------------------------------------------ names


def _wrap32(x: int) -> int:
    return ((x + 2**31) % 2**32) - 2**31


def _check_long(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return check_long(name, value)


def _check_int(name: str, value: Any) -> int:
    value = _check_long(name, value)
    if not INT_MIN <= value <= INT_MAX:
        raise ValueError(f"{name}={value} does not fit in a Java int (signed 32-bit)")
    return value


def _as_int64(name: str, values: Any) -> np.ndarray:
    """`values` (a scalar or a 1-D sequence) as a contiguous int64 array, refusing what a Java long
    cannot hold (:func:`rmqlab.jvm.longs.as_longs`)."""
    try:
        arr = np.asarray(values)
    except OverflowError:
        raise ValueError(f"{name}: a value does not fit in a Java long (signed 64-bit)") from None
    return as_longs(name, arr.reshape(1) if arr.ndim == 0 else arr)


def segment_file_name(base_offset: int, suffix: str) -> str:
    """LogFileUtils.filenamePrefixFromOffset + suffix: the base offset as 20 zero-padded digits.

    `suffix` may be given with or without its dot. Cost: O(1).

    >>> segment_file_name(78, ".index"), segment_file_name(0, "timeindex")
    ('00000000000000000078.index', '00000000000000000000.timeindex')
    """
    base_offset = _check_long("base_offset", base_offset)
    if base_offset < 0:
        raise ValueError(f"base_offset must be >= 0, got {base_offset}")
    if not suffix.startswith("."):
        suffix = "." + suffix
    return f"{base_offset:020d}{suffix}"


#: LogFileUtils.isIndexFile: the files of a segment that index its ``.log`` (offset, time and
#: transaction indexes)
SEGMENT_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, ".txnindex")


def orphaned_index_note(path: str | os.PathLike) -> str | None:
    """When `path` is a segment index file with no ``.log`` of its base offset beside it: what
    the broker does with it, else None. Kafka deletes such a file when it loads the log
    (``LogLoader.loadSegmentFiles``, 3.x/4.x; ``Log.loadSegmentFiles`` in 2.x: "Found an
    orphaned index file ..., with no corresponding log file.", then ``Files.deleteIfExists``),
    so it is a leftover (of a segment deleted by retention or a crash between the deletes of
    one segment's files), not damage: it is not read.

    Cost: one ``stat``.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "00000000000000000042.timeindex").write_bytes(b"")
    >>> orphaned_index_note(d / "00000000000000000042.timeindex")[:60]
    'orphaned index file (no 00000000000000000042.log beside it):'
    """
    p = Path(path)
    if not p.name.endswith(SEGMENT_INDEX_SUFFIXES):
        return None
    log = p.with_name(p.name.split(".")[0] + LOG_SUFFIX)
    if log.exists():
        return None
    return (f"orphaned index file (no {log.name} beside it): the broker deletes it when it loads the log "
            f"(LogLoader.loadSegmentFiles: \"Found an orphaned index file\"); not read")


def base_offset_of(path: str | os.PathLike) -> int:
    """LogFileUtils.offsetFromFileName: the number before the first dot of the file's name.

    Cost: O(1), no I/O.

    >>> base_offset_of("/data/t-0/00000000000000000078.timeindex")
    78

    Raises :class:`~rmqlab.errors.FormatError` (field "file name") when that part is not a
    plain non-negative decimal that fits a Java long.
    """
    name = os.path.basename(os.fspath(path))
    stem, dot, _ = name.partition(".")
    if not dot or not stem or not stem.isascii() or not stem.isdigit():
        raise FormatError(f"file name {name!r} is not <base offset digits>.<suffix> (e.g. "
                          f"00000000000000000000.index); pass base_offset=", path=path, field="file name")
    value = int(stem)
    if value > LONG_MAX:
        raise FormatError(f"base offset {stem} in the file name does not fit in a Java long",
                          path=path, field="file name")
    return value


def _round_down(number: int, factor: int) -> int:
    """AbstractIndex.roundDownToExactMultiple (for non-negative numbers)."""
    return factor * (number // factor)


def round_down_to_entries(max_index_size: int, entry_size: int) -> int:
    """AbstractIndex.roundDownToExactMultiple: the size a new index is preallocated to.

    >>> round_down_to_entries(DEFAULT_MAX_INDEX_SIZE, 8), round_down_to_entries(DEFAULT_MAX_INDEX_SIZE, 12)
    (10485760, 10485756)
    """
    max_index_size = _check_int("max_index_size", max_index_size)
    if max_index_size < entry_size:
        raise ValueError(f"Invalid max index size: {max_index_size} (less than one {entry_size}-byte entry)")
    return _round_down(max_index_size, entry_size)


def _kind_of(path: str | os.PathLike) -> type[_SparseIndex]:
    name = os.path.basename(os.fspath(path))
    if name.endswith(TIME_INDEX_SUFFIX):
        return TimeIndex
    if name.endswith(INDEX_SUFFIX):
        return OffsetIndex
    raise FormatError("cannot tell the index kind from the name (expected a .index or .timeindex "
                      "file); use OffsetIndex.open / TimeIndex.open", path=path, field="file name")


# ------------------------------------------------------------------------------ trace


@dataclass(frozen=True)
class ProbeStep:
    """One entry a lookup read."""

    phase: str        # "warm-check", "first-check", "search" or "result"
    slot: int         # entry number
    key: int          # what was compared: absolute offset, timestamp or position
    compare: int      # Long.compare(key, target): -1, 0 or 1 (0 for the "result" read)
    byte_offset: int  # where the entry starts in the file
    size: int         # entry size in bytes

    @property
    def pages(self) -> range:
        """The 4 KiB pages the entry's bytes lie on (a 12-byte entry can straddle two)."""
        return range(self.byte_offset // PAGE_SIZE, (self.byte_offset + self.size - 1) // PAGE_SIZE + 1)


#: How a lookup ended (LookupTrace.section).
SECTIONS = {
    "empty": "the index has no entries: the 'nothing found' answer without reading anything",
    "warm": "the target is above the first warm entry: searched the warm section only",
    "cold": "the target is at or below the first warm entry: searched from entry 0",
    "below-first": "entry 0 is above the target: nothing found (smallest-upper-bound: entry 0)",
    "whole": "classic search (0.11 and earlier): searched the whole index after checking entry 0",
}


@dataclass
class LookupTrace:
    """Every entry one lookup read, in order, and what it answered (see :attr:`SECTIONS`)."""

    path: str
    target: int
    algorithm: str
    entry_count: int
    warm_entries: int
    first_hot_entry: int | None
    section: str = ""
    slot: int = -1
    result: OffsetPosition | TimestampOffset | None = None   # None until the lookup ran
    steps: list[ProbeStep] = field(default_factory=list)

    @property
    def entries_read(self) -> int:
        """Entries read, the final read of the answer included (Kafka reads it again)."""
        return len(self.steps)

    @property
    def pages_touched(self) -> list[int]:
        """Distinct 4 KiB pages of the file the lookup read, in increasing order."""
        return sorted({p for s in self.steps for p in s.pages})


# ------------------------------------------------------------------------------ reading

_KEY, _VALUE = "key", "value"
_LOWER, _UPPER = "lower", "upper"


class _SparseIndex:
    """Common part of OffsetIndex and TimeIndex (AbstractIndex): map, count, search, checks."""

    LAYOUT: Layout
    KIND: str
    SUFFIX: str
    JAVA: str
    RESULT: type

    def __init__(self, path: Path, base_offset: int, fileobj, buf, length: int, count: CountRule):
        if count not in ("broker", "dump"):
            raise ValueError(f"count must be 'broker' or 'dump', got {count!r}")
        self.path = path
        self.base_offset = base_offset
        self._file = fileobj
        self._buf = buf
        self._closed = False
        #: File length in bytes.
        self.length = length
        self.count_rule = count
        size = self.LAYOUT.size
        #: AbstractIndex.maxEntries for this mapping: whole entries that fit the file.
        self.max_entries = length // size
        all_entries = (np.frombuffer(buf, dtype=self.LAYOUT.dtype, count=self.max_entries)
                       if self.max_entries else np.zeros(0, dtype=self.LAYOUT.dtype))
        rel = all_entries["relative_offset"]
        zeros = np.flatnonzero(rel[1:] == 0)
        #: Entries before the zero-filled tail (DumpLogSegments' rule), whatever the count rule.
        self.written_entry_count = int(zeros[0]) + 1 if len(zeros) else self.max_entries
        #: Entries in use: every whole entry ("broker", as AbstractIndex) or the written ones ("dump").
        self.entry_count = self.max_entries if count == "broker" else self.written_entry_count
        self._all = all_entries
        #: The entries in use as a structured big-endian view of the map (no copy).
        self.entries = all_entries[:self.entry_count]
        #: Entries read by scalar lookups so far (a running cost counter for notebooks).
        self.entries_read = 0
        self._keys_cache: np.ndarray | None = None

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike, base_offset: int | None = None, *,
             count: CountRule = "broker", strict: bool = True):
        """Map an index file read-only. Cost: O(1) for "broker" (a memory map), plus one
        vectorized pass over the relative offsets to find the zero tail.

        `base_offset` defaults to the number in the file name (:func:`base_offset_of`). With
        `strict` (the default) the broker's sanity check runs (:meth:`sanity_check`) and a
        failure raises :class:`~rmqlab.errors.CorruptIndexError`. `count` picks the entry count:
        "broker" (every whole entry, as AbstractIndex) or "dump" (stop at the zero-filled tail of
        an untrimmed file, as DumpLogSegments).
        """
        path = Path(path)
        base = base_offset_of(path) if base_offset is None else _check_long("base_offset", base_offset)
        if base < 0:
            raise ValueError(f"base_offset must be >= 0, got {base}")
        fh = open(path, "rb")
        try:
            length = os.fstat(fh.fileno()).st_size
            buf = mmap.mmap(fh.fileno(), length, access=mmap.ACCESS_READ) if length else b""
        except BaseException:
            fh.close()
            raise
        idx = cls(path, base, fh, buf, length, count)
        if strict:
            try:
                idx.sanity_check()
            except BaseException:
                idx.close()
                raise
        return idx

    def close(self) -> None:
        """Unmap. NumPy views handed out keep the map alive until they are collected."""
        if self._closed:
            return
        # drop the views of the map so that it can close; every read checks _require_open first
        self._all = self.entries = None  # type: ignore[assignment]
        self._keys_cache = None
        if isinstance(self._buf, mmap.mmap):
            try:
                self._buf.close()
            except BufferError:
                pass  # a caller still holds a view; the map closes when it is collected
        self._file.close()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return self.entry_count

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({str(self.path)!r}, base_offset={self.base_offset}, "
                f"entries={self.entry_count}, length={self.length})")

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.path}: index is closed")

    # -- geometry ---------------------------------------------------------------------------

    @property
    def entry_size(self) -> int:
        return self.LAYOUT.size

    @property
    def warm_entries(self) -> int:
        """AbstractIndex.warmEntries(): 8192 / entry size (1024 offset, 682 time entries)."""
        return WARM_SECTION_BYTES // self.LAYOUT.size

    @property
    def size_in_bytes(self) -> int:
        """AbstractIndex.sizeInBytes(): bytes used by the entries (the size after a trim)."""
        return self.entry_count * self.LAYOUT.size

    @property
    def untrimmed(self) -> bool:
        """True when the file ends in a zero-filled tail (an active or crashed segment's index)."""
        return self.written_entry_count < self.max_entries

    # -- entries ----------------------------------------------------------------------------

    @property
    def relative_offsets(self) -> np.ndarray:
        return self.entries["relative_offset"]

    def _abs_offsets(self) -> np.ndarray:
        # base + relative, wrapping like Java's long addition (NumPy int64 arrays wrap silently)
        return np.int64(self.base_offset) + self.entries["relative_offset"].astype(np.int64)

    def entry(self, n: int):
        """Entry `n` with absolute values (OffsetIndex.entry / TimeIndex.entry). Cost: O(1)."""
        self._require_open()
        n = int(n)
        if not 0 <= n < self.entry_count:
            raise IndexError(f"attempt to fetch entry {n} from {self.path}, which has {self.entry_count} entries")
        return self._result(n)

    def _entry_problem(self, mask: np.ndarray, what: str, field_name: str,
                       out: list, start: int = 0) -> int | None:
        bad = np.flatnonzero(mask)
        if not len(bad):
            return None
        i = int(bad[0]) + start
        tail = ""
        if i > 0 and i >= self.written_entry_count and self.untrimmed:
            tail = (f"; entries {self.written_entry_count}.. are the zero-filled tail of an untrimmed "
                    f"(preallocated) file, which Kafka trims on close: open with count='dump' to stop there")
        out.append(CorruptIndexError(f"{what} ({len(bad)} such){tail}", path=str(self.path),
                                     offset=i * self.LAYOUT.size + self.LAYOUT.offset(field_name),
                                     field=f"entry[{i}].{field_name}"))
        return i

    def _length_problem(self) -> CorruptIndexError | None:
        if self.length % self.LAYOUT.size:
            return CorruptIndexError(
                f"found {self.length} bytes which is neither positive nor a multiple of "
                f"{self.LAYOUT.size} ({self.JAVA}.sanityCheck)", path=str(self.path),
                offset=self.length - self.length % self.LAYOUT.size, field="file length")
        return None

    def _sanity_problems(self) -> list[CorruptIndexError]:
        raise NotImplementedError

    def problems(self) -> list[CorruptIndexError]:
        raise NotImplementedError

    def sanity_check(self) -> None:
        """The broker's sanity check (run when it loads a segment): raise the first failure as
        :class:`CorruptIndexError`, in Kafka's order. Cost: O(1), two entries read."""
        self._require_open()
        problems = self._sanity_problems()
        if problems:
            raise problems[0]

    def check(self) -> None:
        """Raise the first invariant violation as :class:`CorruptIndexError`; see :meth:`problems`."""
        problems = self.problems()
        if problems:
            raise problems[0]

    # -- search (AbstractIndex.indexSlotRangeFor) ---------------------------------------------

    def _key_at(self, slot: int) -> int:
        raise NotImplementedError

    def _value_at(self, slot: int) -> int:
        raise NotImplementedError

    def _result(self, slot: int):
        raise NotImplementedError

    def _not_found(self):
        raise NotImplementedError

    def _key_array(self) -> np.ndarray:
        raise NotImplementedError

    def _slot_for(self, target: int, entity: str, result_type: str, algorithm: str,
                  trace: LookupTrace | None) -> int:
        """The slot Kafka's search picks, or -1. Cost: O(log entries) entries read."""
        self._require_open()
        n = self.entry_count
        if algorithm not in ("warm", "classic"):
            raise ValueError(f"algorithm must be 'warm' or 'classic', got {algorithm!r}")
        if n == 0:
            if trace is not None:
                trace.section = "empty"
            return -1
        read = self._key_at if entity == _KEY else self._value_at
        size = self.LAYOUT.size
        steps = trace.steps if trace is not None else None
        reads = 0

        def compare(slot: int, phase: str) -> int:
            nonlocal reads
            reads += 1
            k = read(slot)
            c = (k > target) - (k < target)
            if steps is not None:
                steps.append(ProbeStep(phase, slot, k, c, slot * size, size))
            return c

        def binary_search(lo: int, hi: int) -> int:
            # at most ceil(log2(hi - lo + 1)) + 1 rounds: the range shrinks every round
            while lo < hi:
                mid = (lo + hi + 1) >> 1
                c = compare(mid, "search")
                if c > 0:
                    hi = mid - 1
                elif c < 0:
                    lo = mid
                else:
                    return mid
            if result_type == _LOWER:
                return lo
            return -1 if lo == n - 1 else lo + 1

        try:
            if algorithm == "warm":
                first_hot = max(0, n - 1 - self.warm_entries)
                if trace is not None:
                    trace.first_hot_entry = first_hot
                if compare(first_hot, "warm-check") < 0:
                    if trace is not None:
                        trace.section = "warm"
                    return binary_search(first_hot, n - 1)
                if compare(0, "first-check") > 0:
                    if trace is not None:
                        trace.section = "below-first"
                    return -1 if result_type == _LOWER else 0
                if trace is not None:
                    trace.section = "cold"
                return binary_search(0, first_hot)
            if compare(0, "first-check") > 0:
                if trace is not None:
                    trace.section = "below-first"
                return -1 if result_type == _LOWER else 0
            if trace is not None:
                trace.section = "whole"
            return binary_search(0, n - 1)
        finally:
            self.entries_read += reads

    def _lookup(self, target: int, algorithm: str, trace: LookupTrace | None):
        slot = self._slot_for(target, _KEY, _LOWER, algorithm, trace)
        if slot == -1:
            result = self._not_found()
        else:
            result = self._result(slot)
            self.entries_read += 1
            if trace is not None:
                trace.steps.append(ProbeStep("result", slot, self._key_at(slot), 0,
                                             slot * self.LAYOUT.size, self.LAYOUT.size))
        if trace is not None:
            trace.slot, trace.result = slot, result
        return result

    def trace_lookup(self, target: int, algorithm: Algorithm = "warm") -> LookupTrace:
        """Like :meth:`lookup`, and record every entry read, the section searched and the pages
        touched. ``algorithm="classic"`` replays the pre-warm-section search (0.11 and earlier).
        Cost: O(log entries), a few µs a step."""
        target = _check_long("target", target)
        t = LookupTrace(str(self.path), target, algorithm, self.entry_count, self.warm_entries, None)
        self._lookup(target, algorithm, t)
        return t

    def _sorted_keys(self) -> np.ndarray:
        if self._keys_cache is None:
            self._keys_cache = self._key_array()
        return self._keys_cache

    def _lookup_slots(self, targets: Any) -> tuple[np.ndarray, np.ndarray]:
        self._require_open()
        t = _as_int64("targets", targets)
        slots = np.searchsorted(self._sorted_keys(), t, side="right") - 1
        return t, slots


class OffsetIndex(_SparseIndex):
    """A segment's ``.index``: absolute offset -> byte position in the ``.log`` (OffsetIndex.java).

    Use :meth:`open`. Costs: open O(1) (a memory map); lookup O(log n) entry reads;
    lookup_many O(m log n) vectorized; check O(n) vectorized. Also a context manager.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), segment_file_name(0, INDEX_SUFFIX))
    >>> build_offset_index(p, [(3, 4730), (7, 9571)])
    2
    >>> with OffsetIndex.open(p) as idx:
    ...     idx.lookup(6), idx.lookup_many([2, 7, 100]).offset.tolist()
    (OffsetPosition(offset=3, position=4730), [0, 7, 7])
    """

    LAYOUT = OFFSET_ENTRY
    KIND = "offset index"
    SUFFIX = INDEX_SUFFIX
    JAVA = "OffsetIndex"
    RESULT = OffsetPosition

    def _key_at(self, slot: int) -> int:
        return wrap_long(self.base_offset + _I32.unpack_from(self._buf, slot * _OFFSET_ENTRY_SIZE)[0])

    def _value_at(self, slot: int) -> int:
        return _I32.unpack_from(self._buf, slot * _OFFSET_ENTRY_SIZE + _OFFSET_ENTRY_POSITION_AT)[0]

    def _result(self, slot: int) -> OffsetPosition:
        rel, pos = OFFSET_ENTRY.struct.unpack_from(self._buf, slot * _OFFSET_ENTRY_SIZE)
        return OffsetPosition(wrap_long(self.base_offset + rel), pos)

    def _not_found(self) -> OffsetPosition:
        return OffsetPosition(self.base_offset, 0)

    def _key_array(self) -> np.ndarray:
        return self._abs_offsets()

    @property
    def offsets(self) -> np.ndarray:
        """Absolute offsets of the entries, int64 (a copy)."""
        return self._abs_offsets()

    @property
    def positions(self) -> np.ndarray:
        """Byte positions in the .log, int64 (a copy)."""
        return self.entries["position"].astype(np.int64)

    @property
    def last_entry(self) -> OffsetPosition:
        """OffsetIndex.lastEntry: the last entry, or (base offset, 0) when empty."""
        self._require_open()
        return self._result(self.entry_count - 1) if self.entry_count else self._not_found()

    @property
    def last_offset(self) -> int:
        """OffsetIndex.lastOffset()."""
        return self.last_entry.offset

    @property
    def is_full(self) -> bool:
        """AbstractIndex.isFull: entries >= maxEntries (always true for a trimmed file)."""
        return self.entry_count >= self.max_entries

    def lookup(self, target_offset: int, *, algorithm: Algorithm = "warm") -> OffsetPosition:
        """OffsetIndex.lookup: the entry with the largest offset <= `target_offset`, or
        ``(base_offset, 0)`` when the index is empty or every entry is above the target.
        Cost: O(log n) entry reads (:attr:`entries_read` counts them; :meth:`trace_lookup`
        lists them)."""
        return self._lookup(_check_long("target_offset", target_offset), algorithm, None)

    def lookup_many(self, target_offsets: Any) -> np.ndarray:
        """:meth:`lookup` for many targets at once (np.searchsorted), as a structured array
        (:data:`OFFSET_POSITION_DTYPE`). Equals the scalar lookup whenever the offsets are
        strictly increasing (:meth:`check` passes). Cost: O(n) once (the offsets, cached), then
        O(m log n)."""
        t, slots = self._lookup_slots(target_offsets)
        out = np.empty(len(t), dtype=OFFSET_POSITION_DTYPE).view(np.recarray)
        found = slots >= 0
        safe = np.where(found, slots, 0)
        if self.entry_count:
            out.offset = np.where(found, self._sorted_keys()[safe], self.base_offset)
            out.position = np.where(found, self.entries["position"][safe], 0)
        else:
            out.offset, out.position = self.base_offset, 0
        return out

    def fetch_upper_bound_offset(self, fetch_offset: OffsetPosition | tuple[int, int],
                                 fetch_size: int) -> OffsetPosition | None:
        """OffsetIndex.fetchUpperBoundOffset: an entry whose position is >= ``position +
        fetch_size`` (Java int addition, wraps), or None. Cost: O(log n).

        It is the first such entry except in one case Kafka's search produces: when entry 0's
        position *equals* the target, the binary search never probes slot 0 and answers entry 1
        (None for a one-entry index). Kafka only promises an upper bound, "not generally the
        smallest such offset".
        """
        position = _check_int("position", fetch_offset[1])
        target = _wrap32(position + _check_int("fetch_size", fetch_size))
        slot = self._slot_for(target, _VALUE, _UPPER, "warm", None)
        return None if slot == -1 else self._result(slot)

    def sanity_check(self, *, legacy: bool = False) -> None:
        """OffsetIndex.sanityCheck, as the broker runs it on load: the last offset must not be
        below the base offset, then the length must be a multiple of 8. With `legacy`, the
        0.10-1.0 rule: the last offset must be *above* the base offset. Raises
        :class:`CorruptIndexError`. Cost: O(1)."""
        self._require_open()
        problems = self._sanity_problems(legacy)
        if problems:
            raise problems[0]

    def _sanity_problems(self, legacy: bool = False) -> list[CorruptIndexError]:
        out = []
        if self.entry_count:
            last = self.last_offset
            if (last <= self.base_offset) if legacy else (last < self.base_offset):
                word = "no larger than" if legacy else "less than"
                out.append(CorruptIndexError(
                    f"Corrupt index found: non-zero size but the last offset is {last} which is {word} "
                    f"the base offset {self.base_offset}", path=str(self.path),
                    offset=(self.entry_count - 1) * OFFSET_ENTRY.size + OFFSET_ENTRY.offset("relative_offset"),
                    field=f"entry[{self.entry_count - 1}].relative_offset"))
        length = self._length_problem()
        if length is not None:
            out.append(length)
        return out

    def problems(self) -> list[CorruptIndexError]:
        """Every invariant violation (empty for a healthy index). Cost: O(n), vectorized.

        Checks: the sanity checks; relative offsets >= 0 and strictly increasing (append needs a
        larger offset); positions >= 0 and non-decreasing.
        """
        self._require_open()
        out = self._sanity_problems()
        rel = self.entries["relative_offset"].astype(np.int64)
        pos = self.entries["position"].astype(np.int64)
        self._entry_problem(rel < 0, "relative offset below 0 (offset below the base offset)",
                            "relative_offset", out)
        self._entry_problem(rel[1:] <= rel[:-1], "offset not larger than the previous entry's",
                            "relative_offset", out, start=1)
        self._entry_problem(pos < 0, "negative position", "position", out)
        self._entry_problem(pos[1:] < pos[:-1], "position below the previous entry's", "position",
                            out, start=1)
        return out

    def to_frame(self):
        """The entries as a pandas DataFrame: offset, position."""
        import pandas as pd

        return pd.DataFrame({"offset": self.offsets, "position": self.positions})


class TimeIndex(_SparseIndex):
    """A segment's ``.timeindex``: timestamp -> absolute offset (TimeIndex.java).

    Use :meth:`open`. Costs as :class:`OffsetIndex`.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), segment_file_name(78, TIME_INDEX_SUFFIX))
    >>> build_time_index(p, [(1000, 80), (1000, 81), (2000, 90)])   # equal timestamp: skipped
    2
    >>> with TimeIndex.open(p) as idx:
    ...     idx.lookup(1500), idx.lookup(999)
    (TimestampOffset(timestamp=1000, offset=80), TimestampOffset(timestamp=-1, offset=78))
    """

    LAYOUT = TIME_ENTRY
    KIND = "time index"
    SUFFIX = TIME_INDEX_SUFFIX
    JAVA = "TimeIndex"
    RESULT = TimestampOffset

    def _key_at(self, slot: int) -> int:
        return _I64.unpack_from(self._buf, slot * _TIME_ENTRY_SIZE)[0]

    def _value_at(self, slot: int) -> int:
        return wrap_long(self.base_offset + _I32.unpack_from(self._buf, slot * _TIME_ENTRY_SIZE
                                                           + _TIME_ENTRY_RELATIVE_OFFSET_AT)[0])

    def _result(self, slot: int) -> TimestampOffset:
        ts, rel = TIME_ENTRY.struct.unpack_from(self._buf, slot * _TIME_ENTRY_SIZE)
        return TimestampOffset(ts, wrap_long(self.base_offset + rel))

    def _not_found(self) -> TimestampOffset:
        return TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def _key_array(self) -> np.ndarray:
        return self.entries["timestamp"].astype(np.int64)

    @property
    def timestamps(self) -> np.ndarray:
        """Timestamps (ms) of the entries, int64 (a copy)."""
        return self.entries["timestamp"].astype(np.int64)

    @property
    def offsets(self) -> np.ndarray:
        """Absolute offsets of the entries, int64 (a copy)."""
        return self._abs_offsets()

    @property
    def last_entry(self) -> TimestampOffset:
        """TimeIndex.lastEntry: the last entry, or (-1, base offset) when empty."""
        self._require_open()
        return self._result(self.entry_count - 1) if self.entry_count else self._not_found()

    @property
    def is_full(self) -> bool:
        """TimeIndex.isFull: entries >= maxEntries - 1 (the last slot is kept for the roll entry)."""
        return self.entry_count >= self.max_entries - 1

    def lookup(self, target_timestamp: int, *, algorithm: Algorithm = "warm") -> TimestampOffset:
        """TimeIndex.lookup: the entry with the largest timestamp <= `target_timestamp`, or
        ``(-1, base_offset)`` when the index is empty or every entry is above the target.
        Cost: O(log n) entry reads."""
        return self._lookup(_check_long("target_timestamp", target_timestamp), algorithm, None)

    def lookup_many(self, target_timestamps: Any) -> np.ndarray:
        """:meth:`lookup` for many targets at once (np.searchsorted), as a structured array
        (:data:`TIMESTAMP_OFFSET_DTYPE`). Equals the scalar lookup whenever the timestamps are
        strictly increasing (:meth:`check` passes). Cost: O(n) once, then O(m log n)."""
        t, slots = self._lookup_slots(target_timestamps)
        out = np.empty(len(t), dtype=TIMESTAMP_OFFSET_DTYPE).view(np.recarray)
        found = slots >= 0
        safe = np.where(found, slots, 0)
        if self.entry_count:
            out.timestamp = np.where(found, self._sorted_keys()[safe], NO_TIMESTAMP)
            out.offset = np.where(found, self._abs_offsets()[safe], self.base_offset)
        else:
            out.timestamp, out.offset = NO_TIMESTAMP, self.base_offset
        return out

    def sanity_check(self) -> None:
        """TimeIndex.sanityCheck, as the broker runs it on load: last timestamp >= first
        timestamp, last offset >= base offset, then length a multiple of 12. Raises
        :class:`CorruptIndexError`. Cost: O(1)."""
        super().sanity_check()

    def _sanity_problems(self) -> list[CorruptIndexError]:
        p, n, out = str(self.path), self.entry_count, []
        if n:
            last = self.last_entry
            first_ts = self._key_at(0)
            if last.timestamp < first_ts:
                out.append(CorruptIndexError(
                    f"Corrupt time index found: non-zero size but the last timestamp is {last.timestamp} "
                    f"which is less than the first timestamp {first_ts}", path=p,
                    offset=(n - 1) * TIME_ENTRY.size + TIME_ENTRY.offset("timestamp"),
                    field=f"entry[{n - 1}].timestamp"))
            if last.offset < self.base_offset:
                out.append(CorruptIndexError(
                    f"Corrupt time index found: non-zero size but the last offset is {last.offset} "
                    f"which is less than the first offset {self.base_offset}", path=p,
                    offset=(n - 1) * TIME_ENTRY.size + TIME_ENTRY.offset("relative_offset"),
                    field=f"entry[{n - 1}].relative_offset"))
        length = self._length_problem()
        if length is not None:
            out.append(length)
        return out

    def problems(self) -> list[CorruptIndexError]:
        """Every invariant violation (empty for a healthy index). Cost: O(n), vectorized.

        Checks: the sanity checks; the first timestamp >= 0 (maybeAppend needs a timestamp
        above NO_TIMESTAMP = -1); timestamps strictly increasing (maybeAppend writes only a
        larger timestamp); relative offsets >= 0 and non-decreasing.
        """
        self._require_open()
        out = self._sanity_problems()
        ts = self.entries["timestamp"].astype(np.int64)
        rel = self.entries["relative_offset"].astype(np.int64)
        self._entry_problem(ts[:1] < 0, "first timestamp below 0: maybeAppend writes only timestamps "
                            "above NO_TIMESTAMP (-1)", "timestamp", out)
        self._entry_problem(ts[1:] <= ts[:-1], "timestamp not larger than the previous entry's",
                            "timestamp", out, start=1)
        self._entry_problem(rel < 0, "relative offset below 0 (offset below the base offset)",
                            "relative_offset", out)
        self._entry_problem(rel[1:] < rel[:-1], "offset below the previous entry's", "relative_offset",
                            out, start=1)
        return out

    def to_frame(self):
        """The entries as a pandas DataFrame: timestamp, offset."""
        import pandas as pd

        return pd.DataFrame({"timestamp": self.timestamps, "offset": self.offsets})


def read_offset_index(path: str | os.PathLike, base_offset: int | None = None, *,
                      count: CountRule = "broker", strict: bool = True) -> np.ndarray:
    """Every entry of a ``.index`` file, loaded eagerly with absolute offsets
    (:data:`OFFSET_POSITION_DTYPE`). Cost: O(n), one pass.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), segment_file_name(10, INDEX_SUFFIX))
    >>> _ = build_offset_index(p, [(12, 4100)])
    >>> read_offset_index(p).tolist()
    [(12, 4100)]
    """
    with OffsetIndex.open(path, base_offset, count=count, strict=strict) as idx:
        out = np.empty(idx.entry_count, dtype=OFFSET_POSITION_DTYPE)
        out["offset"] = idx.offsets
        out["position"] = idx.entries["position"]
        return out


def read_time_index(path: str | os.PathLike, base_offset: int | None = None, *,
                    count: CountRule = "broker", strict: bool = True) -> np.ndarray:
    """Every entry of a ``.timeindex`` file, loaded eagerly with absolute offsets
    (:data:`TIMESTAMP_OFFSET_DTYPE`). Cost: O(n), one pass."""
    with TimeIndex.open(path, base_offset, count=count, strict=strict) as idx:
        out = np.empty(idx.entry_count, dtype=TIMESTAMP_OFFSET_DTYPE)
        out["timestamp"] = idx.timestamps
        out["offset"] = idx.offsets
        return out


def entry_count(path: str | os.PathLike, *, count: CountRule = "broker") -> int:
    """Entries in a ``.index`` / ``.timeindex`` file, the kind taken from the suffix.

    "broker": file size // entry size, from the size alone (one stat, no read), as
    AbstractIndex counts. "dump": stop at the zero-filled tail (maps the file; O(n) vectorized).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), segment_file_name(0, TIME_INDEX_SUFFIX))
    >>> _ = build_time_index(p, [(5, 1), (6, 2)], trim=False)   # left preallocated
    >>> entry_count(p), entry_count(p, count="dump")
    (873813, 2)
    """
    kind = _kind_of(path)
    if count == "broker":
        return os.stat(path).st_size // kind.LAYOUT.size
    # the zero tail is found from relative offsets alone: the base offset does not matter
    with kind.open(path, base_offset=0, count=count, strict=False) as idx:
        return idx.entry_count


# ------------------------------------------------------------------------------ writing


class _IndexWriter:
    """Common part of the writers: a preallocated temporary file next to the target, appended
    with pwrite, trimmed and renamed into place on close."""

    LAYOUT: Layout
    JAVA: str

    def __init__(self, path: str | os.PathLike, base_offset: int | None = None,
                 max_index_size: int = DEFAULT_MAX_INDEX_SIZE, *, overwrite: bool = False):
        path = Path(path)
        base = base_offset_of(path) if base_offset is None else _check_long("base_offset", base_offset)
        if base < 0:
            raise ValueError(f"base_offset must be >= 0, got {base}")
        length = round_down_to_entries(max_index_size, self.LAYOUT.size)
        if not overwrite and path.exists():
            raise FileExistsError(f"{path}: already exists (pass overwrite=True, or use resume())")
        self.path = path
        self.base_offset = base
        self.max_index_size = int(max_index_size)
        self.overwrite = overwrite
        #: The temporary file being written (a hidden sibling of `path`).
        self.temp_path = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        self._fd = os.open(self.temp_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        self._closed = False
        try:
            os.ftruncate(self._fd, length)  # AbstractIndex: raf.setLength(roundDown(maxIndexSize))
        except BaseException:
            self.abort()
            raise
        self.length = length
        self.max_entries = length // self.LAYOUT.size
        self.entry_count = 0
        self._reset_last()

    def _reset_last(self) -> None:
        """Forget the last entry (the file is empty)."""
        raise NotImplementedError

    def _load_last(self, data: bytes) -> None:
        """Take the last entry of `data`, the file's first entry_count entries."""
        raise NotImplementedError

    @classmethod
    def resume(cls, path: str | os.PathLike, base_offset: int | None = None,
               max_index_size: int = DEFAULT_MAX_INDEX_SIZE):
        """Continue an existing (trimmed) index, as the broker does with the active segment's
        indexes on load: every whole entry counts, then the file is resized back to
        `max_index_size`. The original file is only read: the bytes are copied to the temporary
        file, which replaces the original on :meth:`close`. Runs the sanity check first.
        """
        reader_cls = OffsetIndex if cls is OffsetIndexWriter else TimeIndex
        with reader_cls.open(path, base_offset) as idx:
            data = idx.entries.tobytes()
            base = idx.base_offset
        w = cls(path, base, max_index_size, overwrite=True)
        try:
            if len(data) > w.length:
                raise ValueError(f"{path}: {len(data)} bytes of entries do not fit max_index_size "
                                 f"{max_index_size} (Kafka cannot resize below its position)")
            os.pwrite(w._fd, data, 0)
            w.entry_count = len(data) // w.LAYOUT.size
            w._load_last(data)
        except BaseException:
            w.abort()
            raise
        return w

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.path}: writer is closed")

    @property
    def size_in_bytes(self) -> int:
        return self.entry_count * self.LAYOUT.size

    def _error(self, cls, message: str, field_name: str, slot: int | None = None):
        slot = self.entry_count if slot is None else slot
        return cls(message, path=str(self.path), offset=slot * self.LAYOUT.size, field=field_name)

    def _write(self, data: bytes) -> None:
        end = self.size_in_bytes + len(data)
        assert end <= self.length, "append past the preallocated length"
        os.pwrite(self._fd, data, self.size_in_bytes)
        self.entry_count += len(data) // self.LAYOUT.size

    def resize(self, new_size: int) -> bool:
        """AbstractIndex.resize: set the file to `new_size` rounded down to whole entries;
        False when it already has that size. Cost: one ftruncate."""
        self._require_open()
        new_size = _check_int("new_size", new_size)
        rounded = _round_down(max(new_size, 0), self.LAYOUT.size)
        if rounded == self.length:
            return False
        if rounded < self.size_in_bytes:
            raise ValueError(f"cannot resize {self.path} to {rounded} bytes: its {self.entry_count} "
                             f"entries take {self.size_in_bytes}")
        os.ftruncate(self._fd, rounded)
        self.length = rounded
        self.max_entries = rounded // self.LAYOUT.size
        return True

    def trim(self) -> None:
        """AbstractIndex.trimToValidSize: truncate the file to its entries (on roll and close).
        The index is then full; :meth:`resize` makes room again."""
        self.resize(self.size_in_bytes)

    def close(self, *, trim: bool = True, sync: bool = False) -> Path:
        """Trim (AbstractIndex.close, unless ``trim=False``: the file is then left preallocated,
        as a crashed broker leaves its active segment), optionally fsync, and rename the
        temporary file to :attr:`path`. Returns the path."""
        if self._closed:
            return self.path
        try:
            if trim:
                self.trim()
            if sync:
                os.fsync(self._fd)
        except BaseException:
            self.abort()
            raise
        os.close(self._fd)
        self._closed = True
        try:
            if self.overwrite:
                os.replace(self.temp_path, self.path)
            else:
                os.link(self.temp_path, self.path)  # refuses to clobber a file that appeared meanwhile
                os.unlink(self.temp_path)
        except BaseException:
            if os.path.exists(self.temp_path):
                os.unlink(self.temp_path)
            raise
        return self.path

    def abort(self) -> None:
        """Drop the temporary file; the target is left untouched."""
        if not self._closed:
            os.close(self._fd)
            self._closed = True
        if os.path.exists(self.temp_path):
            os.unlink(self.temp_path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({str(self.path)!r}, base_offset={self.base_offset}, "
                f"entries={self.entry_count}, max_entries={self.max_entries})")


class OffsetIndexWriter(_IndexWriter):
    """Write a ``.index`` as OffsetIndex does: preallocated to ``max_index_size`` rounded down
    to 8 bytes, appended by :meth:`append`, trimmed on close. Also a context manager (an
    exception drops the temporary file).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), segment_file_name(0, INDEX_SUFFIX))
    >>> with OffsetIndexWriter(p, max_index_size=100) as w:
    ...     w.max_entries, w.append(3, 4730), w.append(7, 9571)
    (12, None, None)
    >>> os.path.getsize(p)
    16
    """

    LAYOUT = OFFSET_ENTRY
    JAVA = "OffsetIndex"

    def _reset_last(self) -> None:
        self.last_offset = self.base_offset  # OffsetIndex.lastEntry() when empty

    def _load_last(self, data: bytes) -> None:
        if self.entry_count:
            rel = _I32.unpack_from(data, (self.entry_count - 1) * OFFSET_ENTRY.size)[0]
            self.last_offset = wrap_long(self.base_offset + rel)

    @property
    def is_full(self) -> bool:
        return self.entry_count >= self.max_entries

    def append(self, offset: int, position: int) -> None:
        """OffsetIndex.append: add (offset, position). Raises :class:`IndexFullError`,
        :class:`InvalidOffsetError` (offset not larger than the last) or
        :class:`IndexOffsetOverflowError`, in Kafka's order. Cost: one 8-byte pwrite."""
        self._require_open()
        offset = _check_long("offset", offset)
        position = _check_int("position", position)
        self._check_one(offset)
        os.pwrite(self._fd, OFFSET_ENTRY.pack(offset - self.base_offset, position), self.size_in_bytes)
        self.entry_count += 1
        self.last_offset = offset

    def _check_one(self, offset: int) -> None:
        if self.is_full:
            raise self._error(IndexFullError, f"Attempt to append to a full index (size = {self.entry_count})",
                              "entry")
        if not (self.entry_count == 0 or offset > self.last_offset):
            raise self._error(InvalidOffsetError, f"Attempt to append an offset {offset} to position "
                              f"{self.entry_count} no larger than the last offset appended ({self.last_offset})",
                              "relative_offset")
        rel = offset - self.base_offset
        if not 0 <= rel <= INT_MAX:
            raise self._error(IndexOffsetOverflowError, f"Integer overflow for offset: {offset} (relative "
                              f"offset {rel} outside 0..2^31-1 for base offset {self.base_offset})",
                              "relative_offset")

    def append_many(self, offsets: Any, positions: Any) -> int:
        """:meth:`append` for arrays, with the same result as appending one by one: on the first
        refused entry the entries before it are written and the same typed error is raised.
        Returns the number appended. Cost: O(n) vectorized, one pwrite."""
        self._require_open()
        off = _as_int64("offsets", offsets)
        pos = _as_int64("positions", positions)
        if len(off) != len(pos):
            raise ValueError(f"{len(off)} offsets but {len(pos)} positions")
        if len(pos) and (pos.min() < INT_MIN or pos.max() > INT_MAX):
            raise ValueError("positions must fit in a Java int (signed 32-bit)")
        n = len(off)
        if n == 0:
            return 0
        e = self.entry_count + np.arange(n)
        prev = np.concatenate([[self.last_offset], off[:-1]])
        full = e >= self.max_entries
        invalid = (e != 0) & (off <= prev)
        rel = off - np.int64(self.base_offset)  # may wrap for absurd inputs; the check below is exact then
        overflow = (off < self.base_offset) | (rel < 0) | (rel > INT_MAX)
        bad = np.flatnonzero(full | invalid | overflow)
        stop = int(bad[0]) if len(bad) else n
        if stop:
            rec = np.empty(stop, dtype=OFFSET_ENTRY.dtype)
            rec["relative_offset"] = rel[:stop]
            rec["position"] = pos[:stop]
            self._write(rec.tobytes())
            self.last_offset = int(off[stop - 1])
        if stop < n:
            self._check_one(int(off[stop]))  # raises the error Kafka raises for this entry
            raise AssertionError("unreachable")  # pragma: no cover
        return stop


class TimeIndexWriter(_IndexWriter):
    """Write a ``.timeindex`` as TimeIndex does: preallocated to ``max_index_size`` rounded
    down to 12 bytes, appended by :meth:`maybe_append`, trimmed on close; :meth:`roll` adds the
    roll entry as LogSegment.onBecomeInactiveSegment. Also a context manager.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), segment_file_name(0, TIME_INDEX_SUFFIX))
    >>> with TimeIndexWriter(p, max_index_size=36) as w:      # 3 slots, the last kept for the roll
    ...     w.maybe_append(100, 3), w.maybe_append(100, 4), w.maybe_append(200, 7), w.is_full
    (True, False, True, True)
    >>> with TimeIndexWriter(p, max_index_size=36, overwrite=True) as w:
    ...     _ = w.maybe_append(100, 3); _ = w.maybe_append(200, 7); w.roll(300, 12)
    True
    >>> read_time_index(p).tolist()
    [(100, 3), (200, 7), (300, 12)]
    """

    LAYOUT = TIME_ENTRY
    JAVA = "TimeIndex"

    def _reset_last(self) -> None:
        self.last_entry = TimestampOffset(NO_TIMESTAMP, self.base_offset)  # lastEntry when empty

    def _load_last(self, data: bytes) -> None:
        if self.entry_count:
            ts, rel = TIME_ENTRY.struct.unpack_from(data, (self.entry_count - 1) * TIME_ENTRY.size)
            self.last_entry = TimestampOffset(ts, wrap_long(self.base_offset + rel))

    @property
    def is_full(self) -> bool:
        """TimeIndex.isFull: entries >= maxEntries - 1 (the last slot is kept for the roll entry)."""
        return self.entry_count >= self.max_entries - 1

    def _check_one(self, timestamp: int, offset: int, skip_full_check: bool) -> bool:
        """Kafka's checks for one maybeAppend call, in order; True when it would append."""
        n, last = self.entry_count, self.last_entry
        if not skip_full_check and self.is_full:
            raise self._error(IndexFullError, f"Attempt to append to a full time index (size = {n})", "entry")
        if n != 0 and offset < last.offset:
            raise self._error(InvalidOffsetError, f"Attempt to append an offset ({offset}) to slot {n} no "
                              f"larger than the last offset appended ({last.offset})", "relative_offset")
        if n != 0 and timestamp < last.timestamp:
            raise self._error(TimestampOrderError, f"Attempt to append a timestamp ({timestamp}) to slot {n} "
                              f"no larger than the last timestamp appended ({last.timestamp})", "timestamp")
        if timestamp <= last.timestamp:
            return False
        if n >= self.max_entries:  # only reachable with skip_full_check: Java's BufferOverflowException
            raise self._error(IndexFullError, f"no room for the roll entry: all {n} slots are used", "entry")
        rel = offset - self.base_offset
        if not 0 <= rel <= INT_MAX:
            raise self._error(IndexOffsetOverflowError, f"Integer overflow for offset: {offset} (relative "
                              f"offset {rel} outside 0..2^31-1 for base offset {self.base_offset})",
                              "relative_offset")
        return True

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """TimeIndex.maybeAppend: append (timestamp, offset) when the timestamp is larger than
        the last one; True when written. Raises :class:`IndexFullError` (unless
        `skip_full_check`), :class:`InvalidOffsetError`, :class:`TimestampOrderError`,
        :class:`IndexOffsetOverflowError`, in Kafka's order. Cost: at most one 12-byte pwrite."""
        self._require_open()
        timestamp = _check_long("timestamp", timestamp)
        offset = _check_long("offset", offset)
        if not self._check_one(timestamp, offset, skip_full_check):
            return False
        os.pwrite(self._fd, TIME_ENTRY.pack(timestamp, offset - self.base_offset), self.size_in_bytes)
        self.entry_count += 1
        self.last_entry = TimestampOffset(timestamp, offset)
        return True

    def roll(self, max_timestamp_so_far: int, offset_of_max_timestamp: int) -> bool:
        """LogSegment.onBecomeInactiveSegment's time-index part: maybeAppend the segment's max
        timestamp with skipFullCheck, then trim. True when the entry was new."""
        appended = self.maybe_append(max_timestamp_so_far, offset_of_max_timestamp, skip_full_check=True)
        self.trim()
        return appended

    def maybe_append_many(self, timestamps: Any, offsets: Any, skip_full_check: bool = False) -> np.ndarray:
        """:meth:`maybe_append` for arrays, with the same result as calling it once per entry:
        on the first refused call the entries before it are written and the same typed error is
        raised. Returns a bool mask of the calls that appended. Cost: O(n) vectorized, one pwrite."""
        self._require_open()
        ts = _as_int64("timestamps", timestamps)
        off = _as_int64("offsets", offsets)
        n = len(ts)
        if len(off) != n:
            raise ValueError(f"{n} timestamps but {len(off)} offsets")
        if n == 0:
            return np.zeros(0, dtype=bool)
        t0, o0, e0 = self.last_entry.timestamp, self.last_entry.offset, self.entry_count
        # Assuming every earlier call succeeded (true up to the first error), the last timestamp
        # before call i is the running max, and call i appends iff its timestamp exceeds it.
        run_max = np.maximum.accumulate(np.concatenate([[t0], ts]))
        t_last = run_max[:-1]
        appended = ts > t_last
        e = e0 + np.concatenate([[0], np.cumsum(appended)[:-1]])
        idx = np.arange(n)
        last_app = np.maximum.accumulate(np.where(appended, idx, -1))
        last_before = np.concatenate([[-1], last_app[:-1]])
        o_last = np.where(last_before >= 0, off[np.maximum(last_before, 0)], o0)
        if skip_full_check:
            full = appended & (e >= self.max_entries)
        else:
            full = e >= self.max_entries - 1
        nonempty = e != 0
        invalid = nonempty & (off < o_last)
        backwards = nonempty & (ts < t_last)
        rel = off - np.int64(self.base_offset)
        overflow = appended & ((off < self.base_offset) | (rel < 0) | (rel > INT_MAX))
        bad = np.flatnonzero(full | invalid | backwards | overflow)
        stop = int(bad[0]) if len(bad) else n
        mask = appended.copy()
        mask[stop:] = False
        k = int(mask.sum())
        if k:
            rec = np.empty(k, dtype=TIME_ENTRY.dtype)
            rec["timestamp"] = ts[mask]
            rec["relative_offset"] = rel[mask]
            self._write(rec.tobytes())
            j = int(np.flatnonzero(mask)[-1])
            self.last_entry = TimestampOffset(int(ts[j]), int(off[j]))
        if stop < n:
            self._check_one(int(ts[stop]), int(off[stop]), skip_full_check)  # raises Kafka's error
            raise AssertionError("unreachable")  # pragma: no cover
        return mask


def _pairs(entries: Any, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Two int64 columns from a structured array (fields `names`), an (n, 2) array or pairs."""
    if isinstance(entries, np.ndarray) and entries.dtype.names:
        return _as_int64(names[0], entries[names[0]]), _as_int64(names[1], entries[names[1]])
    if isinstance(entries, np.ndarray) and entries.dtype.kind in "iu" and entries.ndim == 2 and entries.shape[1] == 2:
        return _as_int64(names[0], entries[:, 0]), _as_int64(names[1], entries[:, 1])
    arr = np.asarray(list(entries) if not isinstance(entries, np.ndarray) else entries, dtype=object)
    if arr.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"entries must be ({names[0]}, {names[1]}) pairs")
    return _as_int64(names[0], arr[:, 0]), _as_int64(names[1], arr[:, 1])


def build_offset_index(path: str | os.PathLike, entries: Any, base_offset: int | None = None, *,
                       max_index_size: int = DEFAULT_MAX_INDEX_SIZE, trim: bool = True,
                       overwrite: bool = False) -> int:
    """Write a whole ``.index`` in one call: :class:`OffsetIndexWriter` + append every
    (offset, position) + close. `entries` is an array with ``offset`` / ``position`` fields, an
    (n, 2) array or a sequence of pairs. With ``trim=False`` the file is left preallocated.
    Refused entries raise the writer's typed error and leave no file. Returns the entry count.
    Cost: O(n) vectorized.
    """
    off, pos = _pairs(entries, ("offset", "position"))
    with OffsetIndexWriter(path, base_offset, max_index_size, overwrite=overwrite) as w:
        w.append_many(off, pos)
        n = w.entry_count
        w.close(trim=trim)
    return n


def build_time_index(path: str | os.PathLike, entries: Any, base_offset: int | None = None, *,
                     max_index_size: int = DEFAULT_MAX_INDEX_SIZE, roll: tuple[int, int] | None = None,
                     trim: bool = True, overwrite: bool = False) -> int:
    """Write a whole ``.timeindex`` in one call: :class:`TimeIndexWriter` + maybeAppend every
    (timestamp, offset) + (with `roll`) the roll entry + close. Calls whose timestamp is not
    larger than the last one append nothing, as in Kafka. Returns the entry count written.
    Cost: O(n) vectorized.
    """
    ts, off = _pairs(entries, ("timestamp", "offset"))
    with TimeIndexWriter(path, base_offset, max_index_size, overwrite=overwrite) as w:
        w.maybe_append_many(ts, off)
        if roll is not None:
            w.maybe_append(roll[0], roll[1], skip_full_check=True)
        n = w.entry_count
        w.close(trim=trim)
    return n
