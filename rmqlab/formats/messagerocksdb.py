"""5.5's message RocksDB (``{root}/rocksdbstore/``, MessageRocksDBStorage): the records of the
RocksDB index (``indexRocksDBEnable``), the RocksDB timer store (``timerRocksDBEnable``) and the
RocksDB transaction store (``transRocksDBEnable``), each off by default.

Mirrors rocketmq-store 5.5.0 (its sources jar): ``rocksdb/MessageRocksDBStorage``,
``index/rocksdb/IndexRocksDBRecord`` and ``IndexRocksDBStore``, ``timer/rocksdb/TimerRocksDBRecord``,
``transaction/TransRocksDBRecord``, and ``MixAll.getHours``. All numbers big-endian:

* **default column family, the index**: a key ``hour(8) "@" topic "@" type "@" [key "@"] uniqKey "@"
  phyOffset(8)`` (``hour``: the store time cut to the hour; ``type`` K for a KEYS key, T for the
  TAGS, U for the message itself, each message with a UNIQ_KEY getting one U record), a value of
  the store time (8); and two bookkeeping keys, ``lastOffsetPy`` and ``lastStoreTimeStamp`` (8
  bytes each), how far the index got.
* **timer**: a key ``deliverTime(8) uniqKey``, a value ``size(4) phyOffset(8)`` (the message in
  the timer topic), and the checkpoints ``sys_topic_scan_offset_checkpoint`` and
  ``timeline_checkpoint`` (8 bytes each).
* **trans**: a key ``phyOffset(8) "@" topic "@" uniqKey`` (a half message not yet resolved: its
  REAL_TOPIC and __transactionId__), a value ``checkTimes(4) size(4)``, and ``lastOffsetPy`` (8
  bytes), the last half message put.

>>> k = index_key(3_600_000, "T", "K", "k1", "U1", 40)
>>> decode_index_key(k)
(3600000, 'T', 'K', 'k1', 'U1', 40, 'k1@U1')
"""
from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rmqlab.errors import FormatError
from rmqlab.formats.layout import Layout

__all__ = ["FOLDER", "MessageRocksDB", "read_message_rocksdb", "decode_families", "index_key", "decode_index_key",
           "query_index", "MAX_ROCKSDB_INDEX_QUERY_DAYS", "HOUR_MS"]

#: MessageRocksDBStorage.ROCKSDB_MESSAGE_DIRECTORY, under storePathRootDir
FOLDER = "rocksdbstore"
#: IndexRocksDBRecord.KEY_SPLIT
KEY_SPLIT = "@"
#: MessageStoreConfig.maxRocksDBIndexQueryDays (default): the widest window a query may ask
MAX_ROCKSDB_INDEX_QUERY_DAYS = 7
#: MessageStoreConfig.maxMsgsNumBatch (default): the most offsets one query returns
MAX_MSGS_NUM_BATCH = 64
HOUR_MS = 3_600_000
#: MixAll.getHours stops at 720 hours ("protect system self 30 * 24")
MAX_HOURS = 720
#: TimerRocksDBRecord.getValueBytes
TIMER_VALUE = Layout("TimerRocksDBValue", [
    ("size", "i", "sizePy: the timer message's TOTALSIZE"),
    ("phy_offset", "q", "offsetPy: where the timer message starts in the CommitLog"),
])
#: TransRocksDBRecord.getValueBytes
TRANS_VALUE = Layout("TransRocksDBValue", [
    ("check_times", "i", "how often the broker has asked the producer to check the transaction"),
    ("size", "i", "sizePy: the half message's TOTALSIZE"),
])
_LAST_OFFSET_PY, _LAST_STORE_TIMESTAMP = b"lastOffsetPy", b"lastStoreTimeStamp"
_TIMER_CHECKPOINTS = (b"sys_topic_scan_offset_checkpoint", b"timeline_checkpoint")
_INDEX_COLUMNS = ["hour", "topic", "index_type", "key", "uniq_key", "phy_offset", "tail", "store_timestamp"]
_TIMER_COLUMNS = ["deliver_ms", "uniq_key", "size", "phy_offset"]
_TRANS_COLUMNS = ["phy_offset", "topic", "uniq_key", "check_times", "size"]


