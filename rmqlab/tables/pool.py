"""Independent units of work over a pool of processes, their results taken back in the order
the units were given, so that whatever is made of them is the same with any number of
processes (``--jobs``).

:class:`Pool` runs ``fn(*args)`` for each unit in a worker process and hands the results back
in submission order (:meth:`Pool.ordered`), at most a few units ahead of the one being
consumed, so the parent holds a bounded number of results. Workers are forked from
multiprocessing's fork server (``spawn`` where there is none): a process started clean, with
no thread of the parent, which imports the modules the first pool names once (NumPy, pandas,
PyArrow and the checks take about a second), so a worker starts in milliseconds and no
thread pool or lock of the parent is copied half-way. As with every multiprocessing start
method but fork, a worker imports the parent's main module again, so it must be a file, a
module (``python -m``) or an interactive session, not a program read from standard input
(``python -``). With ``jobs=1`` nothing is started: each unit runs in the calling process when
its result is taken, exactly the serial program (a caller whose serial form streams runs it
itself and counts its units with :meth:`Pool.ran_here`).

:func:`default_jobs` is the rule for ``jobs=None``: the cores this process may run on, at most
one a unit, and 1 when the work is smaller than :data:`SMALL_WORK_BYTES` (the workers' start-up,
about a second to import NumPy, pandas, PyArrow and the checks, would cost more than it saves).

:data:`RUNS` records, per pool, how many units ran and in which processes: for tests and
benchmarks that must know the work really left the parent.
"""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

#: below this many bytes of input, :func:`default_jobs` is 1: starting workers costs about a
#: second (NumPy, pandas, PyArrow and the checks imported once more), what one process checks
#: of about this much
SMALL_WORK_BYTES = 256 << 20


@dataclass
class PoolRun:
    """One :class:`Pool`'s work: its label, the jobs asked for, the units run and the ids of the
    processes they ran in (the parent's alone when ``jobs`` is 1)."""

    label: str
    jobs: int
    units: int = 0
    pids: set[int] = field(default_factory=set)


#: the pools of this process, oldest first (the last :data:`MAX_RUNS` kept)
RUNS: list[PoolRun] = []
MAX_RUNS = 64


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one, else
    ``os.cpu_count()``), at least 1. Cost: one system call."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _context(preload: tuple[str, ...]):
    """The multiprocessing context workers start from: the fork server, which imports `preload`
    when it starts (the first pool of this process starts it), else spawn."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(preload))
    return ctx


def start_fork_server(preload: tuple[str, ...]) -> None:
    """Start the workers' fork server now, importing `preload` in its own process while this one
    goes on (its imports, the listing of the input), so that a :class:`Pool` made later with
    the same `preload` forks its workers at once. Nothing where there is no fork server (spawn),
    on a machine of one core, or when it runs already. Cost: a process start, in the
    background; the server stays until this process ends."""
    import multiprocessing

    if usable_cores() < 2 or "forkserver" not in multiprocessing.get_all_start_methods():
        return
    from multiprocessing import forkserver

    _context(preload)
    forkserver.ensure_running()


def default_jobs(units: int, work_bytes: int) -> int:
    """The number of processes for `units` independent units holding `work_bytes` bytes of input
    in all: :func:`usable_cores`, at most `units`, and 1 below :data:`SMALL_WORK_BYTES`.
    Cost: O(1).

    >>> default_jobs(10, 1 << 20)
    1
    >>> default_jobs(1, 1 << 40)
    1
    """
    if work_bytes < SMALL_WORK_BYTES or units <= 1:
        return 1
    return max(1, min(usable_cores(), units))


def check_jobs(jobs: int | None) -> None:
    """Raise ValueError unless `jobs` is None (the default rule) or at least 1. Cost: O(1)."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs must be >= 1 (or None for the default), got {jobs!r}")


def _call(fn: Callable, args: tuple) -> tuple[int, Any]:
    """A unit in a worker: (the worker's process id, the result)."""
    return os.getpid(), fn(*args)


def _batches(units: Iterable[tuple], size: int) -> Generator[list[tuple], None, None]:
    """The units in lists of `size` (the last may be shorter)."""
    part: list[tuple] = []
    for args in units:
        part.append(args)
        if len(part) == size:
            yield part
            part = []
    if part:
        yield part


def _run_batch(fn: Callable, batch: list[tuple]) -> list[Any]:
    """A batch of units in one worker: ``fn(*args)`` of each, in order."""
    return [fn(*args) for args in batch]


class _Ran:
    """A unit run in the calling process when its result is first asked for (``jobs=1``)."""

    def __init__(self, fn: Callable, args: tuple):
        self.unit: tuple[Callable, tuple] | None = (fn, args)
        self.value: tuple[int, Any] = (0, None)

    def result(self) -> tuple[int, Any]:
        if self.unit is not None:
            fn, args = self.unit
            self.unit = None        # the unit's inputs are not kept past its run
            self.value = _call(fn, args)
        return self.value


