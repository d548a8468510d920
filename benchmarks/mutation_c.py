"""Mutation testing of the C extensions: how many deliberate bugs in rmqlab/_native/ their own tests catch.

A source-level mutator. Every mutation site of each C file and each header (outside comments,
strings, character constants and preprocessor lines) is enumerated in source order and numbered:
a relational operator swapped (``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``), ``+`` and
``-`` (also ``+=`` and ``-=``), ``&&`` and ``||``, a ``!`` removed, an integer constant moved by
one (0 becomes 1, 1 becomes 0 and 2, any other n becomes n + 1 and n - 1). Each mutant is written
into a scratch copy of rmqlab/_native/ (benchmarks/out/mutation_c/), every extension built from
that file (a header: every extension that includes it) is compiled alone with the flags setup.py
gives it, and the extension's own tests (:data:`TESTS`) run with the mutated .so imported in
place of the built one: a ``sitecustomize`` on the scratch path puts an import finder ahead of
the package's, so the tests, and any Python process they start, load the mutant.

A mutant is *killed* when a test fails, the run dies of a signal, or it outlasts three times
the unmutated run plus ten seconds; *not compiled* when the compiler refuses it (reported apart,
not in the score); *same binary* when the compiled .so is byte for byte the unmutated one (the
compiler proved it equivalent: dead code, a folded constant; reported apart, not run);
*survived* otherwise, unless :data:`JUDGED` argues it equivalent, keyed by a stable id (file,
hash of the stripped line, the change, its place among the same changes on that line), so that
a renumbering after an edit does not carry a judgement to another mutant.

Score = killed / (killed + survived), with a 95 % Wilson interval when the mutants were sampled.

Cost on a 2-core machine, one mutant at a time: compiling takes 1 to 3 s an extension (records.c
the longest), the tests of an extension 8 to 50 s unmutated, up to twice that on a loaded
machine (a killed mutant stops at the first failure, so most take less); --sample 6 over the ten
files and headers took 27 minutes on a loaded machine; every mutant (3,443) would take about a
day.

With ``--asan`` the baseline and every mutant are built with AddressSanitizer
(:data:`ASAN_FLAGS`) and their tests run with gcc's runtime preloaded (Python is not built with
it): a read or write past a buffer, a stack variable or a global then fails the run, where the
plain build only reads or writes a neighbour's bytes (the memcpy overruns of bigendian.h). Its
verdicts are kept apart (``<file>.asan.json``). ``--asan-check`` runs every extension's tests
with the sanitizer builds and no mutant (``make asan``, about a minute).

Run:  python benchmarks/mutation_c.py --sample 20 [--seed 0] [file ...]   (N mutants a file)
      python benchmarks/mutation_c.py --all records.c                     (every mutant)
      python benchmarks/mutation_c.py --list kafkalog.c                   (the numbered mutants)
      python benchmarks/mutation_c.py --mutant 'bigendian.h:3227fe0229:8->9#0' --asan
                                                                          (one mutant by stable id)
      python benchmarks/mutation_c.py --asan-check                        (the tests under ASan)
      python benchmarks/mutation_c.py --report-only                       (the table of the last run)
"""
from __future__ import annotations

import argparse
import ast
import bisect
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "rmqlab" / "_native"
OUT = ROOT / "benchmarks" / "out" / "mutation_c"

