"""Spark index statistics: the same figures as the single-process rmqlab.analysis.indexstats, computed one
task per file (index_stats) or over a DataFrame of keys (key_stats); Parquet written and read
back equal. Inputs are small: the shared session is the expensive part."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from rmqlab.analysis.indexstats import (
    FILE_STATS_COLUMNS,
    chain_length_histogram,
    directory_stats,
    hottest_hashes,
    hottest_keys,
    longest_chains,
    true_collisions,
)
from tests.analysis.test_indexstats import CAP, HSN, INUM, build, random_keys

pytestmark = pytest.mark.jvm

TOP = 5


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    df = random_keys(3 * CAP + 250, seed=29)
    d = tmp_path_factory.mktemp("index")
    paths = build(df, d)
    assert len(paths) == 4
    return df, d, paths


@pytest.fixture(scope="module")
def computed(spark, folder, tmp_path_factory):
    from rmqlab.spark.stats import index_stats

    out = tmp_path_factory.mktemp("parquet")
    stats = index_stats(spark, folder[1], hash_slot_num=HSN, index_num=INUM, top=TOP, parquet=out)
    return stats, stats.to_pandas(), out


def per_file(paths, fn, **kw) -> pd.DataFrame:
    frames = []
    for p in paths:
        f = fn(p, hash_slot_num=HSN, index_num=INUM, **kw)
        f.insert(0, "file", p.name)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def overall_from(files: pd.DataFrame) -> pd.DataFrame:
    """The overall row, by pandas from the single-process per-file rows."""
    has = files[files.entries > 0]
    begin = int(has.begin_timestamp.min()) if len(has) else 0
    end = int(has.end_timestamp.max()) if len(has) else 0
    span = (end - begin) / 1000
    slots = int(files.hash_slot_num.sum())
    entries = int(files.entries.sum())
    return pd.DataFrame([{
        "files": len(files), "entries": entries, "slots": slots,
        "slots_used": int(files.slots_used.sum()),
        "occupancy": files.slots_used.sum() / slots if slots else math.nan,
        "max_chain_length": int(files.max_chain_length.max()) if len(files) else 0,
        "begin_timestamp": begin, "end_timestamp": end, "span_seconds": span,
        "entries_per_second": entries / span if span > 0 else math.nan,
    }]).astype({"files": "int64", "entries": "int64", "slots": "int64", "slots_used": "int64",
                "max_chain_length": "int64", "begin_timestamp": "int64", "end_timestamp": "int64"})


def test_index_stats_equal_the_single_process_results(folder, computed):
    _, d, paths = folder
    stats, got, _ = computed
    want_files = directory_stats(d, hash_slot_num=HSN, index_num=INUM)
    assert len(want_files) == 4
    pd.testing.assert_frame_equal(got.files, want_files)
    assert list(got.files.columns) == [c for c, _ in FILE_STATS_COLUMNS]
    pd.testing.assert_frame_equal(got.chain_lengths, per_file(paths, chain_length_histogram))
    pd.testing.assert_frame_equal(got.longest_chains, per_file(paths, longest_chains, top=TOP))
    pd.testing.assert_frame_equal(got.hottest_hashes, per_file(paths, hottest_hashes, top=TOP))
    pd.testing.assert_frame_equal(got.overall, overall_from(want_files))
    assert got.overall.entries.iloc[0] == len(folder[0])
    # the tables are Spark DataFrames until to_pandas
    assert hasattr(stats.files, "toPandas") and stats.files.count() == 4


def test_one_task_per_file(spark, folder):
    # index_stats gives task i the id range of spark.range(0, n, 1, n): exactly one id (file) each
    n = len(folder[2])
    ids = spark.range(0, n, 1, n)
    assert ids.rdd.glom().map(lambda part: [r.id for r in part]).collect() == [[i] for i in range(n)]


def test_parquet_written_and_read_back_equal(computed):
    _, got, out = computed
    for name, order in [("files", [("name", True)]),
                        ("chain_lengths", [("file", True), ("chain_length", True)]),
                        ("longest_chains", [("file", True), ("chain_length", False), ("slot", True)]),
                        ("hottest_hashes", [("file", True), ("entries", False), ("key_hash", True)]),
                        ("overall", [])]:
        path = out / f"{name}.parquet"
        assert path.is_dir() and any(path.glob("*.parquet")), name
        back = pd.read_parquet(path)
        mine = getattr(got, name)
        if order:
            back = back.sort_values([c for c, _ in order], ascending=[a for _, a in order],
                                    kind="stable").reset_index(drop=True)
        pd.testing.assert_frame_equal(back[list(mine.columns)], mine, check_dtype=True)


def test_empty_folder_and_bad_file(spark, tmp_path, folder):
    from rmqlab.spark.stats import index_stats

    got = index_stats(spark, tmp_path, hash_slot_num=HSN, index_num=INUM).to_pandas()
    assert got.files.empty and got.chain_lengths.empty
    o = got.overall.iloc[0]
    assert (o.files, o.entries, o.slots_used, o.begin_timestamp) == (0, 0, 0, 0)
    assert math.isnan(o.occupancy) and math.isnan(o.entries_per_second)
    # a truncated file fails the job with rmqlab's typed error (named in the Python traceback)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / folder[2][0].name).write_bytes(folder[2][0].read_bytes()[:1000])
    from pyspark.errors import PythonException

    with pytest.raises(PythonException, match="TruncatedFileError"):
        index_stats(spark, bad, hash_slot_num=HSN, index_num=INUM)


def test_key_stats_equal_indexstats(spark, folder):
    from rmqlab.spark.stats import key_stats

    df = folder[0]
    # a few nulls: ignored by both
    with_nulls = pd.concat([df[["key"]], pd.DataFrame({"key": [None, None]})], ignore_index=True)
    sdf = spark.createDataFrame(with_nulls, "key string").repartition(3)
    got = key_stats(sdf, top=None).to_pandas()
    pd.testing.assert_frame_equal(got.hottest_keys, hottest_keys(df, None))
    want = true_collisions(df)
    assert len(want) >= 3
    pd.testing.assert_frame_equal(got.true_collisions, want)
    top = key_stats(sdf, top=7).to_pandas()
    pd.testing.assert_frame_equal(top.hottest_keys, hottest_keys(df, 7))
    # the hash Spark used is the stored index hash
    from rmqlab.jvm.hashcode import index_hash
    assert all(index_hash(k) == h for h, ks in zip(want.key_hash, want["keys"]) for k in ks)
