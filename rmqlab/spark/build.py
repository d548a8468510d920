"""Distributed build of a broker ``index/`` folder from a Spark DataFrame of index keys.

:func:`build_index_files` writes the same files, byte for byte and with the same names, as
:func:`rmqlab.indexservice.bulk_build` of the same rows named by store time (each file named
after the store timestamp of its first key, as ``IndexService(name_by_store_time=True)`` does).
The work is split as the broker's order allows:

1. one job counts the rows of every partition; the driver turns the counts into each
   partition's first global rank (prefix sums) -- the partition order IS the broker order;
2. one small job collects only the boundary rows: for every file ``f > 0`` the row of rank
   ``f * cap - 1`` (its seed: the previous file's end_phy_offset / end_timestamp, exactly what
   the broker seeds a new file with) and for every file the row of rank ``f * cap`` (its
   name); the driver names the files with the same function ``bulk_build`` uses;
3. one job tags each row with its rank and file id (from the partition's first rank, no sort),
   brings each file's rows into one group (``groupBy("file").applyInPandas``: the rows move
   once), orders them by rank there and calls :func:`rmqlab.formats.indexfile.build_index_file`
   (the C builder; temporary file + rename, so every file appears atomically).

Every step works on Arrow record batches (``mapInArrow``, ``applyInPandas``): no Python loop
per row.

Spark tasks only call rmqlab's format modules; no format is re-implemented here.

Next step (not done here): a shuffle-free variant where each input partition writes its
contiguous range of entries straight into the files it overlaps, instead of moving rows.
"""
from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Sequence

from rmqlab.formats.indexfile import NEW_SLOT, SlotCountRule

__all__ = ["build_index_files", "plan_ranks"]


