"""Whole-store benchmark: generate a store, decode its CommitLog, dispatch it, query it by key.

Measured on a synthetic store of --messages messages (default 10,000,000; small messages, body
median 100 bytes, 4 topics, default index geometry, 1 GiB CommitLog files):

* generator: messages/s of CommitLog written (workload columns + encode + write);
* decode: messages/s of ``commitlog.read_columns`` without and with bodies;
* dispatch: messages/s of ``Store.dispatch`` (ConsumeQueue units + index keys + checkpoint);
* end-to-end key query latency, p50/p99 over --queries random existing keys, broker mode two
  ways: ``IndexService.queryOffset`` on an open index + ``Store.read_at`` of its answer, and
  ``Store.query_by_key`` (opens the index, walks it, reads the messages, adds the rank); each
  answer must hold the message the key was drawn from (or 64 others: a hot key) and the two
  must agree; verified mode (``Store.explain_key``: every candidate read, compared, explained),
  checked to contain the message;
* bulk key queries: keys/s of ``Store.query_many`` over --bulk-keys keys drawn from random
  messages (hot keys come back often, as they would in a real list), broker mode; each key's rows
  are checked against its own queryOffset (a sample of 1,000 keys) and the number of rows
  against the sum of the per-key answers. Verified mode on the first --verified-keys distinct
  keys of that list (a hot key's verified answer is every message it has, up to 81,000 here, so
  the full list's answer would be 434 million rows); every key must find its own message.
Wall times come with the CPU time of the process and the load average: the machine is shared.
``--store DIR`` queries an existing dispatched store instead (no generator, decode or dispatch rows).

Run:  python benchmarks/bench_store.py [--messages N] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import shutil
import time
from pathlib import Path

import numpy as np
from common import machine, publish

from rmqlab.formats import commitlog as cl
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.store.directory import Store

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "store"



def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def cpu_timed(fn):
    """(result, wall seconds, CPU seconds of this process)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--bulk-keys", type=int, default=100_000, help="keys of each query_many call")
    ap.add_argument("--verified-keys", type=int, default=10_000, help="distinct keys of the verified query_many")
    ap.add_argument("--store", type=Path, help="query this dispatched store instead of generating one")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the generated store in benchmarks/out/store")
    args = ap.parse_args()
    res: dict = {"date": dt.date.today().isoformat(), "machine": machine(), "messages": args.messages,
                 "load_start": load()}
    if args.store is None:
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
        w = Workload(messages=args.messages, seed=1, body_median=100,
                     topics=("TopicTest", "orders", "payments", "users"), rate=20_000.0)

        def report_progress(done, total):
            print(f"\r  generated {done:,} / {total:,}", end="", flush=True)

        _, gen_s = timed(lambda: generate_store(OUT, w, dispatch=False, progress=report_progress))
        print()
        store = Store(OUT)
        cl.read_columns(store.commitlog_dir, body=False)   # warm the page cache
        frame, dec_s = timed(lambda: cl.read_columns(store.commitlog_dir, body=False))
        records = len(frame)
        del frame
        gc.collect()
        _, dec_body_s = timed(lambda: len(cl.read_columns(store.commitlog_dir, body=True)))
        gc.collect()
        report, disp_s = timed(store.dispatch)
        print(f"  dispatched: {report.as_dict()}")
        res.update(gen=records / gen_s, gen_s=gen_s, dec=records / dec_s, dec_body=records / dec_body_s,
                   disp=records / disp_s, disp_s=disp_s, keys=report.index_keys, units=report.consume_queue_units,
                   index_files=report.index_files)
        root = OUT
    else:
        store, root = Store(args.store), args.store
    res.update(query_keys(store, args))
    # allocated bytes: CommitLog and index files are preallocated sparse files
    res["bytes"] = sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())
    res["load_end"] = load()
    text = render(res)
    publish(text, args.record)
    if args.store is None and not args.keep:
        shutil.rmtree(OUT, ignore_errors=True)


