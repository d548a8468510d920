"""The tiered store's index files (RIP-65, 5.2.0+): ``{root}/tiered_index_file/{beginTimestamp}``
while they fill, and the compacted form the broker uploads to the tiered file system.

Mirrors the tieredstore module's ``index/IndexStoreFile``, ``IndexItem`` and ``IndexStoreService``
(rocketmq-all-5.3.3, commit 29d90a4f; the same layout in the 5.5.0 jar). All fields big-endian:

* **local form** (a mapped file of ``28 + 8 * hashSlotNum + 32 * indexNum`` bytes,
  ``tieredStoreIndexFileMaxHashSlotNum`` / ``MaxIndexNum``, 5,000,000 / 20,000,000 by default):
  the header, then one 8-byte slot a hash bucket whose first int is the newest item's index
  (0: empty), then items numbered from 1 (item 0's place is never written), each pointing at the
  previous item of its slot;
* **compacted form** (``doCompaction``, written to ``tiered_index_file/compacting/{begin}`` and
  uploaded as an index segment): the same header (magic END), each slot holding the position and
  byte length of its items, then every slot's items in chain order (newest first), 28 bytes each
  (an item without its pointer).

A key is indexed under ``topic + "#" + key`` (its UNIQ_KEY and each key of KEYS), in the slot
``abs(hashCode) % hashSlotNum``; an item's time is whole seconds after the file's begin timestamp.

>>> geometry = TieredIndexGeometry(hash_slot_num=4, index_num=8)
>>> geometry.file_size, HEADER.size, ITEM.size, COMPACT_ITEM.size
(316, 28, 32, 28)
"""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import CorruptIndexError, FormatError, GeometryError, TruncatedFileError
from rmqlab.formats.layout import Layout
from rmqlab.jvm.hashcode import java_hash
from rmqlab.jvm.longs import wrap_int

__all__ = ["HEADER", "SLOT", "ITEM", "COMPACT_ITEM", "BEGIN_MAGIC_CODE", "END_MAGIC_CODE", "TieredIndexGeometry",
           "TieredIndexFile", "tiered_index_hash", "FOLDER", "COMPACTING", "MAX_QUERY_COUNT", "index_files",
           "query_service", "write_local_file", "infer_local_geometry", "TieredMetadata", "read_tiered_metadata",
           "METADATA_FILE", "LEGACY_FILE_NAMES", "SEGMENT_DELETED"]


#: IndexStoreFile's magic codes: the int 0xCCDDEEFF ^ (1880681586 + 4 / + 8) (`+` binds first)
BEGIN_MAGIC_CODE = wrap_int(0xCCDDEEFF ^ (1880681586 + 4))
END_MAGIC_CODE = wrap_int(0xCCDDEEFF ^ (1880681586 + 8))
#: IndexStoreService.FILE_DIRECTORY_NAME and FILE_COMPACTED_DIRECTORY_NAME
FOLDER, COMPACTING = "tiered_index_file", "compacting"
#: queryAsyncFromUnsealedFile reads at most this many items of a chain
MAX_QUERY_COUNT = 512
#: queryAsyncFromSegmentFile reads at most this many bytes of a slot's items
MAX_SEGMENT_READ = 28 * 1024

HEADER = Layout("IndexStoreFileHeader", [
    ("magic", "i", "BEGIN_MAGIC_CODE while items fit, END_MAGIC_CODE when full or compacted"),
    ("begin_timestamp", "q", "the file's timestamp (its name): item times count from it"),
    ("end_timestamp", "q", "the newest item's store time"),
    ("slot_count", "i", "slots holding a chain"),
    ("item_count", "i", "items written (numbered 1..item_count)"),
])
SLOT = Layout("IndexStoreFileSlot", [
    ("value", "i", "local form: the newest item's index (0: empty); compacted form: its items' position"),
    ("length", "i", "compacted form: the byte length of its items (unused in the local form)"),
])
_ITEM_FIELDS = [
    ("hash_code", "i", "abs(hashCode(topic + '#' + key))"),
    ("topic_id", "i", "the topic's id in the tiered store's metadata"),
    ("queue_id", "i", "the message's queue"),
    ("offset", "q", "the message's CommitLog offset (DispatchRequest.getCommitLogOffset)"),
    ("size", "i", "the message's size"),
    ("time_diff", "i", "(storeTimestamp - beginTimestamp) / 1000, Java long division"),
]
ITEM = Layout("IndexItem", [*_ITEM_FIELDS, ("item_index", "i", "the slot's previous item (0: the chain ends)")])
COMPACT_ITEM = Layout("CompactIndexItem", _ITEM_FIELDS)   # an item without its pointer


