"""RocketMQ's CommitLog: every message of a broker, appended to 1 GiB files, byte for byte.

Mirrors ``org.apache.rocketmq.store.CommitLog`` (``DefaultAppendMessageCallback.doAppend``,
``checkMessageAndReturnSize``), ``MessageExtEncoder``, ``MessageDecoder``
(``string2messageProperties``, ``createCrc32``), ``MessageSysFlag`` and ``MessageVersion`` of the
RocketMQ store / common modules (read in 5.3.x; the v1 record is unchanged since 4.0).

A store keeps its log in ``commitlog/``, files named by the 20-digit CommitLog offset of their
first byte and preallocated to ``mappedFileSizeCommitLog`` bytes (default 1 GiB) of zeros. A
record is (big-endian, Java's signed integers)::

    TOTALSIZE i32  MAGICCODE i32  BODYCRC i32  QUEUEID i32  FLAG i32  QUEUEOFFSET i64
    PHYSICALOFFSET i64  SYSFLAG i32  BORNTIMESTAMP i64  BORNHOST (ip 4|16 + port i32)
    STORETIMESTAMP i64  STOREHOST (ip 4|16 + port i32)  RECONSUMETIMES i32
    PREPAREDTRANSACTIONOFFSET i64  BODYLEN i32 + BODY  TOPICLEN (i8 v1 | i16 v2) + TOPIC
    PROPERTIESLENGTH i16 + PROPERTIES ("name\\x01value\\x02" ...)

The fixed parts are declared once below (:data:`HEAD`, :data:`STORE_TIME`, :data:`TAIL`, ...);
a v1 message with IPv4 hosts and empty body, topic and properties is 91 bytes
(:data:`MIN_MESSAGE_SIZE`). SYSFLAG bit 0x10 / 0x20 makes the born / store host IPv6 (16 address
bytes), bit 0x1 marks a compressed body (kept here exactly as stored), bits 0xC the transaction
type. A message that does not fit in the rest of a file (``msgLen + 8 > bytes left``) leaves an
8-byte blank record (TOTALSIZE = bytes left, MAGICCODE 0xCBD43194) and goes to the next file.

Facts settled from the Java source:

* **BODYCRC** is ``CRC32(body) & 0x7FFFFFFF``; the broker checks it only when BODYLEN > 0.
* **Queue offsets** come from the broker's topicQueueTable per (topic, queue id): NOT_TYPE and
  COMMIT_TYPE messages take the next offset and advance it; PREPARED (0x4) and ROLLBACK (0xC)
  messages are written with QUEUEOFFSET 0 and advance nothing.
* **Version.** v2 (2-byte topic length) is chosen when the topic is longer than 127 bytes
  (``autoMessageVersionOnTopicLen``); the v1 length byte is read back signed.
* **__CRC32#** (``enabledAppendPropCRC``, 5.x): the properties get a trailing
  ``__CRC32#\\x01dddddddddd\\x02`` (20 bytes) whose ten digits are ``CRC32(record bytes before
  them) & 0x7FFFFFFF`` written *least significant digit first*; any old ``__CRC32#`` is removed
  first and a ``\\x02`` added when the block does not end with one. See ``append_prop_crc``.

Readers: :func:`read_message` (one record), :func:`iter_messages` (pure Python, readable model
of every check), :func:`read_columns` / :func:`read_at` (columnar: the C walk of
``rmqlab._records`` plus NumPy gathers). Writers: :func:`encode_message`,
:func:`encode_messages` (vectorized, lays out files), :class:`CommitLogWriter`.

Damage. The reader cannot resynchronise inside a file (a record's position is the previous
record's end), so the first bad record ends that file: ``on_error="raise"`` (default) raises
:class:`~rmqlab.errors.FormatError` naming path, offset (file position of the record) and
field; ``on_error="report"`` records a :class:`Damage` and goes on with the next file. The
last file may end in a torn write (the file ends inside a record, or the last record is bad and
only zeros follow it): that is reported as ``report.torn_tail`` and never raised. Zeros after
the last message of the last file are the normal unwritten space of a preallocated file.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> with CommitLogWriter(d, file_size=4096) as w:
...     b = w.append({"topic": ["T", "T"], "body": [b"hello", b"world"],
...                   "properties": ["KEYS\\x01k1\\x02", "TAGS\\x01a\\x02"]})
>>> b.phy_offset.tolist(), b.queue_offset.tolist()
([0, 105], [0, 1])
>>> read_message(os.path.join(d, "00000000000000000000"), 105).body
b'world'
>>> df = read_columns(d)
>>> df[["topic", "phy_offset", "keys", "tags"]].values.tolist()
[['T', 0, 'k1', None], ['T', 105, None, 'a']]
"""
from __future__ import annotations

import gc
import mmap
import os
import re
import zlib
from dataclasses import dataclass, field, fields as dc_fields
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

import numpy as np

from rmqlab import _records
from rmqlab.dispatch import assign_queue_offsets, next_queue_offsets, transaction_type
from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.formats._layout import Layout
from rmqlab.formats.msgid import format_host, offset_msg_id, parse_host

__all__ = [
    "HEAD", "STORE_TIME", "TAIL", "PORT", "TOPIC_LEN_V1", "TOPIC_LEN_V2", "PROPERTIES_LEN", "BLANK",
    "MAGIC_V1", "MAGIC_V2", "MAGIC_BLANK", "MIN_MESSAGE_SIZE", "END_FILE_MIN_BLANK_LENGTH",
    "DEFAULT_FILE_SIZE", "COLUMNS", "Message", "Damage", "ReadReport", "StoreFile",
    "message_length", "parse_properties", "properties_block", "read_message", "iter_messages",
    "read_columns", "read_at", "store_files", "min_offset", "max_offset", "walk_py",
    "encode_message", "encode_messages", "record_sizes", "place_records", "EncodedBatch", "EncodedFile",
    "CommitLogWriter",
]

# ------------------------------------------------------------------------------- layout

MAGIC_V1 = -626843481       # 0xDAA320A7, MessageDecoder.MESSAGE_MAGIC_CODE
MAGIC_V2 = -626843477       # 0xDAA320AB, MessageDecoder.MESSAGE_MAGIC_CODE_V2
MAGIC_BLANK = -875286124    # 0xCBD43194, CommitLog.BLANK_MAGIC_CODE

# MessageSysFlag (the transaction type bits are a dispatch rule: rmqlab.dispatch)
COMPRESSED_FLAG = 0x1
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20

# The record from TOTALSIZE to BORNTIMESTAMP: fixed, 48 bytes.
HEAD = Layout("MessageHead", [
    ("total_size", "i", "TOTALSIZE: bytes of the whole record, this field included"),
    ("magic", "i", "MAGICCODE: 0xDAA320A7 v1, 0xDAA320AB v2 (2-byte topic length), 0xCBD43194 blank"),
    ("body_crc", "i", "BODYCRC: CRC32(body) & 0x7FFFFFFF, as stored (the broker checks it when BODYLEN > 0)"),
    ("queue_id", "i", "QUEUEID: queue of the topic"),
    ("flag", "i", "FLAG: the producer's Message.flag, opaque to the broker"),
    ("queue_offset", "q", "QUEUEOFFSET: index in the (topic, queue); 0 for prepared/rollback records"),
    ("phy_offset", "q", "PHYSICALOFFSET: CommitLog offset of this record (file start + position)"),
    ("sys_flag", "i", "SYSFLAG: 0x1 compressed, 0xC transaction type, 0x10 born v6, 0x20 store v6"),
    ("born_timestamp", "q", "BORNTIMESTAMP: producer clock at send, ms since the epoch"),
])
# BORNHOST follows: the address (4 bytes, or 16 when SYSFLAG & 0x10) then PORT.
PORT = Layout("HostPort", [
    ("port", "i", "port of BORNHOST / STOREHOST, after its 4- or 16-byte address"),
])
STORE_TIME = Layout("StoreTime", [
    ("store_timestamp", "q", "STORETIMESTAMP: broker clock when stored, ms since the epoch"),
])
# STOREHOST follows: the address (4 bytes, or 16 when SYSFLAG & 0x20) then PORT.
TAIL = Layout("MessageTail", [
    ("reconsume_times", "i", "RECONSUMETIMES: redeliveries so far"),
    ("prepared_transaction_offset", "q", "PREPAREDTRANSACTIONOFFSET: CommitLog offset of the half "
                                         "message a commit/rollback record ends"),
    ("body_len", "i", "BODYLEN: bytes of BODY that follow"),
])
# BODY follows, then TOPICLEN + TOPIC (UTF-8).
TOPIC_LEN_V1 = Layout("TopicLenV1", [("topic_len", "b", "TOPICLEN of a v1 record: signed byte")])
TOPIC_LEN_V2 = Layout("TopicLenV2", [("topic_len", "h", "TOPICLEN of a v2 record: signed short")])
PROPERTIES_LEN = Layout("PropertiesLen", [
    ("properties_len", "h", "PROPERTIESLENGTH: bytes of PROPERTIES that follow (signed short)"),
])
# PROPERTIES follows: "name\x01value\x02" per property, UTF-8.

