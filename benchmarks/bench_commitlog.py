"""Encode+write and decode throughput of rmqlab.formats.commitlog on small messages.

    .venv/bin/python benchmarks/bench_commitlog.py [N]

Prints messages/s for: CommitLogWriter.append (encode_messages + pwrite into preallocated
files), read_columns (C walk + NumPy gathers, with and without body CRC checks) and the
pure-Python iterator (on a 1/10 sample).
"""
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from rmqlab.formats.commitlog import CommitLogWriter, iter_messages, read_columns


def columns(n: int):
    rng = np.random.default_rng(1)
    i = np.arange(n)
    return pa.table({
        "topic": pa.array(np.array(["TopicTest", "OrderTopic"], dtype=object)[i % 2]),
        "queue_id": pa.array((i % 8).astype(np.int32)),
        "born_timestamp": pa.array(1718000000000 + i),
        "store_timestamp": pa.array(1718000000003 + i),
        "born_host": pa.array(np.array(["10.0.0.7:50123", "10.0.0.8:50124"], dtype=object)[i % 2]),
        "store_host": pa.array(["192.168.0.1:10911"] * n),
        "body": pa.array([b"x" * int(k) for k in rng.integers(16, 128, n)], pa.large_binary()),
        "properties": pa.array([f"KEYS\x01k{k}\x02TAGS\x01TagA\x02" for k in range(n)]),
    })


def main(n: int = 1_000_000) -> None:
    table = columns(n)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        with CommitLogWriter(d, file_size=64 << 20) as w:
            b = w.append(table)
        dt = time.perf_counter() - t
        print(f"encode+write  {n:>9} msgs {dt:6.2f} s  {n / dt:12,.0f} msg/s  "
              f"({b.end_offset / dt / 1e6:,.0f} MB/s, {len(b.files)} files)")
        for crc in (False, True):
            t = time.perf_counter()
            df = read_columns(d, check_crc=crc)
            dt = time.perf_counter() - t
            assert len(df) == n
            print(f"read_columns  {n:>9} msgs {dt:6.2f} s  {n / dt:12,.0f} msg/s  check_crc={crc}")
        t = time.perf_counter()
        m = 0
        for _ in iter_messages(d):
            m += 1
            if m == n // 10:
                break
        dt = time.perf_counter() - t
        print(f"iter_messages {m:>9} msgs {dt:6.2f} s  {m / dt:12,.0f} msg/s  (pure Python)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
