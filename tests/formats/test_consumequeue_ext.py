"""ConsumeQueueExt: the address rules, reader against writer against a struct model written
here, the broker's file rules, and the real 4.2.0 store (read, resolve, verify, dispatch round
trip byte for byte)."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from commitlog_stdlib import read_commitlog
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data

from rmqlab.errors import CorruptIndexError, FormatError, RmqlabError, TruncatedFileError
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.jvm.hashcode import java_hash

REAL = REAL_DATA / "rocketmq" / "store-ericpangopher-4.2.0"
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
longs = st.integers(LONG_MIN, LONG_MAX)


# ------------------------------------------------------------------ a model written from the Java source


def java_long(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def model_is_ext(a: int) -> bool:
    return a <= -(2**31) - 1                  # MAX_ADDR = Integer.MIN_VALUE - 1L


def model_decorate(o: int) -> int:
    return o if model_is_ext(o) else java_long(o + LONG_MIN)


def model_undecorate(a: int) -> int:
    return java_long(a - LONG_MIN) if model_is_ext(a) else a


def model_put(files: list[bytearray], file_size: int, tags: int, time: int, bit_map: bytes) -> int:
    """ConsumeQueueExt.put on a list of [bytearray] files; wrote positions kept in a side dict."""
    size = 20 + len(bit_map)
    if size > 32767:
        return 1
    unit = struct.pack(">hqqh", size, tags, time, len(bit_map)) + bit_map
    for _ in range(3):
        if not files or model_put.wrote[id(files)][-1] == file_size:
            files.append(bytearray(file_size))
            model_put.wrote.setdefault(id(files), []).append(0)
        wrote = model_put.wrote[id(files)][-1]
        if size > file_size - wrote - 4:
            struct.pack_into(">h", files[-1], wrote, -1)
            model_put.wrote[id(files)][-1] = file_size
            continue
        files[-1][wrote:wrote + size] = unit
        model_put.wrote[id(files)][-1] = wrote + size
        return model_decorate((len(files) - 1) * file_size + wrote)
    return 1


model_put.wrote = {}


# ------------------------------------------------------------------ address rules


@given(longs)
def test_address_rules_match_the_java_model(v):
    assert cqx.is_ext_addr(v) == model_is_ext(v)
    assert cqx.decorate(v) == model_decorate(v)
    assert cqx.undecorate(v) == model_undecorate(v)
    arr = np.array([v], dtype=np.int64)
    assert cqx.is_ext_addr_many(arr).tolist() == [model_is_ext(v)]
    assert cqx.decorate_many(arr).tolist() == [model_decorate(v)]
    assert cqx.undecorate_many(arr).tolist() == [model_undecorate(v)]


@given(st.integers(0, cqx.MAX_REAL_OFFSET))
def test_decorate_round_trips_every_real_offset(o):
    a = cqx.decorate(o)
    assert cqx.is_ext_addr(a) and cqx.undecorate(a) == o


def test_address_constants_are_the_brokers():
    assert cqx.MAX_ADDR == -2147483649
    assert cqx.MAX_REAL_OFFSET == cqx.MAX_ADDR - LONG_MIN == 2**63 - 2**31 - 1
    assert cqx.MIN_UNIT_SIZE == 20 and cqx.UNIT_HEADER.offset("bit_map_size") == 18
    assert cq.EXT_ADDR_MAX == cqx.MAX_ADDR
    assert not cqx.is_ext_addr(java_hash("TAG1")) and not cqx.is_ext_addr(-(2**31))


# ------------------------------------------------------------------ reader vs writer vs model


units_st = st.lists(st.tuples(longs, longs, st.one_of(st.just(b""), st.binary(max_size=40))), max_size=40)


@settings(max_examples=60, deadline=None)
@given(units=units_st, file_size=st.integers(24, 200))
def test_writer_matches_model_and_reader_reads_it_back(tmp_path_factory, units, file_size):
    d = tmp_path_factory.mktemp("ext")
    model: list[bytearray] = []
    model_put.wrote.pop(id(model), None)
    with cqx.ConsumeQueueExtWriter.create(d, mapped_file_size=file_size) as w:
        got = [w.put(t, s, b) for t, s, b in units]
    want = [model_put(model, file_size, t, s, b) for t, s, b in units]
    assert got == want
    files = sorted(d.iterdir())
    assert [f.read_bytes() for f in files] == [bytes(b) for b in model]
    assert [f.name for f in files] == [f"{k * file_size:020d}" for k in range(len(model))]
    if not files:
        return
    with cqx.ConsumeQueueExt.open(d, file_size) as x:
        assert x.problems() == []
        written = [(a, u) for a, u in zip(got, units) if a != cqx.PUT_FAILED]
        assert x.count == len(written)
        for (a, (t, s, b)), unit in zip(written, x.iter_units()):
            assert unit == x.get(a) == cqx.ExtUnit(a, cqx.undecorate(a), 20 + len(b), t, s, b)
        codes, found = x.resolve([a for a, _ in written] + [7])
        assert codes.tolist() == [t for _, (t, _, _) in written] + [7]
        assert found.tolist() == [True] * len(written) + [False]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 120), split=st.integers(0, 120), file_size=st.integers(20, 300))
def test_put_many_equals_put_and_continues_after_open(tmp_path_factory, n, split, file_size):
    """put_many is put, one unit after another. Reopening continues where recover() leaves the
    folder; below 24 bytes no unit fits, every put fails and recover() resets the last file's
    write position, so a reopened folder differs there, as the broker's would."""
    split = min(split, n)
    codes = np.arange(n, dtype=np.int64) * 7 - 3
    times = 1532257321553 + np.arange(n, dtype=np.int64)
    one, two = tmp_path_factory.mktemp("one"), tmp_path_factory.mktemp("two")
    with cqx.ConsumeQueueExtWriter.create(one, mapped_file_size=file_size) as w:
        a1 = [w.put(int(c), int(t)) for c, t in zip(codes, times)]
    with cqx.ConsumeQueueExtWriter.create(two, mapped_file_size=file_size) as w:
        a2 = w.put_many(codes[:split], times[:split]).tolist()
    if any(two.iterdir()):
        with cqx.ConsumeQueueExtWriter.open(two, mapped_file_size=file_size) as w:
            a2 += w.put_many(codes[split:], times[split:]).tolist()
    else:
        with cqx.ConsumeQueueExtWriter.create(two, mapped_file_size=file_size) as w:
            a2 += w.put_many(codes[split:], times[split:]).tolist()
    assert a1 == a2
    if file_size < 24 and 0 < split < n:
        return
    assert [f.read_bytes() for f in sorted(one.iterdir())] == [f.read_bytes() for f in sorted(two.iterdir())]


