"""How numbers look to a person: the one formatter of the notebooks, widgets, reports and the
command line.

Counts carry thousands separators, bytes carry units, ratios read as percentages, booleans as
yes/no and store times as a clock time beside their epoch milliseconds. A table meant to be read
goes through :func:`format_frame`, which picks each column's kind from its name and dtype (or
from what it is told), so no cell shows ``5,000,000.0000``, ``1333329.819142`` or
``dtype: object``.

Cost: :func:`format_value` is O(1) a value, plain Python; :func:`format_frame` one call per
cell, meant for tables of at most a few thousand rows (the ones people read).

>>> format_value(5_000_000, "count"), format_value(420_000_040, "bytes"), format_value(0.9777, "percent")
('5,000,000', '400.54 MiB', '97.77 %')
>>> format_value(True, "bool"), format_value(1718000000005, "time")
('yes', '1718000000005 (06:13:20.005 UTC)')
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["KINDS", "format_value", "column_kind", "format_frame", "ShownFrame", "ms_with_clock"]

#: Every kind :func:`format_value` knows, with what it shows.
KINDS = {
    "count": "an integer with thousands separators",
    "bytes": "binary units (bytes, KiB .. TiB) with two decimals",
    "bytes_exact": "bytes with one decimal (averages of record sizes)",
    "number": "3 decimals below 1,000, a separated integer above",
    "amount": "a value as written in a plan: a whole number as a count, else as a number",
    "percent": "a fraction (0.5) shown as a percentage (50.00 %)",
    "hours": "minutes, hours or days as fits",
    "days": "days, long spans also in years; inf is 'never'",
    "bool": "yes / no",
    "time": "epoch milliseconds with the UTC clock time beside them",
    "clock": "the UTC clock time alone, HH:MM:SS.mmm UTC",
    "text": "as it is",
}


def _binary(x: float) -> str:
    for name, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(x) >= size:
            return f"{x / size:,.2f} {name}"
    return f"{x:,.0f} bytes"


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


#: Epoch ms a clock time can be shown for (years 1 to 9999: Python's datetime range).
_CLOCK_RANGE = (-62_135_596_800_000, 253_402_300_799_999)


def ms_with_clock(ms: Any, tz: str = "UTC") -> str:
    """Epoch milliseconds with the clock time they name beside them, in the zone ``tz`` (an IANA
    name; the broker writes UTC epoch times, index file names use its local zone).

    >>> ms_with_clock(1718000000005), ms_with_clock(1718000000005, "Asia/Shanghai")
    ('1718000000005 (06:13:20.005 UTC)', '1718000000005 (14:13:20.005 CST)')
    >>> ms_with_clock(2**63 - 1)          # a query's open end: no clock shows it
    '9223372036854775807 (no clock time: a bound such as Long.MAX_VALUE)'
    """
    if _is_missing(ms):
        return "-"
    if not _CLOCK_RANGE[0] <= int(ms) <= _CLOCK_RANGE[1]:
        return f"{int(ms)} (no clock time: a bound such as Long.MAX_VALUE)"
    t = pd.Timestamp(int(ms), unit="ms", tz="UTC").tz_convert(tz)
    return f"{int(ms)} ({t.strftime('%H:%M:%S.%f')[:-3]} {t.strftime('%Z')})"


def format_value(value: Any, kind: str) -> str:
    """One value as a person reads it; ``kind`` is one of :data:`KINDS`. A missing value is "-".

    >>> format_value(15540001480, "bytes"), format_value(2.6709, "hours"), format_value(math.inf, "days")
    ('14.47 GiB', '2.67 h', 'never')
    >>> format_value(95.0, "hours"), format_value(1454.5, "days"), format_value(1333329.819142, "number")
    ('3.96 days (95 h)', '1,454 days (3.98 years)', '1,333,330')

    Raises ValueError for a kind not in :data:`KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if _is_missing(value):
        return "-"
    if kind == "text":
        return str(value)
    if kind == "bool":
        return "yes" if bool(value) else "no"
    if kind == "time":
        return ms_with_clock(value)
    if kind == "clock":
        return pd.Timestamp(int(value), unit="ms", tz="UTC").strftime("%H:%M:%S.%f")[:-3] + " UTC"
    x = float(value)
    if kind in ("days", "hours") and math.isinf(x):
        return "never"
    if kind == "bytes":
        return _binary(x)
    if kind == "bytes_exact":
        return f"{x:,.1f} bytes"
    if kind == "amount":
        kind = "count" if x.is_integer() else "number"
    if kind == "count":
        return f"{x:,.0f}"
    if kind == "number":
        return f"{x:,.3f}" if abs(x) < 1000 else f"{x:,.0f}"
    if kind == "percent":
        p = 100.0 * x
        return f"{p:.2f} %" if p >= 0.01 or p == 0 else f"{p:.2e} %"
    if kind == "hours":
        if x < 1:
            return f"{x * 60:.1f} min"
        if x < 48:
            return f"{x:.2f} h"
        return f"{x / 24:.2f} days ({x:,.0f} h)"
    # days
    if x >= 730:
        return f"{x:,.0f} days ({x / 365.25:.2f} years)"
    return f"{x:,.1f} days"


_TIME_SUFFIXES = ("timestamp", "_ms", "_time_ms")
_BYTES_SUFFIXES = ("bytes", "_size", "size_bytes")
_RATIO_WORDS = ("ratio", "share", "fraction", "occupancy", "load_factor")


def column_kind(name: str, dtype: Any) -> str:
    """The kind :func:`format_frame` gives a column it was not told about, from its name first
    (``*timestamp`` and ``*_ms`` are times, ``*bytes`` bytes, ratios and shares percentages),
    then from its dtype (bool yes/no, integer count, float number, anything else text).

    >>> column_kind("begin_timestamp", "int64"), column_kind("file_bytes", "int64"), column_kind("occupancy", "float64")
    ('time', 'bytes', 'percent')
    >>> column_kind("keys", "int64"), column_kind("found", "bool"), column_kind("mean", "float64")
    ('count', 'bool', 'number')
    """
    lower = str(name).lower()
    dt = np.dtype(dtype) if not isinstance(dtype, pd.api.extensions.ExtensionDtype) else dtype
    numeric = pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt)
    if numeric:
        if lower.endswith(_TIME_SUFFIXES) and pd.api.types.is_integer_dtype(dt):
            return "time"
        if lower.endswith(_BYTES_SUFFIXES):
            return "bytes"
        if any(w in lower for w in _RATIO_WORDS) and pd.api.types.is_float_dtype(dt):
            return "percent"
    if pd.api.types.is_bool_dtype(dt):
        return "bool"
    if pd.api.types.is_integer_dtype(dt):
        return "count"
    if pd.api.types.is_float_dtype(dt):
        return "number"
    return "text"


class ShownFrame(pd.DataFrame):
    """A DataFrame of text for a person (what :func:`format_frame` returns): in a notebook its
    HTML leaves out pandas' row numbers (an unnamed integer index: 0..N, or what a filter left of
    them) and sits in a box that scrolls sideways when the table is wider than the page, so no
    column is cut at the right edge. Row labels (a named or non-integer index) are shown. Every
    other use is a plain DataFrame's. Cost: the HTML, O(cells shown).

    >>> html = ShownFrame({"a": ["x", "y"]})._repr_html_()
    >>> "<th>0</th>" in html, "overflow-x:auto" in html
    (False, True)
    >>> "<th>b</th>" in ShownFrame({"a": ["x"]}, index=["b"])._repr_html_()
    True
    """

    @property
    def _constructor(self):
        return ShownFrame

    def row_numbers(self) -> bool:
        """True when the index is pandas' row numbers (unnamed, integer), not row labels."""
        return self.index.name is None and self.index.nlevels == 1 and pd.api.types.is_integer_dtype(self.index)

    def _repr_html_(self) -> str:
        table = self.to_html(index=not self.row_numbers(), max_rows=pd.get_option("display.max_rows"),
                             max_cols=pd.get_option("display.max_columns"), show_dimensions=False, border=0,
                             classes="dataframe")
        return f'<div class="rmqlab-table-box" style="max-width:100%;overflow-x:auto">{table}</div>'


def format_frame(frame: pd.DataFrame | pd.Series, kinds: Mapping[str, str] | None = None) -> pd.DataFrame:
    """A copy of ``frame`` with every cell as text a person reads: each column by its kind in
    ``kinds``, else by :func:`column_kind`. A Series becomes a two-column table (its index as
    ``name``), so no ``dtype: object`` line is ever printed. The index is kept; the copy is a
    :class:`ShownFrame`, whose notebook HTML leaves pandas' row numbers out.

    >>> df = pd.DataFrame({"keys": [5_000_000], "file_bytes": [420_000_040], "full": [False],
    ...                    "occupancy": [0.97], "begin_timestamp": [1718000000005]})
    >>> format_frame(df).iloc[0].tolist()
    ['5,000,000', '400.54 MiB', 'no', '97.00 %', '1718000000005 (06:13:20.005 UTC)']
    >>> format_frame(pd.Series({"entries": 3, "mean": 1.5}, name="value")).to_dict("records")
    [{'name': 'entries', 'value': '3'}, {'name': 'mean', 'value': '1.500'}]

    Raises ValueError for an unknown kind, KeyError for a ``kinds`` column the frame lacks.
    """
    kinds = dict(kinds or {})
    if isinstance(frame, pd.Series):
        values = frame.tolist()
        name = frame.name if frame.name is not None else "value"
        kind_of_row = [kinds.get(str(k)) for k in frame.index]
        text = [format_value(v, k) if k else _auto(v) for v, k in zip(values, kind_of_row, strict=True)]
        return ShownFrame({"name": [str(k) for k in frame.index], name: text})
    missing = [c for c in kinds if c not in frame.columns]
    if missing:
        raise KeyError(f"format_frame: no column {missing[0]!r} in {list(frame.columns)}")
    out = {}
    for col in frame.columns:
        kind = kinds.get(col) or column_kind(col, frame[col].dtype)
        out[col] = [format_value(v, kind) for v in frame[col].tolist()]
    return ShownFrame(out, index=frame.index, columns=frame.columns)


def _auto(value: Any) -> str:
    """One value of a mixed Series, by its own type."""
    if isinstance(value, bool | np.bool_):
        return format_value(value, "bool")
    if isinstance(value, int | np.integer):
        return format_value(value, "count")
    if isinstance(value, float | np.floating):
        if not _is_missing(value) and float(value).is_integer() and abs(float(value)) < 2**53:
            return format_value(value, "count")
        return format_value(value, "number")
    return format_value(value, "text")
