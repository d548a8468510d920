"""Edge cases of rmqlab/formats/indexfile.py that its other tests left open (found as mutants
they let survive, benchmarks/mutation.py), each against independent truth: the Java golden
files, struct readers written here, brute force."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from reference_model import stored_hash

from rmqlab.formats.indexfile import IndexFile, build_index_file, time_diff_seconds
from rmqlab.jvm.longs import LONG_MAX
from tests.formats.test_indexfile import RefIndex

HEADER_FMT = ">qqqqii"   # IndexHeader: begin/end timestamp, begin/end phy offset, hashSlotCount, indexCount
T0 = 1_718_000_000_000
INT_MAX = 2**31 - 1


def model_chain(ref: RefIndex, slot: int) -> list[int]:
    """Entry numbers of a slot's chain in the model, newest first (prev_index 0 ends it)."""
    out, cur = [], ref.slot.get(slot, 0)
    while 0 < cur < ref.count:
        out.append(cur)
        cur = ref.ent[cur][3]
    return out


def test_time_diff_seconds_gives_an_int_or_an_int64_array():
    assert type(time_diff_seconds(T0 + 1500, T0)) is int
    got = time_diff_seconds(np.array([T0 + 1500, T0 - 5, T0]), T0)
    assert got.dtype == np.int64 and got.tolist() == [1, 0, 0]
    got = time_diff_seconds(T0 + 2000, np.array([T0, 0, T0 + 500]))
    assert got.dtype == np.int64 and got.tolist() == [2, 0, 1]


def test_batch_result_frame_puts_the_key_second_and_keeps_it_whole(tmp_path):
    """Keys are Java strings: a trailing NUL is a character of the key, not padding."""
    keys = ["T#a", "T#b\x00", "T#c"]
    ref = RefIndex(4, 16)
    with IndexFile.create(tmp_path / "f", 4, 16) as f:
        for i, k in enumerate(keys * 2):
            f.put_key(k, 100 * i, T0 + i)
            ref.put(k, 100 * i, T0 + i)
        frame = f.select_phy_offsets_many(keys).to_frame(keys)
    assert frame.columns.tolist() == ["key_index", "key", "phy_offset"]
    want = [(i, k, phy) for i, k in enumerate(keys) for phy in ref.select(k, 64, 0, LONG_MAX)]
    assert list(frame.itertuples(index=False, name=None)) == want
    assert frame["key"].tolist()[2] == "T#b\x00"


def test_repr_names_the_mode_and_the_keys(tmp_path):
    path = tmp_path / "f"
    with IndexFile.create(path, 4, 8) as f:
        f.put_key("T#a", 1, T0)
        assert repr(f) == f"IndexFile({str(path)!r}, mode='rw', hash_slot_num=4, index_num=8, keys=1)"
    with IndexFile.open(path, 4, 8) as f:
        assert repr(f) == f"IndexFile({str(path)!r}, mode='r', hash_slot_num=4, index_num=8, keys=1)"


def test_chain_walks_every_entry_down_to_entry_one(tmp_path):
    """One slot: every put joins its chain, newest first, as the model links them."""
    ref = RefIndex(1, 8)
    with IndexFile.create(tmp_path / "f", 1, 8) as f:
        for i, k in enumerate(["T#a", "T#b", "T#a", "T#c"]):
            f.put_key(k, 100 * i, T0)
            ref.put(k, 100 * i, T0)
        assert list(f.chain(0)) == model_chain(ref, 0) == [4, 3, 2, 1]


