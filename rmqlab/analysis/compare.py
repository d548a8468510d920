"""RocketMQ's indexes and Kafka's, built from the same messages and measured side by side.

**The mapping.** A RocketMQ queue and a Kafka partition are both an ordered log of one
stream's messages with consecutive numbers (queue offsets, Kafka offsets). The simplest honest
comparison therefore takes a workload with **one topic and one queue** and writes its
messages twice: a RocketMQ store (:func:`rmqlab.lab.generate.generate_store`: CommitLog,
ConsumeQueue, IndexFile) and one Kafka partition (:func:`rmqlab.kafka.partition.write_partition`
of :func:`rmqlab.kafka.log.records_from_workload`). Message ``i`` is then queue offset
``i`` and Kafka offset ``i``. The Kafka record's key is the message's KEYS property and its
timestamp the RocketMQ store time (broker clock, so both systems search the same times), its
value the body. The workload must have one key a message (``keys_per_message=1``), no
transactions and no delayed messages, which would give RocketMQ records Kafka has no
counterpart for. :func:`comparison_workload` makes such a workload.

What each system builds, on the same bytes:

* RocketMQ: a ConsumeQueue unit (20 bytes) for every message (its offset index; a search by
  time binary-searches it, reading each probed message's store time from the CommitLog), and
  an IndexFile entry (20 bytes, plus the hash slots) for every key and every UNIQ_KEY (its key
  index; times kept in whole seconds after the file's begin).
* Kafka: per segment an offset index and a time index with one entry (8 + 12 bytes) each time
  more than ``index.interval.bytes`` (4096) of batches were appended: sparse, so a lookup ends
  with a short scan of the log; no key index at all.

:func:`index_bytes_per_million` measures the files; :func:`lookup_costs` runs the three kinds
of lookup on both and counts what each reads; :func:`time_semantics` shows where whole-second
index times and millisecond timestamps part ways.

>>> import tempfile
>>> sbs = build_side_by_side(tempfile.mkdtemp(), comparison_workload(3000, seed=1), commitlog_file_size=1 << 24,
...                          hash_slot_num=500, index_num=2000, segment_bytes=200_000)
>>> sbs.messages.shape[0], sbs.kafka_segments["base_offset"].tolist()
(3000, [0, 642, 1297, 1945, 2600])
>>> b = index_bytes_per_million(sbs).set_index("structure")
>>> int(b.loc["ConsumeQueue", "bytes_per_million"]), round(b.loc["Kafka indexes", "bytes_per_million"])
(20000000, 1426667)
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rmqlab.formats import consumequeue as cq
from rmqlab.formats.commitlog import DEFAULT_FILE_SIZE as COMMITLOG_FILE_SIZE
from rmqlab.formats.commitlog import HEAD as COMMITLOG_HEAD
from rmqlab.formats.commitlog import PORT as COMMITLOG_PORT
from rmqlab.formats.commitlog import STORE_TIME as COMMITLOG_STORE_TIME
from rmqlab.formats.indexfile import (
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    ENTRY,
    HEADER,
    LONG_MAX,
    SLOT,
    Geometry,
    read_header,
    time_diff_seconds,
)
from rmqlab.kafka import index as kidx
from rmqlab.kafka.log import RECORD_BATCH_OVERHEAD, records_from_workload
from rmqlab.kafka.partition import (
    DEFAULT_SEGMENT_BYTES,
    DEFAULT_SEGMENT_INDEX_BYTES,
    INDEX_INTERVAL_BYTES,
    KafkaPartition,
    PartitionConfig,
    PartitionWriter,
)
from rmqlab.kafka.sizing import KafkaConfig, kafka_estimate
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload, generate_chunks
from rmqlab.store.directory import Store
from rmqlab.store.indexservice import DEFAULT_MAX_MSGS_NUM_BATCH

__all__ = [
    "KINDS",
    "SYSTEMS",
    "COST_COLUMNS",
    "comparison_workload",
    "SideBySide",
    "build_side_by_side",
    "index_bytes_per_million",
    "lookup_costs",
    "lookup_cost_summary",
    "time_semantics",
    "comparison_table",
]

#: The three ways in, and the two systems, in the order tables show them.
KINDS = ("offset", "time", "key")
SYSTEMS = ("RocketMQ", "Kafka")
#: Cost columns of :func:`lookup_costs` (counts, and bytes / 4 KiB pages across all files read).
COST_COLUMNS = ("index_entries_read", "index_bytes_read", "data_reads", "data_bytes_read", "bytes_touched",
                "pages_touched")
PAGE = kidx.PAGE_SIZE
#: Where STORETIMESTAMP lies in a CommitLog record with an IPv4 born host (the 8 bytes
#: CommitLog.pickupStoreTimestamp reads); 12 bytes further with an IPv6 born host.
_IPV4_ADDRESS_BYTES = 4
_STORE_TIME_AT = COMMITLOG_HEAD.size + _IPV4_ADDRESS_BYTES + COMMITLOG_PORT.size
_STORE_TIME_BYTES = COMMITLOG_STORE_TIME.size


def comparison_workload(messages: int = 100_000, *, seed: int = 0, topic: str = "TopicTest", **changes) -> Workload:
    """A :class:`~rmqlab.lab.workload.Workload` whose messages map one to one onto one Kafka
    partition: one topic, one queue, one key a message (the defaults give no transactions and
    no delayed messages). Other fields as :class:`Workload` takes them.

    >>> w = comparison_workload(1000, seed=3)
    >>> w.topics, w.queues_per_topic, w.messages
    (('TopicTest',), 1, 1000)
    """
    w = Workload(messages=messages, seed=seed, topics=(topic,), queues_per_topic=1, **changes)
    _check_mapping(w)
    return w


def _check_mapping(w: Workload) -> None:
    problems = []
    if len(w.topics) != 1 or w.queues_per_topic != 1:
        problems.append(f"{len(w.topics)} topics x {w.queues_per_topic} queues (a Kafka partition holds one "
                        f"queue's messages: use one topic and queues_per_topic=1)")
    if w.transaction_fraction:
        problems.append("transactions (half and decision records have no Kafka counterpart)")
    if w.delay_fraction:
        problems.append("delayed messages (stored twice in RocketMQ)")
    if w.keys_per_message != 1:
        problems.append("keys_per_message != 1 (a Kafka record has one key)")
    if problems:
        raise ValueError("the workload does not map one to one onto a Kafka partition: " + "; ".join(problems))


@dataclass
class SideBySide:
    """The same messages as a RocketMQ store and as a Kafka partition (see the module
    docstring). ``messages``: one row per message in queue-offset order (= Kafka offset):
    queue_offset, phy_offset, total_size (CommitLog bytes), store_timestamp (ms), keys,
    uniq_key, sys_flag. Open the Kafka side with :meth:`kafka` (cached; :meth:`close`)."""

    root: Path
    workload: Workload
    store: Store
    kafka_dir: Path
    topic: str
    queue_id: int
    messages: pd.DataFrame
    kafka_segments: pd.DataFrame
    kafka_config: PartitionConfig
    records_per_batch: int
    _kafka: KafkaPartition | None = dataclasses.field(default=None, repr=False)
    _cq: cq.ConsumeQueue | None = dataclasses.field(default=None, repr=False)

    @property
    def queue_dir(self) -> Path:
        return cq.queue_dir(self.store.root, self.topic, self.queue_id)

    def kafka(self) -> KafkaPartition:
        """The partition, opened read-only once."""
        if self._kafka is None:
            self._kafka = KafkaPartition(self.kafka_dir)
        return self._kafka

    def consume_queue(self) -> cq.ConsumeQueue:
        """The queue's ConsumeQueue, mapped read-only once."""
        if self._cq is None:
            self._cq = cq.ConsumeQueue.open(self.queue_dir, self.store.consume_queue_file_size)
        return self._cq

    def store_time_of(self, phy_offsets) -> np.ndarray:
        """CommitLog.pickupStoreTimestamp for these CommitLog offsets (-1 where no message
        starts), from the messages read once. Cost: O(k log n)."""
        phy = np.asarray(phy_offsets, np.int64).reshape(-1)
        P = self._phy_sorted
        if not len(P):
            return np.full(len(phy), -1, np.int64)
        i = np.clip(np.searchsorted(P, phy), 0, len(P) - 1)
        return np.where(P[i] == phy, self._ts_by_phy[i], -1).astype(np.int64)

    def __post_init__(self):
        order = np.argsort(self.messages["phy_offset"].to_numpy(np.int64), kind="stable")
        self._phy_sorted = self.messages["phy_offset"].to_numpy(np.int64)[order]
        self._ts_by_phy = self.messages["store_timestamp"].to_numpy(np.int64)[order]
        self._size_by_phy = self.messages["total_size"].to_numpy(np.int64)[order]

    def message_size(self, phy_offsets) -> np.ndarray:
        """TOTALSIZE of the messages at these CommitLog offsets."""
        phy = np.asarray(phy_offsets, np.int64).reshape(-1)
        return self._size_by_phy[np.searchsorted(self._phy_sorted, phy)]

    def close(self) -> None:
        if self._kafka is not None:
            self._kafka.close()
            self._kafka = None
        if self._cq is not None:
            self._cq.close()
            self._cq = None

    def __enter__(self) -> SideBySide:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def build_side_by_side(root: str | os.PathLike, workload: Workload, *,
                       commitlog_file_size: int = COMMITLOG_FILE_SIZE, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
                       index_num: int = DEFAULT_INDEX_NUM, consume_queue_file_size: int = cq.DEFAULT_MAPPED_FILE_SIZE,
                       segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                       segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
                       index_interval_bytes: int = INDEX_INTERVAL_BYTES, records_per_batch: int = 1,
                       chunk_messages: int = 250_000) -> SideBySide:
    """Write `workload` (see :func:`comparison_workload`) as a RocketMQ store in
    ``<root>/rocketmq`` and as the Kafka partition ``<root>/kafka/<topic>-0``, closed cleanly.
    The RocketMQ options are the broker's (mappedFileSizeCommitLog, maxHashSlotNum,
    maxIndexNum, mappedFileSizeConsumeQueue; defaults 1 GiB, 5,000,000, 20,000,000, 6,000,000
    bytes), the Kafka ones the topic's (segment.bytes, segment.index.bytes,
    index.interval.bytes; defaults 1 GiB, 10 MiB, 4096). Refuses a workload that does not map
    one to one (ValueError) and a root that already holds either side. Cost: O(messages + bytes)
    for each side, vectorized a chunk at a time, plus the store's dispatch; RocketMQ's files are
    preallocated (sparse) to their full sizes.
    """
    _check_mapping(workload)
    root = Path(root)
    topic = workload.topics[0]
    store = generate_store(root / "rocketmq", workload, chunk_messages=chunk_messages,
                           commitlog_file_size=commitlog_file_size, hash_slot_num=hash_slot_num,
                           index_num=index_num, consume_queue_file_size=consume_queue_file_size)
    config = PartitionConfig(segment_bytes, segment_index_bytes, index_interval_bytes)
    kafka_dir = root / "kafka" / f"{topic}-0"
    with PartitionWriter(kafka_dir, segment_bytes=segment_bytes, segment_index_bytes=segment_index_bytes,
                         index_interval_bytes=index_interval_bytes, records_per_batch=records_per_batch) as w:
        for table in generate_chunks(workload, chunk_messages):
            w.append(records_from_workload(table, timestamp="store_timestamp"))
    msgs = store.messages(body=False)
    msgs = msgs[(msgs["topic"] == topic) & (msgs["queue_id"] == 0)].sort_values("queue_offset", kind="stable")
    msgs = msgs[["queue_offset", "phy_offset", "total_size", "store_timestamp", "keys", "uniq_key", "sys_flag"]]
    msgs = msgs.reset_index(drop=True)
    n = len(msgs)
    if not (msgs["queue_offset"].to_numpy() == np.arange(n)).all() or w.next_offset != n:
        raise AssertionError(f"the two sides do not hold the same {n} messages (Kafka: {w.next_offset})")
    return SideBySide(root, workload, store, kafka_dir, topic, 0, msgs, w.segments, config, records_per_batch)


