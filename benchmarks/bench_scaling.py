"""Scaling: time and peak memory of each path at 1x, 4x and 16x input, every answer checked.

Paths and their input at 1x (--base-messages, --base-keys, --base-kafka-mib multiply them):

* ``build``: ``rmqlab.build_index_file`` of 1,249,999 keys from a pyarrow array into a
  default-size file (16x: 19,999,984 keys, nearly full); checked field by field against the
  putKey model of bench_indexfile.py;
* ``decode``: ``commitlog.read_columns`` (pandas, no bodies) of a store of 250,000 messages
  (the bench_store workload: 4 topics, body median 100 B); checked: the message count, offsets
  strictly rising, and 500 random rows against the pure-Python record reader;
* ``dispatch``: ``Store.dispatch`` of that store (ConsumeQueue, index files, checkpoint), from
  nothing each run; checked: one unit a message, the index keys equal to the keys the Arrow
  expansion (``indexservice.expand_columns``, not dispatch's C path) counts;
* ``query_many``: ``Store.query_many`` in broker mode of one key per 10 messages, drawn from
  random messages; checked: every key finds its own message (or the broker's 64), and 200 keys
  against their own ``queryOffset``;
* ``verify``: ``verify_path`` of the dispatched store (every check, CRCs included); checked:
  ok, and its message and index-entry counts;
* ``kafka_walk``: ``kafka.log.read_batches(verify_crc=True)`` of a 64 MiB segment of 1 KiB
  batches (bench_kafka.py's segment); checked: batch count, last offset, every CRC good;
* ``kafka_rebuild``: ``kafka.rebuild.rebuild_indexes`` of that segment; checked: the .index
  equal to the rule's entries.

Each measurement runs in a fresh process that first builds or loads its inputs (not measured),
then resets the kernel's high-water mark of resident memory (``/proc/self/clear_refs``) and runs
the path once: wall and CPU time (``resource.getrusage``), peak resident growth (VmHWM minus
the resident size before; it counts the file pages a path maps, such as a CommitLog read
through ``mmap``) and peak anonymous growth (RssAnon sampled every 5 ms: the memory the path
allocates). The table gives each path's time and memory at every scale and their ratio to 1x
(linear time is 4x and 16x; bounded memory stays near 1x), then what takes the most time and
memory at the largest scale; ``--profile`` adds each path's top functions there (cProfile, in
one more process). Scratch space: about 5 GiB in --work (a temporary directory by default).
The machine is shared: the load average is printed with the figures.

Run:  python benchmarks/bench_scaling.py [--scales 1,4,16] [--repeat N] [--profile] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from bench_indexfile import reset_hwm
from common import machine, publish

PATHS = ("build", "decode", "dispatch", "query_many", "verify", "kafka_walk", "kafka_rebuild")
HERE = Path(__file__).resolve().parent
KAFKA_BATCH = 1024


# ------------------------------------------------------------------------------- measuring

def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) * 1024
    return out


def measure(fn) -> tuple[object, dict]:
    """Run fn() once: its result, and wall/CPU seconds, peak resident and anonymous growth."""
    gc.collect()
    exact = reset_hwm()
    before = _status()
    peak_anon = [before["RssAnon"]]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.005):
            peak_anon[0] = max(peak_anon[0], _status()["RssAnon"])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    sampler.join()
    after = _status()
    hwm = after["VmHWM"] if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out, {"wall": wall, "user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime,
                 "faults": r1.ru_minflt - r0.ru_minflt, "rss_before": before["VmRSS"],
                 "growth": max(hwm - before["VmRSS"], 0),
                 "anon_growth": max(max(peak_anon[0], after["RssAnon"]) - before["RssAnon"], 0)}


# ------------------------------------------------------------------------------- inputs

def store_dir(work: Path, scale: int) -> Path:
    return work / f"store-{scale}x"


def kafka_dir(work: Path, scale: int) -> Path:
    return work / f"kafka-{scale}x"


def workload(messages: int):
    from rmqlab.lab.workload import Workload

    return Workload(messages=messages, seed=1, body_median=100, topics=("TopicTest", "orders", "payments", "users"),
                    rate=20_000.0)


def prepare(work: Path, scales: list[int], args) -> None:
    """The CommitLog of each scale's store and each scale's Kafka segment (not measured)."""
    from bench_kafka import write_segment

    from rmqlab.lab.generate import generate_store

    for s in scales:
        root = store_dir(work, s)
        if not (root / "commitlog").is_dir():
            t0 = time.perf_counter()
            generate_store(root, workload(args.base_messages * s), dispatch=False)
            print(f"  store {s}x: {args.base_messages * s:,} messages written in {time.perf_counter() - t0:.1f} s",
                  flush=True)
        picks = store_dir(work, s) / "query-keys.npy"
        if not picks.exists():   # drawn here, so that the measuring process holds no freed memory to reuse
            np.save(picks, draw_keys(store_dir(work, s), args.base_messages * s // 10), allow_pickle=True)
        seg = kafka_dir(work, s)
        if not seg.is_dir():
            t0 = time.perf_counter()
            write_segment(seg, args.base_kafka_mib * s << 20, KAFKA_BATCH)
            print(f"  Kafka segment {s}x: {args.base_kafka_mib * s} MiB written in {time.perf_counter() - t0:.1f} s",
                  flush=True)


# ------------------------------------------------------------------------------- the paths

def run_build(work: Path, scale: int, args, profile) -> dict:
    from bench_indexfile import check_against_model
    from bench_indexfile import workload as key_workload

    import rmqlab
    from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM

    n = args.base_keys * scale
    keys, phy, ts = key_workload(n)
    path = work / "build-20240610000000000"
    if path.exists():
        path.unlink()
    written, m = profile(lambda: rmqlab.build_index_file(path, keys, phy, ts, hash_slot_num=DEFAULT_HASH_SLOT_NUM,
                                                         index_num=DEFAULT_INDEX_NUM))
    assert written == n, written
    check_against_model(path, keys, phy, ts)
    path.unlink()
    return {**m, "units": n, "unit": "keys"}


def _warm(root: Path) -> None:
    for p in sorted((root / "commitlog").iterdir()):
        with open(p, "rb") as fh:
            while fh.read(1 << 24):
                pass


def run_decode(work: Path, scale: int, args, profile) -> dict:
    from rmqlab.formats import commitlog as cl

    root = store_dir(work, scale)
    _warm(root)
    df, m = profile(lambda: cl.read_columns(root / "commitlog", body=False))
    n = args.base_messages * scale
    phy = df["phy_offset"].to_numpy(np.int64)
    assert len(df) == n and bool((phy[1:] > phy[:-1]).all()), len(df)
    files = cl.store_files(root / "commitlog")
    for i in np.random.default_rng(scale).choice(n, 500, replace=False):
        f = next(f for f in reversed(files) if f.start_offset <= phy[i])
        model = cl.read_message(f.path, int(phy[i]) - f.start_offset)
        row = df.iloc[int(i)]
        assert (model.topic, model.store_timestamp, model.queue_offset, model.properties.get("KEYS")) == (
            row["topic"], row["store_timestamp"], row["queue_offset"], row["keys"]), i
    return {**m, "units": n, "unit": "messages"}


def run_dispatch(work: Path, scale: int, args, profile) -> dict:
    from rmqlab.formats import commitlog as cl
    from rmqlab.store.directory import Store
    from rmqlab.store.indexservice import expand_columns

    root = store_dir(work, scale)
    for part in ("consumequeue", "index", "checkpoint"):
        p = root / part
        shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
    _warm(root)
    report, m = profile(lambda: Store(root).dispatch())
    n = args.base_messages * scale
    msgs = cl.read_columns(root / "commitlog", body=False)
    keys = len(expand_columns(msgs[["topic", "keys", "uniq_key", "phy_offset", "store_timestamp", "sys_flag"]]))
    del msgs
    assert report.messages == report.consume_queue_units == n, report.as_dict()
    assert report.index_keys == keys, (report.index_keys, keys)
    return {**m, "units": n, "unit": "messages", "index_keys": keys}


def draw_keys(root: Path, n: int) -> np.ndarray:
    """(topic, first key, offset) of n random messages that have keys, as a (3, n) object array."""
    from rmqlab.formats import commitlog as cl

    frame = cl.read_columns(root / "commitlog", body=False, arrow=True)
    keyed = np.flatnonzero(frame["keys"].notna().to_numpy())
    rows = keyed[np.random.default_rng(7).integers(0, len(keyed), n)]
    return np.array([frame["topic"].iloc[rows].astype(object).to_numpy(),
                     frame["keys"].iloc[rows].astype(str).str.split(" ").str[0].to_numpy(object),
                     frame["phy_offset"].iloc[rows].to_numpy(np.int64).astype(object)], dtype=object)


def run_query_many(work: Path, scale: int, args, profile) -> dict:
    from rmqlab.store.directory import Store

    root = store_dir(work, scale)
    store = Store(root)
    topics, keys, own = np.load(root / "query-keys.npy", allow_pickle=True)
    own = own.astype(np.int64)
    n = len(keys)
    _warm(root)
    table, m = profile(lambda: store.query_many(topics, keys))
    key_index = table["key_index"].to_numpy(np.int64)
    got = key_index * (1 << 40) + table["phy_offset"].to_numpy(np.int64)
    counts = np.bincount(key_index, minlength=n)
    found = np.isin(np.arange(n) * (1 << 40) + own, got)
    assert bool((found | (counts == 64)).all()), "a key did not find its own message"
    with store.index() as idx:
        for i in np.random.default_rng(8).choice(n, 200, replace=False):
            lo = int(np.searchsorted(key_index, i))
            assert table["phy_offset"].to_numpy()[lo:lo + counts[i]].tolist() == \
                idx.query_offset(topics[i], keys[i]).phy_offsets, (topics[i], keys[i])
    return {**m, "units": n, "unit": "keys", "rows": len(table)}


def run_verify(work: Path, scale: int, args, profile) -> dict:
    from rmqlab.formats.indexfile import IndexFile
    from rmqlab.verify import verify_path

    root = store_dir(work, scale)
    if not (root / "index").is_dir():
        raise SystemExit(f"{root}: not dispatched (the verify path runs after dispatch)")
    _warm(root)
    rep, m = profile(lambda: verify_path(root))
    n = args.base_messages * scale
    keys = 0
    for p in sorted((root / "index").iterdir()):
        with IndexFile.open(p) as f:
            keys += f.header.keys
    assert rep.ok, rep.summary()
    assert rep.cross_counts["messages"] == n and rep.cross_counts["index_entries"] == keys, rep.cross_counts
    return {**m, "units": n, "unit": "messages"}


def _segment(work: Path, scale: int) -> Path:
    return next(kafka_dir(work, scale).glob("*.log"))


def run_kafka_walk(work: Path, scale: int, args, profile) -> dict:
    from rmqlab.kafka import log as kl

    path = _segment(work, scale)
    path.read_bytes()
    df, m = profile(lambda: kl.read_batches(path, verify_crc=True))
    n = (args.base_kafka_mib * scale << 20) // KAFKA_BATCH
    assert len(df) == n and int(df["last_offset"].iloc[-1]) == n - 1 and bool(df["crc_ok"].all())
    return {**m, "units": path.stat().st_size, "unit": "bytes"}


def run_kafka_rebuild(work: Path, scale: int, args, profile) -> dict:
    from bench_kafka import expected_index

    from rmqlab.kafka import rebuild as rb

    path = _segment(work, scale)
    path.read_bytes()
    out = work / f"rebuilt-{scale}x"
    (index, _), m = profile(lambda: rb.rebuild_indexes(path, out, overwrite=True))
    n = (args.base_kafka_mib * scale << 20) // KAFKA_BATCH
    assert index.read_bytes() == expected_index(n, KAFKA_BATCH), "the rebuilt .index is not the rule's entries"
    shutil.rmtree(out)
    return {**m, "units": path.stat().st_size, "unit": "bytes"}


RUNS = {name: globals()[f"run_{name}"] for name in PATHS}


def child(args) -> None:
    """One path at one scale in this fresh process; prints one JSON line (or the top functions)."""
    if args.profile_child:
        import cProfile
        import io
        import pstats

        def profile(fn):
            pr = cProfile.Profile()
            pr.enable()
            out = fn()
            pr.disable()
            text = io.StringIO()
            stats = pstats.Stats(pr, stream=text)
            total = stats.total_tt
            top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:3]   # by own time
            profile.top = [(f"{Path(f).name}:{fn_name}" if f != "~" else fn_name, tt / total)
                           for (f, _, fn_name), (_, _, tt, _, _) in top]
            return out, {}
        RUNS[args.child](args.work, args.scale, args, profile)
        print(json.dumps({"top": profile.top}))
        return
    result = RUNS[args.child](args.work, args.scale, args, measure)
    print(json.dumps(result))


def run_child(path: str, scale: int, args, profile: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--child", path, "--scale", str(scale), "--work", str(args.work),
           "--base-messages", str(args.base_messages), "--base-keys", str(args.base_keys),
           "--base-kafka-mib", str(args.base_kafka_mib)] + (["--profile-child"] if profile else [])
    out = subprocess.run(cmd, cwd=HERE, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------- report

def render(res: dict, args, paths: list[str]) -> str:
    mib = 2**20
    scales = args.scale_list
    lines = [f"## {dt.date.today().isoformat()}: scaling of each path at {', '.join(f'{s}x' for s in scales)} input",
             "", f"Machine: {machine()}; load average {res['load_start']} at the start, {res['load_end']} at the end.",
             f"Inputs at 1x: {args.base_keys:,} index keys, {args.base_messages:,} messages (the bench_store "
             f"workload), a {args.base_kafka_mib} MiB Kafka segment of 1 KiB batches. One fresh process a measurement "
             f"(median of {args.repeat}); every answer checked (see the script). Peak growth counts the file pages a "
             "path maps; anonymous growth is what it allocates.",
             "", "| path | scale | input | wall s | CPU s | CPU / 1x | CPU per unit | peak growth | anon growth "
             "| anon / 1x |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    verdicts = []
    for path in paths:
        base = res[path][scales[0]]
        for s in scales:
            r = res[path][s]
            unit = {"keys": "key", "messages": "message", "bytes": "MB"}[r["unit"]]
            per = r["cpu"] / (r["units"] / 1e6 if r["unit"] == "bytes" else r["units"]) * 1e6
            per_text = f"{per:,.0f} µs/{unit}" if r["unit"] == "bytes" else f"{per:.2f} µs/{unit}"
            size = f"{r['units'] / mib:,.0f} MiB" if r["unit"] == "bytes" else f"{r['units']:,} {r['unit']}"
            lines.append(f"| {path} | {s}x | {size} | {r['wall']:.2f} | {r['cpu']:.2f} | "
                         f"{r['cpu'] / base['cpu']:.1f}x | {per_text} | {r['growth'] / mib:,.0f} MiB | "
                         f"{r['anon_growth'] / mib:,.0f} MiB | {r['anon_growth'] / max(base['anon_growth'], 1):.1f}x |")
        top = res[path][scales[-1]]
        grow = scales[-1] / scales[0]
        time_ratio = top["cpu"] / base["cpu"] / grow
        mem = top["anon_growth"] / max(base["anon_growth"], 1)
        time_word = "linear" if 0.7 <= time_ratio <= 1.4 else \
            "below linear (fixed costs at the small end)" if time_ratio < 0.7 else "above linear"
        mem_word = memory_verdict(mem, grow)
        extra = ""
        if "rows" in top:
            extra = "; rows returned: " + ", ".join(f"{res[path][s]['rows']:,}" for s in scales)
        if path in res.get("top", {}):
            extra += f"; own time at {scales[-1]}x: " + ", ".join(f"{name} {share:.0%}" for name, share in
                                                               res["top"][path])
        verdicts.append(f"- {path}: CPU time {time_ratio:.2f} of linear ({time_word}); anonymous memory "
                        f"{mem:.1f}x its {scales[0]}x figure for {grow:g}x the input ({mem_word}){extra}")
    largest = scales[-1]
    by_time = max(paths, key=lambda p: res[p][largest]["wall"])
    by_mem = max(paths, key=lambda p: res[p][largest]["anon_growth"])
    lines += ["", "CPU time ratios use CPU seconds (the wall clock waits for the other jobs on the machine).", "",
              *verdicts, "",
              f"At {largest}x the most time: {by_time} ({res[by_time][largest]['wall']:.1f} s); the most memory: "
              f"{by_mem} (+{res[by_mem][largest]['anon_growth'] / mib:,.0f} MiB anonymous)."]
    return "\n".join(lines)


def memory_verdict(ratio: float, grow: float) -> str:
    """Words for memory that grew `ratio` times over `grow` times the input, by the exponent
    k of ratio = grow ** k: a fixed size plus a bounded part stays far below the input's growth.

    >>> memory_verdict(2.1, 64), memory_verdict(65.2, 64), memory_verdict(1.2, 16)
    ('bounded (input^0.18)', 'about proportional to the input (input^1.00)', 'bounded (input^0.07)')
    """
    import math

    k = math.log(max(ratio, 1.0)) / math.log(grow) if grow > 1 else 0.0
    word = "bounded" if k < 0.3 else "growing slower than the input" if k < 0.7 else \
        "about proportional to the input" if k <= 1.3 else "growing faster than the input"
    return f"{word} (input^{k:.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="1,4,16", help="input multiples (default 1,4,16)")
    ap.add_argument("--base-messages", type=int, default=250_000)
    ap.add_argument("--base-keys", type=int, default=1_249_999)
    ap.add_argument("--base-kafka-mib", type=int, default=64)
    ap.add_argument("--paths", default=",".join(PATHS), help=f"a subset of {','.join(PATHS)}")
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes a measurement (median)")
    ap.add_argument("--profile", action="store_true", help="top functions of each path at the largest scale")
    ap.add_argument("--work", type=Path, help="scratch folder (kept; default: a temporary one, removed)")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--child", choices=PATHS, help=argparse.SUPPRESS)
    ap.add_argument("--scale", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    args.scale_list = sorted(int(s) for s in args.scales.split(","))
    chosen = [p for p in PATHS if p in args.paths.split(",")]
    keep = args.work is not None
    args.work = (args.work or Path(tempfile.mkdtemp(prefix="rmqlab-bench-scaling-"))).resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    load = lambda: ", ".join(f"{x:.2f}" for x in os.getloadavg())  # noqa: E731
    res: dict = {"load_start": load(), "top": {}}
    try:
        prepare(args.work, args.scale_list, args)
        for s in args.scale_list:   # dispatch first: query_many and verify read what it writes
            for path in chosen:
                runs = [run_child(path, s, args) for _ in range(args.repeat)]
                r = {k: statistics.median(one[k] for one in runs) if isinstance(v, (int, float)) else v
                     for k, v in runs[0].items()}
                r["cpu"] = r["user"] + r["sys"]
                res.setdefault(path, {})[s] = r
                print(f"  {path} {s}x: {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU, +{r['anon_growth'] / 2**20:,.0f} "
                      f"MiB anonymous, +{r['growth'] / 2**20:,.0f} MiB resident (load {load()})", flush=True)
        if args.profile:
            for path in chosen:
                res["top"][path] = run_child(path, args.scale_list[-1], args, profile=True)["top"]
        res["load_end"] = load()
        publish(render(res, args, chosen), args.record)
    finally:
        if not keep:
            shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
