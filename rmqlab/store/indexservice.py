"""A folder of index files with the broker's IndexService semantics.

Mirrors ``org.apache.rocketmq.store.index.IndexService`` (RocketMQ store module, checked
against apache/rocketmq 5.3.x): which file is written, when a new one is created and how it is
seeded, which messages and keys are indexed (``buildIndex``), and how a key query walks the
files (``queryOffset``).

A store's ``index/`` folder holds files named by their creation time, ``yyyyMMddHHmmssSSS`` in
the broker's local time zone, so sorting by name is creation order. Only the newest file is
written; when it is full the broker creates the next one, seeded with the full file's end
values (see :meth:`IndexFile.create`).

Three ways in, in the kafka-python / npTDMS manner:

* :class:`IndexService` opens a folder (read-only by default) and answers
  :meth:`~IndexService.query_offset` exactly as the broker does, quirks included, with an
  optional :class:`DirectoryQueryTrace` explaining every file visited or skipped.
* ``IndexService(..., read_only=False)`` indexes messages one at a time like the broker
  (:meth:`~IndexService.build_index`, :meth:`~IndexService.put_message`).
* :func:`bulk_build` writes a whole folder at once from arrays (C per file), byte for byte the
  same files as the one-at-a-time path; :func:`expand_messages` / :func:`expand_columns` turn
  messages into the (key, offset, timestamp) rows the broker would put, in its order.

>>> import tempfile, datetime
>>> d = tempfile.mkdtemp()
>>> clock = iter(range(1718000000000, 1718000100000, 1000)).__next__   # ms since the epoch
>>> with IndexService(d, hash_slot_num=8, index_num=3, read_only=False,
...                   clock=clock, tz=datetime.timezone.utc) as svc:
...     svc.put_message("T", 100, 1718000000000, keys="a b", uniq_key="U1")
...     svc.query_offset("T", "b", 64, 0, 2**63 - 1).phy_offsets
...     [f.path.name for f in svc.files]
3
[100]
['20240610061320000', '20240610061321000']
"""
from __future__ import annotations

import datetime as _dt
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import ReadOnlyError
from rmqlab.formats.indexfile import (
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    LONG_MAX,
    NEW_SLOT,
    BatchResult,
    IndexFile,
    QueryTrace,
    SlotCountRule,
    build_index_file,
)
from rmqlab.jvm.hashcode import (
    index_hash_many,
    index_key,
    java_hash_concat_many,
    java_hash_many,
    to_index_hash_many,
    utf16_lengths_many,
)
from rmqlab.rules.dispatch import (
    TAG_INDEX_TYPE,
    goes_to_index,
    goes_to_index_many,
    index_keys,
    index_keys_many,
    index_query_key,
    transaction_type,
)
from rmqlab.tables.arrow import arrow_column, utf8_buffers
from rmqlab.tables.display import ms_with_clock

__all__ = [
    "DEFAULT_MAX_MSGS_NUM_BATCH",
    "DEFAULT_QUERY_MAX_NUM",
    "DispatchRequest",
    "QueryOffsetResult",
    "FileVisit",
    "DirectoryQueryTrace",
    "ExpandedKeys",
    "IndexService",
    "index_file_name",
    "index_file_name_ms",
    "is_index_file_name",
    "check_index_num",
    "next_free_index_file_name",
    "expand_messages",
    "expand_columns",
    "index_key_hashes",
    "tag_key_hashes",
    "bulk_build",
    "query_trace_dict",
]

log = logging.getLogger(__name__)

#: MessageStoreConfig.maxMsgsNumBatch: queryOffset caps maxNum at this.
DEFAULT_MAX_MSGS_NUM_BATCH = 64
#: MessageStoreConfig.defaultQueryMaxNum: the maxNum QueryMessageProcessor forces for a
#: unique-key (message id) query.
DEFAULT_QUERY_MAX_NUM = 32
_NAME_RE = re.compile(r"\d{17}")
_INT64_MIN = np.iinfo(np.int64).min


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def index_file_name(ms: int, tz: _dt.tzinfo | None = None) -> str:
    """The name the broker gives an index file created at `ms` (ms since the epoch):
    ``UtilAll.timeMillisToHumanString``, ``yyyyMMddHHmmssSSS`` in `tz` (None = the local
    time zone, as the broker's ``Calendar.getInstance()``).

    >>> index_file_name(1718000125510, _dt.timezone.utc)
    '20240610061525510'
    """
    secs, milli = divmod(int(ms), 1000)
    t = _dt.datetime.fromtimestamp(secs, tz) if tz is not None else _dt.datetime.fromtimestamp(secs)
    return f"{t.year:04d}{t.month:02d}{t.day:02d}{t.hour:02d}{t.minute:02d}{t.second:02d}{milli:03d}"


def index_file_name_ms(name: str, tz: _dt.tzinfo | None = None) -> int:
    """The instant (ms since the epoch) an index file name denotes when read as a wall-clock time
    in `tz` (None = the local time zone): the inverse of :func:`index_file_name`. A name says
    nothing of its zone; the broker wrote it in its own. Cost: one parse.

    >>> index_file_name_ms("20240610061525510", _dt.timezone.utc)
    1718000125510
    >>> index_file_name_ms(index_file_name(1718000125510, _dt.timezone(_dt.timedelta(hours=8))),
    ...                    _dt.timezone(_dt.timedelta(hours=8)))
    1718000125510

    Raises ValueError for a name that is not 17 digits of a calendar time.
    """
    if not is_index_file_name(name):
        raise ValueError(f"{name!r} is not a yyyyMMddHHmmssSSS index file name")
    t = _dt.datetime.strptime(name[:14], "%Y%m%d%H%M%S")
    t = t.replace(tzinfo=tz) if tz is not None else t.astimezone()
    return int(t.timestamp()) * 1000 + int(name[14:])


def is_index_file_name(name: str) -> bool:
    """True for a 17-digit ``yyyyMMddHHmmssSSS`` name; other files in the folder are ignored
    (for instance the temporary files :func:`build_index_file` renames into place)."""
    return _NAME_RE.fullmatch(name) is not None


# ------------------------------------------------------------------------------ messages


@dataclass(frozen=True)
class DispatchRequest:
    """What buildIndex needs of one CommitLog message (the fields of the broker's
    ``DispatchRequest`` that IndexService reads).

    `keys` is the raw ``KEYS`` property (space-separated business keys) or None; `uniq_key`
    the ``UNIQ_KEY`` property (the client-side message id) or None; `phy_offset` the message's
    CommitLog offset (bytes) and `store_timestamp` its store time (ms since the epoch); `tags`
    the ``TAGS`` property (indexed as ``topic#T#tags`` by a 5.4.0+ broker) or None.
    """

    topic: str
    phy_offset: int
    store_timestamp: int
    keys: str | None = None
    uniq_key: str | None = None
    sys_flag: int = 0
    tags: str | None = None

    @property
    def transaction_type(self) -> int:
        """MessageSysFlag.getTransactionValue (:func:`rmqlab.rules.dispatch.transaction_type`)."""
        return transaction_type(self.sys_flag)

    @property
    def is_rollback(self) -> bool:
        return not goes_to_index(self.sys_flag)

    def index_keys(self, tag_key: bool = False) -> list[str]:
        """The key parts buildIndex indexes, in its order: UNIQ_KEY first (whenever it is not
        None, even when empty), then every non-empty token of KEYS split on single spaces, then
        (`tag_key`: a 5.4.0+ broker) ``T#`` + TAGS when TAGS is non-empty
        (:func:`rmqlab.rules.dispatch.index_keys`). (Rollback and already-indexed checks are
        the service's, not the message's.)

        >>> DispatchRequest("T", 0, 0, keys=" a  b ", uniq_key="U").index_keys()
        ['U', 'a', 'b']
        >>> DispatchRequest("T", 0, 0, keys="a", tags="TagA").index_keys(tag_key=True)
        ['a', 'T#TagA']
        """
        return index_keys(self.keys, self.uniq_key, self.tags, tag_key=tag_key)