# ------------------------------------------------------------------------------ bytes


def _sizes(paths) -> tuple[int, int]:
    paths = list(paths)
    return len(paths), sum(os.path.getsize(p) for p in paths)


def index_bytes_per_million(sbs: SideBySide) -> pd.DataFrame:
    """Index bytes per million messages, measured from the files written, one row a structure:
    system, structure, role, files, bytes_on_disk (file sizes: RocketMQ preallocates its
    files, Kafka trims a segment's indexes on roll and close), bytes_used (what the entries
    take: an IndexFile's header + slots + entries up to index_count; 20 bytes a ConsumeQueue
    unit; Kafka's files as they are), bytes_per_million (used bytes / messages x 1e6),
    on_disk_per_million, and model_per_million: rmqlab.capacity's value for the same traffic
    (RocketMQ: keys a message x file size / keys a full file; ConsumeQueue: 20 bytes a message;
    Kafka: :func:`~rmqlab.kafka.sizing.kafka_estimate` at the mean batch size). The last two
    rows are the data files (CommitLog, .log), for scale. Cost: a stat per file and one
    header read per index file."""
    n = len(sbs.messages)
    store = sbs.store
    rows = []

    def row(system, structure, role, files, on_disk, used, model):
        rows.append({"system": system, "structure": structure, "role": role, "files": files,
                     "bytes_on_disk": int(on_disk), "bytes_used": int(used),
                     "bytes_per_million": used / n * 1e6 if n else math.nan,
                     "on_disk_per_million": on_disk / n * 1e6 if n else math.nan,
                     "model_per_million": model})

    index_files = sorted(p for p in store.index_dir.iterdir() if p.is_file())
    g = Geometry(store.hash_slot_num, store.index_num)
    keys = used = 0
    for p in index_files:
        h = read_header(p)
        keys += max(h.index_count - 1, 0)
        used += HEADER.size + SLOT.size * g.hash_slot_num + ENTRY.size * h.index_count
    w = sbs.workload
    keys_per_message = (1.0 if w.uniq_key else 0.0) + (1.0 - w.keyless_fraction) * w.keys_per_message
    row("RocketMQ", "IndexFile", "key index (UNIQ_KEY and KEYS)", len(index_files),
        sum(os.path.getsize(p) for p in index_files), used, keys_per_message * g.file_size / g.capacity * 1e6)
    cq_files, cq_disk = _sizes(p for p in sbs.queue_dir.iterdir() if p.is_file())
    row("RocketMQ", "ConsumeQueue", "offset index (searched by time through the CommitLog)", cq_files, cq_disk,
        cq.UNIT_SIZE * n, cq.UNIT_SIZE * 1e6)
    rocket = rows[-2:]
    row("RocketMQ", "RocketMQ indexes", "total", sum(r["files"] for r in rocket),
        sum(r["bytes_on_disk"] for r in rocket), sum(r["bytes_used"] for r in rocket),
        sum(r["model_per_million"] for r in rocket))

    part = sbs.kafka()
    batches = pd.concat([part.batches(b) for b in part.segments], ignore_index=True)
    c = sbs.kafka_config
    model = offset_model = math.nan
    if len(batches):
        record_bytes = (float(batches["size"].mean()) - RECORD_BATCH_OVERHEAD) / sbs.records_per_batch
        e = kafka_estimate(float(w.rate), record_bytes=record_bytes, messages_per_batch=sbs.records_per_batch,
                           config=KafkaConfig(c.segment_bytes, c.segment_index_bytes, c.index_interval_bytes))
        model = e.index_bytes_per_million_messages
        # the two files by the model's own entry counts (the time index has the roll's entry too)
        offset_bytes = kidx.OFFSET_ENTRY.size * e.index_entries_per_segment
        offset_model = model * offset_bytes / e.index_bytes_per_segment if e.index_bytes_per_segment else 0.0
    for suffix, structure, role, share in ((kidx.INDEX_SUFFIX, ".index", "offset index (sparse)", offset_model),
                                           (kidx.TIME_INDEX_SUFFIX, ".timeindex", "time index (sparse)",
                                            model - offset_model)):
        files, disk = _sizes(sbs.kafka_dir / kidx.segment_file_name(b, suffix) for b in part.segments)
        row("Kafka", structure, role, files, disk, disk, share)
    kafka = rows[-2:]
    row("Kafka", "Kafka indexes", "total", sum(r["files"] for r in kafka), sum(r["bytes_on_disk"] for r in kafka),
        sum(r["bytes_used"] for r in kafka), model)

    cl_files = sorted(p for p in store.commitlog_dir.iterdir() if p.is_file())
    row("RocketMQ", "CommitLog", "data (for scale)", len(cl_files), sum(os.path.getsize(p) for p in cl_files),
        int(sbs.messages["total_size"].sum()), math.nan)
    row("Kafka", ".log", "data (for scale)", len(part.segments), part.log_bytes, part.log_bytes, math.nan)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ lookups


