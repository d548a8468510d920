"""`rmqlab capacity example|estimate|report` through rmqlab.cli.main: the example plan loads
back, the numbers printed are the library's, and bad plans exit 2 naming the field."""
from __future__ import annotations

import json
import math
import re
import tomllib

import pytest

from rmqlab.capacity import EXAMPLE_PLAN_TOML, estimate, load_plan, parse_plan
from rmqlab.capacity.analysis import report_json
from rmqlab.capacity.model import OUTPUTS
from rmqlab.cli import main


@pytest.fixture
def plan_file(tmp_path, capsys):
    assert main(["capacity", "example"]) == 0
    path = tmp_path / "plan.toml"
    path.write_text(capsys.readouterr().out)
    return path


def finite_or_none(d: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def test_example_prints_the_commented_plan_which_loads_back(plan_file, capsys):
    text = plan_file.read_text()
    assert text == EXAMPLE_PLAN_TOML
    plan = load_plan(plan_file)
    assert plan == parse_plan(tomllib.loads(text))
    assert plan.traffic.messages_per_second.low < plan.traffic.messages_per_second.high   # it has intervals
    assert [c.name for c in plan.compare] and "# " in text and "fileReservedTime" in text
    assert capsys.readouterr().err == ""


def test_estimate_json_is_the_library_estimate(plan_file, capsys):
    assert main(["capacity", "estimate", str(plan_file), "--json", "--fast"]) == 0
    out = capsys.readouterr()
    d = json.loads(out.out)
    plan = load_plan(plan_file)
    assert d["point"] == "likely" and d["name"] == plan.name
    assert d["estimate"] == finite_or_none(estimate(plan).as_dict())
    assert out.err == ""
    assert main(["capacity", "estimate", str(plan_file), "--json", "--point", "high", "--fast"]) == 0
    assert json.loads(capsys.readouterr().out)["estimate"] == finite_or_none(estimate(plan, "high").as_dict())


def test_without_fast_the_sample_is_whole_files(tmp_path, capsys):
    # a geometry too large for several whole files in the fast budget, small enough for a test
    path = tmp_path / "plan.toml"
    path.write_text('[index]\nhash_slot_num = 60000\nindex_num = 240000\n'
                    '[keys]\nuniq_key = false\nhot_key_fraction = 0.9\ncardinality = 200\n')
    plan = load_plan(path)
    assert main(["capacity", "estimate", str(path), "--json"]) == 0
    out = capsys.readouterr()
    whole = estimate(plan, whole_files=True)
    assert json.loads(out.out)["estimate"] == finite_or_none(whole.as_dict())
    assert "hashing a whole index file of 239,999 sampled keys" in out.err
    assert whole.sample.scale == 1.0 and estimate(plan).sample.scale < 1.0
    assert main(["capacity", "report", str(path), "--json", "--samples", "50"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["estimate"]["occupancy"] == whole.occupancy
    assert "[1/1] this plan: 60,000 slots x 240,000 entries, whole files" in out.err


def test_estimate_text_is_a_table_of_every_output(plan_file, capsys):
    assert main(["capacity", "estimate", str(plan_file), "--fast"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# ")
    rows = {line.split()[0]: line.split(None, 1)[1] for line in lines[1:]}
    assert list(rows) == list(OUTPUTS)
    e = estimate(load_plan(plan_file))
    assert rows["index_files_on_disk"] == f"{e.index_files_on_disk:,}"
    assert rows["index_disk_bytes"] == f"{e.index_disk_bytes / 2**30:,.2f} GiB"
    assert rows["hours_to_fill_index_file"] == f"{e.hours_to_fill_index_file:.2f} h"


def test_report_writes_html_and_prints_json(plan_file, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["capacity", "report", str(plan_file), "--out", str(out), "--samples", "200", "--seed", "7",
                 "--json", "--fast"]) == 0
    printed = capsys.readouterr()
    d = json.loads(printed.out)
    assert d == json.loads(json.dumps(report_json(load_plan(plan_file), samples=200, seed=7)))
    assert d["samples"] == 200 and d["seed"] == 7
    assert f"\nwrote {out} (" in printed.err and d["recommendation"]["text"] in printed.err
    assert printed.err.startswith("rmqlab: [1/3] this plan: 5,000,000 slots x 20,000,000 entries, sampled files")
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count('<img alt="') == 6
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 6
    # HTML only: nothing on stdout
    assert main(["capacity", "report", str(plan_file), "--out", str(tmp_path / "b.html"), "--samples", "50",
                 "--fast"]) == 0
    assert capsys.readouterr().out == "" and (tmp_path / "b.html").stat().st_size > 10_000


def test_report_needs_an_output(plan_file, capsys):
    assert main(["capacity", "report", str(plan_file)]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["capacity", "report", str(plan_file), "--json", "--samples", "0"]) == 2
    assert "--samples" in capsys.readouterr().err


BAD_PLANS = [
    # (TOML, the field the message must start with)
    ("[traffic]\nmessages_per_second = -5\n", "traffic.messages_per_second"),
    ("[traffic]\nmessages_per_second = {low = -5, likely = 10, high = 20}\n", "traffic.messages_per_second.low"),
    ("[retention]\nfile_reserved_time_hours = 0\n", "retention.file_reserved_time_hours"),
    ("[index]\nhash_slot_num = 5000000\nindex_num = 4000000\n", "index.index_num"),
    ("[[compare]]\nname = 'x'\nhash_slot_num = 100\nindex_num = 50\n", "compare[0].index_num"),
    ("[traffic]\nmessages_per_secnd = 1000\n", "traffic.messages_per_secnd"),
    ("[trafic]\nmessages_per_second = 1000\n", "trafic"),
    ("[traffic\n", "toml"),
]


@pytest.mark.parametrize("command", ["estimate", "report"])
@pytest.mark.parametrize("toml,field", BAD_PLANS, ids=[f for _, f in BAD_PLANS])
def test_bad_plans_exit_2_naming_the_field(tmp_path, capsys, command, toml, field):
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    out = tmp_path / "report.html"
    extra = ["--out", str(out)] if command == "report" else []
    assert main(["capacity", command, str(path), *extra]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and not out.exists()
    assert printed.err.startswith(f"rmqlab: error: {field}:"), printed.err
    assert "Traceback" not in printed.err and printed.err.count("\n") == 1


def test_a_missing_plan_file_is_a_file_error(tmp_path, capsys):
    assert main(["capacity", "estimate", str(tmp_path / "none.toml")]) == 3
    assert "none.toml" in capsys.readouterr().err


def test_the_capacity_group_is_listed_in_help(capsys):
    assert main(["capacity", "--help"]) == 0
    text = capsys.readouterr().out
    assert all(c in text for c in ("report", "estimate", "example"))
