"""IndexFile benchmark on a default-size file (420,000,040 bytes, 19,999,999 keys).

The workload is the reference one: key n is ``"TopicTest#ORDER_<n>"``, phyOffset ``200*(n+1)``,
storeTimestamp ``1718000000000 + n // 10``. Measured:

* the headline, measured as the Java reference was (one fresh JVM a run, page faults
  included): bulk build (``rmqlab.build_index_file``) from a pyarrow array, one build per
  fresh Python process (the child builds its inputs first, then times only the build); median
  of --fresh runs, with the build's peak resident growth (VmHWM reset before the build);
* the same build warm, repeated in this process (memory already touched), from a pyarrow
  array and from a list of str, with and without forcing the file to disk; median of --repeat;
* peak memory of the warm build: resident memory sampled every millisecond, reported both as
  the process total and as the growth over the inputs already in memory;
* sequential ``put_key`` (the pure-Python path) on --put-keys keys;
* single-key ``select_phy_offsets`` latency p50/p99 over --lookups random existing keys;
* the batch look-up ``select_phy_offsets_many`` on the same keys, as look-ups/s.

Every answer is checked, so a fast wrong result cannot pass as a benchmark: the warm build's
file is compared field by field with a NumPy model of putKey (entries, chains, slots, header),
every fresh-process build must have the same SHA-256 as that file, and each looked-up key must
return its own offset. Run:  make bench   (or: python benchmarks/bench_indexfile.py --record)
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from common import machine, publish, sha256_of

import rmqlab
from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, Geometry, IndexFile

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"

# RocketMQ's own Java IndexFile on a 2-core machine of this kind, median of 3 runs (issue figures).
JAVA_PUT_KEYS_PER_S = 10.0e6          # 19,999,999 keys in 2.0 s
JAVA_LOOKUPS_PER_S = 663e3            # selectPhyOffset, random existing keys
JAVA_PEAK_RSS = 2.09 * 2**30          # bytes
TARGET_X_JAVA = 3.0                   # bulk build, fresh process: at least this multiple of putKey
TARGET_GROWTH = 1.3                   # peak resident growth of the build, in file sizes
FILE_SIZE = Geometry(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM).file_size
LONG_MAX = 2**63 - 1


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakSampler:
    """Highest resident set size seen while the block runs (sampled every millisecond, plus the
    kernel's high-water mark when that rose during the block)."""

    def __enter__(self):
        self.start = rss()
        self.hwm_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        if hwm > self.hwm_before:
            self.peak = max(self.peak, hwm)
        self.peak = max(self.peak, rss())


def vm_hwm() -> int:
    """The kernel's peak resident set size of this process (VmHWM), bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_hwm() -> bool:
    """Lower VmHWM to the current RSS (Linux: clear_refs 5), so that it measures one block."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False



def workload(n: int):
    numbers = np.arange(n, dtype=np.int64)
    keys = pc.binary_join_element_wise("TopicTest#ORDER_", pc.cast(pa.array(numbers), pa.string()), "")
    return keys, 200 * (numbers + 1), 1718000000000 + numbers // 10


def bench_build(keys, phy, ts, repeat: int, fsync: bool) -> dict:
    times, peaks, growth = [], [], []
    path = OUT / "20240610000000000"
    for _ in range(repeat):
        if path.exists():
            path.unlink()
        with PeakSampler() as mem:
            t0 = time.perf_counter()
            written = rmqlab.build_index_file(path, keys, phy, ts, hash_slot_num=DEFAULT_HASH_SLOT_NUM,
                                              index_num=DEFAULT_INDEX_NUM, fsync=fsync)
            times.append(time.perf_counter() - t0)
        peaks.append(mem.peak)
        growth.append(mem.peak - mem.start)
        assert written == DEFAULT_INDEX_NUM - 1 == len(phy), written
    median = statistics.median(times)
    return {"seconds": median, "all_seconds": times, "keys_per_s": len(phy) / median,
            "peak_rss": max(peaks), "peak_growth": max(growth)}


def fresh_child(path: Path, n: int) -> None:
    """One build in this (fresh) process: inputs first, then only the build is timed. Prints
    one JSON line for the parent."""
    keys, phy, ts = workload(n)
    if path.exists():
        path.unlink()
    gc.collect()
    exact_hwm = reset_hwm()
    before = rss()
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    # The kernel's high-water mark is exact; a sampling thread (the fallback) costs CPU time
    # that the build would otherwise have.
    sampler = contextlib.nullcontext() if exact_hwm else PeakSampler()
    with sampler as mem:
        t0 = time.perf_counter()
        written = rmqlab.build_index_file(path, keys, phy, ts, hash_slot_num=DEFAULT_HASH_SLOT_NUM,
                                          index_num=DEFAULT_INDEX_NUM)
        seconds = time.perf_counter() - t0
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    peak = vm_hwm() if exact_hwm else mem.peak
    result = {"seconds": seconds, "written": written, "peak_growth": peak - before,
              "minor_faults": usage1.ru_minflt - usage0.ru_minflt,
              "user_s": usage1.ru_utime - usage0.ru_utime, "sys_s": usage1.ru_stime - usage0.ru_stime,
              "sha256": sha256_of(path)}
    path.unlink()
    print(json.dumps(result))


def bench_fresh(n: int, runs: int) -> dict:
    """`runs` builds, each in a new interpreter running this script with --fresh-child."""
    package_root = str(Path(rmqlab.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    children = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, __file__, "--fresh-child", str(OUT / "fresh"), "--keys", str(n)],
                             env=env, cwd=HERE, check=True, capture_output=True, text=True)
        child = json.loads(out.stdout.strip().splitlines()[-1])
        assert child["written"] == n, child
        children.append(child)
    times = [c["seconds"] for c in children]
    median = statistics.median(times)
    return {"seconds": median, "all_seconds": times, "keys_per_s": n / median,
            "peak_growth": statistics.median(c["peak_growth"] for c in children),
            "max_peak_growth": max(c["peak_growth"] for c in children),
            "minor_faults": statistics.median(c["minor_faults"] for c in children),
            "cpu_s": statistics.median(c["user_s"] + c["sys_s"] for c in children),
            "sha256": [c["sha256"] for c in children]}


def check_against_model(path: Path, keys, phy: np.ndarray, ts: np.ndarray) -> None:
    """The file must be what putKey, applied in order to a new file, leaves: checked field by
    field against a NumPy model written from the format's definition (hashes from
    rmqlab.index_hash_many, chains by a stable sort on the slot)."""
    n, hsn = len(phy), DEFAULT_HASH_SLOT_NUM
    key_hash = rmqlab.index_hash_many(keys)
    slot = key_hash.astype(np.int64) % hsn
    order = np.argsort(slot, kind="stable")
    in_order = slot[order]
    entry_no = order + 1
    same = in_order[1:] == in_order[:-1]
    prev = np.zeros(n, np.int64)
    prev[order[1:][same]] = entry_no[:-1][same]
    newest = np.zeros(hsn, np.int64)
    last = np.append(~same, True)
    newest[in_order[last]] = entry_no[last]
    time_diff = np.clip((ts - ts[0]) // 1000, 0, 2**31 - 1)  # the workload's times never go back
    with IndexFile.open(path) as f:
        e = f.entries
        h = f.header
        assert (h.begin_timestamp, h.end_timestamp, h.begin_phy_offset, h.end_phy_offset) == (
            ts[0], ts[-1], phy[0], phy[-1]), h
        assert h.index_count == n + 1 and h.hash_slot_count == int(last.sum()), h
        assert (e["key_hash"][1:n + 1] == key_hash).all(), "key_hash"
        assert (e["phy_offset"][1:n + 1] == phy).all(), "phy_offset"
        assert (e["time_diff"][1:n + 1] == time_diff).all(), "time_diff"
        assert (e["prev_index"][1:n + 1] == prev).all(), "prev_index"
        assert (f.slots == newest).all(), "slots"
        assert not e[0].tolist()[0] and not any(e[0].tolist()), "entry 0 is never written"
        assert not e[n + 1:].view(np.uint8).any(), "entries after the last must stay zero"


def bench_put_key(keys_list, phy, ts, n: int) -> dict:
    path = OUT / "put_key"
    if path.exists():
        path.unlink()
    with IndexFile.create(path) as f:
        put = f.put_key
        t0 = time.perf_counter()
        for i in range(n):
            put(keys_list[i], int(phy[i]), int(ts[i]))
        seconds = time.perf_counter() - t0
    path.unlink()
    return {"keys": n, "seconds": seconds, "keys_per_s": n / seconds}


def bench_lookups(path: Path, keys_list, phy, lookups: int) -> dict:
    """Look-ups on a freshly opened (cold) map, then warm: RocketMQ's figure is taken on a live
    IndexFile whose pages are mapped, so the warm numbers are the comparable ones. The cyclic
    GC is off while timing (as timeit does): a full collection walks the 20M key strings."""
    rng = np.random.default_rng(20240610)
    picks = rng.integers(0, len(keys_list), lookups)
    probe = [keys_list[i] for i in picks]
    want = phy[picks]
    lat = np.empty(lookups, dtype=np.int64)
    gc.disable()
    try:
        with IndexFile.open(path) as f:
            select, clock = f.select_phy_offsets, time.perf_counter_ns
            t0 = time.perf_counter()
            f.select_phy_offsets_many(probe, 64, 0, LONG_MAX)
            cold_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            batch = f.select_phy_offsets_many(probe, 64, 0, LONG_MAX)
            batch_s = time.perf_counter() - t0
            answers = []
            for i, key in enumerate(probe):
                t0 = clock()
                got = select(key, 64, 0, LONG_MAX)
                lat[i] = clock() - t0
                answers.append(got)
    finally:
        gc.enable()
    for i, got in enumerate(answers):
        assert int(want[i]) in got, (probe[i], got)
        assert batch[i] == got, (probe[i], batch[i], got)
    return {"lookups": lookups, "p50_us": float(np.percentile(lat, 50)) / 1e3,
            "p99_us": float(np.percentile(lat, 99)) / 1e3, "mean_us": float(lat.mean()) / 1e3,
            "batch_cold_per_s": lookups / cold_s, "batch_seconds": batch_s,
            "batch_per_s": lookups / batch_s,
            "mean_results": float(np.mean([len(a) for a in answers])),
            "mean_entries_read": float(batch.entries_read.mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=DEFAULT_INDEX_NUM - 1)
    ap.add_argument("--repeat", type=int, default=3, help="warm in-process builds of each kind")
    ap.add_argument("--fresh", type=int, default=5, help="builds, each in a fresh process")
    ap.add_argument("--fresh-child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--put-keys", type=int, default=1_000_000)
    ap.add_argument("--lookups", type=int, default=100_000)
    ap.add_argument("--record", action="store_true", help="append the results to benchmarks/RESULTS.md")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    if args.fresh_child:
        fresh_child(args.fresh_child, args.keys)
        return

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    # First, while this process holds nothing large: each child builds its own inputs.
    fresh = bench_fresh(args.keys, args.fresh)
    print(f"fresh-process builds: {', '.join(f'{t:.3f}' for t in fresh['all_seconds'])} s")

    t0 = time.perf_counter()
    keys_arrow, phy, ts = workload(args.keys)
    keys_list = keys_arrow.to_pylist()
    print(f"workload: {args.keys:,} keys generated in {time.perf_counter() - t0:.1f} s (not timed below)")

    res = {"date": dt.date.today().isoformat(), "machine": machine(), "keys": args.keys,
           "file_size": FILE_SIZE, "rss_with_inputs": rss(), "load": load}
    res["build_arrow"] = bench_build(keys_arrow, phy, ts, args.repeat, fsync=False)
    reference = OUT / "20240610000000000"
    t0 = time.perf_counter()
    check_against_model(reference, keys_arrow, phy, ts)
    want_sha256 = sha256_of(reference)
    print(f"warm build checked against the putKey model in {time.perf_counter() - t0:.1f} s (not timed)")
    for child in fresh.pop("sha256"):
        assert child == want_sha256, "a fresh-process build wrote other bytes"
    res["build_fresh"] = fresh
    res["build_list"] = bench_build(keys_list, phy, ts, args.repeat, fsync=False)
    assert sha256_of(reference) == want_sha256, "the build from a list of str wrote other bytes"
    res["build_arrow_fsync"] = bench_build(keys_arrow, phy, ts, args.repeat, fsync=True)
    assert sha256_of(reference) == want_sha256, "the build with fsync wrote other bytes"
    res["put_key"] = bench_put_key(keys_list, phy, ts, min(args.put_keys, args.keys))
    res["lookup"] = bench_lookups(OUT / "20240610000000000", keys_list, phy, args.lookups)
    (OUT / "20240610000000000").unlink()

    text = report(res)
    (OUT / "last.json").write_text(json.dumps(res, indent=2))
    publish(text, args.record)


def report(r: dict) -> str:
    gib, mib = 2**30, 2**20
    ba, bl, bf, pk, lk = r["build_arrow"], r["build_list"], r["build_arrow_fsync"], r["put_key"], r["lookup"]
    fr = r["build_fresh"]
    growth = max(ba["peak_growth"], bl["peak_growth"])
    total = max(ba["peak_rss"], bl["peak_rss"])
    fresh_x = fr["keys_per_s"] / JAVA_PUT_KEYS_PER_S
    target_s = r["keys"] / (TARGET_X_JAVA * JAVA_PUT_KEYS_PER_S)
    ok = lambda cond: "met" if cond else "NOT met"  # noqa: E731
    rows = [
        ("**bulk build, pyarrow keys, fresh process** (as Java was measured)",
         f"**{fr['seconds']:.3f} s, {fr['keys_per_s'] / 1e6:.1f} M keys/s** (median of "
         f"{len(fr['all_seconds'])} processes: {', '.join(f'{t:.2f}' for t in sorted(fr['all_seconds']))} s; "
         f"{fr['cpu_s']:.2f} CPU-s, {fr['minor_faults']:,.0f} minor faults)",
         f"**{fresh_x:.2f}x Java putKey**"),
        ("peak memory of the fresh build", f"+{fr['peak_growth'] / mib:.0f} MiB "
         f"({fr['peak_growth'] / r['file_size']:.2f}x file size; worst "
         f"{fr['max_peak_growth'] / r['file_size']:.2f}x)", ""),
        ("bulk build, pyarrow keys, warm (repeated in one process)",
         f"{ba['seconds']:.3f} s, {ba['keys_per_s'] / 1e6:.1f} M keys/s",
         f"{ba['keys_per_s'] / JAVA_PUT_KEYS_PER_S:.2f}x Java putKey"),
        ("bulk build, list of str, warm", f"{bl['seconds']:.3f} s, {bl['keys_per_s'] / 1e6:.1f} M keys/s",
         f"{bl['keys_per_s'] / JAVA_PUT_KEYS_PER_S:.2f}x Java putKey"),
        ("bulk build + fsync, pyarrow, warm", f"{bf['seconds']:.3f} s, {bf['keys_per_s'] / 1e6:.1f} M keys/s",
         f"{bf['keys_per_s'] / JAVA_PUT_KEYS_PER_S:.2f}x Java putKey"),
        ("peak memory of the warm build", f"+{growth / mib:.0f} MiB over the inputs "
         f"({growth / r['file_size']:.2f}x file size); process total {total / gib:.2f} GiB",
         f"total {total / JAVA_PEAK_RSS:.2f}x Java's peak RSS"),
        ("sequential put_key (Python)", f"{pk['keys_per_s'] / 1e6:.2f} M keys/s on {pk['keys']:,} keys",
         f"{pk['keys_per_s'] / JAVA_PUT_KEYS_PER_S:.2f}x Java putKey"),
        ("select_phy_offsets latency (warm)", f"p50 {lk['p50_us']:.2f} µs, p99 {lk['p99_us']:.2f} µs "
         f"({lk['lookups']:,} random existing keys)",
         f"{1e6 / lk['mean_us'] / JAVA_LOOKUPS_PER_S:.2f}x Java look-ups/s (mean {lk['mean_us']:.2f} µs)"),
        ("select_phy_offsets_many (batch)", f"{lk['batch_per_s'] / 1e6:.2f} M look-ups/s warm, "
         f"{lk['batch_cold_per_s'] / 1e6:.2f} M/s on a freshly opened file; "
         f"{lk['mean_entries_read']:.1f} entries read a key",
         f"{lk['batch_per_s'] / JAVA_LOOKUPS_PER_S:.2f}x Java look-ups/s"),
    ]
    lines = [f"## {r['date']}: IndexFile, default geometry, {r['keys']:,} keys",
             "", f"Machine: {r['machine']}; load average {r['load']}.",
             "Reference: RocketMQ's Java IndexFile on a 2-core machine of this kind, median of 3 runs, "
             "one fresh JVM a run (page faults included): "
             "putKey 10.0 M keys/s, selectPhyOffset 663 k look-ups/s, peak RSS 2.09 GiB.",
             "Every build's bytes checked: the warm build field by field against a NumPy putKey model, "
             "every other build by SHA-256 against it.",
             "", "| measure | rmqlab | vs reference |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    lines += ["", "Targets:",
              f"- bulk build in a fresh process, at least {TARGET_X_JAVA:g}x Java putKey (under {target_s:.2f} s): "
              f"{ok(fr['seconds'] < target_s)} ({fr['seconds']:.3f} s, {fresh_x:.2f}x)",
              f"- peak memory growth of the fresh build under {TARGET_GROWTH}x file size: "
              f"{ok(fr['max_peak_growth'] < TARGET_GROWTH * r['file_size'])} "
              f"({fr['max_peak_growth'] / r['file_size']:.2f}x)",
              f"- single-key look-up p50 under 10 µs: {ok(lk['p50_us'] < 10)} ({lk['p50_us']:.2f} µs)",
              f"- batch look-up at least 2x Java: {ok(lk['batch_per_s'] >= 2 * JAVA_LOOKUPS_PER_S)} "
              f"({lk['batch_per_s'] / JAVA_LOOKUPS_PER_S:.2f}x)"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
