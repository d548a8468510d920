"""Shared fixtures. The Spark session is the expensive one: one JVM for the whole test run."""
from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def spark():
    """A local SparkSession from rmqlab.spark.get_session(). Cost: about 12 s once per run (the
    JVM start), nothing for later tests. Skips when no `java` is on PATH."""
    if shutil.which("java") is None:
        pytest.skip("no `java` on PATH: Spark needs a Java 17+ runtime "
                    "(apt-get install openjdk-17-jre-headless)")
    from rmqlab.spark import get_session

    session = get_session()
    yield session
    session.stop()


#: real broker data, read-only, beside the repository (never copied into it)
REAL_DATA = Path(__file__).resolve().parents[2] / "shared" / "real-data"


def require_real_data(path: str | os.PathLike) -> Path:
    """`path` (under :data:`REAL_DATA`, or relative to it) when it exists. Missing, it fails the
    test when the environment variable CI is "true" (the oracle must be there) and skips it
    with the reason elsewhere."""
    p = Path(path)
    p = p if p.is_absolute() else REAL_DATA / p
    if not p.exists():
        reason = (f"real broker data not found at {p} (../shared/real-data/ lives outside the repository)")
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return p


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
