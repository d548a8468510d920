"""Watch the broker's putKey fill a tiny, real index file, one key at a time.

:class:`InsertionStepper` creates an :class:`~rmqlab.formats.indexfile.IndexFile` with a handful
of slots and entries (in a temporary folder unless told otherwise) and puts keys into it with
:meth:`~rmqlab.formats.indexfile.IndexFile.put_key`, exactly as the broker does. After every
step it re-reads the file's bytes and shows:

* the header fields, the ones the step changed highlighted (the header as it is on disk: a new
  file's header is all zeros until the first put writes it);
* the slot table (slot -> newest entry of its chain) and the entries table (keyHash, phyOffset,
  timeDiff, prevIndex), entry 0 marked as never written and the new entry highlighted;
* a chain diagram (:func:`chain_diagram`): slots in a column, arrows to their newest entry and
  along prevIndex to older ones;
* one sentence saying what happened and why (the slot was empty or not, a String.hashCode
  collision, the file being full).

The default keys show every case in eight steps: a new slot, a ``String.hashCode`` collision
(``Aa`` and ``BB``), a different hash landing in an occupied slot, the same key twice, and the
refusal when the file is full (a file holds ``index_num - 1`` keys).

>>> s = InsertionStepper()
>>> [s.step()["slot"] for _ in range(3)]        # Aa, order-1, BB: BB lands on Aa's slot
[3, 1, 3]
>>> s.history[-1]["prev_index"], s.history[-1]["collision_with"]
(1, ['T#Aa'])
>>> s.close()
"""
from __future__ import annotations

import datetime as _dt
import html
import os
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from rmqlab.formats.indexfile import ENTRY, HEADER, NEW_SLOT, SLOT, IndexFile
from rmqlab.jvm.hashcode import index_hash, index_key
from rmqlab.store.indexservice import index_file_name
from rmqlab.tables.times import ms_to_iso
from rmqlab.viz import fonts
from rmqlab.viz.widgetkit import (
    HIGHLIGHT,
    WidgetBase,
    image_widget,
    message_html,
    show_figure,
    table_html,
)

__all__ = ["InsertionStepper", "DEFAULT_KEYS", "DEFAULT_START_MS", "HEADER_NAMES", "chain_diagram",
           "read_index_bytes"]

#: Eight keys for the default 4-slot, 8-entry file: a new slot, another new slot, a
#: String.hashCode collision (T#BB = T#Aa), a third slot, a different hash in an occupied slot,
#: a key seen before, the last free entry, and one key too many (refused).
DEFAULT_KEYS = ("Aa", "order-1", "BB", "order-2", "order-3", "order-1", "order-4", "order-5")

#: 2024-06-10 06:13:20.400 UTC: not on a whole second, so the truncation of timeDiff shows.
DEFAULT_START_MS = 1_718_000_000_400

#: The header fields by their Java names (IndexHeader.java), in file order.
HEADER_NAMES = {f.name: f.java_name for f in HEADER.fields}

#: The stepper draws and tabulates every slot and entry: beyond this use SlotBrowser.
MAX_SLOTS = 64
MAX_ENTRIES = 64

_UTC = _dt.UTC


def read_index_bytes(path: str | os.PathLike, hash_slot_num: int, index_num: int
                     ) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """The header (as on disk, no adjustment), the slots (int64) and all entries (a structured
    array, entry 0 included) of the file at `path`, read with a plain ``read()``. Cost: one read
    of the whole file; meant for the tiny files of the stepper."""
    data = Path(path).read_bytes()
    header = HEADER.unpack_from(data, 0)._asdict()
    slots = np.frombuffer(data, SLOT.dtype["newest_entry"], hash_slot_num, HEADER.size).astype(np.int64)
    entries = np.frombuffer(data, ENTRY.dtype, index_num, HEADER.size + SLOT.size * hash_slot_num)
    return header, slots, entries