def index_key(hour: int, topic: str, index_type: str, key: str | None, uniq_key: str, phy_offset: int) -> bytes:
    """IndexRocksDBRecord.getKeyBytes for a record of `index_type` (K and T carry `key`: the key
    or the tags; U none)."""
    middle = KEY_SPLIT + topic + KEY_SPLIT + index_type + KEY_SPLIT
    middle += (f"{key}{KEY_SPLIT}" if index_type != "U" else "") + uniq_key + KEY_SPLIT
    return struct.pack(">q", hour) + middle.encode("utf-8") + struct.pack(">q", phy_offset)


def decode_index_key(raw: bytes, *, path: str | os.PathLike | None = None,
                     at: int | None = None) -> tuple[int, str, str, str | None, str, int, str]:
    """(hour, topic, type, key or None, uniqKey, phyOffset, tail) of an index key; ``tail`` is
    the text between ``@type@`` and the final ``@`` (``key@uniqKey``, or the uniqKey of a U
    record), what a query's prefix is matched against. Keys, tags and unique keys may hold ``@``
    (the revive service's own messages have unique keys such as ``TopicOrder@1@2@G``), so a K or
    T record's key and uniqKey are split at its last ``@``: exact unless the unique key holds
    one (:func:`read_message_rocksdb` then splits by the message's U record). Raises FormatError
    naming `path` and the record number `at` for a key of another form."""
    def bad(why: str) -> FormatError:
        return FormatError(f"index key {raw[:64]!r}: {why}", path=path, offset=at, field="default column family key")

    if len(raw) < 16 + 5:
        raise bad("shorter than hour, '@topic@T@uniqKey@' and offset")
    hour, = struct.unpack_from(">q", raw, 0)
    offset, = struct.unpack_from(">q", raw, len(raw) - 8)
    try:
        middle = raw[8:-8].decode("utf-8")
    except UnicodeDecodeError as e:
        raise bad("not UTF-8") from e
    parts = middle.split(KEY_SPLIT, 3)    # '', topic, type, the rest
    if len(parts) < 4 or parts[0] or parts[2] not in ("K", "T", "U") or not parts[3].endswith(KEY_SPLIT):
        raise bad("not '@topic@K|T|U@[key@]uniqKey@'")
    tail = parts[3][:-1]
    if parts[2] == "U":
        return hour, parts[1], "U", None, tail, offset, tail
    key, sep, uniq = tail.rpartition(KEY_SPLIT)
    if not sep:
        raise bad(f"a {parts[2]} record holds '@topic@{parts[2]}@key@uniqKey@'")
    return hour, parts[1], parts[2], key, uniq, offset, tail


@dataclass(frozen=True)
class MessageRocksDB:
    """The decoded records of ``rocksdbstore/``: ``index`` (one row a record: hour, topic,
    index_type, key, uniq_key, phy_offset, tail, store_timestamp, in the database's key order;
    :func:`decode_index_key`),
    ``index_last_offset`` / ``index_last_store_timestamp`` (lastOffsetPy / lastStoreTimeStamp,
    None where absent), ``timers`` (deliver_ms, uniq_key, size, phy_offset), ``timer_checkpoints``,
    ``transactions`` (phy_offset, topic, uniq_key, check_times, size) and
    ``transactions_last_offset`` (the trans family's lastOffsetPy: how far TransMessageRocksDBStore
    dispatched, None where absent)."""

    index: pd.DataFrame
    index_last_offset: int | None
    index_last_store_timestamp: int | None
    timers: pd.DataFrame
    timer_checkpoints: dict[str, int] = field(default_factory=dict)
    transactions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_TRANS_COLUMNS))
    transactions_last_offset: int | None = None


def _long(raw: bytes, where: str, path: Path | None, at: int) -> int:
    if len(raw) != 8:
        raise FormatError(f"{len(raw)} bytes, a long has 8", path=path, offset=at, field=where)
    return struct.unpack(">q", raw)[0]


