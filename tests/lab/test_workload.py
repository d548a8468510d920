"""rmqlab.lab.workload: determinism, schema, statistics and the broker's structural rules."""
from __future__ import annotations

import collections
import dataclasses
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rmqlab
import rmqlab.lab.workload as W
from rmqlab.formats.msgid import parse_uniq_id, uniq_ids_many
from rmqlab.lab.workload import (
    PROPERTY_ORDER,
    SCHEMA,
    Workload,
    collision_keys,
    describe,
    generate,
    generate_chunks,
    java_hashmap_order,
    rate_profile,
)
from rmqlab.store.indexservice import expand_columns

SCHED = "SCHEDULE_TOPIC_XXXX"
EVERYTHING = dict(messages=3000, producers=5, topics=("Orders", "Payments"), queues_per_topic=3,
                  transaction_fraction=0.2, delay_fraction=0.15, delay_levels=(1, 2, 3),
                  keys_per_message=2.0, collision_pairs=3, collision_fraction=0.2,
                  ipv6_fraction=0.4, producer_clock_skew_ms=20.0, rate=200.0, drain=True,
                  pattern="daily+bursts", burst_interval_s=5.0, burst_duration_s=2.0)


def rows(t: pa.Table) -> list[dict]:
    return t.to_pylist()


def props(p: str) -> list[tuple[str, str]]:
    assert p.endswith("\x02") or p == ""
    return [tuple(kv.split("\x01")) for kv in p.split("\x02")[:-1]]


# ----------------------------------------------------------------------- schema, determinism


def test_schema_is_exact():
    t = generate(Workload(messages=50, **{k: v for k, v in EVERYTHING.items() if k != "messages"}))
    assert t.schema.equals(SCHEMA)
    expect = [("topic", pa.string()), ("queue_id", pa.int32()), ("flag", pa.int32()),
              ("sys_flag", pa.int32()), ("born_timestamp", pa.int64()), ("born_host", pa.string()),
              ("store_timestamp", pa.int64()), ("store_host", pa.string()),
              ("reconsume_times", pa.int32()), ("body", pa.large_binary()),
              ("properties", pa.string()), ("keys", pa.string()), ("uniq_key", pa.string()),
              ("tags", pa.string()), ("delay_level", pa.int32()), ("prepared_index", pa.int64()),
              ("producer", pa.int32()), ("queue_offset", pa.int64())]
    assert [(f.name, f.type) for f in t.schema] == expect
    for name in ("topic", "queue_id", "sys_flag", "body", "properties", "store_timestamp"):
        assert t.column(name).null_count == 0


def test_empty_workload():
    t = generate(Workload(messages=0))
    assert t.num_rows == 0 and t.schema.equals(SCHEMA)
    assert list(generate_chunks(Workload(messages=0))) == []


def test_same_seed_same_table_other_seed_other_table():
    w = Workload(**EVERYTHING)
    a, b = generate(w), generate(w)
    assert a.equals(b)
    c = generate(w.replace(seed=1))
    assert not a.equals(c)


@pytest.mark.parametrize("chunk", [1, 7, 999, 10**6])
def test_chunks_concatenate_to_the_one_shot_table(chunk):
    w = Workload(**EVERYTHING)
    whole = generate(w)
    parts = list(generate_chunks(w, chunk_messages=chunk))
    assert all(p.num_rows == chunk for p in parts[:-1]) and 0 < parts[-1].num_rows <= chunk
    assert pa.concat_tables(parts).equals(whole)


def test_many_internal_blocks_keep_the_rules_and_chunk_invariance():
    # small blocks: carry-over of queue offsets, counters, pending decisions and deliveries
    with mock.patch.object(W, "BLOCK_MESSAGES", 61):
        w = Workload(**EVERYTHING)
        t = generate(w)
        check_rules(w, t)
        assert pa.concat_tables(generate_chunks(w, 100)).equals(t)
        # a longer workload starts with the same rows (nothing looks ahead)
        longer = generate(w.replace(messages=4000, drain=False))

    def sends(tbl):
        return tbl.filter(pc.equal(pc.bit_wise_and(tbl["sys_flag"], 0xC), 0))

    a, b = sends(t), sends(longer)
    n = 1000
    assert a.slice(0, n).drop_columns(["queue_offset"]).equals(b.slice(0, n).drop_columns(["queue_offset"]))


