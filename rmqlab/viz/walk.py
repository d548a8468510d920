"""The query-walk diagram: what a key query read, file by file and entry by entry, and why it
stopped.

:func:`walk_table` turns a query trace into one DataFrame row per thing the diagram draws;
:func:`query_walk_figure` draws it. Both take either trace the package records:

* :class:`rmqlab.formats.indexfile.QueryTrace` - one file's chain walk
  (:meth:`IndexFile.trace_query <rmqlab.formats.indexfile.IndexFile.trace_query>`);
* :class:`rmqlab.store.indexservice.DirectoryQueryTrace` - a whole ``index/`` folder, files newest
  first, each searched, skipped (its time range does not touch the query) or never reached
  (:meth:`IndexService.trace_query <rmqlab.store.indexservice.IndexService.trace_query>`, also the
  ``trace`` of :meth:`rmqlab.store.directory.Store.explain_key`).

Every entry read is one of three marks (:data:`MARKS`): ``returned`` (stored hash equal to the
key's and stored time inside [begin, end]: the broker appends its offset), ``hash-match`` (the
hash matched but the stored time is outside the range) and ``read`` (another hash: a different
key that shares the slot). The broker compares hashes only, so a ``returned`` entry can still
belong to another key with the same hash; only the CommitLog tells (see :mod:`rmqlab.store.keyquery`).

>>> import tempfile, os
>>> from rmqlab.formats.indexfile import IndexFile
>>> with IndexFile.create(os.path.join(tempfile.mkdtemp(), "f"), 4, 16) as f:
...     for i, k in enumerate(["T#Aa", "T#BB", "T#Aa"]):       # "Aa" and "BB" share a hash
...         _ = f.put_key(k, 100 * i, 1718000000000 + 1000 * i)
...     t = f.trace_query("T#Aa", begin=1718000001000)
>>> walk_table(t)[["entry", "mark"]].values.tolist()
[[3, 'returned'], [2, 'returned'], [1, 'hash-match']]
>>> import io
>>> query_walk_figure(t).savefig(io.BytesIO(), format="png")
"""
from __future__ import annotations

import datetime as _dt
import math
import textwrap
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch, Rectangle
from matplotlib.path import Path as MplPath

from rmqlab.formats.indexfile import STOP_REASONS, QueryTrace
from rmqlab.jvm.hashcode import index_hash
from rmqlab.jvm.longs import LONG_MAX
from rmqlab.store.indexservice import VISIT_REASONS, DirectoryQueryTrace
from rmqlab.viz.fonts import MONO

__all__ = [
    "MARKS",
    "MARK_COLOURS",
    "FILE_MARKS",
    "WALK_TABLE_COLUMNS",
    "walk_table",
    "query_walk_figure",
    "walk_stops_figure",
    "READABLE_DPI",
]

Trace = QueryTrace | DirectoryQueryTrace

#: Marks of entries read, and what each means.
MARKS = {
    "returned": "hash and stored time match: the broker returns this offset",
    "hash-match": "the hash matches but the stored time is outside [begin, end]",
    "read": "another hash: a different key in the same slot",
}
#: Marks of per-file rows that stand for no entry read.
FILE_MARKS = {
    "skipped": "the file's time range does not touch the query: not searched",
    "not-visited": "not visited: the walk stopped at a newer file",
    "nothing-read": "searched, but no entry was read (empty slot or file, or max_num already reached)",
}
#: Face colour of each mark's box in :func:`query_walk_figure`.
MARK_COLOURS = {
    "returned": "#9be29b",
    "hash-match": "#ffbf70",
    "read": "#d0d0d0",
}
_LEGEND_LABELS = {
    "returned": "returned (hash and time match)",
    "hash-match": "hash matches, time outside [begin, end]",
    "read": "other hash (another key in the slot)",
}
_UNREACHED_EDGE = "#d62728"
_SLOT_COLOUR = "#cfe3ff"
_MORE_COLOUR = "#ffffff"
_SKIPPED_COLOUR = "#ececec"
_LANE_COLOURS = ("#fafafa", "#f2f5fa")

