"""The checks across files: index entries and ConsumeQueue units against the messages, and the
checkpoint against the data."""
from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import CorruptIndexError, FormatError
from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.formats.indexfile import ENTRY, HEADER, IndexFile, time_diff_seconds
from rmqlab.jvm.longs import INT_MAX
from rmqlab.rules.dispatch import (
    TRANSACTION_PREPARED_TYPE,
    goes_to_consume_queue_many,
    goes_to_index_many,
    transaction_type,
)
from rmqlab.tables.arrays import search_sorted
from rmqlab.verify.check_commitlog import KEY_CODE_HASH_BITS, CommitLogScan, Messages
from rmqlab.verify.check_consumequeue import open_ext
from rmqlab.verify.common import add_problem
from rmqlab.verify.report import FileReport, Problem, make_problem

#: Index entries, queue units and message keys checked at a time: the cross-file checks hold a
#: few arrays of this many whatever a file or the store holds (a full default-size index file
#: has 19,999,999 entries; checked whole, they took about 4 GB).
CROSS_CHUNK = 1 << 18


class RunningFirst:
    """One check over windows of the message table: how many elements it flags, and the
    problem of the first (the lowest ordinal: entry number, queue offset, message order),
    worded when it is found with the window that holds its message."""

    def __init__(self) -> None:
        self.ordinal: int | None = None
        self.problem: Problem | None = None
        self.count = 0

    def add(self, mask: np.ndarray, ordinals: np.ndarray, make) -> None:
        """`mask` flags elements whose ordinals are `ordinals`; `make(i)` words element i."""
        bad = np.flatnonzero(mask)
        if not len(bad):
            return
        self.count += len(bad)
        i = int(bad[np.argmin(ordinals[bad])])
        if self.ordinal is None or int(ordinals[i]) < self.ordinal:
            self.ordinal, self.problem = int(ordinals[i]), make(i)

    def merge(self, other: RunningFirst, shift: int = 0) -> None:
        """Take in what `other` found (the same check over other windows, its ordinals `shift`
        below this one's): the counts add, the lowest ordinal's problem stays."""
        self.count += other.count
        if other.ordinal is not None and (self.ordinal is None or other.ordinal + shift < self.ordinal):
            self.ordinal, self.problem = other.ordinal + shift, other.problem

    def result(self) -> Problem | None:
        """The first problem, its count that of every window."""
        p = self.problem
        if p is None:
            return None
        return make_problem(p.check, type(p.error), p.message, p.path, p.offset, p.field, count=self.count,
                            severity=p.severity)


def merge_checks(checks: dict[str, RunningFirst], found: dict[str, RunningFirst]) -> None:
    """Take into each of `checks` what the same check found over other windows (`found`, by name)."""
    for name, other in found.items():
        checks[name].merge(other)


def is_ordered(column: np.ndarray) -> bool:
    """Whether the (mapped) int column never decreases, read CROSS_CHUNK values at a time."""
    last = None
    for lo in range(0, len(column), CROSS_CHUNK):
        part = np.asarray(column[lo:lo + CROSS_CHUNK], np.int64)
        if (last is not None and part[0] < last) or (part[1:] < part[:-1]).any():
            return False
        last = part[-1]
    return True


def in_window(column: np.ndarray, w: Messages, ordered: bool) -> Iterator[np.ndarray]:
    """Indices (ascending) of the elements of the (mapped) offset column that window `w`
    answers for, at most CROSS_CHUNK at a time. An `ordered` column costs two binary searches
    (the broker appends entries and units in CommitLog order); any other a pass over it."""
    n = len(column)
    if ordered:
        lo = 0 if w.start is None else bisect.bisect_left(_Ints(column), w.start)
        hi = n if w.stop is None else bisect.bisect_left(_Ints(column), w.stop)
        for a in range(lo, hi, CROSS_CHUNK):
            yield np.arange(a, min(a + CROSS_CHUNK, hi), dtype=np.int64)
        return
    for a in range(0, n, CROSS_CHUNK):
        part = np.asarray(column[a:a + CROSS_CHUNK], np.int64)
        idx = a + np.flatnonzero(w.contains(part))
        if len(idx):
            yield idx


def window_units(segments, w: Messages, ordered: dict[str, bool], unit_size: int):
    """The units of a queue's files that window `w` answers for, gathered: `segments` gives
    (path, ordinal of the file's first unit, structured units) a file; `ordered` caches which
    files' commitlog offsets never decrease (:func:`in_window`). Returns (units, ordinals,
    byte positions in their files, paths, file index of each unit into paths), or None when
    the window holds none."""
    parts = []
    for path, first, units in segments:
        co = units["commitlog_offset"]
        if path not in ordered:
            ordered[path] = is_ordered(co)
        for idx in in_window(co, w, ordered[path]):
            parts.append((path, first, idx, units[idx]))
    if not parts:
        return None
    return (np.concatenate([u for *_, u in parts]),
            np.concatenate([first + idx for _, first, idx, _ in parts]),
            np.concatenate([idx * unit_size for _, _, idx, _ in parts]),
            [path for path, *_ in parts],
            np.concatenate([np.full(len(idx), k, np.int32) for k, (_, _, idx, _) in enumerate(parts)]))


