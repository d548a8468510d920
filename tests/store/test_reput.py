"""The dispatch's NumPy/C path against the path it replaced (tests/support/dispatch_reference.py):
the same files, byte for byte, on random workloads with every dispatch feature, and the index
key hashes against the full-string expansion they skip."""
from __future__ import annotations

import datetime as dt
import hashlib
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from dispatch_reference import reference_dispatch, reference_tags_codes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.jvm.hashcode import index_hash_many
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.rules.dispatch import SCHEDULE_TOPIC, message_tags_codes
from rmqlab.store.directory import Store, queue_groups
from rmqlab.store.indexservice import expand_columns, index_key_hashes

UTC = dt.UTC


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file but the CommitLog (which dispatch reads, never writes)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "commitlog" not in p.parts}


def both_ways(workload: Workload, options: dict, *, twice: bool = False) -> tuple[Path, Path]:
    base = Path(tempfile.mkdtemp())
    new = generate_store(base / "new", workload, dispatch=False, **options)
    old = generate_store(base / "old", workload, dispatch=False, **options)
    for _ in range(2 if twice else 1):
        a = new.dispatch()
        b = reference_dispatch(Store(old.root, **options))
        assert a.as_dict() | {"seconds": 0} == b.as_dict() | {"seconds": 0}
    return new.root, old.root


features = st.fixed_dictionaries({
    "messages": st.integers(1, 400),
    "seed": st.integers(0, 10_000),
    "batch": st.booleans(),
    "lmq": st.booleans(),
    "transaction_fraction": st.sampled_from([0.0, 0.3]),
    "delay_fraction": st.sampled_from([0.0, 0.3]),
    "keyless_fraction": st.sampled_from([0.0, 0.1, 1.0]),
    "uniq_key": st.booleans(),
    "index_num": st.sampled_from([16, 64, 4096]),
    "queues": st.integers(1, 5),
    "broker_version": st.sampled_from([None, "4.9.4"]),
})


def feature_workload(f: dict, commitlog_file_size: int = 1 << 16) -> tuple[Workload, dict]:
    """The workload and Store options of a draw of `features`."""
    batch = f["batch"] and f["broker_version"] is None    # BatchConsumeQueue came in 5.0.0
    topics = ("T", "B", "orders") if batch else ("T", "orders")
    w = Workload(messages=f["messages"], seed=f["seed"], topics=topics, queues_per_topic=f["queues"],
                 batch_cq_topics=("B",) if batch else (), inner_batch_max=4 if batch else 1,
                 lmq_queues=("%LMQ%a", "%LMQ%b") if f["lmq"] else (), multi_dispatch_every=3 if f["lmq"] else 0,
                 transaction_fraction=f["transaction_fraction"], delay_fraction=f["delay_fraction"],
                 keyless_fraction=f["keyless_fraction"], uniq_key=f["uniq_key"], broker_version=f["broker_version"])
    options = dict(commitlog_file_size=commitlog_file_size, hash_slot_num=8, index_num=f["index_num"], tz=UTC,
                   consume_queue_file_size=400, batch_cq_topics=("B",) if batch else (),
                   enable_lmq=f["lmq"], enable_multi_dispatch=f["lmq"], broker_version=f["broker_version"])
    return w, options


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(features)
def test_dispatch_writes_the_same_bytes_as_the_reference(f):
    w, options = feature_workload(f)
    new, old = both_ways(w, options, twice=True)
    digest = tree_digest(new)
    assert any(k.startswith("index") for k in digest) and "checkpoint" in digest
    assert digest == tree_digest(old)


def test_dispatch_with_consume_queue_ext_writes_the_same_bytes():
    w = Workload(messages=300, seed=3, topics=("T", "U"), delay_fraction=0.2, transaction_fraction=0.2)
    options = dict(commitlog_file_size=1 << 16, hash_slot_num=8, index_num=64, tz=UTC, consume_queue_ext=True,
                   consume_queue_ext_file_size=4096)
    new, old = both_ways(w, options)
    assert any(k.startswith("consumequeue_ext") for k in tree_digest(new))
    assert tree_digest(new) == tree_digest(old)