#: Columns of :func:`walk_table`, in order.
WALK_TABLE_COLUMNS = [
    "file", "position", "action", "after", "walk_stop", "query_stop", "slot", "slot_value",
    "file_begin_timestamp", "file_end_timestamp", "order", "step", "entry", "key_hash",
    "phy_offset", "time_diff", "time_read", "prev_index", "hash_match", "time_match",
    "returned", "mark",
]
_STEP_COLUMNS = ["entry", "key_hash", "phy_offset", "time_diff", "time_read", "prev_index",
                 "hash_match", "time_match", "returned"]
_INT_COLUMNS = ["position", "slot", "slot_value", "file_begin_timestamp", "file_end_timestamp",
                "order", "step", "entry", "key_hash", "phy_offset", "time_diff", "time_read",
                "prev_index"]
_BOOL_COLUMNS = ["hash_match", "time_match", "returned"]

# Layout of the diagram, in data units; _INCH is inches per unit (the axes is sized so that
# one unit is the same length on both axes and the figure grows with the content).
_INCH = 0.5
_LABEL_W = 4.4          # left column: file name, time range, what happened
_BOX_W = 2.1
_BOX_H = 1.3
_GAP = 0.65             # between boxes, where the prev_index arrow goes
_ROW_PITCH = _BOX_H + 0.6
_LANE_PAD = 0.3
_TEXT_LINE = 0.36       # one line of the lane's stop text
_SKIPPED_H = 1.1
_MAX_PER_ROW = 8
_FONT = 6.8
#: Resolution at which to show the diagram: its smallest text (6.8 pt) is then 10.4 px. Shown
#: at that size (in a box that scrolls, see :class:`rmqlab.viz.widgetkit.ScrollingFigure`)
#: rather than shrunk to the page, the diagram stays readable however long the walk.
READABLE_DPI = 110


# ------------------------------------------------------------------------------ the table


def _visits(trace: Trace) -> list[dict]:
    """One dict per file, in drawing (= reading) order: newest file first."""
    if isinstance(trace, DirectoryQueryTrace):
        return [{"file": v.name, "position": v.position, "action": v.action, "after": v.after,
                 "begin": v.begin_timestamp, "end": v.end_timestamp, "keys": max(v.index_count - 1, 0),
                 "found": len(v.offsets), "trace": v.trace} for v in trace.files]
    if isinstance(trace, QueryTrace):
        name = Path(trace.path).name if trace.path else ""
        return [{"file": name, "position": 0, "action": "searched", "after": "", "begin": None,
                 "end": None, "keys": None, "found": len(trace.results), "trace": trace}]
    raise TypeError(f"trace must be a QueryTrace or a DirectoryQueryTrace, got {type(trace).__name__}")


def _mark(returned: bool, hash_match: bool) -> str:
    return "returned" if returned else "hash-match" if hash_match else "read"


def _query_facts(trace: Trace) -> dict:
    if isinstance(trace, DirectoryQueryTrace):
        walked = [v.trace for v in trace.files if v.trace is not None]
        key_hash = walked[0].key_hash if walked else index_hash(trace.key)
        return {"key": trace.key, "key_hash": key_hash, "begin": trace.begin, "end": trace.end,
                "max_num": trace.max_num, "requested_max_num": trace.requested_max_num,
                "stop": trace.stop, "stop_reason": trace.stop_reason,
                "results": list(trace.result.phy_offsets) if trace.result is not None else [],
                "files": len(trace.files)}
    return {"key": trace.key, "key_hash": trace.key_hash, "begin": trace.begin, "end": trace.end,
            "max_num": trace.max_num, "requested_max_num": trace.max_num, "stop": trace.stop,
            "stop_reason": trace.stop_reason, "results": list(trace.results), "files": 1}


