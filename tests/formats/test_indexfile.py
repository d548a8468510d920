"""IndexFile against a brute-force reference model, plus unit behaviour.

The reference model below is an independent re-statement of design.md §1 (RocketMQ's
IndexFile.putKey / selectPhyOffset / isTimeMatched and IndexHeader) over plain dicts and
`struct`; it never calls rmqlab's hashing, layout or walk code. Hypothesis drives both with
tiny geometries so that slot sharing, identical hash codes, Integer.MIN_VALUE hashes, time
clamping, 64-bit wrap-around and full files all happen often.
"""
from __future__ import annotations

import os
import random
import shutil
import struct
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_model import java_hash as jhash
from reference_model import stored_hash

import rmqlab
from rmqlab import (
    Geometry,
    GeometryError,
    IndexFile,
    ReadOnlyError,
    build_index_file,
    read_header,
)
from rmqlab.formats.indexfile import time_diff_seconds

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
HEADER_FMT = ">qqqqii"   # begin_ts, end_ts, begin_phy, end_phy, hash_slot_count, index_count
ENTRY_FMT = ">iqii"      # key_hash, phy_offset, time_diff, prev_index
RULES = ("new-slot", "every-put")

# --------------------------------------------------------------------------- reference model


def wrap64(x: int) -> int:
    return ((x + 2**63) % 2**64) - 2**63


