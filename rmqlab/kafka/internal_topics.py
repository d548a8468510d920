"""Kafka's internal topics ``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``
and ``__remote_log_metadata``: their record keys and values decoded, as ``kafka-dump-log
--offsets-decoder`` / ``--transaction-log-decoder`` / ``--share-group-state-decoder`` /
``--remote-log-metadata-decoder`` show them.

Both topics hold ordinary magic v2 records whose key and value are each a big-endian ``int16``
version followed by a message in Kafka's schema encoding. The schemas mirror these files of
Kafka's source, read at 2.8.2, 3.4.0, 3.5.0, 3.7.0 and trunk after 3.9 (commit 1eb7644):

- ``OffsetCommitKey.json`` / ``GroupMetadataKey.json`` (``core/src/main/resources/common/message/``
  up to 3.4, ``group-coordinator/src/main/resources/common/message/`` since 3.5; before 2.8 the
  same schemas were declared in ``GroupMetadataManager.scala``, compared at 2.7.1). The *key* version is the record
  type: 0 and 1 are an offset commit (group, topic, partition), 2 a classic group's metadata
  (group); 3-8 and 16 are the KIP-848 consumer-group records, 9-15 the KIP-932 share-group
  records and 17-23 the KIP-1071 streams-group records of Kafka 3.7-4.4, keys and values
  declared in :mod:`rmqlab.kafka.record_schemas` (checked against kafka-dump-log 4.4.0, and
  4.0.2 for the share-group preview's layouts).
- ``__share_group_state`` (4.0+): ``ShareSnapshotKey/Value`` (type 0) and ``ShareUpdateKey/Value``
  (type 1) of ``share-coordinator/``; ``__remote_log_metadata`` (3.6+): the four records of
  ``storage/src/main/resources/message/`` in the metadata frame of ``RemoteLogMetadataSerde``,
  printed as the tool prints them (the storage-api objects' ``toString()``).
- ``OffsetCommitValue.json`` v0-v4 (v1 adds ``expireTimestamp``, v2 drops it, v3 adds
  ``leaderEpoch``, v4 is the first flexible version: compact strings, tagged fields; Kafka 3.5+
  writes v4 only where v3 cannot carry a field, so a 2.x-3.x broker's files hold v1 or v3).
- ``GroupMetadataValue.json`` v0-v4 (v1 ``rebalanceTimeout``, v2 ``currentStateTimestamp``,
  v3 ``groupInstanceId``, v4 flexible). When ``protocolType`` is ``"consumer"`` each member's
  ``subscription`` and ``assignment`` bytes are themselves ``ConsumerProtocolSubscription`` /
  ``ConsumerProtocolAssignment`` v0-v3 (``clients/src/main/resources/common/message/``),
  decoded as ``DumpLogSegments.OffsetsMessageParser`` does: a version it cannot read leaves the
  bytes as they are.
- ``TransactionLogKey.json`` v0 (transactionalId) and ``TransactionLogValue.json`` v0/v1
  (``core/src/main/resources/common/message/``; v1, Kafka 3.5+, is flexible and may carry the
  tagged fields previousProducerId, nextProducerId and clientTransactionVersion of KIP-890);
  the state ids are ``TransactionMetadata.scala``'s (0 Empty .. 7 PrepareEpochFence).

The printed form follows ``core/src/main/scala/kafka/tools/DumpLogSegments.scala`` (3.8+):
``key: {"type":"1","data":{...}} payload: {"version":"3","data":{...}}`` (Jackson's compact
JSON of the generated ``*JsonConverter``: fields in schema order, bytes as base64, tagged fields
only when not their default), ``payload: <DELETE>`` for a tombstone; and
``TransactionLog.formatRecordKeyAndValue`` for the transaction log.

Readers: :func:`decode_group_record` / :func:`decode_transaction_record` (one key and value),
:func:`group_records`, :func:`offset_commits`, :func:`group_metadata`, :func:`group_members`,
:func:`committed_offsets` (a segment or a partition directory as DataFrames) and
:func:`transaction_states`. Bad bytes raise :class:`~rmqlab.errors.FormatError` naming the
file, the byte offset of the field and its path (``value.members[0].clientId``); a key, value
or embedded struct with bytes left over after its schema is an error too, since the broker's
writers never leave any.

>>> key = bytes.fromhex("0001") + b"\\x00\\x01g" + b"\\x00\\x01t" + bytes(4)
>>> value = bytes.fromhex("0003") + (42).to_bytes(8, "big") + bytes.fromhex("ffffffff") + bytes(2) \\
...         + (1700000000000).to_bytes(8, "big")
>>> r = decode_group_record(key, value)
>>> r.name, r.key, r.value["offset"], r.value["leaderEpoch"]
('OffsetCommit', {'group': 'g', 'topic': 't', 'partition': 0}, 42, -1)
>>> key_text, payload_text = format_offsets_record(r, 0)
>>> key_text
'{"type":"1","data":{"group":"g","topic":"t","partition":0}}'
>>> payload_text
'{"version":"3","data":{"offset":42,"leaderEpoch":-1,"metadata":"","commitTimestamp":1700000000000}}'
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from rmqlab.errors import FormatError
from rmqlab.kafka.protocol import Reader
from rmqlab.kafka.record_schemas import (
    GROUP_KEY_FIELDS,
    GROUP_VALUE_LAYOUTS,
    REMOTE_LOG_METADATA_SCHEMAS,
    SHARE_STATE_KEY_FIELDS,
    SHARE_STATE_KEYS,
    SHARE_STATE_LAYOUTS,
)
from rmqlab.kafka.schema import ANY as _ANY
from rmqlab.kafka.schema import Field as _Field
from rmqlab.kafka.schema import Schema as _Schema
from rmqlab.kafka.schema import in_versions as _in
from rmqlab.kafka.schema import java_json as _compact_json
from rmqlab.kafka.schema import read_message as _read_message
from rmqlab.kafka.schema import read_struct as _read_struct

__all__ = [
    "OFFSETS_TOPIC", "TRANSACTION_TOPIC", "GROUP_RECORD_TYPES", "TRANSACTION_STATES",
    "GroupRecord", "TransactionRecord", "decode_group_record", "decode_transaction_record",
    "format_offsets_record", "format_transaction_record",
    "group_records", "offset_commits", "group_metadata", "group_members", "committed_offsets",
    "transaction_states", "describe_records", "SHARE_STATE_TOPIC", "REMOTE_LOG_METADATA_TOPIC", "ShareStateRecord",
    "decode_share_state_record", "format_share_state_record", "decode_remote_log_metadata_record",
    "format_remote_log_metadata", "REMOTE_SEGMENT_STATES", "REMOTE_PARTITION_DELETE_STATES",
]

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"

# =============================================================================================
# Schemas, declared once as data (name, type, versions, nullable versions, tag, default).
# =============================================================================================

def _string_key(name: str, record_type: int, *names: str) -> _Schema:
    return _Schema(name, (record_type, record_type), None,
                   tuple(_Field(n, "string", (record_type, record_type)) for n in names))


OFFSET_COMMIT_KEY = _Schema("OffsetCommitKey", (0, 1), None, (
    _Field("group", "string", (0, 1)),
    _Field("topic", "string", (0, 1)),
    _Field("partition", "int32", (0, 1)),
))
OFFSET_COMMIT_VALUE = _Schema("OffsetCommitValue", (0, 4), 4, (
    _Field("offset", "int64", (0, _ANY)),
    _Field("leaderEpoch", "int32", (3, _ANY), default=-1),
    _Field("metadata", "string", (0, _ANY)),
    _Field("commitTimestamp", "int64", (0, _ANY)),
    _Field("expireTimestamp", "int64", (1, 1), default=-1),
    # tagged in v4, written by Kafka 4.x brokers (kafka-dump-log 4.4 prints it last)
    _Field("topicId", "uuid", (4, _ANY), tag=0, default="AAAAAAAAAAAAAAAAAAAAAA"),
))
GROUP_METADATA_KEY = _string_key("GroupMetadataKey", 2, "group")
_MEMBER_METADATA = (
    _Field("memberId", "string", (0, _ANY)),
    _Field("groupInstanceId", "string", (3, _ANY), nullable=(3, _ANY)),
    _Field("clientId", "string", (0, _ANY)),
    _Field("clientHost", "string", (0, _ANY)),
    _Field("rebalanceTimeout", "int32", (1, _ANY), default=-1),
    _Field("sessionTimeout", "int32", (0, _ANY)),
    _Field("subscription", "bytes", (0, _ANY)),
    _Field("assignment", "bytes", (0, _ANY)),
)
GROUP_METADATA_VALUE = _Schema("GroupMetadataValue", (0, 4), 4, (
    _Field("protocolType", "string", (0, _ANY)),
    _Field("generation", "int32", (0, _ANY)),
    _Field("protocol", "string", (0, _ANY), nullable=(0, _ANY)),
    _Field("leader", "string", (0, _ANY), nullable=(0, _ANY)),
    _Field("currentStateTimestamp", "int64", (2, _ANY), default=-1),
    _Field("members", ("[]", _MEMBER_METADATA), (0, _ANY)),
))
_TOPIC_PARTITIONS = (_Field("topic", "string", (0, _ANY)), _Field("partitions", "[]int32", (0, _ANY)))
CONSUMER_PROTOCOL_SUBSCRIPTION = _Schema("ConsumerProtocolSubscription", (0, 3), None, (
    _Field("topics", "[]string", (0, _ANY)),
    _Field("userData", "bytes", (0, _ANY), nullable=(0, _ANY)),
    _Field("ownedPartitions", ("[]", _TOPIC_PARTITIONS), (1, _ANY)),
    _Field("generationId", "int32", (2, _ANY), default=-1),
    _Field("rackId", "string", (3, _ANY), nullable=(3, _ANY)),
))
CONSUMER_PROTOCOL_ASSIGNMENT = _Schema("ConsumerProtocolAssignment", (0, 3), None, (
    _Field("assignedPartitions", ("[]", _TOPIC_PARTITIONS), (0, _ANY)),
    _Field("userData", "bytes", (0, _ANY), nullable=(0, _ANY)),
))
TRANSACTION_LOG_KEY = _Schema("TransactionLogKey", (0, 0), None, (_Field("transactionalId", "string", (0, 0)),))
TRANSACTION_LOG_VALUE = _Schema("TransactionLogValue", (0, 1), 1, (
    _Field("producerId", "int64", (0, _ANY)),
    _Field("previousProducerId", "int64", (1, _ANY), tag=0, default=-1),
    _Field("nextProducerId", "int64", (1, _ANY), tag=1, default=-1),
    _Field("producerEpoch", "int16", (0, _ANY)),
    _Field("transactionTimeoutMs", "int32", (0, _ANY)),
    _Field("transactionStatus", "int8", (0, _ANY)),
    _Field("transactionPartitions", ("[]", _TOPIC_PARTITIONS[:1] + (_Field("partitionIds", "[]int32", (0, _ANY)),)),
           (0, _ANY), nullable=(0, _ANY)),
    _Field("transactionLastUpdateTimestampMs", "int64", (0, _ANY)),
    _Field("transactionStartTimestampMs", "int64", (0, _ANY)),
    _Field("clientTransactionVersion", "int16", (1, _ANY), tag=2, default=0),
))

#: record type (the key's version) -> record name, for the types of 3.7+ (KIP-848 consumer
#: groups, KIP-932 share groups, KIP-1071 streams groups; 18 was never released)
_NEWER_GROUP_RECORDS = {
    3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata", 5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata", 7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment", 9: "ShareGroupPartitionMetadata", 10: "ShareGroupMemberMetadata",
    11: "ShareGroupMetadata", 12: "ShareGroupTargetAssignmentMetadata", 13: "ShareGroupTargetAssignmentMember",
    14: "ShareGroupCurrentMemberAssignment", 15: "ShareGroupStatePartitionMetadata",
    16: "ConsumerGroupRegularExpression", 17: "StreamsGroupMetadata", 19: "StreamsGroupMemberMetadata",
    20: "StreamsGroupTargetAssignmentMetadata", 21: "StreamsGroupTargetAssignmentMember",
    22: "StreamsGroupCurrentMemberAssignment", 23: "StreamsGroupTopology",
}

#: Record type (the key's version) -> (record name, key schema).
GROUP_RECORD_TYPES: dict[int, tuple[str, _Schema]] = {
    0: ("OffsetCommit", OFFSET_COMMIT_KEY),
    1: ("OffsetCommit", OFFSET_COMMIT_KEY),
    2: ("GroupMetadata", GROUP_METADATA_KEY),
    **{t: (name, _string_key(f"{name}Key", t, *GROUP_KEY_FIELDS[t])) for t, name in _NEWER_GROUP_RECORDS.items()},
}
_VALUE_SCHEMAS = {0: OFFSET_COMMIT_VALUE, 1: OFFSET_COMMIT_VALUE, 2: GROUP_METADATA_VALUE}

#: TransactionState ids (TransactionMetadata.scala) -> names
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                      5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}


def _version(r: Reader, schema: _Schema) -> int:
    at = r.pos
    v = r.int16("version")
    if not _in(v, schema.versions):
        raise r.error(f"{schema.name} version {v}: Kafka writes {schema.versions[0]}..{schema.versions[1]}",
                      "version", at)
    return v


def _read_layouts(r: Reader, layouts: tuple[_Schema, ...]) -> tuple[int, dict, int]:
    """The value's version, its fields by the first of `layouts` (newest first) that reads the
    bytes exactly (a preview record changed its layout within one version), and that layout's
    index. A value no layout reads raises the newest layout's error."""
    version = _version(r, layouts[0])
    body = r.pos
    first: FormatError | None = None
    for i, schema in enumerate(layouts):
        r.pos = body
        try:
            return version, _read_message(r, schema, version), i
        except FormatError as e:
            first = first or e
    assert first is not None
    raise first


