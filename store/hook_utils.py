"""Put hooks (5.x HookUtils; 4.x did the same inside CommitLog.asyncPutMessage).

A message with ``DELAY > 0`` is rerouted to ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` with
``REAL_TOPIC``/``REAL_QID`` recording where it belongs (ROCKETMQ.md 3.2).
"""

from __future__ import annotations

from . import message as codec
from .commit_log import SCHEDULE_TOPIC


def transform_delay_level_message(msg: codec.MessageExt, max_delay_level: int) -> None:
    """Clamp the level, remember the real destination, rebuild the property string, reroute."""
    level = msg.delay_time_level
    if level > max_delay_level:
        level = max_delay_level
        msg.properties[codec.PROPERTY_DELAY_TIME_LEVEL] = str(level)
    msg.properties[codec.PROPERTY_REAL_TOPIC] = msg.topic
    msg.properties[codec.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.properties_string = codec.message_properties_to_string(msg.properties)
    msg.topic = SCHEDULE_TOPIC
    msg.queue_id = level - 1


def is_delay_level_candidate(msg: codec.MessageExt) -> bool:
    tran_type = msg.sys_flag & 0xC
    return tran_type in (codec.TRANSACTION_NOT_TYPE, codec.TRANSACTION_COMMIT_TYPE) and msg.delay_time_level > 0


class ScheduleMessageHook:
    """The delay-level part of ``handleScheduleMessage``; registered in the store's put hooks."""

    def __init__(self, max_delay_level: int) -> None:
        self.max_delay_level = max_delay_level

    def __call__(self, msg: codec.MessageExt):
        if is_delay_level_candidate(msg):
            transform_delay_level_message(msg, self.max_delay_level)
        return None  # never answers: the (rerouted) message goes on to the commit log