def _pages(offsets, sizes=None) -> int:
    """Distinct 4 KiB pages holding the bytes [offset, offset + size) of one file."""
    off = np.asarray(offsets, np.int64).reshape(-1)
    if not len(off):
        return 0
    size = np.ones(len(off), np.int64) if sizes is None else np.maximum(np.asarray(sizes, np.int64).reshape(-1), 1)
    first, last = off // PAGE, (off + size - 1) // PAGE
    return int(len(np.unique(np.concatenate([np.arange(a, b + 1) for a, b in zip(first.tolist(), last.tolist())]))))


def _row(kind, query, system, target, answer, found, entries, index_bytes, reads, data_bytes, pages, **extra):
    return {"kind": kind, "query": query, "system": system, "target": target, "answer": answer,
            "found_target": bool(found), "index_entries_read": int(entries), "index_bytes_read": int(index_bytes),
            "data_reads": int(reads), "data_bytes_read": int(data_bytes),
            "bytes_touched": int(index_bytes + data_bytes), "pages_touched": int(pages), **extra}


def _by_offset(sbs: SideBySide, q: int, query: int) -> list[dict]:
    queue = sbs.consume_queue()
    unit = queue.unit(q)
    phy, size = int(unit.commitlog_offset), int(unit.size)
    rocket = _row("offset", query, "RocketMQ", q, phy, phy == int(sbs.messages["phy_offset"].to_numpy(np.int64)[q]), 1,
                  cq.UNIT_SIZE, 1, size, _pages([q * cq.UNIT_SIZE], [cq.UNIT_SIZE]) + _pages([phy], [size]))
    k = sbs.kafka().lookup_offset(q)
    kafka = _row("offset", query, "Kafka", q, k.batch_last_offset if k.found else -1,
                 k.found and k.batch_base_offset <= q <= k.batch_last_offset, k.index_entries_read,
                 k.index_bytes_read, k.batches_read, k.log_bytes, k.pages_touched)
    return [rocket, kafka]


