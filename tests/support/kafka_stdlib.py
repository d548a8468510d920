"""Kafka segments and their internal topics read with the standard library alone, for tests that
must not trust rmqlab's readers on real data.

Nothing here imports rmqlab (nor kafka-python): struct over the layouts of Kafka's own classes,
read at Apache Kafka 3.6.2: DefaultRecordBatch / DefaultRecord (magic 2 batches and their
records, varints, gzip via zlib), the group coordinator's schemas (OffsetCommitKey/Value v0-4,
GroupMetadataKey/Value v0-4, ConsumerProtocolSubscription / ConsumerProtocolAssignment), the
control records' ControlRecordType key and LeaderChangeMessage / SnapshotHeaderRecord values,
and the KRaft metadata record frame (frame version, api key, version) with the bodies of
TopicRecord (api key 2) and FeatureLevelRecord (api key 12). Cost: each file is read whole into
memory and walked once, O(file size).

A layout it does not know (magic 0/1 message sets, codecs other than none and gzip, other
metadata records' bodies) raises ``ValueError``: the test that needs it fails until the reader
learns it, rather than seeing nothing.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

_BATCH = struct.Struct(">qiibIhiqqqhii")   # baseOffset .. recordsCount: 61 bytes
_CONTROL = 0x20


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as Kafka's Crc32C: table driven, one byte at a time."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


class _In:
    """A cursor over bytes: big-endian fixed ints, zig-zag and unsigned varints, Kafka strings."""

    def __init__(self, data: bytes, pos: int = 0):
        self.data, self.pos = data, pos

    def fixed(self, fmt: str):
        (v,) = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def uvarint(self) -> int:
        shift = n = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def varint(self) -> int:
        n = self.uvarint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"{n} bytes wanted at {self.pos} of {len(self.data)}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def string(self, compact: bool = False) -> str | None:
        n = self.uvarint() - 1 if compact else self.fixed("h")
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def blob(self, compact: bool = False) -> bytes | None:
        n = self.uvarint() - 1 if compact else self.fixed("i")
        return None if n < 0 else self.take(n)

    def count(self, compact: bool = False) -> int:
        return self.uvarint() - 1 if compact else self.fixed("i")

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def at_end(self) -> bool:
        return self.pos == len(self.data)


def read_batches(path: Path) -> list[dict]:
    """Every magic-2 batch of a ``.log`` (or KRaft ``.checkpoint``) file, in file order, each
    with its header fields, ``crc_ok`` and its records (offset, timestamp, key, value). Stops at
    a tail shorter than a batch header."""
    data, pos, out = Path(path).read_bytes(), 0, []
    while pos + _BATCH.size <= len(data):
        (base, length, epoch, magic, crc, attrs, last_delta, first_ts, max_ts, pid, pepoch, bseq,
         count) = _BATCH.unpack_from(data, pos)
        if magic != 2:
            raise ValueError(f"magic {magic} at {pos}: this reader knows magic 2 only")
        end = pos + 12 + length
        body = data[pos + _BATCH.size:end]
        codec = attrs & 7
        if codec == 1:
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif codec != 0:
            raise ValueError(f"codec {codec} at {pos}: this reader knows none and gzip")
        cur, records = _In(body), []
        for _ in range(count):
            size = cur.varint()
            start = cur.pos
            cur.fixed("b")                      # record attributes: unused
            ts_delta, off_delta = cur.varint(), cur.varint()
            klen = cur.varint()
            key = None if klen < 0 else cur.take(klen)
            vlen = cur.varint()
            value = None if vlen < 0 else cur.take(vlen)
            for _h in range(cur.varint()):
                cur.take(cur.varint())
                hlen = cur.varint()
                if hlen >= 0:
                    cur.take(hlen)
            if cur.pos - start != size:
                raise ValueError(f"record of {size} bytes read as {cur.pos - start} in the batch at {pos}")
            records.append({"offset": base + off_delta, "timestamp": first_ts + ts_delta, "key": key, "value": value})
        out.append({"position": pos, "base_offset": base, "last_offset": base + last_delta, "size": 12 + length,
                    "partition_leader_epoch": epoch, "attributes": attrs, "codec": codec,
                    "is_control": bool(attrs & _CONTROL), "is_transactional": bool(attrs & 0x10),
                    "max_timestamp": max_ts, "producer_id": pid, "producer_epoch": pepoch, "base_sequence": bseq,
                    "crc_ok": crc32c(data[pos + 21:end]) == crc, "records": records})
        pos = end
    return out


def read_records(path: Path) -> list[dict]:
    """Every record of every batch of a file, each with its batch's ``is_control`` flag."""
    return [dict(r, is_control=b["is_control"]) for b in read_batches(path) for r in b["records"]]