#: extension -> its own tests: the files that import it, or the Python module wrapping it, and
#: compare its answers with independent truth (a Python model, Java's values, real files); fast
#: ones only, no broker, fuzz, Spark or browser tests
TESTS: dict[str, list[str]] = {
    # test_walk.py holds the table path's checks (crc32c_table, the path a CPU without SSE 4.2 takes)
    "rmqlab._crc32c": ["tests/kafka/test_walk.py", "tests/kafka/test_log.py", "tests/kafka/test_compression.py"],
    "rmqlab._dispatchcore": ["tests/store/test_dispatchcore_edges.py", "tests/store/test_reput.py"],
    "rmqlab._indexcore": ["tests/formats/test_indexfile_native.py", "tests/formats/test_native_layouts.py",
                          "tests/formats/test_indexfile_time_diff.py", "tests/formats/test_indexfile_invariants.py"],
    "rmqlab._jhash": ["tests/jvm/test_hashcode.py"],
    "rmqlab._kafkalog": ["tests/kafka/test_walk.py", "tests/formats/test_native_layouts.py"],
    "rmqlab._records": ["tests/formats/commitlog/test_records.py", "tests/formats/commitlog/test_decode.py",
                        "tests/formats/test_native_layouts.py", "tests/formats/commitlog/test_columns_edges.py",
                        "tests/formats/commitlog/test_records_edges.py", "tests/formats/commitlog/test_onepass.py",
                        "tests/store/test_query_message.py"],
    "rmqlab._textrows": ["tests/tables/test_text.py", "tests/commands/test_kafka_dump_columns.py"],
    "rmqlab._sortedsearch": ["tests/tables/test_search_sorted.py"],
    "rmqlab._filestamps": ["tests/store/test_query_message.py"],
}

#: surviving mutants judged equivalent: stable id (see :attr:`Mutant.key`) -> why no test can
#: tell it from the original
JUDGED: dict[str, str] = {
    "textrows.c:9296fc0c58:1->0#0": "m_size -1 and 0 both declare a single-phase module without per-interpreter "
                                    "state: nothing is allocated or looked up either way",
    "dispatchcore.c:27d0b6c42f:<=-><#0": "with exactly four units left the one-unit loop finishes them, and "
                                         "h*31^4 + p0*31^3 + p1*31^2 + p2*31 + p3 mod 2^32 is the same either way",
    "jhash.c:69db7ad72d:-->+#1": "a clean block of objects reported bad at row 1 sends rows 1.. to the C API loop, "
                                 "which hashes them with the same hash_str and names the same first non-str: only "
                                 "slower",
    "records.c:36bafd59b5:+->-#1": "a prefetch hint's address changes no byte read or written, only how early "
                                   "lines are fetched",
    "records.c:e050be7d0b:1->2#0": "find_props allocates 2 * (W + 1) mask words (W = (longest + 63) / 64) and "
                                   "scan_block uses W of each (byte_masks writes groups 0..W-1, next_bit reads no "
                                   "word at or past the limit): m2 at W + 2 ends at word 2W + 1, the last one "
                                   "allocated, and still clear of m1 (AddressSanitizer run: no error)",
    "vec64.h:2931817ffb:0->1#0": "after its bytes are taken a vector is only freed (free of NULL) or dropped: its "
                                 "len and cap are never read again",
}

TIMEOUT_FACTOR = 3.0
TIMEOUT_EXTRA = 10.0

#: compiler and linker flags of the AddressSanitizer build (``--asan``): an out-of-bounds read or
#: write of a heap block, a stack variable or a global aborts the test process with a report,
#: where the plain build reads or writes a neighbour's bytes without a visible effect
ASAN_FLAGS = ("-fsanitize=address", "-fno-omit-frame-pointer")
#: the sanitizer's options in the test processes: Python itself is not built with it, and the
#: interpreter's lifetime allocations would read as leaks
ASAN_OPTIONS = "detect_leaks=0"
#: what the sanitizer runs leave out: the Java oracle (a JVM started with the runtime preloaded
#: hangs at start-up); the plain runs keep it
ASAN_SKIP = ("-m", "not jvm")


# ---------------------------------------------------------------------------------------------
# the extensions, as setup.py declares them

@dataclass(frozen=True)
class Extension:
    name: str
    source: str                 # file name in rmqlab/_native/
    compile_args: tuple[str, ...]
    link_args: tuple[str, ...]


