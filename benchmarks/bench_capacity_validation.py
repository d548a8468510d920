"""Capacity model validation at full size: every scenario of rmqlab.capacity.validation built
with the broker's own file sizes (5,000,000 slots and 20,000,000 entries an index file, 1 GiB
CommitLog files, 300,000-unit ConsumeQueue files), measured, and compared with the model.

Each store is written to a temporary folder (``--dir``; it needs up to ~9 GiB free) and deleted
after its scenario. The hit walks cover every distinct key of each file (about 20 s for the
18,000,000 keys of a full file: a sample of keys misjudges their heavy-tailed mean), the miss
walks every slot.

Run from this folder:  python bench_capacity_validation.py [--size full|small] [--scenario NAME ...]
                       [--record]

``--record`` appends the table to benchmarks/RESULTS.md with the date and the machine.
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import time
from pathlib import Path

from common import machine, publish

from rmqlab.capacity.validation import SCENARIO_NAMES, SCENARIOS, SIZES, summary, validate

HERE = Path(__file__).resolve().parent


def fmt(x) -> str:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    if float(x).is_integer() and abs(x) >= 1:
        return f"{int(x):,}"
    return f"{x:.4g}"


def markdown(df, seconds: dict[str, float], size: str) -> list[str]:
    lines = ["| scenario | kind | quantity | model | measured | difference | tolerance | ok |",
             "|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        lines.append(f"| {r.scenario} | {r.kind} | {r.quantity} ({r.unit}) | {fmt(r.model)} | {fmt(r.measured)} | "
                     f"{fmt(r.difference)} | {r.tolerance} | {'yes' if r.ok else '**NO**'} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=SIZES, default="full")
    ap.add_argument("--scenario", nargs="*", default=list(SCENARIO_NAMES), choices=SCENARIO_NAMES)
    ap.add_argument("--dir", default=None, help="where the temporary stores go")
    ap.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args()

    import pandas as pd

    load_before = os.getloadavg()[0]
    frames, seconds, notes = [], {}, []
    for name in args.scenario:
        t0 = time.perf_counter()
        df = validate(name, size=args.size, directory=args.dir)
        seconds[name] = time.perf_counter() - t0
        m = df.attrs["measured"]
        w, opts = SCENARIOS[name].variant(args.size)
        notes.append(f"- {name}: {SCENARIOS[name].description}; {m['messages']:,} messages, "
                     f"{m['index_keys']:,} index keys, {m['index_files']} index files "
                     f"({m['full_index_files']} full), {opts['hash_slot_num']:,} slots x "
                     f"{opts['index_num']:,} entries; {seconds[name]:.0f} s")
        print(df.drop(columns=["note"]).to_string(), flush=True)
        frames.append(df)
    table = pd.concat(frames, ignore_index=True)
    chosen = "" if args.scenario == list(SCENARIO_NAMES) else " --scenario " + " ".join(args.scenario)
    lines = [f"## {dt.date.today().isoformat()}: capacity model validation, {args.size} stores",
             "", f"Machine: {machine()}. Load average (1 min): {load_before:.1f} at the start, "
             f"{os.getloadavg()[0]:.1f} at the end (the machine's other jobs; the times are wall clock).",
             f"Command: `python benchmarks/bench_capacity_validation.py --size {args.size}{chosen}`.", "",
             *notes, "", *markdown(table, seconds, args.size), "", f"{summary(table)}."]
    text = "\n".join(lines)
    publish(text, args.record)


if __name__ == "__main__":
    main()
