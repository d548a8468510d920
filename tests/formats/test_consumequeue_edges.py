"""Edge cases of rmqlab/formats/consumequeue.py that its other tests left open (found as
mutants they let survive, benchmarks/mutation.py), each against independent truth.

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
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.errors import CorruptIndexError, FormatError
from rmqlab.formats.consumequeue import STATUS_NAMES as STATUS
from rmqlab.formats.consumequeue import ConsumeQueue, ConsumeQueueWriter, read_queue_info

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
    if ceiling < 0:                                       # position(ceiling) throws
        return None, "throws"
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
    times = data.draw(st.lists(st.integers(0, 9), min_size=n, max_size=n), label="times")
    if data.draw(st.booleans(), label="sorted"):
        times = sorted(times)
    clock = {p: t for p, t in zip(phys, times)}
    for p in data.draw(st.lists(st.sampled_from(phys), max_size=2), label="unreadable"):
        clock[p] = -1
    folder = tmp_path_factory.mktemp("q")
    files = write_queue(folder, per_file, first_cq, phys, data.draw(st.booleans(), label="empty file after"))
    broker = data.draw(st.sampled_from(["5", "5.0", "4"]), label="broker")
    boundary = data.draw(st.sampled_from(["lower", "upper"]), label="boundary")
    ts = data.draw(st.integers(-2, 10), label="ts")   # unset file times are -1
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


def test_a_file_cut_short_has_no_stop_time_to_read(tmp_path):
    """strict=False opens a queue whose first file lacks its last unit (the broker would refuse
    it; recover() starts at the third-newest file, so the queue still ends in the fourth): the
    search reads no stop time there (selectMappedBuffer(size - 20, 20) finds no such bytes)
    and goes on as the model says."""
    phys = [1000 + 100 * i for i in range(10)]
    files = write_queue(tmp_path, 3, 0, phys, False)
    os.truncate(tmp_path / f"{0:020d}", 40)
    files[0] = MFile(0, files[0].units[:2], 40)
    times = {p: 10 * (i + 1) for i, p in enumerate(phys)}
    with ConsumeQueue.open(tmp_path, 60, strict=False) as q:
        assert (q.max_offset, len(q.files)) == (10, 4)
        for ts in (5, 25, 45, 65, 95, 105):
            r = q.offset_by_time(ts, Clock(times))
            want = model_offset_by_time(files, 60, times, ts, lower=True, broker="5", min_phy=0, min_logic=0,
                                        max_offset=10, last_modified=[], commitlog_max=2000)
            assert [(s.phase, s.queue_offset, s.commitlog_offset, s.store_time) for s in r.steps] == want[4]
            assert (r.offset, r.raw_offset, r.outcome) == want[:3]


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


# ------------------------------------------------------------------- reading, read with struct


def struct_units(folder: Path) -> dict[int, tuple[int, int, int]]:
    """queue offset -> (commitlog_offset, size, tags_code) of every unit in the folder's files,
    read with struct (>qiq, ConsumeQueue.CQ_STORE_UNIT_SIZE = 20), zeros included."""
    out = {}
    for f in sorted(folder.iterdir()):
        data = f.read_bytes()
        for k in range(len(data) // UNIT):
            out[int(f.name) // UNIT + k] = struct.unpack_from(">qiq", data, k * UNIT)
    return out


@pytest.fixture
def seven(tmp_path):
    """Seven units at queue offsets 3..9, four units a file: pre-blank units 0..2 in file 0."""
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=80) as w:
        w.put_many([100 * i + 7 for i in range(7)], [50 + i for i in range(7)], [-i for i in range(7)],
                   range(3, 10))
    return tmp_path


def test_to_frame_slices_from_start_to_stop_with_the_layout_types(seven):
    truth = struct_units(seven)
    with ConsumeQueue.open(seven, 80) as q:
        assert (q.first_offset, q.min_offset, q.max_offset) == (0, 3, 10)
        for start, stop, lo, hi in ((None, None, 3, 10), (4, 6, 4, 6), (0, 5, 0, 5), (5, 100, 5, 10),
                                    (None, 8, 3, 8), (6, None, 6, 10), (8, 9, 8, 9)):
            f = q.to_frame(start, stop)
            assert f["queue_offset"].tolist() == list(range(lo, hi))
            assert list(zip(f["commitlog_offset"], f["size"], f["tags_code"])) == [truth[i] for i in range(lo, hi)]
            assert [str(t) for t in f.dtypes] == ["int64", "int64", "int32", "int64"]


def test_tag_masks_are_boolean(seven):
    with ConsumeQueue.open(seven, 80) as q:
        for sub in ("*", "", None, "TagA", ["TagA"]):
            m = q.tag_mask(sub)
            assert m.dtype == np.bool_ and len(m) == 7
        assert q.tag_mask("*").all() and not q.tag_mask("TagA").any()


def test_read_loads_the_bytes_and_closes_the_files(seven):
    """ConsumeQueue.read is eager: its units stay what the files held when it read them."""
    path = seven / f"{0:020d}"
    q = ConsumeQueue.read(seven, 80, topic="T", queue_id=5)
    with q:
        before = q.units.copy()
        with open(path, "r+b") as fh:                     # unit 3, in place
            fh.seek(60)
            fh.write(struct.pack(">qiq", 999, 1, 1))
        assert (q.topic, q.queue_id) == ("T", 5)
        assert q.units.tolist() == before.tolist() and q.unit(3) == (7, 50, 0)


def test_read_and_read_queue_info_are_strict_unless_told(seven):
    (seven / "junk").write_bytes(b"")
    for read in (ConsumeQueue.read, read_queue_info):
        with pytest.raises(FormatError) as e:
            read(seven, 80)
        assert e.value.path == str(seven / "junk")
    with ConsumeQueue.read(seven, 80, strict=False) as q:
        assert q.max_offset == 10
    assert read_queue_info(seven, 80, strict=False).count == 7


def test_writer_flush_forces_every_touched_file(tmp_path):
    w = ConsumeQueueWriter.create(tmp_path, mapped_file_size=40)
    w.put_many([0, 100, 200], [50, 50, 50], [1, 2, 3])
    w.close(sync=True)                                    # flush(): fsync of both files
    truth = struct_units(tmp_path)
    assert [truth[i] for i in range(3)] == [(0, 50, 1), (100, 50, 2), (200, 50, 3)]
    w = ConsumeQueueWriter.open(tmp_path, mapped_file_size=40)
    w.put(300, 50, 4, 3)
    w.flush()
    w.flush()                                             # nothing touched since: nothing to do
    w.close()
    assert struct_units(tmp_path)[3] == (300, 50, 4)


def test_unit_problems_name_how_many_and_what(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=100) as w:
        w.put_many([100 * i for i in range(8)], [50] * 8, [0] * 8)
    f = tmp_path / f"{100:020d}"
    with open(f, "r+b") as fh:                            # units 6 and 7 repeat unit 5's offset
        fh.seek(20)
        fh.write(struct.pack(">q", 500))
        fh.seek(40)
        fh.write(struct.pack(">q", 500))
    with ConsumeQueue.open(tmp_path, 100) as q, pytest.raises(CorruptIndexError) as e:
        q.check()
    assert e.value.reason == ("queue offset 6: commitlog offset not greater than the previous unit's "
                              "(commitlog_offset 500) (2 such)")


def test_an_invalid_unit_at_commitlog_offset_zero_is_named_by_its_size(tmp_path):
    """A unit before the end with commitlog_offset 0 and size -1: the size makes it invalid."""
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=40) as w:
        w.put_many([100 * i + 10 for i in range(5)], [50] * 5, [0] * 5)
    with open(tmp_path / f"{0:020d}", "r+b") as fh:
        fh.write(struct.pack(">qi", 0, -1))
    with ConsumeQueue.open(tmp_path, 40) as q, pytest.raises(FormatError) as e:
        q.check()
    assert (e.value.offset, e.value.field) == (8, "unit.size")


def test_java_long_division_truncates_toward_zero():
    """_jdiv is Java's long `/`, checked against exact fractions rounded toward zero."""
    from fractions import Fraction

    from rmqlab.formats.consumequeue import _jdiv

    for a in range(-45, 46):
        for b in (-20, -7, -1, 1, 3, 20):
            q = Fraction(a, b)
            assert _jdiv(a, b) == (q.numerator // q.denominator if q >= 0 else -((-q.numerator) // q.denominator))


def test_boundary_is_read_case_insensitively_and_checked_for_broker_5_only(seven):
    clock = Clock({100 * i + 7: 10 * i for i in range(7)})
    with ConsumeQueue.open(seven, 80) as q:
        for name, want in (("LOWER", 5), ("Upper", 4), ("lower", 5), ("upper", 4)):
            r = q.offset_by_time(15, clock, boundary=name)
            assert (r.offset, r.boundary) == (want, name.lower())
        with pytest.raises(ValueError, match="boundary must be 'lower' or 'upper'"):
            q.offset_by_time(15, clock, boundary="middle")
        for broker in ("4", "5.0"):                      # they have no boundary: any value is ignored
            want = q.offset_by_time(15, clock, broker=broker, last_modified=[0, 0, 0])
            for boundary in ("middle", None, "upper"):
                r = q.offset_by_time(15, clock, broker=broker, boundary=boundary, last_modified=[0, 0, 0])
                assert (r.offset, r.steps, r.boundary) == (want.offset, want.steps, None)


def test_store_times_may_come_back_as_a_column(seven):
    """store_time_of may answer with a one-column 2-d array (a one-column DataFrame's values)."""
    times = {100 * i + 7: 10 * i for i in range(7)}
    with ConsumeQueue.open(seven, 80) as q:
        flat = q.offset_by_time(25, Clock(times))
        column = q.offset_by_time(25, lambda phys: Clock(times)(phys).reshape(-1, 1))
    assert (column.offset, column.outcome, column.steps) == (flat.offset, flat.outcome, flat.steps)
    assert flat.offset == 6


def test_resolved_tags_codes_without_ext_are_the_raw_codes(seven):
    truth = struct_units(seven)
    with ConsumeQueue.open(seven, 80) as q:
        codes, resolved = q.resolved_tags_codes(None)
    assert codes.dtype == np.int64 and codes.tolist() == [truth[i][2] for i in range(3, 10)]
    assert resolved.dtype == np.bool_ and resolved.tolist() == [False] * 7


def test_unit_problems_count_from_a_first_file_that_is_not_file_zero(tmp_path):
    """Queue offsets 7..13 in files of five units: the first file starts at offset 5 (units 5
    and 6 pre-blank). A blank unit written among the real ones (offset 9) is found there."""
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=100) as w:
        w.put_many([100 * i for i in range(7)], [50] * 7, [0] * 7, range(7, 14))
    first = tmp_path / f"{100:020d}"
    with ConsumeQueue.open(tmp_path, 100) as q:
        assert (q.first_offset, q.min_offset, q.max_offset) == (5, 7, 14)
        assert q.problems() == []
    with open(first, "r+b") as fh:
        fh.seek(4 * UNIT)
        fh.write(struct.pack(">qiq", 0, INT_MAX, 0))
    with ConsumeQueue.open(tmp_path, 100) as q, pytest.raises(CorruptIndexError) as e:
        q.check()
    assert (e.value.path, e.value.offset, e.value.field) == (str(first), 4 * UNIT, "unit")
    assert e.value.reason.startswith("queue offset 9: blank filler unit")


