"""The capacity report: a plan's inputs, the model's results with Monte Carlo percentiles,
figures, the [[compare]] configurations side by side with a computed recommendation, the Kafka
counterpart and the model's assumptions, as one self-contained HTML file
(:func:`render_report`) or a JSON-ready dict (:func:`report_json`) holding the same numbers.

Both start from :func:`analyse_plan`, which runs the model once per configuration; pass its
result instead of a plan to render both forms from one run.

>>> from rmqlab.capacity import parse_plan
>>> a = analyse_plan(parse_plan({"traffic": {"messages_per_second": 50}}), samples=200)
>>> a.recommendation.configuration, a.configurations[0].fits
('this plan', True)

:class:`PlanExplorer` is the notebook widget: sliders for the main inputs, the estimate and
charts redrawn on every change.
"""
from __future__ import annotations

import base64
import html
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.capacity.model import Estimate, draw_percentiles, estimate, monte_carlo_draws
from rmqlab.capacity.plan import FIELDS, Interval, Plan
from rmqlab.extras import require
from rmqlab.kafka.sizing import KafkaEstimate, kafka_estimate
from rmqlab.tables.display import format_value

__all__ = [
    "ConfigurationResult",
    "Recommendation",
    "PlanAnalysis",
    "RESULT_ROWS",
    "ASSUMPTIONS",
    "KAFKA_RECORD_OVERHEAD_BYTES",
    "analyse_plan",
    "render_report",
    "write_report",
    "report_json",
    "CONFIGURATION_COLUMNS",
    "configurations_frame",
    "configurations_table",
    "NotebookTable",
    "HEADLINE_OUTPUTS",
    "results_table",
    "inputs_table",
    "kafka_table",
    "format_value",
    "output_kind",
    "disk_over_days",
    "disk_fan",
    "disk_fan_chart",
    "spread_rows",
    "spread_chart",
    "SPREAD_OUTPUTS",
    "configurations_figure",
    "PlanExplorer",
]

#: Bytes a Kafka record adds around its key and value (length, attributes, timestamp and
#: offset deltas, key and value lengths, header count: varints of 1-3 bytes each).
KAFKA_RECORD_OVERHEAD_BYTES = 10

#: The results table: (output name, label, format kind). Kinds: see :func:`format_value`.
RESULT_ROWS: tuple[tuple[str, str, str], ...] = (
    ("messages_per_day", "messages per day", "count"),
    ("index_keys_per_message", "index keys per message", "number"),
    ("index_keys_per_day", "index keys per day", "count"),
    ("index_files_per_day", "index files per day", "number"),
    ("hours_to_fill_index_file", "time to fill one index file (= span it covers)", "hours"),
    ("hours_to_fill_index_file_at_peak", "time to fill one index file at the peak rate", "hours"),
    ("commitlog_record_bytes", "CommitLog record (mean)", "bytes_exact"),
    ("commitlog_files_per_day", "CommitLog files per day", "number"),
    ("retained_hours", "longest CommitLog file life (fileReservedTime + wait for deleteWhen)", "hours"),
    ("commitlog_disk_bytes", "CommitLog on disk", "bytes"),
    ("consume_queue_disk_bytes", "ConsumeQueue on disk", "bytes"),
    ("index_files_on_disk", "index files on disk", "count"),
    ("index_disk_bytes", "index on disk", "bytes"),
    ("total_disk_bytes", "store on disk (CommitLog + ConsumeQueue + index)", "bytes"),
    ("disk_used_ratio", "disk used (with other data)", "percent"),
    ("page_cache_bytes", "page cache to keep the newest index file hot", "bytes"),
    ("load_factor", "load factor (keys / slots of a full file)", "number"),
    ("occupancy", "slot occupancy (real hash, sampled keys)", "percent"),
    ("mean_chain_length", "mean chain of an occupied slot", "number"),
    ("entries_read_hit", "entries read per file, stored key", "number"),
    ("entries_read_miss", "entries read per file, missing key", "number"),
    ("index_files_per_query", "index files a query window overlaps", "number"),
    ("hot_key_matches_per_query", "hottest key's matches in the window", "count"),
    ("hot_key_truncation_probability", "chance the hot key's query is cut at maxMsgsNumBatch", "percent"),
    ("days_to_disk_max_used_space_ratio", "days to diskMaxUsedSpaceRatio", "days"),
    ("days_to_disk_space_clean_forcibly_ratio", "days to diskSpaceCleanForciblyRatio", "days"),
    ("days_to_disk_space_warning_level_ratio", "days to diskSpaceWarningLevelRatio (writes refused)", "days"),
)

#: What the model assumes and leaves out; printed in the report and its JSON.
ASSUMPTIONS: tuple[str, ...] = (
    "Rates are means over a day; the daily profile shapes the retention window's volume and the "
    "peak fill time, peak_factor only the peak fill time. Growth compounds monthly and only "
    "moves the days-to-threshold figures; the disk sizes are the steady state at today's rate.",
    "Disk is apparent size: CommitLog, ConsumeQueue and index files are preallocated, so a file "
    "counts whole from its first byte. Files on disk are the worst moment: every file whose last "
    "write is inside the retention window, plus the one being written.",
    "A CommitLog file lives up to fileReservedTime plus the longest wait for a deleteWhen hour; "
    "ConsumeQueue and index files go with the CommitLog file holding their last message. The disk "
    "is assumed to stay under diskMaxUsedSpaceRatio (above it the broker deletes early, "
    "which this model does not simulate).",
    "CommitLog records are version 1 with IPv4 hosts, the properties block derived from the keys "
    "unless given; equal-size records make the per-file count exact, varied sizes move it by "
    "at most one record a file.",
    "Messages spread evenly over topics x queues_per_topic ConsumeQueues.",
    "Slot occupancy, chain lengths and entries read for a stored key come from Java's "
    "String.hashCode of keys generated like rmqlab.lab.workload's (UNIQ_KEY ids, one-off order ids, "
    "Zipf hot keys), on a full file or a scaled one at the same load factor; other points of "
    "the intervals are carried by the uniform-hash model's ratio.",
    "Entries read count a whole walk of the key's slot in each file searched (no early stop at "
    "begin, fewer than maxNum matches). 'Per query' assumes a stored key sits in one of the "
    "files the window overlaps and the others are walked in vain: "
    "hit + (files - 1) x miss; a missing key reads files x miss.",
    "Hot-key matches in a window are Poisson; the truncation probability is P(matches > "
    "maxMsgsNumBatch), for the key of rank hot_key_rank.",
    "Monte Carlo draws every interval independently from PERT(low, likely, high); correlated "
    "inputs (a high rate with many keys) are not modelled, so the p5-p95 range of a product "
    "can be narrower than reality.",
    f"Kafka side: one message per batch (RocketMQ stores one record per message), a record of "
    f"body + one key of key_bytes + {KAFKA_RECORD_OVERHEAD_BYTES} bytes of varints, no headers; "
    "Kafka's defaults for segment.bytes, segment.index.bytes and index.interval.bytes; "
    "replication and compaction are left out on both sides.",
)


