"""Kafka segment reading: the batch-header walk and the index rebuild, in GB/s of segment.

Measured on one segment of --size bytes (default 1 GiB) of --batch-byte batches (default
1 KiB: one record of about 950 bytes each), written with rmqlab's SegmentWriter into a
temporary directory and read from the page cache (it is read once before timing):

* machine limit: a plain read of the file into a buffer touched beforehand, and a NumPy sum of
  the memory-mapped bytes (8 at a time);
* walk without CRC: every entry framed and its header fields gathered;
* walk with CRC: ``read_batches(verify_crc=True)`` (framing, headers, CRC-32C of every batch,
  the DataFrame);
* index rebuild: ``rebuild.rebuild_indexes`` (the walk with CRCs, the broker's rule, the
  ``.index`` and ``.timeindex`` written).

Each is timed for the new path and for the old one in the same run, one after the other,
--repeat times (median shown): the old path is the pure-Python models kept in the package,
the batch walk one entry at a time (``log._spans``), CRC-32C with slice-by-8 tables and the
offset entries one binary search each (``rebuild._offset_entry_batches_py``). The answers are
checked: the batch count and last offset, every CRC good, and the rebuilt ``.index`` equal to
the entries the rule gives for equal batches (every fifth batch at 4096 bytes apart), both
files byte for byte equal between old and new. The machine's load average is printed with
the figures: other work on the machine slows every line.

Run:  python benchmarks/bench_kafka.py [--size BYTES] [--repeat N] [--record]
"""
from __future__ import annotations

import argparse
import datetime as dt
import mmap
import os
import shutil
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
from common import machine, publish

from rmqlab._crc32c import crc32c_spans, implementation
from rmqlab.kafka import log as kl
from rmqlab.kafka import rebuild as rb
from rmqlab.kafka.index import INDEX_SUFFIX, TIME_INDEX_SUFFIX, segment_file_name

#: record overhead of a one-record batch with a null key, a value of 128..16383 bytes and no
#: headers: length varint (2), attributes, timestampDelta, offsetDelta, keyLength (1 each),
#: valueLength varint (2), headersCount (1)
RECORD_OVERHEAD = 9


def write_segment(directory: Path, size: int, batch: int) -> tuple[Path, int]:
    n = size // batch
    value = batch - kl.RECORD_BATCH_OVERHEAD - RECORD_OVERHEAD
    rng = np.random.default_rng(7)
    chunk = 65536
    with kl.SegmentWriter(directory, 0, records_per_batch=1) as w:
        for done in range(0, n, chunk):
            k = min(chunk, n - done)
            ts = 1718000000000 + (done + np.arange(k)) * 3 + rng.integers(-50, 50, k)
            w.append(pa.table({"timestamp": pa.array(ts), "key": pa.nulls(k, pa.large_binary()),
                               "value": pa.array([b"x" * value] * k, pa.large_binary())}))
    assert w.position == n * batch, "batches are not the size asked for"
    return w.path, n


def python_positions(buf, path, start: int = 0, limit: int = -1):
    """_entry_positions by the pure-Python walk."""
    assert start == 0 and limit < 0
    items = list(kl._spans(buf, path))
    stop = items.pop() if items and isinstance(items[-1], kl._Stop) else None
    return np.array(items, np.int64), stop, 0, False


def table_crcs(buffer, starts, lengths, out):
    crc32c_spans(buffer, starts, lengths, out, True)


@contextmanager
def old_paths():
    with mock.patch.object(kl, "_entry_positions", python_positions), \
            mock.patch.object(kl, "crc32c_spans", table_crcs), \
            mock.patch.object(rb, "_offset_entry_batches", rb._offset_entry_batches_py):
        yield


def walk_headers(path) -> tuple[int, int]:
    """Framing and header fields, no CRC: (batches, last offset)."""
    with kl._opened(path) as (buf, p):
        P, stop, _, _ = kl._entry_positions(buf, p)
        assert stop is None
        h = kl._v2_header_columns(buf, P)
        out = len(P), int(h["base_offset"][-1]) + int(h["last_offset_delta"][-1])
        del h
    return out


def walk_crc(path) -> tuple[int, int]:
    df = kl.read_batches(path, verify_crc=True)
    assert bool(df["crc_ok"].all())
    return len(df), int(df["last_offset"].iloc[-1])


def rebuild(path, out: Path) -> tuple[bytes, bytes]:
    index, timeindex = rb.rebuild_indexes(path, out, overwrite=True)
    return index.read_bytes(), timeindex.read_bytes()


