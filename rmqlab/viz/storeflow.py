"""The store's data flow drawn from a real store: producer -> CommitLog -> ReputMessageService ->
ConsumeQueue / IndexFile -> consumer, each box with the counts :func:`rmqlab.analysis.storeflow.store_flow`
measured, each arrow numbered, and below the chart a note an arrow: where one followed message went
(file, byte, entry).

>>> from rmqlab.lab.sample import sample_store
>>> from rmqlab.analysis.storeflow import store_flow
>>> fig = store_flow_figure(store_flow(sample_store()))
>>> sorted(p.get_gid() for p in fig.axes[0].patches if (p.get_gid() or "").startswith("box:"))[:3]
['box:CommitLog', 'box:ConsumeQueue', 'box:IndexFile']
"""
from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from rmqlab.analysis.storeflow import StoreFlow
from rmqlab.tables.display import format_value, ms_with_clock
from rmqlab.viz import fonts

__all__ = ["store_flow_figure", "dispatch_lag_figure", "tag_filter_figure"]

#: Box centres and widths, chart units (y grows downwards); the chart is 18.5 units wide.
_AT = {"producer": (1.35, 3.0), "CommitLog": (5.15, 3.0), "ReputMessageService": (9.35, 3.0),
       "ConsumeQueue": (13.55, 1.2), "IndexFile": (13.55, 4.8), "consumer": (17.0, 1.2), "query": (17.0, 4.8)}
_WIDTH = {"producer": 2.5, "CommitLog": 3.0, "ReputMessageService": 3.3, "ConsumeQueue": 3.0, "IndexFile": 3.0,
          "consumer": 2.8, "query": 2.8}
_BOX_H = 1.55
_COLOURS = {"producer": "#fdd0a2", "CommitLog": "#c6dbef", "ReputMessageService": "#dadaeb",
            "ConsumeQueue": "#c7e9c0", "IndexFile": "#fbb4ae", "consumer": "#fdd0a2", "query": "#fdd0a2"}
#: The figure's width (inches): 1100 px at 100 dpi, the width of a notebook's column, so nothing shrinks it.
_FIG_W = 11.0
_CHART_H, _NOTE_LINE_H, _TITLE_H = 4.2, 0.2, 0.45      # inches
#: Characters of a note line, and of a box line per chart unit of width (DejaVu Sans at SMALL points).
_NOTE_CHARS, _CHARS_PER_UNIT = 150, 8.4


def _box(ax, name: str, title: str, lines: list[str]) -> None:
    x, y = _AT[name]
    w = _WIDTH[name]
    patch = FancyBboxPatch((x - w / 2, y - _BOX_H / 2), w, _BOX_H,
                           boxstyle="round,pad=0.03,rounding_size=0.12",
                           facecolor=_COLOURS[name], edgecolor="#555555", linewidth=0.9)
    patch.set_gid(f"box:{name}")
    ax.add_patch(patch)
    ax.text(x, y - _BOX_H / 2 + 0.25, title, ha="center", va="center", fontsize=fonts.TEXT, fontweight="bold")
    wrapped = [part for line in lines for part in textwrap.wrap(line, int(w * _CHARS_PER_UNIT))]
    ax.text(x, y - _BOX_H / 2 + 0.5, "\n".join(wrapped), ha="center", va="top", fontsize=fonts.SMALL,
            linespacing=1.25)


def _edge(name: str, side: str, dy: float = 0.0) -> tuple[float, float]:
    x, y = _AT[name]
    return (x + (_WIDTH[name] / 2 if side == "right" else -_WIDTH[name] / 2), y + dy)


def _arrow(ax, a: tuple[float, float], b: tuple[float, float], number: int | None = None) -> None:
    """An arrow from `a` to `b`, with its `number` in a circle at its middle (the note below the
    chart with that number says what went along it)."""
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=11, color="#444444", linewidth=1.0))
    if number is not None:
        ax.text((a[0] + b[0]) / 2, (a[1] + b[1]) / 2, str(number), ha="center", va="center", fontsize=fonts.SMALL,
                fontweight="bold", bbox=dict(boxstyle="circle,pad=0.25", facecolor="white", edgecolor="#444444",
                                             linewidth=0.8))


