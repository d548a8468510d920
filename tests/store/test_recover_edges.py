"""recover_store's ConsumeQueue step at the edges its other fast tests leave out, on a copy of the
real 4.2.0 store (tests/formats/test_real_store_420.py: 179 messages, ConsumeQueue files of 10
units = 200 bytes, 56 units written), and the restart report's dictionary. Expectations are
counted by hand from the README's facts and the queue's layout (a unit is 20 bytes, a file's
name its first byte), not from rmqlab's readers.
"""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from oracles import require_real_data

from rmqlab.store.recover import BrokerRestartReport, RecoveryAction, recover_store

MESSAGES, WRITTEN, UNITS_A_FILE = 179, 56, 10
GEOMETRY = {"hash_slot_num": 64, "index_num": 512}


@pytest.fixture
def store_420(tmp_path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(require_real_data("rocketmq/store-ericpangopher-4.2.0"), dst)
    return dst


def _queue(root: Path) -> Path:
    return root / "consumequeue" / "abc" / "0"


def test_the_queue_file_size_the_files_tell_is_used_when_none_is_given(store_420):
    # six 200-byte files named 0, 200, ... 1000: 200 bytes a file, not the default 6,000,000
    plan = recover_store(store_420, dry_run=True, **GEOMETRY)
    kinds = [a.kind for a in plan.actions]
    assert "cq-file-deleted" not in kinds and "cq-zeroed" not in kinds
    assert plan.cq_units_dropped == 0
    assert [a.count for a in plan.actions if a.kind == "cq-units-added"] == [MESSAGES - WRITTEN]


def test_files_past_the_last_matching_unit_are_deleted_with_their_units_counted(store_420):
    # unit 20 (the first of file 400) gets a size no message has: the kept prefix is units 0..19
    # and files 400, 600, 800 (10 units each) and 1000 (6 units) lie wholly after it
    f = _queue(store_420) / "00000000000000000400"
    data = bytearray(f.read_bytes())
    offset, size, tags = struct.unpack_from(">qiq", data, 0)
    struct.pack_into(">qiq", data, 0, offset, size + 1, tags)
    f.write_bytes(bytes(data))
    plan = recover_store(store_420, dry_run=True, consume_queue_file_size=200, **GEOMETRY)
    deleted = [(Path(a.path).name, a.count) for a in plan.actions if a.kind == "cq-file-deleted"]
    assert deleted == [(f"{start:020d}", n) for start, n in ((400, 10), (600, 10), (800, 10), (1000, 6))]
    assert plan.cq_units_dropped == 36
    assert [a.count for a in plan.actions if a.kind == "cq-units-added"] == [MESSAGES - 20]


def test_an_empty_last_queue_file_is_deleted_as_one_file(store_420):
    # a file created and never mapped: 5.x MappedFileQueue.doLoad deletes an empty last file
    empty = _queue(store_420) / "00000000000000001200"
    empty.write_bytes(b"")
    plan = recover_store(store_420, dry_run=True, consume_queue_file_size=200, **GEOMETRY)
    [action] = [a for a in plan.actions if a.kind == "cq-file-deleted"]
    assert (action.path, action.count) == (str(empty), 1)
    assert "empty" in action.detail


def test_the_restart_report_as_a_dictionary() -> None:
    action = RecoveryAction("index-file-removed", "/s/index/1", "newer than the recovery file", 1)
    r = BrokerRestartReport(root="/s", checkpoint={"physic": 5}, recovery_timestamp=7, recovery_from_offset=0,
                            messages=3, index_files_deleted=["/s/index/1"], index_keys_deleted=4,
                            redispatched_messages=3, index_keys_added=6, actions=[action])
    assert r.as_dict() == {
        "root": "/s", "checkpoint": {"physic": 5}, "recovery_timestamp": 7, "recovery_from_offset": 0,
        "messages": 3, "index_files_deleted": ["/s/index/1"], "index_keys_deleted": 4,
        "redispatched_messages": 3, "index_keys_added": 6,
        "actions": [{"kind": "index-file-removed", "path": "/s/index/1", "detail": "newer than the recovery file",
                     "count": 1}]}
