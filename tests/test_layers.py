"""The package's house rules, read from its source: the top holds only the face, each folder is
a layer, and no import runs back up (so no cycle between folders). The graph comes from
tests/support/import_graph.py (ast, every import including lazy ones); the checker itself is tested on
small packages written here, so a rule it failed to see would show."""
from __future__ import annotations

from pathlib import Path

import pytest
from import_graph import FACE_MODULES, LAYERS, cycles, folder_graph, imports, unit, upward

PACKAGE = Path(__file__).resolve().parents[1] / "rmqlab"


def test_the_top_of_the_package_holds_only_the_face():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == FACE_MODULES, f"modules at the top that belong in a layer folder: {sorted(top - FACE_MODULES)}"


def test_every_folder_is_a_named_layer():
    """A new folder must be placed among the layers before it may import or be imported."""
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    named = {u for group in LAYERS for u in group}
    assert folders <= named, f"folders no layer names: {sorted(folders - named)}"


def test_no_import_runs_back_up_across_layers():
    bad = upward(imports(PACKAGE))
    assert not bad, "imports from a lower layer to a higher one:\n" + "\n".join(
        f"  {Path(e.path).relative_to(PACKAGE.parent)}:{e.line}: {e.source} imports {e.target}" for e in bad)


def test_no_cycle_between_folders():
    assert cycles(folder_graph(imports(PACKAGE))) == []


def test_the_face_imports_only_down():
    """Nothing below the face imports the command line or the package root."""
    for e in imports(PACKAGE):
        if unit(e.target) in ("cli", "__main__", "face"):
            assert unit(e.source) in ("cli", "__main__", "face"), f"{e.path}:{e.line} imports {e.target}"


def _package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "rmqlab"
    for name, text in {"__init__.py": "", **files}.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pkg


@pytest.mark.parametrize("statement", [
    "from rmqlab.store.engine import run",          # module level
    "def f():\n    from rmqlab.store import engine",  # lazy, from a package
    "import rmqlab.store.engine",
    "if False:\n    from ..store.engine import run",   # relative, under a guard
])
def test_the_checker_sees_an_upward_import_in_any_form(tmp_path, statement):
    pkg = _package(tmp_path, {"formats/__init__.py": "", "formats/x.py": statement + "\n",
                              "store/__init__.py": "", "store/engine.py": "run = 1\n"})
    bad = upward(imports(pkg))
    assert [(e.source, unit(e.target)) for e in bad] == [("rmqlab.formats.x", "store")]
    assert cycles(folder_graph(imports(pkg))) == []


def test_the_checker_finds_a_cycle_and_ignores_doctest_text(tmp_path):
    pkg = _package(tmp_path, {
        "formats/__init__.py": "", "store/__init__.py": "",
        "formats/a.py": '"""\n>>> from rmqlab.store import b\n"""\n',     # text, not an import
        "store/b.py": "from rmqlab.formats import a\n"})
    assert upward(imports(pkg)) == [] and cycles(folder_graph(imports(pkg))) == []
    (pkg / "formats" / "a.py").write_text("from rmqlab.store import b\n")
    assert cycles(folder_graph(imports(pkg))) == [["formats", "store"]]
