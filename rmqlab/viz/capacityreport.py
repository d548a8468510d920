"""The capacity report, drawn: the figures of a plan's analysis, the report as one
self-contained HTML page (:func:`render_report`, :func:`write_report`) and the notebook tables
(:class:`NotebookTable`: :func:`results_table`, :func:`inputs_table`, :func:`kafka_table`,
:func:`configurations_table`).

Everything here shows numbers :mod:`rmqlab.capacity.analysis` computed: a function takes the
:class:`~rmqlab.capacity.analysis.PlanAnalysis` of :func:`~rmqlab.capacity.analysis.analyse_plan`
(:func:`render_report` and :func:`write_report` also a plan, analysed first), and the figures
are :mod:`rmqlab.viz.capacity`'s with the report's titles, marks and captions. The report page
has inline CSS, figures as base64 PNG ``<img>``, no scripts and no external links; its JSON
counterpart is :func:`rmqlab.capacity.analysis.report_json`.
"""
from __future__ import annotations

import base64
import html
import math
import os
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.capacity.analysis import (
    ASSUMPTIONS,
    CONFIGURATION_COLUMNS,
    HEADLINE_OUTPUTS,
    RESULT_ROWS,
    PlanAnalysis,
    as_analysis,
    configurations_frame,
    disk_fan,
    disk_over_days,
    findings,
    kafka_side_by_side,
    spread_rows,
)
from rmqlab.capacity.plan import FIELDS, Interval, Plan
from rmqlab.extras import require
from rmqlab.tables.display import format_value
from rmqlab.viz.capacity import (
    disk_fan_figure,
    disk_usage_figure,
    index_fill_time_figure,
    load_factor_comparison_figure,
    load_factor_figure,
    percentile_ranges_figure,
    sampled_chain_lengths_figure,
)

__all__ = [
    "SECTIONS",
    "render_report",
    "write_report",
    "disk_fan_chart",
    "spread_chart",
    "configurations_figure",
    "chain_figure",
    "NotebookTable",
    "configurations_table",
    "results_table",
    "inputs_table",
    "kafka_table",
]




# ------------------------------------------------------------------------------ figures



def _disk_marks(a: PlanAnalysis, horizon: float) -> dict[str, float]:
    """Where the curve at the likely inputs crosses each disk ratio (the model's days), within
    the chart's `horizon`: "day 1,455: 75 %"."""
    e, d = a.estimate, a.plan.disk
    crossings = ((e.days_to_disk_max_used_space_ratio, d.disk_max_used_space_ratio, ""),
                 (e.days_to_disk_space_clean_forcibly_ratio, d.disk_space_clean_forcibly_ratio, ""),
                 (e.days_to_disk_space_warning_level_ratio, d.disk_space_warning_level_ratio, ", writes refused"))
    return {f"day {format_value(day, 'count')}: {format_value(100 * ratio, 'amount')} %{what}": day
            for day, ratio, what in crossings if day <= horizon}


def _disk_thresholds(a: PlanAnalysis) -> dict[str, float]:
    d = a.plan.disk
    return {"diskMaxUsedSpaceRatio": d.disk_max_used_space_ratio,
            "diskSpaceCleanForciblyRatio": d.disk_space_clean_forcibly_ratio,
            "diskSpaceWarningLevelRatio": d.disk_space_warning_level_ratio}


def _disk_horizon(a: PlanAnalysis, writes_refused: float) -> float:
    """Days a disk chart spans: up to the day writes are refused (the broker stops the store
    growing there, so no curve passes the disk line), else a few retention periods."""
    e = a.estimate
    keep_days = e.retained_hours / 24.0 + 1.0 / e.commitlog_files_per_day
    if math.isfinite(writes_refused):
        return max(min(writes_refused, 5 * 365.25), 2 * keep_days)
    return max(4 * keep_days, 14.0)


