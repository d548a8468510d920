"""The capacity report in a real browser: the example plan's report written to a temporary
folder, opened in Chromium from file://, every figure decoded and drawn, every section heading
shown, no request leaving the page, nothing wider than the window; a full-page screenshot goes
to build/test-artifacts/capacity-report.png.

"Nothing overflows" is checked for every element and every line of text in <main>, not only for
the tables: whatever the fonts of the machine, nothing may cross main's content edge except
inside a box that scrolls sideways (each table has one), and those boxes stay inside main.
The same check runs again with a much wider font forced on the page and in an 800 px window,
with screenshots capacity-report-<case>.png. Cost: about 10 s (the report) plus about 2 s a
page in the browser.
"""
from __future__ import annotations

import tomllib

import pytest
from browser_support import ARTIFACTS, launch, require_chromium

from rmqlab.capacity import EXAMPLE_PLAN_TOML, parse_plan
from rmqlab.capacity.report import SECTIONS, analyse_plan, render_report

pytestmark = pytest.mark.browser

sync_api = require_chromium()

SAMPLES = 500
VIEWPORT = {"width": 1280, "height": 900}
SCREENSHOT = ARTIFACTS / "capacity-report.png"
NARROW_VIEWPORT = {"width": 800, "height": 900}
# monospace is wider than the usual proportional fonts, and 110 % on every element compounds with
# depth, so table cells end up at about twice the size the page asks for
WIDE_FONT_CSS = '* { font-family: "DejaVu Sans Mono", monospace !important; font-size: 110% !important; }'

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
        assert len(images) == 5
        for image in images:
            assert image["complete"] and image["width"] > 400 and image["height"] > 200, image
            assert image["shown"] > 300, image            # drawn at a readable size

        headings = page.evaluate("() => [...document.querySelectorAll('h2')].map(h => [h.id, h.innerText])")
        assert [tuple(h) for h in headings] == list(SECTIONS)
        assert page.inner_text("h1") == f"Capacity plan: {analysis.plan.name}"
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
