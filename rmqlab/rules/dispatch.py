"""What the broker does with each CommitLog message after storing it: the dispatch rules.

Mirrors, from the RocketMQ store (read in 4.9.7 and 5.x up to 5.3.3):

* ``MessageSysFlag``: the transaction type is bits 2-3 of SYSFLAG (``getTransactionValue``);
* ``CommitLogDispatcherBuildConsumeQueue`` / ``DefaultMessageStore`` dispatch: only
  NOT_TYPE and COMMIT_TYPE messages get a ConsumeQueue unit;
* ``CommitLogDispatcherBuildIndex`` / ``IndexService.buildIndex``: every message but a
  rolled-back one is indexed, under ``UNIQ_KEY`` first, then each non-empty token of ``KEYS``
  split on ``MessageConst.KEY_SEPARATOR`` (one space); from 5.4.0 (javap of
  rocketmq-store-5.4.0 / 5.5.0) then ``T#`` + TAGS when TAGS is non-empty
  (:func:`tag_index_key`; :attr:`rmqlab.rules.versions.LayoutFacts.index_tag_key`), the key
  ``queryOffset`` also builds for an index query of type "T" (:func:`index_query_key`);
* ``CommitLog.checkMessageAndReturnSize`` with ``MessageExtBrokerInner.tagsString2tagsCode``
  and ``computeDeliverTimestamp`` (``ScheduleMessageService`` in 4.x, ``DefaultMessageStore``
  in 5.x): the tags code of a ConsumeQueue unit, ``TAGS.hashCode()`` or, for a delayed message
  waiting in ``SCHEDULE_TOPIC_XXXX``, its delivery time;
* ``CommitLog``'s topicQueueTable: the QUEUEOFFSET a message is written with;
* BatchConsumeQueue (5.0.0+; read at rocketmq-all-5.3.1, commit b122c8109d62):
  ``QueueTypeUtils.getCQType`` (a topic is BatchCQ by its ``queue.type`` attribute),
  ``CommitLog.setBatchSizeIfNeeded`` with ``DispatchRequest``'s defaults (a unit's base and
  batch size) and ``CommitLog.getMessageNum`` (how far a message advances its queue);
* light message queues (4.9.3+; read at rocketmq-all-4.9.3 c7989f8574, 4.9.4 06f2208a34 and
  5.3.1 b122c8109d62): ``MultiDispatchUtils.checkMultiDispatchQueue`` (5.x) /
  ``DefaultMessageStore.checkMultiDispatchQueue`` (4.9.x) and ``ConsumeQueue.multiDispatchLmqQueue``
  (the extra ConsumeQueue units of a message naming queues in ``INNER_MULTI_DISPATCH``) and
  ``MultiDispatch.wrapMultiDispatch`` / ``updateMultiQueueOffset`` (the offsets it is given).
  4.9.x multi-dispatches messages of every topic and every name; 5.x leaves retry, system and
  schedule topics alone and skips names holding a path separator.

Each rule is written here once, as a scalar function (readable, one message) and, where callers
work on columns, a vectorized one (NumPy / Arrow, no Python loop per message) that the tests
hold equal to it. This module depends only on :mod:`rmqlab.jvm.hashcode` and NumPy (pyarrow and
pandas are imported by the functions that take their arrays), so the format modules can use it.

>>> goes_to_consume_queue(TRANSACTION_COMMIT_TYPE), goes_to_index(TRANSACTION_ROLLBACK_TYPE)
(True, False)
>>> index_keys(" a  b ", "U")
['U', 'a', 'b']
"""
from __future__ import annotations

from typing import Any

import numpy as np

from rmqlab.jvm.hashcode import java_hash, java_hash_many
from rmqlab.jvm.longs import wrap_long
from rmqlab.rules.properties import property_pairs

__all__ = [
    "TRANSACTION_MASK",
    "TRANSACTION_NOT_TYPE",
    "TRANSACTION_PREPARED_TYPE",
    "TRANSACTION_COMMIT_TYPE",
    "TRANSACTION_ROLLBACK_TYPE",
    "transaction_type",
    "goes_to_consume_queue",
    "goes_to_consume_queue_many",
    "goes_to_index",
    "goes_to_index_many",
    "KEY_SEPARATOR",
    "index_keys",
    "key_tokens_many",
    "index_keys_many",
    "TAG_INDEX_TYPE",
    "tag_index_key",
    "index_query_key",
    "tag_keys_many",
    "SCHEDULE_TOPIC",
    "DEFAULT_DELAY_LEVELS",
    "DELAY_LEVEL_TABLE",
    "parse_delay_levels",
    "compute_deliver_timestamp",
    "tags_code",
    "tags_codes",
    "message_tags_code",
    "message_tags_codes",
    "assign_queue_offsets_coded",
    "assign_queue_offsets",
    "next_queue_offsets",
    "NEED_UNWRAP_FLAG",
    "INNER_BATCH_FLAG",
    "PROPERTY_INNER_NUM",
    "PROPERTY_INNER_BASE",
    "QUEUE_TYPE_ATTRIBUTE",
    "CQ_TYPES",
    "cq_type",
    "property_value",
    "property_values",
    "batch_unit",
    "batch_units_many",
    "message_num",
    "LMQ_PREFIX",
    "MULTI_DISPATCH_QUEUE_SPLITTER",
    "PROPERTY_INNER_MULTI_DISPATCH",
    "PROPERTY_INNER_MULTI_QUEUE_OFFSET",
    "is_lmq",
    "handles_multi_dispatch",
    "lmq_dispatch",
    "lmq_dispatch_many",
    "assign_lmq_offsets",
]

# ------------------------------------------------------------------------ transaction types

#: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE doubles as the mask of getTransactionValue.
TRANSACTION_MASK = 0x3 << 2
TRANSACTION_NOT_TYPE = 0
TRANSACTION_PREPARED_TYPE = 0x1 << 2
TRANSACTION_COMMIT_TYPE = 0x2 << 2
TRANSACTION_ROLLBACK_TYPE = 0x3 << 2


