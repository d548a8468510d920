"""The capacity report in a real browser: the example plan's report written to a temporary
folder, opened in Chromium from file://, every figure decoded and drawn, every section heading
shown, no request leaving the page, nothing wider than the window; a full-page screenshot goes
to build/test-artifacts/capacity-report.png.

"Nothing overflows" is checked for every element and every line of text in <main>, not only for
the tables: whatever the fonts of the machine, nothing may cross main's content edge except
inside a box that scrolls sideways (each table has one), and those boxes stay inside main.
The same check runs again with a much wider font forced on the page and in an 800 px window,
with screenshots capacity-report-<case>.png.

Notebook 06 runs in JupyterLab (Run All, as a person does, on a copy of notebooks/): its plan
explorer must show the plan afterwards (slider readouts and results table, checked against the
model called here), the report it writes must be shown in the notebook (a link and a frame
holding the page, itself checked for overflow), and no output may be wider than the notebook's
column at 1280 and 800 px, with the usual fonts or a monospace one, except inside a box of its
own that scrolls sideways. Screenshots: jupyterlab-06-*.png.

Cost: about 10 s (the report) plus about 2 s a page in the browser; JupyterLab's start and
notebook 06's Run All about 40-60 s.
"""
from __future__ import annotations

import tomllib

import pytest
from browser_support import ARTIFACTS, launch, require_chromium
from browser_support import run_all as run_notebook

from rmqlab.capacity import EXAMPLE_PLAN_TOML, estimate, parse_plan
from rmqlab.capacity.analysis import RESULT_ROWS, analyse_plan
from rmqlab.capacity.plan import Interval
from rmqlab.tables.display import format_value
from rmqlab.viz.capacityreport import SECTIONS, render_report
from rmqlab.viz.planexplorer import EXPLORER_INPUTS

# JupyterLab on 127.0.0.1 serving a copy of notebooks/, as the query explorer's test runs it
from tests.test_browser import SERVER_START_S, _tail, lab  # noqa: F401

pytestmark = pytest.mark.browser

sync_api = require_chromium()

SAMPLES = 500
VIEWPORT = {"width": 1280, "height": 900}
SCREENSHOT = ARTIFACTS / "capacity-report.png"
NARROW_VIEWPORT = {"width": 800, "height": 900}
# monospace is wider than the usual proportional fonts, and 110 % on every element compounds with
# depth, so table cells end up at about twice the size the page asks for
WIDE_FONT_CSS = '* { font-family: "DejaVu Sans Mono", monospace !important; font-size: 110% !important; }'
# in JupyterLab, whose elements nest far deeper, the same monospace font without the compounding size
LAB_WIDE_FONT_CSS = '.jp-Notebook * { font-family: "DejaVu Sans Mono", monospace !important; }'

# Offenders: elements and lines of text in <main> that reach past main's content box without a
# sideways-scrolling ancestor between them and main; scroll boxes themselves are measured too.
OVERFLOW_JS = """() => {
    const main = document.querySelector('main');
    const style = getComputedStyle(main), box = main.getBoundingClientRect();
    const left = box.left + parseFloat(style.borderLeftWidth) + parseFloat(style.paddingLeft);
    const right = box.right - parseFloat(style.borderRightWidth) - parseFloat(style.paddingRight);
    const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
    const scrolled = node => {
        for (let e = node.parentElement; e && e !== main; e = e.parentElement) if (scrolls(e)) return true;
        return false;
    };
    const name = e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '');
    const offenders = [];
    const check = (what, r) => {
        if (r.width > 0 && (r.right > right + 0.5 || r.left < left - 0.5))
            offenders.push(`${what}: ${Math.round(r.left)}..${Math.round(r.right)}`);
    };
    for (const e of main.querySelectorAll('*')) if (!scrolled(e)) check(name(e), e.getBoundingClientRect());
    const texts = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
    for (let t = texts.nextNode(); t; t = texts.nextNode()) {
        if (!t.textContent.trim() || scrolled(t)) continue;
        const range = document.createRange();
        range.selectNodeContents(t);
        for (const r of range.getClientRects()) check(`text "${t.textContent.trim().slice(0, 40)}"`, r);
    }
    const boxes = [...main.querySelectorAll('*')].filter(scrolls);
    return {offenders, left, right, page: document.documentElement.scrollWidth, window: window.innerWidth,
            boxes: boxes.map(b => ({name: name(b), right: b.getBoundingClientRect().right,
                                    scrolling: b.scrollWidth > b.clientWidth})),
            tables: [...main.querySelectorAll('table')].map(t => t.parentElement.className),
            tables_in_scroll_boxes: [...main.querySelectorAll('table')].every(t => scrolls(t.parentElement)
                                    && t.parentElement.querySelectorAll('table').length === 1),
            cell_font: getComputedStyle(main.querySelector('td')).fontFamily};
}"""


