"""The layouts of the records Kafka keeps in its internal topics and its KRaft metadata log,
declared once as :class:`~rmqlab.kafka.schema.Field` rows under the JSON names the release's
``*JsonConverter`` prints (the JSON definition's field name, first letter lower-cased).

Read from the JSON message definitions the releases ship (in their jars, the same files as
the source tree's): ``group-coordinator/src/main/resources/common/message/`` and
``share-coordinator/...`` (3.6.2, 3.9.2, 4.0.2, 4.1.2, 4.2.2, 4.4.0),
``storage/src/main/resources/message/`` (remote log metadata, 3.6.2-4.4.0) and
``metadata/src/main/resources/common/metadata/`` (3.6.2-4.4.0). Each row's comment names the
file (``<Name>.json`` unless said) and the first release that has the field; a row without a
release has been there since the record type first appeared.

A few records changed their layout *without* a new version while their feature was a preview
(the KIP-932 share groups of 3.9 and 4.0): those have one layout per
release line, newest first, and a reader tries them in that order (:data:`GROUP_VALUE_LAYOUTS`,
:data:`SHARE_STATE_LAYOUTS`).

>>> GROUP_VALUE_LAYOUTS[3][0].name, [f.name for f in GROUP_VALUE_LAYOUTS[3][0].fields]
('ConsumerGroupMetadataValue', ['epoch', 'metadataHash'])
>>> METADATA_SCHEMAS[2].fields[0]
Field(name='name', type='string', versions=(0, 32767), nullable=None, tag=None, default=None)
"""
from __future__ import annotations

from rmqlab.kafka.schema import ANY, Field, Schema

__all__ = ["GROUP_KEY_FIELDS", "GROUP_VALUE_LAYOUTS", "SHARE_STATE_KEYS", "SHARE_STATE_LAYOUTS",
           "REMOTE_LOG_METADATA_SCHEMAS", "METADATA_SCHEMAS"]

_V0 = (0, ANY)   # versions "0+"


def _f(name: str, ftype, **kw) -> Field:
    """A field of every version ("0+"): most rows of these schemas."""
    return Field(name, ftype, _V0, **kw)


def _nullable(name: str, ftype, **kw) -> Field:
    return Field(name, ftype, _V0, nullable=_V0, **kw)


def _value(name: str, *fields: Field) -> Schema:
    """A coordinator value: version 0 only, flexible from 0."""
    return Schema(name, (0, 0), 0, fields)


# =============================================================================================
# __consumer_offsets: the KIP-848 consumer groups, KIP-932 share groups, KIP-1071 streams groups
# =============================================================================================

#: record type -> the key's fields after the int16 type (every key is non-flexible strings)
GROUP_KEY_FIELDS: dict[int, tuple[str, ...]] = {
    3: ("groupId",), 4: ("groupId",), 5: ("groupId", "memberId"), 6: ("groupId",),
    7: ("groupId", "memberId"), 8: ("groupId", "memberId"),
    9: ("groupId",), 10: ("groupId", "memberId"), 11: ("groupId",), 12: ("groupId",),
    13: ("groupId", "memberId"), 14: ("groupId", "memberId"), 15: ("groupId",),
    16: ("groupId", "regularExpression"),          # ConsumerGroupRegularExpressionKey, 4.0
    17: ("groupId",), 19: ("groupId", "memberId"), 20: ("groupId",),   # StreamsGroup*Key, 4.1
    21: ("groupId", "memberId"), 22: ("groupId", "memberId"), 23: ("groupId",),
}

