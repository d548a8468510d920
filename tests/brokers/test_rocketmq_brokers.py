"""rmqlab judged by real RocketMQ brokers: each release of :data:`rocketmq_harness.RELEASES`
writes a store (clean stop, kill -9 while sending, restart with the broker's own recovery), and
its own code answers: ``MessageDecoder`` decodes every CommitLog record, the running broker
answers queryMessage, min/max offsets and examineConsumeStats (see tests/support/rocketmq_harness.py).

Nothing compared here was produced by rmqlab: every expected value is a broker's answer or the
broker's own decode. Answers were recorded while the broker ran; a broker keeps writing after
them (transaction check-backs, deliveries), so each comparison is taken at the CommitLog end the
answers step saw (``commitlog_end_before``).

The first run builds the stores (20-60 s a scenario, once per release and driver version) into the
cache of tests/support/broker_harness.py; later runs read it. ``RMQLAB_ROCKETMQ_RELEASES=4.9.7,5.3.3``
limits the releases; ``python tests/brokers/build_rocketmq.py`` warms the cache.
"""
from __future__ import annotations

import base64
import contextlib
import datetime
import io
import ipaddress
import json
import os
import re
import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import rocketmq_harness as rh

from rmqlab.cli import main as rmqlab_main
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import rocksdbcq
from rmqlab.formats.commitlog import iter_messages
from rmqlab.formats.msgid import offset_msg_id
from rmqlab.formats.storepaths import queue_folders
from rmqlab.rules.topics import is_system_topic
from rmqlab.rules.versions import layout_facts
from rmqlab.store.directory import Store
from rmqlab.verify import verify_path

MAGIC_VERSION = {0xDAA320A7 - (1 << 32): 1, 0xDAA320AB - (1 << 32): 2}

CASES = [(release, scenario) for release in rh.selected_releases() for scenario in rh.scenarios(release)]
ANSWERED = [(release, scenario) for release, scenario in CASES
            if scenario not in ("crash", "dledger-crash", "rocksdb-crash")]


def _id(case: tuple[str, str]) -> str:
    return "-".join(case)


def test_the_core_matrix_runs_each_scenario_where_the_release_has_it():
    """The core matrix (what CI checks) names each scenario of :data:`rh.ALL_SCENARIOS`, only on
    releases that have it, each of its releases' clean stores, and with each restart the store it
    copies."""
    has = {name: set(rh.RELEASES) for name in rh.SCENARIOS} | {
        name: {r for r in rh.RELEASES if runs(r)} for name, runs in rh.EXTRA_SCENARIOS.items()}
    assert set(rh.CORE_MATRIX) == set(rh.ALL_SCENARIOS)
    for name, releases in rh.CORE_MATRIX.items():
        assert releases and set(releases) <= has[name], name
        assert set(releases) <= set(rh.CORE_MATRIX["clean"]), name
    for restart, source in rh.RESTARTS.items():
        assert set(rh.CORE_MATRIX[restart]) <= set(rh.CORE_MATRIX[source]), restart


@pytest.fixture(scope="module", params=CASES, ids=_id)
def written(request) -> rh.BrokerStore:
    return rh.rocketmq_store(*request.param)


@pytest.fixture(scope="module", params=ANSWERED, ids=_id)
def answered(request) -> rh.BrokerStore:
    return rh.rocketmq_store(*request.param)


def _store(bs: rh.BrokerStore) -> Store:
    return Store(bs.store, **bs.store_kwargs())


def _host(text_or_map) -> tuple[str, int]:
    if isinstance(text_or_map, dict):
        return str(ipaddress.ip_address(text_or_map["ip"])), int(text_or_map["port"])
    host, _, port = str(text_or_map).rpartition(":")
    return str(ipaddress.ip_address(host.strip("[]"))), int(port)


def _commitlog_folders(bs: rh.BrokerStore) -> list[Path]:
    """The folders holding the store's CommitLog files: one, each of several paths, or a plain
    CommitLog's and the ledger's it was switched to."""
    if bs.scenario == "dledger-mixed":
        return [bs.store / "commitlog", bs.store / f"dledger-{rh.DLEDGER_SELF_ID}" / "data"]
    return [bs.store / p for p in bs.commitlog_paths] if bs.commitlog_paths else [bs.commitlog]


def _java_messages(bs: rh.BrokerStore) -> Iterator[dict]:
    return (r for r in bs.records() if "blank" not in r and "torn" not in r)


# -- 0. the store holds what the release can write -----------------------------------------

