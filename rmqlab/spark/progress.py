"""Progress of a running Spark action: a bar in notebooks, a line on a terminal.

Spark's own console bar is turned off by :func:`rmqlab.spark.get_session` (in a notebook it
lands in the cell output as text). :class:`JobProgress` instead tags the jobs it starts
(``SparkSession.addTag``, on both kinds of session) and follows them:

* on classic Spark, through the driver JVM's status tracker, polled from a thread every
  `interval` seconds (reached through the session's JVM, not pyspark's SparkContext);
* on Spark Connect, through the client's own progress reports
  (``SparkSession.registerProgressHandler``: the server sends the stages' task counts with
  the results of each query, every ``spark.connect.progress.reportInterval``, 2 s by default);

and shows tasks done out of tasks known:

* in Jupyter, an ``ipywidgets`` progress bar with a label;
* on a terminal (stderr is a TTY), one line redrawn in place;
* otherwise nothing, or any callable ``report(done, total, description)``.

>>> from rmqlab.spark import get_session                          # doctest: +SKIP
>>> spark = get_session()                                          # doctest: +SKIP
>>> with JobProgress(spark, "counting"):                           # doctest: +SKIP
...     spark.range(10**8).count()
"""
from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable

__all__ = ["JobProgress", "Report"]

Report = Callable[[int, int, str], None]


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class WidgetBar:
    """Progress of one job as an ipywidgets bar in the notebook cell that started it."""

    def __init__(self, description: str):
        import ipywidgets as widgets
        from IPython.display import display

        self.bar = widgets.IntProgress(value=0, min=0, max=1, description="",
                                       layout=widgets.Layout(width="50%"))
        self.label = widgets.Label(description)
        self.box = widgets.HBox([self.bar, self.label])
        display(self.box)

    def __call__(self, done: int, total: int, description: str) -> None:
        self.bar.max = max(total, 1)
        self.bar.value = min(done, self.bar.max)
        self.label.value = f"{description}: {done}/{total} tasks"


class TerminalLine:
    """Progress of one job as one line rewritten in place on a terminal (stderr by default)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.width = 0

    def __call__(self, done: int, total: int, description: str) -> None:
        cells = 30
        filled = cells * done // total if total else 0
        line = (f"\r{description} [{'#' * filled}{'.' * (cells - filled)}] {done}/{total} tasks "
                f"{time.monotonic() - self.start:6.1f} s")
        self.width = max(self.width, len(line))
        self.stream.write(line.ljust(self.width))
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _default_report(description: str):
    if _in_notebook():
        try:
            return WidgetBar(description)
        except ImportError:
            return None
    if getattr(sys.stderr, "isatty", lambda: False)():
        return TerminalLine()
    return None


class JobProgress:
    """Context manager: the Spark jobs started inside it (in this thread) are tracked and
    reported as ``report(done_tasks, total_tasks, description)``, while they run and once at
    the end.

    `spark`: the session (classic or Spark Connect). `report`: True = the default display
    (widget in a notebook, terminal line on a TTY, nothing elsewhere), False/None = none, or a
    callable. Cost: classic, one status-tracker query per stage per poll (every `interval`
    seconds) on the driver; Connect, nothing more than the reports the server sends anyway;
    nothing on the executors.
    """

    def __init__(self, spark, description: str, report: Report | bool | None = True, interval: float = 0.5):
        from rmqlab.spark import is_connect

        self.spark = spark
        self.description = description
        self.interval = interval
        self.report = _default_report(description) if report is True else (report or None)
        self.tag = f"rmqlab-{uuid.uuid4().hex[:12]}"
        self.connect = is_connect(spark)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tracker = None
        self._job_tag: str | None = None
        self._stages: dict[tuple[str | None, int], tuple[int, int]] = {}
        self._lock = threading.Lock()
        self.done = self.total = 0

    def _count(self, stages: Iterable[tuple[int, int]]) -> tuple[int, int]:
        done = total = 0
        for completed, tasks in stages:
            done += completed
            total += tasks
        with self._lock:
            self.done, self.total = max(done, self.done), max(total, self.total)
            return self.done, self.total

    def poll(self) -> tuple[int, int]:
        """(tasks completed, tasks known) over the jobs of this context so far."""
        if self.connect:
            with self._lock:
                stages = list(self._stages.values())
            return self._count(stages)
        if self._tracker is None:
            return self.done, self.total
        tracker = self._tracker
        counts = []
        for job in tracker.getJobIdsForTag(self._job_tag):
            info = tracker.getJobInfo(job)
            for stage in (info.get().stageIds() if info.isDefined() else ()):
                s = tracker.getStageInfo(stage)
                if s.isDefined():
                    counts.append((s.get().numCompletedTasks(), s.get().numTasks()))
        return self._count(counts)

    def _on_progress(self, stages, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        """Spark Connect's progress handler: the stages of one query (operation) so far."""
        with self._lock:
            for stage in stages or ():
                self._stages[(operation_id, stage.stage_id)] = (stage.num_completed_tasks, stage.num_tasks)
        self._show()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._show()

    def _show(self) -> None:
        if self.report is not None:
            done, total = self.poll()
            self.report(done, total, self.description)

    def __enter__(self) -> JobProgress:
        self.spark.addTag(self.tag)
        if self.report is None:
            return self
        if self.connect:
            self.spark.registerProgressHandler(self._on_progress)
        else:
            # the session keeps its tags per thread and gives the jobs its own, longer form of them
            jsession = self.spark._jsparkSession
            self._job_tag = jsession.managedJobTags().get().get(self.tag).get()
            self._tracker = jsession.sparkContext().statusTracker()
            self._thread = threading.Thread(target=self._run, daemon=True, name=self.tag)
            self._thread.start()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.connect and exc_type is None:
            # the server reports every reportInterval, so the last report can predate the last
            # tasks; the queries all returned, so their stages are complete
            with self._lock:
                self._stages = {k: (tasks, tasks) for k, (_, tasks) in self._stages.items()}
        try:
            self._show()
        finally:
            if hasattr(self.report, "close"):
                self.report.close()
            if self.connect and self.report is not None:
                self.spark.removeProgressHandler(self._on_progress)
            self.spark.removeTag(self.tag)