def test_chain_stops_at_an_entry_past_the_written_ones(tmp_path):
    """A slot pointing at entry index_count (not yet written) ends the chain before it, as a
    prev_index pointing there does: the broker's walk reads only entries below index_count."""
    path = tmp_path / "f"
    with IndexFile.create(path, 2, 8) as f:
        for i in range(3):
            f.put_key("T#a", 100 * i, T0)
    slot = stored_hash("T#a") % 2
    count = struct.unpack_from(HEADER_FMT, path.read_bytes())[5]
    assert count == 4
    with open(path, "r+b") as fh:
        fh.seek(40 + 4 * slot)
        fh.write(struct.pack(">i", count))
    with IndexFile.open(path, 2, 8, strict=False) as f:
        assert list(f.chain(slot)) == []
    with open(path, "r+b") as fh:                         # slot -> 3 -> 4 (past the end)
        fh.seek(40 + 4 * slot)
        fh.write(struct.pack(">i", 3))
        fh.seek(40 + 4 * 2 + 20 * 3 + 16)
        fh.write(struct.pack(">i", count))
    with IndexFile.open(path, 2, 8, strict=False) as f:
        assert list(f.chain(slot)) == [3]


def test_trace_text_marks_each_entry(tmp_path):
    """One slot, entries (newest first): T#a in range, T#b (another hash), T#a outside [begin, end]."""
    with IndexFile.create(tmp_path / "f", 1, 8) as f:
        f.put_key("T#a", 100, T0)
        f.put_key("T#b", 200, T0 + 5000)
        f.put_key("T#a", 300, T0 + 9000)
        t = f.trace_query("T#a", 64, T0, T0 + 8000)
    lines = str(t).splitlines()
    h = stored_hash("T#a")
    assert lines[0] == f"key 'T#a': hash {h}, slot 0 -> entry 3"
    assert [line.rsplit("  ", 1)[1] for line in lines[1:4]] == [
        "hash match, outside time range", "other hash", "returned"]
    assert lines[1].split() == ["entry", "3", "hash", str(h), "phy", "300", "time", str(T0 + 9000),
                                "prev", "2", "hash", "match,", "outside", "time", "range"]
    assert lines[4] == f"stopped: end-of-chain ({t.stop_reason}); 1 offsets"


def java_long(x: int) -> int:
    """x as a Java long: its low 64 bits, two's complement (struct packs and unpacks them)."""
    return struct.unpack("<q", struct.pack("<Q", x & (2**64 - 1)))[0]


def test_trace_records_the_query_and_the_slot_as_the_file_holds_them(tmp_path):
    path = tmp_path / "f"
    with IndexFile.create(path, 7, 16) as f:
        for i in range(3):
            f.put_key("T#key", 100 * i, T0 + 1000 * i)
        t = f.trace_query("T#key", 5, T0 + 500, T0 + 9000)
    h = stored_hash("T#key")
    slot_value = struct.unpack_from(">i", path.read_bytes(), 40 + 4 * (h % 7))[0]
    assert (t.path, t.key, t.key_hash, t.slot, t.slot_value) == (str(path), "T#key", h, h % 7, slot_value)
    assert type(t.slot) is int and slot_value == 3
    assert (t.max_num, t.begin, t.end, t.results) == (5, T0 + 500, T0 + 9000, [200, 100])


def test_trace_defaults_are_the_brokers_max_num_and_every_time_from_zero(tmp_path):
    """max_num 64 (the broker's maxMsgsNumBatch default) and [0, Long.MAX_VALUE]: a message
    stored at 0 ms (time_read 0) is in range."""
    ref = RefIndex(4, 80)
    with IndexFile.create(tmp_path / "f", 4, 80) as f:
        for i in range(70):
            f.put_key("T#k", 100 * i, 0)
            ref.put("T#k", 100 * i, 0)
        t = f.trace_query("T#k")
    assert (t.max_num, t.begin, t.end) == (64, 0, LONG_MAX)
    assert t.results == ref.select("T#k", 64, 0, LONG_MAX) and len(t.results) == 64
    assert t.steps[0].time_read == 0 and t.stop == "max-num"


