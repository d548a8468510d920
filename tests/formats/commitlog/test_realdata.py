"""The real CommitLog file (written by a RocketMQ broker) against an independent reader."""
from __future__ import annotations

import hashlib
import os
import struct
import zlib

import pytest
from oracles import REAL_DATA, require_real_data

from rmqlab.formats import commitlog as cl
from rmqlab.formats.msgid import parse_offset_msg_id

STORE = REAL_DATA / "rocketmq" / "store-4e25b979"
DIR = STORE / "commitlog"
FILE = DIR / "00000000000000000000"
SHA256 = "3b683a8aa6a6d0548bbf346b18ee0a06777bf8e70cb3b72bf0573375074a2f6b"



@pytest.fixture(autouse=True)
def _real_commitlog():
    """Every test here reads the real CommitLog: missing, they fail in CI and skip elsewhere."""
    require_real_data(FILE)


def independent_read(data: bytes):
    """A minimal reader written from the format description only (IPv4, v1/v2)."""
    out, p = [], 0
    while p + 8 <= len(data):
        size, magic = struct.unpack_from(">ii", data, p)
        if magic & 0xFFFFFFFF == 0xCBD43194:
            return out, ("blank", p, size)
        assert magic & 0xFFFFFFFF in (0xDAA320A7, 0xDAA320AB)
        (crc, qid, flag, qoff, phy, sysflag, born) = struct.unpack_from(">iiiqqiq", data, p + 8)
        q = p + 48
        assert sysflag & 0x30 == 0
        bip, bport = data[q:q + 4], struct.unpack_from(">i", data, q + 4)[0]
        store_ts, = struct.unpack_from(">q", data, q + 8)
        sip, sport = data[q + 16:q + 20], struct.unpack_from(">i", data, q + 20)[0]
        recon, prep, blen = struct.unpack_from(">iqi", data, q + 24)
        q += 40
        body = data[q:q + blen]
        q += blen
        if magic & 0xFFFFFFFF == 0xDAA320A7:
            tlen = data[q]
            q += 1
        else:
            tlen, = struct.unpack_from(">h", data, q)
            q += 2
        topic = data[q:q + tlen].decode()
        q += tlen
        plen, = struct.unpack_from(">h", data, q)
        props = data[q + 2:q + 2 + plen]
        assert q + 2 + plen - p == size
        out.append(dict(pos=p, total_size=size, body_crc=crc, queue_id=qid, flag=flag, queue_offset=qoff,
                        phy_offset=phy, sys_flag=sysflag, born_timestamp=born,
                        born_host=".".join(map(str, bip)) + f":{bport}", store_timestamp=store_ts,
                        store_host=".".join(map(str, sip)) + f":{sport}", reconsume_times=recon,
                        prepared_transaction_offset=prep, body=body, topic=topic, properties=props))
        p += size
    return out, ("end", p, None)


@pytest.fixture(scope="module")
def data() -> bytes:
    b = require_real_data(FILE).read_bytes()
    assert hashlib.sha256(b).hexdigest() == SHA256
    return b


def test_decodes_completely_and_matches_independent_reader(data):
    ref, stop = independent_read(data)
    assert stop == ("blank", 8084, 108) and len(ref) == 47
    stream = cl.iter_messages(DIR, check_crc=True)
    msgs = list(stream)
    assert stream.report.ok and stream.report.messages == 47 and stream.report.end_phy_offset == 8192
    assert len(msgs) == 47
    for m, r in zip(msgs, ref):
        for k in ("total_size", "body_crc", "queue_id", "flag", "queue_offset", "phy_offset", "sys_flag",
                  "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
                  "prepared_transaction_offset", "body", "topic"):
            assert getattr(m, k) == r[k], k
        assert m.properties_raw == r["properties"]
        assert m.position == r["pos"] == m.phy_offset      # file offset 0: phy offset == position
        assert m.body_crc == zlib.crc32(r["body"]) & 0x7FFFFFFF
        assert m.version == 1 and m.topic == "abc" and m.queue_id == 0
        assert m.keys == r["properties"].split(b"KEYS\x01")[1].split(b"\x02")[0].decode()
        assert m.tags is not None and m.uniq_key is None
    assert [m.queue_offset for m in msgs] == list(range(47))


def test_reencode_is_byte_identical(data):
    for m in cl.iter_messages(FILE):
        assert m.encode() == data[m.position:m.position + m.total_size]
        assert cl.encode_message(**m.record_fields()) == data[m.position:m.position + m.total_size]
    # the whole file, re-laid out by the vectorized encoder with the broker's 8 KiB file size
    df = cl.read_columns(DIR)
    import pandas as pd

    # one more message does not fit (172 + 8 > 108 bytes left): the blank record ends the file
    more = pd.concat([df, df.iloc[[0]]], ignore_index=True).drop(columns=["queue_offset"])
    batch = cl.encode_messages(more, 0, 8192)
    assert batch.queue_offset.tolist() == list(range(48))
    assert batch.phy_offset.tolist() == list(range(0, 8084, 172)) + [8192]
    f, g = batch.files
    assert f.full and bytes(f.data) == data[:8084 + 8]
    assert g.start_offset == 8192 and not g.full
    assert data[8092:] == bytes(len(data) - 8092)


def test_columns_equal_iterator(data):
    df = cl.read_columns(DIR, check_crc=True)
    assert list(df.columns) == list(cl.COLUMNS) + ["crc_ok", "prop_crc_ok"]
    assert df["prop_crc_ok"].isna().all()   # written before 5.2: no __CRC32# property
    msgs = list(cl.iter_messages(DIR))
    assert len(df) == len(msgs)
    for row, m in zip(df.itertuples(index=False), msgs):
        d = row._asdict()
        for k in ("topic", "queue_id", "flag", "queue_offset", "phy_offset", "sys_flag", "born_timestamp",
                  "born_host", "store_timestamp", "store_host", "reconsume_times",
                  "prepared_transaction_offset", "body", "total_size", "version", "body_crc",
                  "keys", "uniq_key", "tags", "delay_level"):
            assert d[k] == getattr(m, k), k
        assert d["properties"] == m.properties_raw.decode()
        assert d["crc_ok"]
    at = cl.read_at(DIR, df["phy_offset"].to_numpy()[::-1], check_crc=True)
    assert at.equals(df.iloc[::-1].reset_index(drop=True))
    assert cl.min_offset(DIR) == 0 and cl.max_offset(DIR) == 8192


def test_msg_ids_round_trip(data):
    from rmqlab.formats.msgid import offset_msg_ids_many

    df = cl.read_columns(DIR)
    ids = offset_msg_ids_many(df["store_host"].to_numpy(), df["phy_offset"].to_numpy())
    for mid, host, off in zip(ids, df["store_host"], df["phy_offset"]):
        parsed = parse_offset_msg_id(mid)
        assert parsed.store_host == host and parsed.phy_offset == off
    # no UNIQ_KEY in this file: the KEYS property is a ms timestamp close to the born time
    assert df["uniq_key"].isna().all()
    assert ((df["keys"].astype("int64") - df["born_timestamp"]).abs() < 1000).all()


def test_file_opened_read_only(data):
    st = os.stat(FILE)
    list(cl.iter_messages(FILE))
    cl.read_columns(FILE, check_crc=True)
    cl.read_message(FILE, 172)
    assert os.stat(FILE).st_mtime_ns == st.st_mtime_ns and FILE.read_bytes() == data
