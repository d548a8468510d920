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

**Restarts.** The count of bytes since the last offset entry (``bytesSinceLastIndexEntry``)
lives only in memory and is 0 in a freshly loaded ``LogSegment``; ``maxTimestampAndOffsetSoFar``
starts UNKNOWN and is loaded lazily from the time index's last entry (``TimeIndex.lastEntry``,
``(-1, baseOffset)`` when empty). Read in ``storage/.../log/LogSegment.java`` at Kafka 3.9.0
and in ``core/.../kafka/log/LogSegment.scala`` at 2.0.1, 2.7.1 and 3.4.1 (2.0 loads both
eagerly in the constructor; the effect is the same). So when the broker restarts, the
segment's offset entries after the restart count bytes from the first batch appended after
it, and ``close()`` at shutdown first offers the running maximum to the time index (kept if
its timestamp is larger than the last entry's). Because that offer makes the time index's last
entry the running maximum, the maximum loaded after the restart is the one the broker had:
the time entries simply go on. An unclean restart looks the same, as ``LogSegment.recover``
rebuilds the indexes from position 0 and ends with the same offer, while the counter still
starts at 0 where appends resume. (A follower's ``truncateTo`` also zeroes the counter, but
offers no closing entry: not modelled.) :func:`expected_entries` takes the restart offsets;
:func:`restart_candidates` collects the evidence on disk (producer-state ``.snapshot`` files,
which a broker writes at clean shutdown named by the log end offset, leader epochs starting
inside the segment); :func:`choose_restarts` applies a candidate only where the entries agree
with it; :func:`infer_restarts` finds the restarts no file records (the broker keeps only its
newest producer-state snapshots, so of two restarts in one segment often only the second is
named): where the offset entries start counting again, accepted only when, with them, every
entry agrees.

**Absent and preallocated index files.** A segment without its ``.index`` is recovered when
the broker loads the log (``LogLoader.loadSegmentFiles``: "Could not find offset index file
corresponding to log file ..., recovering segment and rebuilding index files...", read at
3.9.0; ``Log.loadSegmentFiles`` at 2.7.1), and a missing ``.timeindex`` alone is created empty
(``LogSegment.sanityCheck``): verify notes both, it does not fail. The active segment's indexes
are preallocated (zero-filled tail) while the broker runs and trimmed on a clean shutdown,
which also appends the closing time entry: verify reads an untrimmed file up to its tail and
then expects no closing entry.

**Which offset a time entry names.** ``maxTimestampAndOffsetSoFar`` takes the offset the append
path hands ``LogSegment.append`` (``shallowOffsetOfMaxTimestamp`` / ``offsetOfMaxTimestamp``), and
that differs by path and release:

* ``"last"``, the batch's last offset: ``LogSegment.recover`` (since 0.11's batches: "the max
  timestamp is exposed at the batch level, so no need to iterate the records"), a follower's
  appends (``analyzeAndValidateRecords``; also the KRaft metadata log's, whose raft leader appends
  with origin RAFT_LEADER and skips LogValidator), the log cleaner (``MemoryRecords.filterTo``'s
  ``shallowOffsetOfMaxTimestamp``), and a leader's appends from Kafka 3.8 (KAFKA-16310,
  apache/kafka#15621, back to the "shallow" offset: ``assignOffsetsNonCompressed`` returns
  ``offsetCounter - 1`` for magic v2);
* ``"record"``, the offset of the first record holding the batch's maxTimestamp: a leader's
  appends of uncompressed CreateTime batches before 3.8 (``LogValidator.assignOffsetsNonCompressed``'s
  ``offsetOfMaxBatchTimestamp``, a record timestamp strictly greater than the ones before it;
  ``kafka.log.LogValidator`` in Scala to 3.4, ``storage/.../LogValidator.java`` in 3.5 to 3.7).
  Compressed batches (``validateMessagesAndAssignOffsetsCompressed``: ``lastOffset`` in place,
  ``MemoryRecordsBuilder.info()`` otherwise) and LogAppendTime batches (``offsetCounter - 1``)
  got the last offset there too, up to 3.6. (Between 3.6 and KAFKA-16310, ``LogValidator.java``
  gave compressed batches the record's offset as well, e.g. at apache/kafka commit 00e0246,
  until the KAFKA-16310 change went back to the shallow offset. :func:`compare`
  therefore explains the record form for any batch; :func:`rebuild_indexes` writes it for
  uncompressed CreateTime batches only, as 0.10.1 to 3.6 did.)

The entries kept do not depend on the choice (``TimeIndex.maybeAppend`` compares timestamps
only), only the offsets written do. :func:`expected_entries` takes ``time_entry_offset``;
:func:`max_timestamp_offsets` decodes the records of the batches that need it (the owners of
time entries) for the ``"record"`` form; :func:`compare` reports an entry on disk in the
other form as ``pre-3.8 time entry``, explained, not corruption; :func:`rebuild_indexes`
infers the form from the time index beside the segment (or takes it) and so writes the
broker's bytes; :func:`verify_segment` says which form the entries on disk use.

On files: :func:`segment_batches` reads a ``.log``'s batch headers, :func:`rebuild_indexes`
writes the ``.index`` / ``.timeindex`` the broker would have written for it, and
:func:`verify_segment` / :func:`verify_directory` compare the index files on disk with the
rule, entry by entry, like ``kafka-dump-log --verify-index-only`` but reporting every
mismatch, naming each restart with its evidence and the time entries' form.

Cost: one walk of the batch headers (:func:`rmqlab.kafka.log.read_batches`, about 2 GB/s
from the page cache) plus O(batches) NumPy and one C loop for the offset entries: about
2 GB/s in all for a 1 GiB segment of 1 KiB batches (benchmarks/bench_kafka.py).

