"""rmqlab.store.indexservice.tag_key_hashes: the TAGS index key of a 5.4.0+ broker hashed from
its parts (the hash of ``topic#T#`` carried over the TAGS), against the key strings the
broker's rule builds (rules.dispatch.tag_index_key) hashed whole."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["T", "Orders", "主题", "t😀"]),
                               st.one_of(st.none(), st.just(""), st.text(max_size=12))), max_size=30),
       topic_type=st.sampled_from(["string", "large_string", "dictionary"]),
       tags_type=st.sampled_from(["string", "large_string", "dictionary", "sliced"]))
def test_tag_key_hashes_are_the_hashes_of_the_keys_the_broker_builds(rows, topic_type, tags_type):
    """The TAGS key of a 5.4.0+ broker (``topic#T#tags``: rules.dispatch.tag_index_key, null
    and empty TAGS none) hashed from the parts' hashes: the index hash of the key string, for
    every Arrow form of the columns."""
    from rmqlab.jvm.hashcode import index_hash
    from rmqlab.rules.dispatch import tag_index_key
    from rmqlab.store.indexservice import tag_key_hashes

    topics, tags = [t for t, _ in rows], [g for _, g in rows]
    topic = pa.array(topics, pa.string())
    topic = topic.dictionary_encode() if topic_type == "dictionary" else topic.cast(getattr(pa, topic_type)())
    if tags_type == "sliced":
        tag_arr = pa.array(["x", *tags, "y"], pa.large_string()).slice(1, len(tags))
    else:
        tag_arr = pa.array(tags, pa.string())
        tag_arr = tag_arr.dictionary_encode() if tags_type == "dictionary" else tag_arr.cast(getattr(pa, tags_type)())
    got_rows, got_hashes = tag_key_hashes(topic, tag_arr)
    want = [(i, index_hash(f"{t}#{tag_index_key(g)}")) for i, (t, g) in enumerate(rows) if tag_index_key(g)]
    assert got_rows.dtype == np.int64 and got_hashes.dtype == np.int32
    assert list(zip(got_rows.tolist(), got_hashes.tolist())) == want


def test_tag_key_hashes_declines_what_it_cannot_hash():
    """A null topic, numbers, or columns of other lengths: None (expand_columns then says why)."""
    from rmqlab.store.indexservice import tag_key_hashes

    assert tag_key_hashes(pa.array(["T", None]), pa.array(["a", "b"])) is None
    assert tag_key_hashes(pa.array(["T", "T"]), pa.array([1, 2])) is None
    assert tag_key_hashes(pa.array(["T"]), pa.array(["a", "b"])) is None
    assert tag_key_hashes(["T"], ["a"]) is None
