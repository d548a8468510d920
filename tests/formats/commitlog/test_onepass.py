"""The one-pass reader (``_records.walk_decode``, read_columns' default) against the decoder it
replaced (``columns._decode_positions``: the C walk, decode_records, find_props and the span
gathers), column for column and Arrow type for Arrow type, and the dispatch on its Arrow columns
against tests/support/dispatch_reference.py, on generated stores: property blocks with every wanted
name (repeated, empty, DELAY in any spelling, bytes that are not UTF-8, malformed pairs),
IPv4 and IPv6 hosts, v1 and v2 records, dictionaries that outgrow their first table, several
files, torn and damaged tails, and reads that start inside a file."""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from commitlog_stdlib import read_commitlog
from dispatch_reference import reference_dispatch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rmqlab import _records
from rmqlab.formats import commitlog as cl
from rmqlab.formats.commitlog import columns as cc
from rmqlab.formats.commitlog.layout import WANTED_PROPERTIES
from rmqlab.store.directory import Store
from rmqlab.store.indexservice import _arrow_key_columns, index_key_hashes
from tests.formats.commitlog.test_decode import as_objects, assert_rows_are_the_records, outcome
from tests.store.test_reput import tree_digest

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DELAYS = ["0", "1", "3", "18", "99", "-1", "-0", "007", "2147483648", "-2147483649", "999999999999999999",
          "9999999999999999999", "99999999999999999999", " 3", "3 ", "3.5", "1e3", "+4", "abc", "\u0663", "nan",
          "inf", "0x10", "-", "--1"]
WANTED = ["KEYS", "UNIQ_KEY", "TAGS", "DELAY"]
value_text = st.one_of(st.sampled_from(["", "a", "k1 k2", "  x  y ", "TagA", "é", "\U0001F600", "中文"]),
                       st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)),
                               max_size=10))


@st.composite
def property_blocks(draw, damage: bool = True) -> bytes:
    """A PROPERTIES block as bytes: wanted names (possibly twice: the last non-empty value
    counts), other names, empty values, DELAY spelt any way, bytes that are not UTF-8, the final
    \\x02 present or not, and (with `damage`) sometimes a malformed pair."""
    pairs = []
    for _ in range(draw(st.integers(0, 7))):
        name = draw(st.one_of(st.sampled_from(WANTED + ["WAIT", "CLUSTER", "KEYSX", "TAG", "__CRC32#"]),
                              st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)),
                                      min_size=1, max_size=6)))
        if name == "DELAY":
            value = draw(st.one_of(st.sampled_from(DELAYS), value_text)).encode()
        else:
            value = draw(value_text).encode()
        if draw(st.integers(0, 9)) == 0:
            value += b"\xff\xfe"          # not UTF-8
        pairs.append(name.encode("utf-8") + b"\x01" + value)
    block = b"\x02".join(pairs) + (b"\x02" if pairs and draw(st.booleans()) else b"")
    if damage and draw(st.integers(0, 7)) == 0:
        at = draw(st.integers(0, len(block)))
        block = block[:at] + draw(st.sampled_from([b"\x02\x02", b"\x02nosep\x02", b"\x02\x01v\x02", b"\x02"])) + \
            block[at:]
    return block


host_pool = [f"10.{i // 250}.{i % 250}.1:{1000 + i % 7}" for i in range(80)] + ["[::1]:9876", "[fe80::2]:1"]


@st.composite
def records(draw, damage: bool = True) -> list[bytes]:
    out = []
    topics = draw(st.sampled_from([["T"], ["T", "orders", "主题", "SCHEDULE_TOPIC_XXXX"],
                                   [f"topic{i}" for i in range(90)], ["T" * 130, "t\udcff"]]))
    for _ in range(draw(st.integers(0, 12))):
        topic = draw(st.sampled_from(topics))
        raw = cl.encode_message(topic=topic, body=draw(st.binary(max_size=40)),
                                properties=draw(property_blocks(damage)),
                                born_host=draw(st.sampled_from(host_pool)), store_host=draw(st.sampled_from(host_pool)),
                                sys_flag=draw(st.sampled_from([0, 0x4, 0x8, 0xC, 0x1])),
                                queue_id=draw(st.integers(0, 3)),
                                store_timestamp=draw(st.integers(0, 2**40)), version=draw(st.sampled_from([None, 2])))
        out.append(raw)
    return out


