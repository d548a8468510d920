"""benchmarks/bench_compare.py at a small size, so that its reference sides keep running and its
checks keep holding: RocketMQ 5.3.3's own IndexFile writes the same bytes as
``rmqlab.build_index_file`` and finds every key rmqlab finds; its DefaultMessageStore, rebuilding a
generated store's ConsumeQueue and index from the CommitLog (load(), ReputMessageService), writes
the same ConsumeQueue and index bytes as ``Store.dispatch`` and answers every key query as
``Store.query_by_key`` does, in order; Kafka 3.9.2's DumpLogSegments and ``rmqlab kafka dump`` count
the same batches and records of segments the broker wrote. The script asserts each of these
(a fast wrong answer cannot pass as a benchmark); here it must exit 0 and print every row."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import broker_harness as bh

ROOT = Path(__file__).resolve().parents[2]


def test_the_side_by_side_benchmark_agrees_with_the_brokers(tmp_path):
    bh.require_java_and_maven()
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_compare.py"), "--runs", "1", "--keys", "30000",
         "--lookups", "3000", "--messages", "20000", "--queries", "300", "--kafka-records", "20000",
         "--work", str(tmp_path)],
        capture_output=True, text=True, timeout=1500, cwd=ROOT / "benchmarks",
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    paths = {line.split(" | ")[0].lstrip("| ") for line in rows[1:]}
    assert {"IndexFile: build", "IndexFile: build, put loop on one thread", "IndexFile: look-ups, batch",
            "Store: recovery + dispatch",
            "Store: key queries, one call a key", "CommitLog: decode vs read limit", "Kafka: dump",
            "Kafka: log walk and index check"} <= paths, rows
