"""The C fast paths against the Python model on inputs large enough to take every C branch.

put_keys copies the slot table to huge-page memory and writes its entries through the file
descriptor (pwrite, in chunks) from 100,000 keys on, and select_phy_offsets_many walks chains
in groups of 16; small property tests never reach the first and rarely stress the second, so
these tests use sizes chosen to cross both, and lower the pwrite threshold to compare the two
write paths on small files too.
"""
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_model import java_hash, stored_hash

import rmqlab
import rmqlab._indexcore as _indexcore
from rmqlab.formats import indexfile
from rmqlab.formats.indexfile import IndexFile
from rmqlab.tables.pool import usable_cores

LONG_MAX = 2**63 - 1


def workload(n, seed, distinct=None):
    rng = np.random.default_rng(seed)
    distinct = distinct or n
    keys = [f"T{seed}#k{int(i)}" for i in rng.integers(0, distinct, n)]
    phy = rng.integers(0, 2**40, n)
    # bursts of equal timestamps, some going backwards: the clamping and second truncation matter
    ts = 1718000000000 + np.cumsum(rng.integers(-400, 900, n))
    return keys, phy, ts


@pytest.mark.parametrize("rule", ["new-slot", "every-put"])
def test_bulk_equals_sequential_above_the_slot_copy_threshold(tmp_path, rule):
    n = 130_000  # > SLOT_COPY_MIN_KEYS in indexcore.c
    keys, phy, ts = workload(n, seed=7, distinct=40_000)
    geometry = dict(hash_slot_num=9_973, index_num=n + 1)
    with IndexFile.create(tmp_path / "seq", **geometry, slot_count_rule=rule) as f:
        for k, p, t in zip(keys, phy.tolist(), ts.tolist()):
            assert f.put_key(k, p, t)
    written = rmqlab.build_index_file(tmp_path / "bulk", keys, phy, ts, **geometry, slot_count_rule=rule)
    assert written == n
    assert (tmp_path / "bulk").read_bytes() == (tmp_path / "seq").read_bytes()


def test_bulk_continues_a_partly_filled_file_above_the_threshold(tmp_path):
    keys, phy, ts = workload(250_000, seed=11, distinct=90_000)
    geometry = dict(hash_slot_num=4_099, index_num=200_000)  # more keys than room: the tail is dropped
    with IndexFile.create(tmp_path / "seq", **geometry) as f:
        results = [f.put_key(k, p, t) for k, p, t in zip(keys, phy.tolist(), ts.tolist())]
    assert results.count(True) == 199_999 and not any(results[199_999:])
    with IndexFile.create(tmp_path / "bulk", **geometry) as f:
        assert f.put_keys(keys[:1000], phy[:1000], ts[:1000]) == 1000
    with IndexFile.open(tmp_path / "bulk", **geometry, writable=True) as f:
        assert f.put_keys(keys[1000:], phy[1000:], ts[1000:]) == 199_999 - 1000
        assert f.put_keys(keys[:5], phy[:5], ts[:5]) == 0
    assert (tmp_path / "bulk").read_bytes() == (tmp_path / "seq").read_bytes()


@pytest.mark.parametrize("n_probe", [1, 15, 16, 17, 1_000])
def test_batch_select_equals_single_selects(tmp_path, n_probe):
    keys, phy, ts = workload(20_000, seed=3, distinct=3_000)  # chains with many hash matches
    rmqlab.build_index_file(tmp_path / "f", keys, phy, ts, hash_slot_num=257, index_num=30_000)
    rng = np.random.default_rng(n_probe)
    probe = [keys[i] for i in rng.integers(0, len(keys), n_probe)] + ["T3#absent", ""]
    with IndexFile.open(tmp_path / "f", hash_slot_num=257, index_num=30_000) as f:
        for max_num, begin, end in [(64, 0, LONG_MAX), (5, 0, LONG_MAX), (0, 0, LONG_MAX),
                                    (64, int(ts[5000]), int(ts[15000])), (3, int(ts[9000]), LONG_MAX)]:
            rooms = rng.integers(-1, 70, len(probe)).astype(np.int32)
            for threads in (1, 2, 3, 7):     # the keys shared out between threads: the same CSR answer
                batch = f.select_phy_offsets_many(probe, max_num, begin, end, threads=threads)
                roomed = f.select_phy_offsets_many(probe, max_num, begin, end, rooms=rooms, threads=threads)
                assert len(batch) == len(probe) and batch.starts[0] == 0
                assert batch.starts[-1] == len(batch.phy_offsets) and (np.diff(batch.starts) >= 0).all()
                for i, key in enumerate(probe):
                    want = f.select_phy_offsets(key, max_num, begin, end)
                    assert batch[i] == want
                    assert batch.entries_read[i] == len(f.trace_query(key, max_num, begin, end).steps)
                    assert roomed[i] == f.select_phy_offsets(key, int(rooms[i]), begin, end)


