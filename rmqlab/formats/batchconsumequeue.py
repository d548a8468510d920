"""RocketMQ 5.x's BatchConsumeQueue: the per-queue index of a ``queue.type=BatchCQ`` topic,
46 bytes per stored message (an inner batch of messages counts as one stored message).

Mirrors ``org.apache.rocketmq.store.queue.BatchConsumeQueue`` (added in commit 821b91f0a2,
"support batch consume-queue", first released in 5.0.0-ALPHA; read at rocketmq-all-5.0.0 and
rocketmq-all-5.3.1, commit b122c8109d62) with ``StorePathConfigHelper.getStorePathBatchConsumeQueue``
and ``MessageStoreConfig.mapperFileSizeBatchConsumeQueue``. Which messages get a unit, and the
unit's ``msg_base_offset`` / ``batch_size``, are dispatch rules: :mod:`rmqlab.rules.dispatch`.

A queue is the folder ``batchconsumequeue/<topic>/<queueId>/``. Its files are named by the
20-digit byte offset of their first unit in the queue's byte space (unit number x 46, *not* a
message offset) and are preallocated to ``mapperFileSizeBatchConsumeQueue`` bytes (default
300,000 units = 13,800,000 bytes; unlike the ConsumeQueue's, the broker does not round this
size to whole units). A unit is :data:`UNIT`.

Facts settled from the Java source:

* **End of the queue.** ``recover()`` reads units from the third-newest file while
  ``commitlog_offset >= 0 and size > 0 and msg_base_offset >= 0 and batch_size > 0``; the first
  other unit ends the queue and later files are deleted (``truncateDirtyFiles``).
* **Message offsets.** A unit covers the message offsets ``[msg_base_offset, msg_base_offset +
  batch_size)``. ``minOffsetInQueue`` is the first file's first unit's base;
  ``maxOffsetInQueue`` is the last unit's base + batch size (the two newest files are looked at).
* **No filler.** Nothing like the ConsumeQueue's pre-blank exists: the first file of a queue is
  the one at byte 0 (``getLastMappedFile(getMaxOffset())``).
* **Written fields.** ``putBatchMessagePositionInfo`` writes ``compacted_offset = -1``
  (INVALID_POS) and ``reserved = 0``; it writes nothing when ``commitlog_offset <=
  maxMsgPhyOffsetInCommitLog`` (a repeat).
* **Lookup by message offset** (``getBatchMsgIndexBuffer``): none at or past max_offset; the
  file is the newest whose first base is <= the offset, then a binary search over the bases of
  that file's units picks the last unit whose base is <= the offset.
* **Lookup by time** (``getOffsetInQueueByTime``): the file is the newest whose first unit's
  store time is <= the time, else ``searchTimeFromFiles``; in the file, a time at or past the
  last unit's gives that unit's base, otherwise ``binarySearchRight`` finds the first unit
  whose store time is >= the time (LOWER) or the last one equal to it, else the first later
  one (UPPER); the answer is that unit's base, -1 when none. Store times are the unit's own
  field (no CommitLog reads, unlike the ConsumeQueue).

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> with BatchConsumeQueueWriter.create(d, mapped_file_size=2 * UNIT_SIZE) as w:
...     [w.put(1000 * i, 300, 0, 1718000000000 + i, 10 * i, 10) for i in range(3)]
['written', 'written', 'written']
>>> with BatchConsumeQueue.open(d, mapped_file_size=2 * UNIT_SIZE) as q:
...     q.min_offset, q.max_offset, q.find(25).msg_base_offset, q.offset_by_time(1718000000001)
(0, 30, 20, 10)
"""
from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import CorruptIndexError, FormatError, GeometryError, RmqlabError, TruncatedFileError
from rmqlab.formats.layout import Layout
from rmqlab.formats.mapped import MappedFolder, close_handles
from rmqlab.formats.storepaths import BATCHCONSUMEQUEUE
from rmqlab.jvm.longs import INT_MAX, LONG_MAX
from rmqlab.tables.arrays import most_common

