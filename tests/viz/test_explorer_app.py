"""The query explorer app on the user's own store (``ExplorerApp``: what ``make app`` serves): the
store from the page address's ``store`` parameter, from the path field, or the sample store; a
path that is not a store is said in the app and the explorer shown stays. The real 4.2.0 store's
facts come from its README beside the repository (179 messages, one topic)."""
from __future__ import annotations

from urllib.parse import urlencode

from rmqlab.lab.sample import sample_store
from rmqlab.viz.explorer import ExplorerApp, store_from_query_string
from tests.support.oracles import require_real_data

REAL_420 = "rocketmq/store-ericpangopher-4.2.0"


def test_the_sample_store_opens_without_a_store_given():
    app = ExplorerApp(topic="Orders", key="USER_20")
    assert app.explorer is not None and app.error_html.value == ""
    assert app.explorer.store.root == sample_store().root
    assert (app.explorer.topic_picker.value, app.explorer.key_box.value) == ("Orders", "USER_20")
    assert app.widget.children[-1].children == (app.explorer.widget,)


def test_the_address_names_the_store_and_the_app_shows_its_messages():
    root = require_real_data(REAL_420)
    query = urlencode({"token": "t0k3n", "store": str(root)})
    assert store_from_query_string(query) == str(root)
    app = ExplorerApp(None, query_string=query, topic="Orders", key="USER_20")   # options of the sample store
    assert app.error_html.value == "", app.error_html.value
    assert app.path_box.value == str(root) and app.explorer.store.root == root
    assert len(app.explorer.messages) == 179                                  # the README's count
    assert app.explorer.topic_picker.value == app.explorer.messages["topic"].value_counts().index[0]


def test_a_path_that_is_not_a_store_is_said_and_the_explorer_stays(tmp_path):
    app = ExplorerApp()
    shown = app.explorer
    assert not app.open(tmp_path / "nowhere")
    assert "no such folder" in app.error_html.value and app.explorer is shown
    (tmp_path / "empty").mkdir()
    app.path_box.value = str(tmp_path / "empty")                              # typing a path opens it
    assert "not a store folder: it holds neither commitlog/ nor index/" in app.error_html.value
    assert app.explorer is shown
    assert app.widget.children[-1].children == (shown.widget,)


def test_the_field_opens_a_store_and_empty_is_the_sample_store():
    root = require_real_data(REAL_420)
    app = ExplorerApp()
    app.path_box.value = str(root)
    assert app.error_html.value == "" and app.explorer.store.root == root
    assert app.open("")
    assert app.explorer.store.root == sample_store().root and app.error_html.value == ""
