"""The checks of a 5.x store's pop consumption state: the revive log's records the revive service
has still to read (:mod:`rmqlab.store.popstate` names the release read), by what
``PopReviveService`` does with them."""
from __future__ import annotations

from pathlib import Path

from rmqlab.errors import FormatError, RmqlabError
from rmqlab.formats.storepaths import StorePaths
from rmqlab.rules.topics import REVIVE_TOPIC_PREFIX
from rmqlab.verify.check_consumequeue import cq_file_size
from rmqlab.verify.report import FileReport, make_problem, problem_from_error


def verify_pop_state(root: Path, commitlog_file_size: int | None = None,
                     consume_queue_file_size: int | None = None, *,
                     commitlog_paths: list | None = None) -> FileReport | None:
    """One report for the revive log (None for a store without one: no queue of a revive topic,
    in ConsumeQueue folders or a RocksDB queue store). Error: a record whose body is not a checkpoint or ack the
    broker can parse (``pop.body``: ``JSON.parseObject`` throws, the revive round fails there
    every time and no checkpoint after it is ever revived). Warnings: a checkpoint whose timer a
    restart would never deliver (``pop.lost``), popped messages the revive service will skip
    rather than re-put (``pop.skipped``: topic or group gone, offset no longer in the queue).
    Read-only. Cost: :func:`rmqlab.store.popstate.pop_redeliveries` (the revive queues from their
    committed offsets, the timer store's pending units, one CommitLog read a record).

    >>> import tempfile
    >>> verify_pop_state(Path(tempfile.mkdtemp())) is None
    True
    """
    from rmqlab.store import popstate as ps
    from rmqlab.store.directory import Store

    cq_dir = StorePaths(root).consumequeue
    rep = FileReport(str(cq_dir), "pop")
    folders = [q for t in cq_dir.iterdir() if t.is_dir() and t.name.startswith(REVIVE_TOPIC_PREFIX)
               for q in t.iterdir() if q.is_dir()] if cq_dir.is_dir() else []
    files = [f for q in folders for f in q.iterdir() if f.is_file()]
    size = cq_file_size(files, consume_queue_file_size)
    store = Store(root, consume_queue_file_size=size, commitlog_paths=commitlog_paths) if commitlog_file_size is None \
        else Store(root, commitlog_file_size=commitlog_file_size, consume_queue_file_size=size,
                   commitlog_paths=commitlog_paths)
    try:
        if not ps.revive_topics(store):
            return None
    except RmqlabError:   # the queue store itself cannot be read: its own check reports why
        return None
    try:
        records = ps.revive_records(store)
        redo = ps.pop_redeliveries(store)
    except RmqlabError as e:
        rep.problems.append(problem_from_error("pop.body", e))
        return rep
    bad = records[records["error"].notna() & (records["error"] != ps.CK_LOST)]
    if len(bad):
        first = bad.iloc[0]
        rep.problems.append(make_problem(
            "pop.body", FormatError, f"{first['error']} (PopReviveService's scan fails at this record every round: "
            f"no checkpoint after it is revived)", ps.commitlog_file(store, int(first["offset_py"])),
            int(first["offset_py"]), "body", count=len(bad)))
    lost = records[(records["error"] == ps.CK_LOST) & (records["tag"] == "ck")]
    if len(lost):
        first = lost.iloc[0]
        rep.problems.append(make_problem(
            "pop.lost", FormatError, "a pop checkpoint's timer waits in a slot a restart now skips (older than the "
            "wheel's window): its unacknowledged messages are never redelivered",
            ps.commitlog_file(store, int(first["offset_py"])), int(first["offset_py"]), "TIMER_OUT_MS",
            count=len(lost), severity="warning"))
    skipped = redo[redo["outcome"] != ps.REPUT]
    if len(skipped):
        first = skipped.iloc[0]
        rep.problems.append(make_problem(
            "pop.skipped", FormatError, f"{first['group']} popped {first['topic']} queue {first['queue_id']} offset "
            f"{first['queue_offset']} and never acknowledged it; the revive service will not re-put it: "
            f"{first['outcome']}", ps.commitlog_file(store, int(first["checkpoint_offset_py"])),
            int(first["checkpoint_offset_py"]), "ck", count=len(skipped), severity="warning"))
    rep.counts = {"records": int(len(records)), "checkpoints": int((records["tag"] == "ck").sum()),
                  "unacknowledged": int(len(redo))}
    return rep
