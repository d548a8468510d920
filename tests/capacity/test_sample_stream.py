"""The capacity model's key sample against an independent computation of it.

:func:`rmqlab.capacity.model.sample_occupancy` streams the plan's index keys a chunk at a time,
hashes them in C and measures each file from its hashes. The reference
(tests/support/capacity_sample_reference.py, no rmqlab import) takes the same keys as strings,
all at once (:func:`~rmqlab.capacity.model.sample_index_keys`, the plan's documented stream),
hashes them with its own String.hashCode, counts every chain key by key and sums the broker's cut
walks term by term: the same OccupancySample, number for number. The key stream itself is judged
against the index keys of the workload's messages by the test's own reading of
IndexService.buildIndex (UNIQ_KEY first, then each non-empty KEYS token, as ``topic#key``)."""
from __future__ import annotations

import dataclasses
import math

import capacity_sample_reference as ref
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.capacity import model
from rmqlab.capacity.model import (
    _index_key_chunks,
    chain_lengths_from_hashes,
    chain_lengths_from_keys,
    sample_index_keys,
    sample_occupancy,
)
from rmqlab.capacity.plan import parse_plan
from rmqlab.jvm.hashcode import index_hash_many
from rmqlab.lab.workload import Workload, generate_chunks


def assert_same_sample(got, want: dict) -> None:
    """An OccupancySample against the reference's fields: counts exact, means to 1e-12."""
    for f in dataclasses.fields(got):
        g, w = getattr(got, f.name), want[f.name]
        if f.name == "histogram":
            assert dict(zip(g.chain_length.tolist(), g.slots.tolist())) == w
        elif f.name == "occupancy_files":
            assert g == pytest.approx(w, rel=1e-12)
        elif isinstance(w, float):
            assert g == pytest.approx(w, rel=1e-12, abs=1e-15), f.name
        else:
            assert g == w, f.name


def keys_of(plan):
    def keys(n, *, hot_keys=None, seed_offset=0, first_order_id=0):
        return sample_index_keys(plan, n, hot_keys=hot_keys, seed=plan.seed + seed_offset,
                                 first_order_id=first_order_id).to_pylist()
    return keys


def tokens_per_message(plan) -> float:
    return (1.0 - plan.keys.keyless_fraction) * plan.keys.keys_per_message.likely


def keys_per_message(plan) -> float:
    return (1.0 if plan.keys.uniq_key else 0.0) + tokens_per_message(plan)


def reference_sample(plan, **kwargs) -> dict:
    ix = plan.index
    return ref.sample_occupancy(
        keys_of(plan), slots=ix.hash_slot_num, index_num=ix.index_num, max_num=ix.max_msgs_num_batch,
        cardinality=int(plan.keys.cardinality.likely),
        # sample_occupancy's docstring: keyed tokens x (1 - hot share) / index keys a message
        order_ids_per_file=lambda c: int(round(c * tokens_per_message(plan) * (1.0 - plan.keys.hot_key_fraction)
                                               / keys_per_message(plan))),
        **kwargs)


def workload_index_keys(plan, entries: int) -> list[str]:
    """The first `entries` index keys of the plan's traffic, from the workload's messages: the
    workload sized as sample_index_keys documents it (5 % to spare, 1.5 times the messages
    again when short), each message's keys as buildIndex puts them."""
    k, m = plan.keys, plan.messages
    messages = int(math.ceil(entries / keys_per_message(plan) * 1.05)) + 16
    while True:
        w = Workload(seed=plan.seed, messages=messages, rate=plan.traffic.messages_per_second.likely,
                     topics=m.topics, queues_per_topic=m.queues_per_topic, keyless_fraction=k.keyless_fraction,
                     keys_per_message=k.keys_per_message.likely, max_keys_per_message=k.max_keys_per_message,
                     hot_key_fraction=k.hot_key_fraction, hot_keys=int(k.cardinality.likely),
                     zipf_s=k.zipf_s.likely, uniq_key=k.uniq_key)
        table = pa.concat_tables(list(generate_chunks(w, 1 << 20, bodies=False)))
        out = []
        for topic, uniq, keys in zip(*(table.column(c).to_pylist() for c in ("topic", "uniq_key", "keys"))):
            if uniq is not None:
                out.append(f"{topic}#{uniq}")
            out += [f"{topic}#{t}" for t in (keys or "").split(" ") if t]
        if len(out) >= entries:
            return out[:entries]
        messages = int(messages * 1.5) + 16


HOT = {"keys": {"uniq_key": False, "hot_key_fraction": 0.9, "cardinality": 200, "zipf_s": 1.2}}


