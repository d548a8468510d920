"""Small array and text helpers the checks share."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

import numpy as np

from rmqlab.sparse import data_spans
from rmqlab.verify.report import Problem

#: CommitLog and ConsumeQueue file names: the 20-digit offset of their first byte.
OFFSET_FILE_NAME = re.compile(r"\d{20}")
#: IndexFile names: yyyyMMddHHmmssSSS.
INDEX_FILE_NAME = re.compile(r"\d{17}")


def first_problem(mask: np.ndarray, make) -> Problem | None:
    """`make(i, count)` for the first True of `mask`, None when there is none."""
    bad = np.flatnonzero(mask)
    return make(int(bad[0]), len(bad)) if len(bad) else None


def add_problem(out: list, p: Problem | None) -> None:
    if p is not None:
        out.append(p)


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
