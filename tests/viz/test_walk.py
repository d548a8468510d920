"""rmqlab.viz.walk: the query-walk table and diagram against the traces they draw.

Truths used: the trace objects themselves (``QueryTrace.to_frame``,
``DirectoryQueryTrace.steps_frame`` / ``to_frame``), the answers of ``select_phy_offsets`` /
``query_offset`` (which run the broker walk in C, not the traced Python walk), the file's own
entries read back through ``IndexFile.entry``, and the sample store's known facts (10 index
files, hot key USER_1, colliding ORDER_Aa<i> / ORDER_BB<i>).
"""
from __future__ import annotations

import datetime as dt
import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st
from matplotlib.colors import to_rgba  # noqa: E402

from rmqlab.formats.indexfile import STOP_REASONS, IndexFile  # noqa: E402
from rmqlab.jvm.hashcode import index_hash  # noqa: E402
from rmqlab.jvm.longs import LONG_MAX
from rmqlab.store.indexservice import VISIT_REASONS, ExpandedKeys, IndexService, bulk_build  # noqa: E402
from rmqlab.viz.walk import (  # noqa: E402
    FILE_MARKS,
    MARK_COLOURS,
    MARKS,
    WALK_TABLE_COLUMNS,
    query_walk_figure,
    walk_table,
)

UTC = dt.UTC
T0 = 1_718_000_000_000
STEP_COLS = ["entry", "key_hash", "phy_offset", "time_diff", "time_read", "prev_index",
             "hash_match", "time_match", "returned"]


# ------------------------------------------------------------------------------ utilities


def all_texts(fig) -> list[str]:
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            out += [t.get_text() for t in legend.get_texts()]
    for legend in fig.legends:
        out += [t.get_text() for t in legend.get_texts()]
    return out


def boxes(fig, prefix: str) -> dict[str, object]:
    return {p.get_gid(): p for ax in fig.axes for p in ax.patches
            if p.get_gid() and p.get_gid().startswith(prefix)}


def png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def step_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["mark"].isin(list(MARKS))]


def expected_mark(hash_match: bool, time_match: bool) -> str:
    if hash_match and time_match:
        return "returned"
    return "hash-match" if hash_match else "read"


def assert_steps_equal(table_steps: pd.DataFrame, truth: pd.DataFrame) -> None:
    assert len(table_steps) == len(truth)
    for c in STEP_COLS:
        got = table_steps[c].to_numpy(dtype=object).tolist()
        want = truth[c].to_numpy(dtype=object).tolist()
        assert [int(x) for x in got] == [int(x) for x in want], c


@pytest.fixture()
def tiny(tmp_path):
    """4 slots, 16 entries: T#Aa and T#BB share a hash (so a slot), others fill the chain.

    Puts, in order (entry number = put number): Aa@0s, x@1s, BB@2s, Aa@3s, y@5s, Aa@6s.
    """
    path = tmp_path / "20240610061320000"
    keys = ["T#Aa", "T#x", "T#BB", "T#Aa", "T#y", "T#Aa"]
    secs = [0, 1, 2, 3, 5, 6]
    with IndexFile.create(path, 4, 16) as f:
        for i, (k, s) in enumerate(zip(keys, secs)):
            assert f.put_key(k, 1000 + 100 * i, T0 + 1000 * s)
    f = IndexFile.open(path, 4, 16)
    yield f
    f.close()


# ------------------------------------------------------------------------------ table


def test_hash_collision_precondition():
    assert index_hash("T#Aa") == index_hash("T#BB")


def test_table_single_file_matches_trace(tiny):
    t = tiny.trace_query("T#Aa", 64, T0 + 2000, T0 + 5000)
    df = walk_table(t)
    assert list(df.columns) == WALK_TABLE_COLUMNS
    assert_steps_equal(step_rows(df), t.to_frame())
    # independently: the marks from the entries as stored, and the file's key hash
    h = index_hash("T#Aa")
    for _, r in step_rows(df).iterrows():
        e = tiny.entry(int(r.entry))
        tr = tiny.header.begin_timestamp + e.time_diff * 1000
        assert r.mark == expected_mark(e.key_hash == h, T0 + 2000 <= tr <= T0 + 5000)
        assert int(r.prev_index) == e.prev_index and int(r.phy_offset) == e.phy_offset
    # BB (entry 3) comes back: the broker compares hashes only
    returned = df.loc[df["mark"] == "returned", "phy_offset"].astype(int).tolist()
    assert returned == tiny.select_phy_offsets("T#Aa", 64, T0 + 2000, T0 + 5000) == [1300, 1200]
    assert df["order"].tolist() == list(range(1, len(df) + 1)) == df["step"].tolist()
    assert set(df["walk_stop"]) == {t.stop} and set(df["query_stop"]) == {t.stop}
    assert df.attrs["key"] == "T#Aa" and df.attrs["stop"] == t.stop
    assert df.attrs["results"] == t.results and df.attrs["files"] == 1
    assert int(df["slot"].iloc[0]) == h % 4 and int(df["slot_value"].iloc[0]) == t.slot_value


