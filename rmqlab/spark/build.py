"""Distributed build of a broker ``index/`` folder, without shuffling the keys.

:func:`build_index_files` writes the same files, byte for byte and with the same names, as
:func:`rmqlab.store.indexservice.bulk_build` of the same keys named by store time (each file named
after the store timestamp of its first key, as ``IndexService(name_by_store_time=True)``).
It needs the keys in broker order (CommitLog offset, then UNIQ_KEY, then the KEYS tokens), and
gets them either as a Spark DataFrame whose partition order is that order, or as a
:class:`rmqlab.spark.sources.Source` whose pieces are.

Two passes, no shuffle:

1. **Runs.** One task per input partition hashes its keys (rmqlab's C String.hashCode) and
   appends them, in order, to a run file of fixed-size records (:data:`RUN_DTYPE`: hash,
   phy offset, store time; 20 bytes a key) in a hidden folder inside the output folder (so on
   the output's filesystem, which every executor sees); it returns only its row count. The
   key strings are read once and never leave the task.
2. **Files.** The driver turns the counts into each partition's first global rank (prefix
   sums): file ``f`` holds ranks ``[f·cap, (f+1)·cap)``, ``cap = index_num - 1``, a contiguous
   range of one or more runs. It reads two records per file from the runs: the row before the
   file (its seed, the previous file's end_phy_offset / end_timestamp, exactly what the broker
   seeds a new file with) and the file's first row (its name). One task per file then reads
   its range of runs and calls :func:`rmqlab.formats.indexfile.build_index_file` (the C
   builder). Each file appears whole: on a local disk it is built under a temporary name in
   the output folder, then renamed; on an object store (S3, GCS: no rename) it is built in a
   local temporary file on the executor, then uploaded in one put, and an object appears only
   when its upload completes (:func:`rmqlab.spark.storage.publish`).

The output folder and a :class:`~rmqlab.spark.sources.StoreSource` may be plain paths or URIs
of any filesystem pyarrow knows (:mod:`rmqlab.spark.storage`): ``file://``, ``s3://``,
``gs://``, ``hdfs://``.

Both passes are DataFrame jobs over Arrow (``mapInArrow``; a Source's pieces and the files
are numbered by ``spark.range``), so the build runs the same on classic Spark and on Spark
Connect; no RDD and no SparkContext. The driver resolves every path before shipping it
(:func:`rmqlab.spark.storage.resolve`: a plain path made absolute, since executors and a
Spark Connect server run in working directories of their own). The runs are
deleted at the end, also on failure. Spark tasks only call rmqlab's format modules; no format
is re-implemented here.
"""
from __future__ import annotations

import datetime as _dt
import os
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.formats.indexfile import NEW_SLOT, SlotCountRule
from rmqlab.spark import storage
from rmqlab.spark.storage import Location

__all__ = ["build_index_files", "plan_ranks", "RUN_DTYPE", "BuildPlan", "HashMismatchError", "empty_job_seconds"]


class HashMismatchError(RuntimeError):
    """rmqlab's String.hashCode differs from the JVM's for some keys: no file was written.
    ``mismatches`` is a DataFrame (key, rmqlab, jvm) of up to 100 of them."""

    def __init__(self, mismatches):
        self.mismatches = mismatches
        first = mismatches.iloc[0]
        super().__init__(f"String.hashCode differs from the JVM's for {len(mismatches)}+ keys, "
                         f"e.g. {first['key']!r}: rmqlab {first['rmqlab']}, JVM {first['jvm']}")

#: One key in a run file: packed, little-endian, 20 bytes (the size of an index entry).
RUN_DTYPE = np.dtype([
    ("hash", "<i4"),              # index hash of topic#key (rmqlab.jvm.hashcode.index_hash_many)
    ("phy_offset", "<i8"),        # CommitLog offset of the message
    ("store_timestamp", "<i8"),   # ms since the epoch
])


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


