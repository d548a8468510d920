"""`rmqlab commitlog dump`."""
from __future__ import annotations

import base64
import json
from pathlib import Path

from oracles import REAL_DATA, needs_real_data

from rmqlab.cli import main
from rmqlab.formats import commitlog as cl

REAL = REAL_DATA / "rocketmq" / "store-4e25b979" / "commitlog"


def _dir(tmp_path, data: bytes) -> Path:
    d = tmp_path / "commitlog"
    d.mkdir()
    (d / f"{0:020d}").write_bytes(data)
    return d


def test_dump_json_fields_and_base64(tmp_path, capsys):
    recs = [cl.encode_message(topic="T", body=b"hello", properties={"KEYS": "k1"}, store_host="10.0.0.1:10911"),
            cl.encode_message(topic="T", body=b"\xff\xfe", queue_id=3, phy_offset=0)]
    d = _dir(tmp_path, b"".join(recs))
    assert main(["commitlog", "dump", str(d), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2
    a, b = lines
    for k in ("phy_offset", "total_size", "version", "body_crc", "queue_id", "flag", "queue_offset",
              "sys_flag", "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
              "prepared_transaction_offset", "topic", "properties", "body", "crc_ok"):
        assert k in a
    assert a["properties"] == {"KEYS": "k1"} and a["body"] == "hello" and a["crc_ok"] is True
    assert a["store_host"] == "10.0.0.1:10911" and a["total_size"] == len(recs[0])
    assert b["body_encoding"] == "base64" and base64.b64decode(b["body"]) == b"\xff\xfe" and b["queue_id"] == 3


def test_dump_limit_text_and_torn_tail(tmp_path, capsys):
    recs = [cl.encode_message(topic="T", body=b"m%d" % i) for i in range(3)]
    data = b"".join(recs)
    d = _dir(tmp_path, data[:-10])
    assert main(["commitlog", "dump", str(d), "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("phy ") == 1
    assert main(["commitlog", "dump", str(d), "--json"]) == 0
    cap = capsys.readouterr()
    assert len(cap.out.splitlines()) == 2 and "torn tail" in cap.err


def test_dump_damage_exit_1(tmp_path, capsys):
    rec = cl.encode_message(topic="T", body=b"x")
    bad = bytearray(rec * 2)
    bad[len(rec) + 4] ^= 0xFF
    d = _dir(tmp_path, bytes(bad) + bytes(10) + rec)   # junk after the damage: not a torn tail
    assert main(["commitlog", "dump", str(d / f"{0:020d}")]) == 1
    assert "MAGICCODE" in capsys.readouterr().err
    assert main(["commitlog", "dump", str(d), "--keep-going", "--json"]) == 1
    cap = capsys.readouterr()
    assert len(cap.out.splitlines()) == 1 and "damage" in cap.err


@needs_real_data(REAL)
def test_dump_real(capsys):
    assert main(["commitlog", "dump", str(REAL), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 47 and all(x["crc_ok"] and x["topic"] == "abc" for x in lines)
    assert [x["phy_offset"] for x in lines] == list(range(0, 8084, 172))


def test_dump_shows_compressed_bodies_decompressed_with_their_codec(tmp_path, capsys):
    import zlib

    import cramjam

    text = "压缩 body " * 600
    recs, offset = [], 0
    for sys_flag, packed in ((0x1, zlib.compress(text.encode())),                            # a 4.x client
                             (0x1 | 1 << 8, bytes(cramjam.lz4.compress(text.encode()))),
                             (0x1 | 2 << 8, bytes(cramjam.zstd.compress(text.encode()))),
                             (0x1 | 3 << 8, b"not zlib at all")):
        recs.append(cl.encode_message(topic="T", body=packed, sys_flag=sys_flag, phy_offset=offset))
        offset += len(recs[-1])
    d = _dir(tmp_path, b"".join(recs))
    assert main(["commitlog", "dump", str(d), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["body_codec"] for x in lines] == ["zlib", "lz4", "zstd", "zlib"]
    assert [x["body"] for x in lines[:3]] == [text] * 3
    assert [x["stored_body_size"] for x in lines] == [len(r) for r in (
        zlib.compress(text.encode()), cramjam.lz4.compress(text.encode()), cramjam.zstd.compress(text.encode()),
        b"not zlib at all")]
    assert "body_error" not in lines[0] and "does not decompress" in lines[3]["body_error"]
    assert lines[3]["body"] == "not zlib at all"                         # shown as stored
    assert main(["commitlog", "dump", str(d), "--json", "--raw-body"]) == 0
    raw = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert base64.b64decode(raw[0]["body"]) == zlib.compress(text.encode())
    assert main(["commitlog", "dump", str(d), "--limit", "2"]) == 0
    assert "body (utf-8, lz4, " in capsys.readouterr().out
