"""Kafka's legacy message sets (magic v0 and v1): read, write, and the index rule of their era.

Before magic v2 (Kafka 0.11) a segment held *messages*, not batches. Mirrors
``org.apache.kafka.common.record.LegacyRecord`` (layout, CRC, timestamp rules),
``AbstractLegacyRecordBatch`` (a shallow entry as a batch: ``baseOffset``, ``lastOffset``,
``maxTimestamp``; its ``DeepRecordsIterator`` for the inner messages of a compressed wrapper)
and ``FileLogInputStream`` (one walk for every magic), read at Kafka 0.10.2.2, 2.8.2 and 3.8.0;
and, before them, ``kafka.message.Message`` / ``ByteBufferMessageSet`` (0.8.2.2, 0.9.0.1),
whose bytes are the same. Each entry is::

    offset i64  messageSize i32  crc u32  magic i8  attributes i8  [timestamp i64: v1 only]
    keyLength i32  key  valueLength i32  value

``messageSize`` counts the bytes after itself; a negative length means null. ``crc`` is
CRC-32 (zlib's, not the CRC-32C of v2) of ``magic`` .. the end of the message. ``attributes``
bits 0-2 are the codec, bit 3 (v1) LogAppendTime. An entry whose codec is not 0 is a
*wrapper*: its value is the compressed bytes of a message set of *inner* messages
(:func:`rmqlab.kafka.codecs.decompress`, with the magic v0 LZ4 framing quirk), one level deep:
an inner message that is itself compressed is an error (``"Inner messages must not be
compressed"``), and so is ZSTD, which only v2 carries.

Offsets. An uncompressed entry's offset is its own. A wrapper's offset is its *last* inner
message's. v0 inner offsets are absolute; v1 inner offsets are relative (0, 1, ...): inner
absolute = wrapper offset - last inner relative + inner relative (a wrapper offset of 0,
written by some librdkafka producers, takes the relative offsets as they are).

Timestamps. v0 has none (-1, ``NoTimestampType``). A v1 inner message's timestamp type is its
wrapper's; when the wrapper is LogAppendTime its timestamp replaces the inner ones. As a batch,
a shallow entry's maxTimestamp is its own timestamp (a v1 CreateTime wrapper holds the largest
inner timestamp).

The segment readers of :mod:`rmqlab.kafka.log` walk the file and hand this module the
positions of the legacy entries: :func:`rmqlab.kafka.log.read_batches` has a row per shallow
entry (``magic`` 0 or 1; ``base_offset`` the first inner offset, ``last_offset`` the entry's
offset, ``crc_ok`` by CRC-32), :func:`rmqlab.kafka.log.read_records` the inner records and
:func:`rmqlab.kafka.log.read_legacy_records` the legacy records alone (with magic, codec, CRC
and wrapper position), in segments that mix magics after a message-format upgrade too. Here:
:func:`decode_entries` (the entries at given positions), :func:`records_frame` /
:func:`select_records` (their records), :func:`encode_message_set` /
:func:`write_legacy_segment` (writers), and :func:`legacy_expected_entries` (the ``.index`` /
``.timeindex`` entries by the broker release's rule).

Damage raises :class:`~rmqlab.errors.FormatError` naming file, byte offset and field: a size
below the message overhead, lengths that run past the message, a wrapper whose payload does not
decompress, holds no message or a compressed one, a v1 wrapper offset below its last inner
offset. Inner messages sit in decompressed bytes: their errors name the wrapper's value (its
first byte in the file) and say where in the payload. Like ``DataLogInputStream``, bytes after
the last whole inner message are ignored. A CRC mismatch is ``crc_ok`` False, or an error with
``verify_crc=True``.

>>> import tempfile
>>> recs = [(10, 1000, b"k", b"a"), (11, 1005, None, b"b"), (12, 1001, b"k", None)]
>>> path = write_legacy_segment(tempfile.mkdtemp(), 10, recs, magic=1, compression="gzip")
>>> from rmqlab.kafka.log import read_batches, read_legacy_records
>>> read_batches(path)[["magic", "base_offset", "last_offset", "max_timestamp", "compression"]].values.tolist()
[[1, 10, 12, 1005, 'gzip']]
>>> read_legacy_records(path)[["offset", "timestamp", "key", "value", "crc_ok"]].values.tolist()
[[10, 1000, b'k', b'a', True], [11, 1005, None, b'b', True], [12, 1001, b'k', None, True]]
"""
from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from rmqlab.errors import FormatError, RmqlabError
from rmqlab.formats.layout import Layout
from rmqlab.jvm.longs import wrap_long
from rmqlab.kafka import codecs
from rmqlab.kafka.columns import record_columns
from rmqlab.kafka.index import LOG_SUFFIX, segment_file_name

