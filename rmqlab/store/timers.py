"""What a 5.x broker's timer store still holds: which messages are pending, when each fires, for
which real topic, and what a restart would do with them.

Follows ``TimerMessageStore`` (rocketmq-all-5.3.3, commit 29d90a4f; the same rules from 5.0.0):

* **enqueue** reads queue 0 of ``rmq_sys_wheel_timer`` from ``currQueueOffset`` and appends a
  timer log unit a message to the slot of its ``TIMER_OUT_MS`` (or of a roll point, for a time past
  the roll window); the checkpoint's ``lastTimerQueueOffset`` says how far it had got, so the
  queue's units from there on are *awaiting enqueue*.
* **dequeue** reads the slot of ``currReadTimeMs``, walks its chain, drops every message whose
  ``REAL_TOPIC + "+" + UNIQ_KEY`` a delete marker of the same slot names, puts the others back
  into their real topic (a roll unit back into the timer topic) and moves on one slot; the
  checkpoint's ``lastReadTimeMs`` says how far it had got, so the units of slots from there on
  are *pending*, those before it *dequeued*.
* **recover** (a restart) reads from ``max(lastReadTimeMs, now - 7 days + 60 slots)``: pending
  units in older slots are never delivered; due ones fire at once. It enqueues again from
  ``min(q + 1, masterTimerQueueOffset)``, q the timer-queue offset of the message the timer log's
  last unit holds (``reviseQueueOffset``; the checkpoint's ``lastTimerQueueOffset`` when that
  message cannot be read); a master's ``masterTimerQueueOffset`` is its own last checkpointed
  offset, so the messages enqueued after the last checkpoint flush are enqueued a second time,
  and delivered twice. Both lags come from the checkpoint being flushed once a second
  (``TimerFlushService``, ``timerFlushIntervalMs``) while the log and the CommitLog, written
  through the page cache, keep everything up to a kill.

>>> import tempfile
>>> from rmqlab.store.directory import Store
>>> timer_entries(Store(tempfile.mkdtemp())).shape[0]
0
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.formats import timer as tm
from rmqlab.rules.properties import property_values
from rmqlab.rules.topics import TIMER_TOPIC

if TYPE_CHECKING:
    from rmqlab.store.directory import Store
    from rmqlab.store.queues import LogicQueue

__all__ = ["TimerState", "timer_state", "timer_entries", "pending_timers", "restart_queue_offset",
           "restart_queue_offsets", "TIMER_ENTRY_COLUMNS"]

#: timer_entries' columns, in order
TIMER_ENTRY_COLUMNS = (
    "pos", "slot_ms", "enqueue_time_ms", "magic", "roll", "delete_marker", "offset_py", "size_py", "state",
    "cancelled", "real_topic", "real_queue_id", "uniq_key", "keys", "tags", "fires_at_ms", "delete_key",
    "roll_times", "message_topic", "message_size", "hash_topic",
)
# the properties the timer store reads or writes (MessageConst)
_PROPS = {"real_topic": "REAL_TOPIC", "real_queue_id": "REAL_QID", "fires_at_ms": "TIMER_OUT_MS",
          "delete_key": "TIMER_DEL_UNIQKEY", "roll_times": "TIMER_ROLL_TIMES"}


@dataclass
class TimerState:
    """A store's timer files, read: the wheel, the log, the checkpoint and the precision they
    prove (:func:`rmqlab.formats.timer.infer_precision`, else the default). A context manager."""

    wheel: tm.TimerWheel
    log: tm.TimerLog
    checkpoint: tm.TimerCheckpoint
    precision_ms: int
    precision_inferred: bool

    def close(self) -> None:
        self.wheel.close()
        self.log.close()

    def __enter__(self) -> TimerState:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def has_timer_store(store: Store) -> bool:
    """Whether the store has a timer wheel (5.x with timerWheelEnable, the default)."""
    return (store.root / "timerwheel").is_file()


def timer_state(store: Store, *, precision_ms: int | None = None) -> TimerState:
    """Open the store's timer files. `precision_ms` is timerPrecisionMs (None: what the files
    prove, else 1000). A missing ``config/timercheck`` reads as zeros, as the broker starts
    without one. Raises FileNotFoundError without a wheel, GeometryError for a wheel or log of
    the wrong size. Cost: maps the files, one pass over the log's units."""
    root = store.root
    log = tm.TimerLog.open(root / "timerlog")
    wheel = tm.TimerWheel.open(root / "timerwheel", precision_ms=precision_ms or tm.DEFAULT_PRECISION_MS)
    inferred = False
    if precision_ms is None:
        found = tm.infer_precision(wheel.slots, log)
        if found:
            wheel.precision_ms, inferred = found, True
    precision_ms = wheel.precision_ms
    cp_path = root / "config" / "timercheck"
    checkpoint = tm.read_timer_checkpoint(cp_path) if cp_path.is_file() else tm.TimerCheckpoint()
    return TimerState(wheel, log, checkpoint, precision_ms, inferred)


