"""InsertionStepper: what it shows is the file's bytes, and the file follows the broker's putKey.

Independent truth: the file re-read with struct (not through rmqlab's layouts), the hashes of
tests/support/reference_model.py, and a plain-Python model of putKey written from the format's rules.
"""
from __future__ import annotations

import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_model import stored_hash

from rmqlab.formats.indexfile import IndexFile
from rmqlab.viz.stepper import DEFAULT_KEYS, HEADER_NAMES, InsertionStepper

REPO = Path(__file__).resolve().parents[2]


def raw_file(path, slots, entries):
    """(header dict, slot list, entry tuples) straight from the bytes with struct."""
    data = Path(path).read_bytes()
    assert len(data) == 40 + 4 * slots + 20 * entries
    names = ["begin_timestamp", "end_timestamp", "begin_phy_offset", "end_phy_offset",
             "hash_slot_count", "index_count"]
    header = dict(zip(names, struct.unpack_from(">qqqqii", data, 0)))
    slot_values = list(struct.unpack_from(f">{slots}i", data, 40))
    rows = [struct.unpack_from(">iqii", data, 40 + 4 * slots + 20 * n) for n in range(entries)]
    return header, slot_values, rows


class Tables(HTMLParser):
    """Every <table> of an HTML string as a list of rows of cell texts (header row included)."""

    def __init__(self, text):
        super().__init__()
        self.tables, self._row, self._cell = [], None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            self.tables[-1].append(self._row)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def shown_table(widget):
    (table,) = Tables(widget.value).tables
    return table[1:]


def model_put(model, key, phy, ts, hash_slot_num, index_num, every_put=False):
    """putKey from the format's rules, on plain Python lists (the independent model)."""
    h = model["header"]
    count = max(h["index_count"], 1)
    if count >= index_num:
        return False
    kh = stored_hash(key)
    slot = kh % hash_slot_num
    old = model["slots"][slot]
    if old <= 0 or old > count:
        old_empty, old = True, 0
    else:
        old_empty = False
    diff = 0 if h["begin_timestamp"] <= 0 else max(int((ts - h["begin_timestamp"]) / 1000), 0)
    if count <= 1:
        diff = 0
    model["entries"][count] = (kh, phy, diff, old)
    model["slots"][slot] = count
    if count <= 1:
        h["begin_timestamp"], h["begin_phy_offset"] = ts, phy
    if old_empty or every_put:
        h["hash_slot_count"] += 1
    h["index_count"] = count + 1
    h["end_timestamp"], h["end_phy_offset"] = ts, phy
    return True


def new_model(hash_slot_num, index_num):
    return {"header": dict.fromkeys(["begin_timestamp", "end_timestamp", "begin_phy_offset",
                                      "end_phy_offset", "hash_slot_count", "index_count"], 0),
            "slots": [0] * hash_slot_num, "entries": [(0, 0, 0, 0)] * index_num}


def assert_display_matches_bytes(s: InsertionStepper):
    header, slots, entries = raw_file(s.path, s.hash_slot_num, s.index_num)
    # the frames
    assert dict(zip(s.header_frame["field"], s.header_frame["value"])) == \
        {HEADER_NAMES[k]: v for k, v in header.items()}
    assert s.slots_frame["newest_entry"].tolist() == slots
    assert [tuple(r) for r in s.entries_frame[["key_hash", "phy_offset", "time_diff", "prev_index"]]
            .itertuples(index=False)] == entries
    # the HTML the user sees
    shown_header = {row[0]: int(row[1]) for row in shown_table(s.header_html)}
    assert shown_header == {HEADER_NAMES[k]: v for k, v in header.items()}
    assert [int(row[1]) for row in shown_table(s.slots_html)] == slots
    shown_entries = shown_table(s.entries_html)
    assert [tuple(int(c) for c in row[1:5]) for row in shown_entries] == entries
    assert shown_entries[0][5] == "never written"


def test_every_step_shows_the_bytes_and_follows_the_model():
    s = InsertionStepper()
    model = new_model(s.hash_slot_num, s.index_num)
    assert_display_matches_bytes(s)
    assert Path(s.path).read_bytes() == bytes(len(Path(s.path).read_bytes()))   # all zero at first
    for key in DEFAULT_KEYS:
        r = s.step()
        want = model_put(model, f"T#{key}", r["phy_offset"], r["store_timestamp"], 4, 8)
        assert r["stored"] is want
        header, slots, entries = raw_file(s.path, 4, 8)
        assert header == model["header"]
        assert slots == model["slots"]
        assert entries == model["entries"]
        assert_display_matches_bytes(s)
        assert r["hash"] == stored_hash(f"T#{key}") and r["slot"] == r["hash"] % 4
    assert len(s.history) == len(DEFAULT_KEYS)
    s.close()


def test_default_keys_show_a_collision_an_occupied_slot_and_the_refusal():
    s = InsertionStepper()
    records = [s.step() for _ in DEFAULT_KEYS]
    collisions = [r for r in records if r["collision_with"]]
    assert collisions and stored_hash("T#Aa") == stored_hash("T#BB")
    assert collisions[0]["key"] == "BB" and collisions[0]["collision_with"] == ["T#Aa"]
    other_hash_same_slot = [r for r in records if r["stored"] and not r["slot_was_empty"]
                            and not r["collision_with"] and not r["same_key_before"]]
    assert other_hash_same_slot, "a different hash must land in an occupied slot"
    bb = collisions[0]
    assert bb["text"].startswith(f"key 'T#BB' hashes to {stored_hash('T#BB')} -> slot {bb['slot']}, "
                                 f"which already points at entry 1: the new entry 3 records prevIndex 1 "
                                 f"and the slot now points at 3")
    assert "hashSlotCount unchanged (the slot was not empty)" in bb["text"]
    assert records[-1]["stored"] is False
    assert "put_key returns false" in records[-1]["text"]
    assert "a file holds index_num - 1 = 7 keys" in records[-1]["text"]
    assert "put_key returns false" in s.explanation.value
    s.close()