def test_chunk_size_must_be_positive():
    with pytest.raises(ValueError):
        next(generate_chunks(Workload(messages=3), chunk_messages=0))


# ------------------------------------------------------------------------- structural rules


def check_rules(w: Workload, t: pa.Table) -> None:
    """Every rule the broker's records obey, for any workload."""
    R = rows(t)
    n = len(R)
    tran = [r["sys_flag"] & 0xC for r in R]
    # sends: all of them, once each; CommitLog order = arrival order
    is_decision = [x in (0x8, 0xC) for x in tran]
    is_delivered = [r["delay_level"] > 0 and r["topic"] != SCHED for r in R]
    sends = [i for i in range(n) if not is_decision[i] and not is_delivered[i]]
    assert len(sends) == w.messages
    # store time: non-decreasing unless the broker clock steps back
    st_ = np.array([r["store_timestamp"] for r in R], np.int64)
    backwards = int((np.diff(st_) < 0).sum()) if n else 0
    if w.broker_clock_steps == 0 or w.broker_clock_step_ms == 0:
        assert backwards == 0
    else:
        assert backwards <= w.broker_clock_steps
    # queue offsets: consecutive from 0 per (topic, queue) over NOT/COMMIT records; 0 otherwise
    nxt = collections.Counter()
    for i, r in enumerate(R):
        if tran[i] in (0x0, 0x8):
            key = (r["topic"], r["queue_id"])
            assert r["queue_offset"] == nxt[key]
            nxt[key] += 1
        else:
            assert r["queue_offset"] == 0
        assert 0 <= r["queue_id"] < (w.queues_per_topic if r["topic"] != SCHED else 18)
    decided = collections.Counter()
    real_topics = set(w.topics)
    for i, r in enumerate(R):
        p = props(r["properties"])
        names = [k for k, _ in p]
        d = dict(p)
        # properties: the Java HashMap(128) order, no duplicates, columns agree with them
        assert names == [x for x in PROPERTY_ORDER if x in d]
        assert d.get("KEYS") == r["keys"] and d.get("UNIQ_KEY") == r["uniq_key"]
        assert d.get("TAGS") == r["tags"] and int(d.get("DELAY", 0)) == r["delay_level"]
        assert d["WAIT"] == "true" and d.get("CLUSTER") == w.cluster
        assert (d.get("TRAN_MSG") == "true") == (d.get("PGROUP") == w.producer_group) \
            == (tran[i] != 0)
        if r["keys"] is not None:
            k = r["keys"]
            assert k and not k.startswith(" ") and not k.endswith(" ") and "  " not in k
            assert 1 <= len(k.split(" ")) <= w.max_keys_per_message
        if w.uniq_key:
            assert len(r["uniq_key"]) == (56 if r["born_host"].startswith("[") else 32)
        else:
            assert r["uniq_key"] is None
        # hosts and IPv6 flags agree
        assert bool(r["sys_flag"] & 0x10) == r["born_host"].startswith("[")
        assert bool(r["sys_flag"] & 0x20) == r["store_host"].startswith("[")
        assert r["flag"] == w.flag and r["reconsume_times"] == 0
        assert len(r["body"]) >= (0 if tran[i] == 0xC else w.body_min) and len(r["body"]) <= w.body_max
        # delayed: waiting copy under SCHEDULE_TOPIC_XXXX, queue level-1, REAL_TOPIC / REAL_QID
        if r["topic"] == SCHED:
            assert r["delay_level"] >= 1 and r["queue_id"] == r["delay_level"] - 1
            assert d["REAL_TOPIC"] in real_topics and 0 <= int(d["REAL_QID"]) < w.queues_per_topic
            assert tran[i] == 0
        elif r["delay_level"]:
            assert r["topic"] == d["REAL_TOPIC"] and r["queue_id"] == int(d["REAL_QID"])
        else:
            assert "REAL_TOPIC" not in d and "REAL_QID" not in d and r["topic"] in real_topics
        # decisions point at an earlier half message of the same producer and message
        if is_decision[i]:
            j = r["prepared_index"]
            assert 0 <= j < i and tran[j] == 0x4
            h = R[j]
            for col in ("producer", "topic", "queue_id", "born_timestamp", "born_host", "properties",
                        "keys", "uniq_key"):
                assert h[col] == r[col], col
            assert r["body"] == (b"" if tran[i] == 0xC else h["body"])
            if w.broker_clock_steps == 0:
                assert r["store_timestamp"] >= h["store_timestamp"]
            decided[j] += 1
        else:
            assert r["prepared_index"] == -1
    assert all(c == 1 for c in decided.values())


