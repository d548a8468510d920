"""Measure a store the way the capacity model predicts it: the measured side of the validation.

:func:`measure_store` reads a store directory (read-only) and returns, under the names the
model's :class:`~rmqlab.capacity.model.Estimate` uses where the quantity is the same, what is
really there:

* **counts**: messages (CommitLog records), ConsumeQueue units, index keys (entries written),
  index files and how many are full, CommitLog and ConsumeQueue files;
* **bytes**: each part's bytes on disk (the files' real sizes: all three formats preallocate
  whole files) and bytes in use (CommitLog: max offset - min offset, blank file tails
  included; ConsumeQueue: 20 bytes a unit; index: header + slot table + the entries up to
  ``index_count``);
* **index files** (means over the *full* files, the steady state a long-running broker
  sees): keys a file, time span a file (header ``end - begin``, seconds), slot occupancy
  (mean of the files) and mean chain length (pooled: their entries / their used slots), from
  :func:`rmqlab.analysis.indexstats.file_stats`;
* **look-up cost**: entries a chain walk reads, by real walks in the index files
  (:meth:`IndexFile.select_phy_offsets_many`, the same walk as
  :meth:`IndexFile.trace_query`, in C), for a hit and for a miss, with the broker's
  ``begin = 0, end = Long.MAX_VALUE``:

  - *miss*: a key that is not in the file, whose hash falls in a uniformly random slot. One
    walk per slot, with a hash that no entry of the file holds, so the mean is exact, not
    sampled (for a sound file it equals entries / slots, the load factor);
  - *hit*: a stored key, walked with the broker's maxNum cut and (``*_whole_chain``)
    without it; two weightings, ``entries_read_hit`` over the file's distinct keys
    (each key looked up once) and ``entries_read_hit_by_entry`` over its entries (the key of
    a random stored message). Keys with one stored hash walk alike (the broker compares
    hashes only), so each distinct hash is walked once and weighted by its keys or entries.
    With `queries` set and more distinct hashes than that, a uniform sample of them is walked
    (``hit_hashes_walked`` says how many): for a quick look only, since the hit walk is
    heavy-tailed (a key that shares a hot key's slot reads its whole chain) and a sample of keys
    reads its mean low in most draws; the capacity validation walks every key;

* **hot-key truncation** (:func:`truncation_share`): the share of directory-level key queries
  over a time window that the broker cuts at ``maxNum``: more entries match key and window
  than it returns.

The realised inputs (mean body / properties / topic bytes, keys a message, distinct keys,
the store's time span) are measured too, under ``input_*`` names, to show how far one random
store strays from the workload it was drawn from. A validation must not feed them to the
model: the model's counts would then equal the store's by construction. The spread of one
message's index keys and record bytes (``*_var``, population variances) gives the standard
error of the store's totals, for the tolerance of a model that predicts them from means.

Cost: one columnar read of the CommitLog without bodies, the index keys expanded and hashed
once (Arrow and NumPy, in C), then per index file a bincount and walks in C of about
``slots + distinct hashes`` look-ups: a few seconds for a store of a few million keys.

>>> import tempfile
>>> from rmqlab.lab.generate import generate_store
>>> from rmqlab.lab.workload import Workload
>>> s = generate_store(tempfile.mkdtemp(), Workload(messages=2000, seed=1),
...                    commitlog_file_size=1 << 20, hash_slot_num=100, index_num=400)
>>> m = measure_store(s)
>>> m["messages"], m["index_files"], m["full_index_files"], m["keys_per_index_file"]
(2000, 10, 9, 399.0)
>>> round(m["entries_read_miss"], 9) == round(m["load_factor"], 9) == 3.99
True
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.analysis.indexstats import file_stats
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.indexfile import ENTRY
from rmqlab.jvm.hashcode import index_hash_many
from rmqlab.jvm.longs import LONG_MAX
from rmqlab.store.indexservice import ExpandedKeys, expand_columns

__all__ = ["measure_store", "index_file_measurements", "truncation_share", "stored_index_keys"]

#: Columns of :func:`index_file_measurements` beyond :data:`rmqlab.analysis.indexstats.FILE_STATS_COLUMNS`.
WALK_COLUMNS = ("full", "first_row", "bytes_in_use", "entries_read_miss", "entries_read_hit",
                "entries_read_hit_by_entry", "entries_read_hit_whole_chain", "entries_read_hit_whole_chain_sd",
                "hit_hashes_walked",
                "distinct_keys")
_NO_CAP = 2**31 - 1     # a result cap no walk reaches


def _file_bytes(folder: Path) -> tuple[int, int]:
    """(number of files, their total size in bytes) under `folder`, recursively."""
    count = size = 0
    if folder.is_dir():
        for dirpath, _, names in os.walk(folder):
            for n in names:
                count += 1
                size += os.stat(os.path.join(dirpath, n)).st_size
    return count, size


def _record_overhead(msgs: pd.DataFrame) -> np.ndarray:
    """Bytes of each CommitLog record that are neither body, topic nor properties
    (:func:`rmqlab.formats.commitlog.message_length` of empty fields, vectorized)."""
    if msgs.empty:
        return np.zeros(0, np.int64)
    sys_flag = msgs["sys_flag"].to_numpy(np.int64)
    version = msgs["version"].to_numpy(np.int64)
    v6 = cl.message_length(0, 0, 0, cl.BORNHOST_V6_FLAG) - cl.message_length(0, 0, 0)
    v2 = cl.message_length(0, 0, 0, version=2) - cl.message_length(0, 0, 0)
    return (cl.message_length(0, 0, 0) + v2 * (version == 2) + v6 * ((sys_flag & cl.BORNHOST_V6_FLAG) != 0)
            + v6 * ((sys_flag & cl.STOREHOSTADDRESS_V6_FLAG) != 0))


def _distinct(keys) -> Any:
    """The distinct strings of a pyarrow string array or a sequence of str (in C for Arrow)."""
    if hasattr(keys, "type"):
        import pyarrow.compute as pc

        return pc.unique(keys)
    return pd.unique(np.asarray(keys, dtype=object))


def stored_index_keys(store) -> ExpandedKeys:
    """The rows the store's index holds, in the order they were put (``topic#key`` strings,
    offsets, store times), re-derived from the CommitLog as the broker's buildIndex derives
    them (:func:`rmqlab.store.indexservice.expand_columns`). Cost: one columnar read of the
    CommitLog without bodies."""
    msgs = store.messages()
    if msgs.empty:
        return ExpandedKeys([], np.zeros(0, np.int64), np.zeros(0, np.int64))
    return expand_columns(msgs)


def _absent_hashes(stored: np.ndarray, hash_slot_num: int) -> np.ndarray:
    """One non-negative int32 hash per slot (hash % m == slot) that no stored entry holds, so
    a walk from it is a miss that reads the slot's whole chain."""
    m = int(hash_slot_num)
    slots = np.arange(m, dtype=np.int64)
    stored_set = np.unique(stored)
    out = slots.copy()
    pending = np.isin(out, stored_set)
    step = 1
    while pending.any():
        # the next candidate with the same residue; the slot table is far smaller than the
        # 2^31 hash range, so a free one comes within a few steps
        out[pending] = slots[pending] + m * step
        if (out > np.iinfo(np.int32).max).any():
            raise ValueError("no free hash left in a slot: every hash of a residue is stored")
        pending = np.isin(out, stored_set)
        step += 1
    return out.astype(np.int32)


