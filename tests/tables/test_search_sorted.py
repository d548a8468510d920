"""rmqlab.tables.arrays.search_sorted (C, galloping from the previous answer) against
numpy.searchsorted: sorted haystacks with repeats, needles rising, falling, repeated or at
random, int64's ends included."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rmqlab._sortedsearch as native
from rmqlab.tables.arrays import search_sorted

INT64 = st.integers(-2**63, 2**63 - 1)


@settings(max_examples=500, deadline=None)
@given(haystack=st.lists(st.one_of(st.integers(-50, 50), INT64), max_size=60),
       needles=st.lists(st.one_of(st.integers(-60, 60), INT64), max_size=60), order=st.sampled_from(
           ["as drawn", "rising", "falling"]))
def test_it_is_numpy_searchsorted(haystack, needles, order):
    a = np.sort(np.array(haystack, np.int64))
    v = np.array(needles, np.int64)
    if order == "rising":
        v = np.sort(v)
    elif order == "falling":
        v = np.sort(v)[::-1].copy()
    assert search_sorted(a, v).tolist() == np.searchsorted(a, v).tolist()


def test_long_rising_needles_with_gaps():
    rng = np.random.default_rng(7)
    a = np.sort(rng.integers(0, 10**9, 200_000))
    v = np.sort(rng.integers(-10, 10**9 + 10, 50_000))
    assert (search_sorted(a, v) == np.searchsorted(a, v)).all()
    v = rng.integers(-10, 10**9 + 10, 50_000)           # and in no order
    assert (search_sorted(a, v) == np.searchsorted(a, v)).all()


def test_other_dtypes_go_to_numpy_and_bad_buffers_raise():
    assert search_sorted(np.array([1.0, 2.0]), np.array([1.5])).tolist() == [1]
    with pytest.raises(ValueError, match="int64"):
        native.lower_bounds(np.zeros(2, np.int64), np.zeros(3, np.int64), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="int64"):
        native.lower_bounds(np.zeros(3, np.int8), np.zeros(1, np.int64), np.zeros(1, np.int64))
