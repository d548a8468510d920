"""Crash recovery of a store directory: make it what an uninterrupted writer would have left.

:func:`recover_store` repairs a store whose writer died (SIGKILL, power cut, OOM) while it was
appending to the CommitLog, dispatching ConsumeQueue units and index entries, or bulk-building
index files. It writes only inside the store it is given, says what it changed in a
:class:`RecoveryReport`, and with ``dry_run=True`` writes nothing and reports the same plan.
It is idempotent: a second run finds nothing to do, and a run interrupted half way is finished
by the next one (every step starts from what is on disk).

What it does, in this order (each step as the broker's own recovery would, except where said):

1. **CommitLog.** The record walk (TOTALSIZE chain, field lengths, property block, BODYCRC as
   ``checkCRCOnRecover``) finds the last complete message: the broker's ``processOffset`` in
   ``CommitLog.recoverAbnormally``. A torn tail -- a record cut short in the last file, only
   zeros after it -- is zeroed from that offset, and the file keeps its mapped size. (The
   broker's ``MappedFileQueue.truncateDirtyFiles`` only moves its write position there and
   deletes the files after it; the bytes stay until the next append overwrites them. Zeroing
   them makes every offline reader see the same end.) An empty (0-byte) last file is deleted,
   as ``MappedFileQueue.doLoad`` does; all-zero files after the active one (preallocated ahead
   of use) are kept, as a running broker keeps them (the load rules are
   :func:`rmqlab.formats.commitlog.load_files`). Damage anywhere else is not a crash artifact: recover
   raises :class:`UnrecoverableError` and writes nothing (the broker would truncate there and
   delete every later file).
2. **ConsumeQueue.** In each queue the longest prefix of units that match their messages is
   kept: a message starts at the unit's offset, ends before the CommitLog's valid end, has the
   unit's size, topic, queue id and queue offset, is dispatchable (not a prepared or rolled
   back transaction record) and gives the unit's tags code (or the unit holds a ConsumeQueueExt
   address there, ``ConsumeQueueExt.isExtAddr``). The units after it are zeroed (a
   torn unit included) and files that start after it deleted (``ConsumeQueue.
   truncateDirtyLogicFiles`` only drops units past the CommitLog end). Then every queue gets
   the units of its messages after its kept prefix, through the same writer ``Store.dispatch``
   uses -- per queue, because a dispatch killed half way has written some queues and not
   others (the broker re-dispatches only from its recovery point, a few seconds back).
3. **Index.** The index an uninterrupted ``Store.dispatch`` writes for the complete messages is
   known exactly: IndexService.buildIndex's rows (UNIQ_KEY, then each KEYS token; rolled back
   records skipped) cut into files of ``index_num - 1`` keys, each seeded with the previous
   file's last row. Hidden temporary files of :func:`~rmqlab.formats.indexfile.build_index_file`
   (``.NAME.pid.token.tmp``: a bulk build killed before its rename) are removed. The newest
   file whose bytes equal what that dispatch writes for its rows is the *last consistent
   point*; the files before it must have the headers the partition gives them. Every file
   after it is removed and the index continues from there with the IndexService rules (roll
   over when full, even inside a message; new files named by the store time of the message that
   creates them; an empty file when a message follows an exactly full file), so the result is
   byte for byte what an uninterrupted dispatch would have written. No lookup is given up:
   the broker instead deletes every index file newer than ``indexMsgTimestamp``
   (``IndexService.load(lastExitOK=false)``) and re-indexes only from its recovery point, so
   the keys in between are lost; :func:`broker_restart` models that for comparison.
4. **Checkpoint.** physicMsgTimestamp and logicsMsgTimestamp become the store times of the last
   message and the last dispatchable one, indexMsgTimestamp the end time of the last index file
   that was full when the next one was created (what ``Store.dispatch`` leaves); the 5.x longs
   are kept (confirmPhyOffset capped at the CommitLog's end).
5. **abort.** The broker's ``abort`` file (present after a crash) is removed: the store is now
   consistent, and a broker finding ``abort`` would run the lossy abnormal restart.

Limits: an index that does not begin with the CommitLog's first message (CommitLog files
expired) cannot be placed on the partition, so it is rebuilt as a whole for the messages that
are still there; rebuilt files are named by store time (a broker names them by its clock).

>>> import tempfile, os
>>> from pathlib import Path
>>> from rmqlab.lab.generate import generate_store
>>> from rmqlab.lab.workload import Workload
>>> root = Path(tempfile.mkdtemp()) / "store"
>>> opts = dict(hash_slot_num=16, index_num=64, consume_queue_file_size=400)
>>> _ = generate_store(root, Workload(messages=120, seed=3), commitlog_file_size=8192, **opts)
>>> last = sorted((root / "commitlog").iterdir())[-1]
>>> end = cl.max_offset(root / "commitlog") - int(last.name)
>>> with open(last, "r+b") as fh:                       # a torn write: half a record
...     _ = fh.seek(end); _ = fh.write(cl.encode_message(topic="T", store_timestamp=2**40 - 1)[:60])
>>> r = recover_store(root, commitlog_file_size=8192, **opts)
>>> r.torn_bytes, r.messages, r.changed
(60, 120, True)
>>> recover_store(root, commitlog_file_size=8192, **opts).changed     # idempotent
False
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError
from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.indexfile import (
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    Geometry,
    IndexFile,
    SlotCountRule,
    build_index_file,
    read_header,
    slot_count_rule_of,
)
from rmqlab.formats.mapped import likely_mapped_file_size
from rmqlab.formats.rocksdb import is_rocksdb
from rmqlab.formats.storepaths import StorePaths, queue_folders
from rmqlab.rules.dispatch import goes_to_consume_queue_many, lmq_dispatch_many, message_tags_codes
from rmqlab.rules.versions import layout_facts
from rmqlab.store.indexservice import ExpandedKeys, IndexService, expand_columns, is_index_file_name

__all__ = [
    "expected_index_files",
    "UnrecoverableError",
    "RecoveryAction",
    "RecoveryReport",
    "BrokerRestartReport",
    "recover_store",
    "broker_restart",
    "expected_index_rows",
    "recovery_start",
    "is_index_temp_name",
]

_TEMP_RE = re.compile(r"\..+\.tmp")
_DIGITS20 = re.compile(r"\d{20}")
_CHUNK = 1 << 24                    # bytes compared / zeroed per step


class UnrecoverableError(FormatError):
    """Damage that a crash cannot have caused (a bad record before the end of the CommitLog, a
    file of the wrong size, a queue with gaps): recover refuses to guess and writes nothing.
    Names the file, the byte offset and the field like every :class:`FormatError`."""


def is_index_temp_name(name: str) -> bool:
    """True for a hidden temporary name such as :func:`build_index_file` writes before its
    rename (``.20240610061320000.4242.9f3a01bc.tmp``).

    >>> is_index_temp_name(".20240610061320000.4242.9f3a01bc.tmp"), is_index_temp_name("20240610061320000")
    (True, False)
    """
    return _TEMP_RE.fullmatch(name) is not None


# ------------------------------------------------------------------------------ reports


@dataclass(frozen=True)
class RecoveryAction:
    """One change (or, in a dry run, one planned change). `kind` is one of
    commitlog-zeroed, commitlog-file-deleted, cq-zeroed, cq-file-deleted, cq-units-added,
    index-temp-removed, index-file-removed, index-file-written, index-entries-added,
    index-file-extended, checkpoint-updated, abort-removed, bcq-units-added, dledger-torn-tail-left,
    rocksdb-queues-left;
    `count` the bytes, units, entries or files concerned."""

    kind: str
    path: str
    detail: str
    count: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "detail": self.detail, "count": self.count}

    def __str__(self) -> str:
        return f"{self.kind}: {self.path}: {self.detail}"


@dataclass
class RecoveryReport:
    """What :func:`recover_store` found and changed. Offsets are CommitLog byte offsets; times
    ms since the epoch."""

    root: str
    dry_run: bool
    messages: int = 0                      # complete messages in the CommitLog
    commitlog_end: int = 0                 # offset after the last complete message
    torn_bytes: int = 0                    # non-zero bytes after it, zeroed
    cq_units_dropped: int = 0
    cq_units_added: int = 0
    index_files_kept: int = 0
    last_consistent_index: str | None = None   # the newest file kept as it was
    index_files_removed: list[str] = field(default_factory=list)
    index_files_written: list[str] = field(default_factory=list)
    index_entries_added: int = 0
    temp_files_removed: list[str] = field(default_factory=list)
    checkpoint_before: dict | None = None
    checkpoint_after: dict | None = None
    actions: list[RecoveryAction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when something was (or, in a dry run, would be) written."""
        return bool(self.actions)

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "root", "dry_run", "messages", "commitlog_end", "torn_bytes", "cq_units_dropped", "cq_units_added",
            "index_files_kept", "last_consistent_index", "index_files_removed", "index_files_written",
            "index_entries_added", "temp_files_removed", "checkpoint_before", "checkpoint_after", "notes")}
        d["changed"] = self.changed
        d["actions"] = [a.as_dict() for a in self.actions]
        return d

    def summary(self) -> str:
        verb = "would change" if self.dry_run else "changed"
        head = (f"{self.root}: {self.messages} complete messages, CommitLog end {self.commitlog_end}; "
                f"{len(self.actions)} actions ({verb})")
        lines = [head]
        lines += [f"  {a}" for a in self.actions]
        lines += [f"  note: {n}" for n in self.notes]
        if not self.actions:
            lines.append("  nothing to do: the store is consistent")
        return "\n".join(lines)


