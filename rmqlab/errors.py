"""Typed errors for bad input files.

Every error that describes bytes on disk names the file, the byte offset and the field, so a
user can open a hex viewer at the right place. Bad *arguments* (a negative count, a key that is
not a string) raise the usual ValueError / TypeError instead.
"""
from __future__ import annotations

import os


class RmqlabError(Exception):
    """Base class of every error rmqlab raises about a file's contents or geometry."""

    def __init__(self, message: str, *, path: str | os.PathLike | None = None,
                 offset: int | None = None, field: str | None = None):
        self.path = None if path is None else os.fspath(path)
        self.offset = offset
        self.field = field
        self.reason = message
        where = []
        if self.path is not None:
            where.append(self.path)
        if offset is not None:
            where.append(f"offset {offset}")
        if field is not None:
            where.append(field)
        super().__init__(f"{': '.join(where)}: {message}" if where else message)


class FormatError(RmqlabError):
    """The bytes do not follow the format (a field holds an impossible value)."""


class GeometryError(FormatError):
    """The file size does not match the geometry given, or the geometry cannot be inferred."""


class TruncatedFileError(FormatError):
    """The file ends before a structure it must contain."""


class CorruptIndexError(FormatError):
    """An index violates an invariant: pointer out of range, a cycle, a chain in the wrong slot."""


class UnsupportedError(RmqlabError):
    """The store holds something the broker answers from a part rmqlab does not read yet; the
    message names it and why."""


class ReadOnlyError(RmqlabError):
    """A write was attempted on a file opened for reading."""
