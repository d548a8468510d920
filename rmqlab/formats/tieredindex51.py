"""5.1's tiered store index: the files of ``file/TieredIndexFile`` (``container/TieredIndexFile`` in
5.1.0) and the key query ``TieredMessageFetcher.queryMessageAsync`` answers from them
(rocketmq-all-5.1.4, commit 1a681bdf; 5.2.0 replaced both with IndexStoreFile,
:mod:`rmqlab.formats.tieredindex`). The byte layouts are those of IndexStoreFile (its
``HEADER``, ``SLOT``, ``ITEM`` and ``COMPACT_ITEM``, declared there once), with other rules:

* **local files** in ``{root}/tiered_index_file/``: ``0000`` the file being written, ``1111`` the
  full one awaiting compaction (``2222`` the compaction's own, deleted once uploaded). A file is
  ``40 + 8 * slots + 32 * items + 4`` bytes (its size counts the 40-byte header of the CommitLog
  index, IndexHeader, though its own header is 28): an empty slot holds -1, items count from 0,
  each points at its slot's previous item (-1: the chain ends), an item's time is milliseconds
  after the file's begin timestamp, and the last 4 bytes are END_MAGIC_CODE once the file is full.
  The slot count in the header stays 0.
* **uploaded files**: the compaction of a full file (CompactTask), appended to the index flat file
  (queue ``rmq_sys_INDEX``/0 of the tiered file system): the header (magic END_MAGIC_CODE, the
  slot count), each slot's byte position in the file and byte length of its items (position 0,
  length 0: none), the items of each slot in chain order, 28 bytes each, then BEGIN_MAGIC_CODE.

The broker queries the uploaded files only (a key stays out of reach until its file is full and
compacted; :func:`startup_upload` names the local file a restart compacts and uploads first):
those whose time range (the metadata's begin and end timestamps) meets the query's,
newest first; in each, the items of the key's slot (``abs(hashCode(topic#key)) % slots``,
Integer.MIN_VALUE counted as 0) of the key's hash and of the topic's id in the metadata, stored
within the query's window (the file's begin timestamp plus the item's milliseconds), up to
maxCount in all.

>>> slot_of(legacy_hash("T", "k"), 64) == abs(java_hash("T#k")) % 64
True
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.formats.tieredindex import COMPACT_ITEM, END_MAGIC_CODE, HEADER, ITEM, LEGACY_FILE_NAMES, SLOT
from rmqlab.jvm.hashcode import java_hash

__all__ = ["legacy_hash", "slot_of", "local_file_size", "uploaded_slot_items", "local_slot_items", "startup_upload",
           "query_uploaded", "QUERY_COLUMNS"]

#: TieredIndexFile's file size counts IndexHeader.INDEX_HEADER_SIZE (the CommitLog index's 40 bytes)
_SIZE_HEADER = 40
#: the columns of :func:`query_uploaded`
QUERY_COLUMNS = ("topic_id", "queue_id", "offset", "size", "time_diff", "hash_code", "store_timestamp",
                 "file_timestamp")


def legacy_hash(topic: str, key: str) -> int:
    """TieredIndexFile.indexKeyHashMethod(buildKey(topic, key)): abs of the Java String hash of
    ``topic#key``, 0 where that stays negative (Integer.MIN_VALUE)."""
    h = abs(java_hash(f"{topic}#{key}"))
    return 0 if h >= 1 << 31 else h


def slot_of(hash_code: int, slot_num: int) -> int:
    """The slot a hash falls in: ``hashCode % maxHashSlotNum``."""
    return hash_code % slot_num


def local_file_size(hash_slot_num: int, index_num: int) -> int:
    """A local file's size in bytes (TieredIndexFile.fileMaxSize) for the broker's
    tieredStoreIndexFileMaxHashSlotNum and MaxIndexNum.

    >>> local_file_size(64, 300)
    10156
    """
    return _SIZE_HEADER + hash_slot_num * SLOT.size + index_num * 32 + 4


def _header(p: Path, fh) -> Any:
    raw = fh.read(HEADER.size)
    if len(raw) < HEADER.size:
        raise TruncatedFileError(f"file is {len(raw)} bytes, shorter than the {HEADER.size}-byte header",
                                 path=p, offset=len(raw), field="header")
    return HEADER.unpack_from(raw, 0)


def uploaded_slot_items(path: str | os.PathLike, hash_code: int) -> np.ndarray:
    """The items an uploaded (compacted) file keeps under `hash_code`'s slot, in chain order
    (newest first): COMPACT_ITEM records. The slot count is the header's. Raises FormatError /
    TruncatedFileError naming the file, the offset and the field where the header or the slot
    points outside the file. Cost: the header, one slot and its items read."""
    p = Path(path)
    with open(p, "rb") as fh:
        head = _header(p, fh)
        if head.magic != END_MAGIC_CODE:
            raise FormatError(f"magic {head.magic} is not END_MAGIC_CODE {END_MAGIC_CODE} (a compacted file's)",
                              path=p, offset=0, field="magic")
        if head.slot_count <= 0:
            raise FormatError(f"slot count {head.slot_count}: a compacted file holds its slot count", path=p,
                              offset=20, field="slot_count")
        at = HEADER.size + slot_of(hash_code, head.slot_count) * SLOT.size
        fh.seek(at)
        raw = fh.read(SLOT.size)
        if len(raw) < SLOT.size:
            raise TruncatedFileError(f"the slot at {at} lies past the file's end", path=p, offset=at, field="slot")
        position, length = SLOT.unpack_from(raw, 0)
        if position == -1 or length <= 0:
            return np.empty(0, COMPACT_ITEM.dtype)
        size = p.stat().st_size
        if position < HEADER.size or length % COMPACT_ITEM.size or position + length > size:
            raise FormatError(f"the slot points at {length} bytes from {position}, not whole items inside the "
                              f"file's {size} bytes", path=p, offset=at, field="slot")
        fh.seek(position)
        return np.frombuffer(fh.read(length), COMPACT_ITEM.dtype)