# ------------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class QueryOffsetResult:
    """IndexService.queryOffset's answer (QueryOffsetResult.java).

    `phy_offsets`: CommitLog offsets, newest file first and newest entry first within a file;
    hash-only matches, so other keys with the same hash may be included. The two
    `index_last_update_*` values are the newest file's end_timestamp / end_phy_offset (0 when
    there is no file), whether or not that file was searched.
    """

    phy_offsets: list[int]
    index_last_update_timestamp: int
    index_last_update_phyoffset: int

    def __len__(self) -> int:
        return len(self.phy_offsets)

    def as_dict(self) -> dict[str, Any]:
        return {"phy_offsets": list(self.phy_offsets),
                "index_last_update_timestamp": self.index_last_update_timestamp,
                "index_last_update_phyoffset": self.index_last_update_phyoffset}


#: Why queryOffset skipped a file or stopped after it.
VISIT_REASONS = {
    "searched": "the file's [begin_timestamp, end_timestamp] touches [begin, end]: its chain was walked",
    "not-time-matched": "isTimeMatched(begin, end) is false: the file was not searched",
    "not-visited": "the walk stopped at a newer file",
    "continue": "went on to the next older file",
    "older-than-begin": "the file's begin_timestamp < begin: older files are assumed older still, so the walk stopped",
    "max-num": "the result list reached max_num, so the walk stopped",
    "oldest-file": "this was the oldest file",
}


@dataclass
class FileVisit:
    """What queryOffset did with one file. `action` is "searched", "not-time-matched" or
    "not-visited"; `after` ("continue", "older-than-begin", "max-num", "oldest-file") is the
    decision taken after it (empty when not visited). See :data:`VISIT_REASONS`."""

    position: int            # place in the folder, 0 = oldest
    name: str
    begin_timestamp: int
    end_timestamp: int
    index_count: int
    action: str
    after: str = ""
    trace: QueryTrace | None = None
    offsets: list[int] = field(default_factory=list)   # what this file added

    @property
    def entries_read(self) -> int:
        return 0 if self.trace is None else len(self.trace.steps)

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("position", "name", "begin_timestamp", "end_timestamp",
                                           "index_count", "action", "after")}
        d["offsets"] = list(self.offsets)
        d["entries_read"] = self.entries_read
        d["walk"] = None if self.trace is None else query_trace_dict(self.trace)
        return d


def query_trace_dict(t: QueryTrace) -> dict[str, Any]:
    """A JSON-ready dict of one file's :class:`QueryTrace` (steps as a list of dicts)."""
    return {"path": t.path, "key": t.key, "key_hash": t.key_hash, "slot": t.slot,
            "slot_value": t.slot_value, "max_num": t.max_num, "begin": t.begin, "end": t.end,
            "results": list(t.results), "stop": t.stop, "stop_reason": t.stop_reason,
            "steps": t.to_frame().to_dict(orient="records")}


@dataclass
class DirectoryQueryTrace:
    """Everything one queryOffset did across the folder: per file (newest first) whether it was
    searched, skipped or never reached, the chain walk inside it, and why the walk ended.

    ``stop`` is the last visited file's ``after`` ("older-than-begin", "max-num",
    "oldest-file"), or "no-files".
    """

    key: str                 # topic#key
    requested_max_num: int
    max_num: int             # after the max_msgs_num_batch cap
    begin: int
    end: int
    files: list[FileVisit]
    result: QueryOffsetResult
    stop: str

    @property
    def stop_reason(self) -> str:
        return "the folder holds no index file" if self.stop == "no-files" else VISIT_REASONS[self.stop]

    def to_frame(self):
        """One row per file, newest first: times, action, decision, offsets found, entries read."""
        import pandas as pd

        rows = [{"position": v.position, "name": v.name, "begin_timestamp": v.begin_timestamp,
                 "end_timestamp": v.end_timestamp, "keys": max(v.index_count - 1, 0),
                 "action": v.action, "after": v.after, "found": len(v.offsets),
                 "entries_read": v.entries_read,
                 "walk_stop": "" if v.trace is None else v.trace.stop} for v in self.files]
        cols = ["position", "name", "begin_timestamp", "end_timestamp", "keys", "action", "after",
                "found", "entries_read", "walk_stop"]
        return pd.DataFrame(rows, columns=cols)

    def steps_frame(self):
        """Every entry read, in reading order, with the file it came from."""
        import pandas as pd

        frames = []
        for v in self.files:
            if v.trace is not None and v.trace.steps:
                f = v.trace.to_frame()
                f.insert(0, "file", v.name)
                frames.append(f)
        if not frames:
            return pd.DataFrame(columns=["file", "entry", "key_hash", "phy_offset", "time_diff",
                                         "time_read", "prev_index", "hash_match", "time_match",
                                         "returned"])
        return pd.concat(frames, ignore_index=True)

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "requested_max_num": self.requested_max_num,
                "max_num": self.max_num, "begin": self.begin, "end": self.end,
                "stop": self.stop, "stop_reason": self.stop_reason,
                "result": self.result.as_dict(), "files": [v.as_dict() for v in self.files]}

    def __str__(self) -> str:
        lines = [f"query {self.key!r}: max_num {self.max_num} (asked {self.requested_max_num}), "
                 f"[{ms_with_clock(self.begin)}, {ms_with_clock(self.end)}]"]
        for v in self.files:
            what = {"searched": f"searched, {len(v.offsets)} found, {v.entries_read} entries read"
                                f" (walk stopped: {v.trace.stop})" if v.trace else "searched",
                    "not-time-matched": "skipped: time range does not touch [begin, end]",
                    "not-visited": "not visited"}[v.action]
            then = f"; then {v.after}" if v.after else ""
            lines.append(f"  {v.name}  [{ms_with_clock(v.begin_timestamp)}, {ms_with_clock(v.end_timestamp)}]  "
                         f"{what}{then}")
        lines.append(f"stopped: {self.stop} ({self.stop_reason}); {len(self.result)} offsets")
        return "\n".join(lines)


# ------------------------------------------------------------------------------- service


