"""The CI entry point, `.ci/run`, sets the switch that turns a missing oracle into a failure
itself (CI=true), whatever the machine running it exports, and runs `make check` then
`make test`. Run for real with `make` replaced by a recorder on PATH."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_run_exports_ci_true_and_runs_check_then_test(tmp_path):
    record = tmp_path / "calls"
    fake = tmp_path / "bin" / "make"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "CI=${{CI:-unset}} make $*" >> {record}\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = f"{fake.parent}{os.pathsep}{env['PATH']}"
    for outside in (None, "false"):          # not set, or set otherwise by the machine
        record.unlink(missing_ok=True)
        run_env = env if outside is None else {**env, "CI": outside}
        subprocess.run(["bash", str(ROOT / ".ci" / "run")], env=run_env, check=True, cwd=tmp_path, timeout=60)
        assert record.read_text().splitlines() == ["CI=true make check", "CI=true make test"]


def test_ci_run_stops_at_the_first_failure(tmp_path):
    fake = tmp_path / "bin" / "make"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "make $*" >> {tmp_path / "calls"}\nexit 1\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    p = subprocess.run(["bash", str(ROOT / ".ci" / "run")], env=env, cwd=tmp_path, timeout=60)
    assert p.returncode != 0 and (tmp_path / "calls").read_text().splitlines() == ["make check"]