def _reader(data: bytes, path: str | os.PathLike | None, offset: int, what: str) -> Reader:
    # the coordinators decode strings with new String(bytes, UTF_8): malformed input becomes U+FFFD
    return Reader(data, path=path, base=offset, what=what, lenient_utf8=True)


def _embedded(raw: bytes, schema: _Schema) -> dict | None:
    """A ConsumerProtocol struct inside a member's bytes, or None where the dump tool keeps the
    bytes (a version it cannot read, or bytes its reader rejects)."""
    r = _reader(raw, None, 0, schema.name)
    try:
        v = r.int16("version")
        if not _in(v, schema.versions):
            return None
        return {"version": v, "data": _read_struct(r, schema.fields, v, False)}
    except FormatError:
        return None


# =============================================================================================
# One record
# =============================================================================================


class GroupRecord(NamedTuple):
    """One decoded ``__consumer_offsets`` record. ``record_type`` is the key's version, ``name``
    what it holds ("OffsetCommit", "GroupMetadata", "ConsumerGroupMetadata", ... or "Unknown"),
    ``key`` / ``value`` the fields by their Kafka JSON names (``value`` None for a tombstone
    and for an unknown record type: then ``value_bytes`` keeps its value)."""

    record_type: int
    name: str
    key: dict | None
    value_version: int | None
    value: dict | None
    tombstone: bool
    value_bytes: bytes | None = None


