"""`rmqlab verify --jobs N` and `rmqlab kafka verify DIR --jobs N`: the work spread over worker
processes, the report the same.

Independent truth: the single-process run (``--jobs 1``, the serial program, no pool started).
Its text and ``--json`` output must come out byte for byte the same with ``--jobs 2`` and
``--jobs 3`` on the generated sample store, the real 4.2.0 store and Kafka log directories beside
the repository, and damaged copies (the corruptions of tests/verify/test_verify.py and
tests/kafka/test_damage.py), whose reports are long. Each parallel run must also really have run
its units in other processes (:data:`rmqlab.tables.pool.RUNS`), so a ``--jobs`` that silently
ran serially fails here. What the real brokers write is checked the same way in
tests/brokers/test_rocketmq_brokers.py and tests/brokers/test_kafka_brokers.py, which wait for
it to be built.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from oracles import require_real_data

from rmqlab.cli import EXIT_STATUS, main
from rmqlab.formats import commitlog as cl
from rmqlab.lab.generate import generate_store
from rmqlab.lab.sample import build_sample_store
from rmqlab.lab.workload import Workload
from rmqlab.tables import pool
from rmqlab.verify import check_commitlog, verify_path
from tests.kafka.test_damage import PARTITIONS, copy_partition, original
from tests.verify.test_verify import (
    UTC,
    build_small_store,
    c_blank_missing,
    c_body_crc,
    c_checkpoint,
    c_commitlog_truncate,
    c_cq_tags,
    c_key_hash,
    c_phy_field,
    c_slot_flip,
)

REAL_ROCKETMQ = "rocketmq/store-ericpangopher-4.2.0"
REAL_KAFKA = ["kafka/kafka-3.6-compacted", "kafka/flink-on-prem", "kafka/kraft-metadata-restart"]


# ------------------------------------------------------------------------------ helpers


def _run(argv: list[str], capsys) -> tuple[int, str, pool.PoolRun]:
    """Exit status, stdout, and the pool of one command line run here."""
    before = pool.RUNS[-1] if pool.RUNS else None
    status = main(argv)
    out = capsys.readouterr().out
    assert pool.RUNS and pool.RUNS[-1] is not before, f"{argv}: no pool made"
    return status, out, pool.RUNS[-1]


def assert_same_with_any_jobs(argv: list[str], capsys, *, units: int | None = None) -> tuple[int, str]:
    """`argv` (text, then --json) with --jobs 1, 2 and 3: the same exit status and stdout, byte
    for byte; --jobs 1 ran in this process alone, 2 and 3 in workers only. `units`: the work
    units each run must count. Returns --jobs 1's (status, text)."""
    one = {}
    for form in ([], ["--json"]):
        status, out, run = _run([*argv, *form, "--jobs", "1"], capsys)
        assert run.jobs == 1 and run.pids == {os.getpid()}, run
        one[tuple(form)] = (status, out)
        if units is not None:
            assert run.units == units, run
        for jobs in (2, 3):
            got_status, got, run = _run([*argv, *form, "--jobs", str(jobs)], capsys)
            assert run.jobs == jobs and run.units >= 1, run
            assert run.pids and os.getpid() not in run.pids, f"--jobs {jobs} ran in this process: {run}"
            if units is not None:
                assert run.units == units, run
            assert got == out, f"{argv} {form}: --jobs {jobs} differs from --jobs 1"
            assert got_status == status
    assert json.loads(one[("--json",)][1])     # the JSON form is JSON
    return one[()]


def _writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """The sample store of ``make data`` (rmqlab.lab.sample), built here: 11 CommitLog files,
    10 index files, ConsumeQueue folders of 4 topics."""
    root = tmp_path_factory.mktemp("jobs") / "sample-store"
    build_sample_store(root)
    return root


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    """tests/verify/test_verify.py's store: 64 KiB CommitLog files, 64-slot / 512-entry index
    files, 100-unit ConsumeQueue files, two topics, transactions and delays."""
    return build_small_store(tmp_path_factory.mktemp("jobs") / "store")


@pytest.fixture
def damaged(small_store, tmp_path) -> Path:
    """A copy of `small_store` with damage in CommitLog files (BODYCRC, PHYSICALOFFSET, a missing
    end-of-file blank, a torn last file), index files (a slot, key hashes), a ConsumeQueue unit
    and the checkpoint: a report with problems in many files and across them."""
    root = _writable_copy(small_store, tmp_path / "damaged")
    rng = np.random.default_rng(31)
    # the blank last: the helpers before it read the CommitLog strictly
    for corrupt in (c_body_crc, c_body_crc, c_phy_field, c_slot_flip, c_key_hash, c_key_hash, c_cq_tags,
                    c_checkpoint, c_commitlog_truncate, c_blank_missing):
        corrupt(root, rng)
    return root