# ------------------------------------------------------------------ the writer after recover()


def test_writer_open_keeps_the_min_offset_and_the_last_message_end(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=60) as w:
        w.put_many([1000, 1100, 1200, 1300], [50] * 4, [0] * 4, range(3, 7))
    with ConsumeQueueWriter.open(tmp_path, mapped_file_size=60) as w:
        assert (w.min_offset, w.max_offset, w.max_physic_offset) == (3, 7, 1350)


def test_writer_open_takes_max_physic_offset_from_the_files_recover_reads(tmp_path):
    """recover() reads from the third-newest file on and sets maxPhysicOffset from the valid
    units it reads (ConsumeQueue.recover, 5.3.3); it stays -1 when those files hold none."""
    def queue(folder, zero_files):
        with ConsumeQueueWriter.create(folder, mapped_file_size=60) as w:
            w.put_many([1000, 1100, 1200], [50] * 3, [0] * 3)
        for k in range(1, zero_files + 1):
            (folder / f"{60 * k:020d}").write_bytes(b"\0" * 60)
        return ConsumeQueueWriter.open(folder, mapped_file_size=60)

    with queue(tmp_path / "two", 1) as w:             # recover reads file 0: its last unit ends at 1250
        assert (w.max_offset, w.max_physic_offset) == (3, 1250)
        assert w.put(1100, 50, 0, 3).status == "duplicate-physical"
    with queue(tmp_path / "four", 3) as w:            # recover starts at file 1: no unit read
        assert (w.max_offset, w.max_physic_offset) == (3, -1)
        r = w.put(1100, 50, 0, 3)
        assert (r.status, r.queue_offset, r.blank_units, w.min_offset) == ("written", 3, 0, 0)