def walk_table(trace: Trace) -> pd.DataFrame:
    """The data :func:`query_walk_figure` draws: one row per element, in drawing order.

    For every file (newest first) and every entry read in it, one row with the entry's fields
    as the walk read them (``entry, key_hash, phy_offset, time_diff`` (s), ``time_read`` (ms
    since the epoch, ``begin_timestamp + time_diff * 1000``: what the broker compares),
    ``prev_index, hash_match, time_match, returned``) and its ``mark`` (a key of
    :data:`MARKS`). A file with no entry read gets one row whose ``mark`` is a key of
    :data:`FILE_MARKS` ("skipped" for a file whose time range does not touch the query,
    "not-visited" for a file the walk never reached, "nothing-read" for a searched file whose
    slot was empty) and whose entry columns are missing (``pd.NA``).

    Per-file columns, repeated on each of the file's rows: ``file`` (name), ``position`` (place
    in the folder, 0 = oldest), ``action`` ("searched", "not-time-matched", "not-visited"),
    ``after`` (the folder walk's decision after the file, a key of
    :data:`rmqlab.store.indexservice.VISIT_REASONS`; "" for a single-file trace or a file not
    visited), ``walk_stop`` (why the chain walk in the file stopped, a key of
    :data:`rmqlab.formats.indexfile.STOP_REASONS`; "" when not searched), ``slot`` and
    ``slot_value`` (the key's slot and the entry number it held), ``file_begin_timestamp`` /
    ``file_end_timestamp`` (the header's, ms; missing for a single-file trace). ``order`` is
    the reading order across the whole query (1 = first entry read), ``step`` the order within
    the file (1 = the slot's head). ``query_stop`` is why the whole query stopped (the folder
    walk's stop, or the file's walk stop for a single-file trace).

    ``df.attrs`` holds the query: key, key_hash, begin, end (ms), max_num,
    requested_max_num, stop, stop_reason, results (the offsets returned) and files.
    Integer columns are pandas nullable ``Int64``, flags nullable ``boolean``.
    Cost: O(entries read); no file is opened (everything comes from the trace).
    """
    visits = _visits(trace)
    facts = _query_facts(trace)
    rows: list[dict] = []
    order = 0
    for v in visits:
        t: QueryTrace | None = v["trace"]
        base = {"file": v["file"], "position": v["position"], "action": v["action"],
                "after": v["after"], "walk_stop": t.stop if t is not None else "",
                "query_stop": facts["stop"],
                "slot": t.slot if t is not None else None,
                "slot_value": t.slot_value if t is not None else None,
                "file_begin_timestamp": v["begin"], "file_end_timestamp": v["end"]}
        if t is None or not t.steps:
            mark = {"not-time-matched": "skipped", "not-visited": "not-visited"}.get(
                v["action"], "nothing-read")
            rows.append({**base, "mark": mark})
            continue
        for step_no, s in enumerate(t.steps, start=1):
            order += 1
            rows.append({**base, "order": order, "step": step_no,
                         **{c: getattr(s, c) for c in _STEP_COLUMNS},
                         "mark": _mark(s.returned, s.hash_match)})
    df = pd.DataFrame(rows, columns=WALK_TABLE_COLUMNS)
    for c in _INT_COLUMNS:
        df[c] = df[c].astype("Int64")
    for c in _BOOL_COLUMNS:
        df[c] = df[c].astype("boolean")
    for c in ("file", "action", "after", "walk_stop", "query_stop", "mark"):
        df[c] = df[c].astype(object)
    df.attrs.update(facts)
    return df


# ------------------------------------------------------------------------------ formatting


def _utc_or(tz):
    return _dt.UTC if tz is None else tz


def _clock(ms: int, tz, *, date: bool = False) -> str:
    """`ms` as [YYYY-MM-DD ]HH:MM:SS.mmm in `tz`; the raw number when out of datetime's range."""
    try:
        t = _dt.datetime.fromtimestamp(int(ms) // 1000, tz) + _dt.timedelta(milliseconds=int(ms) % 1000)
    except (OverflowError, OSError, ValueError):
        return f"{int(ms)} ms"
    return t.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S") + f".{int(ms) % 1000:03d}"


def _bound(ms: int, tz, which: str) -> str:
    if which == "begin" and ms <= 0:
        return f"{ms} (no lower bound)"
    if which == "end" and ms >= LONG_MAX:
        return "Long.MAX_VALUE (no upper bound)"
    return _clock(ms, tz, date=True)


def _tz_name(tz) -> str:
    return _dt.datetime(2000, 1, 1, tzinfo=tz).tzname() or str(tz)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.fill(part, width=width, break_long_words=False)
                     for part in text.split("\n"))


