"""Load-factor theory (rmqlab.analysis.indexstats.chain_length_theory / chain_length_summary) and the
capacity figures of rmqlab.viz.capacity.

Truths used for the theory: exhaustive enumeration of every hash assignment for tiny files
(exact expectations), a seeded simulation of uniform hashes (statistical tolerances derived in
each test), and real index files written by build_index_file with Java String.hashCode, read
back by rmqlab.analysis.indexstats. The figures are checked against the theory functions' values.
"""
from __future__ import annotations

import io
import itertools
import math
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st

from rmqlab.analysis.indexstats import (  # noqa: E402
    chain_length_histogram,
    chain_length_summary,
    chain_length_theory,
    file_stats,
)
from rmqlab.capacity.model import hours_to_fill  # noqa: E402
from rmqlab.formats.indexfile import build_index_file  # noqa: E402
from rmqlab.viz.capacity import (  # noqa: E402
    disk_fan_figure,
    disk_usage_figure,
    index_fill_time_figure,
    load_factor_comparison_figure,
    load_factor_figure,
    percentile_ranges_figure,
)


def texts(fig) -> str:
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
        out.append(ax.get_title())
        legend = ax.get_legend()
        if legend is not None:
            out += [t.get_text() for t in legend.get_texts()]
    if fig._suptitle is not None:
        out.append(fig._suptitle.get_text())
    return "\n".join(out)


def png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


# ------------------------------------------------------------------------------ theory


def test_default_configuration_numbers():
    """The newcomer's question: 5M slots, 20M entries, full file."""
    s = chain_length_summary(5_000_000, 19_999_999)
    assert s["load_factor"] == pytest.approx(4.0, abs=1e-6)
    assert s["empty_share"] == pytest.approx(math.exp(-4), rel=1e-6)         # 1.83 %
    assert round(100 * s["empty_share"], 2) == 1.83
    assert s["mean_occupied_chain"] == pytest.approx(4 / (1 - math.exp(-4)), rel=1e-6)
    assert s["entries_read_miss"] == pytest.approx(4.0, abs=1e-6)
    assert s["entries_read_hit"] == pytest.approx(3.0, abs=1e-6)
    assert s["entries_read_hit_walk"] == pytest.approx(5.0, abs=1e-6)
    t = chain_length_theory(5_000_000, 19_999_999)
    lam = 19_999_999 / 5_000_000
    poisson = [5_000_000 * math.exp(-lam) * lam ** k / math.factorial(k) for k in range(len(t))]
    # the Poisson limit: the binomial and Poisson pmfs differ in relative terms by O(k²/n + λ/m),
    # below 1e-4 for every k listed here (k <= 28, n = 20M, m = 5M)
    np.testing.assert_allclose(t["slots"], poisson, rtol=1e-4)
    assert t["slots"].sum() == pytest.approx(5_000_000, rel=1e-9)             # nothing lost
    assert t.attrs == s


def enumerate_exact(m: int, n: int):
    """Exact expectations over all m**n equally likely hash assignments (key i put i-th)."""
    slots = np.zeros(n + 1)
    miss = hit = walk = 0.0
    for assign in itertools.product(range(m), repeat=n):
        counts = np.bincount(assign, minlength=m)
        slots += np.bincount(counts, minlength=n + 1)
        miss += counts.mean()
        if n:
            # reaching key i reads i's newer keys in its slot (put after it), then i
            hit += np.mean([1 + sum(1 for j in range(i + 1, n) if assign[j] == assign[i])
                            for i in range(n)])
            walk += np.mean([counts[a] for a in assign])
    total = m ** n
    return slots / total, miss / total, hit / total, walk / total