# ------------------------------------------------------------------ __consumer_offsets


def _topic_partitions(cur: _In) -> list[tuple[str | None, list[int]]]:
    out = []
    for _ in range(cur.count()):
        topic = cur.string()
        out.append((topic, [cur.fixed("i") for _p in range(cur.count())]))
    return out


def consumer_subscription_topics(raw: bytes) -> list[str | None]:
    """ConsumerProtocolSubscription's topics (any version: the topics come first)."""
    cur = _In(raw)
    cur.fixed("h")
    return [cur.string() for _ in range(cur.count())]


def consumer_assignment(raw: bytes) -> list[str]:
    """ConsumerProtocolAssignment's partitions as ``topic-partition`` strings, in stored order."""
    cur = _In(raw)
    cur.fixed("h")
    return [f"{t}-{p}" for t, ps in _topic_partitions(cur) for p in ps]


def decode_offsets_key(key: bytes) -> dict:
    """An OffsetCommitKey (versions 0, 1) or GroupMetadataKey (version 2)."""
    cur = _In(key)
    version = cur.fixed("h")
    if version in (0, 1):
        return {"type": version, "group": cur.string(), "topic": cur.string(), "partition": cur.fixed("i")}
    if version == 2:
        return {"type": 2, "group": cur.string()}
    raise ValueError(f"key version {version}: this reader knows 0, 1 and 2")


def decode_offset_value(value: bytes) -> dict:
    """An OffsetCommitValue, versions 0 to 4; every byte must be read."""
    cur = _In(value)
    v = cur.fixed("h")
    out = {"version": v, "offset": cur.fixed("q"), "leader_epoch": cur.fixed("i") if v >= 3 else -1}
    out["metadata"] = cur.string(compact=v >= 4)
    out["commit_timestamp"] = cur.fixed("q")
    out["expire_timestamp"] = cur.fixed("q") if v == 1 else -1
    if v >= 4:
        cur.skip_tags()
    if not cur.at_end():
        raise ValueError("bytes left after an OffsetCommitValue")
    return out


def decode_group_value(value: bytes) -> dict:
    """A GroupMetadataValue, versions 0 to 4, with its members; every byte must be read."""
    cur = _In(value)
    v = cur.fixed("h")
    fx = v >= 4
    out = {"version": v, "protocol_type": cur.string(fx), "generation": cur.fixed("i"), "protocol": cur.string(fx),
           "leader": cur.string(fx), "current_state_timestamp": cur.fixed("q") if v >= 2 else -1}
    members = []
    for _ in range(cur.count(fx)):
        m: dict[str, Any] = {"member_id": cur.string(fx), "group_instance_id": cur.string(fx) if v >= 3 else None,
             "client_id": cur.string(fx), "client_host": cur.string(fx)}
        m["rebalance_timeout"] = cur.fixed("i") if v >= 1 else -1
        m["session_timeout"] = cur.fixed("i")
        m["subscription"], m["assignment"] = cur.blob(fx), cur.blob(fx)
        if fx:
            cur.skip_tags()
        members.append(m)
    out["members"] = members
    if fx:
        cur.skip_tags()
    if not cur.at_end():
        raise ValueError("bytes left after a GroupMetadataValue")
    return out


def offsets_records(folder_or_file: Path) -> list[dict]:
    """Every non-control record of a ``__consumer_offsets`` partition (its ``.log`` files in name
    order) or of one segment, decoded: offset, timestamp, key (a dict), value (a dict, or None
    for a tombstone)."""
    p = Path(folder_or_file)
    files = sorted(p.glob("*.log")) if p.is_dir() else [p]
    out = []
    for f in files:
        for r in read_records(f):
            if r["is_control"]:
                continue
            key = decode_offsets_key(r["key"])
            value = None
            if r["value"] is not None:
                value = decode_group_value(r["value"]) if key["type"] == 2 else decode_offset_value(r["value"])
            out.append({"offset": r["offset"], "timestamp": r["timestamp"], "key": key, "value": value})
    return out