@dataclass(frozen=True)
class BuildPlan:
    """What the driver decided for one index file: where it goes, its seed and its rows as
    slices of run files (path, first row, end row). Paths are inside the output folder's
    filesystem (on a local disk: plain absolute paths)."""

    file: int
    path: str
    seed_phy_offset: int
    seed_timestamp: int
    parts: tuple[tuple[str, int, int], ...]

    @property
    def rows(self) -> int:
        return sum(hi - lo for _, lo, hi in self.parts)


def build_index_files(source: Any, directory: str | os.PathLike, *, hash_slot_num: int, index_num: int,
                      slot_count_rule: SlotCountRule = NEW_SLOT, names: Sequence[str] | None = None,
                      tz: _dt.tzinfo | None = None, max_keys: int | None = None, spark=None,
                      progress: Any = True, verify_hashes: bool = False,
                      timings: dict | None = None) -> list[Any]:
    """Write the index files for `source`'s keys into `directory`; returns where they are, oldest first.

    `directory` is a plain path (a relative one is made absolute on the driver) or a URI of a
    filesystem pyarrow knows (``file://``, ``s3://``, ``gs://``, ``hdfs://`` ..., its query
    string configuring the filesystem: :mod:`rmqlab.spark.storage`). Returned: a
    :class:`pathlib.Path` per file on a local disk, the file's URI (str) elsewhere.

    `source` is a Spark DataFrame with columns ``key`` (``topic#key``), ``phy_offset`` and
    ``store_timestamp`` (longs), one row per put, already expanded (as
    :meth:`rmqlab.spark.sources.Source.keys_frame` or
    :func:`rmqlab.store.indexservice.expand_columns` give them) whose PARTITION ORDER is broker order
    (partition 0 first, rows in order inside each partition); or a
    :class:`rmqlab.spark.sources.Source` (then the keys are made and hashed inside the same
    task, and `spark` is the session to use, default the active one). `max_keys` keeps only
    the first that many keys.

    File ``f`` holds global ranks ``[f·cap, (f+1)·cap)``, ``cap = index_num - 1``; file 0 is
    seeded with 0/0, file ``f`` with the previous file's last row. Names: `names` (one per
    file, oldest first), or by default the name the broker gives a file created while
    indexing the file's first key (``yyyyMMddHHmmssSSS`` of that key's store timestamp in
    `tz`, None = local time zone), bumped by 1 ms while taken: the same as
    ``bulk_build(..., clock=<first store timestamp of each file>)``. `directory` must hold no
    index file yet (like ``bulk_build``). `progress`: see
    :class:`rmqlab.spark.progress.JobProgress` (True = a bar in notebooks and on terminals).

    `verify_hashes`: first compare rmqlab's String.hashCode of every key with the JVM's own
    (:func:`rmqlab.spark.hashcheck.check_hashes`, one more pass over the keys, which then do
    go through the JVM) and raise :class:`HashMismatchError` before writing anything if one
    differs.

    Not covered (the keys carry no message boundaries): the extra empty file the broker
    creates when a later message arrives after the last file filled exactly; no keys write no
    file; and when a file fills exactly at a message's end and the next message puts no key,
    the broker names the next file by THAT message's store time (pass `names` then).

    `timings`: a dict to fill with where the time went (seconds): ``runs`` (pass 1, wall),
    ``plan`` (driver), ``files`` (pass 2, wall), ``run_tasks`` and ``file_tasks`` (each
    task's own wall time, in partition / file order).

    Each input partition is evaluated once. On a cluster `directory` must be on storage that
    the driver and all executors see (the runs are written inside it, in a hidden folder that
    is deleted at the end). How a finished file is published: on a local disk (``file://``
    too) under a temporary name in `directory`, then renamed; on an object store (S3, GCS),
    which has no rename, built in a local temporary file on the executor and uploaded in one
    put: the object appears only when the upload completes, so a reader never sees part of a
    file (the executor needs local disk for one file); on other filesystems (HDFS) uploaded
    under a temporary name, then renamed. Disk: the runs take
    20 bytes a key until the files are built (about as much as the files). Cost: one pass
    over the input (hashing in C), then one C build per file, ``min(files, cores)`` at a time.
    """
    from rmqlab.spark.progress import JobProgress
    from rmqlab.spark.sources import Source
    from rmqlab.store.indexservice import check_index_num, is_index_file_name

    check_index_num(index_num)
    hash_slot_num, index_num = int(hash_slot_num), int(index_num)
    directory = storage.resolve(directory)
    storage.mkdir(directory)
    existing = [e.name for e in storage.list_dir(directory) if is_index_file_name(e.name)]
    if existing:
        raise FileExistsError(f"{directory} already holds index files ({existing[0]}, ...); "
                              "build_index_files writes a new folder")
    if names is not None:
        names = [str(n) for n in names]
        if len(set(names)) != len(names):
            raise ValueError("file names must be distinct")

    if isinstance(source, Source):
        if spark is None:
            from rmqlab.spark import get_session
            spark = get_session()
        runs_of = _source_runs(spark, source)
    else:
        spark = source.sparkSession
        runs_of = _frame_runs(source.select("key", "phy_offset", "store_timestamp"))

    if verify_hashes:
        from rmqlab.spark.hashcheck import check_hashes

        keys = source.keys_frame(spark) if isinstance(source, Source) else source
        with JobProgress(spark, "checking hashes against the JVM", progress):
            check = check_hashes(keys, "key")
        if not check.mismatches.empty:
            raise HashMismatchError(check.mismatches)

    timings = {} if timings is None else timings
    runs_dir = directory.child(f".rmqlab-runs-{uuid.uuid4().hex[:12]}")
    storage.mkdir(runs_dir)
    try:
        t0 = time.monotonic()
        with JobProgress(spark, "hashing keys into runs", progress):
            got = [tuple(r) for r in runs_of(runs_dir)]
        t1 = time.monotonic()
        timings["runs"] = t1 - t0
        timings["run_tasks"] = [seconds for _, _, _, seconds in sorted(got)]
        runs = _complete_runs(runs_dir, {part: (path, n) for part, path, n, _ in got})
        plans = _plan_files(runs, directory, index_num, names, tz, max_keys)
        timings["plan"] = time.monotonic() - t1
        if not plans:
            return []
        cap = index_num - 1

        out_fs = directory.fs

        def build(f: int) -> tuple[int, int, float]:
            start = time.monotonic()
            written = _build_one(plans[f], out_fs, hash_slot_num, index_num, slot_count_rule)
            return f, written, time.monotonic() - start

        t2 = time.monotonic()
        with JobProgress(spark, f"building {len(plans)} index files", progress):
            built = sorted(_files_arrow(spark, len(plans), build))
        timings["files"] = time.monotonic() - t2
        timings["file_tasks"] = [seconds for _, _, seconds in built]
        done = {f: n for f, n, _ in built}
        for p in plans:
            if done.get(p.file) != p.rows or not 0 < p.rows <= cap:
                raise RuntimeError(f"file {p.file} ({os.path.basename(p.path)}): wrote {done.get(p.file)} keys, "
                                   f"expected {p.rows}")
        if directory.local:
            return [Path(p.path) for p in plans]
        return [str(directory.child(os.path.basename(p.path))) for p in plans]
    finally:
        storage.delete_tree(runs_dir)


