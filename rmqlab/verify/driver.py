"""The entry point: :func:`verify_path` over one file, a folder or a whole store."""
from __future__ import annotations

import os
from pathlib import Path

from rmqlab.errors import RmqlabError
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats.indexfile import NEW_SLOT, IndexFile, SlotCountRule
from rmqlab.verify.check_batchconsumequeue import (
    batch_file_size,
    batch_queue_checks,
    batch_queue_cross,
    batch_queue_folders,
    is_lmq,
    lmq_queue_cross,
    multi_dispatch_plain_queues,
    verify_batch_consume_queue,
)
from rmqlab.verify.check_checkpoint import checkpoint_report
from rmqlab.verify.check_commitlog import Messages, scan_commitlog
from rmqlab.verify.check_consumequeue import (
    open_queue,
    queue_checks,
    queue_folders,
    verify_consume_queue,
)
from rmqlab.verify.check_index import open_index
from rmqlab.verify.common import INDEX_FILE_NAME, add_problem
from rmqlab.verify.cross import (
    checkpoint_cross,
    index_dir_cross,
    missing_units,
    queue_cross,
)
from rmqlab.verify.geometry import index_geometries
from rmqlab.verify.kind import detect_kind
from rmqlab.verify.report import KINDS, FileReport, Kind, VerifyReport


