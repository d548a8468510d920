"""A broker's ``config/`` folder: topics, consumer offsets, delay offsets, subscription groups.

Mirrors the broker's config managers, read at rocketmq-all-4.2.0, 4.9.7, 5.0.0, 5.1.0, 5.2.0 and
5.3.1: ``common/.../ConfigManager.java`` (load / loadBak / persist), ``MixAll.string2File`` /
``file2String``, ``DataVersion``, ``broker/.../TopicConfigManager`` with ``TopicConfig`` and
``TopicConfigSerializeWrapper``, ``ConsumerOffsetManager`` (and 5.x ``LmqConsumerOffsetManager``),
``SubscriptionGroupManager`` with ``SubscriptionGroupConfig``, and ``ScheduleMessageService`` with
``DelayOffsetSerializeWrapper`` (store module in 4.x, broker module in 5.x).

Files (``BrokerPathConfigHelper`` / ``StorePathConfigHelper``), each ``<root>/config/<name>``:

=====================  ==========================================================================
topics.json            ``topicConfigTable``: topic -> TopicConfig; ``dataVersion``
consumerOffset.json    ``offsetTable``: "topic@group" -> {queueId: committed offset};
                       5.0.0+ also ``dataVersion`` and the derived ``groupTopicMap``
lmqConsumerOffset.json 5.x with enableLmq: the same plus ``lmqOffsetTable`` "topic@group" -> offset
delayOffset.json       ``offsetTable``: delay level -> offset in SCHEDULE_TOPIC_XXXX's queue
                       (level - 1); 5.0.0+ also ``dataVersion``
subscriptionGroup.json ``subscriptionGroupTable``: group -> SubscriptionGroupConfig; ``dataVersion``;
                       5.1.0+ ``forbiddenTable`` group -> {topic: bits}
timermetrics           5.x (TimerMetrics, store module): ``timingCount`` real topic -> {count,
                       timeStamp}: the timer messages the wheel holds per topic; ``dataVersion``
transactionMetrics     5.x (TransactionMetrics): ``transactionCount`` topic -> {count, timeStamp}:
                       half messages put less those resolved; ``dataVersion``
consumerFilter.json    ConsumerFilterManager: ``filterDataByTopic`` topic -> {topic,
                       groupFilterData: group -> ConsumerFilterData (SQL92 expressions)}
consumerOrderInfo.json 5.x (ConsumerOrderInfoManager): ``table`` "topic@group" -> {queueId:
                       OrderInfo}, fastjson short names (popTime, i, o, ot, oc, l, cm, a)
messageRequestMode.json 5.x (MessageRequestModeManager): ``messageRequestModeMap`` topic -> group
                       -> {mode PULL or POP, popShareQueueNum}
topicQueueMapping.json 5.x static topics (TopicQueueMappingManager): ``topicQueueMappingInfoMap``
                       topic -> TopicQueueMappingDetail {totalQueues, bname, epoch, dirty,
                       currIdMap, hostedQueues: global id -> [LogicQueueMappingItem]}
=====================  ==========================================================================

Facts settled from the Java source:

* **Writing** (``string2File``): the new text goes to ``<name>.tmp``; the *previous* main file's
  text is copied to ``<name>.bak``; the main file is deleted and the tmp file renamed over it.
  So ``.bak`` holds the state one persist older, and a crash can leave the main file missing.
* **Loading** (``ConfigManager.load``): a main file that is missing or empty, or whose decode
  throws, is replaced by the ``.bak``. A ``.bak`` that is missing or empty loads *nothing* and
  the broker starts with empty tables (``loadBak`` returns true); a ``.bak`` that does not
  decode makes ``load`` return false and the broker refuses to start. :func:`load_config_file`
  reports which file was used and why, and raises only where the broker would fail.
* **Text**: ``new String(bytes, UTF-8)`` replaces invalid UTF-8 rather than failing; so does
  this reader (and says so in :attr:`ConfigLoad.utf8_replaced`).
* **JSON dialect**: fastjson writes ``Map<Integer, Long>`` keys (queue ids, delay levels) bare:
  ``{0:37960,1:37961}``, which is not JSON. :func:`parse_fastjson` accepts bare integer keys;
  fastjson's ``prettyFormat`` indents with tabs and sorts bean fields by name; maps keep the
  ConcurrentHashMap's order. A ``null`` document loads nothing (decode skips a null result).
* **Shapes by version**: 4.x ``DataVersion`` is {counter, timestamp}; 5.0.0+ adds
  ``stateVersion``; 5.0.0+ ``TopicConfig`` adds ``attributes``; 5.x ``SubscriptionGroupConfig``
  adds ``consumeMessageOrderly``, ``groupRetryPolicy``, ``groupSysFlag``,
  ``consumeTimeoutMinute``, ``subscriptionDataSet``, ``attributes``. Fields this module does not
  know are kept out of the frames and listed in :attr:`ConfigLoad.unknown_fields` (newer brokers
  add fields; fastjson ignores unknown ones too).
* Offset keys are split as ``key.split("@")``: topic, group, and anything after a second ``@``
  (5.x broadcast offsets are stored as "topic@group@broadcast") as ``suffix``.

The reader is stricter than fastjson about types (a queue offset must be a JSON integer that
fits a Java long; fastjson would also coerce "12" or 12.0): a value of another type is a
:class:`~rmqlab.errors.FormatError` naming the file and the JSON path of the field, e.g.
``offsetTable["abc@g"]["x"]`` (syntax errors also name the byte offset; after invalid UTF-8
was replaced it counts the replaced text's bytes). The RocksDB config managers of a 5.2+
broker with storeType=defaultRocksDB (``config/topics/``, ``config/subscriptionGroups/``,
``config/consumerOffsets/``) are read by :func:`load_rocksdb_config`; the unified ``config/rdb``
database of configManagerVersion=v2 is not yet. Nothing here writes.

>>> import json, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "consumerOffset.json").write_text('{"offsetTable":{"T@G":{0:5,1:7}}}')
>>> load = load_config_file(d / "consumerOffset.json", "consumer_offsets")
>>> load.source, [(r["topic"], r["group"], r["queue_id"], r["offset"]) for r in load.rows]
('file', [('T', 'G', 0, 5), ('T', 'G', 1, 7)])
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from rmqlab.errors import FormatError
from rmqlab.formats.rocksdb import is_rocksdb
from rmqlab.formats.storepaths import CONFIG
from rmqlab.jvm.longs import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN

__all__ = [
    "CONFIG_FILES",
    "KINDS",
    "MAX_DEPTH",
    "DataVersion",
    "ConfigLoad",
    "StoreConfig",
    "parse_fastjson",
    "decode_config",
    "load_config_file",
    "read_store_config",
    "static_queue_offset",
    "physical_queue_offset",
    "batch_cq_topics",
    "perm_text",
]


#: kind -> file name under ``<root>/config/``.
CONFIG_FILES: dict[str, str] = {
    "topics": "topics.json",
    "consumer_offsets": "consumerOffset.json",
    "lmq_consumer_offsets": "lmqConsumerOffset.json",
    "delay_offsets": "delayOffset.json",
    "subscription_groups": "subscriptionGroup.json",
    "timer_metrics": "timermetrics",
    "transaction_metrics": "transactionMetrics",
    "consumer_filters": "consumerFilter.json",
    "consumer_order_info": "consumerOrderInfo.json",
    "message_request_modes": "messageRequestMode.json",
    "topic_queue_mappings": "topicQueueMapping.json",
}
KINDS = tuple(CONFIG_FILES)
Kind = Literal["topics", "consumer_offsets", "lmq_consumer_offsets", "delay_offsets", "subscription_groups",
               "timer_metrics", "transaction_metrics", "consumer_filters", "consumer_order_info",
               "message_request_modes", "topic_queue_mappings"]
#: the kinds only some stores have: loaded when the file or its .bak exists
OPTIONAL_KINDS = ("lmq_consumer_offsets", "timer_metrics", "transaction_metrics", "consumer_filters",
                  "consumer_order_info", "message_request_modes", "topic_queue_mappings")

#: Nesting deeper than this is refused (the broker's files nest four levels at most).
MAX_DEPTH = 64
#: A number token longer than this cannot be a Java long or double the broker wrote.
_MAX_NUMBER_CHARS = 40
#: At most this many unknown field paths are listed per file.
_MAX_UNKNOWN = 100

# TopicConfig defaults: defaultReadQueueNums / defaultWriteQueueNums 16, perm PERM_READ|PERM_WRITE
_TOPIC_DEFAULTS = {"readQueueNums": 16, "writeQueueNums": 16, "perm": 6, "topicFilterType": "SINGLE_TAG",
                   "topicSysFlag": 0, "order": False}
_TOPIC_FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")
# SubscriptionGroupConfig: field -> (frame column, kind, default); 5.x fields default to None in 4.x files
_GROUP_FIELDS: dict[str, tuple[str, str, Any]] = {
    "consumeEnable": ("consume_enable", "bool", True),
    "consumeFromMinEnable": ("consume_from_min_enable", "bool", True),
    "consumeBroadcastEnable": ("consume_broadcast_enable", "bool", True),
    "consumeMessageOrderly": ("consume_message_orderly", "bool", False),
    "retryQueueNums": ("retry_queue_nums", "int", 1),
    "retryMaxTimes": ("retry_max_times", "int", 16),
    "brokerId": ("broker_id", "long", 0),
    "whichBrokerWhenConsumeSlowly": ("which_broker_when_consume_slowly", "long", 1),
    "notifyConsumerIdsChangedEnable": ("notify_consumer_ids_changed_enable", "bool", True),
    "groupSysFlag": ("group_sys_flag", "int", 0),
    "consumeTimeoutMinute": ("consume_timeout_minute", "int", 15),
}
# fields the reader knows but keeps out of the frames (nested policies, derived tables)
_GROUP_OPAQUE = ("groupName", "groupRetryPolicy", "subscriptionDataSet", "attributes")
_ROOT_FIELDS: dict[str, tuple[str, ...]] = {
    "topics": ("topicConfigTable", "dataVersion"),
    "consumer_offsets": ("offsetTable", "dataVersion", "groupTopicMap", "lmqOffsetTable"),
    "lmq_consumer_offsets": ("offsetTable", "dataVersion", "groupTopicMap", "lmqOffsetTable"),
    "delay_offsets": ("offsetTable", "dataVersion"),
    "subscription_groups": ("subscriptionGroupTable", "dataVersion", "forbiddenTable"),
    "timer_metrics": ("timingCount", "dataVersion"),
    "transaction_metrics": ("transactionCount", "dataVersion"),
    "consumer_filters": ("filterDataByTopic", "dataVersion"),
    "consumer_order_info": ("table", "dataVersion"),
    "message_request_modes": ("messageRequestModeMap", "dataVersion"),
    "topic_queue_mappings": ("topicQueueMappingInfoMap", "dataVersion"),
}


def perm_text(perm: int) -> str:
    """PermName.perm2String: ``R``/``W``/``X`` (inherit) or ``-`` for each of bits 4, 2 and 1.

    >>> perm_text(6), perm_text(7), perm_text(4)
    ('RW-', 'RWX', 'R--')
    """
    return ("R" if perm & 4 else "-") + ("W" if perm & 2 else "-") + ("X" if perm & 1 else "-")


# ------------------------------------------------------------------------------- the JSON dialect


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_BARE_KEY = re.compile(r"-?[0-9]+")
_scanstring: Callable[..., tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class _Parser:
    """fastjson's output: JSON plus bare integer object keys. Recursive descent with a depth
    limit, so hostile nesting ends in a FormatError, never a RecursionError."""

    def __init__(self, text: str, path: str | os.PathLike | None):
        self.text = text
        self.path = path

    def error(self, pos: int, what: str, where: str) -> FormatError:
        offset = len(self.text[:pos].encode("utf-8", "surrogatepass"))
        return FormatError(what, path=self.path, offset=offset, field=where or "the document")

    def ws(self, pos: int) -> int:
        m = _WS.match(self.text, pos)
        return m.end() if m else pos

    def value(self, pos: int, where: str, depth: int) -> tuple[Any, int]:
        text = self.text
        pos = self.ws(pos)
        if pos >= len(text):
            raise self.error(pos, "the text ends where a value should start (truncated file?)", where)
        c = text[pos]
        if c == "{" or c == "[":
            if depth >= MAX_DEPTH:
                raise self.error(pos, f"nested deeper than {MAX_DEPTH} levels", where)
            return (self.obj if c == "{" else self.array)(pos + 1, where, depth + 1)
        if c == '"':
            return self.string(pos, where)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, pos):
                return val, pos + len(word)
        m = _NUMBER.match(text, pos)
        if m is None:
            raise self.error(pos, f"unexpected character {c!r}", where)
        token = m.group()
        if len(token) > _MAX_NUMBER_CHARS:
            raise self.error(pos, f"number of {len(token)} characters: too long for a Java long or double", where)
        if m.group(1) or m.group(2):
            return float(token), m.end()
        return int(token), m.end()

    def string(self, pos: int, where: str) -> tuple[str, int]:
        try:
            return _scanstring(self.text, pos + 1, False)
        except ValueError as e:
            raise self.error(pos, f"bad string: {e}", where) from None

    def obj(self, pos: int, where: str, depth: int) -> tuple[dict, int]:
        text = self.text
        out: dict[str, Any] = {}
        pos = self.ws(pos)
        if text.startswith("}", pos):
            return out, pos + 1
        while True:
            pos = self.ws(pos)
            if text.startswith('"', pos):
                key, pos = self.string(pos, where)
            else:
                m = _BARE_KEY.match(text, pos)
                if m is None or len(m.group()) > _MAX_NUMBER_CHARS:
                    raise self.error(pos, "expected an object key (a string or a bare integer)", where)
                key, pos = m.group(), m.end()
            inner = _path(where, key)
            pos = self.ws(pos)
            if not text.startswith(":", pos):
                raise self.error(pos, "expected ':' after the key", inner)
            out[key], pos = self.value(pos + 1, inner, depth)   # fastjson: a repeated key's last value wins
            pos = self.ws(pos)
            if text.startswith(",", pos):
                pos += 1
            elif text.startswith("}", pos):
                return out, pos + 1
            else:
                raise self.error(pos, "expected ',' or '}' in an object", where)

    def array(self, pos: int, where: str, depth: int) -> tuple[list, int]:
        text = self.text
        out: list[Any] = []
        pos = self.ws(pos)
        if text.startswith("]", pos):
            return out, pos + 1
        while True:
            item, pos = self.value(pos, f"{where}[{len(out)}]", depth)
            out.append(item)
            pos = self.ws(pos)
            if text.startswith(",", pos):
                pos += 1
            elif text.startswith("]", pos):
                return out, pos + 1
            else:
                raise self.error(pos, "expected ',' or ']' in an array", where)


def _path(where: str, key: str) -> str:
    return f"{where}[{json.dumps(key, ensure_ascii=False)}]" if where else key


def parse_fastjson(text: str, *, path: str | os.PathLike | None = None) -> Any:
    """The value of a config file's text: JSON plus fastjson's bare integer map keys (keys stay
    strings). Cost: one pass over the text; nesting is limited to :data:`MAX_DEPTH`.

    >>> parse_fastjson('{"offsetTable":{1:0,2:17}}')
    {'offsetTable': {'1': 0, '2': 17}}

    Raises FormatError (file, byte offset, JSON path) for text that is not this dialect.
    """
    p = _Parser(text, path)
    value, pos = p.value(0, "", 0)
    pos = p.ws(pos)
    if pos != len(text):
        raise p.error(pos, "text after the end of the document", "")
    return value


# ------------------------------------------------------------------------------- the shapes


@dataclass(frozen=True)
class DataVersion:
    """DataVersion: when and how often the table changed (``stateVersion`` 5.0.0+)."""

    timestamp: int | None
    counter: int | None
    state_version: int | None = None


@dataclass
class ConfigLoad:
    """One config file as ConfigManager.load sees it.

    ``source`` is ``"file"`` (the main file), ``"bak"`` (the main file was missing, empty or
    did not decode: ``reason`` says which), ``"none"`` (neither had data: the broker starts
    with empty tables) or ``"rocksdb"`` (a RocksDB config manager's database, 5.2+: see
    :func:`load_rocksdb_config`). ``rows`` are the frame rows of the kind; ``extra`` holds the tables that
    are not the kind's main one (forbiddenTable rows).
    """

    kind: str
    path: Path
    source: Literal["file", "bak", "none", "rocksdb"]
    reason: str
    used: Path | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    data_version: DataVersion | None = None
    unknown_fields: list[str] = field(default_factory=list)
    utf8_replaced: bool = False
    extra: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path), "source": self.source, "reason": self.reason,
                "used": None if self.used is None else str(self.used), "rows": len(self.rows),
                "data_version": None if self.data_version is None else vars(self.data_version),
                "unknown_fields": list(self.unknown_fields), "utf8_replaced": self.utf8_replaced}


class _Checker:
    """Typed field access with errors that name the file and the JSON path."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = path
        self.unknown: list[str] = []

    def fail(self, where: str, what: str) -> FormatError:
        return FormatError(what, path=self.path, field=where)

    def obj(self, v: Any, where: str) -> dict:
        if not isinstance(v, dict):
            raise self.fail(where, f"expected an object, found {_json_type(v)}")
        return v

    def integer(self, v: Any, where: str, what: str, lo: int = LONG_MIN, hi: int = LONG_MAX) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(where, f"{what} is not an integer ({_json_type(v)})")
        if not lo <= v <= hi:
            raise self.fail(where, f"{what} {v} does not fit a Java {'int' if hi == INT_MAX else 'long'}")
        return v

    def key_int(self, key: str, where: str, what: str, lo: int = INT_MIN, hi: int = INT_MAX) -> int:
        if _BARE_KEY.fullmatch(key) is None or len(key) > _MAX_NUMBER_CHARS:
            raise self.fail(where, f"{what} is not an integer")
        return self.integer(int(key), where, what, lo, hi)

    def boolean(self, v: Any, where: str, what: str) -> bool:
        if not isinstance(v, bool):
            raise self.fail(where, f"{what} is not true or false ({_json_type(v)})")
        return v

    def string(self, v: Any, where: str, what: str) -> str:
        if not isinstance(v, str):
            raise self.fail(where, f"{what} is not a string ({_json_type(v)})")
        return v

    def note_unknown(self, obj: dict, known, where: str) -> None:
        for k in obj:
            if k not in known and len(self.unknown) < _MAX_UNKNOWN:
                self.unknown.append(_path(where, k))

    def data_version(self, root: dict) -> DataVersion | None:
        v = root.get("dataVersion")
        if v is None:
            return None
        dv = self.obj(v, "dataVersion")
        self.note_unknown(dv, ("timestamp", "counter", "stateVersion"), "dataVersion")
        got = {k: (None if dv.get(k) is None else self.integer(dv[k], _path("dataVersion", k), k))
               for k in ("timestamp", "counter", "stateVersion")}
        return DataVersion(got["timestamp"], got["counter"], got["stateVersion"])


