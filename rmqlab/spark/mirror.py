"""A store at a URI (``s3://``, ``gs://``, ``hdfs://``, ``file://``) seen as a local folder, for
:func:`rmqlab.spark.verify.verify_with_spark`: every file copied into a scratch folder but the
CommitLog's, which stay where they are until a reader opens one.

The checks read local files through memory maps. A :class:`Mirror` gives them a folder of the
store's layout at the same absolute path on the driver and on every executor, and copies in it
the store's small files: index files, ConsumeQueues, the checkpoint, config and the rest (on the
driver when the mirror is made, on an executor's machine at its first task). The files of a
``commitlog`` folder, the bulk of a store, and of a DLedger ledger's data folder
(``dledger-<selfId>/data``, where a DLedger store keeps its CommitLog) are *stand-ins*: sparse
files of the real name and size, registered with :func:`rmqlab.formats.mapped.stand_in`, so
that the first reader that opens one (a task walking that file; the driver reading the last
file's head, the ledger's own checks, or the messages a timer or pop check names) brings its
bytes first, whole, from the store. A task holds the
CommitLog files it reads (a shared lock) and, on an executor away from the driver's machine,
gives them back to stand-ins when it ends, unless another task there still holds one: a
machine holds the small files plus the CommitLog files its running tasks read.

What this costs: the store's files other than the CommitLog on the driver and on each executor
machine (for a store of 1 KiB messages about 4 % of the CommitLog: 20 bytes of index entry and
20 of queue unit a message); each CommitLog file read once by the task that walks it (and by the
driver only where its own checks read it). A file is brought under a lock, into a hidden name,
then renamed, so concurrent tasks on one machine never see half a file; what is there is marked
in a folder beside the mirror (never inside the store's folders, whose listings the checks read).
Read-only: nothing is written to the store.

>>> import tempfile, os
>>> from rmqlab.formats import commitlog as cl
>>> src = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(src, "store", "commitlog"))
>>> with open(os.path.join(src, "store", "commitlog", "0" * 20), "wb") as f:
...     _ = f.write(b"\\x01" * 100)
>>> with open(os.path.join(src, "store", "checkpoint"), "wb") as f:
...     _ = f.write(b"\\x00" * 16)
>>> m = make_mirror("file://" + os.path.join(src, "store"))
>>> sorted(os.listdir(m.root)), os.path.getsize(os.path.join(m.root, "commitlog", "0" * 20))
(['checkpoint', 'commitlog'], 100)
>>> with open(cl.present(os.path.join(m.root, "commitlog", "0" * 20)), "rb") as f:
...     f.read(2)
b'\\x01\\x01'
>>> m.remove()
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import posixpath
import secrets
import shutil
import socket
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from rmqlab.formats.commitlog import is_file_name
from rmqlab.formats.mapped import stand_in
from rmqlab.formats.storepaths import DLEDGER_PREFIX
from rmqlab.spark import storage

__all__ = ["Mirror", "make_mirror", "shown_uri"]

#: the scratch folders' prefix, in the driver's temporary folder
_PREFIX = "rmqlab-mirror-"
#: a mirror unused this long on an executor's machine is left over from an ended verify
_STALE_SECONDS = 24 * 3600
#: bytes a ranged read brings
_COPY_CHUNK = 8 << 20
#: ranged reads of one file at a time, and files brought at a time when a mirror is made
_RANGES = 4
_FILES = 4
#: the CommitLog files the running task of this process reads, by mark: the shared lock held
_HELD: dict[str, Any] = {}


def shown_uri(uri: str) -> str:
    """`uri` as a report shows it: without user info (credentials) or query string.

    >>> shown_uri("s3://KEY:SECRET@bucket/store?endpoint_override=h:9000&scheme=http")
    's3://bucket/store'
    """
    parts = urllib.parse.urlsplit(uri)
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path.rstrip("/") or "/", "", ""))


def _is_log_file(relative: str) -> bool:
    """Whether the file at `relative` (below the store's parent) holds messages: a file of a
    ``commitlog`` folder, or of a DLedger ledger's data folder (``dledger-<selfId>/data``,
    DLedgerConfig.getDefaultPath), named by its 20-digit offset."""
    folder, name = posixpath.split(relative)
    parent, last = posixpath.split(folder)
    return is_file_name(name) and (last == "commitlog"
                                   or (last == "data" and posixpath.basename(parent).startswith(DLEDGER_PREFIX)))


@dataclass(frozen=True)
class Mirror:
    """A store at `source` mirrored at local folder `root` (the same absolute path on every
    machine; picklable, its filesystem with it). `files`: every file as (path relative to the
    store, size, whether it stands in for a CommitLog file). `single`: the source is one file
    (``root`` is then that file). `driver_host`: where the mirror was made."""

    source: storage.Location
    scratch: str
    root: str
    files: tuple[tuple[str, int, bool], ...]
    single: bool
    driver_host: str

    @property
    def shown(self) -> str:
        """The store as reports show it (:func:`shown_uri`)."""
        return shown_uri(self.source.uri) if storage.is_uri(self.source.uri) else self.source.path

    def _local(self, relative: str) -> str:
        return self.root if self.single else os.path.join(self.root, *relative.split("/"))

    def _remote(self, relative: str) -> storage.Location:
        path = self.source.path if self.single else posixpath.join(self.source.path, relative)
        return storage.Location(self.source.fs, path)

    def _mark(self, relative: str) -> str:
        return os.path.join(self.scratch, "here", relative.replace("/", "%") or "%")

    def _bring(self, relative: str) -> None:
        """The file's bytes in the mirror (a no-op once there: one stat)."""
        mark = self._mark(relative)
        if os.path.exists(mark):
            return
        with _locked(mark + ".lock"):
            if os.path.exists(mark):
                return
            _download(self._remote(relative), self._local(relative))
            with open(mark, "wb"):
                pass

    def _use(self, relative: str) -> None:
        """In a task: the file brought, and held (a shared lock on it until the task ends) so
        that no other task on this machine gives it back while this one reads it."""
        mark = self._mark(relative)
        while mark not in _HELD:
            self._bring(relative)
            fh = open(mark + ".lock", "a+b")
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
            if os.path.exists(mark):
                _HELD[mark] = fh
            else:       # given back between the two: bring it again
                fh.close()

    def _let_go(self, relative: str, size: int, give_back: bool) -> None:
        """The end of a task's hold on a file; with `give_back`, when no other task holds it, the
        file made a stand-in again (a new sparse file renamed over it, so a reader that still
        maps the old one keeps its bytes)."""
        fh = _HELD.pop(self._mark(relative), None)
        if fh is None:
            return
        try:
            if give_back:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:     # another task reads it: that one gives it back
                    return
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._mark(relative))
                _sparse(self._local(relative), size)
        finally:
            fh.close()

    def _stand_in(self, bring) -> None:
        for relative, _, remote in self.files:
            if remote:
                stand_in(self._local(relative), lambda r=relative: bring(r))

    def _build(self) -> None:
        """Copy the files other than the CommitLog's; stand-ins for the CommitLog's."""
        os.makedirs(os.path.join(self.scratch, "here"), exist_ok=True)
        if not self.single:
            os.makedirs(self.root, exist_ok=True)
        for relative, size, remote in self.files:
            local = self._local(relative)
            os.makedirs(os.path.dirname(local), exist_ok=True)
            if remote:
                _sparse(local, size)
        with ThreadPoolExecutor(_FILES) as ex:
            list(ex.map(self._bring, [relative for relative, _, remote in self.files if not remote]))
        with open(os.path.join(self.scratch, "complete"), "wb"):
            pass

    @contextlib.contextmanager
    def on_executor(self) -> Iterator[None]:
        """The mirror on this machine for a task (made at the machine's first task, under a
        lock), its stand-ins registered in this process for the task's length; at the end, away
        from the driver's machine, the CommitLog files the task brought are stand-ins again."""
        complete = os.path.join(self.scratch, "complete")
        if not os.path.exists(complete):
            os.makedirs(self.scratch, exist_ok=True)
            _remove_stale(os.path.dirname(self.scratch), keep=self.scratch)
            with _locked(os.path.join(self.scratch, "build.lock")):
                if not os.path.exists(complete):
                    self._build()
        os.utime(complete)
        self._stand_in(self._use)
        try:
            yield
        finally:
            away = socket.gethostname() != self.driver_host
            for relative, size, remote in self.files:
                if remote:
                    stand_in(self._local(relative), None)   # a long-lived worker keeps no other verify's
                    self._let_go(relative, size, away)

    def remove(self) -> None:
        """Delete the mirror on this machine (the driver's, at the end; stand-ins withdrawn)."""
        for relative, _, remote in self.files:
            if remote:
                stand_in(self._local(relative), None)
        shutil.rmtree(self.scratch, ignore_errors=True)


