"""Command-line start-up: the wall time of one trivial command of each group, one fresh process each.

Commands (``python -m rmqlab ...``, inputs made once in a temporary folder by the installed code):
``--help``; ``index info`` of one index file; ``store query`` of one key, broker mode; ``commitlog
dump`` of one 64 KiB CommitLog file; ``verify`` of the whole small store (2,000 messages);
``kafka dump`` of a 500-record segment; ``capacity --help``; ``spark --help``; and ``python -c
pass``, the interpreter alone. Each command runs --runs times in every code tree, the trees and
commands alternating (run 1 of each command in each tree, then run 2, ...) after one warm-up
run each, not counted; the table gives the median wall time and the median CPU time of the child
process (user + sys). Every run must exit 0; the output of each command is compared across the
trees (first counted run).

Code trees: the installed rmqlab (--label, default "after") and, with ``--python-path
LABEL=DIR`` (repeatable), the rmqlab found in DIR (``PYTHONPATH=DIR``: a checkout with its C
extensions built in place), e.g. the code before a change. Every process runs in the temporary
folder, so the current folder's checkout is not on sys.path.

Run:  python benchmarks/bench_cli.py [--runs N] [--python-path before=/tmp/oldtree] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, publish

#: (name, arguments after `python`); {placeholders} are filled from the inputs
COMMANDS: list[tuple[str, list[str]]] = [
    ("python -c pass", ["-c", "pass"]),
    ("rmqlab --help", ["-m", "rmqlab", "--help"]),
    ("rmqlab index info FILE", ["-m", "rmqlab", "index", "info", "{index_file}", "--hash-slot-num", "64",
                                "--index-num", "1024"]),
    ("rmqlab store query (broker)", ["-m", "rmqlab", "store", "query", "{store}", "--hash-slot-num", "64",
                                     "--index-num", "1024", "--commitlog-file-size", "65536", "--topic", "A",
                                     "--key", "{key}"]),
    ("rmqlab commitlog dump FILE", ["-m", "rmqlab", "commitlog", "dump", "{commitlog_file}"]),
    ("rmqlab verify DIR", ["-m", "rmqlab", "verify", "{store}", "--hash-slot-num", "64", "--index-num", "1024",
                           "--commitlog-file-size", "65536"]),
    ("rmqlab kafka dump SEGMENT", ["-m", "rmqlab", "kafka", "dump", "{segment}"]),
    ("rmqlab capacity --help", ["-m", "rmqlab", "capacity", "--help"]),
    ("rmqlab spark --help", ["-m", "rmqlab", "spark", "--help"]),
]


def make_inputs(work: Path) -> dict[str, str]:
    """A 2,000-message store (64 KiB CommitLog files, 64 slots x 1,024 entries), its hottest
    key of topic A, and a Kafka segment of 500 records in batches of 10."""
    from rmqlab.cli import main
    from rmqlab.kafka.log import write_segment
    from rmqlab.store.directory import Store

    store = work / "store"
    argv = ["store", "generate", str(store), "--messages", "2000", "--hash-slot-num", "64", "--index-num", "1024",
            "--commitlog-file-size", "65536", "--seed", "5", "--topics", "A,B", "--collision-pairs", "2", "--json"]
    with open(os.devnull, "w") as null:
        stdout, sys.stdout = sys.stdout, null
        try:
            assert main(argv) == 0
        finally:
            sys.stdout = stdout
    msgs = Store(store, hash_slot_num=64, index_num=1024, commitlog_file_size=65536).messages()
    key = msgs[msgs["topic"] == "A"]["keys"].dropna().str.split(" ").explode().value_counts().index[0]
    segment = write_segment(work / "kafka", 0, [(i, 1718000000000 + i, b"k%d" % i, b"value %d" % i)
                                                for i in range(500)], records_per_batch=10)
    return {"store": str(store), "key": str(key), "index_file": str(min((store / "index").iterdir())),
            "commitlog_file": str(min((store / "commitlog").iterdir())), "segment": str(segment)}


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, bytes]:
    """(wall s, CPU s of the child, stdout) of one fresh process; raises if it does not exit 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *argv], env=env, cwd=cwd, capture_output=True, timeout=300)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} (PYTHONPATH={env.get('PYTHONPATH', '')}) exited {p.returncode}: "
                           f"{p.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stdout


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="counted runs of each command in each tree (default 7)")
    ap.add_argument("--python-path", action="append", default=[], metavar="[LABEL=]DIR",
                    help="also measure the rmqlab in DIR (PYTHONPATH=DIR), column LABEL (default: DIR); repeatable")
    ap.add_argument("--label", default="after", help="the column of the installed code (default: after)")
    ap.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    args = ap.parse_args()

    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    trees: list[tuple[str, dict[str, str]]] = []
    for spec in args.python_path:
        label, _, path = spec.rpartition("=")
        path = str(Path(path).resolve())
        if not (Path(path) / "rmqlab" / "__init__.py").is_file():
            ap.error(f"--python-path {spec}: no rmqlab package in {path}")
        trees.append((label or path, {**base_env, "PYTHONPATH": path}))
    trees.append((args.label, base_env))

    res: dict = {"date": dt.date.today().isoformat(), "machine": machine(), "load_start": load()}
    with tempfile.TemporaryDirectory(prefix="bench_cli_") as tmp:
        work = Path(tmp)
        inputs = make_inputs(work)
        commands = [(name, [a.format(**inputs) for a in argv]) for name, argv in COMMANDS]
        wall: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        outputs: dict[tuple[str, str], bytes] = {}
        for _, argv in commands:                          # warm-up: .pyc files, page cache
            for _, env in trees:
                run_once(argv, env, work)
        for i in range(args.runs):
            for name, argv in commands:
                for label, env in trees:
                    w, c, out = run_once(argv, env, work)
                    wall.setdefault((name, label), []).append(w)
                    cpu.setdefault((name, label), []).append(c)
                    outputs.setdefault((name, label), out)
            print(f"run {i + 1} of {args.runs} done (load {load()})", file=sys.stderr, flush=True)
    res["load_end"] = load()

    labels = [label for label, _ in trees]
    first, last = labels[0], labels[-1]
    bare = statistics.median(wall[("python -c pass", last)])
    head = "| command | " + " | ".join(f"{lb}: wall s | {lb}: CPU s" for lb in labels)
    head += (f" | {first} / {last} (wall) | {last} / bare python | same output |" if len(labels) > 1
             else " | / bare python |")
    lines = [
        f"## {res['date']}: command-line start-up, one fresh process a run ({', '.join(labels)})",
        "",
        f"Machine: {res['machine']}; load average {res['load_start']} at the start, {res['load_end']} at the end.",
        f"Median of {args.runs} runs a command and tree (after one warm-up run each), trees and commands "
        "alternating; wall time of the whole process and CPU time (user + sys) of the child. Trees: "
        + "; ".join(f"{lb}: " + (f"PYTHONPATH={env['PYTHONPATH']}" if "PYTHONPATH" in env else "the installed rmqlab")
                    for lb, env in trees) + ". Inputs: a 2,000-message store (64 KiB CommitLog files, 64 slots "
        "x 1,024 entries), its hottest key, a 500-record Kafka segment; "
        "`python benchmarks/bench_cli.py`.",
        "",
        head,
        "|---|" + "---:|" * (2 * len(labels)) + ("---:|---:|---|" if len(labels) > 1 else "---:|"),
    ]
    for name, _ in commands:
        w = {lb: statistics.median(wall[(name, lb)]) for lb in labels}
        c = {lb: statistics.median(cpu[(name, lb)]) for lb in labels}
        row = f"| {name} | " + " | ".join(f"{w[lb]:.3f} | {c[lb]:.3f}" for lb in labels)
        ratio = f"{w[last] / bare:.1f}x"
        if len(labels) > 1:
            same = "yes" if all(outputs[(name, lb)] == outputs[(name, first)] for lb in labels) else "no"
            row += f" | {w[first] / w[last]:.1f}x | {ratio} | {same} |"
        else:
            row += f" | {ratio} |"
        lines.append(row)
    publish("\n".join(lines) + "\n", args.record)


if __name__ == "__main__":
    main()
