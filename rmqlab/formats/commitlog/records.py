"""One record at a time: the message model (:class:`Message`, what a read reports), property
blocks, and the readable models of the checks the C reader runs: the walk (:func:`walk_py`,
:func:`check_head`), the property pairs (:func:`property_problem`, :func:`parse_properties`)
and what a stop means (:func:`classify_stop`). The records themselves are decoded by
:mod:`rmqlab.formats.commitlog.columns` (``read_message``, ``iter_messages`` and the columnar
reads)."""
from __future__ import annotations

import codecs
import os
import zlib
from dataclasses import dataclass, field
from dataclasses import fields as dc_fields
from typing import Any

import numpy as np

from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.formats.commitlog.files import StoreFile
from rmqlab.formats.commitlog.layout import (
    BLANK,
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    CRC32_RESERVED_LEN,
    HEAD,
    IPV4_SIZE,
    IPV6_SIZE,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    MIN_MESSAGE_SIZE,
    PORT,
    PROP_EMPTY_NAME,
    PROP_EMPTY_PAIR,
    PROP_NO_SEPARATOR,
    PROPERTIES_LEN,
    PROPERTY_CRC32,
    STOP_BLANK,
    STOP_BLANK_SIZE,
    STOP_END,
    STOP_LIMIT,
    STOP_MAGIC,
    STOP_PAST_END,
    STOP_SHORT,
    STOP_TOO_SMALL,
    STORE_TIME,
    STOREHOSTADDRESS_V6_FLAG,
    TAIL,
    TOPIC_LEN_V1,
    TOPIC_LEN_V2,
    WALK_STOPS,
)
from rmqlab.formats.msgid import offset_msg_id
from rmqlab.rules.dispatch import transaction_type
from rmqlab.rules.properties import property_pairs
from rmqlab.tables.spans import data_spans


def compute_body_crc(body: bytes) -> int:
    return zlib.crc32(body) & 0x7FFFFFFF


def decode_text(raw: bytes) -> str:
    # surrogateescape: invalid UTF-8 survives a decode/encode round trip byte for byte
    return raw.decode("utf-8", "surrogateescape")


def encode_text(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _java_utf8_replace(err: UnicodeError) -> tuple[str | bytes, int]:
    """The replacement Java's UTF-8 decoder makes (sun.nio.cs.UTF_8, the String(bytes) path):
    one U+FFFD per maximal ill-formed subsequence, as Python's "replace", except that an
    encoded surrogate (ED A0..BF with its continuation) is one unit, not three."""
    if not isinstance(err, UnicodeDecodeError):
        raise err
    raw, at = err.object, err.start
    if raw[at] == 0xED and at + 1 < len(raw) and 0xA0 <= raw[at + 1] <= 0xBF:
        return "\ufffd", at + (3 if at + 2 < len(raw) and 0x80 <= raw[at + 2] <= 0xBF else 2)
    return "\ufffd", err.end


codecs.register_error("rmqlab-java-utf8", _java_utf8_replace)


def broker_string(text):
    """The String the broker makes of the bytes `text` was read from (:func:`decode_text`):
    Java's ``new String(bytes, UTF_8)`` puts U+FFFD where the bytes are not UTF-8 (one per
    maximal ill-formed subsequence, an encoded surrogate counting as one).
    CommitLog.checkMessageAndReturnSize decodes the topic and the properties so before it names
    queues and hashes TAGS and keys. Anything not a str is returned as it is. Cost: O(len).

    >>> broker_string(decode_text(b"k\\xff\\xed\\xa0\\x80")) == "k\\ufffd\\ufffd", broker_string(None)
    (True, None)

    The bytes themselves (what Arrow keeps of text that is not UTF-8) are decoded the same way:

    >>> broker_string(b"k\\xff\\xed\\xa0\\x80") == "k\\ufffd\\ufffd"
    True
    """
    if isinstance(text, bytes):
        return text.decode("utf-8", "rmqlab-java-utf8")
    if not isinstance(text, str):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "rmqlab-java-utf8")