class _Ints:
    """A mapped column seen by bisect as Python ints (one element read a probe)."""

    def __init__(self, column: np.ndarray):
        self.column = column

    def __len__(self) -> int:
        return len(self.column)

    def __getitem__(self, i: int) -> int:
        return int(self.column[i])


class _Entries:
    """Entries `idx` (0-based, ascending) of an index file with the message each points at in
    window `msgs`: the facts every check of :class:`IndexFileCross` reads."""

    def __init__(self, f: IndexFile, msgs: Messages, seed: int | None, idx: np.ndarray):
        e = f.used_entries[idx]
        self.numbers = idx + 1
        self.off = f.geometry.entries_offset + ENTRY.size * self.numbers
        self.phy = e["phy_offset"].astype(np.int64)
        self.kh = e["key_hash"].astype(np.int64)
        self.td = e["time_diff"].astype(np.int64)
        self.expired = msgs.expired(self.phy)
        row, self.hit = msgs.lookup(self.phy)
        if not msgs.n:
            return
        self.r = np.where(self.hit, row, 0)
        self.codes = (self.r << KEY_CODE_HASH_BITS) | np.where(self.kh >= 0, self.kh, 0)
        uniq, _ = msgs.key_codes
        self.at = search_sorted(uniq, self.codes)
        matched = self.hit & (self.kh >= 0) & (self.at < len(uniq))
        matched[matched] = uniq[self.at[matched]] == self.codes[matched]
        self.matched = matched
        # the TAGS key of a 5.4.0+ broker (topic#T#tags): matched on its own, whether it counts
        # is the store's (IndexDirCross.tag_keys)
        tags = msgs.tag_codes
        self.tag_at = search_sorted(tags, self.codes)
        tag_matched = self.hit & (self.kh >= 0) & (self.tag_at < len(tags))
        tag_matched[tag_matched] = tags[self.tag_at[tag_matched]] == self.codes[tag_matched]
        self.tag_matched = tag_matched
        self.rolled = self.hit & ~goes_to_index_many(msgs.sys_flag[self.r])
        self.want = time_diff_seconds(msgs.store_ts[self.r], f.header.begin_timestamp)
        self.checkable = self.hit & (self.numbers >= 2)
        if seed is not None and len(idx) and idx[0] == 0:
            self.want[0] = time_diff_seconds(int(msgs.store_ts[self.r[0]]), seed)
            self.checkable[0] = self.hit[0]


