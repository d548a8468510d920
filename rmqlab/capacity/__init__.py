"""Capacity planning for a RocketMQ store: how many index files a day, how much disk for the
index, ConsumeQueue and CommitLog under a retention policy, how long a key lookup walks, when a
hot key's query is cut by maxMsgsNumBatch, and when the disk fills.

Public API::

    plan = load_plan("plan.toml")          # or parse_plan(mapping); bad input -> PlanError(field)
    est = estimate(plan, point="likely")   # Estimate: frozen dataclass, units in the names
    est.as_dict()
    table = monte_carlo(plan, samples=2000, seed=None)   # p5 / p50 / p95 / mean per output
    chain_lengths_from_keys(keys, hash_slot_num, keys_in_file)   # real Java hash -> chains
    kafka_estimate(...)                    # the Kafka counterpart (rmqlab.kafka.sizing)

The analysis behind the report, the model run for every [[compare]] configuration with a
recommendation (:func:`rmqlab.capacity.analysis.analyse_plan`, its numbers as JSON
:func:`~rmqlab.capacity.analysis.report_json`), is :mod:`rmqlab.capacity.analysis`; the HTML
report and the notebook tables are drawn by :mod:`rmqlab.viz.capacityreport`, the sliders by
:class:`rmqlab.viz.planexplorer.PlanExplorer`.

The model's equations, units and derivations: rmqlab/capacity/README.md and the docstrings of
:mod:`rmqlab.capacity.model`.
"""
from rmqlab.capacity.model import (
    Estimate,
    OccupancySample,
    chain_lengths_from_keys,
    estimate,
    monte_carlo,
    sample_index_keys,
)
from rmqlab.capacity.plan import (
    EXAMPLE_PLAN_TOML,
    FIELDS,
    POINTS,
    Alternative,
    Interval,
    Plan,
    PlanError,
    load_plan,
    parse_plan,
    parse_size,
)
from rmqlab.kafka.sizing import KafkaConfig, KafkaEstimate, kafka_estimate

__all__ = [
    "EXAMPLE_PLAN_TOML",
    "FIELDS",
    "POINTS",
    "Alternative",
    "Interval",
    "Plan",
    "PlanError",
    "load_plan",
    "parse_plan",
    "parse_size",
    "Estimate",
    "OccupancySample",
    "chain_lengths_from_keys",
    "estimate",
    "monte_carlo",
    "sample_index_keys",
    "KafkaConfig",
    "KafkaEstimate",
    "kafka_estimate",
]
