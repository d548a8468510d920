"""`rmqlab kafka dump|verify|rebuild-index` through rmqlab.cli.main, against the library readers
and the real segments (skipped when absent)."""
from __future__ import annotations

import json
from pathlib import Path

import kafka_stdlib as ks
import pytest
from oracles import REAL_DATA, needs_real_data, require_real_data

from rmqlab.cli import main
from rmqlab.kafka.index import read_offset_index, read_time_index
from rmqlab.kafka.log import KafkaRecord, read_batches, write_segment
from rmqlab.kafka.rebuild import expected_entries, rebuild_indexes

REAL = REAL_DATA / "kafka"
needs_real = needs_real_data(REAL)


@pytest.fixture
def segment(tmp_path):
    """A closed segment of 40 records of 300 bytes, its indexes written by the rule."""
    d = tmp_path / "t-0"
    log = write_segment(d, 100, [KafkaRecord(100 + i, 5000 + 10 * i, b"k%d" % i, bytes(300)) for i in range(40)])
    rebuild_indexes(log, d)
    return log


def test_dump_json_is_what_the_readers_read(segment, capsys):
    index, timeindex = segment.with_suffix(".index"), segment.with_suffix(".timeindex")
    assert main(["kafka", "dump", str(index), str(timeindex), str(segment), "--json", "--records"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["kind"] for d in out] == ["index", "timeindex", "log"]
    assert [(e["offset"], e["position"]) for e in out[0]["entries"]] == read_offset_index(index).tolist()
    assert [(e["timestamp"], e["offset"]) for e in out[1]["entries"]] == read_time_index(timeindex).tolist()
    batches = read_batches(segment)
    assert [b["position"] for b in out[2]["batches"]] == batches["position"].tolist()
    assert [r["offset"] for r in out[2]["records"]] == list(range(100, 140))
    assert len(out[0]["entries"]) > 2                  # a sparse index, but not empty


def test_dump_text_looks_like_kafka_dump_log(segment, capsys):
    assert main(["kafka", "dump", str(segment.with_suffix(".index"))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Dumping {segment.with_suffix('.index')}"
    first = read_offset_index(segment.with_suffix(".index"))[0]
    assert lines[1] == f"offset: {first['offset']} position: {first['position']}"
    assert main(["kafka", "dump", str(segment.with_suffix(".txt"))]) == 3       # bad input


def test_verify_exit_status_follows_the_findings(segment, capsys):
    assert main(["kafka", "verify", str(segment.parent)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 segments, 0 failed"
    assert main(["kafka", "verify", str(segment), "--active"]) == 1     # the roll entry was not expected
    capsys.readouterr()
    segment.with_suffix(".timeindex").unlink()        # the broker creates it empty on load: a note
    assert main(["kafka", "verify", str(segment.parent), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["failed"] == 0 and d["reports"][0]["notes"][0].startswith("no .timeindex file")
    index = segment.with_suffix(".index")
    index.write_bytes(index.read_bytes()[:-1] + b"\x00")
    assert main(["kafka", "verify", str(segment.parent), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["failed"] == 1 and d["reports"][0]["mismatches"][0]["kind"] == "offset entry"
    assert main(["kafka", "verify", str(segment.parent / "none")]) == 3


def test_rebuild_index_writes_the_rule_and_refuses_to_overwrite(segment, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["kafka", "rebuild-index", str(segment), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    for suffix in (".index", ".timeindex"):
        assert (out / segment.with_suffix(suffix).name).read_bytes() == segment.with_suffix(suffix).read_bytes()
    assert main(["kafka", "rebuild-index", str(segment), "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["kafka", "rebuild-index", str(segment), "--out", str(out), "--overwrite", "--active"]) == 0
    capsys.readouterr()
    assert main(["kafka", "rebuild-index", str(segment), "--out", str(out), "--overwrite", "--restart-at", "120"]) == 0
    assert read_offset_index(out / segment.with_suffix(".index").name).tolist() == \
        [tuple(e) for e in expected_entries(read_batches(segment), restarts=[120])[0].tolist()]
    assert main(["kafka", "rebuild-index", str(segment), "--out", str(out), "--overwrite", "--restart-at", "99"]) == 2
    assert "restart offset 99" in capsys.readouterr().err
    assert main(["kafka", "rebuild-index", str(segment), "--out", str(out), "--overwrite", "--restart-at", "120",
                 "--no-restarts"]) == 2


@needs_real
@pytest.mark.realdata
def test_verify_on_real_data_explains_the_pre_38_entry(capsys):
    assert main(["kafka", "verify", str(REAL / "flink-on-prem" / "connect-status-1")]) == 0
    out = capsys.readouterr().out
    assert "pre-3.8 time entry 0: expected (1713541794161, 7), found (1713541794161, 6)" in out
    assert "KAFKA-16310" in out


@needs_real
@pytest.mark.realdata
def test_verify_names_the_real_restart_and_notes_absent_indexes(capsys):
    restart = REAL / "kraft-metadata-restart" / "__cluster_metadata-0"
    assert main(["kafka", "verify", str(restart)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # README: "The broker restarted at offset 913", "epoch 2 from offset 913", ".index (176 bytes,
    # 22 entries)" of which "entries 0..14" precede it; the position: the standard-library reader's
    at_913 = next(b["position"] for b in ks.read_batches(restart / "00000000000000000000.log")
                  if b["base_offset"] == 913)
    assert lines[1].startswith(f"  restart at offset 913 (position {at_913}): 00000000000000000913.snapshot")
    assert f"leader epoch 2 starts at 913; {22 - 15} offset entries follow it" in lines[1]
    assert "time entry 15 (1725787026189, 912) was appended when the segment was closed at shutdown" in lines[1]
    assert lines[-1] == "1 segments, 0 failed; 5 other files, 0 failed"
    assert any(line.endswith("00000000000000000913.snapshot: ok: producer-state snapshot at offset 913: 0 producer(s), "
                             "0 in a transaction, CRC-32C valid") for line in lines)
    assert main(["kafka", "verify", str(restart), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (r,) = out["reports"]
    assert sorted(Path(f["file"]).name for f in out["files"] if f["ok"]) == [
        "00000000000000000913.snapshot", "00000000000000001358.snapshot", "leader-epoch-checkpoint",
        "partition.metadata", "quorum-state"] and out["files_failed"] == 0
    assert r["restarts"][0]["offset"] == 913 and r["restarts"][0]["closing_time_entry"]["offset"] == 912
    assert r["restarts"][0]["evidence"][1] == "leader epoch 2 starts at 913" and r["closed"] is True
    assert main(["kafka", "verify", str(REAL / "idempotent-gzip" / "lsx1-0"), "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)["reports"]
    assert r["notes"][0].startswith("no index files: the broker rebuilds them when it loads the log")


def test_verify_fails_on_a_damaged_file_beside_the_segments(tmp_path, capsys):
    """Every file of the directory is checked: a producer-state snapshot with a flipped byte
    (its CRC-32C no longer matches) fails verify, the segments being sound."""
    src = REAL / "kraft-metadata-restart" / "__cluster_metadata-0"
    require_real_data(src)
    for f in src.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    snap = tmp_path / "00000000000000000913.snapshot"
    raw = bytearray(snap.read_bytes())
    raw[-1] ^= 0x01
    snap.write_bytes(bytes(raw))
    assert main(["kafka", "verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "1 segments, 0 failed; 5 other files, 1 failed"
    assert any(line.startswith(f"{snap}: FAILED") for line in out)


def test_a_reader_that_goes_away_is_not_an_error(tmp_path):
    """`rmqlab kafka dump ... | head -1`: no traceback, nothing on stderr, the SIGPIPE status
    (the dump, about 2 MB, is far more than a pipe holds)."""
    import subprocess
    import sys

    log = write_segment(tmp_path, 0, [KafkaRecord(i, i, b"k", b"v") for i in range(8000)])
    code = "import sys; from rmqlab.cli import main; sys.exit(main(sys.argv[1:]))"
    p = subprocess.Popen([sys.executable, "-c", code, "kafka", "dump", "--records", str(log)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().startswith(b"Dumping ")
    p.stdout.close()
    err = p.stderr.read()
    assert (p.wait(timeout=60), err) == (141, b"")


@needs_real
@pytest.mark.realdata
def test_rebuild_index_writes_either_time_entry_form_and_by_default_the_segments_own(tmp_path):
    """A Kafka 3.6 leader's segment (uncompressed CreateTime batches of many records): its time
    entries name the record holding each batch's max timestamp. The default and ``record`` give
    the broker's bytes; ``last`` names each batch's last offset instead, at the same timestamps."""
    src = next((p for p in sorted(REAL.rglob("*.timeindex")) if p.stat().st_size
                and len(set(read_time_index(p)["offset"].tolist()) & set(_batch_last_offsets(p))) == 0), None)
    if src is None:
        pytest.skip("no real segment whose time entries all name a record inside a batch")
    log = src.with_suffix(".log")
    got = {}
    for form in (None, "record", "last"):
        out = tmp_path / str(form)
        assert main(["kafka", "rebuild-index", str(log), "--out", str(out)]
                    + (["--time-entry-offset", form] if form else [])) == 0
        got[form] = read_time_index(out / src.name)
    broker = read_time_index(src)
    assert got[None].tolist() == got["record"].tolist() == broker.tolist()
    assert got["last"]["timestamp"].tolist() == broker["timestamp"].tolist()
    assert set(got["last"]["offset"].tolist()) <= set(_batch_last_offsets(src))


def _batch_last_offsets(timeindex: Path) -> list[int]:
    b = read_batches(timeindex.with_suffix(".log"))
    return (b["base_offset"] + b["last_offset_delta"]).tolist()


# ------------------------------------------------------------ log directories: groups, logdir, verify

COMPACTED = REAL / "kafka-3.6-compacted"


@needs_real
def test_every_real_directory_verifies_clean(capsys):
    """Each folder of the real data, whatever appears there later, is a log directory:
    verify checks every partition in it and the directory's own files, and finds nothing."""
    dirs = sorted(p for p in REAL.iterdir() if p.is_dir())
    assert dirs
    for d in dirs:
        assert main(["kafka", "verify", str(d), "--json"]) == 0, d
        out = json.loads(capsys.readouterr().out)
        assert out["failed"] == 0 and out["files_failed"] == 0
        assert out["files"][-1]["kind"] in ("log-dir", ".kafka_cleanshutdown", "meta.properties")
        assert {f["kind"] for f in out["files"]} >= {"log-dir"}
        partitions = [p for p in d.iterdir() if p.is_dir()]
        segments = sum(1 for p in partitions for _ in p.glob("*.log"))
        assert out["segments"] == segments, d


@needs_real
def test_verify_fails_on_a_broken_log_directory(tmp_path, capsys):
    from tests.kafka.test_logdir import set_line, writable_copy

    d = writable_copy(COMPACTED, tmp_path / "logs")
    set_line(d / "replication-offset-checkpoint", "stock-market-realtime", 0, 4000)
    assert main(["kafka", "verify", str(d)]) == 1
    out = capsys.readouterr().out
    assert "replication-offset-checkpoint: FAILED" in out
    assert "  error: stock-market-realtime-0: high watermark 4000 is past the log end offset 3341" in out
    assert "  note: __consumer_offsets-9: cleaned below offset 9907" in out


def _last_group_record(folder: Path, group: str) -> dict:
    """The last group-metadata record of `group`, by the standard-library reader."""
    return [r for r in ks.offsets_records(folder) if r["key"]["type"] == 2 and r["key"]["group"] == group][-1]


@needs_real
def test_groups_on_the_real_log_directory(capsys):
    from rmqlab.kafka.groups import consumer_lag

    assert main(["kafka", "groups", str(COMPACTED)]) == 0
    out = capsys.readouterr().out.splitlines()
    # generation, record offset and commit: the standard-library reader of __consumer_offsets-32;
    # the log end offset: README "stock-market-realtime-0/... offsets 3101..3340"
    folder = COMPACTED / "__consumer_offsets-32"
    group = "stock-market-realtime-consumer-group"
    last = _last_group_record(folder, group)
    assert last["value"]["members"] == []
    commit = ks.last_commits(ks.offsets_records(folder))[group, "stock-market-realtime", 0]["value"]["offset"]
    i = out.index(f"GROUP {group}: Empty, consumer, generation {last['value']['generation']}, 0 member(s) "
                  f"(in __consumer_offsets-32, last group metadata at offset {last['offset']})")
    assert out[i + 1].split() == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                                  "HOST", "CLIENT-ID"]
    assert out[i + 2].split() == ["stock-market-realtime", "0", str(commit), "3341", str(3341 - commit), "-", "-",
                                  "-"]
    # README: the console-consumer groups' tombstones, "1 per partition, 2 in partition 20" of seven
    assert sum(line.startswith("GROUP console-consumer-") and ": Dead" in line for line in out) == 8
    assert main(["kafka", "groups", str(COMPACTED), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    lag = consumer_lag(COMPACTED)
    assert len(rows) == len(lag)
    assert [(r["group"], r["topic"], r["lag"]) for r in rows] == [
        (g, t, None if pd_isna(x) else int(x)) for g, t, x in zip(lag["group"], lag["topic"], lag["lag"])]


def pd_isna(x) -> bool:
    import pandas as pd

    return bool(pd.isna(x))


@needs_real
def test_groups_names_partitions_not_here(capsys):
    assert main(["kafka", "groups", str(REAL / "LDI-POC")]) == 0
    out = capsys.readouterr().out
    # the last group record, its commit and the member assigned TestTopicPatient-0: the
    # standard-library reader (no partition of TestTopicPatient is in LDI-POC: "not here")
    folder = REAL / "LDI-POC" / "__consumer_offsets-6"
    last = _last_group_record(folder, "DEVSmileCDR")["value"]
    assert len(last["members"]) > 0
    assert (f"GROUP DEVSmileCDR: Stable, {last['protocol_type']}/{last['protocol']}, generation {last['generation']}, "
            f"{len(last['members'])} member(s)") in out
    commit = ks.last_commits(ks.offsets_records(folder))["DEVSmileCDR", "TestTopicPatient", 0]["value"]["offset"]
    (owner,) = [m for m in last["members"] if "TestTopicPatient-0" in ks.consumer_assignment(m["assignment"])]
    row = next(line.split() for line in out.splitlines() if line.startswith("  TestTopicPatient "))
    assert row[:7] == ["TestTopicPatient", "0", str(commit), "-", "partition", "not", "here"]
    assert row[-2:] == [owner["client_host"], owner["client_id"]]


@needs_real
def test_logdir_and_dump_of_the_directory_files(capsys):
    assert main(["kafka", "logdir", str(COMPACTED)]) == 0
    out = capsys.readouterr().out.splitlines()
    row = next(line.split() for line in out if line.startswith("stock-market-batch "))
    assert row == ["stock-market-batch", "0", "stock-market-batch-0", "1", "591014", "12910", "15910", "15910",
                   "15910", "-", "-"]
    assert "meta.properties: ok: version 0 (ZooKeeper), broker.id 1, cluster.id vqwjEvyyRj2mnTIBDZpewA" in out
    assert main(["kafka", "logdir", str(COMPACTED), "--json", "--all"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["partitions"]) == 54 and d["clean_shutdown"]["present"] and d["meta_properties"]["node_id"] == 1
    files = [COMPACTED / n for n in ("cleaner-offset-checkpoint", "meta.properties", ".kafka_cleanshutdown")]
    assert main(["kafka", "dump", *map(str, files)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [f"Dumping {files[0]}", "version: 0 entries: 2",
                       "topic: __consumer_offsets partition: 9 offset: 9907",
                       "topic: __consumer_offsets partition: 32 offset: 192"]
    assert "broker.id=1" in out and out[-1].startswith("clean shutdown marker (empty")
    assert main(["kafka", "dump", str(files[0]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"][1] == {"topic": "__consumer_offsets", "partition": 32,
                                                                 "offset": 192}


def test_dump_of_a_refused_checkpoint_names_the_line(tmp_path, capsys):
    p = tmp_path / "recovery-point-offset-checkpoint"
    p.write_text("0\n1\nt 0\n")
    assert main(["kafka", "dump", str(p)]) == 1
    assert f"{p}: offset 4: entry: line 3 't 0'" in capsys.readouterr().err