def test_trace_time_read_wraps_like_a_java_long(tmp_path):
    """begin_timestamp Long.MAX_VALUE - 10, then a message at Long.MIN_VALUE + 5000: the store
    time difference wraps to 5,011 ms (time_diff 5 s), and begin + 5 s wraps past Long.MAX_VALUE."""
    begin = LONG_MAX - 10
    ref = RefIndex(1, 8)
    with IndexFile.create(tmp_path / "f", 1, 8) as f:
        for phy, ts in ((100, begin), (200, -(2**63) + 5000)):
            f.put_key("T#k", phy, ts)
            ref.put("T#k", phy, ts)
        t = f.trace_query("T#k", 64, -(2**63), LONG_MAX)
    assert [s.time_diff for s in t.steps] == [5, 0]
    assert [s.time_read for s in t.steps] == [java_long(begin + 5000), begin] == [-(2**63) + 4989, begin]
    assert t.results == ref.select("T#k", 64, -(2**63), LONG_MAX) == [200, 100]


def test_is_time_matched_on_a_file_whose_times_went_back(tmp_path):
    """Store times went back: begin_timestamp 100 s after end_timestamp. isTimeMatched's three
    clauses (the model's, from IndexFile.java) decide every range around the two times."""
    from tests.formats.test_indexfile import ref_time_matched

    b, e = T0 + 100_000, T0 + 50_000
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        f.put_key("T#k", 100, b)
        f.put_key("T#k", 200, e)
        assert (f.header.begin_timestamp, f.header.end_timestamp) == (b, e)
        points = [e - 1, e, e + 1, b - 1, b, b + 1]
        for lo in points:
            for hi in points:
                assert f.is_time_matched(lo, hi) == ref_time_matched(b, e, lo, hi), (lo - T0, hi - T0)


def test_region_at_names_the_slot_or_entry_holding_a_byte():
    """Geometry(4, 8): header 0..39, slots 40..55 (4 bytes each), entries from 56 (20 each)."""
    from rmqlab.formats.indexfile import Geometry

    g = Geometry(4, 8)
    assert [g.region_at(o) for o in (0, 39, 40, 47, 55, 56, 75, 76, 56 + 20 * 7 + 19)] == [
        "header", "header", "slot[0]", "slot[1]", "slot[3]", "entry[0]", "entry[0]", "entry[1]", "entry[7]"]


def test_batch_defaults_read_every_time_from_zero(tmp_path):
    ref = RefIndex(4, 8)
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        for i in range(3):
            f.put_key("T#k", 100 * i, 0)
            ref.put("T#k", 100 * i, 0)
        got = f.select_phy_offsets_many(["T#k"])
    assert got[0] == ref.select("T#k", 64, 0, LONG_MAX) == [200, 100, 0]


def test_a_walk_into_a_cycle_after_a_result_stops_after_index_num_reads_without_one(tmp_path):
    """One slot: entry 4 (T#a) -> 3 -> 2 -> 1, other keys, and entry 1's prev_index patched to 3:
    a cycle 3 -> 2 -> 1 -> 3 the broker would walk forever. After the result at entry 4, five
    reads (index_num) without a new one end the walk: entries 4, 3, 2, 1, 3, 2. The C walk
    counts the same reads."""
    path = tmp_path / "f"
    with IndexFile.create(path, 1, 5) as f:
        for i, k in enumerate(["T#b", "T#c", "T#d", "T#a"]):
            f.put_key(k, 100 * (i + 1), T0)
    with open(path, "r+b") as fh:
        fh.seek(40 + 4 + 20 * 1 + 16)                      # entry 1's prev_index
        fh.write(struct.pack(">i", 3))
    with IndexFile.open(path, 1, 5, strict=False) as f:
        t = f.trace_query("T#a")
        batch = f.select_phy_offsets_many(["T#a"])
    assert [s.entry for s in t.steps] == [4, 3, 2, 1, 3, 2] and t.stop == "cycle"
    assert t.results == batch[0] == [400] and int(batch.entries_read[0]) == 6


