"""Units of work as Spark tasks: :class:`SparkPool`, a :class:`rmqlab.tables.pool.Pool` whose
workers are a Spark session's executors, so that what a process pool spreads over the cores of
one machine (:func:`rmqlab.verify.verify_path`'s CommitLog files, index files and queues)
spreads over a cluster, and gives the same results in the same order.

Submissions are gathered into Spark jobs of several tasks, a unit a task
(``spark.range(0, k, 1, k).mapInArrow``, as the rest of :mod:`rmqlab.spark`: classic Spark and
Spark Connect alike): a job starts once :attr:`SparkPool.group` units wait, or as soon as the
driver needs the value of one still waiting. A job costs the scheduler far more than a task (on
a 2-core machine under load, 20 one-task jobs one after the other took 9.3 s, one job of 20
tasks 2.7 s), and a verify has hundreds of small units. Jobs start from driver threads, two or
more at once so that the task slots stay busy while one job ends and the next begins, and
:meth:`~rmqlab.tables.pool.Pool.ordered` hands the results back in submission order with at
most a few held in the driver. A task runs its unit's module-level function on an executor
(which must be able to import rmqlab) and sends back its pickled result, one binary value, or
the exception it raised, which the unit's own future raises (one unit's failure is not its
job's neighbours').

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
import traceback
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from rmqlab.tables.pool import Pool

__all__ = ["SparkPool", "task_slots"]

#: the schema of a task's one row: its unit's number in the job, the executor process, whether
#: the unit returned (else it raised), the pickled result or exception (None where the exception
#: does not pickle), and the exception's type, message and traceback
_RESULT = "unit long, pid long, ok boolean, value binary, error string"


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
    """A :class:`~rmqlab.tables.pool.Pool` whose units run as Spark tasks of `spark` (a unit a
    task, :attr:`group` units a job; see the module docstring). Always :attr:`parallel`, also
    with one task slot: the units leave the driver. :attr:`run` records the executors' process
    ids. `jobs`: the task slots to keep busy (default :func:`task_slots`). `group`: units a
    Spark job (default twice `jobs`). `around`: a function giving a context manager each unit
    runs in on its executor (default: none). A context manager; :meth:`close` waits for the jobs
    started and drops the units not yet in one.

    Cost: a Spark job a `group` of submissions (tens of milliseconds of scheduling on a warm
    session, far more under load), a task a submission, a cloudpickle of the functions and
    arguments out and a pickle of each result back.

    >>> from rmqlab.spark import get_session                     # doctest: +SKIP
    >>> with SparkPool(get_session(), "doc") as pool:            # doctest: +SKIP
    ...     list(pool.ordered(abs, [(-3,), (2,), (-1,)]))
    [3, 2, 1]
    """

    def __init__(self, spark: Any, label: str, jobs: int | None = None, around: Callable | None = None,
                 group: int | None = None):
        super().__init__(jobs or task_slots(spark), label)
        if group is not None and group < 1:
            raise ValueError(f"group must be >= 1, got {group!r}")
        self.spark = spark
        #: units a Spark job: the job starts when this many wait (or one waiting is needed)
        self.group = group or 2 * self.jobs
        #: a context each unit runs in on its executor (picklable; ``around()`` gives the context
        #: manager), such as :meth:`rmqlab.spark.mirror.Mirror.on_executor`
        self.around = around
        #: where the driver runs: tasks run there too when the executor has that folder
        self.cwd = os.getcwd()
        self._threads: ThreadPoolExecutor | None = None
        #: submitted units not yet in a job: (function, arguments, their future)
        self._waiting: list[tuple[Callable, tuple, Future]] = []

    @property
    def parallel(self) -> bool:
        return True

    def submit(self, fn: Callable, *args: Any) -> Future:
        """Run ``fn(*args)`` as a Spark task (in the job of the next :attr:`group` units, or
        at once when its value is asked for); ``.result()`` is ``(executor process id, value)``."""
        self.run.units += 1
        unit: Future = Future()
        self._waiting.append((fn, args, unit))
        if len(self._waiting) >= self.group:
            self.start_waiting()
        return unit

    def start_waiting(self) -> None:
        """Start a Spark job of the units waiting for one (none: nothing)."""
        waiting, self._waiting = self._waiting, []
        waiting = [w for w in waiting if w[2].set_running_or_notify_cancel()]
        if not waiting:
            return
        if self._threads is None:
            # two jobs at once and a third starting: the slots stay busy across a job's end
            self._threads = ThreadPoolExecutor(3, thread_name_prefix="rmqlab-spark-job")
        self._threads.submit(self._job, waiting)

    def value(self, unit: Any) -> Any:
        if any(unit is w[2] for w in self._waiting):
            self.start_waiting()
        return super().value(unit)

    def ordered(self, fn: Callable, units: Iterable[tuple], ahead: int | None = None,
                batch: int = 1) -> Generator[Any, None, None]:
        """As :meth:`rmqlab.tables.pool.Pool.ordered`, `ahead` by default two :attr:`group`s: one
        job running while the next fills."""
        return super().ordered(fn, units, 2 * self.group if ahead is None else ahead, batch)

    def submit_all(self, fn: Callable, units: Iterable[tuple], batch: int = 1) -> list:
        """As :meth:`rmqlab.tables.pool.Pool.submit_all`; the last units start too, not
        waiting for a group to fill."""
        out = super().submit_all(fn, units, batch)
        self.start_waiting()
        return out

    def _job(self, waiting: list[tuple[Callable, tuple, Future]]) -> None:
        cwd, around = self.cwd, self.around
        units = [(fn, args) for fn, args, _ in waiting]

        def task(batches):
            import contextlib

            import pyarrow as pa

            numbers = [n for b in batches for n in b.column(0).to_pylist()]
            for n in numbers:
                fn, args = units[n]
                with around() if around is not None else contextlib.nullcontext():
                    pid, ok, value, error = _in_directory(cwd, fn, args)
                yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64()), pa.array([pid], pa.int64()),
                                                  pa.array([ok], pa.bool_()), pa.array([value], pa.binary()),
                                                  pa.array([error], pa.string())],
                                                 names=["unit", "pid", "ok", "value", "error"])

        try:
            k = len(units)
            rows = self.spark.range(0, k, 1, k).mapInArrow(task, _RESULT).collect()
        except BaseException as e:      # the job itself failed: every unit of it says so
            for _, _, unit in waiting:
                unit.set_exception(e)
            return
        seen = set()
        for row in rows:
            n = int(row["unit"])
            seen.add(n)
            # the pickle our own unit function's result (or exception) was sent in, by an
            # executor of this session (the trust multiprocessing gives its workers' results),
            # never data read from a file
            try:
                value, failed = pickle.loads(row["value"]), None
            except Exception as e:      # an exception whose class cannot be made again here
                value, failed = None, e
            if row["ok"] and failed is None:
                waiting[n][2].set_result((int(row["pid"]), value))
            elif row["ok"]:
                waiting[n][2].set_exception(failed)
            else:
                waiting[n][2].set_exception(value if isinstance(value, BaseException) else RuntimeError(row["error"]))
        for n, (_, _, unit) in enumerate(waiting):
            if n not in seen:
                unit.set_exception(RuntimeError(f"Spark job of {k} units: unit {n} sent no result"))

    def close(self) -> None:
        for _, _, unit in self._waiting:
            unit.cancel()
        self._waiting = []
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)
            self._threads = None


def _in_directory(cwd: str, fn: Callable, args: tuple) -> tuple[int, bool, bytes, str | None]:
    """``(process id, whether fn returned, the pickle of what it returned or raised, the
    exception's type, message and traceback or None)`` of ``fn(*args)`` in an executor, run in
    `cwd` when this machine has it (so a relative path means what it meant to the driver). A
    Python worker runs one task at a time, so changing its directory for the task's length
    touches no other task. An exception that does not pickle is sent as the pickle of None."""
    try:
        if not os.path.isdir(cwd):
            return os.getpid(), True, pickle.dumps(_outside(cwd, fn, args), protocol=5), None
        before = os.getcwd()
        os.chdir(cwd)
        try:
            return os.getpid(), True, pickle.dumps(fn(*args), protocol=5), None
        finally:
            os.chdir(before)
    except Exception as e:
        text = f"{type(e).__name__}: {e}\n" + "".join(traceback.format_exception(e))
        try:
            data = pickle.dumps(e, protocol=5)
        except Exception:
            data = pickle.dumps(None, protocol=5)
        return os.getpid(), False, data, text


def _outside(cwd: str, fn: Callable, args: tuple) -> Any:
    """``fn(*args)`` on an executor without the driver's directory: a file it cannot find is
    said with why (a relative path names another file there), naming the host."""
    try:
        return fn(*args)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{e} (on executor host {socket.gethostname()}, which has no folder {cwd}, the "
                                f"driver's working directory: give the store as an absolute path every executor "
                                f"sees)") from e
