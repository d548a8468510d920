"""The widgets in a real browser: JupyterLab running notebooks 04 and 05, and the Voilà app.

Playwright drives the system Chromium (/usr/bin/chromium; `playwright install` is never used).
The servers run on 127.0.0.1 with a random token, on copies of the notebooks in a temporary
folder (a run never writes into the repository), and are stopped by their PID. Every number read
from the page is checked against the package computing the same query in this process.

Screenshots go to build/test-artifacts/ (git ignores build/): look at them when a test fails.
Cost: about 2-3 min for the file (JupyterLab start, Run All of notebook 04 once and of 05 twice,
Voilà twice); skipped, saying why, without Chromium or Playwright.
"""
from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from browser_support import (
    ARTIFACTS,
    ROOT,
    jupyterlab,
    launch,
    overflowing_outputs,
    point_at_kernel,
    require_chromium,
    run_progress,
    server,
    shut_down_kernels,
)
from browser_support import free_port as _free_port
from browser_support import isolated_env as _isolated_env
from browser_support import kernel_name as _kernel_name
from browser_support import run_all as run_notebook
from browser_support import tail as _tail
from oracles import require_module

pytestmark = pytest.mark.browser

NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK = "05-time-range-query-explorer.ipynb"
SLOTS_NOTEBOOK = "04-slot-occupancy-and-chains.ipynb"
APP = "apps/query-explorer.ipynb"
# JupyterLab's default layout at a common laptop width: the file browser open beside the notebook
LAPTOP = {"width": 1280, "height": 1000}
# Voilà in a narrow window (half a screen)
NARROW = {"width": 800, "height": 1000}
# A tall window: the explorer's controls, timeline, summary and first rows fit in one screenshot.
VIEWPORT = {"width": 1400, "height": 2000}
SERVER_START_S = 60
NOTEBOOK_RUN_S = 120       # Run All of notebook 05: about 15-25 s here
UPDATE_S = 30              # one explorer refresh: about 1-3 s
# A key whose hash another key of the sample shares: the broker returns both keys' messages.
COLLIDING_KEY = "ORDER_Aa0"
EXPLORER = ".rmqlab-query-explorer"
CAPTION = ".rmqlab-results caption"
CAPTION_FORMAT = re.compile(r"^(\d+) rows · (broker|verified)$")

sync_api = require_chromium()
require_module("jupyterlab")
require_module("voila")


# ------------------------------------------------------------------------------ servers