# ------------------------------------------------------------------------------ the figure


def _lane_layout(visits: list[dict], max_steps: int,
                 unreached: dict[str, pd.DataFrame]) -> tuple[list[dict], int]:
    """Per lane: boxes drawn, whether a "more" box follows, the entries never reached (drawn
    as one box after the stop), rows of boxes, height (units)."""
    lanes = []
    widest = 1
    for v in visits:
        t = v["trace"]
        n_steps = len(t.steps) if t is not None else 0
        shown = min(n_steps, max_steps)
        more = n_steps - shown
        missed = unreached.get(v["file"]) if t is not None else None
        boxes = shown + (1 if more else 0) + (1 if missed is not None else 0)
        widest = max(widest, boxes)
        lanes.append({"n_steps": n_steps, "shown": shown, "more": more, "boxes": boxes, "unreached": missed})
    per_row = min(widest, _MAX_PER_ROW)
    for lane, v in zip(lanes, visits):
        if v["trace"] is None:
            lane["rows"] = 0
            lane["height"] = _SKIPPED_H
        else:
            lane["rows"] = max(1, math.ceil(lane["boxes"] / per_row))
            stop_lines = 2 if v["after"] else 1
            lane["height"] = (2 * _LANE_PAD + (lane["rows"] - 1) * _ROW_PITCH + _BOX_H
                              + stop_lines * _TEXT_LINE + 0.15)
    return lanes, per_row


def _box_xy(i: int, per_row: int, top: float) -> tuple[float, float]:
    """Top-left corner of the i-th chain box of a lane whose first row's top is `top`."""
    start = _LABEL_W + _BOX_W + _GAP
    row, col = divmod(i, per_row)
    return start + col * (_BOX_W + _GAP), top + row * _ROW_PITCH


def _arrow(ax, a: tuple[float, float], b: tuple[float, float], *, linestyle="-") -> None:
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=9, color="#333333",
                                 linewidth=0.9, shrinkA=0, shrinkB=1, linestyle=linestyle))


def _wrap_arrow(ax, last: tuple[float, float], first: tuple[float, float], *, linestyle="-") -> None:
    """From the right of a row's last box, round through the gap below it, to the left of the
    next row's first box (never across a box)."""
    (xa, ya), (xb, yb) = last, first
    gap_y = ya + _BOX_H / 2 + (_ROW_PITCH - _BOX_H) / 2
    verts = [(xa, ya), (xa + _GAP / 2, ya), (xa + _GAP / 2, gap_y), (xb - _GAP / 2, gap_y),
             (xb - _GAP / 2, yb), (xb, yb)]
    path = MplPath(verts, [MplPath.MOVETO] + [MplPath.LINETO] * (len(verts) - 1))
    ax.add_patch(FancyArrowPatch(path=path, arrowstyle="-|>", mutation_scale=9, color="#333333",
                                 linewidth=0.9, shrinkA=0, shrinkB=1, linestyle=linestyle))


def _box(ax, x: float, y: float, text: str, colour: str, *, gid: str, weight="normal",
         linestyle="-", edge="#555555", linewidth=0.8) -> None:
    patch = FancyBboxPatch((x, y), _BOX_W, _BOX_H, boxstyle="round,pad=0,rounding_size=0.12",
                           facecolor=colour, edgecolor=edge, linewidth=linewidth, linestyle=linestyle)
    patch.set_gid(gid)
    ax.add_patch(patch)
    ax.text(x + _BOX_W / 2, y + _BOX_H / 2, text, ha="center", va="center", fontsize=_FONT,
            fontweight=weight, family=MONO, linespacing=1.25)


