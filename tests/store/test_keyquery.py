"""Key queries in broker and verified mode: each kind of broker error shown on purpose-built
stores, and verified mode checked against a brute-force scan of every message."""
import datetime as dt

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.jvm.longs import LONG_MAX
from rmqlab.store.indexservice import IndexService
from rmqlab.store.keyquery import MODES, OneFileIndex, first_with_reason, query_key, query_many, result_table

B = 1718000000000
UTC = dt.UTC


def store(tmp_path, rows, hash_slot_num=4, index_num=64):
    """rows: (topic, keys, store_timestamp[, uniq_key]); offsets 100, 200, ... in row order."""
    msgs = pd.DataFrame({
        "phy_offset": [100 * (i + 1) for i in range(len(rows))],
        "topic": [r[0] for r in rows], "keys": [r[1] for r in rows],
        "store_timestamp": [r[2] for r in rows],
        "uniq_key": [r[3] if len(r) > 3 else None for r in rows], "sys_flag": 0})
    s = IndexService(tmp_path, hash_slot_num, index_num, read_only=False, tz=UTC, name_by_store_time=True)
    s.build_columns(msgs)
    return s, (lambda offs: msgs[msgs["phy_offset"].isin(offs)])


def reasons(q):
    return dict(zip(q.diff["phy_offset"], q.diff["reason"]))


def test_hash_collision_returned_by_broker_dropped_by_verified(tmp_path):
    s, read = store(tmp_path, [("T", "ORDER_Aa1", B), ("T", "ORDER_BB1", B + 10), ("T", "other", B + 20)])
    q = query_key(s, read, "T", "ORDER_Aa1")
    assert sorted(q.broker["phy_offset"]) == [100, 200]            # both share the hash
    assert q.verified["phy_offset"].tolist() == [100]
    assert reasons(q) == {100: "ok", 200: "collision"}


def test_second_truncation_both_ways(tmp_path):
    # stored as whole seconds after B: the message at B+1700 is indexed as B+1000
    s, read = store(tmp_path, [("T", "k", B), ("T", "k", B + 1700)])
    missed = query_key(s, read, "T", "k", begin=B + 1500, end=B + 2000)
    assert missed.broker.empty and missed.verified["phy_offset"].tolist() == [200]
    assert reasons(missed) == {200: "missed-time"}
    wrong = query_key(s, read, "T", "k", begin=B + 500, end=B + 1200)
    assert wrong.broker["phy_offset"].tolist() == [200] and wrong.verified.empty
    assert reasons(wrong) == {200: "outside-time-range"}


def test_early_stop_on_out_of_order_store_times(tmp_path):
    # the broker clock steps back: an entry of another key looks older than `begin` and ends the
    # walk (time diffs are relative to the first entry, B, so the step back is visible)
    s, read = store(tmp_path, [("T", "y", B), ("T", "k", B + 10_000), ("T", "x", B + 2_000),
                               ("T", "k", B + 12_000)], hash_slot_num=1)
    q = query_key(s, read, "T", "k", begin=B + 5_000, end=B + 20_000)
    assert q.broker["phy_offset"].tolist() == [400]
    assert q.verified["phy_offset"].tolist() == [400, 200]
    assert reasons(q) == {400: "ok", 200: "missed-early-stop"}
    # the entry the walk never read: k's first message, entry 2 of the one file (entries are
    # numbered from 1 in put order), stored as whole seconds after B
    name, time_diff = s.files[0].path.name, s.files[0].entry(2).time_diff
    assert q.unreached().to_dict("records") == [
        {"file": name, "entry": 2, "phy_offset": 200, "time_read": B + 1000 * time_diff,
         "reason": "missed-early-stop"}]
    assert time_diff == 10
    # every hash-matching entry is kept, read or not
    assert sorted(q.hash_entries["phy_offset"]) == [200, 400]


def test_max_num_cut(tmp_path):
    rows = [("T", "hot", B + i) for i in range(70)] + [("T", "ORDER_BB1", B + 100)]
    s, read = store(tmp_path, rows, index_num=128)
    q = query_key(s, read, "T", "hot")
    assert len(q.broker) == 64 and len(q.verified) == 70
    assert q.summary()["missed-max-num"] == 6 and q.summary()["ok"] == 64
    # the six never read, newest first: the walk stopped after the 64 newest entries
    assert q.unreached()["phy_offset"].tolist() == [600, 500, 400, 300, 200, 100]
    assert set(q.unreached()["reason"]) == {"missed-max-num"}


