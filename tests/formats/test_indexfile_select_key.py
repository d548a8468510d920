"""IndexFile.select_phy_offsets is one C call (rmqlab._indexcore.select_key): the key's hash, the
argument checks and the walk. Held here to what it replaced, on random and corrupt files: the
Python walk (trace_query), the C walk with Python-side checks (select_one, as the method called
it before), and the Python checks' own errors (index_hash, check_long, and the clamp restated
below as it was written in Python)."""
from __future__ import annotations

import gc
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_model import stored_hash

import rmqlab._indexcore as _indexcore
from rmqlab.formats.indexfile import IndexFile, _clamp_max_num
from rmqlab.jvm.hashcode import index_hash
from rmqlab.jvm.longs import INT_MAX, LONG_MAX, LONG_MIN, check_long

T0 = 1_718_000_000_000
# Keys whose hashes take every branch of the C hash: empty, ASCII of each length class, Latin-1,
# UCS-2 (lone surrogates included, hashed as the units they are), astral (surrogate pairs),
# equal hashCodes ("Aa"/"BB") and a hashCode of Integer.MIN_VALUE (stored as 0).
SPECIAL_KEYS = ["", "T#a", "Aa", "BB", "polygenelubricants", "T#" + "k" * 17, "T#" + "x" * 40,
                "T#caf\u00e9", "T#\u00ff\u00fe", "T#\u4e2d\u6587", "T#\ud800", "T#\udfff\ud800x",
                "T#\U0001f600", "\U0010ffff" * 5]
MAX_NUM_EDGES = [0, -1, -2, -(2**31), -(2**40), -(2**70), 1, 2, 3, 64, INT_MAX - 1, INT_MAX, 2**31, 2**40, 2**70]
LONG_EDGES = [LONG_MIN, LONG_MIN + 1, -1, 0, 1, T0, T0 + 5_000, LONG_MAX - 1, LONG_MAX]


def python_clamp(max_num):
    """The clamp as IndexFile had it in Python before the rule moved to C."""
    max_num = int(max_num)
    return INT_MAX if max_num > INT_MAX else -1 if max_num < 0 else max_num


def ident(value) -> str:
    """A test id: the value's repr, cut short (or only its type where the repr itself raises)."""
    try:
        return repr(value)[:40]
    except ValueError:  # an int beyond sys.get_int_max_str_digits()
        return type(value).__name__


def outcome(call):
    """("ok", value) or (exception type, message): two ways of asking agree on both."""
    try:
        return "ok", call()
    except Exception as e:  # noqa: BLE001 - every error, its type and message, is compared
        return type(e), str(e)


def old_select(f: IndexFile, key, max_num, begin, end):
    """select_phy_offsets as it was: Python checks in this order, then the C walk."""
    f._require_open()
    return _indexcore.select_one(f._mm, f.geometry.hash_slot_num, f.geometry.index_num, f._h["index_count"],
                                 f._h["begin_timestamp"], index_hash(key), python_clamp(max_num),
                                 check_long("begin", begin), check_long("end", end))


keys = st.one_of(st.sampled_from(SPECIAL_KEYS), st.text(max_size=12),
                 st.text(st.characters(categories=["Cs"]), max_size=4),
                 st.text(st.characters(min_codepoint=0x10000), max_size=4))
max_nums = st.one_of(st.sampled_from(MAX_NUM_EDGES), st.integers(-5, 70), st.integers(-(2**80), 2**80))
longs = st.one_of(st.sampled_from(LONG_EDGES), st.integers(T0 - 10_000, T0 + 60_000),
                  st.integers(LONG_MIN, LONG_MAX))
bounds = st.one_of(longs, st.sampled_from([LONG_MIN - 1, LONG_MAX + 1, -(2**100), 2**100]))
# (region, number, field, value): a 4-byte big-endian int written over the file after the puts.
# Small values make slots and prev_index point at real entries (cycles, self-loops, entries past
# the written ones or past the file); time_diff < 0 and foreign hashes stop or skip a walk.
corruptions = st.lists(st.tuples(st.sampled_from(["slot", "prev", "time", "hash", "count"]),
                                 st.integers(0, 40), st.integers(-3, 45)), max_size=4)


