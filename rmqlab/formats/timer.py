"""RocketMQ 5.x's timer store: the wheel, the timer log and the timer checkpoint.

Mirrors ``org.apache.rocketmq.store.timer`` (RocketMQ store module, read at rocketmq-all-5.0.0
and 5.3.3, commit 29d90a4ff96c04c094039685a6106870c58a7e40, and in the 5.5.0 jar's bytecode):
``Slot``, ``TimerWheel``, ``TimerLog``, ``TimerCheckpoint`` and the parts of
``TimerMessageStore`` that give their bytes a meaning. The timer store is on by default from
5.0.0 (``timerWheelEnable``); a producer's message with ``TIMER_DELIVER_MS`` (or
``TIMER_DELAY_SEC`` / ``TIMER_DELAY_MS``) is stored in the topic ``rmq_sys_wheel_timer``, queue 0,
with its real topic and queue in ``REAL_TOPIC`` / ``REAL_QID`` and its delivery time, rounded
down to the precision, in ``TIMER_OUT_MS`` (HookUtils.transformTimerMessage).

Files::

    <root>/timerwheel            slotsTotal x 2 slots of 32 bytes (38,707,200 bytes)
    <root>/timerlog/<20 digits>  52-byte units, files of mappedFileSizeTimerLog (100 MiB)
    <root>/config/timercheck     TimerCheckpoint: 7 longs in a 4 KiB map
    <root>/config/timermetrics   TimerMetrics: JSON (read by rmqlab.formats.storeconfig)

Facts settled from the Java source:

* **The wheel** has ``slotsTotal = TIMER_WHEEL_TTL_DAY x DAY_SECS = 7 x 86,400`` slots, twice
  over, whatever the precision (``timerPrecisionMs``: 100, 200, 500 or 1000 ms, default 1000).
  The slot of a time ``t`` ms is ``t / precisionMs % (slotsTotal x 2)``; it stores
  ``t / precisionMs`` (not ms), so ``getSlot(t)`` accepts the slot only when the stored time is
  ``t``'s: otherwise the bytes are of an older lap and the slot reads as empty (-1, -1, -1).
  Slots are never cleared: a slot behind the read time still holds the lap it delivered.
* **The timer log** appends one unit a message (``doEnqueue``): the unit's ``prevPos`` is the
  slot's ``lastPos`` before it, so each slot's units form a chain from ``lastPos`` back to -1;
  the slot keeps ``firstPos``, ``lastPos`` and ``num`` (+1 a message, -1 a delete marker). A
  unit's delivery slot is ``currWriteTime + delayTime`` (the write time is the timer's own
  clock, ``currWriteTimeMs``, in whole slots). When fewer than 52 + 16 bytes are left in a file
  a 16-byte blank (size = bytes left, 0, ``BLANK_MAGIC_CODE``) fills it and the next file starts.
* **Magic** bits: 1 (``MAGIC_DEFAULT``), 2 (``MAGIC_ROLL``: due past the roll window, two days by
  default; the unit sits at a roll point and the message is put back into the timer topic when
  it is reached), 4 (``MAGIC_DELETE``: a delete marker, whose ``TIMER_DEL_UNIQKEY`` =
  real topic + "+" + unique key cancels that message in the same slot). ``isMagicOK`` is
  ``(magic | 0xF) == 0xF``.
* **The checkpoint** (``TimerCheckpoint``): ``lastReadTimeMs`` (the wheel is delivered up to,
  not including, this slot), ``lastTimerLogFlushPos``, ``lastTimerQueueOffset`` (the timer
  topic's queue is enqueued up to here), ``masterTimerQueueOffset``, then the DataVersion
  (stateVersion, timestamp, counter).
* **Recovery** (``TimerMessageStore.recover``) re-walks the timer log from the last file before
  ``lastTimerLogFlushPos``, truncates it at the first unit whose size or magic is wrong, and
  starts reading at ``max(lastReadTimeMs, now - slotsTotal x precision + 60 slots)``: slots
  older than that window are never delivered.
* 5.5.0 may also keep wheel snapshots, ``timerwheel.<timer log offset>``, of the same layout.

>>> import tempfile, os
>>> root = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(root, "config"))
>>> write_timer_checkpoint(os.path.join(root, "config", "timercheck"), TimerCheckpoint(1718000000000, 52, 1, 1))
>>> read_timer_checkpoint(os.path.join(root, "config", "timercheck")).last_read_time_ms
1718000000000
"""
from __future__ import annotations

