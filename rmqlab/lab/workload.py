"""Deterministic synthetic producers -> CommitLog message columns.

A :class:`Workload` describes producers, topics and queues, an arrival pattern, keys, bodies,
transactions, delayed messages and clocks; :func:`generate` turns it into one pyarrow Table of
CommitLog records in CommitLog order (the columns the CommitLog encoder consumes, see
:data:`SCHEMA`), and :func:`generate_chunks` yields the same rows a chunk at a time so that
10-100 million messages never sit in memory at once. :func:`describe` summarises a table.

Everything is a function of the Workload: the same fields give the same table, byte for byte,
and the chunk size never changes the rows (internally the stream is made in fixed blocks of
:data:`BLOCK_MESSAGES` producer sends, each with its own random stream, and re-cut into chunks).

What the broker does, and this module mirrors (RocketMQ 5.3.x unless said otherwise):

* **Arrivals.** A rate profile r(t) (messages/s, piecewise constant on a 1 s grid: steady, a
  daily cycle, bursts) and a unit-rate Poisson process S_1 < S_2 < ... mapped through the
  inverse of the cumulative intensity Λ(t) = ∫r: t_i = Λ⁻¹(S_i). The broker stores in arrival
  order; ``store_timestamp`` is the broker clock, ``born_timestamp`` the producer's clock at
  the send (earlier by the network delay, shifted by the producer's clock skew).
* **Queues.** Each producer picks queues round-robin per topic from a random start
  (``MQFaultStrategy`` / ``ThreadLocalIndex``). ``queue_offset`` is assigned per
  (topic, queue) in CommitLog order, consecutive from 0, only for records whose transaction
  type is NOT_TYPE or COMMIT_TYPE; PREPARED and ROLLBACK records are written with queue
  offset 0 and do not advance it (``DefaultMessageStore.assignOffset`` / ``increaseOffset``,
  ``CommitLog.DefaultAppendMessageCallback.doAppend``).
* **Properties.** The stored block is ``name\\x01value\\x02`` for each property, in the order
  Java's ``HashMap`` iterates them: the broker re-parses the client's string into a
  ``HashMap(128)`` (``MessageDecoder.string2messageProperties``), adds ``CLUSTER``
  (``SendMessageProcessor``) and, for delayed messages, ``REAL_TOPIC`` / ``REAL_QID``
  (``HookUtils.transformDelayLevelMessage``), then writes ``messageProperties2String``. See
  :data:`PROPERTY_ORDER`. The client always sends ``WAIT=true`` (``Message`` constructors),
  ``TAGS``/``KEYS`` when set, ``UNIQ_KEY`` (``MessageClientIDSetter``) and for a
  transactional half message ``TRAN_MSG=true`` and ``PGROUP`` (``sendMessageInTransaction``,
  which also drops ``DELAY``: a message is never both transactional and delayed).
* **Delayed messages** (``DELAY`` level 1..18): stored under ``SCHEDULE_TOPIC_XXXX``, queue
  level-1, with ``REAL_TOPIC`` / ``REAL_QID``. At delivery (store time + the level's delay,
  ``ScheduleMessageService.computeDeliverTimestamp``, plus up to 100 ms of timer polling) the
  broker writes a second record under the real topic and queue (``messageTimeUp``): same body,
  born time and host, sysFlag and properties. Its properties string is serialized *before*
  ``DELAY`` is cleared from the map, so the delivered copy still carries ``DELAY``,
  ``REAL_TOPIC`` and ``REAL_QID`` on disk; its ``delay_level`` column (always the ``DELAY``
  property's value) is therefore the level too, and ``topic != SCHEDULE_TOPIC_XXXX`` tells it
  from the waiting copy.
* **Transactions**, in the layout the store's sysFlag rules were written for (the broker's
  ``EndTransactionProcessor`` up to 4.2): the half message is stored in its real topic with
  sysFlag TRANSACTION_PREPARED_TYPE (0x4); after the local transaction (an exponential delay) a
  decision record follows with COMMIT_TYPE (0x8, the same body) or ROLLBACK_TYPE (0xC, an
  empty body, as ``setBody(null)``), the half's topic, queue, born time/host and properties,
  and ``prepared_index`` = the half's row (the writer turns it into preparedTransactionOffset);
  some transactions get no decision. Brokers >= 4.3 store the half differently (see
  :class:`Workload` ``transaction_fraction``).

>>> t = generate(Workload(messages=5, seed=7, rate=100.0))
>>> t.num_rows, t.column("topic")[0].as_py()
(5, 'TopicTest')
>>> list(zip(t.column("queue_id").to_pylist(), t.column("queue_offset").to_pylist()))
[(3, 0), (0, 0), (0, 1), (1, 0), (1, 1)]
>>> props = t.column("properties")[0].as_py().split("\\x02")
>>> props[:2]
['UNIQ_KEY\\x010A0100023FFD007146F02FAF08020000', 'CLUSTER\\x01DefaultCluster']
>>> props[2:]
['TAGS\\x01TagB', 'KEYS\\x01ORDER_0', 'WAIT\\x01true', '']
"""
from __future__ import annotations

import dataclasses
import ipaddress
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqlab.formats.commitlog import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG
from rmqlab.formats.msgid import create_uniq_id, format_host, month_start_ms, parse_host, uniq_ids_arrow
from rmqlab.jvm.hashcode import java_hash
from rmqlab.rules.dispatch import (
    DEFAULT_DELAY_LEVELS,
    INNER_BATCH_FLAG,
    KEY_SEPARATOR,
    NEED_UNWRAP_FLAG,
    PROPERTY_INNER_BASE,
    PROPERTY_INNER_MULTI_DISPATCH,
    PROPERTY_INNER_MULTI_QUEUE_OFFSET,
    PROPERTY_INNER_NUM,
    SCHEDULE_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_MASK,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    assign_lmq_offsets,
    assign_queue_offsets_coded,
    goes_to_consume_queue_many,
    is_lmq,
    key_tokens_many,
    parse_delay_levels,
    transaction_type,
)

# MessageSysFlag: BORNHOST_V6_FLAG 0x10 / STOREHOSTADDRESS_V6_FLAG 0x20 mark an IPv6 host
from rmqlab.rules.topics import is_valid_topic
from rmqlab.rules.versions import layout_facts

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Workload",
    "SCHEMA",
    "BLOCK_MESSAGES",
    "PROPERTY_ORDER",
    "BORNHOST_V6_FLAG",
    "STOREHOSTADDRESS_V6_FLAG",
    "PATTERNS",
    "generate",
    "generate_chunks",
    "rate_profile",
    "RateProfile",
    "collision_keys",
    "describe",
    "java_hashmap_order",
]

#: Producer sends per internal block. Each block has its own random stream, so this constant
#: (not the caller's chunk size) fixes the table; changing it changes every table.
BLOCK_MESSAGES = 1 << 17

#: Arrival patterns: the rate profile r(t) is `rate` times a daily cycle and/or bursts.
PATTERNS = ("steady", "daily", "bursts", "daily+bursts")

#: The CommitLog message columns, in this order (the CommitLog encoder's input).
SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("queue_id", pa.int32(), nullable=False),
    pa.field("flag", pa.int32(), nullable=False),
    pa.field("sys_flag", pa.int32(), nullable=False),
    pa.field("born_timestamp", pa.int64(), nullable=False),      # ms since the epoch, producer clock
    pa.field("born_host", pa.string(), nullable=False),          # "ip:port", IPv6 "[addr]:port"
    pa.field("store_timestamp", pa.int64(), nullable=False),     # ms since the epoch, broker clock
    pa.field("store_host", pa.string(), nullable=False),
    pa.field("reconsume_times", pa.int32(), nullable=False),
    pa.field("body", pa.large_binary(), nullable=False),         # large: a 1M-row chunk may pass 2 GiB
    pa.field("properties", pa.string(), nullable=False),         # raw block name\x01value\x02...
    pa.field("keys", pa.string()),                                # KEYS property, null = none
    pa.field("uniq_key", pa.string()),                            # UNIQ_KEY property, null = none
    pa.field("tags", pa.string()),                                # TAGS property, null = none
    pa.field("delay_level", pa.int32(), nullable=False),         # DELAY property, 0 = none
    pa.field("prepared_index", pa.int64(), nullable=False),      # row of the half message, -1 = none
    pa.field("producer", pa.int32(), nullable=False),            # producer number 0..producers-1
    pa.field("queue_offset", pa.int64(), nullable=False),        # as the broker assigns it
])

_DAY = 86400
_SEGMENT_SECONDS = 1 << 16      # the rate grid is built this many seconds at a time
_DELIVERY_POLL_S = 0.1          # ScheduleMessageService.DELAY_FOR_A_WHILE (100 ms)
_TAPE_LEN = 1_048_573           # body text period (a prime: bodies do not line up with it)
_TAPE_ALPHABET = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789 ", np.uint8)

# Random-stream tags: every stream is SeedSequence([seed, tag, ...]), independent of the others.
_TAG_SETUP, _TAG_BLOCK, _TAG_BURST, _TAG_TAPE, _TAG_STEPS = 1, 2, 3, 4, 5


# -------------------------------------------------------------------------- properties order