def write_corruptions(path: Path, hsn: int, index_num: int, ops) -> None:
    with open(path, "r+b") as fh:
        for region, number, value in ops:
            if region == "count":
                at = 36
            elif region == "slot":
                at = 40 + 4 * (number % hsn)
            else:
                field = {"hash": 0, "time": 12, "prev": 16}[region]
                at = 40 + 4 * hsn + 20 * (number % index_num) + field
            fh.seek(at)
            fh.write(struct.pack(">i", value))


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(hsn=st.integers(1, 7), index_num=st.integers(1, 30),
       puts=st.lists(st.tuples(keys, st.integers(0, 2**40), st.integers(-3_000, 60_000)), max_size=30),
       end_timestamp=st.sampled_from([0, T0, T0 + 2_000]), ops=corruptions,
       queries=st.lists(st.tuples(keys, max_nums, bounds, bounds), min_size=1, max_size=8),
       data=st.data())
def test_select_key_equals_the_python_walk_and_the_old_path(hsn, index_num, puts, end_timestamp, ops, queries, data):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "f"
        with IndexFile.create(path, hsn, index_num, end_timestamp=end_timestamp) as f:
            for key, phy, dt in puts:
                f.put_key(key, phy, T0 + dt)
        write_corruptions(path, hsn, index_num, ops)
        put_keys = [k for k, _, _ in puts]
        with IndexFile.open(path, hsn, index_num, strict=False) as f:
            for key, max_num, begin, end in queries:
                if put_keys and data.draw(st.booleans()):
                    key = data.draw(st.sampled_from(put_keys))
                check_one(f, key, max_num, begin, end)


def check_one(f: IndexFile, key, max_num, begin, end, bound=2_000):
    in_range = LONG_MIN <= begin <= LONG_MAX and LONG_MIN <= end <= LONG_MAX
    if in_range:
        # A corrupt cycle of matching entries returns max_num offsets, as the broker does: more
        # than `bound` of them only when max_num allows it, and then no side is asked for all.
        probe = f.trace_query(key, min(python_clamp(max_num), bound), begin, end)
        if probe.stop == "max-num" and python_clamp(max_num) > bound:
            return
    got = outcome(lambda: f.select_phy_offsets(key, max_num, begin, end))
    assert got == outcome(lambda: old_select(f, key, max_num, begin, end))
    if in_range:
        assert got == ("ok", f.trace_query(key, max_num, begin, end).results)
        assert got == ("ok", f.select_phy_offsets_many([key], max_num, begin, end)[0])
    else:
        assert got[0] is ValueError and "does not fit in a Java long" in got[1]


def small_file(tmp_path: Path) -> Path:
    path = tmp_path / "f"
    with IndexFile.create(path, 4, 32) as f:
        for i in range(12):
            f.put_key(["T#a", "T#b", "Aa", "BB"][i % 4], 100 * (i + 1), T0 + 1000 * i)
    return path


class IntLike:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v

    def __int__(self):
        return self.v


class StrKey(str):
    pass


ODD_NUMBERS = [None, "12", " -3 ", "x", b"7", 1.9, -0.5, float("nan"), float("inf"), float("-inf"), 1e30,
               True, False, np.int64(5), np.int32(-7), np.uint64(2**64 - 1), np.float64(3.7),
               IntLike(2**63), IntLike(-(2**63) - 1), IntLike(9), [], object()]


@pytest.mark.parametrize("value", MAX_NUM_EDGES + ODD_NUMBERS, ids=ident)
def test_clamp_max_num_is_the_python_rule(value):
    assert outcome(lambda: _clamp_max_num(value)) == outcome(lambda: python_clamp(value))


@given(st.integers(-(2**100), 2**100))
def test_clamp_max_num_is_the_python_rule_on_any_int(value):
    assert _clamp_max_num(value) == python_clamp(value)


@pytest.mark.parametrize("value", LONG_EDGES + [LONG_MIN - 1, LONG_MAX + 1, 2**200, -(10**5000)] + ODD_NUMBERS,
                         ids=ident)
def test_begin_and_end_are_checked_as_check_long_checks_them(tmp_path, value):
    """Same accepted values, same errors (type and text), for begin and for end."""
    with IndexFile.open(small_file(tmp_path), 4, 32) as f:
        for begin, end, name in ((value, LONG_MAX, "begin"), (0, value, "end")):
            want = outcome(lambda name=name: check_long(name, value))
            got = outcome(lambda begin=begin, end=end: f.select_phy_offsets("T#a", 64, begin, end))
            if want[0] == "ok":
                as_long = (want[1], LONG_MAX) if name == "begin" else (0, want[1])
                assert got == ("ok", f.trace_query("T#a", 64, *as_long).results)
            else:
                assert got == want


