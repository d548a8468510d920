"""Shared fixtures. The Spark session is the expensive one: one JVM for the whole test run."""
from __future__ import annotations

import shutil

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


def require_real_data(path):
    """`path` (real broker data under ../shared/real-data/, outside the repository) if it exists.
    Otherwise the calling test fails when the environment variable CI is "true" (the oracle must
    be there) and is skipped, with the reason, elsewhere."""
    import os
    from pathlib import Path

    path = Path(path)
    if not path.exists():
        reason = f"real data {path} not found (../shared/real-data/ is kept outside the repository)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path