def test_unique_key_query_caps_at_32_and_matches_uniq_only(tmp_path):
    rows = [("T", "U1", B + i, "U1" if i % 2 else None) for i in range(80)]
    s, read = store(tmp_path, rows, index_num=256)
    q = query_key(s, read, "T", "U1", unique=True)
    assert q.max_num == 32 and len(q.broker) == 32
    assert len(q.verified) == 40 and q.verified["uniq_key"].eq("U1").all()


def test_follow_on_seed_and_skipped_file(tmp_path):
    # files of 2 keys. File 2 starts with c@B+50s (seeded with file 1's end, B+1s: its stored diff
    # is 49 s, read back against its own begin as B+99s) and then k@B+5s: its header range is
    # [B+50s, B+5s], which a query ending exactly at B+5s does not touch (isTimeMatched is false)
    rows = [("T", "a", B), ("T", "b", B + 1000), ("T", "c", B + 50_000), ("T", "k", B + 5_000),
            ("T", "d", B + 60_000)]
    s, read = store(tmp_path, rows, index_num=3)
    skipped = query_key(s, read, "T", "k", begin=B + 4_900, end=B + 5_000)
    assert skipped.broker.empty and skipped.verified["phy_offset"].tolist() == [400]
    assert reasons(skipped) == {400: "missed-file-skipped"}
    seed = query_key(s, read, "T", "c", begin=B + 49_000, end=B + 51_000)
    assert seed.broker.empty and reasons(seed) == {300: "missed-time"}
    assert "99000" in seed.diff["detail"].iloc[0] or str(B + 99_000) in seed.diff["detail"].iloc[0]


def test_one_file_index_is_select_phy_offset_on_that_file_alone(tmp_path):
    # 4 entries a file: three files, and a query range no file's header range touches
    s, read = store(tmp_path, [("T", "k", B + i * 10) for i in range(12)], index_num=5)
    assert len(s.files) == 3
    for f in s.files:
        for cap, max_num in ((64, 64), (2, 64), (64, 3)):
            q = query_key(OneFileIndex(f, cap), read, "T", "k", max_num=max_num, begin=0, end=B - 1)
            assert q.trace.result.phy_offsets == []          # stored times are compared ...
            q = query_key(OneFileIndex(f, cap), read, "T", "k", max_num=max_num)
            want = f.select_phy_offsets("T#k", min(cap, max_num), 0, LONG_MAX)
            assert q.trace.result.phy_offsets == want and len(want) == min(cap, max_num, 4)
            assert [v.name for v in q.trace.files] == [f.path.name]
            assert q.trace.files[0].after == ("max-num" if min(cap, max_num) <= 4 else "oldest-file")
    one = query_key(OneFileIndex(s.files[0], 64), read, "T", "k", begin=B + 5_000, end=LONG_MAX)
    assert one.trace.files[0].action == "searched"            # ... but never the header range


def test_result_table_rows_and_reasons_in_both_modes(tmp_path):
    s, read = store(tmp_path, [("T", "ORDER_Aa1", B), ("T", "ORDER_BB1", B + 10), ("T", "ORDER_Aa1", B + 1700)])
    q = query_key(s, read, "T", "ORDER_Aa1", begin=B + 1000, end=LONG_MAX)
    broker = result_table(q, "broker")
    assert broker.columns.tolist() == ["rank", "phy_offset", "topic", "keys", "uniq_key", "store_time",
                                       "store_timestamp", "reason", "detail"]
    assert broker["phy_offset"].tolist() == q.trace.result.phy_offsets == [300]
    verified = result_table(q, "verified")
    assert verified.columns[0] == "broker_returned" and verified["phy_offset"].tolist() == [300]
    assert verified["store_time"].tolist() == ["2024-06-10T06:13:21.700Z"]
    everything = query_key(s, read, "T", "ORDER_Aa1")
    rows = result_table(everything, "broker")
    assert dict(zip(rows["phy_offset"], rows["reason"])) == reasons(everything) == {100: "ok", 200: "collision",
                                                                                    300: "ok"}
    assert rows["rank"].tolist() == [0, 1, 2]
    # the detail says why, as the comparison wrote it: the other key's message for the collision
    assert rows["detail"].tolist() == ["", "the message is T#ORDER_BB1", ""]
    with pytest.raises(ValueError, match="mode must be one of"):
        result_table(q, "both")


