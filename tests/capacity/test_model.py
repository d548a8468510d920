"""The capacity model against independent truths: a generated store (index files counted on
disk), real index files read back by rmqlab.analysis.indexstats, the uniform-hash theory, brute-force
simulations of retention, Poisson tails and disk growth, and Monte Carlo's degenerate case."""
from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.analysis.indexstats import chain_length_theory, file_stats
from rmqlab.capacity import EXAMPLE_PLAN_TOML, estimate, monte_carlo, parse_plan
from rmqlab.capacity.model import (
    OUTPUTS,
    SAMPLE_ENTRIES,
    SAMPLE_FILES,
    broker_walk_entries,
    chain_lengths_from_keys,
    commitlog_records_per_file,
    days_to_reach,
    files_on_disk,
    peak_window_messages,
    poisson_tail,
    retained_hours,
    sample_index_keys,
    sample_occupancy,
    uniform_occupancy_sd,
    written,
    zipf_distinct_keys,
    zipf_share,
)
from rmqlab.formats.commitlog import message_length, place_records
from rmqlab.formats.indexfile import IndexFile, build_index_file

SMALL_INDEX = {"index": {"hash_slot_num": 1000, "index_num": 4001}}


def test_generated_store_index_files_and_sizes(tmp_path):
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload

    w = Workload(messages=20_000, seed=1, keyless_fraction=0.0, keys_per_message=1.0, body_sigma=0.0)
    store = generate_store(tmp_path / "s", w, hash_slot_num=1000, index_num=4001,
                           commitlog_file_size=1 << 20, consume_queue_file_size=20 * 1000)
    plan = parse_plan({**SMALL_INDEX, "keys": {"keyless_fraction": 0.0, "keys_per_message": 1},
                       "messages": {"topics": ["TopicTest"]}})
    got = written(plan, 20_000)
    files = sorted((store.root / "index").iterdir())
    assert got["index_keys"] == 40_000          # UNIQ_KEY + one token each
    assert got["index_files"] == len(files)
    assert got["index_bytes"] == sum(f.stat().st_size for f in files)
    full = [file_stats(f, hash_slot_num=1000, index_num=4001) for f in files]
    assert all(s["entries"] == estimate(plan, sample=False).keys_per_index_file for s in full)


@given(st.integers(91, 5000), st.integers(1, 400))
@settings(max_examples=60, deadline=None)
def test_records_per_file_matches_placement(record, n):
    file_size = max(record + 8, 20_000)
    phy, spans, _ = place_records(np.full(n * 60, record), 0, file_size)
    per_file = commitlog_records_per_file(record, file_size)
    first_file = int(np.count_nonzero(phy < file_size))
    assert first_file == min(per_file, n * 60)


def test_record_bytes_use_the_format_rule():
    plan = parse_plan({"keys": {"uniq_key": False, "keyless_fraction": 0.0, "key_bytes": 12},
                       "messages": {"body_bytes": 100, "topics": ["Abc"], "other_properties_bytes": 0}})
    # properties: "KEYS\x01" + 12-byte token + "\x02"
    assert estimate(plan, sample=False).commitlog_record_bytes == message_length(100, 3, 4 + 1 + 12 + 1)
    with_uniq = parse_plan({"messages": {"body_bytes": 100, "topics": ["Abc"], "properties_bytes": 77}})
    assert estimate(with_uniq, sample=False).commitlog_record_bytes == message_length(100, 3, 77)


def test_key_sample_matches_workload_keys():
    plan = parse_plan({"keys": {"keys_per_message": 2}, "messages": {"topics": ["T1"]}})
    keys = sample_index_keys(plan, 1000).to_pylist()
    assert all(k.startswith("T1#") for k in keys)
    assert len(keys) == 1000
    # a UNIQ_KEY (32 hex) opens every message; keyed messages follow with their tokens
    assert len(keys[0]) == 3 + 32
    share_uniq = np.mean([len(k) == 35 and k[3:].isalnum() and k[3:].upper() == k[3:] for k in keys])
    assert share_uniq == pytest.approx(1 / (1 + 0.9 * 2), abs=0.05)


