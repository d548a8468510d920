"""Every record type of Kafka's internal topics beyond offset commits and classic groups
(``__consumer_offsets`` types 3-23, ``__share_group_state``, ``__remote_log_metadata``) and
of the KRaft metadata log, every version: the bytes are written here field by field from the
protocol's rules (kafka_wire and struct, nothing shared with rmqlab), decoded by rmqlab, and
judged against hand-written expectations and against kafka-dump-log itself: each record
segment is dumped by the newest cached release (4.4.0), the 4.0 preview layouts by 4.0.2 and
3.9's by 3.9.2, with the decoder flag of the topic."""
from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import pytest
from kafka_wire import base128, blob, string, tags, uvarint

from rmqlab.cli import main
from rmqlab.errors import FormatError
from rmqlab.kafka import internal_topics as it
from rmqlab.kafka import kraft
from rmqlab.kafka.log import KafkaRecord, write_segment

# ------------------------------------------------------------------ the test's own encoder


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def u16(v):
    return struct.pack(">H", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def f64(v):
    return struct.pack(">d", v)


def cs(s):
    """A compact string (flexible versions): uvarint length + 1, 0 for null."""
    return string(s, flexible=True)


def cb(b):
    return blob(b, flexible=True)


def ca(items):
    """A compact array of already encoded elements (None: null)."""
    return uvarint(0) if items is None else uvarint(len(items) + 1) + b"".join(items)


def ints(xs, fmt=">i"):
    return ca([struct.pack(fmt, x) for x in xs])


def strings(xs):
    return ca([cs(x) for x in xs])


def uuid(n):
    return bytes(15) + bytes([n])


def uuid_text(n):
    import base64
    return base64.urlsafe_b64encode(uuid(n)).decode().rstrip("=")


def key(record_type, *strs):
    """A coordinator key: int16 type, then classic (non-flexible) strings."""
    return i16(record_type) + b"".join(string(s) for s in strs)


def frame(api_key, version, body):
    """The metadata frame of AbstractApiMessageSerde: frameVersion 1, apiKey, version (uvarints)."""
    return base128(1) + base128(api_key) + base128(version) + body


# ------------------------------------------------------------------ __consumer_offsets 3..23

TP = ca([uuid(1) + ints([0, 1]) + tags(), uuid(2) + ints([]) + tags()])
TP_EPOCHS = ca([uuid(1) + ints([0]) + tags({0: ints([4])})])
TOPIC_META = ca([uuid(3) + cs("orders") + i32(2) + ca([i32(0) + strings(["r1", "r2"]) + tags()]) + tags()])
TPI = ca([uuid(4) + cs("a") + ints([1]) + tags()])
TI = ca([uuid(5) + cs("b") + tags()])
TASKS = ca([cs("0") + ints([0, 1]) + tags()])
TASKS_EPOCHS = ca([cs("1") + ints([2]) + tags({0: ints([7])})])
CLASSIC = i8(1) + i32(45000) + ca([cs("range") + cb(b"\x00\x01") + tags()]) + tags()
TOPO_INFO = ca([cs("changelog") + i32(3) + i16(1) + ca([cs("cleanup.policy") + cs("compact") + tags()]) + tags()])
SUBTOPOLOGY = (cs("0") + strings(["in"]) + strings([]) + TOPO_INFO + strings(["rep"]) + ca([])
               + ca([ints([0], ">h") + ints([], ">h") + ints([1], ">h") + tags()]) + tags())

#: (record type, key strings, value bytes after the int16 version, expected value) at the
#: newest layout (4.4.0's); tagged fields set where the layout has them
GROUP_RECORDS = [
    (3, ["g"], i32(5) + tags({0: i64(77)}), {"epoch": 5, "metadataHash": 77}),
    (3, ["g"], i32(6) + tags(), {"epoch": 6}),
    (4, ["g"], TOPIC_META + tags(),
     {"topics": [{"topicId": uuid_text(3), "topicName": "orders", "numPartitions": 2,
                  "partitionMetadata": [{"partition": 0, "racks": ["r1", "r2"]}]}]}),
    (5, ["g", "m1"], cs(None) + cs("rack") + cs("cli") + cs("/1.2.3.4") + strings(["t1"]) + cs(None) + i32(30000)
     + cs("uniform") + tags({0: CLASSIC}),
     {"instanceId": None, "rackId": "rack", "clientId": "cli", "clientHost": "/1.2.3.4", "subscribedTopicNames": ["t1"],
      "subscribedTopicRegex": None, "rebalanceTimeoutMs": 30000, "serverAssignor": "uniform",
      "classicMemberMetadata": {"sessionTimeoutMs": 45000, "supportedProtocols": [{"name": "range",
                                                                                   "metadata": b"\x00\x01"}]}}),
    (5, ["g", "m2"], cs("i") + cs(None) + cs("c") + cs("h") + strings([]) + cs("t.*") + i32(-1) + cs(None) + tags(),
     {"instanceId": "i", "rackId": None, "clientId": "c", "clientHost": "h", "subscribedTopicNames": [],
      "subscribedTopicRegex": "t.*", "rebalanceTimeoutMs": -1, "serverAssignor": None}),
    (6, ["g"], i32(9) + tags({0: i64(1700000000000)}), {"assignmentEpoch": 9, "assignmentTimestamp": 1700000000000}),
    (7, ["g", "m1"], TP + tags(),
     {"topicPartitions": [{"topicId": uuid_text(1), "partitions": [0, 1]},
                          {"topicId": uuid_text(2), "partitions": []}]}),
    (8, ["g", "m1"], i32(3) + i32(2) + i8(1) + TP_EPOCHS + TP + tags(),
     {"memberEpoch": 3, "previousMemberEpoch": 2, "state": 1,
      "assignedPartitions": [{"topicId": uuid_text(1), "partitions": [0], "assignmentEpochs": [4]}],
      "partitionsPendingRevocation": [{"topicId": uuid_text(1), "partitions": [0, 1]},
                                      {"topicId": uuid_text(2), "partitions": []}]}),
    (10, ["s", "m"], cs(None) + cs("c") + cs("h") + strings(["t"]) + tags(),
     {"rackId": None, "clientId": "c", "clientHost": "h", "subscribedTopicNames": ["t"]}),
    (11, ["s"], i32(4) + i64(-5) + tags(), {"epoch": 4, "metadataHash": -5}),
    (12, ["s"], i32(2) + tags(), {"assignmentEpoch": 2}),
    (13, ["s", "m"], TP + tags(),
     {"topicPartitions": [{"topicId": uuid_text(1), "partitions": [0, 1]},
                          {"topicId": uuid_text(2), "partitions": []}]}),
    (14, ["s", "m"], i32(1) + i32(0) + i8(0) + TP + tags(),
     {"memberEpoch": 1, "previousMemberEpoch": 0, "state": 0,
      "assignedPartitions": [{"topicId": uuid_text(1), "partitions": [0, 1]},
                             {"topicId": uuid_text(2), "partitions": []}]}),
    (15, ["s"], TPI + ca([]) + TI + tags(),
     {"initializingTopics": [{"topicId": uuid_text(4), "topicName": "a", "partitions": [1]}], "initializedTopics": [],
      "deletingTopics": [{"topicId": uuid_text(5), "topicName": "b"}]}),
    (16, ["g", "t.*"], strings(["t1", "t2"]) + i64(12) + i64(1700000000001) + tags(),
     {"topics": ["t1", "t2"], "version": 12, "timestamp": 1700000000001}),
    (17, ["st"], i32(3) + i64(99) + tags({0: i32(2), 1: ca([cs("k") + cs("v") + tags()]), 3: i32(1)}),
     {"epoch": 3, "metadataHash": 99, "validatedTopologyEpoch": 2,
      "lastAssignmentConfigs": [{"key": "k", "value": "v"}],
      "failedDescriptionTopologyEpoch": 1}),
    (19, ["st", "m"], cs(None) + cs("r") + cs("c") + cs("h") + i32(1000) + i32(1) + cs("p")
     + i8(1) + cs("localhost") + u16(65535) + tags() + ca([cs("a") + cs("b") + tags()]) + tags(),
     {"instanceId": None, "rackId": "r", "clientId": "c", "clientHost": "h", "rebalanceTimeoutMs": 1000,
      "topologyEpoch": 1, "processId": "p", "userEndpoint": {"host": "localhost", "port": 65535},
      "clientTags": [{"key": "a", "value": "b"}]}),
    (19, ["st", "m2"], cs("i") + cs(None) + cs("c") + cs("h") + i32(-1) + i32(0) + cs("p") + i8(-1) + ca([]) + tags(),
     {"instanceId": "i", "rackId": None, "clientId": "c", "clientHost": "h", "rebalanceTimeoutMs": -1,
      "topologyEpoch": 0, "processId": "p", "userEndpoint": None, "clientTags": []}),
    (20, ["st"], i32(7) + tags(), {"assignmentEpoch": 7}),
    (21, ["st", "m"], TASKS + ca([]) + TASKS + tags(),
     {"activeTasks": [{"subtopologyId": "0", "partitions": [0, 1]}], "standbyTasks": [],
      "warmupTasks": [{"subtopologyId": "0", "partitions": [0, 1]}]}),
    (22, ["st", "m"], i32(2) + i32(1) + i8(0) + TASKS_EPOCHS + ca([]) + ca([]) + TASKS + ca([]) + ca([]) + tags(),
     {"memberEpoch": 2, "previousMemberEpoch": 1, "state": 0,
      "activeTasks": [{"subtopologyId": "1", "partitions": [2], "assignmentEpochs": [7]}], "standbyTasks": [],
      "warmupTasks": [], "activeTasksPendingRevocation": [{"subtopologyId": "0", "partitions": [0, 1]}],
      "standbyTasksPendingRevocation": [], "warmupTasksPendingRevocation": []}),
    (23, ["st"], i32(1) + ca([SUBTOPOLOGY]) + tags(),
     {"epoch": 1, "subtopologies": [{
         "subtopologyId": "0", "sourceTopics": ["in"], "sourceTopicRegex": [],
         "stateChangelogTopics": [{"name": "changelog", "partitions": 3, "replicationFactor": 1,
                                   "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}]}],
         "repartitionSinkTopics": ["rep"], "repartitionSourceTopics": [],
         "copartitionGroups": [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [1]}]}]}),
]
#: the preview layouts, changed within version 0: (release whose tool reads them, type, key, value,
#: expected); 3.9's layout of type 9 is read from 3.9.2's ShareGroupPartitionMetadataValue.json,
#: but no tool prints it (3.9.2's says "Unknown record type 9": its serde knows no share records)
PREVIEW_GROUP_RECORDS = [
    ("4.0.2", 9, ["s"], TOPIC_META + tags(),
     {"topics": [{"topicId": uuid_text(3), "topicName": "orders", "numPartitions": 2,
                  "partitionMetadata": [{"partition": 0, "racks": ["r1", "r2"]}]}]}),
    ("4.0.2", 11, ["s"], i32(4) + tags(), {"epoch": 4}),
    ("4.0.2", 15, ["s"], TPI + TI + tags(),
     {"initializedTopics": [{"topicId": uuid_text(4), "topicName": "a", "partitions": [1]}],
      "deletingTopics": [{"topicId": uuid_text(5), "topicName": "b"}]}),
    ("3.9.2", 9, ["s"], TPI + TI + tags(),
     {"initializedTopics": [{"topicId": uuid_text(4), "topicName": "a", "partitions": [1]}],
      "deletingTopics": [{"topicId": uuid_text(5), "topicName": "b"}]}),
]


@pytest.mark.parametrize("record_type, keys, body, expected", GROUP_RECORDS + [r[1:] for r in PREVIEW_GROUP_RECORDS])
def test_group_records_of_every_type(record_type, keys, body, expected):
    r = it.decode_group_record(key(record_type, *keys), i16(0) + body)
    assert r.record_type == record_type and r.value_version == 0 and r.value == expected
    assert list(r.key.values()) == keys and next(iter(r.key)) == "groupId"
    assert r.name == it.GROUP_RECORD_TYPES[record_type][0]
    assert it.decode_group_record(key(record_type, *keys), None).tombstone


def test_group_record_errors_name_the_field():
    with pytest.raises(FormatError) as e:
        it.decode_group_record(key(3, "g"), i16(1) + i32(5) + tags(), path="c.log", value_offset=100)
    assert (e.value.path, e.value.offset, e.value.field) == ("c.log", 100, "value.version")
    with pytest.raises(FormatError) as e:   # neither layout reads it: the newest one's error
        it.decode_group_record(key(11, "g"), i16(0) + i32(5) + b"\x00\x00", value_offset=10)
    assert e.value.field.startswith("value.")
    assert it.decode_group_record(key(18, "x"), b"").name == "Unknown"


# ------------------------------------------------------------------ __share_group_state

BATCH = i64(10) + i64(19) + i8(2) + i16(1) + tags()
SHARE_RECORDS = [   # (release that reads the layout, type, value after the version, expected, version label)
    ("4.4.0", 0, i32(3) + i32(1) + i32(4) + i64(10) + i64(111) + i64(222) + ca([BATCH]) + tags({0: i32(7)}),
     {"snapshotEpoch": 3, "stateEpoch": 1, "leaderEpoch": 4, "startOffset": 10, "deliveryCompleteCount": 7,
      "createTimestamp": 111, "writeTimestamp": 222,
      "stateBatches": [{"firstOffset": 10, "lastOffset": 19, "deliveryState": 2, "deliveryCount": 1}]}),
    ("4.4.0", 1, i32(3) + i32(4) + i64(10) + ca([]) + tags(),
     {"snapshotEpoch": 3, "leaderEpoch": 4, "startOffset": 10, "stateBatches": []}),
    ("4.0.2", 0, u16(65535) + i32(1) + i32(4) + i64(10) + ca([BATCH]) + tags(),
     {"snapshotEpoch": 65535, "stateEpoch": 1, "leaderEpoch": 4, "startOffset": 10,
      "stateBatches": [{"firstOffset": 10, "lastOffset": 19, "deliveryState": 2, "deliveryCount": 1}]}),
    ("4.0.2", 1, u16(3) + i32(4) + i64(10) + ca([BATCH, BATCH]) + tags(),
     {"snapshotEpoch": 3, "leaderEpoch": 4, "startOffset": 10,
      "stateBatches": [{"firstOffset": 10, "lastOffset": 19, "deliveryState": 2, "deliveryCount": 1}] * 2}),
]


def share_key(record_type):
    return i16(record_type) + string("grp") + uuid(9) + i32(2)


@pytest.mark.parametrize("release, record_type, body, expected", SHARE_RECORDS)
def test_share_group_state_records(release, record_type, body, expected):
    r = it.decode_share_state_record(share_key(record_type), i16(0) + body)
    assert r.key == {"groupId": "grp", "topicId": uuid_text(9), "partition": 2}
    layout = "4.0" if release == "4.0.2" else "4.1"
    assert (r.name, r.value, r.layout) == (("ShareSnapshot", "ShareUpdate")[record_type], expected, layout)
    label = "type" if release == "4.0.2" else "version"
    assert it.format_share_state_record(r, 0)[1].startswith(f'{{"{label}":"0","data":{{"snapshotEpoch"')


def test_share_group_state_tombstone_unknown_and_errors():
    r = it.decode_share_state_record(share_key(0), None)
    assert it.format_share_state_record(r, 4) == (
        f'{{"type":"0","data":{{"groupId":"grp","topicId":"{uuid_text(9)}","partition":2}}}}', "<DELETE>")
    u = it.decode_share_state_record(i16(5) + b"zz", b"q")
    assert it.format_share_state_record(u, 6) == ("Unknown record type 5 at offset 6, skipping.", None)
    with pytest.raises(FormatError) as e:
        it.decode_share_state_record(share_key(1), i16(0) + i32(1), path="s.log", value_offset=7)
    assert e.value.path == "s.log" and e.value.field.startswith("value.")


# ------------------------------------------------------------------ __remote_log_metadata

TIP = cs("t") + uuid(7) + i32(3) + tags()
SEGMENT_ID = TIP + uuid(8) + tags()
EPOCHS = ca([i32(2) + i64(50) + tags(), i32(0) + i64(0) + tags()])
REMOTE_RECORDS = [
    frame(0, 0, SEGMENT_ID + i64(0) + i64(99) + i32(1) + i64(5000) + i64(6000) + EPOCHS + i32(1234) + cb(None)
          + i8(0) + tags()),
    frame(0, 0, SEGMENT_ID + i64(100) + i64(199) + i32(1) + i64(5000) + i64(6000) + ca([i32(3) + i64(100) + tags()])
          + i32(99) + cb(b"abc") + i8(1) + tags({0: b"\x01"})),
    frame(1, 0, SEGMENT_ID + i32(2) + i64(7000) + cb(b"xy") + i8(2) + tags()),
    frame(1, 0, SEGMENT_ID + i32(2) + i64(7001) + cb(None) + i8(3) + tags()),
    frame(2, 0, TIP + i32(3) + i64(8000) + i8(1) + tags()),
    frame(3, 0, uuid(8) + i64(0) + i64(99) + i32(1) + i64(5000) + i64(6000) + EPOCHS + i32(1234) + cb(None) + i8(1)
          + tags({0: b"\x01"})),
]


def test_remote_log_metadata_records():
    d = it.decode_remote_log_metadata_record(REMOTE_RECORDS[0])
    assert (d["type"], d["version"]) == ("RemoteLogSegmentMetadataRecord", 0)
    assert d["data"]["remoteLogSegmentId"] == {"topicIdPartition": {"name": "t", "id": uuid_text(7), "partition": 3},
                                               "id": uuid_text(8)}
    assert d["data"]["segmentLeaderEpochs"] == [{"leaderEpoch": 2, "offset": 50}, {"leaderEpoch": 0, "offset": 0}]
    assert it.format_remote_log_metadata(d) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition={uuid_text(7)}:t-3, "
        f"id={uuid_text(8)}}}, startOffset=0, endOffset=99, brokerId=1, maxTimestampMs=5000, eventTimestampMs=6000, "
        "segmentLeaderEpochs={0=0, 2=50}, segmentSizeInBytes=1234, customMetadata=Optional.empty, "
        "state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}")
    assert it.decode_remote_log_metadata_record(REMOTE_RECORDS[1])["data"]["txnIndexEmpty"] is True
    assert it.decode_remote_log_metadata_record(REMOTE_RECORDS[4])["data"]["remotePartitionDeleteState"] == 1


@pytest.mark.parametrize("value, field", [
    (frame(9, 0, b""), "RemoteLogMetadata.apiKey"),
    (frame(2, 1, b""), "RemoteLogMetadata.version"),
    (frame(2, 0, TIP + i32(3) + i64(8000) + i8(7) + tags()), "RemotePartitionDeleteMetadataRecord"
                                                              ".remotePartitionDeleteState"),
    (frame(2, 0, TIP + i32(3) + i64(8000) + i8(1) + tags() + b"\x00"), "RemotePartitionDeleteMetadataRecord.end"),
])
def test_bad_remote_log_metadata(value, field):
    with pytest.raises(FormatError) as e:
        it.decode_remote_log_metadata_record(value, path="r.log", offset=40)
    assert (e.value.path, e.value.field) == ("r.log", field) and e.value.offset >= 40


# ------------------------------------------------------------------ the KRaft metadata log

EP = ca([cs("PLAINTEXT") + cs("localhost") + u16(9092) + i16(0) + tags()])
FEAT = ca([cs("metadata.version") + i16(1) + i16(27) + tags()])
PART_CORE = i32(0) + uuid(1) + ints([1, 2]) + ints([1]) + ints([]) + ints([2]) + i32(1)


def _metadata_records():
    """(apiKey, version, body) of every record type and version of 3.0-4.4, tagged fields set."""
    out = []
    for v in range(5):
        body = i32(1) + (i8(1) if v >= 2 else b"") + uuid(2) + i64(10) + EP + FEAT + cs("rack-a" if v else None)
        body += i8(v % 2) + (i8(1) if v >= 1 else b"")
        tagged = {}
        if v >= 3:
            tagged[0] = ca([uuid(3)])
        if v >= 4:
            tagged[1] = ca([uuid(4)])
        out.append((0, v, body + tags(tagged)))
    out.append((1, 0, i32(1) + i64(10) + tags()))
    out.append((2, 0, cs("orders") + uuid(1) + tags()))
    for v in range(3):
        body = PART_CORE + i32(5) + i32(6) + (ca([uuid(3), uuid(4)]) if v >= 1 else b"")
        tagged = {0: i8(1)}
        if v >= 2:
            tagged.update({1: ints([2]), 2: ints([3])})
        out.append((3, v, body + tags(tagged)))
    out.append((4, 0, i8(2) + cs("orders") + cs("retention.ms") + cs(None) + tags()))
    out.append((4, 0, i8(4) + cs("") + cs("log.retention.ms") + cs("1000") + tags()))
    for v in range(3):
        tagged = {0: ints([1]), 1: i32(2), 5: i8(1)}
        if v >= 1:
            tagged[8] = ca([uuid(5)])
        if v >= 2:
            tagged.update({6: ints([]), 7: ints([4])})
        out.append((5, v, i32(0) + uuid(1) + tags(tagged)))
    out.append((5, 0, i32(1) + uuid(1) + tags()))
    out.append((7, 0, i32(1) + i64(3) + tags()))
    out.append((8, 0, i32(1) + i64(3) + tags()))
    out.append((9, 0, uuid(1) + tags()))
    out.append((10, 0, cs("User:a") + cs("User:b") + strings(["User:c"]) + i64(1) + i64(2) + i64(3) + cs("tok")
                + tags()))
    out.append((11, 0, cs("alice") + i8(1) + cb(b"salt") + cb(b"") + cb(b"\xff\x00") + i32(4096) + tags()))
    out.append((12, 0, cs("metadata.version") + i16(27) + tags()))
    for q in (1048576.0, 1e7, 0.5, 1e-4, 123.25):
        out.append((14, 0, ca([cs("user") + cs("alice") + tags(), cs("client-id") + cs(None) + tags()])
                    + cs("producer_byte_rate") + f64(q) + i8(q < 1) + tags()))
    out.append((15, 0, i32(1) + i64(5) + i64(1000) + tags()))
    for v in range(4):
        tagged = {0: i8(1)}
        if v >= 1:
            tagged[1] = i8(1)
        if v >= 2:
            tagged[2] = ca([uuid(6)])
        if v >= 3:
            tagged[3] = ca([])
        out.append((17, v, i32(1) + i64(4) + tags(tagged)))
    out.append((17, 0, i32(1) + i64(5) + tags()))
    out.append((18, 0, uuid(7) + i8(2) + cs("orders") + i8(3) + cs("User:a") + cs("*") + i8(3) + i8(3) + tags()))
    out.append((19, 0, uuid(7) + tags()))
    out.append((20, 0, tags()))
    out.append((21, 0, i8(2) + tags()))
    out.append((22, 0, cs("alice") + i8(2) + tags()))
    out.append((23, 0, tags({0: cs("txn")})))
    out.append((23, 0, tags()))
    out.append((24, 0, tags()))
    out.append((25, 0, tags({0: cs("why")})))
    out.append((26, 0, cs("tok") + tags()))
    out.append((27, 0, i32(3000) + uuid(8) + i8(0) + EP + FEAT + tags()))
    out.append((28, 0, cs("orders") + tags()))
    out.append((29, 0, i32(3000) + tags()))
    return out


METADATA_RECORDS = _metadata_records()


def test_metadata_records_of_every_type_decode():
    seen = set()
    for api_key, version, body in METADATA_RECORDS:
        d = kraft.decode_metadata_record(frame(api_key, version, body))
        assert d["type"] == kraft.METADATA_RECORD_TYPES[api_key] and isinstance(d["data"], dict)
        seen.add(api_key)
    assert seen == set(kraft.METADATA_RECORD_TYPES)
    reg = kraft.decode_metadata_record(frame(0, 4, METADATA_RECORDS[4][2]))["data"]
    assert reg == {"brokerId": 1, "isMigratingZkBroker": True, "incarnationId": uuid_text(2), "brokerEpoch": 10,
                   "endPoints": [{"name": "PLAINTEXT", "host": "localhost", "port": 9092, "securityProtocol": 0}],
                   "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 27}],
                   "rack": "rack-a", "fenced": False, "inControlledShutdown": True, "logDirs": [uuid_text(3)],
                   "cordonedLogDirs": [uuid_text(4)]}
    quota = kraft.decode_metadata_record(frame(14, 0, [b for k, _, b in METADATA_RECORDS if k == 14][1]))
    assert kraft.metadata_text(quota).endswith('"key":"producer_byte_rate","value":1.0E7,"remove":false}}')


# ------------------------------------------------------------------ kafka-dump-log itself


def _dump_log(version: str, opts: list[str], seg: Path) -> dict[int, str]:
    """The release's DumpLogSegments over `seg`: each record line's text after its metadata
    (``key: ... payload: ...``), by offset."""
    import kafka_harness as kh
    import oracles

    kh.bh.require_java_and_maven()
    rel = kh.release(version)
    try:
        cp = kh.classpath(rel, log=lambda m: None)       # the harness's cache, else built by Maven
    except kh.bh.HarnessError as e:
        oracles.missing(f"Kafka {rel.version}'s DumpLogSegments ({str(e)[:200]})",
                        f"python tests/brokers/build_kafka.py --release {rel.version}")
    cmd = [rel.java(), "-Xmx256m", *kh.JVM[1:], "-cp", cp, kh.main_class(rel, kh.Release.dump_classes),
           "--deep-iteration", "--print-data-log", *opts, "--files", str(seg)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = {}
    for line in out.stdout.splitlines():
        m = re.match(r"\| offset: (\d+) .*? headerKeys: \[[^\]]*\] (.*)$", line)
        if m:
            lines[int(m.group(1))] = m.group(2)
    return lines


def _ours(seg: Path, decoder: str) -> dict[int, str]:
    out = {}
    for off, (k, p) in it.describe_records(seg, decoder).items():
        out[off] = " ".join(x for x in ((f"key: {k}" if k is not None else None),
                                        (f"payload: {p}" if p is not None else None)) if x)
    return out


def _segment(tmp_path: Path, name: str, records: list[tuple[bytes | None, bytes | None]]) -> Path:
    d = tmp_path / name
    d.mkdir()
    return write_segment(d, 0, [KafkaRecord(i, 1000 + i, k, v) for i, (k, v) in enumerate(records)])


@pytest.mark.parametrize("release", ["4.4.0", "4.0.2"])
def test_consumer_offsets_equal_kafka_dump_log(tmp_path, release):
    if release == "4.4.0":
        records = [(key(t, *k), i16(0) + b) for t, k, b, _ in GROUP_RECORDS]
        records += [(key(t, *k), None) for t, k, _, _ in GROUP_RECORDS[:3]] + [(key(18, "x"), b"")]
    else:
        records = [(key(t, *k), i16(0) + b) for rel, t, k, b, _ in PREVIEW_GROUP_RECORDS if rel == release]
    seg = _segment(tmp_path, "__consumer_offsets-0", records)
    tool = _dump_log(release, ["--offsets-decoder"], seg)
    assert tool == _ours(seg, "offsets") and len(tool) == len(records)


@pytest.mark.parametrize("release", ["4.4.0", "4.0.2"])
def test_share_group_state_equals_kafka_dump_log(tmp_path, release):
    records = [(share_key(t), i16(0) + b) for rel, t, b, _ in SHARE_RECORDS if rel == release]
    records += [(share_key(1), None), (i16(5) + b"zz", b"q")]
    seg = _segment(tmp_path, "__share_group_state-0", records)
    tool = _dump_log(release, ["--share-group-state-decoder"], seg)
    assert tool == _ours(seg, "share-group-state") and len(tool) == len(records)


def test_remote_log_metadata_equals_kafka_dump_log(tmp_path):
    seg = _segment(tmp_path, "__remote_log_metadata-0", [(None, v) for v in REMOTE_RECORDS])
    tool = _dump_log("4.4.0", ["--remote-log-metadata-decoder"], seg)
    assert tool == _ours(seg, "remote-log-metadata") and len(tool) == len(REMOTE_RECORDS)


def test_cluster_metadata_equals_kafka_dump_log(tmp_path):
    seg = _segment(tmp_path, "__cluster_metadata-0", [(None, frame(k, v, b)) for k, v, b in METADATA_RECORDS])
    tool = _dump_log("4.4.0", ["--cluster-metadata-decoder"], seg)
    ours = {off: f"payload: {kraft.metadata_text(kraft.decode_metadata_record(frame(k, v, b)))}"
            for off, (k, v, b) in enumerate(METADATA_RECORDS)}
    assert len(tool) == len(ours)
    for off in ours:
        assert tool[off] == ours[off], METADATA_RECORDS[off][:2]


# ------------------------------------------------------------------ rmqlab kafka dump


def test_cli_share_group_state_and_remote_log_metadata_decoders(tmp_path, capsys):
    seg = _segment(tmp_path, "__share_group_state-0", [(share_key(t), i16(0) + b) for _, t, b, _ in SHARE_RECORDS])
    assert main(["kafka", "dump", "--share-group-state-decoder", str(seg)]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("| ")]
    assert len(lines) == 4 and all(' key: {"type":' in x and ' payload: {"' in x for x in lines)
    seg = _segment(tmp_path, "__remote_log_metadata-0", [(None, v) for v in REMOTE_RECORDS])
    assert main(["kafka", "dump", "--remote-log-metadata-decoder", str(seg)]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("| ")]
    assert len(lines) == 6 and " key: " not in lines[0] and " payload: RemoteLogSegmentMetadata{" in lines[0]
