"""The core install: rmqlab built from this source tree into a fresh virtual environment with
only its core dependencies (NumPy, pandas, PyArrow) reads index files, and a command that
needs an extra says which one to install instead of failing with a traceback.

The package is built from a copy of the sources in a temporary folder (setuptools writes
build/ and *.egg-info beside the sources it builds) and installed with uv when this Python has
it, else pip; both fetch the build tools and the core dependencies from PyPI (uv from its cache
when warm: 15-40 s in all on two busy cores, mostly compiling the C extensions). Deselect
with ``-m "not install"`` where PyPI is out of reach.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rmqlab.cli import main
from rmqlab.extras import EXTRAS

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "data" / "golden" / "basic"
# What a source distribution holds: the build files and the package (no compiled objects).
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "rmqlab")
# Modules of the extras (and of what they bring) that a core install must not have.
EXTRA_MODULES = ("pyspark", "matplotlib", "ipywidgets", "IPython", "jupyterlab", "voila")
HEADER_NAMES = {"beginTimestamp": "begin_timestamp", "endTimestamp": "end_timestamp",
                "beginPhyOffset": "begin_phy_offset", "endPhyOffset": "end_phy_offset",
                "hashSlotCount": "hash_slot_count", "indexCount": "index_count"}


def test_extras_named_by_the_helper_are_those_of_pyproject():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) == set(extras) - {"dev"}


def _has_uv() -> bool:
    return subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True).returncode == 0


def _copy_sources(dest: Path) -> Path:
    dest.mkdir()
    for name in SOURCES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
        else:
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory) -> Path:
    """A fresh virtual environment with rmqlab and its core dependencies only; its bin/ folder."""
    tmp = tmp_path_factory.mktemp("core-install")
    venv = tmp / "venv"
    uv = _has_uv()
    # Run from inside a virtual environment, venv bases the new one on the same interpreter.
    subprocess.run([sys.executable, "-m", "venv", *(["--without-pip"] if uv else []), str(venv)], check=True)
    python = venv / "bin" / "python"
    before = sorted(os.listdir(REPO))
    sources = _copy_sources(tmp / "src")
    if uv:
        command = [sys.executable, "-m", "uv", "pip", "install", "--python", str(python), str(sources)]
    else:
        command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", str(sources)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    p = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp, timeout=600)
    assert p.returncode == 0, f"installing the core package failed:\n{p.stdout}\n{p.stderr}"
    assert sorted(os.listdir(REPO)) == before, "the build wrote into the source tree"
    return venv / "bin"


def _run(bin_dir: Path, *argv: str) -> subprocess.CompletedProcess:
    # Away from the source tree and without PYTHONPATH, so that only the installed copy is found;
    # bytecode written (into the temporary environment), so that pandas is compiled only once.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env,
                          cwd=bin_dir.parent, timeout=120)


@pytest.mark.install
def test_core_install_imports_rmqlab_without_any_extra(core_venv):
    p = _run(core_venv, core_venv / "python", "-c",
             "import importlib.util, json, rmqlab, rmqlab.cli, rmqlab._jhash\n"
             f"print(json.dumps({{'file': rmqlab.__file__, 'present': [m for m in {EXTRA_MODULES!r} "
             "if importlib.util.find_spec(m)]}))")
    assert p.returncode == 0, p.stderr
    found = json.loads(p.stdout)
    assert Path(found["file"]).is_relative_to(core_venv.parent)
    assert found["present"] == []


@pytest.mark.install
def test_core_install_runs_index_info_on_a_golden_file(core_venv, capsys):
    case = json.loads((GOLDEN / "case.json").read_text())
    argv = ["index", "info", str(GOLDEN / case["fileName"]), "--hash-slot-num", str(case["hashSlotNum"]),
            "--index-num", str(case["indexNum"]), "--json"]
    p = _run(core_venv, core_venv / "rmqlab", *argv)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["header"] == {HEADER_NAMES[k]: v for k, v in case["header"].items()}
    assert main(argv) == 0
    assert info == json.loads(capsys.readouterr().out)


@pytest.mark.install
def test_core_install_help_works_for_every_command_group(core_venv):
    p = _run(core_venv, core_venv / "rmqlab", "--help")
    assert p.returncode == 0 and "usage: rmqlab" in p.stdout, p.stderr
    # the groups that need extras too: one process for all, parsing only
    groups = [["spark", "build", "--help"], ["spark", "stats", "--help"], ["capacity", "report", "--help"],
              ["kafka", "--help"], ["verify", "--help"], ["store", "--help"], ["commitlog", "--help"]]
    p = _run(core_venv, core_venv / "python", "-c",
             f"from rmqlab.cli import main\nprint([main(argv) for argv in {groups!r}])")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == str([0] * len(groups))
    assert "Traceback" not in p.stderr


@pytest.mark.install
def test_core_install_names_the_extra_a_command_needs(core_venv, tmp_path):
    p = _run(core_venv, core_venv / "rmqlab", "spark", "stats", str(GOLDEN))
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr == ("rmqlab: error: rmqlab spark stats needs the 'spark' extra: "
                        "pip install 'rmqlab[spark]' (pyspark is not installed)\n")

    plan = tmp_path / "plan.toml"
    plan.write_text(_run(core_venv, core_venv / "rmqlab", "capacity", "example").stdout)
    p = _run(core_venv, core_venv / "rmqlab", "capacity", "report", str(plan), "--out", str(tmp_path / "r.html"))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "needs the 'viz' extra: pip install 'rmqlab[viz]'" in p.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.install
def test_core_install_names_the_extra_a_module_needs(core_venv):
    p = _run(core_venv, core_venv / "python", "-c",
             "from rmqlab.extras import MissingExtraError\n"
             "try:\n    import rmqlab.viz\n"
             "except MissingExtraError as e:\n    print(e.extra, isinstance(e, ImportError), e, sep='|')")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ("viz|True|rmqlab.viz needs the 'viz' extra: pip install 'rmqlab[viz]' "
                        "(matplotlib is not installed)\n")
