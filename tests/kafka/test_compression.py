"""Compressed magic v2 batches, checked against kafka-python (an implementation no one here wrote).

kafka-python's ``DefaultRecordBatchBuilder`` writes batches that rmqlab reads, rmqlab's
writer writes batches that kafka-python's ``MemoryRecords`` reads, for every codec, with and
without transactions, headers, null keys and values and LogAppendTime; every field is compared.
Then the real lz4 and gzip segments, and damage (a corrupt payload, a wrong recordsCount, offset
deltas that disagree with the header) that must raise FormatError naming file, offset and field.
"""
from __future__ import annotations

import struct

import kafka.record.default_records as kafka_records  # kafka-python: the dev extra's independent reader
import kafka.record.memory_records as memory_records
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import require_real_data

from rmqlab._crc32c import crc32c
from rmqlab.errors import FormatError
from rmqlab.kafka import log as kl
from rmqlab.kafka.log import KafkaRecord, compressed_batch_problems, encode_batches, read_batches, read_records

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
LZ4_REAL = "kafka/flink-on-prem/_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0"
GZIP_REAL = "kafka/idempotent-gzip/lsx1-0"


# ------------------------------------------------------------------------------ helpers


def fix_header(batch: bytearray, *, base_offset: int, leader_epoch: int = 0, log_append_time: int | None = None,
               last_offset_delta: int | None = None, records_count: int | None = None) -> bytes:
    """A built batch placed at `base_offset` (the builder writes 0, as a producer does; the
    broker sets it), optionally made LogAppendTime, with its CRC-32C recomputed."""
    struct.pack_into(">q", batch, 0, base_offset)
    struct.pack_into(">i", batch, 12, leader_epoch)
    if log_append_time is not None:
        attrs = struct.unpack_from(">h", batch, 21)[0] | kl.TIMESTAMP_TYPE_MASK
        struct.pack_into(">h", batch, 21, attrs)
        struct.pack_into(">q", batch, 35, log_append_time)
    if last_offset_delta is not None:
        struct.pack_into(">i", batch, 23, last_offset_delta)
    if records_count is not None:
        struct.pack_into(">i", batch, 57, records_count)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def kp_batch(records, codec: str, *, transactional=False, producer=(-1, -1, -1), offsets=None) -> bytearray:
    """One batch built by kafka-python; records are (timestamp, key, value, headers)."""
    pid, epoch, seq = (7, 3, 11) if transactional else producer
    b = kafka_records.DefaultRecordBatchBuilder(magic=2, compression_type=CODECS[codec],
                                                is_transactional=transactional, producer_id=pid,
                                                producer_epoch=epoch, base_sequence=seq, batch_size=1 << 30)
    for i, (ts, key, value, headers) in enumerate(records):
        assert b.append(offsets[i] if offsets else i, ts, key, value, list(headers)) is not None
    return b.build()


def kp_read(data: bytes):
    """(batches, records) as kafka-python's MemoryRecords reads them."""
    mr = memory_records.MemoryRecords(data)
    batches, records = [], []
    while True:
        b = mr.next_batch()
        if b is None:
            break
        assert b.validate_crc()
        batches.append(dict(base_offset=b.base_offset, last_offset=b.last_offset, records_count=b.records_count,
                            attributes=b.attributes, base_timestamp=b.first_timestamp,
                            max_timestamp=b.max_timestamp, producer_id=b.producer_id,
                            producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
                            partition_leader_epoch=b.leader_epoch, crc=b.crc,
                            compression=kl.compression_name(b.compression_type),
                            is_transactional=b.is_transactional, is_control=b.is_control_batch))
        for r in b:
            records.append(dict(offset=r.offset, timestamp=r.timestamp, key=r.key, value=r.value,
                                headers=[(k, v) for k, v in r.headers]))
    return batches, records