# ------------------------------------------------------------------ file rules and typed errors


def _write(d: Path, n: int, file_size: int = 84) -> list[int]:
    with cqx.ConsumeQueueExtWriter.create(d, mapped_file_size=file_size) as w:
        return w.put_many(np.full(n, 5), np.arange(n)).tolist()


def test_fill_marker_and_zero_tail(tmp_path):
    _write(tmp_path, 5)                      # (84 - 4) // 20 = 4 units a file
    first = (tmp_path / f"{0:020d}").read_bytes()
    assert first[80:82] == b"\xff\xff" and first[82:] == b"\0\0"
    with cqx.ConsumeQueueExt.open(tmp_path) as x:
        assert x.count == 5 and x.end_offset == 84 + 20 and x.problems() == []


@pytest.mark.parametrize("edit, cls, field", [
    (lambda b: struct.pack_into(">h", b, 20, 7), FormatError, "unit.size"),            # below the header
    (lambda b: struct.pack_into(">h", b, 20, -5), FormatError, "unit.size"),           # not -1 / 0
    (lambda b: struct.pack_into(">h", b, 38, 3), FormatError, "unit.bit_map_size"),
    (lambda b: struct.pack_into(">h", b, 20, 30000), TruncatedFileError, "unit.size"),
    (lambda b: struct.pack_into(">h", b, 80, 0), CorruptIndexError, "unit.size"),      # marker gone
    (lambda b: b.__setitem__(83, 1), CorruptIndexError, "unit"),                       # dirty tail
])
def test_damage_is_a_typed_error_naming_file_offset_field(tmp_path, edit, cls, field):
    _write(tmp_path, 6)
    p = tmp_path / f"{0:020d}"
    b = bytearray(p.read_bytes())
    edit(b)
    p.write_bytes(bytes(b))
    with cqx.ConsumeQueueExt.open(tmp_path) as x:
        probs = x.problems()
        assert probs and isinstance(probs[0], cls)
        assert probs[0].path == str(p) and probs[0].offset is not None and probs[0].field == field
        with pytest.raises(RmqlabError):
            x.check()