class Pool:
    """A pool of `jobs` worker processes, started when the first unit is submitted; a context
    manager (:meth:`close` stops the workers). Functions and their arguments and results cross
    the process boundary by pickle: functions must be module-level, and a result should be a
    summary, not the data it was made from. `preload`: the modules the units need (imported
    once by the fork server, when this is the first pool of the process).

    Cost: the fork server's start-up (about a second, the first pool of a process), a fork a
    worker, then a pickle of each unit's arguments and result. ``jobs=1``: none of this; each
    unit runs in this process.

    >>> with Pool(1, "doc") as pool:
    ...     list(pool.ordered(abs, [(-3,), (2,), (-1,)]))
    [3, 2, 1]
    >>> RUNS[-1].units, RUNS[-1].pids == {os.getpid()}
    (3, True)
    """

    def __init__(self, jobs: int, label: str, preload: tuple[str, ...] = ()):
        check_jobs(jobs)
        self.jobs = jobs
        #: modules the workers' fork server imports first (where this pool is the first to start it)
        self.preload = preload
        self.run = PoolRun(label, jobs)
        RUNS.append(self.run)
        del RUNS[:-MAX_RUNS]
        self._executor: ProcessPoolExecutor | None = None

    @property
    def parallel(self) -> bool:
        """Whether units run in worker processes (``jobs`` > 1)."""
        return self.jobs > 1

    def submit(self, fn: Callable, *args: Any) -> Future | _Ran:
        """Run ``fn(*args)`` as a unit; ``.result()`` of the answer is ``(process id, value)``."""
        self.run.units += 1
        if not self.parallel:
            return _Ran(fn, args)
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.jobs, mp_context=_context(self.preload))
        return self._executor.submit(_call, fn, args)

    def ran_here(self) -> None:
        """Count a unit the caller ran itself, in this process (its serial form of the work)."""
        self.run.units += 1
        self.run.pids.add(os.getpid())

    def value(self, unit: Future | _Ran) -> Any:
        """The value of a submitted unit (waiting for it), its process recorded in :attr:`run`."""
        pid, value = unit.result()
        self.run.pids.add(pid)
        return value

    def ordered(self, fn: Callable, units: Iterable[tuple], ahead: int | None = None,
                batch: int = 1) -> Generator[Any, None, None]:
        """``fn(*args)`` of each tuple of `units`, in their order, at most `ahead` submissions
        (default twice the jobs) past the one being handed back: the parent holds that many
        results at most. `batch`: units sent to a worker together, one submission (for units
        much smaller than a submission's cost: a pickle each way, or a Spark job). Closing the
        iterator early cancels the submissions not yet started."""
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch!r}")
        ahead = max(1, 2 * self.jobs if ahead is None else ahead)
        queue: deque = deque()
        try:
            for args in (iter(units) if batch == 1 else _batches(units, batch)):
                if batch == 1:
                    queue.append(self.submit(fn, *args))
                else:
                    queue.append(self.submit(_run_batch, fn, args))
                    self.run.units += len(args) - 1     # a unit each, not a submission
                if len(queue) > ahead:
                    yield from self._taken(queue.popleft(), batch)
            while queue:
                yield from self._taken(queue.popleft(), batch)
        finally:
            for unit in queue:
                if isinstance(unit, Future):
                    unit.cancel()

    def submit_all(self, fn: Callable, units: Iterable[tuple], batch: int = 1) -> list[Future | _Ran]:
        """Submit ``fn(*args)`` of every tuple of `units` now, `batch` units a submission (as
        :meth:`ordered`), for :meth:`values` later: work that needs nothing the caller does
        next, started ahead of it so that a worker is never idle waiting for it. The parent then
        holds every result until it takes them. ``jobs=1``: nothing runs until taken."""
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch!r}")
        if batch == 1:
            return [self.submit(fn, *args) for args in units]
        out: list[Future | _Ran] = []
        for args in _batches(units, batch):
            out.append(self.submit(_run_batch, fn, args))
            self.run.units += len(args) - 1     # a unit each, not a submission
        return out

    def values(self, submissions: list[Future | _Ran], batch: int = 1) -> Generator[Any, None, None]:
        """The values of :meth:`submit_all`'s submissions (made with the same `batch`), a unit at
        a time in their order, waiting for each."""
        for unit in submissions:
            yield from self._taken(unit, batch)

    def _taken(self, unit: Future | _Ran, batch: int) -> Generator[Any, None, None]:
        """The value of a submission: one unit's, or each of a batch's."""
        value = self.value(unit)
        if batch == 1:
            yield value
        else:
            yield from value

    def close(self) -> None:
        """Stop the workers (units not started are cancelled)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ThreadPool(Pool):
    """A :class:`Pool` whose units run on `jobs` threads of this process: for units whose work
    is C that releases the GIL (the Python around it takes turns), where a worker process would
    cost its start and a copy of the result. Arguments and results are passed as they are (no
    pickle); :attr:`run` records this process. ``jobs=1``: each unit runs when taken, as
    :class:`Pool` does. `thread_name_prefix`: the threads' names (default ``rmqlab-<label>``).

    Cost: a thread a job, started at the first submission; nothing a unit but the hand-over.

    >>> with ThreadPool(2, "doc") as pool:
    ...     list(pool.ordered(abs, [(-3,), (2,), (-1,)]))
    [3, 2, 1]
    >>> RUNS[-1].pids == {os.getpid()}
    True
    """

    def __init__(self, jobs: int, label: str, thread_name_prefix: str | None = None):
        super().__init__(jobs, label)
        self.thread_name_prefix = thread_name_prefix or f"rmqlab-{label}"
        self._threads: ThreadPoolExecutor | None = None

    def submit(self, fn: Callable, *args: Any) -> Future | _Ran:
        """Run ``fn(*args)`` as a unit on a thread; ``.result()`` is ``(process id, value)``."""
        self.run.units += 1
        if not self.parallel:
            return _Ran(fn, args)
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.jobs, thread_name_prefix=self.thread_name_prefix)
        return self._threads.submit(_call, fn, args)

    def close(self) -> None:
        """Wait for the units started (units not started are cancelled)."""
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)
            self._threads = None