class IndexService:
    """The broker's ``store/index`` folder: every index file in it, oldest first.

    Opens each 17-digit-named file with :meth:`IndexFile.open` (a memory map; nothing is read
    until queried), sorted by name, which is creation order. With ``read_only=False`` the
    newest file is opened writable and messages can be indexed like the broker does
    (:meth:`build_index`); the folder is created if missing.

    Parameters
    ----------
    hash_slot_num, index_num:
        The broker's ``maxHashSlotNum`` / ``maxIndexNum``, passed to :meth:`IndexFile.open`
        (each file's size must match). None infers them from each file's size (see
        :meth:`Geometry.infer`); writing then takes the newest file's geometry.
    max_msgs_num_batch:
        ``maxMsgsNumBatch``: :meth:`query_offset` caps max_num at this (64 by default).
    slot_count_rule:
        "new-slot" (RocketMQ >= 4.7.1) or "every-put" (<= 4.7.0) for hash_slot_count.
    clock, tz:
        Where new file names come from: `clock()` returns ms since the epoch (default: the
        system clock) and `tz` the zone of the name (None = local, as the broker). Pass both
        for reproducible names.
    name_by_store_time:
        Name each new file by the store timestamp of the message whose indexing creates it
        instead of `clock()`: what a broker dispatching in real time would have named it, and
        reproducible for stores rebuilt offline.
    tag_keys:
        Index each message's TAGS too, as ``topic#T#tags`` after its other keys: what a 5.4.0+
        broker does (:attr:`rmqlab.rules.versions.LayoutFacts.index_tag_key`). Default off
        (5.3.x and earlier).
    index_msg_timestamp:
        Read-only replay of a restart after an abnormal shutdown: files whose end_timestamp is
        greater than the checkpoint's indexMsgTimestamp are left out (the broker deletes
        them); they are listed in :attr:`dropped`, never deleted here.

    Not thread-safe. Cost: opening is O(files); :meth:`query_offset` O(entries walked).
    """

    def __init__(self, directory: str | os.PathLike, hash_slot_num: int | None = DEFAULT_HASH_SLOT_NUM,
                 index_num: int | None = DEFAULT_INDEX_NUM,
                 max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
                 slot_count_rule: SlotCountRule = NEW_SLOT, read_only: bool = True, *,
                 clock: Callable[[], int] | None = None, tz: _dt.tzinfo | None = None,
                 strict: bool = True, index_msg_timestamp: int | None = None,
                 name_by_store_time: bool = False, tag_keys: bool = False):
        self.directory = Path(directory)
        #: buildIndex also puts topic#T#tags (a 5.4.0+ broker)
        self.tag_keys = bool(tag_keys)
        #: name new files by the store time of the message being indexed when they are created
        #: (the broker reads its wall clock then, which a store written offline does not have)
        self.name_by_store_time = name_by_store_time
        self._store_time_hint: int | None = None
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.max_msgs_num_batch = int(max_msgs_num_batch)
        self.slot_count_rule = slot_count_rule
        self.read_only = read_only
        self.clock = clock or _now_ms
        self.tz = tz
        #: oldest first, as the broker's indexFileList
        self.files: list[IndexFile] = []
        #: files left out by the `index_msg_timestamp` rule
        self.dropped: list[Path] = []
        #: other files in the folder (not 17-digit names), ignored like the broker's
        #: NumberFormatException path
        self.ignored: list[Path] = []
        #: the checkpoint's indexMsgTimestamp as this service would advance it: the end
        #: timestamp of the last file found full when the next one was created.
        self.index_msg_timestamp = index_msg_timestamp
        if index_msg_timestamp is not None and not read_only:
            raise ValueError("index_msg_timestamp (abnormal-shutdown replay) is read-only: the "
                             "broker would delete the dropped files")
        if not read_only:
            self.directory.mkdir(parents=True, exist_ok=True)
        elif self.directory.exists() and not self.directory.is_dir():
            raise NotADirectoryError(f"{self.directory}: not a directory")
        # IndexService.load: a missing folder lists no file (listFiles() is null), and every key
        # query then finds nothing
        names = sorted(p.name for p in self.directory.iterdir() if p.is_file()) if self.directory.is_dir() else []
        index_names = [n for n in names if is_index_file_name(n)]
        self.ignored = [self.directory / n for n in names if not is_index_file_name(n)]
        try:
            for i, name in enumerate(index_names):
                last = i == len(index_names) - 1
                f = IndexFile.open(self.directory / name, hash_slot_num, index_num,
                                   writable=(not read_only and last), slot_count_rule=slot_count_rule,
                                   strict=strict)
                if index_msg_timestamp is not None and f.header.end_timestamp > index_msg_timestamp:
                    self.dropped.append(f.path)
                    f.close()
                    continue
                log.info("load index file OK, %s", f.path)
                self.files.append(f)
        except BaseException:
            self.close()
            raise

    # -- container ----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self) -> Iterator[IndexFile]:
        return iter(self.files)

    def __enter__(self) -> IndexService:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"IndexService({str(self.directory)!r}, files={len(self.files)}, "
                f"read_only={self.read_only})")

    def close(self) -> None:
        """Close every file (writable ones are flushed first, as at broker shutdown)."""
        for f in self.files:
            f.close()

    def flush(self) -> None:
        """Flush the writable file(s) to disk."""
        for f in self.files:
            if f.writable:
                f.flush()

    @property
    def last_file(self) -> IndexFile | None:
        return self.files[-1] if self.files else None

    @property
    def total_size(self) -> int:
        """IndexService.getTotalSize: first file's size x number of files (bytes)."""
        return self.files[0].geometry.file_size * len(self.files) if self.files else 0

    def to_frame(self):
        """One row per file, oldest first: name and the header fields.

        >>> import tempfile
        >>> IndexService(tempfile.mkdtemp()).to_frame().shape
        (0, 11)
        """
        import pandas as pd

        cols = ["name", "begin_timestamp", "end_timestamp", "begin_phy_offset", "end_phy_offset",
                "hash_slot_count", "index_count", "keys", "is_write_full", "writable", "file_size"]
        rows = []
        for f in self.files:
            h = f.header
            rows.append([f.path.name, h.begin_timestamp, h.end_timestamp, h.begin_phy_offset,
                         h.end_phy_offset, h.hash_slot_count, h.index_count, h.keys,
                         f.is_write_full, f.writable, f.geometry.file_size])
        return pd.DataFrame(rows, columns=cols)

    # -- writing ------------------------------------------------------------------------

    def _new_name(self) -> str:
        taken = {f.path.name for f in self.files}
        ms = self._store_time_hint if self.name_by_store_time and self._store_time_hint is not None else self.clock()
        return next_free_index_file_name(ms, self.tz, lambda n: n in taken or (self.directory / n).exists(),
                                         after=self.files[-1].path.name if self.files else None)

    def get_and_create_last_file(self) -> IndexFile:
        """getAndCreateLastIndexFile: the newest file unless it is full; otherwise (or when the
        folder is empty) a new file named by the clock and seeded with the full file's
        end_phy_offset / end_timestamp. The full file is flushed, as the broker's flush thread
        does, and :attr:`index_msg_timestamp` advances to its end timestamp.
        """
        if self.read_only:
            raise ReadOnlyError("IndexService opened read-only; pass read_only=False to index messages",
                                path=self.directory)
        prev = self.last_file
        if prev is not None and not prev.is_write_full:
            return prev
        end_phy, end_ts = (prev.header.end_phy_offset, prev.header.end_timestamp) if prev else (0, 0)
        hsn, inum = self._geometry_for_new_file()
        path = self.directory / self._new_name()
        f = IndexFile.create(path, hsn, inum, end_phy, end_ts, slot_count_rule=self.slot_count_rule)
        self.files.append(f)
        if prev is not None:
            # the broker warns here; one line per roll-over would be noise in a notebook
            log.info("index file %s is full, created %s", prev.path.name, path.name)
            if prev.writable:
                prev.flush()
            self.index_msg_timestamp = prev.header.end_timestamp
        return f

    def _geometry_for_new_file(self) -> tuple[int, int]:
        if self.hash_slot_num is not None and self.index_num is not None:
            hsn, inum = self.hash_slot_num, self.index_num
        elif self.files:
            g = self.files[-1].geometry
            hsn, inum = g.hash_slot_num, g.index_num
        else:
            raise ValueError("hash_slot_num and index_num are needed to create the first index file")
        check_index_num(inum)
        return hsn, inum

    def build_index(self, msg: DispatchRequest,
                    observe: Callable[[str, dict[str, Any]], None] | None = None) -> int:
        """IndexService.buildIndex: index one message's keys; returns how many keys were put.

        In the broker's order: get (or create) the writable file -- so a file is created even
        for a message that is then skipped; skip the message if its phy_offset < that file's
        end_phy_offset (already indexed; an equal offset is indexed again); skip a rolled-back
        transaction (prepared and committed ones are indexed: :func:`rmqlab.rules.dispatch.goes_to_index`);
        put ``topic#k`` for each part of :func:`rmqlab.rules.dispatch.index_keys` (``UNIQ_KEY`` if not
        None, then each non-empty token of KEYS split on " "). A put refused because the file is full creates the next
        file and is retried there. Cost: O(keys), one put_key each.

        `observe(event, details)`, when given, is told each decision as it is taken, for a
        step-by-step view (:mod:`rmqlab.analysis.buildsteps`): "file" (the writable file, and whether it
        was just created), "skip" (why: "already-indexed" or "rollback"), "keys" (the index
        keys), "put" before each put_key and "put-done" after it (with its answer).
        """
        tell = observe or (lambda event, details: None)
        self._store_time_hint = msg.store_timestamp
        before = len(self.files)
        f = self.get_and_create_last_file()
        tell("file", {"file": f, "created": len(self.files) > before})
        if msg.phy_offset < f.header.end_phy_offset:
            tell("skip", {"why": "already-indexed", "file": f})
            return 0
        if msg.is_rollback:
            tell("skip", {"why": "rollback", "file": f})
            return 0
        keys = [index_key(msg.topic, k) for k in msg.index_keys(self.tag_keys)]
        tell("keys", {"keys": keys, "uniq_key": msg.uniq_key, "keys_property": msg.keys})
        for key in keys:
            while True:
                tell("put", {"key": key, "file": f})
                ok = f.put_key(key, msg.phy_offset, msg.store_timestamp)
                tell("put-done", {"key": key, "file": f, "ok": ok})
                if ok:
                    break
                before = len(self.files)
                f = self.get_and_create_last_file()
                tell("file", {"file": f, "created": len(self.files) > before})
        return len(keys)

    def put_message(self, topic: str, phy_offset: int, store_timestamp: int, keys: str | None = None,
                    uniq_key: str | None = None, sys_flag: int = 0, tags: str | None = None) -> int:
        """:meth:`build_index` for a message given by its fields; returns the keys put."""
        return self.build_index(DispatchRequest(topic, phy_offset, store_timestamp, keys, uniq_key, sys_flag, tags))

    def build_many(self, messages: Iterable[DispatchRequest]) -> int:
        """:meth:`build_index` for each message in order; returns the total keys put.
        For millions of messages into a fresh folder, :func:`bulk_build` is far faster."""
        return sum(self.build_index(m) for m in messages)

    def build_columns(self, columns: Any) -> int:
        """:meth:`build_index` for many messages given as columns, in C: the same files, bytes
        and names as calling it per message in order. Returns the keys put.

        `columns` is what :func:`expand_columns` takes (topic, phy_offset, store_timestamp,
        keys, uniq_key, sys_flag). Appends to the newest file and rolls over exactly where the
        broker would: within a message when a put is refused, and for a message that arrives
        after a file filled (a new, possibly empty, file). Cost: O(keys) in C, no Python loop
        per message or key: with object text columns (what commitlog.read_columns gives) or
        Arrow ones (``read_columns(arrow=True)``: the topic as dictionary codes) the keys are
        hashed in C from the str objects or the UTF-8 buffers (:func:`index_key_hashes`, no
        string made a key); other storage goes through Arrow (:func:`expand_columns`), which
        makes each ``topic#key`` string first.
        """
        ts_col = columns["store_timestamp"]
        store_ts = np.asarray(ts_col, dtype=np.int64)
        if len(store_ts) == 0:
            return 0
        if self.read_only:
            raise ReadOnlyError("IndexService opened read-only; pass read_only=False to index messages",
                                path=self.directory)
        # buildIndex reads end_phy_offset of the file it is about to write; a new file is seeded
        # with the full one's end values, so the last file's value is the one that counts.
        last = self.last_file
        end_phy_offset = last.header.end_phy_offset if last else 0
        hashed = index_key_hashes(columns, end_phy_offset=end_phy_offset, tag_key=self.tag_keys)
        if hashed is not None:
            msg, hashes, _ = hashed
            keys = None
            phy, ts = np.asarray(columns["phy_offset"], dtype=np.int64)[msg], store_ts[msg]
        else:
            exp = expand_columns(columns, end_phy_offset=end_phy_offset, tag_key=self.tag_keys)
            msg, hashes, keys, phy, ts = exp.message_index, None, exp.keys, exp.phy_offsets, exp.store_timestamps
        self._store_time_hint = int(store_ts[0])
        f = self.get_and_create_last_file()
        done, total = 0, len(msg)
        while done < total:
            put = f.put_keys(None if keys is None else _slice(keys, done, total), phy[done:], ts[done:],
                             hashes=None if hashes is None else hashes[done:])
            done += put
            if done < total:
                # Filled inside a message: that message's next put creates the file. Filled at a
                # message boundary: the next message, keyed or not, creates it.
                creator = int(msg[done]) if msg[done] == msg[done - 1] else int(msg[done - 1]) + 1
                self._store_time_hint = int(store_ts[creator])
                f = self.get_and_create_last_file()
        # The broker calls getAndCreateLastIndexFile for every message: one that comes after the
        # file filled opens a new file even if it puts nothing.
        after = int(msg[-1]) + 1 if total else 0
        if f.is_write_full and after < len(store_ts):
            self._store_time_hint = int(store_ts[after])
            self.get_and_create_last_file()
        return total

    # -- queries ------------------------------------------------------------------------

    def query_offset(self, topic: str | None, key: str, max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH,
                     begin: int = 0, end: int = LONG_MAX, index_type: str | None = None) -> QueryOffsetResult:
        """IndexService.queryOffset: CommitLog offsets of ``topic#key`` stored in [begin, end] ms
        (`topic` None: `key` as stored). `index_type` "T" (5.4.0+) queries by tag:
        ``topic#T#key`` (:func:`rmqlab.rules.dispatch.index_query_key`).

        max_num is capped at :attr:`max_msgs_num_batch`; files are walked newest -> oldest;
        only a file whose time range touches [begin, end] is searched, all files sharing one
        result list, so max_num bounds the total; after each file (searched or not) the walk
        stops if that file's begin_timestamp < begin, then if the list holds max_num offsets.
        Cost: O(entries walked) per searched file.
        """
        return self._query(topic, index_query_key(key, index_type), max_num, begin, end, None)

    def query_unique_key(self, topic: str, uniq_key: str, begin: int = 0,
                         end: int = LONG_MAX) -> QueryOffsetResult:
        """A query by message id (UNIQ_KEY): the broker forces max_num to defaultQueryMaxNum
        (32) for these (QueryMessageProcessor). The client passes begin = the time encoded in
        the id minus 1000 ms and end = Long.MAX_VALUE."""
        return self._query(topic, uniq_key, DEFAULT_QUERY_MAX_NUM, begin, end, None)

    def trace_query(self, topic: str | None, key: str, max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH,
                    begin: int = 0, end: int = LONG_MAX, index_type: str | None = None) -> DirectoryQueryTrace:
        """:meth:`query_offset`, recording every file visited or skipped and each walk's steps.

        >>> import tempfile
        >>> IndexService(tempfile.mkdtemp()).trace_query("T", "k").stop
        'no-files'
        """
        key = index_query_key(key, index_type)
        full_key = key if topic is None else index_key(topic, key)
        trace = DirectoryQueryTrace(full_key, max_num, 0, begin, end, [], QueryOffsetResult([], 0, 0), "no-files")
        trace.result = self._query(topic, key, max_num, begin, end, trace)
        return trace

    def query_offsets_many(self, topics: Any, keys: Any, max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH,
                           begin: int = 0, end: int = LONG_MAX, index_type: str | None = None) -> BatchResult:
        """:meth:`query_offset` for many keys at once: key i's offsets, newest first, are
        ``result[i]``, each list exactly what the broker returns for ``topics[i]#keys[i]``
        (`topics` one name for all, or one per key; None: the keys as stored).

        Each file is walked once for all the keys still looking (in C), in the broker's file
        order and with its stop rules, each key with the room its list has left; a key drops
        out when its list holds max_num offsets. ``result.entries_read[i]`` counts the entries
        the broker reads for key i. Cost: O(total entries walked) plus one hash a key, in C.

        >>> import tempfile
        >>> with IndexService(tempfile.mkdtemp(), 4, 32, read_only=False) as s:
        ...     for i, key in enumerate(["a", "b", "a"]):
        ...         _ = s.put_message("T", 100 * (i + 1), 1718000000000 + i, key)
        ...     r = s.query_offsets_many("T", ["a", "b", "zz"])
        >>> [r[i] for i in range(3)]
        [[300, 100], [200], []]
        """
        max_num = self._checked_max_num(max_num)
        n = len(keys)
        if index_type is not None:
            keys = [index_query_key(k, index_type) for k in keys]
        if topics is None or isinstance(topics, str):
            full_keys = keys if topics is None else [index_key(topics, k) for k in keys]
        else:
            if len(topics) != n:
                raise ValueError(f"{len(topics)} topics for {n} keys")
            full_keys = [index_key(t, k) for t, k in zip(topics, keys)]
        hashes = np.ascontiguousarray(index_hash_many(full_keys), dtype=np.int32)
        found = np.zeros(n, np.int64)
        read = np.zeros(n, np.int32)
        owner: list[np.ndarray] = []
        offsets: list[np.ndarray] = []
        for _, f, matched, after_file in self._visits(begin, end):
            looking = np.flatnonzero(found < max_num)
            if matched and len(looking):
                got = f.select_phy_offsets_many(None, max_num, begin, end, hashes=hashes[looking],
                                                rooms=max_num - found[looking])
                owner.append(np.repeat(looking, got.counts()))
                offsets.append(got.phy_offsets)
                found[looking] += got.counts()
                read[looking] += got.entries_read
            if after_file == "older-than-begin" or not (found < max_num).any():
                break
        who = np.concatenate(owner) if owner else np.zeros(0, np.int64)
        order = np.argsort(who, kind="stable")   # per key: files newest first, each in walk order
        flat = np.concatenate(offsets)[order] if offsets else np.zeros(0, np.int64)
        return BatchResult(np.concatenate(([0], np.cumsum(found))).astype(np.int64), flat.astype(np.int64), read)

    def _checked_max_num(self, max_num: int) -> int:
        requested = max_num
        max_num = min(int(max_num), self.max_msgs_num_batch)
        if max_num < 0:
            # Java builds `new ArrayList<>(maxNum)` first, which throws for a negative size.
            raise ValueError(f"max_num must be >= 0 (after the cap), got {max_num} (asked {requested})")
        return max_num

    def _visits(self, begin: int, end: int) -> Iterator[tuple[int, IndexFile, bool, str]]:
        """The broker's walk over files, newest first: (position, file, searched?, what the walk
        does after it unless max_num was reached: "older-than-begin" stops it, else
        "continue" or "oldest-file")."""
        files = self.files
        for i in range(len(files) - 1, -1, -1):
            f = files[i]
            after = ("older-than-begin" if f.header_value("begin_timestamp") < begin
                     else "continue" if i > 0 else "oldest-file")
            yield i, f, f.is_time_matched(begin, end), after

    def _query(self, topic: str | None, key: str, max_num: int, begin: int, end: int,
               trace: DirectoryQueryTrace | None) -> QueryOffsetResult:
        max_num = self._checked_max_num(max_num)
        full_key = key if topic is None else index_key(topic, key)
        offsets: list[int] = []
        last_ts = last_phy = 0
        files = self.files
        if trace is not None:
            trace.max_num = max_num
            trace.files = [FileVisit(i, f.path.name, f.header.begin_timestamp, f.header.end_timestamp,
                                     f.header.index_count, "not-visited")
                           for i, f in reversed(list(enumerate(files)))]
        for visit_no, (i, f, matched, after_file) in enumerate(self._visits(begin, end)):
            if i == len(files) - 1:
                last_ts, last_phy = f.header_value("end_timestamp"), f.header_value("end_phy_offset")
            if matched:
                # The broker hands the shared list and max_num to each file; asking a file for
                # the remaining room is the same walk (it checks size >= maxNum before each read).
                room = max_num - len(offsets)
                if trace is None:
                    found = f.select_phy_offsets(full_key, room, begin, end)
                else:
                    t = f.trace_query(full_key, room, begin, end)
                    found = t.results
                offsets.extend(found)
            after = after_file if after_file == "older-than-begin" or len(offsets) < max_num else "max-num"
            if trace is not None:
                v = trace.files[visit_no]
                v.action = "searched" if matched else "not-time-matched"
                v.after = after
                if matched:
                    v.trace, v.offsets = t, list(found)
                trace.stop = after
            if after not in ("continue",):
                break
        return QueryOffsetResult(offsets, last_ts, last_phy)


