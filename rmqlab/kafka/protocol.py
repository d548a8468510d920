"""Kafka's message-schema primitives: a bounds-checked cursor over the bytes of one message.

Kafka describes its control records, KRaft metadata records and coordinator records
(``__consumer_offsets``, ``__transaction_state``) with JSON message schemas; the generated
classes read them with ``org.apache.kafka.common.protocol.Readable`` / ``ByteBufferAccessor``
and the ``types.Type`` encodings. This module mirrors those encodings (clients module, read at
Kafka 3.9.0):

============================  ==============================================================
``int8/16/32/64``             big-endian two's complement; ``uint16``, ``uint32`` unsigned
``uvarint``                   unsigned base-128, at most 5 bytes (``ByteUtils.readUnsignedVarint``)
``varint`` / ``varlong``      zig-zag base-128, at most 5 / 10 bytes
``string`` / ``bytes``        int16 / int32 length then the bytes; -1 is null
``compact_string/_bytes``     uvarint (length + 1) then the bytes; 0 is null (flexible versions)
``uuid``                      16 bytes, printed as Kafka's ``Uuid.toString()`` (base64 URL, no padding)
``array`` / ``compact_array`` int32 count / uvarint (count + 1), then the elements; null as above
``tagged_fields``             uvarint count, then (uvarint tag, uvarint size, bytes) each
============================  ==============================================================

A message version is *flexible* when its schema's ``flexibleVersions`` include it: it then uses
the compact forms and ends every struct with tagged fields. Every read checks the bytes left
and raises :class:`~rmqlab.errors.FormatError` (:class:`~rmqlab.errors.TruncatedFileError` when
the bytes end first) naming the file, the absolute byte offset and the field's path, e.g.
``LeaderChangeMessage.voters[0].voterId``. Counts are checked against the bytes left before
anything is allocated, so a hostile count cannot make a reader allocate or loop beyond the input.

>>> r = Reader(bytes([0, 7, 3, 0x61, 0x62, 0]), what="Demo")
>>> r.int16("version"), r.compact_string("name"), r.tagged_fields()
(7, 'ab', {})
>>> r.at_end
True
"""
from __future__ import annotations

import base64
import builtins
import os
import struct
from collections.abc import Callable
from typing import Any, TypeVar

from rmqlab.errors import FormatError, TruncatedFileError

__all__ = ["Reader", "uuid_text", "NULL_UUID"]

T = TypeVar("T")

_I8, _I16, _I32, _I64 = (struct.Struct(">" + c) for c in "bhiq")
_U16, _U32 = struct.Struct(">H"), struct.Struct(">I")
_F64 = struct.Struct(">d")