__all__ = [
    "batch_file_size",
    "UNIT",
    "UNIT_SIZE",
    "DEFAULT_UNITS_PER_FILE",
    "DEFAULT_MAPPED_FILE_SIZE",
    "INVALID_POS",
    "FOLDER",
    "queue_dir",
    "file_name",
    "BcqFile",
    "BatchConsumeQueue",
    "BatchConsumeQueueWriter",
]

# BatchConsumeQueue.java: CQ_STORE_UNIT_SIZE = 46
UNIT = Layout("BcqUnit", [
    ("commitlog_offset", "q", "CommitLog byte offset of the stored message"),
    ("size", "i", "the stored message's TOTALSIZE"),
    ("tags_code", "q", "hashCode(TAGS) sign-extended (the dispatch's tagsCode)"),
    ("store_time", "q", "the message's STORETIMESTAMP, ms"),
    ("msg_base_offset", "q", "message offset of the first message the unit covers (INNER_BASE)"),
    ("batch_size", "h", "messages the unit covers (INNER_NUM; 1 for a plain message)"),
    ("compacted_offset", "i", "always INVALID_POS (-1) as the store writes it"),
    ("reserved", "i", "always 0"),
])
UNIT_SIZE = UNIT.size
DEFAULT_UNITS_PER_FILE = 300_000                              # MessageStoreConfig: 300000 * 46
DEFAULT_MAPPED_FILE_SIZE = DEFAULT_UNITS_PER_FILE * UNIT_SIZE  # 13,800,000 bytes
#: BatchConsumeQueue.INVALID_POS: the compacted_offset every unit is written with.
INVALID_POS = -1
#: StorePathConfigHelper.getStorePathBatchConsumeQueue: the folder under the store root.
FOLDER = BATCHCONSUMEQUEUE
_SHORT_MAX = 2**15 - 1
_NAME_RE = re.compile(r"^[0-9]{20}$")
_BOUNDARIES = ("lower", "upper")


def queue_dir(store_root: str | os.PathLike, topic: str, queue_id: int) -> Path:
    """``<store_root>/batchconsumequeue/<topic>/<queue_id>``: where a BatchCQ queue lives.

    >>> queue_dir("store", "T", 2).as_posix()
    'store/batchconsumequeue/T/2'
    """
    return Path(store_root) / FOLDER / topic / str(int(queue_id))


def file_name(byte_offset: int) -> str:
    """UtilAll.offset2FileName: the 20-digit name of the file whose first unit is at `byte_offset`.

    >>> file_name(13_800_000)
    '00000000000013800000'
    """
    if byte_offset < 0:
        raise ValueError(f"file offset must be >= 0, got {byte_offset}")
    return f"{int(byte_offset):020d}"


def _check_size(mapped_file_size: int) -> int:
    size = int(mapped_file_size)
    if size < UNIT_SIZE or size > INT_MAX:
        raise ValueError(f"mapped_file_size must be in [{UNIT_SIZE}, 2^31-1], got {size}")
    return size


def _valid(u: np.ndarray) -> np.ndarray:
    """recover()'s test of one unit: what it takes as a unit rather than the end of the queue."""
    return ((u["commitlog_offset"] >= 0) & (u["size"] > 0) & (u["msg_base_offset"] >= 0)
            & (u["batch_size"] > 0))


@dataclass(frozen=True)
class BcqFile:
    """One file of a queue: path, the byte offset in its name, its size on disk."""

    path: Path
    start: int
    size: int


class _Segment:
    __slots__ = ("file", "buf", "units", "count")

    def __init__(self, file: BcqFile, buf: Any):
        self.file = file
        self.buf = buf
        n = len(buf) // UNIT_SIZE
        self.units = np.frombuffer(buf, dtype=UNIT.dtype, count=n) if n else np.zeros(0, UNIT.dtype)
        self.count = 0   # units before the end (set once the end is known)


