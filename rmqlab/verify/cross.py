"""The checks across files: index entries and ConsumeQueue units against the messages, and the
checkpoint against the data."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rmqlab.dispatch import (
    TRANSACTION_PREPARED_TYPE,
    goes_to_consume_queue_many,
    goes_to_index_many,
    transaction_type,
)
from rmqlab.errors import CorruptIndexError, FormatError
from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.formats.indexfile import ENTRY, HEADER, IndexFile, time_diff_seconds
from rmqlab.verify.check_commitlog import KEY_CODE_HASH_BITS, Messages
from rmqlab.verify.check_consumequeue import open_ext
from rmqlab.verify.common import add_problem, broker_text, first_problem
from rmqlab.verify.report import FileReport, Problem, make_problem

#: Index entries (and message keys) checked at a time: the cross-file check of an index holds
#: a few arrays of this many whatever the file or the store holds (a full default-size file has
#: 19,999,999 entries; checked whole, they took about 4 GB).
CROSS_CHUNK = 1 << 20


class _FirstBad:
    """The first element a check flags over chunks taken in order, and how many it flags."""

    def __init__(self) -> None:
        self.first = -1
        self.count = 0

    def add(self, mask: np.ndarray, lo: int) -> None:
        bad = np.flatnonzero(mask)
        if len(bad):
            if self.first < 0:
                self.first = lo + int(bad[0])
            self.count += len(bad)

    def problem(self, make) -> Problem | None:
        """`make(first, count)` when the check flagged anything."""
        return make(self.first, self.count) if self.count else None


class _Entries:
    """Entries lo..hi-1 of an index file (element i is entry number lo+i+1) with the message
    each points at: the facts every check of :func:`_index_cross` reads."""

    def __init__(self, f: IndexFile, msgs: Messages, seed: int | None, lo: int, hi: int):
        e = f.used_entries[lo:hi]
        self.numbers = np.arange(lo + 1, hi + 1, dtype=np.int64)
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
        self.at = np.searchsorted(uniq, self.codes)
        matched = self.hit & (self.kh >= 0) & (self.at < len(uniq))
        matched[matched] = uniq[self.at[matched]] == self.codes[matched]
        self.matched = matched
        self.rolled = self.hit & ~goes_to_index_many(msgs.sys_flag[self.r])
        self.want = time_diff_seconds(msgs.store_ts[self.r], f.header.begin_timestamp)
        self.checkable = self.hit & (self.numbers >= 2)
        if seed is not None and lo == 0 and hi > 0:
            self.want[0] = time_diff_seconds(int(msgs.store_ts[self.r[0]]), seed)
            self.checkable[0] = self.hit[0]


def _index_cross(f: IndexFile, msgs: Messages, seed: int | None, present: np.ndarray | None,
                 notes: list[str]) -> list[Problem]:
    """Entries of one open index file against the message table, CROSS_CHUNK entries at a
    time; marks in `present` (one flag per distinct key code of the messages) the codes an
    entry holds."""
    out: list[Problem] = []
    h, p = f.header, str(f.path)
    n = len(f.used_entries)
    if not n:
        return out
    checks = {name: _FirstBad() for name in ("boundary", "hash", "rollback", "time")}
    expired = 0
    for lo in range(0, n, CROSS_CHUNK):
        a = _Entries(f, msgs, seed, lo, min(lo + CROSS_CHUNK, n))
        expired += int(a.expired.sum())
        checks["boundary"].add(~a.hit & ~a.expired, lo)
        if not msgs.n:
            continue
        if present is not None:
            present[a.at[a.matched]] = True
        checks["hash"].add(a.hit & ~a.matched, lo)
        checks["rollback"].add(a.rolled, lo)
        checks["time"].add(a.checkable & (a.td != a.want), lo)
    if expired:
        notes.append(f"{p}: {expired} entries point below the CommitLog's first file "
                     f"(expired messages): not checked")

    def entry(i: int) -> _Entries:   # the facts of entry number i+1 alone, to word a problem
        return _Entries(f, msgs, seed, i, i + 1)

    def not_boundary(i, c):
        phy = int(entry(i).phy[0])
        return make_problem("index.phy-offset", CorruptIndexError,
                            f"entry {i + 1}: phy_offset {phy} is not where a message starts: {msgs.where(phy)}",
                            p, int(entry(i).off[0]) + ENTRY.offset("phy_offset"), "entry.phy_offset", count=c)

    add_problem(out, checks["boundary"].problem(not_boundary))
    if not msgs.n:
        return out
    first, last = entry(0), entry(n - 1)
    if first.hit[0] and int(msgs.store_ts[first.r[0]]) != h.begin_timestamp:
        out.append(make_problem("index.header-range", CorruptIndexError,
                                f"begin_timestamp {h.begin_timestamp} but entry 1's message (the first put, which "
                                f"sets it) was stored at {int(msgs.store_ts[first.r[0]])}", p,
                                HEADER.offset("begin_timestamp"), "header.begin_timestamp"))
    if last.hit[0] and int(msgs.store_ts[last.r[0]]) != h.end_timestamp:
        out.append(make_problem("index.header-range", CorruptIndexError,
                                f"end_timestamp {h.end_timestamp} but the last entry's message ({n}) was stored at "
                                f"{int(msgs.store_ts[last.r[0]])}", p, HEADER.offset("end_timestamp"),
                                "header.end_timestamp"))

    def bad_hash(i, c):
        a = entry(i)
        return make_problem("index.key-hash", CorruptIndexError,
                            f"entry {i + 1}: key_hash {a.kh[0]} is not index_hash(topic#key) of any key of the "
                            f"message at {a.phy[0]} ({msgs.describe(int(a.r[0]))})", p,
                            int(a.off[0]) + ENTRY.offset("key_hash"), "entry.key_hash", count=c)

    add_problem(out, checks["hash"].problem(bad_hash))

    def rollback(i, c):
        a = entry(i)
        return make_problem("index.rolled-back", CorruptIndexError,
                            f"entry {i + 1}: the message at {a.phy[0]} is a rolled-back transaction record, which "
                            f"buildIndex never indexes", p, int(a.off[0]) + ENTRY.offset("phy_offset"),
                            "entry.phy_offset", count=c)

    add_problem(out, checks["rollback"].problem(rollback))

    def bad_time(i, c):
        a = entry(i)
        base = h.begin_timestamp if i else seed
        return make_problem("index.entry-time", CorruptIndexError,
                            f"entry {i + 1}: time_diff {a.td[0]} s but its message was stored at "
                            f"{int(msgs.store_ts[a.r[0]])}, {a.want[0]} s after "
                            f"{'begin_timestamp' if i else 'the seed'} {base}", p,
                            int(a.off[0]) + ENTRY.offset("time_diff"), "entry.time_diff", count=c)

    add_problem(out, checks["time"].problem(bad_time))
    return out


def index_dir_cross(opened: list[tuple[FileReport, IndexFile | None]], msgs: Messages | None,
                     notes: list[str], counts: dict) -> list[Problem]:
    out: list[Problem] = []
    live = [f for _, f in opened if f is not None]
    prev: IndexFile | None = None
    # which distinct key codes of the messages (msgs.key_codes) some entry holds
    present = np.zeros(len(msgs.key_codes[0]), bool) if msgs is not None and msgs.n else None
    entries = 0
    for f in live:
        h = f.header
        if prev is not None and h.keys and prev.header.keys and h.begin_phy_offset < prev.header.end_phy_offset:
            out.append(make_problem("index.file-order", CorruptIndexError,
                                f"begin_phy_offset {h.begin_phy_offset} is before the end_phy_offset "
                                f"{prev.header.end_phy_offset} of the previous file {prev.path.name}: files are "
                                f"written one after the other", f.path, HEADER.offset("begin_phy_offset"),
                                "header.begin_phy_offset"))
        if prev is not None and not prev.is_write_full:
            notes.append(f"{prev.path}: not full, yet a newer index file exists (the broker only starts a new "
                         f"file when the last one is full)")
        if msgs is not None:
            seed = None
            if prev is not None and prev.is_write_full and prev.header.end_timestamp > 0:
                seed = prev.header.end_timestamp
            out += _index_cross(f, msgs, seed, present, notes)
        entries += f.header.keys
        prev = f
    counts["index_entries"] = entries
    if msgs is None or not msgs.n or present is None:
        return out
    # every key of every message between the first and last indexed offsets has an entry
    with_keys = [f for f in live if f.header.keys]
    if not with_keys:
        return out
    lo = min(f.header.begin_phy_offset for f in with_keys)
    hi = max(f.header.end_phy_offset for f in with_keys)
    uniq, codes = msgs.key_codes
    missing = _FirstBad()
    for start in range(0, len(codes), CROSS_CHUNK):
        part = codes[start:start + CROSS_CHUNK]
        rows = part >> KEY_CODE_HASH_BITS
        pos = msgs.positions[rows]
        want = (pos >= lo) & (pos <= hi) & goes_to_index_many(msgs.sys_flag[rows])
        missing.add(want & ~present[np.searchsorted(uniq, part)], start)

    def make(i, c):
        from rmqlab.javahash import index_hash

        rr = int(codes[i]) >> KEY_CODE_HASH_BITS
        key_hash = int(codes[i]) & ((1 << KEY_CODE_HASH_BITS) - 1)
        uniq, topic = msgs.record(rr).uniq_key, msgs.topic(rr)
        fld = "UNIQ_KEY" if isinstance(uniq, str) and index_hash(broker_text(f"{topic}#{uniq}")) == key_hash \
            else "KEYS"
        return make_problem("index.missing-key", CorruptIndexError,
                        f"the message at {int(msgs.positions[rr])} ({msgs.describe(rr)}) has a key ({fld}) with "
                        f"hash {key_hash} but no index entry, though it lies inside the indexed range {lo}..{hi}: "
                        f"a key query will not find it", *msgs.stored_at(rr), fld, count=c)

    add_problem(out, missing.problem(make))
    return out


def queue_cross(q, msgs: Messages, report_path: str, fix, notes: list[str]) -> tuple[list[Problem], int]:
    """Units of one open queue against the message table; returns problems and the queue's
    dispatched end (the end of the last message a unit rightly points at, 0 when none)."""
    out: list[Problem] = []
    parts = []
    for qf, (first, units) in zip(q.files, q.segments()):
        if len(units):
            parts.append((str(qf.path), first, units))
    if not parts:
        return out, 0
    co = np.concatenate([u["commitlog_offset"].astype(np.int64) for _, _, u in parts])
    sz = np.concatenate([u["size"].astype(np.int64) for _, _, u in parts])
    tc = np.concatenate([u["tags_code"].astype(np.int64) for _, _, u in parts])
    qoff = np.concatenate([first + np.arange(len(u), dtype=np.int64) for _, first, u in parts])
    upos = np.concatenate([np.arange(len(u), dtype=np.int64) * cq.UNIT_SIZE for _, _, u in parts])
    fidx = np.concatenate([np.full(len(u), k, np.int32) for k, (_, _, u) in enumerate(parts)])
    paths = [_fix_path(pth, fix) for pth, _, _ in parts]
    real = ~((co == 0) & (sz == cq.INT_MAX) & (tc == 0)) & (qoff >= q.min_offset)
    expired = real & msgs.expired(co)
    if expired.any():
        notes.append(f"{report_path}: {int(expired.sum())} units point below the CommitLog's first file "
                     f"(expired messages): not checked")
    check = real & ~expired
    row, hit = msgs.lookup(co)
    r = np.where(hit, row, 0)
    fields = {f.name: f.offset for f in cq.UNIT.fields}

    def unit_problem(check_code, mask, fld, what):
        def make(i, c):
            return make_problem(check_code, CorruptIndexError, f"queue offset {qoff[i]}: {what(i)}", paths[fidx[i]],
                            int(upos[i]) + fields[fld], f"unit.{fld}", count=c)
        add_problem(out, first_problem(mask, make))

    unit_problem("cq.phy-offset", check & ~hit, "commitlog_offset",
                 lambda i: f"commitlog offset {co[i]} is not where a message starts: {msgs.where(int(co[i]))}")
    if not msgs.n:
        return out, 0
    m = check & hit
    sound = m & (sz == msgs.total_size[r])      # a corrupt unit must not move the dispatched end
    end = int((co[sound] + sz[sound]).max()) if sound.any() else 0
    qids, mqoff = msgs.queue_id, msgs.queue_offset
    other = m & ((msgs.topic_code[r] != msgs.code_of_topic(q.topic))
                 | (qids[r] != (q.queue_id if q.queue_id is not None else -1)))
    unit_problem("cq.queue", other, "commitlog_offset",
                 lambda i: f"the message at {co[i]} belongs to topic {msgs.topic(r[i])!r} queue {qids[r[i]]}, "
                           f"not this queue ({q.topic!r}, {q.queue_id})")
    unit_problem("cq.size", m & (sz != msgs.total_size[r]), "size",
                 lambda i: f"size {sz[i]} but the message at {co[i]} has TOTALSIZE {msgs.total_size[r[i]]}")
    ext = m & cqx.is_ext_addr_many(tc)
    via_ext = np.zeros(len(tc), dtype=bool)
    if ext.any():
        ext_store = open_ext(q)
        if ext_store is None:
            notes.append(f"{report_path}: {int(ext.sum())} units hold ConsumeQueueExt addresses but there is no "
                         f"consumequeue_ext folder beside the queue: their tags codes are not checked")
        else:
            with ext_store:
                tc, via_ext = _ext_cross(ext_store, tc, ext, r, msgs, out)
    unresolved = ext & ~via_ext      # reported by the queue's own checks (cq.ext-address)
    want_tc = msgs.tags_codes[r]
    unit_problem("cq.tags-code", m & ~unresolved & (tc != want_tc), "tags_code",
                 lambda i: f"tags code {tc[i]}{' (through its ext unit)' if via_ext[i] else ''} but the message at "
                           f"{co[i]} gives {want_tc[i]} "
                           f"(TAGS {msgs.record(int(r[i])).tags!r}, topic {msgs.topic(r[i])!r})")
    unit_problem("cq.queue-offset", m & ~other & (mqoff[r] != qoff), "commitlog_offset",
                 lambda i: f"the message at {co[i]} has QUEUEOFFSET {mqoff[r[i]]}")
    tran = transaction_type(msgs.sys_flag[r])
    unit_problem("cq.transaction", m & ~goes_to_consume_queue_many(msgs.sys_flag[r]), "commitlog_offset",
                 lambda i: f"the message at {co[i]} is a "
                           f"{'prepared' if tran[i] == TRANSACTION_PREPARED_TYPE else 'rolled-back'} "
                           f"transaction record: only plain and committed messages are dispatched to a queue")
    return out, end


def _ext_cross(ext, tc: np.ndarray, is_ext: np.ndarray, r: np.ndarray, msgs: Messages,
               out: list[Problem]) -> tuple[np.ndarray, np.ndarray]:
    """Resolve the queue's ext addresses (the tags codes to check) and check each ext unit's
    store time against its message's; returns the resolved codes and which units resolved."""
    idx, found = ext.locate(np.where(is_ext, tc, 0))
    found &= is_ext
    resolved = tc.copy()
    u = ext.units
    resolved[found] = u["tags_code"][idx[found]]
    ext_time = np.zeros(len(tc), np.int64)
    ext_time[found] = u["msg_store_time"][idx[found]]
    want = msgs.store_ts[r]
    size = ext.mapped_file_size

    def bad_time(i, c):
        off = int(u["offset"][idx[i]])
        return make_problem("cqext.store-time", CorruptIndexError,
                            f"ext unit at {off}: msgStoreTime {ext_time[i]} but its message at "
                            f"{int(msgs.positions[r[i]])} was stored at {want[i]}",
                            ext.folder / f"{off - off % size:020d}",
                            off % size + cqx.UNIT_HEADER.offset("msg_store_time"), "unit.msg_store_time", count=c)
    add_problem(out, first_problem(found & (ext_time != want), bad_time))
    return resolved, found


