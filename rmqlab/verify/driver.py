"""The entry point: :func:`verify_path` over one file, a folder or a whole store."""
from __future__ import annotations

import os
import uuid
from collections import OrderedDict
from collections.abc import Callable, Generator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import RmqlabError, TruncatedFileError
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import commitlog as cl
from rmqlab.formats import rocksdbcq
from rmqlab.formats.indexfile import IndexFile, SlotCountRule, slot_count_rule_of
from rmqlab.formats.indexgeometry import index_geometries
from rmqlab.formats.storepaths import StorePaths
from rmqlab.rules.dispatch import goes_to_consume_queue_many
from rmqlab.rules.versions import layout_facts
from rmqlab.tables.pool import Pool, check_jobs, default_jobs
from rmqlab.verify.check_batchconsumequeue import (
    BatchQueueCross,
    batch_queue_checks,
    batch_queue_folders,
    is_lmq,
    lmq_queue_cross,
    multi_dispatch_plain_queues,
    verify_batch_consume_queue,
)
from rmqlab.verify.check_checkpoint import checkpoint_report
from rmqlab.verify.check_commitlog import CommitLogScan, Messages
from rmqlab.verify.check_compaction import verify_compaction
from rmqlab.verify.check_consumequeue import (
    cq_file_size,
    open_queue,
    queue_checks,
    queue_checks_early,
    queue_folders,
    verify_consume_queue,
)
from rmqlab.verify.check_dledger import verify_ledger
from rmqlab.verify.check_index import index_checks_apart, open_index
from rmqlab.verify.check_messagerocksdb import verify_message_rocksdb
from rmqlab.verify.check_pop import verify_pop_state
from rmqlab.verify.check_rocksdbcq import verify_rocksdb_queues
from rmqlab.verify.check_tiered import verify_tiered_index, verify_tiered_segments
from rmqlab.verify.check_timer import verify_timer_store
from rmqlab.verify.common import INDEX_FILE_NAME, add_problem
from rmqlab.verify.cross import (
    IndexDirCross,
    MissingUnits,
    QueueCross,
    checkpoint_cross,
    index_dir_cross,
)
from rmqlab.verify.kind import detect_kind
from rmqlab.verify.report import KINDS, FileReport, Kind, VerifyReport, problem_from_error


