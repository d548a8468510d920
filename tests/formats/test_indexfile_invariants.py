"""IndexFile.invariants (one pass in C, _indexcore.check_file) against its NumPy twin
(_invariants_numpy), on files the writer made and then damaged at random: slots, key hashes,
time diffs, prev links and index_count overwritten with any 32-bit value. Every check's first
flagged element and count, the occupied slots and the longest chain must agree; and problems()
says the same from either."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rmqlab._indexcore as _indexcore
from rmqlab.formats.indexfile import ENTRY, HEADER, SLOT, IndexFile

INT32 = st.integers(-2**31, 2**31 - 1)
SMALL = st.integers(-3, 40)


@st.composite
def damaged_files(draw):
    hsn = draw(st.integers(1, 9))
    index_num = draw(st.integers(2, 40))
    puts = draw(st.integers(0, index_num - 1))
    keys = draw(st.lists(st.text("ab#", min_size=1, max_size=3), min_size=puts, max_size=puts))
    times = draw(st.lists(st.integers(0, 5000), min_size=puts, max_size=puts))
    damage = draw(st.lists(st.tuples(st.sampled_from(["slot", "key_hash", "time_diff", "prev_index", "count"]),
                                     st.integers(0, 10**6), st.one_of(SMALL, INT32)), max_size=4))
    return hsn, index_num, keys, times, damage


def write(path, hsn, index_num, keys, times, damage):
    path.unlink(missing_ok=True)
    f = IndexFile.create(path, hsn, index_num, 0, 0)
    try:
        for i, (k, t) in enumerate(zip(keys, times)):
            f.put_key(k, 100 * (i + 1), 1_700_000_000_000 + 1000 * t)
    finally:
        f.close()
    data = bytearray(path.read_bytes())
    slots_at = HEADER.size
    entries_at = slots_at + SLOT.size * hsn
    for what, where, value in damage:
        if what == "slot":
            at = slots_at + SLOT.size * (where % hsn)
        elif what == "count":
            at = HEADER.offset("index_count")
            value = max(0, min(value, index_num + 5))
        else:
            at = entries_at + ENTRY.size * (where % index_num) + ENTRY.offset(what)
        struct.pack_into(">i", data, at, value)
    path.write_bytes(bytes(data))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damaged_files())
def test_the_c_pass_is_its_numpy_twin(tmp_path, case):
    hsn, index_num, keys, times, damage = case
    path = tmp_path / "f"
    write(path, hsn, index_num, keys, times, damage)
    with IndexFile.open(path, hash_slot_num=hsn, index_num=index_num, strict=False) as f:
        assert f.invariants() == f._invariants_numpy()
        assert [str(e) for e in f.problems()] == [str(e) for e in f.problems(f._invariants_numpy())]


def test_a_healthy_file_flags_nothing(tmp_path):
    path = tmp_path / "f"
    write(path, 4, 30, [f"k{i % 7}" for i in range(25)], list(range(25)), [])
    with IndexFile.open(path, hash_slot_num=4, index_num=30) as f:
        inv = f.invariants()
        assert inv.occupied == 4 and all(x.total == 0 and x.first == -1 for x in inv[2:])
        assert f.problems() == []


def test_check_file_refuses_a_short_buffer_and_a_count_past_the_geometry():
    with pytest.raises(ValueError, match="geometry needs"):
        _indexcore.check_file(bytes(10), 4, 4, 1)
    size = HEADER.size + SLOT.size * 4 + ENTRY.size * 4
    with pytest.raises(ValueError, match="outside 0 .. index_num"):
        _indexcore.check_file(bytes(size), 4, 4, 5)
    assert _indexcore.check_file(np.zeros(size, np.uint8), 4, 4, 1)[:2] == (0, 0)
