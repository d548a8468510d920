"""Kafka's log segment (``<base offset>.log``): magic v2 record batches, read and written byte for byte;
the legacy v0/v1 message sets of older brokers read beside them (:mod:`rmqlab.kafka.legacy`).

Mirrors ``org.apache.kafka.common.record.DefaultRecordBatch`` (header layout, attributes, CRC
range), ``DefaultRecord`` (the record inside an uncompressed batch), ``FileLogInputStream``
(the batch walk of a ``FileRecords``), ``CompressionType`` / ``TimestampType``,
``org.apache.kafka.common.utils.ByteUtils`` (zig-zag varints) and ``Crc32C`` (clients module;
the v2 format is unchanged since 0.11 but for the attributes' hasDeleteHorizonMs bit of Kafka
3.x) and, for a torn tail, what ``LogSegment.recover`` keeps. Compressed batches are read as
``DefaultRecordBatch.compressedIterator`` / ``StreamRecordIterator`` read them and checked as
``LogValidator.validateMessagesAndAssignOffsetsCompressed`` and ``MemoryRecords.filterTo``
leave them (read at Kafka 2.8.2 and 3.7.0); the codecs are :mod:`rmqlab.kafka.codecs`.

A segment is batches back to back from byte 0, no padding, no file header. A batch is its
61-byte header (:data:`HEADER`, big-endian) followed by ``recordsCount`` records, compressed
as one block when ``attributes & 0x7`` is not 0::

    baseOffset i64  batchLength i32  partitionLeaderEpoch i32  magic i8  crc u32
    attributes i16  lastOffsetDelta i32  baseTimestamp i64  maxTimestamp i64
    producerId i64  producerEpoch i16  baseSequence i32  recordsCount i32  records...

``batchLength`` counts the bytes after itself, so a batch takes ``batchLength + 12`` bytes
(:data:`LOG_OVERHEAD`). ``crc`` is CRC-32C of the bytes from ``attributes`` to the end of the
batch: the broker rewrites ``baseOffset`` and ``partitionLeaderEpoch`` without touching it.
A record (:func:`read_records`) is::

    length varint  attributes i8  timestampDelta varlong  offsetDelta varint
    keyLength varint  key  valueLength varint  value  headersCount varint
    [headerKeyLength varint  headerKey  headerValueLength varint  headerValue] ...

Varints are zig-zag encoded base-128 (at most 5 bytes, varlongs 10); a negative length means
null. A record's offset is ``baseOffset + offsetDelta``; its timestamp ``baseTimestamp +
timestampDelta``, or ``maxTimestamp`` for the whole batch when the batch is LogAppendTime.

Compressed batches (gzip, snappy, lz4, zstd). The records of a compressed batch are one
compressed block after the header; decompressed, they are the same records as above. They
have no file position of their own: :func:`read_records` gives them ``position`` -1 and
``inner_position``, their byte offset in the decompressed records (for an uncompressed
batch, the offset from the end of its header). A compressed batch must hold exactly
``recordsCount`` records with no bytes left after them, and its offsetDeltas rise within 0
.. ``lastOffsetDelta`` (the broker rewrites a compressed batch whose inner offsets are not
0, 1, 2 ...; the log cleaner keeps the survivors' offsets and the batch's lastOffset).

Readers: :func:`walk_batches` (one :class:`Batch` at a time), :func:`read_batches` (headers
as a DataFrame, CRCs checked in C), :func:`read_records` (every record, compressed batches
decompressed and legacy entries included, as a DataFrame), :func:`scan_key` (records with one
key: Kafka has no key index, a key look-up is this scan), :func:`compressed_batch_problems`
(every damaged compressed batch, for ``rmqlab kafka verify``). Writers (uncompressed or any of
the four codecs): :func:`encode_batches`, :class:`SegmentWriter`, :func:`write_segment`;
:func:`records_from_workload` turns rmqlab's synthetic workload into records, so the same
messages can be stored as a RocketMQ CommitLog and as a Kafka segment.

Legacy entries. A v2 batch and a v0/v1 message both start with offset i64 and length i32 and
have magic at byte 16, so one walk covers a segment whose message format was upgraded, as
``FileLogInputStream`` reads it: magic 0/1 entries are rows of :func:`read_batches` (``magic``
0 or 1, ``base_offset`` / ``last_offset`` as ``AbstractLegacyRecordBatch`` gives them,
``crc_ok`` by CRC-32; their compressed wrappers are decompressed for the first offset) and
their (inner) records rows of :func:`read_records`, which then has the columns ``magic``,
``timestamp_type``, ``compression``, ``crc``, ``crc_ok`` too; :func:`read_legacy_records` has
the legacy records alone, with their own CRC-32 and wrapper position. The entries themselves
are decoded by :mod:`rmqlab.kafka.legacy`, handed the positions the walk found.

Damage. Bad bytes raise a typed error naming file, byte offset and field: magic other than
0, 1 or 2, a ``batchLength`` below the header (a legacy ``messageSize`` below its fixed
fields), a bad varint or length inside a record, a compressed payload that does not
decompress, a record count or offsetDelta that does not agree with the header, a legacy
wrapper that does not decode (:class:`~rmqlab.errors.FormatError`). A segment may end inside
a batch (a torn write): that raises :class:`~rmqlab.errors.TruncatedFileError` at the
batch's offset, or, with
``torn_tail="stop"``, ends the walk there quietly as Kafka's recovery does (it truncates the
segment to its last whole batch); ``report.torn_tail`` says where. A CRC mismatch is a
``crc_ok`` of False, or a FormatError when ``verify_crc=True``. With ``on_damage="report"``
nothing raises: the readers return every whole batch (record) before the first damage, and
``report.damage`` (:class:`SegmentDamage`) says where it is (file, byte offset, field) and why,
as ``kafka-dump-log`` prints the batches up to a tear and ``LogSegment.recover`` keeps them.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> path = write_segment(d, 100, [KafkaRecord(100, 1718000000000, b"k1", b"hello"),
...                               KafkaRecord(101, 1718000000005, None, b"world", [("h", b"v")])],
...                      records_per_batch=2)
>>> path.name
'00000000000000000100.log'
>>> b = read_batches(path)
>>> b[["position", "size", "base_offset", "last_offset", "records_count", "crc_ok"]].values.tolist()
[[0, 91, 100, 101, 2, True]]
>>> r = read_records(path)
>>> r[["offset", "timestamp", "key", "value", "headers"]].values.tolist()
[[100, 1718000000000, b'k1', b'hello', []], [101, 1718000000005, None, b'world', [('h', b'v')]]]
"""
from __future__ import annotations

import dataclasses
import functools
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

import rmqlab._kafkalog as _kafkalog
import rmqlab._records as _records
from rmqlab._crc32c import crc32c, crc32c_spans
from rmqlab.errors import FormatError, RmqlabError, TruncatedFileError
from rmqlab.formats.layout import Layout
from rmqlab.jvm.longs import wrap_long
from rmqlab.kafka import legacy
from rmqlab.kafka.columns import record_columns, to_table
from rmqlab.kafka.index import LOG_SUFFIX, segment_file_name

__all__ = [
    "HEADER", "LOG_OVERHEAD", "RECORD_BATCH_OVERHEAD", "HEADER_SIZE_UP_TO_MAGIC", "CRC_START",
    "MAGIC", "COMPRESSION_CODEC_MASK", "TIMESTAMP_TYPE_MASK", "TRANSACTIONAL_FLAG_MASK",
    "CONTROL_FLAG_MASK", "DELETE_HORIZON_FLAG_MASK", "COMPRESSION_TYPES", "TIMESTAMP_TYPES",
    "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "NO_SEQUENCE", "NO_TIMESTAMP",
    "crc32c", "compression_name", "Batch", "WalkReport", "BatchStream", "KafkaRecord", "EncodedBatches",
    "log_file_name", "walk_batches", "read_batches", "read_records", "read_legacy_records", "scan_key",
    "compressed_batch_problems",
    "encode_batches", "SegmentWriter", "write_segment", "records_from_workload", "TornTail",
    "OnDamage", "SegmentDamage",
]

#: What a reader does with a batch cut by the end of the file: raise TruncatedFileError, or stop
#: quietly before it as the broker's recovery does.
TornTail = Literal["raise", "stop"]
#: What a reader does at the first byte it cannot accept (a torn tail, a header or record that
#: makes no sense): raise its typed error, or stop before the batch holding it and describe it
#: in ``report.damage`` (a :class:`SegmentDamage`).
OnDamage = Literal["raise", "report"]

# ------------------------------------------------------------------------------- layout

# DefaultRecordBatch.java: BASE_OFFSET_OFFSET .. RECORDS_OFFSET. Java has no unsigned int: the
# CRC is declared signed here and read back with & 0xFFFFFFFF (ByteUtils.readUnsignedInt).
HEADER = Layout("RecordBatchHeader", [
    ("base_offset", "q", "baseOffset: offset of the batch's first record (the first kept one after compaction)"),
    ("batch_length", "i", "batchLength: bytes of the batch after this field; the batch takes batchLength + 12"),
    ("partition_leader_epoch", "i", "partitionLeaderEpoch: leader epoch set by the broker (not in the CRC)"),
    ("magic", "b", "magic: record format version, 2 (0 and 1 are the legacy message sets)"),
    ("crc", "i", "crc: CRC-32C of attributes .. end of batch, unsigned 32-bit (read & 0xFFFFFFFF)"),
    ("attributes", "h", "attributes: bits 0-2 compression, 3 LogAppendTime, 4 transactional, "
                        "5 control, 6 hasDeleteHorizonMs"),
    ("last_offset_delta", "i", "lastOffsetDelta: last offset - baseOffset (kept when compaction removes records)"),
    ("base_timestamp", "q", "baseTimestamp: first record's timestamp, ms (the delete horizon when bit 6 is set)"),
    ("max_timestamp", "q", "maxTimestamp: largest record timestamp (CreateTime) or the broker's append time, ms"),
    ("producer_id", "q", "producerId: idempotent/transactional producer, -1 none"),
    ("producer_epoch", "h", "producerEpoch: -1 none"),
    ("base_sequence", "i", "baseSequence: producer sequence of the first record, -1 none"),
    ("records_count", "i", "recordsCount: records that follow (compressed together when compression != 0)"),
])
assert HEADER.size == 61

MAGIC = 2                                           # RecordBatch.MAGIC_VALUE_V2
LOG_OVERHEAD = HEADER.offset("partition_leader_epoch")   # Records.LOG_OVERHEAD: baseOffset + batchLength = 12
RECORD_BATCH_OVERHEAD = HEADER.size                 # DefaultRecordBatch.RECORD_BATCH_OVERHEAD = 61
HEADER_SIZE_UP_TO_MAGIC = HEADER.offset("crc")      # Records.HEADER_SIZE_UP_TO_MAGIC = 17
CRC_START = HEADER.offset("attributes")             # DefaultRecordBatch.ATTRIBUTES_OFFSET = 21
assert (LOG_OVERHEAD, HEADER_SIZE_UP_TO_MAGIC, CRC_START) == (12, 17, 21)

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40
#: CompressionType ids (5-7 are not assigned: shown as "unknown(5)").
COMPRESSION_TYPES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
#: TimestampType names, by the attributes' bit 3.
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP = -1, -1, -1, -1   # RecordBatch.NO_*

INT_MAX = 2**31 - 1
_VARINT_BYTES, _VARLONG_BYTES = 5, 10     # ByteUtils: an int takes at most 5 bytes, a long 10
#: Record walk: batches are stepped together (NumPy) while at least this many still have records
#: left; the last few long batches are finished one record at a time. Both give the same result.
_LOCKSTEP_MIN = 16

#: batchLength, partitionLeaderEpoch, magic: what the walk reads of each batch (from byte 8)
_LENGTH_TO_MAGIC = struct.Struct(">" + "".join(
    f.code for f in HEADER.fields if HEADER.offset("batch_length") <= f.offset <= HEADER.offset("magic")))
#: the smallest whole entry by magic: a v0 / v1 legacy message (LegacyRecord), a v2 batch
_MIN_ENTRY_SIZE = {**legacy.MIN_ENTRY_SIZE, MAGIC: RECORD_BATCH_OVERHEAD}


def compression_name(attributes: int) -> str:
    """Name of the compression codec in a batch's attributes.

    >>> compression_name(0x0B), compression_name(0)
    ('lz4', 'none')
    """
    code = int(attributes) & COMPRESSION_CODEC_MASK
    return COMPRESSION_TYPES.get(code, f"unknown({code})")