def broker_strings(values, *, raw: bool = False):
    """:func:`broker_string` of every element of an object array of str (None and NaN kept);
    with `raw` the elements are the bytes as read (an Arrow binary column). Cost: one C pass
    (pyarrow's UTF-8 encode) when the text is all UTF-8, the usual case, and then the array
    itself is returned; else, and with `raw`, a Python loop over it (text that is not UTF-8)."""
    if raw:
        return np.frompyfunc(broker_string, 1, 1)(np.asarray(values, dtype=object)).astype(object)
    return broker_strings_arrow(values)[0]


def broker_strings_arrow(values):
    """:func:`broker_strings` of an object array of str (None and NaN kept), with the same text
    as a pyarrow large_string array (null for None and NaN), or None for values that are not
    text: the one Arrow copy that tests the text for UTF-8 also serves the callers' Arrow
    kernels. Cost: one C pass (pyarrow's UTF-8 encode) when the text is all UTF-8; else
    broker_strings' Python loop and a second pass.

    >>> objects, arrow = broker_strings_arrow(np.array(["a", None, "k\\udcff"], dtype=object))
    >>> objects.tolist() == ["a", None, "k\\ufffd"], arrow.to_pylist() == ["a", None, "k\\ufffd"]
    (True, True)
    """
    import pyarrow as pa

    values = np.asarray(values, dtype=object)
    try:
        return values, pa.array(values, type=pa.large_string(), from_pandas=True)
    except UnicodeEncodeError:
        values = np.frompyfunc(broker_string, 1, 1)(values).astype(object)
        return values, pa.array(values, type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):    # not text at all: nothing to decode
        return values, None


def broker_strings_of_arrow(values):
    """:func:`broker_strings` of a text column as the reader gives it in Arrow (large_string; or
    large_binary, the bytes as read, when some are not UTF-8), as a large_string array. Cost:
    none when the column is text (the array itself); else a Python loop over its values.

    >>> import pyarrow as pa
    >>> broker_strings_of_arrow(pa.array([b"k\\xff", None, b"a"], pa.large_binary())).to_pylist()
    ['k\ufffd', None, 'a']
    """
    import pyarrow as pa

    if not (pa.types.is_large_binary(values.type) or pa.types.is_binary(values.type)):
        return values
    return pa.array([broker_string(v) for v in values.to_pylist()], type=pa.large_string())


def broker_strings_of_dictionary(column):
    """:func:`broker_strings` of a dictionary-encoded text column as the reader gives it (a
    pyarrow DictionaryArray of large_string values, or large_binary ones when some are not
    UTF-8): (an object array of str, None for a null, one Python str a distinct value; the
    same column as a DictionaryArray of large_string values). Distinct byte strings that are
    not UTF-8 may read as the same String (U+FFFD each): the dictionary then repeats it, as
    the objects do. Cost: the distinct values' conversion, and a gather a row.

    >>> import pyarrow as pa
    >>> col = pa.array([b"k\\xff", None, b"a", b"k\\xfe"], pa.large_binary()).dictionary_encode()
    >>> objects, arrow = broker_strings_of_dictionary(col)
    >>> objects.tolist(), arrow.to_pylist(), str(arrow.type.value_type)
    (['k�', None, 'a', 'k�'], ['k�', None, 'a', 'k�'], 'large_string')
    """
    import pyarrow as pa

    values = broker_strings_of_arrow(column.dictionary)
    if not pa.types.is_large_string(values.type):
        values = values.cast(pa.large_string())
    distinct = np.empty(len(values) + 1, dtype=object)      # the last: a null's
    distinct[:-1] = values.to_pylist()
    indices = column.indices.to_numpy(zero_copy_only=False) if not column.null_count else \
        column.indices.fill_null(len(values)).to_numpy(zero_copy_only=False)
    return distinct[indices], pa.DictionaryArray.from_arrays(column.indices, values)