@pytest.mark.parametrize("value", MAX_NUM_EDGES + ODD_NUMBERS, ids=ident)
def test_max_num_is_taken_as_the_clamp_takes_it(tmp_path, value):
    with IndexFile.open(small_file(tmp_path), 4, 32) as f:
        want = outcome(lambda: python_clamp(value))
        got = outcome(lambda: f.select_phy_offsets("T#a", value, 0, LONG_MAX))
        assert got == (want if want[0] != "ok" else ("ok", f.trace_query("T#a", want[1], 0, LONG_MAX).results))


@pytest.mark.parametrize("key", [b"T#a", None, 7, ["T#a"], np.bytes_(b"x"), bytearray(b"T#a")], ids=ident)
def test_a_key_that_is_not_a_str_raises_index_hashs_error(tmp_path, key):
    with IndexFile.open(small_file(tmp_path), 4, 32) as f:
        assert outcome(lambda: f.select_phy_offsets(key, 64, 0, LONG_MAX)) == outcome(lambda: index_hash(key))


@pytest.mark.parametrize("key", [StrKey("T#a"), np.str_("T#b"), StrKey("")], ids=ident)
def test_a_str_subclass_is_a_key(tmp_path, key):
    with IndexFile.open(small_file(tmp_path), 4, 32) as f:
        assert f.select_phy_offsets(key, 64, 0, LONG_MAX) == f.trace_query(str(key)).results


def test_arguments_are_checked_in_the_old_order(tmp_path):
    """Closed file, then the key, then max_num, then begin, then end: the first bad one speaks."""
    with IndexFile.open(small_file(tmp_path), 4, 32) as f:
        for args in ((b"k", None, LONG_MAX + 1, LONG_MIN - 1), ("T#a", None, LONG_MAX + 1, LONG_MIN - 1),
                     ("T#a", 1, LONG_MAX + 1, LONG_MIN - 1), ("T#a", 1, 0, LONG_MIN - 1)):
            assert outcome(lambda args=args: f.select_phy_offsets(*args)) == \
                outcome(lambda args=args: old_select(f, *args))
    # closed: that error comes before the key's
    assert outcome(lambda: f.select_phy_offsets(b"k", None, 0, 0)) == outcome(lambda: old_select(f, b"k", None, 0, 0))


def test_a_closed_file_raises_the_closed_error(tmp_path):
    path = small_file(tmp_path)
    f = IndexFile.open(path, 4, 32)
    assert f.select_phy_offsets("T#a", 64, 0, LONG_MAX)
    f.close()
    with pytest.raises(ValueError) as e:
        f.select_phy_offsets("T#a", 64, 0, LONG_MAX)
    assert str(e.value) == f"{path}: index file is closed"
    assert outcome(lambda: f.select_phy_offsets("T#a", 64, 0, LONG_MAX)) == outcome(f._require_open)


def test_a_look_up_taken_before_the_close_raises_the_closed_error_after_it(tmp_path):
    """An open file's select_phy_offsets is the C entry bound to the file (no Python frame): one
    kept from before the close, as a loop hoists it, raises the closed file's error, as the
    method does, and before looking at its arguments."""
    path = small_file(tmp_path)
    f = IndexFile.open(path, 4, 32)
    select = f.select_phy_offsets
    assert select("T#a", 64, 0, LONG_MAX) == IndexFile.select_phy_offsets(f, "T#a", 64, 0, LONG_MAX)
    f.close()
    for args in (("T#a", 64, 0, LONG_MAX), (b"k", None, 0, 0)):
        assert outcome(lambda args=args: select(*args)) == outcome(f._require_open) == \
            outcome(lambda args=args: IndexFile.select_phy_offsets(f, *args))


def test_a_file_closed_while_a_numpy_view_holds_the_map_is_closed_too(tmp_path):
    f = IndexFile.open(small_file(tmp_path), 4, 32)
    view = f.slots
    f.close()
    with pytest.raises(ValueError, match="index file is closed"):
        f.select_phy_offsets("T#a", 64, 0, LONG_MAX)
    del view


