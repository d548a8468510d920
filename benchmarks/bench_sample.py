"""Sample-store build time: how long ``rmqlab.lab.sample.build_sample_store`` takes, with the budget
it is meant to stay under (15 s: the notebooks build it on first use, so a user waits for it).

A time measured on a shared machine is not a test result, so the budget lives here rather than
in the test suite; the tests check what the build writes (the committed manifest), not how fast.
Each build is checked against ``data/MANIFEST.sha256``, so a fast wrong store cannot pass.

Run:  python benchmarks/bench_sample.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from common import machine

from rmqlab.lab import sample

BUDGET_SECONDS = 15.0
MANIFEST = Path(__file__).resolve().parents[1] / sample.DEFAULT_MANIFEST


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    expected = sample.read_manifest(MANIFEST)
    times = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "sample-store"
            t0 = time.perf_counter()
            sample.build_sample_store(root)
            times.append(time.perf_counter() - t0)
            problems = sample.compare_manifests(expected, sample.manifest(root))
            if problems:
                print("the build does not match the manifest:", *problems[:5], sep="\n  ")
                return 1
    best = min(times)
    print(f"{machine()}\nsample store build: best {best:.2f} s of {len(times)} "
          f"({', '.join(f'{t:.2f}' for t in times)}); budget {BUDGET_SECONDS:.0f} s: "
          f"{'within' if best < BUDGET_SECONDS else 'OVER'}")
    return 0 if best < BUDGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