def output_kind(name: str) -> str:
    """The :func:`format_value` kind of an :class:`Estimate` output, from its name.

    >>> output_kind("index_disk_bytes"), output_kind("days_to_disk_max_used_space_ratio"), output_kind("occupancy")
    ('bytes', 'days', 'percent')
    """
    kinds = {n: k for n, _, k in RESULT_ROWS}
    if name in kinds:
        return kinds[name]
    if name.endswith("_bytes") or name.endswith("_bytes_per_day"):
        return "bytes"
    if name.startswith("days_to_"):
        return "days"
    if "hours" in name:
        return "hours"
    if name.startswith("occupancy") and not name.endswith("_sd"):
        return "percent"        # occupancy_uniform and one file's p5 / p95, like occupancy itself
    if name in ("keys_per_index_file", "commitlog_files_on_disk", "consume_queue_files_on_disk"):
        return "count"
    return "number"


def json_number(x: Any) -> Any:
    """JSON has no infinity: "never reached" becomes None."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    return x


# ------------------------------------------------------------------------------ the analysis


@dataclass(frozen=True)
class ConfigurationResult:
    """One index configuration under the plan's traffic (the plan's own or a [[compare]]
    alternative). Likely-point numbers unless a name ends in ``_p95`` (Monte Carlo).

    ``entries_read_per_query_hit`` = entries_read_hit + (index_files_per_query - 1) x
    entries_read_miss: a stored key in one of the files the query window overlaps, the other
    files walked in vain; ``entries_read_per_query_miss`` = index_files_per_query x
    entries_read_miss. ``fits``: the p95 store on disk plus the disk's other data stays at or
    under diskMaxUsedSpaceRatio x capacity (``disk_ratio_p95`` <= the ratio)."""

    name: str
    is_plan: bool
    hash_slot_num: int
    index_num: int
    max_msgs_num_batch: int
    load_factor: float
    index_file_bytes: int
    hours_to_fill_index_file: float
    index_files_on_disk: int
    index_disk_bytes: int
    index_disk_bytes_p95: float
    total_disk_bytes_p95: float
    disk_ratio_p95: float
    fits: bool
    page_cache_bytes: int
    occupancy: float
    mean_chain_length: float
    entries_read_hit: float
    entries_read_miss: float
    index_files_per_query: float
    entries_read_per_query_hit: float
    entries_read_per_query_miss: float
    hot_key_truncation_probability: float

    def as_dict(self) -> dict[str, Any]:
        return {k: json_number(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Recommendation:
    """The configuration to use and why, in plain words (``text``) and as numbers."""

    configuration: str
    fits: bool
    text: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PlanAnalysis:
    """Everything the report shows: the likely estimate, Monte Carlo percentiles (DataFrame,
    one row per output, columns p5 / p50 / p95 / mean), the configurations compared (the plan's
    first), the recommendation, and the Kafka counterpart at the likely rate."""

    plan: Plan
    samples: int
    seed: int
    estimate: Estimate
    monte_carlo: pd.DataFrame = field(repr=False)
    configurations: tuple[ConfigurationResult, ...]
    recommendation: Recommendation
    kafka_record_bytes: int
    kafka: KafkaEstimate
    #: the plan's Monte Carlo draws (:func:`~rmqlab.capacity.model.monte_carlo_draws`), one row
    #: a draw: ``monte_carlo`` holds their percentiles, the fan charts their spread over days
    draws: pd.DataFrame | None = field(default=None, repr=False, compare=False)


def _configuration(plan: Plan, name: str, is_plan: bool, samples: int, seed: int, whole_files: bool
                   ) -> tuple[ConfigurationResult, Estimate, pd.DataFrame]:
    e = estimate(plan, whole_files=whole_files)
    draws = monte_carlo_draws(plan, samples, seed, sample=e.sample)
    mc = draw_percentiles(draws)
    ix, d = plan.index, plan.disk
    total_p95 = float(mc.loc["total_disk_bytes", "p95"])
    ratio_p95 = (total_p95 + d.used_bytes) / d.capacity_bytes
    files = e.index_files_per_query
    return ConfigurationResult(
        name=name, is_plan=is_plan, hash_slot_num=ix.hash_slot_num, index_num=ix.index_num,
        max_msgs_num_batch=ix.max_msgs_num_batch, load_factor=e.load_factor,
        index_file_bytes=e.index_file_bytes, hours_to_fill_index_file=e.hours_to_fill_index_file,
        index_files_on_disk=e.index_files_on_disk, index_disk_bytes=e.index_disk_bytes,
        index_disk_bytes_p95=float(mc.loc["index_disk_bytes", "p95"]), total_disk_bytes_p95=total_p95,
        disk_ratio_p95=ratio_p95, fits=bool(ratio_p95 <= d.disk_max_used_space_ratio),
        page_cache_bytes=int(e.page_cache_bytes), occupancy=e.occupancy,
        mean_chain_length=e.mean_chain_length, entries_read_hit=e.entries_read_hit,
        entries_read_miss=e.entries_read_miss, index_files_per_query=files,
        entries_read_per_query_hit=e.entries_read_hit + (files - 1.0) * e.entries_read_miss,
        entries_read_per_query_miss=files * e.entries_read_miss,
        hot_key_truncation_probability=e.hot_key_truncation_probability), e, draws


def _describe(c: ConfigurationResult) -> str:
    return f"“{c.name}” ({c.hash_slot_num:,} slots × {c.index_num:,} entries)"


def _num(x: float) -> str:
    return format_value(x, "number")


def _pct(x: float) -> str:
    return format_value(x, "percent")


def _amount(x: float) -> str:
    """A plan's input as written: a whole number as a count, else with decimals."""
    return format_value(x, "count" if float(x).is_integer() else "number")


