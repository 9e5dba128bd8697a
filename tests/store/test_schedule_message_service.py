"""Delay levels through the real broker: routing, due times, property quirks, eras, failure paths."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.commit_log import SCHEDULE_TOPIC
from store.config import MessageStoreConfig
from store.faults import FAIL, SITE_SCHEDULE_DELIVER
from store.message import PROPERTY_DELAY_TIME_LEVEL, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC

from .broker_harness import SMALL_STORE, BrokerHarness

ERA_4 = SMALL_STORE.with_(era="4.9.8")


def delivered(h: BrokerHarness, topic="TopicTest", queue_id=0):
    return h.pull("G", topic, queue_id, 0).msg_found_list


@pytest.mark.parametrize("store_config", [SMALL_STORE, ERA_4], ids=["5.3.3", "4.9.8"])
def test_a_delayed_message_comes_back_at_its_due_time_and_not_before(store_config):
    h = BrokerHarness(store_config=store_config)
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.run_for(1000)
    sent_at = h.clock.now_ms()
    h.send(key="d1", **{PROPERTY_DELAY_TIME_LEVEL: "3"})  # 10 s
    h.run_for(1)  # one reput round
    stored = h.broker.message_store.get_message("G", SCHEDULE_TOPIC, 2, 0, 1).messages
    assert len(stored) == 1 and stored[0].properties[PROPERTY_REAL_TOPIC] == "TopicTest"
    h.run_for(9_998)
    assert delivered(h) == []
    h.run_for(200)
    (msg,) = delivered(h)
    assert sent_at + 10_000 <= msg.store_timestamp <= sent_at + 10_000 + 100 + 1
    # The stored property string still carries DELAY, REAL_TOPIC and REAL_QID (ROCKETMQ.md 1.2).
    assert msg.properties[PROPERTY_DELAY_TIME_LEVEL] == "3"
    assert msg.properties[PROPERTY_REAL_TOPIC] == "TopicTest" and msg.properties[PROPERTY_REAL_QUEUE_ID] == "0"
    assert msg.properties["UNIQ_KEY"] == "d1"


def test_level_above_the_maximum_is_clamped_to_18():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="x", **{PROPERTY_DELAY_TIME_LEVEL: "40"})
    h.run_for(1)
    stored = h.broker.message_store.get_message("G", SCHEDULE_TOPIC, 17, 0, 1).messages
    assert stored[0].properties[PROPERTY_DELAY_TIME_LEVEL] == "18"


def test_levels_and_other_strings():
    config = SMALL_STORE.with_(message_delay_level="2s 1m 1h 1d")
    h = BrokerHarness(store_config=config)
    assert h.broker.schedule_message_service.delay_level_table_ms == {1: 2000, 2: 60_000, 3: 3_600_000,
                                                                      4: 86_400_000}
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="x", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(1900)
    assert delivered(h) == []
    h.run_for(300)
    assert len(delivered(h)) == 1


def test_correct_deliver_timestamp_after_a_backwards_clock_step():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="x", **{PROPERTY_DELAY_TIME_LEVEL: "5"})  # 1 minute
    h.run_for(10_000)
    h.clock.step(-5 * 60_000)  # the wall clock steps back 5 minutes
    h.run_for(200)
    assert len(delivered(h)) == 1  # deliver time > now + 1 min: delivered at once


def test_without_correct_deliver_timestamp_the_message_waits_out_the_step():
    h = BrokerHarness(mutants={"no_correct_deliver_timestamp"})
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="x", **{PROPERTY_DELAY_TIME_LEVEL: "5"})
    h.run_for(10_000)
    h.clock.step(-5 * 60_000)
    h.run_for(60_000)
    assert delivered(h) == []


class FailN:
    """Fail the first ``n`` asks of one site."""

    def __init__(self, site, n):
        self.site, self.left = site, n

    def at(self, site, detail=""):
        if site == self.site and self.left > 0:
            self.left -= 1
            return FAIL
        return None


@pytest.mark.parametrize("store_config", [SMALL_STORE, ERA_4], ids=["5.3.3", "4.9.8"])
def test_failed_delivery_retries_the_same_message(store_config):
    h = BrokerHarness(store_config=store_config, faults=FailN(SITE_SCHEDULE_DELIVER, 3))
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(3000)
    assert [m.properties["UNIQ_KEY"] for m in delivered(h)] == ["a", "b"]
    assert h.broker.schedule_message_service.offset_table[1] == 2


def test_skip_failed_delivery_mutant_loses_the_message_in_5x():
    h = BrokerHarness(mutants={"skip_failed_delivery"}, faults=FailN(SITE_SCHEDULE_DELIVER, 1))
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(3000)
    assert [m.properties["UNIQ_KEY"] for m in delivered(h)] == ["b"]  # #9249


def test_delay_offsets_persist_in_fastjson_shape_every_10s_and_at_shutdown():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(5000)
    assert h.disk.read_file("config/delayOffset.json") is None
    h.run_for(6000)
    text = h.disk.read_file("config/delayOffset.json").decode()
    assert '"offsetTable":{1:1' in text and '"dataVersion"' in text
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(2000)
    h.broker.shutdown()
    assert '"offsetTable":{1:2' in h.disk.read_file("config/delayOffset.json").decode()


def test_4x_shape_has_no_data_version():
    h = BrokerHarness(store_config=ERA_4)
    h.broker.schedule_message_service.offset_table[3] = 57
    h.broker.schedule_message_service.persist()
    assert h.disk.read_file("config/delayOffset.json").decode() == '{\n\t"offsetTable":{3:57\n\t}\n}'


def test_correct_delay_offset_clamps_at_load_and_the_mutant_does_not():
    for mutants, expected in ((set(), 1), ({"no_correct_delay_offset"}, 50)):
        h = BrokerHarness(mutants=mutants)
        h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
        h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
        h.run_for(3000)
        h.broker.shutdown()
        h.disk.write_file("config/delayOffset.json", b'{"offsetTable":{1:50}}')
        again = BrokerHarness(disk=h.disk, clock=h.clock, mutants=mutants)
        assert again.broker.schedule_message_service.offset_table[1] == expected


def test_async_delivery_commits_offsets_in_queue_order_and_resends():
    config = SMALL_STORE.with_(enable_schedule_async_deliver=True)
    h = BrokerHarness(store_config=config, faults=FailN(SITE_SCHEDULE_DELIVER, 1))
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(1050)  # both put at 1000 ms; "a" failed and is resent 100 ms later
    svc = h.broker.schedule_message_service
    assert svc.offset_table.get(1, 0) == 0  # "b" is done but must wait behind "a"
    assert svc.put_result_tasks[1].pending[0].resend_count == 1
    h.run_for(500)
    assert sorted(m.properties["UNIQ_KEY"] for m in delivered(h)) == ["a", "b"]
    assert svc.offset_table[1] == 2


def test_invalid_level_string_is_a_clear_configuration_error():
    from store.delay_level import DelayLevelError

    with pytest.raises(DelayLevelError, match="level 2 is '5x'"):
        BrokerHarness(store_config=MessageStoreConfig(message_delay_level="1s 5x"))


@pytest.mark.parametrize("store_config,expected", [(SMALL_STORE, ["b"]), (ERA_4, ["a", "b"])],
                         ids=["5.3.3-skips", "4.9.8-retries"])
def test_exception_while_rebuilding_skips_in_5x_and_retries_in_4x(store_config, expected):
    from store.faults import SITE_SCHEDULE_REBUILD

    h = BrokerHarness(store_config=store_config, faults=FailN(SITE_SCHEDULE_REBUILD, 1))
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(3000)
    assert [m.properties["UNIQ_KEY"] for m in delivered(h)] == expected


def test_an_unreadable_message_is_skipped_silently():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(1)
    cq = h.broker.message_store.get_consume_queue(SCHEDULE_TOPIC, 0)
    phy_a, _size, _tags = cq.get_unit(0)
    mf = h.broker.message_store.commit_log.mfq.find_mapped_file_by_offset(phy_a)
    mf.handle.write(phy_a % mf.file_size + 4, b"\0\0\0\0")  # "a" can no longer be read (bad magic)
    h.run_for(3000)
    assert [m.properties["UNIQ_KEY"] for m in delivered(h)] == ["b"]
    assert h.broker.schedule_message_service.offset_table[1] == 2


def test_a_running_level_resets_an_offset_past_the_queue_end_to_the_max():
    h = BrokerHarness()
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(1)
    h.broker.schedule_message_service.tasks[1].offset = 40  # past the end, as after a truncation
    h.run_for(1100)
    assert h.broker.schedule_message_service.tasks[1].offset == 1
    assert any("reset to 1" in line for line in h.logs)
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(2000)
    assert [m.properties["UNIQ_KEY"] for m in delivered(h)] == ["b"]  # "a" (offset 0) was passed over


def test_async_flow_control_refuses_past_the_pending_limit():
    config = SMALL_STORE.with_(enable_schedule_async_deliver=True, schedule_async_deliver_max_pending_limit=1)
    h = BrokerHarness(store_config=config, faults=FailN(SITE_SCHEDULE_DELIVER, 100))
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    for key in "abc":
        h.send(key=key, **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(1050)
    pending = h.broker.schedule_message_service.put_result_tasks[1].pending
    assert len(pending) == 2  # the third put is refused (flow control) and retried later at the same offset
    assert any("flow control" in line for line in h.logs)


@settings(max_examples=60, deadline=None)
@given(tables=st.lists(st.dictionaries(st.integers(1, 18), st.integers(0, 10**12), max_size=18), min_size=1, max_size=4),
       versions=st.lists(st.tuples(st.integers(0, 10**9), st.integers(-(1 << 63), (1 << 63) - 1),
                                   st.integers(0, 1 << 62)), min_size=1, max_size=4),
       pretty=st.booleans())
def test_delay_offset_json_written_from_its_template_is_what_fastjson_writes(tables, versions, pretty):
    """5.x fills the dataVersion's numbers into the table's text written once: byte for byte the generic writer's."""
    from store.fastjson import dumps

    svc = BrokerHarness().broker.schedule_message_service
    for table in tables:
        for counter, state, timestamp in versions:
            svc.offset_table.clear()
            svc.offset_table.update(table)
            dv = svc.data_version
            dv.counter, dv.state_version, dv.timestamp_ms = counter, state, timestamp
            generic = dumps({"dataVersion": dv.to_json("5.x"),
                             "offsetTable": {level: table[level] for level in sorted(table)}}, pretty=pretty)
            assert svc.encode(pretty) == generic


def test_delay_offset_json_with_an_offset_like_a_template_mark_is_written_by_the_generic_writer():
    """A table read from a damaged file may hold any number, one of the marks too: the template is refused and the
    generic writer writes the file."""
    from store.fastjson import dumps
    from store.schedule_message_service import _DV_MARKS, _dv_template

    svc = BrokerHarness().broker.schedule_message_service
    svc.offset_table.clear()
    svc.offset_table.update({1: 5, 2: _DV_MARKS[0]})
    assert _dv_template(dict(svc.offset_table), True) is None
    dv = svc.data_version
    generic = dumps({"dataVersion": dv.to_json("5.x"), "offsetTable": {1: 5, 2: _DV_MARKS[0]}}, pretty=True)
    assert svc.encode(True) == generic
