"""The bodies of a 5.x broker's revive log: the pop checkpoint and acknowledgement records that
the broker writes to ``rmq_sys_REVIVE_LOG_{cluster}`` (tags ``ck``, ``ack`` and ``bAck``).

Mirrors the store module's ``pop/PopCheckPoint``, ``pop/AckMsg`` and ``pop/BatchAckMsg``
(rocketmq-all-5.3.3, commit 29d90a4f; checked against 5.0.0 and the 5.5.0 jar). Each body is
fastjson text of one object, UTF-8:

* **ck** (``PopCheckPoint``): a pop of ``n`` messages of one queue, from ``startOffset``, at
  ``popTime``, invisible for ``invisibleTime`` ms. ``d`` lists each popped message's offset
  less ``startOffset`` (absent in checkpoints of old brokers: the messages are then
  ``startOffset .. startOffset + n - 1``); bit ``i`` of ``bm`` says message ``i`` was
  acknowledged before the checkpoint was written (``PopBufferMergeService``). 5.0.0 wrote ``q`` as
  a byte; ``bn`` (broker name) and ``rp`` (how often the revive service put the checkpoint back)
  came later. fastjson also writes the getter ``reviveTime`` (``popTime + invisibleTime``).
* **ack** (``AckMsg``): one message acknowledged (``ao``), naming the checkpoint by its topic,
  group, queue, start offset and pop time. 5.0.0 wrote the long field names (``ackOffset``, ...),
  later releases the short ones and read both (``alternateNames``).
* **bAck** (``BatchAckMsg``, 5.1+ with ``enablePopBatchAck``): the same with a list ``aol``.

>>> ck = parse_checkpoint(b'{"bm":0,"c":"G","d":[0,2],"it":60000,"n":2,"pt":1000,"q":1,"so":5,"t":"T"}')
>>> ck.revive_time, ck.offsets(), ck.index_of_ack(7), ck.index_of_ack(6)
(61000, (5, 7), 1, -1)
>>> parse_ack(b'{"ackOffset":7,"startOffset":5,"consumerGroup":"G","topic":"T","queueId":1,"popTime":1000}').offsets
(7,)
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from rmqlab.errors import FormatError
from rmqlab.formats.storeconfig import parse_fastjson

__all__ = ["PopCheckPoint", "PopAck", "parse_checkpoint", "parse_ack", "parse_revive_body",
           "CK_TAG", "ACK_TAG", "BATCH_ACK_TAG", "REVIVE_GROUP"]

#: PopAckConstants: the tags of the revive log's three kinds of record
CK_TAG, ACK_TAG, BATCH_ACK_TAG = "ck", "ack", "bAck"
#: PopAckConstants.REVIVE_GROUP: the consumer group whose offsets say how far PopReviveService read
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"

# field -> (JSON names, in the order fastjson tries them; the kind of value)
_CHECKPOINT_FIELDS: dict[str, tuple[tuple[str, ...], str]] = {
    "start_offset": (("so", "startOffset"), "long"),       # queue offset of the first popped message
    "pop_time": (("pt", "popTime"), "long"),               # ms since the epoch
    "invisible_time": (("it", "invisibleTime"), "long"),   # ms the messages stay invisible
    "bit_map": (("bm", "bitMap"), "int"),                  # acknowledged before the ck was written
    "num": (("n", "num"), "byte"),                         # messages popped
    "queue_id": (("q", "queueId"), "int"),                 # queue of the popped topic
    "topic": (("t", "topic"), "opt_str"),                  # popped topic (or its pop retry topic)
    "group": (("c", "cid"), "opt_str"),                    # consumer group (PopReviveService skips
                                                           # a ck without topic or group)
    "revive_offset": (("ro", "reviveOffset"), "long"),     # set when read: the ck's revive-log offset
    "offset_diff": (("d", "queueOffsetDiff"), "ints"),     # each message's offset - start_offset
    "broker_name": (("bn", "brokerName"), "opt_str"),      # broker of the popped queue
    "reput_times": (("rp", "rePutTimes"), "opt_str"),      # times the revive service re-put the ck
}
_ACK_FIELDS: dict[str, tuple[tuple[str, ...], str]] = {
    "ack_offset": (("ao", "ackOffset"), "long"),           # the acknowledged message's queue offset
    "start_offset": (("so", "startOffset"), "long"),       # the checkpoint's start offset
    "group": (("c", "consumerGroup"), "opt_str"),
    "topic": (("t", "topic"), "opt_str"),
    "queue_id": (("q", "queueId"), "int"),
    "pop_time": (("pt", "popTime"), "long"),               # the checkpoint's pop time
    "broker_name": (("bn", "brokerName"), "opt_str"),
    "ack_offsets": (("aol", "ackOffsetList"), "longs"),    # BatchAckMsg only
}
_BOUNDS = {"long": (-(1 << 63), (1 << 63) - 1), "int": (-(1 << 31), (1 << 31) - 1), "byte": (-128, 127)}


@dataclass(frozen=True)
class PopCheckPoint:
    """A ``ck`` record's body: one pop of ``num`` messages of (topic, queue_id) by `group`."""

    start_offset: int
    pop_time: int
    invisible_time: int
    bit_map: int
    num: int
    queue_id: int
    topic: str | None
    group: str | None
    revive_offset: int
    offset_diff: tuple[int, ...] | None
    broker_name: str | None
    reput_times: str | None

    @property
    def revive_time(self) -> int:
        """``getReviveTime``: when the popped messages become visible again (ms)."""
        return self.pop_time + self.invisible_time

    def index_of_ack(self, ack_offset: int) -> int:
        """``indexOfAck``: the bit of the message at queue offset `ack_offset`, or -1."""
        if ack_offset < self.start_offset:
            return -1
        if not self.offset_diff:                  # a checkpoint of an old broker: consecutive offsets
            return ack_offset - self.start_offset if ack_offset - self.start_offset < self.num else -1
        diff = ack_offset - self.start_offset
        return self.offset_diff.index(diff) if diff in self.offset_diff else -1

    def offsets(self) -> tuple[int, ...]:
        """``ackOffsetByIndex`` for each of the ``num`` bits: the popped messages' queue offsets."""
        if not self.offset_diff:
            return tuple(self.start_offset + i for i in range(max(self.num, 0)))
        return tuple(self.start_offset + self.offset_diff[i] for i in range(min(max(self.num, 0),
                                                                                len(self.offset_diff))))

    def reput_count(self) -> int:
        """``parseRePutTimes``: 0 when absent, 127 (Byte.MAX_VALUE) when not a number."""
        if self.reput_times is None:
            return 0
        try:
            return int(self.reput_times)
        except ValueError:
            return 127

    def problems(self) -> list[str]:
        """What makes the revive service fail on this checkpoint: ``d`` shorter than ``num``
        (``ackOffsetByIndex`` of a later bit throws IndexOutOfBoundsException, and the revive
        round with it)."""
        if self.offset_diff and len(self.offset_diff) < self.num:
            return [f"n is {self.num} but d lists {len(self.offset_diff)} offsets"]
        return []

    def merge_key(self) -> tuple[Any, ...]:
        """The key PopReviveService files the checkpoint under (topic, group, queue, start offset,
        pop time; 5.3.1+ also the broker name, see :meth:`PopAck.matches`)."""
        return (self.topic, self.group, self.queue_id, self.start_offset, self.pop_time)