def test_chains_from_keys_equal_a_real_index_file(tmp_path):
    plan = parse_plan({"keys": {"hot_key_fraction": 0.5, "cardinality": 50}})
    keys = sample_index_keys(plan, 3000)
    s = chain_lengths_from_keys(keys, 701, 3000)
    path = tmp_path / "20240610061320000"
    build_index_file(path, keys, np.arange(3000), np.full(3000, 1_718_000_000_000),
                     hash_slot_num=701, index_num=3001)
    f = file_stats(path, hash_slot_num=701, index_num=3001)
    assert s.slots_used == f["slots_used"] and s.occupancy == f["occupancy"]
    assert s.mean_chain_length == pytest.approx(f["mean_chain_length"])
    assert s.max_chain_length == f["max_chain_length"] and s.distinct_keys == f["distinct_hashes"]
    assert int((s.histogram.chain_length * s.histogram.slots).sum()) == 3000


def test_chains_of_random_keys_follow_the_uniform_theory():
    rng = np.random.default_rng(5)
    m, n = 20_000, 80_000
    keys = [f"T#{x:x}" for x in rng.integers(0, 2**62, n)]
    s = chain_lengths_from_keys(keys, m, n)
    theory = chain_length_theory(m, n)
    # slots with chain length c: Binomial-ish counts, sd <= sqrt(expected)
    for c in range(10):
        expected = float(theory.slots[c])
        got = int(s.histogram.slots[s.histogram.chain_length == c].sum())
        assert abs(got - expected) <= 5 * math.sqrt(expected) + 1, c
    assert s.occupancy == pytest.approx(1 - theory.attrs["empty_share"], abs=5 * math.sqrt(0.02 / m) + 1e-3)


def test_scaled_sample_agrees_with_a_full_size_one():
    plan = parse_plan({"index": {"hash_slot_num": 50_000, "index_num": 200_001}})
    full = sample_occupancy(plan, max_entries=400_000, files=2)
    scaled = sample_occupancy(plan, max_entries=40_000)
    assert full.scale == 1.0 and full.files == 2
    assert scaled.files == 4 and scaled.scale == pytest.approx(0.05)
    assert scaled.occupancy == pytest.approx(full.occupancy, rel=0.01)
    assert scaled.mean_chain_length == pytest.approx(full.mean_chain_length, rel=0.01)
    assert scaled.entries_read_hit == pytest.approx(full.entries_read_hit, rel=0.03)
    assert scaled.entries_read_hit_broker == pytest.approx(full.entries_read_hit_broker, rel=0.03)


def test_whole_file_sample_is_the_first_real_file_of_the_stream(tmp_path):
    # too big for SAMPLE_FILES[1] whole files in the default budget: whole_files hashes one
    # whole file where the fast sample scales; the one file is a real index file's slots
    plan = parse_plan({"index": {"hash_slot_num": 60_000, "index_num": 240_000},
                       "keys": {"uniq_key": False, "hot_key_fraction": 0.9, "cardinality": 200, "zipf_s": 1.2}})
    cap = plan.geometry.capacity
    assert cap * SAMPLE_FILES[1] > SAMPLE_ENTRIES
    whole = sample_occupancy(plan, whole_files=True)
    fast = sample_occupancy(plan)
    assert (whole.files, whole.scale, whole.entries) == (1, 1.0, cap)
    assert fast.scale < 1.0 and fast.files == SAMPLE_FILES[1]
    path = tmp_path / "20240610061320000"
    build_index_file(path, sample_index_keys(plan, cap), np.arange(cap), np.full(cap, 1_718_000_000_000),
                     hash_slot_num=60_000, index_num=240_000)
    f = file_stats(path, hash_slot_num=60_000, index_num=240_000)
    assert whole.slots_used == f["slots_used"] and whole.occupancy == f["occupancy"]
    assert whole.mean_chain_length == pytest.approx(f["mean_chain_length"], rel=1e-12)
    assert estimate(plan, whole_files=True).occupancy == whole.occupancy


