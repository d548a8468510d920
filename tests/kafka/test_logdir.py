"""A Kafka log directory's own files: the real Kafka 3.6 directory read as its README states,
every real directory verified clean, copies of it broken one way at a time (in tmp_path, never
in the shared data), a test-side writer of the CheckpointFile layout round-tripped, and bad text
a typed error naming file, line offset and field."""
from __future__ import annotations

import shutil
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data

from rmqlab.errors import FormatError
from rmqlab.kafka.log import KafkaRecord, write_segment
from rmqlab.kafka.logdir import (
    CLEAN_SHUTDOWN,
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    check_log_dir,
    is_log_dir,
    log_dir_partitions,
    log_end_offset,
    parse_partition_dir_name,
    read_clean_shutdown,
    read_meta_properties,
    read_offset_checkpoint,
)

COMPACTED = "kafka/kafka-3.6-compacted"


def writable_copy(src, dst):
    """The real directory copied, made writable (the shared copy is read-only)."""
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dst


def write_checkpoint(path, rows, *, version=0, sep=" ", newline="\n"):
    # CheckpointFile.CheckpointWriteBuffer: version line, count line, one "topic partition offset" line each
    lines = [str(version), str(len(rows))] + [sep.join(map(str, r)) for r in rows]
    path.write_text(newline.join(lines) + newline, newline="")


def checks_by_name(d):
    return {c.file.name: c for c in check_log_dir(d)}


@pytest.mark.realdata
def test_real_checkpoints_read_as_the_readme_says():
    d = require_real_data(COMPACTED)
    cleaner = read_offset_checkpoint(d / CLEANER_OFFSET_CHECKPOINT)
    assert list(map(tuple, cleaner.values.tolist())) == [("__consumer_offsets", 9, 9907),
                                                         ("__consumer_offsets", 32, 192)]
    assert len(read_offset_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)) == 0
    for name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
        # the file's text read here: version line, count line, one "topic partition offset" line each
        lines = (d / name).read_text().splitlines()
        assert lines[0] == "0" and int(lines[1]) == len(lines) - 2 > 11
        ck = read_offset_checkpoint(d / name)
        assert len(ck) == len(lines) - 2 and ck.attrs["duplicates"] == []
    # meta.properties' text read here (java.util.Properties: "key=value" lines, "#" comments)
    props = dict(line.split("=", 1) for line in (d / META_PROPERTIES).read_text().splitlines()
                 if line and not line.startswith("#"))
    meta = read_meta_properties(d / META_PROPERTIES)
    assert (meta["version"], meta["node_id"], meta["cluster_id"]) == (
        int(props["version"]), int(props["broker.id"]), props["cluster.id"])
    shutdown = read_clean_shutdown(d / CLEAN_SHUTDOWN)
    assert shutdown["present"] and shutdown["broker_epoch"] is None     # 3.6 leaves it empty
    parts = log_dir_partitions(d).set_index(["topic", "partition"])
    # README: offsets 12910..15909 and 3101..3340, __consumer_offsets-9's "offsets 9907..12880";
    # a clean shutdown checkpoints every log at its end
    assert parts.loc[("stock-market-batch", 0), "log_end_offset"] == 15910
    assert parts.loc[("stock-market-realtime", 0), "log_end_offset"] == 3341
    assert parts.loc[("__consumer_offsets", 9), "log_end_offset"] == 12881
    here = parts[parts["directory"].notna()]
    assert len(here) == 11          # README: nine __consumer_offsets folders and two stock-market ones
    assert (here["recovery_point"] == here["log_end_offset"]).all()
    assert (here["high_watermark"] == here["log_end_offset"]).all()
    checks = checks_by_name(d)
    assert all(c.ok for c in checks.values()), [c.problems for c in checks.values()]
    away = int((d / RECOVERY_POINT_CHECKPOINT).read_text().splitlines()[1]) - len(here)
    assert any(f"{away} line(s) name partitions with no folder here" in n
               for n in checks[RECOVERY_POINT_CHECKPOINT].notes)
    # README: "offsets 9907..12880 with no gaps" (2,974) and "offsets 192..209: 18 records"
    assert checks[CLEANER_OFFSET_CHECKPOINT].notes == [
        "__consumer_offsets-9: cleaned below offset 9907; 2974 offset(s) from 9907 to the log end are dirty",
        "__consumer_offsets-32: cleaned below offset 192; 18 offset(s) from 192 to the log end are dirty"]


@pytest.fixture
def compacted(tmp_path):
    return writable_copy(require_real_data(COMPACTED), tmp_path / "logs")


def set_line(path, topic, partition, offset):
    ck = read_offset_checkpoint(path)
    rows = [r for r in map(tuple, ck.values.tolist()) if (r[0], r[1]) != (topic, partition)]
    if offset is not None:
        rows.append((topic, partition, offset))
    write_checkpoint(path, rows)


