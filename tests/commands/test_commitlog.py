"""`rmqlab commitlog dump`."""
from __future__ import annotations

import base64
import itertools
import json
import struct
import sys
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


# ------------------------------------------------------------------ --max-bytes and --body
# Truth: a standard-library walk of the files (struct: TOTALSIZE i32, MAGICCODE i32 at each
# record's start, the blank's magic ending a file), never rmqlab's reader.

_BLANK_MAGIC = 0xCBD43194
_HEAD = struct.Struct(">iiiiiqqiq8sq8siqi")   # TOTALSIZE .. BODYLEN of a v1 record with IPv4 hosts


def model_records(folder: Path) -> list[tuple[int, int, bytes]]:
    """(phy offset, TOTALSIZE, body) of every message, the files in name order, each walked from
    byte 0 to its blank record or the end of its data."""
    out = []
    for f in sorted(folder.iterdir()):
        data, pos = f.read_bytes(), 0
        while pos + 8 <= len(data):
            total, magic = struct.unpack_from(">iI", data, pos)
            if total <= 0 or magic == _BLANK_MAGIC:
                break
            body_len = _HEAD.unpack_from(data, pos)[-1]
            out.append((int(f.name) + pos, total, data[pos + _HEAD.size:pos + _HEAD.size + body_len]))
            pos += total
    return out


def _bounded(records, budget: int) -> tuple[list[int], int | None]:
    """The offsets a read of at most `budget` bytes of records returns, and the next one."""
    seen, used = [], 0
    for phy, size, _ in records:
        if used + size > budget:
            return seen, phy
        seen.append(phy)
        used += size
    return seen, None


def _json_lines(capsys) -> tuple[list[dict], str]:
    cap = capsys.readouterr()
    return [json.loads(x) for x in cap.out.splitlines()], cap.err


def _folder(tmp_path) -> Path:
    """Three small files of records of several sizes, each file ended by a blank record."""
    d = tmp_path / "commitlog"
    with cl.CommitLogWriter(d, file_size=500) as w:
        w.append({"topic": ["T"] * 12, "body": [b"x" * (7 * i % 40) for i in range(12)]})
    return d


def test_dump_max_bytes_reads_whole_records_up_to_the_bound(tmp_path, capsys):
    d = _folder(tmp_path)
    model = model_records(d)
    assert len({int(f.name) for f in d.iterdir()}) >= 3 and len(model) == 12
    ends = list(itertools.accumulate(size for _, size, _ in model))
    for budget in sorted({0, 1, 7, 8, ends[0] - 1, ends[0], ends[0] + 1, ends[3], ends[4] + 8, ends[5],
                          ends[6] - 1, ends[-1] - 1, ends[-1], ends[-1] + 1000}):
        assert main(["commitlog", "dump", str(d), "--json", "--max-bytes", str(budget)]) == 0, budget
        lines, err = _json_lines(capsys)
        want, next_phy = _bounded(model, budget)
        assert [x["phy_offset"] for x in lines] == want, budget
        if next_phy is None:
            # every record read; when the bound ends where they do, what follows (here the
            # preallocated zeros) is not read, and the dump says it stopped there
            end = model[-1][0] + model[-1][1]
            assert "--max-bytes" not in err or f"stopped at CommitLog offset {end} (the bound ends there)" in err
        else:
            assert f"--max-bytes {budget}: stopped at CommitLog offset {next_phy} " in err, (budget, err)
            assert "the rest of the log was not read" in err


def test_dump_max_bytes_reads_nothing_past_the_bound(tmp_path, capsys):
    recs = [cl.encode_message(topic="T", body=b"m%d" % i, phy_offset=0) for i in range(4)]
    sizes = [len(r) for r in recs]
    # the third record's MAGICCODE is damaged: a whole read stops there with an error
    bad = bytearray(b"".join(recs))
    bad[sum(sizes[:2]) + 4] ^= 0xFF
    d = _dir(tmp_path, bytes(bad))
    assert main(["commitlog", "dump", str(d), "--json"]) == 1
    assert "MAGICCODE" in capsys.readouterr().err
    # a bound before the damage never reaches it
    for budget in (sizes[0], sum(sizes[:2]), sum(sizes[:2]) + 7):
        assert main(["commitlog", "dump", str(d), "--json", "--max-bytes", str(budget)]) == 0
        lines, err = _json_lines(capsys)
        assert len(lines) == (1 if budget == sizes[0] else 2) and "MAGICCODE" not in err
    # the damaged head alone at the end of the bytes read, in the last file: only what follows
    # would tell damage from a write cut short, and that is not read
    assert main(["commitlog", "dump", str(d), "--json", "--max-bytes", str(sum(sizes[:2]) + 8)]) == 0
    assert f"stopped at CommitLog offset {sum(sizes[:2])} " in capsys.readouterr().err
    # a bound that takes in the damaged record and bytes after it reads the damage: exit 1
    assert main(["commitlog", "dump", str(d), "--json", "--max-bytes", str(sum(sizes[:3]) + 8)]) == 1
    assert "MAGICCODE" in capsys.readouterr().err


