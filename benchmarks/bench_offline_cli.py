"""The offline mqadmin and kafka-dump-log questions: wall time of each command, one fresh process a run.

RocketMQ commands run on the sample store (``data/generated/sample-store``, ``make data``) with
no file size and no index count given (the files say them); a copy holding only its CommitLog
measures a key query that builds the index in a work folder (first run: the build; later runs:
its reuse). Kafka commands run on the real log directory ``kafka-3.6-compacted`` of the shared
real data (``$RMQLAB_SHARED/real-data/kafka``, else ``../shared/real-data/kafka`` beside the
checkout), and on one of its segments cut at byte 4,000 (a torn write). Each command runs once to
warm up (not counted), then --runs times, commands alternating; the table gives the median and
the spread (min to max) of the wall time of the whole process and the median CPU time of the
child (user + sys). Every run must exit as the command should (0, or 1 where damage is found).

Run:  python benchmarks/bench_offline_cli.py [--runs N] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_cli import load
from common import machine, publish

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "generated" / "sample-store"


def shared() -> Path:
    env = os.environ.get("RMQLAB_SHARED")
    return Path(env) if env else ROOT.parent / "shared"


def make_inputs(work: Path) -> dict[str, str]:
    """The sample store's facts the commands ask about (an offset message id, a queue, a key,
    a time range, a tag), a copy of its CommitLog alone, and a torn Kafka segment."""
    from rmqlab.store.directory import Store

    s = Store(SAMPLE)
    msgs = s.messages()
    topic = msgs["topic"].value_counts().index[0]
    mine = msgs[msgs["topic"] == topic].sort_values("store_timestamp")
    m = mine.iloc[len(mine) // 2]
    from rmqlab.formats.msgid import offset_msg_id

    copy = work / "copy"
    shutil.copytree(SAMPLE / "commitlog", copy / "commitlog")
    kafka = shared() / "real-data" / "kafka" / "kafka-3.6-compacted"
    torn = work / "torn"
    torn.mkdir()
    seg = kafka / "stock-market-realtime-0" / "00000000000000003101.log"
    (torn / seg.name).write_bytes(seg.read_bytes()[:4000])
    key = mine["keys"].dropna().iloc[len(mine) // 3].split(" ")[0]
    return {"store": str(SAMPLE), "topic": topic, "msg_id": offset_msg_id(m["store_host"], int(m["phy_offset"])),
            "queue": str(int(m["queue_id"])), "offset": str(int(m["queue_offset"])),
            "begin": str(int(mine["store_timestamp"].iloc[len(mine) // 4])),
            "end": str(int(mine["store_timestamp"].iloc[3 * len(mine) // 4])), "key": key,
            "tag": str(mine["tags"].dropna().iloc[0]), "copy": str(copy), "work": str(work / "work"),
            "kafka": str(kafka), "torn": str(torn / seg.name)}


#: (name, arguments after `python -m rmqlab`, the exit status it should have)
COMMANDS: list[tuple[str, list[str], int]] = [
    ("store info DIR (sizes from the files)", ["store", "info", "{store}"], 0),
    ("store info DIR --keep-going", ["store", "info", "{store}", "--keep-going"], 0),
    ("store query --msg-id (offset id)", ["store", "query", "{store}", "--msg-id", "{msg_id}"], 0),
    ("store query --queue-id --offset", ["store", "query", "{store}", "--topic", "{topic}", "--queue-id", "{queue}",
                                         "--offset", "{offset}"], 0),
    ("store query, a time range (broker)", ["store", "query", "{store}", "--topic", "{topic}", "--begin", "{begin}",
                                            "--end", "{end}"], 0),
    ("store query, a time range (verified)", ["store", "query", "{store}", "--topic", "{topic}", "--begin",
                                              "{begin}", "--end", "{end}", "--mode", "verified"], 0),
    ("store query --tags", ["store", "query", "{store}", "--topic", "{topic}", "--tags", "{tag}"], 0),
    ("store messages (printMsg, bodies)", ["store", "messages", "{store}", "--topic", "{topic}", "--begin", "{begin}",
                                           "--end", "{end}"], 0),
    ("store messages --count-by-tag", ["store", "messages", "{store}", "--topic", "{topic}", "--count-by-tag"], 0),
    ("store query --key, CommitLog-only copy (work folder)", ["store", "query", "{copy}", "--topic", "{topic}",
                                                              "--key", "{key}", "--work-dir", "{work}"], 0),
    ("kafka groups DIR", ["kafka", "groups", "{kafka}"], 0),
    ("kafka logdir DIR", ["kafka", "logdir", "{kafka}"], 0),
    ("kafka verify DIR (log directory)", ["kafka", "verify", "{kafka}"], 0),
    ("kafka dump DIR (log directory)", ["kafka", "dump", "{kafka}"], 0),
    ("kafka dump, torn segment", ["kafka", "dump", "{torn}"], 1),
    ("kafka verify, torn segment", ["kafka", "verify", "{torn}"], 1),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="counted runs of each command (default 5)")
    ap.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    args = ap.parse_args()
    if not (SAMPLE / "commitlog").is_dir():
        sys.exit(f"{SAMPLE}: no sample store: run `make data` first")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = {"date": dt.date.today().isoformat(), "machine": machine(), "load_start": load()}
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_offline_") as tmp:
        work = Path(tmp)
        inputs = make_inputs(work)
        commands = [(name, ["-m", "rmqlab", *[a.format(**inputs) for a in argv]], status)
                    for name, argv, status in COMMANDS]
        for name, argv, status in commands:          # warm-up; the work folder is built here
            t0 = time.perf_counter()
            run_once_status(argv, env, work, status)
            if "work folder" in name:
                res["build"] = f"{time.perf_counter() - t0:.2f}"
        for i in range(args.runs):
            for name, argv, status in commands:
                w, c = run_once_status(argv, env, work, status)
                wall.setdefault(name, []).append(w)
                cpu.setdefault(name, []).append(c)
            print(f"run {i + 1} of {args.runs} done (load {load()})", file=sys.stderr, flush=True)
    res["load_end"] = load()
    rows = ["| command | wall s (median) | wall s (min-max) | CPU s (median) |", "|---|---:|---:|---:|"]
    for name, _, _ in COMMANDS:
        rows.append(f"| {name} | {statistics.median(wall[name]):.3f} | {min(wall[name]):.3f}-{max(wall[name]):.3f} | "
                    f"{statistics.median(cpu[name]):.3f} |")
    text = (f"## {res['date']}: the offline mqadmin and kafka-dump-log commands, one fresh process a run\n\n"
            f"Machine: {res['machine']}; load average {res['load_start']} at the start, {res['load_end']} at the "
            f"end. Median of {args.runs} runs a command after one warm-up run, commands alternating; wall time of "
            f"the whole process (Python start-up included) and CPU time of the child. Inputs: the sample store "
            f"(`make data`, {sum(f.stat().st_size for f in SAMPLE.rglob('*') if f.is_file()) / 2**20:.1f} MiB, no "
            f"size or count given), a copy of its CommitLog alone (the warm-up built its index in the work folder "
            f"in {res.get('build', '?')} s; the runs reuse it), the real Kafka log directory kafka-3.6-compacted, "
            f"and one of its segments cut at byte 4,000. `python benchmarks/bench_offline_cli.py`.\n\n"
            + "\n".join(rows) + "\n")
    publish(text, args.record)


def run_once_status(argv: list[str], env: dict[str, str], cwd: Path, status: int) -> tuple[float, float]:
    """(wall s, CPU s) of one fresh process that must exit `status`."""
    import resource
    import subprocess
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *argv], env=env, cwd=cwd, capture_output=True, timeout=300)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != status:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}, not {status}: "
                           f"{p.stderr.decode(errors='replace')[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


if __name__ == "__main__":
    main()
