"""`rmqlab spark build|stats` through rmqlab.cli.main, on the shared Spark session: the files
equal the broker's own dispatch of the same store, and the statistics equal the
single-process ones."""
from __future__ import annotations

import json

import pytest

from rmqlab.analysis.indexstats import directory_stats
from rmqlab.cli import main
from rmqlab.store.indexservice import is_index_file_name

pytestmark = pytest.mark.jvm
GEO = ["--hash-slot-num", "64", "--index-num", "1024"]


def run_json(capsys, *argv) -> dict:
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert len(lines) == 1, out.out
    return json.loads(lines[0])


def index_files(d):
    return sorted(p for p in d.iterdir() if is_index_file_name(p.name))


def test_spark_build_and_stats_of_a_store(spark, tmp_path, capsys):
    store = tmp_path / "store"
    info = run_json(capsys, "store", "generate", str(store), *GEO, "--commitlog-file-size", "65536",
                    "--messages", "2000", "--seed", "3", "--collision-pairs", "2")
    broker = index_files(store / "index")
    assert len(broker) >= 3

    built = run_json(capsys, "spark", "build", str(tmp_path / "index"), "--store", str(store), *GEO)
    assert built["tasks"] == info["commitlog_files"] if "commitlog_files" in info else built["tasks"] > 1
    got = index_files(tmp_path / "index")
    assert [p.name for p in got] == built["files"]
    # the same keys and seeds as the broker's dispatch: the same bytes (names come from clocks)
    assert [p.read_bytes() for p in got] == [p.read_bytes() for p in broker]

    stats = run_json(capsys, "spark", "stats", str(tmp_path / "index"), *GEO, "--parquet", str(tmp_path / "pq"))
    single = directory_stats(tmp_path / "index", hash_slot_num=64, index_num=1024)
    assert [f["entries"] for f in stats["files"]] == single["entries"].tolist()
    assert [f["slots_used"] for f in stats["files"]] == single["slots_used"].tolist()
    assert stats["overall"]["entries"] == built["keys"] == int(single["entries"].sum())
    assert (tmp_path / "pq" / "files.parquet").exists()

    # text output names every file
    assert main(["spark", "stats", str(store), *GEO, "--quiet"]) == 0
    text = capsys.readouterr().out
    assert all(p.name in text for p in broker)


def test_spark_build_from_a_workload(spark, tmp_path, capsys):
    built = run_json(capsys, "spark", "build", str(tmp_path / "w"), "--workload", "--messages", "4000",
                     "--commitlog-file-size", "131072", "--hash-slot-num", "61", "--index-num", "1000",
                     "--utc", "--verify-hashes")
    assert built["tasks"] > 3
    assert len(built["files"]) == -(-built["keys"] // 999) and built["keys"] > 6000


def test_usage_errors(capsys):
    assert main(["spark", "build", "x"]) == 2                 # a source is required
    assert main(["spark", "build", "x", "--workload", "--store", "y"]) == 2
    capsys.readouterr()
