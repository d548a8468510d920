"""The records a caller hands a Kafka writer, as columns: what :func:`rmqlab.kafka.log.encode_batches`
(magic v2) and :func:`rmqlab.kafka.legacy.encode_message_set` (magic v0/v1) both take.

A record is what the Java producer side hands ``MemoryRecordsBuilder.appendWithOffset`` /
``append``: an offset (or the next one), a timestamp, a key and a value (bytes or null) and
headers (``org.apache.kafka.common.header.Header``: a String key, a nullable byte[] value),
as in ``org.apache.kafka.common.record.SimpleRecord``. A caller gives them either as rows (an
iterable of :class:`rmqlab.kafka.log.KafkaRecord` or of tuples in its order: offset, timestamp,
key, value, headers optional) or as columns (a pyarrow Table or RecordBatch, a pandas
DataFrame, a dict) named ``offset`` (optional), ``timestamp``, ``key`` (optional), ``value``
and ``headers`` (optional). :func:`to_table` makes one pyarrow Table of any of them and
:func:`record_columns` the :class:`RecordColumns` the encoders read: NumPy offsets and
timestamps, keys, values and headers as spans of Arrow's data buffers (no copy). Checks here
are those of the input (a missing column, a null timestamp, a null header key, a column of
the wrong type); the format's own rules (rising offsets, sizes, codecs) are the encoders'.

>>> c = record_columns([(None, 5, b"k", "v", [("h", None)]), (None, 6, None, b"w")], next_offset=10)
>>> c.offset.tolist(), c.timestamp.tolist(), c.key[2].tolist(), c.headers_count.tolist()
([10, 11], [5, 6], [1, -1], [1, 0])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RecordColumns", "ROW_FIELDS", "binary_buffers", "headers_arrow", "to_table", "record_columns"]


@dataclass
class RecordColumns:
    """Records as columns, row i a record. A binary column is a span triple (data uint8,
    starts int64[n], lengths int64[n], -1 = null) whose spans may point into Arrow's buffers."""

    offset: np.ndarray          # int64: each record's offset (given, or consecutive from next_offset)
    timestamp: np.ndarray       # int64: ms since the epoch, -1 = none
    key: tuple                  # (data uint8, starts int64[n], lengths int64[n], -1 = null)
    value: tuple                # the same for the values
    headers_count: np.ndarray   # int64: headers of each record
    header_key: tuple           # the same span triple over all headers, record-major (never null)
    header_value: tuple         # the same span triple over all headers' values, record-major


def binary_buffers(arr, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data uint8, starts int64[n], lengths int64[n], -1 = null) of a pyarrow string/binary
    array, zero copy: the spans point into Arrow's data buffer.

    Cost: O(n) for the starts, lengths and validity; a cast of the array to large_binary
    unless it is one.

    >>> import pyarrow as pa
    >>> data, starts, lengths = binary_buffers(pa.array([b"ab", None, b"c"]), "value")
    >>> starts.tolist(), lengths.tolist(), data[2:3].tobytes()
    ([0, 2, 2], [2, -1, 1], b'c')

    `what` names the column in the TypeError raised for an array of another type.
    """
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_binary())
    n = len(arr)
    if pa.types.is_null(arr.type):
        return np.empty(0, np.uint8), np.zeros(n, np.int64), np.full(n, -1, np.int64)
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type) or pa.types.is_string(arr.type)
            or pa.types.is_large_string(arr.type)):
        raise TypeError(f"{what} must hold bytes or str (or None), got Arrow type {arr.type}")
    arr = arr.cast(pa.large_binary())
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int64)[arr.offset:arr.offset + n + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
    return data, offsets[:-1].astype(np.int64), np.where(valid, np.diff(offsets), -1).astype(np.int64)


def _header_value(v):
    if v is None:
        return None
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def headers_arrow(values) -> Any:
    """A list<struct<key: binary, value: binary>> array from per-record header lists (pairs or
    {"key", "value"} dicts); None is an empty list.

    Cost: a Python loop over the headers.

    >>> headers_arrow([[("h", "v")], None]).to_pylist()
    [[{'key': b'h', 'value': b'v'}], []]

    Raises ValueError for a null header key (Kafka header keys are non-null strings).
    """
    import pyarrow as pa

    rows: list[list[dict[str, bytes | None]]] = []
    for hs in values:
        if hs is None or (isinstance(hs, float) and np.isnan(hs)):
            rows.append([])
            continue
        row: list[dict[str, bytes | None]] = []
        for h in hs:
            k, v = (h["key"], h["value"]) if isinstance(h, dict) else h
            if k is None:
                raise ValueError("a header key is null: Kafka header keys are non-null strings")
            row.append({"key": k.encode("utf-8") if isinstance(k, str) else bytes(k), "value": _header_value(v)})
        rows.append(row)
    return pa.array(rows, type=pa.list_(pa.struct([("key", pa.binary()), ("value", pa.binary())])))


#: a record row's fields, in order (:class:`rmqlab.kafka.log.KafkaRecord`'s); headers may be left out
ROW_FIELDS = ("offset", "timestamp", "key", "value", "headers")


def _row(r) -> tuple:
    """(offset, timestamp, key, value, headers) of a record given as a row: a KafkaRecord, or
    a 4- or 5-tuple read in KafkaRecord's order (headers default to none)."""
    fields = tuple(r)
    if not len(ROW_FIELDS) - 1 <= len(fields) <= len(ROW_FIELDS):
        raise TypeError(f"a record row has {len(ROW_FIELDS) - 1} or {len(ROW_FIELDS)} fields "
                        f"({', '.join(ROW_FIELDS)}; headers optional), got {len(fields)}")
    return fields + ((),) * (len(ROW_FIELDS) - len(fields))


