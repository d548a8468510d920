"""The dispatch rules' tag codes for a pandas column with missing TAGS, against Java's
String.hashCode computed here from its definition (s[0]*31^(n-1) + ... + s[n-1], as a
32-bit int): a message without TAGS has code 0 (CommitLog.checkMessageAndReturnSize leaves
tagsCode 0), whichever missing value pandas holds."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmqlab.rules.dispatch import tags_codes


def _java_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def test_missing_tags_in_a_pandas_series_have_code_zero() -> None:
    tags = pd.Series(["TagA", None, "标签", np.nan, ""])
    assert tags_codes(tags).tolist() == [_java_hash("TagA"), 0, _java_hash("标签"), 0, 0]
    assert tags_codes(pd.Index(["x", None])).tolist() == [_java_hash("x"), 0]