def read_message_rocksdb(folder: str | os.PathLike) -> MessageRocksDB:
    """Read ``rocksdbstore/`` (a private snapshot: nothing is written in `folder`) and decode
    every record of its three column families. Cost: one pass over the database, a Python
    step a record (keys are variable-length text).

    >>> import tempfile
    >>> read_message_rocksdb(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...: not a RocksDB database (no CURRENT file)

    Raises ImportError without rocksdict, FormatError naming the folder, the record's number in
    its column family and the field for a key or value of another form.
    """
    from rmqlab.formats.rocksdb import is_rocksdb, read_families

    path = Path(folder)
    if not is_rocksdb(path):
        raise FileNotFoundError(f"{path}: not a RocksDB database (no CURRENT file)")
    return decode_families(read_families(path), path=path)


def decode_families(families: dict[str, list[tuple[bytes, bytes]]], *,
                    path: str | os.PathLike | None = None) -> MessageRocksDB:
    """The records of ``rocksdbstore/``'s column families (``default``, ``timer``, ``trans``:
    each a list of (key, value) in key order, as :func:`rmqlab.formats.rocksdb.read_families`
    gives them) decoded. Cost: a Python step a record.

    >>> decode_families({"default": [(b"lastOffsetPy", bytes(7) + b"\x08")]}).index_last_offset
    8
    >>> at = (40).to_bytes(8, "big")
    >>> db = decode_families({"trans": [(at + b"@TopicTx@U1", struct.pack(">ii", 2, 160)),
    ...                                 (b"lastOffsetPy", at)]})
    >>> db.transactions.values.tolist(), db.transactions_last_offset
    ([[40, 'TopicTx', 'U1', 2, 160]], 40)

    Raises FormatError naming `path`, the record's number in its column family and the field
    for a key or value of another form.
    """
    path = Path(path) if path is not None else None
    index, last_offset, last_time = [], None, None
    for i, (k, v) in enumerate(families.get("default", [])):
        if k == _LAST_OFFSET_PY:
            last_offset = _long(v, "lastOffsetPy", path, i)
        elif k == _LAST_STORE_TIMESTAMP:
            last_time = _long(v, "lastStoreTimeStamp", path, i)
        else:
            index.append((*decode_index_key(k, path=path, at=i), _long(v, "index store time", path, i)))
    timers, checkpoints = [], {}
    for i, (k, v) in enumerate(families.get("timer", [])):
        if k in _TIMER_CHECKPOINTS:
            checkpoints[k.decode()] = _long(v, k.decode(), path, i)
            continue
        if len(k) < 8 or len(v) != TIMER_VALUE.size:
            raise FormatError(f"timer record of a {len(k)}-byte key and a {len(v)}-byte value (a key of deliver "
                              f"time and uniqKey, a {TIMER_VALUE.size}-byte value of size and offset)", path=path,
                              offset=i, field="timer column family")
        size, offset = TIMER_VALUE.unpack(v)
        timers.append((struct.unpack_from(">q", k)[0], k[8:].decode("utf-8", "replace"), size, offset))
    trans, trans_last = [], None
    for i, (k, v) in enumerate(families.get("trans", [])):
        if k == _LAST_OFFSET_PY:   # MessageRocksDBStorage.writeRecordsForTrans keeps it in the family too
            trans_last = _long(v, "lastOffsetPy", path, i)
            continue
        parts = k[8:].decode("utf-8", "replace").split(KEY_SPLIT) if len(k) > 8 else []
        if len(parts) != 3 or parts[0] or len(v) != TRANS_VALUE.size:
            raise FormatError(f"transaction record {k[:64]!r}: not offset '@topic@uniqKey' with a "
                              f"{TRANS_VALUE.size}-byte value", path=path, offset=i, field="trans column family")
        check_times, size = TRANS_VALUE.unpack(v)
        trans.append((struct.unpack_from(">q", k)[0], parts[1], parts[2], check_times, size))
    # a K or T record's key and unique key, split by the U record of the same message where the
    # unique key holds "@" (the revive service's checkpoints: "TopicOrder@1@2@G@...@ck")
    uniq_at = {(r[1], r[5]): r[4] for r in index if r[2] == "U"}
    for i, r in enumerate(index):
        u = uniq_at.get((r[1], r[5]))
        if r[2] != "U" and u is not None and r[6].endswith(KEY_SPLIT + u) and r[4] != u:
            index[i] = (*r[:3], r[6][:-len(u) - 1], u, *r[5:])
    return MessageRocksDB(pd.DataFrame(index, columns=_INDEX_COLUMNS), last_offset, last_time,
                          pd.DataFrame(timers, columns=_TIMER_COLUMNS), checkpoints,
                          pd.DataFrame(trans, columns=_TRANS_COLUMNS), trans_last)