def _walk_file(f, stored_hash: np.ndarray, keys_of_file, max_num: int, queries: int | None,
               rng: np.random.Generator) -> dict[str, float]:
    m = f.geometry.hash_slot_num
    miss = f.select_phy_offsets_many(None, max_num, 0, LONG_MAX,
                                     hashes=_absent_hashes(stored_hash, m))
    out: dict[str, float] = {"entries_read_miss": float(np.mean(miss.entries_read))}
    n = len(stored_hash)
    if n == 0:
        out.update(entries_read_hit=math.nan, entries_read_hit_by_entry=math.nan,
                   entries_read_hit_whole_chain=math.nan, entries_read_hit_whole_chain_sd=math.nan,
                   hit_hashes_walked=0, distinct_keys=0)
        return out
    values, entries_per_hash = np.unique(stored_hash, return_counts=True)
    # distinct key strings per stored hash: true collisions (two keys, one hash) walk alike
    distinct_keys = _distinct(keys_of_file)
    key_hashes = index_hash_many(distinct_keys)
    keys_per_hash = np.bincount(np.searchsorted(values, key_hashes), minlength=len(values))
    pick = np.arange(len(values))
    if queries is not None and len(values) > queries:
        pick = np.sort(rng.choice(len(values), size=int(queries), replace=False))
    hit = f.select_phy_offsets_many(None, max_num, 0, LONG_MAX,
                                    hashes=values[pick].astype(np.int32))
    read = hit.entries_read.astype(np.float64)
    out["entries_read_hit"] = float(np.average(read, weights=keys_per_hash[pick]))
    out["entries_read_hit_by_entry"] = float(np.average(read, weights=entries_per_hash[pick]))
    # the same keys without the maxNum cut: the whole chain of the key's slot
    whole = f.select_phy_offsets_many(None, _NO_CAP, 0, LONG_MAX, hashes=values[pick].astype(np.int32))
    whole_read = whole.entries_read.astype(np.float64)
    mean_whole = float(np.average(whole_read, weights=keys_per_hash[pick]))
    out["entries_read_hit_whole_chain"] = mean_whole
    # spread of one key's walk, for the standard error of a mean over sampled keys
    out["entries_read_hit_whole_chain_sd"] = float(np.sqrt(np.average((whole_read - mean_whole) ** 2,
                                                                      weights=keys_per_hash[pick])))
    out["hit_hashes_walked"] = len(pick)
    out["distinct_keys"] = len(distinct_keys)
    return out