def _list_files(folder: Path, size: int) -> tuple[list[BcqFile], list[RmqlabError]]:
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a BatchConsumeQueue folder")
    entries = sorted((e for e in os.scandir(folder) if not e.is_dir()), key=lambda e: e.name)
    files: list[BcqFile] = []
    problems: list[RmqlabError] = []
    for i, e in enumerate(entries):
        path, length = Path(e.path), e.stat().st_size
        if not _NAME_RE.match(e.name):
            problems.append(FormatError(f"file name {e.name!r} is not a 20-digit offset; the broker cannot "
                                        f"load it", path=path, offset=0, field="file name"))
            continue
        if length == 0 and i == len(entries) - 1:
            continue   # MappedFileQueue.doLoad deletes an empty last file
        files.append(BcqFile(path, int(e.name), length))
    prev = None
    for f in files:
        if f.size != size:
            cls = TruncatedFileError if f.size < size else GeometryError
            problems.append(cls(f"file is {f.size} bytes, not the mapped file size {size} (the broker "
                                f"refuses to load it)", path=f.path, offset=min(f.size, size), field="file size"))
        if f.start % size:
            problems.append(FormatError(f"name {f.start} is not a multiple of the mapped file size {size}",
                                        path=f.path, offset=0, field="file name"))
        elif prev is not None and f.start != prev.start + size:
            problems.append(CorruptIndexError(
                f"starts at {f.start} but the previous file ends at {prev.start + size}: the files are "
                f"not contiguous (MappedFileQueue.checkSelf)", path=f.path, offset=0, field="file name"))
        prev = f
    return files, problems