def _copy_notebooks(target: Path) -> Path:
    """notebooks/ copied to `target`, every notebook pointed at the kernel this machine has."""
    shutil.copytree(NOTEBOOKS, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    point_at_kernel(target, _kernel_name())
    return target


@contextmanager
def _server(argv: list[str], ready_url: str, env: dict[str, str], log_path: Path,
            cwd: Path) -> Iterator[subprocess.Popen]:
    """:func:`browser_support.server` with this file's start-up timeout."""
    with server(argv, ready_url, env, log_path, cwd, start_timeout=SERVER_START_S) as proc:
        yield proc


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = launch(pw)
        yield b
        b.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1 serving a copy of notebooks/: yields (base URL, token, log path)."""
    home = tmp_path_factory.mktemp("lab-home")
    root = _copy_notebooks(tmp_path_factory.mktemp("lab-root") / "notebooks")
    # no "Jupyter news" toast over the notebook, every cell kept in the page (browser_support)
    with jupyterlab(root, home, start_timeout=SERVER_START_S) as (base, token, log):
        yield base, token, log


@pytest.fixture(scope="module")
def sample():
    from rmqlab.lab.sample import sample_store

    store = sample_store()
    return store, int(store.messages()["store_timestamp"].min())


# ------------------------------------------------------------------------------ the page


class ExplorerPage:
    """The explorer widget as a browser shows it: reads its controls and results, moves them."""

    def __init__(self, page, root: str = EXPLORER):
        self.page = page
        self.root = page.locator(root).first

    def caption(self) -> str:
        return self.root.locator(CAPTION).inner_text().strip()

    def rows(self) -> int:
        m = CAPTION_FORMAT.match(self.caption())
        assert m, f"unexpected results caption {self.caption()!r}"
        return int(m.group(1))

    def walk_src(self) -> str:
        return self.root.locator("img.rmqlab-walk").get_attribute("src") or ""

    def topic(self) -> str:
        return self.root.locator(".rmqlab-topic select").input_value()

    def key(self) -> str:
        return self.root.locator(".rmqlab-key input").input_value()

    def max_num(self) -> int:
        return int(self.root.locator(".rmqlab-max-num input").input_value())

    def window(self) -> tuple[int, int]:
        """The time slider's values (ms after the store's first message), from its readout."""
        text = self.root.locator(".rmqlab-time-readout").inner_text()
        numbers = re.findall(r"-?\d+", text.replace(",", ""))
        assert len(numbers) == 2, f"unexpected slider readout {text!r}"
        return int(numbers[0]), int(numbers[1])

    def collisions(self) -> int:
        return int(self.root.locator(".rmqlab-summary .rmqlab-reason-collision").get_attribute("data-count"))

    def status(self) -> str:
        """The explorer's message line: empty, or why it shows no result."""
        return self.root.locator(".rmqlab-status").inner_text().strip()

    def wait_until_settled(self, previous_caption: str | None = None, previous_walk: str | None = None) -> None:
        """Wait until the explorer shows a results table and a walk diagram, both different from
        the given ones (when given). The explorer redraws the diagram before the table, so a new
        caption means a finished refresh."""
        try:
            self._wait_for_results(previous_caption, previous_walk)
        except sync_api.TimeoutError:
            raise AssertionError(f"the explorer did not show new results within {UPDATE_S} s "
                                 f"(its message line: {self.status()!r})") from None

    def _wait_for_results(self, previous_caption: str | None, previous_walk: str | None) -> None:
        self.page.wait_for_function(
            """([root, caption, walk]) => {
                const el = document.querySelector(root);
                if (!el) return false;
                const cap = el.querySelector('.rmqlab-results caption');
                const img = el.querySelector('img.rmqlab-walk');
                if (!cap || !img || !img.getAttribute('src')) return false;
                if (caption !== null && cap.textContent.trim() === caption) return false;
                if (walk !== null && img.getAttribute('src') === walk) return false;
                return true;
            }""",
            arg=[EXPLORER, previous_caption, previous_walk], timeout=UPDATE_S * 1000)

    def drag_lower_handle(self, fraction: float) -> None:
        """Drag the time slider's lower handle to `fraction` of the track (a real mouse drag:
        the slider sends its value when the button is released)."""
        self.root.locator(".rmqlab-time-slider").scroll_into_view_if_needed()
        track = self.root.locator(".rmqlab-time-slider .noUi-target").bounding_box()
        handle = self.root.locator(".rmqlab-time-slider .noUi-handle-lower").bounding_box()
        assert track and handle, "time slider not rendered"
        y = handle["y"] + handle["height"] / 2
        self.page.mouse.move(handle["x"] + handle["width"] / 2, y)
        self.page.mouse.down()
        target = track["x"] + track["width"] * fraction
        self.page.mouse.move(target, y, steps=12)
        self.page.mouse.up()

    def screenshot(self, path: Path) -> None:
        """The page with the explorer's top at the top of the window (controls, timeline, summary
        and the first result rows), and its walk diagram alone in `path` with "-walk" added."""
        self.root.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.screenshot(path=path)
        self.root.locator("img.rmqlab-walk").screenshot(path=path.with_name(f"{path.stem}-walk.png"))

    def type_key(self, key: str) -> None:
        box = self.root.locator(".rmqlab-key input")
        box.fill(key)
        box.press("Enter")


def expected_broker_rows(sample, topic: str, key: str, window: tuple[int, int], max_num: int) -> int:
    """What the broker returns for the query the explorer's controls describe, computed here."""
    store, origin = sample
    return len(store.query_by_key(topic, key, begin=origin + window[0], end=origin + window[1],
                                  max_num=max_num, mode="broker"))


def _box(locator) -> dict:
    """`locator`'s box on the page (x, y, width, height in CSS px); fails when not rendered."""
    box = locator.bounding_box()
    assert box, "not rendered"
    return box


#: True when the element is shown whole: its own text not cut (scrollWidth), inside every
#: ancestor box that clips or scrolls (as scrolled now), and inside the window.
_SHOWN_WHOLE = """el => {
    const r = el.getBoundingClientRect();
    if (el.scrollWidth > el.clientWidth + 1) return false;
    for (let a = el.parentElement; a; a = a.parentElement) {
        if (getComputedStyle(a).overflowX === 'visible') continue;
        const b = a.getBoundingClientRect();
        if (r.left < b.left - 1 || r.right > b.right + 1) return false;
    }
    return r.left >= 0 && r.right <= window.innerWidth + 1;
}"""