def workloads():
    """Small random workloads: the rules hold for any parameters."""
    frac = st.floats(0.0, 1.0)

    @st.composite
    def build(draw):
        messages = draw(st.integers(0, 300))
        txn = draw(frac)
        ntopics = draw(st.integers(1, 3))
        max_keys = draw(st.integers(1, 4))
        commit = draw(frac)
        return Workload(
            seed=draw(st.integers(0, 2**32)), messages=messages,
            rate=draw(st.floats(0.5, 5000.0)), pattern=draw(st.sampled_from(W.PATTERNS)),
            daily_amplitude=draw(frac), burst_interval_s=draw(st.floats(1.0, 100.0)),
            burst_duration_s=draw(st.floats(0.1, 10.0)), burst_factor=draw(st.floats(0.5, 20.0)),
            producers=draw(st.integers(1, 5)), topics=tuple(f"T{i}" for i in range(ntopics)),
            queues_per_topic=draw(st.integers(1, 5)), ipv6_fraction=draw(frac),
            broker_host=draw(st.sampled_from(["10.0.0.1:10911", "[2001:db8::1]:10911"])),
            cluster=draw(st.sampled_from(["DefaultCluster", None])),
            flag=draw(st.integers(-5, 5)), network_delay_ms=draw(st.floats(0.0, 50.0)),
            producer_clock_skew_ms=draw(st.floats(0.0, 100.0)),
            broker_clock_steps=draw(st.integers(0, min(3, max(messages - 1, 0)))),
            broker_clock_step_ms=draw(st.integers(0, 5000)),
            keyless_fraction=draw(frac), max_keys_per_message=max_keys,
            keys_per_message=draw(st.floats(1.0, float(max_keys))),
            hot_key_fraction=draw(frac), hot_keys=draw(st.integers(1, 50)),
            collision_pairs=draw(st.integers(0, 3)), collision_fraction=draw(frac),
            uniq_key=draw(st.booleans()),
            tags=draw(st.sampled_from([(), ("A",), ("TagA", "Tag B")])),
            body_median=draw(st.integers(1, 300)), body_sigma=draw(st.floats(0.0, 2.0)),
            body_max=draw(st.integers(300, 2000)),
            transaction_fraction=txn, delay_fraction=draw(st.floats(0.0, 1.0 - txn)),
            commit_fraction=commit, rollback_fraction=draw(st.floats(0.0, 1.0 - commit)),
            decision_delay_ms=draw(st.floats(0.0, 2000.0)),
            delay_levels=tuple(sorted(draw(st.sets(st.integers(1, 18), min_size=1, max_size=3)))),
            drain=draw(st.booleans()))

    return build()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=workloads(), block=st.sampled_from([16, 97, W.BLOCK_MESSAGES]), chunk=st.integers(1, 400))
def test_rules_hold_for_any_workload(w, block, chunk):
    with mock.patch.object(W, "BLOCK_MESSAGES", block):
        t = generate(w)
        assert t.schema.equals(SCHEMA)
        check_rules(w, t)
        parts = list(generate_chunks(w, chunk))
        assert (pa.concat_tables(parts) if parts else SCHEMA.empty_table()).equals(t)


