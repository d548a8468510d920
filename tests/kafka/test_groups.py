"""Consumer groups read offline: committed offsets equal what a small standard-library decoder
of ``__consumer_offsets`` reads from the real partitions (every folder of the real data that
has one), the kafka-3.6-compacted README's facts, lag against the partitions present, and lag
against a brute-force model of commits and tombstones."""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import kafka_stdlib as ks
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import require_real_data

from rmqlab.kafka.groups import NOT_HERE, consumer_lag, group_states
from rmqlab.kafka.log import KafkaRecord, write_segment

COMPACTED = "kafka/kafka-3.6-compacted"


# ---------------------------------------------------------------- an independent reader

def varint(buf: bytes, at: int) -> tuple[int, int]:
    """A zig-zag varint (DefaultRecord's lengths and deltas): value, next position."""
    shift = raw = 0
    while True:
        b = buf[at]
        at += 1
        raw |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), at


def offsets_topic_commits(folder: Path) -> dict[tuple[str, str, int], int | None]:
    """Every offset commit of a __consumer_offsets folder in log order, the last per key kept and
    a null value deleting it: magic v2 batches, uncompressed; key version 0/1 is (group, topic,
    partition), the value's first int64 after its int16 version the offset."""
    latest: dict[tuple[str, str, int], int | None] = {}
    for log in sorted(folder.glob("*.log")):
        data = log.read_bytes()
        pos = 0
        while pos + 61 <= len(data):
            length, = struct.unpack_from(">i", data, pos + 8)
            magic = data[pos + 16]
            attributes, = struct.unpack_from(">h", data, pos + 21)
            count, = struct.unpack_from(">i", data, pos + 57)
            assert magic == 2 and attributes & 0x07 == 0, (log, pos)
            at, end = pos + 61, pos + 12 + length
            for _ in range(count):
                size, at = varint(data, at)
                rec_end = at + size
                at += 1                                   # record attributes
                _, at = varint(data, at)                  # timestamp delta
                _, at = varint(data, at)                  # offset delta
                klen, at = varint(data, at)
                key = data[at:at + klen]
                at += klen
                vlen, at = varint(data, at)
                value = None if vlen < 0 else data[at:at + vlen]
                at = rec_end
                if attributes & 0x20:                     # a control batch: transaction markers
                    continue
                version, = struct.unpack_from(">h", key, 0)
                if version not in (0, 1):
                    continue                              # group metadata and later record types
                glen, = struct.unpack_from(">h", key, 2)
                group = key[4:4 + glen].decode()
                tlen, = struct.unpack_from(">h", key, 4 + glen)
                topic = key[6 + glen:6 + glen + tlen].decode()
                partition, = struct.unpack_from(">i", key, 6 + glen + tlen)
                latest[group, topic, partition] = None if value is None else struct.unpack_from(">q", value, 2)[0]
            assert at == end
            pos = end
    return {k: v for k, v in latest.items() if v is not None}


def real_dirs_with_offsets() -> list[Path]:
    root = require_real_data("kafka")
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and any(d.glob("__consumer_offsets-*")))
    assert len(dirs) >= 4
    return dirs


def ours(df) -> dict[tuple[str, str, int], int]:
    rows = df[df["topic"].notna()]
    return {(g, t, int(p)): int(o) for g, t, p, o in
            zip(rows["group"], rows["topic"], rows["partition"], rows["committed_offset"])}


@pytest.mark.realdata
def test_committed_offsets_equal_an_independent_reader():
    for d in real_dirs_with_offsets():
        theirs: dict = {}
        for folder in sorted(d.glob("__consumer_offsets-*")):
            theirs.update(offsets_topic_commits(folder))
        lag = consumer_lag(d)
        assert ours(lag) == theirs, d.name
        # the lag stands against the partitions present, and only those
        for r in lag[lag["topic"].notna()].to_dict("records"):
            folder = d / f"{r['topic']}-{r['partition']}"
            if folder.is_dir():
                assert r["note"] is None and r["lag"] == r["log_end_offset"] - r["committed_offset"]
            else:
                assert r["note"] == NOT_HERE and pd.isna(r["log_end_offset"]) and pd.isna(r["lag"])


