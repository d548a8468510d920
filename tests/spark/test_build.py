"""Distributed index build: the files Spark writes are byte for byte (and name for name) those of
the single-process bulk_build of the same keys, and those of the broker-order IndexService."""
import datetime
import random

import numpy as np
import pytest

from rmqlab.store.indexservice import ExpandedKeys, IndexService, bulk_build, expand_columns

pytestmark = pytest.mark.jvm

UTC = datetime.UTC
HSN, INUM = 61, 1000
CAP = INUM - 1


def messages(n_target_keys, seed=7):
    """Message columns: a UNIQ_KEY (mostly) and 0-5 KEYS tokens each, colliding keys (Aa/BB),
    repeated keys, empty tokens, store timestamps 0-3 s apart and out of order by up to 50 ms; stops
    once the expanded keys reach `n_target_keys`."""
    rng = random.Random(seed)
    cols = {"topic": [], "phy_offset": [], "store_timestamp": [], "keys": [], "uniq_key": []}
    phy, ts, n = 0, 1718000000000, 0
    while n < n_target_keys:
        toks = [rng.choice(["Aa", "BB", "AaAa", "BBBB", "AaBB", f"ORDER_{rng.randint(0, 300)}",
                            "中文", ""]) for _ in range(rng.randint(0, 5))]
        uniq = None if rng.random() < 0.1 else f"U{len(cols['topic']):06d}"
        cols["topic"].append(rng.choice(["TopicA", "TopicB"]))
        cols["phy_offset"].append(phy)
        cols["store_timestamp"].append(ts + rng.randint(-50, 5))      # not monotonic
        cols["keys"].append(" ".join(toks) if toks else None)
        cols["uniq_key"].append(uniq)
        n += (uniq is not None) + sum(1 for t in toks if t)
        phy += rng.randint(150, 400)
        ts += rng.randint(0, 3000)
    return cols


def to_df(spark, exp, partitions=4):
    rows = list(zip(exp.key_list(), exp.phy_offsets.tolist(), exp.store_timestamps.tolist()))
    rdd = spark.sparkContext.parallelize(rows, partitions)     # contiguous slices, in order
    return spark.createDataFrame(rdd, "key string, phy_offset long, store_timestamp long")


def first_key_times(exp):
    return [int(exp.store_timestamps[lo]) for lo in range(0, len(exp), CAP)]


def truth(exp, directory):
    return bulk_build(exp, directory, hash_slot_num=HSN, index_num=INUM,
                      clock=iter(first_key_times(exp)).__next__, tz=UTC)


def assert_same_files(a, b):
    assert [p.name for p in a] == [p.name for p in b]
    for x, y in zip(a, b):
        assert x.read_bytes() == y.read_bytes(), f"{x.name} differs"
    leftovers = [p.name for p in b[0].parent.iterdir() if p not in b] if b else []
    assert leftovers == []   # no temporary file left behind


def test_spark_build_is_byte_identical_across_files(spark, tmp_path):
    from rmqlab.spark.build import build_index_files

    cols = messages(5600, seed=18)
    exp = expand_columns(cols)
    k = len(exp)
    assert 5 * CAP < k < 6 * CAP and k % CAP != 0
    # a file boundary falls inside one message's keys (the message spans two files)
    inside = [f for f in range(1, 6) if exp.message_index[f * CAP - 1] == exp.message_index[f * CAP]]
    assert inside, "no file boundary inside a message"
    # and a boundary where the seed shows in the bytes: the first entry's time diff is taken
    # against the seeded begin_timestamp, in whole seconds
    ts = exp.store_timestamps
    assert any(ts[f * CAP] - ts[f * CAP - 1] >= 1000 for f in range(1, 6))

    want = truth(exp, tmp_path / "single")
    assert len(want) == 6
    got = build_index_files(to_df(spark, exp), tmp_path / "spark", hash_slot_num=HSN,
                            index_num=INUM, tz=UTC)
    assert_same_files(want, got)

    # and the broker itself (one message at a time, files named by store time) agrees
    with IndexService(tmp_path / "broker", hash_slot_num=HSN, index_num=INUM, read_only=False,
                      tz=UTC, name_by_store_time=True) as svc:
        for m in zip(*(cols[c] for c in ("topic", "phy_offset", "store_timestamp", "keys", "uniq_key"))):
            svc.put_message(*m)
        broker = [f.path for f in svc.files]
    assert_same_files(broker, got)


def test_fewer_keys_than_one_file(spark, tmp_path):
    from rmqlab.spark.build import build_index_files

    exp = expand_columns(messages(40, seed=3))
    assert len(exp) < CAP
    want = truth(exp, tmp_path / "single")
    got = build_index_files(to_df(spark, exp), tmp_path / "spark", hash_slot_num=HSN,
                            index_num=INUM, tz=UTC)
    assert len(got) == 1
    assert_same_files(want, got)