def shown_whole(locator) -> bool:
    return locator.evaluate(_SHOWN_WHOLE)


def _no_errors(page) -> None:
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    texts = [errors.nth(i).inner_text()[:2000] for i in range(errors.count())]
    assert not texts, "cells wrote errors or warnings:\n" + "\n---\n".join(texts)


# ------------------------------------------------------------------------------ tests


def run_all(page, lab, notebook: str, artifacts: Path, *, hide_files: bool) -> None:
    """Open `notebook` in JupyterLab (a fresh layout), run all its cells and wait until every
    one has run without an error. `hide_files` closes the file browser first (more room)."""
    base, token, log = lab
    shut_down_kernels(base, token)            # the kernels earlier tests left: this one starts alone
    try:
        run_notebook(page, base, token, notebook, timeout_s=NOTEBOOK_RUN_S, hide_files=hide_files,
                     open_timeout_s=SERVER_START_S)
    except sync_api.TimeoutError as err:
        page.screenshot(path=artifacts / f"jupyterlab-{notebook[:2]}-run-all-failed.png")
        _no_errors(page)
        raise AssertionError(f"Run All did not finish within {NOTEBOOK_RUN_S} s: {err.message}\n"
                             f"{_tail(log)}") from err
    _no_errors(page)


def explorer_after_run_all(page, lab, artifacts: Path, *, hide_files: bool) -> ExplorerPage:
    """Notebook 05 run in JupyterLab, its explorer in view and showing its first answer."""
    run_all(page, lab, NOTEBOOK, artifacts, hide_files=hide_files)
    explorer = ExplorerPage(page)
    explorer.root.scroll_into_view_if_needed()
    explorer.wait_until_settled()
    return explorer


def test_notebook_05_explorer_in_jupyterlab(lab, browser, sample, artifacts):
    page = browser.new_page(viewport=VIEWPORT)
    try:
        explorer = explorer_after_run_all(page, lab, artifacts, hide_files=True)
        assert not overflowing_outputs(page), "outputs wider than the 1280 px page"
        topic, key, max_num = explorer.topic(), explorer.key(), explorer.max_num()
        window = explorer.window()
        assert (topic, key, max_num) == ("Orders", "USER_20", 64)       # the notebook's parameters
        before_rows, before_caption, before_walk = explorer.rows(), explorer.caption(), explorer.walk_src()
        assert before_rows == expected_broker_rows(sample, topic, key, window, max_num) > 0
        assert before_walk.startswith(("blob:", "data:image/png"))
        explorer.screenshot(artifacts / "jupyterlab-05-explorer-before.png")

        # Narrow the range: drag its start to 60 % of the store's time span.
        explorer.drag_lower_handle(0.6)
        explorer.wait_until_settled(before_caption, before_walk)
        moved = explorer.window()
        assert moved[0] > window[0] and moved[1] == window[1], (window, moved)
        slider_rows = explorer.rows()
        assert slider_rows == expected_broker_rows(sample, topic, key, moved, max_num)
        assert slider_rows < before_rows          # USER_20's messages are spread over the whole store
        explorer.screenshot(artifacts / "jupyterlab-05-explorer-after-slider.png")

        # Another key: one whose hash collides with ORDER_BB0's.
        slider_caption, slider_walk = explorer.caption(), explorer.walk_src()
        explorer.type_key(COLLIDING_KEY)
        explorer.wait_until_settled(slider_caption, slider_walk)
        assert explorer.key() == COLLIDING_KEY
        store, origin = sample
        truth = store.explain_key(topic, COLLIDING_KEY, begin=origin + moved[0], end=origin + moved[1])
        assert explorer.rows() == len(truth.broker)
        assert explorer.collisions() == truth.summary()["collision"] > 0
        assert COLLIDING_KEY in explorer.root.locator(".rmqlab-summary").inner_text()
        explorer.screenshot(artifacts / "jupyterlab-05-explorer-after-key.png")
    except Exception:
        page.screenshot(path=artifacts / "jupyterlab-05-failure.png", full_page=True)
        raise
    finally:
        page.close()


