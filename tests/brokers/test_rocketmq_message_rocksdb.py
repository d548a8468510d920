"""rmqlab.formats.messagerocksdb on a real 5.5.0 broker's rocksdbstore/ (the rocksdb-index
scenario: indexRocksDBEnable with indexFileReadEnable=false, transRocksDBEnable,
timerRocksDBEnable). The index records are exactly those IndexRocksDBStore.buildIndex makes of the
messages MessageDecoder decodes from the CommitLog; the key queries equal the broker's answers
(tests/brokers/test_rocketmq_brokers.py, which also judges the timeline's pending timers); verify
finds nothing in the broker's database and names a record changed in a copy; the readers survive
the broker's records mutated."""
from __future__ import annotations

import pandas as pd
import pytest
import rocketmq_harness as rh

from rmqlab.formats import messagerocksdb as mr
from rmqlab.store.directory import Store
from rmqlab.verify import verify_path

RELEASES = [r for r in rh.MESSAGE_ROCKSDB_RELEASES if rh.selected(r, "rocksdb-index")]


@pytest.fixture(scope="module", params=RELEASES)
def written(request):
    return rh.rocketmq_store(request.param, "rocksdb-index")


def _expected_index(bs: rh.BrokerStore) -> set[tuple]:
    """IndexRocksDBStore.buildIndex on every message MessageDecoder decoded: a message with a
    UNIQ_KEY that is not a rolled-back transaction gets a K record a distinct key of KEYS, a T
    record for its TAGS and a U record, each under the hour of its store time."""
    out = set()
    for m in bs.records():
        p = m.get("properties") or {}
        if "topic" not in m or not p.get("UNIQ_KEY") or m["sysFlag"] & 0xC == 0xC:
            continue
        hour, t, u, o = m["storeTimestamp"] // mr.HOUR_MS * mr.HOUR_MS, m["topic"], p["UNIQ_KEY"], m["physicalOffset"]
        out |= {(hour, t, "K", k, u, o, m["storeTimestamp"]) for k in p.get("KEYS", "").split(" ") if k}
        if p.get("TAGS"):
            out.add((hour, t, "T", p["TAGS"], u, o, m["storeTimestamp"]))
        out.add((hour, t, "U", None, u, o, m["storeTimestamp"]))
    return out


def test_the_index_holds_what_build_index_makes_of_the_commitlog(written):
    db = Store(written.store, **written.store_kwargs()).message_rocksdb_records()
    ix = db.index
    got = {(h, t, k, None if pd.isna(v) else v, u, o, s) for h, t, k, v, u, o, s in
           zip(ix["hour"], ix["topic"], ix["index_type"], ix["key"], ix["uniq_key"], ix["phy_offset"],
               ix["store_timestamp"], strict=True)}
    assert got == _expected_index(written) and len(got) == len(ix)
    assert db.index_last_offset == max(r["physicalOffset"] for r in written.records() if "topic" in r)
    assert len(db.timers) > 0 and "timeline_checkpoint" in db.timer_checkpoints


def test_the_trans_family_holds_the_transactions_the_producer_left_unresolved(written):
    """With transRocksDBEnable (half messages into RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC) the trans
    family keeps a record a half message until its commit or rollback (an op message) deletes it:
    the records are exactly the transactions the client left UNKNOW (sends.jsonl), each at its
    half message as MessageDecoder decoded it (offset, size, REAL_TOPIC, __transactionId__),
    checked at least as often as the client was asked (the workload's check-back count), and
    lastOffsetPy is the last half message's offset (MessageRocksDBStorage.writeRecordsForTrans
    moves it for a record put, not for an op's delete)."""
    import json

    db = Store(written.store, **written.store_kwargs()).message_rocksdb_records()
    tx = db.transactions
    sends = [json.loads(line) for line in (written.folder / "sends.jsonl").read_text().splitlines() if line.strip()]
    unknown = {s["msgId"] for s in sends if s.get("transactionState") == "UNKNOW"}
    assert len(unknown) == 3 and set(tx["uniq_key"]) == unknown and len(tx) == 3
    halves = {m["physicalOffset"]: m for m in written.records()
              if m.get("topic") == "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC"}
    for r in tx.itertuples(index=False):
        m = halves[r.phy_offset]
        assert (m["storeSize"], m["properties"]["REAL_TOPIC"], m["properties"]["__transactionId__"]) == (
            r.size, r.topic, r.uniq_key)
    checks = json.loads((written.folder / "workload.json").read_text())["transaction_checks"]
    assert checks > 0 and int(tx["check_times"].sum()) >= checks
    ops = [m["physicalOffset"] for m in written.records() if m.get("topic") == "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"]
    assert len(ops) == 6 and db.transactions_last_offset == max(halves)


