"""rmqlab.formats.timer judged by a brute-force model of TimerMessageStore.doEnqueue
(tests/support/timer_model.py, plain Python from the Java source, no rmqlab code): the wheel's
slots, each slot's chain, getAllNum, the log's units and blank fillers, the precision the files
prove; and the typed errors for files the broker refuses. Against the brokers themselves:
tests/brokers/test_rocketmq_brokers.py (the release's own timer classes read the same files)."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timer_model import SLOTS_TOTAL, TimerModel, java_string_hash

from rmqlab.errors import CorruptIndexError, GeometryError, TruncatedFileError
from rmqlab.formats import timer as tm
from rmqlab.jvm.hashcode import java_hash

T0 = 1_718_000_000_000


def test_the_model_hashes_topics_as_java():
    assert [java_string_hash(t) for t in ("TopicTimer", "中文", "😀")] == \
        [java_hash(t) for t in ("TopicTimer", "中文", "😀")]


def test_blank_magic_code_is_javas_expression():
    # 0xBBCCDDEE ^ 1880681586 + 8 in Java: the int literal 0xBBCCDDEE is negative; + binds first
    assert tm.BLANK_MAGIC_CODE == struct.unpack(">i", struct.pack(">i", -1144201746 ^ (1880681586 + 8)))[0]


_enqueues = st.lists(st.tuples(st.integers(0, 3600), st.integers(0, 4 * 86400), st.booleans()), min_size=0,
                     max_size=60)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_enqueues, precision=st.sampled_from(tm.PRECISIONS), file_units=st.integers(2, 6))
def test_readers_see_what_the_model_wrote(tmp_path_factory, steps, precision, file_units):
    root = tmp_path_factory.mktemp("timer")
    m = TimerModel(precision_ms=precision, file_size=file_units * 52 + 16 + 7)
    for i, (write_s, delay_s, delete) in enumerate(steps):
        write = (T0 + write_s * 1000) // precision * precision
        # a few messages share slots: delays on a coarse grid
        delayed = write + (delay_s // 97 * 97) * 1000 // precision * precision
        m.enqueue(write, delayed, 1000 + 300 * i, 300, f"T{i % 3}", delete=delete and i % 4 == 0)
    m.write(root, last_read_time_ms=T0)
    with tm.TimerLog.open(root / "timerlog") as log:
        assert log.positions.tolist() == [u.pos for u in m.units]
        assert log.units["prev_pos"].tolist() == [u.prev_pos for u in m.units]
        assert log.units["magic"].tolist() == [u.magic for u in m.units]
        assert log.units["hash_topic"].tolist() == [u.topic_hash for u in m.units]
        assert log.end == (m.units[-1].pos + 52 if m.units else 0)
        inferred = tm.infer_precision(tm.TimerWheel.open(root / "timerwheel").slots, log)
        assert inferred == (precision if m.units else None)
        with tm.TimerWheel.open(root / "timerwheel", precision_ms=precision) as w:
            occ = w.occupied()
            assert sorted(occ["index"].tolist()) == sorted(m.slots)
            for t in {u.write_time + u.delay_time for u in m.units}:
                assert log.chain(w.slot(t)[2]) == m.chain(t)
                assert list(w.slot(t)[1:4]) == m.get_slot(t)[1:4]
            assert w.all_num(T0) == m.all_num(T0)


def test_a_unit_at_a_files_end_leaves_a_blank_filler(tmp_path):
    m = TimerModel(file_size=52 * 2 + 20)   # two units, then 20 bytes: a blank, the next file
    for i in range(5):
        m.enqueue(T0, T0 + 5000, 100 * i, 90, "T")
    m.write(tmp_path)
    with tm.TimerLog.open(tmp_path / "timerlog") as log:
        assert len(log.files) == 3
        assert log.positions.tolist() == [0, 52, 124, 176, 248]
        assert log.chain(log.positions[-1]) == [248, 176, 124, 52, 0]


def test_a_slot_of_another_lap_reads_empty(tmp_path):
    m = TimerModel()
    m.enqueue(T0, T0 + 1000, 0, 90, "T")
    m.write(tmp_path)
    with tm.TimerWheel.open(tmp_path / "timerwheel") as w:
        assert w.slot(T0 + 1000)[0] == T0 + 1000
        assert w.slot(T0 + 1000 + SLOTS_TOTAL * 2 * 1000) == (-1, -1, -1, 0, 0)


def test_a_wheel_of_the_wrong_length_is_refused(tmp_path):
    p = tmp_path / "timerwheel"
    p.write_bytes(bytes(tm.WHEEL_SIZE - 32))
    with pytest.raises(GeometryError) as e:
        tm.TimerWheel.open(p)
    assert (e.value.path, e.value.offset, e.value.field) == (str(p), 0, "file size")
    with pytest.raises(ValueError):
        tm.TimerWheel.open(p, precision_ms=300)


def test_log_files_of_two_sizes_or_a_gap_are_refused(tmp_path):
    log = tmp_path / "timerlog"
    log.mkdir()
    (log / f"{0:020d}").write_bytes(bytes(120))
    (log / f"{120:020d}").write_bytes(bytes(100))
    with pytest.raises(GeometryError, match="differ in size"):
        tm.TimerLog.open(log)
    (log / f"{120:020d}").unlink()
    (log / f"{240:020d}").write_bytes(bytes(120))
    with pytest.raises(GeometryError, match="missing") as e:
        tm.TimerLog.open(log)
    assert e.value.field == "file name"


def test_bad_positions_and_cycles_are_typed_errors(tmp_path):
    m = TimerModel()
    for i in range(3):
        m.enqueue(T0, T0 + 2000, 100 * i, 90, "T")
    m.write(tmp_path)
    f = tmp_path / "timerlog" / f"{0:020d}"
    with tm.TimerLog.open(tmp_path / "timerlog") as log:
        with pytest.raises(CorruptIndexError, match="unit boundary"):
            log.unit_at(53)
        with pytest.raises(TruncatedFileError):
            log.unit_at(52 * 3)
        with pytest.raises(CorruptIndexError, match="no file"):
            log.unit_at(10**9)
    data = bytearray(f.read_bytes())
    struct.pack_into(">q", data, 4, 104)   # the first unit points forward to the third: a cycle
    f.write_bytes(bytes(data))
    with tm.TimerLog.open(tmp_path / "timerlog") as log, pytest.raises(CorruptIndexError, match="forward") as e:
        log.chain(104)
    assert e.value.field == "prev_pos"


def test_checkpoint_round_trip_and_short_file(tmp_path):
    p = tmp_path / "timercheck"
    cp = tm.TimerCheckpoint(T0, 520, 10, 10, 0, T0 + 5, 7)
    tm.write_timer_checkpoint(p, cp)
    assert p.stat().st_size == 4096
    assert tm.read_timer_checkpoint(p) == cp
    p.write_bytes(struct.pack(">qq", T0, 52))    # what a torn copy leaves: the rest reads as 0
    assert tm.read_timer_checkpoint(p) == tm.TimerCheckpoint(T0, 52)


def test_magic_ok_is_the_low_four_bits():
    got = tm.is_magic_ok(np.array([0, 1, 3, 5, 15, 16, tm.BLANK_MAGIC_CODE]))
    assert got.tolist() == [True, True, True, True, True, False, False]


def test_wheel_snapshots_are_listed_by_flag(tmp_path):
    for flag in (520, 52, 1040):
        (tmp_path / f"timerwheel.{flag}").write_bytes(b"")
    (tmp_path / "timerwheel.tmp").write_bytes(b"")
    assert [f for f, _ in tm.wheel_snapshots(tmp_path)] == [52, 520, 1040]


def test_the_roll_goes_to_a_roll_point(tmp_path):
    """A time past the roll window waits at a roll point (MAGIC_ROLL), as doEnqueue decides."""
    m = TimerModel()
    u = m.enqueue(T0, T0 + 60 * 3600_000, 0, 90, "T")
    m.write(tmp_path)
    with tm.TimerLog.open(tmp_path / "timerlog") as log:
        assert int(log.units["magic"][0]) == tm.MAGIC_DEFAULT | tm.MAGIC_ROLL
        assert int(log.delayed_time()[0]) == u.write_time + u.delay_time == T0 + 24 * 3600_000


def test_readers_never_write(tmp_path):
    m = TimerModel()
    m.enqueue(T0, T0 + 2000, 0, 90, "T")
    m.write(tmp_path)
    before = {p: p.read_bytes() for p in Path(tmp_path).rglob("*") if p.is_file()}
    with tm.TimerWheel.open(tmp_path / "timerwheel") as w, tm.TimerLog.open(tmp_path / "timerlog") as log:
        w.occupied()
        log.chain(0)
    assert {p: p.read_bytes() for p in before} == before