def _slot_text(t: QueryTrace) -> str:
    v = t.slot_value
    if v <= 0:
        return f"slot {t.slot}\n→ {v}: empty"
    if t.stop == "empty-slot":          # a value past index_count counts as empty
        return f"slot {t.slot}\n→ {v}: past\nindex_count"
    return f"slot {t.slot}\n→ entry {v}"


def _lane_label(v: dict, tz) -> str:
    lines = [v["file"] or "(index file)"]
    if v["begin"] is not None:
        lines.append(f"{_clock(v['begin'], tz)} – {_clock(v['end'], tz)}")
        lines.append(f"{v['keys']:,} keys")
    t = v["trace"]
    if v["action"] == "searched":
        lines.append(f"searched: {v['found']} found, {len(t.steps) if t else 0} read")
    elif v["action"] == "not-time-matched":
        lines.append("skipped")
    else:
        lines.append("not visited")
    return "\n".join(lines)


def query_walk_figure(trace: Trace, *, max_steps: int = 24, tz: _dt.tzinfo | None = None,
                      unreached: pd.DataFrame | None = None) -> Figure:
    """Draw a key query's walk: a lane per index file, newest at the top.

    Each searched file's lane shows, left to right, the file (name, header time range, keys,
    what was found), the key's slot box ("slot 517 → entry 8123") and the chain as it was read:
    one box per entry (entry number, stored hash in hex, the stored time the broker compares -
    ``begin_timestamp + time_diff * 1000``, shown HH:MM:SS.mmm because the millisecond part,
    inherited from the file's begin timestamp, decides comparisons with `begin` and `end` - and
    the CommitLog offset), joined by arrows that follow ``prev_index`` from newer to older.
    Boxes are coloured by mark (:data:`MARK_COLOURS`: returned green, hash match outside the
    time range orange, another key's hash grey; see the legend). Rows wrap after 8 boxes. Under
    the boxes: why the chain walk stopped (:data:`~rmqlab.formats.indexfile.STOP_REASONS`) and
    what the folder walk did next (:data:`~rmqlab.store.indexservice.VISIT_REASONS`). A file that was
    not searched is a grey lane saying why ("time range does not touch the query", or "not
    visited: the walk stopped at a newer file"). The title gives the key, its hash and the
    query range [begin, end] with milliseconds; the line under the figure says why the whole
    query stopped.

    Only the first `max_steps` entries of a file are drawn as boxes, followed by a "… N more
    entries read" box.

    `unreached` (:meth:`rmqlab.store.keyquery.KeyQuery.unreached`: columns file, entry, phy_offset,
    time_read) names real matches the walk never read in a file it searched: the newest of
    them is drawn after the place its file's walk stopped, as a white box with a dashed red
    edge ("never read", with "+N" when there are more), reached by a dashed arrow standing for
    the entries the walk skipped; its gid is ``"unreached:<file>"``.

    `tz` is the zone of the times shown (default UTC). The figure's size follows the content
    (lanes and boxes); each chain box is a patch whose gid is ``"step:<order>"`` (``order``
    of :func:`walk_table`), the slot boxes ``"slot:<file>"`` and the "more" boxes
    ``"more:<file>"``. No randomness: the same trace gives the same PNG bytes.
    Cost: O(boxes drawn); saving as PNG costs more than building the figure (mostly text
    rendering).
    """
    max_steps = int(max_steps)
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    tz = _utc_or(tz)
    table = walk_table(trace)
    facts = table.attrs
    visits = _visits(trace)
    by_file = ({} if unreached is None or unreached.empty
               else {f: rows for f, rows in unreached.groupby("file", sort=False)})
    lanes, per_row = _lane_layout(visits, max_steps, by_file)

    width_units = _LABEL_W + _BOX_W + _GAP + per_row * (_BOX_W + _GAP) + 0.1
    width_units = max(width_units, 22.0)          # room for the title and the stop texts
    height_units = sum(lane["height"] for lane in lanes) if lanes else _SKIPPED_H
    wrap_chars = int(width_units * _INCH * 72 / (_FONT * 0.55))

    title = (f"key query {facts['key']!r}: hash {facts['key_hash']} (0x{facts['key_hash']:08x}), "
             f"max_num {facts['max_num']}"
             + (f" (asked {facts['requested_max_num']})"
                if facts["requested_max_num"] != facts["max_num"] else "")
             + f"\nrange [{_bound(facts['begin'], tz, 'begin')}, {_bound(facts['end'], tz, 'end')}]"
               f" ({_tz_name(tz)})")
    n_read = int(table["order"].notna().sum())
    overall = (f"query stopped: {facts['stop']} - {facts['stop_reason']}. "
               f"{_plural(len(facts['results']), 'offset')} returned; "
               f"{_plural(n_read, 'entry', 'entries')} read in "
               f"{int((table.drop_duplicates('file')['action'] == 'searched').sum())} searched "
               f"of {facts['files']} file{'s' if facts['files'] != 1 else ''}.")
    overall = _wrap(overall, int(wrap_chars * _FONT / 8.0))

    legend_rows = 2 if by_file else 1        # a fifth legend entry does not fit beside the others
    top_in, bottom_in = 1.05 + 0.17 * (legend_rows - 1), 0.25 + 0.17 * (overall.count("\n") + 1)
    fig_w = width_units * _INCH + 0.3
    fig_h = height_units * _INCH + top_in + bottom_in
    fig = Figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes((0.15 / fig_w, bottom_in / fig_h, width_units * _INCH / fig_w,
                       height_units * _INCH / fig_h))
    ax.set_xlim(0, width_units)
    ax.set_ylim(height_units, 0)                  # y grows downwards: the newest file on top
    ax.set_axis_off()
    # title and legend start at the left edge: a wide diagram is shown scrolled to its left side
    fig.text(0.15 / fig_w, 1 - 0.08 / fig_h, title, ha="left", va="top", fontsize=9.5, fontweight="bold")
    fig.text(0.01, 0.08 / fig_h, overall, ha="left", va="bottom", fontsize=8)
    handles = [Patch(facecolor=MARK_COLOURS[m], edgecolor="#555555", label=_LEGEND_LABELS[m])
               for m in MARKS]
    handles.append(Patch(facecolor=_SLOT_COLOUR, edgecolor="#555555",
                         label="slot (arrows follow prev_index, newer → older)"))
    if by_file:
        handles.append(Patch(facecolor="white", edgecolor=_UNREACHED_EDGE, linestyle="--",
                             label="a real match the walk never read"))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.1 / fig_w, 1 - 0.5 / fig_h),
               ncol=-(-len(handles) // legend_rows), fontsize=7, frameon=False, handlelength=1.4,
               columnspacing=1.2)

    if not visits:
        ax.text(width_units / 2, height_units / 2, "the folder holds no index file",
                ha="center", va="center", fontsize=9)
        return fig

    y = 0.0
    order = 0
    for lane_no, (v, lane) in enumerate(zip(visits, lanes)):
        t = v["trace"]
        h = lane["height"]
        if t is None:
            ax.add_patch(Rectangle((0, y + 0.08), width_units, h - 0.16, facecolor=_SKIPPED_COLOUR,
                                   edgecolor="#bbbbbb", linewidth=0.6, hatch="///", zorder=0))
            reason = ("skipped: time range does not touch the query "
                      "(isTimeMatched(begin, end) is false)" if v["action"] == "not-time-matched"
                      else f"not visited: {VISIT_REASONS['not-visited']}")
            if v["after"]:
                reason += f"; then {v['after']}: {VISIT_REASONS[v['after']]}"
            where = v["file"] + (f"   {_clock(v['begin'], tz)} – {_clock(v['end'], tz)}"
                                 if v["begin"] is not None else "")
            ax.text(0.2, y + h / 2, where,
                    ha="left", va="center", fontsize=_FONT, color="#555555",
                    bbox=dict(boxstyle="square,pad=0.15", facecolor=_SKIPPED_COLOUR, edgecolor="none"))
            ax.text(_LABEL_W + 0.2 + 3.6, y + h / 2,
                    _wrap(reason, int(wrap_chars * 0.7)), ha="left", va="center",
                    fontsize=_FONT, color="#444444", fontstyle="italic",
                    bbox=dict(boxstyle="square,pad=0.15", facecolor=_SKIPPED_COLOUR, edgecolor="none"))
            y += h
            continue

        ax.add_patch(Rectangle((0, y + 0.05), width_units, h - 0.1,
                               facecolor=_LANE_COLOURS[lane_no % 2], edgecolor="#cccccc",
                               linewidth=0.6, zorder=0))
        top = y + _LANE_PAD
        ax.text(0.2, top, _lane_label(v, tz), ha="left", va="top", fontsize=_FONT,
                linespacing=1.35)
        # slot box
        slot_x = _LABEL_W
        slot = FancyBboxPatch((slot_x, top), _BOX_W, _BOX_H, boxstyle="round,pad=0,rounding_size=0.12",
                              facecolor=_SLOT_COLOUR, edgecolor="#555555", linewidth=0.8)
        slot.set_gid(f"slot:{v['file']}")
        ax.add_patch(slot)
        ax.text(slot_x + _BOX_W / 2, top + _BOX_H / 2, _slot_text(t), ha="center", va="center",
                fontsize=_FONT, family=MONO, linespacing=1.25)

        prev_anchor = (slot_x + _BOX_W, top + _BOX_H / 2)
        prev_row = 0
        for i in range(lane["boxes"]):
            bx, by = _box_xy(i, per_row, top)
            row = i // per_row
            last_unreached = lane["unreached"] is not None and i == lane["boxes"] - 1
            dashed = "--" if last_unreached else "-"
            if row == prev_row:
                _arrow(ax, prev_anchor, (bx, by + _BOX_H / 2), linestyle=dashed)
            else:
                _wrap_arrow(ax, prev_anchor, (bx, by + _BOX_H / 2), linestyle=dashed)
            if last_unreached:
                missed = lane["unreached"]
                first = missed.iloc[0]
                others = f" (+{len(missed) - 1})" if len(missed) > 1 else ""
                _box(ax, bx, by, f"entry {int(first['entry'])}\nnever read{others}\n"
                                 f"{_clock(int(first['time_read']), tz)}\nphy {int(first['phy_offset']):,}",
                     "#ffffff", gid=f"unreached:{v['file']}", linestyle="--", edge=_UNREACHED_EDGE,
                     linewidth=1.2)
            elif i < lane["shown"]:
                s = t.steps[i]
                order += 1
                mark = _mark(s.returned, s.hash_match)
                text = (f"entry {s.entry}\nhash 0x{s.key_hash & 0xFFFFFFFF:08x}\n"
                        f"{_clock(s.time_read, tz)}\nphy {s.phy_offset:,}")
                _box(ax, bx, by, text, MARK_COLOURS[mark], gid=f"step:{order}",
                     weight="normal")
            else:
                order += lane["more"]
                _box(ax, bx, by, f"… {lane['more']} more\nentries read\n(not drawn)",
                     _MORE_COLOUR, gid=f"more:{v['file']}", linestyle="--")
            prev_anchor, prev_row = (bx + _BOX_W, by + _BOX_H / 2), row

        stop_y = top + (lane["rows"] - 1) * _ROW_PITCH + _BOX_H + 0.12
        stop = f"walk stopped: {t.stop} - {STOP_REASONS[t.stop]}"
        if v["after"]:
            stop += f"\nthen {v['after']}: {VISIT_REASONS[v['after']]}"
        ax.text(slot_x, stop_y, stop, ha="left", va="top", fontsize=_FONT, color="#222222",
                fontstyle="italic", linespacing=1.3)
        y += h
    return fig


