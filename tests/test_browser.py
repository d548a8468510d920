"""The query explorer in a real browser: JupyterLab running notebook 05, and the Voilà app.

Playwright drives the system Chromium (/usr/bin/chromium; `playwright install` is never used).
The servers run on 127.0.0.1 with a random token, on copies of the notebooks in a temporary
folder (a run never writes into the repository), and are stopped by their PID. Every number read
from the page is checked against the package computing the same query in this process.

Screenshots go to build/test-artifacts/ (git ignores build/): look at them when a test fails.
Cost: about 60-80 s for the file (JupyterLab start and notebook 05's Run All, Voilà's start);
skipped, saying why, without Chromium or Playwright.
"""
from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from browser_support import ARTIFACTS, ROOT, jupyterlab, launch, point_at_kernel, require_chromium, server
from browser_support import free_port as _free_port
from browser_support import isolated_env as _isolated_env
from browser_support import kernel_name as _kernel_name
from browser_support import tail as _tail
from oracles import require_module

pytestmark = pytest.mark.browser

NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK = "05-time-range-query-explorer.ipynb"
APP = "apps/query-explorer.ipynb"
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
    from rmqlab.sample import sample_store

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
        text = self.root.locator(".rmqlab-time-slider .widget-readout").inner_text()
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


def _no_errors(page) -> None:
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    texts = [errors.nth(i).inner_text()[:2000] for i in range(errors.count())]
    assert not texts, "cells wrote errors or warnings:\n" + "\n---\n".join(texts)


# ------------------------------------------------------------------------------ tests


def test_notebook_05_explorer_in_jupyterlab(lab, browser, sample, artifacts):
    base, token, log = lab
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(f"{base}/lab/tree/{NOTEBOOK}?reset&token={token}")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=SERVER_START_S * 1000)
        # The kernel must be up before Run All, else JupyterLab asks for one in a dialog. The
        # toolbar's indicator says "idle" before any kernel exists; the status bar names it.
        page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-StatusBar-Widget')].some(
                   w => w.textContent.includes('| Idle') && !w.textContent.includes('No Kernel'))""",
            timeout=SERVER_START_S * 1000)
        page.keyboard.press("Control+b")      # hide the file browser: more room for the notebook
        page.locator(".lm-MenuBar-item", has_text="Run").first.click()
        page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
        code_cells = page.locator(".jp-Notebook .jp-CodeCell").count()
        try:
            # Run All stops at the first error, so "every prompt has a number" means no cell failed.
            page.wait_for_function(
                """(n) => {
                    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
                    return prompts.length === n && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
                }""", arg=code_cells, timeout=NOTEBOOK_RUN_S * 1000)
        except sync_api.TimeoutError as err:
            page.screenshot(path=artifacts / "jupyterlab-05-run-all-failed.png")
            _no_errors(page)
            raise AssertionError(f"Run All did not finish within {NOTEBOOK_RUN_S} s:\n{_tail(log)}") from err
        _no_errors(page)

        explorer = ExplorerPage(page)
        explorer.root.scroll_into_view_if_needed()
        explorer.wait_until_settled()
        topic, key, max_num = explorer.topic(), explorer.key(), explorer.max_num()
        window = explorer.window()
        assert (topic, key, max_num) == ("Orders", "USER_20", 64)       # the notebook's parameters
        before_rows, before_caption, before_walk = explorer.rows(), explorer.caption(), explorer.walk_src()
        assert before_rows == expected_broker_rows(sample, topic, key, window, max_num) > 0
        assert before_walk.startswith("blob:") or before_walk.startswith("data:image/png")
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


def test_query_explorer_app_in_voila(browser, sample, artifacts, tmp_path):
    root = _copy_notebooks(tmp_path / "notebooks")
    home = tmp_path / "home"
    port, token = _free_port(), secrets.token_hex(24)
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "voila", str(root / APP), "--no-browser", f"--port={port}",
            "--Voila.ip=127.0.0.1", f"--Voila.token={token}", f"--Voila.connection_dir_root={tmp_path}"]
    log = tmp_path / "voila.log"
    # Voilà has no status API; its static files answer once it serves.
    with _server(argv, f"{base}/voila/static/voila.js", _isolated_env(home), log, cwd=root):
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
