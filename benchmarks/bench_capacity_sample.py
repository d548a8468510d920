"""Whole-file key sample of the capacity model: time and peak memory of
``sample_occupancy(plan, whole_files=True)`` at the broker's default geometry (5,000,000 slots,
19,999,999 keys a file), for one and two files, each in a fresh process (its peak resident set
from wait4, as ``/usr/bin/time -v`` reports it), beside a process that only imports the package.

The keys stream through (made, hashed and dropped a chunk of messages at a time), so the peak
should not grow with the number of files. Checks: each file holds 19,999,999 keys, and the first
of two files is the one file of the first run (the same stream start, the same occupancy).

Run from this folder:  python bench_capacity_sample.py [--files 1 2] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time

from common import machine, publish

CHILD = """
import json, sys
from rmqlab.capacity.plan import parse_plan
from rmqlab.capacity.model import sample_occupancy
files = int(sys.argv[1])
if files:
    s = sample_occupancy(parse_plan({}), whole_files=True, files=files)
    print(json.dumps({"files": s.files, "entries": s.entries, "occupancy_files": list(s.occupancy_files),
                      "entries_read_hit": s.entries_read_hit}))
else:
    print(json.dumps({}))
"""


def run(files: int) -> dict:
    """One fresh process: its answer, wall and CPU seconds and peak RSS (bytes)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(files)], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"the child for {files} file(s) failed with status {status}")
    return {"answer": json.loads(out), "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "peak": usage.ru_maxrss * 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args()

    rows = [("imports only", os.getloadavg()[0], run(0))]
    for files in args.files:
        rows.append((f"{files} whole file{'s' if files > 1 else ''}", os.getloadavg()[0], run(files)))
    answers = {files: r["answer"] for files, (_, _, r) in zip(args.files, rows[1:])}
    for files, a in answers.items():
        assert a["files"] == files and a["entries"] == 19_999_999, a
    if 1 in answers:
        for a in answers.values():
            assert a["occupancy_files"][0] == answers[1]["occupancy_files"][0], "the stream must start alike"
    base = rows[0][2]["peak"]
    lines = [f"## {dt.date.today().isoformat()}: capacity key sample, whole files at the default geometry",
             "", f"Machine: {machine()}.",
             f"Command: `python benchmarks/bench_capacity_sample.py --files {' '.join(map(str, args.files))}`. "
             "Each run is a fresh process; peak RSS from wait4 (as `/usr/bin/time -v` reports it).", "",
             "| run | load average (1 min) at its start | wall | CPU | peak RSS | above the imports |",
             "|---|---|---|---|---|---|"]
    for name, load, r in rows:
        lines.append(f"| {name} | {load:.1f} | {r['wall']:.1f} s | {r['cpu']:.1f} s | {r['peak'] / 1e9:.2f} GB | "
                     f"{(r['peak'] - base) / 1e9:.2f} GB |")
    lines += ["", "Answers checked: 19,999,999 keys a file; the first of two files is the one file of "
              "the first run."]
    publish("\n".join(lines), args.record)


if __name__ == "__main__":
    main()
