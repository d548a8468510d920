"""Every notebook as a person sees it: executed in JupyterLab (Run All) in Chromium at 1280 px,
one full-page PNG each.

    python tests/screenshots.py --out build/screenshots [--only 01 07]     (or: make screenshots)

The notebooks run with their own parameters (not the tests' small ones), on a copy of
notebooks/ in a temporary folder laid out like the repository (``../tests`` and ``../data``
linked, ``../../shared`` linked when it exists), so nothing is written into the repository.
JupyterLab is bound to 127.0.0.1 with a random token and stopped by its PID; each notebook's
kernel is shut down before the next one starts. A notebook JupyterLab keeps in its scrolling
panel is captured a screen at a time and stitched into one image the height of the notebook.
Each notebook's outputs wider than the 1280 px page (a table or text that scrolls or is cut
sideways; figures in their own scroll box excepted) are listed. Exit status 1 when a notebook
fails to run (its screenshot is still saved, with the error) or has such an output.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

from browser_support import (  # noqa: E402
    ROOT,
    jupyterlab,
    kernel_name,
    launch,
    overflowing_outputs,
    point_at_kernel,
    require_chromium,
    run_all,
    shut_down_kernels,
)

WIDTH = 1280
SCREEN_HEIGHT = 900
RUN_TIMEOUT_S = 1200        # notebook 06 with whole-file key samples is the slowest: a few minutes
SETTLE_S = 2.0              # widgets draw after the last cell reports


def _workspace(tmp: Path, kernel: str) -> Path:
    """A copy of notebooks/ beside links to the repository's tests/ and data/, and ../shared."""
    repo = tmp / ROOT.name
    shutil.copytree(ROOT / "notebooks", repo / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for name in ("tests", "data"):
        (repo / name).symlink_to(ROOT / name, target_is_directory=True)
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (tmp / "shared").symlink_to(shared, target_is_directory=True)
    point_at_kernel(repo / "notebooks", kernel)
    return repo / "notebooks"


def _full_notebook_png(page) -> bytes:
    """The whole notebook: its scrolling panel captured a screen at a time, stitched."""
    from PIL import Image

    scroller = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer").first
    total = int(scroller.evaluate("e => e.scrollHeight"))
    view = int(scroller.evaluate("e => e.clientHeight"))
    box = scroller.bounding_box()
    parts: list[tuple[int, bytes]] = []
    top = 0
    while True:
        scroller.evaluate("(e, y) => { e.scrollTop = y; }", top)
        page.wait_for_timeout(250)
        actual = int(scroller.evaluate("e => e.scrollTop"))
        parts.append((actual, page.screenshot(clip={"x": box["x"], "y": box["y"], "width": box["width"],
                                                     "height": view})))
        if actual + view >= total:
            break
        top = actual + view
    scale = Image.open(io.BytesIO(parts[0][1])).width / box["width"]
    sheet = Image.new("RGB", (Image.open(io.BytesIO(parts[0][1])).width, int(total * scale)), "white")
    for y, png in parts:
        sheet.paste(Image.open(io.BytesIO(png)), (0, int(y * scale)))
    out = io.BytesIO()
    sheet.save(out, format="PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "screenshots"), help="folder for the PNGs")
    parser.add_argument("--only", nargs="*", default=[], help="notebook numbers or names to take (default: all)")
    args = parser.parse_args(argv)
    sync_api = require_chromium()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = sorted(p.relative_to(ROOT / "notebooks").as_posix() for p in (ROOT / "notebooks").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)
    if args.only:
        names = [n for n in names if any(n.startswith(o) for o in args.only)]
    failed: list[str] = []
    overflowing: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rmqlab-screenshots-") as tmp:
        root = _workspace(Path(tmp), kernel_name())
        home = Path(tmp) / "home"
        with jupyterlab(root, home) as (base, token, log), sync_api.sync_playwright() as pw:
            browser = launch(pw)
            try:
                for name in names:
                    page = browser.new_page(viewport={"width": WIDTH, "height": SCREEN_HEIGHT})
                    started = time.monotonic()
                    status = "ok"
                    try:
                        run_all(page, base, token, name, timeout_s=RUN_TIMEOUT_S)
                    except sync_api.TimeoutError as err:
                        status = f"did not finish (a cell failed, or it ran past the timeout): {err.message}"
                        failed.append(name)
                    page.wait_for_timeout(SETTLE_S * 1000)
                    wide = overflowing_outputs(page)
                    for w in wide:
                        print(f"  {name}: cell {w['cell']}: {w['element']} is {w['scroll_px']} px wide in "
                              f"{w['width_px']} px: {w['text']!r}", flush=True)
                    if wide:
                        status += f"; {len(wide)} output(s) wider than the page"
                        overflowing.append(name)
                    png = out / (name.removesuffix(".ipynb").replace("/", "-") + ".png")
                    png.write_bytes(_full_notebook_png(page))
                    print(f"{name}: {status}, {time.monotonic() - started:.0f} s -> {os.path.relpath(png)}", flush=True)
                    page.close()
                    shut_down_kernels(base, token)
            finally:
                browser.close()
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    if overflowing:
        print(f"outputs wider than the page: {', '.join(overflowing)}", file=sys.stderr)
    return 1 if failed or overflowing else 0


if __name__ == "__main__":
    sys.exit(main())