def machine_limits(path: Path, size: int) -> tuple[float, float]:
    buf = bytearray(size)
    buf[::4096] = b"\1" * len(buf[::4096])          # fault the buffer's pages in before timing
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        got = fh.readinto(buf)
    read_s = time.perf_counter() - t0
    assert got == size
    del buf
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        U = np.frombuffer(mm, np.uint64, size // 8)
        t0 = time.perf_counter()
        total = int(U.sum())
        sum_s = time.perf_counter() - t0
        del U
    assert total >= 0
    return read_s, sum_s


def expected_index(n: int, batch: int) -> bytes:
    """The .index of n equal batches of `batch` bytes from offset 0, one record each: an entry at
    the first batch more than 4096 bytes past the last (relative offset, position, big-endian)."""
    step = rb.INDEX_INTERVAL_BYTES // batch + 1
    k = np.arange(step, n, step, dtype=np.int64)
    out = np.empty((len(k), 2), ">i4")
    out[:, 0], out[:, 1] = k, k * batch
    return out.tobytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1 << 30, help="segment bytes (default 1 GiB)")
    ap.add_argument("--batch", type=int, default=1024, help="bytes a batch (default 1 KiB)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the generated segment and print where")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rmqlab-bench-kafka-"))
    try:
        t0 = time.perf_counter()
        path, n = write_segment(work / "segment", args.size, args.batch)
        size = path.stat().st_size
        print(f"segment: {n:,} batches of {args.batch} bytes, {size / 2**30:.2f} GiB, "
              f"written in {time.perf_counter() - t0:.1f} s")
        path.read_bytes()                             # into the page cache
        load_before = os.getloadavg()

        results: dict[str, list[float]] = {}

        def timed(label: str, fn, *a):
            t = time.perf_counter()
            out = fn(*a)
            results.setdefault(label, []).append(time.perf_counter() - t)
            return out

        want_index = expected_index(n, args.batch)
        for _ in range(args.repeat):
            read_s, sum_s = machine_limits(path, size)
            results.setdefault("limit: read() into a buffer", []).append(read_s)
            results.setdefault("limit: NumPy sum of the mapped bytes", []).append(sum_s)
            new = timed("walk, no CRC: new (C)", walk_headers, path)
            with old_paths():
                old = timed("walk, no CRC: old (Python)", walk_headers, path)
            assert new == old == (n, n - 1), (new, old)
            new = timed("walk + CRC (read_batches): new", walk_crc, path)
            with old_paths():
                old = timed("walk + CRC (read_batches): old", walk_crc, path)
            assert new == old == (n, n - 1), (new, old)
            new_files = timed("index rebuild: new", rebuild, path, work / "new")
            with old_paths():
                old_files = timed("index rebuild: old", rebuild, path, work / "old")
            assert new_files == old_files, "old and new rebuilt index files differ"
            assert new_files[0] == want_index, "the rebuilt .index is not the rule's entries"
            assert len(new_files[1]) % 12 == 0 and len(new_files[1]) >= 12
        load_after = os.getloadavg()
        for d in ("new", "old"):
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                assert (work / d / segment_file_name(0, suffix)).exists()

        median = {k: statistics.median(v) for k, v in results.items()}
        lines = [f"## Kafka segment walk and index rebuild ({dt.date.today().isoformat()})", "",
                 f"Machine: {machine()}; CRC-32C: {implementation}.",
                 f"Segment: {n:,} batches of {args.batch} bytes ({size / 2**30:.2f} GiB), page cache; "
                 f"median of {args.repeat} runs; load average {load_before[0]:.1f} before, "
                 f"{load_after[0]:.1f} after.", "",
                 "| path | s | GB/s | new / old |", "|---|---:|---:|---:|"]
        for label, s in median.items():
            ratio = ""
            if label.endswith((": new (C)", ": new")):
                old_label = label.replace("new (C)", "old (Python)").replace(": new", ": old")
                ratio = f"{median[old_label] / s:.1f}x"
            lines.append(f"| {label} | {s:.3f} | {size / s / 1e9:.2f} | {ratio} |")
        lines.append("")
        lines.append("Checked: batch count and last offset (old = new = expected), every CRC good, rebuilt "
                     ".index equal to the rule's entries for equal batches, .index and .timeindex "
                     "byte-identical old and new.")
        publish("\n".join(lines), args.record)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
