"""CommitLog encode/decode: round trips, layout across files, C walk vs Python model, bad input."""
from __future__ import annotations

import os
import struct
import zlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_model import java_string_to_properties

from rmqlab import _records
from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.formats import commitlog as cl
from rmqlab.formats.msgid import parse_host

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

hosts4 = st.builds(lambda a, p: f"{a[0]}.{a[1]}.{a[2]}.{a[3]}:{p}",
                   st.lists(st.integers(0, 255), min_size=4, max_size=4), st.integers(0, 65535))
hosts6 = st.builds(lambda a, p: f"[{a}]:{p}", st.ip_addresses(v=6).map(str), st.integers(0, 65535))
hosts = st.one_of(hosts4, hosts6)
text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=12)
names = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=8)
i32 = st.integers(-2**31, 2**31 - 1)
i64 = st.integers(-2**63, 2**63 - 1)


@st.composite
def messages(draw, big_body=True):
    topic = draw(st.one_of(st.text(min_size=1, max_size=10).filter(lambda t: "\x00" not in t),
                           st.just("T" * 130), st.sampled_from(["TopicTest", "主题", "SCHEDULE_TOPIC_XXXX"])))
    props = draw(st.dictionaries(names, text.filter(bool), max_size=5))
    body = draw(st.one_of(st.binary(max_size=64), st.just(b""),
                          st.binary(min_size=3000, max_size=3000) if big_body else st.just(b"x")))
    return dict(topic=topic, body=body, queue_id=draw(i32), flag=draw(i32), queue_offset=draw(i64),
                phy_offset=draw(i64), sys_flag=draw(st.integers(0, 0xF)) | draw(st.sampled_from([0, 0x1])),
                born_timestamp=draw(i64), born_host=draw(hosts), store_timestamp=draw(i64),
                store_host=draw(hosts), reconsume_times=draw(i32), prepared_transaction_offset=draw(i64),
                properties=props, version=draw(st.sampled_from([None, 2])))


# ------------------------------------------------------------------------------ round trips


@FAST
@given(messages())
def test_encode_decode_round_trip(fields):
    rec = cl.encode_message(**fields)
    m = cl.read_message(rec, 0, check_crc=True)
    assert m.total_size == len(rec)
    assert m.version == (fields["version"] or (2 if len(fields["topic"].encode()) > 127 else 1))
    for k in ("topic", "body", "queue_id", "flag", "queue_offset", "phy_offset", "born_timestamp",
              "store_timestamp", "reconsume_times", "prepared_transaction_offset"):
        assert getattr(m, k) == fields[k], k
    assert m.properties == fields["properties"] and list(m.properties) == list(fields["properties"])
    assert m.sys_flag & 0xF == fields["sys_flag"] & 0xF
    assert bool(m.sys_flag & 0x10) == fields["born_host"].startswith("[")
    assert bool(m.sys_flag & 0x20) == fields["store_host"].startswith("[")
    for h in ("born_host", "store_host"):
        assert parse_host(getattr(m, h)) == parse_host(fields[h])
    assert m.body_crc == zlib.crc32(fields["body"]) & 0x7FFFFFFF and m.crc_ok
    assert m.encode() == rec
    # the columnar reader sees the same message
    df = cl.read_columns(_write_tmp(rec), check_crc=True)
    row = df.iloc[0]
    assert row["topic"] == m.topic and row["body"] == m.body and row["born_host"] == m.born_host
    assert row["store_host"] == m.store_host and row["properties"] == m.properties_raw.decode()
    assert row["keys"] == m.keys and row["tags"] == m.tags and row["uniq_key"] == m.uniq_key


_TMP = []


def _write_tmp(data: bytes, name="00000000000000000000"):
    import tempfile

    d = tempfile.mkdtemp()
    _TMP.append(d)
    p = os.path.join(d, name)
    with open(p, "wb") as fh:
        fh.write(data)
    return p


def test_v1_fixed_overhead_and_layout():
    assert cl.MIN_MESSAGE_SIZE == 91
    rec = cl.encode_message(topic="", body=b"")
    assert len(rec) == 91 and struct.unpack_from(">ii", rec) == (91, cl.MAGIC_V1)
    assert cl.HEAD.size == 48 and cl.HEAD.offset("sys_flag") == 36
    v2 = cl.encode_message(topic="t", version=2)
    assert struct.unpack_from(">i", v2, 4)[0] & 0xFFFFFFFF == 0xDAA320AB and len(v2) == 93


