"""Regenerate the corrupt-file corpus: ``python tests/data/corrupt/make_corpus.py [OUT_DIR]``.

Every case starts from a *valid* file written with rmqlab's own writers (small geometries), then
corrupts it deterministically (no randomness, no clock: the same bytes every run), and states
the exact error a reader must raise: class, byte offset, field and a message substring. The
expectations are written here by hand from the formats' layouts (header, slot and entry
offsets), not computed by running the readers; ``tests/formats/test_corrupt_corpus.py`` checks each one
and that this script reproduces the committed files byte for byte.

Writes the files (a folder per case for the folder formats), ``expected.json`` (the manifest the
test reads) and ``README.md`` (one line per file) into OUT_DIR (default: this folder).
"""
from __future__ import annotations

import json
import shutil
import struct
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


@dataclass
class Case:
    """One corrupt file (or folder) and the error it must produce."""

    name: str                       # file or folder name in the corpus
    build: Callable[[Path], None]   # writes the corrupt file(s) at this path
    reader: str                     # a key of READERS in tests/formats/test_corrupt_corpus.py
    error: str | None               # exact class name; None: the call must succeed (a regression)
    message: str                    # substring of str(error) (or of repr(result) when error is None)
    why: str                        # one line for the README
    args: dict = field(default_factory=dict)
    offset: int | None = None
    field: str | None = None
    error_path: str | None = ""     # the file the error names, relative to the corpus ("": the case's
                                    # own name; None: the error names no file)
    fix: str = ""                   # for regressions of bugs found by fuzzing: what was fixed


# ------------------------------------------------------------------------------- builders


def _tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="rmqlab-corpus-"))


def index_bytes() -> bytes:
    """IndexFile, 8 slots, 24 entries (552 bytes): 20 puts of 7 keys T#k0..T#k6, one every
    700 ms. Layout: header 0..39 (hash_slot_count at 32, index_count at 36), slot s at 40 + 4s,
    entry n at 72 + 20n (key_hash +0, phy_offset +4, time_diff +12, prev_index +16)."""
    from rmqlab.formats.indexfile import IndexFile

    p = _tmp() / "20240610061524062"
    with IndexFile.create(p, 8, 24) as f:
        for i in range(20):
            f.put_key(f"T#k{i % 7}", 1000 + 100 * i, 1718000000000 + 700 * i)
    data = p.read_bytes()
    shutil.rmtree(p.parent)
    return data


def E(n: int, off: int) -> int:
    """Byte offset of entry n's field at `off` in the 8-slot index file."""
    return 72 + 20 * n + off


def patch(data: bytes, *edits: tuple[int, str, int]) -> bytes:
    b = bytearray(data)
    for off, fmt, value in edits:
        struct.pack_into(">" + fmt, b, off, value)
    return bytes(b)


def write(data: bytes | Callable[[], bytes]):
    def build(path: Path) -> None:
        path.write_bytes(data() if callable(data) else data)
    return build


def index_case(*edits, cut: int | None = None, extra: bytes = b""):
    def make() -> bytes:
        d = patch(index_bytes(), *edits)
        return (d[:cut] if cut is not None else d) + extra
    return write(make)


def cq_folder(units, *, drop: tuple[int, ...] = (), rename: dict[int, int] | None = None,
              cut_last: int | None = None, extra: dict[str, bytes] | None = None, edits=()):
    """A ConsumeQueue folder of 100-byte files (5 units each) from (phy, size, tags, qoffset)
    units; then files dropped, renamed (by start offset), the last cut, extra files added and
    bytes patched ((file start, offset in file, fmt, value))."""
    def build(path: Path) -> None:
        from rmqlab.formats.consumequeue import ConsumeQueueWriter

        tmp = _tmp() / "q"
        with ConsumeQueueWriter.create(tmp, mapped_file_size=100) as w:
            for u in units:
                w.put(*u)
        path.mkdir(parents=True)
        files = {int(p.name): p.read_bytes() for p in sorted(tmp.iterdir())}
        shutil.rmtree(tmp.parent)
        for start in drop:
            del files[start]
        for old, new in (rename or {}).items():
            files[new] = files.pop(old)
        for start, off, fmt, value in edits:
            b = bytearray(files[start])
            struct.pack_into(">" + fmt, b, off, value)
            files[start] = bytes(b)
        if cut_last is not None:
            last = max(files)
            files[last] = files[last][:cut_last]
        for start, data in files.items():
            (path / f"{start:020d}").write_bytes(data)
        for name, data in (extra or {}).items():
            (path / name).write_bytes(data)
    return build