def assert_nothing_overflows(page) -> dict:
    """The page scrolls only downwards and nothing in <main> crosses its content box outside a
    sideways-scrolling box; returns the measurements."""
    fit = page.evaluate(OVERFLOW_JS)
    assert fit["page"] <= fit["window"], fit
    assert fit["offenders"] == [], fit
    assert fit["tables"] and fit["tables_in_scroll_boxes"], fit          # each table in its own box
    assert all(box["right"] <= fit["right"] + 0.5 for box in fit["boxes"]), fit
    return fit


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        browser = launch(pw)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    analysis = analyse_plan(parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML)), samples=SAMPLES)
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_report(analysis), encoding="utf-8")
    return path, analysis


def test_the_report_opens_in_chromium_with_every_figure(report, browser):
    path, analysis = report
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport=VIEWPORT)
    try:
        requests, errors = [], []
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri(), wait_until="load")

        images = page.evaluate("""() => [...document.images].map(i => ({
            complete: i.complete, width: i.naturalWidth, height: i.naturalHeight,
            shown: i.getBoundingClientRect().width, alt: i.alt}))""")
        assert len(images) == 6          # disk, disk fan, fill time, load factor, sampled chains, comparison
        for image in images:
            assert image["complete"] and image["width"] > 400 and image["height"] > 200, image
            assert image["shown"] > 300, image            # drawn at a readable size

        headings = page.evaluate("() => [...document.querySelectorAll('h2')].map(h => [h.id, h.innerText])")
        assert [tuple(h) for h in headings] == list(SECTIONS)
        assert page.inner_text("h1") == analysis.plan.title
        assert page.inner_text(".recommendation") == analysis.recommendation.text
        best = page.inner_text("table.configurations tr.best td")
        assert best == analysis.recommendation.configuration

        # nothing is fetched but the page itself (figures are data: URIs), nothing fails
        assert [u for u in requests if not u.startswith(("file://", "data:"))] == []
        assert errors == []
        # the page fits the window: no horizontal scrolling, tables' boxes and figures inside
        # <main> (a table itself may be wider than its box with a wide font: the box scrolls)
        widths = page.evaluate("""() => ({page: document.documentElement.scrollWidth,
            window: window.innerWidth,
            main: document.querySelector('main').getBoundingClientRect().right,
            widest: Math.max(...[...document.querySelectorAll('main .table-box, main img')]
                             .map(e => e.getBoundingClientRect().right))})""")
        assert widths["page"] <= widths["window"], widths
        assert widths["widest"] <= widths["main"], widths
        assert_nothing_overflows(page)

        page.screenshot(path=SCREENSHOT, full_page=True)
        assert SCREENSHOT.stat().st_size > 100_000
        page.locator("table.configurations").screenshot(path=ARTIFACTS / "capacity-report-configurations.png")
    finally:
        page.close()


@pytest.mark.parametrize("case, viewport, css", [
    ("wide-font", VIEWPORT, WIDE_FONT_CSS),
    ("800px", NARROW_VIEWPORT, None),
    ("800px-wide-font", NARROW_VIEWPORT, WIDE_FONT_CSS),
])
def test_nothing_overflows_with_a_wide_font_or_a_narrow_window(report, browser, case, viewport, css):
    path, _ = report
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport=viewport)
    try:
        page.goto(path.as_uri(), wait_until="load")
        if css:
            page.add_style_tag(content=css)
        fit = assert_nothing_overflows(page)
        if css:
            # the forced font took effect, and it is wide enough that some table must scroll
            # in its box: the check above really ran on the scrolling case
            assert "Mono" in fit["cell_font"] or "monospace" in fit["cell_font"], fit
            assert any(box["scrolling"] for box in fit["boxes"]), fit
        page.screenshot(path=ARTIFACTS / f"capacity-report-{case}.png", full_page=True)
    finally:
        page.close()