def test_bad_names_and_sizes(tmp_path):
    _write(tmp_path, 6)
    (tmp_path / "junk").write_bytes(b"x")
    with pytest.raises(FormatError) as e:
        cqx.ConsumeQueueExt.open(tmp_path)
    assert e.value.field == "file name"
    (tmp_path / "junk").unlink()
    (tmp_path / f"{84:020d}").write_bytes(bytes(10))
    with pytest.raises(TruncatedFileError) as e:
        cqx.ConsumeQueueExt.open(tmp_path)
    assert e.value.field == "file size"


def test_eager_and_lazy_agree(tmp_path):
    _write(tmp_path, 9)
    with cqx.ConsumeQueueExt.open(tmp_path) as a, cqx.ConsumeQueueExt.read(tmp_path) as b:
        assert a.units.tobytes() == b.units.tobytes()
    assert cqx.read_ext_info(tmp_path).units == 9


# ------------------------------------------------------------------ the real 4.2.0 store


def test_real_store_ext_files():
    root = require_real_data(REAL)
    with cqx.ConsumeQueueExt.open(root / "consumequeue_ext" / "abc" / "0") as x:
        assert x.mapped_file_size == 840 and x.problems() == []
        assert x.count == 56 and [s.end_kind for s in x._segs] == ["fill", "zero"]
        assert set(x.units["tags_code"].tolist()) == {java_hash("TAG1")} == {2567159}
        assert (x.units["size"] == 20).all() and (x.units["bit_map_size"] == 0).all()


def test_real_store_every_unit_resolves_to_tag1_and_store_times_match():
    root = require_real_data(REAL)
    from rmqlab.formats import commitlog as cl

    with cq.ConsumeQueue.open(root / "consumequeue" / "abc" / "0", 200) as q, \
            cqx.ConsumeQueueExt.open(root / "consumequeue_ext" / "abc" / "0") as x:
        assert q.count == 56 and cqx.is_ext_addr_many(q.units["tags_code"]).all()
        codes, resolved = q.resolved_tags_codes(x)
        assert resolved.all() and (codes == java_hash("TAG1")).all()
        idx, found = x.locate(q.units["tags_code"])
        phys = q.units["commitlog_offset"].astype(np.int64)
        times = cl.read_at(root / "commitlog", phys)["store_timestamp"].to_numpy(np.int64)
        assert found.all() and (x.units["msg_store_time"][idx] == times).all()
        # README: "msgStoreTime the message's store time": the standard-library walk's, by offset
        stored = {m["phy_offset"]: m["store_timestamp"] for m in read_commitlog(root / "commitlog")}
        assert len(stored) == 179
        assert x.units["msg_store_time"][idx].tolist() == [stored[int(o)] for o in phys]


def test_real_store_tag_filter_compares_the_ext_units_codes():
    """DefaultMessageStore.getMessage (4.2.0) filters by the ext unit's tagsCode: every unit
    holds an ext address, all resolve to "TAG1".hashCode()."""
    root = require_real_data(REAL)
    with cq.ConsumeQueue.open(root / "consumequeue" / "abc" / "0", 200) as q, \
            cqx.ConsumeQueueExt.open(root / "consumequeue_ext" / "abc" / "0") as x:
        assert q.tag_mask("TAG1", ext=x).sum() == 56
        assert q.tag_mask("TAG2", ext=x).sum() == 0
        assert q.tag_mask("TAG1 || TAG2", ext=x).sum() == 56 and q.tag_mask("*", ext=x).sum() == 56
        assert q.code_mask(java_hash("TAG1"), ext=x).sum() == 56
        # the raw values are addresses: without the ext nothing matches by tag
        assert q.tag_mask("TAG1").sum() == 0 and q.code_mask(java_hash("TAG1")).sum() == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.booleans(), st.booleans()), min_size=1, max_size=30))
