"""KRaft metadata: the records of ``__cluster_metadata-0`` segments and metadata snapshots
(``<endOffset>-<epoch>.checkpoint``, ``bootstrap.checkpoint``).

Mirrors ``org.apache.kafka.server.common.serialization.AbstractApiMessageSerde`` (a metadata
record's value is a frame: frameVersion, apiKey and version as unsigned varints, then the
message), ``org.apache.kafka.common.metadata.MetadataRecordType`` (generated from the
``metadata/src/main/resources/common/metadata/*.json`` schemas: the apiKey -> name table),
every record type's schema (declared in :mod:`rmqlab.kafka.record_schemas`, 3.0-4.4),
``org.apache.kafka.snapshot.Snapshots`` (file names) and ``RecordsSnapshotReader`` (a snapshot
starts with a SnapshotHeader control batch and ends with a SnapshotFooter one); read at Kafka
3.9.0.

A snapshot file is record batches, exactly like a segment (:mod:`rmqlab.kafka.log` reads
them); its records count from offset 0, and its name says which log offset and epoch it
covers: ``00000000000000004758-0000000001.checkpoint`` holds the state up to offset 4758
(exclusive) of epoch 1. ``bootstrap.checkpoint`` (in the metadata log directory) is the
snapshot ``kafka-storage format`` writes to start a cluster with.

>>> decode_metadata_record(b"\\x01\\x0c\\x00\\x11metadata.version\\x00\\x0e\\x00")  # doctest: +NORMALIZE_WHITESPACE
{'frame_version': 1, 'api_key': 12, 'type': 'FeatureLevelRecord', 'version': 0,
 'data': {'name': 'metadata.version', 'featureLevel': 14}}
>>> parse_snapshot_name("00000000000000004758-0000000001.checkpoint")
(4758, 1)
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqlab.errors import FormatError, RmqlabError
from rmqlab.kafka.control import decode_control
from rmqlab.kafka.protocol import Reader
from rmqlab.kafka.record_schemas import METADATA_SCHEMAS
from rmqlab.kafka.schema import in_versions, java_json, read_message

if TYPE_CHECKING:   # annotations only: log is imported where records are read
    from rmqlab.kafka.log import TornTail

__all__ = ["METADATA_RECORD_TYPES", "SNAPSHOT_SUFFIX", "BOOTSTRAP_CHECKPOINT", "parse_snapshot_name",
           "decode_metadata_record", "metadata_text", "read_metadata_records", "read_kraft_snapshot",
           "kraft_snapshot_problems"]

SNAPSHOT_SUFFIX = ".checkpoint"            # Snapshots.SUFFIX
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"   # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
_FRAME_VERSION = 1                         # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")   # Snapshots: %020d-%010d

#: MetadataRecordType: apiKey -> record name (6, 13 and 16 were removed before 3.0; 28 is 4.0's,
#: 29 4.4's)
METADATA_RECORD_TYPES = {api_key: schema.name for api_key, schema in METADATA_SCHEMAS.items()}


def parse_snapshot_name(name: str | os.PathLike) -> tuple[int, int] | None:
    """(end offset, epoch) of a KRaft snapshot file name, or None for another name.

    Cost: O(1).

    >>> parse_snapshot_name("bootstrap.checkpoint") is None
    True
    """
    m = _SNAPSHOT_NAME.match(Path(name).name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def decode_metadata_record(value: bytes | None, *, path: str | os.PathLike | None = None, offset: int = 0,
                           body: bool = True) -> dict[str, Any]:
    """A metadata record's value: ``frame_version``, ``api_key``, ``type`` (the record name,
    None for an apiKey no release up to 4.4 has), ``version`` and ``data`` (the body as the JSON
    kafka-dump-log prints: every field of every version of every record type of 3.0-4.4, tagged
    fields only when not at their default; None for an unknown apiKey, or with ``body=False``).

    Cost: O(value bytes).

    >>> decode_metadata_record(b"\\x01\\x14\\x00\\x00")
    {'frame_version': 1, 'api_key': 20, 'type': 'NoOpRecord', 'version': 0, 'data': {}}

    Parameters: the value bytes; ``path`` / ``offset`` (its file offset) name errors.
    Raises :class:`~rmqlab.errors.FormatError` for a null value, frame version other than 1
    (0 was the 2.8 preview's), a bad varint, a body version beyond the schema's, a bad body, or
    bytes left after a decoded body (Kafka's MetadataParseException cases).
    """
    if value is None:
        raise FormatError("a metadata record has a null value", path=path, offset=offset, field="MetadataRecord")
    r = Reader(value, path=path, base=offset, what="MetadataRecord")
    frame = r.uvarint("frameVersion")
    if frame != _FRAME_VERSION:
        extra = " (the KRaft preview of Kafka 2.8)" if frame == 0 else ""
        raise r.error(f"frame version {frame}{extra}; only {_FRAME_VERSION} is read", "frameVersion", 0)
    api_key = r.uvarint("apiKey")
    version = r.uvarint("version")
    schema = METADATA_SCHEMAS.get(api_key)
    name = schema.name if schema else None
    out: dict[str, Any] = {"frame_version": frame, "api_key": api_key, "type": name, "version": version, "data": None}
    if body and schema is not None:
        if not in_versions(version, schema.versions):
            raise r.error(f"{name} version {version}; the schema has 0..{schema.versions[1]}", "version", 2)
        body_reader = Reader(value, path=path, base=offset, start=r.pos, what=name or "")
        out["data"] = read_message(body_reader, schema, version)
    return out


def metadata_text(decoded: dict[str, Any]) -> str:
    """A metadata record as ``kafka-dump-log --cluster-metadata-decoder`` prints its payload:
    ``{"type":"TOPIC_RECORD","version":0,"data":{...}}`` (the type as MetadataRecordType's enum
    name, numbers as Jackson writes them); the data is ``null`` where the body is not decoded
    here (``body=False``). Cost: O(record).

    >>> metadata_text({"type": "NoOpRecord", "api_key": 20, "version": 0, "data": {}})
    '{"type":"NO_OP_RECORD","version":0,"data":{}}'
    """
    name = decoded["type"]
    enum = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper() if name else f"UNKNOWN({decoded['api_key']})"
    return java_json({"type": enum, "version": decoded["version"], "data": decoded["data"]})


def read_metadata_records(source, *, errors: str = "raise", torn_tail: TornTail = "raise"):
    """Every record of a metadata segment or snapshot as a DataFrame, in file order: control
    records decoded by :func:`~rmqlab.kafka.control.decode_control`, the others by
    :func:`decode_metadata_record`.

    Columns: ``offset``, ``position``, ``batch_position``, ``timestamp``, ``is_control``,
    ``type`` (the control type name or the metadata record name), ``version`` (the record's
    schema version; for control records the key version), ``data`` (dict or None), ``error``
    (None, or with ``errors="keep"`` the message of a record that did not decode, as
    kafka-dump-log skips it). Cost: one :func:`~rmqlab.kafka.log.read_records` pass plus
    O(record bytes) in Python.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, encode_batches
    >>> data = encode_batches([KafkaRecord(0, 5, None, b"\\x01\\x02\\x00\\x02t" + bytes(16) + b"\\x00")]).data
    >>> read_metadata_records(bytes(data))[["offset", "type", "data"]].values.tolist()
    [[0, 'TopicRecord', {'name': 't', 'topicId': 'AAAAAAAAAAAAAAAAAAAAAA'}]]

    Parameters: a path or bytes, ``errors`` ("raise" or "keep"), ``torn_tail`` (as read_records).
    Raises the typed errors of read_records, and with ``errors="raise"`` those of the decoders.
    """
    import pandas as pd

    from rmqlab.kafka.log import read_batches, read_records

    if errors not in ("raise", "keep"):
        raise ValueError(f"errors={errors!r}: 'raise' or 'keep'")
    path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    batches = read_batches(source, torn_tail=torn_tail)
    control = set(batches.loc[batches["is_control"], "position"].tolist())
    recs = read_records(source, headers=False, torn_tail=torn_tail)
    # a record that did not decode has no type, version or data, only its error
    rows: list[tuple[Any, ...]] = []
    for off, pos, bpos, ts, key, value in zip(recs["offset"].tolist(), recs["position"].tolist(),
                                              recs["batch_position"].tolist(), recs["timestamp"].tolist(),
                                              recs["key"].tolist(), recs["value"].tolist()):
        is_control = bpos in control
        try:
            if is_control:
                d = decode_control(key, value, path=path, key_offset=pos, value_offset=pos)
                rows.append((off, pos, bpos, ts, True, d["name"], d["key_version"], d["data"], None))
            else:
                d = decode_metadata_record(value, path=path, offset=pos)
                rows.append((off, pos, bpos, ts, False, d["type"], d["version"], d["data"], None))
        except RmqlabError as e:
            if errors == "raise":
                raise
            rows.append((off, pos, bpos, ts, is_control, None, None, None, str(e)))
    cols = ["offset", "position", "batch_position", "timestamp", "is_control", "type", "version", "data", "error"]
    return pd.DataFrame(rows, columns=cols)


def read_kraft_snapshot(path: str | os.PathLike) -> dict[str, Any]:
    """A KRaft metadata snapshot: ``end_offset`` and ``epoch`` from its name (None for
    ``bootstrap.checkpoint``), ``batches`` (count), ``header`` / ``footer`` (the data of the
    SnapshotHeader / SnapshotFooter records, None if missing), ``records`` (the
    :func:`read_metadata_records` frame, decode errors kept) and ``type_counts``
    ({record type: count}).

    Cost: as :func:`read_metadata_records`.

    >>> import tempfile, pathlib
    >>> from rmqlab.kafka.log import KafkaRecord, encode_batches
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "00000000000000000010-0000000002.checkpoint"
    >>> _ = p.write_bytes(bytes(encode_batches([KafkaRecord(0, 5, None, b"\\x01\\x14\\x00\\x00")]).data))
    >>> s = read_kraft_snapshot(p); s["end_offset"], s["epoch"], s["header"], s["type_counts"]
    (10, 2, None, {'NoOpRecord': 1})

    Raises the typed errors of :func:`~rmqlab.kafka.log.read_records` (a torn batch, a bad varint).
    """
    from rmqlab.kafka.log import read_batches

    name = parse_snapshot_name(path)
    batches = read_batches(path)
    recs = read_metadata_records(path, errors="keep")
    header = recs.loc[recs["type"] == "SNAPSHOT_HEADER", "data"].tolist()
    footer = recs.loc[recs["type"] == "SNAPSHOT_FOOTER", "data"].tolist()
    counts = recs["type"].fillna("(undecoded)").value_counts(sort=False).to_dict()
    return {"file": os.fspath(path), "end_offset": name[0] if name else None, "epoch": name[1] if name else None,
            "batches": len(batches), "crc_ok": bool(batches["crc_ok"].all()) if len(batches) else True,
            "header": header[0] if header else None, "footer": footer[-1] if footer else None,
            "records": recs, "type_counts": {str(k): int(v) for k, v in counts.items()}}


def kraft_snapshot_problems(path: str | os.PathLike) -> list[str]:
    """What is wrong with a KRaft snapshot file, as sentences (empty when it is sound): a bad
    name, a batch whose CRC-32C does not match, a first record other than a SnapshotHeader or a
    last one other than a SnapshotFooter (RecordsSnapshotReader's rules), either of them
    anywhere else, records that do not decode, or an unreadable file.

    Cost: as :func:`read_kraft_snapshot`.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.checkpoint"
    >>> _ = p.write_bytes(b"")
    >>> kraft_snapshot_problems(p)  # doctest: +NORMALIZE_WHITESPACE
    ['the name is neither <20-digit end offset>-<10-digit epoch>.checkpoint nor bootstrap.checkpoint',
     'no records: a snapshot starts with a SnapshotHeader and ends with a SnapshotFooter']
    """
    problems = []
    if parse_snapshot_name(path) is None and Path(path).name != BOOTSTRAP_CHECKPOINT:
        problems.append("the name is neither <20-digit end offset>-<10-digit epoch>.checkpoint nor "
                        "bootstrap.checkpoint")
    from rmqlab.kafka.log import read_batches

    try:
        batches = read_batches(path)
    except RmqlabError as e:
        return [*problems, str(e)]
    bad = batches.loc[~batches["crc_ok"], "position"].tolist()
    if bad:
        problems.append(f"CRC-32C mismatch in {len(bad)} batch(es), first at byte {bad[0]}")
    try:
        recs = read_metadata_records(path, errors="keep")
    except RmqlabError as e:
        return [*problems, str(e)]
    if not len(recs):
        return [*problems, "no records: a snapshot starts with a SnapshotHeader and ends with a SnapshotFooter"]
    types = recs["type"].tolist()
    if types[0] != "SNAPSHOT_HEADER":
        problems.append(f"the first record is {types[0]}, not a SnapshotHeader")
    if types[-1] != "SNAPSHOT_FOOTER":
        problems.append(f"the last record is {types[-1]}, not a SnapshotFooter")
    inner = types[1:-1]
    for t in ("SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"):
        if t in inner:
            problems.append(f"a {t} record inside the snapshot, at offset {recs['offset'].iloc[1 + inner.index(t)]}")
    for off, err in zip(recs["offset"].tolist(), recs["error"].tolist()):
        if err is not None:
            problems.append(f"record at offset {off} does not decode: {err}")
            break
    return problems
