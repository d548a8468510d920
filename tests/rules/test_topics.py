"""The broker's own topics are told apart from application topics by name."""
from __future__ import annotations

import pytest

from rmqlab.rules.topics import SYSTEM_TOPICS, is_system_topic


@pytest.mark.parametrize("topic", sorted(SYSTEM_TOPICS) + ["RMQ_SYS_ANYTHING", "rmq_sys_x",
                                                             "%RETRY%group", "%DLQ%group"])
def test_system_topics(topic):
    assert is_system_topic(topic)


@pytest.mark.parametrize("topic", ["Orders", "TopicTest", "SYS_RMQ", "retry", "x%RETRY%", "TBW1020"])
def test_application_topics(topic):
    assert not is_system_topic(topic)
