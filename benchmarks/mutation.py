"""Mutation testing of the format and query core with mutmut 3: how many deliberate bugs the tests catch.

Each module runs on its own, in a scratch directory benchmarks/out/mutation/<module>/ holding
links to the package, the tests and ../shared (the tests find the real broker data two levels
above their own file, and mutmut runs them from <scratch>/mutants/tests/), and a pyproject.toml
whose [tool.mutmut] is the repository's with that module alone to mutate and its own tests to
run. mutmut then runs, for every mutant, only the selected tests that call the mutated function,
stopping at the first failure. Results stay in the scratch directory, out of the repository, and
a second run only tests mutants of functions that changed.

Counted per module: mutants; killed (a test failed, including by a timeout or a crash);
survived; *equivalent* (survivors judged unable to change what any caller can observe, listed
in :data:`EQUIVALENT` with the reason); *message* (survivors that only change the text of a
plain string literal, such as an error message: reported apart, not counted in the score);
score = killed / (mutants - equivalent - message). Mutant names are mutmut's
(``module.x_function__mutmut_N``), numbered within a function, so an edit of a function renames
its mutants and the judgements of :data:`EQUIVALENT` need a new look.

Cost on a 2-core machine with 2 workers: checkpoint about a minute; the two large modules
(indexfile, consumequeue) tens of minutes each.

Run:  python benchmarks/mutation.py [--workers 2] [module ...]   (modules: see MODULES)
      python benchmarks/mutation.py --report-only        (the table from the last runs)
      python benchmarks/mutation.py --survivors checkpoint (the diff of every surviving mutant)
"""
from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import shutil
import subprocess
import sys
import time
import tokenize
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out" / "mutation"
SHARED = ROOT.parent / "shared"

DOCTESTS = "tests/test_doctests.py::test_docstring_examples[{}]"

#: module -> (file to mutate, the tests that exercise it: fast ones only, no Spark, browser,
#: notebook, fuzz or crash tests)
MODULES: dict[str, tuple[str, list[str]]] = {
    "checkpoint": ("rmqlab/formats/checkpoint.py", [
        "tests/test_checkpoint.py",
        "tests/test_real_store_420.py",
        "tests/test_corrupt_corpus.py",
        "tests/test_mutation_gaps_checkpoint.py",
        DOCTESTS.format("rmqlab.formats.checkpoint"),
    ]),
    "consumequeue": ("rmqlab/formats/consumequeue.py", [
        "tests/test_consumequeue.py",
        "tests/test_batchconsumequeue.py",
        "tests/test_consumequeue_ext.py",
        "tests/test_real_store_420.py",
        "tests/test_corrupt_corpus.py",
        "tests/test_mutation_gaps_consumequeue.py",
        DOCTESTS.format("rmqlab.formats.consumequeue"),
    ]),
    "indexfile": ("rmqlab/formats/indexfile.py", [
        "tests/test_indexfile.py",
        "tests/test_indexfile_badinput.py",
        "tests/test_indexfile_golden.py",
        "tests/test_indexcore.py",
        "tests/test_native_layouts.py",
        "tests/test_time_diff.py",
        "tests/test_mutation_gaps_indexfile.py",
        DOCTESTS.format("rmqlab.formats.indexfile"),
    ]),
    "indexservice": ("rmqlab/indexservice.py", [
        "tests/test_indexservice.py",
        "tests/test_indexservice_columns.py",
        "tests/test_indexstats.py",
        "tests/test_keyindex.py",
        "tests/test_mutation_gaps_indexservice.py",
        DOCTESTS.format("rmqlab.indexservice"),
    ]),
    "keyquery": ("rmqlab/keyquery.py", [
        "tests/test_keyquery.py",
        "tests/test_keyindex.py",
        "tests/test_mutation_gaps_keyquery.py",
        DOCTESTS.format("rmqlab.keyquery"),
    ]),
}