def check_index_num(index_num: int) -> None:
    """Refuse an `index_num` (entries a file holds, counting the unused entry 0) that leaves
    no room for a key.

    >>> check_index_num(2)
    >>> check_index_num(1)
    Traceback (most recent call last):
    ...
    ValueError: index_num=1 holds no key (a file holds index_num - 1); use >= 2

    Raises ValueError for `index_num` < 2.
    """
    # entry 0 is never written, so index_num 1 holds nothing: the broker would create files
    # forever retrying the put.
    if index_num < 2:
        raise ValueError(f"index_num={index_num} holds no key (a file holds index_num - 1); use >= 2")


def next_free_index_file_name(ms: int, tz: _dt.tzinfo | None, taken: Callable[[str], bool],
                              after: str | None = None) -> str:
    """The name for an index file created at `ms` (ms since the epoch, named in `tz` as
    :func:`index_file_name`), bumped by 1 ms while `taken(name)` is true. A name that sorts
    before `after` (the newest existing file's) is logged as a warning: the clock went
    backwards, and the broker would list the files in the wrong order after a restart.

    >>> next_free_index_file_name(1718000125510, _dt.timezone.utc, {"20240610061525510"}.__contains__)
    '20240610061525511'
    """
    name = index_file_name(ms, tz)
    while taken(name):
        ms += 1
        name = index_file_name(ms, tz)
    if after is not None and name < after:
        # The broker would do the same, and after a restart would sort the files wrongly.
        log.warning("new index file %s sorts before %s: the clock went backwards", name, after)
    return name


