"""The checks of one BatchConsumeQueue folder, and of the light message queues' units.

BatchConsumeQueue files follow ``store/.../queue/BatchConsumeQueue.java`` (rocketmq-all-5.3.1,
commit b122c8109d62); their units are checked against the CommitLog messages with the dispatch
rules of :mod:`rmqlab.rules.dispatch` (``CommitLog.setBatchSizeIfNeeded``). LMQ units follow
``ConsumeQueue.multiDispatchLmqQueue`` (4.9.3+): a ``consumequeue/%LMQ%.../0`` unit points at a
message of another topic that names the queue in INNER_MULTI_DISPATCH with that queue offset.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from rmqlab.errors import CorruptIndexError, RmqlabError
from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import consumequeue as cq
from rmqlab.rules.dispatch import batch_unit, goes_to_consume_queue_many, is_lmq, lmq_dispatch_many, property_value
from rmqlab.verify.check_commitlog import Messages
from rmqlab.verify.common import add_problem
from rmqlab.verify.cross import RunningFirst, merge_checks, window_units
from rmqlab.verify.report import FileReport, make_problem, problem_from_error

_CODES = (
    ("file name", "bcq.file-name"),
    ("file size", "bcq.file-size"),
    ("end of the queue", "bcq.end"),
    ("recover() takes as full", "bcq.unit"),
    ("after the end", "bcq.tail"),
    ("not contiguous: base", "bcq.base-offset"),
    ("commitlog offset not greater", "bcq.order"),
    ("compacted_offset", "bcq.reserved"),
    ("reserved field", "bcq.reserved"),
    ("past the CommitLog's max offset", "bcq.past-commitlog-end"),
)


def _code(err: RmqlabError) -> str:
    for text, code in _CODES:
        if text in err.reason or text == err.field:
            return code
    return "bcq.invariant"


def batch_queue_folders(root: Path) -> list[Path]:
    """Queue folders under a batchconsumequeue root, a topic folder, or a queue folder itself."""
    subs = sorted(c for c in root.iterdir() if c.is_dir())
    if root.name != bcq.FOLDER and (any(c.is_file() for c in root.iterdir()) or not subs):
        return [root]
    if root.name != bcq.FOLDER:
        return [c for c in subs if c.name.isdigit()]
    return [q for t in subs for q in sorted(t.iterdir()) if q.is_dir() and q.name.isdigit()]


#: invariants the broker does not hold a queue to (it loads and serves the queue), reported as
#: warnings with why a broker writes them
_WARNINGS = {
    "bcq.base-offset": (
        "; the broker loads the queue (BatchConsumeQueue's recovery does not check this) but a lookup by "
        "offset finds no unit for the offsets in the gap. A DLedger CommitLog writes such gaps (5.x): its "
        "inner batches carry INNER_NUM but no INNER_BASE (BatchConsumeQueue.assignQueueOffset, which adds it, "
        "is not on DLedgerCommitLog's path), so the dispatch takes a batch of 1 (CommitLog.setBatchSizeIfNeeded) "
        "while the queue offset advanced by INNER_NUM"),
}


def batch_queue_checks(q: bcq.BatchConsumeQueue, commitlog_end: int | None) -> FileReport:
    """One folder's own invariants as a report of kind ``batchconsumequeue`` (those of
    :data:`_WARNINGS` as warnings)."""
    r = FileReport(str(q.folder), "batchconsumequeue")
    r.counts = {"units": q.unit_count, "files": len(q.files), "min_offset": q.min_offset,
                "max_offset": q.max_offset}
    for e in q.problems(commitlog_end):
        code = _code(e)
        if code in _WARNINGS:
            e = type(e)(e.reason + _WARNINGS[code], path=e.path, offset=e.offset, field=e.field)
        r.problems.append(problem_from_error(code, e, "warning" if code in _WARNINGS else "error"))
    return r


def verify_batch_consume_queue(path: Path, mapped_file_size: int | None = None) -> list[FileReport]:
    """Each queue folder under `path` checked on its own (no CommitLog)."""
    out = []
    for folder in batch_queue_folders(Path(path)):
        try:
            q = bcq.BatchConsumeQueue.open(folder, bcq.batch_file_size(folder, mapped_file_size), strict=False)
        except RmqlabError as e:
            out.append(FileReport(str(folder), "batchconsumequeue", {"unreadable": True},
                                  [problem_from_error(_code(e), e)]))
            continue
        with q:
            out.append(batch_queue_checks(q, None))
    return out


class BatchQueueCross:
    """The units of one BatchConsumeQueue against the messages they point at, a window of the
    message table at a time: a message start of this topic and queue, TOTALSIZE, tags code,
    store time, and (msg_base_offset, batch_size) as the dispatch makes them from the message's
    QUEUEOFFSET, INNER_BASE and INNER_NUM; a committed or plain message."""

    CHECKS = ("bcq.phy-offset", "bcq.queue", "bcq.size", "bcq.tags-code", "bcq.store-time", "bcq.transaction",
              "bcq.batch")

    def __init__(self) -> None:
        self.checks = {name: RunningFirst() for name in self.CHECKS}
        self.ordered: dict[str, bool] = {}

    def add(self, q: bcq.BatchConsumeQueue, w: Messages) -> None:
        """Check the units of the open queue `q` that window `w` answers for."""
        def segments():
            base = 0
            for bf, units in q.segments():
                yield str(bf.path), base, units
                base += len(units)

        found = window_units(segments(), w, self.ordered, bcq.UNIT_SIZE)
        if found is not None:
            self._add(q, w, *found)

    def _add(self, q: bcq.BatchConsumeQueue, w: Messages, u: np.ndarray, ordinal: np.ndarray, pos: np.ndarray,
             files: list[str], fidx: np.ndarray) -> None:
        co = u["commitlog_offset"].astype(np.int64)
        row, hit = w.lookup(co)
        r = np.where(hit, row, 0)
        check = ~w.expired(co)

        def bad(code, mask, fld, what):
            self.checks[code].add(mask, ordinal, lambda i: make_problem(
                code, CorruptIndexError, f"unit {pos[i] // bcq.UNIT_SIZE}: {what(i)}", files[fidx[i]],
                int(pos[i]) + bcq.UNIT.offset(fld), f"unit.{fld}"))

        bad("bcq.phy-offset", check & ~hit, "commitlog_offset",
            lambda i: f"commitlog offset {co[i]} is not where a message starts: {w.where(int(co[i]))}")
        if not w.n:
            return
        m = check & hit
        qids = w.queue_id
        bad("bcq.queue", m & ((w.topic_code[r] != w.code_of_topic(q.topic))
                              | (qids[r] != (q.queue_id if q.queue_id is not None else -1))),
            "commitlog_offset",
            lambda i: f"the message at {co[i]} belongs to topic {w.topic(int(r[i]))!r} queue {qids[r[i]]}")
        sz = u["size"].astype(np.int64)
        bad("bcq.size", m & (sz != w.total_size[r]), "size",
            lambda i: f"size {sz[i]} but the message has TOTALSIZE {w.total_size[r[i]]}")
        tc = u["tags_code"].astype(np.int64)
        bad("bcq.tags-code", m & (tc != w.tags_codes[r]), "tags_code",
            lambda i: f"tags code {tc[i]} but the message gives {w.tags_codes[r[i]]}")
        st = u["store_time"].astype(np.int64)
        bad("bcq.store-time", m & (st != w.store_ts[r]), "store_time",
            lambda i: f"store time {st[i]} but the message's STORETIMESTAMP is {w.store_ts[r[i]]}")
        bad("bcq.transaction", m & ~goes_to_consume_queue_many(w.sys_flag[r]), "commitlog_offset",
            lambda i: f"the message at {co[i]} is a prepared or rolled-back transaction record")
        mqoff = w.queue_offset
        props = w.properties_at(r)     # batch_unit reads INNER_NUM and INNER_BASE only
        want = np.zeros((len(u), 2), np.int64)
        ok = np.ones(len(u), bool)
        for i in np.flatnonzero(m):
            block = props[i]
            try:
                want[i] = batch_unit(int(mqoff[r[i]]), {k: v for k in ("INNER_NUM", "INNER_BASE")
                                                        if (v := property_value(block, k)) is not None})
            except ValueError:
                ok[i] = False
        base, size = u["msg_base_offset"].astype(np.int64), u["batch_size"].astype(np.int64)
        bad("bcq.batch", m & ((~ok) | (base != want[:, 0]) | (size != want[:, 1])), "msg_base_offset",
            lambda i: f"(msg_base_offset, batch_size) ({base[i]}, {size[i]}) but the message gives "
                      f"{tuple(int(x) for x in want[i]) if ok[i] else 'unparseable INNER_BASE / INNER_NUM'}")

    def state(self) -> dict:
        """What the checks found (picklable), for :meth:`merge`."""
        return self.checks

    def merge(self, state: dict) -> None:
        """Take in :meth:`state` of the same queue's units checked against other windows."""
        merge_checks(self.checks, state)

    def problems(self) -> list:
        out: list = []
        for check in self.checks.values():
            add_problem(out, check.result())
        return out