class IndexFileCross:
    """The entries of one open index file against the message table, a window at a time:
    every entry at a message start, its key hash one of that message's keys, no rolled-back
    transaction record, its time diff from its message's store time, and the header's time
    range from the first and last entries' messages."""

    def __init__(self, f: IndexFile, seed: int | None, tag_keys: bool | None = None, ordered: bool | None = None):
        self.f, self.seed = f, seed
        self.tag_keys = tag_keys      # TAGS keys are the broker's: True 5.4.0+, False older, None not known
        self.tag_entries = 0          # entries only a TAGS key explains
        self.n = len(f.used_entries)
        # whether the entries' phy offsets never decrease (`ordered`: known already)
        self.ordered = ordered if ordered is not None else is_ordered(f.used_entries["phy_offset"]) if self.n else True
        self.checks = {name: RunningFirst() for name in ("boundary", "hash", "rollback", "time")}
        self.header: dict[str, Problem] = {}
        self.expired = 0

    def add(self, w: Messages, present: np.ndarray | None, tag_present: np.ndarray | None = None) -> None:
        """Check the entries window `w` answers for; mark in `present` (one flag per distinct key
        code of the window) and `tag_present` (one per TAGS key code) the codes an entry holds."""
        if not self.n:
            return
        for idx in in_window(self.f.used_entries["phy_offset"], w, self.ordered):
            self._add(_Entries(self.f, w, self.seed, idx), w, present, tag_present)

    def _add(self, a: _Entries, w: Messages, present: np.ndarray | None,
             tag_present: np.ndarray | None = None) -> None:
        p, h = str(self.f.path), self.f.header
        ordinals = a.numbers - 1
        self.expired += int(a.expired.sum())
        self.checks["boundary"].add(~a.hit & ~a.expired, ordinals, lambda i: make_problem(
            "index.phy-offset", CorruptIndexError,
            f"entry {a.numbers[i]}: phy_offset {a.phy[i]} is not where a message starts: {w.where(int(a.phy[i]))}",
            p, int(a.off[i]) + ENTRY.offset("phy_offset"), "entry.phy_offset"))
        if not w.n:
            return
        if present is not None:
            present[a.at[a.matched]] = True
        if tag_present is not None:
            tag_present[a.tag_at[a.tag_matched]] = True
        tag_only = a.tag_matched & ~a.matched
        self.tag_entries += int(tag_only.sum())
        # a TAGS key is a key of its message unless the store is known to be older than 5.4.0
        matched = a.matched if self.tag_keys is False else a.matched | a.tag_matched
        for i in np.flatnonzero((a.numbers == 1) | (a.numbers == self.n)):
            if not a.hit[i]:
                continue
            ts = int(w.store_ts[a.r[i]])
            if a.numbers[i] == 1 and ts != h.begin_timestamp:
                self.header["begin"] = make_problem(
                    "index.header-range", CorruptIndexError,
                    f"begin_timestamp {h.begin_timestamp} but entry 1's message (the first put, which sets it) "
                    f"was stored at {ts}", p, HEADER.offset("begin_timestamp"), "header.begin_timestamp")
            if a.numbers[i] == self.n and ts != h.end_timestamp:
                self.header["end"] = make_problem(
                    "index.header-range", CorruptIndexError,
                    f"end_timestamp {h.end_timestamp} but the last entry's message ({self.n}) was stored at {ts}",
                    p, HEADER.offset("end_timestamp"), "header.end_timestamp")
        self.checks["hash"].add(a.hit & ~matched, ordinals, lambda i: make_problem(
            "index.key-hash", CorruptIndexError,
            f"entry {a.numbers[i]}: key_hash {a.kh[i]} is not index_hash(topic#key) of any key of the "
            f"message at {a.phy[i]} ({w.describe(int(a.r[i]))})", p,
            int(a.off[i]) + ENTRY.offset("key_hash"), "entry.key_hash"))
        self.checks["rollback"].add(a.rolled, ordinals, lambda i: make_problem(
            "index.rolled-back", CorruptIndexError,
            f"entry {a.numbers[i]}: the message at {a.phy[i]} is a rolled-back transaction record, which "
            f"buildIndex never indexes", p, int(a.off[i]) + ENTRY.offset("phy_offset"), "entry.phy_offset"))

        def bad_time(i):
            first = a.numbers[i] == 1
            base = self.seed if first else h.begin_timestamp
            return make_problem("index.entry-time", CorruptIndexError,
                                f"entry {a.numbers[i]}: time_diff {a.td[i]} s but its message was stored at "
                                f"{int(w.store_ts[a.r[i]])}, {a.want[i]} s after "
                                f"{'the seed' if first else 'begin_timestamp'} {base}", p,
                                int(a.off[i]) + ENTRY.offset("time_diff"), "entry.time_diff")

        self.checks["time"].add(a.checkable & (a.td != a.want), ordinals, bad_time)

    def state(self) -> tuple:
        """What the checks found (picklable), for :meth:`merge`."""
        return self.checks, self.header, self.expired, self.tag_entries

    def merge(self, state: tuple) -> None:
        """Take in :meth:`state` of the same file's entries checked against other windows."""
        checks, header, expired, tag_entries = state
        merge_checks(self.checks, checks)
        self.header.update(header)
        self.expired += expired
        self.tag_entries += tag_entries

    def problems(self, notes: list[str]) -> list[Problem]:
        out: list[Problem] = []
        if self.expired:
            notes.append(f"{self.f.path}: {self.expired} entries point below the CommitLog's first file "
                         f"(expired messages): not checked")
        add_problem(out, self.checks["boundary"].result())
        for name in ("begin", "end"):
            add_problem(out, self.header.get(name))
        for name in ("hash", "rollback", "time"):
            add_problem(out, self.checks[name].result())
        return out