def test_rules_on_a_workload_with_everything():
    w = Workload(**EVERYTHING, broker_clock_steps=3)
    check_rules(w, generate(w))


# ------------------------------------------------------------------- transactions, delays


def test_transaction_decisions_and_fractions():
    w = Workload(messages=40_000, transaction_fraction=0.25, commit_fraction=0.7,
                 rollback_fraction=0.2, drain=True, rate=5000.0)
    t = generate(w)
    tran = pc.bit_wise_and(t["sys_flag"], 0xC).to_numpy()
    halves, commits, rollbacks = (tran == 4).sum(), (tran == 8).sum(), (tran == 12).sum()
    assert abs(halves / w.messages - 0.25) < 0.01
    assert abs(commits / halves - 0.7) < 0.02 and abs(rollbacks / halves - 0.2) < 0.02
    d = describe(t).set_index(["section", "item"])["value"]
    assert abs(d[("fraction", "transactional sends")] - 0.25) < 0.01
    assert abs(d[("fraction", "rolled back (of transactional)")] - 0.2) < 0.02
    # buildIndex skips rolled-back records; halves and commits are indexed
    cols = {"topic": t["topic"], "phy_offset": np.arange(t.num_rows) * 100,
            "store_timestamp": t["store_timestamp"], "keys": t["keys"], "uniq_key": t["uniq_key"],
            "sys_flag": t["sys_flag"]}
    e = expand_columns(cols)
    assert not np.isin(e.message_index, np.flatnonzero(tran == 12)).any()


def test_undecided_at_the_end_without_drain():
    w = Workload(messages=2000, transaction_fraction=0.5, commit_fraction=1.0, rollback_fraction=0.0,
                 decision_delay_ms=5000.0, rate=1000.0, drain=False)
    t = generate(w)
    tran = pc.bit_wise_and(t["sys_flag"], 0xC).to_numpy()
    last_send = t["store_timestamp"].to_numpy()[tran != 8].max()
    assert (tran == 8).sum() < (tran == 4).sum()        # decisions after the last send are lost
    assert (t["store_timestamp"].to_numpy()[tran == 8] <= last_send).all()
    drained = generate(w.replace(drain=True))
    dt = pc.bit_wise_and(drained["sys_flag"], 0xC).to_numpy()
    assert (dt == 8).sum() == (dt == 4).sum()


def test_delayed_messages_wait_then_are_delivered():
    w = Workload(messages=5000, delay_fraction=0.3, delay_levels=(2, 5), rate=500.0, drain=True,
                 topics=("A", "B"))
    t = generate(w)
    R = rows(t)
    waiting = {r["uniq_key"]: r for r in R if r["topic"] == SCHED}
    delivered = [r for r in R if r["topic"] != SCHED and r["delay_level"]]
    assert abs(len(waiting) / w.messages - 0.3) < 0.03 and len(delivered) == len(waiting)
    table = {2: 5000, 5: 60_000}
    for r in delivered:
        wr = waiting[r["uniq_key"]]
        # the broker delivers at store time + the level's delay (+ timer polling), same message
        lag = r["store_timestamp"] - wr["store_timestamp"]
        assert table[r["delay_level"]] <= lag <= table[r["delay_level"]] + 150
        assert r["properties"] == wr["properties"] and r["body"] == wr["body"]
        assert r["born_timestamp"] == wr["born_timestamp"] and r["sys_flag"] == wr["sys_flag"]
        p = dict(props(r["properties"]))
        assert (r["topic"], r["queue_id"]) == (p["REAL_TOPIC"], int(p["REAL_QID"]))
    assert {r["queue_id"] for r in waiting.values()} == {1, 4}


# ------------------------------------------------------------------------------- statistics


