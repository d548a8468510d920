"""A legibility rule for figures, judged from matplotlib's own renderer: what a reader sees.

:func:`check` draws a figure at the resolution it is shown at (:class:`Shown`: the figure's dpi
and the width of the page column that scales a wider picture down) and returns a
:class:`Report` with one :class:`Finding` per breach of the rule:

* ``small-text``: a text whose font size, in pixels on the screen, is under :data:`MIN_PX`
  (points x dpi / 72 x min(1, column px / figure px));
* ``outside-figure``: a text whose extent leaves the figure;
* ``clipped``: a text clipped by its axes (``clip_on``) that reaches past the clip box;
* ``outside-box``: a text drawn inside a box (a ``Rectangle`` or ``FancyBboxPatch`` of its axes
  holding the text's anchor point) that runs out of that box, or a text (with its own
  background box, if it has one) lying across the edge of a diagram's box (a
  ``FancyBboxPatch``: bars under a label are data, not boxes);
* ``overlap``: two texts whose extents (with their background boxes) share an area, rotated
  texts as rotated rectangles;
* ``legend-over-data``: a legend whose extent covers a line's points or segments, a scatter's
  points, a bar or a line collection of the axes it lies over (filled areas, such as bands,
  and spans as high or as wide as the axes count as background, not data).

Only texts the renderer draws count: visible, not empty, tick labels of ticks in view. Cost:
one draw of the figure, then O(texts²) for overlaps and O(points) per legend.

:func:`table_index_shown` is the table half of the rule: a table's HTML shows no 0..N index.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.transforms import Bbox

__all__ = ["MIN_PX", "COLUMN_PX", "RULES", "Shown", "Finding", "Report", "check", "table_index_shown"]

#: The smallest font size a reader reads comfortably on a screen, pixels.
MIN_PX = 9.0
#: Width of a notebook's output column in a 1280 px browser window, pixels.
COLUMN_PX = 1100.0
#: Every kind of finding, in the order reports list them.
RULES = ("small-text", "outside-figure", "clipped", "outside-box", "overlap", "legend-over-data")
#: Slack for extents that touch (anti-aliasing, rounding), pixels.
_SLACK = 1.0


@dataclass(frozen=True)
class Shown:
    """How a figure reaches the reader: rendered at `dpi`; `column_px` is the width the browser
    shrinks a wider picture to (None: shown at its own size, in a box that scrolls)."""

    dpi: float = 100.0
    column_px: float | None = COLUMN_PX

    def scale(self, fig: Figure) -> float:
        """The browser's scale factor for `fig` drawn at :attr:`dpi` (1 when it fits)."""
        width = fig.get_figwidth() * self.dpi
        return 1.0 if self.column_px is None else min(1.0, self.column_px / width)


@dataclass(frozen=True)
class Finding:
    """One breach: its rule (one of :data:`RULES`) and what breaks it, in words."""

    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


@dataclass
class Report:
    """The verdict on one figure: the smallest text on screen (px) and every finding."""

    smallest_px: float
    findings: list[Finding] = field(default_factory=list)

    def count(self, *rules: str) -> int:
        """The number of findings of `rules`."""
        return sum(f.rule in rules for f in self.findings)

    @property
    def ok(self) -> bool:
        """True when nothing breaks the rule."""
        return not self.findings

    def row(self, name: str) -> str:
        """A line of the before/after tables: name, smallest px, overlaps, clippings, legend hits, small texts."""
        return (f"{name:<44} {self.smallest_px:>6.1f} {self.count('overlap'):>8} "
                f"{self.count('outside-figure', 'clipped', 'outside-box'):>9} {self.count('legend-over-data'):>7} "
                f"{self.count('small-text'):>6}")


#: The header of :meth:`Report.row`'s lines.
HEADER = f"{'figure':<44} {'min px':>6} {'overlaps':>8} {'clippings':>9} {'legend':>7} {'small':>6}"


