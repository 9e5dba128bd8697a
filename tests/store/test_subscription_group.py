"""SubscriptionGroupManager: built-ins, auto-creation on/off, update/delete, subscriptionGroup.json (6.3, 6.4)."""

from __future__ import annotations

import pytest

from store.clock import ManualClock
from store.disk import MemoryDisk
from store.fastjson import loads
from store.subscription_group import SubscriptionGroupConfig, SubscriptionGroupManager

from .test_fastjson import SUBSCRIPTION_GROUP

PATH = "config/subscriptionGroup.json"
BUILT_INS = ["TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL",
             "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER"]


def make(disk=None, clock=None, **kwargs):
    disk = disk if disk is not None else MemoryDisk()
    clock = clock if clock is not None else ManualClock(1_700_000_000_000)
    return disk, clock, SubscriptionGroupManager(disk, clock, **kwargs)


def test_defaults_follow_4_1():
    sgc = SubscriptionGroupConfig("G")
    assert (sgc.consume_enable, sgc.consume_from_min_enable, sgc.consume_broadcast_enable) == (True, True, True)
    assert (sgc.retry_queue_nums, sgc.retry_max_times, sgc.broker_id) == (1, 16, 0)
    assert (sgc.which_broker_when_consume_slowly, sgc.notify_consumer_ids_changed_enable) == (1, True)


def test_built_in_groups_are_in_memory_only():
    disk, _, m = make()
    assert list(m.subscription_group_table) == BUILT_INS
    assert m.find_subscription_group_config("TOOLS_CONSUMER").group_name == "TOOLS_CONSUMER"
    assert m.data_version.counter == 0 and not disk.exists(PATH)


def test_auto_create_creates_and_persists():
    disk, clock, m = make()
    clock.advance(7)
    sgc = m.find_subscription_group_config("GroupA")
    assert sgc == SubscriptionGroupConfig("GroupA")
    assert m.data_version.counter == 1 and m.data_version.timestamp_ms == 1_700_000_000_007
    stored = loads(disk.read_file(PATH).decode())
    assert stored["subscriptionGroupTable"]["GroupA"]["retryMaxTimes"] == 16
    assert m.find_subscription_group_config("GroupA") is sgc and m.data_version.counter == 1  # found: no persist
    m.find_subscription_group_config("GroupB")
    assert m.data_version.counter == 2
    assert set(loads(disk.read_file(PATH).decode())["subscriptionGroupTable"]) == {*BUILT_INS, "GroupA", "GroupB"}


def test_without_auto_create_unknown_groups_are_none_except_system_groups():
    disk, _, m = make(auto_create_subscription_group=False)
    assert m.find_subscription_group_config("GroupA") is None
    assert not disk.exists(PATH) and m.data_version.counter == 0
    assert m.find_subscription_group_config("CID_RMQ_SYS_X") is not None
    assert m.data_version.counter == 1 and disk.exists(PATH)


def test_update_and_delete():
    disk, _, m = make()
    m.update_subscription_group_config(SubscriptionGroupConfig("G", retry_max_times=3, retry_queue_nums=2))
    assert m.find_subscription_group_config("G").retry_max_times == 3 and m.data_version.counter == 1
    m.delete_subscription_group_config("G")
    assert "G" not in m.subscription_group_table and m.data_version.counter == 2
    assert "G" not in loads(disk.read_file(PATH).decode())["subscriptionGroupTable"]
    m.delete_subscription_group_config("G")
    assert m.data_version.counter == 2
    assert m.contains_subscription_group("TOOLS_CONSUMER") and not m.contains_subscription_group(" ")


def test_the_4x_shape_is_the_example_file_of_6_4():
    _, _, m = make(json_shape="4.x")
    m.subscription_group_table = {"GroupA": SubscriptionGroupConfig("GroupA")}
    m.data_version.timestamp_ms, m.data_version.counter = 1690000000000, 1
    assert m.encode() == SUBSCRIPTION_GROUP


def test_the_5x_shape_adds_the_extra_fields_forbidden_table_and_state_version():
    _, _, m = make(json_shape="5.x")
    m.subscription_group_table = {"GroupA": SubscriptionGroupConfig("GroupA")}
    m.data_version.timestamp_ms, m.data_version.counter = 1690000000000, 1
    assert m.encode() == (
        "{\n"
        "\t\"dataVersion\":{\n"
        "\t\t\"counter\":1,\n"
        "\t\t\"stateVersion\":0,\n"
        "\t\t\"timestamp\":1690000000000\n"
        "\t},\n"
        "\t\"forbiddenTable\":{},\n"
        "\t\"subscriptionGroupTable\":{\n"
        "\t\t\"GroupA\":{\n"
        "\t\t\t\"attributes\":{},\n"
        "\t\t\t\"brokerId\":0,\n"
        "\t\t\t\"consumeBroadcastEnable\":true,\n"
        "\t\t\t\"consumeEnable\":true,\n"
        "\t\t\t\"consumeFromMinEnable\":true,\n"
        "\t\t\t\"consumeMessageOrderly\":false,\n"
        "\t\t\t\"consumeTimeoutMinute\":15,\n"
        "\t\t\t\"groupName\":\"GroupA\",\n"
        "\t\t\t\"groupRetryPolicy\":{\n"
        "\t\t\t\t\"type\":\"CUSTOMIZED\"\n"
        "\t\t\t},\n"
        "\t\t\t\"groupSysFlag\":0,\n"
        "\t\t\t\"notifyConsumerIdsChangedEnable\":true,\n"
        "\t\t\t\"retryMaxTimes\":16,\n"
        "\t\t\t\"retryQueueNums\":1,\n"
        "\t\t\t\"whichBrokerWhenConsumeSlowly\":1\n"
        "\t\t}\n"
        "\t}\n"
        "}"
    )


@pytest.mark.parametrize("shape", ["4.x", "5.x"])
def test_subscription_group_json_round_trips_through_a_restart(shape):
    disk, clock, m = make(json_shape=shape)
    m.find_subscription_group_config("GroupA")
    m.update_subscription_group_config(SubscriptionGroupConfig("GroupB", consume_enable=False, retry_max_times=2))
    if shape == "5.x":
        m.forbidden_table["GroupB"] = {"T": 1}
        m.persist()
    _, _, again = make(disk, clock, json_shape=shape)
    assert again.load()
    assert again.subscription_group_table == m.subscription_group_table
    assert again.forbidden_table == m.forbidden_table and again.data_version == m.data_version


def test_the_example_file_loads_over_the_built_ins():
    disk, _, m = make()
    disk.write_file(PATH, SUBSCRIPTION_GROUP.encode())
    assert m.load()
    assert list(m.subscription_group_table) == [*BUILT_INS, "GroupA"]
    assert m.subscription_group_table["GroupA"] == SubscriptionGroupConfig("GroupA")
    assert m.data_version.counter == 1
