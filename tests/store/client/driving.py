"""A tiny virtual-time driver for client tests: the ManualClock is both the wall and the monotonic clock."""

from __future__ import annotations

import random

from store.client.push_consumer import DefaultMQPushConsumer
from store.clock import ManualClock

from .fake_broker import FakeBroker

MAX_STEPS = 200_000


def run_until(consumer: DefaultMQPushConsumer, clock: ManualClock, end_ms: int, listener=None) -> None:
    """Step every due service (and drain the consume queue through ``listener``) up to ``end_ms``."""
    for _ in range(MAX_STEPS):
        if listener is not None:
            consumer.run_listener(listener)
        wakeups = [w for s in consumer.services if (w := s.next_wakeup_ms()) is not None]
        due = min(wakeups, default=None)
        if due is None or due > end_ms:
            if end_ms > clock.now_ms():
                clock.set(end_ms)
            return
        if due > clock.now_ms():
            clock.set(due)
        now = clock.now_ms()
        for service in consumer.services:
            at = service.next_wakeup_ms()
            if at is not None and at <= now:
                service.step(now)
    raise AssertionError("the consumer did not go idle: a busy loop?")


def run_for(consumer, clock: ManualClock, duration_ms: int, listener=None) -> None:
    run_until(consumer, clock, clock.now_ms() + duration_ms, listener)


def make_consumer(broker: FakeBroker, clock: ManualClock, *, client_id: str = "10.0.0.1@c1",
                  group: str = "GroupA", topic: str | None = "TopicTest", sub_expression: str = "*",
                  events: list | None = None, **options) -> DefaultMQPushConsumer:
    sink = None if events is None else (lambda kind, fields: events.append((kind, fields)))
    options.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
    consumer = DefaultMQPushConsumer(broker, clock, consumer_group=group, client_id=client_id,
                                     rng=random.Random(7), events=sink, **options)
    if topic is not None:
        consumer.subscribe(topic, sub_expression)
    return consumer


def succeed(msgs, context) -> str:
    return "CONSUME_SUCCESS"


def fail(msgs, context) -> str:
    return "RECONSUME_LATER"
