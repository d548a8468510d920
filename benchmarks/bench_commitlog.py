"""CommitLog decode to columns (read_columns) against the machine's limit.

    make bench-commitlog                      # or: .venv/bin/python benchmarks/bench_commitlog.py
    .venv/bin/python benchmarks/bench_commitlog.py --messages 350000 --file-size 104857600   # quick
    ... --dir /some/scratch/store             # keep (or reuse) the generated store there

A workload store (4 topics, bodies of median 100 bytes, as bench_store.py) is generated with
enough messages to fill its first CommitLog file (1 GiB by default); that full file is read
from the page cache:

- the machine's limit: a plain ``readinto`` of the file into a buffer, a NumPy sum over the
  mapped bytes, and the C walk of the TOTALSIZE chain alone;
- ``read_columns`` with and without bodies: the NumPy-gather reader (the first reference,
  tests/support/commitlog_reference.py), the C decode of positions it had before the one pass
  (``_decode_positions``: walk, decode_records, find_props, span gathers; it still serves the
  CRC checks and read_at) into pandas objects and Arrow, and the one pass
  (``_records.walk_decode``, the default) into pandas object columns and into Arrow-backed
  columns (``arrow=True``).

Each is run --repeat times, interleaved, after one warm-up; the medians of the wall time and of
the process's CPU time (``time.process_time``: the figure to trust when other jobs share the
cores) are reported in MB/s of the file and messages/s, with the ratio to the NumPy reference.
Every result is checked: the row count is the walk's, the pandas frames of all three decoders
are equal, the one pass's Arrow arrays equal the previous pass's (types and dictionaries
included), its fixed columns equal the reference's and its text lengths add up to TOTALSIZE.
"""
from __future__ import annotations

import argparse
import mmap
import os
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from common import machine, publish

from rmqlab import _records
from rmqlab.formats import commitlog as cl
from rmqlab.formats.commitlog import columns as cc
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from commitlog_reference import decode_positions_numpy  # noqa: E402

#: bytes a message of this workload takes on average (measured): sizes the default store
BYTES_PER_MESSAGE = 312


def generate(root: Path, messages: int, file_size: int) -> Path:
    w = Workload(messages=messages, seed=1, body_median=100, topics=("TopicTest", "orders", "payments", "users"),
                 rate=20_000.0)
    generate_store(root, w, dispatch=False, commitlog_file_size=file_size)
    first = root / "commitlog" / "00000000000000000000"
    if len(list((root / "commitlog").iterdir())) < 2:
        sys.exit(f"{messages:,} messages do not fill a {file_size:,}-byte file: raise --messages")
    return first


def timed(fn):
    """(result, wall seconds, CPU seconds of this process)."""
    c, t = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def limits(path: Path):
    """(name, callable) of the machine's reference passes over the file."""
    size = path.stat().st_size
    into = np.empty(size, np.uint8)

    def plain_read():
        with open(path, "rb", buffering=0) as fh:
            return fh.readinto(into)

    def numpy_sum():
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            total = int(np.frombuffer(mm, np.uint64).sum(dtype=np.uint64))
            return total

    def c_walk():
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return len(_records.walk(mm, 0, len(mm), -1)[0]) // 8

    return [("plain read (readinto)", plain_read), ("NumPy sum over the map", numpy_sum),
            ("C walk of TOTALSIZE", c_walk)]


def readers(path: Path, body: bool):
    return [("NumPy gathers (reference)", lambda: cc._read_columns(path, body=body, decode=decode_positions_numpy)),
            ("previous C pass, pandas objects", lambda: cc._read_columns(path, body=body, decode=cc._decode_positions)),
            ("previous C pass, Arrow", lambda: cc._read_columns(path, body=body, decode=cc._decode_positions,
                                                                arrow=True)),
            ("one pass, pandas objects", lambda: cl.read_columns(path, body=body)),
            ("one pass, Arrow columns", lambda: cl.read_columns(path, body=body, arrow=True))]


