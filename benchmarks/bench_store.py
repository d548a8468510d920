"""Whole-store benchmark: generate a store, decode its CommitLog, dispatch it, query it by key.

Measured on a synthetic store of --messages messages (default 10,000,000; small messages, body
median 100 bytes, 4 topics, default index geometry, 1 GiB CommitLog files):

* generator: messages/s of CommitLog written (workload columns + encode + write);
* decode: messages/s of ``commitlog.read_columns`` without and with bodies;
* dispatch: messages/s of ``Store.dispatch`` (ConsumeQueue units + index keys + checkpoint);
* end-to-end key query latency, p50/p99 over --queries random existing keys: broker mode
  (IndexService.queryOffset + reading the messages) and verified mode (every candidate read,
  compared, explained). Each verified answer is checked to contain the message it was drawn from.
* bulk key queries: keys/s of ``Store.query_many`` over --bulk-keys random existing keys in each
  mode; each key's broker rows are checked against its own queryOffset (a sample of 1,000 keys)
  and every key must find its own message in verified mode.

Run:  python benchmarks/bench_store.py [--messages N] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import shutil
import time
from pathlib import Path

import numpy as np
from common import machine, publish

from rmqlab.formats import commitlog as cl
from rmqlab.store import Store, generate_store
from rmqlab.workload import Workload

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "store"



def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--bulk-keys", type=int, default=100_000, help="keys of each query_many call")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the generated store in benchmarks/out/store")
    args = ap.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    w = Workload(messages=args.messages, seed=1, body_median=100, topics=("TopicTest", "orders", "payments", "users"),
                 rate=20_000.0)

    def report_progress(done, total):
        print(f"\r  generated {done:,} / {total:,}", end="", flush=True)

    _, gen_s = timed(lambda: generate_store(OUT, w, dispatch=False, progress=report_progress))
    print()
    store = Store(OUT)
    records = len(cl.read_columns(store.commitlog_dir, body=False))   # warm the page cache too
    frame, dec_s = timed(lambda: cl.read_columns(store.commitlog_dir, body=False))
    rng = np.random.default_rng(7)
    keyed = frame[frame["keys"].notna()]
    picks = keyed.iloc[rng.integers(0, len(keyed), args.queries)][["topic", "keys", "phy_offset"]].copy()
    bulk = keyed.iloc[rng.integers(0, len(keyed), args.bulk_keys)][["topic", "keys", "phy_offset"]].copy()
    bulk["key"] = bulk["keys"].str.split(" ").str[0]
    del frame, keyed
    gc.collect()
    _, dec_body_s = timed(lambda: len(cl.read_columns(store.commitlog_dir, body=True)))
    gc.collect()
    report, disp_s = timed(store.dispatch)
    print(f"  dispatched: {report.as_dict()}")

    broker_lat, verified_lat = [], []
    gc.disable()
    try:
        with store.index() as idx:
            for row in picks.itertuples():
                key = row.keys.split(" ")[0]
                t0 = time.perf_counter()
                offs = idx.query_offset(row.topic, key).phy_offsets
                store.read_at(offs)
                broker_lat.append(time.perf_counter() - t0)
        for row in picks.itertuples():
            key = row.keys.split(" ")[0]
            t0 = time.perf_counter()
            q = store.explain_key(row.topic, key)
            verified_lat.append(time.perf_counter() - t0)
            # a hot key may have more matches than the broker's 64, but verified finds them all
            assert row.phy_offset in set(q.verified["phy_offset"]), (row.topic, key)
    finally:
        gc.enable()
    topics, keys = bulk["topic"].to_numpy(object), bulk["key"].to_numpy(object)
    many, many_s = timed(lambda: store.query_many(topics, keys))
    with store.index() as idx:   # a fast wrong answer must fail: each key as its own query
        for i in rng.choice(len(bulk), min(1_000, len(bulk)), replace=False):
            mine = many.loc[many["key_index"] == i, "phy_offset"].tolist()
            assert mine == idx.query_offset(topics[i], keys[i]).phy_offsets, (topics[i], keys[i])
    real, real_s = timed(lambda: store.query_many(topics, keys, mode="verified"))
    found = set(zip(real["key_index"], real["phy_offset"]))
    assert all((i, p) in found for i, p in enumerate(bulk["phy_offset"])), "a key missed its own message"
    # allocated bytes: CommitLog and index files are preallocated sparse files
    size = sum(p.stat().st_blocks * 512 for p in OUT.rglob("*") if p.is_file())
    res = {
        "date": dt.date.today().isoformat(), "machine": machine(), "messages": args.messages,
        "records": records, "bytes": size,
        "gen": records / gen_s, "gen_s": gen_s, "dec": records / dec_s, "dec_body": records / dec_body_s,
        "disp": records / disp_s, "disp_s": disp_s, "keys": report.index_keys, "units": report.consume_queue_units,
        "index_files": report.index_files,
        "b50": np.percentile(broker_lat, 50) * 1e3, "b99": np.percentile(broker_lat, 99) * 1e3,
        "v50": np.percentile(verified_lat, 50) * 1e3, "v99": np.percentile(verified_lat, 99) * 1e3,
        "queries": args.queries, "bulk": len(bulk), "many": len(bulk) / many_s, "many_rows": len(many),
        "real": len(bulk) / real_s, "real_rows": len(real),
    }
    text = render(res)
    publish(text, args.record)
    if not args.keep:
        shutil.rmtree(OUT, ignore_errors=True)


def render(r: dict) -> str:
    return "\n".join([
        f"## {r['date']}: whole store, {r['messages']:,} messages ({r['records']:,} CommitLog records, "
        f"{r['bytes'] / 2**30:.1f} GiB on disk)",
        "", f"Machine: {r['machine']}.",
        "Workload: 4 topics, body median 100 B, UNIQ_KEY on, about 1 key a message (10% keyless, 20% Zipf hot "
        "keys), default index geometry (5,000,000 slots, 20,000,000 entries), 1 GiB CommitLog files. "
        "Targets from the issue: generator at least 500,000 messages/s.",
        "", "| measure | result |", "|---|---|",
        f"| generator (columns + encode + write) | {r['gen'] / 1e3:,.0f} k messages/s ({r['gen_s']:.1f} s) |",
        f"| CommitLog decode, read_columns without bodies | {r['dec'] / 1e3:,.0f} k messages/s |",
        f"| CommitLog decode, read_columns with bodies | {r['dec_body'] / 1e3:,.0f} k messages/s |",
        f"| dispatch (ConsumeQueue + index + checkpoint) | {r['disp'] / 1e3:,.0f} k messages/s ({r['disp_s']:.1f} s: "
        f"{r['units']:,} units, {r['keys']:,} index keys, {r['index_files']} index files) |",
        f"| key query, broker mode, end to end | p50 {r['b50']:.2f} ms, p99 {r['b99']:.2f} ms "
        f"({r['queries']} random keys) |",
        f"| key query, verified mode, end to end | p50 {r['v50']:.2f} ms, p99 {r['v99']:.2f} ms |",
        f"| bulk key queries, query_many, broker mode | {r['many'] / 1e3:,.1f} k keys/s ({r['bulk']:,} keys, "
        f"{r['many_rows']:,} rows) |",
        f"| bulk key queries, query_many, verified mode | {r['real'] / 1e3:,.1f} k keys/s ({r['real_rows']:,} rows) |",
    ])


if __name__ == "__main__":
    main()
