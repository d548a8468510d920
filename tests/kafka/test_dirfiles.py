"""Producer-state snapshots, .txnindex, the partition directory's other files and `rmqlab kafka dump`
of each of them. Fixtures are packed field by field here with struct and kafka-python's CRC-32C
(nothing shared with rmqlab); the real files must decode to the values their READMEs state."""
from __future__ import annotations

import json
import shutil
import struct

import kafka_stdlib as ks
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.util import calc_crc32c
from oracles import require_real_data

from rmqlab.cli import main
from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.kafka import dirfiles
from rmqlab.kafka.producer_state import producer_snapshot_problems, read_producer_snapshot
from rmqlab.kafka.txnindex import read_txn_index, txn_index_problems

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
ENTRY_FMT = ">qhiqiqiq"   # producerId epoch lastSeq lastOffset offsetDelta timestamp coordEpoch txnFirstOffset
TXN_FMT = ">hqqqq"
I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I16 = st.integers(-(2**15), 2**15 - 1)


def snapshot_bytes(entries, *, version=1, crc=None) -> bytes:
    tail = struct.pack(">i", len(entries)) + b"".join(struct.pack(ENTRY_FMT, *e) for e in entries)
    return struct.pack(">hI", version, calc_crc32c(tail) if crc is None else crc) + tail


def first_seq(last: int, delta: int) -> int:
    return 2**31 - 1 - (delta - last) + 1 if last < delta else last - delta


# ------------------------------------------------------------------ producer-state snapshots


@SETTINGS
@given(st.lists(st.tuples(I64, I16, I32, I64, I32, I64, I32, I64), max_size=6))
def test_producer_snapshot_round_trip(tmp_path_factory, entries):
    p = tmp_path_factory.mktemp("s") / "00000000000000000100.snapshot"
    p.write_bytes(snapshot_bytes(entries))
    df = read_producer_snapshot(p)
    cols = ["producer_id", "producer_epoch", "last_sequence", "last_offset", "offset_delta", "timestamp",
            "coordinator_epoch", "current_txn_first_offset"]
    assert df[cols].values.tolist() == [list(e) for e in entries]
    assert df["first_sequence"].tolist() == [first_seq(e[2], e[4]) for e in entries]
    a = df.attrs
    assert (a["version"], a["crc_ok"], a["offset"], a["trailing_bytes"]) == (1, True, 100, 0)


def test_producer_snapshot_damage(tmp_path):
    p = tmp_path / "00000000000000000100.snapshot"
    good = snapshot_bytes([(5, 0, 3, 50, 1, 1000, -1, -1), (6, 1, 0, 60, 0, 1001, 2, 55)])
    p.write_bytes(good[:-7])
    with pytest.raises(TruncatedFileError) as e:
        read_producer_snapshot(p, verify_crc=False)
    assert (e.value.field, e.value.offset) == ("producer_entries[1]", 10 + 46)
    with pytest.raises(FormatError) as e:   # the CRC covers the lost bytes too
        read_producer_snapshot(p)
    assert (e.value.path, e.value.offset, e.value.field) == (str(p), 2, "crc")
    p.write_bytes(good[:7])
    with pytest.raises(TruncatedFileError):
        read_producer_snapshot(p)
    p.write_bytes(snapshot_bytes([], crc=1))
    with pytest.raises(FormatError, match="corrupt"):
        read_producer_snapshot(p)
    assert read_producer_snapshot(p, verify_crc=False).attrs["crc_ok"] is False
    assert any("CRC-32C mismatch" in x for x in producer_snapshot_problems(p)[0])
    p.write_bytes(snapshot_bytes([], version=2))
    with pytest.raises(FormatError) as e:
        read_producer_snapshot(p)
    assert e.value.field == "version"
    p.write_bytes(snapshot_bytes([(5, 0, 3, 150, 1, 1000, -1, 120), (5, 0, 3, 50, 1, 1000, -1, -1)]))
    problems = producer_snapshot_problems(p)[0]
    assert any("lastOffset 150 is not below" in x for x in problems)
    assert any("currentTxnFirstOffset 120" in x for x in problems)
    assert any("appears more than once" in x for x in problems)