@pytest.mark.parametrize("m, n", [(1, 3), (2, 0), (2, 1), (3, 4), (4, 5), (5, 3), (2, 7)])
def test_theory_equals_exhaustive_enumeration(m, n):
    slots, miss, hit, walk = enumerate_exact(m, n)
    t = chain_length_theory(m, n, max_length=n)
    np.testing.assert_allclose(t["slots"], slots, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t["share"], slots / m, rtol=1e-12, atol=1e-12)
    s = chain_length_summary(m, n)
    assert s["empty_share"] == pytest.approx(slots[0] / m, abs=1e-12)
    assert s["entries_read_miss"] == pytest.approx(miss, abs=1e-12)
    if n:
        occupied = (slots[1:] * np.arange(1, n + 1)).sum() / slots[1:].sum()
        assert s["mean_occupied_chain"] == pytest.approx(occupied, rel=1e-12)
        assert s["entries_read_hit"] == pytest.approx(hit, rel=1e-12)
        assert s["entries_read_hit_walk"] == pytest.approx(walk, rel=1e-12)
    else:
        assert math.isnan(s["entries_read_hit"]) and math.isnan(s["mean_occupied_chain"])


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 10**7), fill=st.floats(0, 64), extra=st.integers(0, 3))
def test_theory_is_a_distribution(m, fill, extra):
    n = int(fill * m) + extra          # load factors up to 64 keys a slot (the default runs at 4)
    t = chain_length_theory(m, n)
    assert t["chain_length"].tolist() == list(range(len(t)))
    assert (t["slots"] >= 0).all()
    # the default max_length leaves (almost) nothing out: slots and entries are accounted for
    assert t["slots"].sum() == pytest.approx(m, rel=1e-6)
    assert (t["slots"] * t["chain_length"]).sum() == pytest.approx(n, rel=1e-6, abs=1e-6)
    assert t["slots"].iloc[0] == pytest.approx(t.attrs["empty_slots"], rel=1e-9, abs=1e-12)


def test_theory_matches_simulation():
    """Uniform hashes drawn with a seeded rng: m = 1000 slots, n = 4000 keys, R = 400 files.

    Tolerance for the mean count of slots with k entries over R files: the count is a sum of
    m weakly (negatively, O(1/m)) correlated indicators, so its variance is at most about its
    mean E_k; the mean of R files has standard error sqrt(E_k / R). We allow 5 standard errors
    plus 0.01 slot (the binomial-vs-simulation difference is exact zero in expectation). The
    hit mean is checked against 5 empirical standard errors of the per-file means (CLT); the
    miss mean over all slots is n/m in every file, so it is checked exactly."""
    m, n, R = 1000, 4000, 400
    rng = np.random.default_rng(20240610)
    t = chain_length_theory(m, n)
    K = len(t)
    sums = np.zeros(K)
    hit_means, walk_means = [], []
    for _ in range(R):
        slots = rng.integers(0, m, n)
        counts = np.bincount(slots, minlength=m)
        hist = np.bincount(counts, minlength=K)
        sums += hist[:K]
        assert counts.mean() == n / m                                      # miss: exact
        # position of key i from its slot's head: 1 + keys put after it in the same slot
        order = np.lexsort((-np.arange(n), slots))                        # slot, newest first
        rank = np.empty(n, np.int64)
        starts = np.r_[0, np.cumsum(counts)[:-1]]
        rank[order] = np.arange(n) - np.repeat(starts, counts)
        hit_means.append(1 + rank.mean())
        walk_means.append(counts[slots].mean())
    mean = sums / R
    expected = t["slots"].to_numpy()
    tolerance = 5 * np.sqrt(expected / R) + 0.01
    assert np.all(np.abs(mean - expected) <= tolerance), np.c_[mean, expected, tolerance]
    s = t.attrs
    for values, want in ((hit_means, s["entries_read_hit"]), (walk_means, s["entries_read_hit_walk"])):
        se = np.std(values, ddof=1) / math.sqrt(R)
        assert abs(np.mean(values) - want) <= 5 * se + 1e-9


def test_theory_matches_real_java_hashes(tmp_path):
    """A real index file: 8191 distinct random keys (String.hashCode) in 4096 slots (λ ≈ 2).

    The number of empty slots has variance at most its mean (about 554), so 5 sqrt(E0) is a
    generous bound; the same for each chain length with at least 20 expected slots."""
    rng = np.random.default_rng(7)
    m, inum = 4096, 8192
    n = inum - 1
    keys = [f"Orders#{x:016x}" for x in rng.integers(0, 2**63, n)]
    assert len(set(keys)) == n
    path = tmp_path / "20240610061320000"
    build_index_file(path, keys, np.arange(n), np.full(n, 1_718_000_000_000),
                     hash_slot_num=m, index_num=inum)
    stats = file_stats(path, hash_slot_num=m, index_num=inum)
    summary = chain_length_summary(m, stats["entries"])
    e0 = summary["empty_slots"]
    assert abs((m - stats["slots_used"]) - e0) <= 5 * math.sqrt(e0)
    assert stats["expected_occupancy"] == pytest.approx(1 - summary["empty_share"], rel=1e-12)
    hist = chain_length_histogram(path, hash_slot_num=m, index_num=inum)
    observed = dict(zip(hist["chain_length"], hist["slots"]))
    theory = chain_length_theory(m, n)
    checked = 0
    for k, e in zip(theory["chain_length"], theory["slots"]):
        if e >= 20:
            assert abs(observed.get(k, 0) - e) <= 5 * math.sqrt(e), (k, observed.get(k, 0), e)
            checked += 1
    assert checked >= 5
    assert stats["mean_chain_length"] == pytest.approx(summary["mean_occupied_chain"], rel=0.03)


