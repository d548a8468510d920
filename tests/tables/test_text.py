"""rmqlab.tables.text's C formatter (rmqlab._textrows) against its Python model, row by row:
any parts, any values (int64's ends included), any grouping; and the errors it raises for
parts that do not fit the rows."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.tables.text import format_rows, format_rows_py, interleave, interleave_py

INT64 = st.integers(-2**63, 2**63 - 1)
WORDS = st.text(max_size=6)


@st.composite
def parts_and_rows(draw):
    n = draw(st.integers(0, 12))
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["literal", "int", "choice", "texts"]))
        if kind == "literal":
            parts.append(draw(WORDS))
        elif kind == "int":
            parts.append(np.array(draw(st.lists(INT64, min_size=n, max_size=n)), np.int64))
        elif kind == "choice":
            choices = tuple(draw(st.lists(WORDS, min_size=1, max_size=4)))
            parts.append((np.array(draw(st.lists(st.integers(0, len(choices) - 1), min_size=n, max_size=n)),
                                    np.uint8), choices))
        else:
            parts.append(draw(st.lists(WORDS, min_size=n, max_size=n)))
    return parts, n


@settings(max_examples=300, deadline=None)
@given(parts_and_rows())
def test_format_rows_is_its_model(pn):
    parts, n = pn
    text, ends = format_rows(parts, n)
    want_text, want_ends = format_rows_py(parts, n)
    assert text == want_text
    assert ends.tolist() == want_ends.tolist()


@settings(max_examples=200, deadline=None)
@given(heads=parts_and_rows(), data=st.data())
def test_interleave_is_its_model(heads, data):
    parts, n = heads
    head, head_ends = format_rows(parts + ["\n"], n)
    counts = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), np.int64)
    rows, row_ends = format_rows(["| ", np.arange(int(counts.sum()), dtype=np.int64), "\n"], int(counts.sum()))
    got = interleave(head, head_ends, rows, row_ends, counts)
    assert got == interleave_py(head, head_ends, rows, row_ends, counts)
    assert len(got) == len(head) + len(rows)


def test_int64_extremes_in_decimal():
    values = np.array([0, -1, 9, 10, -(2**63), 2**63 - 1], np.int64)
    text, _ = format_rows([values, ","], len(values))
    assert text == b"0,-1,9,10,-9223372036854775808,9223372036854775807,"


def test_parts_that_do_not_fit_the_rows_raise():
    with pytest.raises(ValueError, match="bytes for 3 rows"):
        format_rows([np.arange(2)], 3)
    with pytest.raises(ValueError, match="code 2 of 2 choices"):
        format_rows([(np.array([0, 2]), ("a", "b"))], 2)
    with pytest.raises(ValueError, match="texts must be a list of 2"):
        format_rows([["a"]], 2)
    with pytest.raises(ValueError, match="n must be >= 0"):
        format_rows([], -1)
    head, he = format_rows(["h\n"], 2)
    rows, re = format_rows(["r\n"], 3)
    with pytest.raises(ValueError, match="add up to 2, not the 3 rows"):
        interleave(head, he, rows, re, np.array([1, 1]))
    with pytest.raises(ValueError, match="negative"):
        interleave(head, he, rows, re, np.array([4, -1]))
    with pytest.raises(ValueError, match="last end"):
        interleave(head[:-1], he, rows, re, np.array([1, 2]))


def test_the_c_module_refuses_parts_it_cannot_read():
    import rmqlab._textrows as native

    with pytest.raises(TypeError, match="sequence"):
        native.format_rows(5, 1)
    with pytest.raises(TypeError):
        native.format_rows([("x", b"")], 1)                  # a kind that is not an int
    with pytest.raises(TypeError, match="not a \\(kind"):
        native.format_rows([b"literal"], 1)
    with pytest.raises(ValueError, match="unknown kind 9"):
        native.format_rows([(9, b"")], 1)
    with pytest.raises(TypeError, match="literal must be bytes"):
        native.format_rows([(0, "str")], 1)
    with pytest.raises(TypeError, match="choices must be a tuple"):
        native.format_rows([(2, np.zeros(1, np.uint8))], 1)
    with pytest.raises(TypeError, match="row 0 is not bytes"):
        native.format_rows([(3, ["str"])], 1)
    with pytest.raises(ValueError, match="at most 64 parts"):
        native.format_rows([(0, b"")] * 65, 1)
