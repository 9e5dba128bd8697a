"""Parity with RocketMQ's ScheduleMessageServiceTest: broker/src/test/.../schedule (rocketmq-all-5.3.3) and
store/src/test/.../ScheduleMessageServiceTest + store/src/test/.../schedule/ScheduleMessageServiceTest
(rocketmq-all-4.9.8), on the real broker with a manual clock instead of sleeping threads."""

from __future__ import annotations

import random

import pytest

from store.clock import ManualClock
from store.commit_log import SCHEDULE_TOPIC
from store.config import MessageStoreConfig
from store.data_version import DataVersion
from store.disk import MemoryDisk
from store.fastjson import dumps
from store.faults import FAIL, SITE_SCHEDULE_DELIVER, SITE_SCHEDULE_REBUILD
from store.message import PROPERTY_DELAY_TIME_LEVEL, MessageExt
from store.message_store import DefaultMessageStore, GetMessageStatus
from store.schedule_message_service import (
    ScheduleMessageService,
    delay_level_to_queue_id,
    queue_id_to_delay_level,
)

from ..store.broker_harness import BrokerHarness

TOPIC = "schedule_topic_test"
SEND_MESSAGE = b" ------- schedule message test -------"
# The Java setUp: levels "5s 8s", 1 KiB commit-log files; its 10-byte CQ files are rounded up to one unit by
# MessageStoreConfig.getMappedFileSizeConsumeQueue, so 20 is what Java really uses.
JAVA_CONFIG = MessageStoreConfig(message_delay_level="5s 8s", mapped_file_size_commit_log=1024,
                                 mapped_file_size_consume_queue=20, timer_slots_total=3600,
                                 mapped_file_size_timer_log=52 * 64 + 16)


def _era_config(era: str) -> MessageStoreConfig:
    return JAVA_CONFIG.with_(era=era)


def _store(config: MessageStoreConfig) -> DefaultMessageStore:
    store = DefaultMessageStore(MemoryDisk(), config, ManualClock(1_700_000_000_000))
    assert store.load()
    store.start(0)
    return store


def _build_message() -> MessageExt:
    return MessageExt(topic=TOPIC, body=SEND_MESSAGE, queue_id=0,
                      properties={"TAGS": "schedule_tag", "KEYS": "schedule_key", "UNIQ_KEY": "u1"},
                      born_timestamp=1_700_000_000_000)


def test_load():
    """Mirrors ScheduleMessageServiceTest.testLoad (rocketmq-all-5.3.3): offsets persisted for levels whose queues
    hold nothing are loaded back as 0."""
    store = _store(_era_config("5.3.3"))
    service = ScheduleMessageService(store)
    assert service.load()
    service.offset_table.update({1: 3, 2: 5})
    service.persist()
    control = ScheduleMessageService(store)
    assert control.load()
    assert set(control.offset_table) == {1, 2}
    assert all(offset == 0 for offset in control.offset_table.values())


@pytest.mark.parametrize("era, levels", [("5.3.3", 2), ("4.9.8", 18)])
def test_correct_delay_offset_when_init(era, levels):
    """Mirrors ScheduleMessageServiceTest.testCorrectDelayOffset_whenInit (rocketmq-all-5.3.3: levels "5s 8s";
    rocketmq-all-4.9.8: the 18 default levels): random offsets survive encode/decode, then correctDelayOffset
    brings every one to 0 (no level has a message)."""
    config = _era_config(era) if levels == 2 else MessageStoreConfig(era=era)
    service = ScheduleMessageService(_store(config))
    rng = random.Random(levels)
    table = {level: rng.randrange(-(1 << 63), 1 << 63) for level in range(1, levels + 1)}
    service.offset_table = dict(table)
    service.decode(service.encode())
    assert service.offset_table == table
    service.correct_delay_offset()
    assert len(service.offset_table) == levels
    assert all(offset == 0 for offset in service.offset_table.values())


@pytest.mark.parametrize("era, level, wait_ms", [("5.3.3", 3, 15_000), ("4.9.8", 2, 10_000)],
                         ids=["testDeliverDelayedMessageTimerTask", "deliverDelayedMessageTimerTaskTest"])
def test_deliver_delayed_message_timer_task(era, level, wait_ms):
    """Mirrors ScheduleMessageServiceTest.testDeliverDelayedMessageTimerTask (rocketmq-all-5.3.3, level 3 clamped
    to the highest level, 8 s) and schedule.ScheduleMessageServiceTest.deliverDelayedMessageTimerTaskTest
    (rocketmq-all-4.9.8, level 2): nothing in the real queue at first, the message and its body after the wait."""
    h = BrokerHarness(store_config=_era_config(era))
    store = h.broker.message_store
    msg = _build_message()
    msg.properties[PROPERTY_DELAY_TIME_LEVEL] = str(level)
    result = store.put_message(msg)
    assert result.is_ok
    assert delay_level_to_queue_id(level) == level - 1
    assert result.append.topic == SCHEDULE_TOPIC and result.append.queue_id == delay_level_to_queue_id(2)
    offset = result.append.logics_offset
    h.run_for(1)
    assert store.get_message("delayGroupTest", TOPIC, 0, offset, 1).status == GetMessageStatus.NO_MESSAGE_IN_QUEUE
    h.run_for(wait_ms)
    got = store.get_message("delayGroupTest", TOPIC, 0, offset, 1)
    assert got.status == GetMessageStatus.FOUND
    assert got.messages[0].body == SEND_MESSAGE
    service = h.broker.schedule_message_service
    assert service.offset_table[2] == 1
    service.persist()
    assert '"offsetTable":{2:1}' in h.disk.read_file("config/delayOffset.json").decode().replace("\n", "").replace(
        "\t", "").replace(" ", "")


