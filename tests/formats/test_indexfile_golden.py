"""IndexFile against golden files written by RocketMQ's own Java IndexFile.

The same four checks as ../shared/conformance/indexfile_conformance.py (put replay, bulk build,
queries, header), for every case folder in tests/data/golden, plus the C batch query, the
trace, put_keys, check() and the Java String.hashCode table. See tests/data/golden/README.md.
"""
from __future__ import annotations

import hashlib
import json
import struct
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import rmqlab
from rmqlab import IndexFile, build_index_file, read_header

GOLDEN = Path(__file__).parents[1] / "data" / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "case.json").exists())
HEADER_FIELDS = [
    ("beginTimestamp", "begin_timestamp"),
    ("endTimestamp", "end_timestamp"),
    ("beginPhyOffset", "begin_phy_offset"),
    ("endPhyOffset", "end_phy_offset"),
    ("hashSlotCount", "hash_slot_count"),
    ("indexCount", "index_count"),
]


def test_all_golden_cases_found():
    assert len(CASES) >= 12
    assert {"basic", "collisions", "ctor_carryover", "empty", "fill_5000", "full"} <= set(CASES)


@cache
def load(name: str) -> dict:
    # json reads integers exactly (arbitrary precision), never through float
    return json.loads((GOLDEN / name / "case.json").read_text(encoding="utf-8"))


def golden_path(name: str) -> Path:
    return GOLDEN / name / load(name)["fileName"]


@cache
def golden_bytes(name: str) -> bytes:
    return golden_path(name).read_bytes()


def first_difference(a: bytes, b: bytes) -> str:
    if len(a) != len(b):
        return f"length {len(a)} != {len(b)}"
    i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    return f"first differing byte at offset {i}: got {a[i]:#04x}, want {b[i]:#04x}"


def assert_golden_bytes(path: Path, name: str):
    got, want = path.read_bytes(), golden_bytes(name)
    assert got == want, first_difference(got, want)


@pytest.fixture(params=CASES)
def case(request):
    return request.param


def test_fixture_integrity(case):
    c = load(case)
    assert c["case"] == case
    assert hashlib.sha256(golden_bytes(case)).hexdigest() == c["fileSha256"]
    assert len(golden_bytes(case)) == c["fileSize"] == 40 + 4 * c["hashSlotNum"] + 20 * c["indexNum"]
    assert sorted(p.name for p in (GOLDEN / case).iterdir()) == sorted(["case.json", c["fileName"]])


# (a) ------------------------------------------------------------------- replay putKey calls


def test_put_key_replay(case, tmp_path):
    c = load(case)
    out = tmp_path / c["fileName"]
    f = IndexFile.create(out, hash_slot_num=c["hashSlotNum"], index_num=c["indexNum"],
                         end_phy_offset=c["constructorEndPhyOffset"],
                         end_timestamp=c["constructorEndTimestamp"])
    try:
        for i, p in enumerate(c["puts"]):
            got = f.put_key(p["key"], p["phyOffset"], p["storeTimestamp"])
            assert got is p["result"], f"put #{i} {p['key']!r}"
        assert f.is_write_full is c["isWriteFull"]
    finally:
        f.close()
    assert_golden_bytes(out, case)
    with IndexFile.open(out, c["hashSlotNum"], c["indexNum"]) as g:
        g.check()


# (b) -------------------------------------------------------------------------- bulk builders


def test_build_index_file(case, tmp_path):
    c = load(case)
    puts = c["puts"]
    out = tmp_path / c["fileName"]
    written = build_index_file(out, [p["key"] for p in puts], [p["phyOffset"] for p in puts],
                               [p["storeTimestamp"] for p in puts], hash_slot_num=c["hashSlotNum"],
                               index_num=c["indexNum"], end_phy_offset=c["constructorEndPhyOffset"],
                               end_timestamp=c["constructorEndTimestamp"])
    assert written == sum(p["result"] for p in puts)
    assert_golden_bytes(out, case)
    assert sorted(x.name for x in tmp_path.iterdir()) == [c["fileName"]]   # no temp file left