def verify_path(path: str | os.PathLike, *, kind: Kind | None = None, hash_slot_num: int | None = None,
                index_num: int | None = None, commitlog_file_size: int | None = None,
                consume_queue_file_size: int | None = None, slot_count_rule: SlotCountRule | None = None,
                check_crc: bool = True, broker_version: str | None = None,
                commitlog_paths: list[str | os.PathLike] | None = None,
                tiered_index_geometry: tuple[int | None, int | None] = (None, None),
                tiered_path: str | os.PathLike | None = None,
                progress: Callable[[int, int], None] | None = None, jobs: int | None = None,
                pool: Pool | None = None) -> VerifyReport:
    """Verify a store directory, a part of one, or one file (see the module docstring).

    `kind` forces what `path` is (one of :data:`KINDS`; default :func:`detect_kind`).
    `hash_slot_num` / `index_num`: the broker's maxHashSlotNum / maxIndexNum (default: inferred
    from each index file, :func:`infer_index_geometry`); `commitlog_file_size` /
    `consume_queue_file_size`: mappedFileSizeCommitLog / mappedFileSizeConsumeQueue (default:
    the most common file size). `check_crc`: compute every BODYCRC. `broker_version` (None:
    5.x) picks the release's multi-dispatch rule for the light message queue check and whether
    the index holds TAGS keys (``topic#T#tags``, 5.4.0+; None: judged from the index entries),
    and the hashSlotCount rule unless `slot_count_rule` is given. `commitlog_paths`: the folders
    of a CommitLog kept over several paths (:class:`StorePaths`). `tiered_index_geometry`:
    tieredStoreIndexFileMaxHashSlotNum and MaxIndexNum of the tiered index files (None: from
    the file size and the other, or the defaults). `tiered_path`: the tiered store's file system
    (tieredStoreFilePath), whose segments are checked against the store
    (:func:`verify_tiered_segments`). `progress(done, total)` is called with the CommitLog bytes
    walked before each CommitLog file and at the end. `jobs`: the processes the work is spread
    over (each CommitLog file's walk, decode and per-file checks and its joins with the index
    entries and queue units that point into it, each index file's and each ConsumeQueue's own
    checks, in a worker; what the joins found merged here, in file order); None:
    :func:`~rmqlab.tables.pool.default_jobs` of the CommitLog and index files (the usable cores,
    at most one a file, and 1 below 256 MiB); 1: this process alone. `pool`: where those units
    run instead (a :class:`~rmqlab.tables.pool.Pool` the caller made and closes, such as
    :class:`rmqlab.spark.pool.SparkPool`, a Spark task a unit); not with `jobs`. The report is
    the same, byte for byte, with any `jobs` or `pool`. Read-only. Raises FileNotFoundError / ValueError for a
    missing or unrecognisable `path` (and ValueError for `jobs` < 1); bad bytes are problems in
    the report, never exceptions. Cost: O(store), vectorized, plus a fixed cost a
    CommitLog file (a small store of many small files is dominated by it); a store that
    multi-dispatches to plain topic queues (4.9.x) walks its CommitLog twice. Memory: bounded,
    whatever the store holds. The CommitLog is walked once, MESSAGE_CHUNK messages decoded and
    checked at a time, and index entries and queue units are joined with its messages a window
    of WINDOW_MESSAGES messages at a time (:class:`CommitLogScan`, about 70 bytes a message of
    the window), CROSS_CHUNK entries or units at a time; each index file's own checks hold two
    flags an entry. With `jobs` > 1 each worker holds what one file's walk and joins hold
    (and opens the index files and queues itself); what crosses from a worker is the file's
    problems, what its joins found (counts and first problems) and the few messages the
    dispatch-property rules read. Where CommitLog files overlap, the workers send their files'
    numbers instead (about 70 bytes a message, up to jobs + 1 files waiting) and the joins are
    made here. Measured time and memory
    by store size: benchmarks/RESULTS.md (bench_scaling; bench_jobs for --jobs).

    >>> import tempfile
    >>> from rmqlab.lab.generate import generate_store
    >>> from rmqlab.lab.workload import Workload
    >>> root = Path(tempfile.mkdtemp()) / "store"
    >>> _ = generate_store(root, Workload(messages=300, seed=1), commitlog_file_size=1 << 16,
    ...                    hash_slot_num=16, index_num=128, consume_queue_file_size=2000)
    >>> r = verify_path(root)
    >>> r.ok, r.cross_counts["messages"], r.summary()[-1]
    (True, 300, '12 files, 0 failed, 0 errors, 0 warnings: ok')
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or directory")
    if kind is None:
        kind = "store" if commitlog_paths else detect_kind(p)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    check_jobs(jobs)
    if pool is not None and jobs is not None:
        raise ValueError(f"give jobs ({jobs}) or a pool, not both")
    slot_count_rule = slot_count_rule or slot_count_rule_of(broker_version)
    settings = (hash_slot_num, index_num, commitlog_file_size, consume_queue_file_size, slot_count_rule, check_crc,
                broker_version, commitlog_paths, tiered_index_geometry, tiered_path, progress)
    if pool is not None:
        return _verify(p, kind, *settings, pool)
    if jobs is None:
        jobs = default_jobs(*_work(p, kind, commitlog_paths))
    with Pool(jobs, f"verify {kind}", preload=WORKER_MODULES) as own:
        return _verify(p, kind, *settings, own)


#: the modules a worker of verify_path runs (imported once, by the fork server)
WORKER_MODULES = ("rmqlab.verify.check_commitlog", "rmqlab.verify.check_index", "rmqlab.verify.check_consumequeue",
                  "pandas", "pyarrow.compute")


def _work(p: Path, kind: str, commitlog_paths: list | None) -> tuple[int, int]:
    """(files, bytes) of the work a pool can share for `kind` at `p`: the CommitLog and index
    files; (1, 0) where they cannot be listed (the checks then say why, in one process). Cost:
    one listing of each folder."""
    try:
        if kind == "store":
            where = StorePaths(p, commitlog_paths)
            folders = [where.commitlog, where.index]
        elif kind == "dledger":
            folders = [p / "data"]
        elif kind in ("commitlog", "index"):
            folders = [p]
        else:
            return 1, 0
        sizes = []
        for folder in folders:
            if folder.is_file():
                sizes.append(folder.stat().st_size)
            elif folder.is_dir():
                sizes += [e.stat().st_size for e in os.scandir(folder) if e.is_file()]
    except (OSError, RmqlabError):
        return 1, 0
    return len(sizes), sum(sizes)


def _verify(p: Path, kind: Kind, hash_slot_num, index_num, commitlog_file_size, consume_queue_file_size,
            slot_count_rule, check_crc, broker_version, commitlog_paths, tiered_index_geometry, tiered_path,
            progress, pool: Pool) -> VerifyReport:
    """:func:`verify_path` with its settings checked and its `pool`."""
    rep = VerifyReport(str(p), kind, settings={"hash_slot_num": hash_slot_num, "index_num": index_num,
                                               "commitlog_file_size": commitlog_file_size,
                                               "consume_queue_file_size": consume_queue_file_size,
                                               "slot_count_rule": slot_count_rule, "check_crc": check_crc})
    if kind == "store":
        if not p.is_dir():
            raise NotADirectoryError(f"{p}: a store is a directory")
        _verify_store(p, rep, hash_slot_num, index_num, commitlog_file_size, consume_queue_file_size,
                      slot_count_rule, check_crc, broker_version, commitlog_paths, tiered_index_geometry, tiered_path,
                      progress, pool)
    elif kind == "commitlog":
        scan = CommitLogScan(p, commitlog_file_size, check_crc, keys=False, pool=pool)
        scan.progress, scan.tables = progress, False    # the per-file checks alone: no table
        scan.walk(lambda window: None)
        rep.files = scan.reports
        rep.settings["commitlog_file_size"] = scan.mapped_file_size
    elif kind == "dledger":     # a ledger: DLedger's own rules, and its records as a CommitLog's
        if not p.is_dir():
            raise NotADirectoryError(f"{p}: a DLedger ledger is a directory (dledger-<selfId>)")
        rep.files = [verify_ledger(p, commitlog_file_size)]
        scan = CommitLogScan(p / "data", commitlog_file_size, check_crc, keys=False, pool=pool)
        scan.tables = False
        scan.walk(lambda window: None)
        rep.files += scan.reports
        rep.settings["commitlog_file_size"] = scan.mapped_file_size
    elif kind == "index":
        paths = (sorted(c for c in p.iterdir() if c.is_file() and INDEX_FILE_NAME.fullmatch(c.name))
                 if p.is_dir() else [p])
        opened: list[tuple[FileReport, IndexFile | None]] = []
        try:
            _fill_index_reports(pool, _open_indexes(paths, hash_slot_num, index_num, slot_count_rule, opened, pool))
            rep.files = [r for r, _ in opened]
            rep.cross = index_dir_cross(opened, rep.notes, rep.cross_counts)
        finally:
            for _, f in opened:
                if f is not None:
                    f.close()
    elif kind == "consumequeue":
        rep.files = verify_consume_queue(p, mapped_file_size=consume_queue_file_size)
    elif kind == "batchconsumequeue":
        rep.files = verify_batch_consume_queue(p)
    elif kind == "rocksdbcq":
        rep.files = [verify_rocksdb_queues(p, None)]
    else:
        if p.is_dir():
            raise IsADirectoryError(f"{p}: a checkpoint is a file")
        r, _ = checkpoint_report(p)
        rep.files = [r]
    for fr in rep.files:
        rep.notes.extend(fr.notes)
    return rep


def _open_indexes(paths: list[Path], hsn, inum, rule, out: list[tuple[FileReport, IndexFile | None]],
                  pool: Pool) -> list[tuple[FileReport, Any]]:
    """Open the index files into `out` (which the caller closes, also after an error), each
    with its report: its own checks made here, or with a parallel `pool` submitted to a worker
    each (:func:`index_checks_apart`), returned as (report, unit) for
    :func:`_fill_index_reports`. Cost: O(files) here, the checks O(each file)."""
    geos = index_geometries(paths, hsn, inum)
    pending = []
    for q in paths:
        r, f = open_index(q, *geos[q], rule, checks=not pool.parallel)
        out.append((r, f))
        if f is not None and pool.parallel:
            pending.append((r, pool.submit(index_checks_apart, q, *geos[q], rule)))
        elif f is not None:
            pool.ran_here()
    return pending


def _fill_index_reports(pool: Pool, pending: list[tuple[FileReport, Any]]) -> None:
    """The index files' reports, from their workers' checks (waiting for them)."""
    for r, unit in pending:
        r.counts, r.problems = pool.value(unit)


def _empty_last_files(where: StorePaths, broker_version: str | None) -> list[FileReport]:
    """The CommitLog's and every ConsumeQueue's empty last file (a crash between creating a file
    and writing it), for a release whose MappedFileQueue.load fails on it ("length not matched
    message store config value, please check it manually", and the broker exits: 4.5.x to 4.9.1
    and 4.9.3 to 5.1.2); 5.1.3+ deletes it, and up to 4.4.x and 4.9.2 stop the load there and
    start ("ignore it"). Unknown release (None): the newest rule. Cost: one listing a folder."""
    facts = layout_facts(broker_version) if broker_version is not None else None
    if facts is None or facts.empty_last_file_deleted or facts.mismatched_file != "refuse":
        return []
    folders = [where.commitlog] if where.commitlog.is_dir() else []
    cq_root = where.consumequeue
    if cq_root.is_dir() and not rocksdbcq.is_rocksdb(cq_root):
        folders += [q for t in sorted(cq_root.iterdir()) if t.is_dir() for q in sorted(t.iterdir()) if q.is_dir()]
    out = []
    for folder in folders:
        names = sorted(e.name for e in os.scandir(folder) if e.is_file())
        if names and (folder / names[-1]).stat().st_size == 0:
            rep = FileReport(str(folder / names[-1]), "store")
            rep.problems.append(problem_from_error("store.empty-last-file", TruncatedFileError(
                f"an empty last file: {broker_version}'s MappedFileQueue.load fails on its length (\"length not "
                f"matched message store config value\") and the broker exits; 5.1.3+ deletes it",
                path=folder / names[-1], offset=0, field="file size")))
            out.append(rep)
    return out


def _verify_message_rocksdb(root: Path, cl_size: int | None, commitlog_paths: list | None):
    """:func:`verify_message_rocksdb` beside the store, read with its CommitLog file size."""
    from rmqlab.store.directory import Store

    store = (Store(root, commitlog_file_size=cl_size, commitlog_paths=commitlog_paths) if cl_size
             else Store(root, commitlog_paths=commitlog_paths))
    return verify_message_rocksdb(store)


def _verify_tiered(root: Path, tiered_path, cl_size: int | None, cq_dir: Path, cq_size: int | None,
                   commitlog_paths: list | None) -> list:
    """:func:`verify_tiered_segments` beside the store, read with its file sizes."""
    from rmqlab.store.directory import Store

    files = [f for t in cq_dir.iterdir() if t.is_dir() for q in t.iterdir() if q.is_dir() for f in q.iterdir()
             if f.is_file()] if cq_dir.is_dir() and not rocksdbcq.is_rocksdb(cq_dir) else []
    size = cq_file_size(files, cq_size)
    store = (Store(root, commitlog_file_size=cl_size, consume_queue_file_size=size, commitlog_paths=commitlog_paths)
             if cl_size else Store(root, consume_queue_file_size=size, commitlog_paths=commitlog_paths))
    return verify_tiered_segments(store, tiered_path)


def _verify_store(root: Path, rep: VerifyReport, hsn, inum, cl_size, cq_size, rule, check_crc,
                  broker_version: str | None, commitlog_paths: list | None,
                  tiered_index_geometry: tuple[int | None, int | None], tiered_path: str | os.PathLike | None,
                  progress, pool: Pool) -> None:
    """Every file's own checks, then the cross-file checks: the CommitLog is walked once and the
    index entries and queue units are joined with its messages a window at a time
    (:meth:`CommitLogScan.walk`), so memory follows a window, not the store."""
    where = StorePaths(root, commitlog_paths)
    commitlog, index_dir, cq_dir, checkpoint = where.commitlog, where.index, where.consumequeue, where.checkpoint
    notes = rep.notes
    if (root / "abort").exists():
        notes.append(f"{root / 'abort'}: present: the broker did not shut down cleanly (recovery will re-dispatch "
                     f"from the checkpoint and may delete index files)" + _abnormal_recovery_start(root))
    scan: CommitLogScan | None = None
    if commitlog.is_dir():
        scan = CommitLogScan(commitlog, cl_size, check_crc, keys=index_dir.is_dir(), pool=pool)
        scan.progress = progress
        rep.settings["commitlog_file_size"] = scan.mapped_file_size
    else:
        notes.append(f"{commitlog}: missing: nothing to check index entries and queue units against")
    opened: list[tuple[FileReport, IndexFile | None]] = []
    with ExitStack() as stack:
        stack.callback(_close_indexes, opened)
        index_cross = None
        index_pending: list[tuple[FileReport, Any]] = []
        if index_dir.is_dir():
            paths = sorted(c for c in index_dir.iterdir() if c.is_file() and INDEX_FILE_NAME.fullmatch(c.name))
            ignored = [c.name for c in index_dir.iterdir() if c.is_file() and not INDEX_FILE_NAME.fullmatch(c.name)]
            if ignored:
                notes.append(f"{index_dir}: ignored (not 17-digit names, as the broker ignores them): "
                             + ", ".join(sorted(ignored)))
            # into the list the stack closes; their own checks in workers meanwhile (with a pool)
            index_pending = _open_indexes(paths, hsn, inum, rule, opened, pool)
            # TAGS index keys (5.4.0+): the given version's fact, else judged from the entries
            tag_keys = layout_facts(broker_version).index_tag_key if broker_version is not None else None
            index_cross = IndexDirCross(opened, tag_keys)
        rocks = cq_dir.is_dir() and rocksdbcq.is_rocksdb(cq_dir)   # storeType=defaultRocksDB
        queues = _StoreQueues(root, cq_dir, cq_size, pool) if cq_dir.is_dir() and not rocks else None
        if queues is not None:
            stack.callback(queues.close)
        if scan is not None:
            joins = _Joins(index_cross, queues, root, cq_dir, cq_size)
            # with a parallel pool each CommitLog file's joins are made in its worker
            scan.walk(joins.add, apart=joins)
            rep.files += scan.reports
            rep.cross_counts["messages"] = scan.n
        _fill_index_reports(pool, index_pending)
        rep.files += [r for r, _ in opened]
        if index_cross is not None:
            rep.cross += index_cross.problems(notes, rep.cross_counts, checked=scan is not None,
                                              abnormal=(root / "abort").exists())
        if queues is not None:
            queues.finish(rep, scan, broker_version)
        if rocks:
            rep.files.append(verify_rocksdb_queues(cq_dir, cl.read_columns(commitlog, body=False)
                                                   if scan is not None else None))
        for ledger in where.ledgers:      # a DLedger CommitLog: DLedger's own rules on its ledger
            rep.files.append(verify_ledger(ledger, cl_size))
        rep.files += verify_tiered_index(root, *tiered_index_geometry)   # the tiered store's index (RIP-65)
        rep.files += _empty_last_files(where, broker_version)
        if (root / "rocksdbstore").is_dir():   # 5.5's message RocksDB: index, timer, transaction records
            if (mrocks := _verify_message_rocksdb(root, scan.mapped_file_size if scan is not None else cl_size,
                                                  commitlog_paths)) is not None:
                rep.files.append(mrocks)
        if tiered_path is not None:   # the tiered store's segments (RIP-57), against this store's queues
            rep.files += _verify_tiered(root, tiered_path, scan.mapped_file_size if scan is not None else cl_size,
                                        cq_dir, cq_size, commitlog_paths)
        if (root / "compaction").is_dir():   # 5.1+ compaction store
            rep.files += verify_compaction(root)
        if (root / "timerwheel").exists():   # 5.x timer store
            rep.files.append(verify_timer_store(root, scan.mapped_file_size if scan is not None else cl_size,
                                                commitlog_paths=commitlog_paths))
        if scan is not None and (pop := verify_pop_state(root, scan.mapped_file_size, cq_size,
                                                          commitlog_paths=commitlog_paths)) is not None:
            rep.files.append(pop)   # 5.x pop consumption: the revive log
        if checkpoint.exists():
            r, c = checkpoint_report(checkpoint)
            rep.files.append(r)
            index_files = [f for _, f in opened if f is not None] if index_dir.is_dir() else None
            rep.cross += checkpoint_cross(checkpoint, c, scan, cq_dir.is_dir(), index_files, notes)
            rep.cross_counts["checkpoint"] = True
        else:
            notes.append(f"{checkpoint}: missing")


def _close_indexes(opened: list[tuple[FileReport, IndexFile | None]]) -> None:
    for _, f in opened:
        if f is not None:
            f.close()


#: ConsumeQueues whose own checks a worker takes at once: a queue's checks cost about a
#: millisecond, less than a unit's round trip to a process (a pickle each way) or a Spark task
QUEUE_BATCH = 64

#: Queues :class:`_StoreQueues` keeps open between windows (each holds a file handle and a map a
#: file); past it the least recently used is closed and opened again when next needed.
MAX_OPEN_QUEUES = 256


class _OpenQueues:
    """Queue folders opened once and kept open, at most MAX_OPEN_QUEUES at a time: an open
    finds the queue's ends (recover()), about a millisecond a queue."""

    def __init__(self, opener):
        self.opener = opener
        self.queues: OrderedDict[Path, Any] = OrderedDict()

    def __getitem__(self, folder: Path):
        q = self.queues.get(folder)
        if q is not None:
            self.queues.move_to_end(folder)
            return q
        q = self.queues[folder] = self.opener(folder)
        if len(self.queues) > MAX_OPEN_QUEUES:
            self.queues.popitem(last=False)[1].close()
        return q

    def close(self) -> None:
        while self.queues:
            self.queues.popitem()[1].close()


