"""The checks of a 5.x timer store (``timerwheel``, ``timerlog/``, ``config/timercheck``), by the
rules of ``TimerMessageStore`` (:mod:`rmqlab.formats.timer` names the release read): the files'
geometry as the broker loads them, each unit's own fields as recovery checks them, each pending
slot's chain as dequeue walks it, and each unit against its message in the CommitLog."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rmqlab.errors import CorruptIndexError, FormatError, RmqlabError
from rmqlab.formats import timer as tm
from rmqlab.jvm.hashcode import java_hash_many
from rmqlab.rules.topics import TIMER_TOPIC
from rmqlab.verify.report import FileReport, make_problem, problem_from_error


def verify_timer_store(root: Path, commitlog_file_size: int | None = None, *,
                       commitlog_paths: list | None = None) -> FileReport:
    """One report for the store's timer files. Errors: a wheel or log the broker refuses to load
    (``timer.file``), a unit recovery would truncate at (``timer.unit``), a pending slot whose
    chain, ends or count disagree with its units (``timer.chain``; a warning where a restart's
    recoverAndRevise mends it: :meth:`rmqlab.formats.timer.TimerLog.revised_from`), a pending unit whose message
    is not a message of rmq_sys_wheel_timer of that size, due in that slot, of that real topic
    (``timer.message``). Warnings: a checkpoint past the log's end (``timer.checkpoint``).
    Units of slots already delivered are history: their messages may be gone with old CommitLog
    files, so only their own fields are checked. Read-only. Cost: one pass over the units and
    slots, one CommitLog read of the pending units' messages.

    >>> import tempfile
    >>> r = verify_timer_store(Path(tempfile.mkdtemp()))
    >>> r.kind, [p.check for p in r.problems]
    ('timer', ['timer.file'])
    """
    from rmqlab.store.directory import Store
    from rmqlab.store.timers import timer_entries, timer_state

    rep = FileReport(str(root / "timerwheel"), "timer")
    try:
        store = Store(root, commitlog_paths=commitlog_paths) if commitlog_file_size is None else \
            Store(root, commitlog_file_size=commitlog_file_size, commitlog_paths=commitlog_paths)
        ts = timer_state(store)
    except FileNotFoundError as e:
        rep.problems.append(make_problem("timer.file", FormatError, f"missing ({e.strerror})", root / "timerwheel",
                                         None, None))
        return rep
    except RmqlabError as e:
        rep.problems.append(problem_from_error("timer.file", e))
        return rep
    with ts:
        cp, precision, inferred = ts.checkpoint, ts.precision_ms, ts.precision_inferred
        _unit_fields(ts, rep)
        _chains(ts, rep)
        if cp.last_timer_log_flush_pos > ts.log.end:
            rep.problems.append(make_problem(
                "timer.checkpoint", FormatError, f"lastTimerLogFlushPos {cp.last_timer_log_flush_pos} is past the "
                f"timer log's end {ts.log.end} (recovery re-walks from the file before it)",
                root / "config" / "timercheck", tm.TIMER_CHECKPOINT.offset("last_timer_log_flush_pos"),
                "last_timer_log_flush_pos", severity="warning"))
        entries = timer_entries(store, state=ts)
    _messages(entries, ts.log.folder, precision, rep)
    pending = entries["state"] == "pending"
    rep.counts = {
        "precision_ms": precision, "precision_inferred": inferred, "units": int(len(entries)),
        "pending": int((pending & ~entries["delete_marker"] & ~entries["cancelled"]).sum()),
        "dequeued": int((~pending).sum()), "delete_markers": int(entries["delete_marker"].sum()),
        "cancelled": int(entries["cancelled"].sum()), "rolled": int(entries["roll"].sum()),
        "timer_log_end": ts.log.end, **cp.as_dict(),
    }
    return rep


def _unit_fields(ts, rep: FileReport) -> None:
    """TimerMessageStore.recoverAndRevise's check of each unit: size UNIT_SIZE, isMagicOK."""
    u = ts.log.units
    bad = np.flatnonzero((u["size"] != tm.UNIT.size) | ~tm.is_magic_ok(u["magic"].astype(np.int64)))
    if len(bad):
        pos = int(ts.log.positions[bad[0]])
        f = next(f for f in reversed(ts.log.files) if f.start <= pos)
        rep.problems.append(make_problem(
            "timer.unit", CorruptIndexError, f"size {int(u['size'][bad[0]])}, magic {int(u['magic'][bad[0]])}: not a "
            f"unit (recovery truncates the timer log here)", f.path, pos - f.start,
            "size" if u["size"][bad[0]] != tm.UNIT.size else "magic", count=len(bad)))


