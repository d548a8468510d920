"""Edge cases of rmqlab/store/indexservice.py that its other tests left open (found as mutants
they let survive, benchmarks/mutation.py).

The truth: the broker's IndexService replayed by the test-side model of test_indexservice.py
(model_build: which file holds which (key, offset, timestamp, time_diff) entry; model_query:
queryOffset's walk), and hand-computed expectations from the structure of the trace objects:
three files of two keys each (hash slots 4, index_num 3), every key "T#k", so each file's chain
is entry 2 -> entry 1 -> end.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from rmqlab import ReadOnlyError
from rmqlab.jvm.longs import LONG_MAX
from rmqlab.store.indexservice import (
    ExpandedKeys,
    IndexService,
    QueryOffsetResult,
    bulk_build,
    expand_columns,
    expand_messages,
    query_trace_dict,
)
from tests.store.test_indexservice import T0, ihash, model_build, model_query, msg, sequential

UTC = dt.UTC
HSN, INUM = 4, 3
# file i holds offsets 200i, 200i+100 stored at T0 + 10 s * i and one second later
MESSAGES = [msg("T", 100 * i, T0 + 10_000 * (i // 2) + 1000 * (i % 2), "k") for i in range(6)]
STEP_COLUMNS = ["file", "entry", "key_hash", "phy_offset", "time_diff", "time_read", "prev_index",
                "hash_match", "time_match", "returned"]
TRACE_COLUMNS = ["position", "name", "begin_timestamp", "end_timestamp", "keys", "action", "after",
                 "found", "entries_read", "walk_stop"]


@pytest.fixture
def three(tmp_path):
    names = sequential(tmp_path, MESSAGES, HSN, INUM)
    with IndexService(tmp_path, HSN, INUM) as svc:
        yield svc, names, model_build(MESSAGES, INUM)


def expected_steps(names, model, positions):
    """The model's chain walk of each file in `positions` (newest first), everything in range."""
    rows = []
    for p in positions:
        f = model[p]
        for entry in range(len(f.entries), 0, -1):        # newest entry first
            key, phy, _ts, diff = f.entries[entry - 1]
            rows.append([names[p], entry, ihash(key), phy, diff, f.begin_ts + diff * 1000, entry - 1,
                         True, True, True])
    return rows


# ------------------------------------------------------------------ DirectoryQueryTrace


def test_full_walk_trace_frames_and_dicts(three):
    svc, names, model = three
    t = svc.trace_query("T", "k", 100, 0, LONG_MAX)
    want, (last_ts, last_phy) = model_query(model, "T", "k", 100, 0, LONG_MAX, HSN)
    assert t.result.phy_offsets == want == [500, 400, 300, 200, 100, 0]
    assert (t.key, t.requested_max_num, t.max_num, t.begin, t.end) == ("T#k", 100, 64, 0, LONG_MAX)

    frame = t.to_frame()
    assert frame.columns.tolist() == TRACE_COLUMNS
    assert frame.values.tolist() == [
        [p, names[p], model[p].begin_ts, model[p].end_ts, 2, "searched", after, 2, 2, "end-of-chain"]
        for p, after in ((2, "continue"), (1, "continue"), (0, "oldest-file"))]

    steps = t.steps_frame()
    assert steps.columns.tolist() == STEP_COLUMNS
    assert steps.index.tolist() == list(range(6))
    assert steps.values.tolist() == expected_steps(names, model, [2, 1, 0])

    d = json.loads(json.dumps(t.as_dict()))
    assert {k: v for k, v in d.items() if k != "files"} == {
        "key": "T#k", "requested_max_num": 100, "max_num": 64, "begin": 0, "end": LONG_MAX,
        "stop": "oldest-file", "stop_reason": "this was the oldest file",
        "result": {"phy_offsets": want, "index_last_update_timestamp": last_ts,
                   "index_last_update_phyoffset": last_phy}}
    assert (last_ts, last_phy) == (T0 + 21_000, 500)
    assert [f["position"] for f in d["files"]] == [2, 1, 0]
    newest = d["files"][0]
    assert set(newest) == {"position", "name", "begin_timestamp", "end_timestamp", "index_count",
                           "action", "after", "offsets", "entries_read", "walk"}
    assert (newest["offsets"], newest["entries_read"], newest["index_count"]) == ([500, 400], 2, 3)
    walk = newest["walk"]
    h = ihash("T#k")
    assert {k: v for k, v in walk.items() if k != "steps"} == {
        "path": str(svc.files[2].path), "key": "T#k", "key_hash": h, "slot": h % HSN,
        "slot_value": 2, "max_num": 64, "begin": 0, "end": LONG_MAX, "results": [500, 400],
        "stop": "end-of-chain", "stop_reason": "prev_index is 0: the oldest entry of this slot was read"}
    assert [list(s.values()) for s in walk["steps"]] == [r[1:] for r in expected_steps(names, model, [2])]
    assert list(walk["steps"][0]) == STEP_COLUMNS[1:]


