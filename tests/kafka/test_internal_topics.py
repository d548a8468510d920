"""`__consumer_offsets` and `__transaction_state` records: every key and value version, built here
field by field with the tests' own encoder (this file and kafka_wire, nothing shared with rmqlab),
round trips against that encoder, damage, the dump CLI, and the real broker segments in ../shared/real-data/kafka/."""
from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import kafka_stdlib as ks
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_wire import array, blob, string, tags, uvarint
from oracles import require_real_data

from rmqlab.cli import main
from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.kafka import internal_topics as it
from rmqlab.kafka.legacy import write_legacy_segment
from rmqlab.kafka.log import KafkaRecord, read_records, write_segment

# ------------------------------------------------------------------ the test's own encoder


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def offset_key(group, topic, partition, version=1):
    return i16(version) + string(group) + string(topic) + i32(partition)


def group_key(group):
    return i16(2) + string(group)


def offset_value(version, offset, metadata, commit_ts, leader_epoch=-1, expire_ts=-1, extra_tags=None):
    fx = version >= 4
    out = i16(version) + i64(offset)
    if version >= 3:
        out += i32(leader_epoch)
    out += string(metadata, fx) + i64(commit_ts)
    if version == 1:
        out += i64(expire_ts)
    return out + (tags(extra_tags) if fx else b"")


def member(version, m):
    fx = version >= 4
    out = string(m["memberId"], fx)
    if version >= 3:
        out += string(m.get("groupInstanceId"), fx)
    out += string(m["clientId"], fx) + string(m["clientHost"], fx)
    if version >= 1:
        out += i32(m["rebalanceTimeout"])
    out += i32(m["sessionTimeout"]) + blob(m["subscription"], fx) + blob(m["assignment"], fx)
    return out + (tags() if fx else b"")


def group_value(version, protocol_type, generation, protocol, leader, state_ts, members, extra_tags=None):
    fx = version >= 4
    out = i16(version) + string(protocol_type, fx) + i32(generation) + string(protocol, fx) + string(leader, fx)
    if version >= 2:
        out += i64(state_ts)
    out += array([member(version, m) for m in members], fx)
    return out + (tags(extra_tags) if fx else b"")


def topic_partitions(pairs):
    return array([string(t) + array([i32(p) for p in ps]) for t, ps in pairs])


def subscription(version, topics, user_data=None, owned=(), generation=-1, rack=None):
    out = i16(version) + array([string(t) for t in topics]) + blob(user_data)
    if version >= 1:
        out += topic_partitions(owned)
    if version >= 2:
        out += i32(generation)
    if version >= 3:
        out += string(rack)
    return out


def assignment(version, pairs, user_data=None):
    return i16(version) + topic_partitions(pairs) + blob(user_data)


def txn_key(tid):
    return i16(0) + string(tid)


def txn_value(version, pid, epoch, timeout, status, partitions, last_ts, start_ts, tagged=None):
    fx = version >= 1
    parts = None if partitions is None else [string(t, fx) + array([i32(p) for p in ps], fx) + (tags() if fx else b"")
                                             for t, ps in partitions]
    out = (i16(version) + i64(pid) + i16(epoch) + i32(timeout) + i8(status) + array(parts, fx) + i64(last_ts)
           + i64(start_ts))
    return out + (tags(tagged) if fx else b"")


# ------------------------------------------------------------------ every version, by hand


@pytest.mark.parametrize("key_version", [0, 1])
def test_offset_commit_keys(key_version):
    r = it.decode_group_record(offset_key("grp", "orders", 7, key_version), None)
    assert (r.record_type, r.name, r.key, r.tombstone) == (key_version, "OffsetCommit",
                                                          {"group": "grp", "topic": "orders", "partition": 7}, True)


