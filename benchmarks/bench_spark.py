"""Distributed index build at scale: 200,000,000 index keys (10 full default-size index files)
from a synthetic workload, on local[1] and local[2], and on the deployments users run:
``standalone`` (a standalone cluster of one master and two one-core workers, started from the
pyspark package's own ``spark-class``) and ``connect`` (a Spark Connect server with a local[2]
master, started with the package's ``start-connect-server.sh``; the build's process is then a
Connect client without a JVM).

Each master runs in its own process (a JVM's cores and heap are fixed when it starts), timed
end to end from that process's start: the JVM, the source's plan, pass 1 (generate, expand,
hash, write runs) and pass 2 (one C build per index file). Peak memory is the resident set of
the whole process tree (driver Python, JVM, Python workers), sampled every 0.2 s; disk is the
peak of the output folder (index files plus the runs while they exist).

Targets: under 3 minutes end to end on local[2], and local[2] at least 1.7x faster than
local[1]; the standalone cluster and Spark Connect each within 15 % of local[2] (ratios from
the same run). A deployment's own start (the cluster's master and workers, the Connect
server) is timed apart, as ``deployment start``: a user starts it once for many builds.

Run:  python benchmarks/bench_spark.py [--keys N] [--masters local[2] standalone connect local[1]] [--record]
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import machine

# the deployments are started as the tests start them (tests/support/spark_cluster.py)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

DEFAULT_KEYS = 10 * (20_000_000 - 1)
KEYS_PER_MESSAGE = 1.9     # the default workload: UNIQ_KEY + 0.9 KEYS tokens a message


def child(args) -> None:
    """One build in this process; prints a JSON line."""
    t0 = time.monotonic()
    from rmqlab.lab.workload import Workload
    from rmqlab.spark import get_session
    from rmqlab.spark.build import build_index_files
    from rmqlab.spark.sources import WorkloadSource

    spark = get_session(remote=args.remote) if args.remote else get_session(args.master)
    t_session = time.monotonic() - t0
    w = Workload(messages=int(args.keys / KEYS_PER_MESSAGE * 1.02), seed=1)
    src = WorkloadSource(w)
    t_plan = time.monotonic() - t0 - t_session
    timings: dict = {}
    paths = build_index_files(src, args.out, hash_slot_num=5_000_000, index_num=20_000_000,
                              max_keys=args.keys, spark=spark, progress=False, timings=timings)
    wall = time.monotonic() - t0
    print(json.dumps({"wall": wall, "session": t_session, "source_plan": t_plan, "files": len(paths),
                      "pieces": src.num_partitions, "messages": w.messages,
                      "bytes": sum(os.path.getsize(p) for p in paths), "timings": timings}), flush=True)
    spark.stop()


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(d))
            rss[int(d)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, []))
    return total


def du(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def run(master: str, keys: int, work: Path, *, url: str | None = None, pids: tuple[int, ...] = ()) -> dict:
    """One build in a fresh process; `url`: the deployment's (spark:// or sc://) for the named ones,
    whose processes `pids` (and their children: executors, Python workers) count in peak memory."""
    out = work / master.replace("[", "_").replace("]", "")
    shutil.rmtree(out, ignore_errors=True)
    target = ["--remote", url] if url and url.startswith("sc://") else ["--master", url or master]
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, __file__, "--child", *target, "--keys", str(keys),
                             "--out", str(out)], stdout=subprocess.PIPE, text=True)
    peak = {"rss": 0, "disk": 0}
    stop = threading.Event()

    def sample():
        while not stop.wait(0.2):
            peak["rss"] = max(peak["rss"], tree_rss(proc.pid) + sum(tree_rss(p) for p in pids))
            peak["disk"] = max(peak["disk"], du(out))
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    stdout, _ = proc.communicate()
    stop.set()
    th.join()
    if proc.returncode:
        raise SystemExit(f"{master}: the build failed (exit {proc.returncode})")
    r = json.loads(stdout.strip().splitlines()[-1])
    r.update(master=master, keys=keys, outer_wall=time.monotonic() - t0, rss=peak["rss"], disk=peak["disk"])
    shutil.rmtree(out, ignore_errors=True)
    return r


@contextlib.contextmanager
def deployment(name: str, work: Path):
    """(url, seconds to start it, its process ids) of the named deployment, stopped by process id
    afterwards; (None, 0.0, ()) for a local master."""
    from spark_cluster import ConnectServer, StandaloneCluster

    if name not in ("standalone", "connect"):
        yield None, 0.0, ()
        return
    root = work / f"{name}-deployment"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    t0 = time.monotonic()
    d = StandaloneCluster(root).start() if name == "standalone" else ConnectServer(root).start()
    started = time.monotonic() - t0
    try:
        if isinstance(d, StandaloneCluster):
            yield d.master_url, started, tuple(d.pids)
        else:
            yield d.url, started, (d.pid,) if d.pid else ()
    finally:
        d.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=DEFAULT_KEYS)
    ap.add_argument("--masters", nargs="+", default=["local[2]", "local[1]"])
    ap.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--replay", metavar="LOG", help="tabulate (and --record) the JSON lines of an earlier run's output")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--master", help=argparse.SUPPRESS)
    ap.add_argument("--remote", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)

    results = []
    if args.replay:
        # the JSON lines a run printed (its stdout): tabulate or record them without running again
        results = [json.loads(line) for line in open(args.replay) if line.startswith("{") and '"master"' in line]
    else:
        work = Path(args.work or tempfile.mkdtemp(prefix="rmqlab-bench-spark-"))
        for m in args.masters:
            os.sync()          # the previous run's writes out of the way: each run starts with a quiet disk
            time.sleep(5)
            with deployment(m, work) as (url, started, pids):
                r = run(m, args.keys, work, url=url, pids=pids)
            r["deployment_start"] = started
            results.append(r)
            print(json.dumps(r), flush=True)
    by = {r["master"]: r for r in results}
    lines = ["| master | end to end | JVM start | pass 1: runs (tasks' own time) | pass 2: files | keys/s "
             "| pieces | files | peak memory (process tree) | peak disk |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        t = r["timings"]
        start = f" (+{r['deployment_start']:.1f} s deployment start)" if r.get("deployment_start") else ""
        lines.append(f"| {r['master']} | {r['wall']:.1f} s{start} | {r['session']:.1f} s | {t['runs']:.1f} s "
                     f"({sum(t['run_tasks']):.0f} task-s) | {t['files']:.1f} s | {r['keys'] / r['wall'] / 1e6:.2f} M "
                     f"| {r['pieces']} | {r['files']} | {r['rss'] / 2**30:.2f} GiB | {r['disk'] / 2**30:.2f} GiB |")
    table = "\n".join(lines)
    print(table)
    ratios = []
    if {"local[1]", "local[2]"} <= set(by):
        one, two = by["local[1]"], by["local[2]"]
        ratios = [("end to end", one["wall"] / two["wall"]),
                  ("without the JVM start", (one["wall"] - one["session"]) / (two["wall"] - two["session"])),
                  ("pass 1", one["timings"]["runs"] / two["timings"]["runs"]),
                  ("pass 2", one["timings"]["files"] / two["timings"]["files"])]
        for what, x in ratios:
            print(f"local[2] speed-up over local[1], {what}: {x:.2f}x")
    deployments = []
    if "local[2]" in by:
        two = by["local[2]"]
        for name in ("standalone", "connect"):
            if name in by:
                d = by[name]
                deployments.append((name, d["wall"] / two["wall"],
                                    (d["wall"] - d["session"]) / (two["wall"] - two["session"])))
        for name, x, y in deployments:
            print(f"{name} / local[2]: end to end {x:.2f}, without the session start {y:.2f}")
    if args.record:
        r2 = by.get("local[2]")
        text = [f"\n## {datetime.date.today()}: Spark build, {results[0]['keys']:,} index keys "
                f"from a synthetic workload\n",
                f"Machine: {machine()}.",
                f"Workload: `Workload(messages={results[0]['messages']:,}, seed=1)` (about 1.9 keys a message), "
                f"`WorkloadSource` pieces of one 1 GiB CommitLog file each, default index geometry "
                f"(5,000,000 slots, 20,000,000 entries), `max_keys={results[0]['keys']:,}`. "
                f"Command: `make bench-spark ARGS='--masters {' '.join(by)} --record'` (each build in a fresh "
                "process; `standalone`: a master and two one-core workers from `spark-class`; `connect`: a "
                "Spark Connect server on local[2], the build's process its client). Targets: under 3 minutes "
                "end to end on local[2]; local[2] at least 1.7x faster than local[1]; the standalone cluster "
                "and Connect within 15 % of local[2].\n",
                table, ""]
        if r2:
            text.append(f"- local[2] end to end: {r2['wall']:.1f} s, target < 180 s: "
                        f"{'met' if r2['wall'] < 180 else 'NOT met'}")
        for what, x in ratios:
            text.append(f"- speed-up of local[2] over local[1], {what}: {x:.2f}x"
                        + (f", target >= 1.7x: {'met' if x >= 1.7 else 'NOT met'}" if what == "end to end" else ""))
        for name, x, y in deployments:
            text.append(f"- {name} / local[2], end to end: {x:.2f} (without the session start {y:.2f}); "
                        f"target within 15 %: {'met' if x <= 1.15 else 'NOT met'}")
        with open(Path(__file__).with_name("RESULTS.md"), "a") as f:
            f.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
