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

On files: :func:`segment_batches` reads a ``.log``'s batch headers, :func:`rebuild_indexes`
writes the ``.index`` / ``.timeindex`` the broker would have written for it, and
:func:`verify_segment` / :func:`verify_directory` compare the index files on disk with the
rule, entry by entry, like ``kafka-dump-log --verify-index-only`` but reporting every
mismatch and explaining the pre-3.8 time entries.

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

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import RmqlabError

__all__ = ["INDEX_INTERVAL_BYTES", "batch_table", "expected_entries", "compare", "Mismatch",
           "segment_batches", "rebuild_indexes", "SegmentReport", "verify_segment", "verify_directory"]

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


# ------------------------------------------------------------------------------ on files


def segment_batches(log_path: str | os.PathLike) -> pd.DataFrame:
    """The batch headers of a ``.log`` segment (:func:`rmqlab.kafka.log.read_batches`,
    CRCs computed, a torn tail raises), in the columns :func:`expected_entries` needs plus the
    rest of the header. Read-only. Cost: one walk of the batch headers."""
    from rmqlab.kafka.log import read_batches

    return read_batches(log_path)


def rebuild_indexes(log_path: str | os.PathLike, out_dir: str | os.PathLike, *,
                    index_interval_bytes: int = INDEX_INTERVAL_BYTES, rolled: bool = True,
                    overwrite: bool = False) -> tuple[Path, Path]:
    """Write the ``.index`` and ``.timeindex`` the broker writes for the segment `log_path`
    into `out_dir` (named by the segment's base offset, trimmed to their entries as on a roll
    or clean close; ``rolled=False``: as an active segment, without the final time entry).
    The ``.log`` is only read. Existing index files in `out_dir` are refused unless
    `overwrite`. Returns (index path, time index path). Cost: one walk of the batch headers
    plus O(entries) writes.

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> d = tempfile.mkdtemp()
    >>> log = write_segment(d, 0, [KafkaRecord(i, 1000 * i, None, bytes(900)) for i in range(20)])
    >>> index, timeindex = rebuild_indexes(log, tempfile.mkdtemp())
    >>> from rmqlab.kafka.index import read_offset_index
    >>> read_offset_index(index).tolist()
    [(5, 4850), (10, 9700), (15, 14550)]
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
    offsets, times = expected_entries(segment_batches(log_path), index_interval_bytes, rolled=rolled)
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


@dataclass
class SegmentReport:
    """What :func:`verify_segment` found for one segment. ``ok``: every check passed (explained
    pre-3.8 time entries allowed)."""

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

    @property
    def explained(self) -> list[Mismatch]:
        return [m for m in self.mismatches if m.kind == "pre-3.8 time entry"]

    @property
    def ok(self) -> bool:
        return not self.errors and len(self.explained) == len(self.mismatches)

    def as_dict(self) -> dict[str, Any]:
        return {"log": self.log, "base_offset": self.base_offset, "ok": self.ok, "batches": self.batches,
                "log_bytes": self.log_bytes, "offset_entries": self.offset_entries,
                "time_entries": self.time_entries, "expected_offset_entries": self.expected_offset_entries,
                "expected_time_entries": self.expected_time_entries, "errors": list(self.errors),
                "mismatches": [m.as_dict() for m in self.mismatches]}

    def summary(self) -> str:
        """One line, like kafka-dump-log's per-file summary."""
        state = "ok" if self.ok else "FAILED"
        extra = f", {len(self.explained)} pre-3.8 time entries explained" if self.explained else ""
        bad = len(self.mismatches) - len(self.explained) + len(self.errors)
        return (f"{self.log}: {state}: {self.batches} batches, {self.log_bytes:,} bytes; offset index "
                f"{self.offset_entries} entries (rule: {self.expected_offset_entries}), time index "
                f"{self.time_entries} entries (rule: {self.expected_time_entries}){extra}"
                + (f"; {bad} problems" if bad else ""))


