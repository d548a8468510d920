"""Query messages by key in two modes, and explain how the broker's answer differs from the truth.

**broker** mode is exactly what RocketMQ's ``DefaultMessageStore.queryMessage`` returns: the
offsets ``IndexService.queryOffset`` finds (offsets whose *hash* matches, stored times compared
in whole seconds, walks that stop early, at most ``max_num`` (64) offsets), then sorted by
CommitLog offset (:func:`query_message_order`). **verified** mode reads every candidate message and keeps the real
``topic`` + key matches whose millisecond store time lies in ``[begin, end]``. The comparison
names every difference and why it happened:

========================  =====================================================================
``collision``             returned, but the message's topic#key only shares the hash
``outside-time-range``    returned, real key, but its real store time is outside [begin, end]:
                          the index keeps whole seconds after the file's begin timestamp
``missed-time``           a real match the walk read but judged outside the range (the same
                          second truncation, the other way round, or a follow-on file's seed)
``missed-early-stop``     the walk in its file stopped before reaching it (an older-looking
                          entry ended the chain walk, or max_num)
``missed-file-skipped``   its file's [begin, end] header range does not touch the query range
                          (out-of-order store times put the message outside its file's range)
``missed-not-visited``    the walk over files stopped at a newer file (it began before `begin`,
                          or max_num was reached)
``missed-max-num``        max_num offsets were found before this one (collisions count too)
========================  =====================================================================

**Which way in.** Each kind of key query has one public entry point; on a store directory use
the :class:`~rmqlab.store.directory.Store` method, which calls this module:

=========================================  ==========================================================
the broker's answer for one key            :meth:`Store.query_by_key` (``rmqlab store query``)
the same as queryMessage returns it        :meth:`Store.query_message`: the records, undecoded
the same for a UNIQ_KEY message id         :meth:`Store.query_by_unique_key` (``--unique-key``)
both modes, every difference explained     :meth:`Store.explain_key`, a :class:`KeyQuery` (``--explain``)
many keys in one table                     :meth:`Store.query_many` (``--keys-file``)
an index without a store, or one index     :func:`query_key` / :func:`query_many` with an IndexService
file, with messages read your own way      or a :class:`OneFileIndex` and a message reader
the walk step by step (the figures)        :meth:`IndexService.trace_query`, :meth:`IndexFile.trace_query`
=========================================  ==========================================================

This module needs only an :class:`~rmqlab.store.indexservice.IndexService` and a function that reads
messages at CommitLog offsets; :class:`rmqlab.store.directory.Store` supplies one from the CommitLog.
Cost: the broker walk, plus a full walk of the key's chain in every file (about the number of
entries in its slots) and one CommitLog read per candidate.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

import rmqlab._records as _records
from rmqlab.formats.commitlog import MappedCommitLog
from rmqlab.formats.indexfile import IndexFile
from rmqlab.jvm.hashcode import index_hash_many, index_key
from rmqlab.jvm.longs import INT_MAX, LONG_MAX, LONG_MIN
from rmqlab.rules.dispatch import TAG_INDEX_TYPE, index_query_key, key_tokens_many
from rmqlab.store.indexservice import (
    DEFAULT_MAX_MSGS_NUM_BATCH,
    DEFAULT_QUERY_MAX_NUM,
    DirectoryQueryTrace,
    FileVisit,
    IndexService,
    QueryOffsetResult,
)
from rmqlab.tables.arrays import distinct
from rmqlab.tables.display import ms_with_clock
from rmqlab.tables.times import ms_to_iso

__all__ = ["KeyQuery", "QueryMessageResult", "query_key", "query_message", "query_many", "REASONS", "MODES",
           "OneFileIndex", "result_table", "first_with_reason"]

MODES = ("broker", "verified")

REASONS = {
    "ok": "returned by the broker and a real match",
    "collision": "returned by the broker, but the message's topic#key only shares the stored hash",
    "outside-time-range": "returned by the broker, but the real store time (ms) is outside [begin, end]: "
                          "the index keeps whole seconds after the file's begin timestamp",
    "missed-time": "a real match in [begin, end] that the walk read but judged outside it: its stored "
                   "time is whole seconds after the file's begin timestamp (or after a follow-on file's seed)",
    "missed-early-stop": "a real match the walk never reached: the chain walk in its file stopped first",
    "missed-file-skipped": "a real match in a file the broker did not search: the file's header time range "
                           "does not touch [begin, end] (out-of-order store times)",
    "missed-not-visited": "a real match in an older file the broker never reached: the walk over files "
                          "stopped at a newer one",
    "missed-max-num": "a real match left out because max_num offsets had already been found "
                      "(hash collisions take room too)",
}

_HASH_ENTRY_COLUMNS = ["position", "file", "entry", "phy_offset", "time_read"]

#: (max_num, begin, end) of a walk that reads a key's whole chain: no room or time limit stops it
_EVERY_ENTRY = (INT_MAX, LONG_MIN, LONG_MAX)


def query_message_order(offsets: Any, who: Any = None) -> np.ndarray:
    """The order ``DefaultMessageStore.queryMessage`` returns the messages of a key in: the
    positions of `offsets` (IndexService.queryOffset's list, newest first; or several lists one
    after another, ``who[i]`` the list offsets[i] belongs to) taken list by list, each list by
    ascending CommitLog offset. queryMessage sorts the offsets (``Collections.sort(phyOffsets)``,
    4.2.0 to 5.5.0, the RocksDB index's too) before it reads the messages, so the client and
    ``mqadmin queryMsgByKey`` see them oldest first. Cost: one stable sort, O(n log n).

    >>> query_message_order(np.array([300, 100, 200, 50]), np.array([0, 0, 0, 1])).tolist()
    [1, 2, 0, 3]
    """
    offsets = np.asarray(offsets, np.int64)
    if who is None:
        return np.argsort(offsets, kind="stable")
    return np.lexsort((offsets, np.asarray(who, np.int64)))

class QueryMessageResult(NamedTuple):
    """``DefaultMessageStore.queryMessage``'s answer (QueryMessageResult.java): the records of the
    messages returned, as the broker hands them to the client, undecoded.

    Decode one with :func:`rmqlab.formats.commitlog.read_message` (``read_message(buf, 0)``),
    or read many as a table with :meth:`Store.query_by_key`. The views are read-only and keep their
    file's map alive while held."""

    #: each returned message's CommitLog offset, ascending (the broker sorts them)
    phy_offsets: list[int]
    #: each message's record bytes (TOTALSIZE of them), a view of the mapped CommitLog file
    buffers: list[memoryview]
    #: the newest index file's end_timestamp, end_phy_offset (0 when no offset was found)
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


def query_message(index: IndexService, commitlog: MappedCommitLog, readable_end: Callable[[int], int],
                  topic: str, key: str, *, max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH, begin: int = 0,
                  end: int = LONG_MAX, index_type: str | None = None) -> QueryMessageResult:
    """``DefaultMessageStore.queryMessage`` (store module, rocketmq-all-5.3.3; the same loop in
    4.x): ``IndexService.queryOffset``, the offsets sorted ascending, then the record at each
    offset, left out where the broker's read fails (it logs the exception and goes on).

    `commitlog` holds the store's CommitLog files; ``readable_end(i)`` is how many bytes of its
    file i the broker reads (its write position after loading the store). An offset is left out
    when no file holds it (a CommitLog file deleted while an index file still points into it),
    when fewer than 4 bytes of the file are readable there, or when its TOTALSIZE is negative or
    runs past the file's end (``limit(size)`` of the slice that ``getData`` returns). The first
    offset is read by ``lookMessageByOffset`` too, which needs TOTALSIZE within the readable
    bytes and a record ``MessageDecoder`` decodes
    (:func:`rmqlab.formats.commitlog.records.decoder_reads`); where it fails, its store time
    is not taken (a NullPointerException, caught) and the offset left out. The broker asks again
    up to twice when nothing was read, with the first message's store time as `end`; that time
    is only taken when the first record was read, so nothing was read only when the time stayed
    `end`, and the same question gets the same offsets: one pass answers.

    Cost: the index walk (:meth:`IndexService.query_offset`) and a few byte reads an offset.
    """
    found = index.query_offset(topic, key, max_num, begin, end, index_type)
    if not found.phy_offsets:
        return QueryMessageResult([], [], 0, 0)
    ordered = sorted(found.phy_offsets)
    offsets: list[int] = []
    buffers: list[memoryview] = []
    k = 0
    while k < len(ordered):
        i = commitlog.file_of(ordered[k])
        if i < 0:
            k += 1
            continue
        f = commitlog.files[i]
        stop = bisect.bisect_left(ordered, f.start_offset + f.size, k)   # the run of offsets in file i
        readable = readable_end(i)
        view = memoryview(commitlog.buffer(i))
        # the query's first offset is read whole by lookMessageByOffset first (k == 0)
        _records.records_at(view, ordered, k, stop, f.start_offset, readable, offsets, buffers, k == 0)
        k = stop
    return QueryMessageResult(offsets, buffers, found.index_last_update_timestamp, found.index_last_update_phyoffset)


#: Reads messages at CommitLog offsets: returns a DataFrame with at least phy_offset, topic,
#: keys (the KEYS property or None), uniq_key (or None) and store_timestamp (ms).
MessageReader = Callable[[np.ndarray], pd.DataFrame]


@dataclass
class KeyQuery:
    """The answer to one key query in both modes, and their comparison.

    ``broker``: the messages RocketMQ returns, in its order. ``verified``: the real matches in
    [begin, end], newest first. ``diff``: one row per message in either, with its ``reason``
    (a key of :data:`REASONS`). ``trace``: the broker walk over files and entries.
    """

    topic: str
    key: str
    unique: bool
    begin: int
    end: int
    max_num: int
    broker: pd.DataFrame
    verified: pd.DataFrame
    diff: pd.DataFrame
    trace: DirectoryQueryTrace
    candidates: int          # distinct offsets whose stored hash matched, over all files
    #: every entry of every file whose stored hash matches, wherever the broker stopped:
    #: position (of the file in the folder), file, entry, phy_offset, time_read (ms)
    hash_entries: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_HASH_ENTRY_COLUMNS))

    def frame(self, mode: str = "verified") -> pd.DataFrame:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        return self.broker if mode == "broker" else self.verified

    @property
    def problems(self) -> pd.DataFrame:
        """The rows of :attr:`diff` where the broker's answer is wrong or incomplete."""
        return self.diff[self.diff["reason"] != "ok"]

    def summary(self) -> dict[str, int]:
        counts = self.diff["reason"].value_counts().to_dict()
        return {"broker": len(self.broker), "verified": len(self.verified),
                "candidates": self.candidates, **{k: int(counts.get(k, 0)) for k in REASONS}}

    def unreached(self) -> pd.DataFrame:
        """The index entries of real matches that the broker's walk never read in a file it
        searched (reasons "missed-early-stop" and "missed-max-num"): one row per message, its
        first entry (columns file, entry, phy_offset, time_read, reason), newest first. What
        the walk diagram draws after the place a walk stopped. Cost: O(hash_entries).
        """
        missed = self.diff[self.diff["reason"].isin(["missed-early-stop", "missed-max-num"])]
        read = {(v.name, st.entry) for v in self.trace.files if v.trace is not None for st in v.trace.steps}
        rows = (self.hash_entries.drop_duplicates("phy_offset")
                .merge(missed[["phy_offset", "reason"]], on="phy_offset"))
        rows = rows[[(f, int(e)) not in read for f, e in zip(rows["file"], rows["entry"])]]
        return (rows.sort_values(["position", "entry"], ascending=False)[
            ["file", "entry", "phy_offset", "time_read", "reason"]].reset_index(drop=True))

    def explain(self) -> str:
        lines = [str(self.trace), "",
                 f"verified: {len(self.verified)} real matches of {self.topic}#{self.key} in "
                 f"[{self.begin}, {self.end}] among {self.candidates} hash-matching entries"]
        for row in self.problems.itertuples():
            lines.append(f"  phy {row.phy_offset}: {row.reason}: {row.detail}")
        if self.problems.empty:
            lines.append("  the broker's answer is exactly right")
        return "\n".join(lines)


