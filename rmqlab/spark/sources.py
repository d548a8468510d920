"""Sources of messages and index keys, split into pieces that Spark tasks produce on their own.

A source has ``num_partitions`` pieces; piece ``i`` is made inside a task by rmqlab's own
format modules (the generator, the CommitLog reader, :func:`rmqlab.store.indexservice.expand_columns`)
and comes back in broker order, so piece order is CommitLog order:

* :class:`StoreSource`: a real store directory (a plain path or a URI: ``file://``, ``s3://``
  ...), one piece per CommitLog file, decoded by :func:`rmqlab.formats.commitlog.read_columns`.
* :class:`WorkloadSource`: a synthetic :class:`rmqlab.lab.workload.Workload`, generated in parallel
  by the executors, one piece per CommitLog file (see the class for how it is split).

Each source gives its messages (:meth:`Source.messages_frame`) and the keys the broker would
index for them (:meth:`Source.keys_frame`: ``key`` = ``topic#key``, ``phy_offset``,
``store_timestamp``, UNIQ_KEY first then the KEYS tokens, rollbacks skipped) as Spark
DataFrames. :func:`rmqlab.spark.build.build_index_files` also takes a source directly: its tasks
then expand and hash the keys where they are made, and the key strings never pass through
the JVM.

>>> src = WorkloadSource(Workload(messages=2000, seed=1), commitlog_file_size=64 * 1024)
>>> src.num_partitions > 1
True
>>> sum(t.num_rows for t in src.messages(0)) > 0
True
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from rmqlab.formats import storepaths
from rmqlab.formats.commitlog import DEFAULT_FILE_SIZE, place_records, read_columns, record_sizes, store_files
from rmqlab.formats.storepaths import StorePaths
from rmqlab.lab.workload import Workload, generate, generate_chunks
from rmqlab.spark import storage

__all__ = ["Source", "StoreSource", "WorkloadSource", "MESSAGE_SCHEMA", "KEY_SCHEMA"]

#: The message columns of :meth:`Source.messages_frame` (``body`` added with ``body=True``).
MESSAGE_SCHEMA = pa.schema([
    pa.field("topic", pa.string()),
    pa.field("queue_id", pa.int32()),
    pa.field("queue_offset", pa.int64()),
    pa.field("phy_offset", pa.int64()),
    pa.field("total_size", pa.int32()),
    pa.field("sys_flag", pa.int32()),
    pa.field("born_timestamp", pa.int64()),
    pa.field("store_timestamp", pa.int64()),
    pa.field("keys", pa.string()),
    pa.field("uniq_key", pa.string()),
    pa.field("tags", pa.string()),
    pa.field("delay_level", pa.int32()),
])

#: The index keys of :meth:`Source.keys_frame`: one row per put, in broker order.
KEY_SCHEMA = pa.schema([
    pa.field("key", pa.string()),
    pa.field("phy_offset", pa.int64()),
    pa.field("store_timestamp", pa.int64()),
])

_SPARK_SCHEMA = {pa.string(): "string", pa.int32(): "int", pa.int64(): "long", pa.binary(): "binary"}


def _spark_ddl(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {_SPARK_SCHEMA[f.type]}" for f in schema)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table`'s columns of `schema`, cast to its types (e.g. large_string -> string)."""
    return pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in schema], schema=schema)


class Source:
    """Messages and index keys in ``num_partitions`` pieces, each made by one task."""

    num_partitions: int

    def messages(self, i: int, *, body: bool = False) -> Iterator[pa.Table]:
        """Piece `i`'s messages in CommitLog order, as tables of :data:`MESSAGE_SCHEMA`."""
        raise NotImplementedError

    def keys(self, i: int) -> Iterator[pa.RecordBatch]:
        """Piece `i`'s index keys (:data:`KEY_SCHEMA`), expanded per batch of messages with
        :func:`rmqlab.store.indexservice.expand_columns` (the same rules as the broker's buildIndex;
        a message's keys never straddle two batches)."""
        from rmqlab.store.indexservice import expand_columns

        for table in self.messages(i):
            exp = expand_columns({name: table.column(name) for name in
                                  ("topic", "phy_offset", "store_timestamp", "keys", "uniq_key", "sys_flag")})
            if len(exp):
                yield pa.RecordBatch.from_arrays(
                    [exp.keys.cast(pa.string()), pa.array(exp.phy_offsets), pa.array(exp.store_timestamps)],
                    schema=KEY_SCHEMA)

    def _frame(self, spark, schema: pa.Schema, make):
        source = self

        def run(batches):
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    yield from make(source, i)

        n = self.num_partitions
        return spark.range(0, n, 1, max(n, 1)).mapInArrow(run, _spark_ddl(schema))

    def messages_frame(self, spark, *, body: bool = False):
        """All messages as a Spark DataFrame (:data:`MESSAGE_SCHEMA`, plus ``body`` if asked),
        one Spark partition per piece, partition order = CommitLog order. Lazy: the pieces are
        made by the executors each time the frame is evaluated."""
        schema = MESSAGE_SCHEMA.append(pa.field("body", pa.binary())) if body else MESSAGE_SCHEMA

        def make(src, i):
            for t in src.messages(i, body=body):
                yield from t.to_batches()
        return self._frame(spark, schema, make)

    def keys_frame(self, spark):
        """All index keys as a Spark DataFrame (:data:`KEY_SCHEMA`), in broker order by
        partition: the input :func:`rmqlab.spark.build.build_index_files` expects."""
        return self._frame(spark, KEY_SCHEMA, lambda src, i: src.keys(i))


