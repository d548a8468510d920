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
them). The store must be on a file system every executor mounts at the driver's path (see
:mod:`rmqlab.spark.pool`).
"""
from __future__ import annotations

import os
from typing import Any

from rmqlab.spark.pool import SparkPool
from rmqlab.verify import VerifyReport, verify_path

__all__ = ["verify_with_spark"]


def verify_with_spark(spark: Any, path: str | os.PathLike, **settings: Any) -> VerifyReport:
    """:func:`rmqlab.verify.verify_path` of `path` (its keyword `settings` but ``jobs`` and
    ``pool``), the units run as tasks of `spark`. Cost: as ``verify_path`` spread over the
    cluster's task slots, plus a Spark job a CommitLog file, an index file and 64 queues (tens
    of milliseconds each on a warm session); the driver's share is merging what the tasks found.

    >>> from rmqlab.spark import get_session                              # doctest: +SKIP
    >>> verify_with_spark(get_session(), "data/generated/sample-store").ok  # doctest: +SKIP
    True
    """
    with SparkPool(spark, f"spark verify {path}") as pool:
        return verify_path(path, pool=pool, **settings)
