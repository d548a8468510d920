"""rmqlab.kafka.loader: what a broker restart does with each file of a partition directory.

Scenarios copy a real compacted partition (Kafka 3.6, ``__consumer_offsets-9``: a cleaned
segment 0, a segment 9907, producer snapshots) into tmp_path and add the leftovers a cleaner,
a split or retention leave; the plan is checked against the rules as read in ``LogLoader``
(3.6.0 tag) and ``Log.scala`` (2.8.0). A property test replays random leftovers against a
brute-force model of the 3.x rules.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data

from rmqlab.kafka.loader import load_plan, offset_from_file, plan_steps
from rmqlab.kafka.log import KafkaRecord, read_batches, write_segment
from rmqlab.kafka.logdir import partition_dirs
from rmqlab.kafka.rebuild import verify_partition

REAL = REAL_DATA / "kafka"
SOURCE = Path("kafka") / "kafka-3.6-compacted" / "__consumer_offsets-9"


def name(offset: int, suffix: str) -> str:
    return f"{offset:020d}{suffix}"


@pytest.fixture
def part(tmp_path) -> Path:
    """A copy of the real partition inside a log directory without a clean-shutdown marker."""
    src = require_real_data(SOURCE)
    d = tmp_path / "logs" / src.name
    shutil.copytree(src, d)
    for p in d.iterdir():
        p.chmod(0o644)
    return d


def plan_of(d: Path, **kw) -> dict[str, str]:
    df = load_plan(d, **kw)
    return dict(zip(df["file"], df["action"]))


def next_offset(path: Path) -> int:
    b = read_batches(path)
    return int(b["last_offset"].iloc[-1]) + 1


def test_untouched_copy_keeps_everything_but_the_stray_snapshot(part):
    plan = plan_of(part, clean_shutdown=True)
    # removeStraySnapshots: 11890 and 12881 are not segment bases; only the highest stray stays
    assert plan.pop(name(11890, ".snapshot")) == "deleted"
    assert set(plan.values()) == {"kept"}


def test_deleted_files_go_and_kraft_snapshot_markers_wait_for_the_metadata_log(part):
    for n in (name(0, ".log.deleted"), name(0, ".index.deleted"), name(5, ".snapshot.deleted"),
              "00000000000000000100-0000000001.checkpoint.deleted"):
        (part / n).write_bytes(b"")
    plan = plan_of(part, clean_shutdown=True)
    assert plan[name(0, ".log.deleted")] == plan[name(5, ".snapshot.deleted")] == "deleted"
    assert plan["00000000000000000100-0000000001.checkpoint.deleted"] == "kept"       # 3.3+: KafkaMetadataLog's
    old = plan_of(part, clean_shutdown=True, release="3.2")
    assert old["00000000000000000100-0000000001.checkpoint.deleted"] == "deleted"


def test_cleaned_files_and_the_swaps_of_an_interrupted_split_are_deleted(part):
    write_segment(part, 20000, [KafkaRecord(20000, 1, None, b"v")])
    (part / name(20000, ".log")).rename(part / name(20000, ".log.swap"))
    (part / name(20000, ".index.swap")).write_bytes(b"")
    (part / name(15000, ".log.cleaned")).write_bytes(b"")
    plan = plan_of(part, clean_shutdown=True)
    assert plan[name(15000, ".log.cleaned")] == "deleted"
    assert plan[name(20000, ".log.swap")] == plan[name(20000, ".index.swap")] == "deleted"   # >= 15000
    # below the lowest .cleaned offset a swap is completed
    (part / name(15000, ".log.cleaned")).rename(part / name(30000, ".log.cleaned"))
    plan = plan_of(part, clean_shutdown=True)
    assert plan[name(20000, ".log.swap")] == f"renamed to {name(20000, '.log')}"
    assert plan[name(20000, ".index.swap")] == f"renamed to {name(20000, '.index')}"


def _interrupted_clean(part: Path) -> int:
    """The cleaner's output for segments 0 and 9907 left as .swap files (3.x LocalLog.replaceSegments
    crashed after the .cleaned -> .swap rename): the two logs' batches in one file based at 0."""
    data = (part / name(0, ".log")).read_bytes() + (part / name(9907, ".log")).read_bytes()
    (part / name(0, ".log.swap")).write_bytes(data)
    for suffix in (".index", ".timeindex"):
        shutil.copy(part / name(0, suffix), part / name(0, suffix + ".swap"))
    return next_offset(part / name(0, ".log.swap"))


