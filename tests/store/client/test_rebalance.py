"""RebalancePushImpl: ownership changes and the initial position of a new queue (ROCKETMQ.md 5.2)."""

from __future__ import annotations

import pytest

from store.client.api import BROADCASTING, MessageQueue
from store.client.offset_store import RemoteBrokerOffsetStore
from store.client.process_queue import ProcessQueue
from store.client.rebalance import RebalancePushImpl
from store.client.subscription import build_subscription_data
from store.clock import ManualClock

from .driving import make_consumer, run_for, succeed
from .fake_broker import REMOTING_ERROR, FakeBroker

RETRY = "%RETRY%GroupA"


def make_rebalance(consume_from_where: str, *, timestamp_ms: int = 0):
    clock = ManualClock(1_700_000_000_000)
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", 2)
    broker.create_topic(RETRY, 1)
    for i in range(5):
        broker.put("TopicTest", 0, b"m%d" % i)
        clock.advance(1000)
    broker.put(RETRY, 0, b"r0")
    broker.put(RETRY, 0, b"r1")
    dispatched = []
    rb = RebalancePushImpl(broker, clock, consumer_group="GroupA", client_id="c1",
                           consume_from_where=consume_from_where, consume_timestamp_ms=timestamp_ms,
                           dispatch_pull_requests=dispatched.extend)
    rb.offset_store = RemoteBrokerOffsetStore(broker, "GroupA")
    return clock, broker, rb, dispatched


MQ = MessageQueue("TopicTest", "broker-a", 0)
RMQ = MessageQueue(RETRY, "broker-a", 0)


@pytest.mark.parametrize("where, normal, retry", [
    ("CONSUME_FROM_LAST_OFFSET", 5, 0),  # normal: broker max offset; retry topics from 0
    ("CONSUME_FROM_FIRST_OFFSET", 0, 0),
    ("CONSUME_FROM_TIMESTAMP", 2, 2),  # normal: searchOffset(timestamp); retry topics: max offset
])
def test_initial_position_without_a_committed_offset(where, normal, retry):
    _, broker, rb, _ = make_rebalance(where, timestamp_ms=1_700_000_002_000)
    assert rb.compute_pull_from_where(MQ) == normal
    assert rb.compute_pull_from_where(RMQ) == retry
    if where == "CONSUME_FROM_TIMESTAMP":
        assert broker.calls_of("search_offset") == [("TopicTest", 0, 1_700_000_002_000)]


@pytest.mark.parametrize("where", ["CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET",
                                   "CONSUME_FROM_TIMESTAMP"])
def test_a_committed_offset_wins_and_is_loaded_into_memory(where):
    _, broker, rb, _ = make_rebalance(where)
    broker.offsets[("GroupA", "TopicTest", 0)] = 3
    assert rb.compute_pull_from_where(MQ) == 3
    assert rb.offset_store.offset_table[MQ] == 3


def test_an_unreachable_broker_skips_the_queue_this_round():
    _, broker, rb, dispatched = make_rebalance("CONSUME_FROM_FIRST_OFFSET")
    broker.failures["query_consumer_offset"] = REMOTING_ERROR
    assert rb.compute_pull_from_where(MQ) == -1
    broker.consumers["GroupA"] = {"c1"}
    rb.subscription_inner["TopicTest"] = build_subscription_data("TopicTest", "*")
    rb.do_rebalance()
    assert rb.process_queue_table == {} and dispatched == []
    del broker.failures["query_consumer_offset"]
    rb.do_rebalance()
    assert sorted(rb.process_queue_table) == [MQ, MessageQueue("TopicTest", "broker-a", 1)]
    assert [(r.message_queue.queue_id, r.next_offset) for r in dispatched] == [(0, 0), (1, 0)]


def test_a_failing_max_offset_also_skips_the_queue():
    _, broker, rb, _ = make_rebalance("CONSUME_FROM_LAST_OFFSET")
    broker.failures["get_max_offset"] = REMOTING_ERROR
    assert rb.compute_pull_from_where(MQ) == -1


def test_clustering_auto_subscribes_the_retry_topic_broadcasting_does_not():
    clock = ManualClock()
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", 2)
    clustering = make_consumer(broker, clock)
    clustering.start(clock.now_ms())
    assert list(clustering.rebalance_impl.subscription_inner) == ["TopicTest", RETRY]
    broadcasting = make_consumer(broker, clock, client_id="c2", message_model=BROADCASTING)
    broadcasting.start(clock.now_ms())
    assert list(broadcasting.rebalance_impl.subscription_inner) == ["TopicTest"]


def test_queues_move_when_a_consumer_joins_and_the_old_owner_persists_and_forgets():
    clock = ManualClock()
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", 4)
    for q in range(4):
        broker.put("TopicTest", q)
    c1 = make_consumer(broker, clock, client_id="c1")
    c1.start(clock.now_ms())
    run_for(c1, clock, 100, succeed)
    owned = sorted(mq.queue_id for mq in c1.process_queue_table if mq.topic == "TopicTest")
    assert owned == [0, 1, 2, 3]
    assert c1.offset_store.offset_table[MessageQueue("TopicTest", "broker-a", 3)] == 1
    broker.consumers["GroupA"].add("c2")  # c2's heartbeat reached the broker
    dropped = {mq: pq for mq, pq in c1.process_queue_table.items() if mq.queue_id >= 2}
    c1.rebalance_immediately()
    run_for(c1, clock, 10, succeed)
    owned = sorted(mq.queue_id for mq in c1.process_queue_table if mq.topic == "TopicTest")
    assert owned == [0, 1]
    assert all(pq.dropped for pq in dropped.values())
    persisted = {(c[1], c[2]): c[3] for c in broker.calls_of("update_consumer_offset_oneway")}
    assert persisted[("TopicTest", 2)] == 1 and persisted[("TopicTest", 3)] == 1
    assert MessageQueue("TopicTest", "broker-a", 3) not in c1.offset_store.offset_table


def test_broadcasting_takes_every_queue_whoever_else_is_there():
    clock = ManualClock()
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", 3)
    broker.consumers["GroupA"] = {"a", "b", "c"}
    consumer = make_consumer(broker, clock, client_id="b", message_model=BROADCASTING)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10)
    assert sorted(mq.queue_id for mq in consumer.process_queue_table) == [0, 1, 2]


def test_a_stalled_queue_is_rebuilt_after_two_minutes_without_pulls():
    clock = ManualClock()
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", 1)
    rb = RebalancePushImpl(broker, clock, consumer_group="GroupA", client_id="c1",
                           create_process_queue=lambda: ProcessQueue(clock))
    rb.offset_store = RemoteBrokerOffsetStore(broker, "GroupA")
    broker.consumers["GroupA"] = {"c1"}
    rb.subscription_inner["TopicTest"] = build_subscription_data("TopicTest", "*")
    rb.do_rebalance()
    first = rb.process_queue_table[MQ]
    clock.advance(120_001)
    rb.do_rebalance()
    assert first.dropped and rb.process_queue_table[MQ] is not first