def test_writer_open_on_an_empty_folder_accepts_any_first_unit(tmp_path):
    with ConsumeQueueWriter.open(tmp_path, mapped_file_size=60) as w:
        assert w.max_physic_offset == -1
        assert w.put(0, 1, 0, 0).status == "written"
    assert struct_units(tmp_path)[0] == (0, 1, 0)


def test_writer_open_continues_past_an_invalid_unit_recover_assumed_valid(tmp_path):
    """A bad unit inside a file recover() takes as full is not the queue's end: the broker keeps
    appending after the end, and so does the writer (it never rewrites the bad bytes)."""
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=40) as w:
        w.put_many([100 * i for i in range(7)], [50] * 7, [0] * 7)
    with open(tmp_path / f"{0:020d}", "r+b") as fh:
        fh.seek(UNIT + 8)
        fh.write(struct.pack(">i", 0))
    with ConsumeQueueWriter.open(tmp_path, mapped_file_size=40) as w:
        assert w.max_offset == 7
        assert w.put(700, 50, 0, 7).queue_offset == 7
    assert struct_units(tmp_path)[1] == (100, 0, 0) and struct_units(tmp_path)[7] == (700, 50, 0)


# ------------------------------------------------------------------ problems, named one by one


def put_units(folder: Path, per_file: int, units: list[tuple[int, int, int]], first_cq: int = 0):
    with ConsumeQueueWriter.create(folder, mapped_file_size=per_file * UNIT) as w:
        for i, u in enumerate(units):
            assert w.put(*u, first_cq + i).written
    return folder


