"""The consumer side and the reput service's lag, on real store folders.

Truths: Java's String.hashCode of "Aa" and "BB" is 2112 for both (a literal, the classic
collision), the messages' TAGS read back from the CommitLog and filtered by brute force, a real
4.2.0 broker store whose units hold ConsumeQueueExt addresses, and, for the lag, a one-go
dispatch of the same CommitLog (the concurrent rounds must leave the same files)."""
from __future__ import annotations

import shutil

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from oracles import require_real_data  # noqa: E402

from rmqlab.lab.generate import generate_store  # noqa: E402
from rmqlab.lab.reputlag import measure_dispatch_lag  # noqa: E402
from rmqlab.lab.sample import manifest  # noqa: E402
from rmqlab.lab.workload import Workload  # noqa: E402
from rmqlab.store.directory import Store  # noqa: E402
from rmqlab.store.pull import pull_with_tags  # noqa: E402

OPTS = dict(hash_slot_num=64, index_num=512)


@pytest.fixture(scope="module")
def colliding_tags(tmp_path_factory):
    root = tmp_path_factory.mktemp("tags") / "store"
    generate_store(root, Workload(messages=1500, seed=4, tags=("Aa", "BB", "TagA"), transaction_fraction=0.1), **OPTS)
    return Store(root, **OPTS)


@pytest.mark.parametrize("queue_id", [0, 3])
def test_the_broker_passes_a_colliding_tag_and_the_client_drops_it(colliding_tags, queue_id):
    store = colliding_tags
    pulled = pull_with_tags(store, "TopicTest", queue_id, "Aa")
    assert pulled.attrs["codes"] == {2112}
    msgs = store.messages()
    consumable = (msgs["sys_flag"] & 0xC).isin([0, 8])             # normal and committed messages
    mine = msgs[(msgs["topic"] == "TopicTest") & (msgs["queue_id"] == queue_id) & consumable]
    assert pulled["commitlog_offset"].tolist() == mine["phy_offset"].tolist()
    assert pulled["tags"].tolist() == mine["tags"].tolist()
    assert pulled["broker_passes"].tolist() == mine["tags"].isin(["Aa", "BB"]).tolist()
    assert pulled["delivered"].tolist() == (mine["tags"] == "Aa").tolist()
    assert pulled.loc[pulled["tags"] == "BB", "broker_passes"].all() and (pulled["tags"] == "BB").any()
    everything = pull_with_tags(store, "TopicTest", queue_id, "*")
    assert everything["delivered"].all()
    both = pull_with_tags(store, "TopicTest", queue_id, "TagA || BB")
    assert both["delivered"].tolist() == mine["tags"].isin(["TagA", "BB"]).tolist()


def test_ext_addresses_of_a_real_store_resolve_before_the_check():
    root = require_real_data("rocketmq/store-ericpangopher-4.2.0")
    store = Store(root, commitlog_file_size=8192, consume_queue_file_size=200)
    tag1 = pull_with_tags(store, "abc", 0, "TAG1")
    assert len(tag1) == 56 and tag1["delivered"].all() and (tag1["tags"] == "TAG1").all()
    assert (tag1["tags_code"] == 2567159).all()          # "TAG1".hashCode(), behind each ext address
    assert not pull_with_tags(store, "abc", 0, "TAG2")["broker_passes"].any()


def test_dispatch_lag_is_measured_and_the_store_ends_as_a_one_go_dispatch(tmp_path):
    lag = measure_dispatch_lag(tmp_path / "live", Workload(messages=3000, seed=2), chunk_messages=250,
                               chunks_per_second=200, commitlog_file_size=1 << 18, **OPTS)
    samples = lag.attrs["samples"]
    assert len(lag) == 3000 and (lag["lag_ms"] >= 0).all()
    assert lag["dispatched_s"].is_monotonic_increasing and lag["written_s"].is_monotonic_increasing
    end = (lag["phy_offset"] + lag["total_size"]).to_numpy(np.int64)
    # each message's round reached past it, and no earlier round did
    reached = {r: q for r, q in zip(samples["returned_s"], samples["queued_to"])}
    assert all(reached[d] >= e for d, e in zip(lag["dispatched_s"], end))
    assert samples["queued_to"].iloc[-1] == end.max() == lag.attrs["chunk_ends"][-1]
    one_go = tmp_path / "one-go"
    shutil.copytree(tmp_path / "live" / "commitlog", one_go / "commitlog")
    Store(one_go, commitlog_file_size=1 << 18, **OPTS).dispatch()
    assert manifest(one_go) == manifest(tmp_path / "live")
    with pytest.raises(FileExistsError):
        measure_dispatch_lag(tmp_path / "live", Workload(messages=10, seed=2), **OPTS)


def test_figures(colliding_tags, tmp_path):
    from rmqlab.viz.storeflow import dispatch_lag_figure, tag_filter_figure

    pulled = pull_with_tags(colliding_tags, "TopicTest", 0, "Aa")
    heights = sorted(int(p.get_height()) for p in tag_filter_figure(pulled).axes[0].patches)
    counts = pulled.groupby("tags").agg(u=("queue_offset", "size"), b=("broker_passes", "sum"), c=("delivered", "sum"))
    assert heights == sorted(counts.to_numpy().ravel().tolist())
    lag = measure_dispatch_lag(tmp_path, Workload(messages=300, seed=2), chunk_messages=100, **OPTS)
    assert dispatch_lag_figure(lag).axes[0].get_xlabel().startswith("dispatch lag")