def _open_queues(cq_size: int | None) -> tuple[_OpenQueues, _OpenQueues]:
    """The ConsumeQueue and the BatchConsumeQueue folders, each opened at its first use."""
    return (_OpenQueues(lambda folder: open_queue(folder, cq_size)[0]),
            _OpenQueues(lambda folder: bcq.BatchConsumeQueue.open(folder, bcq.batch_file_size(folder), strict=False)))


@dataclass
class _QueueFacts:
    """What the joins read of a store's queue folders before its first window (picklable)."""

    folders: list[Path]                           # the ConsumeQueue folders
    names: dict[Path, tuple[str | None, int | None]]   # (topic, queue id) of each
    lmq: set[Path]                                # the light message queues among them
    #: (topic, queue id, min offset, max offset) of each queue that counts as dispatched to
    queues: list[tuple[str, int, int, int]]
    batch_folders: list[Path]                     # the BatchConsumeQueue folders


class _StoreQueues:
    """The ConsumeQueue and BatchConsumeQueue folders of a store: their units joined with the
    messages a window at a time (:meth:`add`), then their own checks and every problem
    (:meth:`finish`). `facts`: the folders' facts, read already (in a worker: the parent's).
    Call :meth:`close` at the end."""

    def __init__(self, root: Path, cq_dir: Path, cq_size: int | None, pool: Pool | None,
                 facts: _QueueFacts | None = None, opened: _WorkerFiles | None = None):
        self.cq_size, self.pool = cq_size, pool
        # the queues open: `opened`'s (a worker's, kept from unit to unit), else this object's
        self.cq, self.bcq = (opened.cq, opened.bcq) if opened is not None else _open_queues(cq_size)
        self.facts = facts if facts is not None else self._read_facts(root, cq_dir)
        self.folders, self.names, self.lmq = self.facts.folders, self.facts.names, self.facts.lmq
        self.queues, self.batch_folders = self.facts.queues, self.facts.batch_folders
        self.plain = {f: QueueCross(str(f)) for f in self.folders
                      if f not in self.lmq and None not in self.names[f]}
        self.batch = {f: BatchQueueCross() for f in self.batch_folders}
        if opened is not None:     # which queue files' offsets never decrease: known from earlier units
            checks: list[QueueCross | BatchQueueCross] = [*self.plain.values(), *self.batch.values()]
            for check in checks:
                check.ordered = opened.ordered
        self.missing = MissingUnits(self.queues)
        # the parent's: each queue's own checks started now, ahead of the CommitLog's walk (they
        # need the CommitLog's end only where a unit ends past it: finish checks those again)
        self.early = (pool.submit_all(queue_checks_early, [(folder, cq_size) for folder in self.folders],
                                      batch=QUEUE_BATCH)
                      if pool is not None and pool.parallel and opened is None else None)

    def _read_facts(self, root: Path, cq_dir: Path) -> _QueueFacts:
        """Open every queue (kept open, up to MAX_OPEN_QUEUES) for its names and ends."""
        facts = _QueueFacts([folder for folder in queue_folders(cq_dir) if folder != cq_dir], {}, set(), [], [])
        for folder in facts.folders:
            q = self.cq[folder]
            facts.names[folder] = (q.topic, q.queue_id)
            if is_lmq(q.topic):
                facts.lmq.add(folder)
            elif q.topic is not None and q.queue_id is not None:
                facts.queues.append((q.topic, q.queue_id, q.min_offset, q.max_offset))
        bcq_dir = root / bcq.FOLDER
        facts.batch_folders = batch_queue_folders(bcq_dir) if bcq_dir.is_dir() else []
        for folder in facts.batch_folders:
            bq = self.bcq[folder]
            if bq.topic is not None and bq.queue_id is not None:
                facts.queues.append((bq.topic, bq.queue_id, bq.min_offset, bq.max_offset))
        return facts

    def state(self) -> tuple:
        """What the joins found (picklable), for :meth:`merge`."""
        return ([c.state() for c in self.plain.values()], [c.state() for c in self.batch.values()],
                self.missing.state())

    def merge(self, state: tuple) -> None:
        """Take in :meth:`state` of the joins with the windows that come next (a later
        CommitLog file's, made in a worker)."""
        plain, batch, missing = state
        for check, found in zip(self.plain.values(), plain):
            check.merge(found)
        for bcheck, found in zip(self.batch.values(), batch):
            bcheck.merge(found)
        self.missing.merge(missing)

    def close(self) -> None:
        for check in self.plain.values():
            check.close()
        self.cq.close()
        self.bcq.close()

    def _dispatched_end(self, exclude: set[tuple[str, int]]) -> int:
        return max((c.end for f, c in self.plain.items() if self.names[f] not in exclude), default=0)

    def add(self, w: Messages) -> None:
        before = self._dispatched_end(set())
        for folder, check in self.plain.items():
            check.add(self.cq[folder], w)
        for folder, bcheck in self.batch.items():
            bcheck.add(self.bcq[folder], w)
        end = self._dispatched_end(set())
        self.missing.add(w, end if end > before else 0)

    def finish(self, rep: VerifyReport, scan: CommitLogScan | None, broker_version: str | None) -> None:
        assert self.pool is not None    # the parent's queues: a worker's only join
        side: Messages | None = None
        targets: set = set()
        if scan is not None:
            side = scan.side
            targets = multi_dispatch_plain_queues(side, broker_version=broker_version)
            if targets:
                self._walk_again(scan, targets)
                side = scan.side
        end = scan.end_offset if scan is not None else None
        # each queue's own checks: made in the workers (a parallel pool, started with the index
        # files' checks), taken back in folder order; else here, one at a time
        checked = self._early_reports(end) if self.early is not None else None
        try:
            rep.cross_counts["cq_units"] = self._queue_reports(rep, scan, end, side, targets, broker_version,
                                                               checked)
        finally:
            if checked is not None:
                checked.close()
        for folder in self.batch_folders:
            rep.files.append(batch_queue_checks(self.bcq[folder], end))
            if scan is not None:
                rep.cross += self.batch[folder].problems()
        if scan is not None:
            add_problem(rep.cross, self.missing.result())

    def _early_reports(self, end: int | None) -> Generator[FileReport, None, None]:
        """The queues' own reports from the checks started early, in folder order: a queue
        with a unit that ends past the CommitLog's `end` is checked again here, with it."""
        assert self.pool is not None and self.early is not None
        for folder, (report, message_end) in zip(self.folders, self.pool.values(self.early, QUEUE_BATCH)):
            if end is not None and message_end is not None and message_end > end:
                report = queue_checks(self.cq[folder], str(folder), end)
            yield report

    def _queue_reports(self, rep: VerifyReport, scan: CommitLogScan | None, end: int | None, side: Messages | None,
                       targets: set, broker_version: str | None, checked) -> int:
        """Each ConsumeQueue's report (its own checks: here, or from `checked`, the workers'
        reports in folder order; `end` the CommitLog's end) and its units against the messages;
        returns the units."""
        units = 0
        for folder in self.folders:
            q = self.cq[folder]
            if checked is None:
                assert self.pool is not None    # the parent's queues: a worker's only join
                self.pool.ran_here()
                rep.files.append(queue_checks(q, str(folder), end))
            else:
                rep.files.append(next(checked))
            units += q.count
            if scan is None:
                continue
            if folder in self.lmq or self.names[folder] in targets:
                assert side is not None     # set above whenever scan is
                rep.cross += lmq_queue_cross(q, side, broker_version=broker_version, store_messages=scan.n)
            elif folder in self.plain:
                rep.cross += self.plain[folder].problems(rep.notes)
        return units

    def _walk_again(self, scan: CommitLogScan, targets: set[tuple[str, int]]) -> None:
        """A store that multi-dispatches to plain topic queues (4.9.x): those queues are checked
        as light message queues, with their own messages, and do not count for the dispatched
        end. Their own messages, and the missing units with that end, take a second walk."""
        end = self._dispatched_end(targets)
        self.missing = MissingUnits(self.queues)

        def own(w: Messages) -> np.ndarray:
            wanted = np.array([(w.code_of_topic(t) << 32) | (qid & 0xFFFFFFFF) for t, qid in targets], np.int64)
            have = (w.topic_code.astype(np.int64) << 32) | (w.queue_id.astype(np.int64) & 0xFFFFFFFF)
            return np.flatnonzero(np.isin(have, wanted) & goes_to_consume_queue_many(w.sys_flag))

        scan.walk(lambda w: self.missing.add(w, end if end > 0 and w.n and w.contains(np.array([end - 1]))[0] else 0),
                  keep=own)