# End-of-file filler: TOTALSIZE = the bytes left in the file, then MAGICCODE; the rest is not written.
BLANK = Layout("BlankRecord", [
    ("total_size", "i", "bytes from here to the end of the file"),
    ("magic", "i", "0xCBD43194"),
])

_IPV4, _IPV6 = 4, 16
#: v1, IPv4 hosts, empty body, topic and properties: 91 bytes.
MIN_MESSAGE_SIZE = (HEAD.size + 2 * (_IPV4 + PORT.size) + STORE_TIME.size + TAIL.size
                    + TOPIC_LEN_V1.size + PROPERTIES_LEN.size)
assert MIN_MESSAGE_SIZE == 91
END_FILE_MIN_BLANK_LENGTH = BLANK.size   # DefaultAppendMessageCallback: a message needs 8 bytes after it
DEFAULT_FILE_SIZE = 1 << 30              # MessageStoreConfig.mappedFileSizeCommitLog
PROPERTY_CRC32 = "__CRC32#"              # MessageConst.PROPERTY_CRC32
CRC32_RESERVED_LEN = len(PROPERTY_CRC32) + 1 + 10 + 1
_NAME_VALUE_SEPARATOR, _PROPERTY_SEPARATOR = 1, 2

#: read_columns' columns, in order (crc_ok is added when CRCs are checked, body dropped with body=False).
COLUMNS = ("topic", "queue_id", "flag", "queue_offset", "phy_offset", "sys_flag", "born_timestamp",
           "born_host", "store_timestamp", "store_host", "reconsume_times",
           "prepared_transaction_offset", "body", "properties", "keys", "uniq_key", "tags",
           "delay_level", "total_size", "version", "body_crc")

_FILE_NAME = re.compile(r"\d{20}")
_LONG_MAX = 2**63 - 1

# rmqlab._records.walk stop codes
STOP_END, STOP_BLANK, STOP_BLANK_SIZE, STOP_SHORT, STOP_MAGIC, STOP_PAST_END, STOP_TOO_SMALL, STOP_LIMIT = range(8)
_WALK_STOPS = {
    STOP_END: "end of the data exactly on a record boundary",
    STOP_BLANK: "end-of-file blank record",
    STOP_BLANK_SIZE: "blank record whose TOTALSIZE is not the bytes left in the file",
    STOP_SHORT: "fewer than 8 bytes left: TOTALSIZE and MAGICCODE cannot be read",
    STOP_MAGIC: "MAGICCODE is none of v1 0xDAA320A7, v2 0xDAA320AB, blank 0xCBD43194",
    STOP_PAST_END: "TOTALSIZE runs past the end of the file",
    STOP_TOO_SMALL: f"TOTALSIZE below the smallest possible message ({MIN_MESSAGE_SIZE})",
    STOP_LIMIT: "max_records reached",
}
# rmqlab._records.find_props problem codes
_PROP_PROBLEMS = {
    1: "empty pair (two \\x02 in a row, or a block starting with \\x02)",
    2: "a pair without the \\x01 name/value separator",
    3: "a pair with an empty name",
    4: "the block does not end with \\x02",
}
_WANTED_PROPS = (b"KEYS", b"UNIQ_KEY", b"TAGS", b"DELAY")


def message_length(body_len: int, topic_len: int, properties_len: int, sys_flag: int = 0,
                   version: int = 1) -> int:
    """TOTALSIZE of a record (``MessageExtEncoder.calMsgLength``); all lengths in bytes.

    >>> message_length(0, 0, 0), message_length(10, 3, 20, BORNHOST_V6_FLAG, 2)
    (91, 137)
    """
    return (MIN_MESSAGE_SIZE + (version == 2) + (12 if sys_flag & BORNHOST_V6_FLAG else 0)
            + (12 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 0) + body_len + topic_len + properties_len)


# ------------------------------------------------------------------------------- model


def _body_crc(body: bytes) -> int:
    return zlib.crc32(body) & 0x7FFFFFFF


def _decode_text(raw: bytes) -> str:
    # surrogateescape: invalid UTF-8 survives a decode/encode round trip byte for byte
    return raw.decode("utf-8", "surrogateescape")


def _encode_text(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _props_problem(raw: bytes) -> tuple[int, int] | None:
    """(offset inside the block, problem code) of the first malformed pair, or None.
    The readable model of rmqlab._records.find_props' checks."""
    at, n = 0, len(raw)
    while at < n:
        e = raw.find(b"\x02", at)
        sep_found = e >= 0
        if not sep_found:
            e = n
        if e == at:
            return at, 1
        kv = raw.find(b"\x01", at, e)
        if kv < 0:
            return at, 2
        if kv == at:
            return at, 3
        if not sep_found:
            return at, 4
        at = e + 1
    return None


def parse_properties(raw: bytes, *, path: Any = None, offset: int | None = None) -> dict[str, str]:
    """A PROPERTIES block -> dict, as ``MessageDecoder.string2messageProperties``.

    Pairs are split on ``\\x02``, each on its first ``\\x01``; a later pair of the same name
    replaces an earlier one and pairs with an empty value are skipped (as Java's HashMap puts).
    Java silently skips malformed pairs; here a malformed pair or a block not ending in ``\\x02``
    raises :class:`FormatError` (field ``PROPERTIES``, `offset` = where the block starts plus
    the bad pair's position). Cost: O(len(raw)).

    >>> parse_properties(b"KEYS\\x01a b\\x02TAGS\\x01t\\x02")
    {'KEYS': 'a b', 'TAGS': 't'}
    """
    bad = _props_problem(raw)
    if bad is not None:
        at, code = bad
        raise FormatError(f"unparseable property block: {_PROP_PROBLEMS[code]} at byte {at} of the block",
                          path=path, offset=None if offset is None else offset + at, field="PROPERTIES")
    out: dict[str, str] = {}
    for pair in raw.split(b"\x02")[:-1]:
        name, _, value = pair.partition(b"\x01")
        if value:
            out[_decode_text(name)] = _decode_text(value)
    return out


def properties_block(properties: dict[str, str] | str | bytes | None) -> bytes:
    """dict -> ``name\\x01value\\x02``... in the dict's order (``messageProperties2String``);
    str / bytes are taken as an already-serialised block. None -> empty."""
    if properties is None:
        return b""
    if isinstance(properties, (bytes, bytearray, memoryview)):
        return bytes(properties)
    if isinstance(properties, str):
        return _encode_text(properties)
    return b"".join(_encode_text(str(k)) + b"\x01" + _encode_text(str(v)) + b"\x02"
                    for k, v in properties.items() if v is not None)


@dataclass(frozen=True)
class Message:
    """One CommitLog message record, every field as stored.

    `properties` is the parsed dict; `properties_raw` the stored block (its order and any
    duplicate names, for byte-exact re-encoding with :meth:`encode`). `position` and `path` say
    where it was read (not part of the record).
    """

    total_size: int
    version: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    phy_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict
    properties_raw: bytes
    position: int = field(default=-1, compare=False)
    path: str | None = field(default=None, compare=False)

    @property
    def keys(self) -> str | None:
        """KEYS property (space-separated keys), None when absent."""
        return self.properties.get("KEYS")

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get("UNIQ_KEY")

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def delay_level(self) -> int:
        """DELAY property as an int, 0 when absent or not a number."""
        try:
            return int(self.properties.get("DELAY", 0))
        except ValueError:
            return 0

    @property
    def crc_ok(self) -> bool:
        """The broker's check: BODYLEN == 0 or CRC32(body) & 0x7FFFFFFF == BODYCRC."""
        return not self.body or _body_crc(self.body) == self.body_crc

    @property
    def compressed(self) -> bool:
        return bool(self.sys_flag & COMPRESSED_FLAG)

    @property
    def transaction_type(self) -> int:
        return transaction_type(self.sys_flag)

    @property
    def offset_msg_id(self) -> str:
        """``MessageDecoder.createMessageId``: hex of store host + phy_offset."""
        return offset_msg_id(self.store_host, self.phy_offset)

    def record_fields(self) -> dict[str, Any]:
        """The keyword arguments of :func:`encode_message` that re-create this record."""
        names = ("version", "queue_id", "flag", "queue_offset", "phy_offset", "sys_flag",
                 "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
                 "prepared_transaction_offset", "body", "topic")
        return {n: getattr(self, n) for n in names} | {"properties": self.properties_raw}

    def encode(self, *, keep_crc: bool = True) -> bytes:
        """The record's bytes: identical to what was read when `keep_crc` (BODYCRC as stored)."""
        return encode_message(**self.record_fields(), body_crc=self.body_crc if keep_crc else None)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dc_fields(self)}


@dataclass(frozen=True)
class Damage:
    """A record the reader could not accept. `offset` is the record's position in `path`;
    `phy_offset` the CommitLog offset (file start + position); `kind` "damage" or "torn-tail"."""

    path: str
    offset: int
    phy_offset: int
    field: str
    reason: str
    kind: str = "damage"

    def error(self) -> FormatError:
        cls = TruncatedFileError if self.kind == "torn-tail" else FormatError
        return cls(self.reason, path=self.path, offset=self.offset, field=self.field)

    def __str__(self) -> str:
        return f"{self.path}: offset {self.offset} (phy {self.phy_offset}): {self.field}: {self.reason}"


