"""Sources for Spark: a synthetic workload generated in pieces, a store split by CommitLog file.
Each is checked against the single-process code on the same data (the generator, the
CommitLog encoder and reader, expand_columns, bulk_build); the store's messages and keys also
against a standard-library walk of its CommitLog (tests/support/commitlog_stdlib.py) and
IndexService.buildIndex's key rule (tests/support/indexfile_stdlib.py), which share no code with
rmqlab."""
from __future__ import annotations

import datetime

import indexfile_stdlib as ix
import pyarrow as pa
import pytest
from commitlog_stdlib import read_commitlog
from oracles import REAL_DATA, needs_real_data

from rmqlab.formats import commitlog as cl
from rmqlab.lab.workload import Workload
from rmqlab.spark.sources import KEY_SCHEMA, MESSAGE_SCHEMA, StoreSource, WorkloadSource
from rmqlab.store.indexservice import ExpandedKeys, bulk_build, expand_columns

UTC = datetime.UTC
FILE = 64 * 1024
REAL = REAL_DATA / "rocketmq" / "store-4e25b979"


def all_messages(src, body=False):
    return [pa.concat_tables(list(src.messages(i, body=body))) for i in range(src.num_partitions)]


def all_keys(src) -> ExpandedKeys:
    t = pa.Table.from_batches([b for i in range(src.num_partitions) for b in src.keys(i)], schema=KEY_SCHEMA)
    return ExpandedKeys(t.column("key").combine_chunks(), t.column("phy_offset").to_numpy(),
                        t.column("store_timestamp").to_numpy())


@pytest.fixture(scope="module")
def workload_source():
    w = Workload(messages=3000, seed=11, keys_per_message=1.5, collision_pairs=3, collision_fraction=0.05)
    return WorkloadSource(w, commitlog_file_size=FILE, chunk_messages=500)


def test_workload_pieces_fill_their_commitlog_files_exactly(workload_source, tmp_path):
    from rmqlab.lab.workload import generate

    src = workload_source
    assert src.num_partitions >= 4
    pieces = all_messages(src, body=True)
    for i, t in enumerate(pieces):
        phy = t.column("phy_offset").to_numpy()
        stream = generate(src.pieces[i].workload)        # the piece's sub-workload, whole
        assert stream.slice(0, t.num_rows).column("uniq_key").equals(t.column("uniq_key"))
        # the single-process CommitLog encoder places the same rows at the same offsets
        enc = cl.encode_messages(stream.slice(0, t.num_rows), i * FILE, FILE)
        assert enc.phy_offset.tolist() == phy.tolist()
        assert enc.total_size.tolist() == t.column("total_size").to_numpy().tolist()
        assert not any(f.full for f in enc.files), "a piece spilled into the next CommitLog file"
        if i < len(pieces) - 1:
            # full: the next message of its stream would not have fitted (a roll-over)
            nxt = int(cl.record_sizes(stream.slice(t.num_rows, 1), FILE)[0])
            assert enc.end_offset + nxt + cl.END_FILE_MIN_BLANK_LENGTH > (i + 1) * FILE
        # the encoded records decode back to the same columns
        d = tmp_path / str(i)
        d.mkdir()
        for f in enc.files:
            buf = bytearray(FILE)
            buf[f.position:f.position + len(f.data)] = f.data.tobytes()
            (d / f.name).write_bytes(bytes(buf))
        decoded = cl.read_columns(d, body=True)
        for name in ("topic", "queue_id", "store_timestamp", "keys", "uniq_key", "body", "phy_offset"):
            assert decoded[name].tolist() == t.column(name).to_pylist(), name


def test_workload_pieces_join_in_time_and_keep_order_ids_apart(workload_source):
    pieces = all_messages(workload_source)
    ts = [t.column("store_timestamp").to_numpy() for t in pieces]
    m = workload_source.messages_per_file
    g = 0.005 + 4 / m ** 0.5                      # the documented gap, as a share of a piece's span
    for a, b in zip(ts, ts[1:]):
        assert a.max() < b.min()                  # no overlap: a short quiet gap between pieces
        assert b.min() - a.max() < 2 * g * (a.max() - a.min()) + 20
    keys = [k for t in pieces for v in t.column("keys").to_pylist() if v for k in v.split(" ")]
    orders = [k for k in keys if k.startswith("ORDER_") and k[6:8] not in ("Aa", "BB")]
    assert len(orders) == len(set(orders)) > 1000
    total = sum(t.num_rows for t in pieces)
    assert abs(total - 3000) < 0.05 * 3000


def test_keys_are_expand_columns_of_the_messages(workload_source):
    src = workload_source
    want = expand_columns(pa.concat_tables(all_messages(src)).to_pandas())
    got = all_keys(src)
    assert got.key_list() == want.key_list()
    assert got.phy_offsets.tolist() == want.phy_offsets.tolist()
    assert got.store_timestamps.tolist() == want.store_timestamps.tolist()


@pytest.mark.jvm
def test_frames_equal_the_pieces(spark, workload_source):
    src = workload_source
    msgs = src.messages_frame(spark).toPandas()
    want = pa.concat_tables(all_messages(src)).to_pandas()
    assert list(msgs.columns) == MESSAGE_SCHEMA.names
    assert msgs.equals(want)
    keys = src.keys_frame(spark)
    assert keys.rdd.getNumPartitions() == src.num_partitions
    assert keys.toPandas()["key"].tolist() == all_keys(src).key_list()


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    from rmqlab.lab.generate import generate_store

    root = tmp_path_factory.mktemp("store")
    w = Workload(messages=2500, seed=4, transaction_fraction=0.1, commit_fraction=0.6,
                 rollback_fraction=0.3, drain=True)
    generate_store(root, w, commitlog_file_size=FILE, hash_slot_num=61, index_num=1000)
    return root


