"""RocketMQ's RocksDB ConsumeQueue (``storeType=defaultRocksDB``, RIP-66, 5.2.0+): every queue's
units in one RocksDB database, the folder ``{storePathRootDir}/consumequeue`` itself.

Read from ``org.apache.rocketmq.store.queue.RocksDBConsumeQueueTable`` (the units, default column
family), ``RocksDBConsumeQueueOffsetTable`` (column family ``offset``: each queue's max and min
unit) and ``ConsumeQueueRocksDBStorage`` at rocketmq-all-5.3.3. Keys and values are big-endian:

* a unit's key: topic length (int), CTRL_1, the topic's UTF-8 bytes, CTRL_1, queue id (int),
  CTRL_1, queue offset (long) -- so a queue's units sort by offset, queues by topic length first;
* a unit's value: :data:`UNIT` (28 bytes: commitlog offset, size, tags code, store time);
* an offset key: topic length (int), CTRL_1, topic, CTRL_1, ``max`` or ``min``, CTRL_1, queue id
  (int); its value :data:`OFFSET_UNIT` (16 bytes: commitlog offset, queue offset) -- the queue's
  last unit written (``max``) and its first kept one (``min``, after expiry). One more entry, the
  ``max`` of queue 0 of :data:`CHECKPOINT_TOPIC`, holds one long: how far the dispatch has built.

The broker answers ``getMaxOffsetInQueue`` as the ``max`` entry's queue offset + 1 (0 without
one) and ``getMinOffsetInQueue`` from the ``min`` entry, corrected to the first unit whose
message is still in the CommitLog (``getMinCqOffset``).

The database is read with :func:`rmqlab.formats.rocksdb.read_families` (from a private snapshot:
nothing is written in the folder given; the ``rmqlab[rocksdb]`` extra).

>>> unit_key("T", 1, 5).hex()
'0000000101540100000001010000000000000005'
>>> offset_key("T", 1, MAX).hex()
'000000010154016d61780100000001'
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import CorruptIndexError
from rmqlab.formats.layout import Layout
from rmqlab.formats.rocksdb import is_rocksdb, read_families

__all__ = ["UNIT", "OFFSET_UNIT", "RocksDBConsumeQueues", "unit_key", "offset_key", "is_rocksdb"]

# AbstractRocksDBStorage: the separators of every key
CTRL_0, CTRL_1, CTRL_2 = 0, 1, 2
#: ConsumeQueueRocksDBStorage.OFFSET_COLUMN_FAMILY
OFFSET_COLUMN_FAMILY = "offset"

# RocksDBConsumeQueueTable: CQ_UNIT_SIZE = 8 + 4 + 8 + 8
UNIT = Layout("RocksDBCqUnit", [
    ("commitlog_offset", "q", "the message's CommitLog offset (PHY_OFFSET_OFFSET 0)"),
    ("size", "i", "the message's TOTALSIZE (PHY_MSG_LEN_OFFSET 8)"),
    ("tags_code", "q", "the tags hash code, as a file ConsumeQueue's (MSG_TAG_HASHCODE_OFFSET 12)"),
    ("store_timestamp", "q", "the message's STORETIMESTAMP, ms (MSG_STORE_TIME_SIZE_OFFSET 20)"),
])
# RocksDBConsumeQueueOffsetTable: OFFSET_PHY_OFFSET 0, OFFSET_CQ_OFFSET 8
OFFSET_UNIT = Layout("RocksDBCqOffset", [
    ("commitlog_offset", "q", "the CommitLog offset of the unit's message"),
    ("queue_offset", "q", "the unit's queue offset"),
])
#: RocksDBConsumeQueueOffsetTable's words for the queue's last and first unit
MAX, MIN = "max", "min"
#: TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC: its ``max`` entry of queue 0 in the offset column
#: family holds one long, the CommitLog offset the dispatch has built the queues to
#: (RocksDBConsumeQueueOffsetTable's MAX_PHYSICAL_OFFSET_CHECKPOINT)
CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"


def unit_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    """A unit's key (RocksDBConsumeQueueTable.buildCQKeyByteBuffer0)."""
    t = topic.encode("utf-8")
    return (len(t).to_bytes(4, "big", signed=True) + bytes([CTRL_1]) + t + bytes([CTRL_1])
            + queue_id.to_bytes(4, "big", signed=True) + bytes([CTRL_1]) + queue_offset.to_bytes(8, "big", signed=True))