_TOPIC_ID_PARTITIONS = (
    _f("topicId", "uuid"),                           # ConsumerGroupTargetAssignmentMemberValue TopicPartition
    _f("partitions", "[]int32"),
)
_TOPIC_METADATA = (                                  # ConsumerGroupPartitionMetadataValue TopicMetadata, 3.7
    _f("topicId", "uuid"),
    _f("topicName", "string"),
    _f("numPartitions", "int32"),
    _f("partitionMetadata", ("[]", (_f("partition", "int32"), _f("racks", "[]string")))),
)
_TOPIC_PARTITIONS_INFO = (                           # ShareGroupStatePartitionMetadataValue TopicPartitionsInfo
    _f("topicId", "uuid"),
    _f("topicName", "string"),
    _f("partitions", "[]int32"),
)
_TOPIC_INFO = (                                      # ShareGroupStatePartitionMetadataValue TopicInfo
    _f("topicId", "uuid"),
    _f("topicName", "string"),
)
_TASK_IDS = (                                        # StreamsGroupCurrentMemberAssignmentValue TaskIds, 4.1
    _f("subtopologyId", "string"),
    _f("partitions", "[]int32"),
    _nullable("assignmentEpochs", "[]int32", tag=0),   # 4.2
)
_KEY_VALUE = (_f("key", "string"), _f("value", "string"))   # StreamsGroupMemberMetadataValue KeyValue, 4.1
_STREAMS_TOPIC_INFO = (                              # StreamsGroupTopologyValue TopicInfo, 4.1
    _f("name", "string"),
    _f("partitions", "int32"),
    _f("replicationFactor", "int16"),
    _f("topicConfigs", ("[]", _KEY_VALUE)),          # TopicConfig: key, value
)


def _assignment_metadata(name: str) -> Schema:
    return _value(name,
                  _f("assignmentEpoch", "int32"),
                  _f("assignmentTimestamp", "int64", tag=0, default=0))   # 4.4


