"""The streamed key sample (keys made, hashed and dropped a chunk at a time) against the one it
replaced, which held every key string of the sampled files at once
(tests/support/capacity_sample_reference.py): the same OccupancySample, number for number, for the same
plan and seed."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from capacity_sample_reference import chain_lengths_from_keys as reference_chains
from capacity_sample_reference import sample_index_keys as reference_keys
from capacity_sample_reference import sample_occupancy as reference_sample
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


def _fields(s) -> dict:
    return {f.name: getattr(s, f.name) for f in dataclasses.fields(s) if f.name != "histogram"}


def assert_same_sample(got, want) -> None:
    assert _fields(got) == _fields(want)
    assert got.histogram.reset_index(drop=True).equals(want.histogram.reset_index(drop=True))


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
def test_streamed_sample_equals_the_all_at_once_sample(mapping, kwargs):
    plan = parse_plan(mapping)
    assert_same_sample(sample_occupancy(plan, **kwargs), reference_sample(plan, **kwargs))


def test_files_that_start_and_end_inside_a_chunk(monkeypatch):
    # chunks of 97 messages: every file boundary falls inside a chunk of keys
    monkeypatch.setattr(model, "_KEY_CHUNK_MESSAGES", 97)
    monkeypatch.setattr(model, "_HASH_BLOCK", 1000)
    plan = parse_plan({**HOT, "index": {"hash_slot_num": 700, "index_num": 3001, "max_msgs_num_batch": 8}})
    got = sample_occupancy(plan, files=5)
    assert got.files == 5
    assert_same_sample(got, reference_sample(plan, files=5))
    assert sample_index_keys(plan, 12_345).equals(reference_keys(plan, 12_345))


def test_a_short_workload_starts_again_as_before():
    # 90 % keyless messages: the workload sized for 40 keys (5 % to spare) is sometimes short,
    # and the stream starts again from its first key with more messages, as the old sample did
    base = {"keys": {"uniq_key": False, "keyless_fraction": 0.9, "keys_per_message": 1.0},
            "index": {"hash_slot_num": 7, "index_num": 41}}
    for seed in range(200):
        plan = parse_plan({**base, "plan": {"seed": seed}})
        if any(chunk is None for chunk in _index_key_chunks(plan, 40)):
            break
    else:
        pytest.fail("no seed gave a short workload")
    assert_same_sample(sample_occupancy(plan, files=1), reference_sample(plan, files=1))
    assert sample_index_keys(plan, 40).equals(reference_keys(plan, 40))


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
        want = reference_chains(keys, slots, len(keys), max_num=max_num)
        assert_same_sample(chain_lengths_from_keys(keys, slots, len(keys), max_num=max_num), want)
        hashes = index_hash_many(keys)
        kept = hashes.copy()
        assert_same_sample(chain_lengths_from_hashes(hashes, slots, max_num=max_num), want)
        assert np.array_equal(hashes, kept)                    # not sorted in place unless allowed
    finally:
        model._HASH_BLOCK = saved
