"""rmqlab._dispatchcore's key counts against the broker's rule written out here
(IndexService.buildIndex, 4.9.7: one key for a UNIQ_KEY, plus every non-empty token of KEYS
split on MessageConst.KEY_SEPARATOR, a space), and the sum each call returns: the package reads
only the per-message counts, so the returned total was unchecked."""
from __future__ import annotations

import numpy as np

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
