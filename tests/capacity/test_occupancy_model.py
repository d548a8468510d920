"""The capacity model's analytic occupancy and chains against measured index files.

The model (the uniform branch of :func:`rmqlab.capacity.model.estimate`, ``sample=False``;
:func:`rmqlab.capacity.model.uniform_occupancy_sd`; :func:`rmqlab.analysis.indexstats.chain_length_summary`)
says what uniformly random hashes do to a file's slots. Here it meets files whose keys are known
to hash that way (random 32-hex-digit ids drawn by the test), and files of hot keys, judged by
balls into bins (tests/support/balls_into_bins.py, the standard library alone): n keys into m
slots leave m (1 - (1 - 1/m)^n) slots occupied with an exact variance, a slot's chain is
Binomial(n, 1/m), a key stored r times puts r entries on one chain (the stated model for hot
keys), and the largest chain is bounded both ways. Every tolerance is four standard deviations
of the quantity's own distribution (exact for the occupied count, the negative-association bound
elsewhere), divided by the square root of the files pooled; the largest chain must not be a
1-in-10,000 event either way.

The files: built by :func:`rmqlab.formats.indexfile.build_index_file` (judged byte for byte
against RocketMQ's IndexFile in tests/formats), and one written by RocketMQ's own IndexFile (the
Java golden file ``fill_5000``). Each is measured by a standard-library walk of its chains
(tests/support/indexfile_stdlib.py), never by rmqlab's readers.
"""
from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from balls_into_bins import load_distribution, max_load_probabilities, moment, occupied_mean, occupied_sd, tail
from indexfile_stdlib import chain_lengths, entry_hashes
from oracles import SHARED, require_path
from reference_model import stored_hash

from rmqlab.analysis.indexstats import chain_length_summary
from rmqlab.capacity.model import estimate, uniform_occupancy_sd
from rmqlab.capacity.plan import parse_plan
from rmqlab.formats.indexfile import build_index_file

M, CAPACITY = 4000, 15_999        # the validation stores' small files: 4,000 slots, load factor 4
FILES = 8
GOLDEN = SHARED / "golden" / "fill_5000"


def random_ids(rng, n: int, topic: str = "TopicTest") -> list[str]:
    """n distinct keys ``topic#<32 hex digits>``, the digits drawn at random (their hashes are
    as good as uniform, unlike sequential ids, whose hashes run through neighbouring slots)."""
    raw = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64)
    keys = [f"{topic}#{a:016X}{b:016X}" for a, b in raw.tolist()]
    assert len(set(keys)) == n
    return keys


def build(path, keys: list[str]) -> list[int]:
    """Write `keys` (in put order) into one file of M slots and measure its chains."""
    n = len(keys)
    assert build_index_file(path, keys, np.arange(n, dtype=np.int64) * 100, np.full(n, 1_718_000_000_000),
                            hash_slot_num=M, index_num=CAPACITY + 1) == n
    loads = chain_lengths(path, M)
    assert sum(loads) == n          # every entry on exactly one chain
    return loads


def check_tails(loads: list[int], dist: list[float], files: int = 1) -> None:
    """Slots whose chain holds at least k entries, for every k the model expects 5 or more of
    (pooled over `files` files): within 4 SD of m P(load >= k) (negative association: the
    variance is at most that of independent slots, m p (1 - p))."""
    m = len(loads) // files
    counts = Counter(loads)
    for k in range(1, max(loads) + 2):
        p = tail(dist, k)
        if files * m * p < 5:
            continue
        got = sum(c for length, c in counts.items() if length >= k)
        want, sd = files * m * p, math.sqrt(files * m * p * (1 - p))
        assert abs(got - want) <= 4 * sd, f"slots with >= {k} entries: {got}, model {want:.1f} ± {4 * sd:.1f}"


def check_max(loads: list[int], dist: list[float], m: int = M) -> None:
    top = max(loads)
    at_least, below_next = max_load_probabilities(dist, m, top)[0], max_load_probabilities(dist, m, top + 1)[1]
    assert at_least >= 1e-4 and below_next >= 1e-4, (top, at_least, below_next)


