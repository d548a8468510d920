"""Figures of Kafka's sparse indexes and of the RocketMQ / Kafka comparison (matplotlib).

Like :mod:`rmqlab.viz.figures`, every function returns a :class:`matplotlib.figure.Figure`
made with ``Figure()`` (no pyplot: nothing shown, nothing kept in pyplot's registry).

* :func:`sparse_index_figure` - one segment on a byte axis: its batches, an offset-index
  entry every ~``index.interval.bytes``, the binary search a lookup makes over the entries and
  the short log scan from the entry found to the batch holding the offset.
* :func:`index_bytes_figure` - index bytes per million messages, structure by structure (from
  :func:`rmqlab.analysis.compare.index_bytes_per_million`).
* :func:`lookup_cost_figure` - bytes and pages touched per lookup by offset, time and key,
  both systems, on log scales (from :func:`rmqlab.analysis.compare.lookup_cost_summary`).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from rmqlab.kafka.partition import KafkaPartition

__all__ = ["SYSTEM_COLOURS", "sparse_index_figure", "index_bytes_figure", "lookup_cost_figure",
           "index_file_sizes_figure"]

#: Colour of each system in the comparison figures.
SYSTEM_COLOURS = {"RocketMQ": "#d62728", "Kafka": "#1f77b4"}
_BATCH_COLOURS = ("#c6dbef", "#9ecae1")
_TARGET_COLOUR = "#ff7f0e"

PartitionLike = str | os.PathLike | KafkaPartition


@contextmanager
def _opened(partition: PartitionLike) -> Iterator[KafkaPartition]:
    if isinstance(partition, KafkaPartition):
        yield partition
        return
    p = KafkaPartition(partition)
    try:
        yield p
    finally:
        p.close()


def _bytes_label(x: float, _pos=None) -> str:
    """Bytes in decimal units (kB, MB, GB), so log-scale decades read as round numbers."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g} {unit}"
    return f"{x:.3g} B"


