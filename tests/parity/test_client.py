"""Parity with RocketMQ's client tests (client/src/test/java/org/apache/rocketmq/client) at rocketmq-all-4.9.8 and
rocketmq-all-5.3.3: LocalFileOffsetStoreTest, RemoteBrokerOffsetStoreTest, ProcessQueueTest,
AllocateMessageQueueAveragelyTest and ConsumeMessageConcurrentlyServiceTest."""

from __future__ import annotations

import inspect
import random

import pytest

from store.client.allocate_message_queue import AllocateMessageQueueAveragely
from store.client.api import MessageQueue, MQBrokerException, RemotingError, ResponseCode
from store.client.offset_store import (
    READ_FROM_MEMORY,
    READ_FROM_STORE,
    LocalFileOffsetStore,
    RemoteBrokerOffsetStore,
)
from store.client.process_queue import ProcessQueue
from store.client.push_consumer import DefaultMQPushConsumer
from store.clock import ManualClock
from store.disk import MemoryDisk
from store.message import PROPERTY_CONSUME_START_TIMESTAMP, MessageExt

from ..store.broker_harness import BrokerHarness
from ..store.client.fake_broker import FakeBroker

GROUP = "FooBarGroup"
TOPIC = "FooBar"
BROKER = "DefaultBrokerName"
T0 = 1_700_000_000_000


def mq(queue_id: int) -> MessageQueue:
    return MessageQueue(TOPIC, BROKER, queue_id)


def local_store(disk=None) -> LocalFileOffsetStore:
    return LocalFileOffsetStore(disk if disk is not None else MemoryDisk(), ".rocketmq_offsets",
                                "127.0.0.1@TestNamespace", GROUP)


def remote_store(api, era: str = "5.3.3") -> RemoteBrokerOffsetStore:
    """The store of the given era, if the class takes one (#13 item 15 makes readOffset era-dependent)."""
    params = inspect.signature(RemoteBrokerOffsetStore).parameters
    kwargs = {"era": era} if "era" in params else {"era4": era.startswith("4.")} if "era4" in params else {}
    return RemoteBrokerOffsetStore(api, GROUP, **kwargs)


