"""A CommitLog read with the standard library alone, for tests that must not trust rmqlab's
readers: struct over the record layout of CommitLog.calMsgLength / MessageDecoder (read at
rocketmq-all-4.9.7), magic v1 with IPv4 hosts. A store it cannot read (v2 topics, IPv6 hosts)
fails the test that uses it until the reader learns them."""
from __future__ import annotations

import struct
from pathlib import Path

BLANK_MAGIC = 0xCBD43194 - (1 << 32)
_HEAD = struct.Struct(">iiiiiqqiq8sq8siqi")   # totalSize .. bodyLength, IPv4 born and store hosts


def read_commitlog(folder: Path) -> list[dict]:
    """Every message of a CommitLog folder: the files in name order, each walked from byte 0
    until a blank record or a zero size."""
    out = []
    for f in sorted(folder.iterdir()):
        data, pos = f.read_bytes(), 0
        while pos + 8 <= len(data):
            total, magic = struct.unpack_from(">ii", data, pos)
            if total <= 0 or magic == BLANK_MAGIC:
                break
            (_, _, _, qid, _, qoff, phy, sys_flag, _, _, stored, host, _, _, body_len) = _HEAD.unpack_from(data, pos)
            at = pos + _HEAD.size
            body = data[at:at + body_len]
            at += body_len
            topic = data[at + 1:at + 1 + data[at]].decode()
            at += 1 + data[at]
            (plen,) = struct.unpack_from(">h", data, at)
            props = dict(kv.split("\x01", 1) for kv in data[at + 2:at + 2 + plen].decode().split("\x02") if kv)
            out.append({"phy_offset": int(f.name) + pos, "queue_id": qid, "queue_offset": qoff, "topic": topic,
                        "store_timestamp": stored, "store_host": f"{'.'.join(map(str, host[:4]))}:"
                                                                 f"{int.from_bytes(host[4:], 'big')}",
                        "body": body, "properties": props, "total_size": total, "sys_flag": sys_flag})
            pos += total
    return out
