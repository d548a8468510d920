"""Kafka legacy message sets (magic v0 and v1) against an implementation written elsewhere.

There is no real legacy (pre-0.11) partition in ``../shared/real-data/kafka/``: every real
segment there is magic v2. The oracle here is kafka-python (``kafka.record.legacy_records``:
``LegacyRecordBatchBuilder`` writes message sets, ``LegacyRecordBatch`` / ``MemoryRecords``
read them), an independent encoder/decoder no one here wrote. Message sets it builds (magic 0
and 1, every codec a legacy message can carry) are written as segments and read with rmqlab,
every field compared; the reverse, rmqlab's writer read by kafka-python, likewise. Damage gets
typed errors naming file, offset and field. The index rule of each broker era is checked
against a model written here, a plain loop over the entries as ``LogSegment.recover`` runs.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.errors import UnsupportedCodecError
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.kafka import codecs
from rmqlab.kafka.legacy import (
    MESSAGE_V0,
    MESSAGE_V1,
    encode_message_set,
    index_rule,
    legacy_expected_entries,
    write_legacy_segment,
)
from rmqlab.kafka.log import (
    KafkaRecord,
    encode_batches,
    read_batches,
    read_legacy_records,
    read_records,
    scan_key,
    walk_batches,
)
from rmqlab.kafka.rebuild import expected_entries

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}
KP_TYPES = {None: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


def model_records(n: int, base: int, seed: int = 0) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        key = None if i % 4 == 3 else b"key-%d" % (i % 3)
        value = None if i % 7 == 5 else bytes(rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8))
        out.append((base + i, 1718000000000 + int(rng.integers(0, 5000)), key, value))
    return out


def kafka_python_set(records, magic: int, codec: int) -> bytes:
    """A message set as kafka-python's producer builds it, then as the broker stores it: a
    compressed wrapper's offset set to its last inner offset (the offset is outside the CRC)."""
    if codec == 0:
        parts = []
        for off, ts, k, v in records:
            b = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
            assert b.append(off, ts, k, v) is not None
            parts.append(bytes(b.build()))
        return b"".join(parts)
    b = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    first = records[0][0]
    for off, ts, k, v in records:
        assert b.append(off - first if magic == 1 else off, ts, k, v) is not None
    data = bytearray(b.build())
    data[0:8] = struct.pack(">q", records[-1][0])
    return bytes(data)


def kafka_python_read(data: bytes) -> list[dict]:
    """Every record kafka-python reads from a message set, with its shallow entry's position."""
    out = []
    mr = MemoryRecords(data)
    pos = 0
    while mr.has_next():
        batch = mr.next_batch()
        for r in batch:
            out.append({"batch_position": pos, "offset": r.offset, "timestamp": -1 if r.timestamp is None
                        else r.timestamp, "timestamp_type": KP_TYPES[r.timestamp_type], "magic": r.magic,
                        "key": r.key, "value": r.value, "crc": r.checksum, "crc_ok": r.validate_crc()})
        pos += batch.size_in_bytes
    return out


def rmqlab_read(source) -> list[dict]:
    df = read_legacy_records(source)
    cols = ["batch_position", "offset", "timestamp", "timestamp_type", "magic", "key", "value", "crc", "crc_ok"]
    return [dict(zip(cols, row)) for row in df[cols].itertuples(index=False, name=None)]


