"""The CommitLog decode of read_columns (the C pass ``_records.decode_records``, ``span_objects``,
``gather_spans``) and read_at, judged against a standard-library decode of the same bytes
(tests/support/commitlog_stdlib.py, no code shared with the package) on records rmqlab writes
and on CommitLogs real brokers wrote; and its Arrow-backed output against the default pandas one
(the same rows and values in another representation)."""
from __future__ import annotations

import re
import struct

import numpy as np
import pandas as pd
import pytest
from commitlog_stdlib import BLANK_MAGIC, decode_record, read_commitlog, read_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data

from rmqlab import _records
from rmqlab.errors import RmqlabError
from rmqlab.formats import commitlog as cl
from rmqlab.formats.commitlog import columns as cc
from tests.formats.commitlog.test_records import _write_tmp, damaged_logs, messages

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REAL_COMMITLOGS = [REAL_DATA / "rocketmq" / "store-4e25b979" / "commitlog",
                   REAL_DATA / "rocketmq" / "store-ericpangopher-4.2.0" / "commitlog"]


def stdlib_row(rec: dict, *, body: bool = True) -> dict:
    """A standard-library record as the frame's columns name its values."""
    props = rec["properties"]
    delay = props.get("DELAY", "0")
    # Integer.parseInt of an ASCII decimal in int's range; anything else is the reader's choice
    level = int(delay) if re.fullmatch(r"[+-]?[0-9]+", delay) and -2**31 <= int(delay) < 2**31 else None
    row = {"topic": rec["topic"], "queue_id": rec["queue_id"], "flag": rec["flag"],
           "queue_offset": rec["queue_offset"], "phy_offset": rec["physical_offset"], "sys_flag": rec["sys_flag"],
           "born_timestamp": rec["born_timestamp"], "born_host": rec["born_host"],
           "store_timestamp": rec["store_timestamp"], "store_host": rec["store_host"],
           "reconsume_times": rec["reconsume_times"],
           "prepared_transaction_offset": rec["prepared_transaction_offset"],
           "properties": rec["properties_raw"], "keys": props.get("KEYS"), "uniq_key": props.get("UNIQ_KEY"),
           "tags": props.get("TAGS"), "delay_level": level,
           "total_size": rec["total_size"], "version": rec["version"], "body_crc": rec["body_crc"]}
    if body:
        row["body"] = rec["body"]
    return row


def frame_rows(df: pd.DataFrame) -> list[dict]:
    """The frame's rows as Python values (None for a missing value)."""
    rows = []
    for r in df.astype(object).to_dict("records"):
        rows.append({k: (None if v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v) for k, v in r.items()})
    return rows


def assert_rows_are_the_records(df: pd.DataFrame, recs: list[dict], *, body: bool = True,
                                check_crc: bool = False) -> None:
    """Each row of `df` holds the values the standard-library decode reads from its record."""
    assert len(df) == len(recs)
    for got, rec in zip(frame_rows(df), recs):
        want = stdlib_row(rec, body=body)
        if want["delay_level"] is None:   # a DELAY Java cannot parse: the reader's choice, not the layout's
            del want["delay_level"]
        assert {k: got[k] for k in want} == want
        if check_crc:
            assert got["crc_ok"] == rec["crc_ok"]


def outcome(read, path, **kw):
    """The frame read, or the type and text of the error raised."""
    try:
        return read(path, **kw)
    except Exception as e:   # noqa: BLE001  (the errors themselves are compared)
        return (type(e), str(e))


def as_objects(df: pd.DataFrame) -> dict[str, list]:
    """Each column as a list of Python values, None for a missing value; text the Arrow frame
    kept as bytes (not UTF-8) decoded as the default frame decodes it."""
    def value(column, v):
        if v is pd.NA or v is None:
            return None
        return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) and column != "body" else v

    return {c: [value(c, v) for v in df[c].astype(object)] for c in df.columns}


def assert_arrow_frame_is_the_same(path, df: pd.DataFrame, **kw) -> None:
    arrow = cl.read_columns(path, arrow=True, **kw)
    assert arrow.attrs["report"] == df.attrs["report"]
    assert list(arrow.columns) == list(df.columns)
    assert all(isinstance(t, pd.ArrowDtype) for t in arrow.dtypes)
    assert as_objects(arrow) == as_objects(df)


def first_unsound(data: bytes) -> int | None:
    """Where the standard-library walk meets a record that does not add up (None: none)."""
    recs = read_file(data)
    end = recs[-1]["phy_offset"] + recs[-1]["total_size"] if recs else 0
    if end + 8 <= len(data):
        total, magic = struct.unpack_from(">ii", data, end)
        if total > 0 and magic != BLANK_MAGIC and decode_record(data, end) is None:
            return end
    return None


