"""The index entries a Kafka broker writes for a segment, from its batches alone.

Kafka's ``.index`` and ``.timeindex`` are derived data: ``LogSegment.recover`` rebuilds them
from the ``.log`` after an unclean shutdown, with the same rule ``LogSegment.append`` follows
while writing (Kafka 3.x / 4.x, ``storage/.../log/LogSegment.java``):

* walk the batches in file order, ``position`` the batch's first byte;
* ``maxTimestampSoFar`` / ``offsetOfMaxTimestampSoFar``: when a batch's ``maxTimestamp`` is
  *greater* than the maximum so far, they become (maxTimestamp, the batch's lastOffset); ties
  keep the earlier batch;
* if more than ``index.interval.bytes`` (4096) bytes were appended since the last offset entry
  (``position - lastIndexEntry > 4096``: the current batch not counted), append the offset
  entry (batch.lastOffset, position) and offer the time entry (maxTimestampSoFar,
  offsetOfMaxTimestampSoFar) to ``TimeIndex.maybeAppend``, which keeps it only if its
  timestamp is greater than the last entry's;
* when the segment rolls or closes (``onBecomeInactiveSegment`` / ``close``) the time entry
  of the whole segment's maximum is offered once more, so a closed segment's time index ends
  at its largest timestamp.

The offset entry uses the batch's *last* offset with the position of the batch's *first*
byte: a fetch for any offset of that batch starts reading there.

**The pre-3.8 time index.** Until Kafka 3.8 (KAFKA-16310) the leader's append path offered the
offset of the *record* holding the maximum timestamp, which can lie inside a batch, where
recovery (and every broker since) uses the batch's last offset. A time entry whose offset is
inside the right batch but not its last offset is therefore not corruption: :func:`compare`
reports it as ``pre-3.8 time entry``.

Cost: O(batches) vectorized, plus one binary search per offset entry.

>>> import numpy as np
>>> b = batch_table(positions=[0, 3000, 6000, 9000, 14000], sizes=[3000, 3000, 3000, 5000, 100],
...                 base_offsets=[0, 5, 10, 15, 20], last_offsets=[4, 9, 14, 19, 20],
...                 max_timestamps=[100, 250, 200, 300, 300])
>>> offsets, times = expected_entries(b)
>>> offsets.tolist(), times.tolist()
([[14, 6000], [20, 14000]], [[250, 9], [300, 19]])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["INDEX_INTERVAL_BYTES", "batch_table", "expected_entries", "compare", "Mismatch"]

#: ``index.interval.bytes``: bytes appended between two offset index entries (Kafka default).
INDEX_INTERVAL_BYTES = 4096

#: The time index's "no entry" timestamp (``RecordBatch.NO_TIMESTAMP``).
NO_TIMESTAMP = -1


def batch_table(*, positions, sizes, base_offsets, last_offsets, max_timestamps) -> pd.DataFrame:
    """The per-batch facts the rule needs, one row a batch in file order (bytes, offsets, ms)."""
    df = pd.DataFrame({"position": np.asarray(positions, np.int64), "size": np.asarray(sizes, np.int64),
                       "base_offset": np.asarray(base_offsets, np.int64),
                       "last_offset": np.asarray(last_offsets, np.int64),
                       "max_timestamp": np.asarray(max_timestamps, np.int64)})
    if len(df) and ((np.diff(df["position"]) <= 0).any() or (df["size"] <= 0).any()):
        raise ValueError("batches must be in file order with positive sizes")
    return df


def _running_max_with_owner(ts: np.ndarray, owner_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running maximum of `ts` and, for each position, `owner_values` of the first element that
    reached it (a strictly greater value takes over; ties keep the earlier)."""
    run = np.maximum.accumulate(ts)
    new_max = np.ones(len(ts), bool)
    new_max[1:] = ts[1:] > run[:-1]
    owner = np.where(new_max, np.arange(len(ts)), 0)
    owner = np.maximum.accumulate(owner)
    return run, owner_values[owner]


