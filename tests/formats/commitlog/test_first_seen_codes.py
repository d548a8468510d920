"""The decode's host codes (columns._first_seen_codes) against pandas.factorize, the codes
they stand in for: any number of distinct values, in any order, above and below the few-rows
path and the few-distinct passes."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats.commitlog.columns import _first_seen_codes


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=20),
       st.lists(st.integers(0, 19), min_size=0, max_size=400))
def test_codes_are_factorize(pool, picks):
    values = np.array([pool[i % len(pool)] for i in picks], np.int64)
    codes, distinct = _first_seen_codes(values)
    want_codes, want_distinct = pd.factorize(values)
    assert codes.tolist() == want_codes.tolist()
    assert distinct.tolist() == want_distinct.tolist()
