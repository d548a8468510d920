"""Paths and URIs of rmqlab.spark (rmqlab.spark.storage): plain paths, ``file://`` and ``s3://``
against a real S3-compatible server (moto_server, started here on 127.0.0.1 and stopped by its
PID). The Spark builds into an ``s3://`` folder, from a workload and from a store uploaded to a
bucket, are compared byte for byte with the single-process builds, and the statistics of the
uploaded folder with the local ones."""
from __future__ import annotations

import datetime
import os
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import pytest
from s3server import s3_uri, upload

from rmqlab.spark import storage

UTC = datetime.UTC
FILE = 64 * 1024
HSN, INUM = 61, 1000

# ------------------------------------------------------------------------------ local


def test_a_plain_relative_path_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    loc = storage.resolve("out")
    assert loc.local and loc.path == str(tmp_path / "out") and str(loc) == str(tmp_path / "out")
    assert storage.resolve(loc) is loc
    assert storage.resolve(tmp_path / "out").path == loc.path


def test_a_file_uri_is_the_local_path(tmp_path):
    loc = storage.resolve(f"file://{tmp_path}")
    assert loc.local and loc.path == str(tmp_path)
    child = loc.child("a", "b")
    assert child.path == str(tmp_path / "a" / "b") and str(child) == f"file://{tmp_path}/a/b"
    assert storage.resolve(str(child)).path == child.path


def test_uris_keep_their_query_string_when_joined():
    loc = storage.resolve("s3://bucket/out?region=us-east-1&scheme=http")
    assert loc.path == "bucket/out" and not loc.local
    assert str(loc.child("f")) == "s3://bucket/out/f?region=us-east-1&scheme=http"
    assert storage.is_uri("gs://b/x") and storage.is_uri("hdfs://nn:8020/x")
    assert not storage.is_uri("C:/data") and not storage.is_uri(Path("s3:/x"))


RECORD = np.dtype([("a", "<i4"), ("b", "<i8")])


def exercise(root: storage.Location, scratch: Path):
    """Every operation the build, the sources and the statistics use, on folder `root`."""
    d = root.child("d")
    assert not storage.exists(d)
    storage.mkdir(d)
    storage.mkdir(d)                                 # again: nothing
    assert storage.is_dir(d) and not storage.is_file(d)
    recs = np.zeros(10, RECORD)
    recs["a"], recs["b"] = np.arange(10), np.arange(10) * 1000
    with storage.open_write(d.child("r.bin")) as f:
        f.write(recs[:4].data)
        f.write(recs[4:].data)
    storage.write_bytes(d.child("00000000000000000000"), b"x" * 100)
    assert [(e.name, e.is_file, e.size) for e in storage.list_dir(d)] == \
        [("00000000000000000000", True, 100), ("r.bin", True, recs.nbytes)]
    assert storage.file_size(d.child("r.bin")) == recs.nbytes
    assert storage.read_records(d.child("r.bin"), RECORD, 3, 7).tolist() == recs[3:7].tolist()
    assert len(storage.read_records(d.child("r.bin"), RECORD, 5, 5)) == 0
    assert storage.read_range(d.child("r.bin"), 4, 8) == recs.tobytes()[4:12]
    with pytest.raises(NotADirectoryError):
        storage.list_dir(d.child("r.bin"))
    with pytest.raises(FileNotFoundError):
        storage.file_size(d.child("nothing"))

    finished = scratch / "finished"
    finished.write_bytes(b"whole file")
    storage.publish(finished, d.child("published"))
    assert not finished.exists()                      # consumed
    assert storage.read_range(d.child("published"), 0, 100) == b"whole file"
    assert not [e for e in storage.list_dir(d) if e.name.startswith(".")]   # no temporary left

    with storage.local_copy(d.child("00000000000000000000")) as p:
        assert os.path.basename(p) == "00000000000000000000"     # the name carries the offset
        assert Path(p).read_bytes() == b"x" * 100
        copied = p
    assert d.local or not os.path.exists(copied)

    storage.delete_file(d.child("published"))
    assert not storage.exists(d.child("published"))
    storage.delete_tree(d)
    assert not storage.exists(d)
    storage.delete_tree(d)                           # gone already: nothing


def test_storage_operations_on_a_local_path(tmp_path):
    (tmp_path / "scratch").mkdir()
    exercise(storage.resolve(tmp_path / "root"), tmp_path / "scratch")


def test_storage_operations_on_a_file_uri(tmp_path):
    (tmp_path / "scratch").mkdir()
    exercise(storage.resolve(f"file://{tmp_path}/root"), tmp_path / "scratch")


