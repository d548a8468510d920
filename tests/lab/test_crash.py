"""Crash safety: a writer SIGKILLed during generate, dispatch or bulk build, then
`rmqlab store recover`, loses no key lookup; the broker's own restart rule on the same crashes does.

Independent truths used here:

* *what the killed writer had written*: the crashed CommitLog is compared byte for byte with the
  uninterrupted run's before any recovery (:func:`rmqlab.lab.crash.written_at_kill`); every message
  whole on disk at the kill must still be in the recovered CommitLog at its offset;
* *lookups*: every key buildIndex indexes for each of those messages (UNIQ_KEY, each KEYS
  token) must find it in verified mode; a sample is asked through
  ``Store.explain_key(...).verified`` itself;
* *an uninterrupted dispatch*: the recovered ConsumeQueue, index files (names and bytes) and
  checkpoint must equal those of a fresh one-go ``Store.dispatch`` of the written messages alone;
* :func:`rmqlab.verify.verify_path` must find no error;
* for the hand-made damage below, the undamaged store (or a fresh dispatch of the truncated
  CommitLog) byte for byte.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rmqlab.cli import main
from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.indexfile import IndexFile, build_index_file, read_header
from rmqlab.lab import crash
from rmqlab.lab.crash import (
    PHASES,
    CrashConfig,
    CrashImageError,
    calibrate,
    check_lookups,
    compare_stores,
    run_trial,
    run_trials,
    summary_markdown,
    summary_table,
    written_at_kill,
)
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.store.directory import Store
from rmqlab.store.indexservice import is_index_file_name
from rmqlab.store.recover import (
    UnrecoverableError,
    broker_restart,
    expected_index_rows,
    recover_store,
    recovery_start,
)
from rmqlab.verify import verify_path

UTC = dt.UTC
CONFIG = CrashConfig()
TRIALS = 12


# ------------------------------------------------------------------------------ the harness


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("crash")


@pytest.fixture(scope="module")
def trials(workdir):
    # 4 trials a phase; per phase the triggers go write, time, write, time
    return run_trials(TRIALS, seed=11, workdir=workdir, config=CONFIG, jobs=2)


def test_trials_cover_every_phase_and_both_triggers(trials):
    assert len(trials) == TRIALS >= 12
    assert trials.groupby("phase").size().to_dict() == {p: TRIALS // 3 for p in PHASES}
    assert set(trials["trigger"]) == {"write", "time"}
    # a self-inflicted SIGKILL always lands; the parent's timer may come after the end
    assert trials.loc[trials.trigger == "write", "killed"].all()
    assert trials["killed"].sum() >= TRIALS - 2
    assert (trials["lookups"] >= trials["messages_complete"]).all()   # UNIQ_KEY at least
    assert trials["lookups"].sum() > 3000


def test_recover_loses_no_lookup_and_leaves_a_consistent_store(trials):
    bad = trials[(trials.lost_rmqlab != 0) | (trials.messages_lost != 0) | ~trials.verify_ok | ~trials.fresh_equal
                 | ~trials.sample_agree]
    # one line a bad trial, naming the checks it failed (pytest cuts a long dict short)
    assert bad.empty, "\n".join(
        f"{r.phase} seed {r.seed} {r.trigger} (kill event {r.kill_event}, delay {r.kill_delay}): "
        f"messages_lost={r.messages_lost} lost_rmqlab={r.lost_rmqlab} verify_ok={r.verify_ok} "
        f"verify_errors={r.verify_errors} {r.verify_examples} fresh_diffs={r.fresh_diffs} "
        f"sample_agree={r.sample_agree} "
        f"recover_actions={r.recover_actions} lost_examples={r.lost_examples[:3]}" for r in bad.itertuples())
    assert trials["lost_rmqlab"].sum() == 0
    # recovery keeps exactly the messages written at the kill: no fewer, and no torn record but
    # the one the broker's own check keeps (cut after its CRC-checked body)
    extra = trials["messages_recovered"] - trials["messages_complete"]
    assert ((extra == 0) | ((extra == 1) & trials["kept_torn"])).all(), trials[extra != 0].to_dict("records")
    # the truth is not vacuous: the prepared phases start with every message written
    assert (trials.loc[trials.phase != "generate", "messages_complete"] == CONFIG.messages).all()


def test_the_broker_rule_loses_lookups_on_the_same_crashes(trials):
    # The broker deletes every index file whose end is after indexMsgTimestamp (the end of the
    # last *full* file) and re-indexes only from ~3 s before the checkpoint: the keys between
    # are gone, whatever the crash damaged. Bulk: the checkpoint is set only at the end, so all
    # but the last seconds go.
    assert trials["lost_broker"].sum() > 0
    for phase in ("dispatch", "bulk"):
        assert (trials.loc[trials.phase == phase, "lost_broker"] > 0).all(), phase
    # lost: keys of the deleted files, and keys the killed writer never wrote, before the
    # recovery point; never more than there are
    assert (trials["lost_broker"] <= trials["lookups"]).all()
    assert (trials.loc[trials.broker_keys_deleted == 0, "phase"] != "dispatch").all()


def test_bulk_built_files_appear_atomically(trials):
    bulk = trials[trials.phase == "bulk"]
    assert bulk["atomic_ok"].all()          # every file under a final name is complete
    assert (bulk["temp_files"] == bulk["recover_actions"].map(lambda d: d.get("index-temp-removed", 0))).all()


def test_summaries(trials):
    t = summary_table(trials)
    assert list(t.index) == list(PHASES) + ["total"]
    assert t.loc["total", "trials"] == TRIALS and t.loc["total", "lost_rmqlab"] == 0
    assert t.loc["total", "lost_broker"] == trials["lost_broker"].sum()
    md = summary_markdown(trials)
    assert md.splitlines()[0].startswith("| phase | trials |") and "**total**" in md
    from rmqlab.viz.crash import losses_figure

    fig = losses_figure(t)
    assert len(fig.axes) == 1 and len(fig.axes[0].patches) == 2 * len(PHASES)


def test_kill_before_the_rename_leaves_only_a_hidden_temp_file(workdir):
    cal = calibrate("bulk", CONFIG, workdir)
    renames = [i + 1 for i, k in enumerate(cal.kinds) if k == "rename"]
    assert len(renames) >= 3
    r = run_trial(workdir, "bulk", 0, config=CONFIG, kill_at=renames[1], keep=True)
    crashed = workdir / "trial-bulk-write-0" / "crashed" / "index"
    names = sorted(p.name for p in crashed.iterdir())
    finals = [n for n in names if is_index_file_name(n)]
    assert len(finals) == 1 and len(names) == 2 and names[0].startswith(".") and names[0].endswith(".tmp")
    # the file under its final name is complete: the same bytes as the uninterrupted build's
    assert (crashed / finals[0]).read_bytes() == (cal.reference / "index" / finals[0]).read_bytes()
    assert r.atomic_ok and r.temp_files == 1 and r.recover_actions.get("index-temp-removed") == 1
    assert r.lost_rmqlab == 0 and r.verify_ok and r.fresh_equal
    shutil.rmtree(workdir / "trial-bulk-write-0")


def test_kill_before_the_first_write_leaves_an_empty_store_that_verifies(workdir, monkeypatch):
    # SIGKILL at once after "ready" can land before the writer has made even the commitlog
    # folder (before its first write event); here the writer is killed before it starts. verify
    # was once asked to guess what the empty folder holds, and raised.
    calibrate("generate", CONFIG, workdir)           # the uninterrupted run, before the writer is replaced
    monkeypatch.setattr(crash, "run_writer", lambda *a, **k: crash.WriterRun(-9, True, None, None, 0.0))
    r = run_trial(workdir, "generate", 0, config=CONFIG, trigger="time", delay=0.0)
    assert r.messages_complete == r.messages_recovered == 0
    assert r.verify_ok and r.fresh_equal and r.lost_rmqlab == 0


def test_a_record_cut_in_its_properties_is_kept_as_the_broker_keeps_it(workdir, monkeypatch):
    # a time-triggered kill once cut the record being copied 11 bytes before its end, inside
    # PROPERTIES: its body CRC holds and its lengths agree, so CommitLog.checkMessageAndReturnSize
    # accepts it and the broker keeps it; recover keeps it too, and the trial says so
    cal = calibrate("generate", CONFIG, workdir)
    ref = cl.read_columns(cal.reference / "commitlog", body=False)
    half = len(ref) // 2
    cut = int(ref.phy_offset[half] + ref.total_size[half]) - 4

    def killed_in_the_properties(root, *args, **kwargs):
        commitlog = Path(root) / "commitlog"
        shutil.copytree(cal.reference / "commitlog", commitlog)
        for f in cl.store_files(commitlog):
            image = np.fromfile(f.path, np.uint8)
            image[max(0, cut - f.start_offset):] = 0
            image.tofile(f.path)
        return crash.WriterRun(-9, True, None, None, 0.0)

    monkeypatch.setattr(crash, "run_writer", killed_in_the_properties)
    r = run_trial(workdir, "generate", 0, config=CONFIG, trigger="time", delay=0.0)
    assert r.messages_complete == half and r.kept_torn and r.messages_recovered == half + 1
    assert r.messages_lost == 0 and r.lost_rmqlab == 0 and r.verify_ok and r.fresh_equal, r


def test_kill_inside_a_commitlog_write_tears_a_record(workdir):
    cal = calibrate("generate", CONFIG, workdir)
    inside = [i + 1 for i, k in enumerate(cal.kinds) if k == "pwrite:commitlog:cont"]
    r = run_trial(workdir, "generate", 0, config=CONFIG, kill_at=inside[len(inside) // 2])
    assert r.killed and r.torn_bytes > 0 and r.recover_actions.get("commitlog-zeroed") == 1
    assert 0 < r.messages_complete < CONFIG.messages and r.messages_recovered == r.messages_complete
    assert r.lost_rmqlab == 0 and r.messages_lost == 0 and r.verify_ok and r.fresh_equal


def _zero_last_messages(root: Path, n: int) -> None:
    """Cut root's CommitLog before its last `n` complete messages (zeros to the end of that file,
    later files deleted): what a recovery that drops complete messages leaves before it
    re-dispatches."""
    msgs = cl.read_columns(root / "commitlog", body=False, on_error="report")
    cut = int(msgs.phy_offset.iloc[-n])
    for f in cl.store_files(root / "commitlog"):
        if f.start_offset > cut:
            f.path.unlink()
        elif f.start_offset + f.size > cut:
            with open(f.path, "r+b") as fh:
                fh.seek(cut - f.start_offset)
                fh.write(bytes(f.start_offset + f.size - cut))


def test_a_recovery_that_drops_complete_messages_fails_the_trial(workdir, monkeypatch):
    cal = calibrate("dispatch", CONFIG, workdir)
    kill_at = [i + 1 for i, k in enumerate(cal.kinds) if k == "put"][2]
    honest = run_trial(workdir, "dispatch", 0, config=CONFIG, kill_at=kill_at)
    assert honest.messages_complete == CONFIG.messages
    assert honest.lost_rmqlab == 0 and honest.messages_lost == 0 and honest.fresh_equal and honest.verify_ok

    real = crash.recover_store

    def lossy(root, **kw):
        _zero_last_messages(Path(root), 20)
        return real(root, **kw)

    monkeypatch.setattr(crash, "recover_store", lossy)
    r = run_trial(workdir, "dispatch", 0, config=CONFIG, kill_at=kill_at)
    # each message has a UNIQ_KEY at least: 20 messages gone lose 20 lookups or more
    assert r.lost_rmqlab >= 20
    assert r.messages_lost == 20 and r.messages_recovered == CONFIG.messages - 20
    assert r.messages_complete == CONFIG.messages and not r.fresh_equal
    assert any("message gone" in e for e in r.lost_examples)


def test_torn_consume_queue_units(workdir):
    config = CrashConfig(piece_bytes=28)     # 28 is no multiple of 20: pieces end inside units
    cal = calibrate("dispatch", config, workdir)
    inside = [i + 1 for i, k in enumerate(cal.kinds) if k == "pwrite:consumequeue:cont"]
    assert inside
    r = run_trial(workdir, "dispatch", 0, config=config, kill_at=inside[len(inside) // 3])
    assert r.cq_units_dropped >= 1 and r.recover_actions.get("cq-zeroed", 0) >= 1
    assert r.lost_rmqlab == 0 and r.verify_ok and r.fresh_equal


def test_kill_between_index_puts_leaves_a_short_consistent_file(workdir):
    cal = calibrate("dispatch", CONFIG, workdir)
    puts = [i + 1 for i, k in enumerate(cal.kinds) if k == "put"]
    r = run_trial(workdir, "dispatch", 0, config=CONFIG, kill_at=puts[len(puts) // 2])
    # the newest file is a consistent prefix: kept and continued, nothing removed
    assert r.index_files_removed == 0 and r.index_entries_added > 0
    assert r.lost_rmqlab == 0 and r.verify_ok and r.fresh_equal


def test_kill_between_index_entries_and_header(workdir):
    cal = calibrate("generate", CONFIG, workdir)
    torn = [i + 1 for i, k in enumerate(cal.kinds) if k == "put:header"]
    r = run_trial(workdir, "generate", 0, config=CONFIG, kill_at=torn[len(torn) // 2])
    # entries past the header's index_count: the file differs from dispatch's, so it is rebuilt
    assert r.index_files_removed == 1 and r.recover_actions.get("index-file-written", 0) >= 1
    assert r.lost_rmqlab == 0 and r.verify_ok and r.fresh_equal


# ------------------------------------------------------------------------------ hand-made damage

GEO = dict(hash_slot_num=64, index_num=128, commitlog_file_size=8192)
CQ_SIZE = 400


def _generate(root: Path, messages: int = 300) -> Path:
    w = Workload(messages=messages, seed=5, rate=10.0, keys_per_message=1.5, topics=("A", "B"))
    generate_store(root, w, consume_queue_file_size=CQ_SIZE, tz=UTC, **GEO)
    return root


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An undamaged store: what an uninterrupted generate + dispatch wrote."""
    return _generate(tmp_path_factory.mktemp("ref") / "store")