__all__ = ["MESSAGE_V0", "MESSAGE_V1", "LOG_OVERHEAD", "CRC_START", "RECORD_OVERHEAD", "MIN_ENTRY_SIZE",
           "NO_TIMESTAMP_TYPE", "LegacyRecords", "decode_entries", "select_records", "records_frame",
           "encode_message_set", "write_legacy_segment", "IndexRule", "index_rule",
           "legacy_expected_entries"]

# ------------------------------------------------------------------------------- layout

_FIELDS = [
    ("offset", "q", "offset: the message's offset; a wrapper's is its last inner message's"),
    ("message_size", "i", "messageSize: bytes of the message after this field"),
    ("crc", "i", "crc: CRC-32 of magic .. end of message, unsigned 32-bit (read & 0xFFFFFFFF)"),
    ("magic", "b", "magic: 0 or 1 (2 is a v2 record batch)"),
    ("attributes", "b", "attributes: bits 0-2 compression codec, bit 3 LogAppendTime (v1)"),
    ("timestamp", "q", "timestamp: ms (v1 only; CreateTime or the broker's append time)"),
]
#: LegacyRecord v1 header up to the key length (offset and size are the log overhead)
MESSAGE_V1 = Layout("LegacyMessageV1", _FIELDS)
#: the same without the timestamp
MESSAGE_V0 = Layout("LegacyMessageV0", _FIELDS[:-1])
_HEADERS = {0: MESSAGE_V0, 1: MESSAGE_V1}
LOG_OVERHEAD = MESSAGE_V0.offset("crc")              # Records.LOG_OVERHEAD = 12
CRC_START = MESSAGE_V0.offset("magic")               # the CRC covers magic .. end = 16
_LENGTH = struct.Struct(">i")
#: LegacyRecord.RECORD_OVERHEAD_V0 / _V1: messageSize at least (header after the size + 2 lengths)
RECORD_OVERHEAD = {m: h.size - LOG_OVERHEAD + 2 * _LENGTH.size for m, h in _HEADERS.items()}
#: bytes of the smallest whole entry, by magic
MIN_ENTRY_SIZE = {m: LOG_OVERHEAD + o for m, o in RECORD_OVERHEAD.items()}
assert (LOG_OVERHEAD, CRC_START, RECORD_OVERHEAD[0], RECORD_OVERHEAD[1]) == (12, 16, 14, 22)

NO_TIMESTAMP = -1
#: TimestampType names: a v0 message has none
NO_TIMESTAMP_TYPE = "NoTimestampType"
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_CODEC_MASK, _TIMESTAMP_TYPE_MASK = 0x07, 0x08
_LEGACY_CODECS = (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4)
_INT_MAX = 2**31 - 1


# ------------------------------------------------------------------------------- reading


@dataclass
class LegacyRecords:
    """The records of some legacy entries as parallel lists, in file (and inner) order.

    ``batch_position`` is the shallow entry's (wrapper's) file position; ``position`` / ``size``
    the record's bytes in the file, which for an inner message are its wrapper's (it has no bytes
    of its own there). ``crc`` / ``crc_ok`` are the record's own message CRC-32."""

    batch_position: list
    position: list
    size: list
    offset: list
    timestamp: list
    timestamp_type: list
    magic: list
    attributes: list
    compression: list
    key: list
    value: list
    crc: list
    crc_ok: list

    @classmethod
    def empty(cls) -> LegacyRecords:
        return cls(*([] for _ in range(13)))

    def __len__(self) -> int:
        return len(self.offset)


@dataclass
class _Message:
    """One parsed message: header fields and its key and value (bytes or None)."""

    offset: int
    crc: int
    crc_ok: bool
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    value_at: int          # where the value's bytes start in the buffer parsed