def verify_path(path: str | os.PathLike, *, kind: Kind | None = None, hash_slot_num: int | None = None,
                index_num: int | None = None, commitlog_file_size: int | None = None,
                consume_queue_file_size: int | None = None, slot_count_rule: SlotCountRule = NEW_SLOT,
                check_crc: bool = True, broker_version: str | None = None) -> VerifyReport:
    """Verify a store directory, a part of one, or one file (see the module docstring).

    `kind` forces what `path` is (one of :data:`KINDS`; default :func:`detect_kind`).
    `hash_slot_num` / `index_num`: the broker's maxHashSlotNum / maxIndexNum (default: inferred
    from each index file, :func:`infer_index_geometry`); `commitlog_file_size` /
    `consume_queue_file_size`: mappedFileSizeCommitLog / mappedFileSizeConsumeQueue (default:
    the most common file size). `check_crc`: compute every BODYCRC. `broker_version` (None:
    5.x) picks the release's multi-dispatch rule for the light message queue check. Read-only. Raises
    FileNotFoundError / ValueError for a missing or unrecognisable `path`; bad bytes are
    problems in the report, never exceptions. Cost: O(store), vectorized: about 0.3 s for a
    store of 2,000 messages in small files, dominated by a fixed cost per CommitLog file;
    about 11 CPU-s for 4,000,000 messages (benchmarks/bench_scaling.py). Memory: the message
    table, numbers only, about 52 bytes a message plus 16 a key of the index (314 MiB at
    4,000,000 messages with 7.6 M keys, where a frame of the strings held about 750 bytes a
    message), made while each CommitLog file is walked MESSAGE_CHUNK messages at a time; each
    index file's own checks, about 0.6 GiB for a full default-size file; the cross-file checks
    take a chunk of entries at a time. Peak anonymous growth at 4,000,000 messages: about
    1.0 GiB (it was 2.9 GiB).

    >>> import tempfile
    >>> from rmqlab.store import generate_store
    >>> from rmqlab.workload import Workload
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
        kind = detect_kind(p)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    rep = VerifyReport(str(p), kind, settings={"hash_slot_num": hash_slot_num, "index_num": index_num,
                                               "commitlog_file_size": commitlog_file_size,
                                               "consume_queue_file_size": consume_queue_file_size,
                                               "slot_count_rule": slot_count_rule, "check_crc": check_crc})
    if kind == "store":
        if not p.is_dir():
            raise NotADirectoryError(f"{p}: a store is a directory")
        _verify_store(p, rep, hash_slot_num, index_num, commitlog_file_size, consume_queue_file_size,
                      slot_count_rule, check_crc, broker_version)
    elif kind == "commitlog":
        files, _, s = scan_commitlog(p, commitlog_file_size, check_crc, keys=False)
        rep.files = files
        rep.settings["commitlog_file_size"] = s["mapped_file_size"]
    elif kind == "index":
        paths = (sorted(c for c in p.iterdir() if c.is_file() and INDEX_FILE_NAME.fullmatch(c.name))
                 if p.is_dir() else [p])
        opened = _open_indexes(paths, hash_slot_num, index_num, slot_count_rule)
        try:
            rep.files = [r for r, _ in opened]
            rep.cross = index_dir_cross(opened, None, rep.notes, rep.cross_counts)
        finally:
            for _, f in opened:
                if f is not None:
                    f.close()
    elif kind == "consumequeue":
        rep.files = verify_consume_queue(p, mapped_file_size=consume_queue_file_size)
    elif kind == "batchconsumequeue":
        rep.files = verify_batch_consume_queue(p)
    else:
        if p.is_dir():
            raise IsADirectoryError(f"{p}: a checkpoint is a file")
        r, _ = checkpoint_report(p)
        rep.files = [r]
    for f in rep.files:
        rep.notes.extend(f.notes)
    return rep


def _open_indexes(paths: list[Path], hsn, inum, rule) -> list[tuple[FileReport, IndexFile | None]]:
    geos = index_geometries(paths, hsn, inum)
    out = []
    try:
        for q in paths:
            out.append(open_index(q, *geos[q], rule))
    except BaseException:
        for _, f in out:
            if f is not None:
                f.close()
        raise
    return out


def _verify_store(root: Path, rep: VerifyReport, hsn, inum, cl_size, cq_size, rule, check_crc,
                  broker_version: str | None = None) -> None:
    commitlog, index_dir, cq_dir, checkpoint = (root / "commitlog", root / "index", root / "consumequeue",
                                                root / "checkpoint")
    notes = rep.notes
    if (root / "abort").exists():
        notes.append(f"{root / 'abort'}: present: the broker did not shut down cleanly (recovery will re-dispatch "
                     f"from the checkpoint and may delete index files)" + _abnormal_recovery_start(root))
    msgs: Messages | None = None
    if commitlog.is_dir():
        files, msgs, s = scan_commitlog(commitlog, cl_size, check_crc, keys=index_dir.is_dir())
        rep.files += files
        rep.settings["commitlog_file_size"] = s["mapped_file_size"]
        rep.cross_counts["messages"] = msgs.n
    else:
        notes.append(f"{commitlog}: missing: nothing to check index entries and queue units against")
    index_files: list[IndexFile] | None = None
    opened: list[tuple[FileReport, IndexFile | None]] = []
    try:
        if index_dir.is_dir():
            paths = sorted(c for c in index_dir.iterdir() if c.is_file() and INDEX_FILE_NAME.fullmatch(c.name))
            ignored = [c.name for c in index_dir.iterdir() if c.is_file() and not INDEX_FILE_NAME.fullmatch(c.name)]
            if ignored:
                notes.append(f"{index_dir}: ignored (not 17-digit names, as the broker ignores them): "
                             + ", ".join(sorted(ignored)))
            opened = _open_indexes(paths, hsn, inum, rule)
            rep.files += [r for r, _ in opened]
            rep.cross += index_dir_cross(opened, msgs, notes, rep.cross_counts)
            index_files = [f for _, f in opened if f is not None]
        if cq_dir.is_dir():
            queues, dispatched_end, units = [], 0, 0
            plain_targets = multi_dispatch_plain_queues(msgs, broker_version=broker_version) \
                if msgs is not None else set()
            for folder in queue_folders(cq_dir):
                if folder == cq_dir:
                    continue
                q, _ = open_queue(folder, cq_size)
                with q:
                    r = queue_checks(q, str(folder), msgs.end_offset if msgs is not None else None)
                    rep.files.append(r)
                    units += q.count
                    if msgs is not None and (is_lmq(q.topic) or (q.topic, q.queue_id) in plain_targets):
                        rep.cross += lmq_queue_cross(q, msgs, broker_version=broker_version)
                        if not is_lmq(q.topic):
                            queues.append((q.topic, q.queue_id, q.min_offset, q.max_offset))
                    elif msgs is not None and q.topic is not None and q.queue_id is not None:
                        probs, end = queue_cross(q, msgs, str(folder), lambda e: e, notes)
                        rep.cross += probs
                        dispatched_end = max(dispatched_end, end)
                        queues.append((q.topic, q.queue_id, q.min_offset, q.max_offset))
            rep.cross_counts["cq_units"] = units
            queues += _verify_batch_queues(root, rep, msgs)
            if msgs is not None:
                add_problem(rep.cross, missing_units(queues, msgs, dispatched_end))
        if checkpoint.exists():
            r, c = checkpoint_report(checkpoint)
            rep.files.append(r)
            rep.cross += checkpoint_cross(checkpoint, c, msgs, cq_dir.is_dir(), index_files, notes)
            rep.cross_counts["checkpoint"] = True
        else:
            notes.append(f"{checkpoint}: missing")
    finally:
        for _, f in opened:
            if f is not None:
                f.close()


def _verify_batch_queues(root: Path, rep: VerifyReport, msgs: Messages | None) -> list[tuple[str, int, int, int]]:
    """The BatchConsumeQueue folders of a 5.x store: their own checks and their units against
    the CommitLog. Returns (topic, queue id, min, max message offset) of each, so that
    messages of BatchCQ topics count as dispatched."""
    folder = root / bcq.FOLDER
    if not folder.is_dir():
        return []
    out = []
    for qdir in batch_queue_folders(folder):
        with bcq.BatchConsumeQueue.open(qdir, batch_file_size(qdir, None), strict=False) as q:
            rep.files.append(batch_queue_checks(q, msgs.end_offset if msgs is not None else None))
            if msgs is not None:
                rep.cross += batch_queue_cross(q, msgs)
            if q.topic is not None and q.queue_id is not None:
                out.append((q.topic, q.queue_id, q.min_offset, q.max_offset))
    return out


def _abnormal_recovery_start(root: Path) -> str:
    """Where CommitLog.recoverAbnormally would start re-dispatching, as words for the abort note
    (a missing or unreadable checkpoint reads as zeros, as StoreCheckpoint creates it)."""
    from rmqlab.formats import checkpoint as cpf
    from rmqlab.recover import recovery_start

    cp = cpf.StoreCheckpoint()
    try:
        cp = cpf.read_checkpoint(root / "checkpoint", strict=False)
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
