"""The life cycle the queue readers share: read-only maps of a folder's files, closed together.

A reader opens its files with ``mmap(..., ACCESS_READ)``, hands out NumPy views over them, and
closes every map when it is closed or leaves a ``with`` block. A view a caller still holds keeps
its map alive: closing never invalidates it (the map is released when the view is collected).
"""
from __future__ import annotations

from typing import Any, Self


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
