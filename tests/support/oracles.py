"""The independent oracles the suite leans on, and what happens when one is missing.

An oracle is anything outside rmqlab that judges it: the Java golden files and the real broker
data beside the repository (``../shared``), a JVM, Chromium, a test-only package such as
kafka-python. Missing, an oracle fails the test when the environment variable CI is "true"
(CI passing must mean the oracles were there) and skips it with the reason elsewhere. Every
miss is recorded, and the end of the run lists them (see ``pytest_terminal_summary`` in
conftest.py), so a run without ``../shared`` names what it lacked instead of a thousand lines
of failures.
"""
from __future__ import annotations

import functools
import importlib
import os
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

#: ``../shared`` beside the repository: golden files, real broker data, the conformance script
SHARED = Path(os.environ.get("RMQLAB_SHARED") or Path(__file__).resolve().parents[3] / "shared")
#: real broker data, read-only (never copied into the repository)
REAL_DATA = SHARED / "real-data"

#: Spark's JVM, and the Java String.hashCode oracle
NO_JAVA = ("a `java` on PATH (a Java 17+ runtime)", "apt-get install openjdk-17-jre-headless")

#: each missing oracle (its one-line description) and how many tests asked for it
MISSED: Counter[str] = Counter()


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def missing(oracle: str, how_to_get_it: str = "", *, module_level: bool = False) -> None:
    """Record that `oracle` is missing, then fail the calling test in CI or skip it elsewhere."""
    MISSED[oracle] += 1
    reason = f"missing oracle: {oracle}" + (f" ({how_to_get_it})" if how_to_get_it else "")
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)


def require_path(path: str | os.PathLike, what: str) -> Path:
    """`path` when it exists, else :func:`missing`, naming the data set it belongs to (the
    first three levels under :data:`SHARED`, such as ``real-data/kafka/kafka-2.7.1``)."""
    p = Path(path)
    if not p.exists():
        where = p
        if p.is_relative_to(SHARED):
            where = SHARED.joinpath(*p.relative_to(SHARED).parts[:3])
        missing(f"{what} at {where}", "it lives beside the repository, never inside it")
    return p


def require_module(name: str, extra: str = "dev") -> ModuleType:
    """The imported module `name`, else :func:`missing` (a package of the `extra` extra)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        missing(f"Python package providing {name!r}", f"pip install -e '.[{extra}]'", module_level=True)
        raise  # unreachable: missing() fails or skips


def absent_at_start() -> list[str]:
    """The oracles a whole run needs that are not there: checked once before any test, so a CI
    run without them stops at once, naming each, instead of failing test by test."""
    import shutil

    wanted = {f"Java golden files at {SHARED / 'golden'}": (SHARED / "golden").is_dir(),
              f"real RocketMQ broker data at {REAL_DATA / 'rocketmq'}": (REAL_DATA / "rocketmq").is_dir(),
              f"real Kafka broker data at {REAL_DATA / 'kafka'}": (REAL_DATA / "kafka").is_dir(),
              f"{NO_JAVA[0]} ({NO_JAVA[1]})": shutil.which("java") is not None,
              "Maven (`mvn`), to resolve the real brokers from Maven Central (apt-get install maven)":
                  shutil.which("mvn") is not None}
    return [name for name, present in wanted.items() if not present]


def summary_lines() -> list[str]:
    """The end-of-run report: one line per missing oracle, most asked-for first."""
    if not MISSED:
        return []
    verdict = "each is a failure (CI=true)" if in_ci() else "their tests were skipped (set CI=true to fail)"
    lines = [f"{len(MISSED)} missing oracle(s); {verdict}:"]
    lines += [f"  {oracle}  [{n} test(s)]" for oracle, n in MISSED.most_common()]
    return lines


def require_real_data(path: str | os.PathLike) -> Path:
    """`path` (under :data:`REAL_DATA`, or relative to it) when it exists. Missing, it fails the
    test when the environment variable CI is "true" (the oracle must be there) and skips it
    with the reason elsewhere."""
    p = REAL_DATA / path   # an absolute `path` stays itself
    return require_path(p, "real broker data" if p.is_relative_to(REAL_DATA) else "shared test data")


def needs_real_data(path: str | os.PathLike):
    """A test decorator: the test runs with `path` (as :func:`require_real_data` resolves it)
    there; without it, it fails in CI and skips elsewhere, with the reason."""
    def decorate(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            require_real_data(path)
            return test(*args, **kwargs)
        return run
    return decorate