def plan_ranks(counts: Sequence[int], index_num: int) -> tuple[list[int], int, int]:
    """Prefix sums of per-partition row counts: (first global rank of each partition, total
    rows, number of files) for files of ``index_num - 1`` keys.

    >>> plan_ranks([3, 0, 4], 4)
    ([0, 3, 3], 7, 3)
    """
    starts, total = [], 0
    for c in counts:
        starts.append(total)
        total += int(c)
    cap = int(index_num) - 1
    return starts, total, -(-total // cap)


def build_index_files(df, directory: str | os.PathLike, *, hash_slot_num: int, index_num: int,
                      slot_count_rule: SlotCountRule = NEW_SLOT, names: Sequence[str] | None = None,
                      tz: _dt.tzinfo | None = None) -> list[Path]:
    """Write the index files for `df`'s keys into `directory`; returns their paths, oldest first.

    `df` has columns ``key`` (``topic#key``), ``phy_offset`` and ``store_timestamp`` (longs),
    one row per put, already expanded (:func:`rmqlab.indexservice.expand_columns`), and its
    PARTITION ORDER is broker order: partition 0 first, rows in order inside each partition.
    File ``f`` holds global ranks ``[f * cap, (f + 1) * cap)``, ``cap = index_num - 1``; file 0
    is seeded with 0/0, file ``f`` with the previous file's last row.

    Names: `names` (one per file, oldest first), or by default the name the broker gives a file
    created while indexing the file's first key (``yyyyMMddHHmmssSSS`` of that key's store
    timestamp in `tz`, None = local time zone), bumped by 1 ms while taken -- the same as
    ``bulk_build(..., clock=<first store timestamp of each file>)``. `directory` must hold no
    index file yet (like ``bulk_build``).

    Not covered (the rows carry no message boundaries): the extra empty file the broker
    creates when a later message arrives after the last file filled exactly; a DataFrame with
    no rows writes no file; and when a file fills exactly at a message's end and the next
    message puts no key (no keys, rollback, already indexed), the broker names the next file
    by THAT message's store time, not by the next key's (pass `names` then). `df` is evaluated three times (counts, boundaries, build):
    its rows and partitioning must be deterministic (cache or checkpoint it otherwise). Files
    are written by the executors, so on a cluster `directory` must be a shared file system.
    Cost: three passes over Arrow batches, one shuffle of the rows, the C builder per file.
    """
    from rmqlab.indexservice import _check_capacity, _next_free_name, is_index_file_name

    _check_capacity(index_num)
    hash_slot_num, index_num = int(hash_slot_num), int(index_num)
    cap = index_num - 1
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    existing = sorted(p.name for p in directory.iterdir() if is_index_file_name(p.name))
    if existing:
        raise FileExistsError(f"{directory} already holds index files ({existing[0]}, ...); "
                              "build_index_files writes a new folder")

    keys = df.select("key", "phy_offset", "store_timestamp")
    partitions = keys.rdd.getNumPartitions()

    # 1. per-partition counts -> first rank of each partition
    counts = {r["p"]: r["n"] for r in keys.mapInArrow(_count_rows, "p int, n long").collect()}
    starts, total, n_files = plan_ranks([counts.get(i, 0) for i in range(partitions)], index_num)
    if names is not None and len(names) != n_files:
        raise ValueError(f"{len(names)} names given for {n_files} files")
    if n_files == 0:
        return []

    # 2. boundary rows: rank f*cap - 1 (seed of file f) and f*cap (first key of file f)
    wanted = sorted({r for f in range(n_files) for r in (f * cap - 1, f * cap) if 0 <= r < total})
    picked = keys.mapInArrow(_ranked(starts, _pick(wanted)), "rank long, phy_offset long, store_timestamp long")
    at = {r["rank"]: (r["phy_offset"], r["store_timestamp"]) for r in picked.collect()}
    if set(at) != set(wanted):
        raise RuntimeError(f"boundary rows missing: {sorted(set(wanted) - set(at))[:5]}; "
                           "is the DataFrame deterministic?")
    seeds = [(0, 0)] + [at[f * cap - 1] for f in range(1, n_files)]

    if names is None:
        names_out: list[str] = []
        for f in range(n_files):
            taken = set(names_out)
            names_out.append(_next_free_name(at[f * cap][1], tz,
                                             lambda n: n in taken or (directory / n).exists(),
                                             after=names_out[-1] if names_out else None))
    else:
        names_out = [str(n) for n in names]
        if len(set(names_out)) != len(names_out):
            raise ValueError("file names must be distinct")
    paths = [directory / n for n in names_out]

    # 3. tag rows with (rank, file), one group per file, build with the C builder
    plan = [(str(p), seeds[f][0], seeds[f][1]) for f, p in enumerate(paths)]

    def build(pdf):
        import pandas as pd

        from rmqlab.formats.indexfile import build_index_file   # imported in the worker

        pdf = pdf.sort_values("rank", kind="stable")
        f = int(pdf["file"].iloc[0])
        path, seed_phy, seed_ts = plan[f]
        written = build_index_file(path, pdf["key"].to_numpy(), pdf["phy_offset"].to_numpy(),
                                   pdf["store_timestamp"].to_numpy(),
                                   hash_slot_num=hash_slot_num, index_num=index_num,
                                   end_phy_offset=seed_phy, end_timestamp=seed_ts,
                                   slot_count_rule=slot_count_rule)
        return pd.DataFrame({"file": [f], "first": [int(pdf["rank"].iloc[0])],
                             "last": [int(pdf["rank"].iloc[-1])], "n": [len(pdf)], "written": [written]})

    tagged = keys.mapInArrow(_ranked(starts, _tag(cap)),
                             "key string, phy_offset long, store_timestamp long, rank long, file int")
    done = [tuple(r) for r in tagged.groupBy("file").applyInPandas(
        build, "file int, first long, last long, n long, written long").collect()]
    got = {f: (first, last, n, w) for f, first, last, n, w in done}
    for f in range(n_files):
        lo, hi = f * cap, min((f + 1) * cap, total)
        expect = (lo, hi - 1, hi - lo, hi - lo)
        if got.get(f) != expect:
            raise RuntimeError(f"file {f} ({names_out[f]}): built (first rank, last rank, rows, "
                               f"written) {got.get(f)}, expected {expect}")
    return paths


# -- per-batch functions run in the executors (module level, so they pickle small) -----------


def _count_rows(batches):
    """One row per partition: its id and number of rows."""
    import pyarrow as pa
    from pyspark import TaskContext

    n = sum(b.num_rows for b in batches)
    yield pa.RecordBatch.from_pydict({"p": pa.array([TaskContext.get().partitionId()], pa.int32()),
                                      "n": pa.array([n], pa.int64())})


def _ranked(starts: list[int], per_batch):
    """mapInArrow function giving `per_batch(batch, ranks)` each batch with the global rank of
    its rows: the partition's first rank (from the counts) plus the row's place in the partition."""
    def run(batches):
        import numpy as np
        from pyspark import TaskContext

        first = starts[TaskContext.get().partitionId()]
        for batch in batches:
            ranks = np.arange(first, first + batch.num_rows, dtype=np.int64)
            first += batch.num_rows
            out = per_batch(batch, ranks)
            if out is not None and out.num_rows:
                yield out
    return run


def _pick(wanted: list[int]):
    """The rows whose rank is in `wanted` (sorted), as (rank, phy_offset, store_timestamp)."""
    def pick(batch, ranks):
        import numpy as np
        import pyarrow as pa

        hit = np.flatnonzero(np.isin(ranks, wanted))
        if not len(hit):
            return None
        rows = batch.take(pa.array(hit))
        return pa.RecordBatch.from_arrays([pa.array(ranks[hit]), rows.column("phy_offset"),
                                           rows.column("store_timestamp")],
                                          names=["rank", "phy_offset", "store_timestamp"])
    return pick


def _tag(cap: int):
    """Each row with its rank and file (rank // cap)."""
    def tag(batch, ranks):
        import pyarrow as pa

        return pa.RecordBatch.from_arrays(batch.columns + [pa.array(ranks), pa.array((ranks // cap).astype("int32"))],
                                          names=batch.schema.names + ["rank", "file"])
    return tag