CQ_UNITS = [(100 * i, 90, 7, i) for i in range(13)]   # files 0, 100, 200 (200 holds 3 units)


def commitlog_bytes(file_size: int = 1024) -> tuple[bytes, list[int]]:
    """One CommitLog file: 4 messages (v1, IPv4 hosts, topic TopicTest, 6-byte body, KEYS and
    TAGS: 124 bytes each, at 0, 124, 248, 372) then zeros. Record layout: TOTALSIZE +0, MAGICCODE
    +4, BODYCRC +8, ..., BODYLEN +84, BODY +88, TOPICLEN +94, TOPIC +95, PROPERTIESLENGTH +104,
    PROPERTIES +106 ("KEYS\x01k0\x02TAGS\x01TagA\x02"). Returns (bytes, record positions)."""
    from rmqlab.formats.commitlog import encode_message

    data = bytearray()
    pos = []
    for i in range(4):
        pos.append(len(data))
        data += encode_message(topic="TopicTest", body=b"body-%d" % i, queue_offset=i, phy_offset=len(data),
                               born_timestamp=1718000000000 + i, born_host="10.0.0.7:52000",
                               store_timestamp=1718000000005 + i, store_host="10.0.0.1:10911",
                               properties={"KEYS": f"k{i}", "TAGS": "TagA"})
    return bytes(data) + bytes(file_size - len(data)), pos


CL, CL_POS = None, None


def _cl():
    global CL, CL_POS
    if CL is None:
        CL, CL_POS = commitlog_bytes()
    return CL, CL_POS


def cl_case(edit: Callable[[bytearray, list[int]], None], cut: int | None = None):
    def make() -> bytes:
        data, pos = _cl()
        b = bytearray(data)
        edit(b, pos)
        return bytes(b[:cut] if cut is not None else b)
    return write(make)


def commitlog_two_names(path: Path) -> None:
    path.mkdir()
    (path / "00000000000000000000").write_bytes(_cl()[0])
    (path / "99999999999999999999").write_bytes(_cl()[0])


def checkpoint_bytes(**values) -> bytes:
    from rmqlab.formats.checkpoint import StoreCheckpoint, write_checkpoint

    p = _tmp() / "checkpoint"
    write_checkpoint(p, StoreCheckpoint(1718000005000, 1718000004000, 1717990000000), layout="4", sync=False)
    data = p.read_bytes()
    shutil.rmtree(p.parent)
    return data


def kafka_index_bytes(kind: str) -> bytes:
    from rmqlab.kafka import index as kx

    d = _tmp()
    if kind == "offset":
        p = d / kx.segment_file_name(100, ".index")
        kx.build_offset_index(p, [(100 + 3 * i + 1, 70 * i) for i in range(8)])   # 64 bytes
    else:
        p = d / kx.segment_file_name(100, ".timeindex")
        kx.build_time_index(p, [(1718000000000 + 10 * i, 100 + 2 * i) for i in range(6)])   # 72 bytes
    data = p.read_bytes()
    shutil.rmtree(d)
    return data


def kafka_log_bytes() -> bytes:
    """Three v2 batches (offsets 0-2, 3, 4-5) from byte 0. In batch 0, record 0 starts at 61:
    length varint 61, attributes 62, timestampDelta 63, offsetDelta 64, keyLength 65, key 66.."""
    from rmqlab.kafka.log import KafkaRecord, encode_batches

    recs = [KafkaRecord(i, 1718000000000 + i, b"k%d" % (i % 2), b"value-%d" % i, [("h", b"x")] if i == 1 else [])
            for i in range(6)]
    return encode_batches(recs, records_per_batch=[3, 1, 2]).data.tobytes()


def kl_case(edit: Callable[[bytearray], None], cut: int | None = None, fix_crc: bool = False):
    def make() -> bytes:
        b = bytearray(kafka_log_bytes())
        edit(b)
        if fix_crc:
            from rmqlab._crc32c import crc32c

            p = 0
            while p + 61 <= len(b):
                size = int.from_bytes(b[p + 8:p + 12], "big") + 12
                b[p + 17:p + 21] = crc32c(bytes(b[p + 21:p + size])).to_bytes(4, "big")
                p += size
        return bytes(b[:cut] if cut is not None else b)
    return write(make)


