"""The topics a broker keeps for itself, told apart from the topics applications write to.

Lists of topics meant for people (the query explorer's topic picker, for one) leave these out
unless asked: they hold scheduled, transactional, retry and dead-letter bookkeeping, not an
application's messages. The names are the broker's (TopicValidator and MixAll).
"""
from __future__ import annotations

import re

__all__ = ["SYSTEM_TOPICS", "SYSTEM_TOPIC_PREFIXES", "is_system_topic", "BUILTIN_TOPICS", "is_builtin_topic",
           "REVIVE_TOPIC_PREFIX", "RETRY_PREFIX", "pop_retry_topic", "parse_pop_normal_topic", "TOPIC_MAX_LENGTH",
           "GROUP_MAX_LENGTH", "is_valid_topic", "is_valid_group", "TIMER_TOPIC", "TRANS_HALF_TOPICS",
           "TRANS_HALF_TOPIC", "TRANS_OP_TOPIC", "TRANS_ROCKSDB_HALF_TOPIC", "TRANS_ROCKSDB_OP_TOPIC",
           "TRANS_CHECK_MAX_TIME_TOPIC"]

#: Topics the broker keeps for itself (TopicValidator and MixAll), by exact name.
SYSTEM_TOPICS = frozenset({
    "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC", "RMQ_SYS_TRACE_TOPIC", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC",
    "TBW102", "BenchmarkTest", "RMQ_SYS_SELF_TEST_TOPIC",
})
#: Prefixes of the broker's own topics: system topics, and each consumer group's retry and
#: dead-letter topics.
SYSTEM_TOPIC_PREFIXES = ("RMQ_SYS_", "rmq_sys_", "%RETRY%", "%DLQ%")


def is_system_topic(topic: str) -> bool:
    """True for the broker's own topics (SCHEDULE_TOPIC_XXXX, RMQ_SYS_*, %RETRY%..., %DLQ%...).

    >>> is_system_topic("SCHEDULE_TOPIC_XXXX"), is_system_topic("Orders")
    (True, False)
    """
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIXES)


#: Topics a 5.x broker's TopicConfigManager puts into its table at every start (its constructor,
#: read at rocketmq-all-5.0.0 - 5.3.3), whether or not its config store holds them: a RocksDB
#: topic config (5.2+) need not. Also each cluster's revive topic and each broker's sync topic
#: (:data:`BUILTIN_TOPIC_PREFIXES`), the cluster's and broker's own names, and from 5.3.1 the
#: timer topic (:data:`TIMER_TOPIC`; ``LayoutFacts.timer_topic_builtin``).
BUILTIN_TOPICS = frozenset({
    "SELF_TEST_TOPIC", "TBW102", "BenchmarkTest", "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
})
#: PopAckConstants.REVIVE_TOPIC: each cluster's pop revive log is this prefix + the cluster name
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
#: MixAll.RETRY_GROUP_TOPIC_PREFIX
RETRY_PREFIX = "%RETRY%"
BUILTIN_TOPIC_PREFIXES = (REVIVE_TOPIC_PREFIX, "rmq_sys_SYNC_BROKER_MEMBER_")
TIMER_TOPIC = "rmq_sys_wheel_timer"   # TimerMessageStore.TIMER_TOPIC
#: where a broker keeps transactions' half messages (TransactionalMessageBridge.putHalfMessage): the
#: origin topic, or from 5.5 with transRocksDBEnable and transWriteOriginTransHalfEnable off
#: TopicValidator.RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC, whose half messages TransMessageRocksDBStore
#: indexes in rocksdbstore/'s trans column family (its op topic deletes them)
TRANS_HALF_TOPICS = ("RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC")
#: TopicValidator: the half queue (4.3+), its op topic (op messages end half records), their
#: 5.5 RocksDB counterparts, and where the check service moves a half message checked
#: transactionCheckMax times (rmqlab.store.transactions)
TRANS_HALF_TOPIC, TRANS_ROCKSDB_HALF_TOPIC = TRANS_HALF_TOPICS
TRANS_OP_TOPIC, TRANS_ROCKSDB_OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"


