"""The Kafka counterpart against hand-computed cases and a batch-by-batch simulation of
LogSegment.append / shouldRoll / onBecomeInactiveSegment at 3.6.2 (index entry when more than
index.interval.bytes were appended since the last one; roll on size, a full offset index, a time
index at its last slot but one, or segment.ms; the roll's time entry). The segments a real broker
rolls judge the model in tests/brokers/test_kafka_sizing.py."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.kafka.sizing import KafkaConfig, kafka_estimate


def simulate(batch: int, cfg: KafkaConfig, batches_per_second: float, per_batch: int):
    """Append batches (timestamps advancing) to one segment until it rolls; (batches, offset
    entries, time entries, reason)."""
    max_time, max_offset = cfg.segment_index_bytes // 12, cfg.segment_index_bytes // 8
    size = since = entries = n = 0
    last_indexed = False
    while True:
        # shouldRoll, before the append; at the roll the time index takes the segment's largest
        # timestamp unless the last batch's entry holds it
        time_entries = entries + (0 if last_indexed else 1)
        if size + batch > cfg.segment_bytes:
            return n, entries, time_entries, "segment.bytes"
        # a full index rolls an empty segment into a new empty one (LocalLog.roll): the first
        # batch always goes in
        if n > 0 and entries >= max_time - 1:      # TimeIndex.isFull: the last slot is the roll's
            return n, entries, time_entries, "time index full"
        if n > 0 and entries >= max_offset:
            return n, entries, time_entries, "offset index full"
        if (n + 1) * per_batch - 1 > 2**31 - 1:
            return n, entries, time_entries, "relative offset"
        if n > 0 and n / batches_per_second * 1000 >= cfg.segment_ms:
            return n, entries, time_entries, "segment.ms"
        last_indexed = since > cfg.index_interval_bytes
        if last_indexed:
            entries += 1
            since = 0
        since += batch
        size += batch
        n += 1


def test_hand_computed_default():
    # B = 61 + 200 = 261; P = 4096 // 261 + 1 = 16; n = 2^30 // 261 = 4,113,953
    e = kafka_estimate(1000.0, record_bytes=200)
    assert (e.batch_bytes, e.batches_per_index_entry, e.batches_per_segment) == (261, 16, 4_113_953)
    assert e.index_entries_per_segment == (4_113_953 - 1) // 16
    assert e.rolls_first == "segment.bytes"
    # 4,113,952 = 16 x 257,122: the last batch takes an entry, so the roll adds no time entry
    assert e.time_index_entries_per_segment == e.index_entries_per_segment
    assert e.index_bytes_per_segment == e.index_entries_per_segment * 20
    assert e.hours_per_segment == pytest.approx(4_113_953 / 1000 / 3600)
    assert e.segments_per_day == pytest.approx(86400 * 1000 / 4_113_953)
    assert e.index_bytes_per_million_messages == pytest.approx(257_122 * 20 / 4_113_953 * 1e6)


def test_small_batches_fill_the_time_index_first():
    # 100-byte batches, an entry every batch (interval 0): 10 MiB / 12 = 873,813 slots, full
    # at 873,812 (the last kept for the roll), long before 1 GiB (10.7M batches)
    cfg = KafkaConfig(index_interval_bytes=0)
    e = kafka_estimate(1e6, record_bytes=39, config=cfg)
    assert e.batch_bytes == 100 and e.batches_per_index_entry == 1
    assert e.rolls_first == "time index full"
    assert e.index_entries_per_segment == e.time_index_entries_per_segment == 873_812
    assert e.batches_per_segment == 873_813


def test_slow_topic_rolls_on_time():
    e = kafka_estimate(0.01, record_bytes=100)
    assert e.rolls_first == "segment.ms"
    assert e.hours_per_segment == pytest.approx(7 * 24, rel=1e-3)


@given(st.integers(1, 500), st.integers(1, 4), st.integers(0, 300), st.integers(2_000, 60_000),
       st.integers(12, 400), st.floats(0.5, 50))
@settings(max_examples=120, deadline=None)
def test_matches_simulation(record, per_batch, interval, seg_bytes, index_bytes, rate):
    cfg = KafkaConfig(segment_bytes=seg_bytes, segment_index_bytes=index_bytes,
                      index_interval_bytes=interval, segment_ms=3_600_000)
    batch = 61 + record * per_batch
    if batch > seg_bytes:
        with pytest.raises(ValueError):
            kafka_estimate(rate * per_batch, record, per_batch, cfg)
        return
    e = kafka_estimate(rate * per_batch, record, per_batch, cfg)
    n, entries, time_entries, reason = simulate(batch, cfg, rate, per_batch)
    assert (e.batches_per_segment, e.index_entries_per_segment, e.time_index_entries_per_segment,
            e.rolls_first) == (n, entries, time_entries, reason)
    assert e.index_bytes_per_segment == 8 * entries + 12 * time_entries


def test_bad_input():
    with pytest.raises(ValueError, match="messages_per_second"):
        kafka_estimate(-1.0, 100)
    with pytest.raises(ValueError, match="segment_bytes"):
        KafkaConfig(segment_bytes=0)
