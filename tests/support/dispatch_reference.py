"""The dispatch as it was before its columns moved to NumPy and its index keys to C: a pandas
groupby per queue over the whole frame, tags codes through a Python-level None fill, and the
index keys expanded to full ``topic#key`` strings with Arrow before hashing. Kept as the
reference the fast path must match byte for byte (tests/store/test_reput.py) and as the
"old" row of benchmarks/bench_dispatch.py.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.commitlog import broker_strings
from rmqlab.jvm.hashcode import java_hash_many
from rmqlab.rules.dispatch import DELAY_LEVEL_TABLE, SCHEDULE_TOPIC, goes_to_consume_queue_many, lmq_dispatch_many
from rmqlab.store.directory import DispatchReport, Store
from rmqlab.store.reput import QueueWriters, Run

_MISSING_LEVEL_DELAY = 1000


def reference_tags_codes(topics, tags, delay_levels, store_timestamps) -> np.ndarray:
    """message_tags_codes as first written: every element through a Python None test and the
    schedule-topic test on every row."""
    tags = np.frompyfunc(lambda t: "" if t is None else t, 1, 1)(np.asarray(tags, dtype=object)).astype(object)
    # the broker hashes the String it decoded (U+FFFD where the bytes are not UTF-8)
    codes = java_hash_many(broker_strings(tags)).astype(np.int64)
    table = DELAY_LEVEL_TABLE
    top = max(table)
    level = np.minimum(np.asarray(delay_levels, dtype=np.int64).reshape(-1), top)
    delayed = (np.asarray(topics, dtype=object).reshape(-1) == SCHEDULE_TOPIC) & (level > 0)
    if delayed.any():
        delays = np.array([0] + [table.get(i, _MISSING_LEVEL_DELAY) for i in range(1, top + 1)], np.int64)
        with np.errstate(over="ignore"):
            codes[delayed] = np.asarray(store_timestamps, dtype=np.int64).reshape(-1)[delayed] \
                + delays[level[delayed]]
    return codes


def reference_consume_queues(store: Store, msgs: pd.DataFrame, writers: QueueWriters | None = None,
                             ) -> tuple[int, int, dict[str, int]]:
    """The ConsumeQueue step as first written (pandas mask and groupby of the frame), the
    ConsumeQueueExt units through `writers` (one QueueWriters for the whole dispatch)."""
    put = msgs[goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64))]
    if put.empty:
        return 0, 0, {}
    codes = reference_tags_codes(put["topic"].to_numpy(object), put["tags"].to_numpy(object),
                                 put["delay_level"].to_numpy(np.int64), put["store_timestamp"].to_numpy(np.int64))
    put = put.assign(tags_code=codes)
    written, skipped = 0, {}
    groups = put.groupby(["topic", "queue_id"], sort=True)
    for (topic, qid), g in groups:
        folder = cq.queue_dir(store.root, topic, int(qid))
        has_files = folder.is_dir() and any(folder.iterdir())
        codes = g["tags_code"].to_numpy(np.int64)
        if store.consume_queue_ext:
            own = writers is None
            writers = QueueWriters(store.layout) if own else writers
            codes = writers.ext(topic, int(qid)).put_many(codes, g["store_timestamp"].to_numpy(np.int64))
            if own:
                writers.close()
        opener = cq.ConsumeQueueWriter.open if has_files else cq.ConsumeQueueWriter.create
        with opener(folder, mapped_file_size=store.consume_queue_file_size) as w:
            status = w.put_many(g["phy_offset"].to_numpy(np.int64), g["total_size"].to_numpy(np.int64),
                                codes, g["queue_offset"].to_numpy(np.int64))
        names, counts = np.unique(status, return_counts=True)
        for s_, c in zip(names, counts):
            name = cq.STATUS_NAMES[int(s_)]
            if name == "written":
                written += int(c)
            else:
                skipped[name] = skipped.get(name, 0) + int(c)
    return written, groups.ngroups, skipped


def arrow_index_columns(msgs: pd.DataFrame) -> dict:
    """The index columns with Arrow text: IndexService.build_columns then expands the full key
    strings (expand_columns) and hashes them (index_hash_many), the path it first had."""
    import pyarrow as pa

    out = {c: msgs[c].to_numpy() for c in ("phy_offset", "store_timestamp", "sys_flag")}
    for c in ("topic", "keys", "uniq_key"):
        out[c] = pa.array(msgs[c].to_numpy(object), type=pa.large_string(), from_pandas=True)
    return out


def reference_lmq(store: Store, msgs: pd.DataFrame) -> int:
    """The multi-dispatch units as first written: after every message's own unit, a pandas
    groupby per queue (the same bytes as message order unless a queue gets both kinds)."""
    if not store.enable_multi_dispatch or msgs.empty:
        return 0
    put = msgs[goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64))]
    rows, units, _ = lmq_dispatch_many(put["topic"].to_numpy(object), put["queue_id"].to_numpy(np.int64),
                                       put["properties"], enable_lmq=store.enable_lmq,
                                       enable_multi_dispatch=True, broker_version=store.broker_version)
    if not len(rows):
        return 0
    src = put.iloc[rows]
    codes = reference_tags_codes(src["topic"].to_numpy(object), src["tags"].to_numpy(object),
                                 src["delay_level"].to_numpy(np.int64), src["store_timestamp"].to_numpy(np.int64))
    frame = pd.DataFrame({"name": [u[0] for u in units], "qid": [u[1] for u in units],
                          "qoff": np.array([u[2] for u in units], np.int64),
                          "phy": src["phy_offset"].to_numpy(np.int64),
                          "size": src["total_size"].to_numpy(np.int64), "code": codes})
    written = 0
    for (name, qid), g in frame.groupby(["name", "qid"], sort=True):
        folder = cq.queue_dir(store.root, name, int(qid))
        opener = cq.ConsumeQueueWriter.open if folder.is_dir() and any(folder.iterdir()) \
            else cq.ConsumeQueueWriter.create
        with opener(folder, mapped_file_size=store.consume_queue_file_size) as w:
            status = w.put_many(g["phy"].to_numpy(), g["size"].to_numpy(), g["code"].to_numpy(), g["qoff"].to_numpy())
        written += int(sum(cq.STATUS_NAMES[int(x)] not in ("duplicate-physical", "duplicate-logical")
                           for x in status))
    return written


def reference_dispatch(store: Store) -> DispatchReport:
    """Store.dispatch as first written: the whole CommitLog read at once (str objects), then
    each step over all of it, with the first-written consume queue, multi-dispatch and index
    steps."""
    t0 = time.perf_counter()
    start = store.reput_from_offset()
    msgs = cl.read_columns(store.commitlog_dir, body=False, start_offset=start)
    end = int((msgs["phy_offset"] + msgs["total_size"]).max()) if len(msgs) else start
    run = Run(store.layout)
    try:
        simple = run.batch_queues(msgs)
        units, queues, skipped = reference_consume_queues(store, simple, run.writers)
    finally:
        run.writers.close()
    lmq_units = reference_lmq(store, simple)
    with store.index(writable=True) as idx:
        keys = idx.build_columns(arrow_index_columns(msgs)) if len(msgs) else 0
        index_files = len(idx.files)
        index_msg_ts = idx.index_msg_timestamp
    if len(msgs):
        run.note_times(msgs)
    run.write_checkpoint(index_msg_ts)
    return DispatchReport(start, end, len(msgs), units, queues, keys, index_files, msgs.attrs.get("report"),
                          time.perf_counter() - t0, skipped, batch_queue_units=run.batch_units, lmq_units=lmq_units)
