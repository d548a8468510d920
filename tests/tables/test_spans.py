"""Zero checks that read only where a file holds data (rmqlab.tables.spans, SEEK_DATA/SEEK_HOLE) give
the answers of reading every byte, on sparse files with data (zeros or not) anywhere."""
from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats.commitlog.records import _tail_is_zero, _zero_after
from rmqlab.tables.arrays import first_nonzero, last_nonzero
from rmqlab.tables.spans import data_spans

SIZE = 1 << 20
WRITES = st.lists(st.tuples(st.integers(0, SIZE - 1), st.binary(min_size=1, max_size=5000)), max_size=6)


def sparse_file(folder: Path, writes) -> Path:
    """A file of SIZE bytes, never written but at `writes` (offset, bytes)."""
    p = folder / "00000000000000000000"
    with open(p, "wb") as fh:
        fh.truncate(SIZE)
        for at, data in writes:
            fh.seek(at)
            fh.write(data[:SIZE - at])
    return p


@settings(max_examples=60, deadline=None)
@given(writes=WRITES, start=st.integers(0, SIZE), end=st.integers(0, SIZE))
def test_data_spans_cover_every_written_byte(tmp_path_factory, writes, start, end):
    p = sparse_file(tmp_path_factory.mktemp("sparse"), writes)
    spans = data_spans(p, start, end)
    if spans is None:   # a file system that cannot tell: the callers read everything
        return
    assert all(start <= lo < hi <= end for lo, hi in spans) and spans == sorted(spans)
    covered = np.zeros(SIZE, bool)
    for lo, hi in spans:
        covered[lo:hi] = True
    for at, data in writes:
        written = np.arange(at, min(at + len(data), SIZE))
        assert covered[written[(written >= start) & (written < end)]].all()


@settings(max_examples=60, deadline=None)
@given(writes=WRITES, start=st.integers(0, SIZE))
def test_a_sparse_commitlog_tail_is_judged_by_its_data_alone(tmp_path_factory, writes, start):
    p = sparse_file(tmp_path_factory.mktemp("sparse"), writes)
    with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert _zero_after(mm, start, p) == _tail_is_zero(mm, start)


@settings(max_examples=60, deadline=None)
@given(writes=WRITES, lo=st.integers(0, SIZE), chunk=st.sampled_from([1 << 10, 1 << 24]))
def test_verify_zero_scans_that_skip_holes_find_what_reading_finds(tmp_path_factory, writes, lo, chunk):
    p = sparse_file(tmp_path_factory.mktemp("sparse"), writes)
    with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        a = np.frombuffer(mm, np.uint8)[lo:]
        assert first_nonzero(a, chunk, path=p, offset=lo) == first_nonzero(a, chunk)
        assert last_nonzero(a, chunk, path=p, offset=lo) == last_nonzero(a, chunk)
        del a