def _by_time(sbs: SideBySide, t: int, query: int) -> list[dict]:
    ts = sbs.messages["store_timestamp"].to_numpy(np.int64)
    first = np.flatnonzero(ts >= t)
    truth = int(first[0]) if len(first) else -1
    res = sbs.consume_queue().offset_by_time(t, sbs.store_time_of, boundary="lower")
    units = [s.queue_offset for s in res.steps if s.store_time is not None]
    phys = [s.commitlog_offset for s in res.steps if s.store_time is not None and s.store_time >= 0]
    rocket = _row("time", query, "RocketMQ", t, res.offset, res.offset == truth, res.probes,
                  cq.UNIT_SIZE * res.probes, len(phys), _STORE_TIME_BYTES * len(phys),
                  _pages(np.asarray(units, np.int64) * cq.UNIT_SIZE, [cq.UNIT_SIZE] * len(units))
                  + _pages(np.asarray(phys, np.int64) + _STORE_TIME_AT, [_STORE_TIME_BYTES] * len(phys)),
                  outcome=res.outcome)
    k = sbs.kafka().offsets_for_time(t)
    kafka = _row("time", query, "Kafka", t, k.offset, k.found and k.offset == truth, k.index_entries_read,
                 k.index_bytes_read, k.batches_read, k.log_bytes, k.pages_touched,
                 segments_checked=k.segments_checked)
    return [rocket, kafka]


