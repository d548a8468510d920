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

    def __reduce__(self):
        # whole across a process boundary (a worker's error raised in the parent): its message
        # and every attribute, whatever the subclass's __init__ takes
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


def _rebuilt(cls: type[RmqlabError], args: tuple, state: dict) -> RmqlabError:
    """An error of `cls` with `args` and attributes `state`, as :meth:`RmqlabError.__reduce__`
    gave them."""
    e = cls.__new__(cls)
    e.args = args
    e.__dict__.update(state)
    return e


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


class InputError(RmqlabError):
    """The path given is not what was asked to read: it does not exist, or it is not a store
    directory, not a partition, not a file of that kind. Nothing is said about its bytes; the
    command line exits 3 for it (1 is for files that are damaged)."""


class AmbiguousSettingError(RmqlabError):
    """The files leave a real choice of a broker setting (two file sizes, two index geometries):
    the message lists `choices`, and the caller must pass one. The command line treats it as a
    usage error: an option is missing, nothing is wrong with the files."""

    def __init__(self, message: str, *, choices: tuple = (), path: str | os.PathLike | None = None,
                 field: str | None = None):
        super().__init__(message, path=path, field=field)
        self.choices = tuple(choices)


class ReadOnlyError(RmqlabError):
    """A write was attempted on a file opened for reading."""