def clock(ms: int) -> str:
    """Epoch ms with their UTC clock time, as the trace prints them (written here from datetime)."""
    t = dt.datetime.fromtimestamp(ms // 1000, dt.UTC)
    return f"{ms} ({t:%H:%M:%S}.{ms % 1000:03d} UTC)"


def test_partial_walk_trace_every_action(three):
    """A range inside file 1: file 2 is skipped, file 1 searched, file 0 never reached. File 1's
    entry 1 reads as T0 + 19 s (its time_diff counts from file 0's end), so the chain runs out."""
    svc, names, model = three
    t = svc.trace_query("T", "k", 64, T0 + 10_500, T0 + 11_000)
    assert t.result.phy_offsets == model_query(model, "T", "k", 64, T0 + 10_500, T0 + 11_000, HSN)[0] == [300]
    frame = t.to_frame()
    assert frame.values.tolist() == [
        [2, names[2], T0 + 20_000, T0 + 21_000, 2, "not-time-matched", "continue", 0, 0, ""],
        [1, names[1], T0 + 10_000, T0 + 11_000, 2, "searched", "older-than-begin", 1, 2, "end-of-chain"],
        [0, names[0], T0, T0 + 1000, 2, "not-visited", "", 0, 0, ""]]
    files = t.as_dict()["files"]
    assert [f["walk"] is None for f in files] == [True, False, True]
    assert [f["offsets"] for f in files] == [[], [300], []]
    assert [f["entries_read"] for f in files] == [0, 2, 0]
    assert str(t).split("\n") == [
        f"query 'T#k': max_num 64 (asked 64), [{clock(T0 + 10_500)}, {clock(T0 + 11_000)}]",
        f"  {names[2]}  [{clock(T0 + 20_000)}, {clock(T0 + 21_000)}]  skipped: time range does not touch "
        "[begin, end]; then continue",
        f"  {names[1]}  [{clock(T0 + 10_000)}, {clock(T0 + 11_000)}]  searched, 1 found, 2 entries read"
        " (walk stopped: end-of-chain); then older-than-begin",
        f"  {names[0]}  [{clock(T0)}, {clock(T0 + 1000)}]  not visited",
        "stopped: older-than-begin (the file's begin_timestamp < begin: older files are assumed older "
        "still, so the walk stopped); 1 offsets"]


def test_older_than_begin_is_checked_before_max_num(three):
    """queryOffset breaks on beginTimestamp < begin before it looks at the list's size."""
    svc, _, _ = three
    t = svc.trace_query("T", "k", 1, T0 + 10_500, LONG_MAX)
    # file 2 fills the list (one offset) and begins after `begin`: max-num
    assert (t.result.phy_offsets, t.stop) == ([500], "max-num")
    t = svc.trace_query("T", "k", 1, T0 + 10_500, T0 + 11_000)
    # file 1 fills it and begins before `begin`: the time rule names the stop
    assert (t.result.phy_offsets, t.stop) == ([300], "older-than-begin")
    assert t.to_frame()["after"].tolist() == ["continue", "older-than-begin", ""]


def test_a_file_beginning_exactly_at_begin_does_not_stop_the_walk(three):
    svc, _, _ = three
    t = svc.trace_query("T", "k", 64, T0 + 10_000, LONG_MAX)      # file 1 begins at T0 + 10 s
    assert t.to_frame()["action"].tolist() == ["searched", "searched", "not-time-matched"]
    assert t.stop == "older-than-begin"


def test_steps_frame_columns_without_steps(tmp_path):
    with IndexService(tmp_path) as svc:
        t = svc.trace_query("T", "k")
        assert t.steps_frame().columns.tolist() == STEP_COLUMNS
        assert t.to_frame().columns.tolist() == TRACE_COLUMNS
        assert (t.stop, t.max_num, t.requested_max_num, t.key) == ("no-files", 64, 64, "T#k")
        assert str(t).split("\n")[-1] == "stopped: no-files (the folder holds no index file); 0 offsets"


def test_an_empty_file_has_zero_keys_in_the_trace(tmp_path):
    # the second message comes after the first file filled: it opens an empty file
    sequential(tmp_path, [msg("T", 0, T0, "k a"), msg("T", 100, T0 + 1000)], HSN, INUM)
    with IndexService(tmp_path, HSN, INUM) as svc:
        assert [f.header.index_count for f in svc.files] == [3, 1]
        assert svc.trace_query("T", "k").to_frame()["keys"].tolist() == [0, 2]


def test_trace_key_without_topic_and_default_range(three):
    svc, _, _ = three
    t = svc.trace_query(None, "T#k")
    assert (t.key, t.begin, t.end, t.result.phy_offsets[:2]) == ("T#k", 0, LONG_MAX, [500, 400])
    assert svc.query_offset(None, "T#k").phy_offsets == [500, 400, 300, 200, 100, 0]


def test_default_begin_is_zero(tmp_path):
    """A message stored at time 0 lies in the default range [0, Long.MAX_VALUE]."""
    sequential(tmp_path, [msg("T", 7, 0, "k", uniq="U")], HSN, 8)
    with IndexService(tmp_path, HSN, 8) as svc:
        assert svc.query_offset("T", "k").phy_offsets == [7]
        assert svc.query_unique_key("T", "U").phy_offsets == [7]
        assert svc.trace_query("T", "k").result.phy_offsets == [7]
        assert svc.query_offsets_many("T", ["k"])[0] == [7]


def test_query_offsets_many_counts_are_integers(three):
    svc, _, model = three
    r = svc.query_offsets_many("T", ["k", "x"])
    assert [r[0], r[1]] == [model_query(model, "T", "k", 64, 0, LONG_MAX, HSN)[0], []]
    assert r.entries_read.tolist() == [6, 0] and r.entries_read.dtype.kind == "i"


def test_query_offset_result_as_dict():
    assert QueryOffsetResult([3, 1], 11, 22).as_dict() == {
        "phy_offsets": [3, 1], "index_last_update_timestamp": 11, "index_last_update_phyoffset": 22}


def test_query_trace_dict_keys(three):
    svc, _, _ = three
    t = svc.files[0].trace_query("T#k", 64, 0, LONG_MAX)
    assert list(query_trace_dict(t)) == ["path", "key", "key_hash", "slot", "slot_value", "max_num",
                                         "begin", "end", "results", "stop", "stop_reason", "steps"]


# ------------------------------------------------------------------------ IndexService


def test_service_frame_iter_repr_and_build_many(tmp_path):
    with IndexService(tmp_path, HSN, INUM, read_only=False, clock=iter(range(T0, T0 + 10**6, 1000)).__next__,
                      tz=UTC) as svc:
        assert svc.build_many(MESSAGES) == 6
        assert list(svc) == svc.files and len(list(iter(svc))) == 3
        assert repr(svc) == f"IndexService({str(tmp_path)!r}, files=3, read_only=False)"
    model = model_build(MESSAGES, INUM)
    with IndexService(tmp_path, HSN, INUM) as svc:
        frame = svc.to_frame()
        names = [f.path.name for f in svc.files]
    assert frame.columns.tolist() == ["name", "begin_timestamp", "end_timestamp", "begin_phy_offset",
                                      "end_phy_offset", "hash_slot_count", "index_count", "keys",
                                      "is_write_full", "writable", "file_size"]
    # one key, so one slot used a file; 40-byte header + 4 slots x 4 + 3 entries x 20
    assert frame.values.tolist() == [
        [names[i], f.begin_ts, f.end_ts, f.entries[0][1], f.end_phy, 1, 3, 2, True, False, 40 + 4 * 4 + 3 * 20]
        for i, f in enumerate(model)]


@pytest.mark.parametrize("arrow", [False, True])
def test_build_columns_empty_readonly_and_append(tmp_path, arrow):
    text = (lambda v: pa.array(v, pa.large_string())) if arrow else list
    cols = {"topic": text(["T"] * 3), "phy_offset": [0, 100, 200], "store_timestamp": [T0, T0 + 1, T0 + 2],
            "keys": text(["a", "b", "c"]), "uniq_key": text([None] * 3), "sys_flag": [0] * 3}
    with IndexService(tmp_path) as svc, pytest.raises(ReadOnlyError) as err:
        svc.build_columns(cols)
    assert err.value.path == str(tmp_path)
    empty = {k: text([]) if k in ("topic", "keys", "uniq_key") else [] for k in cols}
    with IndexService(tmp_path / "w", HSN, 8, read_only=False, tz=UTC) as svc:
        assert svc.build_columns(empty) == 0
        assert svc.build_columns(cols) == 3
        # offsets below the file's end_phy_offset (200) were indexed already: buildIndex skips them
        again = dict(cols, phy_offset=[100, 200, 300], keys=text(["x", "y", "z"]))
        assert svc.build_columns(again) == 2
        assert svc.query_offset("T", "x").phy_offsets == []
        assert svc.query_offset("T", "y").phy_offsets == [200]


@pytest.mark.parametrize("arrow", [False, True])
def test_build_columns_indexes_offset_zero(tmp_path, arrow):
    """A new folder's end_phy_offset is 0, so a message at CommitLog offset 0 is indexed."""
    text = (lambda v: pa.array(v, pa.large_string())) if arrow else list
    cols = {"topic": text(["T", "T"]), "phy_offset": [0, 10], "store_timestamp": [T0, T0 + 1],
            "keys": text(["a", "b"])}
    with IndexService(tmp_path, HSN, 8, read_only=False, tz=UTC) as svc:
        assert svc.build_columns(cols) == 2
        assert svc.query_offset("T", "a").phy_offsets == [0]


# ------------------------------------------------------------------------------ bulk path


def test_expanded_keys_frame_and_key_list():
    e = ExpandedKeys(pa.array(["T#a", "T#b"], pa.large_string()), [5, 6], [50, 60])
    assert e.key_list() == ["T#a", "T#b"]
    f = e.to_frame()
    assert f.columns.tolist() == ["key", "phy_offset", "store_timestamp", "message_index"]
    assert f.values.tolist() == [["T#a", 5, 50, 0], ["T#b", 6, 60, 1]]


def test_expand_messages_without_puts_keeps_int64_rows():
    e = expand_messages([msg("T", 0, T0, "a", flag=0xC)])          # a rollback: nothing put
    assert (len(e), e.n_messages) == (0, 1)
    assert e.message_index.dtype == np.int64


def test_expand_columns_optional_and_arrow_columns():
    want = expand_messages([msg("T", 10, 1, "a b"), msg("T", 20, 2, None)])
    for cols in (
        pd.DataFrame({"topic": ["T", "T"], "phy_offset": [10, 20], "store_timestamp": [1, 2], "keys": ["a b", np.nan]}),
        {"topic": pa.chunked_array([["T"], ["T"]]), "phy_offset": [10, 20], "store_timestamp": [1, 2],
         "keys": pa.array(["a b", None])},
    ):
        got = expand_columns(cols)
        assert got.key_list() == want.key_list() == ["T#a", "T#b"]
        assert got.phy_offsets.tolist() == [10, 10] and got.message_index.tolist() == [0, 0]
    with pytest.raises(ValueError):
        expand_columns({"phy_offset": [1], "store_timestamp": [1]})


@pytest.mark.parametrize("as_frame", [False, True])
def test_bulk_build_from_expanded_columns(tmp_path, as_frame):
    rows = {"key": ["T#a", "T#b", "T#c"], "phy_offset": [1, 2, 3], "store_timestamp": [T0, T0 + 1, T0 + 2]}
    src = pd.DataFrame(rows, index=[7, 3, 5]) if as_frame else rows
    clock = iter([T0, T0 + 1]).__next__
    paths = bulk_build(src, tmp_path / "a", hash_slot_num=HSN, index_num=INUM, clock=clock, tz=UTC)
    want = bulk_build(ExpandedKeys(rows["key"], rows["phy_offset"], rows["store_timestamp"]), tmp_path / "b",
                      hash_slot_num=HSN, index_num=INUM, clock=iter([T0, T0 + 1]).__next__, tz=UTC)
    assert [p.read_bytes() for p in paths] == [p.read_bytes() for p in want]
    with IndexService(tmp_path / "a", HSN, INUM) as svc:
        assert svc.query_offset(None, "T#c").phy_offsets == [3]
    with pytest.raises(ValueError):
        bulk_build({"key": ["T#a"], "phy_offset": [1]}, tmp_path / "c")


def test_bulk_build_folder_rules(tmp_path, caplog):
    e = ExpandedKeys(["T#a", "T#b", "T#c"], [1, 2, 3], [T0, T0 + 1, T0 + 2])
    deep = tmp_path / "x" / "y"
    plus8 = dt.timezone(dt.timedelta(hours=8))
    with caplog.at_level(logging.WARNING, logger="rmqlab.store.indexservice"):
        paths = bulk_build(e, deep, hash_slot_num=HSN, index_num=INUM, clock=iter([T0, T0 - 5000]).__next__,
                           tz=plus8)
    # 1718000000000 ms is 2024-06-10 06:13:20 UTC, 14:13:20 at UTC+8; the clock went back 5 s
    assert [p.name for p in paths] == ["20240610141320000", "20240610141315000"]
    assert "the clock went backwards" in caplog.text
    with pytest.raises(FileExistsError):
        bulk_build(e, deep)
    only_one = tmp_path / "one"
    bulk_build(ExpandedKeys(["T#a"], [1], [T0]), only_one, hash_slot_num=HSN, index_num=INUM)
    with pytest.raises(FileExistsError):
        bulk_build(e, only_one)


def test_bulk_build_default_clock_is_now_in_ms(tmp_path):
    before = time.time()
    (path,) = bulk_build(ExpandedKeys(["T#a"], [1], [T0]), tmp_path, hash_slot_num=HSN, index_num=INUM, tz=UTC)
    made = dt.datetime.strptime(path.name, "%Y%m%d%H%M%S%f").replace(tzinfo=UTC).timestamp()
    assert before - 1 <= made <= time.time() + 1


def test_expanded_keys_hold_offsets_and_times_as_int64():
    """The IndexFile stores both as 8-byte longs; narrower or float input is widened once."""
    e = ExpandedKeys(["T#a", "T#b"], np.array([1, 2], np.int32), [1.0, 2.0])
    assert (e.phy_offsets.dtype, e.store_timestamps.dtype) == (np.int64, np.int64)
    assert e.to_frame()[["phy_offset", "store_timestamp"]].values.tolist() == [[1, 1], [2, 2]]


@pytest.mark.parametrize("keys, phy, ts", [(["T#a"], [1, 2], [1, 2]), (["T#a", "T#b"], [1, 2], [1])])
def test_expanded_keys_refuses_any_length_mismatch(keys, phy, ts):
    with pytest.raises(ValueError):
        ExpandedKeys(keys, phy, ts)


def test_service_names_new_files_in_its_time_zone(tmp_path):
    plus8 = dt.timezone(dt.timedelta(hours=8))
    with IndexService(tmp_path, HSN, INUM, read_only=False, clock=iter([T0, T0]).__next__, tz=plus8) as svc:
        svc.build_many(MESSAGES[:3])
        # 1718000000000 ms is 06:13:20 UTC, 14:13:20 at UTC+8; the second name is bumped by 1 ms
        assert [f.path.name for f in svc.files] == ["20240610141320000", "20240610141320001"]


def test_query_offsets_many_keeps_to_end_in_every_file(tmp_path):
    """Keys spread over five files, every (begin, end) window over the stored times and several
    max_num: each key's list is the model broker's, so no file returns an entry newer than end."""
    messages = [msg("T", 100 * (i + 1), T0 + 1000 * i, ("a", "b", "Aa", "BB")[i % 4]) for i in range(20)]
    model = model_build(messages, 5)
    sequential(tmp_path, messages, 3, 5)
    keys = ["a", "b", "Aa", "BB", "zz"]
    with IndexService(tmp_path, 3, 5) as svc:
        assert len(svc) == 5
        for begin in range(T0 - 1000, T0 + 21_000, 3000):
            for end in (begin, begin + 2000, begin + 7000):
                for max_num in (1, 3, 64):
                    got = svc.query_offsets_many("T", keys, max_num, begin, end)
                    want = [model_query(model, "T", k, max_num, begin, end, 3)[0] for k in keys]
                    assert [got[i] for i in range(len(keys))] == want, (begin, end, max_num)


@pytest.mark.parametrize("columns, message", [
    ({"phy_offset": [1, 2], "store_timestamp": [T0, T0]}, "column 'topic' is required"),
    ({"topic": ["T", None], "phy_offset": [1, 2], "store_timestamp": [T0, T0]}, "column 'topic' has missing values"),
    ({"topic": ["T"], "phy_offset": [1, 2], "store_timestamp": [T0, T0]}, "column 'topic' has 1 rows, expected 2"),
    ({"topic": ["T", "T"], "keys": ["a"], "phy_offset": [1, 2], "store_timestamp": [T0, T0]},
     "column 'keys' has 1 rows, expected 2"),
    ({"topic": ["T", "T"], "uniq_key": ["U", "V", "W"], "phy_offset": [1, 2], "store_timestamp": [T0, T0]},
     "column 'uniq_key' has 3 rows, expected 2"),
])
def test_expand_columns_names_the_bad_column(columns, message):
    with pytest.raises(ValueError) as e:
        expand_columns(columns)
    assert str(e.value) == message


def test_a_negative_max_num_is_refused_naming_what_was_asked(three):
    svc, _, _ = three
    with pytest.raises(ValueError) as e:
        svc.query_offset("T", "k", -5)
    assert str(e.value) == "max_num must be >= 0 (after the cap), got -5 (asked -5)"


def test_index_key_hashes_reads_str_objects_and_declines_other_storage():
    """The fast path takes lists, object arrays and object Series of str (and None); anything
    else (fixed-width NumPy strings, Arrow arrays, pandas' string dtype, a column of the wrong
    length) it declines with None, for expand_columns to read."""
    from rmqlab.store.indexservice import index_key_hashes

    want = (np.array([0, 1]), ihash("T#a"), ihash("T#b"))
    base = {"phy_offset": [0, 10], "store_timestamp": [T0, T0]}
    for topic in (["T", "T"], np.array(["T", "T"], dtype=object), pd.Series(["T", "T"], dtype=object)):
        rows, hashes, n = index_key_hashes({**base, "topic": topic, "keys": ["a", "b"]})
        assert (rows.tolist(), hashes.tolist(), n) == ([0, 1], [want[1], want[2]], 2)   # offset 0 is kept
    for topic in (np.array(["T", "T"]), pa.array(["T", "T"]), pd.Series(["T", "T"], dtype="string"), ["T"],
                  np.array([["T", "T"]], dtype=object)):
        assert index_key_hashes({**base, "topic": topic, "keys": ["a", "b"]}) is None


def test_build_columns_of_messages_without_keys_opens_one_empty_file(tmp_path):
    with IndexService(tmp_path, HSN, INUM, read_only=False, tz=UTC, clock=lambda: T0) as svc:
        assert svc.build_columns({"topic": ["T", "T"], "phy_offset": [0, 10], "store_timestamp": [T0, T0]}) == 0
        assert len(svc.files) == 1 and svc.files[0].header.index_count == 1


def test_build_columns_names_a_short_text_column(tmp_path):
    with IndexService(tmp_path, HSN, INUM, read_only=False) as svc, pytest.raises(ValueError) as e:
        svc.build_columns({"topic": ["T"], "keys": ["a", "b"], "phy_offset": [0, 10], "store_timestamp": [T0, T0]})
    assert str(e.value) == "column 'topic' has 1 rows, expected 2"


def test_a_service_whose_clock_went_back_warns_when_it_names_the_next_file(tmp_path, caplog):
    clock = iter([T0, T0 - 5000]).__next__
    with caplog.at_level(logging.WARNING, logger="rmqlab.store.indexservice"):
        sequential(tmp_path, MESSAGES[:4], HSN, INUM, clock=clock)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["20240610061315000", "20240610061320000"]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "new index file 20240610061315000 sorts before 20240610061320000: the clock went backwards"]


