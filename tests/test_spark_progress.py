"""JobProgress against a stand-in status tracker (the real one is exercised by the build tests):
what it counts, what the terminal line and the notebook bar show."""
from __future__ import annotations

import io
from types import SimpleNamespace

from rmqlab.spark.progress import JobProgress, TerminalLine, WidgetBar


class FakeTracker:
    def __init__(self):
        self.jobs = {}

    def getJobIdsForGroup(self, group):
        return list(self.jobs.get(group, {}))

    def getJobInfo(self, job):
        for jobs in self.jobs.values():
            if job in jobs:
                return SimpleNamespace(stageIds=list(jobs[job]))
        return None

    def getStageInfo(self, stage):
        for jobs in self.jobs.values():
            for stages in jobs.values():
                if stage in stages:
                    done, total = stages[stage]
                    return SimpleNamespace(numCompletedTasks=done, numTasks=total)
        return None


class FakeContext:
    def __init__(self):
        self.tracker = FakeTracker()
        self.props = {}

    def statusTracker(self):
        return self.tracker

    def setJobGroup(self, group, description, interruptOnCancel=False):
        self.props["spark.jobGroup.id"] = group

    def setLocalProperty(self, key, value):
        self.props[key] = value


def test_counts_the_tasks_of_its_own_jobs_only():
    sc = FakeContext()
    seen = []
    with JobProgress(sc, "work", report=lambda d, t, what: seen.append((d, t, what)), interval=60) as p:
        assert sc.props["spark.jobGroup.id"] == p.group
        sc.tracker.jobs[p.group] = {1: {10: (3, 4), 11: (0, 2)}}
        sc.tracker.jobs["someone-else"] = {2: {20: (5, 5)}}
        assert p.poll() == (3, 6)
        sc.tracker.jobs[p.group][1] = {10: (4, 4), 11: (2, 2)}
    assert seen[-1] == (6, 6, "work")                 # the final report, on exit
    assert sc.props["spark.jobGroup.id"] is None      # the group is cleared afterwards


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
