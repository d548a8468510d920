"""Ask a store "which messages have this key?" the way the broker answers, and see why.

:class:`QueryExplorer` is a widget over :meth:`rmqlab.store.directory.Store.explain_key`: pick an index
file (or the whole folder), a topic, a key and a time range in milliseconds, and it shows

* a timeline of the window: whole-second boundaries, the key's messages at their real store
  times (green: the broker returned them, red: inside the window but missed, grey: outside)
  and, under them, the times the index stored for them (whole seconds after the file's
  beginTimestamp), which is what the broker compares with the range;
* a summary: rows in broker and verified mode, hash-matching candidates, and a count for each
  reason the broker's answer differs from the truth (:data:`rmqlab.store.keyquery.REASONS`);
* the result rows of the chosen mode, the folder walk as text, and the walk diagram
  (:func:`rmqlab.viz.walk.query_walk_figure`).

Every control is a public attribute and every change calls :meth:`QueryExplorer.refresh`;
:attr:`QueryExplorer.result` is the current :class:`~rmqlab.store.keyquery.KeyQuery`.

>>> x = QueryExplorer(topic="Orders", key="ORDER_Aa0", walk=False)     # the sample store
>>> x.result.summary()["collision"] > 0                      # ORDER_BB0 shares its hash
True
"""
from __future__ import annotations

import html
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from rmqlab.analysis.keys import KeyTimeline, colliding_keys, key_occurrences, key_timeline, suggested_keys
from rmqlab.errors import RmqlabError
from rmqlab.rules.topics import is_system_topic
from rmqlab.store.directory import Store
from rmqlab.store.indexservice import DEFAULT_MAX_MSGS_NUM_BATCH
from rmqlab.store.keyquery import MODES, REASONS, KeyQuery, OneFileIndex, query_key, result_table
from rmqlab.tables.display import format_frame, format_value, ms_with_clock
from rmqlab.viz.widgetkit import (
    HIGHLIGHT,
    WidgetBase,
    clear_image,
    frame_html,
    image_widget,
    message_html,
    progress_bar,
    scroll_box,
    show_figure,
    working,
)

__all__ = [
    "QueryExplorer",
    "ALL_FILES",
    "key_timeline_figure",
]

#: The file picker's value for "walk every index file, as queryOffset does".
ALL_FILES = "all"

_RESULT_ROWS = 100         # rows of the results table shown
_KEYS_SHOWN = 24           # characters of a row's KEYS shown; the whole text is in the cell's tooltip
_PROBLEM_LINES = 40        # problem lines under the trace text

_RANGE = "#dbe9f7"
#: Colours of the timeline's marks, by kind (rmqlab.analysis.keys.MESSAGE_KINDS / ENTRY_KINDS).
_MESSAGE_COLOURS = {"returned": "#2ca02c", "missed": "#d62728", "outside": "#9a9a9a"}
_ENTRY_COLOURS = {"returned": "#2ca02c", "not-returned": "#444444", "collision": "#9467bd"}
_TEXT_PT = 11              # the timeline's text: about 12 px at the widgets' 80 dpi