@pytest.mark.parametrize("era", ["5.3.3", "4.9.8"])
def test_other_test(era):
    """Mirrors ScheduleMessageServiceTest.otherTest (rocketmq-all-5.3.3, rocketmq-all-4.9.8): queueId2DelayLevel,
    the 1 s default of an unknown level, and decoding an empty DelayOffsetSerializeWrapper."""
    service = ScheduleMessageService(_store(_era_config(era)))
    assert queue_id_to_delay_level(3) == 4
    assert service.compute_deliver_timestamp(999, 0) == 1000
    empty = {"offsetTable": {}}
    if era == "5.3.3":
        empty = {"dataVersion": DataVersion(0, 0).to_json("5.x"), **empty}
    service.decode(dumps(empty))
    assert service.offset_table == {}


class _FailHalfTheDeliveries:
    """The Java test completes about half of the put futures with OS_PAGECACHE_BUSY or an exception."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.failed = 0

    def at(self, site: str, detail: str = "") -> str | None:
        if site == SITE_SCHEDULE_DELIVER and self.rng.random() < 0.5:
            self.failed += 1
            return FAIL
        return None


def test_handle_put_result_task():
    """Mirrors ScheduleMessageServiceTest.testHandlePutResultTask (rocketmq-all-4.9.8): with asynchronous delivery
    and about half the puts failing, every level's pending table drains and its offset reaches the message count.

    Three short levels instead of the 18 default ones keep the virtual run short; the Java test's exceptional
    completions are modelled by failed put results (an exception thrown inside a resend is #13 item 5)."""
    faults = _FailHalfTheDeliveries(7)
    config = MessageStoreConfig(era="4.9.8", message_delay_level="1s 2s 3s", enable_schedule_async_deliver=True,
                                mapped_file_size_commit_log=1024 * 1024, mapped_file_size_consume_queue=20 * 400)
    h = BrokerHarness(store_config=config, faults=faults)
    h.broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 4)
    msg_num = 100
    for level in (1, 2, 3):
        for n in range(msg_num):
            h.send(topic=TOPIC, key=f"L{level}-{n}", **{PROPERTY_DELAY_TIME_LEVEL: str(level)})
    h.run_for(60_000)
    service = h.broker.schedule_message_service
    assert faults.failed > 50
    for level in (1, 2, 3):
        assert len(service.put_result_tasks[level].pending) == 0
        assert service.offset_table[level] == msg_num
    delivered = h.broker.message_store.get_message("G", TOPIC, 0, 0, 1000).messages
    assert len({m.uniq_key for m in delivered}) == 3 * msg_num


class _FailAndThrow:
    """#13 item 5's repro: 20 % of the due puts fail and 20 % of the rebuilds (messageTimeup) throw."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def at(self, site: str, detail: str = "") -> str | None:
        if site in (SITE_SCHEDULE_DELIVER, SITE_SCHEDULE_REBUILD) and self.rng.random() < 0.2:
            return FAIL
        return None


@pytest.mark.parametrize("era", ["4.9.8", "5.3.3"])
def test_handle_put_result_task_with_exceptions(era):
    """Mirrors ScheduleMessageServiceTest.testHandlePutResultTask (rocketmq-all-4.9.8) with the exceptional
    completions kept as exceptions: puts fail and rebuilds throw, and still every level's task gets through its
    queue (4.9.8 retries a unit whose rebuild throws, 5.3.3 skips it)."""
    config = MessageStoreConfig(era=era, message_delay_level="1s 2s", enable_schedule_async_deliver=True,
                                mapped_file_size_commit_log=1024 * 1024, mapped_file_size_consume_queue=20 * 400)
    h = BrokerHarness(store_config=config, faults=_FailAndThrow(11))
    h.broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 4)
    msg_num = 200
    for n in range(2 * msg_num):
        level = 1 + n % 2
        h.send(topic=TOPIC, key=f"L{level}-{n}", **{PROPERTY_DELAY_TIME_LEVEL: str(level)})
    h.run_for(120_000)
    service = h.broker.schedule_message_service
    for level in (1, 2):
        assert len(service.put_result_tasks[level].pending) == 0
        assert service.tasks[level].offset == msg_num  # every level's task is past every unit
        if era == "4.9.8":
            assert service.offset_table[level] == msg_num
        else:
            # 5.3.3 (ScheduleMessageService.executeOnTimeUp): nextOffset = currOffset + 1 before messageTimeUp, so a
            # unit whose rebuild throws is skipped (its message lost), and updateOffset runs only for a unit not
            # yet due, a sync success or an async head's SUCCESS: with seed 11 the last unit of both levels
            # throws, and the offset table stays at it until a later unit arrives (measured against the tag)
            assert service.offset_table[level] == msg_num - 1