def patch_bytes(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def described(problems):
    return [(type(p).__name__, Path(p.path).name, p.offset, p.field, p.reason) for p in problems]


def test_problems_of_the_end_each_named_with_its_count(tmp_path):
    """Invalid units in a file recover() assumes full, a non-zero end marker, non-zero bytes
    after the end, and a dirty file holding data: every report names how many and where."""
    units = [(100 * i, 50, 0) for i in range(10)]
    put_units(tmp_path, 4, units)                         # files 0, 80, 160 (two units)
    f0, f2 = tmp_path / f"{0:020d}", tmp_path / f"{160:020d}"
    patch_bytes(f0, 1 * UNIT + 8, struct.pack(">i", 0))   # units 1 and 3: size 0
    patch_bytes(f0, 3 * UNIT + 8, struct.pack(">i", -4))
    patch_bytes(f2, 2 * UNIT, struct.pack(">q", 7))       # the end marker (unit 10) is not zeros
    patch_bytes(f2, 3 * UNIT + 5, b"\x01")                # and a byte after it, in unit 11
    dirty = tmp_path / f"{240:020d}"
    dirty.write_bytes(b"\0" * 80)
    patch_bytes(dirty, 1 * UNIT + 3, b"\x02")             # data at unit 13 and 15 of a dirty file
    patch_bytes(dirty, 3 * UNIT + 1, b"\x03")
    with ConsumeQueue.open(tmp_path, 80) as q:
        assert (q.max_offset, [f.path for f in q.dirty_files]) == (10, [dirty])
        assert described(q._end_problems()) == [
            ("FormatError", f0.name, 28, "unit.size",
             "queue offset 1: invalid unit before the end (recover() assumed this file full) (size 0) (2 such)"),
            ("FormatError", f2.name, 48, "unit.size",
             "queue offset 10: the broker takes this unit as the end of the queue, but it is not a zero end "
             "marker (size 0) (1 such)"),
            ("CorruptIndexError", f2.name, 60, "unit",
             "non-zero bytes after the end of the queue (queue offset 10): the broker would overwrite them"),
            ("CorruptIndexError", dirty.name, 20, "unit",
             "file starts after the end of the queue (queue offset 10) but holds data: the broker deletes "
             "it at restart (truncateDirtyFiles)")]


def test_an_empty_queue_and_an_empty_file_after_the_end_have_no_problems_of_their_own(tmp_path):
    with ConsumeQueue.open(tmp_path, 80) as q:
        assert q.problems() == []
    put_units(tmp_path / "q", 4, [(0, 50, 0), (100, 50, 0)])
    (tmp_path / "q" / f"{80:020d}").write_bytes(b"")      # an empty file, not the last one
    (tmp_path / "q" / f"{160:020d}").write_bytes(b"\0" * 80)
    with ConsumeQueue.open(tmp_path / "q", 80, strict=False) as q:
        assert described(q.problems()) == [
            ("TruncatedFileError", f"{80:020d}", 0, "file size",
             "file is 0 bytes, not the mapped file size 80 (the broker refuses to load it)")]


def test_unit_problems_each_named_with_its_count(tmp_path):
    """Real units of one queue (queue offsets 3..): a blank after the first real unit, offsets
    that do not grow, a message starting inside the previous one, and messages past the
    CommitLog's end; each report counts its kind."""
    units = [(0, 50, 0), (100, 50, 0), (200, 50, 0), (300, 50, 0), (400, 50, 0), (500, 50, 0), (600, 50, 0)]
    put_units(tmp_path, 20, units, first_cq=3)
    f = tmp_path / f"{0:020d}"
    patch_bytes(f, 4 * UNIT, struct.pack(">q", 0))        # unit 4 repeats unit 3's offset
    patch_bytes(f, 6 * UNIT, struct.pack(">qiq", 0, INT_MAX, 0))   # unit 6: a blank filler
    patch_bytes(f, 8 * UNIT, struct.pack(">q", 420))      # unit 8 starts inside unit 7 (400 + 50)
    with ConsumeQueue.open(tmp_path, 400) as q:
        assert (q.min_offset, q.max_offset) == (3, 10)
        assert described(q.problems(commitlog_max_offset=560)) == [
            ("CorruptIndexError", f.name, 6 * UNIT, "unit",
             "queue offset 6: blank filler unit (0, Integer.MAX_VALUE, 0) after the queue's first real unit "
             "(the broker only writes them before it) (1 such)"),
            ("CorruptIndexError", f.name, 4 * UNIT, "unit.commitlog_offset",
             "queue offset 4: commitlog offset not greater than the previous unit's (commitlog_offset 0) (1 such)"),
            ("CorruptIndexError", f.name, 8 * UNIT, "unit.commitlog_offset",
             "queue offset 8: message starts inside the previous unit's message (commitlog_offset 420) (1 such)"),
            ("CorruptIndexError", f.name, 9 * UNIT, "unit.commitlog_offset",
             "queue offset 9: message ends past the CommitLog's max offset 560 (commitlog_offset 600) (1 such)")]


@pytest.mark.parametrize("offsets, want", [
    ([500, 500], ["not greater"]),                     # two units: the pair is checked
    ([0, 200, 190], ["not greater"]),                  # older than its neighbour, not an overlap
    ([0, 200, 200, 100], ["not greater"]),             # equal offsets are not an overlap either
])
def test_each_pair_of_real_units_is_checked_once(tmp_path, offsets, want):
    put_units(tmp_path, 10, [(100 * i, 50, 0) for i in range(len(offsets))])
    for i, off in enumerate(offsets):
        patch_bytes(tmp_path / f"{0:020d}", i * UNIT, struct.pack(">q", off))
    with ConsumeQueue.open(tmp_path, 200) as q:
        got = [p.reason for p in q.problems()]
    assert [w for w in ("not greater", "starts inside") for r in got if w in r] == want


def test_unit_checks_at_commitlog_offsets_beyond_2_to_the_53(tmp_path):
    """CommitLog offsets are Java longs: 2^62 and 2^62 + 100 grow, and 2^62 + 599 starts inside
    a 600-byte message at 2^62, though a float64 holds neither difference."""
    big = 2**62
    put_units(tmp_path / "a", 10, [(big, 50, 0), (big + 100, 50, 0)])
    with ConsumeQueue.open(tmp_path / "a", 200) as q:
        assert q.problems() == []
    put_units(tmp_path / "b", 10, [(big, 600, 0), (big + 600, 50, 0)])
    patch_bytes(tmp_path / "b" / f"{0:020d}", UNIT, struct.pack(">q", big + 599))
    with ConsumeQueue.open(tmp_path / "b", 200) as q:
        assert [p.reason for p in q.problems()] == [
            f"queue offset 1: message starts inside the previous unit's message (commitlog_offset {big + 599}) "
            "(1 such)"]


def test_offsets_in_a_gap_or_in_an_empty_first_file_are_named_as_a_gap(tmp_path):
    """strict=False: a missing middle file, and an empty first file that recover() never reads
    (it starts at the third-newest file): offsets there lie in no file."""
    put_units(tmp_path / "gap", 2, [(100 * i, 50, 0) for i in range(6)])
    (tmp_path / "gap" / f"{40:020d}").unlink()
    with ConsumeQueue.open(tmp_path / "gap", 40, strict=False) as q:
        assert q.max_offset == 6 and q.unit(1) == (100, 50, 0) and q.unit(4) == (400, 50, 0)
        for index in (2, 3):
            with pytest.raises(CorruptIndexError, match=f"queue offset {index} lies in a gap"):
                q.unit(index)
    put_units(tmp_path / "first", 2, [(100 * i, 50, 0) for i in range(8)])
    (tmp_path / "first" / f"{0:020d}").write_bytes(b"")
    with ConsumeQueue.open(tmp_path / "first", 40, strict=False) as q:
        assert (q.first_offset, q.max_offset) == (0, 8) and q.unit(2) == (200, 50, 0)
        with pytest.raises(CorruptIndexError, match="queue offset 0 lies in a gap"):
            q.unit(0)


def test_writer_put_takes_every_size_a_java_int_holds_and_nothing_else(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=200) as w:
        assert w.put(100, INT_MAX, 5, 0).status == "written"
        for offset, size in ((0, 0), (0, -1), (-1, 10), (0, INT_MAX + 1)):
            with pytest.raises(ValueError):
                w.put(offset, size, 5, 1)
    assert struct_units(tmp_path)[0] == (100, INT_MAX, 5) and struct_units(tmp_path)[1] == (0, 0, 0)


def test_reprs_name_the_folder_and_the_state(seven):
    with ConsumeQueue.open(seven, 80, topic="T", queue_id=2) as q:
        assert repr(q) == f"ConsumeQueue({str(seven)!r}, topic='T', queue_id=2, files=3, min_offset=3, max_offset=10)"
    w = ConsumeQueueWriter.open(seven, mapped_file_size=80)
    assert repr(w) == (f"ConsumeQueueWriter({str(seven)!r}, files=3, max_offset=10, "
                       f"max_physic_offset={600 + 7 + 56})")
    w.close()


def test_time_search_text_names_the_search_and_each_step(seven):
    clock = Clock({100 * i + 7: 10 * i for i in range(7)})
    with ConsumeQueue.open(seven, 80) as q:
        r = q.offset_by_time(25, clock, broker="4", last_modified=[100, 100, 100])
        lower = q.offset_by_time(25, clock)
    lines = str(r).split("\n")
    assert lines[0] == (f"offset_by_time(25, nearest, broker 4) -> {r.offset} (raw {r.raw_offset}): {r.outcome} "
                        f"({r.outcome_reason}); {r.probes} CommitLog reads, {r.file_probes} to choose {r.file}")
    assert lines[1:] == [f"  {s.phase:<10} unit {s.queue_offset:>12}  phy {s.commitlog_offset:>14}  "
                         f"store time {s.store_time}" for s in r.steps] and len(r.steps) >= 1
    assert str(lower).startswith("offset_by_time(25, lower, broker 5) -> 6 ")


def test_raw_units_default_to_every_unit_and_keep_to_the_range(seven):
    truth = struct_units(seven)
    with ConsumeQueue.open(seven, 80) as q:
        every = q.raw_units()
        assert [tuple(int(v) for v in u) for u in every] == [truth[i] for i in range(10)]
        assert [int(u["commitlog_offset"]) for u in q.raw_units(None, 5)] == [truth[i][0] for i in range(5)]
        assert [int(u["commitlog_offset"]) for u in q.raw_units(6)] == [truth[i][0] for i in range(6, 10)]
        assert len(q.raw_units(5, 5)) == 0 and len(q.raw_units(7, 4)) == 0


def test_an_empty_range_of_a_queue_with_a_gap_is_empty(tmp_path):
    put_units(tmp_path, 2, [(100 * i, 50, 0) for i in range(6)])
    (tmp_path / f"{40:020d}").unlink()
    with ConsumeQueue.open(tmp_path, 40, strict=False) as q:
        assert len(q.raw_units(1, 1)) == 0
        with pytest.raises(CorruptIndexError):
            q.raw_units(0, 6)


def test_writer_create_wants_a_folder_without_files(tmp_path):
    (tmp_path / "sub").mkdir()
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=40) as w:   # a subfolder is no file
        assert (w.min_offset, w.max_offset, w.max_physic_offset) == (0, 0, -1)
        r = w.put(0, 1, 0, 0)
        assert (r.status, r.queue_offset, r.blank_units, r.created_file) == ("written", 0, 0, tmp_path / f"{0:020d}")
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "junk").write_bytes(b"")
    with pytest.raises(FileExistsError):
        ConsumeQueueWriter.create(tmp_path / "q", mapped_file_size=40)


