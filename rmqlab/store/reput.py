"""What :meth:`rmqlab.store.directory.Store.dispatch` does: the broker's reput service over a store
directory, a CommitLog part at a time.

The rules of each message are in :mod:`rmqlab.rules.dispatch`; this module applies them in the order
the broker does (``DefaultMessageStore.ReputMessageService.doReput``, read at rocketmq-all-4.9.7
and 5.3.1 b122c8109d62): message by message, each message's ConsumeQueue unit (or
BatchConsumeQueue unit) first, then its light-message-queue units
(``ConsumeQueue.putMessagePositionInfoWrapper`` calls ``multiDispatchLmqQueue`` after its own
put), then its index keys (``CommitLogDispatcherBuildIndex``). The CommitLog is read
:data:`PART_MESSAGES` messages at a time (:func:`commitlog.read_column_parts`) and each part is
written before the next is read, so memory is one part's columns whatever the CommitLog's size.
Within a part the units of each queue are written together, in message order; a queue that
gets both its own units and other messages' multi-dispatch units (a 4.9.x plain queue name)
gets them interleaved in message order, as the broker puts them. The queue writers stay open
from part to part (:class:`QueueWriters`), so the bytes are those of one pass over the whole
CommitLog.

A damaged CommitLog record stops the dispatch there, as it stops the broker's reput: every
message before it is dispatched and the checkpoint written, then the record's typed error is
raised (a later dispatch resumes at the same place and stops again).
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import checkpoint as cp
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.formats.rocksdb import is_rocksdb
from rmqlab.rules.dispatch import batch_units_many, goes_to_consume_queue_many, lmq_dispatch_many, message_tags_codes
from rmqlab.rules.versions import layout_facts
from rmqlab.store.layout import StoreLayout
from rmqlab.tables.arrow import arrow_column

__all__ = ["DispatchReport", "dispatch_store", "committed_end", "QueueWriters", "queue_groups",
           "write_consume_queue_units", "Run", "PART_MESSAGES", "MAX_OPEN_WRITERS", "restart_dispatch_units",
           "RESTART_UNIT_COLUMNS"]

#: Messages a part: dispatch holds one part's columns (a few hundred bytes a message, text as Arrow).
PART_MESSAGES = 1 << 18
#: Queue writers kept open at once (each holds a file descriptor; reopening one finds its end again).
MAX_OPEN_WRITERS = 256
#: The text columns the broker decodes as Strings before it names queues and hashes keys.
_TEXT = ("topic", "tags", "keys", "uniq_key", "properties")
_DUPLICATE = (cq.STATUS_NAMES.index("duplicate-physical"), cq.STATUS_NAMES.index("duplicate-logical"))


@dataclass
class DispatchReport:
    """What one :meth:`Store.dispatch` did."""

    from_offset: int               # where it started (the broker's reputFromOffset)
    to_offset: int                 # the CommitLog end it reached
    messages: int                  # messages read
    consume_queue_units: int       # units written
    queues: int                    # queues touched
    index_keys: int                # keys put into index files
    index_files: int               # index files in the folder afterwards
    commitlog_report: Any = None   # the CommitLog reader's report (torn tail, damage)
    seconds: float = 0.0
    skipped_units: dict[str, int] = field(default_factory=dict)  # ConsumeQueue statuses other than ok
    batch_queue_units: int = 0     # BatchConsumeQueue units written (BatchCQ topics)
    lmq_units: int = 0             # extra ConsumeQueue units of multi-dispatched messages

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("from_offset", "to_offset", "messages", "consume_queue_units",
                                           "queues", "index_keys", "index_files", "seconds", "skipped_units")}
        d.update({k: getattr(self, k) for k in ("batch_queue_units", "lmq_units") if getattr(self, k)})
        return d



def reput_from_offset(layout: StoreLayout, queues_end: int | None = None) -> int:
    """Where a restarted broker resumes dispatch: the largest CommitLog end (offset + size) any
    ConsumeQueue or BatchConsumeQueue records, at least the CommitLog's first offset
    (DefaultMessageStore.start). With the ``abort`` file (the broker did not shut down cleanly)
    no later than where ``CommitLog.recoverAbnormally`` re-dispatches from
    (:func:`rmqlab.store.recover.recovery_start` with the checkpoint's min timestamp; units and
    index keys already there are skipped). `queues_end`: :func:`consume_queue_end`, where the
    caller has it. Cost: the last unit of each queue."""
    paths = layout.paths
    start = max(consume_queue_end(layout) if queues_end is None else queues_end, batch_queues_end(layout))
    low = cl.min_offset(paths.commitlog) if paths.has_commitlog() else 0
    start = max(start, low or 0)
    if paths.abort.exists() and paths.has_commitlog():
        from rmqlab.store.recover import recovery_start

        checkpoint = (cp.read_checkpoint(paths.checkpoint, strict=False) if paths.checkpoint.exists()
                      else cp.StoreCheckpoint())
        start = min(start, recovery_start(paths.root, checkpoint.recovery_timestamp())[0])
    return start


def consume_queue_end(layout: StoreLayout) -> int:
    """The largest CommitLog end (offset + size, bytes) any ConsumeQueue unit records: how far
    dispatch has written the queues (0 without units). A RocksDB ConsumeQueue keeps it itself:
    the offset table's dispatch checkpoint, 0 without one (RocksDBConsumeQueueOffsetTable's
    getMaxPhyOffset, rocketmq-all-5.3.3). Cost: the last unit of each queue; a RocksDB
    ConsumeQueue: one read of the database."""
    if is_rocksdb(layout.paths.consumequeue):
        from rmqlab.formats.rocksdbcq import RocksDBConsumeQueues

        return RocksDBConsumeQueues.open(layout.paths.consumequeue).dispatched_to or 0
    end = 0
    for topic, qid in layout.consume_queues():
        with cq.ConsumeQueue.open(cq.queue_dir(layout.root, topic, qid), layout.consume_queue_file_size) as q:
            if q.count:
                last = q.unit(q.max_offset - 1)
                end = max(end, int(last.commitlog_offset) + int(last.size))
    return end


def batch_queues_end(layout: StoreLayout) -> int:
    """:func:`consume_queue_end` of the BatchConsumeQueues."""
    end = 0
    for topic, qid in layout.batch_queues():
        with bcq.BatchConsumeQueue.open(bcq.queue_dir(layout.root, topic, qid),
                                        layout.batch_consume_queue_file_size) as q:
            u = q.units
            if len(u):
                end = max(end, int(u["commitlog_offset"][-1]) + int(u["size"][-1]))
    return end


def committed_end(layout: StoreLayout) -> int | None:
    """How far a running broker dispatches a DLedger CommitLog (``DLedgerCommitLog.getMaxOffset``,
    rocketmq-all-4.9.7 and 5.3.3): the ledger's committed position, the end of the last entry a
    majority of its group holds (:meth:`rmqlab.formats.dledger.Ledger.summary`), when positive;
    else the start of its first data file (0, or a switched store's dividedCommitlogOffset).
    Entries after it are not dispatched until they are committed: a leader stopped after its
    followers keeps such entries. None for a plain CommitLog. A one-node group's restart commits
    its whole ledger (:func:`restart_dispatch_units` reads to the end). Cost: one pass over the
    ledger's entry heads.

    >>> import tempfile
    >>> from rmqlab.lab.generate import generate_store
    >>> from rmqlab.lab.workload import Workload
    >>> committed_end(generate_store(tempfile.mkdtemp(), Workload(messages=5, seed=1), hash_slot_num=8,
    ...                              index_num=32).layout) is None
    True
    """
    from rmqlab.formats.dledger import Ledger

    ledgers = layout.paths.ledgers
    if len(ledgers) != 1:
        return None
    pos = Ledger(ledgers[0], file_size=layout.commitlog_file_size).summary()["committed_pos"]
    if pos > 0:
        return pos
    files = cl.store_files(ledgers[0] / "data")
    return files[0].start_offset if files else 0


def _committed_parts(parts, end: int | None):
    """The messages of `parts` that end at or before `end` (all of them for None), stopping at
    the first that does not."""
    for msgs in parts:
        if end is None:
            yield msgs
            continue
        inside = (msgs["phy_offset"].to_numpy(np.int64) + msgs["total_size"].to_numpy(np.int64)) <= end
        if inside.all():
            yield msgs
            continue
        if inside.any():
            yield msgs[inside].reset_index(drop=True)
        return


def _readable_parts(parts):
    """The parts of a :func:`commitlog.read_column_parts` iterator (``on_error="report"``) that
    the broker's reput dispatches: it stops at a record it cannot read, so a part from the damaged
    file (the records before the damage) is the last, and a part of a later file is not read."""
    report = parts.report
    for msgs in parts:
        if report.damage and report.damage[0].path != report.files[-1]:
            return
        yield msgs
        if report.damage:
            return


#: the columns of :func:`restart_dispatch_units`
RESTART_UNIT_COLUMNS = ["topic", "queue_id", "queue_offset", "commitlog_offset", "size", "tags_code"]


def restart_dispatch_units(layout: StoreLayout, queues_end: int | None = None) -> pd.DataFrame:
    """The ConsumeQueue units a restarted broker's dispatch writes: one a message of the
    CommitLog from :func:`reput_from_offset` on that goes to a queue (the rules of
    :mod:`rmqlab.rules.dispatch`), up to the first record it cannot read, where the broker's
    reput stops too: topic, queue_id, queue_offset (the record's QUEUEOFFSET), commitlog_offset,
    size, tags_code; with enableMultiDispatch also the light message queues' units (a RocksDB
    ConsumeQueue holds them from 5.3.2, ``LayoutFacts.rocksdb_lmq``). A queue's units the restart
    writes again are among them. What matters after a crash: the broker writes a RocksDB
    ConsumeQueue without a write-ahead log (AbstractRocksDBStorage's writeOptions, disableWAL), so
    a kill -9 loses every unit RocksDB had not flushed, and the restart dispatches them again from
    the CommitLog. BatchConsumeQueue units are not included. `queues_end` as for
    :func:`reput_from_offset`. Cost: one columnar read (no bodies) of the CommitLog from that
    offset: nothing on a store the broker stopped cleanly.

    >>> import tempfile
    >>> from rmqlab.lab.generate import generate_store
    >>> from rmqlab.lab.workload import Workload
    >>> s = generate_store(tempfile.mkdtemp(), Workload(messages=20, seed=1), hash_slot_num=64, index_num=256)
    >>> len(restart_dispatch_units(s.layout))   # dispatched to its end already
    0
    """
    start = reput_from_offset(layout, queues_end)
    empty = pd.DataFrame({c: pd.Series(dtype=object if c == "topic" else np.int64) for c in RESTART_UNIT_COLUMNS})
    if not layout.paths.has_commitlog() or start >= (cl.max_offset(layout.paths.commitlog) or 0):
        return empty
    parts = cl.read_column_parts(layout.paths.commitlog, part_messages=PART_MESSAGES, body=False, on_error="report",
                                 start_offset=start)
    out = []
    lmq = layout.enable_multi_dispatch and (not is_rocksdb(layout.paths.consumequeue)
                                            or layout_facts(layout.broker_version).rocksdb_lmq)
    try:
        for msgs in _readable_parts(parts):
            put = msgs[goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64))]
            topic, qid = put["topic"].to_numpy(object), put["queue_id"].to_numpy(np.int64)
            phy, size = put["phy_offset"].to_numpy(np.int64), put["total_size"].to_numpy(np.int64)
            codes = message_tags_codes(topic, put["tags"].to_numpy(object), put["delay_level"].to_numpy(np.int64),
                                       put["store_timestamp"].to_numpy(np.int64))
            out.append(pd.DataFrame({"topic": topic, "queue_id": qid,
                                     "queue_offset": put["queue_offset"].to_numpy(np.int64),
                                     "commitlog_offset": phy, "size": size, "tags_code": codes}))
            if lmq:
                at, units, _ = lmq_dispatch_many(topic, qid, put["properties"].to_numpy(object),
                                                 enable_lmq=layout.enable_lmq, enable_multi_dispatch=True,
                                                 broker_version=layout.broker_version)
                if len(at):
                    out.append(pd.DataFrame({"topic": np.array([u[0] for u in units], dtype=object),
                                             "queue_id": np.array([u[1] for u in units], np.int64),
                                             "queue_offset": np.array([u[2] for u in units], np.int64),
                                             "commitlog_offset": phy[at], "size": size[at], "tags_code": codes[at]}))
    finally:
        parts.close()
    return pd.concat(out, ignore_index=True) if out else empty


def refuse_rocksdb_queues(folder: Path) -> None:
    """Raise :class:`~rmqlab.errors.FormatError` (field ``storeType``) when `folder`, a store's
    consumequeue/, is a RocksDB database (storeType=defaultRocksDB): rmqlab writes file
    ConsumeQueues only, and writing them into the database's folder would mix the two."""
    if is_rocksdb(folder):
        raise FormatError("a RocksDB ConsumeQueue (storeType=defaultRocksDB): rmqlab writes file ConsumeQueues "
                          "only; dispatch a copy of the store without its consumequeue/ folder to get them",
                          path=folder, offset=None, field="storeType")


def dispatch_store(layout: StoreLayout, *, part_messages: int = PART_MESSAGES,
                   progress: Callable[[int, int], None] | None = None) -> DispatchReport:
    """:meth:`Store.dispatch` (see there) of the store `layout` describes, reading
    `part_messages` messages at a time and calling ``progress(CommitLog bytes dispatched, bytes
    to dispatch)`` after each part; the index is written through ``layout.index_service``."""
    t0 = time.perf_counter()
    refuse_rocksdb_queues(layout.paths.consumequeue)
    start = reput_from_offset(layout)
    if not layout.paths.has_commitlog():
        return DispatchReport(start, start, 0, 0, 0, 0, 0)
    # Arrow columns (no Python object a message) unless a 5.x queue type needs the
    # properties as str objects
    arrow = not layout.batch_cq_topics and not layout.enable_multi_dispatch
    total = max((cl.max_offset(layout.paths.commitlog) or start) - start, 0) if progress is not None else 0
    run = Run(layout)
    parts = cl.read_column_parts(layout.paths.commitlog, part_messages=part_messages, body=False, on_error="report",
                                 start_offset=start, arrow=arrow)
    report = parts.report
    end = start
    try:
        with layout.index_service(writable=True) as idx:
            for msgs in _committed_parts(_readable_parts(parts), committed_end(layout)):
                run.part(_broker_text(msgs, arrow), idx)
                ends = msgs["phy_offset"].to_numpy(np.int64) + msgs["total_size"].to_numpy(np.int64)
                end = max(end, int(ends.max()))
                if progress is not None:
                    progress(min(max(end - start, 0), total), total)
            index_files = len(idx.files)
            index_msg_ts = idx.index_msg_timestamp
    finally:
        parts.close()
        run.writers.close()
    run.write_checkpoint(index_msg_ts)
    if report.damage:
        raise report.damage[0].error()
    return DispatchReport(start, end, run.messages, run.units, len(run.queues), run.index_keys, index_files, report,
                          time.perf_counter() - t0, run.skipped, batch_queue_units=run.batch_units,
                          lmq_units=run.lmq_units)


def write_consume_queue_units(layout: StoreLayout, msgs: pd.DataFrame) -> tuple[int, int, dict[str, int]]:
    """The ConsumeQueue units (and ConsumeQueueExt units, when the store has them) of the
    messages of `msgs` (:func:`commitlog.read_columns` columns), as dispatch writes them:
    (units written, queues touched, statuses other than written with their counts)."""
    run = Run(layout)
    try:
        run.consume_queues(msgs)
    finally:
        run.writers.close()
    return run.units, len(run.queues), run.skipped


def write_batch_queue_units(layout: StoreLayout, msgs: pd.DataFrame) -> int:
    """The BatchConsumeQueue units of the BatchCQ topics' messages of `msgs`, as dispatch writes
    them (a unit the queue holds already is skipped): the units written."""
    run = Run(layout)
    try:
        run.batch_queues(msgs)
    finally:
        run.writers.close()
    return run.batch_units


def _broker_text(msgs: pd.DataFrame, arrow: bool) -> pd.DataFrame:
    """The part with its text as the broker's Strings (:func:`commitlog.broker_strings`: U+FFFD
    where the bytes are not UTF-8), which name the queues and are hashed. Arrow text that is all
    UTF-8 stays as it is; a part Arrow kept as bytes somewhere is made str objects throughout."""
    raw = {name: arrow and _binary(arrow_column(msgs[name])) for name in _TEXT}
    if arrow and not any(raw.values()):
        return msgs

    def strings(name):
        values = msgs[name].to_numpy(object, na_value=None)
        return pd.Series(cl.broker_strings(values, raw=raw[name]), index=msgs.index, dtype=object)
    return msgs.assign(**{name: strings(name) for name in _TEXT})


def _binary(arr) -> bool:
    import pyarrow as pa

    t = arr.type
    return pa.types.is_large_binary(t.value_type if pa.types.is_dictionary(t) else t)


class QueueWriters:
    """The ConsumeQueue, ConsumeQueueExt and BatchConsumeQueue writers of one dispatch, kept
    open from part to part: at most `max_open` at once, the least recently used closed first
    and opened again when its queue comes back. A ConsumeQueueExt folder is first opened as a
    restarted broker opens it (after the largest ext address its ConsumeQueue holds,
    ``ConsumeQueue.recover``); opened again in the same dispatch, it continues where it stood.

    >>> import tempfile
    >>> with QueueWriters(StoreLayout.of(tempfile.mkdtemp()), max_open=1) as w:
    ...     w.consume_queue("T", 0).put_many([0], [100], [7]).tolist(), len(w._open)
    ([0], 1)
    """

    def __init__(self, layout: StoreLayout, max_open: int | None = None):
        self.layout = layout
        self.max_open = MAX_OPEN_WRITERS if max_open is None else max_open
        self._open: OrderedDict[Path, Any] = OrderedDict()   # by folder
        self._ext_opened: set[tuple[str, int]] = set()

    def _writer(self, key: Path, opener: Callable[[], Any]):
        w = self._open.pop(key, None)
        if w is None:
            while len(self._open) >= self.max_open:
                self._open.popitem(last=False)[1].close()
            w = opener()
        self._open[key] = w
        return w

    def consume_queue(self, topic: str, qid: int) -> cq.ConsumeQueueWriter:
        return self._queue(cq.queue_dir(self.layout.root, topic, qid), cq.ConsumeQueueWriter,
                           self.layout.consume_queue_file_size)

    def batch_queue(self, topic: str, qid: int) -> bcq.BatchConsumeQueueWriter:
        return self._queue(bcq.queue_dir(self.layout.root, topic, qid), bcq.BatchConsumeQueueWriter,
                           self.layout.batch_consume_queue_file_size)

    def _queue(self, folder, writer, mapped_file_size: int):
        def opener():
            make = writer.open if _has_files(folder) else writer.create
            return make(folder, mapped_file_size=mapped_file_size)
        return self._writer(folder, opener)

    def ext(self, topic: str, qid: int) -> cqx.ConsumeQueueExtWriter:
        s = self.layout

        def opener():
            folder = cqx.ext_dir(s.root, topic, qid)
            if not _has_files(folder):
                return cqx.ConsumeQueueExtWriter.create(folder, mapped_file_size=s.consume_queue_ext_file_size)
            max_address = None
            queue = cq.queue_dir(s.root, topic, qid)
            if (topic, qid) not in self._ext_opened and _has_files(queue):
                with cq.ConsumeQueue.open(queue, s.consume_queue_file_size) as q:
                    codes = q.units["tags_code"]
                    ext = codes[cqx.is_ext_addr_many(codes)]
                    max_address = int(ext.max()) if len(ext) else None
            return cqx.ConsumeQueueExtWriter.open(folder, mapped_file_size=s.consume_queue_ext_file_size,
                                                  max_address=max_address)
        w = self._writer(cqx.ext_dir(s.root, topic, qid), opener)
        self._ext_opened.add((topic, qid))
        return w

    def close(self) -> None:
        while self._open:
            self._open.popitem(last=False)[1].close()

    def __enter__(self) -> QueueWriters:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _has_files(folder) -> bool:
    return folder.is_dir() and any(folder.iterdir())


class Run:
    """One dispatch's writers and running totals, fed a part at a time."""

    def __init__(self, layout: StoreLayout):
        self.layout = layout
        self.writers = QueueWriters(layout)
        self.messages = self.units = self.batch_units = self.lmq_units = self.index_keys = 0
        self.queues: set[tuple[str, int]] = set()
        self.status_counts = np.zeros(len(cq.STATUS_NAMES), np.int64)
        self.physic_ts: int | None = None    # the last message's store time
        self.logics_ts: int | None = None    # the last store time of a message given a queue unit

    @property
    def skipped(self) -> dict[str, int]:
        return {cq.STATUS_NAMES[code]: c for code, c in enumerate(self.status_counts.tolist())
                if c and cq.STATUS_NAMES[code] != "written"}

    def part(self, msgs: pd.DataFrame, idx) -> None:
        self.messages += len(msgs)
        simple = self.batch_queues(msgs)
        self.consume_queues(simple)
        self.index_keys += idx.build_columns(msgs)
        self.note_times(msgs)

    def note_times(self, msgs: pd.DataFrame) -> None:
        """Remember the store times the checkpoint takes from the messages dispatched so far."""
        store_ts = msgs["store_timestamp"].to_numpy(np.int64)
        self.physic_ts = int(store_ts[-1])
        logics = store_ts[goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64))]
        if len(logics):
            self.logics_ts = int(logics[-1])

    def write_checkpoint(self, index_msg_ts: int | None) -> None:
        """The checkpoint after the messages dispatched (none: left as it is)."""
        if self.physic_ts is None:
            return
        path = self.layout.paths.checkpoint
        old = cp.read_checkpoint(path) if path.exists() else cp.StoreCheckpoint(0, 0, 0)
        cp.write_checkpoint(path, cp.StoreCheckpoint(
            physic_msg_timestamp=self.physic_ts,
            logics_msg_timestamp=self.logics_ts if self.logics_ts is not None else old.logics_msg_timestamp,
            index_msg_timestamp=int(index_msg_ts) if index_msg_ts else old.index_msg_timestamp))

    def batch_queues(self, msgs: pd.DataFrame) -> pd.DataFrame:
        """Write the BatchConsumeQueue units of the BatchCQ topics' messages (ConsumeQueueStore
        picks a BatchConsumeQueue for them; the transaction rule applies as to any queue) and
        return the other messages, for the ConsumeQueue."""
        topics = self.layout.batch_cq_topics
        if not topics or msgs.empty:
            return msgs
        batch = msgs["topic"].isin(topics).to_numpy()
        put = msgs[batch & goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64))]
        if len(put):
            base, size, ok = batch_units_many(put["queue_offset"].to_numpy(np.int64), put["properties"])
            codes = message_tags_codes(put["topic"].to_numpy(object), put["tags"].to_numpy(object),
                                       put["delay_level"].to_numpy(np.int64), put["store_timestamp"].to_numpy(np.int64))
            put = put.assign(bcq_base=base, bcq_size=size, tags_code=codes)[ok]
            for (topic, qid), g in put.groupby(["topic", "queue_id"], sort=True):
                self.batch_units += self.writers.batch_queue(topic, int(qid)).put_many(
                    g["phy_offset"], g["total_size"], g["tags_code"], g["store_timestamp"], g["bcq_base"],
                    g["bcq_size"])
        return msgs[~batch]

    def consume_queues(self, msgs: pd.DataFrame) -> None:
        """Write the ConsumeQueue units of the messages that get one (and their ConsumeQueueExt
        units), and with enableMultiDispatch their light-message-queue units, each queue's in
        message order."""
        rows = np.flatnonzero(goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64)))
        if not len(rows):
            return
        # NumPy columns of the units only: a boolean mask or a groupby of the frame would copy
        # every column, the text ones included
        every = len(rows) == len(msgs)

        def column(name, dtype):
            values = msgs[name].to_numpy(dtype)
            return values if every else values[rows]

        def text(name):   # Arrow text stays Arrow: one hash a distinct topic or tag, no str objects
            arr = arrow_column(msgs[name])
            if arr is None:
                return column(name, object)
            return arr if every else arr.take(rows)

        topic, qid = text("topic"), column("queue_id", np.int64)
        store_ts = column("store_timestamp", np.int64)
        raw_codes = message_tags_codes(topic, text("tags"), column("delay_level", np.int64), store_ts)
        phy, size = column("phy_offset", np.int64), column("total_size", np.int64)
        qoff = column("queue_offset", np.int64)
        groups = queue_groups(topic, qid)
        self.queues.update((name, q) for name, q, _ in groups)
        codes = raw_codes
        if self.layout.consume_queue_ext:
            # ConsumeQueue.putMessagePositionInfoWrapper's ext step: one ext unit per request
            # (even one the queue then skips as a duplicate), its address replacing the tags
            # code. No filter bit map: the broker computes one only with enableCalcFilterBitMap,
            # from consumer filter data that the store directory does not hold.
            codes = raw_codes.copy()
            for name, q, units in groups:
                codes[units] = self.writers.ext(name, q).put_many(raw_codes[units], store_ts[units])
        lmq = self._lmq_units(msgs, rows, topic, qid) if self.layout.enable_multi_dispatch else None
        if lmq is None:
            for name, q, units in groups:
                self._count(self.writers.consume_queue(name, q).put_many(phy[units], size[units], codes[units],
                                                                         qoff[units]))
            return
        # each queue's units in message order, a message's own unit before its multi-dispatch
        # ones: the own units first in the joined arrays, so a stable sort by message keeps that
        at, names, qids, offsets = lmq
        order = np.argsort(np.concatenate([np.arange(len(rows)), at]), kind="stable")
        own = order < len(rows)
        extra = np.maximum(order - len(rows), 0)                # which multi-dispatch unit (where not own)
        src = np.where(own, order, at[extra])                   # the message of each unit
        all_names = np.concatenate([np.asarray(topic, dtype=object), names])[order]
        all_qids = np.concatenate([qid, qids])[order]
        all_codes = np.where(own, codes[src], raw_codes[src])   # multi-dispatch units keep the tags code
        all_qoff = np.where(own, qoff[src], offsets[extra])
        for name, q, units in queue_groups(all_names, all_qids):
            status = self.writers.consume_queue(name, q).put_many(phy[src[units]], size[src[units]],
                                                                  all_codes[units], all_qoff[units])
            mine = own[units]
            self._count(status[mine])
            lmq_status = status[~mine]
            self.lmq_units += int(((lmq_status != _DUPLICATE[0]) & (lmq_status != _DUPLICATE[1])).sum())

    def _count(self, status: np.ndarray) -> None:
        counts = np.bincount(status, minlength=len(cq.STATUS_NAMES))
        self.status_counts += counts
        self.units += int(counts[cq.STATUS_NAMES.index("written")])

    def _lmq_units(self, msgs: pd.DataFrame, rows: np.ndarray, topic, qid):
        """ConsumeQueue.multiDispatchLmqQueue of the messages at `rows`: (index into `rows` of
        each unit's message, queue names, queue ids, queue offsets), None without units."""
        store = self.layout
        props = msgs["properties"].to_numpy(object)[rows]
        at, units, _ = lmq_dispatch_many(np.asarray(topic, dtype=object), qid, props, enable_lmq=store.enable_lmq,
                                         enable_multi_dispatch=True, broker_version=store.broker_version)
        if not len(at):
            return None
        return (at, np.array([u[0] for u in units], dtype=object), np.array([u[1] for u in units], np.int64),
                np.array([u[2] for u in units], np.int64))