def _repeated(value: str, n: int) -> np.ndarray:
    """An object array of n references to `value`. np.full would pass a str through a NumPy
    unicode scalar first, which drops trailing NULs: a Java key may end in U+0000."""
    out = np.empty(n, dtype=object)
    out[:] = value
    return out


def _real_match(messages: pd.DataFrame, topic: str, key: str, unique: bool, by_tag: bool = False) -> np.ndarray:
    n = len(messages)
    return _real_matches(messages, _repeated(topic, n), _repeated(key, n), unique, by_tag)


def _real_matches(messages: pd.DataFrame, topics: np.ndarray, keys: np.ndarray, unique: bool,
                  by_tag: bool = False) -> np.ndarray:
    """Row i of `messages` really is a message of ``topics[i]`` under ``keys[i]``: the topic is
    the same and the key is its UNIQ_KEY or (`unique` False) one of the tokens buildIndex
    indexes from its KEYS property; with `by_tag` (index type "T"), its TAGS property whole.
    Cost: O(total KEYS length)."""
    if messages.empty:
        return np.zeros(0, dtype=bool)
    def column(name: str) -> np.ndarray:   # a reader may give nullable strings: NA is None here
        return messages[name].to_numpy(object, na_value=None)  # type: ignore[call-overload]  # stubs lack it

    same_topic = column("topic") == topics
    if by_tag:
        return same_topic & (column("tags") == keys)
    uniq = column("uniq_key") == keys
    if unique:
        return same_topic & uniq
    import pyarrow.compute as pc

    tokens = key_tokens_many(column("keys"))
    parents = np.asarray(pc.list_parent_indices(tokens), dtype=np.int64)
    flat = np.asarray(pc.list_flatten(tokens).to_numpy(zero_copy_only=False), dtype=object)
    equal = flat == keys[parents]
    in_keys = np.zeros(len(messages), dtype=bool)
    in_keys[parents[equal]] = True
    return same_topic & (uniq | in_keys)


