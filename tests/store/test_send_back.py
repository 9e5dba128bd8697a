"""The broker side of retries: consumerSendMsgBack, the retry ladder, the DLQ, the producer fallback."""

from __future__ import annotations

import dataclasses

import pytest

from store.client.api import MQBrokerException, ResponseCode
from store.commit_log import SCHEDULE_TOPIC
from store.log import DISK_DAMAGE
from store.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    MessageExt,
)
from store.topic_config import PERM_READ, PERM_WRITE

from .broker_harness import SMALL_STORE, BrokerHarness

RETRY, DLQ = "%RETRY%G", "%DLQ%G"


def fresh(h: BrokerHarness, topic: str, seen: dict):
    """Messages of ``topic`` queue 0 not seen before (a minimal consumer)."""
    offset = seen.get(topic, 0)
    result = h.pull("G", topic, 0, offset) if h.broker.topic_config_manager.select_topic_config(topic) else None
    if result is None or not result.msg_found_list:
        return []
    seen[topic] = result.next_begin_offset
    return result.msg_found_list


def run_ladder(h: BrokerHarness, max_reconsume_times: int = 16):
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 1)
    h.broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])
    h.send(queue_id=0, key="m")
    h.run_for(1)
    seen: dict = {}
    attempts = []  # (mono_ms, reconsume_times, topic)
    while h.mono_ms < 6 * 3600_000:
        for topic in ("TopicTest", RETRY):
            for msg in fresh(h, topic, seen):
                attempts.append((h.mono_ms, msg.reconsume_times, msg.topic))
                h.broker.consumer_send_msg_back("G", msg, 0, max_reconsume_times)
        dead = fresh(h, DLQ, seen)
        if dead:
            return attempts, dead, h.mono_ms
        h.run_for(100)
    raise AssertionError("no dead letter after 6 h")


@pytest.mark.slow  # ~2 min: 6 virtual hours polled every 100 ms; the sim's retry-ladder-to-dlq covers it fast
def test_the_retry_ladder_with_defaults_ends_in_the_dlq_after_17_140_s():
    h = BrokerHarness()
    attempts, dead, dead_at = run_ladder(h)
    assert [r for _, r, _ in attempts] == list(range(17))  # attempts 1..17 with reconsumeTimes 0..16
    assert [t for _, _, t in attempts] == ["TopicTest"] + [RETRY] * 16
    waits = [b - a for (a, _, _), (b, _, _) in zip(attempts, attempts[1:], strict=False)]
    levels_ms = h.broker.schedule_message_service.delay_level_table_ms
    for k, wait in enumerate(waits):
        level = min(3 + k, 18)
        assert levels_ms[level] <= wait <= levels_ms[level] + 300, (k, wait)
    (dlq,) = dead
    assert dlq.queue_id == 0 and dlq.reconsume_times == 17
    assert dlq.properties[PROPERTY_DELAY_TIME_LEVEL] == "0"
    assert dlq.properties[PROPERTY_RETRY_TOPIC] == "TopicTest"
    assert dlq.properties["UNIQ_KEY"] == "m"
    total = dead_at - attempts[0][0]
    assert 17_140_000 <= total <= 17_140_000 + 17 * 300
    tc = h.broker.topic_config_manager.select_topic_config(DLQ)
    assert tc.perm == PERM_READ | PERM_WRITE and tc.read_queue_nums == 1


def test_origin_message_id_is_constant_across_retries():
    h = BrokerHarness()
    attempts, dead, _ = run_ladder(h, max_reconsume_times=2)
    assert len(attempts) == 3
    retries = [m for m in h.broker.message_store.get_message("G", RETRY, 0, 0, 32).messages]
    origins = {m.properties[PROPERTY_ORIGIN_MESSAGE_ID] for m in retries} | {
        dead[0].properties[PROPERTY_ORIGIN_MESSAGE_ID]}
    assert len(origins) == 1