def rmq_read(source):
    b = read_batches(source, verify_crc=True)
    r = read_records(source, verify_crc=True)
    batches = [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
               for row in b.to_dict(orient="records")]
    records = [dict(offset=int(x.offset), timestamp=int(x.timestamp), key=x.key, value=x.value,
                    headers=list(x.headers)) for x in r.itertuples()]
    return batches, records, r


def assert_same(data: bytes):
    """rmqlab and kafka-python read `data` identically: every batch header field, every record."""
    kb, kr = kp_read(data)
    rb, rr, frame = rmq_read(data)
    assert len(kb) == len(rb)
    for k, r in zip(kb, rb):
        for col, want in k.items():
            assert r[col] == want, (col, r[col], want)
    assert rr == kr
    assert len(frame) == sum(b["records_count"] for b in rb)
    comp = frame["batch_position"].map({b["position"]: b["compression"] != "none" for b in rb})
    assert ((frame["position"] == -1) == comp).all()


# ------------------------------------------------------------------------------ strategies

blob = st.one_of(st.none(), st.binary(max_size=40), st.sampled_from([b"", b"abc" * 30, bytes(200)]))
header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=12)))
record = st.tuples(st.integers(0, 10**6), blob, blob, st.lists(header, max_size=3))
batch_spec = st.tuples(st.lists(record, min_size=1, max_size=12), st.sampled_from(sorted(CODECS)), st.booleans(),
                       st.one_of(st.none(), st.integers(0, 2**41)))


# ------------------------------------------------------------------------------ (a) kafka-python -> rmqlab


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("transactional", [False, True])
@pytest.mark.parametrize("log_append_time", [None, 1718000009999])
def test_kafka_python_batches_read_by_rmqlab(codec, transactional, log_append_time):
    recs = [(1718000000000 + 3 * i, None if i % 3 == 0 else b"key-%d" % i, None if i == 4 else b"value " * (i + 5),
             [("trace", b"t%d" % i), ("empty", None)] if i % 2 else []) for i in range(9)]
    segment = b""
    base = 1000
    for part in (recs[:4], recs[4:], recs[6:7]):
        raw = kp_batch(part, codec, transactional=transactional)
        segment += fix_header(raw, base_offset=base, leader_epoch=5, log_append_time=log_append_time)
        base += len(part)
    b = read_batches(segment)
    assert (b["compression"] == codec).all()            # compressible: kafka-python kept the codec
    assert b["is_transactional"].tolist() == [transactional] * 3
    assert_same(segment)
    r = read_records(segment)
    assert r["offset"].tolist() == list(range(1000, 1009)) + [1009]
    if log_append_time:
        assert (r["timestamp"] == log_append_time).all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(batch_spec, min_size=1, max_size=4), leader_epoch=st.integers(0, 2**31 - 1),
       first=st.integers(0, 2**40))
def test_kafka_python_segments_match_rmqlab(specs, leader_epoch, first):
    segment, base = b"", first
    for recs, codec, transactional, lat in specs:
        raw = kp_batch(recs, codec, transactional=transactional)
        segment += fix_header(raw, base_offset=base, leader_epoch=leader_epoch, log_append_time=lat)
        base += len(recs) + 3      # gaps between batches, as compaction leaves them
    assert_same(segment)


# ------------------------------------------------------------------------------ (b) rmqlab -> kafka-python


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=st.lists(record, min_size=1, max_size=25), codec=st.sampled_from(sorted(CODECS)),
       per=st.integers(1, 9), first=st.integers(0, 2**40))
def test_rmqlab_batches_read_by_kafka_python(recs, codec, per, first):
    records = [KafkaRecord(None, ts, k, v, h) for ts, k, v, h in recs]
    enc = encode_batches(records, records_per_batch=per, compression=codec, next_offset=first)
    data = enc.data.tobytes()
    kb, kr = kp_read(data)
    assert [b["compression"] for b in kb] == [codec] * len(kb)
    assert [b["records_count"] for b in kb] == enc.records_count.tolist()
    assert [b["base_offset"] for b in kb] == enc.base_offset.tolist()
    assert [b["crc"] for b in kb] == enc.crc.tolist()
    want = [dict(offset=first + i, timestamp=ts, key=k, value=v, headers=list(h)) for i, (ts, k, v, h) in
            enumerate(recs)]
    assert kr == want
    assert_same(data)