# -- pass 1: runs ---------------------------------------------------------------------------


def _write_run(runs_dir: Location, part: int, batches: Iterable[Any]) -> tuple[int, str, int, float]:
    """Hash and append `batches` (key, phy_offset, store_timestamp) to a new run file; what
    the driver needs: (part, path in the output's filesystem, rows, seconds the task took).
    Written as a stream (on S3 the object appears when the stream closes); a partial run of a
    failed attempt is never read: the driver keeps only the runs the finished tasks name."""
    from pyspark import TaskContext

    from rmqlab.jvm.hashcode import index_hash_many

    start = time.monotonic()
    ctx = TaskContext.get()
    attempt = ctx.attemptNumber() if ctx is not None else 0
    run = runs_dir.child(f"{part:06d}.{attempt}.{uuid.uuid4().hex[:8]}.run")
    n = 0
    with storage.open_write(run) as f:
        for batch in batches:
            if not batch.num_rows:
                continue
            rec = np.empty(batch.num_rows, RUN_DTYPE)
            rec["hash"] = index_hash_many(batch.column("key"))
            rec["phy_offset"] = batch.column("phy_offset").to_numpy()
            rec["store_timestamp"] = batch.column("store_timestamp").to_numpy()
            f.write(rec.data)
            n += batch.num_rows
    return part, run.path, n, time.monotonic() - start


