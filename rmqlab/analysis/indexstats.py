"""Statistics of index files and of the keys put into them: how full, how well hashed.

Two levels:

* **File level** (what an ``index/`` folder holds): :func:`file_stats`, :func:`chain_length_histogram`,
  :func:`longest_chains`, :func:`hottest_hashes`, :func:`directory_stats`, and :func:`file_report`
  (all of one file's figures from a single read). Each maps the file read-only with
  :meth:`rmqlab.formats.indexfile.IndexFile.open` and works on the NumPy views of its entries:
  no Python loop per entry. An index file stores no key strings, only their 31-bit hashes, so
  per file we can rank hashes, not keys.
* **Key level** (the rows the broker put, ``topic#key`` strings): :func:`hottest_keys` and
  :func:`true_collisions` (different key strings with the same stored index hash, which a key
  query cannot tell apart without reading the CommitLog).

Definitions used throughout (m = hash_slot_num, n = entries written):

* the slot of an entry is ``key_hash % m`` (key_hash is the stored, non-negative index hash);
  a slot's **chain length** is the number of entries in that slot, which for a sound file is
  the number of entries its chain walk (slot head, then ``prev_index``) visits;
* **occupancy** is the share of slots that are non-zero; **expected_occupancy** is what
  uniformly random hashes would give, ``1 - (1 - 1/m)**n``.

Bad input raises the typed errors of :meth:`IndexFile.open` (:class:`rmqlab.errors.GeometryError`,
:class:`~rmqlab.errors.TruncatedFileError`, :class:`~rmqlab.errors.CorruptIndexError`).

>>> import tempfile, datetime
>>> from rmqlab.store.indexservice import ExpandedKeys, bulk_build
>>> d = tempfile.mkdtemp()
>>> _ = bulk_build(ExpandedKeys(["T#Aa", "T#BB", "T#c", "T#Aa"], [0, 100, 200, 300],
...                             [1718000000000, 1718000001000, 1718000002000, 1718000004000]),
...                d, hash_slot_num=7, index_num=10, clock=lambda: 1718000000000,
...                tz=datetime.timezone.utc)
>>> s = directory_stats(d, hash_slot_num=7, index_num=10).iloc[0]
>>> int(s.entries), int(s.slots_used), int(s.max_chain_length), float(s.entries_per_second)
(4, 2, 3, 1.0)
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.formats.indexfile import IndexFile
from rmqlab.jvm.hashcode import index_hash_many
from rmqlab.tables.pool import Pool, check_jobs, default_jobs

__all__ = [
    "FILE_STATS_COLUMNS",
    "FileReport",
    "file_stats",
    "file_report",
    "chain_length_histogram",
    "longest_chains",
    "hottest_hashes",
    "directory_stats",
    "index_file_paths",
    "hottest_keys",
    "true_collisions",
    "expected_occupancy",
    "chain_length_theory",
    "chain_length_summary",
    "poisson_expected_slots",
    "uniform_chain_limit",
]

#: The keys of :func:`file_stats`'s dict, in order, with their kind ("str", "int" or "float").
FILE_STATS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("name", "str"),                  # file name (yyyyMMddHHmmssSSS)
    ("path", "str"),
    ("hash_slot_num", "int"),         # slots in the file
    ("index_num", "int"),             # entries in the file, entry 0 included
    ("entries", "int"),               # entries written (keys put): index_count - 1
    ("capacity_used", "float"),       # entries / (index_num - 1), 0..1
    ("slots_used", "int"),            # slots holding a non-zero value
    ("occupancy", "float"),           # slots_used / hash_slot_num, 0..1
    ("expected_occupancy", "float"),  # 1 - (1 - 1/hash_slot_num)**entries
    ("mean_chain_length", "float"),   # entries per non-empty slot (NaN if no entry)
    ("max_chain_length", "int"),      # entries in the fullest slot
    ("distinct_hashes", "int"),       # distinct stored key hashes
    ("begin_timestamp", "int"),       # header, ms since the epoch
    ("end_timestamp", "int"),         # header, ms since the epoch
    ("span_seconds", "float"),        # (end_timestamp - begin_timestamp) / 1000
    ("entries_per_second", "float"),  # entries / span_seconds; NaN when span_seconds <= 0
    ("begin_phy_offset", "int"),      # header, CommitLog bytes
    ("end_phy_offset", "int"),        # header, CommitLog bytes
    ("file_bytes", "int"),            # size of the file in bytes
)

_CHAIN_HIST_COLUMNS = ["chain_length", "slots"]
_LONGEST_COLUMNS = ["slot", "chain_length", "distinct_hashes"]


def expected_occupancy(hash_slot_num: int, entries: int) -> float:
    """Expected share of non-empty slots after `entries` uniformly random puts into
    `hash_slot_num` slots: ``1 - (1 - 1/m)**n``, computed without losing precision for large m.
    Cost: O(1).

    >>> round(expected_occupancy(5_000_000, 20_000_000), 4), expected_occupancy(8, 0)
    (0.9817, 0.0)
    """
    m, n = int(hash_slot_num), int(entries)
    if m <= 0:
        raise ValueError(f"hash_slot_num must be positive, got {m}")
    if n <= 0:
        return 0.0
    if m == 1:
        return 1.0
    return float(-math.expm1(n * math.log1p(-1.0 / m)))


def _check_theory_args(hash_slot_num: int, keys: int) -> tuple[int, int]:
    m, n = hash_slot_num, keys
    for name, v, low in (("hash_slot_num", m, 1), ("keys", n, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {v!r}")
        if v < low:
            raise ValueError(f"{name} must be >= {low}, got {v}")
    return int(m), int(n)


def chain_length_summary(hash_slot_num: int, keys: int) -> dict[str, float]:
    """What uniformly random hashes imply for a file of `hash_slot_num` slots (m) holding
    `keys` keys (n, distinct keys: one entry each). A full file holds ``index_num - 1`` keys.

    Keys of the dict (all exact for uniform hashes, no Poisson approximation):

    * ``load_factor``: n / m (keys per slot, λ);
    * ``empty_share``: share of slots with no entry, ``(1 - 1/m)**n`` (≈ e^-λ); and
      ``empty_slots``, m times that;
    * ``mean_occupied_chain``: mean chain length of a non-empty slot,
      ``n / (m * (1 - empty_share))`` (≈ λ / (1 - e^-λ)); NaN when n = 0;
    * ``entries_read_miss``: entries a query for a key that is not in the file reads: its slot
      is uniformly random and the walk reads the whole chain, so the mean is the mean chain
      length over all slots, exactly n / m;
    * ``entries_read_hit``: entries read to *reach* a stored key, averaged over the stored keys:
      1 + the number of newer entries in its slot; each of the other n - 1 keys shares the slot
      with probability 1/m and is newer with probability 1/2, so ``1 + (n - 1) / (2m)``;
      NaN when n = 0;
    * ``entries_read_hit_walk``: entries the broker's walk reads for a stored key when nothing
      stops it early (begin = 0, fewer than max_num matches): the whole chain of its slot,
      ``1 + (n - 1) / m`` (the key's own entry plus the others that share the slot); NaN when n = 0.

    The default configuration (5,000,000 slots, 20,000,000 entries) full: λ ≈ 4.0, 1.83 % of
    slots empty, mean occupied chain ≈ 4.07, a miss reads ≈ 4 entries, reaching a hit ≈ 3,
    and a hit's whole walk ≈ 5. Cost: O(1).

    >>> s = chain_length_summary(5_000_000, 19_999_999)
    >>> round(s["load_factor"], 4), round(100 * s["empty_share"], 2), round(s["mean_occupied_chain"], 3)
    (4.0, 1.83, 4.075)
    >>> round(s["entries_read_miss"], 3), round(s["entries_read_hit"], 3), round(s["entries_read_hit_walk"], 3)
    (4.0, 3.0, 5.0)
    """
    m, n = _check_theory_args(hash_slot_num, keys)
    occupancy = expected_occupancy(m, n)
    # (1 - 1/m)**n directly, not 1 - occupancy: that difference loses digits when few slots
    # stay empty
    empty = 1.0 if n == 0 else 0.0 if m == 1 else math.exp(n * math.log1p(-1.0 / m))
    nan = float("nan")
    return {
        "hash_slot_num": m,
        "keys": n,
        "load_factor": n / m,
        "empty_share": empty,
        "empty_slots": m * empty,
        "mean_occupied_chain": n / (m * occupancy) if n else nan,
        "entries_read_miss": n / m,
        "entries_read_hit": 1.0 + (n - 1) / (2 * m) if n else nan,
        "entries_read_hit_walk": 1.0 + (n - 1) / m if n else nan,
    }


def chain_length_theory(hash_slot_num: int, keys: int, max_length: int | None = None) -> pd.DataFrame:
    """Expected number of slots with each chain length when `keys` distinct keys with uniformly
    random hashes fill `hash_slot_num` slots: columns ``chain_length`` (0 .. max_length),
    ``slots`` (expected slots with exactly that many entries: m × Binomial(n, 1/m) pmf, exact
    for uniform hashes; for large m this is the Poisson(λ = n/m) law, and the two agree to
    about λ/m relative) and ``share`` (slots / m). Beyond ``max_length`` the remaining
    expectation is left out; the default, ``ceil(λ + 8 sqrt(λ) + 8)`` (capped at n), leaves
    less than 1e-6 slots for any file size RocketMQ allows. ``df.attrs`` holds
    :func:`chain_length_summary` (load factor, empty share, mean occupied chain, entries read
    per miss and per hit, with their definitions there).

    Computed in log space (a cumulative sum of logs), no overflow for n in the billions.
    Cost: O(max_length).

    >>> t = chain_length_theory(5_000_000, 19_999_999)
    >>> t.loc[:2, "share"].round(4).tolist(), round(t.attrs["load_factor"], 4)
    ([0.0183, 0.0733, 0.1465], 4.0)
    >>> chain_length_theory(4, 2).slots.tolist()        # 2 keys in 4 slots
    [2.25, 1.5, 0.25]
    """
    m, n = _check_theory_args(hash_slot_num, keys)
    lam = n / m
    if max_length is None:
        max_length = min(math.ceil(lam + 8 * math.sqrt(lam) + 8), n)
    elif isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)) or max_length < 0:
        raise ValueError(f"max_length must be a non-negative integer, got {max_length!r}")
    k = np.arange(int(max_length) + 1, dtype=np.int64)
    slots = np.zeros(len(k), dtype=np.float64)
    if m == 1:
        slots[k == n] = 1.0                          # every key in the one slot
    else:
        p = 1.0 / m
        kk = k[k <= n].astype(np.float64)
        # log pmf(k) = log C(n, k) + k log p + (n - k) log(1 - p), with log C(n, k) as a
        # running sum of log((n - j) / (j + 1))
        log_choose = np.concatenate([[0.0], np.cumsum(np.log(n - kk[:-1]) - np.log(kk[:-1] + 1))])
        slots[:len(kk)] = m * np.exp(log_choose + kk * math.log(p) + (n - kk) * math.log1p(-p))
    df = pd.DataFrame({"chain_length": k, "slots": slots, "share": slots / m})
    df.attrs.update(chain_length_summary(m, n))
    return df


def poisson_expected_slots(hash_slot_num: int, entries: int, max_length: int) -> np.ndarray:
    """Expected number of slots with 0..max_length entries when `entries` uniformly random
    hashes fall into `hash_slot_num` slots, in the Poisson approximation:
    ``hash_slot_num * exp(-λ) λ^k / k!`` with ``λ = entries / hash_slot_num``.
    Computed in log space (no overflow for large k or λ). Cost: O(max_length).

    >>> poisson_expected_slots(10, 10, 2).round(3).tolist()
    [3.679, 3.679, 1.839]
    """
    m, n = int(hash_slot_num), int(entries)
    k = np.arange(int(max_length) + 1, dtype=np.float64)
    if n <= 0:
        return np.where(k == 0, float(m), 0.0)
    lam = n / m
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(k[1:]))])      # log k!
    return m * np.exp(k * math.log(lam) - lam - log_fact)


def uniform_chain_limit(hash_slot_num: int, entries: int, expected_slots: float = 0.5) -> int:
    """The longest chain a uniform hash plausibly gives: the smallest length k such that fewer
    than `expected_slots` slots of the file are expected to hold more than k entries when
    `entries` uniformly random hashes fall into `hash_slot_num` slots (the binomial law of
    :func:`chain_length_theory`, Poisson with λ = entries / hash_slot_num for large files). A
    slot longer than this is not bad luck but a key put many times (a hot key) or keys whose
    hashes collide: the figures draw such slots in red, and the chain-length histogram stops
    its axis here. Cost: O(λ + sqrt(λ)).

    >>> uniform_chain_limit(1024, 8191), uniform_chain_limit(5_000_000, 19_999_999)
    (19, 18)
    >>> uniform_chain_limit(1, 5)                       # one slot: every entry in it
    5
    >>> uniform_chain_limit(8, 0)                       # nothing written: no chain at all
    0

    Raises ValueError for fewer than one slot, a negative entry count or `expected_slots` <= 0.
    """
    m, n = int(hash_slot_num), int(entries)
    if m < 1 or n < 0:
        raise ValueError(f"need hash_slot_num >= 1 and entries >= 0, got {m} and {n}")
    if not expected_slots > 0:
        raise ValueError(f"expected_slots must be positive, got {expected_slots}")
    if n == 0:
        return 0
    lam = n / m
    # far enough that the Poisson mass beyond is below 1e-30 of a slot for any file size
    top = min(math.ceil(lam + 12 * math.sqrt(lam) + 40), n)
    expected = chain_length_theory(m, n, top)["slots"].to_numpy()
    # slots expected to hold MORE than k entries, summed from the far end (no cancellation)
    more_than = np.concatenate([np.cumsum(expected[::-1])[::-1][1:], [0.0]])
    return int(np.argmax(more_than < expected_slots))


# ------------------------------------------------------------------------------ one file


class _FileArrays:
    """The arrays every file-level statistic is computed from, read once from the map.

    After construction the file is closed; only private copies of the header, the number of
    non-zero slots and the entries' key hashes are kept (4 bytes an entry).
    """

    def __init__(self, path: str | os.PathLike, hash_slot_num: int | None, index_num: int | None):
        path = Path(path)
        with IndexFile.open(path, hash_slot_num, index_num) as f:
            g = f.geometry
            self.path = path
            self.hash_slot_num = g.hash_slot_num
            self.index_num = g.index_num
            self.file_bytes = g.file_size
            self.header = f.header
            self.slots_used = int(np.count_nonzero(f.slots))
            # big-endian view -> native copy; entry i of this array is entry number i + 1
            self.key_hash = f.used_entries["key_hash"].astype(np.int64)
        self.entries = len(self.key_hash)
        self._lengths: np.ndarray | None = None
        self._unique: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def lengths(self) -> np.ndarray:
        """Chain length of every slot (int64, hash_slot_num values). Cost: O(entries + slots)."""
        if self._lengths is None:
            self._lengths = np.bincount(np.mod(self.key_hash, self.hash_slot_num),
                                        minlength=self.hash_slot_num).astype(np.int64)
        return self._lengths

    @property
    def unique(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct stored hashes (ascending) and how many entries each has. Cost: a sort."""
        if self._unique is None:
            values, counts = np.unique(self.key_hash, return_counts=True)
            self._unique = values.astype(np.int64), counts.astype(np.int64)
        return self._unique

    def stats(self) -> dict[str, Any]:
        h, m, n = self.header, self.hash_slot_num, self.entries
        lengths = self.lengths
        non_empty = int(np.count_nonzero(lengths))
        span = (h.end_timestamp - h.begin_timestamp) / 1000.0
        row = {
            "name": self.path.name,
            "path": str(self.path),
            "hash_slot_num": m,
            "index_num": self.index_num,
            "entries": n,
            "capacity_used": n / (self.index_num - 1) if self.index_num > 1 else math.nan,
            "slots_used": self.slots_used,
            "occupancy": self.slots_used / m,
            "expected_occupancy": expected_occupancy(m, n),
            "mean_chain_length": n / non_empty if non_empty else math.nan,
            "max_chain_length": int(lengths.max()),
            "distinct_hashes": len(self.unique[0]),
            "begin_timestamp": int(h.begin_timestamp),
            "end_timestamp": int(h.end_timestamp),
            "span_seconds": span,
            "entries_per_second": n / span if span > 0 else math.nan,
            "begin_phy_offset": int(h.begin_phy_offset),
            "end_phy_offset": int(h.end_phy_offset),
            "file_bytes": int(self.file_bytes),
        }
        return row

    def chain_length_histogram(self) -> pd.DataFrame:
        counts = np.bincount(self.lengths)
        lengths = np.flatnonzero(counts)
        if len(lengths) == 0 or lengths[0] != 0:
            lengths = np.concatenate([[0], lengths])
        return pd.DataFrame({"chain_length": lengths.astype(np.int64),
                             "slots": counts[lengths].astype(np.int64)})

    def longest_chains(self, top: int | None) -> pd.DataFrame:
        lengths = self.lengths
        used = np.flatnonzero(lengths)
        # a slot is a function of the hash, so distinct hashes per slot = distinct hashes
        # binned by their slot
        distinct = np.bincount(np.mod(self.unique[0], self.hash_slot_num),
                               minlength=self.hash_slot_num)
        order = np.lexsort((used, -lengths[used]))      # length desc, then slot asc
        pick = used[order if top is None else order[:max(int(top), 0)]]
        return pd.DataFrame({"slot": pick.astype(np.int64),
                             "chain_length": lengths[pick].astype(np.int64),
                             "distinct_hashes": distinct[pick].astype(np.int64)})

    def hottest_hashes(self, top: int | None) -> pd.DataFrame:
        values, counts = self.unique
        order = np.lexsort((values, -counts))           # entries desc, then hash asc
        if top is not None:
            order = order[:max(int(top), 0)]
        return pd.DataFrame({"key_hash": values[order], "entries": counts[order]})


@dataclass(frozen=True)
class FileReport:
    """All of one file's statistics, from one read: :func:`file_stats`'s dict and the frames of
    :func:`chain_length_histogram`, :func:`longest_chains` and :func:`hottest_hashes`."""

    stats: dict[str, Any]
    chain_lengths: pd.DataFrame
    longest_chains: pd.DataFrame
    hottest_hashes: pd.DataFrame


def file_report(path: str | os.PathLike, *, top: int | None = 10, hash_slot_num: int | None = None,
                index_num: int | None = None) -> FileReport:
    """Every file-level statistic of one index file, reading it once (what the Spark tasks of
    :mod:`rmqlab.spark.stats` call). `top` bounds the longest chains and hottest hashes
    (None = all). Geometry arguments as :func:`file_stats`. Cost: as :func:`file_stats`.

    >>> import tempfile, os
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> p = os.path.join(tempfile.mkdtemp(), "20240610061524062")
    >>> build_index_file(p, ["T#a", "T#a", "T#b"], [0, 1, 2], [1000, 2000, 3000],
    ...                  hash_slot_num=4, index_num=8)
    3
    >>> r = file_report(p, top=1, hash_slot_num=4, index_num=8)
    >>> r.stats["entries"], r.hottest_hashes.entries.tolist()
    (3, [2])
    """
    a = _FileArrays(path, hash_slot_num, index_num)
    return FileReport(a.stats(), a.chain_length_histogram(), a.longest_chains(top),
                      a.hottest_hashes(top))


def file_stats(path: str | os.PathLike, *, hash_slot_num: int | None = None,
               index_num: int | None = None) -> dict[str, Any]:
    """One row of statistics for the index file at `path` (keys and units: see
    :data:`FILE_STATS_COLUMNS`; timestamps in ms since the epoch, spans in seconds, offsets and
    sizes in bytes, ratios in 0..1).

    `hash_slot_num` / `index_num` are the broker's ``maxHashSlotNum`` / ``maxIndexNum``, passed
    to :meth:`IndexFile.open`; with neither only the default file size (420,000,040 bytes) is
    accepted. ``entries_per_second`` is NaN when the header's span is 0 (an empty file, or all
    keys in one millisecond) or negative; ``mean_chain_length`` is NaN for an empty file.

    Cost: one memory map; reads the slots once and the entries' key hashes once (a 4-byte copy
    each), then a bincount over slots and a sort of the hashes, O(slots + entries log entries).
    A file that is not an index file of that geometry raises the typed errors of
    :meth:`IndexFile.open`.

    >>> import tempfile, os
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> p = os.path.join(tempfile.mkdtemp(), "20240610061524062")
    >>> build_index_file(p, ["T#Aa", "T#BB", "T#c"], [0, 100, 200], [0, 500, 2000],
    ...                  hash_slot_num=8, index_num=5)
    3
    >>> s = file_stats(p, hash_slot_num=8, index_num=5)
    >>> s["entries"], s["capacity_used"], s["distinct_hashes"], s["max_chain_length"]
    (3, 0.75, 2, 2)
    >>> s["span_seconds"], s["entries_per_second"]
    (2.0, 1.5)
    """
    return _FileArrays(path, hash_slot_num, index_num).stats()


def chain_length_histogram(path: str | os.PathLike, *, hash_slot_num: int | None = None,
                           index_num: int | None = None) -> pd.DataFrame:
    """How many slots have each chain length: columns ``chain_length`` (entries in a slot) and
    ``slots`` (int64), ascending by length. Only lengths that occur are listed, except that
    length 0 (empty slots) always has a row, so ``slots`` sums to hash_slot_num and
    ``chain_length * slots`` sums to the entries written.

    Geometry arguments as :func:`file_stats`. Cost: one read of the key hashes and one bincount
    over the slots (no sort).

    >>> import tempfile, os
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> p = os.path.join(tempfile.mkdtemp(), "20240610061524062")
    >>> build_index_file(p, ["T#Aa", "T#BB", "T#c"], [0, 1, 2], [0, 0, 0],
    ...                  hash_slot_num=8, index_num=5)
    3
    >>> chain_length_histogram(p, hash_slot_num=8, index_num=5).values.tolist()
    [[0, 6], [1, 1], [2, 1]]
    """
    return _FileArrays(path, hash_slot_num, index_num).chain_length_histogram()


def longest_chains(path: str | os.PathLike, top: int | None = 10, *, hash_slot_num: int | None = None,
                   index_num: int | None = None) -> pd.DataFrame:
    """The `top` slots with the longest chains (None = every non-empty slot): columns ``slot``,
    ``chain_length`` (entries) and ``distinct_hashes`` (distinct stored hashes in that chain:
    more than one means keys of different hashes share the slot), sorted by chain_length
    descending, then slot. Empty slots are never listed.

    Geometry arguments as :func:`file_stats`. Cost: as :func:`file_stats` (a bincount and a sort
    of the hashes), plus O(hash_slot_num) for the ranking.

    >>> import tempfile, os
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> p = os.path.join(tempfile.mkdtemp(), "20240610061524062")
    >>> build_index_file(p, ["T#Aa", "T#BB", "T#c"], [0, 1, 2], [0, 0, 0],
    ...                  hash_slot_num=8, index_num=5)
    3
    >>> longest_chains(p, 1, hash_slot_num=8, index_num=5)[["chain_length", "distinct_hashes"]].values.tolist()
    [[2, 1]]
    """
    return _FileArrays(path, hash_slot_num, index_num).longest_chains(top)


def hottest_hashes(path: str | os.PathLike, top: int | None = 10, *, hash_slot_num: int | None = None,
                   index_num: int | None = None) -> pd.DataFrame:
    """The `top` stored key hashes with the most entries (None = all): columns ``key_hash``
    (the stored non-negative index hash) and ``entries``, sorted by entries descending, then
    key_hash. The file stores no key strings: one hash may stand for several keys (see
    :func:`true_collisions` for keys you hold).

    Geometry arguments as :func:`file_stats`. Cost: one read and one sort of the key hashes.

    >>> import tempfile, os
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> from rmqlab.jvm.hashcode import index_hash
    >>> p = os.path.join(tempfile.mkdtemp(), "20240610061524062")
    >>> build_index_file(p, ["T#Aa", "T#BB", "T#c"], [0, 1, 2], [0, 0, 0],
    ...                  hash_slot_num=8, index_num=5)
    3
    >>> h = hottest_hashes(p, 1, hash_slot_num=8, index_num=5)
    >>> h.entries.tolist(), h.key_hash.tolist() == [index_hash("T#Aa")]
    ([2], True)
    """
    return _FileArrays(path, hash_slot_num, index_num).hottest_hashes(top)


def _empty_stats_frame() -> pd.DataFrame:
    dtypes = {"str": object, "int": np.int64, "float": np.float64}
    return pd.DataFrame({c: pd.Series(dtype=dtypes[k]) for c, k in FILE_STATS_COLUMNS})


def index_file_paths(directory: str | os.PathLike) -> list[Path]:
    """The index files of a folder, oldest first: regular files with a 17-digit
    ``yyyyMMddHHmmssSSS`` name, sorted by name (other files are ignored, as the broker does).
    Cost: one directory listing.

    >>> import tempfile
    >>> index_file_paths(tempfile.mkdtemp())
    []
    """
    from rmqlab.store.indexservice import is_index_file_name

    directory = Path(directory)
    if not directory.is_dir():
        raise NotADirectoryError(f"{directory}: not a directory")
    return sorted((p for p in directory.iterdir() if is_index_file_name(p.name) and p.is_file()),
                  key=lambda p: p.name)


def directory_stats(directory: str | os.PathLike, *, hash_slot_num: int | None = None,
                    index_num: int | None = None, jobs: int | None = None) -> pd.DataFrame:
    """:func:`file_stats` of every index file in `directory`, one row each, oldest first
    (files picked and ordered by :func:`index_file_paths`). An empty folder gives an empty frame
    with the same columns. Geometry arguments as :func:`file_stats` (the same for every file).
    `jobs`: processes the files are spread over, a file each, the rows taken back in file order
    (the same frame with any `jobs`); None: :func:`~rmqlab.tables.pool.default_jobs` of the
    files (the usable cores, at most one a file, 1 under 256 MiB: two default-size files and
    more run in workers); 1: this process. Cost: the sum of the files' :func:`file_stats`,
    over `jobs` cores; the first bad file raises its typed error (after the files before it).

    >>> import tempfile
    >>> list(directory_stats(tempfile.mkdtemp()).columns[:3])
    ['name', 'path', 'hash_slot_num']
    """
    paths = index_file_paths(directory)
    check_jobs(jobs)
    if jobs is None:
        jobs = default_jobs(len(paths), sum(os.path.getsize(p) for p in paths))
    with Pool(jobs, "directory_stats", preload=("rmqlab.analysis.indexstats",)) as pool:
        rows = list(pool.ordered(_file_stats, [(p, hash_slot_num, index_num) for p in paths]))
    if not rows:
        return _empty_stats_frame()
    return pd.DataFrame(rows, columns=[c for c, _ in FILE_STATS_COLUMNS])


def _file_stats(path, hash_slot_num: int | None, index_num: int | None) -> dict[str, Any]:
    """:func:`file_stats` as a unit of :func:`directory_stats`' pool (positional arguments)."""
    return file_stats(path, hash_slot_num=hash_slot_num, index_num=index_num)


# ------------------------------------------------------------------------------ keys


def _key_array(keys: Any):
    """The non-null values of the ``key`` column of `keys`, as a pyarrow large_string array."""
    import pyarrow as pa

    if isinstance(keys, (pa.Table, pa.RecordBatch)):
        col = keys.column("key")
    elif hasattr(keys, "columns") or isinstance(keys, dict):
        if "key" not in (keys.columns if hasattr(keys, "columns") else keys):
            raise ValueError("the table needs a 'key' column (topic#key strings)")
        col = keys["key"]
    else:
        raise TypeError(f"keys must be a pandas DataFrame, a pyarrow Table or a mapping with a "
                        f"'key' column, got {type(keys).__name__}")
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if not isinstance(col, pa.Array):
        col = pa.array(np.asarray(col, dtype=object), type=pa.large_string(), from_pandas=True)
    return col.cast(pa.large_string()).drop_null()


def _key_counts(keys: Any):
    """Distinct keys and their row counts, as a pyarrow Table (key, puts)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = _key_array(keys)
    vc = pc.value_counts(col)
    return pa.table({"key": vc.field("values").cast(pa.large_string()),
                     "puts": vc.field("counts").cast(pa.int64())})


def hottest_keys(keys: Any, top: int | None = 10) -> pd.DataFrame:
    """The `top` keys put most often (None = every key): columns ``key`` (the full
    ``topic#key`` string) and ``puts`` (rows with that key), sorted by puts descending, then key
    (by code point, the same as Spark's binary string order).

    `keys` is a pandas DataFrame, pyarrow Table or mapping with a ``key`` column, one row per
    put (other columns, such as ``phy_offset`` and ``store_timestamp``, are ignored); null keys
    are ignored. Cost: one hash aggregation and one sort of the distinct keys, in Arrow.

    >>> import pandas as pd
    >>> hottest_keys(pd.DataFrame({"key": ["T#b", "T#a", "T#b", "T#c", "T#a"]}), 2).values.tolist()
    [['T#a', 2], ['T#b', 2]]
    """
    t = _key_counts(keys).sort_by([("puts", "descending"), ("key", "ascending")])
    if top is not None:
        t = t.slice(0, max(int(top), 0))
    return pd.DataFrame({"key": np.asarray(t.column("key").to_pylist(), dtype=object),
                         "puts": t.column("puts").to_numpy().astype(np.int64)})


def true_collisions(keys: Any) -> pd.DataFrame:
    """Stored index hashes shared by different key strings: one row per such hash, columns
    ``key_hash`` (int64, :func:`rmqlab.jvm.hashcode.index_hash` of the keys), ``distinct_keys``,
    ``keys`` (the key strings, a sorted Python list) and ``puts`` (rows with any of them).
    Sorted by distinct_keys descending, then puts descending, then key_hash. A key query for
    one of these keys returns the others' offsets too (only the CommitLog tells them apart).

    `keys` as for :func:`hottest_keys`. Cost: one aggregation of the rows, one C hash of each
    distinct key, one sort of the distinct keys; no Python loop per key.

    >>> import pandas as pd
    >>> c = true_collisions(pd.DataFrame({"key": ["T#Aa", "T#BB", "T#Aa", "T#c"]}))
    >>> c[["distinct_keys", "keys", "puts"]].values.tolist()
    [[2, ['T#Aa', 'T#BB'], 3]]
    """
    import pyarrow as pa

    t = _key_counts(keys)
    hashes = index_hash_many(t.column("key")).astype(np.int64) if t.num_rows else np.zeros(0, np.int64)
    t = t.append_column("key_hash", pa.array(hashes, pa.int64()))
    t = t.sort_by([("key_hash", "ascending"), ("key", "ascending")])
    h = t.column("key_hash").to_numpy()
    puts = t.column("puts").to_numpy()
    # groups of equal hashes: starts of runs in the sorted hashes
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]]) if len(h) else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, len(h)])
    multi = sizes > 1
    g_start, g_size = starts[multi], sizes[multi]
    # row numbers of the members of those groups, group after group
    first_out = np.cumsum(g_size) - g_size
    rows = np.arange(int(g_size.sum())) + np.repeat(g_start - first_out, g_size)
    members = t.column("key").combine_chunks().take(pa.array(rows, pa.int64()))
    offsets = np.r_[0, np.cumsum(g_size)].astype(np.int32)
    key_lists = pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)), members)
    csum = np.r_[0, np.cumsum(puts, dtype=np.int64)]
    group_puts = csum[g_start + g_size] - csum[g_start]
    out = pd.DataFrame({"key_hash": h[g_start].astype(np.int64),
                        "distinct_keys": g_size.astype(np.int64),
                        "keys": pd.Series(key_lists.to_pylist(), dtype=object),
                        "puts": group_puts.astype(np.int64)})
    order = np.lexsort((out["key_hash"].to_numpy(), -out["puts"].to_numpy(),
                        -out["distinct_keys"].to_numpy()))
    return out.iloc[order].reset_index(drop=True)
