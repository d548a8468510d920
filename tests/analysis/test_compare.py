"""rmqlab.analysis.compare: the two stores hold the same messages, the byte counts equal the files,
the lookups of both systems find the same message as brute force, the cost counts equal
independent recounts, and the figures draw the numbers they are given."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.analysis.compare import (
    COST_COLUMNS,
    build_side_by_side,
    comparison_table,
    comparison_workload,
    index_bytes_per_million,
    lookup_cost_summary,
    lookup_costs,
    time_semantics,
)
from rmqlab.formats.indexfile import IndexFile, read_header
from rmqlab.jvm.hashcode import index_hash, index_key
from rmqlab.kafka.log import read_batches, read_records
from rmqlab.kafka.rebuild import expected_entries
from rmqlab.viz.kafka import index_bytes_figure, lookup_cost_figure, sparse_index_figure

N = 20_000


@pytest.fixture(scope="module")
def sbs(tmp_path_factory):
    s = build_side_by_side(tmp_path_factory.mktemp("pair"), comparison_workload(N, seed=3), commitlog_file_size=1 << 22,
                           hash_slot_num=2000, index_num=8000, consume_queue_file_size=20 * 12_000,
                           segment_bytes=1_500_000)
    yield s
    s.close()


@pytest.fixture(scope="module")
def costs(sbs):
    return lookup_costs(sbs, queries=40, seed=5)


def _kafka_records(sbs):
    part = sbs.kafka()
    return pd.concat([read_records(part.log_path(b)) for b in part.segments], ignore_index=True)


def test_both_sides_hold_the_same_messages(sbs):
    k = _kafka_records(sbs)
    m = sbs.store.messages(body=True).sort_values("queue_offset", ignore_index=True)
    assert len(k) == len(m) == N
    assert k["offset"].tolist() == m["queue_offset"].tolist() == list(range(N))
    assert k["value"].tolist() == m["body"].tolist()
    assert k["timestamp"].tolist() == m["store_timestamp"].tolist()
    assert [None if x is None else x.decode() for x in k["key"]] == m["keys"].tolist()
    assert sbs.messages["phy_offset"].tolist() == m["phy_offset"].tolist()
    assert len(sbs.kafka_segments) >= 3 and set(sbs.kafka_segments["reason"][1:]) == {"segment.bytes"}


def test_a_workload_that_does_not_map_is_refused(tmp_path):
    with pytest.raises(ValueError, match="queues_per_topic=1"):
        build_side_by_side(tmp_path, comparison_workload(10).replace(queues_per_topic=4))
    with pytest.raises(ValueError, match="transactions"):
        comparison_workload(10, transaction_fraction=0.1)
    with pytest.raises(ValueError, match="one key"):
        comparison_workload(10, keys_per_message=2.0)


def test_index_bytes_equal_the_files(sbs):
    t = index_bytes_per_million(sbs).set_index("structure")
    root = sbs.store.root
    # on disk: every file of each folder, by walking them here
    disk = {name: sum(os.path.getsize(Path(d) / f) for d, _, fs in os.walk(root / name) for f in fs)
            for name in ("index", "consumequeue", "commitlog")}
    assert t.loc["IndexFile", "bytes_on_disk"] == disk["index"]
    assert t.loc["ConsumeQueue", "bytes_on_disk"] == disk["consumequeue"]
    assert t.loc["CommitLog", "bytes_on_disk"] == disk["commitlog"]
    # used: each file's header + slots + entries 0..keys, with keys counted from the messages
    files = sorted((root / "index").iterdir())
    keys = N + int(sbs.messages["keys"].notna().sum())         # a UNIQ_KEY each, and the KEYS
    assert sum(read_header(f).index_count - 1 for f in files) == keys
    assert t.loc["IndexFile", "bytes_used"] == len(files) * (40 + 4 * 2000) + 20 * (keys + len(files))
    assert t.loc["ConsumeQueue", "bytes_used"] == 20 * N
    assert t.loc["ConsumeQueue", "bytes_per_million"] == 20e6
    # Kafka: the trimmed files are the entries the rule gives for each .log, 8 and 12 bytes each
    d = sbs.kafka_dir
    logs = sorted(d.glob("*.log"))
    entries = [expected_entries(read_batches(p)) for p in logs]
    assert t.loc[".index", "bytes_used"] == 8 * sum(len(o) for o, _ in entries) == \
        sum(p.stat().st_size for p in d.glob("*.index"))
    assert t.loc[".timeindex", "bytes_used"] == 12 * sum(len(x) for _, x in entries) == \
        sum(p.stat().st_size for p in d.glob("*.timeindex"))
    assert t.loc["Kafka indexes", "bytes_used"] == t.loc[".index", "bytes_used"] + t.loc[".timeindex", "bytes_used"]
    assert t.loc[".log", "bytes_used"] == sum(p.stat().st_size for p in logs)
    # per million
    for s in ("IndexFile", "Kafka indexes", "RocketMQ indexes"):
        assert t.loc[s, "bytes_per_million"] == pytest.approx(t.loc[s, "bytes_used"] / N * 1e6)
    # the sparse index is far smaller; the capacity model is close to both measurements
    assert t.loc["Kafka indexes", "bytes_per_million"] * 10 < t.loc["ConsumeQueue", "bytes_per_million"]
    assert t.loc["Kafka indexes", "bytes_per_million"] == pytest.approx(t.loc["Kafka indexes", "model_per_million"],
                                                                        rel=0.05)
    assert t.loc["IndexFile", "bytes_per_million"] == pytest.approx(t.loc["IndexFile", "model_per_million"],
                                                                    rel=0.15)


def test_every_lookup_finds_the_same_message_both_ways(sbs, costs):
    assert set(costs["kind"]) == {"offset", "time", "key"}
    assert costs["found_target"].all() and costs["agree"].all()
    assert (costs.groupby(["kind", "system"]).size() == 40).all()
    for col in COST_COLUMNS:
        assert (costs[col] >= 0).all()
    assert (costs["bytes_touched"] == costs["index_bytes_read"] + costs["data_bytes_read"]).all()


def test_by_offset_costs(sbs, costs):
    c = costs[costs["kind"] == "offset"]
    r, k = c[c["system"] == "RocketMQ"], c[c["system"] == "Kafka"]
    assert (r["index_entries_read"] == 1).all() and (r["index_bytes_read"] == 20).all()
    # RocketMQ reads the message itself: its TOTALSIZE
    size = sbs.messages.set_index("queue_offset")["total_size"]
    assert r["data_bytes_read"].tolist() == size.loc[r["target"]].tolist()
    assert r["answer"].tolist() == sbs.messages["phy_offset"].iloc[r["target"]].tolist()
    # Kafka: the batch holding the target; the scan never passes one index interval plus two batches
    assert (k["answer"] == k["target"]).all()
    part = sbs.kafka()
    biggest = max(int(part.batches(b)["size"].max()) for b in part.segments)
    assert (k["data_bytes_read"] <= 4096 + 2 * biggest).all()
    assert (k["index_bytes_read"] == 8 * k["index_entries_read"]).all()


def test_by_key_costs_against_brute_force(sbs, costs):
    c = costs[costs["kind"] == "key"]
    total_log = sum(p.stat().st_size for p in sbs.kafka_dir.glob("*.log"))
    k = c[c["system"] == "Kafka"]
    assert (k["data_bytes_read"] == total_log).all() and (k["index_entries_read"] == 0).all()
    assert (k["bytes_touched"] == total_log).all() and (k["answer"] == 1).all()
    # RocketMQ: a unique key's chain walk reads its slot's whole chain in every file: count the
    # entries hashed to that slot, file by file
    r = c[c["system"] == "RocketMQ"]
    files = sorted((sbs.store.root / "index").iterdir())
    for key, entries, found in zip(r["target"], r["index_entries_read"], r["answer"]):
        h = index_hash(index_key(sbs.topic, key))
        want = 0
        for f in files:
            with IndexFile.open(f, 2000, 8000) as idx:
                want += int((idx.used_entries["key_hash"].astype(np.int64) % 2000 == h % 2000).sum())
        assert entries == want
        assert found >= 1
    assert (r["index_bytes_read"] == 4 * len(files) + 20 * r["index_entries_read"]).all()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_time_lookups_against_brute_force(sbs, data):
    ts = sbs.messages["store_timestamp"].to_numpy(np.int64)
    t = data.draw(st.integers(int(ts.min()) - 5, int(ts.max())))
    want = int(np.flatnonzero(ts >= t)[0])
    res = sbs.consume_queue().offset_by_time(t, sbs.store_time_of, boundary="lower")
    assert res.offset == want
    k = sbs.kafka().offsets_for_time(t)
    assert (k.found, k.offset, k.timestamp) == (True, want, int(ts[want]))
    q = data.draw(st.integers(0, N - 1))
    hit = sbs.kafka().lookup_offset(q)
    assert hit.batch_base_offset <= q <= hit.batch_last_offset
    assert sbs.consume_queue().unit(q).commitlog_offset == sbs.messages["phy_offset"].iat[q]


def test_time_semantics_shows_the_whole_second_miss(sbs):
    t = time_semantics(sbs, seed=2)
    assert t["finds_message"].tolist() == [False, True, True, True, True]
    a = t.attrs
    ms, begin = a["store_timestamp"], a["file_begin"]
    # the entry keeps whole seconds after its file's begin: it reads earlier than the message
    assert a["stored_time"] == begin + (ms - begin) // 1000 * 1000 < ms
    assert t.loc[0, "time_kept"] == a["stored_time"] and t.loc[3, "time_kept"] == ms
    q = a["queue_offset"]
    assert sbs.messages["store_timestamp"].iat[q] == ms and sbs.messages["keys"].iat[q] == a["key"]
    # m is the first message stored at ms, so offsetsForTimes(ms) names it
    assert (sbs.messages["store_timestamp"].to_numpy()[:q] < ms).all()
    assert sbs.store.query_by_key(sbs.topic, a["key"], begin=ms, end=ms + 999).empty


def test_summary_and_table(sbs, costs):
    s = lookup_cost_summary(costs)
    assert list(s.index) == [(k, sy) for k in ("offset", "time", "key") for sy in ("RocketMQ", "Kafka")]
    assert s.loc[("key", "Kafka"), "bytes_touched"] == costs.loc[(costs["kind"] == "key") &
                                                                  (costs["system"] == "Kafka"), "bytes_touched"].mean()
    b = index_bytes_per_million(sbs)
    table = comparison_table(b, s)
    bb = b.set_index("structure")["bytes_per_million"]
    assert table.loc["index bytes per million messages", "Kafka"] == bb["Kafka indexes"]
    assert table.loc["index bytes per million messages", "RocketMQ"] == bb["IndexFile"] + bb["ConsumeQueue"]
    assert table.loc["by key: bytes touched", "Kafka"] > 100 * table.loc["by key: bytes touched", "RocketMQ"]
    assert (table.loc[[i for i in table.index if i.endswith("same message found")]] == 1.0).all().all()


def test_figures_draw_the_numbers(sbs, costs):
    b = index_bytes_per_million(sbs)
    fig = index_bytes_figure(b)
    shown = b[~b["role"].str.startswith("data")]
    assert [p.get_width() for p in fig.axes[0].patches] == pytest.approx(shown["bytes_per_million"].tolist())
    s = lookup_cost_summary(costs)
    fig = lookup_cost_figure(s)
    heights = [p.get_height() for p in fig.axes[0].patches]
    want = [s.loc[(k, sy), "bytes_touched"] for sy in ("RocketMQ", "Kafka") for k in ("offset", "time", "key")]
    assert heights == pytest.approx(want)
    part = sbs.kafka()
    target = 12_345
    fig = sparse_index_figure(part, target)
    top = fig.axes[0]
    res = part.lookup_offset(target)
    seg = res.segment
    positions = part.offset_index(seg).positions
    xs, ys = top.lines[0].get_data()
    steps = [st_ for st_ in res.index_trace.steps if st_.phase != "result"]
    assert list(xs) == [int(positions[s_.slot]) for s_ in steps] and list(ys) == list(range(1, len(steps) + 1))
    with pytest.raises(ValueError):
        sparse_index_figure(part, N + 10)
