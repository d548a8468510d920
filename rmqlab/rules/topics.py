"""The topics a broker keeps for itself, told apart from the topics applications write to.

Lists of topics meant for people (the query explorer's topic picker, for one) leave these out
unless asked: they hold scheduled, transactional, retry and dead-letter bookkeeping, not an
application's messages. The names are the broker's (TopicValidator and MixAll).
"""
from __future__ import annotations

__all__ = ["SYSTEM_TOPICS", "SYSTEM_TOPIC_PREFIXES", "is_system_topic"]

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
