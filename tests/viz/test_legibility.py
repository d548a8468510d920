"""Every figure the package draws is legible as the notebooks show it (the rule in
``tests/support/legibility.py``): no text under 9 px on screen, none outside its figure, its axes
or the box it labels, no two texts on one another, no legend over data.

Each figure function of :mod:`rmqlab.viz` is drawn with the inputs a notebook gives it, at the
dpi and in the page column it is shown in (:data:`SHOWN`). A figure function missing from
:data:`CASES` fails :func:`test_every_figure_function_has_a_case`, so a new figure cannot escape
the rule. Each case prints its row (smallest text in px, overlaps, clippings, legend hits,
small texts); with ``RMQLAB_LEGIBILITY_TABLE=<file>`` in the environment the rows are also
appended to that file. The checker itself is shown to fail on a figure made badly on purpose.
"""
from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
from functools import cached_property
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from legibility import HEADER, Shown, check, table_index_shown  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

import rmqlab.viz  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "golden"

#: How the notebooks show figures: inline at the figure's dpi (100) in a column of about 1100 px
#: that shrinks wider pictures; widgets' Image at 80 dpi (shrunk likewise); the buildIndex
#: stepper at 96 dpi; walk diagrams in a box that scrolls, at 110 dpi (never shrunk); the
#: capacity report's pictures at 96 dpi.
INLINE = Shown(100)
WIDGET = Shown(80)
STEPPER = Shown(96)
SCROLLING = Shown(110, None)
REPORT = Shown(96)


class Inputs:
    """The notebooks' inputs to the figures, each made once a module (on first use)."""

    def __init__(self, scratch: Path):
        self.scratch = scratch

    def folder(self, name: str) -> Path:
        path = self.scratch / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    @cached_property
    def store(self):
        from rmqlab.lab.sample import sample_store

        return sample_store()

    @cached_property
    def messages(self):
        return self.store.messages()

    @cached_property
    def occurrences(self):
        from rmqlab.analysis.keys import key_occurrences

        return key_occurrences(self.messages)

    @cached_property
    def index_paths(self):
        from rmqlab.analysis.indexstats import index_file_paths

        return index_file_paths(self.store.index_dir)

    @property
    def geometry(self) -> dict:
        from rmqlab.lab.sample import SAMPLE_STORE_OPTIONS

        return {"hash_slot_num": SAMPLE_STORE_OPTIONS["hash_slot_num"], "index_num": SAMPLE_STORE_OPTIONS["index_num"]}

    @cached_property
    def analysis(self):
        import tomllib

        from rmqlab.capacity import EXAMPLE_PLAN_TOML, parse_plan
        from rmqlab.capacity.analysis import analyse_plan

        return analyse_plan(parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML)), samples=500)

    @cached_property
    def side_by_side(self):
        from rmqlab.analysis.compare import build_side_by_side, comparison_workload

        return build_side_by_side(self.folder("sbs"), comparison_workload(100_000, seed=7, rate=1000.0),
                                  commitlog_file_size=64 * 1024 * 1024, hash_slot_num=25_000, index_num=100_000,
                                  segment_bytes=8 * 1024 * 1024, segment_index_bytes=10 * 1024 * 1024,
                                  index_interval_bytes=4096)

    @cached_property
    def build_steps(self):
        from rmqlab.analysis.buildsteps import trace_build_index
        from rmqlab.analysis.storeflow import store_flow
        from rmqlab.lab.sample import SAMPLE_STORE_OPTIONS
        from rmqlab.store.indexservice import DispatchRequest, IndexService

        followed = store_flow(self.store).followed
        row = self.messages[self.messages["phy_offset"] == followed.phy_offset].iloc[0]
        request = DispatchRequest(row["topic"], int(row["phy_offset"]), int(row["store_timestamp"]), row["keys"],
                                  row["uniq_key"], int(row["sys_flag"]))
        import zoneinfo

        with IndexService(self.folder("buildindex"), hash_slot_num=SAMPLE_STORE_OPTIONS["hash_slot_num"],
                          index_num=3, read_only=False, tz=zoneinfo.ZoneInfo("UTC"), name_by_store_time=True) as svc:
            return trace_build_index(svc, request)

    @cached_property
    def story(self):
        from rmqlab.lab.crash import restart_story

        return restart_story(self.folder("crash"), kill_fraction=0.75)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Inputs:
    return Inputs(tmp_path_factory.mktemp("legibility"))


