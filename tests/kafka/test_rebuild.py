"""The broker's index-building rule (rmqlab.kafka.rebuild) against a literal, batch-by-batch
model of LogSegment.append/recover + TimeIndex.maybeAppend with restarts (close, then a fresh
LogSegment), and against real segments, the restarted one included."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data
from snapshot_support import snapshot

from rmqlab.kafka.index import read_offset_index, read_time_index
from rmqlab.kafka.log import KafkaRecord, write_segment
from rmqlab.kafka.partition import write_partition
from rmqlab.kafka.rebuild import (
    batch_table,
    choose_restarts,
    compare,
    expected_entries,
    infer_restart,
    rebuild_indexes,
    segment_batches,
    verify_directory,
    verify_partition,
    verify_segment,
)


def literal_rule(batches, interval=4096, rolled=True, restarts=(), time_offsets=None):
    """LogSegment.append/recover, one batch at a time, as the Java reads; at each restart,
    close() then a fresh LogSegment (counter 0, maximum loaded from the time index's last entry).
    `time_offsets`: per batch, the offset the append path hands LogSegment.append with the
    batch's maxTimestamp (default: the batch's last offset, as recover() and Kafka >= 3.8)."""
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

    for n, b in enumerate(batches.itertuples()):
        assert b.position == valid
        if n and b.base_offset in restarts:
            if max_off is not None:
                maybe_append(max_ts, max_off)                         # close() at shutdown
            max_ts, max_off = times[-1] if times else (-1, base_offset)   # lazily loaded after it
            last_entry = valid                                        # bytesSinceLastIndexEntry = 0
        if b.max_timestamp > max_ts:
            max_ts, max_off = b.max_timestamp, b.last_offset if time_offsets is None else time_offsets[n]
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
    # the record holding each batch's maximum: any of its offsets (-1: not decoded)
    holder = [draw(st.sampled_from([-1] + list(range(int(f), int(la) + 1)))) for f, la in zip(first, last)]
    return batch_table(positions=pos, sizes=sizes, base_offsets=first, last_offsets=last,
                       max_timestamps=np.asarray(ts) * 1000, max_timestamp_offsets=holder)


@settings(max_examples=300, deadline=None)
@given(segments(), st.sampled_from([0, 100, 4096, 20_000]), st.booleans(), st.data())
def test_expected_entries_follow_the_literal_rule(batches, interval, rolled, data):
    bases = batches["base_offset"].tolist()
    restarts = data.draw(st.lists(st.sampled_from(bases), unique=True, max_size=4)) if bases else []
    offsets, times = expected_entries(batches, interval, rolled=rolled, restarts=restarts)
    want_off, want_time = literal_rule(batches, interval, rolled, set(restarts))
    assert [tuple(r) for r in offsets.tolist()] == want_off
    assert [tuple(r) for r in times.tolist()] == want_time
    assert compare(batches, offsets, times, index_interval_bytes=interval, rolled=rolled, restarts=restarts) == []

    # a leader before 3.8: the record holding the maximum (where known), the same entries kept
    holder = batches["max_timestamp_offset"].to_numpy()
    record_offsets = np.where(holder >= 0, holder, batches["last_offset"].to_numpy())
    r_off, r_time = expected_entries(batches, interval, rolled=rolled, restarts=restarts, time_entry_offset="record")
    want_r_off, want_r_time = literal_rule(batches, interval, rolled, set(restarts), record_offsets.tolist())
    assert [tuple(r) for r in r_off.tolist()] == want_r_off == want_off
    assert [tuple(r) for r in r_time.tolist()] == want_r_time
    found = compare(batches, r_off, r_time, index_interval_bytes=interval, rolled=rolled, restarts=restarts)
    differs = [i for i, (a, b) in enumerate(zip(want_time, want_r_time)) if a != b]
    assert [(m.kind, m.entry) for m in found] == [("pre-3.8 time entry", i) for i in differs]
    if not restarts:
        return
    # the evidence finds them again wherever they change an entry, in either form
    for t in (times, r_time):
        chosen = choose_restarts(batches, offsets, t, restarts, index_interval_bytes=interval, rolled=rolled)
        assert all(m.kind == "pre-3.8 time entry" for m in
                   compare(batches, offsets, t, index_interval_bytes=interval, rolled=rolled, restarts=chosen))


def test_a_restart_must_be_a_batch_boundary():
    b = batch_table(positions=[0, 100], sizes=[100, 100], base_offsets=[0, 5], last_offsets=[4, 9],
                    max_timestamps=[1, 2])
    with pytest.raises(ValueError, match="restart offset 6"):
        expected_entries(b, restarts=[6])
    assert [e.tolist() for e in expected_entries(b, restarts=[0])] == [[], [[2, 9]]]   # a no-op


def test_a_pre_38_time_entry_is_explained_and_a_wrong_one_is_not():
    # batch 8..12 holds its maximum, 20, first at record 9 (LogValidator's offsetOfMaxBatchTimestamp)
    b = batch_table(positions=[0, 5000, 10000], sizes=[5000, 5000, 200], base_offsets=[0, 8, 13],
                    last_offsets=[7, 12, 13], max_timestamps=[10, 20, 15], max_timestamp_offsets=[7, 9, 13])
    offsets, times = expected_entries(b)
    assert times.tolist() == [[20, 12]]
    assert expected_entries(b, time_entry_offset="record")[1].tolist() == [[20, 9]]
    found = compare(b, offsets, [[20, 9]])
    assert [m.kind for m in found] == ["pre-3.8 time entry"] and "KAFKA-16310" in found[0].explanation
    assert "first record of batch 8..12" in found[0].explanation
    for other in (10, 11, 7):                     # another record of the batch, or outside it
        assert [m.kind for m in compare(b, offsets, [[20, other]])] == ["time entry"], other
    unknown = b.drop(columns="max_timestamp_offset")   # records not decoded: nothing explains it
    assert [m.kind for m in compare(unknown, offsets, [[20, 9]])] == ["time entry"]
    with pytest.raises(ValueError, match="max_timestamp_offset"):
        expected_entries(unknown, time_entry_offset="record")
    with pytest.raises(ValueError, match="time_entry_offset"):
        expected_entries(b, time_entry_offset="first")
    short = compare(b, offsets[:0], times)
    assert [m.kind for m in short] == ["offset entry count"]


# ------------------------------------------------------------- segments written here, restarted


def _varint(data: bytes, p: int) -> tuple[int, int]:
    """A zig-zag base-128 varint/varlong at `p`: (value, next position)."""
    shift = raw = 0
    while True:
        byte = data[p]
        p += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), p
        shift += 7


def _v2_batches(log: Path) -> list[dict]:
    """Every magic v2 batch straight from the header bytes (baseOffset @0, batchLength @8,
    partitionLeaderEpoch @12, attributes @21, lastOffsetDelta @23, baseTimestamp @27,
    maxTimestamp @35, producerId @43, recordsCount @57), without rmqlab's reader; for an uncompressed batch
    also its records' (offset, timestamp), from each record's length, attributes,
    timestampDelta and offsetDelta varints."""
    data, pos, out = log.read_bytes(), 0, []
    while pos < len(data):
        base, length, ple = struct.unpack_from(">qii", data, pos)
        if data[pos + 16] != 2:                   # a legacy v0/v1 entry: its offset, no records here
            out.append({"position": pos, "size": 12 + length, "base": base, "last": base, "ple": -1,
                        "attributes": None, "max_ts": None, "count": None, "records": None})
            pos += 12 + length
            continue
        (attributes, delta, base_ts, max_ts) = struct.unpack_from(">hiqq", data, pos + 21)
        (producer_id,) = struct.unpack_from(">q", data, pos + 43)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        records = None
        if attributes & 0x07 == 0:
            records, p = [], pos + 61
            for _ in range(count):
                size, p = _varint(data, p)
                ts_delta, q = _varint(data, p + 1)            # after the attributes byte
                off_delta, _ = _varint(data, q)
                records.append((base + off_delta, base_ts + ts_delta))
                p += size
        out.append({"position": pos, "size": 12 + length, "base": base, "last": base + delta, "ple": ple,
                    "attributes": attributes, "max_ts": max_ts, "count": count, "records": records,
                    "producer_id": producer_id})
        pos += 12 + length
    return out


def _holder(batch: dict) -> int | None:
    """The first record holding the batch's maxTimestamp (LogValidator before 3.8 put it in the
    time index for an uncompressed CreateTime batch); None for a compressed batch."""
    if batch["records"] is None:
        return None
    return next((o for o, t in batch["records"] if t == batch["max_ts"]), None)


def _walk_v2(log: Path):
    """Batch geometry from :func:`_v2_batches`, as a batch table."""
    rows = [(b["position"], b["size"], b["base"], b["last"], b["max_ts"]) for b in _v2_batches(log)]
    cols = list(zip(*rows)) if rows else [[]] * 5
    return batch_table(positions=cols[0], sizes=cols[1], base_offsets=cols[2], last_offsets=cols[3],
                       max_timestamps=cols[4])


def _write_index_files(log: Path, offsets, times, base: int) -> None:
    log.with_suffix(".index").write_bytes(b"".join(struct.pack(">ii", o - base, p) for o, p in offsets))
    log.with_suffix(".timeindex").write_bytes(b"".join(struct.pack(">qi", t, o - base) for t, o in times))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_a_restarted_segment_verifies_and_rebuilds_with_its_evidence(tmp_path_factory, data):
    """A segment written with rmqlab's writer, restarted at random batch boundaries: the
    entries by the literal model, snapshot files at the restarts as the broker leaves them, the
    time entries in either form (a leader before 3.8 names the record holding the maximum)."""
    d = tmp_path_factory.mktemp("p")
    n = data.draw(st.integers(1, 120))
    base = data.draw(st.integers(0, 10**6))
    sizes = data.draw(st.lists(st.integers(0, 700), min_size=n, max_size=n))
    steps = data.draw(st.lists(st.integers(-3, 10), min_size=n, max_size=n))
    per_batch = data.draw(st.sampled_from([1, 2, 3, 5]))
    form = data.draw(st.sampled_from(["last", "record"]))
    records = [KafkaRecord(base + i, 1_700_000_000_000 + 100 * int(np.cumsum(steps)[i]), None, bytes(sizes[i]))
               for i in range(n)]
    log = write_segment(d, base, records, records_per_batch=per_batch)
    batches = _walk_v2(log)
    holders = [_holder(b) for b in _v2_batches(log)]
    restarts = sorted(data.draw(st.sets(st.sampled_from(batches["base_offset"].tolist()[1:]), max_size=3))
                      if len(batches) > 1 else [])
    interval = data.draw(st.sampled_from([300, 1000, 4096]))
    offsets, times = literal_rule(batches, interval, True, set(restarts), holders if form == "record" else None)
    _, last_times = literal_rule(batches, interval, True, set(restarts))
    telling = [i for i, (a, b) in enumerate(zip(times, last_times)) if a != b]
    _write_index_files(log, offsets, times, base)
    for r in restarts:
        (d / f"{r:020d}.snapshot").write_bytes(b"")
    (d / f"{int(batches['last_offset'].iloc[-1]) + 1:020d}.snapshot").write_bytes(b"")   # the final shutdown

    report = verify_segment(log, index_interval_bytes=interval)
    assert report.ok, (report.summary(), report.mismatches)
    assert [r.offset for r in report.restarts] == restarts
    assert all(r.evidence[0].startswith(f"{r.offset:020d}.snapshot") for r in report.restarts)
    assert [m.entry for m in report.explained] == telling
    # which form verify says it saw: only entries whose batch's record differs from its last offset tell
    holder_of_last = dict(zip(batches["last_offset"].tolist(), holders))
    last_told = any(holder_of_last[o] != o for _, o in last_times)
    assert report.time_entry_offset == (("record" if telling else None) if form == "record"
                                        else ("last" if last_told else None))
    out = rebuild_indexes(log, d / "rebuilt", index_interval_bytes=interval)
    assert [p.read_bytes() for p in out] == [log.with_suffix(".index").read_bytes(),
                                            log.with_suffix(".timeindex").read_bytes()]
    out = rebuild_indexes(log, d / "given", index_interval_bytes=interval, restarts=restarts, time_entry_offset=form)
    assert [p.read_bytes() for p in out] == [log.with_suffix(".index").read_bytes(),
                                            log.with_suffix(".timeindex").read_bytes()]
    other = "last" if form == "record" else "record"
    out = rebuild_indexes(log, d / "other", index_interval_bytes=interval, restarts=restarts, time_entry_offset=other)
    assert out[0].read_bytes() == log.with_suffix(".index").read_bytes()
    want = last_times if other == "last" else literal_rule(batches, interval, True, set(restarts), holders)[1]
    assert read_time_index(out[1]).tolist() == want


def test_a_corrupted_entry_after_a_restart_still_fails(tmp_path):
    log = write_segment(tmp_path, 0, [KafkaRecord(i, 1000 * i, None, bytes(500)) for i in range(200)])
    batches = _walk_v2(log)
    offsets, times = literal_rule(batches, 4096, True, {90})
    offsets[-2] = (offsets[-2][0] + 1, offsets[-2][1])
    _write_index_files(log, offsets, times, 0)
    (tmp_path / f"{90:020d}.snapshot").write_bytes(b"")
    r = verify_segment(log)
    assert not r.ok and [m.entry for m in r.mismatches] == [len(offsets) - 2]
    assert [x.offset for x in r.restarts] == [90]


def test_a_preallocated_active_segment_is_healthy_and_has_no_closing_entry(tmp_path):
    recs = {"timestamp": [1000 + 10 * i for i in range(300)], "value": [b"z" * 200] * 300}
    write_partition(tmp_path, recs, segment_bytes=30_000, segment_index_bytes=4096, clean=False)
    reports = verify_directory(tmp_path)
    assert all(r.ok for r in reports), [r.summary() for r in reports if not r.ok]
    assert [r.closed for r in reports] == [True] * (len(reports) - 1) + [False]
    assert "preallocated" in reports[-1].notes[0]
    last = Path(reports[-1].log).with_suffix(".index")
    raw = bytearray(last.read_bytes())
    raw[-1] = 1                                   # not a zero-filled tail any more
    last.write_bytes(bytes(raw))
    assert any("zero-filled" in e for e in verify_segment(Path(reports[-1].log)).errors)


def test_absent_index_files_are_a_note_with_the_rule(tmp_path):
    log = write_segment(tmp_path, 7, [KafkaRecord(7 + i, 1000 * i, None, bytes(900)) for i in range(9)])
    r = verify_segment(log)
    assert r.ok and r.offset_entries is None and (r.expected_offset_entries, r.expected_time_entries) == (1, 2)
    assert r.notes[0].startswith("no index files: the broker rebuilds them") and "(5000, 12), (8000, 15)" in r.notes[0]
    rebuild_indexes(log, tmp_path)
    log.with_suffix(".timeindex").unlink()
    r = verify_segment(log)
    assert r.ok and "no .timeindex file" in r.notes[0] and r.offset_entries == 1


# ------------------------------------------------------------------------ real segments

REAL = REAL_DATA / "kafka"
# README: a clean restart at offset 913, with a producer-state snapshot and leader epoch 2 there
RESTART_DIR = "kraft-metadata-restart/__cluster_metadata-0"
RESTART = RESTART_DIR + "/00000000000000000000.log"


def real_segments():
    return sorted(p for p in require_real_data(REAL).rglob("*.log"))


def _raw_entries(path: Path, fmt: str, base: int, offset_first: bool) -> list[tuple[int, int]]:
    """An index file's entries by struct, absolute: (offset, position) or (timestamp, offset)."""
    data = path.read_bytes()
    size = struct.calcsize(fmt)
    rows = struct.iter_unpack(fmt, data[:len(data) // size * size])
    return [(base + a, b) for a, b in rows] if offset_first else [(a, base + b) for a, b in rows]


def _owner(batches: list[dict], offset: int) -> dict:
    """The batch holding `offset`."""
    (hit,) = [b for b in batches if b["base"] <= offset <= b["last"]]
    return hit


def _restart_evidence(log: Path, batches: list[dict]) -> tuple[set[int], set[int]]:
    """What the directory says about restarts inside the segment, read here without rmqlab:
    the offsets of producer-state snapshots strictly between the segment's base offset and its
    end (a broker writes one named by the log end offset when it stops cleanly), and the
    offsets inside it where a leader epoch starts (``leader-epoch-checkpoint``: a version line,
    a count line, then "epoch startOffset" lines; or the batches' partitionLeaderEpoch)."""
    base = int(log.name[:20])
    end = batches[-1]["last"] + 1 if batches else base
    snapshots = {int(p.name[:20]) for p in log.parent.glob("*.snapshot")
                 if len(p.name) == 29 and p.name[:20].isdigit() and base < int(p.name[:20]) < end}
    epochs = set()
    checkpoint = log.parent / "leader-epoch-checkpoint"
    if checkpoint.exists():
        lines = checkpoint.read_text().split("\n")
        epochs |= {int(line.split()[1]) for line in lines[2:2 + int(lines[1])]}
    epochs |= {b["base"] for a, b in zip(batches, batches[1:]) if a["ple"] != b["ple"]}
    return snapshots, {o for o in epochs if base < o < end}


@pytest.mark.realdata
def test_every_real_segment_rebuilds_to_its_own_index_files(tmp_path):
    """Every real segment with index files rebuilds to the broker's bytes, with the restarts the
    directory's evidence shows and the time entries' form read from the file beside it; and
    each time entry names, by the test's own reading of the records, its batch's last offset
    or the first record holding the batch's maxTimestamp, a rebuild in recovery's form moving
    exactly the second kind to the batch's last offset."""
    before = snapshot(REAL)
    rebuilt = record_form = 0
    for log in real_segments():
        rel = str(log.relative_to(REAL))
        index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
        if not index.exists():
            assert not timeindex.exists()
            continue
        out = tmp_path / rel.replace("/", "_")
        got_index, got_time = rebuild_indexes(log, out)
        assert got_index.read_bytes() == index.read_bytes(), rel
        assert got_time.read_bytes() == timeindex.read_bytes(), rel
        rebuilt += 1

        batches, base = _v2_batches(log), int(log.name[:20])
        on_disk = _raw_entries(timeindex, ">qi", base, offset_first=False)
        owners = [_owner(batches, o) for _, o in on_disk]
        for (t, o), b in zip(on_disk, owners):
            assert t == b["max_ts"] and o in (b["last"], _holder(b)), (rel, t, o)
        if any(o != b["last"] for (_, o), b in zip(on_disk, owners)):
            record_form += 1
            last_index, last_time = rebuild_indexes(log, out / "last", time_entry_offset="last")
            assert last_index.read_bytes() == index.read_bytes(), rel
            assert _raw_entries(last_time, ">qi", base, offset_first=False) == \
                [(t, b["last"]) for (t, _), b in zip(on_disk, owners)], rel
    assert rebuilt == sum(p.with_suffix(".index").exists() for p in real_segments()) > 0
    assert record_form > 0                    # the READMEs name such segments (connect-status-1, stock-market-*)
    assert snapshot(REAL) == before           # inputs only read


@pytest.mark.realdata
def test_the_readmes_time_entry_facts():
    """flink-on-prem/README: connect-status-1's only time entry is offset 6 in batch 6..7 (both
    records at that timestamp), where recovery and Kafka >= 3.8 write 7. kafka-3.6-compacted/
    README: every time entry of stock-market-batch-0 (29) and stock-market-realtime-0 (8)
    names the record holding its batch's maxTimestamp, with that timestamp."""
    status = require_real_data(REAL / "flink-on-prem" / "connect-status-1" / "00000000000000000000.log")
    (entry,) = _raw_entries(status.with_suffix(".timeindex"), ">qi", 0, offset_first=False)
    assert entry == (1713541794161, 6)
    batch = _owner(_v2_batches(status), 6)
    assert (batch["base"], batch["last"]) == (6, 7) and [t for _, t in batch["records"]] == [entry[0]] * 2
    r = verify_segment(status)
    assert r.ok and r.time_entry_offset == "record"
    assert [(m.kind, m.expected, m.found) for m in r.mismatches] == \
        [("pre-3.8 time entry", (1713541794161, 7), (1713541794161, 6))]
    for rel, n in (("stock-market-batch-0/00000000000000012910.log", 29),
                   ("stock-market-realtime-0/00000000000000003101.log", 8)):
        log = require_real_data(REAL / "kafka-3.6-compacted" / rel)
        batches, base = _v2_batches(log), int(log.name[:20])
        on_disk = _raw_entries(log.with_suffix(".timeindex"), ">qi", base, offset_first=False)
        assert len(on_disk) == n
        for t, o in on_disk:
            b = _owner(batches, o)
            assert t == b["max_ts"] and o == _holder(b) != b["last"], (rel, t, o)
        r = verify_segment(log)
        assert r.ok and r.time_entry_offset == "record" and len(r.explained) == n == len(r.mismatches)
        assert any(note.startswith(f"{n} time entries name the first record") for note in r.notes)


@pytest.mark.realdata
def test_the_real_restart_rebuilds_byte_for_byte_only_with_the_restart(tmp_path):
    log = require_real_data(REAL / RESTART)
    index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    for name, restarts in (("given", [913]), ("evidence", None)):
        got = rebuild_indexes(log, tmp_path / name, restarts=restarts)
        assert [p.read_bytes() for p in got] == [index.read_bytes(), timeindex.read_bytes()], name
    got_index, got_time = rebuild_indexes(log, tmp_path / "none", restarts=())
    want, got = read_offset_index(index), read_offset_index(got_index)
    at_913 = _owner(_v2_batches(log), 913)["position"]           # the test's own batch walk
    assert want[:15].tolist() == got[:15].tolist() and got[15].tolist() == (913, at_913) != want[15].tolist()
    assert (1725787026189, 912) in read_time_index(timeindex).tolist()
    assert (1725787026189, 912) not in read_time_index(got_time).tolist()


@pytest.mark.realdata
def test_the_kafka_36_directory_as_its_readme_states():
    """kafka-3.6-compacted/README (an independent reader's facts): cleaned __consumer_offsets
    segments whose first batch is far past the file's base offset, 0-byte .index files,
    group-metadata tombstones, multi-record batches indexed at their last offset; all of it
    verifies clean."""
    from rmqlab.kafka.log import read_records

    k36 = require_real_data(REAL / "kafka-3.6-compacted")
    everything = [b for log in k36.glob("*/*.log") for b in _v2_batches(log)]
    assert {(b["attributes"], b["ple"], b["producer_id"]) for b in everything} == {(0, 0, -1)}

    stock = k36 / "stock-market-batch-0" / "00000000000000012910.log"
    batches = _v2_batches(stock)
    assert (len(batches), sum(b["count"] for b in batches)) == (32, 3000)
    assert (min(b["count"] for b in batches), max(b["count"] for b in batches)) == (26, 100)
    assert (batches[0]["base"], batches[-1]["last"]) == (12910, 15909)
    assert read_records(stock)["key"].iloc[0] == b"AAPL"
    index = _raw_entries(stock.with_suffix(".index"), ">ii", 12910, offset_first=True)
    by_position = {b["position"]: b for b in batches}
    assert len(index) == 30 and all(by_position[p]["last"] == o for o, p in index)

    realtime = k36 / "stock-market-realtime-0" / "00000000000000003101.log"
    batches = _v2_batches(realtime)
    assert (len(batches), sum(b["count"] for b in batches)) == (31, 240)
    assert (batches[0]["base"], batches[-1]["last"]) == (3101, 3340)
    assert len(_raw_entries(realtime.with_suffix(".index"), ">ii", 3101, offset_first=True)) == 6

    co9 = k36 / "__consumer_offsets-9"
    assert [b["base"] for b in _v2_batches(co9 / "00000000000000000000.log")] == [9905, 9906]
    assert (co9 / "00000000000000000000.index").stat().st_size == 0
    assert _raw_entries(co9 / "00000000000000000000.timeindex", ">qi", 0, False) == [(1774915316094, 9906)]
    active = _v2_batches(co9 / "00000000000000009907.log")
    assert [b["base"] for b in active] == list(range(9907, 12881)) and {b["count"] for b in active} == {1}
    index = _raw_entries(co9 / "00000000000000009907.index", ">ii", 9907, offset_first=True)
    assert (len(index), index[0], index[-1]) == (109, (9907 + 26, 4203), (9907 + 2954, 455481))
    assert len(_raw_entries(co9 / "00000000000000009907.timeindex", ">qi", 9907, False)) == 111

    co32 = k36 / "__consumer_offsets-32"
    assert [o for b in _v2_batches(co32 / "00000000000000000000.log") for o, _ in b["records"]] == [190, 191]
    assert [o for b in _v2_batches(co32 / "00000000000000000192.log") for o, _ in b["records"]] == \
        list(range(192, 210))

    for n in (8, 16, 20, 22, 29, 31, 38):
        values = read_records(k36 / f"__consumer_offsets-{n}" / "00000000000000000000.log")["value"]
        assert sum(v is None for v in values) == (2 if n == 20 else 1), n

    for d in sorted(p for p in k36.iterdir() if p.is_dir()):
        reports = verify_directory(d)
        assert all(r.ok for r in reports), [r.summary() for r in reports if not r.ok]


@pytest.mark.realdata
def test_verify_passes_every_real_partition_and_names_each_restart():
    """Every real partition verifies; each restart reported is backed by evidence the test
    reads itself (a producer-state snapshot named at that offset strictly inside the segment,
    or a leader epoch starting there), and every such snapshot yields a reported restart: the
    broker stopped cleanly at that log end offset and went on appending after it."""
    reports = {str(Path(r.log).relative_to(REAL)): r for d in sorted({p.parent for p in real_segments()})
               for r in verify_directory(d)}
    assert set(reports) == {str(p.relative_to(REAL)) for p in real_segments()}
    restarts_seen = 0
    for rel, r in reports.items():
        assert r.ok, r.summary()
        log = REAL / rel
        batches = _v2_batches(log)
        if r.offset_entries is None:             # the README: the preallocated files were not kept
            assert r.notes[0].startswith("no index files: the broker rebuilds them when it loads the log")
            assert not r.restarts
            continue
        assert r.offset_entries == r.expected_offset_entries and r.time_entries == r.expected_time_entries
        # the only mismatches are explained: an entry naming the first record holding its batch's maximum
        for m in r.mismatches:
            assert m.kind == "pre-3.8 time entry", (rel, m)
            (wt, wo), (gt, go) = m.expected, m.found
            b = _owner(batches, wo)
            assert wt == gt == b["max_ts"] and wo == b["last"] and go == _holder(b) != wo, (rel, m)
        # which form verify says it saw, by the test's own reading
        forms = set()
        for _, o in _raw_entries(log.with_suffix(".timeindex"), ">qi", int(log.name[:20]), offset_first=False):
            b = _owner(batches, o)
            if _holder(b) not in (None, b["last"]):
                forms.add("record" if o == _holder(b) else "last")
        assert r.time_entry_offset == (None if not forms else forms.pop() if len(forms) == 1 else "mixed"), rel

        snapshots, epochs = _restart_evidence(log, batches)
        reported = [x.offset for x in r.restarts]
        assert snapshots <= set(reported), (rel, snapshots, reported)
        for x in r.restarts:
            assert x.offset in snapshots | epochs, (rel, x.describe())
            assert x.position == _owner(batches, x.offset)["position"] and x.offset == _owner(batches, x.offset)["base"]
            if x.offset in snapshots:
                assert x.evidence[0].startswith(f"{x.offset:020d}.snapshot (producer-state snapshot"), rel
        restarts_seen += len(r.restarts)
    assert restarts_seen > 0
    assert reports["LDI-POC/__consumer_offsets-6/00000000000000000000.log"].time_entries == 3
    # README: "The broker restarted at offset 913"; "`.index` (176 bytes, 22 entries)", "Index
    # entries 0..14 follow the one-entry-per-4096-bytes rule from the start" (so 7 after it);
    # "Time entry 15, (1725787026189, 912), was appended when the segment was closed"; the
    # position is the test's own batch walk's
    (restart,) = reports[RESTART].restarts
    at_913 = _owner(_v2_batches(REAL / RESTART), 913)["position"]
    assert (restart.offset, restart.position, restart.offset_entries_after) == (913, at_913, 22 - 15)
    assert restart.closing_time_entry == (15, (1725787026189, 912))
    assert restart.evidence[0].startswith("00000000000000000913.snapshot (producer-state snapshot")
    assert restart.evidence[1] == "leader epoch 2 starts at 913"
    assert f"restart at offset 913 (position {at_913}): 00000000000000000913.snapshot" in restart.describe()
    assert any("00000000000000001358.snapshot is at the log end offset 1358" in n for n in reports[RESTART].notes)


@pytest.mark.realdata
def test_the_real_restart_without_its_files(tmp_path):
    """Without the snapshot and the checkpoint, the batches' leader epochs still say where; the
    entries alone prove it too; a damaged entry after the restart still fails."""
    src = require_real_data(REAL / RESTART_DIR)
    d = tmp_path / "p"
    d.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(src / f"{0:020d}{suffix}", d)
    log = d / f"{0:020d}.log"
    r = verify_segment(log)
    assert r.ok and [x.offset for x in r.restarts] == [913]
    assert r.restarts[0].evidence == ("the batches' partitionLeaderEpoch goes from 1 to 2 there",)
    batches = segment_batches(log)
    on_disk = read_offset_index(log.with_suffix(".index")), read_time_index(log.with_suffix(".timeindex"))
    assert infer_restart(batches, *[np.array(x.tolist()) for x in on_disk]) == 913
    data = bytearray(log.with_suffix(".index").read_bytes())
    data[8 * 18 + 7] ^= 0x01                      # entry 18's position, lowest byte
    log.with_suffix(".index").write_bytes(bytes(data))
    r = verify_segment(log)
    assert not r.ok and [(m.kind, m.entry) for m in r.mismatches] == [("offset entry", 18)]
    assert [x.offset for x in r.restarts] == [913]


@pytest.mark.realdata
def test_verify_reports_a_damaged_index_entry_and_a_damaged_batch(tmp_path):
    src = require_real_data(REAL / "flink-on-prem" / "connect-offsets-14")
    shutil.copytree(src, tmp_path / "p")
    index = tmp_path / "p" / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    data[8 * 3 + 7] ^= 0x01                       # entry 3's position, lowest byte
    index.write_bytes(bytes(data))
    r = verify_segment(tmp_path / "p" / "00000000000000000000.log")
    assert not r.ok and [(m.kind, m.entry) for m in r.mismatches] == [("offset entry", 3)]
    log = tmp_path / "p" / "00000000000000000000.log"
    raw = bytearray(log.read_bytes())
    raw[185 + 100] ^= 0xFF                        # inside the second batch's records (it starts at 185)
    log.write_bytes(bytes(raw))
    r = verify_segment(log)
    assert any("crc" in e for e in r.errors) and not r.ok


@pytest.mark.realdata
def test_every_file_of_every_real_partition_verifies():
    """verify_partition over each real partition directory: the segments and every other file
    (producer-state snapshots, checkpoints, quorum state, KRaft snapshots) check out, each file
    beside the segments is one Kafka writes and gets its check."""
    dirs = sorted(d for d in require_real_data(REAL).glob("*/*") if d.is_dir())
    assert {p.parent for p in real_segments()} <= set(dirs)      # no partition with a segment is left out
    kinds = set()
    for d in dirs:
        segments, files = verify_partition(d)
        assert all(r.ok for r in segments), [r.summary() for r in segments if not r.ok]
        assert all(f.ok for f in files), [(f.file, f.problems) for f in files if not f.ok]
        # a segment's file is listed only for what the next load does with it (a missing .index: rebuilt)
        planned = [f for f in files if f.kind in ("log", "index", "timeindex")]
        assert all(any(n.startswith("on the next load:") for n in f.notes) for f in planned), d
        assert sorted(f.file.name for f in files if f not in planned) == sorted(
            p.name for p in d.iterdir() if p.is_file() and p.suffix not in (".log", ".index", ".timeindex")), d
        assert all(f.kind != "unknown" for f in files), [(f.file, f.summary) for f in files]
        assert {f.file.name for f in files if f.kind == "producer-snapshot"} == {p.name for p in d.glob("*.snapshot")}
        kinds |= {f.kind for f in files}
    assert {"producer-snapshot", "kraft-snapshot", "leader-epoch-checkpoint", "partition.metadata",
            "quorum-state"} <= kinds


def _random_segment(d, data, most: int, records_per_batch: list[int]):
    """A segment of 2 to `most` records of random sizes whose timestamps wander (steps back
    included), written with rmqlab's writer, and its batches."""
    n = data.draw(st.integers(2, most))
    sizes = data.draw(st.lists(st.integers(0, 900), min_size=n, max_size=n))
    steps = data.draw(st.lists(st.integers(-3, 10), min_size=n, max_size=n))
    records = [KafkaRecord(i, 1_700_000_000_000 + 100 * int(np.cumsum(steps)[i]), None, bytes(sizes[i]))
               for i in range(n)]
    log = write_segment(d, 0, records, records_per_batch=data.draw(st.sampled_from(records_per_batch)))
    return log, _walk_v2(log)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_restarts_no_file_records_are_found_by_the_entries(tmp_path_factory, data):
    """A segment restarted at random batch boundaries (entries by the literal model), with a
    producer-state snapshot left for only some of the restarts, as a broker that keeps only its
    newest snapshots leaves them: verify explains every entry with the restarts it names (the
    literal model, given them, writes exactly the entries on disk; where several sets of
    restarts give the same entries, any of them) or with append calls of several batches; a
    damaged offset entry still fails."""
    d = tmp_path_factory.mktemp("p")
    log, batches = _random_segment(d, data, 150, [1, 2, 3])
    bases = batches["base_offset"].tolist()
    restarts = sorted(data.draw(st.sets(st.sampled_from(bases[1:]), max_size=3)) if len(bases) > 1 else [])
    kept = sorted(data.draw(st.sets(st.sampled_from(restarts), max_size=len(restarts)))) if restarts else []
    interval = data.draw(st.sampled_from([300, 1000, 4096]))
    offsets, times = literal_rule(batches, interval, True, set(restarts))
    _write_index_files(log, offsets, times, 0)
    for r in kept:
        (d / f"{r:020d}.snapshot").write_bytes(b"")
    (d / f"{int(batches['last_offset'].iloc[-1]) + 1:020d}.snapshot").write_bytes(b"")

    report = verify_segment(log, index_interval_bytes=interval)
    assert report.ok, (restarts, kept, report.summary(), report.mismatches[:3])
    for r in report.restarts:
        if r.offset not in kept:
            assert r.evidence[0].startswith("no file says so"), r.evidence
    # with the restarts it names, the broker's rule gives exactly the entries on disk, or (a
    # restart looks like an append call of several batches: the counter starts afresh either
    # way) the calls it names do
    named = [r.offset for r in report.restarts]
    if not any("LogSegment.append calls" in note for note in report.notes):
        assert literal_rule(batches, interval, True, set(named)) == (offsets, times)
    if len(offsets) > 1:
        damaged = list(offsets)
        damaged[-1] = (damaged[-1][0], damaged[-1][1] + 1)
        _write_index_files(log, damaged, times, 0)
        assert not verify_segment(log, index_interval_bytes=interval).ok


def literal_call_rule(batches, interval, calls, rolled=True):
    """LogSegment.append as the Java reads, one *call* at a time: `calls` are (first, stop)
    batch numbers; a call appends its batches in one piece, indexes at most once, at its first
    position with its last offset, and hands its largest timestamp with the last offset of the
    batch holding it (shallowOffsetOfMaxTimestamp)."""
    offsets, times = [], []
    max_ts, max_off, since = -1, None, 0
    pos = batches["position"].tolist()
    size = batches["size"].tolist()
    last = batches["last_offset"].tolist()
    ts = batches["max_timestamp"].tolist()
    for a, z in calls:
        holder = max(range(a, z), key=lambda j: (ts[j], -j))
        if ts[holder] > max_ts:
            max_ts, max_off = ts[holder], last[holder]
        if since > interval:
            offsets.append((last[z - 1], pos[a]))
            if max_ts > (times[-1][0] if times else -1):
                times.append((max_ts, max_off))
            since = 0
        since += sum(size[a:z])
    if rolled and max_off is not None and max_ts > (times[-1][0] if times else -1):
        times.append((max_ts, max_off))
    return offsets, times


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_append_calls_of_several_batches_verify_and_damage_still_fails(tmp_path_factory, data):
    """A follower's fetches, the log cleaner's chunks and legacy message sets reach
    LogSegment.append as calls of several batches, indexed once per call: verify takes any
    grouping the literal per-call model writes, and still fails a damaged entry."""
    d = tmp_path_factory.mktemp("p")
    log, batches = _random_segment(d, data, 120, [1, 2])
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(batches) - 1)), max_size=len(batches) // 2)))
    bounds = [0] + [c for c in cuts if c < len(batches)] + [len(batches)]
    calls = list(zip(bounds[:-1], bounds[1:]))
    interval = data.draw(st.sampled_from([300, 1000, 4096]))
    offsets, times = literal_call_rule(batches, interval, calls)
    _write_index_files(log, offsets, times, 0)
    report = verify_segment(log, index_interval_bytes=interval)
    assert report.ok, (calls, report.summary(), report.mismatches[:3])
    if len(offsets) > 1:
        damaged = list(offsets)
        damaged[-1] = (damaged[-1][0], damaged[-1][1] + 1)              # not a batch's first byte
        _write_index_files(log, damaged, times, 0)
        assert not verify_segment(log, index_interval_bytes=interval).ok