@pytest.mark.parametrize("args, name", [((0, 10), "hash_slot_num"), ((-5, 10), "hash_slot_num"),
                                        ((10, -1), "keys")])
def test_theory_bad_arguments(args, name):
    with pytest.raises(ValueError, match=name):
        chain_length_theory(*args)
    with pytest.raises(ValueError, match=name):
        chain_length_summary(*args)


def test_theory_bad_types_and_max_length():
    with pytest.raises(TypeError, match="hash_slot_num"):
        chain_length_summary(2.5, 10)
    with pytest.raises(ValueError, match="max_length"):
        chain_length_theory(10, 10, max_length=-1)
    assert len(chain_length_theory(10, 10, max_length=3)) == 4


# ------------------------------------------------------------------------------ figures


@pytest.mark.parametrize("m, inum", [(5_000_000, 20_000_000), (1024, 8192), (7, 2)])
def test_load_factor_figure_numbers(m, inum):
    fig = load_factor_figure(m, inum)
    t = chain_length_theory(m, inum - 1)
    s = t.attrs
    ax_hist, ax_read = fig.axes
    heights = [b.get_height() for b in ax_hist.containers[0]]
    xs = [b.get_x() + b.get_width() / 2 for b in ax_hist.containers[0]]
    share = dict(zip(t["chain_length"], 100 * t["share"]))
    assert xs[0] == 0
    for x, h in zip(xs, heights):
        assert h == pytest.approx(share[round(x)], rel=1e-12)
    assert sum(heights) == pytest.approx(100, abs=0.01)
    txt = texts(fig)
    assert f"load factor λ = {s['load_factor']:.3f}" in txt
    assert f"mean occupied chain {s['mean_occupied_chain']:.3f}" in txt
    assert f"{100 * s['empty_share']:.2f} %\nempty" in txt
    for key in ("entries_read_miss", "entries_read_hit", "entries_read_hit_walk"):
        assert f"{s[key]:.3f}" in txt
    # the curves: miss n/m, hit 1 + (n-1)/2m, walk 1 + (n-1)/m; the last point is the full file
    miss, hit, walk = ax_read.lines[:3]
    x = miss.get_xdata()
    assert x[-1] == inum - 1
    np.testing.assert_allclose(miss.get_ydata(), x / m)
    np.testing.assert_allclose(hit.get_ydata()[x >= 1], 1 + (x[x >= 1] - 1) / (2 * m))
    np.testing.assert_allclose(walk.get_ydata()[x >= 1], 1 + (x[x >= 1] - 1) / m)
    assert hit.get_ydata()[-1] == pytest.approx(s["entries_read_hit"])
    png(fig)


def test_default_figure_answers_the_question():
    txt = texts(load_factor_figure())
    assert "load factor λ = 4.000" in txt and "mean occupied chain 4.075" in txt
    assert "1.83 %\nempty" in txt and "19,999,999 keys" in txt


