"""The key sample of the capacity model as it was before it streamed: every key string of the
sampled files held at once, hashed in one call (about 6 GiB at the default geometry). Kept as
the reference that the streamed :func:`rmqlab.capacity.model.sample_occupancy` must equal,
number for number, for the same plan and seed.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rmqlab.capacity.model import (
    SAMPLE_ENTRIES,
    SAMPLE_FILES,
    OccupancySample,
    _combine,
    _index_keys_per_message,
    _order_ids_per_file,
    _workload,
    broker_walk_entries,
)
from rmqlab.capacity.plan import Plan
from rmqlab.formats.indexfile import Geometry
from rmqlab.jvm.hashcode import index_hash_many
from rmqlab.lab.workload import generate_chunks
from rmqlab.rules.dispatch import index_keys_many


def sample_index_keys(plan: Plan, entries: int, *, hot_keys: int | None = None, seed: int | None = None,
                      first_order_id: int = 0) -> pa.Array:
    """Every one of the first `entries` index keys, as one pyarrow array."""
    w_hot = int(plan.keys.cardinality.likely) if hot_keys is None else int(hot_keys)
    per_msg = _index_keys_per_message(plan.keys, "likely")
    if per_msg <= 0:
        return pa.array([], pa.string())
    messages = int(math.ceil(entries / per_msg * 1.05)) + 16
    while True:
        w = _workload(plan, messages, w_hot, plan.seed if seed is None else int(seed), int(first_order_id))
        tables = list(generate_chunks(w, 1 << 20, bodies=False))
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        topic = table.column("topic").combine_chunks()
        owner, values = index_keys_many(table.column("keys"), table.column("uniq_key"))
        values = values.cast(pa.string())
        keys = pc.binary_join_element_wise(topic.take(pa.array(owner)), values, "#")
        if len(keys) >= entries:
            return keys.slice(0, entries)
        messages = int(messages * 1.5) + 16


def chain_lengths_from_keys(keys, hash_slot_num: int, keys_in_file: int, *,
                            max_num: int | None = None) -> OccupancySample:
    keys = keys[:keys_in_file]
    hashes = index_hash_many(keys).astype(np.int64)
    m = int(hash_slot_num)
    chains = np.bincount(hashes % m, minlength=m)
    used = int(np.count_nonzero(chains))
    n = len(hashes)
    distinct, per_hash = np.unique(hashes, return_counts=True)
    lengths, counts = np.unique(chains, return_counts=True)
    whole = chains[distinct % m]
    broker = whole if max_num is None else broker_walk_entries(whole, per_hash, int(max_num))
    occ = used / m
    return OccupancySample(
        hash_slot_num=m, entries=n, distinct_keys=len(distinct), slots_used=used, occupancy=occ,
        mean_chain_length=n / used, max_chain_length=int(chains.max()),
        entries_read_hit=float(whole.mean()), entries_read_miss=n / m,
        histogram=pd.DataFrame({"chain_length": lengths, "slots": counts}),
        entries_read_hit_broker=float(np.mean(broker)), max_num=None if max_num is None else int(max_num),
        occupancy_file_p5=occ, occupancy_file_p95=occ, occupancy_files=(occ,))


def sample_occupancy(plan: Plan, hash_slot_num: int | None = None, index_num: int | None = None, *,
                     max_entries: int = SAMPLE_ENTRIES, files: int | None = None,
                     whole_files: bool = False) -> OccupancySample:
    m = plan.index.hash_slot_num if hash_slot_num is None else int(hash_slot_num)
    n_idx = plan.index.index_num if index_num is None else int(index_num)
    capacity = Geometry(m, n_idx).capacity
    hot = int(plan.keys.cardinality.likely)
    max_num = plan.index.max_msgs_num_batch
    fit = max_entries // capacity
    if files is None:
        files = min(SAMPLE_FILES[0], fit) if fit >= SAMPLE_FILES[1] else (1 if whole_files else SAMPLE_FILES[1])
    files = int(files)
    if whole_files:
        max_entries = max(int(max_entries), files * capacity)
    if files * capacity <= max_entries:
        keys = sample_index_keys(plan, files * capacity)
        samples = [chain_lengths_from_keys(keys.slice(j * capacity, capacity), m, capacity, max_num=max_num)
                   for j in range(files)]
        return _combine(samples, 1.0)
    q = (max_entries / files) / capacity
    m_s = max(1, round(m * q))
    c_s = max(1, round(capacity * m_s / m))
    hot_s = max(1, round(hot * q))
    ids_per_file = _order_ids_per_file(plan, capacity)
    samples = [chain_lengths_from_keys(
        sample_index_keys(plan, c_s, hot_keys=hot_s, seed=plan.seed + j, first_order_id=(j + 1) * ids_per_file),
        m_s, c_s, max_num=max_num) for j in range(files)]
    return _combine(samples, m_s / m)
