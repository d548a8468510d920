"""The checks of the tiered store: its index files (``tiered_index_file/``, RIP-65), by the rules of
``IndexStoreFile`` (:mod:`rmqlab.formats.tieredindex` names the release read), and the segments on
its file system (RIP-57, :mod:`rmqlab.formats.tieredsegment`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import FormatError, RmqlabError, TruncatedFileError
from rmqlab.formats import tieredindex as ti
from rmqlab.formats import tieredindex51 as t51
from rmqlab.formats import tieredsegment as ts
from rmqlab.formats.commitlog import read_columns
from rmqlab.rules.dispatch import INNER_BATCH_FLAG, PROPERTY_INNER_NUM
from rmqlab.rules.properties import property_values
from rmqlab.verify.report import FileReport, problem_from_error


def verify_tiered_index(root: Path, hash_slot_num: int | None = None,
                        index_num: int | None = None) -> list[FileReport]:
    """One report a file of ``tiered_index_file/`` (local files) and of its ``compacting/``
    (compacted ones); a file of 5.1's index (``0000`` and ``1111``, local; ``2222``, compacted)
    by 5.1's rules (:func:`rmqlab.formats.tieredindex51.check_local`, ``check_compacted``).
    Errors: a size the geometry does not fit (``tiered.geometry``: pass
    tieredStoreIndexFileMaxHashSlotNum / MaxIndexNum when they are not the defaults), what
    :meth:`TieredIndexFile.check` finds (``tiered.index``: a magic of neither code, a slot or
    an item pointing where the broker's walk would not go, an item in another slot's chain).
    Read-only. Cost: one pass over each file's slots and items.

    >>> import tempfile
    >>> verify_tiered_index(Path(tempfile.mkdtemp()))
    []
    """
    folder = root / ti.FOLDER
    compacting = folder / ti.COMPACTING
    paths = [(p, "local") for p in ti.index_files(folder)] + [(p, "compacted") for p in ti.index_files(compacting)]
    reports = []
    for name in ti.LEGACY_FILE_NAMES:   # 5.1's TieredIndexFile: its own rules (rmqlab.formats.tieredindex51)
        if (folder / name).is_file():
            rep = FileReport(str(folder / name), "tiered-index")
            counts: dict[str, Any]
            if name == ti.LEGACY_FILE_NAMES[2]:
                problems, counts = t51.check_compacted(folder / name), {"form": "5.1 compacted"}
            else:
                geometry, problems = t51.check_local(folder / name, hash_slot_num, index_num)
                counts = {"form": "5.1 local", **({"hash_slot_num": geometry[0], "index_num": geometry[1]}
                                                  if geometry else {})}
            rep.problems += [problem_from_error("tiered.geometry" if e.field == "file size" else "tiered.index", e)
                             for e in problems]
            rep.counts = counts
            reports.append(rep)
    for path, form in paths:
        rep = FileReport(str(path), "tiered-index")
        try:
            f = ti.TieredIndexFile.open(path, hash_slot_num=hash_slot_num, index_num=index_num if form == "local"
                                        else None, form=form)
        except RmqlabError as e:
            rep.problems.append(problem_from_error("tiered.geometry", e))
            reports.append(rep)
            continue
        with f:
            rep.problems += [problem_from_error("tiered.index", e) for e in f.check()]
            rep.counts = {"form": form, "items": f.item_count, "slots_used": f.slot_count,
                          "hash_slot_num": f.geometry.hash_slot_num}
        reports.append(rep)
    return reports


def verify_tiered_segments(store: Any, tiered_path: str | os.PathLike, *, cluster: str | None = None,
                           broker: str | None = None) -> list[FileReport]:
    """One report a queue of the tiered store's file system (``tieredStoreFilePath``; the rules
    of FlatAppendFile, CommitLogInputStream and the dispatcher, :mod:`rmqlab.formats.tieredsegment`)
    beside `store` (a :class:`rmqlab.store.directory.Store`, whose ``config/tieredStoreMetadata.json``
    lists the segments). Errors:

    * ``tiered.segment``: a file name that is not ``offset2FileName`` of its offset (the broker
      looks for another name), a segment the metadata lists and the file system lacks, a file
      shorter than its metadata size, a gap or overlap between a queue's segments, a
      ConsumeQueue segment not a whole number of items; a file the metadata does not list, or
      marks deleted (5.1-5.2 do so before deleting an expired file), is a warning (the broker never
      reads it);
    * ``tiered.commitlog``: a CommitLog segment whose records do not chain from its base (a
      damaged or torn record), or whose PHYSICALOFFSET is not the record's own tiered offset;
    * ``tiered.item``: a ConsumeQueue item that points at no record start, or at a record of
      another size, queue offset, topic or queue;
    * ``tiered.copy``: an uploaded message that differs from the message the local queue holds
      at the same queue offset (size, tags code, store and born times, body CRC, flags,
      properties), where the local queue still holds it.

    Read-only. Cost: one walk of every CommitLog segment, one read of every ConsumeQueue
    segment, and the decode of the local messages the uploaded ones are compared with.

    >>> import tempfile
    >>> from rmqlab.store.directory import Store
    >>> verify_tiered_segments(Store(tempfile.mkdtemp()), tempfile.mkdtemp())
    []
    """
    meta = store._tiered_metadata()
    every = ts.list_segments(tiered_path)
    if cluster is not None:
        every = every[every["cluster"] == cluster]
    if broker is not None:
        every = every[every["broker"] == broker]
    every = every[every["kind"] != "index"]
    keys = lambda frame: {(k, p, int(b)) for k, p, b in   # noqa: E731
                          frame[["kind", "path", "base_offset"]].itertuples(index=False) if k != "index"}
    listed = set() if meta is None else keys(meta.loaded)
    deleted = set() if meta is None else keys(meta.segments) - listed
    on_disk = {(k, f"{b}/{t}/{q}", int(o)) for k, b, t, q, o in
               every[["kind", "broker", "topic", "queue_id", "base_offset"]].itertuples(index=False)}
    local = set(store.logical_queues())
    reports: dict[tuple[str, int], FileReport] = {}

    def report(topic: str, qid: int, folder: str) -> FileReport:
        return reports.setdefault((topic, qid), FileReport(folder, "tiered-queue"))

    for row in map(_Row, every.to_dict("records")):
        rep = report(row.topic, row.queue_id, str(Path(row.path).parents[1]))
        if not row.name_ok:
            rep.problems.append(problem_from_error("tiered.segment", FormatError(
                "the name is not offset2FileName of its offset (md5 prefix) under getHash(cluster)_cluster: the "
                "broker looks for another file", path=row.path, offset=None, field="file name")))
        key = (row.kind, f"{row.broker}/{row.topic}/{row.queue_id}", row.base_offset)
        if meta is not None and key not in listed:
            why = ("the metadata marks the segment deleted (expired): the broker deletes it and never reads it"
                   if key in deleted else "the metadata lists no such segment: the broker never reads it")
            rep.problems.append(problem_from_error("tiered.segment", FormatError(
                why, path=row.path, offset=None, field="tieredStoreMetadata.json"), severity="warning"))
    for kind, rel, base in sorted(listed - on_disk):
        b, t, q = rel.rsplit("/", 2)
        if broker is None or b == broker:
            report(t, int(q), rel).problems.append(problem_from_error("tiered.segment", FormatError(
                f"the metadata lists a {kind} segment at base offset {base} the file system lacks", path=rel,
                offset=None, field="tieredStoreMetadata.json")))

    for q in ts.tiered_queues(tiered_path, meta, cluster=cluster, broker=broker):
        rep = report(q.topic, q.queue_id, str(Path(q.segments["path"].iloc[0]).parents[1]))
        _check_queue(q, rep)
        if (q.topic, q.queue_id) in local and not any(p.check in ("tiered.item", "tiered.commitlog")
                                                      for p in rep.errors):
            _check_copy(store, q, rep)
    return [reports[k] for k in sorted(reports)]


class _Row:
    """A row of :func:`tieredsegment.list_segments` by attribute."""

    def __init__(self, d: dict[Any, Any]):
        self.topic, self.queue_id, self.path = str(d["topic"]), int(d["queue_id"]), str(d["path"])
        self.kind, self.broker, self.base_offset = str(d["kind"]), str(d["broker"]), int(d["base_offset"])
        self.name_ok = bool(d["name_ok"])


def _check_queue(q: Any, rep: FileReport) -> None:
    """A queue's segment chain, its CommitLog records and its ConsumeQueue items."""
    seg = q.segments
    for kind in ("commitlog", "consumequeue"):
        s = seg[seg["kind"] == kind]
        ends = (s["base_offset"] + s["size"]).to_numpy()[:-1]
        for path, base, want in zip(s["path"].iloc[1:], s["base_offset"].iloc[1:], ends):
            if int(base) != int(want):
                rep.problems.append(problem_from_error("tiered.segment", FormatError(
                    f"starts at {int(base)}, the segment before ends at {int(want)} (FlatAppendFile rolls at the "
                    f"append offset)", path=path, offset=0, field="baseOffset")))
        if "file_size" in s:
            for path, size, fsize in s[["path", "size", "file_size"]].itertuples(index=False):
                if int(fsize) < int(size):
                    rep.problems.append(problem_from_error("tiered.segment", TruncatedFileError(
                        f"the file holds {int(fsize)} bytes, the metadata {int(size)}", path=path,
                        offset=int(fsize), field="size")))
    for path, size in seg[seg["kind"] == "consumequeue"][["path", "size"]].itertuples(index=False):
        if int(size) % ts.ITEM.size:
            rep.problems.append(problem_from_error("tiered.segment", TruncatedFileError(
                f"{int(size)} bytes, not a whole number of {ts.ITEM.size}-byte items", path=path,
                offset=int(size) - int(size) % ts.ITEM.size, field="size")))
    if rep.errors:
        return
    starts, sizes, qoffs, topics, qids, spans = [], [], [], [], [], []
    for path, base in seg[seg["kind"] == "commitlog"][["path", "base_offset"]].itertuples(index=False):
        df = read_columns(path, body=False, on_error="report")
        r = df.attrs["report"]
        for d in [*r.damage, *([r.torn_tail] if r.torn_tail is not None else [])]:
            rep.problems.append(problem_from_error("tiered.commitlog", d.error()))
        tot = df["total_size"].to_numpy(np.int64)
        pos = np.cumsum(tot) - tot + int(base)   # each record's own tiered offset
        bad = np.flatnonzero(df["phy_offset"].to_numpy(np.int64) != pos)
        if len(bad):
            k = int(bad[0])
            rep.problems.append(problem_from_error("tiered.commitlog", FormatError(
                f"PHYSICALOFFSET {int(df['phy_offset'].iloc[k])}, the record's tiered offset is {int(pos[k])} "
                f"(CommitLogInputStream rewrites it) ({len(bad)} such)", path=path, offset=int(pos[k] - base) + 28,
                field="PHYSICALOFFSET")))
        starts.append(pos)
        sizes.append(tot)
        qoffs.append(df["queue_offset"].to_numpy(np.int64))
        topics.append(df["topic"].astype(str).to_numpy())
        qids.append(df["queue_id"].to_numpy(np.int64))
        # an inner-batch record (BatchCQ topics) covers INNER_NUM queue offsets from its QUEUEOFFSET
        batch = (df["sys_flag"].to_numpy(np.int64) & INNER_BATCH_FLAG) != 0
        inner = np.ones(len(df), np.int64)
        if batch.any():
            num = property_values(df["properties"][batch], PROPERTY_INNER_NUM)
            inner[batch] = [int(v) if v is not None and str(v).isdigit() else 1 for v in num]
        spans.append(inner)
    items = q.items()
    rep.counts = {"items": len(items), "min_offset": q.min_offset, "commit_offset": q.commit_offset,
                  "commitlog_records": int(sum(len(s) for s in starts)),
                  "commitlog_bytes": int(seg[seg["kind"] == "commitlog"]["size"].sum())}
    if not starts or items.empty:
        return
    S, Z, QO = np.concatenate(starts), np.concatenate(sizes), np.concatenate(qoffs)
    T, QI, N = np.concatenate(topics), np.concatenate(qids), np.concatenate(spans)
    if not len(S):   # no record read: every item points at nothing (the walk's own problem says why)
        S, Z, QO, T, QI, N = (np.array([-1], np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64),
                              np.array([""], object), np.zeros(1, np.int64), np.ones(1, np.int64))
    off = items["commitlog_offset"].to_numpy(np.int64)
    at = np.searchsorted(S, off)
    hit = (at < len(S)) & (S[np.minimum(at, len(S) - 1)] == off)
    at = np.minimum(at, len(S) - 1)
    # the dispatcher uploads the record of each queue offset: an inner batch once for each offset
    # it covers (MessageStoreDispatcherImpl reads consumeQueue.get(offset) offset by offset)
    qo_item = items["queue_offset"].to_numpy()
    wrong = ~hit | (Z[at] != items["size"].to_numpy()) | (qo_item < QO[at]) | (qo_item >= QO[at] + N[at]) \
        | (T[at] != q.topic) | (QI[at] != q.queue_id)
    if wrong.any():
        k = int(np.argmax(wrong))
        what = ("no record starts there" if not hit[k] else
                f"the record has size {int(Z[at[k]])}, QUEUEOFFSET {int(QO[at[k]])}, topic {T[at[k]]!r}, queue "
                f"{int(QI[at[k]])}")
        qo = int(items["queue_offset"].iloc[k])
        rep.problems.append(problem_from_error("tiered.item", FormatError(
            f"item of queue offset {qo} (tiered CommitLog offset {int(off[k])}, size {int(items['size'].iloc[k])}):"
            f" {what} ({int(wrong.sum())} such)", path=q._cq_path_of(qo), offset=None, field="commitlog_offset")))


