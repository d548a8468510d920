"""rmqlab.tables.arrays.distinct against numpy.unique, with and without `runs`: shuffled values,
values in ascending runs with a few out of order (key codes of messages in order), repeats and
int64's ends."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.tables.arrays import distinct

INT64 = st.integers(-2**63, 2**63 - 1)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(st.integers(-20, 20), INT64), max_size=80), runs=st.booleans(),
       shape=st.sampled_from(["as drawn", "sorted", "sorted, groups of three reversed"]))
def test_it_is_numpy_unique(values, runs, shape):
    v = np.array(values, np.int64)
    if shape != "as drawn":
        v = np.sort(v)
    if shape == "sorted, groups of three reversed":
        v = np.concatenate([v[a:a + 3][::-1] for a in range(0, len(v), 3)] or [v])
    got = distinct(v, runs=runs)
    assert got.dtype == np.int64
    assert got.tolist() == np.unique(v).tolist()


def test_key_codes_of_messages_in_order():
    """A message's keys (row << 31 | hash) in the order the message lists them: ascending by
    row, the hashes of a row in any order, and a key repeated within its message."""
    rng = np.random.default_rng(7)
    rows = np.repeat(np.arange(5000, dtype=np.int64), rng.integers(1, 4, 5000))
    codes = (rows << 31) | rng.integers(0, 2**31, len(rows))
    codes[1::7] = codes[0:-1:7]       # some keys twice in a row
    assert distinct(codes, runs=True).tolist() == np.unique(codes).tolist()
