"""The dispatch as it was before its columns moved to NumPy and its index keys to C: a pandas
groupby per queue over the whole frame, tags codes through a Python-level None fill, and the
index keys expanded to full ``topic#key`` strings with Arrow before hashing. Kept as the
reference the fast path must match byte for byte (tests/test_dispatch_fast.py) and as the
"old" row of benchmarks/bench_dispatch.py.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from rmqlab.dispatch import DELAY_LEVEL_TABLE, SCHEDULE_TOPIC, goes_to_consume_queue_many
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.javahash import java_hash_many
from rmqlab.store import DispatchReport, Store

_MISSING_LEVEL_DELAY = 1000


def reference_tags_codes(topics, tags, delay_levels, store_timestamps) -> np.ndarray:
    """message_tags_codes as first written: every element through a Python None test and the
    schedule-topic test on every row."""
    tags = np.frompyfunc(lambda t: "" if t is None else t, 1, 1)(np.asarray(tags, dtype=object)).astype(object)
    codes = java_hash_many(tags).astype(np.int64)
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


def reference_consume_queues(store: Store, msgs: pd.DataFrame) -> tuple[int, int, dict[str, int]]:
    """Store._dispatch_consume_queues as first written (pandas mask and groupby of the frame)."""
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
            codes = store._put_ext(topic, int(qid), codes, g["store_timestamp"].to_numpy(np.int64), has_files)
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


def reference_dispatch(store: Store) -> DispatchReport:
    """Store.dispatch with the first-written consume queue and index steps."""
    t0 = time.perf_counter()
    start = store.reput_from_offset()
    msgs = cl.read_columns(store.commitlog_dir, body=False, start_offset=start)
    end = int((msgs["phy_offset"] + msgs["total_size"]).max()) if len(msgs) else start
    simple, extra = store._dispatch_5x(msgs)
    units, queues, skipped = reference_consume_queues(store, simple)
    extra.update(lmq_units=store._dispatch_lmq(simple))
    with store.index(writable=True) as idx:
        keys = idx.build_columns(arrow_index_columns(msgs)) if len(msgs) else 0
        index_files = len(idx.files)
        index_msg_ts = idx.index_msg_timestamp
    store._update_checkpoint(msgs, index_msg_ts)
    return DispatchReport(start, end, len(msgs), units, queues, keys, index_files, msgs.attrs.get("report"),
                          time.perf_counter() - t0, skipped, **extra)
