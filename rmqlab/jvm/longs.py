"""Java's `long`: two's complement, 64 bits, wrapping silently on overflow; and the checks that
refuse a value a long cannot hold where rmqlab takes numbers from a caller.

Brokers add and subtract offsets and timestamps as Java longs; where a damaged or extreme value
makes the sum leave the signed 64-bit range, the broker's answer is the wrapped one, and so is
ours (a NumPy int64 array wraps the same way; a Python int does not).

>>> wrap_long(2**63 - 1 + 1)
-9223372036854775808
>>> delta = wrap_long(5 - -2**63)            # last offset 5, base offset Long.MIN_VALUE
>>> delta, wrap_long(-2**63 + delta)          # the wrapped difference adds back to 5
(-9223372036854775803, 5)
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
#: Java's int range (Integer.MIN_VALUE, Integer.MAX_VALUE)
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def wrap_long(x: int) -> int:
    """`x` as a Java long holds it: wrapped into [-2**63, 2**63). O(1)."""
    return ((x + 2**63) % 2**64) - 2**63


def wrap_int(x: int) -> int:
    """`x` as a Java int holds it (an ``(int)`` cast): wrapped into [-2**31, 2**31). O(1).

    >>> wrap_int(0xCCDDEEFF), wrap_int(3_000_000_000)
    (-857870593, -1294967296)
    """
    return ((x + 2**31) % 2**32) - 2**31


def check_long(name: str, value: Any) -> int:
    """`value` as an int a Java long holds, else ValueError naming `name` (no wrapping). O(1).

    >>> check_long("phy_offset", 2**63 - 1)
    9223372036854775807
    >>> check_long("phy_offset", 2**63)
    Traceback (most recent call last):
    ValueError: phy_offset=9223372036854775808 does not fit in a Java long (signed 64-bit)
    """
    value = int(value)
    if not LONG_MIN <= value <= LONG_MAX:
        raise ValueError(f"{name}={value} does not fit in a Java long (signed 64-bit)")
    return value


def as_longs(name: str, values: Any) -> np.ndarray:
    """`values` (a list, any NumPy integer array, an object array of ints) as a contiguous int64
    array, refusing what a Java long cannot hold instead of wrapping it, and refusing floats and
    text instead of truncating them: ValueError / TypeError naming `name`. Cost: O(n); a Python
    loop only for object arrays.

    >>> as_longs("sizes", [1, 2]).tolist()
    [1, 2]
    >>> as_longs("sizes", np.array([1, 1.5], dtype=object))
    Traceback (most recent call last):
    TypeError: sizes must hold integers
    """
    try:
        arr = np.asarray(values)
    except OverflowError:
        raise ValueError(f"{name}: a value does not fit in a Java long (signed 64-bit)") from None
    if arr.dtype == object:  # Python ints beyond 64 bits, or mixed objects
        try:
            # operator.index, not int(): a float or a digit string among them is refused, not truncated
            arr = np.array([check_long(name, operator.index(v)) for v in arr.ravel()], dtype=np.int64)
        except TypeError:
            raise TypeError(f"{name} must hold integers") from None
    if arr.ndim != 1 and arr.size:
        raise ValueError(f"{name} must be one-dimensional")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) > LONG_MAX:
        raise ValueError(f"{name}: {int(arr.max())} does not fit in a Java long (signed 64-bit)")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64)
