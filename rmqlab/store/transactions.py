"""Where each transaction of a store stands: committed, rolled back, discarded or pending, and how
often the broker asked its producer ("why was my transactional message never delivered?").

A broker keeps a transaction in one of three ways, read from its source:

* **Prepared records** (before 4.3.0, ``EndTransactionProcessor`` of rocketmq-all-4.2.0): the
  producer's message is stored in its own topic with sysflag ``TRANSACTION_PREPARED_TYPE``; the
  producer's end request writes a second record, sysflag ``TRANSACTION_COMMIT_TYPE`` or
  ``TRANSACTION_ROLLBACK_TYPE``, whose ``preparedTransactionOffset`` is the prepared record's
  CommitLog offset. Nothing checks back: a prepared record without a decision stays so.
* **The half queue** (4.3.0 on, ``TransactionalMessageBridge``, ``TransactionalMessageServiceImpl``,
  ``EndTransactionProcessor``, ``DefaultTransactionalMessageCheckListener`` at rocketmq-all-5.3.3
  and 4.9.7): the message goes to ``RMQ_SYS_TRANS_HALF_TOPIC`` (its topic and queue in the
  ``REAL_TOPIC`` and ``REAL_QID`` properties). A commit puts the message into its real topic
  (sysflag COMMIT, ``preparedTransactionOffset`` = the half record's offset); a commit or a
  rollback then writes an op message (tag ``d``) to ``RMQ_SYS_TRANS_OP_HALF_TOPIC``, same queue id,
  whose body lists the removed half records' queue offsets (``"3"`` before 5.1, ``"0,1,3,"`` as
  ``TransactionalOpBatchService`` batches them from 5.1.0). The check service, every
  ``transactionCheckInterval``, takes each half record no op removed and older than
  ``transactionTimeOut``: it puts a copy at the queue's end with ``TRANSACTION_CHECK_TIMES`` one
  higher and asks the producer (``putBackHalfMsgQueue``, ``resolveHalfMsg``), or, once a record
  has been checked ``transactionCheckMax`` times (15), discards it (``resolveDiscardMsg``: moved
  to ``TRANS_CHECK_MAX_TIME_TOPIC`` from 4.5.0, only logged before), and commits its progress as
  group ``CID_RMQ_SYS_TRANS``'s offset on the half queue. An op names one record, the one the
  producer's request named: a copy made before the op arrived is checked on, and can be
  discarded after its transaction was committed.
* **5.5's RocksDB transaction store** (``transRocksDBEnable``, ``TransactionalMessageRocksDBService``
  at rocketmq-broker-5.5.0): one half record in ``RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC``, a record of
  it in ``rocksdbstore/``'s trans column family holding its check count, and an op message in
  ``RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC`` whose ``TRANS_OFFSET`` property is the half record's
  offset. A record checked more than ``transactionCheckMax`` times is deleted, nothing moved.

:func:`transaction_events` lists each of those records by transaction; :func:`transactions` sums
them up, one row a transaction. A transaction is named by its ``UNIQ_KEY`` (the client's message
id, which the broker also makes the transaction id).

>>> import tempfile
>>> from rmqlab.store.directory import Store
>>> transactions(Store(tempfile.mkdtemp())).shape[0]
0
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rmqlab.jvm.longs import LONG_MAX, LONG_MIN
from rmqlab.rules.dispatch import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    transaction_type,
)
from rmqlab.rules.properties import property_values
from rmqlab.rules.topics import (
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_TOPIC,
    TRANS_ROCKSDB_HALF_TOPIC,
    TRANS_ROCKSDB_OP_TOPIC,
)

if TYPE_CHECKING:
    from rmqlab.store.directory import Store

__all__ = ["transaction_events", "transactions", "has_transactions", "EVENT_COLUMNS", "TRANSACTION_COLUMNS",
           "DEFAULT_CHECK_MAX", "parse_op_body"]

#: BrokerConfig.transactionCheckMax: checks before a half record is discarded (broker
#: configuration, not on disk)
DEFAULT_CHECK_MAX = 15
#: TransactionalMessageUtil.REMOVETAG: the tag of an op message that ends half records
REMOVE_TAG = "d"
#: MixAll.CID_SYS_RMQ_TRANS: the check service's consumer group on the half and op queues
CHECK_GROUP = "CID_RMQ_SYS_TRANS"
#: MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES, PROPERTY_REAL_TOPIC, PROPERTY_REAL_QUEUE_ID,
#: PROPERTY_PRODUCER_GROUP; TRANS_OFFSET is the 5.5 RocksDB op message's half record offset
CHECK_TIMES, REAL_TOPIC, REAL_QID, PRODUCER_GROUP, TRANS_OFFSET = (
    "TRANSACTION_CHECK_TIMES", "REAL_TOPIC", "REAL_QID", "PGROUP", "TRANS_OFFSET")

#: what kind of record an event is
PREPARED, CHECK, ENDED, COMMIT, ROLLBACK, DISCARD, UNRESOLVED = (
    "prepared", "check", "ended", "commit", "rollback", "discard", "unresolved")
#: a transaction's state
COMMITTED, ROLLED_BACK, DISCARDED, PENDING = "committed", "rolled back", "discarded", "pending"
#: how the broker keeps transactions (module docstring)
LEGACY, HALF_QUEUE, ROCKSDB = "prepared records", "half queue", "rocksdb"

#: transaction_events' columns
EVENT_COLUMNS = ("transaction_id", "event", "phy_offset", "topic", "queue_id", "queue_offset",
                 "store_timestamp", "check_times", "ended_by_offset", "mode")
#: transactions' columns
TRANSACTION_COLUMNS = ("transaction_id", "topic", "queue_id", "producer_group", "keys", "born_timestamp",
                       "state", "checks", "mode", "half_offset", "half_copies", "commit_offset",
                       "commit_queue_offset", "discard_offset", "live_half_offset", "next")


def parse_op_body(body: bytes | None) -> list[int]:
    """The half queue offsets an op message's body ends: one decimal number (before 5.1) or
    several, each followed by a comma (``TransactionalOpBatchService``, 5.1.0 on); the check
    service skips what does not parse, as ``fillOpRemoveMap`` does. Cost: O(len(body)).

    >>> parse_op_body(b"0,1,3,2,"), parse_op_body(b"7"), parse_op_body(b"x,4,")
    ([0, 1, 3, 2], [7], [4])
    """
    out = []
    for part in (body or b"").split(b","):
        part = part.strip()
        if part.isdigit():
            out.append(int(part))
    return out


def _int_or_none(v: Any) -> int | None:
    """A property's number as the broker parses it (Integer/Long.parseLong): None where it is
    not a decimal number or does not fit a Java long.

    >>> _int_or_none("15"), _int_or_none("1e3"), _int_or_none("9" * 30), _int_or_none(None)
    (15, None, None, None)
    """
    if not isinstance(v, (str, int)) or isinstance(v, bool):
        return None
    text = str(v).strip()
    if not text.lstrip("-").isdigit() or len(text) > 20:
        return None
    n = int(text)
    return n if LONG_MIN <= n <= LONG_MAX else None


def _event(tid, event, m, check_times=None, ended_by=None, mode=HALF_QUEUE) -> dict[str, Any]:
    return {"transaction_id": tid, "event": event, "phy_offset": int(m["phy_offset"]), "topic": m["topic"],
            "queue_id": int(m["queue_id"]), "queue_offset": int(m["queue_offset"]),
            "store_timestamp": int(m["store_timestamp"]), "check_times": check_times, "ended_by_offset": ended_by,
            "mode": mode}


def _tid(m) -> str:
    """A transaction's name: its UNIQ_KEY, or the record's offset where it has none."""
    return m["uniq_key"] if isinstance(m["uniq_key"], str) and m["uniq_key"] else f"@{int(m['phy_offset'])}"


def transaction_events(store: Store, *, messages: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every record a transaction left, one row each, in CommitLog order within a transaction:
    ``prepared`` (the first half or prepared record), ``check`` (a half copy the check service
    put back, with its ``check_times``), ``ended`` (a half record an op message removed:
    ``ended_by_offset`` is the op message's CommitLog offset), ``commit`` and ``rollback`` (the
    decision records; ``ended_by_offset`` is the record they name), ``discard`` (the copy moved
    to TRANS_CHECK_MAX_TIME_TOPIC) and, in 5.5's RocksDB transaction store, ``unresolved`` (its
    record in the trans column family, with the check count the broker keeps there).

    Cost: one pass over the CommitLog's headers and properties (none when `messages`, the
    store's :meth:`~rmqlab.store.directory.Store.messages`, are given), plus the bodies of the op
    messages and, with a RocksDB transaction store, one read of ``rocksdbstore/``.

    >>> import tempfile
    >>> from rmqlab.store.directory import Store
    >>> list(transaction_events(Store(tempfile.mkdtemp())).columns) == list(EVENT_COLUMNS)
    True
    """
    msgs = store.messages() if messages is None else messages
    if not len(msgs):
        return pd.DataFrame(columns=list(EVENT_COLUMNS))
    tran = transaction_type(msgs["sys_flag"].to_numpy(np.int64))
    keep = _transaction_records(msgs, tran)
    m = msgs[keep].copy()
    m["tran"] = tran[keep]
    m["check_times"] = property_values(m["properties"], CHECK_TIMES).map(_int_or_none)
    rows: list[dict[str, Any]] = []
    tid_of: dict[int, str] = {}    # half, copy or prepared record offset -> transaction
    mode_of: dict[int, str] = {}   # the same -> how the broker keeps it
    seen: set[str] = set()
    half_at: dict[tuple[int, int], int] = {}   # (queue id, queue offset) in the half topic -> offset

    halves = m[m["topic"].isin(_HALF_TOPICS)]
    for r in halves.to_dict("records"):
        tid, at = _tid(r), int(r["phy_offset"])
        mode = ROCKSDB if r["topic"] == TRANS_ROCKSDB_HALF_TOPIC else HALF_QUEUE
        rows.append(_event(tid, CHECK if tid in seen else PREPARED, r, r["check_times"], mode=mode))
        seen.add(tid)
        tid_of[at], mode_of[at] = tid, mode
        if mode == HALF_QUEUE:
            half_at[(int(r["queue_id"]), int(r["queue_offset"]))] = at
    for r in m[(m["tran"] == TRANSACTION_PREPARED_TYPE) & ~m["topic"].isin(_HALF_TOPICS)].to_dict("records"):
        tid_of[int(r["phy_offset"])], mode_of[int(r["phy_offset"])] = _tid(r), LEGACY
        rows.append(_event(_tid(r), PREPARED, r, mode=LEGACY))

    ended: dict[int, int] = {}   # half record offset -> the op message's offset that ends it
    ops = m[m["topic"].isin(_OP_TOPICS) & (m["tags"] == REMOVE_TAG)]
    queue_ops = ops[ops["topic"] == TRANS_OP_TOPIC]
    if len(queue_ops):
        bodies = store.read_at(queue_ops["phy_offset"].to_numpy(np.int64), body=True)["body"]
        for r, body in zip(queue_ops.to_dict("records"), bodies, strict=True):
            for queue_offset in parse_op_body(bytes(body) if body is not None else b""):
                half = half_at.get((int(r["queue_id"]), queue_offset))
                if half is not None:
                    ended.setdefault(half, int(r["phy_offset"]))
    rocks_ops = ops[ops["topic"] == TRANS_ROCKSDB_OP_TOPIC]
    for r, named in zip(rocks_ops.to_dict("records"), property_values(rocks_ops["properties"], TRANS_OFFSET),
                        strict=True):
        half = _int_or_none(named)
        if half is not None and half in tid_of:
            ended.setdefault(half, int(r["phy_offset"]))
    for r in halves.to_dict("records"):
        at = int(r["phy_offset"])
        if at in ended:
            rows.append(_event(tid_of[at], ENDED, r, r["check_times"], ended_by=ended[at], mode=mode_of[at]))

    for r in m[m["tran"].isin([TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE])].to_dict("records"):
        at = int(r["prepared_transaction_offset"])
        rows.append(_event(tid_of.get(at, _tid(r)), COMMIT if r["tran"] == TRANSACTION_COMMIT_TYPE else ROLLBACK, r,
                           ended_by=at, mode=mode_of.get(at, HALF_QUEUE)))
    for r in m[m["topic"] == TRANS_CHECK_MAX_TIME_TOPIC].to_dict("records"):
        rows.append(_event(_tid(r), DISCARD, r, r["check_times"]))

    db = store.message_rocksdb_records() if any(mode == ROCKSDB for mode in mode_of.values()) else None
    if db is not None:
        first = {int(r["phy_offset"]): r for r in halves.to_dict("records")}
        for at, check_times in zip(db.transactions["phy_offset"], db.transactions["check_times"], strict=True):
            if int(at) in first:
                rows.append(_event(tid_of[int(at)], UNRESOLVED, first[int(at)], int(check_times), mode=ROCKSDB))
    out = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    out["check_times"] = out["check_times"].astype("Int64")
    out["ended_by_offset"] = out["ended_by_offset"].astype("Int64")
    rank = out["event"].map({e: i for i, e in enumerate(_EVENTS)})
    out = out.assign(_rank=rank).sort_values(["transaction_id", "phy_offset", "_rank"], kind="stable")
    return out.drop(columns="_rank").reset_index(drop=True)