def test_the_store_holds_what_the_release_writes(written):
    """Each store reaches the features its release line has (the line, not rmqlab, says which):
    ConsumeQueueExt everywhere, light message queues from 4.9.3, the timer store, a BatchCQ
    topic and pop consumption from 5.0.0, a compaction topic from 5.1.0, IPv6 hosts in the
    crash stores where the release's client and broker reach ::1. The rocksdb store (5.2.0+,
    storeType=defaultRocksDB) keeps every queue in one RocksDB database, consumequeue/ itself,
    with no ConsumeQueueExt and no BatchConsumeQueue (RocksDBConsumeQueueStore has neither), and
    its topics, groups and consumer offsets in RocksDB config databases under config/. The
    multipath store's CommitLog files alternate between its folders as the broker places them."""
    v, store = rh.version_tuple(written.release), written.store
    facts = written.store_facts()
    first = min(p.name for p in written.commitlog.iterdir())
    assert int(first) == 0, f"{written.commitlog}: starts at {first}: the broker deleted its first files (a disk " \
                            f"over diskSpaceCleanForciblyRatio with cleanFileForciblyEnable, or an expired store)"
    rocks = written.scenario in rh.ROCKSDB_CQ_SCENARIOS
    assert rocksdbcq.is_rocksdb(store / "consumequeue") == rocks
    if rocks:
        queues = rocksdbcq.RocksDBConsumeQueues.open(store / "consumequeue").units
        assert not (store / "consumequeue_ext").exists() and not (store / "batchconsumequeue").exists()
        assert all(rocksdbcq.is_rocksdb(store / "config" / name) for name in ("topics", "subscriptionGroups",
                                                                                "consumerOffsets"))
    else:
        assert any(p.stat().st_size and p.read_bytes().strip(b"\0")
                   for p in (store / "consumequeue_ext").rglob("*/*/*"))
    # light message queues where the records carry INNER_MULTI_QUEUE_OFFSET: 4.9.3+, but not a 5.x
    # DLedger CommitLog's (CommitLog.doAppend adds it, DLedgerCommitLog's serializer does not)
    lmq = any("INNER_MULTI_QUEUE_OFFSET" in m["properties"] for m in _java_messages(written))
    assert lmq == (v >= rh.LMQ_SINCE and not (written.scenario in rh.LEDGER_ONLY and v >= (5, 0, 0)))
    has_lmq = bool((queues["topic"] == "%LMQ%lmq-a").any()) if rocks else any(
        (store / "consumequeue").glob("%LMQ%lmq-a/0/*"))
    if written.scenario == "rocksdb-crash":
        # the broker writes the RocksDB ConsumeQueue without a write-ahead log (AbstractRocksDBStorage:
        # disableWAL): kill -9 lost what RocksDB had not flushed, most of a minute's workload
        records = sum(1 for _ in _java_messages(written))
        assert len(queues) < records / 2, (len(queues), records)
        notes = verify_path(store, hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM,
                            commitlog_file_size=rh.COMMITLOG_FILE_SIZE, broker_version=written.release).notes
        assert any(n.startswith(f"{store / 'consumequeue'}: ") and "without a write-ahead log" in n for n in notes)
    else:
        assert has_lmq == (lmq and (not rocks or layout_facts(written.release).rocksdb_lmq))
    assert (store / "timerwheel").exists() == (v >= (5, 0, 0))
    if written.scenario not in rh.RESTARTS:     # a restart writes no workload of its own
        assert ("batch_cq_topic" in written.reached) == (v >= (5, 0, 0)), written.skipped
        assert ("compaction_topic" in written.reached) == (v >= (5, 1, 0)), written.skipped
        assert ("pop_consumer" in written.reached) == (v >= (5, 0, 0)), written.skipped
    if v >= (5, 0, 0) and not rocks:
        assert any((store / "batchconsumequeue" / "TopicBatchCQ").rglob("*"))
    if v >= (5, 1, 0):
        assert "TopicCompact" in facts["topics"]
    assert facts["compressed"] >= 6
    if written.scenario in rh.LEDGER_ONLY:    # the CommitLog is a DLedger group's, and only that
        assert written.commitlog == store / "dledger-n0" / "data" and not any(store.glob("commitlog/*"))
        assert all(r.get("dledger") for r in written.records() if "torn" not in r)
    if written.scenario == "dledger-mixed":   # the plain files, sealed; the ledger from where they end
        plain = sorted((store / "commitlog").iterdir())
        ledger = sorted((store / "dledger-n0" / "data").iterdir())
        divided = int(plain[-1].name) + plain[-1].stat().st_size
        assert len(plain) >= 2 and int(ledger[0].name) == divided
        records = [r for r in written.records() if "topic" in r]
        assert [r["offset"] for r in records if r.get("dledger")] == [r["offset"] for r in records
                                                                      if r["offset"] >= divided]
        assert any(r["offset"] < divided for r in records)
    if written.scenario in ("crash", "recovered") and not rh.no_ipv6_reason(written.release):
        assert facts["ipv6_store_hosts"] > 0 and facts["ipv6_born_hosts"] > 0
    if written.commitlog_paths:   # the CommitLog over several folders: MultiPathMappedFileQueue's placement
        paths = sorted(written.commitlog_paths)
        placed = {f.name: p for p in paths for f in (store / p).iterdir()}
        assert len(placed) >= 3 and {placed[n] for n in placed} == set(paths)
        assert all(placed[n] == paths[int(n) // rh.COMMITLOG_FILE_SIZE % len(paths)] for n in placed), placed


# -- 1. every record rmqlab decodes equals MessageDecoder's decode --------------------------

#: the sizes and counts every harness broker.conf sets, by Store keyword; the rest are the broker's
#: defaults (mapperFileSizeBatchConsumeQueue: MessageStoreConfig's 13,800,000)
CONFIGURED = {"commitlog_file_size": rh.COMMITLOG_FILE_SIZE, "consume_queue_file_size": rh.CONSUME_QUEUE_FILE_SIZE,
              "consume_queue_ext_file_size": rh.CONSUME_QUEUE_EXT_FILE_SIZE, "hash_slot_num": rh.HASH_SLOT_NUM,
              "index_num": rh.INDEX_NUM, "batch_consume_queue_file_size": 13_800_000}


def test_the_store_tells_its_broker_conf(written):
    """Opened with no file size and no index count, the store reads each from its own files as
    the value the broker was configured with (a DLedger CommitLog's too: DLedgerCommitLog sets
    mappedFileSizeForEntryData to mappedFileSizeCommitLog); a kind the store has no file of is
    the broker's default. `rmqlab store info` without options then says what it says with them."""
    kw = {k: v for k, v in written.store_kwargs().items() if k not in CONFIGURED}
    settings = Store(written.store, **kw).settings
    folders = {"commitlog_file_size": _commitlog_folders(written),
               "consume_queue_file_size": [written.store / "consumequeue"],
               "consume_queue_ext_file_size": [written.store / "consumequeue_ext"],
               "batch_consume_queue_file_size": [written.store / "batchconsumequeue"],
               "hash_slot_num": [written.store / "index"], "index_num": [written.store / "index"]}
    for keyword, configured in CONFIGURED.items():
        has_files = any(p.is_file() and p.stat().st_size for f in folders[keyword] if f.is_dir() for p in f.rglob("*")
                        if re.fullmatch(r"\d{17,20}", p.name))
        got = settings[keyword]
        if has_files:
            assert (got.value, got.source) == (configured, "files"), (keyword, got)
        else:
            assert got.source == "default", (keyword, got)
    if written.scenario in rh.ROCKSDB_CQ_SCENARIOS or written.commitlog_paths:
        return
    args = [*(["--enable-lmq", "--enable-multi-dispatch"] if kw["enable_lmq"] else []), "--consume-queue-ext"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert rmqlab_main(["store", "info", str(written.store), "--json", *args]) == 0
    told = json.loads(out.getvalue())
    given = json.loads(json.dumps(_store(written).info(), default=str))
    assert {k: v["value"] for k, v in told.pop("settings").items()} == {
        k: v["value"] for k, v in given.pop("settings").items()}
    assert {k: told[k] for k in given} == given     # the command adds config/'s reading to Store.info()


def test_commitlog_records_equal_message_decoder(written):
    """Field by field; MessageDecoder leaves the body null when BODYLEN is 0 (4.2.0's rollback
    records), rmqlab gives b"": both are the empty body."""
    java = list(_java_messages(written))
    ours = list(iter_messages(written.commitlog, check_crc=True, on_error="report"))
    assert len(java) > 500
    assert len(ours) == len(java), (len(ours), len(java))
    for j, m in zip(java, ours):
        where = f"{written.release} {written.scenario} record at {j['offset']}"
        assert m.phy_offset == j["offset"] == j["physicalOffset"], where
        got = {"storeSize": m.total_size, "version": m.version, "bodyCRC": m.body_crc, "queueId": m.queue_id,
               "flag": m.flag, "queueOffset": m.queue_offset, "sysFlag": m.sys_flag,
               "bornTimestamp": m.born_timestamp, "bornHost": _host(m.born_host),
               "storeTimestamp": m.store_timestamp, "storeHost": _host(m.store_host),
               "reconsumeTimes": m.reconsume_times, "preparedTransactionOffset": m.prepared_transaction_offset,
               "body": m.body, "topic": m.topic, "properties": dict(m.properties),
               "msgId": offset_msg_id(m.store_host, m.phy_offset)}
        want = {"storeSize": j["storeSize"], "version": MAGIC_VERSION[j["magic"]], "bodyCRC": j["bodyCRC"],
                "queueId": j["queueId"], "flag": j["flag"], "queueOffset": j["queueOffset"], "sysFlag": j["sysFlag"],
                "bornTimestamp": j["bornTimestamp"], "bornHost": _host(j["bornHost"]),
                "storeTimestamp": j["storeTimestamp"], "storeHost": _host(j["storeHost"]),
                "reconsumeTimes": j["reconsumeTimes"], "preparedTransactionOffset": j["preparedTransactionOffset"],
                "body": base64.b64decode(j["body"] or ""), "topic": j["topic"], "properties": j["properties"],
                "msgId": j["msgId"]}
        assert got == want, where


def test_compressed_bodies_are_what_the_consumer_gets(written):
    """Every record with a compressed body (SYSFLAG 0x1): rmqlab's body, decompressed with the
    codec its SYSFLAG names, is the body the release's own MessageDecoder gives with
    deCompressBody (decoded.jsonl's plainBody). Clients before 4.9.4 compress with zlib and
    write no type bits; from 4.9.4 the workload's producers also use LZ4, ZSTD and ZLIB level 9
    (MixAll.MESSAGE_COMPRESS_TYPE), and each reaches the store with its type bits."""
    from rmqlab.formats.commitlog.body import codec_of, decompress_body

    compressed = {j["offset"]: j for j in _java_messages(written) if j["sysFlag"] & 0x1}
    assert len(compressed) >= 6
    ours = {m.phy_offset: m for m in iter_messages(written.commitlog) if m.phy_offset in compressed}
    assert set(ours) == set(compressed)
    codecs = set()
    for offset, j in compressed.items():
        assert "plainBodyError" not in j, j
        m = ours[offset]
        assert decompress_body(m.body, m.sys_flag) == base64.b64decode(j["plainBody"]), offset
        codecs.add(codec_of(m.sys_flag))
    typed = rh.version_tuple(written.release) >= (4, 9, 4)
    assert codecs == ({"zlib", "lz4", "zstd"} if typed else {"zlib"}), codecs
    if "workload" in written.answers:
        assert (written.answers["workload"]["reached"].get("compression_types") == "LZ4,ZSTD,ZLIB") == typed


def test_blank_records_end_every_full_file(written):
    """Every CommitLog file before the last one holding data (the active file; a preallocated
    empty file may follow it) ends in the broker's blank record, where the next file starts."""
    records = written.records()
    blanks = [r for r in records if r.get("blank")]
    files = sorted({r["file"] for r in records})
    assert len(files) >= 2
    assert {r["file"] for r in blanks} == set(files[:-1])
    for r in blanks:
        start = int(r["file"])
        assert r["offset"] + r["storeSize"] == start + rh.COMMITLOG_FILE_SIZE, r


# -- 2. rmqlab verify: no error on a store a broker wrote -----------------------------------

def _unit_of(p) -> tuple[str, int, int]:
    """(topic, queue id, queue offset) of the unit a ConsumeQueue problem names."""
    path = Path(p.error.path)
    return path.parent.parent.name, int(path.parent.name), (int(path.name) + p.error.offset) // cq.UNIT_SIZE


def _units_in_files(folder: Path) -> int:
    """The units of a queue folder with a size, read as raw big-endian longs and ints."""
    unit = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags", ">i8")])
    return sum(int((np.fromfile(f, unit)["size"] > 0).sum()) for f in sorted(folder.iterdir()))


def _first_order_break(folder: Path) -> int | None:
    """The first unit whose commitlog offset is not above its predecessor's, from the raw bytes."""
    unit = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags", ">i8")])
    units = np.concatenate([np.fromfile(f, unit) for f in sorted(folder.iterdir())])
    offsets = units["offset"][units["size"] > 0].astype(np.int64)
    down = np.flatnonzero(offsets[1:] <= offsets[:-1])
    return int(down[0]) + 1 if len(down) else None


def _never_redispatched(bs: rh.BrokerStore) -> int:
    """Messages a RocksDB ConsumeQueue store lacks units for because its broker never dispatched
    them, as the broker's own log testifies: a restart after kill -9, its queues empty (RocksDB
    without a write-ahead log keeps nothing it had not flushed), whose CommitLog.recoverAbnormally
    logged "recover from this mapped file F" for a file F after the first (the newest file whose
    first message is older than the checkpoint) re-dispatches from F only, so the messages before
    F that go to a queue (not prepared or rolled-back transaction records) never get a unit.
    Counted from MessageDecoder's decode; 0 for any other store."""
    if bs.scenario not in rh.ROCKSDB_CQ_SCENARIOS:
        return 0
    pattern = re.compile(r"recover from this mapped file \S*/commitlog/(\d{20})")
    starts = [int(m[1]) for log in sorted((bs.folder / "logs").rglob("store*.log"))
              for m in pattern.finditer(log.read_text(encoding="utf-8", errors="replace"))]
    if not starts or min(starts) == 0:
        return 0
    start = min(starts)
    queued = [m for m in _java_messages(bs) if m["physicalOffset"] < start and (m["sysFlag"] & 0xC) in (0x0, 0x8)]
    db = rocksdbcq.RocksDBConsumeQueues.open(bs.store / "consumequeue")
    held = set(db.units["commitlog_offset"].tolist())
    return sum(1 for m in queued if m["physicalOffset"] not in held)


def test_verify_reports_no_error(written):
    """Clean and recovered stores, and the crash store too: kill -9 of the JVM leaves the page
    cache, so what the broker wrote is whole (warnings, such as a torn tail, are allowed).

    Except where the broker itself logged that it appended units at the wrong place (a 5.2+
    DLedger broker restarted after kill -9: its recovery truncates the queues too low, then its
    dispatch resumes further on and appends at each queue's write position; see
    :meth:`BrokerStore.misplaced_units`). There verify reports exactly what the broker's log and
    answers testify, per queue it names: the misplaced units (cq.queue-offset: the first unit and
    its message's QUEUEOFFSET as logged, the count of lines), the stale units after them from the
    broker's max offset on (cq.order, cq.ext-order), and the messages whose QUEUEOFFSET is past the
    queue's last unit (cq.missing-unit, counted from MessageDecoder's decode and the raw files)."""
    report = verify_path(written.store, hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM,
                         commitlog_file_size=rh.COMMITLOG_FILE_SIZE,
                         consume_queue_file_size=rh.CONSUME_QUEUE_FILE_SIZE, broker_version=written.release,
                         commitlog_paths=written.commitlog_paths)
    misplaced = written.misplaced_units()
    undispatched = _never_redispatched(written)
    if undispatched:
        # the broker's own recovery left these messages without units: verify names them, no more
        assert [(p.check, p.count) for p in report.errors] == [("rcq.missing-unit", undispatched)], \
            "\n".join(report.summary())
        return
    if not misplaced:
        assert report.errors == [], "\n".join(report.summary())
        return
    assert written.scenario == "dledger-recovered" and rh.version_tuple(written.release) >= (5, 2, 0), misplaced
    max_offset = {(q["topic"], q["queueId"]): q["maxOffset"] for q in written.answers["broker"]["queues"]}
    by_check: dict[str, list] = {}
    for p in report.errors:
        by_check.setdefault(p.check, []).append(p)
    assert set(by_check) <= {"cq.queue-offset", "cq.order", "cq.ext-order", "cq.missing-unit"}, report.summary()
    first = {(t, q): (u, int(p.error.reason.split("has QUEUEOFFSET ")[1].split(".")[0]), p.count)
             for p in by_check["cq.queue-offset"] for t, q, u in [_unit_of(p)]}
    assert first == {k: (*v[0], len(v)) for k, v in misplaced.items()}
    for check in ("cq.order", "cq.ext-order"):
        stale = {(t, q): u for p in by_check.get(check, []) for t, q, u in [_unit_of(p)]}
        assert stale == {k: max_offset[k] for k in stale} and set(stale) <= set(misplaced), (check, stale)
    assert set(first) == {(t, q) for t, q, _ in map(_unit_of, by_check["cq.order"])}
    ends = {k: _units_in_files(cq.queue_dir(written.store, *k)) for k in misplaced}
    past = sum(1 for m in _java_messages(written) if (m["topic"], m["queueId"]) in ends
               and m["queueOffset"] >= ends[(m["topic"], m["queueId"])])
    assert [p.count for p in by_check.get("cq.missing-unit", [])] == ([past] if past else [])


FIVE = [(release, scenario) for release, scenario in CASES if rh.version_tuple(release) >= (5, 0, 0)]


def _assert_ran_in_spark_workers(runs, before: list) -> None:
    """A Spark pool made since `before` (a copy of `runs`) ran its units in other processes than
    this one. The driver's own checks after it (the POP state's read of the CommitLog, say) may
    make thread pools of their own in this process, so the newest pool is not always Spark's."""
    new = [r for r in runs if r.label.startswith("spark verify") and not any(r is b for b in before)]
    assert len(new) == 1, runs
    assert new[0].units >= 1 and new[0].pids and os.getpid() not in new[0].pids, new[0]


@pytest.mark.parametrize("case", FIVE, ids=_id)
def test_spark_verify_reports_what_verify_reports(case, spark, s3_endpoint):
    """`rmqlab spark verify` (each CommitLog file, index file and 64 ConsumeQueues a Spark task;
    tests/spark/test_verify.py) on every store a 5.x broker wrote: the report of one process,
    byte for byte, its units run in Spark's Python workers; and of the store copied into an S3
    bucket, read by URI, the same report naming the files by the URI."""
    from s3server import BUCKET, s3_uri, upload

    from rmqlab.spark.verify import verify_with_spark
    from rmqlab.tables.pool import RUNS

    bs = rh.rocketmq_store(*case)
    kw = dict(hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM, commitlog_file_size=rh.COMMITLOG_FILE_SIZE,
              consume_queue_file_size=rh.CONSUME_QUEUE_FILE_SIZE, broker_version=bs.release,
              commitlog_paths=bs.commitlog_paths)
    want = verify_path(bs.store, jobs=1, **kw)
    before = list(RUNS)
    got = verify_with_spark(spark, bs.store, **kw)
    _assert_ran_in_spark_workers(RUNS, before)
    assert got.summary() == want.summary()
    assert json.dumps(got.as_dict(), default=str) == json.dumps(want.as_dict(), default=str)
    if bs.commitlog_paths:
        return      # a URI names one folder: a CommitLog over several paths is not read by URI
    key = f"brokers/{_id(case)}"
    before = list(RUNS)
    in_s3 = verify_with_spark(spark, upload(bs.store, s3_uri(s3_endpoint, key)), **{**kw, "commitlog_paths": None})
    _assert_ran_in_spark_workers(RUNS, before)
    assert json.dumps(in_s3.as_dict(), default=str) == \
        json.dumps(want.as_dict(), default=str).replace(str(bs.store), f"s3://{BUCKET}/{key}")


FOUR = [(release, scenario) for release, scenario in CASES if rh.version_tuple(release) < (5, 0, 0)]


@pytest.mark.parametrize("case", FOUR, ids=_id)
def test_verify_jobs_reports_what_one_process_reports(case):
    """`rmqlab verify --jobs 2` (each CommitLog file's walk, checks and joins with the index
    entries and queue units that point into it in a worker process; tests/commands/test_jobs.py,
    tests/verify/test_joins_apart.py) on every store a 4.x broker wrote: the report of one
    process, byte for byte. The 5.x stores take the same units through Spark's workers above."""
    from rmqlab.tables.pool import RUNS

    bs = rh.rocketmq_store(*case)
    kw = dict(hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM, commitlog_file_size=rh.COMMITLOG_FILE_SIZE,
              consume_queue_file_size=rh.CONSUME_QUEUE_FILE_SIZE, broker_version=bs.release,
              commitlog_paths=bs.commitlog_paths)
    want = verify_path(bs.store, jobs=1, **kw)
    got = verify_path(bs.store, jobs=2, **kw)
    assert RUNS[-1].jobs == 2 and RUNS[-1].pids and os.getpid() not in RUNS[-1].pids, RUNS[-1]
    assert json.dumps(got.as_dict(), default=str) == json.dumps(want.as_dict(), default=str)


# -- 3. key queries: rmqlab's broker mode returns what the broker's IndexService returned ------

def _compare_offsets(ours: list[int], broker: list[int], end_before: int, max_num: int, what: str) -> None:
    """`ours` and `broker` as DefaultMessageStore.queryMessage
    returns them: sorted ascending (``Collections.sort(phyOffsets)``, 4.x and 5.x).

    The broker answered while it ran, at a CommitLog end at or after `end_before`; rmqlab reads
    the store after it stopped. Its walk (newest first) meets the later entries first, then the
    broker's, so: every offset of ours below `end_before` is the broker's; unless max_num cut our
    list, every offset of the broker's is ours; with nothing written later, the two are equal."""
    assert {o for o in ours if o < end_before} <= set(broker), what
    if len(ours) < max_num:
        assert set(broker) <= set(ours), what
    if all(o < end_before for o in ours):
        assert sorted(ours) == broker, what


_TIERED_MESSAGES: dict[Path, Any] = {}


def _tiered_messages(bs: rh.BrokerStore):
    """The messages of the tiered scenario's tiered store, as it serves them (read once)."""
    from rmqlab.formats import tieredindex as ti
    from rmqlab.formats import tieredsegment as ts

    if bs.folder not in _TIERED_MESSAGES:
        meta = ti.read_tiered_metadata(bs.store / "config" / ti.METADATA_FILE)
        frames = [q.messages(body=False) for q in ts.tiered_queues(bs.tiered, meta)]
        _TIERED_MESSAGES[bs.folder] = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return _TIERED_MESSAGES[bs.folder]


def _local_answer(bs: rh.BrokerStore, q: dict) -> list[int]:
    """The broker's answer to key query `q` as its local store made it. A tiered-store broker
    (TieredMessageStore.queryMessageAsync, 5.1+) appends to the local answer (sorted) the
    messages its tiered index finds while the list has room, their offsets the rewritten
    PHYSICALOFFSET of the tiered CommitLog: whether the tiered index answered already depends on
    the upload's progress when the broker answered. Each appended offset must be a message of the
    tiered store with the key; the local answer is what is compared with rmqlab's store."""
    offsets = list(q["broker_offsets"])
    if bs.scenario != "tiered":
        return offsets
    k = next((i for i in range(1, len(offsets)) if offsets[i] < offsets[i - 1]), len(offsets))
    if k < len(offsets):
        served = _tiered_messages(bs)
        for o in offsets[k:]:
            hits = served[(served["topic"] == q["topic"]) & (served["phy_offset"] == o)]
            assert any(q["key"] in str(m["keys"]).split(" ") or m["uniq_key"] == q["key"]
                       for _, m in hits.iterrows()), (q, o)
    return offsets[:k]


def _key_query(store: Store, answered: rh.BrokerStore, q: dict, index_type: str | None = None) -> list[int]:
    """rmqlab's answer to the broker's key query `q`, from the index the broker read: the
    IndexFile, or in the rocksdb-index scenario (indexFileReadEnable=false) 5.5's RocksDB index,
    whose "now" (for a query of all times: the seven days before it) is the broker's clock when
    it answered: after the query's end (the answers' start) and within the run, so ten minutes
    past the end takes in every record the broker could have seen; what it could not (stored
    after the answers began) _compare_offsets allows for."""
    if answered.scenario == "rocksdb-index":
        now = q["end"] + 600_000
        return store.query_rocksdb_index(q["topic"], q["key"], begin=q["begin"], end=q["end"], max_num=q["maxNum"],
                                         index_type=index_type, now=now)["phy_offset"].tolist()
    if q.get("unique"):
        return store.query_by_unique_key(q["topic"], q["key"], begin=q["begin"], end=q["end"])["phy_offset"].tolist()
    return store.query_by_key(q["topic"], q["key"], begin=q["begin"], end=q["end"], max_num=q["maxNum"],
                              mode="broker", index_type=index_type)["phy_offset"].tolist()


def test_key_queries_equal_the_broker(answered):
    a = answered.answers["broker"]
    end_before = a["commitlog_end_before"]
    store = _store(answered)
    n = 0
    for q in a["key_queries"]:
        assert "broker_error" not in q, q
        ours = _key_query(store, answered, q)
        what = f"{answered.release} {answered.scenario} {q}"
        _compare_offsets(ours, _local_answer(answered, q), end_before, q["maxNum"], what)
        n += bool(q["broker_offsets"])
    assert n > 100


def test_tag_queries_equal_the_broker(answered):
    """5.4.0+ indexes topic#T#tags; QUERY_MESSAGE with indexType "T" looks a tag up. Older
    releases' headers have no indexType (the driver then asks nothing)."""
    a = answered.answers["broker"]
    if rh.version_tuple(answered.release) < (5, 4, 0):
        assert "tag_queries" not in a       # its QueryMessageRequestHeader has no indexType
        return
    store = _store(answered)
    found = 0
    for q in a["tag_queries"]:
        assert "broker_error" not in q and q["indexType"] == "T", q
        ours = _key_query(store, answered, q, index_type="T")
        _compare_offsets(ours, q["broker_offsets"], a["commitlog_end_before"], q["maxNum"], f"{answered.release} {q}")
        found += bool(q["broker_offsets"])
    assert found >= 10


def test_unique_key_queries_equal_the_broker(answered):
    a = answered.answers["broker"]
    store = _store(answered)
    assert a["unique_key_queries"]
    for q in a["unique_key_queries"]:
        assert "broker_error" not in q, q
        ours = _key_query(store, answered, q)
        _compare_offsets(ours, _local_answer(answered, q), a["commitlog_end_before"], 32, str(q))


def test_message_ids_view_the_same_message(answered):
    """viewMessage(offsetMsgId): the broker's message at the id's offset is rmqlab's. The client
    decompresses the body it views and, from 5.x, clears the compressed bit (0x1) of the sysFlag it
    returns (MessageDecoder.decode with deCompressBody), so that bit is left out here (test 1
    compares it with the broker's own decode)."""
    store = _store(answered)
    views = [v for v in answered.answers["broker"]["views"] if "error" not in v]
    assert len(views) == len(answered.answers["broker"]["views"])
    for v in views:
        m = store.query_by_offset_msg_id(v["msgId"]).iloc[0]
        assert (int(m["phy_offset"]), int(m["total_size"]), m["topic"], int(m["queue_id"]), int(m["queue_offset"]),
                int(m["store_timestamp"]), int(m["sys_flag"]) & ~1) == (
            v["commitLogOffset"], v["storeSize"], v["topic"], v["queueId"], v["queueOffset"], v["storeTimestamp"],
            v["sysFlag"] & ~1), v


# -- 3b. the command line answers as mqadmin asks ---------------------------------------------

def _cli_rows(bs: rh.BrokerStore, *argv: str, store: Path | None = None) -> list[dict]:
    """`rmqlab store query|messages DIR ... --json` on the broker's store, with the store's
    features given as options (no file size, no index count: the files say them)."""
    kw = bs.store_kwargs()
    opts = [*(["--enable-lmq", "--enable-multi-dispatch"] if kw["enable_lmq"] else []),
            "--broker-version", bs.release,
            *(["--commitlog-paths", ",".join(str(p) for p in kw["commitlog_paths"])]
              if "commitlog_paths" in kw else [])]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert rmqlab_main([*argv[:2], str(store or bs.store), *argv[2:], *opts, "--json"]) == 0
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def test_query_by_message_id_is_the_brokers_view(answered):
    """mqadmin queryMsgById with an offset message id (viewMessage): the message the broker
    returned for the id, from the command line with nothing but the id."""
    views = answered.answers["broker"]["views"]
    for v in views[:: max(1, len(views) // 25)]:
        rows = _cli_rows(answered, "store", "query", "--msg-id", v["msgId"])
        assert [(r["phy_offset"], r["topic"], r["queue_id"], r["queue_offset"], r["store_timestamp"], r["msg_id"])
                for r in rows] == [(v["commitLogOffset"], v["topic"], v["queueId"], v["queueOffset"],
                                    v["storeTimestamp"], v["msgId"])], v


def test_query_by_uniq_key_id_is_the_brokers_answer(answered):
    """mqadmin queryMsgById with a UNIQ_KEY (not an offset id of the store): the broker's
    queryMessage of the key, as --msg-id ID --topic T asks it."""
    a = answered.answers["broker"]
    for q in a["unique_key_queries"][:10]:
        # the rocksdb-index store answers from 5.5's RocksDB index, at the broker's clock (_key_query)
        rocks = ["--index", "rocksdb", "--now", str(q["end"] + 600_000)] if answered.scenario == "rocksdb-index" else []
        rows = _cli_rows(answered, "store", "query", "--msg-id", q["key"], "--topic", q["topic"], *rocks)
        _compare_offsets(sorted(r["phy_offset"] for r in rows), _local_answer(answered, q), a["commitlog_end_before"],
                         32, str(q))


def test_query_by_queue_offset_is_the_brokers_pull(answered):
    """mqadmin queryMsgByOffset: a pull of one message at the offset; the broker's pull at the
    same offset sent that message first."""
    pulls = [p for p in answered.answers["broker"]["pulls"] if p["remark"] == "FOUND" and p["subscription"] == "*"
             and p["records"] and p["records"][0][0] == p["offset"]]
    assert pulls
    for pull in pulls[:: max(1, len(pulls) // 20)]:
        rows = _cli_rows(answered, "store", "query", "--topic", pull["topic"], "--queue-id", str(pull["queueId"]),
                         "--offset", str(pull["offset"]))
        assert [r["phy_offset"] for r in rows] == [pull["records"][0][1]], pull


def test_time_range_queries_are_the_messages_stored_then(answered):
    """A time range alone (printMsg, store query --begin --end): the topic's messages whose
    store time is in the range, against MessageDecoder's reading of the whole CommitLog: every
    message of the topic (not a transaction's half or its rollback) at a queue offset within
    the broker's own min and max offset of its queue."""
    from rmqlab.rules.dispatch import goes_to_consume_queue

    topic = "TopicA"
    held = {q["queueId"]: (q["minOffset"], q["maxOffset"]) for q in answered.answers["broker"]["queues"]
            if q["topic"] == topic}
    mine = [m for m in _java_messages(answered) if m["topic"] == topic and goes_to_consume_queue(m["sysFlag"])
            and m["queueId"] in held and held[m["queueId"]][0] <= m["queueOffset"] < held[m["queueId"]][1]]
    assert mine
    times = sorted(m["storeTimestamp"] for m in mine)
    begin, end = times[len(times) // 4], times[3 * len(times) // 4]
    want = sorted(m["physicalOffset"] for m in mine if begin <= m["storeTimestamp"] <= end)
    iso = datetime.datetime.fromtimestamp(begin / 1000, datetime.timezone(datetime.timedelta(hours=8)))
    rows = _cli_rows(answered, "store", "query", "--topic", topic, "--begin", iso.isoformat(timespec="milliseconds"),
                     "--end", str(end), "--mode", "verified")
    assert sorted(r["phy_offset"] for r in rows) == want
    printed = _cli_rows(answered, "store", "messages", "--topic", topic, "--begin", str(begin), "--end", str(end),
                        "--body", "none", "--mode", "verified")
    assert sorted(r["phy_offset"] for r in printed) == want
    # the broker's search (5.0's looks in one file) may start late: what it gives is a part
    broker = _cli_rows(answered, "store", "query", "--topic", topic, "--begin", str(begin), "--end", str(end))
    assert {r["phy_offset"] for r in broker} <= set(want)
    assert [(r["queue_id"], r["queue_offset"]) for r in printed] == sorted((r["queue_id"], r["queue_offset"])
                                                                           for r in printed)


COPIES = [(release, scenario) for release, scenario in ANSWERED if scenario in ("clean", "dledger")]


@pytest.mark.parametrize(("release", "scenario"), COPIES, ids=[_id(c) for c in COPIES])
def test_a_copy_of_the_commitlog_alone_answers_key_queries_unwritten(release, scenario, tmp_path):
    """An engineer's copy holding the CommitLog (and config/) only: `store query --key` builds the
    index files in a work folder, never in the copy, and answers as the broker answered (one plain
    and one DLedger store a release)."""
    answered = rh.rocketmq_store(release, scenario)
    copy = tmp_path / "copy"
    copy.mkdir()
    for part in answered.store.iterdir():
        if part.name == "commitlog" or part.name == "config" or part.name.startswith("dledger-"):
            shutil.copytree(part, copy / part.name)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    a = answered.answers["broker"]
    queries = [q for q in a["key_queries"] if q["broker_offsets"]][:15]
    for q in queries:
        rows = _cli_rows(answered, "store", "query", "--topic", q["topic"], "--key", q["key"], "--begin",
                         str(q["begin"]), "--end", str(q["end"]), "--work-dir", str(tmp_path / "work"),
                         # no index file tells the geometry: the broker's maxHashSlotNum and maxIndexNum
                         # decide where its files split, which a query's time window sees
                         "--hash-slot-num", str(rh.HASH_SLOT_NUM), "--index-num", str(rh.INDEX_NUM), store=copy)
        _compare_offsets([r["phy_offset"] for r in rows], q["broker_offsets"], a["commitlog_end_before"],
                         q["maxNum"], str(q))
    assert {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before


# -- 4. min and max offsets of every queue -----------------------------------------------------

def test_min_max_offsets_equal_the_broker(answered):
    """The broker's min offset, and its max offset between the queue's units below the CommitLog
    end before and after the answers were taken (equal for every queue nothing was written to
    meanwhile: transaction check-backs keep writing half messages)."""
    a = answered.answers["broker"]
    misplaced = answered.misplaced_units()
    if answered.scenario in rh.ROCKSDB_CQ_SCENARIOS:
        # RocksDBConsumeQueueStore: the offset column family's max entry + 1, its min entry; a
        # queue written to after the answers (check-backs, deliveries) can only have grown
        theirs = {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in a["queues"]}
        db = rocksdbcq.RocksDBConsumeQueues.open(answered.store / "consumequeue")
        late = _rocksdb_queues_written_after(db, a["commitlog_end_before"])
        # rmqlab's answer for every queue the broker answered, (0, 0) where the database holds no
        # unit and no max entry (a queue whose units a restart never dispatched: min entries only)
        ours = {k: db.min_max(*k) for k in theirs}
        assert all(theirs[k][1] <= ours[k][1] for k in theirs if k in late)
        assert len(theirs) > 30 and len(late) <= 3
        assert {k: v for k, v in theirs.items() if k not in late} == {k: ours[k] for k in theirs if k not in late}
        return
    exact = batched = 0
    for q in a["queues"]:
        assert "error" not in q, q
        batch_folder = bcq.queue_dir(answered.store, q["topic"], q["queueId"])
        if batch_folder.is_dir():        # a BatchCQ topic: a unit covers batch_size message offsets
            with bcq.BatchConsumeQueue.open(batch_folder) as queue:
                units = queue.units
                ends = units["msg_base_offset"].astype(np.int64) + units["batch_size"]
                lo, hi = (int(ends[units["commitlog_offset"] < end].max(initial=queue.min_offset))
                          for end in (a["commitlog_end_before"], a["commitlog_end_after"]))
                min_offset = queue.min_offset
            batched += 1
        else:
            folder = cq.queue_dir(answered.store, q["topic"], q["queueId"])
            with cq.ConsumeQueue.open(folder, rh.CONSUME_QUEUE_FILE_SIZE) as queue:
                offsets = queue.units["commitlog_offset"]
                lo = queue.min_offset + int((offsets < a["commitlog_end_before"]).sum())
                hi = queue.min_offset + int((offsets < a["commitlog_end_after"]).sum())
                min_offset = queue.min_offset
            if (q["topic"], q["queueId"]) in misplaced:
                # the broker counted the queue to its write position, before the stale units
                # past it (see test_verify_reports_no_error): the first break in the order
                lo = hi = _first_order_break(folder)
        assert min_offset == q["minOffset"], q
        assert lo <= q["maxOffset"] <= hi, (lo, hi, q)
        exact += lo == hi
    assert exact >= len(a["queues"]) - 3
    assert bool(batched) == (rh.version_tuple(answered.release) >= (5, 0, 0)), batched


def _rocksdb_queues_written_after(db, commitlog_end: int) -> set[tuple[str, int]]:
    """The queues of a RocksDB ConsumeQueue holding a unit of a message at or after `commitlog_end`."""
    u = db.units
    late = u[u["commitlog_offset"] >= commitlog_end]
    return {(t, int(i)) for t, i in zip(late["topic"], late["queue_id"])}


def test_consumer_offsets_equal_the_broker(answered):
    """examineConsumeStats' consumer offsets are the committed offsets rmqlab reads from
    config/consumerOffset.json (the consumers had stopped before the answers), and its broker
    offsets and lags are rmqlab's max offsets and lags, for every queue kind (ConsumeQueue,
    BatchConsumeQueue, RocksDB ConsumeQueue) and every queue not written to after the answer
    (whose max offset can only have grown)."""
    progress = _store(answered).consumer_progress()
    committed = {(r.group, r.topic, int(r.queue_id)): int(r.committed) for r in progress.itertuples()}
    ends = {(r.group, r.topic, int(r.queue_id)): (r.max_offset, r.lag) for r in progress.itertuples()}
    misplaced = answered.misplaced_units()
    seen = empty = lags = 0
    for group, stats in answered.answers["broker"]["consume_stats"].items():
        if "offset table is empty" in stats.get("error", ""):
            # the broker answers that it holds no committed offset of the group (4.9.3 with
            # enableLmq, after its restart: the offsets file it wrote at its shutdown no longer
            # has the group); nor does rmqlab find one in the files it left
            assert not [k for k in committed if k[0] == group], (group, stats)
            empty += 1
            continue
        if group == "G_pop" and "No topic route info" in stats.get("error", ""):
            # the broker's examineConsumeStats asks the name server for the route of the pop
            # retry topic, which 5.0.0 creates on the broker without registering it at once
            continue
        assert "error" not in stats, (group, stats)
        for row in stats.get("queues", []):
            key = (group, row["topic"], row["queueId"])
            assert committed.get(key) == row["consumerOffset"], (key, row)
            seen += 1
            max_offset, lag = ends[key]
            if (row["topic"], row["queueId"]) in misplaced:   # counted to the broker's write position
                continue
            assert max_offset >= row["brokerOffset"], (key, row, max_offset)
            if max_offset == row["brokerOffset"]:
                assert lag == row["lag"], (key, row, lag)
                lags += 1
    assert seen >= 4 or (empty and answered.scenario in rh.RESTARTS), answered.answers["broker"]["consume_stats"]
    assert lags >= seen - 2, (lags, seen)


# -- acknowledged sends: what the broker acknowledged is in the store, where it said -----------

#: sends whose SendResult names the message as stored (delayed, timer and transactional messages
#: are first stored under a system topic, so their queue is not the SendResult's)
PLAIN_KINDS = {"plain", "batch", "ordered", "compressed", "uncompressed", "late", "ipv6-namesrv", "tail"}


def test_acknowledged_sends_are_in_the_store(written):
    """Every SendResult the client got (for the crash and recovered stores: also the ones
    acknowledged before the kill -9) names a message rmqlab reads at the offset of its
    offsetMsgId, with the topic, queue, queue offset and UNIQ_KEY (msgId) the broker reported.

    The msgId is looked for among the record's UNIQ_KEY properties: a 5.x broker appends the
    batch's own properties to every message of a batch (``MessageExtEncoder.encodeBatch``), so
    those records hold two UNIQ_KEYs, and the last (the batch's), which MessageDecoder and the
    index keep, is not the one the SendResult names."""
    sent = rh.rocketmq_store(written.release, rh.RESTARTS[written.scenario]) if written.scenario in rh.RESTARTS \
        else written
    sends = sent.answers.get("sends", []) + sent.answers.get("acks", [])
    assert len(sends) > 200
    store = _store(written)
    checked = 0
    for s in sends:
        if s["kind"] not in PLAIN_KINDS:
            continue
        assert s["status"] == "SEND_OK", s
        ids, offset_ids = s["msgId"].split(","), s["offsetMsgId"].split(",")
        assert len(ids) == len(offset_ids), s
        for k, (uniq, oid) in enumerate(zip(ids, offset_ids)):
            m = store.query_by_offset_msg_id(oid).iloc[0]
            assert (m["topic"], int(m["queue_id"]), int(m["queue_offset"])) == (
                s["topic"], s["queueId"], s["queueOffset"] + k), s
            assert f"UNIQ_KEY\x01{uniq}\x02" in m["properties"] + "\x02", (s, m["properties"])
            checked += 1
    assert checked > 200


# -- searchOffset: the queue offset for a store time ----------------------------------------

def _cut_queue(folder: Path, units: int, into: Path) -> Path:
    """A copy of a queue folder holding its first `units` units, zeros after them."""
    into.mkdir(parents=True)
    for f in sorted(folder.iterdir()):
        data = bytearray(f.read_bytes())
        keep = max(0, units * cq.UNIT_SIZE - int(f.name))
        data[keep:] = bytes(max(0, len(data) - keep))
        (into / f.name).write_bytes(bytes(data))
    return into


def test_search_offset_equals_the_broker(answered, tmp_path):
    """searchOffset (getOffsetInQueueByTime, LOWER) for several store times of every queue nothing
    was written to after the answers (so its ConsumeQueue is the one the broker searched)."""
    a = answered.answers["broker"]
    if answered.scenario in rh.ROCKSDB_CQ_SCENARIOS:
        # RocksDBConsumeQueueStore.getOffsetInQueueByTime: the units' own store times
        db = rocksdbcq.RocksDBConsumeQueues.open(answered.store / "consumequeue")
        boundary = layout_facts(answered.release).rocksdb_time_boundary
        late = _rocksdb_queues_written_after(db, a["commitlog_end_before"])
        searched = [q for q in a["queues"] if (q["topic"], q["queueId"]) not in late]
        got = [(q["topic"], q["queueId"], s["timestamp"],
                db.offset_by_time(q["topic"], q["queueId"], s["timestamp"], with_boundary=boundary))
               for q in searched for s in q["searchOffset"]]
        assert len(got) > 300 and len(late) <= 3
        assert got == [(q["topic"], q["queueId"], s["timestamp"], s["offset"]) for q in searched
                       for s in q["searchOffset"]]
        return
    store = _store(answered)
    misplaced = answered.misplaced_units()

    def store_time_of(offsets):
        m = store.read_at(offsets)
        got = dict(zip(m["phy_offset"].tolist(), m["store_timestamp"].tolist()))
        return np.array([got.get(int(p), -1) for p in offsets], dtype=np.int64)

    compared = 0
    for q in a["queues"]:
        batch_folder = bcq.queue_dir(answered.store, q["topic"], q["queueId"])
        if batch_folder.is_dir():   # BatchConsumeQueue.getOffsetInQueueByTime: the units' own store times
            with bcq.BatchConsumeQueue.open(batch_folder) as batch:
                if int((batch.units["commitlog_offset"] >= a["commitlog_end_before"]).sum()):
                    continue
                for s in q["searchOffset"]:
                    assert "error" not in s, (q["topic"], q["queueId"], s)
                    assert batch.offset_by_time(s["timestamp"], "lower") == s["offset"], (q["topic"], s)
                    compared += 1
            continue
        folder = cq.queue_dir(answered.store, q["topic"], q["queueId"])
        if (q["topic"], q["queueId"]) in misplaced:
            # the broker searched its queue up to its write position, not the stale units past it
            # (see test_verify_reports_no_error): a copy with those bytes zeroed
            folder = _cut_queue(folder, _first_order_break(folder), tmp_path / q["topic"] / str(q["queueId"]))
        with cq.ConsumeQueue.open(folder, rh.CONSUME_QUEUE_FILE_SIZE) as queue:
            offsets = queue.units["commitlog_offset"]
            if int((offsets >= a["commitlog_end_before"]).sum()):
                continue   # written to after the answers
            for s in q["searchOffset"]:
                assert "error" not in s, (q["topic"], q["queueId"], s)
                got = queue.offset_by_time(s["timestamp"], store_time_of, boundary="lower",
                                           broker=layout_facts(answered.release).time_search).offset
                assert got == s["offset"], (q["topic"], q["queueId"], s)
                compared += 1
    assert compared > 50


# -- pulls: getMessage by queue and offset ---------------------------------------------------

#: response codes of a pull that the store answered (its GetMessageStatus is the response's remark)
STORE_ANSWERED = {0, 19, 20, 21}


def _log_bytes(commitlog: Path, phy: int, size: int) -> bytes:
    """`size` bytes at CommitLog offset `phy`, read from the file whose name (its first offset)
    is the last at or below it."""
    start, path = max((int(f.name), f) for f in commitlog.iterdir() if f.name.isdigit() and int(f.name) <= phy)
    with open(path, "rb") as fh:
        fh.seek(phy - start)
        return fh.read(size)


def test_pulls_equal_the_broker(answered):
    """The raw PULL_MESSAGE (no suspend, no commit; group G_pull) at offsets around each queue's
    start, middle and end, for 32, 4 and 1 messages, with "*" and with tag subscriptions:
    rmqlab's get_message gives the broker's response code, its GetMessageStatus (the response's
    remark), next/min/max offsets, and the same records in the same order (the CommitLog offset
    and size, the QUEUEOFFSET stored in the record and the CRC32 of its bytes, both read from
    the CommitLog files here). Refusals before the store is asked (a topic config lacks the
    topic) give the same code. Compared on every queue whose max offset the broker answered is
    the store's: a queue written to after the answer (transaction check-backs, delayed and timer
    deliveries) can only have grown; a queue the broker's own log names as misplaced (see
    test_verify_reports_no_error) is left out. A compaction topic (5.1+) is answered from the
    broker's compaction store: its records are read from the topic's compaction log."""
    from rmqlab.formats import compaction as cpt

    pulls = answered.answers["broker"]["pulls"]
    store = _store(answered)
    misplaced = answered.misplaced_units()
    on_disk = set(store.config().topics()["topic"])
    compared = grown = refused = compaction = found = forgotten = 0
    for p in pulls:
        assert "error" not in p and "body_error" not in p, p
        if (p["topic"], p["queueId"]) in misplaced:
            continue
        got = store.get_message(p["topic"], p["queueId"], p["offset"], p["maxNums"], p["subscription"])
        what = (p, str(got))
        if answered.scenario == "configv2" and p["topic"] not in on_disk and p["code"] != 17 \
                and got.response_code == 17:
            # a v2 broker keeps the topics it creates itself (a DLQ, a retry topic, the transaction
            # check's) in memory only:
            # TopicConfigManager.createTopicInSendMessageBackMethod puts them in its table and calls
            # persist(), which TopicConfigManagerV2 makes a WAL flush, so config/rdb never holds them;
            # the store, read as a restarted broker reads it, has no such topic
            assert is_system_topic(p["topic"]), what
            forgotten += 1
            continue
        log = answered.commitlog
        if got.queue == "compaction":
            assert rh.version_tuple(answered.release) >= (5, 1, 0), what
            log = cpt.log_dir(answered.store, p["topic"], p["queueId"])
            compaction += 1
        if p["code"] in STORE_ANSWERED and got.max_offset != p["maxOffset"]:
            assert got.max_offset > p["maxOffset"], what
            grown += 1
            continue
        assert got.response_code == p["code"], what
        if p["code"] not in STORE_ANSWERED:
            refused += 1
            continue
        assert (got.status, got.next_begin_offset, got.min_offset) == (
            p["remark"], p["nextBeginOffset"], p["minOffset"]), what
        sent = got.messages[["stored_queue_offset", "commitlog_offset", "size"]].itertuples(index=False)
        ours = [[int(q), int(o), int(n), zlib.crc32(_log_bytes(log, int(o), int(n)))]
                for q, o, n in sent]
        assert ours == p["records"], what
        compared += 1
        found += bool(ours)
    assert compared > 150 and found > 100 and compared > 4 * grown, (compared, found, grown, refused, compaction)
    assert (forgotten > 0) == (answered.scenario == "configv2"), forgotten
    # every store whose broker kept a compaction log answered some pulls from it
    logs = answered.store / cpt.COMPACTION_DIR / cpt.COMPACTION_LOG_DIR
    assert (compaction > 0) == (logs.is_dir() and any(logs.iterdir())), compaction


# -- the restart after kill -9: rmqlab's model of the broker's abnormal recovery ---------------

@pytest.fixture(scope="module", params=[r for r in rh.selected_releases() if rh.selected(r, "recovered")])
def restarted(request, tmp_path_factory):
    """(crash store, recovered store, a copy of the crash store after rmqlab's broker_restart, its report)."""
    from rmqlab.store.recover import broker_restart

    crash = rh.rocketmq_store(request.param, "crash")
    recovered = rh.rocketmq_store(request.param, "recovered")
    copy = tmp_path_factory.mktemp(f"restart-{request.param}") / "store"
    rh.copy_store(crash.store, copy)
    report = broker_restart(copy, hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM,
                            commitlog_file_size=rh.COMMITLOG_FILE_SIZE, broker_version=request.param)
    return crash, recovered, copy, report


def test_restart_deletes_the_index_files_the_broker_deleted(restarted):
    """IndexService.load(lastExitOK=false): the index files the real broker destroyed when it
    restarted on the crash store are the ones rmqlab's broker_restart destroys."""
    crash, recovered, _, report = restarted
    before = {p.name for p in (crash.store / "index").iterdir()}
    after = {p.name for p in (recovered.store / "index").iterdir()}
    assert {Path(p).name for p in report.index_files_deleted} == before - after


def test_restart_keeps_the_lookups_the_broker_kept(restarted):
    """After the restart, the broker's answers for the messages stored before the kill are what
    rmqlab's broker mode answers on the crash store restarted by broker_restart (queries whose
    answer max_num did not cut)."""
    crash, recovered, copy, _ = restarted
    crash_end = max(r["offset"] + r["storeSize"] for r in _java_messages(crash))
    store = Store(copy, **crash.store_kwargs())
    compared = 0
    for q in recovered.answers["broker"]["key_queries"]:
        if len(q["broker_offsets"]) >= q["maxNum"]:
            continue
        ours = store.query_by_key(q["topic"], q["key"], begin=q["begin"], end=q["end"], max_num=q["maxNum"],
                                  mode="broker")["phy_offset"].tolist()
        assert sorted(ours) == [o for o in q["broker_offsets"] if o < crash_end], q
        compared += bool(ours)
    assert compared > 100


def test_checkpoint_equals_store_checkpoint(written):
    """rmqlab's checkpoint reader gives the fields the broker's StoreCheckpoint class reads, and
    its getMinTimestamp / getMinTimestampIndex (where abnormal recovery starts)."""
    from rmqlab.formats.checkpoint import read_checkpoint

    cp = read_checkpoint(written.store / "checkpoint")
    java = written.checkpoint
    ours = {"physicMsgTimestamp": cp.physic_msg_timestamp, "logicsMsgTimestamp": cp.logics_msg_timestamp,
            "indexMsgTimestamp": cp.index_msg_timestamp, "masterFlushedOffset": cp.master_flushed_offset,
            "confirmPhyOffset": cp.confirm_phy_offset, "logicsPhysicalOffset": cp.logics_physical_offset,
            "minTimestamp": cp.min_timestamp,
            "minTimestampIndex": cp.min_timestamp_index}
    assert {k: ours[k] for k in java if k in ours} == {k: v for k, v in java.items() if k in ours}
    unread = {k: v for k, v in java.items() if k not in ours and v != 0}
    assert not unread, f"fields rmqlab does not read: {unread}"
    # a DLedger CommitLog of 4.5-4.7 never sets physicMsgTimestamp (DLedgerCommitLog, 4.5.2)
    assert java["physicMsgTimestamp"] > 0 or (written.scenario.startswith("dledger")
                                              and rh.version_tuple(written.release) < (4, 9))


# -- dispatch again: the broker's CommitLog gives its ConsumeQueues byte for byte ------------

CLEAN = [(release, scenario) for release, scenario in CASES
         if scenario in ("clean", "dledger", "dledger-group", "dledger-mixed", "multipath", "configv2")]


def _queue_files_differ(theirs_root: Path, ours_root: Path, unit: int) -> list[str]:
    """The queue files of `theirs_root` (a broker's consumequeue/ or batchconsumequeue/) whose
    bytes rmqlab's files under `ours_root` do not equal, up to where the broker's file ends in
    zeros (the broker maps each file at its full size; rmqlab writes what it holds)."""
    theirs = {p.relative_to(theirs_root): p for p in theirs_root.rglob("*") if p.is_file()}
    ours = {p.relative_to(ours_root): p for p in ours_root.rglob("*") if p.is_file()}
    differ = []
    for name, p in sorted(theirs.items()):
        a = p.read_bytes()
        if not a.strip(b"\0"):
            continue                          # a file the broker created ahead of use
        b = ours[name].read_bytes() if name in ours else b""
        n = max(len(b), len(a.rstrip(b"\0")))
        if a[:n].ljust(n, b"\0") != b[:n].ljust(n, b"\0") or b[n:].strip(b"\0"):
            units = [i for i in range(0, n, unit) if a[i:i + unit] != b[i:i + unit]]
            differ.append(f"{theirs_root.name}/{name}: {len(units)} units differ, first at byte "
                          f"{units[0] if units else '?'}: broker {a[units[0]:units[0] + unit].hex() if units else ''} "
                          f"rmqlab {b[units[0]:units[0] + unit].hex() if units else ''}")
    return differ


@pytest.mark.parametrize(("release", "scenario"), CLEAN, ids=[_id(c) for c in CLEAN])
def test_dispatching_the_brokers_commitlog_gives_its_queues_and_index_files(release, scenario, tmp_path):
    """The CommitLog (and config) of a cleanly stopped store, copied and dispatched by rmqlab
    with the release's rules (``broker_version``), a DLedger CommitLog's data folder as the
    broker dispatches it (DLedgerCommitLog: the records in the entries, up to the ledger's committed
    position, which a group's leader stopped after its followers holds short of its end): every
    ConsumeQueue (light message queues
    included), ConsumeQueueExt and BatchConsumeQueue file equals the broker's, byte for byte up
    to where the broker's file ends in zeros (the broker maps each file at its full size; rmqlab
    writes what it holds), and every index file equals the broker's byte for byte, in order.
    Only the index files' names differ: the broker names a file by its clock when the reput
    thread creates it, rmqlab by the store time of the message that opens it, which the broker
    stored before."""
    import datetime as dt
    import shutil

    bs = rh.rocketmq_store(release, scenario)
    copy = tmp_path / "store"
    for folder in _commitlog_folders(bs):   # commitlog/, dledger-n0/data/, or each of several paths
        if folder.name == "data" and folder.parent.name.startswith("dledger-"):
            folder = folder.parent   # the ledger's checkpoint too: dispatch stops at its committed position
        shutil.copytree(folder, copy / folder.relative_to(bs.store))
    if (bs.store / "config").is_dir():
        shutil.copytree(bs.store / "config", copy / "config")
    Store(copy, **bs.store_kwargs()).dispatch()
    queues = {"consumequeue": cq.UNIT_SIZE, "batchconsumequeue": bcq.UNIT_SIZE}
    differ = [d for folder, unit in queues.items() for d in _queue_files_differ(bs.store / folder, copy / folder, unit)]
    assert not differ, "\n".join(differ[:20])
    assert any((bs.store / "consumequeue").rglob("*/*/*"))
    if any("INNER_MULTI_QUEUE_OFFSET" in m["properties"] for m in _java_messages(bs)):
        assert any((bs.store / "consumequeue").glob("%LMQ%*/0/*")), "the light message queues are missing"
    if rh.version_tuple(release) >= (5, 0, 0):
        assert any((bs.store / "batchconsumequeue").rglob("*/*/*")), "the BatchCQ topic's queues are missing"
    # ConsumeQueueExt (enableConsumeQueueExt): the same units at the same addresses
    ext_theirs = {p.relative_to(bs.store / "consumequeue_ext"): p.read_bytes()
                  for p in (bs.store / "consumequeue_ext").rglob("*") if p.is_file()}
    ext_ours = {p.relative_to(copy / "consumequeue_ext"): p.read_bytes()
                for p in (copy / "consumequeue_ext").rglob("*") if p.is_file()}
    held = {name: data.rstrip(b"\0") for name, data in ext_theirs.items() if data.strip(b"\0")}
    assert held and held == {name: ext_ours.get(name, b"").rstrip(b"\0") for name in held}, sorted(
        name for name in held if held[name] != ext_ours.get(name, b"").rstrip(b"\0"))[:10]
    assert not [name for name, data in ext_ours.items() if name not in held and data.strip(b"\0")]

    theirs_index = sorted((bs.store / "index").iterdir())
    ours_index = sorted((copy / "index").iterdir())
    assert len(ours_index) == len(theirs_index) >= 2, ([p.name for p in theirs_index], [p.name for p in ours_index])
    for a, b in zip(theirs_index, ours_index):
        x, y = a.read_bytes(), b.read_bytes()
        first = next((i for i in range(max(len(x), len(y))) if x[i:i + 1] != y[i:i + 1]), None)
        assert first is None, f"index file {a.name} (ours {b.name}): first byte that differs {first} of {len(x)}"

        def named(p: Path) -> dt.datetime:
            return dt.datetime.strptime(p.name, "%Y%m%d%H%M%S%f")

        assert named(b) <= named(a) <= named(b) + dt.timedelta(seconds=30), (a.name, b.name)


ROCKS = [(release, scenario) for release, scenario in CASES if scenario == "rocksdb"]


@pytest.mark.parametrize(("release", "scenario"), ROCKS, ids=[_id(c) for c in ROCKS])
def test_dispatching_the_brokers_commitlog_gives_its_rocksdb_queues(release, scenario, tmp_path):
    """The CommitLog of the rocksdb store (storeType=defaultRocksDB), copied and dispatched by
    rmqlab into file ConsumeQueues: every unit of the broker's RocksDB database (topic, queue,
    queue offset, commitlog offset, size, tags code) is a unit of rmqlab's queues, and the other
    way round, keyed as RocksDBConsumeQueueTable keys them (by the message's QUEUEOFFSET, where a
    file queue places a unit at its write position: the two differ after an inner batch); the
    database's store times are the messages' (MessageDecoder's decode), and its
    dispatch checkpoint is the CommitLog's end. The index files are rmqlab's byte for byte as in
    the file-queue stores (the index does not depend on the queue store)."""
    import shutil

    bs = rh.rocketmq_store(release, scenario)
    copy = tmp_path / "store"
    shutil.copytree(bs.commitlog, copy / "commitlog")
    kw = {**bs.store_kwargs(), "consume_queue_ext": False}
    if not layout_facts(release).rocksdb_lmq:   # 5.2.0 - 5.3.1: RocksDB queues hold no %LMQ% units
        kw = {**kw, "enable_lmq": False, "enable_multi_dispatch": False}
    Store(copy, **kw).dispatch()
    db = rocksdbcq.RocksDBConsumeQueues.open(bs.store / "consumequeue")
    theirs = {(t, int(q), int(o), int(p), int(z), int(c)) for t, q, o, p, z, c in
              db.units[["topic", "queue_id", "queue_offset", "commitlog_offset", "size", "tags_code"]].itertuples(
                  index=False)}
    queue_offset = {m["offset"]: m["queueOffset"] for m in _java_messages(bs)}
    ours = set()
    for topic, qid, folder in queue_folders(copy / "consumequeue"):
        with cq.ConsumeQueue.open(folder, rh.CONSUME_QUEUE_FILE_SIZE) as queue:
            u = queue.units
            for k in range(len(u)):
                phy = int(u["commitlog_offset"][k])
                # a unit's key is the dispatch request's queue offset: the message's QUEUEOFFSET
                # (an inner batch of N takes N offsets, and its one unit the first), the LMQ
                # offset in a light message queue; a file queue appends at its write position
                key = queue.min_offset + k if topic.startswith("%LMQ%") else queue_offset[phy]
                ours.add((topic, qid, key, phy, int(u["size"][k]), int(u["tags_code"][k])))
    assert len(theirs) > 900 and theirs == ours, (sorted(theirs - ours)[:5], sorted(ours - theirs)[:5])
    stored = {m["offset"]: m["storeTimestamp"] for m in _java_messages(bs)}
    assert dict(zip(db.units["commitlog_offset"].tolist(), db.units["store_timestamp"].tolist())) == {
        int(p): stored[int(p)] for p in db.units["commitlog_offset"]}
    assert db.dispatched_to == max(m["offset"] + m["storeSize"] for m in _java_messages(bs))
    theirs_index, ours_index = sorted((bs.store / "index").iterdir()), sorted((copy / "index").iterdir())
    assert [p.read_bytes() for p in theirs_index] == [p.read_bytes() for p in ours_index]


def _rewrite_rocksdb(folder: Path, change) -> None:
    """`change(db)` applied to the RocksDB database in `folder` (opened read-write, raw bytes), then
    closed: the test's own edit of a copy, with rocksdict's settings file removed after."""
    import rocksdict

    names = rocksdict.Rdict.list_cf(str(folder))
    db = rocksdict.Rdict(str(folder), options=rocksdict.Options(raw_mode=True),
                         column_families={n: rocksdict.Options(raw_mode=True) for n in names if n != "default"})
    try:
        change(db)
    finally:
        db.close()
    (folder / "rocksdict-config.json").unlink(missing_ok=True)


@pytest.mark.parametrize(("release", "scenario"), ROCKS, ids=[_id(c) for c in ROCKS])
def test_verify_finds_each_damage_to_the_brokers_rocksdb_queues(release, scenario, tmp_path):
    """The broker's own RocksDB ConsumeQueue, copied, each time with one edit: a unit's size, tags
    code or store time changed, a unit removed, a max entry moved, a malformed key added. verify
    reports each as exactly its check (and nothing else) at the database, and the store copy
    verifies clean before any edit."""
    bs = rh.rocketmq_store(release, scenario)
    key = rocksdbcq.unit_key("TopicA", 1, 5)
    fields = rocksdbcq.UNIT.struct

    def with_unit(**values):
        def change(db):
            unit = dict(zip([f.name for f in rocksdbcq.UNIT.fields], fields.unpack(db[key])))
            db[key] = fields.pack(*{**unit, **values}.values())
        return change

    def drop(db):
        del db[key]

    def move_max(db):
        off = db.get_column_family(rocksdbcq.OFFSET_COLUMN_FAMILY)
        k = rocksdbcq.offset_key("TopicA", 1, rocksdbcq.MAX)
        off[k] = rocksdbcq.OFFSET_UNIT.struct.pack(*rocksdbcq.OFFSET_UNIT.struct.unpack(off[k])[:1], 3)

    def bad_key(db):
        db[b"\x00\x00\x00\x09\x01TopicA"] = bytes(28)

    edits = {"rcq.size": with_unit(size=7), "rcq.tags-code": with_unit(tags_code=12345),
             "rcq.store-time": with_unit(store_timestamp=1), "rcq.missing-unit": drop, "rcq.max-offset": move_max,
             "rcq.key": bad_key}
    kw = dict(hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM, commitlog_file_size=rh.COMMITLOG_FILE_SIZE,
              broker_version=release)
    for n, (check, edit) in enumerate(edits.items()):
        copy = tmp_path / str(n) / "store"
        rh.copy_store(bs.store, copy)
        if n == 0:
            assert verify_path(copy, **kw).errors == []
        _rewrite_rocksdb(copy / "consumequeue", edit)
        found = [(p.check, p.path) for p in verify_path(copy, **kw).errors]
        assert found == [(check, str(copy / "consumequeue"))], (check, found)


@pytest.mark.parametrize(("release", "scenario"), ROCKS, ids=[_id(c) for c in ROCKS])
def test_dispatch_refuses_the_brokers_rocksdb_store_and_recover_leaves_its_database(release, scenario, tmp_path):
    """rmqlab writes file ConsumeQueues only: `Store.dispatch` on a copy of the rocksdb store
    raises, naming consumequeue/ and storeType, before writing anything; `store recover` repairs
    the rest and leaves every file of the database as it was (the broker's restart dispatches
    into it from its checkpoint), saying so."""
    from rmqlab.errors import FormatError
    from rmqlab.store.recover import recover_store

    bs = rh.rocketmq_store(release, scenario)
    copy = tmp_path / "store"
    rh.copy_store(bs.store, copy)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    with pytest.raises(FormatError) as e:
        Store(copy, **bs.store_kwargs()).dispatch()
    assert (e.value.path, e.value.field) == (str(copy / "consumequeue"), "storeType")
    assert before == {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    plan = recover_store(copy, hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM, broker_version=release)
    assert [a.kind for a in plan.actions if a.path.startswith(str(copy / "consumequeue"))] == ["rocksdb-queues-left"]
    database = {p: b for p, b in before.items() if p.parent == copy / "consumequeue"}
    assert database and database == {p: p.read_bytes() for p in (copy / "consumequeue").iterdir() if p.is_file()}


# -- rmqlab store recover keeps at least what the broker's own recovery kept -------------------

RECOVERIES = [(release, scenario) for release, scenario in CASES if scenario in rh.RESTARTS]


@pytest.mark.parametrize(("release", "restart"), RECOVERIES, ids=[_id(c) for c in RECOVERIES])
def test_store_recover_keeps_what_the_brokers_recovery_kept(release, restart, tmp_path):
    """The crash store (kill -9 while sending; a CommitLog or a DLedger one), recovered by
    ``rmqlab store recover`` on a copy, and by the broker itself (the ``recovered`` and
    ``dledger-recovered`` scenarios): every record the broker kept (in its recovered CommitLog at
    the offset the crash store had it, as MessageDecoder decodes both) is in rmqlab's, every
    ConsumeQueue unit the broker's recovered queues hold for those records is in rmqlab's, every
    key query the broker answered after its restart finds, among the records it kept, no less on
    rmqlab's recovered store (broker mode), and rmqlab's recovered store verifies without an
    error. A DLedger ledger is not written (DLedger's own recovery keeps every whole entry)."""
    from rmqlab.store.recover import recover_store

    crash, recovered = rh.rocketmq_store(release, rh.RESTARTS[restart]), rh.rocketmq_store(release, restart)
    before = {r["offset"]: r for r in _java_messages(crash)}
    kept = {r["offset"] for r in _java_messages(recovered)
            if r["offset"] in before and r["storeSize"] == before[r["offset"]]["storeSize"]
            and r.get("bodyCRC") == before[r["offset"]].get("bodyCRC")}
    assert kept
    copy = tmp_path / "store"
    rh.copy_store(crash.store, copy)
    plan = recover_store(copy, hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM,
                         commitlog_file_size=rh.COMMITLOG_FILE_SIZE, consume_queue_file_size=rh.CONSUME_QUEUE_FILE_SIZE,
                         broker_version=release, enable_lmq=crash.store_kwargs()["enable_lmq"],
                         enable_multi_dispatch=crash.store_kwargs()["enable_multi_dispatch"])
    ours = {m.phy_offset for m in iter_messages(copy / crash.commitlog.relative_to(crash.store))}
    assert kept <= ours, sorted(kept - ours)[:10]
    if restart.startswith("dledger"):
        ledger = crash.commitlog.parent.relative_to(crash.store)
        assert all((copy / ledger / p.relative_to(crash.store / ledger)).read_bytes() == p.read_bytes()
                   for p in (crash.store / ledger).rglob("*") if p.is_file())
    report = verify_path(copy, hash_slot_num=rh.HASH_SLOT_NUM, index_num=rh.INDEX_NUM,
                         commitlog_file_size=rh.COMMITLOG_FILE_SIZE,
                         consume_queue_file_size=rh.CONSUME_QUEUE_FILE_SIZE, broker_version=release)
    assert report.errors == [], "\n".join(report.summary())

    def units(root: Path, store: Store | None = None) -> set[tuple[str, int, int]]:
        """(queue, commitlog offset, size) of every unit, a RocksDB ConsumeQueue's too; with
        `store`, and those the restart's dispatch adds (rmqlab leaves a RocksDB database to it)."""
        if rocksdbcq.is_rocksdb(root / "consumequeue"):
            db = rocksdbcq.RocksDBConsumeQueues.open(root / "consumequeue").units
            frames = [db] if store is None else [db, store.restart_dispatch_units()]
            return {(f"{t}/{q}", int(o), int(z)) for f in frames for t, q, o, z in
                    f[["topic", "queue_id", "commitlog_offset", "size"]].itertuples(index=False)}
        out = set()
        for qdir in sorted((root / "consumequeue").glob("*/*")):
            for f in sorted(qdir.iterdir()):
                raw = f.read_bytes()
                for i in range(0, len(raw) - len(raw) % 20, 20):
                    off = int.from_bytes(raw[i:i + 8], "big", signed=True)
                    if off or raw[i:i + 20].strip(b"\0"):
                        out.add((f"{qdir.parent.name}/{qdir.name}", off, int.from_bytes(raw[i + 8:i + 12], "big")))
        return out

    theirs = {u for u in units(recovered.store) if u[1] in kept}
    mine = units(copy, Store(copy, **crash.store_kwargs()))
    assert theirs and theirs <= mine, sorted(theirs - mine)[:10]
    if restart.startswith("rocksdb"):
        assert any(a.kind == "rocksdb-queues-left" for a in plan.actions), plan.actions
    # the store answering up to 2**20 offsets a query (maxMsgsNumBatch): see below
    uncut = Store(copy, **crash.store_kwargs(), max_msgs_num_batch=1 << 20)
    compared = 0
    for q in recovered.answers["broker"]["key_queries"]:
        if len(q["broker_offsets"]) >= q["maxNum"]:
            continue
        want = {o for o in q["broker_offsets"] if o in kept}
        # rmqlab's store holds keys the broker's restart lost (a DLedger restart before 5.2.0
        # re-indexes nothing), so its answer can reach maxNum where the broker's did not: asked
        # without that cut, it must hold every offset the broker found
        got = set(uncut.query_by_key(q["topic"], q["key"], begin=q["begin"], end=q["end"], max_num=1 << 20,
                                     mode="broker")["phy_offset"].tolist())
        if not want <= got:
            # The broker's restart destroys the index files newer than the checkpoint and
            # indexes their messages again (and the message at the newest remaining file's
            # endPhyOffset: buildIndex skips only offsets below it) into new files whose time
            # base is the first such message's store time; rmqlab's recover keeps them in the
            # files the crash left, where an entry's time is whole seconds from that file's begin
            # and can fall up to 999 ms before the query's begin. Each such key must still be in
            # rmqlab's index, with such a time: the whole walk over [0, end] is read for it (a
            # common key's walk, cut at maxNum, stops before it: a CI run met that on "shared").
            entries = uncut.explain_key(q["topic"], q["key"], begin=0, end=q["end"], max_num=1 << 20).hash_entries
            near = (entries["time_read"] < q["begin"]) & (entries["time_read"] >= q["begin"] - 999)
            held = set(entries.loc[near, "phy_offset"].tolist())
            assert want - got <= held, (q, sorted(want - got - held))
        compared += bool(want)
    assert compared > 100


# -- a DLedger CommitLog, as DLedger's own store reads it -------------------------------------

DLEDGER = [(release, scenario) for release, scenario in CASES if scenario.startswith("dledger")]
#: the DLedger stores' entry counts at least: the workload's (over 500), the mixed store's tail (200)
LEDGER_ENTRIES = {"dledger-mixed": 200}


@pytest.mark.parametrize(("release", "scenario"), DLEDGER, ids=[_id(c) for c in DLEDGER])
def test_the_ledger_is_what_dledgers_own_store_reads(release, scenario):
    """rmqlab's :class:`~rmqlab.formats.dledger.Ledger` of the store's ``dledger-n0`` equals what
    DLedgerMmapFileStore says after its own load and recovery (DLedgerLedger.java, on a copy;
    after a kill -9 too, where recovery keeps what its checks pass and the checkpoint lags):
    begin, end and committed index, end term, committed position, the term file, and every
    entry's index, term, magic, size, position and body length (``get(index)``); and the
    entry heads equal those the driver's walk read around each record MessageDecoder decoded.
    The ledger passes every load and recovery check (:meth:`Ledger.check`)."""
    from rmqlab.formats.dledger import Ledger

    bs = rh.rocketmq_store(release, scenario)
    java = bs.ledger()
    led = Ledger(bs.store / f"dledger-{rh.DLEDGER_SELF_ID}", file_size=rh.COMMITLOG_FILE_SIZE)
    s = led.summary()
    assert java["ledgerEndIndex"] >= LEDGER_ENTRIES.get(scenario, 500)
    assert (s["ledger_begin_index"], s["ledger_end_index"], s["ledger_end_term"], s["committed_index"],
            s["committed_pos"], s["current_term"], s["vote_leader"]) == (
        java["ledgerBeginIndex"], java["ledgerEndIndex"], java["ledgerEndTerm"], java["committedIndex"],
        java["committedPos"], java["currTerm"], java["voteLeader"])
    e = led.entries()
    ours = [{"index": int(x["index"]), "term": int(x["term"]), "magic": int(x["magic"]), "size": int(x["size"]),
             "pos": int(x["offset"]), "bodySize": int(x["body_size"])} for x in e]
    assert ours == java["entries"]
    in_ledger = [r for r in _java_messages(bs) if r.get("dledger")]   # a mixed store's plain records have none
    heads = [r["dledger"] for r in in_ledger]
    assert [{k: int(x[n]) for k, n in (("index", "index"), ("term", "term"), ("pos", "pos"), ("size", "size"),
                                       ("bodySize", "body_size"), ("chainCrc", "chain_crc"), ("bodyCrc", "body_crc"),
                                       ("channel", "channel"), ("magic", "magic"))} for x in e] == [
        {k: h[k] for k in ("index", "term", "pos", "size", "bodySize", "chainCrc", "bodyCrc", "channel", "magic")}
        for h in heads]
    assert led.check() == []
    assert [r["offset"] for r in in_ledger] == (e["record_offset"]).tolist()


# -- the timer store (5.x): the release's own timer classes, the producer's timers ----------

TIMERS = [(release, scenario) for release, scenario in CASES if rh.version_tuple(release) >= (5, 0, 0)]
#: scenarios whose broker stopped cleanly after the workload: the timer checkpoint is exact
TIMERS_CLEAN = [(r, s) for r, s in TIMERS if s in ("clean", "dledger", "dledger-group", "dledger-mixed", "rocksdb",
                                                   "multipath", "configv2")]


def _timer_case(release: str, scenario: str) -> tuple[rh.BrokerStore, dict]:
    bs = rh.rocketmq_store(release, scenario)
    java = bs.timers()
    assert java is not None, f"{release} {scenario}: a 5.x store without TimerState's timers.json"
    return bs, java


@pytest.mark.parametrize(("release", "scenario"), TIMERS, ids=[_id(c) for c in TIMERS])
def test_timer_files_read_as_the_releases_timer_classes_read_them(release, scenario):
    """TimerCheckpoint, TimerMetrics, TimerWheel.getRawSlot / getAllNum and TimerLog's units,
    each as the release's own classes read them (TimerState.java), and every slot's chain as
    TimerMessageStore.dequeue walks it."""
    from rmqlab.formats import timer as tm
    from rmqlab.formats.storeconfig import read_store_config
    from rmqlab.store.timers import timer_state

    bs, java = _timer_case(release, scenario)
    with timer_state(_store(bs)) as ts:
        assert ts.precision_ms == rh.TIMER_PRECISION_MS
        ours_cp = ts.checkpoint.as_dict()
        theirs_cp = {tm.TIMER_CHECKPOINT.fields[i].name: java["checkpoint"][f.java_name]
                     for i, f in enumerate(tm.TIMER_CHECKPOINT.fields)}
        assert ours_cp == theirs_cp
        occupied = ts.wheel.occupied()
        ours_slots = [dict(index=int(r.index), timeMs=int(r.time_ms), firstPos=int(r.first_pos),
                           lastPos=int(r.last_pos), num=int(r.num), magic=int(r.magic))
                      for r in occupied.itertuples()]
        assert ours_slots == java["slots"]
        assert ts.wheel.all_num(ts.checkpoint.last_read_time_ms) == java["allNum"]
        names = {"prev_pos": "prevPos", "curr_write_time": "currWriteTime", "delay_time": "delayTime",
                 "offset_py": "offsetPy", "size_py": "sizePy", "hash_topic": "hashTopic"}
        ours_units = [{"pos": int(p), **{names.get(f.name, f.name): int(u[f.name]) for f in tm.UNIT.fields}}
                      for p, u in zip(ts.log.positions, ts.log.units, strict=True)]
        assert ours_units == java["units"]
        for chain in java["chains"]:
            slot = ts.wheel.slot(chain["timeMs"])
            assert ts.log.chain(slot[2]) == [u["pos"] for u in chain["units"]], chain["timeMs"]
    metrics = read_store_config(bs.store).timer_metrics()
    assert dict(zip(metrics["topic"], metrics["count"], strict=True)) == java["metrics"]


def _mended_chains(bs: rh.BrokerStore, java: dict) -> list[dict]:
    """The release's chains (TimerState.java: from each slot's lastPos back along prevPos) as a
    restart has them: TimerMessageStore.recover's recoverAndRevise sets each slot's lastPos to the
    newest of its units from lastTimerLogFlushPos less a file size on (from that file's start), so
    the units a killed broker appended after the wheel's last flush are walked too. The units,
    their links and the raw slots are the release's own reading."""
    units = {u["pos"]: u for u in java["units"]}
    size = next((bs.store / "timerlog").iterdir()).stat().st_size
    begin = max(java["checkpoint"]["lastTimerLogFlushPos"] - size, 0) // size * size
    newest: dict[int, int] = {}
    for u in sorted(java["units"], key=lambda u: u["pos"]):
        if u["pos"] >= begin and u["size"] == 52:
            newest[(u["currWriteTime"] + u["delayTime"]) // rh.TIMER_PRECISION_MS * rh.TIMER_PRECISION_MS] = u["pos"]
    def walk(pos: int) -> list[dict]:
        walked: list[dict] = []
        while pos in units and pos != -1 and len(walked) < 100_000:
            walked.append(units[pos])
            pos = units[pos]["prevPos"]
        return walked

    out = []
    for chain in java["chains"]:
        last = newest.pop(chain["timeMs"], None)
        mended = last is not None and not (chain["units"] and chain["units"][0]["pos"] == last)
        out.append({"timeMs": chain["timeMs"], "units": walk(last)} if mended else chain)
    # slots the wheel never got (their bytes another lap's: TimerState.java skips them), which
    # reviseSlot(force) writes afresh
    out += [{"timeMs": t, "units": walk(last)} for t, last in newest.items()]
    return out


def _expected_pending(bs: rh.BrokerStore, java: dict) -> set[tuple[int, int, int]]:
    """(offset_py, slot_ms, TIMER_OUT_MS) of each unit TimerMessageStore.dequeue would still put
    back: the units of the chains in slots from lastReadTimeMs on (as a restart mends them:
    :func:`_mended_chains`), less delete markers and the messages they name (buildDeleteKey), the
    messages read by MessageDecoder (decoded.jsonl)."""
    by_offset = {r["physicalOffset"]: r for r in _java_messages(bs)}
    last_read = java["checkpoint"]["lastReadTimeMs"]
    out = set()
    for chain in _mended_chains(bs, java):
        if chain["timeMs"] < last_read:
            continue
        units = [(u, by_offset[u["offsetPy"]]["properties"]) for u in chain["units"]]
        deleted = {p["TIMER_DEL_UNIQKEY"] for u, p in units if u["magic"] & 4 and not u["magic"] & 2}
        for u, p in units:
            if u["magic"] & 4 and not u["magic"] & 2:
                continue
            if f"{p.get('REAL_TOPIC')}+{p.get('UNIQ_KEY')}" in deleted:
                continue
            out.add((u["offsetPy"], chain["timeMs"], int(p["TIMER_OUT_MS"])))
    return out


@pytest.mark.parametrize(("release", "scenario"), TIMERS, ids=[_id(c) for c in TIMERS])
def test_pending_timers_are_what_the_wheel_would_deliver(release, scenario):
    """rmqlab's pending timers are the units the release's chains hold from the checkpoint's read
    time on, cancellations applied as dequeue applies them, and the timer topic's messages from
    the checkpoint's queue offset on (MessageDecoder's decode, delete markers left out)."""
    from rmqlab.store.timers import pending_timers

    bs, java = _timer_case(release, scenario)
    got = pending_timers(_store(bs))
    wheel = got[got["source"] == "wheel"]
    assert set(zip(wheel["offset_py"], wheel["slot_ms"], wheel["fires_at_ms"], strict=True)) == \
        _expected_pending(bs, java)
    if scenario == "rocksdb-index":   # the RocksDB timeline drives (timerRocksDBEnable): see below
        assert set(got.loc[got["source"] != "wheel", "offset_py"]) == _never_delivered(bs)
        return
    # TimerMessageStore.recover (reviseQueueOffset): a restart reads the timer queue from one past
    # the queue offset of the message the timer log's last unit holds (the checkpoint's
    # lastTimerQueueOffset for an empty log), at most masterTimerQueueOffset. A clean stop's
    # checkpoint says the same unless the queue's last messages were due at once: those go to
    # the dequeue without a unit (5.2.0's rocksdb-recovered store ends in four such)
    by_offset = {r["physicalOffset"]: r for r in _java_messages(bs)}
    cp = java["checkpoint"]
    last = max(java["units"], key=lambda u: u["pos"], default=None)
    start = cp["lastTimerQueueOffset"] if last is None else by_offset[last["offsetPy"]]["queueOffset"] + 1
    start = min(start, cp["masterTimerQueueOffset"])
    queued = {r["physicalOffset"] for r in _java_messages(bs)
              if r["topic"] == "rmq_sys_wheel_timer" and r["queueOffset"] >= start
              and "TIMER_DEL_UNIQKEY" not in r["properties"]}
    maybe = got["may_enqueue_twice"]
    assert set(got.loc[(got["source"] == "timer queue") & ~maybe, "offset_py"]) == queued
    # 5.3.2+ then moves the offset into the queue as its recovery left it: on a RocksDB queue,
    # whose group commit may lag the timer store's recovery, possibly earlier, never later
    earlier = {r["physicalOffset"] for r in _java_messages(bs)
               if r["topic"] == "rmq_sys_wheel_timer" and r["queueOffset"] < start}
    assert set(got.loc[maybe, "offset_py"]) <= earlier
    if "rocksdb" not in scenario:
        assert not maybe.any()


def _never_delivered(bs: rh.BrokerStore) -> set[int]:
    """The timer topic's messages the broker never put back into their real topics (no message
    of that topic with the UNIQ_KEY stored after it: MessageDecoder's decode), less delete
    markers and the messages they cancel (buildDeleteKey: REAL_TOPIC+UNIQ_KEY)."""
    msgs = list(_java_messages(bs))
    timer = [m for m in msgs if m["topic"] == "rmq_sys_wheel_timer"]
    cancelled = {m["properties"]["TIMER_DEL_UNIQKEY"] for m in timer if "TIMER_DEL_UNIQKEY" in m["properties"]}
    copies = {(m["topic"], m["properties"].get("UNIQ_KEY")): m["physicalOffset"] for m in msgs
              if m["topic"] != "rmq_sys_wheel_timer"}
    return {m["physicalOffset"] for m in timer if "TIMER_DEL_UNIQKEY" not in m["properties"]
            and f"{m['properties'].get('REAL_TOPIC')}+{m['properties'].get('UNIQ_KEY')}" not in cancelled
            and copies.get((m["properties"].get("REAL_TOPIC"), m["properties"].get("UNIQ_KEY")), -1)
            < m["physicalOffset"]}


def _timer_sends(bs: rh.BrokerStore) -> dict[str, int]:
    """msgId -> the delivery time the producer asked for, of the workload's timer sends (the
    time is the last word of the body it sent)."""
    out = {}
    by_id = {r.get("properties", {}).get("UNIQ_KEY"): r for r in _java_messages(bs)
             if r["topic"] == "rmq_sys_wheel_timer"}
    for s in bs.answers["sends"]:
        if s["kind"] == "timer" and s["msgId"] in by_id:
            body = base64.b64decode(by_id[s["msgId"]]["body"]).decode()
            out[s["msgId"]] = int(body.rsplit(" ", 1)[1])
    return out


@pytest.mark.parametrize(("release", "scenario"), TIMERS_CLEAN, ids=[_id(c) for c in TIMERS_CLEAN])
def test_pending_timers_are_the_producers_unfired_timers(release, scenario):
    """After a clean stop the wheel holds exactly the producer's timers not yet due, less the one
    it cancelled, each firing at the time asked rounded down to the precision as
    HookUtils.transformTimerMessage rounds it; the counts per real topic are the broker's own
    TimerMetrics, less those of the slots the shutdown's dequeue read after the checkpoint's last
    flush: the metrics count a message out when it is dequeued and are persisted after the
    checkpoint (a loaded 5.3.3 stop: checkpoint at lastReadTimeMs + 115 ms, metrics a second
    later, the 3 units of the slot at lastReadTimeMs counted out), so a topic's count may be
    short by the units in slots from lastReadTimeMs to the time its count last changed."""
    from rmqlab.store.timers import pending_timers

    bs, java = _timer_case(release, scenario)
    got = pending_timers(_store(bs))
    p = rh.TIMER_PRECISION_MS
    asked = _timer_sends(bs)
    cancelled = {s["msgId"] for s in bs.answers["sends"] if s["kind"] == "timer" and "timer-cancelled" in s["keys"]}
    assert len(asked) == 8 and len(cancelled) == 1   # 6, the rolled one, the cancelled one
    rounded = {m: (at - p if at % p == 0 else at // p * p) for m, at in asked.items()}
    expect = {m: t for m, t in rounded.items() if t >= java["checkpoint"]["lastReadTimeMs"] and m not in cancelled}
    mine = got[got["real_topic"] == "TopicTimer"]
    assert dict(zip(mine["uniq_key"], mine["fires_at_ms"].astype(int), strict=True)) == expect
    assert mine["rolled"].sum() == 1
    wheel = got[got["source"] == "wheel"]
    counts = wheel.groupby("real_topic").size().to_dict()
    metrics = {t: n for t, n in java["metrics"].items() if n}
    assert set(metrics) <= set(counts)
    changed = {t: v["timeStamp"] for t, v in
               json.loads((bs.store / "config" / "timermetrics").read_text())["timingCount"].items()}
    last_read = java["checkpoint"]["lastReadTimeMs"]
    for topic, n in counts.items():
        late = int(((wheel["real_topic"] == topic) & (wheel["slot_ms"] <= changed.get(topic, last_read))).sum())
        assert n - late <= metrics.get(topic, 0) <= n, (topic, n, late, metrics.get(topic))


def _damage_timer(store: Path, what: str) -> None:
    """One damage to a copy of a broker's timer store, at its first pending unit."""
    import struct

    from rmqlab.formats import timer as tm

    last_read = tm.read_timer_checkpoint(store / "config" / "timercheck").last_read_time_ms
    with tm.TimerLog.open(store / "timerlog") as log:
        due = log.delayed_time()
        i = int(np.flatnonzero(due >= last_read)[0])
        pos, slot_time = int(log.positions[i]), int(due[i])
        path, at = log.files[0].path, pos - log.files[0].start
    if what == "wheel-length":
        with open(store / "timerwheel", "r+b") as f:
            f.truncate(tm.WHEEL_SIZE - tm.SLOT.size)
        return
    if what == "slot-num":
        path, at = store / "timerwheel", (slot_time // rh.TIMER_PRECISION_MS) % (tm.SLOTS_TOTAL * 2) * tm.SLOT.size
        field, code = "num", "i"
    else:
        field, code = {"prev-pos": ("prev_pos", "q"), "magic": ("magic", "i"), "offset-py": ("offset_py", "q"),
                       "delay": ("delay_time", "i")}[what]
    layout = tm.SLOT if what == "slot-num" else tm.UNIT
    with open(path, "r+b") as f:
        f.seek(at + layout.offset(field))
        old = struct.unpack(">" + code, f.read(struct.calcsize(code)))[0]
        new = {"prev-pos": old + 52 * 1000, "magic": 0x10, "offset-py": old + 1, "delay": old + rh.TIMER_PRECISION_MS,
               "slot-num": old + 1}[what]
        f.seek(at + layout.offset(field))
        f.write(struct.pack(">" + code, new))


TIMER_DAMAGE = {"wheel-length": "timer.file", "slot-num": "timer.chain", "prev-pos": "timer.chain",
                "magic": "timer.unit", "offset-py": "timer.message", "delay": "timer.chain"}


@pytest.mark.parametrize(("release", "scenario"), TIMERS_CLEAN, ids=[_id(c) for c in TIMERS_CLEAN])
def test_verify_finds_each_damage_to_the_brokers_timer_store(release, scenario, tmp_path):
    """Each damage, made to a copy of the broker's timer store, is the one problem verify's timer
    report finds; the undamaged copy has none."""
    from rmqlab.verify.check_timer import verify_timer_store

    bs = rh.rocketmq_store(release, scenario)
    clean = verify_timer_store(bs.store, rh.COMMITLOG_FILE_SIZE, commitlog_paths=bs.commitlog_paths)
    assert clean.problems == [] and clean.counts["pending"] > 0
    for what, code in TIMER_DAMAGE.items():
        copy = tmp_path / what
        rh.copy_store(bs.store, copy)
        _damage_timer(copy, what)
        got = {p.check for p in verify_timer_store(copy, rh.COMMITLOG_FILE_SIZE,
                                                   commitlog_paths=bs.commitlog_paths).problems}
        assert code in got and got <= {code, "timer.message", "timer.chain"}, (what, got)


@pytest.mark.parametrize(("release", "scenario"), TIMERS_CLEAN, ids=[_id(c) for c in TIMERS_CLEAN])
def test_timer_readers_survive_hostile_bytes_from_the_brokers_timer_files(release, scenario, tmp_path):
    """The timer readers and verify's timer checks, fed the broker's own timer files mutated
    (fuzz_support.TimerTarget seeded from this store only): each answers or raises a typed
    error naming file, offset or field; none hangs."""
    import fuzz_support as fs

    bs = rh.rocketmq_store(release, scenario)
    target = fs.TimerTarget([bs.store], only_stores=True)
    with fs.Runner(target, tmp_path, timeout=10.0) as rt:
        assert [s.name for s in rt.seeds] == ["broker-0"] and len(rt.seeds[0].data) > 56 + 52
        k = 0
        while rt.inputs < 1500:
            rt.run_swarm(k, 50)
            k += 1
    assert rt.failures == [] and rt.typed_errors > 0


COMPACTION_CLEAN = [(r, s) for r, s in CASES if rh.version_tuple(r) >= (5, 1, 0)
                    and s in ("clean", "dledger", "dledger-group", "dledger-mixed")]


def _damage_compaction(store: Path, what: str) -> None:
    """One damage to a copy of a broker's compaction store (queue 0 of the compaction topic)."""
    import struct

    from rmqlab.formats import batchconsumequeue as bcq
    from rmqlab.formats import compaction as cpt

    qfile = sorted(cpt.cq_dir(store, "TopicCompact", 0).iterdir())[0]
    lfile = sorted(cpt.log_dir(store, "TopicCompact", 0).iterdir())[0]
    if what == "checkpoint":
        (store / cpt.COMPACTION_DIR / "position-checkpoint").write_text("{not json")
    elif what == "file-name":
        lfile.rename(lfile.with_name(f"{1:020d}"))
    else:
        path, at, code, new = {
            "unit-size": (qfile, 46 * 3 + bcq.UNIT.offset("size"), "i", 1),
            "unit-base": (qfile, 46 * 3 + bcq.UNIT.offset("msg_base_offset"), "q", 2),
            "record-offset": (lfile, 0, "q", 7),   # PHYSICALOFFSET of the third record (placed below)
        }[what]
        with open(path, "r+b") as f:
            if what == "record-offset":   # the third record: find its start from the queue
                units = np.frombuffer(qfile.read_bytes()[:46 * 3], dtype=bcq.UNIT.dtype)
                at = int(units["commitlog_offset"][2]) + 28   # TOTALSIZE .. QUEUEOFFSET: 28 bytes
            f.seek(at)
            f.write(struct.pack(">" + code, new))


COMPACTION_DAMAGE = {"unit-size": "compaction.unit", "unit-base": "compaction.cq", "record-offset": "compaction.unit",
                     "file-name": "compaction.files", "checkpoint": "compaction.checkpoint"}


@pytest.mark.parametrize(("release", "scenario"), COMPACTION_CLEAN, ids=[_id(c) for c in COMPACTION_CLEAN])
def test_verify_finds_each_damage_to_the_brokers_compaction_store(release, scenario, tmp_path):
    """Each damage, made to a copy of the broker's compaction store, is found as its check; the
    undamaged store has none."""
    from rmqlab.verify.check_compaction import verify_compaction

    bs = rh.rocketmq_store(release, scenario)
    clean = verify_compaction(bs.store)
    assert [p for r in clean for p in r.problems] == [] and sum(r.counts.get("units", 0) for r in clean) == 30
    for what, code in COMPACTION_DAMAGE.items():
        copy = tmp_path / what
        copy.mkdir()
        rh.copy_store(bs.store / "compaction", copy / "compaction")
        _damage_compaction(copy, what)
        got = {p.check for r in verify_compaction(copy) for p in r.problems}
        assert code in got, (what, got)


def _readme_file_rows() -> dict[str, tuple[set[str], set[str], set[str]]]:
    """README's "Every file a broker leaves" table: (root names, config names, names marked not
    read yet). A name with <...> is a prefix; `config/*.bak` any backup in config/."""
    import re

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = text.split("### Every file a broker leaves in its store", 1)[1].split("\n## ", 1)[0]
    root, config, unread = set(), set(), set()
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        first, *_, last = [c.strip() for c in line.strip("|").split("|")]
        names = re.findall(r"`([^`]+)`", first.split("(")[0])
        in_config = names[0].startswith("config/")
        if in_config:
            root.add("config")
        for n in names:
            n = n.removeprefix("config/").rstrip("/")
            n = n.split("<", 1)[0] if "<" in n else n
            (config if in_config else root).add(n)
            if "not read yet" in last:
                unread.add(n)
    return root, config, unread


def _named(name: str, names: set[str]) -> bool:
    return name in names or any(n.endswith((".", "-")) and name.startswith(n) for n in names) or \
        ("*.bak" in names and name.endswith(".bak"))


def test_the_readme_names_every_file_the_brokers_leave(written):
    """Every name at the store root and in config/ of a store a broker wrote is a row of the
    README's table; what `store info` lists as not read is what the table marks not read yet."""
    root, config, unread = _readme_file_rows()
    here = sorted(p.name for p in written.store.iterdir())
    assert [n for n in here if not _named(n, root)] == []
    if (written.store / "config").is_dir():
        assert [n for n in sorted(p.name for p in (written.store / "config").iterdir())
                if not _named(n, config)] == []
    assert set(_store(written).not_read()) <= unread


TIMER_RESTARTS = [(r, s) for r, s in RECOVERIES if rh.version_tuple(r) >= (5, 0, 0)]


@pytest.mark.parametrize(("release", "restart"), TIMER_RESTARTS, ids=[_id(c) for c in TIMER_RESTARTS])
def test_pending_timers_of_a_killed_store_are_what_the_restarted_broker_delivers(release, restart):
    """rmqlab reads the killed store's timer files and says what a restart at `now` does with
    each pending timer; the broker was then restarted on that store. Judged by what it wrote
    after the restart (messages past the killed CommitLog's end carrying TIMER_DEQUEUE_MS, the
    property TimerMessageStore puts on a delivered timer): every timer rmqlab says fires at once,
    and every one due before the restarted broker's last write, was delivered; none due after it
    was. `now` is the store time of the first message the restarted broker wrote; a restart that
    wrote nothing proves no timer was due when the killed broker last wrote."""
    from rmqlab.formats import commitlog as cl
    from rmqlab.store.timers import pending_timers

    killed = rh.rocketmq_store(release, rh.RESTARTS[restart])
    after = rh.rocketmq_store(release, restart)
    written = cl.read_columns(after.commitlog, body=False)
    new = written[written["phy_offset"] >= cl.max_offset(killed.commitlog)]
    if not len(new):
        # the restart delivered nothing while it ran: then no timer was due even when the killed
        # broker last wrote (the restart came later), or the restart would have delivered it
        before = cl.read_columns(killed.commitlog, body=False)
        wheel = pending_timers(_store(killed), now=int(before["store_timestamp"].max()))
        assert not (wheel[wheel["source"] == "wheel"]["at_restart"] == "fires at once").any()
        return
    now, last = int(new["store_timestamp"].min()), int(new["store_timestamp"].max())
    delivered = set(_timer_deliveries(new)["uniq_key"])
    got = pending_timers(_store(killed), now=now)
    wheel = got[got["source"] == "wheel"]
    assert len(wheel) > 0
    fired = wheel["uniq_key"].isin(delivered)
    assert fired[wheel["at_restart"] == "fires at once"].all()
    assert fired[wheel["slot_ms"] <= last - 2000].all()          # due while it ran: delivered
    assert not fired[wheel["slot_ms"] > last + 1000].any()       # due after it stopped: not yet
    assert set(new.loc[new["uniq_key"].isin(delivered), "uniq_key"]) <= set(got["uniq_key"])   # nothing unforeseen


def _has_property(records, name: str):
    """Whether each of `records` (read_columns rows) carries the property `name`."""
    return records["properties"].str.contains(f"(?:^|\x02){name}\x01", na=False, regex=True)


def _timer_deliveries(records):
    """The timer deliveries among `records` (rmqlab.formats.commitlog.read_columns rows): the
    copies carrying TIMER_DEQUEUE_MS, which TimerMessageStore.convert puts on a message it puts
    back into its real topic; uniq_key, store_timestamp and phy_offset of each."""
    return records.loc[_has_property(records, "TIMER_DEQUEUE_MS"), ["uniq_key", "store_timestamp", "phy_offset"]]


def _timers_stored_due(records):
    """The uniq_keys of the timer messages stored straight in their topic: HookUtils (5.x) sends a
    message to the timer wheel only while its TIMER_DELIVER_MS lies ahead of the broker's clock,
    so one whose time had passed when the broker put it (a client stalled between stamping and
    sending, as on a loaded machine) is delivered at once, never dequeued, and has no
    TIMER_DEQUEUE_MS."""
    wheel = records["topic"].astype(str) == "rmq_sys_wheel_timer"
    straight = _has_property(records, "TIMER_DELIVER_MS") & ~_has_property(records, "TIMER_DEQUEUE_MS") & ~wheel
    return set(records.loc[straight, "uniq_key"])


TIMER_CRASH_RESTARTS = [(r, s) for r, s in TIMER_RESTARTS if rh.RESTARTS[s].endswith("crash")]


@pytest.mark.parametrize(("release", "restart"), TIMER_CRASH_RESTARTS, ids=[_id(c) for c in TIMER_CRASH_RESTARTS])
def test_the_timers_a_restart_delivers_twice_are_those_rmqlab_names(release, restart):
    """The broker was killed while TimerTail.java's timer messages came due (one every 20 ms,
    each 1.5 s after its send), so its timer checkpoint, flushed once a second, lagged the timer
    log and the CommitLog. rmqlab reads the killed store and names the messages a restart
    delivers a second time: those already delivered after the checkpoint (already_delivered) and
    those enqueued after it, which the restart enqueues again (enqueued_twice). Judged by the
    restarted broker's CommitLog: the messages delivered twice in all (before the kill and after
    the restart, or twice after it) are exactly those, among the ones due while it ran; and
    every timer message the client had acknowledged was delivered at least once. On a DLedger
    CommitLog they are among those delivered twice: the restarted broker dequeues before its
    election, and DLedgerRoleChangeHandler.changeToMaster then rewinds the wheel to the
    checkpoint (BrokerController.changeScheduleServiceStatus, TimerMessageStore.syncLastReadTimeMs),
    so what came due in between, the election's timing decides, goes out once more. On a RocksDB
    ConsumeQueue (5.3.2+) the restart enqueues again from the timer queue's max offset when the
    queue's recovery has stored fewer units than the timer log holds (TimerMessageStore.recover;
    the group-commit thread stores them while the timer store recovers), so the messages from
    the stored queue's end on may go out twice: those named may_enqueue_twice (a 5.5.0 run
    enqueued 15 of them again)."""
    from rmqlab.formats import commitlog as cl
    from rmqlab.store.timers import pending_timers

    killed = rh.rocketmq_store(release, rh.RESTARTS[restart])
    after = rh.rocketmq_store(release, restart)
    end = cl.max_offset(killed.commitlog)
    records = cl.read_columns(after.commitlog, body=False)
    every = _timer_deliveries(records)
    new = every[every["phy_offset"] >= end]
    if not len(new):
        pytest.fail(f"{release} {restart}: the restarted broker delivered no timer message")
    counts = every["uniq_key"].value_counts()
    twice = set(counts[counts > 1].index)
    got = pending_timers(_store(killed), now=int(new["store_timestamp"].min()))
    ran_until = int(new["store_timestamp"].max())
    due = got[got["fires_at_ms"].fillna(ran_until).astype(np.int64) <= ran_until - 2000]
    named = set(due.loc[due["already_delivered"] | due["enqueued_twice"], "uniq_key"])
    # those a race in the restart decides: the RocksDB ConsumeQueue's recovery (5.3.2+)
    maybe = set(due.loc[due["may_enqueue_twice"], "uniq_key"])
    if restart.startswith("dledger"):
        assert named <= twice, sorted(named - twice)[:5]
    else:
        assert named <= twice & set(due["uniq_key"]) <= named | maybe, (sorted(named - twice)[:5],
                                                                          sorted(twice - named - maybe)[:5])
        if "rocksdb" not in restart:
            assert not maybe, sorted(maybe)[:5]     # a ConsumeQueue file decides: no race
    assert twice <= set(got["uniq_key"])   # nothing delivered twice that rmqlab did not foresee at all
    assert len(twice) > 0, "the kill came while the timer store delivered: some message is delivered twice"
    acked = [json.loads(line)["msgId"] for line in (killed.folder / "timer-acks.jsonl").read_text().splitlines()]
    # each acknowledged send was delivered: through the wheel, or at once when already due on arrival
    assert len(acked) >= rh.TIMER_TAIL_S * 10 and set(acked) <= set(every["uniq_key"]) | _timers_stored_due(records)


@pytest.mark.parametrize(("release", "scenario"), COMPACTION_CLEAN, ids=[_id(c) for c in COMPACTION_CLEAN])
def test_compaction_readers_survive_hostile_bytes_from_the_brokers_files(release, scenario, tmp_path):
    """The compaction readers and verify's compaction checks, fed the broker's own compaction
    queue and log mutated (fuzz_support.CompactionTarget seeded from this store only): each
    answers or raises a typed error naming file, offset or field; none hangs."""
    import fuzz_support as fs

    bs = rh.rocketmq_store(release, scenario)
    target = fs.CompactionTarget([bs.store], only_stores=True)
    with fs.Runner(target, tmp_path, timeout=10.0) as rt:
        assert [s.name for s in rt.seeds] == ["broker-0"] and rt.seeds[0].meta["cq_bytes"] == 46 * 8
        k = 0
        while rt.inputs < 1500:
            rt.run_swarm(k, 50)
            k += 1
    assert rt.failures == [] and rt.typed_errors > 0


# -- pop consumption (5.x): the revive log's checkpoints, judged by the client and the broker ----

POPS = [(r, s) for r, s in CASES if rh.version_tuple(r) >= (5, 0, 0)]
#: PopConsumer.java's group that leaves messages unacknowledged, and its pop retry topic
#: (KeyBuilder.buildPopRetryTopicV1: the broker runs with enableRetryTopicV2 off, its default)
HOLD_GROUP, HOLD_RETRY = "G_pop_hold", "%RETRY%G_pop_hold_TopicOrder"


def _held(bs: rh.BrokerStore) -> list[dict]:
    """The messages PopConsumer.java's G_pop_hold popped and never acknowledged, as the client
    recorded them (pop.json of the run that popped: a restart's source run)."""
    src = rh.rocketmq_store(bs.release, rh.RESTARTS[bs.scenario]) if bs.scenario in rh.RESTARTS else bs
    held = json.loads((src.folder / "pop.json").read_text(encoding="utf-8"))["held"]
    assert held, f"{src.release} {src.scenario}: PopConsumer left nothing in flight"
    return held


def _in_flight(bs: rh.BrokerStore) -> list[dict]:
    """The held messages still in flight when the broker stopped: those it had not re-put into
    HOLD_RETRY itself (a run slowed by a loaded machine past the 240 s invisible time would, and
    its revive service re-puts them before the stop)."""
    reput = _reputs(bs)
    return [h for h in _held(bs) if h["msgId"] not in reput]


def _reputs(bs: rh.BrokerStore) -> dict[str, dict]:
    """UNIQ_KEY -> MessageDecoder's record of each message the broker put into HOLD_RETRY."""
    return {r["properties"]["UNIQ_KEY"]: r for r in _java_messages(bs) if r["topic"] == HOLD_RETRY}


@pytest.mark.parametrize(("release", "scenario"), POPS, ids=[_id(c) for c in POPS])
def test_unacknowledged_pops_are_what_the_client_held(release, scenario):
    """The messages rmqlab says the revive service will re-put are, with those the broker has
    already re-put (MessageDecoder's decode of the pop retry topic), exactly the messages the
    client popped and never acknowledged (pop.json): same ids, queues and offsets, none in both.
    Every other pop (G_pop's, acknowledged) is foreseen as nothing."""
    from rmqlab.store.popstate import REPUT

    bs = rh.rocketmq_store(release, scenario)
    held = {h["msgId"]: h for h in _held(bs)}
    redo = _store(bs).pop_redeliveries()
    assert set(redo["group"]) <= {HOLD_GROUP}, redo
    reput = _reputs(bs)
    foreseen = set(redo["msg_id"])
    assert not foreseen & set(reput) and foreseen | set(reput) == set(held), (sorted(foreseen), sorted(reput))
    for r in redo.itertuples():
        h = held[r.msg_id]
        assert (r.topic, r.queue_id, r.queue_offset) == (h["topic"], h["queueId"], h["queueOffset"])
        assert (r.retry_topic, r.reconsume_times, r.outcome) == (HOLD_RETRY, 1, REPUT)
        pop_time, invisible = (int(x) for x in h["popCk"].split()[1:3])    # ExtraInfoUtil's fields
        assert r.revive_time_ms == pop_time + invisible


REVIVED = [(r, s) for r, s in POPS if s == "revived"]


@pytest.mark.parametrize(("release", "scenario"), REVIVED, ids=[_id(c) for c in REVIVED])
def test_pop_redeliveries_are_what_the_restarted_broker_revived(release, scenario):
    """rmqlab reads the cleanly stopped store and says which popped messages the revive service
    will put into which retry topic, when, with what reconsume count; the broker was restarted on
    that store and kept running past the revive time (the ``revived`` scenario). What it wrote
    after the restart (MessageDecoder's decode past the stopped CommitLog's end) is exactly that:
    each foreseen message re-put once, into the retry topic, queue 0, reconsume times 1,
    1ST_POP_TIME the checkpoint's pop time, stored after its revive time. On the revived store
    rmqlab foresees nothing more."""
    from rmqlab.formats import commitlog as cl

    before, after = rh.rocketmq_store(release, rh.RESTARTS[scenario]), rh.rocketmq_store(release, scenario)
    assert _in_flight(before), ("the clean run outlasted the hold's invisible time, so its broker re-put every "
                                "held message before the stop and the restart has nothing to revive: rebuild the "
                                "clean store on a less loaded machine")
    end = cl.max_offset(before.commitlog)
    new = [r for r in _java_messages(after) if r["offset"] >= end]
    assert new, "the restarted broker wrote nothing"
    now = min(r["storeTimestamp"] for r in new)
    redo = _store(before).pop_redeliveries(now=now)
    assert len(redo) == len(_held(before))
    reput = [r for r in new if r["topic"] == HOLD_RETRY]
    assert sorted(r["properties"]["UNIQ_KEY"] for r in reput) == sorted(redo["msg_id"])
    by_id = {r["properties"]["UNIQ_KEY"]: r for r in reput}
    ck_pop_time = {h["msgId"]: int(h["popCk"].split()[1]) for h in _held(before)}
    for r in redo.itertuples():
        m = by_id[r.msg_id]
        assert (m["queueId"], m["reconsumeTimes"]) == (0, r.reconsume_times)
        assert int(m["properties"]["1ST_POP_TIME"]) == ck_pop_time[r.msg_id]
        assert m["storeTimestamp"] >= r.revive_time_ms
    assert _store(after).pop_redeliveries(now=max(r["storeTimestamp"] for r in new)).empty


@pytest.mark.parametrize(("release", "scenario"), POPS, ids=[_id(c) for c in POPS])
def test_revive_log_bodies_read_as_json_reads_them(release, scenario):
    """Every ck, ack and bAck body the broker wrote (MessageDecoder's decode of the revive topic,
    and of the timer topic for those still on the wheel) parses, with each field as the JSON
    text holds it under its fastjson name (the standard library's JSON reader)."""
    from rmqlab.formats import revivelog as rl

    bs = rh.rocketmq_store(release, scenario)
    bodies = [(r["properties"].get("TAGS"), base64.b64decode(r["body"])) for r in _java_messages(bs)
              if r["topic"].startswith("rmq_sys_REVIVE_LOG_")
              or r["properties"].get("REAL_TOPIC", "").startswith("rmq_sys_REVIVE_LOG_")]
    assert sum(tag == rl.CK_TAG for tag, _ in bodies) > 0 and sum(tag == rl.ACK_TAG for tag, _ in bodies) > 0, bs.folder
    for tag, body in bodies:
        doc = json.loads(body)
        rec = rl.parse_revive_body(tag, body)
        if tag == rl.CK_TAG:
            assert (rec.start_offset, rec.pop_time, rec.invisible_time, rec.num, rec.queue_id, rec.topic, rec.group) \
                == (doc["so"], doc["pt"], doc["it"], doc["n"], doc["q"], doc["t"], doc["c"])
            assert list(rec.offset_diff or []) == doc.get("d", []) and rec.bit_map == doc["bm"]
            assert rec.revive_time == doc.get("reviveTime", rec.revive_time)
        elif tag == rl.ACK_TAG:
            ao = doc.get("ao", doc.get("ackOffset"))
            assert rec.offsets == (ao,) and rec.topic == doc.get("t", doc.get("topic"))


POPS_CLEAN = [(r, s) for r, s in POPS if s in ("clean", "dledger", "dledger-group", "dledger-mixed", "rocksdb",
                                               "multipath", "configv2")]


@pytest.mark.parametrize(("release", "scenario"), POPS_CLEAN, ids=[_id(c) for c in POPS_CLEAN])
def test_verify_finds_a_damaged_pop_checkpoint(release, scenario, tmp_path):
    """A copy of the store with one checkpoint body the broker wrote (MessageDecoder's decode:
    its record's offset and size) made unparseable: rmqlab verify reports ``pop.body`` at that
    record, where the healthy store has no pop problem; the messages of the other checkpoints
    are still foreseen. The checkpoint is one the revive service has still to read: in the timer
    topic with no copy in the revive topic after it, or in the revive topic past the revive
    group's committed offset. Where the revive service read them all (a run a loaded machine
    slowed past their revive times), the damage is to one it read: never read again, so not
    reported."""
    from rmqlab.store.popstate import pop_redeliveries

    bs = rh.rocketmq_store(release, scenario)
    kw = {"hash_slot_num": rh.HASH_SLOT_NUM, "index_num": rh.INDEX_NUM, "commitlog_file_size": rh.COMMITLOG_FILE_SIZE,
          "consume_queue_file_size": rh.CONSUME_QUEUE_FILE_SIZE, "broker_version": release,
          "commitlog_paths": bs.commitlog_paths}
    healthy = verify_path(bs.store, **kw)
    assert not [p for f in healthy.files if f.kind == "pop" for p in f.problems]
    assert any(f.kind == "pop" for f in healthy.files)
    msgs = list(_java_messages(bs))
    cks = [r for r in msgs if r["properties"].get("TAGS") == "ck"
           and r["properties"].get("REAL_TOPIC", r["topic"]).startswith("rmq_sys_REVIVE_LOG_")]
    assert cks
    committed = {(t, int(q)): int(o) for t, q, o, g in Store(bs.store, **bs.store_kwargs()).config()
                 .consumer_offsets()[["topic", "queue_id", "offset", "group"]].itertuples(index=False)
                 if g == "CID_RMQ_SYS_REVIVE_GROUP"}
    copied = {(r["properties"].get("UNIQ_KEY"), r["topic"]): r["offset"] for r in msgs
              if r["topic"].startswith("rmq_sys_REVIVE_LOG_")}
    unread = [r for r in cks if (r["topic"].startswith("rmq_sys_REVIVE_LOG_")
                                 and r["queueOffset"] > committed.get((r["topic"], r["queueId"]), -1))
              or (r["topic"] == "rmq_sys_wheel_timer"
                  and copied.get((r["properties"].get("UNIQ_KEY"), r["properties"]["REAL_TOPIC"]), -1) < r["offset"])]
    victim = (unread or cks)[0]
    copy = tmp_path / "store"
    rh.copy_store(bs.store, copy)
    held_in = next(f for f in _commitlog_folders(bs) if (f / victim["file"]).exists())
    path = copy / held_in.relative_to(bs.store) / victim["file"]
    raw = bytearray(path.read_bytes())
    start = victim["offset"] - int(victim["file"])
    at = raw.index(b'{"', start, start + victim["storeSize"])
    raw[at] = ord("[")
    path.write_bytes(bytes(raw))
    report = verify_path(copy, **kw)
    got = [p for f in report.files if f.kind == "pop" for p in f.problems]
    assert [(p.check, p.severity, p.error.offset) for p in got] == \
        ([("pop.body", "error", victim["offset"])] if unread else [])
    if victim["properties"].get("TAGS") == "ck" and b'"c":"G_pop_hold"' not in base64.b64decode(victim["body"]):
        assert len(pop_redeliveries(Store(copy, **bs.store_kwargs()))) == len(_in_flight(bs))


@pytest.mark.parametrize(("release", "scenario"), POPS_CLEAN, ids=[_id(c) for c in POPS_CLEAN])
def test_revive_log_readers_survive_hostile_bytes_from_the_brokers_bodies(release, scenario, tmp_path):
    """The revive-log body readers fed this store's own ck, ack and bAck bodies mutated
    (fuzz_support.RevivelogTarget seeded from this store only): each answers or raises a typed
    error naming the body and field; none hangs."""
    import fuzz_support as fs

    bs = rh.rocketmq_store(release, scenario)
    target = fs.RevivelogTarget([bs.store], only_stores=True, store_kwargs=bs.store_kwargs())
    with fs.Runner(target, tmp_path, timeout=10.0) as rt:
        assert {s.name for s in rt.seeds} >= {"broker-0-ck", "broker-0-ack"}
        k = 0
        while rt.inputs < 1500:
            rt.run_swarm(k, 50)
            k += 1
    assert rt.failures == [] and rt.typed_errors > 0


@pytest.mark.parametrize(("release", "scenario"), POPS_CLEAN, ids=[_id(c) for c in POPS_CLEAN])
def test_store_pop_and_store_timers_on_the_command_line(release, scenario, capsys):
    """``rmqlab store pop --json`` lists the messages the client left unacknowledged (pop.json)
    and each popping group's committed offsets as the broker's consumer offset manager wrote
    them (its lmqConsumerOffset.json or consumerOffset.json, read with the standard library's
    JSON reader after quoting fastjson's bare keys); ``rmqlab store timers --json`` lists the
    producer's timer messages still pending. A store with no revive log is told apart."""
    import re

    from rmqlab.cli import main

    bs = rh.rocketmq_store(release, scenario)
    geometry = ["--consume-queue-file-size", str(rh.CONSUME_QUEUE_FILE_SIZE), "--commitlog-file-size",
                str(rh.COMMITLOG_FILE_SIZE)]
    paths = ["--commitlog-paths", ",".join(str(bs.store / p) for p in bs.commitlog_paths)] if bs.commitlog_paths \
        else []
    assert main(["store", "pop", str(bs.store), *geometry, *paths, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert sorted(r["msg_id"] for r in got["redeliveries"]) == sorted(h["msgId"] for h in _in_flight(bs))
    names = ("lmqConsumerOffset.json", "consumerOffset.json")
    if scenario not in (*rh.ROCKSDB_CQ_SCENARIOS, "configv2"):   # offsets in RocksDB (config/consumerOffsets/, rdb/)
        raw = next((bs.store / "config" / n).read_text() for n in names if (bs.store / "config" / n).exists())
        table = json.loads(re.sub(r"([{,]\s*)(\d+):", r'\1"\2":', raw))["offsetTable"]
        for g in got["groups"]:
            want = table.get(f"{g['topic']}@{g['group']}", {}).get(str(g["queue_id"]))
            assert g["committed_offset"] == want, g
    assert main(["store", "timers", str(bs.store), *geometry, *paths, "--topic", "TopicTimer", "--json"]) == 0
    timers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    sent = {s["msgId"] for s in bs.answers["sends"] if s["kind"] == "timer"}
    assert timers and {t["uniq_key"] for t in timers} <= sent
    plain = rh.rocketmq_store("4.9.7", "clean") if "4.9.7" in rh.selected_releases() else None
    if plain is not None:
        assert main(["store", "pop", str(plain.store), *geometry]) == 3      # bad input: no pop here
        assert "no queue of a revive topic" in capsys.readouterr().err


MESSAGE_ROCKSDB = [(r, s) for r, s in CASES if rh.version_tuple(r) >= (5, 5, 0) and s in ("clean", "rocksdb")]


@pytest.mark.parametrize(("release", "scenario"), MESSAGE_ROCKSDB, ids=[_id(c) for c in MESSAGE_ROCKSDB])
def test_the_message_rocksdb_of_a_55_store_is_read_and_empty(release, scenario, tmp_path):
    """5.5 creates rocksdbstore/ (MessageRocksDBStorage) even with its RocksDB index, timer and
    transaction stores off: rmqlab reads its column families (those its MANIFEST names) and
    finds no key, so it is not listed as unread; a copy given a key in one family is listed."""
    import re

    bs = rh.rocketmq_store(release, scenario)
    store = _store(bs)
    families = store.message_rocksdb()
    manifest = next((bs.store / "rocksdbstore").glob("MANIFEST-*")).read_bytes()
    named = {n for n in ("timer", "trans", "default") if re.search(n.encode(), manifest)} | {"default"}
    assert families == {n: 0 for n in named} and {"timer", "trans"} <= set(families)
    assert "rocksdbstore" not in store.not_read() and store.info()["rocksdbstore"]["column_families"] == families
    import rocksdict

    copy = tmp_path / "store"
    rh.copy_store(bs.store, copy)
    db = rocksdict.Rdict(str(copy / "rocksdbstore"), options=rocksdict.Options(raw_mode=True),
                         column_families={n: rocksdict.Options(raw_mode=True) for n in families if n != "default"})
    db.get_column_family("timer")[b"k"] = b"v"
    db.close()
    again = Store(copy, **bs.store_kwargs())
    assert again.message_rocksdb()["timer"] == 1 and "rocksdbstore" in again.not_read()