def _lengths_damaged(draw, rec: bytes) -> bytes:
    """`rec` with BODYLEN, TOPICLEN, PROPERTIESLENGTH or the SYSFLAG host bits rewritten."""
    r = bytearray(rec)
    head = cl.HEAD.unpack_from(r, 0)
    version = 1 if head.magic == cl.MAGIC_V1 else 2
    wide = 12   # an IPv6 address takes 16 bytes, an IPv4 one 4
    tail_at = cl.MIN_MESSAGE_SIZE - 3 - cl.TAIL.size + wide * (bool(head.sys_flag & 0x10) + bool(head.sys_flag & 0x20))
    body_len_at = tail_at + cl.TAIL.offset("body_len")
    body_len = struct.unpack_from(">i", r, body_len_at)[0]
    topic_len_at = body_len_at + 4 + body_len
    topic_len = r[topic_len_at] if version == 1 else struct.unpack_from(">h", r, topic_len_at)[0]
    where = draw(st.sampled_from(["body_len", "topic_len", "props_len", "sys_flag"]))
    if where == "body_len":
        struct.pack_into(">i", r, body_len_at, draw(st.integers(-2**31, 2**31 - 1)))
    elif where == "topic_len":
        struct.pack_into(">b" if version == 1 else ">h", r, topic_len_at, draw(st.integers(-128, 127)))
    elif where == "props_len":
        struct.pack_into(">h", r, topic_len_at + version + topic_len, draw(st.integers(-2**15, 2**15 - 1)))
    else:
        struct.pack_into(">i", r, cl.HEAD.offset("sys_flag"), head.sys_flag ^ draw(st.sampled_from([0x10, 0x20, 0x30])))
    return bytes(r)


@st.composite
def stores(draw, damage: bool = True) -> tuple[Path, list[int]]:
    """A commitlog/ folder of one to three files (each full one ends with the blank record and
    zeros) and the CommitLog offset of every record boundary of its last file."""
    file_size = 4096
    files, boundaries = [], []
    n_files = draw(st.integers(1, 3))
    for i in range(n_files):
        recs = [r for r in draw(records(damage)) if len(r) <= file_size - 8]
        data, pos = bytearray(), []
        for r in recs:
            if len(data) + len(r) + 8 > file_size:
                break
            pos.append(len(data))
            data += r
        if damage and pos and draw(st.integers(0, 4)) == 0:   # one record's lengths rewritten
            k = draw(st.integers(0, len(pos) - 1))
            bad = _lengths_damaged(draw, bytes(data[pos[k]:pos[k + 1] if k + 1 < len(pos) else len(data)]))
            data[pos[k]:pos[k] + len(bad)] = bad
        last = i == n_files - 1
        if not last:
            data += cl.blank_record(file_size - len(data))
        elif damage:
            tail = draw(st.sampled_from(["zeros", "torn", "junk", "none"]))
            if tail == "torn" and pos:
                data = data[:draw(st.integers(pos[-1], len(data)))]
            elif tail == "junk":
                data += draw(st.binary(min_size=1, max_size=30))
        data += bytes(file_size - len(data)) if len(data) < file_size else b""
        files.append(bytes(data[:file_size]))
        boundaries = [i * file_size + p for p in pos]
    root = Path(tempfile.mkdtemp()) / "commitlog"
    root.mkdir()
    for i, data in enumerate(files):
        (root / f"{i * file_size:020d}").write_bytes(data)
    return root, boundaries


def reference(path, **kw):
    return cc._read_columns(path, decode=cc._decode_positions, **kw)


def assert_one_pass_equals_reference(path, **kw):
    """read_columns' one pass and the decoder it replaced: the same errors, reports, pandas
    frames and Arrow arrays (types, dictionaries and nulls included)."""
    for arrow in (False, True):
        want = outcome(reference, path, arrow=arrow, **kw)
        got = outcome(cl.read_columns, path, arrow=arrow, **kw)
        if isinstance(want, tuple) or isinstance(got, tuple):
            assert got == want
            continue
        assert got.attrs["report"] == want.attrs["report"]
        assert list(got.columns) == list(want.columns)
        if not arrow:
            pd.testing.assert_frame_equal(got, want)
            continue
        for c in want.columns:
            a, b = pa.array(got[c]), pa.array(want[c])
            assert a.type == b.type, (c, a.type, b.type)
            assert a.equals(b), c


