"""rmqlab._dispatchcore's key counts against the broker's rule written out here
(IndexService.buildIndex, 4.9.7: one key for a UNIQ_KEY, plus every non-empty token of KEYS
split on MessageConst.KEY_SEPARATOR, a space), and the sum each call returns: the package reads
only the per-message counts, so the returned total was unchecked."""
from __future__ import annotations

import numpy as np
import pytest

from rmqlab import _dispatchcore  # built with the package: missing, the test fails rather than skips

TOPICS = ["T", "T", "orders", "T", "T"]
KEYS = ["a b", None, "  x  y ", "", "k"]
UNIQ = ["U1", None, None, "U4", "U5"]


def _model(keys, uniq) -> list[int]:
    return [(u is not None) + (0 if k is None else sum(1 for t in k.split(" ") if t)) for k, u in zip(keys, uniq)]


def test_count_keys_counts_and_returns_their_sum() -> None:
    want = _model(KEYS, UNIQ)
    assert want == [3, 0, 2, 1, 2]
    out = np.zeros(len(TOPICS), np.int32)
    total = _dispatchcore.count_keys(np.array(TOPICS, object), np.array(KEYS, object), np.array(UNIQ, object), out)
    assert out.tolist() == want
    assert total == sum(want)


def _arrow(values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = b"".join((v or "").encode() for v in values)
    offsets = np.cumsum([0] + [len((v or "").encode()) for v in values]).astype(np.int64)
    valid = np.array([v is not None for v in values], np.uint8)
    return offsets, np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8), valid


def test_count_keys_utf8_counts_and_returns_their_sum() -> None:
    want = _model(KEYS, UNIQ)
    out = np.zeros(len(TOPICS), np.int32)
    total = _dispatchcore.count_keys_utf8(*_arrow(KEYS), *_arrow(UNIQ), out)
    assert out.tolist() == want
    assert total == sum(want)


def _arrow_bytes(values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = b"".join(v or b"" for v in values)
    offsets = np.cumsum([0] + [len(v or b"") for v in values]).astype(np.int64)
    valid = np.array([v is not None for v in values], np.uint8)
    return offsets, np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8), valid


def test_key_hashes_utf8_names_the_row_and_the_reason_it_stopped() -> None:
    # the docstring's two ValueErrors told apart: row 0's KEYS "a" is one key and row 1's
    # "b \xff c" has "b" then a token that is not UTF-8. Room for three hashes stops at the bad
    # bytes of row 1; room for one stops at row 1's first key, before its bytes are read.
    keys, uniq = [b"a", b"b \xff c"], [None, None]
    prefix = 0
    for ch in "T#":                                  # String.hashCode of "T#", from its definition
        prefix = (31 * prefix + ord(ch)) & 0xFFFFFFFF
    for room, text in ((3, "row 1: key text is not UTF-8"), (1, "row 1: outputs too short")):
        with pytest.raises(ValueError) as err:
            _dispatchcore.key_hashes_utf8(np.zeros(2, np.int32), np.array([prefix], np.uint32), *_arrow_bytes(keys),
                                          *_arrow_bytes(uniq), np.ones(2, np.uint8), np.zeros(room, np.int64),
                                          np.zeros(room, np.int32))
        assert str(err.value) == text
