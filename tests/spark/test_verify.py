"""`rmqlab spark verify`: rmqlab verify's units of work as Spark tasks, the report the same.

Independent truth: the single-process ``rmqlab verify --jobs 1`` (no pool started). Its text
and ``--json`` output must come out byte for byte the same from ``rmqlab spark verify`` on the
generated sample store, every real RocketMQ store beside the repository (the 4.2.0 store among
them), damaged copies whose reports are long, and a relative path; through Spark Connect too.
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

from rmqlab.cli import EXIT_STATUS, main
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
        with pytest.raises(Exception, match="ZeroDivisionError"):
            list(p.ordered(divmod, [(1, 1), (1, 0)]))


def test_jobs_and_a_pool_exclude_each_other(spark, small_store):
    with SparkPool(spark, "both") as p, pytest.raises(ValueError, match="not both"):
        verify_path(small_store, jobs=2, pool=p)


def test_through_spark_connect(connect_spark, small_store):
    from rmqlab.spark.verify import verify_with_spark

    want = json.dumps(verify_path(small_store, jobs=1).as_dict(), default=str)
    got = json.dumps(verify_with_spark(connect_spark, small_store).as_dict(), default=str)
    assert got == want
    assert pool.RUNS[-1].pids and os.getpid() not in pool.RUNS[-1].pids


def test_a_uri_is_a_usage_error_naming_the_way_round(capsys):
    assert main(["spark", "verify", "s3://bucket/store"]) == EXIT_STATUS["usage"]
    assert "s3://bucket/store: spark verify reads a store by a path every executor mounts" in capsys.readouterr().err