def test_dump_max_bytes_does_not_scan_the_zeros_past_the_bound(tmp_path, capsys):
    # the last file: messages, zeros, then junk far on. Read whole, the junk after the zeros is
    # damage; a bound inside the zeros must not look at the junk (nor at the zeros past it)
    recs = b"".join(cl.encode_message(topic="T", body=b"m%d" % i, phy_offset=0) for i in range(3))
    d = _dir(tmp_path, recs + bytes(4000) + b"\x13" * 64)
    assert main(["commitlog", "dump", str(d), "--json"]) == 1
    capsys.readouterr()
    assert main(["commitlog", "dump", str(d), "--json", "--max-bytes", str(len(recs) + 2000)]) == 0
    lines, err = _json_lines(capsys)
    assert len(lines) == 3 and f"stopped at CommitLog offset {len(recs)} (zeros up to the bound)" in err
    assert main(["commitlog", "dump", str(d), "--max-bytes", "-1"]) == 2


def test_dump_bodies_as_asked(tmp_path, capsys, monkeypatch):
    import textwrap
    import zlib

    bodies = [b'{"order": 1}', "café".encode("latin-1"), b"\x00\xff", b'{"order": 2}']
    recs, offset = [], 0
    for i, body in enumerate(bodies):
        packed, flag = (zlib.compress(body), 0x1) if i == 3 else (body, 0)
        recs.append(cl.encode_message(topic="T", body=packed, sys_flag=flag, phy_offset=offset))
        offset += len(recs[-1])
    d = _dir(tmp_path, b"".join(recs))
    stored = [b for _, _, b in model_records(d)]
    assert stored[:3] == bodies[:3] and zlib.decompress(stored[3]) == bodies[3]

    def dump(*opts):
        assert main(["commitlog", "dump", str(d), "--json", *opts]) == 0
        return _json_lines(capsys)[0]

    assert [bytes.fromhex(x["body"]) for x in dump("--body", "hex")] == bodies      # decompressed, as consumed
    assert [base64.b64decode(x["body"]) for x in dump("--body", "base64", "--raw-body")] == stored
    got = dump("--body", "json")
    assert [got[0]["body"], got[3]["body"]] == [{"order": 1}, {"order": 2}]
    assert got[1]["body_error"] == "not utf-8" and base64.b64decode(got[1]["body"]) == bodies[1]
    got = dump("--body", "json", "--charset", "latin-1")
    assert got[1]["body"] == "café" and got[1]["body_error"].startswith("not JSON")
    got = dump("--charset", "latin-1")
    assert got[1]["body"] == "café" and got[1]["body_encoding"] == "latin-1"
    assert all("body" not in x for x in dump("--body", "none"))
    # a decoder by import path, which raises for some bodies: those are shown as base64 with
    # the error, and the dump goes on
    (tmp_path / "clnt_decoders.py").write_text(textwrap.dedent("""
        import json
        def order(data):
            if not data.startswith(b"{"):
                raise ValueError("not an order")
            return json.loads(data)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    got = dump("--decoder", "clnt_decoders:order")
    assert [x.get("body_encoding") for x in got] == ["decoder", "base64", "base64", "decoder"]
    assert [got[0]["body"], got[3]["body"]] == [{"order": 1}, {"order": 2}]
    assert [base64.b64decode(got[i]["body"]) for i in (1, 2)] == bodies[1:3]
    assert got[1]["body_error"] == "decoder: ValueError: not an order"
    assert main(["commitlog", "dump", str(d), "--decoder", "clnt_decoders:order"]) == 0
    text = capsys.readouterr().out
    assert 'body (decoder): {"order": 1}' in text and "body (base64; decoder: ValueError: not an order): " in text
    assert main(["commitlog", "dump", str(d), "--decoder", "no_such_module_here:f"]) == 2
    sys.modules.pop("clnt_decoders", None)
