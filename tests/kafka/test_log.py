"""Kafka magic v2 segments: CRC-32C in C, the batch walk, the record decoder and the writer.

Independent truth: a bitwise pure-Python CRC-32C and the RFC 3720 vectors; a small
pure-Python encoder and decoder written here from the format description (DefaultRecordBatch /
DefaultRecord / ByteUtils) sharing no code with rmqlab.kafka.log; the offsets in
DefaultRecordBatch.java; and real broker segments in ../shared/real-data/kafka (facts from its
READMEs: every batch magic v2 with a valid CRC-32C, batch counts, one LZ4 + LogAppendTime segment).
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data

from rmqlab import _crc32c
from rmqlab.errors import FormatError, RmqlabError, TruncatedFileError
from rmqlab.kafka import log as kl
from rmqlab.kafka.columns import headers_arrow
from rmqlab.kafka.log import (
    HEADER,
    KafkaRecord,
    SegmentWriter,
    encode_batches,
    read_batches,
    read_records,
    records_from_workload,
    scan_key,
    walk_batches,
    write_segment,
)

REAL = REAL_DATA / "kafka"

# --------------------------------------------------------------------------- references


def ref_crc32c(data: bytes, crc: int = 0) -> int:
    """Bitwise CRC-32C (reflected polynomial 0x82F63B78), straight from the definition."""
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF


def zigzag(v: int, bits: int) -> int:
    return ((v << 1) ^ (v >> (bits - 1))) & ((1 << bits) - 1)


def uvarint(u: int) -> bytes:
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(v: int) -> bytes:
    return uvarint(zigzag(v, 32))


def varlong(v: int) -> bytes:
    return uvarint(zigzag(v, 64))


def blob(b: bytes | None) -> bytes:
    return varint(-1) if b is None else varint(len(b)) + b


def ref_record(offset_delta: int, ts_delta: int, key, value, headers=(), attributes: int = 0) -> bytes:
    body = (bytes([attributes]) + varlong(ts_delta) + varint(offset_delta) + blob(key) + blob(value)
            + varint(len(headers)) + b"".join(varint(len(k.encode())) + k.encode() + blob(v) for k, v in headers))
    return varint(len(body)) + body


def ref_batch(base_offset, last_offset_delta, records: bytes, count, base_ts, max_ts, *, epoch=0, attributes=0,
              producer_id=-1, producer_epoch=-1, base_sequence=-1, magic=2) -> bytes:
    tail = struct.pack(">hiqqqhii", attributes, last_offset_delta, base_ts, max_ts, producer_id,
                       producer_epoch, base_sequence, count) + records
    crc = ref_crc32c(tail)
    return struct.pack(">qiibI", base_offset, 4 + 1 + 4 + len(tail), epoch, magic, crc) + tail


def ref_encode(records, rpb=1, epoch=0) -> bytes:
    """What a MemoryRecordsBuilder (CreateTime, no compression, no producer id) writes."""
    out = b""
    for i in range(0, len(records), rpb):
        grp = records[i:i + rpb]
        base, base_ts = grp[0].offset, grp[0].timestamp
        recs = b"".join(ref_record(r.offset - base, r.timestamp - base_ts, r.key, r.value, r.headers) for r in grp)
        out += ref_batch(base, grp[-1].offset - base, recs, len(grp), base_ts, max(r.timestamp for r in grp),
                         epoch=epoch)
    return out


def read_uvarint(data: bytes, p: int, limit: int):
    shift = value = 0
    while True:
        if p >= limit:
            raise ValueError("varint past end")
        b = data[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, p
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def unzigzag(u: int, bits: int) -> int:
    u &= (1 << bits) - 1
    v = (u >> 1) ^ -(u & 1)
    return v


def ref_parse(data: bytes):
    """(batches, records) of a segment, pure Python; records of uncompressed batches only."""
    batches, records = [], []
    p = 0
    while p < len(data):
        (base, length, epoch, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq,
         count) = struct.unpack_from(">qiibIhiqqqhii", data, p)
        size = length + 12
        assert magic == 2 and p + size <= len(data)
        batches.append(dict(position=p, size=size, base_offset=base, last_offset=base + lod, crc=crc,
                            crc_ok=ref_crc32c(data[p + 21:p + size]) == crc, attributes=attrs,
                            records_count=count, base_timestamp=base_ts, max_timestamp=max_ts,
                            partition_leader_epoch=epoch, producer_id=pid))
        if attrs & 7 == 0:
            q = p + 61
            for _ in range(count):
                ln, q2 = read_uvarint(data, q, p + size)
                ln = unzigzag(ln, 32)
                end = q2 + ln
                r = q2 + 1
                tsd, r = read_uvarint(data, r, end)
                od, r = read_uvarint(data, r, end)
                tsd, od = unzigzag(tsd, 64), unzigzag(od, 32)
                vals = []
                for _ in range(2):
                    n, r = read_uvarint(data, r, end)
                    n = unzigzag(n, 32)
                    vals.append(None if n < 0 else data[r:r + n])
                    r += max(n, 0)
                hc, r = read_uvarint(data, r, end)
                hs = []
                for _ in range(unzigzag(hc, 32)):
                    n, r = read_uvarint(data, r, end)
                    k = data[r:r + unzigzag(n, 32)].decode()
                    r += unzigzag(n, 32)
                    n, r = read_uvarint(data, r, end)
                    n = unzigzag(n, 32)
                    hs.append((k, None if n < 0 else data[r:r + n]))
                    r += max(n, 0)
                assert r == end
                ts = max_ts if attrs & 8 else base_ts + tsd
                records.append(dict(position=q, offset=base + od, timestamp=ts, key=vals[0], value=vals[1],
                                    headers=hs, batch_position=p))
                q = end
            assert q == p + size
        p += size
    return batches, records


# ------------------------------------------------------------------------------ CRC-32C

RFC3720 = [  # RFC 3720 B.4 CRC examples, and the common check value
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (bytes.fromhex("01c00000" "00000000" "00000000" "00000000" "14000000" "00000400" "00000014"
                   "00000018" "28000000" "00000000" "02000000" "00000000"), 0xD9963A56),
    (b"123456789", 0xE3069283),
    (b"", 0),
]


@pytest.mark.parametrize("data, expected", RFC3720)
def test_crc32c_rfc3720_vectors(data, expected):
    assert _crc32c.crc32c(data) == expected == ref_crc32c(data)
    assert kl.crc32c(data) == expected


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 300), st.integers(0, 2**32 - 1))
def test_crc32c_matches_bitwise_reference(data, cut, start):
    assert _crc32c.crc32c(data) == ref_crc32c(data)
    assert _crc32c.crc32c(data, start) == ref_crc32c(data, start)
    cut = min(cut, len(data))
    assert _crc32c.crc32c(data[cut:], _crc32c.crc32c(data[:cut])) == _crc32c.crc32c(data)


@settings(max_examples=50, deadline=None)
@given(st.binary(min_size=1, max_size=200), st.lists(st.tuples(st.integers(0, 199), st.integers(0, 199)),
                                                     max_size=10))
def test_crc32c_spans_agree_with_single_calls(data, spans):
    spans = [(min(a, len(data)), min(b, len(data) - min(a, len(data)))) for a, b in spans]
    starts = np.array([a for a, _ in spans], np.int64)
    lens = np.array([b for _, b in spans], np.int64)
    out = np.empty(len(spans), np.uint32)
    _crc32c.crc32c_spans(data, starts, lens, out)
    assert out.tolist() == [ref_crc32c(data[a:a + b]) for a, b in spans]


def test_crc32c_accepts_buffers_and_rejects_bad_arguments():
    assert _crc32c.crc32c(bytearray(b"123456789")) == 0xE3069283
    assert _crc32c.crc32c(memoryview(b"x123456789")[1:]) == 0xE3069283
    assert _crc32c.crc32c(np.frombuffer(b"123456789", np.uint8)) == 0xE3069283
    assert _crc32c.crc32c(data=b"9", crc=_crc32c.crc32c(b"12345678")) == 0xE3069283
    with pytest.raises(ValueError):
        _crc32c.crc32c(b"x", 2**32)
    with pytest.raises(ValueError):
        _crc32c.crc32c(b"x", -1)
    with pytest.raises(TypeError):
        _crc32c.crc32c("text")
    out = np.empty(1, np.uint32)
    with pytest.raises(ValueError, match="outside"):
        _crc32c.crc32c_spans(b"abc", np.array([2], np.int64), np.array([2], np.int64), out)
    with pytest.raises(ValueError):
        _crc32c.crc32c_spans(b"abc", np.array([0], np.int64), np.array([1], np.int64), np.empty(2, np.uint32))


# ------------------------------------------------------------------------------ layout


def test_header_layout_matches_default_record_batch_offsets():
    # DefaultRecordBatch.java: BASE_OFFSET_OFFSET .. RECORDS_OFFSET
    java = {"base_offset": 0, "batch_length": 8, "partition_leader_epoch": 12, "magic": 16, "crc": 17,
            "attributes": 21, "last_offset_delta": 23, "base_timestamp": 27, "max_timestamp": 35,
            "producer_id": 43, "producer_epoch": 51, "base_sequence": 53, "records_count": 57}
    assert {f.name: f.offset for f in HEADER.fields} == java
    assert HEADER.size == kl.RECORD_BATCH_OVERHEAD == 61
    assert HEADER.field("records_count").java_name == "recordsCount"
    assert "CRC-32C" in HEADER.describe()


def test_attribute_names():
    assert kl.compression_name(0x0B) == "lz4"
    assert [kl.compression_name(i) for i in range(8)] == ["none", "gzip", "snappy", "lz4", "zstd",
                                                           "unknown(5)", "unknown(6)", "unknown(7)"]
    data = ref_batch(0, 0, b"", 0, -1, 123, attributes=0x7F)
    (b,) = walk_batches(data)
    assert (b.compression, b.timestamp_type, b.is_transactional, b.is_control, b.has_delete_horizon) == \
        ("unknown(7)", "LogAppendTime", True, True, True)
    df = read_batches(data)
    assert df.loc[0, ["compression", "timestamp_type", "is_transactional", "is_control",
                      "has_delete_horizon"]].tolist() == ["unknown(7)", "LogAppendTime", True, True, True]


# ---------------------------------------------------------------------- writer round trip

headers_st = st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=8))), max_size=3)
records_st = st.lists(st.tuples(st.integers(1, 5000), st.one_of(st.just(-1), st.integers(0, 2**45)),
                                st.one_of(st.none(), st.binary(max_size=20)),
                                st.one_of(st.none(), st.binary(max_size=150)), headers_st), max_size=25)


def build(raw, first=0):
    recs, off = [], first
    for gap, ts, k, v, hs in raw:
        off += gap
        recs.append(KafkaRecord(off, ts, k, v, tuple(hs)))
    return recs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records_st, st.integers(1, 6), st.integers(-2**31, 2**31 - 1), st.integers(0, 2**40))
def test_written_batches_match_reference_and_read_back(raw, rpb, epoch, first):
    recs = build(raw, first)
    enc = encode_batches(recs, records_per_batch=rpb, partition_leader_epoch=epoch)
    data = enc.data.tobytes()
    assert data == ref_encode(recs, rpb, epoch)

    ref_b, ref_r = ref_parse(data)
    b = read_batches(data)
    assert len(b) == len(ref_b) == -(-len(recs) // rpb)
    assert b["crc_ok"].all() and all(x["crc_ok"] for x in ref_b)
    for col in ("position", "size", "base_offset", "last_offset", "crc", "records_count", "max_timestamp",
                "base_timestamp", "partition_leader_epoch", "producer_id"):
        assert b[col].tolist() == [x[col] for x in ref_b], col
    assert (b["producer_epoch"] == -1).all() and (b["base_sequence"] == -1).all()
    assert (b["compression"] == "none").all() and (b["timestamp_type"] == "CreateTime").all()
    assert enc.position.tolist() == b["position"].tolist() and enc.crc.tolist() == b["crc"].tolist()
    assert b.attrs["report"].valid_bytes == len(data) and b.attrs["report"].torn_tail is None

    r = read_records(data)
    assert r["offset"].tolist() == [x.offset for x in recs]
    assert r["timestamp"].tolist() == [x.timestamp for x in recs]
    assert r["key"].tolist() == [x.key for x in recs]
    assert r["value"].tolist() == [x.value for x in recs]
    assert r["headers"].tolist() == [list(x.headers) for x in recs]
    assert r["key_size"].tolist() == [-1 if x.key is None else len(x.key) for x in recs]
    assert r["value_size"].tolist() == [-1 if x.value is None else len(x.value) for x in recs]
    assert r["headers_count"].tolist() == [len(x.headers) for x in recs]
    assert r["position"].tolist() == [x["position"] for x in ref_r]
    assert r["batch_position"].tolist() == [x["batch_position"] for x in ref_r]
    assert (r["size"].sum() + 61 * len(b)) == len(data)


@settings(max_examples=40, deadline=None)
@given(records_st, st.integers(1, 4))
def test_column_inputs_write_the_same_bytes(raw, rpb):
    recs = build(raw)
    want = encode_batches(recs, records_per_batch=rpb).data.tobytes()
    cols = {"offset": [r.offset for r in recs], "timestamp": [r.timestamp for r in recs],
            "key": [r.key for r in recs], "value": [r.value for r in recs],
            "headers": [list(r.headers) for r in recs]}
    assert encode_batches(cols, records_per_batch=rpb).data.tobytes() == want
    assert encode_batches(pd.DataFrame(cols), records_per_batch=rpb).data.tobytes() == want
    table = pa.table({**{k: cols[k] for k in ("offset", "timestamp")},
                      "key": pa.array(cols["key"], pa.binary()), "value": pa.array(cols["value"], pa.binary()),
                      "headers": headers_arrow(cols["headers"])})
    assert encode_batches(table, records_per_batch=rpb).data.tobytes() == want
    # sliced Arrow arrays: offsets not starting at 0, null slots in the middle
    big = pa.concat_tables([table, table.slice(0, 0)])
    assert encode_batches(big.slice(0, len(recs)), records_per_batch=rpb).data.tobytes() == want
    if len(recs) > 1:
        tail = encode_batches(table.slice(1), records_per_batch=rpb).data.tobytes()
        assert tail == ref_encode(recs[1:], rpb)


def test_text_keys_values_and_offsets_from_next_offset():
    enc = encode_batches([KafkaRecord(None, 5, "clé", "välue", [("h", "x")])], next_offset=7)
    r = read_records(enc.data.tobytes())
    assert r.loc[0, ["offset", "key", "value", "headers"]].tolist() == [7, "clé".encode(), "välue".encode(),
                                                                         [("h", b"x")]]


@pytest.mark.parametrize("lockstep_min", [1, 10**9])
def test_record_walk_paths_agree(lockstep_min, monkeypatch):
    # many batches of varied sizes: the NumPy lockstep walk and the per-record walk agree
    rng = np.random.default_rng(5)
    recs = [KafkaRecord(i, int(rng.integers(0, 10**12)), bytes(rng.integers(0, 256, int(rng.integers(0, 9)), np.uint8)),
                        b"v" * int(rng.integers(0, 300)), [("k", b"1")] * int(rng.integers(0, 3)))
            for i in range(400)]
    data = b"".join(encode_batches(recs[i:i + 40], records_per_batch=n).data.tobytes()
                    for i, n in zip(range(0, 400, 40), [1, 3, 40, 7, 2, 40, 1, 13, 5, 40]))
    monkeypatch.setattr(kl, "_LOCKSTEP_MIN", lockstep_min)
    r = read_records(data)
    _, ref_r = ref_parse(data)
    assert r["offset"].tolist() == [x["offset"] for x in ref_r] == list(range(400))
    assert r["value"].tolist() == [x["value"] for x in ref_r]
    assert r["headers"].tolist() == [x["headers"] for x in ref_r]


def test_log_append_time_and_delete_horizon_timestamps():
    recs = ref_record(0, 5, b"a", b"1") + ref_record(1, 9, None, b"2")
    lat = ref_batch(10, 1, recs, 2, 1000, 777, attributes=0x08)
    horizon = ref_batch(12, 1, recs, 2, 5000, 5009, attributes=0x40)
    r = read_records(lat + horizon)
    assert r["timestamp"].tolist() == [777, 777, 5005, 5009]   # LogAppendTime: maxTimestamp
    assert r["offset"].tolist() == [10, 11, 12, 13]
    assert read_batches(lat + horizon)["has_delete_horizon"].tolist() == [False, True]


def test_empty_batch_and_empty_input():
    empty_batch = ref_batch(3, 4, b"", 0, -1, 99)   # compaction kept the header only
    b = read_batches(empty_batch)
    assert b[["base_offset", "last_offset", "records_count"]].values.tolist() == [[3, 7, 0]]
    assert len(read_records(empty_batch)) == 0
    for src in (b"", bytearray(), np.empty(0, np.uint8)):
        assert len(read_batches(src)) == 0 and len(read_records(src)) == 0
        assert list(walk_batches(src)) == []
    assert list(read_records(b"").columns) == list(kl._RECORD_COLUMNS)
    assert encode_batches([]).data.size == 0


def test_walk_batches_equals_read_batches():
    data = encode_batches([KafkaRecord(i, i, None, b"x" * i) for i in range(9)], records_per_batch=2).data
    it = walk_batches(data)
    walked = list(it)
    df = read_batches(data)
    assert [b.position for b in walked] == df["position"].tolist()
    assert [b.last_offset for b in walked] == df["last_offset"].tolist()
    assert [b.crc for b in walked] == df["crc"].tolist()
    assert [b.end for b in walked][-1] == len(data) == it.report.valid_bytes
    assert it.report.batches == 5


# ------------------------------------------------------------------------ damage


def segment(n=6, rpb=2):
    return encode_batches([KafkaRecord(i, 1000 + i, b"k%d" % i, b"value-%d" % i, [("h", b"x")]) for i in range(n)],
                          records_per_batch=rpb)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_truncation_inside_a_batch_names_its_offset(data):
    enc = segment()
    raw = enc.data.tobytes()
    cut = data.draw(st.integers(1, len(raw) - 1))
    torn = raw[:cut]
    starts = enc.position.tolist()
    if cut in starts:
        assert len(read_batches(torn)) == starts.index(cut)
        return
    at = max(p for p in starts if p < cut)
    with pytest.raises(TruncatedFileError) as e:
        read_batches(torn)
    assert e.value.offset == at
    with pytest.raises(TruncatedFileError) as e2:
        list(walk_batches(torn))
    assert e2.value.offset == at
    with pytest.raises(TruncatedFileError):
        read_records(torn)
    df = read_batches(torn, torn_tail="stop")
    assert df["position"].tolist() == [p for p in starts if p < at]
    assert df.attrs["report"].torn_tail == at and df.attrs["report"].valid_bytes == at
    it = walk_batches(torn, torn_tail="stop")
    assert len(list(it)) == len(df) and it.report.torn_tail == at
    assert len(read_records(torn, torn_tail="stop")) == sum(enc.records_count[:len(df)])


def test_truncated_file_error_names_the_file(tmp_path):
    raw = segment().data.tobytes()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw[:-3])
    with pytest.raises(TruncatedFileError) as e:
        read_batches(path)
    assert e.value.path == str(path) and e.value.offset == segment().position[-1]
    assert str(path) in str(e.value) and "offset" in str(e.value) and "batchLength" in str(e.value)


def test_zero_tail_is_a_torn_tail():
    raw = segment().data.tobytes()
    for pad in (5, 17, 300):
        with pytest.raises(TruncatedFileError, match="zero bytes") as e:
            read_batches(raw + bytes(pad))
        assert e.value.offset == len(raw)
        assert len(read_batches(raw + bytes(pad), torn_tail="stop")) == 3


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_flipped_byte_fails_the_crc(data):
    enc = segment()
    raw = bytearray(enc.data.tobytes())
    i = data.draw(st.integers(0, len(enc.position) - 1))
    p, size = int(enc.position[i]), int(enc.size[i])
    at = data.draw(st.integers(p + kl.CRC_START, p + size - 1))
    raw[at] ^= data.draw(st.integers(1, 255))
    try:
        df = read_batches(bytes(raw))
    except FormatError:
        # the flip hit a field the walk needs? only records_count etc. are past the CRC: never
        raise
    assert df["crc_ok"].tolist() == [j != i for j in range(len(enc.position))]
    with pytest.raises(FormatError) as e:
        read_batches(bytes(raw), verify_crc=True)
    assert (e.value.field, e.value.offset) == ("crc", p + 17)
    with pytest.raises(FormatError, match="CRC"):
        list(walk_batches(bytes(raw), verify_crc=True))
    with pytest.raises(FormatError):
        read_records(bytes(raw), verify_crc=True)


def test_crc_field_itself_damaged():
    raw = bytearray(segment().data.tobytes())
    raw[17] ^= 1
    assert read_batches(bytes(raw))["crc_ok"].tolist() == [False, True, True]


@pytest.mark.parametrize("magic", [3, -1, 127])
def test_magic_other_than_0_1_2_is_a_format_error(magic):
    raw = bytearray(segment().data.tobytes())
    p = int(segment().position[1])
    raw[p + 16] = magic & 0xFF
    with pytest.raises(FormatError, match="not a Kafka log format") as e:
        read_batches(bytes(raw))
    assert not isinstance(e.value, TruncatedFileError)
    assert (e.value.field, e.value.offset) == ("magic", p + 16)
    with pytest.raises(FormatError, match="v2"):
        list(walk_batches(bytes(raw)))


@pytest.mark.parametrize("magic", [0, 1])
def test_v2_bytes_read_as_a_legacy_message_do_not_pass(magic):
    """A v2 batch whose magic byte says 0 or 1 is walked as a legacy message (as
    FileLogInputStream does); its v2 fields do not make a valid message: an error or a bad CRC-32."""
    raw = bytearray(segment().data.tobytes())
    p = int(segment().position[1])
    raw[p + 16] = magic
    try:
        b = read_batches(bytes(raw))
    except FormatError as e:
        assert e.offset is not None and p <= e.offset < p + int(segment().size[1])
    else:
        assert b["crc_ok"].tolist() == [True, False, True] and b["magic"].tolist() == [2, magic, 2]


def test_batch_length_below_header():
    raw = bytearray(segment().data.tobytes())
    raw[8:12] = struct.pack(">i", 48)
    with pytest.raises(FormatError) as e:
        read_batches(bytes(raw))
    assert (e.value.field, e.value.offset) == ("batchLength", 8)


def bad_batch(records: bytes, count: int) -> bytes:
    return ref_batch(0, max(count - 1, 0), records, count, 0, 0)


good = ref_record(0, 0, b"k", b"v", [("a", b"b")])


@pytest.mark.parametrize("records, count, field, where", [
    (good + good, 1, "record[1]", 61 + len(good)),                      # records still remaining
    (good, 2, "record[1].length", 61 + len(good)),                       # premature EOF
    (b"\xff" * 6, 1, "record[0].length", 61),                            # varint too long
    (varint(-3) + good[1:], 1, "record[0].length", 61),                  # negative length
    (varint(400) + good[1:], 1, "record[0].length", 61),                 # runs past the batch
    (varint(2) + b"\x00" + b"\x80", 1, "record[0].timestampDelta", 63),  # varint past record end
    (varint(12) + b"\x00" + b"\xff" * 11, 1, "record[0].timestampDelta", 63),   # varlong > 10 bytes
    (varint(5) + b"\x00\x00\x00" + varint(9) + b"k", 1, "record[0].key", 66),  # key past end
    (varint(7) + b"\x00\x00\x00" + varint(-1) + varint(-1) + varint(0) + b"\x00", 1, "record[0].length", 68),
    (varint(6) + b"\x00\x00\x00\x01\x01" + varint(-2), 1, "record[0].headersCount", 67),
    (varint(6) + b"\x00\x00\x00\x01\x01" + varint(9), 1, "record[0].headersCount", 67),
    (varint(8) + b"\x00\x00\x00\x01\x01" + varint(1) + varint(-1) + b"\x00", 1,
     "record[0].header[0].headerKeyLength", 68),
    (varint(8) + b"\x00\x00\x00\x01\x01" + varint(1) + varint(3) + b"\x00", 1, "record[0].header[0].headerKey", 69),
    (varint(9) + b"\x00\x00\x00\x01\x01" + varint(1) + varint(0) + varint(4) + b"x", 1,
     "record[0].header[0].headerValue", 70),
    (varint(0), 1, "record[0].attributes", 62),
])
def test_bad_records_raise_typed_errors(records, count, field, where):
    data = bad_batch(records, count)
    with pytest.raises(FormatError) as e:
        read_records(data)
    assert (e.value.field, e.value.offset) == (field, where), str(e.value)
    assert "batch at 0" in str(e.value)
    assert read_batches(data)["crc_ok"].all()     # the batch itself is intact


def test_negative_key_and_value_lengths_read_as_null():
    rec = varint(6) + b"\x00\x00\x00" + varint(-5) + varint(-9) + varint(0)
    r = read_records(bad_batch(rec, 1))
    assert r.loc[0, ["key", "key_size", "value", "value_size"]].tolist() == [None, -1, None, -1]


def test_negative_records_count_and_huge_count_are_bounded():
    with pytest.raises(FormatError, match="negative recordsCount") as e:
        read_records(bad_batch(good, -1))
    assert (e.value.field, e.value.offset) == ("recordsCount", 57)
    with pytest.raises(FormatError, match="premature EOF"):
        read_records(bad_batch(good * 3, 2**31 - 1))


def test_compressed_batches_skipped_on_request_else_decoded():
    lz4 = ref_batch(5, 2, b"\x04\x22\x4d\x18garbage", 3, 1, 9, attributes=0x0B)
    plain = encode_batches([KafkaRecord(8, 3, None, b"x")]).data.tobytes()
    r = read_records(lz4 + plain, compressed="skip")
    assert r["offset"].tolist() == [8] and r.attrs["skipped_batches"] == [0]
    with pytest.raises(FormatError, match="lz4 payload") as e:
        read_records(lz4 + plain)
    assert (e.value.offset, e.value.field) == (61, "records (compressed)")
    with pytest.raises(ValueError, match="compressed must be"):
        read_records(plain, compressed="raise")


def test_error_inside_a_damaged_batch_mentions_the_crc():
    raw = bytearray(bad_batch(good, 1))
    raw[61] = 0x7F   # record length now runs past the batch
    with pytest.raises(FormatError, match="CRC-32C of the batch at 0 does not verify"):
        read_records(bytes(raw))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_random_damage_raises_only_typed_errors(data):
    raw = bytearray(segment(7, 3).data.tobytes())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    try:
        read_records(bytes(raw[:cut]))
    except RmqlabError as e:
        assert e.offset is not None and e.field
    try:
        read_batches(bytes(raw[:cut]), verify_crc=True)
    except RmqlabError:
        pass


# ------------------------------------------------------------------------ writer


def test_segment_writer_appends_and_resumes(tmp_path):
    with SegmentWriter(tmp_path, 50, records_per_batch=2, partition_leader_epoch=3) as w:
        e1 = w.append([KafkaRecord(None, 1, None, b"a"), KafkaRecord(None, 2, None, b"b"),
                       KafkaRecord(None, 3, None, b"c")])
        assert e1.base_offset.tolist() == [50, 52] and w.next_offset == 53
    with SegmentWriter(tmp_path, 50, records_per_batch=2) as w:
        assert w.next_offset == 53 and w.position == w.path.stat().st_size
        e2 = w.append({"timestamp": [4, 5], "value": [b"d", b"e"]})
        assert e2.position.tolist() == [e1.position[-1] + e1.size[-1]]
        with pytest.raises(ValueError, match="below the next offset"):
            w.append([KafkaRecord(10, 1, None, b"x")])
    b = read_batches(w.path, verify_crc=True)
    assert b["partition_leader_epoch"].tolist() == [3, 3, 0]
    assert read_records(w.path)["offset"].tolist() == [50, 51, 52, 53, 54]
    assert w.path.name == "00000000000000000050.log"


def test_writer_refuses_torn_segment_and_overwrite(tmp_path):
    p = write_segment(tmp_path, 0, [KafkaRecord(0, 1, None, b"a"), KafkaRecord(1, 1, None, b"b")])
    with pytest.raises(FileExistsError):
        write_segment(tmp_path, 0, [KafkaRecord(5, 1, None, b"c")])
    p.write_bytes(p.read_bytes()[:-1])
    with pytest.raises(TruncatedFileError) as e:
        SegmentWriter(tmp_path, 0)
    assert e.value.offset == read_batches(p, torn_tail="stop").attrs["report"].valid_bytes


@pytest.mark.parametrize("records, match", [
    ([KafkaRecord(1, 1, None, b"a"), KafkaRecord(1, 1, None, b"b")], "increase strictly"),
    ([KafkaRecord(0, -2, None, b"a")], "negative timestamp"),
    ([KafkaRecord(0, 1, None, b"a", [(None, b"x")])], "header key"),
    ({"timestamp": [1]}, "'value'"),
    ({"value": [b"x"]}, "'timestamp'"),
    ([KafkaRecord(0, 1, None, b"a"), KafkaRecord(2**31, 1, None, b"b")], "2\\*\\*31"),
])
def test_writer_rejects_bad_records(records, match):
    with pytest.raises(ValueError, match=match):
        encode_batches(records, records_per_batch=2)


def test_writer_rejects_bad_arguments():
    with pytest.raises(ValueError):
        encode_batches([], records_per_batch=0)
    with pytest.raises(ValueError):
        encode_batches([], partition_leader_epoch=2**31)
    with pytest.raises(TypeError):
        encode_batches({"timestamp": [1], "value": pa.array([1], pa.int64())})


def test_workload_to_segment_round_trip(tmp_path):
    from rmqlab.lab.workload import Workload, generate, generate_chunks

    w = Workload(messages=1500, seed=11, rate=500.0)
    whole = generate(w)
    with SegmentWriter(tmp_path, 0, records_per_batch=4) as sw:
        for chunk in generate_chunks(w, chunk_messages=600):
            sw.append(records_from_workload(chunk, header_columns=["tags", "uniq_key", "queue_id"]))
    r = read_records(sw.path)
    n = whole.num_rows
    assert r["offset"].tolist() == list(range(n))
    assert r["timestamp"].tolist() == whole.column("store_timestamp").to_pylist()
    assert r["value"].tolist() == whole.column("body").to_pylist()
    assert r["key"].tolist() == [None if k is None else k.encode() for k in whole.column("keys").to_pylist()]
    tags, uniq, qid = (whole.column(c).to_pylist() for c in ("tags", "uniq_key", "queue_id"))
    want_headers = [[(name, str(v).encode()) for name, v in (("tags", t), ("uniq_key", u), ("queue_id", q))
                     if v is not None] for t, u, q in zip(tags, uniq, qid)]
    assert r["headers"].tolist() == want_headers
    b = read_batches(sw.path, verify_crc=True)
    assert b["records_count"].sum() == n
    assert (b["base_offset"].to_numpy()[1:] == b["last_offset"].to_numpy()[:-1] + 1).all()

    # scan_key agrees with filtering the decoded records
    key = next(k for k in whole.column("keys").to_pylist() if k is not None)
    hits = scan_key(sw.path, key)
    assert hits["offset"].tolist() == r.index[r["key"] == key.encode()].tolist()
    assert (hits["key"] == key.encode()).all() and "value" not in hits.columns
    assert len(scan_key(sw.path, b"no such key")) == 0


def test_records_from_workload_options():
    from rmqlab.lab.workload import Workload, generate

    t = generate(Workload(messages=200, seed=2, topics=("A", "B")))
    r = records_from_workload(t, topic="B", base_offset=1000, timestamp="born_timestamp")
    sel = [i for i, x in enumerate(t.column("topic").to_pylist()) if x == "B"]
    assert r.column("offset").to_pylist() == list(range(1000, 1000 + len(sel)))
    born = t.column("born_timestamp").to_pylist()
    assert r.column("timestamp").to_pylist() == [born[i] for i in sel]
    q = records_from_workload(t, queue_id=0)
    assert q.num_rows == sum(1 for x in t.column("queue_id").to_pylist() if x == 0)
    assert "headers" not in r.column_names
    assert read_records(encode_batches(r).data.tobytes())["offset"].iloc[0] == 1000


# ------------------------------------------------------------------------ real segments

# Batch counts, first and last offsets from the READMEs next to the data (None: the README does
# not say; every batch and record is also compared with ref_parse above, a struct reader of the
# file written here). LDI-POC: "13 batches (offsets 0..12)"; flink-on-prem's table: 10, 10, 4,
# 435, 7 ("last batch holds offsets 6..7") and 487 batches; kafka-0.11.0: "11 single-record
# magic-2 batches (offsets 0..10)", mac_test-0 "0 bytes"; kafka-2.7.1: "1 batch (offset 0)" and
# "2 batches"; idempotent-gzip: "14 magic v2 batches"; kraft-metadata-restart: "1,351 magic v2
# batches" and "epoch 1 from offset 0".
REAL_FACTS = {
    "LDI-POC/__consumer_offsets-6/00000000000000000000.log": (13, 0, 12),
    "flink-on-prem/_schemas-0/00000000000000000000.log": (10, None, None),
    "flink-on-prem/__consumer_offsets-34/00000000000000000000.log": (10, None, None),
    "flink-on-prem/__consumer_offsets-28/00000000000000000000.log": (4, None, None),
    "flink-on-prem/connect-offsets-14/00000000000000000000.log": (435, None, None),
    "flink-on-prem/connect-status-1/00000000000000000000.log": (7, None, 7),
    "flink-on-prem/_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0/00000000000000000000.log":
        (487, None, None),
    "kafka-0.11.0/test0-0/00000000000000000000.log": (11, 0, 10),
    "kafka-0.11.0/mac_test-0/00000000000000000078.log": (0, None, None),
    "kafka-2.7.1/__consumer_offsets-17/00000000000000000000.log": (1, 0, 0),
    "kafka-2.7.1/__consumer_offsets-17/00000000000000000001.log": (2, None, None),
    "idempotent-gzip/lsx1-0/00000000000000000000.log": (14, 0, None),
    "kraft-metadata-restart/__cluster_metadata-0/00000000000000000000.log": (1351, 0, None),
}
LZ4 = "flink-on-prem/_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0/00000000000000000000.log"
GZIP = "idempotent-gzip/lsx1-0/00000000000000000000.log"


def assert_payload_positions(raw: bytes, records: pd.DataFrame) -> None:
    """The key and value of each record of a plain batch are the file's bytes at the positions
    read_records gives; a compressed batch's records have no such bytes (-1)."""
    for r in records.itertuples():
        for name in ("key", "value"):
            at, size, want = getattr(r, f"{name}_position"), getattr(r, f"{name}_size"), getattr(r, name)
            if r.position < 0:
                assert at == -1
            elif want is not None:
                assert raw[at:at + size] == want, (r.offset, name)