class InsertionStepper(WidgetBase):
    """Put keys one at a time into a tiny real index file and show what each put changed.

    Parameters
    ----------
    keys:
        The keys to put, in order (without the topic); default :data:`DEFAULT_KEYS`.
    hash_slot_num, index_num:
        The file's geometry (at most 64 each: everything is drawn). The file holds
        ``index_num - 1`` keys.
    topic:
        Each key is indexed as ``topic + "#" + key``, as the broker's buildIndex does.
    start_ms, interval_ms:
        Store time (ms since the epoch) of the first message and the gap between messages.
    message_size:
        CommitLog bytes per message: message i is at phyOffset ``i * message_size``.
    directory:
        Where the file is created (named by `start_ms`, ``yyyyMMddHHmmssSSS`` in UTC); default
        a new temporary folder, deleted by :meth:`close` or when the stepper is collected.
    slot_count_rule:
        "new-slot" (RocketMQ >= 4.7.1: hashSlotCount counts slots that were empty) or
        "every-put" (<= 4.7.0: every put adds one).
    diagram:
        Draw the chain diagram after every step (one small figure); False leaves the image empty,
        for scripts that only want the tables and :attr:`history`.

    Attributes: the controls :attr:`step_button`, :attr:`reset_button`, :attr:`key_text`,
    :attr:`add_button`; the state :attr:`file`, :attr:`pending` (keys still to put),
    :attr:`history` (one dict per step, see :meth:`step`), :attr:`header_frame`,
    :attr:`slots_frame`, :attr:`entries_frame` (what the tables show, read from the file's
    bytes); the outputs :attr:`explanation`, :attr:`header_html`, :attr:`slots_html`,
    :attr:`entries_html`, :attr:`chain_image`. Cost per step: one put (O(1)), one read of
    the file and one small figure (the largest part).
    """

    def __init__(self, keys: Sequence[str] | None = None, *, hash_slot_num: int = 4, index_num: int = 8,
                 topic: str = "T", start_ms: int = DEFAULT_START_MS, interval_ms: int = 700,
                 message_size: int = 200, directory: str | os.PathLike | None = None,
                 slot_count_rule: str = NEW_SLOT, diagram: bool = True):
        keys = list(DEFAULT_KEYS if keys is None else keys)
        for k in keys:
            _check_key("keys", k)
        for name, value, low, high in (("hash_slot_num", hash_slot_num, 1, MAX_SLOTS),
                                       ("index_num", index_num, 2, MAX_ENTRIES)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"{name} must be an int in {low}..{high} (the stepper draws every "
                                 f"slot and entry; use SlotBrowser for real files), got {value!r}")
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"topic must be a non-empty string, got {topic!r}")
        if int(interval_ms) < 0:
            raise ValueError(f"interval_ms must be >= 0, got {interval_ms}")
        if int(message_size) <= 0:
            raise ValueError(f"message_size must be positive, got {message_size}")
        if int(start_ms) <= 0:
            raise ValueError(f"start_ms must be a positive time in ms since the epoch, got {start_ms}")
        self.keys = tuple(keys)
        self.hash_slot_num = int(hash_slot_num)
        self.index_num = int(index_num)
        self.topic = topic
        self.start_ms = int(start_ms)
        self.interval_ms = int(interval_ms)
        self.message_size = int(message_size)
        self.slot_count_rule = slot_count_rule
        self.diagram = bool(diagram)
        if directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="rmqlab-stepper-"))
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.directory), True)
        else:
            self.directory = Path(directory)
            if not self.directory.is_dir():
                raise NotADirectoryError(f"directory={str(directory)!r} is not a folder")
            self._cleanup = None
        self.path = self.directory / index_file_name(self.start_ms, _UTC)
        self.file = IndexFile.create(self.path, self.hash_slot_num, self.index_num,
                                     slot_count_rule=slot_count_rule)
        self.pending: list[str] = list(self.keys)
        self.history: list[dict[str, Any]] = []
        self._keys_by_entry: dict[int, str] = {}

        self.step_button = widgets.Button(description="Step", icon="step-forward",
                                          tooltip="put the next key")
        self.reset_button = widgets.Button(description="Reset", icon="undo",
                                           tooltip="a fresh, all-zero file and the original keys")
        self.key_text = widgets.Text(placeholder="key to add, e.g. BB", continuous_update=False,
                                     layout=widgets.Layout(width="14em"))
        self.add_button = widgets.Button(description="Add key", icon="plus")
        self.pending_label = widgets.HTML()
        self.explanation = widgets.HTML()
        spaced = widgets.Layout(margin="0 12px 0 0")
        self.header_html = widgets.HTML(layout=spaced)
        self.slots_html = widgets.HTML(layout=spaced)
        self.entries_html = widgets.HTML()
        self.chain_image = image_widget("rmqlab-chain")
        for w, cls in ((self.step_button, "rmqlab-step"), (self.reset_button, "rmqlab-reset"),
                       (self.key_text, "rmqlab-add-key-text"), (self.add_button, "rmqlab-add-key"),
                       (self.explanation, "rmqlab-step-text"), (self.header_html, "rmqlab-header"),
                       (self.slots_html, "rmqlab-slots"), (self.entries_html, "rmqlab-entries"),
                       (self.pending_label, "rmqlab-pending")):
            w.add_class(cls)
        self.step_button.on_click(lambda _: self.step())
        self.reset_button.on_click(lambda _: self.reset())
        self.add_button.on_click(lambda _: self._add_from_text())
        self.key_text.observe(lambda change: self._add_from_text(), names="value")

        title = widgets.HTML(
            f"<b>putKey, step by step</b>: {self.hash_slot_num} slots, {self.index_num} entries "
            f"(holds {self.index_num - 1} keys), keys indexed as <code>{html.escape(topic)}#key</code>")
        self.widget = widgets.VBox([
            title,
            widgets.HBox([self.step_button, self.reset_button, self.key_text, self.add_button]),
            self.pending_label,
            self.explanation,
            widgets.HBox([self.header_html, self.slots_html, self.entries_html],
                         layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start",
                                               justify_content="flex-start")),
            self.chain_image,
        ])
        self.widget.add_class("rmqlab-insertion-stepper")
        self.explanation.value = message_html(
            f"A new file: its header is all zeros on disk (indexCount is 1 in memory: entry 0 is "
            f"never written). Press Step to put {self.topic}#{self.pending[0]}." if self.pending else
            "A new file. Add a key, then press Step.", "info")
        self._show(None)

    # -- actions ------------------------------------------------------------------------

    def add_key(self, key: str) -> None:
        """Queue `key` (without the topic) to be put after the keys already waiting."""
        _check_key("key", key)
        self.pending.append(key)
        self._show_pending()

    def _add_from_text(self) -> None:
        text = self.key_text.value.strip()
        if not text:
            return
        try:
            self.add_key(text)
        except ValueError as e:
            self.explanation.value = message_html(str(e))
            return
        self.key_text.value = ""

    def step(self) -> dict[str, Any]:
        """Put the next waiting key; returns what happened (also appended to :attr:`history`).

        Keys: ``step`` (1-based), ``key``, ``index_key`` (topic#key), ``hash``, ``slot``,
        ``phy_offset``, ``store_timestamp``, ``stored`` (put_key's answer), ``entry`` (the new
        entry's number, None when refused), ``slot_before`` / ``slot_after`` (the slot's value),
        ``slot_was_empty``, ``prev_index`` (None when refused), ``time_diff`` (seconds),
        ``collision_with`` (earlier keys with the same stored hash but other text),
        ``header_before`` / ``header_after`` (as on disk), ``changed`` (header fields that
        changed), ``text`` (the explanation shown). With no key waiting nothing is put and
        ``{"stored": False, "text": ...}`` is returned without touching the history.
        """
        if self.file.closed:
            raise ValueError(f"{self.path.name}: the stepper's file is closed; make a new InsertionStepper")
        if not self.pending:
            text = "No key waiting: type one in the box and press Add key."
            self.explanation.value = message_html(text, "info")
            return {"stored": False, "text": text}
        key = self.pending.pop(0)
        number = len(self.history)
        full_key = index_key(self.topic, key)
        h = index_hash(full_key)
        slot = h % self.hash_slot_num
        phy = number * self.message_size
        ts = self.start_ms + number * self.interval_ms
        disk_before, slots_before, _ = read_index_bytes(self.path, self.hash_slot_num, self.index_num)
        memory_before = self.file.header
        slot_before = int(slots_before[slot])
        was_empty = not 1 <= slot_before < memory_before.index_count
        stored = self.file.put_key(full_key, phy, ts)
        disk_after, slots_after, entries = read_index_bytes(self.path, self.hash_slot_num, self.index_num)
        entry = memory_before.index_count if stored else None
        earlier = {self._keys_by_entry[e]: int(entries[e]["key_hash"]) for e in self._keys_by_entry}
        collision_with = sorted(k for k, kh in earlier.items() if kh == h and k != full_key)
        if stored:
            self._keys_by_entry[entry] = full_key
        record = {
            "step": number + 1, "key": key, "index_key": full_key, "hash": h, "slot": slot,
            "phy_offset": phy, "store_timestamp": ts, "stored": stored, "entry": entry,
            "slot_before": slot_before, "slot_after": int(slots_after[slot]), "slot_was_empty": was_empty,
            "prev_index": int(entries[entry]["prev_index"]) if stored else None,
            "time_diff": int(entries[entry]["time_diff"]) if stored else None,
            "collision_with": collision_with, "same_key_before": full_key in earlier,
            "header_before": disk_before, "header_after": disk_after,
            "changed": [k for k in disk_before if disk_before[k] != disk_after[k]],
        }
        record["text"] = self._explain(record, memory_before)
        self.history.append(record)
        self._show(record)
        return record

    def reset(self) -> None:
        """Replace the file with a fresh, all-zero one and queue the original keys again."""
        self.file.close(sync=False)
        self.file = IndexFile.create(self.path, self.hash_slot_num, self.index_num,
                                     slot_count_rule=self.slot_count_rule, overwrite=True)
        self.pending = list(self.keys)
        self.history = []
        self._keys_by_entry = {}
        self._show(None)
        self.explanation.value = message_html("A fresh file: all zeros on disk.", "info")

    def close(self) -> None:
        """Close the file; a temporary folder made by the stepper is deleted. The widget then
        says so and its controls are disabled (a click could only fail unseen)."""
        self.file.close(sync=False)
        if self._cleanup is not None:
            self._cleanup()
        for control in (self.step_button, self.reset_button, self.add_button, self.key_text):
            control.disabled = True
        self.explanation.value = message_html(
            f"This stepper's file {self.path.name} is closed: it can put no more keys. "
            f"Make a new InsertionStepper to start again.", "warning")

    # -- explanation ----------------------------------------------------------------------

    def _explain(self, r: dict[str, Any], before) -> str:
        key = repr(r["index_key"])
        if not r["stored"]:
            return (f"key {key}: put_key returns false: the file is full (indexCount {before.index_count} "
                    f">= indexNum {self.index_num}); a file holds index_num - 1 = {self.index_num - 1} keys "
                    f"because entry 0 is never written. The broker would now create a new file, seeded with "
                    f"this one's endPhyOffset and endTimestamp.")
        e = r["entry"]
        where = f"key {key} hashes to {r['hash']} -> slot {r['slot']}"
        if r["slot_was_empty"]:
            link = (f"{where}, which is empty: the new entry {e} records prevIndex 0 (the end of the "
                    f"chain) and the slot now points at {e}")
        else:
            link = (f"{where}, which already points at entry {r['slot_before']}: the new entry {e} "
                    f"records prevIndex {r['prev_index']} and the slot now points at {e}")
        if r["collision_with"]:
            link += (f" ({', '.join(map(repr, r['collision_with']))} has the same String.hashCode: "
                     f"only the CommitLog can tell them apart)")
        elif r["same_key_before"]:
            link += " (the same key again: its chain now holds both messages)"
        elif not r["slot_was_empty"]:
            link += " (another hash, same slot: hash % hashSlotNum is equal)"
        hb, ha = r["header_before"], r["header_after"]
        counted = ha["hash_slot_count"] - hb["hash_slot_count"]
        if counted:
            reason = ("every put counts (<= 4.7.0)" if self.slot_count_rule != NEW_SLOT
                      else "the slot was empty")
            count = f"hashSlotCount {hb['hash_slot_count']} -> {ha['hash_slot_count']} ({reason})"
        else:
            count = "hashSlotCount unchanged (the slot was not empty)"
        parts = [link, count]
        if e == 1:
            parts.append(f"first entry: beginTimestamp and beginPhyOffset take this message's "
                         f"{r['store_timestamp']} and {r['phy_offset']}, so timeDiff is 0")
        else:
            parts.append(f"timeDiff = ({r['store_timestamp']} - beginTimestamp {before.begin_timestamp}) "
                         f"// 1000 = {r['time_diff']} s (whole seconds, truncated)")
        parts.append(f"indexCount {before.index_count} -> {before.index_count + 1}")
        return "; ".join(parts) + "."

    # -- display ------------------------------------------------------------------------

    def _show_pending(self) -> None:
        waiting = ", ".join(html.escape(k) for k in self.pending) or "none"
        self.pending_label.value = f"<span style='font-family:sans-serif'>waiting: {waiting}</span>"

    def _show(self, record: dict[str, Any] | None) -> None:
        header, slots, entries = read_index_bytes(self.path, self.hash_slot_num, self.index_num)
        count = max(header["index_count"], 1)
        changed = set(record["changed"]) if record else set()
        new_entry = record["entry"] if record and record["stored"] else None
        changed_slot = record["slot"] if record and record["stored"] else None
        if self.diagram:
            show_figure(self.chain_image, chain_diagram(slots, entries, count, keys=self._keys_by_entry,
                                                        highlight_entry=new_entry))

        self.header_frame = pd.DataFrame({"field": [HEADER_NAMES[k] for k in header],
                                          "value": list(header.values())})
        self.slots_frame = pd.DataFrame({"slot": np.arange(self.hash_slot_num), "newest_entry": slots})
        self.entries_frame = pd.DataFrame({
            "entry": np.arange(self.index_num),
            "key_hash": entries["key_hash"].astype(np.int64),
            "phy_offset": entries["phy_offset"].astype(np.int64),
            "time_diff": entries["time_diff"].astype(np.int64),
            "prev_index": entries["prev_index"].astype(np.int64),
        })

        header_rows, header_changed = [], []
        for i, (name, value) in enumerate(header.items()):
            note = ms_to_iso(value) if name.endswith("timestamp") and value > 0 else ""
            if name == "index_count" and value == 0:
                note = "0 on disk until the first put; 1 in memory"
            header_rows.append([HEADER_NAMES[name], value, note])
            if name in changed:
                header_changed.append(i)
        self.header_html.value = table_html(["header", "value", ""], header_rows, caption="header (40 bytes)",
                                            highlight=header_changed, row_class="rmqlab-header-row")

        slot_rows = []
        for i, v in enumerate(slots):
            chain = " → ".join(str(e) for e in self.file.chain(i)) or "empty"
            slot_rows.append([i, int(v), chain])
        self.slots_html.value = table_html(
            ["slot", "newest entry", "chain"], slot_rows, caption=f"slots ({self.hash_slot_num} × 4 bytes)",
            highlight=[] if changed_slot is None else [changed_slot],
            muted=[i for i, v in enumerate(slots) if v == 0], row_class="rmqlab-slot-row")

        entry_rows = []
        for n in range(self.index_num):
            e = entries[n]
            if n == 0:
                what = "never written"
            elif n >= count:
                what = "free"
            else:
                what = self._keys_by_entry.get(n, "")
            entry_rows.append([n, int(e["key_hash"]), int(e["phy_offset"]), int(e["time_diff"]),
                               int(e["prev_index"]), what])
        self.entries_html.value = table_html(
            ["entry", "keyHash", "phyOffset", "timeDiff", "prevIndex", "key (not stored)"], entry_rows,
            caption=f"entries ({self.index_num} × 20 bytes)",
            highlight=[] if new_entry is None else [new_entry],
            muted=[n for n in range(self.index_num) if n == 0 or n >= count], row_class="rmqlab-entry-row")

        self._show_pending()
        if record is not None:     # last, after the pictures and tables it describes
            self.explanation.value = (f'<div style="font-family:sans-serif">'
                                      f'<b>step {record["step"]}</b>: {html.escape(record["text"])}</div>')