def test_batch_select_threads_default_and_bad_values(tmp_path):
    """Many keys walk on every usable core by default, few on one; threads < 1 is refused."""
    keys, phy, ts = workload(2_000, seed=4, distinct=500)
    rmqlab.build_index_file(tmp_path / "f", keys, phy, ts, hash_slot_num=257, index_num=3_000)
    assert indexfile._lookup_threads(indexfile.THREADED_LOOKUPS - 1) == 1
    assert indexfile._lookup_threads(indexfile.THREADED_LOOKUPS) == usable_cores()
    with IndexFile.open(tmp_path / "f", hash_slot_num=257, index_num=3_000) as f:
        with pytest.raises(ValueError, match="threads must be >= 1"):
            f.select_phy_offsets_many(keys[:10], threads=0)
        assert len(f.select_phy_offsets_many([], threads=4)) == 0


VOCAB = ["Aa", "BB", "polygenelubricants", "T#k", "T#\u00e9", "T#\U0001f600", ""] + [f"T#{i}" for i in range(40)]


def put_one_at_a_time(path, geometry, seed, rule, puts):
    with IndexFile.create(path, **geometry, **seed, slot_count_rule=rule) as f:
        return [f.put_key(k, p, t) for k, p, t in puts]


def put_in_batches(path, geometry, seed, rule, batches, stream_min_keys, monkeypatch):
    """put_keys batch after batch, reopening the file between batches (as a restarted broker
    would), with the pwrite path taken from `stream_min_keys` keys on."""
    monkeypatch.setattr(indexfile, "_STREAM_MIN_KEYS", stream_min_keys)
    written = []
    with IndexFile.create(path, **geometry, **seed, slot_count_rule=rule) as f:
        if batches:
            written.append(f.put_keys(*zip(*batches[0]) if batches[0] else ([], [], [])))
    for batch in batches[1:]:
        with IndexFile.open(path, **geometry, writable=True, slot_count_rule=rule) as f:
            written.append(f.put_keys(*zip(*batch) if batch else ([], [], [])))
    return written


@settings(deadline=None, max_examples=150,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(hash_slot_num=st.integers(1, 40), index_num=st.integers(1, 90),
       seed_phy=st.sampled_from([0, 777]), seed_ts=st.sampled_from([0, 1718000000000]),
       rule=st.sampled_from(["new-slot", "every-put"]),
       puts=st.lists(st.tuples(st.sampled_from(VOCAB), st.integers(0, 2**40),
                               st.integers(1717999990000, 1718000900000)), max_size=120),
       cuts=st.lists(st.integers(0, 120), max_size=3))
def test_pwrite_path_writes_the_bytes_of_the_map_path_and_of_put_key(
        monkeypatch, hash_slot_num, index_num, seed_phy, seed_ts, rule, puts, cuts):
    """Any geometry, key set (hashCode Integer.MIN_VALUE and negative hashes included), seeded
    header, batches continuing a partly filled file and batches overfilling it: put_keys through
    pwrite, put_keys through the map and put_key one at a time leave the same bytes."""
    geometry = dict(hash_slot_num=hash_slot_num, index_num=index_num)
    seed = dict(end_phy_offset=seed_phy, end_timestamp=seed_ts)
    bounds = sorted(set(c for c in cuts if c <= len(puts)))
    batches = [puts[a:b] for a, b in zip([0] + bounds, bounds + [len(puts)])]
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        results = put_one_at_a_time(d / "one", geometry, seed, rule, puts)
        by_map = put_in_batches(d / "map", geometry, seed, rule, batches, 10**9, monkeypatch)
        by_pwrite = put_in_batches(d / "pwrite", geometry, seed, rule, batches, 0, monkeypatch)
        assert by_map == by_pwrite and sum(by_pwrite) == results.count(True)
        want = (d / "one").read_bytes()
        assert (d / "map").read_bytes() == want
        assert (d / "pwrite").read_bytes() == want


@settings(deadline=None, max_examples=100)
@given(raw=st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=200),
       hash_slot_num=st.integers(1, 50), through_fd=st.booleans())
