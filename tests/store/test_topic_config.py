"""TopicConfigManager: built-ins, auto-creation from TBW102, retry/DLQ creation, versions, topics.json (6.2, 6.4)."""

from __future__ import annotations

import pytest

from store.clock import ManualClock
from store.disk import MemoryDisk
from store.fastjson import loads
from store.faults import CRASH, BrokerCrash
from store.topic_config import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_GROUP_TOPIC_PREFIX,
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_SCHEDULE_TOPIC,
    SCHEDULE_TOPIC_QUEUE_NUM,
    TIMER_TOPIC,
    TopicConfig,
    TopicConfigManager,
    get_dlq_topic,
    get_retry_topic,
    is_dlq_topic,
    is_inherited,
    is_readable,
    is_retry_topic,
    is_writeable,
    perm_to_string,
)

from .test_fastjson import TOPICS, TOPICS_DATA

PATH = "config/topics.json"
T0 = 1_700_000_000_000


def make(disk=None, clock=None, **kwargs):
    disk = disk if disk is not None else MemoryDisk()
    clock = clock if clock is not None else ManualClock(T0)
    return disk, clock, TopicConfigManager(disk, clock, **kwargs)


def test_perm_name_constants_and_helpers():
    assert (PERM_PRIORITY, PERM_READ, PERM_WRITE, PERM_INHERIT) == (8, 4, 2, 1)
    assert is_readable(6) and is_writeable(6) and not is_inherited(6)
    assert is_inherited(7) and not is_readable(PERM_WRITE) and not is_writeable(PERM_READ)
    assert perm_to_string(7) == "RWX" and perm_to_string(2) == "-W-"


def test_mix_all_names():
    assert get_retry_topic("G") == "%RETRY%G" and get_dlq_topic("G") == "%DLQ%G"
    assert RETRY_GROUP_TOPIC_PREFIX == "%RETRY%" and DLQ_GROUP_TOPIC_PREFIX == "%DLQ%"
    assert is_retry_topic("%RETRY%G") and not is_retry_topic("%DLQ%G")
    assert is_dlq_topic("%DLQ%G") and not is_dlq_topic("G")


def test_topic_config_defaults():
    tc = TopicConfig("T")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.topic_filter_type, tc.topic_sys_flag,
            tc.order, tc.attributes) == (16, 16, 6, "SINGLE_TAG", 0, False, {})


