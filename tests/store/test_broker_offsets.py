"""Consume offsets through the real broker: the young-queue rule, commits on pulls, consumerOffset.json."""

from __future__ import annotations

import pytest

from store.client.api import MQBrokerException, ResponseCode

from .broker_harness import SMALL_STORE, BrokerHarness


def test_query_offset_of_a_new_group_on_a_young_queue_is_zero():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 1)
    h.send(key="a")
    h.run_for(1)
    assert h.broker.query_consumer_offset("NewGroup", "TopicTest", 0) == 0


def test_query_offset_when_the_first_message_is_out_of_memory_is_not_found():
    h = BrokerHarness(store_config=SMALL_STORE.with_(total_physical_memory_bytes=100))
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 1)
    for i in range(3):
        h.send(key=f"m{i}", body=b"x" * 200)
    h.run_for(1)
    with pytest.raises(MQBrokerException) as error:
        h.broker.query_consumer_offset("NewGroup", "TopicTest", 0)
    assert error.value.code == ResponseCode.QUERY_NOT_FOUND


def test_pull_piggybacks_the_commit_and_the_broker_persists_every_5s_after_10s():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 1)
    h.send(key="a")
    h.run_for(1)
    h.pull("G", "TopicTest", 0, 1, commit_offset=1)
    assert h.broker.consumer_offset_manager.query_offset("G", "TopicTest", 0) == 1
    h.run_for(9000)
    assert h.disk.read_file("config/consumerOffset.json") is None
    h.run_for(1500)
    text = h.disk.read_file("config/consumerOffset.json").decode()
    assert '"TopicTest@G":{0:1' in text and '"dataVersion"' in text


def test_commits_are_plain_puts_not_increase_only():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("T", "TBW102", 1)
    h.broker.heart_beat("c1", "G", "CLUSTERING", ["T"])  # 5.3.3 commits only for a group and topic it has
    h.broker.update_consumer_offset_oneway("G", "T", 0, 9)
    h.broker.update_consumer_offset_oneway("G", "T", 0, 4)
    assert h.broker.query_consumer_offset("G", "T", 0) == 4


def test_offsets_survive_a_graceful_restart_in_4x_shape():
    h = BrokerHarness(store_config=SMALL_STORE.with_(era="4.9.8"))
    h.broker.update_consumer_offset_oneway("G", "T", 3, 250)  # 4.9.8 commits for any group and topic
    h.broker.shutdown()
    text = h.disk.read_file("config/consumerOffset.json").decode()
    assert text == '{\n\t"offsetTable":{\n\t\t"T@G":{3:250\n\t\t}\n\t}\n}'
    again = BrokerHarness(disk=h.disk, clock=h.clock, store_config=SMALL_STORE.with_(era="4.9.8"))
    assert again.broker.query_consumer_offset("G", "T", 3) == 250