@SETTINGS
@given(stores(), st.booleans(), st.sampled_from(["raise", "report"]))
def test_one_pass_equals_the_decoder_it_replaced(store, body, on_error):
    root, _ = store
    assert_one_pass_equals_reference(root, body=body, on_error=on_error)


@SETTINGS
@given(stores(damage=False), st.data())
def test_one_pass_from_a_start_offset_equals_the_decoder_it_replaced(store, data):
    root, boundaries = store
    start = data.draw(st.sampled_from(boundaries)) if boundaries else 0
    assert_one_pass_equals_reference(root, body=True, start_offset=start)


@SETTINGS
@given(stores(damage=False))
def test_one_pass_reads_what_the_stdlib_reads(store):
    """Every message of every file, every field, as tests/support/commitlog_stdlib.py decodes it."""
    df = cl.read_columns(store[0], body=True, check_crc=True, on_error="report")
    assert_rows_are_the_records(df, read_commitlog(store[0]), check_crc=True)


@SETTINGS
@given(stores(), st.data())
def test_the_checks_without_columns_stop_where_the_one_pass_stops(store, data):
    """``_records.walk_checked`` (scan_file(columns=False): max_offset's walk of the active file)
    against walk_decode on the same bytes from a record boundary: the same rows, stop position,
    stop code and kind of damage; and scan_file with and without columns: the same end, stop code
    and damage."""
    root, boundaries = store
    files = cl.load_files(root).files
    for k, f in enumerate(files):
        buf = Path(f.path).read_bytes()
        starts = [b - f.start_offset for b in boundaries if f.start_offset <= b < f.start_offset + len(buf)]
        start = data.draw(st.sampled_from(starts)) if starts else 0
        want = cc._walk_decode_outputs(buf, start, body=False)[3][:4]
        assert _records.walk_checked(buf, start) == want
        scans = [cc.scan_file(buf, f, last=k == len(files) - 1, check_crc=False, report=cl.ReadReport(),
                              on_error="report", start=start, columns=columns) for columns in (True, False)]
        assert scans[1][0] is None and scans[1][1:] == scans[0][1:]


@SETTINGS
@given(stores(), st.integers(0, 14))
def test_the_one_pass_stops_after_max_records_as_the_walk_does(store, limit):
    """walk_decode's max_records (read_column_parts' parts: no header walk first) against the
    whole pass: the first `limit` rows, stopped with STOP_LIMIT where the next record starts,
    unless the whole pass ends before (or at the file's end right after) that many records."""
    root, _ = store
    for path in sorted(root.iterdir()):
        buf = path.read_bytes()
        whole = cc._walk_decode_outputs(buf, 0, body=False)
        n, stop_pos = whole[3][0], whole[3][1]
        limited = cc._walk_decode_outputs(buf, 0, body=False, max_records=limit)
        if n > limit or (n == limit and stop_pos < len(buf)):
            positions = np.frombuffer(_records.walk(buf, 0, len(buf), -1)[0], np.int64)
            at = int(positions[limit]) if limit < len(positions) else stop_pos
            assert limited[3][:4] == (limit, at, cl.STOP_LIMIT, 0)
            for name, column in limited[0].items():
                assert (column[:limit] == whole[0][name][:limit]).all(), name
        else:
            assert limited[3][:5] == whole[3][:5]


