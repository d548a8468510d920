"""QueryExplorer on the sample store: every control gives what Store.explain_key gives.

Independent truth: Store.explain_key called with the same arguments, the single index file's
own select_phy_offsets, pandas counts over the CommitLog's messages, the Java hash of
tests/support/reference_model.py, and the sample store's known facts (colliding ORDER_Aa<i> /
ORDER_BB<i> keys, the broker clock stepping back).
"""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal
from reference_model import stored_hash

from rmqlab.errors import InputError
from rmqlab.formats.indexfile import IndexFile
from rmqlab.lab.sample import SAMPLE_STORE_OPTIONS, sample_store
from rmqlab.viz.explorer import ALL_FILES, QueryExplorer


@pytest.fixture(scope="module")
def store():
    return sample_store()


@pytest.fixture(scope="module")
def messages(store):
    return store.messages()


@pytest.fixture(scope="module")
def explorer(store):
    """Without the walk diagram (the slow part of a refresh); test_walk_image_* turns it on."""
    return QueryExplorer(store, topic="Payments", key="USER_7", walk=False)


class Cells(HTMLParser):
    """Rows of td/th texts of the first table in an HTML string."""

    def __init__(self, text):
        super().__init__()
        self.rows, self._cell = [], None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def shown_offsets(x: QueryExplorer) -> list[int]:
    header, *rows = Cells(x.results_html.value).rows
    col = header.index("phy_offset")
    return [int(r[col].replace(",", "")) for r in rows]


def assert_same_query(x: QueryExplorer, expected):
    got = x.result
    assert x.last_error is None, x.last_error
    assert (got.topic, got.key, got.begin, got.end, got.max_num) == \
        (expected.topic, expected.key, expected.begin, expected.end, expected.max_num)
    assert_frame_equal(got.broker, expected.broker)
    assert_frame_equal(got.verified, expected.verified)
    assert_frame_equal(got.diff, expected.diff)
    assert got.summary() == expected.summary()
    mode = x.mode_buttons.value
    frame = expected.broker if mode == "broker" else expected.verified
    # broker mode: queryMessage's order, the index walk's offsets sorted
    want = [int(p) for p in (sorted(expected.trace.result.phy_offsets) if mode == "broker"
                             else frame["phy_offset"])]
    assert shown_offsets(x) == want[:100]
    assert f"{len(frame)} rows · {mode}" in x.results_html.value
    assert f'data-rows="{len(frame)}"' in x.results_html.value
    s = expected.summary()
    assert f"data-broker='{s['broker']}'" in x.summary_html.value
    assert f"data-verified='{s['verified']}'" in x.summary_html.value


def test_every_control_gives_what_explain_key_gives(explorer, store):
    x = explorer
    origin = x.origin
    assert_same_query(x, store.explain_key("Payments", "USER_7", begin=x.begin, end=x.end, max_num=64))

    x.key_box.value = "USER_3"
    assert_same_query(x, store.explain_key("Payments", "USER_3", begin=x.begin, end=x.end, max_num=64))

    x.max_num_box.value = 5
    assert_same_query(x, store.explain_key("Payments", "USER_3", begin=x.begin, end=x.end, max_num=5))
    assert len(x.result.broker) == 5

    x.time_slider.value = (12_345, 30_001)
    assert (x.begin, x.end) == (origin + 12_345, origin + 30_001)
    assert_same_query(x, store.explain_key("Payments", "USER_3", begin=origin + 12_345, end=origin + 30_001,
                                           max_num=5))

    x.mode_buttons.value = "verified"
    assert_same_query(x, store.explain_key("Payments", "USER_3", begin=origin + 12_345, end=origin + 30_001,
                                           max_num=5))
    assert len(x.result.verified) > 5          # the truth is longer than the broker's capped answer

    x.topic_picker.value = "Inventory"
    assert_same_query(x, store.explain_key("Inventory", "USER_3", begin=origin + 12_345, end=origin + 30_001,
                                           max_num=5))
    assert x.key_box.options[0] == "USER_1"    # the new topic's suggestions

    with x.hold():                             # back to the start, with one refresh
        x.topic_picker.value = "Payments"
        x.key_box.value = "USER_7"
        x.max_num_box.value = 64
        x.mode_buttons.value = "broker"
        x.time_slider.value = (0, x.time_slider.max)