@dataclass
class ReadReport:
    """What a read covered: files, messages, damage (one per damaged file at most: the rest of
    such a file is unreadable), the torn tail of the last file, and the end of the data."""

    files: list[str] = field(default_factory=list)
    messages: int = 0
    damage: list[Damage] = field(default_factory=list)
    torn_tail: Damage | None = None
    end_phy_offset: int | None = None   # phy offset after the last good message (next write)

    @property
    def ok(self) -> bool:
        return not self.damage and self.torn_tail is None

    def as_dict(self) -> dict[str, Any]:
        return {"files": list(self.files), "messages": self.messages,
                "damage": [d.__dict__ for d in self.damage],
                "torn_tail": None if self.torn_tail is None else self.torn_tail.__dict__,
                "end_phy_offset": self.end_phy_offset}


# ------------------------------------------------------------------------ files and maps


@dataclass(frozen=True)
class StoreFile:
    """One CommitLog file: its path, start offset (from the 20-digit name) and size."""

    path: Path
    start_offset: int
    size: int


def _store_file(p: Path, start: int) -> StoreFile:
    size = p.stat().st_size
    if start + max(size, 1) - 1 > _LONG_MAX:   # Java's Long.parseLong / long offsets cannot hold it
        raise FormatError(f"file name {p.name}: the file's offsets {start}..{start + max(size, 1) - 1} run "
                          f"past Long.MAX_VALUE", path=p, offset=0, field="file name")
    return StoreFile(p, start, size)


def store_files(path: str | os.PathLike) -> list[StoreFile]:
    """The CommitLog files of a ``commitlog/`` folder (names of 20 digits, sorted by offset),
    or the one file `path`. A single file whose name is not 20 digits starts at offset 0.
    A name whose offsets run past Long.MAX_VALUE raises FormatError (field "file name")."""
    p = Path(path)
    if p.is_dir():
        out = [_store_file(c, int(c.name)) for c in p.iterdir()
               if _FILE_NAME.fullmatch(c.name) and c.is_file()]
        return sorted(out, key=lambda f: f.start_offset)
    return [_store_file(p, int(p.name) if _FILE_NAME.fullmatch(p.name) else 0)]


def min_offset(path: str | os.PathLike) -> int | None:
    """Offset of the first file's first byte (the broker's getMinOffset), None without files."""
    files = store_files(path)
    return files[0].start_offset if files else None


def max_offset(path: str | os.PathLike) -> int | None:
    """Offset after the last good message (the broker's getMaxOffset after recovery); reads only
    the last file (walks its TOTALSIZE chain). None without files."""
    files = store_files(path)
    if not files:
        return None
    f = files[-1]
    with _Mapped(f.path) as buf:
        _, end, code, _ = _scan_file(buf, f, last=True, check_crc=False, report=ReadReport(), on_error="report")
    # a file ended by the blank record is full: the broker's write position is its end
    return f.start_offset + f.size if code == STOP_BLANK else end


