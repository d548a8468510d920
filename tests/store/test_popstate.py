"""rmqlab.store.popstate's revive rules judged by a model of PopReviveService.consumeReviveMessage
(plain Python from rocketmq-all-5.3.3: a HashMap per revive queue keyed by the concatenated
merge key, acks setting bits through indexOfAck). Against the brokers themselves (the client's
unacknowledged pops, the restarted broker's re-puts): tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats import revivelog as rl
from rmqlab.rules.topics import parse_pop_normal_topic, pop_retry_topic
from rmqlab.store.popstate import merge_checkpoints

OWN, OTHER = "broker-a", "broker-b"


def _java_revive(records: list[tuple[int, object]]) -> set[tuple[int, str, int]]:
    """(revive queue, key, bits) of each checkpoint left in the maps: consumeReviveMessage with
    enableSkipLongAwaitingAck off, an ack's blank broker name read as the broker's own."""
    maps: dict[int, dict[str, list]] = {}
    for queue, rec in records:
        m = maps.setdefault(queue, {})
        if isinstance(rec, rl.PopCheckPoint):
            if rec.topic is None or rec.group is None:
                continue
            key = f"{rec.topic}{rec.group}{rec.queue_id}{rec.start_offset}{rec.pop_time}{rec.broker_name}"
            m[key] = [rec, rec.bit_map]
        else:
            bn = rec.broker_name if rec.broker_name else OWN
            key = f"{rec.topic}{rec.group}{rec.queue_id}{rec.start_offset}{rec.pop_time}{bn}"
            if key in m:
                for off in rec.offsets:
                    i = m[key][0].index_of_ack(off)
                    if i > -1:
                        m[key][1] |= 1 << i
    return {(q, k, bits) for q, m in maps.items() for k, (_, bits) in m.items()}


@st.composite
def revive_logs(draw):
    remote = draw(st.booleans())       # checkpoints of another broker's queues (escape bridge)
    names = [OWN, OTHER] if remote else [OWN]
    out = []
    for _ in range(draw(st.integers(0, 30))):
        queue = draw(st.integers(0, 1))
        so, pt = draw(st.sampled_from([0, 5])), draw(st.sampled_from([1000, 2000]))
        if draw(st.integers(0, 2)) == 0:
            n = draw(st.integers(1, 6))
            diff = None if draw(st.booleans()) else tuple(sorted(draw(st.lists(st.integers(0, 9), min_size=n,
                                                                                max_size=n, unique=True))))
            rec = rl.PopCheckPoint(so, pt, 10_000, draw(st.integers(0, 3)), n, draw(st.integers(0, 1)), "T",
                                   draw(st.sampled_from(["G", "G2"])), 0, diff, draw(st.sampled_from(names)), None)
        else:
            batch = draw(st.booleans())
            offs = tuple(draw(st.lists(st.integers(0, 15), min_size=1, max_size=4 if batch else 1)))
            bn = draw(st.sampled_from(names if remote else [OWN, None, ""]))
            rec = rl.PopAck(offs, so, draw(st.sampled_from(["G", "G2"])), "T", draw(st.integers(0, 1)), pt, bn, batch)
        out.append((queue, rec))
    return out


@settings(max_examples=300, deadline=None)
@given(log=revive_logs())
def test_acks_apply_as_the_revive_service_applies_them(log):
    frame = pd.DataFrame({"revive_topic": "rmq_sys_REVIVE_LOG_C", "revive_queue_id": [q for q, _ in log],
                          "record": [r for _, r in log], "error": None})
    got = {(t.row["revive_queue_id"], f"{t.ck.topic}{t.ck.group}{t.ck.queue_id}{t.ck.start_offset}{t.ck.pop_time}"
            f"{t.ck.broker_name}", t.bits) for t in merge_checkpoints(frame)}
    assert got == _java_revive(log)


def test_an_ack_read_before_its_checkpoint_is_dropped():
    ck = rl.PopCheckPoint(0, 1000, 60_000, 0, 2, 0, "T", "G", 0, (0, 1), OWN, None)
    ack = rl.PopAck((1,), 0, "G", "T", 0, 1000, OWN, False)
    frame = pd.DataFrame({"revive_topic": "R", "revive_queue_id": 0, "record": [ack, ck], "error": None})
    [t] = merge_checkpoints(frame)
    assert t.bits == 0
    [t] = merge_checkpoints(frame.iloc[::-1].reset_index(drop=True))
    assert t.bits == 0b10


def test_pop_retry_topics_follow_keybuilder():
    assert pop_retry_topic("T", "G") == "%RETRY%G_T"
    assert pop_retry_topic("T", "G", {"%RETRY%G+T"}) == "%RETRY%G+T"
    assert pop_retry_topic("T", "G", {"%RETRY%G+T", "%RETRY%G_T"}) == "%RETRY%G_T"
    assert [parse_pop_normal_topic(t, "G_x") for t in ("%RETRY%G_x_T_y", "%RETRY%G_x+T_y", "T_y")] == ["T_y"] * 3
