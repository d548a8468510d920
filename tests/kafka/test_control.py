"""Control records, Kafka's message-schema primitives and KRaft metadata records/snapshots.

Fixtures are built field by field here and in kafka_wire (that code shares nothing with
rmqlab; the batch CRC is kafka-python's CRC-32C), kafka-python's batch builder and reader are
the independent cross-check, and the real KRaft files must decode to what their READMEs state.
"""
from __future__ import annotations

import base64
import struct

import kafka_stdlib as ks
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c
from kafka_wire import compact_array, compact_string, tags, uvarint, varint, varlong
from oracles import require_real_data

from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.kafka import control, kraft
from rmqlab.kafka.log import read_batches
from rmqlab.kafka.protocol import Reader

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

# ------------------------------------------------------------------ test-side encoders


def uuid_bytes(i: int) -> bytes:
    return i.to_bytes(16, "big")


def uuid_str(i: int) -> str:
    return base64.urlsafe_b64encode(uuid_bytes(i)).decode().rstrip("=")


def key(ctype: int, version: int = 0) -> bytes:
    return struct.pack(">hh", version, ctype)


def end_txn(epoch: int, version: int = 0) -> bytes:
    return struct.pack(">hi", version, epoch)


def leader_change(leader: int, voters: list[int], granting: list[int]) -> bytes:
    return (struct.pack(">hi", 0, leader) + compact_array([struct.pack(">i", v) + tags() for v in voters])
            + compact_array([struct.pack(">i", v) + tags() for v in granting]) + tags())


def snapshot_header(ts: int) -> bytes:
    return struct.pack(">hq", 0, ts) + tags()


def voters_record(voters: list[tuple[int, int, list[tuple[str, str, int]], int, int]]) -> bytes:
    body = []
    for vid, dir_id, endpoints, lo, hi in voters:
        eps = [compact_string(n) + compact_string(h) + struct.pack(">H", p) + tags() for n, h, p in endpoints]
        body.append(struct.pack(">i", vid) + uuid_bytes(dir_id) + compact_array(eps) + struct.pack(">hh", lo, hi)
                    + tags() + tags())
    return struct.pack(">h", 0) + compact_array(body) + tags()


def record(offset_delta: int, ts_delta: int, k: bytes | None, v: bytes | None) -> bytes:
    body = (b"\x00" + varlong(ts_delta) + varint(offset_delta)
            + (varint(-1) if k is None else varint(len(k)) + k)
            + (varint(-1) if v is None else varint(len(v)) + v) + varint(0))
    return varint(len(body)) + body


def batch(base_offset: int, records: list[tuple[bytes | None, bytes | None]], *, is_control: bool = False,
          ts: int = 1_700_000_000_000, epoch: int = 0) -> bytes:
    recs = b"".join(record(i, 0, k, v) for i, (k, v) in enumerate(records))
    attrs = 0x20 if is_control else 0
    after_crc = struct.pack(">hiqqqhii", attrs, len(records) - 1, ts, ts, -1, -1, -1, len(records)) + recs
    crc = calc_crc32c(after_crc)
    tail = struct.pack(">ibI", epoch, 2, crc) + after_crc
    return struct.pack(">qi", base_offset, len(tail)) + tail


# ------------------------------------------------------------------ protocol primitives


