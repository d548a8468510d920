"""Units of work as Spark tasks: :class:`SparkPool`, a :class:`rmqlab.tables.pool.Pool` whose
workers are a Spark session's executors, so that what a process pool spreads over the cores of
one machine (:func:`rmqlab.verify.verify_path`'s CommitLog files, index files and queues)
spreads over a cluster, and gives the same results in the same order.

Each submission is one Spark job of one task (``spark.range(0, 1, 1, 1).mapInArrow``, as the
rest of :mod:`rmqlab.spark`: classic Spark and Spark Connect alike), started from a driver
thread; up to :attr:`SparkPool.jobs` + 1 threads keep the cluster's task slots busy, and
:meth:`~rmqlab.tables.pool.Pool.ordered` hands the results back in submission order with at
most a few held in the driver. A task runs the unit's module-level function on an executor
(which must be able to import rmqlab) and sends back its pickled result, one binary value.

Paths travel as the driver gave them. A task runs in the driver's working directory when the
executor has one of that name (an executor on the driver's machine, or on a shared file system
mounted at the same place), so relative paths mean the same there; an executor without it
needs absolute paths that it sees. The units read the store's files themselves: a store on
several machines must be on a file system every executor mounts at the same path.
"""
from __future__ import annotations

import os
import pickle
import socket
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from rmqlab.tables.pool import Pool

__all__ = ["SparkPool", "task_slots"]

#: the schema of a task's one row: the executor process and the unit's pickled result
_RESULT = "pid long, value binary"


def task_slots(spark: Any) -> int:
    """The tasks `spark` runs at once: the classic session's default parallelism (local[N]: N;
    a cluster: its executors' cores), else (Spark Connect) ``spark.default.parallelism`` when
    the server sets it, else 2. Cost: one call to the driver JVM or the server."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:       # Spark Connect has no SparkContext
        value = spark.conf.get("spark.default.parallelism", None)
        return max(1, int(value)) if value else 2


class SparkPool(Pool):
    """A :class:`~rmqlab.tables.pool.Pool` whose units run as Spark tasks of `spark` (one
    one-task job a submission; see the module docstring). Always :attr:`parallel`, also with
    one task slot: the units leave the driver. :attr:`run` records the executors' process ids.
    `jobs`: the tasks kept running at once (default :func:`task_slots`). `around`: a function
    giving a context manager each unit runs in on its executor (default: none). A context manager;
    :meth:`close` waits for the units started and drops the rest.

    Cost: a Spark job a submission (tens of milliseconds of scheduling on a warm session), a
    cloudpickle of the function and arguments out and a pickle of the result back.

    >>> from rmqlab.spark import get_session                     # doctest: +SKIP
    >>> with SparkPool(get_session(), "doc") as pool:            # doctest: +SKIP
    ...     list(pool.ordered(abs, [(-3,), (2,), (-1,)]))
    [3, 2, 1]
    """

    def __init__(self, spark: Any, label: str, jobs: int | None = None, around: Callable | None = None):
        super().__init__(jobs or task_slots(spark), label)
        self.spark = spark
        #: a context each unit runs in on its executor (picklable; ``around()`` gives the context
        #: manager), such as :meth:`rmqlab.spark.mirror.Mirror.on_executor`
        self.around = around
        #: where the driver runs: tasks run there too when the executor has that folder
        self.cwd = os.getcwd()
        self._threads: ThreadPoolExecutor | None = None

    @property
    def parallel(self) -> bool:
        return True

    def submit(self, fn: Callable, *args: Any) -> Future:
        """Run ``fn(*args)`` as a Spark task; ``.result()`` is ``(executor process id, value)``."""
        self.run.units += 1
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.jobs + 1, thread_name_prefix="rmqlab-spark-unit")
        return self._threads.submit(self._job, fn, args)

    def _job(self, fn: Callable, args: tuple) -> tuple[int, Any]:
        cwd, around = self.cwd, self.around

        def task(batches):
            import contextlib

            import pyarrow as pa

            for _ in batches:
                pass
            with around() if around is not None else contextlib.nullcontext():
                pid, value = _in_directory(cwd, fn, args)
            yield pa.RecordBatch.from_arrays([pa.array([pid], pa.int64()),
                                              pa.array([pickle.dumps(value, protocol=5)], pa.binary())],
                                             names=["pid", "value"])

        row = self.spark.range(0, 1, 1, 1).mapInArrow(task, _RESULT).collect()[0]
        # the pickle our own unit function's result was sent in, by an executor of this session
        # (the trust multiprocessing gives its workers' results), never data read from a file
        return int(row["pid"]), pickle.loads(row["value"])

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)
            self._threads = None


def _in_directory(cwd: str, fn: Callable, args: tuple) -> tuple[int, Any]:
    """``(process id, fn(*args))`` in an executor, run in `cwd` when this machine has it (so a
    relative path means what it meant to the driver). A Python worker runs one task at a time,
    so changing its directory for the task's length touches no other task."""
    if not os.path.isdir(cwd):
        return os.getpid(), _outside(cwd, fn, args)
    before = os.getcwd()
    os.chdir(cwd)
    try:
        return os.getpid(), fn(*args)
    finally:
        os.chdir(before)


def _outside(cwd: str, fn: Callable, args: tuple) -> Any:
    """``fn(*args)`` on an executor without the driver's directory: a file it cannot find is
    said with why (a relative path names another file there), naming the host."""
    try:
        return fn(*args)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{e} (on executor host {socket.gethostname()}, which has no folder {cwd}, the "
                                f"driver's working directory: give the store as an absolute path every executor "
                                f"sees)") from e
