"""environment.yml (for conda users) must list exactly the dependencies of pyproject.toml: the
core ones and those of every extra, each group under its own comment (``# core``,
``# extra: NAME``)."""
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


def conda_groups(text: str) -> dict[str, list[str]]:
    """The plain string items directly under `dependencies:` (the nested pip list excluded),
    grouped by the comment line above them: "core", an extra's name, or "" before any."""
    groups: dict[str, list[str]] = {"": []}
    group, inside = "", False
    for line in text.splitlines():
        if re.match(r"^dependencies:\s*$", line):
            inside = True
            continue
        if inside and re.match(r"^\S", line):
            break
        if not inside:
            continue
        heading = re.match(r"^  # (core|extra: ([\w-]+))\b", line)
        if heading:
            group = heading.group(2) or "core"
            assert group not in groups, f"environment.yml: group {group!r} twice"
            groups[group] = []
            continue
        m = re.match(r"^  - (.+?)\s*(#.*)?$", line)
        if m and not m.group(1).endswith(":"):
            groups[group].append(m.group(1))
    return groups


def pyproject_groups() -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """pyproject's requirements by group ("core" and each extra), and the extras each extra
    pulls in by naming the package itself (``rmqlab[spark,viz]``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups, includes = {"core": project["dependencies"]}, {}
    for extra, requirements in project["optional-dependencies"].items():
        own = [r for r in requirements if not r.startswith(project["name"] + "[")]
        groups[extra] = own
        includes[extra] = {x.strip() for r in requirements if r not in own
                           for x in r[len(project["name"]) + 1:].rstrip("]").split(",")}
    return groups, includes


def test_environment_yml_matches_pyproject_group_by_group():
    wanted, _ = pyproject_groups()
    conda = conda_groups((ROOT / "environment.yml").read_text())
    assert {normalise(r)[0] for r in conda.pop("")} == CONDA_ONLY
    assert set(conda) == set(wanted)
    for group, requirements in wanted.items():
        assert sorted(map(normalise, conda[group])) == sorted(map(normalise, requirements)), group


def test_dev_extra_includes_every_other_extra():
    groups, includes = pyproject_groups()
    assert includes["dev"] == set(groups) - {"core", "dev"}
    assert all(not included for extra, included in includes.items() if extra != "dev")


def test_environment_yml_installs_the_package_itself():
    assert re.search(r"^\s+- pip:\s*\n\s+- --editable \.\s*$", (ROOT / "environment.yml").read_text(), re.M)


def test_make_app_prints_the_url_of_the_token_voila_gets():
    """`make app`'s printed URL carries the token Voila is started with (one draw, not one a use),
    and a token given on the command line is used as given. Judged by make's own dry run."""
    import subprocess

    root = Path(__file__).resolve().parents[1]

    def tokens(*args: str) -> tuple[str, str]:
        out = subprocess.run(["make", "-n", "app", *args], cwd=root, capture_output=True, text=True,
                             check=True).stdout
        printed = re.search(r"/\?token=(\S+?)\"", out)
        given = re.search(r"--Voila\.token=(\S+)", out)
        assert printed and given, out
        return printed.group(1), given.group(1)

    printed, given = tokens()
    assert printed == given and re.fullmatch(r"[0-9a-f]{48}", printed)
    assert tokens("APP_TOKEN=mine") == ("mine", "mine")
    assert tokens()[0] != printed   # a fresh token a run