@contextmanager
def _voila_app(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """The query explorer app served by Voilà on 127.0.0.1, as `make app` serves it: yields
    (base URL, token, log path)."""
    root = _copy_notebooks(tmp_path / "notebooks")
    home = tmp_path / "home"
    port, token = _free_port(), secrets.token_hex(24)
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "voila", str(root / APP), "--no-browser", f"--port={port}",
            "--Voila.ip=127.0.0.1", f"--Voila.token={token}", f"--Voila.connection_dir_root={tmp_path}"]
    log = tmp_path / "voila.log"
    # Voilà has no status API; its static files answer once it serves.
    with _server(argv, f"{base}/voila/static/voila.js", _isolated_env(home), log, cwd=root):
        yield base, token, log


def _app_page(page, url: str) -> ExplorerPage:
    """The app at `url` (its token in it), once its explorer shows results."""
    page.goto(url, timeout=NOTEBOOK_RUN_S * 1000)
    page.wait_for_selector(f"{EXPLORER} {CAPTION}", timeout=NOTEBOOK_RUN_S * 1000)
    explorer = ExplorerPage(page)
    explorer.wait_until_settled()
    return explorer


def test_query_explorer_app_in_voila(browser, sample, artifacts, tmp_path):
    with _voila_app(tmp_path) as (base, token, log):
        page = browser.new_page(viewport=VIEWPORT)
        try:
            # as `make app` runs it: nothing without the token
            assert page.goto(f"{base}/", timeout=NOTEBOOK_RUN_S * 1000).url != f"{base}/"
            assert EXPLORER.strip(".") not in page.content()
            page.goto(f"{base}/?token={token}", timeout=NOTEBOOK_RUN_S * 1000)
            page.wait_for_selector(f"{EXPLORER} {CAPTION}", timeout=NOTEBOOK_RUN_S * 1000)
            explorer = ExplorerPage(page)
            explorer.wait_until_settled()
            # Voilà shows the widgets and the markdown, never the code.
            text = page.inner_text("body")
            assert "key query explorer" in text and "QueryExplorer(" not in text
            topic, window, max_num = explorer.topic(), explorer.window(), explorer.max_num()
            before_rows, before_caption, before_walk = explorer.rows(), explorer.caption(), explorer.walk_src()
            assert before_rows == expected_broker_rows(sample, topic, explorer.key(), window, max_num)
            explorer.screenshot(artifacts / "voila-query-explorer-before.png")

            explorer.type_key(COLLIDING_KEY)
            explorer.wait_until_settled(before_caption, before_walk)
            assert explorer.key() == COLLIDING_KEY
            assert explorer.rows() == expected_broker_rows(sample, topic, COLLIDING_KEY, window, max_num)
            assert explorer.collisions() > 0
            explorer.screenshot(artifacts / "voila-query-explorer-after-key.png")
        except Exception as e:
            page.screenshot(path=artifacts / "voila-failure.png", full_page=True)
            raise AssertionError(f"the Voilà app failed ({e}); server log:\n{_tail(log)}") from e
        finally:
            page.close()



def _slot_browser_after_run_all(browser, work: Path, artifacts: Path, chain: str, stack: ExitStack):
    """A page of notebook 04 after Run All with its slot browser's chain table shown, served by
    a JupyterLab of its own (kept open by `stack`). In two full test runs of a fresh clone the
    JupyterLab shared with the other tests left this notebook's SlotBrowser cell marked running
    with the kernel idle, or never showed its widget, with no error in any cell. Here too, now
    and then, on a fresh server: the saved notebook then holds no execution count and no output
    for that cell while the kernel ran it (the next cell has the next count), so the page never
    handled any of its messages. Until that is understood, a fresh server a try and up to three
    tries tell that flake of the page from a fault of the notebook, which fails them all; what
    each failed try saw is printed, and raised when all fail."""
    seen = []
    for attempt in (1, 2, 3):
        tries = ExitStack()
        home, root = work / f"home-{attempt}", work / f"root-{attempt}"
        lab = tries.enter_context(jupyterlab(_copy_notebooks(root), home, start_timeout=SERVER_START_S))
        page = browser.new_page(viewport=LAPTOP)
        tries.callback(page.close)
        try:
            run_all(page, lab, SLOTS_NOTEBOOK, artifacts, hide_files=False)
            page.locator(".rmqlab-slot-browser").first.locator(chain).wait_for(timeout=UPDATE_S * 1000)
            stack.push(tries.pop_all())
            return page
        except (AssertionError, sync_api.TimeoutError) as err:
            page.screenshot(path=artifacts / f"jupyterlab-04-attempt-{attempt}.png", full_page=True)
            cell = page.locator(".jp-CodeCell", has_text="SlotBrowser(path")
            output = cell.first.locator(".jp-OutputArea").inner_text()[:600] if cell.count() else "no such cell"
            seen.append(f"attempt {attempt}: {str(err).splitlines()[0]}; {run_progress(page)}; "
                        f"the slot browser cell's output: {output!r}")
            print(seen[-1])
            tries.close()
    raise AssertionError("notebook 04's slot browser did not appear after Run All:\n" + "\n".join(seen))