def index_file_measurements(store, *, queries: int | None = None, seed: int = 0,
                            max_num: int | None = None, keys: ExpandedKeys | None = None) -> pd.DataFrame:
    """One row per index file of `store`, oldest first: :func:`rmqlab.analysis.indexstats.file_stats`'s
    columns plus ``full`` (entries == index_num - 1), ``first_row`` (the row of
    :func:`stored_index_keys` the file starts at), ``bytes_in_use`` and the walk means
    (``entries_read_*``, see the module docstring; entries a look-up reads).

    `queries` caps the hit walks per file (None = every distinct stored hash: exact);
    `max_num` is the walk's result cap (default the store's maxMsgsNumBatch, 64); `keys` are
    the stored index rows if already at hand. Checks that the files hold exactly the hashes of
    the keys the CommitLog implies, in order, and raises ValueError naming the first file
    that does not (a store whose index was not built from its whole CommitLog).
    Cost: see the module docstring.
    """
    max_num = store.max_msgs_num_batch if max_num is None else int(max_num)
    if queries is not None and int(queries) < 1:
        raise ValueError(f"queries must be >= 1 or None, got {queries}")
    keys = stored_index_keys(store) if keys is None else keys
    all_hashes = index_hash_many(keys.keys) if len(keys) else np.zeros(0, np.int32)
    rng = np.random.default_rng(seed)
    rows = []
    row = 0
    with store.index() as idx:
        for f in idx.files:
            stats = file_stats(f.path, hash_slot_num=f.geometry.hash_slot_num,
                               index_num=f.geometry.index_num)
            stored = f.used_entries["key_hash"].astype(np.int32)
            n = len(stored)
            if not np.array_equal(stored, all_hashes[row:row + n]):
                raise ValueError(f"index file {f.path.name}: its {n} entries are not the hashes of "
                                 f"index rows {row}..{row + n} re-derived from the CommitLog "
                                 "(was the index built from the whole CommitLog?)")
            g = f.geometry
            stats.update(full=n == g.index_num - 1, first_row=row,
                         bytes_in_use=g.entries_offset + ENTRY.size * int(f.header.index_count))
            stats.update(_walk_file(f, stored, keys.keys[row:row + n] if n else [],
                                    max_num, queries, rng))
            rows.append(stats)
            row += n
    if row != len(keys):
        raise ValueError(f"the index holds {row} entries but the CommitLog implies {len(keys)} index rows")
    return pd.DataFrame(rows)