#: record type -> its value's layouts, newest first (the first one the bytes fit is taken)
GROUP_VALUE_LAYOUTS: dict[int, tuple[Schema, ...]] = {
    3: (_value("ConsumerGroupMetadataValue",
               _f("epoch", "int32"),
               _f("metadataHash", "int64", tag=0, default=0)),           # 4.1
        ),
    4: (_value("ConsumerGroupPartitionMetadataValue", _f("topics", ("[]", _TOPIC_METADATA))),),
    5: (_value("ConsumerGroupMemberMetadataValue",
               _nullable("instanceId", "string"),
               _nullable("rackId", "string"),
               _f("clientId", "string"),
               _f("clientHost", "string"),
               _f("subscribedTopicNames", "[]string"),
               _nullable("subscribedTopicRegex", "string"),
               _f("rebalanceTimeoutMs", "int32"),
               _nullable("serverAssignor", "string"),
               _nullable("classicMemberMetadata", ("struct", (                 # 3.8
                   _f("sessionTimeoutMs", "int32"),
                   _f("supportedProtocols", ("[]", (_f("name", "string"), _f("metadata", "bytes")))),
               )), tag=0)),
        ),
    6: (_assignment_metadata("ConsumerGroupTargetAssignmentMetadataValue"),),
    7: (_value("ConsumerGroupTargetAssignmentMemberValue", _f("topicPartitions", ("[]", _TOPIC_ID_PARTITIONS))),),
    8: (_value("ConsumerGroupCurrentMemberAssignmentValue",
               _f("memberEpoch", "int32"),
               _f("previousMemberEpoch", "int32"),
               _f("state", "int8"),
               _f("assignedPartitions", ("[]", _TOPIC_ID_PARTITIONS + (
                   _nullable("assignmentEpochs", "[]int32", tag=0),)),),   # TopicPartitions, 4.4
               _f("partitionsPendingRevocation", ("[]", _TOPIC_ID_PARTITIONS + (
                   _nullable("assignmentEpochs", "[]int32", tag=0),)))),
        ),
    # 3.9 (InitializedTopics, DeletingTopics), then 4.0 (Topics); gone in 4.1
    9: (_value("ShareGroupPartitionMetadataValue", _f("topics", ("[]", _TOPIC_METADATA))),
        _value("ShareGroupPartitionMetadataValue",
               _f("initializedTopics", ("[]", _TOPIC_PARTITIONS_INFO)),
               _f("deletingTopics", ("[]", _TOPIC_INFO)))),
    10: (_value("ShareGroupMemberMetadataValue",
                _nullable("rackId", "string"),
                _f("clientId", "string"),
                _f("clientHost", "string"),
                _f("subscribedTopicNames", "[]string")),
         ),
    11: (_value("ShareGroupMetadataValue", _f("epoch", "int32"), _f("metadataHash", "int64")),   # 4.1
         _value("ShareGroupMetadataValue", _f("epoch", "int32"))),                             # 3.9, 4.0
    12: (_assignment_metadata("ShareGroupTargetAssignmentMetadataValue"),),
    13: (_value("ShareGroupTargetAssignmentMemberValue", _f("topicPartitions", ("[]", _TOPIC_ID_PARTITIONS))),),
    14: (_value("ShareGroupCurrentMemberAssignmentValue",
                _f("memberEpoch", "int32"),
                _f("previousMemberEpoch", "int32"),
                _f("state", "int8"),
                _f("assignedPartitions", ("[]", _TOPIC_ID_PARTITIONS))),
         ),
    15: (_value("ShareGroupStatePartitionMetadataValue",
                _f("initializingTopics", ("[]", _TOPIC_PARTITIONS_INFO)),     # 4.1
                _f("initializedTopics", ("[]", _TOPIC_PARTITIONS_INFO)),
                _f("deletingTopics", ("[]", _TOPIC_INFO))),
         _value("ShareGroupStatePartitionMetadataValue",                      # 4.0
                _f("initializedTopics", ("[]", _TOPIC_PARTITIONS_INFO)),
                _f("deletingTopics", ("[]", _TOPIC_INFO)))),
    16: (_value("ConsumerGroupRegularExpressionValue",                          # 4.0
                _f("topics", "[]string"),
                _f("version", "int64"),
                _f("timestamp", "int64")),
         ),
    17: (_value("StreamsGroupMetadataValue",                                    # 4.1
                _f("epoch", "int32"),
                _f("metadataHash", "int64"),
                _f("validatedTopologyEpoch", "int32", tag=0, default=-1),     # 4.2
                _nullable("lastAssignmentConfigs", ("[]", _KEY_VALUE), tag=1),   # 4.2, LastAssignmentConfig
                _f("storedDescriptionTopologyEpoch", "int32", tag=2, default=-1),   # 4.4
                _f("failedDescriptionTopologyEpoch", "int32", tag=3, default=-1)),  # 4.4
         ),
    19: (_value("StreamsGroupMemberMetadataValue",                              # 4.1
                _nullable("instanceId", "string"),
                _nullable("rackId", "string"),
                _f("clientId", "string"),
                _f("clientHost", "string"),
                _f("rebalanceTimeoutMs", "int32"),
                _f("topologyEpoch", "int32"),
                _f("processId", "string"),
                _nullable("userEndpoint", ("struct", (_f("host", "string"), _f("port", "uint16")))),   # Endpoint
                _f("clientTags", ("[]", _KEY_VALUE))),
         ),
    20: (_assignment_metadata("StreamsGroupTargetAssignmentMetadataValue"),),   # 4.1
    21: (_value("StreamsGroupTargetAssignmentMemberValue",                      # 4.1 (TaskIds without epochs)
                *(_f(n, ("[]", _TASK_IDS[:2])) for n in ("activeTasks", "standbyTasks", "warmupTasks"))),
         ),
    22: (_value("StreamsGroupCurrentMemberAssignmentValue",                     # 4.1
                _f("memberEpoch", "int32"),
                _f("previousMemberEpoch", "int32"),
                _f("state", "int8"),
                *(_f(n, ("[]", _TASK_IDS)) for n in (
                    "activeTasks", "standbyTasks", "warmupTasks", "activeTasksPendingRevocation",
                    "standbyTasksPendingRevocation", "warmupTasksPendingRevocation"))),
         ),
    23: (_value("StreamsGroupTopologyValue",                                    # 4.1
                _f("epoch", "int32"),
                _f("subtopologies", ("[]", (
                    _f("subtopologyId", "string"),
                    _f("sourceTopics", "[]string"),
                    _f("sourceTopicRegex", "[]string"),
                    _f("stateChangelogTopics", ("[]", _STREAMS_TOPIC_INFO)),
                    _f("repartitionSinkTopics", "[]string"),
                    _f("repartitionSourceTopics", ("[]", _STREAMS_TOPIC_INFO)),
                    _f("copartitionGroups", ("[]", (                          # CopartitionGroup
                        _f("sourceTopics", "[]int16"),
                        _f("sourceTopicRegex", "[]int16"),
                        _f("repartitionSourceTopics", "[]int16")))))))),
         ),
}

# =============================================================================================
# __share_group_state (KIP-932, Kafka 4.0+): ShareSnapshot (type 0) and ShareUpdate (type 1)
# =============================================================================================

