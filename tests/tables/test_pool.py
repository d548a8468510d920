"""rmqlab.tables.pool.Pool.ordered: the results of every unit in the units' order, whatever
the batch and the number of processes, against the plain loop over the units."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.tables.pool import Pool


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(1, 9)), max_size=40), st.integers(1, 12),
       st.integers(1, 5))
def test_ordered_in_one_process_is_the_loop(units, batch, ahead):
    with Pool(1, "loop") as pool:
        assert list(pool.ordered(divmod, units, ahead=ahead, batch=batch)) == [divmod(*u) for u in units]
        assert pool.run.units == len(units) and pool.run.pids <= {os.getpid()}


@pytest.mark.parametrize("batch", [1, 3, 64])
def test_ordered_in_workers_is_the_loop(batch):
    units = [(n, 7) for n in range(-30, 70)]
    with Pool(2, "workers") as pool:
        assert list(pool.ordered(divmod, units, batch=batch)) == [divmod(*u) for u in units]
        assert pool.run.units == len(units) and pool.run.pids and os.getpid() not in pool.run.pids


def test_a_batch_below_one_is_refused():
    with Pool(1, "bad") as pool, pytest.raises(ValueError, match="batch must be >= 1"):
        list(pool.ordered(abs, [(1,)], batch=0))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("batch", [1, 3, 64])
def test_submit_all_then_values_is_the_loop(jobs, batch):
    units = [(n, 7) for n in range(-30, 70)]
    with Pool(jobs, "early") as pool:
        started = pool.submit_all(divmod, units, batch=batch)
        assert len(started) == -(-len(units) // batch)
        assert list(pool.values(started, batch)) == [divmod(*u) for u in units]
        assert pool.run.units == len(units)
        assert (os.getpid() not in pool.run.pids) == (jobs > 1)
    with Pool(1, "bad") as pool, pytest.raises(ValueError, match="batch must be >= 1"):
        pool.submit_all(abs, [(1,)], batch=0)
