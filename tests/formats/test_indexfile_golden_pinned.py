"""The Java golden files in tests/data/golden are the ones the Java reference wrote: byte for byte
the copy kept beside the repository in ../shared/golden (missing there: a failure in CI, a skip
with the reason elsewhere)."""
from __future__ import annotations

import shutil
from pathlib import Path

from oracles import SHARED, require_real_data

REPO_GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
SHARED_GOLDEN = SHARED / "golden"


def tree_differences(ours: Path, theirs: Path) -> list[str]:
    """Every relative path present on one side only or with different bytes."""
    def files(root: Path) -> dict[str, Path]:
        return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}

    a, b = files(ours), files(theirs)
    out = [f"only in {ours}: {p}" for p in sorted(a.keys() - b.keys())]
    out += [f"only in {theirs}: {p}" for p in sorted(b.keys() - a.keys())]
    out += [f"differs: {p}" for p in sorted(a.keys() & b.keys()) if a[p].read_bytes() != b[p].read_bytes()]
    return out


def test_the_golden_files_are_the_shared_ones_byte_for_byte():
    shared = require_real_data(SHARED_GOLDEN)
    assert any(REPO_GOLDEN.rglob("*")), "tests/data/golden is empty"
    assert tree_differences(REPO_GOLDEN, shared) == []


def test_the_comparison_sees_a_changed_byte_a_missing_and_an_extra_file(tmp_path):
    ours = tmp_path / "ours"
    shutil.copytree(REPO_GOLDEN, ours)
    assert tree_differences(ours, REPO_GOLDEN) == []
    victim = sorted(p for p in ours.rglob("*") if p.is_file() and p.stat().st_size)[0]
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0x80
    victim.write_bytes(bytes(data))
    (ours / "basic" / "extra").write_bytes(b"")
    gone = sorted(p for p in ours.rglob("*") if p.is_file() and p != victim and p.name != "extra")[-1]
    gone.unlink()
    got = tree_differences(ours, REPO_GOLDEN)
    rel = victim.relative_to(ours).as_posix()
    assert f"differs: {rel}" in got and f"only in {ours}: basic/extra" in got
    assert f"only in {REPO_GOLDEN}: {gone.relative_to(ours).as_posix()}" in got and len(got) == 3
