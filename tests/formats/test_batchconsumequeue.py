"""BatchConsumeQueue reader/writer against a literal model, the BatchCQ and LMQ dispatch rules,
and stores holding both, dispatched and verified."""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.errors import CorruptIndexError, FormatError, RmqlabError
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import consumequeue as cq
from rmqlab.rules import dispatch as dp

T0 = 1_718_000_000_000


def model_units(batch_sizes, gaps, time_steps, start=0):
    """The units a healthy queue holds: bases contiguous from `start`, offsets increasing."""
    units, base, off, t = [], start, 0, T0
    for n, g, dt in zip(batch_sizes, gaps, time_steps):
        off += g
        t += dt
        units.append((off, 50 + n, n * 7, t, base, n))
        base += n
        off += 50 + n
    return units


unit_lists = st.integers(0, 25).flatmap(lambda k: st.tuples(
    st.lists(st.integers(1, 40), min_size=k, max_size=k),
    st.lists(st.integers(0, 30), min_size=k, max_size=k),
    st.lists(st.integers(0, 3), min_size=k, max_size=k),
    st.integers(0, 10**6)))


@settings(max_examples=150, deadline=None)
@given(spec=unit_lists, per_file=st.integers(1, 6), bulk=st.booleans())
def test_reader_matches_literal_model(spec, per_file, bulk):
    sizes, gaps, steps, start = spec
    units = model_units(sizes, gaps, steps, start)
    size = per_file * bcq.UNIT_SIZE
    with tempfile.TemporaryDirectory() as d:
        with bcq.BatchConsumeQueueWriter.create(d, mapped_file_size=size) as w:
            if bulk:
                assert w.put_many(*zip(*units)) == len(units) if units else w.put_many([], [], [], [], [], []) == 0
            else:
                assert [w.put(*u) for u in units] == ["written"] * len(units)
        files = sorted(Path(d).iterdir())
        # the model's bytes: units packed back to back, files of `size` bytes zero-filled
        blob = b"".join(struct.pack(">qiqqqhii", *u, -1, 0) for u in units)
        assert b"".join(p.read_bytes() for p in files).rstrip(b"\0") == blob.rstrip(b"\0")
        assert all(p.stat().st_size == size and int(p.name) == i * size for i, p in enumerate(files))
        for opener in (bcq.BatchConsumeQueue.open, bcq.BatchConsumeQueue.read):
            with opener(d, size) as q:
                assert q.problems() == []
                assert q.unit_count == len(units)
                assert [tuple(int(x) for x in r)[:6] for r in q.units] == units
                assert q.min_offset == (units[0][4] if units else -1)
                assert q.max_offset == (units[-1][4] + units[-1][5] if units else 0)
                for x in range(start - 2, q.max_offset + 2):
                    want = [u for u in units if u[4] <= x < u[4] + u[5]]
                    got = q.find(x)
                    assert (got is None and not want) or (got is not None and tuple(got)[:6] == want[0])
                for ts in sorted({u[3] for u in units} | {T0 - 1, T0 + 10**6}):
                    for boundary in ("lower", "upper"):
                        assert q.offset_by_time(ts, boundary) == model_by_time(units, per_file, ts, boundary)


def model_by_time(units, per_file, ts, boundary):
    """getOffsetInQueueByTime as the module docstring states it, over lists."""
    files = [units[i:i + per_file] for i in range(0, len(units), per_file)]
    if not files:
        return -1
    chosen = None
    if files[-1][0][3] <= ts:
        chosen = files[-1]
    else:
        for i in range(len(files) - 1, -1, -1):
            lo, hi = files[i][0][3], files[i][-1][3]
            if hi >= ts:
                if lo <= ts or i == 0:
                    chosen = files[i]
                    break
                continue
            chosen = files[i + 1] if i + 1 < len(files) else None
            break
    if chosen is None:
        return -1
    if ts >= chosen[-1][3]:
        return chosen[-1][4]
    later = [u for u in chosen if u[3] >= ts]
    equal = [u for u in chosen if u[3] == ts]
    pick = equal[-1] if boundary == "upper" and equal else (later[0] if later else None)
    return pick[4] if pick else -1