def key_timeline_figure(timeline: KeyTimeline, *, origin: int, title: str = "",
                        figsize: tuple[float, float] = (9.5, 3.3)) -> Figure:
    """A strip of a query's window [begin, end] (ms since the epoch) with context on both sides.

    Top row: the key's messages at their real store times, green when the broker returned them,
    red when inside [begin, end] but not returned, grey otherwise. Bottom row: ticks at the
    times the index stored (what the broker compares): green for an entry of the key the
    broker returned, dark grey for one it did not, purple for another key's entry with the
    same hash (a collision), each linked to its message by a thin line. Thin dotted lines mark
    every whole second (epoch ms divisible by 1000) when at most 240 fall in view; the shaded
    band is [begin, end]. A legend above the strip names every mark. x is ms after `origin`
    (the store's first store timestamp, the time slider's zero). Text is 10-11 points, so it
    stays readable where the figure is shown at its size: 760 px wide at the widgets' 80 dpi,
    which fits a notebook at 1280 px and a Voilà page at 800 px. Cost: O(points).

    `timeline` comes from :func:`rmqlab.analysis.keys.key_timeline`.
    """
    begin, end = timeline.begin, timeline.end
    span = max(end - begin, 1)
    pad = max(span // 10, 1000)
    lo, hi = begin - pad, end + pad
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    ax.axvspan(begin - origin, end - origin, color=_RANGE, zorder=0)
    for edge in (begin, end):
        ax.axvline(edge - origin, color="#1f5fa8", lw=1.0, zorder=1)
    first_second, last_second = -(-lo // 1000), hi // 1000
    seconds = last_second - first_second + 1
    note = ""
    if 0 < seconds <= 240:
        ax.vlines(np.arange(first_second, last_second + 1, dtype=np.int64) * 1000 - origin, -0.6, 1.6,
                  color="#8a8a8a", lw=0.7, linestyles=":", zorder=1)
    elif seconds > 240:
        note = "\n(whole-second lines left out: more than 240 in view)"
    messages, entries = timeline.messages, timeline.entries
    real_ms = messages["store_timestamp"].to_numpy(np.int64)
    stored_ms = entries["stored_ms"].to_numpy(np.int64)
    link = entries["message"].to_numpy(np.int64)
    has = np.flatnonzero(link >= 0)
    a, b = stored_ms[has], real_ms[link[has]]
    near = ((a >= lo) & (a <= hi)) | ((b >= lo) & (b <= hi))
    segments = np.stack([np.column_stack([a[near] - origin, np.zeros(near.sum())]),
                         np.column_stack([b[near] - origin, np.ones(near.sum())])], axis=1)
    ax.add_collection(LineCollection(segments, colors="#c0c0c0", linewidths=0.6, zorder=2))
    shown = (real_ms >= lo) & (real_ms <= hi)
    colours = messages["kind"].map(_MESSAGE_COLOURS).to_numpy(object)
    ax.scatter(real_ms[shown] - origin, np.ones(shown.sum()), c=list(colours[shown]), s=30, zorder=3,
               edgecolors="none")
    tick_shown = (stored_ms >= lo) & (stored_ms <= hi)
    tick_colours = entries["kind"].map(_ENTRY_COLOURS).to_numpy(object)
    ax.scatter(stored_ms[tick_shown] - origin, np.zeros(tick_shown.sum()), marker="|", s=160, zorder=3,
               c=list(tick_colours[tick_shown]), linewidths=1.6)
    ax.set_xlim(lo - origin, hi - origin)
    ax.set_ylim(-0.6, 1.6)
    ax.set_yticks([0, 1], ["index entry\n(whole s)", "message\n(ms)"], fontsize=_TEXT_PT)
    ax.tick_params(axis="x", labelsize=_TEXT_PT)
    ax.set_xlabel(f"ms after {ms_with_clock(origin)} (the store's first message){note}", fontsize=_TEXT_PT)
    handles = [Line2D([], [], marker="o", ls="none", color=_MESSAGE_COLOURS[k], markersize=7, label=label)
               for k, label in (("returned", "message returned"), ("missed", "in range, missed"),
                                ("outside", "outside the range"))]
    handles += [Line2D([], [], marker="|", ls="none", color=_ENTRY_COLOURS[k], markersize=12,
                       markeredgewidth=2, label=label)
                for k, label in (("returned", "entry returned"), ("not-returned", "entry not returned"),
                                 ("collision", "collision (another key, same hash)"))]
    handles.append(Patch(color=_RANGE, label="[begin, end]"))
    handles.append(Line2D([], [], color="#8a8a8a", ls=":", label="whole seconds"))
    fig.legend(handles=handles, loc="outside upper left", ncols=4, fontsize=_TEXT_PT - 0.5, frameon=False,
               handletextpad=0.3, columnspacing=1.0, title=title or None, title_fontsize=_TEXT_PT,
               alignment="left")
    return fig


class QueryExplorer(WidgetBase):
    """Explore key queries on a store: controls, timeline, summary, rows, trace and walk diagram.

    Parameters
    ----------
    store:
        A :class:`rmqlab.store.directory.Store`, or the path of a store folder (opened with
        ``Store(path, **store_options)``; pass the broker's ``hash_slot_num`` / ``index_num``
        there unless the index files have the default size). Default: the sample store
        (:func:`rmqlab.lab.sample.sample_store`).
    topic, key:
        The initial query (default: the topic with the most messages and its most frequent key).
    begin, end:
        The initial time range, ms since the epoch (default: the whole store), clamped to the
        store's first and last store timestamps (the time slider's range).
    max_num:
        1..64 (the broker caps maxNum at maxMsgsNumBatch, 64).
    mode:
        Which rows the results table shows: "broker" or "verified".
    suggestions:
        How many of the topic's most frequent keys the key box offers (keys that collide with
        another key's hash are offered too).
    system_topics:
        Offer the broker's own topics (SCHEDULE_TOPIC_XXXX, RMQ_SYS_*, ...) in the topic list.
    walk:
        Draw the walk diagram (the initial value of :attr:`walk_toggle`). It is the slowest part
        of a refresh (a large figure, its size following the files searched and the entries
        read); turning it off makes moving the time slider snappier.
    store_options:
        Keyword arguments of :class:`rmqlab.store.directory.Store` when `store` is a path.

    Controls: :attr:`file_picker`, :attr:`topic_picker`, :attr:`key_box`, :attr:`time_slider`
    (ms after :attr:`origin`, the store's first store timestamp), :attr:`max_num_box`,
    :attr:`mode_buttons`, :attr:`walk_toggle`. State: :attr:`result` (the current KeyQuery or None),
    :attr:`last_error` (the last error message or None), :attr:`begin` / :attr:`end` (absolute
    ms of the slider). Outputs: :attr:`timeline_image`, :attr:`summary_html`,
    :attr:`results_html`, :attr:`trace_html`, :attr:`walk_image`, :attr:`status_html`.
    Cost per change: the query in both modes, the timeline and the walk diagram (the largest
    part, see :func:`~rmqlab.viz.walk.query_walk_figure`); construction adds one read of the
    CommitLog, O(messages), for the key suggestions and the timeline.

    A bad `store` (no such folder, not a store) raises at construction; problems with a query
    (no key, a key with a space, an empty store) show as a message in the widget.
    """

    def __init__(self, store: Store | str | os.PathLike | None = None, *, topic: str | None = None,
                 key: str | None = None, begin: int | None = None, end: int | None = None,
                 max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH, mode: str = "broker", suggestions: int = 20,
                 system_topics: bool = False, walk: bool = True,
                 store_options: dict[str, Any] | None = None):
        self.store = _as_store(store, store_options)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not isinstance(max_num, (int, np.integer)) or isinstance(max_num, bool) or not 1 <= max_num <= 64:
            raise ValueError(f"max_num must be an int in 1..64 (the broker caps it at 64), got {max_num!r}")
        if int(suggestions) < 1:
            raise ValueError(f"suggestions must be at least 1, got {suggestions}")
        self.suggestions = int(suggestions)
        self.result: KeyQuery | None = None
        self.last_error: str | None = None
        self._hold = 0
        self._last_query: tuple | None = None
        self._walk_drawn = False
        self._suggestion_cache: dict[str, list[str]] = {}

        self.messages = self.store.messages()
        self.occurrences = key_occurrences(self.messages)
        self.collisions = colliding_keys(self.occurrences)
        self.index_files = self._index_file_frame()
        if len(self.messages):
            self.origin = int(self.messages["store_timestamp"].min())
            last = int(self.messages["store_timestamp"].max())
        else:
            self.origin = last = 0
        counts = self.messages["topic"].value_counts() if len(self.messages) else pd.Series(dtype=int)
        topics = [t for t in counts.index if system_topics or not is_system_topic(t)]
        if topic is not None:
            if topic not in counts.index:
                raise ValueError(f"topic={topic!r} has no message in this store "
                                 f"(topics: {', '.join(map(str, counts.index)) or 'none'})")
            if topic not in topics:
                topics.append(topic)
        span = last - self.origin
        lo = 0 if begin is None else int(begin) - self.origin
        hi = span if end is None else int(end) - self.origin
        if lo > hi:
            raise ValueError(f"begin={begin} is after end={end}")
        lo, hi = min(max(lo, 0), span), min(max(hi, 0), span)

        file_options = [("all index files (queryOffset across the folder)", ALL_FILES)]
        for row in self.index_files.itertuples():
            file_options.append((f"{row.name}  ({format_value(row.begin_timestamp, 'clock')} – "
                                 f"{format_value(row.end_timestamp, 'clock')}, {row.keys:,} keys)", row.name))
        self.file_picker = widgets.Dropdown(options=file_options, value=ALL_FILES, description="index",
                                            layout=widgets.Layout(width="100%", max_width="40em"))
        self.topic_picker = widgets.Dropdown(options=topics, value=topic or (topics[0] if topics else None),
                                             description="topic")
        initial_topic = self.topic_picker.value
        options = self.key_suggestions(initial_topic) if initial_topic else []
        self.key_box = widgets.Combobox(value=key if key is not None else (options[0] if options else ""),
                                        options=options, ensure_option=False, continuous_update=False,
                                        placeholder="a key (KEYS token or UNIQ_KEY)", description="key")
        # The slider's own readout is a fixed narrow box that cuts "0 – 16651" to "0 – 1665":
        # the values go in a readout of ours beside it, which wraps below on a narrow page.
        self.time_slider = widgets.IntRangeSlider(value=(lo, hi), min=0, max=max(span, 1), step=1,
                                                  continuous_update=False, readout=False,
                                                  description="ms after first",
                                                  style={"description_width": "initial"},
                                                  layout=widgets.Layout(flex="1 1 24em", min_width="16em",
                                                                        max_width="48em"))
        self.time_readout = widgets.HTML(layout=widgets.Layout(flex="0 0 auto", margin="0 0 0 6px"))
        self.time_label = widgets.HTML()
        self.max_num_box = widgets.BoundedIntText(value=int(max_num), min=1, max=64, description="maxNum",
                                                  layout=widgets.Layout(width="12em"))
        max_note = widgets.HTML("<span style='font-size:12px;color:#555'>the broker caps maxNum at 64 "
                                "(maxMsgsNumBatch); unique-key queries use 32</span>")
        self.mode_buttons = widgets.ToggleButtons(options=list(MODES), value=mode, description="rows")
        self.walk_toggle = widgets.Checkbox(value=bool(walk), description="draw the walk diagram",
                                            indent=False)
        self.progress = progress_bar("querying")
        self.status_html = widgets.HTML()
        self.timeline_image = image_widget("rmqlab-timeline")
        self.summary_html = widgets.HTML()
        # a table wider than the page scrolls inside its own widget, never the page
        self.results_html = widgets.HTML(layout=widgets.Layout(overflow="auto", max_width="100%"))
        self.trace_html = widgets.HTML(layout=widgets.Layout(overflow="auto", max_width="100%"))
        self.walk_image = image_widget("rmqlab-walk")
        self.walk_box = scroll_box(self.walk_image, max_height="40em", css_class="rmqlab-walk-box")
        for w, cls in ((self.file_picker, "rmqlab-file"), (self.topic_picker, "rmqlab-topic"),
                       (self.key_box, "rmqlab-key"), (self.time_slider, "rmqlab-time-slider"),
                       (self.time_readout, "rmqlab-time-readout"),
                       (self.time_label, "rmqlab-time-label"), (self.max_num_box, "rmqlab-max-num"),
                       (self.mode_buttons, "rmqlab-mode"), (self.walk_toggle, "rmqlab-walk-toggle"),
                       (self.status_html, "rmqlab-status"),
                       (self.summary_html, "rmqlab-summary"), (self.results_html, "rmqlab-results"),
                       (self.trace_html, "rmqlab-trace")):
            w.add_class(cls)

        self.file_picker.observe(lambda _: self.refresh(), names="value")
        self.topic_picker.observe(self._topic_changed, names="value")
        self.key_box.observe(lambda _: self.refresh(), names="value")
        self.time_slider.observe(lambda _: self.refresh(), names="value")
        self.max_num_box.observe(lambda _: self.refresh(), names="value")
        self.mode_buttons.observe(lambda _: self.refresh(), names="value")
        self.walk_toggle.observe(lambda _: self.refresh(), names="value")

        heading = lambda text: widgets.HTML(f"<h4 style='margin:8px 0 2px 0'>{text}</h4>")  # noqa: E731
        self.widget = widgets.VBox([
            widgets.HTML(f"<b>Key query explorer</b>: {html.escape(_store_label(self.store.root))}"),
            self.file_picker,
            widgets.HBox([self.topic_picker, self.key_box], layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self.time_slider, self.time_readout],
                         layout=widgets.Layout(flex_flow="row wrap", align_items="center", width="100%")),
            self.time_label,
            self.timeline_image,
            widgets.HBox([self.max_num_box, max_note], layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self.mode_buttons, self.progress]),
            self.status_html,
            self.summary_html,
            heading("Rows"), self.results_html,
            heading("Walk over the index files"), self.trace_html,
            self.walk_toggle,
            self.walk_box,
        ])
        self.widget.add_class("rmqlab-query-explorer")
        self.refresh()

    # -- data ---------------------------------------------------------------------------

    def _index_file_frame(self) -> pd.DataFrame:
        if not self.store.index_dir.is_dir():
            return pd.DataFrame(columns=["name", "begin_timestamp", "end_timestamp", "keys"])
        with self.store.index() as idx:
            return idx.to_frame()

    def key_suggestions(self, topic: str) -> list[str]:
        """The keys the key box offers for `topic`: its :attr:`suggestions` most frequent keys
        (messages per key, ties by key), then its keys whose hash collides with another key's.
        Computed once per topic."""
        if topic not in self._suggestion_cache:
            self._suggestion_cache[topic] = suggested_keys(self.occurrences, self.collisions, topic,
                                                           self.suggestions)
        return self._suggestion_cache[topic]

    @property
    def begin(self) -> int:
        """The query's begin: the store's first store timestamp + the slider's lower value (ms)."""
        return self.origin + int(self.time_slider.value[0])

    @property
    def end(self) -> int:
        """The query's end: the store's first store timestamp + the slider's upper value (ms)."""
        return self.origin + int(self.time_slider.value[1])

    # -- updates ------------------------------------------------------------------------

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Change several controls with one refresh at the end of the block."""
        self._hold += 1
        try:
            yield
        finally:
            self._hold -= 1
            if not self._hold:
                self.refresh()

    def _topic_changed(self, change) -> None:
        topic = change["new"]
        self.key_box.options = self.key_suggestions(topic) if topic else []
        self.refresh()

    def refresh(self) -> KeyQuery | None:
        """Run the query the controls describe and redraw everything; returns :attr:`result`.
        When only the mode or the walk toggle changed, the query is not run again: only the
        results table (and the walk diagram, when turned on) is redrawn."""
        if self._hold:
            return self.result
        self.time_readout.value = self._readout_text()
        self.time_label.value = self._time_text()
        error = self._check_inputs()
        if error:
            return self._fail(error, kind="info" if not self.key_box.value.strip() else "error")
        query = (self.file_picker.value, self.topic_picker.value, self.key_box.value.strip(), self.begin,
                 self.end, int(self.max_num_box.value))
        try:
            # Pictures first, text last: a reader (or a browser test) that sees the new caption
            # also sees the new pictures.
            with working(self.progress, 4) as advance:
                new_query = query != self._last_query or self.result is None
                if new_query:
                    self.result = self._explain(*query)
                    self._last_query = query
                    self._walk_drawn = False
                    advance()
                    show_figure(self.timeline_image, self._timeline(self.result))
                    advance()
                if not self.walk_toggle.value:
                    clear_image(self.walk_image)
                    self._walk_drawn = False
                elif not self._walk_drawn:
                    from rmqlab.viz.walk import READABLE_DPI, query_walk_figure

                    show_figure(self.walk_image, query_walk_figure(self.result.trace), dpi=READABLE_DPI)
                    self._walk_drawn = True
                advance()
                if new_query:
                    self.summary_html.value = self._summary_html(self.result)
                    self.trace_html.value = self._trace_html(self.result)
                mode = self.mode_buttons.value
                table = result_table(self.result, mode)
                shown, tips = _rows_shown(table, mode)
                self.results_html.value = frame_html(
                    shown, max_rows=_RESULT_ROWS, caption=f"{len(table)} rows · {mode}",
                    data={"rows": len(table), "mode": mode}, titles=tips, one_line=True,
                    left=("reason", "topic", "keys"))
                advance()
        except Exception as e:     # shown in the widget: a notebook user should never get a traceback
            return self._fail(f"{type(e).__name__}: {e}")
        self.last_error = None
        self.status_html.value = "" if not self.index_files.empty else message_html(
            "This store has no index files: the broker finds nothing by key (its IndexService has no file to "
            "walk), so every message carrying the key is a miss; `rmqlab store dispatch` (on a copy) builds them.",
            "info")
        return self.result

    def _check_inputs(self) -> str | None:
        if self.messages.empty:
            return f"The store at {self.store.root} holds no messages: nothing to query."
        if not self.topic_picker.value:
            return "Pick a topic."
        key = self.key_box.value.strip()
        if not key:
            return "Type a key (a KEYS token or a UNIQ_KEY), or pick one of the suggestions."
        if " " in key:
            return (f"{key!r} holds a space: the broker splits KEYS on spaces and indexes each part, so "
                    f"no message can be found by it. Query one part, e.g. {key.split()[0]!r}.")
        return None

    def _fail(self, message: str, kind: str = "error") -> None:
        self.result = None
        self._last_query = None
        self._walk_drawn = False
        self.last_error = message
        self.status_html.value = message_html(message, kind)
        for w in (self.summary_html, self.results_html, self.trace_html):
            w.value = ""
        for image in (self.timeline_image, self.walk_image):
            clear_image(image)
        return None

    def _explain(self, file_name: str, topic: str, key: str, begin: int, end: int, max_num: int) -> KeyQuery:
        if self.index_files.empty:
            # no index entry to take candidates from: the messages this explorer's scan of the
            # CommitLog found carrying the key are judged instead (the broker finds none of them)
            o = self.occurrences
            carrying = o.loc[(o["topic"] == topic) & (o["key"] == key), "phy_offset"].to_numpy(np.int64)
            with self.store.index() as idx:
                return query_key(idx, lambda offs: self.store.read_at(offs), topic, key, begin=begin, end=end,
                                 max_num=max_num, also=carrying)
        if file_name == ALL_FILES:
            return self.store.explain_key(topic, key, begin=begin, end=end, max_num=max_num)
        with self.store.index() as idx:
            chosen = [f for f in idx.files if f.path.name == file_name]
            if not chosen:
                raise FileNotFoundError(f"index file {file_name} is no longer in {self.store.index_dir}")
            one = OneFileIndex(chosen[0], idx.max_msgs_num_batch)
            return query_key(one, lambda offs: self.store.read_at(offs), topic, key, begin=begin, end=end,
                             max_num=max_num)

    # -- rendering ----------------------------------------------------------------------

    def _readout_text(self) -> str:
        lo, hi = self.time_slider.value
        return (f"<span style='font-family:monospace;font-size:12px;white-space:nowrap' data-lo='{lo}' "
                f"data-hi='{hi}'>{lo:,} – {hi:,} ms</span>")

    def _time_text(self) -> str:
        lo, hi = self.time_slider.value
        return (f"<span style='font-family:monospace;font-size:12px'>begin {ms_with_clock(self.begin)} "
                f"(+{lo:,} ms) · end {ms_with_clock(self.end)} (+{hi:,} ms) · window {(hi - lo) / 1000:.3f} s"
                f"</span>")

    def _summary_html(self, kq: KeyQuery) -> str:
        s = kq.summary()
        head = (f"<div class='rmqlab-counts' data-broker='{s['broker']}' data-verified='{s['verified']}' "
                f"data-candidates='{s['candidates']}' style='font-family:sans-serif'>"
                f"<b>{html.escape(kq.topic)}#{html.escape(kq.key)}</b> in [{ms_with_clock(kq.begin)}, "
                f"{ms_with_clock(kq.end)}], maxNum {kq.max_num}: broker <b>{s['broker']:,}</b> rows, verified "
                f"<b>{s['verified']:,}</b> rows, {s['candidates']:,} hash-matching candidates</div>")
        rows = []
        for reason, text in REASONS.items():
            n = s[reason]
            style = f"background:{HIGHLIGHT}" if n and reason != "ok" else ("color:#999" if not n else "")
            rows.append(f"<tr class='rmqlab-reason-{reason}' data-count='{n}' style='{style}'>"
                        f"<td style='padding:0 8px;text-align:right'>{n:,}</td><td style='padding:0 8px;"
                        f"white-space:nowrap'><code>{reason}</code></td><td>{html.escape(text)}</td></tr>")
        return head + ("<table style='font-size:12px;font-family:sans-serif;border-collapse:collapse'>"
                       + "".join(rows) + "</table>")

    def _trace_html(self, kq: KeyQuery) -> str:
        t = kq.trace
        head = (f"query {t.key!r}, maxNum {t.max_num} (asked {t.requested_max_num}), "
                f"[{ms_with_clock(t.begin)}, {ms_with_clock(t.end)}]: stopped by {t.stop} ({t.stop_reason}); "
                f"{len(t.result):,} offsets")
        files = t.to_frame()[["name", "begin_timestamp", "end_timestamp", "keys", "action", "after", "found",
                              "entries_read", "walk_stop"]]
        table = frame_html(format_frame(files, {"name": "text"}), max_rows=len(files), one_line=True,
                           caption="the index files, newest first, as the walk met them",
                           left=("name", "action", "after", "walk_stop"))
        lines = []
        problems = kq.problems
        if len(problems):
            lines.append(f"what the broker got wrong ({len(problems)}):")
            for row in problems.head(_PROBLEM_LINES).itertuples():
                lines.append(f"  phy {row.phy_offset:,}: {row.reason}: {row.detail}")
            if len(problems) > _PROBLEM_LINES:
                lines.append(f"  … {len(problems) - _PROBLEM_LINES} more")
        text = (f"<pre style='font-size:12px;line-height:1.25;overflow-x:auto;max-width:100%'>"
                f"{html.escape(chr(10).join(lines))}</pre>" if lines else "")
        return ("<details open><summary style='font-family:sans-serif'>trace</summary>"
                f"<div style='font-family:sans-serif;font-size:12px;margin:2px 0'>{html.escape(head)}</div>"
                f"{table}{text}</details>")

    def _timeline(self, kq: KeyQuery) -> Figure:
        with self.store.index() as idx:
            files = [f for f in idx.files if self.file_picker.value in (ALL_FILES, f.path.name)]
            timeline = key_timeline(kq, self.occurrences, files)
        return key_timeline_figure(timeline, origin=self.origin)


def _rows_shown(table: pd.DataFrame, mode: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The results table as the widget shows it, and the tooltips of its cells: the reason
    right after the row's place, one line a row (long KEYS shortened, the full KEYS, UNIQ_KEY
    and the reason's detail in tooltips), every value through :func:`rmqlab.tables.display.format_frame`."""
    first = "rank" if mode == "broker" else "broker_returned"
    keys = table["keys"].fillna("").astype(str)
    short = keys.where(keys.str.len() <= _KEYS_SHOWN, keys.str.slice(0, _KEYS_SHOWN - 1) + "…")
    shown = pd.DataFrame({
        "rank" if mode == "broker" else "returned": table[first],
        "reason": table["reason"],
        "phy_offset": table["phy_offset"],
        "store_timestamp": table["store_timestamp"],
        "topic": table["topic"],
        "keys": short,
    })
    text = format_frame(shown, {"reason": "text", "keys": "text", "topic": "text"})
    tips = pd.DataFrame({
        "reason": [f"{r}: {REASONS.get(r, '')}" + (f" ({d})" if d else "")
                   for r, d in zip(table["reason"].fillna(""), table["detail"].fillna(""))],
        "keys": [f"KEYS {k or '-'} · UNIQ_KEY {u or '-'}"
                 for k, u in zip(keys, table["uniq_key"].fillna("").astype(str))],
    }, index=text.index)
    return text, tips