# ------------------------------------------------------------------------------ the six stops


def walk_stops_figure(cases, *, tz: _dt.tzinfo | None = None) -> Figure:
    """One row per crafted walk (:func:`rmqlab.analysis.walkrules.walk_stop_cases`): the rule and its
    Java condition, each entry read as a box (entry number, stored timeDiff, the time the
    broker compares, prevIndex; coloured by :data:`MARK_COLOURS`), a red "stop" box naming the
    rule, then the key's entries the walk never read (dashed). A damaged field is named under
    the rule. Text is 8 points (11 px at :data:`READABLE_DPI`). Cost: one walk per case.

    Each entry box's gid is ``"<rule>:entry:<n>"``, the stop box's ``"<rule>:stop"``, an
    unread entry's ``"<rule>:unread:<n>"``.
    """
    tz = _utc_or(tz)
    walks = [(c, c.trace(), c.unread()) for c in cases]
    label_w, box_w, box_h, gap, pitch, font = 7.2, 2.3, 1.45, 0.7, 2.05, 8
    columns = max((len(t.steps) + 1 + len(unread) for _, t, unread in walks), default=1)
    width = label_w + columns * (box_w + gap) + 0.3
    height = pitch * max(len(walks), 1) + 0.2
    fig = Figure(figsize=(width * _INCH, height * _INCH + 0.45))
    ax = fig.add_axes((0, 0, 1, height * _INCH / (height * _INCH + 0.45)))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_axis_off()
    fig.text(0.01, 1 - 0.05 / (height * _INCH + 0.45), "selectPhyOffset's six stops, each on its own "
             "crafted file (T#k put 3 times, 1 s apart: chain 3 → 2 → 1)", ha="left", va="top",
             fontsize=9.5, fontweight="bold")
    for row, (case, t, unread) in enumerate(walks):
        y = 0.2 + row * pitch
        ax.add_patch(Rectangle((0, y - 0.15), width, pitch - 0.1, facecolor=_LANE_COLOURS[row % 2],
                               edgecolor="none", zorder=0))
        label = f"{case.rule}\n{case.condition}"
        label += f"\nquery: maxNum {case.max_num}, begin {_bound(case.begin, tz, 'begin')}"
        if case.edit:
            label += f"\ndamaged: {case.edit}"
        ax.text(0.15, y, label, ha="left", va="top", fontsize=font - 0.5, linespacing=1.3,
                family="DejaVu Sans Mono")
        x = label_w
        anchor = None
        for s in t.steps:
            if anchor is not None:
                _arrow(ax, anchor, (x, y + box_h / 2))
            patch = FancyBboxPatch((x, y), box_w, box_h, boxstyle="round,pad=0,rounding_size=0.12",
                                   facecolor=MARK_COLOURS[_mark(s.returned, s.hash_match)],
                                   edgecolor="#555555", linewidth=0.8)
            patch.set_gid(f"{case.rule}:entry:{s.entry}")
            ax.add_patch(patch)
            ax.text(x + box_w / 2, y + box_h / 2,
                    f"entry {s.entry}\ntimeDiff {s.time_diff}\n{_clock(s.time_read, tz)}\nprev {s.prev_index}",
                    ha="center", va="center", fontsize=font, family="DejaVu Sans Mono", linespacing=1.2)
            anchor = (x + box_w, y + box_h / 2)
            x += box_w + gap
        if anchor is not None:
            _arrow(ax, anchor, (x, y + box_h / 2))
        stop = FancyBboxPatch((x, y), box_w, box_h, boxstyle="round,pad=0,rounding_size=0.12",
                              facecolor="#fde0dd", edgecolor=_UNREACHED_EDGE, linewidth=1.4)
        stop.set_gid(f"{case.rule}:stop")
        ax.add_patch(stop)
        ax.text(x + box_w / 2, y + box_h / 2, f"STOP\n{_wrap(t.stop, 12)}\n{len(t.results)} found",
                ha="center", va="center", fontsize=font, color="#8b0000", fontweight="bold", linespacing=1.2)
        x += box_w + gap
        for n in unread:
            ghost = FancyBboxPatch((x, y), box_w, box_h, boxstyle="round,pad=0,rounding_size=0.12",
                                   facecolor="white", edgecolor="#999999", linewidth=0.8, linestyle="--")
            ghost.set_gid(f"{case.rule}:unread:{n}")
            ax.add_patch(ghost)
            ax.text(x + box_w / 2, y + box_h / 2, f"entry {n}\nnever read", ha="center", va="center",
                    fontsize=font, color="#777777", family="DejaVu Sans Mono")
            x += box_w + gap
    return fig