def test_writer_open_refuses_a_queue_whose_end_marker_is_not_zero(tmp_path):
    put_units(tmp_path, 4, [(0, 50, 0), (100, 50, 0)])
    patch_bytes(tmp_path / f"{0:020d}", 2 * UNIT + 16, struct.pack(">i", 9))   # tags_code of unit 2
    with pytest.raises(FormatError, match="not a zero end marker"):
        ConsumeQueueWriter.open(tmp_path, mapped_file_size=80)


@pytest.mark.parametrize("offset, size, cq", [
    (0, 10, -1), (0, 10, (2**63 - 1) // UNIT + 1), (2**63 - 10, 11, 0), (2**63 - 1, 1, 0)])
def test_writer_put_refuses_what_a_java_long_cannot_hold(tmp_path, offset, size, cq):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=40) as w, pytest.raises(ValueError):
        w.put(offset, size, 0, cq)
    assert list(tmp_path.iterdir()) == []


def test_writer_put_takes_a_message_ending_at_long_max(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=40) as w:
        r = w.put(1000, 50, 0, 0)
        assert r.status == "written" and type(r.queue_offset) is int and r.queue_offset == 0
        r = w.put(2**63 - 101, 100, 0, 1)                # ends at Long.MAX_VALUE
        assert r.written and type(r.queue_offset) is int and r.queue_offset == 1
    assert struct_units(tmp_path)[1] == (2**63 - 101, 100, 0)


def test_a_duplicate_logical_put_still_creates_the_file_it_asked_for(tmp_path):
    """getLastMappedFile(expectLogicOffset) runs before the order check: a full last file rolls
    over to a new one even when the unit is then refused as already written."""
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=40) as w:
        w.put_many([0, 100], [50, 50], [0, 0])
        r = w.put(500, 50, 0, 1)
        assert (r.status, r.queue_offset, r.blank_units, r.written) == ("duplicate-logical", None, 0, False)
        assert r.created_file == tmp_path / f"{40:020d}" and r.created_file.stat().st_size == 40
        r = w.put(600, 50, 0, 1)                          # the new file exists now
        assert (r.status, r.queue_offset, r.blank_units, r.created_file) == ("duplicate-logical", None, 0, None)


# ------------------------------------------------------------------ listing, ends, loading


def test_a_badly_named_file_is_ignored_and_the_listing_goes_on(tmp_path):
    put_units(tmp_path, 2, [(100 * i, 50, 0) for i in range(4)])
    bad = tmp_path / f"{0:020d}.bak"                     # sorts between the two files
    bad.write_bytes(b"\0" * 40)
    with ConsumeQueue.open(tmp_path, 40, strict=False) as q:
        assert q.ignored_files == (bad,)
        assert [f.path.name for f in q.files] == [f"{0:020d}", f"{40:020d}"] and q.max_offset == 4


def test_a_file_after_a_misaligned_one_overlaps_it(tmp_path):
    put_units(tmp_path, 5, [(100 * i, 50, 0) for i in range(3)])
    (tmp_path / f"{0:020d}").rename(tmp_path / f"{50:020d}")
    (tmp_path / f"{100:020d}").write_bytes(b"\0" * 100)
    with ConsumeQueue.open(tmp_path, 100, strict=False) as q:
        got = [(type(p).__name__, Path(p.path).name, p.reason) for p in q.problems()]
    assert got[:2] == [
        ("FormatError", f"{50:020d}", "name 50 is not a multiple of the mapped file size 100"),
        ("CorruptIndexError", f"{100:020d}", f"starts at 100 but the previous file {50:020d} ends at 150: "
                                              "overlaps the previous file (MappedFileQueue.checkSelf)")]


def test_a_closed_queue_gives_no_units(seven):
    q = ConsumeQueue.open(seven, 80)
    assert len(q.units) == 7
    q.close()
    with pytest.raises(ValueError, match="consume queue is closed"):
        _ = q.units


def test_the_file_starting_at_the_end_is_kept_and_later_ones_are_dirty(tmp_path):
    """recover() ends the queue at a file boundary: truncateDirtyFiles keeps the file starting
    there (fileFromOffset <= offset < its tail) and deletes the ones after it."""
    put_units(tmp_path, 2, [(0, 50, 0), (100, 50, 0)])
    for k in (1, 2):
        (tmp_path / f"{40 * k:020d}").write_bytes(b"\0" * 40)
    with ConsumeQueue.open(tmp_path, 40) as q:
        assert [f.path.name for f in q.files] == [f"{0:020d}", f"{40:020d}"]
        assert [f.path.name for f in q.dirty_files] == [f"{80:020d}"]
        assert (q.min_offset, q.max_offset, [len(v) for _, v in q.segments()]) == (0, 2, [2, 0])


def test_units_beyond_the_mapped_size_of_a_longer_file_are_not_read(tmp_path):
    """strict=False, four files of two units where the first holds three: recover() assumes the
    first file full at two units; the third is no unit of the queue."""
    put_units(tmp_path, 2, [(100 * i, 50, 0) for i in range(8)])
    first = tmp_path / f"{0:020d}"
    first.write_bytes(first.read_bytes() + struct.pack(">qiq", 999, 50, 0))
    with ConsumeQueue.open(tmp_path, 40, strict=False) as q:
        assert [int(u["commitlog_offset"]) for u in q.raw_units()] == [100 * i for i in range(8)]


def test_a_unit_past_a_short_file_lies_in_a_gap(tmp_path):
    put_units(tmp_path, 3, [1000 + 100 * i for i in range(10)] and [(1000 + 100 * i, 50, 0) for i in range(10)])
    os.truncate(tmp_path / f"{0:020d}", 40)
    with ConsumeQueue.open(tmp_path, 60, strict=False) as q:
        assert q.unit(1) == (1100, 50, 0)
        with pytest.raises(CorruptIndexError, match="queue offset 2 lies in a gap"):
            q.unit(2)


def test_a_queue_of_one_zero_filled_file_is_empty(tmp_path):
    (tmp_path / f"{0:020d}").write_bytes(b"\0" * 40)
    with ConsumeQueue.open(tmp_path, 40) as q:
        assert (q.first_offset, q.min_offset, q.max_offset, q.count) == (0, 0, 0, 0)


def test_a_first_file_of_blank_fillers_only_puts_the_min_offset_after_it(tmp_path):
    """Made by hand (the broker fills only up to its first unit): file 0 holds two blank units,
    file 40 the first real ones. min_offset skips every leading blank."""
    blank = struct.pack(">qiq", 0, INT_MAX, 0)
    (tmp_path / f"{0:020d}").write_bytes(blank * 2)
    (tmp_path / f"{40:020d}").write_bytes(struct.pack(">qiq", 100, 50, 0) + b"\0" * 20)
    with ConsumeQueue.open(tmp_path, 40) as q:
        assert (q.first_offset, q.min_offset, q.max_offset) == (0, 2, 3)


def two_cq_files(folder):
    put_units(folder, 2, [(100 * i, 50, 0) for i in range(4)])
    return lambda: ConsumeQueue.open(folder, 40), "rmqlab.formats.consumequeue"


def two_ext_files(folder):
    from rmqlab.formats.consumequeue_ext import ConsumeQueueExt, ConsumeQueueExtWriter

    with ConsumeQueueExtWriter.create(folder, mapped_file_size=84) as w:
        w.put_many([7] * 6, list(range(6)))
    assert len(list(folder.iterdir())) >= 2
    return lambda: ConsumeQueueExt.open(folder), "rmqlab.formats.consumequeue_ext"


def two_bcq_files(folder):
    from rmqlab.formats.batchconsumequeue import BatchConsumeQueue, BatchConsumeQueueWriter

    with BatchConsumeQueueWriter.create(folder, mapped_file_size=92) as w:
        for i in range(3):
            w.put(100 * (i + 1), 10, 0, i, i, 1)
    assert len(list(folder.iterdir())) == 2
    return lambda: BatchConsumeQueue.open(folder, 92), "rmqlab.formats.batchconsumequeue"


@pytest.mark.parametrize("make", [two_cq_files, two_ext_files, two_bcq_files])
def test_a_failed_map_raises_its_error_and_closes_what_was_opened(tmp_path, monkeypatch, make):
    """The second file's map fails (here by a stand-in for mmap): the reader raises that error,
    with every file it opened closed again (the first file's map had a view of its units)."""
    import mmap
    import sys

    opener, module = make(tmp_path)
    opened, real_mmap = [], mmap.mmap

    def tracking_open(*args, **kwargs):
        fh = open(*args, **kwargs)
        opened.append(fh)
        return fh

    def failing_mmap(*args, **kwargs):
        if len(opened) > 1:
            raise OSError("no more maps")
        return real_mmap(*args, **kwargs)

    monkeypatch.setattr(sys.modules[module], "open", tracking_open, raising=False)
    monkeypatch.setattr(mmap, "mmap", failing_mmap)
    with pytest.raises(OSError, match="no more maps"):
        opener()
    assert len(opened) == 2 and all(fh.closed for fh in opened)


# ------------------------------------------------------------------ put_many, unit by unit


def test_put_many_takes_columns_and_scalars(tmp_path):
    with ConsumeQueueWriter.create(tmp_path / "a", mapped_file_size=40) as w:
        w.put_many(np.array([[0], [100], [200]]), np.array([[50], [50], [50]]), np.array([[1], [2], [3]]),
                   np.array([[0], [1], [2]]))
    with ConsumeQueueWriter.create(tmp_path / "b", mapped_file_size=40) as w:
        w.put_many(0, 50, 1, 0)
        w.put_many(100, 50, 2)
        w.put_many([200], [50], [3])
        assert type(w.max_offset) is int and w.max_offset == 3
    assert struct_units(tmp_path / "a") == struct_units(tmp_path / "b")
    assert [struct_units(tmp_path / "a")[i] for i in range(3)] == [(0, 50, 1), (100, 50, 2), (200, 50, 3)]


def test_put_many_continues_a_reopened_queue_by_default(tmp_path):
    put_units(tmp_path, 2, [(0, 50, 0), (100, 50, 0), (200, 50, 0)])
    with ConsumeQueueWriter.open(tmp_path, mapped_file_size=40) as w:
        assert w.put_many([300, 400], [50, 50], [0, 0]).tolist() == [0, 0]
        assert w.max_offset == 5
    assert [struct_units(tmp_path)[i][0] for i in range(5)] == [0, 100, 200, 300, 400]


@pytest.mark.parametrize("offsets, sizes, cq", [
    ([-1, 100], [50, 50], [0, 1]), ([0, 100], [0, 50], [0, 1]), ([0, 100], [50, INT_MAX + 1], [0, 1]),
    ([0, 100], [50, 50], [0, -1])])
def test_put_many_refuses_units_the_broker_would_read_as_the_end(tmp_path, offsets, sizes, cq):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=40) as w, pytest.raises(ValueError):
        w.put_many(offsets, sizes, [0, 0], cq)
    assert list(tmp_path.iterdir()) == []


