"""Put hooks (5.x HookUtils; 4.x did the delay part inside CommitLog.asyncPutMessage).

``handleScheduleMessage`` (ROCKETMQ.md 7.1, 3.2): a message with ``DELAY > 0`` is rerouted to
``SCHEDULE_TOPIC_XXXX`` queue ``level - 1``; in 5.x a message with ``TIMER_DELAY_SEC``,
``TIMER_DELAY_MS`` or ``TIMER_DELIVER_MS`` (and no ``DELAY``) goes to the timer wheel's topic
``rmq_sys_wheel_timer`` queue 0 with its rounded deliver time in ``TIMER_OUT_MS``. Both keep
``REAL_TOPIC``/``REAL_QID`` to remember where the message belongs.
"""

from __future__ import annotations

from . import message as codec
from .clock import Clock
from .commit_log import SCHEDULE_TOPIC
from .config import MessageStoreConfig
from .java_numbers import java_parse_long
from .put_status import PutMessageResult, PutMessageStatus
from .topic_config import TIMER_TOPIC
from .topics import RETRY_GROUP_TOPIC_PREFIX

_TIMER_PROPERTIES = (codec.PROPERTY_TIMER_DELIVER_MS, codec.PROPERTY_TIMER_DELAY_SEC, codec.PROPERTY_TIMER_DELAY_MS)
_LONG_MIN, _LONG_RANGE = -(1 << 63), 1 << 64


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


def check_if_timer_message(msg: codec.MessageExt) -> bool:
    """checkIfTimerMessage: a delay level wins (the timer properties are dropped from the map)."""
    props = msg.properties
    if msg.delay_time_level > 0:
        for name in _TIMER_PROPERTIES:
            props.pop(name, None)
        return False
    if msg.topic == TIMER_TOPIC or props.get(codec.PROPERTY_TIMER_OUT_MS) is not None:
        return False
    return any(props.get(name) is not None for name in _TIMER_PROPERTIES)


def _java_long(value: int) -> int:
    """Java long arithmetic wraps around."""
    return (value - _LONG_MIN) % _LONG_RANGE + _LONG_MIN


def timer_deliver_ms(msg: codec.MessageExt, now_ms: int) -> int:
    """The absolute deliver time from the three client properties; ValueError when unparsable."""
    props = msg.properties
    if props.get(codec.PROPERTY_TIMER_DELAY_SEC) is not None:
        return _java_long(now_ms + _java_long(java_parse_long(props[codec.PROPERTY_TIMER_DELAY_SEC]) * 1000))
    if props.get(codec.PROPERTY_TIMER_DELAY_MS) is not None:
        return _java_long(now_ms + java_parse_long(props[codec.PROPERTY_TIMER_DELAY_MS]))
    return java_parse_long(props.get(codec.PROPERTY_TIMER_DELIVER_MS))


def round_to_precision(deliver_ms: int, precision_ms: int) -> int:
    """The slot *before* the target: with the dequeue rule the earliest delivery is ceil(target / p) * p."""
    if deliver_ms % precision_ms == 0:
        return deliver_ms - precision_ms
    return deliver_ms // precision_ms * precision_ms


MAX_TOPIC_BYTES = 255  # HookUtils.MAX_TOPIC_LENGTH: a file name's limit on Linux
MAX_PLAIN_TOPIC_BYTES = 127  # Byte.MAX_VALUE: only %RETRY% topics may be longer (in a V2 record)


def check_before_put_message(msg: codec.MessageExt) -> PutMessageResult | None:
    """5.x ``HookUtils.checkBeforePutMessage``, the broker's first put hook (its topic-length part; the shutdown
    and writeable checks are the store's own): a topic longer than 127 bytes is MESSAGE_ILLEGAL unless it is a
    ``%RETRY%`` topic, and no topic may exceed 255 bytes."""
    topic_len = len(msg.topic.encode("utf-8", "replace"))
    if topic_len > MAX_TOPIC_BYTES:
        return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
    if topic_len > MAX_PLAIN_TOPIC_BYTES and not msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
    return None


class ScheduleMessageHook:
    """``handleScheduleMessage``; registered in the store's put hooks.

    Without ``store_config`` it is the delay-level part only (4.x has no timer wheel). With it, timer
    messages are checked and routed too; ``timer_message_store`` answers the congestion question.
    """

    def __init__(self, max_delay_level: int, *, store_config: MessageStoreConfig | None = None,
                 clock: Clock | None = None, timer_message_store=None) -> None:
        self.max_delay_level = max_delay_level
        self.store_config = store_config
        self.clock = clock
        self.timer_message_store = timer_message_store

    def __call__(self, msg: codec.MessageExt) -> PutMessageResult | None:
        tran_type = msg.sys_flag & 0xC
        if tran_type not in (codec.TRANSACTION_NOT_TYPE, codec.TRANSACTION_COMMIT_TYPE):
            return None
        if self.store_config is not None and msg.topic != TIMER_TOPIC and check_if_timer_message(msg):
            if not self.store_config.timer_wheel_enable:
                return PutMessageResult(PutMessageStatus.WHEEL_TIMER_NOT_ENABLE)
            refused = self.transform_timer_message(msg)
            if refused is not None:
                return refused
        if msg.delay_time_level > 0:
            transform_delay_level_message(msg, self.max_delay_level)
        return None  # the (rerouted) message goes on to the commit log

    def transform_timer_message(self, msg: codec.MessageExt) -> PutMessageResult | None:
        cfg = self.store_config
        now_ms = self.clock.now_ms()
        try:
            deliver_ms = timer_deliver_ms(msg, now_ms)
        except ValueError:
            return PutMessageResult(PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)
        props = msg.properties
        if deliver_ms > now_ms:
            if msg.delay_time_level <= 0 and deliver_ms - now_ms > cfg.timer_max_delay_sec * 1000:
                return PutMessageResult(PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)
            deliver_ms = round_to_precision(deliver_ms, cfg.timer_precision_ms)
            if self.timer_message_store is not None and self.timer_message_store.is_reject(deliver_ms):
                return PutMessageResult(PutMessageStatus.WHEEL_TIMER_FLOW_CONTROL)
            props[codec.PROPERTY_TIMER_OUT_MS] = str(deliver_ms)
            props[codec.PROPERTY_REAL_TOPIC] = msg.topic
            props[codec.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
            msg.properties_string = codec.message_properties_to_string(props)
            msg.topic = TIMER_TOPIC
            msg.queue_id = 0
        elif props.get(codec.PROPERTY_TIMER_DEL_UNIQKEY) is not None:
            return PutMessageResult(PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)
        return None  # already due: stored as it is, in its real topic
