"""BrokerController: one broker, wired as RocketMQ 5.x wires it, answering clients in-process.

It implements ``store.client.api.BrokerClientApi`` directly; the simulator puts a modelled
network in front of it. A crash is just dropping this object: a new one over the same disk
recovers from what the disk kept.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from .. import message as codec
from ..client.api import (
    MessageQueue,
    MQBrokerException,
    PullCallback,
    PullMessageRequest,
    ResponseCode,
    SendResult,
    SendStatus,
)
from ..clock import Clock
from ..config import BrokerConfig, MessageStoreConfig
from ..consumer_offset import ConsumerOffsetManager
from ..disk import Disk
from ..faults import NO_FAULTS, FaultInjector
from ..hook_utils import ScheduleMessageHook, check_before_put_message
from ..log import StoreLog, as_log
from ..message_store import DefaultMessageStore
from ..schedule_message_service import ScheduleMessageService
from ..service import PeriodicService
from ..subscription_group import SubscriptionGroupManager
from ..timer.timer_message_store import TimerMessageStore
from ..topic_config import PERM_READ, PERM_WRITE, TopicConfigManager, get_retry_topic, is_writeable
from .consumer_manager import ConsumerManager
from .pull_message_processor import PullMessageProcessor, PullRequestHoldService
from .send_message_processor import SendMessageProcessor


class BrokerStartError(Exception):
    """The broker refuses to start (e.g. a config file and its .bak are both unreadable)."""


def copy_message(msg: codec.MessageExt) -> codec.MessageExt:
    """What crossing the wire does: the broker never shares the client's objects."""
    return msg.copy(properties=dict(msg.properties))