@pytest.fixture(scope="module")
def uniform(tmp_path_factory):
    """FILES full files of CAPACITY random ids: their chain lengths."""
    rng = np.random.default_rng(30)
    root = tmp_path_factory.mktemp("uniform")
    return [build(root / f"{20240610000000000 + i}", random_ids(rng, CAPACITY)) for i in range(FILES)]


def test_uniform_keys_fill_the_slots_as_balls_into_bins(uniform):
    dist = load_distribution({1: CAPACITY}, M)
    mean, sd = occupied_mean(CAPACITY, M), occupied_sd(CAPACITY, M)
    used = [sum(1 for x in loads if x) for loads in uniform]
    for u in used:
        assert abs(u - mean) <= 4 * sd, (u, mean, sd)
    assert abs(sum(used) / FILES - mean) <= 4 * sd / math.sqrt(FILES)
    check_tails([x for loads in uniform for x in loads], dist, FILES)
    for loads in uniform:
        check_max(loads, dist)
        assert max(loads) >= 10          # at load factor 4 a chain of 10 is all but certain in 4,000 slots


def test_the_capacity_models_uniform_branch_predicts_the_files(uniform):
    # a plan whose every index key is a UNIQ_KEY, each once: the model's distinct keys = C
    plan = parse_plan({"keys": {"uniq_key": True, "keyless_fraction": 1.0},
                       "index": {"hash_slot_num": M, "index_num": CAPACITY + 1}})
    e = estimate(plan, sample=False)
    n, m, F = CAPACITY, M, FILES
    used = np.array([sum(1 for x in loads if x) for loads in uniform], float)
    sd = occupied_sd(n, m)
    # occupancy and its spread from one file to the next
    assert abs(e.occupancy - used.mean() / m) <= 4 * sd / m / math.sqrt(F)
    assert e.occupancy_file_sd == pytest.approx(sd / m, rel=1e-9)
    assert float(uniform_occupancy_sd(n, m)) == pytest.approx(sd / m, rel=1e-9)
    # mean chain of an occupied slot, n / used: the delta method carries the count's SD
    assert abs(e.mean_chain_length - n / used.mean()) <= 4 * (n / used.mean() ** 2) * sd / math.sqrt(F)
    # a miss walks a random slot's chain: n / m exactly, what a walk from every slot reads
    assert e.entries_read_miss == pytest.approx(np.mean([sum(loads) / m for loads in uniform]), rel=1e-12)
    # a hit walks its own slot's whole chain: the mean over keys is sum(L^2) / n; L^2 is
    # non-decreasing in the load, so its sum varies at most as m independent slots' would
    dist = load_distribution({1: n}, m)
    var_sq = moment(dist, lambda k: k**4) - moment(dist, lambda k: k**2) ** 2
    hit = np.array([sum(x * x for x in loads) / n for loads in uniform])
    assert e.entries_read_hit == pytest.approx(chain_length_summary(m, n)["entries_read_hit_walk"], rel=1e-12)
    assert abs(e.entries_read_hit - hit.mean()) <= 4 * math.sqrt(m * var_sq) / n / math.sqrt(F), \
        (e.entries_read_hit, hit.mean())


@pytest.mark.parametrize("repeats", [3, 7])
def test_a_key_repeated_r_times_puts_r_entries_on_one_chain(tmp_path, repeats):
    # the stated hot-key model: D distinct keys, each put `repeats` times in shuffled order
    rng = np.random.default_rng(repeats)
    distinct = CAPACITY // repeats
    keys = random_ids(rng, distinct) * repeats
    keys = [keys[i] for i in rng.permutation(len(keys))]
    loads = build(tmp_path / "20240610000000000", keys)
    assert all(x % repeats == 0 for x in loads)         # a key's entries never leave its slot
    used = sum(1 for x in loads if x)
    sd = occupied_sd(distinct, M)
    assert abs(used - occupied_mean(distinct, M)) <= 4 * sd
    assert float(uniform_occupancy_sd(distinct, M)) * M == pytest.approx(sd, rel=1e-9)
    dist = load_distribution({repeats: distinct}, M)
    check_tails(loads, dist)
    check_max(loads, dist)


