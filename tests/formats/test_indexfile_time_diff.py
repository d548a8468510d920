"""time_diff has one definition, :func:`rmqlab.formats.indexfile.time_diff_seconds`; the C put
loop of ``rmqlab._indexcore`` repeats it for speed. Here the two are held equal, and the
array form equal to the scalar form."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab import _indexcore
from rmqlab.formats.indexfile import ENTRY, Geometry, time_diff_seconds

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
timestamps = st.one_of(st.integers(LONG_MIN, LONG_MAX), st.integers(1_718_000_000_000 - 5000, 1_718_000_000_000 + 5000),
                       st.sampled_from([LONG_MIN, LONG_MAX, 0, -1, 1, -999, 999, -1000, 1000, 1001, -1001]))
begins = st.one_of(st.sampled_from([LONG_MIN, -1, 0, 1, 1_718_000_000_000, LONG_MAX]), timestamps)


def c_time_diffs(store_ts: list[int], begin: int) -> list[int]:
    """The time_diff the C put loop writes for each store time, into a file whose header already
    has `begin` (index_count 2, so the loop keeps the begin timestamp)."""
    n = len(store_ts)
    g = Geometry(1, n + 2)
    buf = bytearray(g.file_size)
    state = (begin, begin, 0, 0, 0, 2)
    _indexcore.put_entries(buf, g.hash_slot_num, g.index_num, state, np.zeros(n, np.int32).tobytes(),
                           np.zeros(n, np.int64).tobytes(), np.array(store_ts, np.int64).tobytes(), False)
    at = g.entries_offset
    entries = np.frombuffer(bytes(buf[at:at + ENTRY.size * (n + 2)]), ENTRY.dtype)
    return entries["time_diff"][2:].astype(np.int64).tolist()


@settings(deadline=None, max_examples=300)
@given(st.lists(timestamps, min_size=1, max_size=20), begins)
def test_c_put_loop_equals_the_python_definition(store_ts, begin):
    want = [time_diff_seconds(t, begin) for t in store_ts]
    assert c_time_diffs(store_ts, begin) == want
    assert time_diff_seconds(np.array(store_ts, np.int64), begin).tolist() == want
