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
from rmqlab.formats.tieredindex import (
    BEGIN_MAGIC_CODE,
    COMPACT_ITEM,
    END_MAGIC_CODE,
    HEADER,
    ITEM,
    LEGACY_FILE_NAMES,
    SLOT,
)
from rmqlab.jvm.hashcode import java_hash
from rmqlab.jvm.longs import wrap_int

__all__ = ["legacy_hash", "slot_of", "local_file_size", "uploaded_slot_items", "local_slot_items", "startup_upload",
           "query_uploaded", "QUERY_COLUMNS", "check_local", "check_compacted", "local_geometries"]

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



def _chain_errors(p: Path, hashes: np.ndarray, prev: np.ndarray, heads: np.ndarray, slots: int,
                  items_at: int, item_size: int) -> list[FormatError]:
    """Where items numbered 0..n-1 (their hash and previous-item pointer) and the slots' heads are
    not what putKey leaves: each slot's head its newest item (-1: none), each item pointing at the
    one before it in its slot (-1: the first)."""
    n = len(hashes)
    errors: list[FormatError] = []
    if (hashes < 0).any():
        i = int(np.flatnonzero(hashes < 0)[0])
        return [FormatError(f"item {i} has hash {int(hashes[i])}: indexKeyHashMethod never gives a negative one",
                            path=p, offset=items_at + i * item_size, field="hash_code")]
    slot = hashes % slots
    order = np.lexsort((np.arange(n), slot))          # by slot, then item number
    want_prev = np.full(n, -1, np.int64)
    same = slot[order][1:] == slot[order][:-1]
    want_prev[order[1:][same]] = order[:-1][same]
    bad = np.flatnonzero(prev != want_prev)
    if len(bad):
        i = int(bad[0])
        errors.append(FormatError(
            f"item {i} (slot {int(slot[i])}) points at {int(prev[i])}, not at {int(want_prev[i])}, the slot's item "
            f"before it ({len(bad)} items so)", path=p, offset=items_at + i * item_size + item_size - 4,
            field="item_index"))
    want_heads = np.full(slots, -1, np.int64)
    if n:
        last = np.r_[~same, True]                      # the last item of each slot group
        want_heads[slot[order][last]] = order[last]
    bad = np.flatnonzero(heads != want_heads)
    if len(bad):
        k = int(bad[0])
        errors.append(FormatError(
            f"slot {k} holds {int(heads[k])}, not {int(want_heads[k])}, its newest item ({len(bad)} slots so)",
            path=p, offset=HEADER.size + k * SLOT.size, field="slot"))
    return errors


def _local_errors(p: Path, data: np.ndarray, slots: int, items: int) -> list[FormatError]:
    head = HEADER.unpack_from(data[:HEADER.size].tobytes(), 0)
    errors: list[FormatError] = []
    if head.magic != BEGIN_MAGIC_CODE:
        errors.append(FormatError(f"magic {head.magic} is not BEGIN_MAGIC_CODE {BEGIN_MAGIC_CODE} "
                                  f"(initIndexFileHeader's)", path=p, offset=0, field="magic"))
    n = head.item_count
    if not 0 <= n <= items:
        return errors + [FormatError(f"index count {n} is outside 0..{items} (maxIndexNum)", path=p, offset=24,
                                     field="index count")]
    seal = int.from_bytes(data[-4:].tobytes(), "big", signed=True)
    if seal not in (END_MAGIC_CODE, -1):
        errors.append(FormatError(f"the last 4 bytes hold {seal}: neither -1 nor END_MAGIC_CODE {END_MAGIC_CODE}",
                                  path=p, offset=len(data) - 4, field="end magic"))
    elif n == items and seal != END_MAGIC_CODE:
        errors.append(FormatError(f"{n} items fill the file but it is not sealed (END_MAGIC_CODE in its last 4 bytes)",
                                  path=p, offset=len(data) - 4, field="end magic"))
    if (n == 0) != (head.begin_timestamp == -1):
        errors.append(FormatError(f"begin timestamp {head.begin_timestamp} with {n} items (-1 exactly while "
                                  f"there is none)", path=p, offset=4, field="begin timestamp"))
    heads = np.frombuffer(data, SLOT.dtype, count=slots, offset=HEADER.size)["value"].astype(np.int64)
    items_at = HEADER.size + slots * SLOT.size
    table = np.frombuffer(data, ITEM.dtype, count=n, offset=items_at)
    errors += _chain_errors(p, table["hash_code"].astype(np.int64), table["item_index"].astype(np.int64), heads,
                            slots, items_at, ITEM.size)
    if n:
        # putKey sets the begin timestamp at the first put and the end timestamp at every put, to
        # that put's store time: the dispatcher indexes queue after queue, so items between them may
        # be older or newer than either; only the first and the last are fixed
        diff = table["time_diff"].astype(np.int64)
        last = wrap_int(head.end_timestamp - head.begin_timestamp)   # putKey's (int) cast
        if diff[0] != 0:
            errors.append(FormatError(f"item 0 was stored {int(diff[0])} ms after the begin timestamp, which is "
                                      f"the first put's store time (0 expected)", path=p, offset=items_at + 24,
                                      field="time_diff"))
        if diff[n - 1] != last:
            errors.append(FormatError(
                f"item {n - 1}, the last put, was stored {int(diff[n - 1])} ms after the begin timestamp, but the end "
                f"timestamp {head.end_timestamp} is {last} ms after it (the last put's store time)", path=p,
                offset=items_at + (n - 1) * ITEM.size + 24, field="time_diff"))
    return errors


