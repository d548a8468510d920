"""Verify's joins made where each CommitLog file is walked (``CommitLogScan.walk(apart=)``): with
a parallel pool every worker joins the index entries and queue units that point into its own
file, and only what the checks found comes back, merged in file order.

Independent truth: the one-process run (``jobs=1``), which joins every window in this process.
Its report, as JSON, must come out byte for byte the same with 2 and 3 jobs on random damage of
tests/verify/test_verify.py's store, chosen so that the cross-file checks find problems in many
CommitLog files at once: entries with the wrong key hash or phy offset (index.key-hash,
index.phy-offset, index.missing-key), a queue folder gone or cut short (cq.missing-unit, whose
count depends on the dispatched end of every file), an index file gone from the middle
(index.lost-keys in the gap), units with the wrong size or tags code, the CommitLog's tail
zeroed (units past its end, which the queues' own checks started before the walk cannot see). Each run must really have
made its joins in the workers, except where files overlap, which keeps the joins here.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from rmqlab.formats import commitlog as cl
from rmqlab.tables import pool
from rmqlab.verify import check_commitlog, verify_path
from tests.verify.test_verify import (
    HSN,
    build_small_store,
    c_body_crc,
    c_cq_size,
    c_cq_tags,
    c_key_hash,
    c_phy_field,
    c_phy_offset,
    c_slot_flip,
    c_time_order,
    entry_at,
    index_arrays,
    poke,
)


def drop_queue(root: Path, rng) -> None:
    """A whole ConsumeQueue folder gone: its messages in every CommitLog file have no unit."""
    queues = sorted(q for q in (root / "consumequeue").glob("*/*") if q.is_dir())
    shutil.rmtree(queues[int(rng.integers(0, len(queues)))])


def cut_queue(root: Path, rng) -> None:
    """A ConsumeQueue's last file gone: the queue ends early, its later messages have no unit."""
    queues = [q for q in sorted((root / "consumequeue").glob("*/*")) if len(list(q.iterdir())) >= 2]
    q = queues[int(rng.integers(0, len(queues)))]
    sorted(q.iterdir())[-1].unlink()


def drop_middle_index_file(root: Path, rng) -> None:
    """An index file gone from between two others: its messages' keys lie in a gap."""
    files = sorted((root / "index").iterdir())
    files[int(rng.integers(1, len(files) - 1))].unlink()


def unsound_units_of_one_file(root: Path, rng) -> None:
    """Every ConsumeQueue unit pointing into one CommitLog file (not the first or last) one byte
    too long: no unit there is sound, so that file does not move the dispatched end."""
    files = cl.store_files(root / "commitlog")
    f = files[int(rng.integers(1, len(files) - 1))]
    unit = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags", ">i8")])
    for path in (root / "consumequeue").glob("*/*/*"):
        units = np.fromfile(path, unit)
        inside = (units["offset"] >= f.start_offset) & (units["offset"] < f.start_offset + f.size)
        if inside.any():
            units["size"][inside] += 1
            units.tofile(path)


def key_hashes_late_then_early(root: Path, rng) -> None:
    """Two entries with the wrong key hash (same slot): one for the last message of a CommitLog
    file, one for the first message of a later file. The first missing key is the earlier
    file's, though it lies further into its file than the later one does into its own."""
    files = cl.store_files(root / "commitlog")
    k = int(rng.integers(1, len(files) - 3))
    ranges = [(files[k].start_offset, files[k + 1].start_offset, np.argmax),
              (files[k + 2].start_offset, files[k + 3].start_offset, np.argmin)]
    for lo, hi, pick in ranges:
        best = None
        for path in sorted((root / "index").iterdir())[:-1]:
            count, _, kh, phy, *_ = index_arrays(path)
            n = np.arange(len(phy))
            ok = np.flatnonzero((n >= 2) & (n < count - 1) & (phy >= lo) & (phy < hi))
            if len(ok):
                at = int(ok[pick(phy[ok])])
                if best is None or pick([best[2], phy[at]]) == 1:
                    best = (path, at, int(phy[at]), int(kh[at]))
        assert best is not None
        path, at, _, hash_ = best
        poke(path, entry_at(at), "i", hash_ + HSN if hash_ + HSN <= 2**31 - 1 else hash_ - HSN)