def _chains(ts, rep: FileReport) -> None:
    """Each slot from the read time on, as doEnqueue builds it: its units (those due in it)
    chained by prev_pos in the order written, first_pos and last_pos the chain's ends, num the
    messages less the delete markers. Vectorized over the units."""
    log, wheel, p = ts.log, ts.wheel, ts.precision_ms
    if not len(log.units):
        return
    due = log.delayed_time()
    live = due >= ts.checkpoint.last_read_time_ms
    if not live.any():
        return
    pos = log.positions[live]
    prev = log.units["prev_pos"][live].astype(np.int64)
    slot_t = due[live]
    magic = log.units["magic"][live].astype(np.int64)
    order = np.lexsort((pos, slot_t))
    pos, prev, slot_t, magic = pos[order], prev[order], slot_t[order], magic[order]
    first = np.ones(len(pos), bool)
    first[1:] = slot_t[1:] != slot_t[:-1]
    expect_prev = np.where(first, -1, np.concatenate([[-1], pos[:-1]]))
    wrong = np.flatnonzero(prev != expect_prev)
    if len(wrong):
        i = wrong[0]
        rep.problems.append(make_problem(
            "timer.chain", CorruptIndexError, f"the unit at {int(pos[i])} (due {int(slot_t[i])}) points back to "
            f"{int(prev[i])}, not to the slot's unit written before it ({int(expect_prev[i])})", log.folder,
            int(pos[i]), "prev_pos", count=len(wrong)))
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], len(pos)) - 1
    delta = np.where(((magic & tm.MAGIC_DELETE) != 0) & ((magic & tm.MAGIC_ROLL) == 0), -1, 1)
    nums = np.add.reduceat(delta, starts)
    s = wheel.slots[wheel.slot_index(slot_t[starts])]
    stored = s["time"].astype(np.int64) == slot_t[starts] // p
    bad = ~stored | (s["first_pos"] != pos[starts]) | (s["last_pos"] != pos[ends]) | (s["num"] != nums)
    # a crash between the timer log's write and the wheel's flush leaves a slot behind its units;
    # a restart mends last_pos (and first_pos of a slot of another lap) from the units it re-walks,
    # never num: a warning, the broker loads and delivers the slot whole
    revised = log.revised_from(ts.checkpoint.last_timer_log_flush_pos)
    mended = bad & (pos[ends] >= revised) & (~stored & (pos[starts] >= revised)
                                             | stored & (s["first_pos"] == pos[starts]))
    for mask, severity, note in ((bad & ~mended, "error", ""),
                                 (mended, "warning", f"; a restart re-walks the timer log from {revised} "
                                                     f"(recoverAndRevise) and mends it, its num excepted")):
        if not mask.any():
            continue
        k = int(np.flatnonzero(mask)[0])
        idx = int(wheel.slot_index(slot_t[starts[k]]))
        what = ("holds another lap" if not stored[k] else
                f"has first_pos {int(s['first_pos'][k])}, last_pos {int(s['last_pos'][k])}, num {int(s['num'][k])}; "
                f"its units give {int(pos[starts[k]])}, {int(pos[ends[k]])}, {int(nums[k])}")
        rep.problems.append(make_problem(
            "timer.chain", CorruptIndexError, f"the slot of {int(slot_t[starts[k]])} {what}{note}", wheel.path,
            idx * tm.SLOT.size, "last_pos" if stored[k] else "time", count=int(mask.sum()), severity=severity))


def _messages(entries, folder: Path, precision: int, rep: FileReport) -> None:
    """Each pending unit against its message: a record of rmq_sys_wheel_timer of size_py bytes,
    due (TIMER_OUT_MS) in the unit's slot unless the unit is a roll, its REAL_TOPIC's hash the
    unit's. Delete markers are messages too (they carry TIMER_DEL_UNIQKEY)."""
    e = entries[entries["state"] == "pending"]
    if not len(e):
        return
    missing = e["message_topic"].isna().to_numpy()
    other = ~missing & (e["message_topic"].to_numpy() != TIMER_TOPIC)
    fires = e["fires_at_ms"].fillna(-1).astype(np.int64).to_numpy()
    size_wrong = ~missing & (e["message_size"].fillna(-1).astype(np.int64).to_numpy() != e["size_py"].to_numpy())
    late = ~missing & ~other & ~e["roll"].to_numpy() & (fires != e["slot_ms"].to_numpy())
    topics = e["real_topic"].fillna("").astype(str).tolist()
    hashes = np.where(e["real_topic"].isna().to_numpy(), 0, java_hash_many(topics))
    hash_wrong = ~missing & ~other & (hashes != e["hash_topic"].to_numpy())
    for mask, what in ((missing, "points at no message of the CommitLog (its file deleted or the copy cut: "
                                 "the broker's dequeue finds nothing and the message is lost)"),
                       (other, "points at a message of another topic"),
                       (size_wrong, "has a size_py other than its message's TOTALSIZE"),
                       (late, "is in a slot other than its message's TIMER_OUT_MS"),
                       (hash_wrong, "holds a real topic hash other than its message's REAL_TOPIC's")):
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            row = e.iloc[i]
            rep.problems.append(make_problem(
                "timer.message", CorruptIndexError,
                f"the unit at {int(row['pos'])} (offset_py {int(row['offset_py'])}) {what}", folder,
                int(row["pos"]), "offset_py", count=int(mask.sum())))