def test_exact_multiple_of_capacity_and_same_millisecond_names(spark, tmp_path):
    from rmqlab.spark.build import build_index_files

    full = expand_columns(messages(2 * CAP + 10, seed=5))
    n = 2 * CAP
    # every key at the same store time: the second file's name is bumped by 1 ms, as the broker
    exp = ExpandedKeys(full.keys.slice(0, n), full.phy_offsets[:n],
                       np.full(n, 1718000000123, np.int64))
    want = truth(exp, tmp_path / "single")
    assert [p.name for p in want] == ["20240610061320123", "20240610061320124"]
    got = build_index_files(to_df(spark, exp, partitions=3), tmp_path / "spark",
                            hash_slot_num=HSN, index_num=INUM, tz=UTC)
    assert_same_files(want, got)

    # explicit names
    names = ["20240101000000000", "20240101000000001"]
    want = bulk_build(exp, tmp_path / "single2", hash_slot_num=HSN, index_num=INUM,
                      clock=iter([1704067200000, 1704067200000]).__next__, tz=UTC)
    assert [p.name for p in want] == names
    got = build_index_files(to_df(spark, exp, partitions=5), tmp_path / "spark2",
                            hash_slot_num=HSN, index_num=INUM, names=names)
    assert_same_files(want, got)


def test_refuses_a_folder_with_index_files(spark, tmp_path):
    from rmqlab.spark.build import build_index_files

    (tmp_path / "20240101000000000").write_bytes(b"")
    df = spark.createDataFrame([("T#a", 1, 2)], "key string, phy_offset long, store_timestamp long")
    with pytest.raises(FileExistsError):
        build_index_files(df, tmp_path, hash_slot_num=HSN, index_num=INUM)


def test_verify_hashes_checks_every_key_against_the_jvm_first(spark, tmp_path):
    from rmqlab.spark.build import build_index_files

    keys = ["T#中文", "T#键😀", "T#Aa", "T#BB", "T#e\u0301", "T#" + "x" * 300]
    exp = ExpandedKeys(keys * 400, np.arange(2400) * 100, 1718000000000 + np.arange(2400))
    want = truth(exp, tmp_path / "single")
    got = build_index_files(to_df(spark, exp, partitions=3), tmp_path / "spark", hash_slot_num=HSN,
                            index_num=INUM, tz=UTC, verify_hashes=True, progress=False)
    assert_same_files(want, got)


def test_hash_mismatch_error_names_a_key():
    import pandas as pd

    from rmqlab.spark.build import HashMismatchError

    e = HashMismatchError(pd.DataFrame({"key": ["T#x"], "rmqlab": [1], "jvm": [2]}))
    assert "'T#x'" in str(e) and "rmqlab 1, JVM 2" in str(e)
    assert e.mismatches.shape == (1, 3)


def test_verify_hashes_raises_on_a_mismatch_before_writing_anything(spark, tmp_path, monkeypatch):
    # rmqlab's hash is made wrong for one key (as a bug in the C hash would be) where the check
    # computes it; the JVM's side is untouched, so only the check's own comparison can find it
    from pyspark.sql import functions as F

    from rmqlab.spark import hashcheck
    from rmqlab.spark.build import HashMismatchError, build_index_files

    bad_key = "T#BB"
    honest = hashcheck.with_java_hash

    def off_by_one_for_bad_key(df, column, out="java_hash", **kw):
        hashed = honest(df, column, out, **kw)
        return hashed.withColumn(out, F.when(F.col(column) == bad_key, F.col(out) + 1).otherwise(F.col(out)))

    monkeypatch.setattr(hashcheck, "with_java_hash", off_by_one_for_bad_key)
    keys = ["T#中文", "T#Aa", bad_key, "T#x"]
    exp = ExpandedKeys(keys * 50, np.arange(200) * 100, 1718000000000 + np.arange(200))
    out = tmp_path / "spark"
    with pytest.raises(HashMismatchError) as e:
        build_index_files(to_df(spark, exp, partitions=3), out, hash_slot_num=HSN, index_num=INUM,
                          tz=UTC, verify_hashes=True, progress=False)
    java_hash_of_bb = 2112                       # "BB".hashCode() in Java: 66 * 31 + 66
    bb = int(np.int32(np.int64(ord("T")) * 31**3 + ord("#") * 31**2 + java_hash_of_bb))
    rows = e.value.mismatches
    assert len(rows) == 50                       # each occurrence of the key, and nothing else
    assert rows.drop_duplicates().to_dict("records") == [{"key": bad_key, "rmqlab": bb + 1, "jvm": bb}]
    assert list(out.iterdir()) == []             # no index file, no run folder


def test_empty_job_seconds_runs_one_job_of_that_many_tasks(spark):
    """The overhead probe runs a real job with the build's shape: one task per requested
    partition (Spark's own status tracker counts them), and takes a positive time."""
    from rmqlab.spark.build import empty_job_seconds

    tracker = spark.sparkContext.statusTracker()
    group = "rmqlab-empty-job-test"
    spark.sparkContext.setJobGroup(group, "empty job probe")
    try:
        seconds = empty_job_seconds(spark, 3)
    finally:
        spark.sparkContext.setJobGroup("", "")
    jobs = tracker.getJobIdsForGroup(group)
    assert len(jobs) == 1 and seconds > 0
    stages = tracker.getJobInfo(jobs[0]).stageIds
    assert sum(tracker.getStageInfo(s).numTasks for s in stages) == 3