class BatchConsumeQueue(MappedFolder):
    """All files of one ``batchconsumequeue/<topic>/<queueId>`` folder, read-only.

    :meth:`open` maps the files read-only (lazy); :meth:`read` loads them into memory (eager).
    Offsets called *message offsets* are the numbers consumers commit (a unit covers
    ``batch_size`` of them); *unit numbers* count units from the first file's first unit.

    Costs: open O(files) plus the units of the three newest files (recover()'s scan,
    vectorized); find / offset_by_time O(log units); :meth:`problems` O(queue), vectorized.
    """

    def __init__(self, folder: Path, mapped_file_size: int, segments: list[_Segment],
                 problems: list[RmqlabError], handles: list):
        self.folder = folder
        self.mapped_file_size = mapped_file_size
        self.topic = folder.parent.name or None
        self.queue_id = int(folder.name) if folder.name.isdigit() else None
        self._all = segments
        self._open_problems = problems
        self._handles = handles
        self._closed = False
        self._find_end()

    @classmethod
    def open(cls, folder: str | os.PathLike, mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE, *,
             strict: bool = True) -> BatchConsumeQueue:
        """Map every file of the queue folder read-only.

        With `strict` a bad file name or size, or a gap between files, raises its typed error;
        otherwise the queue opens and :meth:`problems` lists them. Cost: O(files).

        >>> import tempfile
        >>> with BatchConsumeQueue.open(tempfile.mkdtemp()) as q:
        ...     q.min_offset, q.max_offset, len(q), q.message_total()
        (-1, 0, 0, 0)
        """
        return cls._load(folder, mapped_file_size, strict, eager=False)

    @classmethod
    def read(cls, folder: str | os.PathLike, mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE, *,
             strict: bool = True) -> BatchConsumeQueue:
        """Like :meth:`open`, but every file is read into memory and closed. Cost: O(bytes).

        >>> import tempfile
        >>> BatchConsumeQueue.read(tempfile.mkdtemp()).units.size
        0
        """
        return cls._load(folder, mapped_file_size, strict, eager=True)

    @classmethod
    def _load(cls, folder, mapped_file_size, strict, eager):
        folder = Path(folder)
        size = _check_size(mapped_file_size)
        files, problems = _list_files(folder, size)
        if strict and problems:
            raise problems[0]
        segments: list[_Segment] = []
        handles: list = []
        try:
            for f in files:
                if eager or not f.size:
                    segments.append(_Segment(f, f.path.read_bytes()))
                    continue
                fh = open(f.path, "rb")
                handles.append(fh)
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                handles.append(mapped)
                segments.append(_Segment(f, mapped))
        except BaseException:
            segments.clear()   # their views of the maps would keep the maps from closing
            close_handles(handles)
            raise
        return cls(folder, size, segments, problems, handles)

    def _find_end(self) -> None:
        segs, size = self._all, self.mapped_file_size
        full = size // UNIT_SIZE
        self._live: list[_Segment] = []
        self._dirty: list[_Segment] = []
        if not segs:
            self.min_offset, self.max_offset = -1, 0
            return
        k0 = max(0, len(segs) - 3)
        for s in segs[:k0]:
            s.count = min(full, len(s.units))   # recover() takes the older files as full
        last_k = k0
        for k in range(k0, len(segs)):
            u = segs[k].units[:full]
            bad = np.flatnonzero(~_valid(u))
            segs[k].count = int(bad[0]) if len(bad) else len(u)
            last_k = k
            if segs[k].count != full:
                break
        self._live = segs[:last_k + 1]
        self._dirty = segs[last_k + 1:]
        first = self._live[0]
        self.min_offset = int(first.units[0]["msg_base_offset"]) if first.count else -1
        tail = [s for s in self._live[-2:] if s.count]
        if tail:
            u = tail[-1].units[tail[-1].count - 1]
            self.max_offset = int(u["msg_base_offset"]) + int(u["batch_size"])
        else:
            self.max_offset = 0

    # -- metadata and units ------------------------------------------------------------------

    @property
    def files(self) -> tuple[BcqFile, ...]:
        """The files recover() keeps: up to the one holding the end."""
        return tuple(s.file for s in self._live)

    @property
    def dirty_files(self) -> tuple[BcqFile, ...]:
        """Files after the end's file: the broker deletes them at restart."""
        return tuple(s.file for s in self._dirty)

    def file_segment(self, name: str) -> _Segment | None:
        """The mapped file named `name`, live or dirty: ``.file``, ``.buf`` (its bytes),
        ``.units`` (a view of its slots) and ``.count`` (units before the end); None when the
        folder has no such file. Cost: O(files).
        """
        self._require_open()
        return next((s for s in self._live + self._dirty if s.file.path.name == name), None)

    @property
    def unit_count(self) -> int:
        """Units before the end (stored messages, not message offsets)."""
        return sum(s.count for s in self._live)

    def __len__(self) -> int:
        """Units in the queue (:attr:`unit_count`): one a batch, not one a message; see
        :meth:`message_total` for the messages they cover."""
        return self.unit_count

    def message_total(self) -> int:
        """Message offsets covered: max_offset - min_offset (getMessageTotalInQueue); 0 when the
        queue is empty or damaged so that max < min. A Python int: a damaged queue's offsets
        may span more than a container length can."""
        return max(self.max_offset - self.min_offset, 0) if self.min_offset >= 0 else 0

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.folder}: batch consume queue is closed")

    def segments(self) -> Iterator[tuple[BcqFile, np.ndarray]]:
        """(file, structured view of its units before the end) for each live file; no copy."""
        self._require_open()
        for s in self._live:
            yield s.file, s.units[:s.count]

    @property
    def units(self) -> np.ndarray:
        """Every unit before the end, in file order (fields of :data:`UNIT`). A view for one
        file, a copy for several."""
        parts = [v for _, v in self.segments()]
        if not parts:
            return np.zeros(0, UNIT.dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def to_frame(self):
        """The units as a pandas DataFrame (native-endian columns), with ``file`` and ``position``."""
        import pandas as pd

        rows = []
        for f, v in self.segments():
            d = {name: v[name].astype(v.dtype[name].newbyteorder("=")) for name in UNIT.dtype.names or ()}
            d["file"] = np.full(len(v), f.path.name, dtype=object)
            d["position"] = np.arange(len(v), dtype=np.int64) * UNIT_SIZE
            rows.append(pd.DataFrame(d))
        cols = list(UNIT.dtype.names or ()) + ["file", "position"]
        return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=cols)

    # -- lookups -------------------------------------------------------------------------------

    def find(self, msg_offset: int):
        """The unit covering message offset `msg_offset`, as the broker's getBatchMsgIndexBuffer
        finds it (a named tuple of :data:`UNIT` fields), or None. Cost: O(files + log units).

        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> with BatchConsumeQueueWriter.create(d, mapped_file_size=460) as w:
        ...     _ = w.put(0, 100, 0, 1, 5, 3)
        >>> BatchConsumeQueue.read(d, 460).find(7).msg_base_offset, BatchConsumeQueue.read(d, 460).find(8)
        (5, None)
        """
        self._require_open()
        msg_offset = int(msg_offset)
        if msg_offset >= self.max_offset:
            return None
        target = None
        for s in reversed(self._live):   # searchOffsetFromFiles: the newest file starting at or before
            if s.count and int(s.units[0]["msg_base_offset"]) <= msg_offset:
                target = s
                break
        if target is None:
            return None
        bases = target.units["msg_base_offset"][:target.count]
        k = int(np.searchsorted(bases, msg_offset, side="right")) - 1
        return UNIT.unpack_from(target.buf, k * UNIT_SIZE) if k >= 0 else None

    def _file_by_time(self, ts: int) -> _Segment | None:
        live = self._live
        if not live:
            return None
        last = live[-1]
        if last.count and int(last.units[0]["store_time"]) <= ts:
            return last
        for i in range(len(live) - 1, -1, -1):   # searchTimeFromFiles
            s = live[i]
            if not s.count:
                continue
            lo, hi = int(s.units[0]["store_time"]), int(s.units[s.count - 1]["store_time"])
            if hi >= ts:
                if lo <= ts or i == 0:
                    return s
                continue
            return live[i + 1] if i + 1 < len(live) else None
        return None

    def offset_by_time(self, timestamp: int, boundary: str = "lower") -> int:
        """The message offset for store time `timestamp` (ms), as getOffsetInQueueByTime answers:
        the base of the chosen unit, -1 when none. `boundary` "lower" (the first unit stored at
        or after the time) or "upper" (the last unit stored at exactly that time, else the first
        after). Cost: O(files + log units), no CommitLog reads.

        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> with BatchConsumeQueueWriter.create(d, mapped_file_size=460) as w:
        ...     _ = [w.put(100 * i, 100, 0, t, 2 * i, 2) for i, t in enumerate((10, 20, 20, 30))]
        >>> q = BatchConsumeQueue.read(d, 460)
        >>> q.offset_by_time(20), q.offset_by_time(20, "upper"), q.offset_by_time(99), q.offset_by_time(0)
        (2, 4, 6, 0)
        """
        self._require_open()
        if boundary not in _BOUNDARIES:
            raise ValueError(f"boundary must be one of {_BOUNDARIES}, got {boundary!r}")
        ts = int(timestamp)
        s = self._file_by_time(ts)
        if s is None or not s.count:
            return -1
        units = s.units[:s.count]
        times = units["store_time"].astype(np.int64)
        if ts >= int(times[-1]):
            return int(units[-1]["msg_base_offset"])
        # binarySearchRight over store times (which the store assumes are non-decreasing)
        k = int(np.searchsorted(times, ts, side="left"))
        if boundary == "upper":
            r = int(np.searchsorted(times, ts, side="right"))
            k = r - 1 if r > 0 and int(times[r - 1]) == ts else r
        return int(units[k]["msg_base_offset"]) if k < len(units) else -1

    # -- invariants ----------------------------------------------------------------------------

    def problems(self, commitlog_max_offset: int | None = None, *, contiguous: bool = True) -> list[RmqlabError]:
        """Every problem found (empty for a healthy queue), each naming file, offset and field.

        Checks: file names, sizes and contiguity; every unit of a file recover() takes as full
        valid; the unit ending the queue all zeros and nothing but zeros after it, no data in a
        file after the end's; message offsets contiguous (each base = the previous base + its
        batch size, as the store assigns them); commitlog offsets increasing; compacted_offset
        -1 and reserved 0 (what the store writes); with `commitlog_max_offset` every message
        inside the CommitLog. With `contiguous` False (a compaction store's SparseConsumeQueue, whose
        offsets have gaps) message offsets need only increase. Cost: O(queue), vectorized.
        """
        self._require_open()
        out = list(self._open_problems)
        full = self.mapped_file_size // UNIT_SIZE
        for s in self._live[:-1]:
            bad = np.flatnonzero(~_valid(s.units[:full]))
            if len(bad) or len(s.units) < full:
                pos = int(bad[0]) if len(bad) else len(s.units)
                out.append(self._err(s, pos, FormatError, "commitlog_offset",
                                     f"invalid unit in a file recover() takes as full ({len(bad)} such)"))
        if self._live:
            last = self._live[-1]
            pos = last.count
            if pos < len(last.units) and pos < full:
                raw = bytes(last.buf[pos * UNIT_SIZE:(pos + 1) * UNIT_SIZE])
                if any(raw):
                    out.append(self._err(last, pos, FormatError, "commitlog_offset",
                                         "the broker takes this unit as the end of the queue, but it is "
                                         "not a zero end marker"))
                tail = np.frombuffer(last.buf, dtype=np.uint8)[(pos + 1) * UNIT_SIZE:]
                nz = np.flatnonzero(tail)
                if len(nz):
                    at = ((pos + 1) * UNIT_SIZE + int(nz[0])) // UNIT_SIZE * UNIT_SIZE
                    out.append(CorruptIndexError(f"non-zero bytes after the end of the queue (message "
                                                 f"offset {self.max_offset})", path=last.file.path,
                                                 offset=at, field="unit"))
        for s in self._dirty:
            nz = np.flatnonzero(np.frombuffer(s.buf, dtype=np.uint8)) if len(s.buf) else np.empty(0, np.intp)
            if len(nz):
                out.append(CorruptIndexError("file starts after the end of the queue but holds data: the "
                                             "broker deletes it at restart (truncateDirtyFiles)",
                                             path=s.file.path, offset=int(nz[0]) // UNIT_SIZE * UNIT_SIZE,
                                             field="unit"))
        out += self._unit_problems(commitlog_max_offset, contiguous)
        return out

    def _unit_problems(self, commitlog_max_offset: int | None, contiguous: bool = True) -> list[RmqlabError]:
        out: list[RmqlabError] = []
        u = self.units
        if not len(u):
            return out

        def locate(k: int) -> tuple[_Segment, int]:
            for s in self._live:
                if k < s.count:
                    return s, k
                k -= s.count
            raise AssertionError("unit index past the end")

        def report(mask: np.ndarray, cls, fld: str, what: str) -> None:
            bad = np.flatnonzero(mask)
            if len(bad):
                s, pos = locate(int(bad[0]))
                out.append(self._err(s, pos, cls, fld, f"{what} ({len(bad)} such)"))

        base = u["msg_base_offset"].astype(np.int64)
        size = u["batch_size"].astype(np.int64)
        off = u["commitlog_offset"].astype(np.int64)
        gap = np.zeros(len(u), bool)
        if contiguous:
            gap[1:] = base[1:] != base[:-1] + size[:-1]
            report(gap, CorruptIndexError, "msg_base_offset",
                   "message offsets not contiguous: base is not the previous unit's base + batch size")
        else:
            gap[1:] = base[1:] < base[:-1] + size[:-1]
            report(gap, CorruptIndexError, "msg_base_offset",
                   "message offsets not increasing: base is below the previous unit's base + batch size")
        back = np.zeros(len(u), bool)
        back[1:] = off[1:] <= off[:-1]
        report(back, CorruptIndexError, "commitlog_offset", "commitlog offset not greater than the previous unit's")
        report(u["compacted_offset"] != INVALID_POS, FormatError, "compacted_offset",
               "compacted_offset is not INVALID_POS (-1), which the store always writes")
        report(u["reserved"] != 0, FormatError, "reserved", "reserved field is not 0")
        if commitlog_max_offset is not None:
            report(off + u["size"].astype(np.int64) > int(commitlog_max_offset), CorruptIndexError,
                   "commitlog_offset", f"message ends past the CommitLog's max offset {int(commitlog_max_offset)}")
        return out

    def _err(self, s: _Segment, pos: int, cls, fld: str, what: str) -> RmqlabError:
        value = ""
        if pos < len(s.units):
            value = f" ({fld} {int(s.units[pos][fld])})"
        return cls(f"unit {pos} of the file: {what}{value}", path=s.file.path,
                   offset=pos * UNIT_SIZE + UNIT.offset(fld), field=f"unit.{fld}")

    def check(self, commitlog_max_offset: int | None = None) -> None:
        """Raise the first of :meth:`problems`, if any. Cost: as :meth:`problems`.

        >>> import tempfile
        >>> BatchConsumeQueue.read(tempfile.mkdtemp()).check()
        """
        problems = self.problems(commitlog_max_offset)
        if problems:
            raise problems[0]

    # -- life cycle ----------------------------------------------------------------------------

    def _release(self) -> None:
        for s in self._all:
            s.units = np.zeros(0, UNIT.dtype)

    def __repr__(self) -> str:
        return (f"BatchConsumeQueue({str(self.folder)!r}, files={len(self._live)}, units={self.unit_count}, "
                f"min_offset={self.min_offset}, max_offset={self.max_offset})")