def _disk_figure(a: PlanAnalysis):
    e = a.estimate
    horizon = _disk_horizon(a, e.days_to_disk_space_warning_level_ratio)
    days = np.linspace(0.0, horizon, 400)
    fig = disk_usage_figure(days, disk_over_days(a, days), disk_bytes=a.plan.disk.capacity_bytes,
                            thresholds=_disk_thresholds(a), marks=_disk_marks(a, horizon))
    ax = fig.axes[0]
    ax.set_title(f"disk usage from an empty store (likely inputs, growth "
                 f"{format_value(a.plan.traffic.growth_percent_per_month.likely / 100, 'percent')}/month)",
                 fontsize="medium")
    return fig


def disk_fan_chart(a: PlanAnalysis):
    """The Monte Carlo fan of the bytes on disk from an empty store
    (:func:`~rmqlab.capacity.analysis.disk_fan`: p5-p95 and p25-p75 bands, the p50 line, the
    likely curve dashed) against the disk and its three ratios, marked where the p5, p50 and
    p95 draws reach diskMaxUsedSpaceRatio (the model's days). It ends where the median draw has
    writes refused, so the bands stop at the disk line. Cost: O(draws x 400) for the fan at 400
    days, then O(400) points drawn a band.
    """
    mc = a.monte_carlo
    horizon = _disk_horizon(a, mc.loc["days_to_disk_space_warning_level_ratio", "p50"])
    days = np.linspace(0.0, horizon, 400)
    fan = disk_fan(a, days)
    # a draw that has reached the disk's write-refusal ratio stops growing: the broker refuses writes
    ceiling = a.plan.disk.disk_space_warning_level_ratio * a.plan.disk.capacity_bytes
    fan = {p: np.minimum(y, ceiling) for p, y in fan.items()}
    likely = np.minimum(sum(disk_over_days(a, days).values()), ceiling)
    # a draw growing faster crosses sooner: the fan's p95 edge reaches the line near the p5 day
    days_to = mc.loc["days_to_disk_max_used_space_ratio"]
    marks = {f"day {format_value(days_to[p], 'count')}: {share} of draws": days_to[p]
             for p, share in (("p5", "5 %"), ("p50", "half"), ("p95", "95 %")) if days_to[p] <= horizon}
    fig = disk_fan_figure(days, fan, likely=likely, disk_bytes=a.plan.disk.capacity_bytes,
                          thresholds=_disk_thresholds(a), marks=marks)
    fig.axes[0].set_title(f"bytes on disk from an empty store, {format_value(a.samples, 'count')} Monte Carlo "
                          f"draws", fontsize="medium")
    return fig


def spread_chart(a: PlanAnalysis):
    """The Monte Carlo p5-p95 spread of the outputs people size with, each relative to its
    likely value (:func:`rmqlab.viz.capacity.percentile_ranges_figure` of
    :func:`~rmqlab.capacity.analysis.spread_rows`).
    Cost: O(outputs)."""
    fig = percentile_ranges_figure(spread_rows(a))
    fig.axes[0].set_title(f"Monte Carlo spread of each output, {a.samples:,} draws", fontsize="medium")
    return fig


def configurations_figure(a: PlanAnalysis):
    """The configurations compared, each file full: empty slots, mean chain and entries read per
    file for a stored and a missing key, the model's numbers of each configuration (the same
    ones as the configurations table and the recommendation). Cost: O(configurations)."""
    configs = {c.name: (c.hash_slot_num, c.index_num) for c in a.configurations}
    measured = {c.name: {"empty_share": 1.0 - c.occupancy, "mean_occupied_chain": c.mean_chain_length,
                         "entries_read_hit": c.entries_read_hit, "entries_read_miss": c.entries_read_miss}
                for c in a.configurations}
    return load_factor_comparison_figure(configs, measured=measured,
                                         figsize=(max(12.0, 1.5 + 2.6 * len(configs)), 5.4))


def _fill_figure(a: PlanAnalysis):
    mc = a.monte_carlo
    rates = [mc.loc["index_keys_per_day", p] / 86400.0 for p in ("p5", "p50", "p95")]
    peak = a.estimate.keys_per_index_file / (a.estimate.hours_to_fill_index_file_at_peak * 3600.0)
    fig = index_fill_time_figure(sorted(set(rates + [peak])), index_num=a.plan.index.index_num)
    fig.axes[0].set_title(f"time to fill an index file of {a.plan.index.index_num:,} entries "
                          f"(key rate p5, p50, p95 and the peak)", fontsize="medium")
    return fig