def query_index(db: MessageRocksDB, topic: str, key: str, *, max_num: int = 32, begin: int = 0,
                end: int = (1 << 63) - 1,
                index_type: str | None = None, now: int | None = None,
                max_query_days: int = MAX_ROCKSDB_INDEX_QUERY_DAYS,
                max_msgs_num_batch: int = MAX_MSGS_NUM_BATCH) -> list[int]:
    """The CommitLog offsets IndexRocksDBStore.queryOffset finds, in the order it finds them
    (DefaultMessageStore.queryMessage then sorts them): a `begin` of 0 or an `end` of
    Long.MAX_VALUE asks the last `max_query_days` days before `now` (the broker's clock: None,
    this machine's) instead; a wider window finds nothing; `max_num` is capped at
    maxMsgsNumBatch. Each hour of the window, oldest first, is searched for the prefix
    ``hour@topic@type@key@`` in key order (unique key, then offset), keeping records whose store
    time is in the window. No `index_type`: K, and U where K finds nothing (an old client).
    Cost: one pass over the index records a query.

    >>> h = 1_718_000_000_000 // HOUR_MS * HOUR_MS
    >>> rows = [(h, "T", "K", "k", "U1", 8, "k@U1", h + 5), (h, "T", "U", None, "U1", 8, "U1", h + 5)]
    >>> db = MessageRocksDB(pd.DataFrame(rows, columns=_INDEX_COLUMNS), 8, h + 5, pd.DataFrame(columns=_TIMER_COLUMNS))
    >>> query_index(db, "T", "k", begin=h, end=h + 9), query_index(db, "T", "k", now=h + HOUR_MS)
    ([8], [8])
    >>> query_index(db, "T", "k", now=h + 8 * 24 * HOUR_MS), query_index(db, "T", "U1", now=h + 9)
    ([], [8])
    """
    if not topic or not key or max_num <= 0 or begin < 0 or end <= 0 or begin > end:
        return []
    if begin == 0 or end == (1 << 63) - 1:
        end = int(time.time() * 1000) if now is None else int(now)
        begin = end - max_query_days * 24 * HOUR_MS
    if end - begin > max_query_days * 24 * HOUR_MS or begin <= 0 or begin > end:
        return []
    max_num = min(max_num, max_msgs_num_batch)
    first_hour = begin // HOUR_MS * HOUR_MS
    last_hour = min(end // HOUR_MS * HOUR_MS, first_hour + (MAX_HOURS - 1) * HOUR_MS)
    ix = db.index
    for t in [index_type] if index_type else ["K", "U"]:
        rows = ix[(ix["topic"].to_numpy() == topic) & (ix["index_type"].to_numpy() == t)
                  & (ix["hour"].to_numpy() >= first_hour) & (ix["hour"].to_numpy() <= last_hour)
                  & (ix["store_timestamp"].to_numpy() >= begin) & (ix["store_timestamp"].to_numpy() <= end)]
        want = key + KEY_SPLIT
        hits = []
        for hour, tail, offset in zip(rows["hour"].tolist(), rows["tail"].tolist(), rows["phy_offset"].tolist()):
            # the broker seeks the prefix "hour@topic@type@key@" and walks on in key order
            rest = tail + KEY_SPLIT
            if rest.startswith(want):   # RocksDB's order: the hour, then the rest of the key's bytes
                hits.append(((hour, rest.encode("utf-8") + struct.pack(">q", offset)), offset))
        found = [o for _, o in sorted(hits)][:max_num]
        if found or index_type:
            return found
    return []
