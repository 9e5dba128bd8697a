"""DefaultMQPushConsumer (concurrent listener) as sans-IO services the caller drives.

What Java runs on threads becomes ``services`` (rebalance, offset persistence, pulls, local
resubmissions, expired-message cleaning, heartbeats) plus a consume queue the caller drains with
``next_consume_request`` / ``complete_consume_request`` (or ``run_listener``). Pull answers arrive
through the callback given to ``api.pull_message_async``, now or later; "retry in 3 s" is measured
on the monotonic face of the consumer's clock, whenever the answer comes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial

from ..clock import Clock
from ..config import ERA_5
from ..disk import Disk, MemoryDisk
from ..log import as_log
from ..message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    MessageExt,
)
from ..mutants import validate
from ..probes import NO_PROBES
from ..service import PeriodicService
from .allocate_message_queue import allocate_message_queue_averagely
from .api import (
    BROADCASTING,
    CLUSTERING,
    CONSUME_FROM_FIRST_OFFSET,
    CONSUME_FROM_LAST_OFFSET,
    CONSUME_FROM_TIMESTAMP,
    BrokerClientApi,
    MessageQueue,
    PullMessageRequest,
    PullResult,
    PullStatus,
)
from .consume_message_concurrently_service import (
    ConsumeConcurrentlyContext,
    ConsumeMessageConcurrentlyService,
    ConsumeRequest,
    Listener,
)
from .delayed_tasks import DelayedTaskService
from .errors import REQUEST_ERRORS, MQClientException
from .offset_store import READ_FROM_MEMORY, LocalFileOffsetStore, RemoteBrokerOffsetStore
from .process_queue import ProcessQueue
from .producer import CLIENT_INNER_PRODUCER_GROUP, DefaultMQProducer
from .pull_request import PullRequest
from .rebalance import RETRY_GROUP_TOPIC_PREFIX, RebalancePushImpl, is_retry_topic
from .rebalance_service import RebalanceService
from .subscription import SubscriptionData, build_subscription_data


class _PullCallback:
    """The PullCallback of one pull; a driver that repeats idle long polls in place reads whose pull it is."""

    __slots__ = ("consumer", "pull_request", "subscription")

    def __init__(self, consumer, pull_request: PullRequest, subscription: SubscriptionData) -> None:
        self.consumer = consumer
        self.pull_request = pull_request
        self.subscription = subscription

    def __call__(self, result: PullResult | Exception) -> None:
        self.consumer._on_pull_result(self.pull_request, self.subscription, result)


# DefaultMQPushConsumerImpl / MQClientInstance timings (ms)
CLEAN_EXPIRE_MSG = "clean-expire-msg"  # the service's name
PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION = 3000
PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL = 50
OFFSET_ILLEGAL_FIX_DELAY_MS = 10_000  # 4.9.8 executeTaskLater (5.2.0+: at once, with a frozen offset)
PERSIST_CONSUMER_OFFSET_INTERVAL_MS = 5000
PERSIST_CONSUMER_OFFSET_FIRST_DELAY_MS = 10_000
HEARTBEAT_BROKER_INTERVAL_MS = 30_000
HEARTBEAT_FIRST_DELAY_MS = 1000
PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB = 100
CONSUME_TIMESTAMP_LOOKBACK_MS = 30 * 60_000

CREATE_JUST = "CREATE_JUST"
RUNNING = "RUNNING"
START_FAILED = "START_FAILED"
SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"

EventSink = Callable[[str, dict], None]



class DefaultMQPushConsumer:
    probes = NO_PROBES  # the run's ProbeCollector when the world attaches one (attach_probes)

    def __init__(
        self,
        api: BrokerClientApi,
        clock: Clock,
        *,
        consumer_group: str,
        client_id: str,
        message_model: str = CLUSTERING,
        max_reconsume_times: int = -1,
        consume_from_where: str = CONSUME_FROM_LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        pull_batch_size: int = 32,
        consume_message_batch_max_size: int = 1,
        pull_threshold_for_queue: int = 1000,
        consume_concurrently_max_span: int = 2000,
        consume_timeout_min: int = 15,
        offset_store_disk: Disk | None = None,
        offset_store_dir: str = ".rocketmq_offsets",
        rng: random.Random,
        era: str = ERA_5,
        mutants: frozenset[str] = frozenset(),
        log: Callable[[str], None] | None = None,
        events: EventSink | None = None,
    ) -> None:
        if message_model not in (CLUSTERING, BROADCASTING):
            raise ValueError(f"unknown message model {message_model!r}")
        if consume_from_where not in (CONSUME_FROM_LAST_OFFSET, CONSUME_FROM_FIRST_OFFSET, CONSUME_FROM_TIMESTAMP):
            raise ValueError(f"unknown consume_from_where {consume_from_where!r}")
        if not consumer_group:
            raise ValueError("consumer_group is empty")
        self.api = api
        self.clock = clock
        self.consumer_group = consumer_group
        self.client_id = client_id
        self.message_model = message_model
        self.max_reconsume_times = max_reconsume_times
        self.consume_from_where = consume_from_where
        if consume_timestamp_ms is None:  # Java keeps it as yyyyMMddHHmmss: whole seconds
            consume_timestamp_ms = (clock.now_ms() - CONSUME_TIMESTAMP_LOOKBACK_MS) // 1000 * 1000
        self.consume_timestamp_ms = consume_timestamp_ms
        self.pull_batch_size = pull_batch_size
        self.consume_message_batch_max_size = consume_message_batch_max_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.consume_timeout_min = consume_timeout_min
        self.offset_store_disk = offset_store_disk
        self.offset_store_dir = offset_store_dir
        self.rng = rng
        mutants = validate(mutants)
        self.m_commit_on_failed_send_back = "commit_on_failed_send_back" in mutants
        self.m_commit_max_offset = "commit_max_offset" in mutants
        # The client's era: 5.1.0+ skips the send-back of a message no longer in its ProcessQueue (#5481);
        # 5.2.0+ fixes an OFFSET_ILLEGAL offset at once and rebalances.
        self.era = era
        self.era4 = era.startswith("4.")
        self.check_contains_message = not self.era4 and "no_contains_message_check" not in mutants
        self.log = as_log(log, "RocketmqClient")
        self.events = events
        self.retry_topic = RETRY_GROUP_TOPIC_PREFIX + consumer_group

        self.service_state = CREATE_JUST
        self.rebalance_impl = RebalancePushImpl(
            api, clock,
            consumer_group=consumer_group,
            client_id=client_id,
            message_model=message_model,
            consume_from_where=consume_from_where,
            consume_timestamp_ms=self.consume_timestamp_ms,
            create_process_queue=self._create_process_queue,
            dispatch_pull_requests=self._dispatch_pull_requests,
            allocate=partial(allocate_message_queue_averagely, average_ceil="allocate_average_ceil" in mutants),
            log=self.log,
        )
        self.consume_message_service = ConsumeMessageConcurrentlyService(self)
        self.default_mq_producer = DefaultMQProducer(
            api, clock, producer_group=CLIENT_INNER_PRODUCER_GROUP, client_id=client_id, rng=rng, log=self.log)
        self.offset_store: RemoteBrokerOffsetStore | LocalFileOffsetStore | None = None
        self.pull_message_service = DelayedTaskService("pull-message-service")
        self.consume_later_service = DelayedTaskService("consume-message-scheduled")
        self.rebalance_service: RebalanceService | None = None
        self.offset_persist_service: PeriodicService | None = None
        self.heartbeat_service: PeriodicService | None = None
        self._services: list = []

    # --- configuration -----------------------------------------------------------------------------------
    def subscribe(self, topic: str, sub_expression: str = "*") -> None:
        self.rebalance_impl.subscription_inner[topic] = build_subscription_data(topic, sub_expression)
        if self.service_state == RUNNING:
            self.send_heartbeat()

    def get_max_reconsume_times(self) -> int:
        return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times

    @property
    def consume_requests(self):
        """The FIFO of ConsumeRequests waiting for a consume thread (the caller)."""
        return self.consume_message_service.consume_requests

    @property
    def process_queue_table(self) -> dict[MessageQueue, ProcessQueue]:
        return self.rebalance_impl.process_queue_table

    @property
    def services(self) -> list:
        return list(self._services) if self.service_state == RUNNING else []

    @property
    def now_mono_ms(self) -> int:
        """The executors' time: the monotonic face of the consumer's clock."""
        return self.clock.monotonic_ms()

    # --- lifecycle ---------------------------------------------------------------------------------------
    def start(self, mono_ms: int) -> None:
        """Load offsets, start the services, heartbeat; the first rebalance is due at ``mono_ms``.

        Raises MQClientException when started twice or when the local offsets cannot be read."""
        if self.service_state != CREATE_JUST:
            raise MQClientException(f"The PushConsumer service state not OK, {self.service_state}")
        self.service_state = START_FAILED
        self.copy_subscription()
        if self.message_model == BROADCASTING:
            store = LocalFileOffsetStore(
                self.offset_store_disk if self.offset_store_disk is not None else MemoryDisk(),
                self.offset_store_dir, self.client_id, self.consumer_group,
                on_update=self._offset_updated, log=self.log)
        else:
            store = RemoteBrokerOffsetStore(self.api, self.consumer_group, on_update=self._offset_updated,
                                            log=self.log, era=self.era)
        self.offset_store = store
        self.rebalance_impl.offset_store = store
        store.load()
        self.rebalance_service = RebalanceService(self._run_rebalance, mono_ms)
        self.offset_persist_service = PeriodicService(
            "persist-consumer-offset", self._timed(self.persist_consumer_offset),
            PERSIST_CONSUMER_OFFSET_INTERVAL_MS, PERSIST_CONSUMER_OFFSET_FIRST_DELAY_MS, mono_ms)
        self.heartbeat_service = PeriodicService("heartbeat", self._timed(self.send_heartbeat),
                                                 HEARTBEAT_BROKER_INTERVAL_MS, HEARTBEAT_FIRST_DELAY_MS, mono_ms)
        self._services = [
            self.rebalance_service,
            self.offset_persist_service,
            self.pull_message_service,
            self.consume_later_service,
            PeriodicService(CLEAN_EXPIRE_MSG, self._timed(self.consume_message_service.clean_expire_msg),
                            self.consume_timeout_min * 60_000, self.consume_timeout_min * 60_000, mono_ms),
            self.heartbeat_service,
        ]
        self.service_state = RUNNING
        self.send_heartbeat()

    def copy_subscription(self) -> None:
        """CLUSTERING consumers also read their group's retry topic."""
        if self.message_model == CLUSTERING:
            self.rebalance_impl.subscription_inner[self.retry_topic] = build_subscription_data(self.retry_topic, "*")

    def shutdown(self) -> None:
        """Graceful stop: persist every offset, leave the group, drop the queues."""
        if self.service_state != RUNNING:
            return
        self.persist_consumer_offset()
        try:
            self.api.unregister_client(self.client_id, self.consumer_group)
        except REQUEST_ERRORS as error:
            self.log.warn(f"unregisterClient exception: {error}", error)
        self._stop()

    def crash(self) -> None:
        """kill -9: nothing is persisted or unregistered; late pull answers are ignored."""
        if self.service_state == RUNNING:
            self._stop()

    def _stop(self) -> None:
        self.rebalance_impl.destroy()
        self.pull_message_service.clear()
        self.consume_later_service.clear()
        self.consume_requests.clear()
        self.service_state = SHUTDOWN_ALREADY
        self._services = []

    def rebalance_immediately(self) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED: rebalance at the next step."""
        if self.rebalance_service is not None:
            self.rebalance_service.wakeup(self.now_mono_ms)

    # --- periodic tasks ----------------------------------------------------------------------------------
    @staticmethod
    def _timed(task: Callable[[], None]) -> Callable[[int], None]:
        """A periodic task as a service step (the time is read from the clock, when needed)."""
        return lambda _mono_ms: task()

    def _run_rebalance(self, _mono_ms: int) -> None:
        self.do_rebalance()

    def do_rebalance(self) -> None:
        self.rebalance_impl.do_rebalance()

    def persist_consumer_offset(self) -> None:
        if self.offset_store is None:
            return
        self.offset_store.persist_all(list(self.rebalance_impl.process_queue_table))

    def send_heartbeat(self) -> bool:
        try:
            self.api.heart_beat(self.client_id, self.consumer_group, self.message_model,
                                list(self.rebalance_impl.subscription_inner))
        except REQUEST_ERRORS as error:
            self.log.warn(f"send heart beat to broker exception: {error}", error)
            return False
        return True

    def on_channel_active(self) -> None:
        """A new connection to the broker (after a restart) that a heartbeat did not open: 5.x clients send a
        heartbeat at once and rebalance if it went through (enableHeartbeatChannelEventListener, on by default;
        MQClientInstance.onChannelActive). 4.9.8 has no such listener: the group waits for the 30 s heartbeat."""
        if self.era4 or self.service_state != RUNNING:
            return
        if self.send_heartbeat():
            self.rebalance_immediately()

    def _create_process_queue(self) -> ProcessQueue:
        return ProcessQueue(self.clock, commit_max_offset=self.m_commit_max_offset)

    # --- the pull loop (PullMessageService + DefaultMQPushConsumerImpl.pullMessage) ------------------------
    def _dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        for request in requests:
            self.execute_pull_request_immediately(request)

    def execute_pull_request_immediately(self, request: PullRequest) -> None:
        self.pull_message_service.submit(self.now_mono_ms, lambda _m: self.pull_message(request))

    def execute_pull_request_later(self, request: PullRequest, delay_ms: int) -> None:
        self.pull_message_service.submit(self.now_mono_ms + delay_ms, lambda _m: self.pull_message(request))

    def execute_task_later(self, task: Callable[[], None], delay_ms: int) -> None:
        self.pull_message_service.submit(self.now_mono_ms + delay_ms, lambda _m: task())

    def pull_message(self, pull_request: PullRequest) -> None:
        pq = pull_request.process_queue
        if pq.dropped:
            return
        pq.last_pull_timestamp_ms = self.clock.now_ms()
        if self.service_state != RUNNING:
            self.execute_pull_request_later(pull_request, PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION)
            return
        if pq.msg_count > self.pull_threshold_for_queue:
            self.execute_pull_request_later(pull_request, PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL)
            return
        if pq.msg_size // (1024 * 1024) > PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB:
            self.execute_pull_request_later(pull_request, PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL)
            return
        if pq.get_max_span() > self.consume_concurrently_max_span:
            self.execute_pull_request_later(pull_request, PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL)
            return
        mq = pull_request.message_queue
        subscription = self.rebalance_impl.subscription_inner.get(mq.topic)
        if subscription is None:
            self.execute_pull_request_later(pull_request, PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION)
            return
        commit_offset = 0
        if self.message_model == CLUSTERING:
            in_memory = self.offset_store.read_offset(mq, READ_FROM_MEMORY)
            if in_memory > 0:
                commit_offset = in_memory
        request = PullMessageRequest(
            consumer_group=self.consumer_group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=pull_request.next_offset,
            max_msg_nums=self.pull_batch_size,
            commit_offset=commit_offset,
            sub_expression=subscription.sub_string,
            suspend=True,
        )

        callback = _PullCallback(self, pull_request, subscription)
        try:
            self.api.pull_message_async(request, callback)
        except REQUEST_ERRORS as error:
            self.log.error(f"pullKernelImpl exception: {error}", error)
            self.execute_pull_request_later(pull_request, PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION)

    def _on_pull_result(self, pull_request: PullRequest, subscription: SubscriptionData,
                        result: PullResult | Exception) -> None:
        if self.service_state != RUNNING:
            return  # the client is closed: a late answer goes nowhere
        mq = pull_request.message_queue
        pq = pull_request.process_queue
        if isinstance(result, BaseException):
            if not is_retry_topic(mq.topic):
                self.log.warn(f"execute the pull request exception, {mq}: {result}", result)
            self.execute_pull_request_later(pull_request, PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION)
            return
        status = result.pull_status
        if status == PullStatus.FOUND:
            msgs = [m for m in result.msg_found_list if subscription.matches(m)]
            if not self.era4:  # 5.x processPullResult: msg.setQueueId(mq.getQueueId()); 4.9.8 keeps the record's
                for m in msgs:
                    m.queue_id = mq.queue_id
            pull_request.next_offset = result.next_begin_offset
            if msgs:
                dispatch = pq.put_message(msgs)
                self.consume_message_service.submit_consume_request(msgs, pq, mq, dispatch)
            self.execute_pull_request_immediately(pull_request)
        elif status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            pull_request.next_offset = result.next_begin_offset
            self.correct_tags_offset(pull_request)
            self.execute_pull_request_immediately(pull_request)
        elif status == PullStatus.OFFSET_ILLEGAL:
            self.log.warn(f"the pull request offset illegal, {mq} {pull_request.next_offset} -> "
                     f"{result.next_begin_offset}")
            pull_request.next_offset = result.next_begin_offset
            pq.dropped = True
            delay_ms = OFFSET_ILLEGAL_FIX_DELAY_MS if self.era4 else 0  # 5.2.0+: executeTask, at once
            self.execute_task_later(lambda: self._fix_offset_illegal(pull_request), delay_ms)

    def correct_tags_offset(self, pull_request: PullRequest) -> None:
        """Nothing cached: the next pull offset is as good as committed (it skipped unmatched messages)."""
        if pull_request.process_queue.msg_count == 0:
            self.offset_store.update_offset(pull_request.message_queue, pull_request.next_offset, True)

    def _fix_offset_illegal(self, pull_request: PullRequest) -> None:
        """4.9.8 sets the offset; 5.2.0+ sets and freezes it (in-flight increase-only updates cannot undo it)
        and rebalances at once, so the queue is pulled again from the fixed offset without waiting 20 s."""
        mq = pull_request.message_queue
        self.probes.probe("client.offset_illegal_fixed")
        if self.era4:
            self.offset_store.update_offset(mq, pull_request.next_offset, False)
        else:
            self.offset_store.update_and_freeze_offset(mq, pull_request.next_offset)
        self.offset_store.persist(mq)
        self.rebalance_impl.remove_process_queue(mq)  # also removes the offset, which ends the freeze
        if not self.era4:
            self.rebalance_immediately()
        self.log.warn(f"fix the pull request offset, {mq} {pull_request.next_offset}")

    # --- consuming (the caller is the consume thread pool) -----------------------------------------------
    def next_consume_request(self) -> ConsumeRequest | None:
        return self.consume_message_service.next_consume_request()

    def complete_consume_request(
        self, request: ConsumeRequest, status: str | None,
        delay_level_when_next_consume: int = 0, ack_index: int | None = None,
    ) -> None:
        """The listener's answer for ``request``: "CONSUME_SUCCESS", "RECONSUME_LATER" or None (= later)."""
        self.consume_message_service.complete_consume_request(
            request, status, delay_level_when_next_consume, ack_index)

    def run_listener(self, listener: Listener) -> int:
        """Drain ``consume_requests`` through ``listener(msgs, context)``; how many requests ran."""
        ran = 0
        while (request := self.next_consume_request()) is not None:
            context = ConsumeConcurrentlyContext(request.message_queue)
            try:
                status = listener(request.msgs, context)
            except Exception as error:  # noqa: BLE001 - the user's listener: Java's catch-all stays here
                self.log.warn(f"consumeMessage exception: {error}", error)
                status = None
            self.complete_consume_request(request, status, context.delay_level_when_next_consume,
                                          context.ack_index)
            ran += 1
        return ran

    # --- send-back ---------------------------------------------------------------------------------------
    def attach_probes(self, probes) -> None:
        self.probes = probes

    def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None = None) -> None:
        """Ask the broker to store a retry copy; if it fails, send one through the internal producer.

        Raises only when both failed."""
        try:
            self.api.consumer_send_msg_back(self.consumer_group, msg, delay_level, self.get_max_reconsume_times())
        except REQUEST_ERRORS as error:
            self.log.error(f"sendMessageBack Exception, {self.consumer_group}: {error}", error)
            self.emit_send_back(msg, delay_level, "failed", "broker")
        else:
            self.emit_send_back(msg, delay_level, "ok", "broker")
            return
        self.probes.probe("client.producer_fallback")
        retry = self.build_retry_message(msg)
        try:
            self.default_mq_producer.send(retry)
        except REQUEST_ERRORS:
            self.emit_send_back(msg, 3 + msg.reconsume_times, "failed", "producer-fallback")
            raise
        self.emit_send_back(msg, 3 + msg.reconsume_times, "ok", "producer-fallback")

    def build_retry_message(self, msg: MessageExt) -> MessageExt:
        """The producer fallback's copy for ``%RETRY%group`` (sendMessageBackAsNormalMessage).

        Java sets ORIGIN_MESSAGE_ID on the new message and then replaces its whole property map with the
        consumed message's own map (shared, not copied): the copy carries no fresh ORIGIN_MESSAGE_ID, and
        what follows is written into the consumed message too (ROCKETMQ.md 4.2)."""
        props = msg.properties  # MessageAccessor.setProperties(newMsg, msg.getProperties())
        props[PROPERTY_RETRY_TOPIC] = msg.topic
        props[PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times + 1)
        props[PROPERTY_MAX_RECONSUME_TIMES] = str(self.get_max_reconsume_times())
        props.pop(PROPERTY_TRANSACTION_PREPARED, None)
        props[PROPERTY_DELAY_TIME_LEVEL] = str(3 + msg.reconsume_times)
        return MessageExt(topic=self.retry_topic, body=msg.body, flag=msg.flag, properties=props)

    # --- observability -----------------------------------------------------------------------------------
    def _emit(self, kind: str, fields: dict) -> None:
        if self.events is not None:
            self.events(kind, fields)

    def emit_consume(self, msg: MessageExt, status: str, queue_topic: str = "") -> None:
        """``topic`` as the listener saw it; ``queue_topic`` the queue it came from (``%RETRY%group`` for retries)."""
        if self.events is None:
            return
        self._emit("consume", {
            "group": self.consumer_group, "client_id": self.client_id, "msg_id": msg.uniq_key or msg.msg_id,
            "topic": msg.topic, "queue_topic": queue_topic or msg.topic, "queue_id": msg.queue_id,
            "queue_offset": msg.queue_offset, "reconsume_times": msg.reconsume_times, "status": status,
        })

    def emit_send_back(self, msg: MessageExt, delay_level: int, result: str, path: str) -> None:
        if self.events is None:
            return
        self._emit("send_back", {
            "group": self.consumer_group, "msg_id": msg.uniq_key or msg.msg_id,
            "reconsume_times": msg.reconsume_times, "delay_level": delay_level, "result": result, "path": path,
        })

    def emit_local_retry_dropped(self, msg: MessageExt, queue_topic: str) -> None:
        """A local retry found its ProcessQueue dropped (a rebalance, an OFFSET_ILLEGAL fix) and was not run."""
        if self.events is None:
            return
        self._emit("local_retry_dropped", {
            "group": self.consumer_group, "client_id": self.client_id, "msg_id": msg.uniq_key or msg.msg_id,
            "queue_topic": queue_topic, "queue_id": msg.queue_id, "queue_offset": msg.queue_offset,
            "reconsume_times": msg.reconsume_times,
        })

    def _offset_updated(self, mq: MessageQueue, offset: int) -> None:
        self._emit("offset_commit", {
            "group": self.consumer_group, "client_id": self.client_id, "topic": mq.topic, "queue_id": mq.queue_id,
            "offset": offset,
        })