def recommend(configurations: Sequence[ConfigurationResult], plan: Plan) -> Recommendation:
    """The configuration with the fewest entries read per query for a stored key among those
    whose disk fits (ties: the smaller index on disk, then the order given); when none fits,
    the one needing the least disk, said so. The text states the numbers behind the choice."""
    if not configurations:
        raise ValueError("configurations is empty")
    ratio = plan.disk.disk_max_used_space_ratio
    window = plan.queries.window_minutes.likely
    fitting = [c for c in configurations if c.fits]
    own = next((c for c in configurations if c.is_plan), configurations[0])
    if not fitting:
        best = min(configurations, key=lambda c: (c.total_disk_bytes_p95, c.index_disk_bytes))
        text = (f"No configuration fits: even {_describe(best)}, the smallest, needs "
                f"{format_value(best.total_disk_bytes_p95, 'bytes')} at p95, {_pct(best.disk_ratio_p95)} of the "
                f"disk, above the {_pct(ratio)} diskMaxUsedSpaceRatio, where the broker starts deleting "
                f"files early. Shorten fileReservedTime, lower the traffic or use a bigger disk.")
        return Recommendation(best.name, False, text)
    best = min(fitting, key=lambda c: (round(c.entries_read_per_query_hit, 9), c.index_disk_bytes))
    head = (f"Keep this plan's configuration ({best.hash_slot_num:,} slots × {best.index_num:,} entries)"
            if best.is_plan else f"Use {_describe(best)}")
    text = (f"{head}: a query for a stored key over a {_amount(window)}-minute window "
            f"reads about {_num(best.entries_read_per_query_hit)} index entries "
            f"({_num(best.index_files_per_query)} files of {_num(best.entries_read_hit)} / "
            f"{_num(best.entries_read_miss)} entries for a hit / miss)")
    if not best.is_plan:
        text += (f", against {_num(own.entries_read_per_query_hit)} with this plan's configuration "
                 f"({own.hash_slot_num:,} slots × {own.index_num:,} entries)")
    text += (f". Its index takes {format_value(best.index_disk_bytes, 'bytes')} on disk "
             f"({format_value(best.index_disk_bytes_p95, 'bytes')} at p95) and the whole store "
             f"{_pct(best.disk_ratio_p95)} of the disk at p95, under the {_pct(ratio)} "
             f"diskMaxUsedSpaceRatio; keeping the newest index file hot takes "
             f"{format_value(best.page_cache_bytes, 'bytes')} of page cache")
    if not best.is_plan:
        text += f" (against {format_value(own.page_cache_bytes, 'bytes')})"
    text += "."
    left_out = [c for c in configurations if not c.fits]
    if left_out:
        text += " Left out because the disk would pass the ratio: " + ", ".join(
            f"“{c.name}” ({_pct(c.disk_ratio_p95)})" for c in left_out) + "."
    if best.hot_key_truncation_probability >= 0.5:
        text += (f" Whatever the configuration, a query for the hot key is cut at "
                 f"maxMsgsNumBatch = {best.max_msgs_num_batch} with probability "
                 f"{_pct(best.hot_key_truncation_probability)}: query it with narrower time windows.")
    return Recommendation(best.name, True, text)


def _kafka_record_bytes(plan: Plan) -> int:
    return math.ceil(plan.messages.body_bytes.likely + plan.keys.key_bytes.likely + KAFKA_RECORD_OVERHEAD_BYTES)


def analyse_plan(plan: Plan, *, samples: int = 2000, seed: int | None = None,
                 whole_files: bool = False, progress: Callable[[str], None] | None = None) -> PlanAnalysis:
    """Run the model for the plan and for each [[compare]] alternative (the plan with that
    alternative's hash_slot_num, index_num and max_msgs_num_batch): a likely estimate with the
    real-hash key sample and `samples` Monte Carlo draws each (`seed` None: the plan's seed),
    then :func:`recommend`. `whole_files`: the key sample hashes whole full-size files
    (:func:`~rmqlab.capacity.model.sample_occupancy`; what ``rmqlab capacity report`` does
    unless ``--fast``). `progress` is called with a line before each configuration. Cost:
    about 0.5 s per configuration at the default sizes; with `whole_files` about 7 CPU-seconds and
    0.7 GB peak memory (the keys stream through), more for bigger files.
    """
    if not isinstance(plan, Plan):
        raise TypeError(f"plan must be a Plan (load_plan / parse_plan), got {type(plan).__name__}")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples must be a positive int, got {samples!r}")
    seed = plan.seed if seed is None else int(seed)
    say = progress or (lambda _line: None)
    total = 1 + len(plan.compare)

    def announce(i: int, name: str, p: Plan) -> None:
        g = p.geometry
        say(f"[{i}/{total}] {name}: {g.hash_slot_num:,} slots x {g.index_num:,} entries, "
            f"{'whole' if whole_files else 'sampled'} files of real-hash keys")

    announce(1, "this plan", plan)
    own, e, draws = _configuration(plan, "this plan", True, int(samples), seed, whole_files)
    configs = [own]
    for i, alt in enumerate(plan.compare, start=2):
        other = plan.replace({"index.hash_slot_num": alt.hash_slot_num, "index.index_num": alt.index_num,
                              "index.max_msgs_num_batch": alt.max_msgs_num_batch})
        announce(i, alt.name, other)
        configs.append(_configuration(other, alt.name, False, int(samples), seed, whole_files)[0])
    record = _kafka_record_bytes(plan)
    kafka = kafka_estimate(float(plan.traffic.messages_per_second.likely), record_bytes=record)
    return PlanAnalysis(plan=plan, samples=int(samples), seed=seed, estimate=e, monte_carlo=draw_percentiles(draws),
                        configurations=tuple(configs), recommendation=recommend(configs, plan),
                        kafka_record_bytes=record, kafka=kafka, draws=draws)


