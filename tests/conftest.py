"""Shared fixtures. The Spark session is the expensive one: one JVM for the whole test run."""
from __future__ import annotations

import shutil

import oracles
import pytest
from oracles import NO_JAVA


def pytest_sessionstart(session):
    """In CI, stop before the first test when a whole oracle is missing (exit status 3)."""
    absent = oracles.absent_at_start() if oracles.in_ci() else []
    if absent:
        pytest.exit("missing oracles (CI=true needs every one):\n  " + "\n  ".join(absent), returncode=3)


def pytest_terminal_summary(terminalreporter):
    """Name every oracle that was missing, once, at the end of the run."""
    lines = oracles.summary_lines()
    if lines:
        terminalreporter.section("missing oracles", sep="=", red=oracles.in_ci(), yellow=not oracles.in_ci())
        for line in lines:
            terminalreporter.line(line)


@pytest.fixture(scope="session", autouse=True)
def _scratch_inside_pytest_basetemp(tmp_path_factory):
    """tempfile.mkdtemp() of tests and strategies (thousands of stores a run) makes its folders
    inside pytest's base temp folder, which pytest prunes to the last three runs, so a machine
    that runs the suite every day does not fill /tmp."""
    import multiprocessing.util
    import tempfile

    # multiprocessing makes its own folder (pymp-*: the fork server's socket) once per process
    # and removes it at exit, after pytest has released and may have pruned its base folder:
    # made first, it lives in the system's temp folder instead
    multiprocessing.util.get_temp_dir()
    before = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("mkdtemp"))
    yield
    tempfile.tempdir = before


@pytest.fixture(scope="session")
def spark():
    """A local SparkSession from rmqlab.spark.get_session(). Cost: about 12 s once per run (the
    JVM start), nothing for later tests. Skips when no `java` is on PATH."""
    _require_java()
    from rmqlab.spark import get_session

    session = get_session()
    yield session
    session.stop()


def _require_java() -> None:
    if shutil.which("java") is None:
        oracles.missing(*NO_JAVA)


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    """An S3-compatible server on 127.0.0.1 for the session (:func:`s3server.serve_s3`): its
    ``host:port``."""
    from s3server import serve_s3

    with serve_s3(tmp_path_factory.mktemp("moto")) as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A standalone Spark cluster on 127.0.0.1 (one master, two one-core workers with their own
    work directories), from the pyspark package's ``spark-class``: its ``master_url``. Cost:
    about 10-15 s to start, once per run. A classic driver holds one JVM per process, so the
    tests drive it from a subprocess (``rmqlab spark build --master ...``)."""
    from spark_cluster import StandaloneCluster

    _require_java()
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone-cluster")).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A Spark Connect server on 127.0.0.1 (``local[2]``), from the pyspark package's
    ``sbin/start-connect-server.sh``, stopped by the process id in its pid file: its ``url``.
    Cost: about 15 s to start, once per run."""
    from spark_cluster import ConnectServer

    _require_java()
    server = ConnectServer(tmp_path_factory.mktemp("connect-server")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _connect_client(connect_server):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    session = ConnectSession.builder.remote(connect_server.url).appName("rmqlab-tests").getOrCreate()
    session.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    yield session
    session.stop()


@pytest.fixture
def connect_spark(_connect_client, monkeypatch):
    """A Spark Connect client session of :func:`connect_server`, in this process beside the
    classic ``spark`` session. pyspark picks the Connect flavour of ``pyspark.sql.functions``
    by the environment variable it sets when a process connects, so it is set for the test
    only: the classic tests around it keep the classic functions."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return _connect_client
