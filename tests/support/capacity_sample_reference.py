"""The capacity model's key sample computed again, independently, from its key strings: what
:func:`rmqlab.capacity.model.sample_occupancy` must return for a plan, number for number, given
the keys :func:`rmqlab.capacity.model.sample_index_keys` says the plan's traffic puts.

Nothing here imports rmqlab. The hash is Java's String.hashCode over UTF-16 code units, made
non-negative as IndexFile.indexKeyHashMethod does (abs, Integer.MIN_VALUE stored as 0), the slot
``hash % slots``; the chains are counted key by key; the entries a broker's walk reads for a key
with c entries of its hash in a chain of L is the expectation of the position of the maxNum-th
of c places drawn at random from 1..L, summed term by term (not the model's closed form); the
several-files summary follows the model's documented rules (OccupancySample, sample_occupancy's
docstring): which files, at which scale, with which hot vocabulary and first order id.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

INT_MIN = -(2**31)
#: sample_occupancy's documented defaults: at most 16 whole files, else 4 scaled ones
MAX_FILES, SCALED_FILES = 16, 4
SAMPLE_ENTRIES = 200_000


def stored_hashes(keys: Sequence[str]) -> np.ndarray:
    """Java String.hashCode of each key (31 h + unit over UTF-16 code units, 32-bit), then
    abs, with Integer.MIN_VALUE stored as 0; int64. Keys of one length are hashed together."""
    out = np.zeros(len(keys), np.int64)
    by_len: dict[int, list[int]] = {}
    units = [np.frombuffer(k.encode("utf-16-le", "surrogatepass"), "<u2") for k in keys]
    for i, u in enumerate(units):
        by_len.setdefault(len(u), []).append(i)
    for n, rows in by_len.items():
        h = np.zeros(len(rows), np.uint32)
        if n:
            grid = np.stack([units[i] for i in rows]).astype(np.uint32)
            for col in range(n):
                h = h * np.uint32(31) + grid[:, col]
        signed = h.astype(np.int64) - (h.astype(np.int64) >= 2**31) * 2**32
        out[rows] = np.where(signed == INT_MIN, 0, np.abs(signed))
    return out


def expected_walk(chain: int, matches: int, max_num: int | None) -> float:
    """Entries a newest-first walk of a chain of `chain` entries reads for a key with
    `matches` entries in it at random places, stopping once it has `max_num` matches
    (IndexFile.selectPhyOffset checks the count before each read): the whole chain when
    there are fewer, else the mean position of the max_num-th match, by the sum
    P(it is at k) = C(k-1, M-1) C(L-k, c-M) / C(L, c)."""
    if max_num is None or matches < max_num:
        return float(chain)
    L, c, M = chain, matches, max_num
    total = sum(k * math.comb(k - 1, M - 1) * math.comb(L - k, c - M) for k in range(M, L - c + M + 1))
    return float(Fraction(total, math.comb(L, c)))


def one_file(keys: Sequence[str], slots: int, max_num: int | None) -> dict:
    """The OccupancySample fields of one file of `keys` in `slots` slots."""
    hashes = stored_hashes(keys)
    per_hash = Counter(hashes.tolist())
    chains = Counter()
    for h, c in per_hash.items():
        chains[h % slots] += c
    n, used = len(keys), len(chains)
    lengths = Counter(chains.values())
    lengths[0] = slots - used
    whole = [chains[h % slots] for h in per_hash]
    broker = [expected_walk(chains[h % slots], c, max_num) for h, c in per_hash.items()]
    occ = used / slots
    return {"hash_slot_num": slots, "entries": n, "distinct_keys": len(per_hash), "slots_used": used,
            "occupancy": occ, "mean_chain_length": n / used, "max_chain_length": max(chains.values()),
            "entries_read_hit": sum(whole) / len(whole), "entries_read_miss": n / slots,
            "histogram": {k: v for k, v in sorted(lengths.items()) if v},
            "entries_read_hit_broker": sum(broker) / len(broker), "max_num": max_num,
            "scale": 1.0, "files": 1, "occupancy_file_sd": 0.0, "occupancy_file_p5": occ,
            "occupancy_file_p95": occ, "occupancy_files": (occ,)}


def _percentile(xs: list[float], p: float) -> float:
    """Linear interpolation between the closest ranks (NumPy's default method)."""
    xs = sorted(xs)
    pos = p / 100 * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def combine(files: list[dict], scale: float) -> dict:
    """Several files as OccupancySample documents them: means over files, chain length pooled,
    counts per file rounded, the largest chain, the histogram summed, the occupancy's spread."""
    if len(files) == 1:
        return {**files[0], "scale": scale}
    k = len(files)
    occ = [f["occupancy"] for f in files]
    mean_occ = sum(occ) / k
    hist: Counter = Counter()
    for f in files:
        hist.update(f["histogram"])
    return {"hash_slot_num": files[0]["hash_slot_num"], "entries": round(sum(f["entries"] for f in files) / k),
            "distinct_keys": round(sum(f["distinct_keys"] for f in files) / k),
            "slots_used": round(sum(f["slots_used"] for f in files) / k), "occupancy": mean_occ,
            "mean_chain_length": sum(f["entries"] for f in files) / sum(f["slots_used"] for f in files),
            "max_chain_length": max(f["max_chain_length"] for f in files),
            "entries_read_hit": sum(f["entries_read_hit"] for f in files) / k,
            "entries_read_miss": sum(f["entries_read_miss"] for f in files) / k,
            "histogram": dict(sorted(hist.items())), "scale": scale,
            "entries_read_hit_broker": sum(f["entries_read_hit_broker"] for f in files) / k,
            "max_num": files[0]["max_num"], "files": k,
            "occupancy_file_sd": math.sqrt(sum((x - mean_occ) ** 2 for x in occ) / (k - 1)),
            "occupancy_file_p5": _percentile(occ, 5), "occupancy_file_p95": _percentile(occ, 95),
            "occupancy_files": tuple(occ)}


def sample_occupancy(keys_of: Callable[..., Sequence[str]], *, slots: int, index_num: int, max_num: int,
                     cardinality: int, order_ids_per_file: Callable[[int], int],
                     max_entries: int = SAMPLE_ENTRIES, files: int | None = None, whole_files: bool = False) -> dict:
    """What sample_occupancy documents, from the plan's numbers and `keys_of(n, **kw)`, the
    first n index keys of the plan's stream (kw: hot_keys, seed_offset, first_order_id).
    `order_ids_per_file(capacity)`: the one-off order ids a full file holds, which places
    scaled file j at the order id real file j + 1 starts at."""
    capacity = index_num - 1
    fit = max_entries // capacity
    if files is None:
        files = min(MAX_FILES, fit) if fit >= SCALED_FILES else (1 if whole_files else SCALED_FILES)
    if whole_files:
        max_entries = max(max_entries, files * capacity)
    if files * capacity <= max_entries:
        keys = list(keys_of(files * capacity))
        return combine([one_file(keys[j * capacity:(j + 1) * capacity], slots, max_num) for j in range(files)], 1.0)
    q = (max_entries / files) / capacity
    m_s = max(1, round(slots * q))
    c_s = max(1, round(capacity * m_s / slots))
    hot_s = max(1, round(cardinality * q))
    ids_per_file = order_ids_per_file(capacity)
    return combine([one_file(list(keys_of(c_s, hot_keys=hot_s, seed_offset=j, first_order_id=(j + 1) * ids_per_file)),
                             m_s, max_num) for j in range(files)], m_s / slots)