class IndexDirCross:
    """The index files of a store against its messages, a window of the message table at a
    time (:meth:`add`), and against each other: files written one after the other, and every
    key of every message inside the indexed range holding an entry (:meth:`problems`)."""

    def __init__(self, opened: Sequence[tuple[object, IndexFile | None]], tag_keys: bool | None = None,
                 ordered: list[bool] | None = None):
        #: whether buildIndex put each message's TAGS key (topic#T#tags, 5.4.0+): True / False
        #: from the broker version, None: judged from the data (entries that only a TAGS key
        #: explains mean a 5.4.0+ broker wrote the index)
        self.tag_keys = tag_keys
        self.live = [f for _, f in opened if f is not None]
        self.files: list[IndexFileCross] = []
        self.order: list[Problem | None] = []
        self.not_full: list[str | None] = []
        prev: IndexFile | None = None
        for f in self.live:
            h = f.header
            self.order.append(None)
            if prev is not None and h.keys and prev.header.keys and h.begin_phy_offset < prev.header.end_phy_offset:
                self.order[-1] = make_problem(
                    "index.file-order", CorruptIndexError,
                    f"begin_phy_offset {h.begin_phy_offset} is before the end_phy_offset "
                    f"{prev.header.end_phy_offset} of the previous file {prev.path.name}: files are "
                    f"written one after the other", f.path, HEADER.offset("begin_phy_offset"),
                    "header.begin_phy_offset")
            self.not_full.append(None if prev is None or prev.is_write_full else
                                 f"{prev.path}: not full, yet a newer index file exists (the broker only starts a "
                                 f"new file when the last one is full)")
            seed = None
            if prev is not None and prev.is_write_full and prev.header.end_timestamp > 0:
                seed = prev.header.end_timestamp
            self.files.append(IndexFileCross(f, seed, tag_keys, ordered[len(self.files)] if ordered else None))
            prev = f
        with_keys = [f for f in self.live if f.header.keys]
        # the indexed range: every key of a message inside it has an entry
        self.range = ((min(f.header.begin_phy_offset for f in with_keys),
                       max(f.header.end_phy_offset for f in with_keys)) if with_keys else None)
        # the gaps between consecutive files: [end_phy_offset of one, begin_phy_offset of the next]
        # where the next begins later. The messages at either end may have keys in the file beside
        # (putKey rolls over inside a message), so the gap holds both. A gap holds no
        # key of an uninterrupted dispatch; keys missing there are those of a file an abnormal
        # restart destroyed and no recovery rebuilt (see "index.lost-keys")
        gaps = [(a.header.end_phy_offset, b.header.begin_phy_offset, a, b)
                for a, b in zip(with_keys, with_keys[1:]) if b.header.begin_phy_offset > a.header.end_phy_offset]
        self.gaps = gaps
        self.gap_lo = np.array([g[0] for g in gaps], np.int64)
        self.gap_hi = np.array([g[1] for g in gaps], np.int64)
        self.missing = RunningFirst()
        self.missing_tags = RunningFirst()   # TAGS keys without an entry: problems for a 5.4.0+ store
        self.lost = RunningFirst()           # keys missing in a gap between files
        self.lost_tags = RunningFirst()      # TAGS keys missing there (problems for a 5.4.0+ store)
        # keys of the last message indexed (at the range's end) without an entry: buildIndex puts
        # a message's keys one putKey at a time (UNIQ_KEY, each KEYS token, then TAGS), each
        # moving end_phy_offset to the message, so a broker killed between two puts leaves
        # only the first; problems unless the store shut down abnormally (see problems())
        self.interrupted = RunningFirst()
        self.interrupted_tags = RunningFirst()
        self.codes_before = 0     # key codes of the windows already checked: the ordinals go on
        self.tags_before = 0      # TAGS key codes of the windows already checked

    @property
    def tag_entries(self) -> int:
        """Entries that only a TAGS key (``topic#T#tags``) of their message explains."""
        return sum(fc.tag_entries for fc in self.files)

    @property
    def tags_indexed(self) -> bool:
        """Whether the index is held to hold TAGS keys: the broker version's fact, or else
        (version not given) whether some entry is a TAGS key."""
        return self.tag_keys if self.tag_keys is not None else self.tag_entries > 0

    def add(self, w: Messages) -> None:
        present = np.zeros(len(w.key_codes[0]), bool) if w.n else None
        tag_present = np.zeros(len(w.tag_codes), bool) if w.n else None
        for fc in self.files:
            fc.add(w, present, tag_present)
        if present is not None and self.range is not None:
            self._missing_keys(w, present)
            if self.tag_keys is not False and tag_present is not None:
                self._missing_tag_keys(w, tag_present)
        if w.n:
            self.codes_before += len(w.key_codes[1])
            self.tags_before += len(w.tag_codes)

    def state(self) -> dict:
        """What the checks found (picklable: numbers and problems), for :meth:`merge`."""
        return {"files": [fc.state() for fc in self.files], "missing": self.missing, "missing_tags": self.missing_tags,
                "lost": self.lost, "lost_tags": self.lost_tags, "interrupted": self.interrupted,
                "interrupted_tags": self.interrupted_tags, "codes": self.codes_before, "tags": self.tags_before}

    def merge(self, state: dict) -> None:
        """Take in :meth:`state` of the same index files checked against the windows that come
        next (a later CommitLog file's, in a worker): its key ordinals go on after this one's."""
        for fc, found in zip(self.files, state["files"]):
            fc.merge(found)
        self.missing.merge(state["missing"], self.codes_before)
        self.lost.merge(state["lost"], self.codes_before)
        self.missing_tags.merge(state["missing_tags"], self.tags_before)
        self.lost_tags.merge(state["lost_tags"], self.tags_before)
        self.interrupted.merge(state["interrupted"], self.codes_before)
        self.interrupted_tags.merge(state["interrupted_tags"], self.tags_before)
        self.codes_before += state["codes"]
        self.tags_before += state["tags"]

    @property
    def ordered(self) -> list[bool]:
        """Whether each live file's entries' phy offsets never decrease."""
        return [fc.ordered for fc in self.files]

    def _missing_tag_keys(self, w: Messages, present: np.ndarray) -> None:
        assert self.range is not None
        lo, hi = self.range
        codes = w.tag_codes
        for start in range(0, len(codes), CROSS_CHUNK):
            part = codes[start:start + CROSS_CHUNK]
            rows = part >> KEY_CODE_HASH_BITS
            pos = w.positions[rows]
            want = (pos >= lo) & (pos <= hi) & goes_to_index_many(w.sys_flag[rows]) & ~present[start:start + len(part)]
            gap = self._in_gap(pos)
            last = ~gap & (pos == hi)
            ordinals = self.tags_before + start + np.arange(len(part))
            self.missing_tags.add(want & ~gap & ~last, ordinals,
                                  lambda i, part=part: self._missing_key(w, int(part[i]), "TAGS"))
            self.interrupted_tags.add(want & last, ordinals,
                                      lambda i, part=part: self._missing_key(w, int(part[i]), "TAGS"))
            self.lost_tags.add(want & gap, ordinals, lambda i, part=part: self._lost_key(w, int(part[i]), "TAGS"))

    def _in_gap(self, pos: np.ndarray) -> np.ndarray:
        """Whether each position lies in a gap between two index files."""
        g = np.searchsorted(self.gap_lo, pos, side="right") - 1
        return (g >= 0) & (pos <= self.gap_hi[np.maximum(g, 0)]) if len(self.gap_lo) else np.zeros(len(pos), bool)

    def _missing_keys(self, w: Messages, present: np.ndarray) -> None:
        assert self.range is not None   # the caller checks: index files hold keys
        lo, hi = self.range
        uniq, codes = w.key_codes
        for start in range(0, len(codes), CROSS_CHUNK):
            part = codes[start:start + CROSS_CHUNK]
            rows = part >> KEY_CODE_HASH_BITS
            pos = w.positions[rows]
            want = ((pos >= lo) & (pos <= hi) & goes_to_index_many(w.sys_flag[rows])
                    & ~present[search_sorted(uniq, part)])
            gap = self._in_gap(pos)
            last = ~gap & (pos == hi)
            ordinals = self.codes_before + start + np.arange(len(part))
            self.missing.add(want & ~gap & ~last, ordinals, lambda i, part=part: self._missing_key(w, int(part[i])))
            self.interrupted.add(want & last, ordinals, lambda i, part=part: self._missing_key(w, int(part[i])))
            self.lost.add(want & gap, ordinals, lambda i, part=part: self._lost_key(w, int(part[i])))

    @staticmethod
    def _key_field(w: Messages, code: int, fld: str | None) -> tuple[int, int, str]:
        """(message row, key hash, the field the key comes from) of a key code."""
        from rmqlab.jvm.hashcode import index_hash

        rr = code >> KEY_CODE_HASH_BITS
        key_hash = code & ((1 << KEY_CODE_HASH_BITS) - 1)
        uniq, topic = w.record(rr).uniq_key, w.topic(rr)
        if fld is None:
            fld = "UNIQ_KEY" if isinstance(uniq, str) and index_hash(cl.broker_string(f"{topic}#{uniq}")) == key_hash \
                else "KEYS"
        return rr, key_hash, fld

    def _missing_key(self, w: Messages, code: int, fld: str | None = None) -> Problem:
        assert self.range is not None
        lo, hi = self.range
        rr, key_hash, fld = self._key_field(w, code, fld)
        return make_problem("index.missing-key", CorruptIndexError,
                            f"the message at {int(w.positions[rr])} ({w.describe(rr)}) has a key ({fld}) with "
                            f"hash {key_hash} but no index entry, though it lies inside the indexed range {lo}..{hi}: "
                            f"a key query will not find it", *w.stored_at(rr), fld)

    def _lost_key(self, w: Messages, code: int, fld: str | None = None) -> Problem:
        rr, key_hash, fld = self._key_field(w, code, fld)
        pos = int(w.positions[rr])
        lo, hi, before, after = self.gaps[int(np.searchsorted(self.gap_lo, pos, side="right")) - 1]
        return make_problem("index.lost-keys", CorruptIndexError,
                            f"the message at {pos} ({w.describe(rr)}) has a key ({fld}) with hash {key_hash} in no "
                            f"index file: it lies between {before.path.name} (ends at {lo}) and {after.path.name} "
                            f"(begins at {hi}). An abnormal restart destroys the index files newer than the "
                            f"checkpoint's indexMsgTimestamp (IndexService.load) and re-indexes only what its recovery "
                            f"re-dispatches (a DLedger CommitLog before 5.2.0 nothing; a CommitLog from its recovery "
                            f"file on): a key query will not find it",
                            *w.stored_at(rr), fld, severity="warning")

    def problems(self, notes: list[str], counts: dict, *, checked: bool, abnormal: bool = False) -> list[Problem]:
        """Every problem in file order, then the missing keys; `checked`: against a CommitLog;
        `abnormal`: the store did not shut down cleanly (its abort file), so keys of the last
        message indexed without an entry are a put the kill interrupted (a warning)."""
        out: list[Problem] = []
        for order, not_full, fc in zip(self.order, self.not_full, self.files):
            add_problem(out, order)
            if not_full is not None:
                notes.append(not_full)
            if checked:
                out += fc.problems(notes)
        counts["index_entries"] = sum(f.header.keys for f in self.live)
        # a store that shut down cleanly finished every message's puts: keys missing at the
        # range's end are missing keys like the others
        missing_keys = self.missing if abnormal else _both(self.missing, self.interrupted)
        missing_tags = self.missing_tags if abnormal else _both(self.missing_tags, self.interrupted_tags)
        missing = missing_keys.result()
        lost = self.lost.result()
        interrupted = self.interrupted.result() if abnormal else None
        if self.tags_indexed:
            missing = _joined(missing, missing_tags.result())
            lost = _joined(lost, self.lost_tags.result())
            if abnormal:
                interrupted = _joined(interrupted, self.interrupted_tags.result())
        if interrupted is not None:
            add_problem(out, make_problem(
                "index.interrupted-put", type(interrupted.error),
                f"{_words(interrupted)}. It is the last message indexed (the range's end) and the store did not "
                f"shut down cleanly: the broker was killed between its putKey calls (buildIndex puts UNIQ_KEY, "
                f"each KEYS token, then TAGS, each moving end_phy_offset to the message); its restart destroys "
                f"the index files newer than the checkpoint's indexMsgTimestamp and indexes again what its "
                f"recovery re-dispatches",
                interrupted.path, interrupted.offset, interrupted.field, count=interrupted.count, severity="warning"))
        if checked and self.tag_keys is None and self.tag_entries:
            notes.append(f"index: {self.tag_entries} entries are TAGS keys (topic#T#tags), which only a RocketMQ "
                         f"5.4.0+ broker puts: checked as a 5.4.0+ store")
        add_problem(out, missing)
        if checked:
            add_problem(out, lost)
        return out