def stored_times_of_hash(f, key_hash: int) -> np.ndarray:
    """Stored times (ms: begin_timestamp + time_diff x 1000, as the broker reads them) of the
    entries of file `f` whose key hash is `key_hash`, in entry order."""
    e = f.used_entries
    td = e["time_diff"][e["key_hash"] == key_hash].astype(np.int64)
    return f.header.begin_timestamp + td * 1000


def _entry_times_ascend(f) -> bool:
    """True if the stored times never decrease in entry order: then every walk, which reads
    newest first and stops at the first entry older than the window, has passed every entry
    of the window before it stops, and the matches are exactly the entries of the key's hash
    whose stored time falls in the window."""
    td = f.used_entries["time_diff"]
    return bool(len(td) < 2 or (np.diff(td.astype(np.int64)) >= 0).all())


def truncation_share(store, keys: Sequence[str], *, window_ms: int, queries: int = 1000,
                     weights: Sequence[float] | None = None, seed: int = 0,
                     max_num: int | None = None, span: tuple[int, int] | None = None,
                     verify: int = 20) -> dict[str, Any]:
    """Share of key queries the broker cuts at `max_num`: draw `queries` (full key, window)
    pairs, the key from `keys` (``topic#key`` strings; by `weights` if given, else uniformly)
    and the window ``[begin, begin + window_ms]`` with begin uniform over `span` (default: the
    index's first to last store time, minus the window), and count the queries for which the
    index files hold more than `max_num` entries of that key's hash whose stored time falls in
    the window (the broker returns `max_num` of them and drops the rest).

    What the broker would find is counted two ways. Where every index file's stored times
    ascend in entry order (any store written in arrival order with a clock that never steps
    back), a query's matches are the entries of its hash whose stored time is in the window:
    one scan of each file's entries per key, then a binary search per query, so 100,000
    queries cost about as much as one. Otherwise every query is a real walk. The first
    `verify` queries are always also walked for real (:meth:`IndexFile.select_phy_offsets_many`
    with no cap, in every file whose time range touches the window) and must agree; a
    disagreement raises RuntimeError naming the query.

    >>> import tempfile
    >>> from rmqlab.lab.generate import generate_store
    >>> from rmqlab.lab.workload import Workload
    >>> s = generate_store(tempfile.mkdtemp(), Workload(messages=3000, seed=2, hot_key_fraction=0.9,
    ...                    hot_keys=5), commitlog_file_size=1 << 20, hash_slot_num=100, index_num=400)
    >>> r = truncation_share(s, ["TopicTest#USER_1"], window_ms=1000, queries=500, max_num=350)
    >>> r["method"], r["walked"], round(r["matches_mean"]), r["share"]
    ('scan', 20, 357, 0.516)

    Returns ``queries``, ``cut``, ``share`` (cut / queries), ``matches_mean`` and
    ``matches_var`` (entries matched per query, over the queries), ``walked`` (queries
    walked for real) and ``method`` ("scan" or "walk").
    """
    max_num = store.max_msgs_num_batch if max_num is None else int(max_num)
    if window_ms <= 0:
        raise ValueError(f"window_ms must be > 0, got {window_ms}")
    if queries < 1:
        raise ValueError(f"queries must be >= 1, got {queries}")
    if verify < 0:
        raise ValueError(f"verify must be >= 0, got {verify}")
    if len(keys) == 0:
        raise ValueError("keys must name at least one key")
    rng = np.random.default_rng(seed)
    p = None
    if weights is not None:
        p = np.asarray(weights, dtype=np.float64)
        if len(p) != len(keys) or (p < 0).any() or p.sum() <= 0:
            raise ValueError("weights: one non-negative weight per key, not all 0")
        p = p / p.sum()
    queries = int(queries)
    which = rng.choice(len(keys), size=queries, p=p)
    hashes = index_hash_many(list(keys))
    with store.index() as idx:
        files = idx.files
        if span is None:
            first = min((f.header.begin_timestamp for f in files), default=0)
            last = max((f.header.end_timestamp for f in files), default=0)
            span = (first, max(first, last - int(window_ms)))
        begins = rng.integers(span[0], span[1] + 1, size=queries)
        ends = begins + int(window_ms)

        def walked(q: int) -> int:
            b, e = int(begins[q]), int(ends[q])
            h = hashes[which[q]:which[q] + 1]
            return sum(int(f.select_phy_offsets_many(None, _NO_CAP, b, e, hashes=h).counts()[0])
                       for f in files if f.is_time_matched(b, e))

        method = "scan" if all(_entry_times_ascend(f) for f in files) else "walk"
        if method == "scan":
            found = np.zeros(queries, np.int64)
            for j, h in enumerate(hashes):
                times = np.sort(np.concatenate([stored_times_of_hash(f, int(h)) for f in files]
                                               or [np.zeros(0, np.int64)]))
                mine = which == j
                found[mine] = (np.searchsorted(times, ends[mine], side="right")
                               - np.searchsorted(times, begins[mine], side="left"))
            checked = min(verify, queries)
            for q in range(checked):
                w = walked(q)
                if w != found[q]:
                    raise RuntimeError(
                        f"query {q} ({keys[which[q]]!r}, window [{begins[q]}, {ends[q]}]): the broker's walks "
                        f"find {w} entries but the stored times hold {found[q]}")
        else:
            found = np.array([walked(q) for q in range(queries)], np.int64)
            checked = queries
    cut = int((found > max_num).sum())
    return {"queries": queries, "cut": cut, "share": cut / queries, "matches_mean": float(found.mean()),
            "matches_var": float(found.var(ddof=1)) if queries > 1 else 0.0, "walked": int(checked),
            "method": method}