# ------------------------------------------------------------------------------ notebook 06

NOTEBOOK = "06-capacity-planning.ipynb"
NOTEBOOK_RUN_S = 300         # Run All of notebook 06: about 20-30 s here with the fast key sample
LAB_VIEWPORT = {"width": 1280, "height": 1000}
EXPLORER = ".rmqlab-plan-explorer"

# Offenders in notebook outputs: an output that scrolls sideways itself (JupyterLab gives every
# output `overflow: auto`, so a table wider than the column hides behind a scrollbar at the
# bottom of a long output), or an element or line of text reaching past the output's content box
# without a sideways-scrolling box of its own between it and the output.
OUTPUT_FIT_JS = """() => {
    const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
    const name = e => e.tagName.toLowerCase() + (typeof e.className === 'string' && e.className
                                                 ? '.' + e.className.split(' ')[0] : '');
    const offenders = [], boxes = [];
    const outputs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
    outputs.forEach((out, i) => {
        const style = getComputedStyle(out), box = out.getBoundingClientRect();
        if (box.width === 0) return;
        const right = box.right - parseFloat(style.borderRightWidth) - parseFloat(style.paddingRight);
        const scrolled = node => {
            for (let e = node.parentElement; e && e !== out; e = e.parentElement) if (scrolls(e)) return true;
            return false;
        };
        if (out.scrollWidth > out.clientWidth + 1)
            offenders.push(`output ${i} scrolls sideways: ${out.scrollWidth} px in ${out.clientWidth} px`);
        for (const e of out.querySelectorAll('*')) {
            const r = e.getBoundingClientRect();
            if (!scrolled(e) && r.width > 0 && r.right > right + 0.5)
                offenders.push(`output ${i} ${name(e)}: right edge ${Math.round(r.right)} > ${Math.round(right)}`);
            if (e !== out && scrolls(e))
                boxes.push({output: i, name: name(e), scrolling: e.scrollWidth > e.clientWidth + 1,
                            right: r.right, column: right});
        }
        const texts = document.createTreeWalker(out, NodeFilter.SHOW_TEXT);
        for (let t = texts.nextNode(); t; t = texts.nextNode()) {
            if (!t.textContent.trim() || scrolled(t)) continue;
            const range = document.createRange();
            range.selectNodeContents(t);
            for (const r of range.getClientRects())
                if (r.width > 0 && r.right > right + 0.5)
                    offenders.push(`output ${i} text "${t.textContent.trim().slice(0, 40)}"`);
        }
    });
    return {outputs: outputs.length, offenders, boxes,
            tables: outputs.reduce((n, o) => n + o.querySelectorAll('table').length, 0)};
}"""


def assert_outputs_fit(page) -> dict:
    """No output of the open notebook is wider than its column, except inside a box of its own
    that scrolls sideways (and such boxes stay inside the column)."""
    fit = page.evaluate(OUTPUT_FIT_JS)
    assert fit["outputs"] >= 10 and fit["tables"] >= 3, fit
    assert fit["offenders"] == [], fit
    assert all(b["right"] <= b["column"] + 0.5 for b in fit["boxes"]), fit
    return fit


def run_all(page, base: str, token: str, notebook: str, log) -> None:
    """Open `notebook` in JupyterLab, wait for its kernel, hide the file browser and Run All;
    returns when every code cell has run (Run All stops at the first error, so a numbered
    prompt on every cell means none failed) and no cell wrote to stderr."""
    try:
        run_notebook(page, base, token, notebook, timeout_s=NOTEBOOK_RUN_S,
                     open_timeout_s=SERVER_START_S)
    except sync_api.TimeoutError as err:
        page.screenshot(path=ARTIFACTS / "jupyterlab-06-run-all-failed.png")
        raise AssertionError(f"Run All of {notebook} did not finish within {NOTEBOOK_RUN_S} s: {err.message}\n"
                             f"{_tail(log)}\n{_stderr(page)}") from err
    assert not _stderr(page), f"cells of {notebook} wrote errors or warnings:\n{_stderr(page)}"


def _stderr(page) -> str:
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return "\n---\n".join(errors.nth(i).inner_text()[:2000] for i in range(errors.count()))