def tiered_index_hash(topic: str, key: str) -> int:
    """IndexStoreFile.hashCode(buildKey(topic, key)): abs of the Java String hash of
    ``topic#key`` (Integer.MIN_VALUE stays negative, as Java's negation leaves it).

    >>> tiered_index_hash("TopicTest", "k1") == abs(java_hash("TopicTest#k1"))
    True
    """
    h = java_hash(f"{topic}#{key}")
    return h if h == -(1 << 31) else abs(h)


@dataclass(frozen=True)
class TieredIndexGeometry:
    """tieredStoreIndexFileMaxHashSlotNum and tieredStoreIndexFileMaxIndexNum."""

    hash_slot_num: int = 5_000_000
    index_num: int = 20_000_000

    @property
    def file_size(self) -> int:
        """The local file's size: getItemPosition(indexNum)."""
        return HEADER.size + self.hash_slot_num * SLOT.size + self.index_num * ITEM.size

    @property
    def items_at(self) -> int:
        return HEADER.size + self.hash_slot_num * SLOT.size


class TieredIndexFile:
    """One tiered index file, local or compacted, read-only over a map. A context manager.

    `form` is "local" (unsealed or sealed: chains through item pointers) or "compacted" (each
    slot's items stored together). Open with :meth:`open`; ask :meth:`query` as the broker does,
    :meth:`items` for every item, :meth:`compacted_bytes` for ``doCompaction``'s result and
    :meth:`check` for what the broker's rules exclude.
    """

    def __init__(self, path: Path, data: Any, form: str, geometry: TieredIndexGeometry, mm: mmap.mmap | None):
        self.path, self.form, self.geometry = path, form, geometry
        self._data, self._mm = data, mm
        h = HEADER.unpack_from(data, 0)
        self.magic, self.begin_timestamp, self.end_timestamp = h.magic, h.begin_timestamp, h.end_timestamp
        self.slot_count, self.item_count = h.slot_count, h.item_count
        n = geometry.hash_slot_num
        self.slots = np.frombuffer(data, dtype=SLOT.dtype, count=n, offset=HEADER.size)
        if form == "local":
            self.item_array = np.frombuffer(data, dtype=ITEM.dtype, count=geometry.index_num, offset=geometry.items_at)
        else:
            count = (len(data) - geometry.items_at) // COMPACT_ITEM.size
            self.item_array = np.frombuffer(data, dtype=COMPACT_ITEM.dtype, count=count, offset=geometry.items_at)

    @classmethod
    def open(cls, path: str | os.PathLike, *, hash_slot_num: int | None = None, index_num: int | None = None,
             form: str | None = None) -> TieredIndexFile:
        """Map `path`. `form` None: "compacted" for a file under ``compacting/`` or whose size is
        not a local file's, else "local". A local file takes `hash_slot_num` or `index_num` (the
        other follows from the size; neither: the defaults where they fit, else
        :func:`infer_local_geometry`); a compacted one's slot
        number follows from its size and the item count in its header.
        Raises GeometryError / TruncatedFileError naming the file for sizes that do not fit."""
        p = Path(path)
        size = p.stat().st_size
        if size < HEADER.size:
            raise TruncatedFileError(f"file is {size} bytes, shorter than the {HEADER.size}-byte header",
                                     path=p, offset=size, field="header")
        with open(p, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            head = HEADER.unpack_from(mm, 0)
            if form is None:
                form = "compacted" if p.parent.name == COMPACTING or head.magic == END_MAGIC_CODE and \
                    not _fits_local(size, hash_slot_num, index_num) else "local"
            geometry = _geometry(p, size, form, head.item_count, hash_slot_num, index_num)
            return cls(p, mm, form, geometry, mm)
        except BaseException:
            mm.close()
            raise

    def close(self) -> None:
        self.slots = self.item_array = None  # type: ignore[assignment]
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:   # a caller still holds a view: let the GC close it
                pass
            self._mm = None

    def __enter__(self) -> TieredIndexFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- queries ------------------------------------------------------------------------------

    def query(self, topic: str, key: str, max_count: int, begin: int, end: int, *,
              broker_version: str | None = None) -> pd.DataFrame:
        """``queryAsync`` of this file: the items of `key` stored in [begin, end] (ms). Local form
        (``queryAsyncFromUnsealedFile``): the slot's chain from its newest item, at most
        MAX_QUERY_COUNT items read, stopping once more than `max_count` matched (so up to
        `max_count` + 1); compacted form (``queryAsyncFromSegmentFile``): the slot's items, at
        most MAX_SEGMENT_READ bytes, up to `max_count`. `broker_version` picks the release's
        time filter (:attr:`rmqlab.rules.versions.LayoutFacts.tiered_index_local_time_filter`
        and ``tiered_index_time_diff_ms``; None: 5.3.3's). Columns: topic_id, queue_id, offset,
        size, time_diff, hash_code, store_timestamp (ms). Cost: one chain walk.

        >>> import tempfile
        >>> from rmqlab.formats.tieredindex import write_local_file
        >>> p = write_local_file(Path(tempfile.mkdtemp()) / "1000", TieredIndexGeometry(4, 8), 1000,
        ...                      [("T", 1, 0, ["k"], 64, 100, 3000)])
        >>> got = TieredIndexFile.open(p, hash_slot_num=4).query("T", "k", 32, 0, 10**13)
        >>> got[["offset", "store_timestamp"]].values.tolist()
        [[64, 3000]]
        """
        from rmqlab.rules.versions import layout_facts

        facts = layout_facts(broker_version)
        unit = facts.tiered_index_time_diff_ms
        h = tiered_index_hash(topic, key)
        slot = h % self.geometry.hash_slot_num if h >= 0 else -1
        rows: list[int] = []
        if slot < 0:
            return self._frame(rows)
        if self.form == "local":
            at = max(int(self.slots["value"][slot]), 0)
            left = MAX_QUERY_COUNT
            while left > 0 and 0 < at <= self.item_count and at < self.geometry.index_num:
                item = self.item_array[at]
                t = int(item["time_diff"]) * unit + self.begin_timestamp
                if int(item["hash_code"]) == h and (begin <= t <= end or not facts.tiered_index_local_time_filter):
                    rows.append(at)
                    if len(rows) > max_count:
                        break
                at = int(item["item_index"])
                left -= 1
        else:
            pos, length = int(self.slots["value"][slot]), min(int(self.slots["length"][slot]), MAX_SEGMENT_READ)
            if pos > 0 and length > 0 and length % COMPACT_ITEM.size == 0:
                first = (pos - self.geometry.items_at) // COMPACT_ITEM.size
                for i in range(first, first + length // COMPACT_ITEM.size):
                    if not 0 <= i < len(self.item_array):
                        break
                    item = self.item_array[i]
                    t = int(item["time_diff"]) * unit + self.begin_timestamp
                    if int(item["hash_code"]) == h and begin <= t <= end and len(rows) < max_count:
                        rows.append(i)
        return self._frame(rows)

    @staticmethod
    def _empty() -> pd.DataFrame:
        return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in _QUERY_COLUMNS})

    def _frame(self, rows: list[int]) -> pd.DataFrame:
        items = self.item_array[np.asarray(rows, dtype=np.int64)] if rows else self.item_array[:0]
        out = pd.DataFrame({c: items[c].astype(np.int64) for c in ("topic_id", "queue_id", "offset", "size",
                                                                    "time_diff", "hash_code")})
        out["store_timestamp"] = out["time_diff"] * 1000 + self.begin_timestamp
        return out

    def items(self) -> pd.DataFrame:
        """Every item written, one row each (local form: items 1..item_count, with ``index`` and
        ``prev``; compacted: in stored order). Cost: one NumPy pass."""
        # a negative itemCount (a damaged header) holds no item, not a slice counted from the end
        written = max(min(self.item_count, self.geometry.index_num - 1), 0)
        arr = self.item_array[1:written + 1] if self.form == "local" else self.item_array
        out = pd.DataFrame({f.name: arr[f.name].astype(np.int64) for f in
                            (ITEM if self.form == "local" else COMPACT_ITEM).fields})
        if self.form == "local":
            out.insert(0, "index", np.arange(1, len(out) + 1))
        out["store_timestamp"] = out["time_diff"] * 1000 + self.begin_timestamp
        return out

    def compacted_bytes(self) -> bytes:
        """``compactToNewFile`` of a local file: the compacted form, up to its last item (the
        buffer doCompaction uploads). Cost: one walk of every chain."""
        if self.form != "local":
            raise ValueError(f"{self.path}: already compacted")
        g = self.geometry
        n_items = self.item_count
        if not 0 <= n_items < g.index_num:   # compactToNewFile would size its file by it
            raise CorruptIndexError(f"item_count {n_items} is outside 0..{g.index_num - 1}: no compaction "
                                    f"sized by it", path=self.path, offset=24, field="item_count")
        out = bytearray(g.items_at + COMPACT_ITEM.size * n_items)
        limit = len(out)
        write = g.items_at
        values = np.maximum(self.slots["value"].astype(np.int64), 0)
        raw = self.item_array
        for s in range(g.hash_slot_num):
            at, start = int(values[s]), write
            while at > 0 and write < limit:
                if at >= g.index_num:
                    raise CorruptIndexError(f"slot[{s}]'s chain points at item {at}, past the file's "
                                            f"{g.index_num} items", path=self.path, offset=HEADER.size + s * SLOT.size,
                                            field=f"slot[{s}]")
                out[write:write + COMPACT_ITEM.size] = raw[at].tobytes()[:COMPACT_ITEM.size]
                at = int(raw[at]["item_index"])
                write += COMPACT_ITEM.size
            SLOT.pack_into(out, HEADER.size + s * SLOT.size, start, write - start)
        HEADER.pack_into(out, 0, END_MAGIC_CODE, self.begin_timestamp, self.end_timestamp, self.slot_count, n_items)
        return bytes(out[:write])

    def check(self) -> list[FormatError]:
        """What the broker's rules exclude, each a typed error naming the file, offset and field:
        a magic that is neither code, counts past the geometry, a slot pointing past the items
        written, an item in a chain whose hash is not its slot's, a chain that does not step
        back (a cycle: an item's pointer not below its own index). Cost: one NumPy pass."""
        out: list[FormatError] = []
        if self.magic not in (BEGIN_MAGIC_CODE, END_MAGIC_CODE):
            out.append(FormatError(f"magic {self.magic} is neither BEGIN ({BEGIN_MAGIC_CODE}) nor END "
                                   f"({END_MAGIC_CODE})", path=self.path, offset=0, field="magic"))
        g = self.geometry
        if self.form == "local":
            if not 0 <= self.item_count < g.index_num:
                out.append(FormatError(f"item_count {self.item_count} is outside 0..{g.index_num - 1}",
                                       path=self.path, offset=24, field="item_count"))
                return out
            v = self.slots["value"].astype(np.int64)
            bad = np.flatnonzero(v > self.item_count)
            if len(bad):
                s = int(bad[0])
                out.append(CorruptIndexError(f"slot[{s}] points at item {int(v[s])}, past the {self.item_count} "
                                             f"items written ({len(bad)} such)", path=self.path,
                                             offset=HEADER.size + s * SLOT.size, field=f"slot[{s}]"))
            items = self.item_array[1:self.item_count + 1]
            idx = np.arange(1, self.item_count + 1)
            prev = items["item_index"].astype(np.int64)
            back = np.flatnonzero((prev < 0) | (prev >= idx))
            if len(back):
                i = int(idx[back[0]])
                out.append(CorruptIndexError(f"item {i} points at item {int(prev[back[0]])}, not an earlier one "
                                             f"({len(back)} such)", path=self.path,
                                             offset=g.items_at + i * ITEM.size + 28, field=f"item[{i}].item_index"))
            h = items["hash_code"].astype(np.int64)
            slot_of = np.where(h >= 0, h % g.hash_slot_num, -1)
            # each item is in the chain of the slot its hash names: walk the chains from the slots
            owner = np.full(self.item_count + 1, -1, dtype=np.int64)
            for head in np.flatnonzero(v > 0):
                s = int(head)
                at, steps = int(v[s]), 0
                while 0 < at <= self.item_count and owner[at] == -1 and steps <= self.item_count:
                    owner[at] = s
                    at = int(self.item_array[at]["item_index"])
                    steps += 1
            wrong = np.flatnonzero((owner[1:] >= 0) & (owner[1:] != slot_of))
            if len(wrong):
                i = int(wrong[0]) + 1
                out.append(CorruptIndexError(f"item {i} (hash {int(h[i - 1])}) is in slot[{int(owner[i])}]'s chain, "
                                             f"not slot[{int(slot_of[i - 1])}]'s ({len(wrong)} such)",
                                             path=self.path, offset=g.items_at + i * ITEM.size, field=f"item[{i}]"))
        else:
            pos, length = self.slots["value"].astype(np.int64), self.slots["length"].astype(np.int64)
            end = g.items_at + COMPACT_ITEM.size * len(self.item_array)
            bad = np.flatnonzero((length < 0) | (length % COMPACT_ITEM.size != 0)
                                 | ((length > 0) & ((pos < g.items_at) | (pos + length > end))))
            if len(bad):
                s = int(bad[0])
                out.append(CorruptIndexError(f"slot[{s}] says {int(length[s])} bytes at {int(pos[s])}, not whole "
                                             f"items inside {g.items_at}..{end} ({len(bad)} such)", path=self.path,
                                             offset=HEADER.size + s * SLOT.size, field=f"slot[{s}]"))
        return out