def timer_entries(store: Store, *, precision_ms: int | None = None, state: TimerState | None = None) -> pd.DataFrame:
    """Every unit of the timer log, one row each, with its message and its state.

    Columns (:data:`TIMER_ENTRY_COLUMNS`): ``pos`` (timer log offset), ``slot_ms`` (the slot it
    is due in: curr_write_time + delay_time), ``enqueue_time_ms``, ``magic``, ``roll`` and
    ``delete_marker`` (the magic's bits), ``offset_py`` / ``size_py`` (its message in the
    timer topic), ``state`` ("pending": its slot is not yet read, "dequeued"), ``cancelled`` (a
    delete marker of its slot names it), and from the message: ``real_topic``,
    ``real_queue_id``, ``uniq_key``, ``keys``, ``tags``, ``fires_at_ms`` (TIMER_OUT_MS: when it
    is delivered, whatever slot a roll put it in), ``delete_key`` (a marker's
    TIMER_DEL_UNIQKEY), ``roll_times``, ``message_topic`` (rmq_sys_wheel_timer for a healthy
    unit), ``message_size`` (its TOTALSIZE) and ``hash_topic`` (the unit's hash of the real
    topic). A store without a wheel has none. Messages are read with
    :func:`rmqlab.formats.commitlog.read_at`; a unit pointing outside the CommitLog (deleted
    files, a truncated copy: apache/rocketmq#10668) gets None in the message columns.
    ``attrs`` holds the ``precision_ms`` used and the timer ``checkpoint``
    (:class:`rmqlab.formats.timer.TimerCheckpoint`). `state`: timer files the caller has open
    (:func:`timer_state`), else they are opened and closed here.
    Cost: the log's units, one CommitLog read of theirs.
    """
    cols: dict[str, list] = {c: [] for c in TIMER_ENTRY_COLUMNS}
    if not has_timer_store(store):
        return pd.DataFrame(cols)
    ts = state if state is not None else timer_state(store, precision_ms=precision_ms)
    try:
        u = ts.log.units
        slot_ms = ts.log.delayed_time()
        magic = u["magic"].astype(np.int32)
        frame = pd.DataFrame({
            "pos": ts.log.positions, "slot_ms": slot_ms, "enqueue_time_ms": u["curr_write_time"].astype(np.int64),
            "magic": magic, "roll": (magic & tm.MAGIC_ROLL) != 0,
            "delete_marker": ((magic & tm.MAGIC_DELETE) != 0) & ((magic & tm.MAGIC_ROLL) == 0),
            "offset_py": u["offset_py"].astype(np.int64), "size_py": u["size_py"].astype(np.int32),
            "state": np.where(slot_ms >= ts.checkpoint.last_read_time_ms, "pending", "dequeued"),
            "hash_topic": u["hash_topic"].astype(np.int32),
        })
        found = {"precision_ms": ts.precision_ms, "checkpoint": ts.checkpoint}
    finally:
        if state is None:
            ts.close()
    msgs = _messages_at(store, frame["offset_py"].to_numpy())
    for c in ("real_topic", "real_queue_id", "fires_at_ms", "delete_key", "roll_times"):
        frame[c] = property_values(msgs["properties"], _PROPS[c])
    frame["uniq_key"] = msgs["uniq_key"].to_numpy()
    frame["keys"] = msgs["keys"].to_numpy()
    frame["tags"] = msgs["tags"].to_numpy()
    frame["message_topic"] = msgs["topic"].to_numpy()
    frame["message_size"] = pd.array(msgs["total_size"].to_numpy(), dtype="Int64")
    frame["fires_at_ms"] = pd.to_numeric(frame["fires_at_ms"], errors="coerce").astype("Int64")
    frame["real_queue_id"] = pd.to_numeric(frame["real_queue_id"], errors="coerce").astype("Int64")
    frame["roll_times"] = pd.to_numeric(frame["roll_times"], errors="coerce").astype("Int64")
    frame["cancelled"] = _cancelled(frame)
    out = frame[list(TIMER_ENTRY_COLUMNS)]
    out.attrs.update(found)
    return out