@contextmanager
def _drawn_texts() -> Iterator[list[Text]]:
    """Record every Text the renderer really draws while the block runs."""
    drawn: list[Text] = []
    original = Text.draw

    def draw(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return original(self, renderer)

    Text.draw = draw  # type: ignore[method-assign]
    try:
        yield drawn
    finally:
        Text.draw = original  # type: ignore[method-assign]


def _name(t: Text) -> str:
    text = " ".join(t.get_text().split())
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _corners(t: Text, renderer, box: Bbox) -> np.ndarray:
    """The four corners of `t`'s rotated rectangle on screen (its axis-aligned box when not rotated)."""
    angle = t.get_rotation() % 180
    if min(angle, 180 - angle) < 1 or abs(angle - 90) < 1:
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    flat = Text(text=t.get_text(), fontproperties=t.get_fontproperties(), linespacing=t.get_linespacing())
    flat.set_figure(t.get_figure(root=True))
    unrotated = flat.get_window_extent(renderer)
    w, h = unrotated.width / 2, unrotated.height / 2
    c = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
    r = math.radians(t.get_rotation())
    rot = np.array([[math.cos(r), -math.sin(r)], [math.sin(r), math.cos(r)]])
    return c + np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) @ rot.T


def _polygons_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """True when the convex polygons `a` and `b` share more than a sliver (separating axis test)."""
    for poly in (a, b):
        for i in range(len(poly)):
            edge = poly[(i + 1) % len(poly)] - poly[i]
            normal = np.array([-edge[1], edge[0]])
            norm = np.hypot(*normal)
            if norm == 0:
                continue
            normal = normal / norm
            pa, pb = a @ normal, b @ normal
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= _SLACK:
                return False
    return True


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return (inner.x0 >= outer.x0 - _SLACK and inner.y0 >= outer.y0 - _SLACK
            and inner.x1 <= outer.x1 + _SLACK and inner.y1 <= outer.y1 + _SLACK)


def _boxes(t: Text, renderer) -> list[tuple[Bbox, bool]]:
    """The extents of the box patches (Rectangle, FancyBboxPatch) of `t`'s axes, or of its figure,
    less spans as high or as wide as the axes; each with True for a diagram's box (a
    FancyBboxPatch), False for a bar."""
    holder = t.axes if t.axes is not None else t.get_figure(root=True)
    boxes = []
    for p in holder.patches:
        if not isinstance(p, Rectangle | FancyBboxPatch) or not p.get_visible():
            continue
        box = p.get_window_extent(renderer)
        if t.axes is None or not _spans(box, t.axes.bbox):
            boxes.append((box, isinstance(p, FancyBboxPatch)))
    return boxes


def _box_problems(t: Text, renderer, extent: Bbox) -> list[str]:
    """How `t` (on screen: `extent`, its own background box included) leaves the box it labels (the
    smallest box holding its anchor point) or crosses the edge of another box."""
    anchor = t.get_transform().transform(t.get_unitless_position())
    boxes = _boxes(t, renderer)
    holding = [b for b, _ in boxes if b.x0 + _SLACK < anchor[0] < b.x1 - _SLACK
               and b.y0 + _SLACK < anchor[1] < b.y1 - _SLACK]
    own = min(holding, key=lambda b: b.width * b.height) if holding else None
    if own is not None and not _inside(t.get_window_extent(renderer), own):
        return [f"{_name(t)} runs out of its box"]
    for b, diagram in boxes:
        if not diagram or b is own or (own is not None and _inside(own, b)):
            continue
        inter = Bbox.intersection(extent, b)
        if inter is not None and inter.width > _SLACK and inter.height > _SLACK and not _inside(extent, b):
            return [f"{_name(t)} crosses the edge of a box"]
    return []


def _spans(box: Bbox, axes_box: Bbox) -> bool:
    """True for a patch as high or as wide as its axes (a span, a background): not data."""
    return (box.height >= axes_box.height - _SLACK) or (box.width >= axes_box.width - _SLACK)


def _points_in(area: Bbox, xy: np.ndarray) -> bool:
    """True when a point of `xy` (n x 2, display coordinates) lies in `area`."""
    return bool(((xy[:, 0] >= area.x0) & (xy[:, 0] <= area.x1) & (xy[:, 1] >= area.y0) & (xy[:, 1] <= area.y1)).any())


