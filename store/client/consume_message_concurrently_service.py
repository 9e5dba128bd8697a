"""ConsumeMessageConcurrentlyService: hand pulled messages to the listener and settle the results.

The caller plays the consume thread pool: it takes ``ConsumeRequest``s from the FIFO
``consume_requests`` (``next_consume_request``) and reports each listener result
(``complete_consume_request``). Settling follows ROCKETMQ.md 4.2: failed messages of a CLUSTERING
consumer are sent back (broker, else a producer fallback, else a local retry after 5 s that keeps
them in the ProcessQueue); then the ProcessQueue's smallest un-acked offset becomes the new offset.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..message import PROPERTY_CONSUME_START_TIMESTAMP, PROPERTY_RETRY_TOPIC, MessageExt
from .api import BROADCASTING, MessageQueue
from .errors import REQUEST_ERRORS
from .process_queue import ProcessQueue

if TYPE_CHECKING:
    from .push_consumer import DefaultMQPushConsumer

CONSUME_SUCCESS = "CONSUME_SUCCESS"
RECONSUME_LATER = "RECONSUME_LATER"
ACK_INDEX_MAX = 2**31 - 1  # Integer.MAX_VALUE: "everything acknowledged"
SUBMIT_LATER_DELAY_MS = 5000  # submitConsumeRequestLater

Listener = Callable[[list[MessageExt], "ConsumeConcurrentlyContext"], "str | None"]


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0  # 0: the broker picks 3 + reconsumeTimes; -1: straight to the DLQ
    ack_index: int = ACK_INDEX_MAX


@dataclass(eq=False, slots=True)
class ConsumeRequest:
    msgs: list[MessageExt]
    process_queue: ProcessQueue
    message_queue: MessageQueue
    local_retry: bool = False  # submitted by submitConsumeRequestLater: the only copy the client still holds


class ConsumeMessageConcurrentlyService:
    def __init__(self, consumer: DefaultMQPushConsumer) -> None:
        self.consumer = consumer
        self.consume_requests: deque[ConsumeRequest] = deque()

    # --- submission --------------------------------------------------------------------------------------
    def submit_consume_request(
        self, msgs: list[MessageExt], process_queue: ProcessQueue, message_queue: MessageQueue,
        dispatch_to_consume: bool = True, local_retry: bool = False,
    ) -> None:
        batch = max(1, self.consumer.consume_message_batch_max_size)
        for i in range(0, len(msgs), batch):
            self.consume_requests.append(
                ConsumeRequest(list(msgs[i : i + batch]), process_queue, message_queue, local_retry))

    def submit_consume_request_later(
        self, msgs: list[MessageExt], process_queue: ProcessQueue, message_queue: MessageQueue
    ) -> None:
        consumer = self.consumer
        consumer.consume_later_service.submit(
            consumer.now_mono_ms + SUBMIT_LATER_DELAY_MS,
            lambda _mono: self.submit_consume_request(msgs, process_queue, message_queue, True, local_retry=True),
        )

    # --- the consume thread's side -----------------------------------------------------------------------
    def next_consume_request(self) -> ConsumeRequest | None:
        """The next request to run, prepared as ConsumeRequest.run prepares it; dropped queues are skipped.

        A skipped local retry is recorded: its send-back failed, so the client re-pulls the message from the
        broker's queue, and a fault may have destroyed that copy (ConsumeRequest.run returns at once in 4.9.8
        and 5.3.3 alike)."""
        while self.consume_requests:
            request = self.consume_requests.popleft()
            if request.process_queue.dropped:
                self.consumer.log(f"the message queue not be able to consume, because it's dropped. "
                                  f"group={self.consumer.consumer_group} {request.message_queue}")
                if request.local_retry:
                    for msg in request.msgs:
                        self.consumer.emit_local_retry_dropped(msg, request.message_queue.topic)
                continue
            self.reset_retry_and_namespace(request.msgs)
            now = str(self.consumer.clock.now_ms())
            for msg in request.msgs:
                msg.properties[PROPERTY_CONSUME_START_TIMESTAMP] = now
            return request
        return None

    def reset_retry_and_namespace(self, msgs: list[MessageExt]) -> None:
        """Show the listener a retried message under its original topic."""
        group_topic = self.consumer.retry_topic
        for msg in msgs:
            retry_topic = msg.properties.get(PROPERTY_RETRY_TOPIC)
            if retry_topic is not None and msg.topic == group_topic:
                msg.topic = retry_topic

    def complete_consume_request(
        self, request: ConsumeRequest, status: str | None, delay_level_when_next_consume: int = 0,
        ack_index: int | None = None,
    ) -> None:
        if status not in (CONSUME_SUCCESS, RECONSUME_LATER):
            status = RECONSUME_LATER  # null return or a thrown exception
        context = ConsumeConcurrentlyContext(
            request.message_queue, delay_level_when_next_consume, ACK_INDEX_MAX if ack_index is None else ack_index)
        acked = self._effective_ack_index(status, context.ack_index, len(request.msgs))
        for i, msg in enumerate(request.msgs):
            self.consumer.emit_consume(msg, CONSUME_SUCCESS if i <= acked else RECONSUME_LATER,
                                       request.message_queue.topic)
        if request.process_queue.dropped:
            self.consumer.log.warn(f"processQueue is dropped without process consume result. {request.message_queue}")
            return
        self.process_consume_result(status, context, request)

    @staticmethod
    def _effective_ack_index(status: str, ack_index: int, size: int) -> int:
        if status == CONSUME_SUCCESS:
            return max(-1, min(ack_index, size - 1))
        return -1

    # --- settling ----------------------------------------------------------------------------------------
    def process_consume_result(self, status: str, context: ConsumeConcurrentlyContext,
                               request: ConsumeRequest) -> None:
        consumer = self.consumer
        msgs = request.msgs
        if not msgs:
            return
        ack_index = self._effective_ack_index(status, context.ack_index, len(msgs))
        if consumer.message_model == BROADCASTING:
            for msg in msgs[ack_index + 1 :]:
                consumer.log.warn(f"BROADCASTING, the message consume failed, drop it, {msg.uniq_key}")
        else:
            failed: list[MessageExt] = []
            for msg in msgs[ack_index + 1 :]:
                if consumer.check_contains_message and not request.process_queue.contains_message(msg):
                    consumer.probes.probe("client.result_of_removed_message")
                    consumer.log(f"Message is not found in its process queue; skip send-back-procedure, "
                                 f"queueOffset={msg.queue_offset}")
                    continue  # 5.1.0+ (#5481): cleanExpireMsg already sent it back
                if not self.send_message_back(msg, context):
                    consumer.probes.probe("client.send_back_failed")
                    msg.reconsume_times += 1
                    failed.append(msg)
            if failed and not consumer.m_commit_on_failed_send_back:
                failed_ids = {id(m) for m in failed}
                request.msgs = msgs = [m for m in msgs if id(m) not in failed_ids]
                for msg in failed:
                    consumer.emit_send_back(msg, context.delay_level_when_next_consume, "ok", "local-retry")
                self.submit_consume_request_later(failed, request.process_queue, request.message_queue)
            # mutant "commit_on_failed_send_back" (client-cpp before #209): the failed messages are
            # removed below with the rest and never retried, so the offset passes them.
        offset = request.process_queue.remove_message(msgs)
        if offset >= 0 and not request.process_queue.dropped:
            consumer.offset_store.update_offset(request.message_queue, offset, True)

    def send_message_back(self, msg: MessageExt, context: ConsumeConcurrentlyContext) -> bool:
        try:
            self.consumer.send_message_back(msg, context.delay_level_when_next_consume,
                                            context.message_queue.broker_name)
            return True
        except REQUEST_ERRORS as error:
            self.consumer.log.error(f"sendMessageBack exception, group: {self.consumer.consumer_group}: {error}", error)
            return False

    # --- expired messages --------------------------------------------------------------------------------
    def clean_expire_msg(self) -> None:
        consumer = self.consumer

        def send_back(msg: MessageExt, delay_level: int) -> None:
            consumer.probes.probe("client.expired_message_sent_back")
            consumer.send_message_back(msg, delay_level)

        for pq in list(consumer.rebalance_impl.process_queue_table.values()):
            pq.clean_expire_msg(consumer.consume_timeout_min, send_back, consumer.log)
