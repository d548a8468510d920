"""Load factor and capacity charts: pure functions of configuration numbers (no store needed).

The question they answer first: *what load factor does the default configuration (5,000,000
slots, 20,000,000 entries a file) run at, and what chain lengths does that imply?* A full file
holds ``index_num - 1`` keys, so λ = 19,999,999 / 5,000,000 ≈ 4.0; with uniformly random
hashes 1.83 % of slots stay empty, an occupied slot's chain holds 4.07 entries on average, a
query for a missing key reads about 4 entries and reaching a stored key about 3
(:func:`rmqlab.analysis.indexstats.chain_length_summary` defines and derives each number).

* :func:`load_factor_figure` - one configuration: the chain-length distribution of a full file
  and the entries a query reads as the file fills.
* :func:`load_factor_comparison_figure` - several configurations side by side.
* :func:`disk_usage_figure` - bytes on disk over days against the disk size and thresholds;
  :func:`disk_fan_figure` - the same as a Monte Carlo fan (p5-p95 bands).
* :func:`percentile_ranges_figure` - the p5-p95 spread of outputs of different units, each
  relative to its likely value.
* :func:`index_fill_time_figure` - hours to fill one index file against the key rate;
  :func:`rmqlab.capacity.model.hours_to_fill` is the number behind it.
* :func:`sampled_chain_lengths_figure` - a chain-length histogram measured on hashed keys
  (a real file or the capacity model's key sample) against a uniform hash.

>>> import io
>>> load_factor_figure().savefig(io.BytesIO(), format="png")
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, FuncFormatter, MaxNLocator

from rmqlab.analysis.indexstats import chain_length_summary, chain_length_theory, poisson_expected_slots
from rmqlab.capacity.model import check_configuration, hours_to_fill
from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM
from rmqlab.viz import fonts

__all__ = [
    "load_factor_figure",
    "load_factor_comparison_figure",
    "disk_usage_figure",
    "disk_fan_figure",
    "percentile_ranges_figure",
    "COMPARISON_VALUES",
    "index_fill_time_figure",
    "sampled_chain_lengths_figure",
]

_CURVE_POINTS = 201
_BINARY_UNITS = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("bytes", 1))


def _count(n: float) -> str:
    return f"{n:,.0f}"


# ------------------------------------------------------------------------------ load factor


def load_factor_figure(hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
                       index_num: int = DEFAULT_INDEX_NUM, *,
                       figsize: tuple[float, float] = (11.0, 4.3)) -> Figure:
    """The chain lengths and query costs one configuration implies, for uniformly random hashes.

    Left: bars of the expected share of slots (%) with each chain length when the file is
    full (``index_num - 1`` keys), from :func:`rmqlab.analysis.indexstats.chain_length_theory`; the
    title gives the load factor λ and the mean chain of an occupied slot, the empty bar is
    labelled with its share. Right: expected entries a query reads against the keys in the
    file (0 .. index_num - 1): a missing key (n/m) and a stored key's whole walk (1 + (n-1)/m),
    what the broker reads, as it walks on past the key; dotted, the stored key's depth in its
    chain (1 + (n-1)/(2m)), where a walk that stopped at the key would end (definitions:
    :func:`rmqlab.analysis.indexstats.chain_length_summary`); the full-file point is marked and labelled
    with its values. Cost: O(chain lengths + 201 curve points); milliseconds.
    """
    m, inum = check_configuration(hash_slot_num, index_num)
    full = inum - 1
    theory = chain_length_theory(m, full)
    s = theory.attrs
    fig = Figure(figsize=figsize, layout="constrained")
    ax_hist, ax_read = fig.subplots(1, 2, width_ratios=[1.1, 1.0])

    share = 100 * theory["share"].to_numpy()
    k = theory["chain_length"].to_numpy()
    keep = (share >= 1e-3) | (k == 0)              # lengths with at least 0.001 % of the slots
    bars = ax_hist.bar(k[keep], share[keep], width=0.8, color="C0", alpha=0.8)
    ax_hist.bar_label(bars, labels=[f"{share[0]:.2f} %\nempty"] + [""] * (int(keep.sum()) - 1),
                      fontsize="small")
    ax_hist.set_xlabel("chain length (entries in a slot)")
    ax_hist.set_ylabel("share of slots (%)")
    ax_hist.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_hist.set_title(f"full file: {full:,} keys in {m:,} slots\n"
                      f"load factor λ = {s['load_factor']:.3f}, "
                      f"mean occupied chain {s['mean_occupied_chain']:.3f}", fontsize="medium")

    x = np.linspace(0, full, _CURVE_POINTS)
    miss = x / m
    with np.errstate(invalid="ignore"):
        hit = np.where(x >= 1, 1 + (x - 1) / (2 * m), np.nan)
        walk = np.where(x >= 1, 1 + (x - 1) / m, np.nan)
    ax_read.plot(x, miss, color="C3", label="missing key: whole chain, n/m")
    # the broker's walk goes on past a stored key to older entries of its slot (more matches,
    # other keys of the same hash): what it reads is the whole chain; the key's depth is less
    ax_read.plot(x, hit, color="C2", linestyle=":",
                 label="stored key: its depth in the chain, 1 + (n-1)/2m")
    ax_read.plot(x, walk, color="C2", label="stored key: whole walk, read, 1 + (n-1)/m")
    values = [(s["entries_read_miss"], "C3"), (s["entries_read_hit"], "C2"),
              (s["entries_read_hit_walk"], "C2")]
    for value, colour in values:
        ax_read.plot([full], [value], marker="o", color=colour, markersize=5)
        ax_read.annotate(f"{value:.3f}", (full, value), xytext=(-6, 4), textcoords="offset points",
                         ha="right", va="bottom", fontsize="small", color=colour)
    ax_read.axvline(full, color="#888888", linewidth=0.8, linestyle=":")
    ax_read.text(full, 0, f" full file\n ({full:,} keys)", rotation=90, ha="right", va="bottom",
                 fontsize="small", color="#555555")
    ax_read.set_xlim(0, full * 1.02 if full else 1)
    ax_read.set_ylim(bottom=0)
    ax_read.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax_read.set_xlabel("keys in the file")
    ax_read.set_ylabel("expected entries read per file searched")
    ax_read.set_title("query cost as the file fills (uniform hash)", fontsize="medium")
    ax_read.legend(fontsize="small", loc="upper left")
    return fig


#: The numbers :func:`load_factor_comparison_figure` draws for each configuration.
COMPARISON_VALUES = ("empty_share", "mean_occupied_chain", "entries_read_miss", "entries_read_hit")


def load_factor_comparison_figure(configs: Mapping[str, tuple[int, int]], *,
                                  measured: Mapping[str, Mapping[str, float]] | None = None,
                                  figsize: tuple[float, float] | None = None) -> Figure:
    """Several (hash_slot_num, index_num) configurations side by side, each file full.

    `configs` maps a label to ``(hash_slot_num, index_num)``, drawn in the mapping's order,
    for example ``{"default": (5_000_000, 20_000_000), "4.x small": (500_000, 2_000_000),
    "double slots": (10_000_000, 20_000_000)}``. Three bar panels, each bar labelled with its
    value: the share of empty slots (%), the mean chain of an occupied slot (entries), and the
    entries a query reads in one file (a missing key; a stored key, whose walk reads the whole
    chain of its slot: the broker goes on past the key for older matches). The numbers are
    `measured`'s when given (label -> the :data:`COMPARISON_VALUES`, for example the capacity
    model's real-hash estimate), else a uniform hash's from
    :func:`rmqlab.analysis.indexstats.chain_length_summary` with ``keys = index_num - 1``
    (``entries_read_hit_walk`` for a stored key); the title says which. The title lists each
    label's slots, entries and load factor. Cost: O(configurations).
    """
    if not configs:
        raise ValueError("configs is empty: give at least one label -> (hash_slot_num, index_num)")
    labels, details, summaries = [], [], []
    for label, pair in configs.items():
        try:
            m, inum = pair
        except (TypeError, ValueError):
            raise ValueError(f"configs[{label!r}] must be (hash_slot_num, index_num), got {pair!r}") from None
        m, inum = check_configuration(m, inum)
        theory = chain_length_summary(m, inum - 1)
        if measured is None:
            values = {**theory, "entries_read_hit": theory["entries_read_hit_walk"]}
        else:
            try:
                values = {k: float(measured[label][k]) for k in COMPARISON_VALUES}
            except KeyError as err:
                raise ValueError(f"measured[{label!r}] needs {', '.join(COMPARISON_VALUES)}; missing {err}") from None
        labels.append(str(label))
        details.append(f"{label}: {m:,} slots × {inum:,} entries, λ = {theory['load_factor']:.2f}")
        summaries.append(values)
    n = len(labels)
    if figsize is None:
        figsize = (max(9.0, 1.5 + 2.4 * n), 4.4 + 0.2 * n)
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(1, 3)
    x = np.arange(n)
    empty = [100 * s["empty_share"] for s in summaries]
    chain = [s["mean_occupied_chain"] for s in summaries]
    miss = [s["entries_read_miss"] for s in summaries]
    hit = [s["entries_read_hit"] for s in summaries]
    b = axes[0].bar(x, empty, color="C0")
    axes[0].bar_label(b, fmt="%.2f", fontsize="small")
    axes[0].set_ylabel("empty slots (% of slots)")
    axes[0].set_title("empty slots, full file", fontsize="medium")
    b = axes[1].bar(x, chain, color="C1")
    axes[1].bar_label(b, fmt="%.3f", fontsize="small")
    axes[1].set_ylabel("entries")
    axes[1].set_title("mean chain of an occupied slot", fontsize="medium")
    w = 0.38
    b1 = axes[2].bar(x - w / 2, miss, width=w, color="C3", label="missing key")
    b2 = axes[2].bar(x + w / 2, hit, width=w, color="C2", label="stored key (whole chain)")
    axes[2].bar_label(b1, fmt="%.3f", fontsize="small")
    axes[2].bar_label(b2, fmt="%.3f", fontsize="small")
    axes[2].set_ylabel("entries read per file searched")
    axes[2].set_title("entries read in one file", fontsize="medium")
    axes[2].legend(fontsize="small", ncol=2, loc="upper center")
    for ax in axes:
        ax.set_xticks(x, labels, fontsize="small")
        ax.set_ylim(top=ax.get_ylim()[1] * (1.3 if ax is axes[2] else 1.12))   # room for labels
    source = "uniform hash" if measured is None else "real hash of sampled keys"
    fig.suptitle(f"index geometry compared (full files, {source})\n" + "\n".join(details), fontsize="medium")
    return fig


# ------------------------------------------------------------------------------ capacity


def _binary_unit(max_bytes: float) -> tuple[str, int]:
    for name, size in _BINARY_UNITS:
        if max_bytes >= size:
            return name, size
    return "bytes", 1


def _check_disk_lines(disk_bytes: float | None, thresholds: Mapping[str, float] | None,
                      marks: Mapping[str, float] | None) -> None:
    if thresholds and disk_bytes is None:
        raise ValueError("thresholds are fractions of disk_bytes: give disk_bytes too")
    if disk_bytes is not None and not disk_bytes > 0:
        raise ValueError(f"disk_bytes must be positive, got {disk_bytes}")
    for label, frac in (thresholds or {}).items():
        if not 0 < frac <= 1:
            raise ValueError(f"thresholds[{label!r}] must be a fraction in (0, 1], got {frac}")
    for label, day in (marks or {}).items():
        if not np.isfinite(day):
            raise ValueError(f"marks[{label!r}] must be a finite day, got {day}")


def _draw_disk_lines(ax, x: np.ndarray, top: float, unit: str, size: int, disk_bytes: float | None,
                     thresholds: Mapping[str, float] | None, marks: Mapping[str, float] | None) -> None:
    """The disk size (solid), its thresholds (dashed), the marked days (dotted, labelled along
    the line), the axes' labels and limits: the y axis ends just above the disk line, so
    whatever is drawn stays under it or is seen to reach it."""
    if disk_bytes is not None:
        ax.axhline(disk_bytes / size, color="black", linewidth=1.2,
                   label=f"disk: {disk_bytes / size:,.3g} {unit}")
        for i, (label, frac) in enumerate((thresholds or {}).items()):
            ax.axhline(frac * disk_bytes / size, color=f"C{(i + 3) % 10}", linestyle="--",
                       linewidth=1, label=f"{label}: {100 * frac:g} % of disk")
    lo, hi = float(x.min()), float(x.max()) if x.max() > x.min() else float(x.min()) + 1
    # each mark's label level, one line lower than the mark before it, so close days never run
    # into one another; on the side of its line facing the middle, so it stays in the axes
    for i, (label, day) in enumerate(sorted((marks or {}).items(), key=lambda m: m[1])):
        ax.axvline(day, color="#555555", linestyle=":", linewidth=1)
        right_half = day > (lo + hi) / 2
        ax.annotate(label, (day, _MARK_TOP - _MARK_STEP * (i % _MARK_LEVELS)), xycoords=("data", "axes fraction"),
                    xytext=(-4 if right_half else 4, 0), textcoords="offset points",
                    ha="right" if right_half else "left", va="center", fontsize=fonts.SMALL, color="#333333",
                    bbox={"boxstyle": "square,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
    ax.set_xlabel("days")
    ax.set_ylabel(f"bytes on disk ({unit})")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, 1.04 * top / size)


#: Where the marked days' labels go: the first at this height (axes fraction), each next one a step lower.
_MARK_TOP, _MARK_STEP, _MARK_LEVELS = 0.62, 0.1, 5


def _legend_below(ax, ncol: int = 2) -> None:
    """`ax`'s legend under its x-axis label, out of the data (the layout makes room for it)."""
    ax.legend(fontsize=fonts.SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=ncol, frameon=False)


