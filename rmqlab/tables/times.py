"""Store times (milliseconds since the epoch, as the broker keeps them) as readable UTC text.

Millisecond times are how every message, index header and query range in this package speaks;
people read them as clock times. Both formatters keep the milliseconds, because the difference
between a store time and the whole second the index keeps for it is the point of most tables.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ms_to_iso", "ms_to_clock", "utc_text_to_ms", "time_text_to_ms"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def ms_to_iso(ms: Any) -> str:
    """Milliseconds since the epoch as an ISO 8601 UTC time with milliseconds; "" for a missing
    value.

    >>> ms_to_iso(1718000000005)
    '2024-06-10T06:13:20.005Z'
    """
    if ms is None or (isinstance(ms, float) and np.isnan(ms)) or ms is pd.NA:
        return ""
    ms = int(ms)
    t = _EPOCH + _dt.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def ms_to_clock(ms: Any) -> str:
    """Milliseconds since the epoch as the UTC time of day, HH:MM:SS.mmm (no date): short enough
    for a sentence about times a few seconds apart.

    >>> ms_to_clock(1718000000005)
    '06:13:20.005'
    """
    return pd.Timestamp(int(ms), unit="ms", tz="UTC").strftime("%H:%M:%S.%f")[:-3]


def utc_text_to_ms(text: str) -> int:
    """A time written as ISO 8601 text, UTC unless it names an offset, as milliseconds since the
    epoch: the inverse of :func:`ms_to_iso`. Exact (integer arithmetic, no float rounding).

    >>> utc_text_to_ms("2024-06-10 10:00:00.500")
    1718013600500
    >>> utc_text_to_ms(ms_to_iso(1718000000005))
    1718000000005

    Raises ValueError for text that is not an ISO 8601 time.
    """
    t = _dt.datetime.fromisoformat(text)
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    return (t - _EPOCH) // _dt.timedelta(milliseconds=1)


def time_text_to_ms(text: str) -> int:
    """A time as a user writes it, as milliseconds since the epoch: epoch milliseconds
    (digits), ISO 8601 in any zone (UTC where it names none: ``2024-06-10T10:00:00+08:00``,
    ``2024-06-10 10:00``, ``...Z``), or mqadmin's ``yyyy-MM-dd#HH:mm:ss:SSS`` (taken as UTC;
    mqadmin reads it in its JVM's zone). Cost: O(len(text)).

    >>> time_text_to_ms("1718013600500"), time_text_to_ms("2024-06-10T18:00:00.5+08:00")
    (1718013600500, 1718013600500)
    >>> time_text_to_ms("2024-06-10#10:00:00:500")
    1718013600500

    Raises ValueError naming the forms accepted.
    """
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    if "#" in t:                      # mqadmin printMsg's form: date#time with ':' before the milliseconds
        day, _, clock = t.partition("#")
        parts = clock.split(":")
        t = f"{day}T{':'.join(parts[:3])}" + (f".{parts[3]}" if len(parts) > 3 else "")
    try:
        return utc_text_to_ms(t)
    except ValueError:
        raise ValueError(f"{text!r} is not a time: give epoch milliseconds, ISO 8601 (2024-06-10T10:00:00.500Z, "
                         f"an offset such as +08:00 or none for UTC) or yyyy-MM-dd#HH:mm:ss:SSS") from None
