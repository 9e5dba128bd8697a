"""DefaultMQProducer: ids, queue choice, retries, delay helpers."""

from __future__ import annotations

import random
import re

import pytest

from store.client.api import MQBrokerException, ResponseCode
from store.client.errors import MQClientException
from store.client.message_client_id import MessageClientIDSetter
from store.client.producer import (
    DefaultMQProducer,
    set_delay_time_level,
    set_delay_time_ms,
    set_delay_time_sec,
    set_deliver_time_ms,
)
from store.clock import ManualClock
from store.message import MessageExt

from .fake_broker import REMOTING_ERROR, FakeBroker


def make(seed: int = 1, **kw):
    clock = ManualClock(1_700_000_000_000)
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", 4)
    producer = DefaultMQProducer(broker, clock, producer_group="P", client_id="10.0.0.9@p1",
                                 rng=random.Random(seed), **kw)
    return clock, broker, producer


def test_uniq_ids_are_32_uppercase_hex_unique_and_reproducible():
    clock = ManualClock(1_700_000_000_000)
    a = MessageClientIDSetter("10.0.0.9@p1", random.Random(5))
    b = MessageClientIDSetter("10.0.0.9@p1", random.Random(5))
    ids_a = [a.create_uniq_id(clock.advance(1)) for _ in range(2000)]
    clock.set(1_700_000_000_000)
    ids_b = [b.create_uniq_id(clock.advance(1)) for _ in range(2000)]
    assert ids_a == ids_b
    assert len(set(ids_a)) == 2000
    assert all(re.fullmatch(r"[0-9A-F]{32}", i) for i in ids_a)
    other = MessageClientIDSetter("10.0.0.8@p2", random.Random(5))
    assert other.create_uniq_id(clock.now_ms())[:8] != ids_a[0][:8]  # the host part comes from the client id


def test_send_sets_uniq_key_and_born_time_and_round_robins_queues():
    clock, broker, producer = make()
    queues = []
    for i in range(8):
        clock.advance(10)
        msg = MessageExt(topic="TopicTest", body=b"b%d" % i)
        result = producer.send(msg)
        assert result.send_status == "SEND_OK"
        assert msg.uniq_key and result.msg_id == msg.uniq_key
        assert msg.born_timestamp == clock.now_ms()
        queues.append(result.message_queue.queue_id)
    assert [(q - queues[0]) % 4 for q in queues] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_an_existing_uniq_key_is_kept():
    _, broker, producer = make()
    msg = MessageExt(topic="TopicTest", body=b"b", properties={"UNIQ_KEY": "ORIGINAL"})
    producer.send(msg)
    assert broker.calls_of("send_message")[0][0].uniq_key == "ORIGINAL"


def test_explicit_queue_is_used_once_without_retry():
    _, broker, producer = make()
    result = producer.send(MessageExt(topic="TopicTest", body=b"b"), queue_id=2)
    assert result.message_queue.queue_id == 2
    broker.failures["send_message"] = REMOTING_ERROR
    with pytest.raises(type(REMOTING_ERROR)):
        producer.send(MessageExt(topic="TopicTest", body=b"b"), queue_id=2)
    assert len(broker.calls_of("send_message")) == 2


def test_a_failed_attempt_is_retried_on_the_next_queue_then_gives_up():
    _, broker, producer = make()
    broker.failures["send_message"] = REMOTING_ERROR
    with pytest.raises(MQClientException):
        producer.send(MessageExt(topic="TopicTest", body=b"b"))
    tried = [c[0].queue_id for c in broker.calls_of("send_message")]
    assert len(tried) == 3 and [(q - tried[0]) % 4 for q in tried] == [0, 1, 2]


def test_a_retry_topic_send_moves_the_reconsume_fields_out_of_the_message():
    # sendKernelImpl (4.9.8 and 5.3.3): RECONSUME_TIME and MAX_RECONSUME_TIMES go into the request header and
    # are cleared from the message after its properties string was built, so a second attempt sends neither.
    _, broker, producer = make()
    broker.create_topic("%RETRY%G", 1)
    msg = MessageExt(topic="%RETRY%G", body=b"b", properties={"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "16"})
    broker.failures["send_message"] = REMOTING_ERROR
    with pytest.raises(MQClientException):
        producer.send(msg)
    first, second, _ = (c[0].properties for c in broker.calls_of("send_message"))
    assert first["RECONSUME_TIME"] == "3" and first["MAX_RECONSUME_TIMES"] == "16"
    assert "RECONSUME_TIME" not in second and "MAX_RECONSUME_TIMES" not in second
    assert "RECONSUME_TIME" not in msg.properties
    plain = MessageExt(topic="TopicTest", body=b"b", properties={"RECONSUME_TIME": "3"})
    del broker.failures["send_message"]
    producer.send(plain)
    assert plain.properties["RECONSUME_TIME"] == "3"  # only %RETRY% topics


def test_a_non_retryable_broker_error_is_raised_at_once():
    _, broker, producer = make()
    broker.failures["send_message"] = MQBrokerException(ResponseCode.MESSAGE_ILLEGAL, "too big")
    with pytest.raises(MQBrokerException):
        producer.send(MessageExt(topic="TopicTest", body=b"b"))
    assert len(broker.calls_of("send_message")) == 1


def test_an_unknown_topic_uses_the_default_four_queues():
    _, broker, producer = make()
    result = producer.send(MessageExt(topic="NewTopic", body=b"b"))
    assert 0 <= result.message_queue.queue_id < 4


def test_empty_body_is_refused():
    _, _, producer = make()
    with pytest.raises(MQClientException):
        producer.send(MessageExt(topic="TopicTest", body=b""))


def test_delay_helpers_set_the_properties():
    msg = MessageExt(topic="T", body=b"b")
    set_delay_time_level(msg, 3)
    set_delay_time_sec(msg, 90)
    set_delay_time_ms(msg, 1500)
    set_deliver_time_ms(msg, 1_700_000_123_000)
    assert msg.properties == {"DELAY": "3", "TIMER_DELAY_SEC": "90", "TIMER_DELAY_MS": "1500",
                              "TIMER_DELIVER_MS": "1700000123000"}