def test_verify_is_silent_on_the_broker_and_names_a_changed_record(written, tmp_path):
    import rocksdict

    kw = {"commitlog_file_size": rh.COMMITLOG_FILE_SIZE, "consume_queue_file_size": rh.CONSUME_QUEUE_FILE_SIZE,
          "broker_version": written.release}
    healthy = verify_path(written.store, **kw)
    mine = [f for f in healthy.files if f.kind == "message-rocksdb"]
    assert len(mine) == 1 and mine[0].ok and mine[0].counts["index_records"] > 1000, healthy.summary()
    copy = tmp_path / "store"
    rh.copy_store(written.store, copy)
    db = mr.read_message_rocksdb(written.store / mr.FOLDER)
    k = db.index[db.index["topic"] == "TopicA"].iloc[0]
    opts = rocksdict.Options(raw_mode=True)
    d = rocksdict.Rdict(str(copy / mr.FOLDER), options=opts, column_families={"timer": opts, "trans": opts})
    old = mr.index_key(int(k["hour"]), k["topic"], k["index_type"], k["key"], k["uniq_key"], int(k["phy_offset"]))
    value = d[old]
    del d[old]
    d[mr.index_key(int(k["hour"]), k["topic"], k["index_type"], k["key"], k["uniq_key"], int(k["phy_offset"]) + 1)] \
        = value
    d.close()
    damaged = verify_path(copy, **kw)
    got = [(p.check, p.severity) for f in damaged.files if f.kind == "message-rocksdb" for p in f.problems]
    assert got == [("mrocks.index", "error")], damaged.summary()


def test_readers_survive_hostile_bytes_from_the_brokers_records(written, tmp_path):
    """decode_families and query_index fed the broker's own records mutated
    (fuzz_support.MessageRocksDBTarget seeded from them only): each answers or raises a typed
    error naming the folder, record and field."""
    import fuzz_support as fs

    from rmqlab.formats.rocksdb import read_families

    families = read_families(written.store / mr.FOLDER)
    families = {n: pairs[:200] for n, pairs in families.items()}   # the seed's size: a few hundred records
    rt = fs.run_budget(fs.MessageRocksDBTarget(families, only_broker=True), 400, tmp_path, swarm=50)
    assert rt.failures == [] and rt.typed_errors > 0


def test_rocksdb_key_query_on_the_command_line(written, capsys):
    """``rmqlab store query --index rocksdb --now`` answers a key as the broker did."""
    import json

    from rmqlab.cli import main

    a = written.answers["broker"]
    q = next(q for q in a["key_queries"] if q["begin"] == 0 and len(q["broker_offsets"]) > 1)
    assert main(["store", "query", str(written.store), "--topic", q["topic"], "--key", q["key"], "--max",
                 str(q["maxNum"]), "--index", "rocksdb", "--now", str(q["end"] + 600_000), "--json",
                 "--consume-queue-file-size", str(rh.CONSUME_QUEUE_FILE_SIZE)]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert sorted(r["phy_offset"] for r in got) == q["broker_offsets"]
