"""The figure functions of :mod:`rmqlab.viz`; see that module's docstring.

Each function returns a :class:`matplotlib.figure.Figure` made with ``Figure()`` (no pyplot:
no window, no ``plt.show``, nothing kept in pyplot's registry). Statistics come from
:mod:`rmqlab.analysis.indexstats` where it has them; only what it does not offer (per-slot chain
lengths for a range of slots, entries per time bin) is computed here, vectorized with NumPy.

Bad input raises the typed errors of :meth:`rmqlab.formats.indexfile.IndexFile.open`
(:class:`rmqlab.errors.TruncatedFileError`, :class:`~rmqlab.errors.GeometryError`,
:class:`~rmqlab.errors.CorruptIndexError`); bad arguments raise ValueError.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from rmqlab.analysis import indexstats
from rmqlab.formats.indexfile import IndexFile

__all__ = [
    "slot_chain_lengths",
    "slot_occupancy_image",
    "chain_length_histogram_figure",
    "entries_over_time",
    "file_stats_figure",
    "index_name_offsets_figure",
    "stored_time_lag_figure",
]

PathOrFile = str | os.PathLike | IndexFile

#: Colour of empty slots (chain length 0) in :func:`slot_occupancy_image`; cells past the
#: end of the range (padding of the last row) are transparent.
EMPTY_COLOUR = "#c8c8c8"
HOT_COLOUR = "#d62728"      # slots far longer than the rest (a hot key), beyond the colour scale
#: Share of the figure's pixels (per side) the image axes is assumed to get, for deciding
#: whether the slot image must be reduced for display (see :func:`slot_occupancy_image`).
_AXES_SHARE = 0.6
#: Bin widths (seconds) :func:`entries_over_time` picks from when none is given.
_NICE_BINS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400)
_TARGET_BINS = 100
#: Columns :func:`file_stats_figure` reads (of :data:`rmqlab.analysis.indexstats.FILE_STATS_COLUMNS`).
FILE_STATS_FIGURE_COLUMNS = ("name", "occupancy", "expected_occupancy", "mean_chain_length",
                             "max_chain_length")
#: Up to this many files :func:`file_stats_figure` names each one on the x axis; past it the
#: axis counts files (0 = the oldest) and the title names the first and the last.
_MAX_NAMED_FILES = 30


# ------------------------------------------------------------------------------ helpers


@contextmanager
def opened_index_file(path_or_file: PathOrFile, hash_slot_num: int | None,
                      index_num: int | None) -> Iterator[IndexFile]:
    """An open IndexFile: the one given (left open), or `path` mapped read-only and closed after."""
    if isinstance(path_or_file, IndexFile):
        g = path_or_file.geometry
        for name, given, actual in (("hash_slot_num", hash_slot_num, g.hash_slot_num),
                                    ("index_num", index_num, g.index_num)):
            if given is not None and int(given) != actual:
                raise ValueError(f"{name}={given} given, but the open file has {name}={actual}")
        yield path_or_file
        return
    f = IndexFile.open(path_or_file, hash_slot_num, index_num)
    try:
        yield f
    finally:
        f.close()


def _slot_range(m: int, start: int, stop: int | None) -> tuple[int, int]:
    start = int(start)
    stop = m if stop is None else int(stop)
    if not 0 <= start <= stop <= m:
        raise ValueError(f"slot range [{start}, {stop}) is not within [0, {m}] with start <= stop")
    return start, stop


def _all_chain_lengths(f: IndexFile) -> np.ndarray:
    """Entries per slot for every slot of `f` (int32): bincount of ``key_hash % m`` over the
    written entries. Cost: one strided read of the 4-byte hashes, a remainder and a bincount."""
    m = f.geometry.hash_slot_num
    key_hash = f.used_entries["key_hash"].astype(np.int32)       # big-endian view -> native copy
    # floor remainder, as rmqlab.analysis.indexstats: never negative, even for a corrupt negative hash
    slots = np.remainder(key_hash, np.int32(m))
    return np.bincount(slots, minlength=m).astype(np.int32)


def _lengths_in_range(f: IndexFile, start: int, stop: int | None) -> tuple[np.ndarray, int, int]:
    start, stop = _slot_range(f.geometry.hash_slot_num, start, stop)
    return _all_chain_lengths(f)[start:stop], start, stop


def _block_max(grid: np.ndarray, k: int) -> np.ndarray:
    """Max over k x k blocks of `grid` (int32, -1 = padding); pads the edges with -1."""
    rows, cols = grid.shape
    r2, c2 = -(-rows // k), -(-cols // k)
    padded = np.full((r2 * k, c2 * k), -1, dtype=grid.dtype)
    padded[:rows, :cols] = grid
    return padded.reshape(r2, k, c2, k).max(axis=(1, 3))


# ------------------------------------------------------------------------------ slots


def slot_chain_lengths(path_or_file: PathOrFile, *, start: int = 0, stop: int | None = None,
                       hash_slot_num: int | None = None, index_num: int | None = None) -> np.ndarray:
    """Chain length (entries) of each slot in ``[start, stop)``, as int32; element i is slot
    ``start + i``. `stop` None means the last slot (hash_slot_num).

    The chain length of a slot is the number of written entries whose ``key_hash % hash_slot_num``
    is that slot: a bincount over the entries (no loop per slot or entry). For a sound file it
    equals the number of entries the slot's chain walk (slot head, then prev_index) visits, and
    it agrees with :func:`rmqlab.analysis.indexstats.chain_length_histogram`.

    `path_or_file` is a path (mapped read-only with the geometry arguments, the broker's
    maxHashSlotNum / maxIndexNum; with neither only the default size is accepted) or an open
    :class:`IndexFile` (then the geometry arguments may be omitted; it is left open).
    Cost: O(entries + hash_slot_num): one strided read of the hashes, a remainder and a
    bincount (its scattered adds the largest part). Memory: two int32 arrays over the entries
    (their hashes, then their slots: 8 bytes an entry) and the counts (12 bytes a slot).

    >>> import tempfile, os
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> p = os.path.join(tempfile.mkdtemp(), "20240610061524062")
    >>> build_index_file(p, ["T#Aa", "T#BB", "T#c"], [0, 100, 200], [0, 0, 0],
    ...                  hash_slot_num=8, index_num=5)
    3
    >>> lengths = slot_chain_lengths(p, hash_slot_num=8, index_num=5)
    >>> int(lengths.sum()), int(lengths.max()), lengths.dtype.name, len(lengths)
    (3, 2, 'int32', 8)
    """
    with opened_index_file(path_or_file, hash_slot_num, index_num) as f:
        return _lengths_in_range(f, start, stop)[0]


def slot_occupancy_image(path_or_file: PathOrFile, *, start: int = 0, stop: int | None = None,
                         width: int | None = None, hash_slot_num: int | None = None,
                         index_num: int | None = None, downsample: bool = True,
                         figsize: tuple[float, float] = (7.0, 6.0)) -> Figure:
    """One cell per hash slot of ``[start, stop)``, coloured by chain length (entries in the slot).

    Layout: row-major, `width` cells a row (default ``ceil(sqrt(n))`` for n slots, a near
    square), so the cell at (row, column) is slot ``start + row * width + column``. Empty slots
    (chain length 0) have their own colour (grey, the colour bar's lower triangle); slots longer
    than a uniform hash plausibly makes them (:func:`colour_cap`: a hot key, or colliding
    hashes) are red (the upper triangle), so the colour scale spans only what random hashing
    explains and stays readable however long the hot chains are; the cells
    after the last slot of the range, which fill the last row, are masked (transparent), not 0.
    The colour bar is labelled "entries in slot"; the title gives the file name, the range and
    the occupancy (non-empty slots of the range).

    Display reduction: when the grid has more cells per side than about 60% of the figure's
    pixels (``figsize`` x ``fig.dpi``, what the image axes gets), each k x k block of cells is
    shown as one pixel holding the *maximum* of its cells (padding ignored; a block shows
    "empty" only if all its slots are empty), so a single long chain stays visible where
    matplotlib's own resampling would drop it; the title then says "max of k x k slots". This
    touches only the displayed array (``fig.axes[0].images[0].get_array()``): the exact
    numbers are :func:`slot_chain_lengths`. With ``downsample=False`` the full grid is handed
    to matplotlib (``interpolation="nearest"``), which is exact but slower and, past the
    screen's resolution, shows only some of the cells. Axis units are cells either way.

    `path_or_file` and the geometry arguments as :func:`slot_chain_lengths`.
    Cost: :func:`slot_chain_lengths` plus O(n) for the grid, then the drawing and ``savefig``
    (benchmarks/bench_viz.py).

    >>> import tempfile, os, io
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> p = os.path.join(tempfile.mkdtemp(), "20240610061524062")
    >>> build_index_file(p, ["T#Aa", "T#BB", "T#c"], [0, 100, 200], [0, 0, 0],
    ...                  hash_slot_num=8, index_num=5)
    3
    >>> fig = slot_occupancy_image(p, hash_slot_num=8, index_num=5)
    >>> grid = fig.axes[0].images[0].get_array()
    >>> grid.shape, int(grid.sum()), int(grid.mask.sum())    # 3 x 3 cells, the last one padding
    ((3, 3), 3, 1)
    >>> fig.savefig(io.BytesIO(), format="png")
    """
    with opened_index_file(path_or_file, hash_slot_num, index_num) as f:
        start, stop = _slot_range(f.geometry.hash_slot_num, start, stop)
        every_slot = _all_chain_lengths(f)
        lengths = every_slot[start:stop]
        name = f.path.name
        m = f.geometry.hash_slot_num
    n = stop - start
    if n == 0:
        raise ValueError(f"slot range [{start}, {stop}) is empty")
    if width is None:
        width = max(1, math.isqrt(n - 1) + 1 if n > 1 else 1)
    width = int(width)
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")
    rows = -(-n // width)
    grid = np.full(rows * width, -1, dtype=np.int32)      # -1 marks padding, masked below
    grid[:n] = lengths
    grid = grid.reshape(rows, width)

    fig = Figure(figsize=figsize, layout="constrained")
    k = 1
    if downsample:
        budget_w = max(1, int(figsize[0] * fig.dpi * _AXES_SHARE))
        budget_h = max(1, int(figsize[1] * fig.dpi * _AXES_SHARE))
        k = max(1, -(-width // budget_w), -(-rows // budget_h))
    shown = _block_max(grid, k) if k > 1 else grid
    data = np.ma.masked_less(shown, 0)

    used = int(np.count_nonzero(lengths))
    top = int(lengths.max())
    # One hot key can make a slot thousands of times longer than the rest: scale the colours
    # to the longest chain a uniform hash gives and show the longer ones in red.
    cap = colour_cap(every_slot)
    cmap = _colormap()
    norm = Normalize(vmin=0.5, vmax=cap + 0.5)   # 0 falls under: the "empty" colour
    ax = fig.subplots()
    im = ax.imshow(data, cmap=cmap, norm=norm, interpolation="nearest", origin="upper",
                   extent=(0, shown.shape[1] * k, shown.shape[0] * k, 0))
    cb = fig.colorbar(im, ax=ax, extend="both" if cap < top else "min", label="entries in slot")
    cb.ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("column")
    ax.set_ylabel(f"row (slot = {start:,} + row × {width:,} + column)" if start
                  else f"row (slot = row × {width:,} + column)")
    shown_note = f"; shown as max of {k}×{k} slots" if k > 1 else ""
    if cap < top:
        hot = int(np.count_nonzero(lengths > cap))
        shown_note += (f"\nred = {hot:,} slot{'s' if hot != 1 else ''} longer than a uniform hash gives "
                       f"(> {cap} entries; longest {top:,})")
    ax.set_title(f"{name}: slots {start:,}..{stop - 1:,} of {m:,}\n"
                 f"{used:,} of {n:,} occupied ({used / n:.1%}), grey = empty{shown_note}",
                 fontsize="medium", pad=12)       # clear of the top row's tick label, half above the axes
    return fig


def _colormap():
    from matplotlib import colormaps

    return colormaps["viridis"].with_extremes(under=EMPTY_COLOUR, over=HOT_COLOUR, bad=(0, 0, 0, 0))


def chain_length_colour(length: int, cap: int) -> str:
    """The colour :func:`slot_occupancy_image` gives a slot of `length` entries when its scale
    stops at `cap` (:func:`colour_cap`): grey when empty, viridis up to `cap`, red beyond.

    >>> chain_length_colour(0, 19), chain_length_colour(1, 19), chain_length_colour(20, 19)
    ('#c8c8c8', '#460a5d', '#d62728')
    """
    r, g, b, _ = _colormap()(Normalize(vmin=0.5, vmax=cap + 0.5)(length))
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def colour_cap(lengths: np.ndarray) -> int:
    """The longest chain the colour scale spans, for `lengths`, the chain length of every slot
    of a file: the longest chain a uniform hash plausibly gives
    (:func:`rmqlab.analysis.indexstats.uniform_chain_limit`), or the longest chain when none is longer.
    Slots beyond it are drawn in HOT_COLOUR: a key put many times, or colliding hashes.

    >>> colour_cap(np.array([1, 2, 0, 1]))               # nothing long: the scale spans all
    2
    >>> colour_cap(np.array([2] * 999 + [60]))           # λ ≈ 2: random slots stop at 8
    8
    """
    top = int(lengths.max()) if lengths.size else 0
    limit = indexstats.uniform_chain_limit(max(lengths.size, 1), int(lengths.sum()))
    return max(limit, 1) if top > limit else max(top, 1)


# ------------------------------------------------------------------------------ chains


def chain_length_histogram_figure(path_or_file: PathOrFile, *, hash_slot_num: int | None = None,
                                  index_num: int | None = None, log: bool = False,
                                  figsize: tuple[float, float] = (7.0, 4.5)) -> Figure:
    """The file's chain-length distribution against an ideal uniform hash.

    Bars: slots (y) with each chain length (x, entries in a slot), from
    :func:`rmqlab.analysis.indexstats.chain_length_histogram` (only lengths that occur, plus 0).
    Line with markers: the Poisson expectation ``slots x pmf(k; λ)`` with
    ``λ = entries / hash_slot_num``, for k = 0 .. ``ceil(λ + 8 sqrt(λ) + 8)`` (beyond that
    the expectation is below 1e-6 slots for any file size RocketMQ allows), computed by
    :func:`rmqlab.analysis.indexstats.poisson_expected_slots`. The legend gives λ. `log` puts the y axis
    on a log scale (zero-height bars and vanishing expectations are then simply not drawn),
    which shows the tail where hot keys and bad hashes live.

    The x axis ends at :func:`colour_cap`, the longest chain a uniform hash plausibly gives;
    the slots longer than that (a key put many times, or colliding hashes) are one red bar
    labelled ``>cap`` after a gap, annotated with their count and the longest chain, so a hot
    slot of thousands of entries never squeezes the comparison into a corner.

    `path_or_file` and the geometry arguments as :func:`slot_chain_lengths`.
    Cost: that of :func:`~rmqlab.analysis.indexstats.chain_length_histogram` plus drawing,
    O(bars) (benchmarks/bench_viz.py).

    >>> import tempfile, os
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> p = os.path.join(tempfile.mkdtemp(), "20240610061524062")
    >>> build_index_file(p, ["T#Aa", "T#BB", "T#c"], [0, 100, 200], [0, 0, 0],
    ...                  hash_slot_num=8, index_num=5)
    3
    >>> fig = chain_length_histogram_figure(p, hash_slot_num=8, index_num=5, log=True)
    >>> [[int(b.get_height()) for b in c] for c in fig.axes[0].containers]   # 3 keys: a 2-chain is rare
    [[6, 1], [1]]
    """
    if isinstance(path_or_file, IndexFile):
        with opened_index_file(path_or_file, hash_slot_num, index_num) as f:
            path, hash_slot_num, index_num = f.path, f.geometry.hash_slot_num, f.geometry.index_num
    else:
        path = Path(path_or_file)
    hist = indexstats.chain_length_histogram(path, hash_slot_num=hash_slot_num, index_num=index_num)
    lengths = hist["chain_length"].to_numpy()
    slots = hist["slots"].to_numpy()
    m = int(slots.sum())
    n = int((lengths * slots).sum())
    lam = n / m
    k_max = math.ceil(lam + 8 * math.sqrt(lam) + 8) if n else 1
    expected = indexstats.poisson_expected_slots(m, n, k_max)

    # a hot key's slot can be thousands of entries long: the axis stops where a uniform hash
    # stops (colour_cap, as the occupancy image) and one red bar past it holds the whole tail
    x_max = max(colour_cap(np.repeat(lengths, slots)), 1)
    within = lengths <= x_max
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    ax.bar(lengths[within], slots[within], width=0.8, color="C0", alpha=0.75, label="slots in this file")
    ax.plot(np.arange(k_max + 1), expected, color="C3", marker="o", markersize=4, linewidth=1.2,
            label=f"uniform hash: slots × Poisson pmf, λ = {lam:.4g}")
    if log:
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.5)
    top = int(lengths.max())
    ax.set_xlim(-0.7, x_max + 0.7)
    if top > x_max:
        beyond = int(slots[lengths > x_max].sum())
        tail_x = x_max + 2
        ax.bar([tail_x], [beyond], width=1.6, color=HOT_COLOUR, alpha=0.85,
               label=f"longer than {x_max} (a uniform hash gives none)")
        ax.set_xlim(-0.7, tail_x + 1.1)
        ax.annotate(f"{beyond:,} slot{'s' if beyond != 1 else ''}\nwith {x_max + 1}..{top:,}\nentries",
                    (tail_x, beyond), xytext=(0, 4), textcoords="offset points", ha="center",
                    va="bottom", fontsize="small", color=HOT_COLOUR)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if top > x_max:
        ticks = [t for t in ax.get_xticks() if 0 <= t <= x_max]
        ax.set_xticks(ticks + [x_max + 2], [f"{int(t)}" for t in ticks] + [f">{x_max}"])
    ax.set_xlabel("chain length (entries in slot)")
    ax.set_ylabel("slots")
    ax.set_title(f"{path.name}: {n:,} entries in {m:,} slots, longest chain {int(lengths.max())}",
                 fontsize="medium")
    ax.legend()
    return fig


# ------------------------------------------------------------------------------ files


def file_stats_figure(files: pd.DataFrame, *,
                      figsize: tuple[float, float] | None = None) -> Figure:
    """Per index file, oldest first: its share of non-empty slots against a uniform hash's, and
    its mean and longest chain lengths.

    `files` is the per-file statistics frame of :func:`rmqlab.analysis.indexstats.directory_stats` (or
    rows of :func:`~rmqlab.analysis.indexstats.file_stats`), or ``index_stats(...).to_pandas().files``
    of :mod:`rmqlab.spark.stats`; only the columns of :data:`FILE_STATS_FIGURE_COLUMNS` are
    read, and a missing one raises ValueError naming it. Rows are drawn in the order of
    ``name`` (``yyyyMMddHHmmssSSS``: oldest first), whatever the frame's order.

    Left panel: one bar per file, its ``occupancy`` (non-empty slots / hash_slot_num, 0..1,
    printed in white at the bar's top up to 30 files), and a black dash across the bar at its
    ``expected_occupancy`` (``1 - (1 - 1/m)**entries``, what uniformly random hashes would leave
    non-empty; printed in black above it); a hot key, put many times into one slot, keeps the
    bar below the dash. The axis is zoomed on the values (the gap is often a fraction of a
    percent), its start named in the axis label.
    Right panel, log scale: one bar per file, its ``mean_chain_length`` (entries per non-empty
    slot), and a line through each file's ``max_chain_length`` (entries in its fullest slot).
    An empty file has no mean bar and no longest-chain marker. The x axes name the files (up to
    30; past that they count them, 0 = the oldest). The legends sit where no data can be: above
    100 % on the left, in the decade above the longest chain on the right.

    Cost: O(files) to draw; no file is read.

    >>> import pandas as pd
    >>> files = pd.DataFrame({"name": ["20240610061326569", "20240610061320005"],
    ...                       "occupancy": [0.5, 0.9], "expected_occupancy": [0.55, 0.95],
    ...                       "mean_chain_length": [1.5, 4.0], "max_chain_length": [3, 40]})
    >>> fig = file_stats_figure(files)
    >>> [float(b.get_height()) for b in fig.axes[0].patches]      # oldest first
    [0.9, 0.5]
    """
    if not isinstance(files, pd.DataFrame):
        raise ValueError(f"files must be a pandas DataFrame of per-file statistics, "
                         f"got {type(files).__name__}")
    missing = [c for c in FILE_STATS_FIGURE_COLUMNS if c not in files.columns]
    if missing:
        raise ValueError(f"files has no column {', '.join(map(repr, missing))}: expected the "
                         f"frame of rmqlab.analysis.indexstats.directory_stats (columns "
                         f"{', '.join(FILE_STATS_FIGURE_COLUMNS)})")
    files = files.sort_values("name", kind="stable")
    n = len(files)
    if figsize is None:
        figsize = (10.0, 4.6 if n <= _MAX_NAMED_FILES else 3.8)
    fig = Figure(figsize=figsize, layout="constrained")
    if n == 0:
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no index files", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig

    names = files["name"].astype(str).tolist()
    occupancy = files["occupancy"].to_numpy(np.float64)
    expected = files["expected_occupancy"].to_numpy(np.float64)
    mean_chain = files["mean_chain_length"].to_numpy(np.float64)
    max_chain = files["max_chain_length"].to_numpy(np.float64)
    x = np.arange(n)
    occupancy_ax, chain_ax = fig.subplots(1, 2)

    occupancy_ax.bar(x, occupancy, width=0.8, color="#4c78a8", label="observed")
    # one dash across the top of each bar, as wide as the bar whatever the figure's size
    occupancy_ax.hlines(expected, x - 0.4, x + 0.4, color="black", linewidth=2,
                        label="uniform hash")
    # Zoomed on the data: the gap between observed and expected is a fraction of a percent,
    # invisible on a 0-100 % axis. The band above the data holds the legend.
    shown = np.concatenate([occupancy[np.isfinite(occupancy)], expected[np.isfinite(expected)]])
    lo_data, hi_data = (float(shown.min()), float(shown.max())) if len(shown) else (0.0, 1.0)
    spread = max(hi_data - lo_data, 0.005)
    low = max(0.0, lo_data - 1.2 * spread)
    high = hi_data + 0.6 * spread
    top = high + 0.45 * (high - low)
    occupancy_ax.set_ylim(low, top)
    # no tick above 100 %: the band up there is the legend's
    occupancy_ax.set_yticks([t for t in occupancy_ax.get_yticks() if low <= t <= min(1.0, high)])
    occupancy_ax.set_ylim(low, top)
    occupancy_ax.yaxis.set_major_formatter("{x:.1%}" if high - low < 0.2 else "{x:.0%}")
    if n <= _MAX_NAMED_FILES:
        small = "x-small" if n > 12 else "small"
        rotation = 90 if n > 8 else 0
        for xi, v, e in zip(x, occupancy, expected):
            if np.isfinite(v):
                occupancy_ax.annotate(f"{v:.1%}", (xi, v), xytext=(0, -3), textcoords="offset points",
                                      ha="center", va="top", rotation=rotation, color="white", fontsize=small,
                                      gid="observed")
            if np.isfinite(e):
                occupancy_ax.annotate(f"{e:.1%}", (xi, max(e, v if np.isfinite(v) else e)), xytext=(0, 3),
                                      textcoords="offset points", ha="center", va="bottom", rotation=rotation,
                                      color="black", fontsize=small, gid="expected")
    occupancy_ax.set_ylabel("share of slots" + (f" (axis from {low:.1%})" if low > 0 else ""))
    occupancy_ax.set_title("non-empty slots", fontsize="medium")
    occupancy_ax.legend(loc="upper center", ncols=2, fontsize="small")

    chain_ax.bar(x, mean_chain, width=0.8, color="#f58518", label="mean (non-empty slots)")
    longest = np.where(max_chain > 0, max_chain, np.nan)     # an empty file: nothing on a log axis
    chain_ax.plot(x, longest, marker="o", color="#54a24b", label="longest")
    chain_ax.set_yscale("log")
    top = np.nanmax(longest) if np.isfinite(longest).any() else 1.0
    # the top decade holds the legend: the longest chain stays below it
    chain_ax.set_ylim(0.8, 10 * max(top, 1.0))
    chain_ax.set_ylabel("entries in a slot")
    chain_ax.set_title("chain length", fontsize="medium")
    chain_ax.legend(loc="upper center", ncols=2, fontsize="small")

    for ax in (occupancy_ax, chain_ax):
        if n <= _MAX_NAMED_FILES:
            ax.set_xticks(x, names, rotation=45, ha="right", rotation_mode="anchor",
                          fontsize="small" if n <= 12 else "x-small")
            ax.set_xlabel("index file (oldest first)")
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("index file number (0 = oldest)")
        ax.set_xlim(-0.6, n - 0.4)
    span = names[0] if n == 1 else f"{names[0]} .. {names[-1]}"
    fig.suptitle(f"{n} index file{'s' if n != 1 else ''} ({span}): "
                 f"longest chain {int(np.nanmax(max_chain)):,}", fontsize="medium")
    return fig


# ------------------------------------------------------------------------------ time


def _nice_bin_seconds(span_seconds: float) -> int:
    want = span_seconds / _TARGET_BINS
    for b in _NICE_BINS:
        if b >= want:
            return b
    return 86400 * math.ceil(want / 86400)


def _to_datetime64(ms) -> np.ndarray:
    return np.asarray(ms, dtype=np.int64).astype("datetime64[ms]")


def entries_over_time(directory: str | os.PathLike, *, hash_slot_num: int | None = None,
                      index_num: int | None = None, bin_seconds: int | None = None,
                      clock_steps: pd.DataFrame | None = None,
                      figsize: tuple[float, float] | None = None) -> Figure:
    """Entries per time bin for every index file of `directory`, and each file's time span.

    Upper panel: for each file (oldest first, as :func:`rmqlab.analysis.indexstats.index_file_paths`
    picks and orders them), a step line of its entries per bin of `bin_seconds` seconds, from
    its first to its last non-empty bin. An entry's store time is what the broker compares
    in a query: ``header.begin_timestamp + time_diff * 1000`` ms (whole seconds, so an entry
    can fall up to 1 s before its message's real store time). Bins are aligned to multiples
    of `bin_seconds` since the epoch; with None a round width giving about 100 bins over the
    folder's span is picked (1 s .. 1 day, then whole days). The y axis is entries per bin;
    each file's counts sum to its entries.

    Lower panel: one horizontal bar per file from its header's ``begin_timestamp`` to its
    ``end_timestamp`` (ms since the epoch), named on the y axis and labelled with its entry
    count; it is also the colour key of the upper panel (each file once, same colour in both).
    Files whose header holds no timestamp (begin 0: created, never written) get no bar.
    Times are shown in UTC.

    `clock_steps`, the frame of :func:`rmqlab.analysis.clocksteps.clock_steps_back` (columns ``before``,
    ``after``, ``step_ms``), marks each place the broker's clock stepped back: a dashed line
    through both panels at the time the clock left (``before``), labelled with the step.

    Geometry arguments as :func:`rmqlab.analysis.indexstats.file_stats` (the same for every file).
    Cost: one header and one strided read of the 4-byte time diffs per file, and one
    bincount per file: O(entries), plus drawing, O(files + bins) (benchmarks/bench_viz.py).
    An empty folder gives a figure saying so; a file that is not an index file of that
    geometry raises its typed error.

    >>> import tempfile, datetime
    >>> from rmqlab.store.indexservice import ExpandedKeys, bulk_build
    >>> d = tempfile.mkdtemp()
    >>> _ = bulk_build(ExpandedKeys(["T#a", "T#b", "T#c"], [0, 100, 200],
    ...                             [1718000000000, 1718000001000, 1718000065000]),
    ...                d, hash_slot_num=4, index_num=3, clock=lambda: 1718000000000,
    ...                tz=datetime.timezone.utc)
    >>> fig = entries_over_time(d, hash_slot_num=4, index_num=3, bin_seconds=60)
    >>> [int(s.get_data().values.sum()) for s in fig.axes[0].patches]
    [2, 1]
    """
    import matplotlib.dates as mdates

    paths = indexstats.index_file_paths(directory)
    files = []
    for p in paths:
        with IndexFile.open(p, hash_slot_num, index_num) as f:
            h = f.header
            diffs = f.used_entries["time_diff"].astype(np.int64)
        files.append((p.name, h, h.begin_timestamp + diffs * 1000))

    n_files = len(files)
    if figsize is None:
        figsize = (9.0, 4.0 + 0.3 * max(n_files, 1))
    fig = Figure(figsize=figsize, layout="constrained")
    if not files:
        ax = fig.subplots()
        ax.text(0.5, 0.5, f"no index files in {directory}", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig

    stamped = [(name, h) for name, h, _ in files if h.begin_timestamp > 0]
    times = [t for _, _, t in files if len(t)]
    lo = min([int(t.min()) for t in times] + [h.begin_timestamp for _, h in stamped])
    hi = max([int(t.max()) for t in times] + [h.end_timestamp for _, h in stamped])
    if bin_seconds is None:
        bin_seconds = _nice_bin_seconds((hi - lo) / 1000)
    bin_seconds = int(bin_seconds)
    if bin_seconds <= 0:
        raise ValueError(f"bin_seconds must be positive, got {bin_seconds}")
    bin_ms = 1000 * bin_seconds
    origin = (lo // bin_ms) * bin_ms

    ax, ax_span = fig.subplots(2, 1, sharex=True,
                               height_ratios=[3.0, max(1.0, 0.25 * n_files + 0.5)])
    for i, (name, _header, t) in enumerate(files):
        if not len(t):
            continue
        b = (t - origin) // bin_ms
        first = int(b.min())
        counts = np.bincount(b - first)
        edges = origin + bin_ms * np.arange(first, first + len(counts) + 1, dtype=np.int64)
        ax.stairs(counts, mdates.date2num(_to_datetime64(edges)), color=f"C{i % 10}",
                  linewidth=1.3, label=f"{name} ({len(t):,})")
    ax.set_ylabel(f"entries per {_bin_label(bin_seconds)}")
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.15)      # headroom for the clock-step labels
    ax.set_title(f"{Path(directory).name or directory}: {n_files} index file"
                 f"{'s' if n_files != 1 else ''}, {sum(len(t) for _, _, t in files):,} entries "
                 f"(colours: the files below)", fontsize="medium")
    if clock_steps is not None and len(clock_steps):
        for i, step in enumerate(clock_steps.itertuples()):
            x = mdates.date2num(_to_datetime64([int(step.before)]))[0]
            for panel in (ax, ax_span):
                panel.axvline(x, color="black", linestyle="--", linewidth=1.0, zorder=0)
            # staggered, so the labels of steps a few seconds apart do not overlap
            ax.annotate(f"clock {int(step.step_ms) / 1000:+.1f} s", (x, 1.0 - 0.07 * (i % 2)),
                        xycoords=("data", "axes fraction"), xytext=(2, -2), textcoords="offset points",
                        ha="left", va="top", fontsize="small", gid=f"clock-step:{i}")

    if stamped:
        begin = mdates.date2num(_to_datetime64([h.begin_timestamp for _, h in stamped]))
        end = mdates.date2num(_to_datetime64([h.end_timestamp for _, h in stamped]))
        y = np.arange(len(stamped))
        bars = ax_span.barh(y, end - begin, left=begin, height=0.6,
                            color=[f"C{i % 10}" for i, (_, h, _) in enumerate(files)
                                   if h.begin_timestamp > 0])
        for label in ax_span.bar_label(bars, labels=[f" {h.keys:,} entries" for _, h in stamped],
                                       fontsize="small"):
            label.set_bbox({"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.85})
        ax_span.set_yticks(y, [name for name, _ in stamped], fontsize="small")
        ax_span.invert_yaxis()                                   # oldest on top
    ax_span.set_xlabel("store time (UTC)")
    ax_span.set_ylabel("file span")
    locator = mdates.AutoDateLocator()
    ax_span.xaxis.set_major_locator(locator)
    ax_span.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    return fig


def _bin_label(seconds: int) -> str:
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds % size == 0:
            q = seconds // size
            return f"{q} {unit}{'s' if unit == 'day' and q != 1 else ''}" if q != 1 else unit
    return f"{seconds} s" if seconds != 1 else "second"


# ------------------------------------------------------------------------------ names


def index_name_offsets_figure(offsets: pd.DataFrame) -> Figure:
    """How far an index file's name is from its first message, under several ways of naming and
    reading names: one group of bars per way (``reading``), one bar per file (``file``, a number),
    the length ``seconds`` (the instant the name denotes minus the file's beginTimestamp) on a
    symmetric log axis, each group's median written beside it. Cost: one small figure.

    >>> df = pd.DataFrame({"reading": ["a", "a", "b", "b"], "file": [0, 1, 0, 1],
    ...                    "seconds": [0.0, 0.0, 0.06, 28800.06]})
    >>> len(index_name_offsets_figure(df).axes[0].patches)
    4
    """
    readings = list(dict.fromkeys(offsets["reading"]))
    files = sorted(offsets["file"].unique())
    fig = Figure(figsize=(10.0, 1.2 + 0.75 * len(readings)), layout="constrained")
    ax = fig.add_subplot()
    h = 0.8 / max(len(files), 1)
    colours = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d", "#bab0ac"]
    for i, r in enumerate(readings):
        part = offsets[offsets["reading"] == r].set_index("file")["seconds"]
        for j, f in enumerate(files):
            if f in part.index:
                ax.barh(i - 0.4 + (j + 0.5) * h, part[f], height=h * 0.9, color=colours[j % len(colours)])
        median = float(part.median())
        ax.text(max(median, 0) * 1.5 + 0.5, i, _seconds_text(median), va="center", fontsize=8)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yticks(range(len(readings)), readings, fontsize=8)
    ax.invert_yaxis()
    top = max(float(offsets["seconds"].max()), 1.0)
    ax.set_xlim(min(float(offsets["seconds"].min()), 0.0) * 1.5, top * 30)
    ax.set_xlabel("the name's instant minus the file's first message (seconds, symmetric log scale)")
    ax.set_title(f"{len(files)} index files: what the name says against beginTimestamp", fontsize="medium")
    return fig


def _seconds_text(s: float) -> str:
    if abs(s) < 1:
        return f"median {s * 1000:,.0f} ms"
    if abs(s) < 3600:
        return f"median {s:,.1f} s"
    if abs(s) < 86400 * 2:
        return f"median {s / 3600:,.2f} h"
    return f"median {s / 86400:,.1f} days"


# ------------------------------------------------------------------------------ stored times


def stored_time_lag_figure(lag_ms, *, bin_ms: int = 50, figsize: tuple[float, float] = (8.0, 3.4)) -> Figure:
    """How far each index entry's stored time lies before its message's real store time.

    `lag_ms` is, per entry, ``store_timestamp - (beginTimestamp + timeDiff * 1000)`` (the
    ``lag_ms`` column of :func:`rmqlab.analysis.keys.index_entries`). Bars: entries per `bin_ms`
    of lag. The shaded band is 0..999 ms, what whole seconds counted from the file's begin
    allow; entries outside it (a message stored before its file's begin, clamped to 0; a
    follow-on file's seed) stand out, and the title counts them. Cost: O(entries).

    >>> fig = stored_time_lag_figure([0, 120, 980, 999, -300])
    >>> int(sum(p.get_height() for p in fig.axes[0].patches if p.get_gid() == "lag-bin"))
    5
    """
    lag = np.asarray(lag_ms, dtype=np.float64)
    lag = lag[np.isfinite(lag)]
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    if not lag.size:
        ax.text(0.5, 0.5, "no entries", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    lo = min(0.0, math.floor(lag.min() / bin_ms) * bin_ms)
    hi = max(1000.0, math.ceil((lag.max() + 1) / bin_ms) * bin_ms)
    counts, edges = np.histogram(lag, bins=np.arange(lo, hi + bin_ms, bin_ms))
    ax.axvspan(0, 1000, color="#e8f1e0", zorder=0, label="0–999 ms: whole seconds after the file's begin")
    bars = ax.bar(edges[:-1], counts, width=bin_ms, align="edge", color="#4c78a8", edgecolor="white",
                  linewidth=0.5, label=f"entries per {bin_ms} ms of lag")
    for b in bars:
        b.set_gid("lag-bin")
    outside = int(((lag < 0) | (lag > 999)).sum())
    ax.set_xlabel("real store time − stored time (ms)")
    ax.set_ylabel("index entries")
    ax.set_title(f"{lag.size:,} entries: median lag {np.median(lag):,.0f} ms; "
                 f"{outside:,} outside 0–999 ms", fontsize="medium")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=2, fontsize="small", frameon=False)
    return fig