@st.composite
def length_damaged_logs(draw):
    """Valid records (IPv4 and IPv6 hosts, v1 and v2, empty and non-UTF-8 text) of which one may
    have BODYLEN, TOPICLEN, PROPERTIESLENGTH or the SYSFLAG host bits rewritten: the checks of
    the decode pass, not of the walk."""
    recs = [bytearray(cl.encode_message(**m)) for m in draw(st.lists(messages(big_body=False), min_size=1,
                                                                         max_size=6))]
    if draw(st.booleans()):   # non-UTF-8 properties and topic, kept byte for byte
        raw = cl.encode_message(topic="T\udcff", body=b"b", properties={"KEYS": "k\udcfe", "TAGS": "t\udcfd"})
        recs.insert(draw(st.integers(0, len(recs))), bytearray(raw))
    if draw(st.booleans()):
        r = recs[draw(st.integers(0, len(recs) - 1))]
        m = cl.read_message(bytes(r), 0)
        sys_flag_at = cl.HEAD.offset("sys_flag")
        body_len_at = len(r) - 2 - len(m.properties_raw) - len(m.topic.encode("utf-8", "surrogateescape")) \
            - m.version - len(m.body) - 4
        topic_len_at = body_len_at + 4 + len(m.body)
        props_len_at = topic_len_at + m.version + len(m.topic.encode("utf-8", "surrogateescape"))
        where = draw(st.sampled_from(["body_len", "topic_len", "props_len", "sys_flag"]))
        if where == "body_len":
            struct.pack_into(">i", r, body_len_at, draw(st.integers(-2**31, 2**31 - 1)))
        elif where == "topic_len" and m.version == 1:
            struct.pack_into(">b", r, topic_len_at, draw(st.integers(-128, 127)))
        elif where == "topic_len":
            struct.pack_into(">h", r, topic_len_at, draw(st.integers(-2**15, 2**15 - 1)))
        elif where == "props_len":
            struct.pack_into(">h", r, props_len_at, draw(st.integers(-2**15, 2**15 - 1)))
        else:
            struct.pack_into(">i", r, sys_flag_at, m.sys_flag ^ draw(st.sampled_from([0x10, 0x20, 0x30])))
    data = b"".join(recs)
    if draw(st.booleans()):
        data += cl.blank_record(64) + bytes(56)
    return data


@SETTINGS
@given(length_damaged_logs(), st.booleans(), st.booleans(), st.sampled_from(["raise", "report"]))
def test_decode_equals_the_stdlib_decode(data, body, crc, on_error):
    """Sound records read as the standard library reads them; the first record whose length
    fields do not add up to its TOTALSIZE is where reading stops: reported at its offset (as
    damage, or as the torn tail when nothing follows it) with the records before it read, or
    raised."""
    path = _write_tmp(data)
    bad = first_unsound(data)
    recs = read_file(data)
    try:
        df = cl.read_columns(path, body=body, check_crc=crc, on_error=on_error)
    except RmqlabError as e:
        assert on_error == "raise" and bad is not None, e
        assert f"offset {bad}:" in str(e)
        return
    assert_rows_are_the_records(df, recs, body=body, check_crc=crc)
    report = df.attrs["report"]
    stops = [d.offset for d in report.damage] + ([report.torn_tail.offset] if report.torn_tail else [])
    assert stops == ([] if bad is None else [bad])
    assert_arrow_frame_is_the_same(path, df, body=body, check_crc=crc, on_error=on_error)


@SETTINGS
@given(damaged_logs(), st.booleans(), st.sampled_from(["raise", "report"]))
def test_rows_read_from_damaged_logs_are_the_stdlib_records(data, crc, on_error):
    """Bytes flipped, files cut, junk after the records: whatever rows the reader keeps are
    consecutive records from byte 0, each as the standard library decodes it there."""
    path = _write_tmp(data)
    try:
        df = cl.read_columns(path, check_crc=crc, on_error=on_error)
    except RmqlabError:
        assert on_error == "raise"
        return
    recs, pos = [], 0
    for size in df["total_size"].tolist():
        rec = decode_record(data, pos)
        assert rec is not None, f"the reader kept a record at {pos} that does not add up"
        recs.append(rec)
        pos += size
    assert_rows_are_the_records(df, recs, check_crc=crc)
    assert_arrow_frame_is_the_same(path, df, check_crc=crc, on_error=on_error)


@SETTINGS
@given(st.lists(messages(big_body=False), min_size=1, max_size=8), st.integers(0, 7))
def test_read_at_equals_the_stdlib_records(rows, pick):
    data = b"".join(cl.encode_message(**m) for m in rows)
    path = _write_tmp(data)
    recs = read_file(data)
    assert len(recs) == len(rows)
    positions = np.array([r["phy_offset"] for r in recs], np.int64)
    rows_asked = np.concatenate([np.arange(len(positions))[::-1], np.arange(pick % len(positions), len(positions))])
    got = cl.read_at(path, positions[rows_asked], check_crc=True)
    assert_rows_are_the_records(got, [recs[i] for i in rows_asked], check_crc=True)