def transaction_type(sys_flag: Any) -> Any:
    """MessageSysFlag.getTransactionValue: ``sys_flag & 0xC``, of an int or elementwise of an
    integer array. Cost: O(1) a message.

    >>> transaction_type(0x4 | 0x10), transaction_type(np.array([0x8, 0xD])).tolist()
    (4, [8, 12])
    """
    return sys_flag & TRANSACTION_MASK


def goes_to_consume_queue(sys_flag: int) -> bool:
    """True when the dispatch gives the message a ConsumeQueue unit: transaction type NOT_TYPE
    or COMMIT_TYPE (a prepared half message and a rollback record get none). Cost: O(1).

    >>> [goes_to_consume_queue(f) for f in (0x0, 0x4, 0x8, 0xC)]
    [True, False, True, False]
    """
    tran = transaction_type(int(sys_flag))
    return tran == TRANSACTION_NOT_TYPE or tran == TRANSACTION_COMMIT_TYPE


def goes_to_consume_queue_many(sys_flag: Any) -> np.ndarray:
    """:func:`goes_to_consume_queue` of every element, as a bool array. Cost: O(n), NumPy.

    >>> goes_to_consume_queue_many([0x0, 0x4, 0x8, 0xC]).tolist()
    [True, False, True, False]
    """
    tran = transaction_type(np.asarray(sys_flag, dtype=np.int64))
    return (tran == TRANSACTION_NOT_TYPE) | (tran == TRANSACTION_COMMIT_TYPE)


def goes_to_index(sys_flag: int) -> bool:
    """True when buildIndex indexes the message: every transaction type but ROLLBACK_TYPE
    (prepared half messages are indexed). Cost: O(1).

    >>> [goes_to_index(f) for f in (0x0, 0x4, 0x8, 0xC)]
    [True, True, True, False]
    """
    return transaction_type(int(sys_flag)) != TRANSACTION_ROLLBACK_TYPE


def goes_to_index_many(sys_flag: Any) -> np.ndarray:
    """:func:`goes_to_index` of every element, as a bool array. Cost: O(n), NumPy.

    >>> goes_to_index_many([0x0, 0x4, 0x8, 0xC]).tolist()
    [True, True, True, False]
    """
    return transaction_type(np.asarray(sys_flag, dtype=np.int64)) != TRANSACTION_ROLLBACK_TYPE


# ------------------------------------------------------------------------------- index keys

#: MessageConst.KEY_SEPARATOR: the KEYS property is split on one space.
KEY_SEPARATOR = " "


#: IndexService's index type for a tag: buildIndex (5.4.0+) puts ``topic#T#tags``, and
#: queryOffset with indexType "T" looks up ``topic#T#key``.
TAG_INDEX_TYPE = "T"


def tag_index_key(tags: str | None) -> str | None:
    """The key part of the TAGS index key buildIndex puts from 5.4.0 (``buildKey(topic, tags,
    "T")`` is ``topic#T#tags``, i.e. ``topic#`` + this), or None when TAGS is null or empty
    (``StringUtils.isEmpty``): the whole TAGS string, never split. Cost: O(len(tags)).

    >>> tag_index_key("TagA"), tag_index_key("a||b"), tag_index_key(""), tag_index_key(None)
    ('T#TagA', 'T#a||b', None, None)
    """
    return f"{TAG_INDEX_TYPE}#{tags}" if tags else None


def index_query_key(key: str, index_type: str | None = None) -> str:
    """The key part queryOffset looks up for `key`: ``T#key`` when `index_type` is "T"
    (5.4.0+, a query by tag), else `key` itself (also for any other index type).

    >>> index_query_key("k"), index_query_key("TagA", "T"), index_query_key("k", "K")
    ('k', 'T#TagA', 'k')
    """
    return f"{TAG_INDEX_TYPE}#{key}" if index_type == TAG_INDEX_TYPE else key


def index_keys(keys: str | None, uniq_key: str | None, tags: str | None = None, *,
               tag_key: bool = False) -> list[str]:
    """The key parts buildIndex indexes for one message, in its order: UNIQ_KEY first
    (whenever it is not None, even when empty), then every non-empty token of KEYS split on
    single spaces, then (`tag_key`: a 5.4.0+ broker, see
    :attr:`rmqlab.rules.versions.LayoutFacts.index_tag_key`) :func:`tag_index_key` of TAGS
    when TAGS is non-empty. Cost: O(len(keys)).

    >>> index_keys("a  b ", None), index_keys(None, ""), index_keys("", "U")
    (['a', 'b'], [''], ['U'])
    >>> index_keys("a", "U", "TagA"), index_keys("a", "U", "TagA", tag_key=True)
    (['U', 'a'], ['U', 'a', 'T#TagA'])
    """
    out = [] if uniq_key is None else [uniq_key]
    if keys:
        # Java's split(" ") keeps leading empty tokens and drops trailing ones; buildIndex
        # skips empty tokens anyway, so a plain split + filter gives the same keys.
        out.extend(k for k in keys.split(KEY_SEPARATOR) if k)
    if tag_key:
        t = tag_index_key(tags)
        if t is not None:
            out.append(t)
    return out


def _large_strings(values: Any):
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values.cast(pa.large_string())
    # from_pandas: None and NaN (pandas' missing values) both become nulls
    return pa.array(np.asarray(values, dtype=object), type=pa.large_string(), from_pandas=True)