def _keys_per_message(keys: ExpandedKeys, messages: int) -> np.ndarray:
    """Index rows of each message (UNIQ_KEY and KEYS tokens), int64 per message."""
    if keys.message_index is None:
        raise ValueError("the expanded keys do not say which message each row came from")
    return np.bincount(keys.message_index, minlength=messages).astype(np.int64)


def measure_store(store, *, queries: int | None = None, seed: int = 0,
                  max_num: int | None = None) -> dict[str, Any]:
    """The measured counterparts of the capacity model's outputs for `store` (a
    :class:`rmqlab.store.directory.Store`), as a flat dict. Units are in the names or: counts, bytes,
    seconds, entries. Read-only. Means over index files are over the full ones only (NaN
    if none is full). `queries`, `max_num`: see :func:`index_file_measurements`.

    ``load_factor`` is keys a full file / hash_slot_num. The ``input_*`` entries are what a
    validation feeds the model (see the module docstring). Per-file rows are in
    ``result["files"]`` (a DataFrame). Cost: see the module docstring.
    """
    msgs = store.messages()
    keys = expand_columns(msgs) if len(msgs) else ExpandedKeys([], np.zeros(0, np.int64), np.zeros(0, np.int64))
    files = index_file_measurements(store, queries=queries, seed=seed, max_num=max_num, keys=keys)
    full = files[files["full"]] if len(files) else files

    cl_files, cl_disk = _file_bytes(store.commitlog_dir)
    cq_files, cq_disk = _file_bytes(store.consumequeue_dir)
    total_size = msgs["total_size"].to_numpy(np.int64) if len(msgs) else np.zeros(0, np.int64)
    topic_bytes = (msgs["topic"].str.encode("utf-8").str.len().to_numpy(np.int64)
                   if len(msgs) else np.zeros(0, np.int64))
    prop_bytes = (msgs["properties"].str.encode("utf-8").str.len().to_numpy(np.int64)
                  if len(msgs) else np.zeros(0, np.int64))
    body_bytes = total_size - _record_overhead(msgs) - topic_bytes - prop_bytes
    first_ts = int(msgs["store_timestamp"].min()) if len(msgs) else 0
    last_ts = int(msgs["store_timestamp"].max()) if len(msgs) else 0

    def full_mean(col: str) -> float:
        return float(full[col].mean()) if len(full) else math.nan

    index_keys = int(files["entries"].sum()) if len(files) else 0
    keyed = (msgs["keys"].fillna("").str.strip(" ").str.len() > 0).to_numpy() if len(msgs) else np.zeros(0, bool)
    with_uniq = int(msgs["uniq_key"].notna().sum()) if len(msgs) else 0
    per_queue = {f"{t}/{q}": cq.read_queue_info(cq.queue_dir(store.root, t, q), store.consume_queue_file_size).count
                 for t, q in store.queues()}
    out: dict[str, Any] = {
        "messages": int(len(msgs)),
        "index_keys": index_keys,
        "index_files": int(len(files)),
        "full_index_files": int(len(full)),
        "commitlog_files": cl_files,
        "consume_queue_files": cq_files,
        "consume_queue_units": int(sum(per_queue.values())),
        "commitlog_disk_bytes": cl_disk,
        "commitlog_bytes_in_use": (int(cl.max_offset(store.commitlog_dir) - cl.min_offset(store.commitlog_dir))
                                   if len(msgs) else 0),
        "commitlog_record_bytes": int(total_size.sum()),
        "consume_queue_disk_bytes": cq_disk,
        "consume_queue_bytes_in_use": int(sum(per_queue.values())) * cq.UNIT_SIZE,
        "index_disk_bytes": int(files["file_bytes"].sum()) if len(files) else 0,
        "index_bytes_in_use": int(files["bytes_in_use"].sum()) if len(files) else 0,
        "keys_per_index_file": full_mean("entries"),
        "index_file_span_seconds": full_mean("span_seconds"),
        "load_factor": full_mean("entries") / store.hash_slot_num if len(full) else math.nan,
        "occupancy": full_mean("occupancy"),
        # pooled (entries / used slots over all full files), the ratio the model gives for one file
        "mean_chain_length": (float(full["entries"].sum() / full["slots_used"].sum()) if len(full)
                              else math.nan),
        "max_chain_length": int(full["max_chain_length"].max()) if len(full) else 0,
        "entries_read_hit": full_mean("entries_read_hit"),
        "entries_read_hit_by_entry": full_mean("entries_read_hit_by_entry"),
        "entries_read_hit_whole_chain": full_mean("entries_read_hit_whole_chain"),
        "entries_read_miss": full_mean("entries_read_miss"),
        "index_keys_per_message_var": (float(np.var(_keys_per_message(keys, len(msgs)))) if len(msgs)
                                       else math.nan),
        "commitlog_record_bytes_var": float(total_size.var()) if len(msgs) else math.nan,
        "input_body_bytes_mean": float(body_bytes.mean()) if len(msgs) else math.nan,
        "input_properties_bytes_mean": float(prop_bytes.mean()) if len(msgs) else math.nan,
        "input_topic_bytes_mean": float(topic_bytes.mean()) if len(msgs) else math.nan,
        "input_keys_per_message": index_keys / len(msgs) if len(msgs) else math.nan,
        "input_messages_with_uniq_key": with_uniq,
        "input_keyless_fraction": float(1.0 - keyed.mean()) if len(msgs) else math.nan,
        "input_tokens_per_keyed_message": ((index_keys - with_uniq) / int(keyed.sum())
                                           if keyed.any() else math.nan),
        "input_consume_queue_units_per_queue": per_queue,
        "input_distinct_keys": int(len(_distinct(keys.keys))) if len(keys) else 0,
        "input_span_seconds": (last_ts - first_ts) / 1000.0,
        "files": files,
    }
    return out
