"""Parity with RocketMQ's SendMessageProcessorTest, ConsumerOffsetManagerTest, ConfigManagerTest, HookUtilsTest and
PullMessageProcessorTest (broker/ and common/ src/test) at rocketmq-all-4.9.8 and rocketmq-all-5.3.3. Where Java mocks
the message store's answer, a real put hook of the store gives it. (TopicConfigManagerTest and
SubscriptionGroupManagerTest test the RIP-28 attributes and RocksDB storage, which are not modelled: see
test_not_mirrored.py.)"""

from __future__ import annotations

import pytest

from store.client.api import MQBrokerException, ResponseCode
from store.clock import ManualClock
from store.config_manager import ConfigManager
from store.consumer_offset import ConsumerOffsetManager
from store.disk import MemoryDisk
from store.faults import FAIL, SITE_PUT
from store.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    MessageExt,
)
from store.put_status import PutMessageResult, PutMessageStatus

from ..store.broker_harness import SMALL_STORE, BrokerHarness

TOPIC = "FooBar"
GROUP = "FooBarGroup"


class _PutFault:
    def __init__(self, site: str) -> None:
        self.site = site

    def at(self, site: str, detail: str = "") -> str | None:
        return FAIL if site == self.site and detail == TOPIC else None


def _send(h: BrokerHarness, **props) -> int:
    """The response code of one SEND_MESSAGE to FooBar queue 0 (SUCCESS when the broker answers a result)."""
    msg = MessageExt(topic=TOPIC, queue_id=0, body=b"abc", properties={"UNIQ_KEY": "u", "TAGS": "t", **props},
                     born_timestamp=h.clock.now_ms())
    try:
        h.broker.send_message(msg, "FooBarProducerGroup")
    except MQBrokerException as error:
        return error.code
    return ResponseCode.SUCCESS


def _harness(era: str, **kwargs) -> BrokerHarness:
    h = BrokerHarness(store_config=SMALL_STORE.with_(era=era), **kwargs)
    h.broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 4)
    return h


ERAS = ["4.9.8", "5.3.3"]


