"""The broker's buildIndex flow chart, drawn with the path one real put took through it.

:func:`build_flow_figure` draws the nodes of :data:`rmqlab.analysis.buildsteps.NODES` (decisions as
flat hexagons), the current step's node filled orange, the nodes already passed blue, and beside the
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
from rmqlab.viz import fonts
from rmqlab.viz.widgetkit import WidgetBase, image_widget, show_figure

__all__ = ["build_flow_figure", "BuildIndexStepper", "NODE_POSITIONS"]

#: (x, y) of each node's centre, in chart units (y grows downwards).
NODE_POSITIONS = {
    "dispatch": (0, 0), "file": (0, 1), "new-file": (4.0, 1), "offset-check": (0, 2),
    "rollback-check": (0, 3), "skip": (4.0, 2.55), "keys": (0, 4), "full-check": (0, 5),
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
#: Node box widths, chart units: the main column, and the side nodes (new file, skipped).
_W, _SIDE_W, _H = 3.4, 2.6, 0.66
#: Arrows drawn as polylines around the column: (points, label, where the label goes).
_LOOPS = [
    ([(2.7, 1.33), (1.0, 1.67)], "then", (1.9, 1.42)),                                    # new file -> checks
    ([(1.7, 5), (5.6, 5), (5.6, 1), (5.3, 1)], "yes: retry on the new file", (2.0, 4.95)),
    ([(-1.7, 11), (-2.05, 11), (-2.05, 5), (-1.7, 5)], "next key", (-2.0, 8.0)),
]
_CURRENT, _PASSED, _IDLE = "#fdae6b", "#c6dbef", "#ffffff"
#: Characters of a node label's line, of the main column and of the side nodes; of a step's line.
_LABEL_CHARS, _SIDE_CHARS, _STEP_CHARS = 46, 30, 60
#: The figure: as wide as a notebook's column at 100 dpi (1100 px), so no browser shrinks it.
_FIG_W, _FIG_H = 11.0, 10.0
#: Height of a step's line on the right, and the gap between steps, inches.
_STEP_LINE, _STEP_GAP = 0.165, 0.07


def _width(node: str) -> float:
    return _SIDE_W if NODE_POSITIONS[node][0] > 2 else _W


def _node_patch(kind: str, x: float, y: float, w: float, colour: str, gid: str):
    if kind == "decision":       # a flat hexagon: its label gets nearly the whole width, as in a box
        d = 0.22
        patch = Polygon([(x - w / 2, y), (x - w / 2 + d, y - _H / 2), (x + w / 2 - d, y - _H / 2), (x + w / 2, y),
                         (x + w / 2 - d, y + _H / 2), (x - w / 2 + d, y + _H / 2)],
                        closed=True, facecolor=colour, edgecolor="#555555", linewidth=0.8)
    else:
        style = "round,pad=0.02,rounding_size=0.25" if kind in ("start", "end") else "square,pad=0.02"
        patch = FancyBboxPatch((x - w / 2, y - _H / 2), w, _H, boxstyle=style, facecolor=colour,
                               edgecolor="#555555", linewidth=0.8)
    patch.set_gid(gid)
    return patch


def _label(node: str, text: str) -> str:
    """A node's label wrapped to its box: lines as the package wrote them, longer ones broken at spaces."""
    chars = _SIDE_CHARS if NODE_POSITIONS[node][0] > 2 else _LABEL_CHARS
    return "\n".join(part for line in text.split("\n") for part in textwrap.wrap(line, chars))