def _analysis(plan_or_analysis: Plan | PlanAnalysis, samples: int, seed: int | None,
              whole_files: bool) -> PlanAnalysis:
    if isinstance(plan_or_analysis, PlanAnalysis):
        return plan_or_analysis
    return analyse_plan(plan_or_analysis, samples=samples, seed=seed, whole_files=whole_files)


# ------------------------------------------------------------------------------ Kafka side


def _side_by_side(a: PlanAnalysis) -> list[tuple[str, str, str]]:
    """(quantity, RocketMQ, Kafka) rows at the likely rate."""
    e, k = a.estimate, a.kafka
    rocket_index_per_million = e.index_keys_per_message * e.index_file_bytes / e.keys_per_index_file * 1e6
    rocket_cq_per_million = e.consume_queue_bytes_per_day / e.messages_per_day * 1e6
    return [
        ("log bytes per day", format_value(e.commitlog_bytes_per_day, "bytes"),
         format_value(k.bytes_per_day, "bytes")),
        ("log files per day", f"{_num(e.commitlog_files_per_day)} CommitLog files",
         f"{_num(k.segments_per_day)} segments"),
        ("stored bytes per message", f"{format_value(e.commitlog_record_bytes, 'bytes_exact')} (CommitLog record)",
         f"{format_value(k.batch_bytes, 'bytes')} (a one-record batch)"),
        ("index files per day", f"{_num(e.index_files_per_day)} index files",
         f"{_num(2 * k.segments_per_day)} (an offset and a time index per segment)"),
        ("time one index file covers", format_value(e.index_file_span_hours, "hours"),
         format_value(k.hours_per_segment, "hours")),
        ("index entries per file", f"{format_value(e.keys_per_index_file, 'count')} (a key each)",
         f"{format_value(k.index_entries_per_segment, 'count')} "
         f"(one per {format_value(k.batches_per_index_entry, 'count')} batches)"),
        ("what closes a file first", "index file full (index_num - 1 keys)", k.rolls_first),
        ("index disk per million messages", format_value(rocket_index_per_million, "bytes"),
         format_value(k.index_bytes_per_million_messages, "bytes")),
        ("queue / offset lookup per million messages", f"{format_value(rocket_cq_per_million, 'bytes')} "
         "(ConsumeQueue)", "in the offset index above"),
        ("lookup by key", "hash slot walk in each index file the window overlaps",
         "none (Kafka indexes offsets and times only)"),
    ]


# ------------------------------------------------------------------------------ JSON


def report_json(plan: Plan | PlanAnalysis, *, samples: int = 2000, seed: int | None = None,
                whole_files: bool = False) -> dict[str, Any]:
    """The report's numbers for machines: ``plan`` (TOML-shaped), ``estimate`` (every output
    at the likely point), ``monte_carlo`` (output -> p5 / p50 / p95 / mean), ``configurations``,
    ``recommendation``, ``kafka`` (with ``record_bytes``, the Kafka record size assumed) and
    ``assumptions``. Infinite values (a threshold never reached) are null, so the dict is strict
    JSON (``json.dumps(d, allow_nan=False)`` works). Same cost as :func:`analyse_plan`."""
    a = _analysis(plan, samples, seed, whole_files)
    mc = {name: {col: json_number(v) for col, v in row.items()}
          for name, row in a.monte_carlo.to_dict(orient="index").items()}
    return {
        "name": a.plan.name,
        "samples": a.samples,
        "seed": a.seed,
        "plan": a.plan.to_dict(),
        "estimate": {k: json_number(v) for k, v in a.estimate.as_dict().items()},
        "monte_carlo": mc,
        "configurations": [c.as_dict() for c in a.configurations],
        "recommendation": a.recommendation.as_dict(),
        "kafka": {"record_bytes": a.kafka_record_bytes, "messages_per_batch": 1,
                  **{k: json_number(v) for k, v in a.kafka.as_dict().items()}},
        "assumptions": list(ASSUMPTIONS),
    }


# ------------------------------------------------------------------------------ figures


def _held(t: np.ndarray, keep, growth) -> np.ndarray:
    """Share of a store part's steady-state bytes held `t` days after an empty start when it
    keeps the last `keep` days of writes growing at `growth` a day (continuous): the integral
    of e^(γu) over [max(0, t - keep), t] over `keep`, which is 1 at the plateau without growth.
    Broadcasts `keep` and `growth` (one a draw, shape (n, 1)) against `t`."""
    lo = np.maximum(0.0, t - keep)
    flat = np.abs(growth) < 1e-12
    g = np.where(flat, 1.0, growth)
    grown = (np.exp(g * t) - np.exp(g * lo)) / g / keep
    return np.where(flat, (t - lo) / keep, grown)


def _growth_per_day(growth_percent_per_month):
    return np.log1p(np.asarray(growth_percent_per_month, float) / 100.0) / (365.25 / 12)


def disk_over_days(a: PlanAnalysis, days: np.ndarray) -> dict[str, np.ndarray]:
    """Bytes on disk of each store part at `days` since an empty store at the likely point:
    held(t) = ∫ over the last K days of b e^(γu) du (K: each part's retention, b its bytes a
    day, γ the growth), scaled so that without growth the plateau is the estimate's worst-moment
    disk bytes of that part. Cost: O(days)."""
    e, plan = a.estimate, a.plan
    growth = _growth_per_day(plan.traffic.growth_percent_per_month.likely)
    commitlog_days = e.retained_hours / 24.0
    after_days = commitlog_days + 1.0 / e.commitlog_files_per_day      # + one CommitLog file's span
    t = np.asarray(days, float)
    out = {"CommitLog": e.commitlog_disk_bytes * _held(t, commitlog_days, growth),
           "ConsumeQueue": e.consume_queue_disk_bytes * _held(t, after_days, growth),
           "index": e.index_disk_bytes * _held(t, after_days, growth)}
    if plan.disk.used_bytes:
        out = {"other data": np.full(t.shape, float(plan.disk.used_bytes)), **out}
    return out