def test_property_order_and_duplicates_kept_in_raw_block():
    block = "B\x01x\x02A\x01y\x02B\x01z\x02E\x01\x02"   # duplicate B, empty value E
    rec = cl.encode_message(topic="T", properties=block)
    m = cl.read_message(rec, 0)
    assert m.properties == {"B": "z", "A": "y"}          # later duplicate wins, empty skipped (Java)
    assert m.properties_raw == block.encode() and m.encode() == rec


def test_prop_crc_like_java():
    rec = cl.encode_message(topic="T", body=b"abc", properties={"KEYS": "k"}, append_prop_crc=True,
                            phy_offset=1234)
    tail = rec[-cl.CRC32_RESERVED_LEN:]
    assert tail.startswith(b"__CRC32#\x01") and tail.endswith(b"\x02")
    crc = zlib.crc32(rec[:-cl.CRC32_RESERVED_LEN]) & 0x7FFFFFFF
    assert tail[9:19] == str(crc).zfill(10)[::-1].encode()      # least significant digit first
    assert cl.prop_crc_value(rec[-30:]) == crc
    m = cl.read_message(rec, 0)
    assert m.properties["KEYS"] == "k" and "__CRC32#" in m.properties
    # re-appending replaces the old property, and adds the missing \x02
    again = cl.encode_message(**m.record_fields(), append_prop_crc=True)
    assert again == rec
    assert cl.encode_message(topic="T", properties="K\x01v", append_prop_crc=True).count(b"\x02") == 2


# --------------------------------------------------------------------- encode_messages layout


def _per_message_layout(rows, start, file_size):
    """Expected files from encode_message one by one (the broker's rule, written plainly)."""
    files, cur = {}, start
    phys = []
    for r in rows:
        rec = cl.encode_message(**{**r, "phy_offset": 0})
        fstart = cur - cur % file_size
        pos = cur - fstart
        if len(rec) + 8 > file_size - pos:
            files.setdefault(fstart, bytearray()).extend(cl.blank_record(file_size - pos))
            cur = fstart + file_size
            fstart, pos = cur, 0
        rec = cl.encode_message(**{**r, "phy_offset": cur})
        files.setdefault(fstart, bytearray()).extend(rec)
        phys.append(cur)
        cur += len(rec)
    return files, phys, cur


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages(big_body=False), min_size=1, max_size=25), st.integers(0, 300), st.integers(400, 900))
def test_encode_messages_equals_per_message_encoding(rows, start, file_size):
    for r in rows:
        r["version"] = r["version"] or (2 if len(r["topic"].encode()) > 127 else 1)
        r["properties"] = cl.properties_block(r["properties"]).decode()
        r["sys_flag"] &= 0x3    # no transaction bits: queue offsets are given here anyway
    rows = [r for r in rows if cl.message_length(len(r["body"]), len(r["topic"].encode()),
                                                 len(r["properties"].encode()), 0x30, 2) + 8 <= file_size]
    if not rows:
        return
    start = min(start, file_size - 200)
    df = pd.DataFrame(rows).drop(columns=["phy_offset"])
    batch = cl.encode_messages(df, start, file_size)
    files, phys, end = _per_message_layout(rows, start, file_size)
    assert batch.phy_offset.tolist() == phys and batch.end_offset == end
    assert [f.start_offset for f in batch.files] == sorted(files)
    for f in batch.files:
        assert bytes(f.data) == bytes(files[f.start_offset])
        assert f.position == (start % file_size if f is batch.files[0] else 0)


def test_queue_offsets_and_prepared_index_like_the_broker():
    P, C, R = 0x4, 0x8, 0xC
    cols = {"topic": ["A", "A", "B", "A", "A", "A"], "queue_id": [0, 0, 0, 1, 0, 0],
            "sys_flag": [0, P, 0, 0, C, R], "body": [b"1", b"2", b"3", b"4", b"2", b""],
            "prepared_index": [-1, -1, -1, -1, 1, 1]}
    b = cl.encode_messages(cols, 0, 1 << 20, queue_table={("A", 0): 10})
    assert b.queue_offset.tolist() == [10, 0, 0, 0, 11, 0]
    assert b.queue_table == {("A", 0): 12, ("B", 0): 1, ("A", 1): 1}
    df = cl.read_columns(_write_tmp(bytes(b.files[0].data)))
    assert df["prepared_transaction_offset"].tolist() == [0, 0, 0, 0, b.phy_offset[1], b.phy_offset[1]]