def test_repeat_is_not_written_and_open_continues(tmp_path):
    with bcq.BatchConsumeQueueWriter.create(tmp_path, mapped_file_size=92) as w:
        assert w.put(100, 10, 0, 1, 0, 2) == "written"
        assert w.put(100, 10, 0, 1, 2, 2) == "duplicate"
        assert w.put(50, 10, 0, 1, 2, 2) == "duplicate"
    with bcq.BatchConsumeQueueWriter.open(tmp_path, mapped_file_size=92) as w:
        assert w.put(200, 10, 0, 2, 2, 1) == "written"
        assert w.put(300, 10, 0, 3, 3, 1) == "written"     # rolls to a second file
    with bcq.BatchConsumeQueue.open(tmp_path, 92) as q:
        assert (q.min_offset, q.max_offset, q.unit_count, len(q.files)) == (0, 4, 3, 2)
    with pytest.raises(ValueError):
        bcq.BatchConsumeQueueWriter.create(tmp_path / "x").put(0, 10, 0, 0, 0, 0)


def _write(tmp_path, units, size=4 * 46):
    with bcq.BatchConsumeQueueWriter.create(tmp_path, mapped_file_size=size) as w:
        for u in units:
            w.put(*u)
    return sorted(tmp_path.iterdir())


def test_damage_is_typed_and_located(tmp_path):
    files = _write(tmp_path, model_units([2, 3, 1], [0, 5, 5], [1, 1, 1]))
    raw = bytearray(files[0].read_bytes())
    struct.pack_into(">q", raw, 46 + bcq.UNIT.offset("msg_base_offset"), 99)
    struct.pack_into(">i", raw, 2 * 46 + bcq.UNIT.offset("compacted_offset"), 5)
    struct.pack_into(">q", raw, 3 * 46 + 10, 7)        # junk in the unit that ends the queue
    files[0].write_bytes(bytes(raw))
    with bcq.BatchConsumeQueue.open(tmp_path, 4 * 46) as q:
        probs = q.problems()
    by_field = {p.field: p for p in probs}
    assert isinstance(by_field["unit.msg_base_offset"], CorruptIndexError)
    assert by_field["unit.msg_base_offset"].offset == 46 + 28
    assert isinstance(by_field["unit.compacted_offset"], FormatError)
    assert any("not a zero end marker" in p.reason for p in probs)
    assert all(p.path == str(files[0]) for p in probs)
    (tmp_path / "00000000000000000100").write_bytes(b"\0" * 10)
    (tmp_path / "zzz").write_bytes(b"")
    with pytest.raises(RmqlabError):
        bcq.BatchConsumeQueue.open(tmp_path, 4 * 46)


# ---------------------------------------------------------------------------- dispatch rules


def _block(pairs):
    return "".join(f"{k}\x01{v}\x02" for k, v in pairs)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 10**6), st.one_of(st.none(), st.integers(-3, 40000)),
                               st.one_of(st.none(), st.integers(-2, 10**12)), st.booleans()), max_size=20))
def test_batch_units_many_equals_scalar(rows):
    qoffs, blocks = [], []
    for qoff, num, base, trailing in rows:
        pairs = [("TAGS", "a")] + ([("INNER_NUM", num)] if num is not None else []) + \
            ([("INNER_BASE", base)] if base is not None else [])
        b = _block(pairs)
        qoffs.append(qoff)
        blocks.append(b if trailing else b[:-1])
    base, size, ok = dp.batch_units_many(qoffs, blocks)
    for i, (q, b) in enumerate(zip(qoffs, blocks)):
        props = {k: v for k in ("INNER_NUM", "INNER_BASE") if (v := dp.property_value(b, k)) is not None}
        try:
            want = dp.batch_unit(q, props)
        except ValueError:
            assert not ok[i]
            continue
        assert ok[i] and (base[i], size[i]) == want


@pytest.mark.parametrize("text, want", [
    ("0" * 6000 + "12", 12),             # Long.parseLong accepts any number of leading zeros
    ("-" + "0" * 6000 + "7", -7),
    ("9" * 6000, None),                  # far out of range: refused, however long
    ("-9223372036854775808", -(1 << 63)),
    ("9223372036854775808", None),
])
def test_inner_base_parses_as_java_does(text, want):
    props = {dp.PROPERTY_INNER_NUM: "3", dp.PROPERTY_INNER_BASE: text}
    if want is None:
        with pytest.raises(ValueError, match="does not fit 64 bits"):
            dp.batch_unit(0, props)
    else:
        assert dp.batch_unit(0, props) == (want, 3)