def disk_fan(a: PlanAnalysis, days: np.ndarray, percentiles: Sequence[float] = (5, 25, 50, 75, 95)
             ) -> dict[float, np.ndarray]:
    """Percentiles over the Monte Carlo draws of the bytes on disk (the store plus the disk's
    other data) at `days` since an empty store: each draw's curve is :func:`disk_over_days`'s
    with that draw's disk bytes, retention and growth, and each percentile is taken day by day.
    Cost: O(draws x days), a few ms for 2000 draws x 400 days.

    >>> from rmqlab.capacity import parse_plan
    >>> a = analyse_plan(parse_plan({"traffic": {"messages_per_second": {"low": 50, "likely": 60, "high": 90}}}),
    ...                  samples=200)
    >>> fan = disk_fan(a, np.array([0.0, 30.0]))
    >>> bool(fan[5][1] <= fan[50][1] <= fan[95][1])
    True
    """
    if a.draws is None:
        raise ValueError("the analysis holds no Monte Carlo draws: make it with analyse_plan")
    d = a.draws
    t = np.asarray(days, float)[None, :]

    def col(name: str) -> np.ndarray:
        return d[name].to_numpy(float)[:, None]

    growth = _growth_per_day(col("traffic.growth_percent_per_month")) if "traffic.growth_percent_per_month" in d \
        else _growth_per_day(a.plan.traffic.growth_percent_per_month.likely)
    commitlog_days = col("retained_hours") / 24.0
    after_days = commitlog_days + 1.0 / col("commitlog_files_per_day")
    total = (col("commitlog_disk_bytes") * _held(t, commitlog_days, growth)
             + (col("consume_queue_disk_bytes") + col("index_disk_bytes")) * _held(t, after_days, growth)
             + float(a.plan.disk.used_bytes))
    return {p: np.percentile(total, p, axis=0) for p in percentiles}