def verify_segment(log_path: str | os.PathLike, *, index_interval_bytes: int = INDEX_INTERVAL_BYTES,
                   rolled: bool = True) -> SegmentReport:
    """Check one segment: every batch CRC, the records of compressed batches
    (:func:`~rmqlab.kafka.log.compressed_batch_problems`), the index files' own invariants
    (:meth:`OffsetIndex.problems` / :meth:`TimeIndex.problems`), and every entry against the
    broker's rule (:func:`compare`). Missing index files, a torn tail or a bad file are errors
    in the report, not exceptions. Read-only. Cost: one walk of the batch headers and one read
    of each index."""
    from rmqlab.kafka.index import (
        INDEX_SUFFIX,
        TIME_INDEX_SUFFIX,
        OffsetIndex,
        TimeIndex,
        base_offset_of,
        segment_file_name,
    )

    log_path = Path(log_path)
    rep = SegmentReport(log=str(log_path))
    try:
        rep.base_offset = base_offset_of(log_path)
        batches = segment_batches(log_path)
    except RmqlabError as e:
        rep.errors.append(str(e))
        return rep
    rep.batches = len(batches)
    rep.log_bytes = int(log_path.stat().st_size)
    for row in batches.loc[~batches["crc_ok"], ["position", "crc"]].itertuples():
        rep.errors.append(f"{log_path}: offset {row.position}: crc: stored {row.crc:#010x} does not match the batch")
    from rmqlab.kafka.log import compressed_batch_problems
    rep.errors.extend(compressed_batch_problems(log_path))
    want_off, want_time = expected_entries(batches, index_interval_bytes, rolled=rolled)
    rep.expected_offset_entries, rep.expected_time_entries = len(want_off), len(want_time)
    index_path = log_path.with_name(segment_file_name(rep.base_offset, INDEX_SUFFIX))
    time_path = log_path.with_name(segment_file_name(rep.base_offset, TIME_INDEX_SUFFIX))
    found: dict[str, np.ndarray] = {}
    for path, cls, cols in ((index_path, OffsetIndex, ("offsets", "positions")),
                            (time_path, TimeIndex, ("timestamps", "offsets"))):
        if not path.exists():
            rep.errors.append(f"{path}: missing")
            continue
        try:
            with cls.open(path, rep.base_offset) as idx:
                rep.errors.extend(str(p) for p in idx.problems())
                found[path.suffix] = np.stack([np.asarray(getattr(idx, c), np.int64) for c in cols], axis=1) \
                    if idx.entry_count else np.zeros((0, 2), np.int64)
        except RmqlabError as e:
            rep.errors.append(str(e))
    if ".index" in found:
        rep.offset_entries = len(found[".index"])
    if ".timeindex" in found:
        rep.time_entries = len(found[".timeindex"])
    if len(found) == 2:
        rep.mismatches = compare(batches, found[".index"], found[".timeindex"], offset_file=str(index_path),
                                 time_file=str(time_path), index_interval_bytes=index_interval_bytes,
                                 rolled=rolled)
    return rep


def verify_directory(directory: str | os.PathLike, **kwargs) -> list[SegmentReport]:
    """:func:`verify_segment` for every ``*.log`` in `directory` (a partition folder), in base
    offset order; index files without their ``.log`` are reported too."""
    d = Path(directory)
    if not d.is_dir():
        raise NotADirectoryError(f"{d}: not a directory")
    logs = sorted(d.glob("*.log"))
    reports = [verify_segment(p, **kwargs) for p in logs]
    stems = {p.name[:-4] for p in logs}
    for p in sorted(list(d.glob("*.index")) + list(d.glob("*.timeindex"))):
        if p.name.split(".")[0] not in stems:
            orphan = SegmentReport(log=str(p.with_name(p.name.split(".")[0] + ".log")))
            orphan.errors.append(f"{p}: no .log segment beside it")
            reports.append(orphan)
    return reports
