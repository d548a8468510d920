"""The tiered store's segments on its file system (RIP-57: ``messageStorePlugIn=TieredMessageStore``
with ``tieredBackendServiceProvider=PosixFileSegment``): each queue's messages copied out of the
CommitLog into a CommitLog and a ConsumeQueue of the queue's own.

Mirrors the tieredstore module's ``provider/PosixFileSegment``, ``provider/FileSegment``,
``util/MessageStoreUtil``, ``util/MessageFormatUtil``, ``file/FlatAppendFile``,
``file/FlatMessageFile``, ``stream/CommitLogInputStream`` and ``core/MessageStoreDispatcherImpl``
(rocketmq-all-5.3.3, commit 29d90a4f; the same layout in the 5.5.0 jar). The classes of 5.1 and
5.2 (``file/TieredFlatFile``, ``file/CompositeQueueFlatFile``, ``provider/TieredFileSegment``,
``provider/posix/PosixFileSegment``, ``TieredDispatcher``; rocketmq-all-5.2.0) write the same
layout and metadata; they differ in what they load (:data:`SEGMENT_DELETED`) and in their index,
which they upload only once a newer index file follows. Under ``tieredStoreFilePath``::

    {md5(cluster)[:8]}_{cluster}/{broker}/{topic}/{queueId}/{type}/{md5(str(base))[:8]}{base:020d}

``type`` is ``COMMIT_LOG``, ``CONSUME_QUEUE`` or ``INDEX`` (FileSegmentType) and ``base`` the
segment's first byte offset in the queue's own byte space; segments of one queue and type follow
one another without a gap (a new one starts at the last one's append offset).

* **COMMIT_LOG**: the queue's messages as the CommitLog holds them, one after another from
  offset 0, except ``PHYSICALOFFSET``, which CommitLogInputStream rewrites to the message's
  offset in this tiered CommitLog. Nothing else is rewritten (the record's CRCs stay those of the
  CommitLog). A sealed segment may end in a 16-byte coda: size, the CommitLog's blank magic and
  the segment's last store timestamp (``COMMIT_LOG_CODA_SIZE``; the 5.3 writer passes none).
* **CONSUME_QUEUE**: 20-byte items, the CommitLog's unit (tiered CommitLog offset, size, tags
  code). The first segment's base is the queue offset the upload began at times 20 (the offset
  of the queue's messages stored from two minutes before the queue was first seen).
* **INDEX**: compacted index files (:mod:`rmqlab.formats.tieredindex`), in the queue
  ``rmq_sys_INDEX``/0 of the broker.

Each segment's size and time range is also kept in ``config/tieredStoreMetadata.json``
(:func:`rmqlab.formats.tieredindex.read_tiered_metadata`); a queue's segments are those the
metadata lists, the last one's size taken from its file (``FlatAppendFile.recoverFileSize``).
A queue's first offset is the larger of its first ConsumeQueue segment's and its first
message's QUEUEOFFSET (``getConsumeQueueMinOffset``).

>>> segment_name(0), cluster_folder("DefaultCluster")
('cfcd208400000000000000000000', '212d6b50_DefaultCluster')
>>> parse_segment_name("cfcd208400000000000000000000"), parse_segment_name("00000000000000000000")
(0, None)
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.formats.consumequeue import UNIT
from rmqlab.formats.layout import Layout
from rmqlab.formats.tieredindex import SEGMENT_DELETED

__all__ = ["KINDS", "CODA", "SEGMENT_DELETED", "TIERED_INDEX_TOPIC", "segment_name", "parse_segment_name",
           "cluster_folder", "list_segments", "TieredQueue", "tiered_queues", "index_segments", "write_queue"]

#: FileSegmentType folder name -> rmqlab's kind (the metadata's segment tables use the same kinds)
KINDS = {"COMMIT_LOG": "commitlog", "CONSUME_QUEUE": "consumequeue", "INDEX": "index"}
#: MessageStoreUtil.RMQ_SYS_TIERED_STORE_INDEX_TOPIC: the queue the index segments are kept under
TIERED_INDEX_TOPIC = "rmq_sys_INDEX"
#: MessageFormatUtil.COMMIT_LOG_CODA_SIZE: what may close a sealed CommitLog segment
CODA = Layout("TieredCommitLogCoda", [
    ("size", "i", "the coda's length, 16"),
    ("magic", "i", "BLANK_MAGIC_CODE, the CommitLog's blank magic (0xBBCCDDEE ^ 1880681586 + 8)"),
    ("max_store_timestamp", "q", "the segment's last store timestamp (ms)"),
])
#: the ConsumeQueue item of a tiered queue: the CommitLog's unit, its offset in the tiered CommitLog
ITEM = UNIT
_HASH_LEN, _DIGITS = 8, 20
#: an item's columns as :meth:`TieredQueue.messages` names them beside the message's own
_SERVED = {"queue_offset": "offset", "commitlog_offset": "tiered_offset", "size": "item_size",
           "tags_code": "tags_code"}


def _md5_prefix(text: str) -> str:
    # MessageStoreUtil.getHash / offset2FileName: the first 8 hex digits of the MD5 of the UTF-8 text
    return hashlib.md5(text.encode("utf-8")).hexdigest()[:_HASH_LEN]


def segment_name(base_offset: int) -> str:
    """A segment's file name (MessageStoreUtil.offset2FileName): 8 hex digits of the MD5 of the
    decimal offset, then the offset in 20 digits. Cost: one MD5 of 20 bytes."""
    return _md5_prefix(str(int(base_offset))) + f"{int(base_offset):0{_DIGITS}d}"


def parse_segment_name(name: str) -> int | None:
    """The base offset a segment file name carries (fileName2Offset reads its last 20 digits),
    None for a name of another form or whose hash is not the offset's."""
    if len(name) != _HASH_LEN + _DIGITS or not name[_HASH_LEN:].isdigit():
        return None
    base = int(name[_HASH_LEN:])
    return base if name == segment_name(base) else None