def test_notebook_04_slot_browser_answers_clicks_after_run_all(browser, artifacts, tmp_path):
    """After Run All, a click on a slot shows its chain (the notebook once closed the browser's
    file in a later cell, so every click was silently lost); the slot grid fits the page in
    JupyterLab's default layout at 1280 px, the selected longest slot's label is whole, and on
    the last page the next-page button is disabled."""
    from rmqlab.lab.sample import SAMPLE_STORE_OPTIONS, sample_store
    from rmqlab.viz.figures import slot_chain_lengths

    first_file = sorted(sample_store().index_dir.iterdir())[0]          # the notebook's FILE_NUMBER 0
    lengths = slot_chain_lengths(first_file, hash_slot_num=SAMPLE_STORE_OPTIONS["hash_slot_num"],
                                 index_num=SAMPLE_STORE_OPTIONS["index_num"])
    longest = int(lengths.argmax())
    chain = ".rmqlab-chain-table table"
    stack = ExitStack()
    page = _slot_browser_after_run_all(browser, tmp_path, artifacts, chain, stack)
    try:
        root = page.locator(".rmqlab-slot-browser").first
        assert not overflowing_outputs(page), "outputs wider than the 1280 px page"
        assert root.locator(chain).get_attribute("data-slot") == str(longest)   # the cell's jump_to_longest
        grid = root.locator(".rmqlab-slot-grid")
        # the grid's 64 button views come after the chain table's, each from its own widget model:
        # with the broker tests beside it on two cores, a CI run once waited over 30 s for them
        grid.wait_for(state="attached", timeout=4 * UPDATE_S * 1000)
        grid.scroll_into_view_if_needed()
        page.screenshot(path=artifacts / "jupyterlab-04-slot-browser.png")

        # the grid fits: no button past the browser's right edge, and every label whole
        right = _box(root)["x"] + _box(root)["width"]
        buttons = root.locator(".rmqlab-slot-button")
        assert buttons.count() == 64
        assert grid.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
        for i in range(buttons.count()):
            b = buttons.nth(i)
            assert _box(b)["x"] + _box(b)["width"] <= right + 1, b.inner_text()
            assert shown_whole(b), f"button cut: {b.inner_text()!r}"
        selected = root.locator(f".rmqlab-slot-{longest}")
        assert selected.inner_text().strip() == f"{longest} · {lengths[longest]}"

        # a click after Run All: another slot of the page, and its chain as the file holds it
        target = buttons.first
        slot = int(re.search(r"rmqlab-slot-(\d+)", target.get_attribute("class")).group(1))
        assert slot != longest
        target.click()
        page.wait_for_selector(f".rmqlab-slot-browser {chain}[data-slot='{slot}']", timeout=UPDATE_S * 1000)
        assert int(root.locator(chain).get_attribute("data-rows")) == lengths[slot]
        assert f"slot {slot}" in root.locator(".rmqlab-slot-info").inner_text()
        assert root.locator(".rmqlab-browser-status").inner_text().strip() == ""      # not closed

        # the last page: no page after it, and the button says so by being disabled
        assert "the last page" in root.locator(".rmqlab-page-info").inner_text()
        assert root.locator(".rmqlab-next-page").is_disabled()
        assert not root.locator(".rmqlab-prev-page").is_disabled()
    except Exception:
        page.screenshot(path=artifacts / "jupyterlab-04-failure.png", full_page=True)
        raise
    finally:
        stack.close()


