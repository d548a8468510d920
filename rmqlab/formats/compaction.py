"""RocketMQ 5.1+'s compaction store: the copy of a compaction topic's messages a broker keeps for
it, and the sparse queue over them.

Mirrors ``org.apache.rocketmq.store.kv`` (``CompactionStore``, ``CompactionLog``,
``CompactionPositionMgr``) and ``store.queue.SparseConsumeQueue`` (read at rocketmq-all-5.3.3,
commit 29d90a4ff96c04c094039685a6106870c58a7e40; the same classes from 5.1.0). A topic whose
``cleanup.policy`` attribute is ``COMPACTION`` is dispatched as every topic is, and also appended
here (``CommitLogDispatcherCompaction``, on by default: ``enableCompaction``); a pull on it is
answered from here (``DefaultMessageStore.getMessage`` hands it to ``CompactionStore``)::

    <root>/compaction/compactionLog/<topic>/<queueId>/<20 digits>  CommitLog records
    <root>/compaction/compactionCq/<topic>/<queueId>/<20 digits>   46-byte BatchConsumeQueue units
    <root>/compaction/position-checkpoint                          JSON: how far compaction got

Facts settled from the Java source:

* **Records** are the CommitLog's bytes with PHYSICALOFFSET rewritten to the record's offset in
  the compaction log (``CompactionAppendMessageCallback``); a message without KEYS is not
  appended. A file ends in an 8-byte blank (size, CommitLog's BLANK_MAGIC_CODE) when the next
  record does not fit.
* **Sizes**: queue files of ``compactionCqMappedFileSize / 46 x 46`` bytes (10 MiB: 10,485,746);
  log files of ``getCompactionLogSize`` (a whole number of queue-file sizes near
  ``compactionMappedFileSize``, 100 MiB: 104,857,460). Log and queue files roll together and
  share names (``sanityCheck``).
* **Units** are BatchConsumeQueue's (:mod:`rmqlab.formats.batchconsumequeue`), batch size 1; after
  a compaction the queue offsets have gaps, so a read finds "the unit at this offset or the next"
  (``SparseConsumeQueue.iterateFromOrNext``) with ``binarySearchRight`` over byte positions, each
  midpoint rounded down to a unit's start (``BatchConsumeQueue.ceil``, which despite its name
  rounds down): :func:`binary_search_right`.

>>> compaction_log_file_size(10_485_746, 100 * 1024 * 1024)
104857460
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import FormatError
from rmqlab.formats import batchconsumequeue as bcq

__all__ = [
    "COMPACTION_DIR", "COMPACTION_LOG_DIR", "COMPACTION_CQ_DIR", "DEFAULT_COMPACTION_FILE_SIZE",
    "DEFAULT_COMPACTION_CQ_FILE_SIZE", "compaction_log_file_size", "queues", "log_dir", "cq_dir", "binary_search_right",
    "SparseQueue", "PositionCheckpoint", "read_position_checkpoint",
]

COMPACTION_DIR = "compaction"               # CompactionStore.COMPACTION_DIR
COMPACTION_LOG_DIR = "compactionLog"        # CompactionStore.COMPACTION_LOG_DIR
COMPACTION_CQ_DIR = "compactionCq"          # CompactionStore.COMPACTION_CQ_DIR
#: MessageStoreConfig.compactionMappedFileSize and compactionCqMappedFileSize
DEFAULT_COMPACTION_FILE_SIZE = 100 * 1024 * 1024
DEFAULT_COMPACTION_CQ_FILE_SIZE = 10 * 1024 * 1024 // bcq.UNIT_SIZE * bcq.UNIT_SIZE
#: BatchConsumeQueue.MSG_BASE_OFFSET_INDEX: where a unit's msgBaseOffset lies
_BASE_AT = bcq.UNIT.offset("msg_base_offset")


def compaction_log_file_size(cq_size: int, log_size: int) -> int:
    """CompactionLog.getCompactionLogSize: a whole number of queue-file sizes, at least five,
    near the configured log size (rounded down when the remainder is under half a queue file)."""
    n, m = divmod(log_size, cq_size)
    if n < 5:
        return cq_size * 5
    return n * cq_size if 0 < m < cq_size >> 1 else (n + 1) * cq_size


def queues(root: str | os.PathLike) -> list[tuple[str, int]]:
    """(topic, queue id) of every queue the compaction store at `root` has a log or a queue
    folder for, sorted. Cost: the folders' listings."""
    base = Path(root) / COMPACTION_DIR
    found = {(t.name, int(q.name)) for sub in (COMPACTION_CQ_DIR, COMPACTION_LOG_DIR) if (base / sub).is_dir()
             for t in (base / sub).iterdir() if t.is_dir() for q in t.iterdir() if q.is_dir() and q.name.isdigit()}
    return sorted(found)


def log_dir(root: str | os.PathLike, topic: str, queue_id: int) -> Path:
    return Path(root) / COMPACTION_DIR / COMPACTION_LOG_DIR / topic / str(int(queue_id))