def test_comparison_figure_numbers():
    configs = {"default": (5_000_000, 20_000_000), "small slots": (1_000_000, 20_000_000),
               "double slots": (10_000_000, 20_000_000), "tiny": (1024, 8192)}
    fig = load_factor_comparison_figure(configs)
    empty_ax, chain_ax, read_ax = fig.axes
    summaries = [chain_length_summary(m, i - 1) for m, i in configs.values()]
    np.testing.assert_allclose([b.get_height() for b in empty_ax.containers[0]],
                               [100 * s["empty_share"] for s in summaries])
    np.testing.assert_allclose([b.get_height() for b in chain_ax.containers[0]],
                               [s["mean_occupied_chain"] for s in summaries])
    np.testing.assert_allclose([b.get_height() for b in read_ax.containers[0]],
                               [s["entries_read_miss"] for s in summaries])
    # a stored key's bar is what the broker's walk reads: the whole chain, not the key's depth
    np.testing.assert_allclose([b.get_height() for b in read_ax.containers[1]],
                               [s["entries_read_hit_walk"] for s in summaries])
    txt = texts(fig)
    assert "uniform hash" in fig._suptitle.get_text()
    for (label, (m, inum)), s in zip(configs.items(), summaries):
        assert f"{label}: {m:,} slots × {inum:,} entries, λ = {s['load_factor']:.2f}" in txt
        assert f"{s['mean_occupied_chain']:.3f}" in txt
    assert [t.get_text() for t in empty_ax.get_xticklabels()] == list(configs)
    png(fig)


def test_comparison_figure_draws_the_numbers_it_is_given():
    configs = {"a": (5_000_000, 20_000_000), "b": (2_500_000, 20_000_000)}
    measured = {"a": {"empty_share": 0.0235, "mean_occupied_chain": 4.096, "entries_read_hit": 5.06,
                      "entries_read_miss": 4.0},
                "b": {"empty_share": 0.001, "mean_occupied_chain": 8.008, "entries_read_hit": 9.138,
                      "entries_read_miss": 8.0}}
    fig = load_factor_comparison_figure(configs, measured=measured)
    empty_ax, chain_ax, read_ax = fig.axes
    assert [b.get_height() for b in empty_ax.containers[0]] == pytest.approx([2.35, 0.1])
    assert [b.get_height() for b in chain_ax.containers[0]] == pytest.approx([4.096, 8.008])
    assert [b.get_height() for b in read_ax.containers[0]] == pytest.approx([4.0, 8.0])
    assert [b.get_height() for b in read_ax.containers[1]] == pytest.approx([5.06, 9.138])
    labels = [t.get_text() for t in read_ax.texts]
    assert "5.060" in labels and "9.138" in labels and "3.000" not in labels
    assert "real hash of sampled keys" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="entries_read_miss"):
        load_factor_comparison_figure(configs, measured={k: {"empty_share": 0.1, "mean_occupied_chain": 4,
                                                             "entries_read_hit": 5} for k in configs})


@pytest.mark.parametrize("configs, match", [
    ({}, "configs"), ({"x": (0, 10)}, "hash_slot_num"), ({"x": (10, 1)}, "index_num"),
    ({"x": 5}, "configs"), ({"x": (10, 2**31)}, "index_num"),
])
def test_comparison_bad_configs(configs, match):
    with pytest.raises(ValueError, match=match):
        load_factor_comparison_figure(configs)


@pytest.mark.parametrize("args, match", [((0, 10), "hash_slot_num"), ((-1, 10), "hash_slot_num"),
                                         ((10, 1), "index_num"), ((10, 0), "index_num")])
def test_load_factor_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        load_factor_figure(*args)


def test_disk_usage_figure():
    days = np.arange(0, 31)
    series = {"CommitLog": days * 50 * 2**30, "ConsumeQueue": days * 2**29,
              "index": np.minimum(days, 7) * 420_000_040.0 * 24}
    disk = 2 * 2**40
    fig = disk_usage_figure(days, series, disk_bytes=disk,
                            thresholds={"diskMaxUsedSpaceRatio": 0.75, "forced clean": 0.85})
    ax = fig.axes[0]
    assert ax.get_ylabel() == "bytes on disk (TiB)" and ax.get_xlabel() == "days"
    # stacked: the top of the last band is the total, in TiB
    band = ax.collections[-1].get_paths()[0].vertices
    total = sum(series.values()) / 2**40
    upper = [band[band[:, 0] == d, 1].max() for d in days]
    np.testing.assert_allclose(upper, total)
    hlines = [line.get_ydata()[0] for line in ax.lines]
    np.testing.assert_allclose(hlines, [2.0, 1.5, 1.7])
    txt = texts(fig)
    assert "disk: 2 TiB" in txt and "diskMaxUsedSpaceRatio: 75 % of disk" in txt
    # the y axis ends just above the disk line: nothing drawn can pass it unseen
    assert 2.0 < ax.get_ylim()[1] <= 2.0 * 1.05
    marked = disk_usage_figure(days, series, disk_bytes=disk, marks={"day 20: 75 %": 20.0})
    assert [line.get_xdata()[0] for line in marked.axes[0].lines if line.get_linestyle() == ":"] == [20.0]
    assert "day 20: 75 %" in texts(marked)
    lines = disk_usage_figure(days, {"a": days * 1000.0}, stacked=False)
    assert lines.axes[0].get_ylabel() == "bytes on disk (KiB)"
    np.testing.assert_allclose(lines.axes[0].lines[0].get_ydata(), days * 1000 / 1024)
    png(fig)


