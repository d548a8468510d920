"""Small array and text helpers the checks share."""
from __future__ import annotations

import re

import numpy as np

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