def test_publish_renames_on_a_filesystem_that_is_neither_local_nor_an_object_store(tmp_path):
    """The HDFS branch (upload under a hidden name, then the filesystem's rename), on a
    filesystem pyarrow wraps (a sub-tree of the local one), so no HDFS is needed."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "scratch").mkdir()
    fs = pafs.SubTreeFileSystem(str(tmp_path / "tree"), pafs.LocalFileSystem())
    root = storage.Location(fs, "root", "")
    assert not root.local
    exercise(root, tmp_path / "scratch")


# ------------------------------------------------------------------------------ S3


def test_storage_operations_on_s3(s3_endpoint, tmp_path):
    root = storage.resolve(s3_uri(s3_endpoint, "ops"))
    assert not root.local and root.fs.type_name == "s3"
    exercise(root, tmp_path)


def test_a_location_pickles_with_its_filesystem(s3_endpoint):
    import pickle

    loc = storage.resolve(s3_uri(s3_endpoint, "pickled")).child("f")
    storage.write_bytes(loc, b"abc")
    back = pickle.loads(pickle.dumps(loc))
    assert back.path == loc.path and str(back) == str(loc)
    assert storage.read_range(back, 0, 3) == b"abc"


def download(folder: str, into: Path) -> list[Path]:
    """Every file of an s3 folder, downloaded into `into`, sorted by name."""
    loc = storage.resolve(folder)
    into.mkdir()
    for e in storage.list_dir(loc):
        assert e.is_file, f"{e.name}: a folder left in the output"
        (into / e.name).write_bytes(storage.read_range(loc.child(e.name), 0, e.size))
    return sorted(into.iterdir())


@pytest.fixture(scope="module")
def workload_source():
    from rmqlab.lab.workload import Workload
    from rmqlab.spark.sources import WorkloadSource

    w = Workload(messages=3000, seed=11, keys_per_message=1.5, collision_pairs=3, collision_fraction=0.05)
    return WorkloadSource(w, commitlog_file_size=FILE, chunk_messages=500)


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload

    root = tmp_path_factory.mktemp("store")
    w = Workload(messages=2500, seed=4, transaction_fraction=0.1, commit_fraction=0.6,
                 rollback_fraction=0.3, drain=True)
    generate_store(root, w, commitlog_file_size=FILE, hash_slot_num=HSN, index_num=INUM)
    return root


def _workload_keys(src):
    import pyarrow as pa

    from rmqlab.spark.sources import KEY_SCHEMA
    from rmqlab.store.indexservice import ExpandedKeys

    t = pa.Table.from_batches([b for i in range(src.num_partitions) for b in src.keys(i)], schema=KEY_SCHEMA)
    return ExpandedKeys(t.column("key").combine_chunks(), t.column("phy_offset").to_numpy(),
                        t.column("store_timestamp").to_numpy())


@pytest.mark.jvm
def test_build_from_a_workload_into_s3_equals_bulk_build(spark, s3_endpoint, workload_source, tmp_path):
    from rmqlab.spark.build import build_index_files
    from rmqlab.store.indexservice import bulk_build

    exp = _workload_keys(workload_source)
    cap = INUM - 1
    assert len(exp) > 3 * cap
    times = [int(exp.store_timestamps[lo]) for lo in range(0, len(exp), cap)]
    want = bulk_build(exp, tmp_path / "single", hash_slot_num=HSN, index_num=INUM,
                      clock=iter(times).__next__, tz=UTC)
    out = s3_uri(s3_endpoint, "out-workload")
    got = build_index_files(workload_source, out, hash_slot_num=HSN, index_num=INUM, tz=UTC,
                            spark=spark, progress=False)
    assert got == [str(storage.resolve(out).child(p.name)) for p in want]
    # nothing but the index files: the runs folder and every temporary are gone
    files = download(out, tmp_path / "downloaded")
    assert [p.name for p in files] == [p.name for p in want]
    for a, b in zip(want, files):
        assert a.read_bytes() == b.read_bytes(), a.name

    # the DataFrame input (Arrow jobs) writes the same bytes; a second build into it refuses
    out2 = s3_uri(s3_endpoint, "out-frame")
    build_index_files(workload_source.keys_frame(spark), out2, hash_slot_num=HSN, index_num=INUM, tz=UTC,
                      progress=False)
    assert [p.read_bytes() for p in download(out2, tmp_path / "frame")] == [p.read_bytes() for p in want]
    with pytest.raises(FileExistsError):
        build_index_files(workload_source, out2, hash_slot_num=HSN, index_num=INUM, spark=spark, progress=False)


@pytest.mark.jvm
def test_build_into_a_file_uri_equals_the_plain_path_build(spark, workload_source, tmp_path):
    from rmqlab.spark.build import build_index_files

    plain = build_index_files(workload_source, tmp_path / "plain", hash_slot_num=HSN, index_num=INUM, tz=UTC,
                              spark=spark, progress=False)
    uri = build_index_files(workload_source, f"file://{tmp_path}/uri", hash_slot_num=HSN, index_num=INUM, tz=UTC,
                            spark=spark, progress=False)
    assert [p.parent for p in uri] == [tmp_path / "uri"] * len(plain)
    assert [p.read_bytes() for p in uri] == [p.read_bytes() for p in plain]
    assert sorted(os.listdir(tmp_path / "uri")) == [p.name for p in plain]


@pytest.fixture(scope="module")
def uploaded_store(s3_endpoint, small_store):
    """The small store copied into the bucket, as a URI."""
    return upload(small_store, s3_uri(s3_endpoint, "store"))


@pytest.mark.jvm
def test_build_from_a_store_in_s3_into_s3_equals_the_brokers_index(spark, small_store, uploaded_store, tmp_path):
    """The store's index/ was written by the single-process IndexService (Store.dispatch);
    the Spark build from the uploaded CommitLog, into the bucket, is the same bytes."""
    from rmqlab.spark.build import build_index_files
    from rmqlab.spark.sources import StoreSource
    from rmqlab.store.indexservice import is_index_file_name

    broker = sorted(p for p in (small_store / "index").iterdir() if is_index_file_name(p.name))
    assert len(broker) >= 2
    src = StoreSource(uploaded_store)
    local = StoreSource(small_store)
    assert [storage.resolve(f).name for f in src.files] == [os.path.basename(f) for f in local.files]
    assert src.num_partitions > 3
    out = s3_uri(s3_endpoint_of(uploaded_store), "out-store")
    build_index_files(src, out, hash_slot_num=HSN, index_num=INUM, names=[p.name for p in broker],
                      spark=spark, progress=False)
    files = download(out, tmp_path / "downloaded")
    assert [p.name for p in files] == [p.name for p in broker]
    for a, b in zip(broker, files):
        assert a.read_bytes() == b.read_bytes(), a.name


def s3_endpoint_of(uri: str) -> str:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(uri).query)["endpoint_override"][0]


@pytest.mark.jvm
def test_index_stats_of_an_s3_folder_equal_the_local_ones(spark, small_store, uploaded_store):
    from rmqlab.spark.stats import index_stats

    folder = str(storage.resolve(uploaded_store).child("index"))
    remote = index_stats(spark, folder, hash_slot_num=HSN, index_num=INUM).to_pandas()
    local = index_stats(spark, small_store / "index", hash_slot_num=HSN, index_num=INUM).to_pandas()
    assert len(local.files) >= 2
    assert remote.files["path"].tolist() == [str(storage.resolve(folder).child(n)) for n in local.files["name"]]
    assert remote.files.drop(columns="path").equals(local.files.drop(columns="path"))
    for table in ("chain_lengths", "longest_chains", "hottest_hashes", "overall"):
        assert getattr(remote, table).equals(getattr(local, table)), table


@pytest.mark.jvm
def test_the_command_line_passes_uris_through(spark, small_store, uploaded_store, capsys):
    """`rmqlab spark build --store s3://... s3://...` and `rmqlab spark stats s3://<store>`
    (which finds the store's index/ folder) report what the local commands report."""
    import json

    from rmqlab.cli import main

    def run_json(*argv) -> dict:
        assert main([*argv, "--json"]) == 0
        return json.loads(capsys.readouterr().out.splitlines()[-1])

    geo = ["--hash-slot-num", str(HSN), "--index-num", str(INUM)]
    out = s3_uri(s3_endpoint_of(uploaded_store), "out-cli")
    remote = run_json("spark", "build", out, "--store", uploaded_store, "--utc", *geo)
    assert remote["out"] == out and remote["keys"] > 2 * (INUM - 1)
    built = storage.list_dir(storage.resolve(out))
    assert [e.name for e in built] == remote["files"]
    assert remote["bytes"] == sum(e.size for e in built)

    remote_stats = run_json("spark", "stats", uploaded_store, *geo)
    local_stats = run_json("spark", "stats", str(small_store), *geo)
    assert remote_stats == local_stats
