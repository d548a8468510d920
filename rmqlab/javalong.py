"""Java's `long` arithmetic: two's complement, 64 bits, wrapping silently on overflow.

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


def wrap_long(x: int) -> int:
    """`x` as a Java long holds it: wrapped into [-2**63, 2**63). O(1)."""
    return ((x + 2**63) % 2**64) - 2**63