def test_a_slot_pointing_at_entry_index_num_ends_the_walk(tmp_path):
    """strict=False, a header whose index_count (9) exceeds index_num (5): a slot holding 5
    points past the file's last entry. The walk reads nothing there, as the C walk does."""
    path = tmp_path / "f"
    with IndexFile.create(path, 1, 5) as f:
        for i in range(2):
            f.put_key("T#a", 100 * i, T0)
    with open(path, "r+b") as fh:
        fh.seek(36)
        fh.write(struct.pack(">i", 9))                     # index_count
        fh.seek(40)
        fh.write(struct.pack(">i", 5))                     # slot 0 -> entry 5
    with IndexFile.open(path, 1, 5, strict=False) as f:
        t = f.trace_query("T#a")
        assert (t.slot_value, t.steps, t.stop, t.results) == (5, [], "entry-past-end", [])
        assert f.select_phy_offsets("T#a", 64, 0, LONG_MAX) == []


def test_build_with_no_keys_is_the_java_empty_file(tmp_path):
    """Golden case "empty" (IndexFile.java, no putKey, flushed): build_index_file's defaults
    give the same bytes."""
    from pathlib import Path

    golden = Path(__file__).parents[1] / "data" / "golden" / "empty" / "20240610131524079"
    assert build_index_file(tmp_path / "f", [], [], [], hash_slot_num=64, index_num=100) == 0
    assert (tmp_path / "f").read_bytes() == golden.read_bytes()


def rooms_file(tmp_path):
    ref = RefIndex(4, 32)
    with IndexFile.create(tmp_path / "f", 4, 32) as f:
        for i in range(12):
            key = ("T#a", "T#b", "T#c")[i % 3]
            f.put_key(key, 100 * i, T0 + 1000 * i)
            ref.put(key, 100 * i, T0 + 1000 * i)
    return tmp_path / "f", ref


@pytest.mark.parametrize("rooms", [[2, 0, 9], [-3, 2**40, 1], np.array([2, 0, 9]),
                                   np.array([-3, 2**40, 1], dtype=np.int64),
                                   np.array([-(2**40) + 5, 3, 1], dtype=np.int64)])   # no int32 wrap to 5
def test_each_key_walks_with_its_own_room(tmp_path, rooms):
    """rooms replaces max_num key by key (queryOffset hands each file what the shared list has
    left); a negative room returns nothing, one beyond a Java int everything."""
    path, ref = rooms_file(tmp_path)
    keys = ["T#a", "T#b", "T#c"]
    with IndexFile.open(path, 4, 32) as f:
        got = f.select_phy_offsets_many(keys, 64, 0, LONG_MAX, rooms=rooms)
        want = [ref.select(k, max(min(int(r), 2**31 - 1), 0), 0, LONG_MAX) for k, r in zip(keys, rooms)]
        assert [got[i] for i in range(3)] == want
        assert got.entries_read.tolist() == [min(max(int(r), 0), 4) for r in rooms]
        with pytest.raises(ValueError, match="2 rooms for 3 keys"):
            f.select_phy_offsets_many(keys, rooms=list(rooms)[:2])
        hashed = f.select_phy_offsets_many(None, hashes=np.array([stored_hash(k) for k in keys], np.int64),
                                           rooms=rooms)
        assert [hashed[i] for i in range(3)] == want


def test_max_num_outside_a_java_int_is_clamped(tmp_path):
    path, ref = rooms_file(tmp_path)
    with IndexFile.open(path, 4, 32) as f:
        for max_num, want in ((2**40, 4), (2**31 - 1, 4), (-(2**40), 0), (-1, 0), (0, 0), (1, 1)):
            assert f.select_phy_offsets("T#a", max_num, 0, LONG_MAX) == ref.select("T#a", max(want, 0), 0, LONG_MAX)
            assert f.select_phy_offsets_many(["T#a"], max_num)[0] == ref.select("T#a", max(want, 0), 0, LONG_MAX)