def store_from_query_string(query_string: str | None) -> str | None:
    """The ``store`` parameter of a page address's query string (Voilà hands the kernel the
    request's in the ``QUERY_STRING`` environment variable), or None without one. O(length).

    >>> store_from_query_string("token=abc&store=%2Fdata%2Fstore-1")
    '/data/store-1'
    >>> store_from_query_string("") is None
    True
    """
    from urllib.parse import parse_qs

    values = parse_qs(query_string or "").get("store")
    return values[-1].strip() if values and values[-1].strip() else None


class ExplorerApp(WidgetBase):
    """The query explorer on a store the user names: a path field and an Open button above a
    :class:`QueryExplorer` (what ``make app`` serves, and notebook 05's explorer).

    The first store is the ``store`` parameter of the page's address when there is one
    (`query_string`: in Voilà, ``os.environ["QUERY_STRING"]``; e.g. ``...?token=T&store=/data/s``),
    else `store` (None: the sample store); `explorer_options` (topic, key, begin, end, ...) go
    to the explorer of `store` only, since another store has other topics and times. Opening a
    folder that is not a store, or one that cannot be read, keeps the explorer shown and says
    why in :attr:`error_html`; nothing raises. State: :attr:`explorer` (the QueryExplorer shown,
    or None), :attr:`path_box`, :attr:`open_button`, :attr:`error_html`. Cost: a
    :class:`QueryExplorer`'s construction a store opened (one read of its CommitLog).
    """

    def __init__(self, store: Store | str | os.PathLike | None = None, *, query_string: str | None = None,
                 **explorer_options: Any):
        asked = store_from_query_string(query_string)
        self._given, self._options = store, explorer_options
        self._muted = False
        self.explorer: QueryExplorer | None = None
        self.path_box = widgets.Text(placeholder="a store folder (empty: the sample store)", description="store",
                                     continuous_update=False,
                                     layout=widgets.Layout(flex="1 1 30em", max_width="48em"))
        self.open_button = widgets.Button(description="Open", button_style="primary",
                                          layout=widgets.Layout(width="6em"))
        self.error_html = widgets.HTML()
        self.body = widgets.VBox()
        for w, cls in ((self.path_box, "rmqlab-store-path"), (self.open_button, "rmqlab-store-open"),
                       (self.error_html, "rmqlab-store-error")):
            w.add_class(cls)
        self.open_button.on_click(lambda _: self.open(self.path_box.value))
        self.path_box.observe(lambda change: self.open(change["new"]), names="value")
        self.widget = widgets.VBox([
            widgets.HBox([self.path_box, self.open_button], layout=widgets.Layout(flex_flow="row wrap")),
            self.error_html, self.body])
        self.widget.add_class("rmqlab-explorer-app")
        if asked is not None:
            self.path_box.value = asked          # opens it
        else:
            self._open(store, explorer_options)
            if isinstance(store, (str, os.PathLike)):
                with self._quiet():
                    self.path_box.value = os.fspath(store)

    @contextmanager
    def _quiet(self) -> Iterator[None]:
        """Set the path field without opening what it says."""
        self._muted = True
        try:
            yield
        finally:
            self._muted = False

    def open(self, path: str | os.PathLike | None) -> bool:
        """Show the store at `path` ("" or None: the sample store): True when it opened, else
        False with the reason in :attr:`error_html` (the explorer shown before stays)."""
        if self._muted:
            return False
        text = os.fspath(path).strip() if path is not None else ""
        given = os.fspath(self._given) if isinstance(self._given, (str, os.PathLike)) else None
        if text == (given or ""):
            return self._open(self._given, self._options)
        return self._open(text or None, {})

    def _open(self, store: Store | str | os.PathLike | None, options: dict[str, Any]) -> bool:
        try:
            explorer = QueryExplorer(store, **options)
        except (OSError, ValueError, RmqlabError) as e:
            shown = "the sample store" if store is None else os.fspath(store) if not isinstance(store, Store) \
                else str(store.root)
            self.error_html.value = message_html(f"Cannot show {shown}: {e}")
            return False
        self.explorer = explorer
        self.body.children = [explorer.widget]
        self.error_html.value = ""
        return True


def _as_store(store: Store | str | os.PathLike | None, options: dict[str, Any] | None) -> Store:
    if store is None:
        from rmqlab.lab.sample import sample_store

        return sample_store()
    if isinstance(store, Store):
        return store
    if not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a Store or the path of a store folder, got {type(store).__name__}")
    return Store.existing(store, **(options or {}))


def _store_label(root) -> str:
    """How the store is named on screen: "the sample store", or its folder name (a full path
    says more about the machine than about the store)."""
    from rmqlab.lab.sample import DEFAULT_ROOT

    root = Path(root).resolve()
    if root.parts[-len(DEFAULT_ROOT.parts):] == DEFAULT_ROOT.parts:
        return f"the sample store ({'/'.join(DEFAULT_ROOT.parts)})"
    return f"store {root.name}"