@pytest.mark.parametrize("version, expected", [
    (0, {"offset": 5, "metadata": "m", "commitTimestamp": 11}),
    (1, {"offset": 5, "metadata": "m", "commitTimestamp": 11, "expireTimestamp": 99}),
    (2, {"offset": 5, "metadata": "m", "commitTimestamp": 11}),
    (3, {"offset": 5, "leaderEpoch": 4, "metadata": "m", "commitTimestamp": 11}),
    (4, {"offset": 5, "leaderEpoch": 4, "metadata": "m", "commitTimestamp": 11}),
])
def test_offset_commit_values(version, expected):
    value = offset_value(version, 5, "m", 11, leader_epoch=4, expire_ts=99,
                         extra_tags={7: b"\x01\x02"} if version == 4 else None)   # an unknown tag is skipped
    r = it.decode_group_record(offset_key("g", "t", 0), value)
    assert r.value_version == version and r.value == expected
    df = it.offset_commits(write_segment(_tmp(), 0, [KafkaRecord(0, 1, offset_key("g", "t", 0), value)]))
    row = df.iloc[0]
    assert (row["offset"], row["leader_epoch"], row["expire_timestamp"]) == (
        5, 4 if version >= 3 else -1, 99 if version == 1 else -1)


_MEMBER = dict(memberId="m-1", groupInstanceId="static-1", clientId="c-1", clientHost="/10.0.0.1",
               rebalanceTimeout=300000, sessionTimeout=45000)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("embedded", [0, 1, 2, 3])
def test_group_metadata_values(version, embedded):
    sub = subscription(embedded, ["a", "b"], b"ud", owned=[("a", [0, 1])], generation=6, rack="r1")
    asg = assignment(embedded, [("a", [0]), ("b", [2, 3])], None)
    value = group_value(version, "consumer", 7, "range", "m-1", 1700000000000,
                        [dict(_MEMBER, subscription=sub, assignment=asg)])
    r = it.decode_group_record(group_key("g"), value)
    v = r.value
    assert (r.name, r.value_version, v["protocolType"], v["generation"], v["protocol"], v["leader"]) == \
        ("GroupMetadata", version, "consumer", 7, "range", "m-1")
    assert ("currentStateTimestamp" in v) == (version >= 2)
    m = v["members"][0]
    assert (m["memberId"], m["clientId"], m["clientHost"], m["sessionTimeout"]) == ("m-1", "c-1", "/10.0.0.1", 45000)
    assert m.get("groupInstanceId") == ("static-1" if version >= 3 else None)
    assert m.get("rebalanceTimeout", -1) == (300000 if version >= 1 else -1)
    s = m["subscription"]["data"]
    assert (s["topics"], s["userData"]) == (["a", "b"], b"ud")
    assert s.get("ownedPartitions") == ([{"topic": "a", "partitions": [0, 1]}] if embedded >= 1 else None)
    assert s.get("generationId") == (6 if embedded >= 2 else None)
    assert s.get("rackId") == ("r1" if embedded >= 3 else None)
    assert m["assignment"]["data"]["assignedPartitions"] == [{"topic": "a", "partitions": [0]},
                                                             {"topic": "b", "partitions": [2, 3]}]
    members = it.group_members(write_segment(_tmp(), 0, [KafkaRecord(0, 1, group_key("g"), value)]))
    assert members[["topics", "assigned"]].values.tolist() == [[["a", "b"], ["a-0", "b-2", "b-3"]]]


def test_group_metadata_of_other_protocols_keeps_the_bytes():
    value = group_value(3, "connect", 2, "sessioned", "w", 5, [dict(_MEMBER, subscription=b"\x00\x02xyz",
                                                                      assignment=b"")])
    r = it.decode_group_record(group_key("g"), value)
    assert r.value["members"][0]["subscription"] == b"\x00\x02xyz"
    payload = json.loads(it.format_offsets_record(r, 0)[1])
    assert payload["data"]["members"][0]["subscription"] == base64.b64encode(b"\x00\x02xyz").decode()


def test_consumer_bytes_that_do_not_decode_stay_bytes():
    bad = [i16(9) + b"later version", i16(0) + i32(5)]     # a version Kafka cannot read; a short array
    value = group_value(3, "consumer", 1, "range", "m", 5, [dict(_MEMBER, subscription=bad[0], assignment=bad[1])])
    m = it.decode_group_record(group_key("g"), value).value["members"][0]
    assert (m["subscription"], m["assignment"]) == tuple(bad)


def test_empty_group_and_tombstone():
    r = it.decode_group_record(group_key("g"), group_value(3, "consumer", 3, None, None, 8, []))
    assert (r.value["protocol"], r.value["leader"], r.value["members"]) == (None, None, [])
    assert it.format_offsets_record(it.decode_group_record(group_key("g"), None), 4)[1] == "<DELETE>"


