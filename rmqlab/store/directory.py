"""A broker's store directory as one object: dispatch and the queries the broker answers.

Layout (DefaultMessageStore / StorePathConfigHelper)::

    <root>/commitlog/<20-digit offset>                 messages
    <root>/consumequeue/<topic>/<queueId>/<20 digits>  20-byte units per queue
    <root>/consumequeue_ext/<topic>/<queueId>/<20 d.>  ConsumeQueueExt units (enableConsumeQueueExt)
    <root>/index/<yyyyMMddHHmmssSSS>                   IndexFile
    <root>/checkpoint                                  StoreCheckpoint

:meth:`Store.dispatch` does what the broker's ReputMessageService does with each message:
``CommitLogDispatcherBuildConsumeQueue`` (only non-transactional and committed messages get a
ConsumeQueue unit; prepared and rolled-back ones do not) and ``CommitLogDispatcherBuildIndex``
(IndexService.buildIndex: everything but rolled-back transactions). It starts where a restarted
broker would (the largest CommitLog end any ConsumeQueue records), so it is incremental.

Queries return pandas DataFrames: by key in ``broker`` or ``verified`` mode
(:mod:`rmqlab.store.keyquery` explains the difference), by unique key, by offset message id, and by
topic and time range through the ConsumeQueue.

>>> import tempfile
>>> s = Store(tempfile.mkdtemp())
>>> s.info()["messages"]
0
"""
from __future__ import annotations

import datetime as _dt
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError, InputError
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import checkpoint as cp
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.formats.dledger import Ledger
from rmqlab.formats.msgid import parse_offset_msg_id
from rmqlab.jvm.longs import LONG_MAX
from rmqlab.rules.dispatch import is_lmq
from rmqlab.store.indexservice import DEFAULT_MAX_MSGS_NUM_BATCH, IndexService
from rmqlab.store.keyquery import (
    MODES,
    KeyQuery,
    QueryMessageResult,
    query_key,
    query_many,
    query_message,
    query_message_order,
)
from rmqlab.store.layout import StoreLayout
from rmqlab.store.openfiles import OpenFiles
from rmqlab.store.reput import DispatchReport, queue_groups
from rmqlab.tables.times import ms_to_iso

__all__ = ["Store", "DispatchReport", "queue_groups"]

log = logging.getLogger(__name__)