_RUN_RESULT = "part int, path string, n long, seconds double"


def _frame_runs(df):
    """Pass 1 over a DataFrame: one run per partition (an Arrow job)."""
    def run_of(runs_dir: Location):
        def task(batches):
            import pyarrow as pa
            from pyspark import TaskContext

            part, path, n, seconds = _write_run(runs_dir, TaskContext.get().partitionId(), batches)
            yield pa.RecordBatch.from_pydict({"part": pa.array([part], pa.int32()), "path": [path],
                                              "n": pa.array([n], pa.int64()), "seconds": [seconds]})
        return df.mapInArrow(task, _RUN_RESULT).collect()
    return run_of


def _source_runs(spark, source):
    """Pass 1 over a Source: one run per piece, the keys made in the same task (an Arrow job
    over ``spark.range``: one id, so one piece, per partition)."""
    n = source.num_partitions

    def run_of(runs_dir: Location):
        def task(batches):
            import pyarrow as pa

            for batch in batches:
                for i in batch.column(0).to_pylist():
                    part, path, rows, seconds = _write_run(runs_dir, i, source.keys(i))
                    yield pa.RecordBatch.from_pydict({"part": pa.array([part], pa.int32()), "path": [path],
                                                      "n": pa.array([rows], pa.int64()), "seconds": [seconds]})
        return spark.range(0, n, 1, max(n, 1)).mapInArrow(task, _RUN_RESULT).collect()
    return run_of


def _files_arrow(spark, n: int, build):
    """Pass 2 as an Arrow job: one task per index file."""
    def task(batches):
        import pyarrow as pa

        for batch in batches:
            for f in batch.column(0).to_pylist():
                f, written, seconds = build(f)
                yield pa.RecordBatch.from_pydict({"file": [f], "written": [written], "seconds": [seconds]})
    return [tuple(r) for r in spark.range(0, n, 1, n).mapInArrow(
        task, "file long, written long, seconds double").collect()]


def _complete_runs(runs_dir: Location, got: dict[int, tuple[str, int]]) -> list[tuple[str, int]]:
    """The run of every partition, in order; leftovers of failed task attempts are deleted."""
    parts = sorted(got)
    if parts != list(range(len(parts))):
        missing = sorted(set(range(max(parts, default=-1) + 1)) - set(parts))
        raise RuntimeError(f"runs missing for partitions {missing[:5]}")
    keep = {os.path.basename(got[p][0]) for p in parts}
    for leftover in storage.list_dir(runs_dir):
        if leftover.name not in keep:
            storage.delete_file(runs_dir.child(leftover.name))
    return [got[p] for p in parts]


# -- pass 2: files --------------------------------------------------------------------------


def _open_run(run: Location, n: int) -> Location:
    """`run`, once its size is checked against the `n` keys its task reported."""
    if n == 0:
        return run
    size = storage.file_size(run)
    if size != n * RUN_DTYPE.itemsize:
        raise RuntimeError(f"{run}: {size} bytes for {n} keys of {RUN_DTYPE.itemsize} bytes")
    return run