def offset_key(topic: str, queue_id: int, which: str) -> bytes:
    """A queue's max or min key (RocksDBConsumeQueueOffsetTable.buildOffsetKeyByteBuffer0)."""
    t = topic.encode("utf-8")
    return (len(t).to_bytes(4, "big", signed=True) + bytes([CTRL_1]) + t + bytes([CTRL_1]) + which.encode("ascii")
            + bytes([CTRL_1]) + queue_id.to_bytes(4, "big", signed=True))


def _read_all(folder: Path) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    """(units, offsets): every key and value of the default and offset column families."""
    families = read_families(folder)
    return families.get("default", []), families.get(OFFSET_COLUMN_FAMILY, [])


def _split_keys(keys: list[bytes], folder: Path, what: str, tail: int) -> tuple[list[str], np.ndarray]:
    """(topic, the bytes between the topic's closing CTRL_1 and the end) of each key, checked:
    topic length, CTRL_1 separators and the length of the rest (`tail` bytes)."""
    topics, rests = [], []
    for k in keys:
        n = int.from_bytes(k[:4], "big", signed=True) if len(k) >= 4 else -1
        if n < 0 or len(k) != 4 + 1 + n + 1 + tail or k[4] != CTRL_1 or k[5 + n] != CTRL_1:
            raise CorruptIndexError(f"{what} key {k.hex()} is not topic length, CTRL_1, topic, CTRL_1 and "
                                    f"{tail} more bytes", path=folder, offset=None, field=f"{what}.key")
        topics.append(k[5:5 + n].decode("utf-8", errors="replace"))
        rests.append(k[6 + n:])
    return topics, np.frombuffer(b"".join(rests), np.uint8).reshape(-1, tail)


