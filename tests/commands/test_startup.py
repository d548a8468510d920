"""The command line starts at once: `rmqlab --help`, every group's and command's --help, and
`rmqlab index info` run in a fresh interpreter without the heavy libraries (pandas, PyArrow,
Matplotlib, Spark, ipywidgets); `rmqlab store query` answers broker mode on the broker's path
(`Store.query_by_key`, not `Store.explain_key`); the constants the parsers show agree with the
library's. Timings: benchmarks/bench_cli.py."""
from __future__ import annotations

import datetime
import importlib
import json
import subprocess
import sys
import textwrap

import pytest

import rmqlab.cli as cli
from rmqlab.commands import defaults

HEAVY = ("pandas", "pyarrow", "matplotlib", "pyspark", "ipywidgets")

#: Runs `python -m rmqlab ARGV` (rmqlab/__main__.py, as runpy runs it) for each argv of a JSON
#: list in one fresh interpreter, then writes the exit statuses and sys.modules as JSON. With
#: "ALL_LEAVES" after a group's name, every command of the group is asked for its --help too.
_WRAPPER = textwrap.dedent("""
    import json, runpy, sys
    out, argvs = sys.argv[1], json.loads(sys.argv[2])
    codes = []

    def run(argv):
        sys.argv = ["rmqlab", *argv]
        try:
            runpy.run_module("rmqlab", run_name="__main__", alter_sys=True)
            codes.append(0)
        except SystemExit as e:
            codes.append(e.code)

    for argv in argvs:
        if argv and argv[-1] == "ALL_LEAVES":
            import argparse
            from rmqlab.cli import _parser
            group = _parser(argv[:1])._subparsers._group_actions[0].choices[argv[0]]
            subs = [a for a in group._actions if isinstance(a, argparse._SubParsersAction)]
            leaves = list(subs[0].choices) if subs else []
            for leaf in leaves:
                run([argv[0], leaf, "--help"])
            codes.append(leaves)
        else:
            run(argv)
    with open(out, "w") as f:
        json.dump({"codes": codes, "modules": sorted(sys.modules)}, f)
""")