def test_a_swap_replaces_the_segments_in_its_span_3x(part):
    end = _interrupted_clean(part)
    assert end == next_offset(part / name(9907, ".log"))
    df = load_plan(part, clean_shutdown=True)
    plan = dict(zip(df["file"], df["action"]))
    for n in (name(0, ".log"), name(0, ".index"), name(0, ".timeindex"), name(9907, ".log"), name(9907, ".index"),
              name(9907, ".timeindex"), name(9907, ".snapshot"), name(11890, ".snapshot")):
        assert plan[n] == "deleted", n
    assert plan[name(0, ".log.swap")] == f"renamed to {name(0, '.log')}"
    assert plan[name(0, ".index.swap")] == f"renamed to {name(0, '.index')}"
    assert plan[name(12881, ".snapshot")] == "kept"          # the log end offset: outside the swapped span
    assert not df["problem"].any()
    reasons = dict(zip(df["file"], df["reason"]))
    assert "second pass" in reasons[name(9907, ".log")] and "third pass" in reasons[name(0, ".log.swap")]


def test_a_swap_is_recovered_and_replaces_overlapping_segments_2x(part):
    _interrupted_clean(part)
    (part / name(5, ".index.swap")).write_bytes(b"")           # an index swap without its log swap
    plan = plan_of(part, clean_shutdown=True, release="2.8")
    assert plan[name(0, ".log.swap")] == f"recovered; renamed to {name(0, '.log')}"
    assert plan[name(0, ".index.swap")] == f"renamed to {name(0, '.index')}"
    assert plan[name(9907, ".log")] == plan[name(9907, ".index")] == "deleted"
    assert plan[name(5, ".index.swap")] == "kept"             # 2.x ignores it (3.x renames, then deletes it)
    assert plan_of(part, clean_shutdown=True)[name(5, ".index.swap")] == f"renamed to {name(5, '.index')}; deleted"


def test_orphaned_indexes_and_missing_indexes(part):
    for suffix in (".index", ".timeindex", ".txnindex"):
        (part / name(42, suffix)).write_bytes(b"")
    (part / name(9907, ".index")).unlink()
    (part / name(0, ".timeindex")).unlink()
    (part / "leader-epoch-checkpoint.tmp").write_text("0\n0\n")
    df = load_plan(part, clean_shutdown=True)
    plan = dict(zip(df["file"], df["action"]))
    assert plan[name(42, ".index")] == plan[name(42, ".timeindex")] == plan[name(42, ".txnindex")] == "deleted"
    assert plan[name(9907, ".log")] == "index rebuilt"
    assert plan[name(0, ".log")] == "kept"                     # a time index is created empty, not rebuilt
    assert "creates it empty" in df.set_index("file").loc[name(0, ".log"), "reason"]
    assert plan["leader-epoch-checkpoint.tmp"] == "kept"       # LogLoader never looks at .tmp


def test_clean_and_unclean_shutdown(part):
    clean = plan_of(part, clean_shutdown=True)
    assert clean[name(0, ".log")] == clean[name(9907, ".log")] == "kept"
    unclean = plan_of(part, clean_shutdown=False, recovery_point=10000)
    # LogSegments.values(recoveryPoint, MAX): the segment holding the recovery point and later ones
    assert unclean[name(0, ".log")] == "kept" and unclean[name(9907, ".log")] == "recovered"
    assert plan_of(part, clean_shutdown=False, recovery_point=9907)[name(9907, ".log")] == "recovered"
    assert plan_of(part, clean_shutdown=False)[name(0, ".log")] == "recovered"      # no recovery point: 0
    assert load_plan(part).attrs["clean_shutdown"] is False                          # the log dir has no marker
    (part.parent / ".kafka_cleanshutdown").write_text("")
    assert load_plan(part).attrs["clean_shutdown"] is True


def test_files_the_broker_could_not_have_left_are_problems(part):
    # a swap replacing no segment but inside the records of segment 0 (0..9906)
    write_segment(part, 5, [KafkaRecord(5, 1, None, b"v"), KafkaRecord(6, 1, None, b"v")])
    (part / name(5, ".log")).rename(part / name(5, ".log.swap"))
    (part / "notes.log").write_bytes(b"")
    df = load_plan(part, clean_shutdown=True).set_index("file")
    assert "overlaps the records" in df.loc[name(5, ".log.swap"), "problem"]
    assert "NumberFormatException" in df.loc["notes.log", "problem"]
    segments, files = verify_partition(part)
    bad = {f.file.name for f in files if not f.ok}
    assert bad == {name(5, ".log.swap"), "notes.log"}
    # the same swap after the log's end continues it: no problem
    (part / name(5, ".log.swap")).unlink()
    (part / "notes.log").unlink()
    end = next_offset(part / name(9907, ".log"))
    write_segment(part, end, [KafkaRecord(end, 1, None, b"v")])
    (part / name(end, ".log")).rename(part / name(end, ".log.swap"))
    assert not load_plan(part, clean_shutdown=True)["problem"].any()


