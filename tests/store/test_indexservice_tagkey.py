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
