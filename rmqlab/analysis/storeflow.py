"""The store's data flow, measured on a real store: producer -> CommitLog -> ReputMessageService
-> ConsumeQueue / IndexFile -> consumer, with the counts and offsets each stage holds, and one
message followed through every file that mentions it.

:func:`store_flow` reads a store directory (the sample store, a generated one, a real one) and
returns a :class:`StoreFlow`: what the CommitLog holds, how far dispatch got (the reput offset a
restarted broker would resume from), the ConsumeQueue units and index keys dispatch wrote, the
checkpoint, and a :class:`FollowedMessage`: its bytes in the CommitLog, its unit in its
ConsumeQueue (file and byte), and each of its index entries (file, slot, entry number).
:func:`rmqlab.viz.storeflow.store_flow_figure` draws it.

>>> from rmqlab.lab.sample import sample_store
>>> flow = store_flow(sample_store())
>>> flow.messages, flow.consume_queue_units, flow.index_keys, flow.queued_to == flow.commitlog_end
(31497, 30374, 76735, True)
>>> f = flow.followed
>>> (f.unit_commitlog_offset, len(f.index_entries)) == (f.phy_offset, len(f.index_keys))
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.jvm.hashcode import index_key
from rmqlab.jvm.longs import LONG_MAX
from rmqlab.rules.dispatch import goes_to_consume_queue, goes_to_consume_queue_many, goes_to_index, index_keys
from rmqlab.store.directory import Store

__all__ = ["IndexEntryRef", "FollowedMessage", "StoreFlow", "store_flow"]

_NO_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class IndexEntryRef:
    """Where one index key of a message lies: file, slot, entry number and the entry's byte
    offset in that file."""

    key: str
    file: str
    slot: int
    entry: int
    entry_offset: int


@dataclass(frozen=True)
class FollowedMessage:
    """One message as each file holds it. Offsets in bytes; times in ms since the epoch."""

    phy_offset: int
    total_size: int
    topic: str
    queue_id: int
    queue_offset: int
    store_timestamp: int
    commitlog_file: str
    position: int                       # byte of commitlog_file where the record starts
    consume_queue_file: str | None      # None for a message no ConsumeQueue takes
    unit_position: int | None           # byte of that file where its 20-byte unit starts
    unit_commitlog_offset: int | None   # what the unit says (must be phy_offset)
    unit_size: int | None
    unit_tags_code: int | None
    index_keys: list[str] = field(default_factory=list)
    index_entries: list[IndexEntryRef] = field(default_factory=list)


@dataclass(frozen=True)
class StoreFlow:
    """Counts of each stage of a store (see the module docstring). Bytes for offsets and sizes."""

    root: str
    messages: int
    producers: int                      # distinct born hosts (ip:port)
    commitlog_files: int
    commitlog_start: int                # first offset held
    commitlog_end: int                  # offset after the last complete message
    queued_to: int                      # CommitLog end the ConsumeQueues reach (Store.consume_queue_end)
    dispatched_to: int                  # where a restarted broker resumes dispatch (Store.reput_from_offset)
    consume_queues: int
    consume_queue_files: int
    consume_queue_units: int
    index_files: int
    index_keys: int
    checkpoint: dict[str, Any] | None
    followed: FollowedMessage | None

    @property
    def dispatch_lag_bytes(self) -> int:
        """CommitLog bytes written but not yet in a ConsumeQueue (the reput service's backlog)."""
        return self.commitlog_end - self.queued_to


class _Nothing:
    """A stand-in for an absent index folder (a store never dispatched to the index)."""

    files: list = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def _follow(store: Store, msgs, row: int) -> FollowedMessage:
    m = msgs.iloc[row]
    phy, topic, qid = int(m["phy_offset"]), str(m["topic"]), int(m["queue_id"])
    files = cl.store_files(store.commitlog_dir)
    holder = next(f for f in reversed(files) if f.start_offset <= phy)
    unit: Any = None
    cq_file = unit_pos = None
    if goes_to_consume_queue(int(m["sys_flag"])):
        with cq.ConsumeQueue.open(cq.queue_dir(store.root, topic, qid), store.consume_queue_file_size) as q:
            unit = q.unit(int(m["queue_offset"]))
            logical = int(m["queue_offset"]) * cq.UNIT_SIZE
            start = logical - logical % store.consume_queue_file_size
            cq_file, unit_pos = f"{start:020d}", logical - start
    indexed = goes_to_index(int(m["sys_flag"]))
    keys = [index_key(topic, k) for k in index_keys(m["keys"], m["uniq_key"])] if indexed else []
    refs: list[IndexEntryRef] = []
    if not store.index_dir.is_dir():
        keys_to_find: list[str] = []
    else:
        keys_to_find = keys
    with (store.index() if keys_to_find else _Nothing()) as index:
        for key in keys_to_find:
            for f in index.files:
                h = f.header
                if not h.begin_phy_offset <= phy <= h.end_phy_offset:
                    continue
                trace = f.trace_query(key, _NO_LIMIT, 0, LONG_MAX)
                hit = next((s for s in trace.steps if s.phy_offset == phy and s.hash_match), None)
                if hit is not None and all(r.entry != hit.entry or r.file != f.path.name for r in refs):
                    refs.append(IndexEntryRef(key, f.path.name, trace.slot, hit.entry,
                                              f.geometry.entry_offset(hit.entry)))
                    break
    return FollowedMessage(phy, int(m["total_size"]), topic, qid, int(m["queue_offset"]), int(m["store_timestamp"]),
                           holder.path.name, phy - holder.start_offset, cq_file, unit_pos,
                           None if unit is None else int(unit.commitlog_offset),
                           None if unit is None else int(unit.size), None if unit is None else int(unit.tags_code),
                           keys, refs)


def store_flow(store: Store, follow: int | None = None) -> StoreFlow:
    """The data flow of `store`, and the message at CommitLog offset `follow` followed through
    it (default: the first message from the middle of the log on with a ConsumeQueue unit and at
    least three index keys, else two, else the first message).

    Cost: one columnar read of the CommitLog, the ConsumeQueue headers, the index headers, and
    one chain walk per key of the followed message. Raises ValueError when `follow` is not the
    offset of a message.
    """
    msgs = store.messages()
    info = store.info()
    if follow is None:
        n_keys = msgs["keys"].fillna("").str.split(" ").map(lambda t: sum(1 for k in t if k)) + msgs["uniq_key"].notna()
        dispatchable = goes_to_consume_queue_many(msgs["sys_flag"].to_numpy())
        row = 0 if len(msgs) else None
        for want in (3, 2):
            ok = dispatchable & (n_keys >= want).to_numpy()
            ok[:len(msgs) // 2] = False
            if ok.any():
                row = int(np.flatnonzero(ok)[0])
                break
    else:
        rows = np.flatnonzero(msgs["phy_offset"].to_numpy() == follow)
        if not len(rows):
            raise ValueError(f"no message starts at CommitLog offset {follow}")
        row = int(rows[0])
    cq_files = sum(1 for t, q in store.queues() for p in cq.queue_dir(store.root, t, q).iterdir() if p.is_file())
    end = int((msgs["phy_offset"] + msgs["total_size"]).max()) if len(msgs) else 0
    return StoreFlow(
        root=str(store.root), messages=len(msgs), producers=int(msgs["born_host"].nunique()) if len(msgs) else 0,
        commitlog_files=info["commitlog_files"], commitlog_start=info["commitlog_min_offset"] or 0,
        commitlog_end=end, queued_to=store.consume_queue_end(), dispatched_to=store.reput_from_offset(),
        consume_queues=info["consume_queues"],
        consume_queue_files=cq_files, consume_queue_units=info["consume_queue_units"],
        index_files=info["index_files"], index_keys=info["index_keys"], checkpoint=info["checkpoint"],
        followed=None if row is None else _follow(store, msgs, row))
