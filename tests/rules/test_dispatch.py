"""The dispatch rules against literal models written here, and each vectorized form against its
scalar form.

The models restate the broker's rules the plainest way (a loop, Java's semantics spelled out), so
a change in :mod:`rmqlab.rules.dispatch` that alters an answer fails here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.rules import dispatch as d

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DEFAULT_DELAYS_S = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]


# ------------------------------------------------------------------------------- models


def model_transaction_type(sys_flag: int) -> str:
    """Bits 2-3 of sysFlag, by name."""
    return {0: "not", 1: "prepared", 2: "commit", 3: "rollback"}[(sys_flag >> 2) & 3]


def model_goes_to_consume_queue(sys_flag: int) -> bool:
    return model_transaction_type(sys_flag) in ("not", "commit")


def model_goes_to_index(sys_flag: int) -> bool:
    return model_transaction_type(sys_flag) != "rollback"


def java_split_space(s: str) -> list[str]:
    """Java's String.split(" "): split on every space, then drop trailing empty strings."""
    parts, cur = [], ""
    for ch in s:
        if ch == " ":
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def model_index_keys(keys, uniq_key) -> list[str]:
    """buildIndex: UNIQ_KEY when not null (even ""), then each KEYS token with length > 0."""
    out = []
    if uniq_key is not None:
        out.append(uniq_key)
    if keys is not None and len(keys) > 0:
        for k in java_split_space(keys):
            if len(k) > 0:
                out.append(k)
    return out


def model_java_hash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def wrap64(x: int) -> int:
    return (x + 2**63) % 2**64 - 2**63


def model_tags_code(topic, tags, delay_level, store_ts) -> int:
    """checkMessageAndReturnSize: hashCode(TAGS) (0 for null or ""), replaced for a message in
    SCHEDULE_TOPIC_XXXX with DELAY > 0 (clamped to 18, the default table's top) by store time
    + the level's delay."""
    code = model_java_hash(tags) if tags else 0
    if topic == "SCHEDULE_TOPIC_XXXX" and delay_level is not None:
        level = min(int(delay_level), 18)
        if level > 0:
            code = wrap64(store_ts + DEFAULT_DELAYS_S[level - 1] * 1000)
    return code


def model_queue_offsets(rows, table):
    """topicQueueTable: row by row, NOT/COMMIT take the next offset of their queue, others 0."""
    table = dict(table)
    out = []
    for topic, qid, flag in rows:
        if model_goes_to_consume_queue(flag):
            k = (topic, qid)
            out.append(table.get(k, 0))
            table[k] = table.get(k, 0) + 1
        else:
            out.append(0)
    return out, table


# ------------------------------------------------------------------------------ strategies

flags = st.one_of(st.integers(0, 0x3F), st.integers(-(2**31), 2**31 - 1))
key_text = st.text(alphabet=st.sampled_from(["a", "b", " ", "é", "\u00a0", "#", "\t"]), max_size=12)
maybe_text = st.one_of(st.none(), key_text)
timestamps = st.one_of(st.integers(1_700_000_000_000, 1_800_000_000_000), st.integers(LONG_MIN, LONG_MAX))
topics = st.sampled_from(["T", "SCHEDULE_TOPIC_XXXX", "schedule_topic_xxxx"])
levels = st.integers(-3, 40)


# ------------------------------------------------------------------------ transaction types


def test_transaction_constants_are_the_sysflag_bits():
    assert (d.TRANSACTION_NOT_TYPE, d.TRANSACTION_PREPARED_TYPE, d.TRANSACTION_COMMIT_TYPE,
            d.TRANSACTION_ROLLBACK_TYPE, d.TRANSACTION_MASK) == (0, 4, 8, 12, 12)


@given(st.lists(flags, max_size=30))
def test_predicates_equal_the_model(fs):
    arr = np.array(fs, dtype=np.int64)
    assert [d.goes_to_consume_queue(f) for f in fs] == [model_goes_to_consume_queue(f) for f in fs]
    assert [d.goes_to_index(f) for f in fs] == [model_goes_to_index(f) for f in fs]
    assert d.goes_to_consume_queue_many(arr).tolist() == [model_goes_to_consume_queue(f) for f in fs]
    assert d.goes_to_index_many(arr).tolist() == [model_goes_to_index(f) for f in fs]
    assert d.goes_to_consume_queue_many(arr.astype(np.int32)).tolist() == [model_goes_to_consume_queue(f) for f in fs]


def test_every_transaction_type_exactly():
    # prepared half messages are indexed but not queued; rollbacks neither
    table = {0x0: (True, True), 0x4: (False, True), 0x8: (True, True), 0xC: (False, False)}
    for flag, (queue, index) in table.items():
        for other_bits in (0, 0x1, 0x10, 0x20, 0x33):
            f = flag | other_bits
            assert (d.goes_to_consume_queue(f), d.goes_to_index(f)) == (queue, index)


# ----------------------------------------------------------------------------- index keys


