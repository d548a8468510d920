"""Torn and damaged Kafka segments: the whole batches before the damage, and where and why it is.

Independent truth: real partitions a Kafka 3.6 broker wrote (``../shared/real-data/kafka``,
kafka-3.6-compacted; its README gives what an independent reader sees: 31 batches holding 240
records at offsets 3101..3340 in stock-market-realtime-0, 32 batches holding 3,000 records at
12910..15909 in stock-market-batch-0), copied into tmp_path, cut at many byte positions and
with flipped bytes, and a brute-force model written here with ``struct`` and a table CRC-32C
(the batch header as DefaultRecordBatch lays it out: baseOffset i64, batchLength i32,
partitionLeaderEpoch i32, magic i8, crc u32, attributes i16, lastOffsetDelta i32, ...,
recordsCount i32 at byte 57) that says which batches are whole and where the walk must stop.
The model is first checked against the README's counts, so it cannot agree with rmqlab by
sharing a mistake with it. Index entries past the damage are counted from the index files'
own bytes (``.index``: relative offset i32, position i32; ``.timeindex``: timestamp i64,
relative offset i32).
"""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data

from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.kafka.log import SegmentDamage, read_batches, read_records, walk_batches
from rmqlab.kafka.rebuild import verify_segment

REAL = REAL_DATA / "kafka" / "kafka-3.6-compacted"
#: partition -> (segment file, batches, records, first offset, last offset), from the README
PARTITIONS = {
    "stock-market-realtime-0": ("00000000000000003101.log", 31, 240, 3101, 3340),
    "stock-market-batch-0": ("00000000000000012910.log", 32, 3000, 12910, 15909),
}

# ------------------------------------------------------------------------------ the model


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def model_walk(data: bytes, crcs: dict | None = None):
    """(whole batches, stop) of magic v2 data: each batch (position, size, baseOffset,
    lastOffset, recordsCount, crc ok), and None when the data ends on a batch boundary, else
    (position, "torn" | "corrupt", field). `crcs` caches CRC verdicts by (position, bytes)."""
    batches, p = [], 0
    while p < len(data):
        left = len(data) - p
        if left < 17 or not any(data[p:]):
            return batches, (p, "torn", "batch header")
        base, length, _epoch, magic = struct.unpack_from(">qiib", data, p)
        if magic != 2:
            return batches, (p, "corrupt" if magic not in (0, 1) else "legacy", "magic")
        size = length + 12
        if size < 61:
            return batches, (p, "corrupt", "batchLength")
        if size > left:
            return batches, (p, "torn", "batchLength")
        stored, _attrs, last_delta = struct.unpack_from(">Ihi", data, p + 17)
        count = struct.unpack_from(">i", data, p + 57)[0]
        key = (p, data[p + 21:p + size])
        ok = crcs.get(key) if crcs is not None else None
        if ok is None:
            ok = crc32c(key[1]) == stored
            if crcs is not None:
                crcs[key] = ok
        batches.append((p, size, base, base + last_delta, count, ok))
        p += size
    return batches, None


