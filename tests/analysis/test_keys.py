"""Key tables of a store: the keys its messages carry and the index entries that keep them.

Independent truth: keys split by hand in plain Python, the Java hash of tests/support/reference_model.py,
and a small index built from known messages (each entry's file, offset and stored second are
known from the message times), plus the sample store's known colliding ORDER_Aa<i> / ORDER_BB<i>.
"""
from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from reference_model import stored_hash

from rmqlab.analysis.keys import (
    INDEX_ENTRY_COLUMNS,
    colliding_keys,
    hash_matching_entries,
    index_entries,
    key_entries,
    key_occurrences,
    suggested_keys,
)
from rmqlab.store.indexservice import IndexService

B = 1_718_000_000_250          # a begin timestamp with milliseconds: stored times lag by 0-999 ms
UTC = dt.UTC


def messages(rows):
    """rows: (topic, keys, uniq_key, store_timestamp[, sys_flag]); offsets 100, 200, ..."""
    return pd.DataFrame({
        "phy_offset": [100 * (i + 1) for i in range(len(rows))],
        "topic": [r[0] for r in rows], "keys": [r[1] for r in rows], "uniq_key": [r[2] for r in rows],
        "store_timestamp": [r[3] for r in rows], "sys_flag": [r[4] if len(r) > 4 else 0 for r in rows]})


def test_key_occurrences_are_the_uniq_key_and_each_keys_token():
    m = messages([("T", "a b", "U1", B), ("T", "a  a", None, B + 1), ("T", None, "U3", B + 2),
                  ("T", "x", "U4", B + 3, 0xC), ("T", "y", None, B + 4, 0x8)])
    got = key_occurrences(m)
    want = set()
    for row in m.itertuples():
        if row.sys_flag & 0xC == 0xC:          # a rolled-back transaction is never indexed
            continue
        keys = ([row.uniq_key] if row.uniq_key else []) + [k for k in (row.keys or "").split(" ") if k]
        want |= {(row.topic, k, row.phy_offset, row.store_timestamp) for k in keys}
    assert set(map(tuple, got[["topic", "key", "phy_offset", "store_timestamp"]].values.tolist())) == want
    assert len(got) == len(want)                # "a  a" counts once
    assert list(got.columns) == ["topic", "key", "phy_offset", "store_timestamp"]


def test_no_messages_give_empty_tables_with_their_columns():
    occ = key_occurrences(messages([]))
    assert occ.empty and list(occ.columns) == ["topic", "key", "phy_offset", "store_timestamp"]
    assert list(colliding_keys(occ).columns) == ["topic", "key", "index_key", "hash", "shares_with"]


def test_colliding_keys_share_a_stored_hash():
    keys = ["Aa", "BB", "AaAa", "BBBB", "AaBB", "c", "d"]
    occ = pd.DataFrame({"topic": "T", "key": keys + ["Aa"]})       # a repeat is one key
    got = colliding_keys(occ)
    by_hash = {}
    for k in keys:
        by_hash.setdefault(stored_hash(f"T#{k}"), []).append(k)
    want = {k: len(ks) - 1 for ks in by_hash.values() if len(ks) > 1 for k in ks}
    assert dict(zip(got["key"], got["shares_with"])) == want
    assert [stored_hash(k) for k in got["index_key"]] == got["hash"].tolist()
    assert got["hash"].is_monotonic_increasing


def test_suggested_keys_are_the_hottest_then_the_colliding():
    occ = pd.DataFrame({"topic": ["T"] * 6 + ["U"],
                        "key": ["hot", "hot", "hot", "warm", "warm", "Aa", "BB"]})
    collisions = colliding_keys(pd.DataFrame({"topic": "T", "key": ["Aa", "BB", "hot"]}))
    assert suggested_keys(occ, collisions, "T", 2) == ["hot", "warm", "Aa", "BB"]
    assert suggested_keys(occ, collisions, "T", 1) == ["hot", "Aa"]
    assert suggested_keys(occ, collisions, "nothing", 5) == []


@pytest.fixture()
def small_index(tmp_path):
    m = messages([("T", "Aa", None, B + 100), ("T", "BB", None, B + 1_900), ("T", "c", "U", B + 2_200)])
    with IndexService(tmp_path, 4, 64, read_only=False, tz=UTC, name_by_store_time=True) as s:
        s.build_columns(m)
    return tmp_path, m