def test_tag_filter_with_ext_matches_a_model(tmp_path_factory, rows):
    """Each unit: its tag, whether dispatch put it through the ext, and (for those) whether its
    address is damaged so it points at no unit start. Model: resolved code when found; a
    dangling address passes any tag subscription (the broker's null tagsCode)."""
    d, e = tmp_path_factory.mktemp("q"), tmp_path_factory.mktemp("x")
    with cqx.ConsumeQueueExtWriter.create(e, mapped_file_size=20 * 64) as w:
        addrs = w.put_many([java_hash(t) for t, _, _ in rows], list(range(len(rows))))
    codes = []
    for (t, via_ext, dangling), a in zip(rows, addrs):
        if not via_ext:
            codes.append(java_hash(t))
        else:
            codes.append(int(a) + 1 if dangling else int(a))
    with cq.ConsumeQueueWriter.create(d, mapped_file_size=20 * 64) as w:
        w.put_many([i * 100 for i in range(len(rows))], [100] * len(rows), codes, list(range(len(rows))))
    with cq.ConsumeQueue.open(d, 20 * 64) as q, cqx.ConsumeQueueExt.open(e) as x:
        for sub in ("a", "a || c", "*"):
            want = set(sub.split(" || "))
            expect = [sub == "*" or (via and dang) or t in want for t, via, dang in rows]
            assert q.tag_mask(sub, ext=x).tolist() == expect
        assert q.code_mask(java_hash("b"), ext=x).tolist() == [t == "b" and not (v and g) for t, v, g in rows]


def test_real_store_verify_finds_nothing_in_queue_and_ext():
    root = require_real_data(REAL)
    from rmqlab.verify import verify_path

    r = verify_path(root)
    cq_reports = [f for f in r.files if f.kind == "consumequeue"]
    assert len(cq_reports) == 1 and cq_reports[0].counts["ext_units"] == 56
    assert [p for f in cq_reports for p in f.problems] == []
    assert [p for p in r.cross if p.check.startswith(("cq", "cqext"))] == []
    assert not any("not checked" in n and "ConsumeQueueExt" in n for n in r.notes)


def _copy_commitlog(root: Path, dest: Path) -> None:
    (dest / "commitlog").mkdir(parents=True)
    for f in sorted((root / "commitlog").iterdir()):
        shutil.copyfile(f, dest / "commitlog" / f.name)


def test_real_store_dispatch_round_trip_is_byte_identical(tmp_path):
    """Dispatching the real CommitLog with ext enabled and the same file sizes rewrites the 56
    units the broker had dispatched byte for byte, in the ConsumeQueue and the ext files."""
    root = require_real_data(REAL)
    from rmqlab.store.directory import Store

    _copy_commitlog(root, tmp_path)
    empty_last = sorted((tmp_path / "commitlog").iterdir())[-1]
    if empty_last.stat().st_size == 0:
        empty_last.unlink()   # MappedFileQueue.load drops an empty last file (tested with the load rules)
    s = Store(tmp_path, commitlog_file_size=8192, consume_queue_file_size=200, consume_queue_ext=True,
              consume_queue_ext_file_size=840)
    r = s.dispatch()
    assert r.consume_queue_units == 179
    for sub, dispatched_bytes in (("consumequeue/abc/0", 56 * 20), ("consumequeue_ext/abc/0", 56 * 20)):
        real_files = sorted((root / sub).iterdir())
        real = b"".join(f.read_bytes() for f in real_files)
        mine = b"".join((tmp_path / sub / f.name).read_bytes() for f in real_files)
        if sub.startswith("consumequeue_ext"):
            dispatched_bytes = 840 + 15 * 20                    # 41 units, the -1 marker, then 15
        assert mine[:dispatched_bytes] == real[:dispatched_bytes]
        assert real[dispatched_bytes:].strip(b"\0") == b""      # the broker had written no more
    info = s.info()
    assert info["cq_ext_units"] == 179 and info["cq_ext_file_size"] == 840