def _messages_at(store: Store, offsets: np.ndarray) -> pd.DataFrame:
    """topic, uniq_key, keys, tags, properties, total_size, queue_offset of the messages at `offsets`
    (None where an offset is no message's start: outside the CommitLog or not a record)."""
    cols = ["topic", "uniq_key", "keys", "tags", "properties", "total_size", "queue_offset"]
    out = pd.DataFrame({c: pd.Series([None] * len(offsets), dtype=object) for c in cols})
    if not len(offsets) or not store._has_commitlog():
        return out
    starts, sizes, end = store.commitlog_extent()
    inside = np.zeros(len(offsets), bool)
    for s, n in zip(starts, sizes, strict=True):
        inside |= (offsets >= s) & (offsets < min(s + n, end))
    try:
        got = cl.read_at(store.commitlog_dir, offsets[inside], body=False)
    except (FormatError, ValueError):
        # some unit points into a record's middle or at damage: read them one by one
        rows = []
        for off in offsets[inside]:
            try:
                rows.append(cl.read_at(store.commitlog_dir, [off], body=False)[cols].iloc[0].to_dict())
            except (FormatError, ValueError):
                rows.append(dict.fromkeys(cols))
        got = pd.DataFrame(rows, columns=cols)
    for c in cols:
        out.loc[inside, c] = got[c].to_numpy()
    return out


def _cancelled(frame: pd.DataFrame) -> np.ndarray:
    """Whether each message unit is named by a delete marker of its own slot
    (TimerMessageStore.buildDeleteKey: real topic + "+" + unique key)."""
    markers = frame[frame["delete_marker"] & frame["delete_key"].notna()]
    if not len(markers):
        return np.zeros(len(frame), bool)
    named = markers["slot_ms"].astype(str) + " " + markers["delete_key"].astype(str)
    key = (frame["slot_ms"].astype(str) + " " + frame["real_topic"].fillna("").astype(str) + "+"
           + frame["uniq_key"].fillna("").astype(str))
    return key.isin(set(named)).to_numpy() & ~frame["delete_marker"].to_numpy()