def lmq_queue_cross(q: cq.ConsumeQueue, msgs: Messages, *, enable_lmq: bool | None = None,
                    broker_version: str | None = None, store_messages: int | None = None) -> list:
    """A light message queue's units against the messages naming it: each unit points at a
    message whose INNER_MULTI_DISPATCH / INNER_MULTI_QUEUE_OFFSET put it at this queue offset
    (with its TOTALSIZE and tags code), and every such message before the queue's end has its unit.

    `enable_lmq` None infers the broker's enableLmq from the folders: with it every LMQ unit
    is in queue 0; without it (a 4.9.x broker numbers the names per message queue id, see
    :func:`rmqlab.rules.dispatch.assign_lmq_offsets`) they are in the sending message's queue, so a
    sibling folder other than 0 means off. `broker_version` picks the release's multi-dispatch
    rule as dispatch does (:func:`rmqlab.rules.dispatch.lmq_dispatch`; None: 5.x). `msgs` may be the
    side table of a :class:`CommitLogScan` (the messages with dispatch properties, plus this plain
    name's own messages); `store_messages` is then the CommitLog's count (default ``msgs.n``)."""
    out: list = []
    if not (msgs.n if store_messages is None else store_messages):
        return out
    if enable_lmq is None:
        siblings = [p.name for p in q.folder.parent.iterdir() if p.is_dir()] if q.folder.parent.is_dir() else []
        enable_lmq = q.queue_id == 0 and all(n == "0" for n in siblings)
    kept, props = msgs.dispatch_properties   # the only messages lmq_dispatch_many finds units for
    rows, units, _ = lmq_dispatch_many(msgs.topic_names(kept), msgs.queue_id[kept], props, enable_lmq=enable_lmq,
                                       enable_multi_dispatch=True, broker_version=broker_version)
    rows = kept[rows]
    elig = goes_to_consume_queue_many(msgs.sys_flag[rows]) if len(rows) else np.zeros(0, bool)
    mine = [(int(rw), off) for rw, (name, qid, off), e in zip(rows, units, elig)
            if e and name == q.topic and qid == q.queue_id]
    if not is_lmq(q.topic):
        # a plain name multi-dispatched to is also a topic queue: its own messages share the
        # offsets (4.9.x keys both topic-queueId in the topic queue table)
        own = np.flatnonzero((msgs.topic_code == msgs.code_of_topic(q.topic)) & (msgs.queue_id == q.queue_id)
                             & goes_to_consume_queue_many(msgs.sys_flag))
        qoffs = msgs.queue_offset
        mine += [(int(rw), int(qoffs[rw])) for rw in own]
    expect = {off: rw for rw, off in mine}
    seen = set()
    for first, view in q.segments():
        for k in range(len(view)):
            qoff = first + k
            if qoff < q.min_offset:
                continue
            co, sz, tc = (int(view[k][f]) for f in ("commitlog_offset", "size", "tags_code"))
            rw = expect.get(qoff)
            seen.add(qoff)
            path = q.files[[f.first_index for f in q.files].index(first)].path
            if rw is None or int(msgs.positions[rw]) != co or int(msgs.total_size[rw]) != sz \
                    or int(msgs.tags_codes[rw]) != tc:
                why = ("no message names this queue with this offset" if rw is None else
                       f"the message naming it with this offset is at {int(msgs.positions[rw])} "
                       f"(TOTALSIZE {int(msgs.total_size[rw])}, tags code {int(msgs.tags_codes[rw])})")
                out.append(make_problem("lmq.unit", CorruptIndexError,
                                        f"queue offset {qoff}: unit ({co}, {sz}, {tc}): {why}", path,
                                        k * cq.UNIT_SIZE, "unit.commitlog_offset"))
                return out
    missing = sorted(off for off in expect if off not in seen and q.min_offset <= off < q.max_offset)
    missing += sorted(off for off in expect if off >= q.max_offset
                      and int(msgs.positions[expect[off]]) < _dispatched_end(q))
    if missing:
        rw = expect[missing[0]]
        out.append(make_problem("lmq.missing-unit", CorruptIndexError,
                                f"the message at {int(msgs.positions[rw])} names {q.topic!r} with queue offset "
                                f"{missing[0]} but the queue has no such unit", *msgs.stored_at(rw), "PROPERTIES",
                                count=len(missing)))
    return out