def test_lmq_rules():
    props = {dp.PROPERTY_INNER_MULTI_DISPATCH: "%LMQ%a,plain,%LMQ%x/y",
             dp.PROPERTY_INNER_MULTI_QUEUE_OFFSET: "3,4,5"}
    assert dp.lmq_dispatch("T", 2, props, enable_lmq=True, enable_multi_dispatch=True) == \
        [("%LMQ%a", 0, 3), ("plain", 2, 4)]
    assert dp.lmq_dispatch("T", 2, props, enable_lmq=False, enable_multi_dispatch=True)[0] == ("%LMQ%a", 2, 3)
    assert dp.lmq_dispatch("T", 2, props, enable_lmq=True, enable_multi_dispatch=False) == []
    assert dp.lmq_dispatch(dp.SCHEDULE_TOPIC, 2, props, enable_lmq=True, enable_multi_dispatch=True) == []
    short = dict(props, **{dp.PROPERTY_INNER_MULTI_QUEUE_OFFSET: "3,4"})
    assert dp.lmq_dispatch("T", 2, short, enable_lmq=True, enable_multi_dispatch=True) == []
    table: dict = {}
    assert [dp.assign_lmq_offsets(["%LMQ%a"], 0, table) for _ in range(3)] == ["0", "1", "2"]
    assert dp.message_num(dp.INNER_BATCH_FLAG, False, "7") == 7 and dp.cq_type({"queue.type": "BatchCQ"}) == "BatchCQ"


# ------------------------------------------------------------------------------------ stores

FEATURES = dict(topics=("T", "B"), batch_cq_topics=("B",), inner_batch_max=5,
                lmq_queues=("%LMQ%a", "%LMQ%b", "%LMQ%c"), multi_dispatch_every=3)
STORE_OPTS = dict(commitlog_file_size=1 << 18, hash_slot_num=16, index_num=2048, consume_queue_file_size=2000,
                  batch_cq_topics=("B",), enable_lmq=True, enable_multi_dispatch=True,
                  batch_consume_queue_file_size=46 * 20)


@pytest.fixture(scope="module")
def feature_store(tmp_path_factory):
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload

    root = tmp_path_factory.mktemp("bcq") / "store"
    store = generate_store(root, Workload(messages=600, seed=4, **FEATURES), **STORE_OPTS)
    return root, store


def test_workload_inner_batches_and_lmq_offsets():
    from rmqlab.lab.workload import Workload, generate

    t = generate(Workload(messages=400, seed=4, **FEATURES)).to_pandas()
    b = t[t["topic"] == "B"]
    assert (b["sys_flag"] & (dp.INNER_BATCH_FLAG | dp.NEED_UNWRAP_FLAG) == 0xC0).all()
    for _, g in b.groupby("queue_id"):
        nums = [int(dp.property_value(p, "INNER_NUM")) for p in g["properties"]]
        bases = [int(dp.property_value(p, "INNER_BASE")) for p in g["properties"]]
        assert bases == g["queue_offset"].tolist() == list(np.cumsum([0] + nums[:-1]))
    seen: dict = {}
    for p in t["properties"]:
        names = dp.property_value(p, dp.PROPERTY_INNER_MULTI_DISPATCH)
        if names:
            offs = dp.property_value(p, dp.PROPERTY_INNER_MULTI_QUEUE_OFFSET).split(",")
            for n, o in zip(names.split(","), offs):
                assert int(o) == seen.get(n, 0)
                seen[n] = int(o) + 1
    assert set(seen) == set(FEATURES["lmq_queues"])
    plain = generate(Workload(messages=400, seed=4, topics=("T", "B")))
    assert plain.equals(generate(Workload(messages=400, seed=4, topics=("T", "B"), inner_batch_max=5,
                                          lmq_queues=("%LMQ%a",))))