# ------------------------------------------------------------------------------------ writing


class BatchConsumeQueueWriter:
    """Append units to a queue folder as ``putBatchMessagePositionInfo`` does: files
    preallocated (zero-filled) and named by their byte offset, a full file rolls to the next,
    a repeat (commitlog offset <= the last one written) writes nothing."""

    def __init__(self, folder: Path, mapped_file_size: int, files: list[list[Any]], max_phy: int):
        self.folder = folder
        self.mapped_file_size = mapped_file_size
        self._files = files          # [path, start, bytes written]
        self.max_physic_offset = max_phy
        self._closed = False

    @classmethod
    def create(cls, folder: str | os.PathLike, *,
               mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE) -> BatchConsumeQueueWriter:
        """A writer for a new queue; `folder` is created if needed and must hold no files.

        >>> import tempfile
        >>> BatchConsumeQueueWriter.create(tempfile.mkdtemp()).max_physic_offset
        -1
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if any(not e.is_dir() for e in os.scandir(folder)):
            raise FileExistsError(f"{folder}: already holds files; use BatchConsumeQueueWriter.open")
        return cls(folder, _check_size(mapped_file_size), [], -1)

    @classmethod
    def open(cls, folder: str | os.PathLike, *,
             mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE) -> BatchConsumeQueueWriter:
        """Continue an existing queue from the state recover() rebuilds. Refuses (a typed
        error) a queue whose files are bad or hold data after the end.

        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> with BatchConsumeQueueWriter.create(d, mapped_file_size=92) as w:
        ...     _ = w.put(10, 100, 0, 1, 0, 1)
        >>> with BatchConsumeQueueWriter.open(d, mapped_file_size=92) as w:
        ...     w.put(10, 100, 0, 1, 1, 1), w.put(200, 100, 0, 2, 1, 4)
        ('duplicate', 'written')
        """
        folder = Path(folder)
        with BatchConsumeQueue.open(folder, mapped_file_size) as q:
            blocking = [p for p in q.problems() if p.field in ("unit", "unit.commitlog_offset")
                        and "end" in p.reason]
            if blocking:
                raise blocking[0]
            files = [[s.file.path, s.file.start, s.count * UNIT_SIZE] for s in q._live]
            max_phy = -1
            for s in reversed(q._live):
                if s.count:
                    max_phy = int(s.units[s.count - 1]["commitlog_offset"])
                    break
            return cls(folder, q.mapped_file_size, files, max_phy)

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.folder}: writer is closed")

    def _room(self) -> list[Any]:
        """getLastMappedFile(getMaxOffset()): the last file, or a new one when it is full."""
        size = self.mapped_file_size
        last = self._files[-1] if self._files else None
        if last is not None and last[2] + UNIT_SIZE <= size:
            return last
        start = 0 if last is None else last[1] + size
        path = self.folder / file_name(start)
        with open(path, "xb") as fh:
            fh.truncate(size)
        entry = [path, start, 0]
        self._files.append(entry)
        return entry

    def put(self, commitlog_offset: int, size: int, tags_code: int, store_time: int,
            msg_base_offset: int, batch_size: int) -> str:
        """One unit; returns "written" or "duplicate" (nothing written). Cost: one small write.

        >>> import tempfile
        >>> with BatchConsumeQueueWriter.create(tempfile.mkdtemp()) as w:
        ...     w.put(0, 100, 0, 1, 0, 3), w.put(0, 100, 0, 1, 3, 1)
        ('written', 'duplicate')

        Raises ValueError for a unit recover() would take as the end of the queue (a negative
        offset, base or size, a zero batch size) or a value that does not fit its field.
        """
        self._require_open()
        vals = [int(commitlog_offset), int(size), int(tags_code), int(store_time), int(msg_base_offset),
                int(batch_size)]
        off, sz, _, _, base, n = vals
        if off < 0 or not 0 < sz <= INT_MAX or base < 0 or not 0 < n <= _SHORT_MAX:
            raise ValueError(f"a unit needs commitlog_offset >= 0, 0 < size <= 2^31-1, msg_base_offset >= 0 "
                             f"and 0 < batch_size <= 32767, got {vals}")
        if off > LONG_MAX or base > LONG_MAX or not all(-LONG_MAX - 1 <= v <= LONG_MAX for v in vals[2:4]):
            raise ValueError(f"unit values do not fit Java longs: {vals}")
        if off <= self.max_physic_offset:
            return "duplicate"
        f = self._room()
        data = UNIT.pack(off, sz, vals[2], vals[3], base, n, INVALID_POS, 0)
        fd = os.open(f[0], os.O_WRONLY)
        try:
            os.pwrite(fd, data, f[2])
        finally:
            os.close(fd)
        f[2] += UNIT_SIZE
        self.max_physic_offset = off
        return "written"

    def put_many(self, commitlog_offsets: Any, sizes: Any, tags_codes: Any, store_times: Any,
                 msg_base_offsets: Any, batch_sizes: Any) -> int:
        """:meth:`put` for arrays, in order, one write per file; returns the units written.
        Cost: O(n), vectorized.

        >>> import tempfile
        >>> with BatchConsumeQueueWriter.create(tempfile.mkdtemp(), mapped_file_size=92) as w:
        ...     w.put_many([0, 50, 50, 90], [10] * 4, [0] * 4, [1] * 4, [0, 2, 4, 4], [2, 2, 1, 1])
        3
        """
        self._require_open()
        cols = [np.asarray(c, dtype=np.int64).reshape(-1) for c in
                (commitlog_offsets, sizes, tags_codes, store_times, msg_base_offsets, batch_sizes)]
        n = len(cols[0])
        if any(len(c) != n for c in cols):
            raise ValueError("the unit columns differ in length")
        if not n:
            return 0
        off, sz, _, _, base, bs = cols
        if off.min() < 0 or sz.min() <= 0 or sz.max() > INT_MAX or base.min() < 0 or bs.min() <= 0 \
                or bs.max() > _SHORT_MAX:
            raise ValueError("units need commitlog_offset >= 0, 0 < size <= 2^31-1, msg_base_offset >= 0 "
                             "and 0 < batch_size <= 32767")
        before = np.maximum.accumulate(np.concatenate([[self.max_physic_offset], off[:-1]]))
        keep = off > before
        rec = np.zeros(int(keep.sum()), dtype=UNIT.dtype)
        for name, c in zip(("commitlog_offset", "size", "tags_code", "store_time", "msg_base_offset",
                            "batch_size"), cols):
            rec[name] = c[keep]
        rec["compacted_offset"] = INVALID_POS
        data = rec.tobytes()
        pos = 0
        while pos < len(data):
            f = self._room()
            take = min(len(data) - pos, (self.mapped_file_size - f[2]) // UNIT_SIZE * UNIT_SIZE)
            fd = os.open(f[0], os.O_WRONLY)
            try:
                os.pwrite(fd, data[pos:pos + take], f[2])
            finally:
                os.close(fd)
            f[2] += take
            pos += take
        if len(rec):
            self.max_physic_offset = int(rec["commitlog_offset"][-1])
        return len(rec)

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(f[0] for f in self._files)

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> BatchConsumeQueueWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def batch_file_size(folder: str | os.PathLike, given: int | None = None) -> int:
    """mapperFileSizeBatchConsumeQueue: `given`, else the most common file size when it is a
    whole number of units, else the default."""
    if given is not None:
        return int(given)
    common = most_common(p.stat().st_size for p in Path(folder).iterdir() if p.is_file() and p.stat().st_size)
    return common if common and common % UNIT_SIZE == 0 else DEFAULT_MAPPED_FILE_SIZE