def check(frames: dict, walked: int, body: bool) -> None:
    """A fast wrong answer must fail: counts, equality of the readers, sizes adding up."""
    ref, prev_objs, prev_arrow, objs, arrow = (frames[name] for name, _ in readers(Path("."), body))
    assert len(ref) == len(prev_objs) == len(objs) == len(arrow) == walked, (len(ref), len(objs), len(arrow), walked)
    assert ref.equals(prev_objs), "the previous C pass differs from the NumPy reference"
    assert ref.equals(objs), "the one pass differs from the NumPy reference"
    for c in prev_arrow.columns:
        a, b = pa.array(arrow[c]), pa.array(prev_arrow[c])
        assert a.type == b.type and a.equals(b), f"Arrow column {c} differs from the previous C pass"
    for c in cc._FIXED_COLUMNS + ("delay_level",):
        assert np.array_equal(arrow[c].to_numpy(), ref[c].to_numpy()), c
    arrow = arrow.copy(deep=False)
    arrow.attrs = {}   # the ReadReport is no Arrow metadata
    tbl = pa.Table.from_pandas(arrow, preserve_index=False)

    def byte_lengths(name):
        col = tbl[name]
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        return pc.fill_null(pc.binary_length(col), 0).to_numpy().astype(np.int64)

    body_len = byte_lengths("body") if body else ref["total_size"].to_numpy() * 0
    fixed = np.array([cl.message_length(0, 0, 0, int(f), int(v)) for f, v in
                      zip(ref["sys_flag"].to_numpy() & 0x30, ref["version"].to_numpy())])
    laid_out = fixed + body_len + byte_lengths("topic") + byte_lengths("properties")
    if body:
        assert np.array_equal(laid_out, ref["total_size"].to_numpy()), "Arrow text lengths disagree with TOTALSIZE"
    else:
        assert np.all(laid_out <= ref["total_size"].to_numpy())
    for name in ("keys", "uniq_key", "tags"):   # a sample of values, as Python objects
        rows = np.random.default_rng(7).integers(0, len(ref), 2000)
        got = [None if v is None else v for v in tbl[name].take(pa.array(rows)).to_pylist()]
        assert got == [ref[name].iloc[r] for r in rows], name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=3_500_000)
    ap.add_argument("--file-size", type=int, default=cl.DEFAULT_FILE_SIZE)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, help="where to generate the store (kept; reused if it holds one)")
    ap.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    args = ap.parse_args()
    tmp = None
    root = args.dir
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="rmqlab-bench-commitlog-")
        root = Path(tmp.name)
    first = root / "commitlog" / "00000000000000000000"
    if not first.exists():
        _, gen_s, _ = timed(lambda: generate(root, args.messages, args.file_size))
        print(f"generated {args.messages:,} messages in {gen_s:.1f} s (encode + write)")
    size = first.stat().st_size
    with open(first, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        walked = len(_records.walk(mm, 0, len(mm), -1)[0]) // 8
        checksum = int(np.frombuffer(mm, np.uint64).sum(dtype=np.uint64))
    load = os.getloadavg()
    lines = [f"## CommitLog decode to columns ({date.today()})", "",
             f"Machine: {machine()}; load average at start {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}.",
             f"Input: one full CommitLog file of {size / 2**30:.2f} GiB, {walked:,} messages, from the page cache.",
             f"Median of {args.repeat} runs each, interleaved, after a warm-up; CPU is this process's "
             "(time.process_time), the figure to trust when other jobs share the cores.", "",
             "| pass | bodies | wall s | wall MB/s | CPU s | CPU MB/s | M messages/s (CPU) "
             "| vs NumPy reference (CPU) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    times: dict[str, list[tuple[float, float]]] = {}
    for name, fn in limits(first):
        out = fn()
        if name == "NumPy sum over the map":
            assert out == checksum
        if name == "C walk of TOTALSIZE":
            assert out == walked
        times[name] = []
    for body in (False, True):
        frames = {name: fn() for name, fn in readers(first, body)}   # warm-up, and the answers checked
        check(frames, walked, body)
        del frames
        for name, _ in readers(first, body):
            times[f"{name}|{body}"] = []
    for _ in range(args.repeat):
        for name, fn in limits(first):
            times[name].append(timed(fn)[1:])
        for body in (False, True):
            for name, fn in readers(first, body):
                df, wall, cpu = timed(fn)
                assert len(df) == walked
                del df
                times[f"{name}|{body}"].append((wall, cpu))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}

    def row(name, bodies, key, ref=None):
        wall, cpu = med[key]
        vs = f"{med[ref][1] / cpu:.1f}x" if ref else ""
        return (f"| {name} | {bodies} | {wall:.3f} | {size / wall / 1e6:,.0f} | {cpu:.3f} | {size / cpu / 1e6:,.0f} | "
                f"{walked / cpu / 1e6:.2f} | {vs} |")

    for name, _ in limits(first):
        lines.append(row(f"limit: {name}", "", name))
    for body in (False, True):
        for name, _ in readers(first, body):
            lines.append(row(name, "yes" if body else "no", f"{name}|{body}", f"NumPy gathers (reference)|{body}"))
    load = os.getloadavg()
    lines += ["", f"Load average at the end {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}. Targets: 1,000 MB/s "
              "without bodies, 600 MB/s with bodies."]
    publish("\n".join(lines), args.record)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
