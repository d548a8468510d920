"""What the store engine needs to know of a store: where its files are and how its broker was
configured (file sizes, index geometry, the dispatch features of its release).

The engine's parts (the reput in :mod:`rmqlab.store.reput`, recovery in
:mod:`rmqlab.store.recover`) take a :class:`StoreLayout`, not the whole
:class:`~rmqlab.store.directory.Store`: a small, frozen value that says everything they may
depend on. ``MessageStoreConfig`` names each setting (read at rocketmq-all-4.9.7 and 5.3.1).

>>> import tempfile
>>> layout = StoreLayout.of(tempfile.mkdtemp(), hash_slot_num=64, index_num=256)
>>> layout.paths.index.name, layout.hash_slot_num, layout.consume_queue_ext, layout.batch_cq_topics
('index', 64, False, frozenset())
"""
from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, slot_count_rule_of
from rmqlab.formats.storepaths import StorePaths, queue_folders
from rmqlab.store.indexservice import DEFAULT_MAX_MSGS_NUM_BATCH, IndexService

__all__ = ["StoreLayout"]


@dataclass(frozen=True)
class StoreLayout:
    """A store's paths and its broker's settings. Build it with :meth:`of`, which fills the
    settings a store says itself (BatchCQ topics from config/, ConsumeQueueExt from its folder)."""
    paths: StorePaths
    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM             # maxHashSlotNum
    index_num: int = DEFAULT_INDEX_NUM                     # maxIndexNum
    max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH   # maxMsgsNumBatch (IndexService queries)
    commitlog_file_size: int = cl.DEFAULT_FILE_SIZE        # mappedFileSizeCommitLog (bytes)
    consume_queue_file_size: int = cq.DEFAULT_MAPPED_FILE_SIZE              # mappedFileSizeConsumeQueue
    batch_consume_queue_file_size: int = bcq.DEFAULT_MAPPED_FILE_SIZE       # mapperFileSizeBatchConsumeQueue
    consume_queue_ext: bool = False                        # enableConsumeQueueExt
    consume_queue_ext_file_size: int = cqx.DEFAULT_MAPPED_FILE_SIZE         # mappedFileSizeConsumeQueueExt
    batch_cq_topics: frozenset[str] = frozenset()          # topics whose queue.type is BatchCQ
    enable_lmq: bool = False                               # enableLmq
    enable_multi_dispatch: bool = False                    # enableMultiDispatch
    broker_version: str | None = None                      # the release's multi-dispatch rules; None: 5.x
    tz: _dt.tzinfo | None = None                           # time zone of index file names; None: local

    #: each inferable setting (keyword -> :class:`~rmqlab.store.settings.Setting`): its value,
    #: and whether it was given, told by the files or the broker's default
    settings: tuple = ()

    @classmethod
    def of(cls, root: str | os.PathLike, *, batch_cq_topics: Iterable[str] | None = None,
           consume_queue_ext: bool | None = None, commitlog_paths: Iterable[str | os.PathLike] | None = None,
           **settings) -> StoreLayout:
        """The layout of the store at `root`. `batch_cq_topics` None: the topics config/topics.json
        marks BatchCQ, as the broker reads them (none without config/). `consume_queue_ext` None:
        on when the store has ``consumequeue_ext/`` (only a broker with it on writes one).
        `commitlog_paths`: the folders of a CommitLog over several paths (:class:`StorePaths`).
        Other keywords are the fields of the same name; a file size or an index count that is
        None or not given is what the store's files say, else the broker's default
        (:func:`rmqlab.store.settings.store_settings`, which raises AmbiguousSettingError where
        the files leave a choice). Cost: reads config/topics.json, lists every queue folder and
        the CommitLog's, and reads two index file headers per index file size."""
        from rmqlab.store.settings import SETTINGS, store_settings

        paths = StorePaths(root, list(commitlog_paths) if commitlog_paths is not None else None)
        if batch_cq_topics is None:
            from rmqlab.formats.storeconfig import batch_cq_topics as configured_batch_cq_topics

            batch_cq_topics = configured_batch_cq_topics(paths.root)
        if consume_queue_ext is None:
            consume_queue_ext = paths.consumequeue_ext.is_dir() and any(
                p.is_file() for p in paths.consumequeue_ext.glob("*/*/*"))
        told = store_settings(paths, **{k: settings.pop(k, None) for k in SETTINGS})
        settings.update({k: s.value for k, s in told.items()})
        return cls(paths, batch_cq_topics=frozenset(batch_cq_topics), consume_queue_ext=consume_queue_ext,
                   settings=tuple(told.items()), **settings)

    def setting(self, keyword: str):
        """The :class:`~rmqlab.store.settings.Setting` of `keyword` (e.g. "commitlog_file_size")."""
        return dict(self.settings)[keyword]

    @property
    def root(self) -> Path:
        return self.paths.root

    def index_service(self, *, writable: bool = False) -> IndexService:
        """The index folder as an :class:`IndexService` with this layout's geometry (read-only
        unless `writable`; files named by store time; TAGS keys indexed for a 5.4.0+
        `broker_version`, and its hashSlotCount rule). Without an index folder it holds no file,
        and finds nothing, as the broker's does."""
        from rmqlab.rules.versions import layout_facts

        return IndexService(self.paths.index, self.hash_slot_num, self.index_num, self.max_msgs_num_batch,
                            read_only=not writable, tz=self.tz, name_by_store_time=True,
                            tag_keys=layout_facts(self.broker_version).index_tag_key,
                            slot_count_rule=slot_count_rule_of(self.broker_version))

    def consume_queues(self) -> list[tuple[str, int]]:
        """(topic, queue_id) of every ConsumeQueue folder, sorted. Cost: one directory listing."""
        return [(topic, qid) for topic, qid, _ in queue_folders(self.paths.consumequeue)]

    def batch_queues(self) -> list[tuple[str, int]]:
        """(topic, queue_id) of every BatchConsumeQueue folder, sorted."""
        return [(topic, qid) for topic, qid, _ in queue_folders(self.paths.batchconsumequeue)]