def _disk_marks(a: PlanAnalysis, horizon: float) -> dict[str, float]:
    """Where the curve at the likely inputs crosses each disk ratio (the model's days), within
    the chart's `horizon`: "day 1,455: 75 %"."""
    e, d = a.estimate, a.plan.disk
    crossings = ((e.days_to_disk_max_used_space_ratio, d.disk_max_used_space_ratio, ""),
                 (e.days_to_disk_space_clean_forcibly_ratio, d.disk_space_clean_forcibly_ratio, ""),
                 (e.days_to_disk_space_warning_level_ratio, d.disk_space_warning_level_ratio, ", writes refused"))
    return {f"day {format_value(day, 'count')}: {_amount(100 * ratio)} %{what}": day
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
    from rmqlab.viz.capacity import disk_usage_figure

    e = a.estimate
    horizon = _disk_horizon(a, e.days_to_disk_space_warning_level_ratio)
    days = np.linspace(0.0, horizon, 400)
    fig = disk_usage_figure(days, disk_over_days(a, days), disk_bytes=a.plan.disk.capacity_bytes,
                            thresholds=_disk_thresholds(a), marks=_disk_marks(a, horizon))
    ax = fig.axes[0]
    ax.set_title(f"disk usage from an empty store (likely inputs, growth "
                 f"{format_value(a.plan.traffic.growth_percent_per_month.likely / 100, 'percent')}/month)",
                 fontsize="medium")
    ax.legend(fontsize="small", loc="upper left", ncol=2)
    return fig


def disk_fan_chart(a: PlanAnalysis):
    """The Monte Carlo fan of the bytes on disk from an empty store (:func:`disk_fan`: p5-p95
    and p25-p75 bands, the p50 line, the likely curve dashed) against the disk and its three
    ratios, marked where the p5, p50 and p95 draws reach diskMaxUsedSpaceRatio (the model's
    days). It ends where the median draw has writes refused, so the bands stop at the disk
    line. Cost: :func:`disk_fan` plus about 0.2 s of drawing.
    """
    from rmqlab.viz.capacity import disk_fan_figure

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


#: The outputs :func:`spread_chart` draws, in order: (name of :data:`RESULT_ROWS`, short label).
SPREAD_OUTPUTS: tuple[tuple[str, str], ...] = (
    ("index_keys_per_day", "index keys a day"),
    ("index_files_per_day", "index files a day"),
    ("hours_to_fill_index_file", "time to fill an index file"),
    ("index_files_on_disk", "index files on disk"),
    ("index_disk_bytes", "index on disk"),
    ("commitlog_disk_bytes", "CommitLog on disk"),
    ("total_disk_bytes", "store on disk"),
    ("disk_used_ratio", "disk used"),
    ("index_files_per_query", "index files per query"),
    ("hot_key_matches_per_query", "hot key's matches per query"),
    ("days_to_disk_max_used_space_ratio", "days to diskMaxUsedSpaceRatio"),
)


def spread_rows(a: PlanAnalysis) -> list[tuple[str, float, float, float, float, str]]:
    """The rows of :func:`spread_chart`: (label, p5, p50, p95, likely, "p5 – p95") for each of
    :data:`SPREAD_OUTPUTS` whose numbers are finite and positive (a threshold some draws never
    reach has no spread to draw), the text through :func:`rmqlab.tables.display.format_value`.
    Cost: O(outputs)."""
    kinds = {name: kind for name, _, kind in RESULT_ROWS}
    mc, e = a.monte_carlo, a.estimate.as_dict()
    rows = []
    for name, label in SPREAD_OUTPUTS:
        p5, p50, p95 = (float(mc.loc[name, p]) for p in ("p5", "p50", "p95"))
        likely = float(e[name])
        values = np.array([p5, p50, p95, likely])
        if np.isfinite(values).all() and (values > 0).all():
            text = f"{format_value(p5, kinds[name])} – {format_value(p95, kinds[name])}"
            rows.append((label, p5, p50, p95, likely, text))
    return rows


def spread_chart(a: PlanAnalysis):
    """The Monte Carlo p5-p95 spread of the outputs people size with, each relative to its
    likely value (:func:`rmqlab.viz.capacity.percentile_ranges_figure` of :func:`spread_rows`).
    Cost: about 0.2 s of drawing."""
    from rmqlab.viz.capacity import percentile_ranges_figure

    fig = percentile_ranges_figure(spread_rows(a))
    fig.axes[0].set_title(f"Monte Carlo spread of each output, {a.samples:,} draws", fontsize="medium")
    return fig


def configurations_figure(a: PlanAnalysis):
    """The configurations compared, each file full: empty slots, mean chain and entries read per
    file for a stored and a missing key, the model's numbers of each configuration (the same
    ones as the configurations table and the recommendation). Cost: about 0.3 s of drawing."""
    from rmqlab.viz.capacity import load_factor_comparison_figure

    configs = {c.name: (c.hash_slot_num, c.index_num) for c in a.configurations}
    measured = {c.name: {"empty_share": 1.0 - c.occupancy, "mean_occupied_chain": c.mean_chain_length,
                         "entries_read_hit": c.entries_read_hit, "entries_read_miss": c.entries_read_miss}
                for c in a.configurations}
    return load_factor_comparison_figure(configs, measured=measured,
                                         figsize=(max(12.0, 1.5 + 2.6 * len(configs)), 5.4))


def _fill_figure(a: PlanAnalysis):
    from rmqlab.viz.capacity import index_fill_time_figure

    mc = a.monte_carlo
    rates = [mc.loc["index_keys_per_day", p] / 86400.0 for p in ("p5", "p50", "p95")]
    peak = a.estimate.keys_per_index_file / (a.estimate.hours_to_fill_index_file_at_peak * 3600.0)
    fig = index_fill_time_figure(sorted(set(rates + [peak])), index_num=a.plan.index.index_num)
    fig.axes[0].set_title(f"time to fill an index file of {a.plan.index.index_num:,} entries "
                          f"(key rate p5, p50, p95 and the peak)", fontsize="medium")
    return fig


def chain_figure(a: PlanAnalysis):
    """The report's chain-length figure: chain lengths of full index files of the plan's sampled keys."""
    from rmqlab.viz.capacity import sampled_chain_lengths_figure

    s = a.estimate.sample
    # the histogram pools every simulated file's slots: say how many files of how many slots
    scaled = "" if s.scale == 1.0 else f"\n(each file simulated with {_pct(s.scale)} of its slots, same load factor)"
    return sampled_chain_lengths_figure(
        s.histogram, title=f"full files from the real hash of sampled keys, pooled: {s.files} files × "
                           f"{s.hash_slot_num:,} slots, {s.entries:,} keys a file{scaled}")


def _scale_note(a: PlanAnalysis) -> str:
    s = a.estimate.sample
    if s is None or s.scale == 1.0:
        return ""
    # q of the draws over q of the hot keys: a hot key keeps its mean entries, so its chain keeps
    # its length; what a scaled file loses is where runs of sequential ids land among the slots
    return (f"; each sampled file is the real one with {_pct(s.scale)} of its slots and keys (the fast sample), "
            f"with the hot vocabulary shrunk alike so that a hot key keeps its mean number of entries. "
            f"Scaled files do not keep how runs of sequential ids (order ids, UNIQ_KEY counters) fold into "
            f"the real slot count: against stores of the broker's size they put occupancy up to 6 % off "
            f"(1.3 % with six keys a message, 6 % with few distinct hot keys). "
            f"Without --fast the report hashes whole full-size files instead "
            f"(about 7 CPU-seconds a configuration at the default geometry), which matched those stores "
            f"to 0.1 %")


def _figures(a: PlanAnalysis) -> list[tuple[str, str, Any]]:
    """(id, caption, figure) in report order."""
    from rmqlab.viz.capacity import load_factor_figure

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


#: The configurations compared, quantity by quantity: (ConfigurationResult field, short
#: heading, label, format kind). The report's table heads its sixteen columns with the short
#: headings (spaces or soft hyphens to break at, so that they wrap to about the width of their
#: numbers); a notebook's table, turned on its side, names its rows with the labels.
CONFIGURATION_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("hash_slot_num", "slots", "hash slots (maxHashSlotNum)", "count"),
    ("index_num", "entries", "entries (maxIndexNum)", "count"),
    ("load_factor", "λ", "load factor λ (keys / slots of a full file)", "number"),
    ("index_file_bytes", "file", "one index file", "bytes"),
    ("hours_to_fill_index_file", "fills in", "time to fill one index file", "hours"),
    ("index_disk_bytes", "index disk", "index on disk", "bytes"),
    ("index_disk_bytes_p95", "index disk p95", "index on disk, p95", "bytes"),
    ("disk_ratio_p95", "store / disk p95", "store and other data / disk, p95", "percent"),
    ("fits", "fits", "fits under diskMaxUsedSpaceRatio", "bool"),
    ("occupancy", "occu\u00adpancy", "slot occupancy (real hash)", "percent"),
    ("index_files_per_query", "files / query", "index files a query overlaps", "number"),
    ("entries_read_per_query_hit", "entries / query (hit)", "entries read per query, stored key", "number"),
    ("entries_read_per_query_miss", "entries / query (miss)", "entries read per query, missing key", "number"),
    ("page_cache_bytes", "page cache", "page cache for the newest index file", "bytes"),
    ("hot_key_truncation_probability", "hot key cut", "chance the hot key's query is cut", "percent"),
)