def queue_groups(topics: np.ndarray, queue_ids: np.ndarray) -> list[tuple[str, int, np.ndarray]]:
    """The rows of each queue: (topic, queue id, row numbers in order) per (topic, queue id)
    present, sorted by topic then queue id, like a sorted pandas groupby. Units: rows of the
    given arrays. Cost: O(n): one hash of each topic (factorize) and a radix sort of small
    queue codes, about 30 ns a row.

    >>> [(t, q, rows.tolist()) for t, q, rows in queue_groups(np.array(["b", "a", "b"], object), np.array([1, 0, 1]))]
    [('a', 0, [1]), ('b', 1, [0, 2])]
    """
    queue_ids = np.asarray(queue_ids, dtype=np.int64)
    if not len(queue_ids):
        return []
    import pyarrow as pa

    if isinstance(topics, pa.DictionaryArray) and not topics.null_count:
        # already factorized (read_columns(arrow=True)); a value may repeat only if the
        # dictionary holds it twice, which the groups below would split: merge by name then
        names = topics.dictionary.to_pylist()
        topic_names = pd.unique(np.array(names, dtype=object))
        topic_code = pd.Index(topic_names).get_indexer(names)[topics.indices.to_numpy()] \
            if len(topic_names) < len(names) else topics.indices.to_numpy().astype(np.int64)
    else:
        topic_code, topic_names = pd.factorize(np.asarray(topics, dtype=object), sort=False)
    low = int(queue_ids.min())
    span = int(queue_ids.max()) - low + 1
    if len(topic_names) * span <= 1 << 16:
        # dense 16-bit codes: NumPy's stable sort of them is a radix sort
        dense = (topic_code * span + (queue_ids - low)).astype(np.uint16)
        order = np.argsort(dense, kind="stable")
        present = np.flatnonzero(np.bincount(dense, minlength=len(topic_names) * span))
        keys = [(topic_names[int(k) // span], int(k) % span + low) for k in present]
    else:
        pairs, dense = np.unique(np.stack([topic_code.astype(np.int64), queue_ids]), axis=1, return_inverse=True)
        dense = dense.reshape(-1)
        order = np.argsort(dense, kind="stable")
        keys = [(topic_names[int(t)], int(q)) for t, q in pairs.T]
    sizes = np.bincount(dense)
    bounds = np.concatenate([[0], np.cumsum(sizes[sizes > 0])])
    groups = [(str(t), q, order[bounds[i]:bounds[i + 1]]) for i, (t, q) in enumerate(keys)]
    return sorted(groups, key=lambda g: (g[0], g[1]))