import bisect
import mmap
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import CorruptIndexError, FormatError, GeometryError, TruncatedFileError
from rmqlab.formats.layout import Layout
from rmqlab.formats.mapped import MappedFolder

__all__ = [
    "SLOT", "UNIT", "TIMER_CHECKPOINT", "SLOTS_TOTAL", "WHEEL_SIZE", "PRECISIONS", "DEFAULT_PRECISION_MS",
    "DEFAULT_TIMER_LOG_FILE_SIZE", "BLANK_MAGIC_CODE", "MIN_BLANK_LEN", "MAGIC_DEFAULT", "MAGIC_ROLL",
    "MAGIC_DELETE", "TIMER_BLANK_SLOTS", "TIMER_ROLL_WINDOW_SLOTS", "TIMER_MAX_DELAY_SEC",
    "is_magic_ok", "TimerWheel", "TimerLog", "TimerCheckpoint", "read_timer_checkpoint",
    "write_timer_checkpoint", "infer_precision", "wheel_snapshots",
]

# Slot.java (SIZE = 32); TimerWheel.putSlot / getRawSlot read and write them in this order
SLOT = Layout("Slot", [
    ("time", "q", "the slot's time in precision units (timeMs / timerPrecisionMs); 0 if never used"),
    ("first_pos", "q", "timer log offset of the slot's first unit"),
    ("last_pos", "q", "timer log offset of the slot's last unit: where the chain starts"),
    ("num", "i", "messages in the slot: +1 a message, -1 a delete marker"),
    ("magic", "i", "unused (\"no use now, just keep it\")"),
])

# TimerLog.UNIT_SIZE; TimerMessageStore.doEnqueue writes the fields in this order
UNIT = Layout("TimerLogUnit", [
    ("size", "i", "UNIT_SIZE, 52 (a blank filler holds the bytes left in the file)"),
    ("prev_pos", "q", "the previous unit of the same slot, -1 for the first"),
    ("magic", "i", "1 message, | 2 roll, | 4 delete marker; BLANK_MAGIC_CODE for a filler"),
    ("curr_write_time", "q", "the timer's write time (ms, whole slots) when enqueued"),
    ("delay_time", "i", "delivery slot time minus curr_write_time (ms)"),
    ("offset_py", "q", "CommitLog offset of the message in rmq_sys_wheel_timer"),
    ("size_py", "i", "that message's TOTALSIZE"),
    ("hash_topic", "i", "String.hashCode() of the REAL_TOPIC (TimerMessageStore.hashTopicForMetrics)"),
    ("reserved", "q", "0"),
])

# TimerCheckpoint: the constructor's getLong(0..48), flush()'s putLong at the same offsets
TIMER_CHECKPOINT = Layout("TimerCheckpoint", [
    ("last_read_time_ms", "q", "the wheel is delivered up to (not including) this slot time"),
    ("last_timer_log_flush_pos", "q", "timer log offset flushed"),
    ("last_timer_queue_offset", "q", "rmq_sys_wheel_timer queue 0 is enqueued up to this offset"),
    ("master_timer_queue_offset", "q", "the master's (a slave enqueues no further)"),
    ("state_version", "q", "DataVersion.stateVersion"),
    ("timestamp", "q", "DataVersion.timestamp (ms)"),
    ("counter", "q", "DataVersion.counter"),
])