def configurations_frame(a: PlanAnalysis) -> pd.DataFrame:
    """The configurations compared as text a person reads: one row per configuration (index:
    its name), one column per :data:`CONFIGURATION_COLUMNS` heading, every cell through
    :func:`rmqlab.tables.display.format_value`. The report shows it as it is; a notebook shows
    :func:`configurations_table` (the same, turned on its side). Cost: O(configurations).

    >>> from rmqlab.capacity import parse_plan
    >>> f = configurations_frame(analyse_plan(parse_plan({"traffic": {"messages_per_second": 50}}), samples=50))
    >>> f.loc["this plan", "slots"], f.loc["this plan", "fits"], f.loc["this plan", "file"]
    ('5,000,000', 'yes', '400.54 MiB')
    """
    rows = {c.name: [format_value(getattr(c, field_), kind) for field_, _, _, kind in CONFIGURATION_COLUMNS]
            for c in a.configurations}
    return pd.DataFrame.from_dict(rows, orient="index", columns=[h for _, h, _, _ in CONFIGURATION_COLUMNS])


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
    >>> t = configurations_table(analyse_plan(parse_plan({"traffic": {"messages_per_second": 50}}), samples=50))
    >>> list(t.frame.columns), t.frame.loc["hash slots (maxHashSlotNum)"].tolist()
    (['this plan (recommended)'], ['5,000,000'])
    """
    frame = configurations_frame(a).T
    frame.columns = [f"{name} (recommended)" if name == a.recommendation.configuration else name
                     for name in frame.columns]
    frame.index = [label for _, _, label, _ in CONFIGURATION_COLUMNS]
    return NotebookTable(frame, "rmqlab-configurations")


#: The outputs a notebook shows first (names of :data:`RESULT_ROWS`); the report shows them all.
HEADLINE_OUTPUTS: tuple[str, ...] = (
    "index_keys_per_day", "index_files_per_day", "hours_to_fill_index_file", "index_files_on_disk",
    "index_disk_bytes", "total_disk_bytes", "disk_used_ratio", "occupancy", "entries_read_hit",
    "entries_read_miss", "hot_key_truncation_probability", "days_to_disk_max_used_space_ratio",
)


def results_table(a: PlanAnalysis, names: Sequence[str] = HEADLINE_OUTPUTS,
                  columns: Sequence[str] = ("likely",)) -> NotebookTable:
    """Outputs of the analysis as a notebook table: a row per output name (labelled as in
    :data:`RESULT_ROWS`), a column per `columns` ("likely", or a Monte Carlo column "p5", "p50",
    "p95", "mean"), every number through :func:`rmqlab.tables.display.format_value`. Cost: O(cells).

    >>> from rmqlab.capacity import parse_plan
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
    rows = _side_by_side(a)
    return NotebookTable(pd.DataFrame([r[1:] for r in rows], index=[r[0] for r in rows],
                                      columns=["RocketMQ", "Kafka"]), "rmqlab-kafka", numbers=False)


def _findings(a: PlanAnalysis) -> list[str]:
    e, mc = a.estimate, a.monte_carlo
    out = [
        f"{_num(e.index_files_per_day)} index files a day (p5 {_num(mc.loc['index_files_per_day', 'p5'])}, "
        f"p95 {_num(mc.loc['index_files_per_day', 'p95'])}); "
        f"one fills in {format_value(e.hours_to_fill_index_file, 'hours')}.",
        f"{format_value(e.total_disk_bytes, 'bytes')} on disk at steady state (p95 "
        f"{format_value(mc.loc['total_disk_bytes', 'p95'], 'bytes')}): CommitLog "
        f"{format_value(e.commitlog_disk_bytes, 'bytes')}, "
        f"ConsumeQueue {format_value(e.consume_queue_disk_bytes, 'bytes')}, "
        f"index {format_value(e.index_disk_bytes, 'bytes')}.",
        f"diskMaxUsedSpaceRatio reached after {format_value(e.days_to_disk_max_used_space_ratio, 'days')} "
        f"(p5 {format_value(mc.loc['days_to_disk_max_used_space_ratio', 'p5'], 'days')}).",
        f"A key lookup reads {_num(e.entries_read_hit)} entries per file for a stored key (the whole chain "
        f"of its slot: the walk goes on past the key), {_num(e.entries_read_miss)} for a missing one; "
        f"the hot key's query is cut at maxMsgsNumBatch with "
        f"probability {format_value(e.hot_key_truncation_probability, 'percent')}.",
    ]
    return out


def render_report(plan: Plan | PlanAnalysis, *, samples: int = 2000, seed: int | None = None,
                  dpi: int = 96, whole_files: bool = False) -> str:
    """The report as one self-contained HTML page: inline CSS, figures as base64 PNG
    ``<img>``, no scripts and no external links. Sections (``<h2 id=...>``, see
    :data:`SECTIONS`): recommendation, results (likely and Monte Carlo p5 / p50 / p95), figures
    (disk over days at the likely inputs and as a Monte Carlo fan, index fill time, load factor,
    sampled chains, configurations compared),
    configurations compared, Kafka side by side, inputs, assumptions and limits. `plan`: a
    :class:`Plan` (analysed here with `samples`, `seed` and `whole_files`) or a
    :class:`PlanAnalysis`. Cost: :func:`analyse_plan` plus about 4 s of drawing; a few
    hundred KB of HTML. Needs the ``viz`` extra for the figures: checked first, so that a
    missing one fails before the analysis runs.
    """
    require("viz", "matplotlib", "the capacity report's figures")
    require("viz", "ipywidgets", "the capacity report's figures")
    a = _analysis(plan, samples, seed, whole_files)
    p = a.plan
    rec = a.recommendation
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>Capacity plan: {_esc(p.name)}</title><style>{_CSS}</style></head><body><main>",
             f"<h1>Capacity plan: {_esc(p.name)}</h1>",
             f'<p class="sub">RocketMQ store sized by rmqlab.capacity: index, ConsumeQueue and CommitLog '
             f"under {format_value(p.retention.file_reserved_time_hours.likely, 'hours')} of retention on a "
             f"{format_value(p.disk.capacity_bytes, 'bytes')} disk, "
             f"{_amount(p.traffic.messages_per_second.likely)} messages/s likely.</p>",
             "<nav>" + "".join(f'<a href="#{sid}">{_esc(title)}</a>' for sid, title in SECTIONS) + "</nav>",
             '<ul class="findings">' + "".join(f"<li>{_esc(t)}</li>" for t in _findings(a)) + "</ul>"]

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
                 + _table_box(_table(["quantity", "RocketMQ", "Kafka"], _side_by_side(a), numeric_from=99)))
    parts.append('<h2 id="inputs">Inputs</h2>' + _inputs_html(p))
    parts.append('<h2 id="assumptions">Assumptions and limits</h2><ul class="assumptions">'
                 + "".join(f"<li>{_esc(t)}</li>" for t in ASSUMPTIONS) + "</ul>")
    from rmqlab import __version__

    parts.append(f"<footer>rmqlab {__version__} · {a.samples:,} Monte Carlo samples, seed {a.seed} · "
                 "the model's equations: rmqlab/capacity/README.md</footer></main></body></html>")
    return "\n".join(parts)