def test_notebook_05_reason_column_in_view_at_1280_px(lab, browser, artifacts):
    """In JupyterLab's default layout at 1280 px (file browser open), the explorer's rows show
    their reason without any sideways scrolling, and each row is one line."""
    page = browser.new_page(viewport=LAPTOP)
    try:
        explorer = explorer_after_run_all(page, lab, artifacts, hide_files=False)
        table = explorer.root.locator(".rmqlab-results table")
        table.scroll_into_view_if_needed()
        page.screenshot(path=artifacts / "jupyterlab-05-rows-at-1280.png")
        output = page.locator(".jp-OutputArea-output", has=explorer.root).first
        visible_right = min(_box(output)["x"] + _box(output)["width"], _box(explorer.root)["x"]
                            + _box(explorer.root)["width"], LAPTOP["width"])
        headers = [h.strip() for h in table.locator("thead th").all_inner_texts()]
        reason = table.locator("thead th").nth(headers.index("reason"))
        cells = table.locator(f"tbody tr td:nth-child({headers.index('reason') + 1})")
        assert cells.count() == explorer.rows() > 0
        for el in [reason] + [cells.nth(i) for i in range(cells.count())]:
            box = _box(el)
            assert box["x"] >= _box(output)["x"] and box["x"] + box["width"] <= visible_right + 1, \
                f"reason at x {box['x']:.0f}..{box['x'] + box['width']:.0f}, visible up to {visible_right:.0f}"
            assert shown_whole(el), el.inner_text()
        # nothing had to be scrolled to get there
        assert table.evaluate("""el => { for (let e = el; e; e = e.parentElement) { if (e.scrollLeft) return false; }
                                         return true; }""")
        # one line a row: no body row taller than the one-line header row
        head_height = _box(table.locator("thead tr"))["height"]
        rows = table.locator("tbody tr")
        heights = [_box(rows.nth(i))["height"] for i in range(rows.count())]
        assert max(heights) <= head_height + 1, (head_height, max(heights))
    except Exception:
        page.screenshot(path=artifacts / "jupyterlab-05-rows-failure.png", full_page=True)
        raise
    finally:
        page.close()


def test_the_app_opens_the_store_the_address_names(browser, artifacts, tmp_path):
    """``make app``'s page with ``&store=<folder>``: the real 4.2.0 store beside the repository
    (179 messages, its README) instead of the sample store, its rows those the package computes
    for the query shown; a folder that is not a store, typed into the path field, is said on the
    page and the explorer stays."""
    from urllib.parse import quote

    from oracles import require_real_data

    from rmqlab.analysis.keys import key_occurrences
    from rmqlab.store.directory import Store

    root = require_real_data("rocketmq/store-ericpangopher-4.2.0")
    real = Store(root)
    origin = int(real.messages()["store_timestamp"].min())
    assert len(real.messages()) == 179
    with _voila_app(tmp_path) as (base, token, log):
        page = browser.new_page(viewport=VIEWPORT)
        try:
            explorer = _app_page(page, f"{base}/?token={token}&store={quote(str(root))}")
            assert f"store {root.name}" in explorer.root.inner_text()
            assert page.locator(".rmqlab-store-path input").input_value() == str(root)
            topic, key, window = explorer.topic(), explorer.key(), explorer.window()
            assert topic in set(real.messages()["topic"])
            # the store has no index files (its README): the broker finds nothing, and says why
            assert explorer.rows() == 0 and "no index files" in explorer.status()
            # verified mode: the messages that carry the key in the window, from the CommitLog
            occ = key_occurrences(real.messages())
            carrying = occ[(occ["topic"] == topic) & (occ["key"] == key)
                           & occ["store_timestamp"].between(origin + window[0], origin + window[1])]
            caption = explorer.caption()
            explorer.root.locator(".rmqlab-mode button", has_text="verified").click()
            explorer.wait_until_settled(caption)        # a change of rows only: the walk stays
            assert explorer.rows() == carrying["phy_offset"].nunique() > 0
            explorer.screenshot(artifacts / "voila-real-4.2.0-store.png")
            page.locator(".rmqlab-store-path input").fill(str(tmp_path))
            page.locator(".rmqlab-store-path input").press("Enter")
            page.wait_for_selector(".rmqlab-store-error :text('not a store folder')", timeout=60_000)
            assert explorer.topic() == topic and f"store {root.name}" in explorer.root.inner_text()
        except Exception as e:
            page.screenshot(path=artifacts / "voila-real-store-failure.png", full_page=True)
            raise AssertionError(f"the Voilà app on the real store failed ({e}); server log:\n{_tail(log)}") from e
        finally:
            page.close()