@SETTINGS
@given(st.lists(st.one_of(
    st.tuples(st.just("uvarint"), st.integers(0, 2**31 - 1)),
    st.tuples(st.just("varint"), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just("varlong"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("cstr"), st.one_of(st.none(), st.text(max_size=20))),
    st.tuples(st.just("str"), st.text(max_size=20)),
    st.tuples(st.just("int32"), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just("uuid"), st.integers(0, 2**128 - 1)),
    st.tuples(st.just("tags"), st.dictionaries(st.integers(0, 300), st.binary(max_size=5), max_size=4)),
), max_size=12))
def test_reader_against_model(items):
    enc = {"uvarint": uvarint, "varint": varint, "varlong": varlong, "cstr": compact_string,
           "int32": lambda v: struct.pack(">i", v), "uuid": uuid_bytes, "tags": tags,
           "str": lambda s: struct.pack(">h", len(s.encode())) + s.encode()}
    data = b"".join(enc[k](v) for k, v in items)
    r = Reader(data, what="M")
    for kind, v in items:
        if kind == "cstr":
            assert r.compact_string("f", nullable=True) == v
        elif kind == "str":
            assert r.string("f") == v
        elif kind == "uuid":
            assert r.uuid("f") == uuid_str(v)
        elif kind == "tags":
            assert r.tagged_fields() == v
        else:
            assert getattr(r, kind)("f") == v
    assert r.at_end


def test_reader_errors_name_field_and_offset():
    r = Reader(compact_array([struct.pack(">i", 1)])[:-2], path="x.log", base=1000, what="Msg")
    with pytest.raises(TruncatedFileError) as e:
        r.compact_array("voters", lambda: r.int32("voterId"))
    assert (e.value.path, e.value.offset, e.value.field) == ("x.log", 1001, "Msg.voters[0].voterId")
    with pytest.raises(FormatError) as e:
        Reader(b"\xff" * 6, what="M").uvarint("n")
    assert e.value.field == "M.n" and "longer than 5" in str(e.value)
    with pytest.raises(FormatError, match="tags must increase"):
        Reader(uvarint(2) + uvarint(5) + uvarint(0) + uvarint(5) + uvarint(0)).tagged_fields()
    with pytest.raises(FormatError, match="not nullable"):
        Reader(b"\x00").compact_string("s")
    with pytest.raises(TruncatedFileError):   # a count the bytes cannot hold is refused before looping
        Reader(uvarint(2**30)).compact_array("a", lambda: 0)
    with pytest.raises(FormatError, match="not UTF-8"):
        Reader(b"\x02\xff", what="M").compact_string("s")


def test_lenient_reader_replaces_malformed_utf8_in_tagged_fields_too():
    bad = b"\x03a\xff"   # compact string "a\xff"
    r = Reader(bad + tags({1: bad}), lenient_utf8=True)
    assert r.compact_string("s") == "a\ufffd"
    assert r.tagged_fields({1: lambda sub: sub.compact_string("t")}) == {1: "a\ufffd"}


# ------------------------------------------------------------------ control records


def test_end_transaction_markers():
    for ctype, name in ((0, "ABORT"), (1, "COMMIT")):
        d = control.decode_control(key(ctype), end_txn(7))
        assert (d["name"], d["data"]) == (name, {"version": 0, "coordinatorEpoch": 7})
        assert control.control_text(d) == f"endTxnMarker: {name} coordinatorEpoch: 7"


def test_every_control_type_decodes():
    lc = control.decode_control(key(2), leader_change(3, [1, 2, 3], [3, 1]))
    assert lc["data"] == {"version": 0, "leaderId": 3, "voters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
                          "grantingVoters": [{"voterId": 3}, {"voterId": 1}]}
    assert control.control_text(lc).startswith("controlType: LEADER_CHANGE(2) LeaderChange: {\"version\":0,")
    h = control.decode_control(key(3), snapshot_header(123))
    assert control.control_text(h) == 'SnapshotHeader {"version":0,"lastContainedLogTimestamp":123}'
    f = control.decode_control(key(4), struct.pack(">h", 0) + tags())
    assert control.control_text(f) == 'SnapshotFooter {"version":0}'
    kv = control.decode_control(key(5), struct.pack(">hh", 0, 1) + tags())
    assert control.control_text(kv) == 'KRaftVersion {"version":0,"kRaftVersion":1}'
    vr = control.decode_control(key(6), voters_record([(1, 5, [("CONTROLLER", "localhost", 9093)], 0, 1)]))
    assert vr["data"]["voters"] == [{"voterId": 1, "voterDirectoryId": uuid_str(5),
                                     "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                                     "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]
    assert control.control_text(vr).startswith("KRaftVoters {")
    unknown = control.decode_control(key(42, version=3), b"anything")
    assert (unknown["name"], unknown["key_version"], control.control_text(unknown)) == ("UNKNOWN", 3,
                                                                                         "controlType: UNKNOWN(42)")


@SETTINGS
@given(st.integers(-(2**31), 2**31 - 1), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=8),
       st.lists(st.integers(-(2**31), 2**31 - 1), max_size=8))
def test_leader_change_round_trip(leader, voters, granting):
    d = control.decode_control(key(2), leader_change(leader, voters, granting))["data"]
    assert d == {"version": 0, "leaderId": leader, "voters": [{"voterId": v} for v in voters],
                 "grantingVoters": [{"voterId": v} for v in granting]}


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**128 - 1),
                          st.lists(st.tuples(st.text(max_size=8), st.text(max_size=8), st.integers(0, 65535)),
                                   max_size=3),
                          st.integers(-5, 5), st.integers(-5, 5)), max_size=4))