def test_real_producer_snapshot():
    p = require_real_data("kafka/producer-state-snapshots/client.order.report-0/00000000000000094751.snapshot")
    # README: "a producer-state snapshot (version 1, CRC-32C valid) with 3 producer entries (not
    # transactional: currentTxnFirstOffset -1)"; each entry's fields: the standard-library reader
    model = ks.read_producer_snapshot(p)
    assert (model["version"], model["crc_ok"], len(model["entries"])) == (1, True, 3)
    df = read_producer_snapshot(p)
    assert len(df) == 3 and df.attrs["version"] == 1 and df.attrs["crc_ok"]
    assert df["current_txn_first_offset"].tolist() == [-1, -1, -1]
    for col in ("producer_id", "last_sequence", "last_offset", "timestamp", "coordinator_epoch"):
        assert df[col].tolist() == [e[col] for e in model["entries"]], col
    assert producer_snapshot_problems(p) == ([], {"offset": 94751, "producers": 3, "transactional": 0,
                                                  "crc_ok": True})


@pytest.mark.parametrize("name", ["00000000000000000913.snapshot", "00000000000000001358.snapshot"])
def test_real_empty_snapshots(name):
    p = require_real_data(f"kafka/kraft-metadata-restart/__cluster_metadata-0/{name}")
    # README: "`00000000000000000913.snapshot` and `00000000000000001358.snapshot` are producer-state
    # snapshots (10 bytes: no producers)"
    assert ks.read_producer_snapshot(p) == {"version": 1, "crc_ok": True, "entries": []}
    df = read_producer_snapshot(p)
    assert len(df) == 0 and df.attrs["crc_ok"] and p.stat().st_size == 10


# ------------------------------------------------------------------ .txnindex


@SETTINGS
@given(st.lists(st.tuples(I64, I64, I64, I64), max_size=8), st.integers(0, 33))
def test_txn_index_round_trip(tmp_path_factory, entries, tail):
    p = tmp_path_factory.mktemp("t") / "00000000000000000000.txnindex"
    p.write_bytes(b"".join(struct.pack(TXN_FMT, 0, *e) for e in entries) + b"\x00" * tail)
    df = read_txn_index(p)
    assert df[["producer_id", "first_offset", "last_offset", "last_stable_offset"]].values.tolist() == \
        [list(e) for e in entries]
    assert df.attrs["trailing_bytes"] == tail


def test_txn_index_rules(tmp_path):
    p = tmp_path / "00000000000000000010.txnindex"
    p.write_bytes(struct.pack(TXN_FMT, 0, 1, 10, 12, 10) + struct.pack(TXN_FMT, 0, 2, 13, 12, 13)
                  + struct.pack(TXN_FMT, 0, 3, 20, 19, 20))
    problems, summary = txn_index_problems(p)
    assert summary == {"base_offset": 10, "aborted": 3}
    assert any("does not increase" in x for x in problems)
    assert any("firstOffset 13 is after lastOffset 12" in x for x in problems)
    p.write_bytes(struct.pack(TXN_FMT, 0, 1, 1, 2, 2))
    assert any("below the base offset 10" in x for x in txn_index_problems(p)[0])
    p.write_bytes(struct.pack(TXN_FMT, 0, 1, 10, 12, 10) + struct.pack(TXN_FMT, 0x0100, 1, 13, 14, 10))
    with pytest.raises(FormatError) as e:
        read_txn_index(p)
    assert (e.value.offset, e.value.field) == (34, "AbortedTxn[1].version")
    # AbortedTxn.version() reads the first byte: a low byte set does not change the version
    p.write_bytes(struct.pack(TXN_FMT, 1, 1, 10, 12, 10))
    assert read_txn_index(p)["version"].tolist() == [0]
    # the iterator throws only for a version above CURRENT_VERSION (TransactionIndex, Kafka 3.6):
    # a negative first byte is read (the fuzz target's model found rmqlab refusing it)
    p.write_bytes(struct.pack(TXN_FMT, -0x6800, 7, 10, 12, 10))
    assert read_txn_index(p)[["version", "producer_id"]].values.tolist() == [[-104, 7]]


# ------------------------------------------------------------------ the directory


def test_real_directories_check_clean():
    root = require_real_data("kafka")
    checks = [c for d in sorted(p for p in root.glob("*/*") if p.is_dir()) for c in dirfiles.check_partition_files(d)]
    assert checks and all(c.ok for c in checks), [c for c in checks if not c.ok]
    kinds = {c.kind for c in checks}
    assert {"producer-snapshot", "leader-epoch-checkpoint", "partition.metadata", "quorum-state",
            "kraft-snapshot"} <= kinds