@pytest.mark.parametrize("record_type, name, fields", [
    (3, "ConsumerGroupMetadata", ["groupId"]), (4, "ConsumerGroupPartitionMetadata", ["groupId"]),
    (5, "ConsumerGroupMemberMetadata", ["groupId", "memberId"]),
    (6, "ConsumerGroupTargetAssignmentMetadata", ["groupId"]),
    (7, "ConsumerGroupTargetAssignmentMember", ["groupId", "memberId"]),
    (8, "ConsumerGroupCurrentMemberAssignment", ["groupId", "memberId"]),
    (11, "ShareGroupMetadata", ["groupId"]), (16, "ConsumerGroupRegularExpression", ["groupId", "regularExpression"]),
    (23, "StreamsGroupTopology", ["groupId"]),
])
def test_newer_record_types_are_named(record_type, name, fields):
    # their values are decoded too (tests/kafka/test_coordinator_records.py): bytes that are no
    # value of the type raise, and the dump text says so as the tool does
    key = i16(record_type) + b"".join(string(f"x{i}") for i in range(len(fields)))
    r = it.decode_group_record(key, None)
    assert (r.name, r.key, r.tombstone) == (name, {f: f"x{i}" for i, f in enumerate(fields)}, True)
    with pytest.raises(FormatError):
        it.decode_group_record(key, i16(0) + b"\x00\x01\x02")


def test_unknown_record_type_is_skipped_as_the_tool_does():
    r = it.decode_group_record(i16(99) + b"whatever", b"x")
    assert r.name == "Unknown"
    assert it.format_offsets_record(r, 12) == ("Unknown record type 99 at offset 12, skipping.", None)


@pytest.mark.parametrize("version", [0, 1])
def test_transaction_log(version):
    tagged = {0: i64(41), 1: i64(43), 2: i16(2)} if version == 1 else None
    value = txn_value(version, 42, 3, 60000, 1, [("t", [0, 2]), ("u", [1])], 1000, 900, tagged)
    r = it.decode_transaction_record(txn_key("tx"), value)
    v = r.value
    assert (r.transactional_id, r.value_version, v["producerId"], v["producerEpoch"], v["transactionTimeoutMs"],
            v["state"], v["transactionLastUpdateTimestampMs"], v["transactionStartTimestampMs"]) == \
        ("tx", version, 42, 3, 60000, "Ongoing", 1000, 900)
    assert v["transactionPartitions"] == [{"topic": "t", "partitionIds": [0, 2]}, {"topic": "u", "partitionIds": [1]}]
    if version == 1:
        assert (v["previousProducerId"], v["nextProducerId"], v["clientTransactionVersion"]) == (41, 43, 2)
    assert it.format_transaction_record(r) == (
        "transaction_metadata::transactionalId=tx",
        "producerId:42,producerEpoch:3,state=Ongoing,partitions=[t-0,t-2,u-1],txnLastUpdateTimestamp=1000,"
        "txnTimeoutMs=60000")


def test_transaction_log_empty_state_null_partitions_tombstone_unknown_key():
    r = it.decode_transaction_record(txn_key("tx"), txn_value(0, 1, 0, 10, 0, None, 5, -1))
    assert r.value["transactionPartitions"] is None and r.value["state"] == "Empty"
    assert "partitions=[]" in it.format_transaction_record(r)[1]
    assert it.format_transaction_record(it.decode_transaction_record(txn_key("tx"), None))[1] == "<DELETE>"
    assert it.format_transaction_record(it.decode_transaction_record(i16(5) + b"??", b"")) == \
        ("unknown::version=5", None)


# ------------------------------------------------------------------ round trips


_text = st.text(max_size=12)
_opt_text = st.none() | _text
_i32 = st.integers(-2**31, 2**31 - 1)
_i64 = st.integers(-2**63, 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4), _i64, _text, _i64, _i32, _i64, _text, _text, _i32)
def test_offset_commit_round_trip(version, offset, metadata, commit_ts, leader_epoch, expire_ts, group, topic, part):
    r = it.decode_group_record(offset_key(group, topic, part), offset_value(version, offset, metadata, commit_ts,
                                                                            leader_epoch, expire_ts))
    assert r.key == {"group": group, "topic": topic, "partition": part}
    assert (r.value["offset"], r.value["metadata"], r.value["commitTimestamp"]) == (offset, metadata, commit_ts)
    assert r.value.get("leaderEpoch") == (leader_epoch if version >= 3 else None)
    assert r.value.get("expireTimestamp") == (expire_ts if version == 1 else None)


