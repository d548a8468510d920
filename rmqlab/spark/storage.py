"""Where rmqlab.spark reads and writes: plain paths and URIs, through :mod:`pyarrow.fs`.

A store, a CommitLog file, an index folder: each may be a plain path (relative paths are made
absolute on the driver, by :func:`resolve`, so they mean the same on every executor) or a URI
of any filesystem pyarrow knows: ``file://``, ``s3://``, ``gs://``, ``hdfs://``. A URI's query
string configures its filesystem and travels with it, e.g.
``s3://bucket/out?endpoint_override=host:9000&scheme=http&region=us-east-1`` (see
:meth:`pyarrow.fs.FileSystem.from_uri`). Credentials come from the usual environment of each
process (``AWS_ACCESS_KEY_ID`` ..., on every executor too) or from the URI's user info
(``s3://KEY:SECRET@bucket/...``: then they travel with the URI and show in it). A
:class:`Location` pickles with its filesystem, so a task gets what the driver resolved.

Local files keep their memory maps; on other filesystems a task reads byte ranges
(:func:`read_records`) or, for readers that need a file on disk, a temporary local copy
(:func:`local_copy`). A finished file is published so that no reader ever sees part of it
(:func:`publish`): on a local disk, a hidden temporary name in the target folder, then a
rename; on an object store (S3, GCS), which has no rename, one upload of the finished local
file: the object appears only when its upload completes; elsewhere (HDFS ...), an upload to a
hidden temporary name, then the filesystem's rename.

>>> import tempfile, os
>>> d = resolve(tempfile.mkdtemp())
>>> write_bytes(d.child("a.bin"), b"0123456789")
>>> [(e.name, e.size) for e in list_dir(d)]
[('a.bin', 10)]
>>> resolve("file://" + d.path).child("a.bin").path == os.path.join(d.path, "a.bin")
True
"""
from __future__ import annotations

import contextlib
import os
import posixpath
import re
import secrets
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.fs as pafs

__all__ = ["Location", "Entry", "resolve", "is_uri", "exists", "is_dir", "is_file", "mkdir", "list_dir",
           "file_size", "read_records", "read_range", "open_write", "write_bytes", "publish",
           "delete_file", "delete_tree", "local_copy"]

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")

#: bytes copied per step when uploading or downloading a whole file
_COPY_CHUNK = 8 << 20


def is_uri(path: str | os.PathLike) -> bool:
    """True for ``scheme://...``, False for a plain path.

    >>> is_uri("s3://bucket/key"), is_uri("out/index")
    (True, False)
    """
    return isinstance(path, str) and _URI.match(path) is not None


@dataclass(frozen=True)
class Location:
    """A file or folder: its pyarrow filesystem, its path inside it, and how it is shown
    (``uri``: the absolute plain path, or the URI with its query string, so that
    ``resolve(str(loc))`` gives the same location again)."""

    fs: Any
    path: str
    uri: str = ""

    @property
    def local(self) -> bool:
        """On this machine's filesystem: readers may open ``path`` directly."""
        return isinstance(self.fs, pafs.LocalFileSystem)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))

    def child(self, *names: str) -> Location:
        """The location of `names` inside this folder.

        >>> resolve("s3://b/out?region=x").child("f").uri
        's3://b/out/f?region=x'
        """
        path = posixpath.join(self.path, *names)
        uri = self.uri or self.path
        if is_uri(uri):
            parts = urllib.parse.urlsplit(uri)
            uri = urllib.parse.urlunsplit(parts._replace(path=posixpath.join(parts.path or "/", *names)))
        else:
            uri = os.path.join(uri, *names)
        return Location(self.fs, path, uri)

    def __str__(self) -> str:
        return self.uri or self.path


def resolve(path: str | os.PathLike | Location) -> Location:
    """The filesystem and path of a plain path or URI, on the driver (before it is shipped).

    A plain path is made absolute against this process's working folder (executors run in
    folders of their own). A URI goes to :meth:`pyarrow.fs.FileSystem.from_uri`. Cost: no I/O
    for plain paths and ``file://``; building an S3 or GCS client for those schemes.

    >>> loc = resolve("out")
    >>> os.path.isabs(loc.path), loc.local
    (True, True)
    """
    if isinstance(path, Location):
        return path
    if is_uri(path):
        fs, inner = pafs.FileSystem.from_uri(str(path))
        return Location(fs, inner, str(path))
    absolute = os.path.abspath(os.fspath(path))
    return Location(pafs.LocalFileSystem(), absolute, absolute)


def _info(loc: Location) -> Any:
    return loc.fs.get_file_info(loc.path)


def exists(loc: Location) -> bool:
    return _info(loc).type != pafs.FileType.NotFound


def is_dir(loc: Location) -> bool:
    return _info(loc).type == pafs.FileType.Directory


def is_file(loc: Location) -> bool:
    return _info(loc).type == pafs.FileType.File


def mkdir(loc: Location) -> None:
    """Create the folder and its parents; nothing if it exists. On an object store this writes
    an empty marker object (pyarrow's convention), removed again by :func:`delete_tree`."""
    loc.fs.create_dir(loc.path, recursive=True)