def sparse_index_figure(partition: PartitionLike, offset: int, *, zoom_bytes: int | None = None,
                        figsize=(11, 6.5)) -> Figure:
    """The lookup of `offset` in its segment. Top: the whole segment on a byte axis, every
    offset-index entry as a tick at its position, and the entries the binary search read, in
    order (step 1, 2, ...; :meth:`OffsetIndex.trace_lookup
    <rmqlab.kafka.index.OffsetIndex.trace_lookup>`). Bottom: a window around the answer
    (`zoom_bytes` each side; default two index intervals' worth, at least 4 KiB): every batch
    as a box, the entries with their offsets, and the scan from the entry's position to the
    batch holding `offset` (:meth:`KafkaPartition.lookup_offset`). `partition` is a folder or
    an open :class:`KafkaPartition` (left open). Raises ValueError when the partition does not
    hold `offset`. Cost: the lookup plus one pass over the segment's batches and entries.

    >>> import tempfile
    >>> from rmqlab.kafka.partition import write_partition
    >>> d = tempfile.mkdtemp()
    >>> _ = write_partition(d, {"timestamp": list(range(400)), "value": [b"v" * 90] * 400})
    >>> fig = sparse_index_figure(d, 250)
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['position in 00000000000000000000.log (bytes)', 'position (bytes)']
    """
    with _opened(partition) as p:
        res = p.lookup_offset(offset)
        if not res.found:
            raise ValueError(f"offset {offset} is not in {p.dir}")
        base = res.segment
        b = p.batches(base)
        pos, size = b["position"].to_numpy(np.int64), b["size"].to_numpy(np.int64)
        first, last = b["base_offset"].to_numpy(np.int64), b["last_offset"].to_numpy(np.int64)
        idx = p.offset_index(base)
        e_off, e_pos = idx.offsets, idx.positions.astype(np.int64)
        seg_bytes = int(pos[-1] + size[-1])
        trace = res.index_trace
        log_name = p.log_path(base).name
    gaps = np.diff(np.concatenate([[0], e_pos])) if len(e_pos) else np.zeros(0)
    interval = float(np.median(gaps)) if len(gaps) else 4096.0

    fig = Figure(figsize=figsize)
    top, bottom = fig.subplots(2, 1, gridspec_kw={"height_ratios": [1, 1.2]})

    # -- top: the whole segment and the search
    top.vlines(e_pos, 0, 0.35, colors="#7f7f7f", linewidth=0.6, label=f"offset index entry ({len(e_pos)})")
    steps = [s for s in trace.steps if s.phase != "result"]
    xs = [int(e_pos[s.slot]) for s in steps]
    ys = np.arange(1, len(steps) + 1)
    if steps:
        top.plot(xs, ys, "-o", color=SYSTEM_COLOURS["Kafka"], markersize=5, label="binary search: entries read")
        for x, y, s in zip(xs, ys, steps):
            top.annotate(f"{s.key}", (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
    top.axvline(res.batch_position, color=_TARGET_COLOUR, linewidth=1.5, label=f"batch holding offset {offset}")
    top.set_xlim(0, max(seg_bytes, 1))
    top.set_ylim(0, max(len(steps), 1) + 1)
    top.set_ylabel("search step")
    top.set_xlabel(f"position in {log_name} (bytes)")
    top.xaxis.set_major_formatter(FuncFormatter(_bytes_label))
    top.set_title(f"segment {base}: {len(pos):,} batches, {seg_bytes:,} bytes, {len(e_pos):,} index entries "
                  f"(one per ~{interval:,.0f} bytes); lookup of offset {offset}: {trace.entries_read} entries read "
                  f"({trace.section} section)", fontsize=9)
    top.legend(loc="upper right", fontsize=7)

    # -- bottom: the window around the answer
    half = int(zoom_bytes) if zoom_bytes is not None else int(max(2 * interval, 4096))
    lo = max(0, res.position - half)
    hi = min(seg_bytes, res.batch_position + res.batch_size + half)
    inside = np.flatnonzero((pos + size > lo) & (pos < hi))
    for i in inside.tolist():
        colour = _TARGET_COLOUR if first[i] <= offset <= last[i] else _BATCH_COLOURS[i % 2]
        bottom.broken_barh([(int(pos[i]), int(size[i]))], (0, 1), facecolors=colour, edgecolors="white",
                           linewidth=0.3)
    shown = np.flatnonzero((e_pos >= lo) & (e_pos <= hi))
    bottom.vlines(e_pos[shown], 1.05, 1.6, colors="#7f7f7f", linewidth=1)
    for i in shown.tolist():
        bottom.annotate(f"{int(e_off[i])}", (int(e_pos[i]), 1.62), fontsize=7, rotation=90, ha="center",
                        va="bottom")
    scan_end = res.batch_position + res.batch_size
    bottom.annotate("", xy=(scan_end, 2.35), xytext=(res.position, 2.35),
                    arrowprops={"arrowstyle": "->", "color": SYSTEM_COLOURS["Kafka"], "linewidth": 1.5})
    bottom.text((res.position + scan_end) / 2, 2.45, f"scan: {res.batches_read} batch headers, "
                f"{res.log_bytes:,} bytes", ha="center", va="bottom", fontsize=8, color=SYSTEM_COLOURS["Kafka"])
    bottom.set_xlim(lo, max(hi, lo + 1))
    bottom.set_ylim(0, 3.0)
    bottom.set_yticks([0.5, 1.3])
    bottom.set_yticklabels(["batches", "index entries\n(offset)"], fontsize=8)
    bottom.set_xlabel("position (bytes)")
    bottom.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:,.0f}"))
    bottom.set_title(f"the index answers ({trace.result.offset}, byte {res.position}); the log is read from there "
                     f"to the batch holding {offset}", fontsize=9)
    fig.tight_layout()
    return fig


def index_bytes_figure(index_bytes: pd.DataFrame, *, figsize=(9, 4.2)) -> Figure:
    """Index bytes per million messages, one bar a structure (log scale), coloured by system,
    with the capacity model's value as a black mark where it has one. `index_bytes` is
    :func:`rmqlab.analysis.compare.index_bytes_per_million`'s table (the data rows are left out).

    >>> frame = pd.DataFrame({"system": ["RocketMQ", "Kafka"], "structure": ["IndexFile", ".index"],
    ...                       "role": ["key index", "offset index"], "bytes_per_million": [4e7, 5e5],
    ...                       "model_per_million": [4e7, float("nan")]})
    >>> fig = index_bytes_figure(frame)
    >>> [round(p.get_width()) for p in fig.axes[0].patches]
    [40000000, 500000]
    """
    rows = index_bytes[~index_bytes["role"].astype(str).str.startswith("data")].reset_index(drop=True)
    fig = Figure(figsize=figsize)
    ax = fig.subplots()
    y = np.arange(len(rows))[::-1]
    colours = [SYSTEM_COLOURS.get(s, "#7f7f7f") for s in rows["system"]]
    bars = ax.barh(y, rows["bytes_per_million"], color=colours)
    for bar, role in zip(bars, rows["role"]):
        if role == "total":
            bar.set_alpha(0.45)
            bar.set_hatch("//")
    for yy, v, role in zip(y, rows["bytes_per_million"], rows["role"]):
        ax.text(v * 1.08, yy, _bytes_label(v) + ("  (total)" if role == "total" else ""), va="center", fontsize=8)
    if "model_per_million" in rows:
        m = rows["model_per_million"].to_numpy(float)
        ok = np.isfinite(m) & (m > 0)
        ax.plot(m[ok], y[ok], "k|", markersize=14, markeredgewidth=2, label="capacity model")
        ax.legend(loc="lower right", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{s}: {st}" for s, st in zip(rows["system"], rows["structure"])], fontsize=8)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(_bytes_label))
    vmax = float(np.nanmax(rows["bytes_per_million"])) if len(rows) else 1.0
    ax.set_xlim(right=vmax * 8)
    ax.set_xlabel("index bytes per million messages (log scale)")
    ax.set_title("index bytes per million messages, measured on the files written", fontsize=10)
    fig.tight_layout()
    return fig


def lookup_cost_figure(summary: pd.DataFrame, *, metrics=("bytes_touched", "pages_touched"),
                       figsize=(10, 4)) -> Figure:
    """Mean cost per lookup by offset, time and key, RocketMQ beside Kafka, one panel a
    metric, log scales. `summary` is :func:`rmqlab.analysis.compare.lookup_cost_summary`'s table
    (index: kind, system).

    >>> idx = pd.MultiIndex.from_product([["offset", "key"], ["RocketMQ", "Kafka"]], names=["kind", "system"])
    >>> s = pd.DataFrame({"bytes_touched": [400, 2000, 600, 9e5], "pages_touched": [2, 3, 12, 220]}, index=idx)
    >>> fig = lookup_cost_figure(s)
    >>> [float(p.get_height()) for p in fig.axes[0].patches]
    [400.0, 600.0, 2000.0, 900000.0]
    """
    kinds = list(dict.fromkeys(summary.index.get_level_values(0)))
    systems = [s for s in ("RocketMQ", "Kafka") if s in set(summary.index.get_level_values(1))]
    fig = Figure(figsize=figsize)
    axes = np.atleast_1d(fig.subplots(1, len(metrics)))
    width = 0.8 / max(len(systems), 1)
    x = np.arange(len(kinds))
    labels = {"bytes_touched": "bytes touched (index + data)", "pages_touched": "4 KiB pages touched",
              "index_entries_read": "index entries read", "data_reads": "reads of data files"}
    for ax, metric in zip(axes, metrics):
        for j, system in enumerate(systems):
            vals = np.array([float(summary.loc[(k, system), metric]) if (k, system) in summary.index else np.nan
                             for k in kinds])
            bars = ax.bar(x + (j - (len(systems) - 1) / 2) * width, np.where(vals > 0, vals, np.nan), width,
                          color=SYSTEM_COLOURS.get(system), label=system)
            for bar, v in zip(bars, vals):
                if np.isfinite(v) and v > 0:
                    text = _bytes_label(v) if metric == "bytes_touched" else (f"{v:,.0f}" if v >= 100 else f"{v:.3g}")
                    ax.text(bar.get_x() + bar.get_width() / 2, v * 1.1, text, ha="center", va="bottom", fontsize=7)
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels([f"by {k}" for k in kinds])
        ax.set_ylabel(labels.get(metric, metric) + " (log)")
        top = float(np.nanmax(summary[metric].to_numpy(float))) if len(summary) else 1.0
        ax.set_ylim(bottom=0.5, top=max(top, 1.0) * 12)
        if metric == "bytes_touched":
            ax.yaxis.set_major_formatter(FuncFormatter(_bytes_label))
        ax.set_title(f"mean {labels.get(metric, metric)} per lookup", fontsize=9)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def index_file_sizes_figure(sizes: pd.DataFrame) -> Figure:
    """The bytes of each index file while its segment is active and after the roll: one row per
    file of `sizes` (columns ``file``, ``active_bytes``, ``trimmed_bytes``, ``entries``), bars on a
    log axis with the byte counts written beside them. Cost: one small figure.

    >>> fig = index_file_sizes_figure(pd.DataFrame({"file": ["a.index"], "active_bytes": [10485760],
    ...                                             "trimmed_bytes": [24], "entries": [3]}))
    >>> [int(p.get_width()) for p in fig.axes[0].patches]
    [10485760, 24]
    """
    fig = Figure(figsize=(9.0, 0.9 + 0.75 * len(sizes)), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(sizes))
    h = 0.38
    for shift, col, label, colour in ((-h / 2, "active_bytes", "active: preallocated to segment.index.bytes",
                                       "#9ecae1"),
                                      (h / 2, "trimmed_bytes", "after the roll: trimmed to its entries", "#08519c")):
        bars = ax.barh(y + shift, sizes[col], height=h, color=colour, label=label)
        ax.bar_label(bars, labels=[f"{int(v):,} bytes" for v in sizes[col]], fontsize=8, padding=3)
    ax.set_xscale("log")
    ax.set_xlim(1, float(sizes["active_bytes"].max()) * 40)
    ax.set_yticks(y, [f"{f}\n{int(n):,} entries" for f, n in zip(sizes["file"], sizes["entries"])], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bytes on disk (log scale)")
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    return fig
