"""JobProgress against stand-in sessions, classic (a status tracker) and Spark Connect (progress
handlers; the real ones are exercised by the build tests): what it counts, what the terminal
line and the notebook bar show."""
from __future__ import annotations

import io
from types import SimpleNamespace

from rmqlab.spark.progress import JobProgress, TerminalLine, WidgetBar


class Option:
    """Scala's Option as py4j shows it."""

    def __init__(self, value=None):
        self.value = value

    def isDefined(self):
        return self.value is not None

    def get(self):
        return self.value


class FakeTracker:
    def __init__(self):
        self.jobs = {}

    def getJobIdsForTag(self, tag):
        return list(self.jobs.get(tag, {}))

    def getJobInfo(self, job):
        for jobs in self.jobs.values():
            if job in jobs:
                return Option(SimpleNamespace(stageIds=lambda stages=list(jobs[job]): stages))
        return Option()

    def getStageInfo(self, stage):
        for jobs in self.jobs.values():
            for stages in jobs.values():
                if stage in stages:
                    done, total = stages[stage]
                    return Option(SimpleNamespace(numCompletedTasks=lambda d=done: d, numTasks=lambda t=total: t))
        return Option()


class FakeSession:
    """A classic session as JobProgress sees it: tags, and the JVM session's status tracker
    and per-thread job tags (the JVM's long form of each tag)."""

    def __init__(self):
        self.tracker = FakeTracker()
        self.tags = set()
        jvm_tags = SimpleNamespace(get=lambda tag: Option(f"spark-session-x-thread-y-{tag}"))
        self._jsparkSession = SimpleNamespace(
            managedJobTags=lambda: SimpleNamespace(get=lambda: jvm_tags),
            sparkContext=lambda: SimpleNamespace(statusTracker=lambda: self.tracker))

    def addTag(self, tag):
        self.tags.add(tag)

    def removeTag(self, tag):
        self.tags.discard(tag)


class FakeConnectSession:
    """A Spark Connect session as JobProgress sees it: tags and progress handlers."""

    def __init__(self):
        self.tags = set()
        self.handlers = []

    def addTag(self, tag):
        self.tags.add(tag)

    def removeTag(self, tag):
        self.tags.discard(tag)

    def registerProgressHandler(self, handler):
        self.handlers.append(handler)

    def removeProgressHandler(self, handler):
        self.handlers.remove(handler)


FakeConnectSession.__module__ = "pyspark.sql.connect.session"


def test_counts_the_tasks_of_its_own_jobs_only():
    spark = FakeSession()
    seen = []
    with JobProgress(spark, "work", report=lambda d, t, what: seen.append((d, t, what)), interval=60) as p:
        assert spark.tags == {p.tag}
        mine = f"spark-session-x-thread-y-{p.tag}"
        spark.tracker.jobs[mine] = {1: {10: (3, 4), 11: (0, 2)}}
        spark.tracker.jobs["someone-else"] = {2: {20: (5, 5)}}
        assert p.poll() == (3, 6)
        spark.tracker.jobs[mine][1] = {10: (4, 4), 11: (2, 2)}
    assert seen[-1] == (6, 6, "work")                 # the final report, on exit
    assert spark.tags == set()                        # the tag is removed afterwards


def test_connect_reports_come_from_the_progress_handler():
    from pyspark.sql.connect.shell.progress import StageInfo

    spark = FakeConnectSession()
    seen = []
    with JobProgress(spark, "work", report=lambda d, t, what: seen.append((d, t, what))) as p:
        assert spark.tags == {p.tag} and len(spark.handlers) == 1
        handler = spark.handlers[0]
        handler(stages=[StageInfo(0, 4, 1, 0, False)], inflight_tasks=3, operation_id="op1", done=False)
        handler(stages=[StageInfo(0, 4, 4, 0, True), StageInfo(1, 2, 2, 0, True)], inflight_tasks=0,
                operation_id="op1", done=True)
        handler(stages=[StageInfo(0, 3, 3, 0, True)], inflight_tasks=0, operation_id="op2", done=True)
    assert seen[0] == (1, 4, "work") and seen[-1] == (9, 9, "work")
    assert spark.handlers == [] and spark.tags == set()


def test_no_report_registers_nothing():
    spark = FakeConnectSession()
    with JobProgress(spark, "work", report=None):
        assert spark.handlers == []
    assert spark.tags == set()


def test_terminal_line_redraws_in_place():
    out = io.StringIO()
    line = TerminalLine(out)
    line(1, 4, "building")
    line(4, 4, "building")
    line.close()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n")
    assert "[" + "#" * 30 + "] 4/4 tasks" in text


def test_notebook_bar_shows_done_of_total(monkeypatch):
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: None)
    bar = WidgetBar("hashing")
    bar(3, 8, "hashing")
    assert (bar.bar.value, bar.bar.max) == (3, 8)
    assert bar.label.value == "hashing: 3/8 tasks"