def _legend_hits(legend, renderer, axes) -> list[str]:
    """What of `axes`' data the `legend` covers, one phrase a hit."""
    lbox = legend.get_window_extent(renderer)
    area = Bbox.intersection(lbox, axes.bbox)
    if area is None or area.width <= _SLACK or area.height <= _SLACK:
        return []
    hits = []
    for line in axes.lines:
        if not line.get_visible() or line.get_label().startswith("_legend"):
            continue
        xy = line.get_transform().transform(line.get_xydata())
        xy = xy[np.isfinite(xy).all(axis=1)]
        if len(xy) == 0:
            continue
        drawn = line.get_linestyle() not in ("None", "none", "", " ") and len(xy) > 1
        path = Path(xy)
        if (drawn and path.intersects_bbox(area, filled=False)) or _points_in(area, xy):
            hits.append(f"line {line.get_label()!r}")
    for p in axes.patches:
        if isinstance(p, Rectangle) and p.get_visible():
            box = p.get_window_extent(renderer)
            inter = Bbox.intersection(box, area)
            if inter is not None and inter.width > _SLACK and inter.height > _SLACK and not _spans(box, axes.bbox):
                hits.append(f"bar {p.get_label() or f'at x={box.x0:.0f}'!r}")
    for c in axes.collections:
        if not c.get_visible():
            continue
        if isinstance(c, PathCollection):
            xy = c.get_offset_transform().transform(c.get_offsets())
            if len(xy) and _points_in(area, xy):
                hits.append(f"points {c.get_label()!r}")
        elif isinstance(c, LineCollection):
            trans = c.get_transform()
            if any(Path(trans.transform(seg)).intersects_bbox(area, filled=False) for seg in c.get_segments()
                   if len(seg) > 1):
                hits.append(f"lines {c.get_label()!r}")
    return hits


def check(fig: Figure, shown: Shown = Shown()) -> Report:
    """Draw `fig` as it is `shown` and judge every text and legend by the rule (module docstring)."""
    fig.set_dpi(shown.dpi)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    with _drawn_texts() as texts:
        canvas.draw()
    renderer = canvas.get_renderer()
    scale = shown.scale(fig)
    report = Report(smallest_px=math.inf)
    unique = list(dict.fromkeys(texts))
    boxes = []
    for t in unique:
        px = t.get_fontsize() * shown.dpi / 72 * scale
        report.smallest_px = min(report.smallest_px, px)
        if px < MIN_PX - 1e-9:
            report.findings.append(Finding("small-text", f"{_name(t)} is {px:.1f} px"))
        box = t.get_window_extent(renderer)
        back = t.get_bbox_patch()
        extent = Bbox.union([box, back.get_window_extent(renderer)]) if back is not None else box
        boxes.append((t, extent, _corners(t, renderer, extent)))
        if not _inside(box, fig.bbox):
            report.findings.append(Finding("outside-figure", f"{_name(t)} reaches past the figure's edge"))
        clip = t.get_clip_box() if t.get_clip_on() else None
        if clip is not None and not _inside(box, clip):
            report.findings.append(Finding("clipped", f"{_name(t)} is cut by its axes"))
        for problem in _box_problems(t, renderer, extent):
            report.findings.append(Finding("outside-box", problem))
    for i, (a, abox, acorners) in enumerate(boxes):
        for b, bbox_, bcorners in boxes[i + 1:]:
            inter = Bbox.intersection(abox, bbox_)
            if inter is None or inter.width <= _SLACK or inter.height <= _SLACK:
                continue
            if _polygons_overlap(acorners, bcorners):
                report.findings.append(Finding("overlap", f"{_name(a)} and {_name(b)}"))
    legends = [(ax.get_legend(), [ax]) for ax in fig.axes if ax.get_legend() is not None]
    legends += [(lg, fig.axes) for lg in fig.legends]
    for legend, axes_list in legends:
        if not legend.get_visible():
            continue
        for ax in axes_list:
            for hit in _legend_hits(legend, renderer, ax):
                title = ax.get_title() or "an axes"
                report.findings.append(Finding("legend-over-data", f"the legend covers {hit} of {title!r}"))
    if math.isinf(report.smallest_px):
        report.smallest_px = 0.0
    return report


def table_index_shown(html: str) -> bool:
    """True when a table's HTML shows pandas' row numbers (0..N, or what is left of them after a
    filter): a first cell of every body row that is a header cell (``<th>``) holding a whole
    number. Row labels (names, keys) are not row numbers. Cost: O(len(html))."""
    import re

    rows = re.findall(r"<tr[^>]*>\s*(<t[hd])[^>]*>([^<]*)<", html.split("<tbody>", 1)[-1])
    if not rows:
        return False
    return all(tag == "<th" and text.strip().isdigit() for tag, text in rows)
