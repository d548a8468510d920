"""Kafka's control records: the records of batches whose attributes carry the control flag (0x20).

Mirrors ``org.apache.kafka.common.record.ControlRecordType`` (the key), ``EndTransactionMarker``
(the COMMIT / ABORT value), ``ControlRecordUtils`` (which schema version each value is read
at) and the message schemas ``LeaderChangeMessage``, ``SnapshotHeaderRecord``,
``SnapshotFooterRecord``, ``KRaftVersionRecord`` and ``VotersRecord`` (clients module), and
how ``kafka.tools.DumpLogSegments`` prints them; read at Kafka 3.9.0.

A control record's key is :data:`CONTROL_KEY` (version int16, type int16; Kafka refuses a
negative version and parses any other version as 0). Its value depends on the type:

===  =================  ===================================================================
 0   ABORT              :data:`END_TXN_MARKER`: version int16, coordinatorEpoch int32
 1   COMMIT             the same
 2   LEADER_CHANGE      LeaderChangeMessage (flexible): version, leaderId, voters, grantingVoters
 3   SNAPSHOT_HEADER    SnapshotHeaderRecord (flexible): version, lastContainedLogTimestamp
 4   SNAPSHOT_FOOTER    SnapshotFooterRecord (flexible): version
 5   KRAFT_VERSION      KRaftVersionRecord (flexible): version, kRaftVersion
 6   KRAFT_VOTERS       VotersRecord (flexible): version, voters (id, directory id, endpoints,
                        supported kraft versions)
===  =================  ===================================================================

Any other type is UNKNOWN (Kafka ignores it; here it is reported, not an error). The flexible
messages are read at schema version 0, as ``ControlRecordUtils`` reads them.

>>> key, value = CONTROL_KEY.pack(0, 1), END_TXN_MARKER.pack(0, 5)
>>> d = decode_control(key, value)
>>> d["name"], d["data"]
('COMMIT', {'version': 0, 'coordinatorEpoch': 5})
>>> control_text(d)
'endTxnMarker: COMMIT coordinatorEpoch: 5'
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from rmqlab.errors import FormatError
from rmqlab.formats.layout import Layout
from rmqlab.kafka.protocol import Reader

if TYPE_CHECKING:   # annotations only: log is imported where records are read
    from rmqlab.kafka.log import TornTail

__all__ = ["CONTROL_KEY", "END_TXN_MARKER", "CONTROL_TYPES", "control_key", "decode_control", "control_text",
           "read_control_records"]

# ControlRecordType.CONTROL_RECORD_KEY_SCHEMA_VERSION_V0
CONTROL_KEY = Layout("ControlRecordKey", [
    ("version", "h", "key version: 0; Kafka parses any non-negative version as 0"),
    ("type", "h", "ControlRecordType id: 0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3..6 KRaft"),
])

# EndTransactionMarker.END_TXN_MARKER_SCHEMA_VERSION_V0
END_TXN_MARKER = Layout("EndTransactionMarker", [
    ("version", "h", "marker version: 0; Kafka parses any non-negative version as 0"),
    ("coordinator_epoch", "i", "epoch of the transaction coordinator that wrote the marker"),
])

#: ControlRecordType ids and names
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

# the name DumpLogSegments puts before a message's JSON
_PRINTED_AS = {2: "LeaderChange:", 3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}


def control_key(key: bytes | None, *, path: str | os.PathLike | None = None, offset: int = 0) -> tuple[int, int]:
    """(version, type) of a control record's key.

    Cost: O(1).

    >>> control_key(b"\\x00\\x00\\x00\\x03")
    (0, 3)

    Parameters: the key bytes; ``path`` and ``offset`` (the key's file offset) name errors.
    Raises :class:`~rmqlab.errors.FormatError` for a null key, fewer than 4 bytes or a negative
    version (Kafka's InvalidRecordException cases).
    """
    if key is None:
        raise FormatError("a control record has a null key", path=path, offset=offset, field="ControlRecordKey")
    if len(key) < CONTROL_KEY.size:
        raise FormatError(f"control key of {len(key)} bytes, at least {CONTROL_KEY.size} needed", path=path,
                          offset=offset, field="ControlRecordKey")
    version, ctype = CONTROL_KEY.unpack_from(key, 0)
    if version < 0:
        raise FormatError(f"control key version {version} (data corruption?)", path=path, offset=offset,
                          field="ControlRecordKey.version")
    return version, ctype


# A flexible struct is its fields in schema order, each (JSON name, how to read it: a Reader
# method's name or a function of (reader, name)), then its tagged fields.
_StructFields = tuple[tuple[str, Any], ...]


def _struct(r: Reader, fields: _StructFields) -> dict[str, Any]:
    out = {name: getattr(r, read)(name) if isinstance(read, str) else read(r, name) for name, read in fields}
    unknown = r.tagged_fields()
    if unknown:
        out["_unknownTaggedFields"] = {str(t): b.hex() for t, b in unknown.items()}
    return out


def _array_of(fields: _StructFields, min_size: int) -> Any:
    return lambda r, name: r.compact_array(name, lambda: _struct(r, fields), min_size=min_size)


# ControlRecordUtils reads LeaderChangeMessage at version 0: a voter is its id alone
_LEADER_CHANGE_VOTERS = _array_of((("voterId", "int32"),), min_size=5)
_ENDPOINT = (("name", "compact_string"), ("host", "compact_string"), ("port", "uint16"))
_FEATURE_RANGE = (("minSupportedVersion", "int16"), ("maxSupportedVersion", "int16"))
_VOTERS_VOTER = (("voterId", "int32"), ("voterDirectoryId", "uuid"), ("endpoints", _array_of(_ENDPOINT, 5)),
                 ("kRaftVersionFeature", lambda r, name: r.struct(name, lambda: _struct(r, _FEATURE_RANGE))))

# control type -> (message name, its fields)
_MESSAGES: dict[int, tuple[str, _StructFields]] = {
    2: ("LeaderChangeMessage", (("version", "int16"), ("leaderId", "int32"), ("voters", _LEADER_CHANGE_VOTERS),
                                ("grantingVoters", _LEADER_CHANGE_VOTERS))),
    3: ("SnapshotHeaderRecord", (("version", "int16"), ("lastContainedLogTimestamp", "int64"))),
    4: ("SnapshotFooterRecord", (("version", "int16"),)),
    5: ("KRaftVersionRecord", (("version", "int16"), ("kRaftVersion", "int16"))),
    6: ("VotersRecord", (("version", "int16"), ("voters", _array_of(_VOTERS_VOTER, 27)))),
}


def decode_control(key: bytes | None, value: bytes | None, *, path: str | os.PathLike | None = None,
                   key_offset: int = 0, value_offset: int = 0) -> dict[str, Any]:
    """A control record's key and value: ``key_version``, ``type`` (the id), ``name``
    (ControlRecordType, ``UNKNOWN`` for an id Kafka does not know) and ``data`` (the decoded
    value as the JSON Kafka prints, camelCase names; None for UNKNOWN).

    Cost: O(value bytes).

    >>> decode_control(b"\\x00\\x00\\x00\\x04", b"\\x00\\x00\\x00")
    {'key_version': 0, 'type': 4, 'name': 'SNAPSHOT_FOOTER', 'data': {'version': 0}}
    >>> decode_control(b"\\x00\\x00\\x00\\x63", b"")["name"]
    'UNKNOWN'

    Parameters: key and value bytes; ``path`` and the file offsets of key and value name errors.
    Raises :class:`~rmqlab.errors.FormatError` for a bad key (:func:`control_key`), a null or
    short COMMIT/ABORT value, a negative marker version, or a message value that ends early or
    holds an impossible length (:class:`~rmqlab.errors.TruncatedFileError` where bytes are missing).
    """
    version, ctype = control_key(key, path=path, offset=key_offset)
    name = CONTROL_TYPES.get(ctype, "UNKNOWN")
    out: dict[str, Any] = {"key_version": version, "type": ctype, "name": name, "data": None}
    if ctype in (0, 1):
        if value is None or len(value) < END_TXN_MARKER.size:
            n = "null" if value is None else f"{len(value)} bytes"
            raise FormatError(f"end transaction marker value is {n}, at least {END_TXN_MARKER.size} bytes needed",
                              path=path, offset=value_offset, field="EndTransactionMarker")
        mv, epoch = END_TXN_MARKER.unpack_from(value, 0)
        if mv < 0:
            raise FormatError(f"end transaction marker version {mv} (data corruption?)", path=path,
                              offset=value_offset, field="EndTransactionMarker.version")
        out["data"] = {"version": mv, "coordinatorEpoch": epoch}
    elif ctype in _MESSAGES:
        what, fields = _MESSAGES[ctype]
        if value is None:
            raise FormatError("null value", path=path, offset=value_offset, field=what)
        out["data"] = _struct(Reader(value, path=path, base=value_offset, what=what), fields)
    return out


def control_text(decoded: dict[str, Any]) -> str:
    """What ``kafka-dump-log --deep-iteration`` prints after a control record's metadata.

    COMMIT/ABORT: ``endTxnMarker: COMMIT coordinatorEpoch: 0``; snapshot and KRaft records:
    their name and the message's JSON (``SnapshotHeader {"version":0,...}``). For LEADER_CHANGE
    and unknown types kafka-dump-log prints only ``controlType: LEADER_CHANGE(2)``; the decoded
    LeaderChange message follows it here. Cost: O(message).

    >>> control_text({"type": 7, "name": "UNKNOWN", "data": None})
    'controlType: UNKNOWN(7)'
    """
    t, data = decoded["type"], decoded["data"]
    if t in (0, 1):
        return f"endTxnMarker: {decoded['name']} coordinatorEpoch: {data['coordinatorEpoch']}"
    js = json.dumps(data, separators=(",", ":"))
    if t == 2:
        return f"controlType: LEADER_CHANGE(2) LeaderChange: {js}"
    if t in _PRINTED_AS:
        return f"{_PRINTED_AS[t]} {js}"
    return f"controlType: {decoded['name']}({t})"


def read_control_records(source, *, torn_tail: TornTail = "raise"):
    """The control records of a segment or KRaft snapshot as a DataFrame, in file order.

    Columns: ``offset``, ``position`` (the record's first byte), ``batch_position``,
    ``timestamp``, ``type``, ``name``, ``key_version``, ``data`` (dict, see
    :func:`decode_control`). Cost: one :func:`rmqlab.kafka.log.read_records` pass plus
    O(control records).

    >>> import numpy as np
    >>> from rmqlab.kafka.log import KafkaRecord, encode_batches
    >>> data = bytearray(encode_batches([KafkaRecord(0, 5, CONTROL_KEY.pack(0, 0), END_TXN_MARKER.pack(0, 3))]).data)
    >>> data[22] |= 0x20   # the control flag; the CRC no longer matches, which reading does not check
    >>> read_control_records(bytes(data))[["offset", "name", "data"]].values.tolist()
    [[0, 'ABORT', {'version': 0, 'coordinatorEpoch': 3}]]

    Parameters: a path or bytes (as :func:`~rmqlab.kafka.log.read_records`), ``torn_tail``.
    Raises the typed errors of :func:`~rmqlab.kafka.log.read_records` and :func:`decode_control`.
    """
    import pandas as pd

    from rmqlab.kafka.log import read_batches, read_records

    path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    batches = read_batches(source, torn_tail=torn_tail)
    control = set(batches.loc[batches["is_control"], "position"].tolist())
    cols = ["offset", "position", "batch_position", "timestamp", "type", "name", "key_version", "data"]
    if not control:
        return pd.DataFrame({c: [] for c in cols})
    recs = read_records(source, headers=False, torn_tail=torn_tail)
    recs = recs[recs["batch_position"].isin(control)]
    rows = []
    for off, pos, bpos, ts, key, value in zip(recs["offset"].tolist(), recs["position"].tolist(),
                                              recs["batch_position"].tolist(), recs["timestamp"].tolist(),
                                              recs["key"].tolist(), recs["value"].tolist()):
        # a record's key follows length, attributes, timestampDelta, offsetDelta and keyLength:
        # the exact offset is not kept, so errors name the record's first byte
        d = decode_control(key, value, path=path, key_offset=pos, value_offset=pos)
        rows.append((off, pos, bpos, ts, d["type"], d["name"], d["key_version"], d["data"]))
    return pd.DataFrame(rows, columns=cols)