def cluster_folder(cluster: str) -> str:
    """The top folder of a cluster's segments (PosixFileSegment: ``{getHash(cluster)}_{cluster}``)."""
    return f"{_md5_prefix(cluster)}_{cluster}"


#: the columns a queue and kind of segments share (rows in order: a change starts another)
_QUEUE_KEY = ("cluster", "broker", "topic", "queue_id", "kind")
_SEGMENT_COLUMNS = ["cluster", "broker", "topic", "queue_id", "kind", "base_offset", "size", "name_ok", "path"]


def _subdirs(p: Path) -> list[os.DirEntry]:
    with os.scandir(p) as it:
        return sorted((e for e in it if e.is_dir(follow_symlinks=False)), key=lambda e: e.name)


def list_segments(root: str | os.PathLike) -> pd.DataFrame:
    """Every segment file under a tiered store's file system (``tieredStoreFilePath``), one row
    a file: cluster, broker, topic, queue_id, kind ("commitlog", "consumequeue", "index"),
    base_offset (from the name), size (bytes, from the file system), name_ok (the name is
    ``offset2FileName(base)`` and the cluster folder ``getHash(cluster)_cluster``), path.
    Sorted by queue, kind and base offset. Reads only names and sizes; cost: one directory
    listing a folder of the six levels.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> q = root / cluster_folder("C") / "b" / "T" / "0" / "CONSUME_QUEUE"
    >>> q.mkdir(parents=True)
    >>> _ = (q / segment_name(40)).write_bytes(bytes(20))
    >>> list_segments(root)[["topic", "queue_id", "kind", "base_offset", "size", "name_ok"]].values.tolist()
    [['T', 0, 'consumequeue', 40, 20, True]]

    A folder that is not one of the layout's (a file where a folder belongs, a queue id that is
    not a number, a type folder of another name) raises FormatError naming it.
    """
    return pd.DataFrame(_segment_rows(root), columns=_SEGMENT_COLUMNS)


def _segment_rows(root: str | os.PathLike) -> list[dict[str, Any]]:
    """:func:`list_segments`'s rows as dicts, sorted."""
    base = Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"{base}: no such folder (the tiered store's tieredStoreFilePath)")
    rows = []
    for c in _subdirs(base):
        cluster = c.name.partition("_")[2]
        cluster_ok = c.name == cluster_folder(cluster)
        for b in _subdirs(Path(c.path)):
            for t in _subdirs(Path(b.path)):
                for q in _subdirs(Path(t.path)):
                    if not q.name.lstrip("-").isdigit():
                        raise FormatError("a queue folder's name is not a queue id", path=q.path, offset=None,
                                          field="queueId")
                    for k in _subdirs(Path(q.path)):
                        if k.name not in KINDS:
                            raise FormatError(f"not a FileSegmentType folder (one of {sorted(KINDS)})",
                                              path=k.path, offset=None, field="fileType")
                        with os.scandir(k.path) as files:
                            for f in files:
                                if not f.is_file(follow_symlinks=False):
                                    raise FormatError("not a segment file", path=f.path, offset=None,
                                                      field="baseOffset")
                                parsed = parse_segment_name(f.name)
                                digits = f.name[-_DIGITS:]
                                rows.append({"cluster": cluster, "broker": b.name, "topic": t.name,
                                             "queue_id": int(q.name), "kind": KINDS[k.name],
                                             "base_offset": int(digits) if digits.isdigit() else -1,
                                             "size": f.stat(follow_symlinks=False).st_size,
                                             "name_ok": cluster_ok and parsed is not None, "path": f.path})
    rows.sort(key=lambda r: (r["cluster"], r["broker"], r["topic"], r["queue_id"], r["kind"], r["base_offset"]))
    return rows


