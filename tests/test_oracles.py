"""A run without its oracles must say so: in CI it fails before the first test, naming what is
missing; elsewhere the tests that need them skip, and the end of the run lists them."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def run_pytest(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ, RMQLAB_SHARED=str(tmp_path / "no-shared"))
    env.pop("CI", None)
    if ci:
        env["CI"] = "true"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
            str(TESTS / "formats" / "test_indexfile_golden_pinned.py"), str(TESTS / "kafka" / "test_log.py")]
    return subprocess.run(args, cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300)


def test_in_ci_a_run_without_shared_stops_at_once_naming_each_missing_oracle(tmp_path):
    done = run_pytest(tmp_path, ci=True)
    out = done.stdout + done.stderr
    assert done.returncode == 3, out
    assert "passed" not in out
    for name in ("Java golden files at", "real RocketMQ broker data at", "real Kafka broker data at"):
        assert name in out
    assert str(tmp_path / "no-shared" / "golden") in out


def test_elsewhere_the_tests_skip_and_the_run_lists_what_was_missing(tmp_path):
    done = run_pytest(tmp_path, ci=False)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "missing oracles" in out and "their tests were skipped (set CI=true to fail)" in out
    assert f"shared test data at {tmp_path / 'no-shared' / 'golden'}  [1 test(s)]" in out
    assert f"real broker data at {tmp_path / 'no-shared' / 'real-data' / 'kafka'}" in out
    assert "skipped" in out and " failed" not in out
