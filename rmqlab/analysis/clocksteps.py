"""Where a broker's clock stepped back, and the messages and index entries it left out of order.

The broker's walk over index files trusts store times to grow with the CommitLog: it skips a file
whose header range misses the query, stops a chain at the first entry older than `begin`, and
stops walking files after one that began before `begin`. A clock that steps back (NTP, a VM
migration) breaks all three. These tables find the steps and the messages they can hide, so that
a query showing each failure can be built from the data rather than written by hand. Times are
milliseconds since the epoch.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["clock_steps_back", "entries_outside_their_file", "range_beside_file", "repeated_time_keys"]


def clock_steps_back(messages: pd.DataFrame, more_than_ms: int = 500) -> pd.DataFrame:
    """The places where store times, read in CommitLog order, go back by more than `more_than_ms`.

    One row per step: ``phy_offset`` of the first message after it, ``before`` and ``after``
    (the store times either side, ms) and ``step_ms`` (negative). Cost: one sort of the messages
    by offset.

    >>> m = pd.DataFrame({"phy_offset": [0, 100, 200], "store_timestamp": [5_000, 6_000, 4_500]})
    >>> clock_steps_back(m).values.tolist()
    [[200, 6000, 4500, -1500]]

    Parameters: `messages` has phy_offset and store_timestamp (:meth:`rmqlab.store.directory.Store.messages`).
    """
    in_log_order = messages.sort_values("phy_offset", ignore_index=True)
    step = in_log_order["store_timestamp"].diff()
    back = step < -more_than_ms
    return pd.DataFrame({
        "phy_offset": in_log_order["phy_offset"][back],
        "before": in_log_order["store_timestamp"].shift()[back].astype(np.int64),
        "after": in_log_order["store_timestamp"][back],
        "step_ms": step[back].astype(np.int64)}).reset_index(drop=True)


def entries_outside_their_file(entries: pd.DataFrame) -> pd.DataFrame:
    """The index entries whose message's real store time lies outside their own file's header
    range [file_begin, file_end]: a query for that time does not search the file. Cost: O(entries).

    >>> e = pd.DataFrame({"store_timestamp": [10, 25], "file_begin": [10, 10], "file_end": [20, 20]})
    >>> entries_outside_their_file(e).index.tolist()
    [1]

    Parameters: `entries` from :func:`rmqlab.analysis.keys.index_entries`. Returns rows of `entries`.
    """
    return entries[(entries["store_timestamp"] < entries["file_begin"])
                   | (entries["store_timestamp"] > entries["file_end"])]


def range_beside_file(store_timestamp: int, file_begin: int, file_end: int,
                      width_ms: int = 50) -> tuple[int, int]:
    """A query range of at most `width_ms` that holds `store_timestamp` but does not touch the
    file's header range [file_begin, file_end]: before the file when the time is, else after it.
    For a time outside its file's range (:func:`entries_outside_their_file`) the broker skips the
    file and misses the message. Cost: O(1).

    >>> range_beside_file(1_000, 1_010, 2_000), range_beside_file(2_030, 1_010, 2_000)
    ((1000, 1009), (2001, 2030))

    Returns (begin, end), ms.
    """
    t = store_timestamp
    if t < file_begin:
        return t, min(t + width_ms, file_begin - 1)
    return max(t - width_ms, file_end + 1), t


def repeated_time_keys(occurrences: pd.DataFrame, phy_offset: int, before: int, after: int, *,
                       margin_ms: int = 200, limit: int = 40) -> pd.DataFrame:
    """Keys of messages written before a clock step back (at `phy_offset`, from `before` to
    `after`, ms) whose store times the clock then repeated: newer entries can carry earlier
    times than theirs, so a chain walk can stop before reaching them. Only times from
    ``after + margin_ms`` to `before` count; the `limit` last written come first.
    Cost: O(occurrences).

    >>> occ = pd.DataFrame({"topic": "T", "key": ["a", "b", "c"], "phy_offset": [0, 100, 300],
    ...                     "store_timestamp": [4_000, 5_900, 4_600]})
    >>> repeated_time_keys(occ, 200, before=6_000, after=4_500)["key"].tolist()
    ['b']

    Parameters: `occurrences` from :func:`rmqlab.analysis.keys.key_occurrences`; `phy_offset`,
    `before` and `after` from a row of :func:`clock_steps_back`. Returns rows of `occurrences`,
    newest offset first.
    """
    earlier = occurrences[(occurrences["phy_offset"] < phy_offset)
                          & occurrences["store_timestamp"].between(after + margin_ms, before)]
    return earlier.sort_values("phy_offset", ascending=False).head(limit)
