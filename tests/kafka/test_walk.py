"""The C batch walk and offset index picks against their pure-Python models.

rmqlab/kafka/log.py keeps ``_spans`` (the batch walk one entry at a time) and
rmqlab/kafka/rebuild.py ``_offset_entry_batches_py`` (one binary search per offset entry) as the
readable models of ``rmqlab._kafkalog.walk`` / ``index_picks``. Here both run on random segments
(v2 batches, legacy v0/v1 messages, mixed) and on damaged ones (bytes overwritten, cut, zeros or
garbage appended), and must agree exactly: the same positions, the same error (type, file
offset, field, reason) or the same quiet stop. ``walk_batches``, which hands batches out from
chunks of the C walk, is compared with the one-batch-at-a-time walk it replaced, written out
here. The CRC-32C instruction path is compared with the table path.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab import _crc32c, _kafkalog
from rmqlab.errors import RmqlabError
from rmqlab.kafka import legacy
from rmqlab.kafka import log as kl
from rmqlab.kafka import rebuild as rb

# --------------------------------------------------------------------------- segments


@st.composite
def segments(draw) -> bytes:
    """Back-to-back v2 batches and legacy message sets (some compressed), in random order."""
    parts = []
    offset = draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(0, 6))):
        n = draw(st.integers(1, 5))
        kind = draw(st.sampled_from(("v2", "v2", "v2-gzip", "v0", "v1", "v1-gzip")))
        values = [b"v" * draw(st.integers(0, 40)) for _ in range(n)]
        if kind.startswith("v2"):
            recs = [kl.KafkaRecord(offset + i, 1718000000000 + i, b"k" if i % 2 else None, v)
                    for i, v in enumerate(values)]
            parts.append(kl.encode_batches(recs, records_per_batch=draw(st.integers(1, 3)),
                                           compression="gzip" if kind.endswith("gzip") else "none").data.tobytes())
        else:
            recs = [(offset + i, 1718000000000 + i, None, v) for i, v in enumerate(values)]
            parts.append(legacy.encode_message_set(recs, magic=int(kind[1]),
                                                   compression="gzip" if kind.endswith("gzip") else "none",
                                                   records_per_wrapper=2))
        offset += n
    return b"".join(parts)


@st.composite
def damaged_segments(draw) -> bytes:
    data = bytearray(draw(segments()))
    for _ in range(draw(st.integers(0, 3))):
        how = draw(st.sampled_from(("byte", "length", "magic", "cut", "zeros", "garbage")))
        if how in ("byte", "length", "magic") and data:
            at = draw(st.integers(0, len(data) - 1))
            if how == "byte":
                data[at] = draw(st.integers(0, 255))
            elif how == "length" and at + 4 <= len(data):   # a hostile batchLength anywhere
                data[at:at + 4] = struct.pack(">i", draw(st.sampled_from((-1, 0, 13, 14, 22, 48, 49, 2**31 - 1))))
            elif how == "magic" and at + 17 <= len(data):
                data[at + 16] = draw(st.sampled_from((0, 1, 2, 3, 0x80, 0xFF)))
        elif how == "cut" and data:
            del data[draw(st.integers(0, len(data) - 1)):]
        elif how == "zeros":
            data += bytes(draw(st.integers(1, 80)))
        elif how == "garbage":
            data += draw(st.binary(min_size=1, max_size=80))
    return bytes(data)


def error_key(error: RmqlabError | None):
    return None if error is None else (type(error), error.offset, error.field, error.reason)


def python_walk(data: bytes):
    """_spans as (positions, stop error key, torn)."""
    positions, stop = [], None
    for item in kl._spans(data, None):
        if isinstance(item, kl._Stop):
            stop = item
        else:
            positions.append(item)
    return positions, None if stop is None else (error_key(stop.error), stop.torn)


def c_walk(data: bytes, limit: int = -1):
    """_entry_positions as python_walk gives it, `limit` entries a call."""
    positions, start, more = [], 0, True
    stop = None
    while more:
        P, stop, start, more = kl._entry_positions(data, None, start, limit)
        positions += P.tolist()
        if limit >= 0:
            assert len(P) <= limit
    return positions, None if stop is None else (error_key(stop.error), stop.torn)


# --------------------------------------------------------------------------- the walk


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_segments(), st.sampled_from((-1, 0, 1, 2, 5)))
def test_c_walk_equals_python_walk(data, limit):
    if limit == 0:       # a limit of 0 makes no progress: only ever asked for from the start
        P, stop, at, more = kl._entry_positions(data, None, 0, 0)
        assert (len(P), stop, at, more) == (0, None, 0, bool(data))
        return
    assert c_walk(data, limit) == python_walk(data)


def test_c_walk_checks_its_start():
    with pytest.raises(ValueError):
        _kafkalog.walk(b"abc", 4, -1)
    with pytest.raises(ValueError):
        _kafkalog.walk(b"abc", -1, -1)
    assert _kafkalog.walk(b"", 0, -1) == (b"", 0, _kafkalog.STOP_END)


def reference_batches(source, verify_crc: bool, torn_tail: str) -> tuple[list[kl.Batch], object, kl.WalkReport]:
    """The batch-at-a-time walk walk_batches used to be: _spans, one header unpack and one
    CRC-32C a batch, legacy entries decoded one by one. Returns (batches, error key, report)."""
    rep = kl.WalkReport()
    out: list[kl.Batch] = []
    with kl._opened(source) as (buf, path):
        rep.path, rep.file_size = path, len(buf)
        try:
            for item in kl._spans(buf, path):
                if isinstance(item, kl._Stop):
                    if item.torn and torn_tail == "stop":
                        rep.torn_tail, rep.torn_reason = item.error.offset, item.error.reason
                        break
                    raise item.error
                p = item
                if buf[p + 16] != kl.MAGIC:
                    cols, _, err = legacy.decode_entries(buf, path, [p], verify_crc=verify_crc)
                    if err is not None:
                        raise err
                    size = int(cols["batch_length"][0]) + kl.LOG_OVERHEAD
                    out.append(kl.Batch(p, size, **{f.name: int(cols[f.name][0]) for f in kl.HEADER.fields},
                                        crc_ok=bool(cols["crc_ok"][0])))
                else:
                    h = kl.HEADER.unpack_from(buf, p)
                    size = h.batch_length + kl.LOG_OVERHEAD
                    crc = h.crc & 0xFFFFFFFF
                    computed = _crc32c.crc32c_table(bytes(buf[p + kl.CRC_START:p + size]))
                    if verify_crc and computed != crc:
                        raise kl._crc_error(path, p, crc, computed)
                    out.append(kl.Batch(p, size, **h._replace(crc=crc)._asdict(), crc_ok=computed == crc))
                rep.batches += 1
                rep.valid_bytes = p + size
        except RmqlabError as e:
            return out, error_key(e), rep
    return out, None, rep


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_segments(), st.booleans(), st.sampled_from(("raise", "stop")), st.sampled_from((1, 2, 3, 4096)))
def test_walk_batches_equals_the_batch_at_a_time_walk(data, verify_crc, torn_tail, chunk):
    want, want_error, want_report = reference_batches(data, verify_crc, torn_tail)
    saved = kl._WALK_CHUNK
    kl._WALK_CHUNK = chunk      # chunk edges fall between batches, legacy entries and errors
    try:
        stream = kl.walk_batches(data, verify_crc=verify_crc, torn_tail=torn_tail)
        got: list[kl.Batch] = []
        error = None
        try:
            for b in stream:
                got.append(b)
        except RmqlabError as e:
            error = error_key(e)
    finally:
        kl._WALK_CHUNK = saved
    assert got == want
    assert error == want_error
    assert stream.report == want_report
    # the bulk reader raises the first error in file order, or has the same rows
    try:
        df = kl.read_batches(data, verify_crc=verify_crc, torn_tail=torn_tail)
    except RmqlabError as e:
        assert want_error is not None and error_key(e)[:3] == want_error[:3]
    else:
        assert want_error is None
        assert df["position"].tolist() == [b.position for b in want]
        assert df["crc_ok"].tolist() == [b.crc_ok for b in want]
        assert df.attrs["report"] == want_report


def test_walk_batches_from_a_file_in_chunks(tmp_path, monkeypatch):
    recs = [kl.KafkaRecord(i, 1000 + i, None, b"x" * (i % 7)) for i in range(50)]
    path = kl.write_segment(tmp_path, 0, recs, records_per_batch=3)
    monkeypatch.setattr(kl, "_WALK_CHUNK", 4)
    got = list(kl.walk_batches(path, verify_crc=True))
    want = kl.read_batches(path)
    assert [b.position for b in got] == want["position"].tolist()
    assert [b.last_offset for b in got] == want["last_offset"].tolist()
    assert all(b.crc_ok for b in got)


# --------------------------------------------------------------------------- CRC-32C


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 16), st.integers(0, 2**32 - 1))
def test_crc32c_instruction_and_table_agree(data, skip, start):
    view = memoryview(data)[min(skip, len(data)):]      # every alignment of the first byte
    assert _crc32c.crc32c(view, start) == _crc32c.crc32c_table(view, start)
    assert _crc32c.implementation in ("sse4.2", "slice-by-8")


# --------------------------------------------------------------------------- offset index picks


@st.composite
def batch_positions(draw):
    sizes = draw(st.lists(st.integers(1, 9000), max_size=60))
    first = draw(st.sampled_from((0, 0, 5, 2**62)))
    pos = first + np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)[:-1]]) if sizes else np.zeros(0, np.int64)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(len(sizes) - 1, 1)), max_size=4)))) if len(sizes) > 1 else []
    return np.asarray(pos, np.int64), np.asarray(cuts, np.int64)


@settings(max_examples=300, deadline=None)
@given(batch_positions(), st.sampled_from((0, 1, 100, 4095, 4096, 4097, 20000, 2**62)))
def test_offset_entry_picks_in_c_equal_the_binary_search_model(positions, interval):
    pos, cuts = positions
    got = rb._offset_entry_batches(pos, cuts, interval)
    want = rb._offset_entry_batches_py(pos, cuts, interval)
    assert got.tolist() == want.tolist()


def test_index_picks_checks_its_arguments():
    out = np.empty(3, np.int64)
    pos = np.array([0, 10, 20], np.int64)
    with pytest.raises(ValueError):
        _kafkalog.index_picks(pos, np.array([1], np.int64), 0, out)        # runs start at 0
    with pytest.raises(ValueError):
        _kafkalog.index_picks(pos, np.array([0, 0], np.int64), 0, out)     # runs rise
    with pytest.raises(ValueError):
        _kafkalog.index_picks(pos, np.array([0, 4], np.int64), 0, out)     # inside the batches
    with pytest.raises(ValueError):
        _kafkalog.index_picks(pos[::-1].copy(), np.array([0], np.int64), 0, out)
    with pytest.raises(ValueError):
        _kafkalog.index_picks(pos, np.array([0], np.int64), -1, out)
    with pytest.raises(ValueError):
        _kafkalog.index_picks(pos, np.array([0], np.int64), 0, np.empty(2, np.int64))
    assert _kafkalog.index_picks(pos, np.array([0], np.int64), 0, out) == 2 and out[:2].tolist() == [1, 2]


def test_positions_that_do_not_rise_take_the_model():
    pos = np.array([0, 5000, 5000, 12000], np.int64)
    assert rb._offset_entry_batches(pos, np.zeros(0, np.int64), 4096).tolist() == \
        rb._offset_entry_batches_py(pos, np.zeros(0, np.int64), 4096).tolist()


@settings(max_examples=50, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.lists(st.tuples(st.integers(0, 299), st.integers(0, 299)),
                                                     max_size=8))
def test_crc32c_spans_instruction_and_table_agree(data, spans):
    spans = [(min(a, len(data)), min(b, len(data) - min(a, len(data)))) for a, b in spans]
    starts = np.array([a for a, _ in spans], np.int64)
    lengths = np.array([b for _, b in spans], np.int64)
    fast, table = np.empty(len(spans), np.uint32), np.empty(len(spans), np.uint32)
    _crc32c.crc32c_spans(data, starts, lengths, fast)
    _crc32c.crc32c_spans(data, starts, lengths, table, True)
    assert fast.tolist() == table.tolist() == [_crc32c.crc32c_table(data[a:a + b]) for a, b in spans]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_segments())
def test_v2_header_columns_equal_the_header_layout(data):
    positions = [p for p in kl._spans(data, None) if not isinstance(p, kl._Stop) and data[p + 16] == kl.MAGIC]
    cols = kl._v2_header_columns(data, np.array(positions, np.int64))
    for i, p in enumerate(positions):
        want = kl.HEADER.unpack_from(data, p)._asdict()
        want["crc"] &= 0xFFFFFFFF
        assert {name: int(col[i]) for name, col in cols.items()} == want
    assert {name: col.dtype for name, col in cols.items()} == \
        {f.name: np.dtype(np.int64 if f.size >= 4 else np.int16 if f.size == 2 else np.int8) for f in kl.HEADER.fields}


def test_v2_headers_stay_inside_the_buffer():
    out = np.empty(13, np.int64)
    with pytest.raises(ValueError):
        _kafkalog.v2_headers(bytes(60), np.zeros(1, np.int64), out)
    with pytest.raises(ValueError):
        _kafkalog.v2_headers(bytes(100), np.array([-1], np.int64), out)
    with pytest.raises(ValueError):
        _kafkalog.v2_headers(bytes(100), np.zeros(1, np.int64), np.empty(12, np.int64))
    _kafkalog.v2_headers(bytes(61), np.zeros(1, np.int64), out)
    assert out.tolist() == [0] * 13


# --------------------------------------------------------------------------- index writers


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)), max_size=20),
       st.sampled_from((np.int64, np.int32, np.uint64)))
def test_index_writers_take_an_int_array_as_they_take_pairs(tmp_path_factory, pairs, dtype):
    from rmqlab.kafka.index import build_offset_index, build_time_index

    d = tmp_path_factory.mktemp("idx")
    offsets = sorted({o for o, _ in pairs})
    positions = sorted(p for _, p in pairs)[:len(offsets)]
    entries = list(zip(offsets, positions))
    stamps = list(zip(sorted(p for _, p in pairs)[:len(offsets)], offsets))
    for build, rows in ((build_offset_index, entries), (build_time_index, stamps)):
        results = []
        for i, given_as in enumerate((rows, np.array(rows, dtype).reshape(-1, 2))):
            path = d / f"{build.__name__}-{i}.index"
            try:
                build(path, given_as, 0)
                results.append(path.read_bytes())
            except (ValueError, TypeError, RmqlabError) as e:
                results.append((type(e), str(e)))
        assert results[0] == results[1]


def test_index_writers_refuse_a_uint64_past_a_java_long(tmp_path):
    from rmqlab.kafka.index import build_offset_index

    with pytest.raises(ValueError, match="Java long"):
        build_offset_index(tmp_path / "a.index", np.array([[2**63, 0]], np.uint64), 0)