# ------------------------------------------------------------------------------- kafka-python -> rmqlab


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", list(CODECS))
def test_kafka_python_message_sets_read_by_rmqlab(magic, codec, tmp_path):
    """Three produce requests' message sets (LegacyRecordBatchBuilder, including magic v0 LZ4
    with its broken frame checksum) in one segment: every field of every record as
    kafka-python reads it, and the model's offsets, keys, values and timestamps."""
    groups = [model_records(5, 100, 1), model_records(1, 105, 2), model_records(9, 106, 3)]
    data = b"".join(kafka_python_set(g, magic, CODECS[codec]) for g in groups)
    path = tmp_path / "00000000000000000100.log"
    path.write_bytes(data)
    ours, theirs = rmqlab_read(path), kafka_python_read(data)
    assert ours == theirs
    flat = [r for g in groups for r in g]
    assert [(r["offset"], r["key"], r["value"]) for r in ours] == [(o, k, v) for o, _, k, v in flat]
    assert [r["timestamp"] for r in ours] == ([t for _, t, _, _ in flat] if magic else [-1] * len(flat))
    b = read_batches(path)
    assert (b["magic"] == magic).all() and b["crc_ok"].all() and (b["compression"] == codec).all()
    if codec == "none":
        assert b["base_offset"].tolist() == b["last_offset"].tolist() == [r[0] for r in flat]
    else:
        assert b["base_offset"].tolist() == [g[0][0] for g in groups]
        assert b["last_offset"].tolist() == [g[-1][0] for g in groups]
        assert b["records_count"].tolist() == [len(g) for g in groups]
    assert b["timestamp_type"].eq("NoTimestampType" if magic == 0 else "CreateTime").all()
    # read_records (the ordinary entry point) gives the same records
    r = read_records(path)
    assert r["offset"].tolist() == [x["offset"] for x in ours] and r["value"].tolist() == [x["value"] for x in ours]
    assert (r["magic"] == magic).all() and (r["headers"].map(len) == 0).all()
    assert [(b.position, b.base_offset, b.last_offset, b.crc_ok) for b in walk_batches(path)] == \
        list(b[["position", "base_offset", "last_offset", "crc_ok"]].itertuples(index=False, name=None))


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_is_not_a_legacy_codec(magic, tmp_path):
    """kafka-python refuses to build a zstd legacy set, rmqlab's writer too, and a zstd wrapper
    on disk (Kafka: "Invalid wrapper compressionType") is a FormatError at its attributes."""
    b = LegacyRecordBatchBuilder(magic, 4, 1 << 20)
    b.append(0, 1000, None, b"v")
    with pytest.raises(UnsupportedCodecError):
        b.build()
    with pytest.raises(ValueError, match="ZSTD"):
        encode_message_set([(0, 1000, None, b"v")], magic=magic, compression="zstd")
    head = MESSAGE_V1 if magic else MESSAGE_V0
    payload = codecs.compress(codecs.ZSTD, encode_message_set([(0, 1000, None, b"v")], magic=magic))
    body = struct.pack(">i", -1) + struct.pack(">i", len(payload)) + payload
    fields = (0, head.size - 12 + len(body), 0, magic, 4) + ((1000,) if magic else ())
    raw = bytearray(head.pack(*fields) + body)
    raw[12:16] = zlib.crc32(raw[16:]).to_bytes(4, "big")
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw)
    with pytest.raises(FormatError, match="ZSTD needs magic v2") as e:
        read_batches(path)
    assert (e.value.path, e.value.offset, e.value.field) == (str(path), 17, "attributes")


# ------------------------------------------------------------------------------- rmqlab -> kafka-python


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("log_append_time", [False, True])
def test_rmqlab_message_sets_read_by_kafka_python(magic, codec, log_append_time, tmp_path):
    if (magic == 0 and codec == "lz4") or (magic == 0 and log_append_time):
        with pytest.raises(ValueError):
            encode_message_set(model_records(3, 0), magic=magic, compression=codec,
                               timestamp_type="LogAppendTime" if log_append_time else "CreateTime",
                               log_append_time=1718000009999)
        return
    recs = model_records(23, 40, 7)
    kw = dict(timestamp_type="LogAppendTime", log_append_time=1718000009999) if log_append_time else {}
    path = write_legacy_segment(tmp_path, 40, recs, magic=magic, compression=codec, records_per_wrapper=6, **kw)
    data = path.read_bytes()
    theirs, ours = kafka_python_read(data), rmqlab_read(path)
    assert ours == theirs and all(r["crc_ok"] for r in theirs)
    records = read_records(path)
    for r in records.itertuples():   # plain entries: the key and value are the file's bytes there
        if codec != "none":
            assert r.key_position == r.value_position == -1
        else:
            assert data[r.key_position:r.key_position + len(r.key or b"")] == (r.key or b"")
            assert data[r.value_position:r.value_position + len(r.value or b"")] == (r.value or b"")
    assert [(r["offset"], r["key"], r["value"]) for r in theirs] == [(o, k, v) for o, _, k, v in recs]
    want_ts = [1718000009999 if log_append_time else t for _, t, _, _ in recs] if magic else [-1] * len(recs)
    assert [r["timestamp"] for r in theirs] == want_ts
    # kafka-python's shallow view: each entry's offset and CRC
    mr, b = MemoryRecords(data), read_batches(path)
    shallow = []
    while mr.has_next():
        x = mr.next_batch()
        assert isinstance(x, LegacyRecordBatch) and x.validate_crc()
        shallow.append((x.base_offset, x.magic, x.compression_type, KP_TYPES[x.timestamp_type]))
    assert shallow == list(zip(b["last_offset"], b["magic"], b["attributes"] & 7, b["timestamp_type"]))
    if codec != "none" and magic == 1 and not log_append_time:
        groups = [recs[i:i + 6] for i in range(0, len(recs), 6)]
        assert b["max_timestamp"].tolist() == [max(t for _, t, _, _ in g) for g in groups]