def test_every_header_change_is_seen_by_the_next_look_up(tmp_path):
    """The look-up reads index_count and begin_timestamp at each call: after create (count 1),
    put_key, put_keys and a follow-on file's first put (which replaces begin_timestamp), the
    answer is the Python walk's."""
    path = tmp_path / "f"
    with IndexFile.create(path, 3, 40, end_phy_offset=7, end_timestamp=T0 - 10_000) as f:
        assert f.select_phy_offsets("T#a", 64, 0, LONG_MAX) == []
        for i in range(6):
            f.put_key("T#a", 10 + i, T0 + 1000 * i)
            for begin in (0, T0 - 10_000, T0 + 2_500):
                assert f.select_phy_offsets("T#a", 64, begin, LONG_MAX) == f.trace_query("T#a", 64, begin).results
        f.put_keys(["T#a", "T#b"] * 5, list(range(100, 110)), [T0 + 9000] * 10)
        for begin in (0, T0 + 2_500, T0 + 9000):
            got = f.select_phy_offsets("T#a", 64, begin, LONG_MAX)
            assert got == f.trace_query("T#a", 64, begin).results and 108 in got
    with IndexFile.open(path, 3, 40, writable=True) as f:
        assert f.put_key("T#a", 999, T0 + 20_000)
        assert f.select_phy_offsets("T#a", 1, 0, LONG_MAX) == [999]


def test_the_answer_is_the_callers_to_keep(tmp_path):
    """Each call returns a new list; a later look-up (through the reused scratch arrays) leaves an
    earlier answer as it was."""
    with IndexFile.open(small_file(tmp_path), 4, 32) as f:
        first = f.select_phy_offsets("T#a", 64, 0, LONG_MAX)
        kept = list(first)
        f.select_phy_offsets("T#b", 64, 0, LONG_MAX)
        first_again = f.select_phy_offsets("T#a", 64, 0, LONG_MAX)
        assert first == kept == first_again and first is not first_again


def test_a_look_up_run_by_a_finalizer_inside_a_look_up_leaves_both_answers_whole(tmp_path):
    """Building the answer list may start a garbage collection, and a finalizer may look up
    another key meanwhile: the inner look-up must not reuse the outer one's scratch arrays."""
    inner: list[list[int]] = []
    with IndexFile.open(small_file(tmp_path), 4, 32) as f:
        want_a, want_b = f.trace_query("T#a").results, f.trace_query("Aa").results

        class LooksUp:
            def __init__(self):
                self.me = self  # a cycle: only the collector frees it

            def __del__(self):
                inner.append(f.select_phy_offsets("Aa", 64, 0, LONG_MAX))

        threshold = gc.get_threshold()
        gc.collect()
        gc.set_threshold(1)
        try:
            outer = []
            for _ in range(200):
                LooksUp()
                outer.append(f.select_phy_offsets("T#a", 64, 0, LONG_MAX))
        finally:
            gc.set_threshold(*threshold)
            gc.collect()
    assert inner, "no finalizer ran during the look-ups"
    assert all(a == want_a for a in outer) and all(b == want_b for b in inner)


def test_a_long_answer_is_whole_and_the_next_short_one_too(tmp_path):
    """An answer longer than the scratch arrays keep (4096) grows them for one call."""
    path = tmp_path / "f"
    n = 6000
    with IndexFile.create(path, 1, n + 1) as f:
        assert f.put_keys(["T#a"] * n, list(range(n)), [T0] * n) == n
    with IndexFile.open(path, 1, n + 1) as f:
        assert f.select_phy_offsets("T#a", 2**40, 0, LONG_MAX) == list(range(n - 1, -1, -1))
        assert f.select_phy_offsets("T#a", 3, 0, LONG_MAX) == [n - 1, n - 2, n - 3]


def test_the_key_hash_is_index_hash(tmp_path):
    """One key a slot, one slot: a look-up finds an entry only through the stored hash, and
    entry 1's stored hash is written here as index_hash gives it (a reference model's too)."""
    path = tmp_path / "f"
    for key in SPECIAL_KEYS:
        with IndexFile.create(path, 1, 3, overwrite=True) as f:
            f.put_key("other", 5, T0)
        with open(path, "r+b") as fh:
            fh.seek(40 + 4 + 20)
            fh.write(struct.pack(">i", stored_hash(key)))
        assert stored_hash(key) == index_hash(key)
        with IndexFile.open(path, 1, 3) as f:
            assert f.select_phy_offsets(key, 64, 0, LONG_MAX) == [5], key