def chain_figure(a: PlanAnalysis):
    """The report's chain-length figure: chain lengths of full index files of the plan's sampled keys."""
    s = a.estimate.sample
    # the histogram pools every simulated file's slots: say how many files of how many slots
    scaled = "" if s.scale == 1.0 else \
        f"\n(each file simulated with {format_value(s.scale, 'percent')} of its slots, same load factor)"
    return sampled_chain_lengths_figure(
        s.histogram, title=f"full files from the real hash of sampled keys, pooled: {s.files} files × "
                           f"{s.hash_slot_num:,} slots, {s.entries:,} keys a file{scaled}")


def _scale_note(a: PlanAnalysis) -> str:
    s = a.estimate.sample
    if s is None or s.scale == 1.0:
        return ""
    # q of the draws over q of the hot keys: a hot key keeps its mean entries, so its chain keeps
    # its length; what a scaled file loses is where runs of sequential ids land among the slots
    return (f"; each sampled file is the real one with {format_value(s.scale, 'percent')} of its slots and keys "
            "(the fast sample), "
            f"with the hot vocabulary shrunk alike so that a hot key keeps its mean number of entries. "
            f"Scaled files do not keep how runs of sequential ids (order ids, UNIQ_KEY counters) fold into "
            f"the real slot count: against stores of the broker's size they put occupancy up to 6 % off "
            f"(1.3 % with six keys a message, 6 % with few distinct hot keys). "
            f"Without --fast the report hashes whole full-size files instead "
            f"(about 7 CPU-seconds a configuration at the default geometry), which matched those stores "
            f"to 0.1 %")


def _figures(a: PlanAnalysis) -> list[tuple[str, str, Any]]:
    """(id, caption, figure) in report order."""
    ix = a.plan.index
    out = [
        ("disk-usage", "Bytes on disk over days against the disk size and RocketMQ's three disk "
                       "ratios, filling from an empty store at the likely inputs, until the day the "
                       "broker refuses writes; dotted: the day each ratio is passed.", _disk_figure(a)),
        ("disk-fan", "The same from every Monte Carlo draw: p5-p95 and p25-p75 of the bytes on disk "
                     "each day, the median line and the likely curve dashed; dotted: the days by which 5 %, "
                     "half and 95 % of the draws pass diskMaxUsedSpaceRatio. A draw stops growing at "
                     "diskSpaceWarningLevelRatio, where the broker refuses writes.", disk_fan_chart(a)),
        ("index-fill-time", "Hours to fill one index file (the time span it covers) against the "
                            "key rate; marked: the Monte Carlo p5 / p50 / p95 of the mean key rate "
                            "and the likely peak rate.", _fill_figure(a)),
        ("load-factor", f"The plan's configuration ({ix.hash_slot_num:,} slots × {ix.index_num:,} "
                        "entries) for a uniform hash: chain lengths of a full file and entries a "
                        "query reads as the file fills.", load_factor_figure(ix.hash_slot_num, ix.index_num)),
        ("sampled-chains", "The same file from the real Java hash of keys shaped like the plan's "
                           "(UNIQ_KEY ids, one-off ids, Zipf hot keys): hot keys put many times "
                           "make the long chains on the right" + _scale_note(a) + ".", chain_figure(a)),
    ]
    if len(a.configurations) > 1:
        out.append(("configurations", "The configurations compared, each file full, with the model's numbers "
                    "(the real hash of sampled keys), as in the table below: entries read per file searched, for "
                    "a stored key the whole chain of its slot.", configurations_figure(a)))
    return out


# ------------------------------------------------------------------------------ HTML

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       margin: 0; background: #fafafa; line-height: 1.45; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 32px 48px; background: #fff;
       overflow-wrap: break-word; }