records_st = st.lists(st.tuples(st.integers(1, 5), st.integers(-1, 2**41),
                                st.none() | st.binary(max_size=20), st.none() | st.binary(max_size=60)),
                      min_size=1, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=records_st, magic=st.sampled_from([0, 1]), codec=st.sampled_from(list(CODECS)),
       per=st.integers(1, 8), base=st.integers(0, 2**40))
def test_contents_round_trip_both_ways(rows, magic, codec, per, base):
    """Any contents: rmqlab writes, rmqlab and kafka-python read the model back; kafka-python
    writes, rmqlab reads the model back."""
    if magic == 0 and codec == "lz4":
        codec = "gzip"
    offsets = (base + np.cumsum([g for g, _, _, _ in rows])).tolist()
    model = [(int(o), t, k, v) for o, (_, t, k, v) in zip(offsets, rows)]
    data = encode_message_set(model, magic=magic, compression=codec, records_per_wrapper=per)
    want = [(o, t if magic else -1, k, v) for o, t, k, v in model]
    ours = rmqlab_read(data)
    assert [(r["offset"], r["timestamp"], r["key"], r["value"]) for r in ours] == want
    assert ours == kafka_python_read(data)
    theirs = b"".join(kafka_python_set(model[i:i + per], magic, CODECS[codec])
                      for i in range(0, len(model), per)) if codec != "none" else kafka_python_set(model, magic, 0)
    assert [(r["offset"], r["timestamp"], r["key"], r["value"]) for r in rmqlab_read(theirs)] == want


# ------------------------------------------------------------------------------- mixed magics


def test_segment_upgraded_from_v1_to_v2(tmp_path):
    """A message-format upgrade leaves v0, v1 and v2 entries in one segment: the walk reads per
    entry, the records come out in offset order with their magic."""
    v0 = encode_message_set(model_records(4, 0, 1), magic=0, compression="gzip", records_per_wrapper=3)
    v1 = encode_message_set(model_records(5, 4, 2), magic=1, compression="snappy", records_per_wrapper=2)
    v1_plain = encode_message_set(model_records(2, 9, 3), magic=1)
    v2 = encode_batches([KafkaRecord(11 + i, 1718000100000 + i, b"key-1", b"v2-%d" % i, [("h", b"x")])
                         for i in range(6)], records_per_batch=4).data.tobytes()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(v0 + v1 + v1_plain + v2)
    b = read_batches(path)
    assert b["magic"].tolist() == [0, 0, 1, 1, 1, 1, 1, 2, 2]
    assert b["base_offset"].tolist() == [0, 3, 4, 6, 8, 9, 10, 11, 15]
    assert b["last_offset"].tolist() == [2, 3, 5, 7, 8, 9, 10, 14, 16]
    assert b["crc_ok"].all() and not b["is_transactional"].any()
    assert b["timestamp_type"].tolist() == ["NoTimestampType"] * 2 + ["CreateTime"] * 7
    r = read_records(path)
    assert r["offset"].tolist() == list(range(17))
    assert r["magic"].tolist() == [0] * 4 + [1] * 7 + [2] * 6
    assert r["headers"].tolist()[-1] == [("h", b"x")] and r["headers"].tolist()[0] == []
    assert r["compression"].tolist()[:11] == ["gzip"] * 4 + ["snappy"] * 5 + ["none"] * 2
    assert read_legacy_records(path)["offset"].tolist() == list(range(11))
    k = scan_key(path, "key-1")
    assert k["offset"].tolist() == r.loc[r["key"] == b"key-1", "offset"].tolist() == [1, 5, 8, 10] + list(range(11, 17))
    assert len(list(walk_batches(path))) == len(b)
    # kafka-python reads the same mixed segment
    theirs = []
    mr = MemoryRecords(path.read_bytes())
    while mr.has_next():
        theirs += [(x.offset, x.key, x.value) for x in mr.next_batch()]
    assert theirs == list(zip(r["offset"], r["key"], r["value"]))