@pytest.mark.parametrize("had_column", [False, True])
def test_filling_in_max_timestamp_offsets_leaves_the_callers_frame_as_it_was(had_column):
    """verify fills in the holders of some batches' maxTimestamp on a new frame that shares the
    other columns (no deep copy): the caller's frame, column set and values, must not change,
    whether it had the column (-1 where unknown) or not."""
    from rmqlab.kafka import rebuild
    from rmqlab.kafka.log import encode_batches, read_batches

    records = [KafkaRecord(i, 1000 + (i * 7) % 5, None, b"v") for i in range(12)]
    data = encode_batches(records, records_per_batch=4).data.tobytes()
    batches = read_batches(data)
    if had_column:
        batches[rebuild.MAX_TIMESTAMP_OFFSET] = np.full(len(batches), -1, np.int64)
    before = batches.copy(deep=True)
    out = rebuild._with_max_timestamp_offsets(batches, data, [0, 2])
    assert out is not batches
    assert batches.equals(before) and list(batches.columns) == list(before.columns)
    want = rebuild.max_timestamp_offsets(data, read_batches(data), [0, 2])
    assert out[rebuild.MAX_TIMESTAMP_OFFSET].tolist() == want.tolist()
    assert want[0] >= 0 and want[2] >= 0 and want[1] == -1
