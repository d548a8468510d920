"""What "the inputs are untouched" means in the tests: every file under a folder, by name, with
its size, modification time (ns) and SHA-256. Two snapshots are equal only if no file was
added, removed, rewritten or even touched."""
from __future__ import annotations

import hashlib
from pathlib import Path


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """(size, mtime_ns, sha256) of every file under `root`, keyed by its relative path."""
    out = {}
    for p in sorted(Path(root).rglob("*")):
        if p.is_file():
            s = p.stat()
            out[str(p.relative_to(root))] = (s.st_size, s.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out
