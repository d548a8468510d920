"""rmqlab.analysis.indexstats: every figure against two independent truths.

1. A brute-force model computed from the keys put (a Python loop over the rows, slots from
   ``rmqlab.jvm.hashcode.index_hash``, itself cross-checked against the plain-Python hash of
   tests/support/reference_model.py), knowing which rows each file of ``bulk_build`` holds.
2. The files themselves, walked chain by chain (slot head, then prev_index) with
   ``IndexFile.chain``, for the chain lengths and the hashes in each chain.
"""
from __future__ import annotations

import datetime as dt
import math
import random
import struct
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_model import stored_hash

from rmqlab import CorruptIndexError, GeometryError, IndexFile, TruncatedFileError
from rmqlab.analysis.indexstats import (
    FILE_STATS_COLUMNS,
    chain_length_histogram,
    chain_length_theory,
    directory_stats,
    expected_occupancy,
    file_report,
    file_stats,
    hottest_hashes,
    hottest_keys,
    index_file_paths,
    longest_chains,
    poisson_expected_slots,
    true_collisions,
    uniform_chain_limit,
)
from rmqlab.errors import FormatError
from rmqlab.jvm.hashcode import index_hash
from rmqlab.store.indexservice import ExpandedKeys, bulk_build

UTC = dt.UTC
HSN, INUM = 61, 1000
CAP = INUM - 1
T0 = 1_718_000_000_000
# Java-hash-equal families: every string of n two-letter blocks "Aa"/"BB" has the same hash
COLLIDING = ["Aa", "BB", "AaAa", "AaBB", "BBAa", "BBBB"]


# ------------------------------------------------------------------------------ inputs


def random_keys(n: int, seed: int) -> pd.DataFrame:
    """n puts: topic#key with hot keys, colliding keys, unique keys, non-ASCII keys; phy
    offsets increasing, store timestamps mostly increasing (sometimes a little back)."""
    rng = random.Random(seed)
    keys, phy, ts = [], [], []
    p, t = 0, T0
    for _ in range(n):
        r = rng.random()
        topic = rng.choice(["TopicA", "TopicB"])
        if r < 0.25:
            k = rng.choice(COLLIDING)
        elif r < 0.45:
            k = f"HOT_{rng.randint(0, 4)}"
        elif r < 0.5:
            k = rng.choice(["中文", "键😀", "ÄÖ"])
        else:
            k = f"ORDER_{rng.randint(0, 10 ** 6)}"
        keys.append(f"{topic}#{k}")
        phy.append(p)
        ts.append(t)
        p += rng.randint(100, 400)
        t += rng.choice([0, 0, 3, 250, 1000, -20])
    return pd.DataFrame({"key": keys, "phy_offset": phy, "store_timestamp": ts})


def build(df: pd.DataFrame, directory: Path, hsn: int = HSN, inum: int = INUM) -> list[Path]:
    cap = inum - 1
    first_ts = [int(df.store_timestamp.iloc[lo]) for lo in range(0, len(df), cap)]
    return bulk_build(ExpandedKeys(list(df.key), df.phy_offset.to_numpy(), df.store_timestamp.to_numpy()),
                      directory, hash_slot_num=hsn, index_num=inum,
                      clock=iter(first_ts).__next__, tz=UTC)


# ------------------------------------------------------------------------------- model


