"""The Kafka counterpart of the capacity model, for side-by-side planning: segments a day,
index entries per segment, which limit rolls a segment first, index disk per million messages.

Pure arithmetic from Kafka's log semantics (``LogSegment.append`` / ``shouldRoll``):

* Records arrive in batches of B bytes (61-byte batch header, DefaultRecordBatch
  RECORD_BATCH_OVERHEAD, plus the records). Before appending a batch the segment adds an
  offset-index entry (8 bytes: relative offset i32, position i32) and a time-index entry
  (12 bytes: timestamp i64, relative offset i32) when MORE than ``index.interval.bytes`` (I)
  were appended since the last entry; the counter then restarts from this batch's bytes.
  So entries fall on batches P+1, 2P+1, ... with P = floor(I / B) + 1 (the first P batches
  of a segment never get one): floor((n - 1) / P) entries in a segment of n batches.
* The time-index entry is the largest timestamp so far, and TimeIndex.maybeAppend skips it
  unless that timestamp passed the last entry's. The model assumes it did (records' timestamps
  advance between index entries: no burst of batches stamped in one millisecond); then each
  offset-index entry has its time-index entry.
* A segment rolls when the next batch would pass ``segment.bytes`` (n = floor(S / B)
  batches), when its offset index (``segment.index.bytes`` / 8 entries, the file size rounded
  down to whole entries) is full, or its time index holds ``segment.index.bytes`` / 12 - 1
  entries (TimeIndex.isFull keeps the last slot for the roll; read at 2.8.2, 3.6.2, 3.9.0); checked before each
  append, so a full index lets full_entries x P + 1 batches in. Or when its relative offsets
  would pass Int.MAX, or after ``segment.ms``.
* On roll (LogSegment.onBecomeInactiveSegment) and at a clean close the time index gets one
  more entry, the segment's largest timestamp, unless the last batch already put it there
  (the last batch took an index entry): then both index files are trimmed to their entries.
  While a segment is active its index files are preallocated to ``segment.index.bytes`` each.

>>> e = kafka_estimate(1000.0, record_bytes=200)
>>> e.batches_per_index_entry, e.rolls_first
(16, 'segment.bytes')
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from rmqlab.kafka.index import OFFSET_ENTRY, TIME_ENTRY
from rmqlab.kafka.log import RECORD_BATCH_OVERHEAD

__all__ = ["KafkaConfig", "KafkaEstimate", "kafka_estimate", "RECORD_BATCH_OVERHEAD",
           "OFFSET_ENTRY_BYTES", "TIME_ENTRY_BYTES"]

OFFSET_ENTRY_BYTES = OFFSET_ENTRY.size   # OffsetIndex: relative offset i32 + position i32
TIME_ENTRY_BYTES = TIME_ENTRY.size       # TimeIndex: timestamp i64 + relative offset i32
_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class KafkaConfig:
    """Topic / broker settings (Kafka defaults): log.segment.bytes 1 GiB,
    log.index.size.max.bytes (segment.index.bytes) 10 MiB, log.index.interval.bytes 4096,
    log.roll.ms (segment.ms) 7 days."""

    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 << 20
    index_interval_bytes: int = 4096
    segment_ms: int = 7 * 24 * 3600 * 1000

    def __post_init__(self):
        for name in ("segment_bytes", "segment_index_bytes", "segment_ms"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if isinstance(self.index_interval_bytes, bool) or not isinstance(self.index_interval_bytes, int) \
                or self.index_interval_bytes < 0:
            raise ValueError(f"index_interval_bytes must be a non-negative int, got {self.index_interval_bytes!r}")
        if self.segment_index_bytes < TIME_ENTRY_BYTES:
            raise ValueError(f"segment_index_bytes must hold at least one {TIME_ENTRY_BYTES}-byte entry")


@dataclass(frozen=True)
class KafkaEstimate:
    """Outputs (units in the names), for a rolled segment. ``rolls_first`` is one of
    "segment.bytes", "time index full", "offset index full", "relative offset", "segment.ms".
    ``index_entries_per_segment``: offset-index entries; ``time_index_entries_per_segment``:
    time-index entries once the segment rolled (the roll's entry included);
    ``index_bytes_per_segment``: both files, trimmed."""

    batch_bytes: int
    bytes_per_day: float
    batches_per_index_entry: int
    batches_per_segment: int
    messages_per_segment: int
    index_entries_per_segment: int
    rolls_first: str
    hours_per_segment: float
    segments_per_day: float
    index_bytes_per_segment: int
    index_bytes_per_million_messages: float
    time_index_entries_per_segment: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def kafka_estimate(messages_per_second: float, record_bytes: float, messages_per_batch: int = 1,
                   config: KafkaConfig = KafkaConfig()) -> KafkaEstimate:
    """Segments and indexes for `messages_per_second` (mean, one partition or the sum over
    partitions of equal traffic) of records of `record_bytes` each (a record's bytes inside
    its batch: length varints, attributes, deltas, key, value, headers) sent
    `messages_per_batch` to a batch. Batch bytes B = 61 + messages_per_batch x record_bytes,
    rounded up. Equations in the module docstring. Cost: O(1).

    >>> e = kafka_estimate(100.0, record_bytes=100, messages_per_batch=10)   # B = 1061
    >>> e.batches_per_index_entry, e.batches_per_segment, e.index_entries_per_segment
    (4, 1012009, 253002)
    """
    if not (isinstance(messages_per_second, (int, float)) and messages_per_second > 0):
        raise ValueError(f"messages_per_second must be > 0, got {messages_per_second!r}")
    if not (isinstance(record_bytes, (int, float)) and record_bytes > 0):
        raise ValueError(f"record_bytes must be > 0, got {record_bytes!r}")
    if isinstance(messages_per_batch, bool) or not isinstance(messages_per_batch, int) or messages_per_batch < 1:
        raise ValueError(f"messages_per_batch must be a positive int, got {messages_per_batch!r}")
    c = config
    B = math.ceil(RECORD_BATCH_OVERHEAD + messages_per_batch * record_bytes)
    if B > c.segment_bytes:
        raise ValueError(f"a {B}-byte batch does not fit a {c.segment_bytes}-byte segment")
    P = c.index_interval_bytes // B + 1
    batches_per_second = messages_per_second / messages_per_batch
    # each limit as the number of batches a segment holds when it alone rolls the segment
    limits = {"segment.bytes": c.segment_bytes // B}
    # full at its last slot but one for the time index (kept for the roll's entry); the last
    # entry lands on batch full x P + 1, and shouldRoll sees the full index before the next batch
    for name, full in (("time index full", c.segment_index_bytes // TIME_ENTRY_BYTES - 1),
                       ("offset index full", c.segment_index_bytes // OFFSET_ENTRY_BYTES)):
        limits[name] = full * P + 1      # full = 0: one batch a segment (LocalLog.roll recreates an empty one)
    limits["relative offset"] = _INT_MAX // messages_per_batch
    limits["segment.ms"] = max(1, math.floor(batches_per_second * c.segment_ms / 1000.0))
    order = ["segment.bytes", "time index full", "offset index full", "relative offset", "segment.ms"]
    first = min(order, key=lambda k: (limits[k], order.index(k)))
    n = limits[first]
    entries = (n - 1) // P
    # the roll's time entry, unless the last batch took an index entry (its timestamp is there)
    time_entries = entries + (0 if n > 1 and (n - 1) % P == 0 else 1)
    index_bytes = entries * OFFSET_ENTRY_BYTES + time_entries * TIME_ENTRY_BYTES
    messages = n * messages_per_batch
    hours = n / batches_per_second / 3600.0
    return KafkaEstimate(
        batch_bytes=B, bytes_per_day=batches_per_second * B * 86400.0, batches_per_index_entry=P,
        batches_per_segment=n, messages_per_segment=messages, index_entries_per_segment=entries,
        rolls_first=first, hours_per_segment=hours, segments_per_day=24.0 / hours,
        index_bytes_per_segment=index_bytes,
        index_bytes_per_million_messages=index_bytes / messages * 1e6, time_index_entries_per_segment=time_entries)
