"""Kafka's message schemas as data: a layout is declared once as :class:`Field` rows and read
with :func:`read_message`, and the result prints as the generated ``*JsonConverter`` and
Jackson write it (:func:`java_json`).

Every record this package decodes by schema (``__consumer_offsets``, ``__transaction_state``,
``__share_group_state``, ``__remote_log_metadata``, the KRaft metadata log) is one of Kafka's
JSON message definitions; the generated readers follow ``MessageDataGenerator`` and the JSON
writers ``JsonConverterGenerator`` (``generator/`` of Kafka's source, read at 3.9 and trunk
after it, commit 1eb7644). What those rules are, in the terms of the :class:`Field` rows:

- a field is present in the versions of its range; a *flexible* version (``flexibleVersions``)
  writes strings, bytes and arrays in their compact forms and ends every struct, nested ones
  included, with a tagged-field section;
- a tagged field lives in that section, and the JSON writer prints it only when it differs from
  its default (so ``default`` must be the schema's); an unknown tag is skipped, as the generated
  readers skip it;
- a nullable struct that is not an array element is an ``int8`` (-1 null, 1 present), then the
  struct;
- the JSON has the fields in schema order, under their camelCase names (the names declared in
  the rows), bytes as standard base64, a ``uuid`` as ``Uuid.toString()`` (URL-safe base64, no
  padding), a ``float64`` as Java's ``Double.toString``.

>>> fields = (Field("name", "string", (0, ANY)), Field("ids", "[]int32", (0, ANY)),
...           Field("hint", "int64", (1, ANY), tag=0, default=-1))
>>> s = Schema("Demo", (0, 1), 1, fields)
>>> read_message(Reader(b"\\x02a\\x02\\x00\\x00\\x00\\x07\\x01\\x00\\x08" + (5).to_bytes(8, "big")), s, 1)
{'name': 'a', 'ids': [7], 'hint': 5}
>>> java_json({"q": 1e7, "b": b"\\x00", "n": None})
'{"q":1.0E7,"b":"AA==","n":null}'
"""
from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

from rmqlab.kafka.protocol import Reader

__all__ = ["ANY", "Field", "Schema", "in_versions", "read_struct", "read_message", "java_json", "java_double"]

ANY = 2**15 - 1   # "N+" in the JSON schemas: no upper bound

_INTS = ("int8", "int16", "uint16", "int32", "int64")
# the smallest encoding of one element, so that a hostile count is refused before any read
_MIN_SIZE = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "float64": 8, "bool": 1, "uuid": 16}


class Field(NamedTuple):
    """One field of a layout: its JSON name, type, versions, nullable versions, tag (a tagged
    field) and the default the JSON writer compares a tagged field with.

    Types: ``"int8"``, ``"int16"``, ``"uint16"``, ``"int32"``, ``"int64"``, ``"float64"``,
    ``"bool"``, ``"uuid"``, ``"string"``, ``"bytes"``, ``"[]<one of those>"``, ``("[]",
    fields)`` (an array of structs) and ``("struct", fields)`` (one nested struct).
    Cost: none (a row).

    >>> Field("epoch", "int32", (0, ANY)).tag is None
    True
    """

    name: str
    type: Any
    versions: tuple[int, int]
    nullable: tuple[int, int] | None = None
    tag: int | None = None
    default: Any = None


class Schema(NamedTuple):
    """A message: its name (for errors), valid versions, first flexible version (None: never)
    and fields. Cost: none (a row).

    >>> Schema("NoOpRecord", (0, 0), 0, ()).flexible_from
    0
    """

    name: str
    versions: tuple[int, int]
    flexible_from: int | None
    fields: tuple[Field, ...]


def in_versions(v: int, r: tuple[int, int] | None) -> bool:
    """Whether version `v` lies in the range `r` (None: no version). Cost: O(1).

    >>> in_versions(3, (1, ANY)), in_versions(0, None)
    (True, False)
    """
    return r is not None and r[0] <= v <= r[1]


def _read_value(r: Reader, ftype: Any, version: int, flexible: bool, nullable: bool, name: str) -> Any:
    if ftype in _INTS:
        return getattr(r, ftype)(name)
    if ftype == "bool":
        # Readable.readByte() != 0: any non-zero byte is true
        return r.int8(name) != 0
    if ftype == "float64":
        return r.float64(name)
    if ftype == "string":
        return r.compact_string(name, nullable=nullable) if flexible else r.string(name, nullable=nullable)
    if ftype == "uuid":
        return r.uuid(name)
    if ftype == "bytes":
        return r.compact_bytes(name, nullable=nullable) if flexible else r.bytes(name, nullable=nullable)
    if isinstance(ftype, str) and ftype.startswith("[]"):
        element = ftype[2:]
        array = r.compact_array if flexible else r.array
        # an element's errors are named by the reader's path to it, e.g. value.members[0]
        return array(name, lambda: _read_value(r, element, version, flexible, False, ""), nullable=nullable,
                     min_size=_MIN_SIZE.get(element, 1))
    kind, fields = ftype
    if kind == "struct":
        if nullable and r.int8(name) < 0:
            return None
        return r.struct(name, lambda: read_struct(r, fields, version, flexible))
    array = r.compact_array if flexible else r.array
    return array(name, lambda: read_struct(r, fields, version, flexible), nullable=nullable)