# --- the figures, one function a case: (figure, how it is shown) --------------------------------


def _annotated_hex_fill_5000(i: Inputs):
    from rmqlab.jvm.hashcode import index_hash
    from rmqlab.viz.hexview import annotated_hex_figure

    fill = json.loads((GOLDEN / "fill_5000" / "case.json").read_text(encoding="utf-8"))
    raw = (GOLDEN / "fill_5000" / fill["fileName"]).read_bytes()
    m = fill["hashSlotNum"]
    stored = [p for p in fill["puts"] if p["result"]]
    from rmqlab.jvm.hashcode import java_hash

    _, put = next((k, p) for k, p in enumerate(stored, start=1) if java_hash(p["key"]) < 0 and k > 1000)
    slot = index_hash(put["key"]) % m
    chain = [int.from_bytes(raw[40 + 4 * slot:44 + 4 * slot], "big")]
    while chain[-1]:
        e = 40 + 4 * m + 20 * chain[-1]
        chain.append(int.from_bytes(raw[e + 16:e + 20], "big", signed=True))
    return annotated_hex_figure(GOLDEN / "fill_5000" / fill["fileName"], slots=[slot], entries=chain[:-1][:6],
                                hash_slot_num=m, index_num=fill["indexNum"]), INLINE


def _annotated_hex_whole_file(i: Inputs):
    from rmqlab.viz.hexview import annotated_hex_figure
    from rmqlab.viz.stepper import InsertionStepper

    filled = InsertionStepper([f"order-{k}" for k in range(8)], hash_slot_num=4, index_num=8)
    for _ in range(8):
        filled.step()
    fig = annotated_hex_figure(filled.path, slots=range(4), entries=range(8), hash_slot_num=4, index_num=8)
    filled.close()
    return fig, INLINE


def _fields_hex_record(i: Inputs):
    from rmqlab.viz.hexview import fields_hex_figure, record_hex_fields

    first_file = sorted(i.store.commitlog_dir.iterdir())[0]
    return fields_hex_figure(record_hex_fields(first_file, 0)), INLINE


def _fields_hex_kafka_index(i: Inputs):
    from rmqlab.kafka.index import segment_file_name
    from rmqlab.viz.hexview import fields_hex_figure, kafka_index_hex_fields

    kafka = i.side_by_side.kafka()
    second = kafka.segments[1]
    return fields_hex_figure(kafka_index_hex_fields(i.side_by_side.kafka_dir / segment_file_name(second, ".index"),
                                                    entries=range(3))), INLINE


def _query_walk_small(i: Inputs):
    from rmqlab.formats.indexfile import IndexFile
    from rmqlab.tables.times import utc_text_to_ms as ms
    from rmqlab.viz.walk import query_walk_figure

    with IndexFile.create(i.folder("walk") / "20240610095959800", 4, 8) as f:
        f.put_key("T#first", 0, ms("2024-06-10 09:59:59.800"))
        f.put_key("T#late", 200, ms("2024-06-10 10:00:00.500"))
        late = f.trace_query("T#late", 64, ms("2024-06-10 10:00:00.200"), ms("2024-06-10 10:01:00.200"))
    return query_walk_figure(late), INLINE


def _query_walk_sample(i: Inputs):
    from rmqlab.viz.walk import query_walk_figure

    q = i.store.explain_key("Orders", "USER_1")
    return query_walk_figure(q.trace, max_steps=12, unreached=q.unreached()), SCROLLING


