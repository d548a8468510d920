"""The capacity model: a :class:`~rmqlab.capacity.plan.Plan` in, an :class:`Estimate` out.

Units: time in seconds unless a name says hours/days/minutes, sizes in bytes, rates per second.
The equations (derivations in the docstrings of the functions named; summary in
rmqlab/capacity/README.md), with R = messages/s, k = index keys per message:

* k = [uniq_key] + (1 - keyless_fraction) x keys_per_message (buildIndex puts UNIQ_KEY, then
  every non-empty KEYS token); index keys/day = 86400 R k.
* A full index file holds C = index_num - 1 keys (entry 0 is never written:
  :attr:`Geometry.capacity`) and is ``40 + 4 hash_slot_num + 20 index_num`` bytes
  (:attr:`Geometry.file_size`); it fills in C / (R k) s, the span one file covers.
* A CommitLog record is ``MIN_MESSAGE_SIZE`` (91, v1 with IPv4 hosts) + body + topic +
  properties bytes; a file of F bytes takes ``floor((F - 8) / record)`` records (a record must
  leave 8 bytes for the end-of-file blank record); exact when all records have the mean size.
* Retention (:func:`retained_hours`): a file is deleted at a deletion pass once its last write
  is older than fileReservedTime; passes run only in the deleteWhen hours, so files live up to
  K = fileReservedTime + (longest gap between deletion hours) after their last write. ConsumeQueue
  and index files go when the CommitLog's minimum offset passes their last message, i.e. with
  the CommitLog file holding it: K + (hours one CommitLog file spans).
* Files on disk at the worst moment (:func:`files_on_disk`): ceil(V_K / per_file) + 1, V_K the
  most written in any window of K hours (the daily cycle makes some windows heavier:
  :func:`peak_window_messages`), + 1 the file being written.
* Slot occupancy and chains (:func:`sample_occupancy`): the real Java hash of keys generated as
  rmqlab.lab.workload generates them, on several full files at different positions of the key
  stream (or scaled ones with the same load factor), averaged; their spread is reported. The
  keys stream through: made, hashed and dropped a chunk at a time.
* Entries read per hit (:class:`OccupancySample`): the mean over every distinct key of a file
  of its slot's chain length, a heavy-tailed mean (the few keys that share a hot key's slot
  read its whole chain): only a mean over every key of a store's file measures it.
* Entries read per hit with the broker's maxNum cut (:func:`chain_lengths_from_keys`): a key
  with c entries in a chain of L reads L if c < M, else M (L + 1) / (c + 1).
* Hot-key truncation (:func:`poisson_tail`): a query names one ``topic#key``; matches of key
  rank r in a window W are Poisson(R x topic share x keyed tokens x hot share x Zipf share x W);
  the query is cut when they exceed maxMsgsNumBatch.
* Days to a disk threshold (:func:`days_to_reach`): the store fills from empty at b bytes/day
  growing by e^(γ t), keeping K days: solved in closed form.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from rmqlab.analysis.indexstats import chain_length_summary
from rmqlab.capacity.plan import POINTS, Interval, Plan
from rmqlab.formats.commitlog import END_FILE_MIN_BLANK_LENGTH, MIN_MESSAGE_SIZE
from rmqlab.formats.consumequeue import UNIT_SIZE
from rmqlab.formats.indexfile import DEFAULT_INDEX_NUM, Geometry
from rmqlab.formats.msgid import create_uniq_id
from rmqlab.jvm.hashcode import index_hash_many
from rmqlab.jvm.longs import INT_MAX
from rmqlab.rules.dispatch import index_keys_many

__all__ = [
    "check_configuration",
    "hours_to_fill",
    "Estimate",
    "OccupancySample",
    "SAMPLE_ENTRIES",
    "SAMPLE_FILES",
    "estimate",
    "monte_carlo",
    "monte_carlo_draws",
    "draw_percentiles",
    "chain_lengths_from_keys",
    "chain_lengths_from_hashes",
    "broker_walk_entries",
    "sample_index_keys",
    "sample_occupancy",
    "retained_hours",
    "peak_window_messages",
    "files_on_disk",
    "commitlog_records_per_file",
    "poisson_tail",
    "zipf_share",
    "zipf_distinct_keys",
    "uniform_occupancy_sd",
    "days_to_reach",
    "written",
]

_DAY = 86400.0
_MONTH_DAYS = 365.25 / 12
#: Entries of the largest index file the key sample simulates at full size; bigger files are
#: simulated with fewer slots at the same load factor (see :func:`sample_occupancy`), so the
#: sample's cost does not grow with the planned geometry.
SAMPLE_ENTRIES = 200_000
#: Simulated files the key sample averages (most and fewest): a file's occupancy depends on
#: which stretch of the key stream it holds (sequential order ids hash into runs that depend on
#: their digits), so one file from the stream's start is not representative.
#: :func:`sample_occupancy` takes up to the most files at full size within SAMPLE_ENTRIES, or
#: the fewest scaled ones when fewer than that fit.
SAMPLE_FILES = (16, 4)
#: Messages generated at a time by the streamed key sample (:func:`sample_occupancy`): the
#: workload generator's own block, about 40 MB of message rows without bodies.
_KEY_CHUNK_MESSAGES = 1 << 17
#: Hashes counted into the slot table at a time (the remainders' temporary stays small).
_HASH_BLOCK = 1 << 20

# Properties block parts (``NAME\x01value\x02``): the UNIQ_KEY pair of an IPv4 client (32 hex
# digits) and the KEYS pair without its value
_UNIQ_KEY_PROPERTY_BYTES = len("UNIQ_KEY") + 2 + len(create_uniq_id(bytes(4), 0, 0, 0, 0, start_time_ms=0))
_KEYS_PROPERTY_BYTES = len("KEYS") + 2


# ------------------------------------------------------------------------------ exact pieces


def check_configuration(hash_slot_num, index_num) -> tuple[int, int]:
    """`hash_slot_num` and `index_num` as ints, or ValueError/TypeError naming the bad one:
    both are Java ints (at most 2^31 - 1), slots at least 1 and entries at least 2 (entry 0 is
    never written, so index_num 1 holds no key)."""
    out = []
    for name, v, low in (("hash_slot_num", hash_slot_num, 1), ("index_num", index_num, 2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {v!r}")
        if not low <= v <= INT_MAX:
            raise ValueError(f"{name} must be in {low}..{INT_MAX}, got {v}")
        out.append(int(v))
    return out[0], out[1]


def hours_to_fill(keys_per_second, index_num: int = DEFAULT_INDEX_NUM):
    """Hours until one index file is full at a steady key rate: ``(index_num - 1) / rate / 3600``
    (a file holds index_num - 1 keys; every UNIQ_KEY and KEYS token is one key). Accepts a
    number or an array of rates (keys per second, >= 0; 0 never fills: infinity).
    Cost: O(rates).

    >>> round(hours_to_fill(1000), 3)          # the default file at 1,000 keys/s
    5.556
    >>> hours_to_fill([0, 1], index_num=3601).tolist()
    [inf, 1.0]
    """
    _, inum = check_configuration(1, index_num)
    rate = np.asarray(keys_per_second, dtype=np.float64)
    if np.any(~(rate >= 0)):
        raise ValueError("keys_per_second must be >= 0")
    with np.errstate(divide="ignore"):
        hours = (inum - 1) / rate / 3600.0
    return float(hours) if hours.ndim == 0 else hours


def commitlog_records_per_file(record_bytes, file_size: int):
    """Records of `record_bytes` each in one CommitLog file of `file_size` bytes:
    ``floor((file_size - 8) / record_bytes)``. doAppend moves a record to the next file unless
    8 bytes (the blank record's TOTALSIZE + MAGICCODE) stay free after it. Exact for records of
    equal size; with varied sizes the mean gives the count to within one record a file.

    >>> commitlog_records_per_file(40, 100)        # 40 + 40 + 8 <= 100 < 40 + 40 + 40
    2
    """
    return np.floor((file_size - END_FILE_MIN_BLANK_LENGTH) / np.asarray(record_bytes, float)).astype(np.int64) \
        if np.ndim(record_bytes) else int((file_size - END_FILE_MIN_BLANK_LENGTH) // record_bytes)


def retained_hours(file_reserved_time_hours, delete_when: Iterable[int]):
    """Longest time (hours) a CommitLog file survives after its last write: fileReservedTime
    plus the longest wait for a deletion hour.

    CleanCommitLogService deletes a file (never the newest) when last-modified +
    fileReservedTime has passed, but only while the clock is in one of the deleteWhen hours
    (or the disk is above diskMaxUsedSpaceRatio, which a plan under its thresholds never is).
    A file expiring just after the end of a deletion hour waits until the next deletion hour
    starts: the longest gap between the end of one listed hour and the start of the next.
    deleteWhen "04" -> 23 h; every hour listed -> 0.

    >>> [float(retained_hours(72, [4])), float(retained_hours(72, range(24))), float(retained_hours(48, [4, 16]))]
    [95.0, 72.0, 59.0]
    """
    hours = sorted(set(int(h) for h in delete_when))
    gaps = [((hours[(i + 1) % len(hours)] - (h + 1)) % 24) for i, h in enumerate(hours)]
    return np.asarray(file_reserved_time_hours, float) + float(max(gaps))


def peak_window_messages(rate, hours, amplitude: float = 0.0):
    """Most messages written in any window of `hours` at mean `rate` (messages/s) under the
    daily cycle r(t) = rate (1 + a cos(2π (t - t_peak) / 24 h)):
    ∫ over [u, u + K] = rate (K + a (24 h / 2π) [sin(2π(u + K - t_peak)/24h) - sin(2π(u - t_peak)/24h)])
    = rate (K + a (24 h / π) cos(...) sin(π K / 24 h)), whose maximum over u is
    ``rate x 3600 x (K + a (24/π) |sin(π K / 24)|)`` (K in hours). a = 0 for a flat profile.

    >>> float(peak_window_messages(1.0, 24.0, 0.5)), round(float(peak_window_messages(1.0, 12.0, 0.5)))
    (86400.0, 56951)
    """
    k = np.asarray(hours, float)
    return np.asarray(rate, float) * 3600.0 * (k + amplitude * (24.0 / math.pi) * np.abs(np.sin(math.pi * k / 24.0)))


def files_on_disk(units_in_window, units_per_file):
    """Files of `units_per_file` units on disk at the worst moment, when every file whose last
    unit fell in the retention window is kept: ``ceil(units_in_window / units_per_file) + 1``
    (files completed inside the window, at most the ceiling of the window's volume in files,
    plus the file being written, which is never deleted).

    >>> int(files_on_disk(10, 5)), int(files_on_disk(11, 5))
    (3, 4)
    """
    return np.ceil(np.asarray(units_in_window, float) / units_per_file).astype(np.int64) + 1


def poisson_tail(mean, k: int):
    """P(X > k) for X ~ Poisson(`mean`) (vectorized over `mean`): the chance a hot key has
    more than k = maxMsgsNumBatch matches in the query window, so that the broker's answer is
    cut at k. Exact sum in log space for k <= 5000; Wilson-Hilferty (P(X <= k) = P(χ²(2k+2) > 2 mean))
    above, accurate to ~1e-4.

    >>> round(float(poisson_tail(64.0, 64)), 4), float(poisson_tail(0.0, 64))
    (0.4668, 0.0)
    """
    mu = np.atleast_1d(np.asarray(mean, float))
    out = np.zeros(mu.shape)
    pos = mu > 0
    if k <= 5000:
        j = np.arange(k + 1, dtype=float)
        lgam = np.array([math.lgamma(x + 1) for x in j])
        logs = -mu[pos, None] + j[None, :] * np.log(mu[pos, None]) - lgam[None, :]
        top = logs.max(axis=1, keepdims=True)
        cdf = np.exp(top[:, 0]) * np.exp(logs - top).sum(axis=1)
        out[pos] = np.clip(1.0 - cdf, 0.0, 1.0)
    else:
        nu = 2.0 * (k + 1)
        z = ((2 * mu[pos] / nu) ** (1 / 3) - (1 - 2 / (9 * nu))) / math.sqrt(2 / (9 * nu))
        out[pos] = 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    return out if np.ndim(mean) else float(out[0])


def days_to_reach(target_bytes, bytes_per_day, keep_days, growth_per_day=0.0):
    """Days from an empty store until it holds `target_bytes`, when it writes
    b(t) = bytes_per_day x e^(γ t) bytes/day (γ = `growth_per_day`, continuous) and keeps the
    last `keep_days` (D = K) days of writes. Held bytes: S(t) = ∫_{max(0, t-K)}^{t} b(u) du:
    t <= K: S = b (e^(γt) - 1) / γ  ->  t = ln(1 + γ X / b) / γ
    t >  K: S = b e^(γt) (1 - e^(-γK)) / γ  ->  t = ln(γ X / (b (1 - e^(-γK)))) / γ
    (γ -> 0: S = b t then b K, so t = X / b if X <= b K, else never). "Never" is ``inf``;
    a target already reached (X <= 0) is 0. Vectorized.

    >>> days_to_reach(50, 10, 7), days_to_reach(100, 10, 7), round(days_to_reach(100, 10, 7, 0.01), 2)
    (5.0, inf, 39.15)
    """
    X, b, K, g = np.broadcast_arrays(*(np.asarray(v, float) for v in (target_bytes, bytes_per_day, keep_days,
                                                                        growth_per_day)))
    out = np.full(X.shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        flat = np.abs(g) < 1e-9
        t_flat = np.where(X <= b * K, X / b, np.inf)
        g_safe = np.where(flat, 1.0, g)
        fill_k = b * np.expm1(g_safe * K) / g_safe            # S(K)
        t1 = np.log1p(g_safe * X / b) / g_safe
        t2 = np.log(g_safe * X / (b * -np.expm1(-g_safe * K))) / g_safe
        grow = np.where(X <= fill_k, t1, np.where(g_safe > 0, t2, np.inf))
        out = np.where(flat, t_flat, grow)
        out = np.where(np.isnan(out), np.inf, out)
    out = np.where(X <= 0, 0.0, out)
    return out if out.ndim else float(out)


# --------------------------------------------------------------------------- the key sample


@dataclass(frozen=True)
class OccupancySample:
    """Slots and chains of one simulated index file, from the real Java hash of its keys.

    ``scale`` = slots of one simulated file / real slots (1.0: simulated at full size); the
    histogram counts the slots of all ``files`` simulated files together (multiply by
    1 / (files x scale) for one real file).
    ``entries_read_hit``: mean, over the distinct stored keys, of the entries a whole walk of
    the key's slot reads (its chain length: nothing stops early, begin = 0, fewer than maxNum
    matches); ``entries_read_hit_broker``: the same keys' walks as the broker cuts them at
    ``max_num`` matches (expected value given each chain's composition, see
    :func:`chain_lengths_from_keys`; None `max_num`: no cut, = entries_read_hit);
    ``entries_read_miss``: mean chain length over all slots (a missing key's slot is uniformly
    random), = entries / slots.

    The hit means are over every distinct hash of the file (two keys with one hash walk alike;
    a store's measurement weights each hash by its keys, and in a full default-size file 0.7 %
    of the distinct keys share their hash with another, which moves the mean by 0.05 %: 5.1115
    by hash, 5.1141 by key), and they are heavy-tailed: a key that shares a slot with a hot key
    reads the hot key's whole chain. In a full default-size file 1,028 of 18,043,628 distinct keys (0.006 %)
    read more than 1,000 entries and carry 7 % of the mean 5.11 (per-key SD 130). So a store's
    file is measured over every one of its keys too: a sample of 200,000 keys holds 11 of those
    on average and reads low in most draws (median 5.01). That, not the model, is why the first
    full-size validation put the model 4 % above the stores (5.116 against 4.929 sampled; 5.111
    over every key; benchmarks/RESULTS.md, capacity model validation, full stores).

    Several files (``files`` > 1, :func:`sample_occupancy`): ``occupancy``, ``entries_read_*``
    are means over the files (as a store's full files are averaged), ``mean_chain_length`` is
    pooled (their entries / their used slots); ``entries``, ``slots_used`` and
    ``distinct_keys`` are per-file means rounded, ``max_chain_length`` the largest.
    ``occupancy_files`` holds each file's occupancy, ``occupancy_file_sd`` their standard
    deviation (ddof 1; 0 for one file) and ``occupancy_file_p5`` / ``_p95`` their 5th / 95th
    percentiles (linear): the spread of one file around the mean. For scaled files the spread
    includes the extra noise of fewer slots (the binomial part grows as 1/sqrt(slots))."""

    hash_slot_num: int
    entries: int
    distinct_keys: int
    slots_used: int
    occupancy: float
    mean_chain_length: float
    max_chain_length: int
    entries_read_hit: float
    entries_read_miss: float
    histogram: pd.DataFrame = field(repr=False, compare=False)
    scale: float = 1.0
    entries_read_hit_broker: float = math.nan
    max_num: int | None = None
    files: int = 1
    occupancy_file_sd: float = 0.0
    occupancy_file_p5: float = math.nan
    occupancy_file_p95: float = math.nan
    occupancy_files: tuple[float, ...] = field(default=(), repr=False, compare=False)


def broker_walk_entries(chain_length, matches, max_num):
    """Expected entries the broker's walk reads for a key with `matches` entries (of its hash)
    in a slot chain of `chain_length` entries, with begin = 0 and end = Long.MAX (every entry
    time-matches), when the key's entries sit at random places of the chain. Vectorized.

    IndexFile.selectPhyOffset walks the chain newest first and checks ``size >= maxNum``
    before reading each entry, so it reads up to and including the `max_num`-th match, or the
    whole chain if there are fewer matches. With c matches and c >= M, their positions
    (1 = newest) are a uniformly random c-subset of 1..L, and the M-th smallest of such a
    subset has mean M (L + 1) / (c + 1) (order statistics of a random subset: the c matches
    cut the L - c others into c + 1 gaps of equal mean (L - c) / (c + 1)). So:
    L if c < M, else M (L + 1) / (c + 1). "At random places" holds when the file's keys come
    in a stationary order (no key bunched at one end of the file).

    >>> (float(broker_walk_entries(10, 3, 64)), float(broker_walk_entries(99, 99, 64)),
    ...  float(broker_walk_entries(9, 1, 1)))
    (10.0, 64.0, 5.0)
    """
    L = np.asarray(chain_length, float)
    c = np.asarray(matches, float)
    return np.where(c < max_num, L, max_num * (L + 1.0) / (c + 1.0))


def chain_lengths_from_keys(keys: Any, hash_slot_num: int, keys_in_file: int, *,
                            max_num: int | None = None) -> OccupancySample:
    """Put the first `keys_in_file` of `keys` (index key strings, ``topic#key``, in put order)
    into a file of `hash_slot_num` slots with RocketMQ's hash (Java String.hashCode, abs,
    slot = hash % hash_slot_num) and measure it as rmqlab.analysis.indexstats.file_stats does:
    occupancy = non-empty slots / slots, mean chain length = entries / non-empty slots.
    With `max_num` (maxMsgsNumBatch) also the entries a broker's walk reads per stored key
    (``entries_read_hit_broker``, :func:`broker_walk_entries` of each distinct hash's
    entries and its slot's chain, averaged over the distinct hashes).
    `keys`: list, NumPy or pyarrow string array. Cost: O(keys) in C plus a bincount of the slots.

    >>> s = chain_lengths_from_keys(["T#Aa", "T#BB", "T#c", "T#Aa"], 7, 4, max_num=2)
    >>> s.slots_used, s.mean_chain_length, s.max_chain_length, s.distinct_keys
    (2, 2.0, 3, 2)
    >>> s.entries_read_hit, s.entries_read_hit_broker   # "Aa" and "BB" share a hash: 3 matches
    (2.0, 1.5)
    """
    for name, v in (("hash_slot_num", hash_slot_num), ("keys_in_file", keys_in_file)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    _check_max_num(max_num)
    if len(keys) < keys_in_file:
        raise ValueError(f"keys_in_file is {keys_in_file} but only {len(keys)} keys were given")
    hashes = index_hash_many(keys[:keys_in_file])
    return chain_lengths_from_hashes(hashes, int(hash_slot_num), max_num=max_num, overwrite=True)


def _check_max_num(max_num) -> None:
    if max_num is not None and (isinstance(max_num, bool) or not isinstance(max_num, (int, np.integer))
                                or max_num < 1):
        raise ValueError(f"max_num must be a positive int or None, got {max_num!r}")


def _long_runs(ordered: np.ndarray, first: np.ndarray, min_len: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct hashes of sorted `ordered` that occur at least `min_len` times: their rows
    (0 = the smallest distinct hash) and their counts. `first` flags the first entry of each
    distinct hash. In blocks, so that no per-entry or per-hash int64 array is made: only the
    few long runs (hot keys) are listed."""
    n = len(ordered)
    last = n - min_len + 1              # a run of min_len or more starts before this entry
    rows, counts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    seen = 0                            # distinct hashes before the block
    for a in range(0, n, _HASH_BLOCK):
        b = min(a + _HASH_BLOCK, n)
        starts = first[a:b]
        if a < last:
            e = min(b, last)
            hit = np.flatnonzero(starts[:e - a] & (ordered[a:e] == ordered[a + min_len - 1:e + min_len - 1]))
            if len(hit):
                rows.append(seen + np.cumsum(starts)[hit] - 1)
                pos = a + hit
                counts.append(np.searchsorted(ordered, ordered[pos], side="right") - pos)
        seen += int(np.count_nonzero(starts))
    return np.concatenate(rows), np.concatenate(counts)


def chain_lengths_from_hashes(hashes: np.ndarray, hash_slot_num: int, *, max_num: int | None = None,
                              overwrite: bool = False) -> OccupancySample:
    """:func:`chain_lengths_from_keys` of keys already hashed: `hashes` are the stored index
    hashes (non-negative ints, :func:`rmqlab.jvm.hashcode.index_hash_many`) of one file's keys in
    put order. `overwrite`: `hashes` may be sorted in place (no copy). Memory beyond `hashes`
    and the slot table: a byte per hash and 16 per distinct hash (the distinct hashes and their
    entry counts come from one sort, with no int64 array per hash). Cost: O(n log n) for the
    sort, in C.

    >>> s = chain_lengths_from_hashes(np.array([2, 2, 9, 5, 12]), 7, max_num=2)
    >>> s.slots_used, s.distinct_keys, s.entries_read_hit      # chains of 3 and 2 entries
    (2, 4, 2.5)
    """
    _check_max_num(max_num)
    m = int(hash_slot_num)
    n = len(hashes)
    if n < 1:
        raise ValueError("hashes must hold at least one key")
    chains = np.zeros(m, np.int64)
    for a in range(0, n, _HASH_BLOCK):     # blocks: no slot-sized temporary of the whole file
        chains += np.bincount(hashes[a:a + _HASH_BLOCK] % m, minlength=m)
    used = int(np.count_nonzero(chains))
    lengths, counts = np.unique(chains, return_counts=True)
    if overwrite:
        hashes.sort()
        ordered = hashes
    else:
        ordered = np.sort(hashes)
    first = np.empty(n, bool)           # the first entry of each distinct hash, in hash order
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    slots = ordered[first]
    slots %= m
    distinct = len(slots)
    # the chain each distinct hash's walk reads (int32: chains are at most index_num long; the
    # mean of these integers is exact in float64 whatever the summation order)
    whole = chains.astype(np.int32)[slots]
    del slots
    hit = float(whole.mean())
    broker_mean = hit
    if max_num is not None:
        rows, matches = _long_runs(ordered, first, int(max_num))
        del first
        broker = whole.astype(np.float64)
        del whole
        broker[rows] = broker_walk_entries(broker[rows], matches, int(max_num))
        broker_mean = float(np.mean(broker))
    occ = used / m
    return OccupancySample(
        hash_slot_num=m, entries=n, distinct_keys=distinct, slots_used=used, occupancy=occ,
        mean_chain_length=n / used, max_chain_length=int(chains.max()),
        entries_read_hit=hit, entries_read_miss=n / m,
        histogram=pd.DataFrame({"chain_length": lengths, "slots": counts}),
        entries_read_hit_broker=broker_mean, max_num=None if max_num is None else int(max_num),
        occupancy_file_p5=occ, occupancy_file_p95=occ, occupancy_files=(occ,))


def _workload(plan: Plan, messages: int, hot_keys: int, seed: int, first_order_id: int = 0):
    from rmqlab.lab.workload import Workload

    k, m = plan.keys, plan.messages
    return Workload(seed=seed, messages=messages, first_order_id=first_order_id,
                    rate=plan.traffic.messages_per_second.likely, topics=m.topics, queues_per_topic=m.queues_per_topic,
                    keyless_fraction=k.keyless_fraction, keys_per_message=k.keys_per_message.likely,
                    max_keys_per_message=k.max_keys_per_message, hot_key_fraction=k.hot_key_fraction,
                    hot_keys=hot_keys, zipf_s=k.zipf_s.likely, uniq_key=k.uniq_key)


def _index_key_chunks(plan: Plan, entries: int, *, hot_keys: int | None = None, seed: int | None = None,
                      first_order_id: int = 0) -> Iterator[Any]:
    """The index key strings of :func:`sample_index_keys`, a chunk of messages at a time
    (pyarrow string arrays, in put order), so that no caller holds them all. The workload is
    sized for `entries` keys with 5 % to spare; if it turns out to hold fewer, None is yielded
    and the stream starts again from its first key with 1.5 times the messages (a consumer drops
    what it took so far). The chunks go on past `entries`: a consumer stops when it has enough.
    Nothing is yielded when the plan puts no index key. Memory: one chunk of
    ``_KEY_CHUNK_MESSAGES`` messages and its keys."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from rmqlab.lab.workload import generate_chunks

    w_hot = int(plan.keys.cardinality.likely) if hot_keys is None else int(hot_keys)
    per_msg = _index_keys_per_message(plan.keys, "likely")
    if per_msg <= 0:
        return
    messages = int(math.ceil(entries / per_msg * 1.05)) + 16
    while True:
        w = _workload(plan, messages, w_hot, plan.seed if seed is None else int(seed), int(first_order_id))
        have = 0
        for table in generate_chunks(w, _KEY_CHUNK_MESSAGES, bodies=False):
            topic = table.column("topic").combine_chunks()
            owner, values = index_keys_many(table.column("keys"), table.column("uniq_key"))
            keys = pc.binary_join_element_wise(topic.take(pa.array(owner)), values.cast(pa.string()), "#")
            have += len(keys)
            yield keys
        if have >= entries:
            return
        yield None
        messages = int(messages * 1.5) + 16


def sample_index_keys(plan: Plan, entries: int, *, hot_keys: int | None = None, seed: int | None = None,
                      first_order_id: int = 0):
    """The first `entries` index key strings (``topic#key``, pyarrow string array) a broker
    would put for the plan's traffic at its likely values: messages made by
    :func:`rmqlab.lab.workload.generate_chunks` (same key shapes: UNIQ_KEY ids, one-off order ids,
    Zipf hot keys), each message's UNIQ_KEY first, then its KEYS tokens, as buildIndex does.
    `hot_keys` overrides the hot vocabulary size, `seed` the plan's seed; `first_order_id`
    starts the one-off order ids further along the stream (ORDER_<first_order_id>, ...).
    Cost: O(keys), one string made a key; memory: the strings (33 bytes a key for the default plan)
    and one chunk of messages (the key sample itself never holds them: :func:`sample_occupancy`).
    """
    import pyarrow as pa

    parts: list[Any] = []
    have = 0
    for keys in _index_key_chunks(plan, entries, hot_keys=hot_keys, seed=seed, first_order_id=first_order_id):
        if keys is None:        # the workload was short: it starts again, longer
            parts, have = [], 0
            continue
        parts.append(keys)
        have += len(keys)
        if have >= entries:
            return pa.concat_arrays(parts).slice(0, entries)
    return pa.array([], pa.string())


def _stream_files(plan: Plan, hash_slot_num: int, capacity: int, files: int, *, hot_keys: int | None = None,
                  seed: int | None = None, first_order_id: int = 0,
                  keys_progress: Callable[[int, int], None] | None = None) -> list[OccupancySample]:
    """:func:`chain_lengths_from_keys` of `files` consecutive files of `capacity` keys each from
    the start of the plan's key stream (:func:`sample_index_keys` with the same arguments, cut
    into files), without holding the strings: each chunk of keys is hashed and dropped, and a
    file is measured from its int32 hashes as soon as it is full. Peak memory: one chunk of
    messages plus about 20 bytes per key of one file, however many files. `keys_progress`:
    called with (keys hashed, keys to hash) after each chunk."""
    import pyarrow as pa

    max_num = plan.index.max_msgs_num_batch
    samples: list[OccupancySample] = []
    hashes = np.empty(capacity, np.int32)
    filled = 0
    for keys in _index_key_chunks(plan, files * capacity, hot_keys=hot_keys, seed=seed,
                                  first_order_id=first_order_id):
        if keys is None:        # the workload was short: it starts again, longer
            samples, filled = [], 0
            continue
        chunk = index_hash_many(keys)
        del keys
        at = 0
        while at < len(chunk) and len(samples) < files:
            take = min(capacity - filled, len(chunk) - at)
            hashes[filled:filled + take] = chunk[at:at + take]
            filled += take
            at += take
            if filled == capacity:
                # the generator's freed Arrow buffers go back to the system before the sort
                pa.default_memory_pool().release_unused()
                samples.append(chain_lengths_from_hashes(hashes, hash_slot_num, max_num=max_num, overwrite=True))
                filled = 0
        if keys_progress is not None:
            keys_progress(len(samples) * capacity + filled, files * capacity)
        if len(samples) == files:
            return samples
    raise ValueError(f"keys_in_file is {capacity} but the plan puts no index key "
                     "(no UNIQ_KEY and no keyed message)")


def _order_ids_per_file(plan: Plan, capacity: int) -> int:
    """One-off order ids a full file of `capacity` keys holds (likely values): its keys times
    the share of index keys that are order ids, keyed tokens x (1 - hot share) / k."""
    k = plan.keys
    per_msg = _index_keys_per_message(k, "likely")
    if per_msg <= 0:
        return 0
    tokens = (1.0 - k.keyless_fraction) * k.keys_per_message.likely
    return int(round(capacity * tokens * (1.0 - k.hot_key_fraction) / per_msg))


def _combine(samples: list[OccupancySample], scale: float) -> OccupancySample:
    """One OccupancySample of several simulated files (see :class:`OccupancySample`)."""
    if len(samples) == 1:
        return dataclasses.replace(samples[0], scale=scale)
    occ = np.array([s.occupancy for s in samples])
    hist = pd.concat([s.histogram for s in samples]).groupby("chain_length", as_index=False)["slots"].sum()
    entries = sum(s.entries for s in samples)
    used = sum(s.slots_used for s in samples)
    k = len(samples)
    return OccupancySample(
        hash_slot_num=samples[0].hash_slot_num, entries=round(entries / k),
        distinct_keys=round(sum(s.distinct_keys for s in samples) / k), slots_used=round(used / k),
        occupancy=float(occ.mean()), mean_chain_length=entries / used,
        max_chain_length=max(s.max_chain_length for s in samples),
        entries_read_hit=float(np.mean([s.entries_read_hit for s in samples])),
        entries_read_miss=float(np.mean([s.entries_read_miss for s in samples])),
        histogram=hist, scale=scale,
        entries_read_hit_broker=float(np.mean([s.entries_read_hit_broker for s in samples])),
        max_num=samples[0].max_num, files=k, occupancy_file_sd=float(occ.std(ddof=1)),
        occupancy_file_p5=float(np.percentile(occ, 5)), occupancy_file_p95=float(np.percentile(occ, 95)),
        occupancy_files=tuple(float(x) for x in occ))


def sample_occupancy(plan: Plan, hash_slot_num: int | None = None, index_num: int | None = None, *,
                     max_entries: int = SAMPLE_ENTRIES, files: int | None = None,
                     whole_files: bool = False,
                     keys_progress: Callable[[int, int], None] | None = None) -> OccupancySample:
    """Occupancy and chains of full index files of the plan's traffic (likely values), from
    the real hash of sampled keys (:func:`sample_index_keys`, :func:`chain_lengths_from_keys`
    with the plan's maxMsgsNumBatch), averaged over several files at different positions of
    the key stream; at most `max_entries` keys are hashed in all.

    Why several files: a file's occupancy depends on which stretch of the stream it holds
    (sequential order ids ``ORDER_<n>`` hash into runs of neighbouring slots that depend on
    the digits of n), by several % when the file holds few distinct keys. So the sample
    averages `files` files, as a store's full files are averaged, and reports their spread.

    A full file holds C = index_num - 1 keys in m slots. If `files` full-size files fit in
    `max_entries` (`files` None: as many as fit, at most ``SAMPLE_FILES[0]``, if at least
    ``SAMPLE_FILES[1]`` do), they are the first `files` files of one key stream, consecutive
    as in a store. Otherwise (`files` None: ``SAMPLE_FILES[1]`` files) each file is scaled by
    q = (max_entries / files) / C: m' = round(q m) slots and C' = round(C m' / m) keys (the
    same load factor C/m), and the hot vocabulary shrinks to round(q x cardinality) keys, so
    that hot keys, which repeat and therefore take one slot however often they occur, fill the
    same share of the slots as in the real file (for a Zipf vocabulary the expected distinct
    keys of n draws from V keys scale together: D(qn, qV) ≈ q D(n, V)); file j has its own
    random stream (seed + j) and starts at the order id real file j + 1 would start at
    ((j + 1) x order ids a file). Not at 0: a scaled file holds only q of a real file's order
    ids, and the first q x (order ids a file) ids are short numbers whose hashes bunch into few
    slots (occupancy 4 % low for the default plan), unlike the long ids that fill a real file.
    Occupancy, mean chain length and entries read do not depend on m for a fixed load factor
    (Binomial(n, 1/m) slot counts tend to Poisson(n/m)); the test suite checks the scaled files
    against full-size ones. A scaled file keeps the mean
    entries of a hot key (q draws over q V keys) but not the Zipf head's shape, so the broker
    cut (``entries_read_hit_broker``) is approximate there. Scaled files also lose how runs of
    sequential ids fold into the real slot count: at the default geometry they put occupancy
    1.3 % (many keys a message) to 6 % (few distinct hot keys) too high, where one whole
    full-size file matches a real store to 0.1 % (benchmarks/RESULTS.md, 2026-11-22).

    `whole_files`: never scale. Where fewer than ``SAMPLE_FILES[1]`` full-size files fit in
    `max_entries`, hash `files` (default 1) whole full-size files instead, however many keys
    that takes. This is what the command line's estimate and report use unless told ``--fast``.
    Cost: O(keys of the files hashed): with whole files, every key of a full default-size file
    (19,999,999) is made and hashed. Memory: the keys stream through (made, hashed and dropped
    :data:`_KEY_CHUNK_MESSAGES` messages at a time) and each file is measured from its int32
    hashes, so the peak is one chunk plus about 20 bytes per key of one file, whatever the
    number of files, where holding every key string would take tens of bytes a key more.
    Cost otherwise: O(`max_entries`). Measured: benchmarks/RESULTS.md (capacity model).
    `keys_progress`: called with (keys hashed, keys to hash, of all the files) as they stream.

    >>> from rmqlab.capacity.plan import parse_plan
    >>> plan = parse_plan({"index": {"hash_slot_num": 5000, "index_num": 20000}})
    >>> s = sample_occupancy(plan, whole_files=True)     # 10 files of 19,999 keys fit: as without
    >>> s.scale, s.files, s.entries
    (1.0, 10, 19999)
    >>> whole = sample_occupancy(plan, max_entries=30_000, whole_files=True)
    >>> whole.files, whole.scale, sample_occupancy(plan, max_entries=30_000).scale
    (1, 1.0, 0.375)
    """
    m = plan.index.hash_slot_num if hash_slot_num is None else int(hash_slot_num)
    n_idx = plan.index.index_num if index_num is None else int(index_num)
    if files is not None and (isinstance(files, bool) or not isinstance(files, (int, np.integer)) or files < 1):
        raise ValueError(f"files must be a positive int or None, got {files!r}")
    capacity = Geometry(m, n_idx).capacity
    hot = int(plan.keys.cardinality.likely)
    fit = max_entries // capacity
    if files is None:
        files = min(SAMPLE_FILES[0], fit) if fit >= SAMPLE_FILES[1] else (1 if whole_files else SAMPLE_FILES[1])
    files = int(files)
    if whole_files:
        max_entries = max(int(max_entries), files * capacity)
    if files * capacity <= max_entries:
        return _combine(_stream_files(plan, m, capacity, files, keys_progress=keys_progress), 1.0)
    q = (max_entries / files) / capacity
    m_s = max(1, round(m * q))
    c_s = max(1, round(capacity * m_s / m))
    hot_s = max(1, round(hot * q))
    ids_per_file = _order_ids_per_file(plan, capacity)

    def of_file(j: int) -> Callable[[int, int], None] | None:
        """File j's progress as a share of all the files' keys."""
        if keys_progress is None:
            return None
        return lambda done, _total: keys_progress(j * c_s + done, files * c_s)

    samples = [_stream_files(plan, m_s, c_s, 1, hot_keys=hot_s, seed=plan.seed + j,
                             first_order_id=(j + 1) * ids_per_file, keys_progress=of_file(j))[0]
               for j in range(files)]
    return _combine(samples, m_s / m)


# ------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Estimate:
    """The model's outputs for one point of a plan (units in the names; bytes, hours, days).

    Rates and volumes
        messages_per_day; index_keys_per_message (k); index_keys_per_day; commitlog_record_bytes
        (mean TOTALSIZE); commitlog_bytes_per_day (whole files, blank tails included);
        commitlog_files_per_day; consume_queue_bytes_per_day (20 bytes a message).
    Index files
        keys_per_index_file (index_num - 1); index_file_bytes; index_files_per_day;
        hours_to_fill_index_file (at the mean rate; = index_file_span_hours, the time one
        file covers); hours_to_fill_index_file_at_peak (at the peak rate).
    Disk at the worst moment of the steady state (files are preallocated: apparent sizes)
        retained_hours (K, CommitLog); commitlog_files_on_disk, commitlog_disk_bytes;
        consume_queue_files_on_disk (all queues), consume_queue_disk_bytes; index_files_on_disk,
        index_disk_bytes; total_disk_bytes; disk_used_ratio ((total + other used) / capacity);
        page_cache_bytes (the newest index file, all of it: slots are hit at random).
    Slots and queries (one full file; real hash on sampled keys)
        load_factor (keys / slots); occupancy (mean over the sampled files), mean_chain_length
        (entries per used slot), and their uniform-hash counterparts occupancy_uniform /
        mean_chain_length_uniform (for the distinct keys the file holds);
        occupancy_file_p5 / occupancy_file_p95 / occupancy_file_sd: the spread of one file's
        occupancy (across the sampled files; without a sample, the uniform hash's binomial
        spread, p5/p95 = mean ∓ 1.645 sd); entries_read_hit / entries_read_miss (per file
        searched, whole walk); entries_read_hit_broker (per file searched, the broker's walk
        cut at maxMsgsNumBatch matches: :func:`broker_walk_entries`); index_files_per_query
        (files a query window overlaps, 1 + W / span); hot_key_matches_per_query (mean
        matches of the hot key in the window, in one topic: a query names one ``topic#key``,
        and the plan's topics share the traffic equally); hot_key_truncation_probability
        (P(matches > maxMsgsNumBatch)).
    Days from an empty store until the disk passes each ratio (inf = never)
        days_to_disk_max_used_space_ratio, days_to_disk_space_clean_forcibly_ratio,
        days_to_disk_space_warning_level_ratio.
    """

    messages_per_day: float
    index_keys_per_message: float
    index_keys_per_day: float
    commitlog_record_bytes: float
    commitlog_bytes_per_day: float
    commitlog_files_per_day: float
    consume_queue_bytes_per_day: float
    keys_per_index_file: int
    index_file_bytes: int
    index_files_per_day: float
    hours_to_fill_index_file: float
    hours_to_fill_index_file_at_peak: float
    index_file_span_hours: float
    retained_hours: float
    commitlog_files_on_disk: int
    commitlog_disk_bytes: int
    consume_queue_files_on_disk: int
    consume_queue_disk_bytes: int
    index_files_on_disk: int
    index_disk_bytes: int
    total_disk_bytes: int
    disk_used_ratio: float
    page_cache_bytes: int
    load_factor: float
    occupancy: float
    occupancy_uniform: float
    occupancy_file_p5: float
    occupancy_file_p95: float
    occupancy_file_sd: float
    mean_chain_length: float
    mean_chain_length_uniform: float
    entries_read_hit: float
    entries_read_hit_broker: float
    entries_read_miss: float
    index_files_per_query: float
    hot_key_matches_per_query: float
    hot_key_truncation_probability: float
    days_to_disk_max_used_space_ratio: float
    days_to_disk_space_clean_forcibly_ratio: float
    days_to_disk_space_warning_level_ratio: float
    sample: OccupancySample | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, float | int]:
        """The numeric outputs by name (the key sample left out)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "sample"}


OUTPUTS: tuple[str, ...] = tuple(f.name for f in fields(Estimate) if f.name != "sample")

_THRESHOLDS = ("disk_max_used_space_ratio", "disk_space_clean_forcibly_ratio", "disk_space_warning_level_ratio")


def _index_keys_per_message(keys, point: str = "likely"):
    kpm = keys.keys_per_message.at(point) if isinstance(keys.keys_per_message, Interval) else keys.keys_per_message
    return (1.0 if keys.uniq_key else 0.0) + (1.0 - keys.keyless_fraction) * kpm


def zipf_share(rank: int, cardinality, s):
    """The share of the traffic the key of rank `rank` (1 = hottest) gets in a Zipf(`s`)
    vocabulary of `cardinality` keys: P(rank) = rank^-s / Σ_{r<=V} r^-s, a float64 array of
    the broadcast shape of `cardinality` and `s` (at least 1-d). The sum is exact for
    r <= 1000 and above that the Euler-Maclaurin integral ∫ x^-s dx plus midpoint terms.
    Cost: O(1000) per (cardinality, s) pair.

    >>> round(float(zipf_share(1, 10, 1.1)[0]), 4), zipf_share(1, 10, 0.0).tolist()
    (0.3731, [0.1])
    """
    V = np.atleast_1d(np.asarray(cardinality, float))
    s = np.atleast_1d(np.asarray(s, float))
    V, s = np.broadcast_arrays(V, s)
    head = np.arange(1, 1001, dtype=float)
    terms = head[None, :] ** -s.reshape(-1, 1)
    mask = head[None, :] <= V.reshape(-1, 1)
    total = (terms * mask).sum(axis=1)
    a, b = 1000.5, V.reshape(-1) + 0.5
    sv = s.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(np.abs(sv - 1) < 1e-9, np.log(b / a), (b ** (1 - sv) - a ** (1 - sv)) / (1 - sv))
    total = total + np.where(V.reshape(-1) > 1000, tail, 0.0)
    return (rank ** -sv / total).reshape(V.shape)


def zipf_distinct_keys(draws, cardinality, s):
    """Expected distinct keys among `draws` Zipf(`s`) draws from `cardinality` keys:
    Σ_r 1 - exp(-draws p_r) (Poisson approximation of 1 - (1 - p_r)^draws), summed on a
    geometric grid of ranks (each grid point stands for its block of ranks; within 2 % of the
    exact sum). A float64 array, one value per `cardinality`; `draws` and `s` are scalars or
    one per `cardinality`. Cost: O(200) per value.

    >>> round(float(zipf_distinct_keys(100, 10, 1.1)[0]), 2), zipf_distinct_keys(10**6, 10, 1.1).tolist()
    (9.87, [10.0])
    """
    V = np.atleast_1d(np.asarray(cardinality, float)).reshape(-1)
    s = np.broadcast_to(np.atleast_1d(np.asarray(s, float)).reshape(-1), V.shape)
    d = np.broadcast_to(np.atleast_1d(np.asarray(draws, float)).reshape(-1), V.shape)
    out = np.empty(V.shape)
    for i in range(len(V)):      # one grid per sample: V differs; 200 points each
        edges = np.unique(np.round(np.geomspace(1, V[i] + 1, 200)))
        lo, hi = edges[:-1], edges[1:]
        mid = np.sqrt(lo * np.maximum(hi - 1, lo))
        p = mid ** -s[i]
        norm = float((p * (hi - lo)).sum())
        out[i] = float(((hi - lo) * -np.expm1(-d[i] * p / norm)).sum())
    return out


def _core(plan: Plan, v: dict[str, Any], sample: OccupancySample | None) -> dict[str, Any]:
    """Every output from the inputs `v` (dotted name -> float or array of samples)."""
    t, k, m, r, d, ix, fl, q = (plan.traffic, plan.keys, plan.messages, plan.retention, plan.disk,
                                plan.index, plan.files, plan.queries)
    geom = Geometry(ix.hash_slot_num, ix.index_num)
    C = geom.capacity
    R = v["traffic.messages_per_second"]
    kpm = v["keys.keys_per_message"]
    keyed_tokens = (1.0 - k.keyless_fraction) * kpm
    k_idx = (1.0 if k.uniq_key else 0.0) + keyed_tokens
    o = {}
    o["messages_per_day"] = R * _DAY
    o["index_keys_per_message"] = k_idx + 0 * R
    o["index_keys_per_day"] = R * k_idx * _DAY

    # CommitLog record: v1, IPv4 hosts (MIN_MESSAGE_SIZE) + body + topic + properties
    if m.properties_bytes is not None:
        props = v["messages.properties_bytes"]
    else:
        props = (m.other_properties_bytes + (_UNIQ_KEY_PROPERTY_BYTES if k.uniq_key else 0)
                 + (1.0 - k.keyless_fraction) * (_KEYS_PROPERTY_BYTES + kpm * v["keys.key_bytes"] + (kpm - 1)))
    record = MIN_MESSAGE_SIZE + v["messages.body_bytes"] + m.topic_name_bytes + props
    F = fl.commitlog_file_size
    per_cl_file = np.floor((F - END_FILE_MIN_BLANK_LENGTH) / record)
    o["commitlog_record_bytes"] = record
    o["commitlog_files_per_day"] = R * _DAY / per_cl_file
    o["commitlog_bytes_per_day"] = o["commitlog_files_per_day"] * F
    o["consume_queue_bytes_per_day"] = R * _DAY * UNIT_SIZE

    # index files
    keys_per_s = R * k_idx
    o["keys_per_index_file"] = C
    o["index_file_bytes"] = geom.file_size
    o["index_files_per_day"] = keys_per_s * _DAY / C
    o["hours_to_fill_index_file"] = hours_to_fill(keys_per_s, geom.index_num)
    amplitude = t.daily_amplitude if t.daily_profile == "daily" else 0.0
    peak_rate = R * (1.0 + amplitude) * v["traffic.peak_factor"]
    o["hours_to_fill_index_file_at_peak"] = hours_to_fill(peak_rate * k_idx, geom.index_num)
    o["index_file_span_hours"] = o["hours_to_fill_index_file"]

    # retention: K for the CommitLog, K + one CommitLog file's span for what follows it
    K = retained_hours(v["retention.file_reserved_time_hours"], r.delete_when)
    cl_file_hours = per_cl_file / R / 3600.0
    K_after = K + cl_file_hours
    o["retained_hours"] = K
    cl_files = files_on_disk(peak_window_messages(R, K, amplitude), per_cl_file)
    o["commitlog_files_on_disk"] = cl_files
    o["commitlog_disk_bytes"] = cl_files * F
    queues = len(m.topics) * m.queues_per_topic
    U = fl.consume_queue_units_per_file
    cq_files = queues * files_on_disk(peak_window_messages(R / queues, K_after, amplitude), U)
    o["consume_queue_files_on_disk"] = cq_files
    o["consume_queue_disk_bytes"] = cq_files * U * UNIT_SIZE
    idx_files = files_on_disk(peak_window_messages(R, K_after, amplitude) * k_idx, C)
    o["index_files_on_disk"] = idx_files
    o["index_disk_bytes"] = idx_files * geom.file_size
    total = o["commitlog_disk_bytes"] + o["consume_queue_disk_bytes"] + o["index_disk_bytes"]
    o["total_disk_bytes"] = total
    o["disk_used_ratio"] = (total + d.used_bytes) / d.capacity_bytes
    o["page_cache_bytes"] = geom.file_size + 0 * R

    # slots and chains of one full file
    o["load_factor"] = C / ix.hash_slot_num + 0 * R
    hot_share = keyed_tokens * k.hot_key_fraction / k_idx if np.all(k_idx > 0) else 0 * R
    hot_draws = C * hot_share
    # a hot key is topic#key: each topic's share of the draws over its own V keys
    T = len(m.topics)
    distinct = C - hot_draws + T * zipf_distinct_keys(hot_draws / T, v["keys.cardinality"],
                                                 v["keys.zipf_s"]).reshape(np.shape(R))
    slots = ix.hash_slot_num
    occ_uniform = -np.expm1(distinct * math.log1p(-1.0 / slots)) if slots > 1 else np.ones_like(distinct)
    o["occupancy_uniform"] = occ_uniform
    o["mean_chain_length_uniform"] = C / (occ_uniform * slots)
    if sample is not None:
        o["occupancy"] = sample.occupancy + 0 * R
        o["occupancy_file_p5"] = sample.occupancy_file_p5 + 0 * R
        o["occupancy_file_p95"] = sample.occupancy_file_p95 + 0 * R
        o["occupancy_file_sd"] = sample.occupancy_file_sd + 0 * R
        o["entries_read_hit"] = sample.entries_read_hit + 0 * R
        o["entries_read_hit_broker"] = sample.entries_read_hit_broker + 0 * R
    else:
        o["occupancy"] = occ_uniform
        sd = uniform_occupancy_sd(distinct, slots)
        o["occupancy_file_sd"] = sd
        o["occupancy_file_p5"] = occ_uniform - _Z95 * sd
        o["occupancy_file_p95"] = occ_uniform + _Z95 * sd
        walk = chain_length_summary(slots, C)["entries_read_hit_walk"]
        o["entries_read_hit"] = walk + 0 * R
        # every key once in a file (uniform model): the cut matters only for maxNum = 1, where
        # the walk stops at the key itself, on average halfway down its chain
        o["entries_read_hit_broker"] = (walk if ix.max_msgs_num_batch > 1 else (walk + 1.0) / 2.0) + 0 * R
    o["mean_chain_length"] = C / (o["occupancy"] * ix.hash_slot_num)
    o["entries_read_miss"] = C / ix.hash_slot_num + 0 * R
    window_h = v["queries.window_minutes"] / 60.0
    o["index_files_per_query"] = 1.0 + window_h / o["index_file_span_hours"]
    p_rank = zipf_share(q.hot_key_rank, v["keys.cardinality"], v["keys.zipf_s"]).reshape(np.shape(R))
    # a query names one topic#key: only the queried topic's share of the traffic matches
    hot_rate = R / T * keyed_tokens * k.hot_key_fraction * p_rank
    o["hot_key_matches_per_query"] = hot_rate * window_h * 3600.0
    o["hot_key_truncation_probability"] = poisson_tail(o["hot_key_matches_per_query"], ix.max_msgs_num_batch)

    # days until each disk ratio, filling from empty and growing
    per_day = (o["commitlog_bytes_per_day"] + o["consume_queue_bytes_per_day"]
               + o["index_files_per_day"] * geom.file_size)
    current = F + queues * U * UNIT_SIZE + geom.file_size       # the files being written
    growth = np.log1p(v["traffic.growth_percent_per_month"] / 100.0) / _MONTH_DAYS
    for name in _THRESHOLDS:
        target = getattr(d, name) * d.capacity_bytes - d.used_bytes - current
        days = days_to_reach(target, per_day, K_after / 24.0, growth)
        # without growth, a steady state under the threshold is never reached
        under = (total + d.used_bytes < getattr(d, name) * d.capacity_bytes) & (np.abs(growth) < 1e-9)
        o[f"days_to_{name}"] = np.where(under, np.inf, days)
    return o


_Z95 = 1.6448536269514722    # the standard normal's 95th percentile


def uniform_occupancy_sd(distinct, slots: int):
    """Standard deviation of one file's occupancy (share of its `slots` slots used, 0..1) when
    `distinct` keys hash uniformly into them: the empty-slot count E has E[E] = m a,
    Var(E) = m a + m (m - 1) b - m² a² with a = (1 - 1/m)^D, b = (1 - 2/m)^D (indicator
    covariances); sd = sqrt(Var) / m. Vectorized over `distinct`. Cost: O(1) per value.

    >>> round(float(uniform_occupancy_sd(120, 50)), 4), float(uniform_occupancy_sd(0, 50))
    (0.0352, 0.0)
    """
    m = float(slots)
    D = np.asarray(distinct, float)
    a = np.power(1.0 - 1.0 / m, D)
    b = np.power(max(0.0, 1.0 - 2.0 / m), D)
    var = m * a + m * (m - 1.0) * b - m * m * a * a
    return np.sqrt(np.maximum(var, 0.0)) / m


def _carry_sample(plan: Plan, out: dict[str, Any], occ: OccupancySample) -> None:
    """Carry the real-hash occupancy (sampled at the likely point) to other inputs by the
    uniform model's ratio; the files' spread moves with it."""
    ref = _core(plan, _point_values(plan, "likely"), None)["occupancy_uniform"]
    ratio = out["occupancy_uniform"] / ref
    out["occupancy"] = occ.occupancy * ratio
    out["occupancy_file_p5"] = occ.occupancy_file_p5 * ratio
    out["occupancy_file_p95"] = occ.occupancy_file_p95 * ratio
    out["mean_chain_length"] = out["keys_per_index_file"] / (out["occupancy"] * plan.index.hash_slot_num)


def _point_values(plan: Plan, point: str) -> dict[str, float]:
    return {name: iv.at(point) for name, iv in plan.intervals().items()}


def estimate(plan: Plan, point: str = "likely", *, sample: bool | OccupancySample = True,
             whole_files: bool = False, keys_progress: Callable[[int, int], None] | None = None) -> Estimate:
    """The model at one point of the plan: every interval at its "low", "likely" or "high"
    value (inputs that move outputs in opposite directions are not mixed: this is a corner, not a
    bound; use :func:`monte_carlo` for percentiles). With `sample` the occupancy, chains and
    entries read come from the real hash of sampled keys (:func:`sample_occupancy`, at the
    plan's likely key shape; pass an :class:`OccupancySample` to reuse one); with
    ``sample=False`` from the uniform-hash model. `whole_files`: the key sample hashes whole
    full-size files, never scaled-down ones (:func:`sample_occupancy`): exact for any key
    shape, at the cost of hashing a whole file's keys. `keys_progress`: the key sample's
    (keys hashed, keys to hash) as they stream. Cost: the key sample's
    (:func:`sample_occupancy`), nearly all of it; O(1) arithmetic with ``sample=False``.

    >>> from rmqlab.capacity.plan import parse_plan
    >>> e = estimate(parse_plan({}), sample=False)
    >>> e.keys_per_index_file, e.index_file_bytes, round(e.index_files_per_day, 2)
    (19999999, 420000040, 8.21)
    """
    if not isinstance(plan, Plan):
        raise TypeError(f"plan must be a Plan (parse_plan / load_plan), got {type(plan).__name__}")
    if point not in POINTS:
        raise ValueError(f"point must be one of {POINTS}, got {point!r}")
    occ = None
    if isinstance(sample, OccupancySample):
        occ = sample
    elif sample:
        occ = sample_occupancy(plan, whole_files=whole_files, keys_progress=keys_progress)
    out = _core(plan, _point_values(plan, point), occ)
    if occ is not None and point != "likely":
        _carry_sample(plan, out, occ)
    return Estimate(**{k: _scalar(out[k]) for k in OUTPUTS}, sample=occ)


def _scalar(x):
    a = np.asarray(x)
    if a.dtype.kind in "iu":
        return int(a)
    return float(a)


def _pert(rng: np.random.Generator, iv: Interval, n: int) -> np.ndarray:
    """PERT(low, likely, high) samples: low + (high - low) Beta(1 + 4 (likely - low) / (high - low),
    1 + 4 (high - likely) / (high - low)); mean (low + 4 likely + high) / 6."""
    if iv.is_point:
        return np.full(n, iv.likely)
    span = iv.high - iv.low
    a = 1 + 4 * (iv.likely - iv.low) / span
    b = 1 + 4 * (iv.high - iv.likely) / span
    return iv.low + span * rng.beta(a, b, n)


def monte_carlo_draws(plan: Plan, samples: int = 2000, seed: int | None = None, *,
                      sample: bool | OccupancySample = True, whole_files: bool = False) -> pd.DataFrame:
    """Every Monte Carlo draw behind :func:`monte_carlo`: one row per draw, a column per interval
    input (its dotted name: the value drawn) and per output (the model at those inputs; floats,
    inf where a disk threshold is never reached). Each interval is drawn independently from
    PERT(low, likely, high) (a Beta scaled to [low, high] with mode `likely`; a plain number stays
    fixed); `seed` None uses the plan's seed. The real-hash occupancy is sampled once at the
    likely point and carried to each draw by the uniform model's ratio (see :func:`estimate`;
    `whole_files` as there). Cost: O(samples) vectorized draws plus the key sample.

    >>> from rmqlab.capacity.plan import parse_plan
    >>> d = monte_carlo_draws(parse_plan({"traffic": {"messages_per_second": {"low": 1, "likely": 2, "high": 4}}}),
    ...                       100, sample=False)
    >>> d.shape[0], bool(d["traffic.messages_per_second"].between(1, 4).all())
    (100, True)
    """
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples must be a positive int, got {samples!r}")
    rng = np.random.default_rng(plan.seed if seed is None else seed)
    v = {name: _pert(rng, iv, int(samples)) for name, iv in plan.intervals().items()}
    occ = sample if isinstance(sample, OccupancySample) else (
        sample_occupancy(plan, whole_files=whole_files) if sample else None)
    out = _core(plan, v, occ)
    if occ is not None:
        _carry_sample(plan, out, occ)
    columns = {**v, **{name: out[name] for name in OUTPUTS}}
    return pd.DataFrame({name: np.broadcast_to(np.asarray(x, float), (int(samples),)) for name, x in columns.items()})


def draw_percentiles(draws: pd.DataFrame, percentiles=(5, 50, 95)) -> pd.DataFrame:
    """Percentiles of each output over Monte Carlo draws (:func:`monte_carlo_draws`): one row
    per output, columns ``p5``, ``p50``, ``p95`` (by default) and ``mean``. Infinite values
    (a threshold never reached) count as +inf: a percentile falling among them is inf (the
    draw at that rank), and so is the mean. Cost: O(outputs x draws log draws).
    """
    samples = len(draws)
    rows = {}
    for name in OUTPUTS:
        x = draws[name].to_numpy(float)
        row = {f"p{p:g}": float(np.percentile(x, p, method="linear")) if np.isfinite(x).all()
               else float(np.sort(x)[min(samples - 1, int(math.ceil(p / 100 * samples)) - 1 if p > 0 else 0)])
               for p in percentiles}
        row["mean"] = float(x.mean())
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def monte_carlo(plan: Plan, samples: int = 2000, seed: int | None = None, *,
                sample: bool | OccupancySample = True, percentiles=(5, 50, 95),
                whole_files: bool = False) -> pd.DataFrame:
    """Percentiles of every output when each interval input is drawn independently from a
    PERT(low, likely, high) distribution: :func:`draw_percentiles` of
    :func:`monte_carlo_draws` (see there for `seed`, `sample` and `whole_files`). One row per
    output (index = output name), columns ``p5``, ``p50``, ``p95`` (by default) and ``mean``;
    infinite outputs (never reaching a disk threshold) count as +inf in percentiles and make
    the mean inf. Cost: O(samples) vectorized draws plus the key sample.
    """
    return draw_percentiles(monte_carlo_draws(plan, samples, seed, sample=sample, whole_files=whole_files),
                            percentiles)


# -------------------------------------------------------------- exact counts for a store


def written(plan: Plan, messages: int, point: str = "likely") -> dict[str, float]:
    """What a store holds after `messages` messages and no deletion, by the model's counting
    rules: index keys (messages x k), index files ceil(keys / (index_num - 1)) and their bytes,
    CommitLog records per file and files, ConsumeQueue units (one a message) and files when
    the messages spread evenly over the queues. Exact for equal-size records and an even
    spread; for a measured store feed its own counts to the per-file rules instead."""
    if isinstance(messages, bool) or not isinstance(messages, (int, np.integer)) or messages < 0:
        raise ValueError(f"messages must be a non-negative int, got {messages!r}")
    e = estimate(plan, point, sample=False)
    keys = messages * e.index_keys_per_message
    g = plan.geometry
    index_files = math.ceil(round(keys, 6) / g.capacity)
    per_file = commitlog_records_per_file(e.commitlog_record_bytes, plan.files.commitlog_file_size)
    cl_files = math.ceil(messages / per_file)
    queues = len(plan.messages.topics) * plan.messages.queues_per_topic
    per_queue = messages / queues
    cq_files = queues * math.ceil(per_queue / plan.files.consume_queue_units_per_file)
    return {"messages": messages, "index_keys": keys, "index_files": index_files,
            "index_bytes": index_files * g.file_size, "commitlog_records_per_file": per_file,
            "commitlog_files": cl_files, "commitlog_bytes": cl_files * plan.files.commitlog_file_size,
            "consume_queue_units": messages, "consume_queue_files": cq_files,
            "consume_queue_bytes": cq_files * plan.files.consume_queue_units_per_file * UNIT_SIZE}
