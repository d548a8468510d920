"""The files of a ``commitlog/`` folder: names, sizes, offsets, read-only maps, and the
broker's load rules that say which files hold the log (:func:`load_files`).

The load rules mirror ``MappedFileQueue.load`` / ``doLoad``, ``CommitLog.recoverNormally`` /
``recoverAbnormally`` and ``DefaultMessageStore.load``, read at rocketmq-all-4.2.0 and
rocketmq-all-5.3.1:

- files are loaded in name order; an empty (0-byte) **last** file is deleted on load (5.1.3 and
  later; 4.2.0 to 4.4.x stop loading at the first file of the wrong size and ignore it and
  every later one, which for an empty last file is the same). Any other file whose size is not
  mappedFileSize fails the load (4.5.1 and later: "please check it manually");
- ``AllocateMappedFileService`` creates the next file ahead of use, so all-zero files may follow
  the one being written; recovery walks into them, finds no record and
  ``truncateDirtyFiles`` deletes the files past the end;
- the last file holding data is the one being written (the active file): after its last
  message there are zeros. Every earlier file ends with the 8-byte end-of-file blank record
  (TOTALSIZE = bytes left, MAGICCODE 0xCBD43194); the broker writes only those 8 bytes, so
  whatever follows them in the file is never read.
"""
from __future__ import annotations

import bisect
import mmap
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmqlab.errors import FormatError
from rmqlab.formats.mapped import present
from rmqlab.jvm.longs import LONG_MAX

_FILE_NAME = re.compile(r"\d{20}")


@dataclass(frozen=True)
class StoreFile:
    """One CommitLog file: its path, start offset (from the 20-digit name) and size."""

    path: Path
    start_offset: int
    size: int


def is_file_name(name: str) -> bool:
    """Whether `name` is a CommitLog file's: 20 digits, its first byte's offset.

    >>> is_file_name("00000000001073741824"), is_file_name("abort")
    (True, False)
    """
    return _FILE_NAME.fullmatch(name) is not None


def _store_file(p: Path, start: int, size: int | None = None) -> StoreFile:
    size = p.stat().st_size if size is None else size
    if start + max(size, 1) - 1 > LONG_MAX:   # Java's Long.parseLong / long offsets cannot hold it
        raise FormatError(f"file name {p.name}: the file's offsets {start}..{start + max(size, 1) - 1} run "
                          f"past Long.MAX_VALUE", path=p, offset=0, field="file name")
    return StoreFile(p, start, size)


def store_files(path: str | os.PathLike) -> list[StoreFile]:
    """The CommitLog files of a ``commitlog/`` folder (names of 20 digits, sorted by offset),
    or the one file `path`. A single file whose name is not 20 digits starts at offset 0. In a
    folder of :func:`multi_path_view` each file is named by its real path.
    A name whose offsets run past Long.MAX_VALUE raises FormatError (field "file name")."""
    p = Path(path)
    if p.is_dir():
        # scandir: one stat a file (its size), where Path.is_file and Path.stat made two
        with os.scandir(p) as entries:
            out = [_store_file(Path(os.path.realpath(e.path)) if e.is_symlink() else p / e.name, int(e.name),
                               e.stat().st_size) for e in entries if _FILE_NAME.fullmatch(e.name) and e.is_file()]
        return sorted(out, key=lambda f: f.start_offset)
    real = Path(os.path.realpath(p)) if p.is_symlink() else p   # a file of a view: name the real one
    return [_store_file(real, int(p.name) if _FILE_NAME.fullmatch(p.name) else 0)]


#: folders of storePathCommitLog (a tuple, resolved) -> the view folder made for them
_VIEWS: dict[tuple[Path, ...], Path] = {}


def _remove_views() -> None:
    import shutil

    for view in _VIEWS.values():
        shutil.rmtree(view, ignore_errors=True)