def test_walk_image_changes_with_the_key(explorer):
    x = explorer
    with x.hold():
        x.topic_picker.value = "Orders"
        x.key_box.value = "ORDER_Aa3"
    assert x.walk_image.value == b""
    x.walk_toggle.value = True                 # drawn without running the query again
    first_walk, first_timeline = x.walk_image.value, x.timeline_image.value
    assert first_walk[:8] == b"\x89PNG\r\n\x1a\n"
    x.key_box.value = "ORDER_Aa4"
    assert x.walk_image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert x.walk_image.value != first_walk
    assert x.timeline_image.value != first_timeline
    assert "Orders#ORDER_Aa4" in x.trace_html.value
    x.walk_toggle.value = False
    assert x.walk_image.value == b""


def test_time_slider_is_milliseconds_after_the_first_message(explorer, store, messages):
    x = explorer
    first = int(messages["store_timestamp"].min())
    assert x.origin == first == store.info()["first_store_timestamp"]
    assert x.time_slider.max == int(messages["store_timestamp"].max()) - first
    x.time_slider.value = (1, 2_500)
    assert (x.begin, x.end) == (first + 1, first + 2_500)
    assert (x.result.begin, x.result.end) == (first + 1, first + 2_500)
    # the label names the absolute times: epoch ms with their clock time
    assert f"{first + 1} (06:13:20.006 UTC)" in x.time_label.value
    assert f"{first + 2_500} (06:13:22.505 UTC)" in x.time_label.value
    # the readout beside the slider: both values in full (the slider's own readout cuts them)
    assert not x.time_slider.readout
    assert "data-lo='1' data-hi='2500'" in x.time_readout.value and "1 – 2,500 ms" in x.time_readout.value
    x.time_slider.value = (0, x.time_slider.max)


def real_messages_of(messages, topic, key):
    """Messages of topic whose KEYS tokens or UNIQ_KEY hold `key`, by pandas alone."""
    m = messages[(messages["topic"] == topic) & ((messages["sys_flag"] & 0xC) != 0xC)]
    tokens = m["keys"].fillna("").str.split(" ")
    has = tokens.map(lambda t: key in t) | (m["uniq_key"] == key)
    return m[has]


def test_a_mid_second_begin_shows_the_second_granularity_miss(explorer, store, messages):
    """Brute force: a begin set to a message's own store time, which is not on a whole second
    after its file's begin: the index says an earlier time, the broker judges it outside."""
    x = explorer
    origin, last = x.origin, int(messages["store_timestamp"].max())
    found = None
    for key in ["USER_40", "USER_60", "USER_80", "USER_120"]:
        mine = real_messages_of(messages, "Payments", key).sort_values("store_timestamp", ascending=False)
        for ts in mine["store_timestamp"].head(25):
            kq = store.explain_key("Payments", key, begin=int(ts), end=last)
            if kq.summary()["missed-time"]:
                found = key, int(ts), kq
                break
        if found:
            break
    assert found, "no mid-second miss found: the sample store changed?"
    key, ts, expected = found
    with x.hold():
        x.topic_picker.value = "Payments"
        x.key_box.value = key
        x.time_slider.value = (ts - origin, last - origin)
    assert_same_query(x, expected)
    # the truth by pandas: a real message inside [begin, end] that the broker did not return
    inside = real_messages_of(messages, "Payments", key)
    inside = inside[inside["store_timestamp"].between(x.begin, x.end)]
    missed = set(inside["phy_offset"]) - set(x.result.trace.result.phy_offsets)
    assert missed
    n = expected.summary()["missed-time"]
    assert re.search(rf"class='rmqlab-reason-missed-time' data-count='{n}'", x.summary_html.value)
    assert "missed-time" in x.trace_html.value
    x.time_slider.value = (0, x.time_slider.max)


def test_suggestions_hold_the_hottest_and_a_colliding_key(explorer, messages):
    x = explorer
    x.topic_picker.value = "Orders"
    orders = messages[messages["topic"] == "Orders"]
    tokens = orders["keys"].str.split(" ").explode()
    hottest = tokens[tokens.notna() & (tokens != "")].value_counts().index[0]
    options = list(x.key_box.options)
    assert options[0] == hottest
    every_key = set(tokens.dropna()) | set(orders["uniq_key"])
    by_hash = {}
    for k in every_key:
        by_hash.setdefault(stored_hash(f"Orders#{k}"), set()).add(k)
    colliding = [k for k in options if len(by_hash.get(stored_hash(f"Orders#{k}"), ())) > 1]
    assert colliding and any(k.startswith("ORDER_Aa") for k in colliding)


