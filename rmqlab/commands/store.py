"""`rmqlab store info|dispatch|query|generate|recover`: a whole store directory.

``query`` answers one key the way the broker does (``Store.query_by_key``, or
``Store.query_by_unique_key`` for ``--unique-key``: one walk of the index, and reads of the
messages it returns); ``--mode verified`` and ``--explain`` run ``Store.explain_key`` (both
modes, and a walk of the key's whole chain in every index file). The parsers import nothing
heavy: pandas and the store modules are imported by the commands that run.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING

from rmqlab.commands import UsageError
from rmqlab.commands.bodies import BodyView, add_body_options, body_view
from rmqlab.commands.defaults import (
    DEFAULT_MAPPED_FILE_SIZE,
    DEFAULT_QUERY_MAX_NUM,
    LONG_MAX,
    PATTERNS,
)

if TYPE_CHECKING:
    import pandas as pd

    from rmqlab.store.directory import Store

# The config/ shape `store generate --config` writes without --broker-version: the newest known.
DEFAULT_CONFIG_VERSION = "5.3.1"

RESULT_COLUMNS = ["phy_offset", "store_timestamp", "topic", "keys", "uniq_key", "tags", "queue_id", "queue_offset"]


def register(sub: argparse._SubParsersAction) -> None:
    store = sub.add_parser("store", help="a store directory: commitlog/, consumequeue/, index/, checkpoint")
    ssub = store.add_subparsers(dest="store_command", required=True)

    def multi_dispatch(p: argparse.ArgumentParser) -> None:
        p.add_argument("--enable-lmq", action="store_true", help="the broker's enableLmq: LMQ units in queue 0")
        p.add_argument("--enable-multi-dispatch", action="store_true",
                       help="the broker's enableMultiDispatch: extra ConsumeQueue units for INNER_MULTI_DISPATCH")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("dir", metavar="DIR")
        p.add_argument("--hash-slot-num", type=int, default=None, metavar="N",
                       help="maxHashSlotNum of the index files (default: what the index files say, else 5000000)")
        p.add_argument("--index-num", type=int, default=None, metavar="N",
                       help="maxIndexNum of the index files (default: what the index files say, else 20000000)")
        p.add_argument("--commitlog-file-size", type=int, default=None, metavar="BYTES",
                       help="mappedFileSizeCommitLog (default: what the CommitLog's file names say, else 1 GiB)")
        p.add_argument("--json", action="store_true", help="JSON to stdout (one object per line for results)")
        p.add_argument("--batch-cq-topics", default=None, metavar="T1,T2",
                       help="topics dispatched to BatchConsumeQueues (default: those whose queue.type is "
                            "BatchCQ in config/topics.json; none without config/)")
        multi_dispatch(p)
        p.add_argument("--consume-queue-ext", action="store_true",
                       help="the broker's enableConsumeQueueExt: dispatch also writes consumequeue_ext/ "
                            "(default: on when the store has that folder)")
        p.add_argument("--consume-queue-ext-file-size", type=int, default=None, metavar="BYTES",
                       help="mappedFileSizeConsumeQueueExt (default: the size of the store's ext files, else 48 MiB)")
        p.add_argument("--commitlog-paths", default=None, metavar="P1,P2",
                       help="the folders of a CommitLog kept over several paths (the broker's storePathCommitLog "
                            "with commas, plus readOnlyCommitLogStorePaths); relative ones under DIR")

    def now_option(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument("--now", default=None, metavar="MS|TIME", help=f"{what}: epoch ms or ISO 8601 UTC "
                                                                       f"(default: now)")

    def work_dir(p: argparse.ArgumentParser) -> None:
        p.add_argument("--work-dir", default=None, metavar="DIR",
                       help="build the ConsumeQueues, index files and checkpoint there, not in the store, and read "
                            "them from there (the store is only read); queries on a store without them build them "
                            "in the user's cache by default")

    def queue_file_size(p: argparse.ArgumentParser) -> None:
        p.add_argument("--consume-queue-file-size", type=int, default=None, metavar="BYTES",
                       help=f"mappedFileSizeConsumeQueue (default: what the ConsumeQueue files say, else "
                            f"{DEFAULT_MAPPED_FILE_SIZE})")

    p = ssub.add_parser("info", help="what the store holds: messages, files, queues, index, checkpoint")
    common(p)
    queue_file_size(p)
    p.add_argument("--keep-going", action="store_true",
                   help="count a damaged CommitLog file up to its damage, report each damage and go on "
                        "(exit 1 when any was found)")
    p.set_defaults(run=_info)
    p = ssub.add_parser("dispatch", help="build ConsumeQueue and index files from the CommitLog (incremental)")
    common(p)
    queue_file_size(p)
    p.add_argument("--broker-version", default=None, metavar="X.Y.Z",
                   help="dispatch as this broker release does (4.9.x multi-dispatches every topic and "
                        "name; default: the 5.x rules)")
    work_dir(p)
    p.set_defaults(run=_dispatch)
    p = ssub.add_parser("query", help="messages by key, message id, queue offset or time range, as mqadmin "
                                      "queryMsgByKey / ById / ByUniqueKey / ByOffset answer (broker or verified mode)")
    common(p)
    queue_file_size(p)
    p.add_argument("--topic", help="the topic (all but --msg-id need it; an id that is a UNIQ_KEY too)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--key", help="queryMsgByKey: the messages the index holds for TOPIC#KEY")
    which.add_argument("--keys-file", metavar="PATH", help="many keys, one a line ('-': standard input): "
                                                           "one table, keys in order")
    which.add_argument("--msg-id", metavar="ID", help="queryMsgById: an offset message id (store host + CommitLog "
                                                     "offset), else a UNIQ_KEY of --topic")
    which.add_argument("--offset", type=int, metavar="N", help="queryMsgByOffset: the message at queue offset N of "
                                                               "--topic --queue-id (a pull of one message)")
    p.add_argument("--queue-id", type=int, metavar="N", help="the queue of --offset; with a time range alone, only "
                                                              "this queue")
    p.add_argument("--begin", default=None, metavar="TIME",
                   help="start of the store-time range: epoch ms, ISO 8601 (any zone; none: UTC) or "
                        "yyyy-MM-dd#HH:mm:ss:SSS (default: the beginning)")
    p.add_argument("--end", default=None, metavar="TIME", help="end of the range, as --begin (default: no end)")
    p.add_argument("--tags", default=None, metavar="EXPR",
                   help="only messages whose tag a subscription expression takes: 'TagA || TagB', '*' (all)")
    add_body_options(p, default="none")
    p.add_argument("--max", type=int, default=64, metavar="N", help="maxNum (capped at 64, as the broker)")
    p.add_argument("--broker-version", default=None, metavar="X.Y.Z",
                   help="the release that wrote the store: its time search and pull rules (default: the 5.x ones)")
    work_dir(p)
    p.add_argument("--mode", choices=["broker", "verified"], default="broker")
    p.add_argument("--unique-key", action="store_true", help="KEY is a UNIQ_KEY message id (maxNum 32)")
    p.add_argument("--key-type", choices=["K", "T"], default="K",
                   help="the index key type, as mqadmin queryMsgByKey -p: K, the KEYS and UNIQ_KEY the "
                        "broker indexes (default), or T, a message's TAGS (5.4.0+ brokers index topic#T#tags)")
    p.add_argument("--explain", action="store_true", help="files and entries read, and what broker mode got wrong")
    p.add_argument("--index", choices=["file", "rocksdb"], default="file",
                   help="the index the broker reads: file (index/, the default) or rocksdb (5.5's rocksdbstore/, "
                        "with indexRocksDBEnable and indexFileReadEnable=false)")
    p.add_argument("--now", type=int, default=None, metavar="MS",
                   help="with --index rocksdb: the broker's clock (a query of all times asks the seven days "
                        "before it; default: this machine's)")
    p.set_defaults(run=_query)
    p = ssub.add_parser("messages", help="a topic's messages stored between two times, queue by queue, with their "
                                         "bodies (mqadmin printMsg)")
    common(p)
    queue_file_size(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--queue-id", type=int, metavar="N", help="only this queue")
    p.add_argument("--begin", default=None, metavar="TIME", help="epoch ms, ISO 8601 (any zone; none: UTC) or "
                                                                 "yyyy-MM-dd#HH:mm:ss:SSS (default: the beginning)")
    p.add_argument("--end", default=None, metavar="TIME", help="as --begin (default: no end)")
    p.add_argument("--tags", default=None, metavar="EXPR", help="a subscription expression: 'TagA || TagB', '*'")
    add_body_options(p)
    p.add_argument("--max-bytes", type=int, default=None, metavar="N",
                   help="read at most N bytes of messages (their stored sizes), leaving the page cache of a "
                        "production machine alone; the rest is said to be left")
    p.add_argument("--count-by-tag", action="store_true", help="per tag and queue, how many messages (no bodies)")
    p.add_argument("--mode", choices=["broker", "verified"], default="broker",
                   help="broker: each queue searched by time as the broker searches it (printMsg's answer); "
                        "verified: every unit read, every message stored in the range")
    p.add_argument("--broker-version", default=None, metavar="X.Y.Z",
                   help="the release that wrote the store: its time search rules (default: the 5.x ones)")
    work_dir(p)
    p.set_defaults(run=_messages)
    p = ssub.add_parser("generate", help="write a synthetic store (deterministic by seed), then dispatch it")
    common(p)
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--topics", default="TopicTest", help="comma-separated topic names")
    p.add_argument("--rate", type=float, default=1000.0, help="mean messages per second")
    p.add_argument("--pattern", choices=PATTERNS, default="steady")
    p.add_argument("--collision-pairs", type=int, default=0, help="pairs of keys with equal String.hashCode")
    p.add_argument("--transaction-fraction", type=float, default=0.0)
    p.add_argument("--delay-fraction", type=float, default=0.0)
    p.add_argument("--broker-version", default=None, metavar="X.Y.Z",
                   help="write the store form of this RocketMQ release (e.g. 4.9.4: properties without the "
                        "final \\x02); default: rmqlab's own form (final \\x02 kept, as 4.9.0- and 5.2+)")
    p.add_argument("--append-prop-crc", action="store_true",
                   help="end every record's properties with __CRC32# (enabledAppendPropCRC, 5.2+)")
    p.add_argument("--inner-batch-max", type=int, default=1, metavar="N",
                   help="each send to a --batch-cq-topics topic is an inner batch of 1..N messages")
    p.add_argument("--lmq-queues", default="", metavar="Q1,Q2",
                   help="light message queue names (%%LMQ%%...) for multi-dispatched messages")
    p.add_argument("--multi-dispatch-every", type=int, default=0, metavar="N",
                   help="every N-th plain send also names one or two --lmq-queues in INNER_MULTI_DISPATCH")
    p.add_argument("--config", action="store_true",
                   help="also write config/ (topics, consumer offsets, subscription groups) with simulated "
                        f"consumers, in the shape --broker-version writes (default {DEFAULT_CONFIG_VERSION})")
    p.set_defaults(run=_generate)
    p = ssub.add_parser("recover", help="after a crash: cut torn tails, fix ConsumeQueues, rebuild the index "
                                        "from the last consistent point (writes only inside DIR)")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--hash-slot-num", type=int, default=None, metavar="N",
                   help="maxHashSlotNum of the index files (default: inferred from them, else 5000000)")
    p.add_argument("--index-num", type=int, default=None, metavar="N",
                   help="maxIndexNum of the index files (default: inferred from them, else 20000000)")
    p.add_argument("--commitlog-file-size", type=int, default=None, metavar="BYTES",
                   help="mappedFileSizeCommitLog (default: the size of the CommitLog files)")
    p.add_argument("--consume-queue-file-size", type=int, default=None, metavar="BYTES",
                   help="mappedFileSizeConsumeQueue (default: the size of the ConsumeQueue files)")
    p.add_argument("--deep", action="store_true", help="compare every index file's bytes, not only the newest "
                                                     "consistent one")
    p.add_argument("--broker-version", default=None, metavar="X.Y.Z",
                   help="the release that wrote the store: its index keys (5.4.0+ also indexes topic#T#tags)")
    multi_dispatch(p)
    p.add_argument("--dry-run", action="store_true", help="write nothing; report what would change")
    p.add_argument("--json", action="store_true", help="the report as one JSON object")
    p.set_defaults(run=_recover)
    p = ssub.add_parser("timers", help="5.x timer store: the messages still pending, when each fires, for which "
                                       "topic, and what a restart would do with them")
    common(p)
    queue_file_size(p)
    now_option(p, "the restart time to judge against")
    p.add_argument("--topic", default=None, help="only the timers of this real topic")
    p.set_defaults(run=_timers)
    p = ssub.add_parser("tiered-query", help="the tiered store's index (tiered_index_file/, RIP-65): a key query as "
                                             "IndexStoreService answers it")
    common(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--max-num", type=int, default=32, help="maxCount (default 32)")
    p.add_argument("--begin", default="0", metavar="MS|TIME", help="epoch ms or ISO 8601 UTC (default 0)")
    p.add_argument("--end", default=None, metavar="MS|TIME", help="epoch ms or ISO 8601 UTC (default: no end)")
    p.add_argument("--tiered-index-geometry", default=None, metavar="SLOTS,ITEMS",
                   help="tieredStoreIndexFileMaxHashSlotNum,MaxIndexNum (default: 5000000,20000000 where the "
                        "file size is theirs, else as the file's item chains tell)")
    p.add_argument("--tiered-path", default=None, metavar="DIR",
                   help="the tiered store's file system (tieredStoreFilePath): its uploaded index segments too")
    p.add_argument("--broker-version", default=None, metavar="X.Y.Z",
                   help="the release that wrote the index: its time filter (5.2.0-5.3.0 keep every item of a "
                        "local file; default 5.3.3's)")
    p.set_defaults(run=_tiered_query)
    p = ssub.add_parser("tiered", help="the tiered store's file system (tieredStoreFilePath, PosixFileSegment): each "
                                       "queue's uploaded range, or one queue's messages as served")
    common(p)
    queue_file_size(p)
    p.add_argument("--tiered-path", required=True, metavar="DIR", help="tieredStoreFilePath")
    p.add_argument("--topic", default=None, help="with --queue: that queue's uploaded messages")
    p.add_argument("--queue", type=int, default=None, help="the queue id (with --topic)")
    p.set_defaults(run=_tiered)
    p = ssub.add_parser("transactions", help="transactional messages: each one committed, rolled back, discarded "
                                             "after too many checks, or pending, with its check count")
    common(p)
    p.add_argument("--check-max", type=int, default=15, metavar="N",
                   help="the broker's transactionCheckMax (default 15): when a pending one is discarded")
    p.add_argument("--state", default=None, choices=("committed", "rolled back", "discarded", "pending"),
                   help="only transactions in this state")
    p.add_argument("--events", action="store_true", help="every record of each transaction, not one row each")
    p.set_defaults(run=_transactions)
    p = ssub.add_parser("pop", help="5.x pop consumption: each popping group's queues, the checkpoints in flight, "
                                    "and the messages the revive service will put into retry topics")
    common(p)
    queue_file_size(p)
    now_option(p, "the time to judge revive times against")
    p.add_argument("--group", default=None, help="only this consumer group")
    p.set_defaults(run=_pop)


def _timers(args) -> int:
    import pandas as pd

    from rmqlab.store.timers import has_timer_store
    from rmqlab.tables.times import ms_to_iso

    store = _store(args)
    if not has_timer_store(store):
        raise FileNotFoundError(f"{args.dir}: no timerwheel: not a 5.x store with a timer store "
                                f"(timerWheelEnable)")
    got = store.pending_timers(now=_time(args.now))
    if args.topic is not None:
        got = got[got["real_topic"] == args.topic]
    rows = got.to_dict(orient="records")
    shown = got.assign(fires_at=[ms_to_iso(v) for v in got["fires_at_ms"]],
                       slot=[ms_to_iso(v) for v in got["slot_ms"]])
    cols = ["fires_at", "real_topic", "real_queue_id", "uniq_key", "keys", "source", "slot", "rolled", "at_restart",
            "already_delivered", "enqueued_twice", "may_enqueue_twice"]
    by = got[~got["may_enqueue_twice"]].groupby(["real_topic", "at_restart"]).size().reset_index(name="messages")
    again = got["already_delivered"] | got["enqueued_twice"]
    keys = {c: got.loc[got[c], "uniq_key"].nunique() for c in ("already_delivered", "enqueued_twice")}
    twice = (f"a restart delivers {got.loc[again, 'uniq_key'].nunique()} of them a second time: "
             f"{keys['already_delivered']} already delivered after the last checkpoint, "
             f"{keys['enqueued_twice']} enqueued again from the timer queue\n\n") if again.any() else ""
    maybe = got["may_enqueue_twice"]
    if maybe.any():
        twice += (f"and {got.loc[maybe & ~got['uniq_key'].isin(got.loc[again, 'uniq_key']), 'uniq_key'].nunique()} "
                  f"more may be enqueued again: the restart's RocksDB ConsumeQueue recovery races the timer "
                  f"store's (rows marked may_enqueue_twice)\n\n")
    sure = got[~maybe]
    held_twice = len(sure) - sure["uniq_key"].nunique()
    head = f"{len(sure)} timer messages pending" + (f" ({held_twice} held twice)" if held_twice > 0 else "")
    text = (head + "\n\n" + (by.to_string(index=False) + "\n\n" if len(got) else "") + twice
            + (shown[cols].astype(object).where(shown[cols].notna(), "").to_string(index=False) if len(got) else ""))
    _emit(args, [{k: (None if v is pd.NA else v) for k, v in r.items()} for r in rows], text)
    return 0


def _tiered_query(args) -> int:
    from rmqlab.commands.verify import _geometry
    from rmqlab.jvm.longs import LONG_MAX
    from rmqlab.tables.times import ms_to_iso

    store = _store(args)
    slots, items = _geometry(args.tiered_index_geometry)
    got = store.query_tiered_index(args.topic, args.key, max_num=args.max_num, begin=_time(args.begin) or 0,
                                   end=_time(args.end, LONG_MAX), hash_slot_num=slots, index_num=items,
                                   tiered_path=args.tiered_path)
    shown = got.assign(stored=[ms_to_iso(v) for v in got["store_timestamp"]])
    cols = ["stored", "topic_id", "queue_id", "offset", "size", "file_timestamp"]
    _emit(args, _plain(got.to_dict(orient="records")),
          f"{len(got)} items for {args.topic}#{args.key}\n" + (shown[cols].to_string(index=False) if len(got) else ""))
    return 0


def _tiered(args) -> int:
    from rmqlab.tables.times import ms_to_iso

    store = _store(args)
    if (args.topic is None) != (args.queue is None):
        raise UsageError("--topic and --queue go together")
    if args.topic is None:
        got = store.tiered_queues(args.tiered_path)
        text = (f"{len(got)} queues uploaded, {int(got['commit_offset'].sub(got['min_offset']).sum())} messages\n"
                + (got.to_string(index=False) if len(got) else ""))
        _emit(args, _plain(got.to_dict(orient="records")), text)
        return 0
    got = store.tiered_messages(args.tiered_path, args.topic, args.queue, body=False)
    shown = got.assign(stored=[ms_to_iso(v) for v in got.get("store_timestamp", [])])
    cols = [c for c in ("offset", "tiered_offset", "item_size", "stored", "tags", "keys", "uniq_key") if c in shown]
    _emit(args, _plain(got.drop(columns=["properties"], errors="ignore").to_dict(orient="records")),
          f"{len(got)} messages of {args.topic}/{args.queue} in the tiered store\n"
          + (shown[cols].to_string(index=False) if len(got) else ""))
    return 0


def _pop(args) -> int:
    from rmqlab.store.popstate import revive_topics
    from rmqlab.tables.times import ms_to_iso

    store = _store(args)
    if not revive_topics(store):
        raise FileNotFoundError(f"{args.dir}: no queue of a revive topic (rmq_sys_REVIVE_LOG_*): no pop "
                                f"consumption on this store (5.x)")
    now = _time(args.now)
    groups, cks, redo = store.pop_groups(), store.pop_checkpoints(now=now), store.pop_redeliveries(now=now)
    if args.group is not None:
        groups, cks, redo = (f[f["group"] == args.group] for f in (groups, cks, redo))
    obj = {"groups": groups.to_dict(orient="records"), "checkpoints": cks.to_dict(orient="records"),
           "redeliveries": redo.to_dict(orient="records")}
    shown = redo.assign(revive_at=[ms_to_iso(v) for v in redo["revive_time_ms"]])
    cols = ["revive_at", "due", "group", "topic", "queue_id", "queue_offset", "msg_id", "keys", "retry_topic",
            "outcome"]
    text = (f"{len(cks)} pop checkpoints not yet processed; {len(redo)} messages popped and never acknowledged\n\n"
            + groups.astype(object).where(groups.notna(), "").to_string(index=False)
            + ("\n\n" + shown[cols].astype(object).where(shown[cols].notna(), "").to_string(index=False)
               if len(redo) else ""))
    _emit(args, _plain(obj), text)
    return 0


def _transactions(args) -> int:
    import pandas as pd

    from rmqlab.store.transactions import transaction_events, transactions
    from rmqlab.tables.times import ms_to_iso

    store = _store(args)
    events = transaction_events(store)
    got = transactions(store, check_max=args.check_max, events=events)
    if args.state is not None:
        got = got[got["state"] == args.state]
    if args.events:
        shown = events[events["transaction_id"].isin(got["transaction_id"])]
        _emit(args, _plain(shown.to_dict(orient="records")),
              f"{len(shown)} records of {len(got)} transactions\n"
              + (shown.astype(object).where(shown.notna(), "").to_string(index=False) if len(shown) else ""))
        return 0
    counts = got["state"].value_counts()
    head = (f"{len(got)} transactions: " + ", ".join(f"{int(counts.get(s, 0))} {s}" for s in
                                                  ("committed", "rolled back", "discarded", "pending")))
    later = got["state"].eq("committed") & got["discard_offset"].notna()
    note = (f"\n{int(later.sum())} committed ones were also discarded: a half copy made by a check before the "
            f"commit's op message arrived was checked on until transactionCheckMax\n") if later.any() else ""
    shown = got.assign(born=["" if pd.isna(v) else ms_to_iso(v) for v in got["born_timestamp"]])
    cols = ["transaction_id", "topic", "queue_id", "keys", "born", "state", "checks", "commit_queue_offset",
            "next"]
    text = head + "\n" + note + ("\n" + shown[cols].astype(object).where(shown[cols].notna(), "").to_string(
        index=False) if len(got) else "")
    _emit(args, _plain(got.to_dict(orient="records")), text)
    return 0


def _time(text: str | None, default: int | None = None) -> int | None:
    """A time given on the command line (:func:`rmqlab.tables.times.time_text_to_ms`: epoch ms,
    ISO 8601 in any zone, mqadmin's form); `default` when not given."""
    from rmqlab.tables.times import time_text_to_ms

    if text is None:
        return default
    try:
        return time_text_to_ms(str(text))
    except ValueError as e:
        raise UsageError(str(e)) from None


def _plain(obj):
    """`obj` with pandas' missing values as None and NumPy scalars as Python ones, for JSON."""
    import numpy as np
    import pandas as pd

    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if obj is pd.NA or obj is None:
        return None
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _store(args, *, announce: bool = True) -> Store:

    from rmqlab.store.directory import Store

    require_store(args.dir)
    store = Store(args.dir, hash_slot_num=args.hash_slot_num, index_num=args.index_num,
                  commitlog_file_size=args.commitlog_file_size,
                  consume_queue_file_size=getattr(args, "consume_queue_file_size", None), **_feature_options(args))
    args._opened_store = store
    told = settings_told(store)
    if told and announce:
        print(f"rmqlab: read with {told} (what the store's files say; `rmqlab store info` tells why)",
              file=sys.stderr)
    return store


def require_store(path: str) -> None:
    """Raise InputError unless `path` is a store directory (a broker's storePathRootDir)."""
    from pathlib import Path

    from rmqlab.errors import InputError
    from rmqlab.formats.storepaths import StorePaths

    if not Path(path).exists():
        raise InputError("no such file or directory", path=path)
    if not Path(path).is_dir() or not StorePaths(path).is_store():
        raise InputError("not a store directory: a broker's storePathRootDir holds commitlog/, consumequeue/, "
                         "index/, config/, the checkpoint or a dledger-<id>/data ledger", path=path)


def settings_told(store: Store) -> str:
    """The settings the store's files told and the broker's default would have got wrong, in
    one line (empty when there are none): what a user would otherwise have had to pass."""
    from rmqlab.store.settings import SETTINGS

    return ", ".join(f"{s.broker_name}={s.value}" for s in store.settings.values()
                     if s.source == "files" and s.value != SETTINGS[s.keyword][1])


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(t for t in (text or "").split(",") if t)


def _feature_options(args) -> dict:
    """The Store options of the 5.x / 4.x store features given on the command line."""
    # without the options the Store follows the store: ext on when it has consumequeue_ext/,
    # files of the size they have
    opts: dict = {"enable_lmq": args.enable_lmq, "enable_multi_dispatch": args.enable_multi_dispatch,
                  "consume_queue_ext": args.consume_queue_ext or None,
                  "consume_queue_ext_file_size": args.consume_queue_ext_file_size}
    if getattr(args, "broker_version", None) is not None:
        opts["broker_version"] = args.broker_version
    if args.batch_cq_topics is not None:
        opts["batch_cq_topics"] = _names(args.batch_cq_topics)
    if getattr(args, "commitlog_paths", None):
        opts["commitlog_paths"] = list(_names(args.commitlog_paths))
    return opts


def _emit(args, obj, text: str) -> None:
    """`text`, or with --json `obj` as JSON: a list one object a line (rows), else one line."""
    if not args.json:
        print(text)
    elif isinstance(obj, list):
        for row in obj:
            print(json.dumps(row, default=str))
    else:
        print(json.dumps(obj, default=str))


def _with_time(name: str, value):
    """A store time (a name ending in "timestamp", epoch ms) with its UTC time beside it; 0 is
    a time never set (a checkpoint before its first flush)."""
    from rmqlab.tables.times import ms_to_iso

    if not name.endswith("timestamp") or isinstance(value, bool) or not isinstance(value, int):
        return value
    return f"{value} ({ms_to_iso(value)})" if value > 0 else f"{value} (never set)"


def _info_lines(info: dict) -> str:
    """``store info``'s text: one aligned line a value; a dict's values (the DLedger ledger's
    summary, the RocksDB ConsumeQueue's counts) one line each under ``name.field``, a list of
    dicts under ``name[i].field``."""
    pairs: list[tuple[str, object]] = []

    def add(name: str, value) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                add(f"{name}.{k}", v)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                add(f"{name}[{i}]", v)
        else:
            pairs.append((name, value))

    for k, v in info.items():
        add(k, v)
    pairs = [(name, _with_time(name, value)) for name, value in pairs]
    width = max([22, *(len(name) + 2 for name, _ in pairs)])
    return "\n".join(f"{name:<{width}}{value}" for name, value in pairs)


def _info(args) -> int:
    import pandas as pd

    store = _store(args, announce=False)
    info = store.info(keep_going=args.keep_going)
    text = _info_lines({**info, "settings": {s.broker_name: f"{s.value} (given)" if s.source == "given" else
                                             f"{s.value} ({s.source}: {s.reason})"
                                             for s in store.settings.values()}})
    if (store.root / "config").is_dir():   # a store without config/ shows what it always showed
        progress = store.consumer_progress()
        config = progress.attrs["config"]
        info["config"] = config
        info["consumer_progress"] = [{k: (None if v is pd.NA else v) for k, v in rec.items()}
                                     for rec in progress.to_dict(orient="records")]
        text += "\n" + "\n".join(f"config/{c['path'].rsplit('/', 1)[-1]}: {c['source']} ({c['reason']})"
                                  for c in config.values())
        if len(progress):
            text += "\n\nconsumer progress (committed offset, ConsumeQueue max offset, lag = max - committed):\n"
            text += progress.to_string(index=False)
    _emit(args, info, text)
    damage = info.get("commitlog_damage") or []
    for d in damage:
        print(f"rmqlab: error: {d['path']}: offset {d['offset']}: {d.get('field') or ''}: {d['reason']} (the rest "
              f"of that file is not read)", file=sys.stderr)
    return 1 if damage else 0


def _dispatch(args) -> int:
    shown = []

    def progress(done, total):   # bytes of CommitLog, after each part
        if not args.json:
            print(f"\r{done / 2**20:,.1f} / {total / 2**20:,.1f} MiB of CommitLog dispatched", end="",
                  file=sys.stderr, flush=True)
            shown.append(done)
    store = _store(args)
    if args.work_dir is not None:
        from rmqlab.store.workdir import work_store

        store = work_store(store, args.work_dir)
    r = store.dispatch(progress=progress)
    if shown:
        print(file=sys.stderr)
    d = r.as_dict()
    _emit(args, d, ("" if args.work_dir is None else f"into {args.work_dir}: ")
                   + f"dispatched {r.messages} messages from offset {r.from_offset} to {r.to_offset}: "
                   f"{r.consume_queue_units} ConsumeQueue units in {r.queues} queues, {r.index_keys} index keys "
                   f"({r.index_files} index files) in {r.seconds:.2f} s")
    return 0


def _query(args) -> int:
    args.begin, args.end = _time(args.begin, 0), _time(args.end, LONG_MAX)
    view = body_view(args)
    keyed = args.key is not None or args.keys_file is not None
    if args.topic is None and args.msg_id is None:
        raise UsageError("--topic is needed (only --msg-id with an offset message id goes without)")
    if args.offset is not None and args.queue_id is None:
        raise UsageError("--offset needs --queue-id: the queue offset is of one queue")
    if args.queue_id is not None and (keyed or args.msg_id is not None):
        raise UsageError("--queue-id goes with --offset or a time range alone, not with a key or an id")
    s = _store(args)
    if args.msg_id is None and (not keyed or args.index == "file"):
        s = _built(s, args, "index" if keyed else "queues")
    if args.msg_id is not None:
        frame, how = _by_msg_id(s, args)
        return _print_messages(args, _tagged(frame, args.tags), view, how)
    if args.offset is not None:
        return _by_queue_offset(s, args, view)
    if not keyed:
        frame = s.query_by_time(args.topic, args.begin, args.end,
                                queue_ids=None if args.queue_id is None else [args.queue_id], mode=args.mode)
        _say_missed(frame)
        return _print_messages(args, _tagged(frame, args.tags), view,
                               f"stored from {_shown_time(args.begin)} to {_shown_time(args.end)} ({args.mode} mode)")
    if args.keys_file is not None:
        return _query_many(s, args)
    q = None
    if args.index == "rocksdb":
        if args.mode == "verified" or args.explain:
            raise UsageError("--index rocksdb answers in broker mode only (no --mode verified, no --explain)")
        # a UNIQ_KEY is asked as the broker asks it without an index type: K records, then U
        kind = None if args.unique_key else _index_type(args)
        frame = s.query_rocksdb_index(args.topic, args.key, begin=args.begin, end=args.end, max_num=args.max,
                                      index_type=kind, now=args.now)
    elif args.mode == "verified" or args.explain:
        q = s.explain_key(args.topic, args.key, begin=args.begin, end=args.end, max_num=args.max,
                          unique=args.unique_key, index_type=_index_type(args))
        frame = q.frame(args.mode)
    else:
        frame = _broker_answer(s, args)
    frame = _tagged(frame, args.tags)
    cols = [c for c in RESULT_COLUMNS + (["broker_returned"] if args.mode == "verified" else []) if c in frame]
    if args.json:
        for rec in frame[cols].to_dict(orient="records"):
            print(json.dumps(_with_times(rec), default=_jsonable))
        if q is not None and args.explain:
            print(json.dumps({"summary": q.summary(), "problems": q.problems.to_dict(orient="records"),
                              "trace": q.trace.as_dict()}, default=_jsonable))
    else:
        print(_shown(frame, cols).to_string(index=False) if len(frame) else f"no {args.mode} results")
        if q is not None and args.explain:
            print()
            print(q.explain())
    return 0


def _messages(args) -> int:
    """mqadmin printMsg offline: the messages of --topic stored between --begin and --end, each
    queue searched by time as the broker searches it, in queue order, with bodies."""
    if args.max_bytes is not None and args.max_bytes < 0:
        raise UsageError("--max-bytes must be >= 0")
    begin, end = _time(args.begin, 0), _time(args.end, LONG_MAX)
    s = _built(_store(args), args, "queues")
    view = body_view(args)
    frame = s.query_by_time(args.topic, begin, end, queue_ids=None if args.queue_id is None else [args.queue_id],
                            max_bytes=args.max_bytes, body=view.shown and not args.count_by_tag, mode=args.mode)
    _say_missed(frame)
    truncated = frame.attrs.get("truncated", False)
    frame = _tagged(frame, args.tags).sort_values(["queue_id", "queue_offset"], ignore_index=True)
    if truncated:
        print(f"rmqlab: --max-bytes {args.max_bytes}: stopped there; later messages were not read", file=sys.stderr)
    if args.count_by_tag:
        counts = (frame.assign(tags=frame["tags"].fillna("")).groupby(["queue_id", "tags"]).size()
                  .reset_index(name="messages"))
        if args.json:       # one object a line
            for rec in _plain(counts.to_dict(orient="records")):
                print(json.dumps(rec))
        else:
            print(f"{len(frame)} messages of {args.topic} by queue and tag\n"
                  + (counts.to_string(index=False) if len(counts) else ""))
        return 0
    return _print_messages(args, frame, view, f"{args.topic} stored from {_shown_time(begin)} to {_shown_time(end)}")


def _built(store: Store, args, need: str) -> Store:
    """The store to answer from: with --work-dir, a work folder built (dispatched, from where it
    stopped) from the store's CommitLog; without it the store itself, unless it has a CommitLog
    but none of what the query reads (`need`: "index" files or "queues"), which are then built
    in the user's cache (:func:`rmqlab.store.workdir.cache_folder`), with progress. The store is
    never written."""
    from rmqlab.store.workdir import cache_folder, work_store

    folder = args.work_dir
    if folder is None:
        paths = store.layout.paths
        if need == "index":
            has = paths.index.is_dir() and any(paths.index.iterdir())
        else:
            from rmqlab.store.queues import all_queues

            has = any(True for _ in all_queues(store))
        if has or not paths.has_commitlog():
            return store
        folder = cache_folder(store)
        print(f"rmqlab: the store has no {'index files' if need == 'index' else 'ConsumeQueues'}: building them from "
              f"its CommitLog in {folder} (the store is not written; --work-dir chooses the folder)", file=sys.stderr)
        if need == "index" and store.settings["hash_slot_num"].source == "default":
            print("rmqlab: with no index file to tell the broker's maxHashSlotNum and maxIndexNum, the defaults "
                  "are used; pass --hash-slot-num and --index-num for the files to split where the broker's did",
                  file=sys.stderr)
    work = work_store(store, folder)

    shown = []

    def progress(done, total):
        print(f"\r{done:,} / {total:,} bytes of CommitLog dispatched", end="", file=sys.stderr, flush=True)
        shown.append(done)
    work.dispatch(progress=progress)
    if shown:
        print(file=sys.stderr)
    args._opened_store = work
    return work


def _say_missed(frame: pd.DataFrame) -> None:
    """Say on stderr which queues' time search (the broker's) started past a message stored in
    the range: the broker would not return it; --mode verified does."""
    missed = frame.attrs.get("missed") or []
    if missed:
        print(f"rmqlab: note: in queue{'s' * (len(missed) != 1)} {', '.join(map(str, missed))} the broker's time "
              f"search starts past messages stored in the range, so it does not return them; --mode verified "
              f"reads every unit and does", file=sys.stderr)


def _shown_time(ms: int) -> str:
    from rmqlab.tables.times import ms_to_iso

    return "the beginning" if ms <= 0 else "no end" if ms >= LONG_MAX else f"{ms} ({ms_to_iso(ms)})"


def _with_times(rec: dict) -> dict:
    """A JSON row with each store time also as ISO 8601 UTC (``store_time`` beside
    ``store_timestamp``)."""
    from rmqlab.tables.times import ms_to_iso

    out = {}
    for k, v in rec.items():
        out[k] = v
        if k.endswith("_timestamp") and v is not None:
            out[k[:-len("_timestamp")] + "_time"] = ms_to_iso(v)
    return out


def _shown(frame: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """The columns `cols` of `frame` for a text table, each store time as ISO 8601 UTC beside."""
    from rmqlab.tables.times import ms_to_iso

    out = frame[cols].copy()
    if "store_timestamp" in out:
        out.insert(out.columns.get_loc("store_timestamp") + 1, "store_time",
                   [ms_to_iso(v) for v in out["store_timestamp"]])
    return out


def _tagged(frame: pd.DataFrame, expression: str | None) -> pd.DataFrame:
    """The rows whose TAGS a consumer's subscription `expression` takes ("TagA || TagB";
    None or "*": all), as the client checks a pulled message's tag
    (:func:`rmqlab.formats.consumequeue.subscription_tags`)."""
    from rmqlab.formats.consumequeue import subscription_tags

    wanted = subscription_tags(expression)
    if wanted is None or "tags" not in frame:
        return frame
    return frame[frame["tags"].isin(wanted)].reset_index(drop=True)


def _by_msg_id(s: Store, args) -> tuple[pd.DataFrame, str]:
    """mqadmin queryMsgById (DefaultMQAdminExtImpl.viewMessage): the id as an offset message id
    first, the message at its CommitLog offset if one is there and was stored by the host the id
    names; else the id as a UNIQ_KEY of --topic (queryMessageByUniqKey)."""
    from rmqlab.errors import RmqlabError
    from rmqlab.formats.msgid import offset_msg_id, parse_offset_msg_id

    why = ""
    try:
        at = parse_offset_msg_id(args.msg_id)
        m = s.read_at([at.phy_offset])
        if len(m) == 1 and offset_msg_id(m["store_host"].iloc[0], int(m["phy_offset"].iloc[0])) == args.msg_id.upper():
            return m, f"offset message id: CommitLog offset {at.phy_offset}"
        why = f"the message at CommitLog offset {at.phy_offset} has another id"
    except (RmqlabError, ValueError) as e:
        why = str(e)
    if args.topic is None:
        raise UsageError(f"--msg-id {args.msg_id}: not an offset message id of this store ({why}); as a UNIQ_KEY "
                         f"it is looked up in a topic: pass --topic")
    args.key, args.unique_key = args.msg_id, True
    how = f"UNIQ_KEY of {args.topic} (as an offset message id: {why})"
    if args.index == "rocksdb":      # 5.5's RocksDB index: a UNIQ_KEY asked as the broker asks it, K then U
        return s.query_rocksdb_index(args.topic, args.msg_id, begin=args.begin, end=args.end, max_num=args.max,
                                     index_type=None, now=args.now), how
    return _broker_answer(s, args), how


def _by_queue_offset(s: Store, args, view) -> int:
    """mqadmin queryMsgByOffset: a pull of one message at (--topic, --queue-id, --offset),
    the broker's answer (:meth:`Store.get_message`). The topic's config is not asked: a copy's
    config/ may lack a topic the broker held in memory (a DLQ, a RocksDB config not flushed),
    and the question is what the queue holds."""
    r = s.get_message(args.topic, args.queue_id, args.offset, 1, check_topic=False)
    found = r.messages.dropna(subset=["commitlog_offset"]) if len(r.messages) else r.messages
    if r.status != "FOUND" or not len(found):
        print(f"no message at {args.topic}/{args.queue_id} offset {args.offset}: {r.status} (queue offsets "
              f"{r.min_offset} to {r.max_offset}, next {r.next_begin_offset})", file=sys.stderr)
        return 0
    where = f"{args.topic}/{args.queue_id} offset {args.offset}"
    if r.queue == "compaction":
        # a compaction topic is served from the compaction store's own log: its offsets, not the CommitLog's
        frame = found.iloc[:1].rename(columns={"commitlog_offset": "phy_offset"})
        view = BodyView("none")
        where += " (from the compaction store, whose offsets are its own log's)"
    else:
        frame = s.read_at(found["commitlog_offset"].astype("int64").to_numpy()[:1])
    return _print_messages(args, _tagged(frame, args.tags), view, where)


#: the columns of a message a query or a dump prints as text
MESSAGE_COLUMNS = ["phy_offset", "msg_id", "uniq_key", "topic", "queue_id", "queue_offset", "tags", "keys",
                   "store_timestamp"]


def message_rows(frame: pd.DataFrame, view=None, *, with_body: bool = False) -> pd.DataFrame:
    """`frame` (messages as :meth:`Store.read_at` gives them) with the offset message id
    (``msg_id``, from store host and CommitLog offset) and, with `view`, each body as it
    renders (``body`` decompressed first, as a consumer gets it)."""
    from rmqlab.formats.commitlog.body import decompress_body
    from rmqlab.formats.msgid import offset_msg_ids_many

    out = frame.copy()
    if "store_host" in out and "phy_offset" in out:
        out["msg_id"] = offset_msg_ids_many(out["store_host"].to_numpy(object),
                                            out["phy_offset"].to_numpy("int64")) if len(out) else []
    if view is not None and with_body and "body" in out:
        out["shown_body"] = [view.render(decompress_body(bytes(b), int(f))) for b, f in
                             zip(out["body"], out["sys_flag"], strict=True)]
    return out


def _print_messages(args, frame: pd.DataFrame, view, how: str) -> int:
    """Print messages: one JSON object a line (store times also as ISO 8601, the body as
    --body shows it) or a table (and each body under it with --body)."""
    store = _store_of(args)
    if view.shown and len(frame) and "body" not in frame:
        frame = store.read_at(frame["phy_offset"].to_numpy("int64"), body=True)
    frame = frame.copy()
    frame.attrs = {}          # the searches' explanations: pandas would deep-copy them for every row
    rows = message_rows(frame, view, with_body=view.shown)
    cols = [c for c in MESSAGE_COLUMNS if c in rows]
    if args.json:
        for rec in rows.to_dict(orient="records"):
            out = _with_times({c: rec[c] for c in cols})
            out.update(rec.get("shown_body") or {})
            print(json.dumps(_plain(out), default=_jsonable, ensure_ascii=False))
        return 0
    print(f"{len(rows)} message{'s' * (len(rows) != 1)}: {how}", file=sys.stderr)
    if not len(rows):
        return 0
    table = _shown(rows, cols)
    table = table.astype(object).where(table.notna(), "")
    if not view.shown:
        print(table.to_string(index=False))
        return 0
    names = list(table.columns)
    lines = []
    for values, shown in zip(table.itertuples(index=False, name=None), rows["shown_body"], strict=True):
        body = shown.get("body")
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str)
        err = f"; {shown['body_error']}" if "body_error" in shown else ""
        lines.append("  ".join(f"{c}={v}" for c, v in zip(names, values, strict=True))
                     + f"\n    body ({shown.get('body_encoding', '')}{err}): {text}")
    print("\n".join(lines))
    return 0


def _store_of(args) -> Store:
    """The Store a command opened (kept on `args` by :func:`_store`)."""
    return args._opened_store


def _broker_answer(s: Store, args) -> pd.DataFrame:
    """What the broker returns for the key, in its order: one walk of the index and reads of
    the messages it returns (the rows ``explain_key`` gives in broker mode, without its walk
    of every file)."""
    if args.unique_key and args.max >= DEFAULT_QUERY_MAX_NUM:
        # the broker's maxNum for a UNIQ_KEY: defaultQueryMaxNum (32)
        return s.query_by_unique_key(args.topic, args.key, begin=args.begin, end=args.end)
    # a key; or a UNIQ_KEY with a smaller --max, which explain_key has always honoured
    return s.query_by_key(args.topic, args.key, begin=args.begin, end=args.end, max_num=args.max,
                          index_type=_index_type(args))


def _index_type(args) -> str | None:
    """--key-type as the Python API takes it (None: keys); a tag is not a UNIQ_KEY."""
    if args.key_type == "T" and args.unique_key:
        raise UsageError("--key-type T queries tags; --unique-key queries message ids: pass one")
    return "T" if args.key_type == "T" else None


def _query_many(s, args) -> int:
    if args.explain:
        raise UsageError("--explain takes one --key")
    with (sys.stdin if args.keys_file == "-" else open(args.keys_file, encoding="utf-8")) as lines:
        keys = [line.rstrip("\r\n") for line in lines]
    keys = [k for k in keys if k]
    t = s.query_many(args.topic, keys, begin=args.begin, end=args.end, max_num=args.max, mode=args.mode,
                     unique=args.unique_key, index_type=_index_type(args))
    first = "rank" if args.mode == "broker" else "broker_returned"
    cols = ["query_key", first] + [c for c in RESULT_COLUMNS if c in t]
    if args.json:
        for rec in t[cols].to_dict(orient="records"):
            print(json.dumps(rec, default=_jsonable))
    else:
        answered = t["key_index"].nunique() if len(t) else 0
        print(t[cols].to_string(index=False) if len(t) else f"no {args.mode} results", flush=True)
        print(f"{len(keys):,} keys, {answered:,} with {args.mode} results, {len(t):,} rows", file=sys.stderr)
    return 0


def _generate(args) -> int:
    from rmqlab.lab.workload import Workload

    try:
        w = Workload(messages=args.messages, seed=args.seed, topics=tuple(args.topics.split(",")), rate=args.rate,
                     pattern=args.pattern, collision_pairs=args.collision_pairs,
                     transaction_fraction=args.transaction_fraction, delay_fraction=args.delay_fraction,
                     broker_version=args.broker_version, append_prop_crc=args.append_prop_crc,
                     batch_cq_topics=_names(args.batch_cq_topics), inner_batch_max=args.inner_batch_max,
                     lmq_queues=_names(args.lmq_queues), multi_dispatch_every=args.multi_dispatch_every)
        config_version = None
        if args.config:
            from rmqlab.formats.storeconfig_writer import shape_for

            config_version = args.broker_version or DEFAULT_CONFIG_VERSION
            if shape_for(config_version) == "4" and w.batch_cq_topics:
                raise ValueError(f"--config in the shape of {config_version} cannot hold queue.type=BatchCQ "
                                 f"(it comes in 5.0.0)")
        if w.multi_dispatch_every and not (args.enable_multi_dispatch and args.enable_lmq):
            raise ValueError("--multi-dispatch-every needs --enable-multi-dispatch and --enable-lmq (the offsets "
                             "written are those of a broker with enableMultiDispatch and enableLmq)")
    except ValueError as e:   # the workload checks its own ranges; a usage error here
        raise UsageError(str(e)) from e
    def progress(done, total):
        if not args.json:
            print(f"\r{done:,} / {total:,} messages", end="", file=sys.stderr, flush=True)
    from rmqlab.formats.commitlog import DEFAULT_FILE_SIZE
    from rmqlab.lab.generate import generate_store

    s = generate_store(args.dir, w, commitlog_file_size=args.commitlog_file_size or DEFAULT_FILE_SIZE,
                       progress=progress,
                       hash_slot_num=args.hash_slot_num, index_num=args.index_num,
                       config_version=config_version, **{**_feature_options(args),
                                                         "batch_cq_topics": w.batch_cq_topics})
    if not args.json:
        print(file=sys.stderr)
    info = s.info()
    info["workload"] = dataclasses.asdict(w)
    _emit(args, info, _info_lines({k: v for k, v in info.items() if k != "workload"}))
    return 0


def _recover(args) -> int:

    from rmqlab.store.recover import recover_store

    require_store(args.dir)
    r = recover_store(args.dir, hash_slot_num=args.hash_slot_num, index_num=args.index_num,
                      commitlog_file_size=args.commitlog_file_size,
                      consume_queue_file_size=args.consume_queue_file_size, deep_check_all=args.deep,
                      dry_run=args.dry_run, broker_version=args.broker_version, enable_lmq=args.enable_lmq,
                      enable_multi_dispatch=args.enable_multi_dispatch)
    _emit(args, r.as_dict(), r.summary())
    return 0


def _jsonable(v):
    if hasattr(v, "item"):
        return v.item()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)