@dataclass(frozen=True)
class _Segments:
    """One kind of a queue's segments, in base offset order: paths, base offsets, sizes."""

    paths: tuple[str, ...]
    bases: np.ndarray
    sizes: np.ndarray


@dataclass(frozen=True)
class TieredQueue:
    """One queue of the tiered store: its CommitLog and ConsumeQueue segments (rows of
    :func:`list_segments`, with the size the broker uses: the metadata's, the last one's from
    its file) and what FlatMessageFile derives from them.

    >>> import tempfile
    >>> TieredQueue("T", 0, pd.DataFrame(columns=_SEGMENT_COLUMNS)).min_offset
    0
    """

    topic: str
    queue_id: int
    segments: pd.DataFrame

    @cached_property
    def _parts(self) -> dict[str, _Segments]:
        seg = self.segments
        kinds, paths = seg["kind"].tolist(), seg["path"].tolist()
        bases, sizes = seg["base_offset"].to_numpy(np.int64), seg["size"].to_numpy(np.int64)
        out = {}
        for kind in ("commitlog", "consumequeue"):
            rows = [i for i, k in enumerate(kinds) if k == kind]
            out[kind] = _Segments(tuple(str(paths[i]) for i in rows), bases[rows], sizes[rows])
        return out

    @property
    def commit_offset(self) -> int:
        """The end of the uploaded ConsumeQueue as a queue offset (getConsumeQueueCommitOffset)."""
        cq = self._parts["consumequeue"]
        return int(cq.bases[-1] + cq.sizes[-1]) // ITEM.size if len(cq.paths) else 0

    @cached_property
    def min_offset(self) -> int:
        """The queue's first offset the tiered store serves (getConsumeQueueMinOffset): the larger
        of the first ConsumeQueue segment's and the first message's QUEUEOFFSET."""
        cq, cl = self._parts["consumequeue"], self._parts["commitlog"]
        first = int(cq.bases[0]) // ITEM.size if len(cq.paths) else 0
        if not len(cl.paths) or int(cl.sizes[0]) < 28:
            return first
        with open(cl.paths[0], "rb") as fh:
            head = fh.read(28)
        return max(first, int.from_bytes(head[20:28], "big", signed=True)) if len(head) == 28 else first

    def items(self) -> pd.DataFrame:
        """The ConsumeQueue items from :attr:`min_offset` to :attr:`commit_offset`: queue_offset,
        commitlog_offset (in the tiered CommitLog), size, tags_code. Cost: one read of each
        ConsumeQueue segment (20 bytes an item), no Python loop over items.

        Raises TruncatedFileError naming the segment when a file is shorter than its size.
        """
        cq = self._parts["consumequeue"]
        raws, firsts = [], []
        for path, base, size in zip(cq.paths, cq.bases.tolist(), cq.sizes.tolist()):
            raws.append(_read_exact(path, int(size))[:int(size) // ITEM.size * ITEM.size])
            firsts.append(np.arange(int(size) // ITEM.size, dtype=np.int64) + int(base) // ITEM.size)
        a = np.frombuffer(b"".join(raws), ITEM.dtype)
        offsets = np.concatenate(firsts) if firsts else np.empty(0, np.int64)
        keep = offsets >= self.min_offset
        return pd.DataFrame({"queue_offset": offsets[keep],
                             **{f.name: a[f.name][keep].astype(np.int64) for f in ITEM.fields}})

    def commitlog_segment_at(self, offsets: np.ndarray) -> np.ndarray:
        """The index (of the CommitLog segments) each tiered CommitLog offset falls in, -1 where none."""
        cl = self._parts["commitlog"]
        starts, ends = cl.bases, cl.bases + cl.sizes
        i = np.searchsorted(starts, offsets, side="right") - 1
        inside = (i >= 0) & (offsets < ends[np.maximum(i, 0)]) if len(starts) else np.zeros(len(offsets), bool)
        return np.where(inside, i, -1)

    def messages(self, *, body: bool = True) -> pd.DataFrame:
        """The queue's messages as the tiered store serves them (getMessageAsync): one row an
        item of :meth:`items`: ``offset`` (the queue offset served), ``tiered_offset`` and
        ``item_size`` (where the item points in the tiered CommitLog), ``tags_code``, then the
        message's :data:`rmqlab.formats.commitlog.COLUMNS` (``phy_offset`` is the rewritten
        PHYSICALOFFSET; ``queue_offset`` the record's QUEUEOFFSET, an inner batch's first offset
        on every offset it covers). Cost: :meth:`items`, then one map of each CommitLog segment and the
        decode of the records the items point at.

        Raises FormatError / TruncatedFileError naming the segment, the position and the field
        where an item points at no message record.
        """
        from rmqlab.formats.commitlog import read_at_columns

        items = self.items()
        offs = items["commitlog_offset"].to_numpy(np.int64)
        seg = self.commitlog_segment_at(offs)
        cl = self._parts["commitlog"]
        if (seg < 0).any():
            k = int(np.argmax(seg < 0))
            raise FormatError(f"item of queue offset {int(items['queue_offset'].iloc[k])} points at tiered "
                              f"CommitLog offset {int(offs[k])}, in no CommitLog segment",
                              path=self._cq_path_of(int(items["queue_offset"].iloc[k])), offset=None,
                              field="commitlog_offset")
        parts = []
        for s in np.unique(seg).tolist():
            rows = np.flatnonzero(seg == s)
            base, path = int(cl.bases[s]), cl.paths[s]
            cols = read_at_columns(path, offs[rows] - base, body=body)
            served = {name: items[c].to_numpy()[rows] for c, name in _SERVED.items()}
            parts.append(pd.DataFrame({**served, **cols}, index=rows))
        if not parts:
            return items.rename(columns=_SERVED)
        return pd.concat(parts).sort_index()

    def _cq_path_of(self, queue_offset: int) -> str | None:
        cq = self._parts["consumequeue"]
        i = int(np.searchsorted(cq.bases, queue_offset * ITEM.size, side="right")) - 1
        return cq.paths[i] if i >= 0 else None


def _read_exact(path: str, size: int) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read(size)
    if len(raw) < size:
        raise TruncatedFileError(f"the segment holds {len(raw)} bytes, its metadata {size}", path=path,
                                 offset=len(raw), field="size")
    return raw


def tiered_queues(root: str | os.PathLike, metadata: Any = None, *, cluster: str | None = None,
                  broker: str | None = None) -> list[TieredQueue]:
    """The queues of a tiered store's file system (``tieredStoreFilePath``) as FlatFileStore
    loads them: with `metadata` (:class:`rmqlab.formats.tieredindex.TieredMetadata`), the
    segments it lists, each sized as it says but the last of a queue and type, sized by its file
    (recoverFileSize); without it, every segment file, sized by its file. `cluster` / `broker`
    keep one cluster's or broker's (the metadata has no cluster or broker names: a file system
    holding several needs them). A segment the metadata marks deleted (:data:`SEGMENT_DELETED`) is
    left out, as are index segments. Cost: :func:`list_segments`.

    >>> import tempfile
    >>> tiered_queues(tempfile.mkdtemp())
    []
    """
    rows = [r for r in _segment_rows(root) if r["kind"] != "index" and (cluster is None or r["cluster"] == cluster)
            and (broker is None or r["broker"] == broker)]
    if metadata is not None and not metadata.segments.empty:
        listed = metadata.loaded.set_index(["kind", "path", "base_offset"])["size"].to_dict()
        kept = []
        for r in rows:
            size = listed.get((r["kind"], f"{r['broker']}/{r['topic']}/{r['queue_id']}", r["base_offset"]))
            if size is not None:
                kept.append({**r, "file_size": r["size"], "meta_size": int(size)})
        for i, r in enumerate(kept):   # the last of a queue and kind: its file's size (recoverFileSize)
            nxt = kept[i + 1] if i + 1 < len(kept) else None
            last = nxt is None or [nxt[k] for k in _QUEUE_KEY] != [r[k] for k in _QUEUE_KEY]
            r["size"] = r["file_size"] if last else r["meta_size"]
        rows = kept
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["topic"], r["queue_id"]), []).append(r)
    cols = [*_SEGMENT_COLUMNS, *(["file_size", "meta_size"] if rows and "file_size" in rows[0] else [])]
    return [TieredQueue(t, q, pd.DataFrame(g, columns=cols)) for (t, q), g in sorted(groups.items())]


def index_segments(root: str | os.PathLike, metadata: Any = None, *, broker: str | None = None) -> list[Path]:
    """The compacted index files uploaded to the file system (queue ``rmq_sys_INDEX``/0 of each
    broker, or of `broker`), in base offset order: with `metadata`, those it lists (the broker
    loads no other), else every one. Cost: :func:`list_segments`.

    >>> import tempfile
    >>> index_segments(tempfile.mkdtemp())
    []
    """
    segs = list_segments(root)
    segs = segs[(segs["kind"] == "index") & (segs["topic"] == TIERED_INDEX_TOPIC)]
    if broker is not None:
        segs = segs[segs["broker"] == broker]
    if metadata is not None:
        listed = {(p, int(b)) for k, p, b in metadata.loaded[["kind", "path", "base_offset"]].itertuples(index=False)
                  if k == "index"}
        keep = [(f"{b}/{t}/{q}", int(o)) in listed for b, t, q, o in
                segs[["broker", "topic", "queue_id", "base_offset"]].itertuples(index=False)]
        segs = segs[np.array(keep, dtype=bool)]   # a plain list of none would select no columns
    return [Path(p) for p in segs["path"]]


def write_queue(root: str | os.PathLike, *, cluster: str, broker: str, topic: str, queue_id: int,
                records: list[bytes], tags_codes: list[int] | None = None, first_offset: int = 0,
                commitlog_rolls: tuple[int, ...] = (), consumequeue_rolls: tuple[int, ...] = ()) -> pd.DataFrame:
    """Write one queue's segments as the dispatcher uploads them: `records` (CommitLog message
    records, one a queue offset from `first_offset`) one after another into the tiered
    CommitLog with PHYSICALOFFSET rewritten to each record's offset there (CommitLogInputStream),
    and one ConsumeQueue item each (that offset, the record's size, its tags code: `tags_codes`,
    else 0). A new segment starts before the records whose indexes `commitlog_rolls` /
    `consumequeue_rolls` name (FlatAppendFile rolls at its append offset). Returns the segments
    written as the metadata lists them (kind, path, base_offset, size): what
    ``tieredStoreMetadata.json`` would hold. Cost: O(bytes written).

    >>> import tempfile
    >>> from rmqlab.formats.commitlog import encode_message
    >>> root = tempfile.mkdtemp()
    >>> recs = [encode_message(topic="T", body=b"x" * i, queue_offset=5 + i) for i in range(3)]
    >>> _ = write_queue(root, cluster="C", broker="b", topic="T", queue_id=0, records=recs, first_offset=5,
    ...                 commitlog_rolls=(2,))
    >>> q, = tiered_queues(root)
    >>> q.min_offset, q.commit_offset, q.items()["commitlog_offset"].tolist()
    (5, 8, [0, 92, 185])
    """
    from rmqlab.formats.commitlog import HEAD

    phy_at = HEAD.offset("phy_offset")
    folder = Path(root) / cluster_folder(cluster) / broker / topic / str(queue_id)
    codes = list(tags_codes) if tags_codes is not None else [0] * len(records)
    rows = []

    def segments(kind: str, folder_name: str, chunks: list[bytes], rolls: tuple[int, ...], base0: int) -> None:
        d = folder / folder_name
        d.mkdir(parents=True, exist_ok=True)
        cuts = [0, *sorted({r for r in rolls if 0 < r < len(chunks)}), len(chunks)]
        base = base0
        for lo, hi in zip(cuts, cuts[1:]):
            data = b"".join(chunks[lo:hi])
            (d / segment_name(base)).write_bytes(data)
            rows.append({"kind": kind, "path": f"{broker}/{topic}/{queue_id}", "base_offset": base,
                         "size": len(data)})
            base += len(data)

    placed, items, at = [], [], 0
    for rec, code in zip(records, codes, strict=True):
        r = bytearray(rec)
        r[phy_at:phy_at + 8] = at.to_bytes(8, "big", signed=True)
        placed.append(bytes(r))
        items.append(ITEM.pack(at, len(rec), code))
        at += len(rec)
    segments("commitlog", "COMMIT_LOG", placed, commitlog_rolls, 0)
    segments("consumequeue", "CONSUME_QUEUE", items, consumequeue_rolls, first_offset * ITEM.size)
    return pd.DataFrame(rows, columns=["kind", "path", "base_offset", "size"])