def test_dlq_threshold_mutant_allows_one_retry_too_many():
    h = BrokerHarness(mutants={"dlq_threshold_gt"})
    attempts, dead, _ = run_ladder(h, max_reconsume_times=2)
    assert len(attempts) == 4 and dead[0].reconsume_times == 4


def test_retry_level_mutant_uses_level_2_plus_r():
    h = BrokerHarness(mutants={"retry_level_2_plus_r"})
    attempts, _, _ = run_ladder(h, max_reconsume_times=2)
    assert 5000 <= attempts[1][0] - attempts[0][0] < 10_000


def test_dlq_keeps_delay_mutant_detours_through_the_schedule_topic():
    h = BrokerHarness(mutants={"dlq_keeps_delay"})
    attempts, dead, dead_at = run_ladder(h, max_reconsume_times=2)
    # The consumed copy came back through level 4 (30 s) and its stored properties still say DELAY=4,
    # so the dead letter waits those 30 s again before landing (#2724).
    assert dead_at - attempts[-1][0] >= 30_000
    clean = BrokerHarness()
    c_attempts, _, c_dead_at = run_ladder(clean, max_reconsume_times=2)
    assert c_dead_at - c_attempts[-1][0] < 1000


def test_retry_queue_nums_zero_answers_success_without_storing():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 1)
    sgc = h.broker.subscription_group_manager.find_subscription_group_config("G")
    sgc.retry_queue_nums = 0
    h.send(key="m")
    h.run_for(1)
    (msg,) = h.pull("G", "TopicTest", 0, 0).msg_found_list
    before = h.broker.message_store.commit_log.get_max_offset()
    h.broker.consumer_send_msg_back("G", msg, 0, 16)
    assert h.broker.message_store.commit_log.get_max_offset() == before


def test_send_back_errors():
    h = BrokerHarness(broker_config=None)
    h.broker.subscription_group_manager.auto_create_subscription_group = False
    with pytest.raises(MQBrokerException) as error:
        h.broker.consumer_send_msg_back("NoSuchGroup", MessageExt(topic="t"), 0, 16)
    assert error.value.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    h.broker.subscription_group_manager.auto_create_subscription_group = True
    with pytest.raises(MQBrokerException) as error:
        h.broker.consumer_send_msg_back("G", MessageExt(topic="t", commit_log_offset=10**9), 0, 16)
    assert error.value.code == ResponseCode.SYSTEM_ERROR and "look message by offset failed" in error.value.remark
    # a copy the consumer pulled is gone: only lost data explains it (explore seed 399: the history names the
    # power failure, sim/history_recorder.py)
    assert error.value.fault_site == DISK_DAMAGE
    h.broker.broker_permission = PERM_READ
    with pytest.raises(MQBrokerException) as error:
        h.broker.consumer_send_msg_back("G", MessageExt(topic="t"), 0, 16)
    assert error.value.code == ResponseCode.NO_PERMISSION


def _fallback_copy(h: BrokerHarness, key: str, reconsume_time: int, delay: int) -> None:
    """What the client's producer fallback sends: the consumed message's properties plus the retry fields."""
    msg = MessageExt(topic=RETRY, queue_id=0, body=b"x", properties={
        "UNIQ_KEY": key, "RETRY_TOPIC": "TopicTest", "RECONSUME_TIME": str(reconsume_time),
        "MAX_RECONSUME_TIMES": "16", PROPERTY_DELAY_TIME_LEVEL: str(delay)})
    h.broker.send_message(msg, "CID_RMQ_SYS")
    h.run_for(1)


def test_producer_fallback_to_the_retry_topic():
    h = BrokerHarness()
    h.broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])
    _fallback_copy(h, "m", 3, 6)
    (scheduled,) = h.broker.message_store.get_message("G", SCHEDULE_TOPIC, 5, 0, 8).messages
    assert scheduled.properties["REAL_TOPIC"] == RETRY and scheduled.reconsume_times == 3


