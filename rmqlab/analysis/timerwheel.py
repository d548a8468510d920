"""The timer wheel of a 5.x store as the figures draw it: each used slot with its units, and the
wheel's hands (the checkpoint's read time, a restart's window), from
:func:`rmqlab.store.timers.timer_entries` (which names the TimerMessageStore rules it follows).

>>> import tempfile
>>> from rmqlab.store.directory import Store
>>> wheel_profile(Store(tempfile.mkdtemp())).slots.shape[0]
0
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rmqlab.formats import timer as tm

if TYPE_CHECKING:
    from rmqlab.store.directory import Store

__all__ = ["WheelProfile", "wheel_profile", "SLOT_COLUMNS"]

#: WheelProfile.slots' columns
SLOT_COLUMNS = ("slot_ms", "index", "units", "pending", "dequeued", "rolled", "delete_markers", "cancelled",
                "topics")


@dataclass(frozen=True)
class WheelProfile:
    """A wheel to draw: ``slots`` (one row a slot that units are due in: :data:`SLOT_COLUMNS`;
    ``index`` is the slot's place on the wheel, ``units`` its chain length, the others how many
    of them are pending, dequeued, rolls, delete markers, cancelled, and the distinct real
    topics), the checkpoint's ``read_ms`` (slots from here on are pending), ``now_ms`` and the
    oldest slot a restart at ``now_ms`` still reads (``restart_reads_from_ms``), the
    ``precision_ms`` and the wheel's ``slots_total`` (slotsTotal x 2 places)."""

    slots: pd.DataFrame
    read_ms: int
    now_ms: int
    restart_reads_from_ms: int
    precision_ms: int
    slots_total: int = tm.SLOTS_TOTAL * 2


def wheel_profile(store: Store, *, now: int | None = None) -> WheelProfile:
    """The store's wheel, slot by slot, and its hands for a restart at `now` (ms; None: the
    current time). A store without a timer store gives no slots. Cost: :func:`timer_entries`
    and one group-by over its units."""
    from rmqlab.store.timers import has_timer_store, timer_entries

    now = int(time.time() * 1000) if now is None else int(now)
    if not has_timer_store(store):
        empty = pd.DataFrame({c: np.zeros(0, np.int64) for c in SLOT_COLUMNS})
        return WheelProfile(empty, 0, now, 0, tm.DEFAULT_PRECISION_MS)
    e = timer_entries(store)
    p, read = e.attrs["precision_ms"], e.attrs["checkpoint"].last_read_time_ms
    g = e.assign(pending=e["state"] == "pending", dequeued=e["state"] == "dequeued").groupby("slot_ms")
    slots = pd.DataFrame({
        "units": g.size(), "pending": g["pending"].sum(), "dequeued": g["dequeued"].sum(), "rolled": g["roll"].sum(),
        "delete_markers": g["delete_marker"].sum(), "cancelled": g["cancelled"].sum(),
        "topics": g["real_topic"].nunique(),
    }).reset_index()
    slots["index"] = (slots["slot_ms"] // p) % (tm.SLOTS_TOTAL * 2)
    reads_from = max(read, now // p * p - tm.SLOTS_TOTAL * p + tm.TIMER_BLANK_SLOTS * p)
    return WheelProfile(slots[list(SLOT_COLUMNS)].astype(np.int64), int(read), now, int(reads_from), p)