def test_writer_preallocates_resumes_and_never_rewrites(tmp_path):
    rows = {"topic": ["T"] * 30, "body": [b"x" * 50] * 30, "queue_id": [0, 1] * 15}
    with cl.CommitLogWriter(tmp_path, file_size=2048) as w:
        w.append(rows)
    names = sorted(os.listdir(tmp_path))
    assert all(os.path.getsize(tmp_path / n) == 2048 for n in names) and len(names) == 3  # 30 x 142 bytes
    before = {n: (tmp_path / n).read_bytes() for n in names}
    with cl.CommitLogWriter(tmp_path, file_size=2048) as w:
        assert w.queue_table == {("T", 0): 15, ("T", 1): 15}
        b = w.append(rows)
    assert b.queue_offset[:4].tolist() == [15, 15, 16, 16]
    for n, old in before.items():     # old bytes unchanged; only zeros were written over
        new = (tmp_path / n).read_bytes()
        used = len(old.rstrip(b"\0"))
        assert new[:used] == old[:used]
    df = cl.read_columns(tmp_path)
    assert len(df) == 60 and df["queue_offset"].tolist()[-2:] == [29, 29]
    assert df.attrs["report"].ok and (df["phy_offset"].diff().dropna() > 0).all()
    assert cl.min_offset(tmp_path) == 0 and cl.max_offset(tmp_path) == df.attrs["report"].end_phy_offset


# ------------------------------------------------------------------------- C vs Python walk


@st.composite
def damaged_logs(draw):
    recs = [cl.encode_message(topic=draw(st.sampled_from(["a", "TopicX"])), body=draw(st.binary(max_size=40)),
                              properties={"KEYS": "k"}) for _ in range(draw(st.integers(0, 8)))]
    data = bytearray(b"".join(recs))
    tail = draw(st.sampled_from(["none", "blank", "zeros", "junk"]))
    if tail == "blank":
        data += cl.blank_record(64) + bytes(56)
    elif tail == "zeros":
        data += bytes(draw(st.integers(1, 40)))
    elif tail == "junk":
        data += draw(st.binary(min_size=1, max_size=40))
    for _ in range(draw(st.integers(0, 3))):
        if data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
    if data and draw(st.booleans()):
        data = data[:draw(st.integers(0, len(data)))]
    return bytes(data)


@settings(max_examples=200, deadline=None)
@given(damaged_logs(), st.integers(-1, 5))
def test_c_walk_equals_python_walk(data, limit):
    pos, stop, code = _records.walk(data, 0, len(data), limit)
    assert (np.frombuffer(pos, np.int64).tolist(), stop, code) == tuple(cl.walk_py(data, 0, len(data), limit))


@settings(max_examples=120, deadline=None)
@given(damaged_logs(), st.booleans())
def test_columnar_reader_equals_iterator_on_damaged_logs(data, crc):
    p = _write_tmp(data)
    it = cl.iter_messages(p, check_crc=crc, on_error="report")
    msgs = list(it)
    df = cl.read_columns(p, check_crc=crc, on_error="report")
    rep = df.attrs["report"]
    assert df["phy_offset"].tolist() == [m.phy_offset for m in msgs]
    assert len({m.position for m in msgs}) == len(msgs)
    assert rep.damage == it.report.damage and rep.torn_tail == it.report.torn_tail
    assert rep.end_phy_offset == it.report.end_phy_offset
    if msgs:
        assert df["body"].tolist() == [m.body for m in msgs]
        assert df["properties"].tolist() == [m.properties_raw.decode("utf-8", "surrogateescape") for m in msgs]


# ------------------------------------------------------------------------------- bad input


def _log(n=3):
    recs = [cl.encode_message(topic="T", body=b"body%d" % i, properties={"KEYS": f"k{i}"}) for i in range(n)]
    return recs, b"".join(recs)