def _walk_stops(i: Inputs):
    from rmqlab.analysis.walkrules import walk_stop_cases
    from rmqlab.viz.walk import walk_stops_figure

    return walk_stops_figure(walk_stop_cases(i.folder("stops"))), SCROLLING


def _key_timeline(i: Inputs):
    from rmqlab.analysis.keys import key_timeline
    from rmqlab.viz.explorer import key_timeline_figure

    ts = i.messages["store_timestamp"]       # notebook 05's explorer: the whole store's range
    q = i.store.explain_key("Orders", "USER_20", begin=int(ts.min()), end=int(ts.max()))
    with i.store.index() as idx:
        t = key_timeline(q, i.occurrences, idx.files)
    return key_timeline_figure(t, origin=int(i.messages["store_timestamp"].min())), WIDGET


def _chain_diagram(i: Inputs):
    from rmqlab.viz.stepper import InsertionStepper, chain_diagram, read_index_bytes

    filled = InsertionStepper([f"order-{k}" for k in range(8)], hash_slot_num=4, index_num=8)
    for _ in range(8):
        filled.step()
    header, slots, entries = read_index_bytes(filled.path, 4, 8)
    fig = chain_diagram(slots, entries, max(header["index_count"], 1), keys=filled._keys_by_entry,
                        highlight_entry=filled.history[-2]["entry"])
    filled.close()
    return fig, WIDGET


def _slot_occupancy(i: Inputs):
    from rmqlab.viz.figures import slot_occupancy_image

    return slot_occupancy_image(i.index_paths[0], **i.geometry), INLINE


def _slot_occupancy_browser(i: Inputs):
    from rmqlab.viz.figures import slot_occupancy_image

    return slot_occupancy_image(i.index_paths[0], figsize=(6.0, 4.8), **i.geometry), WIDGET


def _chain_histogram(i: Inputs):
    from rmqlab.viz.figures import chain_length_histogram_figure

    return chain_length_histogram_figure(i.index_paths[0], log=True, **i.geometry), INLINE


def _file_stats(i: Inputs):
    from rmqlab.analysis.indexstats import directory_stats
    from rmqlab.viz.figures import file_stats_figure

    return file_stats_figure(directory_stats(i.store.index_dir, **i.geometry)), INLINE


def _entries_over_time(i: Inputs):
    from rmqlab.analysis.clocksteps import clock_steps_back
    from rmqlab.viz.figures import entries_over_time

    return entries_over_time(i.store.index_dir, clock_steps=clock_steps_back(i.messages), **i.geometry), INLINE


def _stored_time_lag(i: Inputs):
    from rmqlab.analysis.keys import index_entries
    from rmqlab.viz.figures import stored_time_lag_figure

    with i.store.index() as idx:
        entries = index_entries(idx, i.messages)
    return stored_time_lag_figure(entries["lag_ms"]), INLINE


def _index_name_offsets(i: Inputs):
    from rmqlab.viz.figures import index_name_offsets_figure

    readings = ["sample name, read as UTC", "live name, read in Asia/Shanghai", "live name, read as UTC",
                "rebuilt-today name, read in Asia/Shanghai"]
    seconds = [0.0, 0.003, 28_800.003, 64_000_000.0]
    offsets = pd.DataFrame([{"reading": r, "file": f, "seconds": s + f} for r, s in zip(readings, seconds)
                            for f in range(10)])
    return index_name_offsets_figure(offsets), INLINE


def _load_factor(i: Inputs):
    from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM
    from rmqlab.viz.capacity import load_factor_figure

    return load_factor_figure(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM), INLINE


def _plan_explorer() -> Shown:
    """How the PlanExplorer widget shows its charts: at its default dpi, in the page column."""
    from rmqlab.viz.planexplorer import PlanExplorer

    return Shown(inspect.signature(PlanExplorer).parameters["dpi"].default)


