"""The Kafka sizing model (:func:`rmqlab.kafka.sizing.kafka_estimate`) against the segments a
real Kafka broker rolled (tests/support/kafka_harness.py, :func:`kafka_harness.kafka_sizing`).

One broker run of Kafka 3.6.2 fills two topics, each from the release's own ProducerPerformance
(one record a batch, null keys, 100-byte values, 20 records a second):

* ``roll-on-bytes``: segment.bytes 4,000, index.interval.bytes 500: segments roll on size;
* ``roll-on-time-index``: segment.index.bytes 60 (5 time slots, 7 offset slots),
  index.interval.bytes 500: segments roll when the time index is full.

The model is given only the topic configs and the batch size, which the test derives from the
record layout (DefaultRecord: length, attributes, timestamp and offset deltas, key, value,
headers; a 61-byte batch header). The truth is the files the broker left after a clean stop:
how many segments, each ``.log``, ``.index`` and ``.timeindex`` size, and the batches' own
timestamps, read with struct.

The model assumes timestamps advance between index entries. ProducerPerformance sends the
records its throttle owes at once after its start-up (its clock starts before the producer's
first metadata request), so the first segments' batches share milliseconds and their time
indexes skip entries (TimeIndex.maybeAppend). The test finds those segments from the
timestamps in the ``.log`` and holds them to what the model allows (no more time entries, and
on the time-index topic no fewer batches); every other segment must be exactly as predicted.
A loaded machine starts the producer later and the burst is longer: 12 and 10 s of records (240
and 200) leave steady segments after it (5 s left none on a CI machine at a load of 16).
"""
from __future__ import annotations

import math
import struct
from pathlib import Path

import kafka_harness as kh
import pytest
from kafka_wire import varint

from rmqlab.kafka.sizing import KafkaConfig, kafka_estimate

RELEASE = "3.6.2"
VALUE = 100
RATE = 20
TOPICS = {
    "roll-on-bytes": {"configs": {"segment.bytes": "4000", "index.interval.bytes": "500"},
                      "records": 240, "record_size": VALUE, "throughput": RATE},
    "roll-on-time-index": {"configs": {"segment.bytes": "1048576", "segment.index.bytes": "60",
                                       "index.interval.bytes": "500"},
                           "records": 200, "record_size": VALUE, "throughput": RATE},
}
BATCH_HEADER = 61     # DefaultRecordBatch.RECORD_BATCH_OVERHEAD


def record_bytes(value: int) -> int:
    """A record's bytes in its batch: attributes (1), timestamp delta 0 and offset delta 0 (a
    varint byte each), key length -1 (1), value length and value, header count 0 (1), all behind
    the varint of that length."""
    body = 1 + 1 + 1 + len(varint(-1)) + len(varint(value)) + value + len(varint(0))
    return len(varint(body)) + body


def batches(log: Path) -> list[tuple[int, int, int]]:
    """(base offset, position, max timestamp) of each v2 batch of a .log."""
    data, pos, out = log.read_bytes(), 0, []
    while pos + BATCH_HEADER <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        assert data[pos + 16] == 2, "magic v2"
        (records,) = struct.unpack_from(">i", data, pos + 57)
        assert records == 1, "one record a batch"
        out.append((base, pos, struct.unpack_from(">q", data, pos + 35)[0]))
        pos += 12 + length
    assert pos == len(data)
    return out


def time_entries_if_steady(ts: list[int], every: int) -> int | None:
    """The time-index entries of a segment whose batches have timestamps `ts` and take an index
    entry on batches every+1, 2 every+1, ... when each entry's largest timestamp so far passed
    the one before and the segment's largest passed the last entry's (LogSegment.append,
    TimeIndex.maybeAppend, onBecomeInactiveSegment at 3.6.2); None when they did not."""
    running = [max(ts[:i + 1]) for i in range(len(ts))]
    at = [running[k] for k in range(every, len(ts), every)]
    if any(b <= a for a, b in zip(at, at[1:])):
        return None
    if not at:
        return 1
    if (len(ts) - 1) % every == 0:
        return len(at)
    return len(at) + 1 if running[-1] > at[-1] else None


@pytest.fixture(scope="module")
def log_dir() -> Path:
    kh.bh.require_java_and_maven()
    return kh.kafka_sizing(RELEASE, TOPICS, log=lambda m: None)


@pytest.mark.parametrize("topic", list(TOPICS))
def test_segments_the_broker_rolled_are_the_models(log_dir, topic):
    spec = TOPICS[topic]
    cfg = {k: int(v) for k, v in spec["configs"].items()}
    config = KafkaConfig(segment_bytes=cfg["segment.bytes"], index_interval_bytes=cfg["index.interval.bytes"],
                         **({"segment_index_bytes": cfg["segment.index.bytes"]}
                            if "segment.index.bytes" in cfg else {}))
    e = kafka_estimate(float(RATE), record_bytes(VALUE), 1, config)
    part = log_dir / f"{topic}-0"
    logs = sorted(part.glob("*.log"))
    segs = [batches(f) for f in logs]
    B = e.batch_bytes
    assert B == 170 and {p2 - p1 for s in segs for (_, p1, _), (_, p2, _) in zip(s, s[1:])} == {B}
    assert sum(len(s) for s in segs) == spec["records"]
    n, P = e.batches_per_segment, e.batches_per_index_entry
    assert (e.rolls_first, n, P) == {"roll-on-bytes": ("segment.bytes", 23, 3),
                                     "roll-on-time-index": ("time index full", 13, 3)}[topic]
    steady = 0
    for i, (f, s) in enumerate(zip(logs, segs)):
        rolled = i < len(logs) - 1
        m = len(s)
        entries = (m - 1) // P
        time_entries = time_entries_if_steady([t for _, _, t in s], P)
        size = {x: f.with_suffix(x).stat().st_size for x in (".log", ".index", ".timeindex")}
        where = f"{f.name}: {m} batches, timestamps {'steady' if time_entries else 'bunched'}, sizes {size}"
        assert size[".log"] == m * B, where
        assert size[".index"] == entries * 8, where       # offset entries need no timestamps
        if rolled and time_entries is not None:
            steady += 1
            assert (m, entries, time_entries) == (n, e.index_entries_per_segment, e.time_index_entries_per_segment), \
                where
            assert size[".index"] + size[".timeindex"] == e.index_bytes_per_segment, where
        elif rolled:
            # bunched timestamps skip time entries: never more than the model's, and a time
            # index that fills later lets more batches in, never fewer
            if topic == "roll-on-bytes":
                assert m == n and size[".timeindex"] <= e.time_index_entries_per_segment * 12, where
            else:
                assert m > n and size[".timeindex"] <= cfg["segment.index.bytes"], where
        else:   # the active segment, closed: trimmed, with its close-time entry when steady
            assert m <= n, where
            if time_entries is not None:
                assert size[".timeindex"] == time_entries * 12, where
    # segments the model counts: a rolled one holds n batches, so the bytes topic has ceil(N / n)
    if topic == "roll-on-bytes":
        assert len(logs) == math.ceil(spec["records"] / n)
    assert steady >= 2, f"{topic}: fewer than two rolled segments with advancing timestamps"