#: record type -> (record name, key fields): groupId (string), topicId (uuid), partition (int32)
SHARE_STATE_KEYS = {0: "ShareSnapshot", 1: "ShareUpdate"}
SHARE_STATE_KEY_FIELDS = (_f("groupId", "string"), _f("topicId", "uuid"), _f("partition", "int32"))

_STATE_BATCH = (                                     # ShareSnapshotValue StateBatch
    _f("firstOffset", "int64"),
    _f("lastOffset", "int64"),
    _f("deliveryState", "int8"),
    _f("deliveryCount", "int16"),
)
#: record type -> its value's layouts, newest first (4.1 widened snapshotEpoch and added the
#: timestamps, still version 0)
SHARE_STATE_LAYOUTS: dict[int, tuple[Schema, ...]] = {
    0: (_value("ShareSnapshotValue",
               _f("snapshotEpoch", "int32"),                                  # 4.1 (uint16 in 4.0)
               _f("stateEpoch", "int32"),
               _f("leaderEpoch", "int32"),
               _f("startOffset", "int64"),
               _f("deliveryCompleteCount", "int32", tag=0, default=-1),       # 4.2
               _f("createTimestamp", "int64"),                                # 4.1
               _f("writeTimestamp", "int64"),                                 # 4.1
               _f("stateBatches", ("[]", _STATE_BATCH))),
        _value("ShareSnapshotValue",                                          # 4.0
               _f("snapshotEpoch", "uint16"),
               _f("stateEpoch", "int32"),
               _f("leaderEpoch", "int32"),
               _f("startOffset", "int64"),
               _f("stateBatches", ("[]", _STATE_BATCH)))),
    1: (_value("ShareUpdateValue",
               _f("snapshotEpoch", "int32"),                                  # 4.1 (uint16 in 4.0)
               _f("leaderEpoch", "int32"),
               _f("startOffset", "int64"),
               _f("deliveryCompleteCount", "int32", tag=0, default=-1),       # 4.2
               _f("stateBatches", ("[]", _STATE_BATCH))),
        _value("ShareUpdateValue",                                            # 4.0
               _f("snapshotEpoch", "uint16"),
               _f("leaderEpoch", "int32"),
               _f("startOffset", "int64"),
               _f("stateBatches", ("[]", _STATE_BATCH)))),
}

# =============================================================================================
# __remote_log_metadata (KIP-405, Kafka 3.6+): storage/src/main/resources/message/
# =============================================================================================

_TOPIC_ID_PARTITION = (                              # RemoteLogSegmentMetadataRecord TopicIdPartitionEntry
    _f("name", "string"),
    _f("id", "uuid"),
    _f("partition", "int32"),
)
_SEGMENT_ID = (_f("topicIdPartition", ("struct", _TOPIC_ID_PARTITION)), _f("id", "uuid"))   # RemoteLogSegmentIdEntry
_LEADER_EPOCHS = ("[]", (_f("leaderEpoch", "int32"), _f("offset", "int64")))   # SegmentLeaderEpochEntry

#: apiKey -> the record's schema (version 0, flexible)
REMOTE_LOG_METADATA_SCHEMAS: dict[int, Schema] = {
    0: _value("RemoteLogSegmentMetadataRecord",
              _f("remoteLogSegmentId", ("struct", _SEGMENT_ID)),
              _f("startOffset", "int64"),
              _f("endOffset", "int64"),
              _f("brokerId", "int32"),
              _f("maxTimestampMs", "int64"),
              _f("eventTimestampMs", "int64"),
              _f("segmentLeaderEpochs", _LEADER_EPOCHS),
              _f("segmentSizeInBytes", "int32"),
              _nullable("customMetadata", "bytes"),
              _f("remoteLogSegmentState", "int8"),
              _f("txnIndexEmpty", "bool", tag=0, default=False)),              # 4.0
    1: _value("RemoteLogSegmentMetadataUpdateRecord",
              _f("remoteLogSegmentId", ("struct", _SEGMENT_ID)),
              _f("brokerId", "int32"),
              _f("eventTimestampMs", "int64"),
              _nullable("customMetadata", "bytes"),
              _f("remoteLogSegmentState", "int8")),
    2: _value("RemotePartitionDeleteMetadataRecord",
              _f("topicIdPartition", ("struct", _TOPIC_ID_PARTITION)),
              _f("brokerId", "int32"),
              _f("eventTimestampMs", "int64"),
              _f("remotePartitionDeleteState", "int8")),
    3: _value("RemoteLogSegmentMetadataSnapshotRecord",
              _f("segmentId", "uuid"),
              _f("startOffset", "int64"),
              _f("endOffset", "int64"),
              _f("brokerId", "int32"),
              _f("maxTimestampMs", "int64"),
              _f("eventTimestampMs", "int64"),
              _f("segmentLeaderEpochs", _LEADER_EPOCHS),
              _f("segmentSizeInBytes", "int32"),
              _nullable("customMetadata", "bytes"),
              _f("remoteLogSegmentState", "int8"),
              _f("txnIndexEmpty", "bool", tag=0, default=False)),              # 4.0
}