@pytest.mark.parametrize("era", ERAS)
def test_process_request(era):
    """Mirrors SendMessageProcessorTest.testProcessRequest (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    h = _harness(era)
    assert _send(h) == ResponseCode.SUCCESS
    assert h.broker.message_store.commit_log.topic_queue_table[f"{TOPIC}-0"] == 1


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("status, code", [
    (PutMessageStatus.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_DISK_TIMEOUT),
    (PutMessageStatus.CREATE_MAPPED_FILE_FAILED, ResponseCode.SYSTEM_ERROR),
    (PutMessageStatus.FLUSH_SLAVE_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT),
    (PutMessageStatus.SLAVE_NOT_AVAILABLE, ResponseCode.SLAVE_NOT_AVAILABLE),
], ids=["testProcessRequest_FlushTimeOut", "testProcessRequest_CreateMappedFileFailed",
        "testProcessRequest_FlushSlaveTimeout", "testProcessRequest_SlaveNotAvailable"])
def test_process_request_store_answers(era, status, code):
    """Mirrors SendMessageProcessorTest.testProcessRequest_FlushTimeOut, _CreateMappedFileFailed,
    _FlushSlaveTimeout and _SlaveNotAvailable (rocketmq-all-4.9.8, rocketmq-all-5.3.3): the put status maps to
    the response code. The store cannot produce these statuses itself, so a put hook answers them (Java mocks)."""
    h = _harness(era)
    h.broker.message_store.put_hooks.insert(0, lambda msg: PutMessageResult(status))
    assert _send(h) == code


@pytest.mark.parametrize("era", ERAS)
def test_process_request_message_illegal(era):
    """Mirrors SendMessageProcessorTest.testProcessRequest_MessageIllegal (rocketmq-all-4.9.8, 5.3.3), with a
    body longer than maxMessageSize making the store answer MESSAGE_ILLEGAL for real."""
    h = BrokerHarness(store_config=SMALL_STORE.with_(era=era, max_message_size=2))
    h.broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 4)
    assert _send(h) == ResponseCode.MESSAGE_ILLEGAL


@pytest.mark.parametrize("era", ERAS)
def test_process_request_properties_too_long(era):
    """Mirrors SendMessageProcessorTest.testProcessRequest_PropertiesTooLong (rocketmq-all-4.9.8, 5.3.3): the
    store answers PROPERTIES_SIZE_EXCEEDED, the client gets MESSAGE_ILLEGAL."""
    h = _harness(era)
    assert _send(h, big="x" * 32768) == ResponseCode.MESSAGE_ILLEGAL


@pytest.mark.parametrize("era", ERAS)
def test_process_request_page_cache_busy(era):
    """Mirrors SendMessageProcessorTest.testProcessRequest_PageCacheBusy (rocketmq-all-4.9.8, 5.3.3): the put
    fault site answers OS_PAGE_CACHE_BUSY, the client gets SYSTEM_BUSY."""
    h = _harness(era, faults=_PutFault(SITE_PUT))
    assert _send(h) == ResponseCode.SYSTEM_BUSY


@pytest.mark.parametrize("era", ERAS)
def test_process_request_service_not_available(era):
    """Mirrors SendMessageProcessorTest.testProcessRequest_ServiceNotAvailable (rocketmq-all-4.9.8, 5.3.3): a
    store that is not writeable answers SERVICE_NOT_AVAILABLE."""
    h = _harness(era)
    h.broker.message_store.writeable = False
    assert _send(h) == ResponseCode.SERVICE_NOT_AVAILABLE


@pytest.mark.parametrize("era", ERAS)
def test_process_request_with_msg_back(era):
    """Mirrors SendMessageProcessorTest.testProcessRequest_WithMsgBack (rocketmq-all-4.9.8, 5.3.3):
    CONSUMER_SEND_MSG_BACK with maxReconsumeTimes 3 and delay level 4 answers SUCCESS; the retry copy goes to
    %RETRY%group through the schedule topic at level 4."""
    h = _harness(era)
    assert _send(h) == ResponseCode.SUCCESS
    h.run_for(1)
    (consumed,) = h.pull(GROUP, TOPIC, 0, 0).msg_found_list
    result = h.broker.send_processor.consumer_send_msg_back(GROUP, consumed.commit_log_offset, 4, 3,
                                                            origin_msg_id=consumed.msg_id)
    assert result.is_ok and result.append.topic == "SCHEDULE_TOPIC_XXXX" and result.append.queue_id == 3
    h.run_for(1)
    (copy,) = h.broker.message_store.get_message("G", "SCHEDULE_TOPIC_XXXX", 3, 0, 1).messages
    props = copy.properties
    assert (props["REAL_TOPIC"], props[PROPERTY_DELAY_TIME_LEVEL], props[PROPERTY_RETRY_TOPIC]) == (
        f"%RETRY%{GROUP}", "4", TOPIC)
    assert props[PROPERTY_ORIGIN_MESSAGE_ID] == consumed.msg_id and copy.reconsume_times == 1


# --- ConsumerOffsetManagerTest (5.3.3) ---------------------------------------------------------------------
def test_remove_offset_by_group():
    """Mirrors ConsumerOffsetManagerTest.removeOffsetByGroupTest (rocketmq-all-5.3.3): removeOffset(group) drops
    the group's topic@group entry. (The pull-offset and reset-offset tables it also clears belong to 5.x POP /
    admin reset, which are out of scope.)"""
    manager = ConsumerOffsetManager(MemoryDisk(), ManualClock())
    manager.offset_table["FooBar@FooBarGroup"] = {1: 2, 2: 3}
    manager.commit_offset("Commit", "GroupName", "TopicName", 0, 100)
    assert manager.query_offset("GroupName", "TopicName", 0) == 100
    manager.remove_offset("GroupName")
    assert "TopicName@GroupName" not in manager.offset_table
    assert manager.query_offset("GroupName", "TopicName", 0) == -1
    assert manager.offset_table["FooBar@FooBarGroup"] == {1: 2, 2: 3}


@pytest.mark.parametrize("json_shape", ["4.x", "5.x"])
def test_offset_persist_in_memory(json_shape):
    """Mirrors ConsumerOffsetManagerTest.testOffsetPersistInMemory (rocketmq-all-5.3.3; the 4.x file shape too):
    a table persisted and loaded by a new manager comes back equal, even under a key without '@'."""
    disk = MemoryDisk()
    manager = ConsumerOffsetManager(disk, ManualClock(), json_shape=json_shape)
    manager.offset_table["FooBar@FooBarGroup"] = {1: 2, 2: 3}
    manager.offset_table["G1"] = {0: 1, 1: 3}
    manager.persist()
    loaded = ConsumerOffsetManager(disk, ManualClock(), json_shape=json_shape)
    assert loaded.load()
    assert loaded.offset_table["G1"] == {0: 1, 1: 3}
    assert loaded.offset_table == manager.offset_table


# --- ConfigManagerTest -------------------------------------------------------------------------------------
CONTENT_ENCODE = "Encode content for ConfigManager"
PATH_FILE = "org.apache.rocketmq.common.ConfigManagerTest"


class _TestConfigManager(ConfigManager):
    """buildTestConfigManager: encodes a fixed string, decodes anything."""

    def encode(self, pretty: bool = True) -> str:
        return CONTENT_ENCODE

    def decode(self, text: str) -> None:
        pass


@pytest.mark.parametrize("persist_mode", ["4.x", "5.3.3"])
def test_config_manager_load(persist_mode):
    """Mirrors ConfigManagerTest.testLoad (rocketmq-all-4.9.8, rocketmq-all-5.3.3): the main file loads; without
    it the .bak loads."""
    disk = MemoryDisk()
    manager = _TestConfigManager(disk, PATH_FILE, persist_mode=persist_mode)
    disk.write_file(PATH_FILE, b"TestForConfigManager")
    assert manager.load()
    assert manager.load_events[-1].endswith("loaded")
    disk.delete(PATH_FILE)
    disk.write_file(PATH_FILE + ".bak", b"TestForConfigManager")
    assert manager.load()
    assert "loaded .bak" in manager.load_events[-1]


@pytest.mark.parametrize("persist_mode", ["4.x", "5.3.3"])
def test_config_manager_load_bak(persist_mode):
    """Mirrors ConfigManagerTest.testLoadBak (rocketmq-all-4.9.8, rocketmq-all-5.3.3): loadBak is true with a
    readable .bak and also when there is none."""
    disk = MemoryDisk()
    manager = _TestConfigManager(disk, PATH_FILE, persist_mode=persist_mode)
    disk.write_file(PATH_FILE + ".bak", b"TestForConfigManager")
    assert manager.load_bak()
    disk.delete(PATH_FILE + ".bak")
    assert manager.load_bak()


@pytest.mark.parametrize("persist_mode", ["4.x", "5.3.3"])
def test_config_manager_persist(persist_mode):
    """Mirrors ConfigManagerTest.testPersist (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    disk = MemoryDisk()
    _TestConfigManager(disk, PATH_FILE, persist_mode=persist_mode).persist()
    assert disk.read_file(PATH_FILE).decode() == CONTENT_ENCODE


# --- HookUtilsTest (5.3.3) ---------------------------------------------------------------------------------
def test_check_before_put_message():
    """Mirrors HookUtilsTest.testCheckBeforePutMessage (rocketmq-all-5.3.3): topics up to 127 bytes pass; longer
    ones only as %RETRY% topics and only up to 255 bytes. (Its null-body case has no Python counterpart.)"""
    h = BrokerHarness()
    store = h.broker.message_store

    def put(topic: str) -> str:
        return store.put_message(MessageExt(topic=topic, body=b"B" * 127, properties={"UNIQ_KEY": "u"})).status

    retry = "%RETRY%"
    assert put("A" * 127) == PutMessageStatus.PUT_OK
    assert put(retry + "C" * 128) == PutMessageStatus.PUT_OK
    assert put(retry + "D" * (255 - len(retry))) == PutMessageStatus.PUT_OK
    assert put(retry + "E" * (256 - len(retry))) == PutMessageStatus.MESSAGE_ILLEGAL
    assert put("B" * 128) == PutMessageStatus.MESSAGE_ILLEGAL


# --- ConsumerManageProcessorTest (5.3.3) -------------------------------------------------------------------
def test_update_consumer_offset_invalid_topic():
    """Mirrors ConsumerManageProcessorTest.testUpdateConsumerOffset_InvalidTopic (rocketmq-all-5.3.3): the
    (one-way) update for a topic the broker does not have is refused, so nothing is committed."""
    h = _harness("5.3.3")
    h.broker.subscription_group_manager.find_subscription_group_config(GROUP)  # the group exists
    h.broker.update_consumer_offset_oneway(GROUP, "InvalidTopic", 0, 0)
    assert h.broker.consumer_offset_manager.query_offset(GROUP, "InvalidTopic", 0) == -1


def test_update_consumer_offset_group_not_exist():
    """Mirrors ConsumerManageProcessorTest.testUpdateConsumerOffset_GroupNotExist (rocketmq-all-5.3.3)."""
    h = _harness("5.3.3")
    h.broker.update_consumer_offset_oneway("NotExistGroup", TOPIC, 0, 0)
    assert h.broker.consumer_offset_manager.query_offset("NotExistGroup", TOPIC, 0) == -1
    assert "NotExistGroup" not in h.broker.subscription_group_manager.subscription_group_table


def test_update_consumer_offset():
    """Mirrors ConsumerManageProcessorTest.testUpdateConsumerOffset (rocketmq-all-5.3.3): a known group and topic
    get their offset committed (server-side offset reset is not modelled)."""
    h = _harness("5.3.3")
    h.broker.subscription_group_manager.find_subscription_group_config(GROUP)
    h.broker.update_consumer_offset_oneway(GROUP, TOPIC, 0, 0)
    assert h.broker.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == 0


def test_query_consumer_offset():
    """Mirrors ConsumerManageProcessorTest.testQueryConsumerOffset (rocketmq-all-5.3.3), without its static-topic
    (logic queue mapping) part: no offset and no unit 0 -> QUERY_NOT_FOUND; a committed 0 -> 0; no offset but
    unit 0 in memory -> 0."""
    h = _harness("5.3.3")
    with pytest.raises(MQBrokerException) as error:
        h.broker.query_consumer_offset(GROUP, TOPIC, 0)
    assert error.value.code == ResponseCode.QUERY_NOT_FOUND
    h.broker.consumer_offset_manager.commit_offset("127.0.0.1", GROUP, TOPIC, 0, 0)
    assert h.broker.query_consumer_offset(GROUP, TOPIC, 0) == 0
    assert _send(h) == ResponseCode.SUCCESS
    h.run_for(1)
    assert h.broker.query_consumer_offset("OtherGroup", TOPIC, 0) == 0


# --- PullMessageProcessorTest ------------------------------------------------------------------------------
def _pull_answer(h: BrokerHarness, queue_id: int = 1, offset: int = 456):
    """createPullMsgCommand: group, topic, queue 1, offset 456, commit offset 123, 100 messages, '*'."""
    return h.pull(GROUP, TOPIC, queue_id, offset, max_nums=100, commit_offset=123)


@pytest.mark.parametrize("era", ERAS)
def test_pull_process_request_topic_not_exist(era):
    """Mirrors PullMessageProcessorTest.testProcessRequest_TopicNotExist (rocketmq-all-4.9.8, 5.3.3)."""
    h = _harness(era)
    h.broker.topic_config_manager.delete_topic_config(TOPIC)
    answer = _pull_answer(h)
    assert isinstance(answer, MQBrokerException) and answer.code == ResponseCode.TOPIC_NOT_EXIST
    assert f"topic[{TOPIC}] not exist" in str(answer)


@pytest.mark.parametrize("era", ERAS)
def test_pull_process_request_sub_not_exist(era):
    """Mirrors PullMessageProcessorTest.testProcessRequest_SubNotExist (rocketmq-all-4.9.8, 5.3.3): init registers
    the group's consumer; the test unregisters it (the group, left with no connection, is dropped) and a pull
    without FLAG_SUBSCRIPTION answers SUBSCRIPTION_NOT_EXIST, "consumer's group info not exist"."""
    h = _harness(era)
    h.broker.heart_beat("127.0.0.1@c1", GROUP, "CLUSTERING", [TOPIC])
    h.broker.unregister_client("127.0.0.1@c1", GROUP)
    answer = h.pull(GROUP, TOPIC, 1, 456, max_nums=100, commit_offset=123, heartbeat=False)
    assert isinstance(answer, MQBrokerException) and answer.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert "consumer's group info not exist" in str(answer)


@pytest.mark.parametrize("era", ERAS)
def test_pull_process_request_found(era):
    """Mirrors PullMessageProcessorTest.testProcessRequest_Found (rocketmq-all-4.9.8, 5.3.3), with a real message
    at the pulled offset instead of a mocked GetMessageResult."""
    h = _harness(era)
    h.broker.heart_beat("127.0.0.1@c1", GROUP, "CLUSTERING", [TOPIC])
    for n in range(3):
        msg = MessageExt(topic=TOPIC, queue_id=1, body=b"m", properties={"UNIQ_KEY": f"u{n}"},
                         born_timestamp=h.clock.now_ms())
        h.broker.send_message(msg, "P")
    h.run_for(1)
    answer = _pull_answer(h, offset=1)
    assert answer.pull_status == "FOUND" and [m.queue_offset for m in answer.msg_found_list] == [1, 2]
    assert answer.next_begin_offset == 3


@pytest.mark.parametrize("era", ERAS)
def test_pull_process_request_no_msg_in_queue(era):
    """Mirrors PullMessageProcessorTest.testProcessRequest_NoMsgInQueue (rocketmq-all-4.9.8, 5.3.3): an empty
    queue pulled at offset 456 answers PULL_OFFSET_MOVED (OFFSET_ILLEGAL to the client)."""
    h = _harness(era)
    h.broker.heart_beat("127.0.0.1@c1", GROUP, "CLUSTERING", [TOPIC])
    answer = _pull_answer(h)
    assert answer.pull_status == "OFFSET_ILLEGAL"


