"""SendMessageProcessor: producer sends (with handleRetryAndDLQ) and consumerSendMsgBack (4.3).

Both end in the store's put path, where a positive DELAY reroutes the copy to
SCHEDULE_TOPIC_XXXX. consumerSendMsgBack's dead letter gets ``DELAY=0`` (4.9.2+, #2724) so it lands
at once. The producer fallback (a SEND_MESSAGE to ``%RETRY%group``) differs per era: 4.9.8
dead-letters at ``reconsumeTimes >= max`` but ``sendMessage`` then puts the request's properties
back, so the DLQ copy keeps the client's ``DELAY = 3 + r`` and detours through the schedule topic;
5.x (RIP-32) dead-letters at ``reconsumeTimes > max`` with ``DELAY = -1``, at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from .. import message as codec
from ..client.api import MQBrokerException, ResponseCode
from ..faults import SITE_SEND_BACK, check_crash
from ..log import DISK_DAMAGE, as_log
from ..message_store import DefaultMessageStore
from ..probes import NO_PROBES
from ..put_status import PutMessageResult, PutMessageStatus
from ..subscription_group import SubscriptionGroupManager
from ..topic_config import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    PERM_READ,
    PERM_WRITE,
    TopicConfigManager,
    get_dlq_topic,
    get_retry_topic,
    is_writeable,
)
from ..topics import RETRY_GROUP_TOPIC_PREFIX

DLQ_NUMS_PER_GROUP = 1

_STATUS_TO_CODE = {
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.OS_PAGE_CACHE_BUSY: ResponseCode.SYSTEM_BUSY,
    PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,  # the other WHEEL_TIMER_*: SYSTEM_ERROR
}


class SendMessageProcessor:
    probes = NO_PROBES  # the run's ProbeCollector when the world attaches one

    def __init__(
        self,
        store: DefaultMessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        rng: random.Random,
        *,
        era4: bool,
        broker_writeable: Callable[[], bool],
        mutants: frozenset[str] = frozenset(),
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.topics = topics
        self.groups = groups
        self.rng = rng
        self.era4 = era4
        self.broker_writeable = broker_writeable
        self.log = as_log(log or store.log)
        self.m_dlq_keeps_delay = "dlq_keeps_delay" in mutants
        self.m_dlq_threshold_gt = "dlq_threshold_gt" in mutants
        self.m_retry_level_2_plus_r = "retry_level_2_plus_r" in mutants
        self.m_retry_level_4_plus_r = "retry_level_4_plus_r" in mutants
        self.m_fallback_dlq_ge = "fallback_dlq_ge" in mutants
        self.m_ignore_client_max_reconsume = "ignore_client_max_reconsume" in mutants
        self.m_reconsume_times_not_bumped = "reconsume_times_not_bumped" in mutants
        self.dlq_perm = PERM_WRITE | PERM_READ  # 4.9.2+ (#2436); PERM_WRITE only before

    def _goes_to_dlq(self, reconsume_times: int, max_reconsume_times: int) -> bool:
        if self.m_dlq_threshold_gt:
            return reconsume_times > max_reconsume_times
        return reconsume_times >= max_reconsume_times

    def _fallback_goes_to_dlq(self, reconsume_times: int, max_reconsume_times: int) -> bool:
        """handleRetryAndDLQ: 5.x uses '>' (the client already counted this attempt in RECONSUME_TIME)."""
        if self.era4 or self.m_fallback_dlq_ge:
            return self._goes_to_dlq(reconsume_times, max_reconsume_times)
        return reconsume_times > max_reconsume_times

    # --- producer sends --------------------------------------------------------------------
    def send_message(self, msg: codec.MessageExt, default_topic: str = AUTO_CREATE_TOPIC_KEY_TOPIC,
                     client_default_topic_queue_nums: int = 4) -> PutMessageResult:
        """msgCheck + handleRetryAndDLQ + putMessage; raises MQBrokerException for error answers."""
        # msgCheck: a broker that is not writeable refuses only sends to order topics (route data steers the
        # others away); the store's own writeable flag still refuses every put (SERVICE_NOT_AVAILABLE).
        if not self.broker_writeable() and self.topics.is_order_topic(msg.topic):
            raise MQBrokerException(ResponseCode.NO_PERMISSION, "the broker sending message is forbidden")
        tc = self.topics.select_topic_config(msg.topic)
        if tc is None:
            tc = self.topics.create_topic_in_send_message_method(
                msg.topic, default_topic, client_default_topic_queue_nums, 0)
            if tc is None and msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc = self.topics.create_topic_in_send_message_back_method(msg.topic, 1, PERM_WRITE | PERM_READ, 0)
            if tc is None:
                raise MQBrokerException(ResponseCode.TOPIC_NOT_EXIST, f"topic[{msg.topic}] not exist, apply first")
        if msg.queue_id >= max(tc.read_queue_nums, tc.write_queue_nums):
            code = ResponseCode.SYSTEM_ERROR if self.era4 else ResponseCode.INVALID_PARAMETER  # 5.x msgCheck
            raise MQBrokerException(code, f"request queueId[{msg.queue_id}] is illegal")
        if msg.queue_id < 0:
            msg.queue_id = self.rng.randrange(1 << 31) % tc.write_queue_nums
        if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            self._handle_retry_and_dlq(msg)
        msg.properties_string = None  # rebuilt from the (possibly changed) map
        result = self.store.put_message(msg)
        if not result.is_ok:
            raise MQBrokerException(_STATUS_TO_CODE.get(result.status, ResponseCode.SYSTEM_ERROR), result.status,
                                    fault_site=result.fault_site)
        return result

    def _handle_retry_and_dlq(self, msg: codec.MessageExt) -> None:
        group = msg.topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        sgc = self.groups.find_subscription_group_config(group)
        if sgc is None:
            raise MQBrokerException(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                    f"subscription group not exist, {group}")
        max_reconsume_times = sgc.retry_max_times
        header_max = msg.properties.get(codec.PROPERTY_MAX_RECONSUME_TIMES)
        if header_max:
            max_reconsume_times = int(header_max)
        reconsume_times = int(msg.properties.get(codec.PROPERTY_RECONSUME_TIME) or 0)
        msg.reconsume_times = reconsume_times
        if not self._fallback_goes_to_dlq(reconsume_times, max_reconsume_times):
            self.probes.probe("broker.fallback_retry")
        else:
            self.probes.probe("broker.fallback_dlq")
            dlq = get_dlq_topic(group)
            tc = self.topics.create_topic_in_send_message_back_method(dlq, DLQ_NUMS_PER_GROUP, self.dlq_perm, 0)
            if tc is None:
                raise MQBrokerException(ResponseCode.SYSTEM_ERROR, f"topic[{dlq}] not exist")
            msg.topic = dlq
            msg.queue_id = self.rng.randrange(1 << 31) % DLQ_NUMS_PER_GROUP
            # 4.9.8: setDelayTimeLevel(0) is undone when sendMessage restores the request's properties, so the
            # copy keeps the client's DELAY and the put path parks it in SCHEDULE_TOPIC_XXXX (REAL_TOPIC = the DLQ).
            if not self.era4 and not self.m_dlq_keeps_delay:
                msg.properties[codec.PROPERTY_DELAY_TIME_LEVEL] = "-1"

    # --- consumerSendMsgBack ---------------------------------------------------------------
    def consumer_send_msg_back(self, group: str, commit_log_offset: int, delay_level: int,
                               max_reconsume_times: int | None, origin_msg_id: str = "") -> PutMessageResult | None:
        """Store the retry (or dead-letter) copy of a consumed message; None means SUCCESS without storing."""
        if check_crash(self.store.faults, SITE_SEND_BACK, group):
            raise MQBrokerException(ResponseCode.SYSTEM_ERROR, "send back failed (injected fault)",
                                    fault_site=SITE_SEND_BACK)
        sgc = self.groups.find_subscription_group_config(group)
        if sgc is None:
            raise MQBrokerException(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                    f"subscription group not exist, {group}")
        if not self.broker_writeable():
            raise MQBrokerException(ResponseCode.NO_PERMISSION, "the broker sending message is forbidden")
        if sgc.retry_queue_nums <= 0:
            return None  # SUCCESS, nothing stored: the message is silently dropped
        new_topic = get_retry_topic(group)
        queue_id = self.rng.randrange(1 << 31) % sgc.retry_queue_nums
        tc = self.topics.create_topic_in_send_message_back_method(
            new_topic, sgc.retry_queue_nums, PERM_WRITE | PERM_READ, 0)
        if tc is None:
            raise MQBrokerException(ResponseCode.SYSTEM_ERROR, f"topic[{new_topic}] not exist")
        if not is_writeable(tc.perm):
            raise MQBrokerException(ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden")
        msg_ext = self.store.look_message_by_offset(commit_log_offset)
        if msg_ext is None:
            # the consumer pulled this copy, so only a loss of stored data (a power failure) can have removed it
            raise MQBrokerException(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {commit_log_offset}",
                                    fault_site=DISK_DAMAGE)
        props = msg_ext.properties
        if codec.PROPERTY_RETRY_TOPIC not in props:
            props[codec.PROPERTY_RETRY_TOPIC] = msg_ext.topic
        props[codec.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        if max_reconsume_times is None or self.m_ignore_client_max_reconsume:
            max_reconsume_times = sgc.retry_max_times
        if self._goes_to_dlq(msg_ext.reconsume_times, max_reconsume_times) or delay_level < 0:
            self.probes.probe("broker.send_back_to_dlq")
            new_topic = get_dlq_topic(group)
            queue_id = self.rng.randrange(1 << 31) % DLQ_NUMS_PER_GROUP
            tc = self.topics.create_topic_in_send_message_back_method(new_topic, DLQ_NUMS_PER_GROUP, self.dlq_perm, 0)
            if tc is None:
                raise MQBrokerException(ResponseCode.SYSTEM_ERROR, f"topic[{new_topic}] not exist")
            if not self.m_dlq_keeps_delay:
                props[codec.PROPERTY_DELAY_TIME_LEVEL] = "0"
        else:
            if delay_level == 0:
                delay_level = (2 if self.m_retry_level_2_plus_r else 4 if self.m_retry_level_4_plus_r else 3) \
                    + msg_ext.reconsume_times
            props[codec.PROPERTY_DELAY_TIME_LEVEL] = str(delay_level)
        origin = props.get(codec.PROPERTY_ORIGIN_MESSAGE_ID) or origin_msg_id or msg_ext.msg_id
        props[codec.PROPERTY_ORIGIN_MESSAGE_ID] = origin
        inner = codec.MessageExt(
            topic=new_topic,
            body=msg_ext.body,
            queue_id=queue_id,
            flag=msg_ext.flag,
            properties=props,
            sys_flag=msg_ext.sys_flag,
            born_timestamp=msg_ext.born_timestamp,
            born_host=msg_ext.born_host,
            store_host=msg_ext.store_host,
            reconsume_times=msg_ext.reconsume_times + (0 if self.m_reconsume_times_not_bumped else 1),
        )
        result = self.store.put_message(inner)
        if not result.is_ok:
            raise MQBrokerException(ResponseCode.SYSTEM_ERROR, result.status, fault_site=result.fault_site)
        return result