def real(rel: str) -> Path:
    return require_real_data(REAL / rel)


@pytest.mark.realdata
@pytest.mark.parametrize("rel", sorted(REAL_FACTS))
def test_real_segment(rel):
    path = real(rel)
    raw = path.read_bytes()
    n_batches, first, last = REAL_FACTS[rel]
    b = read_batches(path, verify_crc=True)
    rep = b.attrs["report"]
    assert len(b) == n_batches
    assert rep.valid_bytes == len(raw) == rep.file_size and rep.torn_tail is None   # no trailing bytes
    assert b["crc_ok"].all() and (b["magic"] == 2).all()
    ref_b, ref_r = ref_parse(raw)
    for col in ("position", "size", "base_offset", "last_offset", "crc", "records_count", "attributes",
                "base_timestamp", "max_timestamp", "partition_leader_epoch", "producer_id"):
        assert b[col].tolist() == [x[col] for x in ref_b], col
    assert all(x["crc_ok"] for x in ref_b)       # the bitwise reference agrees with every stored CRC
    assert b["crc"].tolist() == [_crc32c.crc32c(raw[p + 21:p + s]) for p, s in zip(b["position"], b["size"])]
    if n_batches:
        base_of_file = int(path.name.split(".")[0])
        lo, hi = b["base_offset"].to_numpy(), b["last_offset"].to_numpy()
        assert lo[0] >= base_of_file
        assert (lo <= hi).all() and (lo[1:] > hi[:-1]).all()     # strictly increasing (compaction may leave gaps)
        if first is not None:
            assert lo[0] == first
        if last is not None:
            assert hi[-1] == last
    r = read_records(path, compressed="skip")
    plain = b[b["compression"] == "none"]
    assert len(r) == plain["records_count"].sum() == len(ref_r)
    assert len(read_records(path)) == b["records_count"].sum()      # compressed batches decoded too
    for col in ("position", "offset", "timestamp", "key", "value", "headers", "batch_position"):
        assert r[col].tolist() == [x[col] for x in ref_r], col
    assert_payload_positions(raw, read_records(path))
    if len(r):
        assert r["offset"].is_monotonic_increasing and r["offset"].is_unique
        lo_of = dict(zip(b["position"], b["base_offset"]))
        hi_of = dict(zip(b["position"], b["last_offset"]))
        assert all(lo_of[p] <= o <= hi_of[p] for p, o in zip(r["batch_position"], r["offset"]))
    walked = list(walk_batches(path, verify_crc=True))
    assert [x.position for x in walked] == b["position"].tolist()


