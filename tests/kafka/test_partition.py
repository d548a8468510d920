"""rmqlab.kafka.partition against a literal, batch-by-batch model of the broker (UnifiedLog.maybeRoll
-> LogSegment.shouldRoll, LogSegment.append, onBecomeInactiveSegment / close), against the index
rule re-derived from the .log files as written, and against brute force over the records for the
three lookups."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import kafka_stdlib as ks
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import require_real_data

from rmqlab.kafka import index as kidx
from rmqlab.kafka.log import encode_batches, read_batches, read_records
from rmqlab.kafka.partition import (
    KafkaPartition,
    PartitionConfig,
    PartitionWriter,
    plan_segments,
    read_partition,
    write_partition,
)
from rmqlab.kafka.rebuild import expected_entries, verify_directory

INT_MAX = 2**31 - 1


# ------------------------------------------------------------------------------ the literal model


class _Seg:
    def __init__(self, base):
        self.base = base
        self.size = 0
        self.batches = []                 # (position, size, first, last, max_ts)
        self.offsets, self.times = [], []
        self.max_ts, self.max_off = -1, base     # TimestampOffset.UNKNOWN -> timeIndex.lastEntry() = (-1, base)
        self.bytes_since = 0
        self.rolling_ts = None

    def maybe_append(self, ts, off):
        last_ts = self.times[-1][0] if self.times else -1
        if ts > last_ts:
            self.times.append((ts, off))


def broker_model(batches, cfg: PartitionConfig, base_offset=0, clean=True):
    """One batch per produce request, as the Java reads: shouldRoll, roll, append."""
    max_off, max_time = cfg.segment_index_bytes // 8, cfg.segment_index_bytes // 12
    segs = [_Seg(base_offset)]
    reasons = [""]
    for size, first, last, ts in batches:
        seg = segs[-1]
        reached_ms = seg.size > 0 and seg.rolling_ts is not None and seg.rolling_ts >= 0 \
            and ts - seg.rolling_ts > cfg.segment_ms
        why = ("segment.bytes" if seg.size > cfg.segment_bytes - size else
               "segment.ms" if reached_ms else
               "offset index full" if len(seg.offsets) >= max_off else
               "time index full" if len(seg.times) >= max_time - 1 else
               "relative offset" if not 0 <= last - seg.base <= INT_MAX else None)
        if why is not None and not (seg.base == first and seg.size == 0):
            seg.maybe_append(seg.max_ts, seg.max_off)          # onBecomeInactiveSegment
            segs.append(_Seg(first))
            reasons.append(why)
            seg = segs[-1]
        physical = seg.size
        if physical == 0:
            seg.rolling_ts = ts
        if ts > seg.max_ts:
            seg.max_ts, seg.max_off = ts, last
        if seg.bytes_since > cfg.index_interval_bytes:
            seg.offsets.append((last, physical))
            seg.maybe_append(seg.max_ts, seg.max_off)
            seg.bytes_since = 0
        seg.bytes_since += size
        seg.size += size
        seg.batches.append((physical, size, first, last, ts))
    if clean:
        segs[-1].maybe_append(segs[-1].max_ts, segs[-1].max_off)
    return segs, reasons


def _batch_facts(records, records_per_batch=1, next_offset=0):
    enc = encode_batches(records, records_per_batch=records_per_batch, next_offset=next_offset)
    return list(zip(enc.size.tolist(), enc.base_offset.tolist(), enc.last_offset.tolist(),
                    enc.max_timestamp.tolist()))


def _on_disk(d: Path):
    """Per segment (by base offset): batches (position, size, first, last, max_ts), offset
    entries, time entries, file sizes."""
    out = {}
    for log in sorted(d.glob("*.log")):
        base = kidx.base_offset_of(log)
        b = read_batches(log, verify_crc=True)
        rows = list(zip(*(b[c].tolist() for c in ("position", "size", "base_offset", "last_offset",
                                                   "max_timestamp"))))
        idx = d / kidx.segment_file_name(base, ".index")
        tix = d / kidx.segment_file_name(base, ".timeindex")
        off = [tuple(x) for x in kidx.read_offset_index(idx, count="dump", strict=False).tolist()]
        tim = [tuple(x) for x in kidx.read_time_index(tix, count="dump", strict=False).tolist()]
        out[base] = dict(batches=rows, offsets=off, times=tim, log=log.stat().st_size,
                         index_size=idx.stat().st_size, timeindex_size=tix.stat().st_size, frame=b)
    return out


# ------------------------------------------------------------------------------ strategies


@st.composite
def partitions(draw):
    n = draw(st.integers(0, 40))
    values = draw(st.lists(st.one_of(st.integers(0, 300), st.integers(300, 2500)), min_size=n, max_size=n))
    keys = draw(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "hot", "zz"])), min_size=n, max_size=n))
    steps = draw(st.lists(st.integers(-3, 40), min_size=n, max_size=n))       # clocks that step back
    ts = (np.cumsum(steps) + 10_000).tolist() if n else []
    records = {"timestamp": ts, "key": keys, "value": [bytes([65 + i % 26]) * v for i, v in enumerate(values)]}
    rpb = draw(st.sampled_from([1, 1, 2, 3]))
    facts = _batch_facts(records, rpb)
    biggest = max((f[0] for f in facts), default=61)
    cfg = PartitionConfig(
        segment_bytes=biggest + draw(st.integers(0, 40_000)),
        segment_index_bytes=draw(st.sampled_from([12, 20, 24, 48, 100, 400, 10 << 20])),
        index_interval_bytes=draw(st.sampled_from([0, 100, 1024, 4096])),
        segment_ms=draw(st.sampled_from([50, 300, 10**9])))
    return records, rpb, cfg


def _write(d, records, rpb, cfg, **kw):
    return write_partition(d, records, segment_bytes=cfg.segment_bytes, segment_index_bytes=cfg.segment_index_bytes,
                           index_interval_bytes=cfg.index_interval_bytes, segment_ms=cfg.segment_ms,
                           records_per_batch=rpb, **kw)


# ------------------------------------------------------------------------------ writing


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitions())
def test_partition_equals_the_broker_model_and_the_rule_from_the_log(case):
    records, rpb, cfg = case
    model, reasons = broker_model(_batch_facts(records, rpb), cfg)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "t-0"
        with PartitionWriter(d, segment_bytes=cfg.segment_bytes, segment_index_bytes=cfg.segment_index_bytes,
                             index_interval_bytes=cfg.index_interval_bytes, segment_ms=cfg.segment_ms,
                             records_per_batch=rpb) as w:
            w.append(records)
        bases = w.base_offsets
        disk = _on_disk(d)
        assert bases == [s.base for s in model] == sorted(disk)
        for seg in model:
            got = disk[seg.base]
            assert got["log"] <= cfg.segment_bytes
            assert got["batches"] == seg.batches
            assert got["offsets"] == seg.offsets
            assert got["times"] == seg.times
            # trimmed to their entries (closed cleanly)
            assert got["index_size"] == 8 * len(seg.offsets) and got["timeindex_size"] == 12 * len(seg.times)
            # the rule re-derived from the .log as written gives the same entries
            want_off, want_time = expected_entries(got["frame"], cfg.index_interval_bytes, rolled=True)
            assert [tuple(x) for x in want_off.tolist()] == got["offsets"]
            assert [tuple(x) for x in want_time.tolist()] == got["times"]
        # the records read back are the records written, in order
        back = pd.concat([read_records(d / kidx.segment_file_name(b, ".log")) for b in bases], ignore_index=True)
        assert back["offset"].tolist() == list(range(len(records["value"])))
        assert back["timestamp"].tolist() == records["timestamp"]
        assert back["value"].tolist() == records["value"]
        assert [None if k is None else k.decode() for k in back["key"]] == records["key"]
        # the reasons the writer gives are the model's
        assert w.segments["reason"].tolist() == reasons


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitions(), st.integers(1, 6))
def test_appending_in_chunks_writes_the_same_bytes(case, pieces):
    records, rpb, cfg = case
    n = len(records["value"])
    cuts = sorted({0, n, *np.linspace(0, n, pieces + 1).astype(int).tolist()})
    chunks = iter([{k: v[a:b] for k, v in records.items()} for a, b in zip(cuts, cuts[1:])])
    with tempfile.TemporaryDirectory() as tmp:
        one, many = Path(tmp) / "one", Path(tmp) / "many"
        if rpb == 1:       # batches never straddle chunks only when every record is its own batch
            assert _write(one, records, rpb, cfg) == _write(many, chunks, rpb, cfg)
            files = sorted(p.name for p in one.iterdir())
            assert files == sorted(p.name for p in many.iterdir())
            for name in files:
                assert (one / name).read_bytes() == (many / name).read_bytes(), name


def test_roll_on_a_full_time_index():
    # 48 bytes: 6 offset slots, 4 time slots (3 + the one kept for the roll entry); interval 0
    # puts an entry on every batch but a segment's first, and rising times keep every one
    cfg = PartitionConfig(segment_index_bytes=48, index_interval_bytes=0)
    recs = {"timestamp": list(range(1000, 1010)), "value": [b"v"] * 10}
    with tempfile.TemporaryDirectory() as tmp:
        with PartitionWriter(tmp, segment_index_bytes=48, index_interval_bytes=0) as w:
            w.append(recs)
        assert w.base_offsets == [0, 4, 8]
        assert w.segments["reason"].tolist() == ["", "time index full", "time index full"]
        s = read_partition(tmp)
        # a rolled segment's time index holds 3 entries (full: the 4th slot is kept for the roll
        # entry, which adds nothing here: the segment's largest timestamp is already the last entry)
        assert s["timeindex_entries"].tolist() == [3, 3, 1] and s["index_entries"].tolist() == [3, 3, 1]
        assert s["timeindex_bytes"].tolist() == [36, 36, 12]
        assert [s.base for s in broker_model(_batch_facts(recs), cfg)[0]] == [0, 4, 8]


def test_roll_on_a_full_offset_index():
    # equal timestamps: the time index keeps one entry, so the offset index (6 slots) fills first
    recs = {"timestamp": [7] * 20, "value": [b"v"] * 20}
    with tempfile.TemporaryDirectory() as tmp:
        with PartitionWriter(tmp, segment_index_bytes=48, index_interval_bytes=0) as w:
            w.append(recs)
        assert w.base_offsets == [0, 7, 14]
        assert w.segments["reason"].tolist() == ["", "offset index full", "offset index full"]
        s = read_partition(tmp)
        assert s["index_bytes"].tolist()[:2] == [48, 48] and s["timeindex_entries"].tolist()[:2] == [1, 1]


def test_roll_on_relative_offset_overflow_and_not_before():
    recs = {"offset": [0, 1, INT_MAX, INT_MAX + 2, INT_MAX + 3], "timestamp": [1, 2, 3, 4, 5], "value": [b"v"] * 5}
    with tempfile.TemporaryDirectory() as tmp:
        with PartitionWriter(tmp) as w:
            w.append(recs)
        # INT_MAX - 0 still fits; INT_MAX + 2 does not: the new segment starts at that batch
        assert w.base_offsets == [0, INT_MAX + 2]
        assert w.segments["reason"].tolist() == ["", "relative offset"]
        with KafkaPartition(tmp) as p:
            assert p.lookup_offset(INT_MAX).batch_last_offset == INT_MAX
            assert p.lookup_offset(INT_MAX + 1).batch_last_offset == INT_MAX + 2      # a gap: the next batch
            assert p.lookup_offset(INT_MAX + 3).segment == INT_MAX + 2


def test_roll_on_segment_ms():
    recs = {"timestamp": [0, 1000, 2001, 2500, 4001], "value": [b"v"] * 5}
    with tempfile.TemporaryDirectory() as tmp:
        with PartitionWriter(tmp, segment_ms=2000) as w:
            w.append(recs)
        assert w.base_offsets == [0, 2]
        assert w.segments["reason"].tolist() == ["", "segment.ms"]


def test_the_rebuild_verifier_accepts_every_segment():
    """Another implementation's check (rmqlab.kafka.rebuild.verify_directory: CRCs, index invariants,
    every entry against the rule) on partitions rolled by each reason."""
    cases = [dict(segment_bytes=20_000), dict(segment_index_bytes=48, index_interval_bytes=300),
             dict(segment_index_bytes=400, index_interval_bytes=0), dict(segment_ms=3000)]
    recs = {"timestamp": [1000 + 37 * i - 50 * (i % 7 == 0) for i in range(400)],
            "key": [f"k{i % 13}" for i in range(400)], "value": [b"q" * (i * 13 % 400) for i in range(400)]}
    for kw in cases:
        with tempfile.TemporaryDirectory() as tmp:
            bases = write_partition(tmp, recs, **kw)
            assert len(bases) > 2, kw
            reports = verify_directory(tmp, index_interval_bytes=kw.get("index_interval_bytes", 4096))
            assert [r.base_offset for r in reports] == bases
            assert all(r.ok for r in reports), [r.summary() for r in reports if not r.ok]


def test_plan_segments_matches_the_writer():
    recs = {"timestamp": list(range(200)), "value": [b"x" * (37 * i % 500) for i in range(200)]}
    cfg = PartitionConfig(segment_bytes=9000, segment_index_bytes=60, index_interval_bytes=700)
    with tempfile.TemporaryDirectory() as tmp:
        bases = _write(tmp, recs, 1, cfg)
        batches = pd.concat([read_batches(Path(tmp) / kidx.segment_file_name(b, ".log")) for b in bases])
    spans = plan_segments(batches, cfg)
    assert [s.base_offset for s in spans] == bases
    assert {s.reason for s in spans[1:]} <= {"segment.bytes", "offset index full", "time index full"}


def test_crashed_close_leaves_the_active_segment_untrimmed():
    recs = {"timestamp": [1000 + 10 * i for i in range(300)], "value": [b"z" * 200] * 300}
    with tempfile.TemporaryDirectory() as tmp:
        bases = write_partition(tmp, recs, segment_bytes=30_000, segment_index_bytes=4096, clean=False)
        s = read_partition(tmp)
        assert s["trimmed"].tolist() == [True] * (len(bases) - 1) + [False]
        assert s["index_bytes"].iloc[-1] == 4096 and s["timeindex_bytes"].iloc[-1] == 4092
        last = Path(tmp) / kidx.segment_file_name(bases[-1], ".log")
        off, tim = expected_entries(read_batches(last), rolled=False)
        disk = _on_disk(Path(tmp))[bases[-1]]
        assert disk["offsets"] == [tuple(x) for x in off.tolist()]
        assert disk["times"] == [tuple(x) for x in tim.tolist()]       # no final time entry
        # the rolled ones are as the broker rolled them
        assert all(r.ok for r in verify_directory(tmp)[:-1])


def test_refusals():
    with tempfile.TemporaryDirectory() as tmp:
        with pytest.raises(ValueError, match="RecordBatchTooLargeException"):
            write_partition(Path(tmp) / "a", {"timestamp": [1], "value": [b"x" * 500]}, segment_bytes=300)
        write_partition(Path(tmp) / "b", {"timestamp": [1], "value": [b"x"]})
        with pytest.raises(FileExistsError):
            write_partition(Path(tmp) / "b", {"timestamp": [1], "value": [b"x"]})
        with pytest.raises(ValueError, match="segment_index_bytes"):
            PartitionConfig(segment_index_bytes=8)
        with pytest.raises(FileNotFoundError, match="no such partition folder"):
            KafkaPartition(Path(tmp) / "missing")


def test_absent_index_files_are_rebuilt_as_the_broker_loads_them(tmp_path):
    """No .index: the segment is recovered, both indexes rebuilt (in a scratch folder, not
    beside the input); no .timeindex alone: it starts empty. The answers equal those with the
    files, and the folder is left as it was."""
    recs = {"timestamp": list(range(0, 3000, 10)), "key": [f"k{i % 7}" for i in range(300)],
            "value": [b"w" * 300] * 300}
    write_partition(tmp_path / "full", recs)
    probes = ((555, 40), (2990, 299))
    with KafkaPartition(tmp_path / "full") as p:
        want = [(p.offsets_for_time(t).offset, p.lookup_offset(o).batch_position) for t, o in probes]
        assert p.rebuilt_indexes == []
    for missing in (".index", ".timeindex"):
        d = tmp_path / missing.strip(".")
        write_partition(d, recs)
        os.remove(d / kidx.segment_file_name(0, missing))
        before = sorted(x.name for x in d.iterdir())
        with KafkaPartition(d) as p:
            assert [x.name for x in p.rebuilt_indexes] == [kidx.segment_file_name(0, ".log")]
            got = [(p.offsets_for_time(t).offset, p.lookup_offset(o).batch_position) for t, o in probes]
            scratch = p.offset_index(0).path.parent if missing == ".index" else p.time_index(0).path.parent
            assert scratch != d and scratch.is_dir()
        assert got == want or missing == ".timeindex"   # an empty time index finds by scanning from the start
        assert [g[1] for g in got] == [w[1] for w in want]
        assert sorted(x.name for x in d.iterdir()) == before and not scratch.exists()


@pytest.mark.realdata
def test_real_partitions_without_index_files_read_every_record():
    # the READMEs: lsx1-0's "`.index` / `.timeindex` are not here", kafka-2.7.1's active
    # segment's "10 MiB preallocated indexes are missing"; the record counts: the
    # standard-library reader of every .log of the partition (gzip batches decompressed)
    for rel in ("idempotent-gzip/lsx1-0", "kafka-2.7.1/__consumer_offsets-17"):
        folder = require_real_data(f"kafka/{rel}")
        records = sum(len(ks.read_records(log)) for log in folder.glob("*.log"))
        assert records > 2
        with KafkaPartition(folder) as p:
            assert len(p.keys()) == records and len(p.rebuilt_indexes) == 1


def test_bad_files_raise_typed_errors():
    from rmqlab.errors import CorruptIndexError, FormatError

    recs = {"timestamp": list(range(100)), "value": [b"w" * 300] * 100}
    with tempfile.TemporaryDirectory() as tmp:
        write_partition(tmp, recs)
        index = Path(tmp) / kidx.segment_file_name(0, ".index")
        entries = kidx.read_offset_index(index)
        entries["position"][1] += 1            # entry 1 now points inside a batch
        kidx.build_offset_index(index, entries, 0, overwrite=True)
        with KafkaPartition(tmp) as p:
            t = int(entries["offset"][1]) + 1
            with pytest.raises(CorruptIndexError) as e:
                p.lookup_offset(t)
            assert (e.value.path, e.value.offset, e.value.field) == (str(index), 12, "entry[1].position")
            assert p.lookup_offset(int(entries["offset"][0])).found      # the sound entry still works
        (Path(tmp) / "not-a-segment.log").write_bytes(b"")
        with pytest.raises(FormatError, match="file name"):
            KafkaPartition(tmp)


def test_an_empty_partition_has_one_empty_segment():
    with tempfile.TemporaryDirectory() as tmp:
        assert write_partition(tmp, {"timestamp": [], "value": []}) == [0]
        s = read_partition(tmp)
        assert s[["log_bytes", "batches", "index_bytes", "timeindex_bytes"]].values.tolist() == [[0, 0, 0, 0]]
        with KafkaPartition(tmp) as p:
            assert not p.lookup_offset(0).found and not p.offsets_for_time(0).found


# ------------------------------------------------------------------------------ lookups


@st.composite
def partitions_and_targets(draw):
    records, rpb, cfg = draw(partitions())
    n = len(records["value"])
    offsets = draw(st.lists(st.integers(-2, n + 2), min_size=1, max_size=8))
    times = draw(st.lists(st.integers(9_900, 10_000 + 40 * max(n, 1)), min_size=1, max_size=8))
    return records, rpb, cfg, offsets, times


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitions_and_targets())
def test_lookups_against_brute_force(case):
    records, rpb, cfg, targets, times = case
    with tempfile.TemporaryDirectory() as tmp:
        bases = _write(tmp, records, rpb, cfg)
        disk = _on_disk(Path(tmp))
        all_batches = [(b, row) for b in bases for row in disk[b]["batches"]]
        n = len(records["value"])
        with KafkaPartition(tmp) as p:
            for t in targets:
                # the offset index alone: the entry with the largest offset <= t, the next > t,
                # and its position is where a batch ending at that offset starts
                seg = max((b for b in bases if b <= t), default=None)
                if seg is not None:
                    entries = disk[seg]["offsets"]
                    below = [e for e in entries if e[0] <= t]
                    want = below[-1] if below else (seg, 0)
                    with kidx.OffsetIndex.open(Path(tmp) / kidx.segment_file_name(seg, ".index")) as idx:
                        got = idx.lookup(t)
                    assert tuple(got) == want
                    later = [e for e in entries if e[0] > want[0]]
                    assert not later or later[0][0] > t
                    starts = {row[0]: row for row in disk[seg]["batches"]}
                    if below:
                        assert starts[want[1]][3] == want[0] <= t
                # the whole fetch path: the batch holding t (or the next one after a gap)
                res = p.lookup_offset(t)
                holding = [(b, row) for b, row in all_batches if row[3] >= t and b <= max(t, 0)]
                if 0 <= t < n:
                    assert res.found
                    b, row = next((b, row) for b, row in all_batches if row[2] <= t <= row[3])
                    assert (res.segment, res.batch_position, res.batch_base_offset, res.batch_last_offset) == \
                        (b, row[0], row[2], row[3])
                    assert res.log_bytes == row[0] + row[1] - res.position >= row[1]
                    assert res.index_entries_read == res.index_trace.entries_read
                    assert (res.index_entries_read >= 1) == bool(disk[b]["offsets"])
                else:
                    assert not res.found, (t, holding)
            # ListOffsets by timestamp: the first record (in offset order) with timestamp >= t
            ts = np.asarray(records["timestamp"], np.int64)
            for t in times:
                res = p.offsets_for_time(t)
                hit = np.flatnonzero(ts >= t)
                if len(hit):
                    assert res.found and (res.offset, res.timestamp) == (int(hit[0]), int(ts[hit[0]]))
                else:
                    assert not res.found and res.offset == -1
            # by key: a scan of every segment finds exactly the records with that key
            for key in ("hot", "absent"):
                got = p.scan_key(key)
                want = [i for i, k in enumerate(records["key"]) if k == key]
                assert got["offset"].tolist() == want
                assert got.attrs["log_bytes"] == sum(disk[b]["log"] for b in bases)
                keys = p.keys()
                assert keys.loc[keys["key"] == key.encode(), "offset"].tolist() == want


def test_lookup_costs_on_a_default_segment():
    """With 4096-byte index spacing a fetch reads a handful of index entries and walks at most
    the batches in 4 KiB (plus the one crossing the mark)."""
    recs = {"timestamp": list(range(20_000)), "value": [b"p" * (150 + i % 200) for i in range(20_000)]}
    with tempfile.TemporaryDirectory() as tmp:
        write_partition(tmp, recs)
        with KafkaPartition(tmp) as p:
            b = p.batches(0)
            sizes = b["size"].to_numpy()
            for t in range(0, 20_000, 997):
                r = p.lookup_offset(t)
                assert r.found and r.batch_last_offset == t
                assert r.log_bytes <= 4096 + 2 * sizes.max()
                assert r.index_entries_read <= 2 + int(np.ceil(np.log2(p.offset_index(0).entry_count))) + 1
                tl = p.offsets_for_time(t)
                assert tl.offset == t and tl.log_bytes <= 4096 + 2 * sizes.max()