@pytest.mark.parametrize("keys, uniq, want", [
    (None, None, []),
    ("", None, []),
    ("", "", [""]),
    (" ", "U", ["U"]),
    ("a b", None, ["a", "b"]),
    ("  a  b  ", "U", ["U", "a", "b"]),
    ("a\tb c", None, ["a\tb", "c"]),          # only the space separates
    ("a\u00a0b", None, ["a\u00a0b"]),
])
def test_index_keys_examples(keys, uniq, want):
    assert d.index_keys(keys, uniq) == want
    assert model_index_keys(keys, uniq) == want


@settings(deadline=None)
@given(st.lists(st.tuples(maybe_text, maybe_text), max_size=25))
def test_index_keys_scalar_vectorized_and_model_agree(rows):
    keys = [k for k, _ in rows]
    uniq = [u for _, u in rows]
    want_rows, want_parts = [], []
    for i, (k, u) in enumerate(rows):
        parts = model_index_keys(k, u)
        assert d.index_keys(k, u) == parts
        want_rows += [i] * len(parts)
        want_parts += parts
    for kc, uc in ((keys, uniq), (pa.array(keys, pa.string()), pa.array(uniq, pa.string())),
                   (pd.Series(keys, dtype=object), pd.Series(uniq, dtype=object)),
                   (np.array(keys, dtype=object), np.array(uniq, dtype=object))):
        got_rows, got_parts = d.index_keys_many(kc, uc)
        assert got_rows.tolist() == want_rows
        assert got_parts.to_pylist() == want_parts
        assert got_parts.type == pa.large_string()
    tokens = d.key_tokens_many(keys).to_pylist()
    assert tokens == [None if k is None else model_index_keys(k, None) for k in keys]


def test_index_keys_many_treats_nan_as_missing():
    rows, parts = d.index_keys_many(pd.Series(["a", np.nan]), pd.Series([np.nan, "U"]))
    assert (rows.tolist(), parts.to_pylist()) == ([0, 1], ["a", "U"])


def test_index_keys_many_rejects_unequal_columns():
    with pytest.raises(ValueError, match="rows"):
        d.index_keys_many(["a"], [])


# ------------------------------------------------------------------------------ tags code


def test_delay_table_is_the_default_message_delay_level():
    assert d.DELAY_LEVEL_TABLE == {i + 1: s * 1000 for i, s in enumerate(DEFAULT_DELAYS_S)}


@settings(deadline=None, max_examples=300)
@given(topics, maybe_text, st.one_of(st.none(), levels), timestamps)
def test_message_tags_code_equals_the_model(topic, tags, level, store_ts):
    assert d.message_tags_code(topic, tags, level, store_ts) == model_tags_code(topic, tags, level, store_ts)


@settings(deadline=None)
@given(st.lists(st.tuples(topics, maybe_text, levels, timestamps), max_size=25))
def test_message_tags_codes_equals_the_scalar_form(rows):
    topic = [r[0] for r in rows]
    tags = [r[1] for r in rows]
    lv = [r[2] for r in rows]
    ts = [r[3] for r in rows]
    want = [d.message_tags_code(*r) for r in rows]
    assert want == [model_tags_code(*r) for r in rows]
    got = d.message_tags_codes(np.array(topic, dtype=object), np.array(tags, dtype=object),
                               np.array(lv, dtype=np.int64), np.array(ts, dtype=np.int64))
    assert got.dtype == np.int64 and got.tolist() == want


def test_message_tags_codes_with_a_custom_table():
    table = d.parse_delay_levels("2s 3m")
    got = d.message_tags_codes(["SCHEDULE_TOPIC_XXXX"] * 4, ["x"] * 4, [0, 1, 2, 9], [100] * 4, table)
    want = [d.message_tags_code("SCHEDULE_TOPIC_XXXX", "x", lv, 100, table) for lv in (0, 1, 2, 9)]
    assert got.tolist() == want == [model_java_hash("x"), 2100, 180100, 180100]


# -------------------------------------------------------------------------- queue offsets


@given(st.lists(st.tuples(st.sampled_from(["A", "B"]), st.integers(0, 2), st.sampled_from([0, 4, 8, 12, 0x18])),
                max_size=30),
       st.dictionaries(st.tuples(st.sampled_from(["A", "B", "C"]), st.integers(0, 2)), st.integers(0, 1000),
                       max_size=3))
def test_assign_queue_offsets_equals_the_model(rows, table):
    topics_ = np.array([r[0] for r in rows], dtype=object)
    qids = np.array([r[1] for r in rows], dtype=np.int64)
    sf = np.array([r[2] for r in rows], dtype=np.int64)
    got, got_table = d.assign_queue_offsets(topics_, qids, sf, table)
    want, want_table = model_queue_offsets(rows, table)
    assert got.tolist() == want and got_table == want_table
    # the table rebuilt from stored rows continues each queue where assignment left it
    rebuilt = d.next_queue_offsets(topics_, qids, sf, got)
    for k, v in rebuilt.items():
        assert v == want_table[k]
    assert set(rebuilt) == {(t, q) for t, q, f in rows if model_goes_to_consume_queue(f)}


@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from([0, 4, 8, 12, 0x18])), max_size=40),
       st.lists(st.integers(0, 1000), min_size=5, max_size=5))
