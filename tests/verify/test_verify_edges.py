"""verify's checks at the edges the damage catalogue of test_verify.py does not reach: a
one-entry index file, index files out of order, a wrong beginTimestamp, ConsumeQueueExt damage,
a ConsumeQueue checked from one file alone. Expectations are hand-computed from the layouts
(IndexFile / IndexHeader, ConsumeQueue, ConsumeQueueExt at 4.x) and read back with the standard
library (tests/support), not with rmqlab's readers.
"""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from commitlog_stdlib import read_commitlog
from indexfile_stdlib import read_index_file
from oracles import require_real_data

from rmqlab.verify import verify_consume_queue, verify_index_file, verify_path
from tests.verify.test_verify import HSN, INUM, build_small_store

#: IndexHeader: beginTimestamp 0, endTimestamp 8, beginPhyOffset 16, endPhyOffset 24,
#: hashSlotCount 32, indexCount 36
_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
#: ConsumeQueue unit: commitLogOffset long, size int, tagsCode long
_UNIT = struct.Struct(">qiq")


def write_index_file(path: Path, hsn: int, inum: int, header: tuple, entries: list[tuple]) -> None:
    """An index file laid out as IndexFile writes it: the header, `hsn` slots each holding the
    newest entry number of its chain, `inum` 20-byte entries numbered from 1 (entry 0 unused)."""
    slots = [0] * hsn
    body = bytearray(_HEADER.size + 4 * hsn + _ENTRY.size * inum)
    _HEADER.pack_into(body, 0, *header)
    for n, (key_hash, phy, time_diff) in enumerate(entries, start=1):
        slot = key_hash % hsn
        _ENTRY.pack_into(body, _HEADER.size + 4 * hsn + _ENTRY.size * n, key_hash, phy, time_diff, slots[slot])
        slots[slot] = n
    struct.pack_into(f">{hsn}i", body, _HEADER.size, *slots)
    path.write_bytes(bytes(body))


# ------------------------------------------------------------------------ one index file

T = 1_700_000_000_123      # a store timestamp, ms


def test_a_one_entry_follow_on_file_whose_time_diff_is_not_0_is_clean(tmp_path):
    # IndexService.getAndCreateLastIndexFile seeds a new file with the full one's end timestamp,
    # and IndexFile.putKey measures entry 1's timeDiff from that seed before setting
    # beginTimestamp to the put's own store time (rocketmq-all-4.9.7): so one entry 7 s after
    # the seed leaves begin = end = its store time and time_diff 7, which is no damage
    p = tmp_path / "20231114221320123"
    write_index_file(p, 4, 4, (T, T, 500, 500, 1, 2), [(13, 500, 7)])
    rep = verify_index_file(p, 4, 4)
    assert rep.problems == [], [str(x) for x in rep.problems]
    assert rep.counts["keys"] == 1


def test_a_one_entry_file_whose_timestamps_differ_names_end_timestamp(tmp_path):
    # one put sets both timestamps to its store time (IndexFile.putKey): they must agree
    p = tmp_path / "20231114221320123"
    write_index_file(p, 4, 4, (T, T + 5000, 500, 500, 1, 2), [(13, 500, 0)])
    rep = verify_index_file(p, 4, 4)
    assert [(x.check, x.path, x.offset, x.field) for x in rep.problems] == [
        ("index.header-range", str(p), 8, "header.end_timestamp")]


# ---------------------------------------------------------------- index files of a store


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    return build_small_store(tmp_path_factory.mktemp("verify-edges") / "store")