def extensions() -> dict[str, Extension]:
    """setup.py's Extension declarations (name, source, extra flags), read from its syntax tree
    so that the flags are the ones the package is built with."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    names: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                names[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass

    def value(node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return value(node.left) + value(node.right)
        if isinstance(node, ast.Name):
            return names[node.id]
        return ast.literal_eval(node)

    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension":
            name = ast.literal_eval(node.args[0])
            kw = {k.arg: value(k.value) for k in node.keywords}
            (source,) = kw["sources"]
            found[name] = Extension(name, Path(source).name, tuple(kw.get("extra_compile_args", ())),
                                    tuple(kw.get("extra_link_args", ())))
    return found


def includes(source: str) -> set[str]:
    """The local headers a C file includes (``#include "x.h"``), and theirs."""
    seen: set[str] = set()
    todo = [source]
    while todo:
        text = (NATIVE / todo.pop()).read_text()
        for header in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            if header not in seen:
                seen.add(header)
                todo.append(header)
    return seen


def built_from(file: str, exts: dict[str, Extension]) -> list[Extension]:
    """The extensions a mutant of `file` (a .c or a .h) changes."""
    return [e for e in exts.values() if e.source == file or file in includes(e.source)]


# ---------------------------------------------------------------------------------------------
# the mutation sites

_OPERATORS = sorted(["<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=",
                     "*=", "/=", "%=", "&=", "|=", "^=", "<", ">", "+", "-", "!", "=", "*", "/", "%", "&", "|",
                     "^", "~", "?", ":", ";", ",", ".", "(", ")", "[", "]", "{", "}"], key=len, reverse=True)
_SWAPS = {"<": ["<="], "<=": ["<"], ">": [">="], ">=": [">"], "==": ["!="], "!=": ["=="], "&&": ["||"],
          "||": ["&&"], "+": ["-"], "-": ["+"], "+=": ["-="], "-=": ["+="], "!": [""]}
_NUMBER = re.compile(r"(0[xX][0-9a-fA-F]+|[0-9]+)([uUlL]*)(?![.\w])")


@dataclass(frozen=True)
class Mutant:
    file: str       # in rmqlab/_native/
    number: int     # in source order, from 0
    line: int       # 1-based
    start: int      # character offset in the file
    end: int
    old: str
    new: str
    nth: int        # among the mutants of the file's lines of this text with the same old -> new, from 0
    text: str       # the stripped source line

    @property
    def key(self) -> str:
        """A stable id: file, hash of the line's text, the change, and its place among the same
        change on lines of that text (``return -1;`` comes back in many places)."""
        digest = hashlib.sha1(self.text.encode()).hexdigest()[:10]
        return f"{self.file}:{digest}:{self.old}->{self.new or '(removed)'}#{self.nth}"

    def apply(self, source: str) -> str:
        return source[:self.start] + self.new + source[self.end:]

    def diff(self) -> str:
        """The mutated line beside the original, ``- old`` / ``+ new``."""
        lines = (NATIVE / self.file).read_text().splitlines()
        original = lines[self.line - 1]
        offset = self.start - sum(len(x) + 1 for x in lines[:self.line - 1])
        mutated = original[:offset] + self.new + original[offset + len(self.old):]
        return f"{self.file}:{self.line}: - {original.strip()}\n{' ' * len(f'{self.file}:{self.line}: ')}+ " \
               f"{mutated.strip()}"


def _tokens(source: str):
    """(start, end, text) of every code token outside comments, strings, character constants
    and preprocessor lines (with their continuations)."""
    i, n = 0, len(source)
    line_start = True
    while i < n:
        c = source[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if line_start and c == "#":         # a preprocessor line, continued by a backslash
            while i < n and source[i] != "\n":
                i += 2 if source.startswith("\\\n", i) else 1
            continue
        line_start = False
        if source.startswith("//", i):
            i = source.find("\n", i)
            i = n if i < 0 else i
            continue
        if source.startswith("/*", i):
            i = source.index("*/", i + 2) + 2
            continue
        if c in "\"'":
            j = i + 1
            while source[j] != c:
                j += 2 if source[j] == "\\" else 1
            i = j + 1
            continue
        if c.isalpha() or c == "_":
            j = i
            while j < n and (source[j].isalnum() or source[j] == "_"):
                j += 1
            yield i, j, source[i:j]
            i = j
            continue
        if c.isdigit():
            j = i
            hexa = source.startswith(("0x", "0X"), i)
            while j < n and (source[j].isalnum() or source[j] in "._" or
                             (source[j] in "+-" and source[j - 1] in "eEpP" and not hexa)):
                j += 1
            yield i, j, source[i:j]
            i = j
            continue
        for op in _OPERATORS:
            if source.startswith(op, i):
                yield i, i + len(op), op
                i += len(op)
                break
        else:
            yield i, i + 1, c
            i += 1


def _constant_changes(token: str) -> list[str]:
    m = _NUMBER.fullmatch(token)
    if not m:
        return []                           # a floating constant, or not a number
    digits, suffix = m.groups()
    value = int(digits, 0) if not (len(digits) > 1 and digits[0] == "0" and digits[1] not in "xX") else int(digits, 8)
    hexa = digits[:2].lower() == "0x"
    targets = [1] if value == 0 else [0, 2] if value == 1 else [value + 1, value - 1]
    return [(f"0x{t:X}" if hexa else str(t)) + suffix for t in targets]


def sites(file: str) -> list[Mutant]:
    """Every mutant of rmqlab/_native/`file`, numbered in source order."""
    source = (NATIVE / file).read_text()
    line_starts = [0] + [m.end() for m in re.finditer("\n", source)]
    lines = source.splitlines()
    found: list[tuple[int, int, str, str]] = []
    for start, end, token in _tokens(source):
        # a sign (`-1`, `+x`) is swapped too: a negated value is a mutant like any other
        found.extend((start, end, token, new) for new in _SWAPS.get(token, ()))
        if token[0].isdigit():
            found.extend((start, end, token, new) for new in _constant_changes(token))
    mutants = []
    seen: dict[tuple[str, str, str], int] = {}
    for number, (start, end, old, new) in enumerate(found):
        line = bisect.bisect_right(line_starts, start)
        text = lines[line - 1].strip()
        nth = seen.get((text, old, new), 0)
        seen[(text, old, new)] = nth + 1
        mutants.append(Mutant(file, number, line, start, end, old, new, nth, text))
    return mutants


def sample(mutants: list[Mutant], size: int | None, seed: int) -> list[Mutant]:
    """`size` of the mutants of one file, the same for the same file, size and seed (all of
    them when `size` is None)."""
    if size is None or size >= len(mutants):
        return list(mutants)
    rng = random.Random(f"{seed}/{mutants[0].file}")
    return sorted(rng.sample(mutants, size), key=lambda m: m.number)


# ---------------------------------------------------------------------------------------------
# building and running

_SITECUSTOMIZE = '''\
# Loads the mutated extensions named in RMQLAB_MUTANT_SO ("module=path;...") in place of the
# package's own, in this process and in every Python process it starts.
import importlib.abc, importlib.util, os, sys

_SWAP = dict(item.split("=", 1) for item in os.environ.get("RMQLAB_MUTANT_SO", "").split(";") if item)


class _MutantFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in _SWAP:
            return importlib.util.spec_from_file_location(name, _SWAP[name])
        return None


if _SWAP:
    sys.meta_path.insert(0, _MutantFinder())
'''


def _compile_command(ext: Extension, source: Path, target: Path, asan: bool = False) -> list[str]:
    """The compiler call setuptools makes for `ext`, in one step (compile and link), without -g:
    debug information changes no instruction and takes a third of the time. With `asan`, also
    :data:`ASAN_FLAGS` (compile and link)."""
    flags = [f for f in sysconfig.get_config_var("CFLAGS").split() if f != "-g"]
    ldshared = sysconfig.get_config_var("LDSHARED").split()
    return [*ldshared, *flags, sysconfig.get_config_var("CCSHARED"), f"-I{sysconfig.get_config_var('INCLUDEPY')}",
            *ext.compile_args, *(ASAN_FLAGS if asan else ()), str(source), "-o", str(target), *ext.link_args]


#: set by ``--asan``: every build a sanitizer build, every test run under it
ASAN = False


def build(ext: Extension, sources: Path, target: Path) -> tuple[bool, str]:
    target.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(_compile_command(ext, sources / ext.source, target, ASAN), capture_output=True, text=True)
    return done.returncode == 0, done.stderr


def asan_runtime() -> str:
    """The path of gcc's AddressSanitizer runtime, preloaded into the (uninstrumented) Python
    that loads a sanitizer build: the runtime must come first in the process."""
    path = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if not Path(path).is_file():
        raise SystemExit(f"no AddressSanitizer runtime found (gcc -print-file-name=libasan.so gave {path!r})")
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_tests(ext_names: list[str], swap: dict[str, Path], limit: float | None) -> tuple[str, float, int]:
    """(verdict, seconds, exit code) of the tests of `ext_names` with the extensions `swap` names
    loaded from the given .so files: "passed", "failed", "signal" or "timeout"."""
    tests = sorted({t for name in ext_names for t in TESTS[name]})
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(OUT / "site"), str(ROOT)])
    env["RMQLAB_MUTANT_SO"] = ";".join(f"{k}={v}" for k, v in swap.items())
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if ASAN:
        env["LD_PRELOAD"] = asan_runtime()
        env["ASAN_OPTIONS"] = ASAN_OPTIONS
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                             *(ASAN_SKIP if ASAN else ()), *tests],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        code = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        return "timeout", time.monotonic() - started, -9
    took = time.monotonic() - started
    if code < 0:
        return "signal", took, code
    # pytest: 0 all passed; 1 a test failed; 2 interrupted (a collection error: the module does
    # not import); 3 internal error; 4 usage; 5 no tests collected. A crash in a forked child is
    # a failed test.
    return ("passed" if code == 0 else "failed"), took, code