def test_first_with_reason_stops_at_the_first_hit(tmp_path):
    s, read = store(tmp_path, [("T", "ORDER_Aa1", B), ("T", "ORDER_BB1", B + 10), ("T", "ORDER_BB2", B + 20)])
    asked = []

    def query(m):
        asked.append(m.phy_offset)
        return query_key(s, read, "T", "ORDER_Aa1")

    msgs = read(np.array([100, 200, 300]))
    m, q, row = first_with_reason(msgs.itertuples(), "collision", query)
    # the query returns both ORDER_Aa1 (ok) and ORDER_BB1 (collision): only the second is a hit
    assert m.phy_offset == 200 and row.phy_offset == 200 and row.reason == "collision"
    assert q.key == "ORDER_Aa1" and asked == [100, 200]
    assert first_with_reason(msgs.itertuples(), "missed-max-num", query) == (None, None, None)
    assert first_with_reason([], "ok", query) == (None, None, None)


TOKENS = ["Aa", "BB", "AaAa", "BBBB", "AaBB", "k", "x"]   # the first five all share String.hashCode


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 90), index_num=st.integers(3, 40),
       step_back=st.booleans(), data=st.data())
def test_verified_equals_brute_force_and_diff_is_complete(tmp_path_factory, seed, n, index_num, step_back, data):
    rng = np.random.default_rng(seed)
    ts = B + np.cumsum(rng.integers(0 if not step_back else -3000, 1500, n))
    rows = [(str(rng.choice(["T", "U"])), " ".join(rng.choice(TOKENS, rng.integers(1, 3))), int(t)) for t in ts]
    s, read = store(tmp_path_factory.mktemp("q"), rows, hash_slot_num=3, index_num=index_num)
    topic, key = data.draw(st.sampled_from(["T", "U"])), data.draw(st.sampled_from(TOKENS))
    lo = int(data.draw(st.integers(int(ts.min()) - 2000, int(ts.max()) + 2000)))
    hi = int(data.draw(st.integers(lo, int(ts.max()) + 3000)))
    max_num = data.draw(st.integers(0, 70))
    q = query_key(s, read, topic, key, begin=lo, end=hi, max_num=max_num)
    brute = sorted(100 * (i + 1) for i, r in enumerate(rows)
                   if r[0] == topic and key in r[1].split(" ") and lo <= r[2] <= hi)
    assert sorted(q.verified["phy_offset"]) == brute
    # every broker offset is classified as returned; every missed truth as missed
    d = reasons(q)
    assert [d[p] for p in q.broker["phy_offset"]] == [
        "ok" if p in brute else d[p] for p in q.broker["phy_offset"]]
    assert all(not d[p].startswith("missed") for p in q.broker["phy_offset"])
    assert {p for p, r in d.items() if r.startswith("missed")} == set(brute) - set(q.broker["phy_offset"])
    # the broker's own answer: DefaultMessageStore.queryMessage sorts the service's queryOffset
    # (Collections.sort(phyOffsets), every release)
    assert q.broker["phy_offset"].tolist() == sorted(s.query_offset(topic, key, max_num, lo, hi).phy_offsets)
    s.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 90), index_num=st.integers(3, 40),
       step_back=st.booleans(), data=st.data())