def _load_factor_widget(i: Inputs):
    from rmqlab.viz.capacity import load_factor_figure

    plan = i.analysis.plan
    return load_factor_figure(plan.index.hash_slot_num, plan.index.index_num), _plan_explorer()


def _disk_usage(i: Inputs):
    from rmqlab.viz.capacityreport import _disk_figure

    return _disk_figure(i.analysis), REPORT


def _disk_usage_widget(i: Inputs):
    from rmqlab.viz.capacityreport import _disk_figure

    return _disk_figure(i.analysis), _plan_explorer()


def _disk_usage_widget_fast(i: Inputs):
    """The PlanExplorer's disk chart after notebook 06 moves the rate slider to 3,000 messages/s."""
    from rmqlab.capacity.analysis import PlanAnalysis, Recommendation
    from rmqlab.capacity.model import estimate
    from rmqlab.viz.capacityreport import _disk_figure

    plan = i.analysis.plan.replace({"traffic.messages_per_second": 3000.0})
    analysis = PlanAnalysis(plan=plan, samples=0, seed=plan.seed, estimate=estimate(plan), monte_carlo=pd.DataFrame(),
                            configurations=(), recommendation=Recommendation("", True, ""), kafka_record_bytes=0,
                            kafka=None)
    return _disk_figure(analysis), _plan_explorer()


def _disk_fan(i: Inputs):
    from rmqlab.viz.capacityreport import disk_fan_chart

    return disk_fan_chart(i.analysis), INLINE


def _spread(i: Inputs):
    from rmqlab.viz.capacityreport import spread_chart

    return spread_chart(i.analysis), INLINE


def _configurations(i: Inputs):
    from rmqlab.viz.capacityreport import configurations_figure

    return configurations_figure(i.analysis), INLINE


def _fill_time(i: Inputs):
    from rmqlab.viz.capacityreport import _fill_figure

    return _fill_figure(i.analysis), REPORT


def _chain_lengths_sampled(i: Inputs):
    from rmqlab.viz.capacityreport import chain_figure

    return chain_figure(i.analysis), REPORT


def _losses(i: Inputs):
    from rmqlab.viz.crash import losses_figure

    summary = pd.DataFrame({"trials": [20, 20, 20, 60], "lookups": [41_000, 39_500, 40_200, 120_700],
                            "lost_rmqlab": [0, 0, 0, 0], "lost_broker": [1_234, 0, 877, 2_111]},
                           index=["generate", "bulk", "dispatch", "total"])
    return losses_figure(summary), INLINE


def _restart(i: Inputs):
    from rmqlab.viz.crash import restart_figure

    return restart_figure(i.story), INLINE


