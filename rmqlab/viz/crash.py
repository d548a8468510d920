"""What a crash costs, drawn: lookups lost per phase after a SIGKILL of the writer, under
``rmqlab store recover`` and under the broker's own restart rule (:mod:`rmqlab.crash` runs the
trials and computes the table)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["losses_figure"]


def losses_figure(summary: pd.DataFrame) -> Figure:
    """Lookups lost per phase: after ``rmqlab store recover`` and under the broker's restart rule
    on the same crashes (bars, with the lookups attempted written below each phase). `summary` is
    :func:`rmqlab.crash.summary_table`'s table; its total row is left out. A matplotlib Figure
    made without pyplot. Cost: one small bar chart.

    >>> t = pd.DataFrame({"trials": [3, 2, 5], "lookups": [40, 10, 50], "lost_rmqlab": [0, 0, 0],
    ...                   "lost_broker": [7, 0, 7]}, index=["generate", "bulk", "total"])
    >>> len(losses_figure(t).axes[0].patches)
    4
    """
    t = summary.drop(index="total", errors="ignore")
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(t))
    w = 0.38
    b1 = ax.bar(x - w / 2, t["lost_rmqlab"], w, label="rmqlab store recover", color="#2ca02c")
    b2 = ax.bar(x + w / 2, t["lost_broker"], w, label="broker restart rule", color="#d62728")
    for bars in (b1, b2):
        ax.bar_label(bars, fmt="%d", fontsize=8)
    ax.set_xticks(x, [f"{p}\n({int(r.trials)} trials, {int(r.lookups):,} lookups)" for p, r in t.iterrows()])
    ax.set_ylabel("key lookups lost")
    ax.set_title("Lookups lost after a SIGKILL of the writer")
    ax.legend(frameon=False)
    return fig