def test_a_new_file_never_takes_the_name_of_a_file_already_there(tmp_path):
    """A file that appeared in the folder after the service opened it (another writer, a copy)
    keeps its name: the new index file is named 1 ms later."""
    with IndexService(tmp_path, HSN, INUM, read_only=False, tz=UTC, clock=lambda: T0) as svc:
        (tmp_path / "20240610061320000").write_bytes(b"stray")
        svc.build_index(MESSAGES[0])
        assert [f.path.name for f in svc.files] == ["20240610061320001"]
    assert (tmp_path / "20240610061320000").read_bytes() == b"stray"


def test_already_indexed_offsets_beyond_2_to_the_53_are_skipped(tmp_path):
    """CommitLog offsets are Java longs: a message at 2^62 + 50 after one at 2^62 + 100 is
    already indexed (offset below end_phy_offset), though a float64 holds neither difference."""
    big = 2**62
    messages = [msg("T", big + 100, T0, "a"), msg("T", big + 50, T0 + 1000, "b"), msg("T", big + 200, T0 + 2000, "c")]
    model = model_build(messages, 16)
    with IndexService(tmp_path, HSN, 16, read_only=False, tz=UTC, clock=lambda: T0) as svc:
        svc.build_columns({"topic": ["T"] * 3, "keys": ["a", "b", "c"], "phy_offset": [m.phy_offset for m in messages],
                           "store_timestamp": [m.store_timestamp for m in messages]})
        (f,) = svc.files
        assert f.used_entries["phy_offset"].tolist() == [e[1] for e in model[0].entries] == [big + 100, big + 200]
    e = expand_columns({"topic": ["T"] * 3, "keys": ["a", "b", "c"], "phy_offset": [m.phy_offset for m in messages],
                        "store_timestamp": [m.store_timestamp for m in messages]})
    assert e.key_list() == ["T#a", "T#c"]