def test_store_dispatch_and_verify(feature_store):
    from rmqlab.verify import verify_path

    root, store = feature_store
    msgs = store.messages()
    b = msgs[msgs["topic"] == "B"]
    total = 0
    for topic, qid in store.batch_queues():
        with bcq.BatchConsumeQueue.open(bcq.queue_dir(root, topic, qid), 46 * 20) as q:
            mine = b[b["queue_id"] == qid]
            assert q.unit_count == len(mine) and q.problems() == []
            assert q.units["commitlog_offset"].tolist() == mine["phy_offset"].tolist()
            total += q.unit_count
            last = mine.iloc[-1]
            assert q.find(int(last["queue_offset"])).commitlog_offset == int(last["phy_offset"])
    assert total == len(b) > 0
    assert not (root / "consumequeue" / "B").exists()
    for name in FEATURES["lmq_queues"]:
        with cq.ConsumeQueue.open(cq.queue_dir(root, name, 0), 2000) as q:
            assert q.count > 0 and q.min_offset == 0
    rep = verify_path(root)
    assert rep.ok, rep.summary()
    assert sum(f.kind == "batchconsumequeue" for f in rep.files) == 4
    again = store.dispatch()
    assert again.messages == 0 and again.batch_queue_units == 0


def test_verify_finds_damaged_units(feature_store, tmp_path):
    import shutil

    from rmqlab.verify import verify_path

    root = tmp_path / "s"
    shutil.copytree(feature_store[0], root)
    f = sorted((root / "batchconsumequeue" / "B" / "1").iterdir())[0]
    raw = bytearray(f.read_bytes())
    struct.pack_into(">h", raw, bcq.UNIT.offset("batch_size"), 9)
    f.write_bytes(bytes(raw))
    lf = sorted((root / "consumequeue" / "%LMQ%b" / "0").iterdir())[0]
    raw = bytearray(lf.read_bytes())
    struct.pack_into(">i", raw, 20 + 8, 17)
    lf.write_bytes(bytes(raw))
    rep = verify_path(root)
    checks = {p.check for p in rep.cross} | {p.check for r in rep.files for p in r.problems}
    assert {"bcq.batch", "bcq.base-offset", "lmq.unit"} <= checks
    assert verify_path(root / "batchconsumequeue").kind == "batchconsumequeue"


# ------------------------------------------------------------ INNER_MULTI_QUEUE_OFFSET by version


def test_lmq_offsets_form_by_broker_version():
    """4.9.3-4.9.8 MultiDispatch numbers every name (a plain name per message queue id, as an
    LMQ name without enableLmq); 5.x numbers only LMQ names with enableLmq, the rest empty."""
    for version in ("4.9.3", "4.9.4", "4.9.8"):
        t: dict = {}
        assert dp.assign_lmq_offsets(["%LMQ%a", "P"], 3, t, broker_version=version) == "0,0"
        assert dp.assign_lmq_offsets(["%LMQ%a", "P"], 2, t, broker_version=version) == "1,0"
        assert t == {("%LMQ%a", 0): 2, ("P", 3): 1, ("P", 2): 1}
        off: dict = {}
        assert dp.assign_lmq_offsets(["%LMQ%a"], 5, off, broker_version=version, enable_lmq=False) == "0"
        assert off == {("%LMQ%a", 5): 1}
    for version in (None, "5.0.0", "5.3.1"):
        t = {}
        assert dp.assign_lmq_offsets(["%LMQ%a", "P"], 3, t, broker_version=version) == "0,"
        assert dp.assign_lmq_offsets(["%LMQ%a"], 3, {}, broker_version=version, enable_lmq=False) == ""
        assert t == {("%LMQ%a", 0): 1}
    # what the two forms mean to the dispatch: 5.x's "0," splits to one offset for two names
    props = {dp.PROPERTY_INNER_MULTI_DISPATCH: "%LMQ%a,P", dp.PROPERTY_INNER_MULTI_QUEUE_OFFSET: "0,"}
    assert dp.lmq_dispatch("T", 3, props, enable_lmq=True, enable_multi_dispatch=True) == []
    props[dp.PROPERTY_INNER_MULTI_QUEUE_OFFSET] = "0,0"
    assert dp.lmq_dispatch("T", 3, props, enable_lmq=True, enable_multi_dispatch=True) == [("%LMQ%a", 0, 0),
                                                                                          ("P", 3, 0)]


