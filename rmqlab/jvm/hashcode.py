"""Java's `String.hashCode` and RocketMQ's index key hash.

Java hashes a string over its UTF-16 code units: ``h = 31*h + unit`` in 32-bit two's
complement arithmetic. A character outside the Basic Multilingual Plane (an emoji) is two code
units (a surrogate pair), so it is hashed as two units, not one code point.

RocketMQ's IndexFile stores ``abs(hashCode(topic + "#" + key))``, and because
``Math.abs(Integer.MIN_VALUE)`` is still negative it maps that one value to 0
(``IndexFile.indexKeyHashMethod``).

>>> java_hash("polygenelubricants")     # a famous string whose hash is Integer.MIN_VALUE
-2147483648
>>> index_hash("polygenelubricants")
0
>>> index_key("TopicTest", "ORDER_1")
'TopicTest#ORDER_1'

For arrays (millions of keys) use :func:`java_hash_many` / :func:`index_hash_many`: they run in
C over the strings' own buffers, O(total text), no Python object a key.
"""
from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

import rmqlab._jhash as _jhash
from rmqlab.jvm.longs import INT_MIN

__all__ = [
    "java_hash",
    "index_hash",
    "index_key",
    "java_hash_many",
    "index_hash_many",
    "to_index_hash",
    "to_index_hash_many",
    "utf16_lengths_many",
    "java_hash_concat_many",
]


# Threads for the C loops. They only start when there is enough work (about 256 KiB of text or
# 32768 strings each), so small calls stay single-threaded.
try:
    _THREADS = max(1, min(8, len(os.sched_getaffinity(0))))
except AttributeError:  # not Linux
    _THREADS = max(1, min(8, os.cpu_count() or 1))


def java_hash(s: str) -> int:
    """`java.lang.String.hashCode()` of `s` as a signed 32-bit int. Cost: O(len(s)).

    Lone surrogates are hashed as the code units they are, as Java does.

    >>> java_hash(""), java_hash("a"), java_hash("Aa") == java_hash("BB")
    (0, 97, True)
    """
    if not isinstance(s, str):
        raise TypeError(f"java_hash needs a str, got {type(s).__name__}")
    return _jhash.hash_one(s)


def to_index_hash(h: int) -> int:
    """RocketMQ's `indexKeyHashMethod` applied to a hashCode: abs, with MIN_VALUE -> 0."""
    return 0 if h == INT_MIN else abs(h)


def index_hash(key: str) -> int:
    """The non-negative hash RocketMQ stores in an index entry for the full key string.

    `key` is the string the broker hands to putKey, normally ``topic + "#" + key``.
    """
    return to_index_hash(java_hash(key))


def index_key(topic: str, key: str) -> str:
    """The string the broker indexes for `key` of `topic`: ``topic + "#" + key``."""
    return f"{topic}#{key}"


def java_hash_many(strings: Any) -> np.ndarray:
    """`String.hashCode` of every string, as an int32 array. Cost: O(total length), in C.

    Accepts a list or tuple of str, a NumPy array of str (``<U`` or object dtype), or a pyarrow
    ``StringArray`` / ``LargeStringArray`` / ``ChunkedArray`` of them (hashed straight from the
    UTF-8 buffer, no Python objects). Nulls and non-strings raise TypeError.

    >>> java_hash_many(["a", "Aa", "BB"]).tolist()
    [97, 2112, 2112]
    """
    if isinstance(strings, (list, tuple)):
        out = np.empty(len(strings), np.int32)
        _jhash.hash_objects(strings, out, _THREADS)
        return out
    if isinstance(strings, np.ndarray):
        return _hash_ndarray(strings)
    # Only look for pyarrow and pandas types if the caller already imported them: importing
    # pyarrow here would make every user of plain lists pay its import.
    pa = sys.modules.get("pyarrow")
    if pa is not None and isinstance(strings, (pa.Array, pa.ChunkedArray)):
        return _hash_arrow(strings, pa)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(strings, (pd.Series, pd.Index)):
        return _hash_pandas(strings, pd)
    if isinstance(strings, (str, bytes)):
        raise TypeError("java_hash_many needs a container of str, not a single string; "
                        "use java_hash for one string")
    raise TypeError(f"java_hash_many cannot hash a {type(strings).__name__}: pass a list or tuple "
                    "of str, a NumPy str/object array, a pyarrow string array or a pandas Series")