@pytest.fixture
def damaged(reference, tmp_path):
    d = tmp_path / "store"
    shutil.copytree(reference, d)
    return d


def _recover(root, **kw):
    return recover_store(root, consume_queue_file_size=CQ_SIZE, tz=UTC, **GEO, **kw)


def _fresh(root: Path, tmp: Path) -> Path:
    """A one-go dispatch of root's CommitLog: the uninterrupted result for its messages."""
    f = tmp / "fresh"
    shutil.copytree(root / "commitlog", f / "commitlog")
    Store(f, consume_queue_file_size=CQ_SIZE, tz=UTC, **GEO).dispatch()
    return f


def _files(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def _lost(root: Path) -> int:
    return check_lookups(root, hash_slot_num=GEO["hash_slot_num"], index_num=GEO["index_num"]).lost


def _last_commitlog(root: Path) -> tuple[Path, int]:
    files = cl.store_files(root / "commitlog")
    end = cl.max_offset(root / "commitlog")
    return files[-1].path, end - files[-1].start_offset


def test_reference_store_is_sound(reference):
    assert verify_path(reference, consume_queue_file_size=CQ_SIZE, **GEO).ok
    assert len(list((reference / "index").iterdir())) >= 3 and _lost(reference) == 0
    assert not _recover(reference, dry_run=True).changed


def test_lookups_count_against_what_was_written_not_what_was_recovered(damaged, reference):
    written = written_at_kill(damaged, reference)
    assert len(written.messages) == len(cl.read_columns(reference / "commitlog", body=False))
    _zero_last_messages(damaged, 20)
    _recover(damaged)
    # counted against the recovered CommitLog, the dropped messages are not even asked for
    assert _lost(damaged) == 0 and verify_path(damaged, consume_queue_file_size=CQ_SIZE, **GEO).ok
    check = check_lookups(damaged, hash_slot_num=GEO["hash_slot_num"], index_num=GEO["index_num"], written=written)
    assert check.messages_lost == 20 and check.lost >= 20
    assert compare_stores(damaged, reference) != []


def test_written_at_kill_reads_the_bytes_not_the_recovery(damaged, reference):
    path, end = _last_commitlog(damaged)
    msgs = cl.read_columns(damaged / "commitlog", body=False)
    last = msgs.iloc[-1]
    cut = int(last.phy_offset) - int(path.name) + 7          # killed 7 bytes into the last message
    with open(path, "r+b") as fh:
        fh.seek(cut)
        fh.write(bytes(end - cut))
    w = written_at_kill(damaged, reference)
    before = msgs.iloc[-2]
    assert len(w.messages) == len(msgs) - 1 and w.end == int(before.phy_offset) + int(before.total_size)
    assert int(path.name) + cut <= w.written_end < int(last.phy_offset) + int(last.total_size)
    assert w.intact(damaged).all() and w.intact(reference).all()
    with open(path, "r+b") as fh:                            # a byte the writer never wrote
        fh.seek(end + 100)
        fh.write(b"\x01")
    with pytest.raises(CrashImageError, match="non-zero after"):
        written_at_kill(damaged, reference)


def test_torn_record_in_the_zero_tail(damaged, reference):
    path, end = _last_commitlog(damaged)
    rec = cl.encode_message(topic="A", body=b"payload" * 20, store_timestamp=1718000999999,
                            properties={"KEYS": "lost-key"})
    with open(path, "r+b") as fh:
        fh.seek(end)
        fh.write(rec[:len(rec) // 2])       # half a record, zeros after it: a torn write
    assert cl.read_columns(damaged / "commitlog").attrs["report"].torn_tail is not None
    r = _recover(damaged)
    assert r.torn_bytes == len(rec) // 2 and r.commitlog_end == cl.max_offset(reference / "commitlog")
    assert [a.kind for a in r.actions] == ["commitlog-zeroed"]
    assert path.read_bytes() == (reference / "commitlog" / path.name).read_bytes()
    assert compare_stores(damaged, reference) == []


def test_torn_message_that_was_already_dispatched(damaged, tmp_path):
    # The CommitLog's last page was lost but the ConsumeQueue and index pages were written (a
    # power cut): the queue unit and index entries of the last message point at a torn record.
    path, end = _last_commitlog(damaged)
    msgs = cl.read_columns(damaged / "commitlog", body=False)
    last = msgs.iloc[-1]
    pos = int(last.phy_offset) - int(path.name)
    with open(path, "r+b") as fh:
        fh.seek(pos + int(last.total_size) // 2)
        fh.write(bytes(int(last.total_size) - int(last.total_size) // 2))
    newest = sorted(os.listdir(damaged / "index"))[-1]
    r = _recover(damaged)
    assert r.messages == len(msgs) - 1 and r.commitlog_end == int(last.phy_offset)
    assert r.torn_bytes > 0 and r.cq_units_dropped == 1
    assert r.index_files_removed == [newest] == r.index_files_written    # rebuilt under the same name
    assert r.checkpoint_after["physic_msg_timestamp"] == int(msgs.iloc[-2].store_timestamp)
    fresh = _fresh(damaged, tmp_path)
    assert compare_stores(damaged, fresh) == []
    assert verify_path(damaged, consume_queue_file_size=CQ_SIZE, **GEO).ok and _lost(damaged) == 0


def test_empty_files_left_by_a_crash_are_deleted(damaged, reference):
    files = cl.store_files(damaged / "commitlog")
    nxt = files[-1].start_offset + GEO["commitlog_file_size"]
    (damaged / "commitlog" / f"{nxt:020d}").touch()               # created, never extended
    qdir = cq.queue_dir(damaged, "A", 0)
    last_q = sorted(qdir.iterdir())[-1]
    (qdir / cq.file_name(int(last_q.name) + CQ_SIZE)).touch()
    (damaged / "index" / "29991231235959999").touch()
    r = _recover(damaged)
    kinds = sorted(a.kind for a in r.actions)
    assert kinds == ["commitlog-file-deleted", "cq-file-deleted", "index-file-removed"]
    assert compare_stores(damaged, reference) == [] and len(cl.store_files(damaged / "commitlog")) == len(files)


def test_consume_queue_units_past_the_end_or_not_matching(damaged, reference):
    end = cl.max_offset(damaged / "commitlog")
    qdir = cq.queue_dir(damaged, "B", 1)
    with cq.ConsumeQueue.open(qdir, CQ_SIZE) as q:
        n = q.max_offset
    last_file = sorted(qdir.iterdir())[-1]
    pos = n * cq.UNIT_SIZE - int(last_file.name)
    room = (CQ_SIZE - pos) // cq.UNIT_SIZE
    assert room >= 2, "choose another queue"
    junk = cq.UNIT.pack(end, 250, 7) + cq.UNIT.pack(end + 250, 250, 7)[:13]   # past the end, then torn
    with open(last_file, "r+b") as fh:
        fh.seek(pos - cq.UNIT_SIZE)
        good = fh.read(cq.UNIT_SIZE)
        fh.seek(pos - cq.UNIT_SIZE)
        fh.write(good[:12] + (12345).to_bytes(8, "big") + junk)  # the last real unit: wrong tags code
    r = _recover(damaged)
    assert r.cq_units_dropped == 3 and r.cq_units_added == 1
    assert {a.kind for a in r.actions} == {"cq-zeroed", "cq-units-added"}
    assert compare_stores(damaged, reference) == []


def _newest_index(root: Path) -> Path:
    return sorted((root / "index").iterdir())[-1]


def test_index_file_missing_its_tail_entries(damaged, reference):
    newest = _newest_index(damaged)
    keys = read_header(newest).keys
    rows = expected_index_rows(cl.read_columns(damaged / "commitlog", body=False))
    cap = GEO["index_num"] - 1
    lo = len(rows) - keys
    assert lo % cap == 0 and keys > 4
    m = keys // 2
    newest.unlink()                           # written up to its first m keys, as dispatch would
    build_index_file(newest, rows.keys.slice(lo, m), rows.phy_offsets[lo:lo + m], rows.store_timestamps[lo:lo + m],
                     hash_slot_num=GEO["hash_slot_num"], index_num=GEO["index_num"],
                     end_phy_offset=int(rows.phy_offsets[lo - 1]), end_timestamp=int(rows.store_timestamps[lo - 1]))
    assert _lost(damaged) == keys - m
    r = _recover(damaged)
    assert r.index_files_removed == [] and r.index_files_written == []
    assert r.last_consistent_index == newest.name and r.index_entries_added == keys - m
    assert compare_stores(damaged, reference) == []


def test_index_file_whose_header_lags_its_entries(damaged, reference):
    # killed inside put_keys: entries and slots written, the header not yet
    newest = _newest_index(damaged)
    with IndexFile.open(newest, GEO["hash_slot_num"], GEO["index_num"], writable=True) as f:
        f._set("index_count", f.header.index_count - 3)
    r = _recover(damaged)
    assert r.index_files_removed == [newest.name] and r.index_files_written == [newest.name]
    assert compare_stores(damaged, reference) == [] and _lost(damaged) == 0


def test_newest_index_files_missing(damaged, reference):
    names = sorted(os.listdir(damaged / "index"))
    for n in names[-2:]:
        (damaged / "index" / n).unlink()
    r = _recover(damaged)
    assert r.index_files_written == names[-2:] and r.last_consistent_index == names[-3]
    assert compare_stores(damaged, reference) == []


def test_corrupt_older_index_file_needs_the_deep_check(damaged, reference):
    first = sorted((damaged / "index").iterdir())[0]
    g = IndexFile.open(first, GEO["hash_slot_num"], GEO["index_num"]).geometry
    with open(first, "r+b") as fh:           # one entry's time_diff: headers still agree
        fh.seek(g.entry_offset(5) + 12)
        fh.write((9999).to_bytes(4, "big"))
    assert not _recover(damaged, dry_run=True).changed      # headers only: not crash damage
    r = _recover(damaged, deep_check_all=True)
    assert r.index_files_removed[0] == first.name and r.index_files_written == r.index_files_removed
    assert compare_stores(damaged, reference) == []


def test_dry_run_writes_nothing_and_plans_the_real_run(damaged, tmp_path):
    path, _ = _last_commitlog(damaged)
    with open(path, "r+b") as fh:            # tear the last message, as in the power-cut test
        fh.seek(_last_commitlog(damaged)[1] - 40)
        fh.write(bytes(40))
    (damaged / "abort").touch()
    before = _files(damaged)
    plan = _recover(damaged, dry_run=True)
    assert _files(damaged) == before and plan.dry_run and plan.changed
    real = _recover(damaged)
    assert [a.kind for a in plan.actions if a.kind != "index-file-written"] == \
        [a.kind for a in real.actions if a.kind != "index-file-written"]
    assert plan.torn_bytes == real.torn_bytes and plan.cq_units_dropped == real.cq_units_dropped
    assert plan.index_entries_added == real.index_entries_added
    assert not (damaged / "abort").exists() and any(a.kind == "abort-removed" for a in real.actions)
    again = _recover(damaged)
    assert not again.changed and "nothing to do" in again.summary()
    assert compare_stores(damaged, _fresh(damaged, tmp_path)) == []


def test_damage_before_the_end_is_refused(damaged):
    first = cl.store_files(damaged / "commitlog")[0].path
    with open(first, "r+b") as fh:
        fh.seek(4)
        fh.write(b"\x00\x00\x00\x01")        # the first record's MAGICCODE
    before = _files(damaged)
    with pytest.raises(UnrecoverableError) as e:
        _recover(damaged)
    assert e.value.path == str(first) and e.value.offset == 0 and e.value.field == "MAGICCODE"
    assert _files(damaged) == before


def test_wrong_geometry_is_refused_not_rebuilt(damaged):
    with pytest.raises(UnrecoverableError, match="geometry"):
        recover_store(damaged, hash_slot_num=64, index_num=100, consume_queue_file_size=CQ_SIZE)
    assert verify_path(damaged, consume_queue_file_size=CQ_SIZE, **GEO).ok


def test_broker_restart_rule(tmp_path):
    """DefaultMessageStore.load -> IndexService.load(lastExitOK=false) deletes the index files
    whose endTimestamp > indexMsgTimestamp; CommitLog.recoverAbnormally re-dispatches from the
    newest file whose first message was stored <= min(physic, logics) - 3000 ms. Index files of
    255 keys (about 10 s of this workload) outlast that window: keys are lost."""
    damaged = tmp_path / "store"
    generate_store(damaged, Workload(messages=300, seed=5, rate=10.0, keys_per_message=1.5, topics=("A", "B")),
                   consume_queue_file_size=CQ_SIZE, tz=UTC, **{**GEO, "index_num": 256})
    cp = cpf.read_checkpoint(damaged / "checkpoint")
    heads = {p.name: read_header(p) for p in (damaged / "index").iterdir()}
    doomed = sorted(n for n, h in heads.items() if h.end_timestamp > cp.index_msg_timestamp)
    assert doomed and len(doomed) < len(heads)
    start, name = recovery_start(damaged, cp.min_timestamp)
    first = cl.read_message(damaged / "commitlog" / name, 0)
    assert first.store_timestamp <= cp.min_timestamp
    msgs = cl.read_columns(damaged / "commitlog", body=False)
    rows = expected_index_rows(msgs)
    # the kept files hold buildIndex's first puts; the later ones before the recovery point are gone
    kept_keys = sum(h.keys for n, h in heads.items() if n not in doomed)
    truth = int(((np.arange(len(rows)) >= kept_keys) & (rows.phy_offsets < start)).sum())
    r = broker_restart(damaged, hash_slot_num=GEO["hash_slot_num"], index_num=256, tz=UTC)
    assert r.index_files_deleted == doomed and r.recovery_from_offset == start
    assert r.index_keys_deleted == sum(heads[n].keys for n in doomed)
    lost = check_lookups(damaged, hash_slot_num=GEO["hash_slot_num"], index_num=256).lost
    assert lost == truth > 0


def test_cli_recover(damaged, capsys):
    path, end = _last_commitlog(damaged)
    with open(path, "r+b") as fh:
        fh.seek(end)
        fh.write(cl.encode_message(topic="A", store_timestamp=2**40 - 1)[:60])
    args = ["store", "recover", str(damaged), "--consume-queue-file-size", str(CQ_SIZE)]
    assert main(args + ["--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["dry_run"] and plan["torn_bytes"] == 60 and plan["actions"][0]["kind"] == "commitlog-zeroed"
    assert main(args) == 0                      # geometry inferred from the files
    out = capsys.readouterr().out
    assert "commitlog-zeroed" in out and "1 actions (changed)" in out
    assert main(args + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] is False
    with open(cl.store_files(damaged / "commitlog")[0].path, "r+b") as fh:
        fh.seek(4)
        fh.write(b"\x00\x00\x00\x01")
    assert main(args) == 1
    assert "MAGICCODE" in capsys.readouterr().err


def test_restart_story_names_the_deleted_files_and_the_lost_lookups(workdir):
    """One real crash told: the files the broker deletes are the ones whose endTimestamp (header
    bytes 8..16) exceeds the checkpoint's indexMsgTimestamp (bytes 16..24); the lookups it loses
    are exactly the keys of the messages those files held that lie before the CommitLog file it
    re-dispatches from (a model over the written messages); rmqlab store recover loses none."""
    from rmqlab.viz.crash import restart_figure

    story = crash.restart_story(workdir, kill_fraction=0.75)
    crashed = story.root / "crashed"
    cp_index_ts = int.from_bytes((crashed / "checkpoint").read_bytes()[16:24], "big", signed=True)
    assert story.checkpoint["index_msg_timestamp"] == cp_index_ts
    ends = {p.name: int.from_bytes(p.read_bytes()[8:16], "big", signed=True)
            for p in sorted((crashed / "index").iterdir()) if is_index_file_name(p.name)}
    deleted = sorted(n for n, end in ends.items() if end > cp_index_ts)
    assert deleted == sorted(story.broker.index_files_deleted) == \
        sorted(story.index_files.loc[story.index_files["deleted_by_broker"], "name"])
    assert not any((story.root / "broker" / "index" / n).exists() and n not in ends for n in deleted)
    # the model: buildIndex puts the keys in order, so the kept files hold the first K of them
    # (K = their keys, from the headers); the later keys of messages before the re-dispatch point
    # are lost; every other key is found
    written = written_at_kill(crashed, calibrate("generate", CrashConfig(), workdir).reference).messages
    rows = expected_index_rows(written)
    kept = sum(int.from_bytes((crashed / "index" / n).read_bytes()[36:40], "big") - 1 for n in ends if n not in deleted)
    phy = np.asarray(rows.phy_offsets, np.int64)
    model = (np.arange(len(phy)) >= kept) & (phy < story.broker.recovery_from_offset)
    assert len(story.broker_lost) == int(model.sum()) > 0
    assert sorted(story.broker_lost["phy_offset"]) == sorted(phy[model])
    assert set(story.broker_lost["held_by"]) <= set(deleted)
    assert story.lookups == len(rows) and len(story.rmqlab_lost) == 0
    key = story.broker_lost.iloc[0]
    topic, k = key["key"].split("#", 1)
    broker_store = Store(story.root / "broker", **CrashConfig().store_options())
    assert int(key["phy_offset"]) not in set(broker_store.explain_key(topic, k).verified["phy_offset"])
    recovered = Store(story.root / "recovered", **CrashConfig().store_options())
    assert int(key["phy_offset"]) in set(recovered.explain_key(topic, k).verified["phy_offset"])
    fig = restart_figure(story)
    assert {p.get_gid() for p in fig.axes[0].patches if p.get_gid()} == {f"file:{n}" for n in ends}