# ---------------------------------------------------------------------------- bulk path


@dataclass
class ExpandedKeys:
    """The rows buildIndex would put, in its order: full key strings (``topic#key``), CommitLog
    offsets and store timestamps (ms), one row per put.

    `message_index` (int64 per row) and `n_messages` say where the rows came from; they let
    :func:`bulk_build` reproduce the broker creating a new empty file when a message arrives
    after the last file filled exactly. Build one directly from arrays that are already
    expanded: ``ExpandedKeys(keys, phy_offsets, store_timestamps)`` (each row its own message).
    """

    keys: Any                      # list[str], NumPy str array or pyarrow string array
    phy_offsets: np.ndarray
    store_timestamps: np.ndarray
    # None: each row its own message; __post_init__ fills both, so readers never see None
    message_index: np.ndarray = None  # type: ignore[assignment]
    n_messages: int = None  # type: ignore[assignment]

    def __post_init__(self):
        self.phy_offsets = np.ascontiguousarray(self.phy_offsets, dtype=np.int64)
        self.store_timestamps = np.ascontiguousarray(self.store_timestamps, dtype=np.int64)
        n = len(self.phy_offsets)
        if len(self.keys) != n or len(self.store_timestamps) != n:
            raise ValueError(f"{len(self.keys)} keys, {n} phy_offsets, "
                             f"{len(self.store_timestamps)} store_timestamps: lengths differ")
        if self.message_index is None:
            self.message_index = np.arange(n, dtype=np.int64)
        if self.n_messages is None:
            self.n_messages = n

    def __len__(self) -> int:
        return len(self.phy_offsets)

    def key_list(self) -> list[str]:
        k = self.keys
        return k.to_pylist() if hasattr(k, "to_pylist") else [str(x) for x in k]

    def to_frame(self):
        """key, phy_offset, store_timestamp, message_index as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame({"key": self.key_list(), "phy_offset": self.phy_offsets,
                             "store_timestamp": self.store_timestamps,
                             "message_index": self.message_index})


def expand_messages(messages: Iterable[DispatchRequest], *, end_phy_offset: int = 0,
                    tag_key: bool = False) -> ExpandedKeys:
    """The puts buildIndex makes for `messages` into a folder whose newest file ends at
    `end_phy_offset` (0 for a new folder): rollbacks and already-indexed offsets skipped, UNIQ_KEY
    first, then KEYS tokens (then, `tag_key`: 5.4.0+, ``T#`` + TAGS). A plain loop, one step per
    message, written as the Java reads; :func:`expand_columns` is the vectorized form.

    >>> e = expand_messages([DispatchRequest("T", 10, 1000, keys="a b"),
    ...                      DispatchRequest("T", 5, 1001, keys="c")])   # 5 < 10: skipped
    >>> e.key_list(), e.phy_offsets.tolist()
    (['T#a', 'T#b'], [10, 10])
    """
    keys: list[str] = []
    phy: list[int] = []
    ts: list[int] = []
    midx: list[int] = []
    end = end_phy_offset
    n = -1
    for n, m in enumerate(messages):
        if m.phy_offset < end or m.is_rollback:
            continue
        for k in m.index_keys(tag_key):
            keys.append(index_key(m.topic, k))
            phy.append(m.phy_offset)
            ts.append(m.store_timestamp)
            midx.append(n)
            end = m.phy_offset  # each put sets the file's end_phy_offset
    return ExpandedKeys(keys, np.array(phy, np.int64), np.array(ts, np.int64),
                        np.array(midx, np.int64), n + 1)


def _string_column(col, name: str, n: int, *, nullable: bool):
    import pyarrow as pa

    if col is None:
        if not nullable:
            raise ValueError(f"column {name!r} is required")
        return pa.nulls(n, pa.large_string())
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if isinstance(col, pa.Array):
        arr = col.cast(pa.large_string())
    else:
        # from_pandas: None and NaN (pandas' missing values) both become nulls
        arr = pa.array(np.asarray(col, dtype=object), type=pa.large_string(), from_pandas=True)
    if len(arr) != n:
        raise ValueError(f"column {name!r} has {len(arr)} rows, expected {n}")
    if not nullable and arr.null_count:
        raise ValueError(f"column {name!r} has missing values")
    return arr


def _column(columns: Any, name: str) -> Any:
    """Column `name` of a pandas DataFrame or a mapping of columns; None when it has none."""
    if hasattr(columns, "columns"):          # pandas DataFrame
        return columns[name] if name in columns.columns else None
    return columns.get(name)


def expand_columns(columns: Any, *, end_phy_offset: int = 0, tag_key: bool = False) -> ExpandedKeys:
    """:func:`expand_messages` over columns, vectorized with Arrow and NumPy (no Python loop per
    message): `columns` is a pandas DataFrame or a mapping with ``topic``, ``phy_offset``,
    ``store_timestamp`` and optionally ``keys``, ``uniq_key`` (missing = None/NaN/null) and
    ``sys_flag`` (and ``tags``, indexed as ``topic#T#tags`` when `tag_key`: a 5.4.0+ broker).

    The already-indexed rule is sequential in the broker (each put moves end_phy_offset), but
    kept offsets never decrease, so "offset >= the running maximum offset of earlier
    non-rollback messages with at least one key" is the same test, done with a cumulative max.
    Cost: O(messages + total key length).

    >>> e = expand_columns({"topic": ["T", "T"], "phy_offset": [10, 20],
    ...                     "store_timestamp": [1000, 2000], "keys": ["a  b", None],
    ...                     "uniq_key": [None, "U"]})
    >>> e.key_list(), e.message_index.tolist()
    (['T#a', 'T#b', 'T#U'], [0, 0, 1])

    Returns the full keys as a pyarrow LargeStringArray.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    phy = np.ascontiguousarray(np.asarray(_column(columns, "phy_offset")), dtype=np.int64)
    n = len(phy)
    ts = np.ascontiguousarray(np.asarray(_column(columns, "store_timestamp")), dtype=np.int64)
    if len(ts) != n:
        raise ValueError(f"store_timestamp has {len(ts)} rows, expected {n}")
    sf = _column(columns, "sys_flag")
    sys_flag = np.zeros(n, np.int64) if sf is None else np.asarray(sf, dtype=np.int64)
    topic = _string_column(_column(columns, "topic"), "topic", n, nullable=False)
    keys = _string_column(_column(columns, "keys"), "keys", n, nullable=True)
    uniq = _string_column(_column(columns, "uniq_key"), "uniq_key", n, nullable=True)

    tags = _string_column(_column(columns, "tags"), "tags", n, nullable=True) if tag_key else None
    part_msg, parts = index_keys_many(keys, uniq, tags, tag_key=tag_key)
    keep = _kept_messages(phy, sys_flag, np.bincount(part_msg, minlength=n), end_phy_offset)

    sel = keep[part_msg] if len(part_msg) else np.zeros(0, bool)
    msg = part_msg[sel]
    parts = parts.filter(pa.array(sel))
    sep = pa.scalar("#", pa.large_string())
    full = pc.binary_join_element_wise(topic.take(pa.array(msg, pa.int64())), parts, sep)
    return ExpandedKeys(full, phy[msg], ts[msg], msg, n)


def _kept_messages(phy: np.ndarray, sys_flag: np.ndarray, nkeys: np.ndarray, end_phy_offset: int) -> np.ndarray:
    """The messages buildIndex puts keys of: not rolled back, and at or after the end_phy_offset
    each one sees, which is the largest offset of the earlier non-rollback messages with keys
    (kept offsets never decrease, so a cumulative max replaces the sequential rule)."""
    n = len(phy)
    rollback = ~goes_to_index_many(sys_flag)
    eligible = ~rollback & (nkeys > 0)
    running = np.maximum.accumulate(np.where(eligible, phy, _INT64_MIN)) if n else phy
    end_before = np.empty(n, np.int64)
    if n:
        end_before[0] = end_phy_offset
        np.maximum(running[:-1], end_phy_offset, out=end_before[1:])
    return ~rollback & (phy >= end_before)


def _object_column(col, n: int) -> np.ndarray | None:
    """A text column as a NumPy object array (no copy for pandas object columns and object
    arrays), an all-None one for a missing column, or None for any other storage (Arrow, pandas
    string dtypes), which :func:`expand_columns` handles."""
    if col is None:
        return np.full(n, None, dtype=object)
    if hasattr(col, "dtype") and col.dtype != object:
        return None
    if isinstance(col, (list, tuple)) or hasattr(col, "dtype"):
        arr = np.asarray(col, dtype=object)
        return arr if arr.ndim == 1 and len(arr) == n else None
    return None


def index_key_hashes(columns: Any, *, end_phy_offset: int = 0,
                     tag_key: bool = False) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The puts of :func:`expand_columns` as (message_index int64, index hashes int32,
    n_messages), hashed in C without building the full key strings, from the columns' str
    objects or from Arrow UTF-8 buffers (topic, keys and uniq_key all Arrow text, the topic
    hashed once a distinct value); None for other storage, a None or NaN where a str is
    needed, or text that is not UTF-8 in Arrow (then use :func:`expand_columns` and
    :func:`rmqlab.jvm.hashcode.index_hash_many`); None too when `tag_key` (5.4.0+) and some
    message has TAGS, which the C hashers do not read. Units: message rows
    and IndexFile key hashes (abs of hashCode(topic#key), MIN_VALUE as 0). Cost: O(total key
    length) in C, about 30 ns a message.

    >>> rows, hashes, n = index_key_hashes({"topic": ["T", "T"], "phy_offset": [10, 20],
    ...     "store_timestamp": [1, 2], "keys": ["a  b", None], "uniq_key": [None, "U"]})
    >>> rows.tolist(), hashes.tolist() == index_hash_many(["T#a", "T#b", "T#U"]).tolist(), n
    ([0, 0, 1], True, 2)
    """
    import rmqlab._dispatchcore as _dispatchcore

    phy = np.ascontiguousarray(np.asarray(_column(columns, "phy_offset")), dtype=np.int64)
    n = len(phy)
    topic_col = _column(columns, "topic")
    if topic_col is None:
        return None
    if tag_key and _column(columns, "tags") is not None:
        from rmqlab.rules.dispatch import tag_keys_many

        if len(tag_keys_many(_column(columns, "tags"))[0]):
            return None
    sf = _column(columns, "sys_flag")
    sys_flag = np.zeros(n, np.int64) if sf is None else np.asarray(sf, dtype=np.int64)
    if len(sys_flag) != n:
        return None
    arrow = _arrow_key_columns(topic_col, _column(columns, "keys"), _column(columns, "uniq_key"), n)
    if arrow is not None:
        codes, prefixes, keys_buf, uniq_buf = arrow
        nkeys = np.empty(n, np.int32)
        _dispatchcore.count_keys_utf8(*keys_buf, *uniq_buf, nkeys)
        keep = _kept_messages(phy, sys_flag, nkeys, end_phy_offset)
        total = int(nkeys[keep].sum(dtype=np.int64))
        message_index = np.empty(total, np.int64)
        hashes = np.empty(total, np.int32)
        _dispatchcore.key_hashes_utf8(codes, prefixes, *keys_buf, *uniq_buf, keep.view(np.uint8), message_index,
                                      hashes)
        return message_index, hashes, n
    text = [_object_column(c, n) for c in (topic_col, _column(columns, "keys"), _column(columns, "uniq_key"))]
    if any(t is None for t in text):
        return None
    topic, keys, uniq = (np.ascontiguousarray(t) for t in text)
    nkeys = np.empty(n, np.int32)
    try:
        _dispatchcore.count_keys(topic, keys, uniq, nkeys)
    except TypeError:   # a NaN or another non-str: the Arrow path reads pandas' missing values
        return None
    keep = _kept_messages(phy, sys_flag, nkeys, end_phy_offset)
    total = int(nkeys[keep].sum(dtype=np.int64))
    message_index = np.empty(total, np.int64)
    hashes = np.empty(total, np.int32)
    _dispatchcore.key_hashes(topic, keys, uniq, keep.view(np.uint8), message_index, hashes)
    return message_index, hashes, n


def tag_key_hashes(topic: Any, tags: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The TAGS key a 5.4.0+ broker puts of every message that has one (``topic#T#tags``,
    :func:`rmqlab.rules.dispatch.tag_index_key`: TAGS neither null nor empty) as (rows ascending
    int64, index hashes int32), hashed without building the keys: ``hashCode(topic + "#T#")``
    once a distinct topic, carried over each TAGS string's own hash
    (:func:`~rmqlab.jvm.hashcode.java_hash_concat_many`). The rows' rule for which keys are put
    (rolled back, already indexed) is the caller's. `topic` and `tags` are Arrow text of equal
    length (string, large_string or dictionary), the topic without nulls; None for other
    storage (then use :func:`expand_columns` with `tag_key`). Cost: O(messages + TAGS bytes),
    in Arrow's and NumPy's kernels.

    >>> import pyarrow as pa
    >>> rows, hashes = tag_key_hashes(pa.array(["T", "T", "U"]), pa.array(["a", "", "b c"]))
    >>> rows.tolist(), hashes.tolist() == index_hash_many(["T#T#a", "U#T#b c"]).tolist()
    ([0, 2], True)
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    topic_arr, tags_arr = arrow_column(topic), arrow_column(tags)
    if topic_arr is None or tags_arr is None or len(topic_arr) != len(tags_arr):
        return None
    # both as dictionaries: each distinct topic and TAGS measured and hashed once
    topic_arr, tags_arr = (a if pa.types.is_dictionary(a.type) else a.dictionary_encode()
                           for a in (topic_arr, tags_arr))
    values, tag_values = topic_arr.dictionary, tags_arr.dictionary
    if topic_arr.null_count or values.null_count or not all(
            pa.types.is_string(t) or pa.types.is_large_string(t) for t in (values.type, tag_values.type)):
        return None
    filled = tags_arr.indices.fill_null(len(tag_values)) if tags_arr.null_count else tags_arr.indices
    at = np.asarray(filled.to_numpy(zero_copy_only=False), np.int64)
    value_lengths = np.append(utf16_lengths_many(tag_values), 0)     # the last: a null's
    rows = np.flatnonzero(value_lengths[at] > 0).astype(np.int64)     # null and empty TAGS put no key
    valued = np.flatnonzero(value_lengths[:-1] > 0)
    value_hashes = np.zeros(len(value_lengths), np.int32)
    value_hashes[valued] = java_hash_many(tag_values.take(pa.array(valued, pa.int64())))
    tag_hashes, lengths = value_hashes[at[rows]], value_lengths[at[rows]]
    heads = java_hash_many(pc.binary_join_element_wise(
        values, pa.scalar(f"#{TAG_INDEX_TYPE}#", values.type), pa.scalar("", values.type)))
    codes = np.asarray(topic_arr.indices.to_numpy(zero_copy_only=False), np.int64)[rows]
    hashes = java_hash_concat_many(heads[codes], tag_hashes, lengths)
    return rows, to_index_hash_many(hashes)


def _arrow_key_columns(topic: Any, keys: Any, uniq_key: Any, n: int):
    """Arrow buffers of the index key columns for ``_dispatchcore.key_hashes_utf8``: (topic
    dictionary codes int32, hashCode state after each dictionary value + "#" uint32, keys
    buffers, uniq_key buffers); None unless all three are Arrow text (UTF-8) of `n` rows
    without a null topic. Cost: one hash a distinct topic."""
    import pyarrow as pa

    arrays = [arrow_column(c) for c in (topic, keys, uniq_key)]
    if any(a is None or len(a) != n for a in arrays):
        return None
    topic_arr, keys_arr, uniq_arr = arrays
    if not pa.types.is_dictionary(topic_arr.type):
        if not (pa.types.is_string(topic_arr.type) or pa.types.is_large_string(topic_arr.type)):
            return None
        topic_arr = topic_arr.dictionary_encode()
    values = topic_arr.dictionary
    if topic_arr.null_count or values.null_count or not (pa.types.is_string(values.type)
                                                          or pa.types.is_large_string(values.type)):
        return None
    buffers = [utf8_buffers(a) for a in (keys_arr, uniq_arr)]
    if any(b is None for b in buffers):
        return None
    prefixes = java_hash_many(values).astype(np.uint32) * np.uint32(31) + np.uint32(ord("#"))
    codes = np.ascontiguousarray(topic_arr.indices.to_numpy(zero_copy_only=False), dtype=np.int32)
    return codes, prefixes, buffers[0], buffers[1]


def _as_expanded(source: Any) -> ExpandedKeys:
    if isinstance(source, ExpandedKeys):
        return source
    if hasattr(source, "columns") or isinstance(source, Mapping):
        cols = source.columns if hasattr(source, "columns") else source.keys()
        if "topic" in cols:
            return expand_columns(source)
        if {"key", "phy_offset", "store_timestamp"} <= set(cols):
            return ExpandedKeys(np.asarray(source["key"], dtype=object) if hasattr(source, "columns")
                                else source["key"], source["phy_offset"], source["store_timestamp"])
        raise ValueError("columns need either topic/phy_offset/store_timestamp[/keys/uniq_key/sys_flag] "
                         "(messages) or key/phy_offset/store_timestamp (already expanded)")
    return expand_messages(source)


def bulk_build(source: Any, directory: str | os.PathLike, *,
               hash_slot_num: int = DEFAULT_HASH_SLOT_NUM, index_num: int = DEFAULT_INDEX_NUM,
               slot_count_rule: SlotCountRule = NEW_SLOT, clock: Callable[[], int] | None = None,
               tz: _dt.tzinfo | None = None) -> list[Path]:
    """Write a new index folder in one go: the same files, byte for byte and with the same
    names for the same clock, as a fresh :class:`IndexService` indexing the messages one by
    one and then closing.

    `source` is a sequence of :class:`DispatchRequest`, message columns (DataFrame or mapping
    with ``topic``...; see :func:`expand_columns`), already-expanded columns (``key``,
    ``phy_offset``, ``store_timestamp``) or an :class:`ExpandedKeys`. Keys are hashed once,
    then each file takes the next ``index_num - 1`` rows through :func:`build_index_file`,
    seeded with the previous file's last row (its end_phy_offset / end_timestamp). The clock
    is read once per file, in order, like the broker. `directory` must hold no index file yet.
    Cost: O(keys) in C plus the files' zero-fill.

    >>> import tempfile, datetime
    >>> d = tempfile.mkdtemp()
    >>> paths = bulk_build(ExpandedKeys(["T#a", "T#b", "T#c"], [1, 2, 3], [1000, 2000, 3000]), d,
    ...                    hash_slot_num=4, index_num=3, clock=iter([0, 0]).__next__,
    ...                    tz=datetime.timezone.utc)
    >>> [p.name for p in paths]      # the second name is bumped by 1 ms: never reuse a name
    ['19700101000000000', '19700101000000001']

    Returns the paths written, oldest first.
    """
    check_index_num(index_num)
    exp = _as_expanded(source)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    existing = [p.name for p in directory.iterdir() if is_index_file_name(p.name)]
    if existing:
        raise FileExistsError(f"{directory} already holds index files ({existing[0]}, ...); "
                              "bulk_build writes a new folder (use IndexService to append)")
    clock = clock or _now_ms
    cap = int(index_num) - 1
    k = len(exp)
    n_files = -(-k // cap) if cap > 0 else 0
    if exp.n_messages > 0:
        if k == 0:
            n_files = 1   # the first buildIndex call creates a file even if nothing is put
        elif k % cap == 0 and int(exp.message_index[-1]) < exp.n_messages - 1:
            n_files += 1  # a message after the one that filled the last file opens a new one
    hashes = index_hash_many(exp.keys) if k else np.zeros(0, np.int32)
    phy, ts = exp.phy_offsets, exp.store_timestamps
    paths: list[Path] = []
    seed_phy = seed_ts = 0
    for i in range(n_files):
        lo, hi = i * cap, min((i + 1) * cap, k)
        name = next_free_index_file_name(clock(), tz, lambda n: (directory / n).exists(),
                                         after=paths[-1].name if paths else None)
        path = directory / name
        build_index_file(path, _slice(exp.keys, lo, hi), phy[lo:hi], ts[lo:hi],
                         hash_slot_num=hash_slot_num, index_num=index_num,
                         end_phy_offset=seed_phy, end_timestamp=seed_ts,
                         slot_count_rule=slot_count_rule, hashes=hashes[lo:hi])
        if hi > lo:
            seed_phy, seed_ts = int(phy[hi - 1]), int(ts[hi - 1])
        paths.append(path)
    return paths


def _slice(keys: Any, lo: int, hi: int):
    return keys.slice(lo, hi - lo) if hasattr(keys, "slice") else keys[lo:hi]
