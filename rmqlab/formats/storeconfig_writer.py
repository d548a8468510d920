"""Write a broker's ``config/`` files in a chosen broker version's shape (tests, synthetic stores).

The shapes and the write protocol are those :mod:`rmqlab.formats.storeconfig` reads (see its
docstring for the broker classes read): fastjson's pretty format (tab indents, bean fields
sorted by name, ``Map<Integer, Long>`` keys written bare) and ``MixAll.string2File`` (the new
text to ``<name>.tmp``, the previous text to ``<name>.bak``, then the tmp file renamed over the
main file). Map entries are written in sorted order, not in the broker's ConcurrentHashMap
order: the files have the broker's shape, not byte for byte a broker's file.

Shapes: ``"4"`` (every 4.x release), ``"5.0"`` (5.0.0: ``stateVersion``, ``dataVersion`` in
consumerOffset.json and delayOffset.json, ``groupTopicMap``, TopicConfig ``attributes``, the 5.x
SubscriptionGroupConfig fields) and ``"5.1"`` (5.1.0+: also ``forbiddenTable``).

>>> import tempfile, pathlib
>>> from rmqlab.formats.storeconfig import read_store_config
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> write_store_config(root, broker_version="4.9.7", timestamp=1718000000000,
...                    topics={"T": 2}, consumer_offsets={"T@G": {0: 5, 1: 7}})
>>> read_store_config(root).consumer_offsets()[["topic", "group", "queue_id", "offset"]].values.tolist()
[['T', 'G', 0, 5], ['T', 'G', 1, 7]]
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from rmqlab.formats.storeconfig import CONFIG_FILES
from rmqlab.formats.storepaths import CONFIG
from rmqlab.rules.dispatch import QUEUE_TYPE_ATTRIBUTE

__all__ = ["Shape", "shape_for", "encode_fastjson", "write_config_file", "config_documents", "write_store_config"]

Shape = Literal["4", "5.0", "5.1"]


class _Bare(dict):
    """A Map<Integer, ...>: fastjson writes its keys without quotes, on one line."""


def shape_for(broker_version: str) -> Shape:
    """The config file shape a broker release writes.

    >>> shape_for("4.2.0"), shape_for("5.0.0"), shape_for("5.3.1")
    ('4', '5.0', '5.1')

    Raises :class:`~rmqlab.rules.versions.BrokerVersionError` (a ValueError) for text that is not
    a known release.
    """
    from rmqlab.rules.versions import parse_broker_version

    v = parse_broker_version(broker_version)
    if v.major < 5:
        return "4"
    return "5.0" if v.minor < 1 else "5.1"


def encode_fastjson(value: Any, indent: int = 0) -> str:
    """`value` as fastjson's pretty format writes it: tabs, ``"key":value``, bare integer keys
    for :class:`_Bare` maps (written inline).

    >>> encode_fastjson({"offsetTable": _Bare({1: 0, 2: 5})})
    '{\\n\\t"offsetTable":{1:0,2:5}\\n}'
    """
    if isinstance(value, _Bare):
        return "{" + ",".join(f"{int(k)}:{encode_fastjson(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        pad = "\t" * (indent + 1)
        items = [f"{pad}{json.dumps(str(k), ensure_ascii=False)}:{encode_fastjson(v, indent + 1)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "\t" * indent + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode_fastjson(v, indent) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def write_config_file(path: str | os.PathLike, text: str) -> None:
    """MixAll.string2File: `text` to ``<path>.tmp``, the previous main file's text (if any) to
    ``<path>.bak``, then the tmp file renamed over `path`. Cost: two or three small writes.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "delayOffset.json"
    >>> write_config_file(p, "one"); write_config_file(p, "two")
    >>> p.read_text(), p.with_name(p.name + ".bak").read_text()
    ('two', 'one')
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(text.encode("utf-8"))
    if path.exists():
        path.with_name(path.name + ".bak").write_bytes(path.read_bytes())
    os.replace(tmp, path)


def _data_version(shape: Shape, timestamp: int, counter: int) -> dict[str, int]:
    if shape == "4":
        return {"counter": counter, "timestamp": timestamp}
    return {"counter": counter, "stateVersion": 0, "timestamp": timestamp}


def _topic_config(shape: Shape, name: str, queues: int, batch_cq: bool = False) -> dict[str, Any]:
    tc: dict[str, Any] = {"order": False, "perm": 6, "readQueueNums": queues, "topicFilterType": "SINGLE_TAG",
                          "topicName": name, "topicSysFlag": 0, "writeQueueNums": queues}
    if shape == "4":
        return tc
    # AttributeUtil stores an added attribute without its "+" prefix
    return {"attributes": {QUEUE_TYPE_ATTRIBUTE: "BatchCQ"} if batch_cq else {}, **tc}


