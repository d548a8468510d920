"""Build the real-Kafka scenarios ahead of the tests: ``python tests/brokers/build_kafka.py
[--release X]... [--scenario S]...`` resolves each release's jars, compiles the driver, runs
the broker through each scenario and dumps every file with the release's own DumpLogSegments,
all into the cache (tests/support/kafka_harness.py), printing progress and wall times. An entry
already built is reused (a line "cached")."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))

import kafka_harness as kh  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", action="append", help="a release (repeatable; default: all of RELEASES)")
    ap.add_argument("--scenario", action="append", choices=(*kh.SCENARIOS, *kh.DERIVED),
                    help="a scenario (repeatable; default: all of SCENARIOS)")
    args = ap.parse_args(argv)
    versions = args.release or [r.version for r in kh.RELEASES]
    total = time.monotonic()
    for v in versions:
        t = time.monotonic()
        rel = kh.release(v)
        kh.jars(rel)
        kh.driver(rel)
        print(f"kafka {v}: jars and driver ready after {time.monotonic() - t:.1f} s", flush=True)
        for s in args.scenario or kh.SCENARIOS:
            ts = time.monotonic()
            sc = kh.kafka_partitions(v, s, log=lambda m: print(m, flush=True))
            print(f"kafka {v} {s}: {time.monotonic() - ts:.1f} s wall ({sc.root}); timings when built "
                  f"{sc.timings}; {len(sc.partitions())} partitions", flush=True)
        print(f"kafka {v}: {time.monotonic() - t:.1f} s", flush=True)
    print(f"all: {time.monotonic() - total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