#: surviving mutants judged equivalent, by function (mutmut's name of it, before ``__mutmut_N``):
#: mutant numbers -> why no caller can tell them from the original
JUDGED: dict[str, dict[tuple[int, ...], str]] = {
    "rmqlab.formats.checkpoint.x__open_mapped": {
        (20,): "truncating a 4096-byte file to 4096 bytes changes no byte (the mapped write after it sets "
               "mtime anyway)",
        (27,): "mmap's default access on a read-write descriptor is the shared read-write mapping "
               "ACCESS_WRITE asks for",
    },
    "rmqlab.formats.checkpoint.x_read_checkpoint": {
        (13,): "reading the whole file, not 4096 bytes: strict mode has checked the size is 4096, and "
               "otherwise only the first 40 bytes are used",
    },
    "rmqlab.formats.checkpoint.x_write_checkpoint": {
        (2,): "sync=False by default skips msync: the page cache is shared, so only a kernel crash or "
              "power loss could show it",
    },
    "rmqlab.formats.checkpoint.x_update_checkpoint": {
        (1,): "the same msync default as write_checkpoint's",
    },
}

#: mutant name -> why it is equivalent
EQUIVALENT: dict[str, str] = {f"{function}__mutmut_{number}": why
                              for function, judged in JUDGED.items()
                              for numbers, why in judged.items() for number in numbers}


def function_label(function: str) -> str:
    """``rmqlab.indexservice.xǁIndexServiceǁput_message`` -> ``IndexService.put_message``."""
    name = function.rsplit(".", 1)[-1]
    return name[2:].replace("\u01c1", ".") if name.startswith("x\u01c1") else name[2:]


def equivalents_markdown(module: str) -> str:
    """The judged equivalents of `module` as the Markdown list RESULTS.md shows."""
    prefix = "rmqlab." + MODULES[module][0][len("rmqlab/"):-len(".py")].replace("/", ".") + ".x"
    lines = []
    for function, judged in JUDGED.items():
        if function.startswith(prefix):
            reasons = "; ".join(f"{', '.join(map(str, numbers))}: {why}" for numbers, why in judged.items())
            lines.append(f"- `{function_label(function)}` {reasons}.")
    return "\n".join(lines)


KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_table(name: str, table: dict) -> str:
    return f"[{name}]\n" + "".join(f"{key} = {_toml_value(value)}\n" for key, value in table.items())


def prepare(module: str) -> Path:
    """The scratch directory of `module`, with its links and its pyproject.toml."""
    source, tests = MODULES[module]
    work = OUT / module
    work.mkdir(parents=True, exist_ok=True)
    links = {"rmqlab": ROOT / "rmqlab", "tests": ROOT / "tests", "data": ROOT / "data"}
    if SHARED.exists():
        links["shared"] = SHARED
    for name, target in links.items():
        link = work / name
        if not link.is_symlink():
            link.symlink_to(target, target_is_directory=True)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    settings = dict(project["tool"]["mutmut"])
    settings["only_mutate"] = [source]
    settings["pytest_add_cli_args_test_selection"] = [t for t in tests if (ROOT / t.split("::")[0]).exists()]
    text = (_toml_table("tool.pytest.ini_options", project["tool"]["pytest"]["ini_options"]) + "\n"
            + _toml_table("tool.mutmut", settings))
    pyproject = work / "pyproject.toml"
    if not pyproject.exists() or pyproject.read_text() != text:
        pyproject.write_text(text)
    return work


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    # the mutants must be the package imported, not a checkout on the path
    env.pop("PYTHONPATH", None)
    return env


