"""Chromium for the real-browser tests: Playwright drives the system Chromium
(/usr/bin/chromium; `playwright install` is never used, it downloads a browser and fails here).

A test module calls :func:`require_chromium` at import time (it skips the whole module, saying
why, when Chromium or Playwright is missing) and launches the browser with :func:`launch`.
Screenshots go to :data:`ARTIFACTS` (build/test-artifacts/, ignored by git).
"""
from __future__ import annotations

from pathlib import Path

import oracles

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
        oracles.missing(f"Chromium at {CHROMIUM}", "apt-get install chromium, or .ci/ensure-chromium as root",
                        module_level=True)
    return oracles.require_module("playwright.sync_api")


def launch(playwright):
    """The system Chromium, headless, with the flags that work on these machines."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