# ------------------------------------------------------------------------------- damage


def fix_crc(raw: bytearray, p: int) -> None:
    size = struct.unpack_from(">i", raw, p + 8)[0]
    raw[p + 12:p + 16] = zlib.crc32(raw[p + 16:p + 12 + size]).to_bytes(4, "big")


def test_bad_crc(tmp_path):
    data = bytearray(encode_message_set(model_records(3, 0), magic=1))
    p = read_batches(bytes(data))["position"].tolist()[1]
    data[p + 30] ^= 1
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    assert read_batches(path)["crc_ok"].tolist() == [True, False, True]
    assert read_legacy_records(path)["crc_ok"].tolist() == [True, False, True]
    assert [r.validate_crc() for r in MemoryRecords(bytes(data)).__next__()] == [True]
    for call in (read_batches, read_records, lambda s, **kw: list(walk_batches(s, **kw))):
        with pytest.raises(FormatError, match="CRC-32") as e:
            call(path, verify_crc=True)
        assert (e.value.path, e.value.offset, e.value.field) == (str(path), p + 12, "crc")


def test_inner_crc_checked_when_verifying():
    inner = bytearray(encode_message_set(model_records(2, 0), magic=1))
    inner[-1] ^= 0xFF
    data = bytearray(_wrapper(bytes(inner), 1, codecs.GZIP, offset=1))
    assert read_legacy_records(bytes(data))["crc_ok"].tolist() == [True, False]
    with pytest.raises(FormatError, match="CRC-32") as e:
        read_batches(bytes(data), verify_crc=True)
    assert e.value.field.startswith("inner@") and e.value.field.endswith(".crc")


def _wrapper(payload_plain: bytes, magic: int, codec: int, *, offset: int, value: bytes | None = None,
             attributes: int | None = None) -> bytes:
    head = MESSAGE_V1 if magic else MESSAGE_V0
    value = codecs.compress(codec, payload_plain) if value is None else value
    body = struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    fields = (offset, head.size - 12 + len(body), 0, magic, codec if attributes is None else attributes) + \
        ((1000,) if magic else ())
    raw = bytearray(head.pack(*fields) + body)
    fix_crc(raw, 0)
    return bytes(raw)


def _error(tmp_path, data: bytes) -> FormatError:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    with pytest.raises(FormatError) as e:
        read_batches(path)
    with pytest.raises(FormatError) as e2:
        list(walk_batches(path))
    with pytest.raises(FormatError) as e3:
        read_records(path)
    assert e.value.path == str(path)
    assert (type(e.value), e.value.offset, e.value.field) == (type(e2.value), e2.value.offset, e2.value.field) \
        == (type(e3.value), e3.value.offset, e3.value.field)
    return e.value


def test_wrapper_with_a_bad_compressed_payload(tmp_path):
    good = encode_message_set(model_records(4, 0), magic=1)
    lead = encode_message_set(model_records(2, 0), magic=1)   # damage is named at its own entry
    w = bytearray(_wrapper(good, 1, codecs.GZIP, offset=5))
    value_at = MESSAGE_V1.size + 8
    w[value_at + 12:value_at + 20] = b"\xff" * 8
    fix_crc(w, 0)
    e = _error(tmp_path, lead + bytes(w))
    assert (e.offset, e.field) == (len(lead) + value_at, "records (compressed)") and "gzip" in str(e)


