"""What a 5.x broker's pop consumption leaves in flight, and what its revive service will redeliver.

Follows ``PopReviveService`` (broker module, rocketmq-all-5.3.3, commit 29d90a4f; the same rules
from 5.0.0, the broker name in the merge key from 5.3.1):

* A pop writes a checkpoint (``ck``) to queue ``reviveQid`` of ``rmq_sys_REVIVE_LOG_{cluster}``
  as a timer message due 1 s before its revive time; each acknowledgement writes an ``ack`` (or
  ``bAck``) due at the revive time. Until the timer wheel delivers them they wait on the wheel
  (:func:`rmqlab.store.timers.pending_timers`); then they are in the revive queue.
* The revive service of each revive queue reads from the offset committed for group
  ``CID_RMQ_SYS_REVIVE_GROUP`` plus one (``consumeReviveMessage``): a ``ck`` is filed under
  (topic, group, queue, start offset, pop time[, broker name]); an ack sets its checkpoint's bit
  (an ack read before its checkpoint is dropped, ``enableSkipLongAwaitingAck`` being off by
  default).
* Once a checkpoint's revive time has passed (``mergeAndRevive``) every message whose bit is
  clear is put into the group's pop retry topic (``reviveRetry``: ``%RETRY%{group}_{topic}``,
  or ``%RETRY%{group}+{topic}`` with ``enableRetryTopicV2``), queue 0, with reconsume times + 1;
  a checkpoint of a topic or group no longer configured is skipped.

So "why did my pop consumer get these messages again" is :func:`pop_redeliveries`: the messages
popped and never acknowledged. Messages whose checkpoint never reached the store (kept in memory
by ``PopBufferMergeService`` when ``enablePopBufferMerge`` is on) cannot be seen offline.

>>> import tempfile
>>> from rmqlab.store.directory import Store
>>> pop_checkpoints(Store(tempfile.mkdtemp())).shape[0], pop_redeliveries(Store(tempfile.mkdtemp())).shape[0]
(0, 0)
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.formats import revivelog as rl
from rmqlab.rules.properties import property_values
from rmqlab.rules.topics import REVIVE_TOPIC_PREFIX, is_valid_group, parse_pop_normal_topic, pop_retry_topic

if TYPE_CHECKING:
    from rmqlab.store.directory import Store

__all__ = ["revive_records", "merge_checkpoints", "TrackedCheckpoint", "pop_checkpoints", "pop_redeliveries",
           "pop_groups",
           "CHECKPOINT_COLUMNS", "REDELIVERY_COLUMNS"]

#: revive_records' columns
RECORD_COLUMNS = ("revive_topic", "revive_queue_id", "source", "revive_queue_offset", "offset_py", "tag",
                  "deliver_at_ms", "record", "error")
#: pop_checkpoints' columns
CHECKPOINT_COLUMNS = ("group", "topic", "queue_id", "start_offset", "num", "pop_time_ms", "invisible_ms",
                      "revive_time_ms", "acked", "unacked", "unacked_offsets", "source", "revive_topic",
                      "revive_queue_id", "revive_queue_offset", "offset_py", "broker_name", "reput_times",
                      "never_revived")
#: pop_redeliveries' columns
REDELIVERY_COLUMNS = ("group", "topic", "queue_id", "queue_offset", "msg_id", "keys", "revive_time_ms", "due",
                      "retry_topic", "reconsume_times", "outcome", "checkpoint_source", "checkpoint_offset_py")

#: reviveRetry's outcome for each message
REPUT, TOPIC_GONE, GROUP_GONE, MESSAGE_GONE, CK_LOST = (
    "re-put to the retry topic", "skipped: the topic is no longer configured",
    "skipped: the group is no longer configured", "not found: the queue no longer holds the offset",
    "never revived: its checkpoint timer is older than the wheel's window")


def revive_topics(store: Store) -> list[str]:
    """The revive topics the store has queues of (one a cluster: ``rmq_sys_REVIVE_LOG_{cluster}``)."""
    return sorted({t for t, _ in store.logical_queues() if t.startswith(REVIVE_TOPIC_PREFIX)})


def _committed_revive_offsets(store: Store) -> dict[tuple[str, int], int]:
    offsets = store.config().consumer_offsets()
    mine = offsets[(offsets["group"] == rl.REVIVE_GROUP) & offsets["topic"].str.startswith(REVIVE_TOPIC_PREFIX)]
    return {(t, int(q)): int(o) for t, q, o in zip(mine["topic"], mine["queue_id"], mine["offset"], strict=True)}


def _parse(tag: Any, body: Any, path: Any, offset: int) -> tuple[Any, str | None]:
    try:
        rec = rl.parse_revive_body(tag, bytes(body) if body is not None else b"", path=path, offset=offset)
    except FormatError as e:
        return None, str(e)
    if isinstance(rec, rl.PopCheckPoint) and rec.problems():
        return None, str(FormatError("; ".join(rec.problems()), path=path, offset=offset, field="d"))
    return rec, None


def _commitlog_namer(store: Store):
    """A function naming the CommitLog file that holds an offset (its real path, in a store over
    several folders too), from one listing of the files (:func:`rmqlab.formats.commitlog.store_files`)."""
    import bisect

    files = cl.store_files(store.commitlog_dir) if store.commitlog_dir.is_dir() else []
    starts = [f.start_offset for f in files]

    def name(offset: int) -> str:
        i = bisect.bisect_right(starts, offset) - 1
        return str(files[max(i, 0)].path) if files else str(store.commitlog_dir)

    return name


def commitlog_file(store: Store, offset: int) -> str:
    """The CommitLog file holding `offset` (to name it in errors)."""
    return _commitlog_namer(store)(offset)


def revive_records(store: Store, *, now: int | None = None) -> pd.DataFrame:
    """Every revive-log record the revive service has still to read, in the order it reads them:
    each revive queue from its committed offset + 1 (``source`` "revive queue"), then the
    records still waiting on the timer wheel for the revive topic ("timer wheel", by due time;
    on 5.5's RocksDB timeline "rocksdb timeline";
    those a restart at `now` would never deliver marked so in ``error``). ``record`` is the
    parsed body (:class:`rmqlab.formats.revivelog.PopCheckPoint` or ``PopAck``); a body that
    does not parse has ``record`` None and the typed error's text in ``error``.
    Cost: the revive queues' units from the committed offsets, one CommitLog read a record,
    and :func:`rmqlab.store.timers.pending_timers` when the store has a timer wheel."""
    from rmqlab.store.queues import LogicQueue
    from rmqlab.store.timers import has_timer_store, pending_timers

    rows: list[dict[str, Any]] = []
    committed = _committed_revive_offsets(store)
    file_of = _commitlog_namer(store)
    queues = store.logical_queues()
    for topic in sorted({t for t, _ in queues if t.startswith(REVIVE_TOPIC_PREFIX)}):
        for q in sorted(qid for t, qid in queues if t == topic):
            with LogicQueue(store, topic, q) as lq:
                start = max(committed.get((topic, q), -1) + 1, lq.min_offset)
                units = lq.units(start, lq.max_offset)
            if not len(units):
                continue
            offs = units["commitlog_offset"].to_numpy(np.int64)
            m = store.read_at(offs, body=True)
            for qo, off, tag, body, out_ms in zip(units["queue_offset"], offs, m["tags"], m["body"],
                                                   _timer_out(m["properties"]), strict=True):
                record, error = _parse(tag, body, file_of(int(off)), int(off))
                rows.append({"revive_topic": topic, "revive_queue_id": q, "source": "revive queue",
                             "revive_queue_offset": int(qo), "offset_py": int(off), "tag": tag,
                             "deliver_at_ms": out_ms, "record": record, "error": error})
    if has_timer_store(store):
        p = pending_timers(store, now=now)
        # what a race in the restart may enqueue again is not waiting: those records were revived
        p = p[p["real_topic"].fillna("").str.startswith(REVIVE_TOPIC_PREFIX) & ~p["may_enqueue_twice"]]
        p = p.sort_values(["fires_at_ms", "offset_py"], kind="stable")
        if len(p):
            m = store.read_at(p["offset_py"].to_numpy(np.int64), body=True)
            for (_, t), tag, body in zip(p.iterrows(), m["tags"], m["body"], strict=True):
                record, error = _parse(tag, body, file_of(int(t["offset_py"])), int(t["offset_py"]))
                if t["at_restart"] == "never delivered":
                    error = CK_LOST
                rows.append({"revive_topic": t["real_topic"], "revive_queue_id": int(t["real_queue_id"]),
                             "source": "rocksdb timeline" if t["source"] == "rocksdb timeline" else "timer wheel",
                             "revive_queue_offset": None, "offset_py": int(t["offset_py"]),
                             "tag": tag, "deliver_at_ms": t["fires_at_ms"], "record": record, "error": error})
    out = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    out["revive_queue_offset"] = out["revive_queue_offset"].astype("Int64")
    out["deliver_at_ms"] = pd.to_numeric(out["deliver_at_ms"], errors="coerce").astype("Int64")
    return out


def _timer_out(props: pd.Series) -> list[int | None]:
    return [int(v) if v is not None and v.isdigit() else None for v in property_values(props, "TIMER_OUT_MS")]


@dataclass
class TrackedCheckpoint:
    """A checkpoint as the revive service holds it: the bits set by the acks it read after it."""

    ck: rl.PopCheckPoint
    bits: int
    row: dict[str, Any]
    lost: bool


def merge_checkpoints(records: pd.DataFrame) -> list[TrackedCheckpoint]:
    """``consumeReviveMessage`` over each revive queue's records in reading order (the rows of
    :func:`revive_records`: revive_topic, revive_queue_id, record, error): checkpoints filed by
    merge key (a later one of the same key replaces it), each ack setting the bits of the filed
    checkpoint it matches (:meth:`PopAck.matches`); an ack read before its checkpoint, or in
    another revive queue, sets nothing. Returns the checkpoints still filed at the end, in
    reading order. Cost: one pass over the records."""
    tracked: list[TrackedCheckpoint] = []
    for (_, _), part in records.groupby(["revive_topic", "revive_queue_id"], sort=True):
        filed: dict[tuple[Any, ...], list[TrackedCheckpoint]] = {}
        for row in part.to_dict("records"):
            rec = row["record"]
            if isinstance(rec, rl.PopCheckPoint):
                if rec.topic is None or rec.group is None:
                    continue
                t = TrackedCheckpoint(rec, rec.bit_map, {str(k): v for k, v in row.items()}, row["error"] == CK_LOST)
                same = filed.setdefault(rec.merge_key(), [])
                same[:] = [x for x in same if x.ck.broker_name != rec.broker_name]
                same.append(t)
                tracked.append(t)
            elif isinstance(rec, rl.PopAck):
                for t in filed.get(rec.merge_key(), []):
                    if rec.matches(t.ck):
                        for off in rec.offsets:
                            i = t.ck.index_of_ack(off)
                            if i > -1:
                                t.bits |= 1 << i
    # a checkpoint replaced under its key is not revived (map.put): keep the last of each key
    last = {}
    for t in tracked:
        last[(t.row["revive_topic"], t.row["revive_queue_id"], t.ck.merge_key(), t.ck.broker_name)] = t
    return list(last.values())


def pop_checkpoints(store: Store, *, now: int | None = None) -> pd.DataFrame:
    """The pop checkpoints the revive service has yet to process, one row each, with the
    acknowledgements it will apply (see the module's rules): ``acked`` and ``unacked`` message
    counts, ``unacked_offsets`` (queue offsets of the popped topic), where the checkpoint waits
    (``source``: "revive queue" or "timer wheel"), its revive time, and ``never_revived``: its
    timer waits in a slot a restart at `now` skips (older than the wheel's window).

    Cost: :func:`revive_records`, then one pass over them."""
    rows = []
    for t in merge_checkpoints(revive_records(store, now=now)):
        offsets = t.ck.offsets()
        unacked = [o for i, o in enumerate(offsets) if not (t.bits >> i) & 1]
        rows.append({"group": t.ck.group, "topic": t.ck.topic, "queue_id": t.ck.queue_id,
                     "start_offset": t.ck.start_offset, "num": t.ck.num, "pop_time_ms": t.ck.pop_time,
                     "invisible_ms": t.ck.invisible_time, "revive_time_ms": t.ck.revive_time,
                     "acked": len(offsets) - len(unacked), "unacked": len(unacked), "unacked_offsets": unacked,
                     "source": t.row["source"], "revive_topic": t.row["revive_topic"],
                     "revive_queue_id": t.row["revive_queue_id"], "revive_queue_offset": t.row["revive_queue_offset"],
                     "offset_py": t.row["offset_py"], "broker_name": t.ck.broker_name,
                     "reput_times": t.ck.reput_count(), "never_revived": t.lost})
    out = pd.DataFrame(rows, columns=list(CHECKPOINT_COLUMNS))
    out["revive_queue_offset"] = out["revive_queue_offset"].astype("Int64")
    return out.sort_values(["revive_time_ms", "group", "topic", "queue_id", "start_offset"],
                           kind="stable").reset_index(drop=True)


def pop_redeliveries(store: Store, *, now: int | None = None,
                     auto_create_subscription_group: bool = True) -> pd.DataFrame:
    """The messages the revive service will put into pop retry topics, one row each: popped,
    never acknowledged, their checkpoint not yet processed. ``due`` says whether the revive time
    has passed at `now` (ms; None: the current time); ``outcome`` is what ``reviveRetry`` does
    with it ("re-put to the retry topic", or why it skips it: a group neither configured nor
    auto-created, ``findSubscriptionGroupConfig`` creating any legal name while
    `auto_create_subscription_group`, the broker's default, is on); ``retry_topic`` is
    ``%RETRY%{group}_{topic}``, or the ``+`` form where topics.json already has it
    (``enableRetryTopicV2``); ``reconsume_times`` is the message's own plus one.
    Cost: :func:`pop_checkpoints`, the popped queues' units at the unacknowledged offsets, one
    CommitLog read a message.

    >>> import tempfile
    >>> from rmqlab.store.directory import Store
    >>> list(pop_redeliveries(Store(tempfile.mkdtemp())).columns[:4])
    ['group', 'topic', 'queue_id', 'queue_offset']
    """
    from rmqlab.store.queues import LogicQueue

    now = int(time.time() * 1000) if now is None else int(now)
    cks = pop_checkpoints(store, now=now)
    cks = cks[cks["unacked"] > 0]
    rows: list[dict[str, Any]] = []
    if len(cks):
        cfg = store.config()
        topics = set(cfg.topics()["topic"])
        groups = set(cfg.subscription_groups()["group"])
        for ck in cks.to_dict("records"):
            normal = parse_pop_normal_topic(ck["topic"], ck["group"])
            retry = pop_retry_topic(ck["topic"], ck["group"], topics)
            # the queue the restarted broker's revive service reads, its dispatch's units included
            with LogicQueue(store, ck["topic"], int(ck["queue_id"]), after_restart=True) as lq:
                lo, hi = lq.min_offset, lq.max_offset
                at = {}
                for off in ck["unacked_offsets"]:
                    if lo <= off < hi:
                        u = lq.units(off, off + 1)
                        if len(u):
                            at[off] = int(u["commitlog_offset"].iloc[0])
            found = store.read_at(np.array(list(at.values()), dtype=np.int64), body=False) if at else pd.DataFrame()
            msg: dict[int, dict[Any, Any]] = dict(zip(at, found.to_dict("records"), strict=True)) if at else {}
            for off in ck["unacked_offsets"]:
                if ck["never_revived"]:
                    outcome = CK_LOST
                elif normal not in topics:
                    outcome = TOPIC_GONE
                elif ck["group"] not in groups and not (auto_create_subscription_group
                                                         and is_valid_group(ck["group"])):
                    outcome = GROUP_GONE
                elif off not in msg:
                    outcome = MESSAGE_GONE
                else:
                    outcome = REPUT
                m = msg.get(off)
                rows.append({"group": ck["group"], "topic": ck["topic"], "queue_id": ck["queue_id"],
                             "queue_offset": off,
                             "msg_id": None if m is None else m["uniq_key"],
                             "keys": None if m is None else m["keys"], "revive_time_ms": ck["revive_time_ms"],
                             "due": ck["revive_time_ms"] <= now, "retry_topic": retry,
                             "reconsume_times": None if m is None else int(m["reconsume_times"]) + 1,
                             "outcome": outcome, "checkpoint_source": ck["source"],
                             "checkpoint_offset_py": ck["offset_py"]})
    out = pd.DataFrame(rows, columns=list(REDELIVERY_COLUMNS))
    out["reconsume_times"] = out["reconsume_times"].astype("Int64")
    return out


def pop_groups(store: Store, *, now: int | None = None) -> pd.DataFrame:
    """One row per (group, topic, queue) that pops: the committed offset the next pop starts from
    (none: the pop's init mode decides, ``ConsumeInitMode`` MIN or MAX, which is how a group
    whose offset was lost starts again from 0), the queue's min and max offsets, the messages in
    flight (popped, unacknowledged, checkpoint not yet processed) and the mode a group was given
    (messageRequestMode.json). Cost: :func:`pop_checkpoints` and the config folder."""
    cks = pop_checkpoints(store, now=now)
    cfg = store.config()
    modes = cfg.frame("message_request_modes")
    offsets = cfg.consumer_offsets()
    pairs = {(g, t) for g, t in zip(cks["group"], cks["topic"], strict=True)}
    if len(modes):
        pairs |= {(g, t) for g, t, m in zip(modes["group"], modes["topic"], modes["mode"], strict=True) if m == "POP"}
    from rmqlab.store.queues import LogicQueue

    queues = store.logical_queues()
    rows = []
    for g, t in sorted(pairs):
        mine = cks[(cks["group"] == g) & (cks["topic"] == t)]
        qids = sorted({q for tt, q in queues if tt == t} | set(mine["queue_id"]))
        done = offsets[(offsets["group"] == g) & (offsets["topic"] == t)]
        committed = dict(zip(done["queue_id"], done["offset"], strict=True))
        mode = modes[(modes["group"] == g) & (modes["topic"] == t)]["mode"].tolist() if len(modes) else []
        for q in qids:
            with LogicQueue(store, t, int(q)) as lq:
                lo, hi = lq.min_offset, lq.max_offset
            sel = mine[mine["queue_id"] == q]
            rows.append({"group": g, "topic": t, "queue_id": int(q), "committed_offset": committed.get(q),
                         "min_offset": lo, "max_offset": hi, "in_flight": int(sel["unacked"].sum()),
                         "checkpoints": len(sel), "request_mode": mode[0] if mode else None})
    out = pd.DataFrame(rows, columns=["group", "topic", "queue_id", "committed_offset", "min_offset", "max_offset",
                                      "in_flight", "checkpoints", "request_mode"])
    out["committed_offset"] = out["committed_offset"].astype("Int64")
    return out
