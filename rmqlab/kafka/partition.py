"""A Kafka partition directory written the way a broker writes it, and read back for lookups.

A partition's folder holds segments, each the files ``<base offset, 20 digits>.log``,
``.index`` and ``.timeindex`` (:mod:`rmqlab.kafka.log`, :mod:`rmqlab.kafka.index`).
:class:`PartitionWriter` appends record batches to the active segment and rolls to a new one
with the broker's rule (Kafka 3.x / 4.x, read in ``storage/.../log/LogSegment.java``
``shouldRoll``, ``UnifiedLog.maybeRoll`` and ``LocalLog.roll``). Before appending a batch of
``B`` bytes whose last offset is ``L`` and largest timestamp ``T``, the active segment rolls
when

* ``segment.size > segment.bytes - B``: the batch would not fit (reason ``"segment.bytes"``);
* ``segment.size > 0`` and ``T - (largest timestamp of the segment's first batch) >
  segment.ms`` (``"segment.ms"``, jitter 0; a first batch without a timestamp would use the
  wall clock, which is not modelled: such a segment never rolls by time);
* its offset index is full, ``entries >= segment.index.bytes // 8`` (``"offset index full"``);
* its time index is full, ``entries >= segment.index.bytes // 12 - 1``: the last slot is
  kept for the roll entry (``"time index full"``);
* ``L - base offset`` does not fit an int (``"relative offset"``).

The new segment's base offset is the batch's first offset (``appendInfo.firstOffset()``).
Rolling an *empty* active segment to its own base offset is a no-op (``LocalLog.roll``
deletes and recreates it); rolling it to a higher offset leaves it behind as an empty segment.
Each batch is appended as its own produce request, so the size the check uses is the batch's.
A batch larger than ``segment.bytes`` is refused, as the broker refuses it
(``RecordBatchTooLargeException``).

Index entries follow ``LogSegment.append`` (:func:`rmqlab.kafka.rebuild.expected_entries`):
an offset entry (batch last offset, batch position) and an offered time entry each time more
than ``index.interval.bytes`` were appended since the last entry. On roll
(``onBecomeInactiveSegment``) the segment's largest timestamp is offered to the time index
once more, skipping the full check, and both indexes are trimmed to their entries.

**Closed cleanly.** ``LogSegment.close`` (a clean broker shutdown) does the same to the active
segment: it offers the final time entry and trims both indexes. :meth:`PartitionWriter.close`
(and :func:`write_partition`) therefore writes every segment, the last one included, as a
broker that shut down cleanly leaves it. ``close(clean=False)`` leaves the active segment as a
crashed broker does: its indexes preallocated to ``segment.index.bytes`` (a zero-filled tail)
and without the final time entry; the broker would rebuild them on restart.

Not written: ``.txnindex`` (only aborted transactions create it), ``leader-epoch-checkpoint``,
``partition.metadata`` and the producer snapshots.

:class:`KafkaPartition` reads a partition folder: a per-segment summary
(:func:`read_partition`), and the broker's three ways in, with their cost counted:
:meth:`~KafkaPartition.lookup_offset` (fetch: ``floorSegment`` -> offset index ->
``FileRecords.searchForOffsetWithSize``), :meth:`~KafkaPartition.offsets_for_time`
(``ListOffsets`` by timestamp: the first segment whose largest timestamp reaches the target ->
time index -> offset index -> ``searchForTimestamp``), and :meth:`~KafkaPartition.scan_key`
(no key index: every byte of every segment).

>>> import tempfile
>>> from rmqlab.kafka.log import KafkaRecord
>>> d = tempfile.mkdtemp()
>>> recs = [KafkaRecord(None, 1000 + i, f"k{i}", b"x" * 100) for i in range(300)]
>>> write_partition(d, recs, segment_bytes=16384, index_interval_bytes=1024)
[0, 94, 188, 282]
>>> s = read_partition(d)
>>> s[["base_offset", "log_bytes", "records", "index_entries", "timeindex_entries"]].values.tolist()[:2]
[[0, 16252, 94, 15, 16], [94, 16350, 94, 15, 16]]
>>> with KafkaPartition(d) as p:        # offset 103: index entry (100, byte 1038), then 4 batch headers
...     hit = p.lookup_offset(103)
...     hit.segment, hit.position, hit.batch_last_offset, hit.index_entries_read, hit.batches_read
(94, 1038, 103, 5, 4)
"""
from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import CorruptIndexError
from rmqlab.kafka import index as kidx
from rmqlab.kafka import log as kafka_log
from rmqlab.kafka.rebuild import INDEX_INTERVAL_BYTES, expected_entries

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "DEFAULT_SEGMENT_INDEX_BYTES",
    "DEFAULT_SEGMENT_MS",
    "ROLL_REASONS",
    "PartitionConfig",
    "SegmentSpan",
    "plan_segments",
    "PartitionWriter",
    "write_partition",
    "OffsetLookup",
    "TimeLookup",
    "KafkaPartition",
    "read_partition",
]

#: log.segment.bytes default (1 GiB).
DEFAULT_SEGMENT_BYTES = 1 << 30
#: log.index.size.max.bytes / segment.index.bytes default (10 MiB).
DEFAULT_SEGMENT_INDEX_BYTES = 10 << 20
#: log.roll.hours default 168: segment.ms, 7 days in ms.
DEFAULT_SEGMENT_MS = 7 * 24 * 3600 * 1000
INT_MAX = 2**31 - 1