@dataclass
class RocksDBConsumeQueues:
    """Every queue of a RocksDB ConsumeQueue store, read whole.

    ``units``: one row a unit (topic, queue_id, queue_offset, commitlog_offset, size, tags_code,
    store_timestamp), sorted by topic, queue id and offset. ``offsets``: the offset column
    family (topic, queue_id, which = "max"/"min", commitlog_offset, queue_offset).
    Cost: one pass over the database (RocksDB's iteration, one Python step a key).
    """

    folder: Path
    units: pd.DataFrame
    offsets: pd.DataFrame
    #: the CommitLog offset the dispatch had built the queues to (the CHECKPOINT_TOPIC entry), or None
    dispatched_to: int | None = None
    _ends: dict[int, dict[tuple[str, int], tuple[int, int]]] = field(default_factory=dict, repr=False)

    @cached_property
    def _units_by_queue(self) -> dict[tuple[str, int], dict[int, tuple[int, int]]]:
        """(topic, queue id) -> queue offset -> (commitlog offset, store time), built once."""
        return {key: dict(zip(g["queue_offset"].tolist(), zip(g["commitlog_offset"].tolist(),
                                                               g["store_timestamp"].tolist(), strict=True),
                              strict=True))
                for key, g in self._frames_by_queue.items()}

    @cached_property
    def _max_entry(self) -> dict[tuple[str, int], int]:
        """(topic, queue id) -> the queue offset its ``max`` entry names."""
        mx = self.offsets[self.offsets["which"] == MAX]
        return {(t, int(i)): int(o) for t, i, o in mx[["topic", "queue_id", "queue_offset"]].itertuples(index=False)}

    @classmethod
    def open(cls, folder: str | os.PathLike) -> RocksDBConsumeQueues:
        folder = Path(folder)
        if not is_rocksdb(folder):
            raise FileNotFoundError(f"{folder}: no RocksDB database (CURRENT and MANIFEST-*)")
        units, offsets = _read_all(folder)
        checkpoint = offset_key(CHECKPOINT_TOPIC, 0, MAX)
        marks = [v for k, v in offsets if k == checkpoint]
        if marks and len(marks[0]) != 8:
            raise CorruptIndexError(f"the {CHECKPOINT_TOPIC} entry is {len(marks[0])} bytes, not 8", path=folder,
                                    offset=None, field="offset.value")
        dispatched_to = int.from_bytes(marks[0], "big", signed=True) if marks else None
        return cls(folder, _units_frame(folder, units),
                   _offsets_frame(folder, [(k, v) for k, v in offsets if k != checkpoint]), dispatched_to)

    def queues(self, commitlog_min_offset: int = 0) -> pd.DataFrame:
        """One row a queue: topic, queue_id, units, min_offset and max_offset as the broker answers
        them (max: the ``max`` entry's offset + 1; min: the ``min`` entry's offset, or the first
        unit whose message starts at or after `commitlog_min_offset` when that entry's does not)."""
        u = self.units
        g = u.groupby(["topic", "queue_id"], sort=True)
        out = g.size().rename("units").reset_index()
        o = self.offsets
        mx = o[o["which"] == MAX].set_index(["topic", "queue_id"])["queue_offset"]
        mn = o[o["which"] == MIN].set_index(["topic", "queue_id"])
        keys = list(zip(out["topic"], out["queue_id"]))
        out["max_offset"] = [int(mx[k]) + 1 if k in mx.index else 0 for k in keys]
        live = u[u["commitlog_offset"] >= commitlog_min_offset].groupby(["topic", "queue_id"])["queue_offset"].min()
        mins = []
        for k in keys:
            if k in mn.index and int(mn.loc[k, "commitlog_offset"]) >= commitlog_min_offset:
                mins.append(int(mn.loc[k, "queue_offset"]))
            else:
                mins.append(int(live[k]) if k in live.index else 0)
        out["min_offset"] = mins
        return out


    def _ends_of(self, commitlog_min_offset: int) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, queue id) -> (min offset, max offset) of :meth:`queues`, once per CommitLog min offset."""
        ends = self._ends.get(commitlog_min_offset)
        if ends is None:
            q = self.queues(commitlog_min_offset)
            ends = self._ends[commitlog_min_offset] = {
                (t, int(i)): (int(lo), int(hi)) for t, i, lo, hi in
                q[["topic", "queue_id", "min_offset", "max_offset"]].itertuples(index=False)}
        return ends

    def min_max(self, topic: str, queue_id: int, commitlog_min_offset: int = 0) -> tuple[int, int]:
        """(min offset, max offset) of one queue as :meth:`queues` answers them; (0, 0) for a
        queue the database does not hold. Cost: O(1) after one pass over the units a CommitLog
        min offset."""
        return self._ends_of(commitlog_min_offset).get((topic, int(queue_id)), (0, 0))

    @cached_property
    def _frames_by_queue(self) -> dict[tuple[str, int], pd.DataFrame]:
        out: dict[tuple[str, int], pd.DataFrame] = {}
        for key, g in self.units.groupby(["topic", "queue_id"], sort=False):
            pair: Any = key
            out[(str(pair[0]), int(pair[1]))] = g.reset_index(drop=True)
        return out

    def queue_units(self, topic: str, queue_id: int) -> pd.DataFrame:
        """The units of one queue (columns as :attr:`units`), by queue offset; empty for a
        queue the database does not hold. Cost: O(1) after one grouping of all units."""
        got = self._frames_by_queue.get((topic, int(queue_id)))
        return got if got is not None else self.units.iloc[:0]

    def offset_by_time(self, topic: str, queue_id: int, timestamp: int, boundary: str = "lower",
                       commitlog_min_offset: int = 0, *, with_boundary: bool = True) -> int:
        """DefaultMessageStore.getOffsetInQueueByTime on this store: RocksDBConsumeQueueStore's
        search (``binarySearchInCQByTime`` between the queue's min offset and its ``max`` entry,
        on the units' own store times; units below `commitlog_min_offset` count as older), its
        answer clamped to [min offset, max offset]. `boundary`: "lower" or "upper". A queue with
        no ``max`` entry answers 0. `with_boundary`: the 5.3.0+ search (``layout_facts(v).
        rocksdb_time_boundary``); False: 5.2.x's. Cost: O(log units) dictionary look-ups, after
        one pass over the units at the first call.

        The 5.3.0+ search, as the Java reads: the unit at max older than the time -> max + 1
        (LOWER) or max (UPPER); the unit at min newer -> min (LOWER) or 0 (UPPER); otherwise a
        binary search (a missing unit moves up; a negative store time answers 0); an exact time
        widens to the first (LOWER) or last (UPPER) unit with it, else the nearest newer (LOWER)
        or older (UPPER) unit, -1 when none. 5.2.x: the same binary search without the corner
        cases, an exact time as found, else the nearer of the two units around the time (a tie
        to the newer one), or the one there is.
        """
        side = boundary.lower()
        if side not in ("lower", "upper"):
            raise ValueError(f"boundary must be 'lower' or 'upper', got {boundary!r}")
        ends = self._ends_of(commitlog_min_offset)
        if (topic, queue_id) not in ends or (topic, queue_id) not in self._max_entry:
            return 0
        lo_q, hi_q = ends[(topic, queue_id)]
        at = self._units_by_queue.get((topic, queue_id), {})
        high, low = self._max_entry[(topic, queue_id)], lo_q
        ceiling, floor = high, low
        if with_boundary:
            result = _search(at, high, low, ceiling, floor, timestamp, commitlog_min_offset, side == "lower")
        else:
            result = _search_nearest(at, high, low, timestamp, commitlog_min_offset)
        return min(max(result, lo_q), hi_q)


@dataclass
class _Bisect:
    """Where the binary search of binarySearchInCQByTime (both versions) ended: the unit with the
    time (exact, or -1), the last older unit and the first newer one with their times (-1: none);
    `zero`: it met a negative store time (the Java answers 0)."""

    exact: int = -1
    left: int = -1
    left_time: int = -1
    right: int = -1
    right_time: int = -1
    zero: bool = False


def _bisect(at: dict[int, tuple[int, int]], high: int, low: int, timestamp: int, min_phy: int) -> _Bisect:
    """The loop both versions share: a missing unit moves up; a unit below the CommitLog's min
    offset counts as older (without a time)."""
    r = _Bisect()
    while high >= low:
        mid = low + ((high - low) >> 1)
        if mid not in at:
            low = mid + 1
            continue
        phy, store = at[mid]
        if phy < min_phy:
            low, r.left = mid + 1, mid
            continue
        if store < 0:
            r.zero = True
            return r
        if store == timestamp:
            r.exact = mid
            return r
        if store > timestamp:
            high, r.right, r.right_time = mid - 1, mid, store
        else:
            low, r.left, r.left_time = mid + 1, mid, store
    return r


def _search(at: dict[int, tuple[int, int]], high: int, low: int, ceiling: int, floor: int, timestamp: int,
            min_phy: int, lower: bool) -> int:
    """RocksDBConsumeQueueTable.binarySearchInCQByTime (5.3.0+) over `at` (queue offset ->
    (commitlog offset, store time))."""
    if ceiling in at and at[ceiling][1] < timestamp:
        return ceiling + 1 if lower else ceiling
    if floor in at and at[floor][1] > timestamp:
        return floor if lower else 0
    r = _bisect(at, high, low, timestamp, min_phy)
    if r.zero:
        return 0
    if r.exact == -1:
        return r.right if lower else r.left
    target = r.exact
    step, bound = (-1, floor) if lower else (1, ceiling)
    while (target + step >= bound) if lower else (target + step <= bound):
        nxt = at.get(target + step)
        if nxt is None or nxt[1] != timestamp:   # the Java reads the unit: a missing one throws
            break
        target += step
    return target


def _search_nearest(at: dict[int, tuple[int, int]], high: int, low: int, timestamp: int, min_phy: int) -> int:
    """binarySearchInCQByTime of 5.2.x over `at` (queue offset -> (commitlog offset, store time))."""
    r = _bisect(at, high, low, timestamp, min_phy)
    if r.zero:
        return 0
    if r.exact != -1:
        return r.exact
    if r.left_time == -1:
        return r.right
    if r.right_time == -1:
        return r.left
    return r.right if abs(timestamp - r.left_time) > abs(timestamp - r.right_time) else r.left


def _column(rest: np.ndarray, at: int, code: str) -> np.ndarray:
    """The big-endian integer at byte `at` of each row of `rest`, as int64."""
    width = np.dtype(code).itemsize
    if not len(rest):
        return np.zeros(0, np.int64)
    return rest[:, at:at + width].copy().view(code).ravel().astype(np.int64)


def _units_frame(folder: Path, items: list[tuple[bytes, bytes]]) -> pd.DataFrame:
    keys = [k for k, _ in items]
    values = [v for _, v in items]
    bad = [i for i, v in enumerate(values) if len(v) != UNIT.size]
    if bad:
        raise CorruptIndexError(f"the value of unit key {keys[bad[0]].hex()} is {len(values[bad[0]])} bytes, not "
                                f"{UNIT.size} ({len(bad)} such)", path=folder, offset=None, field="unit.value")
    topics, rest = _split_keys(keys, folder, "unit", 4 + 1 + 8)
    if len(rest) and not (rest[:, 4] == CTRL_1).all():
        raise CorruptIndexError("a unit key has no CTRL_1 between its queue id and offset", path=folder, offset=None,
                                field="unit.key")
    v = np.frombuffer(b"".join(values), UNIT.dtype) if values else np.zeros(0, UNIT.dtype)
    frame = pd.DataFrame({
        "topic": pd.Series(topics, dtype=object),
        "queue_id": _column(rest, 0, ">i4"),
        "queue_offset": _column(rest, 5, ">i8"),
        **{f.name: v[f.name].astype(np.int64) for f in UNIT.fields},
    })
    return frame.sort_values(["topic", "queue_id", "queue_offset"], kind="stable").reset_index(drop=True)


def _offsets_frame(folder: Path, items: list[tuple[bytes, bytes]]) -> pd.DataFrame:
    keys = [k for k, _ in items]
    values = [v for _, v in items]
    if any(len(v) != OFFSET_UNIT.size for v in values):
        raise CorruptIndexError(f"an offset value is not {OFFSET_UNIT.size} bytes", path=folder, offset=None,
                                field="offset.value")
    topics, rest = _split_keys(keys, folder, "offset", 3 + 1 + 4)
    which = [bytes(r[:3]).decode("ascii", errors="replace") for r in rest]
    if any(w not in (MAX, MIN) for w in which) or (len(rest) and not (rest[:, 3] == CTRL_1).all()):
        raise CorruptIndexError("an offset key does not name max or min, then CTRL_1", path=folder, offset=None,
                                field="offset.key")
    v = np.frombuffer(b"".join(values), OFFSET_UNIT.dtype) if values else np.zeros(0, OFFSET_UNIT.dtype)
    return pd.DataFrame({
        "topic": pd.Series(topics, dtype=object),
        "queue_id": _column(rest, 4, ">i4"),
        "which": pd.Series(which, dtype=object),
        "commitlog_offset": v["commitlog_offset"].astype(np.int64),
        "queue_offset": v["queue_offset"].astype(np.int64),
    })