class Model:
    """Everything about one file, from the rows it holds (a plain loop per row)."""

    def __init__(self, rows: list[tuple[str, int, int]], path: Path, hsn: int, inum: int):
        self.hsn, self.inum, self.path = hsn, inum, path
        self.rows = rows
        self.hashes = []
        self.slot_hashes: dict[int, list[int]] = defaultdict(list)
        for key, _, _ in rows:
            h = index_hash(key)
            assert h == stored_hash(key)         # rmqlab's hash == the plain-Python one
            self.hashes.append(h)
            self.slot_hashes[h % hsn].append(h)

    def lengths(self) -> list[int]:
        return [len(self.slot_hashes.get(s, [])) for s in range(self.hsn)]

    def stats(self) -> dict:
        n, m = len(self.rows), self.hsn
        used = [s for s in range(m) if self.slot_hashes.get(s)]
        begin_ts = self.rows[0][2] if n else 0
        end_ts = self.rows[-1][2] if n else 0
        span = (end_ts - begin_ts) / 1000
        return {
            "name": self.path.name, "path": str(self.path), "hash_slot_num": m,
            "index_num": self.inum, "entries": n, "capacity_used": n / (self.inum - 1),
            "slots_used": len(used), "occupancy": len(used) / m,
            "expected_occupancy": 1 - (1 - 1 / m) ** n,
            "mean_chain_length": (sum(self.lengths()) / len(used)) if used else math.nan,
            "max_chain_length": max(self.lengths()),
            "distinct_hashes": len(set(self.hashes)),
            "begin_timestamp": begin_ts, "end_timestamp": end_ts, "span_seconds": span,
            "entries_per_second": n / span if span > 0 else math.nan,
            "begin_phy_offset": self.rows[0][1] if n else 0,
            "end_phy_offset": self.rows[-1][1] if n else 0,
            "file_bytes": 40 + 4 * m + 20 * self.inum,
        }

    def histogram(self) -> list[list[int]]:
        c = Counter(self.lengths())
        c.setdefault(0, 0)
        return [[length, c[length]] for length in sorted(c)]

    def longest(self) -> list[list[int]]:
        rows = [[s, len(hs), len(set(hs))] for s, hs in self.slot_hashes.items() if hs]
        return sorted(rows, key=lambda r: (-r[1], r[0]))

    def hottest(self) -> list[list[int]]:
        return sorted(([h, c] for h, c in Counter(self.hashes).items()), key=lambda r: (-r[1], r[0]))


def models(df: pd.DataFrame, paths: list[Path], hsn: int = HSN, inum: int = INUM) -> list[Model]:
    cap = inum - 1
    rows = list(zip(df.key, df.phy_offset.astype(int), df.store_timestamp.astype(int)))
    return [Model(rows[i * cap:(i + 1) * cap], p, hsn, inum) for i, p in enumerate(paths)]


def walked_chains(path: Path, hsn: int, inum: int) -> dict[int, list[int]]:
    """Slot -> stored hashes along its chain, walked from the slot head through prev_index."""
    out = {}
    with IndexFile.open(path, hsn, inum) as f:
        for s in range(hsn):
            out[s] = [int(f.entries[e]["key_hash"]) for e in f.chain(s)]
    return out


def assert_stats_equal(got: dict, want: dict):
    assert list(got) == [c for c, _ in FILE_STATS_COLUMNS]
    assert set(got) == set(want)
    for k, v in want.items():
        if isinstance(v, float):
            assert got[k] == pytest.approx(v, rel=1e-12, nan_ok=True), k
            assert isinstance(got[k], float), k
        else:
            assert got[k] == v, k
            assert type(got[k]) is type(v), k


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    df = random_keys(3 * CAP + 400, seed=11)
    d = tmp_path_factory.mktemp("index")
    paths = build(df, d)
    assert len(paths) == 4
    return df, d, paths, models(df, paths)


# ------------------------------------------------------------------------------- files


def test_file_stats_match_the_model(folder):
    df, _, paths, ms = folder
    for p, m in zip(paths, ms):
        assert_stats_equal(file_stats(p, hash_slot_num=HSN, index_num=INUM), m.stats())
    # the data exercises what it should: collisions, unequal chains, a full file
    s = file_stats(paths[0], hash_slot_num=HSN, index_num=INUM)
    assert s["distinct_hashes"] < s["entries"] and s["capacity_used"] == 1.0
    assert s["max_chain_length"] > s["mean_chain_length"]