_members = st.lists(st.fixed_dictionaries(dict(
    memberId=_text, groupInstanceId=_opt_text, clientId=_text, clientHost=_text, rebalanceTimeout=_i32,
    sessionTimeout=_i32, subscription=st.binary(max_size=20), assignment=st.binary(max_size=20))), max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4), _text, _i32, _opt_text, _opt_text, _i64, _members)
def test_group_metadata_round_trip(version, protocol_type, generation, protocol, leader, state_ts, members):
    protocol_type = "x" + protocol_type   # not "consumer": the member bytes stay as they are
    r = it.decode_group_record(group_key("g"), group_value(version, protocol_type, generation, protocol, leader,
                                                           state_ts, members))
    v = r.value
    assert (v["protocolType"], v["generation"], v["protocol"], v["leader"]) == (protocol_type, generation, protocol,
                                                                               leader)
    for got, m in zip(v["members"], members, strict=True):
        want = dict(m)
        if version < 3:
            del want["groupInstanceId"]
        if version < 1:
            del want["rebalanceTimeout"]
        assert got == want


_partitions = st.none() | st.lists(st.tuples(_text, st.lists(_i32, max_size=3)), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 1), _text, _i64, st.integers(-2**15, 2**15 - 1), _i32, st.integers(0, 7), _partitions, _i64,
       _i64, st.dictionaries(st.integers(0, 2), st.just(None)))
def test_transaction_round_trip(version, tid, pid, epoch, timeout, status, partitions, last_ts, start_ts, tag_set):
    tagged = {t: (i64(77) if t < 2 else i16(1)) for t in tag_set} if version == 1 else None
    r = it.decode_transaction_record(txn_key(tid), txn_value(version, pid, epoch, timeout, status, partitions,
                                                             last_ts, start_ts, tagged))
    v = r.value
    assert (r.transactional_id, v["producerId"], v["producerEpoch"], v["transactionTimeoutMs"],
            v["transactionStatus"]) == (tid, pid, epoch, timeout, status)
    want = None if partitions is None else [{"topic": t, "partitionIds": ps} for t, ps in partitions]
    assert v["transactionPartitions"] == want
    for t, name in enumerate(("previousProducerId", "nextProducerId", "clientTransactionVersion")):
        assert v.get(name) == ((77 if t < 2 else 1) if version == 1 and t in tag_set else None)


# ------------------------------------------------------------------ segments, damage, CLI


def _tmp():
    import tempfile

    return tempfile.mkdtemp()


def _where_value(seg: Path, offset: int) -> int:
    """The file offset of record `offset`'s value bytes, found by searching the file for them."""
    rec = read_records(seg)
    value = rec.loc[rec["offset"] == offset, "value"].iloc[0]
    return seg.read_bytes().index(value)


def test_committed_offsets_keep_the_last_commit_and_drop_deleted_ones(tmp_path):
    k1, k2 = offset_key("g", "t", 0), offset_key("g", "t", 1)
    recs = [KafkaRecord(0, 1, k1, offset_value(3, 5, "", 1)), KafkaRecord(1, 2, k2, offset_value(3, 9, "", 2)),
            KafkaRecord(2, 3, k1, offset_value(3, 6, "a", 3)), KafkaRecord(3, 4, k2, None),
            KafkaRecord(4, 5, group_key("g"), group_value(3, "consumer", 1, None, None, 5, []))]
    write_segment(tmp_path, 0, recs[:3])
    write_segment(tmp_path, 3, recs[3:])
    got = it.committed_offsets(tmp_path)
    assert got[["group", "topic", "partition", "offset", "metadata", "record_offset"]].values.tolist() == \
        [["g", "t", 0, 6, "a", 2]]
    assert it.offset_commits(tmp_path)["tombstone"].tolist() == [False, False, False, True]


