"""Crash-safety benchmark: SIGKILL a store writer at random points, recover, count lost lookups.

--trials trials (default 60, at least 50), spread evenly over the three phases of
:mod:`rmqlab.lab.crash` (generate = CommitLog appends with a dispatch after each chunk; dispatch =
an incremental Store.dispatch; bulk = bulk_build of the index folder) and, within each phase,
over the two kill triggers (``write``: the writer SIGKILLs itself before a random write event,
writes being cut into 96-byte pieces so records and units tear, index batches torn between
their entries and their header; ``time``: the parent sends
SIGKILL after a random delay within an uninterrupted run's duration). Each trial copies the
crashed store twice:

* ``rmqlab store recover`` (rmqlab.store.recover.recover_store), then every message whose bytes were
  whole on disk at the kill (told from the crashed bytes against the uninterrupted run's, before
  recovery) must still be in the CommitLog, and every key of it (UNIQ_KEY and each KEYS token)
  is looked up in verified mode: *rmqlab lost lookups*; the store must also pass verify_path and
  equal a fresh one-go dispatch of those messages byte for byte;
* the broker's own restart after an abnormal shutdown (rmqlab.store.recover.broker_restart:
  IndexService.load(lastExitOK=false) deletes index files newer than indexMsgTimestamp,
  CommitLog.recoverAbnormally re-indexes from ~3 s before the checkpoint): *broker-rule lost
  lookups* on the same crashes.

Prints a Markdown table per phase and the total, with the machine and date. The per-trial rows
go to benchmarks/out/crash/trials.csv and the figure to benchmarks/out/crash/losses.png.

Run:  python benchmarks/bench_crash.py [--trials 60] [--seed 0] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import machine, publish

from rmqlab.lab.crash import CrashConfig, run_trials, summary_markdown, summary_table
from rmqlab.viz.crash import losses_figure

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "crash"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="trials at once (each waits on its own writer process)")
    ap.add_argument("--record", action="store_true", help="append the result to benchmarks/RESULTS.md")
    args = ap.parse_args()
    if args.trials < 50:
        ap.error("--trials must be at least 50")
    config = CrashConfig()
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rmqlab-bench-crash-"))
    t0 = time.perf_counter()

    def progress(i, r):
        print(f"\r  trial {i + 1}/{args.trials} done: {r.phase:<8} {r.trigger:<5} lost rmqlab {r.lost_rmqlab} "
              f"broker {r.lost_broker:<5}", end="", file=sys.stderr, flush=True)

    try:
        df = run_trials(args.trials, seed=args.seed, workdir=work, config=config, jobs=args.jobs,
                        progress=progress)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(file=sys.stderr)
    seconds = time.perf_counter() - t0
    df.to_csv(OUT / "trials.csv", index=False)
    losses_figure(summary_table(df)).savefig(OUT / "losses.png", dpi=110)
    bad = df[(df.lost_rmqlab != 0) | (df.messages_lost != 0) | ~df.verify_ok | ~df.fresh_equal | ~df.sample_agree]
    bulk = df[df.phase == "bulk"]
    lines = [
        f"## Crash safety: SIGKILL during generate / dispatch / bulk build ({dt.date.today().isoformat()})",
        "",
        f"Machine: {machine()}",
        f"Command: `python benchmarks/bench_crash.py --trials {args.trials} --seed {args.seed} --jobs {args.jobs}` "
        f"({seconds:.0f} s; a trial {df.seconds.median():.1f} s median, {args.jobs} at once)",
        f"Store: {config.messages} messages at {config.rate:g}/s of store time, {config.keys_per_message} KEYS tokens "
        f"a message + UNIQ_KEY, CommitLog files {config.commitlog_file_size} B, ConsumeQueue files "
        f"{config.consume_queue_file_size} B, index {config.hash_slot_num} slots x {config.index_num} entries; "
        f"writes cut into {config.piece_bytes}-byte pieces.",
        f"Triggers: {int((df.trigger == 'write').sum())} self-SIGKILL before a random write event, "
        f"{int((df.trigger == 'time').sum())} parent SIGKILL after a random delay "
        f"({int(df.killed.sum())} of {len(df)} writers were killed before finishing).",
        "",
        summary_markdown(df),
        "",
        f"rmqlab: {int(df.messages_lost.sum())} of {int(df.messages_complete.sum())} messages whole on disk at "
        f"the kill lost and {int(df.lost_rmqlab.sum())} of their {int(df.lookups.sum())} lookups lost in {len(df)} "
        f"trials; verify_path ok in {int(df.verify_ok.sum())}, byte-equal to a fresh one-go dispatch of the "
        f"written messages in {int(df.fresh_equal.sum())}; "
        f"torn CommitLog tails zeroed in {int((df.torn_bytes > 0).sum())} trials, ConsumeQueue units dropped in "
        f"{int((df.cq_units_dropped > 0).sum())}, index files rebuilt in {int((df.index_files_removed > 0).sum())}; "
        f"bulk: files under their final names complete in {int(bulk.atomic_ok.sum())} of {len(bulk)} trials, "
        f"hidden temporary files removed in {int((bulk.temp_files > 0).sum())}.",
        "Broker rule: it deletes every index file newer than indexMsgTimestamp (the end of the last *full* file) "
        "and re-indexes only from the CommitLog file holding min(physic, logics) - 3 s, so keys in between are lost "
        "even when the crash damaged nothing; a bulk build sets indexMsgTimestamp only at its end.",
    ]
    if len(bad):
        failed = bad[['phase', 'seed', 'trigger', 'messages_lost', 'lost_rmqlab', 'fresh_diffs']].to_dict('records')
        lines.append(f"FAILED trials: {failed}")
    publish("\n".join(lines), args.record)
    if len(bad):
        sys.exit(1)


if __name__ == "__main__":
    main()