_HALF_TOPICS = (TRANS_HALF_TOPIC, TRANS_ROCKSDB_HALF_TOPIC)
_OP_TOPICS = (TRANS_OP_TOPIC, TRANS_ROCKSDB_OP_TOPIC)
_EVENTS = (PREPARED, CHECK, ENDED, COMMIT, ROLLBACK, DISCARD, UNRESOLVED)


def has_transactions(messages: pd.DataFrame) -> bool:
    """Whether a store's messages hold any transaction record (a half, op, discard or prepared
    record, or a decision). Cost: O(messages), NumPy.

    >>> has_transactions(pd.DataFrame({"topic": ["T", "RMQ_SYS_TRANS_HALF_TOPIC"], "sys_flag": [0, 0]}))
    True
    """
    return bool(len(messages)) and bool(_transaction_records(messages).any())


def _transaction_records(messages: pd.DataFrame, tran: np.ndarray | None = None) -> np.ndarray:
    """Which messages are a transaction's records: those of the half, op and discard topics and
    those of a transaction type (`tran`: their transaction types, when already computed)."""
    if tran is None:
        tran = transaction_type(messages["sys_flag"].to_numpy(np.int64))
    own = messages["topic"].isin([*_HALF_TOPICS, *_OP_TOPICS, TRANS_CHECK_MAX_TIME_TOPIC]).to_numpy()
    return own | (tran != 0)


