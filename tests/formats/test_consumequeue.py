"""ConsumeQueue: writer, reader, tags codes, search by time and bad input, against models
written here from the Java semantics (ConsumeQueue.putMessagePositionInfo / fillPreBlank,
MappedFileQueue.getLastMappedFile, recover(), binarySearchInQueueByTime, String.hashCode).

Nothing in the models below imports rmqlab: expected bytes are packed with `struct`, hashes
come from UTF-16 code units, and the time search is checked against linear scans.
"""
from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, needs_real_data

from rmqlab.errors import CorruptIndexError, FormatError, GeometryError, TruncatedFileError
from rmqlab.formats.consumequeue import (
    DEFAULT_MAPPED_FILE_SIZE,
    STATUS_NAMES,
    UNIT,
    ConsumeQueue,
    ConsumeQueueWriter,
    delay_level_to_queue_id,
    mapped_file_size_for,
    read_queue_info,
    subscription_codes,
)
from rmqlab.rules.dispatch import DELAY_LEVEL_TABLE, SCHEDULE_TOPIC, message_tags_code, tags_code, tags_codes

INT_MAX = 2**31 - 1
BLANK = struct.pack(">qiq", 0, INT_MAX, 0)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow])
REAL_COMMITLOG = (REAL_DATA / "rocketmq"
                  / "store-4e25b979" / "commitlog" / "00000000000000000000")


# ----------------------------------------------------------------------- independent models


