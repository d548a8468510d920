"""The PROPERTIES block of a CommitLog message: ``name\\x01value`` pairs joined by ``\\x02``, as
``MessageDecoder.string2messageProperties`` splits them (RocketMQ ``common/message/MessageDecoder.java``).

The split is a broker rule that both the record reader (:mod:`rmqlab.formats.commitlog`) and the
dispatch rules (:mod:`rmqlab.rules.dispatch`) apply, so it lives below both.
"""
from __future__ import annotations

from typing import AnyStr

__all__ = ["property_pairs"]


def property_pairs(raw: AnyStr) -> list[AnyStr]:
    """The ``name\\x01value`` pairs of a block (bytes as stored, or decoded text), split on
    ``\\x02`` as ``MessageDecoder.string2messageProperties`` splits them: the last pair ends at
    the block's end whether or not a ``\\x02`` follows it (brokers 4.9.1 to 5.1.x leave that one
    out).

    >>> property_pairs(b"A\\x01x\\x02B\\x01y"), property_pairs("A\\x01x\\x02B\\x01y\\x02")
    ([b'A\\x01x', b'B\\x01y'], ['A\\x01x', 'B\\x01y'])
    """
    pairs = raw.split(b"\x02" if isinstance(raw, bytes) else "\x02")
    if not pairs[-1]:   # the final separator (or an empty block): no pair after it
        pairs.pop()
    return pairs