def key_tokens_many(keys: Any):
    """The non-empty KEYS tokens of every message, as a pyarrow list array (null where KEYS is
    null). Accepts a pyarrow string array, a NumPy object array, a pandas Series or a list.
    Cost: O(total length), in Arrow.

    >>> key_tokens_many(["a  b ", None, ""]).to_pylist()
    [['a', 'b'], None, []]
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = _large_strings(keys)
    tokens = pc.split_pattern(keys, pattern=KEY_SEPARATOR)
    flat = pc.list_flatten(tokens)
    if not len(flat):
        return tokens.cast(pa.large_list(pa.large_string()))
    nonempty = pc.greater(pc.binary_length(flat), 0)
    parents = np.asarray(pc.list_parent_indices(tokens), dtype=np.int64)
    kept = np.bincount(parents[np.asarray(nonempty, dtype=bool)], minlength=len(keys))
    offsets = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), flat.filter(nonempty),
                                         mask=pc.is_null(keys))


def tag_keys_many(tags: Any) -> tuple[np.ndarray, Any]:
    """:func:`tag_index_key` of every message that has one: ``(rows, parts)``, rows ascending
    (int64) and parts a pyarrow LargeStringArray ``T#tags``. `tags` as `keys` of
    :func:`index_keys_many`. Cost: O(total TAGS length), in Arrow.

    >>> rows, parts = tag_keys_many(["a", None, "", "b c"])
    >>> rows.tolist(), parts.to_pylist()
    ([0, 3], ['T#a', 'T#b c'])
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    tags = _large_strings(tags)
    has = np.asarray(pc.fill_null(pc.greater(pc.binary_length(tags), 0), False), dtype=bool) \
        if len(tags) else np.zeros(0, bool)
    rows = np.flatnonzero(has).astype(np.int64)
    kept = tags.take(pa.array(rows, pa.int64()))
    parts = pc.binary_join_element_wise(pa.scalar(TAG_INDEX_TYPE, pa.large_string()), kept,
                                        pa.scalar("#", pa.large_string()))
    return rows, parts.cast(pa.large_string())