def run(module: str, workers: int, mutants: list[str] = ()) -> None:
    """mutmut run for `module` (only the named `mutants` when given: mutmut keeps earlier
    verdicts and retests only mutants of changed functions unless named), its progress
    in <scratch>/run.log."""
    work = prepare(module)
    # mutmut refreshes the copied sources it mutates, not the built extensions beside them
    copies = work / "mutants" / "rmqlab"
    for built in (ROOT / "rmqlab").glob("*.so"):
        if copies.is_dir() and (not (copies / built.name).exists()
                                or (copies / built.name).read_bytes() != built.read_bytes()):
            shutil.copy2(built, copies / built.name)
    started = dt.datetime.now()
    with open(work / "run.log", "w") as log:
        subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(workers), *mutants],
                       cwd=work, env=_environment(), stdout=log, stderr=subprocess.STDOUT, check=False)
    print(f"{module}: mutmut ran {(dt.datetime.now() - started).total_seconds():.0f} s")


def statuses(module: str) -> dict[str, str]:
    """mutant name -> mutmut's status of it, from the scratch directory's last run."""
    from mutmut.stats import status_by_exit_code

    meta = OUT / module / "mutants" / (MODULES[module][0] + ".meta")
    if not meta.exists():
        return {}
    for attempt in range(20):   # a running mutmut rewrites the file after every mutant
        try:
            codes = json.loads(meta.read_text())["exit_code_by_key"]
            break
        except json.JSONDecodeError:
            if attempt == 19:
                raise
            time.sleep(0.1)
    return {name: status_by_exit_code[code] for name, code in codes.items()}


# the module's source path is given, not looked up with find_mutant: that reads every .meta file
# once per mutant, and a .meta file a running mutmut is rewriting reads as broken JSON
_SHOW = """
import json, sys
from mutmut.__main__ import get_diff_for_mutant
path, names = json.loads(sys.stdin.read())
print(json.dumps({n: get_diff_for_mutant(n, path=path) for n in names}))
"""


def diffs(module: str, names: list[str]) -> dict[str, str]:
    """The diff of each named mutant against the original source (one process for all)."""
    if not names:
        return {}
    shown = subprocess.run([sys.executable, "-c", _SHOW], cwd=OUT / module, env=_environment(),
                           input=json.dumps([MODULES[module][0], names]), capture_output=True, text=True,
                           check=True)
    return json.loads(shown.stdout.strip().splitlines()[-1])