def test_index_entries_put_each_entry_next_to_its_message(small_index):
    root, m = small_index
    with IndexService(root, 4, 64) as idx:
        entries = index_entries(idx, m)
        name = idx.files[0].path.name
    assert list(entries.columns) == INDEX_ENTRY_COLUMNS
    assert entries["entry"].tolist() == [1, 2, 3, 4]                  # entry 0 is never written
    assert entries["phy_offset"].tolist() == [100, 200, 300, 300]
    assert (entries["file"] == name).all() and (entries["file_begin"] == B + 100).all()
    assert (entries["file_end"] == B + 2_200).all()
    # stored: whole seconds after the file's begin (B + 100)
    assert entries["stored_ms"].tolist() == [B + 100, B + 1_100, B + 2_100, B + 2_100]
    assert entries["lag_ms"].tolist() == [0, 800, 100, 100]
    assert entries["key_hash"].tolist() == [stored_hash(k) for k in ("T#Aa", "T#BB", "T#U", "T#c")]


def test_index_entries_of_an_empty_folder_have_the_columns(tmp_path):
    with IndexService(tmp_path, 4, 64) as idx:
        assert list(index_entries(idx, messages([])).columns) == INDEX_ENTRY_COLUMNS


def test_key_entries_leave_out_the_keys_that_only_share_the_hash(small_index):
    root, m = small_index
    with IndexService(root, 4, 64) as idx:
        entries = index_entries(idx, m)
        phy, stored = hash_matching_entries(idx.files, "T", "Aa")
    occ = key_occurrences(m)
    assert key_entries(entries, occ, "T", "Aa")["phy_offset"].tolist() == [100]
    assert key_entries(entries, occ, "T", "BB")["phy_offset"].tolist() == [200]
    assert key_entries(entries, occ, "T", "nothing").empty
    # the broker's chain walk finds both: it compares hashes, newest first
    assert phy.tolist() == [200, 100] and stored.tolist() == [B + 1_100, B + 100]
    assert phy.dtype == stored.dtype == np.int64


def test_sample_store_collisions_include_the_designed_pairs():
    from rmqlab.lab.sample import sample_store

    occ = key_occurrences(sample_store().messages())
    got = colliding_keys(occ)
    orders = set(got[got["topic"] == "Orders"]["key"])
    assert {f"ORDER_Aa{i}" for i in range(12)} | {f"ORDER_BB{i}" for i in range(12)} <= orders


def test_key_timeline_marks_each_message_and_entry_as_the_query_treated_it():
    """On the sample store's ORDER_Aa0 (ORDER_BB0 shares its hash), over the middle of the store:
    messages and entries classified by hand from the CommitLog, the raw entries and the
    broker's answer."""
    from rmqlab.analysis.keys import key_timeline
    from rmqlab.lab.sample import sample_store

    store = sample_store()
    messages = store.messages()
    first, last = int(messages["store_timestamp"].min()), int(messages["store_timestamp"].max())
    begin, end = first + (last - first) // 4, first + 3 * (last - first) // 4
    q = store.explain_key("Orders", "ORDER_Aa0", begin=begin, end=end)
    with store.index() as idx:
        t = key_timeline(q, key_occurrences(messages), idx.files)
        every_entry = index_entries(idx, messages)
    orders = messages[messages["topic"] == "Orders"]
    carries = orders["keys"].fillna("").str.split(" ").map(lambda tokens: "ORDER_Aa0" in tokens)
    real = orders[carries]
    returned = set(q.trace.result.phy_offsets)
    want = {}
    for phy, ts in zip(real["phy_offset"], real["store_timestamp"]):
        want[int(phy)] = "returned" if phy in returned else "missed" if begin <= ts <= end else "outside"
    assert dict(zip(t.messages["phy_offset"], t.messages["kind"])) == want
    assert set(want.values()) == {"returned", "outside"}             # the window cuts the key's messages
    assert t.messages["store_timestamp"].is_monotonic_increasing
    same_hash = every_entry[every_entry["key_hash"] == stored_hash("Orders#ORDER_Aa0")]
    assert sorted(zip(t.entries["phy_offset"], t.entries["stored_ms"])) == \
        sorted(zip(same_hash["phy_offset"], same_hash["stored_ms"]))
    for e in t.entries.itertuples():
        if e.phy_offset not in want:                                  # ORDER_BB0's messages
            assert e.kind == "collision" and e.message == -1
        else:
            assert t.messages["phy_offset"].iloc[e.message] == e.phy_offset
            assert e.kind == ("returned" if e.phy_offset in returned else "not-returned")
    counts = t.counts()
    assert counts["entries collision"] > 0 and counts["entries collision"] + counts["entries returned"] \
        + counts["entries not-returned"] == len(same_hash)
    # the collisions the broker returned are exactly the "collision" rows of the comparison
    assert (t.entries["kind"].eq("collision") & t.entries["returned"]).sum() == q.summary()["collision"]