@dataclass(frozen=True)
class PopAck:
    """An ``ack`` or ``bAck`` record's body: messages of one checkpoint acknowledged."""

    offsets: tuple[int, ...]
    start_offset: int
    group: str | None
    topic: str | None
    queue_id: int
    pop_time: int
    broker_name: str | None
    batch: bool

    def merge_key(self) -> tuple[Any, ...]:
        return (self.topic, self.group, self.queue_id, self.start_offset, self.pop_time)

    def matches(self, ck: PopCheckPoint) -> bool:
        """Whether PopReviveService applies this ack to `ck`: the same merge key and, where both
        name one, the same broker (5.3.1+ adds the broker name to the key; 5.3.3 reads a blank
        ack broker name as its own, the name its local checkpoints carry)."""
        return self.merge_key() == ck.merge_key() and (
            not self.broker_name or not ck.broker_name or self.broker_name == ck.broker_name)


def _value(doc: dict[str, Any], field: str, names: tuple[str, ...], kind: str, where: dict[str, Any]) -> Any:
    name = next((n for n in names if n in doc), None)
    raw = None if name is None else doc[name]
    label = f"{field} ({names[0]})"
    if raw is None:
        # fastjson leaves a missing field at its default: 0, null, an empty list (BatchAckMsg's)
        return {"opt_str": None, "ints": None, "longs": ()}.get(kind, 0)
    if kind in ("long", "int", "byte"):
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise FormatError(f"{raw!r} is not an integer", field=label, **where)
        lo, hi = _BOUNDS[kind]
        if not lo <= raw <= hi:
            raise FormatError(f"{raw} does not fit a Java {kind}", field=label, **where)
        return raw
    if kind == "opt_str":
        if not isinstance(raw, str):
            raise FormatError(f"{raw!r} is not a string", field=label, **where)
        return raw
    if not isinstance(raw, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in raw):
        raise FormatError(f"{raw!r} is not a list of integers", field=label, **where)
    return tuple(raw)


