"""Kafka's offset and time indexes (rmqlab.kafka.index) against real broker files, brute-force
searches and a reference model of the Java append rules written out here independently."""
from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, needs_real_data

from rmqlab.errors import CorruptIndexError, FormatError, RmqlabError
from rmqlab.kafka.index import (
    DEFAULT_MAX_INDEX_SIZE,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
    OffsetIndex,
    OffsetIndexWriter,
    OffsetPosition,
    TimeIndex,
    TimeIndexWriter,
    TimestampOffset,
    TimestampOrderError,
    base_offset_of,
    build_offset_index,
    build_time_index,
    entry_count,
    read_offset_index,
    read_time_index,
    segment_file_name,
)

REAL = REAL_DATA / "kafka"

# Per-directory READMEs of the real-data folder, by segment (directory / base offset): base
# offset, offset-index entries, time-index entries, and the entries they spell out (None: only
# the count is documented; counts from the README's file sizes: 8 bytes an offset entry, 12 a
# time entry).
EXPECTED = {
    "LDI-POC/__consumer_offsets-6/00000000000000000000": (0, 2, 3, [(3, 4730), (7, 9571)],
                                     [(1769791783399, 3), (1769792518093, 7), (1769793578176, 12)]),
    "flink-on-prem/_schemas-0/00000000000000000000": (0, 1, 2, [(8, 4154)], None),
    "flink-on-prem/__consumer_offsets-34/00000000000000000000": (0, 1, 1, [(9, 4268)], None),
    "flink-on-prem/__consumer_offsets-28/00000000000000000000": (0, 0, 1, [], [(1713533857013, 3)]),
    "flink-on-prem/connect-offsets-14/00000000000000000000": (0, 19, 20, None, None),
    # the pre-3.8 quirk: the stored offset is 6 (a rebuild would write 7); it must read back as 6
    "flink-on-prem/connect-status-1/00000000000000000000": (0, 0, 1, [], [(1713541794161, 6)]),
    "flink-on-prem/_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0/00000000000000000000":
        (0, 10, 11, None, None),
    "kafka-0.11.0/test0-0/00000000000000000000": (0, 0, 1, [], [(1600054618983, 10)]),
    "kafka-0.11.0/mac_test-0/00000000000000000078": (78, 0, 0, [], []),
    "kafka-2.7.1/__consumer_offsets-17/00000000000000000000": (0, 0, 1, [], [(1670071252901, 0)]),
    "kraft-metadata-restart/__cluster_metadata-0/00000000000000000000": (0, 22, 24, None, None),
    # kafka-3.6-compacted/README: cleaned and compacted __consumer_offsets, 0-byte .index files
    "kafka-3.6-compacted/__consumer_offsets-9/00000000000000000000": (0, 0, 1, [], [(1774915316094, 9906)]),
    "kafka-3.6-compacted/__consumer_offsets-9/00000000000000009907": (9907, 109, 111, None, None),
    "kafka-3.6-compacted/__consumer_offsets-32/00000000000000000000": (0, 0, 1, [], None),
    "kafka-3.6-compacted/__consumer_offsets-32/00000000000000000192": (192, 0, 2, [], None),
    **{f"kafka-3.6-compacted/__consumer_offsets-{n}/00000000000000000000": (0, 0, 1, [], None)
       for n in (8, 16, 20, 22, 29, 31, 38)},
    # multi-record batches: offset entries at a batch's last offset, time entries at the record
    # holding the batch's max timestamp (a leader before Kafka 3.8)
    "kafka-3.6-compacted/stock-market-batch-0/00000000000000012910": (12910, 30, 29, None, None),
    "kafka-3.6-compacted/stock-market-realtime-0/00000000000000003101": (3101, 6, 8, None, None),
}

needs_real = needs_real_data(REAL)


def real_segments():
    return sorted(EXPECTED)