@dataclass
class BrokerRestartReport:
    """What :func:`broker_restart` (the broker's restart after an abnormal shutdown) did."""

    root: str
    checkpoint: dict
    recovery_timestamp: int                 # the store time the recovery file was chosen by (ms)
    recovery_from_offset: int               # where recoverAbnormally re-dispatched from
    messages: int = 0                       # complete messages (same truncation as recover_store)
    index_files_deleted: list[str] = field(default_factory=list)
    index_keys_deleted: int = 0
    redispatched_messages: int = 0
    index_keys_added: int = 0
    actions: list[RecoveryAction] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("root", "checkpoint", "recovery_timestamp", "recovery_from_offset",
                                           "messages", "index_files_deleted", "index_keys_deleted",
                                           "redispatched_messages", "index_keys_added")}
        d["actions"] = [a.as_dict() for a in self.actions]
        return d


# ------------------------------------------------------------------------------ helpers


def _last_nonzero(path: Path, start: int) -> int:
    """Position of the last non-zero byte at or after `start` in a file, -1 when none.
    Reads backwards in 16 MiB steps: cheap for a zero tail."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        hi = size
        while hi > start:
            lo = max(start, hi - _CHUNK)
            fh.seek(lo)
            part = np.frombuffer(fh.read(hi - lo), np.uint8)
            nz = np.flatnonzero(part)
            if len(nz):
                return lo + int(nz[-1])
            hi = lo
    return -1


def _zero(path: Path, start: int, stop: int) -> None:
    """Write zeros over bytes [start, stop) of a file (the file keeps its size) and fsync."""
    fd = os.open(path, os.O_WRONLY)
    try:
        zeros = bytes(min(_CHUNK, max(stop - start, 0)))
        at = start
        while at < stop:
            n = min(len(zeros), stop - at)
            os.pwrite(fd, zeros[:n], at)
            at += n
        os.fsync(fd)
    finally:
        os.close(fd)


def _same_bytes(a: Path, b: Path) -> bool:
    """Byte equality of two files, compared in 16 MiB steps."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for _ in range(a.stat().st_size // _CHUNK + 1):
            x, y = fa.read(_CHUNK), fb.read(_CHUNK)
            if x != y:
                return False
            if not x:
                break
    return True


def _read_checkpoint_or_none(path: Path) -> cpf.StoreCheckpoint | None:
    if not path.exists() or path.stat().st_size < cpf.CHECKPOINT.size:
        return None
    return cpf.read_checkpoint(path, strict=False)


# ------------------------------------------------------------------------------ CommitLog


def _commitlog(root: Path, file_size: int | None, dry_run: bool, actions: list[RecoveryAction]):
    """Step 1: the complete messages (DataFrame, no bodies), the valid end offset and the torn
    bytes zeroed (or to zero)."""
    d = StorePaths(root).commitlog
    ledger = _ledger(root, file_size)
    loaded = cl.load_files(d) if d.is_dir() else None
    files = [f for f in loaded.files if f not in loaded.dropped] if loaded is not None else []
    for f in loaded.dropped if loaded is not None else []:
        actions.append(RecoveryAction("commitlog-file-deleted", str(f.path), "empty (0-byte) last file, "
                                      "as MappedFileQueue.doLoad deletes it", 1))
        if not dry_run:
            f.path.unlink()
    if not files:
        return cl.read_at(d, [], body=False) if d.is_dir() else pd.DataFrame(), 0, 0
    mapped = file_size or likely_mapped_file_size([[(f.start_offset, f.size) for f in files]])
    for f in files:
        if f.size != mapped:
            raise UnrecoverableError(f"file is {f.size} bytes, not the mapped file size {mapped} "
                                     f"(mappedFileSizeCommitLog): not crash damage; pass the right "
                                     f"commitlog_file_size or repair it by hand", path=f.path, offset=f.size,
                                     field="file size")
    # the reader follows the same load rules: the dropped file is not read, deleted or not
    df = cl.read_columns(d, body=False, check_crc=True, on_error="report")
    rep: cl.ReadReport = df.attrs["report"]
    if rep.damage:
        dmg = rep.damage[0]
        raise UnrecoverableError(f"{dmg.reason}: damage before the end of the CommitLog is not a crash "
                                 f"artifact (the broker would truncate here and delete every later file); "
                                 f"recover writes nothing", path=dmg.path, offset=dmg.offset, field=dmg.field)
    torn = 0
    if rep.torn_tail is not None and ledger is not None:
        # DLedger's own recovery truncates the data and its index together (DLedgerMmapFileStore.
        # recover); zeroing the data alone would leave index units past it
        t = rep.torn_tail
        actions.append(RecoveryAction("dledger-torn-tail-left", t.path, f"torn entry at position {t.offset} "
                                      f"(CommitLog offset {t.phy_offset}) left for DLedger's recovery, which "
                                      f"truncates the data and index files together", 0))
    elif rep.torn_tail is not None:
        t = rep.torn_tail
        p = Path(t.path)
        last = _last_nonzero(p, t.offset)
        torn = last + 1 - t.offset if last >= 0 else 0
        if torn:
            actions.append(RecoveryAction("commitlog-zeroed", t.path, f"torn tail: {torn} bytes from position "
                                          f"{t.offset} (CommitLog offset {t.phy_offset}) zeroed "
                                          f"({t.reason.removeprefix('torn tail: ')})", torn))
            if not dry_run:
                _zero(p, t.offset, last + 1)
    end = int(rep.end_phy_offset or 0)
    return df, end, torn