def test_incremental_dispatch_writes_the_same_bytes():
    """Two CommitLog appends, each dispatched: the second starts where the first stopped."""
    w = Workload(messages=500, seed=9, topics=("T",), transaction_fraction=0.2)
    base = Path(tempfile.mkdtemp())
    options = dict(commitlog_file_size=1 << 16, hash_slot_num=8, index_num=32, tz=UTC)
    roots = [base / "new", base / "old"]
    for root in roots:
        generate_store(root, w, dispatch=False, **options)
    Store(roots[0], **options).dispatch()
    reference_dispatch(Store(roots[1], **options))
    assert tree_digest(roots[0]) == tree_digest(roots[1])


text = st.text(alphabet=st.sampled_from(["a", "B", " ", "é", "\u4e2d", "\U0001F600", "#", "\x00"]), max_size=12)
maybe_text = st.one_of(st.none(), text)


@given(st.lists(st.tuples(st.sampled_from(["T", "t\u00e9", "\U0001F600x"]), maybe_text, maybe_text,
                          st.integers(0, 50), st.sampled_from([0, 4, 8, 12])), max_size=30),
       st.integers(0, 60))
def test_index_key_hashes_equal_the_expanded_keys(rows, end_phy_offset):
    cols = {"topic": np.array([r[0] for r in rows], object), "keys": np.array([r[1] for r in rows], object),
            "uniq_key": np.array([r[2] for r in rows], object), "phy_offset": np.array([r[3] for r in rows], np.int64),
            "store_timestamp": np.arange(len(rows), dtype=np.int64), "sys_flag": np.array([r[4] for r in rows])}
    msg, hashes, n = index_key_hashes(cols, end_phy_offset=end_phy_offset)
    exp = expand_columns(cols, end_phy_offset=end_phy_offset)
    assert n == len(rows)
    assert msg.tolist() == exp.message_index.tolist()
    assert hashes.tolist() == (index_hash_many(exp.keys).tolist() if len(exp) else [])


def test_index_key_hashes_leave_other_storage_to_the_arrow_path():
    cols = {"topic": ["T"], "phy_offset": [0], "store_timestamp": [0], "keys": [float("nan")], "uniq_key": [None]}
    assert index_key_hashes(cols) is None                      # NaN: pandas' missing value
    cols["keys"] = pa.array(["a"])
    assert index_key_hashes(cols) is None
    cols["keys"] = pd.Series(["a b"], dtype="string[pyarrow]")
    assert index_key_hashes(cols) is None
    with pytest.raises(TypeError, match="topic element 0"):
        from rmqlab import _dispatchcore

        _dispatchcore.count_keys(np.array([None], object), np.array([None], object), np.array([None], object),
                                 np.empty(1, np.int32))


def test_index_key_hashes_check_their_buffers():
    from rmqlab import _dispatchcore

    obj = np.array(["a b"], object)
    with pytest.raises(ValueError):
        _dispatchcore.count_keys(obj, obj, obj, np.empty(2, np.int32))
    with pytest.raises(ValueError):   # two keys each for topic#a, topic#b and the uniq key: 3, not 2
        _dispatchcore.key_hashes(obj, obj, obj, np.ones(1, np.uint8), np.empty(2, np.int64), np.empty(2, np.int32))
    with pytest.raises(ValueError):
        _dispatchcore.key_hashes(obj, obj, obj, np.ones(1, np.uint8), np.empty(4, np.int64), np.empty(4, np.int32))
    with pytest.raises(TypeError):
        _dispatchcore.count_keys(np.array([1, 2]), obj, obj, np.empty(1, np.int32))


@given(st.lists(st.tuples(st.sampled_from(["T", SCHEDULE_TOPIC]), maybe_text, st.integers(-2, 30),
                          st.integers(0, 2**62)), max_size=30))
def test_message_tags_codes_equal_the_reference(rows):
    args = ([r[0] for r in rows], np.array([r[1] for r in rows], object), [r[2] for r in rows], [r[3] for r in rows])
    assert message_tags_codes(*args).tolist() == reference_tags_codes(*args).tolist()


@given(st.lists(st.tuples(st.sampled_from(["b", "a", "c\u00e9"]), st.integers(-3, 3)), max_size=40),
       st.booleans())
def test_queue_groups_equal_a_sorted_groupby(rows, wide):
    topics = np.array([r[0] for r in rows], object)
    qids = np.array([r[1] * (100_000 if wide else 1) for r in rows], np.int64)
    got = [(t, q, r.tolist()) for t, q, r in queue_groups(topics, qids)]
    frame = pd.DataFrame({"t": topics, "q": qids})
    want = [(t, int(q), g.index.tolist()) for (t, q), g in frame.groupby(["t", "q"], sort=True)] if rows else []
    assert got == want
