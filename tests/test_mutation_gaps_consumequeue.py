"""Tests that kill mutants of rmqlab/formats/consumequeue.py the other tests let survive
(benchmarks/mutation.py), each against independent truth.

The truth for the search by time is a model written here, statement by statement, from the
broker's Java source at rocketmq-all-5.3.3 (MappedFileQueue.getConsumeQueueMappedFileByTime,
ConsumeQueue.binarySearchInQueueByTime) and rocketmq-all-4.9.7 / 5.0.0
(MappedFileQueue.getMappedFileByTime, ConsumeQueue.getOffsetInQueueByTime,
DefaultMessageStore.getOffsetInQueueByTime's clamp from 5.0.0). It works on plain lists of
(commitlog offset, size) per file, builds its files from the units the test writes, and records
every pickupStoreTimestamp call it makes; it imports nothing from rmqlab.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rmqlab.formats.consumequeue import ConsumeQueue, ConsumeQueueWriter

INT_MAX = 2**31 - 1
UNIT = 20
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow])


# ------------------------------------------------------------------ the broker's search, modelled


def java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@dataclass
class MFile:
    """A MappedFile as the broker holds it after recover(): fileFromOffset, its units (all of
    the file's bytes, zeros after the end) and its wrote position."""

    start: int
    units: list[tuple[int, int]]
    wrote: int


class Reads:
    """CommitLog.pickupStoreTimestamp over a dict of store times, recording each call as
    (phase, queue offset, commitlog offset, answer); a unit passed over below the CommitLog's
    min offset is recorded with None."""

    def __init__(self, times: dict[int, int], max_offset: int):
        self.times, self.max_offset, self.steps = times, max_offset, []

    def pickup(self, f: MFile, pos: int, phase: str) -> int:
        phy, size = f.units[pos]
        # offset >= minOffset && offset + size <= maxOffset, else -1 (a blank unit never fits)
        t = self.times.get(phy, -1) if phy + size <= self.max_offset else -1
        self.steps.append((phase, f.start // UNIT + pos, phy, t))
        return t

    def skip(self, f: MFile, pos: int) -> None:
        self.steps.append(("search", f.start // UNIT + pos, f.units[pos][0], None))


def file_by_store_time(files: list[MFile], file_size: int, ts: int, lower: bool, reads: Reads) -> int | None:
    n = len(files)
    start, stop = [-1] * n, [-1] * n
    for i in range(n - 1, -1, -1):
        f = files[i]
        if 0 + UNIT <= f.wrote:                           # selectMappedBuffer(0, 20)
            t = reads.pickup(f, 0, "file-start")
            if t > 0:
                start[i] = t
        if i < n - 1 and file_size - UNIT + UNIT <= f.wrote:   # selectMappedBuffer(size - 20, 20)
            t = reads.pickup(f, file_size // UNIT - 1, "file-stop")
            if t > 0:
                stop[i] = t
    if lower:
        for i in range(n):
            if i < n - 1 and stop[i] >= ts:
                return i
            if i == n - 1:
                return i
    for i in range(n - 1, -1, -1):
        if start[i] <= ts:
            return i
    return None


def search_5(f: MFile, file_size: int, ts: int, lower: bool, min_phy: int, min_logic_bytes: int,
             reads: Reads) -> tuple[int | None, str]:
    """binarySearchInQueueByTime; (None, "throws") where Java's buffer read would throw."""
    low = min_logic_bytes - f.start if min_logic_bytes > f.start else 0
    rng = file_size
    if f.wrote != 0 and f.wrote != file_size:
        rng = f.wrote
    if not rng <= f.wrote:                                # selectMappedBuffer(0, range) is null
        return 0, "empty-file"
    ceiling = rng - UNIT
    floor = low
    high = ceiling
    if reads.pickup(f, ceiling // UNIT, "last") < ts:
        return ((f.start + ceiling + UNIT) if lower else (f.start + ceiling)) // UNIT, "after-last"
    if floor > ceiling:                                   # position(floor) past the limit
        return None, "throws"
    if reads.pickup(f, floor // UNIT, "first") > ts:
        return (f.start // UNIT if lower else 0), "before-first"
    target = left = right = -1
    while high >= low:
        mid = (low + high) // (2 * UNIT) * UNIT
        phy = f.units[mid // UNIT][0]
        if phy < min_phy:
            reads.skip(f, mid // UNIT)
            low, left = mid + UNIT, mid
            continue
        t = reads.pickup(f, mid // UNIT, "search")
        if t < 0:
            return 0, "unreadable"
        if t == ts:
            target = mid
            break
        if t > ts:
            high, right = mid - UNIT, mid
        else:
            low, left = mid + UNIT, mid
    if target != -1:
        previous = target
        while True:
            attempt = previous - UNIT if lower else previous + UNIT
            if (lower and attempt < floor) or (not lower and attempt > ceiling):
                break
            if reads.pickup(f, attempt // UNIT, "walk") != ts:
                break
            previous = attempt
        return java_div(f.start + previous, UNIT), "exact"
    return java_div(f.start + (right if lower else left), UNIT), "between"


def search_4(f: MFile, ts: int, min_phy: int, min_logic_bytes: int, reads: Reads) -> tuple[int, str]:
    """getOffsetInQueueByTime of 4.9.7 and 5.0.0 on the chosen file."""
    low = min_logic_bytes - f.start if min_logic_bytes > f.start else 0
    if not 0 < f.wrote:                                   # selectMappedBuffer(0) is null
        return 0, "empty-file"
    high = f.wrote - UNIT
    target = left = right = -1
    left_value = right_value = -1
    while high >= low:
        mid = (low + high) // (2 * UNIT) * UNIT
        phy = f.units[mid // UNIT][0]
        if phy < min_phy:
            reads.skip(f, mid // UNIT)
            low, left = mid + UNIT, mid
            continue
        t = reads.pickup(f, mid // UNIT, "search")
        if t < 0:
            return 0, "unreadable"
        if t == ts:
            target = mid
            break
        if t > ts:
            high, right, right_value = mid - UNIT, mid, t
        else:
            low, left, left_value = mid + UNIT, mid, t
    if target != -1:
        return java_div(f.start + target, UNIT), "exact"
    if left_value == -1:
        offset = right
    elif right_value == -1:
        offset = left
    else:
        offset = right if abs(ts - left_value) > abs(ts - right_value) else left
    return java_div(f.start + offset, UNIT), "nearest"


def model_offset_by_time(files, file_size, times, ts, *, lower, broker, min_phy, min_logic, max_offset,
                         last_modified, commitlog_max):
    """(store's answer, raw answer, outcome, chosen file index, steps, probes, file probes)."""
    reads = Reads(times, commitlog_max)
    file_probes = 0
    if broker == "5":
        i = file_by_store_time(files, file_size, ts, lower, reads) if files else None
        file_probes = len(reads.steps)
        raw, outcome = (0, "no-file") if i is None else search_5(
            files[i], file_size, ts, lower, min_phy, min_logic * UNIT, reads)
    else:
        i = next((k for k, lm in enumerate(last_modified) if lm >= ts), len(files) - 1) if files else None
        raw, outcome = (0, "no-file") if i is None else search_4(files[i], ts, min_phy, min_logic * UNIT, reads)
    offset = raw if broker == "4" or raw is None else min(max(raw, min_logic), max_offset)
    probes = sum(s[3] is not None for s in reads.steps)
    return offset, raw, outcome, i, reads.steps, probes, file_probes


# ------------------------------------------------------------------------------- the queues


def write_queue(folder, per_file: int, first_cq: int, phys: list[int], empty_file_after: bool):
    """Units (phy, size 60) at queue offsets first_cq, first_cq + 1, ...; the model's files: the
    writer's pre-blank units before first_cq in the first file, then the units, per_file a file."""
    with ConsumeQueueWriter.create(folder, mapped_file_size=per_file * UNIT) as w:
        w.put_many(phys, [60] * len(phys), [0] * len(phys), range(first_cq, first_cq + len(phys)))
    first_file = first_cq - first_cq % per_file
    logical = [(0, INT_MAX)] * (first_cq - first_file) + [(p, 60) for p in phys]
    files = []
    for k in range(0, len(logical), per_file):
        part = logical[k:k + per_file]
        files.append(MFile((first_file + k) * UNIT, part + [(0, 0)] * (per_file - len(part)), len(part) * UNIT))
    if empty_file_after and files[-1].wrote == per_file * UNIT:
        start = files[-1].start + per_file * UNIT
        (folder / f"{start:020d}").write_bytes(b"\0" * (per_file * UNIT))
        files.append(MFile(start, [(0, 0)] * per_file, 0))
    return files


class Clock:
    def __init__(self, times: dict[int, int]):
        self.times = times

    def __call__(self, phys: np.ndarray) -> np.ndarray:
        return np.array([self.times.get(int(p), -1) for p in phys], dtype=np.int64)


@settings(max_examples=300, **SETTINGS)
@given(per_file=st.integers(1, 5), first_cq=st.integers(0, 9), n=st.integers(1, 16),
       base=st.sampled_from([0, 1000]), data=st.data())
def test_offset_by_time_takes_every_step_of_the_brokers_search(tmp_path_factory, per_file, first_cq, n,
                                                               base, data):
    """Every broker, boundary and option against the model: the answer, the raw answer, the
    outcome, the file searched, every unit looked at (phase, queue offset, commitlog offset,
    store time) and the probe counts."""
    phys = [base + 100 * i for i in range(n)]
    times = data.draw(st.lists(st.integers(1, 9), min_size=n, max_size=n), label="times")
    if data.draw(st.booleans(), label="sorted"):
        times = sorted(times)
    clock = {p: t for p, t in zip(phys, times)}
    for p in data.draw(st.lists(st.sampled_from(phys), max_size=2), label="unreadable"):
        clock[p] = -1
    folder = tmp_path_factory.mktemp("q")
    files = write_queue(folder, per_file, first_cq, phys, data.draw(st.booleans(), label="empty file after"))
    broker = data.draw(st.sampled_from(["5", "5.0", "4"]), label="broker")
    boundary = data.draw(st.sampled_from(["lower", "upper"]), label="boundary")
    ts = data.draw(st.integers(0, 10), label="ts")
    min_phy = data.draw(st.sampled_from([0, base, base + 1, base + 100, base + 250]), label="min_phy")
    given_min_logic = data.draw(st.one_of(st.none(), st.integers(0, first_cq + n + 1)), label="min_logic")
    last_modified = data.draw(st.lists(st.integers(0, 10), min_size=len(files), max_size=len(files)),
                              label="last_modified")
    max_offset = first_cq + n
    want = model_offset_by_time(
        files, per_file * UNIT, clock, ts, lower=boundary == "lower", broker=broker, min_phy=min_phy,
        min_logic=first_cq if given_min_logic is None else given_min_logic, max_offset=max_offset,
        last_modified=last_modified, commitlog_max=base + 100 * n)
    offset, raw, outcome, chosen, steps, probes, file_probes = want
    with ConsumeQueue.open(folder, per_file * UNIT) as q:
        assert (q.min_offset, q.max_offset) == (first_cq, max_offset)
        kwargs = dict(boundary=boundary, broker=broker, min_phy_offset=min_phy,
                      min_logic_offset=given_min_logic, last_modified=last_modified)
        if outcome == "throws":
            with pytest.raises(ValueError if given_min_logic is not None else Exception):
                q.offset_by_time(ts, Clock(clock), **kwargs)
            return
        r = q.offset_by_time(ts, Clock(clock), **kwargs)
    assert (r.offset, r.raw_offset, r.outcome) == (offset, raw, outcome)
    assert r.file == (None if chosen is None else folder / f"{files[chosen].start:020d}")
    assert [(s.phase, s.queue_offset, s.commitlog_offset, s.store_time) for s in r.steps] == steps
    assert (r.probes, r.file_probes) == (probes, file_probes)
    assert (r.timestamp, r.boundary, r.broker) == (ts, boundary if broker == "5" else None, broker)


def test_the_4x_file_choice_reads_the_files_modification_times(tmp_path):
    """Without `last_modified`, the files' mtimes cut to whole ms (File.lastModified): the first
    file modified at or after the time is searched. The first mtime is 1 ns short of a whole ms,
    which a float division would round up."""
    files = write_queue(tmp_path, 2, 0, [1000, 1100, 1200, 1300], False)
    names = [tmp_path / f"{f.start:020d}" for f in files]
    clock = Clock({1000: 1, 1100: 2, 1200: 3, 1300: 4})
    os.utime(names[0], ns=(0, 1_718_000_000_123_999_999))   # 1,718,000,000,123 whole ms
    os.utime(names[1], ns=(0, 1_718_000_009_000_000_000))
    with ConsumeQueue.open(tmp_path, 40) as q:
        for ts, want in ((1_718_000_000_123, 0), (1_718_000_000_124, 1), (1_718_000_009_001, 1)):
            assert q.offset_by_time(ts, clock, broker="4").file == names[want]


def test_a_min_logic_offset_past_the_file_still_answers_when_the_last_unit_is_older(tmp_path):
    """binarySearchInQueueByTime reads the file's last unit before the unit at the min logic
    offset: when the last unit is older than the time it answers from there, and only a search
    that goes on to read past the buffer's limit throws. One unit stored at 1, min offset 1."""
    write_queue(tmp_path, 4, 0, [1000], False)
    clock = Clock({1000: 1})
    with ConsumeQueue.open(tmp_path, 80) as q:
        lower = q.offset_by_time(2, clock, min_logic_offset=1)
        assert (lower.raw_offset, lower.offset, lower.outcome) == (1, 1, "after-last")
        upper = q.offset_by_time(2, clock, boundary="upper", min_logic_offset=1)
        assert (upper.raw_offset, upper.offset, upper.outcome) == (0, 1, "after-last")
        with pytest.raises(ValueError, match="min_logic_offset 1 lies past the units"):
            q.offset_by_time(1, clock, min_logic_offset=1)