def test_chain_lengths_match_a_chain_walk(folder):
    _, _, paths, ms = folder
    for p, m in zip(paths, ms):
        walked = walked_chains(p, HSN, INUM)
        lengths = [len(walked[s]) for s in range(HSN)]
        assert lengths == m.lengths()
        # every hash on a slot's chain belongs to that slot
        assert all(h % HSN == s for s, hs in walked.items() for h in hs)
        hist = chain_length_histogram(p, hash_slot_num=HSN, index_num=INUM)
        assert list(hist.columns) == ["chain_length", "slots"]
        want = Counter(lengths)
        want.setdefault(0, 0)
        assert hist.values.tolist() == [[k, want[k]] for k in sorted(want)]
        assert hist.values.tolist() == m.histogram()
        assert int(hist.slots.sum()) == HSN
        assert int((hist.chain_length * hist.slots).sum()) == len(m.rows)
        s = file_stats(p, hash_slot_num=HSN, index_num=INUM)
        assert s["max_chain_length"] == max(lengths)
        assert s["slots_used"] == sum(1 for x in lengths if x)
        with IndexFile.open(p, HSN, INUM) as f:
            assert s["slots_used"] == f.header.hash_slot_count     # >= 4.7.1 slot-count rule


def test_longest_chains_and_hottest_hashes(folder):
    _, _, paths, ms = folder
    for p, m in zip(paths, ms):
        walked = walked_chains(p, HSN, INUM)
        want = m.longest()
        assert want == sorted(([s, len(hs), len(set(hs))] for s, hs in walked.items() if hs),
                              key=lambda r: (-r[1], r[0]))
        got = longest_chains(p, hash_slot_num=HSN, index_num=INUM)
        assert list(got.columns) == ["slot", "chain_length", "distinct_hashes"]
        assert got.values.tolist() == want[:10]
        assert longest_chains(p, None, hash_slot_num=HSN, index_num=INUM).values.tolist() == want
        assert longest_chains(p, 3, hash_slot_num=HSN, index_num=INUM).values.tolist() == want[:3]
        hot = hottest_hashes(p, 5, hash_slot_num=HSN, index_num=INUM)
        assert list(hot.columns) == ["key_hash", "entries"]
        assert hot.values.tolist() == m.hottest()[:5]
        assert hottest_hashes(p, None, hash_slot_num=HSN, index_num=INUM).values.tolist() == m.hottest()
        for frame in (got, hot):
            assert all(dt == np.int64 for dt in frame.dtypes)


def test_file_report_is_the_same_as_the_single_functions(folder):
    _, _, paths, _ = folder
    p = paths[1]
    r = file_report(p, top=4, hash_slot_num=HSN, index_num=INUM)
    assert r.stats == file_stats(p, hash_slot_num=HSN, index_num=INUM)
    pd.testing.assert_frame_equal(r.chain_lengths, chain_length_histogram(p, hash_slot_num=HSN, index_num=INUM))
    pd.testing.assert_frame_equal(r.longest_chains, longest_chains(p, 4, hash_slot_num=HSN, index_num=INUM))
    pd.testing.assert_frame_equal(r.hottest_hashes, hottest_hashes(p, 4, hash_slot_num=HSN, index_num=INUM))


def test_directory_stats_oldest_first_and_ignores_other_files(folder, tmp_path):
    df, d, paths, ms = folder
    got = directory_stats(d, hash_slot_num=HSN, index_num=INUM)
    assert list(got.columns) == [c for c, _ in FILE_STATS_COLUMNS]
    assert got.name.tolist() == sorted(p.name for p in paths)
    want = pd.DataFrame([m.stats() for m in ms])
    pd.testing.assert_frame_equal(got, want)
    assert int(got.entries.sum()) == len(df)
    # other names in the folder (temporary files, notes) are ignored, as by the broker
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    (copy / "notes.txt").write_text("x")
    (copy / f".{paths[0].name}.123.tmp").write_bytes(b"junk")
    (copy / "123").write_bytes(b"junk")
    assert [p.name for p in index_file_paths(copy)] == got.name.tolist()
    again = directory_stats(copy, hash_slot_num=HSN, index_num=INUM)
    pd.testing.assert_frame_equal(again.drop(columns="path"), got.drop(columns="path"))


