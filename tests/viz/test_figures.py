"""rmqlab.viz: the numbers behind every figure against independent truths.

* chain lengths: a plain Python loop over the entries (slot = key_hash % m) and the chain
  walks of ``IndexFile.chain`` (slot head, then prev_index);
* the Poisson line: slots x pmf computed with math.exp / math.factorial;
* the bars: rmqlab.analysis.indexstats.chain_length_histogram;
* entries over time: a loop over each file's entries and its header timestamps.

Small files (61 slots, 1000 entries) with colliding keys ("Aa"/"BB" families) and hot keys.
"""
from __future__ import annotations

import datetime as dt
import io
import math
import random
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (only to check nothing is left in its registry)
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from oracles import require_module  # noqa: E402

from rmqlab.analysis.indexstats import chain_length_histogram, index_file_paths, uniform_chain_limit  # noqa: E402
from rmqlab.errors import GeometryError, RmqlabError, TruncatedFileError  # noqa: E402
from rmqlab.formats.indexfile import IndexFile, build_index_file  # noqa: E402
from rmqlab.store.indexservice import ExpandedKeys, bulk_build  # noqa: E402
from rmqlab.viz import (  # noqa: E402
    chain_length_histogram_figure,
    entries_over_time,
    slot_chain_lengths,
    slot_occupancy_image,
)

UTC = dt.UTC
HSN, INUM = 61, 1000
T0 = 1_718_000_000_000
COLLIDING = ["Aa", "BB", "AaAa", "AaBB", "BBAa", "BBBB"]
MS_PER_DAY = 86_400_000