def test_nested_wrapper(tmp_path):
    inner_wrapper = _wrapper(encode_message_set(model_records(2, 0), magic=1), 1, codecs.GZIP, offset=0)
    e = _error(tmp_path, _wrapper(inner_wrapper, 1, codecs.SNAPPY, offset=3))
    assert "Inner messages must not be compressed" in str(e) and e.field == "inner@0.attributes"
    assert e.offset == MESSAGE_V1.size + 8     # the wrapper's value, whose payload holds it


def test_wrapper_offset_below_last_inner_offset(tmp_path):
    inner = encode_message_set(model_records(4, 0), magic=1)    # relative offsets 0..3
    e = _error(tmp_path, _wrapper(inner, 1, codecs.GZIP, offset=2))
    assert (e.offset, e.field) == (0, "offset")
    # a wrapper offset of 0 (some librdkafka producers) keeps the relative offsets
    assert read_legacy_records(_wrapper(inner, 1, codecs.GZIP, offset=0))["offset"].tolist() == [0, 1, 2, 3]


def test_v0_inner_offsets_a_long_apart_from_the_wrapper(tmp_path):
    # v0 inner offsets are absolute; a damaged one at Long.MIN_VALUE puts lastOffset - baseOffset
    # outside a long, which Java wraps: the batch still ends at the wrapper's offset
    inner = encode_message_set([(-2**63, -1, b"k", b"v"), (1, -1, b"k", b"w")], magic=0)
    seg = _wrapper(inner, 0, codecs.GZIP, offset=7)
    (batch,) = list(walk_batches(seg))
    assert (batch.base_offset, batch.last_offset) == (-2**63, 7)
    assert batch.last_offset_delta == 7 + 2**63 - 2**64
    assert read_legacy_records(seg)["offset"].tolist() == [-2**63, 1]


@pytest.mark.parametrize("payload,why", [(b"", "no whole message"), (b"\x00" * 11, "no whole message"),
                                         (struct.pack(">qi", 0, 3) + b"\x00" * 20, "minimum record overhead")])
def test_wrapper_payload_without_messages(tmp_path, payload, why):
    e = _error(tmp_path, _wrapper(payload, 0, codecs.SNAPPY, offset=0))
    assert why in str(e) and e.offset == MESSAGE_V0.size + 8


def test_null_wrapper_value_and_bad_lengths(tmp_path):
    raw = bytearray(_wrapper(b"", 1, codecs.GZIP, offset=0))
    raw[MESSAGE_V1.size + 4:MESSAGE_V1.size + 8] = struct.pack(">i", -1)
    raw = raw[:MESSAGE_V1.size + 8]
    raw[8:12] = struct.pack(">i", len(raw) - 12)
    fix_crc(raw, 0)
    e = _error(tmp_path, bytes(raw))
    assert "null value" in str(e) and e.field == "valueLength"
    plain = bytearray(encode_message_set([(0, 5, b"key", b"value")], magic=1))
    plain[MESSAGE_V1.size:MESSAGE_V1.size + 4] = struct.pack(">i", 99)
    fix_crc(plain, 0)
    e = _error(tmp_path, bytes(plain))
    assert (e.offset, e.field) == (MESSAGE_V1.size, "keyLength")
    small = bytearray(plain)
    small[8:12] = struct.pack(">i", 15)      # a v1 message needs 22
    e = _error(tmp_path, bytes(small) + b"\x00" * 40)
    assert (e.offset, e.field) == (8, "messageSize")


def test_truncated(tmp_path):
    data = encode_message_set(model_records(6, 0), magic=1, compression="lz4", records_per_wrapper=2)
    b = read_batches(data)
    p = int(b["position"][2])
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data[:p + 20])
    with pytest.raises(TruncatedFileError) as e:
        read_batches(path)
    assert (e.value.path, e.value.offset) == (str(path), p)
    kept = read_batches(path, torn_tail="stop")
    assert len(kept) == 2 and kept.attrs["report"].torn_tail == p
    assert read_records(path, torn_tail="stop")["offset"].tolist() == [0, 1, 2, 3]


# ------------------------------------------------------------------------------- index rule