def test_real_kraft_restart_files():
    d = require_real_data("kafka/kraft-metadata-restart/__cluster_metadata-0")
    by_name = {c.file.name: c for c in dirfiles.check_partition_files(d)}
    # README: "`leader-epoch-checkpoint`: epoch 1 from offset 0, epoch 2 from offset 913"
    assert by_name["leader-epoch-checkpoint"].summary == "leader epochs (epoch@startOffset): 1@0, 2@913"
    qs = json.loads((d / "quorum-state").read_text())          # the file's JSON, read here
    voters = [v["voterId"] for v in qs["currentVoters"]]
    assert by_name["quorum-state"].summary == \
        f"leaderId {qs['leaderId']} leaderEpoch {qs['leaderEpoch']} votedId {qs['votedId']} voters {voters}"
    assert "AAAAAAAAAAAAAAAAAAAAAQ" in by_name["partition.metadata"].summary
    assert by_name["00000000000000000913.snapshot"].summary.startswith("producer-state snapshot at offset 913: 0 ")


def test_classification_and_problems(tmp_path):
    names = {"00000000000000000000.log": b"", "00000000000000000000.index": b"",
             "00000000000000000005.snapshot": snapshot_bytes([], crc=7), "00000000000000000000.txnindex": b"",
             "leader-epoch-checkpoint": b"0\n2\n3 10\n2 20\n", "partition.metadata": b"version: 0\ntopic_id: x\n",
             "quorum-state": b"{}", "00000000000000000000.log.deleted": b"", "notes.txt": b"hi",
             "00000000000000000009-0000000001.checkpoint": b""}
    for n, b in names.items():
        (tmp_path / n).write_bytes(b)
    (tmp_path / "sub").mkdir()
    checks = {c.file.name: c for c in dirfiles.check_partition_files(tmp_path)}
    assert set(checks) == set(names) - {"00000000000000000000.log", "00000000000000000000.index"}
    assert checks["notes.txt"].kind == "unknown" and checks["notes.txt"].ok
    assert checks["00000000000000000000.log.deleted"].kind == "transient"
    assert checks["00000000000000000000.txnindex"].ok
    for bad in ("00000000000000000005.snapshot", "leader-epoch-checkpoint", "partition.metadata", "quorum-state",
                "00000000000000000009-0000000001.checkpoint"):
        assert not checks[bad].ok, bad
    assert "epoch 2 does not increase" in checks["leader-epoch-checkpoint"].problems[0]
    assert len(dirfiles.check_partition_files(tmp_path, segments=True)) == len(names)
    with pytest.raises(NotADirectoryError):
        dirfiles.check_partition_files(tmp_path / "notes.txt")


# ------------------------------------------------------------------ rmqlab kafka dump