def _notes(flow: StoreFlow) -> list[str]:
    """What the followed message left along each numbered arrow, one note an arrow, and the checkpoint."""
    m = flow.followed
    count = lambda v: format_value(v, "count")          # noqa: E731
    notes = []
    if m is not None:
        notes += [
            f"1  producer -> CommitLog: {count(m.total_size)} bytes appended at CommitLog offset {count(m.phy_offset)}",
            f"2  CommitLog -> ReputMessageService: read in order, file {m.commitlog_file}, byte {count(m.position)}",
            (f"3  ReputMessageService -> ConsumeQueue: {m.topic}/{m.queue_id}, queue offset {count(m.queue_offset)}: "
             f"file {m.consume_queue_file}, byte {count(m.unit_position)} holds the unit (CommitLog offset "
             f"{count(m.unit_commitlog_offset)}, size {m.unit_size}, tags code {m.unit_tags_code})"
             if m.consume_queue_file else "3  ReputMessageService -> ConsumeQueue: no unit (not dispatchable)"),
            (f"4  ReputMessageService -> IndexFile: {len(m.index_keys)} keys into file "
             f"{', '.join(sorted({r.file for r in m.index_entries}))}: "
             + "; ".join(f"{_short(r.key.split('#', 1)[1])}: slot {count(r.slot)}, entry {count(r.entry)}"
                         for r in m.index_entries)),
            f"5  ConsumeQueue -> consumer: unit {count(m.queue_offset)} -> CommitLog offset {count(m.phy_offset)}",
            f"6  IndexFile -> query by key: entry -> CommitLog offset {count(m.phy_offset)}",
        ]
    if flow.checkpoint:
        cp = flow.checkpoint
        notes.append(f"checkpoint: physicMsgTimestamp {ms_with_clock(cp['physic_msg_timestamp'])}, "
                     f"logicsMsgTimestamp {ms_with_clock(cp['logics_msg_timestamp'])}, "
                     f"indexMsgTimestamp {ms_with_clock(cp['index_msg_timestamp'])}")
    return notes


def _short(key: str, chars: int = 24) -> str:
    return key if len(key) <= chars else key[:chars - 1] + "…"


def store_flow_figure(flow: StoreFlow) -> Figure:
    """Boxes for the producers, the CommitLog, the reput (dispatch) service, the ConsumeQueues,
    the index files, a consumer and a key query, with the store's counts (messages, bytes,
    files, units, keys; times with their clock time); numbered arrows, and below the chart a
    note an arrow: the followed message's CommitLog offset, its ConsumeQueue unit (queue,
    offset, file, byte) and its index entries (file, slot, entry), then the checkpoint. Each
    box patch has the gid ``box:<name>``. The figure is as wide as a notebook's column (1100 px
    at 100 dpi), so no browser shrinks its text. Cost: one small figure."""
    notes = [textwrap.wrap(n, _NOTE_CHARS, subsequent_indent="     ") for n in _notes(flow)]
    lines = sum(len(n) for n in notes)
    height = _TITLE_H + _CHART_H + _NOTE_LINE_H * (lines + 0.5)
    fig = Figure(figsize=(_FIG_W, height))
    ax = fig.add_axes((0.005, (height - _TITLE_H - _CHART_H) / height, 0.99, _CHART_H / height))
    ax.set_xlim(0, 18.5)
    ax.set_ylim(5.75, 0.25)
    ax.set_axis_off()
    m = flow.followed
    count = lambda v: format_value(v, "count")          # noqa: E731
    size = lambda v: format_value(v, "bytes")           # noqa: E731
    lag = flow.dispatch_lag_bytes
    _box(ax, "producer", "producers", [f"{count(flow.producers)} born hosts", f"{count(flow.messages)} messages"])
    _box(ax, "CommitLog", "CommitLog", [
        f"{count(flow.commitlog_files)} files", f"offsets {count(flow.commitlog_start)}..{count(flow.commitlog_end)}",
        f"{size(flow.commitlog_end - flow.commitlog_start)}, every topic"])
    _box(ax, "ReputMessageService", "ReputMessageService", [
        f"queues reach {count(flow.queued_to)}", "behind the CommitLog end:",
        f"{size(lag)}" + (" (all dispatched)" if lag == 0 else "")])
    _box(ax, "ConsumeQueue", "ConsumeQueue", [
        f"{count(flow.consume_queues)} queues, {count(flow.consume_queue_files)} files",
        f"{count(flow.consume_queue_units)} units of 20 bytes"])
    _box(ax, "IndexFile", "IndexFile", [f"{count(flow.index_files)} files", f"{count(flow.index_keys)} keys",
                                        "(UNIQ_KEY, KEYS)"])
    _box(ax, "consumer", "consumer (pull)", ["reads units by queue offset, then the message by its CommitLog offset"])
    _box(ax, "query", "query by key", ["topic#key -> slot -> chain, then each message read from the CommitLog"])
    numbered = m is not None
    _arrow(ax, _edge("producer", "right"), _edge("CommitLog", "left"), 1 if numbered else None)
    _arrow(ax, _edge("CommitLog", "right"), _edge("ReputMessageService", "left"), 2 if numbered else None)
    _arrow(ax, _edge("ReputMessageService", "right", -0.4), _edge("ConsumeQueue", "left", 0.1), 3 if numbered else None)
    _arrow(ax, _edge("ReputMessageService", "right", 0.4), _edge("IndexFile", "left", -0.1), 4 if numbered else None)
    _arrow(ax, _edge("ConsumeQueue", "right"), _edge("consumer", "left"), 5 if numbered else None)
    _arrow(ax, _edge("IndexFile", "right"), _edge("query", "left"), 6 if numbered else None)
    if m is not None:
        title = (f"One message followed through {flow.root.rsplit('/', 1)[-1]}: "
                 f"CommitLog offset {count(m.phy_offset)}, "
                 f"stored {ms_with_clock(m.store_timestamp)}")
    else:
        title = f"{flow.root.rsplit('/', 1)[-1]}: an empty store"
    fig.suptitle(title, fontsize=fonts.TITLE, y=1 - 0.12 / height)
    if notes:
        below = fig.add_axes((0.01, 0.0, 0.98, (height - _TITLE_H - _CHART_H) / height))
        below.set_axis_off()
        below.set_xlim(0, 1)
        below.set_ylim(lines + 0.5, 0)
        at = 0.25
        for note in notes:
            below.text(0, at, "\n".join(note), fontsize=fonts.SMALL, va="top", linespacing=1.25)
            at += len(note)
    return fig