def expected_entries(batches: pd.DataFrame, index_interval_bytes: int = INDEX_INTERVAL_BYTES, *,
                     rolled: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The offset entries (absolute offset, position) and time entries (timestamp, absolute
    offset) the broker writes for `batches` (:func:`batch_table` columns), as two int64
    arrays of shape (n, 2). `rolled`: the segment was rolled or closed, so the final time entry
    is offered too (an active segment's index lacks it)."""
    if index_interval_bytes < 0:
        raise ValueError(f"index_interval_bytes must be >= 0, got {index_interval_bytes}")
    n = len(batches)
    pos = batches["position"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    ts = batches["max_timestamp"].to_numpy(np.int64)
    if n == 0:
        return np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64)
    # offset entries: the first batch starting more than the interval past the last entry
    # (lastIndexEntry starts at position 0); one binary search per entry written
    picks = []
    mark = 0
    i = int(np.searchsorted(pos, mark + index_interval_bytes, side="right"))
    while i < n:
        picks.append(i)
        mark = int(pos[i])
        i = int(np.searchsorted(pos, mark + index_interval_bytes, side="right"))
    picks = np.asarray(picks, np.int64)
    offsets = np.stack([last[picks], pos[picks]], axis=1) if len(picks) else np.zeros((0, 2), np.int64)

    run_ts, run_off = _running_max_with_owner(ts, last)
    offered_ts = run_ts[picks]
    offered_off = run_off[picks]
    if rolled:
        offered_ts = np.append(offered_ts, run_ts[-1])
        offered_off = np.append(offered_off, run_off[-1])
    # maybeAppend keeps an offer only if its timestamp beats the last kept one (-1 when empty);
    # the offers are a running maximum, so those are the first offers of each new value
    keep = offered_ts > NO_TIMESTAMP
    if len(offered_ts) > 1:
        keep[1:] &= offered_ts[1:] > offered_ts[:-1]
    times = np.stack([offered_ts[keep], offered_off[keep]], axis=1)
    return offsets, times


@dataclass(frozen=True)
class Mismatch:
    """One difference between an index on disk and the entries the broker's rule gives.

    kind: ``"offset entry"``, ``"time entry"``, ``"offset entry count"``, ``"time entry count"``
    or ``"pre-3.8 time entry"`` (explained, not corruption: see the module docstring).
    """

    file: str
    kind: str
    entry: int
    expected: Any
    found: Any
    explanation: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "kind": self.kind, "entry": self.entry,
                "expected": self.expected, "found": self.found, "explanation": self.explanation}


def compare(batches: pd.DataFrame, offset_entries, time_entries, *, offset_file: str = ".index",
            time_file: str = ".timeindex", index_interval_bytes: int = INDEX_INTERVAL_BYTES,
            rolled: bool = True) -> list[Mismatch]:
    """Every difference between the entries on disk (absolute offsets; arrays of shape (n, 2))
    and :func:`expected_entries`, entry by entry. A time entry that differs only in pointing
    inside the batch holding its timestamp (a pre-3.8 broker) is reported as
    ``"pre-3.8 time entry"`` with the explanation; anything else is a real mismatch."""
    want_off, want_time = expected_entries(batches, index_interval_bytes, rolled=rolled)
    got_off = np.asarray(offset_entries, np.int64).reshape(-1, 2)
    got_time = np.asarray(time_entries, np.int64).reshape(-1, 2)
    out: list[Mismatch] = []
    if len(got_off) != len(want_off):
        out.append(Mismatch(offset_file, "offset entry count", -1, len(want_off), len(got_off)))
    for i in np.flatnonzero((want_off[:len(got_off)] != got_off[:len(want_off)]).any(axis=1)):
        out.append(Mismatch(offset_file, "offset entry", int(i), tuple(map(int, want_off[i])),
                            tuple(map(int, got_off[i]))))
    if len(got_time) != len(want_time):
        out.append(Mismatch(time_file, "time entry count", -1, len(want_time), len(got_time)))
    base = batches["base_offset"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    for i in np.flatnonzero((want_time[:len(got_time)] != got_time[:len(want_time)]).any(axis=1)):
        (wt, wo), (gt, go) = want_time[i], got_time[i]
        j = int(np.searchsorted(last, wo))          # the batch whose last offset is expected
        inside = (wt == gt and j < len(last) and last[j] == wo and base[j] <= go < last[j])
        if inside:
            out.append(Mismatch(time_file, "pre-3.8 time entry", int(i), (int(wt), int(wo)), (int(gt), int(go)),
                                f"offset {go} is a record inside batch {base[j]}..{last[j]}, the batch "
                                f"holding timestamp {gt}: brokers before Kafka 3.8 wrote the offset of the "
                                f"record with the largest timestamp; recovery and Kafka >= 3.8 (KAFKA-16310) "
                                f"write the batch's last offset, {wo}"))
        else:
            out.append(Mismatch(time_file, "time entry", int(i), (int(wt), int(wo)), (int(gt), int(go))))
    return out