def _parse(buf, p: int, path, where, *, magic_known: bool) -> _Message:
    """The message whose entry starts at p (offset i64, messageSize i32, ...) and takes
    LOG_OVERHEAD + messageSize bytes of buf, which the caller has checked are there. `where(q)`
    turns a position of buf into (file offset, field prefix, context) for errors."""
    offset, size = struct.unpack_from(">qi", buf, p)
    magic = buf[p + CRC_START]
    magic = magic - 256 if magic > 127 else magic
    if not magic_known and magic not in _HEADERS:
        at, prefix, ctx = where(p + CRC_START)
        raise FormatError(f"{ctx}magic {magic}: a message inside a wrapper is magic 0 or 1", path=path,
                          offset=at, field=prefix + "magic")
    head = _HEADERS[magic]
    if size < RECORD_OVERHEAD[magic]:
        at, prefix, ctx = where(p + head.offset("message_size"))
        raise FormatError(f"{ctx}messageSize {size} is below the {RECORD_OVERHEAD[magic]} bytes of a magic v{magic} "
                          f"message's fixed fields", path=path, offset=at, field=prefix + "messageSize")
    end = p + LOG_OVERHEAD + size
    h = head.unpack_from(buf, p)
    crc = h.crc & 0xFFFFFFFF
    with memoryview(buf) as mv:
        computed = zlib.crc32(mv[p + CRC_START:end])
    q = p + head.size
    fields = []
    for name in ("key", "value"):
        (n,) = _LENGTH.unpack_from(buf, q)
        if n >= 0 and q + _LENGTH.size + n > end:
            at, prefix, ctx = where(q)
            raise FormatError(f"{ctx}{name}Length {n} runs {q + _LENGTH.size + n - end} bytes past the end of the "
                              f"message (messageSize {size})", path=path, offset=at, field=f"{prefix}{name}Length")
        q += _LENGTH.size
        fields.append((q, n))
        q += max(n, 0)
        if name == "key" and q + _LENGTH.size > end:
            at, prefix, ctx = where(q)
            raise FormatError(f"{ctx}the message ends {end - q} bytes after the key, before its valueLength",
                              path=path, offset=at, field=prefix + "valueLength")
    if q != end:
        at, prefix, ctx = where(q)
        raise FormatError(f"{ctx}{end - q} bytes after the value: messageSize {size} but the fields end after "
                          f"{q - p - LOG_OVERHEAD}", path=path, offset=at, field=prefix + "messageSize")
    (kq, kn), (vq, vn) = fields
    with memoryview(buf) as mv:
        key = bytes(mv[kq:kq + kn]) if kn >= 0 else None
        value = bytes(mv[vq:vq + vn]) if vn >= 0 else None
    return _Message(offset, crc, computed == crc, magic, h.attributes & 0xFF,
                    h.timestamp if magic == 1 else NO_TIMESTAMP, key, value, vq)


def _crc_error(path, at: int, stored: int, field: str, ctx: str = "") -> FormatError:
    return FormatError(f"{ctx}stored CRC-32 0x{stored:08X} does not match the message's bytes (magic .. end)",
                       path=path, offset=at, field=field)