def java_hashmap_order(names_in_insertion_order: list[str], capacity: int) -> list[str]:
    """The order a ``java.util.HashMap`` with a table of `capacity` buckets iterates these keys:
    by bucket ``(h ^ (h >>> 16)) & (capacity - 1)`` with h = String.hashCode, and within a
    bucket by insertion (a bucket is a linked list until it holds 8 entries). Assumes no
    resize happened (fewer than 0.75 x capacity entries).

    >>> java_hashmap_order(["TAGS", "KEYS", "0"], 16)   # the real CommitLog's order
    ['0', 'KEYS', 'TAGS']
    """
    def bucket(name: str) -> int:
        h = java_hash(name) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [n for _, _, n in sorted((bucket(n), i, n) for i, n in enumerate(names_in_insertion_order))]


# The client's Message map is a HashMap(16); these are put in this order (constructor: TAGS,
# KEYS, WAIT; user: DELAY; sendMessageInTransaction: TRAN_MSG, PGROUP; sendKernelImpl:
# UNIQ_KEY). The broker then re-parses the client's string into a HashMap(128) and adds
# CLUSTER and, for a delayed message, REAL_TOPIC and REAL_QID.
_CLIENT_PUTS = ["TAGS", "KEYS", "WAIT", "DELAY", "TRAN_MSG", "PGROUP", "UNIQ_KEY"]
_BROKER_PUTS = ["CLUSTER", "REAL_TOPIC", "REAL_QID"]
#: Property names in the order they appear in a stored properties block (5.x broker).
PROPERTY_ORDER: tuple[str, ...] = tuple(
    java_hashmap_order(java_hashmap_order(_CLIENT_PUTS, 16) + _BROKER_PUTS, 128))


# ---------------------------------------------------------------------------------- workload


@dataclass(frozen=True)
class Workload:
    """A synthetic producer workload. Every field has a default; all times are relative to
    `start_ms` unless said otherwise.

    Volume and time
        seed (0): the random seed; same fields -> same table.
        messages (100_000): producer sends. Decision records and delivered copies of delayed
            messages come on top, so a table has at least this many rows.
        start_ms (1_718_000_000_000 = 2024-06-10 06:13:20 UTC): the true time of t = 0, in ms
            since the epoch; the broker clock shows it then.
        timezone ("UTC"): the producers' JVM time zone (IANA name): the start of the month
            in UNIQ_KEY, and the hour of the daily cycle (its UTC offset at `start_ms`).
        drain (False): also write the decision records and delivered copies that fall after
            the last producer send (as if the store kept running until none is pending).
            False: the store is snapshotted at the last send and those are not written.

    Arrivals (r(t) in messages/s on a 1 s grid; arrivals t_i = Λ⁻¹(S_i), S a unit Poisson process)
        rate (1000.0): base rate, messages/s over all producers.
        pattern ("steady"): one of :data:`PATTERNS`. "daily" multiplies the rate by
            ``1 + daily_amplitude * cos(2π (hour - daily_peak_hour) / 24)``; "bursts"
            multiplies it by `burst_factor` while a burst lasts.
        daily_amplitude (0.5): 0..1; the trough rate is ``rate * (1 - amplitude)``.
        daily_peak_hour (20.0): hour of day (in `timezone`) of the highest rate.
        burst_interval_s (600.0): mean seconds between burst starts (Poisson, whole seconds).
        burst_duration_s (10.0): seconds a burst lasts (rounded up to whole seconds);
            overlapping bursts do not compound.
        burst_factor (10.0): rate multiplier during a burst.

    Producers, topics, hosts and clocks
        producers (4): producer processes (one connection, pid and UNIQ_KEY counter each);
            each send comes from one uniformly at random.
        producer_group ("rmqlab_producer_group"): PGROUP of transactional half messages.
        topics (("TopicTest",)): topic names (TopicValidator: [%|a-zA-Z0-9_-], <= 127 chars).
        topic_weights (None): relative send share per topic; None = equal.
        queues_per_topic (4): write queues per topic; producers pick them round-robin.
        ipv6_fraction (0.0): share of producers with an IPv6 address (2001:db8::/32): their
            records carry BORNHOST_V6_FLAG (0x10) and "[addr]:port" born hosts, and their
            UNIQ_KEY has a 16-byte address (56 hex chars).
        broker_host ("10.0.0.1:10911"): the store host; an IPv6 "[addr]:port" sets
            STOREHOSTADDRESS_V6_FLAG (0x20) on every record.
        cluster ("DefaultCluster"): the CLUSTER property a 5.x broker adds; None leaves it out.
        flag (0): Message.flag of every record (int32, opaque to the store).
        network_delay_ms (1.0): mean one-way producer -> broker delay (exponential), ms:
            born time = send time on the producer clock, store time = arrival on the broker's.
        producer_clock_skew_ms (0.0): standard deviation (ms) of each producer clock's offset
            from the broker clock (normal, fixed per producer).
        broker_clock_steps (0): times the broker clock steps backwards, at random sends
            (default off); from then on store times read `broker_clock_step_ms` lower, so
            store_timestamp is non-monotone at those rows (CommitLog order is unchanged).
        broker_clock_step_ms (1000): size of each backward step, ms.

    Keys (KEYS property: tokens joined by single spaces; buildIndex indexes each token)
        keyless_fraction (0.1): share of sends without KEYS.
        keys_per_message (1.0): mean tokens per keyed send, 1..`max_keys_per_message`
            (1 + binomial, so the mean is exact).
        max_keys_per_message (8).
        hot_key_fraction (0.2): share of tokens drawn from the hot vocabulary; the others are
            unique order ids ``<order_key_prefix><n>``, n = 0, 1, 2, ... over the stream.
        hot_keys (1000): size of the hot vocabulary ``<hot_key_prefix><rank>``, rank 1..hot_keys.
        zipf_s (1.1): Zipf exponent of the hot keys: P(rank r) ∝ r^-s.
        order_key_prefix ("ORDER_"), hot_key_prefix ("USER_").
        first_order_id (0): the n of the first order id (later ones count up from it); lets
            independent pieces of one workload (see :mod:`rmqlab.spark.sources`) keep their
            order ids apart.
        collision_pairs (0): pairs of keys whose Java hashes collide on purpose:
            ``<order_key_prefix>Aa<i>`` / ``<order_key_prefix>BB<i>`` ("Aa" and "BB" hash
            alike, so topic#key does too): see :func:`collision_keys`.
        collision_fraction (0.01): share of keyed sends whose first token is replaced by one
            of the 2 x collision_pairs colliding keys (uniformly).
        uniq_key (True): set UNIQ_KEY (MessageClientIDSetter); False = a client that sets none
            (a 5.x broker would then make one; older brokers store none).
        tags (("TagA", "TagB", "TagC")): TAGS, one per send, uniformly; () = no TAGS.

    Bodies
        body_median (200), body_sigma (0.5), body_min (1), body_max (4096): sizes in bytes,
            lognormal with that median and log-sd, rounded and clipped. The Java client
            refuses empty bodies and zips bodies over 4 KiB (not modelled: keep body_max at
            4096 for realistic stores). Content: a window of a seed-derived text tape.

    Transactions (the classic layout, see the module docstring)
        transaction_fraction (0.0): share of sends that are transactional half messages
            (sysFlag 0x4, TRAN_MSG=true, PGROUP). Note: brokers >= 4.3
            (``TransactionalMessageBridge.parseHalfMessageInner``) store the half under
            RMQ_SYS_TRANS_HALF_TOPIC with sysFlag 0 and write no rollback record; that layout
            is not generated.
        commit_fraction (0.8), rollback_fraction (0.1): decision shares among transactional
            sends; the rest never get a decision.
        decision_delay_ms (100.0): mean time (exponential) from the half message's arrival to
            the decision's, ms.

    5.x store features (off by default; the tables are unchanged when off)
        batch_cq_topics (()): topics whose ``queue.type`` is BatchCQ: each send to one is
            stored as an inner batch (sysFlag INNER_BATCH_FLAG | NEED_UNWRAP_FLAG, INNER_NUM,
            INNER_BASE = its queue offset) and advances its queue by INNER_NUM
            (CommitLog.getMessageNum). The body stays an ordinary body, not an encoded batch:
            the store never reads it. Pass the same topics to :class:`rmqlab.store.directory.Store`.
        inner_batch_max (1): INNER_NUM is 1..inner_batch_max, a fixed function of the row.
        lmq_queues (()): light message queue names (``%LMQ%...``).
        multi_dispatch_every (0): every n-th row (a plain send to a topic that is not BatchCQ)
            names one or two of `lmq_queues` in INNER_MULTI_DISPATCH, with the offsets a
            broker of `broker_version` with enableLmq stores in INNER_MULTI_QUEUE_OFFSET
            (:func:`rmqlab.rules.dispatch.assign_lmq_offsets`: for LMQ names 4.9.3+ and 5.x agree).
            The two properties are appended to the block (a broker's HashMap order is not
            modelled). BatchCQ topics need a 5.0.0+ `broker_version`, multi dispatch 4.9.3+.

    Delayed messages
        delay_fraction (0.0): share of sends with a DELAY level (never transactional ones).
        delay_levels (1..18): levels drawn uniformly for delayed sends.
        delay_level_table (the broker default "1s 5s 10s 30s 1m ... 1h 2h"): messageDelayLevel.

    Broker version
        broker_version (None): the release whose store form the records take
            (:mod:`rmqlab.rules.versions`), e.g. "4.9.4": its properties blocks end without
            the final \\x02 for 4.9.1 to 5.1.x; IPv6 hosts need 4.6.0+. None: rmqlab's
            default form (final \\x02 kept, as 4.9.0 and older and 5.2+ write it).
        append_prop_crc (False): end every record's properties with the __CRC32# pair
            (enabledAppendPropCRC, 5.2+; written by the CommitLog encoder, which needs the
            record's bytes: the tables here hold the properties without it).

    >>> w = Workload(messages=1000, pattern="daily", transaction_fraction=0.1)
    >>> dataclasses.replace(w, seed=1).seed, w.pattern
    (1, 'daily')
    """

    seed: int = 0
    messages: int = 100_000
    start_ms: int = 1_718_000_000_000
    timezone: str = "UTC"
    drain: bool = False
    # arrivals
    rate: float = 1000.0
    pattern: str = "steady"
    daily_amplitude: float = 0.5
    daily_peak_hour: float = 20.0
    burst_interval_s: float = 600.0
    burst_duration_s: float = 10.0
    burst_factor: float = 10.0
    # producers, topics, hosts, clocks
    producers: int = 4
    producer_group: str = "rmqlab_producer_group"
    topics: tuple[str, ...] = ("TopicTest",)
    topic_weights: tuple[float, ...] | None = None
    queues_per_topic: int = 4
    ipv6_fraction: float = 0.0
    broker_host: str = "10.0.0.1:10911"
    cluster: str | None = "DefaultCluster"
    flag: int = 0
    network_delay_ms: float = 1.0
    producer_clock_skew_ms: float = 0.0
    broker_clock_steps: int = 0
    broker_clock_step_ms: int = 1000
    # keys
    keyless_fraction: float = 0.1
    keys_per_message: float = 1.0
    max_keys_per_message: int = 8
    hot_key_fraction: float = 0.2
    hot_keys: int = 1000
    zipf_s: float = 1.1
    order_key_prefix: str = "ORDER_"
    hot_key_prefix: str = "USER_"
    first_order_id: int = 0
    collision_pairs: int = 0
    collision_fraction: float = 0.01
    uniq_key: bool = True
    tags: tuple[str, ...] = ("TagA", "TagB", "TagC")
    # bodies
    body_median: int = 200
    body_sigma: float = 0.5
    body_min: int = 1
    body_max: int = 4096
    # transactions
    transaction_fraction: float = 0.0
    commit_fraction: float = 0.8
    rollback_fraction: float = 0.1
    decision_delay_ms: float = 100.0
    # delayed messages
    delay_fraction: float = 0.0
    delay_levels: tuple[int, ...] = tuple(range(1, 19))
    delay_level_table: str = DEFAULT_DELAY_LEVELS
    # the broker's store form
    broker_version: str | None = None
    append_prop_crc: bool = False
    # 5.x store features (see _store_features): off by default
    batch_cq_topics: tuple[str, ...] = ()
    inner_batch_max: int = 1
    lmq_queues: tuple[str, ...] = ()
    multi_dispatch_every: int = 0

    def __post_init__(self):
        for name in ("topics", "tags", "delay_levels", "topic_weights", "batch_cq_topics", "lmq_queues"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, tuple):
                if isinstance(v, str):
                    raise TypeError(f"{name} must be a sequence, not a single str")
                object.__setattr__(self, name, tuple(v))
        _validate(self)

    def replace(self, **changes) -> Workload:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


