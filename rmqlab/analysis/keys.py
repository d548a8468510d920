"""Which keys a store's messages carry, and where its index files keep them.

The broker indexes every message under its UNIQ_KEY and each of its KEYS; an index entry then
keeps only the 32-bit hash of ``topic#key`` and a time in whole seconds. These tables put the
two sides next to each other, from the messages (:func:`key_occurrences`, :func:`colliding_keys`,
:func:`suggested_keys`) and from the index files (:func:`index_entries`, :func:`key_entries`,
:func:`hash_matching_entries`), so that a broker answer can be checked against the messages it
should have found. Everything is in milliseconds since the epoch unless a name says otherwise.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rmqlab.formats.indexfile import IndexFile
from rmqlab.jvm.hashcode import index_hash, index_hash_many, index_key
from rmqlab.jvm.longs import LONG_MAX
from rmqlab.rules.dispatch import goes_to_index_many, key_tokens_many
from rmqlab.store.indexservice import IndexService

if TYPE_CHECKING:
    from rmqlab.store.keyquery import KeyQuery

__all__ = [
    "key_occurrences",
    "colliding_keys",
    "suggested_keys",
    "INDEX_ENTRY_COLUMNS",
    "index_entries",
    "key_entries",
    "hash_matching_entries",
    "MESSAGE_KINDS",
    "ENTRY_KINDS",
    "KeyTimeline",
    "key_timeline",
]

#: What became of each of a key's messages in a query (:attr:`KeyTimeline.messages`).
MESSAGE_KINDS = {
    "returned": "the broker returned it",
    "missed": "stored inside [begin, end], yet the broker did not return it",
    "outside": "stored outside [begin, end], not returned",
}
#: What each index entry with the key's hash is (:attr:`KeyTimeline.entries`).
ENTRY_KINDS = {
    "returned": "an entry of the key whose offset the broker returned",
    "not-returned": "an entry of the key the broker did not return",
    "collision": "an entry of another key with the same stored hash (returned or not)",
}

#: Columns of :func:`index_entries`.
INDEX_ENTRY_COLUMNS = ["file", "entry", "key_hash", "phy_offset", "stored_ms", "file_begin", "file_end",
                       "store_timestamp", "lag_ms"]


def key_occurrences(messages: pd.DataFrame) -> pd.DataFrame:
    """One row per (message, key) the broker's buildIndex indexes: the UNIQ_KEY and every
    non-empty KEYS token split on a space; rolled-back transactions are left out, as buildIndex
    leaves them out. Columns: topic, key, phy_offset, store_timestamp. A key given twice in one
    message counts once. Cost: O(messages), vectorized (pandas string split).

    >>> m = pd.DataFrame({"topic": ["T", "T"], "keys": ["a b", None], "uniq_key": ["U1", "U2"],
    ...                   "phy_offset": [0, 100], "store_timestamp": [5, 6], "sys_flag": [0, 0]})
    >>> key_occurrences(m)["key"].tolist()
    ['U1', 'U2', 'a', 'b']
    """
    cols = ["topic", "key", "phy_offset", "store_timestamp"]
    if messages.empty:
        return pd.DataFrame(columns=cols)
    import pyarrow.compute as pc

    m = messages[goes_to_index_many(messages["sys_flag"].to_numpy(np.int64))]
    base = m[["topic", "phy_offset", "store_timestamp"]]
    uniq = base.assign(key=m["uniq_key"])[m["uniq_key"].notna().to_numpy()]
    per_message = key_tokens_many(m["keys"])
    tokens = base.iloc[np.asarray(pc.list_parent_indices(per_message), dtype=np.int64)]
    tokens = tokens.assign(key=pc.list_flatten(per_message).to_numpy(zero_copy_only=False))
    out = pd.concat([uniq, tokens], ignore_index=True)[cols]
    return out.drop_duplicates(["phy_offset", "key"]).reset_index(drop=True)


def colliding_keys(occurrences: pd.DataFrame) -> pd.DataFrame:
    """The distinct ``topic#key`` strings of `occurrences` whose stored index hash is shared with
    another distinct ``topic#key``: the broker returns one for the other. Columns: topic, key,
    index_key, hash, shares_with (how many other keys have that hash); sorted by hash, then key.
    Cost: one vectorized String.hashCode over the distinct keys.

    >>> occ = pd.DataFrame({"topic": ["T"] * 3, "key": ["Aa", "BB", "c"]})
    >>> colliding_keys(occ)[["key", "shares_with"]].values.tolist()
    [['Aa', 1], ['BB', 1]]
    """
    cols = ["topic", "key", "index_key", "hash", "shares_with"]
    if occurrences.empty:
        return pd.DataFrame(columns=cols)
    distinct = occurrences[["topic", "key"]].drop_duplicates().reset_index(drop=True)
    full = (distinct["topic"] + "#" + distinct["key"]).to_numpy(dtype=object)
    distinct["index_key"] = full
    distinct["hash"] = index_hash_many(full).astype(np.int64)
    size = distinct.groupby("hash")["index_key"].transform("size")
    out = distinct[size > 1].assign(shares_with=(size[size > 1] - 1).astype(np.int64))
    return out.sort_values(["hash", "key"]).reset_index(drop=True)[cols]


def suggested_keys(occurrences: pd.DataFrame, collisions: pd.DataFrame, topic: str, count: int) -> list[str]:
    """The keys worth querying in `topic`: its `count` most frequent keys (messages per key, ties
    by key), then up to `count` of its keys whose hash another key shares; each key once.
    Cost: O(occurrences of the topic).

    >>> occ = pd.DataFrame({"topic": ["T"] * 4, "key": ["b", "b", "a", "Aa"]})
    >>> suggested_keys(occ, colliding_keys(occ.assign(key=["b", "b", "Aa", "BB"])), "T", 2)
    ['b', 'Aa', 'BB']

    Parameters: `occurrences` from :func:`key_occurrences`, `collisions` from
    :func:`colliding_keys`. Returns the keys, most frequent first.
    """
    occ = occurrences[occurrences["topic"] == topic]
    counts = occ.groupby("key").size().reset_index(name="messages")
    hot = counts.sort_values(["messages", "key"], ascending=[False, True])["key"].head(count)
    colliding = collisions[collisions["topic"] == topic]["key"]
    return list(dict.fromkeys([*hot, *colliding.head(count)]))


def index_entries(index: IndexService, messages: pd.DataFrame) -> pd.DataFrame:
    """Every written entry of every index file, next to the message it points at.

    ``stored_ms`` is the time the broker compares with a query range: the file's
    beginTimestamp plus the entry's whole seconds (``file_begin + time_diff * 1000``).
    ``store_timestamp`` is the real store time of the message at ``phy_offset`` (missing when
    no message of `messages` starts there) and ``lag_ms`` is ``store_timestamp - stored_ms``.
    Columns: :data:`INDEX_ENTRY_COLUMNS`; files in the index's order, entries in written order.
    Cost: O(entries); reads the entries region of every file.

    >>> from rmqlab.lab.sample import sample_store
    >>> store = sample_store()
    >>> with store.index() as idx:
    ...     entries = index_entries(idx, store.messages())
    >>> bool(entries["lag_ms"].between(0, 999).all())    # whole seconds after the file's begin
    True

    Parameters: `index` is an open :class:`~rmqlab.store.indexservice.IndexService`; `messages` has
    phy_offset and store_timestamp (:meth:`rmqlab.store.directory.Store.messages`).
    """
    frames = []
    for f in index.files:
        e = f.entries[1:f.header.index_count]    # entry 0 is never written
        frames.append(pd.DataFrame({
            "file": f.path.name, "entry": np.arange(1, f.header.index_count),
            # native byte order: pandas cannot index big-endian columns, and one file is not concatenated
            "key_hash": e["key_hash"].astype(np.int32), "phy_offset": e["phy_offset"].astype(np.int64),
            "stored_ms": f.header.begin_timestamp + e["time_diff"].astype(np.int64) * 1000,
            "file_begin": f.header.begin_timestamp, "file_end": f.header.end_timestamp}))
    if not frames:
        return pd.DataFrame(columns=INDEX_ENTRY_COLUMNS)
    entries = pd.concat(frames, ignore_index=True).merge(
        messages[["phy_offset", "store_timestamp"]], on="phy_offset", how="left")
    entries["lag_ms"] = entries["store_timestamp"] - entries["stored_ms"]
    return entries


def key_entries(entries: pd.DataFrame, occurrences: pd.DataFrame, topic: str, key: str) -> pd.DataFrame:
    """The index entries of ``topic#key`` (by stored hash) that point at its real messages: one
    per message, entries of other keys with the same hash left out. Cost: O(entries).

    >>> occ = pd.DataFrame({"topic": ["T", "T"], "key": ["Aa", "BB"], "phy_offset": [0, 100]})
    >>> ent = pd.DataFrame({"key_hash": [index_hash(index_key("T", "Aa"))] * 2, "phy_offset": [0, 100]})
    >>> key_entries(ent, occ, "T", "Aa")["phy_offset"].tolist()     # BB shares Aa's hash
    [0]

    Parameters: `entries` from :func:`index_entries`, `occurrences` from
    :func:`key_occurrences`. Returns rows of `entries`, in their order.
    """
    real = occurrences[(occurrences["topic"] == topic) & (occurrences["key"] == key)]
    same_hash = entries[entries["key_hash"] == index_hash(index_key(topic, key))]
    return same_hash.merge(real[["phy_offset"]], on="phy_offset").drop_duplicates("phy_offset")


def hash_matching_entries(files: Iterable[IndexFile], topic: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    """CommitLog offset and stored time (ms) of every entry of `files` whose hash matches
    ``topic#key``, found as the broker finds them: by walking the key's slot chain, whatever the
    time. Cost: one whole chain walk per file.

    >>> from rmqlab.lab.sample import sample_store
    >>> with sample_store().index() as idx:
    ...     phy, stored_ms = hash_matching_entries(idx.files, "Orders", "ORDER_Aa0")
    >>> len(phy) == len(stored_ms) > 0
    True

    Returns two int64 arrays of equal length: offsets and stored times, file by file, each
    file's chain newest first.
    """
    full_key = index_key(topic, key)
    phy, ms = [], []
    for f in files:
        walk = f.trace_query(full_key, 2**31 - 1, 0, LONG_MAX)
        for s in walk.steps:
            if s.hash_match:
                phy.append(s.phy_offset)
                ms.append(s.time_read)
    return np.asarray(phy, dtype=np.int64), np.asarray(ms, dtype=np.int64)


@dataclass
class KeyTimeline:
    """A key's messages and its index entries around one query, classified for the timeline.

    ``messages``: one row per message carrying the key (``phy_offset``, ``store_timestamp``,
    ``kind`` from :data:`MESSAGE_KINDS`), oldest first. ``entries``: one row per index entry
    whose stored hash is the key's (``phy_offset``, ``stored_ms``, ``message``: the row of
    ``messages`` it points at or -1, ``returned``, ``kind`` from :data:`ENTRY_KINDS`).
    ``begin`` / ``end``: the query's range (ms).
    """

    messages: pd.DataFrame
    entries: pd.DataFrame
    begin: int
    end: int

    def counts(self) -> dict[str, int]:
        """How many messages and entries of each kind."""
        m = self.messages["kind"].value_counts()
        e = self.entries["kind"].value_counts()
        return {**{f"messages {k}": int(m.get(k, 0)) for k in MESSAGE_KINDS},
                **{f"entries {k}": int(e.get(k, 0)) for k in ENTRY_KINDS}}


def key_timeline(kq: KeyQuery, occurrences: pd.DataFrame, files: Iterable[IndexFile]) -> KeyTimeline:
    """The key's messages and hash-matching entries in `files`, each marked by what the query
    `kq` did with it. Cost: :func:`hash_matching_entries` plus O(messages of the key).

    >>> from rmqlab.lab.sample import sample_store
    >>> store = sample_store()
    >>> occ = key_occurrences(store.messages())
    >>> q = store.explain_key("Orders", "ORDER_Aa0")
    >>> with store.index() as idx:
    ...     t = key_timeline(q, occ, idx.files)
    >>> t.counts()["entries collision"] == q.summary()["collision"] > 0     # ORDER_BB0's entries
    True

    Parameters: `kq` from :meth:`rmqlab.store.directory.Store.explain_key`, `occurrences` from
    :func:`key_occurrences` over the store's messages, `files` the index files the query could
    search (all of them, or the one it was limited to).
    """
    mine = occurrences[(occurrences["topic"] == kq.topic) & (occurrences["key"] == kq.key)]
    mine = (mine[["phy_offset", "store_timestamp"]].drop_duplicates("phy_offset")
            .sort_values(["store_timestamp", "phy_offset"], ignore_index=True))
    returned = np.asarray(kq.trace.result.phy_offsets, dtype=np.int64)
    phy = mine["phy_offset"].to_numpy(np.int64)
    ts = mine["store_timestamp"].to_numpy(np.int64)
    was_returned = np.isin(phy, returned)
    inside = (ts >= kq.begin) & (ts <= kq.end)
    messages = mine.assign(kind=np.where(was_returned, "returned", np.where(inside, "missed", "outside")))

    stored_phy, stored_ms = hash_matching_entries(files, kq.topic, kq.key)
    row_of = pd.Series(np.arange(len(phy)), index=phy)
    message = row_of.reindex(stored_phy).fillna(-1).to_numpy(np.int64)
    entry_returned = np.isin(stored_phy, returned)
    kind = np.where(message < 0, "collision", np.where(entry_returned, "returned", "not-returned"))
    entries = pd.DataFrame({"phy_offset": stored_phy, "stored_ms": stored_ms, "message": message,
                            "returned": entry_returned, "kind": kind})
    return KeyTimeline(messages, entries, int(kq.begin), int(kq.end))