def _sparse_index(i: Inputs):
    from rmqlab.viz.kafka import sparse_index_figure

    return sparse_index_figure(i.side_by_side.kafka(), 100_000 // 3), INLINE


def _index_bytes(i: Inputs):
    from rmqlab.analysis.compare import index_bytes_per_million
    from rmqlab.viz.kafka import index_bytes_figure

    return index_bytes_figure(index_bytes_per_million(i.side_by_side)), INLINE


def _lookup_cost(i: Inputs):
    from rmqlab.analysis.compare import lookup_cost_summary, lookup_costs
    from rmqlab.viz.kafka import lookup_cost_figure

    return lookup_cost_figure(lookup_cost_summary(lookup_costs(i.side_by_side, queries=200, seed=7))), INLINE


def _index_file_sizes(i: Inputs):
    from rmqlab.viz.kafka import index_file_sizes_figure

    sizes = pd.DataFrame({"file": ["00000000000000001000.index", "00000000000000001000.timeindex"],
                          "active_bytes": [10_485_760, 10_485_756], "entries": [3, 2], "trimmed_bytes": [24, 24]})
    return index_file_sizes_figure(sizes), INLINE


def _store_flow(i: Inputs):
    from rmqlab.analysis.storeflow import store_flow
    from rmqlab.viz.storeflow import store_flow_figure

    return store_flow_figure(store_flow(i.store)), INLINE


def _build_flow(i: Inputs):
    from rmqlab.viz.buildflow import build_flow_figure

    return build_flow_figure(i.build_steps, len(i.build_steps) - 1), INLINE


def _build_flow_stepper(i: Inputs):
    from rmqlab.viz.buildflow import build_flow_figure

    steps = i.build_steps
    start = next(k for k, s in enumerate(steps) if s.node == "new-file" and k > 3)
    return build_flow_figure(steps, start), STEPPER


def _dispatch_lag(i: Inputs):
    from rmqlab.lab.reputlag import measure_dispatch_lag
    from rmqlab.lab.workload import Workload
    from rmqlab.viz.storeflow import dispatch_lag_figure

    lag = measure_dispatch_lag(i.folder("lag"), Workload(messages=30_000, seed=3), chunk_messages=300,
                               chunks_per_second=100, hash_slot_num=1024, index_num=8192)
    return dispatch_lag_figure(lag), INLINE


def _tag_filter(i: Inputs):
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload
    from rmqlab.store.directory import Store
    from rmqlab.store.pull import pull_with_tags
    from rmqlab.viz.storeflow import tag_filter_figure

    root = i.folder("tags")
    generate_store(root, Workload(messages=3_000, seed=8, tags=("Aa", "BB", "TagA")), hash_slot_num=64,
                   index_num=1024)
    return tag_filter_figure(pull_with_tags(Store(root, hash_slot_num=64, index_num=1024), "TopicTest", 0,
                                            "Aa")), INLINE


def _timer_wheel(i: Inputs):
    from rmqlab.analysis.timerwheel import wheel_profile
    from rmqlab.lab.brokerstores import broker_store, broker_store_options
    from rmqlab.store.directory import Store
    from rmqlab.viz.timerwheel import timer_wheel_figure

    root = broker_store("5.3.3")
    if root is None or not (root / "timerwheel").is_file():
        pytest.skip("no RocketMQ 5.3.3 store with a timer wheel (make brokers)")
    return timer_wheel_figure(wheel_profile(Store(root, **broker_store_options(root)))), INLINE


def _timer_hex(i: Inputs):
    from rmqlab.lab.brokerstores import broker_store
    from rmqlab.viz.hexview import fields_hex_figure, timer_hex_fields

    root = broker_store("5.3.3")
    if root is None or not (root / "timerlog").is_dir():
        pytest.skip("no RocketMQ 5.3.3 store with a timer log (make brokers)")
    log_file = sorted((root / "timerlog").iterdir())[0]
    return fields_hex_figure(timer_hex_fields(log_file, units=[0, 1]),
                             title="the first two units of the timer log"), INLINE


#: Every figure function of rmqlab.viz ("module.function") and the cases that draw it.
CASES = {
    "hexview.annotated_hex_figure": [_annotated_hex_fill_5000, _annotated_hex_whole_file],
    "hexview.fields_hex_figure": [_fields_hex_record, _fields_hex_kafka_index, _timer_hex],
    "walk.query_walk_figure": [_query_walk_small, _query_walk_sample],
    "walk.walk_stops_figure": [_walk_stops],
    "explorer.key_timeline_figure": [_key_timeline],
    "stepper.chain_diagram": [_chain_diagram],
    "figures.slot_occupancy_image": [_slot_occupancy, _slot_occupancy_browser],
    "figures.chain_length_histogram_figure": [_chain_histogram],
    "figures.file_stats_figure": [_file_stats],
    "figures.entries_over_time": [_entries_over_time],
    "figures.stored_time_lag_figure": [_stored_time_lag],
    "figures.index_name_offsets_figure": [_index_name_offsets],
    "capacity.load_factor_figure": [_load_factor, _load_factor_widget],
    "capacity.disk_usage_figure": [_disk_usage, _disk_usage_widget, _disk_usage_widget_fast],
    "capacity.disk_fan_figure": [_disk_fan],
    "capacity.percentile_ranges_figure": [_spread],
    "capacity.load_factor_comparison_figure": [_configurations],
    "capacity.index_fill_time_figure": [_fill_time],
    "capacity.sampled_chain_lengths_figure": [_chain_lengths_sampled],
    "capacityreport.disk_fan_chart": [_disk_fan],
    "capacityreport.spread_chart": [_spread],
    "capacityreport.configurations_figure": [_configurations],
    "capacityreport.chain_figure": [_chain_lengths_sampled],
    "crash.losses_figure": [_losses],
    "crash.restart_figure": [_restart],
    "kafka.sparse_index_figure": [_sparse_index],
    "kafka.index_bytes_figure": [_index_bytes],
    "kafka.lookup_cost_figure": [_lookup_cost],
    "kafka.index_file_sizes_figure": [_index_file_sizes],
    "storeflow.store_flow_figure": [_store_flow],
    "storeflow.dispatch_lag_figure": [_dispatch_lag],
    "storeflow.tag_filter_figure": [_tag_filter],
    "buildflow.build_flow_figure": [_build_flow, _build_flow_stepper],
    "timerwheel.timer_wheel_figure": [_timer_wheel],
}

#: Each case once (a case can stand for several functions: a report chart and the figure it calls).
_UNIQUE = list(dict.fromkeys(case for cases in CASES.values() for case in cases))


def _figure_functions() -> set[str]:
    """Public functions of rmqlab.viz's modules that return a Figure (by annotation, or, without
    one, by a name ending in _figure, _chart, _image or _diagram), as "module.function"."""
    found = set()
    for info in pkgutil.iter_modules(rmqlab.viz.__path__):
        module = importlib.import_module(f"rmqlab.viz.{info.name}")
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            returns = inspect.signature(fn).return_annotation
            named = name.endswith(("_figure", "_chart", "_image", "_diagram"))
            if returns in (Figure, "Figure") or (returns is inspect.Signature.empty and named):
                found.add(f"{info.name}.{name}")
    return found


def test_every_figure_function_has_a_case():
    functions = _figure_functions()
    assert "storeflow.store_flow_figure" in functions and "capacityreport.disk_fan_chart" in functions
    assert functions - set(CASES) == set(), "figure functions without a legibility case"
    assert set(CASES) - functions == set(), "cases of functions that are gone"


@pytest.mark.parametrize("case", _UNIQUE, ids=[c.__name__.lstrip("_") for c in _UNIQUE])
def test_figure_is_legible(case, inputs):
    fig, shown = case(inputs)
    report = check(fig, shown)
    row = report.row(case.__name__.lstrip("_"))
    print(f"\n{HEADER}\n{row}")
    table = os.environ.get("RMQLAB_LEGIBILITY_TABLE")
    if table:
        with open(table, "a", encoding="utf-8") as out:
            out.write(row + "\n")
    assert report.ok, "\n".join(map(str, report.findings))


# --- the checker can fail ---------------------------------------------------------------------


def test_the_checker_names_every_kind_of_finding_on_a_bad_figure():
    fig = Figure(figsize=(4, 3), dpi=100)
    ax = fig.add_axes((0.1, 0.1, 0.8, 0.8))
    ax.plot([0, 1], [0.9, 0.9], label="a line under the legend")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper right")
    ax.text(0.2, 0.5, "tiny", fontsize=5)
    ax.text(0.2, 0.3, "first words", fontsize=10)
    ax.text(0.25, 0.3, "second words", fontsize=10)
    ax.add_patch(FancyBboxPatch((0.6, 0.1), 0.1, 0.1, boxstyle="square,pad=0"))
    ax.text(0.65, 0.15, "a label far wider than its box", ha="center", va="center", fontsize=10)
    fig.text(0.98, 0.5, "off the edge", fontsize=10)
    ax.add_patch(FancyBboxPatch((0.05, 0.75), 0.1, 0.1, boxstyle="square,pad=0"))
    ax.text(0.1, 0.75, "across an edge", fontsize=10, va="center")
    report = check(fig, Shown(100))
    rules = {f.rule for f in report.findings}
    assert rules >= {"small-text", "overlap", "legend-over-data", "outside-box", "outside-figure"}
    named = "\n".join(map(str, report.findings))
    assert "'tiny' is 6.9 px" in named
    assert "'first words' and 'second words'" in named
    assert "line 'a line under the legend'" in named
    assert "'a label far wider than its box' runs out of its box" in named
    assert "'off the edge' reaches past the figure's edge" in named
    assert "'across an edge' crosses the edge of a box" in named
    assert report.smallest_px == pytest.approx(5 * 100 / 72)


def test_the_checker_passes_a_plain_figure_and_scales_wide_ones_down():
    fig = Figure(figsize=(4, 3), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], label="rising")
    ax.set_xlabel("x")
    ax.legend(loc="upper left")
    assert check(fig, Shown(100)).ok
    wide = Figure(figsize=(22, 3), dpi=100)
    wide.text(0.5, 0.5, "10 points", fontsize=10)
    report = check(wide, Shown(100))           # 2200 px shown in 1100: half size
    assert report.smallest_px == pytest.approx(10 * 100 / 72 / 2) and report.count("small-text") == 1
    assert check(wide, Shown(100, None)).ok     # in a scrolling box: full size