def test_sample_averages_consecutive_files_of_the_stream():
    # few distinct keys: a file's occupancy depends on which order ids it holds
    plan = parse_plan({"keys": {"uniq_key": False, "hot_key_fraction": 0.9, "cardinality": 200, "zipf_s": 1.2},
                       "index": {"hash_slot_num": 4000, "index_num": 16_000}})
    s = sample_occupancy(plan)
    C = 15_999
    assert s.scale == 1.0 and s.files == min(16, 200_000 // C)
    keys = sample_index_keys(plan, s.files * C)
    each = [chain_lengths_from_keys(keys.slice(j * C, C), 4000, C, max_num=64) for j in range(s.files)]
    occ = np.array([f.occupancy for f in each])
    assert s.occupancy_files == tuple(occ) and s.occupancy == pytest.approx(occ.mean())
    assert s.mean_chain_length == pytest.approx(s.files * C / sum(f.slots_used for f in each))
    assert s.entries_read_hit_broker == pytest.approx(np.mean([f.entries_read_hit_broker for f in each]))
    assert s.occupancy_file_sd == pytest.approx(occ.std(ddof=1)) and s.occupancy_file_sd > 0.003
    assert occ.min() <= s.occupancy_file_p5 < s.occupancy < s.occupancy_file_p95 <= occ.max()
    assert int(s.histogram.slots.sum()) == 4000 * s.files
    e = estimate(plan, sample=s)
    assert (e.occupancy, e.occupancy_file_sd, e.occupancy_file_p5) == \
        (s.occupancy, s.occupancy_file_sd, s.occupancy_file_p5)


def test_uniform_occupancy_spread_against_simulation():
    rng = np.random.default_rng(4)
    for m, d in [(50, 120), (400, 300), (7, 3)]:
        draws = np.sort(rng.integers(0, m, (20_000, d)), axis=1)
        used = (1 + np.count_nonzero(np.diff(draws, axis=1), axis=1)) / m
        assert float(uniform_occupancy_sd(d, m)) == pytest.approx(np.std(used), rel=0.03)
    e = estimate(parse_plan(SMALL_INDEX), sample=False)
    assert e.occupancy_file_p5 < e.occupancy < e.occupancy_file_p95


def _broker_walks(tmp_path, keys, m, max_num):
    """Entries the real walk (IndexFile.trace_query) reads for each distinct key, by key."""
    n = len(keys)
    path = tmp_path / "20240610061320000"
    build_index_file(path, keys, np.arange(n) * 100, np.full(n, 1_718_000_000_000),
                     hash_slot_num=m, index_num=n + 1)
    with IndexFile.open(path, hash_slot_num=m, index_num=n + 1) as f:
        return {k: len(f.trace_query(k, max_num=max_num).steps) for k in dict.fromkeys(keys)}


def test_broker_cut_expectation_against_shuffled_real_walks(tmp_path):
    # one composition (a key 12 times, another 5 times, 40 one-off keys in 3 slots), walked
    # in many random put orders: the mean walk is M (L + 1) / (c + 1) for c >= M, else L
    keys = ["T#hot"] * 12 + ["T#warm"] * 5 + [f"T#k{i}" for i in range(40)]
    m, M = 3, 4
    rng = np.random.default_rng(8)
    totals, runs = {}, 150
    for _ in range(runs):
        order = [keys[i] for i in rng.permutation(len(keys))]
        for k, read in _broker_walks(tmp_path, order, m, M).items():
            totals.setdefault(k, []).append(read)
    s = chain_lengths_from_keys(keys, m, len(keys), max_num=M)
    from rmqlab.jvm.hashcode import index_hash_many
    h = index_hash_many(keys).astype(np.int64)
    chains = np.bincount(h % m, minlength=m)
    for k, count in (("T#hot", 12), ("T#warm", 5)):
        L = chains[index_hash_many([k])[0] % m]
        reads = np.array(totals[k], float)
        want = float(broker_walk_entries(L, count, M))
        assert want == pytest.approx(M * (L + 1) / (count + 1))
        assert reads.mean() == pytest.approx(want, abs=4 * reads.std() / math.sqrt(runs) + 1e-9), k
    # one-off keys (c = 1 < M) read their whole chain whatever the order
    assert all(set(totals[f"T#k{i}"]) == {int(chains[index_hash_many([f"T#k{i}"])[0] % m])} for i in range(40))
    assert s.entries_read_hit_broker < s.entries_read_hit


def test_broker_cut_against_walks_of_a_sampled_file(tmp_path):
    # hot keys with hundreds of entries a file: the broker stops at maxNum, far before the
    # chain's end; the model's expectation against every distinct key's real walk
    plan = parse_plan({"keys": {"uniq_key": False, "hot_key_fraction": 0.9, "cardinality": 200, "zipf_s": 1.2},
                       "index": {"hash_slot_num": 1000, "index_num": 4001, "max_msgs_num_batch": 16}})
    keys = sample_index_keys(plan, 4000).to_pylist()
    s = chain_lengths_from_keys(keys, 1000, 4000, max_num=16)
    walks = _broker_walks(tmp_path, keys, 1000, 16)
    from rmqlab.jvm.hashcode import index_hash_many
    by_hash = {}
    for k, read in walks.items():
        by_hash[int(index_hash_many([k])[0])] = read          # one walk a hash, as the model counts
    reads = np.array(list(by_hash.values()), float)
    assert len(reads) == s.distinct_keys
    whole = _broker_walks(tmp_path, keys, 1000, 10**9)
    assert np.mean([whole[k] for k in dict.fromkeys(keys)]) == pytest.approx(s.entries_read_hit, rel=0.01)
    assert s.entries_read_hit_broker < 0.8 * s.entries_read_hit
    # the keys cut are few; their order in the file is one draw: 4 standard errors of the mean
    assert s.entries_read_hit_broker == pytest.approx(reads.mean(), abs=4 * reads.std() / math.sqrt(len(reads)))
    assert estimate(plan, sample=s).entries_read_hit_broker == s.entries_read_hit_broker


def test_hot_keys_take_one_slot_each():
    # every token a hot key from 10 names: the file's distinct keys are the UNIQ_KEYs + 10
    plan = parse_plan({**SMALL_INDEX, "keys": {"keyless_fraction": 0.0, "hot_key_fraction": 1.0,
                                               "cardinality": 10, "zipf_s": 0.0}})
    s = sample_occupancy(plan)
    assert s.entries == 4000 and s.distinct_keys <= 2000 + 10
    e = estimate(plan)
    expected_uniform = 1 - (1 - 1 / 1000) ** (2000 + 10)
    assert e.occupancy_uniform == pytest.approx(expected_uniform, rel=1e-3)
    assert e.occupancy == s.occupancy


def test_zipf_helpers_against_brute_force():
    for V, s in [(10, 1.1), (5000, 1.1), (20000, 0.7), (3000, 1.0)]:
        p = np.arange(1, V + 1, dtype=float) ** -s
        p /= p.sum()
        assert float(zipf_share(1, V, s)[0]) == pytest.approx(p[0], rel=1e-3)
        for draws in (100, 10_000, 1_000_000):
            brute = float((1 - (1 - p) ** draws).sum())
            assert float(zipf_distinct_keys(draws, V, s)[0]) == pytest.approx(brute, rel=0.02)


def test_retained_hours_and_files_on_disk_against_a_simulation():
    # files complete every T hours; a deletion pass each minute of the delete hours removes
    # files completed more than `reserve` hours ago (never the one being written)
    for T, reserve, hours in [(0.7, 10.0, [4]), (2.3, 5.5, [4, 16]), (1.0, 3.0, list(range(24)))]:
        step = 1 / 60
        deleted_until = 0   # files [0, deleted_until) are gone
        most = 0
        for i in range(int(24 * 6 / step)):
            now = i * step
            done = int(now / T)   # files completed
            if int(now % 24) in hours:
                while deleted_until < done and (deleted_until + 1) * T + reserve <= now:
                    deleted_until += 1
            most = max(most, done - deleted_until + 1) if now > 48 else most
        K = retained_hours(reserve, hours)
        model = int(files_on_disk(K / T, 1))
        assert most <= model <= most + 1, (T, reserve, hours, most, model)


def test_peak_window_against_numeric_integration():
    rate, a = 10.0, 0.6
    for K in (1.0, 7.5, 24.0, 30.0, 95.0):
        t = np.arange(0, 24 * 3600 * 8) + 0.5
        r = rate * (1 + a * np.cos(2 * np.pi * (t / 3600 - 20) / 24))
        c = np.concatenate([[0], np.cumsum(r)])
        w = int(K * 3600)
        brute = (c[w:] - c[:-w]).max()
        assert float(peak_window_messages(rate, K, a)) == pytest.approx(brute, rel=1e-6)


def test_poisson_tail_against_direct_sums_and_sampling():
    for mu, k in [(3.0, 5), (64.0, 64), (50.0, 64), (200.0, 64), (0.5, 0)]:
        cdf = sum(math.exp(-mu) * mu**j / math.factorial(j) for j in range(k + 1))
        assert float(poisson_tail(mu, k)) == pytest.approx(1 - cdf, abs=1e-9)
    draws = np.random.default_rng(1).poisson(70.0, 200_000)
    assert float(poisson_tail(70.0, 64)) == pytest.approx((draws > 64).mean(), abs=0.005)
    # the Wilson-Hilferty branch against the exact sum just below its switch
    k = 5001
    for mu in (4800.0, 5000.0, 5150.0):
        logs = [-mu + j * math.log(mu) - math.lgamma(j + 1) for j in range(k + 1)]
        top = max(logs)
        exact = 1 - math.exp(top) * sum(math.exp(x - top) for x in logs)
        assert float(poisson_tail(mu, k)) == pytest.approx(exact, abs=2e-3)


@given(st.floats(1, 1e4), st.floats(1, 100), st.floats(1, 200), st.floats(-0.01, 0.05))
@settings(max_examples=80, deadline=None)
def test_days_to_reach_against_integration(target, per_day, keep, growth):
    t = days_to_reach(target, per_day, keep, growth)
    grid = np.linspace(0, 3000, 300_001)

    def held(x):
        lo = np.maximum(0, x - keep)
        if abs(growth) < 1e-9:
            return per_day * (x - lo)
        return per_day * np.exp(growth * lo) * np.expm1(growth * (x - lo)) / growth

    h = held(grid)
    if math.isinf(t):
        assert (h[grid < 3000] < target * (1 + 1e-9)).all()
    else:
        assert held(t) == pytest.approx(target, rel=1e-6)
        assert (h[grid < t * (1 - 1e-6)] <= target * (1 + 1e-9)).all()


def test_hot_key_rate_is_one_topics_share():
    # a query names one topic#key: count how often "Orders#USER_1" is put in a sampled stream
    base = {"traffic": {"messages_per_second": 40.0}, "queries": {"window_minutes": 5},
            "keys": {"cardinality": 50, "zipf_s": 1.0, "keyless_fraction": 0.2, "hot_key_fraction": 0.5}}
    one = estimate(parse_plan({**base, "messages": {"topics": ["Orders"]}}), sample=False)
    plan = parse_plan({**base, "messages": {"topics": ["Orders", "Payments", "Inventory"]}})
    three = estimate(plan, sample=False)
    assert three.hot_key_matches_per_query == pytest.approx(one.hot_key_matches_per_query / 3)
    n = 300_000
    keys = np.asarray(sample_index_keys(plan, n).to_pylist(), dtype=object)
    per_key = float(np.count_nonzero(keys == "Orders#USER_1")) / n           # share of index keys
    measured = per_key * three.index_keys_per_message * 40.0 * 300            # matches in 5 minutes
    assert three.hot_key_matches_per_query == pytest.approx(measured, rel=4 / math.sqrt(per_key * n))


def test_hot_key_truncation_matches_simulated_queries():
    plan = parse_plan({"traffic": {"messages_per_second": 2.0}, "queries": {"window_minutes": 10},
                       "keys": {"cardinality": 5, "zipf_s": 1.0, "keyless_fraction": 0.0,
                                "hot_key_fraction": 0.5}})
    e = estimate(plan, sample=False)
    p1 = 1 / sum(1 / r for r in range(1, 6))
    mu = 2.0 * 0.5 * p1 * 600
    assert e.hot_key_matches_per_query == pytest.approx(mu)
    sim = np.random.default_rng(2).binomial(1200, 0.5 * p1, 100_000)   # messages in 10 min
    assert e.hot_key_truncation_probability == pytest.approx((sim > 64).mean(), abs=0.03)


def test_default_plan_headline_numbers():
    e = estimate(parse_plan({}))
    assert e.index_keys_per_message == pytest.approx(1.9)
    assert e.index_files_per_day == pytest.approx(1000 * 1.9 * 86400 / 19_999_999)
    assert e.hours_to_fill_index_file == pytest.approx(19_999_999 / 1900 / 3600)
    assert e.retained_hours == 95.0
    assert e.load_factor == pytest.approx(4.0, rel=1e-6)
    assert e.entries_read_miss == pytest.approx(4.0, rel=1e-6)
    # the real hash of sequential ids spreads keys at least as evenly as random hashes
    assert e.occupancy >= e.occupancy_uniform - 0.005
    assert e.total_disk_bytes == e.commitlog_disk_bytes + e.consume_queue_disk_bytes + e.index_disk_bytes
    assert math.isinf(e.days_to_disk_max_used_space_ratio)


def test_growth_reaches_thresholds_in_order():
    plan = parse_plan({"traffic": {"growth_percent_per_month": 10}, "disk": {"capacity_bytes": "500GiB"}})
    e = estimate(plan, sample=False)
    assert 0 < e.days_to_disk_max_used_space_ratio < e.days_to_disk_space_clean_forcibly_ratio \
        < e.days_to_disk_space_warning_level_ratio < math.inf


def test_monte_carlo_degenerate_equals_estimate_and_percentiles_order():
    plan = parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML))
    occ = sample_occupancy(plan)
    point = plan.with_likely()
    det = estimate(point, sample=occ).as_dict()
    mc = monte_carlo(point, samples=50, seed=3, sample=occ)
    assert list(mc.index) == list(OUTPUTS)
    for name, v in det.items():
        assert mc.loc[name, "p50"] == pytest.approx(v, rel=1e-9), name
    wide = monte_carlo(plan, samples=500, seed=3, sample=occ)
    assert (wide.p5 <= wide.p50).all() and (wide.p50 <= wide.p95).all()
    assert wide.loc["messages_per_day", "p5"] >= 800 * 86400 and wide.loc["messages_per_day", "p95"] <= 1500 * 86400
    # PERT mean (low + 4 likely + high) / 6
    assert wide.loc["messages_per_day", "mean"] / 86400 == pytest.approx((800 + 4000 + 1500) / 6, rel=0.02)
    again = monte_carlo(plan, samples=500, seed=3, sample=occ)
    assert again.equals(wide)


def test_estimate_points_move_the_right_way():
    plan = parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML))
    lo, hi = estimate(plan, "low", sample=False), estimate(plan, "high", sample=False)
    assert lo.index_keys_per_day < hi.index_keys_per_day
    assert lo.commitlog_disk_bytes <= hi.commitlog_disk_bytes
    with pytest.raises(ValueError, match="point"):
        estimate(plan, "median")
