"""``rmqlab verify --jobs N`` and ``rmqlab spark verify``: wall time with 1 and more processes, and
with Spark (local[N], a standalone cluster), on a generated store, one fresh process a run, and
the scaling per added core.

The store: --messages messages (default 2,000,000) of bench_scaling.py's workload (4 topics, body
median 100 B), dispatched (ConsumeQueue, index files, checkpoint), CommitLog files of
--commitlog-file-size bytes (default 64 MiB, so the CommitLog is several files: the unit of work
a worker takes), built once in --work (a temporary directory by default; not measured). Each
``--jobs`` value of --jobs-list (default 1,2) runs ``python -m rmqlab verify STORE --jobs N``
once to warm the page cache (not counted), then --runs times, the values alternating; every run
must exit 0 and print the same report as ``--jobs 1`` (the identity the tests check, here on a
store of this size). The table gives the median and spread of the wall time, the median CPU
time (``getrusage`` of the children: the workers count once the fork server has reaped them),
messages a second, the speed-up over ``--jobs 1`` and the
scaling per core (speed-up / N: 1.0 is perfect). ``--spark local[2],standalone`` adds
``python -m rmqlab spark verify STORE --master M`` to the alternation: ``standalone`` is a cluster
of one master and two one-core workers on 127.0.0.1 (tests/support/spark_cluster.py), started
once before the runs and stopped by process id after them; a Spark run's wall time includes
its JVM's start. ``--s3`` adds each Spark master again with the store read by URI from a bucket
of an S3-compatible server on 127.0.0.1 (moto_server, the store uploaded once before the runs):
its report names the URI, read as the path for the identity. The machine is shared: the load
average is printed with the figures.

Run:  python benchmarks/bench_jobs.py [--messages N] [--jobs-list 1,2] [--spark local[2],standalone] [--s3] [--runs N]
      [--work DIR] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from bench_cli import load
from bench_scaling import workload
from common import machine, publish

from rmqlab.spark.mirror import shown_uri
from rmqlab.tables.pool import usable_cores

ROOT = Path(__file__).resolve().parent.parent


def build(root: Path, messages: int, file_size: int) -> None:
    """The generated, dispatched store (skipped when `root` holds one already)."""
    from rmqlab.lab.generate import generate_store

    if (root / "commitlog").is_dir():
        return
    t0 = time.perf_counter()
    generate_store(root, workload(messages), commitlog_file_size=file_size)
    print(f"store: {messages:,} messages written and dispatched in {time.perf_counter() - t0:.1f} s", flush=True)


#: the decode: the CommitLog of the store (argv[1]) read into Arrow columns with the bodies, over
#: argv[2] processes; prints what the identity check compares (rows, report, the columns' digest)
DECODE = """
import sys
import pyarrow as pa
import pyarrow.compute as pc
from rmqlab.formats import commitlog as cl
df = cl.read_columns(sys.argv[1] + "/commitlog", arrow=True, jobs=int(sys.argv[2]))
sums = []
for c in df.columns:
    a = pa.array(df[c])
    if pa.types.is_dictionary(a.type):
        a = a.cast(a.type.value_type)
    if pa.types.is_binary(a.type) or pa.types.is_large_binary(a.type) or pa.types.is_large_string(a.type):
        a = pc.binary_length(a)
    sums.append((c, a.null_count, pc.sum(a.cast(pa.int64())).as_py()))