def test_steady_arrival_rate():
    w = Workload(messages=50_000, rate=2500.0, network_delay_ms=0.0)
    ts = generate(w)["store_timestamp"].to_numpy()
    span_s = (ts[-1] - ts[0]) / 1000
    assert abs((w.messages - 1) / span_s / w.rate - 1) < 0.02
    # Poisson: counts per 50 ms have variance ~ mean (about 400 bins of 125)
    c = np.bincount((ts - ts[0]) // 50)[:-1]
    assert abs(c.var() / c.mean() - 1) < 0.2


def test_daily_cycle_follows_the_profile():
    w = Workload(messages=86_400, rate=1.0, pattern="daily", daily_amplitude=0.6,
                 daily_peak_hour=14.0, start_ms=1_718_064_000_000)   # 2024-06-11 00:00 UTC
    ts = generate(w)["store_timestamp"].to_numpy()
    hour = (ts - w.start_ms) // 3_600_000
    got = np.bincount(hour[hour < 24], minlength=24)
    expect = rate_profile(w, 86_400).reshape(24, 3600).sum(axis=1)
    assert np.corrcoef(got, expect)[0, 1] > 0.98
    assert got.argmax() in (13, 14, 15) and got.argmin() in (1, 2, 3)
    assert abs(got[12:17].sum() / expect[12:17].sum() - 1) < 0.06


def test_bursts_raise_the_rate_inside_them():
    w = Workload(messages=60_000, rate=100.0, pattern="bursts", burst_interval_s=60.0,
                 burst_duration_s=5.0, burst_factor=8.0, network_delay_ms=0.0)
    ts = generate(w)["store_timestamp"].to_numpy()
    sec = (ts - w.start_ms) // 1000
    horizon = int(sec[-1])
    prof = rate_profile(w, horizon)
    counts = np.bincount(sec[sec < horizon], minlength=horizon)
    burst = prof > w.rate
    assert burst.any() and (~burst).any()
    assert abs(counts[burst].mean() / 800.0 - 1) < 0.05
    assert abs(counts[~burst].mean() / 100.0 - 1) < 0.05


def test_zipf_rank_frequency_slope():
    w = Workload(messages=200_000, keyless_fraction=0.0, hot_key_fraction=1.0, hot_keys=2000,
                 zipf_s=1.2, rate=1e5)
    toks = generate(w)["keys"]
    vc = pc.value_counts(toks)
    counts = np.sort(vc.field("counts").to_numpy())[::-1]
    r = np.arange(1, 101)
    slope = np.polyfit(np.log(r), np.log(counts[:100]), 1)[0]
    assert abs(slope + 1.2) < 0.08
    # rank 1 is the most frequent key, named <prefix>1
    assert vc.field("values")[int(np.argmax(vc.field("counts").to_numpy()))].as_py() == "USER_1"


def test_keys_per_message_and_keyless_share():
    w = Workload(messages=50_000, keys_per_message=2.5, max_keys_per_message=6, keyless_fraction=0.3,
                 rate=1e5)
    t = generate(w)
    d = describe(t).set_index(["section", "item"])["value"]
    assert abs(d[("keys", "keys per message (keyed rows)")] - 2.5) < 0.03
    assert abs(d[("keys", "rows without keys")] - 0.3) < 0.01
    assert d[("keys", "max keys per message")] <= 6
    # unique order ids are unique
    toks = pc.list_flatten(pc.split_pattern(t["keys"], " "))
    order = pc.filter(toks, pc.starts_with(toks, "ORDER_"))
    assert pc.count_distinct(order).as_py() == len(order)


def test_body_sizes_lognormal_and_clipped():
    w = Workload(messages=30_000, body_median=300, body_sigma=0.8, body_min=50, body_max=2000, rate=1e5)
    sizes = pc.binary_length(generate(w)["body"]).to_numpy()
    assert sizes.min() >= 50 and sizes.max() <= 2000
    assert abs(np.median(sizes) / 300 - 1) < 0.05
    inner = sizes[(sizes > 50) & (sizes < 2000)]
    assert abs(np.log(inner).std() - 0.8) < 0.1


def test_ipv6_producers_and_broker():
    w = Workload(messages=4000, producers=10, ipv6_fraction=0.3, broker_host="[2001:db8::10]:10911")
    t = generate(w)
    sf = t["sys_flag"].to_numpy()
    assert (sf & 0x20).all()
    v6_producers = set(pc.filter(t["producer"], pc.not_equal(pc.bit_wise_and(t["sys_flag"], 0x10), 0)).to_pylist())
    assert len(v6_producers) == 3
    assert set(t["store_host"].to_pylist()) == {"[2001:db8::10]:10911"}


# ----------------------------------------------------------------------- ids, keys, clocks


def test_uniq_keys_match_msgid_and_are_unique():
    w = Workload(messages=3000, producers=4, ipv6_fraction=0.5, producer_clock_skew_ms=50.0,
                 timezone="Asia/Shanghai", start_ms=1_719_763_000_000)    # crosses a month start
    t = generate(w)
    R = rows(t)
    assert len({r["uniq_key"] for r in R}) == len(R)
    s = W._Setup(w)
    counters = collections.Counter()
    for r in R:
        p = r["producer"]
        want = uniq_ids_many(str(s.ip[p]), int(s.pid[p]), int(s.clh[p]), [r["born_timestamp"]],
                             [counters[p]], tz=w.timezone)[0]
        counters[p] += 1
        assert r["uniq_key"] == want
        u = parse_uniq_id(r["uniq_key"], now=r["store_timestamp"] + 1000, tz=w.timezone)
        assert u.timestamp_ms == r["born_timestamp"]
        assert f"{u.ip}" in r["born_host"]


def test_collision_pairs_really_collide():
    w = Workload(messages=2000, collision_pairs=4, collision_fraction=1.0, keyless_fraction=0.0,
                 topics=("TopicTest", "Other"))
    pairs = collision_keys(w)
    assert len(pairs) == 4
    for a, b in pairs:
        assert a != b and len(a) == len(b)
        for topic in w.topics:
            assert rmqlab.java_hash(f"{topic}#{a}") == rmqlab.java_hash(f"{topic}#{b}")
    assert pairs[1] == ("ORDER_Aa1", "ORDER_BB1")
    first = [k.split(" ")[0] for k in generate(w)["keys"].to_pylist()]
    seen = collections.Counter(first)
    assert set(seen) == {k for p in pairs for k in p}
    assert min(seen.values()) > 150


def test_store_time_goes_backwards_only_when_asked():
    base = Workload(messages=5000, rate=1000.0, producer_clock_skew_ms=30.0)
    ts = generate(base)["store_timestamp"].to_numpy()
    assert (np.diff(ts) >= 0).all()
    stepped = generate(base.replace(broker_clock_steps=3, broker_clock_step_ms=2000))
    ts2 = stepped["store_timestamp"].to_numpy()
    drops = np.flatnonzero(np.diff(ts2) < 0)
    assert len(drops) == 3
    assert ((ts2[drops] - ts2[drops + 1]) > 1900).all()
    # the rows themselves are the same messages in the same order
    assert stepped.drop_columns(["store_timestamp"]).equals(generate(base).drop_columns(["store_timestamp"]))


def test_born_time_is_the_producers_clock():
    w = Workload(messages=20_000, producers=3, producer_clock_skew_ms=500.0, network_delay_ms=2.0)
    t = generate(w)
    lag = (t["store_timestamp"].to_numpy() - t["born_timestamp"].to_numpy())
    prod = t["producer"].to_numpy()
    skew = W._Setup(w).skew_ms
    for p in range(3):
        # store - born = network delay (mean 2 ms) - the producer's skew
        assert abs(np.median(lag[prod == p]) + skew[p] - 1.4) < 2.0


# ------------------------------------------------------------------------- properties order


def test_property_order_is_the_java_hashmap_order():
    # the real broker CommitLog in ../shared/real-data lists 0, KEYS, TAGS: a HashMap(16)
    assert java_hashmap_order(["TAGS", "KEYS", "0"], 16) == ["0", "KEYS", "TAGS"]
    # 5.x broker: HashMap(128) of the client's string, then CLUSTER / REAL_TOPIC / REAL_QID;
    # UNIQ_KEY and CLUSTER share bucket 28, so insertion decides: the client's first
    assert PROPERTY_ORDER == ("UNIQ_KEY", "CLUSTER", "PGROUP", "DELAY", "TAGS", "TRAN_MSG", "KEYS",
                              "WAIT", "REAL_TOPIC", "REAL_QID")


def test_properties_block_text():
    t = generate(Workload(messages=1, seed=11, tags=("TagA",)))
    r = rows(t)[0]
    assert r["properties"] == (f"UNIQ_KEY\x01{r['uniq_key']}\x02CLUSTER\x01DefaultCluster\x02"
                               f"TAGS\x01TagA\x02KEYS\x01{r['keys']}\x02WAIT\x01true\x02")


# --------------------------------------------------------------------------------- describe


def test_describe_summary():
    w = Workload(**EVERYTHING)
    t = generate(w)
    d = describe(t)
    assert list(d.columns) == ["section", "item", "value"]
    v = d.set_index(["section", "item"])["value"]
    assert v[("records", "rows")] == t.num_rows
    assert v[("records", "producer sends")] == w.messages
    assert v[("records", "producers")] == 5
    assert sum(v["topic"]) == t.num_rows and sum(v["queue"]) == t.num_rows
    assert v[("topic", SCHED)] == v[("records", "delivered copies")]
    assert abs(v[("fraction", "delayed sends")] - 0.15) < 0.03
    assert 0.2 < v[("fraction", "IPv6 born hosts")] < 0.6
    assert v[("time", "store-time steps backwards")] == 0
    assert v[("rate", "p50 records/s")] <= v[("rate", "max records/s")]
    assert len(d[d.section == "hot key"]) == 5
    assert describe(t.to_pandas()).equals(d)


# ------------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", [
    dict(messages=-1), dict(rate=0.0), dict(pattern="weekly"), dict(topics=()),
    dict(topics=("bad topic",)), dict(topics=(SCHED,)), dict(transaction_fraction=0.7, delay_fraction=0.5),
    dict(keys_per_message=9.0), dict(order_key_prefix="A B"), dict(broker_host="nohost"),
    dict(delay_levels=(19,)), dict(broker_clock_steps=5, messages=3), dict(body_min=0),
    dict(commit_fraction=0.9, rollback_fraction=0.2), dict(timezone="Mars/Olympus"),
])
def test_bad_workloads_are_refused(bad):
    with pytest.raises(ValueError):
        Workload(**bad)