class Store:
    """A store directory. Read-only unless a method says it writes (:meth:`dispatch`).

    `hash_slot_num` / `index_num` are the broker's maxHashSlotNum / maxIndexNum;
    `commitlog_file_size` mappedFileSizeCommitLog; `consume_queue_file_size`
    mappedFileSizeConsumeQueue; `batch_consume_queue_file_size` mapperFileSizeBatchConsumeQueue.
    Each of them None (the default) is what the store's files say, else the broker's default
    (1 GiB, 6,000,000 bytes, 5,000,000 slots and 20,000,000 entries, ...); :attr:`settings`
    says which and why, and where the files leave a choice (index files of two geometries) the
    store refuses to open with :class:`rmqlab.errors.AmbiguousSettingError`, listing it
    (:mod:`rmqlab.store.settings`). `batch_cq_topics` are the topics dispatched
    to BatchConsumeQueues; None (the default) reads them from config/topics.json as the broker
    does (:func:`rmqlab.formats.storeconfig.batch_cq_topics`; none without config/).
    With `consume_queue_ext` (the broker's
    enableConsumeQueueExt; None, the default: on when the store has ``consumequeue_ext/``, which
    only a broker with it on writes) dispatch also writes ConsumeQueueExt units, files of
    `consume_queue_ext_file_size` bytes (mappedFileSizeConsumeQueueExt; None: the size of the
    store's ext files, else 48 MiB), and the ConsumeQueue units hold their addresses.
    `broker_version` (e.g. "4.9.4"; None: the 5.x rules) selects the multi-dispatch rules of
    that release (:func:`rmqlab.rules.dispatch.lmq_dispatch`). `commitlog_paths`: the folders of
    a CommitLog kept over several paths (``storePathCommitLog`` with commas, 4.9.2+; relative
    ones under `root`), read as one (:class:`rmqlab.formats.storepaths.StorePaths`).
    """

    @classmethod
    def existing(cls, root: str | os.PathLike, **options: Any) -> Store:
        """A Store of a folder a broker wrote (`options` as for the constructor, which takes
        any folder, an empty one to write into included). Raises :class:`InputError` naming
        the folder when there is no such folder, or when it holds neither ``commitlog/`` nor
        ``index/`` (not a store: a store's parent, or a config folder, say). Cost: two stats.

        >>> import tempfile
        >>> Store.existing(tempfile.mkdtemp())   # doctest: +ELLIPSIS
        Traceback (most recent call last):
        rmqlab.errors.InputError: /...: not a store folder: it holds neither commitlog/ nor index/
        """
        path = Path(root)
        if not path.is_dir():
            raise InputError("no such folder" if not path.exists() else "not a folder", path=path)
        if not ((path / "commitlog").is_dir() or (path / "index").is_dir()):
            raise InputError("not a store folder: it holds neither commitlog/ nor index/", path=path)
        return cls(path, **options)

    def __init__(self, root: str | os.PathLike, *, hash_slot_num: int | None = None,
                 index_num: int | None = None, commitlog_file_size: int | None = None,
                 consume_queue_file_size: int | None = None,
                 max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH, tz: _dt.tzinfo | None = None,
                 batch_cq_topics: Iterable[str] | None = None, enable_lmq: bool = False,
                 enable_multi_dispatch: bool = False,
                 batch_consume_queue_file_size: int | None = None,
                 consume_queue_ext: bool | None = None,
                 consume_queue_ext_file_size: int | None = None, broker_version: str | None = None,
                 commitlog_paths: Iterable[str | os.PathLike] | None = None):
        self.layout = StoreLayout.of(
            root, hash_slot_num=hash_slot_num, index_num=index_num, commitlog_file_size=commitlog_file_size,
            consume_queue_file_size=consume_queue_file_size, max_msgs_num_batch=max_msgs_num_batch, tz=tz,
            batch_cq_topics=batch_cq_topics, enable_lmq=enable_lmq, enable_multi_dispatch=enable_multi_dispatch,
            batch_consume_queue_file_size=batch_consume_queue_file_size, consume_queue_ext=consume_queue_ext,
            consume_queue_ext_file_size=consume_queue_ext_file_size, broker_version=broker_version,
            commitlog_paths=commitlog_paths)
        # the index and CommitLog kept open between key queries (opened on the first)
        self._open_files = OpenFiles(self.layout)

    # -- the layout's settings, read as the store's own -----------------------------------

    root = property(lambda self: self.layout.root, doc="The store root (storePathRootDir).")
    hash_slot_num = property(lambda self: self.layout.hash_slot_num, doc="maxHashSlotNum.")
    index_num = property(lambda self: self.layout.index_num, doc="maxIndexNum.")
    max_msgs_num_batch = property(lambda self: self.layout.max_msgs_num_batch, doc="maxMsgsNumBatch.")
    commitlog_file_size = property(lambda self: self.layout.commitlog_file_size, doc="mappedFileSizeCommitLog.")
    consume_queue_file_size = property(lambda self: self.layout.consume_queue_file_size,
                                       doc="mappedFileSizeConsumeQueue.")
    batch_consume_queue_file_size = property(lambda self: self.layout.batch_consume_queue_file_size,
                                             doc="mapperFileSizeBatchConsumeQueue.")
    consume_queue_ext = property(lambda self: self.layout.consume_queue_ext, doc="enableConsumeQueueExt.")
    consume_queue_ext_file_size = property(lambda self: self.layout.consume_queue_ext_file_size,
                                           doc="mappedFileSizeConsumeQueueExt.")
    batch_cq_topics = property(lambda self: self.layout.batch_cq_topics, doc="Topics whose queue.type is BatchCQ.")
    enable_lmq = property(lambda self: self.layout.enable_lmq, doc="enableLmq.")
    enable_multi_dispatch = property(lambda self: self.layout.enable_multi_dispatch, doc="enableMultiDispatch.")
    broker_version = property(lambda self: self.layout.broker_version, doc="The release whose rules dispatch uses.")
    tz = property(lambda self: self.layout.tz, doc="Time zone of index file names (None: local).")

    @property
    def settings(self) -> dict:
        """Each file size and index count of the store (keyword -> :class:`rmqlab.store.settings.Setting`):
        its value, whether it was given, told by the files or the broker's default, and why."""
        return dict(self.layout.settings)

    # -- paths ----------------------------------------------------------------------------

    @property
    def commitlog_dir(self) -> Path:
        return self.layout.paths.commitlog

    @property
    def consumequeue_dir(self) -> Path:
        return self.layout.paths.consumequeue

    @property
    def index_dir(self) -> Path:
        return self.layout.paths.index

    @property
    def checkpoint_path(self) -> Path:
        return self.layout.paths.checkpoint

    def queues(self) -> list[tuple[str, int]]:
        """(topic, queue_id) of every ConsumeQueue folder, sorted."""
        return self.layout.consume_queues()

    def logical_queues(self) -> list[tuple[str, int]]:
        """(topic, queue_id) of every queue whatever keeps it: ConsumeQueue folders, or the
        RocksDB ConsumeQueue's queues (storeType=defaultRocksDB), and BatchConsumeQueue folders;
        sorted. Cost: directory listings, or the database's units read once."""
        from rmqlab.formats import rocksdbcq

        if rocksdbcq.is_rocksdb(self.consumequeue_dir):
            u = self.rocksdb_queues().units
            plain = {(str(t), int(q)) for t, q in zip(u["topic"], u["queue_id"], strict=True)}
        else:
            plain = set(self.queues())
        return sorted(plain | set(self.batch_queues()))

    def index(self, *, writable: bool = False) -> IndexService:
        """The index folder as an :class:`IndexService` (read-only unless `writable`)."""
        if writable:
            self._open_files.close()   # the caller is about to write: what was opened goes stale
        return self.layout.index_service(writable=writable)

    def _has_commitlog(self) -> bool:
        return self.layout.paths.has_commitlog()

    def messages(self, *, body: bool = False, on_error: str = "raise") -> pd.DataFrame:
        """Every message of the CommitLog, one row each (see :func:`commitlog.read_columns`;
        `on_error` "report": a damaged file is read up to the damage, which
        ``attrs["report"].damage`` lists, and the next file follows)."""
        if not self._has_commitlog():
            return cl.read_at(self.commitlog_dir, [], body=body) if self.commitlog_dir.is_dir() else pd.DataFrame()
        return cl.read_columns(self.commitlog_dir, body=body, on_error=on_error)  # type: ignore[arg-type]

    def read_at(self, phy_offsets, *, body: bool = False) -> pd.DataFrame:
        """The messages at these CommitLog offsets."""
        return cl.read_at(self.commitlog_dir, np.asarray(phy_offsets, dtype=np.int64), body=body)

    # -- summary --------------------------------------------------------------------------

    def info(self, *, keep_going: bool = False) -> dict[str, Any]:
        """Counts and ranges of every part of the store, and under "settings" each file size and
        index count it was read with (given, told by its files or the broker's default, and why).
        With `keep_going` a damaged CommitLog file is counted up to its damage and the next one
        read; "commitlog_damage" then lists each damage (file, offset, field, why), and
        "torn_tail" the last file's. Cost: reads the CommitLog headers."""
        msgs = self.messages(on_error="report" if keep_going else "raise") if self._has_commitlog() \
            else pd.DataFrame()
        report = msgs.attrs.get("report")
        damage = {"commitlog_damage": [d.__dict__ for d in report.damage],
                  "torn_tail": None if report.torn_tail is None else report.torn_tail.__dict__} \
            if keep_going and report is not None else {}
        if self.index_dir.is_dir():
            with self.index() as idx:
                index_frame = idx.to_frame()
        else:
            index_frame = pd.DataFrame(columns=["keys"])
        queues = self.queues()
        units = 0
        for topic, qid in queues:
            units += cq.read_queue_info(cq.queue_dir(self.root, topic, qid), self.consume_queue_file_size).count
        checkpoint = (cp.read_checkpoint(self.checkpoint_path).as_dict()
                      if self.checkpoint_path.exists() else None)
        return {
            "root": str(self.root),
            "messages": int(len(msgs)),
            "commitlog_files": len(cl.store_files(self.commitlog_dir)) if self.commitlog_dir.is_dir() else 0,
            "commitlog_min_offset": cl.min_offset(self.commitlog_dir) if self._has_commitlog() else None,
            "commitlog_max_offset": cl.max_offset(self.commitlog_dir) if self._has_commitlog() else None,
            "topics": sorted(msgs["topic"].unique().tolist()) if len(msgs) else [],
            "first_store_timestamp": int(msgs["store_timestamp"].min()) if len(msgs) else None,
            "last_store_timestamp": int(msgs["store_timestamp"].max()) if len(msgs) else None,
            "consume_queues": len(queues),
            "consume_queue_units": units,
            **self._ext_info(),
            **self._feature_info(queues),
            **self._ledger_info(),
            **self._rocksdb_info(),
            **self._message_rocksdb_info(),
            **self._timer_info(),
            **self._pop_info(),
            **self._transaction_info(msgs),
            **self._static_topic_info(),
            **self._broker_files_info(),
            **self._compaction_info(),
            **self._tiered_index_info(),
            **({"not_read": not_read} if (not_read := self.not_read()) else {}),
            "index_files": len(index_frame),
            "index_keys": int(index_frame["keys"].sum()) if len(index_frame) else 0,
            "checkpoint": checkpoint,
            **damage,
            # the file sizes and index counts read with, by their MessageStoreConfig names
            "settings": {s.broker_name: {"value": s.value, "source": s.source, "reason": s.reason}
                         for s in self.settings.values()},
        }

    def _ext_info(self) -> dict[str, Any]:
        """ConsumeQueueExt counts, only for a store that has the folder (the others show as before)."""
        root = self.layout.paths.consumequeue_ext
        if not root.is_dir():
            return {}
        folders = [q for t in sorted(root.iterdir()) if t.is_dir() for q in sorted(t.iterdir()) if q.is_dir()]
        infos = [cqx.read_ext_info(q, strict=False) for q in folders]
        return {"cq_ext_folders": len(folders),
                "cq_ext_units": sum(i.units for i in infos),
                "cq_ext_file_size": infos[0].mapped_file_size if infos else None}

    #: 5.5's MessageRocksDBStorage folder (RocksDB index, timer and transaction stores)
    MESSAGE_ROCKSDB = "rocksdbstore"

    def message_rocksdb(self) -> dict[str, int] | None:
        """5.5's ``rocksdbstore/`` (MessageRocksDBStorage: column families for the RocksDB index,
        timer and transaction stores, which are off by default, so a default store's database is
        empty): each column family and its key count; None without the folder. Raises
        ImportError without rocksdict, FormatError for a database RocksDB cannot read. Cost: one
        pass over the database, read once a Store (:meth:`_message_rocksdb_families`)."""
        families = self._message_rocksdb_families()
        return None if families is None else {name: len(pairs) for name, pairs in families.items()}

    def _message_rocksdb_families(self) -> dict[str, list[tuple[bytes, bytes]]] | None:
        """``rocksdbstore/``'s column families, read once and kept (None without the folder)."""
        from rmqlab.formats.rocksdb import is_rocksdb, read_families

        if getattr(self, "_rocksdbstore_families", None) is None:
            folder = self.root / self.MESSAGE_ROCKSDB
            if not is_rocksdb(folder):
                return None
            self._rocksdbstore_families = read_families(folder)
        return self._rocksdbstore_families

    def _message_rocksdb_decoded(self) -> bool:
        """Whether rocksdbstore/ was read and every record decoded (its index, timer and
        transaction records: :meth:`message_rocksdb_records`)."""
        try:
            return self.message_rocksdb_records() is not None
        except (ImportError, FormatError):
            return False

    def _message_rocksdb_info(self) -> dict[str, Any]:
        try:
            families = self.message_rocksdb()
        except ImportError as e:
            return {self.MESSAGE_ROCKSDB: {"not_read": f"{e}"}}
        if families is None:
            return {}
        try:
            db = self.message_rocksdb_records()
        except FormatError as e:
            return {self.MESSAGE_ROCKSDB: {"column_families": families, "not_read": e.reason}}
        return {self.MESSAGE_ROCKSDB: {
            "column_families": families, "index_records": len(db.index),
            "index_last_offset": db.index_last_offset,
            "index_last_store": None if db.index_last_store_timestamp is None
            else ms_to_iso(db.index_last_store_timestamp),
            "timer_records": len(db.timers), "transaction_records": len(db.transactions)}}

    def _rocksdb_info(self) -> dict[str, Any]:
        """A RocksDB ConsumeQueue (storeType=defaultRocksDB, 5.2.0+: consumequeue/ is one database),
        only for a store that has one: its queues and units, and how far its dispatch had got
        (the file-queue counts above are then 0). Without the rocksdict package: why not read."""
        from rmqlab.formats import rocksdbcq

        folder = self.layout.paths.consumequeue
        if not rocksdbcq.is_rocksdb(folder):
            return {}
        try:
            db = rocksdbcq.RocksDBConsumeQueues.open(folder)
        except ImportError as e:
            return {"rocksdb_consume_queue": str(e)}
        return {"rocksdb_consume_queue": {"queues": len(db.queues()), "units": len(db.units),
                                          "dispatched_to": db.dispatched_to}}

    #: what rmqlab reads at a store's root (besides dledger-<selfId>/ and 5.5's timerwheel.<n>)
    _READ_AT_ROOT = frozenset({"commitlog", "consumequeue", "consumequeue_ext", "batchconsumequeue", "index",
                               "checkpoint", "abort", "abort.bak", "lock", "config", "timerwheel", "timerlog",
                               "compaction", "tiered_index_file"})

    def not_read(self) -> list[str]:
        """The files and folders at the store's root and in config/ that rmqlab does not read
        (5.5's rocksdbstore/, a tiered store's folders, config/rdb/, ...): ``store info`` lists
        them, so nothing is passed over in silence. Cost: two folder listings."""
        from rmqlab.formats.storeconfig import CONFIG_FILES, CONFIG_V2_FOLDER, ROCKSDB_CONFIG_FOLDERS

        if not self.root.is_dir():
            return []
        read_paths = {p for p in self.layout.paths.commitlog_paths}   # a CommitLog over several folders
        out = [p.name for p in sorted(self.root.iterdir()) if p.name not in self._READ_AT_ROOT
               and not p.name.startswith("dledger-") and not p.name.startswith("timerwheel.")
               and not any(p == r or p in r.parents for r in read_paths)
               and not (p.name == self.MESSAGE_ROCKSDB and self._message_rocksdb_decoded())]
        config = self.root / "config"
        if config.is_dir():
            known = {*CONFIG_FILES.values(), *ROCKSDB_CONFIG_FOLDERS.values(), "timercheck", CONFIG_V2_FOLDER,
                     "tieredStoreMetadata.json"}
            out += [f"config/{p.name}" for p in sorted(config.iterdir())
                    if p.name not in known and p.name.removesuffix(".bak") not in known]
        return out

    def _compaction_info(self) -> dict[str, Any]:
        """The 5.1+ compaction store (compaction/), only for a store that has its logs: the
        queues, their units and message offsets (:mod:`rmqlab.formats.compaction`)."""
        from rmqlab.formats import compaction as cpt

        if not (self.root / cpt.COMPACTION_DIR / cpt.COMPACTION_CQ_DIR).is_dir():
            return {}
        queues = [(t, q) for t, q in cpt.queues(self.root) if cpt.cq_dir(self.root, t, q).is_dir()]
        units = 0
        for topic, qid in queues:
            with cpt.SparseQueue.open(cpt.cq_dir(self.root, topic, qid)) as q:
                units += q.queue.unit_count
        return {"compaction": {"topics": sorted({t for t, _ in queues}), "queues": len(queues), "units": units}}

    def _query_tiered_index_51(self, topic: str, key: str, max_num: int, begin: int, end: int,
                               tiered_path: str | os.PathLike | None, broker: str | None,
                               hash_slot_num: int | None) -> pd.DataFrame:
        """:meth:`query_tiered_index` as 5.1 answers it once started on this store
        (:func:`rmqlab.formats.tieredindex51.query_uploaded`): from the uploaded files, which the
        metadata lists with their time ranges, and the local file the start uploads."""
        from rmqlab.formats import tieredindex as ti
        from rmqlab.formats import tieredindex51 as t51
        from rmqlab.formats import tieredsegment as ts

        meta = self._tiered_metadata()
        if tiered_path is None or meta is None:
            return pd.DataFrame(columns=["topic", *t51.QUERY_COLUMNS])
        index = meta.segments[meta.segments["kind"] == "index"]
        ranges = {(p, int(b)): (int(lo), int(hi)) for p, b, lo, hi in
                  index[["path", "base_offset", "begin_timestamp", "end_timestamp"]].itertuples(index=False)}
        files = []
        for path in ts.index_segments(tiered_path, meta, broker=broker):
            q = path.parents[1]
            lo, hi = ranges[(f"{q.parents[1].name}/{q.parent.name}/{q.name}", int(path.name[-20:]))]
            files.append((path, lo, hi))
        got = t51.query_uploaded(files, topic, key, meta.topic_ids.get(topic), max_num, begin, end,
                                 local=t51.startup_upload(self.root / ti.FOLDER), hash_slot_num=hash_slot_num)
        got.insert(0, "topic", [meta.topic_of(i) for i in got["topic_id"]])
        return got

    def tiered_index(self, *, hash_slot_num: int | None = None, index_num: int | None = None) -> list:
        """The tiered store's local index files (``tiered_index_file/``, RIP-65, 5.2.0+) as
        IndexStoreService loads them, opened (:class:`rmqlab.formats.tieredindex.TieredIndexFile`;
        close them). `hash_slot_num` / `index_num`: tieredStoreIndexFileMaxHashSlotNum /
        MaxIndexNum (None: one follows from the other and the file size; both None: the
        defaults where the size is theirs, else what the file's chains tell,
        :func:`rmqlab.formats.tieredindex.infer_local_geometry`). Raises GeometryError for a file
        the geometry does not fit. Cost: a map a file."""
        from rmqlab.formats import tieredindex as ti

        out = []
        try:
            for p in ti.index_files(self.root / ti.FOLDER):
                out.append(ti.TieredIndexFile.open(p, hash_slot_num=hash_slot_num, index_num=index_num, form="local"))
        except BaseException:
            for f in out:
                f.close()
            raise
        return out

    def query_tiered_index(self, topic: str, key: str, *, max_num: int = 32, begin: int = 0, end: int = LONG_MAX,
                           hash_slot_num: int | None = None, index_num: int | None = None,
                           tiered_path: str | os.PathLike | None = None, broker: str | None = None) -> pd.DataFrame:
        """A key query of the tiered store's index as ``IndexStoreService.queryAsync`` answers it
        (:func:`rmqlab.formats.tieredindex.query_service`: only files begun within [begin, end]
        are asked; a 5.1 `broker_version`: only the uploaded files, as 5.1 asks them,
        :mod:`rmqlab.formats.tieredindex51`): topic id, queue id, offset, size and store time of
        each item found, with
        the file it came from, and the topic its id names where the store has
        ``config/tieredStoreMetadata.json``. The files are the local ones (``tiered_index_file/``)
        and, with `tiered_path` (tieredStoreFilePath), the compacted index segments the metadata
        lists (of `broker`, or every broker's), which replace a local file of the same begin
        timestamp as IndexStoreService.recover does. An item's offset is the message's offset
        in its queue's tiered CommitLog (:meth:`tiered_messages`). The store's `broker_version`
        picks the release's time filter (5.2.0 - 5.3.0 keep every item of a local file, and up to
        5.3.2 an item's seconds count as milliseconds: :mod:`rmqlab.rules.versions`). Cost: one
        chain walk a file in range.

        >>> import tempfile
        >>> Store(tempfile.mkdtemp()).query_tiered_index("T", "k").shape[0]
        0
        """
        from rmqlab.formats import tieredindex as ti
        from rmqlab.formats import tieredsegment as ts
        from rmqlab.rules.versions import layout_facts

        if layout_facts(self.broker_version).tiered_index_legacy:
            return self._query_tiered_index_51(topic, key, max_num, begin, end, tiered_path, broker, hash_slot_num)
        files = self.tiered_index(hash_slot_num=hash_slot_num, index_num=index_num)
        try:
            if tiered_path is not None:
                for p in ts.index_segments(tiered_path, self._tiered_metadata(), broker=broker):
                    seg = ti.TieredIndexFile.open(p, form="compacted")
                    for f in [f for f in files if f.begin_timestamp == seg.begin_timestamp]:
                        files.remove(f)
                        f.close()
                    files.append(seg)
            got = ti.query_service(files, topic, key, max_num, begin, end, broker_version=self.broker_version)
        finally:
            for f in files:
                f.close()
        meta = self._tiered_metadata()
        if meta is not None:   # the topic each item's id names (a hash may collide across topics)
            got.insert(0, "topic", [meta.topic_of(i) for i in got["topic_id"]])
        return got

    def tiered_queues(self, tiered_path: str | os.PathLike, *, cluster: str | None = None,
                      broker: str | None = None) -> pd.DataFrame:
        """The queues the tiered store keeps on its file system (``tieredStoreFilePath``,
        PosixFileSegment; :mod:`rmqlab.formats.tieredsegment`), as a broker with this store's
        ``config/tieredStoreMetadata.json`` loads them: topic, queue_id, min_offset and
        commit_offset (the queue offsets it serves from), its CommitLog and ConsumeQueue segment
        counts and bytes, and the local ConsumeQueue's max offset for comparison (what is not yet
        uploaded). Cost: a listing of the file system, one small read a queue.

        >>> import tempfile
        >>> Store(tempfile.mkdtemp()).tiered_queues(tempfile.mkdtemp()).shape[0]
        0
        """
        from rmqlab.formats import tieredsegment as ts

        rows, local = [], set(self.logical_queues())
        for q in ts.tiered_queues(tiered_path, self._tiered_metadata(), cluster=cluster, broker=broker):
            seg = q.segments
            cl, cq = seg[seg["kind"] == "commitlog"], seg[seg["kind"] == "consumequeue"]
            rows.append({"topic": q.topic, "queue_id": q.queue_id, "min_offset": q.min_offset,
                         "commit_offset": q.commit_offset, "commitlog_segments": len(cl),
                         "commitlog_bytes": int(cl["size"].sum()), "consumequeue_segments": len(cq),
                         "local_max_offset": self._local_max_offset(q.topic, q.queue_id, local)})
        cols = ["topic", "queue_id", "min_offset", "commit_offset", "commitlog_segments", "commitlog_bytes",
                "consumequeue_segments", "local_max_offset"]
        return pd.DataFrame(rows, columns=cols)

    def tiered_messages(self, tiered_path: str | os.PathLike, topic: str, queue_id: int, *, body: bool = True,
                        cluster: str | None = None, broker: str | None = None) -> pd.DataFrame:
        """One queue's messages as the tiered store serves them (FlatMessageFile.getMessageAsync
        for each queue offset it holds): the offset served, where its item points in the tiered
        CommitLog (tiered_offset, item_size), the tags code, then the message's columns
        (:meth:`rmqlab.formats.tieredsegment.TieredQueue.messages`).
        Cost: one read of the queue's ConsumeQueue segments and the decode of its messages.

        >>> import tempfile
        >>> Store(tempfile.mkdtemp()).tiered_messages(tempfile.mkdtemp(), "T", 0).shape[0]
        0

        Raises FormatError naming the segment, the position and the field where an item points
        at no message.
        """
        from rmqlab.formats import tieredsegment as ts

        for q in ts.tiered_queues(tiered_path, self._tiered_metadata(), cluster=cluster, broker=broker):
            if q.topic == topic and q.queue_id == int(queue_id):
                return q.messages(body=body)
        return ts.TieredQueue(topic, int(queue_id), ts.list_segments(tiered_path).iloc[:0]).items()

    def _tiered_metadata(self) -> Any:
        from rmqlab.formats import tieredindex as ti

        meta = self.root / "config" / ti.METADATA_FILE
        return ti.read_tiered_metadata(meta) if meta.is_file() else None

    def _local_max_offset(self, topic: str, queue_id: int, local: set[tuple[str, int]]) -> int | None:
        """The local queue's max offset (None where the store has no such queue)."""
        from rmqlab.store.queues import LogicQueue

        if (topic, queue_id) not in local:
            return None
        with LogicQueue(self, topic, queue_id) as q:
            return int(q.max_offset)

    def _tiered_index_info(self) -> dict[str, Any]:
        """The tiered store's local index files, only for a store that has the folder: their
        number, items and time span (with the default geometry; else why not read)."""
        from rmqlab.errors import RmqlabError
        from rmqlab.formats import tieredindex as ti

        paths = ti.index_files(self.root / ti.FOLDER)
        if not (self.root / ti.FOLDER).is_dir():
            return {}
        try:
            files = self.tiered_index()
        except RmqlabError as e:
            return {"tiered_index": {"files": len(paths), "not_read": e.reason}}
        try:
            return {"tiered_index": {"files": len(files), "items": sum(f.item_count for f in files),
                                     "begin": ms_to_iso(min(f.begin_timestamp for f in files)) if files else None,
                                     "end": ms_to_iso(max(f.end_timestamp for f in files)) if files else None}}
        finally:
            for f in files:
                f.close()

    def _broker_files_info(self) -> dict[str, Any]:
        """``abort`` (present: the last run did not stop cleanly) with the PID a 5.x broker wrote
        in it, only for a store that has an abort or lock file (:mod:`rmqlab.formats.brokerfiles`)."""
        from rmqlab.formats.brokerfiles import read_broker_files

        f = read_broker_files(self.root)
        if not f.abort and f.lock_text is None and f.abort_bak_pid is None:
            return {}
        return {"abort": {"present": f.abort, "pid": f.abort_pid, "previous_pid": f.abort_bak_pid}}

    def _static_topic_info(self) -> dict[str, Any]:
        """The static topics of config/topicQueueMapping.json (5.x), only for a store whose mapping
        holds any: each with its total (logic) queues and the global queues hosted here."""
        from rmqlab.errors import RmqlabError

        if not any((self.root / "config" / n).is_file() for n in ("topicQueueMapping.json",
                                                                  "topicQueueMapping.json.bak")):
            return {}
        try:
            m = self.config().topic_queue_mappings()
        except RmqlabError as e:
            return {"static_topics": {"not_read": str(e)}}
        if not len(m):
            return {}
        return {"static_topics": {t: {"total_queues": int(g["total_queues"].iloc[0]),
                                      "hosted_queues": int(g["global_id"].nunique())}
                                  for t, g in m.groupby("topic", sort=True)}}

    def _timer_info(self) -> dict[str, Any]:
        """The 5.x timer store (timerwheel, timerlog/, config/timercheck), only for a store that
        has one: its units, the messages still pending and when the next fires, and how far the
        broker had read the wheel and enqueued the timer topic."""
        from rmqlab.store import timers

        if not timers.has_timer_store(self):
            return {}
        e = self.timer_entries()
        cp, precision = e.attrs["checkpoint"], e.attrs["precision_ms"]
        pending = e[(e["state"] == "pending") & ~e["delete_marker"] & ~e["cancelled"]]
        return {"timer": {"precision_ms": precision, "units": int(len(e)), "pending": int(len(pending)),
                          "pending_topics": int(pending["real_topic"].nunique()),
                          "next_fires_at": ms_to_iso(pending["fires_at_ms"].min()) if len(pending) else None,
                          "delete_markers": int(e["delete_marker"].sum()), "rolled": int(e["roll"].sum()),
                          "read_to": ms_to_iso(cp.last_read_time_ms),
                          "enqueued_to_queue_offset": cp.last_timer_queue_offset}}

    def timer_entries(self) -> pd.DataFrame:
        """Every unit of the 5.x timer log with its message and state
        (:func:`rmqlab.store.timers.timer_entries`); empty without a timer store."""
        from rmqlab.store.timers import timer_entries

        return timer_entries(self)

    def pending_timers(self, *, now: int | None = None) -> pd.DataFrame:
        """The timer messages the store still holds, when each fires, for which real topic, and
        what a restart at `now` would do with it (:func:`rmqlab.store.timers.pending_timers`)."""
        from rmqlab.store.timers import pending_timers

        return pending_timers(self, now=now)

    def _pop_info(self) -> dict[str, Any]:
        """Pop consumption (5.x), only for a store with a revive log: the checkpoints not yet
        processed, the messages popped and never acknowledged, and when the first is revived."""
        from rmqlab.errors import RmqlabError
        from rmqlab.store import popstate

        try:
            if not popstate.revive_topics(self):
                return {}
            cks = self.pop_checkpoints()
        except RmqlabError as e:
            return {"pop": {"not_read": e.reason}}
        open_ = cks[cks["unacked"] > 0]
        return {"pop": {"revive_topics": popstate.revive_topics(self), "checkpoints": int(len(cks)),
                        "groups": int(cks["group"].nunique()), "unacknowledged": int(cks["unacked"].sum()),
                        "next_revive_at": ms_to_iso(open_["revive_time_ms"].min()) if len(open_) else None}}

    def pop_checkpoints(self, *, now: int | None = None) -> pd.DataFrame:
        """The pop checkpoints the revive service has yet to process, with the acknowledgements it
        will apply (:func:`rmqlab.store.popstate.pop_checkpoints`); empty without a revive log."""
        from rmqlab.store.popstate import pop_checkpoints

        return pop_checkpoints(self, now=now)

    def pop_redeliveries(self, *, now: int | None = None) -> pd.DataFrame:
        """The popped, unacknowledged messages the revive service will put into pop retry topics,
        and when (:func:`rmqlab.store.popstate.pop_redeliveries`)."""
        from rmqlab.store.popstate import pop_redeliveries

        return pop_redeliveries(self, now=now)

    def _transaction_info(self, msgs: pd.DataFrame) -> dict[str, Any]:
        """Transactions by state, only for a store that holds any."""
        from rmqlab.store.transactions import has_transactions, transaction_events, transactions

        if not has_transactions(msgs):
            return {}
        got = transactions(self, events=transaction_events(self, messages=msgs))
        return {"transactions": {**{s: int(n) for s, n in got["state"].value_counts().sort_index().items()},
                                 "checks": int(got["checks"].sum())}}

    def transactions(self, *, check_max: int = 15) -> pd.DataFrame:
        """Each transaction's state (committed, rolled back, discarded, pending), how often the
        broker checked it, where its message went and what the broker does next
        (:func:`rmqlab.store.transactions.transactions`; `check_max` is transactionCheckMax)."""
        from rmqlab.store.transactions import transactions

        return transactions(self, check_max=check_max)

    def transaction_events(self) -> pd.DataFrame:
        """Every record a transaction left: prepared, checked copies, ended by an op, commit,
        rollback, discard (:func:`rmqlab.store.transactions.transaction_events`)."""
        from rmqlab.store.transactions import transaction_events

        return transaction_events(self)

    def pop_groups(self) -> pd.DataFrame:
        """Each popping group's queues: committed offset, queue bounds, messages in flight
        (:func:`rmqlab.store.popstate.pop_groups`)."""
        from rmqlab.store.popstate import pop_groups

        return pop_groups(self)

    def _ledger_info(self) -> dict[str, Any]:
        """A DLedger CommitLog's ledger (its folder, entries, indexes, terms), only for a store
        that has one: what DLedger's store reports after recovery (:meth:`Ledger.summary`)."""
        ledgers = self.layout.paths.ledgers
        if not ledgers:
            return {}
        out: dict[str, Any] = {"dledger": [{"folder": str(f), **Ledger(f, file_size=self.commitlog_file_size).summary()}
                           for f in ledgers]}
        if len(ledgers) > 1:
            out["dledger_note"] = ("several dledger-<selfId> folders: the CommitLog read is none of them "
                                   "(the broker uses the one of its dLegerSelfId)")
        return out

    def _feature_info(self, queues: list[tuple[str, int]]) -> dict[str, Any]:
        """BatchConsumeQueue and light message queue counts, only for a store that has them."""
        out: dict[str, Any] = {}
        batch = self.batch_queues()
        if batch:
            units = 0
            for topic, qid in batch:
                folder = bcq.queue_dir(self.root, topic, qid)
                # the files' own size when it is a whole number of units: info needs no option
                size = bcq.batch_file_size(folder) if any(folder.iterdir()) else self.batch_consume_queue_file_size
                with bcq.BatchConsumeQueue.open(folder, size, strict=False) as q:
                    units += q.unit_count
            out.update(batch_cq_topics=sorted({t for t, _ in batch}), batch_cq_folders=len(batch),
                       batch_cq_units=units)
        lmq = [(t, q) for t, q in queues if is_lmq(t)]
        if lmq:
            out.update(lmq_queues=len(lmq), lmq_units=sum(
                cq.read_queue_info(cq.queue_dir(self.root, t, q), self.consume_queue_file_size).count for t, q in lmq))
        return out

    # -- dispatch -------------------------------------------------------------------------

    def reput_from_offset(self) -> int:
        """Where a restarted broker resumes dispatch (:func:`rmqlab.store.reput.reput_from_offset`)."""
        from rmqlab.store.reput import reput_from_offset

        return reput_from_offset(self.layout, self._rocksdb_queues_end())

    def _rocksdb_queues_end(self) -> int | None:
        """A RocksDB ConsumeQueue's dispatch checkpoint, from the database this Store keeps (None
        for file queues: :func:`rmqlab.store.reput.consume_queue_end` reads them)."""
        from rmqlab.formats.rocksdb import is_rocksdb

        return (self.rocksdb_queues().dispatched_to or 0) if is_rocksdb(self.consumequeue_dir) else None

    def restart_dispatch_units(self) -> pd.DataFrame:
        """The units a restarted broker's dispatch writes (:func:`rmqlab.store.reput.restart_dispatch_units`),
        read once and kept."""
        from rmqlab.store.reput import restart_dispatch_units

        if getattr(self, "_restart_units", None) is None:
            self._restart_units = restart_dispatch_units(self.layout, self._rocksdb_queues_end())
        return self._restart_units

    def consume_queue_end(self) -> int:
        """How far dispatch has written the queues (:func:`rmqlab.store.reput.consume_queue_end`)."""
        from rmqlab.store.reput import consume_queue_end

        end = self._rocksdb_queues_end()
        return consume_queue_end(self.layout) if end is None else end

    def dispatch(self, *, progress=None) -> DispatchReport:
        """Build ConsumeQueue and index files from the CommitLog as the broker's reput service
        does, from :meth:`reput_from_offset` on, and update the checkpoint. Writes only under
        consumequeue/, index/ and the checkpoint file (and batchconsumequeue/ and
        consumequeue_ext/ when the store has them). ``progress(bytes done, bytes to do)``, if
        given, is called after each part (:mod:`rmqlab.store.reput`).

        The CommitLog is read 262,144 messages at a time (:func:`commitlog.read_column_parts`)
        into Arrow columns, and each part written before the next is read, so memory is one
        part's columns (:data:`rmqlab.store.reput.PART_MESSAGES` messages) whatever the
        store's size. Cost: O(messages), one pass over the CommitLog from the reput offset, the
        index file's msync included. A store with BatchConsumeQueue topics or multi-dispatch, or
        a part whose text is not UTF-8, is read as str objects instead (one Python object a
        value: a slower read). Measured rates and memory: benchmarks/RESULTS.md (bench_dispatch,
        bench_scaling).

        A damaged CommitLog record stops the dispatch: the messages before it are dispatched,
        the checkpoint written, and the record's FormatError raised.
        """
        from rmqlab.store.reput import dispatch_store

        self._open_files.close()   # closed before the writes (the next query opens them again)
        return dispatch_store(self.layout, progress=progress)

    # -- 5.x dispatch: BatchConsumeQueue and light message queues ----------------------------

    @property
    def batchconsumequeue_dir(self) -> Path:
        return self.layout.paths.batchconsumequeue

    def batch_queues(self) -> list[tuple[str, int]]:
        """(topic, queue_id) of every BatchConsumeQueue folder, sorted."""
        return self.layout.batch_queues()

    # -- queries --------------------------------------------------------------------------

    def explain_key(self, topic: str, key: str, *, begin: int = 0, end: int = LONG_MAX,
                    max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH, unique: bool = False,
                    index_type: str | None = None) -> KeyQuery:
        """Both modes of a key query and the comparison (see :mod:`rmqlab.store.keyquery`)."""
        with self.index() as idx:
            return query_key(idx, lambda offs: self.read_at(offs), topic, key, begin=begin, end=end,
                             max_num=max_num, unique=unique, index_type=index_type)

    def query_by_key(self, topic: str, key: str, *, begin: int = 0, end: int = LONG_MAX,
                     max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH, mode: str = "broker",
                     index_type: str | None = None) -> pd.DataFrame:
        """Messages of ``topic`` with ``key`` stored in [begin, end] ms. ``broker`` mode returns
        what RocketMQ returns (hash matches, whole seconds, early stops, at most max_num, by CommitLog offset);
        ``verified`` mode the real matches by millisecond store time, each marked with whether
        the broker returned it. Use :meth:`explain_key` for the reasons. `index_type` "T" asks
        for messages whose TAGS is `key`, as a 5.4.0+ broker indexes them (``topic#T#tags``; a
        store of an older broker has no such keys). Cost: broker mode opens the index, walks the
        key's chains and reads only the offsets returned: O(entries walked + max_num); verified
        mode is :meth:`explain_key`'s."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if mode == "broker":
            opened = self._open_files.current()
            found = query_message(opened.index, opened.commitlog, opened.readable_end, topic, key, max_num=max_num,
                                  begin=begin, end=end, index_type=index_type)
            return self._broker_rows(found.phy_offsets, opened.commitlog)
        return self.explain_key(topic, key, begin=begin, end=end, max_num=max_num, index_type=index_type).frame(mode)

    def query_message(self, topic: str, key: str, *, max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH, begin: int = 0,
                      end: int = LONG_MAX, index_type: str | None = None) -> QueryMessageResult:
        """What the broker's ``DefaultMessageStore.queryMessage`` returns for ``topic#key`` stored
        in [begin, end] ms: each message's CommitLog offset and record bytes, undecoded, in its
        order, left out where the broker's read fails
        (:func:`rmqlab.store.keyquery.query_message`). The index and CommitLog files stay
        open between calls, as a broker's do, and are opened again when the store's folders or
        an index file's header change (:mod:`rmqlab.store.openfiles`). Cost: the index walk,
        O(entries walked), a few byte reads a message and a stat a folder; the first call
        opens the files and walks the active CommitLog file to find its end.

        >>> from rmqlab.formats.commitlog import read_message
        >>> from rmqlab.lab.sample import sample_store
        >>> r = sample_store().query_message("Orders", "ORDER_Aa0")
        >>> len(r.phy_offsets), read_message(r.buffers[0], 0).phy_offset == r.phy_offsets[0]
        (26, True)
        """
        opened = self._open_files.current()
        return query_message(opened.index, opened.commitlog, opened.readable_end, topic, key, max_num=max_num,
                             begin=begin, end=end, index_type=index_type)

    def _broker_rows(self, offsets: list[int], commitlog: cl.MappedCommitLog | None = None) -> pd.DataFrame:
        """The broker's answer as :meth:`explain_key` gives it (``rank``, then the messages), by
        reading only the offsets the index returned, in the order queryMessage returns them
        (:func:`~rmqlab.store.keyquery.query_message_order`), in one frame made once, from
        `commitlog` (None: the store's open CommitLog)."""
        found = np.asarray(offsets, dtype=np.int64)
        found = found[query_message_order(found)]
        commitlog = commitlog if commitlog is not None else self._open_files.current().commitlog
        columns = cl.read_at_columns(commitlog, found, body=False)
        return pd.DataFrame({"rank": np.arange(len(offsets)), **columns}, copy=False)

    def query_many(self, topics: Any, keys: Any, *, begin: int = 0, end: int = LONG_MAX,
                   max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH, mode: str = "broker",
                   unique: bool = False, index_type: str | None = None) -> pd.DataFrame:
        """:meth:`query_by_key` for many keys in one table, one row per (key, message), keys in
        order (see :func:`rmqlab.store.keyquery.query_many`). Cost: the broker walks of all keys in C
        and one CommitLog read of every distinct offset found: O(entries walked + distinct
        offsets) in broker mode.

        >>> from rmqlab.lab.sample import sample_store
        >>> t = sample_store().query_many("Orders", ["ORDER_Aa0", "ORDER_BB0"], mode="verified")
        >>> t.groupby("query_key").size().to_dict()
        {'ORDER_Aa0': 14, 'ORDER_BB0': 12}
        """
        with self.index() as idx:
            return query_many(idx, self.read_at, topics, keys, begin=begin, end=end, max_num=max_num, mode=mode,
                              unique=unique, index_type=index_type)

    def query_rocksdb_index(self, topic: str, key: str, *, begin: int = 0, end: int = LONG_MAX,
                            max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH, index_type: str | None = None,
                            now: int | None = None) -> pd.DataFrame:
        """A key query as a 5.5 broker answers it from its RocksDB index (``indexRocksDBEnable``
        with ``indexFileReadEnable=false``; ``rocksdbstore/``'s default column family,
        :func:`rmqlab.formats.messagerocksdb.query_index`): `begin` 0 or `end` Long.MAX_VALUE
        ask the seven days before `now` (the broker's clock, ms; None: this machine's), at most
        maxMsgsNumBatch offsets, K records, then U where none (no `index_type`), or those of
        `index_type` (K, T or U). The messages in queryMessage's order (by CommitLog offset), with
        ``rank``. Cost: the
        database read once (:meth:`message_rocksdb_records`), a pass over its index records.

        >>> import tempfile
        >>> Store(tempfile.mkdtemp()).query_rocksdb_index("T", "k").shape[0]
        0
        """
        from rmqlab.formats import messagerocksdb as mr

        db = self.message_rocksdb_records()
        if db is None:   # no rocksdbstore/: nothing is found (and there may be no CommitLog to read)
            return pd.DataFrame({"rank": np.zeros(0, np.int64),
                                 **{c: [] for c in cl.COLUMNS if c != "body"}})
        return self._broker_rows(mr.query_index(db, topic, key, max_num=max_num, begin=begin, end=end,
                                                index_type=index_type, now=now))

    def message_rocksdb_records(self) -> Any:
        """5.5's ``rocksdbstore/`` decoded (:class:`rmqlab.formats.messagerocksdb.MessageRocksDB`:
        index, timer and transaction records), read once and kept; None without the folder.
        Raises ImportError without rocksdict, FormatError for a record of another form."""
        from rmqlab.formats import messagerocksdb as mr

        if getattr(self, "_message_rocksdb_records", None) is None:
            families = self._message_rocksdb_families()
            if families is None:
                return None
            self._message_rocksdb_records = mr.decode_families(families, path=self.root / self.MESSAGE_ROCKSDB)
        return self._message_rocksdb_records

    def query_by_unique_key(self, topic: str, uniq_key: str, *, begin: int = 0, end: int = LONG_MAX,
                            mode: str = "broker") -> pd.DataFrame:
        """Messages whose UNIQ_KEY (client message id) is `uniq_key`, as the broker looks them up
        (max_num 32)."""
        if mode == "broker":
            with self.index() as idx:
                return self._broker_rows(idx.query_unique_key(topic, uniq_key, begin, end).phy_offsets)
        return self.explain_key(topic, uniq_key, begin=begin, end=end, unique=True).frame(mode)

    def commitlog_extent(self) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """The CommitLog files' start offsets and sizes, and its write position (the broker's
        getMaxOffset: the end of the last whole record), read once and kept (the store is a
        copy that does not grow). Cost: a walk of the active file's records, the first time."""
        if getattr(self, "_commitlog_extent", None) is None:
            files = cl.store_files(self.commitlog_dir) if self.commitlog_dir.is_dir() else []
            end = (cl.max_offset(self.commitlog_dir) or 0) if files else 0
            self._commitlog_extent = (tuple(f.start_offset for f in files), tuple(f.size for f in files), end)
        return self._commitlog_extent

    def config(self):
        """The store's ``config/`` folder as the broker loads it
        (:func:`rmqlab.formats.storeconfig.read_store_config`), kept until a file in it changes
        (its name, size or modification time: a pull loop reads the folder once, an edit is
        seen at once). Cost: one listing of config/ a call; the files when they changed."""
        from rmqlab.formats.storeconfig import read_store_config

        folder = self.root / "config"
        try:
            with os.scandir(folder) as entries:
                stamp = tuple(sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in entries))
        except (FileNotFoundError, NotADirectoryError):
            stamp = ()
        cached = getattr(self, "_config", None)
        if cached is None or cached[0] != stamp:
            self._config = (stamp, read_store_config(self.root))
        return self._config[1]

    def rocksdb_queues(self):
        """The store's RocksDB ConsumeQueue (storeType=defaultRocksDB), read once and kept:
        :class:`rmqlab.formats.rocksdbcq.RocksDBConsumeQueues`. FileNotFoundError for a store
        of file queues."""
        from rmqlab.formats import rocksdbcq

        if getattr(self, "_rocksdb_queues", None) is None:
            self._rocksdb_queues = rocksdbcq.RocksDBConsumeQueues.open(self.consumequeue_dir)
        return self._rocksdb_queues

    def get_message(self, topic: str, queue_id: int, offset: int, max_msg_nums: int = 32,
                    subscription: Any = "*", **kw: Any):
        """The broker's answer to a pull at (`topic`, `queue_id`, `offset`):
        :func:`rmqlab.store.pull.get_message` (keywords: limits, broker_version, check_topic)."""
        from rmqlab.store.pull import get_message

        return get_message(self, topic, queue_id, offset, max_msg_nums, subscription, **kw)

    def query_by_offset_msg_id(self, msg_id: str) -> pd.DataFrame:
        """The message an offset message id names (store host + CommitLog offset)."""
        return self.read_at([parse_offset_msg_id(msg_id).phy_offset])

    def query_by_time(self, topic: str, begin: int, end: int, *, queue_ids: list[int] | None = None,
                      max_bytes: int | None = None, body: bool = False, mode: str = "broker") -> pd.DataFrame:
        """Messages of `topic` stored in [begin, end] ms, through its queues (ConsumeQueue,
        BatchConsumeQueue or RocksDB ConsumeQueue): each queue is searched by store time (the
        broker's getOffsetInQueueByTime with the store's release rules, lower bound for
        `begin`, upper for `end`), the units between are read from the CommitLog, and rows
        outside the range (store times are not monotone) are dropped. Sorted by store time.
        ``result.attrs["explain"]`` maps each queue id to its two searches (on a ConsumeQueue
        the broker's TimeSearch: every unit probed, and the outcome; else the offsets).
        `max_bytes` bounds the CommitLog bytes read (the units' sizes, queue by queue in queue
        id order, as ``kafka-dump-log --max-bytes`` bounds a dump): ``attrs["truncated"]`` then
        says whether units were left unread. `body`: read the bodies too.

        `mode` "verified" reads every unit of each queue instead of the searched range, so
        that every message stored in the range is found whatever the broker's search does
        (5.0's search looks in one file only); in "broker" mode ``attrs["missed"]`` lists the
        queues whose search started past a unit stored in the range (the unit just below the
        lower bound: one read a queue), where verified mode finds more.

        Cost: the two searches a queue (a few unit and message reads), then one read of each
        unit in range (of every unit, verified); O(messages read)."""
        from rmqlab.rules.versions import layout_facts
        from rmqlab.store.queues import LogicQueue, all_queues

        facts = layout_facts(self.broker_version)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        frames: list[pd.DataFrame] = []
        explain: dict[int, dict[str, Any]] = {}
        missed: list[int] = []
        budget = None if max_bytes is None else int(max_bytes)
        truncated = False
        for t, qid in all_queues(self):
            if t != topic or (queue_ids is not None and qid not in queue_ids):
                continue
            if budget is not None and budget <= 0:
                truncated = True
                break
            with LogicQueue(self, t, qid) as q:
                if q.max_offset <= q.min_offset:
                    continue
                if mode == "verified":
                    lower, upper = q.min_offset, q.max_offset - 1
                    explain[qid] = {"lower": lower, "upper": upper}
                else:
                    lower, lower_how = q.offset_by_time(begin, "lower", self._store_time_of, facts)
                    upper, upper_how = q.offset_by_time(end, "upper", self._store_time_of, facts)
                    explain[qid] = {"lower": lower_how or lower, "upper": upper_how or upper}
                    below = q.units(lower - 1, lower) if lower > q.min_offset else q.units(0, 0)
                    at = below["commitlog_offset"].to_numpy(np.int64)
                    if len(below) and begin <= int(self._store_time_of(at)[0]) <= end:
                        missed.append(qid)
                units = q.units(max(lower, q.min_offset), min(upper + 1, q.max_offset))
            if units.empty:
                continue
            if budget is not None:
                within = int(np.searchsorted(units["size"].to_numpy(np.int64).cumsum(), budget, side="right"))
                truncated = truncated or within < len(units)
                units = units.iloc[:within]
                budget -= int(units["size"].sum())
            m = self.read_at(units["commitlog_offset"].to_numpy(np.int64), body=body)
            frames.append(m[m["store_timestamp"].between(begin, end)])
        result = (pd.concat(frames, ignore_index=True).sort_values(["store_timestamp", "phy_offset"], ignore_index=True)
                  if frames else self.read_at([], body=body))
        result.attrs["explain"] = explain
        result.attrs["truncated"] = truncated
        result.attrs["missed"] = missed
        return result

    def consumer_progress(self) -> pd.DataFrame:
        """Each consumer group's progress per queue: the committed offset from
        config/consumerOffset.json (loaded as the broker loads it, .bak fallback included)
        against the queue's ends (its ConsumeQueue, BatchConsumeQueue or RocksDB ConsumeQueue:
        :class:`~rmqlab.store.queues.LogicQueue`). ``lag`` = max_offset - committed (the broker's
        "diff"). Flags: ``beyond_max`` (committed past the queue's end), ``behind_min``
        (committed before the queue's first unit: those messages were deleted unconsumed),
        ``unknown_queue`` (the store holds no such queue: its min and max offsets are 0, as the
        broker answers for a queue without files, and the lag is minus the committed offset),
        ``no_subscription_group`` (the group has no subscriptionGroup.json entry).
        ``result.attrs["config"]`` says which file each table came from.
        Cost: the config files, and the ends of each queue named.
        """
        from rmqlab.store.queues import LogicQueue

        cfg = self.config()
        offsets = cfg.consumer_offsets()
        groups = set(cfg.subscription_groups()["group"])
        ends: dict[tuple[str, int], tuple[int, int, bool]] = {}
        rows = []
        for group, topic, queue_id, offset in offsets[["group", "topic", "queue_id", "offset"]].itertuples(
                index=False, name=None):
            where = (str(topic), int(queue_id))
            committed = int(offset)
            if where not in ends:
                with LogicQueue(self, *where) as q:
                    ends[where] = (q.min_offset, q.max_offset, q.kind == "none")
            lo, hi, unknown = ends[where]
            rows.append({"group": group, "topic": topic, "queue_id": where[1], "committed": committed,
                         "min_offset": lo, "max_offset": hi, "lag": hi - committed, "beyond_max": committed > hi,
                         "behind_min": committed < lo, "unknown_queue": unknown,
                         "no_subscription_group": group not in groups})
        cols = ["group", "topic", "queue_id", "committed", "min_offset", "max_offset", "lag", "beyond_max",
                "behind_min", "unknown_queue", "no_subscription_group"]
        out = pd.DataFrame(rows, columns=cols)
        for c in ("min_offset", "max_offset", "lag"):
            out[c] = out[c].astype("Int64")
        out.attrs["config"] = cfg.as_dict()
        return out

    def _store_time_of(self, phy_offsets: np.ndarray) -> np.ndarray:
        m = self.read_at(phy_offsets)
        got = dict(zip(m["phy_offset"], m["store_timestamp"]))
        return np.array([got.get(int(p), -1) for p in phy_offsets], dtype=np.int64)