def _check_swap(name: str, so: Path) -> None:
    """The finder really loads the scratch .so (a wrong path would test the package's own)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(OUT / "site"), str(ROOT)]), RMQLAB_MUTANT_SO=f"{name}={so}")
    if ASAN:
        env.update(LD_PRELOAD=asan_runtime(), ASAN_OPTIONS=ASAN_OPTIONS)
    got = subprocess.run([sys.executable, "-c", f"import {name} as m; print(m.__file__)"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    if Path(got) != so:
        raise SystemExit(f"{name} loaded from {got}, not the mutant {so}")


def prepare() -> None:
    (OUT / "site").mkdir(parents=True, exist_ok=True)
    (OUT / "site" / "sitecustomize.py").write_text(_SITECUSTOMIZE)


def baseline(file: str, exts: list[Extension]) -> tuple[dict[str, str], float]:
    """The unmutated build of `file`'s extensions from the scratch copy (their digests) and the
    seconds their tests take with it; raises if the tests fail unmutated."""
    work = OUT / Path(file).stem / "original"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(NATIVE, work / "src")
    digests, swap = {}, {}
    for ext in exts:
        so = work / "so" / (ext.name.split(".")[-1] + sysconfig.get_config_var("EXT_SUFFIX"))
        ok, err = build(ext, work / "src", so)
        if not ok:
            raise SystemExit(f"{ext.name} does not compile unmutated:\n{err}")
        digests[ext.name] = _digest(so)
        swap[ext.name] = so
        _check_swap(ext.name, so)
    verdict, took, code = run_tests([e.name for e in exts], swap, None)
    if verdict != "passed":
        raise SystemExit(f"the tests of {file} fail unmutated (exit {code})")
    return digests, took


def run_mutant(m: Mutant, exts: list[Extension], digests: dict[str, str], limit: float) -> dict:
    """Build and test one mutant; its verdict record."""
    work = OUT / Path(m.file).stem / "mutant"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(NATIVE, work / "src")
    (work / "src" / m.file).write_text(m.apply((NATIVE / m.file).read_text()))
    swap, same = {}, True
    started = time.monotonic()
    for ext in exts:
        so = work / "so" / (ext.name.split(".")[-1] + sysconfig.get_config_var("EXT_SUFFIX"))
        ok, err = build(ext, work / "src", so)
        if not ok:
            first = next((x for x in err.splitlines() if "error" in x), err.strip()[:200])
            return {"verdict": "not compiled", "why": first.replace(str(work / "src") + "/", "")}
        same &= _digest(so) == digests[ext.name]
        swap[ext.name] = so
    compiled = time.monotonic() - started
    if same:
        return {"verdict": "same binary", "compile_s": round(compiled, 1)}
    verdict, took, code = run_tests([e.name for e in exts], swap, limit)
    return {"verdict": "killed" if verdict != "passed" else "survived", "how": verdict, "exit": code,
            "compile_s": round(compiled, 1), "test_s": round(took, 1)}


# ---------------------------------------------------------------------------------------------
# the report

def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion k / n."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def tally(file: str, results: dict) -> dict:
    """Counts of one file's last run (results: {"total", "sampled", "seed", "mutants": {key: record}})."""
    row = {"file": file, "total": results["total"], "sampled": len(results["mutants"]), "killed": 0,
           "survived": 0, "equivalent": 0, "not compiled": 0, "same binary": 0, "survivors": [], "equivalents": []}
    for key, r in sorted(results["mutants"].items(), key=lambda kv: kv[1]["number"]):
        v = r["verdict"]
        if v == "survived" and key in JUDGED:
            row["equivalent"] += 1
            row["equivalents"].append((key, r["diff"], JUDGED[key]))
        elif v == "survived":
            row["survived"] += 1
            row["survivors"].append((key, r["diff"]))
        else:
            row[v] += 1
    judged = row["killed"] + row["survived"]
    row["score"] = row["killed"] / judged if judged else float("nan")
    row["ci"] = wilson(row["killed"], judged) if row["sampled"] < row["total"] else None
    return row