def test_dictionaries_and_hosts_outgrow_their_first_tables(tmp_path):
    """Hundreds of distinct topics, tags and hosts, in runs and interleaved: every value keeps the
    code of its first appearance."""
    rng = np.random.default_rng(5)
    recs = []
    for i in range(3000):
        t = int(rng.integers(0, 400)) if i % 3 else i // 10
        recs.append(cl.encode_message(topic=f"topic-{t}", body=b"b", born_host=f"10.0.{t % 250}.{t // 250}:{t}",
                                      store_host=host_pool[t % len(host_pool)],
                                      properties={"TAGS": f"tag{int(rng.integers(0, 700))}", "KEYS": f"k{i}",
                                                  "DELAY": str(int(rng.integers(-5, 30)))}))
    (tmp_path / "00000000000000000000").write_bytes(b"".join(recs))
    assert_one_pass_equals_reference(tmp_path, body=False)
    got = cl.read_columns(tmp_path, arrow=True)
    assert len(pa.array(got["topic"]).dictionary) == len(set(pa.array(got["topic"]).to_pylist()))


def test_delay_in_every_spelling_reads_as_before(tmp_path):
    """DELAY parsed in the pass (plain decimal integers, clamped to int32) or, for any other
    text, as the decoder it replaced parsed it."""
    recs = [cl.encode_message(topic="T", properties=b"DELAY\x01" + d.encode() + b"\x02KEYS\x01k")
            for d in DELAYS + ["1\xff"]] + [cl.encode_message(topic="T", properties=b"DELAY\x01\xff3")]
    (tmp_path / "00000000000000000000").write_bytes(b"".join(recs))
    assert_one_pass_equals_reference(tmp_path, body=False)
    got = cl.read_columns(tmp_path)["delay_level"].tolist()
    assert got[DELAYS.index("2147483648")] == 2**31 - 1 and got[DELAYS.index("-2147483649")] == -2**31
    assert got[DELAYS.index("007")] == 7 and got[DELAYS.index("abc")] == 0


def test_walk_decode_checks_its_outputs():
    rec = cl.encode_message(topic="T", properties={"KEYS": "k"})
    names = WANTED_PROPERTIES
    rows = [np.empty(2, t) for _, t in cc._WALKED]
    bitmaps = [np.empty(1, np.uint8) for _ in cc._WALKED_BITMAPS]
    text = [a for _ in cc._WALKED_TEXT for a in (np.empty(3, np.int64), np.empty(64, np.uint8))]
    assert _records.walk_decode(rec, 0, True, names, (*rows, *bitmaps, *text))[0] == 1
    with pytest.raises(ValueError, match="too short"):   # one row fewer than the bytes could hold
        _records.walk_decode(rec + rec, 0, True, names, (*rows, *bitmaps, *text))
    with pytest.raises(ValueError, match="output"):
        _records.walk_decode(rec, 0, True, names, (*rows[:-1], np.empty(1, np.int32), *bitmaps, *text))
    with pytest.raises(ValueError, match="text outputs"):
        small = [a for _ in cc._WALKED_TEXT for a in (np.empty(3, np.int64), np.empty(17, np.uint8))]
        _records.walk_decode(rec, 0, True, names, (*rows, *bitmaps, *small))
    with pytest.raises(ValueError, match="start"):
        _records.walk_decode(rec, len(rec) + 1, True, names, (*rows, *bitmaps, *text))
    with pytest.raises(ValueError):
        _records.walk_decode(rec, 0, True, names[:3], (*rows, *bitmaps, *text))


# ------------------------------------------------------------------------------ dispatch


def _dispatch_store(root: Path, commitlog: Path) -> Store:
    import shutil

    shutil.copytree(commitlog, root / "commitlog")
    return Store(root, commitlog_file_size=4096, hash_slot_num=8, index_num=32, consume_queue_file_size=400)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(stores())
def test_dispatch_on_arrow_columns_equals_the_reference(store):
    """Store.dispatch (Arrow columns) and the first-written dispatch (object columns): the same
    error, or the same report and the same bytes in every file written."""
    commitlog, _ = store
    base = Path(tempfile.mkdtemp())
    new, old = _dispatch_store(base / "new", commitlog), _dispatch_store(base / "old", commitlog)
    a = outcome(lambda _: new.dispatch(), None)
    b = outcome(lambda _: reference_dispatch(old), None)
    # the reference expands keys into Arrow strings, which cannot hold the surrogates that text
    # not in UTF-8 decodes to; dispatch reads such stores as str objects (tests/rules/test_dispatch.py)
    assume(not (isinstance(b, tuple) and b[0] is UnicodeEncodeError))
    if isinstance(b, tuple) or isinstance(a, tuple):   # the same error, naming its own copy
        assert isinstance(a, tuple) and (a[0], a[1].replace(str(new.root), str(old.root))) == b, (a, b)
        return
    assert a.as_dict() | {"seconds": 0} == b.as_dict() | {"seconds": 0}
    assert tree_digest(new.root) == tree_digest(old.root)