def multi_path_view(folders: Sequence[str | os.PathLike]) -> Path:
    """A CommitLog kept over several folders (``storePathCommitLog`` holding paths split by
    commas, 4.9.2+, and ``readOnlyCommitLogStorePaths``), seen as one folder:
    ``MultiPathMappedFileQueue.load`` (store module, rocketmq-all-4.9.2 and 5.3.3) lists the files
    of every folder and loads them together in name order; the broker creates the file of offset
    ``n * size`` in the ``n % k``-th of the k writable folders, sorted. The view is a private
    folder (in the temporary directory, removed at exit) of one symbolic link a file, brought up
    to date at each call; readers name the real files (:func:`store_files`) and never write
    through it. Cost: one listing a folder. Raises FormatError when two folders hold a file of
    the same name (the broker would map both at one offset).

    >>> import tempfile
    >>> a, b = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> _ = (a / f"{0:020d}").write_bytes(b"x" * 8); _ = (b / f"{8:020d}").write_bytes(b"y" * 8)
    >>> [f.start_offset for f in store_files(multi_path_view([a, b]))]
    [0, 8]
    """
    import atexit
    import tempfile

    key = tuple(Path(os.path.realpath(f)) for f in folders)
    found: dict[str, Path] = {}
    for folder in key:
        if not folder.is_dir():
            continue
        with os.scandir(folder) as entries:
            for e in entries:
                if not (_FILE_NAME.fullmatch(e.name) and e.is_file()):
                    continue
                if e.name in found:
                    raise FormatError(f"the CommitLog file {e.name} is in two of the paths ({found[e.name].parent} "
                                      f"and {folder}): the broker would load both at one offset",
                                      path=folder / e.name, offset=0, field="file name")
                found[e.name] = folder / e.name
    view = _VIEWS.get(key)
    if view is None or not view.is_dir():
        if not _VIEWS:
            atexit.register(_remove_views)
        view = _VIEWS[key] = Path(tempfile.mkdtemp(prefix="rmqlab-commitlog-paths-"))
    with os.scandir(view) as entries:
        for e in entries:
            if found.get(e.name) != (Path(os.readlink(e.path)) if e.is_symlink() else None):
                os.unlink(e.path)
    for name, target in found.items():
        if not (view / name).is_symlink():
            os.symlink(target, view / name)
    return view


def min_offset(path: str | os.PathLike) -> int | None:
    """Offset of the first file's first byte (the broker's getMinOffset), None without files."""
    files = store_files(path)
    return files[0].start_offset if files else None




#: bytes read per step when checking that a file holds only zeros
_ZERO_CHECK_CHUNK = 1 << 20


def holds_data(path: str | os.PathLike) -> bool:
    """True when the file has a non-zero byte (a preallocated, never written file has none).
    Cost: the first record head; a whole read in 1 MiB steps only for a zero file."""
    with open(present(path), "rb") as fh:
        left = os.fstat(fh.fileno()).st_size
        head = fh.read(min(8, left))
        if any(head):
            return True
        left -= len(head)
        while left > 0:
            chunk = fh.read(min(_ZERO_CHECK_CHUNK, left))   # never a buffer larger than the file
            if not chunk:
                break
            if chunk.count(0) != len(chunk):
                return True
            left -= len(chunk)
    return False


@dataclass(frozen=True)
class LoadedFiles:
    """A CommitLog's files sorted by the broker's load rules (see the module docstring).

    ``data``: the files the log is read from, in offset order; the last is the active one.
    ``preallocated``: all-zero files after the active one. ``dropped``: an empty last file,
    which the broker deletes on load. ``reasons``: why each file that is not read is left out.
    """

    files: list[StoreFile]
    data: list[StoreFile]
    preallocated: list[StoreFile]
    dropped: list[StoreFile]
    reasons: dict[Path, str]

    @property
    def active(self) -> StoreFile | None:
        """The file the broker was writing (the last one holding data), None without files."""
        return self.data[-1] if self.data else None

    def role(self, f: StoreFile) -> str:
        """"data", "active", "preallocated" or "dropped"."""
        if f in self.dropped:
            return "dropped"
        if f in self.preallocated:
            return "preallocated"
        return "active" if f == self.active else "data"


DROPPED_REASON = ("0 bytes, the last file: created ahead of use and never written; MappedFileQueue.load "
                  "deletes it from 5.1.3, stops loading there up to 4.4.x and in 4.9.2, and refuses the store "
                  "in 4.5.x-4.9.1 and 4.9.3-5.1.2 (verify's store.empty-last-file, given the release)")
PREALLOCATED_REASON = ("all zeros after the active file: created ahead of use (AllocateMappedFileService); "
                       "recovery deletes files past the end (MappedFileQueue.truncateDirtyFiles)")