@pytest.mark.parametrize("kwargs, match", [
    (dict(series={}), "series"), (dict(series={"a": [1, 2]}), "series"),
    (dict(thresholds={"x": 0.5}), "disk_bytes"), (dict(disk_bytes=0), "disk_bytes"),
    (dict(disk_bytes=10, thresholds={"x": 1.5}), "thresholds"),
    (dict(series={"a": [1, -2, 3]}), "negative"),
    (dict(marks={"x": float("inf")}), "marks"),
])
def test_disk_usage_bad_arguments(kwargs, match):
    args = dict(series={"a": [1.0, 2.0, 3.0]})
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        disk_usage_figure([0, 1, 2], **args)


def test_disk_fan_figure_draws_each_band_between_its_percentiles():
    days = np.linspace(0, 30, 31)
    fan = {5: days * 1e9, 25: days * 2e9, 50: days * 3e9, 75: days * 4e9, 95: days * 5e9}
    fig = disk_fan_figure(days, fan, likely=days * 2.5e9, disk_bytes=200e9,
                          thresholds={"diskMaxUsedSpaceRatio": 0.75}, marks={"day 12: half of draws": 12.0})
    ax = fig.axes[0]
    size = 2**30                              # 200e9 bytes: GiB
    assert ax.get_ylabel() == "bytes on disk (GiB)"
    outer, inner = ax.collections[:2]
    for band, (lo, hi) in ((outer, (5, 95)), (inner, (25, 75))):
        v = band.get_paths()[0].vertices
        np.testing.assert_allclose([v[v[:, 0] == d, 1].max() for d in days], fan[hi] / size)
        np.testing.assert_allclose([v[v[:, 0] == d, 1].min() for d in days], fan[lo] / size)
    median, likely = ax.lines[:2]
    np.testing.assert_allclose(median.get_ydata(), fan[50] / size)
    np.testing.assert_allclose(likely.get_ydata(), days * 2.5e9 / size)
    txt = texts(fig)
    assert "p5-p95" in txt and "p25-p75" in txt and "day 12: half of draws" in txt
    with pytest.raises(ValueError, match="percentiles"):
        disk_fan_figure(days, {5: days, 95: days})
    with pytest.raises(ValueError, match="likely"):
        disk_fan_figure(days, fan, likely=[1.0])
    png(fig)


def test_percentile_ranges_figure_puts_each_output_on_its_likely_scale():
    rows = [("files a day", 8.0, 9.0, 12.0, 10.0, "8 – 12"), ("disk", 1e9, 2e9, 8e9, 2e9, "1 – 8 GB")]
    fig = percentile_ranges_figure(rows)
    ax = fig.axes[0]
    bars = [line for line in ax.lines if line.get_linewidth() == 7]
    ticks = [line for line in ax.lines if line.get_marker() == "|"]
    assert [list(b.get_xdata()) for b in bars] == [pytest.approx([0.8, 1.2]), pytest.approx([0.5, 4.0])]
    assert [t.get_xdata()[0] for t in ticks] == pytest.approx([0.9, 1.0])
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] < 0.5 and ax.get_xlim()[1] > 4.0
    assert [t.get_text() for t in ax.get_yticklabels()] == ["files a day", "disk"]
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()] == ["8 – 12", "1 – 8 GB"]
    for bad, match in (([], "rows"), ([("x", 1, 2, 3, 0, "")], "positive"), ([("x", 3, 2, 1, 2, "")], "p5 <= p50")):
        with pytest.raises(ValueError, match=match):
            percentile_ranges_figure(bad)
    png(fig)