def fresh_run(tmp_path, *argvs: list[str]) -> dict:
    """Exit statuses and the modules imported by the command lines `argvs`, run one after the
    other in a new interpreter (working folder `tmp_path`, so the checkout is not on sys.path)."""
    out = tmp_path / "run.json"
    p = subprocess.run([sys.executable, "-c", _WRAPPER, str(out), json.dumps([list(map(str, a)) for a in argvs])],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    result = json.loads(out.read_text())
    result["stdout"] = p.stdout
    return result


def heavy(modules: list[str]) -> list[str]:
    """The heavy top-level packages among `modules`."""
    return sorted({m.partition(".")[0] for m in modules} & set(HEAVY))


@pytest.mark.parametrize("argv", [["--help"], []], ids=["help", "no-args"])
def test_top_level_help_imports_nothing_heavy_nor_any_group(tmp_path, argv):
    r = fresh_run(tmp_path, argv)
    assert r["codes"] == [0 if argv else 2]
    assert heavy(r["modules"]) == []
    assert "numpy" not in r["modules"]          # not even NumPy: no group module is imported
    assert not any(m.startswith("rmqlab.commands.") for m in r["modules"])
    if argv:
        assert "usage: rmqlab" in r["stdout"] and all(g in r["stdout"] for g in cli.COMMAND_GROUPS)


@pytest.mark.parametrize("group", list(cli.COMMAND_GROUPS))
def test_group_help_and_every_command_help_import_nothing_heavy(tmp_path, group):
    r = fresh_run(tmp_path, [group, "--help"], [group, "ALL_LEAVES"])
    *codes, leaves = r["codes"]
    assert codes == [0] * (1 + len(leaves))
    assert group == "verify" or leaves       # verify is a command itself; the others have commands
    assert heavy(r["modules"]) == []


def test_index_info_imports_no_pandas(tmp_path):
    from rmqlab.formats.indexfile import build_index_file

    path = tmp_path / "20240610061524062"
    build_index_file(path, ["T#a", "T#b", "T#a"], [0, 200, 400], [1000, 2000, 5000], hash_slot_num=7, index_num=30)
    r = fresh_run(tmp_path, ["index", "info", path, "--hash-slot-num", "7", "--index-num", "30", "--json"])
    assert r["codes"] == [0]
    assert json.loads(r["stdout"])["keys"] == 3
    assert heavy(r["modules"]) == []


def test_the_check_sees_a_heavy_import(tmp_path):
    # `store info` needs pandas (rmqlab.store.directory): the wrapper must report it, even for a
    # command that then fails (exit 1: no such store)
    r = fresh_run(tmp_path, ["store", "info", tmp_path / "nowhere"])
    assert r["codes"] == [3]      # bad input: no such store
    assert "pandas" in heavy(r["modules"])


def test_import_rmqlab_loads_its_names_on_first_use(tmp_path):
    code = ("import sys, rmqlab; before = 'numpy' in sys.modules; "
            "names = [getattr(rmqlab, n) for n in rmqlab.__all__]; "
            "print(before, 'numpy' in sys.modules, sorted(set(rmqlab.__all__) - set(dir(rmqlab))))")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["False", "True", "[]"]
    import rmqlab

    with pytest.raises(AttributeError, match="no_such_name"):
        rmqlab.no_such_name  # noqa: B018


# -- what the parsers show agrees with the library ------------------------------------------


@pytest.mark.parametrize("name", sorted(defaults.SOURCES))
def test_parser_defaults_are_the_library_values(name):
    module, attr = defaults.SOURCES[name].split(":")
    assert getattr(defaults, name) == getattr(importlib.import_module(module), attr)


def test_group_help_lines_are_those_the_groups_register():
    full = cli._parser()                    # every group registered by its module
    listed = {a.dest: a.help for a in full._subparsers._group_actions[0]._choices_actions}
    assert listed == {name: help_text for name, (_, help_text) in cli.COMMAND_GROUPS.items()}
    assert cli._parser([]).format_help() == full.format_help()      # the help without importing them
    assert cli._parser(["index"]).format_help() == full.format_help()


def test_named_group():
    assert cli._named_group(["-v", "store", "query", "x"]) == "store"
    assert cli._named_group(["--help"]) is None
    assert cli._named_group(["--", "index"]) == "index"


# -- store query: broker mode takes the broker's path ---------------------------------------

GEO = ["--hash-slot-num", "64", "--index-num", "1024", "--commitlog-file-size", "65536"]


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("startup") / "store"
    assert cli.main(["store", "generate", str(d), *GEO, "--messages", "1500", "--seed", "3", "--topics", "A,B",
                     "--collision-pairs", "2", "--json"]) == 0
    return d


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_store_query_broker_mode_does_not_explain(small_store, capsys, monkeypatch):
    from rmqlab.commands.store import RESULT_COLUMNS
    from rmqlab.store.directory import Store

    s = Store(small_store, hash_slot_num=64, index_num=1024, commitlog_file_size=65536)
    msgs = s.messages()
    key = msgs[msgs["topic"] == "A"]["keys"].dropna().str.split(" ").explode().value_counts().index[0]
    uniq = msgs[msgs["topic"] == "A"]["uniq_key"].dropna().iloc[0]
    want = s.query_by_key("A", key)
    want_uniq = s.query_by_unique_key("A", uniq)
    assert len(want) > 1 and len(want_uniq) == 1

    calls = []
    real_explain = Store.explain_key

    def spy(self, *a, **k):
        calls.append(a)
        return real_explain(self, *a, **k)

    monkeypatch.setattr(Store, "explain_key", spy)
    argv = ["store", "query", str(small_store), *GEO, "--topic", "A"]
    assert cli.main([*argv, "--key", key, "--json"]) == 0
    rows = _rows(capsys.readouterr().out)
    # the answer, no explanation; each store time also as UTC text
    utc = [datetime.datetime.fromtimestamp(int(t) / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
           for t in want["store_timestamp"]]
    assert [{k: v for k, v in r.items() if k != "store_time"} for r in rows] == json.loads(
        want[RESULT_COLUMNS].to_json(orient="records")) and [r["store_time"] for r in rows] == utc
    assert cli.main([*argv, "--key", uniq, "--unique-key", "--json"]) == 0
    assert [{k: v for k, v in r.items() if k != "store_time"} for r in _rows(capsys.readouterr().out)] == json.loads(
        want_uniq[RESULT_COLUMNS].to_json(orient="records"))
    assert cli.main([*argv, "--key", key]) == 0
    table = want[RESULT_COLUMNS].copy()
    table.insert(table.columns.get_loc("store_timestamp") + 1, "store_time", utc)
    assert capsys.readouterr().out == table.to_string(index=False) + "\n"
    assert calls == []

    # --explain and verified mode still explain, and broker mode's rows are the same
    assert cli.main([*argv, "--key", key, "--json", "--explain"]) == 0
    *explained, explanation = _rows(capsys.readouterr().out)
    assert explained == rows and set(explanation) == {"summary", "problems", "trace"}
    assert cli.main([*argv, "--key", key, "--json", "--mode", "verified"]) == 0
    assert all(r["broker_returned"] in (True, False) for r in _rows(capsys.readouterr().out))
    assert len(calls) == 2
