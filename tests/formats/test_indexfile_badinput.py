"""Bad index files: every one gives a typed rmqlab error naming path, byte offset and field,
or (queries on a file opened with strict=False) a bounded walk that names the anomaly.

Corrupt files are made in the test from the golden `collisions` case (written by RocketMQ's
Java IndexFile). Expected offsets come from the layout: header 40 bytes, slots 4 bytes each,
entries 20 bytes each (key_hash +0, phy_offset +4, time_diff +12, prev_index +16).
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reference_model import stored_hash

from rmqlab import (
    CorruptIndexError,
    GeometryError,
    IndexFile,
    RmqlabError,
    TruncatedFileError,
    read_header,
)
from rmqlab.errors import FormatError

LONG_MAX = 2**63 - 1
GOLDEN = Path(__file__).parents[1] / "data" / "golden"
CASE = json.loads((GOLDEN / "collisions" / "case.json").read_text(encoding="utf-8"))
BASE_BYTES = (GOLDEN / "collisions" / CASE["fileName"]).read_bytes()
HSN, NUM = CASE["hashSlotNum"], CASE["indexNum"]
COUNT = CASE["header"]["indexCount"]
ENTRIES = 40 + 4 * HSN
SIZE = ENTRIES + 20 * NUM
PUT_KEYS = sorted({p["key"] for p in CASE["puts"]})


def slot_off(i: int) -> int:
    return 40 + 4 * i


def entry_off(n: int, field: str = "key_hash") -> int:
    return ENTRIES + 20 * n + {"key_hash": 0, "phy_offset": 4, "time_diff": 12, "prev_index": 16}[field]


def raw_chain(data: bytes, slot: int) -> list[int]:
    out, cur = [], struct.unpack_from(">i", data, slot_off(slot))[0]
    while cur > 0:
        out.append(cur)
        cur = struct.unpack_from(">i", data, entry_off(cur, "prev_index"))[0]
    return out


def entry_tuple(data: bytes, n: int):
    return struct.unpack_from(">iqii", data, entry_off(n))


# the longest chain of the golden file: head -> p1 -> p2 -> ...
SLOT = max(range(HSN), key=lambda s: len(raw_chain(BASE_BYTES, s)))
CHAIN = raw_chain(BASE_BYTES, SLOT)
HEAD, P1, P2 = CHAIN[:3]
HEAD_KEY = next(k for k in PUT_KEYS if stored_hash(k) == entry_tuple(BASE_BYTES, HEAD)[0])
P1_KEY = next(k for k in PUT_KEYS if stored_hash(k) == entry_tuple(BASE_BYTES, P1)[0])
CHAIN_HASHES = {entry_tuple(BASE_BYTES, n)[0] for n in CHAIN}
# a key of the same slot whose hash matches no entry: its walk reads the chain, returns nothing
STRANGER = next(k for k in (f"X#{i}" for i in range(10**6))
                if stored_hash(k) % HSN == SLOT and stored_hash(k) not in CHAIN_HASHES)


def test_base_file_is_what_the_tests_assume():
    assert len(BASE_BYTES) == SIZE and struct.unpack_from(">i", BASE_BYTES, 36)[0] == COUNT
    assert len(CHAIN) >= 3 and HEAD > P1 > P2
    assert entry_tuple(BASE_BYTES, HEAD)[0] != entry_tuple(BASE_BYTES, P1)[0]


def corrupt(tmp_path: Path, edits=(), size: int | None = None, name="corrupt") -> Path:
    b = bytearray(BASE_BYTES)
    for off, fmt, value in edits:
        struct.pack_into(fmt, b, off, value)
    if size is not None:
        b = b[:size] if size <= len(b) else b + bytes(size - len(b))
    path = tmp_path / name
    path.write_bytes(bytes(b))
    return path


def assert_names(err: RmqlabError, path: Path, offset: int, field: str | None = None):
    assert err.path == str(path)
    assert err.offset == offset
    if field is not None:
        assert err.field == field
    msg = str(err)
    assert str(path) in msg and f"offset {offset}" in msg and err.field in msg


# ------------------------------------------------------------------------------- sizes


@pytest.mark.parametrize("size", [SIZE + 1, SIZE + 20, SIZE + 4 * 1000])
def test_wrong_size_with_geometry(tmp_path, size):
    path = corrupt(tmp_path, size=size)
    with pytest.raises(GeometryError) as ei:
        IndexFile.open(path, HSN, NUM)
    assert_names(ei.value, path, size, "file size")
    assert str(SIZE) in str(ei.value)             # says what size the geometry needs


def test_wrong_geometry_for_the_file(tmp_path):
    path = corrupt(tmp_path)
    for hsn, num in ((HSN, NUM + 1), (HSN + 5, NUM)):
        with pytest.raises(GeometryError) as ei:
            IndexFile.open(path, hsn, num)
        assert_names(ei.value, path, SIZE, "file size")


def test_non_default_size_without_geometry(tmp_path):
    path = corrupt(tmp_path)
    with pytest.raises(GeometryError) as ei:
        IndexFile.open(path)
    assert_names(ei.value, path, SIZE, "file size")
    assert "hash_slot_num" in str(ei.value) and "index_num" in str(ei.value)


@pytest.mark.parametrize("size", [0, 1, 39])
def test_shorter_than_header(tmp_path, size):
    path = corrupt(tmp_path, size=size)
    with pytest.raises(TruncatedFileError) as ei:
        read_header(path)
    assert_names(ei.value, path, size, "header")
    with pytest.raises(TruncatedFileError) as ei:
        IndexFile.open(path)
    assert_names(ei.value, path, size, "header")
    with pytest.raises(TruncatedFileError) as ei:
        IndexFile.open(path, hash_slot_num=HSN)
    assert_names(ei.value, path, size, "header")


@pytest.mark.parametrize("size", [39])
def test_shorter_than_header_with_full_geometry(tmp_path, size):
    """The same 39-byte file is a TruncatedFileError whether or not the geometry is passed."""
    path = corrupt(tmp_path, size=size)
    with pytest.raises(TruncatedFileError) as ei:
        IndexFile.open(path, HSN, NUM)
    assert_names(ei.value, path, size, "header")


@pytest.mark.parametrize("size,region", [
    (40, "slot"), (40 + 4 * 10 + 2, "slot"), (ENTRIES, "entr"), (SIZE - 1, "entr"),
])
def test_truncated_inside_slots_or_entries(tmp_path, size, region):
    """A file cut short of the geometry it was created with ends before a structure it must
    contain: TruncatedFileError at the end of the file, naming the region that is cut."""
    path = corrupt(tmp_path, size=size)
    with pytest.raises(TruncatedFileError) as ei:
        IndexFile.open(path, HSN, NUM)
    assert_names(ei.value, path, size)
    assert ei.value.field.startswith(region), ei.value.field


@pytest.mark.parametrize("size", [40 + 4 * 10 + 2, ENTRIES + 20 * 7 + 3])
def test_truncated_file_is_a_format_error(tmp_path, size):
    # whatever class is chosen, a cut file must be a typed format error naming path and offset
    path = corrupt(tmp_path, size=size)
    with pytest.raises(FormatError) as ei:
        IndexFile.open(path, HSN, NUM)
    assert ei.value.path == str(path) and ei.value.offset == size and ei.value.field


# ------------------------------------------------------------------------------ header


@pytest.mark.parametrize("value", [NUM + 1, NUM + 1000, 2**31 - 1])
def test_index_count_beyond_index_num(tmp_path, value):
    path = corrupt(tmp_path, [(36, ">i", value)])
    with pytest.raises(CorruptIndexError) as ei:
        IndexFile.open(path, HSN, NUM)
    assert_names(ei.value, path, 36, "header.index_count")
    with IndexFile.open(path, HSN, NUM, strict=False) as f:      # still readable, flagged
        assert any((p.offset, p.field) == (36, "header.index_count") for p in f.problems())
        with pytest.raises(CorruptIndexError):
            f.check()


def test_index_count_equal_to_index_num_is_a_full_file(tmp_path):
    path = corrupt(tmp_path, [(36, ">i", NUM)])
    with IndexFile.open(path, HSN, NUM) as f:
        assert f.is_write_full


@pytest.mark.parametrize("value", [-1, -(2**31)])
def test_negative_index_count(tmp_path, value):
    path = corrupt(tmp_path, [(36, ">i", value)])
    with pytest.raises(CorruptIndexError) as ei:
        IndexFile.open(path, HSN, NUM)
    assert_names(ei.value, path, 36, "header.index_count")
    with IndexFile.open(path, HSN, NUM, strict=False) as f:
        assert f.header.index_count == 1          # loaded as the broker loads it
        assert f.select_phy_offsets(HEAD_KEY, 64, 0, LONG_MAX) == []


@pytest.mark.parametrize("value", [-1, COUNT, COUNT + 7, 2**31 - 1])
def test_impossible_hash_slot_count(tmp_path, value):
    path = corrupt(tmp_path, [(32, ">i", value)])
    with pytest.raises(CorruptIndexError) as ei:
        IndexFile.open(path, HSN, NUM)
    assert_names(ei.value, path, 32, "header.hash_slot_count")


def test_wrong_but_possible_hash_slot_count_found_by_check(tmp_path):
    good = CASE["header"]["hashSlotCount"]
    path = corrupt(tmp_path, [(32, ">i", good + 1)])
    with IndexFile.open(path, HSN, NUM) as f:
        with pytest.raises(CorruptIndexError) as ei:
            f.check()
    assert_names(ei.value, path, 32, "header.hash_slot_count")


# --------------------------------------------------------------------- slots and chains


def _walk(path: Path, key: str, max_num=64, begin=0, end=LONG_MAX):
    with IndexFile.open(path, HSN, NUM, strict=False) as f:
        t = f.trace_query(key, max_num, begin, end)
        assert f.select_phy_offsets(key, max_num, begin, end) == t.results
        batch = f.select_phy_offsets_many([key], max_num, begin, end)
        assert batch[0] == t.results
        return t, int(batch.entries_read[0])


@pytest.mark.parametrize("value", [COUNT + 1, NUM + 3, 2**31 - 1, -2])
def test_slot_out_of_range(tmp_path, value):
    path = corrupt(tmp_path, [(slot_off(SLOT), ">i", value)])
    with IndexFile.open(path, HSN, NUM) as f:        # the header is fine: strict open works
        with pytest.raises(CorruptIndexError) as ei:
            f.check()
    assert_names(ei.value, path, slot_off(SLOT), f"slot[{SLOT}]")
    t, read = _walk(path, HEAD_KEY)
    assert (t.stop, t.results, t.steps, read) == ("empty-slot", [], [], 0)   # broker: empty slot


@pytest.mark.parametrize("value", [COUNT + 1, COUNT + 50, 2**31 - 1])
def test_prev_out_of_range(tmp_path, value):
    path = corrupt(tmp_path, [(entry_off(HEAD, "prev_index"), ">i", value)])
    with IndexFile.open(path, HSN, NUM) as f:
        with pytest.raises(CorruptIndexError) as ei:
            f.check()
    assert_names(ei.value, path, entry_off(HEAD, "prev_index"), "entry.prev_index")
    t, read = _walk(path, HEAD_KEY)
    assert t.stop == "prev-out-of-range" and [s.entry for s in t.steps] == [HEAD] and read == 1
    assert t.results == [entry_tuple(BASE_BYTES, HEAD)[1]]


def test_negative_prev_ends_the_chain(tmp_path):
    path = corrupt(tmp_path, [(entry_off(HEAD, "prev_index"), ">i", -3)])
    with IndexFile.open(path, HSN, NUM) as f:
        with pytest.raises(CorruptIndexError) as ei:
            f.check()
    assert_names(ei.value, path, entry_off(HEAD, "prev_index"), "entry.prev_index")
    t, _ = _walk(path, HEAD_KEY)
    assert t.stop == "end-of-chain" and [s.entry for s in t.steps] == [HEAD]


def test_two_cycle(tmp_path):
    # head -> p1 -> head -> ...
    path = corrupt(tmp_path, [(entry_off(P1, "prev_index"), ">i", HEAD)])
    with IndexFile.open(path, HSN, NUM) as f:
        with pytest.raises(CorruptIndexError) as ei:
            f.check()
    assert_names(ei.value, path, entry_off(P1, "prev_index"), "entry.prev_index")
    t, read = _walk(path, STRANGER)
    assert t.stop == "cycle" and t.results == []
    assert [s.entry for s in t.steps[:4]] == [HEAD, P1, HEAD, P1]
    assert len(t.steps) <= NUM and read == len(t.steps)


def test_self_loop(tmp_path):
    path = corrupt(tmp_path, [(entry_off(HEAD, "prev_index"), ">i", HEAD)])
    with IndexFile.open(path, HSN, NUM) as f:
        with pytest.raises(CorruptIndexError) as ei:
            f.check()
    assert_names(ei.value, path, entry_off(HEAD, "prev_index"), "entry.prev_index")
    t, read = _walk(path, HEAD_KEY)
    assert (t.stop, [s.entry for s in t.steps], read) == ("self-loop", [HEAD], 1)
    assert t.results == [entry_tuple(BASE_BYTES, HEAD)[1]]


def test_negative_time_diff(tmp_path):
    path = corrupt(tmp_path, [(entry_off(P1, "time_diff"), ">i", -5)])
    with IndexFile.open(path, HSN, NUM) as f:
        with pytest.raises(CorruptIndexError) as ei:
            f.check()
    assert_names(ei.value, path, entry_off(P1, "time_diff"), "entry.time_diff")
    t, _ = _walk(path, P1_KEY)
    assert t.stop == "negative-time-diff"
    assert [s.entry for s in t.steps][:1] == [HEAD]


def test_negative_key_hash(tmp_path):
    path = corrupt(tmp_path, [(entry_off(P2, "key_hash"), ">i", -7)])
    with IndexFile.open(path, HSN, NUM) as f:
        with pytest.raises(CorruptIndexError) as ei:
            f.check()
    assert_names(ei.value, path, entry_off(P2, "key_hash"), "entry.key_hash")


def test_walk_bound_follows_the_file_not_a_corrupt_header(tmp_path):
    """strict=False with a header index_count far beyond index_num and a cycle the broker never
    leaves: the walk must stay bounded by the file (at most index_num distinct entries exist),
    not by the corrupt header count (2^31-1 would mean billions of reads and trace steps)."""
    path = corrupt(tmp_path, [(36, ">i", 50_000), (entry_off(P1, "prev_index"), ">i", HEAD)])
    t, read = _walk(path, STRANGER)
    assert t.stop == "cycle" and t.results == []
    assert len(t.steps) <= NUM, len(t.steps)
    assert read <= NUM, read


# ------------------------------------------------------------------------------------ fuzz

FUZZ_KEYS = PUT_KEYS + [STRANGER, "never-put", ""]

edits_st = st.lists(st.one_of(
    st.tuples(st.just("byte"), st.integers(0, SIZE - 1), st.integers(0, 255)),
    # structural writes: a slot, or an entry's prev_index / time_diff, set near the valid range
    st.tuples(st.just("slot"), st.integers(0, HSN - 1),
              st.one_of(st.integers(-2, COUNT + 3), st.sampled_from([COUNT, NUM, 2**31 - 1]))),
    st.tuples(st.just("prev"), st.one_of(st.integers(1, COUNT - 1), st.integers(0, NUM - 1)),
              st.one_of(st.integers(-2, COUNT + 3), st.sampled_from([COUNT, COUNT + 1, 2**31 - 1]))),
    st.tuples(st.just("time"), st.integers(0, COUNT), st.sampled_from([-1, -(2**31), 0, 2**31 - 1])),
    st.tuples(st.just("count"), st.just(0), st.integers(-3, 3 * NUM)),
), max_size=8)


@settings(deadline=None, max_examples=250,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(edits=edits_st,
       cut=st.one_of(st.none(), st.integers(0, SIZE - 1), st.integers(SIZE + 1, SIZE + 45)),
       strict=st.booleans(),
       geometry=st.sampled_from(["both", "slots", "entries", "none"]),
       queries=st.lists(st.tuples(st.sampled_from(FUZZ_KEYS), st.integers(-2, 70),
                                  st.sampled_from([0, CASE["header"]["beginTimestamp"] + 5000, LONG_MAX]),
                                  st.sampled_from([0, CASE["header"]["endTimestamp"] - 3000, LONG_MAX])),
                        min_size=1, max_size=6))
# a prev_index edit that closes a cycle holding few matches: each match restarts the cycle bound
@example(edits=[("prev", 24, 34)], cut=None, strict=False, geometry="both",
         queries=[("TopicTest#AaAa", 18, 0, 1_718_003_737_400)])
def test_fuzz_corrupt_golden_file(tmp_path, edits, cut, strict, geometry, queries):
    b = bytearray(BASE_BYTES)
    for kind, where, value in edits:
        if kind == "byte":
            # A random header index_count on a strict=False open would make walks as long as
            # the bad count (see test_walk_bound_follows_the_file_not_a_corrupt_header); the
            # "count" edit below sets it within a bounded range instead.
            if not strict and 36 <= where < 40:
                continue
            b[where] = value
        elif kind == "slot":
            struct.pack_into(">i", b, slot_off(where), value)
        elif kind == "prev":
            struct.pack_into(">i", b, entry_off(where, "prev_index"), value)
        elif kind == "time":
            struct.pack_into(">i", b, entry_off(where, "time_diff"), value)
        else:
            struct.pack_into(">i", b, 36, value)
    if cut is not None:
        b = b[:cut] if cut < len(b) else b + bytes(cut - len(b))
    path = tmp_path / "fuzz"
    path.write_bytes(bytes(b))
    kwargs = {"both": dict(hash_slot_num=HSN, index_num=NUM), "slots": dict(hash_slot_num=HSN),
              "entries": dict(index_num=NUM), "none": {}}[geometry]
    try:
        f = IndexFile.open(path, strict=strict, **kwargs)
    except RmqlabError as e:
        assert e.path == str(path) and e.offset is not None and e.field
        return
    with f:
        for p in f.problems():
            assert isinstance(p, CorruptIndexError)
            assert p.path == str(path) and 0 <= p.offset < len(b) and p.field
        try:
            f.check()
        except CorruptIndexError:
            pass
        count, num = f.header.index_count, f.geometry.index_num
        for key, max_num, begin, end in queries:
            got = f.select_phy_offsets(key, max_num, begin, end)
            t = f.trace_query(key, max_num, begin, end)
            assert t.results == got
            # a walk ends after max_num results, or after a full file's reads with no result (a
            # cycle the broker would never leave): at most max(count, num) reads between results
            assert len(t.steps) <= (max(max_num, 0) + 1) * (max(count, num) + 1)
            assert len(got) <= max(max_num, 0)
        for max_num, begin, end in {q[1:] for q in queries}:
            batch = f.select_phy_offsets_many(FUZZ_KEYS, max_num, begin, end)
            for i, key in enumerate(FUZZ_KEYS):
                assert batch[i] == f.select_phy_offsets(key, max_num, begin, end)