def rows(n: int, seed: int):
    """n puts: colliding, hot and unique keys; timestamps mostly rising, sometimes back a bit."""
    rng = random.Random(seed)
    keys, phy, ts = [], [], []
    t = T0
    for i in range(n):
        r = rng.random()
        if r < 0.25:
            k = rng.choice(COLLIDING)
        elif r < 0.45:
            k = f"HOT_{rng.randint(0, 4)}"
        else:
            k = f"ORDER_{rng.randint(0, 10 ** 6)}"
        keys.append(f"Topic{rng.choice('AB')}#{k}")
        phy.append(200 * i)
        ts.append(t)
        t += rng.choice([0, 3, 250, 1000, 4000, -20])
    return keys, phy, ts


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Three files: two full (999 entries each) and one partly filled."""
    d = tmp_path_factory.mktemp("viz")
    keys, phy, ts = rows(2500, seed=7)
    first_ts = [ts[lo] for lo in range(0, len(ts), INUM - 1)]
    paths = bulk_build(ExpandedKeys(keys, phy, ts), d, hash_slot_num=HSN, index_num=INUM,
                       clock=iter(first_ts).__next__, tz=UTC)
    assert len(paths) == 3
    return d


@pytest.fixture(scope="module")
def paths(folder) -> list[Path]:
    return index_file_paths(folder)


def brute_force_lengths(path: Path, hsn: int = HSN, inum: int = INUM) -> list[int]:
    out = [0] * hsn
    with IndexFile.open(path, hsn, inum) as f:
        for number in range(1, f.header.index_count):
            out[f.entry(number).key_hash % hsn] += 1
    return out


def walked_lengths(path: Path, hsn: int = HSN, inum: int = INUM) -> list[int]:
    with IndexFile.open(path, hsn, inum) as f:
        return [len(list(f.chain(s))) for s in range(hsn)]


def image_array(fig: Figure) -> np.ma.MaskedArray:
    images = fig.axes[0].images
    assert len(images) == 1
    return images[0].get_array()


@pytest.fixture(autouse=True)
def no_pyplot_figures():
    """No figure function may register a figure with pyplot."""
    before = plt.get_fignums()
    yield
    assert plt.get_fignums() == before


# ------------------------------------------------------------------------- chain lengths


def test_slot_chain_lengths_equal_brute_force_and_chain_walks(paths):
    for p in paths:
        lengths = slot_chain_lengths(p, hash_slot_num=HSN, index_num=INUM)
        assert lengths.dtype == np.int32 and lengths.shape == (HSN,)
        assert lengths.tolist() == brute_force_lengths(p)
        assert lengths.tolist() == walked_lengths(p)
        with IndexFile.open(p, HSN, INUM) as f:
            assert int(lengths.sum()) == f.header.keys
            assert lengths.tolist() == slot_chain_lengths(f).tolist()     # an open file works too
    # the collisions are really there: some slot holds many entries
    assert max(slot_chain_lengths(paths[0], hash_slot_num=HSN, index_num=INUM)) > 999 // HSN * 3


def test_slot_chain_lengths_range(paths):
    p = paths[1]
    full = brute_force_lengths(p)
    for start, stop in [(0, None), (5, 40), (60, 61), (17, 17), (0, 1)]:
        got = slot_chain_lengths(p, start=start, stop=stop, hash_slot_num=HSN, index_num=INUM)
        assert got.tolist() == full[start:stop]
    for start, stop in [(-1, 10), (10, 5), (0, HSN + 1)]:
        with pytest.raises(ValueError):
            slot_chain_lengths(p, start=start, stop=stop, hash_slot_num=HSN, index_num=INUM)
    with IndexFile.open(p, HSN, INUM) as f, pytest.raises(ValueError):
        slot_chain_lengths(f, hash_slot_num=HSN + 1)                       # contradicts the file


def test_empty_file_has_zero_lengths(tmp_path):
    p = tmp_path / "20240610061524062"
    build_index_file(p, [], [], [], hash_slot_num=HSN, index_num=INUM)
    assert slot_chain_lengths(p, hash_slot_num=HSN, index_num=INUM).tolist() == [0] * HSN
    fig = slot_occupancy_image(p, hash_slot_num=HSN, index_num=INUM)
    assert int(image_array(fig).sum()) == 0
    fig.savefig(io.BytesIO(), format="png")


# ------------------------------------------------------------------------- slot image


@pytest.mark.parametrize("start, stop, width", [
    (0, None, None),        # 61 slots: 8 x 8 with 3 padding cells
    (0, None, 10),          # 7 rows, last one 1 slot
    (5, 40, None),          # 35 slots: 6 x 6, 1 padding cell
    (20, 56, 6),            # exactly 6 x 6, no padding
    (60, 61, None),         # one slot
    (3, 50, 100),           # wider than the range: one row
])
def test_image_holds_exact_chain_lengths(paths, start, stop, width):
    p = paths[0]
    full = brute_force_lengths(p)
    expect = full[start:stop]
    n = len(expect)
    fig = slot_occupancy_image(p, start=start, stop=stop, width=width, hash_slot_num=HSN, index_num=INUM)
    assert isinstance(fig, Figure)
    arr = image_array(fig)
    w = width if width is not None else math.ceil(math.sqrt(n))
    assert arr.shape == (math.ceil(n / w), w)
    mask = np.ma.getmaskarray(arr).ravel()
    values = np.ma.getdata(arr).ravel()
    assert not mask[:n].any()
    assert values[:n].tolist() == expect                 # row-major, slot start + row*w + col
    assert mask[n:].all()                                # the tail is masked, not 0
    # 0 = empty is drawn in its own colour, not one of the chain-length colours
    im = fig.axes[0].images[0]
    assert im.norm(0) < 0 and im.norm(1) >= 0
    under = im.cmap.get_under()
    assert all(not np.allclose(under, im.cmap(im.norm(v))) for v in range(1, max(full) + 1))
    assert im.get_interpolation() == "nearest"
    # colour bar and title
    assert fig.axes[1].get_ylabel() == "entries in slot"
    title = fig.axes[0].get_title()
    used = sum(1 for v in expect if v)
    assert p.name in title and f"{start:,}..{start + n - 1:,}" in title
    assert f"{used:,} of {n:,} occupied" in title
    fig.savefig(io.BytesIO(), format="png")


def test_image_downsampled_by_block_max(tmp_path):
    """A grid larger than the figure's pixels is shown as the max of k x k blocks; the data
    function stays exact."""
    hsn, inum = 5000, 3000
    rng = random.Random(3)
    keys = [f"T#K{rng.randint(0, 10 ** 6)}" for _ in range(inum - 1)]
    p = tmp_path / "20240610061524062"
    build_index_file(p, keys, range(len(keys)), [T0] * len(keys), hash_slot_num=hsn, index_num=inum)
    full = brute_force_lengths(p, hsn, inum)
    assert slot_chain_lengths(p, hash_slot_num=hsn, index_num=inum).tolist() == full
    w = math.ceil(math.sqrt(hsn))                         # 71 cells a row
    fig = slot_occupancy_image(p, hash_slot_num=hsn, index_num=inum, figsize=(1.0, 1.0))
    arr = image_array(fig)
    budget = int(1.0 * fig.dpi * 0.6)
    k = math.ceil(w / budget)
    assert k > 1 and f"max of {k}×{k} slots" in fig.axes[0].get_title()
    rows = math.ceil(hsn / w)
    assert arr.shape == (math.ceil(rows / k), math.ceil(w / k))
    for R in range(arr.shape[0]):
        for C in range(arr.shape[1]):
            cells = [full[r * w + c] for r in range(R * k, R * k + k) for c in range(C * k, C * k + k)
                     if c < w and r * w + c < hsn]
            if cells:
                assert not np.ma.is_masked(arr[R, C]) and int(arr[R, C]) == max(cells)
            else:
                assert np.ma.is_masked(arr[R, C])
    # without reduction the full grid is shown
    exact = image_array(slot_occupancy_image(p, hash_slot_num=hsn, index_num=inum,
                                             figsize=(1.0, 1.0), downsample=False))
    assert np.ma.getdata(exact).ravel()[:hsn].tolist() == full


def test_image_bad_arguments(paths):
    with pytest.raises(ValueError):
        slot_occupancy_image(paths[0], start=10, stop=10, hash_slot_num=HSN, index_num=INUM)
    with pytest.raises(ValueError):
        slot_occupancy_image(paths[0], width=0, hash_slot_num=HSN, index_num=INUM)


# ------------------------------------------------------------------------- histogram


def poisson_slots(m: int, n: int, k: int) -> float:
    lam = n / m
    return m * math.exp(-lam) * lam ** k / math.factorial(k)


@pytest.mark.parametrize("log", [False, True])
def test_histogram_bars_and_poisson_line(paths, log):
    for p in paths:
        fig = chain_length_histogram_figure(p, hash_slot_num=HSN, index_num=INUM, log=log)
        ax = fig.axes[0]
        hist = chain_length_histogram(p, hash_slot_num=HSN, index_num=INUM)
        # the expectation, from the file itself
        n = sum(brute_force_lengths(p))
        # bars up to the longest chain a uniform hash gives; the hot keys' slots in one red bar
        cap = uniform_chain_limit(HSN, n)
        assert hist.chain_length.max() > cap                              # the fixture has hot keys
        within, beyond = hist[hist.chain_length <= cap], hist[hist.chain_length > cap]
        bars, tail = ax.containers
        assert [int(round(b.get_x() + b.get_width() / 2)) for b in bars] == within.chain_length.tolist()
        assert [int(b.get_height()) for b in bars] == within.slots.tolist()
        assert [int(b.get_height()) for b in tail] == [beyond.slots.sum()]
        assert ax.get_xlim()[1] < cap + 4 and f">{cap}" in [t.get_text() for t in ax.get_xticklabels()]
        (line,) = ax.get_lines()
        k = line.get_xdata()
        assert list(k) == list(range(len(k))) and len(k) > 1
        assert k[-1] >= n / HSN                                          # covers the bulk
        np.testing.assert_allclose(line.get_ydata(), [poisson_slots(HSN, n, int(i)) for i in k],
                                   rtol=1e-9, atol=1e-300)
        assert line.get_marker() not in (None, "None", "")
        legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
        assert f"λ = {n / HSN:.4g}" in legend
        assert ax.get_yscale() == ("log" if log else "linear")
        fig.savefig(io.BytesIO(), format="png")


def test_histogram_of_open_file_and_empty_file(paths, tmp_path):
    with IndexFile.open(paths[2], HSN, INUM) as f:
        fig = chain_length_histogram_figure(f)
    hist = chain_length_histogram(paths[2], hash_slot_num=HSN, index_num=INUM)
    drawn = [int(b.get_height()) for c in fig.axes[0].containers for b in c]
    cap = uniform_chain_limit(HSN, int((hist.chain_length * hist.slots).sum()))
    assert drawn == hist.slots[hist.chain_length <= cap].tolist() + [hist.slots[hist.chain_length > cap].sum()]
    p = tmp_path / "20240610061524062"
    build_index_file(p, [], [], [], hash_slot_num=HSN, index_num=INUM)
    fig = chain_length_histogram_figure(p, hash_slot_num=HSN, index_num=INUM, log=True)
    (line,) = fig.axes[0].get_lines()
    assert line.get_ydata()[0] == HSN and not line.get_ydata()[1:].any()
    fig.savefig(io.BytesIO(), format="png")


# ------------------------------------------------------------------------- over time


def file_truth(p: Path):
    """Header and the store time (ms) of every entry, by a loop over the entries."""
    with IndexFile.open(p, HSN, INUM) as f:
        h = f.header
        times = [h.begin_timestamp + f.entry(i).time_diff * 1000 for i in range(1, h.index_count)]
    return h, times


@pytest.mark.parametrize("bin_seconds", [None, 1, 60, 7])
def test_entries_over_time_counts_and_spans(folder, paths, bin_seconds):
    fig = entries_over_time(folder, hash_slot_num=HSN, index_num=INUM, bin_seconds=bin_seconds)
    ax, ax_span = fig.axes[0], fig.axes[1]
    steps = ax.patches
    assert len(steps) == len(paths)
    for p, step in zip(paths, steps):
        h, times = file_truth(p)
        values, edges, _ = step.get_data()
        assert int(values.sum()) == h.keys == len(times)
        edges_ms = np.round(np.asarray(edges) * MS_PER_DAY).astype(np.int64)
        widths = np.diff(edges_ms)
        assert (widths == widths[0]).all()
        if bin_seconds is not None:
            assert widths[0] == bin_seconds * 1000
            assert edges_ms[0] % (bin_seconds * 1000) == 0           # aligned to the epoch
        expect = [0] * len(values)
        for t in times:
            i = int((t - edges_ms[0]) // widths[0])
            expect[i] += 1
        assert values.astype(int).tolist() == expect
        assert expect[0] > 0 and expect[-1] > 0                      # first to last non-empty bin
        assert p.name in step.get_label()
    # spans: one bar per file, begin..end from the headers, oldest on top
    rects = ax_span.patches
    assert len(rects) == len(paths)
    for p, r in zip(paths, rects):
        h, _ = file_truth(p)
        assert abs(r.get_x() * MS_PER_DAY - h.begin_timestamp) < 1
        assert abs((r.get_x() + r.get_width()) * MS_PER_DAY - h.end_timestamp) < 1
    labels = [t.get_text().strip() for t in ax_span.texts]
    assert labels == [f"{file_truth(p)[0].keys:,} entries" for p in paths]     # in the order of the names
    assert [t.get_text() for t in ax_span.get_yticklabels()] == [p.name for p in paths]
    fig.savefig(io.BytesIO(), format="png")


def test_entries_over_time_empty_folder_and_bad_bins(tmp_path, folder):
    fig = entries_over_time(tmp_path)
    assert "no index files" in fig.axes[0].texts[0].get_text()
    fig.savefig(io.BytesIO(), format="png")
    with pytest.raises(ValueError):
        entries_over_time(folder, hash_slot_num=HSN, index_num=INUM, bin_seconds=0)
    with pytest.raises(NotADirectoryError):
        entries_over_time(tmp_path / "missing")


# ------------------------------------------------------------------------- bad input


def test_truncated_file_raises_typed_error(paths, tmp_path):
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = bad_dir / paths[0].name
    shutil.copy(paths[0], bad)
    with open(bad, "r+b") as fh:
        fh.truncate(40 + 4 * HSN + 20 * 500 + 7)          # ends inside entry 500
    calls = [
        lambda: slot_chain_lengths(bad, hash_slot_num=HSN, index_num=INUM),
        lambda: slot_occupancy_image(bad, hash_slot_num=HSN, index_num=INUM),
        lambda: chain_length_histogram_figure(bad, hash_slot_num=HSN, index_num=INUM),
        lambda: entries_over_time(bad_dir, hash_slot_num=HSN, index_num=INUM),
    ]
    for call in calls:
        with pytest.raises(TruncatedFileError) as e:
            call()
        assert e.value.path == str(bad)
    short = bad_dir / "header_only"
    short.write_bytes(b"\0" * 12)
    with pytest.raises(TruncatedFileError):
        slot_chain_lengths(short)
    # a small file without its geometry: the typed geometry error, not a crash
    with pytest.raises(GeometryError):
        slot_occupancy_image(paths[0])
    assert issubclass(GeometryError, RmqlabError)


def test_a_hot_key_is_drawn_beyond_the_scale_and_cut_from_the_histogram(tmp_path):
    """One key put 3,000 times among 20,000 spread ones: the colour scale stops at the longest
    chain a uniform hash gives, the hot slot takes the 'over' colour, and the histogram's
    x range keeps the Poisson part readable while saying what it leaves out."""
    rng = random.Random(3)
    keys = [f"T#k{rng.getrandbits(40)}" for _ in range(20_000)] + ["T#HOT"] * 3_000
    rng.shuffle(keys)
    p = tmp_path / "20240610061320000"
    build_index_file(p, keys, list(range(len(keys))), [0] * len(keys), hash_slot_num=4093, index_num=30_000)
    lengths = slot_chain_lengths(p, hash_slot_num=4093, index_num=30_000)
    fig = slot_occupancy_image(p, hash_slot_num=4093, index_num=30_000, downsample=False)
    im = fig.axes[0].images[0]
    cap = int(im.norm.vmax - 0.5)
    assert cap == uniform_chain_limit(4093, len(keys)) < lengths.max()
    # every slot the 20,000 random keys fill is inside the scale; only the hot key's is beyond
    assert (lengths > cap).sum() == 1
    hot = int(np.argmax(lengths))
    assert lengths[hot] > 3_000
    assert im.norm(lengths[hot]) > 1                      # beyond the scale: the 'over' colour
    assert "red = " in fig.axes[0].get_title()
    h = chain_length_histogram_figure(p, hash_slot_num=4093, index_num=30_000)
    assert h.axes[0].get_xlim()[1] < cap + 4
    assert any(f"{lengths.max():,}" in t.get_text() for t in h.axes[0].texts)    # the tail, named


# -- in a notebook kernel -------------------------------------------------------------------


def _run_cells(*sources):
    nbformat = require_module("nbformat")
    nbclient = require_module("nbclient")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    return [[mime for o in c.outputs for mime in o.get("data", {})] for c in nb.cells]


def test_a_figure_ending_a_cell_shows_as_a_picture_without_any_magic():
    # Figure() bypasses pyplot, so without rmqlab.viz's formatter the cell would show only
    # "<Figure size ...>" as text.
    shown = _run_cells("from rmqlab.viz import load_factor_figure\nload_factor_figure(1000, 4000)")
    assert "image/png" in shown[0]


def test_a_figure_format_the_user_chose_is_kept():
    shown = _run_cells("%matplotlib inline\n%config InlineBackend.figure_formats = ['svg']",
                       "from rmqlab.viz import load_factor_figure\nload_factor_figure(1000, 4000)")
    assert "image/svg+xml" in shown[1] and "image/png" not in shown[1]


# -- per-file statistics -------------------------------------------------------------------


def _dash_heights_and_spans(ax) -> tuple[list[float], list[tuple[float, float]]]:
    (dashes,) = ax.collections
    segments = dashes.get_segments()
    assert all(s[0][1] == s[1][1] for s in segments)                # horizontal
    return [float(s[0][1]) for s in segments], [(float(s[0][0]), float(s[1][0])) for s in segments]


def test_file_stats_figure_draws_each_files_numbers_oldest_first(folder, paths):
    from rmqlab.analysis.indexstats import directory_stats
    from rmqlab.viz import file_stats_figure

    stats = directory_stats(folder, hash_slot_num=HSN, index_num=INUM)
    shuffled = stats.sample(frac=1.0, random_state=1)
    assert shuffled["name"].tolist() != stats["name"].tolist()
    fig = file_stats_figure(shuffled)
    occupancy_ax, chain_ax = fig.axes[:2]

    # independent truth: chain lengths counted entry by entry, the expectation by the formula
    truth = []
    for p in paths:
        lengths = brute_force_lengths(p)
        n, used = sum(lengths), sum(1 for c in lengths if c)
        truth.append({"name": p.name, "occupancy": used / HSN,
                      "expected": 1 - (1 - 1 / HSN) ** n, "mean": n / used, "max": max(lengths)})
    bars = occupancy_ax.patches
    assert len(bars) == len(paths)
    heights = [b.get_height() for b in bars]
    assert heights == pytest.approx([t["occupancy"] for t in truth], abs=1e-12)
    assert [b.get_height() for b in bars] == stats["occupancy"].tolist()
    heights, spans = _dash_heights_and_spans(occupancy_ax)
    assert heights == pytest.approx([t["expected"] for t in truth], rel=1e-9)
    assert heights == pytest.approx(stats["expected_occupancy"].tolist(), rel=1e-15)
    for b, (x0, x1) in zip(bars, spans):                             # each dash across its bar
        assert (x0, x1) == pytest.approx((b.get_x(), b.get_x() + b.get_width()))
    printed = {kind: [t.get_text() for t in occupancy_ax.texts if t.get_gid() == kind]
               for kind in ("observed", "expected")}
    assert printed["observed"] == [f"{t['occupancy']:.1%}" for t in truth]
    assert printed["expected"] == [f"{t['expected']:.1%}" for t in truth]
    # zoomed on the values (plus room for the legend), not 0..100 %
    low, high = occupancy_ax.get_ylim()
    values = [t["occupancy"] for t in truth] + [t["expected"] for t in truth]
    spread = max(max(values) - min(values), 0.005)
    assert low <= min(values) and max(values) < high and high - low <= 4 * spread

    means = [b.get_height() for b in chain_ax.patches]
    assert means == pytest.approx([t["mean"] for t in truth], rel=1e-12)
    (longest,) = chain_ax.lines
    assert longest.get_ydata().tolist() == [t["max"] for t in truth]
    assert chain_ax.get_yscale() == "log"
    assert chain_ax.get_ylim()[1] > max(t["max"] for t in truth)

    for ax in (occupancy_ax, chain_ax):
        assert [t.get_text() for t in ax.get_xticklabels()] == [p.name for p in paths]
        legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
        assert ("uniform hash" in legend) if ax is occupancy_ax else ("longest" in legend)
    assert f"longest chain {max(t['max'] for t in truth)}" in fig.get_suptitle()
    fig.savefig(io.BytesIO(), format="png")


def test_file_stats_figure_legends_stay_clear_of_the_data(folder):
    from rmqlab.analysis.indexstats import directory_stats
    from rmqlab.viz import file_stats_figure

    fig = file_stats_figure(directory_stats(folder, hash_slot_num=HSN, index_num=INUM))
    fig.draw_without_rendering()                                     # runs the constrained layout
    for ax in fig.axes[:2]:
        legend = ax.get_legend().get_window_extent()
        to_data = ax.transData.inverted()
        bottom = to_data.transform((legend.x0, legend.y0))[1]
        tops = [b.get_height() for b in ax.patches]
        tops += [y for line in ax.lines for y in line.get_ydata()]
        tops += [s[0][1] for c in ax.collections for s in c.get_segments()]
        assert bottom > max(tops)


def test_file_stats_figure_without_a_column_names_it(folder):
    from rmqlab.analysis.indexstats import directory_stats
    from rmqlab.viz import file_stats_figure
    from rmqlab.viz.figures import FILE_STATS_FIGURE_COLUMNS

    stats = directory_stats(folder, hash_slot_num=HSN, index_num=INUM)
    for column in FILE_STATS_FIGURE_COLUMNS:
        with pytest.raises(ValueError, match=f"no column '{column}'"):
            file_stats_figure(stats.drop(columns=column))
    with pytest.raises(ValueError, match="'occupancy', 'max_chain_length'"):
        file_stats_figure(stats.drop(columns=["max_chain_length", "occupancy"]))
    with pytest.raises(ValueError, match="DataFrame"):
        file_stats_figure(stats.to_dict("list"))


def test_file_stats_figure_empty_folder_empty_file_and_many_files(tmp_path, folder):
    import pandas as pd

    from rmqlab.analysis.indexstats import directory_stats
    from rmqlab.viz import file_stats_figure

    fig = file_stats_figure(directory_stats(tmp_path))
    assert "no index files" in fig.axes[0].texts[0].get_text()
    fig.savefig(io.BytesIO(), format="png")

    # a file created and never written: no mean, no longest chain, no crash
    empty_dir = tmp_path / "one-empty"
    empty_dir.mkdir()
    with IndexFile.create(empty_dir / "20240610061320005", HSN, INUM):
        pass
    stats = directory_stats(empty_dir, hash_slot_num=HSN, index_num=INUM)
    fig = file_stats_figure(stats)
    assert [b.get_height() for b in fig.axes[0].patches] == [0.0]
    assert np.isnan(fig.axes[1].patches[0].get_height())
    assert np.isnan(fig.axes[1].lines[0].get_ydata()).all()
    fig.savefig(io.BytesIO(), format="png")

    # past 30 files the axes count the files and the bars carry no percentages
    one = directory_stats(folder, hash_slot_num=HSN, index_num=INUM)
    many = pd.concat([one] * 14, ignore_index=True)
    many["name"] = [f"{20240610061320005 + 1000 * i}" for i in range(len(many))]
    fig = file_stats_figure(many)
    assert len(fig.axes[0].patches) == 42 and not fig.axes[0].texts
    assert [b.get_height() for b in fig.axes[0].patches] == many["occupancy"].tolist()
    assert "0 = oldest" in fig.axes[0].get_xlabel()
    title = fig.get_suptitle()
    assert many["name"].iloc[0] in title and many["name"].iloc[-1] in title


def test_entries_over_time_names_each_file_once(folder, paths):
    fig = entries_over_time(folder, hash_slot_num=HSN, index_num=INUM)
    fig.draw_without_rendering()                                     # runs the constrained layout
    ax, span = fig.axes
    assert ax.get_legend() is None                                   # the lower panel is the colour key
    found = {id(t): t for t in fig.findobj(lambda a: hasattr(a, "get_text")) if t.get_visible()}
    texts = [t.get_text() for t in found.values()]
    for p in paths:
        assert sum(p.name in t for t in texts) == 1, p.name
    assert [t.get_text() for t in span.get_yticklabels()] == [p.name for p in paths]
    # the step lines and the bars share colours: file i is C{i} in both panels
    for i, stairs in enumerate(ax.patches):
        assert stairs.get_edgecolor() == pytest.approx(span.patches[i].get_facecolor())
    # the two panels keep one time axis: same left and right edges
    axes_box, span_box = ax.get_window_extent(), span.get_window_extent()
    assert (span_box.x0, span_box.x1) == pytest.approx((axes_box.x0, axes_box.x1), abs=0.5)


def test_entries_over_time_marks_the_clock_steps():
    """The sample's three clock steps, found by clock_steps_back in the CommitLog, are dashed
    lines at the times the clock left, labelled with the step."""
    import matplotlib.dates as mdates

    from rmqlab.analysis.clocksteps import clock_steps_back
    from rmqlab.lab.sample import SAMPLE_STORE_OPTIONS, sample_store

    store = sample_store()
    steps = clock_steps_back(store.messages())
    fig = entries_over_time(store.index_dir, clock_steps=steps, hash_slot_num=SAMPLE_STORE_OPTIONS["hash_slot_num"],
                            index_num=SAMPLE_STORE_OPTIONS["index_num"])
    ax, span = fig.axes
    for panel in (ax, span):
        dashed = [line.get_xdata()[0] for line in panel.get_lines() if line.get_linestyle() == "--"]
        want = mdates.date2num(steps["before"].to_numpy(np.int64).astype("datetime64[ms]"))
        assert dashed == pytest.approx(list(want))
    labels = [t.get_text() for t in ax.texts if str(t.get_gid()).startswith("clock-step:")]
    assert labels == [f"clock {s / 1000:+.1f} s" for s in steps["step_ms"]] == ["clock -1.5 s"] * 3


def test_stored_time_lag_figure_counts_every_entry_in_its_bin():
    from rmqlab.viz import stored_time_lag_figure

    lag = [0, 49, 50, 999, 1000, -1, 420, 420]
    fig = stored_time_lag_figure(lag, bin_ms=50)
    ax = fig.axes[0]
    bins = {int(p.get_x()): int(p.get_height()) for p in ax.patches if p.get_gid() == "lag-bin"}
    want = {}
    for v in lag:                                      # floor to the bin, by hand
        edge = (v // 50) * 50
        want[edge] = want.get(edge, 0) + 1
    assert {k: v for k, v in bins.items() if v} == want
    assert "8 entries" in ax.get_title() and "2 outside 0–999 ms" in ax.get_title()      # 1000 and -1
    empty = stored_time_lag_figure([])
    assert "no entries" in empty.axes[0].texts[0].get_text()
