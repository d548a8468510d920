"""Declare a fixed-size big-endian binary layout once; derive struct, offsets and NumPy dtype.

Each format module lists its fields in file order with a comment per field. Offsets, the total
size, the `struct.Struct` used for scalar reads and the structured dtype used for vectorized
reads all come from that single declaration, so they cannot drift apart.

>>> L = Layout("Demo", [("a", "i", "a 4-byte int"), ("b", "q", "an 8-byte long")])
>>> L.size, L.offset("b"), L.dtype.itemsize
(12, 4, 12)
>>> L.unpack(L.pack(1, 2))
Demo(a=1, b=2)
"""
from __future__ import annotations

import struct
from collections import namedtuple
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

# struct code -> NumPy big-endian code. Java has only signed integers, so only signed codes.
_NUMPY_CODE = {"b": ">i1", "h": ">i2", "i": ">i4", "q": ">i8"}


class Field(NamedTuple):
    name: str
    code: str  # struct code, big-endian implied
    doc: str
    offset: int
    size: int

    @property
    def java_name(self) -> str:
        """The field's name in the Java source (declared here in snake case): hash_slot_count ->
        hashSlotCount."""
        head, *rest = self.name.split("_")
        return head + "".join(part.title() for part in rest)


def _record_class(name: str, field_names: list[str]) -> Any:
    # the field names are known only at run time, which a static NamedTuple cannot declare
    return namedtuple(name, field_names)


class Layout:
    """A fixed-size record: big-endian signed integers in declared order, no padding."""

    def __init__(self, name: str, fields: Iterable[tuple[str, str, str]]):
        self.name = name
        declared = list(fields)
        self.fields: tuple[Field, ...] = ()
        offset = 0
        out = []
        for fname, code, doc in declared:
            size = struct.calcsize(">" + code)
            out.append(Field(fname, code, doc, offset, size))
            offset += size
        self.fields = tuple(out)
        self.size = offset
        self.struct = struct.Struct(">" + "".join(f.code for f in self.fields))
        self.dtype = np.dtype([(f.name, _NUMPY_CODE[f.code]) for f in self.fields])
        self.record = _record_class(name, [f.name for f in self.fields])
        self._by_name = {f.name: f for f in self.fields}
        self._field_structs = {f.name: struct.Struct(">" + f.code) for f in self.fields}

    def offset(self, name: str) -> int:
        """Byte offset of field `name` inside the record."""
        return self._by_name[name].offset

    def field(self, name: str) -> Field:
        return self._by_name[name]

    def field_struct(self, name: str) -> struct.Struct:
        """A Struct for reading or writing that one field alone."""
        return self._field_structs[name]

    def unpack(self, data: bytes):
        return self.record._make(self.struct.unpack(data))

    def unpack_from(self, buffer, offset: int = 0):
        return self.record._make(self.struct.unpack_from(buffer, offset))

    def pack(self, *values) -> bytes:
        return self.struct.pack(*values)

    def pack_into(self, buffer, offset: int, *values) -> None:
        self.struct.pack_into(buffer, offset, *values)

    def describe(self) -> str:
        """One line per field: offset, size, name and meaning (used by `rmqlab index info`)."""
        return "\n".join(f"{f.offset:>4} {f.size:>2}  {f.name:<18} {f.doc}" for f in self.fields)

    def __repr__(self) -> str:
        return f"Layout({self.name!r}, size={self.size})"