def _both(a: RunningFirst, b: RunningFirst) -> RunningFirst:
    """One check's findings from two of its parts over the same ordinals."""
    out = RunningFirst()
    out.merge(a)
    out.merge(b)
    return out


def _words(p: Problem) -> str:
    """A problem's message without its count ("(N such)")."""
    return re.sub(r" \(\d+ such\)$", "", p.message)


def _joined(first: Problem | None, then: Problem | None) -> Problem | None:
    """One problem for two counts of the same check: the first's words, both counts."""
    if first is None or then is None:
        return first or then
    return make_problem(first.check, type(first.error), _words(first), first.path, first.offset, first.field,
                        count=first.count + then.count, severity=first.severity)


def index_dir_cross(opened: list[tuple[FileReport, IndexFile | None]], notes: list[str],
                    counts: dict) -> list[Problem]:
    """The checks of index files against each other alone (no CommitLog)."""
    return IndexDirCross(opened).problems(notes, counts, checked=False)


class QueueCross:
    """The units of one ConsumeQueue against the messages, a window of the table at a time:
    each at a message start of this topic and queue, with its TOTALSIZE, tags code (through its
    ext unit when it holds an ext address) and QUEUEOFFSET; a plain or committed message. Also
    the queue's dispatched end: the end of the last message a unit rightly points at."""

    def __init__(self, report_path: str):
        self.report_path = report_path
        self.checks = {name: RunningFirst() for name in
                       ("cq.phy-offset", "cq.queue", "cq.size", "cqext.store-time", "cq.tags-code",
                        "cq.queue-offset", "cq.transaction")}
        self.ordered: dict[str, bool] = {}
        self.expired = 0
        self.ext_missing = 0
        self.end = 0
        self._ext: Any = False         # the queue's ConsumeQueueExt: not opened yet, None when absent

    def close(self) -> None:
        if self._ext:
            self._ext.close()
        self._ext = None

    def add(self, q, w: Messages) -> None:
        """Check the units of the open queue `q` that window `w` answers for."""
        segments = ((str(qf.path), first, units) for qf, (first, units) in zip(q.files, q.segments()))
        found = window_units(segments, w, self.ordered, cq.UNIT_SIZE)
        if found is not None:
            self._add(q, w, *found)

    def _add(self, q, w: Messages, units: np.ndarray, qoff: np.ndarray, upos: np.ndarray, paths: list[str],
             fidx: np.ndarray) -> None:
        co = units["commitlog_offset"].astype(np.int64)
        sz = units["size"].astype(np.int64)
        tc = units["tags_code"].astype(np.int64)
        real = ~((co == 0) & (sz == INT_MAX) & (tc == 0)) & (qoff >= q.min_offset)
        expired = real & w.expired(co)
        self.expired += int(expired.sum())
        check = real & ~expired
        row, hit = w.lookup(co)
        r = np.where(hit, row, 0)
        fields = {f.name: f.offset for f in cq.UNIT.fields}

        def unit_problem(code, mask, fld, what):
            self.checks[code].add(mask, qoff, lambda i: make_problem(
                code, CorruptIndexError, f"queue offset {qoff[i]}: {what(i)}", paths[fidx[i]],
                int(upos[i]) + fields[fld], f"unit.{fld}"))

        unit_problem("cq.phy-offset", check & ~hit, "commitlog_offset",
                     lambda i: f"commitlog offset {co[i]} is not where a message starts: {w.where(int(co[i]))}")
        if not w.n:
            return
        m = check & hit
        sound = m & (sz == w.total_size[r])      # a corrupt unit must not move the dispatched end
        if sound.any():
            self.end = max(self.end, int((co[sound] + sz[sound]).max()))
        qids, mqoff = w.queue_id, w.queue_offset
        other = m & ((w.topic_code[r] != w.code_of_topic(q.topic))
                     | (qids[r] != (q.queue_id if q.queue_id is not None else -1)))
        unit_problem("cq.queue", other, "commitlog_offset",
                     lambda i: f"the message at {co[i]} belongs to topic {w.topic(int(r[i]))!r} queue {qids[r[i]]}, "
                               f"not this queue ({q.topic!r}, {q.queue_id})")
        unit_problem("cq.size", m & (sz != w.total_size[r]), "size",
                     lambda i: f"size {sz[i]} but the message at {co[i]} has TOTALSIZE {w.total_size[r[i]]}")
        ext = m & cqx.is_ext_addr_many(tc)
        via_ext = np.zeros(len(tc), dtype=bool)
        if ext.any():
            if self._ext is False:          # opened once, at the first window that needs it
                self._ext = open_ext(q)
            if self._ext is None:
                self.ext_missing += int(ext.sum())
            else:
                tc, via_ext = self._ext_cross(self._ext, tc, ext, r, qoff, w)
        unresolved = ext & ~via_ext      # reported by the queue's own checks (cq.ext-address)
        want_tc = w.tags_codes[r]
        unit_problem("cq.tags-code", m & ~unresolved & (tc != want_tc), "tags_code",
                     lambda i: f"tags code {tc[i]}{' (through its ext unit)' if via_ext[i] else ''} but the message "
                               f"at {co[i]} gives {want_tc[i]} "
                               f"(TAGS {w.record(int(r[i])).tags!r}, topic {w.topic(int(r[i]))!r})")
        unit_problem("cq.queue-offset", m & ~other & (mqoff[r] != qoff), "commitlog_offset",
                     lambda i: f"the message at {co[i]} has QUEUEOFFSET {mqoff[r[i]]}. A broker appends a unit "
                               f"at its queue's write position whatever the message's QUEUEOFFSET (ConsumeQueue."
                               f"putMessagePositionInfo logs '[BUG]logic queue order maybe wrong'), as a 5.2+ DLedger "
                               f"broker does after its abnormal recovery truncated the queue below where its dispatch "
                               f"resumes: the messages between are at no queue offset, consumers skip them")
        tran = transaction_type(w.sys_flag[r])
        unit_problem("cq.transaction", m & ~goes_to_consume_queue_many(w.sys_flag[r]), "commitlog_offset",
                     lambda i: f"the message at {co[i]} is a "
                               f"{'prepared' if tran[i] == TRANSACTION_PREPARED_TYPE else 'rolled-back'} "
                               f"transaction record: only plain and committed messages are dispatched to a queue")

    def _ext_cross(self, ext, tc: np.ndarray, is_ext: np.ndarray, r: np.ndarray, qoff: np.ndarray,
                   w: Messages) -> tuple[np.ndarray, np.ndarray]:
        """Resolve the queue's ext addresses (the tags codes to check) and check each ext unit's
        store time against its message's; returns the resolved codes and which units resolved."""
        idx, found = ext.locate(np.where(is_ext, tc, 0))
        found &= is_ext
        resolved = tc.copy()
        u = ext.units
        resolved[found] = u["tags_code"][idx[found]]
        ext_time = np.zeros(len(tc), np.int64)
        ext_time[found] = u["msg_store_time"][idx[found]]
        want = w.store_ts[r]
        size = ext.mapped_file_size

        def bad_time(i):
            off = int(u["offset"][idx[i]])
            return make_problem("cqext.store-time", CorruptIndexError,
                                f"ext unit at {off}: msgStoreTime {ext_time[i]} but its message at "
                                f"{int(w.positions[r[i]])} was stored at {want[i]}",
                                ext.folder / f"{off - off % size:020d}",
                                off % size + cqx.UNIT_HEADER.offset("msg_store_time"), "unit.msg_store_time")
        self.checks["cqext.store-time"].add(found & (ext_time != want), qoff, bad_time)
        return resolved, found

    def state(self) -> tuple:
        """What the checks found (picklable), for :meth:`merge`."""
        return self.checks, self.expired, self.ext_missing, self.end

    def merge(self, state: tuple) -> None:
        """Take in :meth:`state` of the same queue's units checked against other windows."""
        checks, expired, ext_missing, end = state
        merge_checks(self.checks, checks)
        self.expired += expired
        self.ext_missing += ext_missing
        self.end = max(self.end, end)

    def problems(self, notes: list[str]) -> list[Problem]:
        if self.expired:
            notes.append(f"{self.report_path}: {self.expired} units point below the CommitLog's first file "
                         f"(expired messages): not checked")
        if self.ext_missing:
            notes.append(f"{self.report_path}: {self.ext_missing} units hold ConsumeQueueExt addresses but there is "
                         f"no consumequeue_ext folder beside the queue: their tags codes are not checked")
        out: list[Problem] = []
        for check in self.checks.values():
            add_problem(out, check.result())
        return out