def cq_dir(root: str | os.PathLike, topic: str, queue_id: int) -> Path:
    return Path(root) / COMPACTION_DIR / COMPACTION_CQ_DIR / topic / str(int(queue_id))


def binary_search_right(buf, left: int, right: int, target: int) -> int:
    """BatchConsumeQueue.binarySearchRight with BoundaryType.LOWER over byte positions `left` ..
    `right` (the first and last unit's) of a queue file's bytes: the byte position of the first
    unit whose msgBaseOffset is >= `target`, or -1. The midpoint is ``(left + right) / 2``
    rounded down to a unit's start (BatchConsumeQueue.ceil). Cost: O(log units)."""
    mid = -1
    while left <= right:
        mid = (left + right) // 2 // bcq.UNIT_SIZE * bcq.UNIT_SIZE
        value = int.from_bytes(buf[mid + _BASE_AT:mid + _BASE_AT + 8], "big", signed=True)
        if mid == right:
            return mid if value >= target else -1
        if mid == left:
            if value >= target:
                return mid
            left = mid + bcq.UNIT_SIZE
        elif value < target:
            left = mid + bcq.UNIT_SIZE
        else:
            right = mid
    return -1


class SparseQueue:
    """A compaction queue (``compactionCq/<topic>/<queueId>``): a BatchConsumeQueue read as
    SparseConsumeQueue reads it. A context manager. Cost: opening maps the files (the recovery
    scan of the newest three, vectorized).

    >>> import tempfile
    >>> with SparseQueue.open(tempfile.mkdtemp()) as q:
    ...     q.min_offset, q.max_offset, q.iterate_from_or_next(0)
    (-1, 0, None)

    Files of another size than the folder's first raise the BatchConsumeQueue reader's typed
    errors.
    """

    def __init__(self, queue: bcq.BatchConsumeQueue):
        self.queue = queue

    @classmethod
    def open(cls, folder: str | os.PathLike, file_size: int | None = None) -> SparseQueue:
        folder = Path(folder)
        if file_size is None:
            names = sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
            file_size = names[0].stat().st_size if names else DEFAULT_COMPACTION_CQ_FILE_SIZE
        return cls(bcq.BatchConsumeQueue.open(folder, max(int(file_size), bcq.UNIT_SIZE)))

    min_offset = property(lambda self: self.queue.min_offset, doc="getMinOffsetInQueue (-1: empty).")
    max_offset = property(lambda self: self.queue.max_offset, doc="getMaxOffsetInQueue.")

    def close(self) -> None:
        self.queue.close()

    def __enter__(self) -> SparseQueue:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def iterate_from_or_next(self, msg_offset: int) -> np.ndarray | None:
        """SparseConsumeQueue.iterateFromOrNext: the units from the one holding `msg_offset` or
        the next (getBatchMsgIndexOrNextBuffer: the first file at or below the min offset, else
        the file whose units span it, or the next file; then binarySearchRight) to the end of
        that file's units, as a structured array of :data:`rmqlab.formats.batchconsumequeue.UNIT`;
        None where the broker's iterator is null. Cost: O(files + log units)."""
        live = [u for _, u in self.queue.segments() if len(u)]
        if not live:
            return None
        target: Any = None
        if msg_offset <= self.queue.min_offset:
            target = live[0]
        else:
            for i in range(len(live) - 1, -1, -1):   # searchOffsetFromFilesOrRight
                lo, hi = int(live[i][0]["msg_base_offset"]), int(live[i][-1]["msg_base_offset"])
                if hi < msg_offset and i != len(live) - 1:
                    target = live[i + 1]
                    break
                if lo <= msg_offset <= hi:
                    target = live[i]
                    break
            if target is None:
                return None
        mid = binary_search_right(target.view(np.uint8), 0, (len(target) - 1) * bcq.UNIT_SIZE, msg_offset)
        return None if mid == -1 else target[mid // bcq.UNIT_SIZE:]


@dataclass(frozen=True)
class PositionCheckpoint:
    """``compaction/position-checkpoint`` (CompactionPositionMgr): ``empty`` and, per
    "topic_queueId", the queue offset compaction has got to."""

    empty: bool
    queue_offsets: dict[str, int]


def read_position_checkpoint(path: str | os.PathLike) -> PositionCheckpoint:
    """Read the compaction position checkpoint (fastjson text). A file that is not that JSON
    raises FormatError naming the file and the field. Cost: one small read."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"not JSON: {e}", path=path, offset=getattr(e, "pos", None), field="position-checkpoint") \
            from None
    if not isinstance(obj, dict) or not isinstance(obj.get("queueOffsetMap", {}), dict):
        raise FormatError("expected an object with queueOffsetMap", path=path, field="queueOffsetMap")
    offsets = obj.get("queueOffsetMap") or {}
    bad = [k for k, v in offsets.items() if isinstance(v, bool) or not isinstance(v, int)]
    if bad:
        raise FormatError(f"offset of {bad[0]!r} is not an integer", path=path, field=f"queueOffsetMap[{bad[0]!r}]")
    return PositionCheckpoint(bool(obj.get("empty", not offsets)), {str(k): int(v) for k, v in offsets.items()})
