"""rmqlab.spark through Spark Connect (a server from the pyspark package's
start-connect-server.sh): the command line with --remote from relative paths, and the API from
a workload and from a store, build byte for byte what the single-process build writes; the
statistics equal the single-process ones; progress comes from the client's progress handler."""
from __future__ import annotations

import datetime

import pandas as pd
import pyarrow as pa
import pytest
from spark_cluster import GEOMETRY, WORKLOAD_ARGS, cli_json, cli_workload_source, index_files, single_process_build

from rmqlab.analysis.indexstats import directory_stats, hottest_keys, true_collisions

pytestmark = pytest.mark.jvm


def test_cli_with_remote_builds_from_a_relative_path(connect_server, tmp_path):
    remote = ["--remote", connect_server.url]
    want = single_process_build(cli_workload_source(), tmp_path / "single")
    built = cli_json("spark", "build", *WORKLOAD_ARGS, *remote, "rel-out", cwd=tmp_path)
    got = index_files(tmp_path / "rel-out")
    assert built["files"] == [p.name for p in want] == [p.name for p in got]
    assert [p.read_bytes() for p in got] == [p.read_bytes() for p in want]

    stats = cli_json("spark", "stats", "rel-out", *GEOMETRY, *remote, "--parquet", "pq", cwd=tmp_path)
    single = directory_stats(tmp_path / "single", hash_slot_num=61, index_num=1000)
    for column in ("name", "entries", "slots_used", "max_chain_length", "begin_timestamp", "end_timestamp"):
        assert [f[column] for f in stats["files"]] == single[column].tolist(), column
    assert (tmp_path / "pq" / "files.parquet").is_dir()       # where the client meant, not the server


def test_builds_from_a_workload_and_a_store_with_progress(connect_spark, tmp_path):
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload
    from rmqlab.spark import is_connect
    from rmqlab.spark.build import build_index_files
    from rmqlab.spark.sources import StoreSource

    assert is_connect(connect_spark)
    source = cli_workload_source()
    want = single_process_build(source, tmp_path / "single")
    reports = []
    got = build_index_files(source, tmp_path / "spark", hash_slot_num=61, index_num=1000, tz=datetime.UTC,
                            spark=connect_spark, progress=lambda done, total, what: reports.append((done, total, what)))
    assert [p.name for p in got] == [p.name for p in want]
    assert [p.read_bytes() for p in got] == [p.read_bytes() for p in want]
    # the client's progress handler was called, for both passes, and the last report says: all done
    assert {what for _, _, what in reports} >= {"hashing keys into runs", f"building {len(want)} index files"}
    assert reports[-1][0] == reports[-1][1] == len(want)

    store = tmp_path / "store"
    generate_store(store, Workload(messages=1500, seed=4, transaction_fraction=0.1, drain=True),
                   commitlog_file_size=64 * 1024, hash_slot_num=61, index_num=1000)
    broker = index_files(store / "index")
    got = build_index_files(StoreSource(store), tmp_path / "from-store", hash_slot_num=61, index_num=1000,
                            names=[p.name for p in broker], spark=connect_spark, progress=False)
    assert len(broker) >= 2
    assert [p.read_bytes() for p in got] == [p.read_bytes() for p in broker]


def test_statistics_equal_the_single_process_ones(connect_spark, tmp_path):
    from rmqlab.spark.stats import index_stats, key_stats

    source = cli_workload_source()
    single_process_build(source, tmp_path / "index")
    got = index_stats(connect_spark, tmp_path / "index", hash_slot_num=61, index_num=1000).to_pandas()
    want = directory_stats(tmp_path / "index", hash_slot_num=61, index_num=1000)
    for column in ("name", "entries", "slots_used", "max_chain_length", "mean_chain_length"):
        assert got.files[column].tolist() == want[column].tolist(), column

    keys = pa.Table.from_batches([b for i in range(source.num_partitions) for b in source.keys(i)]).to_pandas()
    stats = key_stats(source.keys_frame(connect_spark), top=None).to_pandas()
    pd.testing.assert_frame_equal(stats.hottest_keys, hottest_keys(keys, None))
    collisions = true_collisions(keys)
    assert len(collisions) >= 2                          # the workload's collision pairs
    pd.testing.assert_frame_equal(stats.true_collisions, collisions)
