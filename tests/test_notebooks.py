"""The notebooks: each one runs headless from top to bottom on small inputs (its cells end with
assertions on the numbers they show, so running is testing), each is committed clean, and the
notebook index lists every one.

Execution uses nbclient with the "rmqlab" kernel when its spec is installed (``make`` installs
it), else "python3", in ``notebooks/`` as the working folder, one notebook at a time. A cell with
the overrides of :data:`SMALL_PARAMETERS` is inserted right after the notebook's "parameters"
cell, as papermill does. Notebooks that start Spark are marked ``jvm`` and skipped without Java.
Deselect all of these with ``pytest -m "not notebooks"``.
"""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from oracles import NO_JAVA, missing

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.glob("**/*.ipynb") if ".ipynb_checkpoints" not in p.parts)

#: Overrides of parameters-cell values, by notebook file name, so the suite runs on small inputs.
SMALL_PARAMETERS: dict[str, dict[str, object]] = {
    "03-build-at-scale-with-spark.ipynb": {
        "MESSAGES": 20_000,
        "COMMITLOG_FILE_SIZE": 1024 * 1024,
        "HASH_SLOT_NUM": 2_000,
        "INDEX_NUM": 8_000,
    },
    # whole-file key samples cost about 7 CPU-seconds a configuration; tests/commands/test_capacity.py covers them
    "06-capacity-planning.ipynb": {"WHOLE_FILES": False},
    "08-dispatch-restart-and-names.ipynb": {"LAG_MESSAGES": 6_000},
}

KERNELSPEC = {"name": "rmqlab", "display_name": "rmqlab (Python 3)", "language": "python"}
CELL_TIMEOUT = 600   # seconds
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")

#: The command that strips a notebook for committing: outputs, execution counts and metadata
#: (widget state, timings), keeping the kernel spec, language and the cells' tags ("parameters").
#: (With ClearMetadataPreprocessor alone, nbconvert also drops the kernel spec and every tag.)
CLEAN_ARGS = ["--clear-output", "--inplace", "--ClearMetadataPreprocessor.enabled=True",
              "--ClearMetadataPreprocessor.preserve_nb_metadata_mask=kernelspec",
              "--ClearMetadataPreprocessor.preserve_nb_metadata_mask=language_info",
              "--ClearMetadataPreprocessor.preserve_cell_metadata_mask=tags"]
CLEAN_COMMAND = "jupyter nbconvert " + " ".join(CLEAN_ARGS) + " notebooks/NN-*.ipynb"

pytestmark = pytest.mark.notebooks


def _name(path: Path) -> str:
    return path.relative_to(NOTEBOOK_DIR).as_posix()


def _starts_spark(nb) -> bool:
    return any(c.cell_type == "code" and "get_session(" in c.source for c in nb.cells)


def reads_broker_stores(nb) -> bool:
    """Whether the notebook reads a store a real broker wrote (rmqlab.lab.brokerstores): it runs
    in tests/brokers/test_broker_notebooks.py, after the broker builds."""
    return any(c.cell_type == "code" and "broker_store(" in c.source for c in nb.cells)


def _param(path: Path):
    nb = nbformat.read(path, as_version=4)
    marks = [pytest.mark.jvm] if _starts_spark(nb) else []
    if reads_broker_stores(nb):
        marks.append(pytest.mark.skip(reason="reads a broker-written store: runs in tests/brokers/"
                                             "test_broker_notebooks.py after the broker builds"))
    return pytest.param(path, id=_name(path), marks=marks)


def _kernel_name() -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    return "rmqlab" if "rmqlab" in KernelSpecManager().find_kernel_specs() else "python3"


def parameters_cells(nb) -> list[int]:
    """Positions of the cells tagged "parameters"."""
    return [i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])]


def parameter_names(source: str) -> list[str]:
    """The names a parameters cell assigns; ValueError if it holds anything but UPPER_CASE
    assignments (comments aside)."""
    names = []
    for stmt in ast.parse(source).body:
        targets = (stmt.targets if isinstance(stmt, ast.Assign)
                   else [stmt.target] if isinstance(stmt, ast.AnnAssign) else None)
        if targets is None or not all(isinstance(t, ast.Name) for t in targets):
            raise ValueError(f"line {stmt.lineno}: only NAME = value assignments belong in a parameters cell")
        for t in targets:
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", t.id):
                raise ValueError(f"line {stmt.lineno}: {t.id} is not UPPER_CASE")
            names.append(t.id)
    return names


def clean_problems(nb) -> list[str]:
    """Why `nb` is not in its committed form (empty when it is)."""
    out = []
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        if c.get("outputs"):
            out.append(f"cell {i} has outputs")
        if c.get("execution_count") is not None:
            out.append(f"cell {i} has execution_count {c.execution_count}")
        extra = set(c.get("metadata", {})) - {"tags"}
        if extra:
            out.append(f"cell {i} has metadata {sorted(extra)}")
    if "widgets" in nb.metadata:
        out.append("metadata.widgets holds saved widget state")
    spec = dict(nb.metadata.get("kernelspec", {}))
    if spec != KERNELSPEC:
        out.append(f"kernelspec is {spec}, not {KERNELSPEC}")
    if nb.metadata.get("language_info", {}).get("name") != "python":
        out.append("language_info.name is not python")
    tagged = parameters_cells(nb)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    if len(tagged) != 1:
        out.append(f"{len(tagged)} cells are tagged 'parameters' (want exactly one)")
    elif not code_cells or tagged[0] != code_cells[0]:
        out.append("the 'parameters' cell is not the first code cell")
    else:
        try:
            parameter_names(nb.cells[tagged[0]].source)
        except (ValueError, SyntaxError) as e:
            out.append(f"parameters cell: {e}")
    return out


