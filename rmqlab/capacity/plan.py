"""Capacity-plan inputs: a :class:`Plan` read from TOML (:func:`load_plan`) or a mapping
(:func:`parse_plan`), every uncertain number an :class:`Interval` (low / likely / high).

Every input is checked; a bad one raises :class:`PlanError`, whose message starts with the
field's dotted TOML path::

    traffic.messages_per_second.low: must be > 0, got -5

The fields, their units and the RocketMQ settings they stand for are listed once, in
:data:`FIELDS`; :data:`EXAMPLE_PLAN_TOML` is a commented plan holding every field.

>>> p = parse_plan({"traffic": {"messages_per_second": {"low": 800, "likely": 1000, "high": 1500}}})
>>> p.traffic.messages_per_second, p.index.hash_slot_num
(Interval(low=800.0, likely=1000.0, high=1500.0), 5000000)
>>> parse_plan({"index": {"hash_slot_num": 100, "index_num": 50}})
Traceback (most recent call last):
...
rmqlab.capacity.plan.PlanError: index.index_num: must be >= index.hash_slot_num (100), got 50: ...
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmqlab.errors import RmqlabError
from rmqlab.formats.commitlog import DEFAULT_FILE_SIZE as COMMITLOG_FILE_SIZE
from rmqlab.formats.consumequeue import DEFAULT_UNITS_PER_FILE, UNIT_SIZE
from rmqlab.formats.indexfile import (
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    ENTRY,
    HEADER,
    INT_MAX,
    SLOT,
    Geometry,
)
from rmqlab.rules.topics import is_valid_topic
from rmqlab.store.indexservice import DEFAULT_MAX_MSGS_NUM_BATCH

__all__ = [
    "PlanError",
    "Interval",
    "Plan",
    "Alternative",
    "FIELDS",
    "POINTS",
    "EXAMPLE_PLAN_TOML",
    "load_plan",
    "parse_plan",
    "parse_size",
]

#: The points of an interval a deterministic estimate can be taken at.
POINTS = ("low", "likely", "high")


class PlanError(RmqlabError, ValueError):
    """A capacity plan input is missing, of the wrong type or out of range. ``field`` is the
    dotted TOML path (``traffic.messages_per_second.low``); the message starts with it."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


# ----------------------------------------------------------------------------------- interval


@dataclass(frozen=True)
class Interval:
    """An uncertain input: ``low <= likely <= high`` (a plain number is all three)."""

    low: float
    likely: float
    high: float

    def __post_init__(self):
        if not self.low <= self.likely <= self.high:
            raise ValueError(f"need low <= likely <= high, got {self.low}, {self.likely}, {self.high}")

    @classmethod
    def point(cls, value: float) -> Interval:
        return cls(float(value), float(value), float(value))

    def at(self, point: str) -> float:
        """The value at "low", "likely" or "high"."""
        if point not in POINTS:
            raise ValueError(f"point must be one of {POINTS}, got {point!r}")
        return getattr(self, point)

    @property
    def is_point(self) -> bool:
        return self.low == self.high

    def to_toml_value(self) -> Any:
        if self.is_point:
            return _plain(self.likely)
        return {"low": _plain(self.low), "likely": _plain(self.likely), "high": _plain(self.high)}


def _plain(x: float) -> int | float:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


# ------------------------------------------------------------------------------------- fields


@dataclass(frozen=True)
class Field:
    """One plan input. kind: interval | float | int | bool | str | choice | size | ratio |
    fraction | topics | hours. ``lo``/``hi`` bound numbers (``lo_open``: lo itself excluded)."""

    kind: str
    default: Any
    unit: str
    doc: str
    rocketmq: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    integer: bool = False


_GiB = 1 << 30

