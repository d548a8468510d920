"""The broker's index-building rule (rmqlab.kafka.rebuild) against a literal, batch-by-batch
model of LogSegment.append/recover + TimeIndex.maybeAppend with restarts (close, then a fresh
LogSegment), and against real segments, the restarted one included."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import REAL_DATA, require_real_data
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshot_support import snapshot

from rmqlab.kafka.index import TIME_ENTRY, read_offset_index, read_time_index
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


def literal_rule(batches, interval=4096, rolled=True, restarts=()):
    """LogSegment.append/recover, one batch at a time, as the Java reads; at each restart,
    close() then a fresh LogSegment (counter 0, maximum loaded from the time index's last entry)."""
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
@given(segments(), st.sampled_from([0, 100, 4096, 20_000]), st.booleans(), st.data())
def test_expected_entries_follow_the_literal_rule(batches, interval, rolled, data):
    bases = batches["base_offset"].tolist()
    restarts = data.draw(st.lists(st.sampled_from(bases), unique=True, max_size=4)) if bases else []
    offsets, times = expected_entries(batches, interval, rolled=rolled, restarts=restarts)
    want_off, want_time = literal_rule(batches, interval, rolled, set(restarts))
    assert [tuple(r) for r in offsets.tolist()] == want_off
    assert [tuple(r) for r in times.tolist()] == want_time
    assert compare(batches, offsets, times, index_interval_bytes=interval, rolled=rolled, restarts=restarts) == []
    if not restarts:
        return
    # the evidence finds them again wherever they change an entry
    chosen = choose_restarts(batches, offsets, times, restarts, index_interval_bytes=interval, rolled=rolled)
    assert compare(batches, offsets, times, index_interval_bytes=interval, rolled=rolled, restarts=chosen) == []


def test_a_restart_must_be_a_batch_boundary():
    b = batch_table(positions=[0, 100], sizes=[100, 100], base_offsets=[0, 5], last_offsets=[4, 9],
                    max_timestamps=[1, 2])
    with pytest.raises(ValueError, match="restart offset 6"):
        expected_entries(b, restarts=[6])
    assert [e.tolist() for e in expected_entries(b, restarts=[0])] == [[], [[2, 9]]]   # a no-op


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


# ------------------------------------------------------------- segments written here, restarted


def _walk_v2(log: Path):
    """Batch geometry straight from the magic v2 header bytes (baseOffset @0, batchLength @8,
    lastOffsetDelta @23, maxTimestamp @35), without rmqlab's reader."""
    data, pos, rows = log.read_bytes(), 0, []
    while pos < len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        (max_ts,) = struct.unpack_from(">q", data, pos + 35)
        rows.append((pos, 12 + length, base, base + delta, max_ts))
        pos += 12 + length
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
    entries by the literal model, snapshot files at the restarts as the broker leaves them."""
    d = tmp_path_factory.mktemp("p")
    n = data.draw(st.integers(1, 120))
    base = data.draw(st.integers(0, 10**6))
    sizes = data.draw(st.lists(st.integers(0, 700), min_size=n, max_size=n))
    steps = data.draw(st.lists(st.integers(-3, 10), min_size=n, max_size=n))
    per_batch = data.draw(st.sampled_from([1, 2, 3]))
    records = [KafkaRecord(base + i, 1_700_000_000_000 + 100 * int(np.cumsum(steps)[i]), None, bytes(sizes[i]))
               for i in range(n)]
    log = write_segment(d, base, records, records_per_batch=per_batch)
    batches = _walk_v2(log)
    restarts = sorted(data.draw(st.sets(st.sampled_from(batches["base_offset"].tolist()[1:]), max_size=3))
                      if len(batches) > 1 else [])
    interval = data.draw(st.sampled_from([300, 1000, 4096]))
    offsets, times = literal_rule(batches, interval, True, set(restarts))
    _write_index_files(log, offsets, times, base)
    for r in restarts:
        (d / f"{r:020d}.snapshot").write_bytes(b"")
    (d / f"{int(batches['last_offset'].iloc[-1]) + 1:020d}.snapshot").write_bytes(b"")   # the final shutdown

    report = verify_segment(log, index_interval_bytes=interval)
    assert report.ok, (report.summary(), report.mismatches)
    assert [r.offset for r in report.restarts] == restarts
    assert all(r.evidence[0].startswith(f"{r.offset:020d}.snapshot") for r in report.restarts)
    out = rebuild_indexes(log, d / "rebuilt", index_interval_bytes=interval)
    assert [p.read_bytes() for p in out] == [log.with_suffix(".index").read_bytes(),
                                            log.with_suffix(".timeindex").read_bytes()]
    out = rebuild_indexes(log, d / "given", index_interval_bytes=interval, restarts=restarts)
    assert out[0].read_bytes() == log.with_suffix(".index").read_bytes()


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
QUIRK = "flink-on-prem/connect-status-1"          # README: pre-3.8 time entry, offset 6 for 7
# README: a clean restart at offset 913, with a producer-state snapshot and leader epoch 2 there
RESTART_DIR = "kraft-metadata-restart/__cluster_metadata-0"
RESTART = RESTART_DIR + "/00000000000000000000.log"


def real_segments():
    return sorted(p for p in require_real_data(REAL).rglob("*.log"))


@pytest.mark.realdata
def test_every_real_segment_rebuilds_to_its_own_index_files(tmp_path):
    before = snapshot(REAL)
    rebuilt = 0
    for log in real_segments():
        rel = str(log.relative_to(REAL))
        index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
        if not index.exists():
            assert not timeindex.exists()
            continue
        out = tmp_path / rel.replace("/", "_")
        got_index, got_time = rebuild_indexes(log, out)
        assert got_index.read_bytes() == index.read_bytes(), rel
        if str(log.parent.relative_to(REAL)) == QUIRK:
            # the only difference: entry 0's offset, 7 (the batch's last) where the broker wrote 6
            want, got = read_time_index(timeindex), read_time_index(got_time)
            assert len(want) == len(got) == 1 and want["timestamp"][0] == got["timestamp"][0]
            assert (int(want["offset"][0]), int(got["offset"][0])) == (6, 7)
            assert got_time.stat().st_size == timeindex.stat().st_size == TIME_ENTRY.size
        else:
            assert got_time.read_bytes() == timeindex.read_bytes(), rel
        rebuilt += 1
    assert rebuilt >= 11
    assert snapshot(REAL) == before          # inputs only read


@pytest.mark.realdata
def test_the_real_restart_rebuilds_byte_for_byte_only_with_the_restart(tmp_path):
    log = require_real_data(REAL / RESTART)
    index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    for name, restarts in (("given", [913]), ("evidence", None)):
        got = rebuild_indexes(log, tmp_path / name, restarts=restarts)
        assert [p.read_bytes() for p in got] == [index.read_bytes(), timeindex.read_bytes()], name
    got_index, got_time = rebuild_indexes(log, tmp_path / "none", restarts=())
    want, got = read_offset_index(index), read_offset_index(got_index)
    assert want[:15].tolist() == got[:15].tolist() and got[15].tolist() == (913, 65785) != want[15].tolist()
    assert (1725787026189, 912) in read_time_index(timeindex).tolist()
    assert (1725787026189, 912) not in read_time_index(got_time).tolist()


@pytest.mark.realdata
def test_verify_passes_every_real_partition_and_names_the_restart():
    reports = {str(Path(r.log).relative_to(REAL)): r for d in sorted({p.parent for p in real_segments()})
               for r in verify_directory(d)}
    assert set(reports) == {str(p.relative_to(REAL)) for p in real_segments()}
    for rel, r in reports.items():
        assert r.ok, r.summary()
        explained = [m.kind for m in r.mismatches]
        assert explained == (["pre-3.8 time entry"] if rel.startswith(QUIRK) else []), rel
        if r.offset_entries is None:             # the README: the preallocated files were not kept
            assert r.notes[0].startswith("no index files: the broker rebuilds them when it loads the log")
            continue
        assert r.offset_entries == r.expected_offset_entries and r.time_entries == r.expected_time_entries
        assert bool(r.restarts) == (rel == RESTART), rel
    assert reports["LDI-POC/__consumer_offsets-6/00000000000000000000.log"].time_entries == 3
    (restart,) = reports[RESTART].restarts
    assert (restart.offset, restart.position, restart.offset_entries_after) == (913, 65785, 7)
    assert restart.closing_time_entry == (15, (1725787026189, 912))
    assert restart.evidence[0].startswith("00000000000000000913.snapshot (producer-state snapshot")
    assert restart.evidence[1] == "leader epoch 2 starts at 913"
    assert "restart at offset 913 (position 65785): 00000000000000000913.snapshot" in restart.describe()
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
    (producer-state snapshots, checkpoints, quorum state, KRaft snapshots) check out."""
    dirs = sorted(d for d in require_real_data(REAL).glob("*/*") if d.is_dir())
    assert len(dirs) == 14
    kinds = set()
    for d in dirs:
        segments, files = verify_partition(d)
        assert all(r.ok for r in segments), [r.summary() for r in segments if not r.ok]
        assert all(f.ok for f in files), [(f.file, f.problems) for f in files if not f.ok]
        kinds |= {f.kind for f in files}
    assert {"producer-snapshot", "kraft-snapshot", "leader-epoch-checkpoint", "partition.metadata",
            "quorum-state"} <= kinds
