"""Edge cases of rmqlab/store/keyquery.py that its other tests left open (found as mutants they
let survive, benchmarks/mutation.py).
The truth: "ORDER_Aa1" and "ORDER_BB1" share their Java String.hashCode ("Aa" and "BB" both hash
to 2112), the IndexFile header's big-endian layout read here with struct (beginTimestamp,
endTimestamp, beginPhyOffset, endPhyOffset, hashSlotCount, indexCount), and the rows each test
builds."""
from __future__ import annotations

import datetime as dt
import struct

import numpy as np
import pandas as pd
import pytest

from rmqlab.jvm.longs import LONG_MAX
from rmqlab.store.indexservice import IndexService
from rmqlab.store.keyquery import REASONS, OneFileIndex, query_key, query_many, result_table

B = 1718000000000


def store(tmp_path, rows, hash_slot_num=4, index_num=64):
    """rows: (topic, keys, store_timestamp); offsets 100, 200, ... in row order."""
    msgs = pd.DataFrame({
        "phy_offset": [100 * (i + 1) for i in range(len(rows))],
        "topic": [r[0] for r in rows], "keys": [r[1] for r in rows],
        "store_timestamp": [r[2] for r in rows], "uniq_key": None, "sys_flag": 0})
    s = IndexService(tmp_path, hash_slot_num, index_num, read_only=False, tz=dt.UTC, name_by_store_time=True)
    s.build_columns(msgs)
    return s, (lambda offs: msgs[msgs["phy_offset"].isin(offs)])


@pytest.fixture
def twins(tmp_path):
    """A collision (200 shares 100's hash) and a second real match (300)."""
    s, read = store(tmp_path, [("T", "ORDER_Aa1", B), ("T", "ORDER_BB1", B + 10), ("T", "ORDER_Aa1", B + 1700)])
    return s, read, query_key(s, read, "T", "ORDER_Aa1")


def test_frame_picks_the_mode(twins):
    _, _, q = twins
    assert q.frame("broker") is q.broker and q.frame("verified") is q.verified and q.frame() is q.verified
    assert sorted(q.frame("broker")["phy_offset"]) == [100, 200, 300]
    assert sorted(q.frame("verified")["phy_offset"]) == [100, 300]
    with pytest.raises(ValueError):
        q.frame("both")


def test_summary_counts_every_reason_and_zero_for_the_absent(twins):
    _, _, q = twins
    want = {"broker": 3, "verified": 2, "candidates": 3, **{k: 0 for k in REASONS}}
    want.update({"ok": 2, "collision": 1})
    assert q.summary() == want


def test_explain_names_the_query_and_each_problem(twins, tmp_path_factory):
    _, _, q = twins
    text = q.explain()
    lines = text.splitlines()
    assert text.startswith(str(q.trace))
    assert f"verified: 2 real matches of T#ORDER_Aa1 in [0, {LONG_MAX}] among 3 hash-matching entries" in lines
    assert [line for line in lines if line.startswith("  phy ")] == [
        f"  phy 200: collision: {q.diff.set_index('phy_offset').loc[200, 'detail']}"]
    s, read = store(tmp_path_factory.mktemp("alone"), [("T", "k", B)])
    clean = query_key(s, read, "T", "k").explain().splitlines()
    assert clean[-1] == "  the broker's answer is exactly right"
    assert not any(line.startswith("  phy ") for line in clean)


def test_result_table_in_verified_mode_keeps_the_verified_order_and_types(twins):
    _, _, q = twins
    rows = result_table(q, "verified")
    assert rows["phy_offset"].tolist() == [300, 100]               # newest first
    assert rows["reason"].tolist() == ["ok", "ok"]
    assert rows["broker_returned"].dtype == np.bool_ and rows["broker_returned"].tolist() == [True, True]
    assert rows["store_timestamp"].tolist() == [B + 1700, B]
    assert pd.api.types.is_integer_dtype(rows["store_timestamp"]) and rows["phy_offset"].dtype == np.int64
    broker = result_table(q, "broker")
    assert pd.api.types.is_integer_dtype(broker["store_timestamp"]) and broker["phy_offset"].dtype == np.int64


