"""The checks of one IndexFile."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import CorruptIndexError, RmqlabError
from rmqlab.formats.indexfile import (
    ENTRY,
    HEADER,
    NEW_SLOT,
    IndexFile,
    SlotCountRule,
    time_diff_seconds,
)
from rmqlab.formats.indexgeometry import infer_index_geometry
from rmqlab.tables.arrays import first_nonzero
from rmqlab.verify.report import FileReport, Problem, make_problem, problem_from_error

_INDEX_CODES = (
    ("slot value outside", "index.slot-range"),
    ("negative key_hash", "index.negative-hash"),
    ("negative time_diff", "index.negative-time-diff"),
    ("prev_index not older", "index.prev-range"),
    ("prev_index links entries of different slots", "index.prev-slot"),
    ("slot points at an entry hashed to another slot", "index.slot-chain"),
    ("referenced by more than one", "index.entry-refs"),
    ("not reachable", "index.entry-refs"),
    ("slot-count rule", "index.hash-slot-count"),
)


def _index_code(err: RmqlabError) -> str:
    for text, code in _INDEX_CODES:
        if text in err.reason:
            return code
    if (err.field or "").startswith("header"):
        return "index.header"
    return "index.invariant"


def _index_checks(f: IndexFile) -> tuple[dict[str, Any], list[Problem]]:
    """The per-file checks of an open index file: its own problems() plus header against
    entries, zero tail and chain time order. Cost: O(file), the invariants in one C pass."""
    g, h, p = f.geometry, f.header, str(f.path)
    inv = f.invariants()
    out = [problem_from_error(_index_code(e), e) for e in f.problems(inv)]
    count = min(h.index_count, g.index_num)
    e = f.used_entries
    n = len(e)
    counts = {"keys": h.keys, "capacity": g.capacity, "hash_slot_num": g.hash_slot_num,
              "index_num": g.index_num, "slots_used": inv.occupied, "longest_chain": inv.longest_chain,
              "file_size": g.file_size, "begin_timestamp": h.begin_timestamp, "end_timestamp": h.end_timestamp,
              "begin_phy_offset": h.begin_phy_offset, "end_phy_offset": h.end_phy_offset,
              "is_write_full": f.is_write_full}

    def header(fld, what):
        out.append(make_problem("index.header-range", CorruptIndexError, what, p, HEADER.offset(fld),
                            f"header.{fld}"))

    if n:
        first, last = e[0], e[n - 1]
        if int(first["phy_offset"]) != h.begin_phy_offset:
            header("begin_phy_offset", f"begin_phy_offset {h.begin_phy_offset} but entry 1 (the first put, "
                                       f"which sets it) has phy_offset {int(first['phy_offset'])}")
        if int(last["phy_offset"]) != h.end_phy_offset:
            header("end_phy_offset", f"end_phy_offset {h.end_phy_offset} but the last entry ({n}) has "
                                     f"phy_offset {int(last['phy_offset'])}")
        if n == 1 and h.begin_timestamp != h.end_timestamp:
            header("end_timestamp", f"one entry, so begin_timestamp and end_timestamp are the same put's, "
                                    f"but they are {h.begin_timestamp} and {h.end_timestamp}")
        elif n > 1:
            want = time_diff_seconds(h.end_timestamp, h.begin_timestamp)
            if int(last["time_diff"]) != want:
                header("end_timestamp", f"end_timestamp {h.end_timestamp} is {want} s after begin_timestamp "
                                        f"{h.begin_timestamp}, but the last entry ({n}) has time_diff "
                                        f"{int(last['time_diff'])}")
    # entry 0 and everything from index_count on: never written, so zeros
    raw = f.entries.view(np.uint8)
    nz = first_nonzero(raw[:ENTRY.size])
    if nz >= 0:
        out.append(make_problem("index.tail", CorruptIndexError, "entry 0 is never written but holds non-zero bytes",
                            p, g.entries_offset + nz, "entry[0]"))
    start = max(count, 1) * ENTRY.size
    nz = first_nonzero(raw[start:], path=f.path, offset=g.entries_offset + start)
    if nz >= 0:
        entry = (start + nz) // ENTRY.size
        out.append(make_problem("index.tail", CorruptIndexError,
                            f"entry {entry} lies at or after index_count {h.index_count} but holds non-zero "
                            f"bytes (a put the header does not count, or a wrong index_count)",
                            p, g.entries_offset + ENTRY.size * entry, f"entry[{entry}]"))
    # time order along chains: newest first, so an older entry never has a greater time_diff
    # (entry 1's is measured from a follow-on file's seed; its own time is begin: 0 here)
    if inv.time_order.total:
        first = inv.time_order.first
        num, older = first + 1, int(e["prev_index"][first])
        older_diff = 0 if older == 1 else int(e["time_diff"][older - 1])
        out.append(make_problem(
            "index.time-order", CorruptIndexError,
            f"entry {num} has time_diff {int(e['time_diff'][first])} s but the older entry {older} on its "
            f"chain has {older_diff} s: chains run newest to oldest, and the "
            f"broker's walk stops at the first entry older than a query's begin (a broker clock stepping "
            f"back does this too)", p, g.entry_offset(num) + ENTRY.offset("time_diff"), "entry.time_diff",
            count=inv.time_order.total, severity="warning"))
    return counts, out


def verify_index_file(path: str | os.PathLike, hash_slot_num: int | None = None, index_num: int | None = None,
                      *, slot_count_rule: SlotCountRule = NEW_SLOT) -> FileReport:
    """The per-file checks of one index file (see the module docstring). Read-only.

    With neither count the geometry is inferred (:func:`infer_index_geometry`). Cost: O(file),
    one C pass over the slots and written entries (IndexFile.invariants), then the zero tail.
    """
    rep, f = open_index(Path(path), hash_slot_num, index_num, slot_count_rule)
    if f is not None:
        f.close()
    return rep


def open_index(path: Path, hsn, inum, rule, *, checks: bool = True) -> tuple[FileReport, IndexFile | None]:
    """The index file at `path` opened with the geometry given (or inferred), and its report:
    its per-file checks (O(file)), or without `checks` only a geometry it cannot be read with
    (then :func:`index_checks_apart` makes the rest, in a worker). Cost: the checks, or O(1)."""
    rep = FileReport(str(path), "index")
    try:
        if hsn is None and inum is None:
            g = infer_index_geometry(path)
            hsn, inum = g.hash_slot_num, g.index_num
        f = IndexFile.open(path, hsn, inum, slot_count_rule=rule, strict=False)
    except RmqlabError as e:
        rep.counts = {"unreadable": True}
        rep.problems.append(problem_from_error("index.geometry", e))
        return rep, None
    if checks:
        rep.counts, rep.problems = _index_checks(f)
    return rep, f


def index_checks_apart(path: Path, hsn, inum, rule) -> tuple[dict[str, Any], list[Problem]]:
    """The per-file checks of one index file on its own (in a worker process): its report's
    counts and problems, a few dozen numbers and the problems found. Cost: O(file), as
    :func:`open_index`."""
    rep, f = open_index(path, hsn, inum, rule)
    if f is not None:
        f.close()
    return rep.counts, rep.problems
