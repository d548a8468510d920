"""rmqlab.formats.revivelog judged by a model of fastjson's PopCheckPoint / AckMsg / BatchAckMsg
(plain Python from the Java source: the JSON names, indexOfAck, ackOffsetByIndex, parseRePutTimes)
and by hostile bodies (typed errors only). The bodies the brokers wrote are read in
tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.errors import FormatError
from rmqlab.formats import revivelog as rl

LONG = st.integers(-(1 << 63), (1 << 63) - 1)
OFFSET = st.integers(0, 1 << 40)


def _java_index_of_ack(start: int, num: int, diff: list[int] | None, ack: int) -> int:
    """PopCheckPoint.indexOfAck as written (rocketmq-all-5.3.3)."""
    if ack < start:
        return -1
    if diff is None or len(diff) == 0:
        return ack - start if ack - start < num else -1
    d = ack - start
    for i, x in enumerate(diff):          # List.indexOf: the first equal element
        if x == d:
            return i
    return -1


@st.composite
def checkpoints(draw):
    num = draw(st.integers(1, 32))
    diff = None if draw(st.booleans()) else sorted(draw(st.lists(st.integers(0, 1000), min_size=num, max_size=num,
                                                                 unique=True)))
    return {"so": draw(OFFSET), "pt": draw(st.integers(0, 1 << 45)), "it": draw(st.integers(0, 1 << 31)),
            "bm": draw(st.integers(0, (1 << 31) - 1)), "n": num, "q": draw(st.integers(0, 255)),
            "t": draw(st.text(min_size=1, max_size=20)), "c": draw(st.text(min_size=1, max_size=20)),
            "ro": draw(st.integers(0, 1 << 30)), "d": diff, "bn": draw(st.none() | st.text(max_size=10)),
            "rp": draw(st.none() | st.sampled_from(["1", "17", "x"]))}


@settings(max_examples=200, deadline=None)
@given(ck=checkpoints(), acks=st.lists(st.integers(-5, 1100), max_size=20))
def test_checkpoint_fields_and_ack_indexes_follow_the_java_class(ck, acks):
    doc = {k: v for k, v in ck.items() if v is not None}
    doc["reviveTime"] = ck["pt"] + ck["it"]        # fastjson writes the getter too
    got = rl.parse_checkpoint(json.dumps(doc, ensure_ascii=False).encode("utf-8"))
    assert (got.start_offset, got.pop_time, got.invisible_time, got.bit_map, got.num, got.queue_id, got.topic,
            got.group, got.revive_offset, got.broker_name, got.reput_times) == \
        (ck["so"], ck["pt"], ck["it"], ck["bm"], ck["n"], ck["q"], ck["t"], ck["c"], ck["ro"], ck["bn"], ck["rp"])
    assert got.revive_time == ck["pt"] + ck["it"]
    for a in acks:
        assert got.index_of_ack(ck["so"] + a) == _java_index_of_ack(ck["so"], ck["n"], ck["d"], ck["so"] + a)
    # ackOffsetByIndex for each bit, and indexOfAck inverts it
    want = [ck["so"] + (i if not ck["d"] else ck["d"][i]) for i in range(ck["n"])]
    assert list(got.offsets()) == want
    assert [got.index_of_ack(o) for o in want] == list(range(ck["n"]))
    assert got.reput_count() == (0 if ck["rp"] is None else 127 if ck["rp"] == "x" else int(ck["rp"]))


@settings(max_examples=100, deadline=None)
@given(short=st.booleans(), batch=st.booleans(), offsets=st.lists(OFFSET, max_size=8), so=OFFSET, pt=LONG,
       q=st.integers(0, 1 << 20))
def test_acks_read_under_either_name(short, batch, offsets, so, pt, q):
    """5.0.0 wrote AckMsg's long field names; later releases the short ones (alternateNames)."""
    names = ({"ao": "ao", "so": "so", "c": "c", "t": "t", "q": "q", "pt": "pt", "aol": "aol"} if short else
             {"ao": "ackOffset", "so": "startOffset", "c": "consumerGroup", "t": "topic", "q": "queueId",
              "pt": "popTime", "aol": "ackOffsetList"})
    doc = {names["so"]: so, names["c"]: "G", names["t"]: "T", names["q"]: q, names["pt"]: pt}
    if batch:
        doc[names["aol"]] = offsets
    else:
        doc[names["ao"]] = offsets[0] if offsets else 0
    got = rl.parse_ack(json.dumps(doc).encode(), batch=batch)
    assert got.offsets == (tuple(offsets) if batch else (offsets[0] if offsets else 0,))
    assert (got.start_offset, got.group, got.topic, got.queue_id, got.pop_time, got.batch) == \
        (so, "G", "T", q, pt, batch)


@pytest.mark.parametrize(("body", "field"), [
    (b"\xff{", "body"), (b"[1,2]", "body"), (b'{"so":', "body"), (b'{"so":"7"}', "start_offset (so)"),
    (b'{"n":300}', "num (n)"), (b'{"q":2147483648}', "queue_id (q)"), (b'{"d":[1,"x"]}', "offset_diff (d)"),
    (b'{"t":5}', "topic (t)"), (b'{"so":true}', "start_offset (so)"),
])
def test_bad_checkpoint_bodies_raise_typed_errors_naming_the_field(body, field):
    with pytest.raises(FormatError) as e:
        rl.parse_checkpoint(body, path="/x/00000000000000000000", offset=4096)
    assert e.value.field == field and e.value.offset == 4096 and e.value.path == "/x/00000000000000000000"


@settings(max_examples=300, deadline=None)
@given(tag=st.sampled_from(["ck", "ack", "bAck", "other", None]), body=st.binary(max_size=200))
def test_hostile_bodies_give_a_record_or_a_typed_error(tag, body):
    try:
        got = rl.parse_revive_body(tag, body)
    except FormatError:
        return
    assert got is None or isinstance(got, (rl.PopCheckPoint, rl.PopAck))
    if tag not in ("ck", "ack", "bAck"):
        assert got is None


SEED = (b'{"bm":0,"bn":"broker-a","c":"G_pop","d":[0,1,2,3,4,5,6],"it":60000,"n":7,"pt":1795974043658,"q":3,'
        b'"reviveTime":1795974103658,"ro":0,"so":0,"t":"TopicOrder"}')


@settings(max_examples=300, deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, len(SEED) - 1), st.integers(0, 255)), min_size=1, max_size=4))
def test_a_mutated_broker_checkpoint_gives_a_record_or_a_typed_error(edits):
    """A checkpoint body as a 5.3.3 broker wrote it, with bytes changed."""
    body = bytearray(SEED)
    for at, value in edits:
        body[at] = value
    try:
        ck = rl.parse_checkpoint(bytes(body))
    except FormatError:
        return
    assert len(ck.offsets()) <= max(ck.num, 0)
