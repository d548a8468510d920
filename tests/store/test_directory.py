"""A whole store directory: dispatch (ConsumeQueue + index) and the queries on it, checked on
the real broker CommitLog and on stores written through the CommitLog writer."""
import hashlib
import shutil
from pathlib import Path

import pytest
from commitlog_stdlib import read_commitlog
from oracles import require_real_data

from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.msgid import offset_msg_id
from rmqlab.rules.dispatch import tags_codes
from rmqlab.store.directory import Store

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "real-data" / "rocketmq" / "store-4e25b979"
B = 1718000000000
SMALL = dict(hash_slot_num=64, index_num=200)


def folder_digest(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def real_store(tmp_path):
    require_real_data(REAL)
    shutil.copytree(REAL / "commitlog", tmp_path / "commitlog")
    return Store(tmp_path, commitlog_file_size=8192, **SMALL)


def test_real_commitlog_dispatches_and_every_message_is_found(real_store):
    report = real_store.dispatch()
    msgs = real_store.messages()
    # README: "it holds 47 v1 messages"; their offsets: the standard-library walk's
    assert len(msgs) == report.messages == 47
    assert msgs["phy_offset"].tolist() == [m["phy_offset"] for m in read_commitlog(real_store.root / "commitlog")]
    assert report.consume_queue_units == 47 and report.index_keys == 47
    q = cq.ConsumeQueue.open(cq.queue_dir(real_store.root, "abc", 0))
    assert q.to_frame()["commitlog_offset"].tolist() == msgs["phy_offset"].tolist()
    for row in msgs.itertuples():
        for mode in ("broker", "verified"):
            found = real_store.query_by_key("abc", row.keys, mode=mode)
            assert row.phy_offset in found["phy_offset"].tolist(), (row.keys, mode)
        exp = real_store.explain_key("abc", row.keys)
        assert exp.problems.empty or set(exp.problems["reason"]) == {"collision"}
        by_id = real_store.query_by_offset_msg_id(offset_msg_id(row.store_host, row.phy_offset))
        assert by_id["phy_offset"].tolist() == [row.phy_offset]
    everything = real_store.query_by_time("abc", int(msgs.store_timestamp.min()), int(msgs.store_timestamp.max()))
    assert everything["phy_offset"].tolist() == sorted(msgs["phy_offset"].tolist(), key=lambda p: (
        int(msgs.set_index("phy_offset").loc[p, "store_timestamp"]), p))


def test_dispatch_is_incremental_and_leaves_the_commitlog_alone(real_store):
    before = folder_digest(real_store.root / "commitlog")
    real_store.dispatch()
    after_first = folder_digest(real_store.root)
    second = real_store.dispatch()
    assert second.messages == 0 and second.from_offset == 47 * 172
    assert folder_digest(real_store.root) == after_first
    assert folder_digest(real_store.root / "commitlog") == before


def write(tmp_path, rows, file_size=4096):
    cols = {"topic": [r[0] for r in rows], "keys": [r[1] for r in rows],
            "store_timestamp": [r[2] for r in rows], "sys_flag": [r[3] for r in rows],
            "tags": [r[4] if len(r) > 4 else None for r in rows]}
    cols["properties"] = [cl.properties_block({k: v for k, v in (("KEYS", key), ("TAGS", tag)) if v})
                          .decode() for key, tag in zip(cols["keys"], cols["tags"])]
    with cl.CommitLogWriter(tmp_path / "commitlog", file_size) as w:
        w.append({k: v for k, v in cols.items() if k not in ("keys", "tags")})
    return Store(tmp_path, commitlog_file_size=file_size, **SMALL)


def test_transaction_rules(tmp_path):
    # plain, prepared, committed, rolled back: ConsumeQueue gets plain+committed, the index all but rollback
    s = write(tmp_path, [("T", "k0", B, 0x0, "a"), ("T", "k1", B + 1, 0x4), ("T", "k2", B + 2, 0x8, "b"),
                         ("T", "k3", B + 3, 0xC)])
    r = s.dispatch()
    units = cq.ConsumeQueue.open(cq.queue_dir(tmp_path, "T", 0)).to_frame()
    msgs = s.messages()
    assert units["commitlog_offset"].tolist() == msgs["phy_offset"][[0, 2]].tolist()
    assert units["tags_code"].tolist() == tags_codes(["a", "b"]).tolist()
    assert r.index_keys == 3
    assert [len(s.query_by_key("T", k)) for k in ("k0", "k1", "k2", "k3")] == [1, 1, 1, 0]


def test_verified_mode_fixes_broker_mode_on_colliding_keys(tmp_path):
    s = write(tmp_path, [("T", "ORDER_Aa", B, 0), ("T", "ORDER_BB", B + 10, 0), ("T", "ORDER_Aa", B + 1700, 0)])
    s.dispatch()
    broker = s.query_by_key("T", "ORDER_Aa")
    verified = s.query_by_key("T", "ORDER_Aa", mode="verified")
    assert len(broker) == 3 and len(verified) == 2
    assert set(verified["keys"]) == {"ORDER_Aa"}
    window = s.explain_key("T", "ORDER_Aa", begin=B + 1500, end=B + 2000)
    assert window.broker.empty and len(window.verified) == 1
    assert window.summary()["missed-time"] == 1


def test_without_an_index_folder_a_key_query_finds_nothing_as_the_broker(tmp_path):
    """IndexService.load lists the index folder's files: with no folder there are none, and
    queryMessage answers every key with nothing (the store is not changed by the query)."""
    s = write(tmp_path, [("T", "k", B, 0)])
    assert not (tmp_path / "index").exists()
    assert s.query_by_key("T", "k").empty
    q = s.explain_key("T", "k")
    assert q.broker.empty and q.trace.stop == "no-files" and not (tmp_path / "index").exists()


def test_time_query_explains_its_searches(tmp_path):
    s = write(tmp_path, [("T", f"k{i}", B + 1000 * i, 0) for i in range(20)])
    s.dispatch()
    got = s.query_by_time("T", B + 4500, B + 9000)
    assert got["store_timestamp"].tolist() == [B + 1000 * i for i in range(5, 10)]
    search = got.attrs["explain"][0]
    assert search["lower"].probes > 0 and search["upper"].probes > 0
    assert str(search["lower"])   # the broker's search, printable for notebooks


def test_broker_queries_read_only_the_broker_answer_and_equal_the_explained_one():
    """query_by_key / query_by_unique_key in broker mode read only the offsets the broker
    returns; the frame is the one explain_key builds from every candidate (hash collisions, time
    windows that cut a chain, max_num, keys never stored, unique keys)."""
    import numpy as np
    import pandas as pd

    from rmqlab.lab.sample import sample_store

    s = sample_store()
    msgs = s.messages()
    keyed = msgs[msgs["keys"].notna()].sample(25, random_state=3)
    ts = msgs["store_timestamp"]
    windows = [dict(), dict(begin=int(ts.quantile(0.4)), end=int(ts.quantile(0.7))), dict(max_num=3)]
    asked = 0
    for row in keyed.itertuples():
        for key in [*row.keys.split(" "), "ORDER_Aa0", "ORDER_BB0", "never stored"]:
            for window in windows:
                got = s.query_by_key(row.topic, key, **window)
                want = s.explain_key(row.topic, key, **window).broker
                pd.testing.assert_frame_equal(got, want)
                asked += len(got)
    assert asked > 500
    for row in msgs[msgs["uniq_key"].notna()].sample(20, random_state=4).itertuples():
        got = s.query_by_unique_key(row.topic, row.uniq_key, begin=int(row.store_timestamp) - 1000)
        pd.testing.assert_frame_equal(got, s.explain_key(row.topic, row.uniq_key, unique=True,
                                                         begin=int(row.store_timestamp) - 1000).broker)
        assert row.phy_offset in got["phy_offset"].to_numpy(np.int64)