class TransactionRecord(NamedTuple):
    """One decoded ``__transaction_state`` record: ``key_version``, ``transactional_id``
    (None for an unknown key version), ``value_version`` / ``value`` (None for a tombstone)."""

    key_version: int
    transactional_id: str | None
    value_version: int | None
    value: dict | None
    tombstone: bool


def decode_group_record(key: bytes | None, value: bytes | None, *, path: str | os.PathLike | None = None,
                        key_offset: int = 0, value_offset: int = 0) -> GroupRecord:
    """One ``__consumer_offsets`` record's key and value (None for a tombstone), decoded.

    Cost: a few microseconds for an offset commit; a group's metadata costs about 1 µs per
    member field plus its embedded subscription and assignment.

    >>> r = decode_group_record(bytes.fromhex("0002") + b"\\x00\\x02g1", None)
    >>> r.name, r.key, r.tombstone
    ('GroupMetadata', {'group': 'g1'}, True)

    `path`, `key_offset` and `value_offset` (where the key and value bytes lie in the file)
    only serve the error messages. Returns a :class:`GroupRecord`; an unknown record type
    (18, or above 23) is ``name="Unknown"`` with no key, which the broker's loader skips too.
    A share-group value of the 3.9/4.0 preview is read with its own layout when the newest one
    does not fit (:data:`~rmqlab.kafka.record_schemas.GROUP_VALUE_LAYOUTS`). Raises
    :class:`~rmqlab.errors.FormatError` (:class:`~rmqlab.errors.TruncatedFileError` when the
    bytes end early) naming the file, the field's byte offset and its path, for a missing key,
    a value version the schema does not have, a bad length, or bytes left over.
    """
    if key is None:
        raise FormatError("a __consumer_offsets record without a key", path=path, offset=key_offset, field="key")
    kc = _reader(key, path, key_offset, "key")
    record_type = kc.int16("version")
    known = GROUP_RECORD_TYPES.get(record_type)
    if known is None:
        return GroupRecord(record_type, "Unknown", None, None, None, value is None, value)
    name, key_schema = known
    k = _read_message(kc, key_schema, record_type)
    if value is None:
        return GroupRecord(record_type, name, k, None, None, True)
    vc = _reader(value, path, value_offset, "value")
    schema = _VALUE_SCHEMAS.get(record_type)
    if schema is None:
        v_version, v, _ = _read_layouts(vc, GROUP_VALUE_LAYOUTS[record_type])
        return GroupRecord(record_type, name, k, v_version, v, False)
    v_version = _version(vc, schema)
    v = _read_message(vc, schema, v_version)
    if record_type == 2 and v["protocolType"] == "consumer":
        for m in v["members"]:
            m["subscription"] = _embedded(m["subscription"], CONSUMER_PROTOCOL_SUBSCRIPTION) or m["subscription"]
            m["assignment"] = _embedded(m["assignment"], CONSUMER_PROTOCOL_ASSIGNMENT) or m["assignment"]
    return GroupRecord(record_type, name, k, v_version, v, False)