def _fix_path(path: str, fix) -> str:
    e = fix(FormatError("", path=path))
    return e.path


def missing_units(queues: list[tuple[str, int, int, int]], msgs: Messages, dispatched_end: int) -> Problem | None:
    """Dispatchable messages before the dispatched end without a unit in their queue."""
    import pandas as pd

    if not msgs.n or dispatched_end <= 0:
        return None
    # queues by topic code (-1: a topic no message has)
    qs = pd.DataFrame({"topic": np.array([msgs.code_of_topic(q[0]) for q in queues], np.int64),
                       "queue_id": np.array([q[1] for q in queues], np.int64),
                       "qmin": np.array([q[2] for q in queues], np.int64),
                       "qmax": np.array([q[3] for q in queues], np.int64)})
    topics, queue_ids, queue_offsets = msgs.topic_code, msgs.queue_id, msgs.queue_offset
    first, count = None, 0
    for lo in range(0, msgs.n, CROSS_CHUNK):   # a chunk of messages at a time: bounded memory
        rows = np.arange(lo, min(lo + CROSS_CHUNK, msgs.n))
        rows = rows[goes_to_consume_queue_many(msgs.sys_flag[rows]) & (msgs.positions[rows] < dispatched_end)]
        frame = pd.DataFrame({"topic": topics[rows].astype(np.int64), "queue_id": queue_ids[rows].astype(np.int64),
                              "qoff": queue_offsets[rows], "row": rows})
        j = frame.merge(qs, on=["topic", "queue_id"], how="left")
        missing = j["qmax"].isna() | (j["qoff"] >= j["qmax"])
        count += int(missing.sum())
        if first is None and missing.any():
            first = j[missing].sort_values("row").iloc[0]
    if first is None:
        return None
    rr = int(first["row"])
    where = "no such queue folder" if pd.isna(first["qmax"]) else f"the queue ends at {int(first['qmax'])}"
    return make_problem("cq.missing-unit", CorruptIndexError,
                    f"the message at {int(msgs.positions[rr])} (topic {msgs.topic(rr)!r}, "
                    f"queue {int(first['queue_id'])}, "
                    f"QUEUEOFFSET {int(first['qoff'])}) lies before the dispatched end {dispatched_end} but has no "
                    f"ConsumeQueue unit ({where})", *msgs.stored_at(rr), "QUEUEOFFSET", count=count)