@pytest.mark.parametrize("kind", ["arrow", "numpy"])
def test_put_keys_bulk(case, kind, tmp_path):
    c = load(case)
    puts = c["puts"]
    keys = [p["key"] for p in puts]
    keys = pa.array(keys, pa.string()) if kind == "arrow" else np.array(keys, dtype=object)
    out = tmp_path / c["fileName"]
    with IndexFile.create(out, c["hashSlotNum"], c["indexNum"], c["constructorEndPhyOffset"],
                          c["constructorEndTimestamp"]) as f:
        written = f.put_keys(keys, np.array([p["phyOffset"] for p in puts], dtype=np.int64),
                             np.array([p["storeTimestamp"] for p in puts], dtype=np.int64))
        assert written == sum(p["result"] for p in puts)
        assert f.is_write_full is c["isWriteFull"]
    assert_golden_bytes(out, case)
    with IndexFile.open(out, c["hashSlotNum"], c["indexNum"]) as g:
        g.check()


# (c) -------------------------------------------------------------------------------- queries


def test_queries(case):
    c = load(case)
    with IndexFile.open(golden_path(case), hash_slot_num=c["hashSlotNum"], index_num=c["indexNum"]) as f:
        for i, q in enumerate(c["queries"]):
            args = (q["key"], q["maxNum"], q["begin"], q["end"])
            got = f.select_phy_offsets(*args)
            assert got == q["result"], f"query #{i} {args}"
            assert f.is_time_matched(q["begin"], q["end"]) is q["isTimeMatched"], f"query #{i}"
            t = f.trace_query(*args)
            assert t.results == q["result"], f"trace of query #{i}"
            assert sum(s.returned for s in t.steps) == len(q["result"])
            assert t.stop in ("empty-slot", "empty-file", "max-num", "end-of-chain", "older-than-begin")


def test_queries_batch(case):
    """select_phy_offsets_many (C) per (maxNum, begin, end) group equals the Java results."""
    c = load(case)
    groups: dict[tuple[int, int, int], list[dict]] = {}
    for q in c["queries"]:
        groups.setdefault((q["maxNum"], q["begin"], q["end"]), []).append(q)
    with IndexFile.open(golden_path(case), c["hashSlotNum"], c["indexNum"]) as f:
        for (max_num, begin, end), qs in groups.items():
            batch = f.select_phy_offsets_many([q["key"] for q in qs], max_num, begin, end)
            assert len(batch) == len(qs)
            for i, q in enumerate(qs):
                assert batch[i] == q["result"], (q["key"], max_num, begin, end)
            assert batch.phy_offsets.dtype == np.int64
            assert int(batch.starts[-1]) == sum(len(q["result"]) for q in qs)


# (d) --------------------------------------------------------------------------- header, check


def test_header_and_check(case):
    c = load(case)
    want = {py: c["header"][java] for java, py in HEADER_FIELDS}
    with IndexFile.open(golden_path(case), hash_slot_num=c["hashSlotNum"], index_num=c["indexNum"]) as f:
        assert f.header.as_dict() == want
        assert f.problems() == []
        f.check()
        assert f.is_write_full is c["isWriteFull"]
    assert read_header(golden_path(case)).as_dict() == want
    # the header's bytes, decoded independently of rmqlab
    assert struct.unpack_from(">qqqqii", golden_bytes(case), 0) == tuple(want[py] for _, py in HEADER_FIELDS)


def test_open_infers_geometry_from_one_count(case):
    c = load(case)
    for kwargs in ({"hash_slot_num": c["hashSlotNum"]}, {"index_num": c["indexNum"]}):
        with IndexFile.open(golden_path(case), **kwargs) as f:
            assert (f.geometry.hash_slot_num, f.geometry.index_num) == (c["hashSlotNum"], c["indexNum"])


# ------------------------------------------------------------------------- String.hashCode


def _hash_table():
    return json.loads((GOLDEN / "java_string_hashcode.json").read_text(encoding="utf-8"))["strings"]


def test_java_string_hashcode():
    items = _hash_table()
    assert len(items) > 10
    for item in items:
        s = item["string"]
        assert len(s.encode("utf-16-le", "surrogatepass")) // 2 == item["javaLength"], repr(s[:40])
        assert rmqlab.java_hash(s) == item["hashCode"], repr(s[:40])
        h = item["hashCode"]
        assert rmqlab.index_hash(s) == (0 if h == -(2**31) else abs(h))
    want = [item["hashCode"] for item in items]
    strings = [item["string"] for item in items]
    assert rmqlab.java_hash_many(strings).tolist() == want
    assert rmqlab.java_hash_many(np.array(strings, dtype=object)).tolist() == want
    assert rmqlab.java_hash_many(pa.array(strings, pa.string())).tolist() == want
    assert {-(2**31), 2**31 - 1, 0, -(2**31 - 1)} <= set(want)
