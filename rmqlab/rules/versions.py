"""Which store layout facts apply to which RocketMQ broker version: one home for them.

Each fact was settled by reading the broker's Java source at the release tags named beside it
(``rocketmq-all-X.Y.Z`` of apache/rocketmq):

* **Properties separator.** ``MessageDecoder.messageProperties2String`` writes
  ``name\\x01value\\x02`` per property. 4.9.1 added ``sb.deleteCharAt(sb.length() - 1)``, so the
  block loses its final ``\\x02``; 5.2.0 removed that line again (read at 4.9.0, 4.9.1, 4.9.4,
  5.1.4, 5.2.0). ``string2messageProperties`` (4.9.1 onwards) reads the last pair up to the end
  of the string either way, so every reader accepts both forms.
* **__CRC32# property.** ``MessageStoreConfig.enabledAppendPropCRC`` and
  ``CommitLog.CRC32_RESERVED_LEN`` come in 5.2.0 (off by default there and up to 5.3.x).
* **Magic v2.** ``MessageVersion.MESSAGE_VERSION_V2`` (magic 0xDAA320AB, 2-byte TOPICLEN) and
  ``autoMessageVersionOnTopicLen`` (default true: v2 for topics over 127 bytes) come in 5.1.0;
  5.0.0 has v1 only, and 4.x neither the enum nor the magic.
* **IPv6 hosts.** ``MessageSysFlag.BORNHOST_V6_FLAG`` / ``STOREHOSTADDRESS_V6_FLAG`` come in 4.6.0.
* **ConsumeQueueExt** (``store/ConsumeQueueExt.java``, ``enableConsumeQueueExt`` default false)
  exists from 4.x through 5.5.x (the 5.5.0 broker writes it); **BatchConsumeQueue**
  (``store/queue/BatchConsumeQueue.java``) from 5.0.0; **compaction topics** (``cleanup.policy``
  ``COMPACTION``, ``store/kv/CompactionStore.java``, which answers their pulls) from 5.1.0; the
  timer topic among the topics ``TopicConfigManager`` creates at every start from 5.3.1 (read
  at 5.0.0, 5.1.4, 5.2.0, 5.3.0, 5.3.1);
  **light message queues** (``MultiDispatch``,
  ``INNER_MULTI_DISPATCH``) from 4.9.3.
* **TAGS index key.** ``IndexService.buildIndex`` puts, after UNIQ_KEY and the KEYS tokens, one
  more key ``topic#T#tags`` for every indexed message whose ``TAGS`` property is non-empty (no
  config flag), and ``queryOffset`` takes an index type ("T": query ``topic#T#key``), from
  5.4.0 (read with javap in rocketmq-store-5.4.0.jar and 5.5.0.jar; absent in 5.3.3). The key
  itself is :func:`rmqlab.rules.dispatch.tag_index_key`.
* **Index header's hashSlotCount.** ``IndexFile.putKey`` calls ``incHashSlotCount()`` on every
  put up to 4.7.0, and only when the key's slot was empty (``if (invalidIndex == slotValue)``)
  from 4.7.1 (:data:`rmqlab.formats.indexfile.EVERY_PUT` / ``NEW_SLOT``). The stores that 4.2.0,
  4.3.2 and 4.5.2 write carry the first count, 4.7.1's the second.

* **RocksDB ConsumeQueue.** ``storeType=defaultRocksDB`` (``RocksDBConsumeQueueStore``) from
  5.2.0. Its time search (``RocksDBConsumeQueueTable.binarySearchInCQByTime``) answers the nearer
  of the two units around a time in 5.2.x and takes a LOWER/UPPER boundary from 5.3.0; it
  dispatches light-message-queue units (``dispatchLMQ``) from 5.3.2 (read at rocketmq-all-5.2.0,
  5.3.0, 5.3.1, 5.3.2 and 5.3.3).

* **getMessage (a pull by queue and offset).** ``DefaultMessageStore.getMessage`` answers an
  offset past the queue's end with the max offset from 4.9.4; up to 4.9.3 with the min offset
  when that is 0 (read at 4.2.0, 4.9.3, 4.9.4). Its scan of the queue: up to 4.9.x the units
  from the offset to the end of that ConsumeQueue file, at most ``max(16000, 20 * maxMsgNums)``
  bytes of them ("4"); 5.0.0 iterates units and stops once a unit lies more than
  ``max(16000, 20 * maxMsgNums)`` *units* past the offset ("5.0"); 5.1.0 compares bytes again,
  ``(unit - offset) * unitSize > max(maxFilterMessageSize, maxMsgNums * unitSize)`` ("5.1"); 5.3.3
  stops at ``>=`` ("5.3.3") (read at 5.0.0, 5.1.0, 5.1.4, 5.2.0, 5.3.0 - 5.3.3). On a RocksDB
  ConsumeQueue the queue's iterator (``RocksDBConsumeQueue.iterateFrom(start, maxMsgNums)``)
  gives at most ``maxMsgNums`` units up to 5.4.x; 5.5.0 adds ``iteratorWhenUseRocksdbConsumeQueue``
  (default true), whose ``RocksDBReusableIterator`` runs on to the queue's max offset,
  ``maxMsgNums`` units a read (read with javap in rocketmq-store-5.4.0.jar and 5.5.0.jar).

* **getOffsetInQueueByTime on a ConsumeQueue** (:meth:`rmqlab.formats.consumequeue.ConsumeQueue.
  offset_by_time`'s `broker`): "4" up to 4.9.x, "5.0" in 5.0.0 - 5.1.0 (both: the file by its
  modification time, the nearer unit), "5" from 5.1.1 (the file by its units' store times, a
  LOWER/UPPER boundary).

* **The tiered index's query** (tieredstore ``index/IndexStoreFile.queryAsync``, RIP-65, from
  5.2.0). An item holds ``timeDiff``, the seconds from the file's begin timestamp to its store
  time. A local (unsealed) file's chain walk keeps every item of the key up to 5.3.0 and only
  those whose store time is in [begin, end] from 5.3.1; the compacted (sealed) form filters
  throughout. The store time filtered by is ``timeDiff + beginTimestamp`` (seconds added as
  milliseconds) up to 5.3.2 and ``timeDiff * 1000 + beginTimestamp`` from 5.3.3 (read at 5.2.0,
  5.3.0, 5.3.1, 5.3.2 and 5.3.3; the classes of 5.2.0, 5.3.0, 5.3.1, 5.3.3 and 5.5.0 answer so in
  tests/brokers/test_rocketmq_tiered_index.py).

``None`` as a version everywhere means rmqlab's own default form: the final ``\\x02`` kept, no
CRC property unless asked for, v2 for long topics, IPv6 allowed (a 5.2+ broker's form), and
no TAGS index key (the 5.3.x index).

>>> facts = layout_facts("4.9.4")
>>> facts.final_property_separator, facts.prop_crc, facts.magic_v2, facts.ipv6_hosts
(False, False, False, True)
>>> layout_facts("5.3.1").prop_crc
True
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BrokerVersion", "BrokerVersionError", "LayoutFacts", "parse_broker_version", "layout_facts",
           "KNOWN_RANGE"]

_FORM = re.compile(r"(?:rocketmq-all-|v)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})")

#: Releases whose layout facts this module knows: 4.0.0 up to (not including) 6.0.0.
KNOWN_RANGE = ((4, 0, 0), (6, 0, 0))


class BrokerVersionError(ValueError):
    """A broker version string that is not ``MAJOR.MINOR.PATCH`` of a known release line."""


@dataclass(frozen=True, order=True)
class BrokerVersion:
    """A RocketMQ release, compared as (major, minor, patch)."""

    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def parse_broker_version(text: str | BrokerVersion) -> BrokerVersion:
    """``"4.9.4"`` (also ``"rocketmq-all-4.9.4"`` or ``"v4.9.4"``) -> :class:`BrokerVersion`.

    >>> parse_broker_version("5.3.1"), str(parse_broker_version("rocketmq-all-4.2.0"))
    (BrokerVersion(major=5, minor=3, patch=1), '4.2.0')

    Raises :class:`BrokerVersionError` for any other form and for releases outside
    :data:`KNOWN_RANGE`.
    """
    if isinstance(text, BrokerVersion):
        version = text
    else:
        m = _FORM.fullmatch(text.strip()) if isinstance(text, str) else None
        if m is None:
            raise BrokerVersionError(f"broker version {text!r} is not of the form MAJOR.MINOR.PATCH "
                                     f"(e.g. 4.9.4 or 5.3.1)")
        version = BrokerVersion(*(int(g) for g in m.groups()))
    low, high = KNOWN_RANGE
    if not low <= (version.major, version.minor, version.patch) < high:
        raise BrokerVersionError(f"broker version {version}: the store layout is known for "
                                 f"{'.'.join(map(str, low))} up to {high[0]}.x only")
    return version


@dataclass(frozen=True)
class LayoutFacts:
    """The store layout facts of one broker version (see the module docstring for sources)."""

    version: BrokerVersion | None
    final_property_separator: bool   # the properties block ends with \x02
    prop_crc: bool                   # enabledAppendPropCRC exists (__CRC32# can be written)
    prop_crc_default: bool           # ... and is on by default
    magic_v2: bool                   # v2 records (2-byte TOPICLEN) for topics over 127 bytes
    ipv6_hosts: bool                 # SYSFLAG's IPv6 host bits
    consume_queue_ext: bool          # ConsumeQueueExt can be enabled (off by default)
    batch_consume_queue: bool        # BatchConsumeQueue
    light_message_queue: bool        # INNER_MULTI_DISPATCH / %LMQ%
    index_tag_key: bool = False      # buildIndex also puts topic#T#tags (5.4.0+)
    slot_count_every_put: bool = False   # hashSlotCount counts every put, not new slots (up to 4.7.0)
    rocksdb_consume_queue: bool = False  # storeType=defaultRocksDB (RocksDBConsumeQueueStore, 5.2.0+)
    rocksdb_lmq: bool = False        # ... which also dispatches %LMQ% units (dispatchLMQ, 5.3.2+)
    rocksdb_time_boundary: bool = True   # ... whose time search takes LOWER/UPPER (5.3.0+; 5.2.x: the nearer unit)
    compaction_topics: bool = False  # cleanup.policy=COMPACTION topics, pulled from the CompactionStore (5.1.0+)
    timer_topic_builtin: bool = True  # TopicConfigManager creates rmq_sys_wheel_timer at every start (5.3.1+)
    # TimerMessageStore.recover moves the offset it enqueues from into the timer queue's
    # [min, max] as the store's recovery left it (ISSUE #7480, 5.3.2+)
    timer_recover_clamp: bool = True
    time_search: str = "5"           # getOffsetInQueueByTime on a ConsumeQueue: "4", "5.0" or "5" (see above)
    pull_overflow_to_min: bool = False   # getMessage past the end: next offset min when min is 0 (up to 4.9.3)
    pull_scan: str = "5.3.3"         # getMessage's scan of the queue: "4", "5.0", "5.1" or "5.3.3" (see above)
    rocksdb_pull_to_max: bool = True  # ... on a RocksDB queue: to the max offset (5.5.0+), not maxMsgNums units
    empty_last_file_deleted: bool = True  # MappedFileQueue.doLoad deletes an empty last file (5.1.3+)
    # a file of another length: "refuse" (the load fails and the broker exits: 4.5.x-4.9.1, 4.9.3+) or
    # "ignore" (the load stops there and succeeds, the files from it on left out: up to 4.4.x, and 4.9.2)
    mismatched_file: str = "refuse"
    # the tiered index's query (tieredstore IndexStoreFile.queryAsync, RIP-65, 5.2.0+): whether a local
    # (unsealed) file's walk keeps only items stored in [begin, end] (5.3.1+; before, every item of
    # the key), and the unit an item's timeDiff (seconds since the file began) is added in to get
    # the store time it is filtered by: 1000 from 5.3.3, 1 before (the seconds read as milliseconds)
    tiered_index_local_time_filter: bool = True
    tiered_index_time_diff_ms: int = 1000
    # 5.1's tiered index instead (file/TieredIndexFile, 5.1.0 - 5.1.4): only uploaded files are
    # asked, in another layout and by other rules (rmqlab.formats.tieredindex51)
    tiered_index_legacy: bool = False


def layout_facts(version: str | BrokerVersion | None) -> LayoutFacts:
    """The :class:`LayoutFacts` of a broker version; None gives rmqlab's default form.

    >>> layout_facts(None).final_property_separator, layout_facts("4.9.0").final_property_separator
    (True, True)
    >>> layout_facts("5.3.3").index_tag_key, layout_facts("5.4.0").index_tag_key, layout_facts(None).index_tag_key
    (False, True, False)
    >>> layout_facts("4.7.0").slot_count_every_put, layout_facts("4.7.1").slot_count_every_put
    (True, False)
    >>> [layout_facts(v).rocksdb_time_boundary for v in ("5.2.0", "5.3.0")]
    [False, True]
    >>> [layout_facts(v).rocksdb_lmq for v in ("5.3.1", "5.3.2")]
    [False, True]
    >>> [layout_facts(v).timer_recover_clamp for v in ("5.3.1", "5.3.2")]
    [False, True]
    >>> [layout_facts(v).pull_scan for v in ("4.9.7", "5.0.0", "5.2.0", "5.3.3")]
    ['4', '5.0', '5.1', '5.3.3']
    >>> layout_facts("4.9.3").pull_overflow_to_min, layout_facts("4.9.4").pull_overflow_to_min
    (True, False)
    >>> [layout_facts(v).empty_last_file_deleted for v in ("5.1.2", "5.1.3")]
    [False, True]
    >>> [layout_facts(v).mismatched_file for v in ("4.4.0", "4.5.1", "4.9.2", "4.9.3")]
    ['ignore', 'refuse', 'ignore', 'refuse']
    >>> [(layout_facts(v).tiered_index_local_time_filter, layout_facts(v).tiered_index_time_diff_ms)
    ...  for v in ("5.3.0", "5.3.1", "5.3.3")]
    [(False, 1), (True, 1), (True, 1000)]
    >>> [layout_facts(v).tiered_index_legacy for v in ("5.1.4", "5.2.0")]
    [True, False]

    Raises :class:`BrokerVersionError` as :func:`parse_broker_version`.
    """
    if version is None:
        return LayoutFacts(None, True, True, False, True, True, True, True, True)
    v = parse_broker_version(version)
    t = (v.major, v.minor, v.patch)
    return LayoutFacts(
        version=v,
        final_property_separator=not (4, 9, 1) <= t < (5, 2, 0),
        prop_crc=t >= (5, 2, 0),
        prop_crc_default=False,
        magic_v2=t >= (5, 1, 0),
        ipv6_hosts=t >= (4, 6, 0),
        consume_queue_ext=True,
        batch_consume_queue=t >= (5, 0, 0),
        light_message_queue=t >= (4, 9, 3),
        index_tag_key=t >= (5, 4, 0),
        slot_count_every_put=t < (4, 7, 1),
        rocksdb_consume_queue=t >= (5, 2, 0),
        rocksdb_lmq=t >= (5, 3, 2),
        rocksdb_time_boundary=t >= (5, 3, 0),
        compaction_topics=t >= (5, 1, 0),
        timer_topic_builtin=t >= (5, 3, 1),
        timer_recover_clamp=t >= (5, 3, 2),
        time_search="4" if t < (5, 0, 0) else "5.0" if t < (5, 1, 1) else "5",
        pull_overflow_to_min=t < (4, 9, 4),
        pull_scan="4" if t < (5, 0, 0) else "5.0" if t < (5, 1, 0) else "5.1" if t < (5, 3, 3) else "5.3.3",
        rocksdb_pull_to_max=t >= (5, 5, 0),
        empty_last_file_deleted=t >= (5, 1, 3),
        mismatched_file="ignore" if t < (4, 5, 0) or t == (4, 9, 2) else "refuse",
        tiered_index_local_time_filter=t >= (5, 3, 1),
        tiered_index_time_diff_ms=1000 if t >= (5, 3, 3) else 1,
        tiered_index_legacy=(5, 1, 0) <= t < (5, 2, 0),
    )
