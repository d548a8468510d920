"""Kafka's producer-state snapshots (``<offset>.snapshot``): the idempotent and transactional
producers a partition knew at an offset.

Mirrors ``org.apache.kafka.storage.internals.log.ProducerStateManager`` (``PID_SNAPSHOT_MAP_SCHEMA``,
``readSnapshot`` / ``writeSnapshot``), ``ProducerStateEntry`` / ``BatchMetadata`` and
``DumpLogSegments.dumpProducerIdSnapshot`` (storage and core modules, read at Kafka 3.9.0;
the file format is version 1 since Kafka 0.11, ``kafka.log.ProducerStateManager`` before 3.5).

A snapshot is :data:`HEADER` (version int16 = 1, crc uint32, entry count int32) then ``count``
:data:`ENTRY` records of 46 bytes, big-endian. ``crc`` is CRC-32C of every byte after it (the
count and the entries). The broker writes one at the log end offset when it rolls a segment and
when it shuts down cleanly, names it by that offset, and on start loads the newest one whose
CRC is valid (a bad one is deleted: ``CorruptSnapshotException``).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "00000000000000000100.snapshot"
>>> _ = p.write_bytes(encode_producer_snapshot([(1000, 0, 9, 99, 9, 1718000000000, -1, -1)]))
>>> s = read_producer_snapshot(p)
>>> s[["producer_id", "first_sequence", "last_sequence", "last_offset"]].values.tolist()
[[1000, 0, 9, 99]]
>>> s.attrs["offset"], s.attrs["crc_ok"]
(100, True)
"""
from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab._crc32c import crc32c
from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.formats.layout import Layout

__all__ = ["HEADER", "ENTRY", "SNAPSHOT_VERSION", "SNAPSHOT_SUFFIX", "read_producer_snapshot",
           "encode_producer_snapshot", "producer_snapshot_lines", "producer_snapshot_problems"]

SNAPSHOT_SUFFIX = ".snapshot"      # LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX
SNAPSHOT_VERSION = 1               # ProducerStateManager.PRODUCER_SNAPSHOT_VERSION

# PID_SNAPSHOT_MAP_SCHEMA; the crc is UNSIGNED_INT32, declared signed and masked on reading
HEADER = Layout("ProducerSnapshotHeader", [
    ("version", "h", "snapshot file version: 1"),
    ("crc", "i", "CRC-32C of every byte after this field (unsigned)"),
    ("entry_count", "i", "producer_entries array length"),
])

# PRODUCER_SNAPSHOT_ENTRY_SCHEMA, in file order
ENTRY = Layout("ProducerSnapshotEntry", [
    ("producer_id", "q", "producer id"),
    ("producer_epoch", "h", "producer epoch"),
    ("last_sequence", "i", "last sequence of the producer's last batch"),
    ("last_offset", "q", "last offset of that batch (-1: no batch metadata)"),
    ("offset_delta", "i", "lastSequence - firstSequence of that batch"),
    ("timestamp", "q", "max timestamp of that batch (ms); also the entry's lastTimestamp"),
    ("coordinator_epoch", "i", "epoch of the last coordinator that wrote a marker (-1: none)"),
    ("current_txn_first_offset", "q", "first offset of the open transaction (-1: none)"),
])

_COLUMNS = [f.name for f in ENTRY.fields]
_INT_MAX = 2**31 - 1


def _first_sequence(last: np.ndarray, delta: np.ndarray) -> np.ndarray:
    # DefaultRecordBatch.decrementSequence: sequences wrap from Integer.MAX_VALUE to 0
    last = last.astype(np.int64)
    delta = delta.astype(np.int64)
    return np.where(last < delta, _INT_MAX - (delta - last) + 1, last - delta)


def _read_bytes(path) -> bytes:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return bytes(mm)


def _offset_from_name(path) -> int | None:
    stem = Path(path).name.removesuffix(SNAPSHOT_SUFFIX)
    return int(stem) if stem.isdigit() else None


