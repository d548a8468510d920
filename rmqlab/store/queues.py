"""A store's queue whatever keeps it: ConsumeQueue files, BatchConsumeQueue files or the
RocksDB ConsumeQueue (5.2+), read as the broker's ConsumeQueueInterface reads them
(``ConsumeQueue``, ``BatchConsumeQueue`` and ``RocksDBConsumeQueue`` at rocketmq-all-5.3.3):
the queries that need a queue's ends or its units from an offset go through
:class:`LogicQueue`, so each works the same over every kind."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx

if TYPE_CHECKING:
    from rmqlab.store.directory import Store

__all__ = ["LogicQueue", "QueueWindow", "all_queues"]


def all_queues(store: Store) -> list[tuple[str, int]]:
    """(topic, queue_id) of every queue the store holds, whatever keeps it: ConsumeQueue and
    BatchConsumeQueue folders, and the queues of a RocksDB ConsumeQueue. Sorted. Cost: the
    folders' listings; a RocksDB store's database read once a Store."""
    from rmqlab.formats import rocksdbcq

    found = set(store.layout.batch_queues())
    if rocksdbcq.is_rocksdb(store.consumequeue_dir):
        u = store.rocksdb_queues().units
        found |= {(str(t), int(i)) for t, i in zip(u["topic"], u["queue_id"])}
    else:
        found |= set(store.layout.consume_queues())
    return sorted(found)


@dataclass
class QueueWindow:
    """Units as a queue's iterator hands them out (int64 arrays, aligned): the unit's message
    offset (a BatchConsumeQueue unit's first), how many messages it covers, its CommitLog
    offset and size, and its tags code as stored."""

    queue_offset: np.ndarray
    batch_num: np.ndarray
    phy: np.ndarray
    size: np.ndarray
    tags_code: np.ndarray     # raw, as the unit holds it



def _window_file_queue(q: cq.ConsumeQueue, start: int) -> QueueWindow | None:
    """ConsumeQueue.getIndexBuffer / iterateFrom: the units from `start` to the end of its file."""
    for first, view in q.segments():
        if first <= start < first + len(view):
            u = view[start - first:]
            n = len(u)
            return QueueWindow(np.arange(start, start + n, dtype=np.int64), np.ones(n, np.int64),
                           u["commitlog_offset"].astype(np.int64), u["size"].astype(np.int64),
                           u["tags_code"].astype(np.int64))
    return None


def _window_batch_queue(q: bcq.BatchConsumeQueue, start: int) -> QueueWindow | None:
    """BatchConsumeQueue.iterateFrom: from the unit covering `start` to the end of its file."""
    if q.find(start) is None:
        return None
    for _, view in reversed(list(q.segments())):
        if len(view) and int(view[0]["msg_base_offset"]) <= start:
            k = int(np.searchsorted(view["msg_base_offset"].astype(np.int64), start, side="right")) - 1
            u = view[k:]
            return QueueWindow(u["msg_base_offset"].astype(np.int64), u["batch_size"].astype(np.int64),
                           u["commitlog_offset"].astype(np.int64), u["size"].astype(np.int64),
                           u["tags_code"].astype(np.int64))
    return None


def _window_rocksdb(units: pd.DataFrame, start: int, count: int) -> QueueWindow | None:
    """RocksDBConsumeQueue.iterateFrom(start, count): the units at start, start + 1, ... up to
    `count` of them, ending at the first offset without one (rangeQuery; 5.5.0's reusable
    iterator reads on to the max offset, as `count` is then)."""
    offsets = units["queue_offset"].to_numpy(np.int64)
    k = int(np.searchsorted(offsets, start))
    run = offsets[k:k + count] - start
    n = int(np.argmin(run == np.arange(len(run)))) if len(run) and (run != np.arange(len(run))).any() else len(run)
    if n == 0:
        return None
    u = units.iloc[k:k + n]
    return QueueWindow(u["queue_offset"].to_numpy(np.int64), np.ones(n, np.int64),
                   u["commitlog_offset"].to_numpy(np.int64), u["size"].to_numpy(np.int64),
                   u["tags_code"].to_numpy(np.int64))



class LogicQueue:
    """One queue of a store, whatever keeps it: a ConsumeQueue folder (with its
    ConsumeQueueExt), a BatchConsumeQueue folder, or the store's RocksDB ConsumeQueue; the
    broker's ConsumeQueueInterface as far as the queries use it: `kind` ("consumequeue",
    "batchconsumequeue", "rocksdb", or "none" for a queue the store does not hold, which
    answers min = max = 0 as the broker's empty queue does), `unit_size`, `min_offset` and
    `max_offset` (message offsets, as the broker answers them), :meth:`window`
    (iterateFrom), :meth:`roll_next_file` and the tag filter (:meth:`passes`).
    With `after_restart`, the queue as a restarted broker holds it: its units, then those the
    restart's dispatch appends (:meth:`Store.restart_dispatch_units`; :meth:`units` and
    `max_offset` only, not :meth:`window`). A context manager. Cost: opening maps the queue's
    files (a RocksDB queue: the store's database, read once a Store).

    >>> import tempfile
    >>> from rmqlab.lab.generate import generate_store
    >>> from rmqlab.lab.workload import Workload
    >>> root = tempfile.mkdtemp()
    >>> store = generate_store(root, Workload(messages=40, seed=2, queues_per_topic=2), hash_slot_num=64, index_num=512)
    >>> with LogicQueue(store, "TopicTest", 1) as q:
    ...     q.kind, q.min_offset, q.max_offset, q.window(18, 32).queue_offset.tolist()
    ('consumequeue', 0, 21, [18, 19, 20])
    """

    def __init__(self, store: Store, topic: str, queue_id: int, commitlog_min_offset: int | None = None, *,
                 after_restart: bool = False):
        from rmqlab.formats import rocksdbcq

        self.topic, self.queue_id = topic, int(queue_id)
        self.kind, self.unit_size, self.min_offset, self.max_offset = "none", cq.UNIT_SIZE, 0, 0
        self._file: cq.ConsumeQueue | None = None
        self._batch: bcq.BatchConsumeQueue | None = None
        self._ext: cqx.ConsumeQueueExt | None = None
        self._rocks: pd.DataFrame | None = None
        self._db = None
        if commitlog_min_offset is None:
            starts = store.commitlog_extent()[0]
            commitlog_min_offset = starts[0] if starts else 0
        self._commitlog_min = commitlog_min_offset
        batch_dir, file_dir = bcq.queue_dir(store.root, topic, queue_id), cq.queue_dir(store.root, topic, queue_id)
        if rocksdbcq.is_rocksdb(store.consumequeue_dir):
            db = self._db = store.rocksdb_queues()
            self.kind, self._rocks = "rocksdb", db.queue_units(topic, queue_id)
            self.min_offset, self.max_offset = db.min_max(topic, queue_id, commitlog_min_offset)
        elif batch_dir.is_dir():
            self._batch = bcq.BatchConsumeQueue.open(
                batch_dir, bcq.batch_file_size(batch_dir, store.batch_consume_queue_file_size))
            self.kind, self.unit_size = "batchconsumequeue", bcq.UNIT_SIZE
            self.min_offset, self.max_offset = max(self._batch.min_offset, 0), self._batch.max_offset
        elif file_dir.is_dir():
            self._file = cq.ConsumeQueue.open(file_dir, store.consume_queue_file_size)
            ext_dir = store.root / cqx.FOLDER / topic / str(queue_id)
            if store.consume_queue_ext and ext_dir.is_dir():
                self._ext = cqx.ConsumeQueueExt.open(ext_dir)
            self.kind, self.min_offset, self.max_offset = "consumequeue", self._file.min_offset, self._file.max_offset
        self._restart: pd.DataFrame | None = None
        if after_restart:
            # the units the restart's dispatch appends past the queue's end (a RocksDB queue after
            # a kill -9 may hold none of its recent units: Store.restart_dispatch_units)
            r = store.restart_dispatch_units()
            r = r[(r["topic"] == topic) & (r["queue_id"] == self.queue_id) & (r["queue_offset"] >= self.max_offset)]
            if len(r):
                self._restart = r.drop_duplicates("queue_offset", keep="last")
                if self.kind == "none":
                    self.min_offset = int(self._restart["queue_offset"].min())
                self.max_offset = int(self._restart["queue_offset"].max()) + 1

    def window(self, start: int, count: int) -> QueueWindow | None:
        """iterateFrom(start, count): the units from `start` to the end of its file (a file
        queue: `count` does not matter), or up to `count` consecutive units (a RocksDB queue);
        None where the broker's iterator is null."""
        if self._file is not None:
            return _window_file_queue(self._file, start)
        if self._batch is not None:
            return _window_batch_queue(self._batch, start)
        if self._rocks is not None:
            return _window_rocksdb(self._rocks, start, min(self.max_offset - start, count))
        return None

    def units(self, start: int, stop: int) -> pd.DataFrame:
        """The units whose message offset lies in [`start`, `stop`) (a BatchConsumeQueue unit
        by its first offset), blank fillers left out: queue_offset, batch_num,
        commitlog_offset, size, tags_code; opened `after_restart`, then the units a restarted
        broker's dispatch appends. Cost: the units in the range."""
        own = self._own_units(start, stop)
        if self._restart is None:
            return own
        r = self._restart[(self._restart["queue_offset"] >= start) & (self._restart["queue_offset"] < stop)]
        added = r.assign(batch_num=np.ones(len(r), np.int64))[list(own.columns)]
        return pd.concat([own, added], ignore_index=True) if len(added) else own

    def _own_units(self, start: int, stop: int) -> pd.DataFrame:
        cols = ["queue_offset", "batch_num", "commitlog_offset", "size", "tags_code"]
        if self._file is not None:
            u = self._file.to_frame(max(start, self._file.min_offset), min(stop, self._file.max_offset))
            u = u[u["size"] != cq.BLANK_UNIT[1]]
            return u.assign(batch_num=np.ones(len(u), np.int64))[cols]
        if self._batch is not None:
            b = self._batch.units
            base = b["msg_base_offset"].astype(np.int64)
            keep = (base >= start) & (base < stop)
            return pd.DataFrame({"queue_offset": base[keep], "batch_num": b["batch_size"][keep].astype(np.int64),
                                 "commitlog_offset": b["commitlog_offset"][keep].astype(np.int64),
                                 "size": b["size"][keep].astype(np.int64),
                                 "tags_code": b["tags_code"][keep].astype(np.int64)})
        if self._rocks is not None:
            r = self._rocks
            r = r[(r["queue_offset"] >= start) & (r["queue_offset"] < stop)]
            return r.assign(batch_num=np.ones(len(r), np.int64))[cols].reset_index(drop=True)
        return pd.DataFrame({c: np.zeros(0, np.int64) for c in cols})

    def offset_by_time(self, timestamp: int, boundary: str, store_time_of, facts) -> tuple[int, object]:
        """DefaultMessageStore.getOffsetInQueueByTime with the rules of `facts` (a release's
        :class:`~rmqlab.rules.versions.LayoutFacts`: ``time_search``, ``rocksdb_time_boundary``):
        (the offset, what the search did: a ConsumeQueue's
        :class:`~rmqlab.formats.consumequeue.TimeSearch`, else None). `store_time_of(phy
        offsets)` reads store times from the CommitLog (a ConsumeQueue keeps none). Cost:
        O(log units) look-ups."""
        if self._file is not None:
            res = self._file.offset_by_time(timestamp, store_time_of, boundary=boundary,  # type: ignore[arg-type]
                                            broker=facts.time_search, min_phy_offset=self._commitlog_min)
            return res.offset, res
        if self._batch is not None:
            return self._batch.offset_by_time(timestamp, boundary), None
        if self._db is not None:
            return self._db.offset_by_time(self.topic, self.queue_id, timestamp, boundary, self._commitlog_min,
                                           with_boundary=facts.rocksdb_time_boundary), None
        return 0, None

    def roll_next_file(self, start: int) -> int:
        """rollNextFile: the first offset of the next ConsumeQueue file; 0 for a
        BatchConsumeQueue and a RocksDB queue (as 5.x answers)."""
        if self._file is None:
            return 0
        per_file = self._file.units_per_file
        return start + per_file - start % per_file

    def passes(self, tags_codes: np.ndarray, subscription: str | Iterable[str] | None) -> np.ndarray:
        return cq.filter_tags_codes(tags_codes, subscription, ext=self._ext)

    def close(self) -> None:
        for part in (self._ext, self._file, self._batch):
            if part is not None:
                part.close()

    def __enter__(self) -> LogicQueue:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