def table(rows: list[dict]) -> str:
    lines = ["| file | mutants | sampled | killed | survived | equivalent | same binary | not compiled | score "
             "(95 % CI) |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        ci = f" ({100 * r['ci'][0]:.0f}–{100 * r['ci'][1]:.0f} %)" if r["ci"] else " (all run)"
        lines.append(f"| {r['file']} | {r['total']} | {r['sampled']} | {r['killed']} | {r['survived']} | "
                     f"{r['equivalent']} | {r['same binary']} | {r['not compiled']} | "
                     f"{100 * r['score']:.0f} %{ci} |")
    return "\n".join(lines)


def _results_path(file: str) -> Path:
    """Where a file's verdicts are kept: a sanitizer run's apart from the plain build's."""
    return OUT / f"{Path(file).stem}.{Path(file).suffix[1:]}{'.asan' if ASAN else ''}.json"


def asan_check() -> int:
    """Every extension built with AddressSanitizer into the scratch directory (the package's own
    .so files untouched) and all of :data:`TESTS` run with those builds loaded: the pytest exit
    status (0: no test failed and no memory error aborted a process). Cost: the builds (about
    10 s) and the tests, about twice their plain time."""
    global ASAN
    ASAN = True
    prepare()
    work = OUT / "asan"
    shutil.rmtree(work, ignore_errors=True)
    swap = {}
    for ext in extensions().values():
        so = work / (ext.name.split(".")[-1] + sysconfig.get_config_var("EXT_SUFFIX"))
        ok, err = build(ext, NATIVE, so)
        if not ok:
            raise SystemExit(f"{ext.name} does not compile with {' '.join(ASAN_FLAGS)}:\n{err}")
        _check_swap(ext.name, so)
        swap[ext.name] = so
    tests = sorted({t for ts in TESTS.values() for t in ts})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(OUT / "site"), str(ROOT)]),
               RMQLAB_MUTANT_SO=";".join(f"{k}={v}" for k, v in swap.items()), PYTHONDONTWRITEBYTECODE="1",
               LD_PRELOAD=asan_runtime(), ASAN_OPTIONS=ASAN_OPTIONS)
    print(f"{len(swap)} extensions built with {' '.join(ASAN_FLAGS)}; running {len(tests)} test files", flush=True)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ASAN_SKIP, *tests],
                          cwd=ROOT, env=env).returncode