def test_empty_folder_and_empty_file(tmp_path):
    empty = directory_stats(tmp_path, hash_slot_num=HSN, index_num=INUM)
    assert empty.empty and list(empty.columns) == [c for c, _ in FILE_STATS_COLUMNS]
    assert str(empty.entries.dtype) == "int64" and str(empty.occupancy.dtype) == "float64"
    p = tmp_path / "20240610061524062"
    IndexFile.create(p, 7, 10, end_phy_offset=500, end_timestamp=T0).close()   # a seeded, unused file
    s = file_stats(p, hash_slot_num=7, index_num=10)
    assert (s["entries"], s["slots_used"], s["max_chain_length"], s["distinct_hashes"]) == (0, 0, 0, 0)
    assert (s["begin_timestamp"], s["end_timestamp"], s["span_seconds"]) == (T0, T0, 0.0)
    assert math.isnan(s["entries_per_second"]) and math.isnan(s["mean_chain_length"])
    assert s["expected_occupancy"] == 0.0 and s["occupancy"] == 0.0
    assert chain_length_histogram(p, hash_slot_num=7, index_num=10).values.tolist() == [[0, 7]]
    assert longest_chains(p, hash_slot_num=7, index_num=10).empty
    assert hottest_hashes(p, hash_slot_num=7, index_num=10).empty
    assert len(directory_stats(tmp_path, hash_slot_num=7, index_num=10)) == 1


def test_span_zero_gives_nan_rate(tmp_path):
    df = pd.DataFrame({"key": ["T#a", "T#b", "T#a"], "phy_offset": [0, 1, 2],
                       "store_timestamp": [T0 + 5] * 3})
    (p,) = build(df, tmp_path, 5, 8)
    s = file_stats(p, hash_slot_num=5, index_num=8)
    assert s["span_seconds"] == 0.0 and math.isnan(s["entries_per_second"])
    assert s["entries"] == 3 and s["distinct_hashes"] == 2


def test_expected_occupancy_formula():
    from decimal import Decimal, localcontext

    for m, n in [(1, 0), (1, 5), (2, 1), (61, 999), (5_000_000, 20_000_000), (7, 3), (10**9, 3)]:
        with localcontext() as ctx:               # 1 - (1 - 1/m)**n with 60 digits
            ctx.prec = 60
            want = float(1 - (1 - Decimal(1) / m) ** n) if n else 0.0
        assert expected_occupancy(m, n) == pytest.approx(want, rel=1e-14, abs=1e-300)
    with pytest.raises(ValueError):
        expected_occupancy(0, 1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.lists(st.one_of(st.sampled_from(COLLIDING + ["", "x"]), st.text(max_size=4)),
                     min_size=1, max_size=40),
       hsn=st.integers(1, 13), inum=st.integers(2, 17), seed=st.integers(0, 2**16))