def to_table(records):
    """A pyarrow Table of columns offset?, timestamp, key?, value, headers? from a Table,
    RecordBatch, DataFrame, dict of columns or an iterable of KafkaRecord / tuples.

    Cost: none for a Table or RecordBatch; one Arrow array a column otherwise, built by a
    Python loop over the values that are not Arrow already.

    >>> to_table([(0, 5, b"k", "v")]).to_pydict()
    {'timestamp': [5], 'key': [b'k'], 'value': [b'v'], 'headers': [[]], 'offset': [0]}

    Rows give every record an offset or none (None = the next offset): a mix raises ValueError.
    """
    import pyarrow as pa

    if isinstance(records, pa.RecordBatch):
        return pa.Table.from_batches([records])
    if isinstance(records, pa.Table):
        return records
    try:
        import pandas as pd
        if isinstance(records, pd.DataFrame):
            records = {c: records[c] for c in records.columns}
    except ImportError:  # pragma: no cover
        pass
    if isinstance(records, dict):
        cols = {}
        for name, v in records.items():
            if name == "headers" and not isinstance(v, (pa.Array, pa.ChunkedArray)):
                cols[name] = headers_arrow(list(v))
            elif isinstance(v, (pa.Array, pa.ChunkedArray)):
                cols[name] = v
            elif name in ("offset", "timestamp"):
                cols[name] = pa.array(v, pa.int64(), from_pandas=True)
            else:
                vals = [x.encode("utf-8") if isinstance(x, str) else (None if x is None else bytes(x)) for x in v]
                cols[name] = pa.array(vals, pa.large_binary())
        return pa.table(cols)
    rows = [_row(r) for r in records]
    if not rows:
        return pa.table({"timestamp": pa.array([], pa.int64()), "value": pa.array([], pa.large_binary())})
    offs, stamps, keys, values, headers = (list(c) for c in zip(*rows))
    cols = {"timestamp": stamps, "key": keys, "value": values, "headers": headers}
    if any(o is not None for o in offs):
        if any(o is None for o in offs):
            raise ValueError("give every record an offset or none (None = the next offset)")
        cols["offset"] = offs
    return to_table(cols)


def record_columns(records, next_offset: int) -> RecordColumns:
    """The :class:`RecordColumns` of `records` (anything :func:`to_table` takes), offsets
    consecutive from `next_offset` when the records give none.

    Cost: :func:`to_table`, then O(records + headers) NumPy work; keys, values and headers
    are not copied.

    >>> record_columns({"timestamp": [1, 2], "value": [b"a", None]}, 7).offset.tolist()
    [7, 8]

    Raises ValueError for a missing ``timestamp`` or ``value`` column, a null timestamp, some
    offsets null and some not, a null header or header key; TypeError for a binary column or
    headers of another Arrow type.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    table = to_table(records)
    n = table.num_rows
    names = table.column_names
    if "timestamp" not in names:
        raise ValueError("records need a 'timestamp' column (ms since the epoch)")
    if "value" not in names:
        raise ValueError("records need a 'value' column (bytes, str or None)")
    ts_col = table.column("timestamp")
    if pa.types.is_timestamp(ts_col.type):
        ts_col = pc.cast(pc.cast(ts_col, pa.timestamp("ms")), pa.int64())
    if ts_col.null_count:
        raise ValueError("a timestamp is null: Kafka v2 records always carry one (use -1 for none)")
    timestamp = np.asarray(ts_col.to_numpy(zero_copy_only=False), np.int64)
    if "offset" in names and table.column("offset").null_count == 0:
        offset = np.asarray(table.column("offset").to_numpy(zero_copy_only=False), np.int64)
    elif "offset" in names and table.column("offset").null_count != n:
        raise ValueError("give every record an offset or none (null = the next offset)")
    else:
        offset = next_offset + np.arange(n, dtype=np.int64)
    key = binary_buffers(table.column("key"), "key") if "key" in names else \
        (np.empty(0, np.uint8), np.zeros(n, np.int64), np.full(n, -1, np.int64))
    value = binary_buffers(table.column("value"), "value")
    empty = (np.empty(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64))
    if "headers" in names and n:
        col = table.column("headers")
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) or \
                not pa.types.is_struct(col.type.value_type) or col.type.value_type.num_fields != 2:
            raise TypeError(f"headers must be lists of (key, value) structs, got Arrow type {col.type}")
        counts = np.asarray(pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False), np.int64)
        flat = pc.list_flatten(col)
        if flat.null_count:
            raise ValueError("a header is null: give (key, value) pairs")
        hk_arr, hv_arr = flat.flatten()
        hk = binary_buffers(hk_arr, "header key")
        if (hk[2] < 0).any():
            raise ValueError("a header key is null: Kafka header keys are non-null strings")
        hv = binary_buffers(hv_arr, "header value")
    else:
        counts, hk, hv = np.zeros(n, np.int64), empty, empty
    return RecordColumns(offset, timestamp, key, value, counts, hk, hv)
