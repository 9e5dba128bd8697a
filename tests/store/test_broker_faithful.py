"""Broker answers against the tags (issue 13: items 17, 18, 19): msgCheck, the built-in topics, the
QUERY_CONSUMER_OFFSET young-queue rule, and parseDelayLevel's Java parsing."""

from __future__ import annotations

import pytest

from store.client.api import MQBrokerException, ResponseCode
from store.delay_level import DelayLevelError, parse_delay_level
from store.message import MessageExt
from store.topic_config import PERM_READ, TopicConfig

from .broker_harness import SMALL_STORE, BrokerHarness

ERA_4 = SMALL_STORE.with_(era="4.9.8")


def _send(h: BrokerHarness, topic: str, queue_id: int = 0):
    msg = MessageExt(topic=topic, queue_id=queue_id, body=b"x", properties={"UNIQ_KEY": "k"})
    return h.broker.send_message(msg, "P")


# --- item 17: msgCheck ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("store_config", [SMALL_STORE, ERA_4], ids=["5.3.3", "4.9.8"])
def test_a_broker_that_is_not_writeable_refuses_only_order_topics(store_config):
    """AbstractSendMessageProcessor.msgCheck: ``!isWriteable(brokerPermission) && isOrderTopic(topic)``."""
    h = BrokerHarness(store_config=store_config)
    h.broker.topic_config_manager.update_topic_config(TopicConfig("Plain", 4, 4))
    h.broker.topic_config_manager.update_topic_config(TopicConfig("Ordered", 4, 4, order=True))
    h.broker.broker_permission = PERM_READ
    assert _send(h, "Plain").send_status == "SEND_OK"
    with pytest.raises(MQBrokerException) as error:
        _send(h, "Ordered")
    assert error.value.code == ResponseCode.NO_PERMISSION


@pytest.mark.parametrize("store_config,code", [(SMALL_STORE, ResponseCode.INVALID_PARAMETER),
                                               (ERA_4, ResponseCode.SYSTEM_ERROR)], ids=["5.3.3", "4.9.8"])
def test_an_illegal_queue_id_is_invalid_parameter_in_5x_and_system_error_in_4x(store_config, code):
    h = BrokerHarness(store_config=store_config)
    h.broker.topic_config_manager.update_topic_config(TopicConfig("Plain", 4, 4))
    with pytest.raises(MQBrokerException) as error:
        _send(h, "Plain", queue_id=4)
    assert error.value.code == code and "request queueId[4] is illegal" in error.value.remark


# --- item 18: built-in topics ----------------------------------------------------------------------------------
def test_5_3_3_adds_the_pop_sync_and_transaction_topics_to_the_4_9_8_set():
    """TopicConfigManager.init at 5.3.3: rmq_sys_REVIVE_LOG_<cluster> (reviveQueueNum = 8 queues),
    rmq_sys_SYNC_BROKER_MEMBER_<broker> (perm INHERIT only), RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
    and the timer topic; 4.9.8 has none of them."""
    added = {"rmq_sys_REVIVE_LOG_DefaultCluster", "rmq_sys_SYNC_BROKER_MEMBER_broker-a", "RMQ_SYS_TRANS_HALF_TOPIC",
             "RMQ_SYS_TRANS_OP_HALF_TOPIC", "rmq_sys_wheel_timer"}
    new = BrokerHarness().broker.topic_config_manager.topic_config_table
    old = BrokerHarness(store_config=ERA_4).broker.topic_config_manager.topic_config_table
    assert set(new) - set(old) == added and not added & set(old)
    revive, sync = new["rmq_sys_REVIVE_LOG_DefaultCluster"], new["rmq_sys_SYNC_BROKER_MEMBER_broker-a"]
    assert (revive.read_queue_nums, revive.write_queue_nums, revive.perm) == (8, 8, 6)
    assert (sync.read_queue_nums, sync.write_queue_nums, sync.perm) == (1, 1, 1)
    half, op = new["RMQ_SYS_TRANS_HALF_TOPIC"], new["RMQ_SYS_TRANS_OP_HALF_TOPIC"]
    assert (half.read_queue_nums, half.perm, op.write_queue_nums, op.perm) == (1, 6, 1, 6)


# --- item 19: QUERY_CONSUMER_OFFSET's young-queue rule ----------------------------------------------------------
@pytest.mark.parametrize("store_config,empty_queue_answer", [(SMALL_STORE, "QUERY_NOT_FOUND"), (ERA_4, 0)],
                         ids=["5.3.3", "4.9.8"])
def test_a_queue_without_unit_0_is_young_in_4x_and_not_found_in_5x(store_config, empty_queue_answer):
    """ConsumerManageProcessor.queryConsumerOffset without a stored offset: 4.9.8 answers 0 when minOffset <= 0
    and ``!checkInDiskByConsumeOffset(topic, q, 0)`` (true without unit 0); 5.3.3 asks
    ``checkInMemByConsumeOffset(topic, q, 0, 1)``, which is false without unit 0: QUERY_NOT_FOUND."""
    h = BrokerHarness(store_config=store_config)
    h.broker.topic_config_manager.update_topic_config(TopicConfig("Plain", 4, 4))
    try:
        answer = h.broker.query_consumer_offset("G", "Plain", 1)
    except MQBrokerException as error:
        assert error.code == ResponseCode.QUERY_NOT_FOUND
        answer = "QUERY_NOT_FOUND"
    assert answer == empty_queue_answer
    _send(h, "Plain", queue_id=1)
    h.run_for(1)
    assert h.broker.query_consumer_offset("G", "Plain", 1) == 0  # unit 0 exists and is in memory: young


# --- item 19: parseDelayLevel ----------------------------------------------------------------------------------
def test_delay_levels_parse_as_java_long_parse_long_and_string_split():
    """parseDelayLevel: ``levelString.split(" ")`` drops trailing empty tokens; ``Long.parseLong`` takes a sign."""
    assert parse_delay_level("1s 5s ") == {1: 1000, 2: 5000}
    assert parse_delay_level("+5s 2m") == {1: 5000, 2: 120_000}
    assert parse_delay_level("-1s") == {1: -1000}
    for bad in ("1s  5s", " 1s", "", "s", "5x", "1.5s", "1_0s", "5 s"):
        with pytest.raises(DelayLevelError):
            parse_delay_level(bad)