@pytest.mark.parametrize("name, begin, end", [("begin", -(2**63) - 1, 0), ("end", 0, 2**63)])
def test_a_time_bound_outside_a_java_long_is_refused_by_name(tmp_path, name, begin, end):
    path, _ = rooms_file(tmp_path)
    value = begin if name == "begin" else end
    with IndexFile.open(path, 4, 32) as f:
        for call in (lambda: f.select_phy_offsets("T#a", 64, begin, end),
                     lambda: f.select_phy_offsets_many(["T#a"], 64, begin, end)):
            with pytest.raises(ValueError) as e:
                call()
            assert str(e.value) == f"{name}={value} does not fit in a Java long (signed 64-bit)"


def test_problems_each_named_with_its_count_and_place(tmp_path):
    """A file written here with struct (2 slots, 8 entries, index_count 7), entries
    (key_hash, phy, time_diff, prev): 1 (2, 100, 0, 0), 2 (3, 200, 0, 0), 3 (4, 300, -1, 1),
    4 (-5, 400, 0, 2), 5 (7, 500, 0, 5), 6 (9, 600, 0, 4); slot 0 -> 3, slot 1 -> 7 (= index_count).
    Entries start at byte 48 (40 + 2 x 4), 20 bytes each."""
    entries = [(0, 0, 0, 0), (2, 100, 0, 0), (3, 200, 0, 0), (4, 300, -1, 1), (-5, 400, 0, 2), (7, 500, 0, 5),
               (9, 600, 0, 4), (0, 0, 0, 0)]
    data = struct.pack(HEADER_FMT, T0, T0, 100, 600, 2, 7) + struct.pack(">ii", 3, 7) + \
        b"".join(struct.pack(">iqii", *e) for e in entries)
    path = tmp_path / "f"
    path.write_bytes(data)
    with IndexFile.open(path, 2, 8, strict=False) as f:
        got = [(p.offset, p.field, p.reason) for p in f.problems()]
    assert got == [
        (44, "slot[1]", "slot value outside 0..6 (1 such)"),
        (48 + 20 * 4, "entry.key_hash", "negative key_hash (1 such)"),
        (48 + 20 * 3 + 12, "entry.time_diff", "negative time_diff (1 such)"),
        (48 + 20 * 5 + 16, "entry.prev_index",
         "prev_index not older than its entry (out of range, self-loop or cycle) (1 such)"),
        (48 + 20 * 4 + 16, "entry.prev_index", "prev_index links entries of different slots (2 such)"),
        (48 + 20 * 5, "entry", "entry not reachable from any slot (2 such)")]


def corrupt_file(path, hsn, index_num, index_count, hash_slot_count, slots, entries):
    """A file written with struct: header, slots, entries 1.. (entry 0 and the rest zero)."""
    rows = [(0, 0, 0, 0)] + entries + [(0, 0, 0, 0)] * (index_num - 1 - len(entries))
    path.write_bytes(struct.pack(HEADER_FMT, T0, T0, 100, 100 * len(entries), hash_slot_count, index_count)
                     + b"".join(struct.pack(">i", s) for s in slots)
                     + b"".join(struct.pack(">iqii", *e) for e in rows))
    return path


def test_problems_of_slots_and_references(tmp_path):
    """2 slots, entries 1 (hash 2, prev 0), 2 (4, prev 1), 3 (6, prev 1), 4 (3, prev 0); slot 0 -> 3,
    slot 1 -> 2 (hashed to slot 0). Entry 1 has two references, entry 4 none, and two slots are
    occupied where the header counts 3 (every put would give 4)."""
    from rmqlab.formats.indexfile import EVERY_PUT

    path = corrupt_file(tmp_path / "f", 2, 6, 5, 3, [3, 2],
                        [(2, 100, 0, 0), (4, 200, 0, 1), (6, 300, 0, 1), (3, 400, 0, 0)])
    with IndexFile.open(path, 2, 6, strict=False) as f:
        got = [(p.offset, p.field, p.reason) for p in f.problems()]
    common = [(44, "slot", "slot points at an entry hashed to another slot (1 such)"),
              (48 + 20, "entry", "entry referenced by more than one slot/prev_index (1 such)"),
              (48 + 80, "entry", "entry not reachable from any slot (1 such)")]
    assert got == common + [(32, "header.hash_slot_count",
                             "hash_slot_count 3 but the slot-count rule (>= 4.7.1: occupied slots) gives 2")]
    with IndexFile.open(path, 2, 6, strict=False, slot_count_rule=EVERY_PUT) as f:
        got = [(p.offset, p.field, p.reason) for p in f.problems()]
    assert got == common + [(32, "header.hash_slot_count",
                             "hash_slot_count 3 but the slot-count rule (<= 4.7.0: puts) gives 4")]