def test_table_empty_slot_has_a_file_row(tmp_path):
    path = tmp_path / "f"
    with IndexFile.create(path, 64, 16) as f:
        f.put_key("T#a", 1, T0)
        missing = next(k for k in (f"T#k{i}" for i in range(1000))
                       if index_hash(k) % 64 != index_hash("T#a") % 64)
        t = f.trace_query(missing)
    df = walk_table(t)
    assert len(df) == 1 and df["mark"].iloc[0] == "nothing-read"
    assert df["entry"].isna().all() and df["walk_stop"].iloc[0] == "empty-slot"
    fig = query_walk_figure(t)
    assert any("empty" in s for s in all_texts(fig))
    assert not boxes(fig, "step:")
    png(fig)


@pytest.fixture(scope="module")
def sample_index():
    from rmqlab.lab.sample import sample_store

    svc = sample_store().index()
    yield svc
    svc.close()


SAMPLE_QUERIES = [
    dict(topic="Orders", key="USER_1"),                                         # max-num in 1 file
    dict(topic="Orders", key="ORDER_Aa0"),                                      # all 10 files
    dict(topic="Orders", key="USER_1", begin=T0 + 30_000, end=T0 + 35_000),     # skipped files
    dict(topic="Payments", key="USER_7", begin=T0 + 20_000, end=T0 + 40_000, max_num=5),
    dict(topic="Orders", key="NO_SUCH_KEY", begin=T0 + 12_000, end=T0 + 13_000),
]


@pytest.mark.parametrize("query", SAMPLE_QUERIES)
def test_table_matches_directory_trace(sample_index, query):
    t = sample_index.trace_query(**query)
    df = walk_table(t)
    # every entry read, in reading order, is a row equal to steps_frame
    truth = t.steps_frame()
    steps = step_rows(df)
    assert_steps_equal(steps, truth)
    assert steps["file"].tolist() == truth["file"].tolist()
    assert steps["order"].astype(int).tolist() == list(range(1, len(truth) + 1))
    for hm, tm, mark in zip(steps["hash_match"], steps["time_match"], steps["mark"]):
        assert mark == expected_mark(bool(hm), bool(tm))
    # every file appears, newest first, with the folder trace's action and decision
    files = df.drop_duplicates("file")
    frame = t.to_frame()
    assert files["file"].tolist() == frame["name"].tolist()
    assert files["action"].tolist() == frame["action"].tolist()
    assert files["after"].tolist() == frame["after"].tolist()
    assert files["walk_stop"].tolist() == frame["walk_stop"].tolist()
    per_file = df.groupby("file", sort=False)["mark"].agg(list)
    for name, action, read in zip(frame["name"], frame["action"], frame["entries_read"]):
        marks = per_file[name]
        if action == "not-time-matched":
            assert marks == ["skipped"]
        elif action == "not-visited":
            assert marks == ["not-visited"]
        elif read == 0:
            assert marks == ["nothing-read"]
        else:
            assert len(marks) == read and set(marks) <= set(MARKS)
    # the returned rows are the broker's answer (computed by the C walk, not the trace)
    answer = sample_index.query_offset(**query).phy_offsets
    assert df.loc[df["mark"] == "returned", "phy_offset"].astype(int).tolist() == answer
    assert set(df["mark"]) <= set(MARKS) | set(FILE_MARKS)
    assert df.attrs["stop"] == t.stop and set(df["query_stop"]) == {t.stop}


def test_sample_facts(sample_index):
    """USER_1 (hottest key) fills max_num in the newest file; ORDER_Aa0's walk returns its
    colliding twin ORDER_BB0 too, so more is returned than the true matches."""
    t = sample_index.trace_query("Orders", "USER_1")
    df = walk_table(t)
    assert df.attrs["stop"] == "max-num" and (df["mark"] == "returned").sum() == 64
    assert (df["mark"] == "not-visited").sum() == 9
    t = sample_index.trace_query("Orders", "ORDER_Aa0")
    df = walk_table(t)
    assert df.attrs["files"] == 10 and (df["action"] == "searched").all()
    assert index_hash("Orders#ORDER_Aa0") == index_hash("Orders#ORDER_BB0")