def raw_offset_entries(data: bytes, base: int) -> list[tuple[int, int]]:
    """The .index layout parsed here with struct, independently of the module's Layout."""
    return [(base + r, p) for r, p in struct.iter_unpack(">ii", data[: len(data) // 8 * 8])]


def raw_time_entries(data: bytes, base: int) -> list[tuple[int, int]]:
    return [(t, base + r) for t, r in struct.iter_unpack(">qi", data[: len(data) // 12 * 12])]


def brute_lower(keys: list[int] | np.ndarray, target: int) -> int:
    """Slot of the largest key <= target by a full scan, or -1."""
    hits = np.flatnonzero(np.asarray(keys, dtype=np.int64) <= target)
    return int(hits[-1]) if len(hits) else -1


# ------------------------------------------------------------------------------ real data


@pytest.mark.realdata
@needs_real
def test_every_real_index_file_is_documented():
    found = {str(p.with_suffix("").relative_to(REAL)) for p in REAL.rglob("*.index")}
    found |= {str(p.with_suffix("").relative_to(REAL)) for p in REAL.rglob("*.timeindex")}
    assert found == set(EXPECTED), "a real-data segment is missing from EXPECTED (or vice versa)"


@pytest.mark.realdata
@needs_real
@pytest.mark.parametrize("rel", real_segments())
def test_real_indexes_open_check_and_match_the_readmes(rel):
    base, n_index, n_time, index_entries, time_entries = EXPECTED[rel]
    folder = (REAL / rel).parent
    assert (REAL / rel).name == f"{base:020d}"
    ip = folder / segment_file_name(base, ".index")
    tp = folder / segment_file_name(base, ".timeindex")
    assert base_offset_of(ip) == base == base_offset_of(tp)

    with OffsetIndex.open(ip) as idx:
        idx.check()
        assert idx.problems() == []
        assert idx.base_offset == base and idx.entry_count == n_index == len(idx)
        assert idx.written_entry_count == n_index and not idx.untrimmed
        truth = raw_offset_entries(ip.read_bytes(), base)
        assert list(zip(idx.offsets.tolist(), idx.positions.tolist())) == truth
        if index_entries is not None:
            assert truth == index_entries
        assert idx.last_entry == (truth[-1] if truth else (base, 0))
    with TimeIndex.open(tp) as tix:
        tix.check()
        assert tix.entry_count == n_time
        truth_t = raw_time_entries(tp.read_bytes(), base)
        assert list(zip(tix.timestamps.tolist(), tix.offsets.tolist())) == truth_t
        if time_entries is not None:
            assert truth_t == time_entries
        assert tix.last_entry == (truth_t[-1] if truth_t else (-1, base))

    assert entry_count(ip) == entry_count(ip, count="dump") == n_index
    assert entry_count(tp) == entry_count(tp, count="dump") == n_time
    assert read_offset_index(ip).tolist() == truth
    assert read_time_index(tp).tolist() == truth_t


@pytest.mark.realdata
@needs_real
def test_entries_across_a_restart_read_as_the_readme_spells_them():
    folder = REAL / "kraft-metadata-restart" / "__cluster_metadata-0"
    offsets = read_offset_index(folder / "00000000000000000000.index")
    times = read_time_index(folder / "00000000000000000000.timeindex")
    assert int(offsets["offset"][15]) == 969                 # counted again from the restart at 913
    assert (int(times["timestamp"][15]), int(times["offset"][15])) == (1725787026189, 912)  # at shutdown


@pytest.mark.realdata
@needs_real
def test_zero_byte_segment_with_base_offset_78():
    folder = REAL / "kafka-0.11.0" / "mac_test-0"
    ip, tp = folder / "00000000000000000078.index", folder / "00000000000000000078.timeindex"
    assert ip.stat().st_size == 0 == tp.stat().st_size
    with OffsetIndex.open(ip) as idx, TimeIndex.open(tp) as tix:
        assert idx.entry_count == 0 == tix.entry_count
        for target in (0, 77, 78, 79, 10**12):
            assert idx.lookup(target) == OffsetPosition(78, 0) == (78, 0)
            assert tix.lookup(target) == TimestampOffset(-1, 78) == (-1, 78)
        assert idx.lookup_many([0, 78, 10**9]).tolist() == [(78, 0)] * 3
        assert tix.lookup_many([0, 5]).tolist() == [(-1, 78)] * 2
        t = idx.trace_lookup(100)
        assert t.section == "empty" and t.entries_read == 0 and t.result == (78, 0)
        assert idx.fetch_upper_bound_offset((78, 0), 100) is None


@pytest.mark.realdata
@needs_real
@pytest.mark.parametrize("rel", real_segments())
def test_real_lookups_equal_a_full_scan(rel):
    base = EXPECTED[rel][0]
    with OffsetIndex.open((REAL / rel).parent / segment_file_name(base, ".index")) as idx:
        keys = idx.offsets.tolist()
        targets = list(range(base - 2, (keys[-1] if keys else base) + 3))
        for t in targets:
            s = brute_lower(keys, t)
            want = (keys[s], int(idx.positions[s])) if s >= 0 else (base, 0)
            assert idx.lookup(t) == want and idx.lookup(t, algorithm="classic") == want
        assert idx.lookup_many(targets).tolist() == [idx.lookup(t) for t in targets]
    with TimeIndex.open((REAL / rel).parent / segment_file_name(base, ".timeindex")) as tix:
        ts = tix.timestamps.tolist()
        targets = sorted({x + d for x in ts for d in (-1, 0, 1)} | {0, 2**62})
        for t in targets:
            s = brute_lower(ts, t)
            assert tix.lookup(t) == ((ts[s], int(tix.offsets[s])) if s >= 0 else (-1, base))
        assert tix.lookup_many(targets).tolist() == [tix.lookup(t) for t in targets]


@pytest.mark.realdata
@needs_real
@pytest.mark.parametrize("rel", real_segments())
def test_real_indexes_round_trip_through_the_writers(rel, tmp_path):
    base = EXPECTED[rel][0]
    ip = (REAL / rel).parent / segment_file_name(base, ".index")
    tp = (REAL / rel).parent / segment_file_name(base, ".timeindex")
    out_i = tmp_path / ip.name
    with OffsetIndexWriter(out_i) as w:  # preallocated to 10 MiB, trimmed on close
        assert os.path.getsize(w.temp_path) == DEFAULT_MAX_INDEX_SIZE
        for off, pos in raw_offset_entries(ip.read_bytes(), base):
            w.append(off, pos)
    assert out_i.read_bytes() == ip.read_bytes()

    out_t = tmp_path / tp.name
    entries = raw_time_entries(tp.read_bytes(), base)
    with TimeIndexWriter(out_t) as w:
        assert os.path.getsize(w.temp_path) == DEFAULT_MAX_INDEX_SIZE // 12 * 12
        for ts, off in entries[:-1]:
            assert w.maybe_append(ts, off)
        if entries:  # the last entry of a closed segment is the roll entry (skipFullCheck)
            assert w.roll(*entries[-1])
    assert out_t.read_bytes() == tp.read_bytes()

    # the one-shot builders give the same bytes (the roll entry is an ordinary larger entry)
    (tmp_path / "b").mkdir()
    assert build_offset_index(tmp_path / "b" / ip.name, read_offset_index(ip)) == EXPECTED[rel][1]
    assert build_time_index(tmp_path / "b" / tp.name, read_time_index(tp)) == EXPECTED[rel][2]
    assert (tmp_path / "b" / ip.name).read_bytes() == ip.read_bytes()
    assert (tmp_path / "b" / tp.name).read_bytes() == tp.read_bytes()


@pytest.mark.realdata
@needs_real
def test_resume_a_real_index_copies_it_and_replaces_it_only_on_close(tmp_path):
    src = REAL / "LDI-POC" / "__consumer_offsets-6" / "00000000000000000000.index"
    p = tmp_path / src.name
    shutil.copyfile(src, p)
    os.chmod(p, 0o444)
    before = p.read_bytes()
    w = OffsetIndexWriter.resume(p)
    assert w.entry_count == 2 and w.last_offset == 7
    assert os.path.getsize(w.temp_path) == DEFAULT_MAX_INDEX_SIZE  # resized back, as on load
    with pytest.raises(InvalidOffsetError):
        w.append(7, 12000)
    w.append(11, 12000)
    assert p.read_bytes() == before  # the input is never written
    w.close()
    assert p.read_bytes() == before + struct.pack(">ii", 11, 12000)
    assert not w.temp_path.exists()


# ------------------------------------------------------------------------------ properties


@st.composite
def sorted_keys(draw, base_max=10**6):
    """Strictly increasing keys: small (0-5) or large (> the 1024/682 warm entries) counts."""
    n = draw(st.one_of(st.integers(0, 5), st.integers(600, 2600)))
    seed = draw(st.integers(0, 2**32 - 1))
    max_gap = draw(st.sampled_from([1, 2, 50, 10**5]))
    rng = np.random.default_rng(seed)
    first = draw(st.integers(0, base_max))
    keys = first + np.cumsum(rng.integers(1, max_gap + 1, size=n)) - 1
    return keys.astype(np.int64), rng


def pick_targets(draw, keys: np.ndarray, warm: int) -> list[int]:
    n = len(keys)
    lo = int(keys[0]) if n else 0
    hi = int(keys[-1]) if n else 100
    pool = [lo - 1, lo - 10**6, hi, hi + 1, hi + 10**9, 0]
    if n:
        hot = max(0, n - 1 - warm)
        pool += [int(keys[hot]) + d for d in (-1, 0, 1)]
        pool += [int(keys[i]) + d for i in draw(st.lists(st.integers(0, n - 1), max_size=12)) for d in (-1, 0, 1)]
    pool += draw(st.lists(st.integers(lo - 5, hi + 5), max_size=12))
    return pool


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), sorted_keys(), st.integers(0, 10**6))
def test_offset_lookup_equals_brute_force(tmp_path_factory, data, keys_rng, base):
    keys, rng = keys_rng
    offsets = base + keys
    positions = np.cumsum(rng.integers(1, 5000, size=len(keys))).astype(np.int64)
    d = tmp_path_factory.mktemp("oi")
    p = d / segment_file_name(base, ".index")
    assert build_offset_index(p, np.stack([offsets, positions], axis=1)) == len(keys)
    assert p.stat().st_size == 8 * len(keys)
    targets = pick_targets(data.draw, offsets, 1024)
    with OffsetIndex.open(p) as idx:
        idx.check()
        many = idx.lookup_many(targets)
        for t, m in zip(targets, many.tolist()):
            s = brute_lower(offsets, t)
            want = (int(offsets[s]), int(positions[s])) if s >= 0 else (base, 0)
            assert idx.lookup(t) == want == m
            assert idx.lookup(t, algorithm="classic") == want
            tr = idx.trace_lookup(t)
            assert tr.slot == s and tr.result == want
            if len(keys):
                hot = max(0, len(keys) - 1 - 1024)
                assert tr.first_hot_entry == hot and tr.steps[0].slot == hot
                in_warm = t > offsets[hot]
                assert (tr.section == "warm") == in_warm
                if in_warm:  # only the last 1025 entries (the last 8 KiB) are read
                    assert all(hot <= st_.slot < len(keys) for st_ in tr.steps)
                    assert tr.entries_read <= 1 + 11 + 1
                    assert min(tr.pages_touched) >= hot * 8 // 4096
                assert tr.entries_read <= 2 + int(np.ceil(np.log2(len(keys) + 1))) + 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), sorted_keys(base_max=2 * 10**12), st.integers(0, 10**6))
def test_time_lookup_equals_brute_force(tmp_path_factory, data, keys_rng, base):
    timestamps, rng = keys_rng
    offsets = base + np.cumsum(rng.integers(0, 3, size=len(timestamps))).astype(np.int64)
    d = tmp_path_factory.mktemp("ti")
    p = d / segment_file_name(base, ".timeindex")
    assert build_time_index(p, np.stack([timestamps, offsets], axis=1)) == len(timestamps)
    targets = pick_targets(data.draw, timestamps, 682)
    with TimeIndex.open(p) as tix:
        tix.check()
        many = tix.lookup_many(targets)
        for t, m in zip(targets, many.tolist()):
            s = brute_lower(timestamps, t)
            want = (int(timestamps[s]), int(offsets[s])) if s >= 0 else (-1, base)
            assert tix.lookup(t) == want == m
            assert tix.lookup(t, algorithm="classic") == want
            tr = tix.trace_lookup(t)
            if len(timestamps):
                hot = max(0, len(timestamps) - 1 - 682)
                assert (tr.section == "warm") == (t > timestamps[hot])
                if tr.section == "warm":
                    assert all(hot <= s_.slot for s_ in tr.steps)


def test_warm_section_reads_fewer_cold_pages_than_the_classic_search(tmp_path):
    p = tmp_path / segment_file_name(0, ".index")
    n = 100_000
    build_offset_index(p, np.stack([np.arange(1, n + 1), np.arange(n) * 4100], axis=1))
    with OffsetIndex.open(p) as idx:
        warm, classic = idx.trace_lookup(n - 3), idx.trace_lookup(n - 3, algorithm="classic")
        assert warm.result == classic.result == (n - 3, (n - 4) * 4100)
        assert warm.section == "warm" and classic.section == "whole"
        last_pages = set(range((n - 1 - 1024) * 8 // 4096, n * 8 // 4096 + 1))
        assert set(warm.pages_touched) <= last_pages
        assert not set(classic.pages_touched) <= last_pages  # reads page 0 and the middle
        before = idx.entries_read
        idx.lookup(5)
        assert idx.entries_read > before


# ------------------------------------------------------------------------------ append rules


class RefOffsetIndex:
    """OffsetIndex.append restated from the Java source, for comparison."""

    def __init__(self, base, max_entries):
        self.base, self.max, self.entries = base, max_entries, []

    def append(self, offset, position):
        if len(self.entries) >= self.max:
            return IndexFullError
        if self.entries and offset <= self.entries[-1][0]:
            return InvalidOffsetError
        if not 0 <= offset - self.base <= 2**31 - 1:
            return IndexOffsetOverflowError
        self.entries.append((offset, position))
        return True


class RefTimeIndex:
    """TimeIndex.maybeAppend restated from the Java source."""

    def __init__(self, base, max_entries):
        self.base, self.max, self.entries = base, max_entries, []

    def maybe_append(self, ts, offset, skip=False):
        last_ts, last_off = self.entries[-1] if self.entries else (-1, self.base)
        if not skip and len(self.entries) >= self.max - 1:
            return IndexFullError
        if self.entries and offset < last_off:
            return InvalidOffsetError
        if self.entries and ts < last_ts:
            return TimestampOrderError
        if ts > last_ts:
            if len(self.entries) >= self.max:
                return IndexFullError
            if not 0 <= offset - self.base <= 2**31 - 1:
                return IndexOffsetOverflowError
            self.entries.append((ts, offset))
            return True
        return False


calls_offsets = st.lists(st.tuples(st.integers(-3, 40), st.integers(0, 10**6)), max_size=30)
calls_times = st.lists(st.tuples(st.integers(-3, 30), st.integers(-2, 30)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(calls_offsets, st.integers(0, 5), st.integers(1, 12), st.booleans())
def test_offset_append_and_append_many_follow_the_java_rules(tmp_path_factory, calls, base, slots, nonempty_first):
    d = tmp_path_factory.mktemp("oa")
    ref = RefOffsetIndex(base, slots)
    w1 = OffsetIndexWriter(d / "a.index", base, max_index_size=8 * slots + 7)
    w2 = OffsetIndexWriter(d / "b.index", base, max_index_size=8 * slots + 7)
    assert w1.max_entries == slots and os.path.getsize(w1.temp_path) == 8 * slots
    expected_error = None
    for off, pos in calls:
        want = ref.append(off, pos)
        if want is True:
            assert w1.append(off, pos) is None
        else:
            with pytest.raises(want) as e:
                w1.append(off, pos)
            assert str(d / "a.index") in str(e.value) and isinstance(e.value, RmqlabError)
            expected_error = want
            break
    offs = [c[0] for c in calls]
    poss = [c[1] for c in calls]
    if expected_error is None:
        assert w2.append_many(offs, poss) == len(calls)
    else:
        with pytest.raises(expected_error):
            w2.append_many(offs, poss)
    assert w1.entry_count == w2.entry_count == len(ref.entries)
    w1.close()
    w2.close()
    packed = b"".join(struct.pack(">ii", o - base, p) for o, p in ref.entries)
    assert (d / "a.index").read_bytes() == packed == (d / "b.index").read_bytes()


@settings(max_examples=150, deadline=None)
@given(calls_times, st.integers(0, 5), st.integers(1, 8), st.booleans())
def test_time_maybe_append_and_many_follow_the_java_rules(tmp_path_factory, calls, base, slots, skip):
    d = tmp_path_factory.mktemp("ta")
    ref = RefTimeIndex(base, slots)
    w1 = TimeIndexWriter(d / "a.timeindex", base, max_index_size=12 * slots + 11)
    w2 = TimeIndexWriter(d / "b.timeindex", base, max_index_size=12 * slots + 11)
    assert w1.max_entries == slots
    expected_error, appended = None, []
    for ts, off in calls:
        want = ref.maybe_append(ts, off, skip)
        if want in (True, False):
            assert w1.maybe_append(ts, off, skip_full_check=skip) is want
            appended.append(want)
        else:
            with pytest.raises(want):
                w1.maybe_append(ts, off, skip_full_check=skip)
            expected_error = want
            break
    if expected_error is None:
        assert w2.maybe_append_many([c[0] for c in calls], [c[1] for c in calls], skip).tolist() == appended
    else:
        with pytest.raises(expected_error):
            w2.maybe_append_many([c[0] for c in calls], [c[1] for c in calls], skip)
    assert w1.entry_count == w2.entry_count == len(ref.entries)
    w1.close()
    w2.close()
    packed = b"".join(struct.pack(">qi", t, o - base) for t, o in ref.entries)
    assert (d / "a.timeindex").read_bytes() == packed == (d / "b.timeindex").read_bytes()


def test_append_errors_name_file_offset_and_field(tmp_path):
    p = tmp_path / segment_file_name(100, ".index")
    with OffsetIndexWriter(p, max_index_size=16) as w:
        w.append(105, 4100)
        for bad in (105, 104):
            with pytest.raises(InvalidOffsetError) as e:
                w.append(bad, 9000)
            assert e.value.path == str(p) and e.value.offset == 8 and e.value.field == "relative_offset"
            assert str(p) in str(e.value) and "relative_offset" in str(e.value)
        with pytest.raises(IndexOffsetOverflowError):
            w.append(100 + 2**31, 9000)
        w.append(100 + 2**31 - 1, 9000)
        with pytest.raises(IndexFullError):
            w.append(100 + 2**31, 9100)
    assert read_offset_index(p).tolist() == [(105, 4100), (100 + 2**31 - 1, 9000)]

    t = tmp_path / segment_file_name(0, ".timeindex")
    with TimeIndexWriter(t, max_index_size=36) as w:
        assert not w.maybe_append(-1, 0)  # NO_TIMESTAMP is never indexed
        assert w.maybe_append(10, 5)
        assert not w.maybe_append(10, 6)  # equal timestamp: skipped
        with pytest.raises(InvalidOffsetError):
            w.maybe_append(20, 4)
        with pytest.raises(TimestampOrderError) as e:
            w.maybe_append(9, 6)
        assert e.value.field == "timestamp" and e.value.offset == 12
        assert w.maybe_append(20, 6) and w.is_full
        with pytest.raises(IndexFullError):
            w.maybe_append(30, 7)
        assert w.maybe_append(30, 7, skip_full_check=True)  # the slot kept for the roll entry
        with pytest.raises(IndexFullError):
            w.maybe_append(40, 8, skip_full_check=True)
    assert read_time_index(t).tolist() == [(10, 5), (20, 6), (30, 7)]


def test_preallocation_sizes_and_bad_max_index_size(tmp_path):
    with OffsetIndexWriter(tmp_path / "0.index") as w, TimeIndexWriter(tmp_path / "0.timeindex") as tw:
        assert os.path.getsize(w.temp_path) == 10485760 and w.max_entries == 1310720
        assert os.path.getsize(tw.temp_path) == 10485756 and tw.max_entries == 873813
        assert not (tmp_path / "0.index").exists()  # nothing at the target until close
        w.append(1, 5000)
        w.trim()
        assert os.path.getsize(w.temp_path) == 8 and w.is_full
        with pytest.raises(IndexFullError):
            w.append(2, 6000)
        assert w.resize(100) and os.path.getsize(w.temp_path) == 96
        w.append(2, 6000)
    assert os.path.getsize(tmp_path / "0.index") == 16 and os.path.getsize(tmp_path / "0.timeindex") == 0
    with pytest.raises(ValueError):
        OffsetIndexWriter(tmp_path / "1.index", max_index_size=7)
    with pytest.raises(FileExistsError):
        OffsetIndexWriter(tmp_path / "0.index")


def test_a_failed_build_leaves_no_file(tmp_path):
    p = tmp_path / segment_file_name(0, ".index")
    with pytest.raises(InvalidOffsetError):
        build_offset_index(p, [(5, 100), (5, 200)])
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ untrimmed files


def test_untrimmed_preallocated_files_broker_count_vs_dump_count(tmp_path):
    ip = tmp_path / segment_file_name(50, ".index")
    tp = tmp_path / segment_file_name(50, ".timeindex")
    build_offset_index(ip, [(60, 4200), (75, 8500)], max_index_size=800, trim=False)
    build_time_index(tp, [(1000, 60), (2000, 75)], max_index_size=1200, trim=False)
    assert ip.stat().st_size == 800 and tp.stat().st_size == 1200

    # The broker's count: every whole entry. The offset index passes Kafka's sanity check
    # (the zero tail reads as offset == base offset), but it is not a sound index.
    with OffsetIndex.open(ip) as idx:
        assert idx.entry_count == 100 and idx.written_entry_count == 2 and idx.untrimmed
        assert idx.last_entry == (50, 0)
        problems = idx.problems()
        assert problems and problems[0].field == "entry[2].relative_offset"
        assert "untrimmed" in str(problems[0]) and str(ip) in str(problems[0])
    # The time index fails it: last timestamp 0 < first timestamp 1000.
    with pytest.raises(CorruptIndexError) as e:
        TimeIndex.open(tp)
    assert e.value.field == "entry[99].timestamp" and str(tp) in str(e.value)
    # DumpLogSegments' rule stops at the tail.
    with OffsetIndex.open(ip, count="dump") as idx, TimeIndex.open(tp, count="dump") as tix:
        idx.check()
        tix.check()
        assert idx.lookup(10**6) == (75, 8500) and tix.lookup(10**6) == (2000, 75)
    assert entry_count(ip) == 100 and entry_count(ip, count="dump") == 2
    assert entry_count(tp) == 100 and entry_count(tp, count="dump") == 2


# ------------------------------------------------------------------------------ sanity checks


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_length_not_a_multiple_of_the_entry_size(tmp_path):
    p = write(tmp_path / segment_file_name(0, ".index"), struct.pack(">ii", 3, 4100) + b"\x00")
    with pytest.raises(CorruptIndexError) as e:
        OffsetIndex.open(p)
    assert e.value.field == "file length" and e.value.offset == 8 and str(p) in str(e.value)
    with OffsetIndex.open(p, strict=False) as idx:  # opens anyway, bounded
        assert idx.entry_count == 1 and idx.lookup(10) == (3, 4100)
        assert [x.field for x in idx.problems()] == ["file length"]
    t = write(tmp_path / segment_file_name(0, ".timeindex"), struct.pack(">qi", 5, 1) + b"\x00" * 5)
    with pytest.raises(CorruptIndexError) as e:
        TimeIndex.open(t)
    assert e.value.field == "file length" and e.value.offset == 12


def test_last_offset_below_the_base_offset(tmp_path):
    p = write(tmp_path / segment_file_name(100, ".index"), struct.pack(">ii", -1, 4100))
    with pytest.raises(CorruptIndexError) as e:
        OffsetIndex.open(p)
    assert e.value.field == "entry[0].relative_offset" and "99" in str(e.value) and str(p) in str(e.value)
    t = write(tmp_path / segment_file_name(100, ".timeindex"), struct.pack(">qi", 5, -3))
    with pytest.raises(CorruptIndexError) as e:
        TimeIndex.open(t)
    assert e.value.field == "entry[0].relative_offset" and e.value.offset == 8


def test_time_index_last_timestamp_below_first(tmp_path):
    t = write(tmp_path / segment_file_name(0, ".timeindex"), struct.pack(">qiqi", 50, 1, 40, 2))
    with pytest.raises(CorruptIndexError) as e:
        TimeIndex.open(t)
    assert e.value.field == "entry[1].timestamp" and "40" in str(e.value)


def test_legacy_rule_needs_last_offset_above_base(tmp_path):
    p = write(tmp_path / segment_file_name(7, ".index"), struct.pack(">ii", 0, 4100))
    with OffsetIndex.open(p) as idx:  # 2.0+: last offset == base offset is fine
        idx.sanity_check()
        with pytest.raises(CorruptIndexError, match="no larger than"):
            idx.sanity_check(legacy=True)


def test_problems_finds_unsorted_entries_that_the_sanity_check_misses(tmp_path):
    p = write(tmp_path / segment_file_name(0, ".index"),
              struct.pack(">iiiiiiii", 5, 4100, 9, 9000, 7, 8000, 12, -1))
    with OffsetIndex.open(p) as idx:  # passes Kafka's sanity check
        fields = [x.field for x in idx.problems()]
        assert fields == ["entry[2].relative_offset", "entry[3].position", "entry[2].position"]
        with pytest.raises(CorruptIndexError):
            idx.check()
        for t in range(20):  # still answers, without raising
            idx.lookup(t)
    t = write(tmp_path / segment_file_name(0, ".timeindex"), struct.pack(">qiqiqi", 5, 3, 5, 4, 9, 2))
    with TimeIndex.open(t) as tix:
        assert [x.field for x in tix.problems()] == ["entry[1].timestamp", "entry[2].relative_offset"]


# ------------------------------------------------------------------------------ names


@given(st.integers(0, 2**63 - 1), st.sampled_from([".index", ".timeindex", ".log", ".index.deleted"]))
def test_file_names_round_trip(base, suffix):
    name = segment_file_name(base, suffix)
    assert len(name.split(".")[0]) >= 20 and name.endswith(suffix)
    assert base_offset_of(Path("/x") / name) == base


@pytest.mark.parametrize("name", ["abc.index", ".index", "00000000000000000000", "-1.index",
                                  "99999999999999999999.index", "１２.index"])
def test_bad_file_names_raise_a_typed_error(name, tmp_path):
    with pytest.raises(FormatError) as e:
        base_offset_of(name)
    assert e.value.field == "file name"
    p = write(tmp_path / name.replace("/", "_"), b"") if name not in (".index",) else None
    if p is not None and name.endswith(".index"):
        with pytest.raises(FormatError):
            OffsetIndex.open(p)
        with OffsetIndex.open(p, base_offset=3) as idx:  # an explicit base offset needs no name
            assert idx.lookup(9) == (3, 0)


def test_fetch_upper_bound_offset_equals_a_scan(tmp_path):
    p = tmp_path / segment_file_name(0, ".index")
    entries = [(10 * i + 3, 4096 * i + 17) for i in range(1, 3000)]
    build_offset_index(p, entries)
    positions = [e[1] for e in entries]
    with OffsetIndex.open(p) as idx:
        for pos in (0, 17, 4113, 4114, 9000, positions[1], positions[-1], positions[-1] + 1, 8_000_000):
            for size in (0, 1, 5000, 1 << 20):
                hits = [i for i, x in enumerate(positions) if x >= pos + size]
                if hits and hits[0] == 0 and positions[0] == pos + size:
                    hits = hits[1:]  # Kafka's search never probes slot 0 of the cold range
                want = entries[hits[0]] if hits else None
                assert idx.fetch_upper_bound_offset((0, pos), size) == want


def test_fetch_upper_bound_on_a_single_entry_equal_to_the_target(tmp_path):
    p = tmp_path / segment_file_name(0, ".index")
    build_offset_index(p, [(3, 4113)])
    with OffsetIndex.open(p) as idx:
        assert idx.fetch_upper_bound_offset((0, 4000), 100) == (3, 4113)
        assert idx.fetch_upper_bound_offset((0, 4013), 100) is None  # equal: slot 0 is never probed
        assert idx.fetch_upper_bound_offset((0, 4014), 100) is None