# --- LocalFileOffsetStoreTest ------------------------------------------------------------------------------
def test_local_update_offset():
    """Mirrors LocalFileOffsetStoreTest.testUpdateOffset (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = local_store()
    store.update_offset(mq(1), 1024, False)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1024
    store.update_offset(mq(1), 1023, False)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1023
    store.update_offset(mq(1), 1022, True)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1023


def test_local_read_offset_from_store():
    """Mirrors LocalFileOffsetStoreTest.testReadOffset_FromStore (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = local_store()
    store.update_offset(mq(2), 1024, False)
    assert store.read_offset(mq(2), READ_FROM_STORE) == -1
    store.persist_all({mq(2)})
    assert store.read_offset(mq(2), READ_FROM_STORE) == 1024


def test_local_clone_offset():
    """Mirrors LocalFileOffsetStoreTest.testCloneOffset (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = local_store()
    store.update_offset(mq(3), 1024, False)
    assert store.clone_offset_table(TOPIC) == {mq(3): 1024}


def test_local_persist():
    """Mirrors LocalFileOffsetStoreTest.testPersist (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = local_store()
    store.update_offset(mq(0), 1024, False)
    store.persist(mq(0))
    assert store.read_offset(mq(0), READ_FROM_STORE) == 1024
    assert store.read_offset(mq(1), READ_FROM_STORE) == -1


def test_local_persist_all():
    """Mirrors LocalFileOffsetStoreTest.testPersistAll (rocketmq-all-4.9.8, rocketmq-all-5.3.3): a later
    persistAll of other queues keeps the entries already in the file."""
    disk = MemoryDisk()
    store = local_store(disk)
    store.update_offset(mq(0), 1024, False)
    store.persist_all({mq(0)})
    assert store.read_offset(mq(0), READ_FROM_STORE) == 1024
    store.update_offset(mq(1), 1025, False)
    store.update_offset(mq(2), 1026, False)
    store.persist_all({mq(1), mq(2)})
    reader = local_store(disk)  # reads the file only
    assert [reader.read_offset(mq(i), READ_FROM_STORE) for i in range(3)] == [1024, 1025, 1026]


def test_local_remove_offset():
    """Mirrors LocalFileOffsetStoreTest.testRemoveOffset (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = local_store()
    store.update_offset(mq(0), 1024, False)
    assert store.read_offset(mq(0), READ_FROM_MEMORY) == 1024
    store.remove_offset(mq(0))
    assert store.read_offset(mq(0), READ_FROM_MEMORY) == -1


# --- RemoteBrokerOffsetStoreTest ---------------------------------------------------------------------------
def test_remote_update_offset():
    """Mirrors RemoteBrokerOffsetStoreTest.testUpdateOffset (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = remote_store(FakeBroker(ManualClock()))
    store.update_offset(mq(1), 1024, False)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1024
    store.update_offset(mq(1), 1023, False)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1023
    store.update_offset(mq(1), 1022, True)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1023


def test_remote_update_and_freeze_offset():
    """Mirrors RemoteBrokerOffsetStoreTest.testUpdateAndFreezeOffset (rocketmq-all-5.3.3)."""
    store = remote_store(FakeBroker(ManualClock()))
    store.update_and_freeze_offset(mq(1), 1024)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1024
    store.update_offset(mq(1), 1023, False)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1024
    store.update_offset(mq(1), 1022, True)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1024


def test_remote_update_and_freeze_offset_with_remove():
    """Mirrors RemoteBrokerOffsetStoreTest.testUpdateAndFreezeOffsetWithRemove (rocketmq-all-5.3.3)."""
    store = remote_store(FakeBroker(ManualClock()))
    store.update_and_freeze_offset(mq(1), 1024)
    store.update_offset(mq(1), 1023, False)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1024
    store.remove_offset(mq(1))
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == -1
    store.update_offset(mq(1), 1023, False)
    assert store.read_offset(mq(1), READ_FROM_MEMORY) == 1023


def test_remote_read_offset_with_exception_4_9_8():
    """Mirrors RemoteBrokerOffsetStoreTest.testReadOffset_WithException (rocketmq-all-4.9.8): a broker error
    answers -1, a remoting failure -2."""
    broker = FakeBroker(ManualClock())
    store = remote_store(broker, "4.9.8")
    store.update_offset(mq(2), 1024, False)
    broker.failures["query_consumer_offset"] = MQBrokerException(-1, "")
    assert store.read_offset(mq(2), READ_FROM_STORE) == -1
    broker.failures["query_consumer_offset"] = RemotingError("")
    assert store.read_offset(mq(2), READ_FROM_STORE) == -2


def test_remote_read_offset_with_exception_5_3_3():
    """Mirrors RemoteBrokerOffsetStoreTest.testReadOffset_WithException (rocketmq-all-5.3.3): QUERY_NOT_FOUND
    answers -1, any other broker error -2, a remoting failure -2."""
    broker = FakeBroker(ManualClock())
    store = remote_store(broker, "5.3.3")
    store.update_offset(mq(2), 1024, False)
    broker.failures["query_consumer_offset"] = MQBrokerException(ResponseCode.QUERY_NOT_FOUND, "")
    assert store.read_offset(mq(2), READ_FROM_STORE) == -1
    broker.failures["query_consumer_offset"] = RemotingError("")
    assert store.read_offset(mq(2), READ_FROM_STORE) == -2
    broker.failures["query_consumer_offset"] = MQBrokerException(-1, "")
    assert store.read_offset(mq(2), READ_FROM_STORE) == -2


def test_remote_read_offset_success():
    """Mirrors RemoteBrokerOffsetStoreTest.testReadOffset_Success (rocketmq-all-4.9.8, rocketmq-all-5.3.3),
    against the real broker's offset manager instead of a mocked API (which, at 5.3.3, commits only for a group
    and a topic it has)."""
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 4)
    h.broker.heart_beat("127.0.0.1@c1", GROUP, "CLUSTERING", [TOPIC])
    store = remote_store(h.broker)
    queue = MessageQueue(TOPIC, h.broker.broker_name, 3)
    store.update_offset(queue, 1024, False)
    store.persist(queue)
    assert store.read_offset(queue, READ_FROM_STORE) == 1024
    store.update_offset(queue, 1023, False)
    store.persist(queue)
    assert store.read_offset(queue, READ_FROM_STORE) == 1023
    store.update_offset(queue, 1022, True)
    store.persist(queue)
    assert store.read_offset(queue, READ_FROM_STORE) == 1023
    store.update_offset(queue, 1025, False)
    store.persist_all({queue})
    assert store.read_offset(queue, READ_FROM_STORE) == 1025
    assert h.broker.consumer_offset_manager.query_offset(GROUP, TOPIC, 3) == 1025


def test_remote_remove_offset():
    """Mirrors RemoteBrokerOffsetStoreTest.testRemoveOffset (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = remote_store(FakeBroker(ManualClock()))
    store.update_offset(mq(4), 1024, False)
    assert store.read_offset(mq(4), READ_FROM_MEMORY) == 1024
    store.remove_offset(mq(4))
    assert store.read_offset(mq(4), READ_FROM_MEMORY) == -1


# --- ProcessQueueTest --------------------------------------------------------------------------------------
def message_list(count: int = 100, start_ms: int = T0) -> list[MessageExt]:
    return [MessageExt(topic=TOPIC, body=bytes(123), properties={"KEYS": f"keys{i}",
                                                                 PROPERTY_CONSUME_START_TIMESTAMP: str(start_ms)})
            for i in range(count)]


def _with_offsets(msgs: list[MessageExt]) -> list[MessageExt]:
    for i, msg in enumerate(msgs):
        msg.queue_offset = i
    return msgs


@pytest.mark.parametrize("what", ["count", "size"], ids=["testCachedMessageCount", "testCachedMessageSize"])
def test_cached_message_count_and_size(what):
    """Mirrors ProcessQueueTest.testCachedMessageCount and testCachedMessageSize (rocketmq-all-4.9.8, 5.3.3):
    100 messages of 123 bytes cached, 10 consumed, then the last one removed. (Java consumes the 10 with the
    orderly takeMessages/commit; orderly consumption is out of scope, so they are removed as a concurrent
    consumer does.)"""
    pq = ProcessQueue(ManualClock(T0))
    msgs = _with_offsets(message_list())
    pq.put_message(msgs)
    unit = 1 if what == "count" else 123
    measure = (lambda: pq.msg_count) if what == "count" else (lambda: pq.msg_size)
    assert measure() == 100 * unit
    pq.remove_message(msgs[:10])
    assert measure() == 90 * unit
    pq.remove_message([pq.msg_tree_map[pq.last_key()]])
    assert measure() == 89 * unit


def test_contains_message():
    """Mirrors ProcessQueueTest.testContainsMessage (rocketmq-all-5.3.3)."""
    pq = ProcessQueue(ManualClock(T0))
    message0, message1 = _with_offsets(message_list(2))
    pq.put_message([message0])
    assert pq.contains_message(message0)
    assert not pq.contains_message(message1)


def test_pop_request():
    """Mirrors ProcessQueueTest.testPopRequest (rocketmq-all-5.3.3): a cached message whose consumption started 20
    minutes ago is sent back by cleanExpiredMsg with delay level 3."""
    clock = ManualClock(T0)
    pq = ProcessQueue(clock)
    (msg,) = _with_offsets(message_list(1, start_ms=T0 - 20 * 60 * 1000))
    pq.put_message([msg])
    sent_back = []
    pq.clean_expire_msg(15, lambda m, level: sent_back.append((m, level)))
    assert sent_back == [(msg, 3)]
    assert len(pq) == 0


# --- AllocateMessageQueueAveragelyTest ---------------------------------------------------------------------
def test_allocate_message_queue_averagely():
    """Mirrors AllocateMessageQueueAveragelyTest.testAllocateMessageQueueAveragely (rocketmq-all-4.9.8, 5.3.3)."""
    cids = [f"CID_PREFIX{i}" for i in range(4)]
    queues = [MessageQueue("topic", "brokerName", i) for i in range(10)]
    strategy = AllocateMessageQueueAveragely()
    assert [len(strategy.allocate("", cid, queues, cids)) for cid in cids] == [3, 3, 2, 2]


# --- ConsumeMessageConcurrentlyServiceTest -----------------------------------------------------------------
def test_pull_message_consume_success():
    """Mirrors ConsumeMessageConcurrentlyServiceTest.testPullMessage_ConsumeSuccess (rocketmq-all-4.9.8, 5.3.3):
    a pulled message reaches the listener with its topic and body, and the consumption counts as OK (here: the
    offset moves past it). The real broker answers the pulls instead of a mocked API."""
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 1)
    h.send(topic=TOPIC, body=b"a", key="only")
    h.run_for(1)
    consumer = DefaultMQPushConsumer(h.broker, h.clock, consumer_group=GROUP, client_id="127.0.0.1@c1",
                                     consume_from_where="CONSUME_FROM_FIRST_OFFSET", rng=random.Random(1))
    consumer.subscribe(TOPIC, "*")
    consumer.start(h.mono_ms)
    seen = []

    def listener(msgs, context):
        seen.extend(msgs)
        return "CONSUME_SUCCESS"

    for _ in range(50):
        consumer.run_listener(listener)
        for service in consumer.services:
            at = service.next_wakeup_ms()
            if at is not None and at <= h.mono_ms:
                service.step(h.mono_ms)
        if seen:
            consumer.run_listener(listener)
            break
        h.run_for(10)
    assert len(seen) == 1
    assert (seen[0].topic, seen[0].body) == (TOPIC, b"a")
    queue = MessageQueue(TOPIC, h.broker.broker_name, 0)
    assert consumer.offset_store.read_offset(queue, READ_FROM_MEMORY) == 1