class _JoinChecks:
    """The index files' and the queues' checks against the messages (either may be None),
    joined with a window of the message table at a time (:meth:`add`)."""

    index_cross: IndexDirCross | None
    queues: _StoreQueues | None

    def add(self, window: Messages) -> None:
        if self.index_cross is not None:
            self.index_cross.add(window)
        if self.queues is not None:
            self.queues.add(window)


class _Joins(_JoinChecks):
    """The joins of a store's index entries and queue units with its messages, a window at a
    time (:meth:`add`). With a parallel pool each CommitLog file's are made in the worker that
    walks it (:meth:`worker` makes them there, from this one's facts), and what they found is
    merged here in file order (:meth:`merge`), as if each window had been joined here."""

    def __init__(self, index_cross: IndexDirCross | None, queues: _StoreQueues | None, root: Path, cq_dir: Path,
                 cq_size: int | None):
        self.index_cross, self.queues = index_cross, queues
        self.root, self.cq_dir, self.cq_size = root, cq_dir, cq_size
        self.token = uuid.uuid4().hex      # names this verify to the workers (their open files)

    def worker(self) -> _WorkerJoins:
        """What makes these joins in a worker: the index files' geometry and the queues' facts."""
        index = None
        if self.index_cross is not None:
            index = ([(f.path, f.geometry.hash_slot_num, f.geometry.index_num, f.slot_count_rule)
                      for f in self.index_cross.live], self.index_cross.tag_keys, self.index_cross.ordered)
        return _WorkerJoins(index, self.queues.facts if self.queues is not None else None, self.root, self.cq_dir,
                            self.cq_size, self.token)

    def merge(self, state: tuple) -> None:
        """Take in what a worker's joins found (:meth:`_WorkerJoins.__call__`), in file order."""
        index, queues = state
        if self.index_cross is not None:
            self.index_cross.merge(index)
        if self.queues is not None:
            self.queues.merge(queues)