@pytest.mark.parametrize("mapping, kwargs", [
    # several whole files fit the budget: consecutive files of one stream
    ({"index": {"hash_slot_num": 4000, "index_num": 16_000}}, {}),
    ({**HOT, "index": {"hash_slot_num": 4000, "index_num": 16_000}}, {}),
    # the default geometry, fast: four scaled files, each its own stream
    ({}, {}),
    (HOT, {}),
    # mid-size whole files: one, then two consecutive (the second starts mid-chunk)
    ({**HOT, "index": {"hash_slot_num": 60_000, "index_num": 240_000}}, {"whole_files": True}),
    ({"index": {"hash_slot_num": 60_000, "index_num": 240_000}, "keys": {"keys_per_message": 6.0}},
     {"whole_files": True, "files": 2}),
    ({"index": {"hash_slot_num": 5000, "index_num": 20_000}}, {"whole_files": True, "max_entries": 30_000}),
])
def test_streamed_sample_equals_the_reference(mapping, kwargs):
    plan = parse_plan(mapping)
    assert_same_sample(sample_occupancy(plan, **kwargs), reference_sample(plan, **kwargs))


@pytest.mark.parametrize("mapping", [{}, HOT, {"keys": {"keys_per_message": 3.0, "keyless_fraction": 0.3}}])
def test_the_key_stream_is_the_workloads_index_keys(mapping):
    plan = parse_plan(mapping)
    assert sample_index_keys(plan, 30_000).to_pylist() == workload_index_keys(plan, 30_000)


def test_files_that_start_and_end_inside_a_chunk(monkeypatch):
    # chunks of 97 messages: every file boundary falls inside a chunk of keys
    monkeypatch.setattr(model, "_KEY_CHUNK_MESSAGES", 97)
    monkeypatch.setattr(model, "_HASH_BLOCK", 1000)
    plan = parse_plan({**HOT, "index": {"hash_slot_num": 700, "index_num": 3001, "max_msgs_num_batch": 8}})
    got = sample_occupancy(plan, files=5)
    assert got.files == 5
    assert_same_sample(got, reference_sample(plan, files=5))
    assert sample_index_keys(plan, 12_345).to_pylist() == workload_index_keys(plan, 12_345)


def test_a_short_workload_starts_again_as_documented():
    # 90 % keyless messages: the workload sized for 40 keys (5 % to spare) is sometimes short,
    # and the stream starts again from its first key with more messages
    base = {"keys": {"uniq_key": False, "keyless_fraction": 0.9, "keys_per_message": 1.0},
            "index": {"hash_slot_num": 7, "index_num": 41}}
    for seed in range(200):
        plan = parse_plan({**base, "plan": {"seed": seed}})
        if any(chunk is None for chunk in _index_key_chunks(plan, 40)):
            break
    else:
        pytest.fail("no seed gave a short workload")
    assert_same_sample(sample_occupancy(plan, files=1), reference_sample(plan, files=1))
    assert sample_index_keys(plan, 40).to_pylist() == workload_index_keys(plan, 40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slots=st.integers(1, 3000), load=st.sampled_from([0.5, 1.0, 4.0, 40.0]),
       uniq=st.booleans(), keyless=st.sampled_from([0.0, 0.1, 0.7]), kpm=st.sampled_from([1.0, 2.5, 6.0]),
       hot=st.sampled_from([0.0, 0.2, 0.9, 1.0]), cardinality=st.integers(1, 500),
       zipf=st.sampled_from([0.0, 1.1, 1.5]), max_num=st.integers(1, 100), seed=st.integers(0, 2**31),
       whole=st.booleans(), budget=st.sampled_from([5_000, 20_000, 200_000]))
def test_streamed_sample_equals_the_reference_for_any_plan(slots, load, uniq, keyless, kpm, hot, cardinality,
                                                           zipf, max_num, seed, whole, budget):
    index_num = max(2, int(slots * load) + 1)
    plan = parse_plan({"plan": {"seed": seed},
                       "keys": {"uniq_key": uniq, "keyless_fraction": keyless, "keys_per_message": kpm,
                                "max_keys_per_message": 8, "hot_key_fraction": hot,
                                "cardinality": cardinality, "zipf_s": zipf},
                       "index": {"hash_slot_num": slots, "index_num": max(index_num, slots),
                                 "max_msgs_num_batch": max_num}})
    assert_same_sample(sample_occupancy(plan, max_entries=budget, whole_files=whole),
                       reference_sample(plan, max_entries=budget, whole_files=whole))


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.sampled_from(["Aa", "BB", "x", "hot", "y", "C#b", "C#c"]) | st.text(max_size=6),
                     min_size=1, max_size=400),
       slots=st.integers(1, 50), max_num=st.none() | st.integers(1, 20), block=st.integers(1, 64))
def test_chains_from_hashes_equal_the_reference_chains(keys, slots, max_num, block):
    # repeated keys and Java hash collisions ("Aa", "BB"); blocks small enough to split runs
    model._HASH_BLOCK, saved = block, model._HASH_BLOCK
    try:
        want = ref.one_file(keys, slots, max_num)
        assert_same_sample(chain_lengths_from_keys(keys, slots, len(keys), max_num=max_num), want)
        hashes = index_hash_many(keys)
        assert hashes.astype(np.int64).tolist() == ref.stored_hashes(keys).tolist()
        kept = hashes.copy()
        assert_same_sample(chain_lengths_from_hashes(hashes, slots, max_num=max_num), want)
        assert np.array_equal(hashes, kept)                    # not sorted in place unless allowed
    finally:
        model._HASH_BLOCK = saved
