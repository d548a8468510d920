"""Browse the hash slots of one index file: where the long chains are, and what is in them.

:class:`SlotBrowser` shows the file's slot occupancy image
(:func:`rmqlab.viz.figures.slot_occupancy_image`), a page of slots as a grid of buttons
labelled "slot · chain length" and coloured as in the image (empty grey, viridis up to the
longest chain a uniform hash gives, red beyond), and, for the selected slot, its chain walked from the
slot along prevIndex (:meth:`IndexFile.chain <rmqlab.formats.indexfile.IndexFile.chain>`) with
each entry's stored hash, CommitLog offset and stored time, and how many distinct hashes share
the slot (one hash repeated = one hot key or a String.hashCode collision; several hashes = keys
that only share ``hash % hash_slot_num``).

>>> import tempfile, os
>>> from rmqlab.formats.indexfile import build_index_file
>>> p = os.path.join(tempfile.mkdtemp(), "20240610061320000")
>>> build_index_file(p, ["T#Aa", "T#BB", "T#c"], [0, 100, 200], [0, 0, 0], hash_slot_num=8, index_num=5)
3
>>> b = SlotBrowser(p, hash_slot_num=8, index_num=5, page=8)
>>> [btn.description for btn in b.buttons][:3]
['0 · 0', '1 · 0', '2 · 0']
>>> b.jump_to_longest(), b.chain_frame["entry"].tolist()
(7, [2, 1])
>>> b.close()                       # the browser says so, and its controls stop
>>> "closed" in b.status_html.value, b.longest_button.disabled
(True, True)
"""
from __future__ import annotations

import html
import itertools

import ipywidgets as widgets
import numpy as np
import pandas as pd

from rmqlab.formats.indexfile import IndexFile
from rmqlab.tables.display import format_frame
from rmqlab.tables.times import ms_to_iso
from rmqlab.viz.figures import (
    PathOrFile,
    chain_length_colour,
    colour_cap,  # the occupancy image's colour scale, so buttons and image agree on "hot"
    slot_chain_lengths,
    slot_occupancy_image,
)
from rmqlab.viz.widgetkit import (
    WidgetBase,
    frame_html,
    image_widget,
    message_html,
    progress_bar,
    show_figure,
    working,
)

__all__ = ["SlotBrowser", "slot_button_colour", "CHAIN_COLUMNS"]

#: Columns of :attr:`SlotBrowser.chain_frame`.
CHAIN_COLUMNS = ["entry", "key_hash", "phy_offset", "time_diff", "stored_time_ms", "stored_time",
                 "prev_index"]
#: Chains longer than this are listed only this far (a hot key's slot can hold millions).
MAX_CHAIN_ROWS = 10_000
_CHAIN_ROWS_SHOWN = 50


def slot_button_colour(length: int, cap: int) -> tuple[str, str]:
    """(background, text) colours of a slot button: the slot's colour in the occupancy image
    (:func:`~rmqlab.viz.figures.chain_length_colour`: grey when empty, viridis up to `cap`
    entries, :data:`~rmqlab.viz.figures.HOT_COLOUR` beyond) and a text colour that reads on it.

    >>> slot_button_colour(0, 4), slot_button_colour(9, 4)
    (('#c8c8c8', '#111111'), ('#d62728', '#ffffff'))
    """
    background = chain_length_colour(length, cap)
    dark = length > cap or 0 < length <= 0.6 * cap       # viridis is dark up to about 60 %
    return background, "#ffffff" if dark else "#111111"