# ------------------------------------------------------------------------------ figure


@pytest.mark.parametrize("query", SAMPLE_QUERIES)
def test_figure_draws_every_entry_and_stop(sample_index, query):
    t = sample_index.trace_query(**query)
    df = walk_table(t)
    fig = query_walk_figure(t)
    texts = all_texts(fig)
    joined = "\n".join(texts)
    drawn = boxes(fig, "step:")
    steps = step_rows(df)
    per_file_shown = steps[steps["step"] <= 24]
    assert sorted(int(g.split(":")[1]) for g in drawn) == per_file_shown["order"].astype(int).tolist()
    for entry in per_file_shown["entry"].astype(int):
        assert f"entry {entry}\n" in joined
    for order, mark in zip(per_file_shown["order"].astype(int), per_file_shown["mark"]):
        assert drawn[f"step:{order}"].get_facecolor() == to_rgba(MARK_COLOURS[mark])
    # each file's walk stop, each decision, the overall stop
    for stop in set(df["walk_stop"]) - {""}:
        assert f"walk stopped: {stop} - {STOP_REASONS[stop]}" in joined
    for after in set(df["after"]) - {""}:
        assert VISIT_REASONS[after] in joined
    assert f"query stopped: {t.stop}" in joined and t.stop_reason in joined.replace("\n", " ")
    for name in df["file"].unique():
        assert name in joined
    if (df["mark"] == "skipped").any():
        assert "skipped: time range does not touch the query" in joined
    if (df["mark"] == "not-visited").any():
        assert "not visited: the walk stopped at a newer file" in joined
    # the query range with milliseconds in the title
    if "begin" in query:
        b = dt.datetime.fromtimestamp(query["begin"] / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        assert b in joined
    png(fig)


def test_figure_truncates_long_chains(sample_index):
    t = sample_index.trace_query("Orders", "USER_1", begin=T0 + 30_000, end=T0 + 35_000)
    searched = [v for v in t.files if v.trace is not None]
    n = len(searched[0].trace.steps)
    assert n > 24
    for max_steps in (1, 7, 24):
        fig = query_walk_figure(t, max_steps=max_steps)
        assert len(boxes(fig, "step:")) == max_steps
        more = boxes(fig, "more:")
        assert list(more) == [f"more:{searched[0].name}"]
        assert f"… {n - max_steps} more\nentries read" in "\n".join(all_texts(fig))
    fig = query_walk_figure(t, max_steps=n)
    assert len(boxes(fig, "step:")) == n and not boxes(fig, "more:")


def test_figure_single_file_colours_and_texts(tiny):
    t = tiny.trace_query("T#Aa", 64, T0 + 2000, T0 + 5000)
    fig = query_walk_figure(t)
    drawn = boxes(fig, "step:")
    df = walk_table(t)
    assert len(drawn) == len(df)
    colours = {m: to_rgba(c) for m, c in MARK_COLOURS.items()}
    assert len(set(colours.values())) == 3
    for order, mark in zip(df["order"], df["mark"]):
        patch = drawn[f"step:{order}"]
        assert patch.get_facecolor() == colours[mark]
    joined = "\n".join(all_texts(fig))
    for entry in df["entry"].astype(int):
        assert f"entry {entry}\n" in joined
    assert f"slot {t.slot}\n→ entry {t.slot_value}" in joined
    # the entry 3 box is the colliding key BB, shown with the same hash and returned
    assert f"hash 0x{index_hash('T#BB'):08x}" in joined
    assert {"returned", "hash-match"} <= set(df["mark"])


def test_out_of_order_entry_stops_walk_early(tmp_path):
    """The broker clock stepped back: the entry put after 06:13:30 carries 06:13:15. A query
    from 06:13:18 reads it, finds it older than begin and stops before the 06:13:30 match."""
    path = tmp_path / "20240610061320000"
    with IndexFile.create(path, 4, 16) as f:
        for phy, s in ((100, 10), (200, 30), (300, 15), (400, 40)):
            f.put_key("T#k", phy, T0 + 1000 * s)
        t = f.trace_query("T#k", 64, T0 + 18_000, LONG_MAX)
        assert f.select_phy_offsets("T#k", 64, T0 + 18_000, LONG_MAX) == [400]
    assert t.stop == "older-than-begin"
    df = walk_table(t)
    assert df["entry"].astype(int).tolist() == [4, 3]
    assert df["mark"].tolist() == ["returned", "hash-match"]
    assert df["walk_stop"].iloc[0] == "older-than-begin"
    fig = query_walk_figure(t, tz=UTC)
    joined = "\n".join(all_texts(fig))
    assert "walk stopped: older-than-begin - " + STOP_REASONS["older-than-begin"] in joined
    assert "entry 2\n" not in joined and "entry 1\n" not in joined     # never read, never drawn
    assert "06:13:35.000" in joined                                      # entry 3's stored time
    assert "2024-06-10 06:13:38.000" in joined                           # begin, with ms
    png(fig)


def test_the_entry_an_early_stop_never_reached_is_drawn_after_the_stop(tmp_path):
    """The same clock step in a one-file store: the T0 + 30 s match the walk never read is a
    dashed red box after the entry that stopped it, reached by a dashed arrow, and named in
    the legend; without `unreached` the figure is as before."""
    from rmqlab.store.keyquery import query_key

    msgs = pd.DataFrame({"phy_offset": [100, 200, 300, 400], "topic": "T", "keys": "k",
                         "store_timestamp": [T0 + 1000 * s for s in (10, 30, 15, 40)],
                         "uniq_key": None, "sys_flag": 0})
    service = IndexService(tmp_path, 4, 16, read_only=False, tz=UTC, name_by_store_time=True)
    service.build_columns(msgs)
    q = query_key(service, lambda offs: msgs[msgs["phy_offset"].isin(offs)], "T", "k",
                  begin=T0 + 18_000, end=LONG_MAX)
    missed = q.unreached()
    assert missed[["entry", "phy_offset"]].values.tolist() == [[2, 200]]
    fig = query_walk_figure(q.trace, tz=UTC, unreached=missed)
    [(gid, box)] = boxes(fig, "unreached:").items()
    assert gid == f"unreached:{service.files[0].path.name}"
    assert box.get_linestyle() == "--" and to_rgba(box.get_edgecolor()) == to_rgba("#d62728")
    joined = "\n".join(all_texts(fig))
    assert "entry 2\nnever read\n06:13:50.000\nphy 200" in joined        # stored T0 + 30 s
    assert "a real match the walk never read" in joined
    # right of the stopping entry (entry 3, the last box read), on the same row
    last_read = boxes(fig, "step:")[f"step:{len(q.trace.files[0].trace.steps)}"]
    assert box.get_x() > last_read.get_x() and box.get_y() == last_read.get_y()
    plain = query_walk_figure(q.trace, tz=UTC)
    assert not boxes(plain, "unreached:") and "a real match the walk never read" not in all_texts(plain)
    png(fig)


def test_skipped_and_not_visited_files_drawn(tmp_path):
    """Three files of 3 keys; a range touching only the middle file: the newest is skipped, the
    middle one searched (its begin is before `begin`, so the walk stops), the oldest not visited."""
    d = tmp_path / "index"
    keys = ["T#k", "T#a", "T#k"] * 3
    ts = [T0 + 1000 * i for i in range(9)]
    bulk_build(ExpandedKeys(keys, list(range(100, 1000, 100)), ts), d, hash_slot_num=4,
               index_num=4, clock=iter([T0, T0 + 3000, T0 + 6000]).__next__, tz=UTC)
    with IndexService(d, 4, 4) as svc:
        t = svc.trace_query("T", "k", 64, T0 + 3500, T0 + 5000)
        # 400 was stored at 06:13:23.000, but as the follow-on file's first entry its time_diff
        # is relative to the seed (06:13:22.000): it reads as 06:13:24.000, inside the range
        assert svc.query_offset("T", "k", 64, T0 + 3500, T0 + 5000).phy_offsets == [600, 400]
    df = walk_table(t)
    assert df.drop_duplicates("file")["action"].tolist() == ["not-time-matched", "searched",
                                                             "not-visited"]
    assert df["mark"].tolist() == ["skipped", "returned", "returned", "not-visited"]
    assert df.attrs["stop"] == "older-than-begin"
    fig = query_walk_figure(t)
    joined = "\n".join(all_texts(fig))
    assert "skipped: time range does not touch the query" in joined
    assert "not visited: the walk stopped at a newer file" in joined
    assert "then older-than-begin: " + VISIT_REASONS["older-than-begin"] in joined
    assert "query stopped: older-than-begin" in joined
    png(fig)


def test_empty_folder(tmp_path):
    with IndexService(tmp_path) as svc:
        t = svc.trace_query("T", "k")
    df = walk_table(t)
    assert df.empty and df.attrs["stop"] == "no-files"
    fig = query_walk_figure(t)
    assert "the folder holds no index file" in "\n".join(all_texts(fig))
    png(fig)


def test_deterministic_png(sample_index):
    t = sample_index.trace_query("Orders", "USER_1", begin=T0 + 30_000, end=T0 + 35_000)
    assert png(query_walk_figure(t)) == png(query_walk_figure(t))


def test_size_follows_content(sample_index, tiny):
    small = query_walk_figure(tiny.trace_query("T#Aa"))
    big = query_walk_figure(sample_index.trace_query("Orders", "ORDER_Aa0"))
    assert big.get_size_inches()[1] > 2 * small.get_size_inches()[1]
    assert small.get_size_inches()[1] < 5


def test_bad_arguments(tiny):
    t = tiny.trace_query("T#Aa")
    with pytest.raises(ValueError, match="max_steps"):
        query_walk_figure(t, max_steps=0)
    with pytest.raises(TypeError, match="trace"):
        walk_table({"not": "a trace"})


# ------------------------------------------------------------------------------ property


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(puts=st.lists(st.tuples(st.sampled_from(["Aa", "BB", "c", "d", "AaAa", "BBBB"]),
                               st.integers(0, 30)), min_size=0, max_size=14),
       key=st.sampled_from(["Aa", "BB", "c", "AaAa", "zz"]),
       begin_s=st.integers(-2, 32), span_s=st.integers(0, 40), max_num=st.integers(0, 6))
def test_property_table_agrees_with_walk(tmp_path_factory, puts, key, begin_s, span_s, max_num):
    path = tmp_path_factory.mktemp("p") / "f"
    with IndexFile.create(path, 3, 16) as f:
        for i, (k, s) in enumerate(puts):
            f.put_key(f"T#{k}", 10 * (i + 1), T0 + 1000 * s)
        begin, end = T0 + 1000 * begin_s, T0 + 1000 * (begin_s + span_s)
        t = f.trace_query(f"T#{key}", max_num, begin, end)
        answer = f.select_phy_offsets(f"T#{key}", max_num, begin, end)
    df = walk_table(t)
    steps = step_rows(df)
    if t.steps:
        assert_steps_equal(steps, t.to_frame())
        assert len(df) == len(t.steps)
    else:
        assert df["mark"].tolist() == ["nothing-read"]
    assert df.loc[df["mark"] == "returned", "phy_offset"].astype(int).tolist() == answer
    assert ((steps["mark"] == "hash-match") == (steps["hash_match"] & ~steps["time_match"])).all()
    assert ((steps["mark"] == "read") == ~steps["hash_match"]).all()
    # the walk follows prev_index: each read entry's prev is the next one read
    e = steps["entry"].astype(int).to_numpy()
    p = steps["prev_index"].astype(int).to_numpy()
    assert np.array_equal(p[:-1], e[1:])


def test_the_six_stops_figure_draws_each_walk_as_read(tmp_path):
    from rmqlab.analysis.walkrules import WALK_STOPS, walk_stop_cases
    from rmqlab.viz.walk import READABLE_DPI, walk_stops_figure

    cases = walk_stop_cases(tmp_path)
    fig = walk_stops_figure(cases, tz=UTC)
    drawn = boxes(fig, "")
    for case in cases:
        t = case.trace()
        assert [g for g in drawn if g.startswith(f"{case.rule}:entry:")] == \
            [f"{case.rule}:entry:{s.entry}" for s in t.steps]
        for s in t.steps:                                   # coloured by what the walk did with it
            want = MARK_COLOURS["returned" if s.returned else "hash-match" if s.hash_match else "read"]
            assert to_rgba(drawn[f"{case.rule}:entry:{s.entry}"].get_facecolor()) == to_rgba(want)
        assert f"{case.rule}:stop" in drawn
        assert [g for g in drawn if g.startswith(f"{case.rule}:unread:")] == \
            [f"{case.rule}:unread:{n}" for n in case.unread()]
    joined = "\n".join(all_texts(fig))
    assert all(condition in joined for condition in WALK_STOPS.values())
    assert "damaged: entry 2: prev_index := 9" in joined and "prev 9" in joined
    assert min(t.get_fontsize() for ax in fig.axes for t in ax.texts) * READABLE_DPI / 72 >= 10
    png(fig)
