"""The broker settings a store's own files tell: the mapped file sizes of its CommitLog and
queues, and its index files' geometry.

A broker writes every file of a kind with one setting of ``MessageStoreConfig`` (read at
rocketmq-all-4.9.7 and 5.3.1), and its files keep it: a MappedFileQueue names each file by its
start offset, a step of the mapped file size, and an index file's size and header fix its
split of slots and entries. So a store copy needs no flags for them: each setting is what the
user gave, else what the files say (:func:`rmqlab.formats.mapped.mapped_file_size_of`,
:func:`rmqlab.formats.indexgeometry.folder_index_geometry`), else the broker's default where
the files say nothing (a new store, or a kind of file it does not have). Where the files
disagree, the choice is the user's: :class:`rmqlab.errors.AmbiguousSettingError` lists it.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "commitlog").mkdir()
>>> for start in (0, 8192):
...     _ = (root / "commitlog" / f"{start:020d}").write_bytes(bytes(8192))
>>> s = store_settings(StorePaths(root))
>>> s["commitlog_file_size"]
Setting(keyword='commitlog_file_size', broker_name='mappedFileSizeCommitLog', value=8192, source='files', \
reason='file names step by 8192 bytes (1 folder of 2 or more files)')
>>> s["consume_queue_file_size"].value, s["consume_queue_file_size"].source
(6000000, 'default')
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from rmqlab.errors import AmbiguousSettingError, FormatError
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.formats.commitlog.files import store_files
from rmqlab.formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, Geometry
from rmqlab.formats.indexgeometry import folder_index_geometry
from rmqlab.formats.mapped import FileSizeEvidence, mapped_file_size_of
from rmqlab.formats.storepaths import StorePaths, queue_folders

__all__ = ["Setting", "store_settings", "SETTINGS"]

_FILE_NAME = re.compile(r"\d{20}")


class Setting(NamedTuple):
    """One broker setting of a store: its `value`, where it came from (`source`: "given",
    "files" or "default") and why, in words."""
    keyword: str        # the keyword of Store and the command line's option (with - for _)
    broker_name: str    # MessageStoreConfig's field
    value: int
    source: str
    reason: str


#: keyword -> (MessageStoreConfig field, the broker's default)
SETTINGS: dict[str, tuple[str, int]] = {
    "commitlog_file_size": ("mappedFileSizeCommitLog", cl.DEFAULT_FILE_SIZE),
    "consume_queue_file_size": ("mappedFileSizeConsumeQueue", cq.DEFAULT_MAPPED_FILE_SIZE),
    "batch_consume_queue_file_size": ("mapperFileSizeBatchConsumeQueue", bcq.DEFAULT_MAPPED_FILE_SIZE),
    "consume_queue_ext_file_size": ("mappedFileSizeConsumeQueueExt", cqx.DEFAULT_MAPPED_FILE_SIZE),
    "hash_slot_num": ("maxHashSlotNum", DEFAULT_HASH_SLOT_NUM),
    "index_num": ("maxIndexNum", DEFAULT_INDEX_NUM),
}


def _queue_files(folder: Path) -> list[list[tuple[int, int]]]:
    """(start offset, size) of each queue folder's files under `folder` (topic/queueId/)."""
    out = []
    for _, _, q in queue_folders(folder):
        with os.scandir(q) as entries:
            out.append(sorted((int(e.name), e.stat().st_size) for e in entries
                              if _FILE_NAME.fullmatch(e.name) and e.is_file()))
    return out


def _commitlog_files(paths: StorePaths) -> list[list[tuple[int, int]]]:
    try:
        folder = paths.commitlog
    except FormatError:      # a ledger placed inside the plain files: the readers say so, with its file
        return []
    return [[(f.start_offset, f.size) for f in store_files(folder)]] if folder.is_dir() else []


def store_settings(paths: StorePaths, **given: int | None) -> dict[str, Setting]:
    """Each of :data:`SETTINGS` for the store at `paths`: the value in `given` (keyword ->
    value; None or absent: not given), else what the store's files say, else the broker's
    default. Raises :class:`rmqlab.errors.AmbiguousSettingError` (listing the choices) where
    the files of a kind disagree and the setting is not given. Cost: one listing of each
    queue folder and of the CommitLog folder, no file read but two small reads per candidate
    geometry of each index file size."""
    out: dict[str, Setting] = {}

    def put(keyword: str, evidence: FileSizeEvidence | tuple[int | None, str]) -> None:
        broker_name, default = SETTINGS[keyword]
        if given.get(keyword) is not None:
            out[keyword] = Setting(keyword, broker_name, int(given[keyword]), "given", "given")  # type: ignore
            return
        value, reason = evidence
        out[keyword] = (Setting(keyword, broker_name, value, "files", reason) if value is not None else
                        Setting(keyword, broker_name, default, "default", reason))

    def size_of(keyword: str, folders: Callable[[], list[list[tuple[int, int]]]], unit: int, where: Path) -> None:
        if given.get(keyword) is not None:      # given: the folders are not listed at all
            put(keyword, (None, ""))
            return
        try:
            put(keyword, mapped_file_size_of(folders(), what=SETTINGS[keyword][0], unit=unit, path=where))
        except AmbiguousSettingError as e:     # name the keyword that settles it
            raise AmbiguousSettingError(f"{e.reason}; pass {keyword}= with the one the broker had",
                                        choices=e.choices, path=e.path, field=e.field) from None

    size_of("commitlog_file_size", lambda: _commitlog_files(paths), 1, paths.root / "commitlog")
    size_of("consume_queue_file_size", lambda: _queue_files(paths.consumequeue), cq.UNIT_SIZE, paths.consumequeue)
    size_of("batch_consume_queue_file_size", lambda: _queue_files(paths.batchconsumequeue), bcq.UNIT_SIZE,
            paths.batchconsumequeue)
    size_of("consume_queue_ext_file_size", lambda: _queue_files(paths.consumequeue_ext), 1, paths.consumequeue_ext)
    _index_geometry(paths, given, put)
    return out


def _index_geometry(paths: StorePaths, given: dict, put) -> None:
    slots, entries = given.get("hash_slot_num"), given.get("index_num")
    if slots is not None and entries is not None:
        put("hash_slot_num", (None, ""))
        put("index_num", (None, ""))
        return
    files = sorted(p for p in paths.index.iterdir() if p.is_file()) if paths.index.is_dir() else []
    if slots is None and entries is None:
        g, reason = folder_index_geometry(files)
        put("hash_slot_num", (None if g is None else g.hash_slot_num, reason))
        put("index_num", (None if g is None else g.index_num, reason))
        return
    # one count given: the file size fixes the other (Geometry.infer raises where it cannot)
    g = Geometry.infer(files[0].stat().st_size, slots, entries, path=files[0]) if files else None
    why = f"from the size of {files[0].name} and the count given" if files else "no index file"
    put("hash_slot_num", (None if g is None else g.hash_slot_num, why))
    put("index_num", (None if g is None else g.index_num, why))
