"""SlotBrowser: buttons, paging and chains against the file's bytes walked by hand.

Independent truth: entries read with struct straight from the file and chains walked in plain
Python along prev_index, on the sample store's first index file (1024 slots, 8192 entries, a
hot key) and on a tiny file with a String.hashCode collision.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.errors import GeometryError
from rmqlab.formats.indexfile import IndexFile, build_index_file
from rmqlab.lab.sample import SAMPLE_STORE_OPTIONS, sample_store
from rmqlab.viz.figures import slot_chain_lengths
from rmqlab.viz.slotbrowser import CHAIN_COLUMNS, SlotBrowser

SLOTS, ENTRIES = SAMPLE_STORE_OPTIONS["hash_slot_num"], SAMPLE_STORE_OPTIONS["index_num"]


@pytest.fixture(scope="module")
def sample_file():
    return sorted(sample_store().index_dir.iterdir())[0]


@pytest.fixture(scope="module")
def raw(sample_file):
    """(begin_timestamp, index_count, slots, entries) of the sample file, read with struct."""
    data = Path(sample_file).read_bytes()
    begin = struct.unpack_from(">q", data, 0)[0]
    count = struct.unpack_from(">i", data, 36)[0]
    slots = struct.unpack_from(f">{SLOTS}i", data, 40)
    base = 40 + 4 * SLOTS
    entries = [struct.unpack_from(">iqii", data, base + 20 * n) for n in range(count)]
    return begin, count, slots, entries


@pytest.fixture(scope="module")
def browser(sample_file):
    b = SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES)
    yield b
    b.close()


def walk(raw, slot):
    """The chain of `slot` by hand: slot head, then prev_index, newest first."""
    _, count, slots, entries = raw
    out, current = [], slots[slot]
    while 0 < current < count:
        out.append(current)
        current = entries[current][3]
    return out


def label(button):
    slot, length = button.description.split(" · ")
    return int(slot), int(length)


def test_buttons_show_the_chain_lengths_of_the_page(browser, raw, sample_file):
    browser.show_page(0)
    want = slot_chain_lengths(sample_file, start=0, stop=64, hash_slot_num=SLOTS, index_num=ENTRIES)
    assert [label(b) for b in browser.buttons] == list(enumerate(want.tolist()))
    # and those lengths are the hand-walked chains (a sound file: every entry is on its slot's chain)
    assert [len(walk(raw, s)) for s in range(64)] == want.tolist()
    assert all(f"rmqlab-slot-{s}" in b._dom_classes for s, b in enumerate(browser.buttons))
    empty = [b for b in browser.buttons if label(b)[1] == 0]
    assert all(b.style.button_color == "#c8c8c8" for b in empty)
    assert len({b.style.button_color for b in browser.buttons}) > 2      # coloured by length


@settings(max_examples=40, deadline=None)
@given(slot=st.integers(0, SLOTS - 1))
def test_select_gives_the_hand_walked_chain(browser, raw, slot):
    frame = browser.select(slot)
    begin, _, _, entries = raw
    chain = walk(raw, slot)
    assert list(frame.columns) == CHAIN_COLUMNS
    assert frame["entry"].tolist() == chain
    assert frame["key_hash"].tolist() == [entries[e][0] for e in chain]
    assert frame["phy_offset"].tolist() == [entries[e][1] for e in chain]
    assert frame["stored_time_ms"].tolist() == [begin + 1000 * entries[e][2] for e in chain]
    assert frame["prev_index"].tolist() == [entries[e][3] for e in chain]
    assert all(entries[e][0] % SLOTS == slot for e in chain)
    distinct = len({entries[e][0] for e in chain})
    assert len(browser.hash_counts) == distinct
    assert browser.start <= slot < browser.start + browser.page        # turned to its page
    if chain:
        assert f"{distinct} distinct hash" in browser.info_html.value
        assert f'data-rows="{len(chain)}"' in browser.chain_html.value


def test_paging_changes_the_buttons(sample_file):
    b = SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES, page=100)
    first = [label(x)[0] for x in b.buttons]
    assert first == list(range(100))
    b.next_button.click()
    assert [label(x)[0] for x in b.buttons] == list(range(100, 200)) and b.page_slider.value == 100
    b.page_slider.value = 1000                                     # the last page: 24 slots
    assert [label(x)[0] for x in b.buttons] == list(range(1000, 1024))
    b.next_button.click()                                          # no page after the last
    assert b.start == 1000
    b.prev_button.click()
    assert b.start == 900
    lengths = slot_chain_lengths(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES)
    assert [label(x)[1] for x in b.buttons] == lengths[900:1000].tolist()
    b.close()


def test_clicking_a_button_selects_its_slot(browser, raw):
    browser.show_page(128)
    button = browser.buttons[5]
    button.click()
    assert browser.selected == 133
    assert browser.chain_frame["entry"].tolist() == walk(raw, 133)
    assert button.layout.border                                    # the selected button is marked


def test_jump_to_the_longest_chain(browser, raw):
    lengths = [len(walk(raw, s)) for s in range(SLOTS)]
    browser.show_page(0)
    browser.longest_button.click()
    assert browser.selected == int(np.argmax(lengths))
    assert len(browser.chain_frame) == max(lengths)
    assert any(label(b)[0] == browser.selected for b in browser.buttons)
    # the sample's hot key: one hash repeated on most of the chain
    assert browser.hash_counts.iloc[0] > max(lengths) // 2


def test_a_hash_collision_is_one_hash_shared_by_two_keys(tmp_path):
    p = tmp_path / "20240610061320000"
    build_index_file(p, ["T#Aa", "T#BB", "T#x", "T#Aa"], [0, 100, 200, 300], [1000, 2000, 3000, 4000],
                     hash_slot_num=4, index_num=8)
    with IndexFile.open(p, 4, 8) as f:
        b = SlotBrowser(f, page=4)
        slot = int(f.entries[1]["key_hash"]) % 4
        b.select(slot)
        assert b.chain_frame["entry"].tolist() == [4, 2, 1]
        assert b.hash_counts.tolist() == [3]                      # Aa, BB, Aa: one stored hash
        assert "1 distinct hash" in b.info_html.value
        b.close()
        assert f.header.index_count == 5                           # a file handed in stays open
        empty = next(s for s in range(4) if f.slots[s] == 0)
        assert b.select(empty).empty and "empty" in b.info_html.value


def test_bad_arguments(sample_file):
    with pytest.raises(ValueError, match="page"):
        SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES, page=0)
    with pytest.raises(ValueError, match="start"):
        SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES, start=SLOTS)
    b = SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES, start=200)
    assert b.start == 192                                          # rounded down to a page
    with pytest.raises(ValueError, match="slot"):
        b.select(-1)
    b.close()
    with pytest.raises(GeometryError, match="hash_slot_num"):          # a 1024-slot file is not default-sized
        SlotBrowser(sample_file)


def test_shows_the_occupancy_image_as_a_widget(browser):
    assert browser.occupancy_image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "rmqlab-slot-browser" in browser.widget._dom_classes
    assert "application/vnd.jupyter.widget-view+json" in browser._repr_mimebundle_()


def test_docstring_examples():
    import doctest

    import rmqlab.viz.slotbrowser

    result = doctest.testmod(rmqlab.viz.slotbrowser)
    assert result.attempted and not result.failed


def test_the_page_buttons_stop_at_the_ends_and_say_where_they_are(sample_file):
    b = SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES, page=256)
    assert b.prev_button.disabled and not b.next_button.disabled and "the first page" in b.page_html.value
    b.show_page(512)
    assert not b.prev_button.disabled and not b.next_button.disabled and "page 3 of 4" in b.page_html.value
    b.show_page(SLOTS - 1)
    assert b.next_button.disabled and not b.prev_button.disabled and "the last page" in b.page_html.value
    b.close()


def test_the_grid_wraps_to_the_page_with_room_for_the_widest_label(sample_file, tmp_path):
    b = SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES)
    columns = b.grid.layout.grid_template_columns
    assert columns.startswith("repeat(auto-fill, minmax(") and columns.endswith("em, 1fr))")
    widest = max(len(x.description) for x in b.buttons)
    assert float(columns.split("minmax(")[1].split("em")[0]) >= 0.6 * widest + 1      # a digit is ~0.6 em
    assert all(x.layout.width == "100%" for x in b.buttons)
    b.close()


def test_a_browser_whose_file_is_closed_says_so_and_stops(sample_file, raw):
    b = SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES)
    b.close()
    assert b.closed and "is closed" in b.status_html.value and sample_file.name in b.status_html.value
    assert all(c.disabled for c in (b.prev_button, b.next_button, b.longest_button, b.page_slider, *b.buttons))
    before = b.chain_html.value
    b.buttons[3]._click_handlers(b.buttons[3])         # a click that reaches the kernel anyway
    assert b.selected is None and b.chain_html.value == before
    with pytest.raises(ValueError, match="closed"):
        b.select(3)
    # a file handed in and closed by its owner: the browser notices at the next click
    with IndexFile.open(sample_file, SLOTS, ENTRIES) as f:
        handed = SlotBrowser(f, page=8)
    handed.buttons[1]._click_handlers(handed.buttons[1])
    assert handed.closed and "is closed" in handed.status_html.value and handed.selected is None


def test_buttons_take_the_colours_of_the_occupancy_image(sample_file):
    from matplotlib.colors import to_hex

    from rmqlab.viz.figures import slot_occupancy_image

    b = SlotBrowser(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES, page=1024)
    im = slot_occupancy_image(sample_file, hash_slot_num=SLOTS, index_num=ENTRIES, downsample=False).axes[0].images[0]
    grid = im.get_array()
    for slot, button in enumerate(b.buttons):
        length = label(button)[1]
        assert grid[slot // grid.shape[1], slot % grid.shape[1]] == length
        assert button.style.button_color == to_hex(im.cmap(im.norm(length)))
    hot = [x for x in b.buttons if x.style.button_color == "#d62728"]
    assert len(hot) == 21 and min(label(x)[1] for x in hot) > 19      # red: past the uniform-hash limit
    b.close()
