"""rmqlab.spark on a standalone cluster (one master, two one-core workers with work directories
of their own, from the pyspark package's spark-class): the CLI builds from relative paths,
from a workload and from a store, byte for byte as the single-process build, and the
statistics equal the single-process ones. The executors run in their work directories, so a
path the driver did not resolve would not be found there."""
from __future__ import annotations

import json

import pytest
from spark_cluster import (
    GEOMETRY,
    WORKLOAD_ARGS,
    cli_json,
    cli_workload_source,
    index_files,
    rmqlab_cli,
    single_process_build,
)

from rmqlab.analysis.indexstats import directory_stats

pytestmark = pytest.mark.jvm


def test_cluster_builds_from_relative_paths_equal_the_single_process_build(standalone_cluster, tmp_path):
    master = ["--master", standalone_cluster.master_url]
    want = single_process_build(cli_workload_source(), tmp_path / "single")
    assert len(want) >= 3

    built = cli_json("spark", "build", *WORKLOAD_ARGS, *master, "rel-out", cwd=tmp_path)
    got = index_files(tmp_path / "rel-out")
    assert built["files"] == [p.name for p in want] == [p.name for p in got]
    assert [p.read_bytes() for p in got] == [p.read_bytes() for p in want]
    assert sorted(p.name for p in (tmp_path / "rel-out").iterdir()) == [p.name for p in got]   # runs removed

    quiet = rmqlab_cli("spark", "stats", "rel-out", *GEOMETRY, *master, "--json", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr[-4000:]
    # the JVM's start-up warning stays out of the command's output, as its log does
    assert "incubator" not in quiet.stderr and "WARN" not in quiet.stderr, quiet.stderr
    stats = json.loads(quiet.stdout)
    single = directory_stats(tmp_path / "single", hash_slot_num=61, index_num=1000)
    for column in ("name", "entries", "slots_used", "max_chain_length", "begin_timestamp", "end_timestamp"):
        assert [f[column] for f in stats["files"]] == single[column].tolist(), column
    assert stats["overall"]["entries"] == built["keys"] == int(single["entries"].sum())

    # a store, given by a relative path: the same bytes as the broker's own dispatch wrote
    store = cli_json("store", "generate", "store", *GEOMETRY, "--commitlog-file-size", "131072",
                     "--messages", "1500", "--seed", "3", cwd=tmp_path)
    assert store
    built = cli_json("spark", "build", "--store", "store", *GEOMETRY, *master, "store-out", cwd=tmp_path)
    broker = index_files(tmp_path / "store" / "index")
    got = index_files(tmp_path / "store-out")
    assert built["tasks"] > 1 and len(broker) >= 2
    assert [p.read_bytes() for p in got] == [p.read_bytes() for p in broker]


def test_cluster_verifies_a_damaged_store_as_one_process_does(standalone_cluster, tmp_path):
    """`rmqlab spark verify` on the cluster, from a relative path: the JSON report of
    `rmqlab verify --jobs 1`, byte for byte, on tests/verify/test_verify.py's store (64 KiB
    CommitLog files) with damage in its CommitLog, index and ConsumeQueue files."""
    import numpy as np

    from tests.verify.test_verify import build_small_store, c_body_crc, c_cq_tags, c_slot_flip

    root = build_small_store(tmp_path / "store")
    assert len(list((root / "commitlog").iterdir())) >= 5
    rng = np.random.default_rng(2)
    for corrupt in (c_body_crc, c_slot_flip, c_cq_tags):
        corrupt(root, rng)
    want = rmqlab_cli("verify", "store", "--jobs", "1", "--json", cwd=tmp_path)
    got = rmqlab_cli("spark", "verify", "store", "--master", standalone_cluster.master_url, "--json", cwd=tmp_path)
    assert want.returncode == 1 and "body-crc" in want.stdout, want.stderr[-4000:]
    assert got.returncode == want.returncode, got.stderr[-4000:]
    assert got.stdout == want.stdout     # the text form: tests/spark/test_verify.py, on local[*] and Connect