def test_an_empty_answer_still_has_integer_offsets(twins):
    s, read, _ = twins
    q = query_key(s, read, "T", "absent")
    for mode in ("broker", "verified"):
        rows = result_table(q, mode)
        assert rows.empty and rows["phy_offset"].dtype == np.int64


def _header(path):
    return struct.unpack(">qqqqii", path.read_bytes()[:40])


def test_one_file_index_records_the_file_as_its_header_says(tmp_path):
    s, read = store(tmp_path, [("T", "k", B + i * 1000) for i in range(8)], index_num=5)
    assert len(s.files) == 2
    for f in s.files:
        begin_ts, end_ts, _, end_phy, _, index_count = _header(f.path)
        q = query_key(OneFileIndex(f, 64), read, "T", "k", max_num=50, begin=0, end=LONG_MAX)
        t = q.trace
        (visit,) = t.files
        assert (visit.position, visit.name, visit.begin_timestamp, visit.end_timestamp, visit.index_count) == (
            0, f.path.name, begin_ts, end_ts, index_count)
        assert visit.offsets == t.result.phy_offsets and len(visit.offsets) == index_count - 1
        assert (t.key, t.requested_max_num, t.max_num, t.begin, t.end) == ("T#k", 50, 50, 0, LONG_MAX)
        assert (t.result.index_last_update_timestamp, t.result.index_last_update_phyoffset) == (end_ts, end_phy)


def test_a_reader_with_nullable_strings_does_not_match_missing_uniq_keys(tmp_path):
    """A MessageReader may return pandas' nullable "string" columns: a message without a
    UNIQ_KEY (NA there) is no match of a unique-key query."""
    rows = [("T", "U1", B + i, "U1" if i % 3 == 0 else None) for i in range(9)]
    msgs = pd.DataFrame({
        "phy_offset": [100 * (i + 1) for i in range(len(rows))],
        "topic": pd.array([r[0] for r in rows], dtype="string"),
        "keys": pd.array([r[1] for r in rows], dtype="string"),
        "store_timestamp": [r[2] for r in rows],
        "uniq_key": pd.array([r[3] for r in rows], dtype="string"), "sys_flag": 0})
    s = IndexService(tmp_path, 4, 64, read_only=False, tz=dt.UTC, name_by_store_time=True)
    s.build_columns(msgs.astype({"topic": object, "keys": object, "uniq_key": object}))
    q = query_key(s, lambda offs: msgs[msgs["phy_offset"].isin(offs)], "T", "U1", unique=True)
    want = sorted(100 * (i + 1) for i, r in enumerate(rows) if r[3] == "U1")
    assert sorted(q.verified["phy_offset"]) == want


def test_result_table_widens_a_readers_unsigned_offsets_to_int64(twins):
    """A MessageReader may give phy_offset as another integer type (here uint64, as an unsigned
    Parquet column reads): the table's offsets are int64 all the same."""
    s, read, _ = twins
    q = query_key(s, lambda offs: read(offs).astype({"phy_offset": np.uint64}), "T", "ORDER_Aa1")
    for mode, want in (("verified", [300, 100]), ("broker", [100, 200, 300])):
        rows = result_table(q, mode)
        assert rows["phy_offset"].dtype == np.int64 and rows["phy_offset"].tolist() == want


def strict_reader(read):
    """A MessageReader that takes CommitLog offsets only as the int64 array they are."""
    def reader(offs):
        assert isinstance(offs, np.ndarray) and offs.dtype == np.int64, offs.dtype
        return read(offs)
    return reader


def test_the_reader_gets_int64_offsets_even_when_nothing_matches(twins):
    s, read, _ = twins
    for key, begin, end, want in (("absent", 0, LONG_MAX, []),            # no entry, no answer
                                  ("ORDER_Aa1", B + 5000, B + 9000, [])):  # entries, none in range
        q = query_key(s, strict_reader(read), "T", key, begin=begin, end=end)
        assert q.verified["phy_offset"].tolist() == want
    q = query_key(s, strict_reader(read), "T", "ORDER_Aa1", begin=B + 5000, end=B + 9000)
    assert q.candidates == 3 and q.broker.empty