@pytest.mark.parametrize("store", REAL_COMMITLOGS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("body", [True, False])
def test_real_stores_read_as_the_stdlib_reads_them(store, body):
    """CommitLogs brokers wrote: every message and every field as the standard library reads them."""
    require_real_data(store)
    recs = read_commitlog(store)
    # the READMEs: store-4e25b979 "holds 47 v1 messages", store-ericpangopher-4.2.0 "179 messages in all"
    assert len(recs) == {"store-4e25b979": 47, "store-ericpangopher-4.2.0": 179}[store.parent.name]
    df = cl.read_columns(store, body=body, check_crc=True, on_error="report")
    assert df.attrs["report"].damage == []
    assert df["total_size"].sum() == sum(r["total_size"] for r in recs)
    assert_rows_are_the_records(df, recs, body=body, check_crc=True)
    assert all(r["crc_ok"] for r in recs)
    assert_arrow_frame_is_the_same(store, df, body=body, check_crc=True, on_error="report")


def test_arrow_frame_is_typed_without_rows(tmp_path):
    path = _write_tmp(bytes(cl.MIN_MESSAGE_SIZE))   # zeros only: a clean end, no message
    want = cl.read_columns(path, check_crc=True)
    got = cl.read_columns(path, check_crc=True, arrow=True)
    assert len(got) == len(want) == 0 and list(got.columns) == list(want.columns)
    assert all(isinstance(t, pd.ArrowDtype) for t in got.dtypes)


def test_arrow_frame_keeps_non_utf8_text_as_bytes():
    raw = cl.encode_message(topic="T", body=b"b", properties={"KEYS": "k\udcfe"})
    got = cl.read_columns(_write_tmp(raw), arrow=True)
    assert got["keys"].tolist() == [b"k\xfe"] and got["topic"].tolist() == ["T"]
    assert cl.read_columns(_write_tmp(raw))["keys"].tolist() == ["k\udcfe"]


def test_decode_records_refuses_positions_outside_the_buffer():
    rec = cl.encode_message(topic="T", body=b"x")
    outs = tuple(np.empty(1, dtype) for _, dtype in cc._DECODED)
    for bad in (-1, len(rec) - 8, len(rec)):
        with pytest.raises(ValueError, match="outside a buffer"):
            _records.decode_records(rec, np.array([bad], np.int64), outs)
    with pytest.raises(ValueError, match="not a walked record"):   # TOTALSIZE past the end
        _records.decode_records(rec + bytes(60), np.array([60], np.int64), outs)
    with pytest.raises(ValueError, match="output arrays"):
        _records.decode_records(rec, np.zeros(1, np.int64), outs[:-1])
    with pytest.raises(ValueError, match="must hold"):
        _records.decode_records(rec, np.zeros(2, np.int64), outs)
    assert _records.decode_records(rec, np.zeros(1, np.int64), outs) == -1


def test_span_objects_and_gather_spans_check_their_spans():
    buf = b"abc\xffdef"
    starts, lengths = np.array([0, -1, 3], np.int64), np.array([3, 5, 2], np.int64)
    assert _records.span_objects(buf, starts, lengths, False) == ["abc", None, "\udcffd"]
    assert _records.span_objects(buf, starts, lengths, True) == [b"abc", None, b"\xffd"]
    offsets = np.empty(4, np.int64)
    assert _records.gather_spans(buf, starts, lengths, offsets) == (b"abc\xffd", False)
    assert offsets.tolist() == [0, 3, 3, 5]
    assert _records.gather_spans(buf, starts[:1], lengths[:1], offsets[:2]) == (b"abc", True)
    for fn, extra in ((_records.span_objects, (False,)), (_records.gather_spans, (np.empty(2, np.int64),))):
        with pytest.raises(ValueError, match="outside a buffer"):
            fn(buf, np.array([6], np.int64), np.array([3], np.int64), *extra)


def test_read_at_in_several_files_equals_the_walk(tmp_path):
    """read_at of more offsets than its few-rows path takes, in several files, unsorted, with
    repeats, and of a handful (the few-rows path): the rows of read_columns in that order."""
    from rmqlab.formats.commitlog.columns import FEW_ROWS

    rng = np.random.default_rng(5)
    n = 600
    with cl.CommitLogWriter(tmp_path, file_size=1 << 14) as w:
        w.append({"topic": [f"T{i % 3}" for i in range(n)], "body": [bytes(rng.integers(0, 40)) for _ in range(n)],
                  "properties": [f"KEYS\x01k{i} x{i % 7}\x02TAGS\x01t{i % 5}\x02" for i in range(n)],
                  "born_host": [f"[::1]:{9 + i % 2}" if i % 9 == 0 else f"10.0.0.1:{9 + i % 2}" for i in range(n)]})
    every = cl.read_columns(tmp_path, check_crc=True)
    assert len(cl.store_files(tmp_path)) >= 5
    for size in (1, 3, FEW_ROWS, FEW_ROWS + 1, 3 * n):
        rows = rng.integers(0, n, size)
        got = cl.read_at(tmp_path, every["phy_offset"].to_numpy()[rows], check_crc=True)
        pd.testing.assert_frame_equal(got, every.iloc[rows].reset_index(drop=True), check_index_type=False)
        got = cl.read_at(tmp_path, np.sort(every["phy_offset"].to_numpy()[rows]), body=False)
        want = cl.read_columns(tmp_path, body=False).iloc[np.sort(rows)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)
