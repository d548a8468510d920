"""The broker's index-building rule (rmqlab.kafkarebuild) against a literal, batch-by-batch
model of LogSegment.recover + TimeIndex.maybeAppend, and against real segments."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rmqlab.kafkarebuild import batch_table, compare, expected_entries


def literal_rule(batches, interval=4096, rolled=True):
    """LogSegment.recover, one batch at a time, as the Java reads."""
    offsets, times = [], []
    max_ts, max_off = -1, None
    last_entry, valid = 0, 0
    base_offset = int(batches["base_offset"].iloc[0]) if len(batches) else 0

    def maybe_append(ts, off):
        last_ts, last_off = times[-1] if times else (-1, base_offset)
        if times and off < last_off:
            raise AssertionError("the rule never offers an older offset")
        if ts > last_ts:
            times.append((ts, off))

    for b in batches.itertuples():
        assert b.position == valid
        if b.max_timestamp > max_ts:
            max_ts, max_off = b.max_timestamp, b.last_offset
        if valid - last_entry > interval:
            offsets.append((b.last_offset, valid))
            maybe_append(max_ts, max_off)
            last_entry = valid
        valid += b.size
    if rolled and max_off is not None:
        maybe_append(max_ts, max_off)
    return offsets, times


@st.composite
def segments(draw):
    n = draw(st.integers(0, 60))
    sizes = draw(st.lists(st.integers(61, 9000), min_size=n, max_size=n))
    counts = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    # timestamps wander, with repeats and steps back (producers' clocks, CreateTime)
    ts = draw(st.lists(st.integers(-1, 40), min_size=n, max_size=n))
    base = draw(st.integers(0, 10**6))
    pos = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if n else np.zeros(0)
    last = base + np.cumsum(counts) - 1 if n else np.zeros(0)
    first = last - np.asarray(counts) + 1 if n else np.zeros(0)
    return batch_table(positions=pos, sizes=sizes, base_offsets=first, last_offsets=last,
                       max_timestamps=np.asarray(ts) * 1000)


@settings(max_examples=300, deadline=None)
@given(segments(), st.sampled_from([0, 100, 4096, 20_000]), st.booleans())
def test_expected_entries_follow_the_literal_rule(batches, interval, rolled):
    offsets, times = expected_entries(batches, interval, rolled=rolled)
    want_off, want_time = literal_rule(batches, interval, rolled)
    assert [tuple(r) for r in offsets.tolist()] == want_off
    assert [tuple(r) for r in times.tolist()] == want_time
    assert compare(batches, offsets, times, index_interval_bytes=interval, rolled=rolled) == []


def test_a_pre_38_time_entry_is_explained_and_a_wrong_one_is_not():
    b = batch_table(positions=[0, 5000, 10000], sizes=[5000, 5000, 200], base_offsets=[0, 6, 8],
                    last_offsets=[5, 7, 8], max_timestamps=[10, 20, 15])
    offsets, times = expected_entries(b)
    assert times.tolist() == [[20, 7]]
    found = compare(b, offsets, [[20, 6]])
    assert [m.kind for m in found] == ["pre-3.8 time entry"] and "KAFKA-16310" in found[0].explanation
    wrong = compare(b, offsets, [[20, 5]])        # offset 5 is not in the batch holding 20
    assert [m.kind for m in wrong] == ["time entry"]
    short = compare(b, offsets[:0], times)
    assert [m.kind for m in short] == ["offset entry count"]
