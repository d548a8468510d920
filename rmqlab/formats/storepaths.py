"""Where a broker keeps each file of its store, under the store root (``storePathRootDir``).

RocketMQ ``store/config/StorePathConfigHelper.java`` names the folders and files below the root,
and ``MessageStoreConfig.storePathCommitLog`` defaults to ``<root>/commitlog`` (read at
rocketmq-all-4.9.7 and 5.3.1). Each name is spelled here once; every other module asks
:class:`StorePaths`. A store with ``enableDLegerCommitLog`` (4.5+) keeps its CommitLog in DLedger's
data folder, ``<root>/dledger-<selfId>/data`` (``DLedgerCommitLog``; :mod:`rmqlab.formats.dledger`):
:attr:`StorePaths.commitlog` is that folder there. A plain CommitLog switched to DLedger keeps its
old files: ``DLedgerCommitLog`` (rocketmq-all-4.9.7 and 5.3.3, ``setRecoverPosition``) seals the
last one with a blank and starts the ledger's first file at its end, ``dividedCommitlogOffset``,
reading below it from ``commitlog/`` and from it on from the ledger: :attr:`StorePaths.commitlog`
is then one view of both.

>>> p = StorePaths("/data/store")
>>> str(p.commitlog), str(p.consumequeue_ext), p.checkpoint.name
('/data/store/commitlog', '/data/store/consumequeue_ext', 'checkpoint')
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rmqlab.errors import FormatError

__all__ = [
    "COMMITLOG",
    "CONSUMEQUEUE",
    "CONSUMEQUEUE_EXT",
    "BATCHCONSUMEQUEUE",
    "INDEX",
    "CHECKPOINT",
    "ABORT",
    "CONFIG",
    "StorePaths",
    "queue_folders",
]

COMMITLOG = "commitlog"                  # MessageStoreConfig.storePathCommitLog: <root>/commitlog
CONSUMEQUEUE = "consumequeue"            # getStorePathConsumeQueue: <topic>/<queueId>/ below it
CONSUMEQUEUE_EXT = "consumequeue_ext"    # getStorePathConsumeQueueExt (enableConsumeQueueExt)
BATCHCONSUMEQUEUE = "batchconsumequeue"  # getStorePathBatchConsumeQueue (5.x BatchCQ topics)
INDEX = "index"                          # getStorePathIndex: IndexFile files named yyyyMMddHHmmssSSS
CHECKPOINT = "checkpoint"                # getStoreCheckpoint: StoreCheckpoint
ABORT = "abort"                          # getAbortFile: present while a broker runs (or after a crash)
CONFIG = "config"                        # BrokerPathConfigHelper: topics.json, consumerOffset.json, ...
DLEDGER_PREFIX = "dledger-"              # DLedgerConfig.getDefaultPath: <root>/dledger-<selfId>/{data,index,...}


@dataclass(frozen=True)
class StorePaths:
    """The paths of one store's folders and files. Nothing is created: each property is a path,
    whether or not it exists. Cost: O(1), but :attr:`commitlog` and :attr:`ledgers` list the root.

    `commitlog_paths`: the folders of a CommitLog kept over several paths (``storePathCommitLog``
    with commas, plus ``readOnlyCommitLogStorePaths``; 4.9.2+), relative ones under the root;
    :attr:`commitlog` is then one view of them all (:func:`rmqlab.formats.commitlog.files.multi_path_view`).
    """

    root: Path
    commitlog_paths: tuple[Path, ...]

    def __init__(self, root: str | os.PathLike, commitlog_paths: Sequence[str | os.PathLike] | None = None):
        object.__setattr__(self, "root", Path(root))
        object.__setattr__(self, "commitlog_paths", tuple(self.root / p for p in commitlog_paths or ()))

    @property
    def commitlog(self) -> Path:
        """The CommitLog's folder: ``<root>/commitlog``, or in a DLedger store (a ``dledger-<id>/data``
        folder holding files) DLedger's data folder, whose entries frame the records (the
        commitlog readers read either); with files in both, a plain CommitLog switched to
        DLedger, the view of both (:func:`rmqlab.formats.commitlog.files.multi_path_view`); with
        `commitlog_paths`, the view of them all. Cost: a listing of the root (of each path).
        Raises FormatError where the ledger's first file starts before the end of the plain
        files (the broker starts it at that end, dividedCommitlogOffset)."""
        from rmqlab.formats.commitlog.files import multi_path_view, store_files

        if self.commitlog_paths:
            return multi_path_view(self.commitlog_paths)
        plain = self.root / COMMITLOG
        ledgers = self.ledgers
        if len(ledgers) != 1:
            return plain
        data = ledgers[0] / "data"
        new = store_files(data)
        if not new:
            return plain
        old = store_files(plain) if plain.is_dir() else []
        if not old:
            return data
        first = new[0]
        if first.start_offset < old[-1].start_offset + old[-1].size:
            raise FormatError(f"the DLedger CommitLog's first file starts at {first.start_offset}, inside the plain "
                              f"CommitLog's files (they end at {old[-1].start_offset + old[-1].size}): a CommitLog "
                              f"switched to DLedger starts the ledger where the plain files end "
                              f"(dividedCommitlogOffset)", path=first.path, offset=0, field="file name")
        return multi_path_view([plain, data])

    @property
    def ledgers(self) -> list[Path]:
        """The ``dledger-<selfId>`` folders holding a ``data/`` folder (DLedgerConfig.getDefaultPath),
        sorted. Cost: a listing of the root."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.name.startswith(DLEDGER_PREFIX) and (p / "data").is_dir())

    @property
    def consumequeue(self) -> Path:
        return self.root / CONSUMEQUEUE

    @property
    def consumequeue_ext(self) -> Path:
        return self.root / CONSUMEQUEUE_EXT

    @property
    def batchconsumequeue(self) -> Path:
        return self.root / BATCHCONSUMEQUEUE

    @property
    def index(self) -> Path:
        return self.root / INDEX

    @property
    def checkpoint(self) -> Path:
        return self.root / CHECKPOINT

    @property
    def abort(self) -> Path:
        return self.root / ABORT

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    def is_store(self) -> bool:
        """Whether the root holds any part of a store: ``commitlog/``, a queue folder
        (``consumequeue/``, ``consumequeue_ext/``, ``batchconsumequeue/``), ``index/``, the
        ``checkpoint``, ``config/``, the tiered store's ``tiered_index_file/``, or a
        ``dledger-<id>/data`` ledger (a broker creates the
        checkpoint and the CommitLog's folder when it starts; a copy may hold some parts only).
        Cost: a few stats and a listing of the root."""
        from rmqlab.formats.tieredindex import FOLDER as TIERED_INDEX

        parts = (COMMITLOG, CONSUMEQUEUE, CONSUMEQUEUE_EXT, BATCHCONSUMEQUEUE, INDEX, CHECKPOINT, CONFIG, TIERED_INDEX)
        return any((self.root / name).exists() for name in parts) or bool(self.ledgers) \
            or any(p.is_dir() for p in self.commitlog_paths)

    def has_commitlog(self) -> bool:
        """Whether the CommitLog folder holds any file. Cost: one directory read."""
        return self.commitlog.is_dir() and any(self.commitlog.iterdir())


def queue_folders(folder: str | os.PathLike) -> list[tuple[str, int, Path]]:
    """(topic, queue id, path) of every ``<topic>/<queueId>`` folder under a ConsumeQueue,
    ConsumeQueueExt or BatchConsumeQueue folder, sorted by topic and then queue folder name;
    none when `folder` is missing. Cost: one directory listing a topic."""
    root = Path(folder)
    if not root.is_dir():
        return []
    return [(t.name, int(q.name), q) for t in sorted(root.iterdir()) if t.is_dir()
            for q in sorted(t.iterdir(), key=lambda p: p.name) if q.is_dir() and q.name.isdigit()]