def test_a_reader_giving_a_message_twice_is_read_once(twins):
    """A reader over a table with a row per key of each message returns an offset more than
    once (rows that differ in other columns): each message counts once."""
    s, read, want = twins
    def twice(offs):
        rows = read(offs)
        return pd.concat([rows.assign(row=0), rows.assign(row=1)], ignore_index=True)
    q = query_key(s, twice, "T", "ORDER_Aa1")
    assert sorted(q.verified["phy_offset"]) == sorted(want.verified["phy_offset"]) == [100, 300]
    assert q.broker["phy_offset"].tolist() == want.broker["phy_offset"].tolist() == [100, 200, 300]
    assert q.summary() == want.summary()


def test_a_key_ending_in_nul_is_matched_whole(tmp_path):
    """A Java String may end in U+0000: the key "k\\0" is not the key "k" (NumPy's fixed-width
    unicode arrays would cut the NUL off)."""
    rows = [("T", "k\x00", B), ("T", "k", B + 1000)]
    s, read = store(tmp_path, rows)
    q = query_key(s, read, "T", "k\x00")
    assert q.verified["phy_offset"].tolist() == [100]
    assert query_many(s, read, "T", ["k\x00", "k"], mode="verified")["phy_offset"].tolist() == [100, 200]
    msgs = pd.DataFrame({"phy_offset": [100, 200], "topic": ["T", "T"], "keys": [None, None],
                         "store_timestamp": [B, B + 1000], "uniq_key": ["U\x00", "U"], "sys_flag": 0})
    u = IndexService(tmp_path / "u", 4, 64, read_only=False, tz=dt.UTC, name_by_store_time=True)
    u.build_columns(msgs)
    q = query_key(u, lambda offs: msgs[msgs["phy_offset"].isin(offs)], "T", "U\x00", unique=True)
    assert q.verified["phy_offset"].tolist() == [100]


def test_one_file_index_names_why_its_walk_stopped(tmp_path):
    s, read = store(tmp_path, [("T", "k", B + i * 1000) for i in range(4)])
    (f,) = s.files
    assert query_key(OneFileIndex(f, 64), read, "T", "k", max_num=50).trace.stop == "oldest-file"
    assert query_key(OneFileIndex(f, 64), read, "T", "k", max_num=2).trace.stop == "max-num"
    assert query_key(OneFileIndex(f, 3), read, "T", "k", max_num=50).trace.stop == "max-num"


READER_COLUMNS = ["phy_offset", "topic", "keys", "store_timestamp", "uniq_key", "sys_flag"]


def test_the_frames_hold_the_readers_columns_after_their_own(twins):
    _, _, q = twins
    assert q.broker.columns.tolist() == ["rank"] + READER_COLUMNS
    assert q.broker["rank"].tolist() == [0, 1, 2] and q.broker.index.tolist() == [0, 1, 2]
    assert q.verified.columns.tolist() == ["broker_returned"] + READER_COLUMNS
    assert q.verified.index.tolist() == [0, 1]
    assert (q.unique, q.topic, q.key) == (False, "T", "ORDER_Aa1")


def test_explain_leaves_a_blank_line_after_the_trace(twins):
    _, _, q = twins
    lines = q.explain().splitlines()
    assert lines[len(str(q.trace).splitlines())] == ""


def test_each_reason_has_its_detail(tmp_path):
    """The broker returns 300, which the reader cannot find, 200 (ORDER_BB1 shares the hash)
    and 100 (a real match: no detail). Then a real match the index's whole seconds put in the
    range, though its store time in ms is outside it."""
    s, read = store(tmp_path, [("T", "ORDER_Aa1", B + 1700), ("T", "ORDER_BB1", B + 1800),
                               ("T", "ORDER_Aa1", B + 2200)])
    q = query_key(s, lambda offs: read(offs[offs != 300]), "T", "ORDER_Aa1", begin=B + 1000, end=B + 2500)
    detail = dict(zip(q.diff["phy_offset"], zip(q.diff["reason"], q.diff["detail"])))
    assert q.trace.result.phy_offsets == [300, 200, 100]
    assert detail == {300: ("collision", "no message starts at this offset"),
                      200: ("collision", "the message is T#ORDER_BB1"),
                      100: ("ok", "")}
    rows = result_table(q, "broker")
    assert rows["store_timestamp"].isna().tolist() == [False, False, True]
    assert rows["reason"].tolist() == ["ok", "collision", "collision"]
    s2, read2 = store(tmp_path / "late", [("T", "k", B), ("T", "k", B + 1700)])
    q = query_key(s2, read2, "T", "k", begin=B + 1000, end=B + 1500)
    assert q.diff.values.tolist() == [
        [200, "outside-time-range", f"real store time {B + 1700} (06:13:21.700 UTC) is outside "
                                    f"[{B + 1000} (06:13:21.000 UTC), {B + 1500} (06:13:21.500 UTC)]"]]


