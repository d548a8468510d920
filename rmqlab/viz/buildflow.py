"""The broker's buildIndex flow chart, drawn with the path one real put took through it.

:func:`build_flow_figure` draws the nodes of :data:`rmqlab.analysis.buildsteps.NODES` (decisions as
diamonds), the current step's node filled orange, the nodes already passed blue, and beside the
chart the steps so far, each with the numbers :func:`rmqlab.analysis.buildsteps.trace_build_index` read
from the file. :class:`BuildIndexStepper` is the same as a widget: Back / Next buttons and a
slider over the steps. Nothing here computes: the steps come from the package.

>>> import tempfile
>>> from rmqlab.analysis.buildsteps import trace_build_index
>>> from rmqlab.store.indexservice import DispatchRequest, IndexService
>>> with IndexService(tempfile.mkdtemp(), 4, 8, read_only=False, clock=lambda: 0) as svc:
...     steps = trace_build_index(svc, DispatchRequest("T", 0, 1718000000000, keys="a"))
>>> fig = build_flow_figure(steps, 5)
>>> sorted(p.get_gid() for p in fig.axes[0].patches if (p.get_gid() or "").startswith("current"))
['current:keys']
"""
from __future__ import annotations

import textwrap

import ipywidgets as widgets
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Polygon

from rmqlab.analysis.buildsteps import NODES, BuildStep
from rmqlab.viz.widgetkit import WidgetBase, image_widget, show_figure

__all__ = ["build_flow_figure", "BuildIndexStepper", "NODE_POSITIONS"]

#: (x, y) of each node's centre, in chart units (y grows downwards).
NODE_POSITIONS = {
    "dispatch": (0, 0), "file": (0, 1), "new-file": (3.0, 1), "offset-check": (0, 2),
    "rollback-check": (0, 3), "skip": (3.0, 2.55), "keys": (0, 4), "full-check": (0, 5),
    "hash": (0, 6), "slot-read": (0, 7), "time-diff": (0, 8), "write-entry": (0, 9),
    "write-slot": (0, 10), "header": (0, 11), "done": (0, 12),
}
#: Straight arrows down the main column and to the side nodes: (from, to, label).
_EDGES = [
    ("dispatch", "file", ""), ("file", "offset-check", ""), ("file", "new-file", "none, or full"),
    ("offset-check", "rollback-check", "no"), ("offset-check", "skip", "yes"),
    ("rollback-check", "skip", "yes"), ("rollback-check", "keys", "no"),
    ("keys", "full-check", "each key"), ("full-check", "hash", "no"),
    ("hash", "slot-read", ""), ("slot-read", "time-diff", ""), ("time-diff", "write-entry", ""),
    ("write-entry", "write-slot", ""), ("write-slot", "header", ""), ("header", "done", "last key"),
]
#: Arrows drawn as polylines around the column: (points, label, where the label goes).
_LOOPS = [
    ([(1.65, 1.33), (0.7, 1.76)], "then", (1.2, 1.45)),                                   # new file -> checks
    ([(1.35, 5), (4.6, 5), (4.6, 1), (4.35, 1)], "yes: retry on the new file", (2.5, 4.85)),
    ([(-1.35, 11), (-1.7, 11), (-1.7, 5), (-1.35, 5)], "next key", (-1.65, 8.0)),
]
_W, _H = 2.7, 0.66           # node box size, chart units
_CURRENT, _PASSED, _IDLE = "#fdae6b", "#c6dbef", "#ffffff"


def _node_patch(kind: str, x: float, y: float, colour: str, gid: str):
    if kind == "decision":
        patch = Polygon([(x - _W / 2, y), (x, y - _H / 2 - 0.08), (x + _W / 2, y), (x, y + _H / 2 + 0.08)],
                        closed=True, facecolor=colour, edgecolor="#555555", linewidth=0.8)
    else:
        style = "round,pad=0.02,rounding_size=0.25" if kind in ("start", "end") else "square,pad=0.02"
        patch = FancyBboxPatch((x - _W / 2, y - _H / 2), _W, _H, boxstyle=style, facecolor=colour,
                               edgecolor="#555555", linewidth=0.8)
    patch.set_gid(gid)
    return patch