def query_keys(store: Store, args) -> dict:
    """The key query measures (see the module docstring), each answer checked."""
    frame = cl.read_columns(store.commitlog_dir, body=False, arrow=True)
    records = len(frame)
    keyed = np.flatnonzero(frame["keys"].notna().to_numpy())
    rng = np.random.default_rng(7)

    def draw(messages, k):
        """(topic, first key, offset) of k random messages that have keys."""
        rows = keyed[rng.integers(0, len(keyed), k)]
        return (messages["topic"].iloc[rows].astype(object).to_numpy(),
                messages["keys"].iloc[rows].astype(str).str.split(" ").str[0].to_numpy(object),
                messages["phy_offset"].iloc[rows].to_numpy(np.int64))

    picks, bulk = draw(frame, args.queries), draw(frame, args.bulk_keys)
    del frame
    gc.collect()
    found_lat, broker_lat, verified_lat = [], [], []
    gc.disable()
    try:
        with store.index() as idx:
            for topic, key, phy in zip(*picks):
                t0 = time.perf_counter()
                offs = idx.query_offset(topic, key).phy_offsets
                rows = store.read_at(offs)
                found_lat.append(time.perf_counter() - t0)
                assert rows["phy_offset"].tolist() == offs and (phy in offs or len(offs) == 64), (topic, key)
        for topic, key, phy in zip(*picks):
            t0 = time.perf_counter()
            rows = store.query_by_key(topic, key)
            broker_lat.append(time.perf_counter() - t0)
            assert rows["rank"].tolist() == list(range(len(rows))) and (phy in rows["phy_offset"].tolist()
                                                                       or len(rows) == 64), (topic, key)
        for topic, key, phy in zip(*picks):
            t0 = time.perf_counter()
            q = store.explain_key(topic, key)
            verified_lat.append(time.perf_counter() - t0)
            # a hot key may have more matches than the broker's 64, but verified finds them all
            assert phy in set(q.verified["phy_offset"]), (topic, key)
    finally:
        gc.enable()
    topics, keys, phys = bulk
    print(f"  bulk broker query_many of {len(keys):,} keys (load {load()})", flush=True)
    many, many_s, many_cpu = cpu_timed(lambda: store.query_many(topics, keys))
    with store.index() as idx:   # a fast wrong answer must fail: each key as its own query
        counts = np.bincount(many["key_index"].to_numpy(), minlength=len(keys))
        for i in rng.choice(len(keys), min(1_000, len(keys)), replace=False):
            lo = int(np.searchsorted(many["key_index"].to_numpy(), i))
            mine = many["phy_offset"].to_numpy()[lo:lo + counts[i]].tolist()
            assert mine == idx.query_offset(topics[i], keys[i]).phy_offsets, (topics[i], keys[i])
        assert (counts[(counts < 64)] > 0).all(), "a key's own message was not found"
    many_rows = len(many)
    del many
    gc.collect()
    first = np.unique(np.char.add(topics.astype(str), np.char.add("#", keys.astype(str))), return_index=True)[1]
    first = np.sort(first)[:args.verified_keys]
    vt, vk, vp = topics[first], keys[first], phys[first]
    print(f"  bulk verified query_many of {len(vk):,} distinct keys (load {load()})", flush=True)
    real, real_s, real_cpu = cpu_timed(lambda: store.query_many(vt, vk, mode="verified"))
    got = set(zip(real["key_index"].tolist(), real["phy_offset"].tolist()))
    assert all((i, int(p)) in got for i, p in enumerate(vp)), "a key missed its own message"
    assert (real["topic"].to_numpy(object) == vt[real["key_index"].to_numpy()]).all()
    pct = lambda a, q: float(np.percentile(a, q)) * 1e3  # noqa: E731
    return {"records": records, "queries": len(picks[0]),
            "f50": pct(found_lat, 50), "f99": pct(found_lat, 99),
            "b50": pct(broker_lat, 50), "b99": pct(broker_lat, 99),
            "v50": pct(verified_lat, 50), "v99": pct(verified_lat, 99),
            "bulk": len(keys), "many": len(keys) / many_s, "many_s": many_s, "many_cpu": many_cpu,
            "many_rows": many_rows, "verified_keys": len(vk), "real": len(vk) / real_s, "real_s": real_s,
            "real_cpu": real_cpu, "real_rows": len(real)}


def render(r: dict) -> str:
    ok = lambda cond: "met" if cond else "NOT met"  # noqa: E731
    rows = []
    if "gen" in r:
        rows += [
            f"| generator (columns + encode + write) | {r['gen'] / 1e3:,.0f} k messages/s ({r['gen_s']:.1f} s) |",
            f"| CommitLog decode, read_columns without bodies | {r['dec'] / 1e3:,.0f} k messages/s |",
            f"| CommitLog decode, read_columns with bodies | {r['dec_body'] / 1e3:,.0f} k messages/s |",
            f"| dispatch (ConsumeQueue + index + checkpoint) | {r['disp'] / 1e3:,.0f} k messages/s "
            f"({r['disp_s']:.1f} s: {r['units']:,} units, {r['keys']:,} index keys, {r['index_files']} index files) |"]
    rows += [
        f"| key query, broker mode: queryOffset on the open index + read_at | p50 {r['f50']:.2f} ms, "
        f"p99 {r['f99']:.2f} ms ({r['queries']} random keys) |",
        f"| key query, broker mode, end to end: Store.query_by_key (opens the index) | p50 {r['b50']:.2f} ms, "
        f"p99 {r['b99']:.2f} ms |",
        f"| key query, verified mode, end to end: Store.explain_key | p50 {r['v50']:.2f} ms, "
        f"p99 {r['v99']:.2f} ms |",
        f"| bulk key queries, query_many, broker mode | {r['many'] / 1e3:,.1f} k keys/s ({r['bulk']:,} keys in "
        f"{r['many_s']:.2f} s, {r['many_cpu']:.2f} CPU-s; {r['many_rows']:,} rows) |",
        f"| bulk key queries, query_many, verified mode | {r['real'] / 1e3:,.1f} k keys/s ({r['verified_keys']:,} "
        f"distinct keys in {r['real_s']:.2f} s, {r['real_cpu']:.2f} CPU-s; {r['real_rows']:,} rows) |"]
    return "\n".join([
        f"## {r['date']}: whole store, {r['messages']:,} messages ({r['records']:,} CommitLog records, "
        f"{r['bytes'] / 2**30:.1f} GiB on disk)",
        "", f"Machine: {r['machine']}; load average {r['load_start']} at the start, {r['load_end']} at the end.",
        "Workload: 4 topics, body median 100 B, UNIQ_KEY on, about 1 key a message (10% keyless, 20% Zipf hot "
        "keys), default index geometry (5,000,000 slots, 20,000,000 entries), 1 GiB CommitLog files. "
        "Every answer checked (see the script).",
        "", "| measure | result |", "|---|---|", *rows,
        "", "Targets:",
        *([f"- generator at least 500,000 messages/s: {ok(r['gen'] >= 500_000)}"] if "gen" in r else []),
        f"- single key query p50 under 1 ms end to end: {ok(r['b50'] < 1)} ({r['b50']:.2f} ms)",
        f"- query_many in broker mode at least 100,000 keys/s: {ok(r['many'] >= 100_000)} "
        f"({r['many'] / 1e3:,.0f} k keys/s)",
    ])


if __name__ == "__main__":
    main()
