"""RocketMQ's ConsumeQueue: the per-queue index of a topic, 20 bytes per message.

Mirrors ``org.apache.rocketmq.store.ConsumeQueue`` and the parts of ``MappedFileQueue`` /
``MappedFile`` it relies on (RocketMQ store module, read in 4.9.7 and 5.x up to 5.3.3). The
tags code a dispatched message gets is a dispatch rule: :mod:`rmqlab.rules.dispatch` computes it.

A queue is the folder ``consumequeue/<topic>/<queueId>/``. Its files are named by the
20-digit byte offset of their first unit in the queue's logical byte space (queue offset x 20)
and are preallocated to ``mappedFileSizeConsumeQueue`` bytes (default 300,000 units =
6,000,000 bytes), so the bytes after the last unit are zeros. A unit is::

    commitlog_offset  i64   where the message starts in the CommitLog
    size              i32   the message's TOTALSIZE
    tags_code         i64   String.hashCode(TAGS) sign-extended, or a delayed message's delivery time

Facts settled from the Java source (not guesses):

* **End of the queue.** ``recover()`` reads units while ``commitlog_offset >= 0 and size > 0``;
  the first other unit ends the queue. It starts at the third-newest file and assumes older
  files are full; files after the end are deleted at restart (``truncateDirtyFiles``).
* **Blank units.** The only filler the broker writes is ``fillPreBlank``: when the *first file
  ever created* for a queue receives a unit whose queue offset is not 0, the units before it in
  that file are written as ``(0, Integer.MAX_VALUE, 0)`` and ``minLogicOffset`` becomes that
  offset. A blank unit passes recover's validity test, so it counts towards the max offset.
* **No fill for gaps.** When the expected offset is *ahead* of the write position the broker
  only logs "[BUG]logic queue order maybe wrong" and appends at the write position anyway; when
  it is *behind*, it writes nothing ("Build consume queue repeatedly"); when
  ``offset + size <= maxPhysicOffset`` it writes nothing ("Maybe try to build consume queue
  repeatedly"). Queue offset 0 skips the logical check.
* **Tags code.** ``tagsString2tagsCode`` is ``TAGS.hashCode()`` (0 for null or ""), a Java int
  widened to long. For a message stored in ``SCHEDULE_TOPIC_XXXX`` with a ``DELAY`` property
  (clamped to the highest level) > 0, the code is ``storeTimestamp + delay(level)`` instead
  (:func:`rmqlab.rules.dispatch.message_tags_code`). Consumers match ``codeSet.contains((int) tagsCode)``:
  only the low 32 bits are compared.
* **Search by time.** 5.1.1+ (``BoundaryType`` LOWER/UPPER) picks the file by the store times
  of each file's first and last unit, then binary-searches it with corner cases first; 4.x to
  5.1.0 pick the file by its *file system modification time* and return the nearer of the two
  neighbours. From 5.0.0 the store clamps the answer to ``[minOffset, maxOffset]``.

Entry points, in the npTDMS manner:

* :meth:`ConsumeQueue.open` maps the files read-only (lazy: only the last files and the first
  file's leading units are touched to find the ends); :meth:`ConsumeQueue.read` loads every
  file into memory; :func:`read_queue_info` returns only the counts and offsets.
* :class:`ConsumeQueueWriter` appends units exactly as ``putMessagePositionInfo``.

>>> import tempfile
>>> from rmqlab.rules.dispatch import tags_code
>>> d = tempfile.mkdtemp()
>>> with ConsumeQueueWriter.create(d, mapped_file_size=100) as w:   # 5 units a file
...     [w.put(1000 * i, 172, tags_code("TagA"), i).status for i in range(3)]
['written', 'written', 'written']
>>> with ConsumeQueue.open(d, mapped_file_size=100) as q:
...     q.min_offset, q.max_offset, q.unit(2)
(0, 3, CqUnit(commitlog_offset=2000, size=172, tags_code=2598919))
"""
from __future__ import annotations

import mmap
import operator
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

from rmqlab.errors import (
    CorruptIndexError,
    FormatError,
    GeometryError,
    RmqlabError,
    TruncatedFileError,
)
from rmqlab.formats.consumequeue_ext import is_ext_addr_many
from rmqlab.formats.layout import Layout
from rmqlab.formats.mapped import MappedFolder, close_handles
from rmqlab.formats.storepaths import CONSUMEQUEUE
from rmqlab.jvm.hashcode import java_hash
from rmqlab.jvm.longs import INT_MAX, LONG_MAX, LONG_MIN, as_longs

__all__ = [
    "UNIT",
    "UNIT_SIZE",
    "DEFAULT_UNITS_PER_FILE",
    "DEFAULT_MAPPED_FILE_SIZE",
    "BLANK_UNIT",
    "EXT_ADDR_MAX",
    "STATUS_NAMES",
    "mapped_file_size_for",
    "filter_tags_codes",
    "file_name",
    "queue_dir",
    "delay_level_to_queue_id",
    "subscription_codes",
    "subscription_tags",
    "QueueFile",
    "QueueInfo",
    "ProbeStep",
    "TimeSearch",
    "ConsumeQueue",
    "read_queue_info",
    "PutResult",
    "ConsumeQueueWriter",
]

# ConsumeQueue.java: CQ_STORE_UNIT_SIZE = 20, "CommitLog Physical Offset(8) + Body Size(4) + Tag HashCode(8)"
UNIT = Layout("CqUnit", [
    ("commitlog_offset", "q", "CommitLog byte offset of the message; 0 in a pre-blank filler unit"),
    ("size", "i", "message size in bytes (TOTALSIZE); Integer.MAX_VALUE in a pre-blank filler unit"),
    ("tags_code", "q", "hashCode(TAGS) sign-extended; delivery time (ms) for SCHEDULE_TOPIC_XXXX; "
                       "a ConsumeQueueExt address when <= -2^31-1"),
])
UNIT_SIZE = UNIT.size
DEFAULT_UNITS_PER_FILE = 300_000                             # MessageStoreConfig: 300000 * 20
DEFAULT_MAPPED_FILE_SIZE = DEFAULT_UNITS_PER_FILE * UNIT_SIZE  # 6,000,000 bytes
#: ConsumeQueue.fillPreBlank writes this unit: putLong(0), putInt(Integer.MAX_VALUE), putLong(0).
BLANK_UNIT = (0, INT_MAX, 0)
_BLANK_BYTES = UNIT.pack(*BLANK_UNIT)
#: ConsumeQueueExt.MAX_ADDR = Integer.MIN_VALUE - 1L: tags codes <= this are ext-file addresses.
EXT_ADDR_MAX = -(2**31) - 1

_NAME_RE = re.compile(r"^[0-9]{20}$")
_UNIT_FIELD = {f.name: f for f in UNIT.fields}