# =============================================================================================
# The KRaft metadata log: metadata/src/main/resources/common/metadata/ (every one flexible 0+)
# =============================================================================================


def _meta(name: str, top: int, *fields: Field) -> Schema:
    return Schema(name, (0, top), 0, fields)


def _since(v: int, name: str, ftype, **kw) -> Field:
    return Field(name, ftype, (v, ANY), **kw)


_ENDPOINT = (                                        # RegisterBrokerRecord BrokerEndpoint
    _f("name", "string"),
    _f("host", "string"),
    _f("port", "uint16"),
    _f("securityProtocol", "int16"),
)
_FEATURE = (                                         # RegisterBrokerRecord BrokerFeature
    _f("name", "string"),
    _f("minSupportedVersion", "int16"),
    _f("maxSupportedVersion", "int16"),
)

#: apiKey -> schema, every version the releases write (3.0 .. 4.4)
METADATA_SCHEMAS: dict[int, Schema] = {
    0: _meta("RegisterBrokerRecord", 4,
             _f("brokerId", "int32"),
             _since(2, "isMigratingZkBroker", "bool"),                         # 3.4
             _f("incarnationId", "uuid"),
             _f("brokerEpoch", "int64"),
             _f("endPoints", ("[]", _ENDPOINT)),
             _f("features", ("[]", _FEATURE)),
             _nullable("rack", "string"),
             _f("fenced", "bool"),
             _since(1, "inControlledShutdown", "bool"),                        # 3.3
             _since(3, "logDirs", "[]uuid", tag=0, default=[]),                # 3.7
             Field("cordonedLogDirs", "[]uuid", (4, ANY), nullable=(4, ANY), tag=1)),   # 4.4
    1: _meta("UnregisterBrokerRecord", 0, _f("brokerId", "int32"), _f("brokerEpoch", "int64")),
    2: _meta("TopicRecord", 0, _f("name", "string"), _f("topicId", "uuid")),
    3: _meta("PartitionRecord", 2,
             _f("partitionId", "int32"),
             _f("topicId", "uuid"),
             _f("replicas", "[]int32"),
             _f("isr", "[]int32"),
             _f("removingReplicas", "[]int32"),
             _f("addingReplicas", "[]int32"),
             _f("leader", "int32"),
             _f("leaderRecoveryState", "int8", tag=0, default=0),              # 3.2
             _f("leaderEpoch", "int32"),
             _f("partitionEpoch", "int32"),
             _since(1, "directories", "[]uuid"),                               # 3.7
             Field("eligibleLeaderReplicas", "[]int32", (2, ANY), nullable=(2, ANY), tag=1),   # 3.7
             Field("lastKnownElr", "[]int32", (2, ANY), nullable=(2, ANY), tag=2)),            # 3.7
    4: _meta("ConfigRecord", 0,
             _f("resourceType", "int8"),
             _f("resourceName", "string"),
             _f("name", "string"),
             _nullable("value", "string")),
    5: _meta("PartitionChangeRecord", 2,
             _f("partitionId", "int32"),
             _f("topicId", "uuid"),
             _nullable("isr", "[]int32", tag=0),
             _f("leader", "int32", tag=1, default=-2),
             _nullable("replicas", "[]int32", tag=2),
             _nullable("removingReplicas", "[]int32", tag=3),
             _nullable("addingReplicas", "[]int32", tag=4),
             _f("leaderRecoveryState", "int8", tag=5, default=-1),             # 3.2
             Field("directories", "[]uuid", (1, ANY), nullable=(1, ANY), tag=8),               # 3.7
             Field("eligibleLeaderReplicas", "[]int32", (2, ANY), nullable=(2, ANY), tag=6),   # 3.8
             Field("lastKnownElr", "[]int32", (2, ANY), nullable=(2, ANY), tag=7)),            # 3.8
    7: _meta("FenceBrokerRecord", 0, _f("id", "int32"), _f("epoch", "int64")),
    8: _meta("UnfenceBrokerRecord", 0, _f("id", "int32"), _f("epoch", "int64")),
    9: _meta("RemoveTopicRecord", 0, _f("topicId", "uuid")),
    10: _meta("DelegationTokenRecord", 0,
              _f("owner", "string"),
              _f("requester", "string"),
              _f("renewers", "[]string"),
              _f("issueTimestamp", "int64"),
              _f("maxTimestamp", "int64"),
              _f("expirationTimestamp", "int64"),
              _f("tokenId", "string")),
    11: _meta("UserScramCredentialRecord", 0,
              _f("name", "string"),
              _f("mechanism", "int8"),
              _f("salt", "bytes"),
              _f("storedKey", "bytes"),
              _f("serverKey", "bytes"),
              _f("iterations", "int32")),
    12: _meta("FeatureLevelRecord", 0, _f("name", "string"), _f("featureLevel", "int16")),
    14: _meta("ClientQuotaRecord", 0,
              _f("entity", ("[]", (_f("entityType", "string"), _nullable("entityName", "string")))),   # EntityData
              _f("key", "string"),
              _f("value", "float64"),
              _f("remove", "bool")),
    15: _meta("ProducerIdsRecord", 0, _f("brokerId", "int32"), _f("brokerEpoch", "int64"),
              _f("nextProducerId", "int64")),
    17: _meta("BrokerRegistrationChangeRecord", 3,
              _f("brokerId", "int32"),
              _f("brokerEpoch", "int64"),
              _f("fenced", "int8", tag=0, default=0),
              _since(1, "inControlledShutdown", "int8", tag=1, default=0),     # 3.3
              _since(2, "logDirs", "[]uuid", tag=2, default=[]),               # 3.7
              Field("cordonedLogDirs", "[]uuid", (3, ANY), nullable=(3, ANY), tag=3)),   # 4.4
    18: _meta("AccessControlEntryRecord", 0,
              _f("id", "uuid"),
              _f("resourceType", "int8"),
              _f("resourceName", "string"),
              _f("patternType", "int8"),
              _f("principal", "string"),
              _f("host", "string"),
              _f("operation", "int8"),
              _f("permissionType", "int8")),
    19: _meta("RemoveAccessControlEntryRecord", 0, _f("id", "uuid")),
    20: _meta("NoOpRecord", 0),
    21: _meta("ZkMigrationStateRecord", 0, _f("zkMigrationState", "int8")),   # ZkMigrationRecord.json, 3.4
    22: _meta("RemoveUserScramCredentialRecord", 0, _f("name", "string"), _f("mechanism", "int8")),
    23: _meta("BeginTransactionRecord", 0, _nullable("name", "string", tag=0)),   # 3.6
    24: _meta("EndTransactionRecord", 0),                                       # 3.6
    25: _meta("AbortTransactionRecord", 0, _nullable("reason", "string", tag=0)),   # 3.6
    26: _meta("RemoveDelegationTokenRecord", 0, _f("tokenId", "string")),       # 3.6
    27: _meta("RegisterControllerRecord", 0,                                    # 3.7
              _f("controllerId", "int32"),
              _f("incarnationId", "uuid"),
              _f("zkMigrationReady", "bool"),
              _f("endPoints", ("[]", _ENDPOINT)),                               # ControllerEndpoint
              _f("features", ("[]", _FEATURE))),                                # ControllerFeature
    28: _meta("ClearElrRecord", 0, _f("topicName", "string")),                 # 4.0
    29: _meta("UnregisterControllerRecord", 0, _f("controllerId", "int32")),   # 4.4
}