def query_key(index: IndexService, read_messages: MessageReader, topic: str, key: str, *,
              begin: int = 0, end: int = LONG_MAX, max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH,
              unique: bool = False, index_type: str | None = None, also: Any = ()) -> KeyQuery:
    """Run the broker's query for ``topic#key`` and the verified one, and compare them.

    The verified mode's candidates are the messages an index entry with the key's hash points
    at; `also` adds CommitLog offsets to read and judge besides them (a caller that has scanned
    the CommitLog's keys gives the messages carrying the key: then a real match no index entry
    points at, as in a store without index files, is listed, missed-not-visited).

    `unique` queries a UNIQ_KEY (message id) the way the broker does: max_num 32, and a real
    match is a message whose UNIQ_KEY equals `key`. `index_type` "T" queries a tag as a 5.4.0+
    broker does (``topic#T#key``); a real match is a message whose TAGS is `key`.

    >>> import tempfile, pandas as pd
    >>> from rmqlab.store.indexservice import IndexService
    >>> msgs = pd.DataFrame({"phy_offset": [100, 200], "topic": ["T", "T"], "keys": ["Aa", "BB"],
    ...                      "uniq_key": [None, None], "store_timestamp": [1718000000000, 1718000001000]})
    >>> with IndexService(tempfile.mkdtemp(), 8, 16, read_only=False) as s:
    ...     s.build_columns(msgs.assign(sys_flag=0))
    ...     q = query_key(s, lambda offs: msgs[msgs.phy_offset.isin(offs)], "T", "Aa")
    2
    >>> q.broker.phy_offset.tolist(), q.verified.phy_offset.tolist(), q.summary()["collision"]
    ([100, 200], [100], 1)
    """
    by_tag = _by_tag(index_type, unique)
    if unique:
        max_num = min(max_num, 32)
    looked_up = index_query_key(key, index_type)     # T#tag for a tag; the key itself otherwise
    trace = index.trace_query(topic, looked_up, max_num, begin, end)
    broker_offsets = list(trace.result.phy_offsets)
    full_key = index_key(topic, looked_up)

    # Every entry of every file whose stored hash matches, wherever the broker stopped.
    rows = []
    for position, f in enumerate(index.files):
        walk = f.trace_query(full_key, *_EVERY_ENTRY)
        rows += [(position, f.path.name, s.entry, s.phy_offset, s.time_read) for s in walk.steps if s.hash_match]
    entries = pd.DataFrame(rows, columns=_HASH_ENTRY_COLUMNS)
    candidates = np.unique(np.concatenate([entries["phy_offset"].to_numpy(np.int64),
                                           np.asarray(broker_offsets, dtype=np.int64),
                                           np.asarray(list(also), dtype=np.int64)]))
    messages = read_messages(candidates).drop_duplicates("phy_offset").set_index("phy_offset", drop=False)
    messages.index.name = "at"   # looked up by offset; the phy_offset column stays for output
    real = pd.Series(_real_match(messages, topic, key, unique, by_tag), index=messages.index, dtype=bool)
    in_range = messages["store_timestamp"].between(begin, end) if not messages.empty else real
    truth = messages[real & in_range].sort_values(["store_timestamp", "phy_offset"], ascending=False)

    returned = np.asarray(broker_offsets, np.int64)
    returned = returned[query_message_order(returned)]
    broker = messages.reindex(returned).reset_index(drop=True)
    broker.insert(0, "rank", np.arange(len(broker)))
    verified = truth.reset_index(drop=True)
    verified.insert(0, "broker_returned", verified["phy_offset"].isin(broker_offsets))

    diff = _compare(trace, entries, messages, real, in_range, broker_offsets, truth, begin, end)
    return KeyQuery(topic, key, unique, begin, end, trace.max_num, broker, verified, diff, trace,
                    len(np.unique(entries["phy_offset"])) if len(entries) else 0, entries)


