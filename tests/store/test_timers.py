"""Store-level timer queries on stores whose timer files come from the brute-force model of
doEnqueue (tests/support/timer_model.py) and whose CommitLog holds the timer-topic messages the
units point at: pending_timers against a plain reading of TimerMessageStore's rules (dequeue's
cancellation by delete key within a slot, recover's window), timer_entries, store info, the
command line and verify. The brokers' own answers: tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timer_model import TimerModel

from rmqlab.formats.commitlog import CommitLogWriter
from rmqlab.store.directory import Store
from rmqlab.store.timers import pending_timers, timer_entries
from rmqlab.verify.check_timer import verify_timer_store

T0 = 1_718_000_000_000
DAY = 86_400_000


def _props(d: dict[str, str]) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in d.items())


def _build(root, timers: list[tuple[int, str, str, bool]], last_read: int):
    """timers: (delivery time, real topic, unique key, is a delete marker of that key). Writes
    the timer-topic messages, the units the model enqueues for them at T0, the checkpoint."""
    props = []
    for at, topic, uniq, marker in timers:
        p = {"TIMER_OUT_MS": str(at), "REAL_TOPIC": topic, "REAL_QID": "0",
             "UNIQ_KEY": uniq + ("-del" if marker else "")}
        if marker:
            p["TIMER_DEL_UNIQKEY"] = f"{topic}+{uniq}"
        props.append(_props(p))
    with CommitLogWriter(root / "commitlog", file_size=1 << 20) as w:
        batch = w.append({"topic": ["rmq_sys_wheel_timer"] * len(timers), "queue_id": [0] * len(timers),
                          "body": [b"x"] * len(timers), "properties": props})
    m = TimerModel()
    sizes = np.diff(np.append(batch.phy_offset, batch.end_offset))
    for (at, topic, _, marker), off, size in zip(timers, batch.phy_offset, sizes, strict=True):
        m.enqueue(T0, at, int(off), int(size), topic, delete=marker)
    m.write(root, last_read_time_ms=last_read, queue_offset=len(timers))
    return m


def _expected(timers, last_read: int, now: int) -> dict[tuple[str, str], str]:
    """(real topic, uniq key) -> what a restart at `now` does, by the rules as the Java states them."""
    read_from = max(last_read, now // 1000 * 1000 - 7 * DAY + 60_000)
    cancelled = {(at, f"{topic}+{uniq}") for at, topic, uniq, marker in timers if marker}
    out = {}
    for at, topic, uniq, marker in timers:
        if marker or at < last_read or (at, f"{topic}+{uniq}") in cancelled:
            continue
        out[(topic, uniq)] = "never delivered" if at < read_from else ("fires at once" if at <= now else "on time")
    return out


_timers = st.lists(st.tuples(st.integers(1, 40), st.sampled_from(["A", "B"]), st.integers(0, 5), st.booleans()),
                   max_size=30)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=_timers, read_s=st.integers(0, 40), now_days=st.sampled_from([0, 1, 8]))
def test_pending_timers_follow_dequeue_and_recover(tmp_path_factory, spec, read_s, now_days):
    root = tmp_path_factory.mktemp("store")
    timers = [(T0 + at * 1000, topic, f"U{uniq}", marker and i % 3 == 0) for i, (at, topic, uniq, marker)
              in enumerate(spec)]
    timers = list({(t[1], t[2], t[3]): t for t in timers}.values())   # one unique key a topic
    # most markers are due with the message they name (the case dequeue cancels), some not
    target = {(t[1], t[2]): t[0] for t in timers if not t[3]}
    timers = [(target.get((topic, uniq), at) if marker and int(uniq[1:]) % 4 else at, topic, uniq, marker)
              for at, topic, uniq, marker in timers]
    last_read = T0 + read_s * 1000
    _build(root, timers, last_read)
    now = T0 + now_days * DAY + 20_000
    got = pending_timers(Store(root), now=now)
    # keyed by topic too: two topics may carry one unique key
    assert dict(zip(zip(got["real_topic"], got["uniq_key"], strict=True), got["at_restart"], strict=True)) == \
        _expected(timers, last_read, now)
    assert (got["source"] == "wheel").all()
    assert verify_timer_store(root).problems == []


def test_entries_show_markers_cancellations_and_rolls(tmp_path):
    timers = [(T0 + 5000, "A", "U1", False), (T0 + 5000, "A", "U1", True), (T0 + 5000, "B", "U1", False),
              (T0 + 60 * 3_600_000, "A", "U2", False)]
    _build(tmp_path, timers, T0)
    e = timer_entries(Store(tmp_path))
    assert e["delete_marker"].tolist() == [False, True, False, False]
    assert e["cancelled"].tolist() == [True, False, False, False]    # B+U1 is not named
    assert e["roll"].tolist() == [False, False, False, True]
    assert e["slot_ms"].iloc[3] == T0 + DAY and e["fires_at_ms"].iloc[3] == T0 + 60 * 3_600_000
    info = Store(tmp_path).info()["timer"]
    assert (info["pending"], info["delete_markers"], info["rolled"]) == (2, 1, 1)


def test_a_unit_whose_message_is_gone_is_a_verify_error(tmp_path):
    """A timer unit pointing past a truncated CommitLog (apache/rocketmq#10668) is reported."""
    _build(tmp_path, [(T0 + 5000, "A", "U1", False), (T0 + 6000, "A", "U2", False)], T0)
    data = (tmp_path / "commitlog" / f"{0:020d}")
    cut = int(timer_entries(Store(tmp_path))["offset_py"].iloc[1])
    with open(data, "r+b") as f:
        f.seek(cut)
        f.write(bytes(64))
    r = verify_timer_store(tmp_path)
    assert [p.check for p in r.problems] == ["timer.message"]
    assert "no message" in str(r.problems[0].error)


def test_the_command_line_lists_pending_timers(tmp_path):
    _build(tmp_path, [(T0 + 5000, "A", "U1", False), (T0 + 9000, "B", "U2", False)], T0)
    run = [sys.executable, "-m", "rmqlab", "store", "timers", str(tmp_path)]
    out = subprocess.run([*run, "--now", "2024-06-10T06:13:21Z"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("2 timer messages pending") and "2024-06-10T06:13:25.000Z" in out
    rows = [json.loads(line) for line in subprocess.run([*run, "--json", "--topic", "B"], capture_output=True,
                                                        text=True, check=True).stdout.splitlines()]
    assert [(r["uniq_key"], r["fires_at_ms"]) for r in rows] == [("U2", T0 + 9000)]
    bad = subprocess.run([*run[:-1], str(tmp_path / "commitlog")], capture_output=True, text=True)
    assert bad.returncode == 3 and "not a store directory" in bad.stderr


@pytest.mark.parametrize("now", [T0, T0 + 10 * DAY])
def test_a_store_without_a_timer_store_has_no_timers(tmp_path, now):
    assert len(pending_timers(Store(tmp_path), now=now)) == 0


def test_a_timer_delivered_after_the_last_checkpoint_is_delivered_again(tmp_path):
    """The wheel was dequeued past the checkpoint before the broker died: the copy in the real
    topic (TIMER_DEQUEUE_MS, same unique key) is there, and the restart reads the slot again."""
    _build(tmp_path, [(T0 + 5000, "A", "U1", False), (T0 + 9000, "A", "U2", False)], T0)
    with CommitLogWriter(tmp_path / "commitlog", file_size=1 << 20) as w:
        w.offset = int(Store(tmp_path).commitlog_extent()[2])
        w.append({"topic": ["A"], "queue_id": [0], "body": [b"x"],
                  "properties": [_props({"UNIQ_KEY": "U1", "TIMER_DEQUEUE_MS": str(T0 + 5001)})]})
    got = pending_timers(Store(tmp_path), now=T0 + 20_000).set_index("uniq_key")
    assert got["already_delivered"].to_dict() == {"U1": True, "U2": False}
    assert (got["at_restart"] == "fires at once").all()


def _queue(root, offsets, sizes) -> None:
    """The timer topic's ConsumeQueue, queue 0, written from ConsumeQueue.java's 20-byte unit
    (phyOffset i64, size i32, tagsCode i64) into a file of 100 units."""
    import struct

    folder = root / "consumequeue" / "rmq_sys_wheel_timer" / "0"
    folder.mkdir(parents=True)
    data = b"".join(struct.pack(">qiq", int(o), int(s), 0) for o, s in zip(offsets, sizes, strict=True))
    (folder / f"{0:020d}").write_bytes(data + bytes(2000 - len(data)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 12), logged=st.integers(0, 12), checkpointed=st.integers(0, 12))
def test_a_restart_enqueues_again_from_the_checkpointed_queue_offset(tmp_path_factory, n, logged, checkpointed):
    """The broker died after its timer log took the first `logged` of `n` timer messages and its
    checkpoint last said `checkpointed` (lastTimerQueueOffset = masterTimerQueueOffset). A restart
    enqueues from min(queue offset of the log's last message + 1, checkpointed), or from
    `checkpointed` when the log is empty (TimerMessageStore.recover, reviseQueueOffset): every
    message from there on is read from the queue again, and one already in the log is then
    held twice (enqueued_twice), so it is delivered twice."""
    root = tmp_path_factory.mktemp("store")
    logged, checkpointed = min(logged, n), min(checkpointed, n)
    props = [_props({"TIMER_OUT_MS": str(T0 + 5000 + i), "REAL_TOPIC": "A", "REAL_QID": "0", "UNIQ_KEY": f"U{i}"})
             for i in range(n)]
    with CommitLogWriter(root / "commitlog", file_size=1 << 20) as w:
        batch = w.append({"topic": ["rmq_sys_wheel_timer"] * n, "queue_id": [0] * n, "body": [b"x"] * n,
                          "properties": props})
    sizes = np.diff(np.append(batch.phy_offset, batch.end_offset))
    m = TimerModel()
    for i in range(logged):
        m.enqueue(T0, T0 + 5000 + i, int(batch.phy_offset[i]), int(sizes[i]), "A")
    m.write(root, last_read_time_ms=T0, queue_offset=checkpointed)
    _queue(root, batch.phy_offset, sizes)
    got = pending_timers(Store(root, consume_queue_file_size=2000), now=T0)
    # the log's last message has queue offset logged - 1; an empty log leaves the checkpoint's offset
    start = min(logged, checkpointed) if logged else checkpointed
    rows = got.groupby("uniq_key")["source"].apply(sorted).to_dict()
    expected = {f"U{i}": sorted((["wheel"] if i < logged else []) + (["timer queue"] if i >= start else []))
                for i in range(n)}
    assert rows == {k: v for k, v in expected.items() if v}
    twice = set(got.loc[got["enqueued_twice"], "uniq_key"])
    assert twice == {f"U{i}" for i in range(start, logged)}
    assert not got.loc[got["source"] == "wheel", "enqueued_twice"].any()
