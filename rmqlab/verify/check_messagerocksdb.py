"""The checks of 5.5's message RocksDB (``rocksdbstore/``: the RocksDB index, timer and transaction
records, :mod:`rmqlab.formats.messagerocksdb`) against the CommitLog the records point at."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError, RmqlabError
from rmqlab.formats import messagerocksdb as mr
from rmqlab.rules.properties import property_values
from rmqlab.rules.topics import TIMER_TOPIC, TRANS_HALF_TOPICS
from rmqlab.verify.report import FileReport, problem_from_error


def verify_message_rocksdb(store: Any) -> FileReport | None:
    """One report for ``rocksdbstore/`` beside `store` (a :class:`rmqlab.store.directory.Store`),
    None without the folder or without rocksdict. Errors:

    * ``mrocks.record``: a key or value of another form than MessageRocksDBStorage writes;
    * ``mrocks.index``: an index record whose offset is no message of the CommitLog, or whose
      message has another topic, UNIQ_KEY or store time (or its hour), or lacks the K record's
      key among its KEYS or the T record's TAGS;
    * ``mrocks.timer``: a timer record whose message is not the timer topic's message of that
      size and UNIQ_KEY, or whose TIMER_OUT_MS is not the record's delivery time;
    * ``mrocks.trans``: a transaction record whose message is not a half message of that size,
      real topic and transaction id.

    An index past the CommitLog's end (lastOffsetPy) is a warning. Read-only. Cost: the
    database read once, and the decode of each message a record points at.

    >>> import tempfile
    >>> from rmqlab.store.directory import Store
    >>> verify_message_rocksdb(Store(tempfile.mkdtemp())) is None
    True
    """
    folder = store.root / mr.FOLDER
    rep = FileReport(str(folder), "message-rocksdb")
    try:
        db = store.message_rocksdb_records()
    except ImportError:
        return None
    except FormatError as e:
        rep.problems.append(problem_from_error("mrocks.record", e))
        return rep
    if db is None:
        return None
    end = store.commitlog_extent()[2] if store.commitlog_dir.is_dir() else 0
    rep.counts = {"index_records": len(db.index), "timer_records": len(db.timers),
                  "transaction_records": len(db.transactions), "index_last_offset": db.index_last_offset}
    if db.index_last_offset is not None and db.index_last_offset > end:
        rep.problems.append(problem_from_error("mrocks.index", FormatError(
            f"lastOffsetPy {db.index_last_offset} is past the CommitLog's end {end}", path=folder, offset=None,
            field="lastOffsetPy"), severity="warning"))
    _check_index(store, db.index, rep, folder)
    _check_pointed(store, db.timers, rep, folder, "mrocks.timer", "timer", _timer_wrong)
    _check_pointed(store, db.transactions, rep, folder, "mrocks.trans", "trans", _trans_wrong)
    return rep


def _messages(store: Any, offsets: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """The messages at `offsets` (rows in order), and a mask of the offsets where none starts."""
    uniq = np.unique(offsets)
    ok = np.ones(len(uniq), bool)
    try:
        found = store.read_at(uniq, body=False)
    except (RmqlabError, ValueError):   # one at a time, to tell which offsets hold no message
        for i, o in enumerate(uniq.tolist()):
            try:
                store.read_at([o], body=False)
            except (RmqlabError, ValueError):
                ok[i] = False
        found = store.read_at(uniq[ok], body=False)
    rows = pd.DataFrame(index=uniq[ok]).join(found.set_index(found["phy_offset"].to_numpy()))
    at = pd.Index(uniq[ok]).get_indexer(pd.Index(offsets))
    return rows.iloc[np.maximum(at, 0)].reset_index(drop=True), at < 0


def _first(rep: FileReport, check: str, folder: Any, bad: np.ndarray, describe: Any, field: str) -> None:
    if bad.any():
        k = int(np.argmax(bad))
        rep.problems.append(problem_from_error(check, FormatError(f"{describe(k)} ({int(bad.sum())} such)",
                                                                  path=folder, offset=k, field=field)))


def _check_index(store: Any, ix: pd.DataFrame, rep: FileReport, folder: Any) -> None:
    if ix.empty:
        return
    offs = ix["phy_offset"].to_numpy(np.int64)
    m, missing = _messages(store, offs)
    _first(rep, "mrocks.index", folder, missing,
           lambda k: f"index record {ix['topic'].iloc[k]}@{ix['index_type'].iloc[k]}@{ix['tail'].iloc[k]} points at "
                     f"offset {offs[k]}, where no message starts", "default column family")
    keys = m["keys"].fillna("").astype(str).tolist()
    kinds, wanted = ix["index_type"].tolist(), ix["key"].tolist()
    has_key = np.array([kind != "K" or w in ks.split(" ") for kind, w, ks in zip(kinds, wanted, keys, strict=True)])
    tags = m["tags"].fillna("").astype(str).to_numpy()
    wrong = ~missing & ((m["topic"].astype(str).to_numpy() != ix["topic"].to_numpy())
                        | (m["uniq_key"].fillna("").astype(str).to_numpy() != ix["uniq_key"].to_numpy())
                        | (m["store_timestamp"].to_numpy() != ix["store_timestamp"].to_numpy())
                        | (ix["hour"].to_numpy() != ix["store_timestamp"].to_numpy() // mr.HOUR_MS * mr.HOUR_MS)
                        | ~has_key | ((ix["index_type"].to_numpy() == "T") & (tags != ix["key"].to_numpy())))
    _first(rep, "mrocks.index", folder, wrong,
           lambda k: f"index record {ix['topic'].iloc[k]}@{ix['index_type'].iloc[k]}@{ix['tail'].iloc[k]} at offset "
                     f"{offs[k]}: the message there is {m['topic'].iloc[k]!r} UNIQ_KEY {m['uniq_key'].iloc[k]!r} "
                     f"stored {m['store_timestamp'].iloc[k]} KEYS {keys[k]!r} TAGS {tags[k]!r}",
           "default column family")


def _timer_wrong(rec: pd.DataFrame, m: pd.DataFrame) -> np.ndarray:
    """A timer record (TimerRocksDBRecord) names its message's UNIQ_KEY, in the timer topic, due
    at its TIMER_OUT_MS."""
    out_ms = property_values(m["properties"], "TIMER_OUT_MS")
    return ((m["uniq_key"].fillna("").astype(str).to_numpy() != rec["uniq_key"].to_numpy())
            | (m["topic"].astype(str).to_numpy() != TIMER_TOPIC)
            | (out_ms.fillna("-1").astype(str).to_numpy() != rec["deliver_ms"].astype(str).to_numpy()))


def _trans_wrong(rec: pd.DataFrame, m: pd.DataFrame) -> np.ndarray:
    """A transaction record names a half message (TransMessageRocksDBStore.buildTransIndex: its
    REAL_TOPIC and its __transactionId__)."""
    real = property_values(m["properties"], "REAL_TOPIC").fillna("").astype(str).to_numpy()
    txid = property_values(m["properties"], "__transactionId__").fillna("").astype(str).to_numpy()
    return (~np.isin(m["topic"].astype(str).to_numpy(), TRANS_HALF_TOPICS) | (real != rec["topic"].to_numpy())
            | (txid != rec["uniq_key"].to_numpy()))


def _check_pointed(store: Any, rec: pd.DataFrame, rep: FileReport, folder: Any, check: str, family: str,
                   wrong_of: Any) -> None:
    """Timer or transaction records: each at a message of its size, as `wrong_of` wants."""
    if rec.empty:
        return
    offs = rec["phy_offset"].to_numpy(np.int64)
    m, missing = _messages(store, offs)
    bad = missing | (m["total_size"].to_numpy() != rec["size"].to_numpy()) | wrong_of(rec, m)
    _first(rep, check, folder, bad,
           lambda k: (f"{family} record of {rec['uniq_key'].iloc[k]!r} points at offset {offs[k]}, size "
                      f"{rec['size'].iloc[k]}: " + ("no message starts there" if missing[k] else
                                                    f"the message there is {m['topic'].iloc[k]!r} of size "
                                                    f"{m['total_size'].iloc[k]}, UNIQ_KEY {m['uniq_key'].iloc[k]!r}")),
           f"{family} column family")