# ------------------------------------------------------------------ opening a folder, new files


def _bump_index_count(path, value):
    import struct

    with open(path, "r+b") as fh:
        fh.seek(36)                                        # IndexHeader.indexCount
        fh.write(struct.pack(">i", value))


def test_opening_is_strict_unless_told(three, tmp_path):
    from rmqlab import CorruptIndexError

    svc, names, _ = three
    svc.close()
    _bump_index_count(svc.directory / names[0], INUM + 5)
    with pytest.raises(CorruptIndexError):
        IndexService(svc.directory, HSN, INUM)
    with IndexService(svc.directory, HSN, INUM, strict=False) as loose:
        assert len(loose) == 3


def test_opening_checks_each_file_against_both_counts(tmp_path):
    from rmqlab import GeometryError

    sequential(tmp_path, MESSAGES[:2], HSN, 8)
    with pytest.raises(GeometryError):
        IndexService(tmp_path, HSN, 16)


def test_opening_logs_each_file_and_keeps_the_checkpoint_it_was_given(three, caplog):
    svc, names, _ = three
    svc.close()
    with caplog.at_level(logging.INFO, logger="rmqlab.store.indexservice"):
        replay = IndexService(svc.directory, HSN, INUM, index_msg_timestamp=T0 + 11_000)
    with replay:
        assert replay.index_msg_timestamp == T0 + 11_000
        assert [f.path.name for f in replay.files] == names[:2] and replay.dropped == [svc.directory / names[2]]
    assert [r.getMessage() for r in caplog.records] == [f"load index file OK, {svc.directory / n}" for n in names[:2]]