@pytest.mark.realdata
def test_a_recovery_point_past_the_log_end_is_a_problem(compacted):
    set_line(compacted / RECOVERY_POINT_CHECKPOINT, "stock-market-batch", 0, 15911)
    c = checks_by_name(compacted)[RECOVERY_POINT_CHECKPOINT]
    assert c.problems == ["stock-market-batch-0: recovery point 15911 is past the log end offset 15910: records the "
                          "broker had flushed are not in the files (it would lower the recovery point to 15910)"]


@pytest.mark.realdata
def test_what_an_unclean_restart_rechecks(compacted):
    set_line(compacted / RECOVERY_POINT_CHECKPOINT, "stock-market-batch", 0, 15000)
    c = checks_by_name(compacted)[RECOVERY_POINT_CHECKPOINT]
    assert c.ok and any("recovery point 15000 < log end offset 15910 although the clean-shutdown marker" in n
                        for n in c.notes)
    (compacted / CLEAN_SHUTDOWN).unlink()
    checks = checks_by_name(compacted)
    # LogLoader.recoverLog: every segment from the one holding the recovery point (the only one here)
    assert ("stock-market-batch-0: offsets 15000..15909 lie after the recovery point: a restart after an unclean "
            "shutdown re-checks the segments from 12910 on (591014 bytes: each batch's CRC, the indexes rebuilt)"
            ) in checks[RECOVERY_POINT_CHECKPOINT].notes
    assert any(n.startswith("no .kafka_cleanshutdown") for n in checks[compacted.name].notes)
    row = log_dir_partitions(compacted).set_index(["topic", "partition"]).loc[("stock-market-batch", 0)]
    assert (row["recovery_from"], row["recovery_bytes"]) == (12910, 591014)
    # a partition without a line is recovered from its first segment
    set_line(compacted / RECOVERY_POINT_CHECKPOINT, "__consumer_offsets", 9, None)
    notes = checks_by_name(compacted)[RECOVERY_POINT_CHECKPOINT].notes
    assert any(n.startswith("1 partition folder(s) without a line: __consumer_offsets-9") for n in notes)
    row = log_dir_partitions(compacted).set_index(["topic", "partition"]).loc[("__consumer_offsets", 9)]
    assert (row["recovery_from"], row["recovery_bytes"]) == (0, 292 + 458545)


@pytest.mark.realdata
@pytest.mark.parametrize("name, offset, problem", [
    (LOG_START_OFFSET_CHECKPOINT, 15911, "log start offset 15911 is past the log end offset 15910"),
    (CLEANER_OFFSET_CHECKPOINT, 16000, "cleaner offset 16000 is past the log end offset 15910"),
    (REPLICATION_OFFSET_CHECKPOINT, 15911, "high watermark 15911 is past the log end offset 15910"),
    (LOG_START_OFFSET_CHECKPOINT, 100, None),          # below the first segment: a note
    (CLEANER_OFFSET_CHECKPOINT, 13000, None),          # within the partition
])
def test_checkpoints_against_the_partition(compacted, name, offset, problem):
    set_line(compacted / name, "stock-market-batch", 0, offset)
    c = checks_by_name(compacted)[name]
    if problem is None:
        assert c.ok and any(n.startswith("stock-market-batch-0: ") for n in c.notes)
    else:
        assert len(c.problems) == 1 and c.problems[0].startswith(f"stock-market-batch-0: {problem}")


@pytest.mark.realdata
def test_a_refused_checkpoint_and_a_stray_folder(compacted):
    text = (compacted / CLEANER_OFFSET_CHECKPOINT).read_text().replace("32 192", "32 x192")
    (compacted / CLEANER_OFFSET_CHECKPOINT).write_text(text)
    (compacted / "lost+found").mkdir()
    checks = checks_by_name(compacted)
    problem = checks[CLEANER_OFFSET_CHECKPOINT].problems[0]
    assert str(compacted / CLEANER_OFFSET_CHECKPOINT) in problem and "offset 30: offset: line 4" in problem
    assert checks[compacted.name].problems[0].startswith("lost+found/ is not a partition folder")
    assert checks[RECOVERY_POINT_CHECKPOINT].ok       # the others are still judged


@pytest.mark.realdata
def test_every_real_directory_is_a_log_directory():
    """Each folder of the real data holds partition folders: verify treats it as a log directory
    (tests/commands/test_kafka.py verifies each, whatever its name)."""
    root = require_real_data("kafka")
    dirs = sorted(p for p in root.iterdir() if p.is_dir())
    assert dirs and all(is_log_dir(d) for d in dirs)
    assert REAL_DATA / "kafka" == root


@pytest.mark.parametrize("text, field, offset", [
    ("1\n0\n", "version", 0),
    (" 0\n0\n", "version", 0),                   # Integer.parseInt takes no spaces
    ("0\n2\nt 0 5\n", "count", 2),
    ("0\n1\nt 0\n", "entry", 4),
    ("0\n1\n t 0 5\n", "entry", 4),              # Pattern.split keeps a leading empty field
    ("0\n1\nt 0 5 6\n", "entry", 4),
    ("0\n1\nt p 5\n", "partition", 4),
    ("0\n1\nt 2147483648 5\n", "partition", 4),
    ("0\n1\nt 0 1_000\n", "offset", 4),
    ("0\n2\nt 0 5\n\n", "entry", 10),            # a blank line is a malformed entry
])
def test_bad_checkpoints_are_typed_errors(tmp_path, text, field, offset):
    p = tmp_path / RECOVERY_POINT_CHECKPOINT
    p.write_bytes(text.encode())
    with pytest.raises(FormatError) as e:
        read_offset_checkpoint(p)
    assert (e.value.field, e.value.offset, e.value.path) == (field, offset, str(p))


