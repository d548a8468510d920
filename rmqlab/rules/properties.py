"""The PROPERTIES block of a CommitLog message: ``name\\x01value`` pairs joined by ``\\x02``, as
``MessageDecoder.string2messageProperties`` splits them (RocketMQ ``common/message/MessageDecoder.java``).

The split is a broker rule that both the record reader (:mod:`rmqlab.formats.commitlog`) and the
dispatch rules (:mod:`rmqlab.rules.dispatch`) apply, so it lives below both.
"""
from __future__ import annotations

import re
from typing import AnyStr

import numpy as np

__all__ = ["malformed_pairs_many", "property_pairs", "property_values"]


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


#: A block every pair of which string2messageProperties takes (or skips only for an empty value):
#: ``name\x01value`` pairs, a non-empty name without \x01 or \x02, joined by \x02, an optional
#: final \x02; the empty block too. Anything else holds a pair the broker's parser skips.
_WELL_FORMED = "^$|^[^\x01\x02]+\x01[^\x02]*(\x02[^\x01\x02]+\x01[^\x02]*)*\x02?$"


def malformed_pairs_many(blocks) -> np.ndarray:
    """Whether each PROPERTIES block (text; None for none) holds a pair the broker's parser
    skips: an empty pair, one without ``\\x01``, or one with an empty name. The broker reads such a
    block (a 5.2.0 broker multi-dispatching a message writes one); elsewhere it is a sign of damage
    no CRC covers before 5.2. Cost: one RE2 match of every block, in Arrow, O(total length).

    >>> malformed_pairs_many(["A\\x01x\\x02B\\x01y", "A\\x01x\\x02NOSEP", "\\x01v", None, ""]).tolist()
    [False, True, True, False, False]

    `blocks` may be a pyarrow string array already (no copy made then).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(blocks, pa.Array):
        arr = blocks
    else:
        arr = pa.array(np.asarray(blocks, dtype=object), type=pa.large_string(), from_pandas=True)
    well = pc.match_substring_regex(arr, _WELL_FORMED)
    return ~np.asarray(well.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)


def property_values(props, name: str):
    """The value of property `name` in each PROPERTIES text of a pandas Series (None where the
    text has no such pair with a value; of several, the last, as ``string2messageProperties``
    keeps it, like :func:`rmqlab.formats.commitlog.parse_properties`).
    Cost: one regular expression a text, in pandas' C loop.

    >>> import pandas as pd
    >>> property_values(pd.Series(["A\x011\x02B\x012", "B\x013\x02B\x014", "X\x01B\x015", None]), "B").tolist()
    ['2', '4', None, None]
    """
    got = props.fillna("").str.extract(f"(?s)^(?:.*\x02)?{re.escape(name)}\x01([^\x02]+)", expand=False)
    return got.astype(object).mask(got.isna(), None)