def log_file_name(base_offset: int) -> str:
    """The ``.log`` file name of the segment starting at `base_offset`
    (:func:`rmqlab.kafka.index.segment_file_name` with ``.log``).

    >>> log_file_name(78)
    '00000000000000000078.log'
    """
    return segment_file_name(base_offset, LOG_SUFFIX)


# ------------------------------------------------------------------------------- batches


@dataclass(frozen=True)
class Batch:
    """One batch header as stored, with where it lies (`position`, `size` in bytes) and whether
    its CRC verifies. ``crc`` is unsigned; the rest as Java reads them (signed)."""

    position: int
    size: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    crc_ok: bool

    @property
    def last_offset(self) -> int:
        return wrap_long(self.base_offset + self.last_offset_delta)

    @property
    def end(self) -> int:
        """File position just after this batch."""
        return self.position + self.size

    @property
    def compression(self) -> str:
        return compression_name(self.attributes)

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return legacy.NO_TIMESTAMP_TYPE
        return TIMESTAMP_TYPES[bool(self.attributes & TIMESTAMP_TYPE_MASK)]

    # the legacy attributes byte has no bits past the timestamp type
    @property
    def is_transactional(self) -> bool:
        return self.magic == MAGIC and bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic == MAGIC and bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic == MAGIC and bool(self.attributes & DELETE_HORIZON_FLAG_MASK)


@dataclass(frozen=True)
class SegmentDamage:
    """The first place a segment cannot be read, as a reader with ``on_damage="report"`` found it.

    ``position`` (bytes from the start of the file) is where the batch holding the damage
    starts: every batch before it is whole, and it is where ``LogSegment.recover`` truncates
    the segment (it stops at the first batch that cannot be framed or fails ``ensureValid``).
    ``offset`` is the byte of the field at fault, ``field`` its name, ``reason`` what is wrong
    and what was expected. ``kind``: ``"torn"`` (the file ends inside a batch, or only zero
    bytes are left: a torn or unflushed write), ``"crc"`` (the stored CRC-32C does not match;
    only when reading with ``verify_crc``), ``"corrupt"`` (a field holds a value no writer
    produces: not a Kafka segment, or damaged bytes). :meth:`error` is the typed error a reader
    with ``on_damage="raise"`` raises for it. Cost: a record, O(1).

    >>> data = encode_batches([KafkaRecord(i, 1000, None, b"v") for i in range(3)]).data.tobytes()
    >>> df = read_batches(data[:-5], on_damage="report")
    >>> d = df.attrs["report"].damage
    >>> len(df), d.kind, d.position, d.field, d.invalid_bytes
    (2, 'torn', 138, 'batchLength', 64)
    """

    kind: str
    path: str | None
    position: int
    offset: int
    field: str
    reason: str
    file_size: int

    @property
    def invalid_bytes(self) -> int:
        """Bytes from the damaged batch to the end of the file (what recovery truncates)."""
        return self.file_size - self.position

    def error(self) -> RmqlabError:
        cls = TruncatedFileError if self.kind == "torn" else FormatError
        return cls(self.reason, path=self.path, offset=self.offset, field=self.field)

    def __str__(self) -> str:
        return str(self.error())

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "file": self.path, "position": self.position, "offset": self.offset,
                "field": self.field, "reason": self.reason, "file_size": self.file_size,
                "invalid_bytes": self.invalid_bytes}


def _damage(error: RmqlabError, position: int, file_size: int) -> SegmentDamage:
    """`error`, found in the entry that starts at `position`, as a SegmentDamage."""
    kind = "torn" if isinstance(error, TruncatedFileError) else "crc" if error.field == "crc" else "corrupt"
    offset = position if error.offset is None else error.offset
    return SegmentDamage(kind, error.path, int(position), int(offset), error.field or "batch", error.reason,
                         int(file_size))


@dataclass
class WalkReport:
    """How a walk ended. ``valid_bytes`` is where the last whole batch ends (what Kafka's
    recovery keeps); ``torn_tail`` the position of a batch cut by the end of the file (None
    when the file ends on a batch boundary), ``torn_reason`` why. ``damage``: with
    ``on_damage="report"``, where and why reading stopped (:class:`SegmentDamage`), None when
    every byte was read. ``unread_from``: with ``max_bytes`` smaller than the file, the
    position of the first entry not read because it does not end within the first
    ``max_bytes`` bytes (the bytes from there on were not read: nothing is said of them),
    ``unread_reason`` what the walk saw there; None when the bound cut nothing."""

    path: str | None = None
    file_size: int = 0
    batches: int = 0
    valid_bytes: int = 0
    torn_tail: int | None = None
    torn_reason: str | None = None
    damage: SegmentDamage | None = None
    unread_from: int | None = None
    unread_reason: str | None = None


@contextmanager
def _opened(source):
    """(read-only buffer, path or None) of a path (memory-mapped) or a bytes-like object."""
    with _window(source, None) as (buf, path, _):
        yield buf, path


def _check_max_bytes(max_bytes: int | None) -> None:
    if max_bytes is not None and max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")


@contextmanager
def _window(source, max_bytes: int | None):
    """(read-only buffer, path or None, size of the whole source) of a path (memory-mapped) or
    a bytes-like object; with `max_bytes`, the buffer is its first `max_bytes` bytes only (a
    file is mapped that far and no further, so no reader can touch a byte past it)."""
    _check_max_bytes(max_bytes)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            length = size if max_bytes is None else min(size, max_bytes)
            if length == 0:
                yield b"", path, size
                return
            mm = mmap.mmap(fh.fileno(), length, access=mmap.ACCESS_READ)
            try:
                yield mm, path, size
            finally:
                try:
                    mm.close()
                except BufferError:   # a NumPy view still alive: the map closes when it is freed
                    pass
        return
    mv = memoryview(source)
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    yield (mv if max_bytes is None else mv[:max_bytes]), None, len(mv)


class _Stop(NamedTuple):
    """Why a batch walk ended before the end of the data."""
    error: RmqlabError
    torn: bool


