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


def malformed_pairs_many(blocks) -> np.ndarray:
    """Whether each PROPERTIES block (text; None for none) holds a pair the broker's parser
    skips: an empty pair, one without ``\\x01``, or one with an empty name (a block is
    ``name\\x01value`` pairs, a non-empty name without \\x01 or \\x02, joined by \\x02, an
    optional final \\x02; the empty block too). The broker reads such a block (a 5.2.0 broker
    multi-dispatching a message writes one); elsewhere it is a sign of damage no CRC covers
    before 5.2. The test is the C scan of the CommitLog reader (``rmqlab._records.find_props``,
    whose readable model is ``formats.commitlog.property_problem``) over the blocks' UTF-8 bytes:
    \\x01 and \\x02 are never part of a longer UTF-8 sequence, so the bytes split as the text
    does. Cost: one C pass over every block, O(total length).

    >>> malformed_pairs_many(["A\\x01x\\x02B\\x01y", "A\\x01x\\x02NOSEP", "\\x01v", None, ""]).tolist()
    [False, True, True, False, False]

    `blocks` may be a pyarrow string array already (no copy made then).
    """
    import pyarrow as pa

    import rmqlab._records as _records

    if isinstance(blocks, pa.Array):
        arr = blocks.cast(pa.large_string())
    else:
        arr = pa.array(np.asarray(blocks, dtype=object), type=pa.large_string(), from_pandas=True)
    n = len(arr)
    _, offsets_buf, data_buf = arr.buffers()
    if not n or data_buf is None:
        return np.zeros(n, bool)
    offsets = np.frombuffer(offsets_buf, np.int64)[arr.offset:arr.offset + n + 1]
    lengths = np.diff(offsets)
    if arr.null_count:      # a missing block holds no pair
        lengths[~np.asarray(arr.is_valid(), dtype=bool)] = 0
    problems = np.empty(n, np.int8)
    none = np.zeros(0, np.int64)
    _records.find_props(data_buf, np.ascontiguousarray(offsets[:-1]), lengths, (), none, none, problems)
    return problems != 0     # PROP_OK


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
