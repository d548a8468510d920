"""A model of what a RocketMQ broker with a DLedger CommitLog writes, for the tests: records framed
in DLedger entries as ``DLedgerMmapFileStore.appendAsLeader`` lays them out (openmessaging/dledger
0.1-0.3.2: ``DLedgerEntryCoder.encode``, ``MmapFileList.preAppend`` and its blank,
``DLedgerCoder.encodeIndex``) with ``DLedgerCommitLog``'s append hook (PHYSICALOFFSET = entry
position + 48), the checkpoint and term files as ``IOUtils.properties2String`` writes them.

Written from the Java source with struct, independently of rmqlab.formats.dledger (whose
declarations it does not import), so that the reader is judged by a second reading of the source.
The real brokers judge both in tests/brokers/test_rocketmq_brokers.py.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

HEAD = struct.Struct(">iiqqqiiii")     # magic size index term pos channel chainCrc bodyCrc bodySize
UNIT = struct.Struct(">iqiqq")         # magic pos size index term
PHY_POS_POSITION = 4 + 4 + 4 + 4 + 4 + 8   # MessageDecoder.PHY_POS_POSITION: PHYSICALOFFSET in a record
MIN_BLANK_LEN = 8


@dataclass
class Framed:
    files: dict[int, bytes]         # data file start offset -> bytes (file_size each)
    index: bytes                    # the index file's written units
    entries: list[tuple[int, int, int, int]]   # (index, term, pos, size) of every entry
    record_offsets: list[int]       # CommitLog offset of each record (pos + 48)


def frame(records: list[bytes], file_size: int, *, term: int = 0, first_index: int = 0, base: int = 0) -> Framed:
    """The data files, index units and entries of `records` appended one after another, the
    first file at CommitLog offset `base` (a CommitLog switched from plain files to DLedger:
    DLedgerCommitLog.setRecoverPosition starts the ledger at dividedCommitlogOffset)."""
    files: dict[int, bytearray] = {base: bytearray()}
    start, entries, offsets, units = base, [], [], bytearray()
    for k, rec in enumerate(records):
        size = HEAD.size + len(rec)
        if size + MIN_BLANK_LEN > file_size:
            raise ValueError("an entry larger than a file")
        cur = files[start]
        if size + MIN_BLANK_LEN > file_size - len(cur):     # preAppend: the blank, then the next file
            cur += struct.pack(">ii", -1, file_size - len(cur))
            start += file_size
            files[start] = cur = bytearray()
        pos = start + len(cur)
        body = bytearray(rec)
        struct.pack_into(">q", body, PHY_POS_POSITION, pos + HEAD.size)      # DLedgerCommitLog's append hook
        cur += HEAD.pack(1, size, first_index + k, term, pos, 0, 0, 0, len(rec)) + body
        entries.append((first_index + k, term, pos, size))
        offsets.append(pos + HEAD.size)
        units += UNIT.pack(1, pos, size, first_index + k, term)
    data = {s: bytes(b.ljust(file_size, b"\0")) for s, b in files.items()}
    return Framed(data, bytes(units), entries, offsets)


def write_ledger(folder: Path, framed: Framed, *, committed: int | None = None, term: int = 0,
                 index_file_size: int = 32 * 5 * 1024 * 1024) -> Path:
    """`framed` as a ``dledger-n0`` folder (data/, index/, checkpoint, currterm); returns it."""
    (folder / "data").mkdir(parents=True)
    (folder / "index").mkdir()
    for s, b in framed.files.items():
        (folder / "data" / f"{s:020d}").write_bytes(b)
    with open(folder / "index" / f"{0:020d}", "wb") as fh:
        fh.write(framed.index)
        fh.truncate(index_file_size)
    end = framed.entries[-1][0] if framed.entries else -1
    (folder / "checkpoint").write_text(f"committedIndex={end if committed is None else committed}\nendIndex={end}\n")
    (folder / "currterm").write_text(f"voteLeader=n0\ncurrTerm={term}\n")
    return folder
