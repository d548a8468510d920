"""The capacity report in a real browser: the example plan's report written to a temporary
folder, opened in Chromium from file://, every figure decoded and drawn, every section heading
shown, no request leaving the page, nothing wider than the window; a full-page screenshot goes
to build/test-artifacts/capacity-report.png. Cost: about 10 s (the report) plus the browser's start.
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


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    analysis = analyse_plan(parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML)), samples=SAMPLES)
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_report(analysis), encoding="utf-8")
    return path, analysis


def test_the_report_opens_in_chromium_with_every_figure(report):
    path, analysis = report
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = launch(pw)
        try:
            page = browser.new_page(viewport=VIEWPORT)
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
            # the page fits the window: no horizontal scrolling, tables and figures inside <main>
            widths = page.evaluate("""() => ({page: document.documentElement.scrollWidth,
                window: window.innerWidth,
                main: document.querySelector('main').getBoundingClientRect().right,
                widest: Math.max(...[...document.querySelectorAll('main table, main img')]
                                 .map(e => e.getBoundingClientRect().right))})""")
            assert widths["page"] <= widths["window"], widths
            assert widths["widest"] <= widths["main"], widths

            page.screenshot(path=SCREENSHOT, full_page=True)
            assert SCREENSHOT.stat().st_size > 100_000
        finally:
            browser.close()
