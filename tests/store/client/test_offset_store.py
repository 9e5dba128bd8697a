"""RemoteBrokerOffsetStore and LocalFileOffsetStore (ROCKETMQ.md 5.2)."""

from __future__ import annotations

import pytest

from store.client.api import BROADCASTING, MessageQueue, MQBrokerException, ResponseCode
from store.client.errors import MQClientException
from store.client.offset_store import (
    MEMORY_FIRST_THEN_STORE,
    READ_FROM_MEMORY,
    READ_FROM_STORE,
    LocalFileOffsetStore,
    RemoteBrokerOffsetStore,
)
from store.clock import ManualClock
from store.disk import MemoryDisk

from .driving import make_consumer, run_for, succeed
from .fake_broker import REMOTING_ERROR, FakeBroker

MQ0 = MessageQueue("TopicTest", "broker-a", 0)
MQ1 = MessageQueue("TopicTest", "broker-a", 1)


def remote():
    broker = FakeBroker(ManualClock())
    updates = []
    store = RemoteBrokerOffsetStore(broker, "GroupA", on_update=lambda mq, off: updates.append((mq.queue_id, off)))
    return broker, store, updates


def test_update_offset_increase_only_and_plain():
    _, store, updates = remote()
    store.update_offset(MQ0, 5, True)
    store.update_offset(MQ0, 3, True)
    assert store.read_offset(MQ0, READ_FROM_MEMORY) == 5
    store.update_offset(MQ0, 3, False)
    assert store.read_offset(MQ0, READ_FROM_MEMORY) == 3
    assert updates == [(0, 5), (0, 3)]  # events only when the value changes


def test_read_offset_answers():
    broker, store, updates = remote()
    assert store.read_offset(MQ0, READ_FROM_MEMORY) == -1
    assert store.read_offset(MQ0, READ_FROM_STORE) == -1  # QUERY_NOT_FOUND
    broker.offsets[("GroupA", "TopicTest", 0)] = 42
    assert store.read_offset(MQ0, MEMORY_FIRST_THEN_STORE) == 42
    assert store.read_offset(MQ0, READ_FROM_MEMORY) == 42  # the store's answer is kept in memory
    assert updates == []  # ... but it is not a commit of this consumer
    broker.failures["query_consumer_offset"] = REMOTING_ERROR
    assert store.read_offset(MQ1, READ_FROM_STORE) == -2
    broker.failures["query_consumer_offset"] = MQBrokerException(ResponseCode.SYSTEM_ERROR, "x")
    assert store.read_offset(MQ1, READ_FROM_STORE) == -2  # 5.3.3: only QUERY_NOT_FOUND means "no offset"


def test_read_offset_maps_every_broker_error_to_minus_1_in_4x():
    broker = FakeBroker(ManualClock())
    store = RemoteBrokerOffsetStore(broker, "GroupA", era="4.9.8")
    assert store.read_offset(MQ0, READ_FROM_STORE) == -1  # QUERY_NOT_FOUND
    broker.failures["query_consumer_offset"] = MQBrokerException(ResponseCode.SYSTEM_ERROR, "x")
    assert store.read_offset(MQ0, READ_FROM_STORE) == -1
    broker.failures["query_consumer_offset"] = REMOTING_ERROR
    assert store.read_offset(MQ0, READ_FROM_STORE) == -2


def test_a_frozen_offset_ignores_updates_until_it_is_removed():
    # 5.2.0+ OFFSET_ILLEGAL: updateAndFreezeOffset; in-flight increase-only updates cannot raise it again.
    _, store, updates = remote()
    store.update_offset(MQ0, 9, True)
    store.update_and_freeze_offset(MQ0, 2)
    store.update_offset(MQ0, 9, True)
    store.update_offset(MQ0, 5, False)
    assert store.read_offset(MQ0, READ_FROM_MEMORY) == 2
    store.remove_offset(MQ0)
    store.update_offset(MQ0, 4, True)
    assert store.read_offset(MQ0, READ_FROM_MEMORY) == 4
    assert updates == [(0, 9), (0, 2), (0, 4)]


