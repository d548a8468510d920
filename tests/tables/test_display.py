"""rmqlab.tables.display: the one number formatter, against what each kind promises."""
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmqlab.tables.display import KINDS, column_kind, format_frame, format_value, ms_with_clock


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_count_reads_back_as_the_integer(n):
    text = format_value(n, "count")
    if abs(n) < 2**53:          # exact in a double, as format_value's float path keeps it
        assert int(text.replace(",", "")) == n
    assert "." not in text


@given(st.integers(min_value=0, max_value=2**50))
def test_bytes_carry_a_unit_and_read_back_within_rounding(n):
    text = format_value(n, "bytes")
    number, unit = text.rsplit(" ", 1)
    scale = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[unit]
    assert abs(float(number.replace(",", "")) * scale - n) <= 0.005 * scale + 0.5
    assert unit == "bytes" or 1 <= n / scale < 1024 or unit == "TiB"


@given(st.integers(min_value=0, max_value=4102444800000))
def test_time_shows_the_epoch_ms_and_the_utc_clock(ms):
    text = format_value(ms, "time")
    assert text.startswith(f"{ms} (") and text.endswith(" UTC)")
    clock = pd.Timestamp(ms, unit="ms", tz="UTC")
    assert text[len(str(ms)) + 2:-5] == f"{clock:%H:%M:%S}.{ms % 1000:03d}"


def test_named_examples():
    assert format_value(0.5, "percent") == "50.00 %"
    assert format_value(np.bool_(False), "bool") == "no"
    assert format_value(float("nan"), "count") == "-" and format_value(None, "bytes") == "-"
    assert format_value(math.inf, "hours") == "never"
    assert ms_with_clock(0, "Asia/Shanghai") == "0 (08:00:00.000 CST)"


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        format_value(1, "furlongs")
    with pytest.raises(ValueError):
        format_frame(pd.DataFrame({"a": [1]}), {"a": "furlongs"})
    with pytest.raises(KeyError, match="no column 'b'"):
        format_frame(pd.DataFrame({"a": [1]}), {"b": "count"})


def test_frame_kinds_by_name_then_dtype():
    df = pd.DataFrame({"keys": np.array([5_000_000], dtype=np.int64), "mean": [1333329.819142],
                       "store_timestamp": [1718000000005], "size_bytes": [1 << 30], "hit": [True],
                       "load_factor": [0.25], "topic": ["T"]})
    row = format_frame(df).iloc[0].to_dict()
    assert row == {"keys": "5,000,000", "mean": "1,333,330", "store_timestamp": "1718000000005 (06:13:20.005 UTC)",
                   "size_bytes": "1.00 GiB", "hit": "yes", "load_factor": "25.00 %", "topic": "T"}
    assert format_frame(df, {"keys": "text"}).iloc[0]["keys"] == "5000000"
    assert set(KINDS) >= {column_kind(c, df[c].dtype) for c in df.columns}


def test_series_becomes_a_table_without_dtype_line():
    s = pd.Series({"entries": 3, "ratio": 0.5, "ok": True, "mean": 2.25})
    out = format_frame(s, {"ratio": "percent"})
    assert list(out.columns) == ["name", "value"]
    assert out["value"].tolist() == ["3", "50.00 %", "yes", "2.250"]
    assert "dtype" not in out.to_string()
