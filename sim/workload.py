"""Workload actors: producers that send at a rate, and the consume "thread pool" of a push consumer.

Both are sans-IO services like the store's, driven by the same scheduler; the client logic is
the real client code of ``store/client`` (DefaultMQProducer, DefaultMQPushConsumer).
"""

from __future__ import annotations

import random

from sim.scenario import ConsumerSpec, ProducerSpec
from store.client.api import MQBrokerException, RemotingError
from store.client.consume_message_concurrently_service import CONSUME_SUCCESS, RECONSUME_LATER
from store.client.errors import MQClientException
from store.client.producer import DefaultMQProducer, set_delay_time_level, set_delay_time_ms
from store.message import PROPERTY_TAGS, MessageExt

CONSUME_THREAD_MAX = 20  # DefaultMQPushConsumer.consumeThreadMax


def message_body(pattern: bytes, body_size: int, scenario_version: int) -> bytes:
    """``body_size`` bytes of ``pattern`` repeated. Version 1 scenarios repeated it ``body_size // 8 + 1`` times,
    which is short of ``body_size`` for patterns under 8 bytes (the first 100 messages of a producer): kept for
    them, so that their reproductions replay."""
    repeats = body_size // 8 + 1 if scenario_version == 1 else body_size // len(pattern) + 1
    return (pattern * repeats)[:body_size]


class ProducerActor:
    """Sends ``spec.messages`` at ``spec.rate_per_s`` from ``spec.start_ms``, until the traffic phase ends."""

    def __init__(self, world, index: int, spec: ProducerSpec, producer: DefaultMQProducer, rng: random.Random) -> None:
        self.world = world
        self.index = index
        self.name = f"producer-{index}"
        self.spec = spec
        self.producer = producer
        self.rng = rng
        self.sent = 0
        self.interval_ms = 1000.0 / spec.rate_per_s

    def next_wakeup_ms(self) -> int | None:
        if self.sent >= self.spec.messages:
            return None
        at = self.world.start_mono_ms + self.spec.start_ms + int(self.sent * self.interval_ms)
        return at if at < self.world.traffic_end_mono_ms else None

    def _delay_level(self) -> int:
        levels = self.spec.delay_levels
        if not levels:
            return 0
        if self.spec.delay_weights:
            return self.rng.choices(levels, weights=self.spec.delay_weights)[0]
        return levels[self.sent % len(levels)]

    def step(self, mono_ms: int) -> None:
        at = self.next_wakeup_ms()
        if at is None or at > mono_ms:
            return
        spec = self.spec
        level = self._delay_level()
        body = message_body(f"p{self.index}-m{self.sent}-".encode(), spec.body_size, self.world.scenario.version)
        msg = MessageExt(topic=spec.topic, body=body)
        if spec.tags:
            msg.properties[PROPERTY_TAGS] = spec.tags
        if level:
            set_delay_time_level(msg, level)
        if spec.timer_delay_ms is not None:
            set_delay_time_ms(msg, spec.timer_delay_ms)
        self.sent += 1
        try:
            result = self.producer.send(msg)
            status, queue_id = result.send_status, result.message_queue.queue_id
        except (MQBrokerException, RemotingError, MQClientException) as error:
            status, queue_id = f"FAILED: {error}", -1
        msg_id = msg.uniq_key
        self.world.recorder.on_send(self.name, msg_id, spec.topic, queue_id, level, spec.timer_delay_ms, status,
                                    msg.properties.get(PROPERTY_TAGS))


class ConsumeExecutor:
    """Plays the consume thread pool: takes ConsumeRequests, decides each listener's answer, reports it.

    An attempt fails if it is among the first ``fail_first`` attempts of that message in the group,
    or with probability ``fail_probability``."""

    def __init__(self, world, owner: str, consumer, spec: ConsumerSpec, rng: random.Random) -> None:
        self.world = world
        self.name = f"{owner}/consume"
        self.consumer = consumer
        self.spec = spec
        self.rng = rng
        self.attempts = world.clients.attempts  # (group, msg_id) -> attempts, shared by the group's instances
        self.in_flight: list[tuple[int, int, object, str]] = []  # (done_at, seq, request, status)
        self._seq = 0

    def next_wakeup_ms(self) -> int | None:
        if len(self.in_flight) < CONSUME_THREAD_MAX and self.consumer.consume_requests:
            return self.world.now_mono()
        return self.in_flight[0][0] if self.in_flight else None

    def _decide(self, request) -> str:
        failed = False
        for msg in request.msgs:
            key = (self.spec.group, msg.uniq_key)
            attempts = self.attempts[key] = self.attempts.get(key, 0) + 1
            if attempts <= self.spec.fail_first:
                failed = True
        if not failed and self.spec.fail_probability > 0 and self.rng.random() < self.spec.fail_probability:
            failed = True
        return RECONSUME_LATER if failed else CONSUME_SUCCESS

    def step(self, mono_ms: int) -> None:
        while self.in_flight and self.in_flight[0][0] <= mono_ms:
            _, _, request, status = self.in_flight.pop(0)
            self.consumer.complete_consume_request(request, status)
        while len(self.in_flight) < CONSUME_THREAD_MAX:
            request = self.consumer.next_consume_request()
            if request is None:
                break
            status = self._decide(request)
            self.in_flight.append((mono_ms + self.spec.consume_time_ms, self._seq, request, status))
            self._seq += 1
        self.in_flight.sort()  # by (done_at, seq): seq is unique, so the request is never compared

    def clear(self) -> None:
        self.in_flight.clear()
