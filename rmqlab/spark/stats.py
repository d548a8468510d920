"""Index statistics with Spark: one task per index file, and key statistics over a DataFrame.

* :func:`index_stats` runs :func:`rmqlab.analysis.indexstats.file_report` on every index file of a
  folder (a plain path or a URI: ``file://``, ``s3://`` ..., see :mod:`rmqlab.spark.storage`),
  one Spark task per file (on a cluster the folder must be where every executor can read
  it), and returns Spark DataFrames of the per-file rows,
  the chain-length histograms, the longest chains, the hottest hashes and one overall row,
  optionally also written as Parquet.
* :func:`key_stats` ranks the keys of a DataFrame of puts and finds true hash collisions
  (different key strings, same stored index hash), the hash computed in the executors by
  :func:`rmqlab.spark.hashcheck.with_java_hash` with ``index=True`` (rmqlab's C
  index_hash_many over Arrow batches).

The format is read only through :mod:`rmqlab.analysis.indexstats` (and so :mod:`rmqlab.formats.indexfile`);
nothing here re-implements it. Figures are the same as the single-process functions give:
``index_stats(...).to_pandas().files`` equals :func:`rmqlab.analysis.indexstats.directory_stats`.

>>> from rmqlab.spark import get_session                        # doctest: +SKIP
>>> s = index_stats(get_session(), "store/index").to_pandas()   # doctest: +SKIP
>>> s.overall.occupancy.iloc[0]                                 # doctest: +SKIP
0.98...
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

from rmqlab.analysis.indexstats import FILE_STATS_COLUMNS
from rmqlab.spark.storage import Location

__all__ = ["IndexStats", "KeyStats", "index_stats", "key_stats"]

_SPARK_TYPES = {"str": "string", "int": "bigint", "float": "double"}
_STATS_COLUMNS = [c for c, _ in FILE_STATS_COLUMNS]
_NESTED = {
    "chain_lengths": [("chain_length", "bigint"), ("slots", "bigint")],
    "longest_chains": [("slot", "bigint"), ("chain_length", "bigint"), ("distinct_hashes", "bigint")],
    "hottest_hashes": [("key_hash", "bigint"), ("entries", "bigint")],
}
_REPORT_SCHEMA = ", ".join(
    [f"{c} {_SPARK_TYPES[k]}" for c, k in FILE_STATS_COLUMNS]
    + [f"{name} array<struct<{', '.join(f'{f}:{t}' for f, t in cols)}>>" for name, cols in _NESTED.items()])

#: Sort order of each table in :meth:`IndexStats.to_pandas` (column, ascending).
_ORDER = {
    "files": [("name", True)],
    "chain_lengths": [("file", True), ("chain_length", True)],
    "longest_chains": [("file", True), ("chain_length", False), ("slot", True)],
    "hottest_hashes": [("file", True), ("entries", False), ("key_hash", True)],
    "overall": [],
}


def _sorted_pandas(df, order: list[tuple[str, bool]]):
    pdf = df if not hasattr(df, "toPandas") else df.toPandas()
    if order and len(pdf):
        pdf = pdf.sort_values([c for c, _ in order], ascending=[a for _, a in order], kind="stable")
    return pdf.reset_index(drop=True)


@dataclass(frozen=True)
class IndexStats:
    """The statistics of an index folder, as Spark DataFrames (or, after :meth:`to_pandas`,
    pandas DataFrames with the same columns):

    * ``files``: one row per file, the columns of :data:`rmqlab.analysis.indexstats.FILE_STATS_COLUMNS`;
    * ``chain_lengths``: file, chain_length, slots (each file's
      :func:`~rmqlab.analysis.indexstats.chain_length_histogram`);
    * ``longest_chains``: file, slot, chain_length, distinct_hashes (each file's top chains);
    * ``hottest_hashes``: file, key_hash, entries (each file's top stored hashes);
    * ``overall``: one row: files, entries, slots (total hash slots), slots_used, occupancy
      (slots_used / slots, NaN without files), max_chain_length, begin_timestamp /
      end_timestamp (ms: earliest begin and latest end over the files holding at least one
      entry, 0 if none), span_seconds, entries_per_second (NaN when the span is <= 0).

    ``file`` is the file's name (``yyyyMMddHHmmssSSS``), as ``files.name``.
    """

    files: Any
    chain_lengths: Any
    longest_chains: Any
    hottest_hashes: Any
    overall: Any

    def to_pandas(self) -> IndexStats:
        """The same tables as pandas DataFrames (collected to the driver), sorted: files by name;
        chain_lengths by file, chain_length; longest_chains by file, chain_length descending,
        slot; hottest_hashes by file, entries descending, key_hash. Cost: one collect per table
        (small: a row per file, per chain length and per top chain)."""
        return IndexStats(**{f.name: _sorted_pandas(getattr(self, f.name), _ORDER[f.name])
                             for f in fields(self)})


@dataclass(frozen=True)
class KeyStats:
    """Key statistics of a DataFrame of puts (Spark DataFrames, or pandas after
    :meth:`to_pandas`):

    * ``hottest_keys``: key, puts (the top keys by puts, ties by key);
    * ``true_collisions``: key_hash, distinct_keys, keys (sorted array of the key strings),
      puts; sorted by distinct_keys descending, puts descending, key_hash.

    The same figures as :func:`rmqlab.analysis.indexstats.hottest_keys` /
    :func:`~rmqlab.analysis.indexstats.true_collisions`.
    """

    hottest_keys: Any
    true_collisions: Any

    def to_pandas(self) -> KeyStats:
        """Both tables as pandas DataFrames in their documented order, ``keys`` as Python lists
        of str (as :func:`rmqlab.analysis.indexstats.true_collisions` gives). Cost: one collect each."""
        hot = _sorted_pandas(self.hottest_keys, [("puts", False), ("key", True)])
        coll = _sorted_pandas(self.true_collisions,
                              [("distinct_keys", False), ("puts", False), ("key_hash", True)])
        if len(coll):
            coll["keys"] = coll["keys"].map(lambda ks: [str(k) for k in ks])
        return KeyStats(hot, coll)


# ---------------------------------------------------------------------------------- files


def _report_task(files: list[Location], top: int | None, hash_slot_num: int | None, index_num: int | None):
    """mapInArrow function: for each id in the batches, file_report of files[id] as one row
    (off a local disk, of a local copy; ``path`` is then the file's URI)."""
    def run(batches):
        import pyarrow as pa

        from rmqlab.analysis.indexstats import FILE_STATS_COLUMNS, file_report  # imported in the worker
        from rmqlab.spark import storage

        arrow = {"str": pa.string(), "int": pa.int64(), "float": pa.float64()}
        nested = {name: pa.list_(pa.struct([(f, pa.int64()) for f, _ in cols]))
                  for name, cols in _NESTED.items()}
        for batch in batches:
            for i in batch.column("id").to_pylist():
                with storage.local_copy(files[i]) as path:
                    r = file_report(path, top=top, hash_slot_num=hash_slot_num, index_num=index_num)
                if not files[i].local:
                    r.stats["path"] = str(files[i])
                arrays = [pa.array([r.stats[c]], arrow[k]) for c, k in FILE_STATS_COLUMNS]
                arrays += [pa.array([getattr(r, name).to_dict("records")], nested[name])
                           for name in _NESTED]
                yield pa.RecordBatch.from_arrays(
                    arrays, names=[c for c, _ in FILE_STATS_COLUMNS] + list(_NESTED))
    return run


def _overall(files):
    from pyspark.sql import functions as F

    nan = F.lit(float("nan"))
    has = F.col("entries") > 0
    agg = files.agg(
        F.count(F.lit(1)).alias("files"),
        F.coalesce(F.sum("entries"), F.lit(0)).cast("bigint").alias("entries"),
        F.coalesce(F.sum("hash_slot_num"), F.lit(0)).cast("bigint").alias("slots"),
        F.coalesce(F.sum("slots_used"), F.lit(0)).cast("bigint").alias("slots_used"),
        F.coalesce(F.max("max_chain_length"), F.lit(0)).cast("bigint").alias("max_chain_length"),
        F.coalesce(F.min(F.when(has, F.col("begin_timestamp"))), F.lit(0)).cast("bigint").alias("begin_timestamp"),
        F.coalesce(F.max(F.when(has, F.col("end_timestamp"))), F.lit(0)).cast("bigint").alias("end_timestamp"),
    )
    span = (F.col("end_timestamp") - F.col("begin_timestamp")) / F.lit(1000.0)
    return agg.select(
        "files", "entries", "slots", "slots_used",
        F.when(F.col("slots") > 0, F.col("slots_used") / F.col("slots")).otherwise(nan).alias("occupancy"),
        "max_chain_length", "begin_timestamp", "end_timestamp",
        span.alias("span_seconds"),
        F.when(span > 0, F.col("entries") / span).otherwise(nan).alias("entries_per_second"),
    )


def index_stats(spark, directory: str | os.PathLike, *, hash_slot_num: int | None = None,
                index_num: int | None = None, top: int | None = 10, parquet: str | os.PathLike | None = None,
                parquet_mode: str = "overwrite") -> IndexStats:
    """Statistics of every index file in `directory`, one Spark task per file.

    `directory` is a plain path (made absolute on the driver) or a URI of a filesystem pyarrow
    knows (:mod:`rmqlab.spark.storage`). The driver lists the folder (17-digit names, oldest
    first, as :func:`rmqlab.analysis.indexstats.index_file_paths`); task i runs
    :func:`rmqlab.analysis.indexstats.file_report` on file i in an executor: through a memory map on a
    local disk, elsewhere on a copy downloaded to the executor's temporary folder (then
    ``files.path`` is the file's URI). On a cluster every executor must be able to read it.
    `hash_slot_num` / `index_num` are passed to every open (see
    :func:`rmqlab.analysis.indexstats.file_stats`); `top` bounds each file's longest chains and hottest
    hashes (None = all). A bad file fails the job with the typed error of
    :meth:`rmqlab.formats.indexfile.IndexFile.open` in the Python traceback Spark reports.

    The per-file rows are computed once and cached (the job runs before this returns); the
    tables are Spark DataFrames derived from them, see :class:`IndexStats`. With `parquet`,
    each table is also written as a Parquet folder under it (``files.parquet``,
    ``chain_lengths.parquet``, ``longest_chains.parquet``, ``hottest_hashes.parquet``,
    ``overall.parquet``) with Spark's save mode `parquet_mode` ("overwrite" replaces those
    folders; "errorifexists" refuses). Spark's own writer writes them, through Hadoop's
    filesystems: a plain path (made absolute on the driver) or a URI Hadoop knows
    (``s3a://`` needs the hadoop-aws jars on the cluster), not pyarrow's.

    Cost: per file as :func:`rmqlab.analysis.indexstats.file_stats` (O(slots + entries log entries)),
    files in parallel over the executors' cores, plus a few small Spark jobs.
    """
    from pyspark.sql import functions as F

    from rmqlab.analysis.indexstats import index_file_paths
    from rmqlab.spark import storage
    from rmqlab.store.indexservice import is_index_file_name

    folder = storage.resolve(directory)
    if folder.local:
        files = [storage.resolve(p) for p in index_file_paths(folder.path)]
    else:
        files = [folder.child(e.name) for e in storage.list_dir(folder) if e.is_file and is_index_file_name(e.name)]
    if files:
        ids = spark.range(0, len(files), 1, len(files))      # one id, so one file, per task
        reports = ids.mapInArrow(_report_task(files, top, hash_slot_num, index_num), _REPORT_SCHEMA)
    else:
        reports = spark.createDataFrame([], _REPORT_SCHEMA)
    reports = reports.cache()
    reports.count()            # run the per-file tasks now, so a bad file fails here

    file_col = F.col("name").alias("file")
    stats = IndexStats(
        files=reports.select(*_STATS_COLUMNS),
        chain_lengths=reports.select(file_col, F.inline("chain_lengths")),
        longest_chains=reports.select(file_col, F.inline("longest_chains")),
        hottest_hashes=reports.select(file_col, F.inline("hottest_hashes")),
        overall=_overall(reports.select(*_STATS_COLUMNS)),
    )
    if parquet is not None:
        base = os.fspath(parquet)
        base = base if storage.is_uri(base) else os.path.abspath(base)
        for f in fields(stats):
            getattr(stats, f.name).write.mode(parquet_mode).parquet(f"{base.rstrip('/')}/{f.name}.parquet")
    return stats


# ----------------------------------------------------------------------------------- keys


def key_stats(df, *, top: int | None = 10, column: str = "key") -> KeyStats:
    """Hottest keys and true hash collisions of the puts in `df`, computed in Spark.

    `df` has one row per put and a string column `column` (default ``key``: the full
    ``topic#key`` string; other columns are ignored). Null keys are ignored. ``hottest_keys``
    holds the `top` keys by puts (None = all), ties broken by key in Spark's binary string
    order (the same as Python's); ``true_collisions`` every stored index hash shared by two or
    more distinct keys, the hash computed in the executors by
    :func:`rmqlab.jvm.hashcode.index_hash_many` over Arrow batches (no Python loop per row).

    Returns lazy Spark DataFrames (see :class:`KeyStats`). Cost when evaluated: one group-by of
    the rows by key (a shuffle), then for the collisions one hash pass over the distinct keys
    and a group-by of them by hash.
    """
    from pyspark.sql import functions as F

    from rmqlab.spark.hashcheck import with_java_hash

    keys = df.select(F.col(column).cast("string").alias("key")).where(F.col("key").isNotNull())
    counts = keys.groupBy("key").agg(F.count(F.lit(1)).cast("bigint").alias("puts"))
    hottest = counts.orderBy(F.desc("puts"), F.asc("key"))
    if top is not None:
        hottest = hottest.limit(max(int(top), 0))
    hashed = with_java_hash(counts, "key", "key_hash", index=True) \
        .withColumn("key_hash", F.col("key_hash").cast("bigint"))
    collisions = (hashed.groupBy("key_hash")
                  .agg(F.count(F.lit(1)).cast("bigint").alias("distinct_keys"),
                       F.sort_array(F.collect_list("key")).alias("keys"),
                       F.sum("puts").cast("bigint").alias("puts"))
                  .where(F.col("distinct_keys") > 1)
                  .orderBy(F.desc("distinct_keys"), F.desc("puts"), F.asc("key_hash")))
    return KeyStats(hottest, collisions)