def test_a_writable_service_makes_its_folder_and_its_parents(tmp_path):
    deep = tmp_path / "a" / "b"
    with IndexService(deep, HSN, INUM, read_only=False, tz=UTC, clock=lambda: T0) as svc:
        svc.build_index(MESSAGES[0])
    assert [p.name for p in deep.iterdir()] == ["20240610061320000"]


def test_a_read_only_service_refuses_to_create_a_file_naming_its_folder(three):
    svc, _, _ = three
    with pytest.raises(ReadOnlyError) as e:
        svc.get_and_create_last_file()
    assert e.value.path == str(svc.directory)


def test_a_file_created_before_any_message_is_named_by_the_clock(tmp_path):
    with IndexService(tmp_path, HSN, INUM, read_only=False, tz=UTC, clock=lambda: T0,
                      name_by_store_time=True) as svc:
        assert svc.get_and_create_last_file().path.name == "20240610061320000"


def test_appending_keeps_the_services_slot_count_rule(tmp_path):
    """Reopened for writing with the <= 4.7.0 rule, the last file counts every put."""
    import struct

    from tests.formats.test_indexfile import RefIndex

    with IndexService(tmp_path, 1, 8, read_only=False, tz=UTC, clock=lambda: T0, slot_count_rule="every-put") as svc:
        svc.build_index(msg("T", 100, T0, "a"))
    with IndexService(tmp_path, 1, 8, read_only=False, slot_count_rule="every-put") as svc:
        svc.build_index(msg("T", 200, T0 + 1000, "b"))
        path = svc.files[0].path
    ref = RefIndex(1, 8, rule="every-put")
    ref.put("T#a", 100, T0)
    ref.put("T#b", 200, T0 + 1000)
    assert struct.unpack_from(">qqqqii", path.read_bytes())[4] == ref.hsc == 2


