"""Build the real-RocketMQ stores of tests/brokers/test_rocketmq_brokers.py into the cache, with
progress and wall times: ``python tests/brokers/build_rocketmq.py [--release X ...] [--scenario S ...]``
(all releases and scenarios by default). See tests/support/rocketmq_harness.py."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))

import rocketmq_harness  # noqa: E402

if __name__ == "__main__":
    rocketmq_harness.main(sys.argv[1:])