def model_index(batches: pd.DataFrame, interval: int, broker: str, rolled: bool, appends=None):
    """LogSegment.append / recover as a loop: the broker's steps one by one."""
    major, minor, *rest = (int(x) for x in broker.split("."))
    v = (major, minor, rest[0] if rest else 0)
    rows = list(batches.itertuples(index=False))
    groups = [[r] for r in rows] if appends is None else \
        [[r for r in rows if a <= r.position < b] for a, b in zip(appends, list(appends[1:]) + [2**62])]
    offsets, times = [], []
    max_ts, max_off, last_entry = -1, -1, 0
    last_time = -1
    for g in groups:
        for r in g:
            if r.max_timestamp > max_ts:
                max_ts, max_off = r.max_timestamp, r.last_offset
        pos = g[0].position
        if pos - last_entry > interval:
            offsets.append((g[0].base_offset if v < (2, 0, 0) else g[-1].last_offset, pos))
            if v >= (0, 10, 1) and max_ts > last_time:
                times.append((max_ts, max_off))
                last_time = max_ts
            last_entry = pos
    if rolled and v >= (0, 10, 1) and max_ts > last_time:
        times.append((max_ts, max_off))
    return offsets, times


table_st = st.lists(st.tuples(st.integers(26, 3000), st.integers(1, 6), st.integers(-1, 50)), min_size=1,
                    max_size=40)


@settings(max_examples=200, deadline=None)
@given(rows=table_st, interval=st.sampled_from([0, 1, 100, 4096, 10000]),
       broker=st.sampled_from(["0.8.2.2", "0.9.0.1", "0.10.0.1", "0.10.1.0", "0.10.2.2", "1.1.1", "2.0.0", "2.8.2",
                               "3.9.0"]),
       rolled=st.booleans(), data=st.data())
def test_index_rule_matches_the_model(rows, interval, broker, rolled, data):
    sizes = np.array([r[0] for r in rows])
    counts = np.array([r[1] for r in rows])
    pos = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    last = np.cumsum(counts) - 1
    b = pd.DataFrame({"position": pos, "size": sizes, "base_offset": last - counts + 1, "last_offset": last,
                      "max_timestamp": [r[2] for r in rows]})
    appends = None
    if data.draw(st.booleans()):
        cut = data.draw(st.lists(st.sampled_from(pos[1:].tolist() or [0]), unique=True)) if len(pos) > 1 else []
        appends = sorted({0, *cut})
    offsets, times = legacy_expected_entries(b, interval, broker=broker, rolled=rolled, appends=appends)
    want_off, want_time = model_index(b, interval, broker, rolled, appends)
    assert [tuple(x) for x in offsets.tolist()] == want_off
    assert [tuple(x) for x in times.tolist()] == want_time
    if appends is None and index_rule(broker).offset_entry == "last":   # 2.0+: rebuild's v2 rule exactly
        o2, t2 = expected_entries(b, interval, rolled=rolled)
        assert np.array_equal(o2, offsets) and np.array_equal(t2, times)


def test_index_rule_of_a_written_legacy_segment(tmp_path):
    """A compressed v1 segment: before 2.0 the offset entry is a wrapper's first inner offset
    (recovery decompressed it), from 2.0 its last (the wrapper's own offset)."""
    recs = [(i, 1718000000000 + (i * 37) % 1000, b"k", bytes(300)) for i in range(200)]
    path = write_legacy_segment(tmp_path, 0, recs, magic=1, compression="none")
    gz = write_legacy_segment(tmp_path / "gz", 0, recs, magic=1, compression="gzip", records_per_wrapper=20)
    b = read_batches(gz)
    old, _ = legacy_expected_entries(b, 100, broker="0.10.2")
    new, _ = legacy_expected_entries(b, 100, broker="3.9")
    assert (old[:, 0] % 20 == 0).all() and (new[:, 0] % 20 == 19).all() and len(old) == len(new) > 0
    plain = read_batches(path)
    o, t = legacy_expected_entries(plain, 4096, broker="0.9.0.1")
    assert len(o) and len(t) == 0 and (o[:, 0] == plain.set_index("position").loc[o[:, 1], "base_offset"]).all()
    v0 = read_batches(write_legacy_segment(tmp_path / "v0", 0, recs, magic=0))
    assert len(legacy_expected_entries(v0, 4096, broker="3.9")[1]) == 0    # v0: no timestamps, no time entries