def test_put_many_statuses_are_those_of_put_one_by_one(tmp_path):
    """Hand-traced with putMessagePositionInfo's rules: (0, 50) and (100, 50) are written; (120,
    10) ends at 130, inside what is written (maxPhysicOffset 150): nothing written; (200, 10)
    expects queue offset 3 where the write position is 2: written there, "[BUG]logic queue
    order maybe wrong"; (1100, 100) ends at 1200 < 1500, after (1000, 500)."""
    units = [(0, 50, 0), (100, 50, 0), (120, 10, 0), (200, 10, 0), (1000, 500, 0), (1100, 100, 0), (1600, 10, 0)]
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=400) as w:
        status = w.put_many([u[0] for u in units], [u[1] for u in units], [u[2] for u in units], range(7))
        assert [STATUS[s] for s in status] == ["written", "written", "duplicate-physical", "out-of-order",
                                               "out-of-order", "duplicate-physical", "out-of-order"]
        assert w.put(1700, 10, INT_MAX, 6).queue_offset == 5 and w.put(2000, 10, 0, 9).queue_offset == 6
    truth = struct_units(tmp_path)
    assert [truth[i][:2] for i in range(7)] == [(0, 50), (100, 50), (200, 10), (1000, 500), (1600, 10),
                                                (1700, 10), (2000, 10)]