def test_a_unique_key_collision_names_the_uniq_key(tmp_path):
    msgs = pd.DataFrame({"phy_offset": [100, 200], "topic": ["T", "T"], "keys": [None, None],
                         "store_timestamp": [B, B + 1000], "uniq_key": ["ORDER_Aa1", "ORDER_BB1"], "sys_flag": 0})
    s = IndexService(tmp_path, 4, 64, read_only=False, tz=dt.UTC, name_by_store_time=True)
    s.build_columns(msgs)
    q = query_key(s, lambda offs: msgs[msgs["phy_offset"].isin(offs)], "T", "ORDER_Aa1", unique=True)
    assert q.unique is True and q.max_num == 32
    assert q.diff.values.tolist() == [[200, "collision", "the message is T#ORDER_BB1"], [100, "ok", ""]]


def test_a_real_match_no_index_entry_points_at(tmp_path):
    """A reader that answers with whole blocks of messages brings real matches the index does
    not hold (here a rolled-back transaction message, which buildIndex skips): each is named."""
    msgs = pd.DataFrame({"phy_offset": [100, 200, 300], "topic": ["T"] * 3, "keys": ["k"] * 3,
                         "store_timestamp": [B, B + 1000, B + 2000], "uniq_key": None,
                         "sys_flag": [0, 0xC, 0]})
    s = IndexService(tmp_path, 4, 64, read_only=False, tz=dt.UTC, name_by_store_time=True)
    s.build_columns(msgs)
    q = query_key(s, lambda offs: msgs, "T", "k")
    assert q.trace.result.phy_offsets == [300, 100]
    assert q.diff.values.tolist() == [[300, "ok", ""], [100, "ok", ""],
                                      [200, "missed-not-visited", "no index entry points at it"]]
    assert q.candidates == 2


def test_no_entry_means_no_candidate(twins):
    s, read, _ = twins
    assert query_key(s, read, "T", "absent").candidates == 0


def test_query_many_reads_from_time_zero_by_default(tmp_path):
    s, read = store(tmp_path, [("T", "k", 0), ("T", "k", 1000)])
    for mode in ("broker", "verified"):
        assert sorted(query_many(s, read, "T", ["k"], mode=mode)["phy_offset"]) == [100, 200]
    assert sorted(query_key(s, read, "T", "k").verified["phy_offset"]) == [100, 200]


def test_query_many_verified_lists_every_real_match_and_its_columns(tmp_path):
    """70 real matches of one key in one file: broker mode stops at max_num (64), verified mode
    walks the whole chain and lists all 70, newest first, with its columns in the documented order."""
    s, read = store(tmp_path, [("T", "k", B + 1000 * i) for i in range(70)], index_num=128)
    broker = query_many(s, read, "T", ["k"])
    assert len(broker) == 64 and broker.columns.tolist() == ["key_index", "query_topic", "query_key", "rank"] + \
        READER_COLUMNS
    verified = query_many(s, read, "T", ["k"], mode="verified")
    assert verified.columns.tolist() == ["key_index", "query_topic", "query_key", "broker_returned"] + READER_COLUMNS
    assert verified["phy_offset"].tolist() == [100 * (i + 1) for i in range(69, -1, -1)]
    assert verified["broker_returned"].dtype == np.bool_ and verified["broker_returned"].sum() == 64
    assert verified.index.tolist() == list(range(70))