@pytest.mark.parametrize("codec", [c for c in CODECS if c != "none"])
def test_writers_take_compression(tmp_path, codec):
    recs = [KafkaRecord(None, 10 * i, b"k", b"payload %d" % i) for i in range(7)]
    path = kl.write_segment(tmp_path / "w", 50, recs, records_per_batch=3, compression=codec)
    with kl.SegmentWriter(tmp_path / "a", base_offset=50, records_per_batch=3, compression=codec) as w:
        w.append(recs[:4])
        w.append(recs[4:])
    for p in (path, w.path):
        b = read_batches(p, verify_crc=True)
        assert (b["compression"] == codec).all()
        assert read_records(p)["offset"].tolist() == list(range(50, 57))
        assert kp_read(p.read_bytes())[1] == [dict(offset=50 + i, timestamp=10 * i, key=b"k", value=b"payload %d" % i,
                                                   headers=[]) for i in range(7)]
    with pytest.raises(ValueError, match="compression must be"):
        encode_batches(recs, compression="brotli")


# ------------------------------------------------------------------------------ (c) real segments


@pytest.mark.realdata
@pytest.mark.parametrize("rel", [LZ4_REAL, GZIP_REAL])
def test_real_compressed_segments(rel):
    path = require_real_data(rel) / "00000000000000000000.log"
    kb, kr = kp_read(path.read_bytes())          # kafka-python, the independent reader
    b = read_batches(path, verify_crc=True)
    r = read_records(path)
    assert len(r) == len(kr) == sum(x["records_count"] for x in kb)
    assert r["offset"].is_monotonic_increasing and r["offset"].is_unique
    assert_same(path.read_bytes())
    assert compressed_batch_problems(path) == []
    comp = b[b["compression"] != "none"]
    assert len(comp)
    if rel == LZ4_REAL:
        # README table: "| ...-rekey-0 | 44137 | 487 | 10 | 11 | LZ4 + LogAppendTime (attributes 0x0B) |"
        assert len(kb) == len(b) == 487
        assert (b["compression"] == "lz4").all() and (b["timestamp_type"] == "LogAppendTime").all()
    else:
        # README: "14 magic v2 batches, CRC-32C valid: 2 gzip-compressed"
        assert len(kb) == len(b) == 14
        assert len(comp) == 2 and (comp["compression"] == "gzip").all()