def test_assign_queue_offsets_coded_equals_the_model(rows, start):
    table = np.array(start, np.int64)
    got = d.assign_queue_offsets_coded(np.array([q for q, _ in rows], np.int64),
                                       np.array([f for _, f in rows], np.int32), table)
    want, want_table = model_queue_offsets([("t", q, f) for q, f in rows], {("t", q): v for q, v in enumerate(start)})
    assert got.tolist() == want
    assert table.tolist() == [want_table[("t", q)] for q in range(5)]


# ------------------------------------------------------------------ 5.4.0+ TAGS index key

def test_tag_index_key_rule_54():
    """IndexService.buildIndex (rocketmq-store 5.4.0 / 5.5.0, javap): after UNIQ_KEY and the KEYS
    tokens, topic#T#tags for a non-empty TAGS, the whole string; 5.3.x and earlier: none."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from rmqlab.rules.dispatch import index_keys, index_keys_many, index_query_key, tag_index_key
    from rmqlab.rules.versions import layout_facts

    assert [layout_facts(v).index_tag_key for v in ("5.3.3", "5.4.0", "5.5.0")] == [False, True, True]
    assert index_keys("k1 k2", "U", "a||b", tag_key=True) == ["U", "k1", "k2", "T#a||b"]
    assert index_keys("k1", "U", "a", tag_key=False) == ["U", "k1"]
    assert tag_index_key("") is None and index_query_key("a", "T") == tag_index_key("a")

    text = st.one_of(st.none(), st.text(alphabet="ab T#", max_size=6))

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(text, text, text), max_size=8), st.booleans())
    def check(rows, tag_key):
        keys, uniq, tags = (list(c) for c in zip(*rows)) if rows else ([], [], [])
        msg, parts = index_keys_many(keys, uniq, tags, tag_key=tag_key)
        want = [(i, k) for i, r in enumerate(rows) for k in index_keys(*r, tag_key=tag_key)]
        assert list(zip(msg.tolist(), parts.to_pylist())) == want

    check()


# property_values filters the blocks by a search of the column's bytes: a name may sit across
# the end of one block and the start of the next, blocks may be malformed (pairs the broker's
# parser skips), null, empty, sliced out of a longer array or not ASCII.
_PROP_NAMES = ["INNER_NUM", "INNER_BASE", "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET", "TAGS", "N"]
_PROP_BLOCKS = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["\x01", "\x02", "INNER_", "NUM", "BASE", "N", "7", "é", ",", "_"]),
             max_size=12).map("".join),
    st.builds(lambda pairs, end: "\x02".join(f"{k}\x01{v}" for k, v in pairs) + end,
              st.lists(st.tuples(st.sampled_from(_PROP_NAMES + ["", "INNER"]),
                                 st.text(alphabet=st.sampled_from(list("17a,\x01é")), max_size=4)), max_size=4),
              st.sampled_from(["", "\x02", "\x02\x02"])))


def _property_values_model(blocks: list, name: str) -> list:
    """The definition: property_value of each block, Arrow's match_substring as the filter
    property_values used before its byte search."""
    import pyarrow.compute as pc

    arr = pa.array(blocks, type=pa.large_string())
    hit = pc.fill_null(pc.match_substring(arr, name + "\x01"), False).to_pylist()
    return [d.property_value(b, name) if h else None for b, h in zip(blocks, hit)]


@settings(max_examples=400, deadline=None)
@given(blocks=st.lists(_PROP_BLOCKS, max_size=12), name=st.sampled_from(_PROP_NAMES),
       cut=st.integers(0, 3))
def test_property_values_equal_the_scalar_rule(blocks, name, cut):
    want = [d.property_value(b, name) for b in blocks]
    assert _property_values_model(blocks, name) == want
    got = d.property_values(blocks, name)
    assert got.type == pa.string() and got.to_pylist() == want
    # a slice of a longer array: its offsets do not start at 0
    arr = pa.array([None, "INNER_NUM\x011"] * cut + blocks + ["N\x012"] * cut, type=pa.large_string())
    assert d.property_values(arr.slice(2 * cut, len(blocks)), name).to_pylist() == want
    assert d.property_values(np.array(blocks, dtype=object), name).to_pylist() == want


@settings(max_examples=400, deadline=None)
@given(blocks=st.lists(_PROP_BLOCKS, max_size=12), names=st.lists(st.sampled_from(_PROP_NAMES), min_size=1,
                                                                  max_size=4, unique=True), cut=st.integers(0, 3))
def test_property_values_many_equal_the_scalar_rule(blocks, names, cut):
    """One search for several names (one a suffix of another: N and INNER_NUM) finds what a
    search for each finds."""
    arr = pa.array(["INNER_NUM\x011", None] * cut + blocks + ["N"] * cut, type=pa.large_string())
    for column in (blocks, arr.slice(2 * cut, len(blocks))):
        got = d.property_values_many(column, tuple(names))
        assert sorted(got) == sorted(names)
        for name in names:
            assert got[name].type == pa.string()
            assert got[name].to_pylist() == [d.property_value(b, name) for b in blocks]