def index_keys_many(keys: Any, uniq_key: Any, tags: Any = None, *, tag_key: bool = False) -> tuple[np.ndarray, Any]:
    """:func:`index_keys` of every message, flattened: ``(message_index, parts)``, where
    `message_index` (int64, non-decreasing) names the message each key part belongs to and
    `parts` is a pyarrow LargeStringArray; per message UNIQ_KEY first, then its KEYS tokens,
    then (`tag_key`, 5.4.0+) its TAGS key. `keys`, `uniq_key` and `tags` are columns of equal
    length (pyarrow, NumPy, pandas or list; missing = None/NaN/null; `tags` None: no TAGS).
    Cost: O(messages + total key length), no Python loop per message.

    >>> rows, parts = index_keys_many(["a  b", None, "c"], [None, "U", ""])
    >>> rows.tolist(), parts.to_pylist()
    ([0, 0, 1, 2, 2], ['a', 'b', 'U', '', 'c'])
    >>> rows, parts = index_keys_many(["a", None], [None, "U"], ["x", ""], tag_key=True)
    >>> rows.tolist(), parts.to_pylist()
    ([0, 0, 1], ['a', 'T#x', 'U'])
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    keys, uniq = _large_strings(keys), _large_strings(uniq_key)
    if len(keys) != len(uniq):
        raise ValueError(f"keys has {len(keys)} rows but uniq_key has {len(uniq)}")
    tokens = key_tokens_many(keys)
    flat = pc.list_flatten(tokens)
    t_msg = np.asarray(pc.list_parent_indices(tokens), dtype=np.int64)
    u_msg = np.flatnonzero(np.asarray(uniq.is_valid(), dtype=bool)) if len(uniq) else np.zeros(0, np.int64)
    msgs = [u_msg, t_msg]
    arrays = [uniq.take(pa.array(u_msg, pa.int64())), flat.cast(pa.large_string())]
    if tag_key and tags is not None:
        g_msg, g_parts = tag_keys_many(tags)
        if len(g_msg) and int(g_msg[-1]) >= len(keys):
            raise ValueError(f"tags has more rows than keys ({len(keys)})")
        msgs.append(g_msg)
        arrays.append(g_parts)
    msg = np.concatenate(msgs)
    # stable: within a message the unique key (listed first) stays before its KEYS tokens,
    # and those before its TAGS key
    order = np.argsort(msg, kind="stable")
    parts = pa.concat_arrays(arrays)
    return msg[order], parts.take(pa.array(order, pa.int64()))


# -------------------------------------------------------------------------------- tags code

#: TopicValidator.RMQ_SYS_SCHEDULE_TOPIC: delayed messages wait here, queue id = level - 1.
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
#: MessageStoreConfig.messageDelayLevel (4.x and 5.x default).
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_TIME_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
#: computeDeliverTimestamp's delay for a level missing from the table (ms).
_MISSING_LEVEL_DELAY = 1000


def parse_delay_levels(levels: str = DEFAULT_DELAY_LEVELS) -> dict[int, int]:
    """parseDelayLevel: level (1-based) -> delay in ms, from a ``messageDelayLevel`` string.

    >>> t = parse_delay_levels(); len(t), t[1], t[18]
    (18, 1000, 7200000)
    """
    table = {}
    for i, value in enumerate(levels.split(" ")):
        unit = _TIME_UNITS.get(value[-1:])
        if unit is None or not value[:-1].lstrip("-").isdigit():
            raise ValueError(f"delay level {i + 1}: {value!r} is not <number><s|m|h|d>")
        table[i + 1] = int(value[:-1]) * unit
    return table


#: The default level table: level -> delay in ms (level 1 = 1 s ... level 18 = 2 h).
DELAY_LEVEL_TABLE: dict[int, int] = parse_delay_levels(DEFAULT_DELAY_LEVELS)


def compute_deliver_timestamp(delay_level: int, store_timestamp: int,
                              level_table: dict[int, int] | None = None) -> int:
    """computeDeliverTimestamp: ``store_timestamp + delay(level)``; ``store_timestamp + 1000``
    for a level missing from the table. Java long arithmetic (wraps). Units: ms.

    >>> compute_deliver_timestamp(3, 1718000000000)     # level 3 = 10 s
    1718000010000
    """
    table = DELAY_LEVEL_TABLE if level_table is None else level_table
    delay = table.get(int(delay_level))
    return wrap_long(int(store_timestamp) + (delay if delay is not None else _MISSING_LEVEL_DELAY))


def tags_code(tags: str | None) -> int:
    """MessageExtBrokerInner.tagsString2tagsCode: ``TAGS.hashCode()`` widened to a long; 0 for
    None or "". Cost: O(len(tags)).

    >>> tags_code("TagA"), tags_code(None), tags_code("polygenelubricants")
    (2598919, 0, -2147483648)
    """
    if tags is None or tags == "":
        return 0
    return java_hash(tags)


def tags_codes(tags: Any) -> np.ndarray:
    """:func:`tags_code` of every element, as an int64 array (sign-extended Java ints).

    Accepts what :func:`rmqlab.jvm.hashcode.java_hash_many` accepts (list, NumPy str/object array,
    pyarrow string array, pandas Series); None / nulls give 0, as a message without TAGS does.
    Cost: O(total length), in C.

    >>> tags_codes(["TagA", None, ""]).tolist()
    [2598919, 0, 0]
    """
    import sys

    if isinstance(tags, (list, tuple)):
        tags = ["" if t is None else t for t in tags]
    elif isinstance(tags, np.ndarray) and tags.dtype == object:
        # `is None` of every element in NumPy's C loop; only the rows without TAGS are replaced
        missing = np.equal(tags, np.array(None, dtype=object))
        if missing.any():
            tags = tags.copy()
            tags[missing] = ""
    else:
        pa = sys.modules.get("pyarrow")
        pd = sys.modules.get("pandas")
        if pa is not None and isinstance(tags, pa.DictionaryArray):
            # each distinct value hashed once (read_columns(arrow=True) gives TAGS like this)
            values = tags_codes(tags.dictionary)
            out = values[tags.indices.fill_null(0).to_numpy()] if len(values) else np.zeros(len(tags), np.int64)
            if tags.null_count:
                out[~tags.is_valid().to_numpy(zero_copy_only=False)] = 0
            return out
        if pa is not None and isinstance(tags, (pa.Array, pa.ChunkedArray)) and tags.null_count:
            import pyarrow.compute as pc

            tags = pc.fill_null(tags, "")
        elif pd is not None and isinstance(tags, (pd.Series, pd.Index)) and tags.hasnans:
            tags = tags.fillna("")
    return java_hash_many(tags).astype(np.int64)


def message_tags_code(topic: str, tags: str | None, delay_level: int | str | None,
                      store_timestamp: int, level_table: dict[int, int] | None = None) -> int:
    """The tags code the broker dispatches for a CommitLog message (checkMessageAndReturnSize).

    `topic` is the topic *as stored* (a delayed message is stored under SCHEDULE_TOPIC_XXXX);
    `delay_level` is the ``DELAY`` property (None when absent). The level is clamped to the
    table's highest level; only a level > 0 replaces the hash with the delivery time (ms).
    Cost: O(len(tags)).

    >>> message_tags_code("T", "TagA", None, 5), message_tags_code(SCHEDULE_TOPIC, "TagA", "99", 5)
    (2598919, 7200005)
    """
    code = tags_code(tags)
    if topic == SCHEDULE_TOPIC and delay_level is not None:
        table = DELAY_LEVEL_TABLE if level_table is None else level_table
        level = int(delay_level)  # Integer.parseInt
        max_level = max(table) if table else 0
        if level > max_level:
            level = max_level
        if level > 0:
            code = compute_deliver_timestamp(level, store_timestamp, table)
    return code


def message_tags_codes(topics: Any, tags: Any, delay_levels: Any, store_timestamps: Any,
                       level_table: dict[int, int] | None = None) -> np.ndarray:
    """:func:`message_tags_code` of every message, as an int64 array. `delay_levels` is the
    parsed DELAY property (0 when absent). Cost: O(total tags length), in C and NumPy.

    >>> message_tags_codes(["T", SCHEDULE_TOPIC], ["TagA", "TagA"], [0, 99], [5, 5]).tolist()
    [2598919, 7200005]
    """
    codes = tags_codes(tags)
    table = DELAY_LEVEL_TABLE if level_table is None else level_table
    top = max(table) if table else 0
    level = np.minimum(np.asarray(delay_levels, dtype=np.int64).reshape(-1), top)
    delayed = level > 0
    if delayed.any():
        # the topic test only where a level is set: comparing every str costs more than the rest
        delayed[delayed] = _values_at(topics, np.flatnonzero(delayed)) == SCHEDULE_TOPIC
    if delayed.any():
        delays = np.array([0] + [table.get(i, _MISSING_LEVEL_DELAY) for i in range(1, top + 1)], np.int64)
        with np.errstate(over="ignore"):
            codes[delayed] = np.asarray(store_timestamps, dtype=np.int64).reshape(-1)[delayed] \
                + delays[level[delayed]]
    return codes


def _values_at(column: Any, rows: np.ndarray) -> np.ndarray:
    """The values of a column (anything NumPy takes, or a pyarrow array) at `rows`, as objects."""
    import sys

    pa = sys.modules.get("pyarrow")
    if pa is not None and isinstance(column, (pa.Array, pa.ChunkedArray)):
        return np.asarray(column.take(pa.array(rows, pa.int64())).to_pylist(), dtype=object)
    return np.asarray(column, dtype=object).reshape(-1)[rows]


# ---------------------------------------------------------------------------- queue offsets


def assign_queue_offsets_coded(queue_codes: np.ndarray, sys_flag: Any, next_offset: np.ndarray) -> np.ndarray:
    """Queue offsets as the broker's topicQueueTable assigns them, in row order, for queues
    given as small non-negative integer codes: NOT_TYPE and COMMIT_TYPE rows get
    ``next_offset[code]`` plus the number of earlier such rows of their queue; PREPARED and
    ROLLBACK rows get 0. `next_offset` (int64, one entry a code) is advanced in place.
    Cost: O(n), NumPy.

    >>> table = np.array([7, 0])
    >>> assign_queue_offsets_coded(np.array([0, 0, 1, 0]), np.array([0, 4, 0, 8]), table).tolist(), table.tolist()
    ([7, 0, 0, 8], [9, 1])
    """
    queue_codes = np.asarray(queue_codes, dtype=np.int64)
    out = np.zeros(len(queue_codes), np.int64)
    rows = np.flatnonzero(goes_to_consume_queue_many(sys_flag))
    q = queue_codes[rows]
    counts = np.bincount(q, minlength=len(next_offset))
    # rank of each row among the earlier rows of its queue; a stable sort of small ints is a
    # radix sort in NumPy: O(n), against O(n log n) on int64
    order = np.argsort(q.astype(np.uint16) if len(next_offset) <= 1 << 16 else q, kind="stable")
    first = np.cumsum(counts) - counts
    rank = np.empty(len(q), np.int64)
    rank[order] = np.arange(len(q)) - first[q[order]]
    out[rows] = next_offset[q] + rank
    next_offset += counts
    return out


def assign_queue_offsets(topics: np.ndarray, queue_ids: np.ndarray, sys_flag: np.ndarray,
                         queue_table: dict[tuple[str, int], int] | None = None):
    """:func:`assign_queue_offsets_coded` for queues named by (topic, queue id), with the
    topicQueueTable as a dict (next offset per queue; missing = 0). Returns (offsets int64, the
    updated table). Cost: O(n), one pandas groupby.

    >>> offs, table = assign_queue_offsets(np.array(["A", "A", "B", "A"], object),
    ...                                    np.array([0, 0, 0, 0]), np.array([0, 4, 0, 8]), {("A", 0): 7})
    >>> offs.tolist(), table
    ([7, 0, 0, 8], {('A', 0): 9, ('B', 0): 1})
    """
    import pandas as pd

    table = dict(queue_table or {})
    n = len(topics)
    elig = goes_to_consume_queue_many(sys_flag)
    if not elig.any():
        return np.zeros(n, np.int64), table
    grp = pd.DataFrame({"t": pd.Series(topics, dtype=object), "q": queue_ids}).groupby(["t", "q"], sort=False)
    groups = grp.size().index                                  # in ngroup order (sort=False)
    keys = [(str(t), int(q)) for t, q in zip(groups.get_level_values(0), groups.get_level_values(1))]
    before = np.array([table.get(k, 0) for k in keys], np.int64)
    after = before.copy()
    out = assign_queue_offsets_coded(grp.ngroup().to_numpy(), sys_flag, after)
    for k, b, a in zip(keys, before, after):
        if a != b:
            table[k] = int(a)
    return out, table


def next_queue_offsets(topics: Any, queue_ids: Any, sys_flag: Any,
                       queue_offsets: Any) -> dict[tuple[str, int], int]:
    """The topicQueueTable after stored messages: for each (topic, queue id), one past the
    largest QUEUEOFFSET of its NOT_TYPE / COMMIT_TYPE messages. Cost: O(n), one groupby.

    >>> next_queue_offsets(["A", "A", "B"], [0, 0, 1], [0, 4, 0], [3, 0, 0])
    {('A', 0): 4, ('B', 1): 1}
    """
    import pandas as pd

    df = pd.DataFrame({"topic": pd.Series(np.asarray(topics, dtype=object), dtype=object),
                       "queue_id": np.asarray(queue_ids), "queue_offset": np.asarray(queue_offsets)})
    ok = df[goes_to_consume_queue_many(sys_flag)]
    last = ok.groupby(["topic", "queue_id"])["queue_offset"].max()
    topic, queue = last.index.get_level_values(0), last.index.get_level_values(1)
    return {(str(t), int(q)): int(v) + 1 for t, q, v in zip(topic, queue, last.to_numpy())}



# ------------------------------------------------------------ BatchConsumeQueue (5.0.0+)

#: MessageSysFlag.NEED_UNWRAP_FLAG: the consumer unwraps the inner batch (set with INNER_BATCH_FLAG).
NEED_UNWRAP_FLAG = 0x1 << 6
#: MessageSysFlag.INNER_BATCH_FLAG: one stored message holds a batch of INNER_NUM messages.
INNER_BATCH_FLAG = 0x1 << 7
#: MessageConst.PROPERTY_INNER_NUM: messages in an inner batch (SendMessageProcessor sets it).
PROPERTY_INNER_NUM = "INNER_NUM"
#: MessageConst.PROPERTY_INNER_BASE: the batch's first message offset (BatchConsumeQueue.assignQueueOffset).
PROPERTY_INNER_BASE = "INNER_BASE"
#: TopicAttributes.QUEUE_TYPE_ATTRIBUTE: the topic attribute naming the queue type.
QUEUE_TYPE_ATTRIBUTE = "queue.type"
#: CQType's values; the attribute's default is SimpleCQ.
CQ_TYPES = ("SimpleCQ", "BatchCQ", "RocksDBCQ")

_PROP_NAME = "\x01"

def cq_type(attributes: dict[str, str] | None) -> str:
    """QueueTypeUtils.getCQType: a topic's queue type from its attributes (topics.json);
    SimpleCQ when absent. Cost: O(1).

    >>> cq_type({"queue.type": "BatchCQ"}), cq_type(None), cq_type({"other": "x"})
    ('BatchCQ', 'SimpleCQ', 'SimpleCQ')

    Raises ValueError for a value that is not a CQType (CQType.valueOf throws).
    """
    value = (attributes or {}).get(QUEUE_TYPE_ATTRIBUTE, "SimpleCQ")
    if value not in CQ_TYPES:
        raise ValueError(f"{QUEUE_TYPE_ATTRIBUTE}={value!r} is not one of {CQ_TYPES}")
    return value


def _java_parse(text: str, bits: int) -> int:
    """Short/Long.parseShort/parseLong: an optional sign and ASCII digits, in range."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(f"{text!r} is not a decimal integer (Java's parse{'Short' if bits == 16 else 'Long'})")
    digits = body.lstrip("0") or "0"  # Java accepts any number of leading zeros; int() caps the length
    value = (-1 if text[:1] == "-" else 1) * (int(digits) if len(digits) <= 20 else 1 << bits)
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise ValueError(f"{text!r} does not fit {bits} bits")
    return value


def property_value(properties: str | None, name: str) -> str | None:
    """The value of property `name` in a raw PROPERTIES block (``name\\x01value\\x02...``, the
    final separator optional), as string2messageProperties leaves it: the last pair wins, an
    empty value counts as absent. Cost: O(len(properties)).

    >>> property_value("INNER_NUM\\x013\\x02TAGS\\x01a\\x02INNER_NUM\\x014", "INNER_NUM")
    '4'
    """
    if not properties:
        return None
    found = None
    for pair in property_pairs(properties):
        key, sep, value = pair.partition(_PROP_NAME)
        if sep and key == name and value:
            found = value
    return found


def property_values(properties: Any, name: str):
    """:func:`property_value` of every block of a column, as a pyarrow string array (null where
    absent). Only the blocks that mention `name` are split in Python; the filter is one search
    of the column's bytes. Cost: O(total length) in C plus O(matching blocks).

    >>> property_values(["A\\x01x\\x02INNER_BASE\\x017\\x02", None, "B\\x01y"], "INNER_BASE").to_pylist()
    ['7', None, None]
    """
    import pyarrow as pa

    props = _large_strings(properties)
    rows = _rows_containing(props, (name + _PROP_NAME).encode())
    if not len(rows):
        return pa.nulls(len(props), pa.string())
    out = np.full(len(props), None, dtype=object)
    texts = props.take(pa.array(rows, pa.int64())).to_pylist()
    out[rows] = [property_value(t, name) for t in texts]
    return pa.array(out, type=pa.string(), from_pandas=True)


def property_values_many(properties: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """:func:`property_values` of each of `names`, with one search of the column's bytes for
    all of them: a block that mentions none is not looked at again. Cost: O(total length) in C
    plus O(matching blocks).

    >>> got = property_values_many(["INNER_NUM\\x012\\x02INNER_BASE\\x017", "A\\x01x"], ("INNER_NUM", "INNER_BASE"))
    >>> got["INNER_NUM"].to_pylist(), got["INNER_BASE"].to_pylist()
    (['2', None], ['7', None])
    """
    import pyarrow as pa

    props = _large_strings(properties)
    rows = _rows_containing(props, *[(name + _PROP_NAME).encode() for name in names])
    if not len(rows):
        return {name: pa.nulls(len(props), pa.string()) for name in names}
    some = props.take(pa.array(rows, pa.int64()))
    out = {}
    for name in names:
        values = np.full(len(props), None, dtype=object)
        values[rows] = property_values(some, name).to_numpy(zero_copy_only=False)
        out[name] = pa.array(values, type=pa.string(), from_pandas=True)
    return out


def _rows_containing(texts: Any, *needles: bytes) -> np.ndarray:
    """The rows (ascending) of a pyarrow large_string array whose text holds one of `needles`; a
    null row's bytes, if any, may count. Cost: one search of the array's bytes with a regular
    expression of the needles (Python's re, which looks for their common start at memchr-like
    speed: about a fifth of the time of Arrow's match_substring, which starts again at every
    row, for each) plus O(occurrences)."""
    import re

    n = len(texts)
    _, offsets_buf, data_buf = texts.buffers()
    if not n or data_buf is None:
        return np.zeros(0, np.int64)
    offsets = np.frombuffer(offsets_buf, np.int64)[texts.offset:texts.offset + n + 1]
    data = data_buf.slice(0, int(offsets[-1])).to_pybytes()
    # shortest first: where several needles start at one byte the match is the shortest, which
    # fits inside a row whenever any of them does
    pattern = re.compile(b"|".join(re.escape(nd) for nd in sorted(needles, key=len)))
    starts, ends = [], []
    m = pattern.search(data, int(offsets[0]))
    while m is not None:
        starts.append(m.start())
        ends.append(m.end())
        m = pattern.search(data, m.start() + 1)     # overlapping occurrences too
    if not starts:
        return np.zeros(0, np.int64)
    at = np.array(starts, np.int64)
    row = np.searchsorted(offsets, at, side="right") - 1
    # an occurrence across the end of a row's text is not in it (the texts are back to back)
    inside = np.array(ends, np.int64) <= offsets[row + 1]
    return np.unique(row[inside])


def batch_unit(queue_offset: int, properties: dict[str, str] | None) -> tuple[int, int]:
    """(msg_base_offset, batch_size) of the BatchConsumeQueue unit a message gets: INNER_BASE
    and INNER_NUM when the message has both (CommitLog.setBatchSizeIfNeeded), else its own
    queue offset and 1 (DispatchRequest's defaults). Cost: O(1).

    >>> batch_unit(7, {"INNER_NUM": "5", "INNER_BASE": "7"}), batch_unit(7, {"INNER_NUM": "5"})
    ((7, 5), (7, 1))

    Raises ValueError when a value does not parse: the broker's checkMessageAndReturnSize then
    fails the message (no unit).
    """
    props = properties or {}
    if PROPERTY_INNER_NUM in props and PROPERTY_INNER_BASE in props:
        return _java_parse(props[PROPERTY_INNER_BASE], 64), _java_parse(props[PROPERTY_INNER_NUM], 16)
    return int(queue_offset), 1


def batch_units_many(queue_offsets: Any, properties: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`batch_unit` of every message from its raw PROPERTIES block: (msg_base_offset
    int64, batch_size int64, ok bool; ok False where a value does not parse). Cost: O(total
    length) in Arrow plus O(messages with both properties).

    >>> base, size, ok = batch_units_many([3, 9], ["INNER_NUM\\x012\\x02INNER_BASE\\x013\\x02", "TAGS\\x01a\\x02"])
    >>> base.tolist(), size.tolist(), ok.tolist()
    ([3, 9], [2, 1], [True, True])
    """
    base = np.asarray(queue_offsets, dtype=np.int64).reshape(-1).copy()
    size = np.ones(len(base), np.int64)
    ok = np.ones(len(base), bool)
    nums = property_values(properties, PROPERTY_INNER_NUM).to_numpy(zero_copy_only=False)
    bases = property_values(properties, PROPERTY_INNER_BASE).to_numpy(zero_copy_only=False)
    for r in np.flatnonzero((nums != None) & (bases != None)):  # noqa: E711 (object arrays)
        try:
            base[r], size[r] = _java_parse(bases[r], 64), _java_parse(nums[r], 16)
        except ValueError:
            ok[r] = False
    return base, size, ok


def message_num(sys_flag: int, batch_cq_topic: bool, inner_num: str | None) -> int:
    """CommitLog.getMessageNum: how far a stored message advances its queue's offset: INNER_NUM
    (at least 1) for an inner batch or any message of a BatchCQ topic that has it, else 1.
    Cost: O(1).

    >>> message_num(INNER_BATCH_FLAG, True, "10"), message_num(0, False, "10"), message_num(0, True, "0")
    (10, 1, 1)
    """
    if (int(sys_flag) & INNER_BATCH_FLAG or batch_cq_topic) and inner_num is not None:
        return max(_java_parse(inner_num, 16), 1)
    return 1


# ------------------------------------------------------------ light message queues (4.9.3+)

#: MixAll.LMQ_PREFIX: a queue name with this prefix is a light message queue.
LMQ_PREFIX = "%LMQ%"
#: MixAll.MULTI_DISPATCH_QUEUE_SPLITTER: INNER_MULTI_DISPATCH and its offsets are comma-separated.
MULTI_DISPATCH_QUEUE_SPLITTER = ","
#: MessageConst.PROPERTY_INNER_MULTI_DISPATCH: the queues (topic names) a message also goes to.
PROPERTY_INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
#: MessageConst.PROPERTY_INNER_MULTI_QUEUE_OFFSET: its queue offset in each, same order.
PROPERTY_INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
# TopicValidator / MixAll names multi dispatch leaves alone
_RETRY_PREFIX, _SYSTEM_PREFIX = "%RETRY%", "rmq_sys_"


def is_lmq(name: str | None) -> bool:
    """MixAll.isLmq: the name starts with ``%LMQ%``.

    >>> is_lmq("%LMQ%123"), is_lmq("TopicTest"), is_lmq(None)
    (True, False, False)
    """
    return name is not None and name.startswith(LMQ_PREFIX)


def handles_multi_dispatch(topic: str, enable_multi_dispatch: bool, *, broker_version: str | None = None) -> bool:
    """MultiDispatchUtils.isNeedHandleMultiDispatch: enableMultiDispatch is on and the topic is
    not a retry, system or schedule topic. A 4.9.x broker (4.9.3 to 4.9.8, `broker_version`;
    ``DefaultMessageStore.checkMultiDispatchQueue``) looks at enableMultiDispatch only. Cost: O(1).

    >>> handles_multi_dispatch("T", True), handles_multi_dispatch("%RETRY%g", True), handles_multi_dispatch("T", False)
    (True, False, False)
    >>> handles_multi_dispatch("%RETRY%g", True, broker_version="4.9.4")
    True
    """
    if _multi_dispatch_49(broker_version):
        return bool(enable_multi_dispatch)
    return (bool(enable_multi_dispatch) and not topic.startswith(_RETRY_PREFIX)
            and not topic.startswith(_SYSTEM_PREFIX) and topic != SCHEDULE_TOPIC)


def _multi_dispatch_49(broker_version: str | None) -> bool:
    """True for the 4.9.x multi dispatch (4.9.3 <= version < 5.0.0); None means 5.x."""
    return broker_version is not None and (4, 9, 3) <= _version_tuple(broker_version) < (5, 0, 0)


def _java_split(text: str) -> list[str]:
    """String.split(","): trailing empty strings dropped."""
    parts = text.split(MULTI_DISPATCH_QUEUE_SPLITTER)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def lmq_dispatch(topic: str, queue_id: int, properties: dict[str, str] | None, *,
                 enable_lmq: bool, enable_multi_dispatch: bool,
                 broker_version: str | None = None) -> list[tuple[str, int, int]]:
    """The extra ConsumeQueue units a dispatched message gets (ConsumeQueue.multiDispatchLmqQueue
    after checkMultiDispatchQueue): one per name in INNER_MULTI_DISPATCH, as (queue name =
    topic, queue id, queue offset from INNER_MULTI_QUEUE_OFFSET). The queue id is 0 for an LMQ
    name when `enable_lmq`, else the message's own; 5.x skips names holding a path separator.
    Nothing when multi dispatch is off or does not apply to the topic, when either property is
    blank, or when the two lists differ in length. The units carry the message's own CommitLog
    offset, size and tags code. `broker_version` None or 5.0.0+ gives the 5.x rule; 4.9.3 to
    4.9.x dispatches every topic and keeps names with "/" (see :func:`handles_multi_dispatch`).
    Cost: O(len(properties)).

    >>> lmq_dispatch("T", 3, {"INNER_MULTI_DISPATCH": "%LMQ%a,%LMQ%b", "INNER_MULTI_QUEUE_OFFSET": "4,0"},
    ...              enable_lmq=True, enable_multi_dispatch=True)
    [('%LMQ%a', 0, 4), ('%LMQ%b', 0, 0)]
    >>> lmq_dispatch("%RETRY%g", 3, {"INNER_MULTI_DISPATCH": "a/b,P", "INNER_MULTI_QUEUE_OFFSET": "1,2"},
    ...              enable_lmq=True, enable_multi_dispatch=True, broker_version="4.9.4")
    [('a/b', 3, 1), ('P', 3, 2)]

    Raises ValueError for an offset that is not a Java long (the broker's dispatch throws), and
    BrokerVersionError for a `broker_version` that is not a known release.
    """
    props = properties or {}
    keep_paths = _multi_dispatch_49(broker_version)
    if not handles_multi_dispatch(topic, enable_multi_dispatch, broker_version=broker_version):
        return []
    names, offsets = props.get(PROPERTY_INNER_MULTI_DISPATCH), props.get(PROPERTY_INNER_MULTI_QUEUE_OFFSET)
    if names is None or not names.strip() or offsets is None or not offsets.strip():
        return []
    queues, values = _java_split(names), _java_split(offsets)
    if len(queues) != len(values):
        return []
    out = []
    for name, value in zip(queues, values):
        if "/" in name and not keep_paths:
            continue
        out.append((name, 0 if enable_lmq and is_lmq(name) else int(queue_id), _java_parse(value, 64)))
    return out


def lmq_dispatch_many(topics: Any, queue_ids: Any, properties: Any, *, enable_lmq: bool,
                      enable_multi_dispatch: bool, broker_version: str | None = None,
                      ) -> tuple[np.ndarray, list[tuple[str, int, int]], np.ndarray]:
    """:func:`lmq_dispatch` of every message, flattened: (message row of each unit, the units,
    rows whose offsets do not parse). Only rows with INNER_MULTI_DISPATCH are looked at in
    Python (one Arrow filter finds them). `broker_version` as in :func:`lmq_dispatch` (None:
    the 5.x rule). Cost: O(total length) in Arrow plus O(those rows).

    >>> rows, units, bad = lmq_dispatch_many(["T", "T"], [1, 2], ["TAGS\\x01a\\x02",
    ...     "INNER_MULTI_DISPATCH\\x01%LMQ%x\\x02INNER_MULTI_QUEUE_OFFSET\\x015\\x02"],
    ...     enable_lmq=True, enable_multi_dispatch=True)
    >>> rows.tolist(), units, bad.tolist()
    ([1], [('%LMQ%x', 0, 5)], [])
    """
    if broker_version is not None:
        # checked here: inside the loop below a bad version would be taken for a bad offset
        _version_tuple(broker_version)
    if not enable_multi_dispatch:
        return np.zeros(0, np.int64), [], np.zeros(0, np.int64)
    names = property_values(properties, PROPERTY_INNER_MULTI_DISPATCH).to_numpy(zero_copy_only=False)
    rows_with = np.flatnonzero(names != None)  # noqa: E711 (object array)
    if not len(rows_with):
        return np.zeros(0, np.int64), [], np.zeros(0, np.int64)
    offsets = property_values(properties, PROPERTY_INNER_MULTI_QUEUE_OFFSET).to_numpy(zero_copy_only=False)
    topics = np.asarray(topics, dtype=object).reshape(-1)
    qids = np.asarray(queue_ids, dtype=np.int64).reshape(-1)
    rows, units, bad = [], [], []
    for r in rows_with:
        props = {PROPERTY_INNER_MULTI_DISPATCH: names[r]}
        if offsets[r] is not None:
            props[PROPERTY_INNER_MULTI_QUEUE_OFFSET] = offsets[r]
        try:
            got = lmq_dispatch(str(topics[r]), int(qids[r]), props, enable_lmq=enable_lmq,
                               enable_multi_dispatch=enable_multi_dispatch, broker_version=broker_version)
        except ValueError:
            bad.append(r)
            continue
        rows += [r] * len(got)
        units += got
    return np.asarray(rows, np.int64), units, np.asarray(bad, np.int64)


def assign_lmq_offsets(queue_names: list[str], queue_id: int, table: dict[tuple[str, int], int], *,
                       broker_version: str | None = None, enable_lmq: bool = True) -> str:
    """The INNER_MULTI_QUEUE_OFFSET a broker stores for a message naming `queue_names`, and
    `table` (next offset per (name, queue id); missing = 0) advanced past it.

    5.x (``broker_version`` None or 5.0.0+; ``ConsumeQueue.assignQueueOffset`` in 5.0.0,
    ``MultiDispatch.wrapMultiDispatch`` / ``updateMultiQueueOffset`` in 5.2.0+): with
    enableLmq, each LMQ name's next offset (keyed (name, 0)); every other name, and every name
    without enableLmq, gets an empty entry (Java's join of a null). 4.9.3 to 4.9.8
    (``MultiDispatch``, read at rocketmq-all-4.9.3 c7989f8574 and 4.9.4 06f2208a34): *every*
    name gets an offset, an LMQ name with enableLmq keyed (name, 0), any other keyed
    (name, the message's queue id) in the topic queue table. For LMQ names with enableLmq the
    two forms agree. Cost: O(names).

    >>> t = {}; assign_lmq_offsets(["%LMQ%a", "%LMQ%b"], 2, t), assign_lmq_offsets(["%LMQ%a"], 1, t), t
    ('0,0', '1', {('%LMQ%a', 0): 2, ('%LMQ%b', 0): 1})
    >>> assign_lmq_offsets(["%LMQ%a", "P"], 3, {}), assign_lmq_offsets(["%LMQ%a", "P"], 3, {}, broker_version="4.9.4")
    ('0,', '0,0')
    """
    every_name = broker_version is not None and _version_tuple(broker_version) < (5, 0, 0)
    out = []
    for name in queue_names:
        lmq_key = enable_lmq and is_lmq(name)
        if lmq_key or every_name:
            key = (name, 0 if lmq_key else int(queue_id))
            out.append(str(table.get(key, 0)))
            table[key] = table.get(key, 0) + 1
        else:
            out.append("")
    return MULTI_DISPATCH_QUEUE_SPLITTER.join(out)


def _version_tuple(version: str) -> tuple[int, int, int]:
    from rmqlab.rules.versions import parse_broker_version

    v = parse_broker_version(version)
    return v.major, v.minor, v.patch