def zero_the_commitlog_tail(root: Path, rng) -> None:
    """The last CommitLog file zeroed from one of its messages on: the CommitLog ends earlier,
    so units of every queue end past its end (cq.past-commitlog-end, which the queues' own
    checks, started before the walk, leave to the parent for those queues)."""
    last = cl.store_files(root / "commitlog")[-1]
    starts = [m.position for m in cl.iter_messages(last.path)]
    at = starts[int(rng.integers(0, len(starts)))]
    with open(last.path, "r+b") as fh:
        fh.seek(at)
        fh.write(bytes(last.size - at))


DAMAGE = [c_key_hash, c_phy_offset, c_time_order, c_slot_flip, c_cq_size, c_cq_tags, c_body_crc, c_phy_field,
          drop_queue, cut_queue, drop_middle_index_file, unsound_units_of_one_file, key_hashes_late_then_early,
          zero_the_commitlog_tail]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return build_small_store(tmp_path_factory.mktemp("apart") / "store")


def report_json(root: Path, jobs: int) -> str:
    return json.dumps(verify_path(root, jobs=jobs).as_dict(), sort_keys=True, default=str)


def joined_in_workers(root: Path, jobs: int, monkeypatch) -> tuple[str, bool]:
    """The report with `jobs`, and whether every walked file's joins came back made (none of
    its table crossed to this process)."""
    seen: list[bool] = []
    take = check_commitlog.CommitLogScan._take_walked

    def spy(self, w, rep, apart):
        seen.append(w.joined is not None and not w.parts)
        return take(self, w, rep, apart)

    monkeypatch.setattr(check_commitlog.CommitLogScan, "_take_walked", spy)
    try:
        got = report_json(root, jobs)
    finally:
        monkeypatch.setattr(check_commitlog.CommitLogScan, "_take_walked", take)
    assert pool.RUNS[-1].jobs == jobs and os.getpid() not in pool.RUNS[-1].pids
    return got, bool(seen) and all(seen)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(range(len(DAMAGE))), min_size=1, max_size=4), st.integers(0, 2**32 - 1))
def test_joins_in_the_workers_give_the_one_process_report(store, monkeypatch, damage, seed):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        shutil.copytree(store, root)
        rng = np.random.default_rng(seed)
        for k in damage:
            try:
                DAMAGE[k](root, rng)
            except ValueError:      # nothing there to damage so (an empty body, a queue gone before)
                reject()
        want = report_json(root, 1)
        for jobs in (2, 3):
            got, apart = joined_in_workers(root, jobs, monkeypatch)
            assert apart, "the joins were not made in the workers"
            assert got == want, f"jobs={jobs}: {[DAMAGE[k].__name__ for k in damage]}"


def test_the_damage_reaches_the_cross_file_checks(store, tmp_path, monkeypatch):
    """The damage above is seen by the checks this test is about, in many CommitLog files at
    once: missing keys in several files (the first must be the lowest in message order, not
    the lowest in its worker's file), missing units in a file that does not move the
    dispatched end (they count when a later file's end passes them)."""
    root = tmp_path / "store"
    shutil.copytree(store, root)
    rng = np.random.default_rng(3)
    for corrupt in (drop_queue, drop_middle_index_file, key_hashes_late_then_early, c_cq_tags,
                    unsound_units_of_one_file, zero_the_commitlog_tail):
        corrupt(root, rng)
    r = verify_path(root, jobs=1)
    checks = {p.check: p for p in r.problems}
    for check in ("cq.missing-unit", "index.lost-keys", "index.key-hash", "index.missing-key", "cq.tags-code",
                  "cq.size", "cq.past-commitlog-end"):
        assert check in checks, check
    assert checks["cq.missing-unit"].count > 10 and checks["index.lost-keys"].count > 10
    assert checks["index.missing-key"].count >= 2
    for jobs in (2, 3):
        got, apart = joined_in_workers(root, jobs, monkeypatch)
        assert apart and got == json.dumps(r.as_dict(), sort_keys=True, default=str)


def test_overlapping_files_keep_the_joins_here(store, tmp_path, monkeypatch):
    """A CommitLog file named inside the one before it: one file no longer answers for every
    offset up to the next, so the workers send their tables back, and the report is still the
    one-process report."""
    root = tmp_path / "store"
    shutil.copytree(store, root)
    files = cl.store_files(root / "commitlog")
    moved = files[3]
    moved.path.rename(moved.path.with_name(f"{moved.start_offset - 1000:020d}"))
    want = report_json(root, 1)
    got, apart = joined_in_workers(root, 2, monkeypatch)
    assert not apart and got == want
    assert "commitlog.continuity" in {p.check for p in verify_path(root, jobs=1).problems}