@pytest.mark.realdata
def test_real_compressed_dump_shows_every_record(capsys):
    from rmqlab.cli import main

    path = require_real_data(LZ4_REAL) / "00000000000000000000.log"
    kb, kr = kp_read(path.read_bytes())
    assert len(kr) >= 487                          # README: 487 batches, each at least one record
    assert main(["kafka", "dump", "--records", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    recs = [x for x in lines if x.startswith("| offset: ")]
    assert len(recs) == len(kr)
    # the first record as kafka-python reads it, in DumpLogSegments' words (LogAppendTime: the
    # README's attributes 0x0B; sequence: the first batch's base sequence, the record's delta 0)
    first = kr[0]
    assert recs[0] == (f"| offset: {first['offset']} LogAppendTime: {first['timestamp']} "
                       f"keySize: {len(first['key']) if first['key'] is not None else -1} "
                       f"valueSize: {len(first['value']) if first['value'] is not None else -1} "
                       f"sequence: {kb[0]['base_sequence']} headerKeys: [{','.join(k for k, _ in first['headers'])}]")
    assert not any("not decoded" in x for x in lines)


def test_dump_print_data_log(tmp_path, capsys):
    from rmqlab.cli import main

    p = kl.write_segment(tmp_path, 0, [KafkaRecord(None, 5, b"k1", b"hello", [("h", b"x")]),
                                       KafkaRecord(None, 6, None, None)], records_per_batch=2, compression="snappy")
    assert main(["kafka", "dump", "--print-data-log", str(p)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == ["| offset: 0 CreateTime: 5 keySize: 2 valueSize: 5 sequence: -1 headerKeys: [h] key: k1 "
                        "payload: hello",
                        "| offset: 1 CreateTime: 6 keySize: -1 valueSize: -1 sequence: -1 headerKeys: []"]


# ------------------------------------------------------------------------------ (d) damage


def gzip_segment(n=3, **header):
    raw = kp_batch([(100 + i, b"k%d" % i, b"v" * 60, []) for i in range(n)], "gzip",
                   offsets=header.pop("offsets", None))
    return fix_header(raw, base_offset=header.pop("base_offset", 40), **header)


def expect_error(tmp_path, data: bytes, field: str, match: str, offset: int = 61):
    path = tmp_path / "00000000000000000040.log"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=match) as e:
        read_records(path)
    assert (e.value.path, e.value.offset, e.value.field) == (str(path), offset, field)
    assert "baseOffset 40" in e.value.reason
    problems = compressed_batch_problems(path)
    assert len(problems) == 1 and problems[0] == str(e.value)
    return e.value


def test_corrupt_compressed_payload(tmp_path):
    data = bytearray(gzip_segment())
    data[75:85] = b"\xff" * 10
    expect_error(tmp_path, fix_header(data, base_offset=40), "records (compressed)", "gzip payload")


@pytest.mark.parametrize("codec", ["snappy", "lz4", "zstd"])
def test_truncated_payload_each_codec(tmp_path, codec):
    enc = encode_batches([KafkaRecord(None, 1, b"k", b"v" * 100)] * 3, records_per_batch=3, compression=codec,
                         next_offset=40)
    data = bytearray(enc.data.tobytes()[:-6])
    struct.pack_into(">i", data, 8, len(data) - 12)
    expect_error(tmp_path, fix_header(data, base_offset=40), "records (compressed)", f"{codec} payload")


def test_records_count_too_large(tmp_path):
    err = expect_error(tmp_path, gzip_segment(records_count=4), "record[3].length", "premature EOF")
    assert "decompressed bytes of the gzip batch" in err.reason


def test_records_count_too_small(tmp_path):
    expect_error(tmp_path, gzip_segment(records_count=2), "record[2]", "records still remaining")


def test_offset_delta_past_last_offset_delta(tmp_path):
    expect_error(tmp_path, gzip_segment(last_offset_delta=1), "record[2].offsetDelta", "lastOffsetDelta=1")


def test_offset_deltas_not_rising(tmp_path):
    expect_error(tmp_path, gzip_segment(offsets=[0, 2, 2]), "record[2].offsetDelta", "does not rise")


def test_compacted_batch_keeps_its_range():
    # the log cleaner keeps survivors' offsets and the batch's lastOffset: deltas 1 and 4 of 0..5
    data = gzip_segment(n=2, offsets=[1, 4], last_offset_delta=5)
    assert read_records(data)["offset"].tolist() == [41, 44]


def test_verify_reports_each_damaged_batch(tmp_path):
    from rmqlab.kafka.rebuild import verify_segment

    good = gzip_segment(base_offset=40)
    bad1 = gzip_segment(base_offset=43, records_count=4)
    bad2 = gzip_segment(base_offset=46, last_offset_delta=0)
    path = tmp_path / "00000000000000000040.log"
    path.write_bytes(good + bad1 + bad2)
    problems = compressed_batch_problems(path)
    assert [p.split(": ")[1:3] for p in problems] == [[f"offset {len(good) + 61}", "record[3].length"],
                                                      [f"offset {2 * len(good) + 61}", "record[1].offsetDelta"]]
    report = verify_segment(path)
    assert not report.ok and all(p in report.errors for p in problems)