def _by_key(sbs: SideBySide, key: str, q: int, query: int) -> list[dict]:
    with sbs.store.index() as svc:
        trace = svc.trace_query(sbs.topic, key, DEFAULT_MAX_MSGS_NUM_BATCH, 0, LONG_MAX)
        pages = entries = searched = 0
        for v in trace.files:
            if v.trace is None:
                continue
            g = svc.files[v.position].geometry
            searched += 1
            entries += len(v.trace.steps)
            at = [g.slot_offset(v.trace.slot)] + [g.entry_offset(s.entry) for s in v.trace.steps]
            pages += _pages(at, [SLOT.size] + [ENTRY.size] * len(v.trace.steps))
    found = list(trace.result.phy_offsets)
    sizes = sbs.message_size(found) if found else np.zeros(0, np.int64)
    pages += _pages(found, sizes)
    target_phy = int(sbs.messages["phy_offset"].to_numpy(np.int64)[q])
    rocket = _row("key", query, "RocketMQ", key, len(found), target_phy in found, entries,
                  SLOT.size * searched + ENTRY.size * entries, len(found), int(sizes.sum()), pages,
                  files_searched=searched)
    part = sbs.kafka()
    keys = part.keys()
    hits = keys.loc[keys["key"] == key.encode("utf-8"), "offset"].to_numpy(np.int64)
    log_pages = sum(_pages([0], [os.path.getsize(part.log_path(b))]) for b in part.segments)
    kafka = _row("key", query, "Kafka", key, len(hits), q in set(hits.tolist()), 0, 0, len(part.segments),
                 part.log_bytes, log_pages, files_searched=len(part.segments))
    return [rocket, kafka]