#: Every plan input, by section, in TOML order: kind, default, unit, meaning, RocketMQ name.
FIELDS: dict[str, dict[str, Field]] = {
    "plan": {
        "name": Field("str", "capacity plan", "", "a title for reports"),
        "seed": Field("int", 0, "", "random seed of the key sample and of Monte Carlo", lo=0, hi=2**63 - 1),
    },
    "traffic": {
        "messages_per_second": Field("interval", 1000.0, "messages/s",
                                     "mean write rate over a day, all topics together", lo=0, lo_open=True),
        "peak_factor": Field("interval", 1.0, "x",
                             "short-term peak rate (bursts) over the profile's rate at its peak hour",
                             lo=1),
        "daily_profile": Field("choice", "flat", "", "rate shape over a day: flat, or a cosine daily "
                               "cycle as rmqlab.lab.workload's 'daily' pattern", choices=("flat", "daily")),
        "daily_amplitude": Field("fraction", 0.5, "", "daily cycle: trough = mean x (1 - amplitude), "
                                 "peak = mean x (1 + amplitude)"),
        "daily_peak_hour": Field("float", 20.0, "hour", "hour of day of the highest rate", lo=0, hi=24,
                                 hi_open=True),
        "growth_percent_per_month": Field("interval", 0.0, "%/month", "traffic growth (compounded, "
                                          "30.44-day months)", lo=-100, lo_open=True),
    },
    "keys": {
        "keys_per_message": Field("interval", 1.0, "keys", "mean KEYS tokens of a message that has KEYS",
                                  "KEYS property, split on ' '", lo=1),
        "max_keys_per_message": Field("int", 8, "keys", "most KEYS tokens on one message "
                                      "(shapes the key sample only)", lo=1, hi=64),
        "uniq_key": Field("bool", True, "", "messages carry UNIQ_KEY, indexed as one more key each",
                          "UNIQ_KEY property (MessageClientIDSetter)"),
        "keyless_fraction": Field("fraction", 0.1, "", "share of messages without KEYS"),
        "hot_key_fraction": Field("fraction", 0.2, "", "share of KEYS tokens drawn from the hot "
                                  "(repeating) vocabulary; the others are one-off ids such as order ids"),
        "cardinality": Field("interval", 1000.0, "keys", "distinct keys of the hot vocabulary "
                             "(rmqlab.lab.workload's hot_keys); one-off ids come on top", lo=1, integer=True),
        "zipf_s": Field("interval", 1.1, "", "Zipf exponent of hot-key popularity: P(rank r) ~ r^-s", lo=0),
        "key_bytes": Field("interval", 12.0, "bytes", "mean UTF-8 bytes of one KEYS token", lo=0,
                           lo_open=True),
    },
    "messages": {
        "body_bytes": Field("interval", 200.0, "bytes", "mean message body", "BODY", lo=0, lo_open=True),
        "topics": Field("topics", 1, "", "number of topics, or a list of their names (names matter: "
                        "the index hashes topic#key)"),
        "topic_name_bytes": Field("float", None, "bytes", "mean UTF-8 bytes of a topic name "
                                  "(default: from the names)", "TOPIC", lo=1, hi=127),
        "queues_per_topic": Field("int", 4, "queues", "write queues per topic", "writeQueueNums",
                                  lo=1, hi=1024),
        "properties_bytes": Field("interval", None, "bytes", "mean bytes of the whole properties block "
                                  "(default: derived from the keys and other_properties_bytes)",
                                  "PROPERTIES", lo=0, hi=32767),
        "other_properties_bytes": Field("float", 43.0, "bytes", "properties other than KEYS and "
                                        "UNIQ_KEY, as stored 'NAME\\x01value\\x02' (default: CLUSTER="
                                        "DefaultCluster, TAGS=TagA, WAIT=true)", lo=0, hi=32767),
    },
    "retention": {
        "file_reserved_time_hours": Field("interval", 72.0, "hours", "files older than this are deleted",
                                          "fileReservedTime", lo=0, lo_open=True),
        "delete_when": Field("hours", "04", "hours of day", "hours in which expired files are deleted, "
                             "';'-separated", "deleteWhen"),
    },
    "disk": {
        "capacity_bytes": Field("size", 2 * 1024 * _GiB, "bytes", "size of the store's disk "
                                "(an int or text such as \"500GiB\", \"1 TiB\", \"2TB\")"),
        "used_bytes": Field("size", 0, "bytes", "space used on that disk by other data", lo=0),
        "disk_max_used_space_ratio": Field("ratio", 0.75, "", "above it expired files are deleted at any "
                                           "hour (RocketMQ's value is in %: 75 = 0.75)",
                                           "diskMaxUsedSpaceRatio"),
        "disk_space_clean_forcibly_ratio": Field("ratio", 0.85, "", "above it files are deleted even "
                                                 "before they expire", "diskSpaceCleanForciblyRatio"),
        "disk_space_warning_level_ratio": Field("ratio", 0.90, "", "above it the broker marks the disk "
                                                "full and refuses writes", "diskSpaceWarningLevelRatio"),
    },
    "index": {
        "hash_slot_num": Field("int", DEFAULT_HASH_SLOT_NUM, "slots", "hash slots per index file",
                               "maxHashSlotNum", lo=1, hi=INT_MAX),
        "index_num": Field("int", DEFAULT_INDEX_NUM, "entries", "entries per index file (keys = "
                           "index_num - 1)", "maxIndexNum", lo=2, hi=INT_MAX),
        "max_msgs_num_batch": Field("int", DEFAULT_MAX_MSGS_NUM_BATCH, "offsets",
                                    "most offsets one key query returns", "maxMsgsNumBatch", lo=1, hi=INT_MAX),
    },
    "files": {
        "commitlog_file_size": Field("size", COMMITLOG_FILE_SIZE, "bytes", "CommitLog file size",
                                     "mappedFileSizeCommitLog", lo=1024, hi=INT_MAX),
        "consume_queue_units_per_file": Field("int", DEFAULT_UNITS_PER_FILE, "units",
                                              f"{UNIT_SIZE}-byte units per ConsumeQueue file",
                                              f"mappedFileSizeConsumeQueue / {UNIT_SIZE}", lo=1,
                                              hi=INT_MAX // UNIT_SIZE),
    },
    "queries": {
        "window_minutes": Field("interval", 60.0, "minutes", "time range [begin, end] of a key query",
                                lo=0, lo_open=True),
        "hot_key_rank": Field("int", 1, "rank", "which hot key the truncation probability is for "
                              "(1 = hottest)", lo=1),
    },
}

#: Keys of a [[compare]] table.
COMPARE_FIELDS: dict[str, Field] = {
    "name": Field("str", None, "", "label of the alternative"),
    "hash_slot_num": FIELDS["index"]["hash_slot_num"],
    "index_num": FIELDS["index"]["index_num"],
    "max_msgs_num_batch": FIELDS["index"]["max_msgs_num_batch"],
}

_INTERVAL_KEYS = ("low", "likely", "high")


# ------------------------------------------------------------------------------------- parsing


_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")
_SIZE_UNITS = {"": 1, "b": 1,
               "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
               "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50}


def parse_size(value: Any, field: str = "size") -> int:
    """Bytes from an int or a text such as ``"500GiB"``, ``"1 TiB"``, ``"2TB"`` (KB/MB/GB/TB are
    powers of 1000, KiB/MiB/GiB/TiB of 1024; case does not matter). The result must be whole.

    >>> parse_size("500GiB"), parse_size("1 TiB"), parse_size("1.5 KB"), parse_size(4096)
    (536870912000, 1099511627776, 1500, 4096)
    """
    if isinstance(value, bool):
        raise PlanError(field, f"must be a size in bytes (an int or text like \"500GiB\"), got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not value.is_integer():
            raise PlanError(field, f"must be a whole number of bytes, got {value!r}")
        return int(value)
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        unit = m and m.group(2).lower()
        if m is None or unit not in _SIZE_UNITS:
            raise PlanError(field, f"cannot read {value!r} as a size: write an int or a number with "
                            "one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB")
        number = float(m.group(1)) * _SIZE_UNITS[unit]
        if not number.is_integer():
            raise PlanError(field, f"{value!r} is not a whole number of bytes")
        return int(number)
    raise PlanError(field, f"must be a size in bytes (an int or text like \"500GiB\"), got {value!r}")


def _number(value: Any, field: str, spec: Field) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlanError(field, f"must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise PlanError(field, f"must be finite, got {value!r}")
    if spec.integer and not x.is_integer():
        raise PlanError(field, f"must be a whole number, got {value!r}")
    _check_range(x, field, spec)
    return x


def _check_range(x: float, field: str, spec: Field) -> None:
    if spec.lo is not None and (x <= spec.lo if spec.lo_open else x < spec.lo):
        raise PlanError(field, f"must be {'>' if spec.lo_open else '>='} {_plain(spec.lo)}, got {_plain(x)}")
    if spec.hi is not None and (x >= spec.hi if spec.hi_open else x > spec.hi):
        raise PlanError(field, f"must be {'<' if spec.hi_open else '<='} {_plain(spec.hi)}, got {_plain(x)}")


def _interval(value: Any, field: str, spec: Field) -> Interval:
    if isinstance(value, Interval):
        value = {"low": value.low, "likely": value.likely, "high": value.high}
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(_INTERVAL_KEYS))
        if unknown:
            raise PlanError(f"{field}.{unknown[0]}", "unknown key; an interval has low, likely, high")
        missing = [k for k in _INTERVAL_KEYS if k not in value]
        if missing:
            raise PlanError(f"{field}.{missing[0]}", "missing: an interval needs low, likely and high "
                            "(or write one plain number)")
        low, likely, high = (_number(value[k], f"{field}.{k}", spec) for k in _INTERVAL_KEYS)
        if not low <= likely:
            raise PlanError(f"{field}.likely", f"must be >= low ({_plain(low)}), got {_plain(likely)}")
        if not likely <= high:
            raise PlanError(f"{field}.high", f"must be >= likely ({_plain(likely)}), got {_plain(high)}")
        return Interval(low, likely, high)
    return Interval.point(_number(value, field, spec))


def _value(value: Any, field: str, spec: Field) -> Any:
    kind = spec.kind
    if kind == "interval":
        return _interval(value, field, spec)
    if kind == "str":
        if not isinstance(value, str) or not value:
            raise PlanError(field, f"must be a non-empty string, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise PlanError(field, f"must be true or false, got {value!r}")
        return value
    if kind == "choice":
        if value not in spec.choices:
            raise PlanError(field, f"must be one of {', '.join(spec.choices)}, got {value!r}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise PlanError(field, f"must be an integer, got {value!r}")
        _check_range(value, field, spec)
        return int(value)
    if kind in ("float", "fraction", "ratio"):
        if kind == "fraction":
            spec = dataclasses.replace(spec, lo=0.0, hi=1.0)
        x = _number(value, field, spec)
        if kind == "ratio" and not 0.0 < x <= 1.0:
            hint = f" (RocketMQ writes percent: {_plain(x)} % is {_plain(x / 100)} here)" if 1 < x <= 100 else ""
            raise PlanError(field, f"must be a ratio in (0, 1], got {_plain(x)}{hint}")
        return x
    if kind == "size":
        n = parse_size(value, field)
        lo = 1 if spec.lo is None else spec.lo
        if n < lo:
            raise PlanError(field, f"must be >= {_plain(lo)} bytes, got {n}")
        if spec.hi is not None and n > spec.hi:
            raise PlanError(field, f"must be <= {_plain(spec.hi)} bytes, got {n}")
        return n
    if kind == "topics":
        if isinstance(value, bool):
            raise PlanError(field, f"must be a number of topics or a list of names, got {value!r}")
        if isinstance(value, int):
            if value < 1:
                raise PlanError(field, f"must be >= 1, got {value}")
            return tuple(f"Topic{i}" for i in range(value))
        if isinstance(value, (list, tuple)) and value:
            for i, t in enumerate(value):
                if not isinstance(t, str) or not is_valid_topic(t):
                    raise PlanError(f"{field}[{i}]", f"not a valid RocketMQ topic name "
                                    f"([%|a-zA-Z0-9_-], 1..127 chars): {t!r}")
            if len(set(value)) != len(value):
                raise PlanError(field, "topic names must be distinct")
            return tuple(value)
        raise PlanError(field, f"must be a number of topics or a non-empty list of names, got {value!r}")
    if kind == "hours":
        text = value if isinstance(value, str) else None
        parts = text.split(";") if text else []
        try:
            hours = tuple(sorted({int(p) for p in parts}))
        except ValueError:
            hours = ()
        if not hours or any(not 0 <= h <= 23 for h in hours):
            raise PlanError(field, f"must be hours of day 00..23 separated by ';' (as deleteWhen, "
                            f"e.g. \"04\" or \"04;16\"), got {value!r}")
        return hours
    raise AssertionError(kind)


def _section(raw: Any, name: str, spec: Mapping[str, Field], prefix: str) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise PlanError(prefix, f"must be a table of settings, got {raw!r}")
    unknown = sorted(set(raw) - set(spec))
    if unknown:
        raise PlanError(f"{prefix}.{unknown[0]}", f"unknown key; [{name}] allows: {', '.join(spec)}")
    out = {}
    for key, f in spec.items():
        if key in raw and raw[key] is not None:
            out[key] = _value(raw[key], f"{prefix}.{key}", f)
        elif f.default is None:
            out[key] = None
        else:
            out[key] = _value(f.default, f"{prefix}.{key}", f)
    return out


# ---------------------------------------------------------------------------------- the plan


def _section_class(name: str, fields: Mapping[str, Field]):
    cls = dataclasses.make_dataclass(
        name, [(k, Any) for k in fields], frozen=True,
        namespace={"__doc__": f"The [{name.lower()}] inputs of a plan (see FIELDS)."})
    cls.__module__ = __name__
    return cls


Traffic = _section_class("Traffic", FIELDS["traffic"])
Keys = _section_class("Keys", FIELDS["keys"])
Messages = _section_class("Messages", FIELDS["messages"])
Retention = _section_class("Retention", FIELDS["retention"])
Disk = _section_class("Disk", FIELDS["disk"])
IndexConfig = _section_class("IndexConfig", FIELDS["index"])
Files = _section_class("Files", FIELDS["files"])
Queries = _section_class("Queries", FIELDS["queries"])
_SECTION_CLASSES = {"traffic": Traffic, "keys": Keys, "messages": Messages, "retention": Retention,
                    "disk": Disk, "index": IndexConfig, "files": Files, "queries": Queries}


@dataclass(frozen=True)
class Alternative:
    """An index configuration to compare with the plan's ([[compare]])."""

    name: str
    hash_slot_num: int
    index_num: int
    max_msgs_num_batch: int


@dataclass(frozen=True)
class Plan:
    """A validated capacity plan. Sections are frozen dataclasses named like the TOML tables
    (``plan.traffic.messages_per_second`` ...); uncertain numbers are :class:`Interval`.
    Build it with :func:`parse_plan` / :func:`load_plan`, change it with :meth:`replace`."""

    name: str
    seed: int
    traffic: Any
    keys: Any
    messages: Any
    retention: Any
    disk: Any
    index: Any
    files: Any
    queries: Any
    compare: tuple[Alternative, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The plan as a TOML-shaped mapping (``parse_plan(p.to_dict()) == p``); sizes in bytes,
        intervals as ``{low, likely, high}`` tables or plain numbers."""
        out: dict[str, Any] = {"plan": {"name": self.name, "seed": self.seed}}
        for sec in _SECTION_CLASSES:
            obj = getattr(self, sec)
            d = {}
            for key, f in FIELDS[sec].items():
                v = getattr(obj, key)
                if v is None:
                    continue
                if isinstance(v, Interval):
                    v = v.to_toml_value()
                elif f.kind == "topics":
                    v = list(v)
                elif f.kind == "hours":
                    v = ";".join(f"{h:02d}" for h in v)
                d[key] = v
            out[sec] = d
        if self.compare:
            out["compare"] = [dataclasses.asdict(a) for a in self.compare]
        return out

    @property
    def title(self) -> str:
        """The reports' title: "Capacity plan: <name>", or "Capacity plan" while the plan keeps
        the default name (which would only repeat it)."""
        return "Capacity plan" if self.name == FIELDS["plan"]["name"].default else f"Capacity plan: {self.name}"

    def replace(self, changes: Mapping[str, Any] | None = None, **plain: Any) -> Plan:
        """A new plan with some inputs changed, by dotted path (validated like the TOML):
        ``p.replace({"traffic.messages_per_second": 2000, "index.hash_slot_num": 1_000_000})``."""
        d = self.to_dict()
        for path, value in {**(changes or {}), **plain}.items():
            sec, _, key = path.partition(".")
            if sec == "plan" or not key:
                d.setdefault("plan", {})[key or sec] = value
            else:
                d.setdefault(sec, {})[key] = value
        return parse_plan(d)

    def at(self, point: str) -> Plan:
        """Every interval collapsed to its value at `point` ("low", "likely", "high")."""
        if point not in POINTS:
            raise ValueError(f"point must be one of {POINTS}, got {point!r}")
        kw = {}
        for sec in _SECTION_CLASSES:
            obj = getattr(self, sec)
            kw[sec] = dataclasses.replace(obj, **{
                k: Interval.point(v.at(point)) for k in FIELDS[sec]
                if isinstance(v := getattr(obj, k), Interval)})
        return dataclasses.replace(self, **kw)

    def with_likely(self) -> Plan:
        """Every interval collapsed to its likely value (a plan without uncertainty)."""
        return self.at("likely")

    def intervals(self) -> dict[str, Interval]:
        """Every interval input by dotted path (what Monte Carlo samples)."""
        return {f"{sec}.{k}": v for sec in _SECTION_CLASSES for k in FIELDS[sec]
                if isinstance(v := getattr(getattr(self, sec), k), Interval)}

    @property
    def geometry(self) -> Geometry:
        return Geometry(self.index.hash_slot_num, self.index.index_num)


def _check_index(hash_slot_num: int, index_num: int, prefix: str) -> None:
    if index_num < hash_slot_num:
        # MessageStoreConfig accepts any pair; this is a planning rule
        raise PlanError(f"{prefix}.index_num",
                        f"must be >= {prefix}.hash_slot_num ({hash_slot_num}), got {index_num}: a full "
                        f"file would leave at least {hash_slot_num - index_num + 1} slots empty, so "
                        f"slot-table memory and disk are spent for nothing (RocketMQ's broker does not "
                        f"check this; it is a planning sanity rule; the defaults are 5,000,000 slots and "
                        f"20,000,000 entries)")
    size = Geometry(hash_slot_num, index_num).file_size
    if size > INT_MAX:
        raise PlanError(f"{prefix}.index_num",
                        f"{HEADER.size} + {SLOT.size} x {hash_slot_num} + {ENTRY.size} x {index_num} = "
                        f"{size} bytes does not fit the "
                        f"broker's int file size (at most {INT_MAX})")


def parse_plan(mapping: Mapping[str, Any]) -> Plan:
    """A :class:`Plan` from a TOML-shaped mapping (sections as in :data:`FIELDS`, plus
    ``[[compare]]`` tables); missing inputs take their defaults. Raises :class:`PlanError`
    naming the field for anything unknown, mistyped or out of range. Cost: O(inputs).

    >>> parse_plan({"traffic": {"messages_per_second": -5}})
    Traceback (most recent call last):
    ...
    rmqlab.capacity.plan.PlanError: traffic.messages_per_second: must be > 0, got -5
    """
    if not isinstance(mapping, Mapping):
        raise PlanError("plan", f"a plan is a table of sections, got {type(mapping).__name__}")
    allowed = list(FIELDS) + ["compare"]
    unknown = sorted(set(mapping) - set(allowed))
    if unknown:
        raise PlanError(unknown[0], f"unknown section; a plan has: {', '.join(allowed)}")
    head = _section(mapping.get("plan"), "plan", FIELDS["plan"], "plan")
    sections = {sec: _section(mapping.get(sec), sec, FIELDS[sec], sec) for sec in _SECTION_CLASSES}

    m = sections["messages"]
    if m["topic_name_bytes"] is None:
        m["topic_name_bytes"] = sum(len(t.encode()) for t in m["topics"]) / len(m["topics"])
    idx = sections["index"]
    _check_index(idx["hash_slot_num"], idx["index_num"], "index")
    k = sections["keys"]
    if k["keys_per_message"].high > k["max_keys_per_message"]:
        raise PlanError("keys.keys_per_message.high", f"must be <= keys.max_keys_per_message "
                        f"({k['max_keys_per_message']}), got {_plain(k['keys_per_message'].high)}")
    if not k["uniq_key"] and k["keyless_fraction"] >= 1.0:
        raise PlanError("keys.keyless_fraction", "is 1 and keys.uniq_key is false: no message has a key "
                        "to index, so there is no index to plan")
    if sections["queries"]["hot_key_rank"] > k["cardinality"].low:
        raise PlanError("queries.hot_key_rank", f"must be <= keys.cardinality.low "
                        f"({_plain(k['cardinality'].low)}), got {sections['queries']['hot_key_rank']}")
    d = sections["disk"]
    if d["used_bytes"] >= d["capacity_bytes"]:
        raise PlanError("disk.used_bytes", f"must be < disk.capacity_bytes ({d['capacity_bytes']}), "
                        f"got {d['used_bytes']}")

    raw_compare = mapping.get("compare", [])
    if not isinstance(raw_compare, (list, tuple)):
        raise PlanError("compare", "must be an array of tables ([[compare]])")
    compare = []
    for i, raw in enumerate(raw_compare):
        prefix = f"compare[{i}]"
        if not isinstance(raw, Mapping):
            raise PlanError(prefix, f"must be a table, got {raw!r}")
        if "name" not in raw:
            raise PlanError(f"{prefix}.name", "missing: every alternative needs a name")
        c = _section({**{k: idx[k] for k in ("hash_slot_num", "index_num", "max_msgs_num_batch")}, **raw},
                     "compare", COMPARE_FIELDS, prefix)
        _check_index(c["hash_slot_num"], c["index_num"], prefix)
        compare.append(Alternative(**c))

    return Plan(name=head["name"], seed=head["seed"], compare=tuple(compare),
                **{sec: _SECTION_CLASSES[sec](**vals) for sec, vals in sections.items()})


def load_plan(path: str | os.PathLike) -> Plan:
    """Read and validate a TOML plan file (stdlib ``tomllib``); a file without ``[plan] name``
    is named by its file name without the suffix. A TOML syntax error becomes a
    :class:`PlanError` with field ``"toml"`` and the parser's line/column. Cost: O(file)."""
    with open(path, "rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise PlanError("toml", f"{os.fspath(path)}: {e}") from None
    head = data.get("plan")
    if head is None or (isinstance(head, dict) and "name" not in head):
        # a plan file that names nothing is named by its file: shop.toml's reports say "shop"
        data["plan"] = {**(head or {}), "name": Path(path).stem}
    return parse_plan(data)


def _example() -> str:
    lines = ["# rmqlab capacity plan. Every number with a range may be written",
             "#   name = {low = 800, likely = 1000, high = 1500}   or a plain number (no uncertainty).",
             "# Sizes take ints (bytes) or text: \"500GiB\", \"1 TiB\", \"2TB\".", ""]
    examples = {("traffic", "messages_per_second"): "{low = 800, likely = 1000, high = 1500}",
                ("traffic", "peak_factor"): "{low = 1.0, likely = 1.5, high = 3.0}",
                ("traffic", "daily_profile"): '"daily"',
                ("traffic", "growth_percent_per_month"): "{low = 0, likely = 5, high = 15}",
                ("keys", "keys_per_message"): "{low = 1, likely = 1.2, high = 2}",
                ("keys", "cardinality"): "{low = 500, likely = 1000, high = 5000}",
                ("keys", "zipf_s"): "{low = 0.8, likely = 1.1, high = 1.4}",
                ("messages", "body_bytes"): "{low = 150, likely = 200, high = 400}",
                ("messages", "topics"): '["Orders", "Payments", "Inventory"]',
                ("retention", "file_reserved_time_hours"): "{low = 48, likely = 72, high = 72}",
                ("disk", "capacity_bytes"): '"2TiB"',
                ("files", "commitlog_file_size"): '"1GiB"'}
    for sec, fields in FIELDS.items():
        lines.append(f"[{sec}]")
        for key, f in fields.items():
            unit = f" [{f.unit}]" if f.unit else ""
            rq = f" (RocketMQ {f.rocketmq})" if f.rocketmq else ""
            lines.append(f"# {f.doc}{unit}{rq}")
            if (sec, key) in examples:
                lines.append(f"{key} = {examples[sec, key]}")
            elif f.default is None:
                lines.append(f"# {key} = ...")
            else:
                lines.append(f"{key} = {_toml_literal(f.default)}")
        lines.append("")
    lines += ["# Alternative index configurations for the report's comparison (any number of them).",
              "[[compare]]", 'name = "half the slots"', "hash_slot_num = 2500000", "index_num = 20000000",
              "", "[[compare]]", 'name = "double size"', "hash_slot_num = 10000000", "index_num = 40000000",
              ""]
    return "\n".join(lines)


def _toml_literal(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, int):
        return f"{v:_}" if abs(v) >= 10_000 else str(v)
    return repr(v)


#: A commented plan with every field (units and RocketMQ setting names in the comments);
#: ``parse_plan(tomllib.loads(EXAMPLE_PLAN_TOML))`` is valid.
EXAMPLE_PLAN_TOML = _example()