def local_geometries(path: str | os.PathLike) -> list[tuple[int, int]]:
    """The (slots, items) a local file's bytes allow: every split of its size into
    ``40 + 8 x slots + 32 x items + 4`` with room for its index count under which the file
    passes :func:`check_local`; a full (sealed at maxIndexNum) file fixes both, and so does an
    empty one (its slots hold -1, its items zeros). Reads only.
    Cost: O(file size / 8) candidates, each sifted on its slots' heads, O(items) for the rest.

    >>> import tempfile
    >>> local_geometries(Path(tempfile.mkdtemp()) / "none")
    []
    """
    p = Path(path)
    if not p.is_file():
        return []
    size = p.stat().st_size
    rest = size - _SIZE_HEADER - 4
    if rest <= 0 or rest % SLOT.size:
        return []
    data = np.memmap(p, dtype=np.uint8, mode="r")
    head = HEADER.unpack_from(data[:HEADER.size].tobytes(), 0)
    n = head.item_count
    if n < 0:
        return []
    if n == 0:
        # a file just rolled (initIndexFileHeader): -1 in each slot, then the zeros of the items
        # (no hash code of an item is -1), so the first slot not -1 is where the items begin
        heads = np.frombuffer(data, ">i4", count=2 * (rest // SLOT.size), offset=HEADER.size)[::2]
        slots = int(np.argmax(heads != -1)) if (heads != -1).any() else len(heads)
        items = (rest - slots * SLOT.size) // ITEM.size
        fits = slots > 0 and items > 0 and local_file_size(slots, items) == size
        return [(slots, items)] if fits and not _local_errors(p, data, slots, items) else []
    out = []
    for slots in range(1, rest // SLOT.size + 1):
        items = (rest - slots * SLOT.size) // ITEM.size
        if items < n or local_file_size(slots, items) != size:
            continue
        # the newest item heads its slot's chain: one read sifts most candidates out
        at = HEADER.size + slots * SLOT.size + (n - 1) * ITEM.size
        if at + ITEM.size > size:
            continue
        h = int.from_bytes(data[at:at + 4].tobytes(), "big", signed=True)
        if h < 0:
            continue
        slot_at = HEADER.size + (h % slots) * SLOT.size
        if int.from_bytes(data[slot_at:slot_at + 4].tobytes(), "big", signed=True) != n - 1:
            continue
        if not _local_errors(p, data, slots, items):
            out.append((slots, items))
    return out


def check_local(path: str | os.PathLike, hash_slot_num: int | None = None,
                index_num: int | None = None) -> tuple[tuple[int, int] | None, list[FormatError]]:
    """The geometry and the problems of a local file (``0000``, ``1111``) under 5.1's putKey and
    initIndexFileHeader: size ``40 + 8 x slots + 32 x items + 4``, BEGIN_MAGIC_CODE, an index
    count within maxIndexNum, the last 4 bytes -1 or END_MAGIC_CODE (always the latter once
    full), a begin timestamp of -1 exactly while empty, each slot holding its newest item and
    each item pointing at the one before it in its slot, the first item stored at the begin
    timestamp and the last at the end timestamp (those between may be older or newer: the
    dispatcher indexes queue after queue). The
    geometry is tieredStoreIndexFileMaxHashSlotNum / MaxIndexNum where given, else the one
    :func:`local_geometries` finds (an error where none or several fit). Reads only. Cost: one
    NumPy pass over the file's slots and items (and the candidates' sift without a geometry).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "0000"
    >>> _ = p.write_bytes(b"\\0" * 7)
    >>> check_local(p, 1, 1)[1][0].field
    'file size'
    """
    p = Path(path)
    size = p.stat().st_size
    if hash_slot_num is None:
        fits = local_geometries(p)
        if len(fits) != 1:
            why = "none fits its bytes" if not fits else f"{len(fits)} fit: {fits[:4]}"
            return None, [FormatError(f"file is {size} bytes and no geometry was given: {why}; pass "
                                      f"tieredStoreIndexFileMaxHashSlotNum,MaxIndexNum", path=p, offset=None,
                                      field="file size")]
        return fits[0], []   # local_geometries keeps only a geometry the file passes under
    slots = hash_slot_num
    items = index_num if index_num is not None else (size - _SIZE_HEADER - 4 - slots * SLOT.size) // ITEM.size
    if slots <= 0 or items <= 0 or local_file_size(slots, items) != size:
        return None, [FormatError(f"file is {size} bytes, not the {local_file_size(max(slots, 0), max(items, 0))} "
                                  f"of {slots} slots and {items} items (40 + 8 x slots + 32 x items + 4)", path=p,
                                  offset=None, field="file size")]
    return (slots, items), _local_errors(p, np.memmap(p, dtype=np.uint8, mode="r"), slots, items)


def check_compacted(path: str | os.PathLike) -> list[FormatError]:
    """The problems of a compacted file (``2222``, CompactTask's output before its upload; an
    uploaded one reads alike): END_MAGIC_CODE, a positive slot count, each slot's (position,
    length) none or whole 28-byte items inside the item area, in slot order one after another,
    every item of a slot hashing to it, the item area ending in BEGIN_MAGIC_CODE, the items
    counted in the header. Reads only. Cost: one NumPy pass over the slots and items.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "2222"
    >>> _ = p.write_bytes(b"\\0" * 3)
    >>> check_compacted(p)[0].field
    'header'
    """
    p = Path(path)
    size = p.stat().st_size
    if size < HEADER.size:
        return [TruncatedFileError(f"file is {size} bytes, shorter than the {HEADER.size}-byte header", path=p,
                                   offset=size, field="header")]
    data = np.memmap(p, dtype=np.uint8, mode="r")
    head = HEADER.unpack_from(data[:HEADER.size].tobytes(), 0)
    if head.magic != END_MAGIC_CODE:
        return [FormatError(f"magic {head.magic} is not END_MAGIC_CODE {END_MAGIC_CODE} (a compacted file's)",
                            path=p, offset=0, field="magic")]
    slots = head.slot_count
    start = HEADER.size + slots * SLOT.size
    if slots <= 0 or start + 4 > size:
        return [FormatError(f"slot count {slots} does not fit the file's {size} bytes", path=p, offset=20,
                            field="slot_count")]
    table = np.frombuffer(data, SLOT.dtype, count=slots, offset=HEADER.size)
    pos, length = table["value"].astype(np.int64), table["length"].astype(np.int64)
    used = length > 0
    errors: list[FormatError] = []
    expect = start + np.r_[0, np.cumsum(length[used])[:-1]] if used.any() else np.empty(0, np.int64)
    bad = np.flatnonzero(used)[(pos[used] != expect) | (length[used] % COMPACT_ITEM.size != 0)]
    if len(bad):
        k = int(bad[0])
        errors.append(FormatError(f"slot {k} points at {int(length[k])} bytes from {int(pos[k])}, not whole items "
                                  f"after the previous slot's ({len(bad)} slots so)", path=p,
                                  offset=HEADER.size + k * SLOT.size, field="slot"))
        return errors
    end = start + int(length[used].sum())
    if end + 4 > size or int.from_bytes(data[end:end + 4].tobytes(), "big", signed=True) != BEGIN_MAGIC_CODE:
        errors.append(FormatError(f"the items end at {end} without BEGIN_MAGIC_CODE after them", path=p,
                                  offset=end, field="end magic"))
        return errors
    items = np.frombuffer(data, COMPACT_ITEM.dtype, count=(end - start) // COMPACT_ITEM.size, offset=start)
    if len(items) != head.item_count:
        errors.append(FormatError(f"{len(items)} items, the header counts {head.item_count}", path=p, offset=24,
                                  field="index count"))
    owner = np.repeat(np.flatnonzero(used), length[used] // COMPACT_ITEM.size)
    wrong = np.flatnonzero(items["hash_code"].astype(np.int64) % slots != owner)
    if len(wrong):
        i = int(wrong[0])
        errors.append(FormatError(f"item {i} of slot {int(owner[i])} has hash {int(items['hash_code'][i])}, of "
                                  f"another slot ({len(wrong)} items so)", path=p,
                                  offset=start + i * COMPACT_ITEM.size, field="hash_code"))
    return errors
