"""rmqlab.formats.messagerocksdb judged by a byte-level model of 5.5's MessageRocksDBStorage: keys
built as IndexRocksDBRecord.getKeyBytes builds them (struct, here), kept in RocksDB's order (the
keys' bytes), decoded back to the records put; and queryOffsetForIndex emulated as Java runs it
(for each hour of the window, seek the prefix ``hour@topic@type@key@`` in the sorted keys and walk
on while it matches, keeping store times in the window). Against a real 5.5.0 broker's answers:
tests/brokers/test_rocketmq_brokers.py (the rocksdb-index scenario)."""
from __future__ import annotations

import bisect
import struct

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats import messagerocksdb as mr

HOUR = 3_600_000
BASE = 1_718_000_000_000 // HOUR * HOUR
TOPICS = ["T", "TopicA", "%RETRY%G"]
WORDS = ["k", "k-1", "k-10", "a@b", "订单", "x@", "tag1"]


def _key(hour: int, topic: str, kind: str, key: str | None, uniq: str, offset: int) -> bytes:
    middle = f"@{topic}@{kind}@" + (f"{key}@" if kind != "U" else "") + f"{uniq}@"
    return struct.pack(">q", hour) + middle.encode() + struct.pack(">q", offset)


@st.composite
def messages(draw):
    """Messages as IndexRocksDBStore.buildIndex indexes them: a K record each key, a T record
    for the tags, a U record always; unique keys sometimes holding '@' (the revive service's)."""
    out = []
    for i in range(draw(st.integers(1, 25))):
        t = BASE + draw(st.integers(0, 5 * HOUR))
        uniq = draw(st.sampled_from([f"{i:032X}", f"TopicOrder@{i}@2@G@ck"]))
        keys = draw(st.lists(st.sampled_from(WORDS), max_size=3, unique=True))
        tags = draw(st.one_of(st.none(), st.sampled_from(WORDS)))
        out.append((draw(st.sampled_from(TOPICS)), keys, tags, uniq, 1000 * i, t))
    return out


def _records(msgs):
    """(key bytes, value bytes) of every record, in RocksDB's order, and the decoded rows expected."""
    pairs, rows = [], []
    for topic, keys, tags, uniq, offset, t in msgs:
        hour = t // HOUR * HOUR
        for kind, k in [("K", k) for k in keys] + ([("T", tags)] if tags else []) + [("U", None)]:
            pairs.append((_key(hour, topic, kind, k, uniq, offset), struct.pack(">q", t)))
            rows.append((hour, topic, kind, k, uniq, offset, t))
    order = sorted(range(len(pairs)), key=lambda i: pairs[i][0])
    return [pairs[i] for i in order], [rows[i] for i in order]


@settings(max_examples=80, deadline=None)
@given(messages())
def test_records_decode_to_what_was_put(msgs):
    pairs, rows = _records(msgs)
    pairs.append((b"lastOffsetPy", struct.pack(">q", 99)))
    db = mr.decode_families({"default": pairs})
    got = db.index[["hour", "topic", "index_type", "key", "uniq_key", "phy_offset", "store_timestamp"]]
    assert [tuple(None if pd.isna(v) else v for v in r) for r in got.itertuples(index=False)] == rows
    assert db.index_last_offset == 99


def _model_query(pairs, topic, key, kind, begin, end, max_num):
    """queryOffsetForIndex over the sorted key bytes, as the Java loop walks them."""
    keys = [k for k, _ in pairs]
    found = []
    for hour in range(begin // HOUR * HOUR, end // HOUR * HOUR + 1, HOUR):
        prefix = struct.pack(">q", hour) + f"@{topic}@{kind}@{key}@".encode()
        i = bisect.bisect_left(keys, prefix)
        while i < len(keys) and keys[i].startswith(prefix):
            t = struct.unpack(">q", pairs[i][1])[0]
            if begin <= t <= end:
                found.append(struct.unpack(">q", keys[i][-8:])[0])
                if len(found) >= max_num:
                    return found
            i += 1
    return found


@settings(max_examples=80, deadline=None)
@given(messages(), st.sampled_from(TOPICS),
       st.sampled_from(WORDS + ["TopicOrder@3@2@G@ck", "00000000000000000000000000000003"]),
       st.integers(0, 6 * HOUR), st.integers(0, 6 * HOUR), st.integers(1, 70), st.sampled_from([None, "K", "T", "U"]))
def test_queries_walk_as_query_offset_for_index(msgs, topic, key, a, b, max_num, kind):
    pairs, _ = _records(msgs)
    db = mr.decode_families({"default": pairs})
    begin, end = BASE + min(a, b), BASE + max(a, b)
    got = mr.query_index(db, topic, key, max_num=max_num, begin=begin, end=end, index_type=kind)
    cap = min(max_num, mr.MAX_MSGS_NUM_BATCH)
    if kind:
        want = _model_query(pairs, topic, key, kind, begin, end, cap)
    else:   # an old client: K, and U where K finds nothing
        want = _model_query(pairs, topic, key, "K", begin, end, cap) or _model_query(pairs, topic, key, "U", begin,
                                                                                      end, cap)
    assert got == want
    # a begin of 0 asks the seven days before now
    assert mr.query_index(db, topic, key, max_num=max_num, index_type=kind, now=end) == \
        (_model_query(pairs, topic, key, kind or "K", end - 7 * 24 * HOUR, end, cap)
         or ([] if kind else _model_query(pairs, topic, key, "U", end - 7 * 24 * HOUR, end, cap)))