def test_an_unknown_key_is_an_empty_answer_not_an_error(explorer):
    x = explorer
    x.key_box.value = "NO_SUCH_KEY_ANYWHERE"
    assert x.last_error is None and x.result is not None
    assert x.result.broker.empty and x.result.verified.empty
    assert "0 rows · " in x.results_html.value


def test_bad_key_text_is_a_message_in_the_widget(explorer):
    x = explorer
    x.key_box.value = "two words"
    assert x.result is None and "space" in x.last_error
    assert "space" in x.status_html.value and x.results_html.value == ""
    x.key_box.value = "   "
    assert x.result is None and "key" in x.last_error.lower()
    x.key_box.value = "USER_7"
    assert x.last_error is None and x.status_html.value == ""


def test_one_index_file_walks_only_that_file(explorer, store):
    x = explorer
    name = x.file_picker.options[4][1]
    with x.hold():
        x.topic_picker.value = "Orders"
        x.key_box.value = "USER_1"
        x.max_num_box.value = 64
        x.file_picker.value = name
    path = store.index_dir / name
    with IndexFile.open(path, SAMPLE_STORE_OPTIONS["hash_slot_num"], SAMPLE_STORE_OPTIONS["index_num"]) as f:
        want = f.select_phy_offsets("Orders#USER_1", 64, x.begin, x.end)
    assert want and x.result.trace.result.phy_offsets == want
    assert [v.name for v in x.result.trace.files] == [name]
    assert shown_offsets(x) == sorted(want)     # queryMessage sorts what the walk found
    # verified rows are real USER_1 messages among that file's candidates only
    assert set(x.result.verified["phy_offset"]) <= set(x.result.diff["phy_offset"])
    x.file_picker.value = ALL_FILES
    assert len(x.result.trace.files) == len(x.file_picker.options) - 1


def test_bad_store_paths_raise_clear_errors(tmp_path):
    with pytest.raises(InputError, match="missing: no such folder"):
        QueryExplorer(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputError, match="plain: not a store folder"):
        QueryExplorer(tmp_path / "plain")
    with pytest.raises(TypeError, match="store"):
        QueryExplorer(42)
    with pytest.raises(ValueError, match="max_num"):
        QueryExplorer(sample_store(), max_num=65)


def test_an_empty_store_is_a_message_not_a_traceback(tmp_path):
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "index").mkdir()
    x = QueryExplorer(tmp_path, key="k")
    assert x.result is None and "no messages" in x.last_error
    assert "no messages" in x.status_html.value


def test_widget_parts_have_their_css_classes(explorer):
    x = explorer
    classes = {c for w in _walk(x.widget) for c in w._dom_classes}
    for c in ["rmqlab-query-explorer", "rmqlab-time-slider", "rmqlab-key", "rmqlab-topic", "rmqlab-mode",
              "rmqlab-max-num", "rmqlab-results", "rmqlab-summary", "rmqlab-trace", "rmqlab-walk",
              "rmqlab-timeline"]:
        assert c in classes
    assert "application/vnd.jupyter.widget-view+json" in x._repr_mimebundle_()


def _walk(w):
    yield w
    for child in getattr(w, "children", ()):
        yield from _walk(child)


def test_docstring_examples():
    import doctest

    import rmqlab.viz.explorer

    result = doctest.testmod(rmqlab.viz.explorer)
    assert result.attempted and not result.failed