@pytest.mark.parametrize("where, offset, value, check", [
    ("consumequeue_ext/abc/0/00000000000000000000", 20 * 3 + 10, 1532257321000, "cqext.store-time"),
    ("consumequeue_ext/abc/0/00000000000000000840", 20 * 2 + 2, 99, "cq.tags-code"),
    ("consumequeue/abc/0/00000000000000000200", 20 * 4 + 12, cqx.decorate(14 * 20 + 10), "cq.ext-address"),
])
def test_real_store_damaged_ext_is_reported(tmp_path, where, offset, value, check):
    root = require_real_data(REAL)
    from rmqlab.verify import verify_path

    shutil.copytree(root, tmp_path / "s")
    p = tmp_path / "s" / where
    p.chmod(0o644)
    b = bytearray(p.read_bytes())
    struct.pack_into(">q", b, offset, value)
    p.write_bytes(bytes(b))
    r = verify_path(tmp_path / "s")
    found = [q for f in r.files for q in f.problems] + r.cross
    hits = [q for q in found if q.check == check]
    assert len(hits) == 1 and hits[0].error.offset is not None and hits[0].error.field
    assert [q.check for q in found if q.check.startswith(("cq", "cqext"))] == [check]


def test_real_store_hex_view_of_an_ext_file():
    root = require_real_data(REAL)
    from rmqlab.viz.hexview import HEX_FIELD_COLUMNS, ext_hex_fields

    df = ext_hex_fields(root / "consumequeue_ext" / "abc" / "0" / f"{0:020d}", units=[0, 40])
    assert list(df.columns) == HEX_FIELD_COLUMNS
    assert df["field"].tolist()[:4] == ["unit[0].size", "unit[0].tagsCode", "unit[0].msgStoreTime",
                                        "unit[0].bitMapSize"]
    assert df.loc[df["field"] == "unit[40].tagsCode", "value"].item() == java_hash("TAG1")
    end = df[df["region"] == "end"].iloc[0]
    assert (end["offset"], end["hex"], end["value"]) == (820, "ff ff", -1)
    assert df.attrs["units"] == [0, 40] and df.attrs["file_size"] == 840


def test_store_info_cli_shows_ext(tmp_path, capsys):
    root = require_real_data(REAL)
    from rmqlab.cli import main

    shutil.copytree(root / "consumequeue_ext", tmp_path / "consumequeue_ext")
    assert main(["store", "info", str(tmp_path), "--json"]) == 0
    import json

    info = json.loads(capsys.readouterr().out)
    assert info["cq_ext_units"] == 56 and info["cq_ext_folders"] == 1


def test_generated_store_with_ext_verifies_clean_and_resolves(tmp_path):
    """A generated store with ext enabled (delayed messages included: their tags code is the
    delivery time) verifies clean; each queue's units resolve to the tags codes dispatch gives."""
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload
    from rmqlab.verify import verify_path

    w = Workload(messages=1500, seed=2, transaction_fraction=0.2, decision_delay_ms=30.0, delay_fraction=0.1,
                 delay_levels=(1, 2), drain=True)
    s = generate_store(tmp_path, w, commitlog_file_size=1 << 20, consume_queue_file_size=2000,
                       consume_queue_ext=True, consume_queue_ext_file_size=1000)
    r = verify_path(tmp_path, commitlog_file_size=1 << 20, consume_queue_file_size=2000)
    assert [p.check for f in r.files for p in f.problems] == [] and r.cross == []
    plain = tmp_path / "plain"
    generate_store(plain, w, commitlog_file_size=1 << 20, consume_queue_file_size=2000)
    for topic, qid in s.queues():
        with cq.ConsumeQueue.open(cq.queue_dir(tmp_path, topic, qid), 2000) as q, \
                cq.ConsumeQueue.open(cq.queue_dir(plain, topic, qid), 2000) as p, \
                cqx.ConsumeQueueExt.open(cqx.ext_dir(tmp_path, topic, qid)) as x:
            codes, resolved = q.resolved_tags_codes(x)
            assert resolved.all() and (codes == p.units["tags_code"]).all()
            assert (q.units["commitlog_offset"] == p.units["commitlog_offset"]).all()