def transactions(store: Store, *, check_max: int = DEFAULT_CHECK_MAX, events: pd.DataFrame | None = None
                 ) -> pd.DataFrame:
    """One row a transaction: its real topic and queue, producer group, keys and birth time; its
    ``state``:

    * ``committed``: a commit record put the message into its topic (``commit_offset``,
      ``commit_queue_offset``: where a consumer finds it);
    * ``rolled back``: an op message (or, before 4.3, a rollback record) ended it uncommitted;
    * ``discarded``: checked ``transactionCheckMax`` times without an answer, then moved to
      TRANS_CHECK_MAX_TIME_TOPIC (``discard_offset``; 4.5.0 on), or passed by the check service
      with no copy made (before 4.5 a discard only logs), or in 5.5's RocksDB store deleted;
    * ``pending``: none of these yet;

    ``checks``: how often the broker asked the producer (the highest TRANSACTION_CHECK_TIMES of its
    records, or the RocksDB record's count); ``half_copies``: its half records, the first and one a
    check; ``live_half_offset``: the record the check service still holds (none once ended or
    discarded; a committed transaction can hold one, made before its op message came); ``next``:
    what the broker does with it next, given `check_max` (BrokerConfig.transactionCheckMax, not
    on disk).

    Cost: :func:`transaction_events` (pass `events` to reuse them), then O(events).

    >>> import tempfile
    >>> from rmqlab.store.directory import Store
    >>> list(transactions(Store(tempfile.mkdtemp())).columns) == list(TRANSACTION_COLUMNS)
    True
    """
    ev = transaction_events(store) if events is None else events
    if not len(ev):
        return pd.DataFrame(columns=list(TRANSACTION_COLUMNS))
    first_at = ev.loc[ev["event"] == PREPARED].groupby("transaction_id")["phy_offset"].min()
    heads = store.read_at(first_at.to_numpy(np.int64)) if len(first_at) else pd.DataFrame()
    if len(heads):   # the properties each row shows, one pass over the first records' properties
        heads = heads.assign(**{f"_{name}": property_values(heads["properties"], name)
                                for name in (REAL_TOPIC, REAL_QID, PRODUCER_GROUP)})
    head_of = {int(r["phy_offset"]): r for r in heads.to_dict("records")} if len(heads) else {}
    checked_to = _check_service_offsets(store)
    rows = []
    for tid, g in ev.groupby("transaction_id", sort=False):
        kinds = g["event"]
        halves = g[kinds.isin([PREPARED, CHECK])]
        mode = halves["mode"].iloc[0] if len(halves) else g["mode"].iloc[0]
        ended = set(g.loc[kinds == ENDED, "phy_offset"])
        if mode == LEGACY:   # before 4.3 the decision record itself ends the prepared record
            ended |= set(g.loc[kinds.isin([COMMIT, ROLLBACK]), "ended_by_offset"])
        commits, discards = g[kinds == COMMIT], g[kinds == DISCARD]
        unresolved = g[kinds == UNRESOLVED]
        checks = pd.to_numeric(g["check_times"], errors="coerce").max()
        checks = int(unresolved["check_times"].max()) if len(unresolved) else (0 if pd.isna(checks) else int(checks))
        newest = halves.iloc[-1] if len(halves) else None
        live, passed = None, False
        if newest is not None and newest["phy_offset"] not in ended and not len(discards):
            if mode == HALF_QUEUE and newest["queue_offset"] < checked_to.get(int(newest["queue_id"]), -1):
                passed = True   # the check service went past it without a copy: discarded, logged only
            elif mode != ROCKSDB or len(unresolved) or not _rocksdb_indexed(store, newest["phy_offset"]):
                live = int(newest["phy_offset"])
        if len(commits):
            state = COMMITTED
        elif ended or (kinds == ROLLBACK).any():
            state = ROLLED_BACK
        elif len(discards) or passed or (mode == ROCKSDB and live is None):
            state = DISCARDED
        else:
            state = PENDING
        if live is None:
            nxt = "nothing"
        elif mode == LEGACY:
            nxt = "nothing: no check-back before 4.3"
        elif mode == HALF_QUEUE and checks >= check_max:   # needDiscard: checked >= transactionCheckMax
            nxt = "discarded at the next check"
        elif mode == ROCKSDB and checks > check_max:   # checkTransRecordsStatus: checkTimes > transactionCheckMax
            nxt = "deleted at the next check"
        elif mode == ROCKSDB and checks == check_max:
            nxt = "checked once more, then deleted"
        else:
            nxt = f"checked again (check {checks + 1} of {check_max})"
        head = head_of.get(int(first_at.get(tid, -1)), {}) if tid in first_at.index else {}
        real_topic = _text(head.get(f"_{REAL_TOPIC}")) or head.get("topic")
        real_qid = _int_or_none(_text(head.get(f"_{REAL_QID}")))
        rows.append({
            "transaction_id": tid, "topic": real_topic,
            "queue_id": real_qid if real_qid is not None or head.get("topic") in _HALF_TOPICS else head.get("queue_id"),
            "producer_group": _text(head.get(f"_{PRODUCER_GROUP}")), "keys": head.get("keys"),
            "born_timestamp": head.get("born_timestamp"), "state": state, "checks": checks, "mode": mode,
            "half_offset": int(halves["phy_offset"].iloc[0]) if len(halves) else None,
            "half_copies": int(len(halves)),
            "commit_offset": int(commits["phy_offset"].iloc[0]) if len(commits) else None,
            "commit_queue_offset": int(commits["queue_offset"].iloc[0]) if len(commits) else None,
            "discard_offset": int(discards["phy_offset"].iloc[-1]) if len(discards) else None,
            "live_half_offset": live, "next": nxt})
    out = pd.DataFrame(rows, columns=list(TRANSACTION_COLUMNS))
    for col in ("queue_id", "born_timestamp", "half_offset", "commit_offset", "commit_queue_offset",
                "discard_offset", "live_half_offset"):
        out[col] = out[col].astype("Int64")
    return out.sort_values("half_offset", kind="stable", na_position="last").reset_index(drop=True)


def _check_service_offsets(store: Store) -> dict[int, int]:
    """The half queue offsets the check service has gone past (group CID_RMQ_SYS_TRANS's
    committed offsets on RMQ_SYS_TRANS_HALF_TOPIC), by queue id; empty where the store's config
    holds none or cannot be read."""
    from rmqlab.errors import RmqlabError

    try:
        offsets = store.config().consumer_offsets()
    except (RmqlabError, OSError, ValueError, ImportError):
        return {}
    mine = offsets[(offsets["group"] == CHECK_GROUP) & (offsets["topic"] == TRANS_HALF_TOPIC)]
    return {int(q): int(o) for q, o in zip(mine["queue_id"], mine["offset"], strict=True)}


def _text(value: Any) -> str | None:
    """A property value as property_values gives it: the text, or None where there is none."""
    return value if isinstance(value, str) else None


def _rocksdb_indexed(store: Store, phy_offset: int) -> bool:
    """Whether 5.5's TransMessageRocksDBStore has indexed the half record at `phy_offset` (its
    trans family's lastOffsetPy is past it): a record indexed and gone was ended or deleted."""
    db = store.message_rocksdb_records()
    last = None if db is None else db.transactions_last_offset
    return last is not None and phy_offset <= last