def make_mirror(uri: str, scratch: str | os.PathLike | None = None) -> Mirror:
    """The store (or one file) at `uri` mirrored on this machine (the driver), in a new folder
    of `scratch` (default: the temporary folder). Call :meth:`Mirror.remove` at the end.
    Raises FileNotFoundError when nothing is at `uri`. Cost: one recursive listing, and a copy
    of every file but the CommitLog's (see the module docstring)."""
    source = storage.resolve(uri)
    info = source.fs.get_file_info(source.path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"{shown_uri(uri) if storage.is_uri(uri) else uri}: no such file or directory")
    name = posixpath.basename(source.path.rstrip("/")) or "store"
    base = os.path.abspath(os.fspath(scratch) if scratch is not None else tempfile.gettempdir())
    folder = os.path.join(base, f"{_PREFIX}{secrets.token_hex(8)}")
    if info.type == pafs.FileType.File:
        files: tuple[tuple[str, int, bool], ...] = (("", int(info.size), False),)
        single = True
    else:
        listed = source.fs.get_file_info(pafs.FileSelector(source.path, recursive=True))
        prefix = source.path.rstrip("/") + "/"
        # the folder's own name counts: a URI of a commitlog/ folder leaves its files remote too
        files = tuple(sorted((i.path[len(prefix):], int(i.size),
                              _is_log_file(posixpath.join(name, i.path[len(prefix):])))
                             for i in listed if i.type == pafs.FileType.File and i.path.startswith(prefix)))
        single = False
    m = Mirror(source, folder, os.path.join(folder, "store", name), files, single, socket.gethostname())
    try:
        m._build()
        m._stand_in(m._bring)
    except BaseException:
        m.remove()
        raise
    return m


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """An exclusive lock on `path` (created) between the processes of one machine."""
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _hidden(path: str) -> str:
    """A name beside `path` no other process or thread writes, to be renamed over it."""
    return f"{path}.{os.getpid()}.{secrets.token_hex(4)}.part"


