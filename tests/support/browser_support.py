"""Chromium for the real-browser tests: Playwright drives the system Chromium
(/usr/bin/chromium; `playwright install` is never used, it downloads a browser and fails here).

A test module calls :func:`require_chromium` at import time (it skips the whole module, saying
why, when Chromium or Playwright is missing) and launches the browser with :func:`launch`.
Screenshots go to :data:`ARTIFACTS` (build/test-artifacts/, ignored by git).
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path

import oracles

ROOT = Path(__file__).resolve().parents[2]
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


# ------------------------------------------------------------------------------ JupyterLab


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kernel_name() -> str:
    """The project's kernel "rmqlab" (made by `make`) when installed, else the default python3."""
    from jupyter_client.kernelspec import KernelSpecManager

    return "rmqlab" if "rmqlab" in KernelSpecManager().find_kernel_specs() else "python3"


def point_at_kernel(folder: Path, kernel: str) -> None:
    """Point every notebook under `folder` at the kernel `kernel` (when it is not "rmqlab", the
    kernel the notebooks name)."""
    import json

    if kernel == "rmqlab":
        return
    for path in folder.rglob("*.ipynb"):
        nb = json.loads(path.read_text())
        nb["metadata"]["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
        path.write_text(json.dumps(nb))


def isolated_env(home: Path) -> dict[str, str]:
    """The environment for a server: Jupyter's per-user files (settings, workspaces, runtime and
    data files, IPython history) in `home`, not in the user's home folder."""
    import os

    env = dict(os.environ)
    for name, sub in (("JUPYTERLAB_SETTINGS_DIR", "user-settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                      ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_DATA_DIR", "data"),
                      ("JUPYTER_CONFIG_DIR", "config"), ("IPYTHONDIR", "ipython")):
        env[name] = str(home / sub)
    return env


def tail(path: Path, chars: int = 4000) -> str:
    """The end of a server's log, for an error message."""
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


@contextmanager
def server(argv: list[str], ready_url: str, env: dict[str, str], log_path: Path, cwd: Path, *,
           start_timeout: float = 60.0):
    """Run `argv` until the block ends; yields the process once `ready_url` answers. Stopped by
    its PID: SIGTERM (a Jupyter server shuts its kernels down), then SIGKILL to its process group
    after 15 s. Raises AssertionError, with the log's end, when it exits or does not answer."""
    import os
    import signal
    import subprocess
    import time
    import urllib.request

    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"{argv[2]} exited with {proc.returncode}:\n{tail(log_path)}")
            try:
                with urllib.request.urlopen(ready_url, timeout=5):
                    break
            except OSError as err:    # refused, reset, timed out, or an HTTP error status
                if time.monotonic() > deadline:
                    raise AssertionError(f"{argv[2]} did not answer {ready_url} within {start_timeout} s:\n"
                                         f"{tail(log_path)}") from err
                time.sleep(0.25)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


