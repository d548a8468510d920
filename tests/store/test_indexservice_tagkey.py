"""The 5.4.0+ TAGS index key through IndexService and verify."""
import numpy as np

from rmqlab.jvm.hashcode import index_key
from rmqlab.store.indexservice import DispatchRequest, IndexService, expand_columns, expand_messages


def _cols():
    return {"topic": np.array(["T", "T", "U"], object), "phy_offset": np.array([0, 100, 200]),
            "store_timestamp": np.array([1000, 1001, 1002]), "keys": np.array(["a", None, "b c"], object),
            "uniq_key": np.array(["U1", "U2", None], object), "tags": np.array(["TagA", "", "x||y"], object),
            "sys_flag": np.zeros(3, np.int64)}


def test_expand_columns_equals_messages_with_tag_key():
    c = _cols()
    msgs = [DispatchRequest(c["topic"][i], int(c["phy_offset"][i]), int(c["store_timestamp"][i]), c["keys"][i],
                            c["uniq_key"][i], 0, c["tags"][i]) for i in range(3)]
    for tag_key in (False, True):
        assert expand_columns(c, tag_key=tag_key).key_list() == expand_messages(msgs, tag_key=tag_key).key_list()
    assert expand_columns(c, tag_key=True).key_list() == ["T#U1", "T#a", "T#T#TagA", "T#U2", "U#b", "U#c", "U#T#x||y"]


def test_build_columns_and_tag_query(tmp_path):
    for tag_keys in (False, True):
        d = tmp_path / str(tag_keys)
        with IndexService(d, 8, 32, read_only=False, clock=lambda: 0, tag_keys=tag_keys) as svc:
            put = svc.build_columns(_cols())
            assert put == (7 if tag_keys else 5)
            assert svc.query_offset("T", "TagA", index_type="T").phy_offsets == ([0] if tag_keys else [])
            assert svc.query_offset("U", "x||y", index_type="T").phy_offsets == ([200] if tag_keys else [])
        # one message at a time gives the same files
        d2 = tmp_path / f"{tag_keys}-one"
        with IndexService(d2, 8, 32, read_only=False, clock=lambda: 0, tag_keys=tag_keys) as svc:
            c = _cols()
            for i in range(3):
                svc.put_message(c["topic"][i], int(c["phy_offset"][i]), int(c["store_timestamp"][i]), c["keys"][i],
                                c["uniq_key"][i], 0, c["tags"][i])
        assert [p.read_bytes() for p in sorted(d.iterdir())] == [p.read_bytes() for p in sorted(d2.iterdir())]
    assert index_key("T", "T#TagA") == "T#T#TagA"


def test_store_queries_by_tag_against_a_brute_force_model(tmp_path, capsys):
    """Store.query_by_key / query_many with index_type "T" on a generated 5.5.0 store, judged by
    the messages themselves: verified mode is every message of the topic whose TAGS is the key
    (stored in the range); broker mode returns at most max_num offsets, each one a message whose
    topic#T#tags hashes as the key does, and all of them when fewer are indexed."""
    import pytest

    from rmqlab.cli import main
    from rmqlab.formats import commitlog as cl
    from rmqlab.jvm.hashcode import index_hash
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload
    from rmqlab.rules.dispatch import tag_index_key

    opts = dict(hash_slot_num=16, index_num=4096, broker_version="5.5.0")
    store = generate_store(tmp_path / "s", Workload(messages=600, seed=7, topics=("T1", "T2")),
                           commitlog_file_size=1 << 20, **opts)
    msgs = cl.read_columns(tmp_path / "s" / "commitlog", body=False)
    hashes = np.array([index_hash(index_key(t, tag_index_key(g))) if g else -1
                       for t, g in zip(msgs["topic"], msgs["tags"])])
    mid = int(msgs["store_timestamp"].median())
    asked = 0
    for (topic, tag), group in msgs[msgs["tags"].fillna("") != ""].groupby(["topic", "tags"]):
        for begin, end in ((0, 2**62), (0, mid)):
            want = set(group.phy_offset[group.store_timestamp.between(begin, end)])
            verified = store.query_by_key(topic, tag, begin=begin, end=end, mode="verified", index_type="T")
            assert set(verified.phy_offset) == want, (topic, tag)
            broker = store.query_by_key(topic, tag, begin=begin, end=end, max_num=16, index_type="T")
            same_hash = set(msgs.phy_offset[hashes == index_hash(index_key(topic, tag_index_key(tag)))])
            assert set(broker.phy_offset) <= same_hash and len(broker) <= 16
            many = store.query_many(topic, [tag], begin=begin, end=end, mode="verified", index_type="T")
            assert set(many.phy_offset) == want
            asked += 1
    assert asked >= 8
    # a key query with the same word finds no message by its tag
    tag = msgs.tags.dropna().iloc[0]
    assert set(store.query_by_key(msgs.topic.iloc[0], tag, mode="verified").phy_offset) <= set(
        msgs.phy_offset[msgs["keys"].fillna("").str.split(" ").apply(lambda ks: tag in ks)])
    with pytest.raises(ValueError, match="UNIQ_KEY"):
        store.explain_key("T1", tag, unique=True, index_type="T")
    # the command line: mqadmin's -p T, verified
    import json

    topic = str(msgs.topic.iloc[0])
    capsys.readouterr()
    assert main(["store", "query", str(tmp_path / "s"), "--topic", topic, "--key", tag, "--key-type", "T",
                 "--mode", "verified", "--hash-slot-num", "16", "--index-num", "4096", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["phy_offset"] for r in rows} == set(msgs.phy_offset[(msgs.topic == topic) & (msgs.tags == tag)])
