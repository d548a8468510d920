"""The notebooks that read a store a real broker wrote (rmqlab.lab.brokerstores), run top to
bottom on the broker cache this suite built: their key cells end in assertions against the
broker's own files (its TimerMetrics books, the CommitLog's properties)."""
from __future__ import annotations

import nbformat
import pytest
import rocketmq_harness as rh

from tests.test_notebooks import NOTEBOOKS, _name, reads_broker_stores, run_notebook

BROKER_NOTEBOOKS = [p for p in NOTEBOOKS if reads_broker_stores(nbformat.read(p, as_version=4))]


def test_some_notebook_reads_broker_stores():
    assert [_name(p) for p in BROKER_NOTEBOOKS] == ["09-timer-wheel.ipynb"]


@pytest.mark.notebooks
@pytest.mark.parametrize("path", BROKER_NOTEBOOKS, ids=_name)
def test_broker_notebook_runs(path):
    rh.rocketmq_store("5.3.3", "clean")   # the store the notebook reads, built if the cache lacks it
    run_notebook(path)
