"""Chromium for the real-browser tests: Playwright drives the system Chromium
(/usr/bin/chromium; `playwright install` is never used, it downloads a browser and fails here).

A test module calls :func:`require_chromium` at import time (it skips the whole module, saying
why, when Chromium or Playwright is missing) and launches the browser with :func:`launch`.
Screenshots go to :data:`ARTIFACTS` (build/test-artifacts/, ignored by git).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "build" / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 "--disable-dev-shm-usage"]


def require_chromium():
    """Playwright's sync API, or skip the calling test module when Chromium or Playwright is
    missing."""
    if not CHROMIUM.is_file():
        reason = (f"no Chromium at {CHROMIUM} (install it: apt-get install chromium, or run "
                  f".ci/ensure-chromium as root)")
        if os.environ.get("CI") == "true":   # in CI the browser is an oracle that must be there
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason, allow_module_level=True)
    return pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install -e '.[dev]')")


def launch(playwright):
    """The system Chromium, headless, with the flags that work on these machines."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