def test_query_many_equals_brute_force_and_the_broker_key_by_key(tmp_path_factory, seed, n, index_num, step_back,
                                                                 data):
    rng = np.random.default_rng(seed)
    ts = B + np.cumsum(rng.integers(0 if not step_back else -3000, 1500, n))
    rows = [(str(rng.choice(["T", "U"])), " ".join(rng.choice(TOKENS, rng.integers(1, 3))), int(t),
             str(rng.choice(["ID1", "ID2", "ID3"]))) for t in ts]
    s, read = store(tmp_path_factory.mktemp("q"), rows, hash_slot_num=3, index_num=index_num)
    queries = data.draw(st.lists(st.tuples(st.sampled_from(["T", "U"]), st.sampled_from(TOKENS + ["ID1", "ID2"])),
                                 max_size=12))
    topics, keys = [t for t, _ in queries], [k for _, k in queries]
    lo = int(data.draw(st.integers(B - 2000, B + 150_000)))
    hi = int(data.draw(st.integers(lo, B + 160_000)))
    max_num = data.draw(st.one_of(st.integers(0, 3), st.integers(0, 70)))
    unique = data.draw(st.booleans())
    broker = query_many(s, read, topics, keys, begin=lo, end=hi, max_num=max_num, unique=unique)
    verified = query_many(s, read, topics, keys, begin=lo, end=hi, max_num=max_num, mode="verified", unique=unique)
    assert broker["key_index"].is_monotonic_increasing and verified["key_index"].is_monotonic_increasing
    for i, (topic, key) in enumerate(queries):
        mine = broker[broker["key_index"] == i]
        want = sorted(s.query_offset(topic, key, min(max_num, 32) if unique else max_num, lo, hi).phy_offsets)
        assert mine["phy_offset"].tolist() == want
        assert mine["rank"].tolist() == list(range(len(want)))
        assert (mine["query_topic"] == topic).all() and (mine["query_key"] == key).all()
        # the real matches, newest first, by a brute force over the rows
        truth = sorted(((r[2], 100 * (j + 1)) for j, r in enumerate(rows)
                        if r[0] == topic and lo <= r[2] <= hi
                        and (r[3] == key or (not unique and key in r[1].split(" ")))), reverse=True)
        v = verified[verified["key_index"] == i]
        assert v["phy_offset"].tolist() == [p for _, p in truth]
        assert v["broker_returned"].tolist() == [p in want for _, p in truth]
    s.close()


def test_query_many_bad_arguments(tmp_path):
    s, read = store(tmp_path, [("T", "a", B)])
    with pytest.raises(ValueError, match="mode must be one of"):
        query_many(s, read, "T", ["a"], mode="both")
    with pytest.raises(ValueError, match="2 topics for 1 keys"):
        query_many(s, read, ["T", "U"], ["a"])
    assert query_many(s, read, "T", []).empty
    s.close()


def test_query_many_unique_keys_stop_at_32_as_the_broker_does(tmp_path):
    s, read = store(tmp_path, [("T", "k", B + i, "ID") for i in range(40)])
    got = query_many(s, read, "T", ["ID", "k"], max_num=64, unique=True)   # the broker compares hashes only
    assert got["key_index"].value_counts().to_dict() == {0: 32, 1: 32}
    real = query_many(s, read, "T", ["ID", "k"], max_num=64, unique=True, mode="verified")
    assert real["key_index"].value_counts().to_dict() == {0: 40}                 # "k" is no UNIQ_KEY
    assert len(query_many(s, read, "T", ["k"], max_num=64)) == 40
    s.close()


def test_query_many_same_table_whatever_order_the_reader_gives():
    """A reader that gives the messages in its own order (reindexed by offset) and Store.read_at
    (row i for offset i: taken column by column) give the same table in both modes."""
    from rmqlab.lab.sample import sample_store

    s = sample_store()
    msgs = s.messages()
    picked = msgs[msgs["keys"].notna()].sample(60, random_state=5)
    topics = [*picked["topic"], "Orders", "Orders"]
    keys = [*(k.split(" ")[-1] for k in picked["keys"]), "ORDER_Aa0", "never stored"]
    shuffled = msgs.sample(frac=1.0, random_state=6)
    ts = msgs["store_timestamp"]
    with s.index() as idx:
        for mode in MODES:
            for window in (dict(), dict(begin=int(ts.quantile(0.2)), end=int(ts.quantile(0.5)), max_num=4)):
                got = query_many(idx, s.read_at, topics, keys, mode=mode, **window)
                want = query_many(idx, lambda offs: shuffled[shuffled["phy_offset"].isin(offs)], topics, keys,
                                  mode=mode, **window)
                assert len(got) > 20
                pd.testing.assert_frame_equal(got, want)