def _hash_ndarray(a: np.ndarray) -> np.ndarray:
    """NumPy input; the result has `a`'s shape. Errors name the flat (C-order) index."""
    if a.dtype.kind == "T":  # NumPy 2 StringDType has no buffer export; go through str objects
        a = a.astype(object)
    if a.dtype.kind not in "UO":
        raise TypeError(f"java_hash_many needs str elements, got a NumPy array of dtype {a.dtype}")
    flat = a.reshape(-1)
    if a.dtype.kind == "U" and not a.dtype.isnative:
        flat = flat.astype(a.dtype.newbyteorder("="))
    flat = np.ascontiguousarray(flat)
    out = np.empty(flat.shape[0], np.int32)
    if a.dtype.kind == "U":
        _jhash.hash_ucs4(flat, flat.dtype.itemsize // 4, out, _THREADS)
    else:
        _jhash.hash_objects(flat, out, _THREADS)
    return out.reshape(a.shape)


def _hash_arrow(arr: Any, pa: Any) -> np.ndarray:
    out = np.empty(len(arr), np.int32)
    if isinstance(arr, pa.ChunkedArray):
        pos = 0
        for chunk in arr.chunks:
            _hash_arrow_into(chunk, out[pos:pos + len(chunk)], pos, pa)
            pos += len(chunk)
    else:
        _hash_arrow_into(arr, out, 0, pa)
    return out


def _hash_arrow_into(arr: Any, out: np.ndarray, base: int, pa: Any) -> None:
    """Hash one Arrow array into `out`; `base` is its first row's index, for error messages."""
    if len(arr) == 0:
        return
    if arr.null_count:
        first = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise TypeError(f"element {base + first} is null, not str")
    t = arr.type
    if pa.types.is_dictionary(t):
        if arr.dictionary.null_count:  # a null value; decoding makes its rows count as nulls
            return _hash_arrow_into(arr.dictionary_decode(), out, base, pa)
        # Hash each distinct value once, then gather (pandas categoricals arrive like this).
        values = _hash_arrow(arr.dictionary, pa)
        out[:] = values[arr.indices.to_numpy(zero_copy_only=False)]
        return
    if getattr(pa.types, "is_string_view", lambda _: False)(t):
        arr, t = arr.cast(pa.large_string()), pa.large_string()
    if pa.types.is_string(t):
        offset_size = 4
    elif pa.types.is_large_string(t):
        offset_size = 8
    else:
        raise TypeError(f"java_hash_many needs str elements, got a pyarrow array of type {t}")
    _, offsets, data = arr.buffers()
    # Arrow slices share buffers: .offset says where this array's rows start in `offsets`.
    _jhash.hash_utf8(offsets, b"" if data is None else data, offset_size, arr.offset, len(arr),
                     out, _THREADS, base)


def _hash_pandas(obj: Any, pd: Any) -> np.ndarray:
    dtype = obj.dtype
    if isinstance(dtype, pd.ArrowDtype) or (
            isinstance(dtype, pd.StringDtype) and dtype.storage != "python"):
        import pyarrow as pa  # the data already lives in Arrow buffers; hash them in place

        return _hash_arrow(pa.array(obj.array), pa)
    return _hash_ndarray(np.asarray(obj.to_numpy()))


def index_hash_many(strings: Any) -> np.ndarray:
    """:func:`index_hash` of every string, as an int32 array (all values >= 0)."""
    return to_index_hash_many(java_hash_many(strings))


def to_index_hash_many(hashes: np.ndarray) -> np.ndarray:
    """:func:`to_index_hash` of every hashCode of an int32 array (a new array, all values >= 0).

    >>> to_index_hash_many(np.array([-5, 7, -2**31], np.int32)).tolist()
    [5, 7, 0]
    """
    # abs() in two's complement leaves MIN_VALUE negative; RocketMQ maps that case to 0.
    out = np.abs(np.asarray(hashes, np.int32))
    out[out < 0] = 0
    return out


def utf16_lengths_many(strings: Any) -> np.ndarray:
    """Java's ``String.length()`` (UTF-16 code units) of every string of a pyarrow string or
    large_string array (UTF-8, as Arrow's text always is), int64; 0 for a null. A character
    past U+FFFF is two units (a surrogate pair), so a string's length is its count of UTF-8
    lead bytes plus its count of 4-byte leads. Cost: O(total UTF-8 bytes), in NumPy.

    >>> import pyarrow as pa
    >>> utf16_lengths_many(pa.array(["", "ab", None, "é", "😀x"])).tolist()
    [0, 2, 0, 1, 3]
    """
    import pyarrow as pa

    arr = strings.cast(pa.large_string()) if pa.types.is_string(strings.type) else strings
    if not pa.types.is_large_string(arr.type):
        raise TypeError(f"utf16_lengths_many needs a pyarrow string array, got one of type {arr.type}")
    n = len(arr)
    if not n:
        return np.zeros(0, np.int64)
    _, offsets, data = arr.buffers()
    off = np.frombuffer(offsets, np.int64)[arr.offset:arr.offset + n + 1]
    text = np.frombuffer(data, np.uint8)[off[0]:off[-1]] if data is not None else np.zeros(0, np.uint8)
    units = (text & 0xC0) != 0x80            # a lead byte (or ASCII): one code point
    units = units.astype(np.int64) + (text >= 0xF0)   # a 4-byte lead: a surrogate pair
    before = np.zeros(len(text) + 1, np.int64)
    np.cumsum(units, out=before[1:])
    rel = off - off[0]
    return before[rel[1:]] - before[rel[:-1]]


def java_hash_concat_many(head: np.ndarray, tail: np.ndarray, tail_length: np.ndarray) -> np.ndarray:
    """``(a + b).hashCode()`` of pairs of strings from ``a.hashCode()`` (`head`),
    ``b.hashCode()`` (`tail`) and ``b.length()`` (`tail_length`, UTF-16 units), arrays of one
    length: the hash is the polynomial ``sum(unit[i] * 31**(n-1-i))`` in 32-bit
    arithmetic, so a's part is carried over b's units by ``31**len(b)``. No string is built.
    Cost: O(pairs), O(log length) multiplications a pair, in NumPy.

    >>> h = java_hash_concat_many(np.array([java_hash("Topic#")]), np.array([java_hash("k😀")]),
    ...                           np.array([3]))
    >>> int(h[0]) == java_hash("Topic#k😀")
    True
    """
    lengths = np.asarray(tail_length, np.int64)
    if (lengths < 0).any():
        raise ValueError("a string's length is never negative")
    carry = np.power(np.uint32(31), lengths.astype(np.uint32))     # wraps modulo 2**32, as Java's int does
    h = np.asarray(head).astype(np.uint32) * carry + np.asarray(tail).astype(np.uint32)
    return np.asarray(h, np.uint32).view(np.int32)
