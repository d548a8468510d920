"""Text lines made column by column: a dump of millions of rows (``rmqlab kafka dump``) written
without a Python string a line. A line is a sequence of parts, each the same for every row (a
literal) or a column: int64 values in decimal, codes into a few choices (flags, names), or a
text a row. The C module ``rmqlab._textrows`` sizes the text exactly, then writes it once;
:func:`format_rows_py` and :func:`interleave_py` are its models (the tests compare them).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import rmqlab._textrows as _textrows

#: a part of a line: a str literal, an int column (decimal), (codes, choices) or a list of str
Part = Any


def _native_parts(parts: Sequence[Part]) -> list[tuple]:
    out: list[tuple] = []
    for part in parts:
        if isinstance(part, str):
            out.append((0, part.encode()))
        elif isinstance(part, tuple):
            codes, choices = part
            out.append((2, np.ascontiguousarray(codes, np.uint8), tuple(c.encode() for c in choices)))
        elif isinstance(part, list):
            out.append((3, [t.encode() for t in part]))
        else:
            out.append((1, np.ascontiguousarray(part, np.int64)))
    return out


def format_rows(parts: Sequence[Part], n: int) -> tuple[bytes, np.ndarray]:
    """The `n` rows of text `parts` make, end to end, and each row's end (int64 offsets into the
    text). A part is a str (the same in every row), an integer column of `n` values (decimal),
    a tuple (codes, choices) of `n` uint8 codes into at most 256 str choices, or a list of `n`
    str. Text is UTF-8. Units: bytes. Cost: two passes over the parts in C, O(rows x parts);
    about 100 MB of text a second.

    >>> text, ends = format_rows(["offset: ", np.array([7, -12]), " ok: ", (np.array([1, 0]), ("no", "yes")), "\\n"], 2)
    >>> text, ends.tolist()
    (b'offset: 7 ok: yes\\noffset: -12 ok: no\\n', [18, 37])
    """
    text, ends = _textrows.format_rows(_native_parts(parts), n)
    return text, np.frombuffer(ends, np.int64)


def interleave(head: bytes, head_ends: np.ndarray, rows: bytes, row_ends: np.ndarray, counts: np.ndarray) -> bytes:
    """Each head line, then the next ``counts[h]`` lines of `rows`, for every head line in order
    (a batch's line, then its records'). Ends as :func:`format_rows` gives them; the counts
    must add up to the rows. Cost: one copy of both texts.

    >>> h, he = format_rows(["b", np.array([1, 2]), "\\n"], 2)
    >>> r, re = format_rows(["| r", np.array([1, 2, 3]), "\\n"], 3)
    >>> interleave(h, he, r, re, np.array([2, 1]))
    b'b1\\n| r1\\n| r2\\nb2\\n| r3\\n'
    """
    return _textrows.interleave(head, np.ascontiguousarray(head_ends, np.int64), rows,
                                np.ascontiguousarray(row_ends, np.int64), np.ascontiguousarray(counts, np.int64))


def format_rows_py(parts: Sequence[Part], n: int) -> tuple[bytes, np.ndarray]:
    """:func:`format_rows` a row at a time in Python (its model)."""
    rows = []
    for r in range(n):
        pieces = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, tuple):
                pieces.append(part[1][int(part[0][r])])
            elif isinstance(part, list):
                pieces.append(part[r])
            else:
                pieces.append(str(int(part[r])))
        rows.append("".join(pieces).encode())
    return b"".join(rows), np.cumsum([len(x) for x in rows], dtype=np.int64)


def interleave_py(head: bytes, head_ends: np.ndarray, rows: bytes, row_ends: np.ndarray, counts: np.ndarray) -> bytes:
    """:func:`interleave` a line at a time in Python (its model)."""
    out, r = [], 0
    hs = [0, *map(int, head_ends)]
    rs = [0, *map(int, row_ends)]
    for h, c in enumerate(map(int, counts)):
        out.append(head[hs[h]:hs[h + 1]])
        out.append(rows[rs[r]:rs[r + c]])
        r += c
    return b"".join(out)