def lookup_costs(sbs: SideBySide, *, queries: int = 100, seed: int = 0, kinds=KINDS) -> pd.DataFrame:
    """Run `queries` random lookups of each kind on both systems and count what each read.
    One row a (query, system): kind, query, system, target (queue/Kafka offset; ms; key),
    answer (the offset / queue offset found, or for a key the offsets returned), found_target
    (the answer names the target message), the :data:`COST_COLUMNS`, agree (both systems
    found the same message) and a few extras (RocketMQ's time search outcome, Kafka segments
    checked, files searched by key).

    * **offset** (a random queue offset = Kafka offset). RocketMQ: one ConsumeQueue unit at
      offset x 20, then the message from the CommitLog. Kafka: the offset index's binary
      search (entries read, from ``trace_lookup``) and the batch headers from the index
      position to the batch holding the offset (:meth:`KafkaPartition.lookup_offset`).
    * **time** (a random ms between the first and last store time). RocketMQ: the
      ConsumeQueue search by store time (``getOffsetInQueueByTime``, boundary LOWER), every
      probed unit costing a random 8-byte read of the CommitLog. Kafka: ``offsetsForTimes``:
      time index, offset index, then batch headers up to the first batch reaching the time.
      Both answer the first message with store time >= the target.
    * **key** (the key of a random message whose key no other message has). RocketMQ: the
      IndexFile hash-slot walk in every file (``queryOffset``, maxNum 64: a slot read and the
      chain's entries), then the messages returned. Kafka: no key index: every byte of every
      segment (the answer comes from one cached decode, :meth:`KafkaPartition.keys`).

    data_reads counts separate reads of data files (CommitLog messages or store times;
    Kafka batch headers, sequential); pages_touched counts distinct 4 KiB pages per file.
    Cost: per query a few ms (the key walks in Python)."""
    n = len(sbs.messages)
    if n == 0:
        raise ValueError("the store holds no messages")
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if kind == "offset":
            for i, q in enumerate(rng.integers(0, n, queries).tolist()):
                rows += _by_offset(sbs, q, i)
        elif kind == "time":
            ts = sbs.messages["store_timestamp"].to_numpy(np.int64)
            for i, t in enumerate(rng.integers(int(ts.min()), int(ts.max()) + 1, queries).tolist()):
                rows += _by_time(sbs, t, i)
        else:
            keys = sbs.messages["keys"]
            counts = keys.value_counts()
            unique = np.flatnonzero(keys.map(counts).fillna(0).to_numpy() == 1)
            if not len(unique):
                raise ValueError("no message has a key of its own to look up")
            for i, q in enumerate(rng.choice(unique, queries).tolist()):
                rows += _by_key(sbs, str(keys.iat[q]), int(q), i)
    out = pd.DataFrame(rows)
    out["agree"] = out.groupby(["kind", "query"])["found_target"].transform("all").astype(bool)
    return out