@pytest.mark.realdata
def test_kafka_36_compacted_groups_as_the_readme_says():
    d = require_real_data(COMPACTED)
    lag = consumer_lag(d).set_index("group")
    # the committed offsets: the independent reader above (the README does not list them)
    theirs: dict = {}
    for folder in sorted(d.glob("__consumer_offsets-*")):
        theirs.update(offsets_topic_commits(folder))
    batch_commit = theirs["stock-market-batch-consumer-group", "stock-market-batch", 0]
    rt_commit = theirs["stock-market-realtime-consumer-group", "stock-market-realtime", 0]
    # README: "`__consumer_offsets-9` ... 1 offset-commit key and 1 group-metadata key, for group
    # `stock-market-batch-consumer-group`"; "stock-market-batch-0/... offsets 12910..15909" (so
    # its end offset is 15910); "stock-market-realtime-0/... offsets 3101..3340" (end 3341)
    batch = lag.loc["stock-market-batch-consumer-group"]
    assert (batch["topic"], batch["partition"], batch["offsets_partition"]) == ("stock-market-batch", 0, 9)
    assert (batch["committed_offset"], batch["log_end_offset"]) == (batch_commit, 15910)
    assert batch["lag"] == 15910 - batch_commit
    rt = lag.loc["stock-market-realtime-consumer-group"]
    assert (rt["topic"], rt["offsets_partition"], rt["log_end_offset"]) == ("stock-market-realtime", 32, 3341)
    assert rt["committed_offset"] == rt_commit and rt["lag"] == 3341 - rt_commit
    # their last group metadata has no member (standard-library reader, tests/support/kafka_stdlib.py):
    # the group is Empty
    for name, row in (("stock-market-batch-consumer-group", batch), ("stock-market-realtime-consumer-group", rt)):
        folder = d / f"__consumer_offsets-{row['offsets_partition']}"
        last = [r for r in ks.offsets_records(folder) if r["key"]["type"] == 2 and r["key"]["group"] == name][-1]
        assert last["value"] is not None and last["value"]["members"] == []
        assert row["state"] == "Empty"
    # README: "`__consumer_offsets-{8,16,20,22,29,31,38}` are 3-record (partition 20: 6-record)
    # segments of console-consumer groups. Each contains group-metadata tombstones (null value):
    # 1 per partition, 2 in partition 20": those groups are dead, nothing committed
    states = group_states(d)
    dead = states[states["state"] == "Dead"]
    assert sorted(dead["offsets_partition"].tolist()) == [8, 16, 20, 20, 22, 29, 31, 38]
    assert all(g.startswith("console-consumer-") for g in dead["group"])
    assert set(states["group"]) == set(lag.index)


# ---------------------------------------------------------------- lag against a model

def commit_key(group: str, topic: str, partition: int) -> bytes:
    g, t = group.encode(), topic.encode()
    return struct.pack(">hh", 1, len(g)) + g + struct.pack(">h", len(t)) + t + struct.pack(">i", partition)


def commit_value(offset: int) -> bytes:
    # OffsetCommitValue v1: offset, metadata "", commit and expire timestamps
    return struct.pack(">hqhqq", 1, offset, 0, 0, -1)


GROUPS, TOPICS = ["g0", "g1", "g2"], ["a", "b"]
OPS = st.lists(st.tuples(st.sampled_from(GROUPS), st.sampled_from(TOPICS), st.integers(0, 2),
                         st.one_of(st.none(), st.integers(0, 60))), max_size=25)
# per (topic, partition): None = no folder here, else (base offset, records)
LOGS = st.dictionaries(st.tuples(st.sampled_from(TOPICS), st.integers(0, 2)),
                       st.one_of(st.none(), st.tuples(st.integers(0, 30), st.integers(0, 30))))


@settings(max_examples=40, deadline=None)
@given(OPS, LOGS, st.integers(1, 3))
def test_lag_against_a_brute_force_model(ops, logs, offsets_partitions):
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        by_part: dict[int, list] = {}
        model: dict[tuple[str, str, int], int] = {}
        for group, topic, partition, offset in ops:
            by_part.setdefault(GROUPS.index(group) % offsets_partitions, []).append(
                (commit_key(group, topic, partition), None if offset is None else commit_value(offset)))
            if offset is None:
                model.pop((group, topic, partition), None)
            else:
                model[group, topic, partition] = offset
        for part, records in by_part.items():
            write_segment(d / f"__consumer_offsets-{part}", 0,
                          [KafkaRecord(i, 1000 + i, k, v) for i, (k, v) in enumerate(records)])
        ends = {}
        for (topic, partition), log in logs.items():
            if log is None:
                continue
            base, n = log
            write_segment(d / f"{topic}-{partition}", base,
                          [KafkaRecord(base + i, 1, None, b"v") for i in range(n)])
            ends[topic, partition] = base + n
        lag = consumer_lag(d)
        assert ours(lag) == model
        for r in lag[lag["topic"].notna()].to_dict("records"):
            end = ends.get((r["topic"], r["partition"]))
            if end is None:
                assert r["note"] == NOT_HERE and pd.isna(r["lag"])
            else:
                assert (r["log_end_offset"], r["lag"]) == (end, end - model[r["group"], r["topic"], r["partition"]])
            # a group with commits and no metadata record: loaded Empty from its offsets
            assert r["state"] == "Empty"
        # every group holding no commit any more is not loaded at all
        assert set(lag["group"]) == {g for g, _, _ in model}