@dataclass(frozen=True)
class Entry:
    """One entry of a folder listing."""

    name: str
    is_file: bool
    size: int | None


def list_dir(loc: Location) -> list[Entry]:
    """The entries directly inside folder `loc`, sorted by name. Raises NotADirectoryError when
    `loc` is not a folder. Cost: one listing request (object stores: one per 1,000 keys)."""
    if not is_dir(loc):
        raise NotADirectoryError(f"{loc}: not a directory")
    infos = loc.fs.get_file_info(pafs.FileSelector(loc.path, recursive=False))
    return sorted((Entry(i.base_name, i.type == pafs.FileType.File, i.size) for i in infos),
                  key=lambda e: e.name)


def file_size(loc: Location) -> int:
    info = _info(loc)
    if info.type != pafs.FileType.File:
        raise FileNotFoundError(f"{loc}: no such file")
    return int(info.size)


def read_range(loc: Location, offset: int, nbytes: int) -> bytes:
    """`nbytes` bytes of the file from `offset` (fewer at its end). Cost: one ranged read."""
    with loc.fs.open_input_file(loc.path) as f:
        return bytes(f.read_at(nbytes, offset))


def read_records(loc: Location, dtype: np.dtype, lo: int, hi: int) -> np.ndarray:
    """Records ``[lo, hi)`` of a file of packed `dtype` records: a read-only memory map on a
    local disk, else one ranged read into memory. Raises EOFError for a short file."""
    dtype = np.dtype(dtype)
    if hi <= lo:
        return np.zeros(0, dtype)
    if loc.local:
        return np.memmap(loc.path, dtype, mode="r", offset=lo * dtype.itemsize, shape=(hi - lo,))
    data = read_range(loc, lo * dtype.itemsize, (hi - lo) * dtype.itemsize)
    if len(data) != (hi - lo) * dtype.itemsize:
        raise EOFError(f"{loc}: {len(data)} bytes at record {lo}, expected {(hi - lo) * dtype.itemsize}")
    return np.frombuffer(data, dtype)


def open_write(loc: Location) -> Any:
    """A binary output stream to a new file (truncating an old one): ``with open_write(l) as f:
    f.write(buffer)``. Not atomic: for a file others may read while it is written, use
    :func:`publish`. On S3 the object appears when the stream closes."""
    if loc.local:
        return open(loc.path, "wb")
    return loc.fs.open_output_stream(loc.path)


def write_bytes(loc: Location, data: bytes) -> None:
    with open_write(loc) as f:
        f.write(data)


def _is_object_store(fs: Any) -> bool:
    return fs.type_name in ("s3", "gcs")


def _upload(local_path: str, loc: Location) -> None:
    with open(local_path, "rb") as src, loc.fs.open_output_stream(loc.path) as dst:
        while chunk := src.read(_COPY_CHUNK):
            dst.write(chunk)


def publish(local_path: str | os.PathLike, loc: Location) -> None:
    """Make the finished local file `local_path` appear whole at `loc` (the local file is
    consumed): a rename on a local disk (the same filesystem: give a temporary file in the
    target folder); on an object store (S3, GCS) one upload, whose object appears only when
    the upload completes, so readers see no object or the whole one; on other filesystems
    (HDFS ...) an upload under a hidden temporary name in the target folder, then a rename.
    Cost: the upload of the file's bytes (nothing on a local disk)."""
    local_path = os.fspath(local_path)
    try:
        if loc.local:
            os.replace(local_path, loc.path)
            return
        if _is_object_store(loc.fs):
            _upload(local_path, loc)
            return
        parent, name = posixpath.split(loc.path)
        tmp = posixpath.join(parent, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            _upload(local_path, Location(loc.fs, tmp))
            loc.fs.move(tmp, loc.path)
        except BaseException:
            with contextlib.suppress(OSError):
                loc.fs.delete_file(tmp)
            raise
    finally:
        if os.path.exists(local_path):
            os.unlink(local_path)


def delete_file(loc: Location) -> None:
    loc.fs.delete_file(loc.path)


def delete_tree(loc: Location) -> None:
    """Delete the folder and everything in it; nothing if it is gone already."""
    if loc.local:
        shutil.rmtree(loc.path, ignore_errors=True)
        return
    with contextlib.suppress(FileNotFoundError):
        if exists(loc):
            loc.fs.delete_dir(loc.path)


@contextlib.contextmanager
def local_copy(loc: Location) -> Iterator[str]:
    """A path on this machine holding the file's bytes, for readers that take only a path: the
    file itself on a local disk (no copy), else a download to a temporary folder (deleted on
    exit) under the file's own name (CommitLog readers take the start offset from it).
    Cost elsewhere than local: one download of the whole file, and as much local disk."""
    if loc.local:
        yield loc.path
        return
    folder = tempfile.mkdtemp(prefix="rmqlab-copy-")
    try:
        target = os.path.join(folder, loc.name)
        with loc.fs.open_input_stream(loc.path) as src, open(target, "wb") as dst:
            while chunk := src.read(_COPY_CHUNK):
                dst.write(chunk)
        yield target
    finally:
        shutil.rmtree(folder, ignore_errors=True)