def test_control_batches_are_skipped(tmp_path):
    seg = write_segment(tmp_path, 0, [KafkaRecord(0, 1, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")])
    data = bytearray(seg.read_bytes())
    data[22] |= 0x20        # attributes (int16 at byte 21): the control bit; read_records does not check the CRC
    seg.write_bytes(bytes(data))
    assert it.group_records(seg).empty


@pytest.mark.parametrize("damage, field, cls", [
    ("truncate", "value.commitTimestamp", TruncatedFileError),
    ("version", "value.version", FormatError),
    ("string", "value.metadata", FormatError),
    ("extra", "value.end", FormatError),
])
@pytest.mark.parametrize("magic", [2, 1])   # brokers before 0.11 wrote the topic in v0/v1 message sets
def test_damage_names_file_offset_and_field(tmp_path, damage, field, cls, magic):
    good = offset_value(3, 5, "meta", 1)
    value = {"truncate": good[:-3], "version": i16(9) + good[2:],
             "string": good[:14] + i16(200) + good[16:], "extra": good + b"!"}[damage]
    key = offset_key("g", "t", 0)
    if magic == 2:
        seg = write_segment(tmp_path, 0, [KafkaRecord(0, 1, key, offset_value(3, 1, "", 1)),
                                          KafkaRecord(1, 2, key, value)])
    else:
        seg = write_legacy_segment(tmp_path, 0, [(0, 1, key, offset_value(3, 1, "", 1)), (1, 2, key, value)],
                                   magic=1, compression="none")
    with pytest.raises(cls) as e:
        it.offset_commits(seg)
    at = _where_value(seg, 1)
    assert (e.value.path, e.value.field) == (str(seg), field)
    expected = {"truncate": at + 20, "version": at, "string": at + 14, "extra": at + len(good)}[damage]
    assert e.value.offset == expected
    # the dump tool reports the record and goes on
    out = it.describe_records(seg, "offsets")
    assert out[1][0].startswith("Error at offset 1, skipping.") and out[0][1].startswith('{"version":"3"')


def test_bad_transaction_state_id(tmp_path):
    with pytest.raises(FormatError) as e:
        it.decode_transaction_record(txn_key("t"), txn_value(0, 1, 0, 1, 9, [], 1, 1), path="p", value_offset=100)
    assert (e.value.path, e.value.offset, e.value.field) == ("p", 100 + 16, "value.transactionStatus")


def test_missing_key_and_bad_tag_order():
    with pytest.raises(FormatError, match="without a key"):
        it.decode_group_record(None, b"")
    value = offset_value(4, 1, "", 1)[:-1] + uvarint(2) + uvarint(3) + uvarint(0) + uvarint(1) + uvarint(0)
    with pytest.raises(FormatError, match="tags must increase"):
        it.decode_group_record(offset_key("g", "t", 0), value)


def test_malformed_utf8_becomes_replacement_characters():
    # the coordinator reads strings with new String(bytes, UTF_8), which never fails
    key = i16(2) + i16(3) + b"g\xff!"
    assert it.decode_group_record(key, None).key == {"group": "g\ufffd!"}


def test_cli_offsets_decoder(tmp_path, capsys):
    seg = write_segment(tmp_path, 0, [KafkaRecord(0, 1, offset_key("g", "t", 2), offset_value(3, 8, "", 7)),
                                      KafkaRecord(1, 2, group_key("g"), None)])
    assert main(["kafka", "dump", "--offsets-decoder", str(seg)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert lines[0].endswith(' key: {"type":"1","data":{"group":"g","topic":"t","partition":2}} payload: '
                             '{"version":"3","data":{"offset":8,"leaderEpoch":-1,"metadata":"","commitTimestamp":7}}')
    assert lines[1].endswith(' key: {"type":"2","data":{"group":"g"}} payload: <DELETE>')
    assert main(["kafka", "dump", "--offsets-decoder", "--json", str(seg)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["records"][1]["payload"] == "<DELETE>"


def test_cli_transaction_log_decoder(tmp_path, capsys):
    seg = write_segment(tmp_path, 0, [KafkaRecord(0, 1, txn_key("tx-1"),
                                                  txn_value(0, 4, 0, 60000, 4, [("t", [0])], 10, 9))])
    assert main(["kafka", "dump", "--transaction-log-decoder", str(seg)]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.endswith(" key: transaction_metadata::transactionalId=tx-1 payload: producerId:4,producerEpoch:0,"
                         "state=CompleteCommit,partitions=[t-0],txnLastUpdateTimestamp=10,txnTimeoutMs=60000")


# ------------------------------------------------------------------ real broker data
#
# Every value below comes from outside rmqlab: a line of the data set's README (quoted), or
# tests/support/kafka_stdlib.py, a standard-library reader of the batches and of the group
# coordinator's key and value schemas that shares no code with the package. The counts come
# first, so a reader that returns nothing fails. tests/brokers/test_kafka_real_data.py also
# compares rmqlab with kafka-dump-log's --offsets-decoder text of these segments, live.

KAFKA = Path("kafka")


def _model_commits(d: Path) -> list[list]:
    """The stdlib reader's last commit of each (group, topic, partition), sorted by that key."""
    last = ks.last_commits(ks.offsets_records(d))
    return [[g, t, p, r["value"]["offset"], r["value"]["metadata"], r["value"]["commit_timestamp"], r["offset"]]
            for (g, t, p), r in sorted(last.items())]


def _rmqlab_commits(d: Path) -> list[list]:
    got = it.committed_offsets(d).sort_values(["group", "topic", "partition"])
    return got[["group", "topic", "partition", "offset", "metadata", "commit_timestamp", "record_offset"]] \
        .values.tolist()


def _model_groups(d: Path) -> list[dict]:
    """The stdlib reader's group metadata records (tombstones left out), in log order."""
    return [dict(r["value"], group=r["key"]["group"], offset=r["offset"]) for r in ks.offsets_records(d)
            if r["key"]["type"] == 2 and r["value"] is not None]


def _model_members(d: Path) -> list[list]:
    """One row a member of each group record: group, generation, client id, host, topics and
    assigned partitions (the last two for the consumer protocol only, None otherwise)."""
    rows = []
    for g in _model_groups(d):
        consumer = g["protocol_type"] == "consumer"
        for m in g["members"]:
            rows.append([g["group"], g["generation"], m["client_id"], m["client_host"],
                         ks.consumer_subscription_topics(m["subscription"]) if consumer else None,
                         ks.consumer_assignment(m["assignment"]) if consumer else None])
    return rows


def _rmqlab_members(d: Path) -> list[list]:
    df = it.group_members(d)
    return [[g, gen, c, h, t if isinstance(t, list) else None, a if isinstance(a, list) else None]
            for g, gen, c, h, t, a in df[["group", "generation", "client_id", "client_host", "topics",
                                          "assigned"]].values.tolist()]


def test_real_ldi_poc_consumer_group():
    d = require_real_data(KAFKA / "LDI-POC" / "__consumer_offsets-6")
    model = ks.offsets_records(d)
    # README: ".log 13751 B, 13 batches (offsets 0..12)"; the stdlib reader: one record a batch
    assert [r["offset"] for r in model] == list(range(13))
    records = it.group_records(d)
    assert records["offset"].tolist() == [r["offset"] for r in model]
    assert records["group"].tolist() == [r["key"]["group"] for r in model]
    assert records["value_version"].tolist() == [r["value"]["version"] for r in model]
    assert records["tombstone"].tolist() == [r["value"] is None for r in model]
    commits = _model_commits(d)
    assert len(commits) == 4
    assert _rmqlab_commits(d) == commits
    # README: ".timeindex ... (1769793578176, 12); the 3rd entry is the one appended on close/roll
    # (max timestamp of segment, last offset 12)": record 12 is the last commit, and its commit
    # time is that timestamp (the stdlib reader gives both)
    last = max(commits, key=lambda c: c[-1])
    assert (last[-1], last[-2]) == (12, 1769793578176)
    groups = _model_groups(d)
    assert len(groups) == 6
    meta = it.group_metadata(d)
    assert meta["generation"].tolist() == [g["generation"] for g in groups]
    assert meta["member_count"].tolist() == [len(g["members"]) for g in groups]
    assert meta["protocol"].tolist() == [g["protocol"] for g in groups]
    members = _model_members(d)
    assert len(members) == sum(len(g["members"]) for g in groups) > 0
    assert _rmqlab_members(d) == members
    # README of ../shared/real-data/kafka: "consumer-group metadata (client ids, Docker-internal
    # IPs such as 172.18.0.5, ...)"
    assert {m[3] for m in members} == {"/172.18.0.5"}


def test_real_flink_connect_group():
    d = require_real_data(KAFKA / "flink-on-prem" / "__consumer_offsets-34")
    model = ks.offsets_records(d)
    # README: "__consumer_offsets-34 | 4384 | 10 |" batches; one record each
    assert len(model) == 10
    groups = _model_groups(d)
    assert len(groups) == 10 and {g["protocol_type"] for g in groups} == {"connect"}
    meta = it.group_metadata(d)
    assert meta["group"].tolist() == [g["group"] for g in groups]
    assert meta["protocol_type"].tolist() == [g["protocol_type"] for g in groups]
    assert meta["generation"].tolist() == [g["generation"] for g in groups]
    assert _model_commits(d) == [] and it.committed_offsets(d).empty
    members = _model_members(d)
    assert len(members) > 0 and _rmqlab_members(d) == members     # topics None: not the consumer protocol
    # the connect protocol's member bytes stay as stored
    assert meta["members"][0][0]["subscription"] == groups[0]["members"][0]["subscription"]
    # README of ../shared/real-data/kafka: "consumer-group metadata (..., `connect:8083`)"
    assert b"http://connect:8083/" in groups[0]["members"][0]["subscription"]


def test_real_flink_control_center_streams_group():
    d = require_real_data(KAFKA / "flink-on-prem" / "__consumer_offsets-28")
    model = ks.offsets_records(d)
    # README: "__consumer_offsets-28 | 1836 | 4 |" batches, one record each; ".timeindex ...
    # 1: (1713533857013, 3)": the last record's time
    assert len(model) == 4 and (model[-1]["offset"], model[-1]["timestamp"]) == (3, 1713533857013)
    commits = _model_commits(d)
    assert len(commits) == 1
    assert _rmqlab_commits(d) == commits
    members = _model_members(d)
    assert len(members) == 2 and _rmqlab_members(d) == members
    assert it.group_metadata(d)["protocol"].tolist() == [g["protocol"] for g in _model_groups(d)]


def test_real_kafka_271_both_segments():
    d = require_real_data(KAFKA / "kafka-2.7.1" / "__consumer_offsets-17")
    model = ks.offsets_records(d)
    # README: segment 0 "1 batch (offset 0)", `00000000000000000001.log` "(221 B, 2 batches)"
    assert [r["offset"] for r in model] == [0, 1, 2]
    records = it.group_records(d)
    assert records["offset"].tolist() == [0, 1, 2]
    assert records["tombstone"].tolist() == [r["value"] is None for r in model]
    members = _model_members(d)
    assert len(members) == 1 and _rmqlab_members(d) == members


@pytest.mark.parametrize("segment, batches", [
    # each README's batch count: LDI-POC "13 batches"; flink-on-prem's table: 4 and 10;
    # kafka-2.7.1: "1 batch (offset 0)" and "(221 B, 2 batches)"
    ("LDI-POC/__consumer_offsets-6/00000000000000000000.log", 13),
    ("flink-on-prem/__consumer_offsets-28/00000000000000000000.log", 4),
    ("flink-on-prem/__consumer_offsets-34/00000000000000000000.log", 10),
    ("kafka-2.7.1/__consumer_offsets-17/00000000000000000000.log", 1),
    ("kafka-2.7.1/__consumer_offsets-17/00000000000000000001.log", 2)])
def test_real_segments_decode_completely(segment, batches, capsys):
    seg = require_real_data(KAFKA / segment)
    assert len(ks.read_batches(seg)) == batches
    n = len(ks.read_records(seg))
    assert len(read_records(seg)) == n
    # every key and value is read to its last byte (the decoder rejects bytes left over)
    assert len(it.group_records(seg)) == n
    text = it.describe_records(seg, "offsets")
    assert len(text) == n and not any(k.startswith(("Error", "Unknown")) for k, _ in text.values())
    assert main(["kafka", "dump", "--offsets-decoder", str(seg)]) == 0
    assert sum(" key: {" in line for line in capsys.readouterr().out.splitlines()) == n
