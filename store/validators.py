"""Topic and group names as RocketMQ's client ``Validators`` and ``TopicValidator`` check them.

A name becomes a directory (``consumequeue/<topic>/``) and a key of the config files, so a name outside
``^[%|a-zA-Z0-9_-]+$`` (e.g. ``../x``) must never reach the store. Topics are at most 127 characters,
groups at most 255 (``Validators.TOPIC_MAX_LENGTH``, ``CHARACTER_MAX_LENGTH``). The broker's own topics
(``TopicValidator``'s system set, ``rmq_sys_`` prefix) and the retry and dead-letter topics it derives
from a group (``%RETRY%``, ``%DLQ%``) are not user topics.
"""

from __future__ import annotations

import re

from .topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, RMQ_SYS_SCHEDULE_TOPIC

TOPIC_MAX_LENGTH = 127
CHARACTER_MAX_LENGTH = 255
VALID_PATTERN = "^[%|a-zA-Z0-9_-]+$"
_VALID = re.compile(r"[%|a-zA-Z0-9_-]+")

SYSTEM_TOPIC_PREFIX = "rmq_sys_"
SYSTEM_TOPICS = frozenset({
    "TBW102", RMQ_SYS_SCHEDULE_TOPIC, "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC",
})


class InvalidName(ValueError):
    """A topic or group name RocketMQ would refuse; the message says why."""


def _illegal(name: str) -> bool:
    return _VALID.fullmatch(name) is None


def check_topic(topic: object) -> str:
    """``Validators.checkTopic``: not blank, at most 127 characters, only ``[%|a-zA-Z0-9_-]``."""
    if not isinstance(topic, str) or not topic.strip():
        raise InvalidName("the topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise InvalidName(f"the topic is longer than {TOPIC_MAX_LENGTH} characters ({len(topic)})")
    if _illegal(topic):
        raise InvalidName(f"the topic contains illegal characters, allowing only {VALID_PATTERN}")
    return topic


def is_system_topic(topic: str) -> bool:
    """``TopicValidator.isSystemTopic``, plus the per-group retry and dead-letter topics."""
    return (topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)
            or topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or topic.startswith(DLQ_GROUP_TOPIC_PREFIX))


def check_user_topic(topic: object) -> str:
    """A topic a producer may create and send to: valid, and not one of the broker's own."""
    check_topic(topic)
    assert isinstance(topic, str)
    if is_system_topic(topic):
        raise InvalidName(f"the topic {topic!r} is a system topic, not a user topic")
    return topic


def check_group(group: object) -> str:
    """``Validators.checkGroup``: not blank, at most 255 characters, only ``[%|a-zA-Z0-9_-]``."""
    if not isinstance(group, str) or not group.strip():
        raise InvalidName("the group is blank")
    if len(group) > CHARACTER_MAX_LENGTH:
        raise InvalidName(f"the group is longer than {CHARACTER_MAX_LENGTH} characters ({len(group)})")
    if _illegal(group):
        raise InvalidName(f"the group contains illegal characters, allowing only {VALID_PATTERN}")
    return group