def build_flow_figure(steps: list[BuildStep], current: int) -> Figure:
    """The chart with steps ``0..current`` taken: the current node orange (gid ``current:<id>``),
    nodes passed before it blue (``passed:<id>``), the rest white (``node:<id>``); on the right,
    the steps so far (the last 16), the current one in bold. Units: chart only; the numbers in
    the step texts are bytes, ms since the epoch and seconds. Cost: one small figure.

    Raises IndexError when `current` is not a step number.
    """
    if not 0 <= current < len(steps):
        raise IndexError(f"step {current} outside 0..{len(steps) - 1}")
    done = {s.node for s in steps[:current]}
    here = steps[current].node
    fig = Figure(figsize=(14.0, 9.6))
    ax = fig.add_axes((0.0, 0.0, 0.5, 0.96))
    ax.set_xlim(-1.85, 4.75)
    ax.set_ylim(12.6, -0.6)
    ax.set_axis_off()
    for a, b, label in _EDGES:
        (xa, ya), (xb, yb) = NODE_POSITIONS[a], NODE_POSITIONS[b]
        ax.add_patch(FancyArrowPatch((xa, ya), (xb, yb), arrowstyle="-|>", mutation_scale=9, color="#777777",
                                     linewidth=0.8, shrinkA=14, shrinkB=14))
        if label:
            ax.text((xa + xb) / 2 + (0.08 if xa == xb else 0), (ya + yb) / 2 - (0.12 if ya == yb else 0), label,
                    fontsize=7.5, color="#555555", ha="left" if xa == xb else "center", va="center")
    for points, label, (lx, ly) in _LOOPS:
        xs, ys = zip(*points)
        ax.plot(xs[:-1], ys[:-1], color="#777777", linewidth=0.8)
        ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>", mutation_scale=9,
                                     color="#777777", linewidth=0.8, shrinkA=0, shrinkB=0))
        ax.text(lx, ly, label, fontsize=7.5, color="#555555", ha="left", va="center",
                rotation=90 if label == "next key" else 0)
    for node, kind, label in NODES:
        x, y = NODE_POSITIONS[node]
        state = "current" if node == here else "passed" if node in done else "node"
        colour = {"current": _CURRENT, "passed": _PASSED, "node": _IDLE}[state]
        ax.add_patch(_node_patch(kind, x, y, colour, f"{state}:{node}"))
        ax.text(x, y, label, ha="center", va="center", fontsize=7.5, linespacing=1.1)
    ax.text(-1.8, -0.45, "IndexService.buildIndex / IndexFile.putKey", fontsize=9, fontweight="bold")
    side = fig.add_axes((0.51, 0.0, 0.49, 0.96))
    side.set_axis_off()
    side.set_xlim(0, 1)
    side.set_ylim(1, 0)
    side.text(0, 0.0, f"step {current} of {len(steps) - 1}: {here}", fontsize=11, fontweight="bold", va="top")
    first = max(0, current - 15)
    y = 0.05
    for i in range(first, current + 1):
        lines = textwrap.wrap(f"{i:>2}  {steps[i].node}: {steps[i].text}", 84, subsequent_indent="      ")
        side.text(0, y, "\n".join(lines), fontsize=8, va="top", family="monospace",
                  fontweight="bold" if i == current else "normal", color="#000000" if i == current else "#444444")
        y += 0.0255 * len(lines) + 0.011
    return fig


class BuildIndexStepper(WidgetBase):
    """The steps of :func:`rmqlab.analysis.buildsteps.trace_build_index` as a widget: Back and Next
    buttons and a slider pick the step; the chart and the step list redraw. `start` is the step
    shown first. Attributes: :attr:`slider`, :attr:`back`, :attr:`next`, :attr:`image`, and
    :attr:`shown` (the step on screen)."""

    def __init__(self, steps: list[BuildStep], start: int = 0):
        if not steps:
            raise ValueError("no steps to show")
        self.steps = list(steps)
        self.slider = widgets.IntSlider(value=start, min=0, max=len(steps) - 1, description="step",
                                        continuous_update=False, layout=widgets.Layout(width="420px"))
        self.back = widgets.Button(description="◀ back", layout=widgets.Layout(width="90px"))
        self.next = widgets.Button(description="next ▶", layout=widgets.Layout(width="90px"))
        self.image = image_widget("rmqlab-buildflow")
        self.back.on_click(lambda _: self._move(-1))
        self.next.on_click(lambda _: self._move(+1))
        self.slider.observe(lambda change: self._draw(change["new"]), names="value")
        self.widget = widgets.VBox([widgets.HBox([self.back, self.next, self.slider]), self.image])
        self.widget.add_class("rmqlab-buildindex-stepper")
        self.shown = -1
        self._draw(start)

    def _move(self, delta: int) -> None:
        self.slider.value = min(max(self.slider.value + delta, 0), len(self.steps) - 1)

    def _draw(self, i: int) -> None:
        show_figure(self.image, build_flow_figure(self.steps, i), dpi=96)
        self.shown = i
        self.back.disabled = i == 0
        self.next.disabled = i == len(self.steps) - 1