def _document(body: bytes, where: dict[str, Any]) -> dict[str, Any]:
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"the body is not UTF-8 text (byte {e.start})", field="body", **where) from None
    try:
        doc = parse_fastjson(text)
    except FormatError as e:
        raise FormatError(f"the body is not fastjson text: {e.reason}", field="body", **where) from None
    if not isinstance(doc, dict):
        raise FormatError(f"the body is a JSON {type(doc).__name__}, not an object", field="body", **where)
    return doc


def parse_checkpoint(body: bytes, *, path: str | os.PathLike | None = None, offset: int | None = None
                     ) -> PopCheckPoint:
    """A ``ck`` body as ``JSON.parseObject(raw, PopCheckPoint.class)`` reads it. `path` and
    `offset` (the CommitLog file and the record's offset) only name the place in errors.
    Raises FormatError for a body that is not such an object or whose field has the wrong kind."""
    where = {"path": path, "offset": offset}
    doc = _document(body, where)
    values = {f: _value(doc, f, names, kind, where) for f, (names, kind) in _CHECKPOINT_FIELDS.items()}
    return PopCheckPoint(**values)


def parse_ack(body: bytes, *, batch: bool = False, path: str | os.PathLike | None = None,
              offset: int | None = None) -> PopAck:
    """An ``ack`` body (``AckMsg``) or, with `batch`, a ``bAck`` body (``BatchAckMsg``)."""
    where = {"path": path, "offset": offset}
    doc = _document(body, where)
    values = {f: _value(doc, f, names, kind, where) for f, (names, kind) in _ACK_FIELDS.items()}
    batch_offsets, single = values.pop("ack_offsets"), values.pop("ack_offset")
    offsets = batch_offsets if batch else (single,)
    return PopAck(offsets=tuple(offsets), batch=batch, **values)


def parse_revive_body(tag: str | None, body: bytes, *, path: str | os.PathLike | None = None,
                      offset: int | None = None) -> PopCheckPoint | PopAck | None:
    """The record of a revive-log message by its tag; None for another tag (PopReviveService
    skips those)."""
    if tag == CK_TAG:
        return parse_checkpoint(body, path=path, offset=offset)
    if tag in (ACK_TAG, BATCH_ACK_TAG):
        return parse_ack(body, batch=tag == BATCH_ACK_TAG, path=path, offset=offset)
    return None