class MissingUnits:
    """Dispatchable messages before the dispatched end without a unit in their queue, a window
    of the message table at a time. The dispatched end (the last end any queue's sound unit
    gives) is known only after the last window: the windows before the one it falls in count
    whole, that one up to the end, those after not at all."""

    def __init__(self, queues: list[tuple[str, int, int, int]]):
        self.queues = queues
        self.first: tuple[str, str, str, int] | None = None   # words before and after the end, where
        self.counted = 0            # candidates of the windows before the one holding the end so far
        self.last_below = 0         # candidates in that window before its end
        self.last_total = 0         # candidates in that window
        self.pending = 0            # candidates of the windows after it
        self.end = 0

    def add(self, w: Messages, window_end: int) -> None:
        """The candidates of window `w`; `window_end`: the dispatched end its units give (0: none)."""
        import pandas as pd

        positions = []
        if w.n:
            qs = pd.DataFrame({"topic": np.array([w.code_of_topic(q[0]) for q in self.queues], np.int64),
                               "queue_id": np.array([q[1] for q in self.queues], np.int64),
                               "qmax": np.array([q[3] for q in self.queues], np.int64)})
            for lo in range(0, w.n, CROSS_CHUNK):
                rows = np.arange(lo, min(lo + CROSS_CHUNK, w.n))
                rows = rows[goes_to_consume_queue_many(w.sys_flag[rows])]
                frame = pd.DataFrame({"topic": w.topic_code[rows].astype(np.int64),
                                      "queue_id": w.queue_id[rows].astype(np.int64),
                                      "qoff": w.queue_offset[rows], "row": rows})
                j = frame.merge(qs, on=["topic", "queue_id"], how="left")
                missing = j[j["qmax"].isna() | (j["qoff"] >= j["qmax"])].sort_values("row")
                positions.append(w.positions[missing["row"].to_numpy(np.int64)])
                if self.first is None and len(missing):
                    self.first = self._problem(w, missing.iloc[0])
        found = np.concatenate(positions) if positions else np.zeros(0, np.int64)
        if window_end > 0:      # this window holds the end so far: its candidates below it count
            self.merge((None, 0, int(np.searchsorted(found, window_end, side="left")), len(found), 0, window_end))
        else:
            self.merge((None, 0, 0, 0, len(found), 0))

    def state(self) -> tuple:
        """What the check found (picklable), for :meth:`merge`."""
        return self.first, self.counted, self.last_below, self.last_total, self.pending, self.end

    def merge(self, state: tuple) -> None:
        """Take in :meth:`state` of the windows that come next (a later CommitLog file's, in a
        worker): an end there is past every end here, as its units point past these windows."""
        first, counted, below, total, pending, end = state
        if self.first is None:
            self.first = first
        if end > 0:
            self.counted += self.last_total + self.pending + counted
            self.last_below, self.last_total, self.pending = below, total, pending
            self.end = max(self.end, end)
        else:
            self.pending += pending

    def _problem(self, w: Messages, first) -> tuple[str, str, str, int]:
        import pandas as pd

        rr = int(first["row"])
        where = "no such queue folder" if pd.isna(first["qmax"]) else f"the queue ends at {int(first['qmax'])}"
        return (f"the message at {int(w.positions[rr])} (topic {w.topic(rr)!r}, queue {int(first['queue_id'])}, "
                f"QUEUEOFFSET {int(first['qoff'])}) lies before the dispatched end ",
                f" but has no ConsumeQueue unit ({where})", *w.stored_at(rr))

    def result(self) -> Problem | None:
        if self.end <= 0 or self.first is None:
            return None
        count = self.counted + self.last_below
        if not count:
            return None
        before, after, path, pos = self.first
        return make_problem("cq.missing-unit", CorruptIndexError, f"{before}{self.end}{after}", path, pos,
                            "QUEUEOFFSET", count=count)