def test_index_rule_bad_arguments():
    b = pd.DataFrame({"position": [0, 50], "size": [50, 50], "base_offset": [0, 1], "last_offset": [0, 1],
                      "max_timestamp": [1, 2]})
    with pytest.raises(ValueError):
        legacy_expected_entries(b, -1)
    with pytest.raises(ValueError):
        legacy_expected_entries(b, 10, appends=[0, 7])
    with pytest.raises(ValueError):
        index_rule("new")


def _write_index_files(log, offsets, times, base: int = 0) -> None:
    """.index / .timeindex written here with struct (relative offset i32 + position i32;
    timestamp i64 + relative offset i32), sharing nothing with rmqlab's writers."""
    stem = log.with_suffix("")
    stem.with_suffix(".index").write_bytes(b"".join(struct.pack(">ii", o - base, p) for o, p in offsets))
    stem.with_suffix(".timeindex").write_bytes(b"".join(struct.pack(">qi", t, o - base) for t, o in times))


@pytest.mark.parametrize("broker, era", [("1.1.1", "0.10.1 to 1.1"), ("0.9.0.1", "0.8 to 0.10.0"),
                                         ("2.8.2", None)])
def test_verify_recognises_the_index_rule_of_the_era(tmp_path, broker, era):
    """A compressed v1 segment indexed as a broker of `broker`'s era did (the test's own loop
    model): verify passes and names the era; one damaged entry still fails."""
    from rmqlab.kafka.rebuild import verify_segment

    recs = [(i, 1718000000000 + (i * 37) % 1000, b"k", bytes(300)) for i in range(200)]
    log = write_legacy_segment(tmp_path, 0, recs, magic=1, compression="gzip", records_per_wrapper=20)
    offsets, times = model_index(read_batches(log), 100, broker, rolled=True)
    if broker.startswith("0.9"):
        times = []
    _write_index_files(log, offsets, times)
    rep = verify_segment(log, index_interval_bytes=100, rolled=True)
    assert rep.ok, rep.summary()
    named = [n for n in rep.notes if "legacy entries indexed by the rule of" in n]
    assert (era in named[0]) if era else not named
    bad = list(offsets)
    bad[1] = (bad[1][0] + 1, bad[1][1])
    _write_index_files(log, bad, times)
    rep = verify_segment(log, index_interval_bytes=100, rolled=True)
    assert not rep.ok and rep.mismatches


def test_rebuild_index_by_the_rule_of_a_release(tmp_path):
    """rebuild-index --broker-release writes what the test's loop model says that era wrote;
    verify then recognises the era."""
    from rmqlab.cli import main
    from rmqlab.kafka.index import read_offset_index, read_time_index
    from rmqlab.kafka.rebuild import verify_segment

    noise = np.random.default_rng(7)   # incompressible values: the wrappers stay ~6 KB, so entries exist
    recs = [(i, 1718000000000 + (i * 37) % 1000, b"k", noise.bytes(300)) for i in range(200)]
    log = write_legacy_segment(tmp_path / "p", 0, recs, magic=1, compression="gzip", records_per_wrapper=20)
    for broker in ("0.10.2", "0.9.0.1", "3.9"):
        out = tmp_path / broker
        assert main(["kafka", "rebuild-index", str(log), "--out", str(out), "--broker-release", broker]) == 0
        offsets, times = model_index(read_batches(log), 4096, broker, rolled=True)
        assert len(offsets) > 3
        assert read_offset_index(out / "00000000000000000000.index").tolist() == offsets
        assert read_time_index(out / "00000000000000000000.timeindex").tolist() == times
    for name in ("00000000000000000000.index", "00000000000000000000.timeindex"):
        (log.parent / name).write_bytes((tmp_path / "0.10.2" / name).read_bytes())
    rep = verify_segment(log)
    assert rep.ok and any("0.10.1 to 1.1" in n for n in rep.notes)