@contextmanager
def jupyterlab(root: Path, home: Path, *, start_timeout: float = 60.0):
    """JupyterLab serving `root`, bound to 127.0.0.1 with a random token, its per-user files in
    `home`; yields (base URL, token, log path). No news toast, every cell kept in the page.
    Stopped by its PID (:func:`server`)."""
    import json
    import os
    import secrets
    import sys

    app_settings = home / "app-settings"
    app_settings.mkdir(parents=True, exist_ok=True)
    (app_settings / "overrides.json").write_text(json.dumps({
        "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}))
    port, token = free_port(), secrets.token_hex(24)
    argv = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
            f"--LabApp.app_settings_dir={app_settings}"]
    if hasattr(os, "getuid") and os.getuid() == 0:
        argv.append("--allow-root")
    base = f"http://127.0.0.1:{port}"
    log_path = home / "jupyterlab.log"
    with server(argv, f"{base}/api/status?token={token}", isolated_env(home), log_path, root,
                start_timeout=start_timeout):
        yield base, token, log_path


def run_all(page, base: str, token: str, notebook: str, *, timeout_s: float, hide_files: bool = True,
            open_timeout_s: float = 60.0) -> None:
    """Open `notebook` in JupyterLab (a clean layout; `hide_files` closes the file browser so the
    notebook gets the width), wait up to `open_timeout_s` for it and its kernel, Run All, and wait
    up to `timeout_s` until every code cell has run. Run All stops at a failing cell, so a
    numbered prompt on every cell means none failed; a failing cell makes this time out.
    Raises Playwright's TimeoutError, its message saying where the run stood (:func:`run_progress`)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{base}/lab/tree/{notebook}?reset&token={token}")
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=open_timeout_s * 1000)
    # The kernel must be up before Run All, else JupyterLab asks for one in a dialog. The
    # toolbar's indicator says "idle" before any kernel exists; the status bar names it.
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-StatusBar-Widget')].some(
               w => w.textContent.includes('| Idle') && !w.textContent.includes('No Kernel'))""",
        timeout=open_timeout_s * 1000)
    if hide_files:
        page.keyboard.press("Control+b")
    cells = page.locator(".jp-Notebook .jp-CodeCell").count()
    try:
        _click_run_all(page)
        try:    # Run All marks every cell [*] at once; no mark means the menu never saw the click
            page.wait_for_function(_ANY_PROMPT_SET, timeout=RUN_ALL_SEEN_S * 1000)
        except PlaywrightTimeout:
            _click_run_all(page)
        page.wait_for_function(_EVERY_PROMPT_NUMBERED, arg=cells, timeout=timeout_s * 1000)
    except PlaywrightTimeout as err:
        raise PlaywrightTimeout(f"{notebook}: {run_progress(page)}") from err


#: Seconds Run All may take to mark a cell queued or run before it is clicked once more.
RUN_ALL_SEEN_S = 20

_ANY_PROMPT_SET = r"""() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
    .some(p => /\[(\*|\d+)\]/.test(p.textContent))"""
_EVERY_PROMPT_NUMBERED = r"""(n) => {
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
    return prompts.length === n && prompts.every(p => /\[\d+\]/.test(p.textContent));
}"""


def _click_run_all(page) -> None:
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()


def run_progress(page) -> str:
    """Where a Run All stands, for a failure message: how many code cells ran, the ones running
    (prompt and first line), how many never started, and the kernel's status-bar text."""
    state = page.evaluate("""() => {
        const cells = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
        const rows = cells.map(c => [(c.querySelector('.jp-InputPrompt')?.textContent ?? '').trim(),
                                     (c.querySelector('.cm-line')?.textContent ?? '').slice(0, 80)]);
        const status = [...document.querySelectorAll('.jp-StatusBar-TextItem')]
            .map(w => w.textContent.trim()).filter(t => t.includes('|'));
        return {rows, status};
    }""")
    rows = [(re.match(r"\[(\*|\d*)\s*\]", prompt), line) for prompt, line in state["rows"]]
    ran = sum(1 for m, _ in rows if m and m[1].isdigit())
    running = [f"cell {i + 1} {line!r}" for i, (m, line) in enumerate(rows) if m and m[1] == "*"]
    idle = len(rows) - ran - len(running)
    kernel = sorted({m for text in state["status"] for m in re.findall(r"\| (\w+)", text)})
    return (f"{ran} of {len(rows)} code cells ran, {len(running)} queued or running, {idle} never started; "
            f"first running: {running[0] if running else 'none'}; kernel: {', '.join(kernel) or '?'}")


def shut_down_kernels(base: str, token: str) -> None:
    """End every session of the server at `base` (its kernels with them), so the next notebook
    starts alone on a fresh kernel as it does for a user who opens it."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=10) as r:
        sessions = json.load(r)
    for s in sessions:
        req = urllib.request.Request(f"{base}/api/sessions/{s['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(req, timeout=30).close()


#: Every output of the notebook shown that is wider than the page lets it be: an element that
#: scrolls or cuts sideways (scrollWidth past clientWidth with overflow-x auto, scroll or hidden).
#: Figures kept at a readable size in a box of their own scroll on purpose (the walk diagrams'
#: boxes and ScrollingFigure's) and are left out.
_OVERFLOWING = r"""() => {
  const found = [];
  const cells = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')];
  cells.forEach((cell, n) => {
    for (const out of cell.querySelectorAll('.jp-OutputArea-output')) {
      for (const el of [out, ...out.querySelectorAll('*')]) {
        if (el.closest('.rmqlab-walk-box, .rmqlab-scrolling-figure')) continue;
        const x = getComputedStyle(el).overflowX;
        if (el.scrollWidth > el.clientWidth + 1 && ['auto', 'scroll', 'hidden'].includes(x)) {
          found.push({cell: n, element: el.tagName.toLowerCase() + (el.className ? '.' + String(el.className)
                        .trim().split(/\s+/).join('.') : ''), scroll_px: el.scrollWidth, width_px: el.clientWidth,
                      text: (el.innerText || '').trim().slice(0, 80)});
          break;
        }
      }
    }
  });
  return found;
}"""


def overflowing_outputs(page) -> list[dict]:
    """The outputs of the notebook shown that scroll or are cut sideways (cell number, element,
    its content's width and its own in CSS px, its first text): a table or text wider than its
    column. Figures in their own scroll box are not counted (see :data:`_OVERFLOWING`)."""
    return page.evaluate(_OVERFLOWING)
