"""FakeBroker: a TEST DOUBLE of BrokerClientApi over plain in-memory lists.

It is not the broker: no commit log, no delay levels (a send-back's retry copy is readable at
once), no persistence. It exists so that the client can be tested alone, with every answer and
every failure under the test's control. Integration tests use the real BrokerController.
"""

from __future__ import annotations

import dataclasses

from store.client.api import (
    MessageQueue,
    MQBrokerException,
    PullCallback,
    PullMessageRequest,
    PullResult,
    PullStatus,
    RemotingError,
    ResponseCode,
    SendResult,
    SendStatus,
)
from store.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    MessageExt,
    java_string_hash,
)

HOLD = object()  # "keep this pull until a message arrives"


def _copy(msg: MessageExt) -> MessageExt:
    """What the wire does: the two sides never share message objects."""
    return dataclasses.replace(msg, properties=dict(msg.properties))


class FakeBroker:
    broker_name = "broker-a"

    def __init__(self, clock) -> None:
        self.clock = clock
        self.queues: dict[str, list[list[MessageExt]]] = {}
        self.min_offsets: dict[tuple[str, int], int] = {}
        self.offsets: dict[tuple[str, str, int], int] = {}  # (group, topic, queue id) -> committed offset
        self.consumers: dict[str, set[str]] = {}
        self.by_phy: dict[int, MessageExt] = {}
        self.next_phy = 0
        self.held: list[tuple[PullMessageRequest, PullCallback]] = []
        self.hold_pulls = True  # long polling: NO_NEW_MSG is answered only when a message arrives
        self.deliver_later = False  # queue pull answers in ``pending`` instead of calling back at once
        self.pending: list[tuple[PullCallback, PullResult | Exception]] = []
        self.failures: dict[str, Exception] = {}  # method name -> raise this on every call
        self.calls: list[tuple] = []

    # --- test controls -----------------------------------------------------------------------------------
    def create_topic(self, topic: str, queues: int = 4) -> None:
        self.queues.setdefault(topic, [[] for _ in range(queues)])

    def put(self, topic: str, queue_id: int = 0, body: bytes = b"body", *, tags: str | None = None,
            key: str | None = None, reconsume_times: int = 0, **props: str) -> MessageExt:
        self.create_topic(topic)
        properties = dict(props)
        if tags is not None:
            properties["TAGS"] = tags
        properties["UNIQ_KEY"] = key or f"K{self.next_phy:06d}"
        msg = MessageExt(topic=topic, queue_id=queue_id, body=body, properties=properties,
                         reconsume_times=reconsume_times)
        return self._store(msg)

    def _store(self, msg: MessageExt) -> MessageExt:
        self.create_topic(msg.topic)
        queue = self.queues[msg.topic][msg.queue_id]
        msg.queue_offset = len(queue)
        msg.commit_log_offset = self.next_phy
        msg.store_timestamp = self.clock.now_ms()
        msg.tags_code = java_string_hash(msg.tags) if msg.tags else 0
        self.next_phy += 100
        queue.append(msg)
        self.by_phy[msg.commit_log_offset] = msg
        self._wake(msg.topic, msg.queue_id)
        return msg

    def messages(self, topic: str, queue_id: int = 0) -> list[MessageExt]:
        return list(self.queues.get(topic, [[]] * (queue_id + 1))[queue_id])

    def release_held(self) -> None:
        """The long-polling timeout: every held pull gets NO_NEW_MSG."""
        held, self.held = self.held, []
        for request, callback in held:
            self._answer(callback, self._pull(request, allow_hold=False))

    def deliver_pending(self) -> None:
        pending, self.pending = self.pending, []
        for callback, result in pending:
            callback(result)

    def calls_of(self, name: str) -> list[tuple]:
        return [c[1:] for c in self.calls if c[0] == name]

    def _maybe_fail(self, name: str) -> None:
        error = self.failures.get(name)
        if error is not None:
            raise error

    # --- pulls -------------------------------------------------------------------------------------------
    def _wake(self, topic: str, queue_id: int) -> None:
        still = []
        woken = []
        for request, callback in self.held:
            (woken if (request.topic, request.queue_id) == (topic, queue_id) else still).append((request, callback))
        self.held = still
        for request, callback in woken:
            self._answer(callback, self._pull(request, allow_hold=False))

    def _answer(self, callback: PullCallback, result) -> None:
        if self.deliver_later:
            self.pending.append((callback, result))
        else:
            callback(result)

    def _pull(self, request: PullMessageRequest, allow_hold: bool):
        queues = self.queues.get(request.topic)
        if queues is None:
            return MQBrokerException(ResponseCode.TOPIC_NOT_EXIST, f"topic[{request.topic}] not exist")
        queue = queues[request.queue_id]
        min_offset = self.min_offsets.get((request.topic, request.queue_id), 0)
        max_offset = len(queue)
        offset = request.queue_offset
        if offset < min_offset:
            return PullResult(PullStatus.OFFSET_ILLEGAL, min_offset, min_offset, max_offset)
        if offset > max_offset:
            return PullResult(PullStatus.OFFSET_ILLEGAL, max_offset, min_offset, max_offset)
        if offset == max_offset:
            if allow_hold and self.hold_pulls and request.suspend:
                return HOLD
            return PullResult(PullStatus.NO_NEW_MSG, offset, min_offset, max_offset)
        codes = None
        expr = request.sub_expression.strip()
        if expr and expr != "*":
            codes = {java_string_hash(t.strip()) for t in expr.split("||") if t.strip()}
        found = []
        next_offset = offset
        for msg in queue[offset : offset + request.max_msg_nums]:
            next_offset = msg.queue_offset + 1
            if codes is None or msg.tags_code in codes:
                found.append(_copy(msg))
        if not found:
            return PullResult(PullStatus.NO_MATCHED_MSG, next_offset, min_offset, max_offset)
        return PullResult(PullStatus.FOUND, next_offset, min_offset, max_offset, found)

    def pull_message_async(self, request: PullMessageRequest, callback: PullCallback) -> None:
        self.calls.append(("pull", request, self.clock.now_ms()))
        self._maybe_fail("pull_message_async")
        if request.commit_offset > 0:
            self.offsets[(request.consumer_group, request.topic, request.queue_id)] = request.commit_offset
        result = self._pull(request, allow_hold=True)
        if result is HOLD:
            self.held.append((request, callback))
        else:
            self._answer(callback, result)

    # --- sends -------------------------------------------------------------------------------------------
    def consumer_send_msg_back(self, group: str, msg: MessageExt, delay_level: int,
                               max_reconsume_times: int) -> None:
        self.calls.append(("consumer_send_msg_back", group, _copy(msg), delay_level, max_reconsume_times))
        self._maybe_fail("consumer_send_msg_back")
        stored = self.by_phy.get(msg.commit_log_offset)
        if stored is None:
            raise MQBrokerException(ResponseCode.SYSTEM_ERROR, "look message by offset failed")
        copy = _copy(stored)
        copy.properties.setdefault(PROPERTY_RETRY_TOPIC, stored.topic)
        if stored.reconsume_times >= max_reconsume_times or delay_level < 0:
            copy.topic = f"%DLQ%{group}"
        else:
            copy.topic = f"%RETRY%{group}"
            copy.properties[PROPERTY_DELAY_TIME_LEVEL] = str(delay_level or 3 + stored.reconsume_times)
        copy.queue_id = 0
        copy.reconsume_times = stored.reconsume_times + 1
        self.create_topic(copy.topic, 1)
        self._store(copy)

    def send_message(self, msg: MessageExt, producer_group: str) -> SendResult:
        self.calls.append(("send_message", _copy(msg), producer_group))
        self._maybe_fail("send_message")
        copy = _copy(msg)
        if copy.topic.startswith("%RETRY%"):
            copy.reconsume_times = int(copy.properties.get(PROPERTY_RECONSUME_TIME) or 0)
        self.create_topic(copy.topic)
        stored = self._store(copy)
        mq = MessageQueue(copy.topic, self.broker_name, copy.queue_id)
        return SendResult(SendStatus.SEND_OK, msg.uniq_key or "", stored.msg_id, mq, stored.queue_offset)

    # --- offsets, routes, membership ---------------------------------------------------------------------
    def update_consumer_offset_oneway(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.calls.append(("update_consumer_offset_oneway", group, topic, queue_id, offset, self.clock.now_ms()))
        self._maybe_fail("update_consumer_offset_oneway")
        self.offsets[(group, topic, queue_id)] = offset

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        self.calls.append(("query_consumer_offset", group, topic, queue_id))
        self._maybe_fail("query_consumer_offset")
        offset = self.offsets.get((group, topic, queue_id))
        if offset is None:
            raise MQBrokerException(ResponseCode.QUERY_NOT_FOUND, "Not found")
        return offset

    def get_max_offset(self, topic: str, queue_id: int) -> int:
        self._maybe_fail("get_max_offset")
        return len(self.queues[topic][queue_id]) if topic in self.queues else 0

    def get_min_offset(self, topic: str, queue_id: int) -> int:
        return self.min_offsets.get((topic, queue_id), 0)

    def search_offset(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        self.calls.append(("search_offset", topic, queue_id, timestamp_ms))
        queue = self.queues.get(topic, [[]] * (queue_id + 1))[queue_id]
        for msg in queue:
            if msg.store_timestamp >= timestamp_ms:
                return msg.queue_offset
        return len(queue)

    def heart_beat(self, client_id: str, group: str, message_model: str, topics: list[str]) -> None:
        self.calls.append(("heart_beat", client_id, group, message_model, tuple(topics)))
        self._maybe_fail("heart_beat")
        self.create_topic(f"%RETRY%{group}", 1)
        self.consumers.setdefault(group, set()).add(client_id)

    def unregister_client(self, client_id: str, group: str) -> None:
        self.calls.append(("unregister_client", client_id, group))
        self.consumers.get(group, set()).discard(client_id)

    def get_consumer_id_list_by_group(self, group: str) -> list[str]:
        self._maybe_fail("get_consumer_id_list_by_group")
        return sorted(self.consumers.get(group, ()))

    def get_topic_read_queue_nums(self, topic: str) -> int:
        self._maybe_fail("get_topic_read_queue_nums")
        if topic not in self.queues:
            raise MQBrokerException(ResponseCode.TOPIC_NOT_EXIST, f"No topic route info for {topic}")
        return len(self.queues[topic])


REMOTING_ERROR = RemotingError("connect to broker-a failed")