def text(s: str):
    return write(s.encode("ascii") + b"\n")


# ------------------------------------------------------------------------------- the cases

INDEX_GEOMETRY = dict(hash_slot_num=8, index_num=24)

CASES = [
    # ---- IndexFile (8 slots, 24 entries, 20 keys put: index_count 21)
    Case("indexfile-truncated-header.idx", index_case(cut=30), "IndexFile.open", "TruncatedFileError",
         "offset 30: header: file is 30 bytes but hash_slot_num=8, index_num=24 need 552: it ends inside header",
         "cut to 30 bytes, inside the 40-byte header", INDEX_GEOMETRY, 30, "header"),
    Case("indexfile-cut-in-entry.idx", index_case(cut=179), "IndexFile.open", "TruncatedFileError",
         "offset 179: entry[5]: file is 179 bytes but hash_slot_num=8, index_num=24 need 552: it ends inside entry[5]",
         "cut at byte 179, inside entry 5 (entries start at 72)", INDEX_GEOMETRY, 179, "entry[5]"),
    Case("indexfile-size-mismatch.idx", index_case(extra=b"\x00" * 7), "IndexFile.open", "GeometryError",
         "offset 559: file size: file is 559 bytes but hash_slot_num=8, index_num=24 need 40 + 4*8 + 20*24 = 552 bytes",
         "7 bytes appended: the size fits no geometry with 8 slots", INDEX_GEOMETRY, 559, "file size"),
    Case("indexfile-index-count-past-num.idx", index_case((36, "i", 99)), "IndexFile.open", "CorruptIndexError",
         "offset 36: header.index_count: index_count 99 exceeds index_num 24",
         "header index_count 99 > index_num 24", INDEX_GEOMETRY, 36, "header.index_count"),
    Case("indexfile-negative-index-count.idx", index_case((36, "i", -5)), "IndexFile.open", "CorruptIndexError",
         "offset 36: header.index_count: index_count -5 is negative",
         "header index_count -5", INDEX_GEOMETRY, 36, "header.index_count"),
    Case("indexfile-hash-slot-count.idx", index_case((32, "i", 500)), "IndexFile.open", "CorruptIndexError",
         "offset 32: header.hash_slot_count: hash_slot_count 500 is outside 0..index_count-1 (20)",
         "header hash_slot_count 500 with 20 entries", INDEX_GEOMETRY, 32, "header.hash_slot_count"),
    Case("indexfile-self-loop.idx", index_case((E(7, 16), "i", 7)), "IndexFile.check", "CorruptIndexError",
         f"offset {E(7, 16)}: entry.prev_index: prev_index not older than its entry (out of range, self-loop or cycle)",
         "entry 7's prev_index points at entry 7 (a self-loop)", INDEX_GEOMETRY, E(7, 16), "entry.prev_index"),
    Case("indexfile-forward-pointer.idx", index_case((E(3, 16), "i", 10)), "IndexFile.check", "CorruptIndexError",
         f"offset {E(3, 16)}: entry.prev_index: prev_index not older than its entry",
         "entry 3's prev_index points forward, at entry 10", INDEX_GEOMETRY, E(3, 16), "entry.prev_index"),
    Case("indexfile-cycle.idx", index_case((E(4, 16), "i", 11), (E(11, 16), "i", 4)), "IndexFile.check",
         "CorruptIndexError", f"offset {E(4, 16)}: entry.prev_index: prev_index not older than its entry",
         "entries 4 and 11 point at each other (a two-entry cycle)", INDEX_GEOMETRY, E(4, 16), "entry.prev_index"),
    Case("indexfile-slot-past-count.idx", index_case((40 + 4 * 3, "i", 30)), "IndexFile.check", "CorruptIndexError",
         "offset 52: slot[3]: slot value outside 0..20 (1 such)",
         "slot 3 holds 30, past index_count 21", INDEX_GEOMETRY, 52, "slot[3]"),
    Case("indexfile-negative-time-diff.idx", index_case((E(5, 12), "i", -1)), "IndexFile.check",
         "CorruptIndexError", f"offset {E(5, 12)}: entry.time_diff: negative time_diff (1 such)",
         "entry 5's time_diff is -1", INDEX_GEOMETRY, E(5, 12), "entry.time_diff"),
    Case("indexfile-wrong-slot.idx", index_case((E(20, 0), "i", 2)), "IndexFile.check", "CorruptIndexError",
         f"offset {E(20, 16)}: entry.prev_index: prev_index links entries of different slots (1 such)",
         "entry 20 (key T#k5, slot 1) gets key_hash 2 (slot 2); its prev_index still links slot 1's chain",
         INDEX_GEOMETRY, E(20, 16), "entry.prev_index"),
    Case("indexfile-huge-count-cycle.idx", index_case((36, "i", INT_MAX), (E(13, 16), "i", 20)), "IndexFile.chain",
         None, "24", "header index_count 2^31-1 and a cycle 20 -> 13 -> 20 (opened with strict=False): chain() "
         "of the slot heading entry 20 must stop after index_num entries",
         dict(INDEX_GEOMETRY, key="T#k5"), error_path=None,
         fix="IndexFile.chain looped index_count times (2^31 here: a hang, and a list of 2^31 ints); now at "
             "most min(index_count, index_num)"),
    # ---- ConsumeQueue folders (100-byte files: 5 units each)
    Case("cq-gap", cq_folder(CQ_UNITS, drop=(100,)), "ConsumeQueue.open", "CorruptIndexError",
         "offset 0: file name: starts at 200 but the previous file 00000000000000000000 ends at 100: missing file(s) "
         "before it", "the middle file (100) is missing", dict(mapped_file_size=100), 0, "file name",
         "cq-gap/00000000000000000200"),
    Case("cq-short-file", cq_folder(CQ_UNITS, cut_last=50), "ConsumeQueue.open", "TruncatedFileError",
         "offset 50: file size: file is 50 bytes, not the mapped file size 100",
         "the last file cut to 50 bytes", dict(mapped_file_size=100), 50, "file size",
         "cq-short-file/00000000000000000200"),
    Case("cq-bad-name", cq_folder(CQ_UNITS, extra={"junk.tmp": b"\x00" * 100}), "ConsumeQueue.open", "FormatError",
         "offset 0: file name: file name 'junk.tmp' is not a 20-digit offset",
         "a file whose name is not 20 digits", dict(mapped_file_size=100), 0, "file name", "cq-bad-name/junk.tmp"),
    Case("cq-invalid-unit", cq_folder(CQ_UNITS, edits=[(0, 20 * 2 + 8, "i", -1)]), "ConsumeQueue.check",
         "FormatError", "offset 48: unit.size: queue offset 2: the broker takes this unit as the end of the queue, "
         "but it is not a zero end marker (size -1)", "unit 2 of the first file has size -1: recover() ends the "
         "queue there", dict(mapped_file_size=100), 48, "unit.size", "cq-invalid-unit/00000000000000000000"),
    Case("cq-gap-unit", cq_folder(CQ_UNITS, rename={100: 300}), "ConsumeQueue.unit", "CorruptIndexError",
         "offset 0: file name: queue offset 7 lies in a gap between the files",
         "file 100 renamed to 300: queue offset 7 is in range but in no file (opened with strict=False)",
         dict(mapped_file_size=100, index=7), 0, "file name", "cq-gap-unit",
         fix="unit() raised IndexError for an in-range offset"),
    Case("cq-far-gap", cq_folder(CQ_UNITS, rename={200: 10**18}), "ConsumeQueue.queue_offsets", "CorruptIndexError",
         "offset 0: file name: the files are not contiguous",
         "file 200 renamed to 10^18: max_offset 5*10^16 from 260 bytes (opened with strict=False)",
         dict(mapped_file_size=100), 0, "file name", "cq-far-gap",
         fix="queue_offsets allocated np.arange(min_offset, max_offset): 400 PB here (MemoryError)"),
    Case("cq-overlap-search", cq_folder(CQ_UNITS, rename={200: 50}), "ConsumeQueue.offset_by_time",
         "CorruptIndexError", "offset 10: unit: the queue's min offset 0 lies past the 0 units of this file",
         "file 200 renamed to 50 (overlapping): offset_by_time picks a file the min offset lies past",
         dict(mapped_file_size=100, timestamp=1718000003000, boundary="upper"), 10, "unit",
         "cq-overlap-search/00000000000000000100",
         fix="offset_by_time raised a bare ValueError for an inconsistency of the files"),
    # ---- CommitLog (one 1024-byte file: records of 124 bytes at 0, 124, 248, 372, zeros from 496)
    Case("commitlog-bad-magic.log", cl_case(lambda b, p: struct.pack_into(">i", b, p[2] + 4, 0x12345678)),
         "read_columns", "FormatError",
         "offset 248: MAGICCODE: MAGICCODE 0x12345678: MAGICCODE is none of v1 0xDAA320A7, v2 0xDAA320AB",
         "record 3's MAGICCODE overwritten", {}, 248, "MAGICCODE"),
    Case("commitlog-totalsize-small.log", cl_case(lambda b, p: struct.pack_into(">i", b, p[1], 50)), "read_columns",
         "FormatError", "offset 124: TOTALSIZE: TOTALSIZE 50: TOTALSIZE below the smallest possible message (91)",
         "record 2's TOTALSIZE is 50", {}, 124, "TOTALSIZE"),
    Case("commitlog-bodylen.log", cl_case(lambda b, p: struct.pack_into(">i", b, p[0] + 84, 9999)),
         "iter_messages", "FormatError", "offset 0: BODYLEN: BODYLEN 9999 disagrees with TOTALSIZE 124",
         "record 1's BODYLEN is 9999", {}, 0, "BODYLEN"),
    Case("commitlog-properties.log", cl_case(lambda b, p: b.__setitem__(p[3] + 124 - 6, 2)),
         "read_message", None, "properties={'KEYS': 'k3'}",
         "record 4's TAGS pair loses its \\x01 (TAGS\\x02TagA\\x02): both halves are pairs without a "
         "separator, which the broker's parser skips, so the record reads, without TAGS",
         dict(position=372), error_path=None,
         fix="read as damage (FormatError) until a real 5.2.0 broker was found writing such blocks and reading "
             "them back (MessageDecoder.string2messageProperties skips malformed pairs)"),
    Case("commitlog-torn.log", cl_case(lambda b, p: None, cut=300), "read_message", "TruncatedFileError",
         "offset 248: TOTALSIZE: TOTALSIZE 124 but 52 bytes left in the file",
         "file cut at byte 300, inside record 3", dict(position=248), 248, "TOTALSIZE"),
    Case("commitlog-crc.log", cl_case(lambda b, p: b.__setitem__(p[1] + 88, ord("X"))), "read_message",
         "FormatError", "offset 124: BODYCRC: BODYCRC", "the first body byte of record 2 changed; read with check_crc",
         dict(position=124, check_crc=True), 124, "BODYCRC"),
    Case("commitlog-name-past-long-max", commitlog_two_names, "read_at", "FormatError",
         "offset 0: file name: file name 99999999999999999999: the file's offsets", "a sound file 0 and a copy named "
         "99999999999999999999 (> Long.MAX_VALUE); read_at(folder, [0])", dict(phy_offsets=[0]), 0, "file name",
         "commitlog-name-past-long-max/99999999999999999999",
         fix="store_files accepted the name; read_at then failed with OverflowError (an int64 array of the file "
             "start offsets) even for an offset in the other file"),
    # ---- checkpoint
    Case("checkpoint-short", write(lambda: checkpoint_bytes()[:20]), "read_checkpoint", "TruncatedFileError",
         "offset 20: index_msg_timestamp: checkpoint is 20 bytes; the broker maps 4096",
         "cut to 20 bytes, inside indexMsgTimestamp", {}, 20, "index_msg_timestamp"),
    Case("checkpoint-oversize", write(lambda: checkpoint_bytes() + b"\x00"), "read_checkpoint", "GeometryError",
         "offset 4097: file size: checkpoint is 4097 bytes, not 4096", "4097 bytes", {}, 4097, "file size"),
    Case("checkpoint-padding", write(lambda: patch(checkpoint_bytes(), (100, "B", 7))), "read_checkpoint",
         "FormatError", "offset 100: padding: non-zero bytes after the last field",
         "byte 100 (after the five longs) is 7", {}, 100, "padding"),
    Case("checkpoint-year-overflow", write(lambda: patch(checkpoint_bytes(), (0, "q", LONG_MAX))),
         "StoreCheckpoint.times", "FormatError",
         "offset 0: physic_msg_timestamp: physic_msg_timestamp 9223372036854775807 ms is outside the dates",
         "physicMsgTimestamp is Long.MAX_VALUE; times() names the field", {}, 0, "physic_msg_timestamp", None,
         fix="describe() and times() raised ValueError (year out of range) from datetime"),
    Case("checkpoint-year-overflow-describe", write(lambda: patch(checkpoint_bytes(), (8, "q", -(2**62)))),
         "StoreCheckpoint.describe", None, "-4611686018427387904  (not a date in years 1..9999)",
         "logicsMsgTimestamp is -2^62: describe() shows the number, not a date", error_path=None,
         fix="describe() raised ValueError"),
    # ---- Kafka .index (8 entries, base offset 100) and .timeindex (6 entries)
    Case("kafka-index-length.index", write(lambda: kafka_index_bytes("offset") + b"\x00\x00\x00"), "OffsetIndex.open",
         "CorruptIndexError", "offset 64: file length: found 67 bytes which is neither positive nor a multiple of 8",
         "3 bytes appended (67 bytes)", dict(base_offset=100), 64, "file length"),
    Case("kafka-index-last-below-base.index", write(lambda: patch(kafka_index_bytes("offset"), (56, "i", -3))),
         "OffsetIndex.open", "CorruptIndexError",
         "offset 56: entry[7].relative_offset: Corrupt index found: non-zero size but the last offset is 97 which "
         "is less than the base offset 100", "the last entry's relative offset is -3", dict(base_offset=100), 56,
         "entry[7].relative_offset"),
    Case("kafka-index-unsorted.index", write(lambda: patch(kafka_index_bytes("offset"), (24, "i", 1))),
         "OffsetIndex.check", "CorruptIndexError",
         "offset 24: entry[3].relative_offset: offset not larger than the previous entry's (1 such)",
         "entry 3's relative offset set to 1, below entry 2's 7", dict(base_offset=100), 24,
         "entry[3].relative_offset"),
    Case("kafka-index-bad-name.index", write(lambda: kafka_index_bytes("offset")), "OffsetIndex.open", "FormatError",
         "file name: file name 'kafka-index-bad-name.index' is not <base offset digits>.<suffix>",
         "a sound index whose name has no base offset (and none passed)", {}, None, "file name"),
    Case("kafka-timeindex-time-order.timeindex", write(lambda: patch(kafka_index_bytes("time"), (60, "q", 5))),
         "TimeIndex.open", "CorruptIndexError", "offset 60: entry[5].timestamp: Corrupt time index found: non-zero "
         "size but the last timestamp is 5 which is less than the first timestamp 1718000000000",
         "the last entry's timestamp is 5", dict(base_offset=100), 60, "entry[5].timestamp"),
    Case("kafka-timeindex-length.timeindex", write(lambda: kafka_index_bytes("time")[:70]), "TimeIndex.open",
         "CorruptIndexError", "offset 60: file length: found 70 bytes which is neither positive nor a multiple of 12",
         "cut to 70 bytes", dict(base_offset=100), 60, "file length"),
    # ---- Kafka .log (three batches: records 0-2, 3, 4-5; batch 0's first record at 61)
    Case("kafka-log-bad-magic.log", kl_case(lambda b: b.__setitem__(16, 3)), "read_batches", "FormatError",
         "offset 16: magic: magic v3: not a Kafka log format",
         "batch 0's magic byte is 3 (0 and 1 are the legacy message sets)", {}, 16, "magic"),
    Case("kafka-log-v2-read-as-v1.log", kl_case(lambda b: b.__setitem__(16, 1)), "read_batches", "FormatError",
         "offset 26: keyLength: keyLength 33554433 runs 33554350 bytes past the end of the message",
         "batch 0's magic byte is 1: its v2 header read as a legacy v1 message", {}, 26, "keyLength"),
    Case("kafka-log-batch-length.log", kl_case(lambda b: struct.pack_into(">i", b, 8, 20)), "read_batches",
         "FormatError",
         "offset 8: batchLength: batchLength 20 is smaller than the rest of the 61-byte v2 batch header (49)",
         "batch 0's batchLength is 20", {}, 8, "batchLength"),
    Case("kafka-log-torn.log", kl_case(lambda b: None, cut=100), "read_batches", "TruncatedFileError",
         "offset 0: batchLength: batchLength", "cut at byte 100, inside batch 0", {}, 0, "batchLength"),
    Case("kafka-log-crc.log", kl_case(lambda b: b.__setitem__(70, b[70] ^ 1)), "read_batches", "FormatError",
         "offset 17: crc: stored CRC-32C 0x", "a record byte of batch 0 flipped; read with verify_crc",
         dict(verify_crc=True), 17, "crc"),
    Case("kafka-log-record-length.log", kl_case(lambda b: b.__setitem__(61, 0x7F), fix_crc=True), "read_records",
         "FormatError", "offset 61: record[0].length: record 0 of the batch at 0 (recordsCount=3): negative record "
         "length -64", "record 0's length varint made 0x7F (zig-zag -64), CRC recomputed", {}, 61, "record[0].length"),
    Case("kafka-log-records-count.log", kl_case(lambda b: struct.pack_into(">i", b, 57, -1), fix_crc=True),
         "read_records", "FormatError",
         "offset 57: recordsCount: negative recordsCount -1", "batch 0's recordsCount is -1, CRC recomputed", {},
         57, "recordsCount"),
    Case("kafka-log-key-length.log", kl_case(lambda b: b.__setitem__(65, 0x50), fix_crc=True), "read_records",
         "FormatError", "offset 66: record[0].key: record 0 of the batch at 0: keyLength 40 runs",
         "record 0's keyLength varint made 0x50 (40), CRC recomputed", {}, 66, "record[0].key"),
    # ---- message ids (text files)
    Case("msgid-bad-hex.txt", text("C0A8470100001FBB00000000000000AG"), "parse_offset_msg_id", "ValueError",
         "is not 32 (IPv4) or 56 (IPv6) hex digits", "an offset message id with a non-hex G (the documented "
         "ValueError: ids are arguments)", {}, error_path=None),
    Case("msgid-uniq-now-out-of-range.txt", text("0A00000710921B6D35862FAF08000007"), "parse_uniq_id", "ValueError",
         "is outside the dates datetime can handle", "a sound unique id read with now = Long.MAX_VALUE (e.g. a "
         "corrupt store timestamp)", dict(now=LONG_MAX, tz="UTC"), error_path=None,
         fix="OverflowError from datetime; now the documented ValueError"),
]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for c in CASES:
        target = out / c.name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        c.build(target)
        manifest.append({"file": c.name, "reader": c.reader, "args": c.args, "error": c.error,
                         "offset": c.offset, "field": c.field,
                         "error_path": c.name if c.error_path == "" else c.error_path,
                         "message": c.message, "why": c.why, **({"fix": c.fix} if c.fix else {})})
    (out / "expected.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    lines = [
        "# Corrupt-file corpus",
        "",
        "Small corrupt files, one per failure class of each reader, each with the exact error it must",
        "raise: class, byte offset, field and a message substring (`expected.json`, checked by",
        "`tests/formats/test_corrupt_corpus.py`). Every file is a valid file written with rmqlab's own writers,",
        "then corrupted deterministically by `make_corpus.py`; regenerate with",
        "`python tests/data/corrupt/make_corpus.py` (the test also checks that it reproduces these bytes).",
        "Entries marked *regression* reproduce a bug the fuzzer (`tests/test_fuzz.py`) found; they pass",
        "since the fix named there. `error: null` means the call must now succeed.",
        "",
        "| file | reader | error | offset | field | what is wrong |",
        "|---|---|---|---|---|---|",
    ]
    for c in CASES:
        why = c.why + (f" *(regression: {c.fix})*" if c.fix else "")
        lines.append(f"| `{c.name}` | {c.reader} | {c.error or '(succeeds)'} | {'' if c.offset is None else c.offset} "
                     f"| {c.field or ''} | {why.replace('|', '/')} |")
    lines += ["", "Readers (see READERS in the test): `IndexFile.open` / `.check` / `.chain` take hash_slot_num=8,",
              "index_num=24 (`.check` and `.chain` open with strict=False); `ConsumeQueue.*` open the folder",
              "(mapped_file_size=100; `.check`, `.unit`, `.queue_offsets`, `.offset_by_time` with strict=False);",
              "CommitLog readers take the file or folder; Kafka index readers pass base_offset=100 unless the",
              "name is the point; message-id readers read the text file's first line.", ""]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[2]))
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
