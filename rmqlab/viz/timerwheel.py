"""The 5.x timer wheel drawn: where on the wheel's 14 days of slots the units wait, and the chain
of each slot near the read hand. Draws a :class:`rmqlab.analysis.timerwheel.WheelProfile`;
computes nothing but positions on the page."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rmqlab.analysis.timerwheel import WheelProfile
from rmqlab.tables.times import ms_to_iso

__all__ = ["timer_wheel_figure"]

PENDING_COLOUR = "#e6862e"
DEQUEUED_COLOUR = "#9a9a9a"
ROLL_COLOUR = "#7b4fb0"
READ_COLOUR = "#1f5fa8"
RESTART_COLOUR = "#c0392b"
#: slots shown in the chain panel: the pending slots nearest the read hand, then dequeued ones
_CHAIN_SLOTS = 24


def _angle(index, total: int):
    """Clockwise from the top, as a clock reads."""
    return np.pi / 2 - 2 * np.pi * np.asarray(index, dtype=float) / total


def _offset_text(ms: int) -> str:
    """A signed duration the way a reader says it: +25 s, -3 min, +1 h, +1.0 d."""
    sign = "+" if ms >= 0 else "-"
    a = abs(ms) / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if a >= size:
            v = a / size
            return f"{sign}{v:.0f} {unit}" if v >= 10 or v == int(v) else f"{sign}{v:.1f} {unit}"
    return f"{sign}{a:.0f} s"


def timer_wheel_figure(profile: WheelProfile, *, title: str | None = None,
                       figsize: tuple[float, float] = (11.0, 4.8)) -> Figure:
    """Two panels. Left, the wheel: its slotsTotal x 2 places round a circle (14 days at 1 s
    precision, clockwise from the top), a spoke for each slot units are due in, as long as its
    chain, orange while pending, grey once dequeued, purple where a roll waits; the hands are the
    checkpoint's read time (blue) and the oldest slot a restart at ``now`` would still read (red:
    pending units behind it are never delivered). Right, the chains of the slots nearest the read
    hand: units per slot, split into pending and dequeued, with delete markers counted. Cost:
    O(used slots).

    >>> import pandas as pd
    >>> from rmqlab.analysis.timerwheel import SLOT_COLUMNS
    >>> slots = pd.DataFrame([[1718000005000, 5, 3, 3, 0, 0, 1, 0, 1]], columns=SLOT_COLUMNS)
    >>> fig = timer_wheel_figure(WheelProfile(slots, 1718000000000, 1718000001000, 1718000000000, 1000))
    >>> len(fig.axes)
    2
    """
    fig = Figure(figsize=figsize, layout="constrained")
    wheel = fig.add_subplot(1, 2, 1, projection="polar")
    chains = fig.add_subplot(1, 2, 2)
    s = profile.slots
    total = profile.slots_total
    top = max(int(s["units"].max()), 1) if len(s) else 1
    length = 0.25 + 0.75 * (np.log1p(s["units"].to_numpy()) / math.log1p(top)) if len(s) else np.zeros(0)
    theta = _angle(s["index"].to_numpy(), total)
    colour = np.where(s["rolled"].to_numpy() > 0, ROLL_COLOUR,
                      np.where(s["pending"].to_numpy() > 0, PENDING_COLOUR, DEQUEUED_COLOUR))
    for t, r, c in zip(theta, length, colour, strict=True):
        wheel.plot([t, t], [1.3, 1.3 + 0.8 * r], color=c, lw=2.2, solid_capstyle="butt")
    ring = np.linspace(0, 2 * np.pi, 361)
    wheel.plot(ring, np.full_like(ring, 1.3), color="#444444", lw=0.8)
    per_day = 86_400_000 // profile.precision_ms
    for day in range(0, max(total // per_day, 1), 2):
        wheel.text(_angle(day * per_day, total), 2.45, f"day {day}", ha="center", va="center", fontsize=9,
                   color="#555555")
    for ms, c, r, style, label in ((profile.read_ms, READ_COLOUR, 1.25, "-", "read time (checkpoint)"),
                                   (profile.restart_reads_from_ms, RESTART_COLOUR, 0.9, "--",
                                    "a restart now reads from")):
        if ms:
            a = _angle((ms // profile.precision_ms) % total, total)
            wheel.plot([a, a], [0, r], color=c, lw=1.8, ls=style, label=label)
    wheel.set_ylim(0, 2.6)
    wheel.set_axis_off()
    wheel.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=9, frameon=False, ncol=1)
    wheel.set_title(f"{len(s)} slots in use of {total:,}", fontsize=10)

    pend = s[s["pending"] > 0].sort_values("slot_ms").head(_CHAIN_SLOTS)
    rest = s[s["pending"] == 0].sort_values("slot_ms", ascending=False).head(max(_CHAIN_SLOTS - len(pend), 0))
    shown = pd.concat([rest.iloc[::-1], pend])
    x = np.arange(len(shown))
    chains.bar(x, shown["dequeued"], color=DEQUEUED_COLOUR, label="dequeued")
    chains.bar(x, shown["pending"], bottom=shown["dequeued"], color=PENDING_COLOUR, label="pending")
    marks = shown["delete_markers"].to_numpy()
    for i in np.flatnonzero(marks):
        chains.text(x[i], shown["units"].iloc[i], f"{marks[i]} del", ha="center", va="bottom", fontsize=9)
    labels = [_offset_text(v - profile.read_ms) for v in shown["slot_ms"]]
    step = max(1, math.ceil(len(x) / 12))
    chains.set_xticks(x[::step], labels[::step], rotation=40, ha="right", fontsize=9)
    chains.set_ylabel("units in the slot's chain", fontsize=10)
    chains.set_xlabel("slot, from the read time", fontsize=10)
    chains.tick_params(axis="y", labelsize=9)
    chains.legend(fontsize=9, frameon=False, loc="upper left")
    if len(pend) and len(rest):
        chains.axvline(len(rest) - 0.5, color=READ_COLOUR, lw=1.2)
    chains.set_title("chains of the slots nearest the read time", fontsize=10)
    fig.suptitle(title or f"timer wheel, read to {ms_to_iso(profile.read_ms)}", fontsize=11)
    return fig