class _Mapped:
    """A read-only memory map of a whole file (b"" for an empty file)."""

    def __init__(self, path):
        self.path = path
        self.fh = open(path, "rb")
        size = os.fstat(self.fh.fileno()).st_size
        self.mm = mmap.mmap(self.fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None

    def __enter__(self):
        return self.mm if self.mm is not None else b""

    def __exit__(self, *exc):
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:   # a NumPy view still alive: the map closes when it is freed
                pass
        self.fh.close()


# ---------------------------------------------------------------- pure-Python record model


def walk_py(buf, start: int, end: int, max_records: int = -1) -> tuple[list[int], int, int]:
    """Pure-Python model of ``rmqlab._records.walk``: positions of the v1/v2 records on the
    TOTALSIZE chain from `start`, the stop position and the stop code (see ``_WALK_STOPS``)."""
    pos: list[int] = []
    p = start
    while True:
        left = end - p
        if left == 0:
            return pos, p, STOP_END
        if 0 <= max_records <= len(pos):
            return pos, p, STOP_LIMIT
        if left < 8:
            return pos, p, STOP_SHORT
        size, magic = BLANK.unpack_from(buf, p)
        if magic == MAGIC_BLANK:
            return pos, p, STOP_BLANK if size == left else STOP_BLANK_SIZE
        if magic not in (MAGIC_V1, MAGIC_V2):
            return pos, p, STOP_MAGIC
        if size > left:
            return pos, p, STOP_PAST_END
        if size < MIN_MESSAGE_SIZE:
            return pos, p, STOP_TOO_SMALL
        pos.append(p)
        p += size


def _check_head(buf, p: int, end: int) -> tuple[int, str, str] | None:
    """The walk's checks of the record at `p`: None when it is a message; else (stop code,
    field, reason)."""
    left = end - p
    if left < 8:
        return STOP_SHORT, "TOTALSIZE", f"{left} bytes left in the file: {_WALK_STOPS[STOP_SHORT]}"
    size, magic = BLANK.unpack_from(buf, p)
    if magic == MAGIC_BLANK:
        code = STOP_BLANK if size == left else STOP_BLANK_SIZE
        return code, "TOTALSIZE", f"blank record TOTALSIZE {size}, {left} bytes left"
    if magic not in (MAGIC_V1, MAGIC_V2):
        return STOP_MAGIC, "MAGICCODE", f"MAGICCODE 0x{magic & 0xFFFFFFFF:08X}: {_WALK_STOPS[STOP_MAGIC]}"
    if size > left:
        return STOP_PAST_END, "TOTALSIZE", f"TOTALSIZE {size} but {left} bytes left in the file"
    if size < MIN_MESSAGE_SIZE:
        return STOP_TOO_SMALL, "TOTALSIZE", f"TOTALSIZE {size}: {_WALK_STOPS[STOP_TOO_SMALL]}"
    return None


def _parse_record(buf, p: int, *, path=None, check_crc: bool = False) -> Message:
    """Decode the message record at `p` (the walk's checks already passed), checking that its
    fields fill TOTALSIZE exactly. Raises FormatError(path, offset=p, field)."""
    h = HEAD.unpack_from(buf, p)
    total = h.total_size

    def bad(fld, reason):
        return FormatError(reason, path=path, offset=p, field=fld)

    version = 1 if h.magic == MAGIC_V1 else 2
    at = p + HEAD.size
    end = p + total
    bw = _IPV6 if h.sys_flag & BORNHOST_V6_FLAG else _IPV4
    born_ip = bytes(buf[at:at + bw])
    born_port = PORT.unpack_from(buf, at + bw).port
    at += bw + PORT.size
    store_ts = STORE_TIME.unpack_from(buf, at).store_timestamp
    at += STORE_TIME.size
    sw = _IPV6 if h.sys_flag & STOREHOSTADDRESS_V6_FLAG else _IPV4
    # a v6-flagged record may be shorter than the fields up to BODYLEN: check before reading
    tlw = TOPIC_LEN_V1.size if version == 1 else TOPIC_LEN_V2.size
    if at + sw + PORT.size + TAIL.size + tlw + PROPERTIES_LEN.size > end:
        raise bad("TOTALSIZE", f"TOTALSIZE {total} is smaller than the fixed fields of this record "
                               f"(SYSFLAG 0x{h.sys_flag & 0xFFFFFFFF:X}, v{version})")
    store_ip = bytes(buf[at:at + sw])
    store_port = PORT.unpack_from(buf, at + sw).port
    at += sw + PORT.size
    t = TAIL.unpack_from(buf, at)
    at += TAIL.size
    if t.body_len < 0 or at + t.body_len + tlw + PROPERTIES_LEN.size > end:
        raise bad("BODYLEN", f"BODYLEN {t.body_len} disagrees with TOTALSIZE {total}")
    body = bytes(buf[at:at + t.body_len])
    at += t.body_len
    topic_len = (TOPIC_LEN_V1 if version == 1 else TOPIC_LEN_V2).unpack_from(buf, at).topic_len
    at += tlw
    if topic_len < 0 or at + topic_len + PROPERTIES_LEN.size > end:
        raise bad("TOPICLEN", f"TOPICLEN {topic_len} disagrees with TOTALSIZE {total}")
    topic = _decode_text(bytes(buf[at:at + topic_len]))
    at += topic_len
    plen = PROPERTIES_LEN.unpack_from(buf, at).properties_len
    at += PROPERTIES_LEN.size
    if plen < 0 or at + plen > end:
        raise bad("PROPERTIESLENGTH", f"PROPERTIESLENGTH {plen} disagrees with TOTALSIZE {total}")
    if at + plen != end:
        raise bad("TOTALSIZE", f"TOTALSIZE {total} but the fields end after {at + plen - p} bytes")
    raw = bytes(buf[at:at + plen])
    bad_props = _props_problem(raw)
    if bad_props is not None:
        raise bad("PROPERTIES", f"unparseable property block: {_PROP_PROBLEMS[bad_props[1]]} "
                                f"at byte {bad_props[0]} of the block (file position {at + bad_props[0]})")
    if check_crc and body and _body_crc(body) != h.body_crc:
        raise bad("BODYCRC", f"BODYCRC {h.body_crc} but CRC32(body) & 0x7FFFFFFF = {_body_crc(body)}")
    return Message(total, version, h.body_crc, h.queue_id, h.flag, h.queue_offset, h.phy_offset,
                   h.sys_flag, h.born_timestamp, format_host(born_ip, born_port), store_ts,
                   format_host(store_ip, store_port), t.reconsume_times, t.prepared_transaction_offset,
                   body, topic, parse_properties(raw), raw, p, None if path is None else os.fspath(path))


def read_message(path_or_buffer: Any, position: int, *, check_crc: bool = False) -> Message:
    """The message record at byte `position` of a file (or any buffer). Cost: one record.

    Raises :class:`FormatError` / :class:`TruncatedFileError` naming path, position and field
    when no valid message starts there (a blank record included).
    """
    if isinstance(path_or_buffer, (str, os.PathLike)):
        with _Mapped(path_or_buffer) as buf:
            return _read_one(buf, position, path_or_buffer, check_crc)
    return _read_one(path_or_buffer, position, None, check_crc)


def _read_one(buf, position, path, check_crc):
    end = len(buf)
    if not 0 <= position <= end:
        raise ValueError(f"position {position} outside a buffer of {end} bytes")
    stop = _check_head(buf, position, end)
    if stop is not None:
        code, fld, reason = stop
        cls = TruncatedFileError if code in (STOP_SHORT, STOP_PAST_END) else FormatError
        if code in (STOP_BLANK, STOP_BLANK_SIZE):
            reason = "a blank (end-of-file) record, not a message: " + reason
            fld = "MAGICCODE"
        raise cls(reason, path=path, offset=position, field=fld)
    return _parse_record(buf, position, path=path, check_crc=check_crc)


def _tail_is_zero(buf, start: int) -> bool:
    if start >= len(buf):
        return True
    a = np.frombuffer(buf, np.uint8)[start:]
    return not a.any()


def _classify_stop(buf, f: StoreFile, p: int, code: int, fld: str, reason: str, last: bool,
                   record_end: int | None) -> Damage | None:
    """Damage (or torn tail, or None for a clean end) for a walk that stopped at `p`."""
    if code in (STOP_END, STOP_BLANK, STOP_LIMIT):
        return None
    path = os.fspath(f.path)
    if last:
        if _tail_is_zero(buf, p):
            return None          # unwritten preallocated space
        if code in (STOP_SHORT, STOP_PAST_END):
            return Damage(path, p, f.start_offset + p, fld, "torn tail: " + reason, "torn-tail")
        # a write cut short in a preallocated file: the record ends in zeros and only zeros follow
        after = p + 8 if record_end is None else max(record_end, p + 8)
        if _tail_is_zero(buf, after) and (record_end is None or buf[min(record_end, len(buf)) - 1] == 0):
            return Damage(path, p, f.start_offset + p, fld, "torn tail: " + reason, "torn-tail")
    elif code == STOP_MAGIC and _tail_is_zero(buf, p):
        reason = "zeros where the next record or the end-of-file blank should be (not the last file)"
    return Damage(path, p, f.start_offset + p, fld, reason)


def _record(report: ReadReport, dmg: Damage | None, on_error: str) -> None:
    if dmg is None:
        return
    if dmg.kind == "torn-tail":
        report.torn_tail = dmg
        return
    if on_error == "raise":
        raise dmg.error()
    report.damage.append(dmg)


class MessageStream:
    """Iterator over the messages of a file or a ``commitlog/`` folder (pure Python, one record
    at a time, read-only memory maps). ``report`` (a :class:`ReadReport`) is complete once the
    iteration ends. Cost: about 200,000 messages/s; :func:`read_columns` is much faster."""

    def __init__(self, path, *, check_crc: bool = False, on_error: Literal["raise", "report"] = "raise"):
        if on_error not in ("raise", "report"):
            raise ValueError(f"on_error must be 'raise' or 'report', got {on_error!r}")
        self.path, self.check_crc, self.on_error = path, check_crc, on_error
        self.report = ReadReport()

    def __iter__(self) -> Iterator[Message]:
        files = store_files(self.path)
        rep = self.report
        for i, f in enumerate(files):
            last = i == len(files) - 1
            rep.files.append(os.fspath(f.path))
            with _Mapped(f.path) as buf:
                end, p = len(buf), 0
                while True:
                    stop = _check_head(buf, p, end) if p < end else (STOP_END, "", "")
                    if stop is not None:
                        code, fld, reason = stop
                        _record(rep, _classify_stop(buf, f, p, code, fld, reason, last, None), self.on_error)
                        break
                    try:
                        m = _parse_record(buf, p, path=f.path, check_crc=self.check_crc)
                    except FormatError as e:
                        size = BLANK.unpack_from(buf, p).total_size
                        _record(rep, _classify_stop(buf, f, p, -1, e.field, e.reason, last, p + size),
                                self.on_error)
                        break
                    rep.messages += 1
                    yield m
                    p += m.total_size
                if last:
                    full = stop is not None and stop[0] == STOP_BLANK
                    rep.end_phy_offset = f.start_offset + (f.size if full else p)


def iter_messages(path: str | os.PathLike, *, check_crc: bool = False,
                  on_error: Literal["raise", "report"] = "raise") -> MessageStream:
    """Iterate the messages of one CommitLog file or a ``commitlog/`` folder, in offset order.

    Returns a :class:`MessageStream`; its ``report`` holds damage, the torn tail and the end
    offset after iterating. See the module docstring for what counts as damage.
    """
    return MessageStream(path, check_crc=check_crc, on_error=on_error)


# ------------------------------------------------------------------------- columnar reader


def _gather(U: np.ndarray, starts: np.ndarray, width: int, dtype: str) -> np.ndarray:
    """Big-endian integers of `width` bytes at byte positions `starts` (clipped into U)."""
    if len(starts) == 0:
        return np.empty(0, dtype=np.dtype(dtype).newbyteorder("="))
    idx = starts[:, None] + np.arange(width, dtype=np.int64)
    np.clip(idx, 0, len(U) - 1, out=idx)
    return U[idx].view(dtype).reshape(-1).astype(np.dtype(dtype).newbyteorder("="))


def _spans_bytes(U, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate byte spans of U: (data uint8, offsets int64[n+1])."""
    lengths = lengths.astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    if len(lengths):
        _records.copy_spans(data, np.ascontiguousarray(offsets[:-1]), U,
                            np.ascontiguousarray(starts, np.int64), lengths)
    return data, offsets


def _text_column(data: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None = None,
                 binary: bool = False, dictionary: bool = False) -> np.ndarray:
    """Object array of str (or bytes) from concatenated spans, None where not `valid`."""
    import pyarrow as pa

    n = len(offsets) - 1
    bitmap = None
    null_count = 0
    if valid is not None:
        null_count = int(n - np.count_nonzero(valid))
        if null_count:
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    typ = pa.large_binary() if binary else pa.large_string()
    arr = pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], null_count)
    if not binary:
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid:   # invalid UTF-8: decode as the pure-Python model does
            raw = pa.Array.from_buffers(pa.large_binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                        null_count).to_pylist()
            return np.array([None if r is None else _decode_text(r) for r in raw], dtype=object)
    if dictionary:   # few distinct values (topics, tags): one Python object per distinct value
        enc = arr.dictionary_encode()
        values = enc.dictionary.to_numpy(zero_copy_only=False)
        idx = enc.indices.to_numpy(zero_copy_only=False)
        if enc.null_count:
            out = np.empty(n, dtype=object)
            ok = ~np.isnan(idx)
            out[ok] = values[idx[ok].astype(np.int64)]
            return out
        return values[idx]
    return arr.to_numpy(zero_copy_only=False)


def _format_hosts(ip: np.ndarray, port: np.ndarray) -> np.ndarray:
    """(n, 4|16) address bytes + ports -> "ip:port" strings; formats each distinct host once."""
    n = len(port)
    if n == 0:
        return np.empty(0, dtype=object)
    key = np.hstack([ip, port.astype(">i4").view(np.uint8).reshape(n, 4)])
    key = np.ascontiguousarray(key).view(f"V{key.shape[1]}").reshape(n)
    w = ip.shape[1]
    if w == _IPV4:   # hash-based factorize of one uint64 per row: O(n), no sort
        import pandas as pd

        ip32 = np.ascontiguousarray(ip).view(">u4").reshape(n).astype(np.uint64)
        k64 = (ip32 << np.uint64(32)) | (port.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
        inv, uk = pd.factorize(k64)
        texts = np.array([format_host((int(u) >> 32).to_bytes(4, "big"),
                                      (int(u) & 0xFFFFFFFF) - ((int(u) & 0x80000000) << 1))
                          for u in uk], dtype=object)
        return texts[inv]
    uniq, inv = np.unique(key, return_inverse=True)
    texts = np.array([format_host(u.tobytes()[:w], int.from_bytes(u.tobytes()[w:], "big", signed=True))
                      for u in uniq], dtype=object)
    return texts[inv.reshape(-1)]


def _check_fields(U, P, total, magic, sys_flag):
    """Vectorized field checks of records at positions P: (first bad row or -1, field, reason)
    plus the per-row spans. Same checks, same order as _parse_record."""
    n = len(P)
    version = np.where(magic == MAGIC_V1, 1, 2)
    bw = np.where(sys_flag & BORNHOST_V6_FLAG, _IPV6, _IPV4)
    sw = np.where(sys_flag & STOREHOSTADDRESS_V6_FLAG, _IPV6, _IPV4)
    tlw = version  # 1 or 2 bytes
    o_st = HEAD.size + bw + PORT.size
    o_sh = o_st + STORE_TIME.size
    o_tail = o_sh + sw + PORT.size
    o_body = o_tail + TAIL.size
    end = total
    fixed_bad = o_body + tlw + PROPERTIES_LEN.size > end
    body_len = _gather(U, P + o_tail + TAIL.offset("body_len"), 4, ">i4").astype(np.int64)
    body_bad = (body_len < 0) | (o_body + body_len + tlw + PROPERTIES_LEN.size > end)
    o_tl = o_body + body_len
    tl1 = _gather(U, P + o_tl, 1, ">i1").astype(np.int64)
    tl2 = _gather(U, P + o_tl, 2, ">i2").astype(np.int64)
    topic_len = np.where(version == 1, tl1, tl2)
    o_topic = o_tl + tlw
    topic_bad = (topic_len < 0) | (o_topic + topic_len + PROPERTIES_LEN.size > end)
    o_pl = o_topic + topic_len
    plen = _gather(U, P + o_pl, 2, ">i2").astype(np.int64)
    o_props = o_pl + PROPERTIES_LEN.size
    plen_bad = (plen < 0) | (o_props + plen > end)
    size_bad = o_props + plen != end
    checks = [(fixed_bad, "TOTALSIZE", lambda r: f"TOTALSIZE {total[r]} is smaller than the fixed fields "
                                                 f"of this record (SYSFLAG 0x{sys_flag[r] & 0xFFFFFFFF:X}, v{version[r]})"),
              (body_bad, "BODYLEN", lambda r: f"BODYLEN {body_len[r]} disagrees with TOTALSIZE {total[r]}"),
              (topic_bad, "TOPICLEN", lambda r: f"TOPICLEN {topic_len[r]} disagrees with TOTALSIZE {total[r]}"),
              (plen_bad, "PROPERTIESLENGTH", lambda r: f"PROPERTIESLENGTH {plen[r]} disagrees with TOTALSIZE {total[r]}"),
              (size_bad, "TOTALSIZE", lambda r: f"TOTALSIZE {total[r]} but the fields end after "
                                                f"{o_props[r] + plen[r]} bytes")]
    bad_row, bad_field, bad_reason = -1, "", ""
    acc = np.zeros(n, bool)
    first = {}
    for mask, fld, why in checks:
        m = mask & ~acc
        if m.any():
            first[int(np.argmax(m))] = first.get(int(np.argmax(m)), (fld, why))
        acc |= mask
    if first:
        bad_row = min(first)
        bad_field, why = first[bad_row]
        bad_reason = why(bad_row)
    spans = dict(version=version, bw=bw, sw=sw, o_st=o_st, o_sh=o_sh, o_tail=o_tail, o_body=o_body,
                 body_len=body_len, o_topic=o_topic, topic_len=topic_len, o_props=o_props, plen=plen)
    return bad_row, bad_field, bad_reason, spans


def _decode_positions(U, P: np.ndarray, f: StoreFile, *, body: bool, check_crc: bool):
    """Decode the message records at positions P (heads already checked) of one mapped file.
    Returns (columns dict of the good prefix, Damage or None for the first bad record)."""
    path = os.fspath(f.path)
    n = len(P)
    H = U[(P[:, None] + np.arange(HEAD.size, dtype=np.int64))].view(HEAD.dtype).reshape(n) if n else \
        np.empty(0, HEAD.dtype)
    total = H["total_size"].astype(np.int64)
    sys_flag = H["sys_flag"].astype(np.int64)
    bad_row, bad_field, bad_reason, s = _check_fields(U, P, total, H["magic"].astype(np.int64), sys_flag)
    limit = n if bad_row < 0 else bad_row
    dmg = None if bad_row < 0 else Damage(path, int(P[bad_row]), f.start_offset + int(P[bad_row]), bad_field, bad_reason)
    # properties: check the blocks and find the wanted values (stops at the first bad block)
    k = len(_WANTED_PROPS)
    vs = np.empty(limit * k, np.int64)
    vl = np.empty(limit * k, np.int64)
    pst = np.ascontiguousarray((P + s["o_props"])[:limit])
    pln = np.ascontiguousarray(s["plen"][:limit])
    res = _records.find_props(U, pst, pln, _WANTED_PROPS, vs, vl) if limit else None
    if res is not None:
        row, at, problem = res
        dmg = Damage(path, int(P[row]), f.start_offset + int(P[row]), "PROPERTIES",
                     f"unparseable property block: {_PROP_PROBLEMS[problem]} at byte {at} of the block "
                     f"(file position {int(pst[row]) + at})")
        limit = row
    crc = None
    if check_crc or body:
        bst = np.ascontiguousarray((P + s["o_body"])[:limit])
        bln = np.ascontiguousarray(s["body_len"][:limit])
    if check_crc and limit:
        crc = np.empty(limit, np.uint32)
        _records.crc32_spans(U, bst, bln, crc)
        good = (bln == 0) | ((crc & 0x7FFFFFFF).astype(np.int64) == H["body_crc"][:limit].astype(np.int64))
        if not good.all():
            r = int(np.argmin(good))
            dmg = Damage(path, int(P[r]), f.start_offset + int(P[r]), "BODYCRC",
                         f"BODYCRC {int(H['body_crc'][r])} but CRC32(body) & 0x7FFFFFFF = {int(crc[r]) & 0x7FFFFFFF}")
            limit = r
    P, H = P[:limit], H[:limit]
    s = {key: (v[:limit] if isinstance(v, np.ndarray) else v) for key, v in s.items()}
    vs, vl = vs.reshape(-1, k)[:limit], vl.reshape(-1, k)[:limit]
    cols: dict[str, Any] = {}
    cols["topic"] = _text_column(*_spans_bytes(U, P + s["o_topic"], s["topic_len"]), dictionary=True)
    for name in ("queue_id", "flag", "queue_offset", "phy_offset", "sys_flag", "born_timestamp"):
        cols[name] = H[name].astype(H.dtype[name].newbyteorder("="))

    def host(o_ip, width_arr, v6_flag):
        out = np.empty(limit, dtype=object)
        for w in (_IPV4, _IPV6):
            rows = np.flatnonzero(width_arr == w)
            if len(rows):
                st = P[rows] + o_ip[rows] if isinstance(o_ip, np.ndarray) else P[rows] + o_ip
                ip = U[st[:, None] + np.arange(w, dtype=np.int64)]
                port = _gather(U, st + w, 4, ">i4")
                out[rows] = _format_hosts(ip, port)
        return out

    cols["born_host"] = host(HEAD.size, s["bw"], BORNHOST_V6_FLAG)
    cols["store_timestamp"] = _gather(U, P + s["o_st"], 8, ">i8")
    cols["store_host"] = host(s["o_sh"], s["sw"], STOREHOSTADDRESS_V6_FLAG)
    cols["reconsume_times"] = _gather(U, P + s["o_tail"], 4, ">i4")
    cols["prepared_transaction_offset"] = _gather(U, P + s["o_tail"] + TAIL.offset("prepared_transaction_offset"), 8, ">i8")
    if body:
        cols["body"] = _text_column(*_spans_bytes(U, P + s["o_body"], s["body_len"]), binary=True)
    cols["properties"] = _text_column(*_spans_bytes(U, P + s["o_props"], s["plen"]))
    for j, name in enumerate(("keys", "uniq_key", "tags")):
        valid = vs[:, j] >= 0
        cols[name] = _text_column(*_spans_bytes(U, np.where(valid, vs[:, j], 0), np.where(valid, vl[:, j], 0)),
                                  valid=valid, dictionary=name == "tags")
    dvalid = vs[:, 3] >= 0
    delay = np.zeros(limit, np.int32)
    if dvalid.any():
        import pandas as pd

        txt = _text_column(*_spans_bytes(U, vs[dvalid, 3], vl[dvalid, 3]))
        delay[dvalid] = pd.to_numeric(pd.Series(txt, dtype=object), errors="coerce").fillna(0) \
            .clip(-2**31, 2**31 - 1).astype(np.int32).to_numpy()
    cols["delay_level"] = delay
    cols["total_size"] = H["total_size"].astype(np.int32)
    cols["version"] = s["version"].astype(np.int8)
    cols["body_crc"] = H["body_crc"].astype(np.int32)
    if check_crc:
        cols["crc_ok"] = np.ones(limit, bool)
    return cols, dmg, P


def _scan_file(buf, f: StoreFile, *, last: bool, check_crc: bool, report: ReadReport, on_error: str,
               body: bool = False, start: int = 0):
    """Walk one mapped file in C from byte `start` (a record boundary), check and (optionally)
    decode its records. Returns (columns or None, end phy offset, positions, damage)."""
    U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
    raw_pos, stop_pos, code = _records.walk(buf, start, len(buf), -1)
    P = np.frombuffer(raw_pos, np.int64)
    cols, dmg, P = _decode_positions(U, P, f, body=body, check_crc=check_crc)
    if dmg is not None:
        size = int(BLANK.unpack_from(buf, dmg.offset).total_size)
        d2 = _classify_stop(buf, f, dmg.offset, -1, dmg.field, dmg.reason, last, dmg.offset + size)
        end, code = dmg.offset, -1
    else:
        stop = _check_head(buf, stop_pos, len(buf)) if stop_pos < len(buf) else None
        if stop is None and stop_pos < len(buf):
            # A whole record where the walk saw none: a writer appended it since (the map is
            # live). What was read is a consistent prefix that ends here, not damage.
            d2 = None
        else:
            fld, reason = (stop[1], stop[2]) if stop else ("", "")
            d2 = _classify_stop(buf, f, stop_pos, code, fld, reason, last, None)
        end = stop_pos
    _record(report, d2, on_error)
    return cols, f.start_offset + end, code, d2


def _frame(parts: list[dict], body: bool, check_crc: bool):
    import pandas as pd

    names = [c for c in COLUMNS if body or c != "body"] + (["crc_ok"] if check_crc else [])
    if not parts:
        empty = {c: np.empty(0, dtype=object if c in ("topic", "born_host", "store_host", "body", "properties",
                                                      "keys", "uniq_key", "tags") else
                            (bool if c == "crc_ok" else np.int64)) for c in names}
        return pd.DataFrame(empty, columns=names)
    data = {c: (parts[0][c] if len(parts) == 1 else np.concatenate([p[c] for p in parts])) for c in names}
    return pd.DataFrame(data, columns=names)


def read_columns(path_or_dir: str | os.PathLike, *, body: bool = True, check_crc: bool = False,
                 on_error: Literal["raise", "report"] = "raise", start_offset: int = 0):
    """Every message of a CommitLog file or ``commitlog/`` folder as a pandas DataFrame, one row a
    message in offset order, columns :data:`COLUMNS` (``crc_ok`` added when `check_crc`; ``body``
    left out when `body` is False).

    Built on ``rmqlab._records.walk`` (the TOTALSIZE chain in C) and NumPy gathers of every field
    (no Python loop per message); text columns go through pyarrow. The :class:`ReadReport`
    (damage, torn tail, end offset) is ``df.attrs["report"]``. Cost: a few million messages/s
    (see benchmarks/bench_commitlog.py); memory about twice the decoded columns.

    `start_offset` (a CommitLog offset where a record starts, e.g. where the last dispatch
    stopped) skips the files that end before it and starts the walk inside the one holding it.
    """
    if on_error not in ("raise", "report"):
        raise ValueError(f"on_error must be 'raise' or 'report', got {on_error!r}")
    if start_offset < 0:
        raise ValueError(f"start_offset must be >= 0, got {start_offset}")
    files = store_files(path_or_dir)
    kept = [f for f in files if f.start_offset + f.size > start_offset]
    files = kept if kept else files[-1:]
    report = ReadReport()
    parts = []
    gc_was = gc.isenabled()
    gc.disable()   # millions of new str/bytes objects, no cycles: skip the collector's passes
    try:
        df = _read_files(files, report, parts, body, check_crc, on_error, start_offset)
    finally:
        if gc_was:
            gc.enable()
    return df


def _read_files(files, report, parts, body, check_crc, on_error, start_offset=0):
    for i, f in enumerate(files):
        report.files.append(os.fspath(f.path))
        with _Mapped(f.path) as buf:
            start = min(max(start_offset - f.start_offset, 0), len(buf))
            cols, end, code, _ = _scan_file(buf, f, last=i == len(files) - 1, check_crc=check_crc,
                                            report=report, on_error=on_error, body=body, start=start)
        report.messages += len(cols["topic"])
        if len(cols["topic"]):
            parts.append(cols)
        if i == len(files) - 1:
            report.end_phy_offset = f.start_offset + f.size if code == STOP_BLANK else end
    df = _frame(parts, body, check_crc)
    df.attrs["report"] = report
    return df


def read_at(path_or_dir: str | os.PathLike, phy_offsets: Sequence[int], *, body: bool = True,
            check_crc: bool = False):
    """The messages at many CommitLog offsets (any order, repeats allowed) as a DataFrame with
    the :data:`COLUMNS` of :func:`read_columns`, row i for ``phy_offsets[i]``.

    Each offset's file is found by a binary search of the file start offsets; records are
    checked as by the walk and decoded with the same NumPy gathers, one pass per file touched.
    An offset that is not the start of a valid message raises FormatError / TruncatedFileError
    (path, position in the file, field); an offset outside every file raises ValueError.
    """
    offs = np.asarray(phy_offsets, dtype=np.int64).reshape(-1)
    files = store_files(path_or_dir)
    starts = np.array([f.start_offset for f in files], np.int64)
    which = np.searchsorted(starts, offs, side="right") - 1
    sizes = np.array([f.size for f in files], np.int64)
    out_of = (which < 0) | (offs - starts[np.maximum(which, 0)] >= sizes[np.maximum(which, 0)]) if len(files) \
        else np.ones(len(offs), bool)
    if out_of.any():
        raise ValueError(f"phy offset {int(offs[np.argmax(out_of)])} is in no file of {path_or_dir}")
    order = np.argsort(which, kind="stable")
    parts, rows = [], []
    for fi in np.unique(which):
        f = files[int(fi)]
        sel = order[which[order] == fi]
        P = offs[sel] - f.start_offset
        with _Mapped(f.path) as buf:
            U = np.frombuffer(buf, np.uint8)
            n = len(buf)
            tot = _gather(U, P, 4, ">i4").astype(np.int64)
            mag = _gather(U, P + 4, 4, ">i4").astype(np.int64)
            left = n - P
            bad = (left < 8) | ((mag != MAGIC_V1) & (mag != MAGIC_V2)) | (tot > left) | (tot < MIN_MESSAGE_SIZE)
            if bad.any():
                p = int(P[np.argmax(bad)])
                read_message(f.path, p)   # raises the pure model's typed error for this record
            cols, dmg, _ = _decode_positions(U, P, f, body=body, check_crc=check_crc)
        if dmg is not None:
            raise dmg.error()
        parts.append(cols)
        rows.append(sel)
    df = _frame(parts, body, check_crc)
    if rows:
        inv = np.empty(len(offs), np.int64)
        inv[np.concatenate(rows)] = np.arange(len(offs))
        df = df.iloc[inv].reset_index(drop=True)
    return df


# -------------------------------------------------------------------------------- encoding


def _crc_digits(crc: int) -> bytes:
    """``MessageDecoder.createCrc32``: ten digits, least significant first, '0'-padded."""
    out = bytearray()
    for _ in range(10):
        out.append(0x30 + (crc % 10 if crc > 0 else 0))
        crc = crc // 10 if crc > 0 else crc
    return bytes(out)


def prop_crc_value(block: bytes) -> int | None:
    """The CRC a ``__CRC32#`` property holds (digits read back least significant first), or None."""
    i = block.rfind(b"__CRC32#\x01")
    if i < 0:
        return None
    digits = block[i + 9:i + 19]
    v = 0
    for ch in reversed(digits):
        v = v * 10 + (ch - 0x30)
    return v


def _strip_prop_crc(block: bytes) -> bytes:
    pairs = block.split(b"\x02")
    tail = pairs.pop() if pairs else b""
    kept = [p for p in pairs if not p.startswith(b"__CRC32#\x01")]
    return b"".join(p + b"\x02" for p in kept) + tail


def encode_message(*, topic: str, body: bytes = b"", queue_id: int = 0, flag: int = 0,
                   queue_offset: int = 0, phy_offset: int = 0, sys_flag: int = 0,
                   born_timestamp: int = 0, born_host: Any = "127.0.0.1:0", store_timestamp: int = 0,
                   store_host: Any = "127.0.0.1:0", reconsume_times: int = 0,
                   prepared_transaction_offset: int = 0,
                   properties: dict[str, str] | str | bytes | None = None, version: int | None = None,
                   body_crc: int | None = None, append_prop_crc: bool = False) -> bytes:
    """The bytes of one message record, as ``MessageExtEncoder`` + ``doAppend`` write them.

    `version` None picks v2 when the topic is longer than 127 bytes (else v1). SYSFLAG's IPv6
    bits 0x10 / 0x20 are set from the hosts' address family (an IPv4 host with the bit set is a
    ValueError). `body_crc` None computes ``CRC32(body) & 0x7FFFFFFF``; the body is written as
    given (compressed bodies included). `properties` is a dict (written in its order) or an
    already serialised block. `append_prop_crc` mirrors ``enabledAppendPropCRC``. Cost: O(size).

    >>> rec = encode_message(topic="T", body=b"x", properties={"KEYS": "k"})
    >>> len(rec), read_message(rec, 0).keys
    (100, 'k')
    """
    topic_b = _encode_text(topic)
    body = bytes(body)
    born_ip, born_port = parse_host(born_host)
    store_ip, store_port = parse_host(store_host)
    for ip, bit, name in ((born_ip, BORNHOST_V6_FLAG, "born"), (store_ip, STOREHOSTADDRESS_V6_FLAG, "store")):
        if len(ip) == _IPV6:
            sys_flag |= bit
        elif sys_flag & bit:
            raise ValueError(f"sys_flag has the IPv6 {name}-host bit 0x{bit:X} but {name}_host is IPv4")
    if version is None:
        version = 2 if len(topic_b) > 127 else 1
    if version not in (1, 2):
        raise ValueError(f"version is 1 or 2, got {version!r}")
    if len(topic_b) > (127 if version == 1 else 32767):
        raise ValueError(f"topic of {len(topic_b)} bytes does not fit a v{version} TOPICLEN")
    props = properties_block(properties)
    if append_prop_crc:
        props = _strip_prop_crc(props)
        if props and not props.endswith(b"\x02"):
            props += b"\x02"
        props += b"\x00" * CRC32_RESERVED_LEN
    if len(props) > 32767:
        raise ValueError(f"properties of {len(props)} bytes exceed Short.MAX_VALUE")
    total = message_length(len(body), len(topic_b), len(props), sys_flag, version)
    crc = _body_crc(body) if body_crc is None else body_crc
    parts = [
        HEAD.pack(total, MAGIC_V1 if version == 1 else MAGIC_V2, crc, queue_id, flag, queue_offset,
                  phy_offset, sys_flag, born_timestamp),
        born_ip, PORT.pack(born_port), STORE_TIME.pack(store_timestamp), store_ip, PORT.pack(store_port),
        TAIL.pack(reconsume_times, prepared_transaction_offset, len(body)), body,
        (TOPIC_LEN_V1 if version == 1 else TOPIC_LEN_V2).pack(len(topic_b)), topic_b,
        PROPERTIES_LEN.pack(len(props)), props,
    ]
    rec = b"".join(parts)
    if append_prop_crc:
        head = rec[:-CRC32_RESERVED_LEN]
        rec = head + (PROPERTY_CRC32.encode() + b"\x01" + _crc_digits(_body_crc(head)) + b"\x02")
    return rec


def blank_record(remaining: int) -> bytes:
    """The 8 bytes the broker writes when a message does not fit the `remaining` bytes of a file."""
    return BLANK.pack(remaining, MAGIC_BLANK)


@dataclass
class EncodedFile:
    """Bytes for one CommitLog file: `data` goes at byte `position` of the file named
    `start_offset` (position > 0 only when a batch starts inside a file)."""

    start_offset: int
    position: int
    data: np.ndarray   # uint8
    full: bool = False  # ends with the end-of-file blank record

    @property
    def name(self) -> str:
        return f"{self.start_offset:020d}"


@dataclass
class EncodedBatch:
    """Result of :func:`encode_messages`: the files' bytes and, per message, where it went."""

    files: list[EncodedFile]
    phy_offset: np.ndarray
    queue_offset: np.ndarray
    total_size: np.ndarray
    end_offset: int                          # next write offset
    queue_table: dict[tuple[str, int], int]  # next queue offset per (topic, queue id)


def _to_table(columns):
    import pyarrow as pa

    if isinstance(columns, pa.Table):
        return columns
    if isinstance(columns, pa.RecordBatch):
        return pa.Table.from_batches([columns])
    try:
        import pandas as pd

        if isinstance(columns, pd.DataFrame):
            if columns.attrs:    # e.g. read_columns' report: not table metadata
                columns = columns.copy(deep=False)
                columns.attrs = {}
            return pa.Table.from_pandas(columns, preserve_index=False)
    except ImportError:  # pragma: no cover
        pass
    return pa.table({k: (v if isinstance(v, (pa.Array, pa.ChunkedArray, np.ndarray)) else list(v))
                     for k, v in dict(columns).items()})


def _var_column(table, name, typ, n, default: bytes = b""):
    """(data uint8, offsets int64[n+1]) of a string/binary column (zero copy when possible)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table.column_names or pa.types.is_null(table.column(name).type):
        # absent, or every value missing (Arrow gives an all-None column the null type)
        return np.frombuffer(default * n, np.uint8) if default else np.empty(0, np.uint8), \
            np.arange(n + 1, dtype=np.int64) * len(default)
    col = table.column(name)
    if col.null_count:
        col = pc.fill_null(col, pa.scalar(default.decode() if pa.types.is_string(col.type) or
                                          pa.types.is_large_string(col.type) else default, col.type))
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    arr = arr.cast(typ)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int64)[arr.offset:arr.offset + n + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return data, offsets


def _int_column(table, name, n, default=0, dtype=np.int64):
    if name not in table.column_names:
        return np.full(n, default, dtype)
    return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=dtype)


def _host_table(table, name, n):
    """(ip bytes (k, 16) left-aligned, width (k,), port (k,), code (n,)) of a host column: the k
    distinct hosts, each parsed once, and every row's index into them (all int64 but the ips)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table.column_names or pa.types.is_null(table.column(name).type):
        vals = ["127.0.0.1:0"]
        codes = np.zeros(n, np.int64)
    else:
        # Arrow factorizes in C++; going through Python str objects cost 0.35 µs a message
        col = table.column(name)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if col.null_count:
            col = pc.fill_null(col, pa.scalar("127.0.0.1:0", col.type))
        enc = pc.dictionary_encode(col)
        codes = np.ascontiguousarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        vals = enc.dictionary.to_pylist()
    parsed = [parse_host(v) for v in vals]
    ipm = np.zeros((len(parsed), 16), np.uint8)
    for i, (ip, _) in enumerate(parsed):
        ipm[i, :len(ip)] = np.frombuffer(ip, np.uint8)
    widths = np.array([len(ip) for ip, _ in parsed], np.int64)
    ports = np.array([port for _, port in parsed], np.int64)
    return ipm, widths, ports, codes


@dataclass
class _Sizes:
    """What placing and encoding a batch of messages needs from its columns."""

    var: tuple          # (data, offsets) of topic, body, properties, flattened
    born: tuple         # _host_table of born_host
    store: tuple        # _host_table of store_host
    sys_flag: np.ndarray
    version: np.ndarray
    total: np.ndarray   # TOTALSIZE of each record, bytes


def _record_sizes(table, file_size: int) -> _Sizes:
    import pyarrow as pa

    n = table.num_rows
    topic_d, topic_o = _var_column(table, "topic", pa.large_binary(), n)
    body_d, body_o = _var_column(table, "body", pa.large_binary(), n)
    prop_d, prop_o = _var_column(table, "properties", pa.large_binary(), n)
    topic_len = np.diff(topic_o)
    body_len = np.diff(body_o)
    plen = np.diff(prop_o)
    born = _host_table(table, "born_host", n)
    store = _host_table(table, "store_host", n)
    sys_flag, version, total = _check_sizes(table, n, topic_len, body_len, plen, born[1][born[3]],
                                            store[1][store[3]], file_size)
    return _Sizes((topic_d, topic_o, body_d, body_o, prop_d, prop_o), born, store, sys_flag, version, total)


def _check_sizes(table, n, topic_len, body_len, plen, bw, sw, file_size):
    """(sys_flag with the hosts' IPv6 bits, version, TOTALSIZE) of each record, after checking
    that every field fits its width; bw / sw are the host address widths (4 or 16 bytes)."""
    sys_flag = _int_column(table, "sys_flag", n)
    sys_flag = sys_flag | np.where(bw == _IPV6, BORNHOST_V6_FLAG, 0) | np.where(sw == _IPV6, STOREHOSTADDRESS_V6_FLAG, 0)
    if ((bw == _IPV4) & (sys_flag & BORNHOST_V6_FLAG != 0)).any() or \
            ((sw == _IPV4) & (sys_flag & STOREHOSTADDRESS_V6_FLAG != 0)).any():
        raise ValueError("sys_flag has an IPv6 host bit for an IPv4 host")
    version = _int_column(table, "version", n, 0)
    version = np.where(version == 0, np.where(topic_len > 127, 2, 1), version)
    if ((version != 1) & (version != 2)).any():
        raise ValueError("version is 1 or 2")
    if (topic_len > np.where(version == 1, 127, 32767)).any():
        raise ValueError("a topic does not fit its version's TOPICLEN")
    if (plen > 32767).any():
        raise ValueError("a properties block exceeds Short.MAX_VALUE bytes")
    total = MIN_MESSAGE_SIZE + (version - 1) + (bw - 4) + (sw - 4) + body_len + topic_len + plen
    if (total + END_FILE_MIN_BLANK_LENGTH > file_size).any():
        raise ValueError(f"a message of {int(total.max())} bytes does not fit a {file_size}-byte file")
    return sys_flag, version, total


def _byte_lengths(table, name, n) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table.column_names or pa.types.is_null(table.column(name).type):
        return np.zeros(n, np.int64)
    return np.asarray(pc.fill_null(pc.binary_length(table.column(name)), 0), dtype=np.int64)


def _host_widths(table, name, n) -> np.ndarray:
    """4 or 16: an IPv6 host is written "[addr]:port" (the only form with a bracket)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table.column_names or pa.types.is_null(table.column(name).type):
        return np.full(n, _IPV4, np.int64)
    v6 = np.asarray(pc.fill_null(pc.starts_with(table.column(name), "["), False), dtype=bool)
    return np.where(v6, _IPV6, _IPV4)


def record_sizes(columns, file_size: int = DEFAULT_FILE_SIZE) -> np.ndarray:
    """TOTALSIZE (bytes, int64) of each message's record, as :func:`encode_messages` would write
    it, without encoding anything. `columns` as for :func:`encode_messages`. Cost: O(messages),
    vectorized (the bodies are only measured, not read).

    >>> record_sizes({"topic": ["T"], "body": [b"x" * 10]}).tolist() == [message_length(10, 1, 0)]
    True
    """
    table = _to_table(columns)
    n = table.num_rows
    lengths = [_byte_lengths(table, name, n) for name in ("topic", "body", "properties")]
    return _check_sizes(table, n, *lengths, _host_widths(table, "born_host", n),
                        _host_widths(table, "store_host", n), file_size)[2]


def place_records(sizes: np.ndarray, start_offset: int = 0, file_size: int = DEFAULT_FILE_SIZE):
    """Where records of these `sizes` (bytes) go when appended from `start_offset`, as
    ``CommitLog.DefaultAppendMessageCallback.doAppend`` places them: a record that would leave
    fewer than 8 bytes (END_FILE_MIN_BLANK_LENGTH) in its file goes to the start of the next
    file instead, the rest of the file being one blank record.

    Returns (phy_offsets, spans, end_offset): spans are (file start, position in it, first
    row, end row, bytes used, rolled over) for each file touched. Cost: O(n) plus one binary
    search per file touched.

    >>> place_records(np.array([40, 40, 40]), 0, 100)[0].tolist()    # 40+40+8 fits, +40 does not
    [0, 40, 100]
    """
    total = np.asarray(sizes, dtype=np.int64)
    n = len(total)
    phy = np.empty(n, np.int64)
    cur = int(start_offset)
    ends = np.cumsum(total)
    i = 0
    spans = []
    while True:
        fstart = cur - cur % file_size
        pos = cur - fstart
        base = ends[i - 1] if i else 0
        # message j fits when pos + (ends[j] - base) + 8 <= file_size
        j = int(np.searchsorted(ends, file_size - END_FILE_MIN_BLANK_LENGTH - pos + base, side="right"))
        j = max(j, i)
        phy[i:j] = fstart + pos + (np.concatenate([[base], ends[i:j - 1]]) - base if j > i else 0)
        used = pos + int(ends[j - 1] - base) if j > i else pos
        full = j < n
        if j > i or full:
            spans.append((fstart, pos, i, j, used, full))
        i = j
        if not full:
            cur = fstart + used
            break
        cur = fstart + file_size
    return phy, spans, cur


def encode_messages(columns, start_offset: int = 0, file_size: int = DEFAULT_FILE_SIZE, *,
                    queue_table: dict[tuple[str, int], int] | None = None, row_base: int = 0,
                    prior_phy_offsets: np.ndarray | None = None) -> EncodedBatch:
    """Lay many messages out into CommitLog files, vectorized (NumPy placement, one C pass writing records and CRCs).

    `columns`: a pyarrow Table, pandas DataFrame or dict of sequences with the names of
    :data:`COLUMNS` (``topic`` required; others default to 0 / empty / ``127.0.0.1:0``; hosts'
    IPv6 bits are OR-ed into sys_flag). Messages go one after another from `start_offset`;
    when ``msgLen + 8`` exceeds the bytes left in a file, an 8-byte blank record (TOTALSIZE =
    bytes left) ends it and the message starts the next file (offset = next multiple of
    `file_size`). ``queue_offset`` is taken when given, else assigned as
    :func:`rmqlab.dispatch.assign_queue_offsets` (from `queue_table`). ``prepared_index`` (row of the half
    message, -1 none; rows below `row_base` are looked up in `prior_phy_offsets`) sets
    ``prepared_transaction_offset`` to that row's phy offset. ``version`` defaults to v2 only
    for topics over 127 bytes. Cost: O(total bytes), about a million small messages/s.
    """
    table = _to_table(columns)
    n = table.num_rows
    sizes = _record_sizes(table, file_size)
    topic_d, topic_o, body_d, body_o, prop_d, prop_o = sizes.var
    b_ip, b_w, b_port, b_code = sizes.born
    s_ip, s_w, s_port, s_code = sizes.store
    sys_flag, version, total = sizes.sys_flag, sizes.version, sizes.total
    phy, spans, end_offset = place_records(total, start_offset, file_size)
    files: list[EncodedFile] = []

    # ---- queue offsets and prepared offsets
    topics_obj = None
    if "queue_offset" in table.column_names:
        qoff = _int_column(table, "queue_offset", n)
        qtable = dict(queue_table or {})
    else:
        topics_obj = table.column("topic").to_numpy(zero_copy_only=False)
        qoff, qtable = assign_queue_offsets(topics_obj, _int_column(table, "queue_id", n), sys_flag, queue_table)
    pto = _int_column(table, "prepared_transaction_offset", n)
    if "prepared_index" in table.column_names:
        pidx = _int_column(table, "prepared_index", n)
        has = pidx >= 0
        local = has & (pidx >= row_base)
        pto[local] = phy[pidx[local] - row_base]
        prior = has & (pidx < row_base)
        if prior.any():
            if prior_phy_offsets is None:
                raise ValueError("prepared_index refers to rows before this batch but no prior_phy_offsets")
            pto[prior] = np.asarray(prior_phy_offsets)[pidx[prior]]

    def col(x):
        return np.ascontiguousarray(x, dtype=np.int64)

    # per-row int64 columns for the C record writer, in its argument order (BODYCRC is computed there)
    rows_cols = [col(c) for c in (
        total, version, _int_column(table, "queue_id", n), _int_column(table, "flag", n), qoff, phy,
        sys_flag, _int_column(table, "born_timestamp", n), b_code, _int_column(table, "store_timestamp", n),
        s_code, _int_column(table, "reconsume_times", n), pto)]
    hosts = (np.ascontiguousarray(b_ip), b_w, b_port, np.ascontiguousarray(s_ip), s_w, s_port)
    topic_o, body_o, prop_o = col(topic_o), col(body_o), col(prop_o)

    for fstart, pos, a, b, used, full in spans:
        size = used - pos + (END_FILE_MIN_BLANK_LENGTH if full else 0)
        # every byte gets written: the records lie back to back from 0, the blank record after them
        D = np.empty(size, np.uint8)
        d = phy[a:b] - (fstart + pos)
        _records.encode_records(D, d, *[c[a:b] for c in rows_cols], *hosts,
                                body_d, body_o[a:b + 1], topic_d, topic_o[a:b + 1], prop_d, prop_o[a:b + 1])
        if full:
            D[used - pos:] = np.frombuffer(blank_record(file_size - used), np.uint8)
        files.append(EncodedFile(fstart, pos, D, full))
    return EncodedBatch(files, phy, qoff, total.astype(np.int32), end_offset, qtable)


class CommitLogWriter:
    """Append messages to a ``commitlog/`` folder as a broker does.

    New files are created at their full `file_size` (zeros, like the broker's preallocated
    mapped files) and named by their start offset. Existing bytes are never rewritten: opening
    an existing folder walks its last file and resumes after its last message (or in the next
    file when it ends with the blank record); the queue-offset table is rebuilt from the
    messages already stored (or given as `queue_table`). Use as a context manager.
    """

    def __init__(self, directory: str | os.PathLike, file_size: int = DEFAULT_FILE_SIZE, *,
                 start_offset: int = 0, queue_table: dict[tuple[str, int], int] | None = None):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.file_size = int(file_size)
        files = store_files(self.dir)
        self.rows_written = 0
        self._phy_parts: list[np.ndarray] = []
        if files:
            df = read_columns(self.dir, body=False, on_error="report")
            rep: ReadReport = df.attrs["report"]
            if rep.torn_tail is not None or (rep.damage and rep.damage[-1].path == os.fspath(files[-1].path)):
                bad = rep.torn_tail or rep.damage[-1]
                raise FormatError("the last file ends in a torn or damaged record; appending would rewrite "
                                  "its bytes (a broker truncates it at recovery): " + bad.reason,
                                  path=bad.path, offset=bad.offset, field=bad.field)
            self.offset = int(rep.end_phy_offset)
            if queue_table is None:
                queue_table = next_queue_offsets(df["topic"].to_numpy(object), df["queue_id"].to_numpy(),
                                                 df["sys_flag"].to_numpy(), df["queue_offset"].to_numpy())
        else:
            self.offset = int(start_offset)
        self.queue_table = dict(queue_table or {})

    def _path(self, start: int) -> Path:
        return self.dir / f"{start:020d}"

    def append(self, columns) -> EncodedBatch:
        """Encode and write a batch (see :func:`encode_messages`); ``prepared_index`` counts rows
        from the writer's first append."""
        prior = np.concatenate(self._phy_parts) if self._phy_parts else np.empty(0, np.int64)
        batch = encode_messages(columns, self.offset, self.file_size, queue_table=self.queue_table,
                                row_base=self.rows_written, prior_phy_offsets=prior)
        for ef in batch.files:
            p = self._path(ef.start_offset)
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if os.fstat(fd).st_size < self.file_size:
                    os.ftruncate(fd, self.file_size)
                os.pwrite(fd, memoryview(ef.data), ef.position)
            finally:
                os.close(fd)
        self.offset = batch.end_offset
        self.queue_table = batch.queue_table
        self.rows_written += len(batch.phy_offset)
        self._phy_parts.append(batch.phy_offset)
        return batch

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