def _two_files(tmp_path, first: bytes, second: bytes):
    d = tmp_path / "commitlog"
    d.mkdir()
    (d / f"{0:020d}").write_bytes(first)
    (d / f"{len(first):020d}").write_bytes(second)
    return d


@pytest.mark.parametrize("where,value,field", [
    (4, b"\x12\x34\x56\x78", "MAGICCODE"),             # bad magic
    (0, struct.pack(">i", 200), "TOTALSIZE"),         # TOTALSIZE larger than the fields
    (84, struct.pack(">i", 999), "BODYLEN"),          # BODYLEN runs past TOTALSIZE
])
def test_bad_records_raise_typed_errors_or_report(tmp_path, where, value, field):
    recs, data = _log()
    bad = bytearray(data)
    off = len(recs[0])                                  # damage the second record
    bad[off + where:off + where + len(value)] = value
    d = _two_files(tmp_path, bytes(bad) + cl.blank_record(40) + bytes(32), data)
    first = d / f"{0:020d}"
    with pytest.raises(FormatError) as e:
        list(cl.iter_messages(d))
    assert (e.value.path, e.value.offset, e.value.field) == (str(first), off, field)
    with pytest.raises(FormatError) as e2:
        cl.read_columns(d)
    assert (e2.value.path, e2.value.offset, e2.value.field) == (str(first), off, field)
    df = cl.read_columns(d, on_error="report")
    rep = df.attrs["report"]
    assert len(df) == 1 + 3 and [x.field for x in rep.damage] == [field]   # the next file is read
    assert rep.damage[0].offset == off and rep.torn_tail is None


def test_crc_mismatch_only_when_checked(tmp_path):
    recs, data = _log()
    bad = bytearray(data)
    bad = bytearray(data)
    body_at = len(recs[0]) + len(recs[1]) + 88
    assert bytes(bad[body_at:body_at + 5]) == b"body2"
    bad[body_at] ^= 0x01
    p = _write_tmp(bytes(bad))
    assert len(cl.read_columns(p)) == 3
    with pytest.raises(FormatError) as e:
        cl.read_columns(p, check_crc=True)
    assert (e.value.offset, e.value.field) == (len(recs[0]) + len(recs[1]), "BODYCRC")
    with pytest.raises(FormatError) as e:
        list(cl.iter_messages(p, check_crc=True))
    assert (e.value.offset, e.value.field) == (len(recs[0]) + len(recs[1]), "BODYCRC")


def test_malformed_property_pairs_are_skipped_as_the_broker_skips_them(tmp_path):
    # a 5.2.0 broker multi-dispatching a message wrote "...\x02r-5 shared\x02WAIT\x01true" (the
    # tail of an earlier block) and reads it back; no record of it is damage. The judge is the
    # broker's parser statement by statement (reference_model; its bytecode read in the 4.9.2
    # and 5.2.0 jars agrees)
    rng = np.random.default_rng(5)
    pieces = ["KEYS\x01a b", "TAGS\x01t", "UNIQ_KEY\x01U1", "NOSEP", "", "\x01v", "K\x01", "r-5 shared",
              "WAIT\x01true", "KEYS\x01k2", "TAGS\x01", "x\x01y\x01z"]
    blocks = ["\x02".join(rng.choice(pieces, size=rng.integers(1, 7))) + ("\x02" if rng.random() < 0.5 else "")
              for _ in range(300)]
    recs = [cl.encode_message(topic="T", properties=b, phy_offset=0) for b in blocks]
    p = _write_tmp(b"".join(recs))
    df = cl.read_columns(p)
    assert len(df) == len(blocks) and df.attrs["report"].ok
    for b, (_, row) in zip(blocks, df.iterrows()):
        want = java_string_to_properties(b)
        assert cl.parse_properties(b.encode()) == want, repr(b)
        for column, name in (("keys", "KEYS"), ("tags", "TAGS"), ("uniq_key", "UNIQ_KEY")):
            got = row[column]
            assert (None if pd.isna(got) else got) == want.get(name), (repr(b), column)
    assert [m.properties for m in cl.iter_messages(p)] == [java_string_to_properties(b) for b in blocks]
    # a last pair without its \x02 is how brokers 4.9.1 to 5.1.x store every block: no damage
    assert cl.parse_properties(b"A\x01b") == {"A": "b"}


