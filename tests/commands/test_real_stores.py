"""Every real RocketMQ store in the shared real data, asked as an engineer asks it: no option at
all. The directories are enumerated, never listed here: a new one is read the day it appears.

Truth: a standard-library walk of each store's CommitLog files (tests/commands/test_store_questions.py's
reader: struct over the v1 record layout; a store it cannot read fails here until it can), and
the file names and sizes themselves for the settings."""
from __future__ import annotations

import json

import oracles
import pytest
from commitlog_stdlib import read_commitlog

from rmqlab.cli import main

REAL = oracles.REAL_DATA / "rocketmq"


def _stores() -> list[str]:
    if not REAL.is_dir():
        return ["(real data missing)"]
    return sorted(d.name for d in REAL.iterdir() if d.is_dir() and (d / "commitlog").is_dir())


@pytest.mark.parametrize("name", _stores())
def test_store_info_with_no_option_reads_the_real_store(name, capsys):
    root = oracles.require_real_data(f"rocketmq/{name}")
    assert main(["store", "info", str(root), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    files = sorted(p for p in (root / "commitlog").iterdir() if p.is_file())
    assert info["messages"] == len(read_commitlog(root / "commitlog"))
    starts = [int(p.name) for p in files]
    steps = {b - a for a, b in zip(starts, starts[1:], strict=False)}
    told = info["settings"]["mappedFileSizeCommitLog"]
    assert told["source"] == "files"
    assert told["value"] == (min(steps) if steps else files[0].stat().st_size)
    # every message id the CommitLog names leads back to its message
    first = read_commitlog(root / "commitlog")[0]
    assert main(["store", "query", str(root), "--msg-id", _offset_id(first), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["phy_offset"] for r in rows] == [first["phy_offset"]]


def _offset_id(m: dict) -> str:
    ip, port = m["store_host"].split(":")
    return (bytes(int(x) for x in ip.split(".")) + int(port).to_bytes(4, "big")
            + m["phy_offset"].to_bytes(8, "big")).hex().upper()