class SlotBrowser(WidgetBase):
    """An index file's slots: occupancy image, a page of slot buttons, the selected slot's chain.

    `path_or_file` is a path (opened read-only; pass the broker's maxHashSlotNum / maxIndexNum
    as `hash_slot_num` / `index_num` unless the file has the default size) or an open
    :class:`IndexFile` (left open). `start` is the first slot shown (rounded down to a page
    boundary), `page` the number of slot buttons shown at once.

    Attributes: the controls :attr:`page_slider` (first slot of the page), :attr:`prev_button`,
    :attr:`next_button`, :attr:`longest_button`, :attr:`buttons` (the current page's slot
    buttons); the state :attr:`file`, :attr:`lengths` (chain length of every slot, int32),
    :attr:`start`, :attr:`selected` (slot or None), :attr:`chain_frame` (the selected chain,
    columns :data:`CHAIN_COLUMNS`), :attr:`hash_counts` (entries per distinct hash in the slot);
    the outputs :attr:`occupancy_image`, :attr:`grid`, :attr:`chain_html`, :attr:`info_html`,
    :attr:`status_html` (empty, or why the browser cannot read: its file is closed). The grid
    has as many columns as fit the page (each as wide as the longest "slot · entries" label),
    so it wraps rather than overflows at any width or font; the page buttons are disabled at
    the first and the last page.
    Cost: :func:`~rmqlab.viz.figures.slot_chain_lengths` and the occupancy image once
    (O(entries + hash_slot_num)), then a page of buttons per page and O(chain) per select.
    """

    def __init__(self, path_or_file: PathOrFile, *, hash_slot_num: int | None = None,
                 index_num: int | None = None, start: int = 0, page: int = 64):
        page = int(page)
        if not 1 <= page <= 1024:
            raise ValueError(f"page must be between 1 and 1024 slots, got {page}")
        if isinstance(path_or_file, IndexFile):
            self.file = path_or_file
            self._owns_file = False
        else:
            self.file = IndexFile.open(path_or_file, hash_slot_num, index_num)
            self._owns_file = True
        self.page = page
        self.hash_slot_num = self.file.geometry.hash_slot_num
        start = int(start)
        if not 0 <= start < self.hash_slot_num:
            raise ValueError(f"start={start} is not a slot of this file (0..{self.hash_slot_num - 1})")
        self.selected: int | None = None
        self.chain_frame = pd.DataFrame(columns=CHAIN_COLUMNS)
        self.hash_counts = pd.Series(dtype=np.int64, name="entries")
        self.buttons: list[widgets.Button] = []

        last_page = (self.hash_slot_num - 1) // page * page
        self.page_slider = widgets.IntSlider(value=0, min=0, max=last_page, step=page,
                                             description="first slot", continuous_update=False,
                                             layout=widgets.Layout(width="32em"))
        self.prev_button = widgets.Button(description="◀ page", tooltip="previous page of slots")
        self.next_button = widgets.Button(description="page ▶", tooltip="next page of slots")
        self.longest_button = widgets.Button(description="longest chain", icon="fire",
                                             tooltip="select the slot with the longest chain")
        self.progress = progress_bar("reading")
        self.occupancy_image = image_widget("rmqlab-occupancy")
        self.info_html = widgets.HTML()
        self.page_html = widgets.HTML()
        self.chain_html = widgets.HTML(layout=widgets.Layout(overflow="auto", max_width="100%"))
        self.status_html = widgets.HTML()
        self.grid = widgets.GridBox(layout=widgets.Layout(grid_gap="2px", width="100%"))
        for w, cls in ((self.status_html, "rmqlab-browser-status"),
                       (self.page_slider, "rmqlab-page-slider"), (self.prev_button, "rmqlab-prev-page"),
                       (self.next_button, "rmqlab-next-page"), (self.longest_button, "rmqlab-longest"),
                       (self.grid, "rmqlab-slot-grid"), (self.chain_html, "rmqlab-chain-table"),
                       (self.info_html, "rmqlab-slot-info"), (self.page_html, "rmqlab-page-info")):
            w.add_class(cls)
        self.prev_button.on_click(lambda _: self._when_open(self.show_page, self.start - self.page))
        self.next_button.on_click(lambda _: self._when_open(self.show_page, self.start + self.page))
        self.longest_button.on_click(lambda _: self._when_open(self.jump_to_longest))
        self.page_slider.observe(lambda change: self._when_open(self.show_page, change["new"]), names="value")

        self.widget = widgets.VBox([
            widgets.HTML(f"<b>{html.escape(self.file.path.name)}</b>: {self.hash_slot_num:,} slots, "
                         f"{self.file.header.keys:,} entries"),
            self.status_html,
            self.progress,
            self.occupancy_image,
            widgets.HBox([self.prev_button, self.page_slider, self.next_button, self.longest_button],
                         layout=widgets.Layout(flex_flow="row wrap", align_items="center")),
            self.page_html,
            self.grid,
            self.info_html,
            self.chain_html,
        ])
        self.widget.add_class("rmqlab-slot-browser")
        self.start = -1
        self.reload()
        # every label "slot · entries" fits its column: as many columns as the page has room for
        widest = len(f"{self.hash_slot_num - 1} · {int(self.lengths.max(initial=0))}")
        self.grid.layout.grid_template_columns = f"repeat(auto-fill, minmax({0.62 * widest + 1.6:.1f}em, 1fr))"
        self.show_page(start)
        self.info_html.value = message_html("Click a slot to see its chain.", "info")

    # -- data -----------------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read the chain lengths and redraw the occupancy image (after the file changed)."""
        with working(self.progress, 2) as advance:
            self.lengths = slot_chain_lengths(self.file)
            self._cap = colour_cap(self.lengths)
            advance()
            show_figure(self.occupancy_image, slot_occupancy_image(self.file, figsize=(6.0, 4.8)))
            advance()
        if self.start >= 0:
            self._build_buttons()

    # -- paging -------------------------------------------------------------------------

    def show_page(self, start: int) -> None:
        """Show the page of slots holding slot `start` (clamped to the file's slots)."""
        self._require_open()
        start = min(max(int(start), 0), self.hash_slot_num - 1) // self.page * self.page
        if start == self.start:
            return
        self.start = start
        if self.page_slider.value != start:
            self.page_slider.value = start      # its observer calls back here and returns above
        self._build_buttons()

    def _build_buttons(self) -> None:
        stop = min(self.start + self.page, self.hash_slot_num)
        for b in self.buttons:
            b.close()
        self.buttons = [self._slot_button(s) for s in range(self.start, stop)]
        self.grid.children = self.buttons
        used = int(np.count_nonzero(self.lengths[self.start:stop]))
        first, last = self.start == 0, stop >= self.hash_slot_num
        self.prev_button.disabled, self.next_button.disabled = first, last
        where = ("the only page" if first and last else "the first page" if first
                 else "the last page" if last else f"page {self.start // self.page + 1:,} of "
                 f"{-(-self.hash_slot_num // self.page):,}")
        self.page_html.value = (f"<span style='font-family:sans-serif'>slots {self.start:,}..{stop - 1:,} "
                                f"({where}): {used} of {stop - self.start} occupied; each button: slot · "
                                f"entries</span>")

    def _slot_button(self, slot: int) -> widgets.Button:
        length = int(self.lengths[slot])
        background, text = slot_button_colour(length, self._cap)
        b = widgets.Button(description=f"{slot} · {length}", tooltip=f"slot {slot}: {length} entries",
                           layout=widgets.Layout(width="100%", margin="0", padding="0 2px"))
        b.style.button_color = background
        b.style.text_color = text
        b.add_class(f"rmqlab-slot-{slot}")
        b.add_class("rmqlab-slot-button")
        if slot == self.selected:
            self._mark(b, True)
        b.on_click(lambda _, s=slot: self._when_open(self.select, s))
        return b

    @staticmethod
    def _mark(button: widgets.Button, on: bool) -> None:
        button.style.font_weight = "bold" if on else ""
        button.layout.border = "2px solid #000" if on else ""

    # -- selection ------------------------------------------------------------------------

    def select(self, slot: int) -> pd.DataFrame:
        """Show `slot`'s chain (turning to its page); returns :attr:`chain_frame`."""
        slot = int(slot)
        if not 0 <= slot < self.hash_slot_num:
            raise ValueError(f"slot={slot} is not a slot of this file (0..{self.hash_slot_num - 1})")
        self._require_open()
        self.show_page(slot)
        self.selected = slot
        for i, b in enumerate(self.buttons):
            self._mark(b, self.start + i == slot)
        length = int(self.lengths[slot])
        numbers = np.fromiter(itertools.islice(self.file.chain(slot), MAX_CHAIN_ROWS), dtype=np.int64)
        e = self.file.entries[numbers]
        begin = self.file.header.begin_timestamp
        time_diff = e["time_diff"].astype(np.int64)
        stored_ms = begin + time_diff * 1000
        self.chain_frame = pd.DataFrame({
            "entry": numbers,
            "key_hash": e["key_hash"].astype(np.int64),
            "phy_offset": e["phy_offset"].astype(np.int64),
            "time_diff": time_diff,
            "stored_time_ms": stored_ms,
            "stored_time": [ms_to_iso(t) for t in stored_ms],
            "prev_index": e["prev_index"].astype(np.int64),
        }, columns=CHAIN_COLUMNS)
        self.hash_counts = self.chain_frame["key_hash"].value_counts().rename("entries")
        self.hash_counts.index.name = "key_hash"
        caption = (f"slot {slot}: chain of {len(self.chain_frame):,} entries, newest first "
                   f"(stored time = beginTimestamp + timeDiff × 1000, whole seconds)")
        shown = format_frame(self.chain_frame.drop(columns="stored_time"), {"key_hash": "text"})
        self.chain_html.value = frame_html(shown, max_rows=_CHAIN_ROWS_SHOWN, caption=caption, one_line=True,
                                           data={"slot": slot, "rows": len(self.chain_frame)})
        self.info_html.value = self._describe(slot, length)
        return self.chain_frame

    def _describe(self, slot: int, length: int) -> str:
        walked = len(self.chain_frame)
        distinct = len(self.hash_counts)
        parts = [f"<b>slot {slot}</b>: {length:,} entries hash to it"]
        if walked == 0:
            parts.append("the slot is empty")
        else:
            if walked < length:
                reason = (f"only the first {MAX_CHAIN_ROWS:,} are listed" if walked == MAX_CHAIN_ROWS
                          else "the chain walk reached fewer: the file is damaged (see IndexFile.problems)")
                parts.append(f"{walked:,} walked; {reason}")
            parts.append(f"{distinct} distinct hash{'es' if distinct != 1 else ''}")
            shared = self.hash_counts[self.hash_counts > 1]
            if len(shared):
                top = ", ".join(f"{int(h)} × {int(c)}" for h, c in shared.head(5).items())
                parts.append(f"repeated hashes (one key written many times, or keys whose String.hashCode "
                             f"collides): {top}")
            if distinct > 1:
                parts.append(f"{distinct} different hashes share the slot only through hash % "
                             f"{self.hash_slot_num}: a query walks past the other keys' entries")
        return f"<div style='font-family:sans-serif'>{'; '.join(parts)}.</div>"

    def jump_to_longest(self) -> int:
        """Select the slot with the longest chain (the lowest such slot); returns it."""
        slot = int(np.argmax(self.lengths))
        self.select(slot)
        return slot

    # -- a closed file ------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True when the browser's file is closed (by :meth:`close`, or by whoever handed it in)."""
        return self.file.closed

    def _closed_text(self) -> str:
        return (f"The index file {self.file.path.name} is closed: this browser can no longer read it, "
                f"so clicks do nothing. Make a new SlotBrowser to browse it again.")

    def _require_open(self) -> None:
        if self.closed:
            self._show_closed()
            raise ValueError(self._closed_text())

    def _when_open(self, action, *args) -> None:
        """What a click does: `action`, or, on a closed file, say so in the widget (a click's
        exception would only reach the browser's log, where nobody sees it)."""
        if self.closed:
            self._show_closed()
            return
        action(*args)

    def _show_closed(self) -> None:
        self.status_html.value = message_html(self._closed_text(), "warning")
        for control in (self.prev_button, self.next_button, self.longest_button, self.page_slider, *self.buttons):
            control.disabled = True

    def close(self) -> None:
        """Close the file if the browser opened it (a file handed in stays open, and the
        browser keeps working); a browser whose file is closed says so and disables its
        controls."""
        if self._owns_file:
            self.file.close()
        if self.closed:
            self._show_closed()
