"""``rmqlab spark verify``: :func:`rmqlab.verify.verify_path` with its units of work as Spark
tasks, for a store too large for one machine to check in good time.

The same checks and the same report, byte for byte: :func:`verify_with_spark` hands
:func:`~rmqlab.verify.verify_path` a :class:`~rmqlab.spark.pool.SparkPool`, so each CommitLog
file's walk, decode and own checks, with the joins of the index entries and queue units that
point into it, each index file's own checks and the ConsumeQueues' own checks (64 queues a
task) run on the executors, calling the same format and check modules as a process of
``rmqlab verify --jobs N`` does; no check is written twice. The driver merges what the joins
found (counts and first problems) in CommitLog order, and checks the checkpoint against the
totals (where CommitLog files overlap, the tasks send their files' numbers and the driver joins
them).

Where the store is: a path every executor mounts at the driver's path (a local disk for
``local[N]``, a shared file system for a cluster; see :mod:`rmqlab.spark.pool`), or a URI of
object storage or HDFS (``s3://``, ``gs://``, ``hdfs://``, ``file://``; see
:mod:`rmqlab.spark.storage` for credentials and options). A URI is read through a
:class:`~rmqlab.spark.mirror.Mirror`: the driver and each executor machine copy the store's
files but the CommitLog's, and each CommitLog file is brought only by the task that walks it
(and by the driver where its own checks read one). The report names the files by the URI
(without credentials or query string), as ``rmqlab verify`` of a local copy names them by its
path.
"""
from __future__ import annotations

import os
from typing import Any

from rmqlab.spark.pool import SparkPool
from rmqlab.spark.storage import is_uri
from rmqlab.verify import VerifyReport, verify_path

__all__ = ["verify_with_spark"]


def verify_with_spark(spark: Any, path: str | os.PathLike, **settings: Any) -> VerifyReport:
    """:func:`rmqlab.verify.verify_path` of `path` (a path or a URI; its keyword `settings` but
    ``jobs`` and ``pool``), the units run as tasks of `spark`. Cost: as ``verify_path`` spread
    over the cluster's task slots, plus a Spark task a CommitLog file, an index file and 64
    queues, gathered into jobs of twice the task slots (:class:`~rmqlab.spark.pool.SparkPool`);
    the driver's share is merging what the tasks found. A URI adds a copy of the store's files
    but the CommitLog's on the driver and on each executor machine, and each CommitLog file's
    transfer in its task.

    >>> from rmqlab.spark import get_session                              # doctest: +SKIP
    >>> verify_with_spark(get_session(), "data/generated/sample-store").ok  # doctest: +SKIP
    True
    """
    if not is_uri(path):
        with SparkPool(spark, f"spark verify {path}") as pool:
            return verify_path(path, pool=pool, **settings)
    from rmqlab.spark.mirror import make_mirror

    if settings.get("commitlog_paths") or settings.get("tiered_path"):
        raise ValueError(f"{path}: a store at a URI is read from its own folder only (no commitlog_paths or "
                         f"tiered_path)")
    mirror = make_mirror(str(path))
    try:
        with SparkPool(spark, f"spark verify {mirror.shown}", around=mirror.on_executor) as pool:
            report = verify_path(mirror.root, pool=pool, **settings)
        return report.relocated(mirror.root, mirror.shown)
    finally:
        mirror.remove()