def is_builtin_topic(topic: str, *, timer: bool = True) -> bool:
    """True for a topic a 5.x broker creates for itself at every start (:data:`BUILTIN_TOPICS`;
    the timer topic only with `timer`).

    >>> is_builtin_topic("rmq_sys_wheel_timer"), is_builtin_topic("rmq_sys_wheel_timer", timer=False)
    (True, False)
    >>> is_builtin_topic("rmq_sys_REVIVE_LOG_DefaultCluster"), is_builtin_topic("%RETRY%G")
    (True, False)
    """
    return (topic in BUILTIN_TOPICS or topic.startswith(BUILTIN_TOPIC_PREFIXES)
            or (timer and topic == TIMER_TOPIC))


def pop_retry_topic(topic: str, group: str, topics: set[str] | frozenset[str] = frozenset()) -> str:
    """The topic PopReviveService re-puts a popped, unacknowledged message of `topic` into
    (``reviveRetry``, KeyBuilder at rocketmq-all-5.3.3): `topic` itself when it is already a
    retry topic, else ``%RETRY%{group}_{topic}``, or ``%RETRY%{group}+{topic}`` under
    ``enableRetryTopicV2`` (5.2+, off by default). That switch is broker configuration, not on
    disk: the ``+`` form is chosen when `topics` (the store's topics.json) holds it and not the
    ``_`` form.

    >>> pop_retry_topic("Orders", "G"), pop_retry_topic("Orders", "G", {"%RETRY%G+Orders"})
    ('%RETRY%G_Orders', '%RETRY%G+Orders')
    >>> pop_retry_topic("%RETRY%G_Orders", "G")
    '%RETRY%G_Orders'
    """
    if topic.startswith(RETRY_PREFIX):
        return topic
    v1, v2 = f"{RETRY_PREFIX}{group}_{topic}", f"{RETRY_PREFIX}{group}+{topic}"
    return v2 if v2 in topics and v1 not in topics else v1


def parse_pop_normal_topic(topic: str, group: str) -> str:
    """``KeyBuilder.parseNormalTopic(topic, cid)``: the topic a pop retry topic of `group` retries
    (either separator), or `topic` itself.

    >>> parse_pop_normal_topic("%RETRY%G_Orders", "G"), parse_pop_normal_topic("%RETRY%G+Orders", "G")
    ('Orders', 'Orders')
    """
    if not topic.startswith(RETRY_PREFIX):
        return topic
    v2 = f"{RETRY_PREFIX}{group}+"
    if topic.startswith(v2):
        return topic[len(v2):]
    return topic[len(f"{RETRY_PREFIX}{group}_"):]


#: TopicValidator.VALID_CHAR_BIT_MAP: the characters of topic and group names
_NAME_CHARS = re.compile(r"[%|a-zA-Z0-9_-]*")
#: TopicValidator.TOPIC_MAX_LENGTH, Validators.CHARACTER_MAX_LENGTH (a group's)
TOPIC_MAX_LENGTH, GROUP_MAX_LENGTH = 127, 255


def is_valid_topic(name: str) -> bool:
    """A name TopicValidator.validateTopic accepts: 1 to 127 of ``[%|a-zA-Z0-9_-]``.

    >>> is_valid_topic("TopicA"), is_valid_topic("a b"), is_valid_topic("x" * 128)
    (True, False, False)
    """
    return 0 < len(name) <= TOPIC_MAX_LENGTH and _NAME_CHARS.fullmatch(name) is not None


def is_valid_group(name: str) -> bool:
    """A group name the broker creates a subscription group for (findSubscriptionGroupConfig:
    no longer than 255, no character TopicValidator.isTopicOrGroupIllegal rejects).

    >>> is_valid_group("G_pop"), is_valid_group("G pop")
    (True, False)
    """
    return len(name) <= GROUP_MAX_LENGTH and _NAME_CHARS.fullmatch(name) is not None