def test_a_lone_entry_no_slot_points_at_is_unreachable(tmp_path):
    path = corrupt_file(tmp_path / "f", 2, 4, 2, 0, [0, 0], [(2, 100, 0, 0)])
    with IndexFile.open(path, 2, 4, strict=False) as f:
        assert [(p.offset, p.field, p.reason) for p in f.problems()] == [
            (48 + 20, "entry", "entry not reachable from any slot (1 such)")]


def _ref_after(keys, phys, times, hsn=4, num=16):
    ref = RefIndex(hsn, num)
    for k, p, t in zip(keys, phys, times):
        ref.put(k, int(p), int(t))
    return ref.to_bytes()


@pytest.mark.parametrize("phys", [
    np.array([100, 2**40, 300], dtype=object),           # Python ints, as a list of mixed sizes gives
    np.array([1, LONG_MAX, 3], dtype=np.uint64),          # unsigned, up to Long.MAX_VALUE itself
    np.array([100, 200, 300], dtype=np.uint32),
    np.array([100, -200, 300], dtype=np.int32),
    [100, 200, 300],
], ids=["object", "uint64", "uint32", "int32", "list"])
def test_put_keys_takes_every_integer_array_a_java_long_holds(tmp_path, phys):
    """The same bytes as the model's puts, whatever integer type holds the offsets and times."""
    keys = ["T#a", "T#b", "T#a"]
    times = np.array([T0, T0 + 1000, T0 + 2000], dtype=type(phys[0]) if isinstance(phys, np.ndarray)
                     and phys.dtype == object else None)
    if isinstance(phys, np.ndarray) and phys.dtype.kind in "iu" and phys.dtype.itemsize == 4:
        times = np.array([5, 1000, 2000], dtype=phys.dtype)   # a 32-bit array of times too
    with IndexFile.create(tmp_path / "f", 4, 16) as f:
        assert f.put_keys(keys, phys, times) == 3
    assert (tmp_path / "f").read_bytes() == _ref_after(keys, list(phys), list(times))


@pytest.mark.parametrize("field", ["phy_offsets", "store_timestamps"])
@pytest.mark.parametrize("bad", [np.array([1, 2**70], dtype=object), np.array([1, 2**64 - 1], dtype=np.uint64)],
                         ids=["object", "uint64"])
def test_put_keys_refuses_a_value_beyond_a_java_long_naming_the_field(tmp_path, field, bad):
    good = np.array([1, 2], dtype=np.int64)
    args = {"phy_offsets": good, "store_timestamps": good, field: bad}
    with IndexFile.create(tmp_path / "f", 4, 16) as f:
        with pytest.raises(ValueError) as e:
            f.put_keys(["T#a", "T#b"], **args)
        assert str(e.value).startswith(f"{field}") and "does not fit in a Java long" in str(e.value)
        assert f.header.index_count == 1
    assert (tmp_path / "f").read_bytes() == RefIndex(4, 16).to_bytes()


@pytest.mark.parametrize("field", ["phy_offsets", "store_timestamps"])
@pytest.mark.parametrize("bad", [np.array([1, "x"], dtype=object), np.array([1, 1.5], dtype=object),
                                 np.array([1.0, 2.0])], ids=["text", "float-object", "float"])
