"""environment.yml (for conda users) must list exactly the dependencies of pyproject.toml."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Conda-only entries: the interpreter, the JVM (pip cannot install it) and pip itself.
CONDA_ONLY = {"python", "openjdk", "pip"}


def normalise(requirement: str) -> tuple[str, str]:
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*?)\s*", requirement)
    assert m, requirement
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def conda_dependencies(text: str) -> list[str]:
    """The plain string items directly under `dependencies:` (the nested pip list excluded)."""
    items, inside = [], False
    for line in text.splitlines():
        if re.match(r"^dependencies:\s*$", line):
            inside = True
            continue
        if inside and re.match(r"^\S", line):
            break
        m = re.match(r"^  - (.+?)\s*(#.*)?$", line)
        if inside and m and not m.group(1).endswith(":"):
            items.append(m.group(1))
    return items


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    conda = conda_dependencies((ROOT / "environment.yml").read_text())
    assert {normalise(r) for r in wanted} == {normalise(r) for r in conda if normalise(r)[0] not in CONDA_ONLY}
    assert {normalise(r)[0] for r in conda} >= CONDA_ONLY


def test_environment_yml_installs_the_package_itself():
    assert re.search(r"^\s+- pip:\s*\n\s+- --editable \.\s*$", (ROOT / "environment.yml").read_text(), re.M)