@pytest.mark.realdata
def test_real_contiguous_offsets_where_documented():
    for rel in ("LDI-POC/__consumer_offsets-6/00000000000000000000.log",
                "kafka-0.11.0/test0-0/00000000000000000000.log"):
        b = read_batches(real(rel))
        assert (b["base_offset"].to_numpy()[1:] == b["last_offset"].to_numpy()[:-1] + 1).all()
        assert b["last_offset"].tolist() == list(range(len(b)))


@pytest.mark.realdata
def test_real_lz4_log_append_time_segment():
    path = real(LZ4)
    b = read_batches(path)
    assert (b["compression"] == "lz4").all() and (b["timestamp_type"] == "LogAppendTime").all()
    assert (b["attributes"] == 0x0B).all()
    r = read_records(path, compressed="skip")
    assert len(r) == 0 and r.attrs["skipped_batches"] == b["position"].tolist()
    r = read_records(path)
    assert len(r) == b["records_count"].sum() and r.attrs["skipped_batches"] == []
    assert (r["position"] == -1).all()
    # LogAppendTime: every record carries its batch's maxTimestamp
    max_ts = dict(zip(b["position"], b["max_timestamp"]))
    assert r["timestamp"].tolist() == [max_ts[p] for p in r["batch_position"]]


@pytest.mark.realdata
def test_real_connect_status_last_batch():
    # README: the last batch holds offsets 6..7, both at timestamp 1713541794161
    r = read_records(real("flink-on-prem/connect-status-1/00000000000000000000.log"))
    last = r[r["batch_position"] == r["batch_position"].max()]
    assert last["offset"].tolist() == [6, 7]
    assert last["timestamp"].tolist() == [1713541794161, 1713541794161]