@settings(max_examples=30, deadline=None)
@given(hash_slot_num=st.integers(1, 6), index_num=st.integers(2, 9),
       keys=st.lists(st.sampled_from(["Aa", "BB", "a", "b", "c", "AaAa", "BBBB", "x1", "x2"]),
                     min_size=1, max_size=12),
       every_put=st.booleans())
def test_refusal_at_capacity_and_slot_count_rule(hash_slot_num, index_num, keys, every_put, tmp_path_factory):
    directory = tmp_path_factory.mktemp("stepper")
    s = InsertionStepper(keys, hash_slot_num=hash_slot_num, index_num=index_num, directory=directory,
                         slot_count_rule="every-put" if every_put else "new-slot", diagram=False)
    used_slots = set()
    for n, key in enumerate(keys):
        r = s.step()
        assert r["stored"] is (n < index_num - 1)      # the refusal comes exactly after index_num - 1 keys
        if r["stored"]:
            used_slots.add(stored_hash(f"T#{key}") % hash_slot_num)
        header, slots, _ = raw_file(s.path, hash_slot_num, index_num)
        stored = min(n + 1, index_num - 1)
        assert header["index_count"] == stored + 1
        assert header["hash_slot_count"] == (stored if every_put else len(used_slots))
        assert sum(v != 0 for v in slots) == len(used_slots)
    s.close()


def test_chain_after_the_collision_is_walkable():
    s = InsertionStepper()
    for _ in range(3):                       # Aa, order-1, BB
        s.step()
    slot = stored_hash("T#Aa") % 4
    assert list(s.file.chain(slot)) == [3, 1]
    # brute force over the bytes: entries of this slot, newest first, linked by prev_index
    _, slots, entries = raw_file(s.path, 4, 8)
    mine = [n for n in range(1, 8) if entries[n][0] != 0 and entries[n][0] % 4 == slot]
    assert sorted(mine, reverse=True) == [3, 1] and slots[slot] == 3 and entries[3][3] == 1
    # the broker returns both for either key: only the hash is compared
    with IndexFile.open(s.path, 4, 8) as f:
        assert f.select_phy_offsets("T#Aa", 64, 0, 2**63 - 1) == [entries[3][1], entries[1][1]]
    s.close()


def test_reset_gives_a_fresh_all_zero_file():
    s = InsertionStepper()
    for _ in range(5):
        s.step()
    path = s.path
    s.reset_button.click()
    assert s.history == [] and s.pending == list(DEFAULT_KEYS)
    data = Path(path).read_bytes()
    assert len(data) == 40 + 4 * 4 + 20 * 8 and data == bytes(len(data))
    assert_display_matches_bytes(s)
    assert s.step()["entry"] == 1
    s.close()


def test_buttons_and_the_key_box_drive_it():
    s = InsertionStepper([], hash_slot_num=2, index_num=4)
    assert s.step()["stored"] is False and s.history == []        # nothing waiting: nothing put
    s.key_text.value = "hello"                                      # typing + enter adds the key
    assert s.pending == ["hello"] and s.key_text.value == ""
    s.step_button.click()
    assert s.history[-1]["key"] == "hello" and s.history[-1]["entry"] == 1
    s.key_text.value = "two words"                                  # refused, shown in the widget
    assert s.pending == [] and "space" in s.explanation.value
    s.close()


def test_temporary_folder_is_outside_the_repository_and_removed():
    s = InsertionStepper()
    folder = s.directory
    assert REPO not in folder.parents and folder.is_dir()
    s.close()
    assert not folder.exists()


def test_bad_arguments():
    with pytest.raises(ValueError, match="keys"):
        InsertionStepper(["a b"])
    with pytest.raises(ValueError, match="hash_slot_num"):
        InsertionStepper(hash_slot_num=0)
    with pytest.raises(ValueError, match="index_num"):
        InsertionStepper(index_num=1000)
    with pytest.raises(NotADirectoryError, match="directory"):
        InsertionStepper(directory="/nonexistent/folder")


def test_displays_as_a_widget():
    s = InsertionStepper()
    bundle = s._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "rmqlab-insertion-stepper" in s.widget._dom_classes
    before = s.chain_image.value
    s.step()
    assert s.chain_image.value[:8] == b"\x89PNG\r\n\x1a\n" and s.chain_image.value != before
    s.close()


def test_docstring_examples():
    import doctest

    import rmqlab.viz.stepper
    import rmqlab.viz.widgetkit

    for module in (rmqlab.viz.stepper, rmqlab.viz.widgetkit):
        result = doctest.testmod(module)
        assert result.attempted and not result.failed, module.__name__


def test_a_closed_stepper_says_so_and_stops():
    s = InsertionStepper(["Aa", "BB"], diagram=False)
    s.step()
    s.close()
    assert "is closed" in s.explanation.value and s.path.name in s.explanation.value
    assert all(c.disabled for c in (s.step_button, s.reset_button, s.add_button, s.key_text))
    with pytest.raises(ValueError, match="closed"):
        s.step()
    assert len(s.history) == 1
