"""verify's key codes of a decoded chunk (check_commitlog._chunk_key_codes): UNIQ_KEY and KEYS
hashed in C from the text (store.indexservice.index_key_hashes) are the codes of the expansion
(expand_columns + index_hash_many), on random columns: keys with runs of spaces, empty and
missing values, text beyond ASCII and beyond the BMP, as Arrow or as objects."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.jvm.hashcode import index_hash_many
from rmqlab.store.indexservice import expand_columns
from rmqlab.verify.check_commitlog import KEY_CODE_HASH_BITS, _chunk_key_codes

TEXT = st.lists(st.sampled_from(["a", " ", "K", "é", "日", "\U0001f600", "#", "0"]), max_size=6).map("".join)
ROW = st.tuples(st.sampled_from(["T", "U", "é", "%LMQ%q"]), st.one_of(st.none(), TEXT), st.one_of(st.none(), TEXT))


def _expanded(topic, keys, uniq, phy, first):
    ex = expand_columns({"topic": topic, "phy_offset": phy, "store_timestamp": np.zeros(len(phy), np.int64),
                         "sys_flag": np.zeros(len(phy), np.int64), "keys": keys, "uniq_key": uniq})
    rows = np.asarray(ex.message_index, np.int64) + first
    hashes = index_hash_many(ex.keys).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
    return (rows << KEY_CODE_HASH_BITS) | hashes


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(ROW, max_size=12), first=st.integers(0, 1 << 20), arrow=st.booleans())
def test_chunk_key_codes_are_the_expansions(rows, first, arrow):
    topic = np.array([r[0] for r in rows], dtype=object)
    keys = np.array([r[1] for r in rows], dtype=object)
    uniq = np.array([r[2] for r in rows], dtype=object)
    phy = np.arange(len(rows), dtype=np.int64) * 100
    want = _expanded(topic, keys, uniq, phy, first)
    cols = {"topic": topic, "keys": keys, "uniq_key": uniq, "store_timestamp": np.zeros(len(rows), np.int64)}
    if arrow:
        cols.update({name: pa.array(cols[name], type=pa.large_string()) for name in ("topic", "keys", "uniq_key")})
    got = _chunk_key_codes(cols, phy, first)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
