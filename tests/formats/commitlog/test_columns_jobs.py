"""read_columns(arrow=True, jobs=N): each file decoded in a worker process and its Arrow columns
mapped back here give the frame, the report and the error of the one-process read, on random
CommitLog folders with damage (tests/formats/commitlog/test_onepass.py's strategy) and on the
real 4.2.0 store's CommitLog; the workers' scratch files are gone afterwards."""
from __future__ import annotations

import glob
import os
import pickle
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import require_real_data

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.tables import pool
from tests.formats.commitlog.test_decode import outcome
from tests.formats.commitlog.test_onepass import stores


def _scratch() -> set[str]:
    return {p for d in ("/dev/shm", tempfile.gettempdir()) for p in glob.glob(os.path.join(d, "rmqlab-columns-*"))}


def assert_same_with_jobs(path, jobs: int, **kw) -> None:
    before = _scratch()
    want = outcome(cl.read_columns, path, arrow=True, jobs=1, **kw)
    got = outcome(cl.read_columns, path, arrow=True, jobs=jobs, **kw)
    assert _scratch() == before, "the workers' Arrow files were left behind"
    if isinstance(want, tuple) or isinstance(got, tuple):
        assert got == want
        return
    assert pool.RUNS[-1].label == "read_columns" and os.getpid() not in pool.RUNS[-1].pids
    assert got.attrs["report"] == want.attrs["report"]
    assert list(got.columns) == list(want.columns)
    for c in want.columns:
        a, b = pa.array(got[c]), pa.array(want[c])
        assert a.type == b.type, (c, a.type, b.type)
        assert a.equals(b), c


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(), st.booleans(), st.booleans(), st.sampled_from(["raise", "report"]))
def test_jobs_give_the_one_process_frame(store, body, check_crc, on_error):
    root, boundaries = store
    assert_same_with_jobs(root, 2, body=body, check_crc=check_crc, on_error=on_error)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(damage=False), st.data())
def test_jobs_from_a_start_offset(store, data):
    root, boundaries = store
    start = data.draw(st.sampled_from(boundaries)) if boundaries else 0
    assert_same_with_jobs(root, 3, start_offset=start)


def test_the_real_4_2_0_commitlog():
    root = require_real_data("rocketmq/store-ericpangopher-4.2.0") / "commitlog"
    assert_same_with_jobs(root, 2, check_crc=True)


def test_jobs_need_the_arrow_frame(tmp_path):
    with pytest.raises(ValueError, match="needs arrow=True"):
        cl.read_columns(tmp_path, jobs=2)


def test_typed_errors_cross_processes_whole():
    """A worker's error reaches the parent with its file, offset, field and every attribute."""
    e = FormatError("bad length", path="/s/commitlog/0", offset=12, field="TOTALSIZE")
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), str(back), back.path, back.offset, back.field, back.reason) == \
        (FormatError, str(e), e.path, 12, "TOTALSIZE", "bad length")
