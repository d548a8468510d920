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

__all__ = ["get_session"]

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


def get_session(master: str | None = None, app_name: str = "rmqlab",
                conf: dict[str, Any] | None = None):
    """A :class:`pyspark.sql.SparkSession` set up for this workbench (created, or the running one).

    Cost: the first session in a Python process starts a JVM, about 12 s to the first query on a
    2-core machine (13-22 s cold); later calls return the same session in well under 1 s. The
    driver gets 4 GiB of heap (``spark.driver.memory=4g``); a JVM's heap is fixed when it starts,
    so a later call cannot change it.

    Local mode (the default, ``master=None`` gives ``local[*]``, all cores) binds only to
    127.0.0.1, runs Python workers with this interpreter (``PYSPARK_PYTHON``, unless already set),
    enables Arrow for pandas conversions (``createDataFrame`` from 5M pandas rows: about 3 s
    instead of 100 s), uses 8 shuffle partitions (a 20M-row group-by: 13-16 s instead of 25 s on
    2 cores), turns off the web UI and the console progress bar, and logs only errors. `conf`
    entries are applied last and override all of these.

    >>> from rmqlab.spark import get_session                       # doctest: +SKIP
    >>> spark = get_session()                                      # doctest: +SKIP
    >>> spark.sql("SELECT CAST(reflect('java.util.Objects', 'hashCode', 'Aa') AS INT) AS h"
    ...           ).first().h                                       # doctest: +SKIP
    2112

    Under ``spark-submit`` (for a cluster): call ``get_session()`` with ``master=None``. The
    JVM is already running then, so ``--master``, ``--driver-memory`` and the other
    ``spark-submit`` options decide; this function keeps them (``getOrCreate`` semantics), sets
    none of the local settings above (driver address, memory, Python path, UI, logging, shuffle
    partitions), and only turns Arrow on if ``spark-submit`` left it unset. For example
    ``spark-submit --master yarn job.py`` with ``spark = get_session()`` in ``job.py`` runs on
    YARN. An explicit `master` or `conf` is still applied there.

    Raises :class:`rmqlab.extras.MissingExtraError` when pyspark (the ``spark`` extra) is not
    installed.
    """
    # The driver was launched by spark-submit (or pyspark's own shell): the JVM exists already.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if not submitted:
        # Read by the JVM and by pyspark when they start, so they must be in place before that.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    # Here rather than at the top: pyspark costs about 0.5 s to import.
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
    # Spark reads booleans as "true"/"false"; str(True) would be "True".
    options.update({k: str(v).lower() if isinstance(v, bool) else str(v)
                    for k, v in (conf or {}).items()})

    builder = SparkSession.builder.appName(app_name)
    for key, value in options.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # spark-submit's --conf and spark-defaults.conf are in the context's conf; only where they
    # say nothing about Arrow, turn it on (a runtime setting, so it can be set now).
    if submitted:
        if _ARROW not in options and not spark.sparkContext.getConf().contains(_ARROW):
            spark.conf.set(_ARROW, "true")
    else:
        # The log4j2 file covers start-up; this also quiets a session that already existed.
        spark.sparkContext.setLogLevel("ERROR")
    return spark
