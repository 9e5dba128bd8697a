"""RebalancePushImpl: which queues this push consumer owns, and where it starts reading them.

Every 20 s (and when asked) each subscribed topic is re-divided among the group's live consumers.
A queue lost is dropped (its in-flight results are then discarded) after its offset is persisted;
a queue gained starts at the group's committed offset, or, when the broker has none, at the
position ``consume_from_where`` names (ROCKETMQ.md 5.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..clock import Clock
from ..log import as_log
from ..topics import RETRY_GROUP_TOPIC_PREFIX
from .allocate_message_queue import allocate_message_queue_averagely
from .api import (
    BROADCASTING,
    CLUSTERING,
    CONSUME_FROM_FIRST_OFFSET,
    CONSUME_FROM_LAST_OFFSET,
    CONSUME_FROM_TIMESTAMP,
    BrokerClientApi,
    MessageQueue,
)
from .errors import REQUEST_ERRORS
from .offset_store import READ_FROM_STORE
from .process_queue import ProcessQueue
from .pull_request import PullRequest
from .subscription import SubscriptionData

Allocate = Callable[[str, str, Iterable[MessageQueue], Iterable[str]], list[MessageQueue]]



def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


class RebalancePushImpl:
    def __init__(
        self,
        api: BrokerClientApi,
        clock: Clock,
        *,
        consumer_group: str,
        client_id: str,
        message_model: str = CLUSTERING,
        consume_from_where: str = CONSUME_FROM_LAST_OFFSET,
        consume_timestamp_ms: int = 0,
        create_process_queue: Callable[[], ProcessQueue] | None = None,
        dispatch_pull_requests: Callable[[list[PullRequest]], None] | None = None,
        allocate: Allocate = allocate_message_queue_averagely,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.api = api
        self.clock = clock
        self.consumer_group = consumer_group
        self.client_id = client_id
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.create_process_queue = create_process_queue or (lambda: ProcessQueue(clock))
        self.dispatch_pull_requests = dispatch_pull_requests or (lambda requests: None)
        self.allocate = allocate
        self.log = as_log(log, "RocketmqClient")
        self.offset_store = None  # set by the consumer at start, as in Java
        self.subscription_inner: dict[str, SubscriptionData] = {}
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self.topic_subscribe_info_table: dict[str, list[MessageQueue]] = {}

    # --- routes and members ------------------------------------------------------------------------------
    def update_topic_subscribe_info(self, topic: str) -> list[MessageQueue] | None:
        """Refresh the topic's queues; on failure keep what was known (the route cache survives)."""
        try:
            nums = self.api.get_topic_read_queue_nums(topic)
        except REQUEST_ERRORS as error:
            if not is_retry_topic(topic):
                self.log.warn(f"updateTopicRouteInfoFromNameServer failed, {topic}: {error}", error)
            return self.topic_subscribe_info_table.get(topic)
        mqs = [MessageQueue(topic, self.api.broker_name, i) for i in range(nums)]
        self.topic_subscribe_info_table[topic] = mqs
        return mqs

    def find_consumer_id_list(self, topic: str) -> list[str] | None:
        try:
            return list(self.api.get_consumer_id_list_by_group(self.consumer_group))
        except REQUEST_ERRORS as error:
            self.log.warn(f"getConsumerIdListByGroup exception, {self.consumer_group}: {error}", error)
            return None

    # --- rebalance ---------------------------------------------------------------------------------------
    def do_rebalance(self) -> None:
        for topic in list(self.subscription_inner):
            try:
                self.rebalance_by_topic(topic)
            except REQUEST_ERRORS as error:
                if not is_retry_topic(topic):
                    self.log.warn(f"rebalance Exception, {topic}: {error}", error)
        self.truncate_message_queue_not_my_topic()

    def rebalance_by_topic(self, topic: str) -> bool:
        mq_set = self.update_topic_subscribe_info(topic)
        if self.message_model == BROADCASTING:
            if mq_set is None:
                self.log(f"doRebalance, {self.consumer_group}, but the topic[{topic}] not exist.")
                return False
            return self.update_process_queue_table_in_rebalance(topic, set(mq_set))
        cid_all = self.find_consumer_id_list(topic)
        if mq_set is None:
            if not is_retry_topic(topic):
                self.log(f"doRebalance, {self.consumer_group}, but the topic[{topic}] not exist.")
            return False
        if cid_all is None:
            self.log.warn(f"doRebalance, {self.consumer_group} {topic}, get consumer id list failed")
            return False
        try:
            allocated = self.allocate(self.consumer_group, self.client_id, mq_set, cid_all)
        except ValueError as error:  # the strategy's IllegalArgumentException (e.g. no consumer ids yet)
            self.log.error(f"AllocateMessageQueueStrategy.allocate Exception: {error}", error)
            return False
        return self.update_process_queue_table_in_rebalance(topic, set(allocated))

    def update_process_queue_table_in_rebalance(self, topic: str, mq_set: set[MessageQueue]) -> bool:
        """Drop queues no longer ours (or whose pulls stalled), add the new ones; True if anything changed."""
        changed = False
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic != topic:
                continue
            if mq not in mq_set:
                pq.dropped = True
                if self.remove_unnecessary_message_queue(mq, pq):
                    del self.process_queue_table[mq]
                    changed = True
                    self.log(f"doRebalance, {self.consumer_group}, remove unnecessary mq, {mq}")
            elif pq.is_pull_expired():
                pq.dropped = True
                if self.remove_unnecessary_message_queue(mq, pq):
                    del self.process_queue_table[mq]
                    changed = True
                    self.log(f"[BUG]doRebalance, {self.consumer_group}, remove unnecessary mq, {mq}, "
                             "because pull is pause, so try to fixed it")
        requests: list[PullRequest] = []
        for mq in sorted(mq_set):
            if mq in self.process_queue_table:
                continue
            self.remove_dirty_offset(mq)
            pq = self.create_process_queue()
            next_offset = self.compute_pull_from_where(mq)
            if next_offset >= 0:
                self.process_queue_table[mq] = pq
                self.log(f"doRebalance, {self.consumer_group}, add a new mq, {mq}")
                requests.append(PullRequest(self.consumer_group, mq, pq, next_offset))
                changed = True
            else:
                self.log(f"doRebalance, {self.consumer_group}, add new mq failed, {mq}")
        if requests:
            self.dispatch_pull_requests(requests)
        return changed

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        return True

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.offset_store.remove_offset(mq)

    def remove_process_queue(self, mq: MessageQueue) -> None:
        pq = self.process_queue_table.pop(mq, None)
        if pq is not None:
            pq.dropped = True
            self.remove_unnecessary_message_queue(mq, pq)

    def truncate_message_queue_not_my_topic(self) -> None:
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic not in self.subscription_inner:
                pq.dropped = True
                del self.process_queue_table[mq]

    def destroy(self) -> None:
        for pq in self.process_queue_table.values():
            pq.dropped = True
        self.process_queue_table.clear()

    # --- where a new queue starts ------------------------------------------------------------------------
    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """The committed offset, else the ``consume_from_where`` position; -1: skip the queue this round."""
        last_offset = self.offset_store.read_offset(mq, READ_FROM_STORE)
        if last_offset >= 0:
            return last_offset
        if last_offset != -1:
            return -1  # the broker could not be asked (-2)
        retry = is_retry_topic(mq.topic)
        try:
            if self.consume_from_where == CONSUME_FROM_FIRST_OFFSET:
                return 0
            if self.consume_from_where == CONSUME_FROM_TIMESTAMP:
                if retry:
                    return self.api.get_max_offset(mq.topic, mq.queue_id)
                return self.api.search_offset(mq.topic, mq.queue_id, self.consume_timestamp_ms)
            # CONSUME_FROM_LAST_OFFSET (and the deprecated variants)
            if retry:
                return 0
            return self.api.get_max_offset(mq.topic, mq.queue_id)
        except REQUEST_ERRORS as error:
            self.log.warn(f"computePullFromWhere failed, {mq}: {error}", error)
            return -1
