"""A CommitLog read with the standard library alone, for tests that must not trust rmqlab's
readers: struct over the record layout of CommitLog.calMsgLength / MessageDecoder (read at
rocketmq-all-4.9.7 and 5.3.1): magic v1 (1-byte TOPICLEN) and v2 (2-byte TOPICLEN), IPv4 or
IPv6 born and store hosts as SYSFLAG's bits 0x10 / 0x20 say, the body CRC as
UtilAll.crc32(body) & 0x7FFFFFFF. Shares no code with the package."""
from __future__ import annotations

import ipaddress
import struct
import zlib
from pathlib import Path

BLANK_MAGIC = 0xCBD43194 - (1 << 32)
MAGIC_V1, MAGIC_V2 = 0xDAA320A7 - (1 << 32), 0xDAA320AB - (1 << 32)   # MessageDecoder.MESSAGE_MAGIC_CODE(_V2)
BORNHOST_V6, STOREHOST_V6 = 0x10, 0x20                                 # MessageSysFlag
_FRONT = struct.Struct(">iiiiiqqiq")     # TOTALSIZE .. BORNTIMESTAMP: 48 bytes


def _properties(s: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties: ``name 0x01 value 0x02`` pairs (the last 0x02
    optional), a pair without a name or a value skipped, the last of a repeated name kept."""
    out = {}
    for item in s.split("\x02"):
        kv = item.find("\x01")
        if 0 < kv < len(item) - 1:
            out[item[:kv]] = item[kv + 1:]
    return out


def _host(data: bytes, at: int, v6: bool) -> tuple[str, int]:
    n = 16 if v6 else 4
    ip = ipaddress.ip_address(data[at:at + n])
    (port,) = struct.unpack_from(">i", data, at + n)
    return (f"[{ip}]:{port}" if v6 else f"{ip}:{port}"), at + n + 4


def decode_record(data: bytes, pos: int) -> dict | None:
    """The record at `pos` of `data`, every field, or None when its layout does not add up to
    its TOTALSIZE (a length field negative or past the record, a magic that is neither v1 nor
    v2): what CommitLog.checkMessageAndReturnSize refuses as a bad record."""
    if pos + _FRONT.size > len(data):
        return None
    total, magic, body_crc, qid, flag, qoff, phy, sys_flag, born_ts = _FRONT.unpack_from(data, pos)
    end = pos + total
    if magic not in (MAGIC_V1, MAGIC_V2) or total < _FRONT.size or end > len(data):
        return None
    try:
        born_host, at = _host(data, pos + _FRONT.size, bool(sys_flag & BORNHOST_V6))
        (store_ts,) = struct.unpack_from(">q", data, at)
        store_host, at = _host(data, at + 8, bool(sys_flag & STOREHOST_V6))
        reconsume, prepared, body_len = struct.unpack_from(">iqi", data, at)
        at += 16
        if body_len < 0 or at + body_len > end:
            return None
        body = data[at:at + body_len]
        at += body_len
        if magic == MAGIC_V1:
            (topic_len,) = struct.unpack_from(">b", data, at)
            at += 1
        else:
            (topic_len,) = struct.unpack_from(">h", data, at)
            at += 2
        if topic_len < 0 or at + topic_len > end:
            return None
        topic = data[at:at + topic_len].decode("utf-8", "surrogateescape")
        at += topic_len
        (props_len,) = struct.unpack_from(">h", data, at)
        at += 2
        if props_len < 0 or at + props_len != end:
            return None
    except (struct.error, ValueError):
        return None
    raw = data[at:at + props_len].decode("utf-8", "surrogateescape")
    props = _properties(raw)
    return {"total_size": total, "version": 1 if magic == MAGIC_V1 else 2, "body_crc": body_crc,
            "queue_id": qid, "flag": flag, "queue_offset": qoff, "physical_offset": phy, "sys_flag": sys_flag,
            "born_timestamp": born_ts, "born_host": born_host, "store_timestamp": store_ts,
            "store_host": store_host, "reconsume_times": reconsume, "prepared_transaction_offset": prepared,
            "body": body, "topic": topic, "properties_raw": raw, "properties": props,
            "crc_ok": zlib.crc32(body) & 0x7FFFFFFF == body_crc}


def read_file(data: bytes, base: int = 0) -> list[dict]:
    """Every message of one CommitLog file's bytes, walked from byte 0 until a blank record, a
    zero size or a record :func:`decode_record` refuses; ``phy_offset`` = `base` + position."""
    out, pos = [], 0
    while pos + 8 <= len(data):
        total, magic = struct.unpack_from(">ii", data, pos)
        if total <= 0 or magic == BLANK_MAGIC:
            break
        rec = decode_record(data, pos)
        if rec is None:
            break
        rec["phy_offset"] = base + pos
        out.append(rec)
        pos += total
    return out


def read_commitlog(folder: Path) -> list[dict]:
    """Every message of a CommitLog folder: the files in name order, each walked from byte 0
    until a blank record or a zero size (:func:`read_file`); a record that does not add up
    stops the walk with an AssertionError naming it."""
    out = []
    for f in sorted(folder.iterdir()):
        data = f.read_bytes()
        got = read_file(data, int(f.name))
        end = (got[-1]["phy_offset"] - int(f.name) + got[-1]["total_size"]) if got else 0
        if end + 8 <= len(data):
            total, magic = struct.unpack_from(">ii", data, end)
            assert total <= 0 or magic == BLANK_MAGIC, f"{f}: the record at {end} does not add up"
        out.extend(got)
    return out
