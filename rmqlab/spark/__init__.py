"""Spark sessions for the workbench: one call that gives a working, quiet session.

Spark is optional for rmqlab (the ``spark`` extra): nothing else in the package imports this
module, and pyspark is imported only when :func:`get_session` runs, which raises
:class:`rmqlab.extras.MissingExtraError` naming the extra when pyspark is not installed.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from rmqlab.extras import require

__all__ = ["get_session", "is_connect"]

_ARROW = "spark.sql.execution.arrow.pyspark.enabled"

# Error-level logging to stderr only. Without this file Spark 4 prints dozens of INFO/WARN lines
# at start-up, which land in notebook cells and test output.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.pygw.name = org.apache.spark.api.python.PythonGatewayServer
logger.pygw.level = error
"""


def _log4j2_file() -> Path:
    """The log4j2 properties file, written once per user (or per process if the cache is not
    writable) and rewritten only if its content changed."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rmqlab"
    path = cache / "log4j2.properties"
    try:
        if not path.is_file() or path.read_text() != _LOG4J2:
            cache.mkdir(parents=True, exist_ok=True)
            # Write then rename, so a JVM starting in another process never reads half a file.
            fd, tmp = tempfile.mkstemp(dir=cache, prefix=".log4j2-", suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(_LOG4J2)
            os.replace(tmp, path)
    except OSError:
        fd, tmp = tempfile.mkstemp(prefix="rmqlab-log4j2-", suffix=".properties")
        with os.fdopen(fd, "w") as f:
            f.write(_LOG4J2)
        path = Path(tmp)
    return path.resolve()


def is_connect(spark) -> bool:
    """True if `spark` is a Spark Connect session (a client of a remote server: no local JVM).

    >>> is_connect(object())
    False
    """
    return type(spark).__module__.startswith("pyspark.sql.connect")


# The JVM says this once at start-up on its stderr, whatever log4j is told: Spark loads the
# vector API's incubator module. It is not about rmqlab and would be the only line a quiet
# command prints.
_JVM_NOISE = (b"WARNING: Using incubator modules",)


def _launch_quiet_gateway(options: dict[str, str]) -> None:
    """Start the py4j JVM as pyspark would for these options, but with its stderr read through
    a filter that drops the known start-up warnings and passes everything else on to this
    process's stderr (the file descriptor, as before: in a notebook it goes to the kernel's
    log, not into cells). A no-op when a JVM is already running."""
    import threading
    from subprocess import PIPE

    from pyspark import SparkConf
    from pyspark.core.context import SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return
        conf = SparkConf(loadDefaults=False)
        for key, value in options.items():
            conf.set(key, value)
        gateway = launch_gateway(conf, popen_kwargs={"stderr": PIPE})
        SparkContext._gateway = gateway
        SparkContext._jvm = gateway.jvm
    proc = gateway.proc
    target = os.dup(2)

    def forward() -> None:
        for line in iter(proc.stderr.readline, b""):
            if not line.startswith(_JVM_NOISE):
                os.write(target, line)
        os.close(target)

    threading.Thread(target=forward, daemon=True, name="rmqlab-jvm-stderr").start()


def get_session(master: str | None = None, app_name: str = "rmqlab",
                conf: dict[str, Any] | None = None, *, remote: str | None = None):
    """A :class:`pyspark.sql.SparkSession` set up for this workbench (created, or the running one).

    Cost: the first session in a Python process starts a JVM, the largest fixed cost of a job
    (benchmarks/RESULTS.md, "JVM start"); later calls return the same session, no new JVM. The
    driver gets 4 GiB of heap (``spark.driver.memory=4g``); a JVM's heap is fixed when it starts,
    so a later call cannot change it. A Spark Connect session (`remote`) starts no JVM: one
    connection to the server.

    >>> from rmqlab.spark import get_session                       # doctest: +SKIP
    >>> spark = get_session()                                      # doctest: +SKIP
    >>> spark.sql("SELECT CAST(reflect('java.util.Objects', 'hashCode', 'Aa') AS INT) AS h"
    ...           ).first().h                                       # doctest: +SKIP
    2112

    Local mode (the default, ``master=None`` gives ``local[*]``, all cores) binds only to
    127.0.0.1, runs Python workers with this interpreter (``PYSPARK_PYTHON``, unless already set),
    enables Arrow for pandas conversions (``createDataFrame`` from pandas ships column batches
    instead of a Python object a value), uses 8 shuffle partitions (instead of Spark's 200, whose
    per-task overhead outweighs the work on a few cores), turns off the web UI and the console
    progress bar, and logs only errors (the JVM's start-up warning about incubator modules is
    dropped from stderr too). `conf` entries are applied last and override all of these. A
    cluster's master URL (``master="spark://HOST:7077"``) gets the same settings; its executors
    then need rmqlab importable by the Python given in ``PYSPARK_PYTHON``.

    Spark Connect: ``remote="sc://HOST:PORT"``, or ``remote=None`` with the ``SPARK_REMOTE``
    environment variable set (pyspark's own convention), connects to a Spark Connect server:
    no JVM here, none of the local settings above (the server's own configuration decides
    master, memory and logging), Arrow turned on for the session, and `conf` sent as session
    settings (runtime SQL settings only). `master` and `remote` exclude each other. The
    server's Python workers must be able to import rmqlab. Every function of
    :mod:`rmqlab.spark` works on both kinds of session (:func:`is_connect` tells them apart).

    Under ``spark-submit`` (for a cluster): call ``get_session()`` with ``master=None``. The
    JVM is already running then, so ``--master``, ``--driver-memory`` and the other
    ``spark-submit`` options decide; this function keeps them (``getOrCreate`` semantics), sets
    none of the local settings above (driver address, memory, Python path, UI, logging, shuffle
    partitions), and only turns Arrow on if ``spark-submit`` left it unset. For example
    ``spark-submit --master yarn job.py`` with ``spark = get_session()`` in ``job.py`` runs on
    YARN. An explicit `master` or `conf` is still applied there.

    Raises :class:`rmqlab.extras.MissingExtraError` when pyspark (the ``spark`` extra) is not
    installed, and ValueError when both `master` and `remote` are given.
    """
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    if remote is not None and master is not None:
        raise ValueError(f"give a master ({master}) or a Spark Connect remote ({remote}), not both")
    # Spark reads booleans as "true"/"false"; str(True) would be "True".
    extra = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (conf or {}).items()}

    # Here rather than at the top: importing pyspark is costly, and only sessions need it.
    if remote is not None:
        SparkSession = require("spark", "pyspark.sql", "rmqlab.spark").SparkSession
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key, value in {_ARROW: "true", **extra}.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    # The driver was launched by spark-submit (or pyspark's own shell): the JVM exists already.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if not submitted:
        # Read by the JVM and by pyspark when they start, so they must be in place before that.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    SparkSession = require("spark", "pyspark.sql", "rmqlab.spark").SparkSession

    options: dict[str, str] = {}
    if not submitted:
        options = {
            "spark.master": master or "local[*]",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": "4g",
            _ARROW: "true",
            "spark.sql.shuffle.partitions": "8",
            "spark.ui.showConsoleProgress": "false",
            "spark.ui.enabled": "false",
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_log4j2_file().as_uri()}",
        }
    elif master is not None:
        options["spark.master"] = master
    options.update(extra)

    if not submitted:
        _launch_quiet_gateway({"spark.app.name": app_name, **options})
    builder = SparkSession.builder.appName(app_name)
    for key, value in options.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # spark-submit's --conf and spark-defaults.conf are in the session's settings; only where
    # they say nothing about Arrow, turn it on (a runtime setting, so it can be set now).
    if submitted and _ARROW not in options and spark.conf.get(_ARROW, None) is None:
        spark.conf.set(_ARROW, "true")
    return spark