def _commitlog_files(root: Path) -> int:
    """The CommitLog files a walk reads (not the empty or preallocated ones it sets aside)."""
    return sum(1 for f in cl.store_files(root / "commitlog") if f.size)


def _store_units(root: Path) -> int:
    """The units of work of a store's verify: a CommitLog file read, an index file, a
    ConsumeQueue folder."""
    index = root / "index"
    return (_commitlog_files(root) + (len(list(index.iterdir())) if index.is_dir() else 0)
            + len([q for q in (root / "consumequeue").glob("*/*") if q.is_dir()]))


# ------------------------------------------------------------------------------ RocketMQ


def test_sample_store_report_is_the_same_with_any_jobs(sample, capsys):
    status, text = assert_same_with_any_jobs(["verify", str(sample)], capsys, units=_store_units(sample))
    assert status == 0 and text.rstrip().endswith(": ok")


def test_damaged_store_report_is_the_same_with_any_jobs(damaged, capsys):
    status, text = assert_same_with_any_jobs(["verify", str(damaged)], capsys)
    assert status == EXIT_STATUS["damage"]
    for check in ("commitlog.body-crc", "commitlog.phy-offset-field", "commitlog.blank", "index.slot-chain",
                  "cq.tags-code", "index.key-hash"):
        assert f"[{check}]" in text, check


def test_parts_of_a_damaged_store_are_the_same_with_any_jobs(damaged, capsys):
    """A commitlog/ folder (the per-file checks alone: no table crosses back) and an index/
    folder (each file's own checks in a worker)."""
    status, text = assert_same_with_any_jobs(["verify", str(damaged / "commitlog")], capsys,
                                             units=_commitlog_files(damaged))
    assert status == EXIT_STATUS["damage"] and "[commitlog.body-crc]" in text
    status, text = assert_same_with_any_jobs(["verify", str(damaged / "index")], capsys,
                                             units=len(list((damaged / "index").iterdir())))
    assert status == EXIT_STATUS["damage"] and "[index.slot-chain]" in text


def test_real_4_2_0_store_and_a_damaged_copy_are_the_same_with_any_jobs(tmp_path, capsys):
    real = require_real_data(REAL_ROCKETMQ)
    status, _ = assert_same_with_any_jobs(["verify", str(real)], capsys, units=_store_units(real))
    assert status == 0
    copy = _writable_copy(real, tmp_path / "real")
    rng = np.random.default_rng(4)
    c_body_crc(copy, rng)
    c_phy_field(copy, rng)
    status, text = assert_same_with_any_jobs(["verify", str(copy)], capsys)
    assert status == EXIT_STATUS["damage"] and "[commitlog.body-crc]" in text


@pytest.mark.parametrize("broker_version", ["4.9.4", None])
def test_light_message_queues_and_batch_queues_are_the_same_with_any_jobs(tmp_path, capsys, broker_version):
    """Light message queues filled by multi-dispatch (4.9.4's rule walks the CommitLog a second
    time for them) and, on 5.x, a BatchConsumeQueue topic: tests/store/test_reput.py's store
    features, with transactions and delays."""
    batch = broker_version is None      # BatchConsumeQueue came in 5.0.0
    w = Workload(messages=3000, seed=5, topics=("T", "B", "orders") if batch else ("T", "orders"), queues_per_topic=3,
                 batch_cq_topics=("B",) if batch else (), inner_batch_max=4 if batch else 1,
                 lmq_queues=("%LMQ%a", "%LMQ%b"), multi_dispatch_every=3, transaction_fraction=0.1,
                 delay_fraction=0.05, broker_version=broker_version)
    root = tmp_path / "store"
    generate_store(root, w, commitlog_file_size=1 << 16, hash_slot_num=8, index_num=4096, tz=UTC,
                   consume_queue_file_size=400, batch_cq_topics=("B",) if batch else (), enable_lmq=True,
                   enable_multi_dispatch=True, broker_version=broker_version)
    argv = ["verify", str(root), *(["--broker-version", broker_version] if broker_version else [])]
    status, text = assert_same_with_any_jobs(argv, capsys)
    assert "%LMQ%a" in text and (not batch or "batchconsumequeue" in text)


