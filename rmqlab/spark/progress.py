"""Progress of a running Spark action: a bar in notebooks, a line on a terminal.

Spark's own console bar is turned off by :func:`rmqlab.spark.get_session` (in a notebook it
lands in the cell output as text). :class:`JobProgress` instead watches the jobs it starts
through the driver's status tracker (``SparkContext.statusTracker``, polled from a thread
every `interval` seconds) and shows tasks done out of tasks known:

* in Jupyter, an ``ipywidgets`` progress bar with a label;
* on a terminal (stderr is a TTY), one line redrawn in place;
* otherwise nothing, or any callable ``report(done, total, description)``.

>>> from rmqlab.spark import get_session                          # doctest: +SKIP
>>> spark = get_session()                                          # doctest: +SKIP
>>> with JobProgress(spark.sparkContext, "counting"):              # doctest: +SKIP
...     spark.range(10**8).count()
"""
from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable

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
    reported as ``report(done_tasks, total_tasks, description)``, every `interval` seconds
    while they run and once at the end.

    `report`: True = the default display (widget in a notebook, terminal line on a TTY,
    nothing elsewhere), False/None = none, or a callable. Cost: one status-tracker query per
    stage per poll on the driver; nothing on the executors.
    """

    def __init__(self, sc, description: str, report: Report | bool | None = True, interval: float = 0.5):
        self.sc = sc
        self.description = description
        self.interval = interval
        self.report = _default_report(description) if report is True else (report or None)
        self.group = f"rmqlab-{uuid.uuid4().hex[:12]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.done = self.total = 0

    def poll(self) -> tuple[int, int]:
        """(tasks completed, tasks known) over the jobs of this context so far."""
        tracker = self.sc.statusTracker()
        done = total = 0
        for job in tracker.getJobIdsForGroup(self.group):
            info = tracker.getJobInfo(job)
            for stage in (info.stageIds if info else ()):
                s = tracker.getStageInfo(stage)
                if s is not None:
                    done += s.numCompletedTasks
                    total += s.numTasks
        self.done, self.total = max(done, self.done), max(total, self.total)
        return self.done, self.total

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._show()

    def _show(self) -> None:
        if self.report is not None:
            done, total = self.poll()
            self.report(done, total, self.description)

    def __enter__(self) -> JobProgress:
        self.sc.setJobGroup(self.group, self.description, interruptOnCancel=True)
        if self.report is not None:
            self._thread = threading.Thread(target=self._run, daemon=True, name=self.group)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self._show()
        finally:
            if hasattr(self.report, "close"):
                self.report.close()
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)