@dataclass
class _WorkerJoins:
    """The joins of :class:`_Joins` as a worker makes them (picklable): each call returns an
    object whose ``add(window)`` joins a window and whose ``state()`` (once, at the end) says what
    was found. The index files and queues it opens stay open in the worker for the next unit of
    the same verify (`token`), and are closed when a unit of another comes."""

    index: tuple[list[tuple[Path, int, int, SlotCountRule]], bool | None, list[bool]] | None
    queues: _QueueFacts | None
    root: Path
    cq_dir: Path
    cq_size: int | None
    token: str

    def __call__(self) -> _OpenJoins:
        return _OpenJoins(self, _worker_files(self))


class _WorkerFiles:
    """What a worker keeps open for the units of one verify: its index files, its queues (at
    most MAX_OPEN_QUEUES at a time) and which queue files' offsets never decrease."""

    def __init__(self, spec: _WorkerJoins):
        self.index: list[IndexFile] = []
        self.cq, self.bcq = _open_queues(spec.cq_size)
        self.ordered: dict[str, bool] = {}
        try:
            for path, hsn, inum, rule in spec.index[0] if spec.index is not None else []:
                self.index.append(IndexFile.open(path, hsn, inum, slot_count_rule=rule, strict=False))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.cq.close()
        self.bcq.close()
        for f in self.index:
            f.close()
        self.index = []