def test_put_keys_refuses_what_is_not_integers_naming_the_field(tmp_path, field, bad):
    """A Java long field takes integers only: a float among Python objects is refused as a
    float array is, not truncated, and text too, with the field named."""
    args = {"phy_offsets": [1, 2], "store_timestamps": [1, 2], field: bad}
    with IndexFile.create(tmp_path / "f", 4, 16) as f:
        with pytest.raises(TypeError, match=f"^{field} must hold integers"):
            f.put_keys(["T#a", "T#b"], **args)
        assert f.header.index_count == 1


def test_put_keys_with_index_hashes_of_any_integer_type(tmp_path):
    """Hashes given as int64 (index hashes, as index_hash_many gives them in int32) put the same
    entries as the keys would."""
    keys = ["T#a", "T#b", "T#c"]
    hashes = np.array([stored_hash(k) for k in keys], dtype=np.int64)
    with IndexFile.create(tmp_path / "f", 4, 16) as f:
        assert f.put_keys(None, [100, 200, 300], [T0, T0, T0 + 5000], hashes=hashes) == 3
    assert (tmp_path / "f").read_bytes() == _ref_after(keys, [100, 200, 300], [T0, T0, T0 + 5000])


def test_a_failed_streamed_put_raises_the_os_error_for_the_file(tmp_path):
    """A batch of 100,000 keys is written through the descriptor; the file cut to its header
    underneath (the slots unreadable) fails that with EIO, named with the file's path."""
    import errno
    import os

    n = 100_000
    path = tmp_path / "f"
    f = IndexFile.create(path, 4, n + 1)
    try:
        os.truncate(path, 40)
        with pytest.raises(OSError) as e:
            f.put_keys(None, np.arange(n), np.full(n, T0), hashes=np.zeros(n, dtype=np.int32))
        assert (e.value.errno, e.value.strerror, e.value.filename) == (errno.EIO, os.strerror(errno.EIO), str(path))
    finally:
        f.close(sync=False)


def test_geometry_errors_name_the_file_size_and_the_count_that_fits(tmp_path):
    """Sizes worked out here from the layout: 40-byte header, 4-byte slots, 20-byte entries."""
    from rmqlab.errors import GeometryError, TruncatedFileError
    from rmqlab.formats.indexfile import Geometry

    p = str(tmp_path / "f")
    size = 40 + 4 * 4 + 20 * 10                       # hash_slot_num 4, index_num 10
    with pytest.raises(GeometryError) as e:           # both counts given, the file longer
        Geometry.infer(size, 4, 8, path=p)
    assert str(e.value).endswith(f"need 40 + 4*4 + 20*8 = {40 + 16 + 160} bytes; with hash_slot_num=4 the "
                                 "file holds index_num=10 (or it was cut on an entry boundary)")
    assert (e.value.field, e.value.offset) == ("file size", size)
    with pytest.raises(GeometryError) as e:           # 7 bytes past an entry boundary: no count fits
        Geometry.infer(size + 7, 4, 8, path=p)
    assert str(e.value).endswith(f"= {40 + 16 + 160} bytes") and e.value.field == "file size"
    with pytest.raises(GeometryError) as e:
        Geometry.infer(size + 7, 4, path=p)
    assert e.value.field == "file size"
    with pytest.raises(GeometryError) as e:
        Geometry.infer(size + 2, index_num=10, path=p)
    assert e.value.field == "file size"
    with pytest.raises(GeometryError) as e:           # room for the entries and not one slot
        Geometry.infer(40 + 20 * 10, index_num=10, path=p)
    assert e.value.field == "file size" and not isinstance(e.value, TruncatedFileError)
    assert Geometry.infer(size, index_num=10) == Geometry(4, 10) == Geometry.infer(size, 4)


