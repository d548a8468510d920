"""An IndexFile read with the standard library alone, for tests that measure index files
without rmqlab's readers: the layout of IndexFile / IndexHeader (rocketmq-all-4.9.7, 5.3.1): a
40-byte header (beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset: 8 bytes each;
hashSlotCount, indexCount: 4 each), then 4-byte slots, then 20-byte entries (keyHash int,
phyOffset long, timeDiff int, prevIndex int), all big-endian."""
from __future__ import annotations

import struct
from pathlib import Path

HEADER = struct.Struct(">qqqqii")
ENTRY = struct.Struct(">iqii")


def chain_lengths(path: Path, hash_slot_num: int) -> list[int]:
    """The entries a walk from each slot reads, as IndexFile.selectPhyOffset walks a chain
    (begin = 0, nothing stops it early): the slot's entry, then each prevIndex, until one is
    0, past indexCount or the entry itself. A slot value of 0 or past indexCount is empty."""
    data = Path(path).read_bytes()
    *_, index_count = HEADER.unpack_from(data, 0)
    base = HEADER.size + 4 * hash_slot_num
    out = []
    for s in range(hash_slot_num):
        (at,) = struct.unpack_from(">i", data, HEADER.size + 4 * s)
        n = 0
        while 0 < at <= index_count:
            n += 1
            assert n <= index_count, f"{path}: slot {s} chains in a loop"
            prev = ENTRY.unpack_from(data, base + 20 * at)[3]
            if prev == at:
                break
            at = prev
        out.append(n)
    return out


def entry_hashes(path: Path, hash_slot_num: int) -> list[int]:
    """The keyHash of every entry written (1 .. indexCount - 1)."""
    data = Path(path).read_bytes()
    *_, index_count = HEADER.unpack_from(data, 0)
    base = HEADER.size + 4 * hash_slot_num
    return [ENTRY.unpack_from(data, base + 20 * i)[0] for i in range(1, index_count)]