def test_dump_producer_snapshot_like_kafka_dump_log(tmp_path, capsys):
    p = tmp_path / "00000000000000000100.snapshot"
    p.write_bytes(snapshot_bytes([(1000, 0, 9, 99, 4, 1718000000000, -1, -1), (7, 2, 0, -1, 0, 5, 3, 80)]))
    assert main(["kafka", "dump", str(p)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == ("producerId: 1000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
                      "OptionalLong.empty lastTimestamp: 1718000000000 firstSequence: 5 lastSequence: 9 "
                      "lastOffset: 99 offsetDelta: 4 timestamp: 1718000000000")
    assert out[2] == ("producerId: 7 producerEpoch: 2 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong[80] "
                      "lastTimestamp: 5")
    assert main(["kafka", "dump", str(p), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["kind"], d["offset"], d["crc_ok"], len(d["entries"])) == ("snapshot", 100, True, 2)
    p.write_bytes(snapshot_bytes([], crc=3))
    assert main(["kafka", "dump", str(p)]) == 1


def test_dump_txnindex_and_text_files(tmp_path, capsys):
    t = tmp_path / "00000000000000000000.txnindex"
    t.write_bytes(struct.pack(TXN_FMT, 0, 1000, 3, 7, 3))
    e = tmp_path / "leader-epoch-checkpoint"
    e.write_text("0\n2\n1 0\n2 913\n")
    assert main(["kafka", "dump", str(t), str(e)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "version: 0 producerId: 1000 firstOffset: 3 lastOffset: 7 lastStableOffset: 3"
    assert out[3:] == ["epoch: 1 startOffset: 0", "epoch: 2 startOffset: 913"]
    assert main(["kafka", "dump", str(tmp_path / "server.properties")]) == 3     # bad input


def test_dump_real_files(tmp_path, capsys):
    snap = require_real_data("kafka/producer-state-snapshots/__cluster_metadata-0/"
                             "00000000000000004758-0000000001.checkpoint")
    boot = require_real_data("kafka/kraft-metadata-restart/bootstrap.checkpoint")
    d = require_real_data("kafka/kraft-metadata-restart/__cluster_metadata-0")
    files = [snap, boot, d / "quorum-state", d / "partition.metadata", d / "00000000000000000913.snapshot"]
    assert main(["kafka", "dump", "--records", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "Snapshot end offset: 4758, epoch: 1" in out and "KRaft bootstrap snapshot" in out
    assert 'SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}' in out
    assert 'SnapshotFooter {"version":0}' in out
    # the feature level: the standard-library reader of the bootstrap's middle batch
    name, level = ks.feature_level(ks.read_batches(boot)[1]["records"][0]["value"])
    data = json.dumps({"name": name, "featureLevel": level}, separators=(",", ":"))
    assert f'payload: {{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{data}}}' in out
    # the quorum-state's JSON and partition.metadata's text, as they stand in the files
    qs = json.loads((d / "quorum-state").read_text())
    assert f"leaderId: {qs['leaderId']} leaderEpoch: {qs['leaderEpoch']}" in out
    assert "topicId: " + ks.read_partition_metadata_text(d / "partition.metadata")["topic_id"] in out
    assert main(["kafka", "dump", "--records", "--json", str(snap)]) == 0
    j = json.loads(capsys.readouterr().out)
    assert (j["kind"], j["end_offset"], j["epoch"], len(j["batches"])) == ("checkpoint", 4758, 1, 3)
    assert j["records"][0]["control"].startswith("SnapshotHeader ")


def test_dump_log_control_records(tmp_path, capsys):
    log = require_real_data("kafka/kraft-metadata-restart/__cluster_metadata-0/00000000000000000000.log")
    part = tmp_path / "other-0"   # outside __cluster_metadata: control records only
    part.mkdir()
    shutil.copy(log, part / log.name)
    assert main(["kafka", "dump", "--records", str(part / log.name)]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "LeaderChange" in ln]
    # README: "two are control batches (type 2, LeaderChange)", the second leader from 913; the
    # body: the standard-library reader, printed as kafka-dump-log 4.x prints it
    ctrl = [r for b in ks.read_batches(log) if b["is_control"] for r in b["records"]]
    assert len(lines) == 2 == len(ctrl) and lines[1].startswith("| offset: 913 ")
    lc = ks.decode_leader_change(ctrl[0]["value"])
    assert lines[0].endswith("controlType: LEADER_CHANGE(2) LeaderChange: " + json.dumps(lc, separators=(",", ":")))


def test_orphaned_index_files_are_the_brokers_leftovers_not_failures(tmp_path):
    """Index files whose .log is gone (a segment deleted by retention, or a crash between the
    deletes of one segment's files) are deleted by the broker when it loads the log
    (LogLoader.loadSegmentFiles): verify names them and passes, whatever they hold; an index
    beside its .log is still read and judged."""
    from rmqlab.kafka.rebuild import verify_partition

    src = require_real_data("kafka/kraft-metadata-restart/__cluster_metadata-0")
    d = tmp_path / "p"
    shutil.copytree(src, d)
    for suffix in (".index", ".timeindex", ".txnindex"):
        (d / f"{5:020d}{suffix}").write_bytes(b"\xff" * 37)          # not even whole entries
    segments, files = verify_partition(d)
    assert [r.ok for r in segments] == [True] and len(segments) == 1
    orphans = {f.file.name: f for f in files if f.file.name.startswith(f"{5:020d}")}
    assert sorted(orphans) == [f"{5:020d}.index", f"{5:020d}.timeindex", f"{5:020d}.txnindex"]
    assert all(f.ok and "orphaned index file" in f.summary and "deletes it" in f.summary for f in orphans.values())
    assert main(["kafka", "verify", str(d)]) == 0

    (d / f"{0:020d}.index").write_bytes(b"\xff" * 37)                  # beside its .log: judged
    segments, _ = verify_partition(d)
    assert not segments[0].ok