@pytest.fixture(scope="module")
def notebook_06(lab, browser):  # noqa: F811 (lab: the fixture imported above)
    """Notebook 06 after JupyterLab's Run All at 1280 px: the page. Cost: about 30-60 s
    (JupyterLab's start and the notebook's run)."""
    base, token, log = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport=LAB_VIEWPORT)
    try:
        run_all(page, base, token, NOTEBOOK, log)
        yield page
    finally:
        page.close()


def _shoot(page, locator, name: str) -> None:
    """The window with `locator`'s top at its top, as ARTIFACTS/name (JupyterLab scrolls the
    notebook in a panel of its own, where element screenshots come out blank or torn)."""
    locator.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    page.screenshot(path=ARTIFACTS / name)


def _frame_of(page, selector: str):
    handle = page.locator(selector).first.element_handle()
    frame = handle.content_frame() if handle else None
    assert frame is not None, f"no frame at {selector}"
    frame.wait_for_load_state("load")
    return frame


def test_notebook_06_explorer_shows_its_plan_after_run_all(notebook_06):
    page = notebook_06
    plan = parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML))       # the notebook's default PLAN
    explorer = page.locator(EXPLORER).first
    explorer.scroll_into_view_if_needed()
    for path in EXPLORER_INPUTS:
        css = ".rmqlab-plan-" + path.replace(".", "-").replace("_", "-")
        readout = explorer.locator(f"{css} .widget-readout").inner_text()
        sec, key = path.split(".")
        value = getattr(getattr(plan, sec), key)
        expected = value.likely if isinstance(value, Interval) else value
        assert float(readout.replace(",", "")) == pytest.approx(expected), (path, readout)
    shown = dict(zip(explorer.locator("table td:first-child").all_inner_texts(),
                     explorer.locator("table td:nth-child(2)").all_inner_texts(), strict=True))
    e = estimate(plan).as_dict()
    assert shown == {label: format_value(e[name], kind) for name, label, kind in RESULT_ROWS}
    _shoot(page, explorer, "jupyterlab-06-explorer.png")


def test_notebook_06_shows_its_report(notebook_06, report):
    page = notebook_06
    _, analysis = report             # the notebook's analysis: same plan, samples and seed
    link = page.locator(".jp-OutputArea-output a[href*='capacity-report.html']").first
    assert link.count() == 1
    frame = _frame_of(page, ".jp-OutputArea-output iframe")
    assert frame.inner_text("h1") == analysis.plan.title
    assert frame.inner_text(".recommendation") == analysis.recommendation.text
    assert frame.evaluate("() => [...document.images].every(i => i.complete && i.naturalWidth > 400)")
    assert_nothing_overflows(frame)
    _shoot(page, page.locator(".jp-OutputArea-output iframe").first, "jupyterlab-06-report.png")


@pytest.mark.parametrize("case, viewport, wide", [
    ("1280px", LAB_VIEWPORT, False),
    ("800px", {"width": 800, "height": 1000}, False),
    ("1280px-wide-font", LAB_VIEWPORT, True),
    ("800px-wide-font", {"width": 800, "height": 1000}, True),
])
def test_notebook_06_outputs_fit_their_column(notebook_06, case, viewport, wide):
    page = notebook_06
    page.set_viewport_size(viewport)
    styles = [page.add_style_tag(content=LAB_WIDE_FONT_CSS)] if wide else []
    try:
        page.wait_for_timeout(500)           # JupyterLab lays the notebook out again after a resize
        configurations = page.locator(".jp-OutputArea-output table.rmqlab-configurations")
        _shoot(page, page.locator(".jp-OutputArea-output").first, f"jupyterlab-06-{case}.png")
        fit = assert_outputs_fit(page)
        assert configurations.count() == 1
        _shoot(page, configurations, f"jupyterlab-06-{case}-configurations.png")
        if case == "1280px":
            # at the usual size the comparison fits whole: nothing scrolls, not even in its own box
            assert not any(b["scrolling"] for b in fit["boxes"]), fit
        frame = _frame_of(page, ".jp-OutputArea-output iframe")     # the report, shown in the notebook
        if wide:
            styles.append(frame.add_style_tag(content=WIDE_FONT_CSS))
        assert_nothing_overflows(frame)
    finally:
        for style in styles:
            style.evaluate("e => e.remove()")
        page.set_viewport_size(LAB_VIEWPORT)
