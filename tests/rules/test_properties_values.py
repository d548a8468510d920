"""rules.properties.property_values (the vectorised look-up) against
formats.commitlog.parse_properties (MessageDecoder.string2messageProperties' split): the same
value for every name, whatever the block holds (repeated names, values holding \\x01, empty
values, a missing trailing \\x02)."""
from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats.commitlog import parse_properties
from rmqlab.rules.properties import malformed_pairs_many, property_pairs, property_values

NAMES = st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "TIMER_OUT_MS", "REAL_TOPIC", "A"])
VALUES = st.text(alphabet=st.sampled_from(list("ab1 #\x01")), max_size=6)


@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(NAMES, VALUES), max_size=6), trailing=st.booleans(), name=NAMES)
def test_property_values_are_what_the_decoder_splits(pairs, trailing, name):
    text = "\x02".join(f"{k}\x01{v}" for k, v in pairs) + ("\x02" if trailing and pairs else "")
    want = parse_properties(text.encode()).get(name)
    assert property_values(pd.Series([text]), name).tolist() == [want]


# malformed_pairs_many against two statements of the rule: the regular expression it matched
# before it used the CommitLog reader's C scan, and string2messageProperties' split (property_pairs).
_WELL_FORMED = "^$|^[^\x01\x02]+\x01[^\x02]*(\x02[^\x01\x02]+\x01[^\x02]*)*\x02?$"
_BLOCKS = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["\x01", "\x02", "A", "KEYS", "é", "日", "\x00", " "]), max_size=10).map("".join),
    st.builds(lambda pairs, end: "\x02".join(f"{k}\x01{v}" for k, v in pairs) + end,
              st.lists(st.tuples(st.sampled_from(["", "A", "é\x01", "TAGS"]),
                                 st.text(alphabet=st.sampled_from(list("a\x01é")), max_size=3)), max_size=4),
              st.sampled_from(["", "\x02", "\x02\x02", "\x01"])))


def _malformed_model(block):
    if block is None:
        return False
    return any(not pair or pair.find("\x01") <= 0 for pair in property_pairs(block))


@settings(max_examples=400, deadline=None)
@given(blocks=st.lists(_BLOCKS, max_size=10), cut=st.integers(0, 3))
def test_malformed_pairs_many_is_the_split_rule(blocks, cut):
    import re

    import numpy as np
    import pyarrow as pa

    want = [_malformed_model(b) for b in blocks]
    assert [b is not None and re.fullmatch(_WELL_FORMED, b, re.S) is None for b in blocks] == want
    assert malformed_pairs_many(blocks).tolist() == want
    assert malformed_pairs_many(np.array(blocks, dtype=object)).tolist() == want
    # Arrow input, sliced out of a longer array (offsets not from 0), and as string (int32 offsets)
    arr = pa.array(["\x02", None] * cut + blocks + ["A"] * cut, type=pa.large_string())
    assert malformed_pairs_many(arr.slice(2 * cut, len(blocks))).tolist() == want
    assert malformed_pairs_many(pa.array(blocks, type=pa.string())).tolist() == want
