"""rmqlab.formats.compaction: the sparse queue's search (BatchConsumeQueue.binarySearchRight with
LOWER, midpoints rounded down to a unit) against a brute-force scan, iterateFromOrNext's file
choice, the log file size rule, and the position checkpoint's errors. Against the brokers: the
pulls of compaction topics in tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.errors import FormatError
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import compaction as cpt


def _units(bases: list[int]) -> bytes:
    return b"".join(bcq.UNIT.pack(100 * i, 90, 0, 1718000000000 + i, b, 1, -1, 0) for i, b in enumerate(bases))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=40, unique=True).map(sorted), st.integers(-2, 65))
def test_search_finds_the_first_unit_at_or_after_the_offset(bases, target):
    buf = _units(bases)
    got = cpt.binary_search_right(buf, 0, (len(bases) - 1) * bcq.UNIT_SIZE, target)
    want = next((i for i, b in enumerate(bases) if b >= target), None)
    assert got == (-1 if want is None else want * bcq.UNIT_SIZE)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 200), min_size=1, max_size=30, unique=True).map(sorted), st.integers(0, 210))
def test_iterate_from_or_next_starts_at_the_unit_or_the_next(tmp_path_factory, bases, offset):
    d = tmp_path_factory.mktemp("cq")
    size = 8 * bcq.UNIT_SIZE
    with bcq.BatchConsumeQueueWriter.create(d, mapped_file_size=size) as w:
        for i, b in enumerate(bases):
            w.put(100 * i, 90, 0, 1718000000000 + i, b, 1)
    with cpt.SparseQueue.open(d, size) as q:
        got = q.iterate_from_or_next(offset)
        first = got["msg_base_offset"][0] if got is not None else None
        later = [b for b in bases if b >= offset]
        if offset <= bases[0]:
            assert first == bases[0]
        elif not later:
            assert got is None or first >= offset   # past the last unit: nothing, as the broker
        else:
            assert first == later[0]
            assert list(got["msg_base_offset"]) == [b for b in bases if b >= later[0]][:len(got)]


def test_log_file_size_rule():
    cq = cpt.DEFAULT_COMPACTION_CQ_FILE_SIZE
    assert cq == 10_485_746
    assert cpt.compaction_log_file_size(cq, 100 * 1024 * 1024) == 10 * cq    # remainder under half: down
    assert cpt.compaction_log_file_size(cq, 2 * cq) == 5 * cq                 # at least five
    assert cpt.compaction_log_file_size(cq, 7 * cq + cq // 2 + 1) == 8 * cq    # half or more: up


def test_position_checkpoint(tmp_path):
    p = tmp_path / "position-checkpoint"
    p.write_text('{\n\t"empty":false,\n\t"queueOffsetMap":{"T_0":12,"T_1":3}\n}')
    cp = cpt.read_position_checkpoint(p)
    assert (cp.empty, cp.queue_offsets) == (False, {"T_0": 12, "T_1": 3})
    p.write_text('{"queueOffsetMap":{"T_0":"x"}}')
    with pytest.raises(FormatError) as e:
        cpt.read_position_checkpoint(p)
    assert e.value.field == "queueOffsetMap['T_0']"
    p.write_bytes(b"\xff{")
    with pytest.raises(FormatError):
        cpt.read_position_checkpoint(p)


def test_an_empty_queue_iterates_nothing(tmp_path):
    with cpt.SparseQueue.open(tmp_path) as q:
        assert (q.min_offset, q.max_offset, q.iterate_from_or_next(0)) == (-1, 0, None)
