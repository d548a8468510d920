"""Workload benchmark: synthetic message columns, and the whole generate -> encode -> write path.

Measured, each as the best of --repeat runs after one warm-up run (the first run in a process
also pays page faults for fresh memory and pyarrow's lazy start-up, reported separately):

* **columns**: ``rmqlab.lab.workload.generate_chunks`` alone, all chunks materialised, for
  "small" messages (bodies median 100 bytes, clipped at 256; default keys, tags, UNIQ_KEY)
  and for a "features" mix (3 topics, 16 producers, a quarter of them IPv6, 1.5 keys a
  message, 5 % transactional, 5 % delayed, colliding keys);
* **generate -> encode -> write**: the same small workload through
  ``rmqlab.formats.commitlog.CommitLogWriter.append`` chunk by chunk into a fresh CommitLog
  folder (1 GiB files in the page cache, no fsync).

The written CommitLog is read back and checked against the generated columns (every topic,
queue offset, UNIQ_KEY and KEYS), so a fast wrong result cannot pass as a benchmark.
The process is pinned to one CPU (``--cpu``), so "messages/s" means on one core.

Run:  python benchmarks/bench_workload.py [--messages 2000000] [--cpu 0]
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from common import machine

import rmqlab
from rmqlab.lab.workload import BLOCK_MESSAGES, Workload, generate_chunks

SMALL = dict(rate=100_000.0, body_median=100, body_max=256)
FEATURES = dict(SMALL, producers=16, topics=("Orders", "Payments", "Audit"), ipv6_fraction=0.25,
                keys_per_message=1.5, transaction_fraction=0.05, delay_fraction=0.05,
                delay_levels=(1, 2, 3), collision_pairs=10)




def time_columns(w: Workload, chunk: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    rows = 0
    for t in generate_chunks(w, chunk):
        rows += t.num_rows
    return time.perf_counter() - t0, rows


def time_write(w: Workload, chunk: int, directory: str) -> tuple[float, int]:
    from rmqlab.formats.commitlog import CommitLogWriter

    shutil.rmtree(directory, ignore_errors=True)
    t0 = time.perf_counter()
    rows = 0
    with CommitLogWriter(directory) as cw:
        for t in generate_chunks(w, chunk):
            cw.append(t)
            rows += t.num_rows
    return time.perf_counter() - t0, rows


def verify(w: Workload, directory: str) -> None:
    from rmqlab.formats.commitlog import read_columns

    got = read_columns(directory, body=False)
    want = pa.concat_tables(generate_chunks(w, 1 << 20))
    assert len(got) == want.num_rows, (len(got), want.num_rows)
    for col in ("topic", "queue_offset", "uniq_key", "keys", "store_timestamp"):
        a = got[col].to_numpy()
        b = want.column(col).to_numpy(zero_copy_only=False)
        same = (a == b) | (pa.array(a, from_pandas=True).is_null().to_numpy(zero_copy_only=False)
                           & want.column(col).is_null().to_numpy(zero_copy_only=False))
        assert same.all(), f"column {col} differs at row {int(np.flatnonzero(~same)[0])}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=0, help="pin to this CPU (-1: do not pin)")
    ap.add_argument("--no-write", action="store_true", help="skip the encode + write path")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    ap.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args()
    printed = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, printed)):
        _run(args)
    if args.record:
        text = printed.getvalue().replace("# rmqlab.lab.workload benchmark",
                                          f"## {dt.date.today().isoformat()}: workload generator", 1)
        with open(Path(__file__).resolve().parent / "RESULTS.md", "a") as fh:
            fh.write("\n" + text.strip() + "\n")


class _Tee:
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for st in self.streams:
            st.write(text)

    def flush(self):
        for st in self.streams:
            st.flush()


def _run(args) -> None:
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    out = {"machine": machine(), "messages": args.messages, "chunk": args.chunk,
           "block": BLOCK_MESSAGES, "rmqlab": rmqlab.__version__}
    print(f"# rmqlab.lab.workload benchmark\n\nMachine: {out['machine']}; pinned to CPU {args.cpu}.\n")
    print("| measure | best time | rows | producer sends/s | rows/s | first (cold) run |")
    print("|---|---|---|---|---|---|")
    for name, kw in (("columns, small messages", SMALL), ("columns, features mix", FEATURES)):
        w = Workload(messages=args.messages, **kw)
        cold, rows = time_columns(w, args.chunk)
        best = min(time_columns(w, args.chunk)[0] for _ in range(args.repeat))
        out[name] = {"seconds": best, "rows": rows, "sends_per_s": args.messages / best,
                     "rows_per_s": rows / best, "cold_seconds": cold}
        print(f"| {name} | {best:.3f} s | {rows:,} | {args.messages / best:,.0f} | {rows / best:,.0f} "
              f"| {cold:.3f} s |")
    if not args.no_write:
        w = Workload(messages=args.messages, **SMALL)
        d = tempfile.mkdtemp(prefix="rmqlab-bench-commitlog-")
        try:
            cold, rows = time_write(w, args.chunk, d)
            best = min(time_write(w, args.chunk, d)[0] for _ in range(args.repeat))
            size = sum(f.stat().st_size for f in os.scandir(d))
            verify(w, d)
            out["generate -> encode -> write"] = {"seconds": best, "rows": rows,
                                                  "sends_per_s": args.messages / best,
                                                  "file_bytes": size, "cold_seconds": cold}
            print(f"| generate -> encode -> write (small) | {best:.3f} s | {rows:,} | "
                  f"{args.messages / best:,.0f} | {rows / best:,.0f} | {cold:.3f} s |")
            print(f"\nCommitLog written: {size / 2**20:,.0f} MiB in {len(os.listdir(d))} file(s); "
                  "read back and checked (topic, queue_offset, uniq_key, keys, store_timestamp).")
        finally:
            shutil.rmtree(d, ignore_errors=True)
    print("\nTargets: columns well above 1,000,000 messages/s; the whole path 500,000 messages/s.")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
