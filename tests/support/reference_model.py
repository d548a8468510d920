"""Reference models the tests check rmqlab against, written from the Java semantics alone.

Nothing here imports rmqlab: a bug shared by the model and the package would hide itself.
"""
from __future__ import annotations

import struct

INT_MIN = -(2**31)


def utf16_units(s: str) -> list[int]:
    """The UTF-16 code units Java holds for `s` (a lone surrogate is one unit, as in Java)."""
    return [u for (u,) in struct.iter_unpack("<H", s.encode("utf-16-le", "surrogatepass"))]


def java_hash(s: str) -> int:
    """java.lang.String.hashCode: h = 31*h + unit over UTF-16 code units, signed 32-bit."""
    h = 0
    for u in utf16_units(s):
        h = (31 * h + u) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def stored_hash(key: str) -> int:
    """IndexFile.indexKeyHashMethod: abs(hashCode), with Integer.MIN_VALUE stored as 0."""
    h = java_hash(key)
    return 0 if h == INT_MIN else abs(h)


def java_string_to_properties(s: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties (4.9.1+), statement by statement: pairs
    ``name 0x01 value 0x02``, the last separator optional, pairs shorter than 3 chars or
    without a name and a value skipped, the last of a repeated name kept."""
    out, n, index = {}, len(s), 0
    while index < n:
        new_index = s.find("\x02", index)
        if new_index < 0:
            new_index = n
        if new_index - index >= 3:
            kv = s.find("\x01", index)
            if index < kv < new_index - 1:
                out[s[index:kv]] = s[kv + 1:new_index]
        index = new_index + 1
    return out