def test_producer_fallback_dead_letters_above_max_at_once_in_5x():
    # RIP-32 (5.3.3 handleRetryAndDLQ): '>' and DELAY=-1, so RECONSUME_TIME 16 of 16 is still a retry (level
    # 18) and RECONSUME_TIME 17 lands in the DLQ at once: max + 1 failed attempts, like consumerSendMsgBack.
    h = BrokerHarness()
    h.broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])
    _fallback_copy(h, "n", 16, 18)
    (scheduled,) = h.broker.message_store.get_message("G", SCHEDULE_TOPIC, 17, 0, 8).messages
    assert scheduled.properties["REAL_TOPIC"] == RETRY
    assert h.broker.topic_config_manager.select_topic_config(DLQ) is None
    _fallback_copy(h, "o", 17, 19)
    (dlq,) = h.pull("G", DLQ, 0, 0).msg_found_list
    assert dlq.properties["UNIQ_KEY"] == "o" and dlq.properties[PROPERTY_DELAY_TIME_LEVEL] == "-1"
    assert dlq.reconsume_times == 17


def test_fallback_dlq_ge_mutant_dead_letters_one_attempt_early_in_5x():
    h = BrokerHarness(mutants={"fallback_dlq_ge"})
    h.broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])
    _fallback_copy(h, "n", 16, 18)
    (dlq,) = h.pull("G", DLQ, 0, 0).msg_found_list
    assert dlq.properties["UNIQ_KEY"] == "n" and dlq.reconsume_times == 16


def test_producer_fallback_at_max_stores_the_dlq_copy_in_the_schedule_topic_in_4x():
    """The fast half of the test below (default tier): the copy waits in SCHEDULE_TOPIC_XXXX for the DLQ."""
    h = BrokerHarness(store_config=dataclasses.replace(SMALL_STORE, era="4.9.8"))
    h.broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])
    _fallback_copy(h, "n", 16, 18)
    (scheduled,) = h.broker.message_store.get_message("G", SCHEDULE_TOPIC, 17, 0, 8).messages
    assert scheduled.properties["REAL_TOPIC"] == DLQ and scheduled.reconsume_times == 16
    assert not h.pull("G", DLQ, 0, 0).msg_found_list


@pytest.mark.slow  # 2 virtual hours polled: the half above stays in the default tier
def test_producer_fallback_dead_letters_at_max_through_the_schedule_topic_in_4x():
    # 4.9.8: '>=', but sendMessage restores the request's properties after handleRetryAndDLQ, so the DLQ copy
    # keeps the client's DELAY (3 + 15 = 18) and waits 2 h in SCHEDULE_TOPIC_XXXX with REAL_TOPIC = the DLQ.
    h = BrokerHarness(store_config=dataclasses.replace(SMALL_STORE, era="4.9.8"))
    h.broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])
    _fallback_copy(h, "n", 16, 18)
    (scheduled,) = h.broker.message_store.get_message("G", SCHEDULE_TOPIC, 17, 0, 8).messages
    assert scheduled.properties["REAL_TOPIC"] == DLQ and scheduled.reconsume_times == 16
    assert not h.pull("G", DLQ, 0, 0).msg_found_list
    h.run_for(2 * 3600_000 - 1000)
    assert not h.pull("G", DLQ, 0, 0).msg_found_list
    h.run_for(2000)
    (dlq,) = h.pull("G", DLQ, 0, 0).msg_found_list
    assert dlq.properties["UNIQ_KEY"] == "n" and dlq.reconsume_times == 16


def test_retry_topic_created_by_heartbeat_with_retry_queue_nums():
    h = BrokerHarness()
    h.broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])
    tc = h.broker.topic_config_manager.select_topic_config(RETRY)
    assert tc.perm == PERM_READ | PERM_WRITE and tc.write_queue_nums == 1
    assert h.broker.get_consumer_id_list_by_group("G") == ["c1"]
