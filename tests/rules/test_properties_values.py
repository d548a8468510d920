"""rules.properties.property_values (the vectorised look-up) against
formats.commitlog.parse_properties (MessageDecoder.string2messageProperties' split): the same
value for every name, whatever the block holds (repeated names, values holding \\x01, empty
values, a missing trailing \\x02)."""
from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats.commitlog import parse_properties
from rmqlab.rules.properties import property_values

NAMES = st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "TIMER_OUT_MS", "REAL_TOPIC", "A"])
VALUES = st.text(alphabet=st.sampled_from(list("ab1 #\x01")), max_size=6)


@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(NAMES, VALUES), max_size=6), trailing=st.booleans(), name=NAMES)
def test_property_values_are_what_the_decoder_splits(pairs, trailing, name):
    text = "\x02".join(f"{k}\x01{v}" for k, v in pairs) + ("\x02" if trailing and pairs else "")
    want = parse_properties(text.encode()).get(name)
    assert property_values(pd.Series([text]), name).tolist() == [want]