def _tokens(line: str) -> list[tuple[int, str]]:
    """The Python tokens of one source line; a line of a longer statement ends the tokenizer with
    an error at its end, after every token of the line is out."""
    found: list[tuple[int, str]] = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER):
                found.append((t.type, t.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def only_a_message_changed(patch: str) -> bool:
    """Whether the mutant's diff changes nothing but the text of string literals, or drops the
    message of an exception it raises (``raise ValueError(None)``)."""
    removed = [line[1:] for line in patch.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    if not removed or len(removed) != len(added):
        return False
    raising = "raise " in patch
    for old, new in zip(removed, added):
        old_tokens, new_tokens = _tokens(old), _tokens(new)
        if len(old_tokens) != len(new_tokens):
            return False
        for (old_type, old_text), (new_type, new_text) in zip(old_tokens, new_tokens):
            if (old_type, old_text) == (new_type, new_text):
                continue
            if old_type == tokenize.STRING and new_type == tokenize.STRING:
                continue
            if old_type == tokenize.STRING and new_text == "None" and raising:
                continue
            return False
    return True


def tally(module: str) -> dict:
    found = statuses(module)
    patches = diffs(module, [n for n, s in found.items() if s in ("survived", "no tests") and n not in EQUIVALENT])
    row = {"module": module, "mutants": len(found), "killed": 0, "survived": 0, "timeout": 0,
           "equivalent": 0, "message": 0, "not run": 0, "survivors": []}
    for name, status in sorted(found.items()):
        if status in KILLED:
            row["killed"] += 1
            row["timeout"] += status == "timeout"
        elif status == "survived" or status == "no tests":
            if name in EQUIVALENT:
                row["equivalent"] += 1
            elif only_a_message_changed(patches[name]):
                row["message"] += 1
            else:
                row["survived"] += 1
                row["survivors"].append(name)
        else:
            row["not run"] += 1
    judged = row["mutants"] - row["equivalent"] - row["message"] - row["not run"]
    row["score"] = row["killed"] / judged if judged else float("nan")
    row["patches"] = {name: patches[name] for name in row["survivors"]}
    return row


def check_survivors(module: str, names: list[str]) -> dict[str, bool]:
    """Whether the module's added tests (tests/test_mutation_gaps_<module>.py, as they are now)
    kill each named mutant: the mutant is switched on in the scratch copy's package by mutmut's
    MUTANT_UNDER_TEST, one pytest process a mutant. A quick check of new tests; a full
    ``mutmut run`` of the module gives the final verdicts."""
    gaps = ROOT / "tests" / f"test_mutation_gaps_{module}.py"
    mutants = OUT / module / "mutants"
    killed = {}
    for name in names:
        # cwd is the mutated copy: `python -m pytest` puts it first on sys.path
        env = {**_environment(), "MUTANT_UNDER_TEST": name, "PYTHONPATH": str(mutants)}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(gaps)],
                              cwd=mutants, env=env, capture_output=True, check=False)
        killed[name] = done.returncode == 1
        print(f"{module}: {name} {'killed' if killed[name] else 'survives'} (pytest exit {done.returncode})")
    return killed


def table(rows: list[dict]) -> str:
    lines = ["| module | mutants | killed | of which timeout | survived | equivalent | message text | score |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {MODULES[r['module']][0]} | {r['mutants']} | {r['killed']} | {r['timeout']} | "
                     f"{r['survived']} | {r['equivalent']} | {r['message']} | {100 * r['score']:.1f} % |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"of {', '.join(MODULES)}; default: all, smallest first")
    parser.add_argument("--workers", type=int, default=2, help="mutmut's parallel test processes")
    parser.add_argument("--report-only", action="store_true", help="tabulate the last runs, run nothing")
    parser.add_argument("--survivors", action="store_true", help="print the diff of each counted survivor")
    parser.add_argument("--check-survivors", action="store_true",
                        help="run the added tests against each counted survivor of the last run")
    parser.add_argument("--rerun-survivors", action="store_true",
                        help="retest only the last run's counted survivors (after tests were added)")
    args = parser.parse_args()
    modules = args.modules or ["checkpoint", "keyquery", "indexservice", "consumequeue", "indexfile"]
    unknown = set(modules) - set(MODULES)
    if unknown:
        parser.error(f"unknown modules {sorted(unknown)}: choose from {', '.join(MODULES)}")
    if args.rerun_survivors:
        last = json.loads((OUT / "survivors.json").read_text()) if (OUT / "survivors.json").exists() else {}
        for module in modules:
            if last.get(module):
                run(module, args.workers, last[module])
    elif not (args.report_only or args.survivors or args.check_survivors):
        for module in modules:
            run(module, args.workers)
    rows = [tally(m) for m in modules if statuses(m)]
    text = table(rows)
    print(text)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.md").write_text(text + "\n")
    last = json.loads((OUT / "survivors.json").read_text()) if (OUT / "survivors.json").exists() else {}
    last.update({r["module"]: r["survivors"] for r in rows})
    (OUT / "survivors.json").write_text(json.dumps(last, indent=1))
    if args.check_survivors:
        checked = {r["module"]: check_survivors(r["module"], r["survivors"]) for r in rows}
        (OUT / "checked.json").write_text(json.dumps(checked, indent=1))
        for r in rows:
            now = sum(checked[r["module"]].values())
            judged = r["killed"] + r["survived"]
            print(f"{r['module']}: the added tests kill {now} of {r['survived']} survivors: "
                  f"score {100 * (r['killed'] + now) / judged:.1f} % ({r['killed'] + now} of {judged})")
        return
    for r in rows:
        for name in r["survivors"]:
            print(f"{r['module']}: survived {name}")
            if args.survivors:
                print(r["patches"][name])


if __name__ == "__main__":
    main()
