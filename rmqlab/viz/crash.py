"""What a crash costs, drawn: lookups lost per phase after a SIGKILL of the writer, under
``rmqlab store recover`` and under the broker's own restart rule (:mod:`rmqlab.lab.crash` runs the
trials and computes the table)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["losses_figure", "restart_figure"]


def losses_figure(summary: pd.DataFrame) -> Figure:
    """Lookups lost per phase: after ``rmqlab store recover`` and under the broker's restart rule
    on the same crashes (bars, with the lookups attempted written below each phase). `summary` is
    :func:`rmqlab.lab.crash.summary_table`'s table; its total row is left out. A matplotlib Figure
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


def restart_figure(story) -> Figure:
    """One crash, two restarts (:func:`rmqlab.lab.crash.restart_story`), on the store-time axis (s
    after the first message). Top: the crashed index files as bars over their time span, the
    ones the broker deletes (endTimestamp > indexMsgTimestamp) red, the checkpoint's
    indexMsgTimestamp and the first message the broker re-dispatches as lines. Bottom: per
    second of store time, the lookups (one per key of each message written before the kill) and
    those that no longer find their message after the broker's restart and after
    ``rmqlab store recover``. The bar patches have
    gids ``file:<name>``. Cost: one small figure."""
    t0 = int(story.written_timestamps.min()) if len(story.written_timestamps) else 0
    sec = lambda ms: (np.asarray(ms, dtype=np.int64) - t0) / 1000.0       # noqa: E731
    fig = Figure(figsize=(11.0, 5.4), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[1.1, 1.4])
    files = story.index_files
    for i, r in enumerate(files.itertuples()):
        deleted = bool(r.deleted_by_broker)
        bar = top.barh(i, sec(r.end_timestamp) - sec(r.begin_timestamp), left=sec(r.begin_timestamp), height=0.6,
                       color="#d62728" if deleted else "#9ecae1", edgecolor="#444444", linewidth=0.6)
        bar.patches[0].set_gid(f"file:{r.name}")
        label = f"{r.name}  {r.keys:,} keys" + ("  deleted by the broker" if deleted else "")
        top.text(sec(r.end_timestamp) + 0.3, i, label,
                 va="center", fontsize=7.5)
    cp = story.checkpoint["index_msg_timestamp"]
    if cp > 0:
        top.axvline(sec(cp), color="#2ca02c", linestyle="--", linewidth=1)
        top.text(sec(cp), -0.75, "indexMsgTimestamp ", color="#2ca02c", fontsize=7.5, va="center", ha="right")
    if story.recovery_from_timestamp is not None:
        for ax in (top, bottom):
            ax.axvline(sec(story.recovery_from_timestamp), color="#9467bd", linestyle=":", linewidth=1.2)
        top.text(sec(story.recovery_from_timestamp), -0.75, " the broker re-dispatches from here",
                 color="#9467bd", fontsize=7.5, va="center", ha="left")
    if len(files):                       # room on the right for the last file's label
        first, last = float(sec(files["begin_timestamp"].min())), float(sec(files["end_timestamp"].max()))
        top.set_xlim(min(0.0, first), last * 1.45)
    top.set_yticks([])
    top.set_ylim(len(files) - 0.4, -1.0)
    top.set_title(f"Crashed index folder (writer killed at write event {story.kill_at:,} of {story.events_total:,})",
                  fontsize=9.5)
    lookups = sec(story.lookup_timestamps)
    edges = np.arange(0, max(float(lookups.max()) if len(lookups) else 1.0, 1.0) + 1.0, 1.0)
    bottom.hist(lookups, bins=edges, color="#c6dbef",
                label=f"lookups: the keys of the messages written before the kill ({len(lookups):,})")
    bottom.hist(sec(story.broker_lost["store_timestamp"]), bins=edges, color="#d62728",
                label=f"lookups lost, broker restart rule ({len(story.broker_lost):,})")
    bottom.hist(sec(story.rmqlab_lost["store_timestamp"]), bins=edges, color="#2ca02c",
                label=f"lookups lost, rmqlab store recover ({len(story.rmqlab_lost):,})")
    bottom.set_xlabel("store time, seconds after the first message")
    bottom.set_ylabel("lookups per second")
    fig.legend(*bottom.get_legend_handles_labels(), fontsize=8, frameon=False, loc="outside lower center", ncol=3)
    return fig
