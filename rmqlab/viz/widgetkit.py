"""Building blocks shared by the rmqlab widgets (query explorer, insertion stepper, slot browser).

The widgets keep everything they show in widget *state*: figures become PNG bytes in an
:class:`ipywidgets.Image`, tables become HTML strings in an :class:`ipywidgets.HTML`. A
notebook saved with its widget state, Voilà and a real browser then all show the same pictures,
and tests read the same bytes and strings from Python.

Nothing here keeps a figure open: :func:`figure_png` renders a :class:`matplotlib.figure.Figure`
(made with ``Figure()``, never pyplot) and drops it.
"""
from __future__ import annotations

import html
import io
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = [
    "DEFAULT_DPI",
    "figure_png",
    "image_widget",
    "show_figure",
    "clear_image",
    "frame_html",
    "table_html",
    "message_html",
    "progress_bar",
    "working",
    "WidgetBase",
    "scroll_box",
    "ScrollingFigure",
]

#: Resolution of figures rendered into Image widgets: sharp on ordinary screens, small bytes.
DEFAULT_DPI = 80

#: A PNG's metadata otherwise names the matplotlib version, so equal figures could differ in bytes.
_PNG_METADATA = {"Software": None}


def figure_png(fig: Figure, *, dpi: int = DEFAULT_DPI) -> bytes:
    """`fig` rendered as PNG bytes. Cost: the figure's drawing, O(its artists).

    >>> fig = Figure(figsize=(1, 1)); _ = fig.subplots().plot([0, 1])
    >>> figure_png(fig)[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata=_PNG_METADATA)
    return buf.getvalue()


def image_widget(css_class: str | None = None, fig: Figure | None = None, *,
                 dpi: int = DEFAULT_DPI) -> widgets.Image:
    """An Image widget holding `fig` as PNG (empty when None), with `css_class` added."""
    # align_self: a VBox stretches its children to its width, which would blow small figures up
    image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto",
                                                              align_self="flex-start"))
    if css_class:
        image.add_class(css_class)
    if fig is not None:
        show_figure(image, fig, dpi=dpi)
    else:
        clear_image(image)
    return image


def show_figure(image: widgets.Image, fig: Figure, *, dpi: int = DEFAULT_DPI) -> bytes:
    """Put `fig` into `image` as PNG bytes (and show the image); returns the bytes."""
    data = figure_png(fig, dpi=dpi)
    image.value = data
    image.layout.display = None
    return data


def clear_image(image: widgets.Image) -> None:
    """Empty `image` and hide it (a browser would draw empty bytes as a broken image)."""
    image.value = b""
    image.layout.display = "none"


def frame_html(frame: pd.DataFrame, *, max_rows: int = 50, caption: str | None = None,
               css_class: str = "rmqlab-table", data: dict[str, Any] | None = None,
               titles: pd.DataFrame | None = None, one_line: bool = False,
               left: Iterable[str] = ()) -> str:
    """`frame` as an HTML table (cells escaped), at most `max_rows` rows followed by an
    "N more rows" note. `caption` goes above the table in a ``<caption>``; `data` becomes
    ``data-*`` attributes of the table, for a browser test to read. `titles`, a frame of the
    same shape (or with some of its columns), gives cells a tooltip (the full text of a
    shortened cell); `one_line` keeps every row on one line (no wrapping inside a cell) and
    puts the table in a box that scrolls sideways on its own when it is wider than the page.
    Cells are aligned right (numbers), those of the columns named in `left` left (text).

    >>> text = frame_html(pd.DataFrame({"a": [1, 2, 3]}), max_rows=2, caption="3 rows")
    >>> text.count("<tr>"), "1 more row not shown" in text
    (3, True)
    """
    shown = frame.head(max_rows)
    rows = [[_cell(v) for v in row] for row in shown.itertuples(index=False, name=None)]
    cell_titles = None
    if titles is not None:
        aligned = titles.reindex(index=shown.index, columns=shown.columns)
        cell_titles = [[_cell(v) or None for v in row] for row in aligned.itertuples(index=False, name=None)]
    more = len(frame) - len(shown)
    note = f"{more:,} more row{'s' if more != 1 else ''} not shown" if more > 0 else None
    left = set(left)
    return table_html([str(c) for c in frame.columns], rows, caption=caption, css_class=css_class,
                      data=data, note=note, titles=cell_titles, one_line=one_line,
                      left=[i for i, c in enumerate(frame.columns) if c in left])


def _cell(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    return str(value)


#: Inline styles, so the tables look the same in JupyterLab, Voilà and a saved notebook.
_TABLE_STYLE = "border-collapse:collapse;font-family:monospace;font-size:12px"
_CELL_STYLE = "border:1px solid #ccc;padding:1px 6px;text-align:right"
_HEAD_STYLE = _CELL_STYLE + ";background:#f0f0f0"
HIGHLIGHT = "#ffe08a"      # the row or cell a step just changed
MUTED = "#9a9a9a"          # text of rows that are not in use (entry 0, empty slots)


def table_html(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, caption: str | None = None,
               css_class: str = "rmqlab-table", highlight: Iterable[int] = (),
               muted: Iterable[int] = (), data: dict[str, Any] | None = None,
               note: str | None = None, row_class: str | None = None,
               titles: Sequence[Sequence[str | None]] | None = None, one_line: bool = False,
               left: Iterable[int] = ()) -> str:
    """A small HTML table from plain values (escaped). Rows whose position is in `highlight`
    get a yellow background, rows in `muted` grey text; `row_class` names each row's class
    (``<row_class>-<position>``) so a browser test can find it. `titles` (rows of tooltips,
    None for none) and `one_line` as :func:`frame_html`; `left` holds the positions of the
    columns aligned left.

    >>> table_html(["x"], [[1], ["<b>"]], highlight=[1])  # doctest: +ELLIPSIS
    '<table ...<td ...>1</td>...background:#ffe08a...&lt;b&gt;...'
    """
    highlight, muted = set(highlight), set(muted)
    attrs = "".join(f' data-{html.escape(str(k))}="{html.escape(str(v))}"' for k, v in (data or {}).items())
    cell_style = _CELL_STYLE + (";white-space:nowrap" if one_line else "")
    left = set(left)
    styles = [cell_style + (";text-align:left" if j in left else "") for j in range(len(columns))]
    out = ['<div class="rmqlab-table-box" style="overflow-x:auto;max-width:100%">' if one_line else ""]
    out.append(f'<table class="{html.escape(css_class)}" style="{_TABLE_STYLE}"{attrs}>')
    if caption:
        out.append(f"<caption style=\"text-align:left;font-family:sans-serif\">{html.escape(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f'<th style="{_HEAD_STYLE}">{html.escape(str(c))}</th>'
                                       for c in columns) + "</tr></thead><tbody>")
    for i, row in enumerate(rows):
        style = ""
        if i in highlight:
            style = f' style="background:{HIGHLIGHT}"'
        elif i in muted:
            style = f' style="color:{MUTED}"'
        cls = f' class="{html.escape(row_class)}-{i}"' if row_class else ""
        tips = titles[i] if titles is not None else [None] * len(row)
        out.append(f"<tr{cls}{style}>" + "".join(
            f'<td style="{styles[j] if j < len(styles) else cell_style}"{_title(tip)}>{html.escape(_cell(v))}</td>'
            for j, (v, tip) in enumerate(zip(row, tips))) + "</tr>")
    out.append("</tbody></table>" + ("</div>" if one_line else ""))
    if note:
        out.append(f'<div class="rmqlab-more-rows" style="font-size:12px;color:#666">{html.escape(note)}</div>')
    return "".join(out)


def _title(text: str | None) -> str:
    return f' title="{html.escape(text)}"' if text else ""


def message_html(text: str, kind: str = "error") -> str:
    """A one-paragraph message (escaped): "error" in red, "info" in grey."""
    colour = {"error": "#b00020", "info": "#555", "warning": "#8a6d00"}.get(kind, "#555")
    return (f'<div class="rmqlab-{html.escape(kind)}" style="color:{colour};font-family:sans-serif">'
            f"{html.escape(text)}</div>")


def progress_bar(description: str = "working") -> widgets.IntProgress:
    """An IntProgress bar, hidden until :func:`working` shows it."""
    bar = widgets.IntProgress(value=0, min=0, max=1, description=description,
                              layout=widgets.Layout(visibility="hidden"))
    bar.add_class("rmqlab-progress")
    return bar


@contextmanager
def working(bar: widgets.IntProgress, stages: int) -> Iterator[callable]:
    """Show `bar` for the duration of the block; the block calls the yielded function once per
    finished stage (of `stages`). Hidden again afterwards, also on error."""
    bar.max = max(int(stages), 1)
    bar.value = 0
    bar.layout.visibility = "visible"

    def advance(n: int = 1) -> None:
        bar.value = min(bar.value + n, bar.max)

    try:
        yield advance
    finally:
        bar.value = bar.max
        bar.layout.visibility = "hidden"


class WidgetBase:
    """Shows :attr:`widget` when the object is a cell's value (and in Voilà)."""

    widget: widgets.Widget

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