def test_property_file_stats_and_histogram(keys, hsn, inum, seed):
    rng = random.Random(seed)
    ts = np.cumsum([T0] + [rng.choice([0, 1, 999, 1000, 2500]) for _ in keys[1:]])
    df = pd.DataFrame({"key": [f"T#{k}" for k in keys], "phy_offset": np.arange(len(keys)) * 100,
                       "store_timestamp": ts})
    with tempfile.TemporaryDirectory() as d:
        paths = build(df, Path(d), hsn, inum)
        assert len(paths) == -(-len(keys) // (inum - 1))
        for p, m in zip(paths, models(df, paths, hsn, inum)):
            assert_stats_equal(file_stats(p, hash_slot_num=hsn, index_num=inum), m.stats())
            hist = chain_length_histogram(p, hash_slot_num=hsn, index_num=inum)
            assert hist.values.tolist() == m.histogram()
            walked = walked_chains(p, hsn, inum)
            assert [len(walked[s]) for s in range(hsn)] == m.lengths()
            assert longest_chains(p, None, hash_slot_num=hsn, index_num=inum).values.tolist() == m.longest()


# ------------------------------------------------------------------------------- bad input


def test_bad_files_raise_typed_errors(folder, tmp_path):
    _, _, paths, _ = folder
    data = paths[0].read_bytes()
    truncated = tmp_path / "20240610061524062"
    truncated.write_bytes(data[:40 + 4 * HSN + 20 * 10 + 7])
    for fn in (file_stats, chain_length_histogram, longest_chains, hottest_hashes):
        with pytest.raises(TruncatedFileError) as e:
            fn(truncated, hash_slot_num=HSN, index_num=INUM)
        assert e.value.path == str(truncated)
    with pytest.raises(TruncatedFileError):
        directory_stats(tmp_path, hash_slot_num=HSN, index_num=INUM)

    garbage = tmp_path / "g" / "20240610061524063"
    garbage.parent.mkdir()
    garbage.write_bytes(random.Random(3).randbytes(12345))
    with pytest.raises(TruncatedFileError):                   # shorter than 61 slots + 1000 entries
        file_stats(garbage, hash_slot_num=HSN, index_num=INUM)
    with pytest.raises(GeometryError):                        # no geometry: only the default size
        file_stats(garbage)
    garbage.write_bytes(random.Random(4).randbytes(len(data) + 13))
    with pytest.raises(GeometryError):                        # longer, and not whole entries
        file_stats(garbage, hash_slot_num=HSN, index_num=INUM)
    tiny = tmp_path / "g" / "20240610061524064"
    tiny.write_bytes(b"\x00" * 10)
    with pytest.raises(TruncatedFileError):
        file_stats(tiny)

    # right size, header claims more entries than the file has
    corrupt = tmp_path / "c" / "20240610061524065"
    corrupt.parent.mkdir()
    bad = bytearray(data)
    struct.pack_into(">i", bad, 36, INUM + 5)
    corrupt.write_bytes(bytes(bad))
    with pytest.raises(CorruptIndexError) as e:
        file_stats(corrupt, hash_slot_num=HSN, index_num=INUM)
    assert isinstance(e.value, FormatError) and e.value.field == "header.index_count"
    with pytest.raises(FileNotFoundError):
        file_stats(tmp_path / "missing", hash_slot_num=HSN, index_num=INUM)


# ------------------------------------------------------------------------------- keys


def key_model(keys: list[str]):
    puts = Counter(keys)
    hot = sorted(([k, c] for k, c in puts.items()), key=lambda r: (-r[1], r[0]))
    by_hash = defaultdict(set)
    for k in puts:
        by_hash[index_hash(k)].add(k)
    coll = [[h, len(ks), sorted(ks), sum(puts[k] for k in ks)] for h, ks in by_hash.items() if len(ks) > 1]
    coll.sort(key=lambda r: (-r[1], -r[3], r[0]))
    return hot, coll


def test_hottest_keys_and_true_collisions_match_the_model(folder):
    df = folder[0]
    hot, coll = key_model(list(df.key))
    got = hottest_keys(df)
    assert list(got.columns) == ["key", "puts"] and str(got.puts.dtype) == "int64"
    assert got.values.tolist() == hot[:10]
    assert hottest_keys(df, None).values.tolist() == hot
    assert hottest_keys(df, 3).values.tolist() == hot[:3]
    c = true_collisions(df)
    assert list(c.columns) == ["key_hash", "distinct_keys", "keys", "puts"]
    assert [list(r) for r in c.itertuples(index=False)] == coll
    assert len(coll) >= 3 and any(r[1] >= 4 for r in coll)   # Aa/BB families per topic
    assert all(isinstance(r, list) for r in c["keys"])
    # a pyarrow table gives the same
    t = pa.Table.from_pandas(df, preserve_index=False)
    pd.testing.assert_frame_equal(hottest_keys(t, None), hottest_keys(df, None))
    pd.testing.assert_frame_equal(true_collisions(t), c)


def test_key_statistics_edge_cases():
    empty = pd.DataFrame({"key": pd.Series([], dtype=object)})
    assert hottest_keys(empty).empty and true_collisions(empty).empty
    assert list(true_collisions(empty).columns) == ["key_hash", "distinct_keys", "keys", "puts"]
    # nulls are not keys; "polygenelubricants" hashes to Integer.MIN_VALUE -> stored as 0
    df = pd.DataFrame({"key": ["a", None, "a", "polygenelubricants", "\x00"]})
    assert hottest_keys(df).values.tolist() == [["a", 2], ["\x00", 1], ["polygenelubricants", 1]]
    assert true_collisions(df).values.tolist() == [[0, 2, ["\x00", "polygenelubricants"], 2]]
    with pytest.raises(ValueError):
        hottest_keys(pd.DataFrame({"k": ["a"]}))


def test_poisson_expected_slots_is_the_poisson_law_times_the_slots():
    m, n = 1000, 2500
    lam = n / m
    want = [m * math.exp(-lam) * lam**k / math.factorial(k) for k in range(13)]
    np.testing.assert_allclose(poisson_expected_slots(m, n, 12), want, rtol=1e-12)
    # for many slots it is the exact binomial expectation of chain_length_theory
    np.testing.assert_allclose(poisson_expected_slots(5_000_000, 19_999_999, 20),
                               chain_length_theory(5_000_000, 19_999_999, 20)["slots"], rtol=1e-5)
    assert poisson_expected_slots(7, 0, 3).tolist() == [7.0, 0.0, 0.0, 0.0]
    assert np.isfinite(poisson_expected_slots(10, 10**9, 10**6)).all()      # no overflow


def _slots_longer_than(m: int, n: int, k: int) -> float:
    """Expected slots holding more than k of n uniformly random keys in m slots, exactly: m times
    the binomial tail, summed over integers (math.comb) by plain Python."""
    from fractions import Fraction

    p = Fraction(1, m)
    at_most_k = sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(min(k, n) + 1))
    return float(m * (1 - at_most_k))