def _or_empty(v: Any) -> Any:
    """A missing or null table is an empty one (fastjson leaves the field's default); any other
    value goes on to the type check."""
    return {} if v is None else v


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number with a fraction or exponent"
    if isinstance(v, str):
        return "a string"
    return "an array" if isinstance(v, list) else "an object"


def _split_key(key: str) -> tuple[str, str | None, str | None]:
    parts = key.split("@")
    return parts[0], parts[1] if len(parts) > 1 else None, "@".join(parts[2:]) if len(parts) > 2 else None


def _topics(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    rows = []
    table = ck.obj(_or_empty(root.get("topicConfigTable")), "topicConfigTable")
    for name, v in table.items():
        where = _path("topicConfigTable", name)
        if v is None:
            continue
        tc = ck.obj(v, where)
        ck.note_unknown(tc, tuple(_TOPIC_DEFAULTS) + ("topicName", "attributes"), where)
        got = {k: tc.get(k, d) for k, d in _TOPIC_DEFAULTS.items()}
        for k in ("readQueueNums", "writeQueueNums", "perm", "topicSysFlag"):
            got[k] = ck.integer(got[k], _path(where, k), k, INT_MIN, INT_MAX)
        got["order"] = ck.boolean(got["order"], _path(where, "order"), "order")
        tft = ck.string(got["topicFilterType"], _path(where, "topicFilterType"), "topicFilterType")
        if tft not in _TOPIC_FILTER_TYPES:
            raise ck.fail(_path(where, "topicFilterType"),
                          f"topicFilterType {tft!r} is not one of {_TOPIC_FILTER_TYPES}")
        topic_name = ck.string(tc.get("topicName", name), _path(where, "topicName"), "topicName")
        attrs = ck.obj(_or_empty(tc.get("attributes")), _path(where, "attributes"))
        for k, a in attrs.items():
            ck.string(a, _path(_path(where, "attributes"), k), "attribute value")
        rows.append({"topic": name, "topic_name": topic_name, "read_queue_nums": got["readQueueNums"],
                     "write_queue_nums": got["writeQueueNums"], "perm": got["perm"],
                     "perm_text": perm_text(got["perm"]),
                     "topic_filter_type": tft, "topic_sys_flag": got["topicSysFlag"], "order": got["order"],
                     "attributes": dict(attrs)})
    return rows, {}


def _consumer_offsets(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    rows = []
    table = ck.obj(_or_empty(root.get("offsetTable")), "offsetTable")
    for key, v in table.items():
        where = _path("offsetTable", key)
        if v is None:
            continue
        topic, group, suffix = _split_key(key)
        for qkey, off in ck.obj(v, where).items():
            at = _path(where, qkey)
            rows.append({"key": key, "topic": topic, "group": group, "suffix": suffix,
                         "queue_id": ck.key_int(qkey, at, "queue id"),
                         "offset": ck.integer(off, at, "offset"), "table": "offsetTable"})
    lmq = ck.obj(_or_empty(root.get("lmqOffsetTable")), "lmqOffsetTable")
    for key, off in lmq.items():   # LmqConsumerOffsetManager: one offset per key, reported as queue 0
        topic, group, suffix = _split_key(key)
        rows.append({"key": key, "topic": topic, "group": group, "suffix": suffix, "queue_id": 0,
                     "offset": ck.integer(off, _path("lmqOffsetTable", key), "offset"), "table": "lmqOffsetTable"})
    gtm = root.get("groupTopicMap")
    if gtm is not None:
        ck.obj(gtm, "groupTopicMap")
    return rows, {}


def _delay_offsets(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    rows = []
    for lkey, off in ck.obj(_or_empty(root.get("offsetTable")), "offsetTable").items():
        at = _path("offsetTable", lkey)
        rows.append({"level": ck.key_int(lkey, at, "delay level"), "offset": ck.integer(off, at, "offset")})
    return rows, {}


def _subscription_groups(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    rows = []
    for name, v in ck.obj(_or_empty(root.get("subscriptionGroupTable")), "subscriptionGroupTable").items():
        where = _path("subscriptionGroupTable", name)
        if v is None:
            continue
        g = ck.obj(v, where)
        ck.note_unknown(g, tuple(_GROUP_FIELDS) + _GROUP_OPAQUE, where)
        row: dict[str, Any] = {"group": name, "group_name": ck.string(g.get("groupName", name),
                                                                    _path(where, "groupName"), "groupName")}
        for jname, (col, kind, default) in _GROUP_FIELDS.items():
            raw = g.get(jname, default)
            at = _path(where, jname)
            if kind == "bool":
                row[col] = ck.boolean(raw, at, jname)
            else:
                row[col] = ck.integer(raw, at, jname, *((INT_MIN, INT_MAX) if kind == "int" else (LONG_MIN, LONG_MAX)))
        rows.append(row)
    forbidden = []
    for group, topics in ck.obj(_or_empty(root.get("forbiddenTable")), "forbiddenTable").items():
        where = _path("forbiddenTable", group)
        for topic, bits in ck.obj(_or_empty(topics), where).items():
            forbidden.append({"group": group, "topic": topic,
                              "forbidden": ck.integer(bits, _path(where, topic), "forbidden", INT_MIN, INT_MAX)})
    return rows, {"forbidden": forbidden}


def _timer_metrics(ck: _Checker, root: dict, table: str = "timingCount") -> tuple[list[dict], dict]:
    # TimerMetrics.TimerMetricsSerializeWrapper: timingCount, topic -> Metric {count, timeStamp};
    # TransactionMetrics.TransactionMetricsSerializeWrapper the same under transactionCount
    rows = []
    for topic, v in ck.obj(_or_empty(root.get(table)), table).items():
        where = _path(table, topic)
        m = ck.obj(v, where)
        ck.note_unknown(m, ("count", "timeStamp"), where)
        rows.append({"topic": topic, "count": ck.integer(m.get("count", 0), _path(where, "count"), "count"),
                     "time_stamp": ck.integer(m.get("timeStamp", 0), _path(where, "timeStamp"), "timeStamp")})
    return rows, {}


def _transaction_metrics(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    return _timer_metrics(ck, root, "transactionCount")


_FILTER_FIELDS = ("consumerGroup", "topic", "expression", "expressionType", "bornTime", "deadTime",
                  "bloomFilterData", "clientVersion")


def _consumer_filters(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    # ConsumerFilterManager: filterDataByTopic, topic -> FilterDataMapByTopic {topic, groupFilterData:
    # group -> ConsumerFilterData}
    rows = []
    for topic, v in ck.obj(_or_empty(root.get("filterDataByTopic")), "filterDataByTopic").items():
        where = _path("filterDataByTopic", topic)
        by_topic = ck.obj(_or_empty(v), where)
        ck.note_unknown(by_topic, ("topic", "groupFilterData"), where)
        groups = ck.obj(_or_empty(by_topic.get("groupFilterData")), _path(where, "groupFilterData"))
        for group, d in groups.items():
            at = _path(_path(where, "groupFilterData"), group)
            f = ck.obj(d, at)
            ck.note_unknown(f, _FILTER_FIELDS, at)
            expression = f.get("expression")
            rows.append({"topic": topic, "group": group,
                         "expression": None if expression is None else ck.string(expression, _path(at, "expression"),
                                                                                 "expression"),
                         "expression_type": f.get("expressionType"),
                         "born_time": ck.integer(f.get("bornTime", 0), _path(at, "bornTime"), "bornTime"),
                         "dead_time": ck.integer(f.get("deadTime", 0), _path(at, "deadTime"), "deadTime"),
                         "client_version": ck.integer(f.get("clientVersion", 0), _path(at, "clientVersion"),
                                                      "clientVersion")})
    return rows, {}


# ConsumerOrderInfoManager.OrderInfo's fields as fastjson writes them (@JSONField names)
_ORDER_INFO_FIELDS = {"popTime": "pop_time", "i": "invisible_time", "o": "offsets", "ot": "offset_next_visible_time",
                      "oc": "offset_consumed_count", "l": "last_consume_timestamp", "cm": "commit_offset_bit",
                      "a": "attempt_id"}


def _consumer_order_info(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    # ConsumerOrderInfoManager: table, "topic@group" -> {queueId: OrderInfo} (orderly pop consumption)
    rows = []
    for key, qs in ck.obj(_or_empty(root.get("table")), "table").items():
        topic, group, _ = _split_key(key)
        where = _path("table", key)
        for qkey, info in ck.obj(_or_empty(qs), where).items():
            at = _path(where, qkey)
            o = ck.obj(info, at)
            ck.note_unknown(o, tuple(_ORDER_INFO_FIELDS), at)
            row: dict[str, Any] = {"topic": topic, "group": group,
                                   "queue_id": ck.key_int(qkey, at, "queue id")}
            for jname, col in _ORDER_INFO_FIELDS.items():
                v = o.get(jname)
                if jname in ("popTime", "i", "l", "cm") and v is not None:
                    v = ck.integer(v, _path(at, jname), jname)
                elif jname == "o" and v is not None:
                    if not isinstance(v, list):
                        raise ck.fail(_path(at, "o"), "offsetList is not a list")
                    v = [ck.integer(x, _path(at, "o"), "offset") for x in v]
                row[col] = v
            rows.append(row)
    return rows, {}


def _message_request_modes(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    # MessageRequestModeManager: messageRequestModeMap, topic -> group -> SetMessageRequestModeRequestBody
    rows = []
    table = "messageRequestModeMap"
    for topic, groups in ck.obj(_or_empty(root.get(table)), table).items():
        where = _path(table, topic)
        for group, body in ck.obj(_or_empty(groups), where).items():
            at = _path(where, group)
            b = ck.obj(body, at)
            ck.note_unknown(b, ("topic", "consumerGroup", "mode", "popShareQueueNum"), at)
            mode = ck.string(b.get("mode", "PULL"), _path(at, "mode"), "mode")
            if mode not in ("PULL", "POP"):
                raise ck.fail(_path(at, "mode"), f"mode {mode!r} is not PULL or POP (MessageRequestMode)")
            rows.append({"topic": topic, "group": group, "mode": mode,
                         "pop_share_queue_num": ck.integer(b.get("popShareQueueNum", 0), _path(at, "popShareQueueNum"),
                                                           "popShareQueueNum", INT_MIN, INT_MAX)})
    return rows, {}


# TopicQueueMappingInfo's and LogicQueueMappingItem's fields as fastjson writes them (their getters)
_MAPPING_FIELDS = ("topic", "scope", "totalQueues", "bname", "epoch", "dirty", "currIdMap", "hostedQueues")
_MAPPING_ITEM_FIELDS = {"gen": "gen", "queueId": "queue_id", "bname": "bname", "logicOffset": "logic_offset",
                        "startOffset": "start_offset", "endOffset": "end_offset", "timeOfStart": "time_of_start",
                        "timeOfEnd": "time_of_end"}


def _topic_queue_mappings(ck: _Checker, root: dict) -> tuple[list[dict], dict]:
    # TopicQueueMappingManager (5.0+): topicQueueMappingInfoMap, topic -> TopicQueueMappingDetail
    # {topic, scope, totalQueues, bname, epoch, dirty, currIdMap: logic id -> physical id,
    # hostedQueues: global id -> [LogicQueueMappingItem]}; a row per item (a detail without items
    # one row with its item fields None), its currIdMap in the extra table "curr_id_map"
    rows, ids = [], []
    for topic, v in ck.obj(_or_empty(root.get("topicQueueMappingInfoMap")), "topicQueueMappingInfoMap").items():
        where = _path("topicQueueMappingInfoMap", topic)
        d = ck.obj(v, where)
        ck.note_unknown(d, _MAPPING_FIELDS, where)
        head = {"topic": topic,
                "scope": ck.string(d.get("scope", "__global__"), _path(where, "scope"), "scope"),
                "total_queues": ck.integer(d.get("totalQueues", 0), _path(where, "totalQueues"), "totalQueues",
                                           INT_MIN, INT_MAX),
                "mapping_bname": None if d.get("bname") is None else ck.string(d["bname"], _path(where, "bname"),
                                                                                 "bname"),
                "epoch": ck.integer(d.get("epoch", 0), _path(where, "epoch"), "epoch"),
                "dirty": ck.boolean(d.get("dirty", False), _path(where, "dirty"), "dirty")}
        at = _path(where, "currIdMap")
        for k, phys in ck.obj(_or_empty(d.get("currIdMap")), at).items():
            ids.append({"topic": topic, "logic_id": ck.key_int(k, _path(at, k), "logic id"),
                        "physical_id": ck.integer(phys, _path(at, k), "physical id", INT_MIN, INT_MAX)})
        hosted = ck.obj(_or_empty(d.get("hostedQueues")), _path(where, "hostedQueues"))
        if not hosted:
            rows.append({**head, "global_id": None, **dict.fromkeys(_MAPPING_ITEM_FIELDS.values())})
        for g, items in hosted.items():
            at = _path(_path(where, "hostedQueues"), g)
            global_id = ck.key_int(g, at, "global id")
            if not isinstance(items, list):
                raise ck.fail(at, f"expected a list of items, found {_json_type(items)}")
            for n, it in enumerate(items):
                here = f"{at}[{n}]"
                item = ck.obj(it, here)
                ck.note_unknown(item, _MAPPING_ITEM_FIELDS, here)
                row = {**head, "global_id": global_id}
                for name, col in _MAPPING_ITEM_FIELDS.items():
                    if name == "bname":
                        row[col] = None if item.get(name) is None else ck.string(item[name], _path(here, name), name)
                    else:
                        lo, hi = (INT_MIN, INT_MAX) if name in ("gen", "queueId") else (LONG_MIN, LONG_MAX)
                        default = -1 if name in ("endOffset", "timeOfStart", "timeOfEnd") else 0
                        row[col] = ck.integer(item.get(name, default), _path(here, name), name, lo, hi)
                rows.append(row)
    return rows, {"curr_id_map": ids}


_DECODERS: dict[str, Callable[[_Checker, dict], tuple[list[dict], dict]]] = {
    "topics": _topics, "consumer_offsets": _consumer_offsets, "lmq_consumer_offsets": _consumer_offsets,
    "delay_offsets": _delay_offsets, "subscription_groups": _subscription_groups, "timer_metrics": _timer_metrics,
    "transaction_metrics": _transaction_metrics, "consumer_filters": _consumer_filters,
    "consumer_order_info": _consumer_order_info, "message_request_modes": _message_request_modes,
    "topic_queue_mappings": _topic_queue_mappings,
}


def decode_config(text: str, kind: str, *, path: str | os.PathLike | None = None
                  ) -> tuple[list[dict], DataVersion | None, list[str], dict]:
    """(rows, dataVersion, unknown field paths, extra tables) of one config text, as the
    manager's ``decode`` would take it. Cost: one parse and one pass over the tables.

    >>> rows, dv, unknown, _ = decode_config('{"offsetTable":{3:42},"version":2}', "delay_offsets")
    >>> rows, dv, unknown
    ([{'level': 3, 'offset': 42}], None, ['version'])

    Raises FormatError naming the file and the JSON path of the first bad field; ValueError
    for an unknown `kind`.
    """
    if kind not in _DECODERS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    value = None if not text.strip() else parse_fastjson(text, path=path)
    if value is None:   # fastjson returns null for "null": decode loads nothing
        return [], None, [], {}
    ck = _Checker(path)
    root = ck.obj(value, "")
    ck.note_unknown(root, _ROOT_FIELDS[kind], "")
    dv = ck.data_version(root)
    rows, extra = _DECODERS[kind](ck, root)
    return rows, dv, ck.unknown, extra


# ------------------------------------------------------------------------------- loading


def _read_text(path: Path) -> tuple[str | None, bool, str]:
    """MixAll.file2String: (text or None, invalid UTF-8 replaced, why None)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, False, "missing"
    except IsADirectoryError:
        return None, False, "a directory, not a file"
    if not data:
        return None, False, "empty"
    try:
        return data.decode("utf-8"), False, ""
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), True, ""


def load_config_file(path: str | os.PathLike, kind: str) -> ConfigLoad:
    """One config file with its ``.bak`` fallback, exactly as ConfigManager.load chooses.
    Reads only. Cost: reads one or two small files.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "delayOffset.json").write_text('{"offsetTable":{1:')        # torn by a crash
    >>> _ = (d / "delayOffset.json.bak").write_text('{"offsetTable":{1:9}}')
    >>> load = load_config_file(d / "delayOffset.json", "delay_offsets")
    >>> load.source, load.rows
    ('bak', [{'level': 1, 'offset': 9}])

    Returns a :class:`ConfigLoad`. Raises FormatError when the broker's load would fail (the
    main file unusable and the ``.bak`` present but undecodable); ValueError for a bad `kind`.
    """
    if kind not in _DECODERS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    main = Path(path)
    bak = main.with_name(main.name + ".bak")
    text, replaced, why = _read_text(main)
    main_error: FormatError | None = None
    if text is not None:
        try:
            rows, dv, unknown, extra = decode_config(text, kind, path=main)
            return ConfigLoad(kind, main, "file", "the main file decodes", main, rows, dv, unknown, replaced, extra)
        except FormatError as e:
            main_error = e
            reason = f"{main.name} does not decode ({e}); the broker loads {bak.name}"
    else:
        reason = f"{main.name} is {why}; the broker loads {bak.name}"
    btext, breplaced, bwhy = _read_text(bak)
    if btext is None:
        return ConfigLoad(kind, main, "none", f"{reason}, which is {bwhy}: the broker starts with empty tables")
    try:
        rows, dv, unknown, extra = decode_config(btext, kind, path=bak)
    except FormatError as e:
        if main_error is None:
            raise
        raise FormatError(f"{e.reason} (and {main.name} does not decode either: {main_error.reason}); "
                          f"the broker's load fails", path=e.path, offset=e.offset, field=e.field) from None
    return ConfigLoad(kind, main, "bak", reason, bak, rows, dv, unknown, breplaced, extra)


_FRAME_COLUMNS: dict[str, list[str]] = {
    "topics": ["topic", "topic_name", "read_queue_nums", "write_queue_nums", "perm", "perm_text",
               "topic_filter_type", "topic_sys_flag", "order", "attributes"],
    "consumer_offsets": ["topic", "group", "queue_id", "offset", "key", "suffix", "table"],
    "delay_offsets": ["level", "offset"],
    "subscription_groups": ["group", "group_name"] + [c for c, _, _ in _GROUP_FIELDS.values()],
    "timer_metrics": ["topic", "count", "time_stamp"],
    "transaction_metrics": ["topic", "count", "time_stamp"],
    "consumer_filters": ["topic", "group", "expression", "expression_type", "born_time", "dead_time", "client_version"],
    "consumer_order_info": ["topic", "group", "queue_id", *_ORDER_INFO_FIELDS.values()],
    "message_request_modes": ["topic", "group", "mode", "pop_share_queue_num"],
    "topic_queue_mappings": ["topic", "scope", "total_queues", "mapping_bname", "epoch", "dirty", "global_id",
                             *_MAPPING_ITEM_FIELDS.values()],
}


class StoreConfig:
    """Every config file of a store root, loaded as the broker loads them.

    >>> import tempfile
    >>> cfg = read_store_config(tempfile.mkdtemp())
    >>> cfg.loads["topics"].source, len(cfg.consumer_offsets())
    ('none', 0)
    """

    def __init__(self, root: str | os.PathLike, loads: dict[str, ConfigLoad]):
        self.root = Path(root)
        self.loads = loads

    def _frame(self, kind: str, columns_of: str | None = None) -> pd.DataFrame:
        rows = list(self.loads[kind].rows) if kind in self.loads else []
        return pd.DataFrame(rows, columns=_FRAME_COLUMNS[columns_of or kind])

    def topics(self) -> pd.DataFrame:
        """topics.json: one row per topic (queue numbers, perm, filter type, flags, attributes)."""
        return self._frame("topics")

    def consumer_offsets(self) -> pd.DataFrame:
        """consumerOffset.json (and lmqConsumerOffset.json when present): one row per
        (topic@group key, queue id) with the committed offset, sorted by topic, group, queue."""
        frames = [self._frame(k, "consumer_offsets") for k in ("consumer_offsets", "lmq_consumer_offsets")]
        out = pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)
        order = out.assign(_g=out["group"].fillna("")).sort_values(["topic", "_g", "queue_id"], kind="stable").index
        return out.loc[order].reset_index(drop=True)

    def delay_offsets(self) -> pd.DataFrame:
        """delayOffset.json: one row per delay level with the offset in its schedule queue."""
        return self._frame("delay_offsets").sort_values("level", ignore_index=True)

    def subscription_groups(self) -> pd.DataFrame:
        """subscriptionGroup.json: one row per consumer group's configuration."""
        return self._frame("subscription_groups")

    def frame(self, kind: str) -> pd.DataFrame:
        """The rows of any kind of :data:`CONFIG_FILES` as a DataFrame (empty when the store
        has no such file): e.g. "transaction_metrics" (half messages not yet resolved, per
        topic), "consumer_filters", "consumer_order_info" (orderly pop consumption),
        "message_request_modes" (which groups pop)."""
        if kind not in _FRAME_COLUMNS:
            raise ValueError(f"kind must be one of {sorted(_FRAME_COLUMNS)}, got {kind!r}")
        if kind == "consumer_offsets":   # with lmqConsumerOffset.json's, as the broker loads both
            return self.consumer_offsets()
        return self._frame(kind)

    def timer_metrics(self) -> pd.DataFrame:
        """timermetrics (5.x, TimerMetrics): one row per real topic, the count of its timer
        messages the wheel holds (+1 enqueued, -1 delivered or a delete marker) and when it last
        changed (ms)."""
        return self._frame("timer_metrics")

    def topic_queue_mappings(self) -> pd.DataFrame:
        """topicQueueMapping.json (5.x static topics, TopicQueueMappingManager): one row per
        LogicQueueMappingItem this broker holds, by topic and global (logic) queue id, oldest
        generation first: the physical queue (``bname``, ``queue_id``) that held the global queue
        from ``logic_offset`` on, for its physical offsets ``start_offset`` to ``end_offset``
        (-1: open). A static topic's queue offsets are logic offsets: see
        :func:`static_queue_offset`. A topic whose mapping hosts no queue here has one row with
        its item columns None."""
        out = self._frame("topic_queue_mappings")
        for col in ("global_id", "gen", "queue_id", "logic_offset", "start_offset", "end_offset", "time_of_start",
                    "time_of_end"):
            out[col] = out[col].astype("Int64")
        return out.sort_values(["topic", "global_id", "gen"], kind="stable", ignore_index=True)

    def as_dict(self) -> dict[str, Any]:
        return {k: v.as_dict() for k, v in self.loads.items()}


def static_queue_offset(logic_offset: int, start_offset: int, physical_offset: int, *,
                        end_offset: int = -1, strictly: bool = True) -> int:
    """The static (logic) queue offset of physical queue offset `physical_offset` under one
    LogicQueueMappingItem (rocketmq-all-5.3.3): ``computeStaticQueueOffsetStrictly`` is
    ``logic + (physical - start)``, the logic offset itself below the start;
    ``computeStaticQueueOffsetLoosely`` (`strictly` False) also caps at the item's end when it
    is decided (``end >= start``) and gives -1 while the logic offset is not (``logic < 0``).
    Cost: O(1).

    >>> static_queue_offset(525, 344, 350), static_queue_offset(525, 344, 10)
    (531, 525)
    >>> static_queue_offset(330, 120, 400, end_offset=315, strictly=False)
    525
    """
    if not strictly:
        if logic_offset < 0:
            return -1
        if physical_offset < start_offset:
            return logic_offset
        if end_offset >= start_offset and physical_offset > end_offset:
            return logic_offset + (end_offset - start_offset)
        return logic_offset + (physical_offset - start_offset)
    if physical_offset < start_offset:
        return logic_offset
    return logic_offset + (physical_offset - start_offset)


def physical_queue_offset(logic_offset: int, start_offset: int, static_offset: int) -> int:
    """``LogicQueueMappingItem.computePhysicalQueueOffset``: the physical queue offset of static
    (logic) offset `static_offset` under an item, ``(static - logic) + start``. Cost: O(1).

    >>> physical_queue_offset(525, 344, 531)
    350
    """
    return (static_offset - logic_offset) + start_offset


#: kind -> the folder under config/ of its RocksDB config manager (BrokerController 5.2+ with
#: storeType=defaultRocksDB: RocksDBTopicConfigManager, RocksDBSubscriptionGroupManager,
#: RocksDBConsumerOffsetManager, each getConfigFilePath at rocketmq-all-5.3.3)
ROCKSDB_CONFIG_FOLDERS = {"topics": "topics", "subscription_groups": "subscriptionGroups",
                          "consumer_offsets": "consumerOffsets"}
_ROCKSDB_TABLES = {"topics": "topicConfigTable", "subscription_groups": "subscriptionGroupTable",
                   "consumer_offsets": "offsetTable"}
#: ConfigRocksDBStorage: the data version's column family and key
_KV_DATA_VERSION = ("kvDataVersion", b"kvDataVersionKey")


def load_rocksdb_config(folder: str | os.PathLike, kind: str, json_file: ConfigLoad | None = None) -> ConfigLoad:
    """A RocksDB config manager's table, as its load builds it (RocksDBConfigManager.loadData, then
    ``merge``; read at rocketmq-all-5.3.3): every key of the default column family with its JSON
    value (a TopicConfig, a SubscriptionGroupConfig; for consumer offsets "topic@group" ->
    ``{"offsetTable": {queueId: offset}}``), the data version from the ``kvDataVersion`` family.
    Where the kind's JSON file loaded (`json_file`, source file or bak) with a data version whose
    counter is greater, the broker merges it in: its topics and groups replace those of the same
    name, its consumer offset table replaces the whole table (ConsumerOffsetManager.decode).
    Reads only (a private snapshot of the database). Cost: one pass over the database.
    Raises ImportError without rocksdict, FormatError for a database or value it cannot read."""
    from rmqlab.formats.rocksdb import read_families

    folder = Path(folder)
    families = read_families(folder)
    table: dict[str, Any] = {}
    for key, value in families.get("default", []):
        name = key.decode("utf-8", errors="replace")
        entry = parse_fastjson(value.decode("utf-8", errors="replace"), path=folder)
        if kind == "consumer_offsets":
            entry = entry.get("offsetTable", {}) if isinstance(entry, dict) else entry
        table[name] = entry
    version = dict(families.get(_KV_DATA_VERSION[0], []) or []).get(_KV_DATA_VERSION[1])
    doc: dict[str, Any] = {_ROCKSDB_TABLES[kind]: table}
    if version is not None:
        doc["dataVersion"] = parse_fastjson(version.decode("utf-8", errors="replace"), path=folder)
    rows, dv, unknown, extra = decode_config(json.dumps(doc), kind, path=folder)
    reason = f"the RocksDB config manager's database {folder.name}/ ({len(table)} keys)"
    kv_counter = dv.counter if dv is not None and dv.counter is not None else 0
    if json_file is not None and json_file.source in ("file", "bak") and json_file.data_version is not None \
            and (json_file.data_version.counter or 0) > kv_counter:
        name_field = {"topics": "topic", "subscription_groups": "group"}.get(kind)
        if name_field is None:
            rows = list(json_file.rows)
        else:
            replaced = {r[name_field] for r in json_file.rows}
            rows = [r for r in rows if r[name_field] not in replaced] + list(json_file.rows)
        reason += (f", merged with {json_file.used.name if json_file.used else json_file.path.name} (its data "
                   f"version counter {json_file.data_version.counter} > {kv_counter})")
        dv = json_file.data_version
    return ConfigLoad(kind, folder, "rocksdb", reason, folder, rows, dv, unknown, False, extra)


#: config/rdb: the one RocksDB database of the v2 config managers (configManagerVersion=v2, 5.3+:
#: ConfigStorage, TopicConfigManagerV2, SubscriptionGroupManagerV2, ConsumerOffsetManagerV2)
CONFIG_V2_FOLDER = "rdb"
# broker/config/v2 at rocketmq-all-5.3.3: a key is [TablePrefix.TABLE 1][TableId, 2 bytes]
# [RecordPrefix: DATA_VERSION 1 or DATA 2]...; TableId -> the kind whose table it holds
_V2_TABLES = {1: "consumer_offsets", 2: "pull_offsets", 3: "topics", 4: "subscription_groups"}
_V2_ROOT = {"topics": "topicConfigTable", "subscription_groups": "subscriptionGroupTable",
            "consumer_offsets": "offsetTable"}
_V2_DATA_VERSION_KEY = b"data_version"   # ConfigStorage.DATA_VERSION_KEY
_V2_JSON = 1                             # SerializationType.JSON: the value's first byte
_CTRL_1 = 1                              # AbstractRocksDBStorage.CTRL_1, after a group and a topic


def load_config_v2(folder: str | os.PathLike) -> dict[str, ConfigLoad]:
    """The v2 config managers' tables (configManagerVersion=v2, 5.3+), read from the RocksDB
    database ``config/rdb`` as their load reads it: topics and subscription groups keyed by
    name (``[i16 length][name]``) with a JSON value after one serialization-type byte; consumer
    offsets (and pull offsets, in ``extra``) keyed ``[i16][group] 0x01 [i16][topic] 0x01
    [i32 queueId]`` with an 8-byte offset; each table's data version (state version, timestamp,
    counter). The JSON files beside it are not read by such a broker. Reads only. Cost: one pass
    over the database. Raises ImportError without rocksdict, FormatError for a key or value
    these managers cannot read (naming the key)."""
    from rmqlab.formats.rocksdb import read_families

    folder = Path(folder)
    tables: dict[str, dict[str, Any]] = {k: {} for k in ("topics", "subscription_groups", "consumer_offsets",
                                                           "pull_offsets")}
    versions: dict[str, dict[str, int]] = {}
    def bad_key(key: bytes, why: str) -> FormatError:
        return FormatError(f"key {key[:64]!r}: {why}", path=folder, offset=None, field="key")

    for key, value in read_families(folder).get("default", []):

        if len(key) < 4 or key[0] != 1:
            raise bad_key(key, "not a v2 config key (TablePrefix.TABLE 0x01 first)")
        kind = _V2_TABLES.get(int.from_bytes(key[1:3], "big"))
        if kind is None:
            raise bad_key(key, f"table id {int.from_bytes(key[1:3], 'big')} is none of ConfigStorage's")
        if key[3] == 1:   # RecordPrefix.DATA_VERSION
            if key[4:] != _V2_DATA_VERSION_KEY or len(value) != 24:
                raise bad_key(key, "a data version record that is not 'data_version' -> 24 bytes")
            state, ts, counter = (int.from_bytes(value[i:i + 8], "big", signed=True) for i in (0, 8, 16))
            versions[kind] = {"stateVersion": state, "timestamp": ts, "counter": counter}
            continue
        if key[3] != 2:
            raise bad_key(key, f"record prefix {key[3]} is neither DATA_VERSION (1) nor DATA (2)")
        rest = key[4:]
        n = int.from_bytes(rest[:2], "big")
        name = rest[2:2 + n].decode("utf-8", errors="replace")
        if kind in ("topics", "subscription_groups"):
            if len(rest) != 2 + n or not value or value[0] != _V2_JSON:
                raise bad_key(key, "a name record whose key length or value's serialization type is not JSON")
            tables[kind][name] = parse_fastjson(value[1:].decode("utf-8", errors="replace"), path=folder)
            continue
        tail = rest[2 + n:]
        m = int.from_bytes(tail[1:3], "big") if len(tail) >= 3 else -1
        if len(tail) != 1 + 2 + m + 1 + 4 or tail[0] != _CTRL_1 or tail[3 + m] != _CTRL_1 or len(value) != 8:
            raise bad_key(key, "an offset record that is not [group] 0x01 [topic] 0x01 [queueId] -> 8 bytes")
        topic = tail[3:3 + m].decode("utf-8", errors="replace")
        qid = int.from_bytes(tail[4 + m:], "big", signed=True)
        tables[kind].setdefault(f"{topic}@{name}", {})[qid] = int.from_bytes(value, "big", signed=True)
    out = {}
    for kind in ("topics", "subscription_groups", "consumer_offsets"):
        doc: dict[str, Any] = {_V2_ROOT[kind]: tables[kind]}
        if kind in versions:
            doc["dataVersion"] = versions[kind]
        rows, dv, unknown, extra = decode_config(json.dumps(doc), kind, path=folder)
        if kind == "consumer_offsets":
            pulls, _, _, _ = decode_config(json.dumps({"offsetTable": tables["pull_offsets"]}), kind, path=folder)
            extra = {**extra, "pull_offsets": pulls}
        out[kind] = ConfigLoad(kind, folder, "rocksdb", f"the v2 config database {folder.name}/ "
                               f"(configManagerVersion=v2; {len(tables[kind])} records)", folder, rows, dv, unknown,
                               False, extra)
    return out


def read_store_config(root: str | os.PathLike) -> StoreConfig:
    """The ``config/`` folder of the store at `root`, every file through :func:`load_config_file`
    (the optional lmqConsumerOffset.json only when it or its .bak exists); topics, groups and
    consumer offsets from their RocksDB config managers' databases where the store has them
    (:func:`load_rocksdb_config`), or from the v2 managers' ``config/rdb``
    (:func:`load_config_v2`). Reads only. Cost: reads the JSON files once, and the databases.

    >>> import tempfile
    >>> sorted(read_store_config(tempfile.mkdtemp()).loads)
    ['consumer_offsets', 'delay_offsets', 'subscription_groups', 'topics']

    Raises FormatError where the broker's load of a file would fail.
    """
    folder = Path(root) / CONFIG
    loads = {}
    for kind, name in CONFIG_FILES.items():
        p = folder / name
        if kind in OPTIONAL_KINDS and not (p.exists() or p.with_name(name + ".bak").exists()):
            continue
        loads[kind] = load_config_file(p, kind)
        rocks = folder / ROCKSDB_CONFIG_FOLDERS.get(kind, "")
        if kind in ROCKSDB_CONFIG_FOLDERS and is_rocksdb(rocks):
            loads[kind] = load_rocksdb_config(rocks, kind, loads[kind])
    if is_rocksdb(folder / CONFIG_V2_FOLDER):   # configManagerVersion=v2: its managers read only config/rdb
        loads.update(load_config_v2(folder / CONFIG_V2_FOLDER))
    return StoreConfig(root, loads)


def batch_cq_topics(root: str | os.PathLike) -> frozenset[str]:
    """The topics of the store at `root` whose queues are BatchConsumeQueues: those whose
    ``queue.type`` attribute in config/topics.json (or its .bak, as the broker loads it) is
    ``BatchCQ`` (QueueTypeUtils.getCQType with TopicAttributes.QUEUE_TYPE_ATTRIBUTE, read at
    rocketmq-all-5.3.1: absent attributes mean SimpleCQ, so every 4.x file gives none); with
    the v2 config managers, config/rdb's topics. A store without config/ has none. Reads only.
    Cost: reads topics.json once.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); (root / "config").mkdir()
    >>> _ = (root / "config" / "topics.json").write_text(
    ...     '{"topicConfigTable":{"B":{"attributes":{"queue.type":"BatchCQ"}},"T":{"attributes":{}}}}')
    >>> sorted(batch_cq_topics(root)), batch_cq_topics(tempfile.mkdtemp())
    (['B'], frozenset())

    Raises FormatError where the broker's load of topics.json fails, and for a queue.type
    that is no CQType (the broker's CQType.valueOf throws), naming the file and the field.
    """
    from rmqlab.rules.dispatch import QUEUE_TYPE_ATTRIBUTE, cq_type

    main = Path(root) / CONFIG / CONFIG_FILES["topics"]
    v2 = Path(root) / CONFIG / CONFIG_V2_FOLDER
    if is_rocksdb(v2):   # configManagerVersion=v2: the topics are in config/rdb alone
        load = load_config_v2(v2)["topics"]
    elif not (main.exists() or main.with_name(main.name + ".bak").exists()):
        return frozenset()
    else:
        load = load_config_file(main, "topics")
    out = set()
    for row in load.rows:
        try:
            kind = cq_type(row["attributes"])
        except ValueError as e:
            raise FormatError(str(e), path=load.used,
                              field=_path(_path(_path("topicConfigTable", row["topic"]), "attributes"),
                                          QUEUE_TYPE_ATTRIBUTE)) from None
        if kind == "BatchCQ":
            out.add(row["topic"])
    return frozenset(out)
