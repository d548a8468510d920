"""A consumer's pull: what the broker answers for a queue and an offset, and what a TAG
subscription delivers.

:func:`get_message` is the broker's answer to a pull (``PULL_MESSAGE``) on a store copy:
``DefaultMessageStore.getMessage`` and the response code ``PullMessageProcessor`` makes of its
status, for every release line (the rules that changed are in
:func:`rmqlab.rules.versions.layout_facts`: ``pull_scan``, ``pull_overflow_to_min``). It is also
``mqadmin queryMsgByOffset`` (one message) and ``printMsg``'s paging.

A pull with a TAG subscription passes two filters, one on each side:

1. **The broker** decides from the ConsumeQueue alone: a unit passes when its tags code (the
   ``String.hashCode`` of TAGS that dispatch stored) is in the subscription's code set
   (``ExpressionMessageFilter.isMatchedByConsumeQueue``;
   :meth:`rmqlab.formats.consumequeue.ConsumeQueue.tag_mask`). It never reads TAGS, so two tags
   with the same hash code (``Aa`` and ``BB``) both pass.
2. **The client** re-checks the string: ``PullAPIWrapper.processPullResult`` keeps a pulled
   message only when its TAGS is in the subscription's tag set
   (:func:`rmqlab.formats.consumequeue.subscription_tags`).

:func:`pull_with_tags` runs both on a real store's queue and returns one row per unit.

>>> import tempfile
>>> from rmqlab.lab.generate import generate_store
>>> from rmqlab.lab.workload import Workload
>>> from rmqlab.store.directory import Store
>>> root = tempfile.mkdtemp()
>>> _ = generate_store(root, Workload(messages=200, seed=1, tags=("Aa", "BB", "TagA")), hash_slot_num=64,
...                    index_num=512)
>>> pulled = pull_with_tags(Store(root, hash_slot_num=64, index_num=512), "TopicTest", 0, "Aa")
>>> sorted(pulled.loc[pulled["broker_passes"], "tags"].unique())
['Aa', 'BB']
>>> bool((pulled["delivered"] == (pulled["tags"] == "Aa")).all())
True
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.rules.topics import is_builtin_topic
from rmqlab.rules.versions import layout_facts
from rmqlab.store.queues import LogicQueue

if TYPE_CHECKING:
    from rmqlab.store.directory import Store

__all__ = ["pull_with_tags", "get_message", "GetMessageResult", "PullLimits", "response_code", "STATUSES"]


def pull_with_tags(store: Store, topic: str, queue_id: int, subscription: str | Iterable[str]) -> pd.DataFrame:
    """Every unit of the queue (`topic`, `queue_id`) with what each side decides for the TAG
    `subscription` ("TagA || TagB", or a list of tags; "*" takes all).

    Columns: queue_offset, commitlog_offset, tags_code (as the unit holds it, resolved through
    the ConsumeQueueExt when the store has one), broker_passes (the code check),
    tags (TAGS of the message, read from the CommitLog), client_keeps (the string check, for the
    units the broker passes; False for the others, which the client never sees), delivered
    (both). ``attrs``: subscription, codes (the code set), tags (the tag set).
    Cost: the queue's units, plus one CommitLog read per unit (for the tags column).
    """
    folder = cq.queue_dir(store.root, topic, queue_id)
    ext_dir = store.root / cqx.FOLDER / topic / str(int(queue_id)) if store.consume_queue_ext else None
    with cq.ConsumeQueue.open(folder, store.consume_queue_file_size) as q:
        ext = cqx.ConsumeQueueExt.open(ext_dir) if ext_dir is not None and ext_dir.is_dir() else None
        try:
            passes = q.tag_mask(subscription, ext=ext)
            codes, _ = q.resolved_tags_codes(ext)
            units = q.to_frame()
        finally:
            if ext is not None:
                ext.close()
    read = store.read_at(units["commitlog_offset"].to_numpy(np.int64)) if len(units) else pd.DataFrame({"tags": []})
    by_offset = dict(zip(read["phy_offset"], read["tags"])) if len(units) else {}
    tags = [by_offset.get(int(o)) for o in units["commitlog_offset"]]
    wanted = cq.subscription_tags(subscription)
    keeps = np.array([wanted is None or t in wanted for t in tags], dtype=bool) & passes
    out = pd.DataFrame({"queue_offset": units["queue_offset"], "commitlog_offset": units["commitlog_offset"],
                        "tags_code": codes, "broker_passes": passes, "tags": tags, "client_keeps": keeps,
                        "delivered": keeps})
    out.attrs.update({"subscription": subscription, "codes": cq.subscription_codes(subscription),
                      "tags": wanted})
    return out


# ---------------------------------------------------------------- getMessage

#: ResponseCode values of a pull's response (the same numbers in every release)
SUCCESS, SYSTEM_ERROR, NO_PERMISSION, TOPIC_NOT_EXIST = 0, 1, 16, 17
PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED = 19, 20, 21

#: GetMessageStatus -> the response code PullMessageProcessor sends (read at rocketmq-all-4.2.0,
#: 4.9.7 and 5.3.3; NO_MESSAGE_IN_QUEUE is PULL_OFFSET_MOVED for a request offset other than 0)
STATUSES = {
    "FOUND": SUCCESS,
    "NO_MATCHED_MESSAGE": PULL_RETRY_IMMEDIATELY,
    "MESSAGE_WAS_REMOVING": PULL_RETRY_IMMEDIATELY,
    "OFFSET_FOUND_NULL": PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_ONE": PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_BADLY": PULL_OFFSET_MOVED,
    "OFFSET_TOO_SMALL": PULL_OFFSET_MOVED,
    "NO_MESSAGE_IN_QUEUE": PULL_NOT_FOUND,
    "NO_MATCHED_LOGIC_QUEUE": PULL_NOT_FOUND,   # a compaction topic's queue without a compaction log
}
#: refusals PullMessageProcessor makes before the store is asked (with the topic's config)
_REFUSALS = {"TOPIC_NOT_EXIST": TOPIC_NOT_EXIST, "NO_PERMISSION": NO_PERMISSION, "QUEUE_ID_ILLEGAL": SYSTEM_ERROR}
_PERM_READ = 1 << 2                     # PermName.PERM_READ
MAX_PULL_MSG_SIZE = 128 * 1024 * 1024   # DefaultMessageStore.MAX_PULL_MSG_SIZE (5.x)


def response_code(status: str, request_offset: int) -> int:
    """The ResponseCode PullMessageProcessor answers for a GetMessageStatus (or one of its own
    refusals: TOPIC_NOT_EXIST, NO_PERMISSION, QUEUE_ID_ILLEGAL).

    >>> response_code("OFFSET_OVERFLOW_ONE", 5), response_code("NO_MESSAGE_IN_QUEUE", 3)
    (19, 21)
    """
    if status in _REFUSALS:
        return _REFUSALS[status]
    if status in ("NO_MESSAGE_IN_QUEUE", "NO_MATCHED_LOGIC_QUEUE") and request_offset != 0:
        return PULL_OFFSET_MOVED
    return STATUSES[status]


@dataclass(frozen=True)
class PullLimits:
    """MessageStoreConfig's limits on one pull (defaults of every release from 4.2 to 5.5).

    A message counts as in memory when it lies within `access_message_in_memory_max_ratio`
    percent of `physical_memory` (bytes of RAM of the broker's machine, StoreUtil's
    TOTAL_PHYSICAL_MEMORY_SIZE) behind the CommitLog's end; None takes every message as in
    memory, as on any store smaller than 40 % of that RAM.
    """

    max_transfer_bytes_in_memory: int = 256 * 1024   # maxTransferBytesOnMessageInMemory
    max_transfer_count_in_memory: int = 32           # maxTransferCountOnMessageInMemory
    max_transfer_bytes_on_disk: int = 64 * 1024      # maxTransferBytesOnMessageInDisk
    max_transfer_count_on_disk: int = 8              # maxTransferCountOnMessageInDisk
    access_message_in_memory_max_ratio: int = 40     # accessMessageInMemoryMaxRatio, percent
    max_filter_message_size: int = 16000             # maxFilterMessageSize (5.x; 4.x: the constant 16000)
    travel_cq_file_num: int = 1                      # travelCqFileNumWhenGetMessage (5.x)
    physical_memory: int | None = None               # bytes of RAM of the broker's machine

    def in_memory(self, log_end: int, phy_offset: int) -> bool:
        """checkInDiskByCommitOffset / estimateInMemByCommitOffset."""
        if self.physical_memory is None:
            return True
        return log_end - phy_offset <= int(self.physical_memory * (self.access_message_in_memory_max_ratio / 100.0))

    def batch_full(self, size: int, batch_num: int, max_msg_nums: int, max_pull_size: int, buffer_total: int,
                   message_total: int, in_memory: bool) -> bool:
        """DefaultMessageStore.isTheBatchFull (4.x without the batch number and the pull size,
        which a 4.x caller passes as 1 and never reaches)."""
        if buffer_total == 0 or message_total == 0:
            return False
        if message_total + batch_num > max_msg_nums or buffer_total + size > max_pull_size:
            return True
        if in_memory:
            return (buffer_total + size > self.max_transfer_bytes_in_memory
                    or message_total > self.max_transfer_count_in_memory - 1)
        return (buffer_total + size > self.max_transfer_bytes_on_disk
                or message_total > self.max_transfer_count_on_disk - 1)


@dataclass(frozen=True)
class GetMessageResult:
    """The broker's answer to one pull. `status` is the GetMessageStatus (or a refusal of
    PullMessageProcessor's: TOPIC_NOT_EXIST, NO_PERMISSION, QUEUE_ID_ILLEGAL, with the offsets
    None); `response_code` the ResponseCode sent; `next_begin_offset`, `min_offset`,
    `max_offset` the response header's. `messages`: one row a message sent, in order (the
    unit's queue_offset and batch_num, commitlog_offset and size, and the record decoded
    there: its topic, queue_id, stored_queue_offset, store_timestamp, tags, keys; NaN where the
    bytes hold no record). `queue`: which queue answered ("consumequeue", "batchconsumequeue",
    "rocksdb", or "none" for a queue the store does not have). `scanned`: units looked at.
    """

    status: str
    response_code: int
    next_begin_offset: int | None
    min_offset: int | None
    max_offset: int | None
    messages: pd.DataFrame
    queue: str
    scanned: int = 0

    def __str__(self) -> str:
        return (f"{self.status} (code {self.response_code}): {len(self.messages)} messages, next offset "
                f"{self.next_begin_offset}, queue {self.min_offset}..{self.max_offset} ({self.queue})")


class _LogView:
    """Where CommitLog.getMessage(offset, size) finds bytes: inside one file, below the write
    position in the last (MappedFile.selectMappedBuffer)."""

    def __init__(self, store: Store):
        self.starts, self.sizes, self.end = store.commitlog_extent()
        self.min_offset = self.starts[0] if self.starts else 0
        self.file_size = store.commitlog_file_size

    def readable(self, phy: int, size: int) -> bool:
        k = bisect.bisect_right(self.starts, phy) - 1
        if k < 0 or size <= 0:
            return False
        limit = self.starts[k] + self.sizes[k] if k < len(self.starts) - 1 else self.end
        return phy + size <= limit

    def roll_next_file(self, phy: int) -> int:
        """CommitLog.rollNextFile (DLedgerCommitLog's too: mappedFileSizeCommitLog)."""
        return phy + self.file_size - phy % self.file_size


def _topic_config(store: Store, topic: str, facts: Any) -> dict[str, Any] | None:
    """The topic's row of config/topics (None when absent), or {} where the store does not say:
    no topic config, or a RocksDB one without a topic the broker creates at every start."""
    config = store.config()
    source = config.loads["topics"].source
    if source == "none":
        return {}
    topics = config.topics()
    row = topics[topics["topic"] == topic]
    if len(row):
        return {str(k): v for k, v in row.iloc[0].items()}
    return {} if source == "rocksdb" and is_builtin_topic(topic, timer=facts.timer_topic_builtin) else None


def _refusal(config: dict[str, Any] | None, queue_id: int) -> str | None:
    """PullMessageProcessor's checks of the topic before it asks the store (none without config)."""
    if config is None:
        return "TOPIC_NOT_EXIST"
    if not config:
        return None
    if not int(config["perm"]) & _PERM_READ:
        return "NO_PERMISSION"
    if queue_id < 0 or queue_id >= int(config["read_queue_nums"]):
        return "QUEUE_ID_ILLEGAL"
    return None


def _compaction_topic(config: dict[str, Any] | None) -> bool:
    """cleanup.policy=COMPACTION among the topic's attributes (CleanupPolicyUtils.getDeletePolicy)."""
    attrs = (config or {}).get("attributes")
    return isinstance(attrs, dict) and str(attrs.get("cleanup.policy", "")).upper() == "COMPACTION"


def get_message(store: Store, topic: str, queue_id: int, offset: int, max_msg_nums: int = 32,
                subscription: str | Iterable[str] | None = "*", *, limits: PullLimits = PullLimits(),
                broker_version: str | None = None, check_topic: bool = True) -> GetMessageResult:
    """What the broker answers a pull of `max_msg_nums` messages from queue (`topic`,
    `queue_id`) at queue offset `offset`, with a TAG `subscription` ("*", "TagA || TagB" or a
    list of tags): DefaultMessageStore.getMessage under PullMessageProcessor (no long polling,
    as a pull with no suspend flag), with the rules of `broker_version` (default: the store's;
    None: the newest). The messages are those the broker sends, before the client's own tag
    check (:func:`pull_with_tags`).

    The broker's rules, in short: offset past the end -> OFFSET_OVERFLOW_ONE (at the end) or
    OFFSET_OVERFLOW_BADLY (next offset: the max; up to 4.9.3 the min when that is 0); below
    the min -> OFFSET_TOO_SMALL (next: the min); otherwise it scans units from the offset, to
    the end of that ConsumeQueue file and at most 800 units past the offset (16,000 bytes;
    5.0.x: 16,000 units), skips those the subscription's tag codes do not match, and stops at
    `max_msg_nums` messages or 256 KiB (in memory; 8 messages or 64 KiB on disk). FOUND with
    messages; else NO_MATCHED_MESSAGE (next: past the units scanned), MESSAGE_WAS_REMOVING
    (the CommitLog bytes are gone) or OFFSET_FOUND_NULL (no file holds the offset).
    `check_topic`: first refuse as PullMessageProcessor does when config/topics lacks the
    topic, cannot be read, or has fewer read queues.

    Cost: one queue's files opened, at most max(800, `max_msg_nums`) units scanned (a Python
    step each), one CommitLog read of the messages sent; config/ read once a Store.

    >>> import tempfile
    >>> from rmqlab.lab.generate import generate_store
    >>> from rmqlab.lab.workload import Workload
    >>> from rmqlab.store.directory import Store
    >>> root = tempfile.mkdtemp()
    >>> _ = generate_store(root, Workload(messages=100, seed=1, queues_per_topic=1), hash_slot_num=64,
    ...                    index_num=512)
    >>> store = Store(root, hash_slot_num=64, index_num=512)
    >>> got = get_message(store, "TopicTest", 0, 95)
    >>> got.status, got.next_begin_offset, got.messages["queue_offset"].tolist()
    ('FOUND', 100, [95, 96, 97, 98, 99])
    >>> get_message(store, "TopicTest", 0, 100).status, get_message(store, "TopicTest", 0, 107).next_begin_offset
    ('OFFSET_OVERFLOW_ONE', 100)

    A compaction topic (cleanup.policy=COMPACTION) of a 5.1+ store is answered from the
    compaction store, as the broker answers it (:func:`_compaction_get_message`: no tag
    filter, its own log's offsets). Raises FormatError for a damaged queue.
    """
    queue_id, offset, max_msg_nums = int(queue_id), int(offset), int(max_msg_nums)
    version = broker_version if broker_version is not None else store.broker_version
    facts = layout_facts(version)
    config = _topic_config(store, topic, facts)
    if check_topic:
        refused = _refusal(config, queue_id)
        if refused is not None:
            return GetMessageResult(refused, response_code(refused, offset), None, None, None, _frame(store, []),
                                    "none")
    if facts.compaction_topics and _compaction_topic(config):
        return _compaction_get_message(store, topic, queue_id, offset, max_msg_nums, limits)
    log = _LogView(store)
    queue = LogicQueue(store, topic, queue_id, log.min_offset)
    try:
        lo, hi = queue.min_offset, queue.max_offset
        taken: list[tuple[int, int, int, int]] = []
        scanned = 0
        if hi == 0:   # also a queue the store lacks: findConsumeQueue makes an empty one
            status, next_offset = "NO_MESSAGE_IN_QUEUE", 0
        elif offset < lo:
            status, next_offset = "OFFSET_TOO_SMALL", lo
        elif offset == hi:
            status, next_offset = "OFFSET_OVERFLOW_ONE", offset
        elif offset > hi:
            status, next_offset = "OFFSET_OVERFLOW_BADLY", lo if facts.pull_overflow_to_min and lo == 0 else hi
        else:
            scan = _scan_4 if facts.pull_scan == "4" else _scan_5
            status, next_offset, taken, scanned = scan(queue, offset, max_msg_nums, subscription, limits, log, facts)
    finally:
        queue.close()
    return GetMessageResult(status, response_code(status, offset), next_offset, lo, hi, _frame(store, taken),
                            queue.kind, scanned)


class _CompactionLogView(_LogView):
    """CompactionLog.getMessage(offset, size): inside one file of the topic's compaction log;
    its end, the end of the last record the queue points at."""

    def __init__(self, folder, units_end: int, file_size: int):
        from rmqlab.formats.commitlog import store_files

        files = store_files(folder) if folder.is_dir() else []
        self.starts = tuple(f.start_offset for f in files)
        self.sizes = tuple(f.size for f in files)
        self.end = units_end
        self.min_offset = self.starts[0] if self.starts else 0
        self.file_size = file_size

    def readable(self, phy: int, size: int) -> bool:
        k = bisect.bisect_right(self.starts, phy) - 1
        return k >= 0 and size > 0 and phy + size <= self.starts[k] + self.sizes[k]


def _compaction_get_message(store: Store, topic: str, queue_id: int, offset: int, n: int,
                            limits: PullLimits) -> GetMessageResult:
    """CompactionStore.getMessage -> CompactionLog.getMessage (rocketmq-all-5.3.3; the same from
    5.1.0): the queue is the topic's SparseConsumeQueue, the bytes its compaction log's; no tag
    filter; an offset past the end goes back to 0 when the queue starts at 0 (5.x's regular
    queues go to the max); a queue the compaction store has no log for answers
    NO_MATCHED_LOGIC_QUEUE with offsets 0. Cost: the queue's files opened, the units of one
    file from the offset scanned, one read of the records sent."""
    from rmqlab.formats import compaction as cpt

    qdir, ldir = cpt.cq_dir(store.root, topic, queue_id), cpt.log_dir(store.root, topic, queue_id)
    if not qdir.is_dir() and not ldir.is_dir():   # compactionLogTable has no CompactionLog for it
        status = "NO_MATCHED_LOGIC_QUEUE"
        return GetMessageResult(status, response_code(status, offset), 0, 0, 0, _frame(store, []), "none")
    with cpt.SparseQueue.open(qdir) as q:
        lo, hi = q.min_offset, q.max_offset
        units = q.queue.units
        end = int((units["commitlog_offset"].astype(np.int64) + units["size"]).max()) if len(units) else 0
        log = _CompactionLogView(ldir, end, cpt.compaction_log_file_size(q.queue.mapped_file_size,
                                                                          cpt.DEFAULT_COMPACTION_FILE_SIZE))
        sent, next_offset = _Sent(), offset
        if hi == 0:
            status, next_offset = "NO_MESSAGE_IN_QUEUE", 0
        elif offset == hi:
            status = "OFFSET_OVERFLOW_ONE"
        elif offset > hi:
            status, next_offset = "OFFSET_OVERFLOW_BADLY", lo if lo == 0 else hi
        else:
            status, travelled = "NO_MATCHED_MESSAGE", 0
            while sent.buffer_total <= 0 and next_offset < hi and travelled < limits.travel_cq_file_num:
                travelled += 1
                w = q.iterate_from_or_next(next_offset)
                if w is None:   # nextOffsetCorrection to BatchConsumeQueue.rollNextFile, which is 0
                    status, next_offset = "OFFSET_FOUND_NULL", 0
                    break
                for u in w.tolist():
                    if next_offset >= hi:
                        break
                    phy, size, _tags, _time, base, batch = (int(x) for x in u[:6])
                    if not (phy >= 0 and size > 0 and base >= 0 and batch > 0):   # validateCqUnit
                        break
                    if sent.full(limits, log, n, size, batch, phy) or sent.buffer_total >= MAX_PULL_MSG_SIZE:
                        break
                    next_offset = base + batch
                    sent.offer(log, True, base, batch, phy, size)
            status = sent.status if status == "NO_MATCHED_MESSAGE" else status
    return GetMessageResult(status, response_code(status, offset), next_offset, lo, hi,
                            _frame(store, sent.taken, ldir), "compaction")


class _Sent:
    """What getMessage has put into its result so far, and the step both loops take for a unit
    they do not stop at: skip it while the CommitLog file of an earlier unit is gone
    (nextPhyFileStartOffset), skip it when the tags code does not match, note a message whose
    bytes are gone (MESSAGE_WAS_REMOVING; the rest of that CommitLog file is skipped), else send it."""

    def __init__(self) -> None:
        self.status = "NO_MATCHED_MESSAGE"
        self.buffer_total = self.count = 0
        self.taken: list[tuple[int, int, int, int]] = []
        self.next_file: int | None = None

    def rolled_past(self, phy: int) -> bool:
        return self.next_file is not None and phy < self.next_file

    def full(self, limits: PullLimits, log: _LogView, n: int, size: int, batch: int, phy: int) -> bool:
        return limits.batch_full(size, batch, n, MAX_PULL_MSG_SIZE, self.buffer_total, self.count,
                                 limits.in_memory(log.end, phy))

    def offer(self, log: _LogView, passes: bool, queue_offset: int, batch: int, phy: int, size: int) -> None:
        if self.rolled_past(phy):
            return
        if not passes:
            self.status = "NO_MATCHED_MESSAGE" if self.buffer_total == 0 else self.status
        elif not log.readable(phy, size):
            self.status = "MESSAGE_WAS_REMOVING" if self.buffer_total == 0 else self.status
            self.next_file = log.roll_next_file(phy)
        else:
            self.taken.append((queue_offset, batch, phy, size))
            self.buffer_total, self.count, self.status, self.next_file = (
                self.buffer_total + size, self.count + batch, "FOUND", None)


def _scan_4(queue: LogicQueue, offset: int, n: int, subscription, limits: PullLimits, log: _LogView, _facts):
    """The loop of DefaultMessageStore.getMessage up to 4.9.x (read at 4.2.0 and 4.9.7): the
    units from the offset to its file's end, at most max(16000, 20 * n) bytes of them."""
    w = queue.window(offset, n)
    if w is None:   # OFFSET_FOUND_NULL: corrected to the next file (on a master)
        return "OFFSET_FOUND_NULL", queue.roll_next_file(offset), [], 0
    sent = _Sent()
    passes = queue.passes(w.tags_code, subscription)
    stop = min(len(w.phy), max(16000 // cq.UNIT_SIZE, n))
    k = 0
    while k < stop:
        phy, size = int(w.phy[k]), int(w.size[k])
        if not sent.rolled_past(phy):
            if sent.full(limits, log, n, size, 1, phy):
                break
            sent.offer(log, bool(passes[k]), int(w.queue_offset[k]), 1, phy, size)
        k += 1
    return sent.status, offset + k, sent.taken, k


def _scan_5(queue: LogicQueue, offset: int, n: int, subscription, limits: PullLimits, log: _LogView, facts):
    """The loop of DefaultMessageStore.getMessage from 5.0.0 (read at 5.0.0, 5.1.4, 5.2.0, 5.3.3):
    the units the queue's iterator gives (``iterateFrom(offset, n)``; on RocksDB from 5.5.0 all
    up to the max offset), from travelCqFileNumWhenGetMessage files while nothing was found, up
    to the scan limit of the release (LayoutFacts.pull_scan)."""
    rule = facts.pull_scan
    sent, next_offset, scanned, travelled = _Sent(), offset, 0, 0
    max_offset, unit_size = queue.max_offset, queue.unit_size
    while sent.buffer_total <= 0 and next_offset < max_offset and travelled < limits.travel_cq_file_num:
        travelled += 1
        w = queue.window(next_offset, max_offset - next_offset if facts.rocksdb_pull_to_max else n)
        if w is None:
            return "OFFSET_FOUND_NULL", queue.roll_next_file(next_offset), sent.taken, scanned
        passes = queue.passes(w.tags_code, subscription)
        for k in range(len(w.phy)):
            if next_offset >= max_offset:
                break
            qo, batch, phy, size = int(w.queue_offset[k]), int(w.batch_num[k]), int(w.phy[k]), int(w.size[k])
            if rule == "5.0":   # 5.0.x compares a count of units with a byte limit
                if qo - offset > max(16000, n * cq.UNIT_SIZE):
                    break
            else:
                ahead, limit = (qo - offset) * unit_size, max(limits.max_filter_message_size, n * unit_size)
                if ahead >= limit if rule == "5.3.3" else ahead > limit:
                    break
            if sent.full(limits, log, n, size, batch, phy) or sent.buffer_total >= MAX_PULL_MSG_SIZE:
                break
            scanned += 1
            next_offset = qo + batch
            sent.offer(log, bool(passes[k]), qo, batch, phy, size)
    return sent.status, next_offset, sent.taken, scanned


def _frame(store: Store, taken: list[tuple[int, int, int, int]], log_folder=None) -> pd.DataFrame:
    """The messages sent: their units, and the records decoded at their CommitLog offsets (in
    `log_folder`, a compaction log, where given)."""
    units = pd.DataFrame(taken, columns=["queue_offset", "batch_num", "commitlog_offset", "size"]).astype(np.int64)
    if not len(units):
        return units.assign(topic=pd.Series(dtype=object), queue_id=pd.Series(dtype=np.int64),
                            stored_queue_offset=pd.Series(dtype=np.int64), store_timestamp=pd.Series(dtype=np.int64),
                            tags=pd.Series(dtype=object), keys=pd.Series(dtype=object))
    offsets = units["commitlog_offset"].to_numpy(np.int64)
    if log_folder is None:
        read = store.read_at(offsets)
    else:
        from rmqlab.formats.commitlog import read_at

        read = read_at(log_folder, offsets, body=False)
    read = read[["phy_offset", "topic", "queue_id", "queue_offset", "store_timestamp", "tags", "keys"]].rename(
        columns={"phy_offset": "commitlog_offset", "queue_offset": "stored_queue_offset"})
    return units.merge(read.drop_duplicates("commitlog_offset"), on="commitlog_offset", how="left")