def test_voters_record_round_trip(voters):
    d = control.decode_control(key(6), voters_record(voters))["data"]
    assert [(v["voterId"], v["voterDirectoryId"], [(e["name"], e["host"], e["port"]) for e in v["endpoints"]],
             v["kRaftVersionFeature"]["minSupportedVersion"], v["kRaftVersionFeature"]["maxSupportedVersion"])
            for v in d["voters"]] == [(a, uuid_str(b), c, lo, hi) for a, b, c, lo, hi in voters]


@pytest.mark.parametrize("k, v, error, field", [
    (None, end_txn(0), FormatError, "ControlRecordKey"),
    (b"\x00\x00\x01", end_txn(0), FormatError, "ControlRecordKey"),
    (key(1, version=-1), end_txn(0), FormatError, "ControlRecordKey.version"),
    (key(1), b"\x00\x00\x00", FormatError, "EndTransactionMarker"),
    (key(0), end_txn(0, version=-2), FormatError, "EndTransactionMarker.version"),
    (key(2), leader_change(1, [1, 2], [1])[:13], TruncatedFileError, "LeaderChangeMessage.voters"),
    (key(3), b"\x00\x00\x01", TruncatedFileError, "LeaderChangeMessage"),
])
def test_bad_control_records_raise_typed_errors(k, v, error, field):
    with pytest.raises(error) as e:
        control.decode_control(k, v, path="p.log", key_offset=10, value_offset=20)
    assert e.value.path == "p.log" and e.value.offset is not None
    if field != "LeaderChangeMessage":
        assert e.value.field == field


def test_control_batches_in_a_segment(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(batch(0, [(b"k", b"v"), (None, b"w")]) + batch(2, [(key(1), end_txn(4))], is_control=True)
                  + batch(3, [(key(0), end_txn(5))], is_control=True))
    assert read_batches(p, verify_crc=True)["is_control"].tolist() == [False, True, True]
    df = control.read_control_records(p)
    assert df[["offset", "name"]].values.tolist() == [[2, "COMMIT"], [3, "ABORT"]]
    assert [d["coordinatorEpoch"] for d in df["data"]] == [4, 5]
    p.write_bytes(batch(0, [(b"\x00", end_txn(4))], is_control=True))
    with pytest.raises(FormatError) as e:
        control.read_control_records(p)
    assert e.value.path == str(p) and e.value.field == "ControlRecordKey"


class _ControlBuilder(DefaultRecordBatchBuilder):
    """kafka-python builds no control batches (only brokers do): its builder with the flag set."""

    def _get_attributes(self, include_compression_type=True):
        return super()._get_attributes(include_compression_type) | self.CONTROL_MASK


def test_cross_check_with_kafka_python(tmp_path):
    b = _ControlBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=42, producer_epoch=1,
                        base_sequence=-1, batch_size=1 << 20)
    b.append(0, timestamp=1_700_000_000_000, key=key(1), value=end_txn(9), headers=[])
    data = bytes(b.build())
    theirs = DefaultRecordBatch(data)
    assert theirs.is_control_batch and theirs.validate_crc()
    (rec,) = list(theirs)
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    ours = control.read_control_records(p)
    assert read_batches(p, verify_crc=True)["is_control"].tolist() == [True]
    assert (ours["type"].iloc[0], ours["key_version"].iloc[0]) == (rec.type, rec.version)
    assert ours["name"].iloc[0] == ("COMMIT" if rec.commit else "ABORT")
    # and the reverse: kafka-python reads a batch built here field by field
    theirs = DefaultRecordBatch(batch(0, [(key(0), end_txn(1))], is_control=True))
    assert theirs.validate_crc() and [r.abort for r in theirs] == [True]


# ------------------------------------------------------------------ KRaft metadata records


def meta(api_key: int, version: int, body: bytes, frame: int = 1) -> bytes:
    return uvarint(frame) + uvarint(api_key) + uvarint(version) + body