def test_a_second_walk_is_the_same_with_any_jobs(damaged, monkeypatch):
    """A store that multi-dispatches to a plain topic queue (4.9.x) has its CommitLog walked a
    second time, for that queue's own messages: here queue A/0 is made such a target, and the
    second walk, in workers too, gives the serial report."""
    from rmqlab.verify import driver

    monkeypatch.setattr(driver, "multi_dispatch_plain_queues", lambda side, broker_version=None: {("A", 0)})
    reports = {}
    for jobs in (1, 2):
        reports[jobs] = json.dumps(verify_path(damaged, jobs=jobs).as_dict(), sort_keys=True, default=str)
        assert pool.RUNS[-1].units == _store_units(damaged) + _commitlog_files(damaged)    # two walks
    assert reports[1] == reports[2]
    assert os.getpid() not in pool.RUNS[-1].pids


def test_windows_and_topic_codes_are_the_same_with_any_jobs(damaged, monkeypatch):
    """The table joined in windows of one decoded file part each (WINDOW_MESSAGES 1: every
    window ends inside the walk, topics met window by window) and in one window: the report
    with 2 jobs is the serial one, and so is what the progress callback is told."""
    for window in (1, 0):
        monkeypatch.setattr(check_commitlog, "WINDOW_MESSAGES", window)
        seen: dict[int, list] = {}
        reports = {}
        for jobs in (1, 2):
            calls = seen[jobs] = []
            report = verify_path(damaged, jobs=jobs, progress=lambda d, t, calls=calls: calls.append((d, t)))
            reports[jobs] = json.dumps(report.as_dict(), sort_keys=True, default=str)
        assert reports[1] == reports[2]
        assert seen[1] == seen[2] and seen[1][-1][0] == seen[1][-1][1] > 0
        assert os.getpid() not in pool.RUNS[-1].pids


def test_the_default_is_one_process_for_a_small_store(sample):
    """Under 256 MiB of CommitLog and index files no worker is started."""
    verify_path(sample)
    assert pool.RUNS[-1].jobs == 1 and pool.RUNS[-1].pids == {os.getpid()}
    assert pool.default_jobs(10, pool.SMALL_WORK_BYTES) == min(pool.usable_cores(), 10)


@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_jobs_below_one_is_a_usage_error(sample, tmp_path, capsys, jobs):
    assert main(["verify", str(sample), "--jobs", jobs]) == EXIT_STATUS["usage"]
    assert "--jobs must be >= 1" in capsys.readouterr().err
    log_dir = tmp_path / "logs"
    (log_dir / "t-0").mkdir(parents=True)
    assert main(["kafka", "verify", str(log_dir), "--jobs", jobs]) == EXIT_STATUS["usage"]
    assert "--jobs must be >= 1" in capsys.readouterr().err
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        verify_path(sample, jobs=int(jobs))


# ------------------------------------------------------------------------------ Kafka


@pytest.mark.parametrize("name", REAL_KAFKA)
def test_kafka_log_dirs_are_the_same_with_any_jobs(name, capsys):
    log_dir = require_real_data(name)
    segments = len(list(log_dir.glob("*/*.log")))
    status, text = assert_same_with_any_jobs(["kafka", "verify", str(log_dir)], capsys, units=segments)
    assert status == 0 and text.rstrip().endswith(" 0 failed")


def test_damaged_kafka_log_dir_is_the_same_with_any_jobs(tmp_path, capsys):
    """kafka-3.6-compacted copied, one segment with a flipped byte (a CRC error) and cut short
    (a tear), another cut short: both partitions' reports hold errors."""
    log_dir = _writable_copy(require_real_data(REAL_KAFKA[0]), tmp_path / "logs")
    for name, flip, cut in (("stock-market-realtime-0", 3, 4000), ("stock-market-batch-0", None, 20_000)):
        data, batches, _ = original(name)
        log = copy_partition(name, log_dir)
        bad = bytearray(data)
        if flip is not None:
            bad[batches[flip][0] + 300] ^= 0x01
        log.write_bytes(bytes(bad[:cut]))
    status, text = assert_same_with_any_jobs(["kafka", "verify", str(log_dir)], capsys,
                                             units=len(list(log_dir.glob("*/*.log"))))
    assert status == EXIT_STATUS["damage"] and "error: " in text
    for name in PARTITIONS:     # a partition folder alone: its segments over the pool too
        assert_same_with_any_jobs(["kafka", "verify", str(log_dir / name)], capsys)