def test_a_file_of_exactly_the_header_is_no_truncated_header():
    """40 bytes hold the whole header: the error is the size (no room for slots and entries);
    39 bytes end inside the header."""
    from rmqlab.errors import GeometryError, TruncatedFileError
    from rmqlab.formats.indexfile import Geometry

    for counts in ((), (4,)):
        with pytest.raises(GeometryError) as e:
            Geometry.infer(40, *counts)
        assert not isinstance(e.value, TruncatedFileError) and e.value.field == "file size"
        with pytest.raises(TruncatedFileError) as e:
            Geometry.infer(39, *counts)
        assert e.value.field == "header"


def test_slots_counted_in_a_file_without_entries_are_a_header_problem(tmp_path):
    """index_count 1 (no entry written) with hash_slot_count 1: no put happened to occupy a slot."""
    path = corrupt_file(tmp_path / "f", 2, 4, 1, 1, [0, 0], [])
    with IndexFile.open(path, 2, 4, strict=False) as f:
        assert [(p.offset, p.field, p.reason) for p in f.problems()] == [
            (32, "header.hash_slot_count",
             "hash_slot_count 1 is outside 0..index_count-1 (0); each put adds at most one"),
            (32, "header.hash_slot_count",
             "hash_slot_count 1 but the slot-count rule (>= 4.7.1: occupied slots) gives 0")]


@pytest.mark.parametrize("field", ["end_phy_offset", "end_timestamp"])
def test_create_names_a_start_value_beyond_a_java_long(tmp_path, field):
    with pytest.raises(ValueError) as e:
        IndexFile.create(tmp_path / "f", 4, 8, **{field: 2**63})
    assert str(e.value) == f"{field}={2**63} does not fit in a Java long (signed 64-bit)"


@pytest.mark.parametrize("field", ["phy_offset", "store_timestamp"])
def test_put_key_names_a_value_beyond_a_java_long(tmp_path, field):
    args = {"phy_offset": 100, "store_timestamp": T0, field: -(2**63) - 1}
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        with pytest.raises(ValueError) as e:
            f.put_key("T#a", **args)
        assert str(e.value) == f"{field}={-(2**63) - 1} does not fit in a Java long (signed 64-bit)"
        assert f.header.index_count == 1


def test_geometry_counts_are_positive_java_ints():
    """maxHashSlotNum and maxIndexNum are Java ints: 1..Integer.MAX_VALUE, no bool, no float."""
    from rmqlab.formats.indexfile import Geometry

    assert (Geometry(4, INT_MAX).index_num, Geometry(INT_MAX, 4).hash_slot_num) == (INT_MAX, INT_MAX)
    assert Geometry(np.int32(4), np.int64(8)) == Geometry(4, 8)
    for bad in (INT_MAX + 1, 0, -1, True, 4.0, "4"):
        for counts in ((bad, 8), (8, bad)):
            with pytest.raises(ValueError):
                Geometry(*counts)


@pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="reads the kernel's /proc/self/fdinfo")
def test_a_file_opened_for_reading_is_not_opened_for_writing(tmp_path):
    """The kernel's open flags of every descriptor on the file (O_ACCMODE of /proc's fdinfo):
    read-only unless writable=True asks otherwise, so an input file is never open for writes."""
    import os

    path = tmp_path / "f"
    build_index_file(path, ["T#a"], [100], [T0], hash_slot_num=4, index_num=8)

    def access_modes():
        modes = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                    flags = Path(f"/proc/self/fdinfo/{fd}").read_text().split("flags:")[1].split()[0]
                    modes.append(int(flags, 8) & os.O_ACCMODE)
            except (FileNotFoundError, IndexError):
                pass
        return modes

    with IndexFile.open(path, 4, 8) as f:
        assert f.select_phy_offsets("T#a", 64, 0, LONG_MAX) == [100]
        assert set(access_modes()) == {os.O_RDONLY}      # the file's and the map's own (mmap dups it)
    with IndexFile.open(path, 4, 8, writable=True):
        assert set(access_modes()) == {os.O_RDWR}