def test_put_max_size_is_a_java_int(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=40) as w:
        assert w.put_many([0, 100], [INT_MAX, 50], [0, 0]).tolist() == [0, 2]   # ends at 2^31-1 > 150
    assert struct_units(tmp_path)[0] == (0, INT_MAX, 0)


def test_put_many_runs_stop_at_a_message_that_ends_at_or_before_the_last_end(tmp_path):
    """Hand-traced with putMessagePositionInfo's rule (offset + size <= maxPhysicOffset: already
    built, nothing written): (0, 100) and (1000, 100) are written (maxPhysicOffset 1100); (1090,
    10) ends at 1100 and (1050, 10) at 1060: both already built, queue offset 2 stays free;
    (2000, 10) is written there. A run written in bulk must stop before each of the two."""
    units = [(0, 100, 0), (1000, 100, 1), (1090, 10, 2), (1050, 10, 2), (2000, 10, 2)]
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=400) as w:
        status = w.put_many([u[0] for u in units], [u[1] for u in units], [7] * 5, [u[2] for u in units])
        assert [STATUS[s] for s in status] == ["written", "written", "duplicate-physical", "duplicate-physical",
                                               "written"]
        assert (w.max_offset, w.max_physic_offset) == (3, 2010)
    truth = struct_units(tmp_path)
    assert [truth[i] for i in range(4)] == [(0, 100, 7), (1000, 100, 7), (2000, 10, 7), (0, 0, 0)]


def test_a_closed_writer_refuses_puts(tmp_path):
    w = ConsumeQueueWriter.create(tmp_path, mapped_file_size=40)
    w.put(0, 50, 1, 0)
    w.close()
    w.close()                                          # a second close does nothing
    for put in (lambda: w.put(100, 50, 1, 1), lambda: w.put_many([100], [50], [1])):
        with pytest.raises(ValueError, match="closed"):
            put()
    assert [struct_units(tmp_path)[i] for i in range(2)] == [(0, 50, 1), (0, 0, 0)]


def test_the_file_size_is_rounded_up_to_whole_units():
    """MessageStoreConfig.getMappedFileSizeConsumeQueue: ceil(size / 20.0) * 20."""
    from rmqlab.formats.consumequeue import mapped_file_size_for

    assert [mapped_file_size_for(s) for s in (1, 19, 20, 21, INT_MAX - 7)] == [20, 20, 20, 40, INT_MAX - 7]
    for bad in (0, -20, INT_MAX - 6):                  # INT_MAX - 6 rounds up past Integer.MAX_VALUE
        with pytest.raises(ValueError):
            mapped_file_size_for(bad)