def _sparse(path: str, size: int) -> None:
    """A file of `size` bytes that holds none on disk, renamed over `path`."""
    hidden = _hidden(path)
    with open(hidden, "wb") as fh:
        fh.truncate(size)
    os.replace(hidden, path)


def _download(remote: storage.Location, path: str) -> None:
    """`remote`'s bytes at `path`: ranged reads of _COPY_CHUNK bytes, _RANGES at a time (an
    object store serves each from another connection), into a hidden name, then renamed over
    it. A chunk of zeros is left a hole (a preallocated file holds no block here)."""
    hidden = _hidden(path)
    try:
        with remote.fs.open_input_file(remote.path) as src:
            size = src.size()
            fd = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                def part(lo: int) -> None:
                    data = src.read_at(min(_COPY_CHUNK, size - lo), lo)
                    if len(data) != min(_COPY_CHUNK, size - lo):
                        raise OSError(f"{remote}: {len(data)} bytes at offset {lo}: the file changed while read")
                    if data.count(0) != len(data):
                        os.pwrite(fd, data, lo)

                with ThreadPoolExecutor(_RANGES) as ex:
                    list(ex.map(part, range(0, size, _COPY_CHUNK)))
                os.ftruncate(fd, size)
            finally:
                os.close(fd)
        os.replace(hidden, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(hidden)
        raise


def _remove_stale(base: str, keep: str) -> None:
    """Mirrors on this machine left by verifies that ended long ago (an executor's are never
    removed by its driver)."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(base) as entries:
        for e in entries:
            if e.name.startswith(_PREFIX) and e.path != keep:
                try:
                    age = now - os.stat(os.path.join(e.path, "complete")).st_mtime
                except OSError:
                    continue
                if age > _STALE_SECONDS:
                    shutil.rmtree(e.path, ignore_errors=True)