def test_verify_notes_the_plan_and_stays_clean(part):
    _interrupted_clean(part)
    (part / name(3, ".log.deleted")).write_bytes(b"")
    segments, files = verify_partition(part)
    assert all(f.ok for f in files), [(f.file.name, f.problems) for f in files if not f.ok]
    by = {f.file.name: f for f in files}
    assert by[name(3, ".log.deleted")].summary == "left over (deleted:log): deleted on the next load"
    assert any(n.startswith("on the next load: deleted") for n in by[name(9907, ".log")].notes)
    assert by[name(0, ".log.swap")].summary.startswith("left over (swap:log): renamed to")


def test_cli_verify_and_logdir_show_the_plan(part):
    _interrupted_clean(part)
    run = [sys.executable, "-m", "rmqlab", "kafka"]
    out = subprocess.run([*run, "verify", str(part)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "on the next load: renamed to 00000000000000000000.log" in out.stdout
    out = subprocess.run([*run, "logdir", str(part.parent)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f"{part.name}/{name(0, '.log.swap')}: renamed to {name(0, '.log')}" in out.stdout


@pytest.mark.realdata
def test_every_real_partition_plans_without_problems():
    dirs = [d for log_dir in sorted(require_real_data(REAL).iterdir()) if log_dir.is_dir()
            for d, *_ in partition_dirs(log_dir).itertuples(index=False)]
    assert dirs
    for d in dirs:
        df = load_plan(d)
        assert not df["problem"].any(), (d, df[df["problem"] != ""].to_dict("records"))
        assert set(df["file"]) == {p.name for p in d.iterdir() if p.is_file()}


# ------------------------------------------------------------------ property: a brute-force model

_SUFFIXES = [".log", ".index", ".timeindex", ".txnindex"]
_MARKS = ["", "", ".deleted", ".cleaned", ".swap"]
_OFFSETS = [0, 10, 20, 30]


def _model_3x(names: set[str], ends: dict[str, int]) -> set[str]:
    """The directory after a 3.x load, stated file by file from the rules (no snapshots)."""
    left = {n for n in names if not n.endswith(".deleted")}
    cleaned = [offset_from_file(n) for n in left if n.endswith(".cleaned")]
    low = min(cleaned) if cleaned else None
    left = {n for n in left if not n.endswith(".cleaned")}
    swaps = {n for n in left if n.endswith(".swap") and (low is None or offset_from_file(n) < low)}
    left = {n for n in left if not n.endswith(".swap")}
    spans = [(offset_from_file(s), ends[s]) for s in swaps if s.endswith(".log.swap")]
    if spans:
        lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
        left = {n for n in left if (o := offset_from_file(n)) is None or not lo <= o < hi}
    left |= {s[:-len(".swap")] for s in swaps}
    return {n for n in left if not n.endswith((".index", ".timeindex", ".txnindex"))
            or name(offset_from_file(n), ".log") in left}


def _after(steps) -> set[str]:
    out = set()
    for n, s in steps.items():
        last = s.action.split("; ")[-1]
        if s.action.startswith("renamed to ") and last != "deleted":
            out.add(s.action.split("; ")[0][len("renamed to "):])
        elif last != "deleted":
            out.add(n)
    return out


@settings(max_examples=300, deadline=None)
@given(st.sets(st.tuples(st.sampled_from(_OFFSETS), st.sampled_from(_SUFFIXES), st.sampled_from(_MARKS)),
               max_size=14),
       st.lists(st.integers(0, 25), min_size=4, max_size=4),
       st.sets(st.sampled_from(["leader-epoch-checkpoint", "leader-epoch-checkpoint.tmp", "partition.metadata"])))
def test_plan_matches_the_model(files, lengths, others):
    names = {name(o, s + m) for o, s, m in files} | others
    ends = {name(o, ".log.swap"): o + lengths[i] for i, o in enumerate(_OFFSETS)}
    ends |= {name(o, ".log"): o + 5 for o in _OFFSETS}
    steps = plan_steps(names, ends.get, clean_shutdown=True)
    assert set(steps) == names
    assert _after(steps) == _model_3x(names, ends)
    assert all(s.action == "kept" for n, s in steps.items() if n in others)