def java_div(a: int, b: int) -> int:
    """Java integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def ref_time_diff(store_ts: int, begin_ts: int) -> int:
    d = java_div(wrap64(store_ts - begin_ts), 1000)
    if begin_ts <= 0:
        return 0
    if d > INT_MAX:
        return INT_MAX
    if d < 0:
        return 0
    return d


def ref_time_matched(hb: int, he: int, begin: int, end: int) -> bool:
    r = begin < hb and end > he
    r = r or (hb <= begin <= he)
    r = r or (hb <= end <= he)
    return r


class RefIndex:
    """IndexFile as a dict of slots and a dict of entries."""

    def __init__(self, hsn, num, end_phy=0, end_ts=0, rule="new-slot"):
        self.hsn, self.num, self.rule = hsn, num, rule
        self.slot: dict[int, int] = {}
        self.ent: dict[int, tuple[int, int, int, int]] = {}
        self.begin_ts = self.end_ts = end_ts if end_ts > 0 else 0
        self.begin_phy = self.end_phy = end_phy if end_phy > 0 else 0
        self.hsc = 0
        self.count = 1

    def put(self, key, phy, ts) -> bool:
        if self.count >= self.num:
            return False
        h = stored_hash(key)
        s = h % self.hsn
        head = self.slot.get(s, 0)
        if head <= 0 or head > self.count:
            head = 0
        td = ref_time_diff(ts, self.begin_ts)
        n = self.count
        self.ent[n] = (h, phy, td, head)
        self.slot[s] = n
        if n <= 1:
            self.begin_ts, self.begin_phy = ts, phy
        if head == 0 or self.rule == "every-put":
            self.hsc += 1
        self.count += 1
        self.end_ts, self.end_phy = ts, phy
        return True

    def select(self, key, max_num, begin, end) -> list[int]:
        out: list[int] = []
        h = stored_hash(key)
        cur = self.slot.get(h % self.hsn, 0)
        if cur <= 0 or cur > self.count or self.count <= 1:
            return out
        while True:
            if len(out) >= max_num:
                break
            kh, phy, td, prev = self.ent.get(cur, (0, 0, 0, 0))
            if td < 0:
                break
            t = wrap64(self.begin_ts + td * 1000)
            if kh == h and begin <= t <= end:
                out.append(phy)
            if prev <= 0 or prev > self.count or prev == cur or t < begin:
                break
            cur = prev
        return out

    def time_matched(self, begin, end) -> bool:
        return ref_time_matched(self.begin_ts, self.end_ts, begin, end)

    @property
    def full(self) -> bool:
        return self.count >= self.num

    def header(self) -> dict:
        return dict(begin_timestamp=self.begin_ts, end_timestamp=self.end_ts,
                    begin_phy_offset=self.begin_phy, end_phy_offset=self.end_phy,
                    hash_slot_count=self.hsc, index_count=self.count)

    def to_bytes(self) -> bytes:
        """The file after close (flush writes the whole header)."""
        b = bytearray(40 + 4 * self.hsn + 20 * self.num)
        struct.pack_into(HEADER_FMT, b, 0, self.begin_ts, self.end_ts, self.begin_phy,
                         self.end_phy, self.hsc, self.count)
        for s, v in self.slot.items():
            struct.pack_into(">i", b, 40 + 4 * s, v)
        for n, e in self.ent.items():
            struct.pack_into(ENTRY_FMT, b, 40 + 4 * self.hsn + 20 * n, *e)
        return bytes(b)


def test_reference_hash_is_java():
    # Known Java values; the model's own hash must be right before it can judge anything.
    assert jhash("") == 0 and jhash("a") == 97
    assert jhash("Aa") == jhash("BB") == 2112
    assert jhash("polygenelubricants") == INT_MIN and stored_hash("polygenelubricants") == 0
    assert jhash("TopicTest#maxCeRCgwd") == INT_MAX and jhash("TopicTest#mnSrBlxod") == INT_MIN + 1
    assert jhash("TopicTest#p8JxBMac") == -jhash("TopicTest#nWzBncna") == 208574437


# ------------------------------------------------------------------------------ strategies

KEYS = [
    "T#a", "T#b", "T#c", "Aa", "BB", "AaAa", "BBBB", "AaBB", "polygenelubricants", "", "#",
    "T#\U0001F600", "主题#键", "TopicTest#p8JxBMac", "TopicTest#nWzBncna",
    "TopicTest#maxCeRCgwd", "TopicTest#mnSrBlxod", "TopicTest#zvXCXcaM",
]
QUERY_KEYS = KEYS + ["T#zz", "never-put"]
BASE = 1_718_000_000_000
SPECIAL_TS = [0, -1, 1, 999, 1000, 1001, 1999, -1000, -1001, LONG_MAX, LONG_MAX - 1, LONG_MAX - 999,
              LONG_MIN, LONG_MIN + 1, INT_MAX * 1000, (INT_MAX + 1) * 1000, BASE,
              BASE + INT_MAX * 1000, BASE + INT_MAX * 1000 + 1000]

timestamps = st.one_of(
    st.sampled_from(SPECIAL_TS),
    st.integers(BASE - 4000, BASE + 9000),     # equal, decreasing, same-second values
    st.integers(LONG_MIN, LONG_MAX),
)
phy_offsets = st.one_of(st.integers(0, 10**6), st.integers(LONG_MIN, LONG_MAX))
geometries = st.tuples(st.integers(1, 8), st.integers(1, 40))
seed_phy = st.sampled_from([0, -7, 1, 123_456, LONG_MAX])
seed_ts = st.one_of(st.sampled_from([0, -1, 1, BASE, LONG_MAX, LONG_MIN]), timestamps)


@st.composite
def puts_st(draw, vocab=None):
    """Puts over a small per-example vocabulary, so chains are long and keys repeat."""
    if vocab is None:
        vocab = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=6, unique=True))
    put = st.tuples(st.sampled_from(vocab), phy_offsets, timestamps)
    return draw(st.one_of(st.lists(put, max_size=6), st.lists(put, min_size=8, max_size=50)))


max_nums = st.one_of(st.integers(-1, 4), st.integers(-3, 45), st.sampled_from([0, -1, INT_MIN, INT_MAX, 64]))
begins = st.one_of(st.just(LONG_MIN), st.just(0), st.sampled_from([LONG_MAX, BASE]), timestamps)
ends = st.one_of(st.just(LONG_MAX), st.sampled_from([0, LONG_MIN, BASE + 3000]), timestamps)


@st.composite
def scenario(draw):
    """(puts, queries): queries mostly ask for the keys that were put, over wide time ranges."""
    vocab = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=6, unique=True))
    puts = draw(puts_st(vocab))
    qkey = st.sampled_from(vocab + ["T#zz", "never-put", "polygenelubricants"])
    queries = draw(st.lists(st.tuples(qkey, max_nums, begins, ends), min_size=1, max_size=25))
    return puts, queries


FILE_SETTINGS = settings(deadline=None, max_examples=120,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="rmqlab-test-"))


#: run in every example besides the drawn ones: every key, small max_num, whole time range
SWEEP = [(k, m, LONG_MIN, LONG_MAX) for k in QUERY_KEYS for m in (-1, 0, 1, 2, 3, 64)]


def _assert_queries(f: IndexFile, ref: RefIndex, queries):
    queries = list(queries) + SWEEP
    for key, max_num, begin, end in queries:
        want = ref.select(key, max_num, begin, end)
        assert f.select_phy_offsets(key, max_num, begin, end) == want, (key, max_num, begin, end)
        assert f.trace_query(key, max_num, begin, end).results == want
        assert f.is_time_matched(begin, end) == ref.time_matched(begin, end)
    # batch (C) per (max_num, begin, end) group, every query key in one call
    for max_num, begin, end in {(q[1], q[2], q[3]) for q in queries}:
        batch = f.select_phy_offsets_many(QUERY_KEYS, max_num, begin, end)
        assert len(batch) == len(QUERY_KEYS)
        for i, key in enumerate(QUERY_KEYS):
            assert batch[i] == ref.select(key, max_num, begin, end), (key, max_num, begin, end)


# ---------------------------------------------------------------------- model-based properties


@FILE_SETTINGS
@given(geometries, st.sampled_from(RULES), seed_phy, seed_ts, scenario())
def test_put_key_and_queries_match_reference(geom, rule, s_phy, s_ts, scen):
    puts, queries = scen
    hsn, num = geom
    d = _tmpdir()
    try:
        path = d / "20240610061524062"
        ref = RefIndex(hsn, num, s_phy, s_ts, rule)
        with IndexFile.create(path, hsn, num, s_phy, s_ts, slot_count_rule=rule) as f:
            assert f.header.as_dict() == ref.header()
            for key, phy, ts in puts:
                assert f.put_key(key, phy, ts) is ref.put(key, phy, ts)
                assert f.header.as_dict() == ref.header()
                assert f.is_write_full is ref.full
            _assert_queries(f, ref, queries)
        assert path.read_bytes() == ref.to_bytes()
        with IndexFile.open(path, hsn, num, slot_count_rule=rule) as g:
            assert g.header.as_dict() == ref.header()
            assert g.problems() == []
            g.check()
            _assert_queries(g, ref, queries)
    finally:
        shutil.rmtree(d)


def _as_container(keys, kind):
    if kind == "list":
        return list(keys)
    if kind == "numpy-str":
        return np.array(keys, dtype=str) if keys else np.array([], dtype="<U1")
    if kind == "numpy-object":
        return np.array(keys, dtype=object)
    if kind == "arrow":
        return pa.array(keys, type=pa.string())
    if kind == "arrow-large":
        return pa.array(keys, type=pa.large_string())
    if kind == "arrow-chunked":
        half = len(keys) // 2
        return pa.chunked_array([pa.array(keys[:half], pa.string()), pa.array(keys[half:], pa.string())],
                                type=pa.string())
    raise AssertionError(kind)


CONTAINERS = ["list", "numpy-str", "numpy-object", "arrow", "arrow-large", "arrow-chunked"]


@FILE_SETTINGS
@given(geometries, st.sampled_from(RULES), seed_phy, seed_ts, puts_st(),
       st.sampled_from(CONTAINERS), st.data())
def test_bulk_builders_equal_sequential_put_key(geom, rule, s_phy, s_ts, puts, kind, data):
    hsn, num = geom
    keys = [p[0] for p in puts]
    phys = [p[1] for p in puts]
    tss = [p[2] for p in puts]
    ref = RefIndex(hsn, num, s_phy, s_ts, rule)
    fits = sum(ref.put(*p) for p in puts)
    want = ref.to_bytes()
    d = _tmpdir()
    try:
        # 1. sequential put_key
        seq = d / "seq"
        with IndexFile.create(seq, hsn, num, s_phy, s_ts, slot_count_rule=rule) as f:
            for p in puts:
                f.put_key(*p)
        assert seq.read_bytes() == want
        # 2. build_index_file in one call, keys in various containers, offsets as arrays
        bulk = d / "bulk"
        n = build_index_file(bulk, _as_container(keys, kind), np.array(phys, dtype=np.int64),
                             np.array(tss, dtype=np.int64), hash_slot_num=hsn, index_num=num,
                             end_phy_offset=s_phy, end_timestamp=s_ts, slot_count_rule=rule)
        assert n == fits == min(len(puts), num - 1)
        assert bulk.read_bytes() == want
        # 3. put_keys in chunks, a plain put_key in between
        cut1 = data.draw(st.integers(0, len(puts)), label="cut1")
        cut2 = data.draw(st.integers(cut1, len(puts)), label="cut2")
        chunked = d / "chunked"
        with IndexFile.create(chunked, hsn, num, s_phy, s_ts, slot_count_rule=rule) as f:
            got = f.put_keys(_as_container(keys[:cut1], kind), phys[:cut1], tss[:cut1])
            for p in puts[cut1:cut2]:
                got += f.put_key(*p)
            got += f.put_keys(keys[cut2:], np.array(phys[cut2:], dtype=np.int64), tss[cut2:])
            assert got == fits
        assert chunked.read_bytes() == want
        # 4. partially filled file, closed, re-opened writable, continued in bulk / one by one
        for how in ("bulk", "single"):
            part = d / f"part-{how}"
            with IndexFile.create(part, hsn, num, s_phy, s_ts, slot_count_rule=rule) as f:
                for p in puts[:cut1]:
                    f.put_key(*p)
            with IndexFile.open(part, hsn, num, writable=True, slot_count_rule=rule) as f:
                if how == "bulk":
                    f.put_keys(keys[cut1:], phys[cut1:], tss[cut1:])
                else:
                    for p in puts[cut1:]:
                        f.put_key(*p)
            assert part.read_bytes() == want, how
        # every file put_key/put_keys produced is healthy
        with IndexFile.open(bulk, hsn, num, slot_count_rule=rule) as g:
            assert g.problems() == []
    finally:
        shutil.rmtree(d)


@FILE_SETTINGS
@given(geometries, seed_phy, seed_ts, puts_st())
def test_continue_never_flushed_file(geom, s_phy, s_ts, puts):
    """A file whose counts were never flushed (all-zero counts on disk) loads as index_count 1."""
    hsn, num = geom
    ref = RefIndex(hsn, num, s_phy, s_ts)
    for p in puts:
        ref.put(*p)
    d = _tmpdir()
    try:
        a = d / "a"
        f = IndexFile.create(a, hsn, num, s_phy, s_ts)
        snapshot = a.read_bytes()          # as on disk before any flush
        f.close()
        assert struct.unpack_from(">ii", snapshot, 32) == (0, 0)
        b = d / "b"
        b.write_bytes(snapshot)
        with IndexFile.open(b, hsn, num, writable=True) as g:
            assert g.header.index_count == 1
            g.put_keys([p[0] for p in puts], [p[1] for p in puts], [p[2] for p in puts])
        assert b.read_bytes() == ref.to_bytes()
    finally:
        shutil.rmtree(d)


@settings(deadline=None, max_examples=200)
@given(timestamps, st.one_of(seed_ts, timestamps))
def test_time_diff_seconds_matches_java(store_ts, begin_ts):
    assert time_diff_seconds(store_ts, begin_ts) == ref_time_diff(store_ts, begin_ts)


def test_time_diff_seconds_examples():
    assert time_diff_seconds(BASE + 1999, BASE) == 1          # truncated, not rounded
    assert time_diff_seconds(BASE + 999, BASE) == 0
    assert time_diff_seconds(BASE + 1000, BASE) == 1
    assert time_diff_seconds(BASE - 1, BASE) == 0             # negative clamps to 0
    assert time_diff_seconds(BASE - 5000, BASE) == 0
    assert time_diff_seconds(BASE + 5000, 0) == 0             # begin <= 0: always 0
    assert time_diff_seconds(BASE + 5000, -1) == 0
    assert time_diff_seconds(BASE + INT_MAX * 1000, BASE) == INT_MAX
    assert time_diff_seconds(BASE + INT_MAX * 1000 + 999, BASE) == INT_MAX
    assert time_diff_seconds(BASE + (INT_MAX + 1) * 1000, BASE) == INT_MAX  # clamped
    assert time_diff_seconds(LONG_MAX, 1) == INT_MAX
    # Java long subtraction wraps: LONG_MIN - 1 == LONG_MAX, so huge positive -> clamped
    assert time_diff_seconds(LONG_MIN, 1) == INT_MAX
    # ... and LONG_MAX - (-1) would wrap negative, but begin <= 0 forces 0 anyway
    assert time_diff_seconds(LONG_MAX, -1) == 0


# ------------------------------------------------------------------ select_many == per-key


def _random_inputs(rng: random.Random, n: int, vocab: list[str]):
    keys = [rng.choice(vocab) for _ in range(n)]
    phys = [rng.choice([rng.randrange(0, 2**40), rng.randrange(LONG_MIN, LONG_MAX)]) for _ in range(n)]
    start = rng.choice([0, -5, BASE, LONG_MAX - 10_000_000, 1])
    ts, tss = start, []
    for _ in range(n):
        r = rng.random()
        if r < 0.15:
            pass                                       # equal: ts stays
        elif r < 0.3:
            ts = ts - rng.randrange(0, 5000)           # out of order
        elif r < 0.33:
            ts = rng.randrange(LONG_MIN, LONG_MAX)     # anywhere
        else:
            ts = ts + rng.randrange(0, 3000)
        ts = wrap64(ts)
        tss.append(ts)
    return keys, phys, tss


def test_seeded_stress_check_and_model():
    """200 seeded files of various geometries: builder bytes == model, check() passes, and the
    batch query equals the model for every key."""
    d = _tmpdir()
    try:
        for seed in range(200):
            rng = random.Random(seed)
            hsn = rng.choice([1, 2, 3, 7, 16, 64, 251])
            num = rng.choice([1, 2, 3, 10, 50, 200, 400])
            vocab = [f"T#{rng.randrange(10**6)}" for _ in range(rng.choice([1, 3, 20, 300]))]
            vocab += ["Aa", "BB", "polygenelubricants"]
            n = rng.randrange(0, num + 20)
            keys, phys, tss = _random_inputs(rng, n, vocab)
            rule = rng.choice(RULES)
            s_phy, s_ts = rng.choice([(0, 0), (0, 0), (777, BASE - 1234), (5, -5)])
            ref = RefIndex(hsn, num, s_phy, s_ts, rule)
            for p in zip(keys, phys, tss):
                ref.put(*p)
            path = d / f"f{seed}"
            build_index_file(path, keys, phys, tss, hash_slot_num=hsn, index_num=num,
                             end_phy_offset=s_phy, end_timestamp=s_ts, slot_count_rule=rule)
            assert path.read_bytes() == ref.to_bytes(), seed
            with IndexFile.open(path, hsn, num, slot_count_rule=rule) as f:
                f.check()
                qkeys = vocab[:50] + ["absent"]
                for max_num, begin, end in [(64, 0, LONG_MAX), (3, 0, LONG_MAX),
                                            (INT_MAX, tss[len(tss) // 2] if tss else 0, LONG_MAX),
                                            (64, LONG_MIN, BASE), (0, 0, LONG_MAX)]:
                    batch = f.select_phy_offsets_many(qkeys, max_num, begin, end)
                    for i, k in enumerate(qkeys):
                        want = ref.select(k, max_num, begin, end)
                        assert batch[i] == want, (seed, k, max_num, begin, end)
                        assert f.select_phy_offsets(k, max_num, begin, end) == want
            path.unlink()
    finally:
        shutil.rmtree(d)


def test_select_many_hashes_argument_and_frame(tmp_path):
    keys = ["T#a", "T#b", "T#a", "Aa", "BB"]
    path = tmp_path / "f"
    build_index_file(path, keys, [10, 20, 30, 40, 50], [BASE, BASE + 1, BASE + 2, BASE + 3, BASE + 4],
                     hash_slot_num=4, index_num=16)
    with IndexFile.open(path, 4, 16) as f:
        q = ["T#a", "BB", "zz"]
        a = f.select_phy_offsets_many(q)
        b = f.select_phy_offsets_many(None, hashes=np.array([stored_hash(k) for k in q], np.int32))
        assert [a[i] for i in range(3)] == [b[i] for i in range(3)] == [[30, 10], [50, 40], []]
        assert a.counts().tolist() == [2, 2, 0]
        df = a.to_frame(q)
        assert df["key"].tolist() == ["T#a", "T#a", "BB", "BB"]
        assert df["phy_offset"].tolist() == [30, 10, 50, 40]
        empty = f.select_phy_offsets_many([])
        assert len(empty) == 0 and empty.phy_offsets.tolist() == []


# ------------------------------------------------------------------------------ unit behaviour


def test_entry_zero_never_written_and_count_is_n_plus_1(tmp_path):
    path = tmp_path / "f"
    hsn, num = 4, 10
    with IndexFile.create(path, hsn, num) as f:
        for i in range(5):
            assert f.put_key(f"T#{i}", 1000 + i, BASE + i * 1000)
        assert f.header.index_count == 6
        assert f.header.keys == 5
    data = path.read_bytes()
    eoff = 40 + 4 * hsn
    assert data[eoff:eoff + 20] == bytes(20)                      # entry 0 untouched
    assert struct.unpack_from(">i", data, 36)[0] == 6
    assert read_header(path).index_count == 6
    for n in range(1, 6):                                         # entries 1..5 written in order
        kh, phy, td, prev = struct.unpack_from(ENTRY_FMT, data, eoff + 20 * n)
        assert (kh, phy, td) == (stored_hash(f"T#{n - 1}"), 1000 + n - 1, n - 1)
    assert data[eoff + 20 * 6:] == bytes(20 * 4)


def test_capacity_is_index_num_minus_one(tmp_path):
    with IndexFile.create(tmp_path / "f", 2, 4) as f:
        assert [f.put_key("k", i, BASE) for i in range(5)] == [True, True, True, False, False]
        assert f.is_write_full and f.header.index_count == 4
        assert f.geometry.capacity == 3


def test_new_file_header_on_disk_before_and_after_flush(tmp_path):
    path = tmp_path / "f"
    f = IndexFile.create(path, 4, 8)
    assert path.stat().st_size == 40 + 16 + 160
    assert path.read_bytes() == bytes(40 + 16 + 160)               # never flushed: all zero
    assert f.header.index_count == 1                               # but the live count is 1
    f.flush()
    assert struct.unpack_from(HEADER_FMT, path.read_bytes(), 0) == (0, 0, 0, 0, 0, 1)
    f.close()
    assert read_header(path).as_dict() == dict(begin_timestamp=0, end_timestamp=0, begin_phy_offset=0,
                                               end_phy_offset=0, hash_slot_count=0, index_count=1)


def test_create_refuses_existing_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    with pytest.raises(FileExistsError):
        IndexFile.create(path, 4, 8)
    IndexFile.create(path, 4, 8, overwrite=True).close()
    assert path.stat().st_size == 40 + 16 + 160


def test_follow_on_file_seeded_by_constructor(tmp_path):
    path = tmp_path / "f"
    seed_ts, seed_phy = BASE, 9_000
    f = IndexFile.create(path, 4, 8, end_phy_offset=seed_phy, end_timestamp=seed_ts)
    # the constructor's setters write through at once; counts stay 0 until a put or flush
    assert struct.unpack_from(HEADER_FMT, path.read_bytes(), 0) == (seed_ts, seed_ts, seed_phy, seed_phy, 0, 0)
    assert f.header.begin_timestamp == f.header.end_timestamp == seed_ts
    assert f.is_time_matched(seed_ts, seed_ts) and not f.is_time_matched(seed_ts + 1, seed_ts + 5)
    # first put: its time diff is relative to the seed, then begin values are replaced
    assert f.put_key("T#a", 9_500, seed_ts + 5_500)
    f.put_key("T#a", 9_600, seed_ts + 7_900)
    f.close()
    data = path.read_bytes()
    assert struct.unpack_from(HEADER_FMT, data, 0) == (seed_ts + 5_500, seed_ts + 7_900, 9_500, 9_600, 1, 3)
    e1 = struct.unpack_from(ENTRY_FMT, data, 40 + 16 + 20)
    e2 = struct.unpack_from(ENTRY_FMT, data, 40 + 16 + 40)
    assert e1 == (stored_hash("T#a"), 9_500, 5, 0)      # 5 s after the seed
    assert e2 == (stored_hash("T#a"), 9_600, 2, 1)      # 2 s after the first put
    with IndexFile.open(path, 4, 8) as g:
        # entry 1 reads back as begin + 5 s = seed + 10.5 s: the quirk is visible in queries
        t = g.trace_query("T#a")
        assert [s.time_read for s in t.steps] == [seed_ts + 5_500 + 2000, seed_ts + 5_500 + 5000]
        assert g.select_phy_offsets("T#a", 64, seed_ts + 7_000, LONG_MAX) == [9_600, 9_500]
        # entry 1 reads as later than entry 2, but the walk stops at entry 2 (older than begin)
        assert g.select_phy_offsets("T#a", 64, seed_ts + 10_000, LONG_MAX) == []


def test_negative_seeds_are_ignored(tmp_path):
    with IndexFile.create(tmp_path / "f", 4, 8, end_phy_offset=-1, end_timestamp=-5) as f:
        assert f.header.as_dict() == dict(begin_timestamp=0, end_timestamp=0, begin_phy_offset=0,
                                          end_phy_offset=0, hash_slot_count=0, index_count=1)


def test_slot_count_rules(tmp_path):
    for rule, want in (("new-slot", 2), ("every-put", 4)):
        with IndexFile.create(tmp_path / rule, 64, 10, slot_count_rule=rule) as f:
            for k in ("Aa", "BB", "Aa", "T#b"):    # Aa/BB share a slot
                f.put_key(k, 1, BASE)
            assert f.header.hash_slot_count == want
        with IndexFile.open(tmp_path / rule, 64, 10, slot_count_rule=rule) as g:
            assert g.problems() == []
        other = "every-put" if rule == "new-slot" else "new-slot"
        with IndexFile.open(tmp_path / rule, 64, 10, slot_count_rule=other) as g:
            [p] = g.problems()
            assert (p.offset, p.field) == (32, "header.hash_slot_count")
    with pytest.raises(ValueError):
        IndexFile.create(tmp_path / "bad", 4, 8, slot_count_rule="sometimes")


# ----------------------------------------------------------------------------- Geometry.infer


def test_geometry_default_size_infers():
    g = Geometry.infer(420_000_040)
    assert (g.hash_slot_num, g.index_num) == (5_000_000, 20_000_000)
    assert g.file_size == 420_000_040 and g.capacity == 19_999_999
    assert g.entries_offset == 40 + 4 * 5_000_000
    assert g.entry_offset(3) == 40 + 4 * 5_000_000 + 60 and g.slot_offset(7) == 68


def test_geometry_other_size_needs_an_argument():
    size = 40 + 4 * 64 + 20 * 100
    with pytest.raises(GeometryError) as ei:
        Geometry.infer(size, path="/x/f")
    msg = str(ei.value)
    assert "hash_slot_num" in msg and "index_num" in msg and str(size) in msg and "/x/f" in msg
    assert (ei.value.path, ei.value.offset, ei.value.field) == ("/x/f", size, "file size")


def test_geometry_one_argument_infers_the_other():
    size = 40 + 4 * 64 + 20 * 100
    assert Geometry.infer(size, hash_slot_num=64) == Geometry(64, 100)
    assert Geometry.infer(size, index_num=100) == Geometry(64, 100)
    assert Geometry.infer(size, 64, 100) == Geometry(64, 100)
    # 64 slots -> 2256 bytes of entries = 112.8 entries: impossible
    with pytest.raises(GeometryError):
        Geometry.infer(size + 4, hash_slot_num=64)
    with pytest.raises(GeometryError):
        Geometry.infer(size + 2, index_num=100)
    with pytest.raises(GeometryError):            # nothing left for entries
        Geometry.infer(40 + 4 * 64, hash_slot_num=64)


def test_geometry_inconsistent_arguments_rejected():
    size = 40 + 4 * 64 + 20 * 100
    with pytest.raises(GeometryError) as ei:
        Geometry.infer(size, 64, 101)
    assert ei.value.offset == size and ei.value.field == "file size"
    assert str(40 + 4 * 64 + 20 * 101) in str(ei.value)
    for bad in (0, -1, 2**31):
        with pytest.raises(ValueError):
            Geometry(bad, 10)
        with pytest.raises(ValueError):
            Geometry(10, bad)


def test_open_default_size_sparse_file(tmp_path):
    path = tmp_path / "20240610061524062"
    with open(path, "wb") as fh:
        fh.truncate(420_000_040)
    with IndexFile.open(path) as f:
        assert f.geometry == Geometry(5_000_000, 20_000_000)
        assert f.header.index_count == 1
        assert f.select_phy_offsets("TopicTest#k", 64, 0, LONG_MAX) == []
        assert f.trace_query("TopicTest#k").stop == "empty-slot"


# ---------------------------------------------------------------------------- NumPy views


def test_views_read_only_and_match_struct(tmp_path):
    path = tmp_path / "f"
    hsn, num = 8, 12
    with IndexFile.create(path, hsn, num) as f:
        for i, k in enumerate(["Aa", "BB", "T#a", "T#b", "polygenelubricants", "T#a"]):
            f.put_key(k, 2**40 + i, BASE + 1500 * i)
    data = path.read_bytes()
    with IndexFile.open(path, hsn, num) as f:
        slots, entries, used = f.slots, f.entries, f.used_entries
        for v in (slots, entries, used):
            assert not v.flags.writeable
        with pytest.raises(ValueError):
            slots[0] = 1
        with pytest.raises(ValueError):
            entries["phy_offset"][1] = 1
        assert slots.tolist() == [struct.unpack_from(">i", data, 40 + 4 * i)[0] for i in range(hsn)]
        assert len(entries) == num and len(used) == 6
        for n in range(num):
            want = struct.unpack_from(ENTRY_FMT, data, 40 + 4 * hsn + 20 * n)
            got = tuple(int(entries[n][name]) for name in ("key_hash", "phy_offset", "time_diff", "prev_index"))
            assert got == want
            assert tuple(f.entry(n)) == want
        assert [int(x) for x in used["phy_offset"]] == [2**40 + i for i in range(6)]
        with pytest.raises(IndexError):
            f.entry(num)
        chain = list(f.chain(stored_hash("T#a") % hsn))
        assert chain[0] == 6 and all(stored_hash("T#a") % hsn == int(entries[n]["key_hash"]) % hsn
                                     for n in chain)


# --------------------------------------------------------------------------------- traces

SMALL_HSN, SMALL_NUM = 4, 8
T0 = 1_000_000


def _small(tmp_path) -> Path:
    """Slot 0 chain: entry 3 (Aa, 300) -> 2 (BB, 200) -> 1 (Aa, 100). Aa and BB share hash 2112."""
    path = tmp_path / "small"
    with IndexFile.create(path, SMALL_HSN, SMALL_NUM) as f:
        f.put_key("Aa", 100, T0)
        f.put_key("BB", 200, T0 + 2000)
        f.put_key("Aa", 300, T0 + 4000)
    data = path.read_bytes()
    assert struct.unpack_from(">i", data, 40)[0] == 3
    assert [struct.unpack_from(ENTRY_FMT, data, 56 + 20 * n) for n in (1, 2, 3)] == [
        (2112, 100, 0, 0), (2112, 200, 2, 1), (2112, 300, 4, 2)]
    return path


def _patch(src: Path, dst: Path, edits: list[tuple[int, str, int]]) -> Path:
    b = bytearray(src.read_bytes())
    for off, fmt, v in edits:
        struct.pack_into(fmt, b, off, v)
    dst.write_bytes(bytes(b))
    return dst


def _entry_off(n, field=0):
    return 40 + 4 * SMALL_HSN + 20 * n + {"key_hash": 0, "phy": 4, "time_diff": 12, "prev": 16}.get(field, 0)


def _other_key_in_slot0() -> str:
    # "polygenelubricants" stores hash 0 -> slot 0, but never equals 2112
    return "polygenelubricants"


def _empty_slot_key() -> str:
    for k in ("T#a", "T#b", "T#c", "#", "x"):
        if stored_hash(k) % SMALL_HSN != 0:
            return k
    raise AssertionError


def _trace(path, key, max_num=64, begin=0, end=LONG_MAX, strict=True):
    with IndexFile.open(path, SMALL_HSN, SMALL_NUM, strict=strict) as f:
        t = f.trace_query(key, max_num, begin, end)
        assert t.results == f.select_phy_offsets(key, max_num, begin, end)
        batch = f.select_phy_offsets_many([key], max_num, begin, end)
        assert batch[0] == t.results
        return t, int(batch.entries_read[0])


def test_trace_end_of_chain_records_every_entry(tmp_path):
    small = _small(tmp_path)
    t, read = _trace(small, "Aa")
    assert t.stop == "end-of-chain" and t.results == [300, 200, 100]
    assert [s.entry for s in t.steps] == [3, 2, 1] and read == 3
    assert [(s.hash_match, s.time_match, s.returned) for s in t.steps] == [
        (True, True, True), (True, True, True), (True, True, True)]   # BB has Aa's hash
    t, _ = _trace(small, "BB")
    assert t.results == [300, 200, 100]       # same stored hash: Aa's offsets come back too
    t, _ = _trace(small, _other_key_in_slot0())
    assert t.results == [] and t.stop == "end-of-chain"
    assert [(s.hash_match, s.time_match, s.returned) for s in t.steps] == [(False, True, False)] * 3
    assert [s.time_read for s in t.steps] == [T0 + 4000, T0 + 2000, T0]
    assert [s.prev_index for s in t.steps] == [2, 1, 0]
    assert t.slot == 0 and t.slot_value == 3 and t.key_hash == 0
    frame = t.to_frame()
    assert frame["entry"].tolist() == [3, 2, 1] and len(frame.columns) == 9
    assert "end-of-chain" in str(t)


def test_trace_time_flags_and_older_than_begin(tmp_path):
    path = _small(tmp_path)
    t, read = _trace(path, "Aa", begin=T0 + 3000, end=LONG_MAX)
    assert t.stop == "older-than-begin" and t.results == [300]
    assert [(s.entry, s.time_match, s.returned) for s in t.steps] == [(3, True, True), (2, False, False)]
    assert read == 2
    t, _ = _trace(path, "Aa", begin=0, end=T0 + 1000)
    assert t.stop == "end-of-chain" and t.results == [100]
    assert [s.time_match for s in t.steps] == [False, False, True]
    t, _ = _trace(path, "Aa", begin=T0 + 5000, end=T0)          # inverted range
    assert t.results == [] and t.stop == "older-than-begin" and len(t.steps) == 1


def test_trace_max_num(tmp_path):
    path = _small(tmp_path)
    t, read = _trace(path, "Aa", max_num=1)
    assert t.stop == "max-num" and t.results == [300] and len(t.steps) == 1 and read == 1
    for m in (0, -1, INT_MIN):
        t, read = _trace(path, "Aa", max_num=m)
        assert t.stop == "max-num" and t.results == [] and t.steps == [] and read == 0


def test_trace_empty_slot_and_empty_file(tmp_path):
    path = _small(tmp_path)
    t, read = _trace(path, _empty_slot_key())
    assert (t.stop, t.slot_value, t.steps, read) == ("empty-slot", 0, [], 0)
    # slot pointing past index_count is treated as empty (strict open still works: header ok)
    p = _patch(path, tmp_path / "slot-past", [(40, ">i", 5)])
    t, _ = _trace(p, "Aa")
    assert (t.stop, t.slot_value, t.results) == ("empty-slot", 5, [])
    # index_count 1 with a slot value of 1: "empty-file"
    p = _patch(path, tmp_path / "count1", [(36, ">i", 1), (32, ">i", 0), (40, ">i", 1)])
    t, _ = _trace(p, "Aa")
    assert (t.stop, t.results, t.steps) == ("empty-file", [], [])
    # a flushed empty file
    e = tmp_path / "empty"
    IndexFile.create(e, SMALL_HSN, SMALL_NUM).close()
    t, _ = _trace(e, "Aa")
    assert t.stop == "empty-slot"


def test_trace_prev_out_of_range(tmp_path):
    p = _patch(_small(tmp_path), tmp_path / "p", [(_entry_off(3, "prev"), ">i", 5)])   # count is 4
    t, read = _trace(p, "Aa", strict=False)
    assert (t.stop, t.results, [s.entry for s in t.steps], read) == ("prev-out-of-range", [300], [3], 1)


def test_prev_equal_to_index_count_reads_the_unwritten_entry(tmp_path):
    """Java only rejects prev > indexCount: prev == indexCount reads the next (all-zero) entry,
    whose stored hash 0 matches a key hashing to Integer.MIN_VALUE."""
    p = _patch(_small(tmp_path), tmp_path / "p", [(_entry_off(3, "prev"), ">i", 4)])
    t, _ = _trace(p, "polygenelubricants", strict=False)
    assert [s.entry for s in t.steps] == [3, 4] and t.results == [0] and t.stop == "end-of-chain"
    assert t.steps[1].time_read == T0


def test_trace_self_loop(tmp_path):
    p = _patch(_small(tmp_path), tmp_path / "p", [(_entry_off(2, "prev"), ">i", 2)])
    t, read = _trace(p, "Aa", strict=False)
    assert (t.stop, t.results, [s.entry for s in t.steps], read) == ("self-loop", [300, 200], [3, 2], 2)


def test_trace_cycle_without_matches_is_bounded(tmp_path):
    # 3 -> 2 -> 1 -> 3 -> ...: the broker never leaves a cycle that appends nothing
    p = _patch(_small(tmp_path), tmp_path / "p", [(_entry_off(1, "prev"), ">i", 3)])
    t, read = _trace(p, _other_key_in_slot0(), strict=False)
    assert t.stop == "cycle" and t.results == []
    assert 3 <= len(t.steps) <= SMALL_NUM and read == len(t.steps)
    assert [s.entry for s in t.steps[:3]] == [3, 2, 1]


def test_cycle_with_matches_returns_what_the_broker_returns(tmp_path):
    """Broker mode promises RocketMQ's answer. In a cycle whose entries match, Java keeps
    appending on every lap until maxNum is reached (it does terminate), so the answer is
    [300, 200, 100, 300, 200] for maxNum 5 -- not a list cut after index_count reads."""
    p = _patch(_small(tmp_path), tmp_path / "p", [(_entry_off(1, "prev"), ">i", 3)])
    t, _ = _trace(p, "Aa", max_num=5, strict=False)
    assert t.results == [300, 200, 100, 300, 200]
    assert t.stop == "max-num"


def test_trace_negative_time_diff(tmp_path):
    p = _patch(_small(tmp_path), tmp_path / "p", [(_entry_off(2, "time_diff"), ">i", -1)])
    t, read = _trace(p, "Aa", strict=False)
    assert t.stop == "negative-time-diff" and t.results == [300]
    # Java reads entry 2 (all four fields) before testing its time diff; the C batch counts it
    # as read, and QueryTrace documents steps as "every entry read in order".
    assert read == 2
    assert [s.entry for s in t.steps] == [3, 2]
    assert t.steps[1].time_diff == -1 and not t.steps[1].returned


def test_trace_entry_past_end(tmp_path):
    # index_count larger than index_num (strict=False): a slot may point past the file's end
    p = _patch(_small(tmp_path), tmp_path / "p", [(36, ">i", SMALL_NUM + 5), (40, ">i", SMALL_NUM + 2)])
    t, read = _trace(p, "Aa", strict=False)
    assert (t.stop, t.results, t.steps, read) == ("entry-past-end", [], [], 0)


# ---------------------------------------------------------------------- read-only guarantee


def test_read_only_open_never_modifies(tmp_path):
    path = _small(tmp_path)
    os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    before_bytes, before_mtime = path.read_bytes(), path.stat().st_mtime_ns
    f = IndexFile.open(path, SMALL_HSN, SMALL_NUM)
    assert not f.writable
    for key in ("Aa", "BB", "polygenelubricants", _empty_slot_key()):
        f.select_phy_offsets(key, 64, 0, LONG_MAX)
        f.trace_query(key, 2, T0 + 1000, LONG_MAX)
    f.select_phy_offsets_many(["Aa", "zz"], 64, 0, LONG_MAX)
    f.is_time_matched(0, LONG_MAX)
    f.problems()
    f.check()
    _ = f.header, f.slots, f.entries, f.used_entries, list(f.chain(0)), repr(f)
    for call in (lambda: f.put_key("Aa", 1, T0), lambda: f.put_keys(["Aa"], [1], [T0]), f.flush):
        with pytest.raises(ReadOnlyError) as ei:
            call()
        assert ei.value.path == str(path)
    f.close()
    f.close()  # idempotent
    assert path.read_bytes() == before_bytes
    assert path.stat().st_mtime_ns == before_mtime


def test_closed_writable_file_refuses_puts(tmp_path):
    f = IndexFile.create(tmp_path / "f", 4, 8)
    f.close()
    with pytest.raises(ValueError):
        f.put_key("Aa", 1, T0)


def test_put_key_argument_errors(tmp_path):
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        with pytest.raises(ValueError):
            f.put_key("Aa", 2**63, T0)
        with pytest.raises(ValueError):
            f.put_key("Aa", 1, -(2**63) - 1)
        with pytest.raises(TypeError):
            f.put_key(b"Aa", 1, T0)
        with pytest.raises(ValueError):
            f.put_keys(["Aa", "BB"], [1], [T0])
        with pytest.raises(ValueError):
            f.put_keys(["Aa"], [1, 2], [T0, T0])
        assert f.header.index_count == 1          # nothing was written by the failed calls
    assert read_header(tmp_path / "f").hash_slot_count == 0


def test_is_time_matched_is_closed_interval_overlap():
    rng = random.Random(7)
    d = _tmpdir()
    try:
        path = d / "f"
        with IndexFile.create(path, 2, 4) as f:
            f.put_key("a", 1, 10_000)
            f.put_key("a", 2, 20_000)
        with IndexFile.open(path, 2, 4) as f:
            pts = [LONG_MIN, 0, 9_999, 10_000, 10_001, 15_000, 19_999, 20_000, 20_001, LONG_MAX]
            for _ in range(300):
                b, e = rng.choice(pts), rng.choice(pts)
                assert f.is_time_matched(b, e) == ref_time_matched(10_000, 20_000, b, e)
                if b <= e:
                    assert f.is_time_matched(b, e) == (max(b, 10_000) <= min(e, 20_000))
    finally:
        shutil.rmtree(d)


def test_java_hash_vectorised_agrees(tmp_path):
    for k in KEYS:
        assert rmqlab.java_hash(k) == jhash(k)
        assert rmqlab.index_hash(k) == stored_hash(k)
    for kind in CONTAINERS:
        assert rmqlab.java_hash_many(_as_container(KEYS, kind)).tolist() == [jhash(k) for k in KEYS]
        assert rmqlab.index_hash_many(_as_container(KEYS, kind)).tolist() == [stored_hash(k) for k in KEYS]


# ------------------------------------------------------------------------ bulk edge cases


def test_bulk_over_100k_keys_matches_model(tmp_path):
    """Large batches take a different C path (slot table copied to huge pages); same bytes."""
    rng = random.Random(42)
    n, hsn, num = 130_000, 1009, 120_000
    vocab = [f"TopicTest#{i}" for i in range(40_000)] + ["Aa", "BB", "polygenelubricants"]
    keys = [rng.choice(vocab) for _ in range(n)]
    phys = list(range(0, 100 * n, 100))
    tss, ts = [], BASE
    for _ in range(n):
        ts += rng.choice([0, 0, 1, 7, 400, -300])
        tss.append(ts)
    ref = RefIndex(hsn, num)
    for p in zip(keys, phys, tss):
        ref.put(*p)
    want = ref.to_bytes()
    a = tmp_path / "a"
    assert build_index_file(a, pa.array(keys), phys, tss, hash_slot_num=hsn, index_num=num) == num - 1
    assert a.read_bytes() == want
    b = tmp_path / "b"                          # chunks below the large-batch threshold
    with IndexFile.create(b, hsn, num) as f:
        for lo in range(0, n, 50_000):
            f.put_keys(keys[lo:lo + 50_000], phys[lo:lo + 50_000], tss[lo:lo + 50_000])
    assert b.read_bytes() == want


def test_put_keys_refuses_what_put_key_refuses(tmp_path):
    """put_key rejects an offset or timestamp outside Java's long; put_keys must not silently
    wrap it (a uint64 2**63 would be stored as -2**63)."""
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        with pytest.raises(ValueError):
            f.put_key("Aa", 2**63, BASE)
        with pytest.raises(ValueError, match="does not fit in a Java long"):
            f.put_keys(["Aa"], [2**63], [BASE])
        assert f.header.index_count == 1
        with pytest.raises(ValueError, match="does not fit in a Java long"):
            f.put_keys(["Aa"], np.array([2**63], dtype=np.uint64), [BASE])
        with pytest.raises(ValueError, match="does not fit in a Java long"):
            f.put_keys(["Aa"], [1], np.array([2**64 - 1], dtype=np.uint64))
        assert f.header.index_count == 1          # nothing written


def test_build_index_file_failure_leaves_nothing(tmp_path):
    with pytest.raises(ValueError):
        build_index_file(tmp_path / "f", ["a", "b"], [1], [1, 2], hash_slot_num=4, index_num=8)
    assert list(tmp_path.iterdir()) == []
    # an existing file is replaced only on success
    (tmp_path / "f").write_bytes(b"old")
    with pytest.raises(ValueError):
        build_index_file(tmp_path / "f", ["a"], [1, 2], [1], hash_slot_num=4, index_num=8)
    assert [p.name for p in tmp_path.iterdir()] == ["f"] and (tmp_path / "f").read_bytes() == b"old"
    assert build_index_file(tmp_path / "f", ["a"], [1], [1], hash_slot_num=4, index_num=8) == 1
    assert (tmp_path / "f").stat().st_size == 40 + 16 + 160


def test_build_index_file_with_precomputed_hashes(tmp_path):
    keys = ["Aa", "T#a", "polygenelubricants", "T#a"]
    phys, tss = [1, 2, 3, 4], [BASE, BASE + 1000, BASE + 2000, BASE + 3000]
    build_index_file(tmp_path / "a", keys, phys, tss, hash_slot_num=4, index_num=8)
    build_index_file(tmp_path / "b", None, phys, tss, hash_slot_num=4, index_num=8,
                     hashes=np.array([stored_hash(k) for k in keys], np.int32))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