def _group_config(shape: Shape, name: str) -> dict[str, Any]:
    g: dict[str, Any] = {"brokerId": 0, "consumeBroadcastEnable": True, "consumeEnable": True,
                         "consumeFromMinEnable": True, "groupName": name, "notifyConsumerIdsChangedEnable": True,
                         "retryMaxTimes": 16, "retryQueueNums": 1, "whichBrokerWhenConsumeSlowly": 1}
    if shape != "4":
        g.update({"attributes": {}, "consumeMessageOrderly": False, "consumeTimeoutMinute": 15,
                  "groupRetryPolicy": {"type": "CUSTOMIZED", "customizedRetryPolicy": {
                      "levels": [1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000,
                                 420000, 480000, 540000, 600000, 1200000, 1800000, 3600000, 7200000]}},
                  "groupSysFlag": 0})
    return dict(sorted(g.items()))


def config_documents(*, broker_version: str, timestamp: int, topics: Mapping[str, int] | None = None,
                     consumer_offsets: Mapping[str, Mapping[int, int]] | None = None,
                     delay_offsets: Mapping[int, int] | None = None,
                     subscription_groups: list[str] | None = None,
                     batch_cq_topics: Iterable[str] = ()) -> dict[str, str]:
    """file name -> text of the four config files in `broker_version`'s shape. `topics` maps a
    topic to its queue count; `consumer_offsets` a "topic@group" key to {queue id: offset};
    `delay_offsets` a level to an offset; `subscription_groups` lists group names (default: the
    groups of `consumer_offsets`); `batch_cq_topics` (among `topics`) get the attribute
    ``queue.type`` = ``BatchCQ``. Cost: proportional to the entries.

    >>> docs = config_documents(broker_version="4.2.0", timestamp=0, delay_offsets={1: 3})
    >>> docs["delayOffset.json"]
    '{\\n\\t"offsetTable":{1:3}\\n}'

    Raises ValueError for BatchCQ topics before 5.0.0 (TopicConfig has no attributes there)
    or not among `topics`.
    """
    shape = shape_for(broker_version)
    topics = dict(topics or {})
    batch = frozenset(batch_cq_topics)
    if batch and shape == "4":
        raise ValueError(f"broker {broker_version} has no BatchConsumeQueue (queue.type comes in 5.0.0)")
    if not batch <= set(topics):
        raise ValueError(f"BatchCQ topics {sorted(batch - set(topics))} are not among the topics")
    offsets = {k: _Bare(sorted((int(q), int(o)) for q, o in v.items()))
               for k, v in sorted((consumer_offsets or {}).items())}
    groups = sorted(set(subscription_groups if subscription_groups is not None
                        else [k.split("@")[1] for k in offsets if "@" in k]))
    dv = _data_version(shape, timestamp, 1)
    topics_doc = {"dataVersion": dv,
                  "topicConfigTable": {t: _topic_config(shape, t, n, t in batch)
                                       for t, n in sorted(topics.items())}}
    offsets_doc: dict[str, Any] = {"offsetTable": offsets}
    delay_table = _Bare(sorted((int(k), int(v)) for k, v in (delay_offsets or {}).items()))
    delay_doc: dict[str, Any] = {"offsetTable": delay_table}
    groups_doc: dict[str, Any] = {"dataVersion": dv,
                                  "subscriptionGroupTable": {g: _group_config(shape, g) for g in groups}}
    if shape != "4":
        group_topics: dict[str, list[str]] = {}
        for k in offsets:
            parts = k.split("@")
            if len(parts) == 2:
                group_topics.setdefault(parts[1], []).append(parts[0])
        offsets_doc = {"dataVersion": dv, "groupTopicMap": {g: sorted(t) for g, t in sorted(group_topics.items())},
                       **offsets_doc}
        delay_doc = {"dataVersion": dv, **delay_doc}
    if shape == "5.1":
        groups_doc = {"dataVersion": dv, "forbiddenTable": {},
                      "subscriptionGroupTable": groups_doc["subscriptionGroupTable"]}
    return {CONFIG_FILES["topics"]: encode_fastjson(topics_doc),
            CONFIG_FILES["consumer_offsets"]: encode_fastjson(offsets_doc),
            CONFIG_FILES["delay_offsets"]: encode_fastjson(delay_doc),
            CONFIG_FILES["subscription_groups"]: encode_fastjson(groups_doc)}


def write_store_config(root: str | os.PathLike, *, broker_version: str, timestamp: int, persists: int = 1,
                       **tables: Any) -> None:
    """Write the four config files under ``<root>/config/`` as a broker of `broker_version`
    persists them, `persists` times (from the second time on each file has a ``.bak`` holding
    the same text: a broker's .bak is one persist older). `tables` are those of
    :func:`config_documents`. Cost: a few small writes per file.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> write_store_config(root, broker_version="5.3.1", timestamp=0, persists=2)
    >>> sorted(p.name for p in (root / "config").iterdir())[:2]
    ['consumerOffset.json', 'consumerOffset.json.bak']
    """
    docs = config_documents(broker_version=broker_version, timestamp=timestamp, **tables)
    for _ in range(persists):
        for name, text in docs.items():
            write_config_file(Path(root) / CONFIG / name, text)