#: TimerMessageStore.TIMER_WHEEL_TTL_DAY x DAY_SECS (TIMER_WHELL_TTL_DAY in 5.0.0)
SLOTS_TOTAL = 7 * 24 * 3600
#: the wheel file's length: slotsTotal x 2 slots (TimerWheel.wheelLength)
WHEEL_SIZE = SLOTS_TOTAL * 2 * SLOT.size
#: MessageStoreConfig.setTimerPrecisionMs's candidates (a value in between is rounded down)
PRECISIONS = (100, 200, 500, 1000)
DEFAULT_PRECISION_MS = 1000
#: MessageStoreConfig.mappedFileSizeTimerLog
DEFAULT_TIMER_LOG_FILE_SIZE = 100 * 1024 * 1024
#: TimerLog.BLANK_MAGIC_CODE = 0xBBCCDDEE ^ 1880681586 + 8 (Java: + binds before ^), as an int
BLANK_MAGIC_CODE = ((0xBBCCDDEE ^ (1880681586 + 8)) + 2**31) % 2**32 - 2**31
#: TimerLog.MIN_BLANK_LEN: size, a long, the magic
MIN_BLANK_LEN = 4 + 8 + 4
MAGIC_DEFAULT, MAGIC_ROLL, MAGIC_DELETE = 1, 2, 4
#: TimerMessageStore.TIMER_BLANK_SLOTS: recovery keeps this many slots clear of the wheel's end
TIMER_BLANK_SLOTS = 60
#: MessageStoreConfig.timerRollWindowSlot (slots) and timerMaxDelaySec defaults
TIMER_ROLL_WINDOW_SLOTS = 3600 * 24 * 2
TIMER_MAX_DELAY_SEC = 3600 * 24 * 3

_FILE_NAME = re.compile(r"\d{20}")
_SNAPSHOT = re.compile(r"timerwheel\.(-?\d+)")


def is_magic_ok(magic):
    """TimerMessageStore.isMagicOK: only the low four bits set. Works on arrays too.

    >>> is_magic_ok(1), is_magic_ok(3 | 4), is_magic_ok(BLANK_MAGIC_CODE)
    (True, True, False)
    """
    return (np.asarray(magic) | 0xF) == 0xF if isinstance(magic, np.ndarray) else (magic | 0xF) == 0xF


def wheel_snapshots(root: str | os.PathLike) -> list[tuple[int, Path]]:
    """5.5.0's wheel snapshots beside the wheel: ``timerwheel.<flag>`` files (TimerWheel.backup;
    the flag is a timer log offset), as (flag, path) sorted by flag. Cost: one folder listing."""
    root = Path(root)
    if not root.is_dir():
        return []
    out = [(int(m[1]), root / e) for e in os.listdir(root) if (m := _SNAPSHOT.fullmatch(e))]
    return sorted(out)


