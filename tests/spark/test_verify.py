"""`rmqlab spark verify`: rmqlab verify's units of work as Spark tasks, the report the same.

Independent truth: the single-process ``rmqlab verify --jobs 1`` (no pool started). Its text
and ``--json`` output must come out byte for byte the same from ``rmqlab spark verify`` on the
generated sample store, every real RocketMQ store beside the repository (the 4.2.0 store among
them), damaged copies whose reports are long, and a relative path; through Spark Connect too;
and of the same stores copied into an S3 bucket (moto_server), read by URI.
Each run must really have run its units as Spark tasks, in other processes than this one
(:data:`rmqlab.tables.pool.RUNS`). Stores the real brokers wrote: tests/brokers; a standalone
cluster of two workers: tests/spark/test_cluster.py.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from oracles import REAL_DATA, require_real_data
from s3server import BUCKET, s3_uri, upload

from rmqlab.cli import EXIT_STATUS, main
from rmqlab.spark.mirror import shown_uri
from rmqlab.spark.pool import SparkPool
from rmqlab.tables import pool
from rmqlab.verify import verify_path
from tests.commands.test_jobs import REAL_ROCKETMQ, _store_units, _writable_copy
from tests.verify.test_verify import build_small_store, c_body_crc, c_cq_tags, c_key_hash, c_phy_field, c_slot_flip

pytestmark = pytest.mark.jvm


def assert_same_as_verify(argv: list[str], capsys, *, units: int | None = None) -> tuple[int, str]:
    """``rmqlab spark verify`` of `argv` (text, then --json): the exit status and stdout of
    ``rmqlab verify --jobs 1``, byte for byte, its units run in Spark's Python workers.
    Returns the (status, text) of the text form."""
    seen = {}
    for form in ([], ["--json"]):
        want_status = main(["verify", *argv, *form, "--jobs", "1"])
        want = capsys.readouterr().out
        status = main(["spark", "verify", *argv, *form])
        got = capsys.readouterr().out
        run = pool.RUNS[-1]
        assert run.label.startswith("spark verify"), run
        assert run.pids and os.getpid() not in run.pids, f"spark verify ran in this process: {run}"
        if units is not None:
            assert run.units == units, run
        assert got == want, f"{argv} {form}: spark verify differs from verify"
        assert status == want_status
        seen[tuple(form)] = (status, got)
    assert json.loads(seen[("--json",)][1])
    return seen[()]


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    return build_small_store(tmp_path_factory.mktemp("spark-verify") / "store")


def test_sample_store(spark, capsys):
    from rmqlab.lab.sample import sample_store

    root = sample_store().root
    status, text = assert_same_as_verify([str(root)], capsys, units=_store_units(root))
    assert status == 0 and text.rstrip().endswith(": ok")


def test_a_damaged_store_and_its_parts(spark, small_store, tmp_path, capsys):
    root = _writable_copy(small_store, tmp_path / "damaged")
    rng = np.random.default_rng(8)
    for corrupt in (c_body_crc, c_phy_field, c_slot_flip, c_key_hash, c_cq_tags):
        corrupt(root, rng)
    status, text = assert_same_as_verify([str(root)], capsys, units=_store_units(root))
    assert status == EXIT_STATUS["damage"]
    for check in ("commitlog.body-crc", "commitlog.phy-offset-field", "index.slot-chain", "index.key-hash",
                  "cq.tags-code"):
        assert f"[{check}]" in text, check
    for part in ("commitlog", "index"):
        status, _ = assert_same_as_verify([str(root / part)], capsys)
        assert status == EXIT_STATUS["damage"]


def _real_stores() -> list[Path]:
    """Every RocketMQ store beside the repository: a folder holding a commitlog/ folder."""
    folder = REAL_DATA / "rocketmq"
    return sorted(p for p in folder.iterdir() if (p / "commitlog").is_dir()) if folder.is_dir() else []


def test_every_real_store(spark, capsys):
    require_real_data(REAL_ROCKETMQ)
    stores = _real_stores()
    assert any(p.name == Path(REAL_ROCKETMQ).name for p in stores), stores
    for store in stores:
        assert_same_as_verify([str(store)], capsys, units=_store_units(store))


def test_a_damaged_copy_of_the_real_4_2_0_store(spark, tmp_path, capsys):
    copy = _writable_copy(require_real_data(REAL_ROCKETMQ), tmp_path / "real")
    rng = np.random.default_rng(4)
    c_body_crc(copy, rng)
    c_phy_field(copy, rng)
    status, text = assert_same_as_verify([str(copy)], capsys)
    assert status == EXIT_STATUS["damage"] and "[commitlog.body-crc]" in text


def test_a_relative_path_means_the_drivers(spark, small_store, tmp_path, monkeypatch, capsys):
    """The tasks run in the driver's working directory, so a relative path reads the same files
    and the report names them as given."""
    monkeypatch.chdir(small_store.parent)
    status, text = assert_same_as_verify([small_store.name], capsys)
    assert status == 0 and f"{small_store.name}/commitlog/" in text


def test_a_missing_target_is_said_before_spark_starts(tmp_path, capsys):
    assert main(["spark", "verify", str(tmp_path / "nothing")]) == EXIT_STATUS["bad input"]
    assert f"{tmp_path / 'nothing'}: no such file or directory" in capsys.readouterr().err


def test_the_pool_gives_results_in_order_from_executors(spark):
    with SparkPool(spark, "order") as p:
        got = list(p.ordered(divmod, [(n, 7) for n in range(40)], batch=3))
        assert got == [divmod(n, 7) for n in range(40)]
        assert p.run.units == 40 and p.run.pids and os.getpid() not in p.run.pids
        with pytest.raises(ZeroDivisionError):
            list(p.ordered(divmod, [(1, 1), (1, 0)]))


@pytest.mark.parametrize("group", [1, 3, 64])
def test_a_job_of_several_units_keeps_each_units_value_and_error_its_own(spark, group):
    """Units gathered into one Spark job (`group` a job) still answer one by one, as a process
    pool's: in order, each from an executor; a unit that raises raises its own exception (its
    type kept, or named where it does not pickle) when its value is taken, and only then, the
    units before it already handed back and the ones after it still answering; units waiting for
    a group to fill start when a value is asked for; submit_all starts its last units at once."""
    units = [(n, 0 if n in (5, 10) else 7) for n in range(13)]
    with SparkPool(spark, "group", group=group) as p:
        handed = []
        with pytest.raises(ZeroDivisionError):
            for value in p.ordered(divmod, units):
                handed.append(value)
        assert handed == [divmod(n, 7) for n in range(5)]
        want = ["raised" if d == 0 else divmod(n, d) for n, d in units]
        submitted = [p.submit(divmod, *args) for args in units]
        seen = []
        for unit in submitted:
            try:
                seen.append(p.value(unit))
            except ZeroDivisionError:
                seen.append("raised")
        assert seen == want
        early = p.submit_all(divmod, [(n, 3) for n in range(group + 1)])
        assert not p._waiting
        assert list(p.values(early)) == [divmod(n, 3) for n in range(group + 1)]
        def raise_unpicklable(n):      # sent by value (cloudpickle), as its exception's class
            import threading

            class Unpicklable(Exception):
                def __init__(self, what, lock):
                    super().__init__(what)
                    self.lock = lock

            raise Unpicklable("five" if n == 5 else str(n), threading.Lock())

        unpicklable = p.submit(raise_unpicklable, 5)
        with pytest.raises(RuntimeError, match="Unpicklable: five"):
            p.value(unpicklable)
        assert p.run.pids and os.getpid() not in p.run.pids
    with pytest.raises(ValueError, match="group"):
        SparkPool(spark, "bad", group=0)



def test_jobs_and_a_pool_exclude_each_other(spark, small_store):
    with SparkPool(spark, "both") as p, pytest.raises(ValueError, match="not both"):
        verify_path(small_store, jobs=2, pool=p)


def test_through_spark_connect(connect_spark, small_store):
    from rmqlab.spark.verify import verify_with_spark

    want = json.dumps(verify_path(small_store, jobs=1).as_dict(), default=str)
    got = json.dumps(verify_with_spark(connect_spark, small_store).as_dict(), default=str)
    assert got == want
    assert pool.RUNS[-1].pids and os.getpid() not in pool.RUNS[-1].pids


# ------------------------------------------------------------------------------ a store in S3


def assert_same_in_s3(local: Path, uri: str, capsys, *, units: int | None = None) -> tuple[int, str]:
    """``rmqlab spark verify URI`` (text, then --json) of a copy of `local` in the bucket: the
    exit status and stdout of ``rmqlab verify LOCAL --jobs 1``, byte for byte, once the local
    path is read as the URI (without credentials or query string); the units run as Spark
    tasks (`units`: how many; 0: none, a target without units). Returns the (status, text)
    of the text form."""
    shown = shown_uri(uri)
    assert "testing:" not in shown and "?" not in shown
    seen = {}
    for form in ([], ["--json"]):
        want_status = main(["verify", str(local), *form, "--jobs", "1"])
        want = capsys.readouterr().out.replace(str(local), shown)
        status = main(["spark", "verify", uri, *form])
        got = capsys.readouterr().out
        run = pool.RUNS[-1]
        assert run.label == f"spark verify {shown}", run
        if units != 0:
            assert run.pids and os.getpid() not in run.pids, f"spark verify ran in this process: {run}"
        if units is not None:
            assert run.units == units, run
        assert got == want, f"{uri} {form}: spark verify of the copy in S3 differs from verify"
        assert status == want_status
        assert "testing:testing" not in got
        seen[tuple(form)] = (status, got)
    return seen[()]


def test_a_store_in_s3_and_a_damaged_one(spark, s3_endpoint, small_store, tmp_path, capsys):
    status, text = assert_same_in_s3(small_store, upload(small_store, s3_uri(s3_endpoint, "verify/small")), capsys,
                                     units=_store_units(small_store))
    assert status == 0 and text.rstrip().endswith(": ok")
    root = _writable_copy(small_store, tmp_path / "damaged")
    rng = np.random.default_rng(9)
    for corrupt in (c_body_crc, c_phy_field, c_slot_flip, c_key_hash, c_cq_tags):
        corrupt(root, rng)
    uri = upload(root, s3_uri(s3_endpoint, "verify/damaged"))
    status, text = assert_same_in_s3(root, uri, capsys, units=_store_units(root))
    assert status == EXIT_STATUS["damage"]
    for check in ("commitlog.body-crc", "commitlog.phy-offset-field", "index.slot-chain", "index.key-hash",
                  "cq.tags-code"):
        assert f"[{check}]" in text, check
    for part in ("commitlog", "index", "checkpoint"):     # a folder of a store, and one file
        local, shown = root / part, s3_uri(s3_endpoint, f"verify/damaged/{part}")
        status, _ = assert_same_in_s3(local, shown, capsys, units=0 if part == "checkpoint" else None)
        assert status == (0 if part == "checkpoint" else EXIT_STATUS["damage"])


def test_the_real_stores_in_s3(spark, s3_endpoint, capsys):
    require_real_data(REAL_ROCKETMQ)
    for store in _real_stores():
        uri = upload(store, s3_uri(s3_endpoint, f"verify/real/{store.name}"))
        assert_same_in_s3(store, uri, capsys, units=_store_units(store))


def test_a_missing_uri_names_it_without_credentials(s3_endpoint, capsys):
    assert main(["spark", "verify", s3_uri(s3_endpoint, "verify/nothing-here")]) == EXIT_STATUS["bad input"]
    err = capsys.readouterr().err
    assert f"s3://{BUCKET}/verify/nothing-here: no such file or directory" in err and "testing:" not in err


def test_a_uri_with_commitlog_paths_is_a_usage_error(capsys):
    assert main(["spark", "verify", "s3://bucket/store", "--commitlog-paths", "/a,/b"]) == EXIT_STATUS["usage"]
    assert "s3://bucket/store: a store at a URI is read from its own folder only" in capsys.readouterr().err