def test_torn_tail_cut_at_every_byte(tmp_path):
    recs, data = _log()
    last = len(data) - len(recs[-1])
    for cut in range(last, len(data) + 1):
        p = _write_tmp(data[:cut])
        for reader in ("iter", "cols"):
            if reader == "iter":
                it = cl.iter_messages(p, check_crc=True)
                n = len(list(it))
                rep = it.report
            else:
                df = cl.read_columns(p, check_crc=True)
                n, rep = len(df), df.attrs["report"]
            if cut in (last, len(data)) or not any(data[last:cut]):   # a zero prefix reads as unwritten space
                assert rep.torn_tail is None and n == (3 if cut == len(data) else 2)
            else:
                assert n == 2 and not rep.damage
                t = rep.torn_tail
                assert (t.path, t.offset, t.kind) == (p, last, "torn-tail") and t.field == "TOTALSIZE"
            assert rep.end_phy_offset == (len(data) if cut == len(data) else last)
    # a torn write into a preallocated file: the last record half written, zeros after
    pre = bytearray(data + bytes(500))
    pre[last + 60:len(data)] = bytes(len(data) - last - 60)
    df = cl.read_columns(_write_tmp(bytes(pre)))
    assert len(df) == 2 and df.attrs["report"].torn_tail.offset == last
    # ... but the same damage in a file that is not the last is damage
    d = _two_files(tmp_path, bytes(pre), data)
    with pytest.raises(FormatError):
        cl.read_columns(d)


def test_zeros_after_last_message_are_a_clean_end():
    recs, data = _log()
    df = cl.read_columns(_write_tmp(data + bytes(1000)))
    rep = df.attrs["report"]
    assert len(df) == 3 and rep.ok and rep.end_phy_offset == len(data)


def test_read_at_and_read_message_errors(tmp_path):
    recs, data = _log()
    p = _write_tmp(data + bytes(100))
    df = cl.read_at(os.path.dirname(p), [len(recs[0]), 0, len(recs[0])])
    assert df["body"].tolist() == [b"body1", b"body0", b"body1"]
    with pytest.raises(FormatError) as e:
        cl.read_at(os.path.dirname(p), [5])
    assert (e.value.offset, e.value.field) == (5, "MAGICCODE")
    with pytest.raises(TruncatedFileError) as e:
        cl.read_message(data[:-3], len(recs[0]) + len(recs[1]))
    assert e.value.field == "TOTALSIZE"
    with pytest.raises(ValueError):
        cl.read_at(os.path.dirname(p), [10**9])


def test_inputs_are_opened_read_only(tmp_path):
    recs, data = _log()
    p = tmp_path / f"{0:020d}"
    p.write_bytes(data)
    os.chmod(p, 0o444)
    mt = os.stat(p).st_mtime_ns
    list(cl.iter_messages(p))
    cl.read_columns(tmp_path, check_crc=True)
    cl.read_at(tmp_path, [0])
    cl.max_offset(tmp_path)
    assert os.stat(p).st_mtime_ns == mt and p.read_bytes() == data


def test_encode_records_checks_rows_before_writing():
    def args(dst, total, dst_off=0, code=0):
        def i(*v):
            return np.array(v, np.int64)

        ip = np.zeros(16, np.uint8)
        body, topic = np.frombuffer(b"xy", np.uint8), np.frombuffer(b"T", np.uint8)
        return (dst, i(dst_off), i(total), i(1), i(0), i(0), i(0), i(0), i(0), i(0), i(code), i(0), i(0),
                i(0), i(0), ip, i(4), i(0), ip, i(4), i(0), body, i(0, 2), topic, i(0, 1), body, i(0, 0))

    ok = np.empty(94, np.uint8)
    _records.encode_records(*args(ok, 94))
    assert bytes(ok) == cl.encode_message(topic="T", body=b"xy", born_host="0.0.0.0:0", store_host="0.0.0.0:0")
    for bad in (args(np.zeros(94, np.uint8), 95), args(np.zeros(93, np.uint8), 94),
                args(np.zeros(100, np.uint8), 94, dst_off=7), args(np.zeros(94, np.uint8), 94, code=1)):
        with pytest.raises(ValueError):
            _records.encode_records(*bad)
        assert not bad[0].any()