def local_slot_items(path: str | os.PathLike, hash_code: int, hash_slot_num: int) -> np.ndarray:
    """The items of `hash_code`'s slot in a local file of `hash_slot_num` slots, in chain order
    (newest first), as CompactTask copies them: COMPACT_ITEM records. The walk stops at a
    pointer outside [0, items) and after as many steps as there are items. Raises FormatError
    naming the file where its size does not fit `hash_slot_num`. Cost: one read of the slot and
    of each item of its chain."""
    p = Path(path)
    size = p.stat().st_size
    items = (size - _SIZE_HEADER - 4 - hash_slot_num * SLOT.size) // ITEM.size
    if hash_slot_num <= 0 or items <= 0 or local_file_size(hash_slot_num, items) != size:
        raise FormatError(f"file is {size} bytes: not a local file of {hash_slot_num} slots "
                          f"(40 + 8 x slots + 32 x items + 4 bytes)", path=p, offset=None, field="file size")
    data = np.memmap(p, dtype=np.uint8, mode="r")
    slots = np.frombuffer(data, SLOT.dtype, count=hash_slot_num, offset=HEADER.size)
    table = np.frombuffer(data, ITEM.dtype, count=items, offset=HEADER.size + hash_slot_num * SLOT.size)
    chain: list[int] = []
    at = int(slots[slot_of(hash_code, hash_slot_num)]["value"])
    while 0 <= at < items and len(chain) < items:
        chain.append(at)
        at = int(table[at]["item_index"])
    out = np.empty(len(chain), COMPACT_ITEM.dtype)
    for name in COMPACT_ITEM.dtype.names or ():
        out[name] = table[name][chain]
    return out


def startup_upload(folder: str | os.PathLike) -> Path | None:
    """The local file a starting broker compacts and uploads at once (TieredIndexFile.initFile):
    ``0000`` where it is full (its last 4 bytes END_MAGIC_CODE; a ``1111`` then is deleted
    unread), else ``1111`` where there is one; None otherwise."""
    d = Path(folder)
    current, previous = (d / n for n in LEGACY_FILE_NAMES[:2])
    if current.is_file() and current.stat().st_size >= 4:
        with open(current, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            if int.from_bytes(fh.read(4), "big", signed=True) == END_MAGIC_CODE:
                return current
    return previous if previous.is_file() else None


def query_uploaded(files: Sequence[tuple[str | os.PathLike, int, int]], topic: str, key: str, topic_id: int | None,
                   max_count: int, begin: int, end: int, *, local: Path | None = None,
                   hash_slot_num: int | None = None) -> pd.DataFrame:
    """``TieredMessageFetcher.queryMessageAsync`` over the uploaded files `files` (path, begin
    and end timestamps as the metadata keeps them, in base offset order): the files whose time
    range meets [begin, end] (getFileListByTime), newest first; of each, the items of the key's
    slot with its hash and `topic_id` (the topic's id in the metadata; None: the topic has none,
    nothing is found) stored in [begin, end], up to `max_count` in all, in that order. `local`:
    the file a restart uploads first (:func:`startup_upload`), asked as the newest, its slots
    `hash_slot_num` (None: the uploaded files' slot count). Rows:
    :data:`QUERY_COLUMNS` (``store_timestamp`` the file's begin plus the item's milliseconds).
    Cost: one slot and its items read a file in range.

    >>> query_uploaded([], "T", "k", 1, 32, 0, 1).shape[0]
    0
    """
    rows: list[dict] = []
    if topic_id is None or begin > end:
        return pd.DataFrame(rows, columns=list(QUERY_COLUMNS))
    h = legacy_hash(topic, key)
    asked = [(Path(f[0]), int(f[1]), int(f[2]), "uploaded") for f in files]
    if local is not None:
        with open(local, "rb") as fh:
            head = _header(Path(local), fh)
        asked.append((Path(local), head.begin_timestamp, head.end_timestamp, "local"))
        if hash_slot_num is None:
            if not files:
                raise FormatError("no uploaded file tells the slot count: pass hash_slot_num "
                                  "(tieredStoreIndexFileMaxHashSlotNum)", path=local, offset=None, field="slots")
            with open(files[0][0], "rb") as fh:
                hash_slot_num = _header(Path(files[0][0]), fh).slot_count
            if hash_slot_num <= 0:
                raise FormatError(f"slot count {hash_slot_num}: a compacted file holds its slot count",
                                  path=files[0][0], offset=20, field="slot_count")
    for path, first, _, kind in reversed([f for f in asked if max(begin, f[1]) <= min(end, f[2])]):
        if kind == "uploaded":
            items = uploaded_slot_items(path, h)
        else:
            assert hash_slot_num is not None   # set above whenever a local file is asked
            items = local_slot_items(path, h, hash_slot_num)
        for it in items:
            if len(rows) >= max_count:
                break
            stored = int(first) + int(it["time_diff"])
            if int(it["hash_code"]) != h or int(it["topic_id"]) != topic_id or not begin <= stored <= end:
                continue
            rows.append({"topic_id": int(it["topic_id"]), "queue_id": int(it["queue_id"]), "offset": int(it["offset"]),
                         "size": int(it["size"]), "time_diff": int(it["time_diff"]), "hash_code": h,
                         "store_timestamp": stored, "file_timestamp": int(first)})
        if len(rows) >= max_count:
            break
    return pd.DataFrame(rows, columns=list(QUERY_COLUMNS))