def index_entries(path: Path, entry: str) -> list[tuple[int, int]]:
    """(absolute offset, position) of a .index or (timestamp, absolute offset) of a .timeindex."""
    base = int(path.name.split(".")[0])
    raw = path.read_bytes() if path.exists() else b""
    if entry == "index":
        return [(base + r, p) for r, p in struct.iter_unpack(">ii", raw[:len(raw) // 8 * 8])]
    return [(t, base + r) for t, r in struct.iter_unpack(">qi", raw[:len(raw) // 12 * 12])]


# ------------------------------------------------------------------------------ fixtures

_CACHE: dict[str, tuple[bytes, list, dict]] = {}


def original(name: str) -> tuple[bytes, list, dict]:
    """The real segment's bytes, its model batches, the CRC cache."""
    if name not in _CACHE:
        src = require_real_data(REAL / name)
        data = (src / PARTITIONS[name][0]).read_bytes()
        crcs: dict = {}
        batches, stop = model_walk(data, crcs)
        assert stop is None
        _CACHE[name] = (data, batches, crcs)
    return _CACHE[name]


def copy_partition(name: str, into: Path) -> Path:
    """A writable copy of the partition directory (the real data is never written)."""
    dst = into / name
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(require_real_data(REAL / name), dst)
    for f in dst.iterdir():
        f.chmod(0o644)
    return dst / PARTITIONS[name][0]


def check_against_model(data: bytes, crcs: dict, source) -> bool:
    """rmqlab's three readers with on_damage="report" against the model on `data`; False
    (nothing checked) when the walk meets a v0/v1 header, which this model does not frame."""
    want, stop = model_walk(data, crcs)
    if stop is not None and stop[1] == "legacy":
        return False
    df = read_batches(source, on_damage="report")
    got = list(zip(df["position"], df["size"], df["base_offset"], df["last_offset"], df["records_count"],
                   df["crc_ok"]))
    assert [tuple(int(x) if i < 5 else bool(x) for i, x in enumerate(g)) for g in got] == want
    rep = df.attrs["report"]
    end = stop[0] if stop else len(data)
    assert rep.valid_bytes == end and rep.batches == len(want) and rep.file_size == len(data)
    if stop is None:
        assert rep.damage is None
    else:
        d = rep.damage
        assert isinstance(d, SegmentDamage)
        assert (d.position, d.kind, d.invalid_bytes) == (stop[0], stop[1], len(data) - stop[0])
        assert d.field == stop[2] or (stop[2] == "batchLength" and d.field == "batch header")
        if d.kind == "corrupt":     # the field at fault; a torn batch is named by its start
            assert d.offset == stop[0] + {"magic": 16, "batchLength": 8}[d.field]
        else:
            assert d.offset == stop[0]
        raising = TruncatedFileError if d.kind == "torn" else FormatError
        with pytest.raises(raising) as e:
            read_batches(source)
        assert (e.value.offset, e.value.field, str(e.value)) == (d.offset, d.field, str(d))
    walk = walk_batches(source, on_damage="report")
    assert [b.position for b in walk] == [w[0] for w in want]
    assert walk.report.damage == rep.damage
    ok_prefix = all(w[5] for w in want)
    if ok_prefix:        # a batch whose CRC fails may hold records that do not decode: not modelled
        recs = read_records(source, on_damage="report", values=False, headers=False)
        assert len(recs) == sum(w[4] for w in want)
        assert recs.attrs["report"].damage == rep.damage
    return True


# ------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("name", sorted(PARTITIONS))
def test_the_model_reads_what_the_readme_says(name):
    data, batches, _ = original(name)
    _, n_batches, n_records, first, last = PARTITIONS[name]
    assert len(batches) == n_batches and sum(b[4] for b in batches) == n_records
    assert batches[0][2] == first and batches[-1][3] == last and all(b[5] for b in batches)
    assert sum(b[1] for b in batches) == len(data)


def test_a_real_segment_cut_at_byte_4000(tmp_path):
    data, batches, crcs = original("stock-market-realtime-0")
    log = copy_partition("stock-market-realtime-0", tmp_path)
    log.write_bytes(data[:4000])
    assert check_against_model(data[:4000], crcs, log)
    whole = [b for b in batches if b[0] + b[1] <= 4000]
    df = read_batches(log, on_damage="report")
    d = df.attrs["report"].damage
    assert len(df) == len(whole) and d.path == str(log) and d.position == whole[-1][0] + whole[-1][1]
    assert d.kind == "torn" and d.field == "batchLength" and "torn write" in d.reason
    recs = read_records(log, on_damage="report")
    assert recs["offset"].tolist() == list(range(3101, whole[-1][3] + 1))


@pytest.mark.parametrize("name", sorted(PARTITIONS))
def test_every_cut_point_property(name, tmp_path):
    data, _, crcs = original(name)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(cut=st.integers(0, len(data)))
    def run(cut):
        assume(check_against_model(data[:cut], crcs, memoryview(data)[:cut]))

    run()


def test_cut_on_each_batch_boundary_and_one_byte_either_side():
    data, batches, crcs = original("stock-market-realtime-0")
    for p, size, *_ in batches:
        for cut in (p + size - 1, p + size, p + size + 1):
            assert check_against_model(data[:cut], crcs, data[:cut])


def test_flipped_bytes_property():
    data, _, crcs = original("stock-market-realtime-0")

    @settings(max_examples=60, deadline=None)
    @given(at=st.integers(0, len(data) - 1), cut=st.integers(0, len(data)))
    def run(at, cut):
        bad = bytearray(data)
        bad[at] ^= 0xFF
        assume(check_against_model(bytes(bad[:max(cut, at + 1)]), crcs, bytes(bad[:max(cut, at + 1)])))

    run()


@pytest.mark.parametrize("field, at", [("magic", 16), ("batchLength", 8)])
def test_a_damaged_header_stops_the_walk_at_its_batch(field, at):
    data, batches, crcs = original("stock-market-realtime-0")
    k = 5
    bad = bytearray(data)
    bad[batches[k][0] + at] ^= 0xFF         # magic 2 -> -3; batchLength's top byte: negative
    assert check_against_model(bytes(bad), crcs, bytes(bad))
    d = read_batches(bytes(bad), on_damage="report").attrs["report"].damage
    assert (d.kind, d.field, d.position, d.offset) == ("corrupt", field, batches[k][0], batches[k][0] + at)
    assert "expected" in d.reason or "smaller than" in d.reason


def test_a_crc_error_before_the_tear_is_kept_and_reported_first(tmp_path):
    data, batches, crcs = original("stock-market-realtime-0")
    log = copy_partition("stock-market-realtime-0", tmp_path)
    bad = bytearray(data)
    bad[batches[1][0] + 200] ^= 0x01           # inside batch 1's records: only its CRC tells
    cut = batches[20][0] + 100
    log.write_bytes(bytes(bad[:cut]))
    assert check_against_model(bytes(bad[:cut]), crcs, log)
    r = verify_segment(log)
    assert not r.ok and r.batches == 20 and r.log_bytes == batches[20][0] and r.file_bytes == cut
    assert r.errors[0].startswith(f"{log}: offset {batches[1][0]}: crc")
    assert r.errors[-1].startswith(str(r.damage)) and r.damage.position == batches[20][0]
    # read with verify_crc, the CRC is the damage: the walk stops at batch 1
    d = read_batches(log, verify_crc=True, on_damage="report").attrs["report"].damage
    assert (d.kind, d.position, d.offset, d.field) == ("crc", batches[1][0], batches[1][0] + 17, "crc")


@pytest.mark.parametrize("name", sorted(PARTITIONS))
def test_verify_counts_the_whole_part_and_the_index_entries_past_the_damage(name, tmp_path):
    data, batches, _ = original(name)
    log = copy_partition(name, tmp_path)
    offsets = index_entries(log.with_suffix(".index"), "index")
    times = index_entries(log.with_suffix(".timeindex"), "timeindex")
    step = max(1, len(data) // 12)
    for cut in range(step // 2, len(data), step):
        log.write_bytes(data[:cut])
        whole = [b for b in batches if b[0] + b[1] <= cut]
        end = whole[-1][0] + whole[-1][1] if whole else 0
        last = whole[-1][3] if whole else -1
        r = verify_segment(log)
        assert (r.batches, r.log_bytes, r.file_bytes) == (len(whole), end, cut)
        assert (r.damage is None) == (end == cut)
        assert r.offset_entries_past_damage == sum(p >= end for _, p in offsets)
        assert r.time_entries_past_damage == sum(o > last for _, o in times)
        # the entries written for the whole batches agree with the broker's rule: the damage,
        # and the entries past it, are the only problems
        assert len(r.mismatches) == len(r.explained), (cut, r.mismatches)
        past = (r.offset_entries_past_damage > 0) + (r.time_entries_past_damage > 0)
        assert len(r.errors) == past + (r.damage is not None)
        assert not r.ok


def test_a_file_that_is_not_kafka_is_named_with_offset_field_and_what_was_expected(tmp_path):
    path = tmp_path / "notes.log"
    path.write_bytes(b"# this is a text file, not a Kafka segment at all\n" * 4)
    with pytest.raises(FormatError) as e:
        read_batches(path)
    assert (e.value.path, e.value.offset, e.value.field) == (str(path), 16, "magic")
    assert "not a Kafka log format" in str(e.value) and "expected magic v2" in str(e.value)
    d = read_batches(path, on_damage="report").attrs["report"].damage
    assert (d.kind, d.position, str(d)) == ("corrupt", 0, str(e.value))
    r = verify_segment(path)
    # one wording: verify says what the reader raises; the name is the other problem
    assert str(e.value) in r.errors and r.errors[0].startswith(f"{path}: file name: ")
    assert "pass base_offset=N" in r.errors[0]
    assert not any("base_offset=" in x for x in verify_segment(path, base_offset=0).errors)