def _validate(w: Workload) -> None:
    def need(cond: bool, msg: str):
        if not cond:
            raise ValueError(msg)

    def fraction(name: str):
        v = getattr(w, name)
        need(isinstance(v, (int, float)) and 0.0 <= v <= 1.0, f"{name} must be in [0, 1], got {v!r}")

    def count(name: str, lo: int = 0, hi: int | None = None):
        v = getattr(w, name)
        upper = hi if hi is not None else "..."
        need(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= lo
             and (hi is None or v <= hi), f"{name} must be an int in [{lo}, {upper}], got {v!r}")

    def text(name: str, v: str, *, allow_space: bool = False, allow_empty: bool = False):
        need(isinstance(v, str), f"{name} must be a str, got {type(v).__name__}")
        need(allow_empty or v != "", f"{name} must not be empty")
        need("\x01" not in v and "\x02" not in v, f"{name} must not contain \\x01 or \\x02 "
             "(the property separators)")
        need(allow_space or " " not in v, f"{name} must not contain a space (the KEYS separator)")

    count("seed", 0, 2**63 - 1)
    count("messages", 0)
    count("start_ms", 0, 2**62)
    for name in ("keyless_fraction", "hot_key_fraction", "collision_fraction", "ipv6_fraction",
                 "transaction_fraction", "commit_fraction", "rollback_fraction", "delay_fraction",
                 "daily_amplitude"):
        fraction(name)
    need(w.transaction_fraction + w.delay_fraction <= 1.0,
         "transaction_fraction + delay_fraction must be <= 1 (a message is never both)")
    need(w.commit_fraction + w.rollback_fraction <= 1.0, "commit_fraction + rollback_fraction must be <= 1")
    need(isinstance(w.rate, (int, float)) and math.isfinite(w.rate) and w.rate > 0, "rate must be > 0 messages/s")
    need(w.pattern in PATTERNS, f"pattern must be one of {PATTERNS}, got {w.pattern!r}")
    need(0.0 <= w.daily_peak_hour < 24.0, "daily_peak_hour must be in [0, 24)")
    need(w.burst_interval_s > 0 and w.burst_duration_s > 0 and w.burst_factor > 0,
         "burst_interval_s, burst_duration_s and burst_factor must be > 0")
    count("producers", 1, 64_000)
    text("producer_group", w.producer_group)
    need(len(w.topics) >= 1, "topics must name at least one topic")
    for t in w.topics:
        need(isinstance(t, str) and is_valid_topic(t),
             f"topic {t!r} is not a valid RocketMQ topic ([%|a-zA-Z0-9_-], 1..127 chars)")
        need(t != SCHEDULE_TOPIC, f"{SCHEDULE_TOPIC} is the broker's; delayed messages go there by themselves")
    need(len(set(w.topics)) == len(w.topics), "topics must be distinct")
    if w.topic_weights is not None:
        need(len(w.topic_weights) == len(w.topics) and all(x >= 0 for x in w.topic_weights)
             and sum(w.topic_weights) > 0, "topic_weights: one non-negative weight per topic, not all 0")
    count("queues_per_topic", 1, 1024)
    parse_host(w.broker_host)   # raises ValueError for bad text
    facts = layout_facts(w.broker_version)   # BrokerVersionError (a ValueError) for a bad version
    need(isinstance(w.append_prop_crc, bool), f"append_prop_crc must be a bool, got {w.append_prop_crc!r}")
    need(not w.append_prop_crc or facts.prop_crc,
         f"broker {facts.version} has no __CRC32# property (enabledAppendPropCRC comes in 5.2.0)")
    need(facts.ipv6_hosts or (w.ipv6_fraction == 0 and len(parse_host(w.broker_host)[0]) == 4),
         f"broker {facts.version} has no IPv6 hosts (they come in 4.6.0): ipv6_fraction must be 0 "
         f"and broker_host IPv4")
    if w.cluster is not None:
        text("cluster", w.cluster)
    count("flag", -(2**31), 2**31 - 1)
    need(w.network_delay_ms >= 0 and w.producer_clock_skew_ms >= 0,
         "network_delay_ms and producer_clock_skew_ms must be >= 0")
    count("broker_clock_steps", 0, max(w.messages - 1, 0))
    count("broker_clock_step_ms", 0)
    count("max_keys_per_message", 1, 64)
    need(1.0 <= w.keys_per_message <= w.max_keys_per_message,
         "keys_per_message must be in [1, max_keys_per_message]")
    count("hot_keys", 1, 10_000_000)
    count("first_order_id", 0, 2**62)
    need(w.zipf_s >= 0, "zipf_s must be >= 0")
    text("order_key_prefix", w.order_key_prefix, allow_empty=True)
    text("hot_key_prefix", w.hot_key_prefix, allow_empty=True)
    count("collision_pairs", 0, 10_000_000)
    for tag in w.tags:
        text("a tag", tag, allow_space=True)
    count("body_min", 1)
    count("body_max", w.body_min, 4 * 1024 * 1024)   # MessageStoreConfig.maxMessageSize
    count("body_median", 1)
    need(w.body_sigma >= 0, "body_sigma must be >= 0")
    need(w.decision_delay_ms >= 0, "decision_delay_ms must be >= 0")
    table = parse_delay_levels(w.delay_level_table)
    need(len(w.delay_levels) >= 1, "delay_levels must hold at least one level")
    for lv in w.delay_levels:
        need(isinstance(lv, (int, np.integer)) and 1 <= lv <= len(table),
             f"delay level {lv!r} is not in 1..{len(table)} (the delay_level_table)")
    need(all(t in w.topics for t in w.batch_cq_topics), "batch_cq_topics must be among topics")
    count("inner_batch_max", 1, 2**15 - 1)             # INNER_NUM is a Java short
    for q in w.lmq_queues:
        need(isinstance(q, str) and is_lmq(q) and is_valid_topic(q),
             f"lmq_queues: {q!r} is not a queue name starting with %LMQ%")
    count("multi_dispatch_every", 0)
    need(not w.multi_dispatch_every or len(w.lmq_queues) >= 1, "multi_dispatch_every needs lmq_queues")
    need(not w.batch_cq_topics or facts.batch_consume_queue,
         f"broker {facts.version} has no BatchConsumeQueue (it comes in 5.0.0)")
    need(not w.multi_dispatch_every or facts.light_message_queue,
         f"broker {facts.version} has no multi dispatch (INNER_MULTI_DISPATCH comes in 4.9.3)")
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(w.timezone)
    except (ZoneInfoNotFoundError, ValueError) as e:   # every other bad field is a ValueError too
        raise ValueError(f"timezone {w.timezone!r} is not an IANA time zone name") from e