def classify_files(files: list[StoreFile]) -> LoadedFiles:
    """Sort CommitLog files (from :func:`store_files`) by the broker's load rules.

    Cost: one 8-byte read per trailing file, whole reads only of all-zero trailing files.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "00000000000000000000").write_bytes(b"\\x01" + bytes(99))
    100
    >>> (d / "00000000000000000100").write_bytes(bytes(100))
    100
    >>> (d / "00000000000000000200").write_bytes(b"")
    0
    >>> lf = classify_files(store_files(d))
    >>> [lf.role(f) for f in lf.files]
    ['active', 'preallocated', 'dropped']
    """
    rest = list(files)
    dropped = [rest.pop()] if rest and rest[-1].size == 0 else []
    n_data = len(rest)
    while n_data > 1 and not holds_data(rest[n_data - 1].path):
        n_data -= 1
    # with no file holding data the first stays: nothing written yet, the broker writes there next
    data, preallocated = rest[:n_data], rest[n_data:]
    reasons = {f.path: DROPPED_REASON for f in dropped}
    reasons.update({f.path: PREALLOCATED_REASON for f in preallocated})
    return LoadedFiles(list(files), data, preallocated, dropped, reasons)


def load_files(path: str | os.PathLike) -> LoadedFiles:
    """:func:`classify_files` of :func:`store_files` (a ``commitlog/`` folder or one file).

    Cost: as :func:`classify_files`.

    >>> import tempfile
    >>> load_files(tempfile.mkdtemp()).active is None
    True
    """
    return classify_files(store_files(path))


def walked_files(path: str | os.PathLike) -> list[StoreFile]:
    """The files a reader walks: the data files of :func:`load_files`, or, when there are none,
    the first file (empty or zeros: no messages, the end offset is its start)."""
    lf = load_files(path)
    return lf.data if lf.data else lf.files[:1]


class ReadOnlyMap:
    """A read-only memory map of a whole file (b"" for an empty file), or of its first `length`
    bytes only (no byte past them can be read through it). ``size`` is the whole file's."""

    def __init__(self, path, length: int | None = None):
        self.path = path
        self.fh = open(present(path), "rb")
        self.size = os.fstat(self.fh.fileno()).st_size
        mapped = self.size if length is None else min(self.size, max(length, 0))
        self.mm = mmap.mmap(self.fh.fileno(), mapped, access=mmap.ACCESS_READ) if mapped else None

    def __enter__(self):
        return self.mm if self.mm is not None else b""

    def __exit__(self, *exc):
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:   # a NumPy view still alive: the map closes when it is freed
                pass
        self.fh.close()


class MappedCommitLog:
    """The files of a CommitLog folder (or one file), each mapped read-only on its first read and
    kept mapped until :meth:`close`: the read side of the broker's ``MappedFileQueue`` for many
    reads at offsets (``findMappedFileByOffset``, then the bytes at a position of that file).

    The files are those :func:`store_files` lists when it opens (none where the folder is
    missing; a file added or removed later is not seen: open another). Nothing is ever written
    through it. Cost: opening lists the folder, O(files); :meth:`file_of` is a binary search of
    the start offsets, O(log files); a file's first :meth:`buffer` maps it (no byte is read
    until touched).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / f"{0:020d}").write_bytes(b"ab"); _ = (d / f"{2:020d}").write_bytes(b"cd")
    >>> with MappedCommitLog(d) as log:
    ...     i = log.file_of(3)
    ...     (i, log.files[i].start_offset, bytes(log.buffer(i)[1:2]), log.file_of(4))
    (1, 2, b'd', -1)
    """

    def __init__(self, path_or_dir: str | os.PathLike):
        #: the folder (or file) it was opened on
        self.path = Path(path_or_dir)
        #: the files, by start offset
        self.files: list[StoreFile] = store_files(path_or_dir) if self.path.exists() else []
        self._starts = [f.start_offset for f in self.files]
        self._maps: dict[int, ReadOnlyMap] = {}

    def file_of(self, phy_offset: int) -> int:
        """The position in :attr:`files` of the file holding CommitLog offset `phy_offset`, or -1
        where no file holds it (before the first, past a file's end, after the last)."""
        i = bisect.bisect_right(self._starts, phy_offset) - 1
        if i < 0 or phy_offset - self._starts[i] >= self.files[i].size:
            return -1
        return i

    def buffer(self, i: int) -> Any:
        """The read-only map of file `i` of :attr:`files` (b"" for an empty file), mapped on the
        first call and kept."""
        m = self._maps.get(i)
        if m is None:
            m = self._maps[i] = ReadOnlyMap(self.files[i].path)
        return m.mm if m.mm is not None else b""

    def close(self) -> None:
        """Unmap every file (a view someone still holds keeps its map alive until it is freed)."""
        maps, self._maps = self._maps, {}
        for m in maps.values():
            m.__exit__(None, None, None)

    def __enter__(self) -> MappedCommitLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
