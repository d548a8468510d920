"""The command line: `rmqlab index info|query`, checked against the golden files' case.json
(written by RocketMQ's Java IndexFile) and against statistics recomputed here from the puts."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from reference_model import java_hash as jhash

from rmqlab.cli import main
from rmqlab.store.indexservice import IndexService

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "case.json").exists())
HEADER_NAMES = {"beginTimestamp": "begin_timestamp", "endTimestamp": "end_timestamp",
                "beginPhyOffset": "begin_phy_offset", "endPhyOffset": "end_phy_offset",
                "hashSlotCount": "hash_slot_count", "indexCount": "index_count"}
T0 = 1_718_000_000_000


def case(name):
    c = json.loads((GOLDEN / name / "case.json").read_text())
    c["path"] = GOLDEN / name / c["fileName"]
    c["geom"] = ["--hash-slot-num", str(c["hashSlotNum"]), "--index-num", str(c["indexNum"])]
    return c


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------- info


@pytest.mark.parametrize("name", CASES)
def test_info_json_matches_case(capsys, name):
    c = case(name)
    code, out, err = run(capsys, "index", "info", c["path"], *c["geom"], "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["header"] == {HEADER_NAMES[k]: v for k, v in c["header"].items()}
    assert info["geometry"]["file_size"] == c["fileSize"]
    assert info["is_write_full"] == c["isWriteFull"]
    assert info["invariants_ok"] and info["problems"] == []
    # chain statistics recomputed from the successful puts with an independent hash
    ok = [p["key"] for p in c["puts"] if p["result"]]
    slots = Counter((0 if jhash(k) == -(2**31) else abs(jhash(k))) % c["hashSlotNum"] for k in ok)
    assert info["keys"] == len(ok) == c["header"]["indexCount"] - 1
    assert info["occupied_slots"] == len(slots) == c["header"]["hashSlotCount"]
    assert info["occupied_slots_pct"] == pytest.approx(100 * len(slots) / c["hashSlotNum"])
    if ok:
        longest = max(slots.values())
        assert info["longest_chain"] == {"length": longest,
                                         "slot": min(s for s, n in slots.items() if n == longest)}
        assert info["mean_chain_length"] == pytest.approx(len(ok) / len(slots))
    else:
        assert info["longest_chain"] == {"length": 0, "slot": None}
        assert info["mean_chain_length"] is None
    span = info["time_span"]
    assert span["span_ms"] == c["header"]["endTimestamp"] - c["header"]["beginTimestamp"]


def test_info_human(capsys):
    c = case("basic")
    code, out, _ = run(capsys, "index", "info", c["path"], *c["geom"])
    assert code == 0
    assert "keys              170 of 199" in out
    assert "invariants        ok" in out
    assert f"begin_timestamp   {c['header']['beginTimestamp']}" in out


def test_python_m_rmqlab_index_info(tmp_path):
    c = case("fill_5000")
    rel = c["path"].relative_to(REPO)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "rmqlab", "index", "info", str(rel), *c["geom"], "--json"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["header"] == {HEADER_NAMES[k]: v for k, v in c["header"].items()}
    assert info["is_write_full"] is True


def test_info_reports_broken_invariants(tmp_path, capsys):
    c = case("basic")
    bad = tmp_path / c["fileName"]
    data = bytearray(c["path"].read_bytes())
    slot0 = 40
    data[slot0:slot0 + 4] = (150).to_bytes(4, "big")    # slot 0 now points at an entry of another slot
    bad.write_bytes(bytes(data))
    code, out, _ = run(capsys, "index", "info", bad, *c["geom"], "--json")
    assert code == 0
    info = json.loads(out)
    assert not info["invariants_ok"] and info["problems"]


# --------------------------------------------------------------------------------- query


def test_query_file_matches_java(capsys):
    c = case("basic")
    checked = 0
    for q in c["queries"]:
        if "#" not in q["key"] or q["maxNum"] < 0:
            continue
        topic, key = q["key"].split("#", 1)
        code, out, err = run(capsys, "index", "query", c["path"], *c["geom"], "--topic", topic,
                             "--key", key, "--max", q["maxNum"], "--begin", q["begin"], "--end", q["end"],
                             "--json")
        assert code == 0, err
        r = json.loads(out)
        assert r["phy_offsets"] == q["result"]
        assert r["is_time_matched"] == q["isTimeMatched"]
        checked += 1
    assert checked > 50


@pytest.mark.parametrize("name", CASES)
def test_query_without_topic_looks_up_the_key_as_stored(tmp_path, capsys, name):
    """Java's own IndexFile calls put raw keys (some without a '#'); without --topic the key is
    looked up as given, in one file and in a folder."""
    c = case(name)
    folder = tmp_path / "index"
    folder.mkdir()
    shutil.copyfile(c["path"], folder / c["path"].name)
    checked = 0
    queries = [q for q in c["queries"] if q["maxNum"] >= 0]
    # every raw key (no '#'), and a few topic#key ones typed whole
    queries = [q for q in queries if "#" not in q["key"]] + [q for q in queries if "#" in q["key"]][:8]
    for q in queries:
        common = ["--key", q["key"], "--max", q["maxNum"], "--begin", q["begin"], "--end", q["end"], "--json"]
        code, out, err = run(capsys, "index", "query", c["path"], *c["geom"], *common)
        assert code == 0, err
        r = json.loads(out)
        assert r["key"] == q["key"] and r["phy_offsets"] == q["result"]
        if q["maxNum"] <= 64 and q["isTimeMatched"]:
            code, out, err = run(capsys, "index", "query", folder, *c["geom"], *common)
            assert code == 0, err
            assert json.loads(out)["phy_offsets"] == q["result"]
        checked += 1
    assert checked == len(queries)


def test_query_file_trace(capsys):
    c = case("collisions")
    q = next(q for q in c["queries"] if len(q["result"]) > 1 and "#" in q["key"])
    topic, key = q["key"].split("#", 1)
    args = ["index", "query", c["path"], *c["geom"], "--topic", topic, "--key", key,
            "--max", q["maxNum"], "--begin", q["begin"], "--end", q["end"], "--trace"]
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0
    t = json.loads(out)["trace"]
    assert t["results"] == q["result"]
    assert sum(s["returned"] for s in t["steps"]) == len(q["result"])
    code, out, _ = run(capsys, *args)
    assert code == 0 and "stopped:" in out and f"{len(q['result'])} offsets" in out


def build_dir(tmp_path):
    clock = iter(range(T0, T0 + 10**6, 1000)).__next__
    with IndexService(tmp_path, 8, 4, read_only=False, clock=clock, tz=dt.UTC) as svc:
        for i in range(10):
            svc.put_message("T", 100 * i, T0 + 1000 * i, keys="k other", uniq_key=f"ID{i}")
    return IndexService(tmp_path, 8, 4)


def test_query_directory(tmp_path, capsys):
    with build_dir(tmp_path) as svc:
        want = svc.query_offset("T", "k", 5, T0 + 2000, T0 + 8000)
        want_id = svc.query_unique_key("T", "ID3")
        n = len(svc)
    assert n == 10
    geom = ["--hash-slot-num", 8, "--index-num", 4]
    code, out, err = run(capsys, "index", "query", tmp_path, *geom, "--topic", "T", "--key", "k",
                         "--max", 5, "--begin", T0 + 2000, "--end", T0 + 8000, "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["phy_offsets"] == want.phy_offsets == [800, 700, 600, 500, 400]
    assert r["index_last_update_phyoffset"] == want.index_last_update_phyoffset == 900
    assert r["files"] == 10
    code, out, _ = run(capsys, "index", "query", tmp_path, *geom, "--topic", "T", "--key", "ID3",
                       "--unique-key", "--json")
    assert json.loads(out)["phy_offsets"] == want_id.phy_offsets == [300]
    code, out, _ = run(capsys, "index", "query", tmp_path, *geom, "--topic", "T", "--key", "k",
                       "--begin", T0 + 2000, "--trace", "--json")
    t = json.loads(out)["trace"]
    assert t["stop"] == "older-than-begin"
    assert [f["action"] for f in t["files"]][:2] == ["searched", "searched"]
    code, out, _ = run(capsys, "index", "query", tmp_path, *geom, "--topic", "T", "--key", "k", "--trace")
    assert code == 0 and "searched" in out and "index last update" in out


# --------------------------------------------------------------------------- exit status


def test_errors_and_usage(tmp_path, capsys):
    c = case("basic")
    # wrong geometry: a typed GeometryError -> 1, message on stderr, no traceback
    code, out, err = run(capsys, "index", "info", c["path"], "--hash-slot-num", 63, "--index-num", 200)
    assert code == 1 and out == "" and "need 40 + 4*63" in err and "Traceback" not in err
    code, _, err = run(capsys, "index", "info", c["path"])          # non-default size, no geometry
    assert code == 1 and "pass --hash-slot-num or --index-num" in err  # flags, not Python names
    code, _, err = run(capsys, "index", "info", tmp_path / "missing")
    assert code == 3 and err == f"rmqlab: error: {tmp_path / 'missing'}: no such file or directory\n"
    # a corrupt header refuses a query (strict open) -> CorruptIndexError -> 1
    bad = tmp_path / "20240610061524062"
    data = bytearray(c["path"].read_bytes())
    data[36:40] = (500).to_bytes(4, "big")                           # index_count > index_num
    bad.write_bytes(bytes(data))
    code, _, err = run(capsys, "index", "query", bad, *c["geom"], "--topic", "T", "--key", "k")
    assert code == 1 and "index_count 500" in err
    # usage errors -> 2
    assert run(capsys, "index", "query", c["path"], *c["geom"], "--topic", "T")[0] == 2   # --key missing
    assert run(capsys, "index", "query", c["path"], *c["geom"], "--topic", "T", "--key", "k",
               "--max", -1)[0] == 2
    assert run(capsys, "index", "info", c["path"], "--index-num", 0)[0] == 2
    assert run(capsys, "index", "query", c["path"], *c["geom"], "--topic", "T", "--key", "k",
               "--unique-key")[0] == 2
    assert run(capsys, "bogus")[0] == 2
    assert run(capsys, "--help")[0] == 0


def test_query_empty_directory(tmp_path, capsys):
    code, out, _ = run(capsys, "index", "query", tmp_path, "--topic", "T", "--key", "k", "--json")
    assert code == 0
    assert json.loads(out)["phy_offsets"] == [] and json.loads(out)["files"] == 0


def test_query_directory_of_golden_file(tmp_path, capsys):
    c = case("time_ranges")
    shutil.copy(c["path"], tmp_path / c["fileName"])
    q = next(q for q in c["queries"] if q["isTimeMatched"] and q["result"] and 0 < q["maxNum"] <= 64)
    topic, key = q["key"].split("#", 1)
    code, out, _ = run(capsys, "index", "query", tmp_path, *c["geom"], "--topic", topic, "--key", key,
                       "--max", q["maxNum"], "--begin", q["begin"], "--end", q["end"], "--json")
    assert code == 0 and json.loads(out)["phy_offsets"] == q["result"]