class TimerWheel(MappedFolder):
    """The ``timerwheel`` file mapped read-only, its slots as a NumPy structured array.

    `precision_ms` is the broker's timerPrecisionMs (default 1000; :func:`infer_precision`
    says which one the files prove). Cost: opening maps the file; :meth:`occupied` is one
    NumPy pass over 1.2 M slots.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "timerwheel")
    >>> with open(p, "wb") as f:
    ...     _ = f.truncate(WHEEL_SIZE)
    >>> with TimerWheel.open(p) as w:
    ...     len(w.slots), w.slot(1718000000500), w.occupied().shape[0]
    (1209600, (-1, -1, -1, 0, 0), 0)

    A file of another length raises GeometryError (TimerWheel's "Timer wheel length" check).
    """

    def __init__(self, path: Path, mm: mmap.mmap | None, fh: Any, precision_ms: int):
        self.path = path
        self.precision_ms = precision_ms
        self._handles = [h for h in (fh, mm) if h is not None]
        self._closed = False
        self.slots = (np.frombuffer(mm, dtype=SLOT.dtype) if mm is not None
                      else np.zeros(0, dtype=SLOT.dtype))

    @classmethod
    def open(cls, path: str | os.PathLike, *, precision_ms: int = DEFAULT_PRECISION_MS) -> TimerWheel:
        path = Path(path)
        if precision_ms not in PRECISIONS:
            raise ValueError(f"precision_ms must be one of {PRECISIONS} (MessageStoreConfig.setTimerPrecisionMs)")
        size = path.stat().st_size
        if size != WHEEL_SIZE:
            raise GeometryError(f"the wheel is {size} bytes; TimerWheel wants slotsTotal x 2 x 32 = {WHEEL_SIZE} "
                                f"(the broker refuses to start: \"Timer wheel length:{size} != expected\")",
                                path=path, offset=0, field="file size")
        fh = open(path, "rb")
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        return cls(path, mm, fh, precision_ms)

    def _release(self) -> None:
        self.slots = np.zeros(0, dtype=SLOT.dtype)

    def slot_index(self, time_ms):
        """TimerWheel.getSlotIndex: ``time_ms / precision % (slotsTotal x 2)`` (arrays too)."""
        return (np.asarray(time_ms, dtype=np.int64) // self.precision_ms) % (SLOTS_TOTAL * 2)

    def slot(self, time_ms: int) -> tuple[int, int, int, int, int]:
        """TimerWheel.getSlot: (time_ms, first_pos, last_pos, num, magic) of `time_ms`'s slot, or
        (-1, -1, -1, 0, 0) when the slot holds another lap. Cost: O(1)."""
        s = self.slots[int(self.slot_index(time_ms))]
        if int(s["time"]) != time_ms // self.precision_ms:
            return (-1, -1, -1, 0, 0)
        return (int(s["time"]) * self.precision_ms, int(s["first_pos"]), int(s["last_pos"]), int(s["num"]),
                int(s["magic"]))

    def occupied(self):
        """Every slot whose 32 bytes are not all zero, as a DataFrame: index, time_ms (the stored
        time x precision), first_pos, last_pos, num, magic. Cost: one pass over the slots."""
        import pandas as pd

        s = self.slots
        used = (s["time"] != 0) | (s["first_pos"] != 0) | (s["last_pos"] != 0) | (s["num"] != 0) | (s["magic"] != 0)
        idx = np.flatnonzero(used)
        u = s[idx]
        return pd.DataFrame({"index": idx.astype(np.int64), "time_ms": u["time"].astype(np.int64) * self.precision_ms,
                             "first_pos": u["first_pos"].astype(np.int64), "last_pos": u["last_pos"].astype(np.int64),
                             "num": u["num"].astype(np.int32), "magic": u["magic"].astype(np.int32)})

    def all_num(self, time_start_ms: int) -> int:
        """TimerWheel.getAllNum: the sum of ``num`` over the slots whose stored time is their lap
        from `time_start_ms` on (the broker's count of messages the wheel still holds).
        Cost: one pass over the slots."""
        n = SLOTS_TOTAL * 2
        first = int(self.slot_index(time_start_ms))
        expect = np.empty(n, np.int64)
        base = time_start_ms // self.precision_ms
        order = (np.arange(n) + first) % n
        # the i-th slot from the start must hold (time_start + i x precision) / precision
        expect[order] = base + np.arange(n)
        ok = self.slots["time"].astype(np.int64) == expect
        return int(self.slots["num"][ok].astype(np.int64).sum())


@dataclass(frozen=True)
class _LogFile:
    path: Path
    start: int
    size: int


class TimerLog(MappedFolder):
    """The ``timerlog/`` folder mapped read-only: its units as one NumPy structured array.

    :attr:`units` holds, file by file, the units up to the first blank filler or unwritten
    (size 0) unit, as TimerMessageStore.recoverAndRevise walks them; :attr:`positions` their
    timer log offsets. Units with a wrong size or magic stay in (verify reports them; the
    broker's recovery truncates there). Cost: maps each file; finding each file's end is one
    NumPy pass over its units.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with TimerLog.open(d) as log:
    ...     len(log.units), log.end
    (0, 0)

    Files not all of one size, or a file missing between two, raise GeometryError.
    """

    def __init__(self, folder: Path, files: list[_LogFile], maps: list[Any], handles: list[Any]):
        self.folder = folder
        self.files = files
        self._handles = handles
        self._closed = False
        self.file_size = files[0].size if files else DEFAULT_TIMER_LOG_FILE_SIZE
        parts, pos, ends = [], [], []
        for f, mm in zip(files, maps, strict=True):
            u = np.frombuffer(mm, dtype=UNIT.dtype, count=f.size // UNIT.size)
            stop = np.flatnonzero((u["size"] == 0) | (u["magic"] == BLANK_MAGIC_CODE))
            n = int(stop[0]) if len(stop) else len(u)
            parts.append(u[:n])
            pos.append(f.start + np.arange(n, dtype=np.int64) * UNIT.size)
            ends.append(n)
        self.units = np.concatenate(parts) if parts else np.zeros(0, UNIT.dtype)
        self.positions = np.concatenate(pos) if pos else np.zeros(0, np.int64)
        self._ends = ends
        self._starts = [f.start for f in files]
        self._bases = np.concatenate([[0], np.cumsum(ends)]).astype(np.int64).tolist() if ends else [0]
        #: the timer log offset after the last unit (0 for an empty log)
        self.end = int(files[-1].start + ends[-1] * UNIT.size) if files else 0

    @classmethod
    def open(cls, folder: str | os.PathLike) -> TimerLog:
        folder = Path(folder)
        files = []
        if folder.is_dir():
            with os.scandir(folder) as entries:
                files = sorted((_LogFile(folder / e.name, int(e.name), e.stat().st_size) for e in entries
                                if _FILE_NAME.fullmatch(e.name) and e.is_file()), key=lambda f: f.start)
        sizes = {f.size for f in files}
        if len(sizes) > 1:
            odd = next(f for f in files if f.size != files[0].size)
            raise GeometryError(f"timer log files differ in size ({sorted(sizes)}); MappedFileQueue.load "
                                f"refuses a file that is not mappedFileSizeTimerLog bytes", path=odd.path,
                                offset=0, field="file size")
        for prev, f in zip(files, files[1:], strict=False):
            if f.start != prev.start + prev.size:
                raise GeometryError(f"file starts at {f.start}, the previous one ends at {prev.start + prev.size}: "
                                    f"a file is missing", path=f.path, offset=0, field="file name")
        maps: list[Any] = []
        handles: list[Any] = []
        for f in files:
            fh = open(f.path, "rb")
            handles.append(fh)
            if f.size < UNIT.size:
                maps.append(b"")
                continue
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            handles.append(mm)
            maps.append(mm)
        return cls(folder, files, maps, handles)

    def _release(self) -> None:
        self.units = np.zeros(0, UNIT.dtype)

    def unit_at(self, pos: int):
        """The unit at timer log offset `pos` (a ``UNIT.record``). A position outside every
        file, not on a unit boundary, or past a file's last unit raises CorruptIndexError naming
        the file. Cost: O(log files)."""
        i = bisect.bisect_right(self._starts, pos) - 1
        if i < 0 or pos >= self.files[i].start + self.files[i].size:
            raise CorruptIndexError(f"timer log offset {pos} is in no file of the timer log", path=self.folder,
                                    field="pos")
        f = self.files[i]
        rel = pos - f.start
        if rel % UNIT.size:
            raise CorruptIndexError(f"timer log offset {pos} is not on a unit boundary (52-byte units)",
                                    path=f.path, offset=rel, field="pos")
        k = rel // UNIT.size
        if k >= self._ends[i]:
            raise TruncatedFileError(f"timer log offset {pos} is past the file's last unit "
                                     f"({self._ends[i]} units)", path=f.path, offset=rel, field="pos")
        return UNIT.record._make(int(v) for v in self.units[self._bases[i] + k].tolist())

    def chain(self, last_pos: int, *, limit: int = 1 << 24) -> list[int]:
        """The positions of a slot's units, newest first: from `last_pos` back along prev_pos to
        -1, as TimerMessageStore.dequeue walks them. A pointer that does not go back (a cycle)
        or a walk longer than `limit` raises CorruptIndexError. Cost: O(chain length)."""
        out: list[int] = []
        pos = last_pos
        while pos != -1:
            if len(out) >= limit:
                raise CorruptIndexError(f"the chain from {last_pos} is longer than {limit} units",
                                        path=self.folder, field="prev_pos")
            u = self.unit_at(pos)
            out.append(pos)
            if u.prev_pos != -1 and u.prev_pos >= pos:
                raise CorruptIndexError(f"unit at {pos} points forward to {u.prev_pos}: a unit only points "
                                        f"to an older one", path=self.folder, offset=pos, field="prev_pos")
            pos = u.prev_pos
        return out

    def delayed_time(self) -> np.ndarray:
        """Each unit's delivery slot time (ms): ``curr_write_time + delay_time``, as dequeue
        computes it."""
        return self.units["curr_write_time"].astype(np.int64) + self.units["delay_time"].astype(np.int64)

    def revised_from(self, last_flush_pos: int) -> int:
        """The timer log offset from which a restart re-revises the wheel: TimerMessageStore.
        recover (5.0.0 - 5.5.x) calls recoverAndRevise from ``lastTimerLogFlushPos`` less one file
        size (at least 0), which walks every unit from the start of the file holding that offset
        and sets each one's slot's last_pos to it (TimerWheel.reviseSlot; first_pos too where the
        slot holds another lap; never num). So a slot whose last units the wheel lost in a crash
        is mended there. Cost: O(files).

        >>> import tempfile
        >>> with TimerLog.open(tempfile.mkdtemp()) as log:
        ...     log.revised_from(5096)
        0
        """
        if not self.files:
            return 0
        begin = max(int(last_flush_pos) - self.files[-1].size, 0)
        starts = [f.start for f in self.files if f.start <= begin]
        return starts[-1] if starts else self.files[0].start


@dataclass(frozen=True)
class TimerCheckpoint:
    """The seven longs of ``config/timercheck``."""

    last_read_time_ms: int = 0
    last_timer_log_flush_pos: int = 0
    last_timer_queue_offset: int = 0
    master_timer_queue_offset: int = 0
    state_version: int = 0
    timestamp: int = 0
    counter: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def read_timer_checkpoint(path: str | os.PathLike) -> TimerCheckpoint:
    """``config/timercheck`` as the TimerCheckpoint constructor reads it. The broker maps 4 KiB
    (growing a shorter file with zeros), so a file shorter than 56 bytes reads its missing
    longs as 0 here too; an empty file is a checkpoint of zeros. Reads only. Cost: one read.

    A path that is not a file raises FileNotFoundError / IsADirectoryError.
    """
    path = Path(path)
    data = path.read_bytes()[:TIMER_CHECKPOINT.size]
    data = data + bytes(TIMER_CHECKPOINT.size - len(data))
    return TimerCheckpoint(*TIMER_CHECKPOINT.unpack(data))


def write_timer_checkpoint(path: str | os.PathLike, cp: TimerCheckpoint) -> None:
    """Write a checkpoint as TimerCheckpoint.flush does (4096 bytes, the longs at the start)."""
    data = TIMER_CHECKPOINT.pack(*(getattr(cp, f.name) for f in fields(cp)))
    with open(path, "wb") as f:
        f.write(data + bytes(4096 - len(data)))


def infer_precision(wheel_slots: np.ndarray, log: TimerLog) -> int | None:
    """The timerPrecisionMs the files prove: the candidate of :data:`PRECISIONS` for which the
    most slots that a unit ends (its ``last_pos``) store that unit's delivery time / precision,
    when those are more than half of them; a slot that disagrees is then left for the chain check
    to name, rather than hiding every other finding (one damaged unit must not undo the inference).
    None when no slot points at a unit (an empty wheel proves nothing); FormatError when no
    candidate fits more than half. Cost: one pass over the used slots.
    """
    used = wheel_slots[(wheel_slots["last_pos"] >= 0) & (wheel_slots["time"] != 0)]
    if not len(used) or not len(log.units):
        return None
    where = np.searchsorted(log.positions, used["last_pos"].astype(np.int64))
    where = np.minimum(where, len(log.positions) - 1)
    hit = log.positions[where] == used["last_pos"]
    if not hit.any():
        return None
    delayed = log.delayed_time()[where[hit]]
    stored = used["time"][hit].astype(np.int64)
    # a slot stores its unit's delivery time divided by one candidate, which no other candidate gives
    fitting = {p: int((delayed // p == stored).sum()) for p in PRECISIONS}
    best = max(PRECISIONS, key=lambda p: (fitting[p], -p))
    if 2 * fitting[best] <= len(stored):
        raise FormatError(f"no timerPrecisionMs of 100, 200, 500, 1000 makes more than half of the wheel's "
                          f"{len(stored)} slot times those of its units' delivery times", path=log.folder,
                          field="time")
    return best