def pending_timers(store: Store, *, now: int | None = None, precision_ms: int | None = None) -> pd.DataFrame:
    """The timer messages the store still holds, one row each, soonest first: those in wheel
    slots not yet read (delete markers and the messages they cancel left out), those on 5.5's
    RocksDB timeline not yet delivered (:func:`rocksdb_timeline`), and those in the timer
    topic's queue not yet enqueued (``source`` "wheel", "rocksdb timeline" or "timer queue").

    Columns: source, real_topic, real_queue_id, uniq_key, keys, tags, fires_at_ms (when it is
    delivered), slot_ms (the slot it waits in; a rolled message's next roll point, None for one
    not yet enqueued), rolled, offset_py, ``at_restart``: what a broker started at `now` (ms;
    None: the current time) would do with it: "on time", "fires at once" (its slot is due), or
    "never delivered" (its slot is older than the wheel's 7 days less 60 slots, which recovery
    skips); and ``already_delivered``: a copy is already in its real topic (a message with its
    unique key and TIMER_DEQUEUE_MS, stored after it), so the broker had delivered it after its
    last checkpoint flush and a restart delivers it again; ``enqueued_twice``: a "timer queue"
    row whose message the timer log already holds (enqueued after the last checkpoint flush: the
    restart enqueues it again, :func:`restart_queue_offset`), so the message has two rows and is
    delivered twice. A message a restart delivers a second time is one with
    ``already_delivered`` or ``enqueued_twice``; ``may_enqueue_twice``: a "timer queue" row the
    timer log already holds that a restart enqueues again or not, as a race in the broker
    decides (a RocksDB ConsumeQueue's recovery, :func:`restart_queue_offsets`). Cost:
    :func:`timer_entries`, the timer topic's queue from the restart's earliest offset on, and
    the CommitLog's headers from the oldest pending message on.

    >>> import tempfile
    >>> from rmqlab.store.directory import Store
    >>> list(pending_timers(Store(tempfile.mkdtemp())).columns)[:3]
    ['source', 'real_topic', 'real_queue_id']
    """
    now = int(time.time() * 1000) if now is None else int(now)
    e = timer_entries(store, precision_ms=precision_ms)
    wheel = e[(e["state"] == "pending") & ~e["delete_marker"] & ~e["cancelled"]]
    cols = ["source", "real_topic", "real_queue_id", "uniq_key", "keys", "tags", "fires_at_ms", "slot_ms", "rolled",
            "offset_py"]
    out = pd.DataFrame({"source": "wheel", "real_topic": wheel["real_topic"], "real_queue_id": wheel["real_queue_id"],
                        "uniq_key": wheel["uniq_key"], "keys": wheel["keys"], "tags": wheel["tags"],
                        "fires_at_ms": wheel["fires_at_ms"], "slot_ms": wheel["slot_ms"].astype("Int64"),
                        "rolled": wheel["roll"], "offset_py": wheel["offset_py"]}, columns=cols)
    timeline = rocksdb_timeline(store)
    parts = [out]
    if timeline is not None:
        parts.append(timeline.pending(store)[cols])
    queued = _awaiting_enqueue(store, e, timeline)
    if len(queued):
        parts.append(queued[[*cols, "maybe"]])
    out = pd.concat(parts, ignore_index=True) if len(parts) > 1 else out
    if has_timer_store(store):
        precision, last_read = e.attrs["precision_ms"], e.attrs["checkpoint"].last_read_time_ms
        read_from = max(last_read, now // precision * precision - tm.SLOTS_TOTAL * precision
                        + tm.TIMER_BLANK_SLOTS * precision)
        # a message not yet enqueued goes on the wheel (or the timeline) at its own time, or out at
        # once when that is past (TimerEnqueuePutService): the wheel's window does not drop it; the
        # RocksDB timeline resumes from its checkpoint one precision step at a time, dropping none
        on_wheel = out["source"].to_numpy() == "wheel"
        slot = out["slot_ms"].fillna(out["fires_at_ms"]).fillna(now).astype(np.int64).to_numpy()
        out["at_restart"] = np.where(on_wheel & (slot < read_from), "never delivered",
                                     np.where(slot <= now, "fires at once", "on time"))
    else:
        out["at_restart"] = pd.Series(dtype=object)
    queued_again = out["offset_py"].isin(e["offset_py"]).to_numpy()   # the timer log holds it already
    from_queue = (out["source"] == "timer queue").to_numpy()
    maybe = from_queue & (out["maybe"].to_numpy(bool, na_value=False) if "maybe" in out else False)
    # a row only a race enqueues again was delivered before the checkpoint: its copies say nothing
    delivered = _delivered_copies(store, out.loc[~maybe, "offset_py"], timeline is not None)
    out["already_delivered"] = out["uniq_key"].isin(delivered).to_numpy() & ~maybe
    out["enqueued_twice"] = from_queue & queued_again & ~maybe
    out["may_enqueue_twice"] = maybe & queued_again
    # a row only possibly read again that the log does not hold is awaiting enqueue as any other
    out = out.drop(columns="maybe", errors="ignore")
    return out.sort_values(["fires_at_ms", "offset_py"], kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class RocksDBTimeline:
    """5.5's RocksDB timer store (``timerRocksDBEnable``: TimerMessageRocksDBStore and its
    Timeline, in ``rocksdbstore/``'s timer column family; the wheel then takes no new message).
    ``records`` (deliver_ms, uniq_key, size, phy_offset: each timer message put on the timeline
    and not cancelled), ``checkpoint`` (timeline_checkpoint: the records due before it were
    delivered; the delete service removes them 30 minutes later) and ``scan_offset``
    (sys_topic_scan_offset_checkpoint: the timer topic's next queue offset to read)."""

    records: pd.DataFrame
    checkpoint: int
    scan_offset: int

    def pending(self, store: Store) -> pd.DataFrame:
        """The records not yet delivered (due at or after :attr:`checkpoint`), with their
        messages: the columns of :func:`pending_timers`, source "rocksdb timeline"."""
        r = self.records[self.records["deliver_ms"] >= self.checkpoint]
        offs = r["phy_offset"].to_numpy(np.int64)
        m = _messages_at(store, offs)
        props = m["properties"]
        return pd.DataFrame({
            "source": "rocksdb timeline", "real_topic": property_values(props, "REAL_TOPIC"),
            "real_queue_id": pd.to_numeric(property_values(props, "REAL_QID"), errors="coerce").astype("Int64"),
            "uniq_key": r["uniq_key"].to_numpy(), "keys": m["keys"], "tags": m["tags"],
            "fires_at_ms": pd.array(r["deliver_ms"].to_numpy(np.int64), dtype="Int64"),
            "slot_ms": pd.array([None] * len(r), dtype="Int64"), "rolled": False, "offset_py": offs})


def rocksdb_timeline(store: Store) -> RocksDBTimeline | None:
    """The store's RocksDB timeline (:class:`RocksDBTimeline`), None where ``rocksdbstore/``
    has no timer checkpoint (timerRocksDBEnable off), or cannot be read here (no rocksdict).
    Cost: the database read once (:meth:`Store.message_rocksdb_records`)."""
    try:
        db = store.message_rocksdb_records()
    except ImportError:
        return None
    if db is None or "sys_topic_scan_offset_checkpoint" not in db.timer_checkpoints:
        return None
    cps = db.timer_checkpoints
    return RocksDBTimeline(db.timers, int(cps.get("timeline_checkpoint", 0)),
                           int(cps["sys_topic_scan_offset_checkpoint"]))


def _delivered_copies(store: Store, offsets: pd.Series, timeline: bool = False) -> set[str]:
    """Unique keys of the timers TimerMessageStore has put back into their real topics
    (convert(): TIMER_DEQUEUE_MS set) in the CommitLog from the oldest of `offsets` on; with the
    RocksDB `timeline` also those TimerMessageRocksDBStore put back, which carry TIMER_OUT_MS
    but no TIMER_DEQUEUE_MS (a message outside the timer topic has TIMER_OUT_MS only as a copy)."""
    if not len(offsets) or not store._has_commitlog():
        return set()
    import bisect

    starts, _, end = store.commitlog_extent()
    since = int(offsets.min())
    if not starts or since < starts[0] or since >= end:
        return set()
    # from the start of the file holding it: a file starts with a record (or a DLedger entry,
    # whose record the unit's offset points inside); a torn tail ends the read, not the answer
    first = starts[bisect.bisect_right(starts, since) - 1]
    m = cl.read_columns(store.commitlog_dir, body=False, start_offset=first, on_error="report")
    mark = "(?:TIMER_DEQUEUE_MS|TIMER_OUT_MS)" if timeline else "TIMER_DEQUEUE_MS"
    copies = m["properties"].str.contains(f"(?:^|\x02){mark}\x01", na=False, regex=True) & (
        m["topic"] != TIMER_TOPIC)
    return set(m.loc[copies, "uniq_key"].dropna())


def restart_queue_offset(store: Store, entries: pd.DataFrame | None = None) -> int | None:
    """The timer topic's queue offset a broker restarted on the store enqueues from at the latest
    (the second of :func:`restart_queue_offsets`): the messages from there on that the timer log
    already holds are surely enqueued twice. None without a checkpoint.

    >>> import tempfile
    >>> from rmqlab.store.directory import Store
    >>> restart_queue_offset(Store(tempfile.mkdtemp())) is None
    True
    """
    both = restart_queue_offsets(store, entries)
    return None if both is None else both[1]


def restart_queue_offsets(store: Store, entries: pd.DataFrame | None = None) -> tuple[int, int] | None:
    """The earliest and the latest timer-topic queue offset a broker restarted on the store may
    enqueue from (TimerMessageStore.recover, 5.0.0-5.5.x): one past the queue offset of the
    message the timer log's last unit holds (reviseQueueOffset; the checkpoint's
    lastTimerQueueOffset when the log is empty or that message cannot be read), at most the
    checkpoint's masterTimerQueueOffset; from 5.3.2 (``timer_recover_clamp``) then moved into
    the timer queue's [min, max] as the store's recovery left it. A ConsumeQueue file holds the
    units the recovery dispatched, so both are the same; a RocksDB ConsumeQueue takes them
    through its group-commit thread, which may not have stored them when the timer store
    recovers (after a kill -9 the database may hold none), so the earliest is the queue as
    stored. None without a checkpoint. `entries`: :func:`timer_entries` when the caller has
    them. Cost: :func:`timer_entries` (or none), one CommitLog record read, the queue's bounds.

    >>> import tempfile
    >>> from rmqlab.store.directory import Store
    >>> restart_queue_offsets(Store(tempfile.mkdtemp())) is None
    True
    """
    from rmqlab.rules.versions import layout_facts
    from rmqlab.store.queues import LogicQueue

    cp_path = store.root / "config" / "timercheck"
    if not has_timer_store(store) or not cp_path.is_file():
        return None
    cp = tm.read_timer_checkpoint(cp_path)
    e = timer_entries(store) if entries is None else entries
    start = cp.last_timer_queue_offset
    if len(e):
        last = e.loc[e["pos"].idxmax()]
        q = _messages_at(store, np.array([last["offset_py"]], np.int64))["queue_offset"].iloc[0]
        if q is not None:
            start = int(q) + 1
    start = min(start, cp.master_timer_queue_offset)
    if not layout_facts(store.broker_version).timer_recover_clamp:
        return start, start
    with LogicQueue(store, TIMER_TOPIC, 0, after_restart=True) as q:
        if q.kind == "none" and q.max_offset == 0:    # no queue: recover leaves the offset as it is
            return start, start
        latest = _into_queue(start, q)
        rocksdb = q.kind == "rocksdb"
    if not rocksdb:
        return latest, latest
    with LogicQueue(store, TIMER_TOPIC, 0) as stored:
        earliest = _into_queue(start, stored)
    return min(earliest, latest), latest


def _into_queue(offset: int, queue: LogicQueue) -> int:
    """`offset` moved into `queue`'s [min, max] as recover moves currQueueOffset: up to the min
    when below it, else down to the max when above it."""
    return queue.min_offset if offset < queue.min_offset else min(offset, queue.max_offset)


def _awaiting_enqueue(store: Store, entries: pd.DataFrame, timeline: RocksDBTimeline | None = None) -> pd.DataFrame:
    """The timer topic's queue 0 from where a restarted broker reads it
    (:func:`restart_queue_offset`), or with the RocksDB timeline from the larger of that and the
    timeline's scan offset (TimerMessageRocksDBStore.start): messages the broker stored but had
    not yet put on the wheel or the timeline, and those it put there after its last checkpoint.
    The queue is the one the restart holds, its dispatch's units included (a RocksDB queue after
    a kill -9 may hold none: ``LogicQueue(after_restart=True)``)."""
    from rmqlab.store.queues import LogicQueue

    both = restart_queue_offsets(store, entries)
    if both is None:
        return pd.DataFrame()
    earliest, latest = both
    if timeline is not None:
        earliest, latest = max(earliest, timeline.scan_offset), max(latest, timeline.scan_offset)
    with LogicQueue(store, TIMER_TOPIC, 0, after_restart=True) as q:
        units = q.units(max(earliest, q.min_offset), q.max_offset)
    if not len(units):
        return pd.DataFrame()
    offs = units["commitlog_offset"].to_numpy(np.int64)
    maybe = units["queue_offset"].to_numpy(np.int64) < latest
    m = _messages_at(store, offs)
    keep = property_values(m["properties"], "TIMER_DEL_UNIQKEY").isna().to_numpy()   # delete markers cancel, not fire
    offs, m, maybe = offs[keep], m[keep].reset_index(drop=True), maybe[keep]
    return pd.DataFrame({
        "source": "timer queue", "real_topic": property_values(m["properties"], "REAL_TOPIC"),
        "real_queue_id": pd.to_numeric(property_values(m["properties"], "REAL_QID"), errors="coerce").astype("Int64"),
        "uniq_key": m["uniq_key"], "keys": m["keys"], "tags": m["tags"],
        "fires_at_ms": pd.to_numeric(property_values(m["properties"], "TIMER_OUT_MS"), errors="coerce").astype("Int64"),
        "slot_ms": pd.array([None] * len(offs), dtype="Int64"), "rolled": False, "offset_py": offs,
        "maybe": maybe,
    })