def test_metadata_records_decode():
    topic = meta(2, 0, compact_string("orders") + uuid_bytes(9) + tags())
    assert kraft.decode_metadata_record(topic)["data"] == {"name": "orders", "topicId": uuid_str(9)}
    fl = meta(12, 0, compact_string("metadata.version") + struct.pack(">h", 20) + tags())
    assert kraft.decode_metadata_record(fl)["data"] == {"name": "metadata.version", "featureLevel": 20}
    ints = [struct.pack(">i", i) for i in (1, 2)]
    core = (struct.pack(">i", 3) + uuid_bytes(9) + compact_array(ints) + compact_array(ints[:1]) + compact_array([])
            + compact_array([]))
    epochs = struct.pack(">iii", 2, 5, 6)
    p0 = kraft.decode_metadata_record(meta(3, 0, core + epochs + tags({0: b"\x01"})))["data"]
    assert p0 == {"partitionId": 3, "topicId": uuid_str(9), "replicas": [1, 2], "isr": [1], "removingReplicas": [],
                  "addingReplicas": [], "leader": 2, "leaderRecoveryState": 1, "leaderEpoch": 5, "partitionEpoch": 6}
    elr = compact_array(ints[1:])
    p2 = kraft.decode_metadata_record(meta(3, 2, core + epochs + compact_array([uuid_bytes(1), uuid_bytes(2)])
                                           + tags({1: elr, 2: b"\x00"})))["data"]
    assert p2["directories"] == [uuid_str(1), uuid_str(2)]
    # a tagged field written at its default (null) is left out, as the JSON converter leaves it out
    assert p2["eligibleLeaderReplicas"] == [2] and "lastKnownElr" not in p2
    other = kraft.decode_metadata_record(meta(20, 0, tags()))
    assert (other["type"], other["data"]) == ("NoOpRecord", {})
    assert kraft.metadata_text(other) == '{"type":"NO_OP_RECORD","version":0,"data":{}}'
    assert kraft.decode_metadata_record(meta(99, 0, b""))["type"] is None


@pytest.mark.parametrize("value, field", [
    (meta(2, 0, b"", frame=0), "MetadataRecord.frameVersion"),
    (meta(2, 0, compact_string("t") + uuid_bytes(1) + tags() + b"\x00"), "TopicRecord.end"),
    (meta(2, 0, compact_string("t") + uuid_bytes(1)[:5]), "TopicRecord.topicId"),
    (meta(12, 1, b""), "MetadataRecord.version"),
    (b"\x01\xff\xff\xff\xff\xff", "MetadataRecord.apiKey"),
])
def test_bad_metadata_records(value, field):
    with pytest.raises(FormatError) as e:
        kraft.decode_metadata_record(value, path="m.log", offset=50)
    assert (e.value.path, e.value.field) == ("m.log", field) and e.value.offset >= 50


def test_snapshot_files_built_here(tmp_path):
    p = tmp_path / "00000000000000000042-0000000003.checkpoint"
    body = [(None, meta(12, 0, compact_string("metadata.version") + struct.pack(">h", 7) + tags())),
            (None, meta(2, 0, compact_string("t") + uuid_bytes(1) + tags()))]
    p.write_bytes(batch(0, [(key(3), snapshot_header(99))], is_control=True) + batch(1, body)
                  + batch(3, [(key(4), struct.pack(">h", 0) + tags())], is_control=True))
    s = kraft.read_kraft_snapshot(p)
    assert (s["end_offset"], s["epoch"], s["batches"], s["crc_ok"]) == (42, 3, 3, True)
    assert s["header"] == {"version": 0, "lastContainedLogTimestamp": 99} and s["footer"] == {"version": 0}
    assert s["type_counts"] == {"SNAPSHOT_HEADER": 1, "FeatureLevelRecord": 1, "TopicRecord": 1, "SNAPSHOT_FOOTER": 1}
    assert kraft.kraft_snapshot_problems(p) == []
    q = tmp_path / "00000000000000000042-0000000004.checkpoint"
    q.write_bytes(batch(1, body))
    probs = kraft.kraft_snapshot_problems(q)
    assert any("first record is FeatureLevelRecord" in x for x in probs)
    assert any("last record is TopicRecord" in x for x in probs)
    data = bytearray(p.read_bytes())
    data[-1] ^= 1
    q.write_bytes(bytes(data))
    assert any("CRC-32C mismatch" in x for x in kraft.kraft_snapshot_problems(q))
    assert kraft.parse_snapshot_name("1-1.checkpoint") is None


