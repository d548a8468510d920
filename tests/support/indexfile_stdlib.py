"""RocketMQ index files read with the standard library alone, and the keys a broker puts in them,
for tests that must not trust rmqlab's index code.

The layout is IndexFile / IndexHeader's (read at rocketmq-all-4.9.7): a 40-byte header
(beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset: longs; hashSlotCount, indexCount:
ints), ``hashSlotNum`` 4-byte slots holding the newest entry's number, then 20-byte entries
(keyHash int, phyOffset long, timeDiff int, prevIndex int) numbered from 1. The key rule is
IndexService.buildIndex's: nothing for a rolled-back transaction, else ``topic#UNIQ_KEY`` and
``topic#k`` for each non-empty word of KEYS split on spaces; the hash is IndexFile.indexKeyHashMethod,
``Math.abs(String.hashCode())``, 0 for Integer.MIN_VALUE. :func:`chain_lengths` and
:func:`entry_hashes` measure a file as the capacity tests do. Cost: each file is read whole, O(size).
"""
from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

from reference_model import java_hash, stored_hash  # noqa: F401 (java_hash: re-exported)

_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
#: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE, in bits 2-3 of the sys flag
_ROLLBACK = 0x3 << 2


#: IndexFile.indexKeyHashMethod: Math.abs of String.hashCode, 0 when it stays negative
key_hash = stored_hash


def index_keys(message: dict) -> list[str]:
    """The keys IndexService.buildIndex puts for one message of commitlog_stdlib.read_commitlog."""
    if message["sys_flag"] & _ROLLBACK == _ROLLBACK:
        return []
    topic, props = message["topic"], message["properties"]
    keys = [f"{topic}#{props['UNIQ_KEY']}"] if props.get("UNIQ_KEY") else []
    return keys + [f"{topic}#{k}" for k in props.get("KEYS", "").split(" ") if k]


def model_entries(messages: list[dict]) -> Counter[tuple[int, int]]:
    """Every (keyHash, phyOffset) a broker's dispatch puts in its index files for `messages`."""
    return Counter((key_hash(k), m["phy_offset"]) for m in messages for k in index_keys(m))


def read_index_file(path: Path, hash_slot_num: int) -> dict:
    """One index file: its header fields, its slots and its entries (number 1 first)."""
    data = Path(path).read_bytes()
    begin_ts, end_ts, begin_phy, end_phy, slot_count, index_count = _HEADER.unpack_from(data, 0)
    slots = list(struct.unpack_from(f">{hash_slot_num}i", data, _HEADER.size))
    base = _HEADER.size + 4 * hash_slot_num
    entries = [_ENTRY.unpack_from(data, base + n * _ENTRY.size) for n in range(1, index_count)]
    return {"begin_timestamp": begin_ts, "end_timestamp": end_ts, "begin_phy_offset": begin_phy,
            "end_phy_offset": end_phy, "hash_slot_count": slot_count, "index_count": index_count,
            "slots": slots, "entries": entries}


def chain(index: dict, slot: int) -> list[int]:
    """The entry numbers a lookup walks from `slot`: newest first, following prevIndex to 0."""
    out, n = [], index["slots"][slot]
    while 0 < n < index["index_count"]:
        out.append(n)
        n = index["entries"][n - 1][3]
    return out


def file_entries(folder: Path, hash_slot_num: int) -> Counter[tuple[int, int]]:
    """Every (keyHash, phyOffset) in the index files (17-digit names) of `folder`, after checking
    that each slot's chain visits exactly the entries whose hash falls in that slot."""
    out: Counter[tuple[int, int]] = Counter()
    for f in sorted(p for p in Path(folder).iterdir() if p.name.isdigit() and len(p.name) == 17):
        index = read_index_file(f, hash_slot_num)
        for slot in range(hash_slot_num):
            walked = chain(index, slot)
            want = [n for n in range(len(index["entries"]), 0, -1)
                    if index["entries"][n - 1][0] % hash_slot_num == slot]
            if walked != want:
                raise AssertionError(f"{f.name}: slot {slot} chains {walked}, its entries are {want}")
        out.update((h, phy) for h, phy, _, _ in index["entries"])
    return out


def chain_lengths(path: Path, hash_slot_num: int) -> list[int]:
    """The entries a walk from each slot reads, as IndexFile.selectPhyOffset walks a chain
    (begin = 0, nothing stops it early): the slot's entry, then each prevIndex, until one is
    0, past indexCount or the entry itself. A slot value of 0 or past indexCount is empty."""
    data = Path(path).read_bytes()
    *_, index_count = _HEADER.unpack_from(data, 0)
    base = _HEADER.size + 4 * hash_slot_num
    out = []
    for s in range(hash_slot_num):
        (at,) = struct.unpack_from(">i", data, _HEADER.size + 4 * s)
        n = 0
        while 0 < at <= index_count:
            n += 1
            assert n <= index_count, f"{path}: slot {s} chains in a loop"
            prev = _ENTRY.unpack_from(data, base + 20 * at)[3]
            if prev == at:
                break
            at = prev
        out.append(n)
    return out


def entry_hashes(path: Path, hash_slot_num: int) -> list[int]:
    """The keyHash of every entry written (1 .. indexCount - 1)."""
    data = Path(path).read_bytes()
    *_, index_count = _HEADER.unpack_from(data, 0)
    base = _HEADER.size + 4 * hash_slot_num
    return [_ENTRY.unpack_from(data, base + 20 * i)[0] for i in range(1, index_count)]