def write_report(plan: Plan | PlanAnalysis, path: str | os.PathLike, *, samples: int = 2000,
                 seed: int | None = None, whole_files: bool = False) -> Path:
    """:func:`render_report` written to `path` (UTF-8); returns the path."""
    out = Path(path)
    out.write_text(render_report(plan, samples=samples, seed=seed, whole_files=whole_files), encoding="utf-8")
    return out


# ------------------------------------------------------------------------------ the widget

#: The explorer's sliders: dotted plan field -> (label, min, max, step, int?, readout format: a
#: d3-format string, with thousands separators as rmqlab.tables.display writes counts).
EXPLORER_INPUTS: dict[str, tuple[str, float, float, float, bool, str]] = {
    "traffic.messages_per_second": ("messages/s", 10, 50_000, 10, False, ",.0f"),
    "keys.keys_per_message": ("keys/message", 1, 8, 0.1, False, ".1f"),
    "retention.file_reserved_time_hours": ("retention h", 1, 720, 1, False, ",.0f"),
    "index.hash_slot_num": ("hash slots", 100_000, 20_000_000, 100_000, True, ",d"),
    "index.index_num": ("index entries", 1_000_000, 80_000_000, 1_000_000, True, ",d"),
}


class PlanExplorer:
    """Sliders for the main inputs of a plan (rate, keys per message, retention, hash_slot_num,
    index_num); each change re-runs :func:`estimate` on ``plan.replace({field: value})`` (a
    slider sets its field to one value, no interval) and redraws the results table, the disk
    usage and the load-factor charts. An invalid combination (index_num below hash_slot_num)
    shows the PlanError's message instead. Cost per change: one estimate (about 0.3 s with the
    fast, scaled-down key sample; ``whole_files=True`` hashes whole full-size files, about 7
    CPU-seconds and 0.7 GB a change at the default geometry, as the command line does) plus drawing.

    ``explorer.set(**{"traffic.messages_per_second": 2000})`` moves sliders from code and
    ``explorer.reset()`` moves them back to the plan; :attr:`plan` and :attr:`estimate` are
    the current ones; :attr:`widget` is what a notebook shows.
    """

    def __init__(self, plan: Plan, *, sample: bool = True, whole_files: bool = False, dpi: int = 72):
        from rmqlab.capacity.plan import PlanError

        widgets = require("viz", "ipywidgets", "PlanExplorer")

        if not isinstance(plan, Plan):
            raise TypeError(f"plan must be a Plan, got {type(plan).__name__}")
        self._PlanError = PlanError
        self.base = plan
        self.plan = plan
        self._sample = sample
        self._whole_files = whole_files
        self._dpi = dpi
        self.error: str | None = None
        self.sliders: dict[str, Any] = {}
        for path, (label, lo, hi, step, integer, readout) in EXPLORER_INPUTS.items():
            value = self._value_of(plan, path)
            lo, hi = min(lo, value), max(hi, value)
            cls = widgets.IntSlider if integer else widgets.FloatSlider
            s = cls(value=int(value) if integer else value, min=lo, max=hi, step=step, description=label,
                    readout_format=readout, continuous_update=False, style={"description_width": "110px"},
                    layout=widgets.Layout(width="520px"))
            s.add_class("rmqlab-plan-" + path.replace(".", "-").replace("_", "-"))
            s.observe(self._on_change, names="value")
            self.sliders[path] = s
        self.status = widgets.HTML()
        self.table = widgets.HTML()
        self.disk_image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.load_image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.widget = widgets.VBox([widgets.VBox(list(self.sliders.values())), self.status, self.table,
                                    self.disk_image, self.load_image])
        self.widget.add_class("rmqlab-plan-explorer")
        self.estimate: Estimate | None = None
        self._update()

    @staticmethod
    def _value_of(plan: Plan, path: str) -> float:
        sec, key = path.split(".")
        v = getattr(getattr(plan, sec), key)
        return v.likely if isinstance(v, Interval) else v

    def changes(self) -> dict[str, Any]:
        """The slider values as ``Plan.replace`` changes (only those differing from the base)."""
        out = {}
        for path, s in self.sliders.items():
            if s.value != self._value_of(self.base, path):
                out[path] = s.value
        return out

    def set(self, changes: Mapping[str, Any] | None = None, **plain: Any) -> None:
        """Move sliders (by dotted field) and update once."""
        self._hold = True
        try:
            for path, value in {**(changes or {}), **plain}.items():
                if path not in self.sliders:
                    raise ValueError(f"no slider for {path!r}; sliders: {', '.join(self.sliders)}")
                self.sliders[path].value = value
        finally:
            self._hold = False
        self._update()

    def reset(self) -> None:
        """Every slider back to the plan it was made with (its likely values), and update once:
        what a notebook leaves on show after trying other values from code."""
        self.set({path: self._value_of(self.base, path) for path in self.sliders})

    def _on_change(self, _change) -> None:
        if not getattr(self, "_hold", False):
            self._update()

    def _update(self) -> None:
        from rmqlab.viz.capacity import load_factor_figure
        from rmqlab.viz.widgetkit import figure_png

        try:
            plan = self.base.replace(self.changes())
        except self._PlanError as e:
            self.error = str(e)
            self.status.value = f'<div class="rmqlab-error" style="color:#b00020">{_esc(e)}</div>'
            return
        self.error = None
        self.status.value = ""
        self.plan = plan
        self.estimate = estimate(plan, sample=self._sample, whole_files=self._whole_files)
        e = self.estimate.as_dict()
        rows = [(label, format_value(e[name], kind)) for name, label, kind in RESULT_ROWS]
        self.table.value = _table_box(_table(["output", "likely"], rows, css_class="rmqlab-plan-results"))
        analysis = PlanAnalysis(plan=plan, samples=0, seed=plan.seed, estimate=self.estimate,
                                monte_carlo=pd.DataFrame(), configurations=(), recommendation=
                                Recommendation("", True, ""), kafka_record_bytes=0, kafka=None)
        self.disk_image.value = figure_png(_disk_figure(analysis), dpi=self._dpi)
        self.load_image.value = figure_png(load_factor_figure(plan.index.hash_slot_num, plan.index.index_num),
                                           dpi=self._dpi)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