def lookup_cost_summary(costs: pd.DataFrame) -> pd.DataFrame:
    """Means of the cost columns per kind and system (rows ordered by :data:`KINDS`, then
    :data:`SYSTEMS`), with queries and the share of them answered alike by both systems."""
    g = costs.groupby(["kind", "system"])
    out = g[list(COST_COLUMNS)].mean()
    out.insert(0, "queries", g.size())
    out["agree"] = g["agree"].mean()
    order = [(k, s) for k in KINDS for s in SYSTEMS if (k, s) in out.index]
    return out.loc[order]


# ------------------------------------------------------------------------------ time semantics


def time_semantics(sbs: SideBySide, *, window_ms: int = 999, seed: int = 0) -> pd.DataFrame:
    """One concrete difference between RocketMQ's whole-second key index and millisecond
    timestamps, on the generated data. A message m with a key of its own, stored at t ms, is
    picked where its IndexFile entry reads an earlier time (the file keeps ``(t - begin) //
    1000`` seconds after its begin timestamp) and m is the first message stored at t. Then:

    * RocketMQ, key query for m's key over [t, t + window_ms] (broker mode): misses m, whose
      stored time reads before t;
    * the same query verified against the CommitLog's millisecond store times: finds m;
    * RocketMQ's ConsumeQueue search by time (t, LOWER): the queue offset of m (it reads the
      real store times from the CommitLog);
    * Kafka ``offsetsForTimes(t)``: m's offset (first record with timestamp >= t, ms);
    * Kafka, a scan for m's key keeping timestamps in [t, t + window_ms]: finds m.

    Columns: system, structure, query, time_kept (the time the structure compares, ms),
    answer, finds_message. ``attrs`` holds the message (queue_offset, key, store_timestamp,
    file_begin, stored_time). Raises ValueError when no such message exists (every key-owning
    message stored on a whole second after its file's begin). Cost: one key walk and two
    searches."""
    m = sbs.messages
    ts = m["store_timestamp"].to_numpy(np.int64)
    keys = m["keys"]
    counts = keys.value_counts()
    own = keys.map(counts).fillna(0).to_numpy() == 1
    first_at = np.ones(len(ts), bool)
    first_at[1:] = ts[1:] != ts[:-1]
    with sbs.store.index() as svc:
        files = list(svc.files)
        begins = np.array([f.header.begin_timestamp for f in files], np.int64)
        ends = np.array([f.header.end_timestamp for f in files], np.int64)
    # the file holding a message's entry is the one whose time range holds its store time
    # (files follow one another in store time); the entry's time is begin + whole seconds
    which = np.clip(np.searchsorted(ends, ts, side="left"), 0, len(files) - 1)
    stored = begins[which] + time_diff_seconds(ts, begins[which]) * 1000
    cand = np.flatnonzero(own & first_at & (stored < ts) & (ts >= begins[which]))
    # keep the first candidate whose entry the broker's walk reads and judges too early
    # (keyquery's "missed-time"), not one the walk stops before reaching
    found = None
    for q in np.random.default_rng(seed).permutation(cand)[:50].tolist():
        key, t, phy = str(keys.iat[q]), int(ts[q]), int(m["phy_offset"].to_numpy(np.int64)[q])
        kq = sbs.store.explain_key(sbs.topic, key, begin=t, end=t + window_ms)
        reasons = kq.diff.set_index("phy_offset")["reason"]
        steps = kq.trace.steps_frame()
        mine = steps[(steps["phy_offset"] == phy) & steps["hash_match"].astype(bool)]
        if reasons.get(phy) == "missed-time" and len(mine):
            found = (q, key, t, phy, kq, int(mine["time_read"].iloc[0]), str(mine["file"].iloc[0]))
            break
    if found is None:
        raise ValueError("no message with a key of its own whose index entry reads an earlier second")
    q, key, t, phy, kq, time_read, file_name = found
    file_begin = int(begins[[f.path.name for f in files].index(file_name)])
    broker = kq.broker["phy_offset"].tolist()
    verified = kq.verified["phy_offset"].tolist()
    res = sbs.consume_queue().offset_by_time(t, sbs.store_time_of, boundary="lower")
    part = sbs.kafka()
    k = part.offsets_for_time(t)
    scan = part.scan_key(key)
    in_window = scan[(scan["timestamp"] >= t) & (scan["timestamp"] <= t + window_ms)]["offset"].tolist()
    rng_text = f"key {key!r}, store time in [t, t + {window_ms}] ms"
    rows = [
        ("RocketMQ", "IndexFile (broker)", rng_text, time_read, f"{len(broker)} messages", phy in broker),
        ("RocketMQ", "IndexFile, verified on the CommitLog", rng_text, t, f"{len(verified)} messages",
         phy in verified),
        ("RocketMQ", "ConsumeQueue search by time", "first message stored at >= t (LOWER)", t,
         f"queue offset {res.offset}", res.offset == q),
        ("Kafka", "time index + offset index + log", "offsetsForTimes(t)", t, f"offset {k.offset}", k.offset == q),
        ("Kafka", "log scan (no key index)", rng_text, t, f"{len(in_window)} records", q in in_window),
    ]
    out = pd.DataFrame(rows, columns=["system", "structure", "query", "time_kept", "answer", "finds_message"])
    out.attrs = {"queue_offset": q, "key": key, "store_timestamp": t, "index_file": file_name,
                 "file_begin": file_begin, "stored_time": time_read, "reason": "missed-time"}
    return out


# ------------------------------------------------------------------------------ the table


def comparison_table(index_bytes: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The closing side-by-side: index bytes per million messages and the mean bytes and pages
    touched per lookup of each kind, one column a system."""
    b = index_bytes.set_index("structure")["bytes_per_million"]
    rows = {
        "index bytes per million messages": (b["RocketMQ indexes"], b["Kafka indexes"]),
        "  of which key index": (b["IndexFile"], 0.0),
        "  of which offset / time index": (b["ConsumeQueue"], b["Kafka indexes"]),
    }
    for kind in KINDS:
        if (kind, "RocketMQ") in summary.index:
            for col, label in (("bytes_touched", "bytes touched"), ("pages_touched", "4 KiB pages touched"),
                               ("index_entries_read", "index entries read")):
                rows[f"by {kind}: {label}"] = (summary.loc[(kind, "RocketMQ"), col], summary.loc[(kind, "Kafka"), col])
            rows[f"by {kind}: same message found"] = (summary.loc[(kind, "RocketMQ"), "agree"],
                                                      summary.loc[(kind, "Kafka"), "agree"])
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(SYSTEMS))