@pytest.fixture
def store_copy(small_store, tmp_path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(small_store, dst)
    return dst


def test_index_files_out_of_order_are_reported_at_the_later_file(store_copy):
    files = sorted((store_copy / "index").iterdir())
    first, second = read_index_file(files[0], HSN), read_index_file(files[1], HSN)
    assert first["index_count"] > 1 and second["index_count"] > 1
    # the two files' bytes swapped: the later name now holds the older entries, which begin
    # before the end of the file named before it (the broker writes the files one after the other)
    a, b = files[0].read_bytes(), files[1].read_bytes()
    files[0].write_bytes(b)
    files[1].write_bytes(a)
    assert first["begin_phy_offset"] < second["end_phy_offset"]
    r = verify_path(store_copy, hash_slot_num=HSN, index_num=INUM)
    found = [(x.path, x.offset, x.field) for x in r.problems if x.check == "index.file-order"]
    assert found == [(str(files[1]), 16, "header.begin_phy_offset")]


def test_a_wrong_begin_timestamp_is_reported_against_entry_1s_message(store_copy):
    files = sorted((store_copy / "index").iterdir())
    begin = read_index_file(files[0], HSN)["begin_timestamp"]
    with open(files[0], "r+b") as f:
        f.write(struct.pack(">q", begin - 1000))
    r = verify_path(store_copy, hash_slot_num=HSN, index_num=INUM)
    # IndexFile.putKey sets beginTimestamp from the first put's message (indexCount <= 1), so
    # the cross check against the CommitLog names the header's begin_timestamp at byte 0
    found = [(x.check, x.path, x.offset) for x in r.problems if x.field == "header.begin_timestamp"]
    assert found == [("index.header-range", str(files[0]), 0)]


# ---------------------------------------------------------------------- ConsumeQueueExt


@pytest.fixture
def store_420(tmp_path) -> Path:
    """A copy of the real 4.2.0 store (ConsumeQueue tagsCode holding ConsumeQueueExt addresses)."""
    dst = tmp_path / "store"
    shutil.copytree(require_real_data("rocketmq/store-ericpangopher-4.2.0"), dst)
    return dst


def test_the_real_420_queue_with_its_ext_is_clean(store_420):
    folder = store_420 / "consumequeue" / "abc" / "0"
    reps = verify_consume_queue(folder)
    assert [r.path for r in reps] == [str(folder)]
    assert reps[0].problems == [], [str(x) for x in reps[0].problems]
    assert reps[0].counts["ext_units"] == 41 + 15       # the README's count


def test_an_ext_unit_size_below_its_header_is_a_cqext_unit_problem(store_420):
    ext = store_420 / "consumequeue_ext" / "abc" / "0" / "00000000000000000000"
    # unit 3 of the first ext file starts at 3 * 20 (every unit here is the 20-byte header)
    with open(ext, "r+b") as f:
        f.seek(60)
        f.write(struct.pack(">h", 5))
    folder = store_420 / "consumequeue" / "abc" / "0"
    [rep] = verify_consume_queue(folder)
    found = [(x.check, x.path, x.offset, x.field) for x in rep.problems if x.path == str(ext)]
    assert found == [("cqext.unit", str(ext), 60, "unit.size")]


def test_a_stray_ext_file_name_is_a_cqext_file_problem(store_420):
    ext = store_420 / "consumequeue_ext" / "abc" / "0"
    (ext / "junk").write_bytes(bytes(840))
    [rep] = verify_consume_queue(store_420 / "consumequeue" / "abc" / "0")
    assert [(x.check, x.path) for x in rep.problems if x.check.startswith("cqext.")] == [
        ("cqext.file", str(ext / "junk"))]


def test_an_ext_address_where_no_ext_unit_starts_is_named_at_its_unit(store_420):
    folder = store_420 / "consumequeue" / "abc" / "0"
    cq_file = folder / "00000000000000000200"          # units 10..19, 20 bytes each
    offset, size, tags_code = _UNIT.unpack_from(cq_file.read_bytes(), 2 * 20)
    assert tags_code < -(2**31)                          # ConsumeQueueExt.isExtAddr
    # one byte further: ext units are 20 bytes long, so no unit starts there
    with open(cq_file, "r+b") as f:
        f.seek(2 * 20)
        f.write(_UNIT.pack(offset, size, tags_code + 1))
    [rep] = verify_consume_queue(folder)
    assert rep.path == str(folder)
    found = [(x.path, x.offset, x.field) for x in rep.problems if x.check == "cq.ext-address"]
    assert found == [(str(cq_file), 2 * 20 + 12, "unit.tags_code")]


def test_a_queue_checked_from_one_file_names_that_file(tmp_path):
    # the third unit's CommitLog offset goes back (ConsumeQueue.putMessagePositionInfo only
    # appends): found at unit 2, byte 40, in the file given, not in any folder verify makes
    p = tmp_path / "T" / "0" / ("0" * 20)
    p.parent.mkdir(parents=True)
    units = [(0, 100, 0), (200, 100, 0), (100, 100, 0)]
    p.write_bytes(b"".join(_UNIT.pack(*u) for u in units).ljust(100, b"\0"))
    [rep] = verify_consume_queue(p)
    assert rep.path == str(p)
    assert [(x.check, x.path, x.offset, x.field) for x in rep.problems] == [
        ("cq.order", str(p), 40, "unit.commitlog_offset")]


def test_a_unit_past_the_active_files_data_is_past_the_commitlog_end(store_copy):
    # the active (last) CommitLog file ends in zeros, not a blank: the CommitLog ends after its
    # last record (CommitLog.getMaxOffset: the write position), not at the end of the file
    msgs = read_commitlog(store_copy / "commitlog")
    end = msgs[-1]["phy_offset"] + msgs[-1]["total_size"]
    last = sorted((store_copy / "commitlog").iterdir())[-1]
    assert end < int(last.name) + last.stat().st_size            # room left in the active file
    # one unit after a queue's last one, for a 64-byte message at the CommitLog's end
    for cq_file in sorted((store_copy / "consumequeue").glob("*/*/*"), reverse=True):
        data = cq_file.read_bytes()
        free = next((i for i in range(0, len(data), 20) if not any(data[i:i + 20])), None)
        if free is not None and free > 0:
            break
    with open(cq_file, "r+b") as f:
        f.seek(free)
        f.write(_UNIT.pack(end, 64, 0))
    r = verify_path(store_copy, hash_slot_num=HSN, index_num=INUM)
    found = [(x.path, x.offset) for x in r.problems if x.check == "cq.past-commitlog-end"]
    assert found == [(str(cq_file), free)]
