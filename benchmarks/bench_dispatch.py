"""Dispatch benchmark: Store.dispatch (CommitLog -> ConsumeQueue units + index keys + checkpoint),
the whole call and each stage, the current path against the first-written one
(tests/support/dispatch_reference.py) in the same run.

A store of --messages messages (default 2,000,000; the bench_store workload: body median 100
bytes, 4 topics x 4 queues, default index geometry) is generated once into a temporary folder;
every run dispatches a fresh hard-linked copy of its CommitLog, old and new alternating,
--repeats times, and the medians of the wall time and of the process's CPU time
(``time.process_time``: the figure to trust when other jobs share the cores) are reported.
Stages, each timed on its own decoded frame:

* decode: the old path's frame of str objects from the CommitLog decoder before the one pass
  (``columns._decode_positions``), the new path's Arrow columns from the one pass
  (``read_columns(arrow=True)``, what Store.dispatch reads);
* consume queues: tags codes, per-queue grouping and the ConsumeQueue unit writes;
* index: key expansion and hashing plus the IndexFile puts (``IndexService.build_columns``);
* index close: the IndexFile header and msync of the map (as at broker shutdown);
* checkpoint.

The whole old call is tests/support/dispatch_reference.py, whose read goes through read_columns (so it
decodes with the one pass into str objects).

Answers checked: the two paths' reports are equal, every file they write has the same sha256,
the ConsumeQueue units equal the non-transactional/committed messages and the index keys equal
those of ``expand_columns`` (the full-string expansion).

Run:  python benchmarks/bench_dispatch.py [--messages N] [--repeats R] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import machine, publish

from rmqlab.formats import commitlog as cl
from rmqlab.formats.commitlog import columns as cc
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.rules.dispatch import goes_to_consume_queue_many
from rmqlab.store.directory import Store
from rmqlab.store.indexservice import expand_columns
from rmqlab.store.reput import Run, write_consume_queue_units

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from dispatch_reference import arrow_index_columns, reference_consume_queues, reference_dispatch  # noqa: E402


def fresh_copy(src: Path, scratch: Path, name: str) -> Store:
    """A store holding `src`'s CommitLog (hard links: dispatch only reads it) and nothing else."""
    root = scratch / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    subprocess.run(["cp", "-al", str(src / "commitlog"), str(root / "commitlog")], check=True)
    return Store(root)


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "commitlog" not in p.parts}


def timed(fn):
    """(result, wall seconds, CPU seconds of this process)."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def stage_times(src: Path, scratch: Path, old: bool) -> dict[str, tuple[float, float]]:
    s = fresh_copy(src, scratch, "stage-old" if old else "stage-new")
    decode = (lambda: cc._read_columns(s.commitlog_dir, body=False, decode=cc._decode_positions)) if old \
        else (lambda: cl.read_columns(s.commitlog_dir, body=False, arrow=True))
    msgs, *t_dec = timed(decode)
    cq = (lambda: reference_consume_queues(s, msgs)) if old else (lambda: write_consume_queue_units(s.layout, msgs))
    _, *t_cq = timed(cq)
    idx = s.index(writable=True)
    _, *t_idx = timed(lambda: idx.build_columns(arrow_index_columns(msgs) if old else msgs))
    _, *t_close = timed(idx.close)
    run = Run(s.layout)
    _, *t_cp = timed(lambda: (run.note_times(msgs), run.write_checkpoint(idx.index_msg_timestamp)))
    return {"decode": t_dec, "consume queues": t_cq, "index": t_idx, "index close": t_close, "checkpoint": t_cp}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-dispatch-"))
    try:
        src = scratch / "source"
        w = Workload(messages=args.messages, seed=1, body_median=100,
                     topics=("TopicTest", "orders", "payments", "users"), rate=20_000.0)
        generate_store(src, w, dispatch=False)
        msgs = cl.read_columns(src / "commitlog", body=False)          # also warms the page cache
        n = len(msgs)
        want_units = int(goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64)).sum())
        want_keys = len(expand_columns(msgs))

        whole = {"old": [], "new": []}
        reports = {}
        for _ in range(args.repeats):
            for label in ("old", "new"):
                s = fresh_copy(src, scratch, label)
                r, *sec = timed(lambda s=s, label=label: reference_dispatch(s) if label == "old" else s.dispatch())
                whole[label].append(sec)
                reports[label] = (r, s.root)
        (r_old, root_old), (r_new, root_new) = reports["old"], reports["new"]
        assert r_new.as_dict() | {"seconds": 0} == r_old.as_dict() | {"seconds": 0}, (r_new, r_old)
        assert r_new.consume_queue_units == want_units and r_new.index_keys == want_keys, r_new
        files = digest(root_new)
        assert files == digest(root_old), "old and new dispatch wrote different bytes"

        stages = {"old": [], "new": []}
        for _ in range(args.repeats):
            for label in ("old", "new"):
                stages[label].append(stage_times(src, scratch, label == "old"))
        load = os.getloadavg()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    def medians(runs):
        return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)

    med = {k: medians(v) for k, v in whole.items()}
    names = list(stages["new"][0])
    st = {label: {k: medians([x[k] for x in stages[label]]) for k in names} for label in stages}
    after = {label: tuple(sum(st[label][k][i] for k in names if k != "decode") for i in (0, 1)) for label in st}

    def cell(wall_cpu):
        wall, cpu = wall_cpu
        return f"{n / cpu / 1e6:,.2f} M/s ({cpu:.3f} s) | {n / wall / 1e6:,.2f} M/s ({wall:.3f} s)"

    rows = [f"| {k} | {cell(st['old'][k])} | {cell(st['new'][k])} | {st['old'][k][1] / st['new'][k][1]:.1f}x |"
            for k in names]
    rows.append(f"| everything after decode | {cell(after['old'])} | {cell(after['new'])} | "
                f"{after['old'][1] / after['new'][1]:.1f}x |")
    rows.append(f"| **Store.dispatch, whole call** | {cell(med['old'])} | **{cell(med['new'])}** | "
                f"{med['old'][1] / med['new'][1]:.1f}x |")
    text = f"""
## Dispatch: {n:,} messages, old vs new ({dt.date.today().isoformat()})

{machine()}; load average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min).
Medians of {args.repeats} runs each, old and new alternating, messages/s by this process's CPU
time and by wall time (the CPU figure is the one to trust when other jobs share the cores).
Checked: equal reports, the same sha256 for all {len(files)} files written,
{r_new.consume_queue_units:,} ConsumeQueue units and {r_new.index_keys:,} index keys as counted
independently. Target: 1,000,000 messages/s for the whole call.

| stage | old, CPU | old, wall | new, CPU | new, wall | speed-up (CPU) |
|---|---|---|---|---|---|
""" + "\n".join(rows) + "\n"
    publish(text, args.record)


if __name__ == "__main__":
    main()
