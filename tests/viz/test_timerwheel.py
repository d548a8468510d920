"""The timer wheel figure draws what the profile says: one spoke a used slot on the wheel, at
its place (clockwise from the top), the chains' bars as tall as their units, pending above
dequeued; text no smaller than 9 px at 100 dpi."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmqlab.analysis.timerwheel import SLOT_COLUMNS, WheelProfile
from rmqlab.formats import timer as tm
from rmqlab.viz.timerwheel import timer_wheel_figure

T0 = 1_718_000_000_000


def _profile() -> WheelProfile:
    rows = [[T0 - 5000, 0, 2, 0, 2, 0, 0, 0, 1], [T0 + 3000, 0, 4, 4, 0, 0, 1, 1, 2],
            [T0 + 86_400_000, 0, 1, 1, 0, 1, 0, 0, 1]]
    slots = pd.DataFrame(rows, columns=SLOT_COLUMNS)
    slots["index"] = (slots["slot_ms"] // 1000) % (tm.SLOTS_TOTAL * 2)
    return WheelProfile(slots, T0, T0 + 1000, T0, 1000)


def test_one_spoke_a_slot_at_its_place():
    prof = _profile()
    fig = timer_wheel_figure(prof)
    wheel = fig.axes[0]
    spokes = [ln for ln in wheel.get_lines() if len(ln.get_xdata()) == 2 and ln.get_ydata()[0] == 1.3]
    assert len(spokes) == len(prof.slots)
    want = np.pi / 2 - 2 * np.pi * prof.slots["index"].to_numpy() / prof.slots_total
    assert np.allclose(sorted(s.get_xdata()[0] for s in spokes), sorted(want))


def test_chain_bars_are_the_units_pending_over_dequeued():
    fig = timer_wheel_figure(_profile())
    bars = fig.axes[1].patches
    heights = [(round(b.get_x() + b.get_width() / 2), b.get_y(), b.get_height()) for b in bars]
    dequeued = [h for h in heights[:3]]
    pending = [h for h in heights[3:]]
    assert [h[2] for h in dequeued] == [2, 0, 0] and [h[2] for h in pending] == [0, 4, 1]
    assert [h[1] for h in pending] == [2, 0, 0]


def test_text_is_legible():
    fig = timer_wheel_figure(_profile())
    fig.canvas.draw()
    sizes = [t.get_fontsize() for ax in fig.axes for t in ax.texts + ax.get_xticklabels()]
    assert min(sizes) * 100 / 72 >= 9   # points at 100 dpi, in pixels
