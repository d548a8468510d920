"""The questions mqadmin answers online, asked offline of a generated store: `rmqlab store query`
by message id, queue offset, time and tag, and `rmqlab store messages` (printMsg), against a
model read straight from the CommitLog with the standard library (struct, the record layout of
CommitLog.calMsgLength / MessageDecoder at rocketmq-all-4.9.7: IPv4 hosts, magic v1)."""
from __future__ import annotations

import base64
import datetime
import json
import sys
import textwrap

import pytest
from commitlog_stdlib import read_commitlog

from rmqlab.cli import main

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("q") / "store"
    assert main(["store", "generate", str(root), "--messages", "600", "--seed", "3", "--topics", "A,B",
                 "--rate", "200", "--hash-slot-num", "64", "--index-num", "1024", "--commitlog-file-size",
                 "65536", "--json"]) == 0
    return root


@pytest.fixture(scope="module")
def model(store):
    """Every message as the standard-library reader reads the CommitLog: one dict each."""
    return read_commitlog(store / "commitlog")


def rows(capsys, *argv) -> list[dict]:
    assert main([*argv, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def utc(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_sizes_come_from_the_files_and_are_said(store, capsys):
    """No size and no count is passed: the CommitLog's 64 KiB and the index files' 64 slots
    are read from the files, and said on stderr."""
    got = rows(capsys, "store", "query", str(store), "--topic", "A", "--begin", "0")
    assert got
    assert main(["store", "query", str(store), "--topic", "A", "--offset", "0", "--queue-id", "0"]) == 0
    err = capsys.readouterr().err
    assert "mappedFileSizeCommitLog=65536" in err and "maxHashSlotNum=64" in err


def test_a_time_range_in_any_zone_is_the_messages_stored_then(store, model, capsys):
    a = sorted((m for m in model if m["topic"] == "A"), key=lambda m: m["store_timestamp"])
    begin, end = a[len(a) // 3]["store_timestamp"], a[2 * len(a) // 3]["store_timestamp"]
    want = sorted(m["phy_offset"] for m in a if begin <= m["store_timestamp"] <= end)
    zoned = datetime.datetime.fromtimestamp(begin / 1000, datetime.timezone(datetime.timedelta(hours=-5)))
    mqadmin = datetime.datetime.fromtimestamp(end / 1000, datetime.UTC).strftime("%Y-%m-%d#%H:%M:%S:%f")[:-3]
    for b, e in ((str(begin), str(end)), (zoned.isoformat(timespec="milliseconds"), mqadmin)):
        got = rows(capsys, "store", "query", str(store), "--topic", "A", "--begin", b, "--end", e, "--mode", "verified")
        assert sorted(r["phy_offset"] for r in got) == want
        assert all(r["store_time"] == utc(r["store_timestamp"]) for r in got)
    assert main(["store", "query", str(store), "--topic", "A", "--begin", "yesterday"]) == 2
    assert "is not a time" in capsys.readouterr().err


def test_message_ids_queue_offsets_and_tags(store, model, capsys):
    m = next(x for x in model if x["topic"] == "B" and x["properties"].get("UNIQ_KEY"))
    host = bytes(int(p) for p in m["store_host"].split(":")[0].split(".")) + int(
        m["store_host"].split(":")[1]).to_bytes(4, "big")
    offset_id = (host + m["phy_offset"].to_bytes(8, "big")).hex().upper()
    for ask in (["--msg-id", offset_id], ["--msg-id", m["properties"]["UNIQ_KEY"], "--topic", "B"]):
        got = rows(capsys, "store", "query", str(store), *ask)
        assert [r["phy_offset"] for r in got] == [m["phy_offset"]] and got[0]["msg_id"] == offset_id
    assert main(["store", "query", str(store), "--msg-id", m["properties"]["UNIQ_KEY"]]) == 2   # a UNIQ_KEY: --topic
    assert "pass --topic" in capsys.readouterr().err
    got = rows(capsys, "store", "query", str(store), "--topic", m["topic"], "--queue-id", str(m["queue_id"]),
               "--offset", str(m["queue_offset"]))
    assert [r["phy_offset"] for r in got] == [m["phy_offset"]]
    tags = sorted({x["properties"].get("TAGS") for x in model if x["topic"] == "A"} - {None})
    want = sorted(x["phy_offset"] for x in model if x["topic"] == "A" and x["properties"].get("TAGS") in tags[:2])
    got = rows(capsys, "store", "query", str(store), "--topic", "A", "--tags", f"{tags[0]} || {tags[1]}",
               "--mode", "verified")
    assert sorted(r["phy_offset"] for r in got) == want


def test_print_msg_bodies_limits_and_counts(store, model, tmp_path, capsys, monkeypatch):
    a = sorted((m for m in model if m["topic"] == "A"), key=lambda m: (m["queue_id"], m["queue_offset"]))
    got = rows(capsys, "store", "messages", str(store), "--topic", "A", "--mode", "verified", "--body", "base64")
    assert [(r["queue_id"], r["queue_offset"]) for r in got] == [(m["queue_id"], m["queue_offset"]) for m in a]
    assert [base64.b64decode(r["body"]) for r in got] == [m["body"] for m in a]
    got = rows(capsys, "store", "messages", str(store), "--topic", "A", "--body", "hex", "--queue-id", "1")
    assert [bytes.fromhex(r["body"]) for r in got] == [m["body"] for m in a if m["queue_id"] == 1]
    # --max-bytes: the queues in order, whole messages while their stored sizes fit
    budget = sum(m["total_size"] for m in a[:7]) + 5
    got = rows(capsys, "store", "messages", str(store), "--topic", "A", "--max-bytes", str(budget))
    assert [r["phy_offset"] for r in got] == [m["phy_offset"] for m in a[:7]]
    # a decoder by import path; one that raises shows the bytes, not a traceback
    (tmp_path / "mydecoders.py").write_text(textwrap.dedent("""
        def length(data):
            return {"bytes": len(data)}
        def broken(data):
            raise RuntimeError("no schema")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    got = rows(capsys, "store", "messages", str(store), "--topic", "A", "--decoder", "mydecoders:length")
    assert [r["body"] for r in got] == [{"bytes": len(m["body"])} for m in a]
    got = rows(capsys, "store", "messages", str(store), "--topic", "A", "--decoder", "mydecoders:broken")
    assert {r["body_error"] for r in got} == {"decoder: RuntimeError: no schema"}
    assert main(["store", "messages", str(store), "--topic", "A", "--decoder", "nosuchmodule:f"]) == 2
    capsys.readouterr()
    got = rows(capsys, "store", "messages", str(store), "--topic", "A", "--count-by-tag")
    want: dict = {}
    for m in a:
        key = (m["queue_id"], m["properties"].get("TAGS") or "")
        want[key] = want.get(key, 0) + 1
    assert {(r["queue_id"], r["tags"]): r["messages"] for r in got} == want
    sys.modules.pop("mydecoders", None)


def test_info_keeps_going_past_a_damaged_file(store, model, tmp_path, capsys):
    """A MAGICCODE overwritten in the second CommitLog file: `store info` stops (exit 1, the
    file and offset named); with --keep-going it counts every message outside the damaged
    file's rest, names the damage, and exits 1."""
    import shutil

    copy = tmp_path / "s"
    shutil.copytree(store, copy)
    files = sorted((copy / "commitlog").iterdir())
    second = files[1]
    in_second = [m for m in model if m["phy_offset"] // 65536 == int(second.name) // 65536]
    victim = in_second[len(in_second) // 2]
    pos = victim["phy_offset"] - int(second.name)
    data = bytearray(second.read_bytes())
    data[pos + 4:pos + 8] = b"\x00\x00\x00\x01"
    second.write_bytes(bytes(data))
    assert main(["store", "info", str(copy)]) == 1
    err = capsys.readouterr().err
    assert str(second) in err and f"offset {pos}" in err
    assert main(["store", "info", str(copy), "--keep-going", "--json"]) == 1
    out = capsys.readouterr()
    info = json.loads(out.out)
    lost = [m for m in in_second if m["phy_offset"] >= victim["phy_offset"]]
    assert info["messages"] == len(model) - len(lost)
    assert [(d["path"], d["offset"]) for d in info["commitlog_damage"]] == [(str(second), pos)]
    assert f"{second}: offset {pos}" in out.err