def build_flow_figure(steps: list[BuildStep], current: int) -> Figure:
    """The chart with steps ``0..current`` taken: the current node orange (gid ``current:<id>``),
    nodes passed before it blue (``passed:<id>``), the rest white (``node:<id>``); decisions are
    flat hexagons. On the right, the steps so far (as many of the last as fit, at most 16), the
    current one in bold. The figure is as wide as a notebook's column (1100 px at 100 dpi), so
    no browser shrinks its text. Units: chart only; the numbers in the step texts are bytes, ms
    since the epoch and seconds. Cost: one small figure.

    Raises IndexError when `current` is not a step number.
    """
    if not 0 <= current < len(steps):
        raise IndexError(f"step {current} outside 0..{len(steps) - 1}")
    done = {s.node for s in steps[:current]}
    here = steps[current].node
    fig = Figure(figsize=(_FIG_W, _FIG_H))
    ax = fig.add_axes((0.0, 0.0, 0.58, 0.96))
    ax.set_xlim(-2.2, 5.8)
    ax.set_ylim(12.6, -0.6)
    ax.set_axis_off()
    for a, b, label in _EDGES:
        (xa, ya), (xb, yb) = NODE_POSITIONS[a], NODE_POSITIONS[b]
        ax.add_patch(FancyArrowPatch((xa, ya), (xb, yb), arrowstyle="-|>", mutation_scale=9, color="#777777",
                                     linewidth=0.8, shrinkA=14, shrinkB=14))
        if not label:
            continue
        if xa == xb:             # down the column: beside the arrow
            ax.text(xa + 0.08, (ya + yb) / 2, label, fontsize=fonts.SMALL, color="#555555", ha="left", va="center")
        else:                    # to a side node: above the boxes, over the gap between them
            gap = ((xa + _width(a) / 2) + (xb - _width(b) / 2)) / 2
            ax.text(gap, min(ya, yb) - _H / 2 - 0.04 if ya == yb else (ya + yb) / 2 - 0.12, label,
                    fontsize=fonts.SMALL, color="#555555", ha="center", va="bottom" if ya == yb else "center")
    for points, label, (lx, ly) in _LOOPS:
        xs, ys = zip(*points)
        ax.plot(xs[:-1], ys[:-1], color="#777777", linewidth=0.8)
        ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>", mutation_scale=9,
                                     color="#777777", linewidth=0.8, shrinkA=0, shrinkB=0))
        ax.text(lx, ly, label, fontsize=fonts.SMALL, color="#555555", ha="left",
                va="center" if label == "next key" else "bottom", rotation=90 if label == "next key" else 0)
    for node, kind, label in NODES:
        x, y = NODE_POSITIONS[node]
        state = "current" if node == here else "passed" if node in done else "node"
        colour = {"current": _CURRENT, "passed": _PASSED, "node": _IDLE}[state]
        ax.add_patch(_node_patch(kind, x, y, _width(node), colour, f"{state}:{node}"))
        ax.text(x, y, _label(node, label), ha="center", va="center", fontsize=fonts.SMALL, linespacing=1.1)
    ax.text(-2.15, -0.45, "IndexService.buildIndex / IndexFile.putKey", fontsize=fonts.TEXT, fontweight="bold")
    side = fig.add_axes((0.6, 0.0, 0.4, 0.96))
    side.set_axis_off()
    side.set_xlim(0, 1)
    side.set_ylim(0.96 * _FIG_H, 0)          # inches from the top
    side.text(0, 0.0, f"step {current} of {len(steps) - 1}: {here}", fontsize=fonts.TITLE, fontweight="bold",
              va="top")
    texts = {i: textwrap.wrap(f"{i:>2}  {steps[i].node}: {steps[i].text}", _STEP_CHARS, subsequent_indent="      ")
             for i in range(max(0, current - 15), current + 1)}
    tall = {i: _STEP_LINE * len(lines) + _STEP_GAP for i, lines in texts.items()}
    first, used = current, tall[current]
    while first - 1 in texts and used + tall[first - 1] <= 0.96 * _FIG_H - 0.4:
        first -= 1
        used += tall[first]
    y = 0.4
    for i in range(first, current + 1):
        side.text(0, y, "\n".join(texts[i]), fontsize=fonts.SMALL, va="top", family="monospace", linespacing=1.15,
                  fontweight="bold" if i == current else "normal", color="#000000" if i == current else "#444444")
        y += tall[i]
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