def decode_transaction_record(key: bytes | None, value: bytes | None, *, path: str | os.PathLike | None = None,
                              key_offset: int = 0, value_offset: int = 0) -> TransactionRecord:
    """One ``__transaction_state`` record's key and value (None for a tombstone), decoded.

    Cost: a few microseconds.

    >>> key = bytes.fromhex("0000") + b"\\x00\\x03tx1"
    >>> value = (bytes.fromhex("0000") + (7).to_bytes(8, "big") + bytes(2) + (60000).to_bytes(4, "big") + b"\\x04"
    ...          + (1).to_bytes(4, "big") + b"\\x00\\x01t" + (1).to_bytes(4, "big") + bytes(4) + bytes(16))
    >>> r = decode_transaction_record(key, value)
    >>> r.transactional_id, r.value["producerId"], r.value["state"], r.value["transactionPartitions"]
    ('tx1', 7, 'CompleteCommit', [{'topic': 't', 'partitionIds': [0]}])

    Arguments as :func:`decode_group_record`. An unknown key version gives
    ``transactional_id=None`` (the dump tool prints ``unknown::version=N``). The value dict has
    the schema's fields plus ``state`` (the state's name). Raises
    :class:`~rmqlab.errors.FormatError` naming file, offset and field for a value version other
    than 0/1, a state id Kafka does not define, a bad length or bytes left over.
    """
    if key is None:
        raise FormatError("a __transaction_state record without a key", path=path, offset=key_offset, field="key")
    kc = _reader(key, path, key_offset, "key")
    kv = kc.int16("version")
    if not _in(kv, TRANSACTION_LOG_KEY.versions):
        return TransactionRecord(kv, None, None, None, value is None)
    tid = _read_message(kc, TRANSACTION_LOG_KEY, kv)["transactionalId"]
    if value is None:
        return TransactionRecord(kv, tid, None, None, True)
    vc = _reader(value, path, value_offset, "value")
    vv = _version(vc, TRANSACTION_LOG_VALUE)
    v = _read_message(vc, TRANSACTION_LOG_VALUE, vv)
    state = TRANSACTION_STATES.get(v["transactionStatus"])
    if state is None:
        raise FormatError(f"transaction state id {v['transactionStatus']} (Kafka defines 0..7)", path=path,
                          offset=value_offset + 2 + 8 + 2 + 4, field="value.transactionStatus")
    v["state"] = state
    return TransactionRecord(kv, tid, vv, v, False)


class ShareStateRecord(NamedTuple):
    """One decoded ``__share_group_state`` record (Kafka 4.0+): ``record_type`` 0 (ShareSnapshot)
    or 1 (ShareUpdate), ``name``, ``key`` (groupId, topicId, partition), ``value_version`` /
    ``value`` (None for a tombstone), ``layout`` (the release line whose layout read the value:
    "4.1" for 4.1+, "4.0" for the preview's; None for a tombstone)."""

    record_type: int
    name: str
    key: dict | None
    value_version: int | None
    value: dict | None
    tombstone: bool
    layout: str | None = None


def decode_share_state_record(key: bytes | None, value: bytes | None, *, path: str | os.PathLike | None = None,
                              key_offset: int = 0, value_offset: int = 0) -> ShareStateRecord:
    """One ``__share_group_state`` record's key and value (None for a tombstone), decoded as
    ``kafka-dump-log --share-group-state-decoder`` reads it.

    Cost: a few microseconds plus about 1 µs per state batch.

    >>> key = bytes.fromhex("0001") + b"\\x00\\x01g" + bytes(16) + (3).to_bytes(4, "big")
    >>> value = bytes.fromhex("0000") + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + (10).to_bytes(8, "big") \\
    ...         + b"\\x01\\x00"
    >>> r = decode_share_state_record(key, value)
    >>> r.name, r.key["partition"], r.value
    ('ShareUpdate', 3, {'snapshotEpoch': 2, 'leaderEpoch': 1, 'startOffset': 10, 'stateBatches': []})

    Arguments as :func:`decode_group_record`. The value is read with Kafka 4.1's layout (4.2's
    tagged deliveryCompleteCount included), else with 4.0's (snapshotEpoch an uint16, no
    timestamps), which changed within version 0. An unknown record type gives
    ``name="Unknown"`` and no key. Raises :class:`~rmqlab.errors.FormatError` naming file,
    offset and field for a missing key, a value version other than 0, bytes neither layout reads.
    """
    if key is None:
        raise FormatError("a __share_group_state record without a key", path=path, offset=key_offset, field="key")
    kc = _reader(key, path, key_offset, "key")
    record_type = kc.int16("version")
    name = SHARE_STATE_KEYS.get(record_type)
    if name is None:
        return ShareStateRecord(record_type, "Unknown", None, None, None, value is None)
    k = _read_message(kc, _Schema(f"{name}Key", (0, 1), None, SHARE_STATE_KEY_FIELDS), 0)
    if value is None:
        return ShareStateRecord(record_type, name, k, None, None, True)
    layouts = SHARE_STATE_LAYOUTS[record_type]
    vv, v, which = _read_layouts(_reader(value, path, value_offset, "value"), layouts)
    return ShareStateRecord(record_type, name, k, vv, v, False, ("4.1", "4.0")[which])


#: RemoteLogSegmentState / RemotePartitionDeleteState ids (storage-api) -> names
REMOTE_SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                         3: "DELETE_SEGMENT_FINISHED"}
REMOTE_PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                                  2: "DELETE_PARTITION_FINISHED"}