def test_what_the_broker_reader_accepts(tmp_path):
    p = tmp_path / "c"
    for text, rows in [("", []), ("0\n", []), ("0\r\n1\r\nt\t0  7 \r\n", [("t", 0, 7)]),
                       ("0\n2\na 1 +3\na 1 -4", [("a", 1, 3), ("a", 1, -4)])]:
        p.write_bytes(text.encode())
        assert list(map(tuple, read_offset_checkpoint(p).values.tolist())) == rows
    assert read_offset_checkpoint(p).attrs["duplicates"] == [("a", 1)]


# Kafka's legal topic characters (Topic.LEGAL_CHARS), up to 249 of them
TOPICS = st.text(st.sampled_from("abcXYZ019._-"), min_size=1, max_size=40)
ENTRIES = st.lists(st.tuples(TOPICS, st.integers(0, 2**31 - 1), st.integers(-2**63, 2**63 - 1)), max_size=30)


@settings(max_examples=60, deadline=None)
@given(ENTRIES, st.sampled_from([" ", "\t", "  ", " \t "]), st.sampled_from(["\n", "\r\n", "\r"]))
def test_checkpoint_round_trip(tmp_path_factory, entries, sep, newline):
    p = tmp_path_factory.mktemp("ck") / CLEANER_OFFSET_CHECKPOINT
    write_checkpoint(p, entries, sep=sep, newline=newline)
    df = read_offset_checkpoint(p)
    assert list(map(tuple, df.values.tolist())) == entries
    assert df.dtypes.tolist() == ["object", "int32", "int64"]


def test_meta_properties_as_java_reads_them(tmp_path):
    p = tmp_path / META_PROPERTIES
    p.write_text("! KRaft\nnode.id : 3\nversion=1\ncluster.id = ab\\\n    cd\n"
                 "directory.id=AAAAAAAAAAAAAAAAAAAAAQ\nx\\u0041y=\\t1\n")
    m = read_meta_properties(p)
    assert (m["version"], m["node_id"], m["cluster_id"]) == (1, 3, "abcd")
    assert m["directory_id"] == "AAAAAAAAAAAAAAAAAAAAAQ (00000000-0000-0000-0000-000000000001)"
    assert m["properties"]["xAy"] == "\t1"
    for text, field in [("version=0\ncluster.id=c\n", "broker.id"),
                        ("version=1\nbroker.id=1\ncluster.id=c\n", "node.id"),
                        ("version=2\n", "version"), ("broker.id=x\ncluster.id=c\n", "broker.id"),
                        ("broker.id=1\n", "cluster.id"),
                        ("broker.id=1\ncluster.id=c\ndirectory.id=zz\n", "directory.id"),
                        ("broker.id=1\ncluster.id=c\\u00zz\n", "escape")]:
        p.write_text(text)
        with pytest.raises(FormatError) as e:
            read_meta_properties(p)
        assert e.value.field == field and e.value.path == str(p)


def test_clean_shutdown_marker(tmp_path):
    p = tmp_path / CLEAN_SHUTDOWN
    p.write_text('{"version":0,"brokerEpoch":17}')
    assert read_clean_shutdown(p)["broker_epoch"] == 17
    p.write_text("not json")
    r = read_clean_shutdown(p)
    assert r["present"] and r["broker_epoch"] is None and "reads no epoch" in r["note"]


def test_log_end_offset_follows_the_last_segment(tmp_path):
    d = tmp_path / "t-0"
    write_segment(d, 0, [KafkaRecord(i, 1, None, b"v") for i in range(5)])
    assert log_end_offset(d) == 5
    log = write_segment(d, 5, [KafkaRecord(5 + i, 1, None, b"v") for i in range(3)])
    with open(log, "ab") as f:          # a torn batch at the end: the broker's read stops before it
        f.write(bytes(8) + (500).to_bytes(4, "big") + bytes(20))
    assert log_end_offset(d) == 8
    (d / "00000000000000000009.log").write_bytes(b"")     # an empty last segment: its base offset
    assert log_end_offset(d) == 9
    assert log_end_offset(tmp_path) is None


@pytest.mark.parametrize("name, parsed", [
    ("__consumer_offsets-9", ("__consumer_offsets", 9, "")),
    ("my-topic-12", ("my-topic", 12, "")),
    ("t-0.abc-delete", ("t", 0, "delete")),
    ("t-0.abc-future", ("t", 0, "future")),
    ("t-0-delete", None),
    ("lost+found", None), ("t-", None), ("-1", None), ("t-x", None),
])
def test_partition_folder_names(name, parsed):
    assert parse_partition_dir_name(name) == parsed
