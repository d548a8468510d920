"""What the folders of mapped files share: the life cycle of the queue readers (read-only maps
of a folder's files, closed together), and the rule that tells a folder's mapped file size from
its file names (:func:`mapped_file_size_of`).

A reader opens its files with ``mmap(..., ACCESS_READ)``, hands out NumPy views over them, and
closes every map when it is closed or leaves a ``with`` block. A view a caller still holds keeps
its map alive: closing never invalidates it (the map is released when the view is collected).
"""
from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, Self

from rmqlab.errors import AmbiguousSettingError

#: Files whose bytes are not on this machine yet, by absolute path: the function that brings
#: them. :mod:`rmqlab.spark.mirror` leaves a store's log files (the CommitLog's, a DLedger
#: ledger's data files) remote until a reader here opens one, so every read of such a file's
#: bytes goes through :func:`present`.
_STAND_INS: dict[str, Callable[[], None]] = {}


def stand_in(path: str | os.PathLike, bring: Callable[[], None] | None) -> None:
    """Say that the file at `path` stands in for one elsewhere: `bring()` puts its bytes there
    before any reader of the format modules opens it (and is called before every such open, so
    it must be cheap once done). ``bring=None`` withdraws it. A folder's listing sees the
    stand-in itself, so it must have the real file's name and size."""
    key = os.path.abspath(path)
    if bring is None:
        _STAND_INS.pop(key, None)
    else:
        _STAND_INS[key] = bring


def present(path: str | os.PathLike) -> str | os.PathLike:
    """`path`, its bytes brought here first when it stands in for a remote file
    (:func:`stand_in`). Cost: nothing without stand-ins; a dictionary look-up with them.

    >>> present("00000000000000000000")
    '00000000000000000000'
    """
    if _STAND_INS:
        bring = _STAND_INS.get(os.path.abspath(path))
        if bring is not None:
            bring()
    return path


def close_handles(handles: list[Any]) -> None:
    """Close maps and files, the last opened first. A map whose NumPy view someone still holds
    cannot close now; it closes when that view is collected. Cost: O(handles)."""
    for h in reversed(handles):
        try:
            h.close()
        except BufferError:
            pass


class MappedFolder:
    """Base of the readers over a folder of mapped files (ConsumeQueue, ConsumeQueueExt,
    BatchConsumeQueue): :meth:`close` and the context manager.

    A subclass sets ``self._handles`` (the maps, in opening order) and ``self._closed = False``,
    and overrides :meth:`_release` to drop its own views before the maps close.
    Cost: closing is O(files).
    """

    _handles: list[Any]
    _closed: bool

    def _release(self) -> None:
        """Drop the reader's own references to views of the maps (none by default)."""

    def close(self) -> None:
        """Unmap and close the files. NumPy views handed out keep a map alive until collected."""
        if self._closed:
            return
        self._release()
        close_handles(self._handles)
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FileSizeEvidence(NamedTuple):
    """What a folder of mapped files says of their mapped file size: `size` (None: nothing to
    tell it by) and the `reason`, in words."""
    size: int | None
    reason: str


def mapped_file_size_of(folders: Iterable[Sequence[tuple[int, int]]], *, what: str, unit: int = 1,
                        path: str | os.PathLike | None = None) -> FileSizeEvidence:
    """The mapped file size the files of `folders` were written with: each folder a sorted list
    of (start offset from the file's 20-digit name, size in bytes) of one MappedFileQueue.

    MappedFileQueue names each new file by its start offset, the previous file's start plus the
    mapped file size, and creates it at that size (read at rocketmq-all-4.9.7 and 5.3.1). So the
    steps between the names of a folder's files are multiples of the size (a lost file leaves a
    gap of one more), and no file is larger. The size is the largest file's where it divides
    every step (a whole file, as created), else the greatest common divisor of the steps (every
    file cut by a copy); a file larger than that divisor leaves a real choice. Without two
    files in any folder, the size every non-empty file has decides (a multiple of `unit`, the
    bytes of one entry: the broker rounds its setting to whole units). No file, or only empty
    ones: size None. Raises :class:`AmbiguousSettingError` listing the sizes when the files
    disagree. `what` names the setting in messages. Cost: O(files), no file is opened.

    >>> mapped_file_size_of([[(0, 8192), (8192, 8192), (16384, 0)]], what="mappedFileSizeCommitLog")
    FileSizeEvidence(size=8192, reason='file names step by 8192 bytes (1 folder of 2 or more files)')
    >>> mapped_file_size_of([[(0, 200)], [(0, 200)]], what="mappedFileSizeConsumeQueue", unit=20).size
    200
    >>> mapped_file_size_of([], what="mappedFileSizeConsumeQueue").size is None
    True
    """
    steps: Counter[int] = Counter()
    sizes: Counter[int] = Counter()
    any_file = False
    for files in folders:
        any_file = any_file or bool(files)
        starts = [start for start, _ in files]
        diffs = [b - a for a, b in zip(starts, starts[1:], strict=False) if b > a]
        if diffs:
            steps[min(diffs)] += 1
        sizes.update(size for _, size in files if size > 0)
    if steps:
        n = sum(steps.values())
        folders_text = f"{n} folder{'s' * (n != 1)} of 2 or more files"
        step = math.gcd(*steps)
        largest = max((size for size in sizes if size % unit == 0), default=0)
        if largest > step:
            raise AmbiguousSettingError(
                f"file names step by {', '.join(str(s) for s in sorted(steps))} bytes in different folders, and a "
                f"file of {largest} bytes is larger than their common divisor {step}: the broker writes every "
                f"file of a kind with one {what}", choices=tuple(sorted(steps)), path=path, field=what)
        if largest and step % largest == 0 and largest != step:
            return FileSizeEvidence(largest, f"file names step by multiples of {largest} bytes ({folders_text}), "
                                             f"and whole files are {largest} bytes")
        return FileSizeEvidence(step, f"file names step by {step} bytes ({folders_text})")
    if not sizes:
        return FileSizeEvidence(None, "no file" if not any_file else "only empty files")
    whole = {s: n for s, n in sizes.items() if s % unit == 0}
    if len(whole) == 1:
        (size, n), = whole.items()
        return FileSizeEvidence(size, f"every non-empty file is {size} bytes ({n} file{'s' * (n != 1)})")
    if not whole:
        return FileSizeEvidence(None, f"no file is a whole number of {unit}-byte units")
    listed = ", ".join(f"{s} bytes ({n} file{'s' * (n != 1)})" for s, n in sorted(whole.items()))
    raise AmbiguousSettingError(
        f"files of {len(whole)} sizes and no folder of two files to tell {what} by their names: {listed}",
        choices=tuple(sorted(whole)), path=path, field=what)


def likely_mapped_file_size(folders: Iterable[Sequence[tuple[int, int]]], *, unit: int = 1) -> int | None:
    """The mapped file size for a reader that must go on where the files disagree (verify
    reports each file against it, recovery repairs to it): :func:`mapped_file_size_of`'s
    answer, else the most common non-empty size among its choices. None: nothing tells.
    Cost: O(files).

    >>> likely_mapped_file_size([[(0, 400)], [(0, 400)], [(0, 600)]], unit=20)
    400
    """
    folders = [list(f) for f in folders]
    try:
        return mapped_file_size_of(folders, what="the file size", unit=unit).size
    except AmbiguousSettingError as e:
        counts = Counter(size for files in folders for _, size in files if size in e.choices)
        return counts.most_common(1)[0][0] if counts else min(e.choices)