def decode_remote_log_metadata_record(value: bytes | None, *, path: str | os.PathLike | None = None,
                                      offset: int = 0) -> dict[str, Any]:
    """One ``__remote_log_metadata`` record's value (Kafka 3.6+, KIP-405): the frame of
    ``RemoteLogMetadataSerde`` (frameVersion, apiKey and version as unsigned varints, as in the
    KRaft metadata log), then the record. Returns ``api_key``, ``type`` (the record name),
    ``version`` and ``data`` (the fields by the JSON definition's names).

    Cost: O(value bytes).

    >>> tp = b"\\x02t" + bytes(16) + (0).to_bytes(4, "big") + b"\\x00"
    >>> body = tp + (1).to_bytes(4, "big") + bytes(8) + b"\\x02\\x00"   # broker 1, time 0, FINISHED
    >>> d = decode_remote_log_metadata_record(b"\\x01\\x02\\x00" + body)
    >>> d["type"], d["data"]["remotePartitionDeleteState"]
    ('RemotePartitionDeleteMetadataRecord', 2)

    Raises :class:`~rmqlab.errors.FormatError` naming file, offset and field for a null value,
    a frame version other than 1, an apiKey other than 0..3, a version other than 0, a state id
    the enum does not have, or bytes left over.
    """
    if value is None:
        raise FormatError("a __remote_log_metadata record has a null value", path=path, offset=offset,
                          field="RemoteLogMetadata")
    r = Reader(value, path=path, base=offset, what="RemoteLogMetadata")
    frame = r.uvarint("frameVersion")
    if frame != 1:
        raise r.error(f"frame version {frame}; only 1 is read", "frameVersion", 0)
    at = r.pos
    api_key = r.uvarint("apiKey")
    schema = REMOTE_LOG_METADATA_SCHEMAS.get(api_key)
    if schema is None:
        raise r.error(f"apiKey {api_key}: unknown metadata id (0..3 are known)", "apiKey", at)
    at = r.pos
    version = r.uvarint("version")
    if not _in(version, schema.versions):
        raise r.error(f"{schema.name} version {version}; the schema has 0", "version", at)
    body = Reader(value, path=path, base=offset, start=r.pos, what=schema.name)
    data = _read_message(body, schema, version)
    state, states = (("remotePartitionDeleteState", REMOTE_PARTITION_DELETE_STATES) if api_key == 2
                     else ("remoteLogSegmentState", REMOTE_SEGMENT_STATES))
    if data[state] not in states:
        raise FormatError(f"state id {data[state]} (Kafka defines 0..{len(states) - 1})", path=path, offset=offset,
                          field=f"{schema.name}.{state}")
    return {"api_key": api_key, "type": schema.name, "version": version, "data": data}


# =============================================================================================
# The dump tool's text
# =============================================================================================


def _member_json(m: dict) -> dict:
    out = dict(m)
    for name in ("subscription", "assignment"):
        if isinstance(out.get(name), dict):   # decoded: the converter writes the struct itself
            out[name] = out[name]["data"]
    return out


def _key_or_skip(r, offset: int) -> tuple[str, str | None]:
    """A coordinator record's key text, with "<DELETE>" for a tombstone's payload; the tool's
    skip line for an unknown record type (payload None). The key text of a record with a value
    comes with payload None too: the caller formats the value."""
    if r.name == "Unknown":
        return f"Unknown record type {r.record_type} at offset {offset}, skipping.", None
    key = _compact_json({"type": str(r.record_type), "data": r.key})
    return (key, "<DELETE>") if r.tombstone else (key, None)


def format_offsets_record(r: GroupRecord, offset: int) -> tuple[str, str | None]:
    """``kafka-dump-log --offsets-decoder``'s key and payload text of a decoded record.

    Cost: one JSON serialisation.

    >>> print(*format_offsets_record(decode_group_record(bytes.fromhex("0002") + b"\\x00\\x01g", None), 5))
    {"type":"2","data":{"group":"g"}} <DELETE>

    `offset` is the record's offset (named in the text for an unknown record type). Returns
    (key text, payload text or None where the tool prints no payload).
    """
    early = _key_or_skip(r, offset)
    if early[1] is not None or r.name == "Unknown":
        return early
    key = early[0]
    data = dict(r.value or {})
    if "members" in data:
        data["members"] = [_member_json(m) for m in data["members"]]
    return key, _compact_json({"version": str(r.value_version), "data": data})


def format_transaction_record(r: TransactionRecord) -> tuple[str, str | None]:
    """``kafka-dump-log --transaction-log-decoder``'s key and payload text of a decoded record
    (``TransactionLog.formatRecordKeyAndValue``).

    Cost: string formatting.

    >>> print(*format_transaction_record(TransactionRecord(0, "tx1", None, None, True)))
    transaction_metadata::transactionalId=tx1 <DELETE>

    Returns (key text, payload text or None). The broker keeps the partitions in a hash set
    (printed in hash order) and drops them for the Empty state; here they are in file order,
    duplicates removed, and dropped for Empty likewise.
    """
    if r.transactional_id is None:
        return f"unknown::version={r.key_version}", None
    key = f"transaction_metadata::transactionalId={r.transactional_id}"
    if r.tombstone or r.value is None:
        return key, "<DELETE>"
    v = r.value
    parts = [] if v["state"] == "Empty" else list(dict.fromkeys(_topic_partitions(v)))
    return key, (f"producerId:{v['producerId']},producerEpoch:{v['producerEpoch']},state={v['state']},"
                 f"partitions=[{','.join(parts)}],txnLastUpdateTimestamp={v['transactionLastUpdateTimestampMs']},"
                 f"txnTimeoutMs={v['transactionTimeoutMs']}")


def format_share_state_record(r: ShareStateRecord, offset: int) -> tuple[str, str | None]:
    """``kafka-dump-log --share-group-state-decoder``'s key and payload text of a decoded record:
    ``{"type":"0","data":{...}}`` for the key, ``{"version":"0","data":{...}}`` for the value
    as 4.1+ print it; a value of 4.0's layout as 4.0.2, the one tool that reads it, prints it,
    with ``"type"`` for the version.

    Cost: one JSON serialisation.

    >>> print(*format_share_state_record(ShareStateRecord(0, "ShareSnapshot", {"groupId": "g"}, None, None, True), 0))
    {"type":"0","data":{"groupId":"g"}} <DELETE>

    `offset` is the record's offset (named in the text for an unknown record type). Returns
    (key text, payload text or None where the tool prints no payload).
    """
    early = _key_or_skip(r, offset)
    if early[1] is not None or r.name == "Unknown":
        return early
    key = early[0]
    label = "type" if r.layout == "4.0" else "version"
    return key, _compact_json({label: str(r.value_version), "data": r.value})