def dispatch_lag_figure(lag) -> Figure:
    """The dispatch lag :func:`rmqlab.lab.reputlag.measure_dispatch_lag` measured: left, a histogram
    of each message's lag (ms from its append to the dispatch round that covered it), median
    and 99th percentile marked; right, the CommitLog end each reput round saw and how far the
    ConsumeQueues reached after it (bytes), over time. Cost: one small figure."""
    fig = Figure(figsize=(11.0, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.0, 1.2])
    ms = lag["lag_ms"].to_numpy()
    left.hist(ms, bins=40, color="#9ecae1", edgecolor="#4292c6", linewidth=0.4)
    for q, colour in ((50, "#08519c"), (99, "#d62728")):
        v = float(np.percentile(ms, q))
        left.axvline(v, color=colour, linestyle="--", linewidth=1)
        left.text(v, left.get_ylim()[1] * (0.95 if q == 50 else 0.82), f" p{q} {v:,.1f} ms", color=colour,
                  fontsize=8, va="top", bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1))
    left.set_xlabel("dispatch lag per message (ms)")
    left.set_ylabel("messages")
    left.set_title(f"{len(ms):,} messages, {lag.attrs['rounds']:,} reput rounds", fontsize=9.5)
    s = lag.attrs["samples"]
    right.step(s["t_s"], s["commitlog_end"] / 2**20, where="post", color="#08519c",
               label="CommitLog end seen by the round")
    right.step(s["returned_s"], s["queued_to"] / 2**20, where="post", color="#2ca02c",
               label="ConsumeQueues reach after the round")
    right.set_xlabel("seconds since the first append")
    right.set_ylabel("CommitLog offset (MiB)")
    right.legend(fontsize=8, frameon=False, loc="upper left")
    right.set_title("the reput service runs behind the CommitLog", fontsize=9.5)
    return fig


def tag_filter_figure(pulled) -> Figure:
    """Per TAGS value of a queue (:func:`rmqlab.store.pull.pull_with_tags`): units in the queue, units
    the broker's tags-code check lets through, and messages the client's string check keeps
    (bars, counts on top). Cost: one small figure."""
    table = pulled.groupby("tags", dropna=False).agg(units=("queue_offset", "size"),
                                                     broker=("broker_passes", "sum"),
                                                     client=("delivered", "sum"))
    fig = Figure(figsize=(8.0, 3.4), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(table))
    w = 0.27
    for i, (col, label, colour) in enumerate((("units", "units in the queue", "#c6dbef"),
                                              ("broker", "pass the broker's tags-code check", "#fdae6b"),
                                              ("client", "kept by the client's TAGS check", "#2ca02c"))):
        bars = ax.bar(x + (i - 1) * w, table[col], w, label=label, color=colour)
        ax.bar_label(bars, labels=[format_value(v, "count") for v in table[col]], fontsize=7.5)
    codes = sorted(pulled.attrs.get("codes") or [])
    ax.set_xticks(x, [f"{t}\n(code {int(c):,})" for t, c in
                      zip(table.index, pulled.groupby("tags", dropna=False)["tags_code"].first())])
    ax.set_ylabel("messages")
    ax.set_title(f"subscription {pulled.attrs.get('subscription')!r}: code set {codes}", fontsize=9.5)
    fig.legend(*ax.get_legend_handles_labels(), fontsize=8, frameon=False, loc="outside lower center", ncol=3)
    return fig