def test_voila_app_at_800_px_shows_the_whole_slider_readout(browser, sample, artifacts, tmp_path):
    """In a window 800 px wide, the time slider's readout shows both values in full (the
    slider's own readout cut 16651 to 1665) and the explorer fits the window."""
    store, origin = sample
    span = int(store.messages()["store_timestamp"].max()) - origin
    with _voila_app(tmp_path) as (base, token, log):
        page = browser.new_page(viewport=NARROW)
        try:
            explorer = _app_page(page, f"{base}/?token={token}")
            slider = explorer.root.locator(".rmqlab-time-slider")
            slider.scroll_into_view_if_needed()
            page.screenshot(path=artifacts / "voila-800-px.png")
            readouts = explorer.root.locator(".rmqlab-time-slider .widget-readout, .rmqlab-time-readout")
            shown = [readouts.nth(i) for i in range(readouts.count()) if readouts.nth(i).is_visible()]
            assert shown, "no readout of the time slider is visible"
            for r in shown:
                assert re.findall(r"\d+", r.inner_text().replace(",", "")) == ["0", str(span)]
                assert shown_whole(r), f"readout cut: {r.inner_text()!r} at {_box(r)}"
            # the explorer fits the window (wide tables and figures scroll inside their own boxes)
            assert explorer.root.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
            assert _box(slider)["x"] + _box(slider)["width"] <= NARROW["width"]
        except Exception as e:
            page.screenshot(path=artifacts / "voila-800-failure.png", full_page=True)
            raise AssertionError(f"the Voilà app at 800 px failed ({e}); server log:\n{_tail(log)}") from e
        finally:
            page.close()


def test_the_capacity_report_fits_a_1280_px_page(browser, artifacts, tmp_path):
    """The capacity report as a browser shows it at 1280 px: the page does not scroll sideways,
    and no table or text inside it is wider than its box (tables wrap their cells to fit);
    its title is the plan's."""
    import tomllib

    from rmqlab.capacity import EXAMPLE_PLAN_TOML, parse_plan
    from rmqlab.viz.capacityreport import write_report

    plan = parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML))
    report = write_report(plan, tmp_path / "report.html", samples=200)
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(report.as_uri())
        page.wait_for_selector("h2#assumptions")
        wide = page.evaluate(r"""() => [...document.querySelectorAll('*')].filter(el =>
            el.scrollWidth > el.clientWidth + 1
            && ['auto', 'scroll', 'hidden'].includes(getComputedStyle(el).overflowX))
            .map(el => el.tagName + ' ' + el.className + ': ' + el.scrollWidth + ' > ' + el.clientWidth)""")
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls"
        assert not wide, wide
        assert page.title() == plan.title
        page.screenshot(path=artifacts / "capacity-report-1280.png", full_page=True)
    finally:
        page.close()


def test_a_run_all_that_stalls_says_where_it_stood(lab, browser):
    """The harness's own failure message: a notebook whose second cell outlasts the timeout is
    reported with the cells that ran, the cell running (its first line) and the busy kernel,
    so a CI log alone tells a stalled cell from a lost click or a dead kernel."""
    import json
    import urllib.request

    base, token, _log = lab
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": src}
             for src in ("x = 1", "import time\ntime.sleep(600)", "x + 1")]
    nb = {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
          "metadata": {"kernelspec": {"name": _kernel_name(), "display_name": "stall", "language": "python"}}}
    body = json.dumps({"type": "notebook", "format": "json", "content": nb}).encode()
    req = urllib.request.Request(f"{base}/api/contents/stall.ipynb?token={token}", data=body, method="PUT",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=30).close()
    page = browser.new_page(viewport=LAPTOP)
    try:
        with pytest.raises(sync_api.TimeoutError) as stalled:
            run_notebook(page, base, token, "stall.ipynb", timeout_s=3, open_timeout_s=SERVER_START_S)
        message = stalled.value.message
        assert message == ("stall.ipynb: 1 of 3 code cells ran, 2 queued or running, 0 never started; "
                           "first running: cell 2 'import time'; kernel: Busy"), message
    finally:
        page.close()
        shut_down_kernels(base, token)