#: Kafka's Uuid.ZERO_UUID as it prints
NULL_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def uuid_text(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()`` of 16 bytes: URL-safe base64 without padding.

    >>> uuid_text(bytes(15) + b"\\x01")
    'AAAAAAAAAAAAAAAAAAAAAQ'
    """
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class Reader:
    """A cursor over one message's bytes: every read advances it and checks the bytes left.

    Units: byte offsets; ``base`` is where ``data[0]`` sits in the file, so errors name file
    offsets. Cost: O(bytes read); no read allocates more than the bytes it returns.

    >>> r = Reader(b"\\x00\\x00\\x00\\x02\\x02\\x00\\x00\\x00\\x01\\x00", path="f.log", base=100, what="Msg")
    >>> r.int32("id"), r.compact_array("voters", lambda: r.int32("voterId"))
    (2, [1])
    >>> r.int8("end"), r.at_end
    (0, True)

    Parameters: ``data`` (a bytes-like object), ``path`` (the file, for errors), ``base`` (the
    file offset of ``data[0]``), ``what`` (the message name errors start their field path with),
    ``start`` / ``end`` (the message's bounds within ``data``), ``lenient_utf8`` (decode
    malformed UTF-8 to U+FFFD as Java's ``new String(bytes, UTF_8)`` does, instead of raising).
    Raises, from every read: :class:`~rmqlab.errors.TruncatedFileError` when the bytes end
    before the field, :class:`~rmqlab.errors.FormatError` for an impossible value.
    """

    __slots__ = ("data", "pos", "end", "path", "base", "what", "lenient_utf8", "_where")

    def __init__(self, data, *, path: str | os.PathLike | None = None, base: int = 0, what: str = "",
                 start: int = 0, end: int | None = None, lenient_utf8: bool = False):
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.pos = start
        self.end = len(self.data) if end is None else end
        self.path = path
        self.base = base
        self.what = what
        self.lenient_utf8 = lenient_utf8
        self._where: list[str] = [what] if what else []

    # -- position and errors ------------------------------------------------------------

    @property
    def remaining(self) -> int:
        """Bytes left before the end of the message."""
        return self.end - self.pos

    @property
    def at_end(self) -> bool:
        return self.pos >= self.end

    @property
    def offset(self) -> int:
        """The file offset of the next byte."""
        return self.base + self.pos

    def field_path(self, name: str) -> str:
        return ".".join([*self._where, name]) if name else ".".join(self._where)

    def error(self, message: str, name: str, at: int | None = None, *, truncated: bool = False) -> FormatError:
        """A typed error about field `name` at message position `at` (default: the cursor)."""
        cls = TruncatedFileError if truncated else FormatError
        return cls(message, path=self.path, offset=self.base + (self.pos if at is None else at),
                   field=self.field_path(name))

    def _take(self, n: int, name: str) -> int:
        if n > self.end - self.pos:
            raise self.error(f"needs {n} bytes, {self.end - self.pos} left", name, truncated=True)
        p = self.pos
        self.pos = p + n
        return p

    def expect_end(self, name: str = "") -> None:
        """Raise if bytes are left (Kafka's serde refuses trailing bytes after a record)."""
        if self.pos != self.end:
            raise self.error(f"{self.end - self.pos} byte(s) left after the message", name or "end")

    # -- fixed-size --------------------------------------------------------------------

    def int8(self, name: str) -> int:
        return _I8.unpack_from(self.data, self._take(1, name))[0]

    def int16(self, name: str) -> int:
        return _I16.unpack_from(self.data, self._take(2, name))[0]

    def uint16(self, name: str) -> int:
        return _U16.unpack_from(self.data, self._take(2, name))[0]

    def int32(self, name: str) -> int:
        return _I32.unpack_from(self.data, self._take(4, name))[0]

    def uint32(self, name: str) -> int:
        return _U32.unpack_from(self.data, self._take(4, name))[0]

    def int64(self, name: str) -> int:
        return _I64.unpack_from(self.data, self._take(8, name))[0]

    def float64(self, name: str) -> float:
        """An IEEE 754 double, big-endian (Kafka's ``float64``)."""
        return _F64.unpack_from(self.data, self._take(8, name))[0]

    def boolean(self, name: str) -> bool:
        return self.int8(name) != 0

    def uuid(self, name: str) -> str:
        """16 bytes as Kafka prints a Uuid (URL-safe base64, no padding)."""
        p = self._take(16, name)
        return uuid_text(bytes(self.data[p:p + 16]))

    def raw(self, n: int, name: str) -> bytes:
        p = self._take(n, name)
        return bytes(self.data[p:p + n])

    # -- varints -------------------------------------------------------------------------

    def _base128(self, name: str, max_bytes: int) -> int:
        start = self.pos
        value = shift = 0
        for _ in range(max_bytes):
            if self.pos >= self.end:
                raise self.error("varint runs past the end of the message", name, start, truncated=True)
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise self.error(f"varint is longer than {max_bytes} bytes", name, start)

    def uvarint(self, name: str) -> int:
        """Unsigned base-128 of at most 5 bytes, as a Java int (ByteUtils.readUnsignedVarint)."""
        v = self._base128(name, 5) & 0xFFFFFFFF   # the 5th byte's high bits fall off a Java int
        return v - (1 << 32) if v >> 31 else v

    def varint(self, name: str) -> int:
        """Zig-zag base-128 of at most 5 bytes (a Java int)."""
        v = self._base128(name, 5) & 0xFFFFFFFF
        return (v >> 1) ^ -(v & 1)

    def varlong(self, name: str) -> int:
        """Zig-zag base-128 of at most 10 bytes (a Java long)."""
        v = self._base128(name, 10) & 0xFFFFFFFFFFFFFFFF
        return (v >> 1) ^ -(v & 1)

    def _compact_length(self, name: str) -> int:
        """uvarint (n + 1) as n; -1 for null."""
        start = self.pos
        n = self.uvarint(name) - 1
        if n < -1:
            raise self.error(f"compact length {n}", name, start)
        return n

    # -- strings and bytes -----------------------------------------------------------------

    def _text(self, n: int, name: str, at: int) -> str:
        p = self._take(n, name)
        if self.lenient_utf8:
            return bytes(self.data[p:p + n]).decode("utf-8", "replace")
        try:
            return bytes(self.data[p:p + n]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.error(f"not UTF-8 ({e.reason})", name, at) from None

    def _length_checked(self, n: int, name: str, at: int, nullable: bool) -> int | None:
        if n < 0:
            if n == -1 and nullable:
                return None
            raise self.error(f"length {n}" + ("" if nullable else " (the field is not nullable)"), name, at)
        if n > self.end - self.pos:
            raise self.error(f"length {n} is beyond the {self.end - self.pos} bytes left", name, at, truncated=True)
        return n

    def string(self, name: str, *, nullable: bool = False) -> str | None:
        """int16 length, then UTF-8 bytes; -1 is null where the field is nullable."""
        at = self.pos
        n = self._length_checked(self.int16(name), name, at, nullable)
        return None if n is None else self._text(n, name, at)

    def compact_string(self, name: str, *, nullable: bool = False) -> str | None:
        """uvarint (length + 1), then UTF-8 bytes; 0 is null where the field is nullable."""
        at = self.pos
        n = self._length_checked(self._compact_length(name), name, at, nullable)
        return None if n is None else self._text(n, name, at)

    def bytes(self, name: str, *, nullable: bool = False) -> bytes | None:
        """int32 length, then the bytes; -1 is null where the field is nullable."""
        at = self.pos
        n = self._length_checked(self.int32(name), name, at, nullable)
        return None if n is None else self.raw(n, name)

    # `bytes` here would name the method above
    def compact_bytes(self, name: str, *, nullable: bool = False) -> builtins.bytes | None:
        """uvarint (length + 1), then the bytes; 0 is null where the field is nullable."""
        at = self.pos
        n = self._length_checked(self._compact_length(name), name, at, nullable)
        return None if n is None else self.raw(n, name)

    # -- arrays and structs ----------------------------------------------------------------

    def _elements(self, name: str, count: int, at: int, element: Callable[[], T], min_size: int) -> list[T]:
        if count * max(min_size, 1) > self.end - self.pos:
            raise self.error(f"{count} elements cannot fit in the {self.end - self.pos} bytes left", name, at,
                             truncated=True)
        out = []
        for i in range(count):
            self._where.append(f"{name}[{i}]")
            try:
                out.append(element())
            finally:
                self._where.pop()
        return out

    def array(self, name: str, element: Callable[[], T], *, nullable: bool = False,
              min_size: int = 1) -> list[T] | None:
        """int32 count, then `count` calls of `element` (which reads one element with this
        reader; errors inside name ``name[i]``); -1 is null where nullable. `min_size` is the
        smallest encoded element, used to refuse counts the bytes left cannot hold."""
        at = self.pos
        n = self.int32(name)
        if n < 0:
            if n == -1 and nullable:
                return None
            raise self.error(f"array count {n}", name, at)
        return self._elements(name, n, at, element, min_size)

    def compact_array(self, name: str, element: Callable[[], T], *, nullable: bool = False,
                      min_size: int = 1) -> list[T] | None:
        """uvarint (count + 1), then the elements (see :meth:`array`); 0 is null where nullable."""
        at = self.pos
        n = self._compact_length(name)
        if n < 0:
            if nullable:
                return None
            raise self.error("null array (the field is not nullable)", name, at)
        return self._elements(name, n, at, element, min_size)

    def struct(self, name: str, body: Callable[[], T]) -> T:
        """Read a nested struct with `body`; errors inside name ``name.field``."""
        self._where.append(name)
        try:
            return body()
        finally:
            self._where.pop()

    def tagged_fields(self, known: dict[int, Callable[[Reader], Any]] | None = None) -> dict[int, Any]:
        """A flexible struct's tagged fields: uvarint count, then (uvarint tag, uvarint size,
        `size` bytes) each, tags strictly increasing (Kafka refuses others). A tag in `known`
        is decoded with ``known[tag](sub_reader)`` over exactly its bytes; others are kept as
        bytes. Returns {tag: value}."""
        at = self.pos
        n = self.uvarint("_tagged_fields")
        if n < 0 or 2 * n > self.end - self.pos:
            raise self.error(f"{n} tagged fields cannot fit in the {self.end - self.pos} bytes left",
                             "_tagged_fields", at, truncated=n >= 0)
        out: dict[int, Any] = {}
        prev = -1
        for _ in range(n):
            tag_at = self.pos
            tag = self.uvarint("_tagged_fields.tag")
            if tag <= prev:
                raise self.error(f"tag {tag} after tag {prev}: tags must increase", "_tagged_fields.tag", tag_at)
            prev = tag
            size_at = self.pos
            size = self.uvarint(f"_tagged_fields[{tag}].size")
            if size < 0 or size > self.end - self.pos:
                raise self.error(f"size {size} is beyond the {self.end - self.pos} bytes left",
                                 f"_tagged_fields[{tag}].size", size_at, truncated=size >= 0)
            if known and tag in known:
                sub = Reader(self.data, path=self.path, base=self.base, start=self.pos, end=self.pos + size,
                             what=self.field_path(f"_tagged_fields[{tag}]"), lenient_utf8=self.lenient_utf8)
                out[tag] = known[tag](sub)
                sub.expect_end()
                self.pos += size
            else:
                out[tag] = self.raw(size, f"_tagged_fields[{tag}]")
        return out