def test_persist_all_sends_owned_offsets_one_way_and_forgets_the_rest():
    broker, store, _ = remote()
    store.update_offset(MQ0, 7, True)
    store.update_offset(MQ1, 9, True)
    store.persist_all([])
    assert broker.calls_of("update_consumer_offset_oneway") == [] and len(store.offset_table) == 2
    store.persist_all([MQ0])
    assert [c[:4] for c in broker.calls_of("update_consumer_offset_oneway")] == [("GroupA", "TopicTest", 0, 7)]
    assert MQ1 not in store.offset_table
    broker.failures["update_consumer_offset_oneway"] = REMOTING_ERROR
    store.persist_all([MQ0])  # one-way: a failure is only logged
    store.persist(MQ0)
    store.remove_offset(MQ0)
    assert store.offset_table == {}


def local(disk=None):
    disk = disk if disk is not None else MemoryDisk()
    return disk, LocalFileOffsetStore(disk, ".rocketmq_offsets", "10.0.0.1@c1", "GroupB")


def test_local_offsets_round_trip_through_offsets_json():
    disk, store = local()
    assert store.store_path == ".rocketmq_offsets/10.0.0.1@c1/GroupB/offsets.json"
    store.load()
    store.update_offset(MQ0, 11, True)
    store.update_offset(MQ1, 4, True)
    store.persist_all([MQ0, MQ1])
    assert disk.read_file(store.store_path)
    _, again = local(disk)
    again.load()
    assert again.offset_table == {MQ0: 11, MQ1: 4}
    assert again.read_offset(MQ0, READ_FROM_STORE) == 11


def test_local_persist_keeps_entries_of_queues_not_owned_now():
    disk, store = local()
    store.update_offset(MQ0, 11, True)
    store.update_offset(MQ1, 4, True)
    store.persist_all([MQ0, MQ1])
    _, second = local(disk)
    second.update_offset(MQ0, 20, True)
    second.persist_all([MQ0])
    _, third = local(disk)
    third.load()
    assert third.offset_table == {MQ0: 20, MQ1: 4}


def test_local_remove_offset_forgets_the_entry():
    # LocalFileOffsetStore.removeOffset removes the entry in 4.9.8 and 5.3.3 (#7740); the file keeps it.
    disk, store = local()
    store.update_offset(MQ0, 11, True)
    store.persist(MQ0)
    store.remove_offset(MQ0)
    assert store.read_offset(MQ0, READ_FROM_MEMORY) == -1 and store.offset_table == {}
    assert store.read_offset(MQ0, READ_FROM_STORE) == 11


def test_a_corrupt_main_file_falls_back_to_bak():
    disk, store = local()
    store.update_offset(MQ0, 1, True)
    store.persist_all([MQ0])
    store.update_offset(MQ0, 2, True)
    store.persist_all([MQ0])  # the .bak now holds 1
    disk.write_file(store.store_path, b"{garbage")
    _, again = local(disk)
    again.load()
    assert again.offset_table[MQ0] in (1, 2)
    assert disk.read_file(store.store_path + ".bak")


def test_a_corrupt_bak_makes_start_fail_with_a_clear_error():
    disk, store = local()
    disk.write_file(store.store_path, b"")
    disk.write_file(store.store_path + ".bak", b"{not json")
    _, again = local(disk)
    with pytest.raises(MQClientException, match=r"offsets\.json\.bak"):
        again.load()
    clock = ManualClock()
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", 2)
    consumer = make_consumer(broker, clock, group="GroupB", client_id="10.0.0.1@c1",
                             message_model=BROADCASTING, offset_store_disk=disk)
    with pytest.raises(MQClientException):
        consumer.start(clock.now_ms())
    assert consumer.services == []


def test_a_broadcasting_consumer_resumes_from_its_file():
    clock = ManualClock()
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", 1)
    for i in range(3):
        broker.put("TopicTest", 0, b"m%d" % i)
    disk = MemoryDisk()
    first = make_consumer(broker, clock, message_model=BROADCASTING, offset_store_disk=disk)
    first.start(clock.now_ms())
    run_for(first, clock, 100, succeed)
    first.shutdown()
    for i in range(3, 5):
        broker.put("TopicTest", 0, b"m%d" % i)
    seen = []
    second = make_consumer(broker, clock, message_model=BROADCASTING, offset_store_disk=disk)
    second.start(clock.now_ms())
    run_for(second, clock, 100, lambda msgs, ctx: seen.extend(m.queue_offset for m in msgs) or "CONSUME_SUCCESS")
    assert seen == [3, 4]