# ------------------------------------------------------------------------------ ConsumeQueue


@dataclass
class _MultiDispatch:
    """The light-message-queue units the messages give (ConsumeQueue.multiDispatchLmqQueue):
    unit i is message ``rows[i]``'s, in queue ``(names[i], qids[i])`` at ``offsets[i]``."""

    rows: np.ndarray
    names: np.ndarray
    qids: np.ndarray
    offsets: np.ndarray
    _by_queue: dict[tuple[str, int], np.ndarray] | None = None

    @classmethod
    def of(cls, msgs: pd.DataFrame, enable_lmq: bool, enable_multi_dispatch: bool,
           broker_version: str | None) -> _MultiDispatch:
        rows, units, _ = (lmq_dispatch_many(msgs["topic"].to_numpy(object), msgs["queue_id"].to_numpy(np.int64),
                                            msgs["properties"].to_numpy(object), enable_lmq=enable_lmq,
                                            enable_multi_dispatch=True, broker_version=broker_version)
                          if enable_multi_dispatch and len(msgs) else (np.zeros(0, np.int64), [], None))
        return cls(rows, np.array([u[0] for u in units], dtype=object), np.array([u[1] for u in units], np.int64),
                   np.array([u[2] for u in units], np.int64))

    def queue(self, topic: str, qid: int) -> tuple[np.ndarray, np.ndarray]:
        """(queue offsets, message rows) of the units in one queue, by queue offset. The units are
        grouped by queue once (pandas), on the first call: O(units log units) in all."""
        if self._by_queue is None:
            order = np.argsort(self.offsets, kind="stable")
            groups = pd.DataFrame({"name": self.names[order], "qid": self.qids[order]}).groupby(
                ["name", "qid"], sort=False).indices
            self._by_queue = {(str(key[0]), int(key[1])): order[at]       # type: ignore[index]  # a 2-tuple
                              for key, at in groups.items()}
        at = self._by_queue.get((topic, qid), np.zeros(0, np.int64))
        return self.offsets[at], self.rows[at]