def read_struct(r: Reader, fields: tuple[Field, ...], version: int, flexible: bool) -> dict:
    """One struct of `fields` at `version` from the reader's position, as the JSON writer
    prints it: fields in order, tagged ones only when not at their default.

    Cost: O(bytes read).

    >>> read_struct(Reader(b"\\x00\\x05"), (Field("id", "int16", (0, ANY)),), 0, False)
    {'id': 5}

    Raises what the :class:`~rmqlab.kafka.protocol.Reader` reads raise (a typed
    :class:`~rmqlab.errors.FormatError` naming file, offset and field path).
    """
    got: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in fields:
        if not in_versions(version, f.versions):
            continue
        if f.tag is not None:
            tagged[f.tag] = f
            continue
        got[f.name] = _read_value(r, f.type, version, flexible, in_versions(version, f.nullable), f.name)
    if flexible:
        def tagged_reader(f: Field) -> Callable[[Reader], Any]:
            return lambda sub: _read_value(sub, f.type, version, flexible, in_versions(version, f.nullable), f.name)

        # unknown tags come back as bytes and are skipped, as the generated readers skip them
        values = r.tagged_fields({tag: tagged_reader(f) for tag, f in tagged.items()})
        for tag, f in tagged.items():
            if tag in values and values[tag] != f.default:
                got[f.name] = values[tag]
    return {f.name: got[f.name] for f in fields if f.name in got}


def read_message(r: Reader, schema: Schema, version: int) -> dict:
    """A whole message of `schema` at `version`: :func:`read_struct`, then no byte may be left
    (the coordinators' and the metadata serdes' rule).

    Cost: O(bytes).

    >>> read_message(Reader(b"\\x00"), Schema("NoOp", (0, 0), 0, ()), 0)
    {}

    Raises :class:`~rmqlab.errors.FormatError` for a bad field or bytes left over.
    """
    flexible = schema.flexible_from is not None and version >= schema.flexible_from
    out = read_struct(r, schema.fields, version, flexible)
    r.expect_end()
    return out


# =============================================================================================
# Jackson's compact JSON
# =============================================================================================


def java_double(d: float) -> str:
    """``Double.toString(d)`` as Jackson writes a ``DoubleNode``: decimal notation for
    10^-3 <= |d| < 10^7, else ``d.dddE<n>``; NaN and the infinities quoted (Jackson's
    QUOTE_NON_NUMERIC_NUMBERS).

    Cost: O(1). The digits are the shortest that read back to `d` (Java 19+'s rule; Java 17
    prints a longer form for a few values, such as 2.0E23).

    >>> java_double(1048576.0), java_double(1e7), java_double(0.0001), java_double(-0.0)
    ('1048576.0', '1.0E7', '1.0E-4', '-0.0')
    """
    if math.isnan(d):
        return '"NaN"'
    if d in (float("inf"), float("-inf")):
        return '"Infinity"' if d > 0 else '"-Infinity"'
    if d == 0:
        return "-0.0" if str(d).startswith("-") else "0.0"
    sign, digits, exp = Decimal(repr(d)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exp)   # the decimal point sits after this many digits
    lead = "-" if sign else ""
    if 1e-3 <= abs(d) < 1e7:
        if point <= 0:
            return f"{lead}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{lead}{whole}.{frac or '0'}"
    return f"{lead}{text[0]}.{text[1:] or '0'}E{point - 1}"


def _json(x: Any, out: list[str]) -> None:
    if isinstance(x, dict):
        out.append("{")
        for i, (k, v) in enumerate(x.items()):
            out.append(("," if i else "") + json.dumps(k, ensure_ascii=False) + ":")
            _json(v, out)
        out.append("}")
    elif isinstance(x, list):
        out.append("[")
        for i, v in enumerate(x):
            if i:
                out.append(",")
            _json(v, out)
        out.append("]")
    elif isinstance(x, float):
        out.append(java_double(x))
    elif isinstance(x, (bytes, bytearray)):
        out.append('"' + base64.b64encode(x).decode() + '"')   # Jackson's BinaryNode: base64 with padding
    else:
        out.append(json.dumps(x, ensure_ascii=False))


def java_json(x: Any) -> str:
    """`x` (dicts, lists, str, int, float, bool, bytes, None) as Jackson's ``JsonNode.toString()``
    writes the same tree: no spaces, keys in insertion order, non-ASCII text as is, bytes as
    base64, floats as :func:`java_double`.

    Cost: O(size of x).

    >>> java_json({"a": [1, True, "é"], "z": 100.0})
    '{"a":[1,true,"é"],"z":100.0}'
    """
    out: list[str] = []
    _json(x, out)
    return "".join(out)
