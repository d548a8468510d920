"""The six stops of selectPhyOffset and the three timeDiff clamps of putKey, on crafted files.

Independent truth: a walk written here straight from IndexFile.selectPhyOffset's Java loop
(RocketMQ store/index/IndexFile.java) over the raw bytes read with struct, and putKey's
timeDiff arithmetic written out by hand, plus the C walk (select_phy_offsets) of the package.
"""
from __future__ import annotations

import struct

import pytest
from reference_model import stored_hash

from rmqlab.analysis.walkrules import (
    TIME_DIFF_CLAMPS,
    WALK_STOPS,
    craft_walk_stop,
    time_diff_clamps,
    walk_stop_cases,
    write_entry_field,
)
from rmqlab.formats.indexfile import IndexFile
from rmqlab.jvm.longs import INT_MAX

SLOTS, ENTRIES = 4, 8


def java_walk(path, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], list[int], str]:
    """selectPhyOffset over the raw bytes: (offsets, entries read, the condition that stopped it)."""
    data = path.read_bytes()
    begin_ts, = struct.unpack_from(">q", data, 0)
    index_count, = struct.unpack_from(">i", data, 36)
    h = stored_hash(key)
    slot_value, = struct.unpack_from(">i", data, 40 + 4 * (h % SLOTS))
    found, read, current = [], [], slot_value
    while True:
        if len(found) >= max_num:
            return found, read, "max-num"
        key_hash, phy, time_diff, prev = struct.unpack_from(">iqii", data, 40 + 4 * SLOTS + 20 * current)
        read.append(current)
        if time_diff < 0:
            return found, read, "negative-time-diff"
        time_read = begin_ts + time_diff * 1000
        if key_hash == h and begin <= time_read <= end:
            found.append(phy)
        if prev <= 0:
            return found, read, "end-of-chain"
        if prev > index_count:
            return found, read, "prev-out-of-range"
        if prev == current:
            return found, read, "self-loop"
        if time_read < begin:
            return found, read, "older-than-begin"
        current = prev


@pytest.mark.parametrize("rule", list(WALK_STOPS))
def test_each_crafted_file_stops_by_its_rule_as_the_java_loop_does(rule, tmp_path):
    case = craft_walk_stop(rule, tmp_path)
    t = case.trace()
    found, read, stop = java_walk(case.path, case.key, case.max_num, case.begin, case.end)
    assert stop == rule == t.stop
    assert [s.entry for s in t.steps] == read and t.results == found
    with IndexFile.open(case.path, SLOTS, ENTRIES) as f:
        assert f.select_phy_offsets(case.key, case.max_num, case.begin, case.end) == found
    # the rule is the only thing that stopped it: entry 1 is read only on the intact chain
    assert case.unread() == ([] if rule == "end-of-chain" else [1])
    assert bool(case.edit) == (rule in ("negative-time-diff", "prev-out-of-range", "self-loop"))


def test_the_cases_come_in_the_order_of_the_java_checks(tmp_path):
    assert [c.rule for c in walk_stop_cases(tmp_path)] == list(WALK_STOPS) == [
        "max-num", "negative-time-diff", "end-of-chain", "prev-out-of-range", "self-loop", "older-than-begin"]
    with pytest.raises(ValueError, match="rule must be one of"):
        craft_walk_stop("cycle", tmp_path)


def test_write_entry_field_changes_those_bytes_only(tmp_path):
    case = craft_walk_stop("end-of-chain", tmp_path)
    before = bytearray(case.path.read_bytes())
    write_entry_field(case.path, 2, "prev_index", -7, hash_slot_num=SLOTS, index_num=ENTRIES)
    after = case.path.read_bytes()
    at = 40 + 4 * SLOTS + 20 * 2 + 16
    struct.pack_into(">i", before, at, -7)
    assert after == bytes(before)
    with pytest.raises(ValueError, match="field"):
        write_entry_field(case.path, 2, "prev", 1, hash_slot_num=SLOTS, index_num=ENTRIES)
    with pytest.raises(ValueError, match="entry"):
        write_entry_field(case.path, ENTRIES, "prev_index", 1, hash_slot_num=SLOTS, index_num=ENTRIES)


def test_time_diff_clamps_as_putkey_writes_them(tmp_path):
    t = time_diff_clamps(tmp_path)
    assert t["clamp"].tolist() == list(TIME_DIFF_CLAMPS)[:1] + ["none"] + list(TIME_DIFF_CLAMPS)[1:]
    data = (tmp_path / "time-diff-clamps").read_bytes()
    begin, = struct.unpack_from(">q", data, 0)
    stored = [struct.unpack_from(">i", data, 40 + 4 * SLOTS + 20 * n + 12)[0] for n in t["entry"]]
    assert t["stored_time_diff"].tolist() == stored
    first = t.iloc[0]
    # the first put saw beginTimestamp 0: without the rule it would store the epoch seconds
    assert first["begin_timestamp"] == 0 and first["seconds"] == first["store_timestamp"] // 1000 > 0
    assert stored[0] == 0 and begin == first["store_timestamp"]         # ... and it set begin
    assert t["seconds"].tolist()[1:] == [5, 70 * 365 * 86_400, -5]       # truncated toward zero
    assert t["seconds"].iloc[2] > INT_MAX and stored[1:] == [5, INT_MAX, 0]
    assert t["time_read"].tolist() == [begin + 1000 * s for s in stored]
    # a message stored 5 s before the file's begin reads as the file's begin: 5 s late
    assert t["time_read"].iloc[3] - t["store_timestamp"].iloc[3] == 5_000