def _consume_queues(root: Path, msgs: pd.DataFrame, end: int, cq_size: int | None, dry_run: bool,
                    actions: list[RecoveryAction], report: RecoveryReport, *, enable_lmq: bool = False,
                    enable_multi_dispatch: bool = False, broker_version: str | None = None) -> None:
    """Step 2: keep each queue's matching prefix, zero the rest, add the missing units. A queue
    holds its own messages' units and, with multi-dispatch, the units other messages send to it
    (a light message queue: the queue offset each one's INNER_MULTI_QUEUE_OFFSET names)."""
    queues = queue_folders(StorePaths(root).consumequeue)
    told = likely_mapped_file_size([sorted((int(f.name), f.stat().st_size) for f in q.iterdir()
                                           if _DIGITS20.fullmatch(f.name)) for _, _, q in queues], unit=cq.UNIT_SIZE)
    mapped = cq.mapped_file_size_for(cq_size or told or cq.DEFAULT_MAPPED_FILE_SIZE)
    phy = msgs["phy_offset"].to_numpy(np.int64) if len(msgs) else np.zeros(0, np.int64)
    if len(msgs):
        total = msgs["total_size"].to_numpy(np.int64)
        topics = msgs["topic"].to_numpy(object)
        qids = msgs["queue_id"].to_numpy(np.int64)
        mqoff = msgs["queue_offset"].to_numpy(np.int64)
        dispatched = goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64))
        codes = message_tags_codes(topics, msgs["tags"].to_numpy(object), msgs["delay_level"].to_numpy(np.int64),
                                   msgs["store_timestamp"].to_numpy(np.int64))
    multi = _MultiDispatch.of(msgs, enable_lmq, enable_multi_dispatch, broker_version)
    next_offset: dict[tuple[str, int], int] = {}
    for topic, qid, folder in queues:
        names = sorted(f for f in folder.iterdir() if f.is_file() and _DIGITS20.fullmatch(f.name))
        empty_last = [f for f in names[-1:] if f.stat().st_size == 0]
        for f in empty_last:   # created, never mapped: 5.x MappedFileQueue.doLoad deletes it
            actions.append(RecoveryAction("cq-file-deleted", str(f), "empty (0-byte) last file", 1))
            if not dry_run:
                f.unlink()
            names.remove(f)
        if not names:
            continue
        with cq.ConsumeQueue.open(folder, mapped, strict=True, topic=topic, queue_id=qid) as q:
            units = q.raw_units(q.min_offset, q.max_offset)
            co = units["commitlog_offset"].astype(np.int64)
            sz = units["size"].astype(np.int64)
            tc = units["tags_code"].astype(np.int64)
            qoff = np.arange(q.min_offset, q.max_offset, dtype=np.int64)
            at = np.searchsorted(phy, co)
            hit = (at < len(phy)) & (co + sz <= end)
            hit[hit] = phy[at[hit]] == co[hit]
            r = np.where(hit, at, 0)
            ok = hit.copy()
            if len(msgs) and ok.any():
                own = (topics[r] == topic) & (qids[r] == qid) & (mqoff[r] == qoff)
                # a unit another message multi-dispatched here, at the queue offset it names
                sent_offsets, sent_rows = multi.queue(topic, qid)
                k = np.minimum(np.searchsorted(sent_offsets, qoff), max(len(sent_offsets) - 1, 0))
                sent = (np.zeros(len(qoff), bool) if not len(sent_offsets)
                        else (sent_offsets[k] == qoff) & (sent_rows[k] == r))
                ok &= (sz == total[r]) & dispatched[r] & (own | sent)
                # a ConsumeQueueExt address stands where the tags code would be (ext files enabled):
                # the message's tags are in the ext unit, so the address is not a mismatch; a
                # multi-dispatched unit carries the tags code of the message as it was sent
                ok &= (tc == codes[r]) | (tc <= cq.EXT_ADDR_MAX) | sent
            good = int(np.argmin(ok)) if len(ok) and not ok.all() else len(ok)
            keep_byte = (q.min_offset + good) * cq.UNIT_SIZE if good else 0
            files = [(f.path, f.start) for f in q.info.files]
        # zero / delete everything after the kept prefix
        dropped = 0
        for path, start in files:
            if start >= keep_byte:
                nz = _last_nonzero(path, 0)
                n = -(-(nz + 1) // cq.UNIT_SIZE) if nz >= 0 else 0
                dropped += n
                actions.append(RecoveryAction("cq-file-deleted", str(path), f"starts at queue offset "
                                              f"{start // cq.UNIT_SIZE}, after the last matching unit "
                                              f"({n} units dropped)", n))
                if not dry_run:
                    path.unlink()
            elif keep_byte < start + mapped:
                pos = keep_byte - start
                nz = _last_nonzero(path, pos)
                if nz >= 0:
                    n = -(-(nz + 1 - pos) // cq.UNIT_SIZE)
                    dropped += n
                    actions.append(RecoveryAction("cq-zeroed", str(path), f"{n} units from queue offset "
                                                  f"{keep_byte // cq.UNIT_SIZE} do not match the CommitLog "
                                                  f"(past its end {end}, torn, or another message): zeroed", n))
                    if not dry_run:
                        _zero(path, pos, nz + 1)
        report.cq_units_dropped += dropped
        if good:
            next_offset[(topic, qid)] = keep_byte // cq.UNIT_SIZE
    if not len(msgs):
        return
    from rmqlab.store.layout import StoreLayout

    layout = StoreLayout.of(root, consume_queue_file_size=mapped, enable_lmq=enable_lmq,
                            enable_multi_dispatch=enable_multi_dispatch, broker_version=broker_version)
    batch_topic = np.isin(topics, list(layout.batch_cq_topics)) if layout.batch_cq_topics \
        else np.zeros(len(msgs), bool)
    if batch_topic.any():
        _batch_queues(layout, msgs[batch_topic & dispatched], end, dry_run, actions, report)
    base = np.array([next_offset.get((t, int(q)), -1) for t, q in zip(topics, qids)], np.int64)
    # a BatchCQ topic's messages go to its BatchConsumeQueue (ConsumeQueueStore picks the queue type)
    want = dispatched & ~batch_topic & (mqoff >= np.where(base < 0, np.iinfo(np.int64).min, base))
    # the multi-dispatched units after their queues' kept prefixes; their messages are written
    # again whole (own units already kept are skipped by the writer as the broker skips them)
    sent_base = np.array([next_offset.get((t, int(q)), -1) for t, q in zip(multi.names, multi.qids)], np.int64)
    sent_missing = dispatched[multi.rows] & (multi.offsets >= sent_base) if len(multi.rows) else np.zeros(0, bool)
    again = want.copy()
    again[multi.rows[sent_missing]] = True
    sub = msgs[again]
    n_units = int(want.sum()) + int(sent_missing.sum())
    if n_units:
        n_q = len({*zip(topics[want], qids[want].tolist()), *zip(multi.names[sent_missing],
                                                               multi.qids[sent_missing].tolist())})
        report.cq_units_added += n_units
        actions.append(RecoveryAction("cq-units-added", str(StorePaths(root).consumequeue),
                                      f"{n_units} units for messages after each queue's last matching unit "
                                      f"({n_q} queues), as Store.dispatch writes them", n_units))
        if not dry_run:
            from rmqlab.store.reput import write_consume_queue_units

            written, _, skipped = write_consume_queue_units(layout, sub)
            skipped = {k: v for k, v in skipped.items() if not k.startswith("duplicate")}
            if skipped:
                report.notes.append(f"ConsumeQueue writer skipped units: {skipped}")


def _batch_queues(layout, msgs: pd.DataFrame, end: int, dry_run: bool, actions: list[RecoveryAction],
                  report: RecoveryReport) -> None:
    """Step 2 for the BatchCQ topics (config/topics.json): a BatchConsumeQueue whose units all
    point at whole messages of its queue gets the units of its messages after its last one (the
    writer skips what it holds, as BatchConsumeQueue.putBatchMessagePositionInfo does). A queue
    with a unit that does not is left as it is and named in the report's notes: its repair
    (truncating the batch units) is not modelled."""
    from rmqlab.formats import batchconsumequeue as bcq
    from rmqlab.store.reput import write_batch_queue_units

    phy = msgs["phy_offset"].to_numpy(np.int64)
    total = msgs["total_size"].to_numpy(np.int64)
    # per queue: the first commitlog offset not yet held (-1: the queue is left as it is)
    held_to: dict[tuple[str, int], int] = {}
    for key, g in msgs.groupby(["topic", "queue_id"], sort=True):
        pair: Any = key
        topic, qid = str(pair[0]), int(pair[1])
        folder = bcq.queue_dir(layout.root, topic, qid)
        held_to[(topic, qid)] = 0
        if folder.is_dir() and any(folder.iterdir()):
            with bcq.BatchConsumeQueue.open(folder, layout.batch_consume_queue_file_size) as q:
                co = q.units["commitlog_offset"].astype(np.int64)
                sz = q.units["size"].astype(np.int64)
            own = np.sort(g["phy_offset"].to_numpy(np.int64))
            at = np.minimum(np.searchsorted(own, co), max(len(own) - 1, 0))
            whole = (co + sz <= end) & (own[at] == co) if len(own) else np.zeros(len(co), bool)
            if len(co) and not whole.all():
                bad = int(np.argmin(whole))
                report.notes.append(f"{folder}: BatchConsumeQueue unit {bad} (commitlog offset {int(co[bad])}) is "
                                    f"not a whole message of the queue: left as it is (truncating batch units is "
                                    f"not modelled)")
                held_to[(topic, qid)] = -1
            elif len(co):
                held_to[(topic, qid)] = int(co.max()) + 1
    tq = list(zip(msgs["topic"].astype(str), msgs["queue_id"].astype(int)))
    first_new = np.array([held_to[k] for k in tq], np.int64)
    keep = (first_new >= 0) & (phy >= first_new) & (phy + total <= end)
    if not keep.any():
        return
    n = int(keep.sum())
    report.cq_units_added += n
    actions.append(RecoveryAction("bcq-units-added", str(layout.paths.batchconsumequeue),
                                  f"{n} BatchConsumeQueue units for messages after each queue's last unit "
                                  f"({len({tq[i] for i in np.flatnonzero(keep)})} queues), as Store.dispatch writes "
                                  f"them", n))
    if not dry_run:
        write_batch_queue_units(layout, msgs[keep])


# ------------------------------------------------------------------------------ index


def expected_index_rows(msgs: pd.DataFrame, *, tag_key: bool = False) -> ExpandedKeys:
    """The puts an uninterrupted IndexService.buildIndex makes for `msgs` (CommitLog order, as
    :func:`rmqlab.formats.commitlog.read_columns` returns them) into an empty index folder:
    UNIQ_KEY then each KEYS token (then ``topic#T#tags`` with `tag_key`: a 5.4.0+ broker),
    rolled back records skipped. Cost: O(messages), vectorized.

    >>> e = expected_index_rows(pd.DataFrame({"topic": ["T", "T"], "phy_offset": [0, 100],
    ...     "store_timestamp": [1000, 2000], "keys": ["a b", None], "uniq_key": ["U1", "U2"], "sys_flag": [0, 0]}))
    >>> e.key_list()
    ['T#U1', 'T#a', 'T#b', 'T#U2']
    """
    if not len(msgs):
        return ExpandedKeys([], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
    columns = ["topic", "phy_offset", "store_timestamp", "keys", "uniq_key", "sys_flag"] + ["tags"] * tag_key
    return expand_columns(msgs[columns], end_phy_offset=0, tag_key=tag_key)


def expected_index_files(k: int, cap: int, n_messages: int, last_message_with_key: int) -> int:
    """How many index files an uninterrupted dispatch writes (bulk_build's count) for `k` keys,
    `cap` keys a file, `n_messages` messages of which the last one with a key is
    `last_message_with_key` (its position; -1 for none). A file that fills exactly is followed by
    an empty one only when messages come after its last key. Cost: O(1).

    >>> expected_index_files(0, 3, 5, -1), expected_index_files(6, 3, 9, 8), expected_index_files(6, 3, 9, 5)
    (1, 2, 3)
    """
    if n_messages <= 0:
        return 0
    if k == 0:
        return 1
    n = -(-k // cap)
    if k % cap == 0 and last_message_with_key < n_messages - 1:
        n += 1
    return n


def _slice(keys, lo, hi):
    return keys.slice(lo, hi - lo) if hasattr(keys, "slice") else keys[lo:hi]


class _IndexPlan:
    """Which existing index files agree with the partition of the expected rows."""

    def __init__(self, index_dir: Path, rows: ExpandedKeys, n_messages: int, geometry: Geometry,
                 rule: SlotCountRule, deep_all: bool):
        self.dir = index_dir
        self.rows = rows
        self.g = geometry
        self.rule = rule
        self.cap = geometry.index_num - 1
        self.k = len(rows)
        last_msg = int(rows.message_index[-1]) if self.k else -1
        self.n_expected = expected_index_files(self.k, self.cap, n_messages, last_msg)
        self.names = sorted(p.name for p in index_dir.iterdir() if p.is_file() and is_index_file_name(p.name)) \
            if index_dir.is_dir() else []
        self.reasons: dict[str, str] = {}
        self._tmp: Path | None = None
        try:
            self.keep, self.keys_kept = self._plan(deep_all)
        finally:
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)

    def _header_ok(self, i: int, newest: bool) -> tuple[bool, int]:
        """Cheap check of file i: size, header against its slice of rows. Returns (ok, keys)."""
        name = self.names[i]
        path = self.dir / name
        size = path.stat().st_size
        if size != self.g.file_size:
            if newest and size == 0:
                self.reasons[name] = "empty (0-byte) file: created, never mapped"
                return False, 0
            raise UnrecoverableError(f"file is {size} bytes but hash_slot_num={self.g.hash_slot_num}, "
                                     f"index_num={self.g.index_num} need {self.g.file_size}: pass the store's "
                                     f"geometry (not crash damage)", path=path, offset=size, field="file size")
        lo = i * self.cap
        if i >= self.n_expected:
            self.reasons[name] = (f"file {i + 1} of the folder, but the {self.k} keys of the complete messages "
                                  f"fill only {self.n_expected} files")
            return False, 0
        with IndexFile.open(path, self.g.hash_slot_num, self.g.index_num, strict=False,
                            slot_count_rule=self.rule) as f:
            h, raw = f.header, f.raw_index_count
        keys = h.keys
        avail = min(self.cap, self.k - lo)
        if raw != h.index_count:
            self.reasons[name] = f"header index_count {raw} on disk (never flushed, or torn)"
            return False, keys
        if keys > avail or (not newest and keys != self.cap):
            self.reasons[name] = (f"holds {keys} keys; the partition gives it "
                                  f"{avail if newest else self.cap}" + ("" if newest else " (only the newest "
                                                                        "file may be less than full)"))
            return False, keys
        if keys:
            r = self.rows
            want = (int(r.store_timestamps[lo]), int(r.store_timestamps[lo + keys - 1]), int(r.phy_offsets[lo]),
                    int(r.phy_offsets[lo + keys - 1]))
            have = (h.begin_timestamp, h.end_timestamp, h.begin_phy_offset, h.end_phy_offset)
            if want != have:
                self.reasons[name] = (f"header begin/end (timestamps, phy offsets) {have} but its rows give {want}")
                return False, keys
        return True, keys

    def _bytes_ok(self, i: int, keys: int) -> bool:
        """Deep check of file i: its bytes equal build_index_file of its rows and seed."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="rmqlab-recover-"))
        lo = i * self.cap
        r = self.rows
        seed_phy = int(r.phy_offsets[lo - 1]) if lo else 0
        seed_ts = int(r.store_timestamps[lo - 1]) if lo else 0
        ref = self._tmp / self.names[i]
        if ref.exists():
            ref.unlink()
        build_index_file(ref, _slice(r.keys, lo, lo + keys), r.phy_offsets[lo:lo + keys],
                         r.store_timestamps[lo:lo + keys], hash_slot_num=self.g.hash_slot_num,
                         index_num=self.g.index_num, end_phy_offset=seed_phy, end_timestamp=seed_ts,
                         slot_count_rule=self.rule)
        same = _same_bytes(self.dir / self.names[i], ref)
        ref.unlink()
        if not same:
            self.reasons[self.names[i]] = "bytes differ from what dispatch writes for its rows (torn entries, slots " \
                                          "or header)"
        return same

    def _plan(self, deep_all: bool) -> tuple[int, int]:
        n = len(self.names)
        keep = 0
        keys_by = {}
        for j in range(n - 1, -1, -1):      # newest first: the last consistent point
            ok, keys = self._header_ok(j, newest=True)   # as the anchor it is the newest kept file
            keys_by[j] = keys
            if ok and self._bytes_ok(j, keys):
                keep = j + 1
                break
        for i in range(keep - 1):          # older files: their headers must fit the partition
            ok, keys = self._header_ok(i, newest=False)
            if not ok or (deep_all and not self._bytes_ok(i, keys)):
                keep = i
                break
        kept_keys = (keep - 1) * self.cap + keys_by[keep - 1] if keep else 0
        return keep, kept_keys


def _continue_index(index_dir: Path, rows: ExpandedKeys, pos: int, msg_ts: np.ndarray, n_messages: int,
                    g: Geometry, rule: SlotCountRule, tz) -> tuple[int, list[str]]:
    """Append rows[pos:] to the folder as IndexService.buildIndex would, file creation and naming
    included; returns (entries added, names of the files created)."""
    clock_ms = [0]
    k = len(rows)
    msg = rows.message_index
    with IndexService(index_dir, g.hash_slot_num, g.index_num, read_only=False, slot_count_rule=rule,
                      clock=lambda: clock_ms[0], tz=tz) as svc:
        before = {f.path.name for f in svc.files}
        done = pos
        f = svc.last_file
        cap = g.index_num - 1
        for _ in range(2 * (k - pos) // max(cap, 1) + k - pos + 4):   # each turn puts >= 1 key or opens a file
            if f is None or f.is_write_full:
                if done < k:
                    if done == 0:
                        creator = 0                 # the first message's buildIndex creates the first file
                    elif msg[done] == msg[done - 1]:
                        creator = int(msg[done])    # filled inside a message: its next put creates the file
                    else:
                        creator = int(msg[done - 1]) + 1   # filled at a boundary: the next message does
                elif f is None and n_messages:
                    creator = 0
                elif f is not None and k and int(msg[k - 1]) + 1 < n_messages:
                    creator = int(msg[k - 1]) + 1   # a message after an exactly full file opens an empty one
                else:
                    break
                clock_ms[0] = int(msg_ts[creator])
                f = svc.get_and_create_last_file()
                continue
            if done >= k:
                break
            put = f.put_keys(_slice(rows.keys, done, k), rows.phy_offsets[done:], rows.store_timestamps[done:])
            if put == 0 and not f.is_write_full:   # pragma: no cover - put_keys always makes progress
                raise RuntimeError("index rebuild made no progress")
            done += put
        created = [f.path.name for f in svc.files if f.path.name not in before]
    return done - pos, created


def _index(root: Path, msgs: pd.DataFrame, g: Geometry, rule: SlotCountRule, tz, deep_all: bool, dry_run: bool,
           actions: list[RecoveryAction], report: RecoveryReport, tag_key: bool = False) -> int:
    """Step 3; returns the indexMsgTimestamp an uninterrupted dispatch leaves."""
    index_dir = StorePaths(root).index
    if index_dir.is_dir():
        for p in sorted(index_dir.iterdir()):
            if p.is_file() and is_index_temp_name(p.name):
                actions.append(RecoveryAction("index-temp-removed", str(p), "temporary file of a bulk build "
                                              "killed before its rename (never visible under a final name)", 1))
                report.temp_files_removed.append(p.name)
                if not dry_run:
                    p.unlink()
            elif p.is_file() and not is_index_file_name(p.name):
                report.notes.append(f"{p}: not an index file name: left alone (the broker ignores it)")
    rows = expected_index_rows(msgs, tag_key=tag_key)
    n_messages = len(msgs)
    plan = _IndexPlan(index_dir, rows, n_messages, g, rule, deep_all)
    report.index_files_kept = plan.keep
    report.last_consistent_index = plan.names[plan.keep - 1] if plan.keep else None
    for name in plan.names[plan.keep:]:
        why = plan.reasons.get(name, "after the last consistent file")
        actions.append(RecoveryAction("index-file-removed", str(index_dir / name), f"{why}: removed, its keys "
                                      f"are re-indexed from the CommitLog", 1))
        report.index_files_removed.append(name)
        if not dry_run:
            (index_dir / name).unlink()
    k, pos = len(rows), plan.keys_kept
    need_files = plan.n_expected - plan.keep
    if k > pos or need_files > 0:
        if dry_run:
            added, created = k - pos, [f"(new file {i + 1})" for i in range(need_files)]
        else:
            index_dir.mkdir(parents=True, exist_ok=True)
            added, created = _continue_index(index_dir, rows, pos, msgs["store_timestamp"].to_numpy(np.int64),
                                             n_messages, g, rule, tz)
        report.index_entries_added = added
        report.index_files_written = created
        start = f"after {report.last_consistent_index}" if plan.keep else "from the first message"
        actions.append(RecoveryAction("index-entries-added", str(index_dir), f"{added} entries {start} "
                                      f"(rows {pos}..{k - 1} of buildIndex's puts), {len(created)} files "
                                      f"written", added))
        for name in created:
            actions.append(RecoveryAction("index-file-written", str(index_dir / name), "written by the IndexService "
                                          "rules (named by the store time of the message creating it)", 1))
    n_files = plan.n_expected
    cap = g.index_num - 1
    return int(rows.store_timestamps[(n_files - 1) * cap - 1]) if n_files >= 2 else 0


# ------------------------------------------------------------------------------ checkpoint


def _checkpoint(root: Path, msgs: pd.DataFrame, end: int, index_ts: int, dry_run: bool,
                actions: list[RecoveryAction], report: RecoveryReport) -> None:
    path = StorePaths(root).checkpoint
    old = _read_checkpoint_or_none(path)
    report.checkpoint_before = old.as_dict() if old else None
    if not len(msgs):
        report.checkpoint_after = report.checkpoint_before
        return
    base = old or cpf.StoreCheckpoint()
    logics = msgs["store_timestamp"].to_numpy(np.int64)[goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64))]
    confirm = base.confirm_phy_offset if base.confirm_phy_offset <= end else end
    # 5.5.0+ keeps the CommitLog offset the ConsumeQueues were dispatched to: all of it now
    dispatched = end if base.logics_physical_offset != 0 else 0
    new = cpf.StoreCheckpoint(int(msgs["store_timestamp"].iloc[-1]),
                              int(logics[-1]) if len(logics) else base.logics_msg_timestamp,
                              int(index_ts), base.master_flushed_offset, confirm, dispatched)
    report.checkpoint_after = new.as_dict()
    size_ok = path.exists() and path.stat().st_size == cpf.FILE_SIZE
    if new == old and size_ok:
        return
    changed = {k: (v, new.as_dict()[k]) for k, v in (old.as_dict() if old else {}).items() if new.as_dict()[k] != v}
    actions.append(RecoveryAction("checkpoint-updated", str(path), "written" if old is None else
                                  ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items()) or "resized to 4096",
                                  len(changed) or 1))
    if not dry_run:
        if path.exists() and not size_ok:
            path.unlink()        # a checkpoint cut short while being created
        cpf.write_checkpoint(path, new)


# ------------------------------------------------------------------------------ entry points


def _geometry(root: Path, hash_slot_num: int | None, index_num: int | None) -> Geometry:
    if hash_slot_num is not None and index_num is not None:
        return Geometry(int(hash_slot_num), int(index_num))
    d = StorePaths(root).index
    names = sorted(p for p in d.iterdir() if is_index_file_name(p.name) and p.stat().st_size) if d.is_dir() else []
    if names:
        from rmqlab.formats.indexgeometry import infer_index_geometry

        for p in names:
            try:
                return infer_index_geometry(p)
            except FormatError:
                continue
        size = names[0].stat().st_size
        return Geometry.infer(size, hash_slot_num, index_num, path=names[0])
    return Geometry(hash_slot_num or DEFAULT_HASH_SLOT_NUM, index_num or DEFAULT_INDEX_NUM)


def _ledger(root: Path, file_size: int | None) -> Path | None:
    """The ledger folder of a DLedger CommitLog (None for a CommitLog), after DLedger's own load
    and recovery rules (:meth:`rmqlab.formats.dledger.Ledger.check`) found nothing that makes the
    broker refuse or cut it before its last file. Its entries are the messages; rmqlab writes
    nothing in the ledger (DLedgerMmapFileStore.recover keeps every whole entry, and truncates a
    torn one with the index units after it)."""
    from rmqlab.formats.dledger import Ledger

    ledgers = StorePaths(root).ledgers
    if not ledgers:
        return None
    if len(ledgers) > 1:
        raise UnrecoverableError(f"{len(ledgers)} DLedger ledgers ({', '.join(p.name for p in ledgers)}): which "
                                 f"one is the broker's (dLegerSelfId) cannot be told from the files",
                                 path=ledgers[0], offset=0, field="dledger")
    for problem in Ledger(ledgers[0], file_size=file_size).check():
        if problem.fatal:
            raise UnrecoverableError(f"{problem.reason}: DLedger's own load or recovery would refuse or cut the "
                                     f"ledger here (dledger.{problem.kind}); recover writes nothing",
                                     path=problem.path, offset=problem.offset, field=problem.field)
    return ledgers[0]


def _refuse_ledger(root: Path) -> None:
    """:func:`broker_restart` models CommitLog.recoverAbnormally; a DLedger broker's restart is
    DLedgerCommitLog's (it re-dispatches nothing before 5.2.0, and from 5.2.0 truncates the queues
    at a sum of record sizes, not entry sizes), which is not modelled: refuse before any write."""
    ledgers = StorePaths(root).ledgers
    if ledgers:
        raise UnrecoverableError("a DLedger CommitLog (enableDLegerCommitLog): the broker's restart on it is "
                                 "DLedgerCommitLog's, which broker_restart does not model; `rmqlab store recover` "
                                 "repairs the queues and index", path=ledgers[0], offset=0, field="dledger")


def recover_store(root: str | os.PathLike, *, hash_slot_num: int | None = DEFAULT_HASH_SLOT_NUM,
                  index_num: int | None = DEFAULT_INDEX_NUM, commitlog_file_size: int | None = None,
                  consume_queue_file_size: int | None = None, slot_count_rule: SlotCountRule | None = None,
                  tz: _dt.tzinfo | None = None, deep_check_all: bool = False,
                  dry_run: bool = False, broker_version: str | None = None, enable_lmq: bool = False,
                  enable_multi_dispatch: bool = False) -> RecoveryReport:
    """Recover a store directory after its writer crashed (see the module docstring).

    Geometry: `hash_slot_num` / `index_num` are the broker's maxHashSlotNum / maxIndexNum (None:
    inferred from the index files); `commitlog_file_size` / `consume_queue_file_size` the mapped
    file sizes (None: the most common file size). `tz` names new index files (None = local time,
    as :class:`rmqlab.store.directory.Store`). `deep_check_all` compares every index file's bytes with its
    expected bytes, not only the newest consistent one. `dry_run` writes nothing and reports the
    plan. `broker_version` gives the release's index keys (5.4.0+ also puts ``topic#T#tags``)
    and, unless `slot_count_rule` is given, its hashSlotCount rule (:func:`slot_count_rule_of`).
    `enable_multi_dispatch` / `enable_lmq`: the broker's settings of the same names (as
    :class:`rmqlab.store.directory.Store` takes them): the light message queues' units are
    checked and rebuilt too. A RocksDB ConsumeQueue (storeType=defaultRocksDB) is left as it is
    (action ``rocksdb-queues-left``): rmqlab reads RocksDB only, and the broker's restart
    dispatches the CommitLog into it again from its own checkpoint
    (:meth:`rmqlab.store.directory.Store.restart_dispatch_units` gives those units).
    Raises :class:`UnrecoverableError` for damage a crash cannot cause.

    Cost: one columnar read of the CommitLog (no bodies), one read of every ConsumeQueue, the
    header of every index file plus the bytes of the newest consistent one (built again in a
    temporary folder and compared) -- all twice unless `dry_run`, because a dry run goes first
    so that damage a crash cannot cause is refused before anything is written -- then writes
    proportional to what is rebuilt: typically the last index file and the tail of each queue.
    """
    root = Path(root)
    if not root.is_dir():
        raise NotADirectoryError(f"{root}: not a store directory")
    kw = dict(hash_slot_num=hash_slot_num, index_num=index_num, commitlog_file_size=commitlog_file_size,
              consume_queue_file_size=consume_queue_file_size,
              slot_count_rule=slot_count_rule or slot_count_rule_of(broker_version), tz=tz,
              deep_check_all=deep_check_all, broker_version=broker_version, enable_lmq=enable_lmq,
              enable_multi_dispatch=enable_multi_dispatch)
    plan = _recover(root, dry_run=True, **kw)      # raises UnrecoverableError before any write
    if dry_run:
        return plan
    if not plan.changed:
        plan.dry_run = False                        # nothing to write: the plan is the result
        return plan
    return _recover(root, dry_run=False, **kw)


def _recover(root: Path, *, hash_slot_num, index_num, commitlog_file_size, consume_queue_file_size, slot_count_rule,
             tz, deep_check_all, dry_run, broker_version, enable_lmq, enable_multi_dispatch) -> RecoveryReport:
    report = RecoveryReport(str(root), dry_run)
    actions = report.actions
    msgs, end, torn = _commitlog(root, commitlog_file_size, dry_run, actions)
    report.messages, report.commitlog_end, report.torn_bytes = len(msgs), end, torn
    queues = StorePaths(root).consumequeue
    if is_rocksdb(queues):
        # RocksDBConsumeQueueStore: the broker writes it without a write-ahead log and, at its
        # restart, dispatches the CommitLog again from the database's own checkpoint
        # (truncateDirty drops what lies past the CommitLog's end); rmqlab reads RocksDB only
        from rmqlab.formats.rocksdbcq import RocksDBConsumeQueues

        mark = RocksDBConsumeQueues.open(queues).dispatched_to or 0
        actions.append(RecoveryAction("rocksdb-queues-left", str(queues), f"a RocksDB ConsumeQueue, left as it is: "
                                      f"the broker's restart dispatches the CommitLog again from its checkpoint "
                                      f"({mark}) to its end ({end})", max(end - mark, 0)))
    else:
        _consume_queues(root, msgs, end, consume_queue_file_size, dry_run, actions, report, enable_lmq=enable_lmq,
                        enable_multi_dispatch=enable_multi_dispatch, broker_version=broker_version)
    g = _geometry(root, hash_slot_num, index_num)
    index_ts = _index(root, msgs, g, slot_count_rule, tz, deep_check_all, dry_run, actions, report,
                      tag_key=layout_facts(broker_version).index_tag_key)
    _checkpoint(root, msgs, end, index_ts, dry_run, actions, report)
    abort = StorePaths(root).abort
    if abort.exists():
        actions.append(RecoveryAction("abort-removed", str(abort), "the store is consistent now: a broker "
                                      "finding `abort` would delete index files newer than indexMsgTimestamp", 1))
        if not dry_run:
            abort.unlink()
    return report


def recovery_start(root: str | os.PathLike, threshold_ms: int) -> tuple[int, str | None]:
    """CommitLog.recoverAbnormally's starting file: the newest whose first message is valid, has a
    non-zero store time and one <= `threshold_ms` (ConsumeQueueStore.isMappedFileMatchedRecover);
    the first file when none is. Returns (its start offset, its name). Cost: one record per file.

    >>> import tempfile
    >>> recovery_start(tempfile.mkdtemp(), 0)
    (0, None)
    """
    d = StorePaths(root).commitlog
    loaded = cl.load_files(d) if d.is_dir() else None
    files = [f for f in loaded.files if f not in loaded.dropped] if loaded is not None else []
    for f in reversed(files):
        try:
            m = cl.read_message(f.path, 0, check_crc=True)
        except FormatError:
            continue
        if m.store_timestamp != 0 and m.store_timestamp <= threshold_ms:
            return f.start_offset, f.path.name
    return (files[0].start_offset, files[0].path.name) if files else (0, None)


def broker_restart(root: str | os.PathLike, *, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
                   index_num: int = DEFAULT_INDEX_NUM, commitlog_file_size: int | None = None,
                   slot_count_rule: SlotCountRule | None = None, message_index_safe: bool = False,
                   tz: _dt.tzinfo | None = None, clock: Callable[[], int] | None = None,
                   broker_version: str | None = None) -> BrokerRestartReport:
    """Apply, in place, what a RocketMQ broker does to the index when it restarts after an
    abnormal shutdown (``DefaultMessageStore.load`` with the ``abort`` file present), to measure
    which key lookups it loses. Modelled from the Java source (5.3.x):

    1. The CommitLog is cut at the last complete message (``CommitLog.recoverAbnormally``'s
       processOffset; the torn bytes are zeroed here, which changes nothing the broker reads).
    2. ``IndexService.load(lastExitOK=false)``: every index file (a name ``Long.parseLong``
       accepts; others, such as hidden temporary files, are skipped) whose endTimestamp is
       greater than the checkpoint's indexMsgTimestamp is destroyed. A file shorter than its
       size is first extended with zeros (``FileChannel.map`` does), so a 0-byte file reads an
       all-zero header and stays. A missing checkpoint reads as zeros (StoreCheckpoint creates
       it).
    3. ``CommitLog.recoverAbnormally`` re-dispatches from the newest CommitLog file whose first
       message was stored at or before ``StoreCheckpoint.getMinTimestamp()`` (min(physic,
       logics) - 3 s; with messageIndexSafe also <= indexMsgTimestamp), or from the first file:
       ``IndexService.buildIndex`` for every message from there (skipping offsets below the
       newest remaining file's endPhyOffset). Keys of messages in destroyed files before that
       point are lost. The ConsumeQueue side of the restart is not modelled (key lookups do not
       use it).

    New files are named by the clock at the restart (`clock`, ms since the epoch; default the
    wall clock), as ``IndexService.getAndCreateLastIndexFile`` names them with
    ``System.currentTimeMillis()``: after every file that survived, whatever the store times of
    the messages re-dispatched. The names matter: a query walks the files newest name first
    and stops at the first file whose time range ends before the query's, so a new file
    named by an old store time would sort before the survivors and hide keys the broker finds.
    `broker_version`: the release's index keys (5.4.0+ also puts ``topic#T#tags``).
    Cost: the CommitLog read, headers of the index files, and buildIndex from the recovery file.
    """
    root = Path(root)
    _refuse_ledger(root)
    actions: list[RecoveryAction] = []
    msgs, end, _ = _commitlog(root, commitlog_file_size, False, actions)
    cp_path = StorePaths(root).checkpoint
    cp = _read_checkpoint_or_none(cp_path) or cpf.StoreCheckpoint()
    threshold = cp.recovery_timestamp(message_index_safe)
    report = BrokerRestartReport(str(root), cp.as_dict(), threshold, 0, len(msgs), actions=actions)
    g = Geometry(hash_slot_num, index_num)
    index_dir = StorePaths(root).index
    if index_dir.is_dir():
        for p in sorted(index_dir.iterdir()):
            if not p.is_file() or not is_index_file_name(p.name):
                continue             # NumberFormatException in MappedFile: "load file error", skipped
            size = p.stat().st_size
            if size < g.file_size:
                with open(p, "r+b") as fh:
                    fh.truncate(g.file_size)
                actions.append(RecoveryAction("index-file-extended", str(p), f"{size} -> {g.file_size} bytes "
                                              f"(FileChannel.map extends it)", 1))
            h = read_header(p)
            if h.end_timestamp > cp.index_msg_timestamp:
                p.unlink()
                report.index_files_deleted.append(p.name)
                report.index_keys_deleted += h.keys
                actions.append(RecoveryAction("index-file-removed", str(p), f"endTimestamp {h.end_timestamp} > "
                                              f"indexMsgTimestamp {cp.index_msg_timestamp}: destroyed "
                                              f"({h.keys} keys)", h.keys))
    start, name = recovery_start(root, threshold)
    report.recovery_from_offset = start
    if len(msgs):
        sub = msgs[msgs["phy_offset"].to_numpy(np.int64) >= start]
        report.redispatched_messages = len(sub)
        with IndexService(index_dir, g.hash_slot_num, g.index_num, read_only=False,
                          slot_count_rule=slot_count_rule or slot_count_rule_of(broker_version), tz=tz, clock=clock,
                          strict=False,
                          tag_keys=layout_facts(broker_version).index_tag_key) as svc:
            report.index_keys_added = svc.build_columns(sub) if len(sub) else 0
        actions.append(RecoveryAction("index-entries-added", str(index_dir), f"recoverAbnormally re-dispatched "
                                      f"{len(sub)} messages from {name} (offset {start}): "
                                      f"{report.index_keys_added} keys", report.index_keys_added))
    return report