def multi_dispatch_plain_queues(msgs: Messages, *, broker_version: str | None = None) -> set[tuple[str, int]]:
    """The (queue name, queue id) of every plain (non-LMQ) name that multi dispatch writes units
    to: those queues hold other topics' messages too, so verify checks them with
    :func:`lmq_queue_cross`. Cost: O(messages) in Arrow plus O(messages naming queues)."""
    if not msgs.n:
        return set()
    kept, props = msgs.dispatch_properties   # the only messages lmq_dispatch_many finds units for
    props = pa.array(np.asarray(props, dtype=object), type=pa.large_string(), from_pandas=True)
    _, units, _ = lmq_dispatch_many(msgs.topic_names(kept), msgs.queue_id[kept], props, enable_lmq=True,
                                    enable_multi_dispatch=True, broker_version=broker_version)
    return {(name, qid) for name, qid, _ in units if not is_lmq(name)}


def _dispatched_end(q: cq.ConsumeQueue) -> int:
    if not q.count:
        return 0
    u = q.unit(q.max_offset - 1)
    return int(u.commitlog_offset) + int(u.size)


__all__ = ["batch_queue_folders", "batch_queue_checks", "verify_batch_consume_queue",
           "BatchQueueCross", "lmq_queue_cross", "multi_dispatch_plain_queues", "is_lmq"]