h1 { font-size: 1.7em; margin: 0.2em 0 0.1em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 2px solid #e3e3e3; padding-bottom: 4px; }
.sub { color: #666; margin-top: 0; }
nav { font-size: 0.92em; margin: 0.8em 0 1.2em; display: flex; flex-wrap: wrap; gap: 0.15em 1.1em; }
nav a { color: #1f5fa8; text-decoration: none; }
.recommendation { background: #eef6ee; border-left: 5px solid #3c8d40; padding: 10px 16px; }
.recommendation.nofit { background: #fdf0ee; border-left-color: #b3261e; }
.findings li { margin: 0.2em 0; }
.table-box { max-width: 100%; overflow-x: auto; margin: 0.6em 0 1em; }
table { border-collapse: collapse; font-size: 0.88em; }
table.configurations { font-size: 0.8em; }
th, td { border: 1px solid #d6d6d6; padding: 3px 9px; vertical-align: top; }
table.configurations th, table.configurations td { padding: 3px 6px; }
th { background: #f1f1f1; text-align: left; vertical-align: bottom; white-space: normal;
     hyphens: manual; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.best td { background: #eef6ee; font-weight: 600; }
tr.nofit td { color: #8a1c14; }
td.section { background: #f7f7f7; font-weight: 600; }
figure { margin: 1.2em 0 2em; }
figure img { max-width: 100%; height: auto; box-sizing: border-box; border: 1px solid #e3e3e3;
             display: block; }
figcaption { color: #555; font-size: 0.9em; margin-top: 4px; }
code { background: #f3f3f3; padding: 0 3px; }
ul.assumptions li { margin: 0.35em 0; }
footer { color: #888; font-size: 0.85em; margin-top: 3em; }
"""

#: The report's section headings, in order (id, title).
SECTIONS: tuple[tuple[str, str], ...] = (
    ("recommendation", "Recommendation"),
    ("results", "Results"),
    ("figures", "Figures"),
    ("configurations", "Configurations compared"),
    ("kafka", "Kafka side by side"),
    ("inputs", "Inputs"),
    ("assumptions", "Assumptions and limits"),
)


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, numeric_from: int = 1,
           row_classes: Sequence[str] | None = None, css_class: str = "") -> str:
    out = [f'<table class="{_esc(css_class)}"><thead><tr>'
           + "".join(f"<th>{_esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        cells = "".join(f'<td class="num">{_esc(v)}</td>' if j >= numeric_from else f"<td>{_esc(v)}</td>"
                        for j, v in enumerate(row))
        out.append(f"<tr{cls}>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _table_box(table_html: str) -> str:
    # a table wider than the column (a narrow window, a wide font) scrolls inside its own box
    # instead of pushing the page sideways; styled inline too, for notebooks and widgets, which
    # have no stylesheet of ours
    return f'<div class="table-box" style="max-width:100%;overflow-x:auto">{table_html}</div>'


def _png_data_uri(fig, dpi: int) -> str:
    from rmqlab.viz.widgetkit import figure_png

    return "data:image/png;base64," + base64.b64encode(figure_png(fig, dpi=dpi)).decode("ascii")


def _input_text(value: Any, kind: str) -> str:
    if value is None:
        return "(derived)"
    if isinstance(value, Interval):
        if value.is_point:
            return _as_written(value.likely)
        return f"{_as_written(value.low)} / {_as_written(value.likely)} / {_as_written(value.high)}"
    if kind == "size":
        return f"{format_value(value, 'bytes')} ({value:,} bytes)" if value else "0"
    if kind == "topics":
        return ", ".join(value)
    if kind == "hours":
        return ";".join(f"{h:02d}" for h in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _as_written(value)
    if isinstance(value, int):
        return format_value(value, "count")
    return str(value)


def _as_written(x: float) -> str:
    """An input as the plan writes it when that is exact (0.8, 1,500); a derived value such as
    23/3 bytes through the formatter ("7.667"), not as 7.66667."""
    text = f"{x:,g}"
    return text if float(text.replace(",", "")) == x else format_value(x, "number")


def _inputs_html(plan: Plan) -> str:
    rows, classes = [], []
    for sec, fields_ in FIELDS.items():
        if sec == "plan":
            continue
        rows.append((f"[{sec}]", "", "", "", ""))
        classes.append("")
        obj = getattr(plan, sec)
        for key, f in fields_.items():
            rows.append((f"{sec}.{key}", _input_text(getattr(obj, key), f.kind), f.unit, f.rocketmq, f.doc))
            classes.append("")
    body = _table_box(_table(["input", "value (low / likely / high)", "unit", "RocketMQ", "meaning"], rows,
                             numeric_from=99))
    # section rows span the table visually
    body = body.replace("<tr><td>[", '<tr><td class="section">[')
    if plan.compare:
        body += "<p>Alternative index configurations ([[compare]]):</p>" + _table_box(_table(
            ["name", "hash_slot_num", "index_num", "max_msgs_num_batch"],
            [(c.name, f"{c.hash_slot_num:,}", f"{c.index_num:,}", f"{c.max_msgs_num_batch:,}")
             for c in plan.compare]))
    return body


def _results_html(a: PlanAnalysis) -> str:
    e, mc = a.estimate.as_dict(), a.monte_carlo
    rows = [(label, format_value(e[name], kind), *(format_value(mc.loc[name, p], kind) for p in ("p5", "p50", "p95")))
            for name, label, kind in RESULT_ROWS]
    return (f"<p>“likely”: every input at its likely value. p5 / p50 / p95: percentiles of "
            f"{a.samples:,} Monte Carlo draws (seed {a.seed}), each interval drawn from PERT(low, likely, high).</p>"
            + _table_box(_table(["output", "likely", "p5", "p50", "p95"], rows, css_class="results")))


def _configurations_html(a: PlanAnalysis) -> str:
    frame = configurations_frame(a)
    classes = ["best" if c.name == a.recommendation.configuration else ("nofit" if not c.fits else "")
               for c in a.configurations]
    # sixteen columns fit the page only with the headers wrapped to about the width of their
    # numbers; a soft hyphen lets the longest single word break too
    return _table(["config\u00aduration", *frame.columns], [(name, *row) for name, row in zip(frame.index,
                                                                                             frame.to_numpy())],
                  row_classes=classes, css_class="configurations")


class NotebookTable:
    """A table for a notebook's output: HTML in a box of its own that scrolls sideways when a
    narrow window or a wide font makes the table wider than the column (JupyterLab would
    otherwise scroll the whole output, far below the rows that matter). ``frame``: the text
    to show, its index the row labels; ``css_class``: the table's class, for a stylesheet or a
    test to find it; ``numbers``: the cells are numbers, right-aligned (else text, left-aligned,
    as are the row labels). Cost: O(cells).

    >>> NotebookTable(pd.DataFrame({"x": ["1"]}, index=["a"]), "t")._repr_html_()[:62]
    '<div class="table-box" style="max-width:100%;overflow-x:auto">'
    """

    def __init__(self, frame: pd.DataFrame, css_class: str = "", *, numbers: bool = True):
        self.frame = frame
        self.css_class = css_class
        self.numbers = numbers

    def _repr_html_(self) -> str:
        f = self.frame
        table = _table(["", *map(str, f.columns)], [(str(i), *row) for i, row in zip(f.index, f.to_numpy())],
                       css_class=self.css_class)
        # labels and text read left-aligned, where JupyterLab right-aligns every cell
        left = '<td style="text-align:left">'
        table = table.replace("<tr><td>", "<tr>" + left)
        if not self.numbers:
            table = table.replace('<td class="num">', left).replace("<th>", '<th style="text-align:left">')
        return _table_box(table)

    def __repr__(self) -> str:
        return self.frame.to_string()


def configurations_table(a: PlanAnalysis) -> NotebookTable:
    """The configurations compared for a notebook: :func:`configurations_frame` turned on its
    side (a row per quantity, a column per configuration, the recommended one marked), so it
    fits a notebook's column however many quantities there are. Cost: O(configurations).

    >>> from rmqlab.capacity import parse_plan
    >>> from rmqlab.capacity.analysis import analyse_plan
    >>> t = configurations_table(analyse_plan(parse_plan({"traffic": {"messages_per_second": 50}}), samples=50))
    >>> list(t.frame.columns), t.frame.loc["hash slots (maxHashSlotNum)"].tolist()
    (['this plan (recommended)'], ['5,000,000'])
    """
    frame = configurations_frame(a).T
    frame.columns = [f"{name} (recommended)" if name == a.recommendation.configuration else name
                     for name in frame.columns]
    frame.index = [label for _, _, label, _ in CONFIGURATION_COLUMNS]
    return NotebookTable(frame, "rmqlab-configurations")


def results_table(a: PlanAnalysis, names: Sequence[str] = HEADLINE_OUTPUTS,
                  columns: Sequence[str] = ("likely",)) -> NotebookTable:
    """Outputs of the analysis as a notebook table: a row per output name (labelled as in
    :data:`RESULT_ROWS`), a column per `columns` ("likely", or a Monte Carlo column "p5", "p50",
    "p95", "mean"), every number through :func:`rmqlab.tables.display.format_value`. Cost: O(cells).

    >>> from rmqlab.capacity import parse_plan
    >>> from rmqlab.capacity.analysis import analyse_plan
    >>> a = analyse_plan(parse_plan({"traffic": {"messages_per_second": 50}}), samples=50)
    >>> results_table(a, ["index_files_on_disk", "index_disk_bytes"]).frame["likely"].tolist()
    ['3', '1.17 GiB']

    Raises KeyError for a name that is not an output of :data:`RESULT_ROWS`.
    """
    rows = {name: (label, kind) for name, label, kind in RESULT_ROWS}
    e = a.estimate.as_dict()
    data = {rows[n][0]: [format_value(e[n] if col == "likely" else a.monte_carlo.loc[n, col], rows[n][1])
                         for col in columns] for n in names}
    return NotebookTable(pd.DataFrame.from_dict(data, orient="index", columns=list(columns)), "rmqlab-results")


def inputs_table(plan: Plan) -> NotebookTable:
    """The plan's uncertain inputs (its intervals, what Monte Carlo draws) as a notebook table:
    low / likely / high as written in the plan, the unit and the meaning. Cost: O(inputs).

    >>> from rmqlab.capacity import parse_plan
    >>> t = inputs_table(parse_plan({"traffic": {"messages_per_second": {"low": 800, "likely": 1000, "high": 1500}}}))
    >>> t.frame.loc["traffic.messages_per_second"].tolist()[:2]
    ['800 / 1,000 / 1,500', 'messages/s']
    """
    data = {}
    for path, iv in plan.intervals().items():
        sec, key = path.split(".")
        f = FIELDS[sec][key]
        data[path] = [_input_text(iv, f.kind), f.unit, f.doc]
    return NotebookTable(pd.DataFrame.from_dict(data, orient="index", columns=["low / likely / high", "unit",
                                                                              "meaning"]), "rmqlab-inputs",
                        numbers=False)


def kafka_table(a: PlanAnalysis) -> NotebookTable:
    """The report's Kafka side-by-side table for a notebook: the same traffic in RocketMQ and in
    Kafka at the likely rate, quantity by quantity. Cost: O(1)."""
    rows = kafka_side_by_side(a)
    return NotebookTable(pd.DataFrame([r[1:] for r in rows], index=[r[0] for r in rows],
                                      columns=["RocketMQ", "Kafka"]), "rmqlab-kafka", numbers=False)


def render_report(plan: Plan | PlanAnalysis, *, samples: int = 2000, seed: int | None = None,
                  dpi: int = 96, whole_files: bool = False) -> str:
    """The report as one self-contained HTML page: inline CSS, figures as base64 PNG
    ``<img>``, no scripts and no external links. Sections (``<h2 id=...>``, see
    :data:`SECTIONS`): recommendation, results (likely and Monte Carlo p5 / p50 / p95), figures
    (disk over days at the likely inputs and as a Monte Carlo fan, index fill time, load factor,
    sampled chains, configurations compared),
    configurations compared, Kafka side by side, inputs, assumptions and limits. `plan`: a
    :class:`Plan` (analysed here with `samples`, `seed` and `whole_files`) or a
    :class:`PlanAnalysis`. Cost: :func:`~rmqlab.capacity.analysis.analyse_plan` of a plan, plus
    drawing the figures and encoding them as PNG, O(pixels) at `dpi`; a few hundred KB of HTML.
    Needs the ``viz`` extra for the figures: checked first, so that a missing one fails before
    the analysis runs.
    """
    require("viz", "matplotlib", "the capacity report's figures")
    require("viz", "ipywidgets", "the capacity report's figures")
    a = as_analysis(plan, samples=samples, seed=seed, whole_files=whole_files)
    p = a.plan
    rec = a.recommendation
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_esc(p.title)}</title><style>{_CSS}</style></head><body><main>",
             f"<h1>{_esc(p.title)}</h1>",
             f'<p class="sub">RocketMQ store sized by rmqlab.capacity: index, ConsumeQueue and CommitLog '
             f"under {format_value(p.retention.file_reserved_time_hours.likely, 'hours')} of retention on a "
             f"{format_value(p.disk.capacity_bytes, 'bytes')} disk, "
             f"{format_value(p.traffic.messages_per_second.likely, 'amount')} messages/s likely.</p>",
             "<nav>" + "".join(f'<a href="#{sid}">{_esc(title)}</a>' for sid, title in SECTIONS) + "</nav>",
             '<ul class="findings">' + "".join(f"<li>{_esc(t)}</li>" for t in findings(a)) + "</ul>"]

    parts.append(f'<h2 id="recommendation">Recommendation</h2>'
                 f'<p class="recommendation{"" if rec.fits else " nofit"}">{_esc(rec.text)}</p>')
    parts.append('<h2 id="results">Results</h2>' + _results_html(a))
    parts.append('<h2 id="figures">Figures</h2>')
    for fid, caption, fig in _figures(a):
        parts.append(f'<figure id="fig-{fid}"><img alt="{_esc(caption)}" src="{_png_data_uri(fig, dpi)}">'
                     f"<figcaption>{_esc(caption)}</figcaption></figure>")
    parts.append('<h2 id="configurations">Configurations compared</h2>'
                 "<p>Each configuration under the plan's traffic. “fits”: the store's p95 disk plus other "
                 "data stays under diskMaxUsedSpaceRatio. Entries per query for a stored key: the hit "
                 "file's walk plus a missing-key walk in every other file the window overlaps. "
                 "The recommended row is highlighted.</p>"
                 + _table_box(_configurations_html(a)))
    parts.append('<h2 id="kafka">Kafka side by side</h2>'
                 f"<p>The same traffic in Kafka with its defaults (1 GiB segments, 10 MiB index files, an "
                 f"index entry every 4096 bytes), one {a.kafka_record_bytes:,}-byte record per batch.</p>"
                 + _table_box(_table(["quantity", "RocketMQ", "Kafka"], kafka_side_by_side(a), numeric_from=99)))
    parts.append('<h2 id="inputs">Inputs</h2>' + _inputs_html(p))
    parts.append('<h2 id="assumptions">Assumptions and limits</h2><ul class="assumptions">'
                 + "".join(f"<li>{_esc(t)}</li>" for t in ASSUMPTIONS) + "</ul>")
    parts.append(f"<footer>rmqlab {version('rmqlab')} · {a.samples:,} Monte Carlo samples, seed {a.seed} · "
                 "the model's equations: rmqlab/capacity/README.md</footer></main></body></html>")
    return "\n".join(parts)


def write_report(plan: Plan | PlanAnalysis, path: str | os.PathLike, *, samples: int = 2000,
                 seed: int | None = None, whole_files: bool = False) -> Path:
    """:func:`render_report` written to `path` (UTF-8); returns the path."""
    out = Path(path)
    out.write_text(render_report(plan, samples=samples, seed=seed, whole_files=whole_files), encoding="utf-8")
    return out