#: the files this worker process keeps open, by the verify they belong to (at most one)
_WORKER_FILES: dict[str, _WorkerFiles] = {}


def _worker_files(spec: _WorkerJoins) -> _WorkerFiles:
    """The files open for `spec`'s verify: opened at its first unit here, those of an earlier
    verify closed then."""
    files = _WORKER_FILES.get(spec.token)
    if files is None:
        while _WORKER_FILES:
            _WORKER_FILES.popitem()[1].close()
        files = _WORKER_FILES[spec.token] = _WorkerFiles(spec)
    return files


class _OpenJoins(_JoinChecks):
    """:class:`_WorkerJoins` made: the joins of one unit over the files `files` keeps open."""

    def __init__(self, spec: _WorkerJoins, files: _WorkerFiles):
        self.index_cross = None
        self.queues = None
        if spec.index is not None:
            _, tag_keys, ordered = spec.index
            self.index_cross = IndexDirCross([(None, f) for f in files.index], tag_keys, ordered)
        if spec.queues is not None:
            self.queues = _StoreQueues(spec.root, spec.cq_dir, spec.cq_size, None, spec.queues, files)

    def state(self) -> tuple:
        if self.queues is not None:
            for check in self.queues.plain.values():    # their ConsumeQueueExt files
                check.close()
        return (self.index_cross.state() if self.index_cross is not None else None,
                self.queues.state() if self.queues is not None else None)


def _abnormal_recovery_start(root: Path) -> str:
    """Where CommitLog.recoverAbnormally would start re-dispatching, as words for the abort note
    (a missing or unreadable checkpoint reads as zeros, as StoreCheckpoint creates it)."""
    from rmqlab.formats import checkpoint as cpf
    from rmqlab.store.recover import recovery_start

    cp = cpf.StoreCheckpoint()
    try:
        cp = cpf.read_checkpoint(StorePaths(root).checkpoint, strict=False)
    except (OSError, RmqlabError):
        pass
    try:
        start, name = recovery_start(root, cp.recovery_timestamp())
    except (OSError, RmqlabError):
        return ""
    if name is None:
        return ""
    return (f"; recoverAbnormally re-dispatches from CommitLog file {name} (offset {start}): the newest whose "
            f"first message was stored at or before the checkpoint's min timestamp {cp.recovery_timestamp()}, "
            f"else the first")