#: Why a segment was rolled, in the order ``LogSegment.shouldRoll`` tests them (a batch that
#: meets several is labelled with the first).
ROLL_REASONS = {
    "segment.bytes": "the next batch would not fit: size > segment.bytes - batch size",
    "segment.ms": "the next batch's timestamp is more than segment.ms after the segment's first batch",
    "offset index full": "the offset index holds segment.index.bytes // 8 entries",
    "time index full": "the time index holds segment.index.bytes // 12 - 1 entries (the last slot "
                       "is kept for the roll entry)",
    "relative offset": "the next batch's last offset minus the base offset does not fit an int",
}
_ORDER = {name: i for i, name in enumerate(ROLL_REASONS)}


@dataclass(frozen=True)
class PartitionConfig:
    """Topic settings the writer follows (Kafka's defaults): ``segment_bytes`` (segment.bytes,
    1 GiB), ``segment_index_bytes`` (segment.index.bytes, 10 MiB; at least 12: one time
    entry), ``index_interval_bytes`` (index.interval.bytes, 4096), ``segment_ms``
    (segment.ms, 7 days)."""

    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    index_interval_bytes: int = INDEX_INTERVAL_BYTES
    segment_ms: int = DEFAULT_SEGMENT_MS

    def __post_init__(self):
        for name, low in (("segment_bytes", 1), ("segment_index_bytes", kidx.TIME_ENTRY.size),
                          ("index_interval_bytes", 0), ("segment_ms", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"{name} must be an int >= {low}, got {v!r}")
        if self.segment_bytes > INT_MAX or self.segment_index_bytes > INT_MAX:
            raise ValueError("segment_bytes and segment_index_bytes must fit an int (Kafka's configs are ints)")

    @property
    def offset_index_max_entries(self) -> int:
        """OffsetIndex.maxEntries of a new segment: segment.index.bytes // 8."""
        return self.segment_index_bytes // kidx.OFFSET_ENTRY.size

    @property
    def time_index_max_entries(self) -> int:
        """TimeIndex.maxEntries of a new segment: segment.index.bytes // 12."""
        return self.segment_index_bytes // kidx.TIME_ENTRY.size


@dataclass(frozen=True)
class SegmentSpan:
    """One segment of a plan: its first batch (an index into the batch arrays; the segment runs
    to the next span's start), its base offset, and why the segment before it was rolled
    (``""`` for the first)."""

    start: int
    base_offset: int
    reason: str


# ------------------------------------------------------------------------------ planning


class _Planner:
    """The roll rule over arrays of batches (sizes in bytes, offsets, max timestamps in ms)."""

    def __init__(self, sizes, base_offsets, last_offsets, max_timestamps, config: PartitionConfig):
        self.size = np.asarray(sizes, np.int64)
        self.first = np.asarray(base_offsets, np.int64)
        self.last = np.asarray(last_offsets, np.int64)
        self.ts = np.asarray(max_timestamps, np.int64)
        self.n = n = len(self.size)
        if not (len(self.first) == len(self.last) == len(self.ts) == n):
            raise ValueError("sizes, base_offsets, last_offsets and max_timestamps must have one value a batch")
        self.cfg = config
        self.gpos = np.zeros(n + 1, np.int64)          # batch k starts at gpos[k], ends at gpos[k + 1]
        np.cumsum(self.size, out=self.gpos[1:])
        if n:
            big = np.flatnonzero(self.size > config.segment_bytes)
            if len(big):
                i = int(big[0])
                raise ValueError(f"batch {i} (offsets {int(self.first[i])}..{int(self.last[i])}) takes "
                                 f"{int(self.size[i])} bytes, more than segment.bytes {config.segment_bytes}: "
                                 f"the broker refuses it (RecordBatchTooLargeException)")
            if (self.size <= 0).any() or (self.last < self.first).any() or (self.first[1:] <= self.last[:-1]).any():
                raise ValueError("batches must have positive sizes and increasing, non-overlapping offsets")

    def plan(self, first_base: int, has_batches: bool) -> list[SegmentSpan]:
        n, cfg = self.n, self.cfg
        spans = [SegmentSpan(0, int(first_base), "")]
        if n == 0:
            return spans
        base = int(first_base)
        if self.first[0] < base:
            raise ValueError(f"the first batch's offset {int(self.first[0])} is below the segment's base offset {base}")
        if not has_batches:
            # shouldRoll on the empty active segment: only a full-on-arrival time index (fewer
            # than 2 slots) or an offset past the int range can be true there
            why = ("time index full" if cfg.time_index_max_entries - 1 <= 0
                   else "relative offset" if int(self.last[0]) - base > INT_MAX else "")
            if why and int(self.first[0]) != base:     # rolling to its own base offset: a no-op
                base = int(self.first[0])
                spans.append(SegmentSpan(0, base, why))
        s = 0
        while True:
            k, why = self._next_roll(s, base)
            if k >= n:
                return spans
            base = int(self.first[k])
            spans.append(SegmentSpan(k, base, why))
            s = k

    def _next_roll(self, s: int, base: int) -> tuple[int, str]:
        """The first batch k > s before which the segment starting at batch s rolls (n: none)."""
        n, cfg = self.n, self.cfg
        cands: dict[str, int] = {}
        kb = max(int(np.searchsorted(self.gpos[1:], self.gpos[s] + cfg.segment_bytes, side="right")), s + 1)
        if kb < n:
            cands["segment.bytes"] = kb
        kr = max(int(np.searchsorted(self.last, base + INT_MAX, side="right")), s + 1)
        if kr < n:
            cands["relative offset"] = kr
        end = min(kb, kr, n)
        width = 4096
        while True:                      # a growing window: cost about twice the segment's batches
            hi = min(end, s + width)
            found = self._window(s, hi)
            if found or hi >= end:
                break
            width *= 4
        cands.update(found)
        if not cands:
            return n, ""
        return min((k, _ORDER[why], why) for why, k in cands.items())[::2]

    def _window(self, s: int, hi: int) -> dict[str, int]:
        """Rolls by segment.ms and full indexes before batches s+1..hi, from batches s..hi-1."""
        n, cfg = self.n, self.cfg
        out: dict[str, int] = {}
        top = min(hi, n - 1)
        t0 = int(self.ts[s])
        if t0 >= 0 and top > s:
            late = np.flatnonzero(self.ts[s + 1:top + 1] - t0 > cfg.segment_ms)
            if len(late):
                out["segment.ms"] = s + 1 + int(late[0])
        max_off, max_time = cfg.offset_index_max_entries, cfg.time_index_max_entries - 1
        if max_time <= 0:
            if s + 1 < n:
                out["time index full"] = s + 1
            return out
        rel = self.gpos[s:hi] - self.gpos[s]
        run = np.maximum.accumulate(self.ts[s:hi])
        interval = cfg.index_interval_bytes
        entries = kept = 0
        last_ts = kidx.NO_TIMESTAMP
        i = int(np.searchsorted(rel, interval, side="right"))
        while i < len(rel):              # one step per offset entry written
            entries += 1
            if run[i] > last_ts:
                kept += 1
                last_ts = int(run[i])
            k = s + i + 1
            if k >= n:
                break
            if entries >= max_off:
                out["offset index full"] = k
            if kept >= max_time:
                out["time index full"] = k
            if entries >= max_off or kept >= max_time:
                break
            i = int(np.searchsorted(rel, rel[i] + interval, side="right"))
        return out


def plan_segments(batches: pd.DataFrame, config: PartitionConfig = PartitionConfig(), *,
                  first_base_offset: int | None = None) -> list[SegmentSpan]:
    """How a broker splits `batches` (rows in append order; columns ``size``, ``base_offset``,
    ``last_offset``, ``max_timestamp``, as :func:`rmqlab.kafka.log.read_batches`
    gives) into segments, appending them one at a time to an empty partition whose first
    segment starts at `first_base_offset` (default: the first batch's offset). Raises
    ValueError for a batch larger than ``segment_bytes``. Cost: O(batches) vectorized, plus
    one step per offset index entry.

    >>> b = pd.DataFrame({"size": [3000] * 6, "base_offset": range(6), "last_offset": range(6),
    ...                   "max_timestamp": [10, 20, 30, 40, 50, 60]})
    >>> [(s.start, s.base_offset, s.reason) for s in plan_segments(b, PartitionConfig(segment_bytes=8000))]
    [(0, 0, ''), (2, 2, 'segment.bytes'), (4, 4, 'segment.bytes')]
    >>> cfg = PartitionConfig(segment_index_bytes=24, index_interval_bytes=0)   # 3 offset, 2 time slots
    >>> [(s.start, s.reason) for s in plan_segments(b, cfg)]
    [(0, ''), (2, 'time index full'), (4, 'time index full')]
    """
    p = _Planner(batches["size"], batches["base_offset"], batches["last_offset"], batches["max_timestamp"], config)
    first = int(batches["base_offset"].iloc[0]) if first_base_offset is None and len(batches) else \
        int(first_base_offset or 0)
    return p.plan(first, has_batches=False)


# ------------------------------------------------------------------------------ writing


class _OpenSegment:
    """The active segment: its .log open for appending, and its batches' facts."""

    def __init__(self, directory: Path, base: int, reason: str):
        self.base = base
        self.reason = reason
        self.path = directory / kidx.segment_file_name(base, kidx.LOG_SUFFIX)
        for suffix in (kidx.LOG_SUFFIX, kidx.INDEX_SUFFIX, kidx.TIME_INDEX_SUFFIX):
            p = directory / kidx.segment_file_name(base, suffix)
            if p.exists():
                raise FileExistsError(f"{p}: the segment already exists; write into a new folder")
        self.fh = open(self.path, "xb")
        self.size = np.zeros(0, np.int64)
        self.first = np.zeros(0, np.int64)
        self.last = np.zeros(0, np.int64)
        self.ts = np.zeros(0, np.int64)

    @property
    def batches(self) -> int:
        return len(self.size)

    @property
    def bytes(self) -> int:
        return int(self.size.sum())

    def add(self, data, size, first, last, ts) -> None:
        self.fh.write(memoryview(data))
        self.size = np.concatenate([self.size, size])
        self.first = np.concatenate([self.first, first])
        self.last = np.concatenate([self.last, last])
        self.ts = np.concatenate([self.ts, ts])

    def table(self) -> pd.DataFrame:
        """The batches in :func:`rmqlab.kafka.rebuild.batch_table`'s columns (positions from 0)."""
        pos = np.zeros(len(self.size), np.int64)
        if len(pos) > 1:
            np.cumsum(self.size[:-1], out=pos[1:])
        return pd.DataFrame({"position": pos, "size": self.size, "base_offset": self.first,
                             "last_offset": self.last, "max_timestamp": self.ts})

    def roll_entry(self) -> tuple[int, int] | None:
        """What onBecomeInactiveSegment / close offer the time index: the segment's largest
        timestamp and the last offset of the first batch that reached it."""
        if not len(self.ts):
            return None
        i = int(np.argmax(self.ts))
        return int(self.ts[i]), int(self.last[i])


def _structured(entries: np.ndarray, names: tuple[str, str]) -> np.ndarray:
    out = np.empty(len(entries), dtype=[(names[0], np.int64), (names[1], np.int64)])
    out[names[0]] = entries[:, 0]
    out[names[1]] = entries[:, 1]
    return out


class PartitionWriter:
    """Append records to a new partition folder as a broker does: batches of
    ``records_per_batch`` records (magic v2, uncompressed, CreateTime: see
    :func:`rmqlab.kafka.log.encode_batches`), segments rolled by the rule in the module
    docstring, indexes written at each roll and, for the active segment, on :meth:`close`.
    The folder must hold no segment yet (it is created when missing). Use as a context
    manager: leaving it closes cleanly, or (after an exception) as a crashed broker would.

    :attr:`segments` lists the segments written so far with why each was rolled. Cost: as
    encode_batches for the bytes, plus O(batches) for the rolls and index entries; memory
    holds one appended chunk and five int64 values per batch of the active segment.

    >>> import tempfile
    >>> with PartitionWriter(tempfile.mkdtemp(), segment_bytes=400) as w:
    ...     _ = w.append({"timestamp": [1, 2, 3], "value": [b"a" * 100] * 3})
    ...     _ = w.append({"timestamp": [4], "value": [b"b" * 100]})
    >>> w.segments[["base_offset", "batches", "log_bytes", "reason"]].values.tolist()
    [[0, 2, 340, ''], [2, 2, 340, 'segment.bytes']]
    """

    def __init__(self, directory: str | os.PathLike, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
                 index_interval_bytes: int = INDEX_INTERVAL_BYTES, segment_ms: int = DEFAULT_SEGMENT_MS,
                 records_per_batch: int = 1, base_offset: int = 0, partition_leader_epoch: int = 0):
        self.config = PartitionConfig(segment_bytes, segment_index_bytes, index_interval_bytes, segment_ms)
        if isinstance(records_per_batch, bool) or not isinstance(records_per_batch, (int, np.integer)) \
                or records_per_batch < 1:
            raise ValueError(f"records_per_batch must be a positive int, got {records_per_batch!r}")
        if isinstance(base_offset, bool) or not isinstance(base_offset, (int, np.integer)) or base_offset < 0:
            raise ValueError(f"base_offset must be a non-negative int, got {base_offset!r}")
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        existing = sorted(self.dir.glob("*" + kidx.LOG_SUFFIX))
        if existing:
            raise FileExistsError(f"{self.dir} already holds segments ({existing[0].name}, ...); "
                                  f"write a partition into a new folder")
        self.records_per_batch = int(records_per_batch)
        self.partition_leader_epoch = int(partition_leader_epoch)
        self.next_offset = int(base_offset)
        self._rows: list[dict[str, Any]] = []
        self._open = _OpenSegment(self.dir, int(base_offset), "")
        self._closed = False

    # -- appending ---------------------------------------------------------------------------

    def append(self, records) -> kafka_log.EncodedBatches:
        """Encode `records` (anything :func:`~rmqlab.kafka.log.encode_batches` takes;
        records without offsets continue from :attr:`next_offset`), roll where the broker
        would, and append. Returns the encoded batches (positions within `data`)."""
        if self._closed:
            raise ValueError(f"{self.dir}: the writer is closed")
        enc = kafka_log.encode_batches(records, records_per_batch=self.records_per_batch,
                                      partition_leader_epoch=self.partition_leader_epoch,
                                      next_offset=self.next_offset)
        next_offset = enc.next_offset
        if next_offset is None:     # no records
            return enc
        op = self._open
        old = op.batches
        planner = _Planner(np.concatenate([op.size, enc.size]), np.concatenate([op.first, enc.base_offset]),
                           np.concatenate([op.last, enc.last_offset]), np.concatenate([op.ts, enc.max_timestamp]),
                           self.config)
        spans = planner.plan(op.base, has_batches=old > 0)
        n = planner.n
        for j, span in enumerate(spans):
            if j:
                self._roll(span.base_offset, span.reason)
            a = max(span.start, old)
            b = spans[j + 1].start if j + 1 < len(spans) else n
            if b > a:
                lo, hi = a - old, b - old
                start = int(enc.position[lo])
                stop = int(enc.position[hi - 1] + enc.size[hi - 1])
                self._open.add(enc.data[start:stop], enc.size[lo:hi], enc.base_offset[lo:hi],
                               enc.last_offset[lo:hi], enc.max_timestamp[lo:hi])
        self.next_offset = next_offset
        return enc

    def _roll(self, base: int, reason: str) -> None:
        self._finish(self._open, rolled=True, trim=True, state="rolled")
        self._open = _OpenSegment(self.dir, base, reason)

    def _finish(self, op: _OpenSegment, *, rolled: bool, trim: bool, state: str) -> None:
        """Close the .log and write the two indexes (onBecomeInactiveSegment / close)."""
        op.fh.close()
        offsets, times = expected_entries(op.table(), self.config.index_interval_bytes, rolled=False)
        roll = op.roll_entry() if rolled else None     # kept only if larger than the last entry
        size = self.config.segment_index_bytes
        n_off = kidx.build_offset_index(self.dir / kidx.segment_file_name(op.base, kidx.INDEX_SUFFIX),
                                        _structured(offsets, ("offset", "position")), op.base,
                                        max_index_size=size, trim=trim)
        n_time = kidx.build_time_index(self.dir / kidx.segment_file_name(op.base, kidx.TIME_INDEX_SUFFIX),
                                       _structured(times, ("timestamp", "offset")), op.base,
                                       max_index_size=size, roll=roll, trim=trim)
        self._rows.append({"base_offset": op.base, "batches": op.batches, "log_bytes": op.bytes,
                           "first_offset": int(op.first[0]) if op.batches else None,
                           "last_offset": int(op.last[-1]) if op.batches else None,
                           "offset_entries": n_off, "time_entries": n_time, "reason": op.reason,
                           "closed": state})

    # -- closing -----------------------------------------------------------------------------

    def close(self, *, clean: bool = True) -> list[int]:
        """Close the active segment, as a clean shutdown (``clean=True``: final time entry,
        trimmed indexes) or a crash (untrimmed indexes, no final time entry). Returns the base
        offsets of every segment, in order."""
        if not self._closed:
            self._closed = True
            self._finish(self._open, rolled=clean, trim=clean, state="clean" if clean else "crashed")
        return self.base_offsets

    @property
    def base_offsets(self) -> list[int]:
        """Base offsets of the segments written, the active one included."""
        out = [r["base_offset"] for r in self._rows]
        if not self._closed:
            out.append(self._open.base)
        return out

    @property
    def segments(self) -> pd.DataFrame:
        """One row a segment: base_offset, batches, log_bytes, first_offset, last_offset,
        offset_entries / time_entries (None while it is the active one), reason (why the
        segment before it rolled; see :data:`ROLL_REASONS`) and closed ("rolled", "clean",
        "crashed", or "active")."""
        rows = list(self._rows)
        if not self._closed:
            op = self._open
            rows.append({"base_offset": op.base, "batches": op.batches, "log_bytes": op.bytes,
                         "first_offset": int(op.first[0]) if op.batches else None,
                         "last_offset": int(op.last[-1]) if op.batches else None,
                         "offset_entries": None, "time_entries": None, "reason": op.reason, "closed": "active"})
        cols = ["base_offset", "batches", "log_bytes", "first_offset", "last_offset", "offset_entries",
                "time_entries", "reason", "closed"]
        return pd.DataFrame(rows, columns=cols)

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if self._closed:
            return
        if exc_type is None:
            self.close()
        else:
            try:
                self.close(clean=False)
            except Exception:   # keep the original error
                pass

    def __repr__(self) -> str:
        return f"PartitionWriter({str(self.dir)!r}, segments={len(self.base_offsets)}, next_offset={self.next_offset})"


def _is_chunk_stream(records) -> bool:
    return isinstance(records, Iterator)


def write_partition(directory: str | os.PathLike, records, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
                    index_interval_bytes: int = INDEX_INTERVAL_BYTES, records_per_batch: int = 1,
                    base_offset: int = 0, segment_ms: int = DEFAULT_SEGMENT_MS, clean: bool = True) -> list[int]:
    """Write `records` as a partition folder the way a broker would, closed cleanly (every
    segment's indexes trimmed, with its final time entry; ``clean=False``: the active
    segment as a crash leaves it), and return the segments' base offsets.

    `records` is anything :func:`~rmqlab.kafka.log.encode_batches` takes (e.g.
    ``kafka_log.records_from_workload(table)``), or an *iterator* of such chunks (e.g. a
    generator over :func:`rmqlab.lab.workload.generate_chunks`), appended in order. Defaults are
    Kafka's: segment.bytes 1 GiB, segment.index.bytes 10 MiB, index.interval.bytes 4096,
    segment.ms 7 days. Cost: see :class:`PartitionWriter` (about 100 MB/s of batches).

    >>> import tempfile
    >>> chunks = iter([{"timestamp": [1, 2], "value": [b"a" * 50] * 2}, {"timestamp": [3], "value": [b"b"]}])
    >>> write_partition(tempfile.mkdtemp(), chunks, segment_bytes=130)
    [0, 1, 2]
    """
    w = PartitionWriter(directory, segment_bytes=segment_bytes, segment_index_bytes=segment_index_bytes,
                        index_interval_bytes=index_interval_bytes, segment_ms=segment_ms,
                        records_per_batch=records_per_batch, base_offset=base_offset)
    with w:
        for chunk in (records if _is_chunk_stream(records) else [records]):
            w.append(chunk)
        return w.close(clean=clean)


# ------------------------------------------------------------------------------ reading


class _Touched:
    """Totals of a lookup's cost: index and log bytes, index and log pages."""

    # each lookup keeps these as fields or computes them from its traces
    @property
    def index_bytes_read(self) -> int:
        raise NotImplementedError

    @property
    def index_pages(self) -> int:
        raise NotImplementedError

    @property
    def log_bytes(self) -> int:
        raise NotImplementedError

    @property
    def log_pages(self) -> int:
        raise NotImplementedError

    @property
    def bytes_touched(self) -> int:
        return self.index_bytes_read + self.log_bytes

    @property
    def pages_touched(self) -> int:
        return self.index_pages + self.log_pages


@dataclass
class OffsetLookup(_Touched):
    """How the broker finds the batch holding offset `target` (a fetch): the segment with the
    largest base offset <= target (in memory), a binary search of its offset index
    (:attr:`index_trace`), then a walk over batch headers from that position to the first
    batch whose last offset is >= target (``searchForOffsetWithSize``). A target in a gap
    goes on to the next segment. Bytes and pages are counted per file."""

    target: int
    found: bool = False
    segment: int | None = None            # base offset of the segment that answered
    index_trace: kidx.LookupTrace | None = None
    position: int = 0                     # where the walk started (the index's answer), bytes
    batch_position: int = -1              # the answer batch
    batch_size: int = 0
    batch_base_offset: int = -1
    batch_last_offset: int = -1
    batches_read: int = 0                 # batch headers read by the walk(s)
    log_bytes: int = 0                    # from the walk's start to the end of the answer batch
    index_entries_read: int = 0           # over every segment searched
    index_pages: int = 0
    log_pages: int = 0
    segments_searched: int = 0

    @property
    def index_bytes_read(self) -> int:
        return self.index_entries_read * kidx.OFFSET_ENTRY.size



@dataclass
class TimeLookup(_Touched):
    """How the broker answers ``offsetsForTimes(target)`` (ListOffsets by timestamp): the
    first segment whose largest timestamp (its time index's last entry; a running broker keeps
    it in memory) is >= target, its time index (largest entry <= target), its offset index
    (that entry's offset), then a walk over batch headers to the first batch whose
    maxTimestamp >= target, whose records are read to find the first with timestamp >= target.
    ``offset`` / ``timestamp`` are the answer (-1 when no record reaches the target)."""

    target: int
    found: bool = False
    offset: int = -1
    timestamp: int = -1
    segment: int | None = None
    segments_checked: int = 0
    time_trace: kidx.LookupTrace | None = None
    offset_trace: kidx.LookupTrace | None = None
    position: int = 0
    batch_position: int = -1
    batch_size: int = 0
    batches_read: int = 0
    log_bytes: int = 0
    log_pages: int = 0

    @property
    def index_entries_read(self) -> int:
        return sum(t.entries_read for t in (self.time_trace, self.offset_trace) if t is not None)

    @property
    def index_bytes_read(self) -> int:
        t = self.time_trace.entries_read if self.time_trace is not None else 0
        o = self.offset_trace.entries_read if self.offset_trace is not None else 0
        return t * kidx.TIME_ENTRY.size + o * kidx.OFFSET_ENTRY.size

    @property
    def index_pages(self) -> int:
        return sum(len(t.pages_touched) for t in (self.time_trace, self.offset_trace) if t is not None)



def _pages_spanned(start: int, stop: int) -> int:
    """4 KiB pages holding bytes [start, stop)."""
    if stop <= start:
        return 0
    return (stop - 1) // kidx.PAGE_SIZE - start // kidx.PAGE_SIZE + 1


@dataclass
class _Seg:
    base: int
    log: Path
    index: Path
    timeindex: Path
    batches: pd.DataFrame | None = None
    arrays: tuple | None = None
    offset_index: kidx.OffsetIndex | None = None
    time_index: kidx.TimeIndex | None = None


class KafkaPartition:
    """A partition folder, read-only: its segments (``*.log`` with their ``.index`` and
    ``.timeindex``), opened lazily and cached (batch headers walked once per segment, indexes
    memory-mapped). A segment whose index files are absent gets them as the broker's load does
    (``LogLoader``: the offset index missing, the segment is recovered and both rebuilt; the
    time index alone missing, it starts empty), written to a scratch folder removed on
    :meth:`close`, never beside the input; :attr:`rebuilt_indexes` lists those segments. A bad
    file name raises :class:`~rmqlab.errors.FormatError`. Indexes are opened with the
    DumpLogSegments count (``count="dump"``): an untrimmed index of a crashed broker then
    shows its written entries, as the broker's rebuild would. Also a context manager.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> _ = write_partition(d, {"timestamp": [10, 20, 30], "key": ["a", "b", "a"], "value": [b"v"] * 3})
    >>> with KafkaPartition(d) as p:
    ...     p.segments, p.offsets_for_time(15).offset, p.scan_key("a")["offset"].tolist()
    ([0], 1, [0, 2])
    """

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        if not self.dir.is_dir():
            raise FileNotFoundError(f"{self.dir}: no such partition folder")
        #: segments (their .log) whose absent index files were rebuilt in the scratch folder
        self.rebuilt_indexes: list[Path] = []
        self._scratch: tempfile.TemporaryDirectory | None = None
        segs = []
        for log in self.dir.glob("*" + kidx.LOG_SUFFIX):
            if log.name.startswith("."):
                continue
            base = kidx.base_offset_of(log)
            index = self.dir / kidx.segment_file_name(base, kidx.INDEX_SUFFIX)
            timeindex = self.dir / kidx.segment_file_name(base, kidx.TIME_INDEX_SUFFIX)
            if not index.exists() or not timeindex.exists():
                index, timeindex = self._indexes_as_loaded(log, base, index, timeindex)
            segs.append(_Seg(base, log, index, timeindex))
        segs.sort(key=lambda s: s.base)
        self._segs = segs
        self._bases = np.array([s.base for s in segs], np.int64)
        self._maps: dict[int, tuple[Any, Any]] = {}
        self._keys: pd.DataFrame | None = None

    def _indexes_as_loaded(self, log: Path, base: int, index: Path, timeindex: Path) -> tuple[Path, Path]:
        from rmqlab.kafka.rebuild import rebuild_indexes

        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="rmqlab-loaded-indexes-")
        scratch = Path(self._scratch.name)
        self.rebuilt_indexes.append(log)
        if not index.exists():
            # LogSegment.recover: no restarts, each time entry at its batch's last offset
            return rebuild_indexes(log, scratch, restarts=(), time_entry_offset="last")
        empty = scratch / timeindex.name
        empty.write_bytes(b"")
        return index, empty

    # -- structure ---------------------------------------------------------------------------

    @property
    def segments(self) -> list[int]:
        """Base offsets of the segments, in order."""
        return [s.base for s in self._segs]

    def _seg(self, base: int) -> _Seg:
        i = int(np.searchsorted(self._bases, base))
        if i >= len(self._segs) or self._segs[i].base != base:
            raise KeyError(f"{self.dir}: no segment with base offset {base}")
        return self._segs[i]

    def log_path(self, base: int) -> Path:
        return self._seg(base).log

    def batches(self, base: int) -> pd.DataFrame:
        """The segment's batch headers (:func:`~rmqlab.kafka.log.read_batches`), cached."""
        s = self._seg(base)
        if s.batches is None:
            s.batches = kafka_log.read_batches(s.log)
            b = s.batches
            s.arrays = tuple(b[c].to_numpy(np.int64) for c in
                             ("position", "size", "base_offset", "last_offset", "max_timestamp"))
        return s.batches

    def _arrays(self, base: int):
        self.batches(base)
        return self._seg(base).arrays

    def offset_index(self, base: int) -> kidx.OffsetIndex:
        s = self._seg(base)
        if s.offset_index is None:
            s.offset_index = kidx.OffsetIndex.open(s.index, base, count="dump", strict=False)
        return s.offset_index

    def time_index(self, base: int) -> kidx.TimeIndex:
        s = self._seg(base)
        if s.time_index is None:
            s.time_index = kidx.TimeIndex.open(s.timeindex, base, count="dump", strict=False)
        return s.time_index

    @property
    def log_bytes(self) -> int:
        """Bytes of every .log file (what a scan reads)."""
        return sum(os.path.getsize(s.log) for s in self._segs)

    @property
    def log_start_offset(self) -> int:
        return int(self._bases[0]) if len(self._bases) else 0

    def summary(self) -> pd.DataFrame:
        """One row a segment: base_offset, log_bytes, batches, records, first_offset,
        last_offset, min_timestamp / max_timestamp (of the batches' max timestamps, ms),
        index_entries / index_bytes (.index, entries as DumpLogSegments counts them; bytes
        on disk), timeindex_entries / timeindex_bytes, largest_timestamp (the time index's last
        entry, -1 when empty) and trimmed (both index files hold nothing but their entries).
        Cost: one batch-header walk per segment."""
        rows = []
        for s in self._segs:
            b = self.batches(s.base)
            oi, ti = self.offset_index(s.base), self.time_index(s.base)
            rows.append({
                "base_offset": s.base, "log_bytes": os.path.getsize(s.log), "batches": len(b),
                "records": int(b["records_count"].sum()),
                "first_offset": int(b["base_offset"].iloc[0]) if len(b) else None,
                "last_offset": int(b["last_offset"].iloc[-1]) if len(b) else None,
                "min_timestamp": int(b["max_timestamp"].min()) if len(b) else None,
                "max_timestamp": int(b["max_timestamp"].max()) if len(b) else None,
                "index_entries": oi.entry_count, "index_bytes": oi.length,
                "timeindex_entries": ti.entry_count, "timeindex_bytes": ti.length,
                "largest_timestamp": ti.last_entry.timestamp,
                "trimmed": not oi.untrimmed and not ti.untrimmed})
        cols = ["base_offset", "log_bytes", "batches", "records", "first_offset", "last_offset", "min_timestamp",
                "max_timestamp", "index_entries", "index_bytes", "timeindex_entries", "timeindex_bytes",
                "largest_timestamp", "trimmed"]
        return pd.DataFrame(rows, columns=cols)

    # -- lookups -----------------------------------------------------------------------------

    def _start_batch(self, base: int, position: int, trace: kidx.LookupTrace) -> int:
        P = self._arrays(base)[0]
        i = int(np.searchsorted(P, position))
        if position != 0 and (i >= len(P) or P[i] != position):
            s = self._seg(base)
            slot = trace.slot
            raise CorruptIndexError(f"the index points at byte {position}, which is not where a batch starts "
                                    f"in {s.log.name}", path=s.index,
                                    offset=max(slot, 0) * kidx.OFFSET_ENTRY.size + kidx.OFFSET_ENTRY.offset("position"),
                                    field=f"entry[{slot}].position")
        return i

    def lookup_offset(self, offset: int) -> OffsetLookup:
        """The batch holding `offset`, found as a fetch finds it; see :class:`OffsetLookup`.
        Cost: O(log index entries) entry reads plus the header walk (a few batches: the
        index has an entry every index.interval.bytes)."""
        offset = int(offset)
        res = OffsetLookup(offset)
        i = int(np.searchsorted(self._bases, offset, side="right")) - 1
        if i < 0:
            return res
        for s in self._segs[i:]:
            trace = self.offset_index(s.base).trace_lookup(offset)
            res.segments_searched += 1
            res.index_entries_read += trace.entries_read
            res.index_pages += len(trace.pages_touched)
            res.index_trace = trace
            assert isinstance(trace.result, kidx.OffsetPosition)    # what an offset index answers
            pos = int(trace.result.position)
            P, S, F, L, _ = self._arrays(s.base)
            i0 = self._start_batch(s.base, pos, trace)
            j = max(i0, int(np.searchsorted(L, offset, side="left")))
            if j >= len(P):
                res.batches_read += len(P) - i0
                end = int(P[-1] + S[-1]) if len(P) else 0
                res.log_bytes += end - pos
                res.log_pages += _pages_spanned(pos, end)
                continue
            end = int(P[j] + S[j])
            res.found = True
            res.segment = s.base
            res.position = pos
            res.batch_position, res.batch_size = int(P[j]), int(S[j])
            res.batch_base_offset, res.batch_last_offset = int(F[j]), int(L[j])
            res.batches_read += j - i0 + 1
            res.log_bytes += end - pos
            res.log_pages += _pages_spanned(pos, end)
            return res
        return res

    def _mapped(self, base: int):
        if base not in self._maps:
            fh = open(self._seg(base).log, "rb")
            size = os.fstat(fh.fileno()).st_size
            mm = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ) if size else b""
            self._maps[base] = (fh, mm)
        return self._maps[base][1]

    def offsets_for_time(self, timestamp: int) -> TimeLookup:
        """``offsetsForTimes``: the first offset whose record timestamp is >= `timestamp` (ms),
        found as the broker finds it; see :class:`TimeLookup`. Not found (offset -1) when no
        segment's largest timestamp reaches it. Cost: one time index entry a segment passed,
        two O(log entries) searches, a header walk and one batch decoded."""
        ts = int(timestamp)
        res = TimeLookup(ts)
        for s in self._segs:
            ti = self.time_index(s.base)
            res.segments_checked += 1
            if ti.entry_count and ti.last_entry.timestamp >= ts:
                break
        else:
            return res
        start = self.log_start_offset
        res.segment = s.base
        res.time_trace = ti.trace_lookup(ts)
        assert isinstance(res.time_trace.result, kidx.TimestampOffset)    # what a time index answers
        res.offset_trace = self.offset_index(s.base).trace_lookup(max(res.time_trace.result.offset, start))
        assert isinstance(res.offset_trace.result, kidx.OffsetPosition)
        pos = int(res.offset_trace.result.position)
        res.position = pos
        P, S, F, L, T = self._arrays(s.base)
        i0 = self._start_batch(s.base, pos, res.offset_trace)
        hits = np.flatnonzero(T[i0:] >= ts)
        if not len(hits):
            res.batches_read = len(P) - i0
            return res
        j = i0 + int(hits[0])
        res.batch_position, res.batch_size = int(P[j]), int(S[j])
        res.batches_read = j - i0 + 1
        end = int(P[j] + S[j])
        res.log_bytes = end - pos
        res.log_pages = _pages_spanned(pos, end)
        recs = kafka_log.read_records(self._mapped(s.base)[int(P[j]):end], values=False, headers=False)
        ok = (recs["timestamp"].to_numpy() >= ts) & (recs["offset"].to_numpy() >= start)
        if ok.any():
            k = int(np.argmax(ok))
            res.found = True
            res.offset = int(recs["offset"].iloc[k])
            res.timestamp = int(recs["timestamp"].iloc[k])
        return res

    def scan_key(self, key: bytes | str) -> pd.DataFrame:
        """Every record whose key is `key`, by reading every segment
        (:func:`~rmqlab.kafka.log.scan_key`): Kafka keeps no key index. Columns as
        scan_key's plus ``segment``; ``attrs["log_bytes"]`` is the bytes read (all of them).
        Cost: a decode of every record of the partition."""
        frames = []
        for s in self._segs:
            f = kafka_log.scan_key(s.log, key)
            f.insert(0, "segment", s.base)
            frames.append(f)
        out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        out.attrs = {"log_bytes": self.log_bytes}
        return out

    def keys(self) -> pd.DataFrame:
        """offset, timestamp, key (bytes or None) and segment of every record, decoded once and
        cached: the result of the scan a key lookup does, for answering many lookups (each
        still costs :attr:`log_bytes`)."""
        if self._keys is None:
            frames = []
            for s in self._segs:
                r = kafka_log.read_records(s.log, values=False, headers=False)
                frames.append(pd.DataFrame({"offset": r["offset"].to_numpy(np.int64),
                                            "timestamp": r["timestamp"].to_numpy(np.int64),
                                            "key": r["key"].to_numpy(object), "segment": s.base}))
            self._keys = (pd.concat(frames, ignore_index=True) if frames else
                          pd.DataFrame(columns=["offset", "timestamp", "key", "segment"]))
        return self._keys

    # -- closing -----------------------------------------------------------------------------

    def close(self) -> None:
        for s in self._segs:
            for idx in (s.offset_index, s.time_index):
                if idx is not None:
                    idx.close()
            s.offset_index = s.time_index = None
        for fh, mm in self._maps.values():
            if isinstance(mm, mmap.mmap):
                try:
                    mm.close()
                except BufferError:
                    pass
            fh.close()
        self._maps.clear()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def __enter__(self) -> KafkaPartition:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"KafkaPartition({str(self.dir)!r}, segments={len(self._segs)})"


def read_partition(directory: str | os.PathLike) -> pd.DataFrame:
    """Per-segment summary of a partition folder (see :meth:`KafkaPartition.summary`).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> _ = write_partition(d, {"timestamp": [5, 6], "value": [b"x", b"y"]})
    >>> read_partition(d)[["base_offset", "records", "largest_timestamp", "trimmed"]].values.tolist()
    [[0, 2, 6, True]]
    """
    with KafkaPartition(directory) as p:
        return p.summary()