class BrokerController:
    def __init__(
        self,
        disk: Disk,
        clock: Clock,
        *,
        rng: random.Random,
        broker_config: BrokerConfig | None = None,
        store_config: MessageStoreConfig | None = None,
        faults: FaultInjector = NO_FAULTS,
        mutants: frozenset[str] = frozenset(),
        log: StoreLog | Callable[[str], None] | None = None,
    ) -> None:
        self.disk = disk
        self.clock = clock
        self.rng = rng
        self.broker_config = broker_config or BrokerConfig()
        self.store_config = store_config or MessageStoreConfig()
        self.faults = faults
        self.mutants = mutants
        self.log = log = as_log(log, "RocketmqBroker")
        self.broker_name = self.broker_config.broker_name
        era4 = self.store_config.is_era_4
        persist_mode = "4.x" if era4 else "5.3.3"
        json_shape = "4.x" if era4 else "5.x"
        common = dict(faults=faults, persist_mode=persist_mode, json_shape=json_shape)
        self.topic_config_manager = TopicConfigManager(
            disk, clock,
            broker_cluster_name=self.broker_config.broker_cluster_name,
            broker_name=self.broker_name,
            auto_create_topic_enable=self.broker_config.auto_create_topic_enable,
            default_topic_queue_nums=self.broker_config.default_topic_queue_nums,
            timer_wheel_enable=self.store_config.timer_wheel_enable and not era4,
            system_topics_5x=not era4,
            log=log.named("TopicConfigManager"), **common,
        )
        self.subscription_group_manager = SubscriptionGroupManager(
            disk, clock, auto_create_subscription_group=self.broker_config.auto_create_subscription_group,
            log=log.named("SubscriptionGroupManager"), **common
        )
        self.consumer_offset_manager = ConsumerOffsetManager(disk, clock, log=log.named("ConsumerOffsetManager"), **common)
        self.message_store = DefaultMessageStore(disk, self.store_config, clock, faults,
                                                 log.named("DefaultMessageStore"), mutants=mutants)
        self.schedule_message_service = ScheduleMessageService(self.message_store, mutants=mutants,
                                                               persist_mode=persist_mode,
                                                               log=log.named("ScheduleMessageService"))
        self.consumer_manager = ConsumerManager()
        self.broker_permission = PERM_READ | PERM_WRITE
        self.send_processor = SendMessageProcessor(
            self.message_store, self.topic_config_manager, self.subscription_group_manager, rng,
            era4=era4, broker_writeable=lambda: is_writeable(self.broker_permission), mutants=mutants,
            log=log.named("SendMessageProcessor"),
        )
        self.pull_processor = PullMessageProcessor(
            self.message_store, self.topic_config_manager, self.subscription_group_manager,
            self.consumer_offset_manager, self.consumer_manager,
            overflow_badly_to_min="overflow_badly_to_min" in mutants, log=log.named("PullMessageProcessor"),
        )
        # The 5.x timer wheel (ROCKETMQ.md 7); 4.x has none, and its put hook routes delay levels only.
        self.timer_message_store: TimerMessageStore | None = None
        if self.store_config.timer_wheel_enable and not era4:
            self.timer_message_store = TimerMessageStore(self.message_store, rng=rng, mutants=mutants,
                                                         log=log.named("TimerMessageStore"))
        max_level = self.schedule_message_service.max_delay_level
        if not era4:  # 5.x registers checkBeforePutMessage before the schedule hook
            self.message_store.put_hooks.append(check_before_put_message)
        self.message_store.put_hooks.append(ScheduleMessageHook(max_level) if era4 else ScheduleMessageHook(
            max_level, store_config=self.store_config, clock=clock, timer_message_store=self.timer_message_store))
        self.message_store.arriving_listeners.append(self._message_arriving)
        self.services: list = []
        self.started = False

    # --- lifecycle -------------------------------------------------------------------------
    def initialize(self) -> None:
        """Load config files, the store (with recovery) and the delay offsets; raise if any refuses."""
        for manager in (self.topic_config_manager, self.consumer_offset_manager, self.subscription_group_manager):
            if not manager.load():
                raise BrokerStartError(manager.load_error or f"{manager.config_file_path} cannot be loaded")
        if "persist_before_load" in self.mutants:
            self.schedule_message_service.persist()  # 5.0-5.1.1: the persist task ran before load() (#6881)
        if not self.message_store.load():
            raise BrokerStartError(self.message_store.load_error)
        if self.timer_message_store is not None and not self.timer_message_store.load():
            raise BrokerStartError(self.timer_message_store.load_error)
        if not self.schedule_message_service.load():
            raise BrokerStartError(self.schedule_message_service.load_error or "delayOffset.json cannot be loaded")

    def start(self, mono_ms: int) -> None:
        self.message_store.start(mono_ms)
        if self.timer_message_store is not None:
            self.timer_message_store.start(mono_ms)
        self.schedule_message_service.start(mono_ms)
        cfg = self.broker_config
        self.offset_persist_service = PeriodicService(
            "consumer-offset-persist", lambda _m: self.consumer_offset_manager.persist(),
            cfg.flush_consumer_offset_interval_ms, cfg.flush_consumer_offset_first_delay_ms, mono_ms,
        )
        self.hold_service = PullRequestHoldService(self.pull_processor, mono_ms)
        self.started = True

    @property
    def all_services(self) -> list:
        if not self.started:
            return []
        timer = self.timer_message_store.services if self.timer_message_store is not None else []
        return [*self.message_store.services, *self.schedule_message_service.services,
                self.offset_persist_service, self.hold_service, *timer]

    def attach_probes(self, probes) -> None:
        """Give this broker's components the run's ProbeCollector (store/probes.py)."""
        for component in (self.topic_config_manager, self.subscription_group_manager, self.consumer_offset_manager,
                          self.message_store, self.schedule_message_service,
                          self.send_processor, self.pull_processor, self.timer_message_store):
            if component is not None:
                component.probes = probes

    def shutdown(self) -> None:
        """Graceful stop, in each tag's order.

        4.9.8: ``DefaultMessageStore.shutdown`` stops the schedule service first (it persists), then the store;
        the broker then persists consumer offsets only. 5.3.3 (``shutdownBasicService``): the timer store, the
        message store, ``scheduleMessageService.persist(); shutdown()`` (whose stop() persists again), then
        topics, subscription groups and consumer offsets."""
        self.started = False
        self.pull_processor.drop_held()
        svc = self.schedule_message_service
        if self.store_config.is_era_4:
            svc.shutdown()
            self.message_store.shutdown()
            self.consumer_offset_manager.persist()
            return
        if self.timer_message_store is not None:
            self.timer_message_store.shutdown()  # first, as RocketMQ does: checkpoint prepared and forced
        self.message_store.shutdown()
        if not svc.m_no_persist_at_shutdown:
            svc.persist()
        svc.shutdown()
        self.topic_config_manager.persist()
        self.subscription_group_manager.persist()
        self.consumer_offset_manager.persist()

    def _message_arriving(self, topic: str, queue_id: int, next_offset: int) -> None:
        self.pull_processor.notify_message_arriving(topic, queue_id, next_offset)

    # --- BrokerClientApi -------------------------------------------------------------------
    def pull_message_async(self, request: PullMessageRequest, callback: PullCallback) -> None:
        self.pull_processor.process(request, callback)

    def consumer_send_msg_back(self, group: str, msg: codec.MessageExt, delay_level: int,
                               max_reconsume_times: int) -> None:
        self.send_processor.consumer_send_msg_back(group, msg.commit_log_offset, delay_level,
                                                   max_reconsume_times, origin_msg_id=msg.msg_id)

    def send_message(self, msg: codec.MessageExt, producer_group: str) -> SendResult:
        inner = copy_message(msg)
        topic, queue_id = inner.topic, inner.queue_id
        inner.store_host = codec.socket_address(self.broker_config.broker_ip, self.broker_config.listen_port)
        result = self.send_processor.send_message(inner)
        append = result.append
        return SendResult(
            SendStatus.SEND_OK,
            msg.properties.get(codec.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, append.msg_id),
            append.msg_id,
            MessageQueue(topic, self.broker_name, inner.queue_id if queue_id < 0 else queue_id),
            append.logics_offset,
        )

    def update_consumer_offset_oneway(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """UPDATE_CONSUMER_OFFSET (one-way: the answer is dropped). 5.x answers SUBSCRIPTION_GROUP_NOT_EXIST or
        TOPIC_NOT_EXIST and commits nothing for a group or topic the broker does not have (no auto-create
        here); 4.9.8 commits anything."""
        if not self.store_config.is_era_4 and not (
                self.subscription_group_manager.contains_subscription_group(group)
                and self.topic_config_manager.contains_topic(topic)):
            return
        self.consumer_offset_manager.commit_offset("127.0.0.1", group, topic, queue_id, offset)

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        offset = self.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset >= 0:
            return offset
        store = self.message_store
        min_offset = store.get_min_offset_in_queue(topic, queue_id)
        cq = store.get_consume_queue(topic, queue_id)
        unit = cq.get_unit(0) if cq else None
        if self.store_config.is_era_4:
            # 4.9.8: !checkInDiskByConsumeOffset(topic, q, 0) -- a queue without unit 0 counts as young.
            young = not (unit is not None and store.check_in_disk_by_commit_offset(unit[0]))
        else:
            # 5.3.3: checkInMemByConsumeOffset(topic, q, 0, 1) -- unit 0 must exist and its message be in memory.
            young = (unit is not None and store.commit_log.get_message(unit[0], unit[1]) is not None
                     and not store.check_in_disk_by_commit_offset(unit[0]))
        if min_offset <= 0 and young:
            return 0  # a young queue: start from the beginning
        raise MQBrokerException(ResponseCode.QUERY_NOT_FOUND, "Not found, maybe this group consumer boot first")

    def get_max_offset(self, topic: str, queue_id: int) -> int:
        return self.message_store.get_max_offset_in_queue(topic, queue_id)

    def get_min_offset(self, topic: str, queue_id: int) -> int:
        return max(self.message_store.get_min_offset_in_queue(topic, queue_id), 0)

    def search_offset(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        return self.message_store.get_offset_in_queue_by_time(topic, queue_id, timestamp_ms)

    def heart_beat(self, client_id: str, group: str, message_model: str, topics: list[str]) -> None:
        sgc = self.subscription_group_manager.find_subscription_group_config(group)
        if sgc is not None:
            self.topic_config_manager.create_topic_in_send_message_back_method(
                get_retry_topic(group), sgc.retry_queue_nums, PERM_WRITE | PERM_READ, 0)
        self.consumer_manager.register_consumer(group, client_id, message_model, topics)

    def unregister_client(self, client_id: str, group: str) -> None:
        self.consumer_manager.unregister_consumer(group, client_id)

    def get_consumer_id_list_by_group(self, group: str) -> list[str]:
        """ConsumerManageProcessor.getConsumerListByGroup: a group with no live client (e.g. just after a
        restart, before the heartbeats) is a SYSTEM_ERROR answer, never an empty list."""
        ids = self.consumer_manager.get_consumer_id_list(group)
        if not ids:
            self.log.warn(f"getConsumerGroupInfo failed, {group}")
            raise MQBrokerException(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return ids

    def get_topic_read_queue_nums(self, topic: str) -> int:
        tc = self.topic_config_manager.select_topic_config(topic)
        if tc is None:
            raise MQBrokerException(ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for {topic}")
        return tc.read_queue_nums