def test_query_many_reads_each_message_once_and_orders_equal_times_by_offset(tmp_path):
    """Two real matches stored in the same ms: verified mode puts the newest offset first, as for
    distinct times; broker mode is by offset (queryMessage sorts); a reader that gives each
    message twice (rows that differ elsewhere) changes nothing."""
    s, read = store(tmp_path, [("T", "k", B), ("T", "k", B + 1000), ("T", "k", B + 1000)])
    def twice(offs):
        rows = read(offs)
        return pd.concat([rows.assign(row=0), rows.assign(row=1)], ignore_index=True)
    for reader in (read, twice):
        for mode in ("broker", "verified"):
            t = query_many(s, reader, "T", ["k"], mode=mode)
            want = [100, 200, 300] if mode == "broker" else [300, 200, 100]
            assert t["phy_offset"].tolist() == want, (reader, mode)


def test_each_missed_match_is_named_after_one_no_index_entry_points_at(tmp_path):
    """max_num 1: the broker returns 300 only. 200 is a rolled-back message (not indexed), and
    100 a real match the walk stopped before (max-num): both named, in verified order."""
    msgs = pd.DataFrame({"phy_offset": [100, 200, 300], "topic": ["T"] * 3, "keys": ["k"] * 3,
                         "store_timestamp": [B, B + 1000, B + 2000], "uniq_key": None,
                         "sys_flag": [0, 0xC, 0]})
    s = IndexService(tmp_path, 4, 64, read_only=False, tz=dt.UTC, name_by_store_time=True)
    s.build_columns(msgs)
    q = query_key(s, lambda offs: msgs, "T", "k", max_num=1)
    name = s.files[0].path.name
    assert q.diff.values.tolist() == [[300, "ok", ""], [200, "missed-not-visited", "no index entry points at it"],
                                      [100, "missed-max-num", f"the walk in {name} stopped first (max-num)"]]


def missed_alone(tmp_path, rows, begin, end):
    """The store of `rows`, and the diff rows of the query for T#k in [begin, end], which the
    broker answers with nothing."""
    s, read = store(tmp_path, rows)
    q = query_key(s, read, "T", "k", begin=begin, end=end)
    assert q.broker.empty
    return s, q.diff.values.tolist()


def test_a_match_the_index_puts_outside_the_range_is_missed_for_its_time(tmp_path):
    """Stored 1.999 s after the file's first message, the index keeps 1 s: it reads as B + 1000,
    before the range [B + 1500, B + 2500] that holds its real store time."""
    _, diff = missed_alone(tmp_path, [("T", "k", B), ("T", "k", B + 1999)], B + 1500, B + 2500)
    assert diff == [
        [200, "missed-time", f"the index says {B + 1000} (06:13:21.000 UTC), "
                             f"the message was stored at {B + 1999} (06:13:21.999 UTC)"]]


def test_query_many_broker_mode_keeps_to_end(tmp_path):
    s, read = store(tmp_path, [("T", "k", B + 1000 * i) for i in range(5)])
    t = query_many(s, read, "T", ["k"], begin=B + 1000, end=B + 2500)
    assert t["phy_offset"].tolist() == query_key(s, read, "T", "k", begin=B + 1000, end=B + 2500).broker[
        "phy_offset"].tolist() == [200, 300]


def test_query_many_verified_rows_go_key_by_key_newest_first(tmp_path):
    """Two keys over three files (index_num 3: two keys a file), max_num 1: the broker's one
    offset a key comes first in the walk, the other real matches after it; the table is sorted
    by key, then newest first, and numbered from 0."""
    rows = [("T", ("a", "b")[i % 2], B + 1000 * i) for i in range(6)]
    s, read = store(tmp_path, rows, index_num=3)
    assert len(s.files) == 3
    t = query_many(s, read, "T", ["a", "b"], max_num=1, mode="verified")
    assert t[["key_index", "phy_offset"]].values.tolist() == [[0, 500], [0, 300], [0, 100],
                                                               [1, 600], [1, 400], [1, 200]]
    assert t.index.tolist() == list(range(6)) and t["broker_returned"].tolist() == [True, False, False] * 2


def test_query_many_of_no_keys_is_an_empty_table_of_the_same_columns(twins):
    s, read, _ = twins
    for mode, first in (("broker", "rank"), ("verified", "broker_returned")):
        t = query_many(s, read, [], [], mode=mode)
        assert t.empty and t.columns.tolist()[:4] == ["key_index", "query_topic", "query_key", first]
        assert t["query_topic"].dtype == object and t["query_key"].dtype == object