key_text = st.text(alphabet=st.sampled_from(["a", "B", " ", "é", "\u4e2d", "\U0001F600", "#", "\x00"]), max_size=12)


@given(st.lists(st.tuples(st.sampled_from(["T", "t\u00e9", "\U0001F600x"]), st.one_of(st.none(), key_text),
                          st.one_of(st.none(), key_text), st.integers(0, 50), st.sampled_from([0, 4, 8, 12])),
                max_size=30), st.integers(0, 60), st.booleans())
def test_index_key_hashes_from_arrow_buffers_equal_those_from_str_objects(rows, end_phy_offset, sliced):
    """_dispatchcore's UTF-8 twins against its str-object loops, on dictionary-coded topics and
    large_string keys (sliced: the buffers start before the array)."""
    def arrow(values, dictionary=False):
        arr = pa.array(["pad"] + values if sliced else values, pa.large_string())
        arr = arr.slice(1) if sliced else arr
        return pd.Series(pd.arrays.ArrowExtensionArray(arr.dictionary_encode() if dictionary else arr))

    topics, keys, uniq = ([r[i] for r in rows] for i in range(3))
    common = {"phy_offset": np.array([r[3] for r in rows], np.int64), "store_timestamp": np.arange(len(rows)),
              "sys_flag": np.array([r[4] for r in rows])}
    objects = common | {"topic": np.array(topics, object), "keys": np.array(keys, object),
                        "uniq_key": np.array(uniq, object)}
    arrows = common | {"topic": arrow(topics, dictionary=True), "keys": arrow(keys), "uniq_key": arrow(uniq)}
    assert _arrow_key_columns(arrows["topic"], arrows["keys"], arrows["uniq_key"], len(rows)) is not None
    want = index_key_hashes(objects, end_phy_offset=end_phy_offset)
    got = index_key_hashes(arrows, end_phy_offset=end_phy_offset)
    assert [g.tolist() if isinstance(g, np.ndarray) else g for g in got] == \
        [w.tolist() if isinstance(w, np.ndarray) else w for w in want]


def test_utf8_key_hashes_check_their_buffers():
    from rmqlab import _dispatchcore

    off, data = np.array([0, 3], np.int64), b"a b"
    with pytest.raises(ValueError, match="offsets"):
        _dispatchcore.count_keys_utf8(np.array([0, 4], np.int64), data, None, off, data, None, np.empty(1, np.int32))
    with pytest.raises(ValueError, match="offsets"):
        _dispatchcore.count_keys_utf8(off, data, None, off, data, None, np.empty(2, np.int32))
    with pytest.raises(ValueError, match="topic code"):
        _dispatchcore.key_hashes_utf8(np.array([1], np.int32), np.zeros(1, np.uint32), off, data, None, off, data,
                                      None, np.ones(1, np.uint8), np.empty(3, np.int64), np.empty(3, np.int32))
    with pytest.raises(ValueError, match="not UTF-8"):
        _dispatchcore.key_hashes_utf8(np.array([0], np.int32), np.zeros(1, np.uint32), off, b"a\xff ", None,
                                      np.array([0, 2], np.int64), b"\xff\xfe", None, np.ones(1, np.uint8),
                                      np.empty(2, np.int64), np.empty(2, np.int32))


def test_span_objects_fill_an_object_array_as_they_build_a_list():
    buf = b"ab\xffcd"
    starts, lengths = np.array([0, -1, 1, 4], np.int64), np.array([2, 0, 3, 1], np.int64)
    for as_bytes in (False, True):
        out = np.array(["old"] * 4, dtype=object)
        assert _records.span_objects(buf, starts, lengths, as_bytes, out) is None
        assert out.tolist() == _records.span_objects(buf, starts, lengths, as_bytes)
    with pytest.raises(ValueError, match="object array"):
        _records.span_objects(buf, starts, lengths, False, np.empty(3, dtype=object))
    with pytest.raises(ValueError, match="object array"):
        _records.span_objects(buf, starts, lengths, False, np.empty(4, dtype=np.int64))