def _inner(wrapper: _Message, position: int, path, verify_crc: bool) -> list[tuple[int, _Message]]:
    """(absolute offset, message) of each inner message of a compressed wrapper, as
    AbstractLegacyRecordBatch's DeepRecordsIterator gives them."""
    codec = wrapper.attributes & _CODEC_MASK
    value_at = wrapper.value_at
    name = codecs.CODEC_NAMES.get(codec, f"unknown({codec})")
    if codec not in _LEGACY_CODECS:
        raise FormatError(f"compression codec {codec} ({name}) in a magic v{wrapper.magic} wrapper: legacy messages "
                          f"are none, gzip, snappy or lz4 (ZSTD needs magic v2)", path=path,
                          offset=position + CRC_START + 1, field="attributes")
    if wrapper.value is None:
        raise FormatError(f"a {name} wrapper with a null value (\"Found invalid compressed record set with null "
                          f"value\")", path=path, offset=value_at - _LENGTH.size, field="valueLength")
    payload = codecs.decompress(codec, wrapper.value, magic=wrapper.magic, path=path, offset=value_at)

    def where(q, start=None):
        """Errors inside the payload name the wrapper's value and the inner entry's start in it."""
        start = q if start is None else start
        return value_at, f"inner@{start}.", f"wrapper at {position}, byte {q} of its decompressed {name} payload: "

    out: list[_Message] = []
    p, n = 0, len(payload)
    # DataLogInputStream: each whole inner entry takes at least MIN_ENTRY_SIZE[0] bytes
    for _ in range(n // MIN_ENTRY_SIZE[0] + 1):
        if n - p < LOG_OVERHEAD:
            break
        (size,) = _LENGTH.unpack_from(payload, p + 8)
        if size < RECORD_OVERHEAD[0]:
            at, prefix, ctx = where(p + 8, p)
            raise FormatError(f"{ctx}messageSize {size} is below the minimum record overhead "
                              f"({RECORD_OVERHEAD[0]})", path=path, offset=at, field=prefix + "messageSize")
        if n - p - LOG_OVERHEAD < size:
            break        # a partial last inner message: DataLogInputStream ends there
        m = _parse(payload, p, path, lambda q, s=p: where(q, s), magic_known=False)
        if verify_crc and not m.crc_ok:
            at, prefix, ctx = where(p + LOG_OVERHEAD, p)
            raise _crc_error(path, at, m.crc, prefix + "crc", ctx)
        if m.attributes & _CODEC_MASK:
            at, prefix, ctx = where(p + CRC_START + 1, p)
            raise FormatError(f"{ctx}the inner message is itself compressed (\"Inner messages must not be "
                              f"compressed\")", path=path, offset=at, field=prefix + "attributes")
        out.append(m)
        p += LOG_OVERHEAD + (size if size >= 0 else 0)
    if not out:
        raise FormatError(f"the {name} wrapper's payload holds no whole message (\"Found invalid compressed record "
                          f"set with no inner records\")", path=path, offset=value_at, field="value")
    if wrapper.magic == 1:
        last = out[-1].offset
        if wrapper.offset == 0:
            base = 0
        elif wrapper.offset < last:
            raise FormatError(f"wrapper offset {wrapper.offset} is less than its last inner relative offset {last} "
                              f"and not 0 (\"Found invalid wrapper offset in compressed v1 message set\")",
                              path=path, offset=position, field="offset")
        else:
            base = wrapper.offset - last
        return [(base + m.offset, m) for m in out]
    return [(m.offset, m) for m in out]


def decode_entries(buf, path, positions, *, verify_crc: bool = False):
    """Decode the legacy shallow entries at `positions` of `buf` (whole entries, as the
    segment walk found them): their batch-table columns, their records and the first error.

    Cost: one CRC-32 per message, the decompression of each wrapper, a few µs of Python per
    message.

    >>> data = encode_message_set([(0, 5, None, b"x"), (1, 6, b"k", b"y")], magic=1)
    >>> cols, recs, err = decode_entries(data, None, [0, 35])
    >>> cols["base_offset"].tolist(), cols["max_timestamp"].tolist(), recs.value, err
    ([0, 1], [5, 6], [b'x', b'y'], None)

    Returns (columns: a dict of int64/bool arrays named as the v2 header fields, one row an
    entry; :class:`LegacyRecords` of the entries decoded; the first FormatError in file order,
    or None). Decoding stops at the first error: its entry and those after it have rows of -1
    and no records. Within an entry a CRC mismatch is reported first when `verify_crc`.
    """
    positions = [int(p) for p in positions]
    k = len(positions)
    cols = {name: np.full(k, -1, np.int64) for name in (
        "base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes", "last_offset_delta",
        "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count")}
    crc_ok = np.zeros(k, bool)
    recs = LegacyRecords.empty()
    error: RmqlabError | None = None

    def outer_where(q):
        return q, "", ""

    for i, p in enumerate(positions):
        try:
            m = _parse(buf, p, path, lambda q, p=p: outer_where(q), magic_known=True)
            if verify_crc and not m.crc_ok:
                raise _crc_error(path, p + MESSAGE_V0.offset("crc"), m.crc, "crc")
            codec = m.attributes & _CODEC_MASK
            inner = _inner(m, p, path, verify_crc) if codec else [(m.offset, m)]
        except FormatError as e:
            if not (verify_crc or e.field == "crc"):
                try:
                    ok = _parse(buf, p, path, outer_where, magic_known=True).crc_ok
                except FormatError:
                    ok = True
                if not ok:
                    e = type(e)(e.reason + f" (the CRC-32 of the message at {p} does not verify either: its bytes "
                                           f"are damaged)", path=e.path, offset=e.offset, field=e.field)
            error = e
            break
        size = LOG_OVERHEAD + struct.unpack_from(">i", buf, p + 8)[0]
        lat = m.magic == 1 and bool(m.attributes & _TIMESTAMP_TYPE_MASK)
        wrapper_type = NO_TIMESTAMP_TYPE if m.magic == 0 else _TIMESTAMP_TYPES[lat]
        comp = codecs.CODEC_NAMES.get(codec, f"unknown({codec})")
        for off, r in inner:
            recs.batch_position.append(p)
            recs.position.append(p)
            recs.size.append(size)
            recs.offset.append(off)
            if r.magic == 0:
                recs.timestamp.append(NO_TIMESTAMP)
                recs.timestamp_type.append(NO_TIMESTAMP_TYPE)
            elif r is m:
                recs.timestamp.append(r.timestamp)
                recs.timestamp_type.append(wrapper_type)
            else:
                recs.timestamp.append(m.timestamp if lat else r.timestamp)
                recs.timestamp_type.append(wrapper_type)
            recs.magic.append(r.magic)
            recs.attributes.append(r.attributes)
            recs.compression.append(comp)
            recs.key.append(r.key)
            recs.value.append(r.value)
            recs.crc.append(r.crc)
            recs.crc_ok.append(r.crc_ok)
        cols["base_offset"][i] = inner[0][0]
        cols["batch_length"][i] = size - LOG_OVERHEAD
        cols["magic"][i] = m.magic
        cols["crc"][i] = m.crc
        cols["attributes"][i] = m.attributes
        # lastOffset - baseOffset as AbstractLegacyRecordBatch's longs give it: a damaged inner
        # offset can put the difference outside a long, and Java wraps it
        cols["last_offset_delta"][i] = wrap_long(m.offset - inner[0][0])
        cols["base_timestamp"][i] = cols["max_timestamp"][i] = m.timestamp
        cols["records_count"][i] = len(inner)
        crc_ok[i] = m.crc_ok
    cols["crc_ok"] = crc_ok
    return cols, recs, error


def select_records(recs: LegacyRecords, keep) -> LegacyRecords:
    """The records of `recs` where `keep` (a sequence of bools) is true.

    Cost: O(records).

    >>> r = decode_entries(encode_message_set([(0, 1, b"a", b"x"), (1, 2, b"b", b"y")]), None, [0, 36])[1]
    >>> select_records(r, [False, True]).key
    [b'b']
    """
    flags = list(keep)
    return LegacyRecords(*([x for x, k in zip(getattr(recs, f), flags) if k]
                           for f in LegacyRecords.__dataclass_fields__))


_RECORD_COLUMNS = ("batch_position", "position", "size", "offset", "timestamp", "timestamp_type", "magic",
                   "attributes", "compression", "key", "value", "crc", "crc_ok")


def records_frame(recs: LegacyRecords):
    """:class:`LegacyRecords` as a DataFrame (the columns of :func:`rmqlab.kafka.log.read_legacy_records`)."""
    import pandas as pd

    ints = {"batch_position", "position", "size", "offset", "timestamp", "magic", "attributes", "crc"}
    data: dict[str, np.ndarray | pd.Series] = {}
    for c in _RECORD_COLUMNS:
        v = getattr(recs, c)
        if c in ints:
            data[c] = np.asarray(v, np.int64)
        elif c == "crc_ok":
            data[c] = np.asarray(v, bool)
        else:
            data[c] = pd.Series(v, dtype=object)
    data["key_position"], data["value_position"] = _payload_positions(recs)
    return pd.DataFrame(data)


def _payload_positions(recs: LegacyRecords) -> tuple[np.ndarray, np.ndarray]:
    """File positions of each record's key and value bytes (after their length fields); -1 for
    an inner message, whose bytes are in its wrapper's decompressed payload."""
    header = np.array([_HEADERS[m].size for m in recs.magic], np.int64)
    key_size = np.array([0 if k is None else len(k) for k in recs.key], np.int64)
    key_at = np.asarray(recs.position, np.int64) + header + _LENGTH.size
    plain = np.array([c == codecs.CODEC_NAMES[codecs.NONE] for c in recs.compression], bool)
    return np.where(plain, key_at, -1), np.where(plain, key_at + key_size + _LENGTH.size, -1)


# ------------------------------------------------------------------------------- writing


def _message(magic: int, offset: int, attributes: int, timestamp: int, key, value) -> bytes:
    """One entry: offset, size, CRC-32 of magic .. end, fields."""
    head = _HEADERS[magic]
    body = b"".join([_LENGTH.pack(-1) if key is None else _LENGTH.pack(len(key)) + key,
                     _LENGTH.pack(-1) if value is None else _LENGTH.pack(len(value)) + value])
    size = head.size - LOG_OVERHEAD + len(body)
    if size > _INT_MAX:
        raise ValueError("a message is larger than 2**31 - 1 bytes")
    fields = (offset, size, 0, magic, attributes) + ((timestamp,) if magic == 1 else ())
    raw = bytearray(head.pack(*fields) + body)
    crc = zlib.crc32(memoryview(raw)[CRC_START:])
    raw[CRC_START - 4:CRC_START] = crc.to_bytes(4, "big")
    return bytes(raw)


def _codec_id(compression) -> int:
    if isinstance(compression, str):
        ids = {v: k for k, v in codecs.CODEC_NAMES.items()}
        if compression not in ids:
            raise ValueError(f"unknown compression {compression!r}: one of {sorted(ids)}")
        compression = ids[compression]
    code = int(compression)
    if code not in _LEGACY_CODECS:
        raise ValueError(f"compression {codecs.CODEC_NAMES.get(code, code)!r} is not valid for magic v0/v1 messages "
                         f"(none, gzip, snappy, lz4; ZSTD needs magic v2)")
    return code


def encode_message_set(records, *, magic: int = 1, compression: str | int = "none",
                       records_per_wrapper: int | None = None, next_offset: int = 0,
                       timestamp_type: Literal["CreateTime", "LogAppendTime"] = "CreateTime",
                       log_append_time: int | None = None) -> bytes:
    """The bytes of a legacy message set holding `records`, as a broker of that era stored them.

    Units: offsets, timestamps in ms. Cost: O(records + bytes), a Python loop per message plus
    the codec.

    >>> data = encode_message_set([(5, 1000, b"k", b"v")], magic=1)
    >>> len(data), data[16]    # one 36-byte v1 message: 12 + 22 + key + value
    (36, 1)

    `records` as :func:`rmqlab.kafka.log.encode_batches` takes them (offsets optional: then
    consecutive from `next_offset`; no headers: v0/v1 have none). `magic` 0 or 1 (v0 keeps no
    timestamps). `compression` "none", "gzip", "snappy" or "lz4" (not lz4 with magic 0: its
    broken frame checksum is read, never written; ZSTD needs v2): compressed records go in
    wrappers of `records_per_wrapper` messages (default all), v1 inner offsets relative to the
    wrapper's first, the wrapper's offset its last inner offset and, for CreateTime, its
    timestamp the largest inner one. ``timestamp_type="LogAppendTime"`` (v1) sets attribute bit
    3 on the shallow entries, whose timestamp becomes `log_append_time`. Raises ValueError for
    arguments Kafka would not write.
    """
    if magic not in _HEADERS:
        raise ValueError(f"magic must be 0 or 1, got {magic!r}")
    codec = _codec_id(compression)
    if codec == codecs.LZ4 and magic == 0:
        raise ValueError("magic v0 LZ4 (the pre-0.10 broken frame checksum) is read, never written")
    if timestamp_type not in _TIMESTAMP_TYPES:
        raise ValueError(f"timestamp_type must be 'CreateTime' or 'LogAppendTime', got {timestamp_type!r}")
    lat = timestamp_type == "LogAppendTime"
    if lat and (magic == 0 or log_append_time is None):
        raise ValueError("LogAppendTime needs magic 1 and a log_append_time")
    # read only when lat, where the check above makes it log_append_time
    append_time = NO_TIMESTAMP if log_append_time is None else log_append_time
    c = record_columns(records, next_offset)
    if c.headers_count.any():
        raise ValueError("magic v0/v1 messages have no headers")
    n = len(c.offset)
    offsets, stamps = c.offset.tolist(), c.timestamp.tolist()
    if n > 1 and not (c.offset[1:] > c.offset[:-1]).all():    # np.diff would wrap
        raise ValueError("offsets must increase strictly")
    if magic == 1 and any(t < 0 and t != NO_TIMESTAMP for t in stamps):
        raise ValueError("invalid negative timestamp (only -1, NO_TIMESTAMP, is allowed)")

    def blob(col, i):
        data, starts, lengths = col
        return None if lengths[i] < 0 else data[starts[i]:starts[i] + lengths[i]].tobytes()

    keys = [blob(c.key, i) for i in range(n)]
    values = [blob(c.value, i) for i in range(n)]
    stamps = stamps if magic == 1 else [NO_TIMESTAMP] * n
    outer_attrs = _TIMESTAMP_TYPE_MASK if lat else 0
    parts = []
    if codec == codecs.NONE:
        for i in range(n):
            parts.append(_message(magic, offsets[i], outer_attrs, append_time if lat else stamps[i],
                                  keys[i], values[i]))
        return b"".join(parts)
    per = n if records_per_wrapper is None else int(records_per_wrapper)
    if per < 1:
        raise ValueError(f"records_per_wrapper must be a positive int, got {records_per_wrapper!r}")
    for start in range(0, n, per):
        group = range(start, min(start + per, n))
        first = offsets[start]
        inner = b"".join(_message(magic, offsets[i] - first if magic == 1 else offsets[i], 0, stamps[i],
                                  keys[i], values[i]) for i in group)
        ts = append_time if lat else max(stamps[i] for i in group)
        parts.append(_message(magic, offsets[group[-1]], codec | outer_attrs, ts, None,
                              codecs.compress(codec, inner, magic=magic)))
    return b"".join(parts)


def write_legacy_segment(directory: str | os.PathLike, base_offset: int, records, **options) -> Path:
    """Write `records` as a new legacy segment ``<directory>/<base_offset, 20 digits>.log`` and
    return its path (the ``.log`` alone).

    Cost: as :func:`encode_message_set`, whose keyword options it takes.

    >>> import tempfile
    >>> p = write_legacy_segment(tempfile.mkdtemp(), 3, [(3, 0, None, b"v")], magic=0)
    >>> p.name, p.stat().st_size
    ('00000000000000000003.log', 27)

    Raises FileExistsError when the segment exists and is not empty.
    """
    path = Path(directory) / segment_file_name(base_offset, LOG_SUFFIX)
    if path.exists() and path.stat().st_size:
        raise FileExistsError(f"{path} exists and is not empty")
    data = encode_message_set(records, next_offset=int(base_offset), **options)
    Path(directory).mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------------------- index rule


@dataclass(frozen=True)
class IndexRule:
    """What a broker release puts in a segment's indexes: ``offset_entry`` "first" (the first
    offset of the indexed append or entry, 0.8-1.1) or "last" (its last offset, 2.0 on);
    ``time_index`` whether there is a ``.timeindex`` (0.10.1 on)."""

    release: str
    offset_entry: str
    time_index: bool


def index_rule(broker: str) -> IndexRule:
    """The index rule of the broker release `broker` ("0.9.0.1", "0.10.2", "2.8", "3.9.0").

    Cost: O(1).

    >>> index_rule("0.9.0.1"), index_rule("0.10.2").offset_entry, index_rule("3.7").offset_entry
    (IndexRule(release='0.9.0.1', offset_entry='first', time_index=False), 'first', 'last')

    From the broker's source: ``LogSegment.append`` / ``recover`` indexed an append's (or, in
    recovery, a shallow entry's) *first* offset up to 1.1 (0.8/0.9 decompress a wrapper for it,
    0.10-1.1 call ``firstOffset`` / ``baseOffset``, the same) and its *last* offset from 2.0
    (``batch.lastOffset``, no decompression); the time index arrived in 0.10.1 (KIP-33).
    Raises ValueError for a version that does not parse.
    """
    try:
        parts = tuple(int(x) for x in str(broker).split(".")[:3])
    except ValueError:
        raise ValueError(f"broker release {broker!r} is not a version like '0.10.2' or '3.9'") from None
    if not parts:
        raise ValueError(f"broker release {broker!r} is not a version like '0.10.2' or '3.9'")
    v = parts + (0,) * (3 - len(parts))
    return IndexRule(str(broker), "last" if v >= (2, 0, 0) else "first", v >= (0, 10, 1))


def legacy_expected_entries(batches, index_interval_bytes: int = 4096, *, broker: str = "3.9",
                            rolled: bool = True, appends=None) -> tuple[np.ndarray, np.ndarray]:
    """The ``.index`` entries (absolute offset, position) and ``.timeindex`` entries (timestamp,
    absolute offset) broker release `broker` writes for a segment of legacy entries (and v2
    batches: the rule is the release's, whatever the magic), as two int64 arrays of shape (n, 2).

    Units: bytes, offsets, ms. Cost: O(batches).

    >>> import pandas as pd
    >>> b = pd.DataFrame({"position": [0, 3000, 6000, 9000], "size": [3000] * 4,
    ...                   "base_offset": [0, 5, 10, 15], "last_offset": [4, 9, 14, 19],
    ...                   "max_timestamp": [-1, -1, -1, -1]})
    >>> [x.tolist() for x in legacy_expected_entries(b, broker="0.9.0.1")]
    [[[10, 6000]], []]
    >>> [x.tolist() for x in legacy_expected_entries(b, broker="3.9")]
    [[[14, 6000]], []]

    `batches`: :func:`rmqlab.kafka.log.read_batches` rows (``position``, ``base_offset``,
    ``last_offset``, ``max_timestamp``). The rule is ``LogSegment.recover``'s, which
    ``append`` follows when each append is one entry: walking the entries in file order, the
    running maximum of maxTimestamp with the last offset of the entry that first reached it;
    when the entry starts more than `index_interval_bytes` past the last indexed one, an offset
    entry (the entry's first offset before 2.0, its last from 2.0, at its position) and the
    running maximum offered to the time index, which keeps it only above its last timestamp
    (so v0 entries, timestamp -1, add none); `rolled` offers it once more at the end (the
    segment closed). Releases before 0.10.1 have no time index: the second array is empty.

    `appends`: the positions where the producer requests (``Log.append`` calls) began, when
    known, for an index the broker wrote while appending: the interval is then counted between
    appends and an entry names the append's first (before 2.0) or last offset. Default: every
    entry its own append, which is what recovery gives. Raises ValueError for an interval below
    0 or appends that are not entry positions.
    """
    if index_interval_bytes < 0:
        raise ValueError(f"index_interval_bytes must be >= 0, got {index_interval_bytes}")
    rule = index_rule(broker)
    pos = np.asarray(batches["position"], np.int64)
    first = np.asarray(batches["base_offset"], np.int64)
    last = np.asarray(batches["last_offset"], np.int64)
    ts = np.asarray(batches["max_timestamp"], np.int64)
    empty = np.zeros((0, 2), np.int64)
    if len(pos) == 0:
        return empty, empty
    if appends is None:
        starts = np.arange(len(pos))
    else:
        want = np.unique(np.asarray(appends, np.int64))
        starts = np.searchsorted(pos, want)
        if len(want) == 0 or (starts >= len(pos)).any() or (pos[np.minimum(starts, len(pos) - 1)] != want).any() \
                or starts[0] != 0:
            raise ValueError("appends must be entry positions, the first entry's among them")
    ends = np.append(starts[1:], len(pos)) - 1           # each append's last entry
    run = np.maximum.accumulate(ts)
    new_max = np.ones(len(ts), bool)
    new_max[1:] = ts[1:] > run[:-1]
    owner = np.maximum.accumulate(np.where(new_max, np.arange(len(ts)), 0))
    run_ts, run_off = run[ends], last[owner][ends]
    apos = pos[starts]
    entry_offset = first[starts] if rule.offset_entry == "first" else last[ends]
    picks, mark = [], 0
    i = int(np.searchsorted(apos, mark + index_interval_bytes, side="right"))
    while i < len(apos):
        picks.append(i)
        mark = int(apos[i])
        i = int(np.searchsorted(apos, mark + index_interval_bytes, side="right"))
    pk = np.asarray(picks, np.int64)
    offsets = np.stack([entry_offset[pk], apos[pk]], axis=1) if len(pk) else empty
    if not rule.time_index:
        return offsets, empty
    offered_ts, offered_off = run_ts[pk], run_off[pk]
    if rolled:
        offered_ts, offered_off = np.append(offered_ts, run_ts[-1]), np.append(offered_off, run_off[-1])
    keep = offered_ts > NO_TIMESTAMP
    if len(offered_ts) > 1:
        keep[1:] &= offered_ts[1:] > offered_ts[:-1]
    return offsets, np.stack([offered_ts[keep], offered_off[keep]], axis=1)