def test_store_source_splits_by_file_and_reads_what_the_reader_reads(small_store):
    src = StoreSource(small_store)
    assert src.num_partitions == len(cl.store_files(small_store / "commitlog")) > 3
    whole = cl.read_columns(small_store / "commitlog", body=False)
    got = pa.concat_tables(all_messages(src)).to_pandas()
    for name in MESSAGE_SCHEMA.names:
        assert got[name].tolist() == whole[name].tolist(), name
    keys = all_keys(src)
    want = expand_columns(whole)
    assert keys.key_list() == want.key_list() and len(want) > 2000
    assert keys.phy_offsets.tolist() == want.phy_offsets.tolist()


def test_store_source_keys_are_the_broker_rule_keys_of_a_stdlib_walk(small_store):
    """The keys the source emits, in order, are IndexService.buildIndex's keys of each message of
    a standard-library walk of the CommitLog (a rolled-back transaction has none)."""
    walk = read_commitlog(small_store / "commitlog")
    assert len(walk) == len(cl.read_columns(small_store / "commitlog", body=False)) > 2000
    want = [(k, m["phy_offset"]) for m in walk for k in ix.index_keys(m)]
    keys = all_keys(StoreSource(small_store))
    assert list(zip(keys.key_list(), keys.phy_offsets.tolist())) == want


def test_the_dispatched_index_holds_the_broker_rule_keys(small_store):
    """small_store's index/ is rmqlab's own one-message-at-a-time dispatch (Store.dispatch), not a
    broker's: a standard-library read of its files (each slot's chain, every entry) holds exactly
    the (key hash, offset) pairs buildIndex's rule gives for the standard-library walk."""
    walk = read_commitlog(small_store / "commitlog")
    want = ix.model_entries(walk)
    assert sum(want.values()) > 2000
    assert ix.file_entries(small_store / "index", 61) == want


@pytest.mark.jvm
def test_spark_build_from_a_store_matches_the_dispatched_index(spark, small_store, tmp_path):
    """The store's index/ was written by rmqlab's Store.dispatch (IndexService's order, one message
    at a time, files named by its clock), and checked against the key rule just above; the Spark
    build from the CommitLog, given the same names, is the same bytes."""
    from rmqlab.spark.build import build_index_files
    from rmqlab.store.indexservice import is_index_file_name

    dispatched = sorted(p for p in (small_store / "index").iterdir() if is_index_file_name(p.name))
    assert len(dispatched) >= 2
    got = build_index_files(StoreSource(small_store), tmp_path / "index", hash_slot_num=61,
                            index_num=1000, names=[p.name for p in dispatched], spark=spark, progress=False)
    assert [p.name for p in got] == [p.name for p in dispatched]
    for a, b in zip(dispatched, got):
        assert a.read_bytes() == b.read_bytes(), a.name


@pytest.mark.jvm
def test_spark_build_from_a_workload_source_equals_bulk_build(spark, workload_source, tmp_path):
    from rmqlab.spark.build import build_index_files

    exp = all_keys(workload_source)
    cap = 999
    assert len(exp) > 3 * cap
    times = [int(exp.store_timestamps[lo]) for lo in range(0, len(exp), cap)]
    want = bulk_build(exp, tmp_path / "single", hash_slot_num=61, index_num=1000,
                      clock=iter(times).__next__, tz=UTC)
    reports = []
    got = build_index_files(workload_source, tmp_path / "spark", hash_slot_num=61, index_num=1000, tz=UTC,
                            spark=spark, progress=lambda done, total, what: reports.append((done, total)))
    assert [p.name for p in got] == [p.name for p in want]
    for a, b in zip(want, got):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert reports and reports[-1][0] == reports[-1][1] > 0      # the last report says: all done
    assert not [p for p in (tmp_path / "spark").iterdir() if p not in got]   # runs removed

    # max_keys: exactly the first three full files
    got3 = build_index_files(workload_source.keys_frame(spark), tmp_path / "spark3", hash_slot_num=61,
                             index_num=1000, tz=UTC, max_keys=3 * cap, progress=False)
    assert [p.read_bytes() for p in got3] == [p.read_bytes() for p in want[:3]]


@needs_real_data(REAL / "commitlog")
def test_store_source_on_the_real_broker_commitlog():
    """../shared/real-data/rocketmq/README.md: "it holds 47 v1 messages (magic 0xDAA320A7) from
    offset 0 to 8,084" and "an index built from this file has one key per message
    (`abc#<KEYS>`)"; the offsets and keys come from the standard-library walk."""
    walk = read_commitlog(REAL / "commitlog")
    assert len(walk) == 47 and walk[-1]["phy_offset"] + walk[-1]["total_size"] == 8084
    src = StoreSource(REAL)
    got = pa.concat_tables(all_messages(src)).to_pandas()
    assert got["phy_offset"].tolist() == [m["phy_offset"] for m in walk]
    assert got["queue_offset"].tolist() == [m["queue_offset"] for m in walk]
    keys = all_keys(src)
    assert list(zip(keys.key_list(), keys.phy_offsets.tolist())) == [
        (f"abc#{m['properties']['KEYS']}", m["phy_offset"]) for m in walk]