def test_hot_keys_of_a_zipf_vocabulary_match_the_model(tmp_path):
    """A plan's hot keys (share h of the keys, drawn Zipf(s) from V keys), the rest unique: the
    model's occupancy (its expected distinct keys, uniform hashes) against files whose keys the
    test drew that way. The files' distinct counts vary too: Var(D) <= sum over ranks of
    q (1 - q), q = P(rank drawn in the file), the indicators being negatively associated."""
    h, V, s = 0.6, 400, 1.1
    plan = parse_plan({"keys": {"uniq_key": False, "keyless_fraction": 0.0, "keys_per_message": 1.0,
                                "hot_key_fraction": h, "cardinality": V, "zipf_s": s},
                       "index": {"hash_slot_num": M, "index_num": CAPACITY + 1}})
    e = estimate(plan, sample=False)
    hot = round(CAPACITY * h)
    p = np.arange(1, V + 1, dtype=float) ** -s
    p /= p.sum()
    rng = np.random.default_rng(11)
    vocabulary = random_ids(rng, V)
    occ, distinct_counts = [], []
    for i in range(FILES):
        draws = rng.choice(V, size=hot, p=p)
        keys = random_ids(rng, CAPACITY - hot) + [vocabulary[r] for r in draws]
        keys = [keys[j] for j in rng.permutation(len(keys))]
        loads = build(tmp_path / f"{20240610000000000 + i}", keys)
        mult = Counter(Counter(keys).values())
        check_tails(loads, load_distribution(dict(mult), M))       # the stated model, given the file's keys
        occ.append(sum(1 for x in loads if x) / M)
        distinct_counts.append(len(set(keys)))
    q = 1.0 - (1.0 - p) ** hot
    D = CAPACITY - hot + q.sum()
    var_D = float((q * (1 - q)).sum())
    assert abs(np.mean(distinct_counts) - D) <= 4 * math.sqrt(var_D / FILES)
    slope = (1.0 - 1.0 / M) ** D * -math.log1p(-1.0 / M)          # d occupancy / d D
    sd = math.sqrt((occupied_sd(round(D), M) / M) ** 2 + slope**2 * var_D)
    assert abs(e.occupancy - occupied_mean(D, M) / M) <= 1e-3    # the model's distinct keys, to 0.1 %
    assert abs(e.occupancy - np.mean(occ)) <= 4 * sd / math.sqrt(FILES), (e.occupancy, np.mean(occ), sd)


def test_a_file_javas_indexfile_wrote(tmp_path):
    """fill_5000: RocketMQ's IndexFile (1,000 slots, 4,999 entries of 3,747 distinct keys,
    random ids and order numbers, some keys repeated) as the stated model sees it: its
    multiplicities are counted from the keys the Java case put (their stored hashes computed
    here), and the chains measured from the bytes."""
    case = json.loads(require_path(GOLDEN / "case.json", "Java golden files").read_text())
    m = case["hashSlotNum"]
    path = GOLDEN / case["fileName"]
    keys = [p["key"] for p in case["puts"] if p["result"]]
    hashes = Counter(stored_hash(k) for k in keys)
    assert sorted(entry_hashes(path, m)) == sorted(stored_hash(k) for k in keys)
    loads = chain_lengths(path, m)
    assert sum(loads) == len(keys) == 4999
    # each chain is exactly the entries whose stored hash falls in its slot
    per_slot = Counter()
    for hsh, c in hashes.items():
        per_slot[hsh % m] += c
    assert loads == [per_slot[s] for s in range(m)]
    D = len(hashes)
    used = sum(1 for x in loads if x)
    assert abs(used - occupied_mean(D, m)) <= 4 * occupied_sd(D, m), (used, occupied_mean(D, m))
    dist = load_distribution(dict(Counter(hashes.values())), m)
    check_tails(loads, dist)
    check_max(loads, dist, m)