def test_put_entries_maps_raw_java_hashes_like_index_hash_many(raw, hash_slot_num, through_fd):
    """java_hashes=True takes String.hashCode values and stores abs(h), Integer.MIN_VALUE as 0,
    exactly as if the caller had passed index hashes."""
    raw = raw + [-2**31]
    n = len(raw)
    index_num = n + 1
    size = indexfile.Geometry(hash_slot_num, index_num).file_size
    phy = np.arange(n, dtype=np.int64) * 100
    ts = np.full(n, 1718000000000, dtype=np.int64)
    state = (0, 0, 0, 0, 0, 1)
    want = bytearray(size)
    index_hashes = np.array([0 if h == -2**31 else abs(h) for h in raw], dtype=np.int32)
    expect = _indexcore.put_entries(want, hash_slot_num, index_num, state, index_hashes, phy, ts, False)
    with tempfile.TemporaryFile() as fh:
        fh.truncate(size)
        got = bytearray(size)
        fd = fh.fileno() if through_fd else -1
        state_got = _indexcore.put_entries(got, hash_slot_num, index_num, state,
                                           np.array(raw, dtype=np.int32), phy, ts, False, fd, True)
        if through_fd:
            fh.seek(0)
            got = bytearray(fh.read())
    assert state_got == expect
    assert got == want
    entries = np.frombuffer(bytes(want), indexfile.ENTRY.dtype, count=index_num,
                            offset=indexfile.Geometry(hash_slot_num, index_num).entries_offset)
    assert entries["key_hash"][1:].tolist() == index_hashes.tolist()


def test_reference_model_agrees_on_the_raw_hash_of_min_value():
    """The key whose hashCode is Integer.MIN_VALUE, which the raw-hash path maps to 0."""
    assert java_hash("polygenelubricants") == -2**31 and stored_hash("polygenelubricants") == 0


def test_a_failed_pwrite_raises_naming_the_file_and_leaves_the_header(tmp_path, monkeypatch):
    """A write error (here: the descriptor is read-only) raises OSError with the path; the
    in-memory header and the slot table on disk stay as they were, so the file still reads as
    the keys put before."""
    monkeypatch.setattr(indexfile, "_STREAM_MIN_KEYS", 0)
    path = tmp_path / "f"
    f = IndexFile.create(path, hash_slot_num=7, index_num=20)
    assert f.put_keys(["a", "b"], [1, 2], [1718000000000] * 2) == 2
    before = f.header
    slots_before = f.slots.copy()
    writable = f._file
    f._file = open(path, "rb")
    try:
        with pytest.raises(OSError) as err:
            f.put_keys(["c", "d"], [3, 4], [1718000000000] * 2)
    finally:
        f._file.close()
        f._file = writable
    assert err.value.filename == str(path)
    assert f.header == before
    assert (f.slots == slots_before).all()
    f.close()
    with IndexFile.open(path, hash_slot_num=7, index_num=20) as g:
        assert g.select_phy_offsets("a", 64, 0, LONG_MAX) == [1]
        assert g.select_phy_offsets("c", 64, 0, LONG_MAX) == []