def ref_java_hash(s: str) -> int:
    """String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    for (u,) in struct.iter_unpack("<H", s.encode("utf-16-le", "surrogatepass")):
        h = (31 * h + u) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def ref_tags_code(s):
    return 0 if not s else ref_java_hash(s)  # int -> long: Python ints are already sign-extended


def ref_int_value(code: int) -> int:
    """Java Long.intValue(): the low 32 bits, signed."""
    low = code & 0xFFFFFFFF
    return low - 2**32 if low >= 2**31 else low


def unit_bytes(off, size, code) -> bytes:
    return struct.pack(">qiq", off, size, code)


def expected_files(first_queue_offset: int, units: list[tuple[int, int, int]], unit_count: int):
    """name -> bytes of a queue whose first put was at `first_queue_offset` and whose units then
    continue consecutively: fillPreBlank before it in the first file, files of `unit_count` units."""
    fsize = unit_count * 20
    first_file = first_queue_offset * 20 - (first_queue_offset * 20) % fsize
    logical = bytearray(BLANK * ((first_queue_offset * 20 - first_file) // 20))
    for u in units:
        logical += unit_bytes(*u)
    out = {}
    for start in range(0, len(logical), fsize):
        out[f"{first_file + start:020d}"] = bytes(logical[start:start + fsize]).ljust(fsize, b"\0")
    return out


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def snapshot(folder: Path):
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.iterdir())}


units_st = st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(1, 5000), min_size=n, max_size=n),        # gaps between messages
    st.lists(st.integers(1, 4000), min_size=n, max_size=n),        # sizes
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n)))  # tags codes


def make_units(gaps, sizes, codes, base=0):
    out, pos = [], base
    for g, s, c in zip(gaps, sizes, codes):
        pos += g
        out.append((pos, s, c))
        pos += s
    return out


# ----------------------------------------------------------------------------- layout, tags


def test_unit_layout_is_the_java_one():
    assert UNIT.size == 20
    assert [(f.name, f.offset, f.size) for f in UNIT.fields] == [
        ("commitlog_offset", 0, 8), ("size", 8, 4), ("tags_code", 12, 8)]
    assert UNIT.pack(1, 2, -3) == struct.pack(">qiq", 1, 2, -3)
    assert DEFAULT_MAPPED_FILE_SIZE == 6_000_000
    assert mapped_file_size_for(6_000_000) == 6_000_000 and mapped_file_size_for(21) == 40


def test_tags_code_known_values():
    assert tags_code(None) == 0 and tags_code("") == 0
    assert tags_code("TagA") == ref_java_hash("TagA") == 2598919
    assert tags_code("polygenelubricants") == -2**31        # Integer.MIN_VALUE, sign-extended
    assert tags_code("Aa") == tags_code("BB")                # a real collision


@settings(max_examples=150, **SETTINGS)
@given(st.lists(st.one_of(st.none(), st.text(max_size=12),
                          st.text(alphabet=st.characters(min_codepoint=0x1F600, max_codepoint=0x1F64F),
                                  max_size=3)), max_size=40))
def test_tags_codes_equal_the_reference_hash(tags):
    want = [ref_tags_code(t) for t in tags]
    assert tags_codes(tags).tolist() == want
    assert [tags_code(t) for t in tags] == want
    assert tags_codes(np.array(tags, dtype=object)).tolist() == want
    import pyarrow as pa

    assert tags_codes(pa.array(tags, type=pa.string())).tolist() == want
    fixed = np.array([t or "" for t in tags], dtype=str)   # NumPy <U drops trailing NULs itself
    assert tags_codes(fixed).tolist() == [ref_tags_code(str(t)) for t in fixed]


def test_tags_codes_pandas_with_nulls():
    import pandas as pd

    s = pd.Series(["TagA", None, "Aa"])
    assert tags_codes(s).tolist() == [ref_java_hash("TagA"), 0, ref_java_hash("Aa")]
    assert tags_codes(s).dtype == np.int64


def test_delay_level_table_is_the_default():
    seconds = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
    assert DELAY_LEVEL_TABLE == {i + 1: s * 1000 for i, s in enumerate(seconds)}
    assert delay_level_to_queue_id(3) == 2


@pytest.mark.parametrize("level", [-1, 0, 1, 2, 17, 18, 19, 1000])
def test_delayed_message_tags_code(level):
    store = 1_718_000_000_000
    seconds = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
    want = ref_java_hash("TagA") if level <= 0 else store + 1000 * seconds[min(level, 18) - 1]
    assert message_tags_code(SCHEDULE_TOPIC, "TagA", str(level), store) == want
    # only SCHEDULE_TOPIC_XXXX messages get the delivery time; absent DELAY keeps the hash
    assert message_tags_code("TopicTest", "TagA", str(level), store) == ref_java_hash("TagA")
    assert message_tags_code(SCHEDULE_TOPIC, None, None, store) == 0


# --------------------------------------------------------------------------- writer, reader


@settings(max_examples=60, **SETTINGS)
@given(units_st, st.integers(1, 7), st.integers(0, 40), st.booleans())
def test_write_then_read_back(tmp_path_factory, data, per_file, first_cq, bulk):
    folder = tmp_path_factory.mktemp("cq") / "TopicTest" / "2"
    units = make_units(*data)
    fsize = per_file * 20
    with ConsumeQueueWriter.create(folder, mapped_file_size=fsize) as w:
        if bulk:
            st_codes = w.put_many([u[0] for u in units], [u[1] for u in units], [u[2] for u in units],
                                  range(first_cq, first_cq + len(units)))
            assert st_codes.tolist() == [0] * len(units)
        else:
            for i, u in enumerate(units):
                r = w.put(*u, first_cq + i)
                assert (r.status, r.queue_offset) == ("written", first_cq + i)
        assert w.max_offset == first_cq + len(units)
    assert folder_bytes(folder) == expected_files(first_cq, units, per_file)
    for q in (ConsumeQueue.open(folder, fsize), ConsumeQueue.read(folder, fsize)):
        with q:
            assert (q.topic, q.queue_id) == ("TopicTest", 2)
            assert q.min_offset == first_cq and q.max_offset == first_cq + len(units)
            assert q.first_offset == first_cq - first_cq % per_file
            assert q.count == len(units) == len(q)
            assert [tuple(map(int, u)) for u in q.units] == units
            assert q.unit(first_cq + len(units) - 1) == units[-1]
            df = q.to_frame()
            assert df["queue_offset"].tolist() == list(range(first_cq, first_cq + len(units)))
            assert list(df.itertuples(index=False, name=None)) == [
                (first_cq + i, *u) for i, u in enumerate(units)]
            assert q.problems() == []
            q.check(commitlog_max_offset=units[-1][0] + units[-1][1])
    info = read_queue_info(folder, fsize)
    assert (info.min_offset, info.max_offset, info.count) == (first_cq, first_cq + len(units), len(units))


@settings(max_examples=60, **SETTINGS)
@given(units_st, st.integers(1, 7), st.integers(0, 40), st.integers(-50, 50), st.data())
def test_max_message_end_says_where_the_commitlog_end_check_flags(tmp_path_factory, data, per_file, first_cq,
                                                                   shift, draw):
    """problems(commitlog_max_offset) finds a message ending past the CommitLog's end exactly
    when max_message_end is past it: the largest offset + size of the real units, brute-forced
    here from the units written (one of them, maybe, made larger than the rest)."""
    folder = tmp_path_factory.mktemp("cq") / "TopicTest" / "2"
    units = make_units(*data)
    k = draw.draw(st.integers(0, len(units) - 1))
    units[k] = (units[k][0], units[k][1] + draw.draw(st.integers(0, 3)), units[k][2])
    with ConsumeQueueWriter.create(folder, mapped_file_size=per_file * 20) as w:
        w.put_many([u[0] for u in units], [u[1] for u in units], [u[2] for u in units],
                   range(first_cq, first_cq + len(units)))
    want = max(off + size for off, size, _ in units)
    with ConsumeQueue.open(folder, per_file * 20) as q:
        assert q.max_message_end() == want
        commitlog_end = want + shift
        flagged = [e for e in q.problems(commitlog_end) if "past the CommitLog's max offset" in str(e)]
        assert bool(flagged) == (want > commitlog_end)


def test_roll_over_exactly_at_the_file_size(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=60) as w:   # 3 units a file
        for i in range(3):
            assert w.put(100 * i, 50, 7, i).created_file == (tmp_path / f"{0:020d}" if i == 0 else None)
        assert sorted(os.listdir(tmp_path)) == [f"{0:020d}"]           # full, not yet rolled
        r = w.put(300, 50, 7, 3)
        assert r.created_file == tmp_path / f"{60:020d}" and r.queue_offset == 3
    assert folder_bytes(tmp_path) == {
        f"{0:020d}": b"".join(unit_bytes(100 * i, 50, 7) for i in range(3)),
        f"{60:020d}": unit_bytes(300, 50, 7) + b"\0" * 40}
    with ConsumeQueue.open(tmp_path, 60) as q:
        assert (q.max_offset, [f.path.name for f in q.files]) == (4, [f"{0:020d}", f"{60:020d}"])


def test_a_first_put_after_offset_zero_fills_blank_units(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=100) as w:   # 5 units a file
        r = w.put(1000, 10, 5, 7)
        assert (r.status, r.queue_offset, r.blank_units) == ("written", 7, 2)
        assert w.min_offset == 7
    data = (tmp_path / f"{100:020d}").read_bytes()
    assert data == BLANK + BLANK + unit_bytes(1000, 10, 5) + b"\0" * 40
    assert BLANK == b"\0" * 8 + b"\x7f\xff\xff\xff" + b"\0" * 8
    with ConsumeQueue.open(tmp_path, 100) as q:
        assert (q.first_offset, q.min_offset, q.max_offset, q.blank_units) == (5, 7, 8, 2)
        assert q.unit(5) == (0, INT_MAX, 0)                      # on disk, before min_offset
        assert len(q.units) == 1 and q.problems() == []


def test_a_first_put_on_a_file_boundary_needs_no_blanks(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=100) as w:
        assert w.put(1000, 10, 5, 10).blank_units == 0
    assert os.listdir(tmp_path) == [f"{200:020d}"]


@pytest.mark.parametrize("field,bad,error", [
    ("tags_codes", np.array([2**63], np.uint64), ValueError),     # a Java long cannot hold it: refused, not -1
    ("tags_codes", np.array([1.5]), TypeError),                   # refused, not truncated to 1
    ("sizes", np.array([20.7]), TypeError),
    ("commitlog_offsets", np.array([1.0], dtype=object), TypeError),
    ("queue_offsets", [2**64], ValueError),
])
def test_put_many_refuses_what_put_refuses(tmp_path, field, bad, error):
    units = {"commitlog_offsets": [0], "sizes": [20], "tags_codes": [7], "queue_offsets": [0]}
    units[field] = bad
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=100) as w:
        with pytest.raises(error, match=rf"^{field}( must|:|=)"):    # the column named first
            w.put_many(units["commitlog_offsets"], units["sizes"], units["tags_codes"], units["queue_offsets"])
        with pytest.raises((TypeError, ValueError)):     # the one-unit path refuses the same value
            w.put(*(int(v[0]) if k != field else v.tolist()[0] if hasattr(v, "tolist") else v[0]
                    for k, v in units.items()))
        assert w.max_offset == 0                          # nothing was written
    # a 2-D array is flattened, as before
    with ConsumeQueueWriter.create(tmp_path / "flat", mapped_file_size=100) as w:
        w.put_many(np.array([[0, 20]]), np.array([[20, 20]]), np.array([[7, 8]]))
        assert w.max_offset == 2


def test_gaps_and_duplicates_behave_like_the_broker(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=100) as w:
        assert w.put(0, 10, 1, 0).status == "written"
        before = folder_bytes(tmp_path)
        # offset + size <= maxPhysicOffset: nothing written
        assert w.put(0, 5, 1, 1).status == "duplicate-physical"
        # queue offset 0 is never checked: the unit lands at the write position (1)
        r = w.put(50, 10, 1, 0)
        assert (r.status, r.queue_offset) == ("out-of-order", 1)
        # expected offset behind the write position: nothing written
        assert w.put(70, 10, 1, 1).status == "duplicate-logical"
        # expected offset ahead: no fill, the unit lands at the write position ("[BUG]" log)
        r = w.put(90, 10, 1, 4)
        assert (r.status, r.queue_offset, r.blank_units) == ("out-of-order", 2, 0)
    after = folder_bytes(tmp_path)[f"{0:020d}"]
    assert before[f"{0:020d}"][:20] == after[:20]
    assert after == unit_bytes(0, 10, 1) + unit_bytes(50, 10, 1) + unit_bytes(90, 10, 1) + b"\0" * 40


@settings(max_examples=60, **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 300), st.integers(-5, 5),
                          st.integers(0, 25)), min_size=1, max_size=25), st.integers(1, 4))
def test_put_many_equals_put_one_at_a_time(tmp_path_factory, rows, per_file):
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    off, sz, codes, cq = (list(c) for c in zip(*rows))
    with ConsumeQueueWriter.create(a, mapped_file_size=per_file * 20) as wa:
        want = [STATUS_NAMES.index(wa.put(*r).status) for r in rows]
    with ConsumeQueueWriter.create(b, mapped_file_size=per_file * 20) as wb:
        got = wb.put_many(off, sz, codes, cq).tolist()
    assert got == want
    assert folder_bytes(a) == folder_bytes(b)


def test_put_many_defaults_to_consecutive_offsets_and_is_fast(tmp_path):
    n = 1_000_000
    off = np.arange(n, dtype=np.int64) * 200
    with ConsumeQueueWriter.create(tmp_path) as w:
        assert not w.put_many(off, np.full(n, 180), np.zeros(n, np.int64)).any()
        assert w.max_offset == n
    with ConsumeQueue.open(tmp_path) as q:
        assert [f.path.name for f in q.files] == [f"{0:020d}", f"{6_000_000:020d}", f"{12_000_000:020d}",
                                                  f"{18_000_000:020d}"]
        assert q.max_offset == n and int(q.units["commitlog_offset"][-1]) == 200 * (n - 1)
        assert q.problems() == []


def test_writer_open_continues_after_recover(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=60) as w:
        w.put_many([0, 100, 200, 300], [10] * 4, [1] * 4)
    with ConsumeQueueWriter.open(tmp_path, mapped_file_size=60) as w:
        assert (w.max_offset, w.max_physic_offset, w.min_offset) == (4, 310, 0)
        assert w.put(300, 10, 1, 4).status == "duplicate-physical"
        assert w.put(400, 10, 1, 4).queue_offset == 4
    with ConsumeQueue.open(tmp_path, 60) as q:
        assert q.units["commitlog_offset"].tolist() == [0, 100, 200, 300, 400]


def test_writer_open_refuses_data_after_the_end(tmp_path):
    with ConsumeQueueWriter.create(tmp_path, mapped_file_size=100) as w:
        w.put_many([0, 100], [10, 10], [1, 1])
    f = tmp_path / f"{0:020d}"
    with open(f, "r+b") as fh:
        fh.seek(60)
        fh.write(unit_bytes(500, 10, 1))                       # past the zero end marker at 40
    with pytest.raises(CorruptIndexError) as e:
        ConsumeQueueWriter.open(tmp_path, mapped_file_size=100)
    assert (e.value.path, e.value.offset, e.value.field) == (str(f), 60, "unit")


# ----------------------------------------------------------------------------- tag filtering


TAG_POOL = ["TagA", "TagB", "Aa", "BB", "订单", "😀", ""]


@settings(max_examples=60, **SETTINGS)
@given(st.lists(st.one_of(st.none(), st.sampled_from(TAG_POOL)), min_size=1, max_size=30),
       st.lists(st.sampled_from(TAG_POOL[:-1]), max_size=3), st.booleans())
def test_tag_filter_equals_a_python_filter(tmp_path_factory, tags, sub, star):
    folder = tmp_path_factory.mktemp("tags")
    codes = [ref_tags_code(t) for t in tags]
    codes.append((1 << 32) + ref_java_hash("TagA"))   # a delivery time whose low 32 bits hit TagA
    with ConsumeQueueWriter.create(folder, mapped_file_size=100) as w:
        w.put_many(np.arange(len(codes)) * 100, np.full(len(codes), 50), codes)
    expression = "*" if star else " || ".join(sub)
    with ConsumeQueue.open(folder, 100) as q:
        mask = q.tag_mask(expression)
        if star or not sub:
            want = [True] * len(codes)
        else:
            wanted = {ref_java_hash(s) for s in sub}
            want = [ref_int_value(c) in wanted for c in codes]
        assert mask.tolist() == want
        assert q.code_mask(ref_tags_code(tags[0])).tolist() == [c == ref_tags_code(tags[0]) for c in codes]
        assert q.tag_mask(sub).tolist() == [ref_int_value(c) in {ref_java_hash(s) for s in sub} for c in codes]


def test_subscription_expression_parsing():
    assert subscription_codes("") is None and subscription_codes("*") is None
    assert subscription_codes(" TagA ||TagB|| ") == {ref_java_hash("TagA"), ref_java_hash("TagB")}


# ------------------------------------------------------------------------- search by time


class Clock:
    """store_time_of for a queue: counts the CommitLog reads."""

    def __init__(self, times_by_offset: dict[int, int]):
        self.times = times_by_offset
        self.reads = 0

    def __call__(self, phys: np.ndarray) -> np.ndarray:
        assert isinstance(phys, np.ndarray) and phys.dtype == np.int64
        self.reads += len(phys)
        return np.array([self.times.get(int(p), -1) for p in phys], dtype=np.int64)


def build_timed_queue(folder: Path, times: list[int], per_file: int, first_cq: int) -> Clock:
    """A queue whose unit i (queue offset first_cq + i) points at CommitLog offset 1000 + 100 i,
    stored at times[i]; returns its clock (clock.folder is the queue folder)."""
    offsets = [1000 + 100 * i for i in range(len(times))]
    with ConsumeQueueWriter.create(folder, mapped_file_size=per_file * 20) as w:
        w.put_many(offsets, [60] * len(times), [0] * len(times),
                   range(first_cq, first_cq + len(times)))
    clock = Clock(dict(zip(offsets, times)))
    clock.folder = folder
    return clock


def linear_lower(times, base, ts):
    """First queue offset whose store time >= ts, else one past the last (a linear scan)."""
    return next((base + i for i, t in enumerate(times) if t >= ts), base + len(times))


def linear_upper(times, base, ts):
    """Last queue offset whose store time <= ts, else the first."""
    return next((base + i for i in range(len(times) - 1, -1, -1) if times[i] <= ts), base)


monotone_times = st.lists(st.integers(0, 4), min_size=1, max_size=40).map(
    lambda steps: list(np.cumsum([1000 + steps[0]] + steps[1:]).tolist()))


@settings(max_examples=120, **SETTINGS)
@given(monotone_times, st.integers(1, 6), st.integers(0, 12), st.data())
def test_offset_by_time_matches_a_linear_scan_on_monotone_times(tmp_path_factory, times, per_file,
                                                                 first_cq, data):
    clock = build_timed_queue(tmp_path_factory.mktemp("t"), times, per_file, first_cq)
    ts = data.draw(st.integers(times[0] - 3, times[-1] + 3), label="ts")
    with ConsumeQueue.open(clock.folder, per_file * 20) as q:
        lo = q.offset_by_time(ts, clock, boundary="lower")
        assert lo.offset == linear_lower(times, first_cq, ts)
        up = q.offset_by_time(ts, clock, boundary="upper")
        assert up.offset == linear_upper(times, first_cq, ts)
        for r in (lo, up):   # every CommitLog read is counted, and only those
            assert r.probes == sum(s.store_time is not None for s in r.steps)
        clock.reads = 0
        r = q.offset_by_time(ts, clock)
        assert clock.reads == r.probes - sum(1 for s in r.steps if s.store_time == -1 and s.commitlog_offset == 0)
        if len(set(times)) == len(times):  # strictly increasing: O(log n) reads in the file
            files = len(q.files)
            assert r.probes - r.file_probes <= 2 + int(np.ceil(np.log2(per_file + 1))) + 1
            assert r.file_probes <= 2 * files


@settings(max_examples=80, **SETTINGS)
@given(st.lists(st.integers(1000, 1010), min_size=1, max_size=30), st.integers(1, 6), st.integers(0, 7),
       st.integers(995, 1015))
def test_offset_by_time_on_non_monotone_times_returns_a_boundary(tmp_path_factory, times, per_file,
                                                                  first_cq, ts):
    """Unsorted store times: binary search still answers a boundary of the file it chose, which
    a linear scan of that file confirms (LOWER: the first of a run of equal times, or a unit newer
    than ts right after an older one; UPPER symmetrically)."""
    clock = build_timed_queue(tmp_path_factory.mktemp("n"), times, per_file, first_cq)
    t = {first_cq + i: v for i, v in enumerate(times)}
    with ConsumeQueue.open(clock.folder, per_file * 20) as q:
        for boundary in ("lower", "upper"):
            r = q.offset_by_time(ts, clock, boundary=boundary)
            assert r.offset == min(max(r.raw_offset, q.min_offset), q.max_offset)
            if r.outcome == "no-file":  # UPPER: every file's first unit is newer than ts
                assert boundary == "upper" and r.raw_offset == 0
                assert all(t[f.first_index] > ts for f in q.files if f.first_index in t)
                continue
            f = next(f for f in q.files if f.path == r.file)
            floor = max(f.first_index, q.min_offset)
            ceil = min(f.first_index + per_file, q.max_offset) - 1
            x = r.raw_offset
            candidates = set()
            for i in range(floor, ceil + 1):     # every boundary a linear scan finds
                if boundary == "lower" and ((t[i] == ts and (i == floor or t[i - 1] != ts)) or
                                            (t[i] > ts and (i == floor or t[i - 1] < ts))):
                    candidates.add(i)
                if boundary == "upper" and ((t[i] == ts and (i == ceil or t[i + 1] != ts)) or
                                            (t[i] < ts and (i == ceil or t[i + 1] > ts))):
                    candidates.add(i)
            if r.outcome == "after-last":
                assert t[ceil] < ts and x == (ceil + 1 if boundary == "lower" else ceil)
            elif r.outcome == "before-first":
                assert t[floor] > ts and x == (f.first_index if boundary == "lower" else 0)
            else:
                assert r.outcome in ("exact", "between") and x in candidates
                assert (t[x] == ts) == (r.outcome == "exact")


@settings(max_examples=80, **SETTINGS)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=30, unique=True).map(sorted),
       st.integers(0, 35), st.booleans())
def test_4x_search_returns_the_nearest_unit(tmp_path_factory, times, ts, ties):
    """4.x-5.1.0: one file (so mtime choice is moot); exact match or the nearer neighbour,
    ties to the older; no clamp in 4.x."""
    if ties:
        times = sorted(times + times[:3])
    clock = build_timed_queue(tmp_path_factory.mktemp("f"), times, 64, 0)
    with ConsumeQueue.open(clock.folder, 64 * 20) as q:
        for broker in ("4", "5.0"):
            r = q.offset_by_time(ts, clock, broker=broker)
            if ts in times:
                assert times[r.offset] == ts and r.outcome == "exact"
            else:
                older = [i for i, v in enumerate(times) if v < ts]
                newer = [i for i, v in enumerate(times) if v > ts]
                if not older:
                    want = newer[0]
                elif not newer:
                    want = older[-1]
                else:
                    lo, hi = older[-1], newer[0]
                    want = hi if abs(ts - times[lo]) > abs(ts - times[hi]) else lo
                assert r.offset == want


def test_4x_picks_the_file_by_modification_time(tmp_path):
    clock = build_timed_queue(tmp_path, [10, 20, 30, 40, 50, 60], 3, 0)
    with ConsumeQueue.open(tmp_path, 60) as q:
        # first file modified at or after the time is searched, whatever its store times
        assert q.offset_by_time(15, clock, broker="4", last_modified=[20, 100]).offset == 0  # tie: older
        assert q.offset_by_time(15, clock, broker="4", last_modified=[14, 100]).offset == 3
        # no file new enough: the last one
        assert q.offset_by_time(15, clock, broker="4", last_modified=[1, 2]).file == q.files[1].path


def test_time_search_corner_cases(tmp_path):
    clock = build_timed_queue(tmp_path, [100, 200, 200, 200, 300], 10, 4)   # 4 blank units first
    with ConsumeQueue.open(tmp_path, 200) as q:
        assert (q.min_offset, q.max_offset) == (4, 9)
        r = q.offset_by_time(50, clock, boundary="upper")
        assert (r.raw_offset, r.offset, r.outcome) == (0, 4, "before-first")   # UPPER returns 0
        r = q.offset_by_time(50, clock, boundary="lower")
        assert (r.raw_offset, r.offset) == (0, 4)                 # the file's start, clamped
        assert q.offset_by_time(200, clock, boundary="lower").offset == 5
        assert q.offset_by_time(200, clock, boundary="upper").offset == 7
        assert q.offset_by_time(999, clock, boundary="lower").offset == 9
        assert q.offset_by_time(999, clock, boundary="upper").offset == 8
        # an unreadable message (pickupStoreTimestamp -1) at the first probe of the search
        # (unit 6): the broker answers 0, which the store clamps to the min offset
        clock.times[1200] = -1
        r = q.offset_by_time(250, clock, boundary="lower")
        assert (r.outcome, r.raw_offset, r.offset) == ("unreadable", 0, 4)
        # units below the CommitLog's min offset are passed over without a read (unit 6), but
        # the walk back over equal times reads them anyway (as the Java code does)
        clock.times[1200] = 200
        r = q.offset_by_time(200, clock, boundary="lower", min_phy_offset=1300)
        assert (r.offset, r.outcome) == (5, "exact")
        # (the file's first unit is a blank: pickupStoreTimestamp(0, 2^31-1) answers -1)
        assert [(s.phase, s.queue_offset, s.store_time) for s in r.steps] == [
            ("file-start", 0, -1), ("last", 8, 300), ("first", 4, 100), ("search", 6, None),
            ("search", 7, 200), ("walk", 6, 200), ("walk", 5, 200), ("walk", 4, 100)]
        assert r.probes == 7 and r.file_probes == 1
        assert "7 CommitLog reads" in str(r)


def test_empty_queue_answers_zero(tmp_path):
    with ConsumeQueue.open(tmp_path) as q:
        r = q.offset_by_time(123, Clock({}))
        assert (r.offset, r.outcome, q.count) == (0, "no-file", 0)


# ------------------------------------------------------------------------------ bad input


def write_queue(folder: Path, n: int, per_file: int = 5) -> list[tuple[int, int, int]]:
    units = [(100 * i, 50, i) for i in range(n)]
    with ConsumeQueueWriter.create(folder, mapped_file_size=per_file * 20) as w:
        for i, u in enumerate(units):
            w.put(*u, i)
    return units


def patch(path: Path, offset: int, fmt: str, value: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(struct.pack(fmt, value))


def test_truncated_file(tmp_path):
    write_queue(tmp_path, 7)
    last = tmp_path / f"{100:020d}"
    os.truncate(last, 50)
    with pytest.raises(TruncatedFileError) as e:
        ConsumeQueue.open(tmp_path, 100)
    assert (e.value.path, e.value.offset, e.value.field) == (str(last), 50, "file size")
    with ConsumeQueue.open(tmp_path, 100, strict=False) as q:   # what is there is readable
        assert q.max_offset == 7 and isinstance(q.problems()[0], TruncatedFileError)


def test_file_larger_than_the_mapped_file_size(tmp_path):
    write_queue(tmp_path, 3)
    with pytest.raises(GeometryError) as e:
        ConsumeQueue.open(tmp_path, 80)
    assert (e.value.path, e.value.offset, e.value.field) == (str(tmp_path / f"{0:020d}"), 100, "file size")
    assert "mapped_file_size=100" in str(e.value)


@pytest.mark.parametrize("name, cls", [("abc", FormatError), ("123", FormatError),
                                       (f"{50:020d}", FormatError), (f"{200:020d}", CorruptIndexError)])
def test_wrong_file_names(tmp_path, name, cls):
    write_queue(tmp_path, 4)                                 # file 0 only
    (tmp_path / name).write_bytes(b"\0" * 100)
    with pytest.raises(cls) as e:
        ConsumeQueue.open(tmp_path, 100)
    assert (e.value.path, e.value.offset, e.value.field) == (str(tmp_path / name), 0, "file name")


def test_negative_commitlog_offset(tmp_path):
    write_queue(tmp_path, 4)
    f = tmp_path / f"{0:020d}"
    patch(f, 2 * 20, ">q", -5)
    with ConsumeQueue.open(tmp_path, 100) as q:
        assert q.max_offset == 2                             # recover() stops there
        with pytest.raises(FormatError) as e:
            q.check()
        assert (e.value.path, e.value.offset, e.value.field) == (str(f), 40, "unit.commitlog_offset")
        after = [p for p in q.problems() if p.field == "unit"]
        assert [(p.path, p.offset) for p in after] == [(str(f), 60)]    # unit 3 is now garbage


def test_negative_size(tmp_path):
    write_queue(tmp_path, 3)
    f = tmp_path / f"{0:020d}"
    patch(f, 20 + 8, ">i", -3)
    with ConsumeQueue.open(tmp_path, 100) as q, pytest.raises(FormatError) as e:
        q.check()
    assert (e.value.path, e.value.offset, e.value.field) == (str(f), 28, "unit.size")


def test_non_increasing_commitlog_offsets(tmp_path):
    write_queue(tmp_path, 8)
    f = tmp_path / f"{100:020d}"
    patch(f, 1 * 20, ">q", 100 * 5)                          # unit 6 repeats unit 5's offset
    with ConsumeQueue.open(tmp_path, 100) as q, pytest.raises(CorruptIndexError) as e:
        q.check()
    assert (e.value.path, e.value.offset, e.value.field) == (str(f), 20, "unit.commitlog_offset")


def test_overlapping_messages(tmp_path):
    write_queue(tmp_path, 3)
    f = tmp_path / f"{0:020d}"
    patch(f, 2 * 20, ">q", 120)                              # inside unit 1's message [100, 150)
    with ConsumeQueue.open(tmp_path, 100) as q, pytest.raises(CorruptIndexError) as e:
        q.check()
    assert (e.value.offset, e.value.field) == (40, "unit.commitlog_offset")


def test_unit_outside_the_commitlog(tmp_path):
    write_queue(tmp_path, 7)
    with ConsumeQueue.open(tmp_path, 100) as q:
        q.check(commitlog_max_offset=650)                    # last message ends at 650
        with pytest.raises(CorruptIndexError) as e:
            q.check(commitlog_max_offset=649)
    assert (e.value.path, e.value.offset, e.value.field) == (
        str(tmp_path / f"{100:020d}"), 20, "unit.commitlog_offset")


def test_invalid_unit_in_a_file_recover_assumes_full(tmp_path):
    write_queue(tmp_path, 22)                                # files 0, 100, 200, 300, 400
    f = tmp_path / f"{0:020d}"
    patch(f, 20 + 8, ">i", 0)
    with ConsumeQueue.open(tmp_path, 100) as q:
        assert q.max_offset == 22                            # recover() reads the last 3 files only
        with pytest.raises(FormatError) as e:
            q.check()
    assert (e.value.path, e.value.offset, e.value.field) == (str(f), 28, "unit.size")


def test_blank_unit_among_real_units(tmp_path):
    write_queue(tmp_path, 3)
    f = tmp_path / f"{0:020d}"
    with open(f, "r+b") as fh:
        fh.seek(20)
        fh.write(BLANK)
    with ConsumeQueue.open(tmp_path, 100) as q, pytest.raises(CorruptIndexError) as e:
        q.check()
    assert (e.value.path, e.value.offset, e.value.field) == (str(f), 20, "unit")


def test_dirty_file_after_the_end(tmp_path):
    write_queue(tmp_path, 7)                                  # ends inside file 100
    dirty = tmp_path / f"{200:020d}"
    dirty.write_bytes(b"\0" * 20 + unit_bytes(900, 50, 1) + b"\0" * 60)
    with ConsumeQueue.open(tmp_path, 100) as q:
        assert [f.path for f in q.dirty_files] == [dirty] and q.max_offset == 7
        with pytest.raises(CorruptIndexError) as e:
            q.check()
    assert (e.value.path, e.value.offset, e.value.field) == (str(dirty), 20, "unit")


def test_empty_last_file_is_ignored_like_5x(tmp_path):
    write_queue(tmp_path, 5)                                  # exactly one full file
    (tmp_path / f"{100:020d}").write_bytes(b"")
    with ConsumeQueue.open(tmp_path, 100) as q:
        assert q.max_offset == 5 and q.ignored_files == (tmp_path / f"{100:020d}",)
        assert q.problems() == []


# --------------------------------------------------------------------------- read-only opens


def test_read_only_opens_leave_files_unchanged(tmp_path):
    clock = build_timed_queue(tmp_path, list(range(1000, 1013)), 5, 3)
    before = snapshot(tmp_path)
    for opener in (ConsumeQueue.open, ConsumeQueue.read):
        with opener(tmp_path, 100) as q:
            q.units, q.to_frame(), q.problems(), q.tag_mask("TagA"), q.unit(5)
            q.offset_by_time(1005, clock), q.offset_by_time(1005, clock, broker="4")
    read_queue_info(tmp_path, 100)
    assert snapshot(tmp_path) == before


# --------------------------------------------------------------------------------- real data


def parse_commitlog(data: bytes):
    """Messages of a v1 CommitLog file (IPv4 hosts), parsed here from the documented layout."""
    pos, out = 0, []
    while pos + 8 <= len(data):
        total, magic = struct.unpack_from(">iI", data, pos)
        if magic != 0xDAA320A7:
            break
        store_ts = struct.unpack_from(">q", data, pos + 56)[0]
        queue_id, = struct.unpack_from(">i", data, pos + 12)
        queue_offset, = struct.unpack_from(">q", data, pos + 20)
        body_len, = struct.unpack_from(">i", data, pos + 84)
        p = pos + 88 + body_len
        topic = data[p + 1:p + 1 + data[p]].decode()
        p += 1 + data[p]
        plen, = struct.unpack_from(">h", data, p)
        props = dict(kv.split("\x01") for kv in data[p + 2:p + 2 + plen].decode().split("\x02") if kv)
        out.append(dict(offset=pos, size=total, store_ts=store_ts, topic=topic, queue_id=queue_id,
                        queue_offset=queue_offset, tags=props.get("TAGS")))
        pos += total
    return out


@pytest.mark.realdata
@needs_real_data(REAL_COMMITLOG)
def test_dispatch_a_real_commitlog_and_search_it_by_time(tmp_path):
    msgs = parse_commitlog(REAL_COMMITLOG.read_bytes())
    assert len(msgs) == 47 and {m["topic"] for m in msgs} == {"abc"}
    folder = tmp_path / "consumequeue" / "abc" / "0"
    with ConsumeQueueWriter.create(folder, mapped_file_size=20 * 10) as w:
        for m in msgs:
            r = w.put(m["offset"], m["size"], message_tags_code(m["topic"], m["tags"], None, m["store_ts"]),
                      m["queue_offset"])
            assert r.status == "written"
    by_offset = {m["offset"]: m["store_ts"] for m in msgs}
    clock = Clock(by_offset)
    times = [m["store_ts"] for m in msgs]
    with ConsumeQueue.open(folder, 200) as q:
        q.check(commitlog_max_offset=47 * 172)
        assert q.tag_mask(msgs[0]["tags"]).tolist() == [m["tags"] == msgs[0]["tags"] for m in msgs]
        assert q.units["tags_code"].tolist() == [ref_tags_code(m["tags"]) for m in msgs]
        for ts in sorted(set(times))[::5] + [times[0] - 1, times[-1] + 1]:
            assert q.offset_by_time(ts, clock).offset == linear_lower(times, 0, ts)
            assert q.offset_by_time(ts, clock, boundary="upper").offset == linear_upper(times, 0, ts)