def _jdiv(a: int, b: int) -> int:
    """Java long division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _flat(values: Any) -> Any:
    """put_many's columns as it always took them: an array of any shape flattened, a scalar as one
    unit, a list as given."""
    if isinstance(values, np.ndarray):
        return values.reshape(-1)
    return [values] if np.isscalar(values) else values


def mapped_file_size_for(configured: int) -> int:
    """The file size the broker really uses for a configured ``mappedFileSizeConsumeQueue``:
    rounded *up* to a whole number of 20-byte units (MessageStoreConfig.getMappedFileSizeConsumeQueue).

    >>> mapped_file_size_for(6_000_000), mapped_file_size_for(101)
    (6000000, 120)
    """
    configured = int(configured)
    if configured <= 0:
        raise ValueError(f"mapped_file_size must be positive, got {configured}")
    size = -(-configured // UNIT_SIZE) * UNIT_SIZE
    if size > INT_MAX:
        raise ValueError(f"mapped_file_size {size} does not fit a Java int")
    return size


def file_name(byte_offset: int) -> str:
    """UtilAll.offset2FileName: the 20-digit, zero-padded name of the file starting at `byte_offset`.

    >>> file_name(6_000_000)
    '00000000000006000000'
    """
    if byte_offset < 0:
        raise ValueError(f"file offset must be >= 0, got {byte_offset}")
    return f"{int(byte_offset):020d}"


def queue_dir(store_root: str | os.PathLike, topic: str, queue_id: int) -> Path:
    """``<store_root>/consumequeue/<topic>/<queue_id>`` (StorePathConfigHelper.getStorePathConsumeQueue)."""
    return Path(store_root) / CONSUMEQUEUE / topic / str(int(queue_id))


def delay_level_to_queue_id(delay_level: int) -> int:
    """ScheduleMessageService.delayLevel2QueueId: a delayed message waits in queue level - 1."""
    return int(delay_level) - 1


def subscription_codes(expression: str | Iterable[str] | None) -> set[int] | None:
    """The code set a TAG subscription matches (FilterAPI.buildSubscriptionData); None = all.

    A string is a subscription expression: "" or "*" match everything, otherwise it is split on
    ``||`` and each trimmed, non-empty tag contributes its hashCode. An iterable is a list of
    tags taken as they are.

    >>> sorted(subscription_codes("TagA || TagB")), subscription_codes("*")
    ([2598919, 2598920], None)
    """
    tags = subscription_tags(expression)
    return None if tags is None else {java_hash(t) for t in tags}


def subscription_tags(expression: str | Iterable[str] | None) -> set[str] | None:
    """The tag strings a TAG subscription names (FilterAPI.buildSubscriptionData's tagsSet),
    which the client compares with each pulled message's TAGS; None = all ("" or "*").

    >>> sorted(subscription_tags(" TagA ||TagB|| ")), subscription_tags("*")
    (['TagA', 'TagB'], None)
    """
    if expression is None:
        return None
    if isinstance(expression, str):
        if expression == "" or expression == "*":
            return None
        return {t.strip() for t in expression.split("||") if t.strip()}
    return set(expression)


def filter_tags_codes(tags_codes: Any, subscription: str | Iterable[str] | None, *, ext: Any = None) -> np.ndarray:
    """Which of these ConsumeQueue tagsCode values a TAG subscription lets through, as the
    broker decides without reading the message (ExpressionMessageFilter.isMatchedByConsumeQueue;
    the tags code it gets from DefaultMessageStore.getMessage, read at rocketmq-all-4.2.0,
    4.9.7 and 5.3.3): "*" / "" pass everything; else the code cut to a Java int
    (``Long.intValue``) must be in :func:`subscription_codes`. With `ext` (an open
    :class:`~rmqlab.formats.consumequeue_ext.ConsumeQueueExt`) an ext address is first replaced
    by the ext unit's tags code; an ext address that resolves to nothing passes, as the broker
    hands the filter a null tags code (the client re-checks the tag). Without `ext` the raw
    values are compared. Cost: O(values), plus O(values log ext units) with `ext`.

    >>> filter_tags_codes([java_hash("TagA"), java_hash("TagB")], "TagA || TagC").tolist()
    [True, False]
    """
    raw = np.asarray(tags_codes, dtype=np.int64).reshape(-1)
    codes = subscription_codes(subscription)
    if codes is None:
        return np.ones(len(raw), dtype=bool)
    resolved, unresolved = raw, np.zeros(len(raw), dtype=bool)
    if ext is not None:
        resolved, found = ext.resolve(raw)
        unresolved = is_ext_addr_many(raw) & ~found
    as_int = resolved.astype(np.int32)  # Long.intValue(): low 32 bits
    return np.isin(as_int, np.fromiter(codes, dtype=np.int32, count=len(codes))) | unresolved


# ------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class QueueFile:
    """One file of a queue: its path, the logical byte offset in its name, and its size."""

    path: Path
    start: int   # byte offset of its first unit in the queue's logical byte space (from the name)
    size: int    # bytes on disk

    @property
    def first_index(self) -> int:
        """Queue offset (unit number) of the file's first unit."""
        return self.start // UNIT_SIZE


@dataclass(frozen=True)
class QueueInfo:
    """What a queue folder holds, without its units (see :func:`read_queue_info`).

    ``first_offset`` is the first unit of the first file (its name / 20); ``min_offset`` skips
    the leading pre-blank units (``minLogicOffset / 20`` as the broker set it when it wrote
    them); ``max_offset`` is one past the last unit (getMaxOffsetInQueue).
    """

    folder: Path
    topic: str | None
    queue_id: int | None
    mapped_file_size: int
    files: tuple[QueueFile, ...]
    first_offset: int
    min_offset: int
    max_offset: int

    @property
    def count(self) -> int:
        """Units between min_offset and max_offset (getMessageTotalInQueue)."""
        return self.max_offset - self.min_offset

    @property
    def blank_units(self) -> int:
        return self.min_offset - self.first_offset


@dataclass(frozen=True)
class ProbeStep:
    """One unit the time search looked at."""

    phase: str             # "file-start", "file-stop", "last", "first", "search", "walk"
    queue_offset: int
    commitlog_offset: int
    store_time: int | None  # None: not read from the CommitLog (below min_phy_offset)


#: Why a time search answered what it did.
OUTCOMES = {
    "no-file": "no file to search (empty queue, or UPPER found no file starting at or before the time): 0",
    "empty-file": "the chosen file has no readable unit (selectMappedBuffer returned null): 0",
    "after-last": "the chosen file's last unit is older than the time",
    "before-first": "the chosen file's first searched unit is newer than the time",
    "exact": "a unit with exactly this store time (LOWER walks back, UPPER forward, over equal times)",
    "between": "no unit has this time; the boundary between an older and a newer unit",
    "nearest": "no unit has this time; the nearer of the older and newer neighbours (4.x-5.1.0)",
    "unreadable": "a probed message's store time could not be read (< 0): the broker answers 0",
}


@dataclass
class TimeSearch:
    """The answer of :meth:`ConsumeQueue.offset_by_time` and how it was reached.

    ``offset`` is what the store returns (clamped to [min, max] from 5.0.0); ``raw_offset`` is
    ConsumeQueue.getOffsetInQueueByTime's own answer. ``probes`` counts pickupStoreTimestamp
    calls (a blank filler unit's call is answered -1 without asking `store_time_of`);
    ``file_probes`` of them went to choosing the file (the broker caches those per file, so its
    later queries skip them). ``steps`` lists every unit looked at, in order.
    """

    timestamp: int
    boundary: str | None
    broker: str
    offset: int = 0
    raw_offset: int = 0
    outcome: str = ""
    file: Path | None = None
    probes: int = 0
    file_probes: int = 0
    steps: list[ProbeStep] = field(default_factory=list)

    @property
    def outcome_reason(self) -> str:
        return OUTCOMES[self.outcome]

    def __str__(self) -> str:
        lines = [f"offset_by_time({self.timestamp}, {self.boundary or 'nearest'}, broker {self.broker}) "
                 f"-> {self.offset} (raw {self.raw_offset}): {self.outcome} ({self.outcome_reason}); "
                 f"{self.probes} CommitLog reads, {self.file_probes} to choose {self.file}"]
        for s in self.steps:
            lines.append(f"  {s.phase:<10} unit {s.queue_offset:>12}  phy {s.commitlog_offset:>14}  "
                         f"store time {s.store_time}")
        return "\n".join(lines)


class _Segment:
    """One file's bytes (a read-only map, or bytes) and its unit view."""

    __slots__ = ("file", "buf", "units", "wrote")

    def __init__(self, file: QueueFile, buf):
        self.file = file
        self.buf = buf
        self.units = np.frombuffer(buf, dtype=UNIT.dtype, count=len(buf) // UNIT_SIZE) if len(buf) \
            else np.zeros(0, UNIT.dtype)
        self.wrote = 0  # bytes of units before the end (set once the end is known)


def _parse_folder(folder: Path) -> tuple[str | None, int | None]:
    try:
        qid = int(folder.name)
    except ValueError:
        return None, None
    return folder.parent.name or None, qid


def _list_files(folder: Path, size: int) -> tuple[list[QueueFile], list[Path], list[RmqlabError]]:
    """Files in name order, files ignored as the broker ignores them, and structural problems."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a ConsumeQueue folder")
    entries = sorted((e for e in os.scandir(folder) if not e.is_dir()), key=lambda e: e.name)
    files: list[QueueFile] = []
    ignored: list[Path] = []
    problems: list[RmqlabError] = []
    for i, e in enumerate(entries):
        path = Path(e.path)
        length = e.stat().st_size
        if not _NAME_RE.match(e.name):
            problems.append(FormatError(
                f"file name {e.name!r} is not a 20-digit offset (UtilAll.offset2FileName); the broker "
                f"cannot load it", path=path, offset=0, field="file name"))
            ignored.append(path)
            continue
        if length == 0 and i == len(entries) - 1:
            ignored.append(path)  # 5.x MappedFileQueue.doLoad deletes an empty last file
            continue
        files.append(QueueFile(path, int(e.name), length))
    prev = None
    for f in files:
        if f.size != size:
            cls = TruncatedFileError if f.size < size else GeometryError
            hint = ""
            if f.size % UNIT_SIZE == 0 and all(g.size == f.size for g in files):
                hint = (f"; every file is {f.size} bytes: pass mapped_file_size={f.size} "
                        f"(the broker's mappedFileSizeConsumeQueue)")
            problems.append(cls(
                f"file is {f.size} bytes, not the mapped file size {size} (the broker refuses to load "
                f"it){hint}", path=f.path, offset=f.size, field="file size"))
        if f.start % size:
            problems.append(FormatError(
                f"name {f.start} is not a multiple of the mapped file size {size}",
                path=f.path, offset=0, field="file name"))
        elif prev is not None and f.start != prev.start + size:
            what = "missing file(s) before it" if f.start > prev.start + size else "overlaps the previous file"
            problems.append(CorruptIndexError(
                f"starts at {f.start} but the previous file {prev.path.name} ends at {prev.start + size}: "
                f"{what} (MappedFileQueue.checkSelf)", path=f.path, offset=0, field="file name"))
        prev = f
    return files, ignored, problems


def _is_blank(units: np.ndarray) -> np.ndarray:
    return (units["commitlog_offset"] == 0) & (units["size"] == INT_MAX) & (units["tags_code"] == 0)


class ConsumeQueue(MappedFolder):
    """All files of one ``consumequeue/<topic>/<queueId>`` folder, read-only.

    Use :meth:`open` (memory maps) or :meth:`read` (into memory); also a context manager.
    Queue offsets are unit numbers in the queue (the numbers consumers commit), not byte offsets.

    Costs: open O(last files) (finds the end like recover(), vectorized); unit(i) O(1);
    :attr:`units` a view for one file, one copy for several; :meth:`problems` O(queue), vectorized;
    :meth:`offset_by_time` O(log units) CommitLog reads.
    """

    def __init__(self, folder: Path, mapped_file_size: int, segments: list[_Segment],
                 ignored: list[Path], problems: list[RmqlabError], handles: list,
                 topic: str | None, queue_id: int | None):
        self.folder = folder
        self.mapped_file_size = mapped_file_size
        self.topic = topic
        self.queue_id = queue_id
        self.ignored_files = tuple(ignored)
        self._all = segments
        self._open_problems = problems
        self._handles = handles
        self._units_cache: np.ndarray | None = None
        self._closed = False
        self._find_ends()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def open(cls, folder: str | os.PathLike, mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE, *,
             strict: bool = True, topic: str | None = None, queue_id: int | None = None) -> ConsumeQueue:
        """Map every file of the queue folder read-only (nothing is written, mtimes unchanged).

        `mapped_file_size` is the broker's ``mappedFileSizeConsumeQueue`` (rounded up to whole
        units as the broker does). With `strict` (the default) a file with a bad name or size,
        or a gap between files, raises a typed error naming the file; with ``strict=False`` the
        queue opens anyway and :meth:`problems` lists them. `topic` / `queue_id` default to the
        folder's parent name and name.
        """
        return cls._load(folder, mapped_file_size, strict, topic, queue_id, eager=False)

    @classmethod
    def read(cls, folder: str | os.PathLike, mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE, *,
             strict: bool = True, topic: str | None = None, queue_id: int | None = None) -> ConsumeQueue:
        """Like :meth:`open`, but read every file into memory and close them (eager)."""
        return cls._load(folder, mapped_file_size, strict, topic, queue_id, eager=True)

    @classmethod
    def _load(cls, folder, mapped_file_size, strict, topic, queue_id, eager):
        folder = Path(folder)
        size = mapped_file_size_for(mapped_file_size)
        files, ignored, problems = _list_files(folder, size)
        if strict and problems:
            raise problems[0]
        ftopic, fqid = _parse_folder(folder)
        segments: list[_Segment] = []
        handles: list[BinaryIO | mmap.mmap] = []
        try:
            for f in files:
                if eager:
                    segments.append(_Segment(f, f.path.read_bytes()))
                    continue
                fh = open(f.path, "rb")
                handles.append(fh)
                if f.size:
                    mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    handles.append(mapped)
                    segments.append(_Segment(f, mapped))
                else:
                    segments.append(_Segment(f, b""))
        except BaseException:
            segments.clear()   # their views of the maps would keep the maps from closing
            close_handles(handles)
            raise
        return cls(folder, size, segments, ignored, problems, handles,
                   topic if topic is not None else ftopic, queue_id if queue_id is not None else fqid)

    def _find_ends(self) -> None:
        """The queue's ends as the broker computes them after a restart (recover())."""
        segs, size = self._all, self.mapped_file_size
        if not segs:
            self._live: list[_Segment] = []
            self._dirty: list[_Segment] = []
            self.first_offset = self.min_offset = self.max_offset = 0
            return
        k0 = max(0, len(segs) - 3)
        end = segs[k0].file.start
        for k in range(k0, len(segs)):
            u = segs[k].units
            invalid = np.flatnonzero((u["commitlog_offset"] < 0) | (u["size"] <= 0))
            p = int(invalid[0]) if len(invalid) else len(u)
            end = segs[k].file.start + p * UNIT_SIZE
            if p * UNIT_SIZE != size:
                break
        self._live = [s for s in segs if s.file.start <= end]
        self._dirty = [s for s in segs if s.file.start > end]
        for s in self._live:
            s.wrote = min(size, end - s.file.start, len(s.units) * UNIT_SIZE)
        first = segs[0]   # live: the end lies at or after the file recover() starts from
        self.first_offset = first.file.start // UNIT_SIZE
        self.max_offset = end // UNIT_SIZE
        blank = _is_blank(first.units[:first.wrote // UNIT_SIZE])
        lead = int(np.argmin(blank)) if len(blank) and not blank.all() else len(blank)
        self.min_offset = self.first_offset + lead

    # -- metadata ------------------------------------------------------------------------

    @property
    def files(self) -> tuple[QueueFile, ...]:
        """The files the broker keeps after recover(): those starting at or before the end."""
        return tuple(s.file for s in self._live)

    @property
    def dirty_files(self) -> tuple[QueueFile, ...]:
        """Files starting after the end: the broker deletes them at restart (truncateDirtyFiles)."""
        return tuple(s.file for s in self._dirty)

    @property
    def info(self) -> QueueInfo:
        return QueueInfo(self.folder, self.topic, self.queue_id, self.mapped_file_size,
                         tuple(s.file for s in self._all), self.first_offset, self.min_offset,
                         self.max_offset)

    @property
    def count(self) -> int:
        """Units from min_offset to max_offset (getMessageTotalInQueue)."""
        return self.max_offset - self.min_offset

    def __len__(self) -> int:
        return self.count

    @property
    def blank_units(self) -> int:
        """Leading pre-blank filler units (fillPreBlank) before min_offset."""
        return self.min_offset - self.first_offset

    @property
    def units_per_file(self) -> int:
        return self.mapped_file_size // UNIT_SIZE

    # -- units -----------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.folder}: consume queue is closed")

    def _segment_of(self, index: int) -> tuple[_Segment, int]:
        """The live segment holding queue offset `index`, and the unit's position in it."""
        byte = index * UNIT_SIZE
        for s in reversed(self._live):
            if s.file.start <= byte:
                pos = byte - s.file.start
                if pos < s.wrote:
                    return s, pos // UNIT_SIZE
                break
        if self.first_offset <= index < self.max_offset:   # in range, yet in no file: a gap (strict=False)
            raise CorruptIndexError(f"queue offset {index} lies in a gap between the files: they are not "
                                    f"contiguous", path=self.folder, offset=0, field="file name")
        raise IndexError(f"queue offset {index} is not in the files ({self.first_offset}..{self.max_offset - 1})")

    def unit(self, index: int):
        """Unit at queue offset `index` (first_offset <= index < max_offset) as a named tuple.
        IndexError outside that range; CorruptIndexError for an offset in a gap between files
        (a queue opened with ``strict=False``)."""
        self._require_open()
        index = int(index)
        if not self.first_offset <= index < self.max_offset:
            raise IndexError(f"queue offset {index} outside {self.first_offset}..{self.max_offset - 1}")
        seg, pos = self._segment_of(index)
        return UNIT.unpack_from(seg.buf, pos * UNIT_SIZE)

    def segments(self) -> Iterator[tuple[int, np.ndarray]]:
        """(queue offset of the first unit, structured view) for each live file's written units,
        blank units included. Views of the map: no copy."""
        self._require_open()
        for s in self._live:
            yield s.file.first_index, s.units[:s.wrote // UNIT_SIZE]

    def raw_units(self, start: int | None = None, stop: int | None = None) -> np.ndarray:
        """Units with queue offsets in [start, stop) within [first_offset, max_offset), blank
        units included. A view when the range lies in one file, else a copy."""
        self._require_open()
        start = self.first_offset if start is None else max(int(start), self.first_offset)
        stop = self.max_offset if stop is None else min(int(stop), self.max_offset)
        if stop <= start:
            return np.zeros(0, UNIT.dtype)
        parts = []
        for first, view in self.segments():
            lo, hi = max(start, first), min(stop, first + len(view))
            if lo < hi:
                parts.append(view[lo - first:hi - first])
        if self._gaps():
            raise CorruptIndexError("the files are not contiguous: units cannot be laid out in one array",
                                    path=self.folder, offset=0, field="file name")
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, UNIT.dtype)

    def _gaps(self) -> bool:
        return any(b.file.start != a.file.start + self.mapped_file_size
                   for a, b in zip(self._live, self._live[1:]))

    @property
    def units(self) -> np.ndarray:
        """The queue's units, min_offset to max_offset (blank fillers excluded), as a structured
        array: element k is queue offset ``min_offset + k``. A view of the map for a one-file
        queue; one cached copy otherwise."""
        if self._units_cache is None:
            self._units_cache = self.raw_units(self.min_offset, self.max_offset)
        return self._units_cache

    @property
    def queue_offsets(self) -> np.ndarray:
        """int64 queue offsets aligned with :attr:`units` (so, like it, CorruptIndexError for files
        with gaps, whose min..max offset range may be far larger than the files)."""
        return np.arange(self.min_offset, self.min_offset + len(self.units), dtype=np.int64)

    def to_frame(self, start: int | None = None, stop: int | None = None):
        """Units from `start` to `stop` (default min_offset..max_offset) as a pandas DataFrame:
        queue_offset, commitlog_offset, size, tags_code."""
        import pandas as pd

        start = self.min_offset if start is None else int(start)
        stop = self.max_offset if stop is None else int(stop)
        u = self.raw_units(start, stop)
        first = max(start, self.first_offset)
        return pd.DataFrame({
            "queue_offset": np.arange(first, first + len(u), dtype=np.int64),
            "commitlog_offset": u["commitlog_offset"].astype(np.int64),
            "size": u["size"].astype(np.int32),
            "tags_code": u["tags_code"].astype(np.int64),
        })

    # -- tag filtering ---------------------------------------------------------------------

    def tag_mask(self, subscription: str | Iterable[str] | None, *, ext: Any = None) -> np.ndarray:
        """Which of :attr:`units` a TAG subscription lets through, as the broker decides from
        the ConsumeQueue alone (ExpressionMessageFilter.isMatchedByConsumeQueue): the unit's
        tags code cut to a Java int must be in :func:`subscription_codes` (all for "*" / "").

        With `ext` (the queue's open
        :class:`~rmqlab.formats.consumequeue_ext.ConsumeQueueExt`), a tagsCode holding an ext
        address is first replaced by the ext unit's tags code, as DefaultMessageStore.getMessage
        does (read at rocketmq-all-4.2.0); an address that points at no ext unit is let
        through, as the broker passes a null tags code (the client filters it).
        Without `ext` the raw values are compared.

        Hash collisions pass too (the client re-checks the tag string). Cost: O(units), plus
        O(units log ext units) with `ext`.

        >>> import tempfile
        >>> from rmqlab.formats.consumequeue_ext import ConsumeQueueExt, ConsumeQueueExtWriter
        >>> d, e = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> with ConsumeQueueExtWriter.create(e, mapped_file_size=840) as x:
        ...     addrs = x.put_many([java_hash("TagA"), java_hash("TagB")], [1, 2])
        >>> with ConsumeQueueWriter.create(d, mapped_file_size=100) as w:
        ...     _ = w.put_many([0, 172], [172, 172], addrs, [0, 1])
        >>> with ConsumeQueue.open(d, 100) as q, ConsumeQueueExt.open(e) as x:
        ...     q.tag_mask("TagA").tolist(), q.tag_mask("TagA", ext=x).tolist()
        ([False, False], [True, False])
        """
        return filter_tags_codes(self.units["tags_code"], subscription, ext=ext)

    def code_mask(self, codes: Iterable[int] | int, *, ext: Any = None) -> np.ndarray:
        """Which of :attr:`units` have a tags code (all 64 bits) in `codes`; with `ext` (the
        queue's open ConsumeQueueExt) ext addresses are compared by the tags code of the unit
        they point at (an unresolved address keeps its raw value). Cost: O(units), plus
        O(units log ext units) with `ext`.

        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> with ConsumeQueueWriter.create(d, mapped_file_size=100) as w:
        ...     _ = w.put_many([0, 172], [172, 172], [7, 8], [0, 1])
        >>> with ConsumeQueue.open(d, 100) as q:
        ...     q.code_mask(8).tolist()
        [False, True]
        """
        if isinstance(codes, (int, np.integer)):
            codes = [codes]
        want = np.asarray(list(codes), dtype=np.int64)
        have = self.units["tags_code"].astype(np.int64)
        if ext is not None:
            have = ext.resolve(have)[0]
        return np.isin(have, want)

    def resolved_tags_codes(self, ext: Any) -> tuple[np.ndarray, np.ndarray]:
        """The real tags code of each of :attr:`units`: a tagsCode holding a ConsumeQueueExt
        address (:func:`~rmqlab.formats.consumequeue_ext.is_ext_addr`) is replaced by the tags
        code of the ext unit it points at, as ConsumeQueue.getExt / the broker's message filter
        read it. `ext` is an open :class:`~rmqlab.formats.consumequeue_ext.ConsumeQueueExt` (or
        None: nothing resolves). Cost: O(units log ext units), vectorized.

        >>> import tempfile
        >>> from rmqlab.formats.consumequeue_ext import ConsumeQueueExt, ConsumeQueueExtWriter
        >>> d, e = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> with ConsumeQueueExtWriter.create(e, mapped_file_size=840) as x:
        ...     addrs = x.put_many([2567159, 2567159], [1, 2])
        >>> with ConsumeQueueWriter.create(d, mapped_file_size=100) as w:
        ...     _ = w.put_many([0, 172], [172, 172], addrs, [0, 1])
        >>> with ConsumeQueue.open(d, 100) as q, ConsumeQueueExt.open(e) as x:
        ...     codes, resolved = q.resolved_tags_codes(x)
        >>> codes.tolist(), resolved.tolist()
        ([2567159, 2567159], [True, True])

        Returns (int64 codes, bool mask of the units whose address resolved); an address that
        points at no ext unit start keeps its value and is False in the mask.
        """
        codes = self.units["tags_code"].astype(np.int64)
        if ext is None:
            return codes, np.zeros(len(codes), dtype=bool)
        return ext.resolve(codes)

    # -- search by time --------------------------------------------------------------------

    def offset_by_time(self, timestamp: int, store_time_of: Callable[[np.ndarray], np.ndarray], *,
                       boundary: Literal["lower", "upper"] = "lower",
                       broker: Literal["5", "5.0", "4"] = "5", min_phy_offset: int = 0,
                       min_logic_offset: int | None = None,
                       last_modified: Sequence[int] | None = None) -> TimeSearch:
        """DefaultMessageStore.getOffsetInQueueByTime: the queue offset for a store time (ms).

        `store_time_of(phy_offsets)` returns the store timestamps of the messages at those
        CommitLog offsets, and -1 (any negative) for a message it cannot read, as
        ``CommitLog.pickupStoreTimestamp`` does. Blank filler units are answered -1 without a call
        (their 2 GiB size never fits the CommitLog).

        `broker` picks the algorithm:

        * ``"5"`` (5.1.1+, the default): the file is chosen from its units' store times (LOWER:
          the first file whose last unit is at or after the time, else the newest; UPPER: the
          newest file whose first unit is at or before it). Then: last unit older than the time
          -> one past it (LOWER) or it (UPPER); first searched unit newer -> the file's first
          unit (LOWER) or 0 (UPPER); an exact store time -> the first (LOWER) or last (UPPER) unit
          with that time in the file; otherwise the first newer (LOWER) or last older (UPPER) unit.
        * ``"5.0"`` (5.0.0-5.1.0) and ``"4"`` (4.x): the file is the first whose modification time
          (`last_modified`, ms, default: the files' mtimes) is at or after the time, else the
          newest; binary search; an exact match is returned as found, otherwise the nearer of
          the two neighbours (ties go to the older one). `boundary` is ignored.

        From 5.0.0 the store clamps the answer to [min offset, max offset]. `min_phy_offset` is
        the CommitLog's min offset (units below it are skipped without reading the CommitLog);
        `min_logic_offset` defaults to :attr:`min_offset`. Cost: O(log units + files) reads.

        With broker "5", a `min_logic_offset` past the units of the file searched raises
        ValueError (the broker's search would throw) unless the file's last unit is older than
        the time (the broker answers from that unit before it reads at the min offset); the same
        from the default :attr:`min_offset`, which only files that disagree with each other
        produce, raises :class:`~rmqlab.errors.CorruptIndexError`.
        """
        self._require_open()
        if broker not in ("5", "5.0", "4"):
            raise ValueError(f"broker must be '5', '5.0' or '4', got {broker!r}")
        side = boundary.lower() if isinstance(boundary, str) else boundary  # BoundaryType.getType
        if broker == "5" and side not in ("lower", "upper"):
            raise ValueError(f"boundary must be 'lower' or 'upper', got {side!r}")
        timestamp = int(timestamp)
        min_logic = self.min_offset if min_logic_offset is None else int(min_logic_offset)
        res = TimeSearch(timestamp, side if broker == "5" else None, broker)
        probe = _Prober(store_time_of, res)
        if broker == "5":
            seg = self._file_by_store_time(timestamp, side, probe)
            res.file_probes = res.probes
            raw = self._search_5(seg, timestamp, side, probe, min_phy_offset, min_logic, res,
                                 min_logic_given=min_logic_offset is not None)
        else:
            seg = self._file_by_mtime(timestamp, last_modified)
            raw = self._search_4(seg, timestamp, probe, min_phy_offset, min_logic, res)
        res.raw_offset = raw
        res.file = seg.file.path if seg is not None else None
        res.offset = raw if broker == "4" else min(max(raw, min_logic), self.max_offset)
        return res

    def _file_by_store_time(self, ts: int, boundary: str, probe: _Prober) -> _Segment | None:
        live = self._live
        n = len(live)
        if not n:
            return None
        starts, stops = [-1] * n, [-1] * n
        asks = []  # (segment index, "start"/"stop", unit position), in the broker's order
        for i in range(n - 1, -1, -1):
            if live[i].wrote >= UNIT_SIZE:  # selectMappedBuffer(0, 20) needs 20 readable bytes
                asks.append((i, "file-start", 0))
            last_pos = self.mapped_file_size // UNIT_SIZE - 1
            if i < n - 1 and last_pos < len(live[i].units):
                asks.append((i, "file-stop", last_pos))
        times = probe.many([(live[i], pos, phase) for i, phase, pos in asks])
        for (i, phase, _), t in zip(asks, times):
            if t > 0:
                (starts if phase == "file-start" else stops)[i] = t
        if boundary == "lower":
            for i in range(n - 1):
                if stops[i] >= ts:
                    return live[i]
            return live[n - 1]
        for i in range(n - 1, -1, -1):
            if starts[i] <= ts:
                return live[i]
        return None

    def _file_by_mtime(self, ts: int, last_modified: Sequence[int] | None) -> _Segment | None:
        live = self._live
        if not live:
            return None
        if last_modified is None:
            last_modified = [os.stat(s.file.path).st_mtime_ns // 1_000_000 for s in live]
        if len(last_modified) != len(live):
            raise ValueError(f"last_modified has {len(last_modified)} values for {len(live)} files")
        for s, lm in zip(live, last_modified):
            if int(lm) >= ts:
                return s
        return live[-1]

    def _search_5(self, seg, ts, boundary, probe, min_phy, min_logic, res, *,
                  min_logic_given: bool = True) -> int:
        if seg is None:
            res.outcome = "no-file"
            return 0
        start, size = seg.file.start, self.mapped_file_size
        min_logic_bytes = min_logic * UNIT_SIZE
        low = min_logic_bytes - start if min_logic_bytes > start else 0
        rng = size if seg.wrote in (0, size) else seg.wrote
        if rng > seg.wrote:  # selectMappedBuffer(0, range) needs range <= readPosition
            res.outcome = "empty-file"
            return 0
        ceiling = rng - UNIT_SIZE
        floor = low
        lower = boundary == "lower"
        if ceiling >= 0:   # (below 0, files that disagree: position(ceiling) throws first)
            t = probe.one(seg, ceiling // UNIT_SIZE, "last")
            if t < ts:
                res.outcome = "after-last"
                return (start + ceiling + (UNIT_SIZE if lower else 0)) // UNIT_SIZE
        # the broker reads the unit at `floor` only now: past the buffer's limit, the read throws
        if floor > ceiling:
            if min_logic_given:
                raise ValueError(f"min_logic_offset {min_logic} lies past the units of {seg.file.path}: "
                                 f"the broker's search would throw")
            raise CorruptIndexError(f"the queue's min offset {min_logic} lies past the {seg.wrote // UNIT_SIZE} "
                                    f"units of this file, the one the search picked: the files disagree (the "
                                    f"broker's search would throw)", path=seg.file.path, offset=seg.wrote,
                                    field="unit")
        t = probe.one(seg, floor // UNIT_SIZE, "first")
        if t > ts:
            res.outcome = "before-first"
            return start // UNIT_SIZE if lower else 0
        high, target, left, right = ceiling, -1, -1, -1
        while high >= low:
            mid = (low + high) // (2 * UNIT_SIZE) * UNIT_SIZE
            phy = int(seg.units[mid // UNIT_SIZE]["commitlog_offset"])
            if phy < min_phy:
                probe.skip(seg, mid // UNIT_SIZE)
                low, left = mid + UNIT_SIZE, mid
                continue
            t = probe.one(seg, mid // UNIT_SIZE, "search")
            if t < 0:
                res.outcome = "unreadable"
                return 0
            if t == ts:
                target = mid
                break
            if t > ts:
                high, right = mid - UNIT_SIZE, mid
            else:
                low, left = mid + UNIT_SIZE, mid
        if target != -1:
            res.outcome = "exact"
            step = -UNIT_SIZE if lower else UNIT_SIZE
            offset = target
            while True:
                attempt = offset + step
                if attempt < floor or attempt > ceiling:
                    break
                if probe.one(seg, attempt // UNIT_SIZE, "walk") != ts:
                    break
                offset = attempt
        else:
            res.outcome = "between"
            offset = right if lower else left
        return _jdiv(start + offset, UNIT_SIZE)

    def _search_4(self, seg, ts, probe, min_phy, min_logic, res) -> int:
        if seg is None:
            res.outcome = "no-file"
            return 0
        start = seg.file.start
        min_logic_bytes = min_logic * UNIT_SIZE
        low = min_logic_bytes - start if min_logic_bytes > start else 0
        if seg.wrote <= 0:  # selectMappedBuffer(0) needs 0 < readPosition
            res.outcome = "empty-file"
            return 0
        high = seg.wrote - UNIT_SIZE
        target = left = right = -1
        left_value = right_value = -1
        while high >= low:
            mid = (low + high) // (2 * UNIT_SIZE) * UNIT_SIZE
            phy = int(seg.units[mid // UNIT_SIZE]["commitlog_offset"])
            if phy < min_phy:
                probe.skip(seg, mid // UNIT_SIZE)
                low, left = mid + UNIT_SIZE, mid
                continue
            t = probe.one(seg, mid // UNIT_SIZE, "search")
            if t < 0:
                res.outcome = "unreadable"
                return 0
            if t == ts:
                target = mid
                break
            if t > ts:
                high, right, right_value = mid - UNIT_SIZE, mid, t
            else:
                low, left, left_value = mid + UNIT_SIZE, mid, t
        if target != -1:
            res.outcome = "exact"
            offset = target
        else:
            res.outcome = "nearest"
            if left_value == -1:
                offset = right
            elif right_value == -1:
                offset = left
            else:
                offset = right if abs(ts - left_value) > abs(ts - right_value) else left
        return _jdiv(start + offset, UNIT_SIZE)

    # -- invariants ------------------------------------------------------------------------

    def problems(self, commitlog_max_offset: int | None = None) -> list[RmqlabError]:
        """Every problem found (empty for a healthy queue), each naming file, byte offset, field.

        Checks: file names and sizes (see :meth:`open`); every unit before the end valid
        (commitlog_offset >= 0, size > 0); the unit that ends the queue all zeros (not a negative
        offset or size); nothing but zeros after it, and no non-empty file after the end's file;
        blank filler units only before min_offset; commitlog offsets strictly increasing and
        messages not overlapping; with `commitlog_max_offset`, every message inside the
        CommitLog (offset + size <= max). Cost: O(queue), vectorized.
        """
        self._require_open()
        out = list(self._open_problems) + self._end_problems()
        if not self._gaps():
            out += self._unit_problems(commitlog_max_offset)
        return out

    def _end_problems(self) -> list[RmqlabError]:
        """Invalid units before the end, a non-zero end marker, data after the end."""
        out: list[RmqlabError] = []
        for s in self._live:  # files recover() assumed full, and the valid prefix of the last
            u = s.units[:s.wrote // UNIT_SIZE]
            bad = np.flatnonzero((u["commitlog_offset"] < 0) | (u["size"] <= 0))
            if len(bad):
                out.append(self._unit_error(s, int(bad[0]), FormatError, len(bad),
                                            "invalid unit before the end (recover() assumed this file full)"))
        last = self._live[-1] if self._live else None
        if last is not None and last.wrote < len(last.units) * UNIT_SIZE:
            pos = last.wrote // UNIT_SIZE
            u = last.units[pos]
            if any(int(u[f]) != 0 for f in ("commitlog_offset", "size", "tags_code")):
                out.append(self._unit_error(last, pos, FormatError, 1,
                                            "the broker takes this unit as the end of the queue, "
                                            "but it is not a zero end marker"))
            tail = np.frombuffer(last.buf, dtype=np.uint8)[(pos + 1) * UNIT_SIZE:]
            nz = np.flatnonzero(tail)
            if len(nz):
                off = ((pos + 1) * UNIT_SIZE + int(nz[0])) // UNIT_SIZE * UNIT_SIZE
                out.append(CorruptIndexError(
                    f"non-zero bytes after the end of the queue (queue offset {self.max_offset}): "
                    f"the broker would overwrite them", path=last.file.path, offset=off, field="unit"))
        for s in self._dirty:
            nz = np.flatnonzero(np.frombuffer(s.buf, dtype=np.uint8)) if len(s.buf) else np.empty(0, np.intp)
            if len(nz):
                out.append(CorruptIndexError(
                    f"file starts after the end of the queue (queue offset {self.max_offset}) but "
                    f"holds data: the broker deletes it at restart (truncateDirtyFiles)",
                    path=s.file.path, offset=int(nz[0]) // UNIT_SIZE * UNIT_SIZE, field="unit"))
        return out

    def max_message_end(self) -> int | None:
        """The largest commitlog_offset + size of the queue's real units (from min_offset on,
        no blank filler): what :meth:`problems` holds against `commitlog_max_offset` (a problem
        only where this is past it). None where no unit is judged: none, or the queue has gaps.
        Cost: O(queue), vectorized."""
        return self.problems_and_message_end()[1]

    def problems_and_message_end(self) -> tuple[list[RmqlabError], int | None]:
        """``problems()`` without the CommitLog's end, and :meth:`max_message_end`, in one pass
        over the units: for a caller that learns the CommitLog's end later (the problem
        ``problems(end)`` adds is there exactly when the message end is past it). Cost: as
        :meth:`problems`."""
        self._require_open()
        out = list(self._open_problems) + self._end_problems()
        if self._gaps():
            return out, None
        found, message_end = self._unit_checks(None)
        return out + found, message_end

    def _unit_problems(self, commitlog_max_offset: int | None) -> list[RmqlabError]:
        return self._unit_checks(commitlog_max_offset)[0]

    def _unit_checks(self, commitlog_max_offset: int | None) -> tuple[list[RmqlabError], int | None]:
        out: list[RmqlabError] = []
        first = self.first_offset
        raw = self.raw_units(first, self.max_offset)
        blank = _is_blank(raw)
        lead = self.min_offset - first
        later_blank = np.flatnonzero(blank[lead:])
        if len(later_blank):
            out.append(self._error_at(lead + int(later_blank[0]), CorruptIndexError, "unit", len(later_blank),
                                      "blank filler unit (0, Integer.MAX_VALUE, 0) after the queue's "
                                      "first real unit (the broker only writes them before it)"))
        real = np.flatnonzero(~blank)
        real = real[real >= lead]
        off = raw["commitlog_offset"][real].astype(np.int64)
        sz = raw["size"][real].astype(np.int64)
        if len(real) > 1:
            not_increasing = np.flatnonzero(off[1:] <= off[:-1])
            if len(not_increasing):
                out.append(self._error_at(int(real[not_increasing[0] + 1]), CorruptIndexError,
                                          "commitlog_offset", len(not_increasing),
                                          "commitlog offset not greater than the previous unit's"))
            overlap = np.flatnonzero((off[1:] > off[:-1]) & (off[1:] < off[:-1] + sz[:-1]))
            if len(overlap):
                out.append(self._error_at(int(real[overlap[0] + 1]), CorruptIndexError,
                                          "commitlog_offset", len(overlap),
                                          "message starts inside the previous unit's message"))
        ends = off + sz
        if commitlog_max_offset is not None and len(real):
            outside = np.flatnonzero(ends > int(commitlog_max_offset))
            if len(outside):
                out.append(self._error_at(int(real[outside[0]]), CorruptIndexError, "commitlog_offset",
                                          len(outside), f"message ends past the CommitLog's max offset "
                                                        f"{int(commitlog_max_offset)}"))
        return out, int(ends.max()) if len(ends) else None

    def _error_at(self, k: int, cls, fld: str, count: int, what: str) -> RmqlabError:
        """An error for raw unit k (counted from first_offset)."""
        index = self.first_offset + k
        seg, pos = self._segment_of(index)
        return self._unit_error(seg, pos, cls, count, what, fld)

    def _unit_error(self, seg: _Segment, pos: int, cls, count: int, what: str, fld: str | None = None):
        u = seg.units[pos]
        if fld is None:
            fld = "commitlog_offset" if u["commitlog_offset"] < 0 else "size"
        extra = _UNIT_FIELD[fld].offset if fld in _UNIT_FIELD else 0
        value = f" ({fld} {int(u[fld])})" if fld in _UNIT_FIELD else ""
        return cls(f"queue offset {seg.file.first_index + pos}: {what}{value} ({count} such)",
                   path=seg.file.path, offset=pos * UNIT_SIZE + extra,
                   field=f"unit.{fld}" if fld in _UNIT_FIELD else fld)

    def check(self, commitlog_max_offset: int | None = None) -> None:
        """Raise the first of :meth:`problems` (a typed :class:`~rmqlab.errors.RmqlabError`)."""
        problems = self.problems(commitlog_max_offset)
        if problems:
            raise problems[0]

    # -- life cycle ------------------------------------------------------------------------

    def _release(self) -> None:
        self._units_cache = None
        for s in self._all:
            s.units = np.zeros(0, UNIT.dtype)

    def __repr__(self) -> str:
        return (f"ConsumeQueue({str(self.folder)!r}, topic={self.topic!r}, queue_id={self.queue_id}, "
                f"files={len(self._live)}, min_offset={self.min_offset}, max_offset={self.max_offset})")


class _Prober:
    """Reads store times through the caller's function and records each read."""

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], res: TimeSearch):
        self.fn = fn
        self.res = res

    def many(self, asks: list[tuple[_Segment, int, str]]) -> list[int]:
        units = [s.units[pos] for s, pos, _ in asks]
        blank = [bool(_is_blank(u)) for u in units]
        phys = np.array([int(u["commitlog_offset"]) for u, b in zip(units, blank) if not b], dtype=np.int64)
        got: Iterator[int] = iter([])
        if len(phys):
            times = np.asarray(self.fn(phys)).astype(np.int64, copy=False).reshape(-1)
            if len(times) != len(phys):
                raise ValueError(f"store_time_of returned {len(times)} times for {len(phys)} offsets")
            got = iter(times.tolist())
        out = []
        for (s, pos, phase), u, b in zip(asks, units, blank):
            t = -1 if b else int(next(got))
            self.res.probes += 1
            self.res.steps.append(ProbeStep(phase, s.file.first_index + pos, int(u["commitlog_offset"]), t))
            out.append(t)
        return out

    def one(self, seg: _Segment, pos: int, phase: str) -> int:
        return self.many([(seg, pos, phase)])[0]

    def skip(self, seg: _Segment, pos: int) -> None:
        self.res.steps.append(ProbeStep("search", seg.file.first_index + pos,
                                        int(seg.units[pos]["commitlog_offset"]), None))


def read_queue_info(folder: str | os.PathLike, mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE, *,
                    strict: bool = True) -> QueueInfo:
    """Only the queue's files, first/min/max offsets and unit count. Cost: a directory listing
    and a scan of the last (at most three) files and the first file's leading units.

    >>> import tempfile
    >>> read_queue_info(tempfile.mkdtemp()).count
    0
    """
    with ConsumeQueue.open(folder, mapped_file_size, strict=strict) as q:
        return q.info


# ------------------------------------------------------------------------------ writing

#: put_many status codes -> names (PutResult.status).
STATUS_NAMES = ("written", "out-of-order", "duplicate-physical", "duplicate-logical")
_WRITTEN, _OUT_OF_ORDER, _DUP_PHYSICAL, _DUP_LOGICAL = range(4)


@dataclass(frozen=True)
class PutResult:
    """What one putMessagePositionInfo call did.

    status: ``written`` (at its queue offset), ``out-of-order`` (written, but at the write
    position rather than the expected offset: the broker logs "[BUG]logic queue order maybe
    wrong" when the expected offset is ahead; with queue offset 0 it does not check at all),
    ``duplicate-physical`` (offset + size <= maxPhysicOffset: nothing written) or
    ``duplicate-logical`` (the expected offset is behind the write position: nothing written).
    """

    status: str
    queue_offset: int | None  # where the unit landed; None when nothing was written
    blank_units: int = 0      # pre-blank filler units written before it
    created_file: Path | None = None

    @property
    def written(self) -> bool:
        return self.queue_offset is not None


class _WFile:
    __slots__ = ("path", "start", "wrote", "first_create")

    def __init__(self, path: Path, start: int, wrote: int, first_create: bool):
        self.path, self.start, self.wrote, self.first_create = path, start, wrote, first_create


class ConsumeQueueWriter:
    """Append units to a queue folder exactly as ConsumeQueue.putMessagePositionInfo does.

    Files are created preallocated (zero-filled, ``mapped_file_size`` bytes) and named by their
    logical byte offset; a full file rolls to the next. Bytes already written are never
    rewritten. Use :meth:`create` for a new queue and :meth:`open` to continue an existing one
    (its state recovered as recover() does). Also a context manager.
    """

    def __init__(self, folder: Path, mapped_file_size: int, files: list[_WFile], max_physic_offset: int,
                 min_logic_offset: int):
        self.folder = folder
        self.mapped_file_size = mapped_file_size
        self._files = files
        self.max_physic_offset = max_physic_offset
        self._min_logic_offset = min_logic_offset
        self._fd: int | None = None
        self._fd_path: Path | None = None
        self._touched: set[Path] = set()
        self._closed = False

    @classmethod
    def create(cls, folder: str | os.PathLike, *,
               mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE) -> ConsumeQueueWriter:
        """A writer for a new queue; `folder` is created if needed and must hold no files."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if any(not e.is_dir() for e in os.scandir(folder)):
            raise FileExistsError(f"{folder}: already holds files; use ConsumeQueueWriter.open")
        return cls(folder, mapped_file_size_for(mapped_file_size), [], -1, 0)

    @classmethod
    def open(cls, folder: str | os.PathLike, *,
             mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE) -> ConsumeQueueWriter:
        """Continue an existing queue after the state recover() rebuilds: the write position is
        the end of the queue and maxPhysicOffset the last unit's offset + size.

        Refuses (a typed error) a queue with structural problems or with data after its end:
        the broker would truncate or overwrite it, and this writer never rewrites bytes.
        """
        folder = Path(folder)
        with ConsumeQueue.open(folder, mapped_file_size) as q:
            blocking = [p for p in q._end_problems() if p.field == "unit" or "end marker" in p.reason]
            if blocking:
                raise blocking[0]
            files = [_WFile(s.file.path, s.file.start, s.wrote, False) for s in q._live]
            max_phys = -1
            k0 = max(0, len(q._all) - 3)
            window = [s for s in q._all[k0:] if s in q._live]
            for s in reversed(window):
                n = s.wrote // UNIT_SIZE
                if n:
                    u = s.units[n - 1]
                    max_phys = int(u["commitlog_offset"]) + int(u["size"])
                    break
            return cls(folder, q.mapped_file_size, files, max_phys, q.min_offset * UNIT_SIZE)

    # -- state -------------------------------------------------------------------------------

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(f.path for f in self._files)

    @property
    def max_offset(self) -> int:
        """One past the last unit written (getMaxOffsetInQueue)."""
        if not self._files:
            return 0
        last = self._files[-1]
        return (last.start + last.wrote) // UNIT_SIZE

    @property
    def min_offset(self) -> int:
        """minLogicOffset / 20: the first real unit (after any pre-blank units)."""
        return self._min_logic_offset // UNIT_SIZE

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.folder}: writer is closed")

    # -- MappedFileQueue.getLastMappedFile(startOffset) --------------------------------------------

    def _last_file(self, expect_bytes: int) -> tuple[_WFile, Path | None]:
        size = self.mapped_file_size
        last = self._files[-1] if self._files else None
        if last is not None and last.wrote != size:
            return last, None
        create = expect_bytes - expect_bytes % size if last is None else last.start + size
        path = self.folder / file_name(create)
        with open(path, "xb") as fh:  # MappedFile maps fileSize bytes: a zero-filled file
            fh.truncate(size)
        f = _WFile(path, create, 0, first_create=not self._files)
        self._files.append(f)
        return f, path

    def _write(self, f: _WFile, data: bytes) -> None:
        if self._fd is None or self._fd_path != f.path:
            if self._fd is not None:
                os.close(self._fd)
            self._fd = os.open(f.path, os.O_WRONLY)
            self._fd_path = f.path
        assert f.wrote + len(data) <= self.mapped_file_size
        os.pwrite(self._fd, data, f.wrote)
        f.wrote += len(data)
        self._touched.add(f.path)

    # -- putMessagePositionInfo ------------------------------------------------------------

    def put(self, commitlog_offset: int, size: int, tags_code: int, queue_offset: int) -> PutResult:
        """One unit, as ConsumeQueue.putMessagePositionInfo(offset, size, tagsCode, cqOffset).

        Cost: O(1), one small write (plus a file creation when the last file is full).
        Use :meth:`put_many` for arrays.
        """
        self._require_open()
        # operator.index, not int(): a float or a numeric string is refused, not truncated
        offset, size, code, cq = (operator.index(commitlog_offset), operator.index(size), operator.index(tags_code),
                                  operator.index(queue_offset))
        if offset < 0 or size <= 0 or size > INT_MAX:
            raise ValueError(f"a unit needs commitlog_offset >= 0 and 0 < size <= 2^31-1, got "
                             f"{offset}, {size} (the broker would read it as the end of the queue)")
        if not LONG_MIN <= code <= LONG_MAX:
            raise ValueError(f"tags_code {code} does not fit in a Java long")
        if cq < 0 or cq * UNIT_SIZE > LONG_MAX or offset + size > LONG_MAX:
            raise ValueError(f"queue_offset {cq} / commitlog_offset {offset} out of range")
        if offset + size <= self.max_physic_offset:
            return PutResult("duplicate-physical", None)
        expect = cq * UNIT_SIZE
        f, created = self._last_file(expect)
        blanks = 0
        if f.first_create and cq != 0 and f.wrote == 0:
            self._min_logic_offset = expect
            until = expect % self.mapped_file_size
            blanks = until // UNIT_SIZE + (1 if until % UNIT_SIZE else 0)
            if blanks:
                self._write(f, _BLANK_BYTES * blanks)
        status = "written"
        if cq != 0:
            current = f.wrote + f.start
            if expect < current:
                return PutResult("duplicate-logical", None, blanks, created)
            if expect != current:
                status = "out-of-order"
        elif f.start + f.wrote != 0:
            status = "out-of-order"
        self.max_physic_offset = offset + size
        landed = (f.start + f.wrote) // UNIT_SIZE
        self._write(f, UNIT.pack(offset, size, code))
        return PutResult(status, landed, blanks, created)

    def put_many(self, commitlog_offsets: Any, sizes: Any, tags_codes: Any,
                 queue_offsets: Any | None = None) -> np.ndarray:
        """:meth:`put` for arrays of units, in order; returns an int8 status code per unit
        (indexes into :data:`STATUS_NAMES`). `queue_offsets` defaults to consecutive offsets
        from the current max offset.

        Runs of units that continue the queue (consecutive queue offsets, each message ending
        after the previous one) are written in bulk, one write per file; anything else goes
        through :meth:`put` one unit at a time. The bytes are the same either way.
        """
        self._require_open()
        # refused, not wrapped or truncated, as put refuses them: a uint64 code past Long.MAX_VALUE, a float
        off = as_longs("commitlog_offsets", _flat(commitlog_offsets))
        sz = as_longs("sizes", _flat(sizes))
        codes = as_longs("tags_codes", _flat(tags_codes))
        n = len(off)
        cq = (np.arange(self.max_offset, self.max_offset + n, dtype=np.int64) if queue_offsets is None
              else as_longs("queue_offsets", _flat(queue_offsets)))
        if not (len(sz) == len(codes) == len(cq) == n):
            raise ValueError("commitlog_offsets, sizes, tags_codes and queue_offsets differ in length")
        if n and (off.min() < 0 or sz.min() <= 0 or sz.max() > INT_MAX or cq.min() < 0):
            raise ValueError("units need commitlog_offset >= 0, 0 < size <= 2^31-1, queue_offset >= 0")
        status = np.zeros(n, dtype=np.int8)
        ends = off + sz
        i = 0
        while i < n:
            cur = self.max_offset
            # (a unit due pre-blank fillers -- the first unit of a new queue at a queue offset
            # other than 0 -- never sits at the write position 0, so put() takes it)
            if cq[i] == cur and ends[i] > self.max_physic_offset:
                # the longest run from i that puts would write in place: consecutive queue
                # offsets, each message ending after the previous one (scanned in windows)
                k = i + 1
                while k < n:
                    w = min(n, k + 65536)
                    breaks = np.flatnonzero((cq[k:w] != cur + np.arange(k - i, w - i))
                                            | (ends[k:w] <= ends[k - 1:w - 1]))
                    if len(breaks):
                        k += int(breaks[0])
                        break
                    k = w
                self._bulk(off[i:k], sz[i:k], codes[i:k])
                i = k
                continue
            r = self.put(int(off[i]), int(sz[i]), int(codes[i]), int(cq[i]))
            status[i] = STATUS_NAMES.index(r.status)
            i += 1
        return status

    def _bulk(self, off: np.ndarray, sz: np.ndarray, codes: np.ndarray) -> None:
        rec = np.empty(len(off), dtype=UNIT.dtype)
        rec["commitlog_offset"], rec["size"], rec["tags_code"] = off, sz, codes
        data = rec.tobytes()
        pos = 0
        while pos < len(data):
            f, _ = self._last_file(self.max_offset * UNIT_SIZE)
            take = min(len(data) - pos, self.mapped_file_size - f.wrote)
            self._write(f, data[pos:pos + take])
            pos += take
        self.max_physic_offset = int(off[-1]) + int(sz[-1])

    # -- life cycle ------------------------------------------------------------------------

    def flush(self) -> None:
        """Force the written files to disk (MappedFile.flush)."""
        for p in sorted(self._touched):
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._touched.clear()

    def close(self, sync: bool = False) -> None:
        if self._closed:
            return
        if sync:
            self.flush()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._closed = True

    def __enter__(self) -> ConsumeQueueWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"ConsumeQueueWriter({str(self.folder)!r}, files={len(self._files)}, "
                f"max_offset={self.max_offset}, max_physic_offset={self.max_physic_offset})")