def _spans(buf, path) -> Iterator[int | _Stop]:
    """Position of each whole batch or legacy entry in file order, as FileLogInputStream.nextBatch
    steps through a segment (both start with offset i64, length i32 and have magic at byte 16);
    a last item _Stop says why the walk ended before the end of the data. At most
    len(buf) // 26 + 1 steps: every whole entry is at least 26 bytes (a v0 message).

    The readable model of the C walk :func:`_entry_positions` (about 1 µs a batch here, some
    50 ns there); the tests compare the two."""
    end = len(buf)
    p = 0
    at_length = HEADER.offset("batch_length")
    unpack = _LENGTH_TO_MAGIC.unpack_from
    for _ in range(end // _MIN_ENTRY_SIZE[0] + 1):
        left = end - p
        if left < HEADER_SIZE_UP_TO_MAGIC:
            if left:
                yield _short_tail(buf, p, path)
            return
        batch_length, _, magic = unpack(buf, p + at_length)
        size = batch_length + LOG_OVERHEAD
        if magic not in _MIN_ENTRY_SIZE or size < _MIN_ENTRY_SIZE[magic] or size > left:
            yield _bad_batch(buf, p, path, batch_length, magic)
            return
        yield p
        p += size
    raise AssertionError("unreachable: every whole entry is at least 26 bytes")  # pragma: no cover


#: entries the C walk frames per call when batches are handed out one at a time
_WALK_CHUNK = 4096


def _entry_positions(buf, path, start: int = 0,
                     limit: int = -1) -> tuple[np.ndarray, _Stop | None, int, bool]:
    """The positions :func:`_spans` gives, framed in C from `start` (at most `limit` entries when
    it is not negative): (positions int64, the _Stop or None, where the walk stopped, whether
    entries are left past the limit). The error is built here from the bytes where the C walk
    stopped, by the same code as :func:`_spans`."""
    raw, stopped_at, code = _kafkalog.walk(buf, start, limit)
    positions = np.frombuffer(raw, np.int64)
    if code == _kafkalog.STOP_END or code == _kafkalog.STOP_LIMIT:
        return positions, None, stopped_at, code == _kafkalog.STOP_LIMIT
    return positions, _stop_at(buf, stopped_at, path), stopped_at, False


def _stop_at(buf, p: int, path) -> _Stop:
    """Why a walk cannot frame the entry at `p` (it starts before the end of `buf`)."""
    if len(buf) - p < HEADER_SIZE_UP_TO_MAGIC:
        return _short_tail(buf, p, path)
    batch_length, _, magic = _LENGTH_TO_MAGIC.unpack_from(buf, p + HEADER.offset("batch_length"))
    return _bad_batch(buf, p, path, batch_length, magic)


def _short_tail(buf, p: int, path) -> _Stop:
    """The file ends before the magic byte of the entry at `p`."""
    left = len(buf) - p
    return _Stop(_zero_tail(buf, p, path) or TruncatedFileError(
        f"the file ends {left} bytes into a batch, before its magic byte (a batch "
        f"header is {RECORD_BATCH_OVERHEAD} bytes)", path=path, offset=p, field="batch header"), True)


def _bad_batch(buf, p: int, path, batch_length: int, magic: int) -> _Stop:
    """Why the batch at `p` ends the walk: an all-zero rest of the file (torn), else magic first
    (the other header fields mean nothing unless it is 0, 1 or 2), then a length below the
    header of that magic (corrupt) or past the end of the file (torn)."""
    left = len(buf) - p
    size = batch_length + LOG_OVERHEAD
    if magic not in _MIN_ENTRY_SIZE or size < _MIN_ENTRY_SIZE[magic]:
        zeros = _zero_tail(buf, p, path)   # all zeros reads as a v0 message of size 0
        if zeros:
            return _Stop(zeros, True)
    if magic not in _MIN_ENTRY_SIZE:
        return _Stop(FormatError(
            f"magic v{magic}: not a Kafka log format (expected magic v2, a record batch, or v0 / v1, a legacy "
            f"message set)",
            path=path, offset=p + HEADER.offset("magic"), field="magic"), False)
    if size < _MIN_ENTRY_SIZE[magic]:
        if magic == MAGIC:
            what = (f"batchLength {batch_length} is smaller than the rest of the {RECORD_BATCH_OVERHEAD}-byte v2 "
                    f"batch header ({RECORD_BATCH_OVERHEAD - LOG_OVERHEAD})")
        else:
            what = (f"messageSize {batch_length} is smaller than a magic v{magic} message's fixed fields "
                    f"({_MIN_ENTRY_SIZE[magic] - LOG_OVERHEAD})")
        return _Stop(FormatError(what, path=path, offset=p + HEADER.offset("batch_length"),
                                 field="batchLength" if magic == MAGIC else "messageSize"), False)
    return _Stop(TruncatedFileError(
        f"batchLength {batch_length} says the batch takes {size} bytes but only {left} are left: the file "
        f"ends inside this batch (a torn write)", path=path, offset=p, field="batchLength"), True)


def _zero_tail(buf, p: int, path) -> TruncatedFileError | None:
    """A torn-tail error when every byte from `p` to the end is zero (space a preallocated or
    unflushed file never got written), else None. Only called where the walk stops."""
    left = len(buf) - p
    if np.frombuffer(buf, np.uint8, left, p).any():
        return None
    return TruncatedFileError(f"only zero bytes from here to the end of the file ({left} bytes): an "
                              f"unwritten (preallocated or unflushed) tail", path=path, offset=p,
                              field="batch header")


def _error_offset(error: RmqlabError) -> int:
    """Where `error` is in the file, to pick the first of several. The walk's errors always name
    an offset; one without sorts first rather than being lost."""
    return -1 if error.offset is None else error.offset


def _crc_error(path, position: int, stored: int, computed: int) -> FormatError:
    return FormatError(f"stored CRC-32C 0x{stored:08X} but the batch's bytes give 0x{computed:08X}",
                       path=path, offset=position + HEADER.offset("crc"), field="crc")


#: Batch's fields in order (position, size, then HEADER's fields, crc_ok) and where crc is
_BATCH_FIELDS = tuple(f.name for f in dataclasses.fields(Batch))
_CRC_AT = _BATCH_FIELDS.index("crc")


def _new_batch(values: tuple) -> Batch:
    """``Batch(*values)`` without the frozen dataclass's __init__, which sets each of the 16
    fields through object.__setattr__: about five times faster, and Batch has no checks or
    __post_init__ to skip."""
    batch = object.__new__(Batch)
    batch.__dict__.update(zip(_BATCH_FIELDS, values))
    return batch


class BatchStream:
    """Iterator of a segment's :class:`Batch` headers; ``report`` (a :class:`WalkReport`) is
    filled as it goes. Made by :func:`walk_batches`."""

    def __init__(self, source, *, verify_crc: bool = False,
                 torn_tail: TornTail = "raise", on_damage: OnDamage = "raise"):
        _check_modes(torn_tail, on_damage)
        self.source, self.verify_crc, self.torn_tail, self.on_damage = source, verify_crc, torn_tail, on_damage
        self.report = WalkReport()

    def __iter__(self) -> Iterator[Batch]:
        rep = self.report
        with _opened(self.source) as (buf, path):
            rep.path, rep.file_size = path, len(buf)
            U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
            start, more = 0, True
            while more and rep.damage is None:
                P, stop, at, more = _entry_positions(buf, path, start, _WALK_CHUNK)
                yield from self._chunk(buf, U, path, P)
                if stop is not None and rep.damage is None:
                    if stop.torn and self.torn_tail == "stop" and self.on_damage == "raise":
                        rep.torn_tail, rep.torn_reason = stop.error.offset, stop.error.reason
                        return
                    self._stop(stop.error, at)
                start = at
            del U

    def _stop(self, error: RmqlabError, position: int) -> None:
        """The walk ends at the entry starting at `position`: raise `error`, or report it."""
        if self.on_damage == "raise":
            raise error
        rep = self.report
        rep.damage = _damage(error, position, rep.file_size)
        if rep.damage.kind == "torn":
            rep.torn_tail, rep.torn_reason = position, error.reason

    def _chunk(self, buf, U: np.ndarray, path, P: np.ndarray) -> Iterator[Batch]:
        """The batches at positions `P`: v2 headers and CRCs in bulk, legacy entries decoded one
        by one; a CRC mismatch (with verify_crc) or a legacy entry that does not decode ends the
        walk where it is (raised or reported), after the batches before it."""
        rep = self.report
        v2 = U[P + HEADER.offset("magic")] == MAGIC
        PV = P[v2]
        h = _v2_header_columns(U, PV)
        size = h["batch_length"] + LOG_OVERHEAD
        computed = np.empty(len(PV), np.uint32)
        crc32c_spans(U, np.ascontiguousarray(PV + CRC_START), np.ascontiguousarray(size - CRC_START), computed)
        ok = computed == h["crc"]
        columns = [h[f.name].tolist() for f in HEADER.fields]
        rows = zip(PV.tolist(), size.tolist(), *columns, ok.tolist())
        computed_crcs = iter(computed.tolist())
        for p, is_v2 in zip(P.tolist(), v2.tolist()):
            if not is_v2:
                cols, _, err = legacy.decode_entries(buf, path, [p], verify_crc=self.verify_crc)
                if err is not None:
                    self._stop(err, p)
                    return
                rep.batches += 1
                rep.valid_bytes = p + int(cols["batch_length"][0]) + LOG_OVERHEAD
                yield Batch(p, rep.valid_bytes - p, **{f.name: int(cols[f.name][0]) for f in HEADER.fields},
                            crc_ok=bool(cols["crc_ok"][0]))
                continue
            row = next(rows)
            crc_computed = next(computed_crcs)
            if self.verify_crc and not row[-1]:
                self._stop(_crc_error(path, p, row[_CRC_AT], crc_computed), p)
                return
            rep.batches += 1
            rep.valid_bytes = p + row[1]
            yield _new_batch(row)


def _check_modes(torn_tail: str, on_damage: str) -> None:
    if torn_tail not in ("raise", "stop"):
        raise ValueError(f"torn_tail must be 'raise' or 'stop', got {torn_tail!r}")
    if on_damage not in ("raise", "report"):
        raise ValueError(f"on_damage must be 'raise' or 'report', got {on_damage!r}")


def walk_batches(source, *, verify_crc: bool = False,
                 torn_tail: TornTail = "raise", on_damage: OnDamage = "raise") -> BatchStream:
    """Iterate the batch headers of a segment (a path, or bytes-like data) in file order.

    Compressed v2 batches are walked by their headers alone (a legacy wrapper is decompressed
    for its first offset). Raises FormatError for magic other than 0, 1, 2 or a length below
    the header (or a legacy entry that does not decode), TruncatedFileError
    (offset = the torn batch's position) when the file ends inside a batch unless
    ``torn_tail="stop"``; with `verify_crc` a CRC mismatch raises FormatError (field "crc"),
    otherwise it is ``crc_ok=False``. ``on_damage="report"``: none of these raises; the walk
    ends before the batch holding the first of them and ``report.damage`` says where and why
    (:class:`SegmentDamage`). Cost: the entries are framed in C and their headers
    read and CRCs computed in bulk, 4096 batches at a time; making one :class:`Batch` a batch
    is what is left, about 4 µs (0.25 GB/s at 1 KiB batches, measured on a loaded 2-core
    machine): for a whole segment :func:`read_batches` is about eight times faster.

    >>> data = encode_batches([KafkaRecord(5, 1000, None, b"x")]).data.tobytes()
    >>> [(b.base_offset, b.last_offset, b.size, b.compression, b.crc_ok) for b in walk_batches(data)]
    [(5, 5, 69, 'none', True)]
    """
    return BatchStream(source, verify_crc=verify_crc, torn_tail=torn_tail, on_damage=on_damage)


#: the NumPy type of each header field's column (read_batches' dtypes)
_COLUMN_TYPES = {f.name: np.int64 if f.size >= 4 else np.int16 if f.size == 2 else np.int8 for f in HEADER.fields}


def _v2_header_columns(buf, positions: np.ndarray) -> dict[str, np.ndarray]:
    """The header fields of the v2 batches at `positions`, one native array a field (``crc``
    unsigned), read in one C pass."""
    n = len(positions)
    block = np.empty((len(HEADER.fields), n), np.int64)
    if n:
        _kafkalog.v2_headers(buf, np.ascontiguousarray(positions, np.int64), block)
    return {f.name: block[j] if _COLUMN_TYPES[f.name] is np.int64 else block[j].astype(_COLUMN_TYPES[f.name])
            for j, f in enumerate(HEADER.fields)}


def _batch_table(buf, path, verify_crc: bool, torn_tail: TornTail, on_damage: OnDamage = "raise",
                 file_size: int | None = None):
    """Columns (dict of arrays) of every whole batch or legacy entry, the WalkReport and the first
    pending error (a CRC mismatch when verifying, a legacy entry that does not decode, a torn
    tail when raising, a format error) or None. Legacy entries are decoded by
    :func:`rmqlab.kafka.legacy.decode_entries`; their records are ``cols["_legacy_records"]``.
    ``on_damage="report"``: never a pending error; the columns stop before the entry holding
    the first one, which is ``report.damage``. `file_size` larger than `buf`: `buf` is the
    first bytes of the file (``max_bytes``), and an entry that does not end within it is not
    read (``report.unread_from``), as FileLogInputStream ends a slice's batches there."""
    _check_modes(torn_tail, on_damage)
    file_size = len(buf) if file_size is None else file_size
    report = WalkReport(path=path, file_size=file_size)
    P, stop, stopped_at, _ = _entry_positions(buf, path)
    if file_size > len(buf) and (stop is None or stop.torn):
        # the walk ran out of the bytes it may read: the entry there ends past the bound (or only
        # zeros are left before it, which may go on to the end of the file or not): not read
        report.unread_from, report.unread_reason = stopped_at, _unread_reason(buf, stopped_at)
        stop = None
    P = P.copy()        # the walk's bytes are read-only; the table's columns are the caller's to change
    U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
    v2 = U[P + HEADER.offset("magic")] == MAGIC if len(P) else np.zeros(0, bool)
    PV = P[v2]
    h = _v2_header_columns(U, PV)
    cols: dict[str, Any] = {"position": P}
    all_v2 = bool(v2.all())
    for f in HEADER.fields:
        if all_v2:      # no legacy rows to leave at 0
            cols[f.name] = h[f.name]
        else:
            col = np.zeros(len(P), _COLUMN_TYPES[f.name])
            col[v2] = h[f.name]
            cols[f.name] = col
    computed = np.empty(len(PV), np.uint32)
    crc32c_spans(U, np.ascontiguousarray(PV + CRC_START),
                 np.ascontiguousarray(cols["batch_length"][v2] + LOG_OVERHEAD - CRC_START), computed)
    crc_ok = np.zeros(len(P), bool)
    crc_ok[v2] = computed.astype(np.int64) == cols["crc"][v2]
    del U, h
    errors: list[RmqlabError] = []
    if verify_crc and not crc_ok[v2].all():
        i = int(np.argmin(crc_ok[v2]))
        errors.append(_crc_error(path, int(PV[i]), int(cols["crc"][v2][i]), int(computed[i])))
    if not v2.all():
        old = ~v2
        lcols, recs, err = legacy.decode_entries(buf, path, P[old], verify_crc=verify_crc)
        for name, col in lcols.items():
            if name == "crc_ok":
                crc_ok[old] = col
            else:
                cols[name][old] = col
        cols["_legacy_records"] = recs
        if err is not None:
            errors.append(err)
    cols["crc_ok"] = crc_ok
    S = cols["size"] = cols["batch_length"] + LOG_OVERHEAD
    pending = min(errors, key=_error_offset) if errors else None
    first = pending if pending is not None else None if stop is None else stop.error
    if on_damage == "report" and first is not None:
        # errors inside whole entries come before the walk's stop, which is past all of them
        at = stopped_at if pending is None else int(P[np.searchsorted(P, _error_offset(pending), "right") - 1])
        cols = _rows_before(cols, at)
        P, S = cols["position"], cols["size"]
        report.damage = _damage(first, at, file_size)
        report.unread_from = report.unread_reason = None
        if report.damage.kind == "torn":
            report.torn_tail, report.torn_reason = at, report.damage.reason
        pending = None
    elif stop is not None and pending is None:
        if stop.torn and torn_tail == "stop":
            report.torn_tail, report.torn_reason = stop.error.offset, stop.error.reason
        else:
            pending = stop.error
    report.batches = len(P)
    report.valid_bytes = int(P[-1] + S[-1]) if len(P) else 0
    return cols, report, pending


def _unread_reason(buf, p: int) -> str:
    """Why the entry at `p` of a bounded read (`buf` ends at the bound) was not read."""
    left = len(buf) - p
    if left == 0:
        return "the bound ends there"
    if left < HEADER_SIZE_UP_TO_MAGIC:
        return f"{left} bytes of its header lie within the bound ({HEADER_SIZE_UP_TO_MAGIC} frame it)"
    if not np.frombuffer(buf, np.uint8, left, p).any():
        return f"the {left} bytes from there to the bound are zeros"
    batch_length = _LENGTH_TO_MAGIC.unpack_from(buf, p + HEADER.offset("batch_length"))[0]
    return f"it takes {batch_length + LOG_OVERHEAD} bytes, {left} of them within the bound"


def _rows_before(cols: dict[str, Any], position: int) -> dict[str, Any]:
    """The rows of a _batch_table whose entry starts before `position` (and their legacy records)."""
    n = int(np.searchsorted(cols["position"], position, "left"))
    out = {k: (v[:n] if isinstance(v, np.ndarray) else v) for k, v in cols.items()}
    if "_legacy_records" in cols:
        recs = cols["_legacy_records"]
        out["_legacy_records"] = legacy.select_records(recs, [b < position for b in recs.batch_position])
    return out


_BATCH_COLUMNS = ("position", "size", "base_offset", "last_offset", "records_count", "base_timestamp",
                  "max_timestamp", "compression", "timestamp_type", "is_transactional", "is_control",
                  "has_delete_horizon", "crc", "crc_ok", "batch_length", "partition_leader_epoch", "magic",
                  "attributes", "last_offset_delta", "producer_id", "producer_epoch", "base_sequence")


def _batch_frame(cols, report):
    import pandas as pd

    attrs = cols["attributes"].astype(np.int64)
    comp_names = np.array([compression_name(c) for c in range(8)], dtype=object)
    out = dict(cols)
    out["last_offset"] = cols["base_offset"] + cols["last_offset_delta"]
    out["compression"] = comp_names[attrs & COMPRESSION_CODEC_MASK]
    out["timestamp_type"] = np.array(TIMESTAMP_TYPES, dtype=object)[(attrs & TIMESTAMP_TYPE_MASK) >> 3]
    v2 = cols["magic"] == MAGIC
    if not v2.all():
        out["timestamp_type"][cols["magic"] == 0] = legacy.NO_TIMESTAMP_TYPE
    out["is_transactional"] = v2 & ((attrs & TRANSACTIONAL_FLAG_MASK) != 0)
    out["is_control"] = v2 & ((attrs & CONTROL_FLAG_MASK) != 0)
    out["has_delete_horizon"] = v2 & ((attrs & DELETE_HORIZON_FLAG_MASK) != 0)
    # every column is a fresh array of this call: no copy, and no consolidation of the int64
    # columns into one block (which copied them all again)
    df = pd.DataFrame({c: out[c] for c in _BATCH_COLUMNS}, copy=False)
    df.attrs["report"] = report
    return df


def read_batches(source, *, verify_crc: bool = False,
                 torn_tail: TornTail = "raise", on_damage: OnDamage = "raise", max_bytes: int | None = None):
    """Every batch header of a segment as a pandas DataFrame, one row a batch in file order.

    Columns: ``position`` and ``size`` (bytes in the file), ``base_offset``, ``last_offset``,
    ``records_count``, ``base_timestamp`` and ``max_timestamp`` (ms), ``compression``
    ("none", "gzip", "snappy", "lz4", "zstd"), ``timestamp_type`` ("CreateTime" /
    "LogAppendTime"), the flags ``is_transactional``, ``is_control``, ``has_delete_horizon``,
    ``crc`` (unsigned) and ``crc_ok``, then the remaining raw header fields. The
    :class:`WalkReport` is ``df.attrs["report"]``. Errors as :func:`walk_batches` (the first
    in file order is raised); ``on_damage="report"`` gives the whole batches before the first
    instead, and ``df.attrs["report"].damage`` says where and why (:class:`SegmentDamage`).
    `max_bytes`: read the first `max_bytes` bytes only, as ``kafka-dump-log --max-bytes``
    (``FileRecords.slice(0, maxBytes)``): the batches that end within them; a batch that starts
    inside and ends past them is not read and is no error (``report.unread_from`` is its
    position); damage inside them is reported or raised as always (a file is mapped no further).
    Cost: the framing and the header fields in C, all CRC-32Cs in one C call (the crc32
    instruction where there is one); about 2 GB/s from the page cache on a 1 GiB segment of
    1 KiB batches (a 2-core machine under load; the framing alone about 20 GB/s, the CRCs most
    of the rest: benchmarks/bench_kafka.py).

    >>> data = encode_batches([KafkaRecord(i, 1000 + i, None, b"v") for i in range(5)],
    ...                       records_per_batch=2).data.tobytes()
    >>> read_batches(data)[["position", "base_offset", "last_offset", "records_count"]].values.tolist()
    [[0, 0, 1, 2], [77, 2, 3, 2], [154, 4, 4, 1]]
    >>> b = read_batches(data, max_bytes=200)
    >>> b["position"].tolist(), b.attrs["report"].unread_from
    ([0, 77], 154)
    """
    _check_modes(torn_tail, on_damage)
    with _window(source, max_bytes) as (buf, path, size):
        cols, report, pending = _batch_table(buf, path, verify_crc, torn_tail, on_damage, size)
    if pending is not None:
        raise pending
    return _batch_frame(cols, report)


# ------------------------------------------------------------------------------- varints


def _varints(U: np.ndarray, P: np.ndarray, E: np.ndarray, width: int):
    """Decode one unsigned base-128 varint at each position P[i], not reading at or past E[i].

    Returns (raw uint64, size int64, status int8): status 0 ok, 1 the varint runs past E,
    2 no last byte within `width` bytes (ByteUtils' "Varint is too long"). Bits past 32 (width
    5) or 64 (width 10) are dropped, as Java's int / long shifts drop them. One NumPy pass per
    byte position, over the varints still unfinished (most lengths take one or two bytes)."""
    n = len(P)
    raw = np.zeros(n, np.uint64)
    size = np.zeros(n, np.int64)
    status = np.zeros(n, np.int8)
    rows = np.arange(n, dtype=np.int64)
    q = P.astype(np.int64, copy=True)
    lim = E
    for k in range(width):
        inside = (q < lim) & (q >= 0)
        if not inside.all():
            status[rows[~inside]] = 1
            rows, q, lim = rows[inside], q[inside], lim[inside]
        if len(rows) == 0:
            break
        byte = U[q]
        raw[rows] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        done = byte < 0x80
        size[rows[done]] = k + 1
        more = ~done
        rows, q, lim = rows[more], q[more] + 1, lim[more]
        if len(rows) == 0:
            break
    else:
        status[rows] = 2
    if width == _VARINT_BYTES:
        raw &= np.uint64(0xFFFFFFFF)
    return raw, size, status


def _unzigzag(raw: np.ndarray) -> np.ndarray:
    """Zig-zag decode (ByteUtils.readVarint / readVarlong): 0, 1, 2, 3 -> 0, -1, 1, -2."""
    return (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)


def _zigzag32(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.int64)
    return (((v << 1) ^ (v >> 31)) & 0xFFFFFFFF).astype(np.uint64)


def _zigzag64(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.int64)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


_VARINT_LIMITS = np.array([1 << (7 * k) for k in range(1, _VARLONG_BYTES)], np.uint64)


def _varint_sizes(z: np.ndarray) -> np.ndarray:
    """Bytes of the base-128 encoding of each unsigned value (ByteUtils.sizeOfVarint/Varlong)."""
    return np.searchsorted(_VARINT_LIMITS, z, side="right").astype(np.int64) + 1


def _put_varints(out: np.ndarray, P: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Write the base-128 encoding of each unsigned z[i] at out[P[i]:]; returns the sizes.
    One NumPy pass per byte position, over the values that still have bytes left."""
    size = _varint_sizes(z)
    rows = np.arange(len(z), dtype=np.int64)
    for k in range(_VARLONG_BYTES):
        if k:
            rows = rows[size[rows] > k]
        if len(rows) == 0:
            break
        v = (z[rows] >> np.uint64(7 * k)) if k else z
        byte = (v & np.uint64(0x7F)).astype(np.uint8)
        byte |= np.where(size[rows] > k + 1, np.uint8(0x80), np.uint8(0))
        out[P[rows] + k] = byte
    return size


def _py_varint(buf, p: int, end: int, width: int) -> tuple[int, int, int]:
    """Pure-Python _varints for one position: (raw, size, status)."""
    raw = 0
    for k in range(width):
        if p + k >= end:
            return 0, 0, 1
        b = buf[p + k]
        raw |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            return raw & (0xFFFFFFFF if width == _VARINT_BYTES else 0xFFFFFFFFFFFFFFFF), k + 1, 0
    return 0, 0, 2


_VARINT_PROBLEM = {1: "runs past the end of the {what}", 2: "is longer than {width} bytes (ByteUtils: "
                                                             "\"Varint is too long\")"}


# ------------------------------------------------------------------------------- records


class _Failures:
    """First failures found by the vectorized decode; the earliest in the file is raised.

    Records of compressed batches are decoded from their decompressed bytes, placed after the
    file's bytes in one buffer (:class:`_Regions`). A failure found there has no file offset of
    its own: it is reported at the batch's compressed payload (its first byte in the file), the
    reason saying the byte of the decompressed records and the batch's baseOffset."""

    def __init__(self, path, regions: _Regions | None = None):
        self.path = path
        self.regions = regions
        self.items: list[RmqlabError] = []

    def add(self, offset: int, field: str, reason: str) -> None:
        offset = int(offset)
        r = self.regions
        i = int(np.searchsorted(r.inflated_start, offset, side="right")) - 1 if r is not None else -1
        if r is not None and i >= 0:
            reason = (f"byte {offset - int(r.inflated_start[i])} of the {int(r.inflated_size[i])} decompressed "
                      f"bytes of the {r.codec_name(i)} batch with baseOffset {int(r.base_offset[i])}: {reason}")
            offset = int(r.payload_position[i])
        self.items.append(FormatError(reason, path=self.path, offset=offset, field=field))

    def add_error(self, error: RmqlabError) -> None:
        self.items.append(error)

    def first(self) -> RmqlabError | None:
        return min(self.items, key=_error_offset) if self.items else None


def _record_chain(buf, U, path, starts, ends, counts, batch_pos, fails: _Failures):
    """Start, body start, body end, batch row and index in batch of every record of the
    batches whose records lie in [starts[b], ends[b]). Each record's position is the previous
    record's end: the chain is followed for all batches at once (one NumPy step per record
    index) while many are left, then batch by batch. Every step consumes at least one byte,
    so a batch takes at most ends - starts steps."""
    rec_start, body_start, body_end, rec_batch, rec_index = [], [], [], [], []
    cur = starts.copy()
    active = np.nonzero(counts > 0)[0]
    k = 0

    def check_done(b_rows, cur_rows):
        short = cur_rows != ends[b_rows]
        for b in b_rows[short][:1]:   # batches are in file order: the first is the earliest
            fails.add(cur[b], f"record[{int(counts[b])}]",
                      f"the batch at {int(batch_pos[b])} has {int(ends[b] - cur[b])} bytes after its "
                      f"recordsCount={int(counts[b])} records (\"Incorrect declared batch size, records still "
                      f"remaining in file\")")

    while len(active) >= _LOCKSTEP_MIN:
        P, E = cur[active], ends[active]
        raw, sz, st = _varints(U, P, E, _VARINT_BYTES)
        length = _unzigzag(raw)
        bad = (st != 0) | (length < 0) | (P + sz + length > E)
        for i in np.nonzero(bad)[0][:1]:   # batches are in file order: the first is the earliest
            _chain_failure(fails, int(active[i]), k, int(P[i]), int(E[i]), int(st[i]), int(length[i]),
                           int(sz[i]), batch_pos, counts)
        ok = ~bad
        a, P, sz, length = active[ok], P[ok], sz[ok], length[ok]
        rec_start.append(P)
        body_start.append(P + sz)
        body_end.append(P + sz + length)
        rec_batch.append(a)
        rec_index.append(np.full(len(a), k, np.int64))
        cur[a] = P + sz + length
        k += 1
        done = counts[a] == k
        check_done(a[done], cur[a[done]])
        active = a[~done]
    # the few batches left: one record at a time
    rs, bs, be, rb, ri = [], [], [], [], []
    for b in active.tolist():
        p, e = int(cur[b]), int(ends[b])
        for kk in range(k, int(counts[b])):
            b0 = buf[p] if p < e else 0x80
            if b0 < 0x80:
                raw, sz, st = b0, 1, 0
            elif p + 1 < e and buf[p + 1] < 0x80:
                raw, sz, st = (b0 & 0x7F) | (buf[p + 1] << 7), 2, 0
            else:
                raw, sz, st = _py_varint(buf, p, e, _VARINT_BYTES)
            length = (raw >> 1) ^ -(raw & 1)
            if st or length < 0 or p + sz + length > e:
                _chain_failure(fails, b, kk, p, e, st, length, sz, batch_pos, counts)
                break
            rs.append(p)
            bs.append(p + sz)
            be.append(p + sz + length)
            rb.append(b)
            ri.append(kk)
            p += sz + length
        else:
            cur[b] = p
            check_done(np.array([b]), np.array([p]))
    for lst, vals in ((rec_start, rs), (body_start, bs), (body_end, be), (rec_batch, rb), (rec_index, ri)):
        lst.append(np.array(vals, np.int64))
    out = [np.concatenate(x) for x in (rec_start, body_start, body_end, rec_batch, rec_index)]
    order = np.argsort(out[0], kind="stable")
    return [x[order] for x in out]


def _chain_failure(fails, b, k, p, e, st, length, sz, batch_pos, counts):
    where = f"record {k} of the batch at {int(batch_pos[b])} (recordsCount={int(counts[b])})"
    if st == 1 and p >= e:
        fails.add(p, f"record[{k}].length", f"{where}: the batch ends before this record (\"Incorrect "
                                            f"declared batch size, premature EOF reached\")")
    elif st:
        fails.add(p, f"record[{k}].length", f"{where}: the length varint " +
                  _VARINT_PROBLEM[st].format(what="batch", width=_VARINT_BYTES))
    elif length < 0:
        fails.add(p, f"record[{k}].length", f"{where}: negative record length {length}")
    else:
        fails.add(p, f"record[{k}].length", f"{where}: length {length} runs {p + sz + length - e} bytes past "
                                            f"the end of the batch")


@dataclass
class _Regions:
    """Where the decompressed records of the compressed batches lie in the decode buffer: the
    file's bytes come first (``file_size``), then each batch's decompressed records, in batch
    order. Per decompressed batch: its row, where its records start and how many bytes they
    take there, its payload's file position (batch position + 61), baseOffset and codec."""

    file_size: int
    rows: np.ndarray
    inflated_start: np.ndarray
    inflated_size: np.ndarray
    payload_position: np.ndarray
    base_offset: np.ndarray
    codec: np.ndarray

    def codec_name(self, i: int) -> str:
        return compression_name(int(self.codec[i]))


@dataclass
class _Decoded:
    """Every record of the decoded batches, as arrays. Positions are in ``data``: the file's
    bytes, followed by the decompressed records of the compressed batches (see _Regions)."""

    batches: dict                # _batch_table columns
    report: WalkReport | None
    skipped: np.ndarray          # positions of the compressed batches not decoded
    data: np.ndarray             # uint8 decode buffer every *_pos below points into
    records_start: np.ndarray    # per batch row: where its records start in `data` (-1 not decoded)
    compressed: np.ndarray       # per record: True when its batch is compressed
    position: np.ndarray         # record start (its length varint) in `data`
    size: np.ndarray             # bytes of the record, length varint included
    batch_row: np.ndarray        # row in `batches`
    index: np.ndarray            # record number inside its batch
    attributes: np.ndarray
    timestamp_delta: np.ndarray
    offset_delta: np.ndarray
    key_pos: np.ndarray
    key_size: np.ndarray         # -1 = null
    value_pos: np.ndarray
    value_size: np.ndarray       # -1 = null
    headers_count: np.ndarray
    header_record: np.ndarray    # per header: its record row
    header_key_pos: np.ndarray
    header_key_size: np.ndarray
    header_value_pos: np.ndarray
    header_value_size: np.ndarray  # -1 = null
    legacy: Any = None           # LegacyRecords of the magic 0/1 entries, None when there are none


def _without_legacy(cols: dict) -> tuple[dict, Any]:
    """The v2 rows of a _batch_table and the records of its legacy entries (None if none):
    the record decode below is v2's, legacy entries were decoded with the walk."""
    if "_legacy_records" not in cols:
        return cols, None
    v2 = cols["magic"] == MAGIC
    return {k: v[v2] for k, v in cols.items() if not k.startswith("_")}, cols["_legacy_records"]


#: read_records / scan_key ``compressed=``: decode the records of compressed batches, or leave
#: them out (their positions in ``attrs["skipped_batches"]``)
_COMPRESSED_MODES = ("decode", "skip")


def _decode(buf, path, *, verify_crc, torn_tail, compressed="decode", on_damage: OnDamage = "raise",
            file_size: int | None = None) -> _Decoded:
    if compressed not in _COMPRESSED_MODES:
        raise ValueError(f"compressed must be 'decode' or 'skip', got {compressed!r}")
    cols, report, pending = _batch_table(buf, path, verify_crc, torn_tail, on_damage, file_size)
    entry_positions = cols["position"]      # every entry's, legacy ones included
    cols, legacy_records = _without_legacy(cols)
    fails = _Failures(path)
    if pending is not None:
        fails.add_error(pending)
    U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
    comp = cols["attributes"].astype(np.int64) & COMPRESSION_CODEC_MASK
    rows = np.arange(len(comp)) if compressed == "decode" else np.nonzero(comp == 0)[0]
    d = _decode_rows(U, path, cols, rows, fails)
    err = fails.first()
    if err is not None:
        i = int(np.searchsorted(cols["position"], _error_offset(err), side="right")) - 1
        if err.field != "crc" and 0 <= i < len(cols["crc_ok"]) and not cols["crc_ok"][i]:
            err = type(err)(err.reason + f" (the CRC-32C of the batch at {int(cols['position'][i])} does not "
                              f"verify either: its bytes are damaged)", path=path, offset=err.offset, field=err.field)
        if on_damage == "raise":
            raise err
        # the records of the batches before the damaged one, decoded again without it: the
        # report says the reading stops there, as for a batch the walk cannot frame
        at = int(cols["position"][max(i, 0)])
        report.damage = _damage(err, at, report.file_size)
        report.torn_tail = report.torn_reason = report.unread_from = report.unread_reason = None
        cols = _rows_before(cols, at)
        report.batches, report.valid_bytes = int(np.searchsorted(entry_positions, at, "left")), at
        if legacy_records is not None:
            legacy_records = legacy.select_records(legacy_records, [b < at for b in legacy_records.batch_position])
        comp = comp[:len(cols["position"])]
        rows = rows[rows < len(comp)]
        fails = _Failures(path)
        d = _decode_rows(U, path, cols, rows, fails)
        assert fails.first() is None, "the batches before the first damaged one decode"
    d.report = report
    d.skipped = cols["position"][comp != 0] if compressed == "skip" else np.empty(0, np.int64)
    d.legacy = legacy_records
    return d


def _inflate(U: np.ndarray, path, cols, rows: np.ndarray, fails: _Failures):
    """The decode buffer of the batches `rows`: (data, records start, records end, the rows
    kept, _Regions). Uncompressed batches' records are read where they lie in the file;
    each compressed batch's payload is decompressed (``codecs.decompress``, magic 2) and
    appended after the file's bytes. A payload that does not decompress is a failure and its
    batch is left out. Cost: the codec's speed, plus one copy of the file when any batch is
    compressed."""
    from rmqlab.kafka import codecs

    pos, size = cols["position"][rows], cols["size"][rows]
    codec = cols["attributes"][rows].astype(np.int64) & COMPRESSION_CODEC_MASK
    starts, ends = pos + RECORD_BATCH_OVERHEAD, pos + size
    keep = np.ones(len(rows), bool)
    parts, where = [], []
    for i in np.nonzero(codec != 0)[0].tolist():
        p0, p1 = int(starts[i]), int(ends[i])
        try:
            parts.append(codecs.decompress(int(codec[i]), U[p0:p1], magic=MAGIC, path=path, offset=p0))
        except FormatError as e:
            fails.add_error(FormatError(f"the batch at {int(pos[i])} (baseOffset {int(cols['base_offset'][rows[i]])}"
                                        f"): {e.reason}", path=path, offset=e.offset, field=e.field))
            keep[i] = False
            continue
        where.append(i)
    where_a = np.array(where, np.int64)
    lengths = np.array([len(x) for x in parts], np.int64)
    inflated = np.empty(len(where_a), np.int64)
    data = U
    if len(parts):
        # one unused byte before each decompressed block, so that the end of the file and the
        # end of each block (where a "premature EOF" is reported) name one place only
        data = np.zeros(len(U) + int(lengths.sum()) + len(parts), np.uint8)
        data[:len(U)] = U
        at = len(U)
        for k, part in enumerate(parts):
            at += 1
            inflated[k] = at
            data[at:at + len(part)] = np.frombuffer(part, np.uint8)
            at += len(part)
        starts[where_a] = inflated
        ends[where_a] = inflated + lengths
    regions = _Regions(len(U), rows[where_a], inflated, lengths, pos[where_a] + RECORD_BATCH_OVERHEAD,
                       cols["base_offset"][rows[where_a]], codec[where_a])
    return data, starts[keep], ends[keep], rows[keep], regions


def _decode_rows(U: np.ndarray, path, cols, rows: np.ndarray, fails: _Failures) -> _Decoded:
    """Decode the records of the batches `rows` (compressed ones decompressed first); failures
    go to `fails`. Records come out in batch order, then record order."""
    neg = cols["records_count"][rows] < 0
    for i in rows[neg][:1]:
        fails.add(cols["position"][i] + HEADER.offset("records_count"), "recordsCount",
                  f"negative recordsCount {int(cols['records_count'][i])} (\"Found invalid record count\")")
    data, starts, ends, rows, regions = _inflate(U, path, cols, rows[~neg], fails)
    fails.regions = regions
    pos = cols["position"][rows]
    rec, body, bend, brow, index = _record_chain(
        memoryview(data), data, path, starts, ends, cols["records_count"][rows], pos, fails)
    brow = rows[brow]
    order = np.lexsort((index, brow))
    rec, body, bend, brow, index = rec[order], body[order], bend[order], brow[order], index[order]
    d = _decode_fields(data, path, rec, body, bend, brow, index, cols, fails)
    compressed = (cols["attributes"][brow].astype(np.int64) & COMPRESSION_CODEC_MASK) != 0
    _check_offset_deltas(d["offset_delta"], rec, brow, index, compressed, cols, fails)
    records_start = np.full(len(cols["position"]), -1, np.int64)
    records_start[rows] = starts
    return _Decoded(cols, None, np.empty(0, np.int64), data, records_start, compressed, rec, bend - rec, brow,
                    index, **d)


def _check_offset_deltas(offset_delta, rec, brow, index, compressed, cols, fails: _Failures) -> None:
    """The offsetDeltas of compressed batches' records: increasing, within 0 ..
    lastOffsetDelta. The broker keeps a compressed batch as the producer sent it only when its
    inner offsets are 0, 1, 2 ... (LogValidator.validateMessagesAndAssignOffsetsCompressed),
    and the log cleaner keeps the surviving records' offsets and the batch's lastOffset
    (MemoryRecords.filterTo): on disk they rise within the header's range. Uncompressed
    batches are not checked: the broker assigns their offsets without reading the deltas."""
    if not compressed.any():
        return
    last = cols["last_offset_delta"][brow]
    prev = np.empty_like(offset_delta)
    prev[1:] = offset_delta[:-1]
    prev[:1] = -1
    follows = index > 0
    bad_order = compressed & follows & (offset_delta <= prev)
    bad_range = compressed & ((offset_delta < 0) | (offset_delta > last))
    for mask, why in ((bad_range, lambda r: f"offsetDelta {int(offset_delta[r])} is outside the batch's range "
                                            f"0 .. lastOffsetDelta={int(last[r])}"),
                      (bad_order, lambda r: f"offsetDelta {int(offset_delta[r])} does not rise above the previous "
                                            f"record's {int(prev[r])}")):
        if mask.any():
            r = int(np.argmax(mask))
            fails.add(int(rec[r]), f"record[{int(index[r])}].offsetDelta",
                      f"record {int(index[r])} of the batch at {int(cols['position'][brow[r]])}: " + why(r))


def _decode_fields(U, path, rec, body, bend, brow, index, cols, fails: _Failures) -> dict:
    """Decode the fields of every record body [body, bend) at once (DefaultRecord.readFrom),
    field by field; a record that fails one check is left out of the later ones."""
    n = len(rec)
    alive = np.ones(n, bool)
    p = body.copy()
    e = bend

    def fail(mask, at, field, reason):
        m = mask & alive
        if m.any():
            r = int(np.argmax(m))   # records are in file order: the first is the earliest
            b = int(cols["position"][brow[r]])
            fails.add(int(at[r]), f"record[{int(index[r])}].{field}",
                      f"record {int(index[r])} of the batch at {b}: " + reason(r))
            alive[m] = False

    def varint(width, field, signed_what="record"):
        raw, sz, st = _varints(U, p, e, width)
        for code in (1, 2):
            fail(st == code, p, field, lambda r, c=code: f"{field} varint " +
                 _VARINT_PROBLEM[c].format(what=signed_what, width=width))
        return _unzigzag(raw), sz

    fail(p >= e, p, "attributes", lambda r: "empty record body (no attributes byte)")
    attributes = U[np.clip(p, 0, max(len(U) - 1, 0))].view(np.int8) if len(U) else np.zeros(n, np.int8)
    p = p + 1
    ts_delta, sz = varint(_VARLONG_BYTES, "timestampDelta")
    p = p + sz
    off_delta, sz = varint(_VARINT_BYTES, "offsetDelta")
    p = p + sz

    def blob(name):
        nonlocal p
        size, sz = varint(_VARINT_BYTES, f"{name}Length")
        p = p + sz
        at = p.copy()
        fail((size >= 0) & (p + size > e), p, name,
             lambda r: f"{name}Length {int(size[r])} runs {int(p[r] + size[r] - e[r])} bytes past the record's end")
        p = p + np.maximum(size, 0)
        return at, np.where(size < 0, -1, size)

    key_pos, key_size = blob("key")
    value_pos, value_size = blob("value")
    hc_at = p
    hc, sz = varint(_VARINT_BYTES, "headersCount")
    p = p + sz
    fail(hc < 0, hc_at, "headersCount", lambda r: f"negative headersCount {int(hc[r])} (\"Found invalid number "
                                                  f"of record headers\")")
    fail(hc > e - p, hc_at, "headersCount", lambda r: f"headersCount {int(hc[r])} is larger than the "
                                                      f"{int(e[r] - p[r])} bytes left in the record")
    hc = np.where(alive, np.maximum(hc, 0), 0)
    h_rec, h_kp, h_ks, h_vp, h_vs = [], [], [], [], []

    def header_check(act, bad, h, m, at, fld, reason):
        """Report the first of the records act[m] not already failed while reading header h, and
        mark them all in bad; bad is one array updated in place, shared by every check of header h."""
        m = m & ~bad
        if m.any():
            r = int(np.argmax(m))
            row = int(act[r])
            fails.add(int(at[r]), f"record[{int(index[row])}].header[{h}].{fld}",
                      f"record {int(index[row])} of the batch at {int(cols['position'][brow[row]])}: "
                      + reason(r))
            np.logical_or(bad, m, out=bad)

    # header h of every record that has more than h headers, all records at once; bounded by
    # the largest headersCount, itself at most the record's bytes
    for h in range(int(hc.max(initial=0))):
        act = np.nonzero(alive & (hc > h))[0]
        if len(act) == 0:
            break
        q, ea = p[act], e[act]
        bad = np.zeros(len(act), bool)
        check = functools.partial(header_check, act, bad, h)
        raw, sz, st = _varints(U, q, ea, _VARINT_BYTES)
        klen = _unzigzag(raw)
        for code in (1, 2):
            check(st == code, q, "headerKeyLength", lambda r, c=code: "headerKeyLength varint " +
                  _VARINT_PROBLEM[c].format(what="record", width=_VARINT_BYTES))
        q = q + sz
        check(klen < 0, q - sz, "headerKeyLength",
              lambda r, klen=klen: f"negative header key size {int(klen[r])} (\"Invalid negative header key size\")")
        check(q + klen > ea, q, "headerKey",
              lambda r, klen=klen, q=q, ea=ea: f"headerKeyLength {int(klen[r])} runs {int(q[r] + klen[r] - ea[r])} "
                                               f"bytes past the record's end")
        kp = q
        q = q + np.maximum(klen, 0)
        raw, sz, st = _varints(U, q, ea, _VARINT_BYTES)
        vlen = _unzigzag(raw)
        for code in (1, 2):
            check(st == code, q, "headerValueLength", lambda r, c=code: "headerValueLength varint " +
                  _VARINT_PROBLEM[c].format(what="record", width=_VARINT_BYTES))
        q = q + sz
        check((vlen >= 0) & (q + vlen > ea), q, "headerValue",
              lambda r, vlen=vlen, q=q, ea=ea: f"headerValueLength {int(vlen[r])} runs "
                                               f"{int(q[r] + vlen[r] - ea[r])} bytes past the record's end")
        vp = q
        q = q + np.maximum(vlen, 0)
        alive[act[bad]] = False
        good = ~bad
        p[act] = q
        h_rec.append(act[good])
        h_kp.append(kp[good])
        h_ks.append(klen[good])
        h_vp.append(vp[good])
        h_vs.append(np.where(vlen < 0, -1, vlen)[good])
    fail(p != e, p, "length", lambda r: f"length {int(e[r] - body[r])} but the fields end after "
                                        f"{int(p[r] - body[r])} bytes (\"Invalid record size\")")

    def cat(parts):
        return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)

    h_rec = cat(h_rec)
    order = np.lexsort((np.arange(len(h_rec)), h_rec))   # by record, then header number
    return dict(attributes=attributes, timestamp_delta=ts_delta, offset_delta=off_delta,
                key_pos=key_pos, key_size=key_size, value_pos=value_pos, value_size=value_size,
                headers_count=hc, header_record=h_rec[order], header_key_pos=cat(h_kp)[order],
                header_key_size=cat(h_ks)[order], header_value_pos=cat(h_vp)[order],
                header_value_size=cat(h_vs)[order])


def _binary_column(U: np.ndarray, pos: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Object array of bytes of the spans (pos, size), None where size < 0."""
    import pyarrow as pa

    n = len(pos)
    lengths = np.maximum(size, 0).astype(np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    nz = lengths > 0
    if nz.any():
        _records.copy_spans(data, np.ascontiguousarray(offsets[:-1][nz]), U,
                            np.ascontiguousarray(pos[nz], np.int64), np.ascontiguousarray(lengths[nz]))
    valid = size >= 0
    nulls = int(n - np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    arr = pa.Array.from_buffers(pa.large_binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], nulls)
    return arr.to_numpy(zero_copy_only=False)


_RECORD_COLUMNS = ("position", "size", "batch_position", "inner_position", "offset", "timestamp", "timestamp_delta",
                   "offset_delta", "attributes", "key", "key_size", "key_position", "value", "value_size",
                   "value_position", "headers_count",
                   "headers")


def _record_frame(d: _Decoded, *, values: bool, headers: bool, keys: bool = True):
    import pandas as pd

    U = d.data
    c = d.batches
    b = d.batch_row
    lat = (c["attributes"][b].astype(np.int64) & TIMESTAMP_TYPE_MASK) != 0
    out = {
        "position": np.where(d.compressed, -1, d.position), "size": d.size, "batch_position": c["position"][b],
        "inner_position": d.position - d.records_start[b],
        "offset": c["base_offset"][b] + d.offset_delta,
        "timestamp": np.where(lat, c["max_timestamp"][b], c["base_timestamp"][b] + d.timestamp_delta),
        "timestamp_delta": d.timestamp_delta, "offset_delta": d.offset_delta, "attributes": d.attributes,
        "key_size": d.key_size, "value_size": d.value_size, "headers_count": d.headers_count,
        # the file has the bytes of a plain batch's records only
        "key_position": np.where(d.compressed, -1, d.key_pos),
        "value_position": np.where(d.compressed, -1, d.value_pos),
    }
    if keys:
        out["key"] = _binary_column(U, d.key_pos, d.key_size)
    if values:
        out["value"] = _binary_column(U, d.value_pos, d.value_size)
    if headers:
        hk = _binary_column(U, d.header_key_pos, d.header_key_size)
        hv = _binary_column(U, d.header_value_pos, d.header_value_size)
        lists: list[list] = [[] for _ in range(len(d.position))]
        for r, k, v in zip(d.header_record.tolist(), hk.tolist(), hv.tolist()):
            lists[r].append((k.decode("utf-8", "replace"), v))   # Utils.utf8: malformed -> U+FFFD
        out["headers"] = lists
    df = pd.DataFrame({k: out[k] for k in _RECORD_COLUMNS if k in out})
    if d.legacy is not None:
        df = _with_legacy_records(df, d, lat)
    df.attrs["report"] = d.report
    df.attrs["skipped_batches"] = d.skipped.tolist()
    return df


def _with_legacy_records(df, d: _Decoded, lat: np.ndarray):
    """The v2 records `df` and the legacy records `d.legacy` in one frame in file order, with
    the columns a legacy record adds: ``magic``, ``timestamp_type``, ``compression``, ``crc``
    and ``crc_ok`` (a v2 record's are its batch's)."""
    import pandas as pd

    c, b, r = d.batches, d.batch_row, d.legacy
    df = df.assign(magic=np.full(len(df), MAGIC, np.int64),
                   timestamp_type=np.array(TIMESTAMP_TYPES, dtype=object)[lat.astype(np.int64)],
                   compression=np.array([compression_name(a) for a in range(8)], dtype=object)[
                       c["attributes"][b].astype(np.int64) & COMPRESSION_CODEC_MASK],
                   crc=c["crc"][b], crc_ok=c["crc_ok"][b])
    old = legacy.records_frame(r)
    key_size = np.array([-1 if k is None else len(k) for k in r.key], np.int64)
    value_size = np.array([-1 if v is None else len(v) for v in r.value], np.int64)
    extra = {"timestamp_delta": np.zeros(len(old), np.int64), "offset_delta": np.zeros(len(old), np.int64),
             "inner_position": np.zeros(len(old), np.int64),
             "key_size": key_size, "value_size": value_size, "headers_count": np.zeros(len(old), np.int64),
             "headers": [[] for _ in range(len(old))]}
    old = old.assign(**extra)
    if len(old):
        first = old.groupby("batch_position", sort=False)["offset"].transform("first")
        old["offset_delta"] = old["offset"] - first
    out = pd.concat([df, old[[col for col in df.columns]]], ignore_index=True)
    order = np.argsort(out["batch_position"].to_numpy(np.int64), kind="stable")
    out = out.iloc[order].reset_index(drop=True)
    for col in ("attributes",):
        out[col] = out[col].astype(np.int64)
    return out


def read_records(source, *, values: bool = True, headers: bool = True, verify_crc: bool = False,
                 torn_tail: TornTail = "raise",
                 compressed: Literal["decode", "skip"] = "decode", on_damage: OnDamage = "raise",
                 max_bytes: int | None = None):
    """Every record of a segment as a pandas DataFrame, in file order (batch by batch), the
    records of compressed batches (gzip, snappy, lz4, zstd) decompressed and decoded too.

    Columns: ``position`` (the record's first byte, its length varint, in the file; -1 for a
    record of a compressed batch, which has no bytes of its own in the file), ``size`` (bytes,
    length varint included), ``batch_position``, ``inner_position`` (the record's byte offset
    from the start of its batch's records: in the file after the 61-byte header, or in the
    decompressed records of a compressed batch), ``offset``, ``timestamp`` (ms: baseTimestamp
    + timestampDelta, or the batch's maxTimestamp for LogAppendTime), ``timestamp_delta``,
    ``offset_delta``, ``attributes``, ``key`` / ``value`` (bytes, None for null),
    ``key_size`` / ``value_size`` (-1 for null), ``key_position`` / ``value_position`` (where
    the key's and value's bytes start in the file, after their lengths; -1 in a compressed
    batch), ``headers_count`` and ``headers`` (list of
    (str key, bytes-or-None value)). `values` / `headers` False leave those columns out.
    ``compressed="skip"`` leaves the records of compressed batches out (their positions in
    ``df.attrs["skipped_batches"]``, empty otherwise). The records of legacy (magic 0/1)
    entries, inner messages of wrappers included, are rows too (see the module docstring).

    Bad varints and lengths raise FormatError naming the field (e.g. ``record[3].keyLength``)
    and its byte offset; batch-level errors as :func:`read_batches`. A compressed batch is
    checked as the broker's reader checks it (``DefaultRecordBatch``'s compressed iterator):
    a payload that does not decompress, fewer or more records than ``recordsCount``, bytes
    left after them, and offsetDeltas that do not rise within 0 .. ``lastOffsetDelta`` raise
    FormatError at the payload's first byte in the file (batch position + 61), the reason
    naming the batch's baseOffset and the byte of the decompressed records.
    ``on_damage="report"``: none of these raises; the records are those of the batches before
    the one holding the first, and ``df.attrs["report"].damage`` says where and why (the
    records of that batch are decoded twice). `max_bytes`: the records of the batches that end
    within the first `max_bytes` bytes, as :func:`read_batches` reads them. Cost: the record
    chain is followed for all batches together (one NumPy step per record index, so a segment
    of small batches costs a few NumPy passes), the fields are decoded with NumPy, keys and
    values copied in C; about 1 µs a record in a batch of many. Compressed batches add the
    codec's time and memory for the decompressed records plus one copy of the file.

    >>> data = encode_batches([KafkaRecord(0, 7, b"k", None, [("a", None)])]).data.tobytes()
    >>> read_records(data)[["offset", "timestamp", "key", "value", "value_size", "headers"]].values.tolist()
    [[0, 7, b'k', None, -1, [('a', None)]]]
    >>> z = encode_batches([KafkaRecord(i, 7, None, b"v" * 50) for i in range(3)], records_per_batch=3,
    ...                    compression="zstd").data.tobytes()
    >>> read_records(z)[["position", "inner_position", "offset", "value_size"]].values.tolist()
    [[-1, 0, 0, 50], [-1, 57, 1, 50], [-1, 114, 2, 50]]
    """
    with _window(source, max_bytes) as (buf, path, size):
        d = _decode(buf, path, verify_crc=verify_crc, torn_tail=torn_tail, compressed=compressed,
                    on_damage=on_damage, file_size=size)
        df = _record_frame(d, values=values, headers=headers)
        del d
    return df


def read_legacy_records(source, *, verify_crc: bool = False, torn_tail: TornTail = "raise"):
    """Every record of the legacy (magic 0/1) entries of a segment, inner messages of wrappers
    included, as a pandas DataFrame in file order.

    Cost: one walk of the segment (:func:`read_batches`), which decodes the legacy entries
    (:func:`rmqlab.kafka.legacy.decode_entries`); v2 batches are walked, not decoded (see
    :func:`read_records`).

    >>> data = legacy.encode_message_set([(7, 1, b"k", b"v")], magic=0)
    >>> read_legacy_records(data)[["offset", "timestamp", "timestamp_type", "magic", "crc_ok"]].values.tolist()
    [[7, -1, 'NoTimestampType', 0, True]]

    Columns: ``batch_position`` (the shallow entry: the wrapper of an inner message),
    ``position`` / ``size`` (the record's bytes; a wrapper's for an inner message), ``offset``
    (absolute), ``timestamp`` (ms, -1 for v0), ``timestamp_type``, ``magic``, ``attributes``,
    ``compression`` (the wrapper's codec), ``key`` / ``value`` (bytes or None), ``crc`` and
    ``crc_ok`` (the message's own CRC-32), ``key_position`` / ``value_position``
    (:func:`rmqlab.kafka.legacy.records_frame`). Errors as :func:`read_batches`.
    """
    with _opened(source) as (buf, path):
        cols, _report, pending = _batch_table(buf, path, verify_crc, torn_tail)
    if pending is not None:
        raise pending
    recs = cols.get("_legacy_records") or legacy.LegacyRecords.empty()
    return legacy.records_frame(recs)


def scan_key(source, key: bytes | str, *, torn_tail: TornTail = "raise",
             compressed: Literal["decode", "skip"] = "decode"):
    """The records whose key equals `key` (str is UTF-8 encoded), as :func:`read_records`
    rows without the value and headers (compressed batches decoded too, unless
    ``compressed="skip"``). Kafka keeps no key index: this is the scan a "by key"
    look-up needs. Cost: the record walk of :func:`read_records` plus one vectorized byte
    comparison of the keys of the right length.

    >>> data = encode_batches([KafkaRecord(i, i, f"k{i % 2}".encode(), b"v") for i in range(5)]).data.tobytes()
    >>> scan_key(data, "k1")["offset"].tolist()
    [1, 3]
    """
    import pandas as pd

    want = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    with _opened(source) as (buf, path):
        d = _decode(buf, path, verify_crc=False, torn_tail=torn_tail, compressed=compressed)
        U = d.data
        cand = np.nonzero(d.key_size == len(want))[0]
        if len(want) and len(cand):
            got = U[d.key_pos[cand][:, None] + np.arange(len(want), dtype=np.int64)]
            cand = cand[(got == np.frombuffer(want, np.uint8)).all(axis=1)]
        if d.legacy is not None:
            d.legacy = legacy.select_records(d.legacy, [k == want for k in d.legacy.key])
        df = _record_frame(d, values=False, headers=False, keys=False)
        has_legacy = d.legacy is not None
        del U, d
    if has_legacy:   # the v2 rows keep their order among the legacy ones
        cand = np.sort(np.concatenate([np.nonzero(df["magic"].to_numpy() == MAGIC)[0][cand],
                                       np.nonzero(df["magic"].to_numpy() != MAGIC)[0]]))
    out = df.iloc[cand].reset_index(drop=True)
    out.insert(int(out.columns.get_loc("key_size")), "key", pd.Series([want] * len(out), dtype=object))
    out.attrs = df.attrs
    return out


#: compressed_batch_problems stops after this many problems (each costs a decode of the rest)
_MAX_BATCH_PROBLEMS = 100


def compressed_batch_problems(source) -> list[str]:
    """One line a damaged compressed batch of a segment: its records checked as
    :func:`read_records` checks them (the payload decompresses; exactly ``recordsCount``
    records, no bytes left; offsetDeltas rising within 0 .. ``lastOffsetDelta``). An empty
    list when every compressed batch is sound. The batch walk's own errors (a torn tail, a bad
    header, CRCs) are not repeated here: :func:`read_batches` reports them.

    Cost: one decode of every compressed batch's records, again after each damaged batch is
    found (at most 100 problems are listed).

    >>> data = bytearray(encode_batches([KafkaRecord(0, 1, None, b"v" * 40)] * 1, compression="gzip").data)
    >>> compressed_batch_problems(bytes(data))
    []
    >>> data[-9] ^= 0xFF                        # inside the gzip trailer's CRC-32
    >>> [p.split(": ")[:2] for p in compressed_batch_problems(bytes(data))]
    [['offset 61', 'records (compressed)']]
    """
    problems: list[str] = []
    with _opened(source) as (buf, path):
        cols, _, _ = _batch_table(buf, path, False, "stop")
        cols, _ = _without_legacy(cols)   # legacy wrappers were decoded, and checked, by the walk
        U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
        todo = np.nonzero(cols["attributes"].astype(np.int64) & COMPRESSION_CODEC_MASK)[0]
        for _ in range(min(len(todo), _MAX_BATCH_PROBLEMS)):
            fails = _Failures(path)
            _decode_rows(U, path, cols, todo, fails)
            err = fails.first()
            if err is None:
                break
            problems.append(str(err))
            bad = int(np.searchsorted(cols["position"], _error_offset(err), side="right")) - 1
            todo = todo[todo != bad]
        else:
            if len(todo) and len(problems) == _MAX_BATCH_PROBLEMS:
                problems.append(f"{path or 'data'}: stopped after {_MAX_BATCH_PROBLEMS} damaged compressed batches")
        del U
    return problems


# ------------------------------------------------------------------------------- writing


class KafkaRecord(NamedTuple):
    """A record to write: offset (None = next), timestamp in ms, key and value (bytes, str as
    UTF-8, or None), headers as (str key, bytes-or-None value) pairs."""

    offset: int | None
    timestamp: int
    key: bytes | str | None
    value: bytes | str | None
    headers: Sequence[tuple[str, bytes | str | None]] = ()


@dataclass
class EncodedBatches:
    """Bytes of whole batches (``data``, uint8) and, per batch, where it starts in them."""

    data: np.ndarray
    position: np.ndarray
    size: np.ndarray
    base_offset: np.ndarray
    last_offset: np.ndarray
    max_timestamp: np.ndarray
    records_count: np.ndarray
    crc: np.ndarray

    @property
    def next_offset(self) -> int | None:
        return int(self.last_offset[-1]) + 1 if len(self.last_offset) else None


def _copy(out: np.ndarray, dst: np.ndarray, src: tuple) -> None:
    """Copy the non-empty spans of `src` (a span triple of
    :func:`rmqlab.kafka.columns.binary_buffers`) to out[dst[i]:] (in C)."""
    data, starts, lengths = src
    nz = lengths > 0
    if nz.any():
        _records.copy_spans(out, np.ascontiguousarray(dst[nz], np.int64), data,
                            np.ascontiguousarray(starts[nz], np.int64), np.ascontiguousarray(lengths[nz]))


def _codec_id(compression: str) -> int:
    """The CompressionType id of a codec name ("none", "gzip", "snappy", "lz4", "zstd")."""
    ids = {name: code for code, name in COMPRESSION_TYPES.items()}
    if compression not in ids:
        raise ValueError(f"compression must be one of {', '.join(map(repr, ids))}, got {compression!r}")
    return ids[compression]


def encode_batches(records, *, records_per_batch: int | Sequence[int] = 1, partition_leader_epoch: int = 0,
                   next_offset: int = 0, compression: str = "none") -> EncodedBatches:
    """Encode records as magic v2 CreateTime batches, ``records_per_batch`` a batch
    (or a sequence of batch sizes, e.g. a real segment's ``records_count``, to copy its
    batching), as a non-transactional, non-idempotent producer's (``MemoryRecordsBuilder``):
    producerId / producerEpoch / baseSequence -1, baseTimestamp = the batch's first record's
    timestamp, maxTimestamp its largest, CRC-32C over attributes .. end. With `compression`
    ("gzip", "snappy", "lz4", "zstd"; default "none") each batch's records are compressed as
    one block as the Java producer frames it (:func:`rmqlab.kafka.codecs.compress`: xerial
    snappy, an LZ4 frame of independent blocks), the codec in the attributes' low bits and the
    CRC over the compressed bytes; like ``MemoryRecordsBuilder``, a batch is compressed even
    when that does not make it smaller.

    `records`: an iterable of :class:`KafkaRecord` (or 4/5-tuples), or columns (pyarrow Table,
    pandas DataFrame, dict) named ``offset`` (optional: then consecutive from `next_offset`),
    ``timestamp`` (ms; -1 = none), ``key``, ``value`` (bytes / str / None) and ``headers``
    (optional, lists of (key, value)). Offsets must increase strictly. Cost: O(records + bytes),
    vectorized (NumPy scatter of every field, C copies of keys and values, C CRCs), plus the
    codec's time, one call a batch, when compressing.

    >>> e = encode_batches([KafkaRecord(None, 1000, b"key", b"value")], next_offset=42)
    >>> e.base_offset.tolist(), e.size.tolist(), bytes(e.data[16:17])   # magic 2
    ([42], [76], b'\\x02')
    """
    if isinstance(records_per_batch, (int, np.integer)):
        if records_per_batch < 1:
            raise ValueError(f"records_per_batch must be a positive int, got {records_per_batch!r}")
        rpb = int(records_per_batch)
        sizes = None
    else:
        sizes = np.asarray(records_per_batch, dtype=np.int64).reshape(-1)
        if (sizes < 1).any():
            raise ValueError("records_per_batch: every batch size must be a positive int")
    if not -2**31 <= int(partition_leader_epoch) <= INT_MAX:
        raise ValueError(f"partition_leader_epoch must fit a Java int, got {partition_leader_epoch}")
    codec = _codec_id(compression)
    c = record_columns(records, next_offset)
    n = len(c.offset)
    offsets, stamps = c.offset, c.timestamp
    if n and offsets[0] < next_offset:
        raise ValueError(f"offset {int(offsets[0])} is below the next offset {next_offset}")
    rises = offsets[1:] > offsets[:-1]           # compared, not subtracted: np.diff wraps past a long
    if n > 1 and not rises.all():
        i = int(np.argmin(rises))
        raise ValueError(f"offsets must increase strictly: {int(offsets[i])} then {int(offsets[i + 1])}")
    negative_stamp = (stamps < 0) & (stamps != NO_TIMESTAMP)
    if negative_stamp.any():
        raise ValueError(f"invalid negative timestamp {int(stamps[np.argmax(negative_stamp)])} "
                         f"(only -1, NO_TIMESTAMP, is allowed)")
    if sizes is None:
        B = -(-n // rpb)
        fi = np.arange(B, dtype=np.int64) * rpb
        li = np.minimum(fi + rpb, n) - 1
        bid = np.arange(n, dtype=np.int64) // rpb
    else:
        if int(sizes.sum()) != n:
            raise ValueError(f"records_per_batch sizes add up to {int(sizes.sum())}, not the {n} records")
        B = len(sizes)
        li = np.cumsum(sizes) - 1
        fi = li - sizes + 1
        bid = np.repeat(np.arange(B, dtype=np.int64), sizes)
    base_off = offsets[fi]
    off_delta = offsets - base_off[bid]
    if (off_delta > INT_MAX).any():
        raise ValueError("offsets inside one batch span more than 2**31 - 1 (lastOffsetDelta is an int)")
    base_ts = stamps[fi]
    ts_delta = stamps - base_ts[bid]
    max_ts = np.maximum.reduceat(stamps, fi) if n else np.empty(0, np.int64)

    klen, vlen = c.key[2], c.value[2]
    hkl, hvl = c.header_key[2], c.header_value[2]
    if max(int(klen.max(initial=0)), int(vlen.max(initial=0)), int(hkl.max(initial=0)),
           int(hvl.max(initial=0))) > INT_MAX:
        raise ValueError("a key, value or header is larger than 2**31 - 1 bytes")
    z_hkl, z_hvl = _zigzag32(hkl), _zigzag32(hvl)
    h_size = _varint_sizes(z_hkl) + hkl + _varint_sizes(z_hvl) + np.maximum(hvl, 0)
    h_rec = np.repeat(np.arange(n, dtype=np.int64), c.headers_count)
    z_hc = _zigzag32(c.headers_count)
    hblock = _varint_sizes(z_hc) + np.bincount(h_rec, weights=h_size, minlength=n).astype(np.int64) \
        if len(h_rec) else _varint_sizes(z_hc)
    z_ts, z_off = _zigzag64(ts_delta), _zigzag32(off_delta)
    z_kl, z_vl = _zigzag32(klen), _zigzag32(vlen)
    body = (1 + _varint_sizes(z_ts) + _varint_sizes(z_off) + _varint_sizes(z_kl) + np.maximum(klen, 0)
            + _varint_sizes(z_vl) + np.maximum(vlen, 0) + hblock)
    if (body > INT_MAX).any():
        raise ValueError("a record is larger than 2**31 - 1 bytes")
    z_body = _zigzag32(body)
    rec = _varint_sizes(z_body) + body
    bsize = RECORD_BATCH_OVERHEAD + (np.add.reduceat(rec, fi) if n else np.empty(0, np.int64))
    if (bsize - LOG_OVERHEAD > INT_MAX).any():
        raise ValueError("a batch is larger than 2**31 - 1 bytes: use fewer records_per_batch")
    bpos = np.zeros(B, np.int64)
    if B > 1:
        np.cumsum(bsize[:-1], out=bpos[1:])
    total = int(bpos[-1] + bsize[-1]) if B else 0
    cs = np.cumsum(rec) - rec
    rpos = bpos[bid] + RECORD_BATCH_OVERHEAD + cs - cs[fi][bid]

    out = np.zeros(total, np.uint8)
    hdr = np.zeros(B, HEADER.dtype)
    hdr["base_offset"] = base_off
    hdr["batch_length"] = bsize - LOG_OVERHEAD
    hdr["partition_leader_epoch"] = int(partition_leader_epoch)
    hdr["magic"] = MAGIC
    hdr["attributes"] = 0          # no compression, CreateTime, not transactional, not control
    hdr["last_offset_delta"] = offsets[li] - base_off
    hdr["base_timestamp"] = base_ts
    hdr["max_timestamp"] = max_ts
    hdr["producer_id"] = NO_PRODUCER_ID
    hdr["producer_epoch"] = NO_PRODUCER_EPOCH
    hdr["base_sequence"] = NO_SEQUENCE
    hdr["records_count"] = li - fi + 1
    if B:
        _records.copy_spans(out, bpos, hdr.view(np.uint8), np.arange(B, dtype=np.int64) * HEADER.size,
                            np.full(B, HEADER.size, np.int64))

    p = rpos.copy()
    p += _put_varints(out, p, z_body)
    p += 1                                    # record attributes: 0
    p += _put_varints(out, p, z_ts)
    p += _put_varints(out, p, z_off)
    p += _put_varints(out, p, z_kl)
    _copy(out, p, c.key)
    p += np.maximum(klen, 0)
    p += _put_varints(out, p, z_vl)
    _copy(out, p, c.value)
    p += np.maximum(vlen, 0)
    p += _put_varints(out, p, z_hc)
    if len(h_rec):
        hcs = np.cumsum(h_size) - h_size
        first_h = np.concatenate([[0], np.cumsum(c.headers_count)[:-1]])
        hp = p[h_rec] + hcs - hcs[first_h[h_rec]]
        hp += _put_varints(out, hp, z_hkl)
        _copy(out, hp, c.header_key)
        hp += hkl
        hp += _put_varints(out, hp, z_hvl)
        _copy(out, hp, c.header_value)
    if codec and B:
        out, bpos, bsize = _compress_records(out, bpos, bsize, hdr, codec)

    crc = np.empty(B, np.uint32)
    crc32c_spans(out, np.ascontiguousarray(bpos + CRC_START), np.ascontiguousarray(bsize - CRC_START), crc)
    if B:
        crc_size = HEADER.field("crc").size
        _records.copy_spans(out, bpos + HEADER.offset("crc"), crc.astype(">u4").view(np.uint8),
                            np.arange(B, dtype=np.int64) * crc_size, np.full(B, crc_size, np.int64))
    return EncodedBatches(out, bpos, bsize, base_off, offsets[li], max_ts, li - fi + 1, crc.astype(np.int64))


def _compress_records(out: np.ndarray, bpos: np.ndarray, bsize: np.ndarray, hdr: np.ndarray, codec: int):
    """The batches of `out` rebuilt with each one's records compressed as one block: the
    headers `hdr` get the codec bits and the new batchLength (the CRC is left to the caller).
    Returns (data, positions, sizes)."""
    from rmqlab.kafka import codecs

    payloads = [codecs.compress(codec, out[p + RECORD_BATCH_OVERHEAD:p + n]) for p, n in
                zip(bpos.tolist(), bsize.tolist())]
    sizes = RECORD_BATCH_OVERHEAD + np.array([len(x) for x in payloads], np.int64)
    if (sizes - LOG_OVERHEAD > INT_MAX).any():
        raise ValueError("a compressed batch is larger than 2**31 - 1 bytes: use fewer records_per_batch")
    positions = np.zeros(len(sizes), np.int64)
    np.cumsum(sizes[:-1], out=positions[1:])
    hdr["attributes"] |= codec
    hdr["batch_length"] = sizes - LOG_OVERHEAD
    packed = np.empty(int(sizes.sum()), np.uint8)
    B = len(sizes)
    _records.copy_spans(packed, positions, hdr.view(np.uint8), np.arange(B, dtype=np.int64) * HEADER.size,
                        np.full(B, HEADER.size, np.int64))
    for p, payload in zip(positions.tolist(), payloads):
        packed[p + RECORD_BATCH_OVERHEAD:p + RECORD_BATCH_OVERHEAD + len(payload)] = np.frombuffer(payload, np.uint8)
    return packed, positions, sizes


class SegmentWriter:
    """Append records to the segment ``<directory>/<base offset, 20 digits>.log``.

    Batches are magic v2, CreateTime, ``records_per_batch`` records each, compressed with
    `compression` (see :func:`encode_batches`). An existing segment is walked first and appended to after its last
    batch (offsets continue after its last offset); one ending in a torn batch is refused, as
    appending would bury it. Only the ``.log`` is written (no ``.index`` / ``.timeindex``);
    segments are not rolled. Use as a context manager.

    >>> import tempfile
    >>> with SegmentWriter(tempfile.mkdtemp(), base_offset=0, records_per_batch=3) as w:
    ...     _ = w.append([KafkaRecord(None, 10 * i, None, b"v") for i in range(4)])
    ...     _ = w.append({"timestamp": [50], "value": [b"w"]})
    >>> w.next_offset, read_batches(w.path)["records_count"].tolist()
    (5, [3, 1, 1])
    """

    def __init__(self, directory: str | os.PathLike, base_offset: int = 0, *, records_per_batch: int = 1,
                 partition_leader_epoch: int = 0, compression: str = "none"):
        if not isinstance(records_per_batch, (int, np.integer)) or records_per_batch < 1:
            raise ValueError(f"records_per_batch must be a positive int, got {records_per_batch!r}")
        _codec_id(compression)
        self.compression = compression
        self.dir = Path(directory)
        self.base_offset = int(base_offset)
        self.path = self.dir / log_file_name(self.base_offset)
        self.records_per_batch = records_per_batch
        self.partition_leader_epoch = partition_leader_epoch
        self.next_offset = self.base_offset
        self.position = 0
        if self.path.exists():
            df = read_batches(self.path, torn_tail="stop")
            rep: WalkReport = df.attrs["report"]
            if rep.torn_tail is not None:
                raise TruncatedFileError("the segment ends in a torn batch; appending would bury it (Kafka's "
                                         "recovery truncates it first): " + (rep.torn_reason or ""),
                                         path=self.path, offset=rep.torn_tail, field="batchLength")
            self.position = rep.valid_bytes
            if len(df):
                self.next_offset = max(self.base_offset, int(df["last_offset"].max()) + 1)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "ab")

    def append(self, records) -> EncodedBatches:
        """Encode `records` (as :func:`encode_batches` takes them) and append the batches;
        returns them with ``position`` as file positions. Records without offsets continue from
        :attr:`next_offset`."""
        enc = encode_batches(records, records_per_batch=self.records_per_batch,
                             partition_leader_epoch=self.partition_leader_epoch, next_offset=self.next_offset,
                             compression=self.compression)
        self._fh.write(enc.data.data)
        self._fh.flush()
        enc.position = enc.position + self.position
        self.position += len(enc.data)
        if enc.next_offset is not None:
            self.next_offset = enc.next_offset
        return enc

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_segment(directory: str | os.PathLike, base_offset: int, records, *,
                  records_per_batch: int | Sequence[int] = 1, partition_leader_epoch: int = 0,
                  compression: str = "none") -> Path:
    """Write `records` as a new segment ``<directory>/<base_offset, 20 digits>.log`` and return
    its path. Refuses to overwrite an existing non-empty segment (use :class:`SegmentWriter`
    to append). `compression` as :func:`encode_batches`. Cost: as :func:`encode_batches`.

    >>> import tempfile
    >>> p = write_segment(tempfile.mkdtemp(), 0, [(0, 1, None, b"a"), (1, 2, None, b"b")])
    >>> read_records(p)["value"].tolist()
    [b'a', b'b']
    """
    path = Path(directory) / log_file_name(base_offset)
    if path.exists() and path.stat().st_size:
        raise FileExistsError(f"{path} exists and is not empty; use SegmentWriter to append")
    enc = encode_batches(records, records_per_batch=records_per_batch,
                         partition_leader_epoch=partition_leader_epoch, next_offset=int(base_offset),
                         compression=compression)
    Path(directory).mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(enc.data.data)
    return path


def records_from_workload(table, *, timestamp: str = "store_timestamp", base_offset: int | None = None,
                          header_columns: Sequence[str] = (), topic: str | None = None,
                          queue_id: int | None = None):
    """Kafka records (a pyarrow Table for :func:`encode_batches` / :class:`SegmentWriter`) of the
    messages of a workload table (:data:`rmqlab.lab.workload.SCHEMA`, e.g. a chunk of
    ``generate_chunks``), in the table's (CommitLog) order.

    key = the ``keys`` column (the KEYS property as stored, several keys separated by a
    space; null when none) as UTF-8; value = ``body``; timestamp = the `timestamp` column
    (``store_timestamp``: the broker clock, as RocketMQ's index uses; ``born_timestamp``: the
    producer's clock, which is what a Kafka CreateTime holds). ``header_columns`` become headers
    named after the column (values as UTF-8 text; null values left out). `topic` / `queue_id`
    keep one topic / queue (a Kafka partition holds one). Offsets are ``base_offset +
    row`` when `base_offset` is given, else left to the writer (consecutive). Cost: vectorized.

    >>> from rmqlab.lab.workload import Workload, generate
    >>> r = records_from_workload(generate(Workload(messages=3, seed=1)), header_columns=["tags"])
    >>> r.column_names, r.column("key")[0].as_py(), r.column("headers")[0].as_py()
    (['timestamp', 'key', 'value', 'headers'], b'ORDER_0', [{'key': b'tags', 'value': b'TagC'}])
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        table = to_table(table)
    if topic is not None:
        table = table.filter(pc.equal(table.column("topic"), topic))
    if queue_id is not None:
        table = table.filter(pc.equal(table.column("queue_id"), int(queue_id)))
    n = table.num_rows
    cols: dict[str, Any] = {}
    if base_offset is not None:
        cols["offset"] = pa.array(int(base_offset) + np.arange(n, dtype=np.int64))
    cols["timestamp"] = pc.cast(table.column(timestamp), pa.int64())
    cols["key"] = pc.cast(table.column("keys"), pa.large_binary()) if "keys" in table.column_names else \
        pa.nulls(n, pa.large_binary())
    cols["value"] = pc.cast(table.column("body"), pa.large_binary())
    if header_columns:
        names = list(header_columns)
        vals = []
        valid = np.empty((n, len(names)), bool)
        for i, name in enumerate(names):
            col = table.column(name)
            col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
                    or pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)):
                col = pc.cast(col, pa.string())
            vals.append(pc.cast(col, pa.large_binary()))
            valid[:, i] = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool)
        rows, which = np.nonzero(valid)        # row-major: each record's headers in column order
        flat_values = pa.concat_arrays(vals).take(pa.array(which * n + rows)) if len(rows) else \
            pa.array([], pa.large_binary())
        flat_keys = pa.array([names[i].encode() for i in which.tolist()], pa.large_binary()) if len(rows) else \
            pa.array([], pa.large_binary())
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(valid.sum(axis=1), out=offsets[1:])
        struct = pa.StructArray.from_arrays([flat_keys, flat_values], names=["key", "value"])
        cols["headers"] = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct)
    return pa.table(cols)
