"""The JVM as an oracle for rmqlab's String.hashCode, on the data a Spark job is processing.

rmqlab hashes keys in C (:func:`rmqlab.jvm.hashcode.java_hash_many`). Spark runs on a JVM, so the
JVM's own ``String.hashCode`` is one ``reflect`` call away: :func:`check_hashes` computes both
for a column, inside the executors, and returns every row where they differ. A distributed
build can run it on its input before trusting any index file it writes.

>>> from rmqlab.spark import get_session                      # doctest: +SKIP
>>> df = get_session().createDataFrame([("TopicTest#ORDER_1",), ("主题#键😀",)], ["key"])  # doctest: +SKIP
>>> check_hashes(df, "key").ok                                 # doctest: +SKIP
True
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = ["with_java_hash", "check_hashes", "HashCheck"]


def with_java_hash(df, column: str, out: str = "java_hash", *, index: bool = False):
    """`df` with column `out`: rmqlab's java_hash_many of `column` (with `index`: the stored
    index hash, index_hash_many), computed in the executors (Arrow batches straight into the C
    hash; no Python loop per row). Cost: O(rows)."""
    import pyarrow as pa
    from pyspark.sql.types import IntegerType, StructField, StructType

    schema = StructType(df.schema.fields + [StructField(out, IntegerType(), False)])

    def add_hash(batches):
        from rmqlab.jvm.hashcode import index_hash_many, java_hash_many  # imported in the worker

        hash_many = index_hash_many if index else java_hash_many
        for batch in batches:
            hashes = hash_many(batch.column(column))
            yield pa.RecordBatch.from_arrays(batch.columns + [pa.array(hashes, pa.int32())],
                                             names=batch.schema.names + [out])

    return df.mapInArrow(add_hash, schema)


@dataclass(frozen=True)
class HashCheck:
    """What :func:`check_hashes` found: rows checked and the rows where the hashes differ."""

    checked: int
    mismatches: pd.DataFrame   # columns: the input column, rmqlab, jvm

    @property
    def ok(self) -> bool:
        return self.checked > 0 and self.mismatches.empty


def check_hashes(df, column: str, *, hash_column: str | None = None, limit: int = 100) -> HashCheck:
    """Compare String.hashCode of every value of `column` as rmqlab computes it (or as
    `hash_column` already holds it) with the JVM's own (``java.util.Objects.hashCode``).

    Null values are skipped (``reflect`` answers 0 for them). At most `limit` mismatching rows
    are returned, all are counted in the check. Cost: one pass over the rows.
    """
    from pyspark.sql import functions as F

    rows = df.where(F.col(column).isNotNull())
    if hash_column is None:
        rows = with_java_hash(rows, column, "rmqlab")
        hash_column = "rmqlab"
    compared = rows.select(
        F.col(column), F.col(hash_column).cast("int").alias("rmqlab"),
        F.expr(f"CAST(reflect('java.util.Objects', 'hashCode', `{column}`) AS INT)").alias("jvm"))
    summary = compared.agg(F.count(F.lit(1)).alias("n"),
                           F.sum((F.col("rmqlab") != F.col("jvm")).cast("int")).alias("bad")).first()
    bad = compared.where(F.col("rmqlab") != F.col("jvm")).limit(limit).toPandas() if summary["bad"] else \
        pd.DataFrame(columns=[column, "rmqlab", "jvm"])
    return HashCheck(int(summary["n"]), bad)