def checkpoint_cross(path: Path, c: cpf.StoreCheckpoint, msgs: Messages | None, have_cq: bool,
                      index_files: list[IndexFile] | None, notes: list[str]) -> list[Problem]:
    out: list[Problem] = []

    def bad(check, fld, what):
        out.append(make_problem(check, FormatError, what, path, cpf.CHECKPOINT.offset(fld), fld))

    if msgs is not None and msgs.n:
        last = int(msgs.store_ts.max())
        if c.physic_msg_timestamp > last:
            bad("checkpoint.physic-timestamp", "physic_msg_timestamp",
                f"physicMsgTimestamp {c.physic_msg_timestamp} is after the last store time in the CommitLog "
                f"({last}): the checkpoint records messages the CommitLog does not hold")
        disp = msgs.store_ts[goes_to_consume_queue_many(msgs.sys_flag)]
        if have_cq and len(disp) and c.logics_msg_timestamp > int(disp.max()):
            bad("checkpoint.logics-timestamp", "logics_msg_timestamp",
                f"logicsMsgTimestamp {c.logics_msg_timestamp} is after the last store time of any message a "
                f"ConsumeQueue can hold ({int(disp.max())})")
        if c.confirm_phy_offset > msgs.end_offset:
            bad("checkpoint.confirm-offset", "confirm_phy_offset",
                f"confirmPhyOffset {c.confirm_phy_offset} is past the CommitLog's end {msgs.end_offset}")
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