def _topic_id_partition(t: dict) -> str:
    return f"{t['id']}:{t['name']}-{t['partition']}"   # TopicIdPartition.toString


def _segment_fields(d: dict) -> str:
    # a TreeMap's toString: by epoch, a repeated epoch keeping its last offset
    epochs = dict(sorted({e["leaderEpoch"]: e["offset"] for e in d["segmentLeaderEpochs"]}.items()))
    custom = d["customMetadata"]
    return (f"segmentLeaderEpochs={{{', '.join(f'{k}={v}' for k, v in epochs.items())}}}, "
            f"segmentSizeInBytes={d['segmentSizeInBytes']}, customMetadata="
            + ("Optional.empty" if custom is None else f"Optional[CustomMetadata{{{len(custom)} bytes}}]")
            + f", state={REMOTE_SEGMENT_STATES[d['remoteLogSegmentState']]}, "
            f"txnIdxEmpty={str(d.get('txnIndexEmpty', False)).lower()}}}")


def format_remote_log_metadata(d: dict[str, Any]) -> str:
    """``kafka-dump-log --remote-log-metadata-decoder``'s payload text of a decoded record: the
    ``toString()`` of the storage-api object ``RemoteLogMetadataSerde`` makes of it, as Kafka
    4.0-4.4 print it (3.6-3.9 print no ``txnIdxEmpty``).

    Cost: string formatting.

    >>> tp = {"name": "t", "id": "AAAAAAAAAAAAAAAAAAAAAA", "partition": 0}
    >>> format_remote_log_metadata({"api_key": 2, "data": {"topicIdPartition": tp, "brokerId": 1,
    ...                             "eventTimestampMs": 5, "remotePartitionDeleteState": 0}})
    'RemotePartitionDeleteMetadata{topicPartition=AAAAAAAAAAAAAAAAAAAAAA:t-0, state=DELETE_PARTITION_MARKED, \
eventTimestampMs=5, brokerId=1}'

    `d` is what :func:`decode_remote_log_metadata_record` returns.
    """
    api_key, x = d["api_key"], d["data"]
    if api_key == 2:
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(x['topicIdPartition'])}, "
                f"state={REMOTE_PARTITION_DELETE_STATES[x['remotePartitionDeleteState']]}, "
                f"eventTimestampMs={x['eventTimestampMs']}, brokerId={x['brokerId']}}}")
    if api_key == 3:
        return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={x['segmentId']}, startOffset={x['startOffset']}, "
                f"endOffset={x['endOffset']}, maxTimestampMs={x['maxTimestampMs']}, " + _segment_fields(x))
    sid = x["remoteLogSegmentId"]
    segment = f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(sid['topicIdPartition'])}, id={sid['id']}}}"
    if api_key == 1:
        custom = x["customMetadata"]
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={segment}, customMetadata="
                + ("Optional.empty" if custom is None else f"Optional[CustomMetadata{{{len(custom)} bytes}}]")
                + f", state={REMOTE_SEGMENT_STATES[x['remoteLogSegmentState']]}, "
                f"eventTimestampMs={x['eventTimestampMs']}, brokerId={x['brokerId']}}}")
    return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={segment}, startOffset={x['startOffset']}, "
            f"endOffset={x['endOffset']}, brokerId={x['brokerId']}, maxTimestampMs={x['maxTimestampMs']}, "
            f"eventTimestampMs={x['eventTimestampMs']}, " + _segment_fields(x))


def _topic_partitions(v: dict) -> list[str]:
    # TopicPartition.toString: "topic-partition"
    return [f"{t['topic']}-{p}" for t in (v["transactionPartitions"] or []) for p in t["partitionIds"]]


# =============================================================================================
# Segments and partition directories
# =============================================================================================


def _segments(source) -> list:
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        return sorted(Path(source).glob("*.log"))
    return [source]


def _records(source, decode: Callable) -> list[tuple[Any, int, int, Any]]:
    """(path, record offset, position, decoded) for every data record of every segment in
    `source`; control batches (transaction markers) are skipped as the dump tool skips them."""
    from rmqlab.kafka.log import read_batches, read_records

    out = []
    for seg in _segments(source):
        path = seg if isinstance(seg, (str, os.PathLike)) else None
        batches = read_batches(seg)
        control = {int(p) for p, ctl in zip(batches["position"], batches["is_control"]) if ctl}
        recs = read_records(seg, headers=False)
        cols = [recs[c].tolist() for c in ("batch_position", "position", "key_position", "value_position", "offset",
                                           "key", "value")]
        for bp, pos, ko, vo, off, key, value in zip(*cols):
            if bp in control:
                continue
            # a record of a compressed batch has no bytes of its own in the file: errors name the batch
            plain = ko >= 0
            out.append((path, int(off), int(pos if plain else bp),
                        decode(key, value, path=path, key_offset=ko if plain else bp,
                               value_offset=vo if plain else bp)))
    return out


def group_records(source) -> pd.DataFrame:
    """Every record of a ``__consumer_offsets`` segment or partition directory, decoded: one row a
    record in log order.

    Cost: the record walk of :func:`rmqlab.kafka.log.read_records` plus a few microseconds a
    record (about 10 ms for a 14 KB segment).

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> key = bytes.fromhex("0002") + b"\\x00\\x01g"
    >>> seg = write_segment(tempfile.mkdtemp(), 0, [KafkaRecord(0, 1000, key, None)])
    >>> group_records(seg)[["offset", "record_type", "name", "group", "tombstone"]].values.tolist()
    [[0, 2, 'GroupMetadata', 'g', True]]

    `source`: a ``.log`` path, a partition directory (its segments in base-offset order) or
    the bytes of a segment. Columns: ``offset``, ``position``, ``record_type``, ``name``,
    ``group``, ``key`` (dict), ``value_version``, ``value`` (dict or None), ``tombstone``. Raises
    what :func:`decode_group_record` and :func:`rmqlab.kafka.log.read_records` raise.
    """
    rows = []
    for _, off, pos, r in _records(source, decode_group_record):
        group = None if r.key is None else r.key.get("group", r.key.get("groupId"))
        rows.append((off, pos, r.record_type, r.name, group, r.key, r.value_version, r.value, r.tombstone))
    df = pd.DataFrame(rows, columns=["offset", "position", "record_type", "name", "group", "key", "value_version",
                                     "value", "tombstone"])
    df["value_version"] = df["value_version"].astype("Int64")   # <NA> for a tombstone
    return df