def _from_columns(df, body: bool) -> pa.Table:
    """A read_columns DataFrame as a table of MESSAGE_SCHEMA (+ body)."""
    schema = MESSAGE_SCHEMA.append(pa.field("body", pa.binary())) if body else MESSAGE_SCHEMA
    return pa.Table.from_arrays([pa.array(df[f.name].to_numpy(), f.type, from_pandas=True) for f in schema],
                                schema=schema)


#: a CommitLog file's name: its start offset in 20 digits (as store_files reads it)
_COMMITLOG_NAME = re.compile(r"\d{20}")


class StoreSource(Source):
    """A store's CommitLog (a store root holding ``commitlog/``, a ``commitlog/`` folder or one
    CommitLog file), one piece per CommitLog file, decoded by
    :func:`rmqlab.formats.commitlog.read_columns` inside the task. The executors read the files
    by the location the driver resolved (:mod:`rmqlab.spark.storage`: a plain path made
    absolute, or a URI): on a cluster the store must be on storage they all see.

    `path` is a plain path (made absolute here, on the driver) or a URI of a filesystem
    pyarrow knows (``file://``, ``s3://``, ``gs://``, ``hdfs://``; see
    :mod:`rmqlab.spark.storage`). The driver lists the files; each task reads its own file:
    on a local disk through a memory map, elsewhere from a copy downloaded to the executor's
    local temporary folder for the task (the reader takes a path; the copy is deleted when
    the piece is read). On a cluster the store must be where every executor can read it.
    ``files`` holds each file's absolute path or URI.

    Cost: per task, one decode of its file (:func:`rmqlab.formats.commitlog.read_columns`:
    O(file)), plus, off a local disk, one download of the file (and as much local disk).
    """

    def __init__(self, path: str | os.PathLike, *, check_crc: bool = False):
        root = storage.resolve(path)
        if root.local:
            p = Path(root.path)
            self.commitlog: Path | str = StorePaths(p).commitlog if StorePaths(p).commitlog.is_dir() else p
            self.locations = [storage.resolve(f.path) for f in store_files(self.commitlog)]
        else:
            folder = root.child(storepaths.COMMITLOG)
            if not storage.is_dir(folder):
                folder = root
            self.commitlog = str(folder)
            if storage.is_dir(folder):
                names = [e.name for e in storage.list_dir(folder)
                         if e.is_file and _COMMITLOG_NAME.fullmatch(e.name)]
                self.locations = [folder.child(n) for n in sorted(names, key=int)]
            elif storage.is_file(folder):
                self.locations = [folder]
            else:
                raise FileNotFoundError(f"{folder}: no such file or folder")
        self.files = [str(loc) for loc in self.locations]
        if not self.files:
            raise FileNotFoundError(f"no CommitLog file in {self.commitlog}")
        self.check_crc = check_crc
        self.num_partitions = len(self.files)

    def messages(self, i: int, *, body: bool = False) -> Iterator[pa.Table]:
        with storage.local_copy(self.locations[i]) as path:
            df = read_columns(path, body=body, check_crc=self.check_crc)
        if len(df):
            yield _from_columns(df, body)


@dataclass(frozen=True)
class _Piece:
    """What one task generates: a sub-workload and the CommitLog file it fills."""

    workload: Workload
    file_start: int          # phy offset of the CommitLog file the piece is written to
    messages: int            # at most this many messages (the last piece's share)
    fill: bool               # stop at the first message that does not fit the file


