"""rmqlab.viz benchmark on a full default-size index file (5,000,000 slots, 19,999,999 entries).

The file is built with ``rmqlab.build_index_file`` from uniformly random 31-bit key hashes
(passed as ``hashes=``, which is what random keys hash to; the strings themselves would only
slow the set-up), phyOffset ``200*(n+1)`` and store timestamps one second apart per 1,000
keys. Set-up is not timed. Measured, median of --repeat runs, each from the path (the file
in the page cache, as right after a build):

* ``slot_chain_lengths`` alone (the data);
* ``slot_occupancy_image`` from the path, then ``fig.savefig`` to PNG in a BytesIO: the
  target is under 2 s in total;
* for information, ``chain_length_histogram_figure`` and ``entries_over_time`` (the folder of
  that one file), each with its PNG.

Every result is checked against the file (chain lengths sum to the entries, the image's
maximum equals the longest chain), so a fast wrong figure cannot pass.
Run from this folder:  python bench_viz.py [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import io
import shutil
import statistics
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
from common import machine, publish

import rmqlab
from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM
from rmqlab.viz import (
    chain_length_histogram_figure,
    entries_over_time,
    slot_chain_lengths,
    slot_occupancy_image,
)

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "viz"
TARGET_S = 2.0
T0 = 1_718_000_000_000


def build(path: Path, keys: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hashes = rng.integers(0, 2**31 - 1, size=keys, dtype=np.int32)
    phy = 200 * (np.arange(keys, dtype=np.int64) + 1)
    ts = T0 + np.arange(keys, dtype=np.int64)           # 1 ms a key: 1,000 keys a second
    t = time.perf_counter()
    written = rmqlab.build_index_file(path, None, phy, ts, hashes=hashes)
    assert written == keys, written
    return time.perf_counter() - t


def timed(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), result


def png(fig) -> int:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.tell()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=DEFAULT_INDEX_NUM - 1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--record", action="store_true", help="append the results to benchmarks/RESULTS.md")
    args = ap.parse_args()

    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    path = OUT / "20240610061524062"
    build_s = build(path, args.keys, args.seed)
    print(f"set-up: {args.keys:,} random keys built into {path.name} in {build_s:.2f} s (not timed below)")

    try:
        rows = []
        med, best, lengths = timed(lambda: slot_chain_lengths(path), args.repeat)
        assert lengths.dtype == np.int32 and len(lengths) == DEFAULT_HASH_SLOT_NUM
        assert int(lengths.sum()) == args.keys
        rows.append(("slot_chain_lengths (data)", med, best, ""))

        med_f, best_f, fig = timed(lambda: slot_occupancy_image(path), args.repeat)
        shown = fig.axes[0].images[0].get_array()
        assert int(shown.max()) == int(lengths.max())
        rows.append(("slot_occupancy_image (figure)", med_f, best_f, f"{shown.shape[1]}×{shown.shape[0]} px shown"))

        def image_png():
            return png(slot_occupancy_image(path))

        med_total, best_total, size = timed(image_png, args.repeat)
        rows.append(("slot_occupancy_image + PNG, from path", med_total, best_total,
                     f"{size / 1024:.0f} KiB PNG"))

        med_h, best_h, size_h = timed(lambda: png(chain_length_histogram_figure(path, log=True)),
                                      args.repeat)
        rows.append(("chain_length_histogram_figure + PNG", med_h, best_h, f"{size_h / 1024:.0f} KiB PNG"))

        med_t, best_t, size_t = timed(lambda: png(entries_over_time(OUT)), args.repeat)
        rows.append(("entries_over_time (1 file) + PNG", med_t, best_t, f"{size_t / 1024:.0f} KiB PNG"))
    finally:
        path.unlink()

    met = "met" if med_total < TARGET_S else "NOT met"
    lines = [
        f"## {dt.date.today().isoformat()}: rmqlab.viz figures, default geometry, {args.keys:,} entries",
        "",
        f"Machine: {machine()}, matplotlib {matplotlib.__version__}.",
        f"File: 5,000,000 slots, {args.keys:,} entries from uniformly random key hashes, in the "
        f"page cache; each figure made from the path; median (best) of {args.repeat} runs.",
        "",
        "| measure | median | best | notes |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {m:.3f} s | {b:.3f} s | {note} |" for name, m, b, note in rows]
    lines += ["", "Targets:",
              f"- slot occupancy image of a full default-size file, path to PNG, < {TARGET_S:.0f} s: "
              f"{met} ({med_total:.3f} s)"]
    text = "\n".join(lines)
    publish(text, args.record)


if __name__ == "__main__":
    main()