def test_index_fill_time():
    assert hours_to_fill(1000) == pytest.approx(19_999_999 / 1000 / 3600)
    np.testing.assert_allclose(hours_to_fill([1, 10], index_num=3601), [1.0, 0.1])
    fig = index_fill_time_figure([100, 1000, 20000])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    curve, points = ax.lines[:2]
    np.testing.assert_allclose(curve.get_ydata(), 19_999_999 / curve.get_xdata() / 3600)
    np.testing.assert_allclose(points.get_xdata(), [100, 1000, 20000])
    np.testing.assert_allclose(points.get_ydata(), hours_to_fill([100, 1000, 20000]))
    txt = texts(fig)
    assert "1,000 keys/s: 5.6 h" in txt and "100 keys/s: 2.3 days" in txt
    assert "keys per second" in ax.get_xlabel() and "hours" in ax.get_ylabel()
    one = index_fill_time_figure(500, index_num=1_000_001)
    x = one.axes[0].lines[0].get_xdata()
    assert x[0] == pytest.approx(5) and x[-1] == pytest.approx(50_000)
    png(fig)


@pytest.mark.parametrize("rate, kwargs, match", [
    (0, {}, "keys_per_second"), ([10, -1], {}, "keys_per_second"), ([], {}, "keys_per_second"),
    (10, dict(index_num=1), "index_num"),
])
def test_index_fill_bad_arguments(rate, kwargs, match):
    with pytest.raises(ValueError, match=match):
        index_fill_time_figure(rate, **kwargs)


def test_figures_deterministic():
    assert png(load_factor_figure(1024, 8192)) == png(load_factor_figure(1024, 8192))


# ------------------------------------------------------------------------------ sampled chains


def test_sampled_chain_lengths_figure_draws_a_real_files_histogram(tmp_path):
    from rmqlab.analysis.indexstats import poisson_expected_slots
    from rmqlab.viz.capacity import sampled_chain_lengths_figure

    # 3,000 distinct keys and one key put 400 times: its slot's chain is far beyond the rest
    keys = [f"T#ORDER_{i}" for i in range(3000)] + ["T#HOT"] * 400
    n, m = len(keys), 1024
    path = tmp_path / "20240610061524062"
    build_index_file(path, keys, np.arange(n), np.full(n, 1_718_000_000_000), hash_slot_num=m, index_num=n + 1)
    hist = chain_length_histogram(path, hash_slot_num=m, index_num=n + 1)
    fig = sampled_chain_lengths_figure(hist)
    ax = fig.axes[0]
    bars = ax.containers[0]
    assert [round(b.get_x() + b.get_width() / 2, 6) for b in bars] == hist["chain_length"].tolist()
    assert np.allclose([b.get_height() for b in bars], 100 * hist["slots"] / m)
    line = ax.get_lines()[0]
    k = line.get_xdata()
    assert np.allclose(line.get_ydata(), 100 * poisson_expected_slots(m, n, int(k.max()))[k] / m)
    legend = texts(fig)
    assert f"λ = {n / m:.3f}" in legend
    assert f"longest chain {int(hist['chain_length'].max()):,}" in legend
    assert ax.get_xscale() == "symlog" and ax.get_yscale() == "log"
    assert ax.get_xlim()[1] > hist["chain_length"].max()
    fig.savefig(io.BytesIO(), format="png")


@pytest.mark.parametrize("hist", [{"chain_length": [1]}, {"chain_length": [], "slots": []},
                                  {"chain_length": [0, 1], "slots": [0, 0]},
                                  {"chain_length": [0, -1], "slots": [3, 1]}])
def test_sampled_chain_lengths_bad_histograms(hist):
    import pandas as pd

    from rmqlab.viz.capacity import sampled_chain_lengths_figure

    with pytest.raises(ValueError, match="histogram"):
        sampled_chain_lengths_figure(pd.DataFrame(hist) if len(hist) == 2 else hist)


def test_index_fill_time_labels_ticks_plainly_within_one_decade():
    fig = index_fill_time_figure([1800, 2300, 2900, 4700])     # fill times within one decade
    ax = fig.axes[0]
    fig.savefig(io.BytesIO(), format="png")
    labels = [t.get_text() for t in ax.yaxis.get_minorticklabels() + ax.yaxis.get_majorticklabels()
              if t.get_text()]
    assert labels and not any("times" in s or "^" in s for s in labels), labels
    assert all(re.fullmatch(r"[\d,.]+", s) for s in labels), labels