def checkpoint_cross(path: Path, c: cpf.StoreCheckpoint, scan: CommitLogScan | None, have_cq: bool,
                     index_files: list[IndexFile] | None, notes: list[str]) -> list[Problem]:
    """The checkpoint against the totals of a walked CommitLog (`scan`) and the index files."""
    out: list[Problem] = []

    def bad(check, fld, what):
        out.append(make_problem(check, FormatError, what, path, cpf.CHECKPOINT.offset(fld), fld))

    if scan is not None and scan.n:
        last = scan.last_store_timestamp
        assert last is not None     # a scan with messages has a last store time
        if c.physic_msg_timestamp > last:
            bad("checkpoint.physic-timestamp", "physic_msg_timestamp",
                f"physicMsgTimestamp {c.physic_msg_timestamp} is after the last store time in the CommitLog "
                f"({last}): the checkpoint records messages the CommitLog does not hold")
        disp = scan.last_dispatchable_timestamp
        if have_cq and disp is not None and c.logics_msg_timestamp > disp:
            bad("checkpoint.logics-timestamp", "logics_msg_timestamp",
                f"logicsMsgTimestamp {c.logics_msg_timestamp} is after the last store time of any message a "
                f"ConsumeQueue can hold ({disp})")
        if c.confirm_phy_offset > scan.end_offset:
            bad("checkpoint.confirm-offset", "confirm_phy_offset",
                f"confirmPhyOffset {c.confirm_phy_offset} is past the CommitLog's end {scan.end_offset}")
        if c.logics_physical_offset > scan.end_offset:
            bad("checkpoint.logics-offset", "logics_physical_offset",
                f"logicsPhysicalOffset {c.logics_physical_offset} is past the CommitLog's end {scan.end_offset}")
    if index_files is not None:
        full_ends = {f.header.end_timestamp for f in index_files if f.is_write_full}
        ts = c.index_msg_timestamp
        if ts != 0 and ts not in full_ends:
            bad("checkpoint.index-timestamp", "index_msg_timestamp",
                f"indexMsgTimestamp {ts} is not the end_timestamp of any full index file "
                f"({len(full_ends)} full files): the broker sets it to one when a file fills")
        lost = [f for f in index_files if f.header.end_timestamp > ts]
        if lost:
            notes.append(f"{path}: after an abnormal shutdown the broker would delete {len(lost)} index files "
                         f"(end_timestamp > indexMsgTimestamp {ts}), {sum(f.header.keys for f in lost)} keys")
    return out