class StepProgress(WidgetBase):
    """A long job's progress in a notebook: the current step's line of text and a bar of its
    part done. :meth:`line` takes the step's text (``analyse_plan(progress=...)``), :meth:`part`
    (step, done, to do) its progress (``analyse_plan(keys_progress=...)``); the bar is full
    when the job is done. Cost: O(1) a call (a widget update).

    >>> p = StepProgress("hashing keys")
    >>> p.line("[1/2] this plan"); p.part(1, 5, 10)
    >>> p.text.value, p.bar.value, p.bar.max
    ('[1/2] this plan', 5, 10)
    """

    def __init__(self, description: str = "working"):
        self.text = widgets.Label("")
        self.bar = widgets.IntProgress(value=0, min=0, max=1, description=description,
                                       style={"description_width": "initial"})
        self.widget = widgets.VBox([self.text, self.bar])
        self.widget.add_class("rmqlab-step-progress")

    def line(self, text: str) -> None:
        self.text.value = text
        self.bar.value = 0

    def part(self, step: int, done: int, todo: int) -> None:
        self.bar.max = max(int(todo), 1)
        self.bar.value = min(int(done), self.bar.max)


def scroll_box(child: widgets.Widget, *, max_height: str = "36em",
               css_class: str | None = None) -> widgets.Box:
    """`child` (a figure's Image) in a box as wide as the page that scrolls on its own, both
    ways, when `child` is larger: the figure keeps its size, and its text stays readable,
    instead of being shrunk to the width of the page."""
    if isinstance(child, widgets.Image):
        child.layout.max_width = "none"
    box = widgets.Box([child], layout=widgets.Layout(overflow="auto", max_height=max_height, width="100%"))
    if css_class:
        box.add_class(css_class)
    return box


class ScrollingFigure:
    """A figure shown in a notebook at its own size inside a box that scrolls sideways (and
    down, past `max_height`; by default the page scrolls down) when the figure is larger than
    the page: a large diagram keeps text readable where a plain
    figure would be shrunk to the width of the cell. HTML with the PNG inline, so an exported
    notebook shows it too. Cost: one ``savefig`` at `dpi` (the figure is then dropped).

    >>> fig = Figure(figsize=(1, 1)); _ = fig.subplots().plot([0, 1])
    >>> ScrollingFigure(fig, dpi=100)._repr_html_()[:44]
    '<div class="rmqlab-scrolling-figure" style="'
    """

    def __init__(self, fig: Figure, *, dpi: int = DEFAULT_DPI, max_height: str = "none"):
        self.png = figure_png(fig, dpi=dpi)
        self.max_height = max_height

    def _repr_html_(self) -> str:
        import base64

        data = base64.b64encode(self.png).decode("ascii")
        return (f'<div class="rmqlab-scrolling-figure" style="overflow:auto;max-height:{self.max_height};'
                f'max-width:100%;border:1px solid #ddd"><img src="data:image/png;base64,{data}" '
                f'style="max-width:none;display:block"></div>')