def property_problem(raw: bytes) -> tuple[int, int] | None:
    """(offset inside the block, problem code of :data:`PROPERTY_PROBLEMS`) of the first
    malformed pair, or None. The readable model of rmqlab._records.find_props' checks."""
    at = 0
    for pair in property_pairs(raw):
        if not pair:
            return at, PROP_EMPTY_PAIR
        kv = pair.find(b"\x01")
        if kv < 0:
            return at, PROP_NO_SEPARATOR
        if kv == 0:
            return at, PROP_EMPTY_NAME
        at += len(pair) + 1
    return None


def prop_crc_expected(value: str) -> int:
    """The CRC a ``__CRC32#`` value stands for, read as the broker reads it
    (``CommitLog.checkMessageAndReturnSize``): digits least significant first, each char minus
    '0', in Java int arithmetic (wrapping at 32 bits). The broker accepts a record only when this
    is > 0 and equals ``CRC32(record bytes before the last 20) & 0x7FFFFFFF``.

    >>> prop_crc_expected("3210000000")
    123
    """
    x = 0
    for ch in reversed(value):
        x = (x * 10 + ord(ch) - 0x30 + (1 << 31)) % (1 << 32) - (1 << 31)
    return x


def prop_crc_matches(record: bytes, properties: dict[str, str]) -> bool | None:
    """None when `properties` has no ``__CRC32#``; else whether the broker's check passes: the
    value read by :func:`prop_crc_expected` is > 0 and equals ``CRC32(record[:-20]) &
    0x7FFFFFFF`` (the bytes before the reserved CRC32_RESERVED_LEN, wherever the pair sits).
    Cost: one CRC32 of the record.

    >>> from rmqlab.formats.commitlog import encode_message, read_message
    >>> rec = encode_message(topic="T", properties={"KEYS": "k"}, append_prop_crc=True)
    >>> prop_crc_matches(rec, read_message(rec, 0).properties)
    True
    """
    value = properties.get(PROPERTY_CRC32)
    if value is None:
        return None
    expected = prop_crc_expected(value)
    return expected > 0 and compute_body_crc(bytes(record[:len(record) - CRC32_RESERVED_LEN])) == expected


def parse_properties(raw: bytes) -> dict[str, str]:
    """A PROPERTIES block -> dict, as ``MessageDecoder.string2messageProperties``.

    Pairs are split on ``\\x02``, each on its first ``\\x01``; a later pair of the same name
    replaces an earlier one and pairs with an empty value are skipped (as Java's HashMap puts).
    The last pair may end without its ``\\x02``, as brokers 4.9.1 to 5.1.x write it. A malformed
    pair (empty, without ``\\x01``, or with an empty name) is skipped, as Java skips it: a 5.2.0
    broker multi-dispatching a message leaves the tail of an earlier block after the new one,
    and reads it back this way (:func:`property_problem` names the first such pair). Cost:
    O(len(raw)).

    >>> parse_properties(b"KEYS\\x01a b\\x02TAGS\\x01t\\x02")
    {'KEYS': 'a b', 'TAGS': 't'}
    >>> parse_properties(b"KEYS\\x01a b\\x02TAGS\\x01t")     # a 4.9.1 to 5.1.x broker's block
    {'KEYS': 'a b', 'TAGS': 't'}
    >>> parse_properties(b"TAGS\\x01t\\x02r-5 shared\\x02WAIT\\x01true")   # what the 5.2.0 broker left
    {'TAGS': 't', 'WAIT': 'true'}
    """
    out: dict[str, str] = {}
    for pair in property_pairs(raw):
        name, _, value = pair.partition(b"\x01")
        if name and value:
            out[decode_text(name)] = decode_text(value)
    return out