@pytest.mark.realdata
def test_real_damage(tmp_path):
    path = real("flink-on-prem/connect-offsets-14/00000000000000000000.log")
    raw = path.read_bytes()
    b = read_batches(path)
    i = len(b) // 2
    p, size = int(b["position"][i]), int(b["size"][i])
    flipped = bytearray(raw)
    flipped[p + size - 2] ^= 0x20
    assert read_batches(bytes(flipped))["crc_ok"].tolist() == [j != i for j in range(len(b))]
    with pytest.raises(FormatError) as e:
        read_batches(bytes(flipped), verify_crc=True)
    assert (e.value.field, e.value.offset) == ("crc", p + 17)
    # truncated mid-batch (a copy in a temporary folder, never in the repository)
    torn = tmp_path / path.name
    torn.write_bytes(raw[:p + size // 2])
    with pytest.raises(TruncatedFileError) as e:
        read_batches(torn)
    assert e.value.offset == p and e.value.path == str(torn)
    kept = read_batches(torn, torn_tail="stop")
    assert len(kept) == i and kept.attrs["report"].torn_tail == p
    with pytest.raises(TruncatedFileError):
        read_records(torn)
    # a magic byte that is no Kafka format is refused
    legacy = bytearray(raw)
    legacy[p + 16] = 5
    with pytest.raises(FormatError, match="not a Kafka log format"):
        read_batches(bytes(legacy))


@pytest.mark.realdata
@pytest.mark.parametrize("rel", sorted(k for k, v in REAL_FACTS.items() if v[0] and k not in (LZ4, GZIP)))
def test_real_segment_rewritten_by_the_writer(rel, tmp_path):
    # (the compressed ones aside: another compressor's bytes need not be the Java client's)
    # The records of a real segment, written again with the same batching, are the broker's
    # bytes once the header fields a producer sets differently are copied over (the group
    # coordinator writes baseSequence 0, for example) and the CRC recomputed by the reference.
    path = real(rel)
    raw = path.read_bytes()
    r = read_records(path)
    b = read_batches(path)
    recs = [KafkaRecord(o, t, k, v, h) for o, t, k, v, h in
            zip(r["offset"], r["timestamp"], r["key"], r["value"], r["headers"])]
    out = write_segment(tmp_path, int(path.name.split(".")[0]), recs, records_per_batch=b["records_count"].tolist())
    again = read_records(out)
    for col in ("offset", "timestamp", "key", "value", "headers"):
        assert again[col].tolist() == r[col].tolist()
    rebuilt = bytearray(out.read_bytes())
    assert len(rebuilt) == len(raw)
    producer_like = ((b["producer_id"] == -1) & (b["producer_epoch"] == -1) & (b["base_sequence"] == -1)
                     & (b["partition_leader_epoch"] == 0) & (b["attributes"] == 0)).all()
    assert (bytes(rebuilt) == raw) == bool(producer_like)
    for p, size, pid, pep, seq, ple, attrs in zip(*(b[c].tolist() for c in (
            "position", "size", "producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch",
            "attributes"))):
        struct.pack_into(">i", rebuilt, p + 12, ple)
        struct.pack_into(">h", rebuilt, p + 21, attrs)
        struct.pack_into(">qhi", rebuilt, p + 43, pid, pep, seq)
        struct.pack_into(">I", rebuilt, p + 17, ref_crc32c(bytes(rebuilt[p + 21:p + size])))
    assert bytes(rebuilt) == raw