# ------------------------------------------------------------------ real data
#
# Each value comes from the file's README (the line quoted) or from tests/support/kafka_stdlib.py,
# a standard-library reader of batches, control records and metadata record frames that shares
# no code with rmqlab. tests/brokers/test_kafka_real_data.py also compares these files with
# kafka-dump-log's text, live.


def test_real_kraft_snapshot():
    p = require_real_data("kafka/producer-state-snapshots/__cluster_metadata-0/"
                          "00000000000000004758-0000000001.checkpoint")
    model = ks.read_batches(p)
    # README: "a KRaft metadata snapshot (named end offset 4758, epoch 1): 3 batches; the first
    # and the last are control records of type 3 and 4 (SnapshotHeader, SnapshotFooter)"
    assert len(model) == 3 and all(b["crc_ok"] for b in model)
    assert [ks.control_type(b["records"][0]["key"]) for b in (model[0], model[-1])] == [3, 4]
    s = kraft.read_kraft_snapshot(p)
    assert (s["end_offset"], s["epoch"], s["batches"], s["crc_ok"]) == (4758, 1, 3, True)
    recs = s["records"]
    flat = [r for b in model for r in b["records"]]
    assert len(recs) == len(flat) > 2
    assert recs["is_control"].tolist() == [b["is_control"] for b in model for _ in b["records"]]
    assert control.read_control_records(p)["type"].tolist() == [3, 4]
    assert recs["error"].isna().all()
    assert s["header"] == ks.decode_snapshot_header(model[0]["records"][0]["value"])
    assert s["footer"] == {"version": 0}
    assert kraft.kraft_snapshot_problems(p) == []
    want = [n for r in model[1]["records"] if (n := ks.topic_record_name(r["value"])) is not None]
    assert "__consumer_offsets" in want
    assert [d["name"] for t, d in zip(recs["type"], recs["data"]) if t == "TopicRecord"] == want
    assert s["type_counts"]["TopicRecord"] == len(want)


def test_real_bootstrap_checkpoint():
    p = require_real_data("kafka/kraft-metadata-restart/bootstrap.checkpoint")
    model = ks.read_batches(p)
    # the stdlib reader: header, one metadata record, footer
    assert [len(b["records"]) for b in model] == [1, 1, 1]
    assert [b["is_control"] for b in model] == [True, False, True]
    s = kraft.read_kraft_snapshot(p)
    assert (s["end_offset"], s["batches"]) == (None, 3)       # not named <offset>-<epoch>.checkpoint
    assert s["header"] == ks.decode_snapshot_header(model[0]["records"][0]["value"])
    assert s["footer"] == {"version": 0}
    name, level = ks.feature_level(model[1]["records"][0]["value"])
    assert s["records"]["data"].tolist()[1] == {"name": name, "featureLevel": level}
    assert kraft.kraft_snapshot_problems(p) == []


def test_real_leader_change_batches():
    p = require_real_data("kafka/kraft-metadata-restart/__cluster_metadata-0/00000000000000000000.log")
    batches = ks.read_batches(p)
    # README: "1,351 magic v2 batches, CRC-32C valid; two are control batches (type 2,
    # LeaderChange)"; "epoch 2 from offset 913" (the second leader's first record)
    assert len(batches) == 1351 and all(b["crc_ok"] for b in batches)
    model = [dict(r, is_control=b["is_control"]) for b in batches for r in b["records"]]
    ctrl = [r for r in model if r["is_control"]]
    assert [ks.control_type(r["key"]) for r in ctrl] == [2, 2] and ctrl[1]["offset"] == 913
    df = control.read_control_records(p)
    assert df["offset"].tolist() == [r["offset"] for r in ctrl]
    assert df["name"].tolist() == ["LEADER_CHANGE"] * 2
    assert df["data"].tolist() == [ks.decode_leader_change(r["value"]) for r in ctrl]
    recs = kraft.read_metadata_records(p)
    assert len(recs) == len(model) and recs["error"].isna().all()
    assert recs["offset"].tolist() == [r["offset"] for r in model]
    assert recs.loc[~recs["is_control"], "type"].notna().all()