print(len(df), df.attrs["report"].as_dict(), sums)
"""

#: where the store's path goes in a Variant's command line
STORE = "{store}"


@dataclass(frozen=True)
class Variant:
    """One way of reading the store: its label in the table, its command line after ``python``
    (:data:`STORE` for the store), and the cores it may use."""

    label: str
    argv: tuple[str, ...]
    cores: int
    #: the store as the command names it when not by its path (a URI), and as its report shows it
    target: str | None = None
    shown: str | None = None


def run_once(root: Path, v: Variant, env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall s, CPU s of the children, stdout) of one fresh run of `v` on `root`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *((v.target or str(root)) if a == STORE else a for a in v.argv)],
                       env=env, capture_output=True, timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{v.label} exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
    # a store read by URI is named by it: its report read as the local one's, for the identity
    out = p.stdout.replace(v.shown.encode(), str(root).encode()) if v.shown else p.stdout
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=2_000_000, help="messages in the store (default 2,000,000)")
    ap.add_argument("--commitlog-file-size", type=int, default=64 << 20,
                    help="bytes a CommitLog file (default 64 MiB)")
    ap.add_argument("--jobs-list", default="1,2", help="the --jobs values, comma separated (default 1,2)")
    ap.add_argument("--spark", default="", help="also rmqlab spark verify with these masters, comma separated: "
                                               "local[N] or standalone (two one-core workers); default none")
    ap.add_argument("--s3", action="store_true", help="also each --spark master with the store read by URI from "
                    "an S3 bucket (moto_server on 127.0.0.1, the store uploaded once, not measured)")
    ap.add_argument("--decode", action="store_true", help="time the CommitLog decode, read_columns(arrow=True, "
                                                          "jobs=N), instead of verify")
    ap.add_argument("--runs", type=int, default=5, help="counted runs of each variant (default 5)")
    ap.add_argument("--work", type=Path, default=None, help="where the store is built (kept; default: a temporary "
                                                           "directory, removed)")
    ap.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    args = ap.parse_args()
    jobs_list = [int(j) for j in args.jobs_list.split(",")]
    if 1 not in jobs_list:
        jobs_list.insert(0, 1)      # the single process is the reference of the identity and the speed-up
    # the rmqlab of this checkout, whatever the environment has installed
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="bench_jobs_") as tmp, ExitStack() as stack:
        root = (args.work or Path(tmp)) / f"store-{args.messages}"
        build(root, args.messages, args.commitlog_file_size)
        files = len([p for p in (root / "commitlog").iterdir() if p.is_file()])
        if args.decode:
            variants = [Variant(f"read_columns(arrow=True, jobs={j})", ("-c", DECODE, STORE, str(j)), j)
                        for j in jobs_list]
        else:
            variants = [Variant(f"verify --jobs {j}", ("-m", "rmqlab", "verify", STORE, "--jobs", str(j)), j)
                        for j in jobs_list]
        uri = _uploaded(root, Path(tmp), stack) if args.s3 else None
        for master in [m for m in args.spark.split(",") if m]:
            variants.append(_spark_variant(master, Path(tmp), stack))
            if uri is not None:
                v = variants[-1]
                variants.append(Variant(f"{v.label}, the store in S3", v.argv, v.cores, uri, shown_uri(uri)))
        res = {"date": dt.date.today().isoformat(), "machine": machine(), "load_start": load()}
        reference: bytes | None = None
        for v in variants:       # warm-up: page cache, and the identity with --jobs 1
            _, _, out = run_once(root, v, env)
            reference = out if reference is None else reference
            if out != reference:
                raise SystemExit(f"{v.label} printed another output than --jobs 1")
        wall: dict[str, list[float]] = {v.label: [] for v in variants}
        cpu: dict[str, list[float]] = {v.label: [] for v in variants}
        for i in range(args.runs):
            for v in variants:
                w, c, out = run_once(root, v, env)
                if out != reference:
                    raise SystemExit(f"{v.label} printed another output than --jobs 1")
                wall[v.label].append(w)
                cpu[v.label].append(c)
            print(f"run {i + 1} of {args.runs} done (load {load()})", file=sys.stderr, flush=True)
        res["load_end"] = load()
    base = statistics.median(wall[variants[0].label])
    rows = ["| run | cores | wall s (median) | wall s (min-max) | CPU s (median) | M messages/s | speed-up "
            "| per core |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for v in variants:
        med = statistics.median(wall[v.label])
        rows.append(f"| {v.label} | {v.cores} | {med:.2f} | {min(wall[v.label]):.2f}-{max(wall[v.label]):.2f} | "
                    f"{statistics.median(cpu[v.label]):.2f} | {args.messages / med / 1e6:.2f} | {base / med:.2f} | "
                    f"{base / med / v.cores:.2f} |")
    what = ("the CommitLog decode, read_columns(arrow=True, jobs=N)" if args.decode else
            f"rmqlab verify --jobs N{' and rmqlab spark verify' if args.spark else ''}")
    text = (f"## {res['date']}: {what}, one fresh process a run\n\n"
            f"Machine: {res['machine']}; load average {res['load_start']} at the start, {res['load_end']} at the "
            f"end. A generated, dispatched store of {args.messages:,} messages in {files} CommitLog files of "
            f"{args.commitlog_file_size:,} bytes (bench_scaling.py's workload). Median of {args.runs} runs a value "
            f"after one warm-up run each, values alternating; wall time of the whole process (start-up, the "
            f"workers' start and a Spark driver's JVM included), CPU time as getrusage counts the children (not "
            f"a standalone cluster's executors). Every run printed the output of --jobs 1. Per core: speed-up / "
            f"cores. `python benchmarks/bench_jobs.py --messages {args.messages} --commitlog-file-size "
            f"{args.commitlog_file_size} --jobs-list {args.jobs_list} --runs {args.runs}"
            f"{' --spark ' + args.spark if args.spark else ''}{' --s3' if args.s3 else ''}"
            f"{' --decode' if args.decode else ''}`.\n\n"
            + "\n".join(rows) + "\n")
    publish(text, args.record)


def _uploaded(root: Path, work: Path, stack: ExitStack) -> str:
    """The store copied into a bucket of an S3-compatible server on 127.0.0.1 (moto_server,
    stopped when `stack` closes): its URI."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from s3server import s3_uri, serve_s3, upload

    t0 = time.perf_counter()
    uri = upload(root, s3_uri(stack.enter_context(serve_s3(work)), root.name))
    print(f"store uploaded to {shown_uri(uri)} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return uri


def _spark_variant(master: str, work: Path, stack: ExitStack) -> Variant:
    """``rmqlab spark verify --master M``; ``standalone`` starts a cluster of two one-core
    workers (stopped when `stack` closes)."""
    if master == "standalone":
        from bench_spark import deployment

        url, started, _ = stack.enter_context(deployment("standalone", work))
        print(f"standalone cluster {url} started in {started:.1f} s", file=sys.stderr, flush=True)
        return Variant("spark verify, standalone (2 one-core workers)",
                       ("-m", "rmqlab", "spark", "verify", STORE, "--master", url, "--quiet"), 2)
    n = re.fullmatch(r"local\[(\d+)\]", master)
    return Variant(f"spark verify --master {master}",
                   ("-m", "rmqlab", "spark", "verify", STORE, "--master", master, "--quiet"),
                   int(n.group(1)) if n else usable_cores())


if __name__ == "__main__":
    main()