def test_built_in_topics_exist_but_are_not_persisted_until_the_first_change():
    disk, _, m = make()
    table = m.topic_config_table
    assert list(table) == ["SELF_TEST_TOPIC", "TBW102", "BenchmarkTest", "DefaultCluster", "broker-a",
                           "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX", "DefaultCluster_REPLY_TOPIC",
                           "rmq_sys_REVIVE_LOG_DefaultCluster", "rmq_sys_SYNC_BROKER_MEMBER_broker-a",
                           "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "rmq_sys_wheel_timer"]
    tbw = table[AUTO_CREATE_TOPIC_KEY_TOPIC]
    assert (tbw.read_queue_nums, tbw.write_queue_nums, tbw.perm) == (8, 8, 7)
    schedule = table[RMQ_SYS_SCHEDULE_TOPIC]
    assert schedule.read_queue_nums == schedule.write_queue_nums == SCHEDULE_TOPIC_QUEUE_NUM == 18
    timer = table[TIMER_TOPIC]
    assert (timer.read_queue_nums, timer.write_queue_nums, timer.perm) == (1, 1, 6)
    assert (table["SELF_TEST_TOPIC"].read_queue_nums, table["BenchmarkTest"].write_queue_nums) == (1, 1024)
    assert (table["DefaultCluster"].read_queue_nums, table["DefaultCluster"].perm) == (16, 7)
    assert (table["broker-a"].read_queue_nums, table["broker-a"].perm) == (1, 7)
    assert table["OFFSET_MOVED_EVENT"].write_queue_nums == 1
    assert m.data_version.counter == 0 and m.data_version.timestamp_ms == T0
    assert not disk.exists(PATH)


def test_built_ins_follow_the_options():
    _, _, m = make(auto_create_topic_enable=False, timer_wheel_enable=False, default_topic_queue_nums=4,
                   broker_cluster_name="C", broker_name="b", trace_topic_enable=True)
    assert AUTO_CREATE_TOPIC_KEY_TOPIC not in m.topic_config_table
    assert TIMER_TOPIC not in m.topic_config_table
    assert {"C", "b", "C_REPLY_TOPIC", "RMQ_SYS_TRACE_TOPIC"} <= set(m.topic_config_table)
    _, _, m = make(default_topic_queue_nums=4)
    assert m.select_topic_config("TBW102").write_queue_nums == 4


def test_auto_create_inherits_from_tbw102_with_min_queue_nums_and_no_inherit():
    disk, clock, m = make()
    clock.advance(5000)
    tc = m.create_topic_in_send_message_method("TopicTest", AUTO_CREATE_TOPIC_KEY_TOPIC, 4, 0)
    assert (tc.topic_name, tc.read_queue_nums, tc.write_queue_nums, tc.perm) == ("TopicTest", 4, 4, 6)
    assert tc.topic_filter_type == "SINGLE_TAG" and tc.topic_sys_flag == 0
    assert m.select_topic_config("TopicTest") is tc
    assert m.data_version.counter == 1 and m.data_version.timestamp_ms == T0 + 5000
    stored = loads(disk.read_file(PATH).decode())
    assert stored["topicConfigTable"]["TopicTest"]["readQueueNums"] == 4
    assert stored["dataVersion"] == {"counter": 1, "stateVersion": 0, "timestamp": T0 + 5000}
    assert "TBW102" in stored["topicConfigTable"]  # the whole table, built-ins included
    # More queues asked than TBW102 has: min(16, 8).
    big = m.create_topic_in_send_message_method("Big", AUTO_CREATE_TOPIC_KEY_TOPIC, 16, 0)
    assert big.write_queue_nums == 8 and m.data_version.counter == 2


def test_auto_create_returns_an_existing_topic_without_a_new_version():
    disk, _, m = make()
    first = m.create_topic_in_send_message_method("T", AUTO_CREATE_TOPIC_KEY_TOPIC)
    written = disk.read_file(PATH)
    assert m.create_topic_in_send_message_method("T", AUTO_CREATE_TOPIC_KEY_TOPIC, 2) is first
    assert m.data_version.counter == 1 and disk.read_file(PATH) == written


def test_auto_create_needs_an_inheriting_default_topic():
    disk, _, m = make()
    m.topic_config_table["NoInherit"] = TopicConfig("NoInherit", perm=PERM_READ | PERM_WRITE)
    assert m.create_topic_in_send_message_method("T", "NoInherit") is None
    assert m.create_topic_in_send_message_method("T", "Missing") is None
    assert m.create_topic_in_send_message_method("T", "broker-a", 4) is not None  # broker topic inherits
    assert m.select_topic_config("T").write_queue_nums == 1


def test_negative_client_queue_nums_are_clamped_to_zero():
    _, _, m = make()
    assert m.create_topic_in_send_message_method("T", AUTO_CREATE_TOPIC_KEY_TOPIC, -3).write_queue_nums == 0


def test_without_auto_create_a_stored_tbw102_loses_inherit():
    disk, clock, m = make()
    m.update_topic_config(TopicConfig("Other"))  # persists TBW102 (perm 7) too
    _, _, off = make(disk, clock, auto_create_topic_enable=False)
    assert off.load() and off.select_topic_config("TBW102").perm == 7
    assert off.create_topic_in_send_message_method("T", AUTO_CREATE_TOPIC_KEY_TOPIC) is None
    assert off.select_topic_config("TBW102").perm == PERM_READ | PERM_WRITE


def test_the_sys_flag_and_filter_type_are_carried():
    _, _, m = make()
    m.select_topic_config("TBW102").topic_filter_type = "MULTI_TAG"
    tc = m.create_topic_in_send_message_method("T", "TBW102", 4, 3)
    assert (tc.topic_sys_flag, tc.topic_filter_type) == (3, "MULTI_TAG")


def test_retry_and_dlq_topics_are_created_with_the_given_queue_nums_and_perm():
    disk, _, m = make()
    retry = m.create_topic_in_send_message_back_method("%RETRY%G", 1, PERM_READ | PERM_WRITE, 0)
    assert (retry.read_queue_nums, retry.write_queue_nums, retry.perm) == (1, 1, 6)
    dlq = m.create_topic_in_send_message_back_method("%DLQ%G", 1, PERM_WRITE, 0)  # 4.9.1 and earlier
    assert dlq.perm == PERM_WRITE and not is_readable(dlq.perm)
    assert m.data_version.counter == 2
    assert set(loads(disk.read_file(PATH).decode())["topicConfigTable"]) >= {"%RETRY%G", "%DLQ%G"}
    again = m.create_topic_in_send_message_back_method("%DLQ%G", 3, PERM_READ | PERM_WRITE, 0)
    assert again is dlq and dlq.perm == PERM_WRITE and m.data_version.counter == 2


def test_update_and_delete_bump_the_version_and_persist():
    disk, clock, m = make()
    m.update_topic_config(TopicConfig("T", 2, 2))
    assert m.data_version.counter == 1
    clock.advance(1)
    m.update_topic_config(TopicConfig("T", 3, 3))
    assert m.data_version.counter == 2 and m.select_topic_config("T").read_queue_nums == 3
    m.delete_topic_config("T")
    assert m.select_topic_config("T") is None and m.data_version.counter == 3
    assert "T" not in loads(disk.read_file(PATH).decode())["topicConfigTable"]
    m.delete_topic_config("T")  # absent: nothing happens
    assert m.data_version.counter == 3


def test_a_crash_before_persisting_topics_json():
    class Crash:
        def at(self, site, detail=""):
            return CRASH if site == "persist.topics.json" else None

    disk, _, m = make(faults=Crash())
    with pytest.raises(BrokerCrash):
        m.create_topic_in_send_message_back_method("%RETRY%G", 1, 6)
    assert not disk.exists(PATH)


@pytest.mark.parametrize("shape", ["4.x", "5.x"])
def test_topics_json_round_trips_through_a_restart(shape):
    disk, clock, m = make(json_shape=shape)
    m.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    m.create_topic_in_send_message_back_method("%RETRY%G", 1, 6)
    tc = TopicConfig("Ordered", 2, 2, order=True, attributes={"+message.type": "FIFO"} if shape == "5.x" else {})
    m.update_topic_config(tc)
    clock.advance(100)
    _, _, again = make(disk, clock, json_shape=shape)
    assert again.load()
    assert again.topic_config_table == m.topic_config_table
    assert again.data_version == m.data_version
    assert again.encode() == m.encode()


def test_the_4x_shape_is_the_example_file_of_6_4():
    _, _, m = make(json_shape="4.x")
    m.topic_config_table.clear()
    for bean in TOPICS_DATA["topicConfigTable"].values():
        m.topic_config_table[bean["topicName"]] = TopicConfig.from_json(bean)
    m.data_version.timestamp_ms, m.data_version.counter = 1690000000000, 3
    assert m.encode() == TOPICS


def test_the_5x_shape_has_attributes_and_state_version():
    _, _, m = make(json_shape="5.x")
    m.update_topic_config(TopicConfig("T", 4, 4))
    text = m.encode()
    assert '\t\t"T":{\n\t\t\t"attributes":{},\n\t\t\t"order":false,' in text
    assert '"stateVersion":0' in text
    assert m.encode(pretty=False).startswith('{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":')


def test_load_merges_stored_topics_over_the_built_ins_and_ignores_unknown_properties():
    disk, _, m = make()
    disk.write_file(PATH, (
        '{"dataVersion":{"counter":42,"timestamp":5,"future":1},"topicConfigTable":{'
        '"TopicTest":{"perm":6,"readQueueNums":4,"writeQueueNums":4,"topicName":"TopicTest","newProp":[1]},'
        '"TBW102":{"perm":7,"readQueueNums":2,"writeQueueNums":2,"topicName":"TBW102"}},"unknownTable":{}}'
    ).encode())
    assert m.load()
    assert m.select_topic_config("TopicTest").write_queue_nums == 4
    assert m.select_topic_config("TBW102").write_queue_nums == 2
    assert m.select_topic_config(RMQ_SYS_SCHEDULE_TOPIC) is not None
    assert (m.data_version.counter, m.data_version.timestamp_ms) == (42, 5)


def test_the_example_topics_json_loads():
    disk, _, m = make()
    disk.write_file(PATH, TOPICS.encode())
    assert m.load()
    assert m.select_topic_config("%DLQ%GroupA").perm == 6
    assert m.select_topic_config("TopicTest").read_queue_nums == 4
    assert m.data_version.counter == 3 and m.data_version.state_version == 0


def test_a_wrongly_typed_property_fails_the_main_file():
    disk, _, m = make()
    disk.write_file(PATH, b'{"topicConfigTable":{"T":{"perm":"six"}}}')
    disk.write_file(PATH + ".bak", b'{"topicConfigTable":{"T":{"perm":2}}}')
    assert m.load() and m.select_topic_config("T").perm == 2
    assert m.load_events[0].startswith("topics.json unreadable (ValueError: topicConfigTable['T'].perm")
