"""Where a file holds data: the file system's SEEK_DATA / SEEK_HOLE, so that the checks for
zeros in preallocated files (a CommitLog's unwritten tail, an index file's unused entries) read
only the parts that were ever written. A hole reads as zeros, and reading one fills the page
cache with zero pages: a whole 1 GiB CommitLog file for a store of a few messages.
"""
from __future__ import annotations

import errno
import os


def data_spans(path: str | os.PathLike, start: int, end: int) -> list[tuple[int, int]] | None:
    """The byte ranges of [start, end) of the file at `path` that may hold data (everything
    else is a hole: zeros never written), in order; None when the file system cannot tell (the
    caller then reads it all). Cost: two lseek calls a range, no reads.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as fh:
    ...     _ = fh.truncate(1 << 22); _ = fh.seek(1 << 21); _ = fh.write(b"x"); fh.flush()
    ...     spans = data_spans(fh.name, 0, 1 << 22)
    >>> spans is None or (len(spans) == 1 and spans[0][0] <= (1 << 21) < spans[0][1])
    True
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    spans = []
    try:
        at = start
        while at < end:
            try:
                data = os.lseek(fd, at, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:   # no data at or after `at`
                    break
                return None
            if data >= end:
                break
            hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
            spans.append((data, hole))
            at = hole
    finally:
        os.close(fd)
    return spans
