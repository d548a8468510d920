"""The analysis of a capacity plan: the model run once per index configuration (the plan's and
each [[compare]] alternative), Monte Carlo percentiles, a computed recommendation, the Kafka
counterpart, and what is derived from them: the disk over days (at the likely inputs and as
a Monte Carlo fan), the spread of the outputs, the configurations compared as text, the
findings, and the report's numbers as a JSON-ready dict (:func:`report_json`).

:func:`analyse_plan` makes a :class:`PlanAnalysis`; pass it instead of a plan to every
function that takes one, so that one run gives every form. Nothing here draws or writes HTML:
the report's page, figures and notebook tables are :mod:`rmqlab.viz.capacityreport`, the
sliders :class:`rmqlab.viz.planexplorer.PlanExplorer`.

>>> from rmqlab.capacity import parse_plan
>>> a = analyse_plan(parse_plan({"traffic": {"messages_per_second": 50}}), samples=200)
>>> a.recommendation.configuration, a.configurations[0].fits
('this plan', True)
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.capacity.model import Estimate, draw_percentiles, estimate, monte_carlo_draws
from rmqlab.capacity.plan import Plan
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
    "as_analysis",
    "recommend",
    "report_json",
    "findings",
    "kafka_side_by_side",
    "CONFIGURATION_COLUMNS",
    "configurations_frame",
    "HEADLINE_OUTPUTS",
    "output_kind",
    "json_number",
    "disk_over_days",
    "disk_fan",
    "spread_rows",
    "SPREAD_OUTPUTS",
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
    if name.endswith(("_bytes", "_bytes_per_day")):
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


def _configuration(plan: Plan, name: str, is_plan: bool, samples: int, seed: int, whole_files: bool,
                   keys_progress: Callable[[int, int], None] | None = None
                   ) -> tuple[ConfigurationResult, Estimate, pd.DataFrame]:
    e = estimate(plan, whole_files=whole_files, keys_progress=keys_progress)
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
    return format_value(x, "amount")


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
                 whole_files: bool = False, progress: Callable[[str], None] | None = None,
                 keys_progress: Callable[[int, int, int], None] | None = None) -> PlanAnalysis:
    """Run the model for the plan and for each [[compare]] alternative (the plan with that
    alternative's hash_slot_num, index_num and max_msgs_num_batch): a likely estimate with the
    real-hash key sample and `samples` Monte Carlo draws each (`seed` None: the plan's seed),
    then :func:`recommend`. `whole_files`: the key sample hashes whole full-size files
    (:func:`~rmqlab.capacity.model.sample_occupancy`; what ``rmqlab capacity report`` does
    unless ``--fast``). `progress` is called with a line before each configuration, and
    `keys_progress` with (configuration number from 1, keys hashed, keys to hash) as its key
    sample streams (the long part: seconds a configuration with whole files). Cost:
    O(configurations x (key sample + samples)): per configuration one key sample, at most
    :data:`~rmqlab.capacity.model.SAMPLE_ENTRIES` keys hashed, or with `whole_files` the
    index_num - 1 keys of a whole full-size file (more for bigger files; the keys stream through,
    so memory is one chunk of keys plus O(index_num) for one file's hashes), and `samples`
    Monte Carlo draws.
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

    def keys_of(i: int) -> Callable[[int, int], None] | None:
        return None if keys_progress is None else lambda done, todo: keys_progress(i, done, todo)

    announce(1, "this plan", plan)
    own, e, draws = _configuration(plan, "this plan", True, int(samples), seed, whole_files, keys_of(1))
    configs = [own]
    for i, alt in enumerate(plan.compare, start=2):
        other = plan.replace({"index.hash_slot_num": alt.hash_slot_num, "index.index_num": alt.index_num,
                              "index.max_msgs_num_batch": alt.max_msgs_num_batch})
        announce(i, alt.name, other)
        configs.append(_configuration(other, alt.name, False, int(samples), seed, whole_files, keys_of(i))[0])
    record = _kafka_record_bytes(plan)
    kafka = kafka_estimate(float(plan.traffic.messages_per_second.likely), record_bytes=record)
    return PlanAnalysis(plan=plan, samples=int(samples), seed=seed, estimate=e, monte_carlo=draw_percentiles(draws),
                        configurations=tuple(configs), recommendation=recommend(configs, plan),
                        kafka_record_bytes=record, kafka=kafka, draws=draws)


def as_analysis(plan_or_analysis: Plan | PlanAnalysis, *, samples: int = 2000, seed: int | None = None,
                whole_files: bool = False) -> PlanAnalysis:
    """`plan_or_analysis` itself when it is a :class:`PlanAnalysis` (the other arguments are
    then ignored), else :func:`analyse_plan` of it: what every function that takes a plan or its
    analysis starts with. Cost: O(1), or :func:`analyse_plan`'s."""
    if isinstance(plan_or_analysis, PlanAnalysis):
        return plan_or_analysis
    return analyse_plan(plan_or_analysis, samples=samples, seed=seed, whole_files=whole_files)


# ------------------------------------------------------------------------------ Kafka side


def kafka_side_by_side(a: PlanAnalysis) -> list[tuple[str, str, str]]:
    """(quantity, RocketMQ, Kafka) rows at the likely rate, the numbers through
    :func:`rmqlab.tables.display.format_value`: the report's Kafka table. Cost: O(1)."""
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
    a = as_analysis(plan, samples=samples, seed=seed, whole_files=whole_files)
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


# ------------------------------------------------------------------------------ disk over days


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
    Cost: O(draws x days) per percentile.

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


# ------------------------------------------------------------------------------ the outputs' spread

#: The outputs :func:`rmqlab.viz.capacityreport.spread_chart` draws, in order: (name of
#: :data:`RESULT_ROWS`, short label).
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
    """The rows of :func:`rmqlab.viz.capacityreport.spread_chart`: (label, p5, p50, p95, likely,
    "p5 – p95") for each of :data:`SPREAD_OUTPUTS` whose numbers are finite and positive (a
    threshold some draws never reach has no spread to draw), the text through
    :func:`rmqlab.tables.display.format_value`. Cost: O(outputs)."""
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


# ------------------------------------------------------------------------------ the configurations compared

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
    :func:`rmqlab.viz.capacityreport.configurations_table` (the same, turned on its side).
    Cost: O(configurations).

    >>> from rmqlab.capacity import parse_plan
    >>> f = configurations_frame(analyse_plan(parse_plan({"traffic": {"messages_per_second": 50}}), samples=50))
    >>> f.loc["this plan", "slots"], f.loc["this plan", "fits"], f.loc["this plan", "file"]
    ('5,000,000', 'yes', '400.54 MiB')
    """
    rows = {c.name: [format_value(getattr(c, field_), kind) for field_, _, _, kind in CONFIGURATION_COLUMNS]
            for c in a.configurations}
    return pd.DataFrame.from_dict(rows, orient="index", columns=[h for _, h, _, _ in CONFIGURATION_COLUMNS])


# ------------------------------------------------------------------------------ headlines and findings

#: The outputs a notebook shows first (names of :data:`RESULT_ROWS`); the report shows them all.
HEADLINE_OUTPUTS: tuple[str, ...] = (
    "index_keys_per_day", "index_files_per_day", "hours_to_fill_index_file", "index_files_on_disk",
    "index_disk_bytes", "total_disk_bytes", "disk_used_ratio", "occupancy", "entries_read_hit",
    "entries_read_miss", "hot_key_truncation_probability", "days_to_disk_max_used_space_ratio",
)


def findings(a: PlanAnalysis) -> list[str]:
    """The report's findings, a sentence each: index files a day and the time one fills, the
    store on disk and its parts, when diskMaxUsedSpaceRatio is reached, and the entries a key
    lookup reads with the hot key's chance of being cut. Cost: O(1)."""
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