def test_a_new_file_takes_the_newest_files_geometry_when_the_service_has_none(tmp_path, caplog):
    """index_num None: each file's is read from its size; a new file copies the newest's (4 x 12
    here, after files of 4 x 8 and 4 x 16), and the roll-over is logged."""
    from rmqlab.formats.indexfile import IndexFile
    from rmqlab.store.indexservice import index_file_name

    names = [index_file_name(T0 + i, UTC) for i in range(3)]
    for i, num in enumerate((8, 16, 12)):
        with IndexFile.create(tmp_path / names[i], 4, num) as f:
            for j in range(num - 1):
                f.put_key("T#k", 1000 * i + j, T0 + i)
    with IndexService(tmp_path, 4, None, read_only=False, tz=UTC, clock=lambda: T0 + 10) as svc:
        with caplog.at_level(logging.INFO, logger="rmqlab.store.indexservice"):
            svc.build_index(msg("T", 5000, T0 + 5, "k"))
        assert [f.geometry.index_num for f in svc.files] == [8, 16, 12, 12]
        assert svc.files[-1].path.stat().st_size == 40 + 4 * 4 + 20 * 12
    created = index_file_name(T0 + 10, UTC)
    assert [r.getMessage() for r in caplog.records] == [f"index file {names[2]} is full, created {created}"]


