"""Routing on put (ROCKETMQ.md 7.1): timer wheel, real topic, delay level, or a refusal."""

from __future__ import annotations

import pytest

from store.client.api import MQBrokerException, ResponseCode
from store.clock import ManualClock
from store.commit_log import SCHEDULE_TOPIC
from store.config import MessageStoreConfig
from store.hook_utils import ScheduleMessageHook, round_to_precision
from store.message import MessageExt, string_to_message_properties
from store.put_status import PutMessageStatus
from store.topic_config import TIMER_TOPIC

from ..broker_harness import BrokerHarness
from .helpers import TIMER_STORE, TOPIC, TimerHarness

NOW = 1_700_000_000_250
CONFIG = MessageStoreConfig(timer_max_delay_sec=10)


def route(props: dict, config=CONFIG, now=NOW, topic=TOPIC, queue_id=2, sys_flag=0, timer_store=None):
    msg = MessageExt(topic=topic, queue_id=queue_id, properties={"UNIQ_KEY": "k", **props}, sys_flag=sys_flag)
    hook = ScheduleMessageHook(18, store_config=config, clock=ManualClock(now), timer_message_store=timer_store)
    return hook(msg), msg


@pytest.mark.parametrize("target, expected", [
    (1_700_000_001_500, 1_700_000_001_000),  # floor: the slot before the target ...
    (1_700_000_002_000, 1_700_000_001_000),  # ... and a target on the grid goes one precision back (% p == 0)
    (1_700_000_002_001, 1_700_000_002_000),
])
def test_rounding_to_the_slot_before_the_target(target, expected):
    assert round_to_precision(target, 1000) == expected
    answer, msg = route({"TIMER_DELIVER_MS": str(target)})
    assert answer is None
    assert (msg.topic, msg.queue_id) == (TIMER_TOPIC, 0)
    assert msg.properties["TIMER_OUT_MS"] == str(expected)
    assert (msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"]) == (TOPIC, "2")
    stored = string_to_message_properties(msg.properties_string)  # the rebuilt string carries them
    assert (stored["TIMER_OUT_MS"], stored["REAL_TOPIC"], stored["REAL_QID"]) == (str(expected), TOPIC, "2")


def test_delay_sec_and_delay_ms_are_relative_to_now():
    _, msg = route({"TIMER_DELAY_SEC": "3"})  # NOW + 3000 = ...3250 -> ...3000
    assert msg.properties["TIMER_OUT_MS"] == str(1_700_000_003_000)
    _, msg = route({"TIMER_DELAY_MS": "2750"})  # NOW + 2750 = ...3000, on the grid -> ...2000
    assert msg.properties["TIMER_OUT_MS"] == str(1_700_000_002_000)
    _, msg = route({"TIMER_DELAY_SEC": "1", "TIMER_DELAY_MS": "9000", "TIMER_DELIVER_MS": "1"})  # SEC wins
    assert msg.properties["TIMER_OUT_MS"] == str(1_700_000_001_000)


def test_precision_100_ms():
    _, msg = route({"TIMER_DELAY_MS": "1234"}, config=CONFIG.with_(timer_precision_ms=100))
    assert msg.properties["TIMER_OUT_MS"] == str(1_700_000_001_400)  # NOW + 1234 = ...1484 -> ...1400


@pytest.mark.parametrize("props", [{"TIMER_DELIVER_MS": str(NOW)}, {"TIMER_DELIVER_MS": str(NOW - 1)},
                                   {"TIMER_DELAY_MS": "0"}, {"TIMER_DELAY_SEC": "-5"}])
def test_a_deliver_time_not_in_the_future_is_stored_directly_in_the_real_topic(props):
    answer, msg = route(props)
    assert answer is None
    assert (msg.topic, msg.queue_id) == (TOPIC, 2)
    assert "TIMER_OUT_MS" not in msg.properties and "REAL_TOPIC" not in msg.properties


def test_maximum_delay():
    answer, _ = route({"TIMER_DELAY_SEC": "10"})  # exactly timerMaxDelaySec: accepted
    assert answer is None
    answer, msg = route({"TIMER_DELAY_MS": "10001"})
    assert answer.status == PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    assert msg.topic == TOPIC  # nothing was changed


@pytest.mark.parametrize("text", ["abc", "1.5", " 5", "", "9223372036854775808", "+", "0x5"])
def test_unparsable_times_are_illegal(text):
    answer, _ = route({"TIMER_DELAY_MS": text})
    assert answer.status == PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL


def test_a_unicode_digit_parses_as_in_java():
    # Long.parseLong reads digits with Character.digit, which takes any Unicode Nd digit: "５" is 5.
    fullwidth, ascii_ = route({"TIMER_DELAY_MS": "\uff15"}), route({"TIMER_DELAY_MS": "5"})
    assert fullwidth[0] == ascii_[0]
    assert (fullwidth[1].topic, fullwidth[1].queue_id) == (ascii_[1].topic, ascii_[1].queue_id)


def test_delay_level_wins_and_the_timer_properties_are_removed():
    answer, msg = route({"DELAY": "3", "TIMER_DELAY_SEC": "5", "TIMER_DELIVER_MS": "1", "TIMER_DELAY_MS": "7"})
    assert answer is None
    assert (msg.topic, msg.queue_id) == (SCHEDULE_TOPIC, 2)
    for props in (msg.properties, string_to_message_properties(msg.properties_string)):
        assert not {"TIMER_DELAY_SEC", "TIMER_DELIVER_MS", "TIMER_DELAY_MS", "TIMER_OUT_MS"} & set(props)
        assert props["DELAY"] == "3"


def test_wheel_disabled_refuses_timer_messages_only():
    config = CONFIG.with_(timer_wheel_enable=False)
    answer, _ = route({"TIMER_DELAY_SEC": "5"}, config=config)
    assert answer.status == PutMessageStatus.WHEEL_TIMER_NOT_ENABLE
    answer, msg = route({"DELAY": "1"}, config=config)
    assert answer is None and msg.topic == SCHEDULE_TOPIC


def test_messages_that_are_not_new_timer_messages_pass_untouched():
    for props, topic in (({"TIMER_DELAY_SEC": "5", "TIMER_OUT_MS": "1"}, TOPIC),  # already converted
                         ({"TIMER_DELAY_SEC": "5"}, TIMER_TOPIC)):  # a rolled message re-put
        answer, msg = route(props, topic=topic, queue_id=0)
        assert answer is None and msg.topic == topic and "REAL_TOPIC" not in msg.properties
    answer, msg = route({"TIMER_DELAY_SEC": "5"}, sys_flag=0x4)  # a prepared transaction message
    assert answer is None and msg.topic == TOPIC


def test_a_delete_marker_must_be_in_the_future():
    answer, _ = route({"TIMER_DELIVER_MS": str(NOW - 10), "TIMER_DEL_UNIQKEY": "TopicTest+x"})
    assert answer.status == PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL


def test_flow_control_when_the_slot_is_congested():
    h = TimerHarness(store_config=TIMER_STORE.with_(timer_congest_num_each_slot=1))
    deliver = h.clock.now_ms() + 5500
    assert h.send_timer("a", TIMER_DELIVER_MS=str(deliver)) == "SEND_OK"
    assert h.send_timer("b", TIMER_DELIVER_MS=str(deliver)) == "SEND_OK"
    h.drive(500)  # enqueued: the slot now counts 2 >= 2 x the limit
    assert h.timer.timer_wheel.get_num(h.timer.format_time_ms(deliver)) == 2
    with pytest.raises(MQBrokerException) as refused:
        h.send_timer("c", TIMER_DELIVER_MS=str(deliver))
    assert refused.value.code == ResponseCode.SYSTEM_ERROR and "WHEEL_TIMER_FLOW_CONTROL" in str(refused.value)


def test_through_the_broker_illegal_is_message_illegal():
    h = TimerHarness()
    with pytest.raises(MQBrokerException) as refused:
        h.send_timer("x", delay_ms=4 * 24 * 3600 * 1000)  # more than the default 3 days
    assert refused.value.code == ResponseCode.MESSAGE_ILLEGAL


def test_4x_has_no_timer_wheel_and_ignores_timer_properties():
    h = BrokerHarness(store_config=TIMER_STORE.with_(era="4.9.8"))
    assert h.broker.timer_message_store is None
    h.broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 4)
    h.send(TOPIC, key="x", TIMER_DELAY_SEC="60")
    h.run_for(10)
    (msg,) = h.pull("G", TOPIC, 0, 0).msg_found_list  # stored at once in its own topic
    assert msg.properties["TIMER_DELAY_SEC"] == "60" and "TIMER_OUT_MS" not in msg.properties