@pytest.mark.parametrize("m, n", [(8, 3), (61, 999), (1024, 8191), (1, 5), (4, 40), (300, 7)])
def test_uniform_chain_limit_is_where_the_expected_tail_drops_below_half_a_slot(m, n):
    k = uniform_chain_limit(m, n)
    assert _slots_longer_than(m, n, k) < 0.5
    assert k == 0 or _slots_longer_than(m, n, k - 1) >= 0.5      # the smallest such length
    assert uniform_chain_limit(m, n, expected_slots=0.01) >= k   # a stricter bound is never shorter


def test_uniform_chain_limit_edges():
    assert uniform_chain_limit(5, 0) == 0
    assert uniform_chain_limit(1, 7) == 7                        # one slot holds every key
    for bad in ((0, 5), (5, -1)):
        with pytest.raises(ValueError):
            uniform_chain_limit(*bad)
    with pytest.raises(ValueError):
        uniform_chain_limit(5, 5, expected_slots=0)


def test_directory_stats_with_jobs_is_the_one_process_frame(tmp_path):
    """The sample store's 10 index files over 2 and 3 worker processes: the frame of one
    process, its rows computed elsewhere; a folder with a damaged file raises its error."""
    import os
    import shutil

    from rmqlab.errors import RmqlabError
    from rmqlab.lab.sample import SAMPLE_STORE_OPTIONS, sample_store
    from rmqlab.tables import pool

    index = sample_store().index_dir
    geometry = dict(hash_slot_num=SAMPLE_STORE_OPTIONS["hash_slot_num"], index_num=SAMPLE_STORE_OPTIONS["index_num"])
    want = directory_stats(index, jobs=1, **geometry)
    assert len(want) >= 3 and pool.RUNS[-1].pids == {os.getpid()}
    for jobs in (2, 3):
        got = directory_stats(index, jobs=jobs, **geometry)
        assert pool.RUNS[-1].units == len(want) and os.getpid() not in pool.RUNS[-1].pids
        pd.testing.assert_frame_equal(got, want)
    bad = tmp_path / "index"
    shutil.copytree(index, bad)
    victim = sorted(bad.iterdir())[1]
    victim.chmod(0o644)
    with open(victim, "r+b") as f:
        f.truncate(100)
    errors = []
    for jobs in (1, 2):
        with pytest.raises(RmqlabError) as e:
            directory_stats(bad, jobs=jobs, **geometry)
        errors.append((type(e.value), str(e.value), e.value.offset))
    assert errors[0] == errors[1] and victim.name in errors[0][1]
