"""`rmqlab capacity report|estimate|example`: size a broker from a plan (TOML).

``rmqlab capacity example > plan.toml`` prints a commented plan; ``rmqlab capacity estimate
plan.toml`` prints the model's outputs at the likely point; ``rmqlab capacity report plan.toml
--out report.html`` writes the self-contained HTML report (``--json``: its numbers on stdout).
Both hash whole full-size index files of keys shaped like the plan's for slot occupancy and
chains (every key of a full file, a configuration at a time, announced on stderr);
``--fast`` uses scaled-down files instead (a fixed-size sample; occupancy up to 6 % off for
workloads of sequential ids or few distinct keys, see rmqlab/capacity/README.md).
A bad plan exits with status 2 and the PlanError message, which starts with the field's dotted
path (``traffic.messages_per_second: must be > 0, got -5``), on stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from rmqlab.commands.defaults import PLAN_POINTS
from rmqlab.extras import require

if TYPE_CHECKING:
    from rmqlab.capacity.plan import PlanError

#: Exit status of a plan with bad input: a usage error, as argparse's.
BAD_PLAN = 2


def register(sub: argparse._SubParsersAction) -> None:
    cap = sub.add_parser("capacity", help="capacity planning: disk, index files, query cost from a plan (TOML)")
    csub = cap.add_subparsers(dest="capacity_command", required=True)

    p = csub.add_parser("report", help="write the HTML report of a plan (figures embedded); --json for machines")
    p.add_argument("plan", metavar="PLAN.toml")
    p.add_argument("--out", metavar="FILE.html", help="where to write the HTML report")
    p.add_argument("--samples", type=int, default=2000, metavar="N", help="Monte Carlo draws (default 2000)")
    p.add_argument("--seed", type=int, metavar="S", help="Monte Carlo seed (default: the plan's seed)")
    p.add_argument("--json", action="store_true", help="print the report's numbers as JSON to stdout")
    _fast_option(p)
    p.set_defaults(run=_report)

    p = csub.add_parser("estimate", help="the model's outputs for a plan at one point of its intervals")
    p.add_argument("plan", metavar="PLAN.toml")
    p.add_argument("--point", choices=PLAN_POINTS, default="likely",
                   help="every interval at this value (default likely)")
    p.add_argument("--json", action="store_true", help="print JSON to stdout")
    _fast_option(p)
    p.set_defaults(run=_estimate)

    p = csub.add_parser("example", help="print a commented example plan (every field, unit and RocketMQ name)")
    p.set_defaults(run=_example)


def _fast_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fast", action="store_true",
                   help="occupancy from scaled-down sample files (under 1 s) instead of whole full-size "
                        "files (about 7 CPU-seconds and 0.7 GB a configuration at the default geometry; "
                        "exact for any key shape)")


def _progress(line: str) -> None:
    print(f"rmqlab: {line}", file=sys.stderr, flush=True)


def _announce_whole_file(plan) -> None:
    from rmqlab.capacity.model import SAMPLE_ENTRIES

    if plan.geometry.capacity > SAMPLE_ENTRIES:
        _progress(f"hashing a whole index file of {plan.geometry.capacity:,} sampled keys "
                  f"(about 1 s a million; --fast for scaled-down files)")


def _bad_plan(e: PlanError) -> int:
    print(f"rmqlab: error: {e}", file=sys.stderr)
    return BAD_PLAN


def _report(args) -> int:
    from rmqlab.capacity.analysis import analyse_plan, report_json
    from rmqlab.capacity.plan import PlanError, load_plan

    if not args.out and not args.json:
        print("rmqlab: error: give --out FILE.html, --json, or both", file=sys.stderr)
        return BAD_PLAN
    if args.samples < 1:
        print(f"rmqlab: error: --samples must be >= 1, got {args.samples}", file=sys.stderr)
        return BAD_PLAN
    if args.out:
        # Before the analysis (up to minutes), not after it.
        require("viz", "matplotlib", "rmqlab capacity report --out")
        require("viz", "ipywidgets", "rmqlab capacity report --out")
        from rmqlab.viz.capacityreport import render_report
    try:
        plan = load_plan(args.plan)
    except PlanError as e:
        return _bad_plan(e)
    def keys_progress(step: int, done: int, todo: int) -> None:    # on a terminal only
        print(f"\r  {done / 1e6:,.1f} / {todo / 1e6:,.1f} M keys hashed", end="", file=sys.stderr, flush=True)
        if done >= todo:
            print(file=sys.stderr)

    analysis = analyse_plan(plan, samples=args.samples, seed=args.seed, whole_files=not args.fast,
                            progress=_progress, keys_progress=keys_progress if sys.stderr.isatty() else None)
    if args.out:
        text = render_report(analysis)
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.out} ({len(text.encode()):,} bytes). {analysis.recommendation.text}", file=sys.stderr)
    if args.json:
        print(json.dumps(report_json(analysis), indent=2, allow_nan=False))
    return 0


def _estimate(args) -> int:
    from rmqlab.capacity.analysis import json_number, output_kind
    from rmqlab.capacity.model import estimate
    from rmqlab.capacity.plan import PlanError, load_plan
    from rmqlab.tables.display import format_value

    try:
        plan = load_plan(args.plan)
    except PlanError as e:
        return _bad_plan(e)
    if not args.fast:
        _announce_whole_file(plan)
    e = estimate(plan, args.point, whole_files=not args.fast)
    values = e.as_dict()
    if args.json:
        print(json.dumps({"name": plan.name, "point": args.point,
                          "estimate": {k: json_number(v) for k, v in values.items()}},
                         indent=2, allow_nan=False))
        return 0
    width = max(len(k) for k in values)
    print(f"# {plan.name}: every interval at its {args.point} value")
    for name, value in values.items():
        shown = format_value(value, output_kind(name))
        print(f"{name:<{width}}  {shown}")
    return 0


def _example(args) -> int:
    from rmqlab.capacity.plan import EXAMPLE_PLAN_TOML

    sys.stdout.write(EXAMPLE_PLAN_TOML)
    return 0
