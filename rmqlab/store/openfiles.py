"""The files a :class:`~rmqlab.store.directory.Store` keeps open between key queries, as a running
broker keeps its mapped files: the index folder as a read-only
:class:`~rmqlab.store.indexservice.IndexService` and the CommitLog's files as a
:class:`~rmqlab.formats.commitlog.MappedCommitLog`, with where each file's readable bytes end.

Opening a store's index (a map and a header read a file) and listing its folders cost far more
than one query (about a millisecond against 20 to 30 us), so they are opened once and checked at
each use instead: the folders' modification times and link counts and each index file's header
(:meth:`IndexFile.changed_on_disk`). Any change (a file added or removed, keys put by a broker or
by :meth:`Store.dispatch`) opens everything again. A folder's time comes from the kernel's
coarse clock (a few ms a tick), so a file added in the tick of the stamp would leave the stamp
as it was: while a folder's last change is under 0.1 s old, its names are compared too. Cost of
a check: an fstat a folder and a 40-byte compare an index file (and a listing a folder in the
0.1 s after a change).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import rmqlab._filestamps as _filestamps
from rmqlab.formats import commitlog as cl
from rmqlab.store.indexservice import IndexService
from rmqlab.store.layout import StoreLayout

__all__ = ["OpenFiles", "OpenedStore"]

#: a folder changed less than this long before its stamp is read has its names compared too (ns)
_RECENT_NS = 100_000_000


def _recent(stamps: tuple) -> bool:
    """Whether a folder of `stamps` changed so recently that a change in the same tick of the
    kernel's clock would leave its time as it is."""
    now = time.time_ns()
    return any(s is not None and now - s[1] < _RECENT_NS for s in stamps)


def _path_stamp(path: Path) -> tuple[int, int] | None:
    """A folder's (link count, modification time in ns) by its path, None where it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_nlink, st.st_mtime_ns


class _Folders:
    """Folders watched for change: each one that exists held open (a directory's descriptor, whose
    fstat costs a fraction of a stat by path), a missing one looked up by path each time.
    :meth:`stamps` gives each folder's (link count, modification time in ns), None where it is
    missing: adding, removing or renaming a file changes its folder's time, and a removed folder
    keeps no link."""

    def __init__(self, folders: tuple[Path, ...]):
        self.folders = folders
        self.fds: list[int] = []   # -1 where the folder was missing at opening
        for p in folders:
            try:
                self.fds.append(os.open(p, os.O_RDONLY | os.O_DIRECTORY))
            except OSError:
                self.fds.append(-1)

    def stamps(self) -> tuple:
        """Cost: an fstat a folder held open, in one C call; a stat a missing one."""
        out = _filestamps.stamps(self.fds)
        if -1 in self.fds:
            out = tuple(_path_stamp(p) if fd < 0 else s for p, fd, s in zip(self.folders, self.fds, out))
        return out

    def listing(self) -> tuple:
        """Each folder's file names, sorted (None where it is missing). Cost: a listing a folder."""
        out: list[tuple[str, ...] | None] = []
        for p in self.folders:
            try:
                out.append(tuple(sorted(os.listdir(p))))
            except OSError:
                out.append(None)
        return tuple(out)

    def close(self) -> None:
        fds, self.fds = self.fds, []
        for fd in fds:
            if fd >= 0:
                os.close(fd)


@dataclass
class OpenedStore:
    """The opened index and CommitLog of a store, and the stamps they were opened under."""

    index: IndexService
    commitlog: cl.MappedCommitLog
    folders: _Folders
    stamps: tuple
    #: the folders' names when it opened, while their times were too recent to tell a change
    listing: tuple | None = None
    #: readable bytes of each CommitLog file, by position in commitlog.files (made on first use)
    _ends: list[int] | None = field(default=None, repr=False)
    #: position of the active file until its end is walked, then -1
    _active: int = field(default=-1, repr=False)

    def readable_end(self, i: int) -> int:
        """How many bytes of CommitLog file `i` (of ``commitlog.files``) the broker reads after
        loading the store: a whole file before the active one (MappedFileQueue.load sets each
        file's write position to its size), the active file up to its last good message
        (CommitLog recovery: :func:`rmqlab.formats.commitlog.max_offset`), and nothing of the
        files after it (all zeros, or an empty last file: recovery and load delete them).
        Cost: the first call classifies the files (a read of the last ones' first bytes); the
        first call for the active file walks it."""
        if self._ends is None:
            files = self.commitlog.files
            loaded = cl.classify_files(files) if files else None   # the files listed when it opened
            data = {f.path for f in loaded.data} if loaded else set()
            self._ends = [f.size if f.path in data else 0 for f in files]
            active = loaded.active if loaded is not None else None
            self._active = next(k for k, f in enumerate(files) if f.path == active.path) if active else -1
        if i == self._active:   # walked once, when a read first falls in it
            active = self.commitlog.files[i]
            end = cl.max_offset(self.commitlog.path)
            self._ends[i] = max(0, (end if end is not None else active.start_offset) - active.start_offset)
            self._active = -1
        return self._ends[i]

    def fresh(self) -> bool:
        """Whether nothing has changed since these files were opened."""
        stamps = self.folders.stamps()
        if stamps != self.stamps:
            return False
        if self.listing is not None:   # opened just after a change: the names are compared too
            if self.folders.listing() != self.listing:
                return False
            if not _recent(stamps):
                self.listing = None     # the times have moved on since: they alone tell from now
        for f in self.index.files:
            if f.changed_on_disk():
                return False
        return True

    def close(self) -> None:
        self.index.close()
        self.commitlog.close()
        self.folders.close()


class OpenFiles:
    """The opened index and CommitLog of a store layout, opened on first use and again after any
    change (see the module's docstring). Not thread-safe, as :class:`IndexService` is not.

    >>> import tempfile
    >>> from rmqlab.store.layout import StoreLayout
    >>> files = OpenFiles(StoreLayout.of(tempfile.mkdtemp()))
    >>> opened = files.current()
    >>> (len(opened.index.files), opened.commitlog.files, files.current() is opened)
    (0, [], True)
    """

    def __init__(self, layout: StoreLayout):
        self.layout = layout
        self._opened: OpenedStore | None = None

    def _folders(self) -> tuple[Path, ...]:
        """The folders whose change opens the files again: the root (a folder added or removed),
        the CommitLog's and the index's."""
        paths = self.layout.paths
        return (paths.root, paths.root / "commitlog", paths.index, *paths.commitlog_paths,
                *(ledger / "data" for ledger in paths.ledgers))

    def current(self) -> OpenedStore:
        """The opened files, opened again first when anything changed. Cost: a check, or an
        opening (a listing and a map an index file)."""
        opened = self._opened
        if opened is not None and opened.fresh():
            return opened
        self.close()
        folders = _Folders(self._folders())
        stamps = folders.stamps()   # before the opening: a change during it opens again next time
        # a folder's time is the kernel's coarse clock (a few ms a tick): a file added in the tick
        # of a stamp leaves the stamp as it was, so a folder changed that recently is listed too
        listing = folders.listing() if _recent(stamps) else None
        try:
            index = self.layout.index_service()
        except BaseException:
            folders.close()
            raise
        try:
            commitlog = cl.MappedCommitLog(self.layout.paths.commitlog)
        except BaseException:
            index.close()
            folders.close()
            raise
        self._opened = OpenedStore(index, commitlog, folders, stamps, listing)
        return self._opened

    def close(self) -> None:
        """Close the opened files (the next :meth:`current` opens them again)."""
        opened, self._opened = self._opened, None
        if opened is not None:
            opened.close()