def read_producer_snapshot(path: str | os.PathLike, *, verify_crc: bool = True):
    """The producers of a snapshot as a DataFrame, one row an entry in file order.

    Columns: the :data:`ENTRY` fields (``producer_id``, ``producer_epoch``, ``last_sequence``,
    ``last_offset``, ``offset_delta``, ``timestamp`` in ms, ``coordinator_epoch``,
    ``current_txn_first_offset``) plus ``first_sequence`` (lastSequence - offsetDelta, wrapping
    as Kafka's sequences do). ``df.attrs``: ``version``, ``crc`` (stored), ``computed_crc``,
    ``crc_ok``, ``offset`` (from the file name, None if it is not a number) and ``trailing_bytes``
    (after the last entry; Kafka's schema read ignores them).

    Cost: reads the (small: 46 bytes a producer) file through a read-only map; one NumPy view.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "00000000000000000913.snapshot"
    >>> _ = p.write_bytes(encode_producer_snapshot([]))
    >>> len(read_producer_snapshot(p)), p.stat().st_size
    (0, 10)

    Parameters: ``path``; ``verify_crc`` False reads a snapshot whose CRC does not match (crc_ok
    says so) instead of raising.
    Raises :class:`~rmqlab.errors.TruncatedFileError` when the file ends inside the header or the
    entries, :class:`~rmqlab.errors.FormatError` for a version other than 1, a negative count, or
    (with ``verify_crc``) a CRC mismatch: the cases where the broker throws CorruptSnapshotException.
    """
    import pandas as pd

    data = _read_bytes(path)
    if len(data) < HEADER.size:
        raise TruncatedFileError(f"{len(data)} bytes: the header takes {HEADER.size}", path=path, offset=0,
                                 field="ProducerSnapshotHeader")
    version, crc, count = HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise FormatError(f"snapshot version {version}, not {SNAPSHOT_VERSION}", path=path,
                          offset=HEADER.offset("version"), field="version")
    crc &= 0xFFFFFFFF
    computed = crc32c(data[HEADER.offset("entry_count"):])
    if verify_crc and crc != computed:
        raise FormatError(f"snapshot is corrupt: stored CRC-32C {crc}, computed {computed}", path=path,
                          offset=HEADER.offset("crc"), field="crc")
    if count < 0:
        raise FormatError(f"entry count {count}", path=path, offset=HEADER.offset("entry_count"), field="entry_count")
    room = (len(data) - HEADER.size) // ENTRY.size
    if count > room:
        raise TruncatedFileError(f"{count} entries announced, the file holds {room}", path=path,
                                 offset=HEADER.size + room * ENTRY.size, field=f"producer_entries[{room}]")
    rows = np.frombuffer(data, ENTRY.dtype, count, HEADER.size)
    df = pd.DataFrame({name: rows[name].astype(np.int64) for name in _COLUMNS})
    df.insert(2, "first_sequence", _first_sequence(rows["last_sequence"], rows["offset_delta"]))
    df.attrs.update(version=version, crc=crc, computed_crc=computed, crc_ok=crc == computed,
                    offset=_offset_from_name(path), trailing_bytes=len(data) - HEADER.size - count * ENTRY.size)
    return df


