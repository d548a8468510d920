"""The broker's index-building rule (rmqlab.kafka.rebuild) against a literal, batch-by-batch
model of LogSegment.recover + TimeIndex.maybeAppend, and against real segments."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshot_support import snapshot

from rmqlab.kafka.index import TIME_ENTRY, read_offset_index, read_time_index
from rmqlab.kafka.rebuild import (
    batch_table,
    compare,
    expected_entries,
    rebuild_indexes,
    verify_directory,
    verify_segment,
)


def literal_rule(batches, interval=4096, rolled=True):
    """LogSegment.recover, one batch at a time, as the Java reads."""
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

    for b in batches.itertuples():
        assert b.position == valid
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
@given(segments(), st.sampled_from([0, 100, 4096, 20_000]), st.booleans())
def test_expected_entries_follow_the_literal_rule(batches, interval, rolled):
    offsets, times = expected_entries(batches, interval, rolled=rolled)
    want_off, want_time = literal_rule(batches, interval, rolled)
    assert [tuple(r) for r in offsets.tolist()] == want_off
    assert [tuple(r) for r in times.tolist()] == want_time
    assert compare(batches, offsets, times, index_interval_bytes=interval, rolled=rolled) == []


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


# ------------------------------------------------------------------------ real segments

REAL = Path(__file__).resolve().parents[2] / "shared" / "real-data" / "kafka"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"real Kafka segments not present at {REAL} "
                                "(the repository never holds them)")
QUIRK = "flink-on-prem/connect-status-1"          # README: pre-3.8 time entry, offset 6 for 7
# Segments whose directories hold no index files (an active segment's preallocated indexes were
# not kept; a broker would rebuild them): verify reports both as missing.
WITHOUT_INDEXES = {"kafka-2.7.1/__consumer_offsets-17/00000000000000000001.log",
                   "idempotent-gzip/lsx1-0/00000000000000000000.log"}
# README: a clean restart at offset 913. The rebuild does not model restarts yet, so it agrees
# with the broker's entries up to the restart and disagrees from entry 15 on. Checked exactly, so
# that modelling restarts turns this into a failure that removes the exception.
RESTART = "kraft-metadata-restart/__cluster_metadata-0/00000000000000000000.log"
RESTART_FIRST_DIFFERENT_ENTRY = 15


def real_segments():
    return sorted(p for p in REAL.rglob("*.log")) if REAL.is_dir() else []


@needs_real
@pytest.mark.realdata
def test_every_real_segment_rebuilds_to_its_own_index_files(tmp_path):
    before = snapshot(REAL)
    rebuilt = 0
    for log in real_segments():
        rel = str(log.relative_to(REAL))
        index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
        if rel in WITHOUT_INDEXES:
            assert not index.exists() and not timeindex.exists()
            continue
        out = tmp_path / rel.replace("/", "_")
        got_index, got_time = rebuild_indexes(log, out)
        if rel == RESTART:
            want, got = read_offset_index(index), read_offset_index(got_index)
            k = RESTART_FIRST_DIFFERENT_ENTRY
            assert want[:k].tolist() == got[:k].tolist() and want[k].tolist() != got[k].tolist()
            continue
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
    assert rebuilt == len(real_segments()) - len(WITHOUT_INDEXES) - 1 >= 10
    assert snapshot(REAL) == before          # inputs only read


@needs_real
@pytest.mark.realdata
def test_verify_passes_real_segments_and_explains_the_quirk():
    reports = {str(Path(r.log).relative_to(REAL)): r for d in sorted({p.parent for p in real_segments()})
               for r in verify_directory(d)}
    assert set(reports) == {str(p.relative_to(REAL)) for p in real_segments()}
    for rel, r in reports.items():
        if rel in WITHOUT_INDEXES:
            assert not r.ok and len(r.errors) == 2 and all(e.endswith("missing") for e in r.errors)
            continue
        if rel == RESTART:
            assert not r.ok and r.mismatches
            assert min(m.entry for m in r.mismatches if m.entry >= 0) == RESTART_FIRST_DIFFERENT_ENTRY, r.summary()
            continue
        assert r.ok, r.summary()
        explained = [m.kind for m in r.mismatches]
        assert explained == (["pre-3.8 time entry"] if rel.startswith(QUIRK) else []), rel
        assert r.offset_entries == r.expected_offset_entries and r.time_entries == r.expected_time_entries
    assert reports["LDI-POC/__consumer_offsets-6/00000000000000000000.log"].time_entries == 3


@needs_real
@pytest.mark.realdata
def test_verify_reports_a_damaged_index_entry_and_a_damaged_batch(tmp_path):
    src = REAL / "flink-on-prem" / "connect-offsets-14"
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
