"""read_columns(jobs=N): each file decoded on a thread of its own gives the frame, the report and
the error of the serial read, Arrow and pandas columns alike, on random CommitLog folders with
damage (tests/formats/commitlog/test_onepass.py's strategy) and on the real 4.2.0 store's
CommitLog; the files really are decoded off the calling thread."""
from __future__ import annotations

import pickle
import threading

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import require_real_data

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.formats.commitlog import columns
from tests.formats.commitlog.test_decode import outcome
from tests.formats.commitlog.test_onepass import stores


def assert_same_with_jobs(path, jobs: int, arrow: bool = True, **kw) -> None:
    want = outcome(cl.read_columns, path, arrow=arrow, jobs=1, **kw)
    ran_on: set[str] = set()
    decode_one = columns._file_columns_here

    def recorded(*args):
        ran_on.add(threading.current_thread().name)
        return decode_one(*args)

    columns._file_columns_here = recorded
    try:
        got = outcome(cl.read_columns, path, arrow=arrow, jobs=jobs, **kw)
    finally:
        columns._file_columns_here = decode_one
    if isinstance(want, tuple) or isinstance(got, tuple):
        assert got == want
        return
    assert got.attrs["report"] == want.attrs["report"]
    assert list(got.columns) == list(want.columns)
    if len(want.attrs["report"].files) > 1:
        assert ran_on and all(name.startswith("rmqlab-decode") for name in ran_on), ran_on
    if not arrow:
        pd.testing.assert_frame_equal(got, want)
        return
    for c in want.columns:
        a, b = pa.array(got[c]), pa.array(want[c])
        assert a.type == b.type, (c, a.type, b.type)
        assert a.equals(b), c


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(), st.booleans(), st.booleans(), st.sampled_from(["raise", "report"]), st.booleans())
def test_jobs_give_the_serial_frame(store, body, check_crc, on_error, arrow):
    root, boundaries = store
    assert_same_with_jobs(root, 2, arrow=arrow, body=body, check_crc=check_crc, on_error=on_error)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores(damage=False), st.data())
def test_jobs_from_a_start_offset(store, data):
    root, boundaries = store
    start = data.draw(st.sampled_from(boundaries)) if boundaries else 0
    assert_same_with_jobs(root, 3, start_offset=start)


def test_the_real_4_2_0_commitlog():
    root = require_real_data("rocketmq/store-ericpangopher-4.2.0") / "commitlog"
    assert_same_with_jobs(root, 2, check_crc=True)


def test_jobs_must_be_a_positive_count(tmp_path):
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        cl.read_columns(tmp_path, jobs=0)


def test_typed_errors_cross_processes_whole():
    """A worker's error reaches the parent with its file, offset, field and every attribute."""
    e = FormatError("bad length", path="/s/commitlog/0", offset=12, field="TOTALSIZE")
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), str(back), back.path, back.offset, back.field, back.reason) == \
        (FormatError, str(e), e.path, 12, "TOTALSIZE", "bad length")