def encode_producer_snapshot(entries: Iterable[Sequence[int]]) -> bytes:
    """The bytes of a snapshot holding `entries`: tuples in :data:`ENTRY` order (producerId,
    producerEpoch, lastSequence, lastOffset, offsetDelta, timestamp, coordinatorEpoch,
    currentTxnFirstOffset), with the version and CRC-32C the broker writes.

    Cost: O(entries).

    >>> encode_producer_snapshot([]).hex()
    '000148674bc700000000'

    Raises struct.error for a value out of its field's range.
    """
    body = b"".join(ENTRY.pack(*e) for e in entries)
    tail = HEADER.field_struct("entry_count").pack(len(body) // ENTRY.size) + body
    crc = crc32c(tail)
    return HEADER.field_struct("version").pack(SNAPSHOT_VERSION) + crc.to_bytes(4, "big") + tail


def producer_snapshot_lines(df) -> list[str]:
    """What ``kafka-dump-log`` prints for a snapshot: one line an entry.

    ``currentTxnFirstOffset`` prints as Java's OptionalLong does (Kafka 3.5+; 3.4 and older
    printed Scala's ``None`` / ``Some(n)``); the batch part is left out where the entry has no
    batch metadata (lastOffset < 0). Cost: O(entries).

    >>> import pandas as pd
    >>> row = dict(producer_id=7, producer_epoch=0, first_sequence=0, last_sequence=4, last_offset=10,
    ...            offset_delta=4, timestamp=5, coordinator_epoch=-1, current_txn_first_offset=-1)
    >>> print(producer_snapshot_lines(pd.DataFrame([row]))[0].replace(" lastTimestamp", "\\nlastTimestamp"))
    producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty
    lastTimestamp: 5 firstSequence: 0 lastSequence: 4 lastOffset: 10 offsetDelta: 4 timestamp: 5
    """
    out = []
    for e in df.to_dict(orient="records"):
        txn = e["current_txn_first_offset"]
        txn_text = f"OptionalLong[{txn}]" if txn >= 0 else "OptionalLong.empty"
        line = (f"producerId: {e['producer_id']} producerEpoch: {e['producer_epoch']} "
                f"coordinatorEpoch: {e['coordinator_epoch']} currentTxnFirstOffset: {txn_text} "
                f"lastTimestamp: {e['timestamp']} ")
        if e["last_offset"] >= 0:
            line += (f"firstSequence: {e['first_sequence']} lastSequence: {e['last_sequence']} "
                     f"lastOffset: {e['last_offset']} offsetDelta: {e['offset_delta']} timestamp: {e['timestamp']}")
        out.append(line.rstrip())
    return out


def producer_snapshot_problems(path: str | os.PathLike) -> tuple[list[str], dict[str, Any]]:
    """(problems, summary) of a snapshot file: the read errors and CRC of
    :func:`read_producer_snapshot`, a name that is not ``<20-digit offset>.snapshot``, trailing
    bytes, duplicate producer ids (the broker keeps one entry a producer), and entries whose
    last offset or open transaction lies at or past the snapshot's offset (it is taken at the
    log end offset, so every offset in it is below). The summary holds ``offset``,
    ``producers`` and ``transactional`` (entries with an open transaction).

    Cost: as :func:`read_producer_snapshot`.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "00000000000000000005.snapshot"
    >>> _ = p.write_bytes(encode_producer_snapshot([(1, 0, 0, 9, 0, 0, -1, -1)]))
    >>> producer_snapshot_problems(p)[0]
    ['producer 1: lastOffset 9 is not below the snapshot offset 5']
    """
    from rmqlab.errors import RmqlabError

    problems: list[str] = []
    offset = _offset_from_name(path)
    if offset is None or len(Path(path).name) != 20 + len(SNAPSHOT_SUFFIX):
        problems.append("the name is not <20-digit offset>.snapshot")
    try:
        df = read_producer_snapshot(path, verify_crc=False)
    except RmqlabError as e:
        return [*problems, str(e)], {"offset": offset}
    if not df.attrs["crc_ok"]:
        problems.append(f"CRC-32C mismatch: stored {df.attrs['crc']}, computed {df.attrs['computed_crc']} "
                        f"(the broker deletes such a snapshot and rebuilds the state from the log)")
    if df.attrs["trailing_bytes"]:
        problems.append(f"{df.attrs['trailing_bytes']} bytes after the last entry")
    dup = df["producer_id"][df["producer_id"].duplicated()].tolist()
    if dup:
        problems.append(f"producer id {dup[0]} appears more than once")
    if offset is not None:
        for pid, last, txn in zip(df["producer_id"].tolist(), df["last_offset"].tolist(),
                                  df["current_txn_first_offset"].tolist()):
            if last >= offset:
                problems.append(f"producer {pid}: lastOffset {last} is not below the snapshot offset {offset}")
            if txn >= offset:
                problems.append(f"producer {pid}: currentTxnFirstOffset {txn} is not below the snapshot offset "
                                f"{offset}")
    summary = {"offset": offset, "producers": len(df),
               "transactional": int((df["current_txn_first_offset"] >= 0).sum()), "crc_ok": bool(df.attrs["crc_ok"])}
    return problems, summary
