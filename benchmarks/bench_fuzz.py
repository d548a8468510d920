"""The fuzz properties of tests/test_fuzz.py with a much larger budget.

    .venv/bin/python benchmarks/bench_fuzz.py [--inputs N] [--formats a,b,...] [--seed S]
                                              [--every] [--record]

For each format (IndexFile, ConsumeQueue, CommitLog, one CommitLog message, checkpoint, Kafka
.index, .timeindex, .log, message ids), N mutated inputs (default 200,000) through every
reader: an RmqlabError (or a documented ValueError) is the only acceptable failure, every input
must finish within the timeout, walks stay bounded and the tracemalloc peak of every 8th input
stays within the format's bound. Unlike the test, failures are collected rather than raised:
the table counts them and the first few are printed with their replay line
(``fuzz_support.replay(...)``).

``--every`` runs every optional query group and the pandas-building calls on every input (the
test runs them on a deterministic share); it is about 3-5x slower. No hypothesis here: the
inputs are swarms of seeded random mutation programs (the same generator the test uses), so a
run is reproducible from --seed.

Prints a markdown table: format, inputs, seconds, inputs/s, reader calls, typed errors,
failures. With --record the table (with the machine) is appended to RESULTS.md.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import fuzz_support as fs  # noqa: E402
from common import machine, publish  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=int(os.environ.get("RMQLAB_FUZZ_EXAMPLES", 200_000)),
                    help="inputs per format (default 200,000)")
    ap.add_argument("--formats", default=",".join(fs.TARGETS), help="comma-separated: " + ", ".join(fs.TARGETS))
    ap.add_argument("--seed", type=int, default=10_000, help="first swarm seed (the test uses others)")
    ap.add_argument("--every", action="store_true", help="every reader call on every input")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds allowed per input")
    ap.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    args = ap.parse_args()
    names = [n.strip() for n in args.formats.split(",") if n.strip()]
    unknown = [n for n in names if n not in fs.TARGETS]
    if unknown:
        ap.error(f"unknown format(s) {unknown}; known: {', '.join(fs.TARGETS)}")

    rows, failures = [], []
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"bench-fuzz-{name}-") as d:
            rt = fs.run_budget(name, args.inputs, d, seed=args.seed, fail_fast=False, timeout=args.timeout,
                               everything=args.every, heavy_every=1 if args.every else None, mem_every=8)
        rows.append((name, rt.inputs, rt.elapsed, rt.calls, rt.typed_errors + rt.allowed_errors,
                     len(rt.failures), rt.max_peak))
        failures += rt.failures[:3]
        print(f"{name}: {rt.inputs} inputs in {rt.elapsed:.1f} s, {len(rt.failures)} failures", file=sys.stderr,
              flush=True)

    mode = "every call on every input" if args.every else "the test's call mix"
    lines = [f"## Fuzzing, {args.inputs:,} inputs per format ({mode}), "
             f"{_dt.date.today().isoformat()}", "", f"Machine: {machine()}", "",
             "| format | inputs | seconds | inputs/s | reader calls | typed errors | failures | max tracemalloc peak |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, n, secs, calls, typed, bad, peak in rows:
        lines.append(f"| {name} | {n:,} | {secs:.1f} | {n / secs:,.0f} | {calls:,} | {typed:,} | {bad} | "
                     f"{peak:,} B |")
    total_bad = sum(r[5] for r in rows)
    lines += ["", f"Failures: {total_bad}."]
    publish("\n".join(lines) + "\n", args.record)
    for f in failures:
        print("\n" + str(f))
    sys.exit(1 if total_bad else 0)


if __name__ == "__main__":
    main()
