"""Every file of a Kafka partition directory besides the segments: what it is and whether it is sound.

A broker keeps, beside each segment's ``.log`` / ``.index`` / ``.timeindex``:

=============================  ============================================================
``<offset>.snapshot``          producer state at that offset (:mod:`rmqlab.kafka.producer_state`)
``<base>.txnindex``            aborted transactions of a segment (:mod:`rmqlab.kafka.txnindex`)
``leader-epoch-checkpoint``    where each leader epoch started (:mod:`rmqlab.kafka.checkpoints`)
``partition.metadata``         the topic id (:mod:`rmqlab.kafka.checkpoints`)
``quorum-state``               KRaft election state, ``__cluster_metadata`` only
``<end>-<epoch>.checkpoint``   KRaft metadata snapshot (:mod:`rmqlab.kafka.kraft`)
``bootstrap.checkpoint``       the snapshot a KRaft cluster is formatted with
``*.deleted`` ``*.cleaned``    left by an interrupted delete, compaction or swap, or a
``*.swap`` ``*.tmp``           checkpoint write (``LogLoader`` removes or completes them on
``*.checkpoint.part``          start; Kafka 3.9 ``LogFileUtils``, ``Snapshots``)
=============================  ============================================================

:func:`check_partition_files` classifies each file (:func:`file_kind`), reads it with its
reader and lists its problems (CRC, sizes, ordering), for ``rmqlab kafka verify`` to report
beside the segments.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "leader-epoch-checkpoint").write_text("0\\n1\\n0 0\\n")
>>> [(c.file.name, c.kind, c.problems) for c in check_partition_files(d)]
[('leader-epoch-checkpoint', 'leader-epoch-checkpoint', [])]
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from rmqlab.errors import RmqlabError
from rmqlab.kafka.index import orphaned_index_note

__all__ = ["FileCheck", "file_kind", "check_file", "check_partition_files", "SEGMENT_KINDS", "DUMP_KINDS",
           "dump_order", "partition_directories"]

SEGMENT_KINDS = ("log", "index", "timeindex")
# the files at the top of a log directory (rmqlab.kafka.logdir), each its own kind
_LOG_DIR_KINDS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
                  "cleaner-offset-checkpoint", "meta.properties", ".kafka_cleanshutdown")
# LogFileUtils.DELETED_FILE_SUFFIX, CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX; CheckpointFile's
# ".tmp"; Snapshots.PARTIAL_SUFFIX
_TRANSIENT = (".deleted", ".cleaned", ".swap", ".tmp", ".checkpoint.part")


def file_kind(path: str | os.PathLike) -> str:
    """What a file of a partition directory is, by its name: ``log``, ``index``,
    ``timeindex``, ``producer-snapshot``, ``txnindex``, ``kraft-snapshot``,
    ``leader-epoch-checkpoint``, ``partition.metadata``, ``quorum-state``, ``transient`` (see
    the module table) or ``unknown``; a log directory's own files (:mod:`rmqlab.kafka.logdir`)
    are their names: ``recovery-point-offset-checkpoint`` ... ``meta.properties``,
    ``.kafka_cleanshutdown``.

    Cost: O(1).

    >>> file_kind("00000000000000000913.snapshot"), file_kind("bootstrap.checkpoint"), file_kind("x.swp")
    ('producer-snapshot', 'kraft-snapshot', 'unknown')
    """
    name = Path(path).name
    if name.endswith(_TRANSIENT):
        return "transient"
    if name in ("leader-epoch-checkpoint", "partition.metadata", "quorum-state") or name in _LOG_DIR_KINDS:
        return name
    for suffix, kind in ((".log", "log"), (".index", "index"), (".timeindex", "timeindex"),
                         (".snapshot", "producer-snapshot"), (".txnindex", "txnindex"),
                         (".checkpoint", "kraft-snapshot")):
        if name.endswith(suffix):
            return kind
    return "unknown"


class FileCheck(NamedTuple):
    """One file's verdict: the file, its problems (sentences; empty when sound), a
    one-line summary of what it holds, and notes (what the broker will do with it, not faults;
    :func:`rmqlab.kafka.logdir.check_log_dir` fills them)."""

    file: Path
    problems: list[str]
    summary: str
    notes: Sequence[str] = ()

    @property
    def kind(self) -> str:
        return "log-dir" if self.file.is_dir() else file_kind(self.file)

    @property
    def ok(self) -> bool:
        return not self.problems


def _leader_epochs(path: Path) -> tuple[list[str], str]:
    from rmqlab.kafka.checkpoints import read_leader_epoch_checkpoint

    df = read_leader_epoch_checkpoint(path)
    problems = []
    epochs, starts = df["epoch"].tolist(), df["start_offset"].tolist()
    # LeaderEpochFileCache keeps both increasing: a new epoch starts at or after the last one
    for i in range(1, len(epochs)):
        if epochs[i] <= epochs[i - 1]:
            problems.append(f"entry {i}: epoch {epochs[i]} does not increase (previous {epochs[i - 1]})")
            break
    for i in range(1, len(starts)):
        if starts[i] < starts[i - 1]:
            problems.append(f"entry {i}: start offset {starts[i]} is below the previous {starts[i - 1]}")
            break
    if any(e < 0 for e in epochs) or any(s < 0 for s in starts):
        problems.append("a negative epoch or start offset")
    text = ", ".join(f"{e}@{s}" for e, s in zip(epochs, starts))
    return problems, f"leader epochs (epoch@startOffset): {text or 'none'}"


def _partition_metadata(path: Path) -> tuple[list[str], str]:
    from rmqlab.kafka.checkpoints import read_partition_metadata

    m = read_partition_metadata(path)
    return [], f"topic id {m['topic_id']} ({m['topic_uuid']})"


def _quorum_state(path: Path) -> tuple[list[str], str]:
    from rmqlab.kafka.checkpoints import read_quorum_state

    s = read_quorum_state(path)
    voters = [v.get("voterId") for v in s.get("currentVoters") or [] if isinstance(v, dict)]
    return [], (f"leaderId {s.get('leaderId')} leaderEpoch {s.get('leaderEpoch')} votedId {s.get('votedId')} "
                f"voters {voters}")


def _producer_snapshot(path: Path) -> tuple[list[str], str]:
    from rmqlab.kafka.producer_state import producer_snapshot_problems

    problems, s = producer_snapshot_problems(path)
    if "producers" not in s:
        return problems, "producer-state snapshot (unreadable)"
    crc = "CRC-32C valid" if s["crc_ok"] else "CRC-32C mismatch"
    return problems, (f"producer-state snapshot at offset {s['offset']}: {s['producers']} producer(s), "
                      f"{s['transactional']} in a transaction, {crc}")


def _txn_index(path: Path) -> tuple[list[str], str]:
    from rmqlab.kafka.txnindex import txn_index_problems

    orphan = orphaned_index_note(path)
    if orphan is not None:
        return [], orphan

    problems, s = txn_index_problems(path)
    return problems, f"transaction index: {s.get('aborted', '?')} aborted transaction(s)"


def _kraft_snapshot(path: Path) -> tuple[list[str], str]:
    from rmqlab.kafka.kraft import kraft_snapshot_problems, read_kraft_snapshot

    problems = kraft_snapshot_problems(path)
    try:
        s = read_kraft_snapshot(path)
    except RmqlabError:
        return problems, "KRaft metadata snapshot (unreadable)"
    where = ("bootstrap snapshot" if s["end_offset"] is None
             else f"snapshot end offset {s['end_offset']}, epoch {s['epoch']}")
    n = sum(s["type_counts"].values())
    return problems, f"KRaft metadata {where}: {s['batches']} batch(es), {n} record(s)"


def _log_dir_file(path: Path) -> tuple[list[str], str]:
    # read alone; rmqlab.kafka.logdir.check_log_dir judges them against the partitions
    from rmqlab.kafka import logdir

    if path.name == logdir.META_PROPERTIES:
        m = logdir.read_meta_properties(path)
        return [], f"meta.properties version {m['version']}, node {m['node_id']}, cluster.id {m['cluster_id']}"
    if path.name == logdir.CLEAN_SHUTDOWN:
        s = logdir.read_clean_shutdown(path)
        return [], "clean-shutdown marker" + (f", broker epoch {s['broker_epoch']}" if s["broker_epoch"] is not None
                                              else "")
    ck = logdir.read_offset_checkpoint(path)
    return [], f"{logdir.OFFSET_CHECKPOINTS[path.name][1]}s of {len(ck)} partition(s)"


_CHECKS = {**{kind: _log_dir_file for kind in _LOG_DIR_KINDS},
           "leader-epoch-checkpoint": _leader_epochs, "partition.metadata": _partition_metadata,
           "quorum-state": _quorum_state, "producer-snapshot": _producer_snapshot, "txnindex": _txn_index,
           "kraft-snapshot": _kraft_snapshot}


def check_file(path: str | os.PathLike) -> FileCheck:
    """One non-segment file's :class:`FileCheck`. A read error becomes a problem (its message
    names file, offset and field); transient and unknown files have none (the broker removes
    the first on start and ignores the second) but say what they are.

    Cost: reads the file (they are small: a snapshot is the largest).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "partition.metadata"
    >>> _ = p.write_text("version: 0\\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    >>> check_file(p).summary
    'topic id AAAAAAAAAAAAAAAAAAAAAQ (00000000-0000-0000-0000-000000000001)'
    """
    path = Path(path)
    kind = file_kind(path)
    if kind in SEGMENT_KINDS:
        orphan = orphaned_index_note(path)
        return FileCheck(path, [], orphan or f"segment file ({kind}): verified with the segments")
    if kind == "transient":
        return FileCheck(path, [], "left by an interrupted operation; the broker removes or completes it on start")
    if kind == "unknown":
        return FileCheck(path, [], "not a file Kafka writes in a partition directory (the broker ignores it)")
    try:
        problems, summary = _CHECKS[kind](path)
    except RmqlabError as e:
        return FileCheck(path, [str(e)], f"{kind} (unreadable)")
    except OSError as e:
        return FileCheck(path, [f"cannot read: {e.strerror}"], f"{kind} (unreadable)")
    return FileCheck(path, problems, summary)


def check_partition_files(directory: str | os.PathLike, *, segments: bool = False) -> list[FileCheck]:
    """A :class:`FileCheck` for every file of a partition directory except the segments'
    ``.log`` / ``.index`` / ``.timeindex`` (with ``segments=True`` those are listed too, without
    checks), in name order. An ``.index`` or ``.timeindex`` without its ``.log`` is listed, with
    the broker's rule for it (deleted on load: :func:`~rmqlab.kafka.index.orphaned_index_note`).
    Sub-directories are not entered.

    Cost: O(files); each file is read once.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "00000000000000000000.log").write_bytes(b"")
    >>> _ = (d / "00000000000000000000.txnindex").write_bytes(b"\\x00" * 10)
    >>> [(c.file.name, c.problems) for c in check_partition_files(d)]
    [('00000000000000000000.txnindex', ['10 bytes of a partial entry at the end'])]

    Raises NotADirectoryError / FileNotFoundError for a path that is not a directory.
    """
    d = Path(directory)
    if not d.is_dir():
        raise NotADirectoryError(f"{d}: not a directory")
    out = []
    for p in sorted(d.iterdir()):
        if not p.is_file():
            continue
        if file_kind(p) in SEGMENT_KINDS and not segments and orphaned_index_note(p) is None:
            continue
        out.append(check_file(p))
    return out


#: the kinds ``kafka-dump-log`` (and ``rmqlab kafka dump``) reads, in the order a segment's files
#: are dumped: the log first, then its indexes, then what is named by an offset beside it
DUMP_KINDS = ("log", "index", "timeindex", "txnindex", "producer-snapshot", "kraft-snapshot",
              "leader-epoch-checkpoint", "partition.metadata", "quorum-state")
_PARTITION_NAME = re.compile(r"^(.+)-(\d+)$")       # LogFileUtils / UnifiedLog.parseTopicPartitionName


def _dump_key(path: Path) -> tuple[int, int, int, str]:
    """Files named by an offset first, by that offset (``.checkpoint``: its end offset), then
    the kind's place in DUMP_KINDS; the partition's named files last, by name."""
    stem = path.name.partition(".")[0].partition("-")[0]
    kind = DUMP_KINDS.index(file_kind(path))
    if stem.isascii() and stem.isdigit():
        return (0, int(stem), kind, path.name)
    return (1, 0, kind, path.name)


def partition_directories(directory: str | os.PathLike) -> list[Path]:
    """The partition directories (``<topic>-<partition>``) of a log directory, by topic and then
    partition number (``t-2`` before ``t-10``). Cost: one directory listing.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("t-10", "t-2", "a-0", "notes"):
    ...     (d / name).mkdir()
    >>> [p.name for p in partition_directories(d)]
    ['a-0', 't-2', 't-10']
    """
    found = []
    for p in Path(directory).iterdir():
        m = _PARTITION_NAME.match(p.name)
        if m and p.is_dir():
            found.append((m[1], int(m[2]), p))
    return [p for _, _, p in sorted(found)]


def dump_order(directory: str | os.PathLike) -> list[Path]:
    """The files of `directory` a dump reads, in the order it reads them. A partition directory:
    its files of the :data:`DUMP_KINDS`, segment by segment (``.log``, ``.index``,
    ``.timeindex``, ``.txnindex``; a ``.snapshot`` at its offset), then ``leader-epoch-checkpoint``,
    ``partition.metadata``, ``quorum-state``. A log directory (one holding partition directories):
    its own such files (a KRaft ``bootstrap.checkpoint``), then each partition's
    (:func:`partition_directories`). Other files are left out (``meta.properties``, the log
    directory's offset checkpoints, lock and marker files, transient files). An empty list when
    there is nothing to dump. Cost: a listing of the directory and of each partition directory.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> p = d / "t-0"
    >>> p.mkdir()
    >>> for name in ("00000000000000000010.index", "00000000000000000010.log", "00000000000000000000.log",
    ...              "00000000000000000010.snapshot", "leader-epoch-checkpoint", ".lock"):
    ...     _ = (p / name).write_bytes(b"")
    >>> [f.name for f in dump_order(d)]       # the log directory: each partition in order
    ['00000000000000000000.log', '00000000000000000010.log', '00000000000000000010.index', \
'00000000000000000010.snapshot', 'leader-epoch-checkpoint']
    """
    d = Path(directory)
    return _own_dump_files(d) + [f for part in partition_directories(d) for f in _own_dump_files(part)]


def _own_dump_files(d: Path) -> list[Path]:
    return sorted((p for p in d.iterdir() if p.is_file() and file_kind(p) in DUMP_KINDS), key=_dump_key)