>>> import numpy as np
>>> b = batch_table(positions=[0, 3000, 6000, 9000, 14000], sizes=[3000, 3000, 3000, 5000, 100],
...                 base_offsets=[0, 5, 10, 15, 20], last_offsets=[4, 9, 14, 19, 20],
...                 max_timestamps=[100, 250, 200, 300, 300])
>>> offsets, times = expected_entries(b)
>>> offsets.tolist(), times.tolist()
([[14, 6000], [20, 14000]], [[250, 9], [300, 19]])
"""
from __future__ import annotations

import copy
import os
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import rmqlab._kafkalog as _kafkalog
from rmqlab.errors import RmqlabError
from rmqlab.kafka.legacy import index_rule, legacy_expected_entries

__all__ = ["INDEX_INTERVAL_BYTES", "PRE_38_TIME_ENTRY", "TIME_ENTRY_OFFSETS", "MAX_TIMESTAMP_OFFSET", "batch_table",
           "max_timestamp_offsets", "expected_entries", "compare", "Mismatch",
           "Restart", "restart_candidates", "choose_restarts", "infer_restart", "infer_restarts", "inferred_restarts",
           "append_calls", "CALL_BATCHES",
           "segment_batches",
           "rebuild_indexes", "SegmentReport", "verify_segment", "verify_directory"]

#: ``index.interval.bytes``: bytes appended between two offset index entries (Kafka default).
INDEX_INTERVAL_BYTES = 4096

#: The time index's "no entry" timestamp (``RecordBatch.NO_TIMESTAMP``).
NO_TIMESTAMP = -1


#: The offsets a time entry can name (module docstring): the batch's last offset (recovery,
#: followers, the cleaner, leaders since Kafka 3.8), or the first record holding the batch's
#: maxTimestamp (a leader's appends of uncompressed CreateTime batches before 3.8).
TIME_ENTRY_OFFSETS = ("last", "record")

#: Batch-table column with each batch's "record" offset: the first record holding the batch's
#: maxTimestamp; -1 where not decoded or no record holds it (:func:`max_timestamp_offsets`).
MAX_TIMESTAMP_OFFSET = "max_timestamp_offset"


def batch_table(*, positions, sizes, base_offsets, last_offsets, max_timestamps,
                max_timestamp_offsets=None) -> pd.DataFrame:
    """The per-batch facts the rule needs, one row a batch in file order (bytes, offsets, ms);
    `max_timestamp_offsets` (optional): the offset of the first record holding each batch's
    maxTimestamp, -1 unknown (the ``"record"`` time entry form)."""
    df = pd.DataFrame({"position": np.asarray(positions, np.int64), "size": np.asarray(sizes, np.int64),
                       "base_offset": np.asarray(base_offsets, np.int64),
                       "last_offset": np.asarray(last_offsets, np.int64),
                       "max_timestamp": np.asarray(max_timestamps, np.int64)})
    if max_timestamp_offsets is not None:
        df[MAX_TIMESTAMP_OFFSET] = np.asarray(max_timestamp_offsets, np.int64)
    if len(df) and ((np.diff(df["position"]) <= 0).any() or (df["size"] <= 0).any()):
        raise ValueError("batches must be in file order with positive sizes")
    return df


def max_timestamp_offsets(source, batches: pd.DataFrame, rows=None) -> np.ndarray:
    """For each batch (a row of :func:`segment_batches` read from `source`, a ``.log`` path or
    its bytes), the offset of the first record, in file order, whose timestamp is the batch's
    maxTimestamp: what a leader before Kafka 3.8 put in the time index for an uncompressed
    CreateTime batch (``LogValidator.assignOffsetsNonCompressed``: ``offsetOfMaxBatchTimestamp``,
    taken where ``record.timestamp() > maxBatchTimestamp``). One int64 per batch; -1 for the
    batches not among `rows` (default: all), legacy (magic 0/1) entries, and batches that do
    not decode or where no record holds maxTimestamp (the cleaner keeps a batch's
    maxTimestamp when it drops the record that had it).

    Units: offsets. Cost: only the batches of `rows` are read and decoded, in one
    :func:`rmqlab.kafka.log.read_records` call (about 1 µs a record); a batch of one record at
    its last offset needs no decoding.

    >>> from rmqlab.kafka.log import KafkaRecord, encode_batches, read_batches
    >>> data = encode_batches([KafkaRecord(i, t, None, b"v") for i, t in enumerate([5, 9, 9, 2])],
    ...                       records_per_batch=4).data.tobytes()
    >>> max_timestamp_offsets(data, read_batches(data)).tolist()
    [1]
    """
    from rmqlab.kafka.log import read_records

    n = len(batches)
    out = np.full(n, -1, np.int64)
    want = np.arange(n) if rows is None else np.unique(np.asarray(list(rows) if not isinstance(rows, np.ndarray)
                                                                  else rows, np.int64))
    want = want[(want >= 0) & (want < n)]
    if "magic" in batches.columns:
        want = want[batches["magic"].to_numpy()[want] == 2]
    if not len(want):
        return out
    base = batches["base_offset"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    if "records_count" in batches.columns:
        single = (batches["records_count"].to_numpy(np.int64)[want] == 1) & (base[want] == last[want])
        out[want[single]] = base[want[single]]
        want = want[~single]
    if not len(want):
        return out
    pos = batches["position"].to_numpy(np.int64)[want]
    size = batches["size"].to_numpy(np.int64)[want]
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh:
            parts = []
            for p, z in zip(pos.tolist(), size.tolist()):
                fh.seek(p)
                parts.append(fh.read(z))
    else:
        view = memoryview(source).cast("B")
        parts = [bytes(view[p:p + z]) for p, z in zip(pos.tolist(), size.tolist())]
    max_ts = batches["max_timestamp"].to_numpy(np.int64)[want]

    def first_holder(buf: bytes, k: np.ndarray) -> None:
        """Fill `out` for the batches `k` (numbers into `want`) whose bytes are `buf`."""
        recs = read_records(buf, values=False, headers=False)
        starts = np.concatenate([[0], np.cumsum([len(parts[i]) for i in k])[:-1]]).astype(np.int64)
        which = k[np.searchsorted(starts, recs["batch_position"].to_numpy(np.int64), side="right") - 1]
        hit = recs["timestamp"].to_numpy(np.int64) == max_ts[which]
        got, first = np.unique(which[hit], return_index=True)
        out[want[got]] = recs["offset"].to_numpy(np.int64)[hit][first]

    try:
        first_holder(b"".join(parts), np.arange(len(want)))
    except RmqlabError:                   # a damaged batch: decode the others one by one
        for i in range(len(want)):
            try:
                first_holder(parts[i], np.array([i]))
            except RmqlabError:
                pass
    return out


def _with_max_timestamp_offsets(batches: pd.DataFrame, source, rows) -> pd.DataFrame:
    """`batches` with :data:`MAX_TIMESTAMP_OFFSET` known for `rows` too (a new frame when it
    changes, sharing `batches`' other columns: setting a column replaces it in the new frame's
    own block manager and leaves `batches` as it was; a deep copy of 400,000 batches' header
    columns took longer than the rest of a segment's index checks)."""
    have = (batches[MAX_TIMESTAMP_OFFSET].to_numpy(np.int64) if MAX_TIMESTAMP_OFFSET in batches.columns
            else np.full(len(batches), -1, np.int64))
    rows = np.unique(np.asarray(rows, np.int64))
    rows = rows[(rows >= 0) & (rows < len(batches))]
    rows = rows[have[rows] < 0]
    if not len(rows) and MAX_TIMESTAMP_OFFSET in batches.columns:
        return batches
    found = max_timestamp_offsets(source, batches, rows) if len(rows) else have
    out = batches.copy(deep=False)
    out[MAX_TIMESTAMP_OFFSET] = np.where(have >= 0, have, found)
    return out


#: Time entries at a batch's last offset whose batch verify decodes to tell which form they are in
#: (the ones elsewhere in their batch are all decoded: they need it to be explained).
_FORM_SAMPLE = 64


def _rows_to_decode(batches: pd.DataFrame, times: np.ndarray) -> np.ndarray:
    """The batches whose record form the time entries `times` on disk need: the owner of every
    entry not at its batch's last offset, and of up to :data:`_FORM_SAMPLE` entries (evenly
    spread) at the last offset of a batch of several records, to tell the two forms apart."""
    j = _owners(batches, np.asarray(times, np.int64).reshape(-1, 2)[:, 1])
    known = j >= 0
    jj = np.where(known, j, 0)
    last = batches["last_offset"].to_numpy(np.int64)[jj]
    at_last = known & (np.asarray(times, np.int64).reshape(-1, 2)[:, 1] == last)
    several = batches["base_offset"].to_numpy(np.int64)[jj] != last
    sample = np.flatnonzero(at_last & several)
    if len(sample) > _FORM_SAMPLE:
        sample = sample[np.linspace(0, len(sample) - 1, _FORM_SAMPLE).astype(np.int64)]
    return np.unique(np.concatenate([j[known & ~at_last], j[sample]]))


def _owners(batches: pd.DataFrame, offsets) -> np.ndarray:
    """For each offset, the number of the batch holding it (base <= offset <= last), or -1."""
    base = batches["base_offset"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    offsets = np.asarray(offsets, np.int64).reshape(-1)
    j = np.searchsorted(last, offsets, side="left")
    jj = np.minimum(j, max(len(last) - 1, 0))
    ok = (j < len(last)) & (base[jj] <= offsets) & (offsets <= last[jj]) if len(last) else np.zeros(len(offsets), bool)
    return np.where(ok, jj, -1)


def _time_entry_offsets(batches: pd.DataFrame, time_entry_offset: str) -> np.ndarray:
    """The offset each batch's maximum puts in a time entry under `time_entry_offset`."""
    if time_entry_offset not in TIME_ENTRY_OFFSETS:
        raise ValueError(f"time_entry_offset must be one of {TIME_ENTRY_OFFSETS}, got {time_entry_offset!r}")
    last = batches["last_offset"].to_numpy(np.int64)
    if time_entry_offset == "last":
        return last
    if MAX_TIMESTAMP_OFFSET not in batches.columns:
        raise ValueError(f"time_entry_offset='record' needs the batches' {MAX_TIMESTAMP_OFFSET} column "
                         f"(max_timestamp_offsets)")
    record = batches[MAX_TIMESTAMP_OFFSET].to_numpy(np.int64)
    # LogValidator before 3.8: only assignOffsetsNonCompressed (uncompressed, CreateTime) gives the
    # record; the compressed paths and LogAppendTime give the batch's last offset
    applies = record >= 0
    if "attributes" in batches.columns:
        from rmqlab.kafka.log import COMPRESSION_CODEC_MASK, TIMESTAMP_TYPE_MASK

        attrs = batches["attributes"].to_numpy(np.int64)
        applies &= (attrs & COMPRESSION_CODEC_MASK) == 0    # uncompressed
        applies &= (attrs & TIMESTAMP_TYPE_MASK) == 0       # CreateTime
    if "magic" in batches.columns:
        applies &= batches["magic"].to_numpy() == 2
    return np.where(applies, record, last)


def _running_max_with_owner(ts: np.ndarray, owner_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running maximum of `ts` and, for each position, `owner_values` of the first element that
    reached it (a strictly greater value takes over; ties keep the earlier)."""
    run = np.maximum.accumulate(ts)
    new_max = np.ones(len(ts), bool)
    new_max[1:] = ts[1:] > run[:-1]
    owner = np.where(new_max, np.arange(len(ts)), 0)
    owner = np.maximum.accumulate(owner)
    return run, owner_values[owner]


def _restart_indexes(batches: pd.DataFrame, restarts) -> np.ndarray:
    """Batch numbers of the restart offsets (each must be a batch's first offset); restarts at
    the first batch change nothing and are dropped."""
    base = batches["base_offset"].to_numpy(np.int64)
    wanted = np.unique(np.asarray(list(restarts), np.int64))
    k = np.searchsorted(base, wanted)
    bad = (k >= len(base)) | (base[np.minimum(k, len(base) - 1)] != wanted) if len(base) else np.ones(len(wanted), bool)
    if bad.any():
        raise ValueError(f"restart offset {int(wanted[bad][0])} is not the first offset of a batch of the segment")
    return k[k > 0]


def _offset_entry_batches(pos: np.ndarray, cuts: np.ndarray, index_interval_bytes: int) -> np.ndarray:
    """Batch numbers that get an offset entry, run by run (a run starts at 0 and at each restart
    batch of `cuts`): the first batch starting more than the interval past the last entry or the
    run's start (the in-memory counter is 0 when the segment is loaded; the first run counts
    from position 0). Each pick depends on the one before, so the loop is in C
    (``_kafkalog.index_picks``); :func:`_offset_entry_batches_py` is its model, and also serves
    positions that do not rise (not a segment's batches)."""
    if len(pos) > 1 and not (pos[1:] > pos[:-1]).all():
        return _offset_entry_batches_py(pos, cuts, index_interval_bytes)
    out = np.empty(len(pos), np.int64)
    runs = np.ascontiguousarray(np.concatenate([[0], cuts]), np.int64)
    count = _kafkalog.index_picks(np.ascontiguousarray(pos, np.int64), runs,
                                  min(int(index_interval_bytes), _INT64_MAX), out)
    return out[:count].copy()


_INT64_MAX = 2**63 - 1


def _offset_entry_batches_py(pos: np.ndarray, cuts: np.ndarray, index_interval_bytes: int) -> np.ndarray:
    """:func:`_offset_entry_batches` one binary search per entry written."""
    n = len(pos)
    picks: list[int] = []
    for start, end in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [n]])):
        mark = 0 if start == 0 else int(pos[start])
        i = int(np.searchsorted(pos, mark + index_interval_bytes, side="right"))
        while i < end:
            picks.append(i)
            mark = int(pos[i])
            i = int(np.searchsorted(pos, mark + index_interval_bytes, side="right"))
    return np.asarray(picks, np.int64)


def fit_index_interval(positions: np.ndarray, entry_positions: np.ndarray, *,
                       whole: bool = True) -> tuple[int, int] | None:
    """The index.interval.bytes values under which the broker's rule writes exactly the offset
    entries at `entry_positions` for a segment whose batches start at `positions` (one run: no
    restart), as (smallest, largest), or None when no value does or there is no entry to judge.
    `whole` False: the entries are only the first ones the segment got (no constraint from the
    batches after the last of them).

    The rule (LogSegment.append): a batch gets an entry when the bytes appended since the last
    entry (from position 0 at first) exceed the interval. So each entry's batch starts more than
    the interval past the mark before it, the batch before that one no more than the interval
    past it, and no batch after the last entry starts more than the interval past that entry.
    Every value in the range gives the same entries (offset and time). Units: bytes. Cost: one
    search a entry, O(entries log batches).

    >>> fit_index_interval(np.arange(0, 1700, 170), np.array([680, 1360]))   # 170-byte batches
    (510, 679)
    >>> fit_index_interval(np.arange(0, 1700, 170), np.array([680, 1190])) is None
    True
    """
    pos = np.asarray(positions, np.int64)
    at = np.asarray(entry_positions, np.int64)
    if len(at) == 0 or len(pos) == 0:
        return None
    picked = np.searchsorted(pos, at)
    if (picked >= len(pos)).any() or (pos[np.minimum(picked, len(pos) - 1)] != at).any() or (picked == 0).any():
        return None                          # an entry not at a batch start, or at position 0
    marks = np.concatenate([[0], at[:-1]])
    if (at <= marks).any():
        return None
    low = int((pos[picked - 1] - marks).max())
    if whole:
        low = max(low, int(pos[-1] - at[-1]))
    high = int((at - marks).min()) - 1
    return (low, high) if low <= high else None


def interval_from_entries(positions: np.ndarray, entry_positions: np.ndarray, *,
                          call_positions: Callable[[], np.ndarray | None] | None = None,
                          run_starts: Sequence[int] = ()) -> tuple[int, str]:
    """index.interval.bytes for judging a segment whose topic setting is not given, and a note
    saying where it came from ("" for the default). The range of values the offset entries fit
    (:func:`fit_index_interval`) batch by batch; else, given `call_positions` (a function giving
    the first positions of the ``LogSegment.append`` calls the entries imply, :func:`append_calls`,
    or None; asked only here), the range they fit call by call (a v0/v1 producer's message set,
    a follower's fetch or the cleaner's chunk is one call and gets one entry at most); when
    neither writes them all (a restart counts bytes again from elsewhere), the range the longest
    run of first entries fits batch by batch. From the range: the default 4096 when it holds it,
    else the largest power of two in it (topic settings are round numbers), else its smallest
    multiple of 100, else its smallest value. No range: the default (no entry; or not even the
    first fits, which the note says). `run_starts`: the positions of the batches where the broker
    may have restarted (:func:`restart_candidates`): a restart counts bytes again from its first
    batch, and the entries after it can happen to fit a single run under a wrong value. So each
    run is fitted from its own start, and the values all runs fit are taken; where none (a
    candidate was no restart), those the first run fits; where it has no entry, as if there were
    no candidate. Cost: O(log entries) fits.

    >>> interval_from_entries(np.arange(0, 1700, 170), np.array([680, 1360]))[0]
    512
    >>> interval_from_entries(np.arange(0, 1700, 170), np.array([680, 1190]))[0]   # batch by batch only the first fits
    512
    >>> calls = np.array([0, 680, 1190])              # the call at 680 appended three batches
    >>> interval_from_entries(np.arange(0, 1700, 170), np.array([680, 1190]), call_positions=lambda: calls)[0]
    256
    """
    at = np.asarray(entry_positions, np.int64)
    runs = _fit_runs(np.asarray(positions, np.int64), at, sorted(run_starts)) if len(run_starts) else None
    if runs is not None:
        return _interval_in(runs[1], f"the offset entries {runs[0]}")
    what, fit = "the offset entries", fit_index_interval(positions, at)
    calls = call_positions() if fit is None and len(at) and call_positions is not None else None
    if calls is not None:
        what, fit = "the offset entries, as append calls of several batches", fit_index_interval(calls, at)
    if fit is None and len(at):
        lo, hi = 0, len(at)            # the longest prefix that fits: a prefix of one that fits fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fit_index_interval(positions, at[:mid], whole=False) is None:
                hi = mid - 1
            else:
                lo = mid
        if lo:
            what = f"the first {lo:,} offset entr{'y' if lo == 1 else 'ies'}"
            fit = fit_index_interval(positions, at[:lo], whole=False)
    if fit is None and len(at):
        return INDEX_INTERVAL_BYTES, (
            f"index.interval.bytes: no one value writes even the first offset entry batch by batch (an append of "
            f"several batches at once gets one entry: a produce request's message set in magic v0/v1, the "
            f"cleaner's chunks; or the index is damaged): judged with the default {INDEX_INTERVAL_BYTES:,}; give "
            f"the topic's setting")
    return _interval_in(fit, what)


def _interval_in(fit: tuple[int, int] | None, what: str) -> tuple[int, str]:
    """The value :func:`interval_from_entries` takes from the range `fit` of `what`, and its note."""
    if fit is None or fit[0] <= INDEX_INTERVAL_BYTES <= fit[1]:
        return INDEX_INTERVAL_BYTES, ""
    low, high = fit
    power = 1 << (high.bit_length() - 1) if high > 0 else 0
    hundred = -(-low // 100) * 100
    chosen = power if power >= low and power > 0 else hundred if hundred <= high else low
    return chosen, (f"index.interval.bytes: {what} fit {low:,} to {high:,} bytes, not the default "
                    f"{INDEX_INTERVAL_BYTES:,}: judged with {chosen:,} (the topic's setting; give it to check "
                    f"against it)")


def _fit_runs(positions: np.ndarray, at: np.ndarray, starts: list[int]) -> tuple[str, tuple[int, int]] | None:
    """The values of index.interval.bytes that write the entries `at` when the segment's batches
    (at `positions`) were appended in runs from position 0 and from each of `starts` (the count of
    bytes since the last entry is 0 when a broker loads the segment), with what they came from:
    each run is whole (it ended where the next began), so its entries fit as a segment of its own
    (:func:`fit_index_interval`), and a run without an entry needs a value no smaller than its
    last batch's distance from its start. Where the runs fit no common value (a candidate was no
    restart), the values the first run's entries fit (from position 0 the count is the segment's
    own); None where those are none either."""
    bounds = [0, *starts, int(positions[-1]) + 1 if len(positions) else 1]
    low, high, first, common = 0, None, None, True
    for k in range(len(bounds) - 1):
        start, end = bounds[k], bounds[k + 1]
        in_run = positions[(positions >= start) & (positions < end)] - start
        mine = at[(at >= start) & (at < end)] - start
        if not len(mine):
            low = max(low, int(in_run.max()) if len(in_run) else 0)
            continue
        fit = fit_index_interval(in_run, mine)
        if k == 0:
            first = fit_index_interval(in_run, mine, whole=False)
        if fit is None:
            common = False
            continue
        low, high = max(low, fit[0]), fit[1] if high is None else min(high, fit[1])
    if common and high is not None and low <= high:
        return f"of the {len(bounds) - 1} runs between the possible restarts, each from its start", (low, high)
    if first is not None:
        return f"before position {starts[0]:,} (where the broker may have restarted)", first
    return None


@dataclass(frozen=True)
class _Plan:
    """The entries of :func:`expected_entries` with where each came from: ``offset_batches``
    (batch number of each offset entry) and ``time_origins`` (per time entry: 2i+1 for the
    offer at offset entry batch i, 2k for the closing offer before restart batch k, 2n for the
    final one of a rolled or closed segment)."""

    offsets: np.ndarray
    times: np.ndarray
    offset_batches: np.ndarray
    time_origins: np.ndarray


def _plan(batches: pd.DataFrame, index_interval_bytes: int, rolled: bool, restarts,
          time_entry_offset: str = "last") -> _Plan:
    if index_interval_bytes < 0:
        raise ValueError(f"index_interval_bytes must be >= 0, got {index_interval_bytes}")
    n = len(batches)
    empty = np.zeros((0, 2), np.int64)
    if n == 0:
        if len(list(restarts)):
            raise ValueError("restarts given for a segment without batches")
        return _Plan(empty, empty, np.zeros(0, np.int64), np.zeros(0, np.int64))
    pos = batches["position"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    ts = batches["max_timestamp"].to_numpy(np.int64)
    cuts = _restart_indexes(batches, restarts)
    pick_arr = _offset_entry_batches(pos, cuts, index_interval_bytes)
    offsets = np.stack([last[pick_arr], pos[pick_arr]], axis=1) if len(pick_arr) else empty

    # Time offers in the order the broker makes them. After a restart maxTimestampSoFar is the
    # time index's last entry, which the closing offer just made equal to the running maximum
    # (kept, or already there with that timestamp), so the running maximum carries on.
    run_ts, run_off = _running_max_with_owner(ts, _time_entry_offsets(batches, time_entry_offset))
    origin = np.concatenate([2 * pick_arr + 1, 2 * cuts, [2 * n] if rolled else []]).astype(np.int64)
    source = np.concatenate([pick_arr, cuts - 1, [n - 1] if rolled else []]).astype(np.int64)
    order = np.argsort(origin, kind="stable")
    origin, source = origin[order], source[order]
    offered_ts, offered_off = run_ts[source], run_off[source]
    # maybeAppend keeps an offer only if its timestamp beats the last kept one (-1 when empty);
    # the offers are a running maximum, so those are the first offers of each new value
    keep = offered_ts > NO_TIMESTAMP
    if len(offered_ts) > 1:
        keep[1:] &= offered_ts[1:] > offered_ts[:-1]
    times = np.stack([offered_ts[keep], offered_off[keep]], axis=1) if keep.any() else empty
    return _Plan(offsets, times, pick_arr, origin[keep])


def expected_entries(batches: pd.DataFrame, index_interval_bytes: int = INDEX_INTERVAL_BYTES, *,
                     rolled: bool = True, restarts=(),
                     time_entry_offset: str = "last") -> tuple[np.ndarray, np.ndarray]:
    """The offset entries (absolute offset, position) and time entries (timestamp, absolute
    offset) the broker writes for `batches` (:func:`batch_table` columns), as two int64
    arrays of shape (n, 2).

    Units: offsets, bytes, ms. Cost: O(batches) vectorized, the offset entries picked in one C
    loop (each depends on the last): about 40 ms for 1,000,000 batches.

    >>> b = batch_table(positions=[0, 3000, 6000, 9000, 14000], sizes=[3000, 3000, 3000, 5000, 100],
    ...                 base_offsets=[0, 5, 10, 15, 20], last_offsets=[4, 9, 14, 19, 20],
    ...                 max_timestamps=[100, 250, 200, 300, 300])
    >>> [e.tolist() for e in expected_entries(b, restarts=[10])]
    [[[20, 14000]], [[250, 9], [300, 19]]]

    `rolled`: the segment was rolled or closed, so the final time entry is offered too (an
    active segment's index lacks it). `restarts`: first offsets of the batches the broker
    appended first after loading the segment again (a restart): the count of bytes since the
    last offset entry starts at 0 from that batch's position, and the closing time entry of
    the run before is offered first. `time_entry_offset`: the offset a time entry names,
    ``"last"`` (the batch's last offset: ``LogSegment.recover``, followers, the cleaner, leaders
    since Kafka 3.8) or ``"record"`` (a leader before 3.8: the first record holding the batch's
    maxTimestamp, from the batches' ``max_timestamp_offset`` column, for uncompressed
    CreateTime batches; the others keep the last offset). Raises ValueError for a restart that
    is not a batch's first offset, a negative interval, or ``"record"`` without that column.

    >>> b2 = batch_table(positions=[0, 5000], sizes=[5000, 100], base_offsets=[0, 6], last_offsets=[5, 8],
    ...                  max_timestamps=[10, 20], max_timestamp_offsets=[3, 6])
    >>> [e.tolist() for e in expected_entries(b2, time_entry_offset="record")], expected_entries(b2)[1].tolist()
    ([[[8, 5000]], [[20, 6]]], [[20, 8]])
    """
    plan = _plan(batches, index_interval_bytes, rolled, restarts, time_entry_offset)
    return plan.offsets, plan.times


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


#: The one :class:`Mismatch` kind that is explained, not corruption.
PRE_38_TIME_ENTRY = "pre-3.8 time entry"


def compare(batches: pd.DataFrame, offset_entries, time_entries, *, offset_file: str = ".index",
            time_file: str = ".timeindex", index_interval_bytes: int = INDEX_INTERVAL_BYTES,
            rolled: bool = True, restarts=()) -> list[Mismatch]:
    """Every difference between the entries on disk (absolute offsets; arrays of shape (n, 2))
    and :func:`expected_entries` (with the same `rolled` and `restarts`, the ``"last"`` time
    entry form), entry by entry. A time entry that differs only in naming the first record
    holding its batch's maxTimestamp (the batches' ``max_timestamp_offset`` column, as
    :func:`max_timestamp_offsets` gives it) is the ``"record"`` form a leader before Kafka 3.8
    wrote: reported as ``"pre-3.8 time entry"`` with the explanation; anything else, another
    record of the batch included, is a real mismatch. ``None`` for `offset_entries` or
    `time_entries` skips that index.

    >>> b = batch_table(positions=[0, 5000], sizes=[5000, 100], base_offsets=[0, 6], last_offsets=[5, 8],
    ...                 max_timestamps=[10, 20], max_timestamp_offsets=[3, 6])
    >>> [(m.kind, m.found) for m in compare(b, [[8, 5000]], [[20, 6]])]
    [('pre-3.8 time entry', (20, 6))]
    >>> [(m.kind, m.found) for m in compare(b, [[8, 5000]], [[20, 7]])]
    [('time entry', (20, 7))]
    """
    want_off, want_time = expected_entries(batches, index_interval_bytes, rolled=rolled, restarts=restarts)
    out: list[Mismatch] = []
    if offset_entries is not None:
        got_off = np.asarray(offset_entries, np.int64).reshape(-1, 2)
        if len(got_off) != len(want_off):
            out.append(Mismatch(offset_file, "offset entry count", -1, len(want_off), len(got_off)))
        for i in np.flatnonzero((want_off[:len(got_off)] != got_off[:len(want_off)]).any(axis=1)):
            out.append(Mismatch(offset_file, "offset entry", int(i), tuple(map(int, want_off[i])),
                                tuple(map(int, got_off[i]))))
    if time_entries is None:
        return out
    got_time = np.asarray(time_entries, np.int64).reshape(-1, 2)
    if len(got_time) != len(want_time):
        out.append(Mismatch(time_file, "time entry count", -1, len(want_time), len(got_time)))
    base = batches["base_offset"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    record = (batches[MAX_TIMESTAMP_OFFSET].to_numpy(np.int64) if MAX_TIMESTAMP_OFFSET in batches.columns
              else np.full(len(batches), -1, np.int64))
    for i in np.flatnonzero((want_time[:len(got_time)] != got_time[:len(want_time)]).any(axis=1)):
        (wt, wo), (gt, go) = want_time[i], got_time[i]
        j = int(np.searchsorted(last, wo))          # the batch whose last offset is expected
        if wt == gt and j < len(last) and last[j] == wo and 0 <= record[j] == go != wo:
            out.append(Mismatch(time_file, PRE_38_TIME_ENTRY, int(i), (int(wt), int(wo)), (int(gt), int(go)),
                                f"offset {go} is the first record of batch {base[j]}..{last[j]} holding its "
                                f"maxTimestamp {gt}: a leader before Kafka 3.8 indexed that record "
                                f"(LogValidator.assignOffsetsNonCompressed, offsetOfMaxBatchTimestamp); "
                                f"recovery, followers, the cleaner and Kafka >= 3.8 (KAFKA-16310) index the "
                                f"batch's last offset, {wo}"))
        else:
            out.append(Mismatch(time_file, "time entry", int(i), (int(wt), int(wo)), (int(gt), int(go))))
    return out


def _unexplained(mismatches: list[Mismatch]) -> int:
    return sum(m.kind != PRE_38_TIME_ENTRY for m in mismatches)


# ------------------------------------------------------------------------------ restarts


@dataclass(frozen=True)
class Restart:
    """A point where the broker loaded the segment again and went on appending to it.

    ``offset`` / ``position``: the first batch appended after the restart; ``evidence``: what
    on disk says so (file names, leader epochs, or the entries alone); ``offset_entries_after``:
    offset entries written from there to the next restart or the end; ``closing_time_entry``:
    (entry number, (timestamp, offset)) of the time entry the shutdown before it appended, or
    None when that offer was not kept (its timestamp was not larger than the last entry's).
    """

    offset: int
    position: int
    evidence: tuple[str, ...]
    offset_entries_after: int = 0
    closing_time_entry: tuple[int, tuple[int, int]] | None = None

    def describe(self) -> str:
        text = (f"restart at offset {self.offset} (position {self.position}): {', '.join(self.evidence)}; "
                f"{self.offset_entries_after} offset entries follow it, counted from there")
        if self.closing_time_entry is not None:
            n, entry = self.closing_time_entry
            text += f"; time entry {n} {entry} was appended when the segment was closed at shutdown"
        return text

    def as_dict(self) -> dict[str, Any]:
        closing = None if self.closing_time_entry is None else \
            {"entry": self.closing_time_entry[0], "timestamp": self.closing_time_entry[1][0],
             "offset": self.closing_time_entry[1][1]}
        return {"offset": self.offset, "position": self.position, "evidence": list(self.evidence),
                "offset_entries_after": self.offset_entries_after, "closing_time_entry": closing}


#: Evidence strings that prove a clean shutdown (not merely a change of leader) start with this.
SNAPSHOT_SUFFIX = ".snapshot"
_SHUTDOWN_HINT = "producer-state snapshot"


def _snapshot_offsets(directory: Path) -> dict[int, str]:
    """Producer-state snapshot files beside a segment, by the offset in their name."""
    out = {}
    for p in directory.glob("*" + SNAPSHOT_SUFFIX):
        stem = p.name[:-len(SNAPSHOT_SUFFIX)]
        if len(stem) == 20 and stem.isdigit():
            out[int(stem)] = p.name
    return out


def restart_candidates(log_path: str | os.PathLike,
                       batches: pd.DataFrame) -> tuple[dict[int, tuple[str, ...]], list[str]]:
    """Where the files beside a segment say the broker may have restarted inside it: offsets
    (first offsets of the segment's batches, not its first) with the evidence for each, and
    notes on evidence that could not be read.

    Units: offsets. Cost: a directory listing, the leader-epoch checkpoint, one pass over the
    batches' leader epochs.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "00000000000000000010.snapshot").write_bytes(b"")
    0
    >>> b = batch_table(positions=[0, 100], sizes=[100, 100], base_offsets=[0, 10], last_offsets=[9, 19],
    ...                 max_timestamps=[5, 6])
    >>> evidence, notes = restart_candidates(d / "00000000000000000000.log", b)
    >>> evidence[10][0][:42], notes
    ('00000000000000000010.snapshot (producer-st', [])

    Evidence: a producer-state snapshot ``<offset>.snapshot`` (the broker writes one at clean
    shutdown, named by the log end offset, at segment roll, and after recovering a segment at
    startup: inside a segment, only a stop can leave one); a leader epoch of
    ``leader-epoch-checkpoint`` starting there; the batches' ``partitionLeaderEpoch`` changing
    there. A leader change alone does not restart a broker, so :func:`choose_restarts` applies
    a candidate only where the index entries agree.
    """
    from rmqlab.kafka.checkpoints import LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint

    directory = Path(log_path).parent
    base = batches["base_offset"].to_numpy(np.int64)
    inside = _BatchStarts(base[1:])
    evidence: dict[int, list[str]] = {}
    notes: list[str] = []
    for offset, name in sorted(_snapshot_offsets(directory).items()):
        if offset in inside:
            evidence.setdefault(offset, []).append(
                f"{name} ({_SHUTDOWN_HINT} at log end offset {offset}: the broker stopped there)")
    checkpoint = directory / LEADER_EPOCH_CHECKPOINT
    epochs_listed = set()
    if checkpoint.exists():
        try:
            for epoch, start in read_leader_epoch_checkpoint(checkpoint).itertuples(index=False):
                epochs_listed.add(int(start))
                if start in inside:
                    evidence.setdefault(int(start), []).append(f"leader epoch {epoch} starts at {start}")
        except RmqlabError as e:
            notes.append(f"leader-epoch-checkpoint not used as restart evidence: {e}")
    if "partition_leader_epoch" in batches.columns and len(batches) > 1:
        ple = batches["partition_leader_epoch"].to_numpy(np.int64)
        for i in np.flatnonzero(ple[1:] != ple[:-1]) + 1:
            if int(base[i]) not in epochs_listed:
                evidence.setdefault(int(base[i]), []).append(
                    f"the batches' partitionLeaderEpoch goes from {ple[i - 1]} to {ple[i]} there")
    return {k: tuple(v) for k, v in sorted(evidence.items())}, notes


class _BatchStarts:
    """`offset in starts` for a segment's first offsets without a set of every batch: binary
    search when they rise (a sound segment), a set otherwise."""

    def __init__(self, base: np.ndarray):
        self.base = base
        self.rising = len(base) < 2 or bool((base[1:] > base[:-1]).all())
        self.members = None if self.rising else set(base.tolist())

    def __contains__(self, offset) -> bool:
        if self.members is not None:
            return offset in self.members
        i = int(np.searchsorted(self.base, offset))
        return i < len(self.base) and int(self.base[i]) == offset


def _is_shutdown(evidence: tuple[str, ...]) -> bool:
    return any(_SHUTDOWN_HINT in e for e in evidence)


#: Most restart hypotheses kept while :func:`choose_restarts` walks the candidates.
_MAX_HYPOTHESES = 16


def choose_restarts(batches: pd.DataFrame, offset_entries, time_entries, candidates, *,
                    index_interval_bytes: int = INDEX_INTERVAL_BYTES, rolled: bool = True) -> list[int]:
    """The subset of candidate restart offsets under which the broker's rule best explains the
    entries on disk: fewest unexplained mismatches, then (a tie: the entries cannot tell) the
    restarts a clean-shutdown snapshot proves, then the fewest restarts.

    Units: offsets. Cost: per candidate, two rule evaluations over the batches before the next
    candidate for each kept hypothesis (at most 16).

    >>> b = batch_table(positions=[0, 3000, 6000, 9000, 14000], sizes=[3000, 3000, 3000, 5000, 100],
    ...                 base_offsets=[0, 5, 10, 15, 20], last_offsets=[4, 9, 14, 19, 20],
    ...                 max_timestamps=[100, 250, 200, 300, 300])
    >>> on_disk = expected_entries(b, restarts=[10])
    >>> choose_restarts(b, *on_disk, {10: ("leader epoch 2 starts at 10",), 15: ("leader epoch 3 starts at 15",)})
    [10]

    `candidates`: offsets, or a mapping offset -> evidence (:func:`restart_candidates`);
    `offset_entries` / `time_entries`: as :func:`compare` (None: that index is not used).
    """
    evidence = dict(candidates) if isinstance(candidates, dict) else {int(c): () for c in candidates}
    offsets = sorted(int(c) for c in evidence)
    if not offsets:
        return []
    base = batches["base_offset"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    ks = _restart_indexes(batches, offsets).tolist()
    if len(ks) != len(offsets):                 # a candidate at the first batch changes nothing
        offsets = [o for o in offsets if o != int(base[0])]
    got_off = None if offset_entries is None else np.asarray(offset_entries, np.int64).reshape(-1, 2)
    got_time = None if time_entries is None else np.asarray(time_entries, np.int64).reshape(-1, 2)
    n = len(batches)

    def score(chosen: tuple[int, ...], upto: int) -> int:
        """Unexplained mismatches among the entries the batches before `upto` decide."""
        head = batches.iloc[:upto]
        final = upto == n
        want_off, want_time = expected_entries(head, index_interval_bytes, rolled=rolled and final,
                                               restarts=chosen)
        off = None if got_off is None else (got_off if final else got_off[got_off[:, 0] <= last[upto - 1]])
        tim = None if got_time is None else (got_time if final else got_time[:len(want_time)])
        return _unexplained(compare(head, off, tim, index_interval_bytes=index_interval_bytes,
                                    rolled=rolled and final, restarts=chosen))

    def rank(item):
        bad, chosen = item
        return (bad, -sum(_is_shutdown(evidence.get(c, ())) for c in chosen), len(chosen), chosen)

    hypotheses: list[tuple[int, tuple[int, ...]]] = [(0, ())]
    for j, offset in enumerate(offsets):
        upto = ks[j + 1] if j + 1 < len(ks) else n
        children = {chosen: score(chosen, upto) for _, h in hypotheses for chosen in (h, h + (offset,))}
        ranked = sorted(((bad, chosen) for chosen, bad in children.items()), key=rank)
        best = ranked[0][0]
        hypotheses = [r for r in ranked if r[0] == best][:_MAX_HYPOTHESES]
    return list(min(hypotheses, key=rank)[1])


def _describe_restarts(batches: pd.DataFrame, restarts, evidence: dict[int, tuple[str, ...]], *,
                       index_interval_bytes: int, rolled: bool) -> list[Restart]:
    plan = _plan(batches, index_interval_bytes, rolled, restarts)
    cuts = _restart_indexes(batches, restarts)
    pos = batches["position"].to_numpy(np.int64)
    base = batches["base_offset"].to_numpy(np.int64)
    ends = np.concatenate([cuts[1:], [len(batches)]])
    out = []
    for k, end in zip(cuts.tolist(), ends.tolist()):
        follow = int(((plan.offset_batches >= k) & (plan.offset_batches < end)).sum())
        closing = np.flatnonzero(plan.time_origins == 2 * k)
        entry = None
        if len(closing):
            timestamp, offset = plan.times[closing[0]]
            entry = (int(closing[0]), (int(timestamp), int(offset)))
        out.append(Restart(int(base[k]), int(pos[k]), evidence.get(int(base[k]), ("given",)), follow, entry))
    return out


def infer_restart(batches: pd.DataFrame, offset_entries, time_entries, restarts=(), *,
                  index_interval_bytes: int = INDEX_INTERVAL_BYTES, rolled: bool = True,
                  max_tries: int = 4096) -> int | None:
    """The first restart the entries alone prove, when no file says so (:func:`infer_restarts`
    with `restarts` given): None when the entries need none, or when no set of restarts
    explains them all.

    Units: offsets. Cost: as :func:`infer_restarts`.

    >>> b = batch_table(positions=[0, 3000, 6000, 9000, 14000], sizes=[3000, 3000, 3000, 5000, 100],
    ...                 base_offsets=[0, 5, 10, 15, 20], last_offsets=[4, 9, 14, 19, 20],
    ...                 max_timestamps=[100, 250, 200, 300, 300])
    >>> infer_restart(b, *expected_entries(b, restarts=[10]))
    10
    """
    found = infer_restarts(batches, offset_entries, time_entries, restarts, index_interval_bytes=index_interval_bytes,
                           rolled=rolled, max_tries=max_tries)
    return found[0] if found else None


#: Most restarts :func:`infer_restarts` adds to one segment.
_MAX_INFERRED = 16


def infer_restarts(batches: pd.DataFrame, offset_entries, time_entries, restarts=(), *,
                   index_interval_bytes: int = INDEX_INTERVAL_BYTES, rolled: bool = True,
                   max_tries: int = 4096) -> list[int]:
    """Restarts no file records (added to `restarts`) that together make every entry on disk
    agree with the broker's rule; [] when the entries need none or when no such set is found.

    Why they can be missing: a broker writes a producer-state snapshot at each clean shutdown
    but keeps only the newest few (``ProducerStateManager`` deletes older ones when it loads
    the log and as segments go), and a restart inside one leader epoch changes no epoch, so a
    segment that lived through two restarts often names only the second. The entries still
    tell: after a restart the offset entries count their bytes from the first batch appended
    after it, so the restart point is pinned by where they start again.

    The search, one restart at a time, depth first: before the first entry the rule does not
    explain, and after the last entry before it that agrees, try each batch boundary; a
    restart there must move the first unexplained entry on; go on from the one that moves it
    furthest, and back to the next when that leads nowhere (of boundaries that reach equally
    far, the first, the others named by :func:`inferred_restarts`). The restarts found are
    returned only when, together, they explain every entry (the closing time entry of each
    shutdown included, where the broker kept it): a damaged entry, which no restart explains
    along with all the entries after it, is left to fail.

    Units: offsets. Cost: up to `max_tries` rule evaluations over the whole segment in all (a
    search that would need more finds nothing), at most 16 restarts.

    >>> b = batch_table(positions=np.arange(20) * 1000, sizes=[1000] * 20, base_offsets=np.arange(20),
    ...                 last_offsets=np.arange(20), max_timestamps=100 + np.arange(20))
    >>> on_disk = expected_entries(b, restarts=[7, 14])   # stopped at 7 and at 14
    >>> on_disk[0].tolist()                                # offset entries restart counting at 7 and 14
    [[5, 5000], [12, 12000], [19, 19000]]
    >>> infer_restarts(b, *on_disk, restarts=[14]), infer_restarts(b, *on_disk)
    ([7], [7, 14])
    """
    return [offset for offset, _ in inferred_restarts(batches, offset_entries, time_entries, restarts,
                                                       index_interval_bytes=index_interval_bytes, rolled=rolled,
                                                       max_tries=max_tries)]


def inferred_restarts(batches: pd.DataFrame, offset_entries, time_entries, restarts=(), *,
                      index_interval_bytes: int = INDEX_INTERVAL_BYTES, rolled: bool = True,
                      max_tries: int = 4096) -> list[tuple[int, tuple[int, ...]]]:
    """:func:`infer_restarts` with, for each restart found, the other batch boundaries at which
    a restart would explain the entries as well (the entries cannot tell them apart).

    Units: offsets. Cost: as :func:`infer_restarts`.
    """
    got_off = np.asarray(offset_entries, np.int64).reshape(-1, 2)
    got_time = np.asarray(time_entries, np.int64).reshape(-1, 2)
    base = batches["base_offset"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    known = sorted(int(r) for r in restarts)

    def first_bad(trial) -> tuple[float, list[Mismatch]]:
        """The offset of the first entry the rule leaves unexplained (inf: none), and the mismatches."""
        found = compare(batches, got_off, got_time, restarts=trial, index_interval_bytes=index_interval_bytes,
                        rolled=rolled)
        bad = [m for m in found if m.kind != PRE_38_TIME_ENTRY]
        if not bad:
            return np.inf, found
        at = []
        for m in bad:
            if m.entry < 0:                 # a count: the first entry one side has and the other lacks
                time = m.kind.startswith("time")
                want = expected_entries(batches, index_interval_bytes, rolled=rolled, restarts=trial)[int(time)]
                disk = got_time if time else got_off
                longer = want if len(want) > len(disk) else disk
                n = min(len(want), len(disk))
                if n < len(longer):
                    at.append(int(longer[n, 1]) + 1 if time else int(longer[n, 0]))
                continue
            # where the rule and the disk part: the earlier of the two entries' offsets (a
            # shutdown's closing time entry names the last offset *before* the restart)
            pairs = [p for p in (m.found, m.expected) if p is not None]
            if m.kind == "offset entry":
                at.extend(int(p[0]) for p in pairs)
            elif m.kind == "time entry":
                at.extend(int(p[1]) + 1 for p in pairs)
        return (min(at) if at else int(last[-1]) + 1), found

    budget = [max_tries]

    def search(added: list[tuple[int, tuple[int, ...]]], here: float, found: list[Mismatch]):
        """Depth first: the restarts, when `added` can be completed to explain every entry."""
        if here == np.inf:
            return added
        if len(added) >= _MAX_INFERRED:
            return None
        trial_known = sorted(set(known) | {offset for offset, _ in added})
        plan = _plan(batches, index_interval_bytes, rolled, trial_known)
        # the restart lies after the last offset entry that still agrees and at or before the
        # batch holding the first entry that does not
        hi = min(int(np.searchsorted(last, here, side="left")), len(batches) - 1)
        first_off = min([m.entry for m in found if m.kind == "offset entry"] + [min(len(got_off), len(plan.offsets))])
        agreeing = plan.offset_batches[:first_off]
        agreeing = agreeing[agreeing < hi]
        lo = int(agreeing[-1]) + 1 if len(agreeing) else 1
        earlier = [k for k in _restart_indexes(batches, trial_known).tolist() if base[k] <= here]
        lo = max([lo, 1] + earlier)
        tried = {}
        for k in range(lo, hi + 1):
            if int(base[k]) in trial_known:
                continue
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            tried[int(base[k])] = first_bad(sorted(trial_known + [int(base[k])]))
        # a restart must move the first unexplained entry on; the furthest first, and of those
        # that reach equally far, the first boundary (the others named alongside it)
        reach: dict[float, list[int]] = {}
        for offset, (far, _) in tried.items():
            if far > here:
                reach.setdefault(far, []).append(offset)
        for far in sorted(reach, reverse=True):
            alike = sorted(reach[far])
            done = search(added + [(alike[0], tuple(alike[1:]))], far, tried[alike[0]][1])
            if done is not None:
                return done
        return None

    here, found = first_bad(known)
    done = search([], here, found)
    return sorted(done) if done else []


# ------------------------------------------------------------------------------ append calls


#: The column of :func:`append_calls`'s table: how many batches each call appended.
CALL_BATCHES = "batches_in_call"


def append_calls(batches: pd.DataFrame, offset_entries, restarts=()) -> pd.DataFrame | None:
    """The batches grouped into the ``LogSegment.append`` calls the offset entries imply, one
    row per call (the columns of :func:`batch_table`), or None when no grouping gives them.

    ``LogSegment.append`` (every release to 4.x: ``kafka/log/LogSegment.scala``, then
    ``storage/.../log/LogSegment.java``) appends a call's records in one piece and indexes the
    *call*: one offset entry at most, (the call's last offset, the call's first position), when
    more than ``index.interval.bytes`` were appended since the last entry, the call's bytes
    then counted whole. A producer's call is one batch (one batch per partition per request),
    but a follower appends each fetch response, the log cleaner each chunk of retained batches
    (``LogCleaner.cleanInto``), and a producer of magic v0/v1 messages a whole message set per
    request: several batches in one call, so fewer entries than one per batch. (Only
    ``LogSegment.recover`` indexes batch by batch.) The call boundaries are not on disk, but
    each offset entry names a call's first batch (its position) and last batch (its offset),
    and the batches between two such calls can be taken as one call: a call starting where
    the named one ends makes an entry iff the named call's first byte is more than the
    interval behind it, whatever follows, so merging them loses no grouping the broker could
    have made. Restarts begin a call (the counter starts at 0 there).

    Units: rows. Cost: O(batches) NumPy, a Python step per call.

    >>> b = batch_table(positions=[0, 100, 200, 300, 400], sizes=[100] * 5, base_offsets=[0, 2, 4, 6, 8],
    ...                 last_offsets=[1, 3, 5, 7, 9], max_timestamps=[5, 9, 7, 8, 6])
    >>> calls = append_calls(b, [[7, 200]])          # one entry: a call of batches 2..3
    >>> calls[["position", "size", "base_offset", "last_offset", "max_timestamp"]].values.tolist()
    [[0, 200, 0, 3, 9], [200, 200, 4, 7, 8], [400, 100, 8, 9, 6]]
    >>> append_calls(b, [[7, 100]]) is None          # position 100 is batch 1, offset 7 ends batch 3: ok
    False
    >>> append_calls(b, [[6, 200]]) is None          # offset 6 is no batch's last offset
    True
    """
    n = len(batches)
    got = np.asarray(offset_entries, np.int64).reshape(-1, 2)
    if n == 0:
        return None if len(got) else batches
    pos = batches["position"].to_numpy(np.int64)
    last = batches["last_offset"].to_numpy(np.int64)
    first = np.searchsorted(pos, got[:, 1])
    end = np.searchsorted(last, got[:, 0])
    if ((first >= n) | (end >= n)).any():
        return None
    if (pos[first] != got[:, 1]).any() or (last[end] != got[:, 0]).any() or (end < first).any():
        return None
    if len(got) > 1 and (first[1:] <= end[:-1]).any():
        return None
    cuts = _restart_indexes(batches, restarts)
    # no named call may span a restart: the broker starts counting afresh there
    inside = np.searchsorted(cuts, first, side="right") != np.searchsorted(cuts, end, side="right")
    if inside.any():
        return None
    starts = np.unique(np.concatenate([[0], first, end + 1, cuts]))
    starts = starts[starts < n]
    size = batches["size"].to_numpy(np.int64) if "size" in batches else np.diff(np.append(pos, pos[-1]))
    ts = batches["max_timestamp"].to_numpy(np.int64)
    stops = np.append(starts[1:], n)
    holder = np.array([a + int(np.argmax(ts[a:z])) for a, z in zip(starts.tolist(), stops.tolist())], np.int64)
    table = batch_table(positions=pos[starts], sizes=np.add.reduceat(size, starts),
                        base_offsets=batches["base_offset"].to_numpy(np.int64)[starts], last_offsets=last[stops - 1],
                        max_timestamps=ts[holder])
    # the offset a call hands with its maximum: a call of several batches (a follower's, the
    # cleaner's) the last offset of the batch holding it (shallowOffsetOfMaxTimestamp); a call
    # of one batch as that batch's own forms
    owner = last[holder].copy()
    if MAX_TIMESTAMP_OFFSET in batches:
        one = (stops - starts) == 1
        record = batches[MAX_TIMESTAMP_OFFSET].to_numpy(np.int64)[holder]
        owner = np.where(one & (record >= 0), record, owner)
    table[MAX_TIMESTAMP_OFFSET] = owner
    table[CALL_BATCHES] = stops - starts
    return table


# ------------------------------------------------------------------------------ on files


def segment_batches(log_path: str | os.PathLike) -> pd.DataFrame:
    """The batch headers of a ``.log`` segment (:func:`rmqlab.kafka.log.read_batches`,
    CRCs computed, a torn tail raises), in the columns :func:`expected_entries` needs plus the
    rest of the header. Read-only. Cost: one walk of the batch headers (about 2 GB/s)."""
    from rmqlab.kafka.log import read_batches

    return read_batches(log_path)


@dataclass
class _IndexOnDisk:
    """One index file as verify sees it: ``entries`` (absolute, shape (n, 2)) or None when the
    file is absent; ``untrimmed``: preallocated, written entries then a zero-filled tail;
    ``slots``: whole entries the file holds."""

    path: Path
    entries: np.ndarray | None = None
    untrimmed: bool = False
    slots: int = 0


def _read_index(path: Path, cls, base_offset: int, columns: tuple[str, str], errors: list[str]) -> _IndexOnDisk:
    found = _IndexOnDisk(path)
    if not path.exists():
        return found
    try:
        # count="dump": an untrimmed (preallocated) file's entries stop at its zero-filled tail
        with cls.open(path, base_offset, count="dump", strict=False) as idx:
            found.slots = idx.max_entries
            found.untrimmed = bool(idx.untrimmed)
            written = idx.entry_count
            if found.untrimmed:
                data = path.read_bytes()
                tail = np.frombuffer(data, np.uint8)[written * idx.entry_size:idx.max_entries * idx.entry_size]
                if written == 1 and not data[:idx.entry_size].strip(b"\0"):
                    written = 0                 # an index with no entries: all of it is the tail
                elif tail.any():
                    errors.append(f"{path}: non-zero bytes after entry {written - 1}, in what should be the "
                                  f"zero-filled preallocated tail")
            if written == idx.entry_count:
                errors.extend(str(p) for p in idx.problems())
            found.entries = (np.stack([np.asarray(getattr(idx, c), np.int64)[:written] for c in columns], axis=1)
                             if written else np.zeros((0, 2), np.int64))
    except RmqlabError as e:
        errors.append(str(e))
        found.entries = None
        found.slots = -1
    return found


def rebuild_indexes(log_path: str | os.PathLike, out_dir: str | os.PathLike, *,
                    index_interval_bytes: int = INDEX_INTERVAL_BYTES, rolled: bool = True,
                    overwrite: bool = False, restarts=None, broker: str | None = None,
                    time_entry_offset: str | None = None) -> tuple[Path, Path]:
    """Write the ``.index`` and ``.timeindex`` the broker writes for the segment `log_path`
    into `out_dir` (named by the segment's base offset, trimmed to their entries as on a roll
    or clean close; ``rolled=False``: as an active segment, without the final time entry).

    Units: files. Cost: one walk of the batch headers plus O(entries) writes (and, with restart
    evidence beside the segment, the rule evaluations of :func:`choose_restarts`; in the
    ``record`` form, a decode of the batches that own time entries).

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = tempfile.mkdtemp()
    >>> log = write_segment(d, 0, [KafkaRecord(i, 1000 * i, None, bytes(900)) for i in range(20)])
    >>> index, timeindex = rebuild_indexes(log, tempfile.mkdtemp())
    >>> from rmqlab.kafka.index import read_offset_index
    >>> read_offset_index(index).tolist()
    [(5, 4850), (10, 9700), (15, 14550)]
    >>> index, _ = rebuild_indexes(log, tempfile.mkdtemp(), restarts=[8])
    >>> read_offset_index(index).tolist()
    [(5, 4850), (13, 12610), (18, 17460)]

    `restarts`: the offsets where the broker restarted (:func:`expected_entries`); None (the
    default) reads the evidence beside the segment (:func:`restart_candidates`): with index
    files there, the restarts their entries agree with (:func:`choose_restarts`, as verify);
    without, the restarts a producer-state snapshot proves (a clean shutdown). ``()``: none.
    `broker`: a release before 2.0 (e.g. "0.10.2") writes the entries by the rule of that era
    (:func:`rmqlab.kafka.legacy.legacy_expected_entries`: first offsets; no time index before
    0.10.1), as for a legacy segment; restarts are not modelled then. `time_entry_offset`: the
    offset a time entry names (:func:`expected_entries`), ``"last"`` (what ``LogSegment.recover``
    writes, and leaders since Kafka 3.8) or ``"record"`` (a leader before 3.8); None (the
    default) takes the form of the time index beside the segment: ``"record"`` when its entries
    name records holding their batch's maxTimestamp (and none the last offset where the forms
    differ), else ``"last"``. The ``.log`` is only read. Existing index files in `out_dir` are
    refused unless `overwrite`. Returns (index path, time index path). Raises FileExistsError,
    ValueError.
    """
    from rmqlab.kafka.index import (
        INDEX_SUFFIX,
        TIME_INDEX_SUFFIX,
        base_offset_of,
        build_offset_index,
        build_time_index,
        segment_file_name,
    )

    log_path = Path(log_path)
    base = base_offset_of(log_path)
    batches = segment_batches(log_path)
    if time_entry_offset is not None and time_entry_offset not in TIME_ENTRY_OFFSETS:
        raise ValueError(f"time_entry_offset must be one of {TIME_ENTRY_OFFSETS}, got {time_entry_offset!r}")
    if broker is not None and index_rule(broker).offset_entry == "first":
        offsets, times = legacy_expected_entries(batches, index_interval_bytes, broker=broker, rolled=rolled)
    else:
        on_disk = _time_entries_beside(log_path, base) if restarts is None or time_entry_offset is None else None
        if on_disk is not None and len(on_disk):
            batches = _with_max_timestamp_offsets(batches, log_path, _rows_to_decode(batches, on_disk))
        if restarts is None:
            restarts = _restarts_from_evidence(log_path, batches, base, index_interval_bytes, rolled)[0]
        if time_entry_offset is None:
            form = _entry_forms(batches, on_disk) if on_disk is not None else np.zeros(0, np.int64)
            time_entry_offset = "record" if (form == 1).any() and not (form == 0).any() else "last"
        offsets, times = expected_entries(batches, index_interval_bytes, rolled=rolled, restarts=restarts)
        if time_entry_offset == "record" and len(times):
            # the entries kept do not depend on the form: decode the batches that own one
            batches = _with_max_timestamp_offsets(batches, log_path, _owners(batches, times[:, 1]))
            offsets, times = expected_entries(batches, index_interval_bytes, rolled=rolled, restarts=restarts,
                                              time_entry_offset="record")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = out / segment_file_name(base, INDEX_SUFFIX)
    timeindex = out / segment_file_name(base, TIME_INDEX_SUFFIX)
    for p in (index, timeindex):
        if p.exists() and not overwrite:
            raise FileExistsError(f"{p} exists; pass overwrite=True to replace it")
        if p.exists() and p.resolve() == log_path.resolve():
            raise ValueError(f"{p} is the segment itself")
    build_offset_index(index, offsets, base, overwrite=overwrite)
    build_time_index(timeindex, times, base, overwrite=overwrite)
    return index, timeindex


def _time_entries_beside(log_path: Path, base: int) -> np.ndarray | None:
    """The time index entries beside the segment (absolute; None when absent or unreadable)."""
    from rmqlab.kafka.index import TIME_INDEX_SUFFIX, TimeIndex, segment_file_name

    ignored: list[str] = []
    return _read_index(log_path.with_name(segment_file_name(base, TIME_INDEX_SUFFIX)), TimeIndex, base,
                       ("timestamps", "offsets"), ignored).entries


def _restarts_from_evidence(log_path: Path, batches: pd.DataFrame, base: int, index_interval_bytes: int,
                            rolled: bool) -> tuple[list[int], dict[int, tuple[str, ...]]]:
    from rmqlab.kafka.index import INDEX_SUFFIX, TIME_INDEX_SUFFIX, OffsetIndex, TimeIndex, segment_file_name

    candidates, _ = restart_candidates(log_path, batches)
    if not candidates:
        return [], candidates
    ignored: list[str] = []
    off = _read_index(log_path.with_name(segment_file_name(base, INDEX_SUFFIX)), OffsetIndex, base,
                      ("offsets", "positions"), ignored)
    tim = _read_index(log_path.with_name(segment_file_name(base, TIME_INDEX_SUFFIX)), TimeIndex, base,
                      ("timestamps", "offsets"), ignored)
    if off.entries is None and tim.entries is None:
        return [o for o, ev in candidates.items() if _is_shutdown(ev)], candidates
    return choose_restarts(batches, off.entries, tim.entries, candidates, index_interval_bytes=index_interval_bytes,
                           rolled=rolled), candidates


@dataclass
class SegmentReport:
    """What :func:`verify_segment` found for one segment. ``ok``: every check passed (explained
    pre-3.8 time entries allowed). ``restarts``: where the broker restarted inside the segment,
    with the evidence; ``notes``: healthy states worth saying (absent or preallocated index
    files, restart evidence the entries do not show), never failures."""

    log: str
    base_offset: int | None = None
    batches: int = 0
    log_bytes: int = 0
    offset_entries: int | None = None
    time_entries: int | None = None
    expected_offset_entries: int | None = None
    expected_time_entries: int | None = None
    errors: list[str] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the segment was rolled or closed (its time index ends with the closing entry)
    closed: bool | None = None
    #: the offset the time entries on disk name, where the two forms differ: "last" (the batch's
    #: last offset), "record" (the first record holding the batch's maxTimestamp: a leader
    #: before Kafka 3.8), "mixed", or None (no entry tells them apart)
    time_entry_offset: str | None = None
    #: bytes in the .log (``log_bytes`` are the whole batches': the same when nothing is damaged)
    file_bytes: int = 0
    #: where reading stopped (a torn tail, a header that makes no sense), or None: a
    #: rmqlab.kafka.log.SegmentDamage; it is also the last of ``errors``
    damage: Any = None
    #: index entries written for bytes past the damage (not in offset_entries / time_entries)
    offset_entries_past_damage: int = 0
    time_entries_past_damage: int = 0

    @property
    def explained(self) -> list[Mismatch]:
        return [m for m in self.mismatches if m.kind == PRE_38_TIME_ENTRY]

    @property
    def ok(self) -> bool:
        return not self.errors and len(self.explained) == len(self.mismatches)

    def as_dict(self) -> dict[str, Any]:
        return {"log": self.log, "base_offset": self.base_offset, "ok": self.ok, "batches": self.batches,
                "log_bytes": self.log_bytes, "file_bytes": self.file_bytes,
                "damage": None if self.damage is None else self.damage.as_dict(),
                "offset_entries": self.offset_entries, "offset_entries_past_damage": self.offset_entries_past_damage,
                "time_entries_past_damage": self.time_entries_past_damage,
                "time_entries": self.time_entries, "expected_offset_entries": self.expected_offset_entries,
                "expected_time_entries": self.expected_time_entries, "closed": self.closed,
                "time_entry_offset": self.time_entry_offset,
                "restarts": [r.as_dict() for r in self.restarts], "notes": list(self.notes),
                "errors": list(self.errors), "mismatches": [m.as_dict() for m in self.mismatches]}

    def summary(self) -> str:
        """One line, like kafka-dump-log's per-file summary."""
        state = "ok" if self.ok else "FAILED"
        extra = f", {len(self.explained)} pre-3.8 time entries explained" if self.explained else ""
        extra += f", {len(self.restarts)} restart{'s' * (len(self.restarts) != 1)}" if self.restarts else ""
        bad = len(self.mismatches) - len(self.explained) + len(self.errors)
        def index(found: int | None) -> str:
            return "absent" if found is None else f"{found} entries"

        whole = f" whole of {self.file_bytes:,}" if self.file_bytes != self.log_bytes else ""
        return (f"{self.log}: {state}: {self.batches} batches, {self.log_bytes:,} bytes{whole}; offset index "
                f"{index(self.offset_entries)} (rule: {self.expected_offset_entries}), time index "
                f"{index(self.time_entries)} (rule: {self.expected_time_entries}){extra}"
                + (f"; {bad} problems" if bad else ""))


def _entries_text(entries: np.ndarray, what: str, limit: int = 3) -> str:
    """`entries` counted and, up to `limit`, shown: "1 time entry: (1725787379647, 1357)"."""
    n = len(entries)
    text = f"{n} {what}{'y' if n == 1 else 'ies'}"
    if n:
        text += ": " + ", ".join(str(tuple(map(int, e))) for e in entries[:limit]) + (", ..." if n > limit else "")
    return text


def verify_segment(log_path: str | os.PathLike, *, index_interval_bytes: int | None = None,
                   rolled: bool | None = None, restarts=None, infer: bool = True,
                   base_offset: int | None = None) -> SegmentReport:
    """Check one segment: every batch CRC, the records of compressed batches
    (:func:`~rmqlab.kafka.log.compressed_batch_problems`), the index files' own invariants
    (:meth:`OffsetIndex.problems` / :meth:`TimeIndex.problems`), and every entry against the
    broker's rule (:func:`compare`), restarts included.

    Units: a report. Cost: one walk of the batch headers, one read of each index, the rule
    evaluations of :func:`choose_restarts` when there is restart evidence, and the records of
    the batches whose time entry names a record inside them (a pre-3.8 leader's form; about
    1 µs a record) plus up to 64 others (:func:`max_timestamp_offsets`).

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> log = write_segment(tempfile.mkdtemp(), 0, [KafkaRecord(i, 1000 * i, None, bytes(900)) for i in range(9)])
    >>> verify_segment(log).notes[0][:60]
    'no index files: the broker rebuilds them when it loads the l'

    `rolled`: the segment was rolled or closed, so its time index ends with the closing entry;
    None (the default) decides: yes when a later segment is beside it, else (the active
    segment) yes when its index files are trimmed (a clean shutdown or roll trims them), no
    when they are preallocated with a zero-filled tail (the broker was running or crashed).
    `restarts`: the restart offsets; None (the default) takes them from the evidence beside the
    segment (:func:`restart_candidates`, applied where the entries agree:
    :func:`choose_restarts`) and, with `infer`, from the entries alone when one restart point
    explains every later entry (:func:`infer_restart`). Absent index files are notes, not
    failures: the broker rebuilds them on load. ``time_entry_offset`` in the report says which
    offset the time entries name where the forms differ ("record": a leader before Kafka 3.8;
    such entries are the explained ``pre-3.8 time entry`` mismatches). `base_offset`: the
    segment's, for a file whose name does not say it (the index files are looked for under
    that base offset's names beside it). `index_interval_bytes`: the topic's
    index.interval.bytes; None (the default) takes it from the offset entries
    (:func:`interval_from_entries`: 4096 unless the entries fit only another value, said in a
    note). Read-only.

    Damage. A torn tail or a batch header that makes no sense ends the walk
    (:class:`~rmqlab.kafka.log.SegmentDamage`): ``batches`` and ``log_bytes`` count the whole
    batches before it (``file_bytes`` the file), every check runs on them, and the damage is
    the report's ``damage`` and its last error, after the problems before it in file order
    (CRCs, compressed batches) and those of the index files. Index entries written for bytes
    past the damage are errors (:func:`_entries_past_damage`). Nothing raises for a bad file
    but an OSError.

    >>> data = log.read_bytes()
    >>> torn = log.with_name("00000000000000000100.log")
    >>> _ = torn.write_bytes(data[:-300])
    >>> r = verify_segment(torn)
    >>> r.ok, r.batches, r.log_bytes, r.file_bytes, r.damage.kind, r.errors[-1].startswith(str(r.damage))
    (False, 8, 7760, 8430, 'torn', True)
    """
    from rmqlab.kafka.index import base_offset_of
    from rmqlab.kafka.log import COMPRESSION_CODEC_MASK, compressed_batch_problems, read_batches

    log_path = Path(log_path)
    rep = SegmentReport(log=str(log_path))
    name_error = None
    try:
        rep.base_offset = base_offset_of(log_path) if base_offset is None else int(base_offset)
    except RmqlabError:
        # the broker would not load it (LogFileUtils.offsetFromFileName); its batches are read
        name_error = str(RmqlabError(
            f"file name {log_path.name!r} is not <base offset, 20 digits>.log, the name a broker gives a segment: "
            f"its index files cannot be found; pass base_offset=N to give the base offset",
            path=log_path, field="file name"))
    batches = read_batches(log_path, on_damage="report")
    walk = batches.attrs["report"]
    rep.batches, rep.log_bytes, rep.file_bytes, rep.damage = len(batches), walk.valid_bytes, walk.file_size, \
        walk.damage
    for row in batches.loc[~batches["crc_ok"], ["position", "crc"]].itertuples():
        rep.errors.append(f"{log_path}: offset {row.position}: crc: stored {row.crc:#010x} does not match the batch")
    if len(batches) and bool((batches["attributes"] & COMPRESSION_CODEC_MASK).any()):   # else no second walk
        rep.errors.extend(compressed_batch_problems(log_path))
    if name_error is not None:
        rep.errors.insert(0, name_error)
    elif walk.damage is None or walk.damage.kind != "corrupt" or len(batches):
        _check_indexes(rep, log_path, batches, index_interval_bytes, rolled, restarts, infer)
    if walk.damage is not None:
        rep.errors.append(_damage_text(walk.damage, len(batches)))
    return rep


def _damage_text(damage, whole: int) -> str:
    """The report's line for where reading stopped: the typed error's text, then what is whole
    and what the broker's recovery does there."""
    if damage.kind == "corrupt" and damage.position == 0:
        return str(damage)      # not a Kafka segment at all, most likely: nothing to add
    return (f"{damage}; the {whole} whole batch{'es' * (whole != 1)} before it ({damage.position:,} bytes) "
            f"are checked; LogSegment.recover (after an unclean shutdown) truncates the segment here, dropping "
            f"{damage.invalid_bytes:,} bytes")


def _check_indexes(rep: SegmentReport, log_path: Path, batches: pd.DataFrame, interval: int | None,
                   rolled: bool | None, restarts, infer: bool) -> None:
    from rmqlab.kafka.index import (
        INDEX_SUFFIX,
        LOG_SUFFIX,
        TIME_INDEX_SUFFIX,
        OffsetIndex,
        TimeIndex,
        segment_file_name,
    )

    base = rep.base_offset
    assert base is not None
    before = copy.deepcopy(rep) if rolled is None else None
    off = _read_index(log_path.with_name(segment_file_name(base, INDEX_SUFFIX)), OffsetIndex, base,
                      ("offsets", "positions"), rep.errors)
    tim = _read_index(log_path.with_name(segment_file_name(base, TIME_INDEX_SUFFIX)), TimeIndex, base,
                      ("timestamps", "offsets"), rep.errors)
    if off.slots < 0 or tim.slots < 0:
        return
    for found, column in ((off, "position"), (tim, "offset")):
        _entries_past_damage(rep, found, batches, column)
    if before is not None and off.entries is not None and (
            rep.offset_entries_past_damage or rep.time_entries_past_damage):
        # The index was written for more batches than are whole. Whether its entries for them
        # end with a closing time entry is not known: of the time entries written after the
        # last whole batch, at most one names an offset in it (the entries' timestamps rise,
        # and it names their maxTimestamp), as a close after them would. Both readings are
        # judged; the one the entries agree with better is kept (not closed when equal).
        trials = []
        for closed in (False, True):
            trial = copy.deepcopy(before)
            _check_indexes(trial, log_path, batches, interval, closed, restarts, infer)
            trials.append(trial)
        best = min(trials, key=lambda t: (_unexplained(t.mismatches), len(t.errors)))
        rep.__dict__.update(best.__dict__)
        return
    if interval is None:
        # the topic's index.interval.bytes not given: what the offset entries say, else the default
        found_at = off.entries[:, 1] if off.entries is not None else np.zeros(0, np.int64)
        def call_positions() -> np.ndarray | None:
            grouped = append_calls(batches, off.entries)
            return None if grouped is None else grouped["position"].to_numpy(np.int64)

        # where a restart may be: the entries after it follow another run's count
        evidence_at = sorted(restart_candidates(log_path, batches)[0]) if restarts is None else sorted(restarts)
        at = np.searchsorted(batches["base_offset"].to_numpy(np.int64), evidence_at)
        run_starts = [int(p) for p in batches["position"].to_numpy(np.int64)[at[(at > 0) & (at < len(batches))]]]
        interval, note = interval_from_entries(batches["position"].to_numpy(np.int64), found_at,
                                               call_positions=call_positions, run_starts=run_starts)
        if note:
            rep.notes.append(note)
    later = [p for p in log_path.parent.glob("*" + LOG_SUFFIX) if p.name > log_path.name]
    end_offset = int(batches["last_offset"].iloc[-1]) + 1 if len(batches) else base
    shutdown_snapshot = _snapshot_offsets(log_path.parent).get(end_offset) if not later else None
    if off.entries is None:
        # LogLoader.loadSegmentFiles: LogSegment.sanityCheck throws NoSuchFileException, and the
        # segment is recovered (LogSegment.recover): both indexes rebuilt from position 0 and
        # the closing time entry appended, whatever restarts there were
        want_off, want_time = expected_entries(batches, interval, rolled=True)
        rep.expected_offset_entries, rep.expected_time_entries = len(want_off), len(want_time)
        which = "no index files" if tim.entries is None else f"no {INDEX_SUFFIX} file"
        rep.notes.append(
            f"{which}: the broker rebuilds them when it loads the log (\"Could not find offset index file "
            f"corresponding to log file {log_path}, recovering segment and rebuilding index files...\", then "
            f"LogSegment.recover); the rule's entries would be {_entries_text(want_off, 'offset entr')} "
            f"and {_entries_text(want_time, 'time entr')}")
        return
    if rolled is None:
        rolled = bool(later) or not (off.untrimmed or tim.untrimmed)
    rep.closed = rolled
    if not later and (off.untrimmed or tim.untrimmed):
        rep.notes.append(
            f"active segment with preallocated index files ({off.slots} and {tim.slots} slots, entries "
            f"then a zero-filled tail): the broker was running or did not shut down cleanly; a clean "
            f"shutdown trims them and appends the closing time entry, so "
            + ("none is expected" if not rolled else "it is expected (as asked)"))
    elif not later and shutdown_snapshot:
        rep.notes.append(f"closed at shutdown: {shutdown_snapshot} is at the log end offset {end_offset}, and "
                         f"the index files are trimmed; the time index ends with the closing entry")
    if tim.entries is None:
        # LogSegment.sanityCheck(timeIndexFileNewlyCreated): a missing time index is created
        # empty and filled from the next append on, not rebuilt
        rep.notes.append(f"no {TIME_INDEX_SUFFIX} file: the broker creates it empty when it loads the segment "
                         f"and appends to it from then on (LogSegment.sanityCheck); only the offset index "
                         f"is checked")

    if tim.entries is not None and len(tim.entries):
        batches = _with_max_timestamp_offsets(batches, log_path, _rows_to_decode(batches, tim.entries))
    evidence: dict[int, tuple[str, ...]] = {}
    if restarts is None:
        evidence, notes = restart_candidates(log_path, batches)
        rep.notes.extend(notes)
        chosen = choose_restarts(batches, off.entries, tim.entries, evidence, index_interval_bytes=interval,
                                 rolled=rolled)
        for o, ev in evidence.items():
            if o not in chosen and _is_shutdown(ev):
                rep.notes.append(f"restart evidence at offset {o} ({', '.join(ev)}) that the index "
                                 f"entries do not show")
    else:
        chosen = sorted(int(r) for r in restarts)
        evidence = {o: ("given",) for o in chosen}
    if not _judge_entries(rep, batches, off, tim, interval, rolled, chosen, evidence):
        return
    # Restarts no file records are the last resort: a follower's or the cleaner's calls of
    # several batches (the call rule, tried first) are the broker's everyday writing.
    if restarts is None and infer and _unexplained(rep.mismatches) and tim.entries is not None:
        extra = inferred_restarts(batches, off.entries, tim.entries, chosen, index_interval_bytes=interval,
                                  rolled=rolled)
        if extra:
            for offset, alike in extra:
                evidence[offset] = ("no file says so (the broker keeps only its newest producer-state "
                                    "snapshots), but the offset entries count their bytes again from there, "
                                    "and with it every entry agrees"
                                    + (f" (as they would with a restart at offset {', '.join(map(str, alike))}: "
                                       f"the entries cannot tell which)" if alike else ""),)
            _judge_entries(rep, batches, off, tim, interval, rolled, sorted(chosen + [o for o, _ in extra]), evidence)
    if rep.mismatches and "magic" in batches and bool((batches["magic"] < 2).any()):
        _legacy_era_rule(rep, batches, off.entries, tim.entries, interval, rolled)
    if tim.entries is not None:
        _time_entry_form(rep, batches, tim.entries)


def _entries_past_damage(rep: SegmentReport, found: _IndexOnDisk, batches: pd.DataFrame, column: str) -> None:
    """Leave in `found` the entries written for the whole batches (before ``rep.damage``, or
    all of them when the log has none and ends on a batch boundary): an
    offset entry at a position before the damage, a time entry naming an offset up to the last
    whole batch's (entries are in order, so those are a prefix); the entries after them, written
    for bytes that are no longer whole, are one error. LogSegment.recover (Kafka 3.6, run by
    LogLoader.recoverLog for the segments past the recovery point after an unclean shutdown, and
    by loadSegmentFiles for a segment without its offset index) resets both indexes, truncates
    the log at the damage and rebuilds the entries from the whole batches: these would go.
    After a clean shutdown nothing is recovered (3.6's LogSegment.sanityCheck checks only the
    .txnindex), and they stay, pointing past the last batch a reader can frame."""
    if found.entries is None or not len(found.entries):
        return
    damage = rep.damage
    end = rep.log_bytes           # where the whole batches end: the damage, else the end of the file
    if column == "position":
        inside = found.entries[:, 1] < end
        where = f"at positions from byte {end:,}" + (", the damaged batch's," if damage is not None else
                                                     ", the end of the log,") + " on"
    else:
        last = int(batches["last_offset"].iloc[-1]) if len(batches) else None
        inside = found.entries[:, 1] <= (last if last is not None else np.iinfo(np.int64).min)
        where = (f"naming offsets past {last}, the last whole batch's last offset" if last is not None else
                 "naming offsets of batches that are not whole (none is)")
    keep = int(np.argmin(inside)) if not inside.all() else len(inside)
    past = found.entries[keep:]
    if not len(past):
        return
    if column == "position":
        rep.offset_entries_past_damage = len(past)
    else:
        rep.time_entries_past_damage = len(past)
    rep.errors.append(
        f"{found.path}: entry {keep} and after: {_entries_text(past, 'entr')} {where}: written for batches that are "
        + ("not whole; LogSegment.recover resets the index and rebuilds it from the whole batches, so they would "
           "go (after a clean shutdown the broker does not recover the segment and keeps them)" if damage is not None
           else "not in the log (cut on a batch boundary?); LogSegment.recover would rebuild the index without them"))
    found.entries = found.entries[:keep]


def _time_entry_form(rep: SegmentReport, batches: pd.DataFrame, times: np.ndarray) -> None:
    """Which offset the time entries on disk name, judged by the entries whose batch has a
    record form different from its last offset (every entry naming a record, up to
    :data:`_FORM_SAMPLE` of the others: :func:`_rows_to_decode`); a note when it is the pre-3.8
    leader's."""
    form = _entry_forms(batches, times)
    n_record, n_last = int((form == 1).sum()), int((form == 0).sum())
    if not n_record + n_last:
        return
    rep.time_entry_offset = "record" if not n_last else "last" if not n_record else "mixed"
    if n_record:
        rep.notes.append(
            f"{n_record} time entr{'y names' if n_record == 1 else 'ies name'} the first record holding "
            f"the batch's maxTimestamp, as a leader before Kafka 3.8 wrote {'it' if n_record == 1 else 'them'} "
            f"(LogValidator.assignOffsetsNonCompressed)"
            + ("; others name their batch's last offset where it differs (recovery, a follower, the "
               "cleaner), and rebuild_indexes writes recovery's form for such a mix" if n_last else
               "; rebuild_indexes writes that form when it finds it here"))


def _entry_forms(batches: pd.DataFrame, times: np.ndarray) -> np.ndarray:
    """Per time entry: 1 names its batch's record form, 0 its last offset where the record form
    differs, -1 neither or indistinguishable."""
    times = np.asarray(times, np.int64).reshape(-1, 2)
    form = np.full(len(times), -1, np.int64)
    if MAX_TIMESTAMP_OFFSET not in batches.columns or not len(times):
        return form
    j = _owners(batches, times[:, 1])
    known = j >= 0
    jj = np.where(known, j, 0)
    last = batches["last_offset"].to_numpy(np.int64)[jj]
    record = batches[MAX_TIMESTAMP_OFFSET].to_numpy(np.int64)[jj]
    ts = batches["max_timestamp"].to_numpy(np.int64)[jj]
    telling = known & (record >= 0) & (record != last) & (ts == times[:, 0])
    form[telling & (times[:, 1] == record)] = 1
    form[telling & (times[:, 1] == last)] = 0
    return form


#: the rules of the brokers that wrote legacy segments, newest first (rmqlab.kafka.legacy.index_rule):
#: the first offset of each entry with a time index (0.10.1 - 1.1), and without one (0.8 - 0.10.0)
_LEGACY_ERAS = (("1.1", "Kafka 0.10.1 to 1.1: each entry's first offset, with a time index"),
                ("0.9.0.1", "Kafka 0.8 to 0.10.0: each entry's first offset, no time index"))


def _judge_entries(rep: SegmentReport, batches: pd.DataFrame, off: _IndexOnDisk, tim: _IndexOnDisk, interval: int,
                   rolled: bool, restarts: list[int], evidence: dict[int, tuple[str, ...]]) -> bool:
    """The entries on disk against the rule with `restarts`, batch by batch and, where that
    leaves mismatches, call by call (:func:`append_calls`): the report's counts, restarts and
    mismatches. False (an error in the report) when a restart is not a batch boundary."""
    try:
        want_off, want_time = expected_entries(batches, interval, rolled=rolled, restarts=restarts)
    except ValueError as e:
        rep.errors.append(f"{rep.log}: {e}")
        return False
    rep.expected_offset_entries, rep.expected_time_entries = len(want_off), len(want_time)
    assert off.entries is not None          # an absent offset index was judged before
    rep.offset_entries = len(off.entries)
    rep.time_entries = None if tim.entries is None else len(tim.entries)
    rep.restarts = _describe_restarts(batches, restarts, evidence, index_interval_bytes=interval, rolled=rolled)
    rep.mismatches = compare(batches, off.entries, tim.entries, offset_file=str(off.path), time_file=str(tim.path),
                             index_interval_bytes=interval, rolled=rolled, restarts=restarts)
    if _unexplained(rep.mismatches):
        _append_call_rule(rep, batches, off, tim, interval, rolled, restarts)
    return True


def _append_call_rule(rep: SegmentReport, batches: pd.DataFrame, off: _IndexOnDisk, tim: _IndexOnDisk,
                      interval: int, rolled: bool, restarts) -> None:
    """When the entries are those of ``LogSegment.append`` calls of several batches
    (:func:`append_calls`): the mismatches of the batch-by-batch rule replaced by a note, the
    rule's entries counted per call."""
    calls = append_calls(batches, off.entries, restarts)
    if calls is None or len(calls) == len(batches):
        return
    found = compare(calls, off.entries, tim.entries, offset_file=str(off.path), time_file=str(tim.path),
                    index_interval_bytes=interval, rolled=rolled, restarts=restarts)
    if _unexplained(found):
        return
    # a call of several batches hands the last offset of the batch holding its maximum: that
    # is the rule, not the pre-3.8 leader's form
    several = calls[CALL_BATCHES].to_numpy() > 1
    owners = set(calls[MAX_TIMESTAMP_OFFSET].to_numpy()[several].tolist())
    found = [m for m in found if not (m.kind == PRE_38_TIME_ENTRY and m.found is not None and m.found[1] in owners)]
    want_off, want_time = expected_entries(calls, interval, rolled=rolled, restarts=restarts)
    merged = int(several.sum())
    rep.notes.append(
        f"the entries are those of {len(calls)} LogSegment.append calls, {merged} of them appending several "
        f"batches at once (a follower's fetch, the log cleaner's chunk of retained batches, or a producer's "
        f"magic v0/v1 message set): the broker makes at most one offset entry per call, at its first batch, so "
        f"{len(want_off)} offset entries where indexing each batch (as LogSegment.recover does) gives "
        f"{rep.expected_offset_entries}; the calls' boundaries are not on disk, and the entries are checked "
        f"against the calls they name")
    rep.expected_offset_entries, rep.expected_time_entries = len(want_off), len(want_time)
    rep.mismatches = found


def _legacy_era_rule(rep: SegmentReport, batches: pd.DataFrame, offsets: np.ndarray, times: np.ndarray | None,
                     interval: int, rolled: bool) -> None:
    """A segment with legacy (magic 0/1) entries whose index a broker before 2.0 wrote: the
    offset entries name each entry's first offset, not its last (LogSegment.scala up to 1.1).
    When one era's rule gives exactly the entries on disk, the mismatches of today's rule are
    replaced by a note naming that era; otherwise they stand."""
    for release, rule in _LEGACY_ERAS:
        want_off, want_time = legacy_expected_entries(batches, interval, broker=release, rolled=rolled)
        times_found = np.zeros((0, 2), np.int64) if times is None else times
        if np.array_equal(want_off, offsets) and np.array_equal(want_time, times_found):
            rep.notes.append(f"legacy entries indexed by the rule of {rule}: all {len(offsets)} offset and "
                             f"{len(times_found)} time entries agree (a broker since 2.0 indexes the last offset, "
                             f"and rebuilds these entries so when it recovers the segment)")
            rep.expected_offset_entries, rep.expected_time_entries = len(want_off), len(want_time)
            rep.mismatches = []
            return


def verify_partition(directory: str | os.PathLike, *, jobs: int | None = None,
                     **kwargs) -> tuple[list[SegmentReport], list]:
    """Every file of a partition directory: :func:`verify_directory`'s segment reports, and a
    :class:`~rmqlab.kafka.dirfiles.FileCheck` for each other file (producer-state snapshots,
    ``.txnindex``, checkpoints, KRaft snapshots, ``partition.metadata``, ``quorum-state``), with
    what the broker's next load does with them (:func:`rmqlab.kafka.loader.plan_checks`).

    Units: reports. Cost: :func:`verify_segment` per segment plus one read of each other file.
    `jobs`: the processes the segments are spread over (:func:`verify_segments`); the reports
    are the same with any `jobs`.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_segment(d, 0, [KafkaRecord(0, 5, None, b"v")])
    >>> _ = (d / "leader-epoch-checkpoint").write_text("0\\n1\\n0 0\\n")
    >>> segments, files = verify_partition(d)
    >>> [r.ok for r in segments], [(f.file.name, f.ok) for f in files]     # no .index: rebuilt on load
    ([True], [('00000000000000000000.log', True), ('leader-epoch-checkpoint', True)])
    """
    from rmqlab.kafka.dirfiles import check_partition_files
    from rmqlab.kafka.loader import plan_checks

    d = Path(directory)
    if not d.is_dir():
        raise NotADirectoryError(f"{d}: not a directory")
    reports = next(verify_segments([segment_logs(d)], jobs=jobs, **kwargs))
    # what the next load deletes, renames or re-indexes (LogLoader's rules) is a note, not a fault
    return reports, plan_checks(directory, check_partition_files(directory))


def segment_logs(directory: Path) -> list[Path]:
    """The ``*.log`` files of a partition folder, in base offset order (their names). Cost: one
    listing."""
    return sorted(directory.glob("*.log"))


def verify_segments(groups: list[list[Path]], *, jobs: int | None = None,
                    **kwargs) -> Generator[list[SegmentReport], None, None]:
    """:func:`verify_segment` of every segment of `groups` (lists of ``.log`` paths, a partition
    each): the reports of each group in turn, in order, as the workers finish them. `jobs`: the
    processes they are spread over, a segment a unit (:class:`~rmqlab.tables.pool.Pool`; a
    worker sends back the segment's report); None: :func:`~rmqlab.tables.pool.default_jobs` of
    the segments' ``.log`` bytes; 1: this process. The reports are the same with any `jobs`.

    Units: reports. Cost: :func:`verify_segment` per segment, plus a worker's start-up (about a
    second each, in parallel) when `jobs` > 1. Raises ValueError for `jobs` < 1.
    """
    from rmqlab.tables.pool import check_jobs, default_jobs

    check_jobs(jobs)
    logs = [p for group in groups for p in group]
    if jobs is None:
        jobs = default_jobs(len(logs), sum(p.stat().st_size for p in logs))
    return _segment_reports(groups, logs, jobs, kwargs)


def _segment_reports(groups: list[list[Path]], logs: list[Path], jobs: int,
                     kwargs: dict) -> Generator[list[SegmentReport], None, None]:
    """:func:`verify_segments`' reports, a group at a time, from a pool of `jobs`."""
    from rmqlab.tables.pool import Pool

    with Pool(jobs, "kafka verify", preload=("rmqlab.kafka.rebuild",)) as pool:
        done = pool.ordered(_verify_segment_unit, [(p, kwargs) for p in logs])
        try:
            for group in groups:
                yield [next(done) for _ in group]
        finally:
            done.close()


def _verify_segment_unit(log_path: Path, kwargs: dict) -> SegmentReport:
    """:func:`verify_segment` as a unit of work of a pool (its keywords as one argument)."""
    return verify_segment(log_path, **kwargs)


def verify_directory(directory: str | os.PathLike, **kwargs) -> list[SegmentReport]:
    """:func:`verify_segment` for every ``*.log`` in `directory` (a partition folder), in base
    offset order. Index files without their ``.log`` are not segments: the broker deletes them
    on load, and :func:`~rmqlab.kafka.dirfiles.check_partition_files` says so."""
    d = Path(directory)
    if not d.is_dir():
        raise NotADirectoryError(f"{d}: not a directory")
    return [verify_segment(p, **kwargs) for p in segment_logs(d)]