@pytest.mark.parametrize("broker", ["4", "5", "5.0"])
def test_an_empty_queue_has_no_file_to_search(tmp_path, broker):
    """copyMappedFiles gives nothing: getOffsetInQueueByTime answers 0 without a read."""
    with ConsumeQueue.open(tmp_path, 40) as q:
        r = q.offset_by_time(5, Clock({}), broker=broker)
    assert (r.offset, r.raw_offset, r.outcome, r.file, r.probes, r.steps) == (0, 0, "no-file", None, 0, [])


def test_a_file_whose_stop_time_is_unreadable_keeps_javas_minus_one(tmp_path):
    """DefaultMappedFile's stopTimestamp starts at -1 and is set only from a store time > 0: with
    the first file's last message unreadable, LOWER's `stopTimestamp >= timestamp` holds for a
    time of -1, so that file is searched (MappedFileQueue.getConsumeQueueMappedFileByTime)."""
    files = write_queue(tmp_path, 2, 0, [1000, 1100, 1200, 1300], False)
    names = [tmp_path / f"{f.start:020d}" for f in files]
    clock = Clock({1000: 5, 1200: 7, 1300: 8})          # 1100, the first file's last unit: unreadable
    with ConsumeQueue.open(tmp_path, 40) as q:
        assert q.offset_by_time(-1, clock).file == names[0]
        assert q.offset_by_time(6, clock).file == names[1]


def test_a_file_whose_start_time_is_unreadable_keeps_javas_minus_one(tmp_path):
    """startTimestamp starts at -1 too, set only from a store time > 0: with the second file's
    first message unreadable, UPPER's `startTimestamp <= timestamp` holds for times of -1 and 0
    there and not for -2, so those pick that file and -2 none (the model of
    getConsumeQueueMappedFileByTime agrees)."""
    files = write_queue(tmp_path, 2, 0, [1000, 1100, 1200, 1300], False)
    names = [tmp_path / f"{f.start:020d}" for f in files]
    times = {1000: 5, 1100: 6, 1300: 8}                   # 1200, the second file's first unit: unreadable
    with ConsumeQueue.open(tmp_path, 40) as q:
        for ts, want_file in ((0, 1), (-1, 1), (-2, None), (4, 1)):
            want = model_offset_by_time(files, 40, times, ts, lower=False, broker="5", min_phy=0, min_logic=0,
                                        max_offset=4, last_modified=None, commitlog_max=1400)
            assert want[3] == want_file
            r = q.offset_by_time(ts, Clock(times), boundary="upper")
            assert r.file == (None if want_file is None else names[want_file])


def test_a_search_that_skips_every_unit_answers_javas_unset_right_index(tmp_path):
    """min_phy_offset past every message: binarySearchInQueueByTime skips each unit it meets
    (phy < minPhysicOffset), so rightOffset keeps its -1 and LOWER answers (fileFromOffset + -1)
    / 20 in Java's long division: unit 1 for the second file (starting at byte 40), as the model
    computes. The offsets are Java longs: ints here, in every outcome."""
    files = write_queue(tmp_path, 2, 0, [1000, 1100, 1200, 1300], False)
    times = {1000: 1, 1100: 2, 1200: 3, 1300: 5}
    want = model_offset_by_time(files, 40, times, 4, lower=True, broker="5", min_phy=2000, min_logic=0,
                                max_offset=4, last_modified=None, commitlog_max=1400)
    assert want[:4] == (1, 1, "between", 1)
    with ConsumeQueue.open(tmp_path, 40) as q:
        r = q.offset_by_time(4, Clock(times), min_phy_offset=2000)
        assert (r.offset, r.raw_offset, r.outcome, r.file) == (1, 1, "between", tmp_path / f"{40:020d}")
        for ts, boundary, outcome in ((9, "lower", "after-last"), (9, "upper", "after-last"),
                                      (0, "lower", "before-first"),
                                      (3, "lower", "exact"), (4, "upper", "between")):
            r = q.offset_by_time(ts, Clock(times), boundary=boundary)
            assert r.outcome == outcome and type(r.raw_offset) is int and type(r.offset) is int, (ts, boundary)


def test_raw_units_of_one_file_are_a_view_of_its_map(tmp_path):
    """Two units a file: a range inside one file, even one starting exactly where the file
    before ends, is a view of the map (no copy); a range over two files is a copy. Values
    against the bytes read with struct."""
    write_queue(tmp_path, 2, 0, [1000, 1100, 1200, 1300, 1400], False)
    truth = struct_units(tmp_path)
    with ConsumeQueue.open(tmp_path, 40) as q:
        for start, stop, view in ((0, 2, True), (2, 4, True), (3, 4, True), (4, 5, True), (1, 3, False), (0, 5, False)):
            got = q.raw_units(start, stop)
            assert [tuple(int(u[f]) for f in ("commitlog_offset", "size", "tags_code")) for u in got] == [
                truth[i] for i in range(start, stop)]
            assert got.flags.owndata is not view, (start, stop)


def test_subscription_tags_split_like_filter_api():
    """FilterAPI.buildSubscriptionData: null, "" and "*" subscribe to all (None here); otherwise
    the expression splits on "||", each tag trimmed, empty ones dropped. An iterable names the
    tags as they are."""
    from rmqlab.formats.consumequeue import subscription_tags

    assert [subscription_tags(e) for e in (None, "", "*")] == [None, None, None]
    assert subscription_tags(" TagA ||TagB|| ||*") == {"TagA", "TagB", "*"}
    assert subscription_tags("Tag A||B") == {"Tag A", "B"}
    assert subscription_tags(["TagA", " B "]) == {"TagA", " B "} and subscription_tags([]) == set()