def test_workload_is_frozen_and_lists_become_tuples():
    w = Workload(topics=["A", "B"], tags=["x"])
    assert w.topics == ("A", "B") and w.tags == ("x",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.seed = 3
    hash(w)


def test_colliding_keys_come_back_from_a_broker_index_query(tmp_path):
    # what the collision pairs are for: a broker-mode key query returns the other key's messages
    w = Workload(messages=500, collision_pairs=1, collision_fraction=0.5, keyless_fraction=0.0)
    t = generate(w)
    phy = np.arange(t.num_rows, dtype=np.int64) * 1000
    e = expand_columns({"topic": t["topic"], "phy_offset": phy, "store_timestamp": t["store_timestamp"],
                        "keys": t["keys"], "uniq_key": t["uniq_key"], "sys_flag": t["sys_flag"]})
    path = tmp_path / "20240610061320000"
    rmqlab.build_index_file(path, e.keys, e.phy_offsets, e.store_timestamps, hash_slot_num=1009,
                            index_num=len(e) + 1)
    keys = t["keys"].to_pylist()
    aa = {int(phy[i]) for i, k in enumerate(keys) if k.split(" ")[0] == "ORDER_Aa0"}
    bb = {int(phy[i]) for i, k in enumerate(keys) if k.split(" ")[0] == "ORDER_BB0"}
    assert aa and bb
    with rmqlab.IndexFile.open(path, hash_slot_num=1009, index_num=len(e) + 1) as f:
        got = set(f.select_phy_offsets("TopicTest#ORDER_Aa0", 10_000, 0, 2**63 - 1))
    assert got == aa | bb