def model_key_hashes(topics, keys, uniqs):
    """IndexService.buildIndex's puts, message by message: UNIQ_KEY when not null, then each
    non-empty token of KEYS split on " "; (message row, index hash of "topic#key")."""
    from reference_model import stored_hash

    rows, hashes = [], []
    for i, (t, k, u) in enumerate(zip(topics, keys, uniqs)):
        for key in ([u] if u is not None else []) + [x for x in (k or "").split(" ") if x]:
            rows.append(i)
            hashes.append(stored_hash(f"{t}#{key}"))
    return rows, hashes


TOPICS = ["T", "Orders", "T", "T"]
KEYS = ["a  b", None, "c", "Aa BB"]
UNIQS = [None, "U1", "U2", None]


@pytest.mark.parametrize("topic_type", [
    pa.string(), pa.large_string(), pa.dictionary(pa.int8(), pa.string()),
    pa.dictionary(pa.int32(), pa.large_string())],
    ids=["string", "large_string", "dict-int8", "dict-int32-large"])
def test_index_key_hashes_reads_arrow_text_as_the_broker_splits_it(topic_type):
    """All three key columns Arrow text: the puts hashed from the UTF-8 buffers are the model's."""
    from rmqlab.store.indexservice import index_key_hashes

    topic = pa.array(TOPICS, pa.string()).cast(topic_type) if pa.types.is_dictionary(topic_type) else \
        pa.array(TOPICS, topic_type)
    columns = {"topic": topic, "keys": pa.array(KEYS, pa.string()), "uniq_key": pa.array(UNIQS, pa.large_string()),
               "phy_offset": [100, 200, 300, 400]}
    got = index_key_hashes(columns)
    assert got is not None
    rows, hashes, n = got
    assert (rows.tolist(), hashes.tolist(), n) == (*model_key_hashes(TOPICS, KEYS, UNIQS), 4)
    series = {c: pd.Series(v, dtype=pd.ArrowDtype(pa.string())) for c, v in
              (("topic", TOPICS), ("keys", KEYS), ("uniq_key", UNIQS))}
    rows, hashes, _ = index_key_hashes({**series, "phy_offset": [100, 200, 300, 400]})
    assert (rows.tolist(), hashes.tolist()) == model_key_hashes(TOPICS, KEYS, UNIQS)


