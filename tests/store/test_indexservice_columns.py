"""IndexService.build_columns (vectorized) against build_index one message at a time."""
import datetime as dt
import filecmp

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.errors import ReadOnlyError
from rmqlab.store.indexservice import DispatchRequest, IndexService

UTC = dt.UTC


def messages(seed, n, phy_start=1000):
    rng = np.random.default_rng(seed)
    phy = phy_start + np.cumsum(rng.integers(0, 300, n))   # equal offsets happen: re-index rule
    phy[rng.random(n) < 0.05] -= 500                        # and some go backwards: skip rule
    ts = 1718000000000 + np.cumsum(rng.integers(-200, 900, n))
    tokens = np.array(["a", "b", "", "Aa", "BB", "k1", "k2"])
    keys = [None if rng.random() < 0.2 else " ".join(rng.choice(tokens, rng.integers(1, 4)))
            for _ in range(n)]
    uniq = [None if rng.random() < 0.3 else f"U{i}" for i in range(n)]
    topic = [str(t) for t in rng.choice(["T1", "T2"], n)]
    sys_flag = rng.choice([0, 0, 0, 0x4, 0x8, 0xC], n).astype(np.int64)
    return {"topic": topic, "phy_offset": phy, "store_timestamp": ts, "keys": keys,
            "uniq_key": uniq, "sys_flag": sys_flag}


def build_sequential(directory, cols, lo, hi, **kw):
    with IndexService(directory, read_only=False, **kw) as s:
        for i in range(lo, hi):
            s.build_index(DispatchRequest(cols["topic"][i], int(cols["phy_offset"][i]),
                                          int(cols["store_timestamp"][i]), cols["keys"][i],
                                          cols["uniq_key"][i], int(cols["sys_flag"][i])))


def build_vectorized(directory, cols, lo, hi, **kw):
    part = {k: (v[lo:hi]) for k, v in cols.items()}
    with IndexService(directory, read_only=False, **kw) as s:
        s.build_columns(part)


def same_folder(a, b):
    names_a, names_b = sorted(p.name for p in a.iterdir()), sorted(p.name for p in b.iterdir())
    assert names_a == names_b
    for name in names_a:
        assert filecmp.cmp(a / name, b / name, shallow=False), name
    return names_a


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 120), index_num=st.integers(2, 30),
       cut=st.floats(0, 1), by_store_time=st.booleans())
def test_build_columns_equals_build_index(tmp_path_factory, seed, n, index_num, cut, by_store_time):
    cols = messages(seed, n)
    clock = iter(range(1718000000000, 1718000000000 + 10**6, 1000))
    kw = dict(hash_slot_num=7, index_num=index_num, tz=UTC, name_by_store_time=by_store_time)
    a, b = tmp_path_factory.mktemp("seq"), tmp_path_factory.mktemp("vec")
    split = int(n * cut)   # two dispatch rounds: the second continues the first's files
    ca, cb = iter(range(10**12, 10**12 + 10**7, 7)), iter(range(10**12, 10**12 + 10**7, 7))
    build_sequential(a, cols, 0, split, clock=ca.__next__, **kw)
    build_sequential(a, cols, split, n, clock=ca.__next__, **kw)
    build_vectorized(b, cols, 0, split, clock=cb.__next__, **kw)
    build_vectorized(b, cols, split, n, clock=cb.__next__, **kw)
    same_folder(a, b)
    del clock


def test_file_named_by_the_message_that_creates_it(tmp_path):
    # three single-key messages into files of 2 keys: the third message opens the second file
    cols = {"topic": ["T"] * 3, "phy_offset": [10, 20, 30], "store_timestamp": [1718000000000, 1718000001000,
            1718000002500], "keys": ["a", "b", "c"], "uniq_key": [None] * 3, "sys_flag": [0, 0, 0]}
    build_vectorized(tmp_path, cols, 0, 3, hash_slot_num=4, index_num=3, tz=UTC, name_by_store_time=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20240610061320000", "20240610061322500"]


def test_read_only_service_refuses(tmp_path):
    with IndexService(tmp_path) as s, pytest.raises(ReadOnlyError):
        s.build_columns(messages(1, 3))
