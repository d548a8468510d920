"""IndexService.buildIndex, one decision at a time: the steps of the broker's flow chart for one
real put, each with the values it read and wrote.

:func:`trace_build_index` indexes one message into a writable
:class:`~rmqlab.store.indexservice.IndexService` through its own
:meth:`~rmqlab.store.indexservice.IndexService.build_index`
(the rules are written there once; this module only listens, through its ``observe`` hook) and
reads the file's bytes before and after every put: the slot's old value, the entry written, the
header. Each :class:`BuildStep` names a node of :data:`NODES`, the chart
:func:`rmqlab.viz.buildflow.build_flow_figure` draws, with one sentence of what happened there.

>>> import tempfile
>>> from rmqlab.store.indexservice import DispatchRequest, IndexService
>>> with IndexService(tempfile.mkdtemp(), hash_slot_num=4, index_num=3, read_only=False,
...                   clock=lambda: 1718000000000) as svc:
...     steps = trace_build_index(svc, DispatchRequest("T", 100, 1718000000400, keys="a b c"))
>>> [s.node for s in steps][:4]
['dispatch', 'file', 'new-file', 'offset-check']
>>> [s.values["entry"] for s in steps if s.node == "write-entry"]     # the third key rolls over
[1, 2, 1]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rmqlab.formats.indexfile import IndexFile
from rmqlab.jvm.hashcode import index_hash
from rmqlab.rules.dispatch import transaction_type
from rmqlab.store.indexservice import DispatchRequest, IndexService

__all__ = ["NODES", "BuildStep", "trace_build_index", "steps_frame"]

#: The chart's nodes: (id, kind, label); kind "start", "action" or "decision". Order = top down.
NODES: tuple[tuple[str, str, str], ...] = (
    ("dispatch", "start", "ReputMessageService: DispatchRequest\n-> IndexService.buildIndex"),
    ("file", "action", "getAndCreateLastIndexFile()"),
    ("new-file", "action", "last file full (or none): create one,\nnamed by the clock, seeded with its end values"),
    ("offset-check", "decision", "phyOffset < file.endPhyOffset?\n(already indexed)"),
    ("rollback-check", "decision", "transaction rollback?\n(sysFlag & 0xC == 0xC)"),
    ("keys", "action", "keys: UNIQ_KEY, then KEYS split on \" \"\n(empty tokens skipped), each topic#key"),
    ("full-check", "decision", "putKey: indexCount >= indexNum?\n(file full: retry on a new file)"),
    ("hash", "action", "keyHash = abs(String.hashCode(topic#key))\nslot = keyHash % hashSlotNum"),
    ("slot-read", "action", "slotValue = slot[slot]\n(outside 1..indexCount: 0, empty)"),
    ("time-diff", "action", "timeDiff = (store - begin timestamp) / 1000 s\n(0 if begin <= 0; clamped to 0..2^31-1)"),
    ("write-entry", "action", "entry[indexCount] = keyHash, phyOffset,\ntimeDiff, prevIndex = slotValue"),
    ("write-slot", "action", "slot[slot] = indexCount"),
    ("header", "action", "indexCount += 1, end := this (begin too if first);\n"
                         "hashSlotCount += 1 if the slot was empty"),
    ("skip", "end", "message skipped"),
    ("done", "end", "next message"),
)
_NODE_IDS = {n[0] for n in NODES}


@dataclass(frozen=True)
class BuildStep:
    """One node visited: its id (:data:`NODES`), what happened there, and the numbers involved
    (offsets in bytes, times in ms since the epoch, time diffs in seconds)."""

    node: str
    text: str
    values: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.node not in _NODE_IDS:
            raise ValueError(f"unknown node {self.node!r}")


def _name(f: IndexFile) -> str:
    return f.path.name


def trace_build_index(service: IndexService, msg: DispatchRequest) -> list[BuildStep]:
    """Index `msg` into `service` (writable) with the broker's buildIndex, and return the steps
    of the chart it went through, each with the values read from the file's bytes.

    Every put gives the steps full-check, then (when the file took it) hash, slot-read,
    time-diff, write-entry, write-slot and header; a refused put is followed by file and
    new-file, and the same key again. ``values`` of write-entry hold the entry number and its
    four fields as written on disk; header holds the header after the put. Cost: one put_key
    per key plus a few reads of the map.
    """
    steps: list[BuildStep] = [BuildStep("dispatch", (
        f"message at CommitLog offset {msg.phy_offset:,}, stored {msg.store_timestamp}, topic {msg.topic!r}, "
        f"KEYS {msg.keys!r}, UNIQ_KEY {msg.uniq_key!r}, sysFlag {msg.sys_flag}"),
        {"phy_offset": msg.phy_offset, "store_timestamp": msg.store_timestamp})]
    pending: dict[str, Any] = {}
    started = []                        # set once the first key is put: later "file" events are retries

    def offset_check(h) -> BuildStep:
        skip = msg.phy_offset < h.end_phy_offset
        return BuildStep("offset-check", f"{msg.phy_offset:,} < endPhyOffset {h.end_phy_offset:,}? "
                                         f"{'yes' if skip else 'no'}",
                         {"end_phy_offset": h.end_phy_offset, "skip": skip})

    def observe(event: str, d: dict[str, Any]) -> None:
        f = d.get("file")
        if event == "file":
            h = f.header
            steps.append(BuildStep("file", f"the writable file is {_name(f)} (indexCount {h.index_count:,} "
                                           f"of {f.geometry.index_num:,})", {"file": _name(f)}))
            if d["created"]:
                steps.append(BuildStep("new-file", (
                    f"created {_name(f)}, seeded with endPhyOffset {h.end_phy_offset:,} and endTimestamp "
                    f"{h.end_timestamp} (the previous file's end; 0 for a first file)"),
                    {"file": _name(f), "end_phy_offset": h.end_phy_offset, "end_timestamp": h.end_timestamp}))
            if not started:
                steps.append(offset_check(h))
        elif event == "skip":
            if d["why"] == "rollback":
                steps.append(BuildStep("rollback-check", "yes: a rolled-back transaction gets no index entry",
                                       {"sys_flag": msg.sys_flag, "rollback": True}))
            steps.append(BuildStep("skip", f"message skipped ({d['why']})", {"why": d["why"]}))
        elif event == "keys":
            steps.append(BuildStep("rollback-check", f"no (sysFlag & 0xC = {transaction_type(msg.sys_flag)})",
                                   {"sys_flag": msg.sys_flag, "rollback": False}))
            steps.append(BuildStep("keys", f"{len(d['keys'])} keys: {', '.join(d['keys'])}",
                                   {"keys": list(d["keys"])}))
        elif event == "put":
            started.append(True)
            h = f.header
            key_hash = index_hash(d["key"])
            slot = key_hash % f.geometry.hash_slot_num
            pending.update(header=h, slot=slot, key_hash=key_hash, slot_value=int(f.slots[slot]))
            full = f.is_write_full
            steps.append(BuildStep("full-check", f"put {d['key']!r} into {_name(f)}: indexCount {h.index_count:,} "
                                   f">= indexNum {f.geometry.index_num:,}? {'yes: refused' if full else 'no'}",
                                   {"key": d["key"], "index_count": h.index_count, "full": full}))
        elif event == "put-done" and d["ok"]:
            before, slot, value = pending["header"], pending["slot"], pending["slot_value"]
            n = before.index_count
            e = f.entry(n)
            steps.append(BuildStep("hash", f"abs(String.hashCode({d['key']!r})) = {pending['key_hash']:,}; "
                                   f"slot = {pending['key_hash']:,} % {f.geometry.hash_slot_num:,} = {slot}",
                                   {"key_hash": pending["key_hash"], "slot": slot}))
            # what putKey made of the slot is on disk: the prevIndex it wrote (0 = the slot was empty)
            used = e.prev_index
            note = " (empty)" if value == 0 else " (not an entry: read as empty)" if used != value else ""
            steps.append(BuildStep("slot-read", f"slot[{slot}] at byte {f.geometry.slot_offset(slot):,} holds "
                                   f"{value}{note}", {"slot": slot, "slot_value": used, "was_empty": used == 0}))
            steps.append(BuildStep("time-diff", f"({msg.store_timestamp} - {before.begin_timestamp}) / 1000 -> "
                                   f"{e.time_diff} s" + (" (no begin yet: 0)" if before.begin_timestamp <= 0 else ""),
                                   {"begin_timestamp": before.begin_timestamp, "time_diff": e.time_diff}))
            steps.append(BuildStep("write-entry", f"entry[{n}] at byte {f.geometry.entry_offset(n):,}: keyHash "
                                   f"{e.key_hash:,}, phyOffset {e.phy_offset:,}, timeDiff {e.time_diff}, prevIndex "
                                   f"{e.prev_index}", {"entry": n, "offset": f.geometry.entry_offset(n),
                                                       "key_hash": e.key_hash, "phy_offset": e.phy_offset,
                                                       "time_diff": e.time_diff, "prev_index": e.prev_index}))
            steps.append(BuildStep("write-slot", f"slot[{slot}] = {int(f.slots[slot])}",
                                   {"slot": slot, "slot_value": int(f.slots[slot])}))
            h = f.header
            steps.append(BuildStep("header", (
                f"beginTimestamp {h.begin_timestamp}, endTimestamp {h.end_timestamp}, hashSlotCount "
                f"{before.hash_slot_count} -> {h.hash_slot_count}, indexCount {before.index_count} -> {h.index_count}"),
                {"before": before.as_dict(), **h.as_dict()}))

    service.build_index(msg, observe=observe)
    if steps[-1].node != "skip":
        steps.append(BuildStep("done", "buildIndex returns; the reput service hands over the next message"))
    return steps


def steps_frame(steps: list[BuildStep]):
    """The steps as a table: step number, node, text.

    >>> steps_frame([BuildStep("done", "next")]).values.tolist()
    [[0, 'done', 'next']]
    """
    import pandas as pd

    return pd.DataFrame({"step": range(len(steps)), "node": [s.node for s in steps], "text": [s.text for s in steps]})