def collision_keys(w: Workload) -> list[tuple[str, str]]:
    """The colliding key pairs of `w`: ``(<prefix>Aa<i>, <prefix>BB<i>)`` for i < collision_pairs.
    In any topic, ``topic#<prefix>Aa<i>`` and ``topic#<prefix>BB<i>`` have the same Java hash
    (31*'A' + 'a' == 31*'B' + 'B'), so an index cannot tell them apart.

    >>> a, b = collision_keys(Workload(collision_pairs=1))[0]
    >>> a, b, java_hash("T#" + a) == java_hash("T#" + b)
    ('ORDER_Aa0', 'ORDER_BB0', True)
    """
    p = w.order_key_prefix
    return [(f"{p}Aa{i}", f"{p}BB{i}") for i in range(w.collision_pairs)]


# ------------------------------------------------------------------------------ rate profile


class RateProfile:
    """The arrival intensity of workload `w`: r(t) in messages/s on a 1 s grid (second k covers
    [k, k+1) s after start_ms), and the inverse of its cumulative Λ(t), the time by which s
    messages are expected. The grid is built segment by segment as :meth:`invert` walks
    forward, so any duration fits in bounded memory. Cost: O(seconds) for :meth:`rates`;
    :meth:`invert` O(len(s) + seconds walked), and O(len(s)) for a steady rate.

    >>> p = RateProfile(Workload(rate=50.0))
    >>> p.rates(0, 3).tolist()
    [50.0, 50.0, 50.0]
    >>> p.invert(np.array([0.0, 25.0, 100.0])).tolist()
    [0.0, 0.5, 2.0]
    """

    def __init__(self, w: Workload):
        import datetime as _dt
        from zoneinfo import ZoneInfo

        self.w = w
        start = _dt.datetime.fromtimestamp(w.start_ms / 1000, ZoneInfo(w.timezone))
        self.tz_offset_s = start.utcoffset().total_seconds()
        self.daily = "daily" in w.pattern
        self.bursts = "bursts" in w.pattern
        self.burst_len = int(math.ceil(w.burst_duration_s))
        self.seg_k0 = 0
        self.seg_lam = np.zeros(1)      # Λ at seconds seg_k0 .. seg_k0+m
        self.seg_r = np.zeros(0)

    def rates(self, a: int, b: int) -> np.ndarray:
        """r for seconds a..b-1 after start_ms (messages/s, float64)."""
        w = self.w
        r = np.full(b - a, float(w.rate))
        if self.daily:
            # evaluated at mid-second, in the producers' wall-clock hour
            hour = ((w.start_ms / 1000 + self.tz_offset_s + np.arange(a, b) + 0.5) / 3600.0) % 24.0
            r *= 1.0 + w.daily_amplitude * np.cos(2 * np.pi * (hour - w.daily_peak_hour) / 24.0)
        if self.bursts:
            r[self._burst_mask(a, b)] *= w.burst_factor
        return r

    def _burst_mask(self, a: int, b: int) -> np.ndarray:
        w = self.w
        depth = np.zeros(b - a + 1, np.int64)
        for day in range(max((a - self.burst_len) // _DAY, 0), (b - 1) // _DAY + 1):
            # one stream per day: the bursts of a day never depend on where a segment starts
            rng = np.random.default_rng([w.seed, _TAG_BURST, day])
            n = rng.poisson(_DAY / w.burst_interval_s)
            starts = day * _DAY + rng.integers(0, _DAY, n)
            lo = np.clip(starts - a, 0, b - a)
            hi = np.clip(starts + self.burst_len - a, 0, b - a)
            np.add.at(depth, lo, 1)
            np.add.at(depth, hi, -1)
        return np.cumsum(depth[:-1]) > 0

    def invert(self, s: np.ndarray) -> np.ndarray:
        """t (seconds after start_ms, float64) with Λ(t) = s, for ascending expected message
        counts `s`; Λ is linear inside a second. The grid only walks forward: a later call's
        counts must not be smaller than the largest count of an earlier call."""
        if not self.daily and not self.bursts:
            # a constant rate: Λ(t) = rate * t, the grid is not needed (the same t, faster)
            return s / float(self.w.rate)
        out = np.empty(len(s))
        i = 0
        while i < len(s):
            lam, r, k0 = self.seg_lam, self.seg_r, self.seg_k0
            j = int(np.searchsorted(s, lam[-1], side="left")) if len(r) else i
            if j > i:
                part = s[i:j]
                # largest k with Λ_k <= s; then r_k > 0 (a zero-rate second has Λ_k == Λ_k+1)
                k = np.searchsorted(lam, part, side="right") - 1
                out[i:j] = k0 + k + (part - lam[k]) / r[k]
                i = j
            if i < len(s):
                self.seg_k0 = k0 + len(r)
                self.seg_r = self.rates(self.seg_k0, self.seg_k0 + _SEGMENT_SECONDS)
                self.seg_lam = np.concatenate([[lam[-1]], lam[-1] + np.cumsum(self.seg_r)])
        return out


def rate_profile(w: Workload, seconds: int, start: int = 0) -> np.ndarray:
    """r(t) of `w` for seconds start..start+seconds-1 after start_ms, in messages/s: the
    intensity the arrivals follow (for plots and rate tests). Cost: O(seconds).

    >>> rate_profile(Workload(rate=50.0), 3).tolist()
    [50.0, 50.0, 50.0]
    """
    return RateProfile(w).rates(int(start), int(start) + int(seconds))


# ------------------------------------------------------------------------------------ setup


class _Setup:
    """Everything fixed for a workload: producers, vocabularies, property fragments."""

    def __init__(self, w: Workload):
        self.w = w
        rng = np.random.default_rng([w.seed, _TAG_SETUP])
        P, T = w.producers, len(w.topics)
        n6 = int(round(w.ipv6_fraction * P))
        self.v6 = np.zeros(P, bool)
        self.v6[rng.permutation(P)[:n6]] = True
        ports = rng.integers(32768, 61000, P)                      # Linux ephemeral ports
        self.pid = rng.integers(1000, 4_194_304, P)                # pid_max 2^22; id keeps (short)
        self.clh = rng.integers(-(2**31), 2**31, P)                # ClassLoader.hashCode()
        self.skew_ms = np.rint(rng.normal(0.0, w.producer_clock_skew_ms, P)).astype(np.int64) \
            if w.producer_clock_skew_ms > 0 else np.zeros(P, np.int64)
        self.rr_start = rng.integers(0, 2**31, P * T)              # ThreadLocalIndex's random start
        self.ip = [ipaddress.IPv6Address(f"2001:db8:0:1::{p + 1:x}") if self.v6[p]
                   else ipaddress.IPv4Address(f"10.1.{p // 250}.{p % 250 + 2}") for p in range(P)]
        self.born_hosts = pa.array([format_host(a.packed, int(port)) for a, port in zip(self.ip, ports)],
                                   pa.string())
        self.born_flag = np.where(self.v6, BORNHOST_V6_FLAG, 0).astype(np.int32)
        store_ip, store_port = parse_host(w.broker_host)
        self.store_host = format_host(store_ip, store_port)
        self.store_flag = STOREHOSTADDRESS_V6_FLAG if len(store_ip) == 16 else 0

        self.topic_names = pa.array(list(w.topics) + [SCHEDULE_TOPIC], pa.string())
        weights = np.ones(T) if w.topic_weights is None else np.asarray(w.topic_weights, float)
        self.topic_cdf = np.cumsum(weights) / weights.sum()
        self.delay_ms = parse_delay_levels(w.delay_level_table)
        self.levels = np.asarray(w.delay_levels, np.int64)
        self.level_delay_s = np.zeros(len(self.delay_ms) + 1)
        for lv, ms in self.delay_ms.items():
            self.level_delay_s[lv] = ms / 1000.0
        # Zipf over ranks 1..hot_keys
        ranks = np.arange(1, w.hot_keys + 1, dtype=np.float64)
        cdf = np.cumsum(ranks ** -w.zipf_s)
        self.zipf_cdf = cdf / cdf[-1]
        self.hot_vocab = _prefixed(w.hot_key_prefix, np.arange(1, w.hot_keys + 1))
        # colliding keys, interleaved: 2i = <prefix>Aa<i>, 2i+1 = <prefix>BB<i>
        pairs = np.arange(w.collision_pairs)
        self.coll_vocab = pa.concat_arrays([_prefixed(w.order_key_prefix + "Aa", pairs),
                                            _prefixed(w.order_key_prefix + "BB", pairs)]).take(
            pa.array(np.arange(2 * w.collision_pairs).reshape(2, -1).T.reshape(-1) if w.collision_pairs
                     else np.zeros(0, np.int64)))
        self.tag_names = pa.array(list(w.tags), pa.string())
        self.store_host_bytes = np.frombuffer(self.store_host.encode(), np.uint8)
        self.props = _PropertyBuilder(self)
        # UNIQ_KEY: the fixed part (address, pid, class-loader hash) of each producer as hex
        # text, made by msgid.create_uniq_id (the last 12 digits are the per-message part)
        self.uniq_prefixes = [create_uniq_id(a.packed, int(self.pid[p]), int(self.clh[p]), w.start_ms, 0,
                                             tz=w.timezone)[:-12] for p, a in enumerate(self.ip)]
        self.month_starts = _MonthStarts(w.timezone)
        # the body tape: text, seed-derived, doubled so any window of _TAPE_LEN is one slice
        tape = _TAPE_ALPHABET[np.random.default_rng([w.seed, _TAG_TAPE]).integers(
            0, len(_TAPE_ALPHABET), _TAPE_LEN)]
        self.tape2 = np.concatenate([tape, tape])
        # backward steps of the broker clock: at these send numbers (sorted)
        k = w.broker_clock_steps
        self.step_at = (np.sort(np.random.default_rng([w.seed, _TAG_STEPS]).choice(
            w.messages - 1, size=k, replace=False)) + 1) if k else np.zeros(0, np.int64)


class _PropertyBuilder:
    """Builds the properties block of many messages with one Arrow join.

    The block is ``NAME\x01value\x02`` per property in :data:`PROPERTY_ORDER`. Only UNIQ_KEY
    and KEYS carry free text; every other property is a function of a few small codes (the
    transaction flag, the delay level, the tag, the real topic and queue of a delayed message,
    whether KEYS is present). Runs of such properties between the two free-text ones, together
    with the free-text ones' ``NAME\x01`` and ``\x02``, are folded into one lookup table per
    run, indexed by a mixed-radix code of the factors the run uses: the block is then a join of
    about five inputs instead of ten, which is what makes it fast.
    """

    # factor -> number of values; fragment(name, factor values) below says how each is used
    _LIMIT = 1 << 16          # largest lookup table; bigger runs are split

    def __init__(self, s: _Setup):
        w = s.w
        # a feature that is off has one value: it then costs nothing in the codes
        delayed = w.delay_fraction > 0
        self.sizes = {"txn": 2 if w.transaction_fraction > 0 else 1,
                      "level": len(s.delay_ms) + 1 if delayed else 1, "tag": len(w.tags) + 1,
                      "rtopic": len(w.topics) + 1 if delayed else 1,
                      "rqid": w.queues_per_topic + 1 if delayed else 1,
                      "haskeys": 2 if w.keyless_fraction > 0 else 1}
        tags, topics, uniq_on, cluster = w.tags, w.topics, w.uniq_key, w.cluster
        self.drop_final_separator = not layout_facts(w.broker_version).final_property_separator

        def frag(name: str, f: dict) -> str:
            v = {"CLUSTER": cluster,
                 "PGROUP": w.producer_group if f.get("txn") else None,
                 "DELAY": str(f["level"]) if f.get("level") else None,
                 "TAGS": tags[f["tag"] - 1] if f.get("tag") else None,
                 "TRAN_MSG": "true" if f.get("txn") else None,
                 "WAIT": "true",
                 "REAL_TOPIC": topics[f["rtopic"] - 1] if f.get("rtopic") else None,
                 "REAL_QID": str(f["rqid"] - 1) if f.get("rqid") else None}[name]
            return "" if v is None else f"{name}\x01{v}\x02"

        uses = {"CLUSTER": (), "PGROUP": ("txn",), "DELAY": ("level",), "TAGS": ("tag",),
                "TRAN_MSG": ("txn",), "WAIT": (), "REAL_TOPIC": ("rtopic",), "REAL_QID": ("rqid",)}
        # atoms: ("cat", factors, fn(f) -> str) or ("var", column name)
        atoms: list[tuple] = []
        for name in PROPERTY_ORDER:
            if name == "UNIQ_KEY":
                if uniq_on:
                    atoms += [("cat", (), lambda f: "UNIQ_KEY\x01"), ("var", "uniq"),
                              ("cat", (), lambda f: "\x02")]
            elif name == "KEYS":
                atoms += [("cat", ("haskeys",), lambda f: "KEYS\x01" if f["haskeys"] else ""),
                          ("var", "keys"),
                          ("cat", ("haskeys",), lambda f: "\x02" if f["haskeys"] else "")]
            else:
                atoms.append(("cat", uses[name], lambda f, name=name: frag(name, f)))
        # merge neighbouring categorical atoms while the table stays small
        self.inputs: list[tuple] = []     # ("var", col) | ("table", factors, pa.Array) | ("const", str)
        run: list[tuple] = []

        def flush():
            if not run:
                return
            factors = tuple(sorted({x for a in run for x in a[1] if self.sizes[x] > 1}))
            ranges = [range(self.sizes[x]) for x in factors]
            import itertools

            fixed = {x: (1 if x == "haskeys" else 0) for x in self.sizes if self.sizes[x] == 1}
            table = ["".join(a[2]({**fixed, **dict(zip(factors, combo))}) for a in run)
                     for combo in itertools.product(*ranges)]
            if len(table) == 1:
                if table[0]:
                    self.inputs.append(("const", table[0]))
            else:
                self.inputs.append(("table", factors, pa.array(table, pa.string())))
            run.clear()

        for a in atoms:
            if a[0] == "var":
                flush()
                self.inputs.append(a)
                continue
            factors = {x for b in run for x in b[1]} | set(a[1])
            if math.prod(self.sizes[x] for x in factors) > self._LIMIT:
                flush()
            run.append(a)
        flush()

    def build(self, cols: dict[str, pa.Array], codes: dict[str, np.ndarray]) -> pa.Array:
        """The properties column: `cols` has the free-text columns ("uniq", "keys"; nulls =
        absent), `codes` an int array per factor."""
        args = []
        for inp in self.inputs:
            if inp[0] == "var":
                args.append(cols[inp[1]])
            elif inp[0] == "const":
                args.append(inp[1])
            else:
                code = np.zeros(len(next(iter(codes.values()))), np.int64)
                for x in inp[1]:               # itertools.product order: last factor fastest
                    code = code * self.sizes[x] + codes[x]
                args.append(inp[2].take(pa.array(code)))
        # a null free-text column (no UNIQ_KEY / no KEYS) adds nothing; its NAME\x01 and \x02
        # come from the tables only when present
        block = pc.binary_join_element_wise(*args, "", null_handling="replace", null_replacement="")
        if self.drop_final_separator:   # values hold no \x02: only the final separator goes
            block = pc.utf8_rtrim(block, characters="\x02")
        return block


class _MonthStarts:
    """Start of the month (ms) holding each timestamp, in a time zone; the few boundaries
    involved are computed once each with msgid.month_start_ms and cached."""

    def __init__(self, tz: str):
        self.tz = tz
        self.bounds = np.zeros(0, np.int64)

    def __call__(self, ts: np.ndarray) -> np.ndarray:
        lo, hi = int(ts.min()), int(ts.max())
        if not len(self.bounds) or lo < self.bounds[0] or hi >= self._next(int(self.bounds[-1])):
            b = [month_start_ms(lo, self.tz)]
            while (nxt := self._next(b[-1])) <= hi:
                b.append(nxt)
            self.bounds = np.array(b, np.int64)
        return self.bounds[np.searchsorted(self.bounds, ts, side="right") - 1]

    def _next(self, start: int) -> int:
        return month_start_ms(start + 32 * _DAY * 1000, self.tz)


def _prefixed(prefix: str, numbers: np.ndarray) -> pa.Array:
    """prefix + decimal number, as a string array (vectorized)."""
    digits = pc.cast(pa.array(numbers, pa.int64()), pa.string())
    return pc.binary_join_element_wise(prefix, digits, "") if prefix else digits


def _cumcount(groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row, how many earlier rows share its group; and the row count of each group."""
    counts = np.bincount(groups, minlength=n_groups)
    # a stable sort of small ints is a radix sort in NumPy: O(n), against O(n log n) on int64
    keys = groups.astype(np.uint16) if n_groups <= 1 << 16 else groups
    order = np.argsort(keys, kind="stable")
    first = np.cumsum(counts) - counts
    rank = np.empty(len(groups), np.int64)
    rank[order] = np.arange(len(groups)) - first[groups[order]]
    return rank, counts


# ------------------------------------------------------------------------------ generation


_NUM = ("t", "src", "topic_code", "queue", "sys_flag", "born_ts", "producer", "delay_level", "prepared")
_ARR = ("body", "properties", "keys", "uniq_key", "tags")


class _Records:
    """A bundle of records: NumPy columns (_NUM) and Arrow columns (_ARR), all the same length.
    `t` is the broker arrival in true seconds after start_ms; `src` the global number of the
    producer send the record comes from (itself, for a send)."""

    __slots__ = _NUM + _ARR

    def __init__(self, **cols):
        for k in self.__slots__:
            setattr(self, k, cols[k])

    def __len__(self):
        return len(self.t)

    def take(self, idx: np.ndarray) -> _Records:
        ia = pa.array(idx, pa.int64())
        return _Records(**{k: getattr(self, k)[idx] for k in _NUM},
                        **{k: getattr(self, k).take(ia) for k in _ARR})

    def slice(self, lo: int, hi: int) -> _Records:
        """Rows lo..hi-1 without copying (NumPy views, Arrow slices)."""
        return _Records(**{k: getattr(self, k)[lo:hi] for k in _NUM},
                        **{k: getattr(self, k).slice(lo, hi - lo) for k in _ARR})

    @staticmethod
    def concat(parts: list[_Records | None]) -> _Records | None:
        """The records of `parts` in order; None when there are none."""
        parts = [p for p in parts if p is not None and len(p)]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return _Records(**{k: np.concatenate([getattr(p, k) for p in parts]) for k in _NUM},
                        **{k: pa.concat_arrays([getattr(p, k) for p in parts]) for k in _ARR})


class _Pending:
    """Derived records not yet written, kept so that the due ones come off the front.

    Decision records wait in one queue sorted by time (they are due within about a second).
    Delivered copies wait in one FIFO per delay level: ScheduleMessageService delivers each
    level's queue in order, so their times only grow (see _derived) and each FIFO is sorted
    without ever re-sorting what waits (a 2 h level can hold millions of records).
    """

    def __init__(self, levels: int):
        self.decisions: _Records | None = None
        self.levels: list[list[_Records]] = [[] for _ in range(levels + 1)]

    def add_decisions(self, r: _Records | None):
        both = _Records.concat([self.decisions, r])
        self.decisions = None if both is None else both.take(np.argsort(both.t, kind="stable"))

    def add_deliveries(self, level: int, r: _Records):
        self.levels[level].append(r)

    def pop_due(self, horizon: float) -> list[_Records]:
        """Remove and return every record with t <= horizon (decisions first, then by level)."""
        out = []
        if self.decisions is not None:
            k = int(np.searchsorted(self.decisions.t, horizon, side="right"))
            if k:
                out.append(self.decisions.slice(0, k))
                self.decisions = self.decisions.slice(k, len(self.decisions)) if k < len(self.decisions) else None
        for fifo in self.levels:
            while fifo:
                head = fifo[0]
                k = int(np.searchsorted(head.t, horizon, side="right"))
                if k == len(head):
                    out.append(fifo.pop(0))
                    continue
                if k:
                    out.append(head.slice(0, k))
                    fifo[0] = head.slice(k, len(head))
                break
        return out


class _State:
    """What carries from one block to the next."""

    def __init__(self, s: _Setup):
        w = s.w
        self.s_cum = 0.0                                   # the unit Poisson process so far
        self.profile = RateProfile(w)
        self.rr = np.zeros(w.producers * len(w.topics), np.int64)
        self.uniq_counter = np.zeros(w.producers, np.int64)
        self.order_counter = w.first_order_id
        self.tape_pos = 0
        self.q_next = np.zeros((len(w.topics) + 1) * _qmax(s), np.int64)
        self.row = 0                                       # rows emitted so far
        self.step_times = np.zeros(0)                      # true times of steps seen so far
        self.pending = _Pending(len(s.delay_ms))
        self.last_delivery = np.full(len(s.delay_ms) + 1, -np.inf)   # per level
        self.lmq_next: dict[tuple[str, int], int] = {}     # the broker's lmqTopicQueueTable


def _qmax(s: _Setup) -> int:
    return max(s.w.queues_per_topic, len(s.delay_ms))


def _primaries(s: _Setup, st: _State, block: int, g0: int, n: int, bodies: bool = True):
    """The `n` producer sends of block `block` (global send numbers g0..g0+n-1), plus what is
    needed to derive their decision records and delivered copies. Features that are off draw
    no random numbers (so they cost nothing)."""
    w = s.w
    rng = np.random.default_rng([w.seed, _TAG_BLOCK, block])
    T, Q = len(w.topics), w.queues_per_topic

    # arrivals: a unit Poisson process through Λ⁻¹
    cum = st.s_cum + np.cumsum(rng.standard_exponential(n))
    st.s_cum = float(cum[-1])
    t = st.profile.invert(cum)
    producer = rng.integers(0, w.producers, n)
    topic = np.minimum(np.searchsorted(s.topic_cdf, rng.random(n), side="right"), T - 1) if T > 1 \
        else np.zeros(n, np.int64)
    zeros = np.zeros(n, np.int64)
    txn = delayed = np.zeros(n, bool)
    if w.transaction_fraction > 0 or w.delay_fraction > 0:
        kind_u = rng.random(n)
        txn = kind_u < w.transaction_fraction
        delayed = (kind_u >= w.transaction_fraction) & (kind_u < w.transaction_fraction + w.delay_fraction)
    level = zeros
    n_delayed = int(delayed.sum())
    if n_delayed:
        level = zeros.copy()
        level[delayed] = s.levels[rng.integers(0, len(s.levels), n_delayed)]
    if w.network_delay_ms > 0:
        latency = rng.standard_exponential(n) * (w.network_delay_ms / 1000.0)
    else:
        latency = np.zeros(n)

    # queues: round robin per (producer, topic)
    g = producer * T + topic if T > 1 else producer
    rank, counts = _cumcount(g, w.producers * T)
    real_queue = (s.rr_start[g] + st.rr[g] + rank) % Q
    st.rr += counts

    # clocks: the producer's clock at the send (born), the broker's at arrival (store: later)
    born_ts = w.start_ms + np.floor((t - latency) * 1000.0).astype(np.int64)
    if w.producer_clock_skew_ms > 0:
        born_ts += s.skew_ms[producer]
    new_steps = s.step_at[(s.step_at >= g0) & (s.step_at < g0 + n)] - g0
    if len(new_steps):
        st.step_times = np.concatenate([st.step_times, t[new_steps]])

    keys, has_keys = _keys(s, st, rng, n)
    if w.tags:
        tags_idx = rng.integers(1, len(w.tags) + 1, n)
        tags_col = s.tag_names.take(pa.array(tags_idx - 1))
    else:
        tags_idx, tags_col = zeros, pa.nulls(n, pa.string())

    # bodies: lognormal sizes, consecutive windows of the tape
    if w.body_sigma > 0:
        size = np.exp(rng.standard_normal(n) * w.body_sigma + math.log(w.body_median))
        size = np.clip(np.rint(size), w.body_min, w.body_max).astype(np.int64)
    else:
        size = np.full(n, min(max(w.body_median, w.body_min), w.body_max), np.int64)
    body = _tape_bodies(s, st, size, bodies)

    # UNIQ_KEY: MessageClientIDSetter, a counter per producer JVM from 0
    uniq = None
    if w.uniq_key:
        # one topic: the (producer, topic) groups above are the producers already
        crank, ccounts = (rank, counts) if T == 1 else _cumcount(producer, w.producers)
        counter = st.uniq_counter[producer] + crank
        st.uniq_counter += ccounts
        uniq = _uniq_keys(s, producer, born_ts, counter)

    # where it is stored: delayed sends wait in SCHEDULE_TOPIC_XXXX, queue level-1
    topic_code, queue = topic, real_queue
    rtopic = rqid = zeros
    if n_delayed:
        topic_code = np.where(delayed, T, topic)
        queue = np.where(delayed, level - 1, real_queue)
        rtopic = np.where(delayed, topic + 1, 0)
        rqid = np.where(delayed, real_queue + 1, 0)
    sys_flag = s.born_flag[producer] | s.store_flag
    if txn.any():
        sys_flag = sys_flag | np.where(txn, TRANSACTION_PREPARED_TYPE, TRANSACTION_NOT_TYPE).astype(np.int32)

    props = s.props.build({"uniq": uniq, "keys": keys},
                          {"txn": txn.view(np.int8), "level": level, "tag": tags_idx,
                           "rtopic": rtopic, "rqid": rqid, "haskeys": has_keys.view(np.int8)})

    recs = _Records(t=t, src=g0 + np.arange(n), topic_code=topic_code, queue=queue,
                    sys_flag=sys_flag.astype(np.int32), born_ts=born_ts, producer=producer,
                    delay_level=level.astype(np.int32), prepared=np.full(n, -1, np.int64), body=body,
                    properties=props, keys=keys,
                    uniq_key=uniq if uniq is not None else pa.nulls(n, pa.string()), tags=tags_col)
    # transaction outcomes and delays, delivery jitter: drawn for the rows that need them
    n_txn = int(txn.sum())
    extra = dict(txn_rows=np.flatnonzero(txn), outcome_u=rng.random(n_txn),
                 decision_delay=rng.standard_exponential(n_txn) * (w.decision_delay_ms / 1000.0),
                 delayed_rows=np.flatnonzero(delayed), delivery_jitter=rng.random(n_delayed) * _DELIVERY_POLL_S,
                 level=level, topic=topic, real_queue=real_queue)
    return recs, extra


def _keys(s: _Setup, st: _State, rng: np.random.Generator, n: int) -> tuple[pa.Array, np.ndarray]:
    """KEYS strings (null = no keys): unique order ids, Zipf hot keys, colliding keys; and
    which messages have keys."""
    w = s.w
    has = rng.random(n) >= w.keyless_fraction
    m = w.max_keys_per_message
    p = (w.keys_per_message - 1.0) / (m - 1) if m > 1 else 0.0
    nk = (1 + rng.binomial(m - 1, p, n)) * has if p > 0 else has.astype(np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(nk, out=offsets[1:])
    total = int(offsets[-1])
    hot = rng.random(total) < w.hot_key_fraction
    rank = np.zeros(total, np.int64)
    rank[hot] = np.minimum(np.searchsorted(s.zipf_cdf, rng.random(int(hot.sum())), side="right"),
                           w.hot_keys - 1)
    coll = np.zeros(total, bool)
    cidx = np.zeros(total, np.int64)
    if w.collision_pairs:
        pick = has & (rng.random(n) < w.collision_fraction)
        which = rng.integers(0, 2 * w.collision_pairs, n)
        first = offsets[:-1][pick]
        coll[first] = True
        cidx[first] = which[pick]
    unique = ~hot & ~coll
    nu = int(unique.sum())
    order_ids = _prefixed(w.order_key_prefix, np.arange(st.order_counter, st.order_counter + nu))
    st.order_counter += nu
    # one take from [order ids | hot vocabulary | colliding keys]
    idx = np.empty(total, np.int64)
    idx[unique] = np.arange(nu)
    idx[hot & ~coll] = nu + rank[hot & ~coll]
    idx[coll] = nu + w.hot_keys + cidx[coll]
    vocab = pa.concat_arrays([order_ids, s.hot_vocab, s.coll_vocab])
    if total == int(has.sum()):
        # at most one token a message: KEYS is the token itself (null where there is none)
        per_msg = np.zeros(n, np.int64)
        per_msg[has] = idx
        return vocab.take(pa.array(per_msg, mask=~has)), has
    tokens = vocab.take(pa.array(idx, pa.int64()))
    lists = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), tokens, mask=pa.array(~has))
    return pc.binary_join(lists, KEY_SEPARATOR), has


def _tape_bodies(s: _Setup, st: _State, size: np.ndarray, content: bool = True) -> pa.Array:
    """Bodies as consecutive windows of the text tape: one buffer, no per-message copy.
    Without `content`, zero bytes of the same sizes (calloc'd: no page is touched)."""
    n = len(size)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(size, out=offsets[1:])
    total = int(offsets[-1])
    start = st.tape_pos % _TAPE_LEN
    if content:
        data = np.resize(s.tape2[start:start + _TAPE_LEN], total)   # repeats the window cyclically
    else:
        data = np.zeros(total, np.uint8)
    st.tape_pos = (st.tape_pos + total) % _TAPE_LEN
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets),
                                                                    pa.py_buffer(data)])


def _uniq_keys(s: _Setup, producer: np.ndarray, born_ts: np.ndarray, counter: np.ndarray) -> pa.Array:
    """UNIQ_KEY of each send (MessageClientIDSetter.createUniqID at the born time), built by
    msgid.uniq_ids_arrow straight into an Arrow string buffer."""
    # ms since the start of the id's own month (>= 0; its low 32 bits are Java's (int) cast)
    return uniq_ids_arrow(s.uniq_prefixes, producer, born_ts - s.month_starts(born_ts), counter)


def _derived(s: _Setup, st: _State, recs: _Records, extra: dict) -> None:
    """Make the decision records and delivered copies of this block's sends and queue them
    in st.pending."""
    w = s.w
    rows, u = extra["txn_rows"], extra["outcome_u"]
    decided = u < w.commit_fraction + w.rollback_fraction
    if decided.any():
        dec = rows[decided]
        is_rb = u[decided] >= w.commit_fraction
        d = recs.take(dec)
        # a decision arrives strictly after its half message (a zero delay still queues behind it)
        d.t = recs.t[dec] + np.maximum(extra["decision_delay"][decided], 1e-6)
        tran = np.where(is_rb, TRANSACTION_ROLLBACK_TYPE, TRANSACTION_COMMIT_TYPE)
        d.sys_flag = ((d.sys_flag & ~TRANSACTION_MASK) | tran).astype(np.int32)
        if is_rb.any():
            # EndTransactionProcessor (<= 4.2): a rollback record has setBody(null): no body bytes
            d.body = pc.if_else(pa.array(is_rb), pa.scalar(b"", pa.large_binary()), d.body)
        st.pending.add_decisions(d)
    drows, jitter = extra["delayed_rows"], extra["delivery_jitter"]
    dlevel = extra["level"][drows]
    for lv in np.unique(dlevel):
        sel = dlevel == lv
        rows = drows[sel]
        d = recs.take(rows)
        # due at store time + the level's delay; the level's timer delivers its queue in order,
        # polling every 100 ms when idle: a jitter, then a running maximum keeps the order
        due = recs.t[rows] + s.level_delay_s[lv] + jitter[sel]
        due = np.maximum.accumulate(np.maximum(due, st.last_delivery[lv]))
        st.last_delivery[lv] = due[-1]
        d.t = due
        # the delivered copy goes to the real topic and queue; its properties keep DELAY and
        # REAL_TOPIC / REAL_QID (messageTimeUp serializes them before clearing DELAY)
        d.topic_code = extra["topic"][rows]
        d.queue = extra["real_queue"][rows]
        st.pending.add_deliveries(int(lv), d)


def _blocks(w: Workload, bodies: bool = True) -> Iterator[pa.Table]:
    """Tables of CommitLog records, one per internal block of sends, in CommitLog order."""
    s = _Setup(w)
    st = _State(s)
    n_blocks = -(-w.messages // BLOCK_MESSAGES)
    for b in range(n_blocks):
        g0 = b * BLOCK_MESSAGES
        n = min(BLOCK_MESSAGES, w.messages - g0)
        recs, extra = _primaries(s, st, b, g0, n, bodies)
        _derived(s, st, recs, extra)
        last = b == n_blocks - 1
        # everything due by this block's last send; at the end, all of it if draining
        horizon = np.inf if (last and w.drain) else float(recs.t[-1])
        due = st.pending.pop_due(horizon)
        if not due:
            batch, order = recs, None
        else:
            batch = _Records.concat(due + [recs])
            # a stable sort by arrival gives the CommitLog order (sends arrive in order)
            order = np.argsort(batch.t, kind="stable")
            if np.array_equal(order, np.arange(len(order))):
                order = None
        n_due = len(batch) - n
        if order is None:
            send_row = st.row + n_due + np.arange(n)
        else:
            pos = np.empty(len(order), np.int64)
            pos[order] = np.arange(len(order))
            send_row = st.row + pos[n_due:]
        # decisions point at their half message's row: fill in those whose half is in this block
        for r in [batch] + ([st.pending.decisions] if st.pending.decisions is not None else []):
            mine = np.flatnonzero((r.prepared < 0) & (r.src >= g0)
                                  & (transaction_type(r.sys_flag) >= TRANSACTION_COMMIT_TYPE))
            if len(mine):
                r.prepared = r.prepared.copy()
                r.prepared[mine] = send_row[r.src[mine] - g0]
        if order is not None:
            batch = batch.take(order)
        yield _table(s, st, batch)
        st.row += len(batch)


def _repeat_str(value: np.ndarray, n: int) -> pa.Array:
    """A string array of `n` copies of one UTF-8 value, built from buffers."""
    k = len(value)
    offsets = np.arange(0, (n + 1) * k, k, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(np.tile(value, n)))


def _table(s: _Setup, st: _State, r: _Records) -> pa.Table:
    w = s.w
    n = len(r)
    # the broker clock: true time minus the backward steps already taken
    steps = np.searchsorted(st.step_times, r.t, side="right") if len(st.step_times) else 0
    store_ts = w.start_ms + np.floor(r.t * 1000.0).astype(np.int64) - steps * w.broker_clock_step_ms
    # queue offsets: per (topic, queue), in this order, only for NOT_TYPE and COMMIT_TYPE
    q_before = st.q_next.copy() if (w.batch_cq_topics or w.multi_dispatch_every) else None
    qoff = assign_queue_offsets_coded(r.topic_code * _qmax(s) + r.queue, r.sys_flag, st.q_next)
    sys_flag, properties = r.sys_flag, r.properties
    if q_before is not None:
        sys_flag, properties = _store_features(s, st, r, qoff, q_before)
    cols = [
        s.topic_names.take(pa.array(r.topic_code)),
        pa.array(r.queue.astype(np.int32)),
        pa.array(np.full(n, w.flag, np.int32)),
        pa.array(sys_flag.astype(np.int32)),
        pa.array(r.born_ts.astype(np.int64)),
        s.born_hosts.take(pa.array(r.producer)),
        pa.array(store_ts),
        _repeat_str(s.store_host_bytes, n),
        pa.array(np.zeros(n, np.int32)),
        r.body,
        properties,
        r.keys,
        r.uniq_key,
        r.tags,
        pa.array(r.delay_level.astype(np.int32)),
        pa.array(r.prepared.astype(np.int64)),
        pa.array(r.producer.astype(np.int32)),
        pa.array(qoff),
    ]
    return pa.Table.from_arrays(cols, schema=SCHEMA)


def _append_properties(block: str, pairs: list[tuple[str, str]]) -> str:
    text = "\x02".join(f"{k}\x01{v}" for k, v in pairs)
    if block and not block.endswith("\x02"):
        return block + "\x02" + text          # a block written without its final separator
    return block + text + "\x02"


def _store_features(s: _Setup, st: _State, r: _Records, qoff: np.ndarray,
                    q_before: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """Inner batches (BatchCQ topics) and multi-dispatch to light message queues: rewrites
    `qoff` in place and returns (sys_flag, properties). A Python loop over the affected rows
    only; workloads without these features never come here."""
    w = s.w
    sys_flag = r.sys_flag.astype(np.int64).copy()
    props = r.properties.to_pylist()
    row_no = st.row + np.arange(len(r), dtype=np.int64)
    codes = r.topic_code * _qmax(s) + r.queue
    plain = transaction_type(sys_flag) == TRANSACTION_NOT_TYPE
    if w.batch_cq_topics:
        batch_codes = [i for i, t in enumerate(w.topics) if t in w.batch_cq_topics]
        rows = np.flatnonzero(np.isin(r.topic_code, batch_codes) & goes_to_consume_queue_many(sys_flag))
        nxt = q_before.copy()
        for row in rows:
            c, k = int(codes[row]), 1 + int(row_no[row] * 2654435761 % w.inner_batch_max)
            qoff[row] = nxt[c]
            nxt[c] += k
            sys_flag[row] |= INNER_BATCH_FLAG | NEED_UNWRAP_FLAG
            props[row] = _append_properties(props[row], [(PROPERTY_INNER_NUM, str(k)),
                                                         (PROPERTY_INNER_BASE, str(int(qoff[row])))])
        touched = np.unique(codes[rows])
        st.q_next[touched] = nxt[touched]
    if w.multi_dispatch_every and w.lmq_queues:
        n, lmq = w.multi_dispatch_every, w.lmq_queues
        simple = np.array([t not in w.batch_cq_topics for t in w.topics] + [False])
        rows = np.flatnonzero(plain & (r.delay_level == 0) & simple[r.topic_code] & (row_no % n == 0))
        for row in rows:
            j = int(row_no[row] // n)
            names = [lmq[j % len(lmq)]] + ([lmq[(j + 1) % len(lmq)]] if len(lmq) > 1 else [])
            offsets = assign_lmq_offsets(names, int(r.queue[row]), st.lmq_next, broker_version=w.broker_version)
            props[row] = _append_properties(props[row], [(PROPERTY_INNER_MULTI_DISPATCH, ",".join(names)),
                                                         (PROPERTY_INNER_MULTI_QUEUE_OFFSET, offsets)])
    return sys_flag, pa.array(props, pa.string())


def generate_chunks(w: Workload, chunk_messages: int = 1_000_000, *, bodies: bool = True) -> Iterator[pa.Table]:
    """Yield the workload's CommitLog records as Tables of `chunk_messages` rows (the last one
    shorter), in CommitLog order. Concatenated, they are exactly :func:`generate`'s table, for
    any chunk size. Memory: about one chunk plus one block of :data:`BLOCK_MESSAGES` sends and
    the derived records still pending (delayed deliveries: up to the longest delay's worth).
    Cost: O(rows + bytes), vectorized. With ``bodies=False`` every body is zero bytes of its
    usual size (same rows otherwise, record sizes included) and costs nothing to make: for
    uses that only need the sizes, such as index keys and their CommitLog offsets.

    >>> w = Workload(messages=10, seed=3)
    >>> [t.num_rows for t in generate_chunks(w, chunk_messages=4)]
    [4, 4, 2]
    >>> pa.concat_tables(generate_chunks(w, 4)).equals(generate(w))
    True
    """
    if not isinstance(chunk_messages, (int, np.integer)) or chunk_messages < 1:
        raise ValueError(f"chunk_messages must be a positive int, got {chunk_messages!r}")
    buf: list[pa.Table] = []
    have = 0
    for tbl in _blocks(w, bodies):
        buf.append(tbl)
        have += tbl.num_rows
        while have >= chunk_messages:
            whole = pa.concat_tables(buf) if len(buf) > 1 else buf[0]
            out = whole.slice(0, chunk_messages)
            yield out
            rest = whole.slice(chunk_messages)
            buf, have = ([rest] if rest.num_rows else []), rest.num_rows
    if have:
        whole = pa.concat_tables(buf) if len(buf) > 1 else buf[0]
        yield whole


def generate(w: Workload) -> pa.Table:
    """All CommitLog records of the workload as one Table (columns :data:`SCHEMA`), in CommitLog
    order: producer sends by arrival, with decision records and delivered copies of delayed
    messages merged in by their own arrival (ties keep creation order). Cost: O(rows + bytes),
    vectorized a block at a time; each feature turned on adds its own passes over the rows it
    touches (benchmarks/bench_workload.py measures both).

    >>> t = generate(Workload(messages=1000, transaction_fraction=0.2, delay_fraction=0.1,
    ...                       delay_levels=(1,), drain=True))
    >>> t.num_rows > 1000, set(t.column("topic").to_pylist()) == {"TopicTest", "SCHEDULE_TOPIC_XXXX"}
    (True, True)
    """
    chunks = list(_blocks(w))
    if not chunks:
        return SCHEMA.empty_table()
    return pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]


# ---------------------------------------------------------------------------------- describe


def describe(table: Any, top_keys: int = 5) -> pd.DataFrame:
    """Summary statistics of a message table (:data:`SCHEMA` columns; a pandas DataFrame works
    too), as a long DataFrame with columns ``section``, ``item``, ``value``:

    * ``records``: rows, producer sends, decision records, delivered copies, producers;
    * ``topic`` / ``queue``: rows per topic and per ``topic/queue``;
    * ``keys``: keys per message (mean over all rows and over keyed rows, max), share of rows
      without keys, distinct keys, rows with UNIQ_KEY; ``hot key``: the `top_keys` most
      frequent KEYS tokens and their counts;
    * ``time``: first/last store time (ms), span (s), store-time steps backwards;
      ``rate``: records per store second (mean, p50, p90, p99, max);
    * ``fraction``: transactional sends, rolled back / committed / undecided (of those),
      delayed sends, IPv6 born hosts, IPv6 store host.

    Cost: O(rows + key bytes).

    >>> d = describe(generate(Workload(messages=2000, rate=500.0)))
    >>> d.set_index(["section", "item"]).loc[("records", "rows"), "value"]
    2000
    """
    import pandas as pd

    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False) if hasattr(table, "columns") \
            else pa.table(table)
    rows: list[tuple[str, str, Any]] = []
    n = table.num_rows

    def add(section: str, item: str, value: Any) -> None:
        rows.append((section, item, value))

    def col(name: str) -> np.ndarray:
        return table.column(name).to_numpy(zero_copy_only=False) if n else np.zeros(0)

    sys_flag = col("sys_flag").astype(np.int64)
    tran = transaction_type(sys_flag)
    topic = table.column("topic")
    delay = col("delay_level")
    is_sched = np.asarray(pc.equal(topic, SCHEDULE_TOPIC).to_numpy(zero_copy_only=False), bool) if n \
        else np.zeros(0, bool)
    decision = (tran == TRANSACTION_COMMIT_TYPE) | (tran == TRANSACTION_ROLLBACK_TYPE)
    delivered = (delay > 0) & ~is_sched
    sends = ~decision & ~delivered
    n_sends = int(sends.sum())
    add("records", "rows", n)
    add("records", "producer sends", n_sends)
    add("records", "decision records", int(decision.sum()))
    add("records", "delivered copies", int(delivered.sum()))
    add("records", "producers", int(len(np.unique(col("producer")))))
    if n:
        vc = pc.value_counts(topic)
        for v in sorted(zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist())):
            add("topic", v[0], int(v[1]))
        tq = pd.DataFrame({"t": topic.to_pandas(), "q": col("queue_id")}).groupby(["t", "q"]).size()
        for (t, q), c in tq.items():
            add("queue", f"{t}/{q}", int(c))

    keys = table.column("keys")
    tokens = key_tokens_many(keys)
    per = np.asarray(pc.fill_null(pc.list_value_length(tokens), 0).to_numpy(zero_copy_only=False)) if n \
        else np.zeros(0)
    keyed = per > 0
    add("keys", "keys per message (all rows)", float(per.mean()) if n else 0.0)
    add("keys", "keys per message (keyed rows)", float(per[keyed].mean()) if keyed.any() else 0.0)
    add("keys", "max keys per message", int(per.max()) if n else 0)
    add("keys", "rows without keys", float((~keyed).mean()) if n else 0.0)
    flat = pc.list_flatten(tokens)
    add("keys", "distinct keys", int(pc.count_distinct(flat).as_py()) if len(flat) else 0)
    add("keys", "rows with UNIQ_KEY", int(n - table.column("uniq_key").null_count))
    if len(flat):
        vc = pc.value_counts(flat)
        cnt = vc.field("counts").to_numpy()
        top = np.argsort(-cnt, kind="stable")[:top_keys]
        vals = vc.field("values")
        for i in top:
            add("hot key", vals[int(i)].as_py(), int(cnt[i]))

    st = col("store_timestamp").astype(np.int64)
    if n:
        add("time", "first store_timestamp (ms)", int(st.min()))
        add("time", "last store_timestamp (ms)", int(st.max()))
        add("time", "span (s)", float(st.max() - st.min()) / 1000.0)
        add("time", "store-time steps backwards", int((np.diff(st) < 0).sum()))
        sec = st // 1000
        per_s = np.bincount(sec - sec.min())
        add("rate", "mean records/s", float(n / max(len(per_s), 1)))
        for q in (50, 90, 99):
            add("rate", f"p{q} records/s", float(np.percentile(per_s, q)))
        add("rate", "max records/s", int(per_s.max()))
    txn_sends = int((sends & (tran == TRANSACTION_PREPARED_TYPE)).sum())

    def frac(a, b) -> float:
        return float(a) / b if b else 0.0

    add("fraction", "transactional sends", frac(txn_sends, n_sends))
    add("fraction", "rolled back (of transactional)", frac((tran == TRANSACTION_ROLLBACK_TYPE).sum(), txn_sends))
    add("fraction", "committed (of transactional)", frac((tran == TRANSACTION_COMMIT_TYPE).sum(), txn_sends))
    add("fraction", "undecided (of transactional)",
        frac(txn_sends - int(decision.sum()), txn_sends))
    add("fraction", "delayed sends", frac(int((sends & is_sched).sum()), n_sends))
    add("fraction", "IPv6 born hosts", frac(int(((sys_flag & BORNHOST_V6_FLAG) != 0).sum()), n))
    add("fraction", "IPv6 store host", frac(int(((sys_flag & STOREHOSTADDRESS_V6_FLAG) != 0).sum()), n))
    return pd.DataFrame({"section": [r[0] for r in rows], "item": [r[1] for r in rows],
                         # object: counts stay ints, shares floats
                         "value": pd.Series([r[2] for r in rows], dtype=object)})
