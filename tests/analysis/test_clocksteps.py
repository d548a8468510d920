"""Clock steps back: found in CommitLog order, and the ranges and keys they make the broker miss.

Independent truth: hand-made message tables with known steps, and on the sample store its known
three steps of about 1.5 s (SAMPLE: broker_clock_steps=3, broker_clock_step_ms=1500).
"""
from __future__ import annotations

import pandas as pd

from rmqlab.analysis.clocksteps import (
    clock_steps_back,
    entries_outside_their_file,
    range_beside_file,
    repeated_time_keys,
)


def test_steps_are_found_in_log_order_not_in_row_order():
    m = pd.DataFrame({"phy_offset": [300, 0, 200, 100, 400],
                      "store_timestamp": [3_000, 1_000, 5_000, 4_000, 2_900]})
    # log order: 1000, 4000, 5000, 3000 (back 2000), 2900 (back 100, too small)
    assert clock_steps_back(m).to_dict("list") == {
        "phy_offset": [300], "before": [5_000], "after": [3_000], "step_ms": [-2_000]}
    assert clock_steps_back(m, more_than_ms=50)["phy_offset"].tolist() == [300, 400]
    assert clock_steps_back(m.iloc[:0]).empty


def test_sample_store_steps_back_three_times():
    from rmqlab.lab.sample import sample_store

    steps = clock_steps_back(sample_store().messages())
    assert len(steps) == 3 and steps["step_ms"].between(-1500, -1490).all()
    assert (steps["after"] < steps["before"]).all()


def test_entries_outside_their_file_and_a_range_beside_it():
    e = pd.DataFrame({"store_timestamp": [1_000, 1_500, 2_000, 999, 2_001],
                      "file_begin": 1_000, "file_end": 2_000})
    outside = entries_outside_their_file(e)
    assert outside.index.tolist() == [3, 4]
    for t in outside["store_timestamp"]:
        lo, hi = range_beside_file(t, 1_000, 2_000)
        assert lo <= t <= hi and hi - lo <= 50
        assert hi < 1_000 or lo > 2_000                  # the header range is not touched
    assert range_beside_file(500, 1_000, 2_000, width_ms=10) == (500, 510)
    assert range_beside_file(2_500, 1_000, 2_000, width_ms=10) == (2_490, 2_500)


def test_repeated_time_keys_are_written_before_the_step_in_the_repeated_time():
    occ = pd.DataFrame({"topic": "T", "key": list("abcdef"), "phy_offset": [0, 100, 200, 300, 400, 500],
                        "store_timestamp": [4_000, 4_800, 5_500, 5_900, 4_600, 5_000]})
    # the step: at offset 400, from 6000 back to 4500
    got = repeated_time_keys(occ, 400, before=6_000, after=4_500)
    assert got["key"].tolist() == ["d", "c", "b"]       # a: before the repeat; e, f: after the step
    assert repeated_time_keys(occ, 400, 6_000, 4_500, margin_ms=400, limit=1)["key"].tolist() == ["d"]
