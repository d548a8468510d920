"""The C fast paths against the Python model on inputs large enough to take every C branch.

put_keys copies the slot table to huge-page memory from 100,000 keys on, and
select_phy_offsets_many walks chains in groups of 16; small property tests never reach the
first and rarely stress the second, so these tests use sizes chosen to cross both.
"""
import numpy as np
import pytest

import rmqlab
from rmqlab.formats.indexfile import IndexFile

LONG_MAX = 2**63 - 1


def workload(n, seed, distinct=None):
    rng = np.random.default_rng(seed)
    distinct = distinct or n
    keys = [f"T{seed}#k{int(i)}" for i in rng.integers(0, distinct, n)]
    phy = rng.integers(0, 2**40, n)
    # bursts of equal timestamps, some going backwards: the clamping and second truncation matter
    ts = 1718000000000 + np.cumsum(rng.integers(-400, 900, n))
    return keys, phy, ts


@pytest.mark.parametrize("rule", ["new-slot", "every-put"])
def test_bulk_equals_sequential_above_the_slot_copy_threshold(tmp_path, rule):
    n = 130_000  # > SLOT_COPY_MIN_KEYS in indexcore.c
    keys, phy, ts = workload(n, seed=7, distinct=40_000)
    geometry = dict(hash_slot_num=9_973, index_num=n + 1)
    with IndexFile.create(tmp_path / "seq", **geometry, slot_count_rule=rule) as f:
        for k, p, t in zip(keys, phy.tolist(), ts.tolist()):
            assert f.put_key(k, p, t)
    written = rmqlab.build_index_file(tmp_path / "bulk", keys, phy, ts, **geometry, slot_count_rule=rule)
    assert written == n
    assert (tmp_path / "bulk").read_bytes() == (tmp_path / "seq").read_bytes()


def test_bulk_continues_a_partly_filled_file_above_the_threshold(tmp_path):
    keys, phy, ts = workload(250_000, seed=11, distinct=90_000)
    geometry = dict(hash_slot_num=4_099, index_num=200_000)  # more keys than room: the tail is dropped
    with IndexFile.create(tmp_path / "seq", **geometry) as f:
        results = [f.put_key(k, p, t) for k, p, t in zip(keys, phy.tolist(), ts.tolist())]
    assert results.count(True) == 199_999 and not any(results[199_999:])
    with IndexFile.create(tmp_path / "bulk", **geometry) as f:
        assert f.put_keys(keys[:1000], phy[:1000], ts[:1000]) == 1000
    with IndexFile.open(tmp_path / "bulk", **geometry, writable=True) as f:
        assert f.put_keys(keys[1000:], phy[1000:], ts[1000:]) == 199_999 - 1000
        assert f.put_keys(keys[:5], phy[:5], ts[:5]) == 0
    assert (tmp_path / "bulk").read_bytes() == (tmp_path / "seq").read_bytes()


@pytest.mark.parametrize("n_probe", [1, 15, 16, 17, 1_000])
def test_batch_select_equals_single_selects(tmp_path, n_probe):
    keys, phy, ts = workload(20_000, seed=3, distinct=3_000)  # chains with many hash matches
    rmqlab.build_index_file(tmp_path / "f", keys, phy, ts, hash_slot_num=257, index_num=30_000)
    rng = np.random.default_rng(n_probe)
    probe = [keys[i] for i in rng.integers(0, len(keys), n_probe)] + ["T3#absent", ""]
    with IndexFile.open(tmp_path / "f", hash_slot_num=257, index_num=30_000) as f:
        for max_num, begin, end in [(64, 0, LONG_MAX), (5, 0, LONG_MAX), (0, 0, LONG_MAX),
                                    (64, int(ts[5000]), int(ts[15000])), (3, int(ts[9000]), LONG_MAX)]:
            batch = f.select_phy_offsets_many(probe, max_num, begin, end)
            for i, key in enumerate(probe):
                want = f.select_phy_offsets(key, max_num, begin, end)
                assert batch[i] == want
                assert batch.entries_read[i] == len(f.trace_query(key, max_num, begin, end).steps)