def chain_diagram(slots: np.ndarray, entries: np.ndarray, index_count: int, *,
                  keys: dict[int, str] | None = None, highlight_entry: int | None = None,
                  figsize: tuple[float, float] | None = None) -> Figure:
    """Slots as a column on the left, entries as a column on the right; an arrow from each
    non-empty slot to its newest entry and, on the right, from each entry along prevIndex to the
    older entry of the same chain. Entry 0 (never written) and free entries are grey; the
    `highlight_entry` is yellow. `keys` labels entries with the key put there (the file stores
    only hashes). Cost: O(slots + entries) patches; meant for files of at most a few dozen.

    >>> import numpy as np
    >>> from rmqlab.formats.indexfile import ENTRY
    >>> e = np.zeros(3, ENTRY.dtype); e[1] = (7, 0, 0, 0); e[2] = (7, 100, 1, 1)
    >>> fig = chain_diagram(np.array([0, 2]), e, 3)
    >>> len(fig.axes[0].patches) >= 5      # 2 slots + 3 entries
    True
    """
    m, n = len(slots), len(entries)
    keys = keys or {}
    rows = max(m, n)
    if figsize is None:
        figsize = (7.0, 0.32 * rows + 0.9)
    fig = Figure(figsize=figsize)
    # fixed axes: a layout engine would cost more than the drawing itself for this small figure
    ax = fig.add_axes((0.01, 0.01, 0.98, 1 - 0.3 / figsize[1]))
    ax.set_xlim(-0.2, 7.2)
    ax.set_ylim(-rows + 0.3, 1.0)
    ax.set_axis_off()

    def slot_y(i: int) -> float:
        return -i * (rows - 1) / max(m - 1, 1) if m > 1 else 0.0

    def entry_y(e: int) -> float:
        return -e * (rows - 1) / max(n - 1, 1) if n > 1 else 0.0

    slot_x, entry_x, box_h = 0.0, 3.0, 0.62
    ax.text(slot_x + 0.6, 0.65, "slots", ha="center", fontsize=fonts.TEXT, weight="bold")
    ax.text(entry_x + 1.4, 0.65, "entries", ha="center", fontsize=fonts.TEXT, weight="bold")
    for i in range(m):
        y = slot_y(i)
        empty = int(slots[i]) == 0
        ax.add_patch(FancyBboxPatch((slot_x, y - box_h / 2), 1.2, box_h, boxstyle="round,pad=0.02",
                                    facecolor="#eeeeee" if empty else "#cfe2f3", edgecolor="#666"))
        ax.text(slot_x + 0.6, y, f"slot {i}: {int(slots[i])}", ha="center", va="center", fontsize=fonts.SMALL,
                color="#888" if empty else "black")
    for e in range(n):
        y = entry_y(e)
        used = 1 <= e < index_count
        face = HIGHLIGHT if e == highlight_entry else ("#d9ead3" if used else "#f4f4f4")
        ax.add_patch(FancyBboxPatch((entry_x, y - box_h / 2), 2.8, box_h, boxstyle="round,pad=0.02",
                                    facecolor=face, edgecolor="#666" if used else "#bbb"))
        if e == 0:
            label = "0: never written"
        elif not used:
            label = f"{e}: free"
        else:
            label = f"{e}: {keys.get(e, '')}  h={int(entries[e]['key_hash'])}"
        ax.text(entry_x + 0.08, y, label, ha="left", va="center", fontsize=fonts.SMALL,
                color="black" if used else "#999")
    arrow = dict(arrowstyle="-|>", color="#1f5fa8", lw=1.0, shrinkA=2, shrinkB=2)
    for i in range(m):
        head = int(slots[i])
        if 1 <= head < min(index_count, n):
            ax.annotate("", xy=(entry_x, entry_y(head)), xytext=(slot_x + 1.2, slot_y(i)), arrowprops=arrow)
    prev_arrow = dict(arrowstyle="-|>", color="#b45f06", lw=1.0, shrinkA=2, shrinkB=2,
                      connectionstyle="arc3,rad=0.5")
    for e in range(1, min(index_count, n)):
        prev = int(entries[e]["prev_index"])
        if 1 <= prev < e:
            ax.annotate("", xy=(entry_x + 2.8, entry_y(prev)), xytext=(entry_x + 2.8, entry_y(e)),
                        arrowprops=prev_arrow)
    ax.set_title("blue: slot → newest entry of its chain;  orange: prevIndex → older entry",
                 fontsize=fonts.SMALL, color="#555", loc="left")
    return fig


def _check_key(name: str, key: Any) -> None:
    if not isinstance(key, str) or not key:
        raise ValueError(f"{name}: a key must be a non-empty string, got {key!r}")
    if " " in key:
        raise ValueError(f"{name}: {key!r} holds a space; the broker splits KEYS on spaces and indexes "
                         f"each part, so a key never holds one")

