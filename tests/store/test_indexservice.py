"""IndexService: buildIndex rules, roll-over and seeding, queryOffset across files, bulk path.

The truth here is independent of rmqlab: a plain-Python model of the broker written in this file
(Java String.hashCode, putKey's time diff, the chain walk and IndexService's file walk, replayed
over lists of (key, offset, timestamp) per file), the golden files written by RocketMQ's own
IndexFile, and byte equality between the one-at-a-time and the bulk paths.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_model import java_hash as jhash

from rmqlab import IndexFile, ReadOnlyError, read_header
from rmqlab.store.indexservice import (
    DispatchRequest,
    ExpandedKeys,
    IndexService,
    bulk_build,
    expand_columns,
    expand_messages,
    index_file_name,
)

UTC = dt.UTC
LONG_MAX = 2**63 - 1
T0 = 1_718_000_000_000
GOLDEN = Path(__file__).parents[1] / "data" / "golden"


# --------------------------------------------------------------------- independent model


def ihash(s: str) -> int:
    h = jhash(s)
    return 0 if h == -(2**31) else abs(h)


class ModelFile:
    """One index file as lists: seed values, then the puts in order."""

    def __init__(self, seed_phy: int, seed_ts: int, cap: int):
        self.cap = cap
        self.begin_ts = seed_ts if seed_ts > 0 else 0
        self.end_ts = self.begin_ts
        self.end_phy = seed_phy if seed_phy > 0 else 0
        self.entries: list[tuple[str, int, int, int]] = []   # key, phy, ts, time_diff

    @property
    def full(self) -> bool:
        return len(self.entries) >= self.cap

    def put(self, key: str, phy: int, ts: int) -> bool:
        if self.full:
            return False
        # seconds after the begin timestamp *at put time* (the seed, for a follow-on file's first put)
        d = ts - self.begin_ts
        diff = abs(d) // 1000 * (1 if d >= 0 else -1)      # Java's long division truncates
        diff = 0 if self.begin_ts <= 0 or diff < 0 else min(diff, 2**31 - 1)
        self.entries.append((key, phy, ts, diff))
        if len(self.entries) == 1:
            self.begin_ts = ts
        self.end_ts, self.end_phy = ts, phy
        return True

    def time_matched(self, begin: int, end: int) -> bool:
        b, e = self.begin_ts, self.end_ts
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    def select(self, key: str, out: list, max_num: int, begin: int, end: int, hsn: int) -> None:
        h = ihash(key)
        chain = [e for e in self.entries if ihash(e[0]) % hsn == h % hsn][::-1]   # newest first
        for i, (k, phy, _ts, diff) in enumerate(chain):
            if len(out) >= max_num:
                return
            t = self.begin_ts + diff * 1000
            if ihash(k) == h and begin <= t <= end:
                out.append(phy)
            if i == len(chain) - 1 or t < begin:
                return


def model_build(messages, index_num: int) -> list[ModelFile]:
    """IndexService.buildIndex replayed over model files."""
    files: list[ModelFile] = []

    def writable():
        if not files or files[-1].full:
            prev = files[-1] if files else None
            files.append(ModelFile(prev.end_phy if prev else 0, prev.end_ts if prev else 0, index_num - 1))
        return files[-1]

    for m in messages:
        f = writable()
        if m.phy_offset < f.end_phy or (m.sys_flag & 0xC) == 0xC:
            continue
        parts = ([] if m.uniq_key is None else [m.uniq_key]) + \
                [k for k in (m.keys or "").split(" ") if k != ""]
        for k in parts:
            while not f.put(f"{m.topic}#{k}", m.phy_offset, m.store_timestamp):
                f = writable()
    return files


def model_query(files, topic, key, max_num, begin, end, hsn, batch=64):
    max_num = min(max_num, batch)
    out: list[int] = []
    last = (files[-1].end_ts, files[-1].end_phy) if files else (0, 0)
    for f in reversed(files):
        if f.time_matched(begin, end):
            f.select(f"{topic}#{key}", out, max_num, begin, end, hsn)
        if f.begin_ts < begin or len(out) >= max_num:
            break
    return out, last


def counting_clock(start=T0, step=1000):
    state = {"t": start - step}

    def clock():
        state["t"] += step
        return state["t"]
    return clock


def msg(topic, phy, ts, keys=None, uniq=None, flag=0):
    return DispatchRequest(topic, phy, ts, keys, uniq, flag)


def sequential(directory, messages, hsn, inum, clock=None, **kw):
    with IndexService(directory, hsn, inum, read_only=False, clock=clock or counting_clock(), tz=UTC, **kw) as svc:
        for m in messages:
            svc.build_index(m)
    return sorted(os.listdir(directory))


def dir_bytes(directory) -> dict[str, bytes]:
    return {n: (Path(directory) / n).read_bytes() for n in sorted(os.listdir(directory))}


# ------------------------------------------------------------------------ buildIndex rules


def test_uniq_key_first_then_keys_split_on_single_spaces(tmp_path):
    with IndexService(tmp_path, 16, 32, read_only=False, clock=counting_clock(), tz=UTC) as svc:
        assert svc.put_message("T", 100, T0, keys=" a  b c ", uniq_key="U1") == 4
        f = svc.last_file
        hashes = f.used_entries["key_hash"].tolist()
    assert hashes == [ihash(k) for k in ["T#U1", "T#a", "T#b", "T#c"]]


def test_index_keys_rules():
    assert msg("T", 0, 0, "a  b", "U").index_keys() == ["U", "a", "b"]
    assert msg("T", 0, 0, "", None).index_keys() == []
    assert msg("T", 0, 0, "   ", None).index_keys() == []
    # UNIQ_KEY is indexed whenever it is not null, even when empty (buildIndex tests != null)
    assert msg("T", 0, 0, None, "").index_keys() == [""]
    # only U+0020 separates: a tab stays inside a key
    assert msg("T", 0, 0, "a\tb c", None).index_keys() == ["a\tb", "c"]


def test_empty_uniq_key_is_indexed_as_topic_hash(tmp_path):
    with IndexService(tmp_path, 16, 32, read_only=False, clock=counting_clock(), tz=UTC) as svc:
        assert svc.put_message("T", 100, T0, uniq_key="") == 1
        assert svc.query_offset("T", "").phy_offsets == [100]


@pytest.mark.parametrize("flag,indexed", [(0, True), (0x4, True), (0x8, True), (0xC, False),
                                          (0xC | 0x1 | 0x10, False), (0x4 | 0x2, True)])
def test_transaction_types(tmp_path, flag, indexed):
    with IndexService(tmp_path, 16, 32, read_only=False, clock=counting_clock(), tz=UTC) as svc:
        n = svc.put_message("T", 100, T0, keys="k", sys_flag=flag)
        assert n == (1 if indexed else 0)
        assert svc.query_offset("T", "k").phy_offsets == ([100] if indexed else [])


def test_already_indexed_offsets_skipped(tmp_path):
    with IndexService(tmp_path, 16, 32, read_only=False, clock=counting_clock(), tz=UTC) as svc:
        assert svc.put_message("T", 500, T0, keys="a") == 1
        assert svc.put_message("T", 499, T0 + 1, keys="b") == 0      # < end_phy_offset
        assert svc.put_message("T", 500, T0 + 2, keys="c") == 1      # equal: indexed again
        assert svc.put_message("T", 600, T0 + 3, keys=None) == 0     # no key: end stays 500
        assert svc.put_message("T", 550, T0 + 4, keys="d") == 1
        assert svc.last_file.header.end_phy_offset == 550
        assert svc.query_offset("T", "b").phy_offsets == []


def test_rollover_seeds_next_file_and_time_diff_quirk(tmp_path):
    # index_num 3: two keys a file. The third put goes to a new file seeded with the full
    # file's end values; its time diff is measured from the seed (the previous end timestamp),
    # but it is read back from its own store time, which becomes the new begin timestamp.
    clock = counting_clock()
    with IndexService(tmp_path, 4, 3, read_only=False, clock=clock, tz=UTC) as svc:
        svc.put_message("T", 100, T0, keys="a")
        svc.put_message("T", 200, T0 + 1_500, keys="b")
        svc.put_message("T", 300, T0 + 10_700, keys="c")
        svc.put_message("T", 400, T0 + 12_000, keys="c")
        names = [f.path.name for f in svc.files]
        assert len(names) == 2
        second = svc.files[1]
        assert second.header.begin_timestamp == T0 + 10_700     # overwritten by the first put
        assert second.entry(1).time_diff == (10_700 - 1_500) // 1000   # relative to the seed: 9
        assert second.entry(2).time_diff == (12_000 - 10_700) // 1000  # relative to the new begin: 1
        # so the first entry of the follow-on file reads 9 s later than it was stored
        t = svc.trace_query("T", "c", 64, T0 + 10_700, T0 + 10_700 + 999)
        assert t.result.phy_offsets == []
        # stored at T0+10.7 s, inside [T0+10 s, T0+11 s], but read as T0+19.7 s: not found
        assert svc.query_offset("T", "c", 64, T0 + 10_000, T0 + 11_000).phy_offsets == []
        late = svc.query_offset("T", "c", 64, T0 + 11_000, T0 + 20_000)
        assert late.phy_offsets == [400, 300]
        assert (late.index_last_update_timestamp, late.index_last_update_phyoffset) == (T0 + 12_000, 400)
    assert names == [index_file_name(T0, UTC), index_file_name(T0 + 1000, UTC)]
    h = read_header(tmp_path / names[1])
    assert (h.begin_phy_offset, h.index_count) == (300, 3)


def test_new_empty_file_created_by_message_after_full_file(tmp_path):
    # buildIndex gets (or creates) the writable file before checking anything, so a message
    # arriving after the last file filled opens a new, seeded file even when nothing is put.
    with IndexService(tmp_path, 4, 3, read_only=False, clock=counting_clock(), tz=UTC) as svc:
        svc.put_message("T", 100, T0, keys="a b")
        assert len(svc) == 1 and svc.last_file.is_write_full
        svc.put_message("T", 150, T0 + 5000, keys="c", sys_flag=0xC)    # rollback
        assert len(svc) == 2
        h = svc.last_file.header
        assert (h.begin_phy_offset, h.end_phy_offset, h.begin_timestamp, h.index_count) == (100, 100, T0, 1)
        assert svc.index_msg_timestamp == T0    # the checkpoint advances when a full file is flushed
    # flushed at close: index_count 1 and the seeded values on disk
    assert read_header(sorted(tmp_path.iterdir())[1]).index_count == 1


def test_names_never_reused_and_clock_injected(tmp_path):
    clock = lambda: T0     # noqa: E731  a stuck clock
    with IndexService(tmp_path, 4, 2, read_only=False, clock=clock, tz=UTC) as svc:
        for i in range(3):
            svc.put_message("T", i, T0, keys="k")
    assert sorted(os.listdir(tmp_path)) == [index_file_name(T0 + i, UTC) for i in range(3)]
    assert index_file_name(T0, UTC) == "20240610061320000"
    # local time zone by default, as the broker
    local = dt.datetime.fromtimestamp(T0 // 1000)
    assert index_file_name(T0) == local.strftime("%Y%m%d%H%M%S") + "000"


def test_reopen_continues_last_file_then_rolls(tmp_path):
    sequential(tmp_path, [msg("T", 10, T0, "a")], 4, 3)
    with IndexService(tmp_path, 4, 3, read_only=False, clock=counting_clock(T0 + 60_000), tz=UTC) as svc:
        assert svc.last_file.writable
        svc.put_message("T", 20, T0 + 1000, keys="b")
        assert len(svc) == 1
        svc.put_message("T", 5, T0 + 2000, keys="c")         # 5 < 20: already indexed
        svc.put_message("T", 30, T0 + 3000, keys="c")
        assert len(svc) == 2
        assert svc.files[1].entry(1).time_diff == 2          # from the seed T0 + 1000
    assert [read_header(p).index_count for p in sorted(tmp_path.iterdir())] == [3, 2]


def test_read_only_refuses_writes_and_ignores_other_files(tmp_path):
    sequential(tmp_path, [msg("T", 10, T0, "a")], 4, 3)
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / ".20240610061320000.abc.tmp").write_bytes(b"")
    with IndexService(tmp_path, 4, 3) as svc:
        assert len(svc) == 1 and not svc.last_file.writable
        assert {p.name for p in svc.ignored} == {"notes.txt", ".20240610061320000.abc.tmp"}
        with pytest.raises(ReadOnlyError):
            svc.put_message("T", 20, T0, keys="b")
    with pytest.raises(NotADirectoryError):
        IndexService(tmp_path / "notes.txt", 4, 3)
    # a missing folder holds no file (IndexService.load: listFiles() is null): nothing is found
    with IndexService(tmp_path / "missing", 4, 3) as empty:
        assert len(empty) == 0 and empty.query_offset("T", "a").phy_offsets == []
    assert not (tmp_path / "missing").exists()


def test_abnormal_shutdown_replay_drops_files(tmp_path):
    sequential(tmp_path, [msg("T", i, T0 + 1000 * i, "k") for i in range(5)], 4, 3)
    ends = [read_header(p).end_timestamp for p in sorted(tmp_path.iterdir())]
    assert ends == [T0 + 1000, T0 + 3000, T0 + 4000]
    with IndexService(tmp_path, 4, 3, index_msg_timestamp=T0 + 1000) as svc:
        assert len(svc) == 1 and len(svc.dropped) == 2
        assert svc.query_offset("T", "k").phy_offsets == [1, 0]


def test_geometry_inferred_from_files(tmp_path):
    sequential(tmp_path, [msg("T", i, T0 + i, "k") for i in range(3)], 4, 3)
    with IndexService(tmp_path, 4, None, read_only=False, clock=counting_clock(T0 + 10**6), tz=UTC) as svc:
        svc.put_message("T", 9, T0 + 9, keys="k")
        assert svc.last_file.geometry.index_num == 3


# ----------------------------------------------------------------------------- queryOffset


def test_max_num_capped_at_64_and_32(tmp_path):
    msgs = [msg("T", i, T0 + i, "k", uniq="ID") for i in range(100)]
    sequential(tmp_path, msgs, 64, 80)     # 200 keys over three files
    with IndexService(tmp_path, 64, 80) as svc:
        assert len(svc) == 3
        r = svc.query_offset("T", "k", 1000)
        assert r.phy_offsets == list(range(99, 35, -1))          # 64, newest first, across files
        assert len(svc.query_unique_key("T", "ID")) == 32
        assert svc.query_offset("T", "k", 5).phy_offsets == [99, 98, 97, 96, 95]
        r0 = svc.query_offset("T", "k", 0)
        assert (r0.phy_offsets, r0.index_last_update_phyoffset) == ([], 99)
        with pytest.raises(ValueError):
            svc.query_offset("T", "k", -1)
    with IndexService(tmp_path, 64, 80, max_msgs_num_batch=10) as svc:
        assert len(svc.query_offset("T", "k", 1000)) == 10
        assert len(svc.query_unique_key("T", "ID")) == 10


def build_three_files(tmp_path):
    # file 0: T0..T0+1s, file 1: T0+10s..T0+11s, file 2: T0+20s..T0+21s (two keys a file)
    msgs = [msg("T", 100 * i, T0 + 10_000 * (i // 2) + 1000 * (i % 2), "k") for i in range(6)]
    sequential(tmp_path, msgs, 4, 3)
    return IndexService(tmp_path, 4, 3)


def test_stop_rules_and_trace(tmp_path):
    with build_three_files(tmp_path) as svc:
        begins = [f.header.begin_timestamp for f in svc.files]
        assert begins == [T0, T0 + 10_000, T0 + 20_000]
        # range inside file 1: file 2 is skipped (not time-matched, begins after `begin`), file 1
        # searched, then the walk stops because file 1 begins before `begin`
        t = svc.trace_query("T", "k", 64, T0 + 10_500, T0 + 11_000)
        assert t.result.phy_offsets == [300]
        df = t.to_frame()
        assert df["action"].tolist() == ["not-time-matched", "searched", "not-visited"]
        assert df["after"].tolist() == ["continue", "older-than-begin", ""]
        assert t.stop == "older-than-begin"
        steps = t.steps_frame()
        assert steps["file"].tolist() == [svc.files[1].path.name] * 2
        assert steps["returned"].tolist() == [True, False]
        # a range between files: file 1 is not time-matched but begins before `begin`: stop there
        t = svc.trace_query("T", "k", 64, T0 + 15_000, T0 + 16_000)
        assert t.to_frame()["action"].tolist() == ["not-time-matched", "not-time-matched", "not-visited"]
        assert t.result.phy_offsets == []
        # max_num reached in the newest file: the older files are not visited
        t = svc.trace_query("T", "k", 2, 0, LONG_MAX)
        assert t.result.phy_offsets == [500, 400] and t.stop == "max-num"
        # begin 0: nothing begins before it, so every file is searched
        t = svc.trace_query("T", "k", 64, 0, LONG_MAX)
        assert t.result.phy_offsets == [500, 400, 300, 200, 100, 0] and t.stop == "oldest-file"
        assert "searched" in str(t)
        d = json.loads(json.dumps(t.as_dict()))
        assert d["result"]["phy_offsets"] == t.result.phy_offsets


def test_to_frame(tmp_path):
    with build_three_files(tmp_path) as svc:
        df = svc.to_frame()
    assert isinstance(df, pd.DataFrame)
    assert df["keys"].tolist() == [2, 2, 2] and df["is_write_full"].tolist() == [True] * 3
    assert df["begin_phy_offset"].tolist() == [0, 200, 400]


def test_empty_directory(tmp_path):
    with IndexService(tmp_path) as svc:
        r = svc.query_offset("T", "k")
        assert (r.phy_offsets, r.index_last_update_timestamp, r.index_last_update_phyoffset) == ([], 0, 0)
        assert svc.trace_query("T", "k").to_frame().empty


@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.iterdir() if (p / "case.json").exists()))
def test_golden_file_as_a_folder(tmp_path, case):
    """One golden file (written by RocketMQ's Java IndexFile) in a folder: queryOffset returns
    the Java selectPhyOffset answer when the file is time-matched and maxNum is within the cap."""
    c = json.loads((GOLDEN / case / "case.json").read_text())
    shutil.copy(GOLDEN / case / c["fileName"], tmp_path / c["fileName"])
    with IndexService(tmp_path, c["hashSlotNum"], c["indexNum"]) as svc:
        for q in c["queries"]:
            topic, key = q["key"].split("#", 1) if "#" in q["key"] else (None, None)
            if topic is None or not 0 <= q["maxNum"] <= 64:
                continue
            r = svc.query_offset(topic, key, q["maxNum"], q["begin"], q["end"])
            assert r.phy_offsets == (q["result"] if q["isTimeMatched"] else []), q
            assert r.index_last_update_phyoffset == c["header"]["endPhyOffset"]


# ---------------------------------------------------------------------------- properties

topics = st.sampled_from(["T", "U"])
words = st.sampled_from(["a", "b", "Aa", "BB", "k", "", "\u4e2d", "\U0001F600"])   # Aa/BB: same hash
keys_prop = st.one_of(st.none(), st.lists(words, max_size=4).map(" ".join))


@st.composite
def message_streams(draw, max_size=30):
    n = draw(st.integers(0, max_size))
    out, phy, ts = [], 0, T0
    for _ in range(n):
        phy = max(0, phy + draw(st.integers(-150, 400)))          # sometimes goes back (re-dispatch)
        ts = ts + draw(st.sampled_from([0, 1, 999, 1000, 2500, 7000, -3000]))
        out.append(msg(draw(topics), phy, ts, draw(keys_prop),
                       draw(st.one_of(st.none(), st.sampled_from(["ID1", "ID2", ""]))),
                       draw(st.sampled_from([0, 0, 0x4, 0x8, 0xC]))))
    return out


geometries = st.tuples(st.sampled_from([1, 2, 3, 7]), st.sampled_from([2, 3, 4, 9]))
times = st.one_of(st.sampled_from([0, LONG_MAX, T0]), st.integers(T0 - 5000, T0 + 60_000))
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(message_streams(), geometries, st.lists(st.tuples(topics, words, st.integers(0, 70), times, times),
                                               min_size=1, max_size=8), st.sampled_from([64, 3]))
def test_query_offset_matches_model(messages, geom, queries, batch):
    hsn, inum = geom
    model = model_build(messages, inum)
    with tempfile.TemporaryDirectory() as d:
        sequential(d, messages, hsn, inum)
        with IndexService(d, hsn, inum, max_msgs_num_batch=batch) as svc:
            assert len(svc) == len(model)
            for f, m in zip(svc.files, model):
                h = f.header
                assert (h.begin_timestamp, h.end_timestamp, h.end_phy_offset, h.keys) == \
                       (m.begin_ts, m.end_ts, m.end_phy, len(m.entries))
            for topic, key, max_num, begin, end in queries:
                want, last = model_query(model, topic, key, max_num, begin, end, hsn, batch)
                got = svc.query_offset(topic, key, max_num, begin, end)
                assert got.phy_offsets == want
                assert (got.index_last_update_timestamp, got.index_last_update_phyoffset) == last
                assert svc.trace_query(topic, key, max_num, begin, end).result == got


@SETTINGS
@given(message_streams(), geometries, st.lists(st.tuples(topics, words), min_size=0, max_size=12),
       st.one_of(st.integers(0, 3), st.integers(0, 70)),   # small: the shared list fills across files
       times, times, st.sampled_from([64, 3]))
def test_query_offsets_many_matches_model(messages, geom, queries, max_num, begin, end, batch):
    """Each key's list in the batch answer is the model broker's answer for that key alone."""
    hsn, inum = geom
    model = model_build(messages, inum)
    with tempfile.TemporaryDirectory() as d:
        sequential(d, messages, hsn, inum)
        with IndexService(d, hsn, inum, max_msgs_num_batch=batch) as svc:
            got = svc.query_offsets_many([t for t, _ in queries], [k for _, k in queries], max_num, begin, end)
            assert len(got) == len(queries) and got.phy_offsets.dtype == np.int64
            assert len(got.phy_offsets) == got.starts[-1]
            for i, (topic, key) in enumerate(queries):
                assert got[i] == model_query(model, topic, key, max_num, begin, end, hsn, batch)[0], i
                trace = svc.trace_query(topic, key, max_num, begin, end)
                assert got.entries_read[i] == sum(v.entries_read for v in trace.files)
            # keys as stored (no topic): the same as their topic#key spelled out
            stored = svc.query_offsets_many(None, [f"{t}#{k}" for t, k in queries], max_num, begin, end)
            assert [stored[i] for i in range(len(queries))] == [got[i] for i in range(len(queries))]
            if queries:   # one topic for all keys
                same = svc.query_offsets_many("T", [k for _, k in queries], max_num, begin, end)
                assert [same[i] for i in range(len(queries))] == \
                    [model_query(model, "T", k, max_num, begin, end, hsn, batch)[0] for _, k in queries]


def test_query_offsets_many_across_files_matches_model(tmp_path):
    """Chains spread over many files: every max_num and time range the model answers."""
    rng = np.random.default_rng(7)
    messages, ts = [], T0
    for i in range(60):
        ts += int(rng.choice([0, 400, 1000, 3000, -2000, -9000]))   # back in time: file ranges overlap
        messages.append(msg(str(rng.choice(["T", "U"])), 100 * (i + 1), ts, str(rng.choice(["a", "b", "Aa", "BB"]))))
    hsn, inum = 3, 5
    model = model_build(messages, inum)
    sequential(tmp_path, messages, hsn, inum)
    queries = [(t, k) for t in ("T", "U") for k in ("a", "b", "Aa", "BB", "zz")]
    with IndexService(tmp_path, hsn, inum) as svc:
        assert len(svc) > 10
        for max_num in range(12):
            ranges = [(0, LONG_MAX), (T0, T0)] + [(T0 + b, T0 + b + w) for b in range(-5_000, 60_000, 2_500)
                                                  for w in (-3_000, 0, 4_000, LONG_MAX - T0 - 60_000)]
            for begin, end in ranges:
                got = svc.query_offsets_many([t for t, _ in queries], [k for _, k in queries], max_num, begin, end)
                for i, (topic, key) in enumerate(queries):
                    assert got[i] == model_query(model, topic, key, max_num, begin, end, hsn)[0], \
                        (topic, key, max_num, begin, end)
                    # and it read what the broker reads: its walk, file by file, entry by entry
                    trace = svc.trace_query(topic, key, max_num, begin, end)
                    assert got.entries_read[i] == sum(v.entries_read for v in trace.files)


def test_query_offsets_many_stops_after_a_file_older_than_begin(tmp_path):
    """Store times went back: the newer file (by name) holds older times than the older one. A
    query from T0+500 stops after the newer file, which begins before it, though the older file
    holds later times: the broker never reads them, and neither may the batch."""
    for name_ms, times, base in ((T0, (T0 + 50_000, T0 + 51_000), 100), (T0 + 1, (T0, T0 + 1_000), 200)):
        with IndexFile.create(tmp_path / index_file_name(name_ms, UTC), 4, 8) as f:
            for j, ms in enumerate(times):
                f.put_key("T#k", base + j, ms)
    with IndexService(tmp_path, 4, 8, tz=UTC) as svc:
        assert svc.query_offset("T", "k", 64, T0 + 500).phy_offsets == [201]
        assert svc.query_offsets_many("T", ["k"], 64, T0 + 500)[0] == [201]
        assert svc.query_offsets_many("T", ["k"], 64, 0)[0] == [201, 200, 101, 100]


def test_query_offsets_many_refuses_mismatched_topics(tmp_path):
    with IndexService(tmp_path, 4, 8) as svc, pytest.raises(ValueError, match="2 topics for 1 keys"):
        svc.query_offsets_many(["T", "U"], ["k"])


@SETTINGS
@given(message_streams(max_size=40), geometries, st.sampled_from(["new-slot", "every-put"]))
def test_bulk_build_byte_identical(messages, geom, rule):
    hsn, inum = geom
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b, \
            tempfile.TemporaryDirectory() as c:
        sequential(a, messages, hsn, inum, slot_count_rule=rule)
        bulk_build(messages, b, hash_slot_num=hsn, index_num=inum, slot_count_rule=rule,
                   clock=counting_clock(), tz=UTC)
        frame = pd.DataFrame([m.__dict__ for m in messages],
                             columns=["topic", "phy_offset", "store_timestamp", "keys", "uniq_key", "sys_flag"])
        bulk_build(frame, c, hash_slot_num=hsn, index_num=inum, slot_count_rule=rule,
                   clock=counting_clock(), tz=UTC)
        want = dir_bytes(a)
        assert dir_bytes(b) == want
        assert dir_bytes(c) == want


@SETTINGS
@given(message_streams(max_size=40), st.integers(0, 300))
def test_expand_columns_matches_loop(messages, start):
    loop = expand_messages(messages, end_phy_offset=start)
    cols = {name: [getattr(m, name) for m in messages]
            for name in ["topic", "phy_offset", "store_timestamp", "keys", "uniq_key", "sys_flag"]}
    vec = expand_columns(cols, end_phy_offset=start)
    assert vec.key_list() == loop.key_list()
    assert vec.phy_offsets.tolist() == loop.phy_offsets.tolist()
    assert vec.store_timestamps.tolist() == loop.store_timestamps.tolist()
    assert vec.message_index.tolist() == loop.message_index.tolist()
    assert vec.n_messages == loop.n_messages == len(messages)


# ---------------------------------------------------------------------------- bulk path


def test_bulk_build_many_files_byte_identical(tmp_path):
    rng = np.random.default_rng(7)
    n = 3000
    phy = np.cumsum(rng.integers(100, 400, n))
    ts = T0 + np.cumsum(rng.integers(0, 700, n))
    keys = [" ".join(f"K{x}" for x in rng.integers(0, 500, rng.integers(0, 4))) or None for _ in range(n)]
    messages = [msg(f"T{i % 3}", int(phy[i]), int(ts[i]), keys[i], f"ID{i:08X}" if i % 5 else None,
                    0xC if i % 97 == 0 else 0) for i in range(n)]
    a, b = tmp_path / "seq", tmp_path / "bulk"
    sequential(a, messages, 101, 257)
    paths = bulk_build(messages, b, hash_slot_num=101, index_num=257, clock=counting_clock(), tz=UTC)
    assert len(paths) > 10
    assert dir_bytes(a) == dir_bytes(b)
    # seeds: each follow-on file starts from the previous file's last key
    for prev, nxt in zip(paths, paths[1:]):
        p, q = read_header(prev), read_header(nxt)
        with IndexFile.open(nxt, 101, 257) as f:
            first = f.entry(1)
        assert first.time_diff == max(0, (q.begin_timestamp - p.end_timestamp) // 1000)
    # already-expanded arrays give the same folder
    exp = expand_messages(messages)
    c = tmp_path / "arrays"
    bulk_build(ExpandedKeys(np.array(exp.key_list(), dtype=object), exp.phy_offsets, exp.store_timestamps),
               c, hash_slot_num=101, index_num=257, clock=counting_clock(), tz=UTC)
    assert dir_bytes(c) == dir_bytes(a)
    with pytest.raises(FileExistsError):
        bulk_build(messages, b, hash_slot_num=101, index_num=257)


def test_bulk_build_trailing_and_empty_cases(tmp_path):
    full = [msg("T", 1, T0, "a b")]                       # fills a 2-key file exactly
    after = full + [msg("T", 0, T0 + 1, "c")]             # then a skipped message: opens a new file
    for i, (messages, n_files) in enumerate([([], 0), ([msg("T", 1, T0)], 1),
                                             (full, 1), (after, 2)]):
        a, b = tmp_path / f"a{i}", tmp_path / f"b{i}"
        a.mkdir()
        sequential(a, messages, 4, 3)
        bulk_build(messages, b, hash_slot_num=4, index_num=3, clock=counting_clock(), tz=UTC)
        assert len(os.listdir(a)) == n_files
        assert dir_bytes(a) == dir_bytes(b)


def test_index_num_one_refused(tmp_path):
    # entry 0 is never written: such a file holds nothing, and retrying the put would create
    # files forever
    with IndexService(tmp_path, 4, 1, read_only=False, clock=counting_clock(), tz=UTC) as svc:
        with pytest.raises(ValueError, match="index_num=1"):
            svc.put_message("T", 1, T0, keys="k")
    with pytest.raises(ValueError, match="index_num=1"):
        bulk_build([msg("T", 1, T0, "k")], tmp_path / "b", hash_slot_num=4, index_num=1)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=253_370_000_000_000),   # up to 9998: no zone leaves the calendar
       st.sampled_from(["UTC", "Asia/Shanghai", "America/New_York", "Europe/Berlin", "Asia/Kolkata"]))
def test_index_file_name_and_its_instant_round_trip(ms, zone):
    """A name written in a zone and read back in the same zone is the same instant (outside a
    daylight-saving fall-back hour, where a wall-clock time names two instants: the name is then
    the same when written again)."""
    import zoneinfo

    from rmqlab.store.indexservice import index_file_name, index_file_name_ms

    tz = zoneinfo.ZoneInfo(zone)
    name = index_file_name(ms, tz)
    back = index_file_name_ms(name, tz)
    assert index_file_name(back, tz) == name
    assert back == ms or abs(back - ms) == 3_600_000      # the repeated hour of a fall-back


def test_index_file_name_ms_refuses_other_names():
    from rmqlab.store.indexservice import index_file_name_ms

    for bad in ("2024061006132000", "x0240610061320000", "20241310061320000"):
        with pytest.raises(ValueError):
            index_file_name_ms(bad, dt.UTC)
