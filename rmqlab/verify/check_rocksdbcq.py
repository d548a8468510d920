"""The checks of a RocksDB ConsumeQueue (``storeType=defaultRocksDB``, 5.2.0+: the folder
``consumequeue`` is one RocksDB database; :mod:`rmqlab.formats.rocksdbcq`) against the store's
messages: each unit at a message start of its topic and queue, with its TOTALSIZE, QUEUEOFFSET,
tags code and store time; each queue's ``max`` entry its last unit; every dispatchable message
the dispatch had reached (the CHECKPOINT_TOPIC entry) with a unit in its queue."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rmqlab.errors import CorruptIndexError, RmqlabError
from rmqlab.formats import rocksdbcq as rcq
from rmqlab.rules.dispatch import goes_to_consume_queue_many, is_lmq, message_tags_codes
from rmqlab.verify.report import FileReport, Problem, make_problem, problem_from_error


def verify_rocksdb_queues(folder: Path, msgs: pd.DataFrame | None) -> FileReport:
    """One report for the database in `folder`: its queues and units as counts, and the problems
    of its units against `msgs` (:func:`rmqlab.formats.commitlog.read_columns` columns, no
    bodies; None: no CommitLog to check against). Without the rocksdict package the database is
    not read: a warning says so. Read-only (the database is opened from a private snapshot).
    Cost: one pass over the database and a join of its units with the messages (pandas)."""
    rep = FileReport(str(folder), "rocksdbcq")
    try:
        db = rcq.RocksDBConsumeQueues.open(folder)
    except ImportError as e:
        rep.problems.append(make_problem("rcq.not-read", CorruptIndexError, f"not checked: {e}", folder, None,
                                         None, severity="warning"))
        return rep
    except RmqlabError as e:
        rep.problems.append(problem_from_error("rcq.key", e))
        return rep
    queues = db.queues()
    rep.counts = {"units": len(db.units), "queues": len(queues), "dispatched_to": db.dispatched_to}
    if msgs is not None:
        rep.problems += _against_messages(folder, db, queues, msgs)
        mark = db.dispatched_to or 0
        later = msgs[goes_to_consume_queue_many(msgs["sys_flag"].to_numpy(np.int64))
                     & (msgs["phy_offset"].to_numpy(np.int64) >= mark)]
        if len(later):
            # RocksDBConsumeQueueStore writes without a write-ahead log (AbstractRocksDBStorage's
            # writeOptions, disableWAL): a kill -9 loses what RocksDB had not flushed
            rep.notes.append(f"{folder}: {len(later)} messages from the dispatch checkpoint ({mark}) on have no "
                             f"unit yet: the broker writes this database without a write-ahead log, so a kill -9 "
                             f"loses what RocksDB had not flushed; a restart dispatches them from there "
                             f"(Store.restart_dispatch_units)")
    return rep


def _first(check: str, folder: Path, frame: pd.DataFrame, words, fld: str) -> Problem | None:
    """A problem naming the first row of `frame` (`words(row)`), counting them all."""
    if frame.empty:
        return None
    row = frame.iloc[0]
    return make_problem(check, CorruptIndexError, words(row), folder, None, fld, count=len(frame))


def _against_messages(folder: Path, db: rcq.RocksDBConsumeQueues, queues: pd.DataFrame,
                      msgs: pd.DataFrame) -> list[Problem]:
    out: list[Problem | None] = []
    m = msgs[["phy_offset", "total_size", "topic", "queue_id", "queue_offset", "sys_flag", "tags", "delay_level",
              "store_timestamp"]].rename(columns={"topic": "m_topic", "queue_id": "m_queue_id",
                                                   "queue_offset": "m_queue_offset", "store_timestamp": "m_store"})
    m = m.assign(m_tags=message_tags_codes(m["m_topic"].to_numpy(object), m["tags"].to_numpy(object),
                                           m["delay_level"].to_numpy(np.int64), m["m_store"].to_numpy(np.int64)),
                 dispatched=goes_to_consume_queue_many(m["sys_flag"].to_numpy(np.int64)))
    j = db.units.merge(m, left_on="commitlog_offset", right_on="phy_offset", how="left")
    where = lambda r: f"{r['topic']!r} queue {r['queue_id']} offset {r['queue_offset']}"   # noqa: E731
    hit = j["phy_offset"].notna()
    out.append(_first("rcq.phy-offset", folder, j[~hit], lambda r: f"the unit of {where(r)}: commitlog offset "
                      f"{r['commitlog_offset']} is not where a message starts", "unit.commitlog_offset"))
    j = j[hit]
    out.append(_first("rcq.size", folder, j[j["size"] != j["total_size"]], lambda r: f"the unit of {where(r)}: "
                      f"size {r['size']} but the message at {r['commitlog_offset']} has TOTALSIZE "
                      f"{int(r['total_size'])}", "unit.size"))
    out.append(_first("rcq.store-time", folder, j[j["store_timestamp"] != j["m_store"]], lambda r: f"the unit of "
                      f"{where(r)}: store time {r['store_timestamp']} but its message's is {int(r['m_store'])}",
                      "unit.store_timestamp"))
    out.append(_first("rcq.transaction", folder, j[~j["dispatched"].astype(bool)], lambda r: f"the unit of "
                      f"{where(r)} points at a prepared or rolled-back transaction record", "unit.commitlog_offset"))
    lmq = j["topic"].map(is_lmq).astype(bool)
    own = j[~lmq]      # a light message queue's unit names the message's INNER_MULTI_DISPATCH queue
    other = (own["m_topic"] != own["topic"]) | (own["m_queue_id"] != own["queue_id"])
    out.append(_first("rcq.queue", folder, own[other], lambda r: f"the unit of {where(r)} points at a message of "
                      f"{r['m_topic']!r} queue {int(r['m_queue_id'])}", "unit.commitlog_offset"))
    own = own[~other]
    out.append(_first("rcq.queue-offset", folder, own[own["m_queue_offset"] != own["queue_offset"]],
                      lambda r: f"the unit of {where(r)} points at a message with QUEUEOFFSET "
                                f"{int(r['m_queue_offset'])}", "key.queue_offset"))
    out.append(_first("rcq.tags-code", folder, own[own["tags_code"] != own["m_tags"]], lambda r: f"the unit of "
                      f"{where(r)}: tags code {r['tags_code']} but the broker's tags code of its message is "
                      f"{int(r['m_tags'])}", "unit.tags_code"))
    # the offset table's max entry: the queue's last unit
    last = db.units.groupby(["topic", "queue_id"], sort=True).agg(last=("queue_offset", "max"),
                                                                    last_phy=("commitlog_offset", "last"))
    mx = db.offsets[db.offsets["which"] == rcq.MAX].set_index(["topic", "queue_id"])
    k = last.join(mx, how="left").reset_index()
    wrong = k[(k["queue_offset"] != k["last"]) | (k["commitlog_offset"] != k["last_phy"])]
    out.append(_first("rcq.max-offset", folder, wrong, lambda r: f"{r['topic']!r} queue {r['queue_id']}: the max "
                      f"entry names offset {r['queue_offset']} (commitlog offset {r['commitlog_offset']}), its last "
                      f"unit is {r['last']} (commitlog offset {r['last_phy']})", "offset.value"))
    # dispatchable messages the dispatch had reached, without a unit in their own queue
    if db.dispatched_to is not None:
        reached = m[m["dispatched"] & (m["phy_offset"] + m["total_size"] <= db.dispatched_to)]
        have = db.units[["topic", "queue_id", "commitlog_offset"]].rename(
            columns={"topic": "m_topic", "queue_id": "m_queue_id", "commitlog_offset": "phy_offset"})
        have = have.assign(held=True)
        lost = reached.merge(have, on=["m_topic", "m_queue_id", "phy_offset"], how="left")
        lost = lost[lost["held"].isna()]
        out.append(_first("rcq.missing-unit", folder, lost, lambda r: f"the message at {r['phy_offset']} (topic "
                          f"{r['m_topic']!r}, queue {r['m_queue_id']}, QUEUEOFFSET {r['m_queue_offset']}) lies before "
                          f"the dispatched end {db.dispatched_to} but has no unit", "QUEUEOFFSET"))
    return [p for p in out if p is not None]
