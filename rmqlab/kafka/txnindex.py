"""Kafka's transaction index (``<base offset>.txnindex``): the aborted transactions of a segment.

Mirrors ``org.apache.kafka.storage.internals.log.AbortedTxn`` (the entry) and
``TransactionIndex`` (append, sanityCheck, the read loop) and how
``DumpLogSegments.dumpTxnIndex`` prints it (storage and core modules, read at Kafka 3.9.0; the
format is unchanged since 0.11, ``kafka.log.TransactionIndex`` before 3.6).

The file is :data:`ENTRY` records of 34 bytes back to back, big-endian, no header: one an
aborted transaction whose ABORT marker landed in the segment, appended when the marker is
written. ``lastStableOffset`` is the partition's LSO after the abort. Rules the broker keeps:
``lastOffset`` strictly increases from entry to entry (``append`` refuses others), and no
``lastOffset`` is below the segment's base offset (``sanityCheck``, run on start; a failure
makes the broker rebuild the segment's indexes). A partial entry at the end is not read.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "00000000000000000000.txnindex"
>>> _ = p.write_bytes(ENTRY.pack(0, 1000, 3, 7, 3) + ENTRY.pack(0, 1001, 8, 9, 8))
>>> read_txn_index(p)[["producer_id", "first_offset", "last_offset"]].values.tolist()
[[1000, 3, 7], [1001, 8, 9]]
>>> txn_index_lines(read_txn_index(p))[0]
'version: 0 producerId: 1000 firstOffset: 3 lastOffset: 7 lastStableOffset: 3'
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab.errors import FormatError
from rmqlab.formats.layout import Layout

__all__ = ["ENTRY", "TXN_INDEX_SUFFIX", "CURRENT_VERSION", "read_txn_index", "txn_index_lines", "txn_index_problems"]

TXN_INDEX_SUFFIX = ".txnindex"     # LogFileUtils.TXN_INDEX_FILE_SUFFIX
CURRENT_VERSION = 0                # AbortedTxn.CURRENT_VERSION

# AbortedTxn: VERSION_OFFSET .. TOTAL_SIZE. The version is written as a short but
# AbortedTxn.version() reads only its first byte: read_txn_index reads it the same way.
ENTRY = Layout("AbortedTxn", [
    ("version", "h", "entry version: 0"),
    ("producer_id", "q", "producer of the aborted transaction"),
    ("first_offset", "q", "first offset of the transaction"),
    ("last_offset", "q", "offset of its ABORT marker"),
    ("last_stable_offset", "q", "the partition's last stable offset after the abort"),
])


def _base_offset(path) -> int | None:
    stem = Path(path).name.removesuffix(TXN_INDEX_SUFFIX)
    return int(stem) if stem.isdigit() else None


def read_txn_index(path: str | os.PathLike):
    """The aborted transactions of a ``.txnindex`` as a DataFrame, one row an entry in file order.

    Columns: ``version``, ``producer_id``, ``first_offset``, ``last_offset``,
    ``last_stable_offset``. ``df.attrs``: ``base_offset`` (from the name, None if it is not a
    number) and ``trailing_bytes`` (a partial entry at the end, which Kafka does not read).

    Cost: one read-only map and a NumPy view; 34 bytes an entry.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "00000000000000000000.txnindex"
    >>> _ = p.write_bytes(b"")
    >>> len(read_txn_index(p))
    0

    Raises :class:`~rmqlab.errors.FormatError` naming the entry for a version above 0
    (Kafka's "Unexpected aborted transaction version"; a negative one reads, as in Kafka).
    """
    import pandas as pd

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        n = size // ENTRY.size
        if n:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                rows = np.frombuffer(mm, ENTRY.dtype, n).copy()
        else:
            rows = np.zeros(0, ENTRY.dtype)
    version = rows["version"].astype(np.int64) >> 8   # the first byte, as AbortedTxn.version() reads it
    # TransactionIndex's iterator (Kafka 3.6) throws only for a version above CURRENT_VERSION:
    # a negative first byte reads as an entry of that version
    bad = np.nonzero(version > CURRENT_VERSION)[0]
    if len(bad):
        i = int(bad[0])
        raise FormatError(f"aborted transaction version {int(version[i])}, not {CURRENT_VERSION}", path=path,
                          offset=i * ENTRY.size, field=f"AbortedTxn[{i}].version")
    df = pd.DataFrame({f.name: rows[f.name].astype(np.int64) for f in ENTRY.fields})
    df["version"] = version
    df.attrs.update(base_offset=_base_offset(path), trailing_bytes=size - n * ENTRY.size)
    return df


def txn_index_lines(df) -> list[str]:
    """What ``kafka-dump-log`` prints for a ``.txnindex``: one line an entry. Cost: O(entries).

    >>> import pandas as pd
    >>> txn_index_lines(pd.DataFrame(columns=[f.name for f in ENTRY.fields]))
    []
    """
    return [f"version: {e['version']} producerId: {e['producer_id']} firstOffset: {e['first_offset']} "
            f"lastOffset: {e['last_offset']} lastStableOffset: {e['last_stable_offset']}"
            for e in df.to_dict(orient="records")]


def txn_index_problems(path: str | os.PathLike) -> tuple[list[str], dict[str, Any]]:
    """(problems, summary) of a ``.txnindex``: the read errors of :func:`read_txn_index`, a name
    that is not ``<20-digit base offset>.txnindex``, a partial entry at the end, a lastOffset
    below the base offset (``sanityCheck``), lastOffsets that do not strictly increase
    (``append``), and a firstOffset after its lastOffset. The summary holds ``base_offset`` and
    ``aborted`` (entries).

    Cost: as :func:`read_txn_index`.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "00000000000000000010.txnindex"
    >>> _ = p.write_bytes(ENTRY.pack(0, 1, 3, 7, 3))
    >>> txn_index_problems(p)[0]
    ['entry 0: lastOffset 7 is below the base offset 10']
    """
    from rmqlab.errors import RmqlabError

    problems: list[str] = []
    base = _base_offset(path)
    if base is None or len(Path(path).name) != 20 + len(TXN_INDEX_SUFFIX):
        problems.append("the name is not <20-digit base offset>.txnindex")
    try:
        df = read_txn_index(path)
    except RmqlabError as e:
        return [*problems, str(e)], {"base_offset": base}
    if df.attrs["trailing_bytes"]:
        problems.append(f"{df.attrs['trailing_bytes']} bytes of a partial entry at the end")
    first, last = df["first_offset"].to_numpy(), df["last_offset"].to_numpy()
    for i in np.nonzero(first > last)[0][:1]:
        problems.append(f"entry {i}: firstOffset {first[i]} is after lastOffset {last[i]}")
    if base is not None:
        for i in np.nonzero(last < base)[0][:1]:
            problems.append(f"entry {i}: lastOffset {last[i]} is below the base offset {base}")
    for i in np.nonzero(last[1:] <= last[:-1])[0][:1]:     # compared: np.diff wraps past a long
        problems.append(f"entry {i + 1}: lastOffset {last[i + 1]} does not increase (entry {i}: {last[i]})")
    return problems, {"base_offset": base, "aborted": len(df)}
