"""Kafka's wire primitives written field by field for the Kafka tests' fixtures.

Shares nothing with rmqlab, so that the fixtures stay an independent encoding of what the
readers decode: base-128 varints (zig-zag for the signed ones), the classic int16/int32-length
strings, bytes and arrays, their compact (uvarint length + 1) forms in flexible versions, and
tagged fields.
"""
from __future__ import annotations

import struct


def base128(n: int) -> bytes:
    """A non-negative integer in 7-bit groups, low group first, the high bit marking more."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def uvarint(n: int) -> bytes:
    """An unsigned varint as Java writes an int: a negative one takes its 32-bit pattern."""
    return base128(n & 0xFFFFFFFF)


def varint(n: int) -> bytes:
    return base128(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def varlong(n: int) -> bytes:
    return base128(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _length(n: int, size: str, flexible: bool) -> bytes:
    """A length or count; -1 is null. Compact forms store n + 1."""
    return uvarint(n + 1) if flexible else struct.pack(">" + size, n)


def string(s: str | None, flexible: bool = False) -> bytes:
    raw = b"" if s is None else s.encode()
    return _length(-1 if s is None else len(raw), "h", flexible) + raw


def blob(b: bytes | None, flexible: bool = False) -> bytes:
    return _length(-1 if b is None else len(b), "i", flexible) + (b or b"")


def array(items: list[bytes] | None, flexible: bool = False) -> bytes:
    return _length(-1 if items is None else len(items), "i", flexible) + b"".join(items or [])


def compact_string(s: str | None) -> bytes:
    return string(s, flexible=True)


def compact_array(items: list[bytes] | None) -> bytes:
    return array(items, flexible=True)


def tags(fields: dict[int, bytes] | None = None) -> bytes:
    """A tagged-field section: count, then (tag, size, bytes) in increasing tag order."""
    fields = fields or {}
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in sorted(fields.items()))