_COMMIT_COLUMNS = ["group", "topic", "partition", "offset", "leader_epoch", "metadata", "commit_timestamp",
                   "expire_timestamp", "record_offset", "tombstone"]


def _commit_frame(records: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for off, name, key, value, tomb in zip(records["offset"], records["name"], records["key"], records["value"],
                                           records["tombstone"]):
        if name != "OffsetCommit":
            continue
        v = value or {}
        rows.append((key["group"], key["topic"], key["partition"], v.get("offset", -1), v.get("leaderEpoch", -1),
                     v.get("metadata"), v.get("commitTimestamp", -1), v.get("expireTimestamp", -1), off, tomb))
    df = pd.DataFrame(rows, columns=_COMMIT_COLUMNS)
    for c in ("partition", "offset", "leader_epoch", "commit_timestamp", "expire_timestamp", "record_offset"):
        df[c] = df[c].astype("int64")
    df["tombstone"] = df["tombstone"].astype(bool)
    return df


def offset_commits(source) -> pd.DataFrame:
    """The offset commits of a ``__consumer_offsets`` segment or directory, one row a record in log
    order (tombstones included).

    Units: offsets are the committed next offset to read; timestamps ms since the epoch.
    Cost: :func:`group_records`.

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> key = bytes.fromhex("0001") + b"\\x00\\x01g\\x00\\x01t" + (3).to_bytes(4, "big")
    >>> value = bytes.fromhex("0001") + (9).to_bytes(8, "big") + b"\\x00\\x02md" + (5).to_bytes(8, "big") \\
    ...         + (8).to_bytes(8, "big")
    >>> seg = write_segment(tempfile.mkdtemp(), 0, [KafkaRecord(0, 1000, key, value)])
    >>> cols = ["group", "topic", "partition", "offset", "leader_epoch", "metadata", "expire_timestamp"]
    >>> offset_commits(seg)[cols].values.tolist()
    [['g', 't', 3, 9, -1, 'md', 8]]

    Columns: ``group``, ``topic``, ``partition``, ``offset``, ``leader_epoch`` (-1 before
    value v3 or when unknown), ``metadata``, ``commit_timestamp``, ``expire_timestamp`` (-1
    except in value v1), ``record_offset`` (the record's offset in this partition),
    ``tombstone`` (a deleted commit: offset -1, metadata None). Raises as :func:`group_records`.
    """
    return _commit_frame(group_records(source))


def committed_offsets(source) -> pd.DataFrame:
    """The latest committed offset of each (group, topic, partition), as the group coordinator
    holds them after loading the partition: the last commit wins and a tombstone removes it.

    Cost: :func:`group_records` of every segment.

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> key = bytes.fromhex("0001") + b"\\x00\\x01g\\x00\\x01t" + bytes(4)
    >>> def commit(n):
    ...     return bytes.fromhex("0003") + n.to_bytes(8, "big") + bytes(4) + bytes(2) + bytes(8)
    >>> seg = write_segment(tempfile.mkdtemp(), 0, [KafkaRecord(0, 1, key, commit(5)),
    ...                                             KafkaRecord(1, 2, key, commit(8))])
    >>> committed_offsets(seg)[["group", "topic", "partition", "offset", "record_offset"]].values.tolist()
    [['g', 't', 0, 8, 1]]

    `source` as :func:`group_records`. Columns as :func:`offset_commits` without
    ``tombstone``, sorted by group, topic and partition.
    """
    df = offset_commits(source)
    last = df.drop_duplicates(["group", "topic", "partition"], keep="last")
    last = last.loc[~last["tombstone"].to_numpy(bool)].drop(columns="tombstone")
    return last.sort_values(["group", "topic", "partition"], kind="stable").reset_index(drop=True)


def group_metadata(source) -> pd.DataFrame:
    """The classic groups' metadata records of a ``__consumer_offsets`` segment or directory, one
    row a record in log order: each rebalance's generation, protocol, leader and members.

    Cost: :func:`group_records`.

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> key = bytes.fromhex("0002") + b"\\x00\\x01g"
    >>> value = bytes.fromhex("0000") + b"\\x00\\x08consumer" + (1).to_bytes(4, "big") + b"\\xff\\xff\\xff\\xff" \\
    ...         + bytes(4)
    >>> seg = write_segment(tempfile.mkdtemp(), 0, [KafkaRecord(0, 1000, key, value)])
    >>> group_metadata(seg)[["group", "protocol_type", "generation", "protocol", "member_count"]].values.tolist()
    [['g', 'consumer', 1, None, 0]]

    Columns: ``group``, ``protocol_type``, ``generation``, ``protocol`` and ``leader`` (None
    for an empty group), ``current_state_timestamp`` (ms, -1 before value v2), ``member_count``,
    ``members`` (list of dicts by Kafka's JSON names, consumer subscriptions and assignments
    decoded), ``value_version``, ``record_offset``, ``tombstone``.
    """
    records = group_records(source)
    rows = []
    for off, name, group, version, value, tomb in zip(records["offset"], records["name"], records["group"],
                                                      records["value_version"], records["value"],
                                                      records["tombstone"]):
        if name != "GroupMetadata":
            continue
        v = value or {}
        members = v.get("members", [])
        rows.append((group, v.get("protocolType"), v.get("generation", -1), v.get("protocol"), v.get("leader"),
                     v.get("currentStateTimestamp", -1), len(members), members, version, off, tomb))
    df = pd.DataFrame(rows, columns=["group", "protocol_type", "generation", "protocol", "leader",
                                     "current_state_timestamp", "member_count", "members", "value_version",
                                     "record_offset", "tombstone"])
    df["value_version"] = df["value_version"].astype("Int64")
    return df


def group_members(source) -> pd.DataFrame:
    """One row per member of each group metadata record: who was in the group at each
    generation, with its subscribed topics and assigned partitions when the group uses the
    consumer protocol.

    Cost: :func:`group_records`.

    >>> import tempfile
    >>> group_members(tempfile.mkdtemp()).columns.tolist()[:4]
    ['group', 'generation', 'member_id', 'group_instance_id']

    Columns: ``group``, ``generation``, ``member_id``, ``group_instance_id``, ``client_id``,
    ``client_host``, ``rebalance_timeout`` / ``session_timeout`` (ms; -1 where the version has
    no rebalance timeout), ``topics`` (subscribed; None when not decoded), ``assigned``
    (list of "topic-partition"; None when not decoded), ``record_offset``.
    """
    rows = []
    groups = group_metadata(source)
    for group, generation, members, record_offset in zip(groups["group"].tolist(), groups["generation"].tolist(),
                                                         groups["members"].tolist(),
                                                         groups["record_offset"].tolist()):
        for m in members:
            sub, asg = m.get("subscription"), m.get("assignment")
            topics = sub["data"]["topics"] if isinstance(sub, dict) else None
            assigned = ([f"{t['topic']}-{p}" for t in asg["data"]["assignedPartitions"] for p in t["partitions"]]
                        if isinstance(asg, dict) else None)
            rows.append((group, generation, m["memberId"], m.get("groupInstanceId"), m["clientId"],
                         m["clientHost"], m.get("rebalanceTimeout", -1), m["sessionTimeout"], topics, assigned,
                         record_offset))
    return pd.DataFrame(rows, columns=["group", "generation", "member_id", "group_instance_id", "client_id",
                                       "client_host", "rebalance_timeout", "session_timeout", "topics", "assigned",
                                       "record_offset"])


def transaction_states(source) -> pd.DataFrame:
    """Every record of a ``__transaction_state`` segment or directory, decoded: one row a record
    in log order.

    Units: timestamps ms since the epoch, the timeout ms. Cost: the record walk plus a few
    microseconds a record.

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> key = bytes.fromhex("0000") + b"\\x00\\x03tx1"
    >>> seg = write_segment(tempfile.mkdtemp(), 0, [KafkaRecord(0, 1000, key, None)])
    >>> transaction_states(seg)[["transactional_id", "tombstone"]].values.tolist()
    [['tx1', True]]

    Columns: ``transactional_id``, ``producer_id``, ``producer_epoch``, ``timeout_ms``,
    ``state``, ``partitions`` (list of "topic-partition", file order), ``last_update_timestamp``,
    ``start_timestamp``, ``previous_producer_id`` / ``next_producer_id`` (-1 unless value v1
    carries them), ``client_transaction_version``, ``value_version``, ``record_offset``,
    ``tombstone``. Raises what :func:`decode_transaction_record` raises.
    """
    rows = []
    for _, off, _pos, r in _records(source, decode_transaction_record):
        v = r.value or {}
        rows.append((r.transactional_id, v.get("producerId", -1), v.get("producerEpoch", -1),
                     v.get("transactionTimeoutMs", -1), v.get("state"), _topic_partitions(v) if v else [],
                     v.get("transactionLastUpdateTimestampMs", -1), v.get("transactionStartTimestampMs", -1),
                     v.get("previousProducerId", -1), v.get("nextProducerId", -1),
                     v.get("clientTransactionVersion", 0), r.value_version, off, r.tombstone))
    df = pd.DataFrame(rows, columns=["transactional_id", "producer_id", "producer_epoch", "timeout_ms", "state",
                                     "partitions", "last_update_timestamp", "start_timestamp",
                                     "previous_producer_id", "next_producer_id", "client_transaction_version",
                                     "value_version", "record_offset", "tombstone"])
    df["value_version"] = df["value_version"].astype("Int64")
    return df


def describe_records(source, decoder: str) -> dict[int, tuple[str | None, str | None]]:
    """The dump tool's (key, payload) text of every data record of one segment, by record
    offset; a record that does not decode gets the tool's "Error at offset N,
    skipping." text instead of raising.

    Cost: :func:`group_records` / :func:`transaction_states` of the segment.

    >>> import tempfile
    >>> from rmqlab.kafka.log import KafkaRecord, write_segment
    >>> seg = write_segment(tempfile.mkdtemp(), 0, [KafkaRecord(0, 1, bytes.fromhex("0002") + b"\\x00\\x01g", None)])
    >>> describe_records(seg, "offsets")
    {0: ('{"type":"2","data":{"group":"g"}}', '<DELETE>')}

    `decoder`: "offsets", "transaction-log", "share-group-state" or "remote-log-metadata" (whose
    records have no key text: None). Raises ValueError for another decoder, and what
    :func:`rmqlab.kafka.log.read_records` raises for the segment itself.
    """
    decoders: dict[str, Callable] = {
        "offsets": decode_group_record, "transaction-log": decode_transaction_record,
        "share-group-state": decode_share_state_record,
        "remote-log-metadata": lambda key, value, *, path, key_offset, value_offset:
            decode_remote_log_metadata_record(value, path=path, offset=value_offset),
    }
    if decoder not in decoders:
        raise ValueError(f"decoder must be one of {', '.join(map(repr, decoders))}, not {decoder!r}")
    decode = decoders[decoder]
    out: dict[int, tuple[str | None, str | None]] = {}

    def tolerant(key, value, **where):
        try:
            return decode(key, value, **where)
        except FormatError as e:
            return e

    for _, off, _pos, r in _records(source, tolerant):
        if isinstance(r, FormatError):
            error = f"Error at offset {off}, skipping. {r}"
            # the remote log metadata parser prints its records (and errors) as the payload
            out[off] = (None, error) if decoder == "remote-log-metadata" else (error, None)
        elif decoder == "offsets":
            out[off] = format_offsets_record(r, off)
        elif decoder == "transaction-log":
            out[off] = format_transaction_record(r)
        elif decoder == "share-group-state":
            out[off] = format_share_state_record(r, off)
        else:
            out[off] = (None, format_remote_log_metadata(r))
    return out
