"""The files of a ``commitlog/`` folder: names, sizes, offsets and read-only maps."""
from __future__ import annotations

import mmap
import os
import re
from dataclasses import dataclass
from pathlib import Path

from rmqlab.errors import FormatError

_FILE_NAME = re.compile(r"\d{20}")
_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class StoreFile:
    """One CommitLog file: its path, start offset (from the 20-digit name) and size."""

    path: Path
    start_offset: int
    size: int


def _store_file(p: Path, start: int) -> StoreFile:
    size = p.stat().st_size
    if start + max(size, 1) - 1 > _LONG_MAX:   # Java's Long.parseLong / long offsets cannot hold it
        raise FormatError(f"file name {p.name}: the file's offsets {start}..{start + max(size, 1) - 1} run "
                          f"past Long.MAX_VALUE", path=p, offset=0, field="file name")
    return StoreFile(p, start, size)


def store_files(path: str | os.PathLike) -> list[StoreFile]:
    """The CommitLog files of a ``commitlog/`` folder (names of 20 digits, sorted by offset),
    or the one file `path`. A single file whose name is not 20 digits starts at offset 0.
    A name whose offsets run past Long.MAX_VALUE raises FormatError (field "file name")."""
    p = Path(path)
    if p.is_dir():
        out = [_store_file(c, int(c.name)) for c in p.iterdir()
               if _FILE_NAME.fullmatch(c.name) and c.is_file()]
        return sorted(out, key=lambda f: f.start_offset)
    return [_store_file(p, int(p.name) if _FILE_NAME.fullmatch(p.name) else 0)]


def min_offset(path: str | os.PathLike) -> int | None:
    """Offset of the first file's first byte (the broker's getMinOffset), None without files."""
    files = store_files(path)
    return files[0].start_offset if files else None


class ReadOnlyMap:
    """A read-only memory map of a whole file (b"" for an empty file)."""

    def __init__(self, path):
        self.path = path
        self.fh = open(path, "rb")
        size = os.fstat(self.fh.fileno()).st_size
        self.mm = mmap.mmap(self.fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None

    def __enter__(self):
        return self.mm if self.mm is not None else b""

    def __exit__(self, *exc):
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:   # a NumPy view still alive: the map closes when it is freed
                pass
        self.fh.close()