def test_workload_lmq_offsets_agree_for_lmq_names_across_versions():
    from rmqlab.lab.workload import Workload, generate

    def offsets(version):
        t = generate(Workload(messages=300, seed=2, broker_version=version, **FEATURES_LMQ)).to_pandas()
        return [dp.property_value(p, dp.PROPERTY_INNER_MULTI_QUEUE_OFFSET) for p in t["properties"]]

    a, b = offsets("4.9.4"), offsets("5.3.1")
    assert a == b and sum(x is not None for x in a) == 100


FEATURES_LMQ = dict(topics=("T",), lmq_queues=("%LMQ%a", "%LMQ%b"), multi_dispatch_every=3)


@pytest.mark.parametrize("version", ["4.9.3", "4.9.4", "5.3.1"])
def test_store_of_each_lmq_version_dispatches_and_verifies(tmp_path, version):
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload
    from rmqlab.verify import verify_path

    store = generate_store(tmp_path / "s", Workload(messages=300, seed=2, broker_version=version, **FEATURES_LMQ),
                           commitlog_file_size=1 << 18, hash_slot_num=16, index_num=2048,
                           consume_queue_file_size=2000, enable_lmq=True, enable_multi_dispatch=True)
    assert {t for t, _ in store.queues() if dp.is_lmq(t)} == {"%LMQ%a", "%LMQ%b"}
    rep = verify_path(tmp_path / "s")
    assert rep.ok, rep.summary()


def test_workload_refuses_features_the_version_lacks():
    from rmqlab.lab.workload import Workload

    with pytest.raises(ValueError, match="BatchConsumeQueue"):
        Workload(messages=10, topics=("B",), batch_cq_topics=("B",), broker_version="4.9.8")
    with pytest.raises(ValueError, match="multi dispatch"):
        Workload(messages=10, broker_version="4.9.2", **{k: v for k, v in FEATURES_LMQ.items() if k != "topics"})


@pytest.mark.parametrize("version", ["4.9.4", "5.3.1"])
def test_recover_rebuilds_the_light_message_queues_a_crash_cut(tmp_path, version):
    """A crash cut the newest units of every queue, light message queues included: recover_store
    with the broker's multi-dispatch settings gives the queues of an uninterrupted dispatch of
    the same CommitLog again, byte for byte (without them it cannot explain the LMQ queues'
    units, none of whose messages is of the %LMQ% topic, and this test fails)."""
    import shutil

    from rmqlab.formats.storepaths import StorePaths
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload
    from rmqlab.store.recover import recover_store

    opts = dict(hash_slot_num=16, index_num=2048, consume_queue_file_size=2000, enable_lmq=True,
                enable_multi_dispatch=True)
    whole = tmp_path / "whole"
    generate_store(whole, Workload(messages=300, seed=4, broker_version=version, **FEATURES_LMQ),
                   commitlog_file_size=1 << 18, **opts)
    crashed = tmp_path / "crashed"
    shutil.copytree(whole, crashed)
    cut = 0
    for folder in StorePaths(crashed).consumequeue.glob("*/*"):
        for f in sorted(folder.iterdir())[-1:]:
            raw = bytearray(f.read_bytes())
            used = len(raw.rstrip(b"\0")) // 20 * 20 + (20 if len(raw.rstrip(b"\0")) % 20 else 0)
            keep = max(0, used - 3 * 20)
            cut += (used - keep) // 20
            raw[keep:] = bytes(len(raw) - keep)
            f.write_bytes(bytes(raw))
    assert cut >= 12       # three units of each queue: T's and the two light message queues'
    report = recover_store(crashed, commitlog_file_size=1 << 18, hash_slot_num=16, index_num=2048,
                           consume_queue_file_size=2000, broker_version=version, enable_lmq=True,
                           enable_multi_dispatch=True)
    assert report.cq_units_added >= cut
    for f in StorePaths(whole).consumequeue.glob("*/*/*"):
        mine = StorePaths(crashed).consumequeue / f.relative_to(StorePaths(whole).consumequeue)
        assert mine.read_bytes().rstrip(b"\0") == f.read_bytes().rstrip(b"\0"), f
