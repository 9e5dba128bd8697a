"""DefaultMQProducer: synchronous sends with RocketMQ's queue choice, retries and message ids.

Sans-IO: ``send`` makes the (synchronous) ``api.send_message`` calls itself and returns the
SendResult or raises. Queue choice is round-robin over the topic's queues from a start index
drawn from the producer's ``random.Random`` (Java's ThreadLocalIndex); a failed attempt is retried
on the next queue, twice by default (``retryTimesWhenSendFailed``), so a send that timed out after
the broker stored it leaves a duplicate, as in RocketMQ.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ..clock import Clock
from ..log import as_log
from ..message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    MessageExt,
)
from ..topics import RETRY_GROUP_TOPIC_PREFIX
from .api import BrokerClientApi, MessageQueue, MQBrokerException, RemotingError, ResponseCode, SendResult
from .errors import MQClientException
from .message_client_id import MessageClientIDSetter

CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
DEFAULT_TOPIC_QUEUE_NUMS = 4  # a producer's defaultTopicQueueNums, for a topic the broker creates on first send
TOPIC_ROUTE_REFRESH_MS = 30_000  # pollNameServerInterval
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
RETRY_RESPONSE_CODES = frozenset({
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION,
})



# --- delay helpers (Message.setDelayTimeLevel / setDelayTimeSec / setDelayTimeMs / setDeliverTimeMs) --------
def set_delay_time_level(msg: MessageExt, level: int) -> None:
    """A delay level (1..18, ``1s 5s 10s ... 2h``): the broker parks it in SCHEDULE_TOPIC_XXXX."""
    msg.properties[PROPERTY_DELAY_TIME_LEVEL] = str(level)


def set_delay_time_sec(msg: MessageExt, seconds: int) -> None:
    """A timer-wheel delay (5.x) in seconds from the broker's receipt."""
    msg.properties[PROPERTY_TIMER_DELAY_SEC] = str(seconds)


def set_delay_time_ms(msg: MessageExt, delay_ms: int) -> None:
    msg.properties[PROPERTY_TIMER_DELAY_MS] = str(delay_ms)


def set_deliver_time_ms(msg: MessageExt, deliver_ms: int) -> None:
    """An absolute timer-wheel deliver time (epoch ms, broker clock)."""
    msg.properties[PROPERTY_TIMER_DELIVER_MS] = str(deliver_ms)


class _TopicPublishInfo:
    __slots__ = ("queues", "send_which_queue", "fetched_ms")

    def __init__(self, queues: list[MessageQueue], start_index: int, fetched_ms: int) -> None:
        self.queues = queues
        self.send_which_queue = start_index
        self.fetched_ms = fetched_ms

    def select_one_message_queue(self) -> MessageQueue:
        self.send_which_queue = (self.send_which_queue + 1) & 0x7FFFFFFF
        return self.queues[self.send_which_queue % len(self.queues)]


class DefaultMQProducer:
    def __init__(
        self,
        api: BrokerClientApi,
        clock: Clock,
        *,
        producer_group: str,
        client_id: str,
        rng: random.Random,
        retry_times_when_send_failed: int = 2,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.api = api
        self.clock = clock
        self.producer_group = producer_group
        self.client_id = client_id
        self.rng = rng
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.default_topic_queue_nums = default_topic_queue_nums
        self.log = as_log(log, "RocketmqClient")
        self.id_setter = MessageClientIDSetter(client_id, rng)
        self.topic_publish_info_table: dict[str, _TopicPublishInfo] = {}

    # --- routes ------------------------------------------------------------------------------------------
    def _try_to_find_topic_publish_info(self, topic: str) -> _TopicPublishInfo:
        now = self.clock.now_ms()
        info = self.topic_publish_info_table.get(topic)
        if info is not None and 0 <= now - info.fetched_ms < TOPIC_ROUTE_REFRESH_MS:
            return info
        try:
            nums = self.api.get_topic_read_queue_nums(topic)
        except MQBrokerException as error:
            if info is not None:
                return info  # keep the last route when a refresh fails
            if error.code != ResponseCode.TOPIC_NOT_EXIST:
                raise MQClientException(f"No route info of this topic: {topic}") from error
            nums = self.default_topic_queue_nums  # the auto-create route (TBW102): the broker makes the topic
        except (RemotingError, MQClientException) as error:
            if info is not None:
                return info
            raise MQClientException(f"No route info of this topic: {topic}") from error
        if nums <= 0:
            raise MQClientException(f"No route info of this topic: {topic}")
        queues = [MessageQueue(topic, self.api.broker_name, i) for i in range(nums)]
        start = info.send_which_queue if info is not None else self.rng.randrange(1 << 31)
        info = _TopicPublishInfo(queues, start, now)
        self.topic_publish_info_table[topic] = info
        return info

    # --- sending -----------------------------------------------------------------------------------------
    @staticmethod
    def check_message(msg: MessageExt) -> None:
        """Validators.checkMessage."""
        if not msg.topic or not msg.topic.strip():
            raise MQClientException("The specified topic is blank")
        if msg.body is None:
            raise MQClientException("the message body is null")
        if len(msg.body) == 0:
            raise MQClientException("the message body length is zero")
        if len(msg.body) > MAX_MESSAGE_SIZE:
            raise MQClientException(f"the message body size over max value, MAX: {MAX_MESSAGE_SIZE}")

    def send(self, msg: MessageExt, queue_id: int | None = None) -> SendResult:
        """Send synchronously; with ``queue_id`` to that queue once, else round-robin with retries."""
        self.check_message(msg)
        if queue_id is not None:
            msg.queue_id = queue_id
            return self._send_kernel(msg)
        info = self._try_to_find_topic_publish_info(msg.topic)
        times = 1 + max(0, self.retry_times_when_send_failed)
        last_error: Exception | None = None
        for attempt in range(times):
            mq = info.select_one_message_queue()
            msg.queue_id = mq.queue_id
            try:
                return self._send_kernel(msg)
            except (RemotingError, MQClientException) as error:
                last_error = error
            except MQBrokerException as error:
                if error.code not in RETRY_RESPONSE_CODES:
                    raise
                last_error = error
            self.log.warn(f"send attempt {attempt + 1} to {mq} failed: {last_error}", last_error)
        raise MQClientException(f"Send [{times}] times, still failed: {last_error}") from last_error

    def _send_kernel(self, msg: MessageExt) -> SendResult:
        now = self.clock.now_ms()
        self.id_setter.set_uniq_id(msg, now)
        msg.born_timestamp = now
        try:
            return self.api.send_message(msg, self.producer_group)
        finally:
            if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                # sendKernelImpl moves RECONSUME_TIME and MAX_RECONSUME_TIMES into the request header and clears
                # them from the message (after the properties string was built): a second attempt sends neither,
                # so the broker stores reconsumeTimes 0 and uses the group's retryMaxTimes.
                msg.properties.pop(PROPERTY_RECONSUME_TIME, None)
                msg.properties.pop(PROPERTY_MAX_RECONSUME_TIMES, None)