def test_rotated_labels_overlap_only_when_their_rectangles_meet():
    fig = Figure(figsize=(4, 3), dpi=100)
    fig.text(0.3, 0.5, "a long rotated label", rotation=45, fontsize=10)
    fig.text(0.45, 0.5, "a long rotated label", rotation=45, fontsize=10)   # parallel, apart
    assert check(fig, Shown(100)).count("overlap") == 0
    fig.text(0.35, 0.5, "a crossing label", rotation=-45, fontsize=10)
    assert check(fig, Shown(100)).count("overlap") >= 1


def _tables() -> dict[str, str]:
    """The HTML of every kind of table the notebooks show."""
    from rmqlab.tables.display import format_frame
    from rmqlab.viz.capacityreport import NotebookTable
    from rmqlab.viz.widgetkit import frame_html

    frame = pd.DataFrame({"key": ["Orders#USER_1", "Orders#USER_2"], "phy_offset": [100, 200]})
    filtered = pd.concat([frame, frame]).iloc[[1, 3]]          # notebook 08's lost lookups: rows left by a filter
    return {"format_frame": format_frame(frame)._repr_html_(),
            "format_frame of filtered rows": format_frame(filtered)._repr_html_(),
            "format_frame of a Series": format_frame(pd.Series({"a": 1, "b": 2}, name="n"))._repr_html_(),
            "widgetkit.frame_html": frame_html(frame),
            "NotebookTable": NotebookTable(frame.set_index("key"))._repr_html_()}


@pytest.mark.parametrize("name", list(_tables()))
def test_tables_show_no_row_numbers(name):
    html = _tables()[name]
    assert not table_index_shown(html)
    if name.startswith("format_frame"):
        assert "overflow-x:auto" in html          # scrolls sideways rather than being cut at the page's edge


def test_tables_keep_row_labels():
    from rmqlab.tables.display import format_frame

    table = pd.DataFrame({"RocketMQ": [1.5, 2.0]}, index=["bytes per million", "same message"])
    assert "<th>bytes per million</th>" in format_frame(table)._repr_html_()
    assert "<th>same message</th>" in format_frame(table.T).T._repr_html_()


def test_table_index_check_tells_a_range_index_from_row_labels():
    frame = pd.DataFrame({"a": [1, 2]})
    assert table_index_shown(frame.to_html())
    assert not table_index_shown(frame.to_html(index=False))
    assert not table_index_shown(frame.set_index(pd.Index(["x", "y"])).to_html())
    assert np.array_equal(frame["a"], [1, 2])