def test_put_entries_rejects_a_file_shorter_than_its_geometry(tmp_path):
    """The slot table is read through the descriptor: a file cut short under the map must not
    be read past its end."""
    size = indexfile.Geometry(8, 4).file_size
    with open(tmp_path / "short", "w+b") as fh:
        fh.truncate(30)
        with pytest.raises(OSError):
            _indexcore.put_entries(bytearray(size), 8, 4, (0, 0, 0, 0, 0, 1),
                                   np.zeros(2, np.int32), np.zeros(2, np.int64), np.zeros(2, np.int64),
                                   False, fh.fileno())


@settings(deadline=None, max_examples=200)
@given(data=st.data(), hash_slot_num=st.integers(1, 40), n=st.integers(1, 300), threads=st.integers(2, 6),
       every_put=st.booleans(), first_count=st.sampled_from([0, 1, 2, 7]), spare=st.integers(-5, 10),
       stale_slots=st.booleans())
def test_put_entries_on_threads_writes_the_bytes_of_one_thread(data, hash_slot_num, n, threads, every_put,
                                                               first_count, spare, stale_slots):
    """put_entries(threads=k) through the descriptor (the chains split by slot range, the entries
    by key range) writes the same file and returns the same header as one thread putting the
    keys one after another: with few slots (long chains), a file that fills up part way, a
    header whose index_count starts at 0, 1 or further on (the begin timestamp still moving, or
    not), either slot-count rule, and slot values a reader must treat as empty (<= 0, or newer
    than the entry being put)."""
    index_num = max(1, first_count + n + spare)
    size = indexfile.Geometry(hash_slot_num, index_num).file_size
    raw = np.array(data.draw(st.lists(st.integers(-2**31, 2**31 - 1), min_size=n, max_size=n)), dtype=np.int32)
    phy = np.array(data.draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n)), dtype=np.int64)
    ts = 1718000000000 + np.array(data.draw(st.lists(st.integers(-5000, 10**7), min_size=n, max_size=n)),
                                  dtype=np.int64)
    start = bytearray(size)
    if stale_slots:
        stale = data.draw(st.lists(st.integers(-3, index_num + 3), min_size=hash_slot_num, max_size=hash_slot_num))
        np.frombuffer(start, ">i4", count=hash_slot_num, offset=indexfile.HEADER.size)[:] = stale
    state = (1717999990000 if first_count > 1 else 0, 0, 0, 0, 0, first_count)
    files = []
    for k in (1, threads):
        with tempfile.TemporaryFile() as fh:
            fh.write(start)
            fh.flush()
            buf = bytearray(start)
            header = _indexcore.put_entries(buf, hash_slot_num, index_num, state, raw, phy, ts, every_put,
                                            fh.fileno(), True, k)
            fh.seek(0)
            files.append((header, fh.read()))
    assert files[1][0] == files[0][0]
    assert files[1][1] == files[0][1]


def test_build_index_file_on_threads_by_default_from_threaded_put_keys(tmp_path, monkeypatch):
    """build_index_file of :data:`~rmqlab.formats.indexfile.THREADED_PUT_KEYS` keys or more puts
    on every usable core by default, and the file is the one a single thread writes; a bad
    `threads` is refused before anything is written."""
    n = indexfile.THREADED_PUT_KEYS + 1000
    keys = [f"TopicTest#ORDER_{k % 70_001}" for k in range(n)]       # chains of up to 8 keys
    phy = np.arange(n, dtype=np.int64) * 200
    ts = 1718000000000 + np.arange(n, dtype=np.int64) // 7
    asked = []
    real = _indexcore.put_entries
    monkeypatch.setattr(_indexcore, "put_entries", lambda *a: asked.append(a[-1]) or real(*a))
    geometry = dict(hash_slot_num=50_021, index_num=n + 10)
    assert rmqlab.build_index_file(tmp_path / "default", keys, phy, ts, **geometry) == n
    assert rmqlab.build_index_file(tmp_path / "one", keys, phy, ts, threads=1, **geometry) == n
    assert asked == [usable_cores(), 1]
    assert (tmp_path / "default").read_bytes() == (tmp_path / "one").read_bytes()
    with pytest.raises(ValueError, match="threads"):
        rmqlab.build_index_file(tmp_path / "bad", keys, phy, ts, threads=0, **geometry)
    assert not (tmp_path / "bad").exists()