def _plan_files(runs, directory: Location, index_num: int, names, tz, max_keys) -> list[BuildPlan]:
    from rmqlab.store.indexservice import next_free_index_file_name

    cap = index_num - 1
    starts, total, _ = plan_ranks([n for _, n in runs], index_num)
    if max_keys is not None:
        total = min(total, int(max_keys))
    n_files = -(-total // cap)
    if names is not None and len(names) != n_files:
        raise ValueError(f"{len(names)} names given for {n_files} files")
    # the driver reads two records per file, not whole runs (a ranged read on an object store)
    opened = [_open_run(Location(directory.fs, p), n) for p, n in runs]
    ends = np.cumsum([n for _, n in runs], dtype=np.int64)

    def row(rank: int):
        r = int(np.searchsorted(ends, rank, side="right"))
        at = rank - starts[r]
        return storage.read_records(opened[r], RUN_DTYPE, at, at + 1)[0]

    def parts(lo: int, hi: int):
        out = []
        for r, (path, n) in enumerate(runs):
            a, b = max(lo, starts[r]), min(hi, starts[r] + n)
            if a < b:
                out.append((path, a - starts[r], b - starts[r]))
        return tuple(out)

    plans: list[BuildPlan] = []
    out_names: list[str] = []
    for f in range(n_files):
        lo, hi = f * cap, min((f + 1) * cap, total)
        seed = (0, 0) if f == 0 else (int(row(lo - 1)["phy_offset"]), int(row(lo - 1)["store_timestamp"]))
        if names is None:
            taken = set(out_names)
            name = next_free_index_file_name(int(row(lo)["store_timestamp"]), tz,
                                             lambda n, taken=taken: n in taken or storage.exists(directory.child(n)),
                                             after=out_names[-1] if out_names else None)
        else:
            name = names[f]
        out_names.append(name)
        plans.append(BuildPlan(f, directory.child(name).path, seed[0], seed[1], parts(lo, hi)))
    return plans


def _build_one(plan: BuildPlan, fs: Any, hash_slot_num: int, index_num: int, slot_count_rule) -> int:
    """Runs in an executor: gather the plan's rows (in filesystem `fs`) into columns and build
    the file in C: in place on a local disk (temporary name, then rename), else in a local
    temporary file that :func:`rmqlab.spark.storage.publish` uploads."""
    from rmqlab.formats.indexfile import build_index_file

    n = plan.rows
    hashes = np.empty(n, np.int32)
    phy = np.empty(n, np.int64)
    ts = np.empty(n, np.int64)
    at = 0
    for path, lo, hi in plan.parts:
        run = storage.read_records(Location(fs, path), RUN_DTYPE, lo, hi)
        hashes[at:at + hi - lo] = run["hash"]
        phy[at:at + hi - lo] = run["phy_offset"]
        ts[at:at + hi - lo] = run["store_timestamp"]
        at += hi - lo
        del run
    target = Location(fs, plan.path)
    # the put loop's threads: the cores Spark gave this task (spark.task.cpus), not the machine's,
    # which the executor's other tasks are using
    from pyspark import TaskContext

    ctx = TaskContext.get()
    threads = max(1, ctx.cpus()) if ctx is not None else None

    def build(path: str) -> int:
        return build_index_file(path, None, phy, ts, hash_slot_num=hash_slot_num, index_num=index_num,
                                end_phy_offset=plan.seed_phy_offset, end_timestamp=plan.seed_timestamp,
                                slot_count_rule=slot_count_rule, hashes=hashes, threads=threads)
    if target.local:
        return build(plan.path)
    with tempfile.TemporaryDirectory(prefix="rmqlab-build-") as scratch:
        local = os.path.join(scratch, target.name)
        written = build(local)
        storage.publish(local, target)
    return written


def empty_job_seconds(spark: Any, tasks: int) -> float:
    """Seconds an Arrow job of `tasks` tasks that does no work takes on `spark`: what each pass
    of :func:`build_index_files` pays before it hashes a key (scheduling the tasks, starting or
    reusing Python workers, shipping Arrow batches both ways), measured with the same job shape
    (``spark.range(...).mapInArrow(...).collect()``). Cost: one Spark job of `tasks` tasks.
    """
    def task(batches):
        import pyarrow as pa

        for batch in batches:
            yield pa.RecordBatch.from_pydict({"n": [batch.num_rows]})

    start = time.monotonic()
    spark.range(0, tasks, 1, max(int(tasks), 1)).mapInArrow(task, "n long").collect()
    return time.monotonic() - start
