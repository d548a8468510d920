"""read_columns from a start offset equals reading everything and keeping the messages from there."""
import numpy as np
import pandas as pd

from rmqlab.formats import commitlog as cl


def test_read_from_every_boundary_equals_filtering(tmp_path):
    rng = np.random.default_rng(5)
    n = 60
    cols = {"topic": [f"T{i % 3}" for i in range(n)],
            "body": [bytes(rng.integers(0, 256, rng.integers(0, 300)).astype(np.uint8)) for _ in range(n)],
            "store_timestamp": 1718000000000 + np.arange(n)}
    with cl.CommitLogWriter(tmp_path, 2048) as w:        # small files: many roll-overs
        w.append(cols)
    everything = cl.read_columns(tmp_path, body=True)
    assert len(cl.store_files(tmp_path)) > 5
    ends = (everything["phy_offset"] + everything["total_size"]).tolist()
    file_starts = [f.start_offset for f in cl.store_files(tmp_path)]
    for start in sorted(set([0] + everything["phy_offset"].tolist() + ends + file_starts)):
        got = cl.read_columns(tmp_path, body=True, start_offset=start)
        want = everything[everything["phy_offset"] >= start].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
        assert got.attrs["report"].end_phy_offset == everything.attrs["report"].end_phy_offset
        assert got.attrs["report"].torn_tail is None and not got.attrs["report"].damage