#: the fields an uploaded message shares with the local one (all but PHYSICALOFFSET)
_COPY_FIELDS = ("total_size", "queue_offset", "store_timestamp", "born_timestamp", "body_crc", "sys_flag",
                "flag", "reconsume_times", "topic", "properties")


def _check_copy(store: Any, q: Any, rep: FileReport) -> None:
    """The uploaded messages against the local queue's at the same queue offsets."""
    from rmqlab.store.queues import LogicQueue

    up = q.messages(body=False)
    if up.empty:
        return
    with LogicQueue(store, q.topic, q.queue_id) as lq:
        lo = max(int(up["offset"].min()), lq.min_offset)
        hi = min(int(up["offset"].max()) + 1, lq.max_offset)
        units = lq.units(lo, hi) if hi > lo else None
        if units is not None and lq._ext is not None:   # the tags code CqUnit gives: the ext unit's
            units = units.assign(tags_code=lq._ext.resolve(units["tags_code"].to_numpy(np.int64))[0])
    if units is not None:   # the units the upload holds too (a BatchConsumeQueue unit by its first offset)
        units = units[units["queue_offset"].isin(up["offset"])].reset_index(drop=True)
    if units is None or units.empty:
        return
    both = up.set_index("offset", drop=False).loc[units["queue_offset"].to_numpy()]
    mine = store.read_at(units["commitlog_offset"].to_numpy(np.int64))
    diff = np.zeros(len(units), bool)
    for c in _COPY_FIELDS:
        diff |= both[c].to_numpy() != mine[c].to_numpy()
    diff |= both["item_size"].to_numpy() != units["size"].to_numpy()
    diff |= both["tags_code"].to_numpy() != units["tags_code"].to_numpy()
    rep.counts["compared_with_local"] = len(units)
    if diff.any():
        k = int(np.argmax(diff))
        qo = int(units["queue_offset"].iloc[k])
        fields = [c for c in _COPY_FIELDS if both[c].iloc[k] != mine[c].iloc[k]]
        rep.problems.append(problem_from_error("tiered.copy", FormatError(
            f"the uploaded message of queue offset {qo} differs from the local one in {fields or ['size/tags_code']}"
            f" ({int(diff.sum())} such)", path=q._cq_path_of(qo), offset=None, field="message")))