def test_index_key_hashes_declines_arrow_it_cannot_hash():
    """A null topic, or a dictionary topic whose values are not text: None (expand_columns
    then says why)."""
    from rmqlab.store.indexservice import index_key_hashes

    base = {"keys": pa.array(KEYS), "uniq_key": pa.array(UNIQS), "phy_offset": [100, 200, 300, 400]}
    assert index_key_hashes({**base, "topic": pa.array(["T", None, "T", "T"])}) is None
    numbers = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 0], pa.int32()), pa.array([7, 8], pa.int64()))
    assert index_key_hashes({**base, "topic": numbers}) is None


def test_build_index_tells_each_decision_in_the_brokers_order(tmp_path):
    """IndexService.buildIndex, message by message: the writable file (created only for the
    first), then a skip (offset below the file's endPhyOffset: already indexed; a rolled-back
    transaction), or the keys (UNIQ_KEY first, then the KEYS tokens) and each put."""
    events = []

    def observe(event, details):
        events.append((event, {k: (v.path.name if hasattr(v, "path") else v) for k, v in details.items()}))

    with IndexService(tmp_path, HSN, 8, read_only=False, tz=UTC) as svc:
        svc.build_index(msg("T", 100, T0, "a b", "U"), observe)
        name = svc.files[0].path.name
        assert events == [("file", {"file": name, "created": True}),
                          ("keys", {"keys": ["T#U", "T#a", "T#b"], "uniq_key": "U", "keys_property": "a b"}),
                          ("put", {"key": "T#U", "file": name}), ("put-done", {"key": "T#U", "file": name, "ok": True}),
                          ("put", {"key": "T#a", "file": name}), ("put-done", {"key": "T#a", "file": name, "ok": True}),
                          ("put", {"key": "T#b", "file": name}), ("put-done", {"key": "T#b", "file": name, "ok": True})]
        events.clear()
        assert svc.build_index(msg("T", 50, T0 + 1, "c"), observe) == 0          # below endPhyOffset 100
        assert svc.build_index(msg("T", 200, T0 + 2, "c", flag=0xC), observe) == 0   # rolled back
        assert events == [("file", {"file": name, "created": False}),
                          ("skip", {"why": "already-indexed", "file": name}),
                          ("file", {"file": name, "created": False}),
                          ("skip", {"why": "rollback", "file": name})]


def test_query_offsets_many_takes_keys_as_stored_without_topics(tmp_path):
    with IndexService(tmp_path, HSN, 16, read_only=False, tz=UTC) as svc:
        for i, key in enumerate(["a", "b", "a"]):
            svc.build_index(msg("T", 100 * (i + 1), T0 + i, key))
        stored = svc.query_offsets_many(None, ["T#a", "T#b", "T#zz"])
        named = svc.query_offsets_many("T", ["a", "b", "zz"])
    assert [stored[i] for i in range(3)] == [named[i] for i in range(3)] == [[300, 100], [200], []]


def test_build_columns_skips_what_the_last_file_holds_on_the_slow_path_too(tmp_path):
    """buildIndex skips a message below the writable file's endPhyOffset. A NaN in KEYS (as
    pandas reads a missing value) sends build_columns to expand_columns, which must apply the
    same rule: 200 lies below 300 and is not indexed; 400 (its UNIQ_KEY) is."""
    import struct

    with IndexService(tmp_path, HSN, 16, read_only=False, tz=UTC) as svc:
        svc.build_index(msg("T", 300, T0, "a"))
        cols = pd.DataFrame({"topic": ["T", "T"], "phy_offset": [200, 400], "store_timestamp": [T0 + 1, T0 + 2],
                             "keys": ["b", np.nan], "uniq_key": [None, "U"], "sys_flag": [0, 0]})
        svc.build_columns(cols)
        got = svc.query_offsets_many("T", ["a", "b", "U"])
        path = svc.files[0].path
    assert [got[i] for i in range(3)] == [[300], [], [400]]
    header = struct.unpack(">qqqqii", path.read_bytes()[:40])
    assert (header[3], header[5]) == (400, 3)          # endPhyOffset, indexCount: two entries