def _clock(ms: int) -> str:
    """An epoch-ms time as rmqlab.tables.display shows it, computed here with datetime."""
    t = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return f"{ms} ({t:%H:%M:%S}.{ms % 1000:03d} UTC)"


def test_a_match_in_a_file_the_walk_skipped_names_the_files_times_and_its_own(tmp_path):
    """The store clock went back: puts at B + 5 s, B + 1 s, B + 6 s in one file, whose header
    (read here with struct) then covers [B + 5 s, B + 6 s]. IndexFile.isTimeMatched rejects the
    file for [B + 0.5 s, B + 1.5 s], so the real match stored at B + 1 s is missed there."""
    s, diff = missed_alone(tmp_path, [("T", "k", B + 5000), ("T", "k", B + 1000), ("T", "k", B + 6000)],
                           B + 500, B + 1500)
    assert len(s.files) == 1
    path = s.files[0].path
    begin_ts, end_ts = _header(path)[:2]
    assert (begin_ts, end_ts) == (B + 5000, B + 6000)
    assert diff == [
        [200, "missed-file-skipped", f"file {path.name} covers [{_clock(begin_ts)}, {_clock(end_ts)}], "
                                     f"the message was stored at {_clock(B + 1000)}"]]


def test_query_many_keeps_the_readers_column_types(tmp_path):
    """A reader giving Arrow-backed columns (as one reading Parquet would) gets them back in both
    modes, with the same values as a reader giving NumPy ones; phy_offset stays the index's Java
    longs (int64), as result_table gives them."""
    s, read = store(tmp_path, [("T", "ORDER_Aa1", B), ("T", "ORDER_BB1", B + 10), ("T", "ORDER_Aa1", B + 1700)])
    def arrow(offs):
        return read(offs).convert_dtypes(dtype_backend="pyarrow")
    for mode in ("broker", "verified"):
        plain = query_many(s, read, "T", ["ORDER_Aa1"], mode=mode)
        typed = query_many(s, arrow, "T", ["ORDER_Aa1"], mode=mode)
        kinds = arrow(np.array([100, 200, 300], dtype=np.int64)).dtypes
        for c in ("topic", "keys", "store_timestamp", "sys_flag"):
            assert typed[c].dtype == kinds[c], (mode, c)
            assert typed[c].tolist() == plain[c].tolist(), (mode, c)
        assert typed["phy_offset"].tolist() == plain["phy_offset"].tolist()
        assert typed["phy_offset"].dtype == plain["phy_offset"].dtype == np.int64


def test_unreached_gives_a_message_indexed_twice_once_at_its_newest_entry(tmp_path):
    """KEYS "k k": buildIndex puts the message once per key (IndexService.buildIndex splits KEYS
    on spaces and does not dedupe), entries 1 and 2; then 200 (entry 3) and 300 (entry 4).
    max_num 1 returns 300; the walk never reads 200 or 100, and 100 is listed once, at entry 2,
    the one the walk would have met first."""
    s, read = store(tmp_path, [("T", "k k", B), ("T", "k", B + 1000), ("T", "k", B + 2000)])
    name = s.files[0].path.name
    entries = struct.unpack(">qqqqii", s.files[0].path.read_bytes()[:40])[5] - 1
    assert entries == 4
    q = query_key(s, read, "T", "k", max_num=1)
    assert q.broker["phy_offset"].tolist() == [300]
    got = q.unreached()
    assert got[["file", "entry", "phy_offset", "reason"]].values.tolist() == [
        [name, 3, 200, "missed-max-num"], [name, 2, 100, "missed-max-num"]]


def test_unreached_with_a_file_the_walk_never_reached(tmp_path):
    """Two files (index_num 3: two entries a file), max_num 1: the newer file's walk fills the
    room, so the older file is never searched; only the newer file's unread match is unreached."""
    s, read = store(tmp_path, [("T", "k", B), ("T", "k", B + 1000), ("T", "k", B + 2000), ("T", "k", B + 3000)],
                    index_num=3)
    assert len(s.files) == 2
    q = query_key(s, read, "T", "k", max_num=1)
    assert [v.action for v in q.trace.files].count("not-visited") == 1
    newer = s.files[1].path.name
    assert q.unreached()[["file", "entry", "phy_offset"]].values.tolist() == [[newer, 1, 300]]