# ------------------------------------------------------------------------------ parts


@SETTINGS
@given(stores(), st.integers(1, 5), st.booleans(), st.sampled_from(["raise", "report"]), st.data())
def test_parts_join_to_the_one_read(store, part_messages, arrow, on_error, data):
    """read_column_parts: parts of at most `part_messages` records whose rows, joined, are
    read_columns' rows, with the same report (damage, torn tail, end) or the same error, from
    the start or from a record boundary."""
    root, boundaries = store
    start = data.draw(st.sampled_from([0] + boundaries))
    want = outcome(cl.read_columns, root, body=True, arrow=arrow, on_error=on_error, start_offset=start)

    def parts(path, **kw):
        it = cl.read_column_parts(path, part_messages=part_messages, **kw)
        return list(it), it.report

    got = outcome(parts, root, body=True, arrow=arrow, on_error=on_error, start_offset=start)
    if isinstance(want, tuple):
        assert got == want
        return
    frames, report = got
    assert report == want.attrs["report"]
    assert all(0 < len(f) <= part_messages and f.attrs["report"] is report for f in frames)
    # with Arrow, text not UTF-8 makes a column binary in its own part only: compared as text
    rows = [as_objects(f) for f in frames]
    joined = {c: [v for r in rows for v in r[c]] for c in want.columns}
    assert joined == as_objects(want)


@SETTINGS
@given(st.lists(st.tuples(st.binary(max_size=40), st.sampled_from(["none", "appended", "wrong", "zero", "odd"]),
                          st.sampled_from([None, 2])), max_size=12), st.integers(1, 5))
def test_the_crc_spans_are_each_records_body_and_its_crc_property(recs, rows):
    """chunked_decode(crc_spans=True), a chunk of `rows` records at a time: each record's body
    span holds the body it was written with, and its __CRC32# state is what the record-by-record
    reader's broker rule says (records.prop_crc_matches): absent, a CRC the broker appended
    (matches), or a wrong, zero or odd value; a wrong BODYCRC does not stop the decode."""
    from rmqlab.formats.commitlog.records import prop_crc_matches

    data, bodies, want_state = bytearray(), [], []
    for body, crc, version in recs:
        props = {"KEYS": "k"}
        if crc in ("wrong", "zero", "odd"):
            props["__CRC32#"] = {"wrong": "1234567890", "zero": "0000000000", "odd": "12a"}[crc]
        rec = cl.encode_message(topic="T", body=body, properties=props, append_prop_crc=crc == "appended",
                                body_crc=7 if body and crc == "wrong" else None, version=version)
        state = prop_crc_matches(rec, cl.read_message(rec, 0).properties)
        want_state.append(-1 if state is None else int(state))
        bodies.append(body)
        data += rec
    data += cl.blank_record(8)
    root = Path(tempfile.mkdtemp())
    (root / f"{0:020d}").write_bytes(bytes(data) + bytes(max(0, 4096 - len(data))))
    seen: list[dict] = []
    keep = lambda cols, pos, first: seen.append(cols) or {"row": first + np.arange(len(pos))}  # noqa: E731
    f = cl.store_files(root)[0]
    with cc.ReadOnlyMap(f.path) as buf:
        cols, *_ = cc.scan_file(buf, f, last=True, check_crc=False, report=cl.ReadReport(), on_error="report",
                                body=False, decode=cc.chunked_decode(keep, rows, crc_spans=True))
        U = np.frombuffer(buf, np.uint8)
        start = np.concatenate([c["body_start"] for c in seen])
        length = np.concatenate([c["body_len"] for c in seen])
        got_bodies = [U[s:s + n].tobytes() for s, n in zip(start.tolist(), length.tolist())]
    assert cols["row"].tolist() == list(range(len(recs)))
    assert got_bodies == bodies
    assert np.concatenate([c["prop_crc_state"] for c in seen]).tolist() == want_state
    assert all(set(cc.CRC_SPAN_COLUMNS) <= set(c) for c in seen)