def files() -> list[str]:
    """The C files and headers, in the order they run (the headers after the files using them)."""
    return sorted(p.name for p in NATIVE.glob("*.c")) + sorted(p.name for p in NATIVE.glob("*.h"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="of rmqlab/_native/ (default: every .c and .h)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--sample", type=int, default=20, help="mutants a file (default 20)")
    how.add_argument("--all", action="store_true", help="every mutant")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--list", action="store_true", help="print the numbered mutants, run nothing")
    parser.add_argument("--report-only", action="store_true", help="the table of the last run")
    parser.add_argument("--mutant", action="append", metavar="ID", default=[],
                        help="run only the mutant of this stable id (see --list; repeatable), whatever the draw")
    parser.add_argument("--asan", action="store_true",
                        help="build the mutants and the baseline with AddressSanitizer and run the tests under it "
                             "(memory errors kill); verdicts kept apart (<file>.asan.json)")
    parser.add_argument("--asan-check", action="store_true",
                        help="build every extension with AddressSanitizer and run all their tests, no mutant")
    args = parser.parse_args(argv)
    global ASAN
    ASAN = args.asan
    if args.asan_check:
        raise SystemExit(asan_check())
    if args.mutant:
        args.files = args.files or sorted({m.split(":", 1)[0] for m in args.mutant})
    chosen = args.files or files()
    unknown = set(chosen) - set(files())
    if unknown:
        parser.error(f"unknown files {sorted(unknown)}: choose from {', '.join(files())}")
    exts = extensions()
    if args.list:
        for file in chosen:
            for m in sites(file):
                print(f"{m.number:5d} {m.key}  {m.diff()}")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    prepare()
    for file in chosen if not args.report_only else []:
        mine = built_from(file, exts)
        if not mine:
            print(f"{file}: no extension is built from it")
            continue
        every = sites(file)
        picked = sample(every, None if args.all else args.sample, args.seed)
        if args.mutant:
            picked = [m for m in every if m.key in args.mutant]
            missing = {i for i in args.mutant if i.split(":", 1)[0] == file} - {m.key for m in every}
            if missing:
                raise SystemExit(f"no mutant {sorted(missing)} in {file} (see --list)")
        digests, took = baseline(file, mine)
        limit = TIMEOUT_FACTOR * took + TIMEOUT_EXTRA
        print(f"{file}: {len(every)} mutants, running {len(picked)} (seed {args.seed}); tests of "
              f"{', '.join(e.name for e in mine)} take {took:.1f} s unmutated, limit {limit:.0f} s", flush=True)
        path = _results_path(file)
        results = {"total": len(every), "seed": args.seed,
                   "sample": "ids" if args.mutant else None if args.all else args.sample,
                   "tests": sorted({t for e in mine for t in TESTS[e.name]}), "source": _digest(NATIVE / file),
                   "baseline_s": round(took, 1), "mutants": {}}
        # an interrupted run of the same source, tests and draw goes on where it stopped
        before = json.loads(path.read_text()) if path.exists() else {}
        if args.mutant and {k: before.get(k) for k in ("tests", "source")} == \
                {k: results[k] for k in ("tests", "source")}:
            # mutants run by id join the last run of the same source and tests, in place of
            # their earlier verdicts
            results.update(seed=before["seed"], sample=before["sample"])
            results["mutants"] = {k: v for k, v in before["mutants"].items() if k not in args.mutant}
        elif {k: before.get(k) for k in ("seed", "sample", "tests", "source")} == \
                {k: results[k] for k in ("seed", "sample", "tests", "source")}:
            results["mutants"] = before["mutants"]
        for m in picked:
            if m.key in results["mutants"]:
                continue
            r = run_mutant(m, mine, digests, limit)
            r.update(number=m.number, diff=m.diff())
            results["mutants"][m.key] = r
            path.write_text(json.dumps(results, indent=1))
            print(f"  #{m.number} {r['verdict']:<12} {m.diff().splitlines()[0]}", flush=True)
        path.write_text(json.dumps(results, indent=1))
    rows = []
    for file in chosen:
        path = _results_path(file)
        if path.exists():
            rows.append(tally(file, json.loads(path.read_text())))
    text = table(rows)
    print(text)
    survivors = [f"- `{key}`\n  ```\n  {diff.replace(chr(10), chr(10) + '  ')}\n  ```" for r in rows
                 for key, diff in r["survivors"]]
    equivalents = [f"- `{key}`: {why}" for r in rows for key, _, why in r["equivalents"]]
    report = text + "\n\nSurvivors:\n" + ("\n".join(survivors) or "none") + "\n\nJudged equivalent:\n" + (
        "\n".join(equivalents) or "none") + "\n"
    (OUT / "summary.md").write_text(report)
    print("\n".join(survivors))


if __name__ == "__main__":
    main()
