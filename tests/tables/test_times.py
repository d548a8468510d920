"""Store times as text, checked against the standard library's own formatting."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from rmqlab.tables.times import ms_to_clock, ms_to_iso, utc_text_to_ms


@pytest.mark.parametrize("ms", [0, 999, 1_718_000_000_005, 1_718_006_399_999, 4_102_444_800_123])
def test_iso_and_clock_agree_with_datetime(ms):
    t = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    assert ms_to_iso(ms) == t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    assert ms_to_clock(ms) == t.strftime("%H:%M:%S.") + f"{ms % 1000:03d}"
    assert ms_to_iso(np.int64(ms)) == ms_to_iso(ms) == ms_to_iso(float(ms))
    assert ms_to_clock(np.int64(ms)) == ms_to_clock(ms)


@pytest.mark.parametrize("missing", [None, float("nan"), pd.NA])
def test_a_missing_time_is_empty_text(missing):
    assert ms_to_iso(missing) == ""


@pytest.mark.parametrize("ms", [0, 1, 999, 1_718_013_599_800, 1_718_000_000_001, 4_102_444_800_123])
def test_utc_text_is_read_back_exactly(ms):
    assert utc_text_to_ms(ms_to_iso(ms)) == ms
    assert utc_text_to_ms(ms_to_iso(ms)[:-1]) == ms                 # no zone: UTC
    assert utc_text_to_ms(ms_to_iso(ms)[:-1] + "+01:00") == ms - 3_600_000


def test_bad_utc_text_raises():
    with pytest.raises(ValueError):
        utc_text_to_ms("yesterday")