def properties_block(properties: dict[str, str] | str | bytes | None) -> bytes:
    """dict -> ``name\\x01value\\x02``... in the dict's order (``messageProperties2String``);
    str / bytes are taken as an already-serialised block. None -> empty."""
    if properties is None:
        return b""
    if isinstance(properties, (bytes, bytearray, memoryview)):
        return bytes(properties)
    if isinstance(properties, str):
        return encode_text(properties)
    return b"".join(encode_text(str(k)) + b"\x01" + encode_text(str(v)) + b"\x02"
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
        return not self.body or compute_body_crc(self.body) == self.body_crc

    @property
    def prop_crc_ok(self) -> bool | None:
        """None without a ``__CRC32#`` property (5.2+ enabledAppendPropCRC), else whether it
        matches the record's bytes (:func:`prop_crc_matches`)."""
        return prop_crc_matches(self.encode(), self.properties)

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

    def field_spans(self) -> list[tuple[str, int, int]]:
        """Where each field of the record lies: (name as in MessageDecoder's comments, byte
        offset from the record's start, size in bytes), in record order, the variable parts
        (hosts, BODY, TOPIC, PROPERTIES) sized from this record. The sizes add up to
        TOTALSIZE. Cost: O(fields).

        >>> from rmqlab.formats.commitlog import encode_message, read_message
        >>> m = read_message(encode_message(topic="T", body=b"hi", properties={"KEYS": "k"}), 0)
        >>> [s for s in m.field_spans() if s[0] in ("BORNHOST", "BODY", "TOPIC", "PROPERTIES")]
        [('BORNHOST', 48, 4), ('BODY', 88, 2), ('TOPIC', 91, 1), ('PROPERTIES', 94, 7)]
        >>> sum(size for _, _, size in m.field_spans()) == m.total_size
        True
        """
        born_ip = IPV6_SIZE if self.sys_flag & BORNHOST_V6_FLAG else IPV4_SIZE
        store_ip = IPV6_SIZE if self.sys_flag & STOREHOSTADDRESS_V6_FLAG else IPV4_SIZE
        topic_len = TOPIC_LEN_V1 if self.version == 1 else TOPIC_LEN_V2
        parts: list[tuple[str, int]] = [(f.doc.split(":")[0], f.size) for f in HEAD.fields]
        parts += [("BORNHOST", born_ip), ("BORNHOST port", PORT.size),
                  ("STORETIMESTAMP", STORE_TIME.size), ("STOREHOST", store_ip), ("STOREHOST port", PORT.size)]
        parts += [(f.doc.split(":")[0], f.size) for f in TAIL.fields]
        parts += [("BODY", len(self.body)), ("TOPICLEN", topic_len.size),
                  ("TOPIC", len(self.topic.encode("utf-8"))),
                  ("PROPERTIESLENGTH", PROPERTIES_LEN.size), ("PROPERTIES", len(self.properties_raw))]
        spans, at = [], 0
        for name, size in parts:
            spans.append((name, at, size))
            at += size
        return spans

    def encode(self, *, keep_crc: bool = True) -> bytes:
        """The record's bytes: identical to what was read when `keep_crc` (BODYCRC as stored)."""
        from rmqlab.formats.commitlog.encode import (
            encode_message,  # encode imports this module
        )

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
    unread_from: int | None = None      # with max_bytes: phy offset of the first record not read
    unread_reason: str | None = None    # ... and what was seen there

    @property
    def ok(self) -> bool:
        return not self.damage and self.torn_tail is None

    def join(self, later: ReadReport) -> None:
        """Add the report of a read of the files after these (a worker's file): its files,
        messages and damage after these; its torn tail, end and unread point where it has one."""
        self.files += later.files
        self.messages += later.messages
        self.damage += later.damage
        for name in ("torn_tail", "end_phy_offset", "unread_from", "unread_reason"):
            if getattr(later, name) is not None:
                setattr(self, name, getattr(later, name))

    def as_dict(self) -> dict[str, Any]:
        return {"files": list(self.files), "messages": self.messages,
                "damage": [d.__dict__ for d in self.damage],
                "torn_tail": None if self.torn_tail is None else self.torn_tail.__dict__,
                "end_phy_offset": self.end_phy_offset, "unread_from": self.unread_from}


# ---------------------------------------------------------------- pure-Python record model


def walk_py(buf, start: int, end: int, max_records: int = -1) -> tuple[list[int], int, int]:
    """Pure-Python model of ``rmqlab._records.walk``: positions of the v1/v2 records on the
    TOTALSIZE chain from `start`, the stop position and the stop code (see ``WALK_STOPS``)."""
    pos: list[int] = []
    p = start
    while True:
        left = end - p
        if left == 0:
            return pos, p, STOP_END
        if 0 <= max_records <= len(pos):
            return pos, p, STOP_LIMIT
        if left < BLANK.size:
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


def decoder_reads(buf, p: int, size: int) -> bool:
    """Whether ``MessageDecoder.decode`` (common module, rocketmq-all-5.3.3; readBody true,
    deCompressBody false) returns a message, not null, for the `size` bytes at `p` of `buf` (the
    buffer ``lookMessageByOffset`` hands it, limited to TOTALSIZE). It is more lenient than this
    module's reader: MAGICCODE v1 or v2 (another throws, and decode answers null), then every
    field it reads must lie within the `size` bytes: the fixed fields, BODY only when BODYLEN > 0,
    TOPIC (a negative TOPICLEN fails), PROPERTIES only when PROPERTIESLENGTH > 0; bytes left after
    them, or a TOTALSIZE that disagrees with them, are not looked at. Cost: a few field reads.

    >>> from rmqlab.formats.commitlog import encode_message
    >>> rec = encode_message(topic="T", body=b"abc")
    >>> n = len(rec)
    >>> decoder_reads(rec, 0, n), decoder_reads(rec, 0, n - 1), decoder_reads(rec + b"xy", 0, n + 2)
    (True, False, True)
    """
    if size < HEAD.size or p < 0 or p + size > len(buf):
        return False
    head = HEAD.unpack_from(buf, p)
    if head.magic not in (MAGIC_V1, MAGIC_V2):
        return False
    at = HEAD.size + (IPV6_SIZE if head.sys_flag & BORNHOST_V6_FLAG else IPV4_SIZE) + PORT.size + STORE_TIME.size
    at += (IPV6_SIZE if head.sys_flag & STOREHOSTADDRESS_V6_FLAG else IPV4_SIZE) + PORT.size + TAIL.size
    if at > size:
        return False
    body_len = TAIL.unpack_from(buf, p + at - TAIL.size).body_len
    at += max(body_len, 0)
    topic_len_layout = TOPIC_LEN_V1 if head.magic == MAGIC_V1 else TOPIC_LEN_V2
    if at + topic_len_layout.size > size:
        return False
    topic_len = topic_len_layout.unpack_from(buf, p + at).topic_len
    at += topic_len_layout.size + topic_len
    if topic_len < 0 or at + PROPERTIES_LEN.size > size:
        return False
    properties_len = PROPERTIES_LEN.unpack_from(buf, p + at).properties_len
    return at + PROPERTIES_LEN.size + max(properties_len, 0) <= size


def check_head(buf, p: int, end: int) -> tuple[int, str, str] | None:
    """The walk's checks of the record at `p`: None when it is a message; else (stop code,
    field, reason)."""
    left = end - p
    if left < BLANK.size:
        return STOP_SHORT, "TOTALSIZE", f"{left} bytes left in the file: {WALK_STOPS[STOP_SHORT]}"
    size, magic = BLANK.unpack_from(buf, p)
    if magic == MAGIC_BLANK:
        code = STOP_BLANK if size == left else STOP_BLANK_SIZE
        return code, "TOTALSIZE", f"blank record TOTALSIZE {size}, {left} bytes left"
    if magic not in (MAGIC_V1, MAGIC_V2):
        return STOP_MAGIC, "MAGICCODE", f"MAGICCODE 0x{magic & 0xFFFFFFFF:08X}: {WALK_STOPS[STOP_MAGIC]}"
    if size > left:
        return STOP_PAST_END, "TOTALSIZE", f"TOTALSIZE {size} but {left} bytes left in the file"
    if size < MIN_MESSAGE_SIZE:
        return STOP_TOO_SMALL, "TOTALSIZE", f"TOTALSIZE {size}: {WALK_STOPS[STOP_TOO_SMALL]}"
    return None


def _tail_is_zero(buf, start: int) -> bool:
    if start >= len(buf):
        return True
    a = np.frombuffer(buf, np.uint8)[start:]
    return not a.any()


def _zero_after(buf, start: int, path) -> bool:
    """:func:`_tail_is_zero` reading only the parts of the file at `path` that hold data
    (:func:`rmqlab.tables.spans.data_spans`): a sparse preallocated tail is never read. Reads
    everything when the file system cannot tell."""
    spans = data_spans(path, start, len(buf))
    if spans is None:
        return _tail_is_zero(buf, start)
    U = np.frombuffer(buf, np.uint8) if len(buf) else np.zeros(0, np.uint8)
    return not any(U[lo:hi].any() for lo, hi in spans)


#: why a record stopped a decode that a second read finds whole: a writer was copying it into
#: the mapped file while the decode ran (the field checks and that read saw different bytes)
CHANGED_WHILE_READ = "the record changed while it was read (a write in flight)"

#: bytes of a stopped record kept to see whether a writer changes them while the stop is
#: classified: more than a record of the broker's default maxMessageSize (4 MiB) and its head
#: (a copy up to the end of a preallocated 1 GiB file cost as much memory as the file)
_IN_FLIGHT_WINDOW = 8 << 20


def classify_stop(buf, f: StoreFile, p: int, code: int, fld: str, reason: str, last: bool,
                   record_end: int | None) -> Damage | None:
    """Damage (or torn tail, or None for a clean end) for a walk that stopped at `p`."""
    if code in (STOP_END, STOP_BLANK, STOP_LIMIT):
        return None
    path = os.fspath(f.path)
    if last:
        end = len(buf) if record_end is None else min(max(record_end, p + BLANK.size), len(buf))
        end = min(end, p + _IN_FLIGHT_WINDOW)
        seen = bytes(buf[p:end])
        if _zero_after(buf, p, f.path):
            return None          # unwritten preallocated space
        if code in (STOP_SHORT, STOP_PAST_END):
            return Damage(path, p, f.start_offset + p, fld, "torn tail: " + reason, "torn-tail")
        # a write cut short in a preallocated file: the record ends in zeros and only zeros follow
        after = p + BLANK.size if record_end is None else max(record_end, p + BLANK.size)
        if _tail_is_zero(buf, after) and (record_end is None or buf[min(record_end, len(buf)) - 1] == 0):
            return Damage(path, p, f.start_offset + p, fld, "torn tail: " + reason, "torn-tail")
        # The last file of a live store is mapped while a writer appends: damage stays put, a
        # write in flight does not. Bytes that changed since the walk, or a head that now reads
        # differently, are the record being written: the end of the prefix, not damage.
        now = check_head(buf, p, len(buf)) if code >= 0 else None
        if reason == CHANGED_WHILE_READ:
            return Damage(path, p, f.start_offset + p, fld, "torn tail: " + reason, "torn-tail")
        if (code >= 0 and (now is None or now[:2] != (code, fld))) or bytes(buf[p:end]) != seen:
            return Damage(path, p, f.start_offset + p, fld, f"torn tail: {CHANGED_WHILE_READ}: {reason}", "torn-tail")
    elif code == STOP_MAGIC and _tail_is_zero(buf, p):
        reason = "zeros where the next record or the end-of-file blank should be (not the last file)"
    return Damage(path, p, f.start_offset + p, fld, reason)


def record_damage(report: ReadReport, dmg: Damage | None, on_error: str) -> None:
    if dmg is None:
        return
    if dmg.kind == "torn-tail":
        report.torn_tail = dmg
        return
    if on_error == "raise":
        raise dmg.error()
    report.damage.append(dmg)