def with_small_parameters(nb, overrides: dict[str, object]):
    """`nb` with a cell assigning `overrides` inserted right after its parameters cell (`nb`
    as it is when there is nothing to override)."""
    if not overrides:
        return nb
    [at] = parameters_cells(nb)
    unknown = set(overrides) - set(parameter_names(nb.cells[at].source))
    assert not unknown, f"SMALL_PARAMETERS names {sorted(unknown)}, which the parameters cell does not assign"
    cell = nbformat.v4.new_code_cell("\n".join(f"{k} = {v!r}" for k, v in overrides.items()))
    cell.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(at + 1, cell)
    return nb


def test_the_notebooks_are_found():
    names = [_name(p) for p in NOTEBOOKS]
    for expected in ("01-indexfile-anatomy.ipynb", "02-the-store.ipynb",
                     "03-build-at-scale-with-spark.ipynb", "04-slot-occupancy-and-chains.ipynb",
                     "07-rocketmq-vs-kafka-indexes.ipynb", "08-dispatch-restart-and-names.ipynb"):
        assert expected in names
    assert set(SMALL_PARAMETERS) <= set(names)


@pytest.mark.parametrize("path", [_param(p) for p in NOTEBOOKS])
def test_notebook_runs(path):
    run_notebook(path)


def run_notebook(path: Path, parameters: dict[str, object] | None = None) -> None:
    """Run the notebook at `path` top to bottom (with `parameters`, else its small ones) in a
    fresh kernel, in notebooks/ as the working folder; fail the test at the first cell error."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    if _starts_spark(nb) and shutil.which("java") is None:
        missing(*NO_JAVA)
    nb = with_small_parameters(nb, SMALL_PARAMETERS.get(_name(path), {}) if parameters is None else parameters)
    kernel = _kernel_name()
    # The rmqlab spec already keeps the JVM's stderr out of cell outputs; the fallback needs the
    # option here (given twice, the kernel refuses to start).
    extra = [] if kernel == "rmqlab" else ["--IPKernelApp.capture_fd_output=False"]
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name=kernel, extra_arguments=extra,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    try:
        client.execute()
    except CellExecutionError as e:
        # the message holds the failing cell's source and its traceback (minus terminal colours)
        pytest.fail(f"{_name(path)} failed:\n{ANSI_COLOUR.sub('', str(e))}", pytrace=False)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_is_committed_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    problems = clean_problems(nb)
    assert not problems, (f"{_name(path)} is not clean: {'; '.join(problems)}. "
                          f"Clean it with:\n  {CLEAN_COMMAND}")


def test_the_clean_command_gives_a_clean_notebook(tmp_path):
    """CLEAN_COMMAND really turns an executed, widget-saving notebook into the committed form."""
    source = NOTEBOOK_DIR / "01-indexfile-anatomy.ipynb"
    nb = nbformat.read(source, as_version=4)
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            c.execution_count = i + 1
            c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="out\n")]
            c.metadata["execution"] = {"iopub.status.busy": "2024-06-10T06:13:20.000Z"}
            c.metadata["scrolled"] = True
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    dirty = tmp_path / source.name
    nbformat.write(nb, dirty)
    assert clean_problems(nbformat.read(dirty, as_version=4))     # the check does see dirt

    subprocess.run([sys.executable, "-m", "nbconvert", *CLEAN_ARGS, str(dirty)], check=True,
                   capture_output=True)
    cleaned = nbformat.read(dirty, as_version=4)
    assert clean_problems(cleaned) == []
    assert [c.source for c in cleaned.cells] == [c.source for c in nbformat.read(source, as_version=4).cells]


def test_parameters_cell_rules():
    assert parameter_names("# sizes\nMESSAGES = 10\nGEOMETRY: tuple = (1, 2)\n") == ["MESSAGES", "GEOMETRY"]
    for bad in ("messages = 10", "import os", "A = 1\nprint(A)", "A, B = 1, 2"):
        with pytest.raises(ValueError):
            parameter_names(bad)


def test_readme_lists_every_notebook():
    readme = (NOTEBOOK_DIR / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    # an index line starts with a link to the notebook: "- [title](NN-title.ipynb) ..." or a table row
    index_lines = {}
    for line in lines:
        m = re.match(r"\s*(?:[-*]|\|)\s*\[[^\]]+\]\(([^)\s]+\.ipynb)\)", line)
        if m:
            index_lines.setdefault(m.group(1), []).append(line)
    for path in NOTEBOOKS:
        assert len(index_lines.get(_name(path), [])) == 1, f"README.md needs one index line for {_name(path)}"
    linked = set(re.findall(r"\]\(([^)\s]+\.ipynb)(?:#[^)]*)?\)", readme))
    missing = sorted(n for n in linked if not (NOTEBOOK_DIR / n).is_file())
    assert not missing, f"README.md links to notebooks that do not exist: {missing}"
