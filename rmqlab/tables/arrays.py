"""Array helpers that NumPy lacks, or has only in a slow form."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np

import rmqlab._sortedsearch as _sortedsearch
from rmqlab.tables.spans import data_spans


def distinct(values: np.ndarray, *, runs: bool = False) -> np.ndarray:
    """The distinct values of a 1-D array, sorted: ``np.unique(values)`` by a sort. Cost:
    O(n log n), one sort. NumPy 2.3 and later answer a plain ``np.unique`` of integers through
    a hash table, slower than a sort for this input. With `runs` (values mostly in ascending
    runs already, as the key codes of messages in CommitLog order, only each message's few keys
    out of order): NumPy's stable sort, a merge sort that finds the runs, O(n) for sorted input
    and O(n log r) for r runs (about ten times the default sort's speed on such input, and
    about two thirds of it on shuffled input).

    >>> distinct(np.array([3, 1, 3, 2, 1])).tolist()
    [1, 2, 3]
    >>> distinct(np.array([1, 5, 2, 7, 7, 9]), runs=True).tolist()
    [1, 2, 5, 7, 9]
    """
    s = np.sort(np.asarray(values).reshape(-1), kind="stable" if runs else None)
    if len(s) < 2:
        return s
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def distinct_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a 1-D array, sorted, and how often each occurs:
    ``np.unique(values, return_counts=True)`` by one sort (see :func:`distinct`). Cost:
    O(n log n).

    >>> [a.tolist() for a in distinct_counts(np.array([3, 1, 3, 2, 1, 3]))]
    [[1, 2, 3], [2, 1, 3]]
    """
    s = np.sort(np.asarray(values).reshape(-1))
    if not len(s):
        return s, np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1]]))
    return s[starts], np.diff(np.append(starts, len(s)))


def search_sorted(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """``np.searchsorted(haystack, needles)`` (side "left": the first position whose element is
    not below each needle), as int64. For int64 arrays in C (``rmqlab._sortedsearch``), each
    search galloping from the previous answer: O(log gap) a needle when the needles rise, as
    the joins' entries and units do (in CommitLog order), O(log n) otherwise; other dtypes go to
    NumPy. `haystack` must be sorted, as for NumPy.

    >>> search_sorted(np.array([10, 20, 20, 30]), np.array([5, 20, 25, 40, 15])).tolist()
    [0, 1, 3, 4, 1]
    """
    a, v = np.asarray(haystack), np.asarray(needles)
    if a.dtype != np.int64 or v.dtype != np.int64 or a.ndim != 1 or v.ndim != 1:
        return np.searchsorted(a, v).astype(np.int64, copy=False)
    out = np.empty(len(v), np.int64)
    _sortedsearch.lower_bounds(np.ascontiguousarray(a), np.ascontiguousarray(v), out)
    return out


#: Elements :class:`FirstFlagged` reads of a mask at a time.
FLAG_CHUNK = 1 << 20


class FirstFlagged:
    """The first element a check flags over chunks taken in order, and how many it flags:
    ``np.flatnonzero(mask)`` reduced to its first index and length, in bounded memory.
    Cost: O(n) over the masks.

    >>> found = FirstFlagged()
    >>> found.add(np.array([False, False]), 0); found.add(np.array([False, True, True]), 2)
    >>> found.first, found.count
    (3, 2)
    """

    def __init__(self) -> None:
        self.first = -1
        self.count = 0

    def add(self, mask: np.ndarray, lo: int = 0) -> None:
        """Flags `mask` of the elements lo, lo + 1, ..."""
        bad = np.flatnonzero(mask)
        if len(bad):
            if self.first < 0:
                self.first = lo + int(bad[0])
            self.count += len(bad)

    @classmethod
    def of(cls, mask: np.ndarray) -> FirstFlagged:
        """The flags of a whole mask, FLAG_CHUNK elements at a time."""
        found = cls()
        for lo in range(0, len(mask), FLAG_CHUNK):
            found.add(mask[lo:lo + FLAG_CHUNK], lo)
        return found


def first_nonzero(a: np.ndarray, chunk: int = 1 << 24, *, path=None, offset: int = 0) -> int:
    """Index of the first non-zero byte of the uint8 array `a`, -1 when all zero. Scans in
    chunks so a mostly-zero 420 MB region costs no index array; with `path` (the file `a` maps,
    from byte `offset`), only the parts of the file that hold data (holes are zeros: the unused
    entries of a preallocated index file are never read). Cost: O(len(a)), O(data) with `path`.
    """
    for lo, hi in _spans(a, path, offset):
        for at in range(lo, hi, chunk):
            part = a[at:min(at + chunk, hi)]
            if part.any():
                return at + int(np.argmax(part != 0))
    return -1


def last_nonzero(a: np.ndarray, chunk: int = 1 << 24, *, path=None, offset: int = 0) -> int:
    """Index of the last non-zero byte of the uint8 array `a`, -1 when all zero; `path` and
    `offset` as for :func:`first_nonzero`. Cost: O(len(a)), O(data) with `path`."""
    for lo, hi in reversed(_spans(a, path, offset)):
        for at in range(hi, lo, -chunk):
            part = a[max(at - chunk, lo):at]
            if part.any():
                return max(at - chunk, lo) + int(np.flatnonzero(part)[-1])
    return -1


def _spans(a: np.ndarray, path, offset: int) -> list[tuple[int, int]]:
    """The ranges of `a` to read: where the file holds data, or all of `a`."""
    spans = data_spans(path, offset, offset + len(a)) if path is not None else None
    if spans is None:
        return [(0, len(a))]
    return [(lo - offset, hi - offset) for lo, hi in spans]


def gather_field(buf: np.ndarray, record_offsets: np.ndarray, layout, name: str) -> np.ndarray:
    """Field `name` of `layout` read from the record starting at each of `record_offsets` in the
    byte array `buf`, widened to int64. Cost: O(records), NumPy."""
    f = layout.field(name)
    idx = (record_offsets + f.offset)[:, None] + np.arange(f.size, dtype=np.int64)
    return buf[idx].view(layout.dtype[name]).reshape(-1).astype(np.int64)


def most_common(values: Iterable[int]) -> int | None:
    c = Counter(values)
    return c.most_common(1)[0][0] if c else None