def _by_tag(index_type: str | None, unique: bool) -> bool:
    """Whether a query of `index_type` is by tag; raises ValueError for a tag query by UNIQ_KEY."""
    if index_type == TAG_INDEX_TYPE and unique:
        raise ValueError("a query by tag (index_type 'T') is not a query by UNIQ_KEY (unique)")
    return index_type == TAG_INDEX_TYPE


def query_many(index: IndexService, read_messages: MessageReader, topics: Any, keys: Any, *,
               begin: int = 0, end: int = LONG_MAX, max_num: int = DEFAULT_MAX_MSGS_NUM_BATCH,
               mode: str = "broker", unique: bool = False, index_type: str | None = None) -> pd.DataFrame:
    """Many key queries in one table: for each key, what the broker returns (``mode="broker"``)
    or the real matches (``mode="verified"``), as :func:`query_key` gives them one key at a time.

    Cost: the broker walks of all keys, file by file in C (:meth:`IndexService.query_offsets_many`),
    one CommitLog read of each distinct offset found, and the table made once from columns;
    verified mode adds a full walk of every key's chain in every file and reads every
    candidate. Broker mode: O(entries walked + distinct offsets found), reading the messages
    the larger part; verified mode: O(every chain entry of every key + candidates). Measured
    rates: benchmarks/RESULTS.md (bench_store).

    >>> from rmqlab.lab.sample import sample_store
    >>> store = sample_store()
    >>> with store.index() as idx:
    ...     t = query_many(idx, store.read_at, "Orders", ["ORDER_Aa0", "nope"])
    >>> t.groupby("query_key").size().to_dict()          # no row for "nope"
    {'ORDER_Aa0': 26}
    >>> t["keys"].str.split(" ").str[0].value_counts().to_dict()   # ORDER_BB0 shares the hash
    {'ORDER_Aa0': 14, 'ORDER_BB0': 12}

    `topics`: one topic for every key, or one per key. Rows, in key order: ``key_index`` (the
    key's position in `keys`), ``query_topic``, ``query_key``, then ``rank`` (broker mode: the
    broker's order) or ``broker_returned`` (verified mode: newest first), then the columns of
    `read_messages` (``phy_offset``, ``topic``, ``keys``, ``uniq_key``, ``store_timestamp`` ...).
    A key with no answer has no row. `unique` queries UNIQ_KEYs as the broker does (max_num
    32; a real match is a message whose UNIQ_KEY is the key); `index_type` "T" queries tags
    (5.4.0+; a real match is a message whose TAGS is the key). Raises ValueError for another
    `mode`, or when `topics` and `keys` differ in length.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    by_tag = _by_tag(index_type, unique)
    keys = np.asarray(list(keys), dtype=object)
    n = len(keys)
    if isinstance(topics, str):
        topics = _repeated(topics, n)
    topics = np.asarray(list(topics), dtype=object)
    if len(topics) != n:
        raise ValueError(f"{len(topics)} topics for {n} keys")
    if unique:
        max_num = min(max_num, DEFAULT_QUERY_MAX_NUM)
    broker = index.query_offsets_many(topics, keys, max_num, begin, end, index_type=index_type)
    who = np.repeat(np.arange(n), broker.counts())
    if mode == "broker":
        rank = np.arange(len(who)) - np.repeat(broker.starts[:-1], broker.counts())
        returned = np.asarray(broker.phy_offsets, np.int64)[query_message_order(broker.phy_offsets, who)]
        offsets, at = np.unique(returned, return_inverse=True)
        messages = _messages_at(read_messages, offsets)
        return _table(who, topics, keys, "rank", rank, returned,
                      {c: _take(messages[c], at) for c in messages.columns if c != "phy_offset"})
    # every entry of every file whose stored hash matches, wherever the broker stopped
    hashes = index_hash_many([index_key(t, index_query_key(k, index_type)) for t, k in zip(topics, keys)])
    owner, found_at = [who], [broker.phy_offsets]
    for f in index.files:
        walk = f.select_phy_offsets_many(None, *_EVERY_ENTRY, hashes=hashes)
        owner.append(np.repeat(np.arange(n), walk.counts()))
        found_at.append(walk.phy_offsets)
    # each (key, offset) once: a code per pair, key-major, from the distinct offsets
    offsets, at = np.unique(np.concatenate(found_at), return_inverse=True)
    codes = np.concatenate(owner) * max(len(offsets), 1) + at
    pairs = distinct(codes)
    pair_key, pair_at = np.divmod(pairs, max(len(offsets), 1))
    messages = _messages_at(read_messages, offsets)
    found = messages["topic"].notna().to_numpy(bool)[pair_at]
    compared = ("topic", "tags") if by_tag else ("topic", "keys", "uniq_key")
    candidates = pd.DataFrame({c: _take(messages[c], pair_at[found]) for c in compared}, copy=False)
    real = np.zeros(len(pairs), bool)
    real[found] = _real_matches(candidates, topics[pair_key[found]], keys[pair_key[found]], unique, by_tag)
    store_ts = _take(messages["store_timestamp"], pair_at)
    keep = np.flatnonzero(real & pd.Series(store_ts).between(begin, end).to_numpy(bool))
    newest_first = pd.DataFrame({"k": pair_key[keep], "t": store_ts[keep], "p": offsets[pair_at[keep]]},
                                copy=False).sort_values(["k", "t", "p"], ascending=[True, False, False]).index
    rows = keep[newest_first.to_numpy()]
    return _table(pair_key[rows], topics, keys, "broker_returned", np.isin(pairs[rows], codes[:len(who)]),
                  offsets[pair_at[rows]],
                  {c: _take(messages[c], pair_at[rows]) for c in messages.columns if c != "phy_offset"})


def _messages_at(read_messages: MessageReader, offsets: np.ndarray) -> pd.DataFrame:
    """The messages at `offsets` (sorted, distinct), row j for offsets[j] (missing values where
    the reader found none)."""
    messages = read_messages(offsets)
    read = messages["phy_offset"].to_numpy()
    if len(read) == len(offsets) and bool((read == offsets).all()):
        return messages   # as Store.read_at gives them
    return messages.drop_duplicates("phy_offset").set_index("phy_offset").reindex(offsets).reset_index()


def _take(column: pd.Series, at: np.ndarray) -> Any:
    """Rows `at` of a column, its dtype kept (a NumPy take where the column is NumPy's)."""
    return column.to_numpy()[at] if isinstance(column.dtype, np.dtype) else column.array.take(at)


def _table(who: np.ndarray, topics: np.ndarray, keys: np.ndarray, first: str, first_values: np.ndarray,
           offsets: np.ndarray, columns: dict) -> pd.DataFrame:
    """Rows (key_index, query_topic, query_key, `first`, phy_offset, message columns...), made
    in one go from the columns."""
    return pd.DataFrame({"key_index": who, "query_topic": topics[who], "query_key": keys[who], first: first_values,
                         "phy_offset": offsets, **columns}, copy=False)


def _compare(trace: DirectoryQueryTrace, entries: pd.DataFrame, messages: pd.DataFrame,
             real: pd.Series, in_range: pd.Series, broker_offsets: list[int], truth: pd.DataFrame,
             begin: int, end: int) -> pd.DataFrame:
    visits = {v.name: v for v in trace.files}
    returned = set(broker_offsets)
    # first index entry of each offset, and each searched file's steps by entry number: looked up
    # once per missed message, so a hot key with many misses stays linear
    entry_of = {int(p): (f, int(e)) for f, e, p in
                reversed(list(zip(entries["file"], entries["entry"], entries["phy_offset"])))}
    steps_of = {v.name: {st.entry: st for st in v.trace.steps} for v in trace.files if v.trace is not None}
    out = []
    for phy in broker_offsets:
        if phy not in messages.index:
            out.append((phy, "collision", "no message starts at this offset"))
        elif not real[phy]:
            m = messages.loc[phy]
            out.append((phy, "collision", f"the message is {m['topic']}#{m['keys'] or m['uniq_key']}"))
        elif not in_range[phy]:
            out.append((phy, "outside-time-range",
                        f"real store time {ms_with_clock(messages.loc[phy, 'store_timestamp'])} is outside "
                        f"[{ms_with_clock(begin)}, {ms_with_clock(end)}]"))
        else:
            out.append((phy, "ok", ""))
    for phy in truth["phy_offset"]:
        if phy in returned:
            continue
        if int(phy) not in entry_of:
            out.append((phy, "missed-not-visited", "no index entry points at it"))
            continue
        file_name, entry = entry_of[int(phy)]
        v = visits[file_name]
        ts = int(messages.loc[phy, "store_timestamp"])
        if v.action == "not-visited":
            out.append((phy, "missed-not-visited", f"file {v.name} was never reached (the walk stopped: {trace.stop})"))
        elif v.action == "not-time-matched":
            out.append((phy, "missed-file-skipped",
                        f"file {v.name} covers [{ms_with_clock(v.begin_timestamp)}, {ms_with_clock(v.end_timestamp)}], "
                        f"the message was stored at {ms_with_clock(ts)}"))
        else:
            step = steps_of[v.name].get(entry)
            walk = v.trace
            assert walk is not None     # a visited file has its walk
            if step is None:
                reason = "missed-max-num" if walk.stop == "max-num" else "missed-early-stop"
                out.append((phy, reason, f"the walk in {v.name} stopped first ({walk.stop})"))
            elif not step.time_match:
                out.append((phy, "missed-time", f"the index says {ms_with_clock(step.time_read)}, "
                                                f"the message was stored at {ms_with_clock(ts)}"))
            else:  # read and matched, yet not returned: only the room (max_num) can explain it
                out.append((phy, "missed-max-num", f"max_num {trace.max_num} reached"))
    return pd.DataFrame(out, columns=["phy_offset", "reason", "detail"])


class OneFileIndex:
    """An index folder of one file, for :func:`query_key`: the broker's selectPhyOffset on that
    file alone (no isTimeMatched check of the file's header range, max_num capped at
    `max_msgs_num_batch` as queryOffset caps it), recorded as a one-file
    :class:`~rmqlab.store.indexservice.DirectoryQueryTrace`. Cost: one broker walk of the file.

    >>> from rmqlab.lab.sample import sample_store
    >>> store = sample_store()
    >>> with store.index() as idx:
    ...     one = OneFileIndex(idx.files[-1], idx.max_msgs_num_batch)
    ...     q = query_key(one, store.read_at, "Orders", "USER_1")
    >>> len(q.trace.files), q.trace.files[0].action
    (1, 'searched')

    Parameters: `f`, an open :class:`~rmqlab.formats.indexfile.IndexFile`;
    `max_msgs_num_batch`, the broker's cap on max_num (64 by default).
    """

    def __init__(self, f: IndexFile, max_msgs_num_batch: int):
        self.files = [f]
        self.max_msgs_num_batch = max_msgs_num_batch

    def trace_query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> DirectoryQueryTrace:
        """The broker's walk of the one file for ``topic#key`` in [begin, end] (ms)."""
        f = self.files[0]
        h = f.header
        capped = min(int(max_num), self.max_msgs_num_batch)
        t = f.trace_query(index_key(topic, key), capped, begin, end)
        after = "max-num" if len(t.results) >= capped else "oldest-file"
        visit = FileVisit(0, f.path.name, h.begin_timestamp, h.end_timestamp, h.index_count, "searched",
                          after, t, list(t.results))
        return DirectoryQueryTrace(index_key(topic, key), max_num, capped, begin, end, [visit],
                                   QueryOffsetResult(list(t.results), h.end_timestamp, h.end_phy_offset),
                                   after)


def result_table(kq: KeyQuery, mode: str) -> pd.DataFrame:
    """The rows of `kq` in `mode` ("broker" or "verified"), each with the reason it differs.

    broker: ``rank`` (the order queryMessage returned: by CommitLog offset), ``phy_offset``, ``topic``, ``keys``,
    ``uniq_key``, ``store_time`` (the message's real store time, ISO with milliseconds),
    ``store_timestamp`` (ms), ``reason`` (:data:`REASONS` key: "ok", "collision",
    "outside-time-range") and ``detail`` (why, with the numbers; "" for "ok"). verified:
    ``broker_returned`` instead of ``rank``, and reasons "ok" or "missed-*". A broker offset
    where no message starts has empty message columns.
    Cost: O(rows).

    >>> from rmqlab.lab.sample import sample_store
    >>> rows = result_table(sample_store().explain_key("Orders", "ORDER_Aa0"), "broker")
    >>> sorted(set(rows["reason"]))                      # ORDER_BB0 shares its hash
    ['collision', 'ok']

    Raises ValueError for another `mode`.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    why = kq.diff.drop_duplicates("phy_offset").set_index("phy_offset")
    reasons = why["reason"]
    if mode == "broker":
        frame = kq.broker
        first = ("rank", frame["rank"].to_numpy())
        phy = np.asarray(kq.trace.result.phy_offsets, dtype=np.int64)
        phy = phy[query_message_order(phy)]   # kq.broker's rows
    else:
        frame = kq.verified
        first = ("broker_returned", frame["broker_returned"].to_numpy(bool))
        phy = frame["phy_offset"].to_numpy(np.int64)
    ts = frame["store_timestamp"]
    return pd.DataFrame({
        first[0]: first[1],
        "phy_offset": phy,
        "topic": frame["topic"].to_numpy(object),
        "keys": frame["keys"].to_numpy(object),
        "uniq_key": frame["uniq_key"].to_numpy(object),
        "store_time": [ms_to_iso(t) for t in ts],
        "store_timestamp": ts.astype("Int64").to_numpy(),
        "reason": reasons.reindex(phy).to_numpy(object),
        "detail": why["detail"].reindex(phy).to_numpy(object),
    })


def first_with_reason(candidates: Iterable[Any], reason: str,
                      query: Callable[[Any], KeyQuery]) -> tuple[Any, KeyQuery | None, Any]:
    """The first candidate message whose own query gives it `reason`: a search for a query that
    shows one way the broker's answer goes wrong. Cost: one `query` per candidate tried (a few
    ms each on the sample store), stopping at the first hit.

    >>> from rmqlab.analysis.keys import key_occurrences
    >>> from rmqlab.lab.sample import sample_store
    >>> store = sample_store()
    >>> occ = key_occurrences(store.messages())
    >>> twins = occ[(occ["topic"] == "Orders") & occ["key"].isin(["ORDER_Aa0", "ORDER_BB0"])]
    >>> m, q, row = first_with_reason(twins.itertuples(), "collision",
    ...                               lambda m: store.explain_key("Orders", "ORDER_Aa0"))
    >>> m.key, row.reason
    ('ORDER_BB0', 'collision')

    Parameters: `candidates`, objects with a ``phy_offset`` attribute (rows of
    ``DataFrame.itertuples()``), tried in order; `reason`, a key of :data:`REASONS`; `query`,
    the query to run for a candidate. Returns (candidate, its query, its row of the query's
    ``diff``), or (None, None, None) when no candidate gets `reason`.
    """
    for c in candidates:
        q = query(c)
        rows = q.diff[(q.diff["reason"] == reason) & (q.diff["phy_offset"] == c.phy_offset)]
        if len(rows):
            return c, q, rows.iloc[0]
    return None, None, None