def last_commits(records: list[dict]) -> dict[tuple[str, str, int], dict]:
    """The last offset commit of each (group, topic, partition) in log order, a tombstone
    removing it (GroupMetadataManager's load): the commit's record with its offset."""
    out: dict[tuple[str, str, int], dict] = {}
    for r in records:
        k = r["key"]
        if k["type"] == 2:
            continue
        tp = (k["group"], k["topic"], k["partition"])
        if r["value"] is None:
            out.pop(tp, None)
        else:
            out[tp] = r
    return out


# ------------------------------------------------------------------ control and KRaft records


CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER"}


def control_type(key: bytes) -> int:
    """ControlRecordType's key: version int16, type int16."""
    _, ctype = struct.unpack_from(">hh", key)
    return ctype


def decode_leader_change(value: bytes) -> dict:
    """LeaderChangeMessage version 0 (flexible): leaderId, voters, grantingVoters."""
    cur = _In(value)
    version, leader = cur.fixed("h"), cur.fixed("i")

    def voters() -> list[dict]:
        out = []
        for _ in range(cur.count(compact=True)):
            out.append({"voterId": cur.fixed("i")})
            cur.skip_tags()
        return out

    out = {"version": version, "leaderId": leader, "voters": voters(), "grantingVoters": voters()}
    cur.skip_tags()
    if not cur.at_end():
        raise ValueError("bytes left after a LeaderChangeMessage")
    return out


def decode_snapshot_header(value: bytes) -> dict:
    """SnapshotHeaderRecord version 0: lastContainedLogTimestamp, then tagged fields."""
    cur = _In(value)
    out = {"version": cur.fixed("h"), "lastContainedLogTimestamp": cur.fixed("q")}
    cur.skip_tags()
    return out


def metadata_frame(value: bytes) -> tuple[int, int, _In]:
    """A KRaft metadata record's frame: (api key, record version, cursor at its body)."""
    cur = _In(value)
    frame = cur.uvarint()
    if frame != 1:
        raise ValueError(f"frame version {frame}")
    return cur.uvarint(), cur.uvarint(), cur


def topic_record_name(value: bytes) -> str | None:
    """The topic name of a TopicRecord (api key 2), None for any other metadata record."""
    api_key, _, cur = metadata_frame(value)
    return cur.string(compact=True) if api_key == 2 else None


def feature_level(value: bytes) -> tuple[str, int] | None:
    """(name, featureLevel) of a FeatureLevelRecord (api key 12), None for any other record."""
    api_key, _, cur = metadata_frame(value)
    return (cur.string(compact=True) or "", cur.fixed("h")) if api_key == 12 else None


# ------------------------------------------------------------------ partition directory files


_PRODUCER_ENTRY = struct.Struct(">qhiqiqiq")   # ProducerSnapshotEntry v1: 46 bytes


def read_producer_snapshot(path: Path) -> dict:
    """A producer-state ``.snapshot`` (ProducerStateManager's version 1): version, whether the
    CRC-32C of the bytes after the CRC field matches, and each producer entry."""
    data = Path(path).read_bytes()
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    if version != 1 or len(data) != 10 + count * _PRODUCER_ENTRY.size:
        raise ValueError(f"version {version}, {count} entries in {len(data)} bytes")
    names = ("producer_id", "epoch", "last_sequence", "last_offset", "offset_delta", "timestamp",
             "coordinator_epoch", "current_txn_first_offset")
    entries = [dict(zip(names, _PRODUCER_ENTRY.unpack_from(data, 10 + i * _PRODUCER_ENTRY.size)))
               for i in range(count)]
    return {"version": version, "crc_ok": crc32c(data[6:]) == crc, "entries": entries}


def read_checkpoint_text(path: Path) -> list[tuple[int, int]]:
    """A leader-epoch-checkpoint (CheckpointFile's text: version line, count line, then one
    ``epoch startOffset`` line per entry) as (epoch, start offset) pairs; the count must match."""
    lines = Path(path).read_text().splitlines()
    if lines[0] != "0" or int(lines[1]) != len(lines) - 2:
        raise ValueError(f"{path}: version {lines[0]!r}, count {lines[1]!r} for {len(lines) - 2} lines")
    return [(int(a), int(b)) for a, b in (line.split() for line in lines[2:])]


def read_partition_metadata_text(path: Path) -> dict[str, str]:
    """partition.metadata's ``name: value`` lines."""
    return dict(line.split(": ", 1) for line in Path(path).read_text().splitlines() if line)
