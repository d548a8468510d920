"""Build every real-broker store and partition the tests in tests/brokers/ read, into the cache
(tests/support/broker_harness.py): ``python tests/brokers/build_all.py``, two builds at a time
(:data:`WORKERS`; Maven runs one at a time). `make test` runs it
beside the rest of the suite, so the brokers write while the other tests run, then runs the
broker tests on the warm cache. Entries already built are reused; a failed entry is reported
and the others still built (its tests then show the error). Exit status 1 when any failed."""
from __future__ import annotations

import signal
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))

import kafka_harness as kh  # noqa: E402
import oracles  # noqa: E402
import rocketmq_harness as rh  # noqa: E402

#: the releases tests/brokers/test_kafka_brokers.py plants orphaned index files in
ORPHAN_RELEASES = ("2.8.2", "4.4.0")


#: set on SIGTERM: no new build starts; those running finish (their brokers stop as they end)
STOPPING = threading.Event()


def _step(name: str, build, failures: list[str]) -> None:
    if STOPPING.is_set():
        return
    t = time.monotonic()
    try:
        build()
        print(f"{name}: {time.monotonic() - t:.1f} s", flush=True)
    except Exception:                          # noqa: BLE001 - report it, build the rest
        failures.append(name)
        print(f"{name}: FAILED after {time.monotonic() - t:.1f} s\n{traceback.format_exc()}", flush=True)


#: builds at once: a scenario's wall time is mostly its brokers' waits (delays, rebalances,
#: shutdowns), so two chains overlap well on two cores beside the rest of the suite
WORKERS = 2


def rocketmq_chains() -> list[tuple[str, list[str]]]:
    """The selected RocketMQ stores as chains that can build side by side: a store and the
    restarts that copy it (:data:`rocketmq_harness.RESTARTS`), a chain each; newest release
    first, and within a release the longest chain first."""
    chains = []
    for version in rh.selected_releases():
        mine = rh.scenarios(version)
        after = {source: [r for r, s in rh.RESTARTS.items() if s == source and r in mine] for source in mine}
        roots = [s for s in mine if s not in rh.RESTARTS or rh.RESTARTS[s] not in mine]
        for root in roots:
            chains.append((version, [root, *after[root]]))
    chains.sort(key=lambda c: (rh.version_tuple(c[0]), len(c[1])), reverse=True)
    return chains


def main() -> int:
    # SIGTERM (make interrupted): no new build starts, the running ones finish, then exit
    def stop(signum, frame):
        STOPPING.set()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    quiet = lambda message: None  # noqa: E731
    failures: list[str] = []
    start = time.monotonic()

    def kafka_chain() -> None:
        for version, scenario in kh.cases():
            _step(f"kafka {version} {scenario}",
                  lambda version=version, scenario=scenario: kh.kafka_partitions(version, scenario, log=quiet),
                  failures)
        for version in ORPHAN_RELEASES:
            _step(f"kafka {version} orphans",
                  lambda version=version: kh.kafka_partitions(version, "orphans", log=quiet), failures)
        real = oracles.REAL_DATA / "kafka"
        for directory in sorted(p for p in real.iterdir() if p.is_dir()) if real.is_dir() else []:
            _step(f"kafka real data {directory.name}", lambda d=directory: kh.real_data_dumps(d, log=quiet), failures)

    def rocketmq_chain(version: str, scenarios: list[str]) -> None:   # a restart after the store it copies
        for scenario in scenarios:
            _step(f"rocketmq {version} {scenario}",
                  lambda version=version, scenario=scenario: rh.rocketmq_store(version, scenario), failures)

    # Kafka's chain (the longest) first, then RocketMQ's chains beside it, the newest releases
    # (the slowest builds) and the longest chains first, so that no long chain starts last;
    # every chain runs its brokers in network namespaces of their own, so two never meet
    with ThreadPoolExecutor(WORKERS) as pool:
        done = [pool.submit(kafka_chain)] + [pool.submit(rocketmq_chain, v, chain) for v, chain in rocketmq_chains()]
        for f in done:
            f.result()
    print(f"all: {time.monotonic() - start:.1f} s; {len(failures)} failed" + (f": {', '.join(failures)}"
                                                                              if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