class WorkloadSource(Source):
    """A synthetic workload generated in parallel, one CommitLog file per piece.

    The generator (:mod:`rmqlab.lab.workload`) carries state from message to message (queue
    offsets, counters, pending transactions), so one long stream cannot be cut between
    executors without generating everything before the cut. Instead piece ``i`` is an
    independent sub-workload that fills CommitLog file ``i`` (offset ``i * commitlog_file_size``)
    exactly as the broker fills a file: up to the first message that no longer fits, the rest
    of the file a blank record. So every piece knows its offsets without waiting for the
    others, and ``phy_offset`` is exact.

    How the pieces are joined (all decided on the driver, from `workload`):

    * Messages per file, M: from the mean record size of the first 100,000 messages
      (generated on the driver once: a fixed cost, whatever the workload's size);
      ``num_partitions = ceil(messages / M)``, the last piece gets the remainder, so the total
      is close to, not exactly, ``workload.messages``.
    * Time: piece ``i`` starts at ``Λ⁻¹(i · M · (1 + g))`` (Λ the workload's cumulative rate,
      g = 0.5% + 4/√M): each piece's span ends before the next one begins with high
      probability, leaving a short quiet gap (g of the piece's span) between pieces.
    * Random streams: piece ``i`` has its own seed, derived from ``(seed, i)``.
    * Order ids: piece ``i`` counts from ``first_order_id + i · 2M · max_keys_per_message``,
      so order ids stay unique across pieces (with gaps).
    * Per-piece state restarts: queue offsets and UNIQ_KEY counters start from 0 in each
      piece, transactions or delayed messages still pending at the end of a piece are not
      written (as with ``drain=False``; the last piece follows ``workload.drain``), and
      ``broker_clock_steps`` is shared out between the pieces.

    Use :func:`rmqlab.lab.workload.generate` for a single stream with no seams.

    >>> src = WorkloadSource(Workload(messages=3000, seed=2), commitlog_file_size=128 * 1024)
    >>> m = [t for i in range(src.num_partitions) for t in src.messages(i)]
    >>> phy = np.concatenate([t.column("phy_offset").to_numpy() for t in m])
    >>> bool((np.diff(phy) > 0).all()), int(phy[0])
    (True, 0)
    """

    SAMPLE_MESSAGES = 100_000

    def __init__(self, workload: Workload, *, commitlog_file_size: int = DEFAULT_FILE_SIZE,
                 chunk_messages: int = 131_072):
        from rmqlab.lab.workload import RateProfile

        self.workload = workload
        self.file_size = int(commitlog_file_size)
        self.chunk_messages = int(chunk_messages)
        w = workload
        sample = generate(w.replace(messages=max(1, min(w.messages, self.SAMPLE_MESSAGES)), drain=False))
        mean = float(record_sizes(sample, self.file_size, append_prop_crc=w.append_prop_crc).mean())
        per_file = max(1, int((self.file_size - 8) // mean))
        n = max(1, math.ceil(w.messages / per_file))
        gap = 0.005 + 4.0 / math.sqrt(per_file)
        starts = RateProfile(w).invert(np.arange(n, dtype=float) * per_file * (1.0 + gap))
        budget = 2 * per_file + 1000
        pieces = []
        for i in range(n):
            last = i == n - 1
            seed = int(np.random.SeedSequence([w.seed, 0x5EC, i]).generate_state(1, np.uint64)[0] >> 1)
            steps = w.broker_clock_steps * (i + 1) // n - w.broker_clock_steps * i // n
            share = w.messages - (n - 1) * per_file if last else budget
            sub = w.replace(seed=seed, messages=max(share, steps + 1),
                            start_ms=w.start_ms + int(round(starts[i] * 1000)),
                            first_order_id=w.first_order_id + i * budget * w.max_keys_per_message,
                            broker_clock_steps=steps, drain=w.drain if last else False)
            pieces.append(_Piece(sub, i * self.file_size, share, not last))
        self.messages_per_file = per_file
        self.pieces = pieces
        self.num_partitions = n

    def messages(self, i: int, *, body: bool = False) -> Iterator[pa.Table]:
        piece = self.pieces[i]
        cur = piece.file_start
        left = piece.messages
        for table in generate_chunks(piece.workload, self.chunk_messages, bodies=body):
            table = table.slice(0, left)
            # the workload's tables hold the broker version's properties form already; the
            # __CRC32# pair is only reserved for here (its digits need the encoded record)
            sizes = record_sizes(table, self.file_size, append_prop_crc=piece.workload.append_prop_crc)
            phy, spans, end = place_records(sizes, cur, self.file_size)
            rolled = [s for s in spans if s[5]]
            if rolled:
                keep = rolled[0][3]
                table, phy, sizes = table.slice(0, keep), phy[:keep], sizes[:keep]
            cur = end
            left -= table.num_rows
            yield _workload_messages(table, phy, sizes, body)
            if rolled or left <= 0:
                return


def _workload_messages(table: pa.Table, phy: np.ndarray, sizes: np.ndarray, body: bool) -> pa.Table:
    cols = {f.name: table.column(f.name) for f in MESSAGE_SCHEMA
            if f.name in table.column_names}
    cols["phy_offset"] = pa.array(phy)
    cols["total_size"] = pa.array(sizes.astype(np.int32))
    schema = MESSAGE_SCHEMA
    if body:
        cols["body"] = table.column("body")
        schema = schema.append(pa.field("body", pa.binary()))
    return _conform(pa.table(cols), schema)