def test_the_rows_put_the_reason_first_and_keep_to_one_line(explorer, store):
    """The results table: the row's place, then its reason, then offset, time (epoch ms with the
    clock), topic and KEYS shortened to one line; the full KEYS, UNIQ_KEY and the reason's
    detail are in tooltips."""
    x = explorer
    with x.hold():
        x.topic_picker.value = "Orders"
        x.key_box.value = "ORDER_Aa0"
        x.time_slider.value = (0, x.time_slider.max)
    header, *rows = Cells(x.results_html.value).rows
    assert header == ["rank", "reason", "phy_offset", "store_timestamp", "topic", "keys"]
    expected = store.explain_key("Orders", "ORDER_Aa0", begin=x.begin, end=x.end)
    broker = expected.broker
    reason_of = dict(zip(expected.diff["phy_offset"], expected.diff["reason"]))
    for row, (_, m) in zip(rows, broker.iterrows()):
        assert row[1] == reason_of[m["phy_offset"]]
        assert row[2] == f"{m['phy_offset']:,}"
        clock = pd.Timestamp(m["store_timestamp"], unit="ms").strftime("%H:%M:%S.%f")[:-3]
        assert row[3] == f"{m['store_timestamp']} ({clock} UTC)"
        assert len(row[5]) <= 24 and (row[5] == m["keys"] or row[5].endswith("…"))
    assert {r[1] for r in rows} == {"ok", "collision"}
    text = x.results_html.value
    assert "white-space:nowrap" in text and "overflow-x:auto" in text
    collision = broker[broker["phy_offset"].map(reason_of) == "collision"].iloc[0]
    assert f'title="KEYS {collision["keys"]} · UNIQ_KEY {collision["uniq_key"]}"' in text
    assert "title=\"collision: returned by the broker, but the message&#x27;s topic#key only shares" in text
    # the walk over the files: a table, each file's header times in epoch ms with the clock
    walk_rows = Cells(x.trace_html.value).rows
    assert walk_rows[0][:3] == ["name", "begin_timestamp", "end_timestamp"]
    files = expected.trace.to_frame()
    assert [r[0] for r in walk_rows[1:]] == files["name"].tolist()
    first = files.iloc[-1]["begin_timestamp"]
    assert walk_rows[-1][1] == f"{first} ({pd.Timestamp(first, unit='ms').strftime('%H:%M:%S.%f')[:-3]} UTC)"
    x.mode_buttons.value = "verified"
    assert Cells(x.results_html.value).rows[0][:2] == ["returned", "reason"]
    x.mode_buttons.value = "broker"


def test_the_timeline_draws_collisions_apart_with_a_legend_and_readable_text(explorer, store):
    import io

    import matplotlib.image as mpimg
    from matplotlib.colors import to_hex

    from rmqlab.analysis.keys import key_occurrences, key_timeline
    from rmqlab.viz.explorer import key_timeline_figure

    q = store.explain_key("Orders", "ORDER_Aa0")
    with store.index() as idx:
        t = key_timeline(q, key_occurrences(store.messages()), idx.files)
    fig = key_timeline_figure(t, origin=explorer.origin)
    ax = fig.axes[0]
    messages, ticks = ax.collections[-2], ax.collections[-1]
    tick_colours = [to_hex(c) for c in ticks.get_facecolors()]
    kinds = t.entries["kind"].tolist()
    assert len(tick_colours) == len(kinds)
    collision = {c for c, k in zip(tick_colours, kinds) if k == "collision"}
    returned = {c for c, k in zip(tick_colours, kinds) if k == "returned"}
    assert len(collision) == len(returned) == 1 and collision != returned       # purple, not green
    assert {to_hex(c) for c in messages.get_facecolors()} == returned             # messages returned: green
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert "collision (another key, same hash)" in labels and "entry returned" in labels
    # text at least 10 px where the widget shows the figure (80 dpi, at its size)
    sizes = [ax.xaxis.label.get_fontsize()] + [lab.get_fontsize() for lab in ax.get_yticklabels()] \
        + [lab.get_fontsize() for lab in fig.legends[0].get_texts()]
    assert min(sizes) * 80 / 72 >= 10
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=80)
    # wider than the old 640 px strip, yet shown unscaled in a Voilà page 800 px wide
    assert 720 <= mpimg.imread(io.BytesIO(png.getvalue())).shape[1] <= 780


def test_the_walk_diagram_keeps_its_size_in_a_box_of_its_own(store):
    """The walk diagram is rendered so that its smallest text is 10 px and shown at that size:
    the box around it scrolls, the image is never shrunk to the page."""
    import struct

    from rmqlab.viz.walk import READABLE_DPI

    x = QueryExplorer(store, topic="Orders", key="ORDER_Aa0", walk=True)
    assert READABLE_DPI * 6.8 / 72 >= 10
    png = x.walk_image.value
    width = struct.unpack(">I", png[16:20])[0]
    assert x.walk_image.layout.max_width == "none" and width > 1000
    box = x.walk_box
    assert box.children == (x.walk_image,) and box.layout.overflow == "auto"
    assert "rmqlab-walk-box" in box._dom_classes
