"""The rules of one index file's walk and of its stored times, each shown on a tiny real file.

IndexFile.selectPhyOffset (RocketMQ ``store/index/IndexFile.java``, read at commit 8fc57f1)
walks a slot's chain from the newest entry along ``prevIndex`` and stops at the first of six
conditions, checked in this order for every entry (:data:`WALK_STOPS`):

========================  ==========================================  ======================
stop                      Java condition                              where it is checked
========================  ==========================================  ======================
``max-num``               ``phyOffsets.size() >= maxNum``             before reading an entry
``negative-time-diff``    ``timeDiff < 0``                            after reading it
``end-of-chain``          ``prevIndexRead <= invalidIndex`` (0)       after the match test
``prev-out-of-range``     ``prevIndexRead > indexCount``              after the match test
``self-loop``             ``prevIndexRead == nextIndexToRead``        after the match test
``older-than-begin``      ``timeRead < begin``                        after the match test
========================  ==========================================  ======================

:func:`craft_walk_stop` writes, for one rule, a file whose walk stops by that rule and no
other: the same three puts of ``T#k`` each time, then (for the three rules only a damaged file
reaches) one field of one entry overwritten by :func:`write_entry_field`. putKey never writes a
negative time or a bad pointer; a torn write or a disk error does.

putKey stores ``timeDiff = (storeTimestamp - beginTimestamp) / 1000`` (Java's long division,
truncated toward zero) and then clamps it (:data:`TIME_DIFF_CLAMPS`): 0 when the header's
beginTimestamp is <= 0 (a new file, before its first entry sets it), Integer.MAX_VALUE when
larger, 0 when negative. :func:`time_diff_clamps` puts one message of each kind into a real
file and reads back what was stored.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rmqlab.formats.indexfile import ENTRY, Geometry, IndexFile, QueryTrace
from rmqlab.jvm.hashcode import index_hash
from rmqlab.jvm.longs import LONG_MAX

__all__ = ["WALK_STOPS", "TIME_DIFF_CLAMPS", "WalkStopCase", "craft_walk_stop", "walk_stop_cases",
           "write_entry_field", "time_diff_clamps"]

#: selectPhyOffset's stop conditions, in the order the Java code checks them: stop -> condition.
WALK_STOPS = {
    "max-num": "phyOffsets.size() >= maxNum",
    "negative-time-diff": "timeDiff < 0",
    "end-of-chain": "prevIndexRead <= invalidIndex (0)",
    "prev-out-of-range": "prevIndexRead > indexHeader.getIndexCount()",
    "self-loop": "prevIndexRead == nextIndexToRead",
    "older-than-begin": "timeRead < begin",
}
#: putKey's clamps of timeDiff, in the order the Java code tests them: name -> condition, result.
TIME_DIFF_CLAMPS = {
    "begin <= 0": "indexHeader.getBeginTimestamp() <= 0 -> timeDiff = 0",
    "above INT_MAX": "timeDiff > Integer.MAX_VALUE -> timeDiff = Integer.MAX_VALUE",
    "negative": "timeDiff < 0 -> timeDiff = 0",
}

#: The crafted files: 4 slots, 8 entries; the key and the store times of its three puts (ms).
_SLOTS, _ENTRIES = 4, 8
_KEY = "T#k"
_T0 = 1_718_000_000_000
_PUTS = ((100, _T0), (200, _T0 + 1_000), (300, _T0 + 2_000))   # entries 1, 2, 3 of the one chain


@dataclass
class WalkStopCase:
    """One crafted file and the query whose walk stops by `rule`.

    `edit` says which field was overwritten ("" when the file is as putKey wrote it).
    :meth:`trace` runs the broker's walk on the file (read-only) and records it.
    """

    rule: str
    condition: str
    path: Path
    key: str
    max_num: int
    begin: int
    end: int
    edit: str

    def trace(self) -> QueryTrace:
        """The walk, entry by entry (:meth:`IndexFile.trace_query`). Cost: a few entries read."""
        with IndexFile.open(self.path, _SLOTS, _ENTRIES) as f:
            return f.trace_query(self.key, self.max_num, self.begin, self.end)

    def unread(self) -> list[int]:
        """Entries of the key in the file that the walk never read (numbers, newest first)."""
        read = {s.entry for s in self.trace().steps}
        with IndexFile.open(self.path, _SLOTS, _ENTRIES) as f:
            same = f.used_entries["key_hash"].astype("int64") == index_hash(self.key)
        return [n for n in range(len(same), 0, -1) if same[n - 1] and n not in read]


def write_entry_field(path: str | os.PathLike, entry: int, field: str, value: int, *,
                      hash_slot_num: int, index_num: int) -> None:
    """Overwrite `field` (a field of the entry layout: key_hash, phy_offset, time_diff,
    prev_index) of entry `entry` in place: a deliberately damaged file, for showing what the
    broker does with one. Cost: one small write.

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "f")
    >>> with IndexFile.create(p, 4, 8) as f:
    ...     _ = f.put_key("T#k", 100, 1_718_000_000_000)
    >>> write_entry_field(p, 1, "prev_index", 1, hash_slot_num=4, index_num=8)
    >>> with IndexFile.open(p, 4, 8) as f:
    ...     f.entry(1).prev_index
    1

    Raises ValueError for an entry outside the file or a field the layout lacks.
    """
    geometry = Geometry(hash_slot_num, index_num)
    if not 0 <= entry < geometry.index_num:
        raise ValueError(f"entry {entry} is outside 0..{geometry.index_num - 1}")
    if field not in {f.name for f in ENTRY.fields}:
        raise ValueError(f"field must be one of {[f.name for f in ENTRY.fields]}, got {field!r}")
    with open(path, "r+b") as out:
        out.seek(geometry.entry_offset(entry) + ENTRY.offset(field))
        out.write(ENTRY.field_struct(field).pack(value))


def craft_walk_stop(rule: str, directory: str | os.PathLike) -> WalkStopCase:
    """A file in `directory` whose walk for ``T#k`` stops by `rule` (a key of :data:`WALK_STOPS`).

    Every file holds ``T#k`` put three times, 1 s apart (entries 1, 2, 3; the chain is 3 -> 2
    -> 1). The query reads the whole time range with maxNum 64, except: ``max-num`` asks for 2;
    ``older-than-begin`` begins between entries 2 and 3's times. The damaged files change entry
    2: ``negative-time-diff`` sets its timeDiff to -1, ``prev-out-of-range`` its prevIndex to
    9 (the header's indexCount is 4), ``self-loop`` its prevIndex to 2. Cost: one small file.

    >>> import tempfile
    >>> case = craft_walk_stop("self-loop", tempfile.mkdtemp())
    >>> t = case.trace()
    >>> t.stop, [s.entry for s in t.steps], t.results
    ('self-loop', [3, 2], [300, 200])

    Raises ValueError for another rule.
    """
    if rule not in WALK_STOPS:
        raise ValueError(f"rule must be one of {list(WALK_STOPS)}, got {rule!r}")
    path = Path(directory) / f"walk-stop-{rule}"
    with IndexFile.create(path, _SLOTS, _ENTRIES, overwrite=True) as f:
        for phy, ts in _PUTS:
            f.put_key(_KEY, phy, ts)
    max_num, begin, edit = 64, 0, ""
    if rule == "max-num":
        max_num = 2
    elif rule == "older-than-begin":
        begin = _T0 + 1_500
    elif rule in ("negative-time-diff", "prev-out-of-range", "self-loop"):
        field, value = {"negative-time-diff": ("time_diff", -1), "prev-out-of-range": ("prev_index", 9),
                        "self-loop": ("prev_index", 2)}[rule]
        write_entry_field(path, 2, field, value, hash_slot_num=_SLOTS, index_num=_ENTRIES)
        edit = f"entry 2: {field} := {value}"
    return WalkStopCase(rule, WALK_STOPS[rule], path, _KEY, max_num, begin, LONG_MAX, edit)


def walk_stop_cases(directory: str | os.PathLike) -> list[WalkStopCase]:
    """:func:`craft_walk_stop` for every rule, in the order of :data:`WALK_STOPS`."""
    return [craft_walk_stop(rule, directory) for rule in WALK_STOPS]


def time_diff_clamps(directory: str | os.PathLike) -> pd.DataFrame:
    """Each timeDiff clamp of putKey on a real file in `directory`, read back from its bytes.

    One file, four puts of ``T#k``: the first into the new file (its header's beginTimestamp is
    still 0, so the first rule stores 0 whatever the time, and the put then sets begin), one
    5.5 s later (stored as it is: 5 s), one 70 years later (a clock set far ahead: more than
    Integer.MAX_VALUE seconds) and one 5 s before the file's begin (a clock stepped back).
    Cost: one small file.

    >>> import tempfile
    >>> t = time_diff_clamps(tempfile.mkdtemp())
    >>> t[["clamp", "stored_time_diff"]].values.tolist()
    [['begin <= 0', 0], ['none', 5], ['above INT_MAX', 2147483647], ['negative', 0]]

    Columns: ``clamp`` (the rule of :data:`TIME_DIFF_CLAMPS` that applied, or "none"),
    ``store_timestamp`` (ms), ``begin_timestamp`` (the header's when the key was put),
    ``seconds`` ((store - begin) / 1000 truncated toward zero, before any clamp),
    ``stored_time_diff`` (read back from the entry), ``time_read`` (what a query compares:
    the file's final begin + stored seconds x 1000) and ``entry``.
    """
    path = Path(directory) / "time-diff-clamps"
    # (the clamp each put is made to meet, its store time): the rule itself is putKey's alone
    puts = [("begin <= 0", _T0), ("none", _T0 + 5_500), ("above INT_MAX", _T0 + 70 * 365 * 86_400_000),
            ("negative", _T0 - 5_000)]
    rows = []
    with IndexFile.create(path, _SLOTS, _ENTRIES, overwrite=True) as f:
        for n, (clamp, ts) in enumerate(puts, start=1):
            begin = f.header.begin_timestamp
            f.put_key(_KEY, 100 * n, ts)
            # Java's long division truncates toward zero (exact here: |ts - begin| < 2^53)
            rows.append({"clamp": clamp, "store_timestamp": ts, "begin_timestamp": begin,
                         "seconds": int((ts - begin) / 1000), "entry": n})
    with IndexFile.open(path, _SLOTS, _ENTRIES) as f:
        final_begin = f.header.begin_timestamp
        for row in rows:
            row["stored_time_diff"] = int(f.entry(row["entry"]).time_diff)
            row["time_read"] = final_begin + row["stored_time_diff"] * 1000
    return pd.DataFrame(rows, columns=["clamp", "store_timestamp", "begin_timestamp", "seconds",
                                       "stored_time_diff", "time_read", "entry"])