def _fits_local(size: int, hash_slot_num: int | None, index_num: int | None) -> bool:
    rest = size - HEADER.size
    if hash_slot_num is not None:
        return rest - hash_slot_num * SLOT.size > 0 and (rest - hash_slot_num * SLOT.size) % ITEM.size == 0
    if index_num is not None:
        return rest - index_num * ITEM.size > 0 and (rest - index_num * ITEM.size) % SLOT.size == 0
    return size == TieredIndexGeometry().file_size


def infer_local_geometry(path: str | os.PathLike, size: int | None = None,
                         item_count: int | None = None) -> TieredIndexGeometry | None:
    """The geometry of a local index file written with other than the default
    tieredStoreIndexFileMaxHashSlotNum / MaxIndexNum, as its own bytes tell it: every split of
    its size into a header, whole slots and whole items is a candidate. putKey leaves the newest
    item (number ``item_count``, whose message size is above 0) at the head of the chain of slot
    ``hash % slots``, which the candidates are first sifted by; under the geometry every item is where its slot's chain
    says (each slot's head is its newest item, each item points at the one before it in its
    slot), which the few left are then checked by. The one candidate that passes is the
    geometry; None where no item was put, or none or several pass. Reads only. Cost: one read
    of an int and of a slot a candidate, O(file size / 32) candidates, then O(items) for each of
    the few left: NumPy over a read-only map.

    >>> import tempfile
    >>> g = TieredIndexGeometry(hash_slot_num=7, index_num=40)
    >>> p = write_local_file(Path(tempfile.mkdtemp()) / "1", g, 1000, [("T", 1, 0, ["a", "b", "c"], 0, 9, 1000)])
    >>> infer_local_geometry(p) == g
    True
    """
    p = Path(path)
    size = p.stat().st_size if size is None else size
    with open(p, "rb") as fh:
        if item_count is None:
            item_count = HEADER.unpack_from(fh.read(HEADER.size), 0).item_count
        rest = size - HEADER.size
        if item_count <= 0 or rest <= 0 or rest % SLOT.size:
            return None
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        data = np.frombuffer(mm, dtype=np.uint8)
        # slots S and items N with 8 S + 32 N = rest, N > item_count (item 0's place is never written)
        n = np.arange(item_count + 1, rest // ITEM.size + 1, dtype=np.int64)
        slots = (rest - n * ITEM.size) // SLOT.size
        n, slots = n[slots > 0], slots[slots > 0]
        newest = HEADER.size + slots * SLOT.size + item_count * ITEM.size

        hashes = _ints_at(data, newest)
        # an item put holds its message's size (> 0): a candidate reading zeros there is sifted out
        ok = (hashes >= 0) & (_ints_at(data, newest + ITEM.offset("size")) > 0)
        slot_of = np.where(ok, hashes, 0) % slots
        ok &= _ints_at(data, HEADER.size + slot_of * SLOT.size) == item_count
        left = np.flatnonzero(ok)[:_MAX_GEOMETRY_CANDIDATES + 1]
        found = [int(i) for i in left if len(left) <= _MAX_GEOMETRY_CANDIDATES
                 and _chains_hold(mm, int(slots[i]), item_count)]
        del data
    finally:
        mm.close()
    if len(found) != 1:
        return None
    return TieredIndexGeometry(int(slots[found[0]]), int(n[found[0]]))


def _ints_at(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The big-endian int32 at each byte position `at` of `data` (bytes), as int64."""
    b = data[at[:, None] + np.arange(4)].astype(np.int64)
    v = (b[:, 0] << 24) | (b[:, 1] << 16) | (b[:, 2] << 8) | b[:, 3]
    return np.where(v >= 1 << 31, v - (1 << 32), v)


#: candidates left after the first sifting that :func:`infer_local_geometry` checks in full
_MAX_GEOMETRY_CANDIDATES = 64


def _chains_hold(data: Any, slot_num: int, item_count: int) -> bool:
    """Whether items 1..`item_count` of a local file of `slot_num` slots are chained as putKey
    chains them: each slot's head its newest item, each item pointing at its slot's previous."""
    items = np.frombuffer(data, dtype=ITEM.dtype, count=item_count, offset=HEADER.size + slot_num * SLOT.size
                          + ITEM.size)
    heads = np.frombuffer(data, dtype=SLOT.dtype, count=slot_num, offset=HEADER.size)["value"].astype(np.int64)
    hashes = items["hash_code"].astype(np.int64)
    if (hashes < 0).any():
        return False
    slot = hashes % slot_num
    order = np.argsort(slot, kind="stable")           # each slot's items, oldest first
    number = order + 1                                # item numbers, from 1
    same = np.concatenate([[False], slot[order][1:] == slot[order][:-1]])
    prev = np.where(same, np.concatenate([[0], number[:-1]]), 0)
    if not (items["item_index"].astype(np.int64)[order] == prev).all():
        return False
    newest = np.zeros(slot_num, np.int64)
    np.maximum.at(newest, slot, np.arange(1, item_count + 1))
    return bool((np.maximum(heads, 0) == newest).all())


def _geometry(p: Path, size: int, form: str, item_count: int, hash_slot_num: int | None,
              index_num: int | None) -> TieredIndexGeometry:
    rest = size - HEADER.size
    if form == "compacted":
        slots_bytes = rest - COMPACT_ITEM.size * max(item_count, 0)
        if hash_slot_num is None:
            if slots_bytes <= 0 or slots_bytes % SLOT.size:
                raise GeometryError(f"file is {size} bytes: not a compacted file of {item_count} items (the "
                                    f"header's item_count) after whole slots; pass hash_slot_num",
                                    path=p, offset=24, field="item_count")
            hash_slot_num = slots_bytes // SLOT.size
        if HEADER.size + hash_slot_num * SLOT.size > size:
            raise TruncatedFileError(f"file is {size} bytes but {hash_slot_num} slots need "
                                     f"{HEADER.size + hash_slot_num * SLOT.size}", path=p, offset=size, field="slots")
        return TieredIndexGeometry(hash_slot_num, max(item_count, 0))
    if hash_slot_num is None and index_num is None:
        default = TieredIndexGeometry()
        if size == default.file_size:
            return default
        inferred = infer_local_geometry(p, size, item_count)
        if inferred is None:
            raise GeometryError(f"file is {size} bytes, not the {default.file_size} of the default geometry "
                                f"(5,000,000 slots, 20,000,000 items), and its items do not tell another: pass "
                                f"hash_slot_num or index_num (tieredStoreIndexFileMaxHashSlotNum / MaxIndexNum)",
                                path=p, offset=size, field="file size")
        return inferred
    if hash_slot_num is not None:
        items = rest - hash_slot_num * SLOT.size
        if items <= 0 or items % ITEM.size:
            raise GeometryError(f"file is {size} bytes: {hash_slot_num} slots leave {items} bytes, not whole "
                                f"{ITEM.size}-byte items", path=p, offset=size, field="file size")
        geometry = TieredIndexGeometry(hash_slot_num, items // ITEM.size)
    else:
        assert index_num is not None
        slots = rest - index_num * ITEM.size
        if slots <= 0 or slots % SLOT.size:
            raise GeometryError(f"file is {size} bytes: {index_num} items leave {slots} bytes, not whole "
                                f"{SLOT.size}-byte slots", path=p, offset=size, field="file size")
        geometry = TieredIndexGeometry(slots // SLOT.size, index_num)
    if index_num is not None and geometry.index_num != index_num:
        raise GeometryError(f"file is {size} bytes but {geometry.hash_slot_num} slots and {index_num} items need "
                            f"{TieredIndexGeometry(geometry.hash_slot_num, index_num).file_size}",
                            path=p, offset=size, field="file size")
    return geometry


def write_local_file(path: str | os.PathLike, geometry: TieredIndexGeometry, begin_timestamp: int,
                     rows: list[tuple[str, int, int, list[str], int, int, int]]) -> Path:
    """A local tiered index file as ``IndexStoreFile.putKey`` writes it, for tests and
    examples: each row (topic, topic id, queue id, keys, offset, size, store timestamp) puts
    every key. Stops as putKey does once the next row's keys would not fit (the file is full).
    Cost: O(items)."""
    p = Path(path)
    buf = bytearray(geometry.file_size)
    count = slots_used = 0
    end = begin_timestamp
    for topic, topic_id, queue_id, keys, offset, size, ts in rows:
        keys = list(dict.fromkeys(k for k in keys if k))
        if not keys:
            continue
        if count + len(keys) >= geometry.index_num:
            break
        for key in keys:
            h = tiered_index_hash(topic, key)
            s = h % geometry.hash_slot_num
            at = HEADER.size + s * SLOT.size
            old = max(int.from_bytes(buf[at:at + 4], "big", signed=True), 0)
            diff = int((ts - begin_timestamp) / 1000)       # Java long division: toward zero
            count += 1
            ITEM.pack_into(buf, geometry.items_at + count * ITEM.size, h, topic_id, queue_id, offset, size, diff, old)
            buf[at:at + 4] = count.to_bytes(4, "big", signed=True)
            slots_used += old <= 0
            end = max(end, ts)
    magic = END_MAGIC_CODE if geometry.index_num == count + 1 else BEGIN_MAGIC_CODE
    HEADER.pack_into(buf, 0, magic, begin_timestamp, end, slots_used, count)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(bytes(buf))
    return p


#: the files 5.1's index (tieredstore ``file/TieredIndexFile``, rocketmq-all-5.1.4) keeps in the same
#: folder: the file being written, the previous one awaiting compaction, and the compaction's own.
#: Another layout (an empty slot is -1, items count from 0, an item's time is milliseconds after the
#: file's begin) that rmqlab does not read; 5.2's IndexStoreService renames the first two to their
#: begin timestamps at its start and reads them as its own files
LEGACY_FILE_NAMES = ("0000", "1111", "2222")


def index_files(folder: str | os.PathLike) -> list[Path]:
    """The local index files of a ``tiered_index_file/`` folder as IndexStoreService.recover
    loads them: the files whose names are numeric (their begin timestamps), in name order;
    ``compacting/``, other names and 5.1's files (:data:`LEGACY_FILE_NAMES`) are skipped
    (recover deletes ``compacting/``).

    >>> import tempfile
    >>> index_files(tempfile.mkdtemp())
    []
    """
    d = Path(folder)
    if not d.is_dir():
        return []
    return sorted((p for p in d.iterdir() if p.is_file() and p.name.isdigit() and p.name not in LEGACY_FILE_NAMES),
                  key=lambda p: p.name)


def query_service(files: list[TieredIndexFile], topic: str, key: str, max_count: int, begin: int,
                  end: int, *, broker_version: str | None = None) -> pd.DataFrame:
    """``IndexStoreService.queryAsync``: the files whose begin timestamp (their name) is in
    [begin, end] (``timeStoreTable.subMap``: a file begun before `begin` is not asked, whatever
    it holds), newest first, each asked :meth:`TieredIndexFile.query` (as `broker_version`'s
    release asks it); items kept by
    (queue id, offset), the first `max_count` such. Rows in the order found (the broker's own
    order is its hash map's). Cost: one query a file in range.

    >>> query_service([], "T", "k", 32, 0, 1).shape[0]
    0
    """
    if begin > end:
        return TieredIndexFile._empty()
    kept: dict[tuple[int, int], dict[str, Any]] = {}
    for f in sorted((f for f in files if begin <= f.begin_timestamp <= end), key=lambda f: f.begin_timestamp,
                    reverse=True):
        for row in f.query(topic, key, max_count, begin, end, broker_version=broker_version).to_dict("records"):
            k = (int(row["queue_id"]), int(row["offset"]))
            if len(kept) < max_count or k in kept:
                kept[k] = {**{str(c): v for c, v in row.items()}, "file_timestamp": f.begin_timestamp}
    return pd.DataFrame(list(kept.values()), columns=[*_QUERY_COLUMNS, "file_timestamp"])


_QUERY_COLUMNS = ("topic_id", "queue_id", "offset", "size", "time_diff", "hash_code", "store_timestamp")


#: DefaultMetadataStore's file: {storePathRootDir}/config/tieredStoreMetadata.json
METADATA_FILE = "tieredStoreMetadata.json"


#: FileSegmentMetadata.STATUS_DELETED: 5.1-5.2 mark an expired segment so before deleting its file,
#: and their TieredFlatFile.recoverMetadata loads no segment so marked (5.3+ never writes it)
SEGMENT_DELETED = 2


@dataclass(frozen=True)
class TieredMetadata:
    """``config/tieredStoreMetadata.json`` (DefaultMetadataStore, fastjson of
    TieredMetadataSerializeWrapper): the tiered store's topics with the ids its index items
    carry, and its file segments (``segments``: kind "commitlog", "consumequeue" or "index",
    path, base offset, size, status 0 new / 1 sealed / 2 deleted, begin and end timestamps)."""

    topic_ids: dict[str, int]
    segments: pd.DataFrame

    @property
    def loaded(self) -> pd.DataFrame:
        """The segments the broker loads: all but those marked deleted (:data:`SEGMENT_DELETED`)."""
        return self.segments[self.segments["status"] != SEGMENT_DELETED]

    def topic_of(self, topic_id: int) -> str | None:
        """The topic an index item's topic id names, None for an id the metadata lacks."""
        by_id = {v: k for k, v in self.topic_ids.items()}
        return by_id.get(int(topic_id))


_SEGMENT_TABLES = {"commitLogFileSegmentTable": "commitlog", "consumeQueueFileSegmentTable": "consumequeue",
                   "indexFileSegmentTable": "index"}


def read_tiered_metadata(path: str | os.PathLike) -> TieredMetadata:
    """Read ``tieredStoreMetadata.json`` as DefaultMetadataStore.decode does. Reads only.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / METADATA_FILE
    >>> _ = p.write_text('{"topicMetadataTable":{"T":{"topic":"T","topicId":3}},"indexFileSegmentTable":'
    ...                  '{"index":{0:{"path":"index","baseOffset":0,"size":56,"status":1,"type":2,'
    ...                  '"beginTimestamp":5,"endTimestamp":9}}}}')
    >>> m = read_tiered_metadata(p)
    >>> m.topic_ids, m.topic_of(3), m.segments[["kind", "size", "begin_timestamp"]].values.tolist()
    ({'T': 3}, 'T', [['index', 56, 5]])

    Raises FormatError naming the file and the JSON path of a value of the wrong kind.
    """
    from rmqlab.formats.storeconfig import parse_fastjson

    p = Path(path)
    doc = parse_fastjson(p.read_text(encoding="utf-8", errors="replace"), path=p) or {}
    if not isinstance(doc, dict):
        raise FormatError("not a JSON object", path=p, offset=0, field="")

    def num(v: Any, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise FormatError(f"{v!r} is not an integer", path=p, offset=None, field=where)
        return v

    topics = {}
    for name, t in (doc.get("topicMetadataTable") or {}).items():
        if not isinstance(t, dict):
            raise FormatError(f"{t!r} is not an object", path=p, offset=None, field=f"topicMetadataTable.{name}")
        topics[str(t.get("topic", name))] = num(t.get("topicId", 0), f"topicMetadataTable.{name}.topicId")
    rows = []
    for table, kind in _SEGMENT_TABLES.items():
        for seg_path, by_offset in (doc.get(table) or {}).items():
            for base, m in (by_offset or {}).items():
                where = f"{table}.{seg_path}.{base}"
                if not isinstance(m, dict):
                    raise FormatError(f"{m!r} is not an object", path=p, offset=None, field=where)
                rows.append({"kind": kind, "path": str(m.get("path", seg_path)),
                             "base_offset": num(m.get("baseOffset", int(base)), f"{where}.baseOffset"),
                             "size": num(m.get("size", 0), f"{where}.size"),
                             "status": num(m.get("status", 0), f"{where}.status"),
                             "begin_timestamp": num(m.get("beginTimestamp", 0), f"{where}.beginTimestamp"),
                             "end_timestamp": num(m.get("endTimestamp", 0), f"{where}.endTimestamp")})
    cols = ["kind", "path", "base_offset", "size", "status", "begin_timestamp", "end_timestamp"]
    return TieredMetadata(topics, pd.DataFrame(rows, columns=cols))