def disk_usage_figure(days: Sequence[float], series: Mapping[str, Sequence[float]], *,
                      disk_bytes: float | None = None,
                      thresholds: Mapping[str, float] | None = None, stacked: bool = True,
                      marks: Mapping[str, float] | None = None,
                      figsize: tuple[float, float] = (9.0, 5.4)) -> Figure:
    """Bytes on disk over time: one series per store part (for example CommitLog,
    ConsumeQueue, index), stacked by default (they share the disk) or as separate lines.

    `days`: the x values (days since the start); `series`: label -> bytes at each day (same
    length as `days`). `disk_bytes` draws the disk size as a horizontal line; `thresholds`
    maps a label to a *fraction* of `disk_bytes` (for example RocketMQ's
    ``diskMaxUsedSpaceRatio`` 0.75, the 0.85 forced-clean and 0.90 write-refusal ratios) and
    draws each as a dashed line (it needs `disk_bytes`); `marks` maps a label to a day, drawn
    as a dotted vertical line labelled along it (where a line is crossed). The y axis is in
    binary units picked from the largest value (bytes, KiB, MiB, GiB or TiB, said in the
    label) and ends just above the disk line or the highest value. Cost: O(points).
    """
    x = np.asarray(days, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError("days must be a non-empty one-dimensional sequence")
    if not series:
        raise ValueError("series is empty: give at least one label -> bytes per day")
    ys = {}
    for label, values in series.items():
        y = np.asarray(values, dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"series[{label!r}] has {y.size} values, days has {x.size}")
        if np.any(y < 0):
            raise ValueError(f"series[{label!r}] has negative bytes")
        ys[label] = y
    _check_disk_lines(disk_bytes, thresholds, marks)
    total = np.sum(list(ys.values()), axis=0)
    top = max(float(total.max() if stacked else max(y.max() for y in ys.values())),
              float(disk_bytes or 0), 1.0)
    unit, size = _binary_unit(top)

    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    if stacked:
        ax.stackplot(x, *[y / size for y in ys.values()], labels=list(ys), alpha=0.85)
    else:
        for label, y in ys.items():
            ax.plot(x, y / size, label=label)
    _draw_disk_lines(ax, x, top, unit, size, disk_bytes, thresholds, marks)
    ax.set_title("disk usage" + (" (stacked)" if stacked else ""), fontsize="medium")
    _legend_below(ax)
    return fig


def disk_fan_figure(days: Sequence[float], percentiles: Mapping[float, Sequence[float]], *,
                    likely: Sequence[float] | None = None, disk_bytes: float | None = None,
                    thresholds: Mapping[str, float] | None = None,
                    marks: Mapping[str, float] | None = None,
                    figsize: tuple[float, float] = (9.0, 5.5)) -> Figure:
    """A fan chart of bytes on disk over time: Monte Carlo percentiles as nested bands.

    `percentiles` maps a percentile (for example 5, 25, 50, 75, 95) to bytes at each of `days`;
    each pair around the middle (5 with 95, 25 with 75) is a band, the outer ones lighter, and
    the middle one (50) a line. `likely`: bytes at each day with every input at its likely value,
    dashed. `disk_bytes`, `thresholds` and `marks` as in :func:`disk_usage_figure`. Cost:
    O(points x percentiles).

    >>> import numpy as np
    >>> days = np.arange(10.0)
    >>> fig = disk_fan_figure(days, {5: days, 50: 2 * days, 95: 3 * days}, disk_bytes=40)
    >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()][:2]
    ['p5-p95', 'p50']
    """
    x = np.asarray(days, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError("days must be a non-empty one-dimensional sequence")
    ps = sorted(float(p) for p in percentiles)
    if not ps or len(ps) % 2 == 0 or any(not 0 <= p <= 100 for p in ps):
        raise ValueError(f"percentiles must be an odd number of percentiles in [0, 100] (pairs and a middle), "
                         f"got {ps}")
    ys = {}
    for p, values in percentiles.items():
        y = np.asarray(values, dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"percentiles[{p!r}] has {y.size} values, days has {x.size}")
        ys[float(p)] = y
    _check_disk_lines(disk_bytes, thresholds, marks)
    top = max(float(max(np.nanmax(y) for y in ys.values())), float(disk_bytes or 0), 1.0)
    unit, size = _binary_unit(top)

    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    pairs = len(ps) // 2
    for i in range(pairs):
        lo, hi = ps[i], ps[-1 - i]
        ax.fill_between(x, ys[lo] / size, ys[hi] / size, color="C0", alpha=0.18 + 0.22 * i, linewidth=0,
                        label=f"p{lo:g}-p{hi:g}")
    middle = ps[pairs]
    ax.plot(x, ys[middle] / size, color="C0", linewidth=1.6, label=f"p{middle:g}")
    if likely is not None:
        y = np.asarray(likely, dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"likely has {y.size} values, days has {x.size}")
        ax.plot(x, y / size, color="black", linestyle="--", linewidth=1, label="likely inputs")
    _draw_disk_lines(ax, x, top, unit, size, disk_bytes, thresholds, marks)
    ax.set_title("disk usage, Monte Carlo", fontsize="medium")
    _legend_below(ax)
    return fig


def percentile_ranges_figure(rows: Sequence[tuple[str, float, float, float, float, str]], *,
                             figsize: tuple[float, float] | None = None) -> Figure:
    """Monte Carlo spread of several outputs of different units on one scale: each row
    ``(label, p5, p50, p95, likely, text)`` is a bar from p5 to p95 with a tick at p50, all
    divided by the row's likely value (log x axis; 1 = the likely estimate), so the widest bar is
    the least certain output. `text` (the values, formatted by the caller) is written at the
    right of its row. Rows are drawn top to bottom in the order given. Cost: O(rows).

    >>> fig = percentile_ranges_figure([("files a day", 8.0, 9.8, 12.6, 9.0, "8 - 12.6")])
    >>> [round(float(v), 3) for v in fig.axes[0].lines[0].get_xdata()]
    [0.889, 1.4]
    """
    if not rows:
        raise ValueError("rows is empty: give at least one (label, p5, p50, p95, likely, text)")
    for label, p5, p50, p95, likely, _ in rows:
        values = np.array([p5, p50, p95, likely], dtype=np.float64)
        if not (np.isfinite(values).all() and (values > 0).all()):
            raise ValueError(f"row {label!r}: p5, p50, p95 and likely must be finite and positive, got {values}")
        if not p5 <= p50 <= p95:
            raise ValueError(f"row {label!r}: p5 <= p50 <= p95 does not hold: {p5}, {p50}, {p95}")
    n = len(rows)
    fig = Figure(figsize=figsize or (10.0, 1.2 + 0.42 * n), layout="constrained")
    ax = fig.subplots()
    y = np.arange(n)[::-1]
    for yi, (_, p5, p50, p95, likely, _) in zip(y, rows, strict=True):
        ax.plot([p5 / likely, p95 / likely], [yi, yi], color="C0", linewidth=7, alpha=0.45,
                solid_capstyle="butt")
        ax.plot([p50 / likely], [yi], marker="|", markersize=14, markeredgewidth=2, color="C0")
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ratios = np.array([[r[1] / r[4], r[3] / r[4]] for r in rows])
    lo, hi = min(0.9, float(ratios.min())), max(1.1, float(ratios.max()))
    pad = (hi / lo) ** 0.04
    ax.set_xlim(lo / pad, hi * pad)
    ax.set_yticks(y, [r[0] for r in rows])
    ax.set_ylim(-0.7, n - 0.3)
    # the values on the right, row by row, where they cannot cover a bar
    values = ax.twinx()
    values.set_ylim(ax.get_ylim())
    values.set_yticks(y, [r[5] for r in rows], fontsize="small")
    values.tick_params(axis="y", length=0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}×" if round(v, 2) in (0.5, 0.7, 1.5, 2, 3, 5)
                                               else ""))
    ax.set_xlabel("relative to the likely estimate (dashed: 1×; bar: p5 to p95, tick: p50; log scale)")
    ax.grid(axis="x", which="both", color="#e6e6e6", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title("Monte Carlo spread of each output", fontsize="medium")
    return fig


def index_fill_time_figure(keys_per_second, *, index_num: int = DEFAULT_INDEX_NUM,
                           figsize: tuple[float, float] = (7.5, 4.5)) -> Figure:
    """Hours to fill one index file against the key rate (keys per second), log-log.

    `keys_per_second`: one rate (then the curve spans 1/100 .. 100 times it and the rate is
    marked) or several rates (the curve spans them and each is marked). Marked points are
    labelled with their fill time; dotted lines mark 1 hour, 1 day and 1 week. Values from
    :func:`rmqlab.capacity.model.hours_to_fill`. Cost: O(points).
    """
    _, inum = check_configuration(1, index_num)
    marks = np.atleast_1d(np.asarray(keys_per_second, dtype=np.float64))
    if marks.ndim != 1 or marks.size == 0:
        raise ValueError("keys_per_second must be a number or a non-empty sequence")
    if np.any(~(marks > 0)):
        raise ValueError("keys_per_second must be positive")
    marks = np.unique(marks)
    lo, hi = (marks[0] / 100, marks[0] * 100) if marks.size == 1 else (marks[0], marks[-1])
    rates = np.geomspace(lo, hi, _CURVE_POINTS)
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    ax.plot(rates, hours_to_fill(rates, inum), color="C0",
            label=f"one file: {inum - 1:,} keys")
    mark_hours = hours_to_fill(marks, inum)
    ax.plot(marks, mark_hours, "o", color="C3")
    for i, (r, h) in enumerate(zip(marks, mark_hours)):
        last = marks.size > 1 and i == marks.size - 1          # keep the label inside the axes
        ax.annotate(f"{_count(r)} keys/s: {_duration(h)}", (r, h), xytext=(-6 if last else 6, 6),
                    textcoords="offset points", ha="right" if last else "left", fontsize="small")
    ax.set_xscale("log")
    ax.set_yscale("log")
    y_lo, y_hi = ax.get_ylim()
    for hours, label in ((1, "1 hour"), (24, "1 day"), (168, "1 week")):
        if y_lo <= hours <= y_hi:
            ax.axhline(hours, color="#999999", linestyle=":", linewidth=0.9)
            ax.text(rates[-1], hours, f"{label} ", ha="right", va="bottom", fontsize="small",
                    color="#666666")
    plain = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        axis.set_major_formatter(plain)
        # within one decade the minor ticks are the only labels; matplotlib writes them as 3×10^0
        if hi < 10 * lo:
            axis.set_minor_formatter(plain)
    ax.set_xlabel("key rate (keys per second, log scale)")
    ax.set_ylabel("hours to fill one index file (log scale)")
    ax.set_title(f"time to fill an index file of {inum:,} entries", fontsize="medium")
    ax.legend(fontsize="small")
    return fig


def _duration(hours: float) -> str:
    if hours >= 48:
        return f"{hours / 24:.1f} days"
    if hours >= 1:
        return f"{hours:.1f} h"
    return f"{hours * 60:.1f} min"


def sampled_chain_lengths_figure(histogram, *, title: str | None = None,
                                 figsize: tuple[float, float] = (9.0, 4.3)) -> Figure:
    """A measured chain-length distribution against a uniform hash at the same load factor.

    `histogram`: a DataFrame with columns ``chain_length`` and ``slots`` (slots with that many
    entries), as :func:`rmqlab.analysis.indexstats.chain_length_histogram` returns for a file or
    :attr:`rmqlab.capacity.OccupancySample.histogram` for the capacity model's key sample.
    Bars: share of slots (%) with each length, log y axis, so the few long chains of hot keys
    (keys put many times share one slot) stay visible; markers and line: the Poisson share
    ``exp(-λ) λ^k / k!`` with λ = entries / slots, from
    :func:`rmqlab.analysis.indexstats.poisson_expected_slots`. The legend gives λ, the measured empty
    share and the longest chain. Cost: O(chain lengths).

    >>> import pandas as pd
    >>> fig = sampled_chain_lengths_figure(pd.DataFrame({"chain_length": [0, 1, 9], "slots": [5, 4, 1]}))
    >>> [round(float(b.get_height()), 1) for b in fig.axes[0].containers[0]]
    [50.0, 40.0, 10.0]
    """
    try:
        lengths = np.asarray(histogram["chain_length"], dtype=np.int64)
        slots = np.asarray(histogram["slots"], dtype=np.int64)
    except (KeyError, TypeError, IndexError):
        raise ValueError("histogram needs columns chain_length and slots") from None
    if lengths.ndim != 1 or lengths.shape != slots.shape or len(lengths) == 0:
        raise ValueError("histogram must have at least one row of chain_length and slots")
    if np.any(lengths < 0) or np.any(slots < 0) or slots.sum() == 0:
        raise ValueError("histogram lengths and slots must be non-negative, with at least one slot")
    m = int(slots.sum())
    n = int((lengths * slots).sum())
    lam = n / m
    share = 100.0 * slots / m
    k_max = int(np.ceil(lam + 8 * np.sqrt(lam) + 8)) if n else 1
    expected = 100.0 * poisson_expected_slots(m, n, k_max) / m
    empty = float(share[lengths == 0].sum())

    longest = int(lengths.max())
    symlog = longest > 4 * max(k_max, 1)
    # on the log part of a symlog axis a 0.8-wide bar is thinner than a pixel
    widths = np.where(symlog & (lengths > k_max), 0.04 * lengths, 0.8)
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    ax.bar(lengths, share, width=widths, color="C0", alpha=0.8,
           label=f"measured: {empty:.2f} % empty, longest chain {int(lengths[slots > 0].max()):,}")
    k = np.arange(k_max + 1)
    visible = expected >= 1e-6
    ax.plot(k[visible], expected[visible], "o-", color="C3", markersize=3, linewidth=1,
            label=f"uniform hash (Poisson, λ = {lam:.3f})")
    ax.set_yscale("log")
    ax.set_xlabel("chain length (entries in a slot)")
    ax.set_ylabel("share of slots (%, log scale)")
    if symlog:
        ax.set_xscale("symlog", linthresh=max(k_max, 1))     # hot keys' chains far to the right
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlim(-0.6, max(longest, k_max) * 1.15 + 1)
    ax.set_title(title or f"chain lengths: {n:,} entries in {m:,} slots", fontsize="medium")
    ax.legend(fontsize="small", loc="upper right")
    return fig
