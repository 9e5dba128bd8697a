"""ScheduleMessageService against the tags (issue 13: items 4, 5, 9, 16): correctDelayOffset with a missing
queue, the persist's first delay, and PutResultProcess.doResend (exceptions, back-off, SKIP threshold)."""

from __future__ import annotations

import pytest

from store.commit_log import SCHEDULE_TOPIC
from store.fastjson import loads
from store.faults import FAIL, SITE_SCHEDULE_DELIVER, SITE_SCHEDULE_REBUILD
from store.message import PROPERTY_DELAY_TIME_LEVEL

from .broker_harness import SMALL_STORE, BrokerHarness

ERA_4 = SMALL_STORE.with_(era="4.9.8")
ASYNC = SMALL_STORE.with_(enable_schedule_async_deliver=True)


def delivered_keys(h: BrokerHarness) -> list[str]:
    return [m.properties["UNIQ_KEY"] for m in h.pull("G", "TopicTest", 0, 0).msg_found_list]


def new_topic(h: BrokerHarness) -> None:
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 4)


class Script:
    """Answers FAIL to the n-th asks (1-based) of each site; records when every ask came (driver ms)."""

    def __init__(self, fail_at: dict[str, list[int]]):
        self.fail_at = {site: set(ns) for site, ns in fail_at.items()}
        self.asks: dict[str, int] = {}
        self.when: dict[str, list[int]] = {}
        self.harness: BrokerHarness | None = None

    def at(self, site, detail=""):
        n = self.asks[site] = self.asks.get(site, 0) + 1
        self.when.setdefault(site, []).append(self.harness.mono_ms if self.harness else -1)
        return FAIL if n in self.fail_at.get(site, ()) else None


def harness_with(script: Script, **kwargs) -> BrokerHarness:
    h = BrokerHarness(faults=script, **kwargs)
    script.harness = h
    return h


# --- item 4: correctDelayOffset finds or creates each level's queue ----------------------------------------
def _restart_with_offsets(h: BrokerHarness, table: bytes, mutants=frozenset()) -> BrokerHarness:
    h.broker.shutdown()
    h.disk.write_file("config/delayOffset.json", table)
    return BrokerHarness(disk=h.disk, clock=h.clock, mutants=mutants)


def test_an_offset_for_a_level_without_a_queue_is_clamped_to_0_and_its_queue_created():
    """RocketMQ 4.9.8 findConsumeQueue / 5.3.3 findOrCreateConsumeQueue in correctDelayOffset: a stored offset
    for a level whose queue is gone (a lost directory, a rolled-back store) is clamped to the new queue's 0."""
    h = BrokerHarness()
    new_topic(h)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(3000)
    assert h.broker.message_store.get_consume_queue(SCHEDULE_TOPIC, 1) is None  # level 2 never had a message
    again = _restart_with_offsets(h, b'{"offsetTable":{1:1,2:7,25:9}}')
    svc = again.broker.schedule_message_service
    assert svc.offset_table[2] == 0
    assert again.broker.message_store.get_consume_queue(SCHEDULE_TOPIC, 1) is not None
    assert svc.offset_table[25] == 9  # a level only in the file is ignored, not corrected
    # The level-2 messages stored after the restart are all delivered (the stale 7 would have skipped them).
    new_topic(again)
    for key in "bcd":
        again.send(key=key, **{PROPERTY_DELAY_TIME_LEVEL: "2"})
    again.run_for(8000)
    assert delivered_keys(again) == ["a", "b", "c", "d"]


def test_the_mutant_skips_the_missing_queue_and_loses_the_messages_below_the_stale_offset():
    h = BrokerHarness()
    new_topic(h)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(3000)
    again = _restart_with_offsets(h, b'{"offsetTable":{1:1,2:7}}', mutants={"correct_delay_offset_skips_missing_cq"})
    assert again.broker.schedule_message_service.offset_table[2] == 7
    new_topic(again)
    for key in "bcd":
        again.send(key=key, **{PROPERTY_DELAY_TIME_LEVEL: "2"})
    again.run_for(8000)
    assert delivered_keys(again) == ["a"]  # the running task reset 7 to the queue's max (3), passing b, c and d


# --- item 9: the delay-offset persist runs first 10 s after start ------------------------------------------
@pytest.mark.parametrize("interval_ms,expected_ms", [(1000, [10_000, 11_000, 12_000]), (30_000, [10_000, 40_000])])
@pytest.mark.parametrize("store_config", [SMALL_STORE, ERA_4], ids=["5.3.3", "4.9.8"])
def test_the_first_persist_is_10s_after_start_and_then_every_interval(store_config, interval_ms, expected_ms):
    """scheduleAtFixedRate(persist, 10000, flushDelayOffsetInterval) at both tags."""
    h = BrokerHarness(store_config=store_config.with_(flush_delay_offset_interval_ms=interval_ms))
    persisted: list[int] = []
    h.broker.schedule_message_service.persist_listeners.append(lambda _name, _rounds: persisted.append(h.mono_ms))
    h.run_for(expected_ms[-1])
    assert persisted == expected_ms


# --- item 5 / 16: PutResultProcess.doResend ----------------------------------------------------------------
@pytest.mark.parametrize("store_config", [ASYNC, ERA_4.with_(enable_schedule_async_deliver=True)],
                         ids=["5.3.3", "4.9.8"])
def test_an_exception_while_rebuilding_a_resend_is_caught_and_the_head_resent(store_config):
    """The first put fails; rebuilding the message for its first resend (the 3rd rebuild) throws (doResend catches it, the head
    stays EXCEPTION) and the next resend delivers it: nothing escapes the handler, nothing is lost."""
    script = Script({SITE_SCHEDULE_DELIVER: [1], SITE_SCHEDULE_REBUILD: [3]})
    h = harness_with(script, store_config=store_config)
    new_topic(h)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(3000)
    assert sorted(delivered_keys(h)) == ["a", "b"]
    assert h.broker.schedule_message_service.offset_table[1] == 2
    assert any("Resend message error" in line for line in h.logs)


def test_the_escaping_exception_mutant_kills_the_levels_handler():
    script = Script({SITE_SCHEDULE_DELIVER: [1], SITE_SCHEDULE_REBUILD: [3]})
    h = harness_with(script, store_config=ASYNC, mutants={"resend_exception_escapes"})
    new_topic(h)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(5000)
    assert delivered_keys(h) == ["b"]
    assert h.broker.schedule_message_service.offset_table.get(1, 0) == 0


@pytest.mark.parametrize("store_config,sleeps", [(ASYNC, [100, 200, 300]),
                                                 (ERA_4.with_(enable_schedule_async_deliver=True), [0, 100, 200])],
                         ids=["5.3.3", "4.9.8"])
def test_a_failed_resend_sleeps_again_at_once(store_config, sleeps):
    """After a failed resend the handler loops on the head at once: the next doResend's sleep starts right away
    (5.x sleeps ++count x 100 ms, 4.9.8 count++ x 100 ms), not after another 10 ms round of the task."""
    script = Script({SITE_SCHEDULE_DELIVER: [1, 2, 3]})
    h = harness_with(script, store_config=store_config)
    new_topic(h)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(3000)
    first, *resends = script.when[SITE_SCHEDULE_DELIVER][:4]
    gaps = [b - a for a, b in zip([first, *resends], resends, strict=False)]
    assert gaps == sleeps
    assert delivered_keys(h) == ["a"]


def test_a_missing_message_is_skipped_after_twice_the_block_threshold():
    """need2Skip: resendCount > 2 x scheduleAsyncDeliverMaxResendNum2Blocked (here 1, so after 3 resends)."""
    config = ASYNC.with_(schedule_async_deliver_max_resend_num_2_blocked=1)
    script = Script({SITE_SCHEDULE_DELIVER: [1]})
    h = harness_with(script, store_config=config)
    new_topic(h)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.send(key="b", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    h.run_for(1)
    cq = h.broker.message_store.get_consume_queue(SCHEDULE_TOPIC, 0)
    phy_a, _size, _tags = cq.get_unit(0)
    h.run_for(1000)  # both put at 1000 ms; "a" failed
    mf = h.broker.message_store.commit_log.mfq.find_mapped_file_by_offset(phy_a)
    mf.handle.write(phy_a % mf.file_size + 4, b"\0\0\0\0")  # "a" can no longer be read
    svc = h.broker.schedule_message_service
    h.run_for(350)  # resends at +100 and +300 (count 1, 2): not found, still EXCEPTION
    assert svc.put_result_tasks[1].pending[0].status == "EXCEPTION"
    h.run_for(400)  # the third resend (count 3 > 2): SKIP, and the level's offset moves past both
    assert not svc.put_result_tasks[1].pending and svc.offset_table[1] == 2
    assert delivered_keys(h) == ["b"]


# --- item 13: shutdown order ---------------------------------------------------------------------------------
def _shutdown_order(store_config) -> list[str]:
    h = BrokerHarness(store_config=store_config)
    new_topic(h)
    h.run_for(2000)
    order: list[str] = []
    b = h.broker
    for manager in (b.schedule_message_service, b.topic_config_manager, b.subscription_group_manager,
                    b.consumer_offset_manager):
        manager.persist_listeners.append(lambda name, _rounds: order.append(name))
    store_shutdown = b.message_store.shutdown
    b.message_store.shutdown = lambda: (order.append("message store"), store_shutdown())
    if b.timer_message_store is not None:
        timer_shutdown = b.timer_message_store.shutdown
        b.timer_message_store.shutdown = lambda: (order.append("timer store"), timer_shutdown())
    b.shutdown()
    return order


def test_5_3_3_shutdown_order():
    """BrokerController.shutdownBasicService (5.3.3): timer store, message store, scheduleMessageService.persist()
    then shutdown() (stop() persists again), then topics, subscription groups and consumer offsets."""
    assert _shutdown_order(SMALL_STORE) == ["timer store", "message store", "delayOffset.json", "delayOffset.json",
                                            "topics.json", "subscriptionGroup.json", "consumerOffset.json"]


def test_4_9_8_shutdown_order():
    """DefaultMessageStore.shutdown (4.9.8) stops the schedule service first; BrokerController.shutdown then
    persists consumer offsets only (topics and groups are persisted when they change)."""
    assert _shutdown_order(ERA_4) == ["delayOffset.json", "message store", "consumerOffset.json"]


@pytest.mark.parametrize("store_config,offset_after", [(ERA_4.with_(enable_schedule_async_deliver=True), 1),
                                                       (ASYNC, 0)], ids=["4.9.8", "5.3.3"])
def test_a_head_asleep_in_its_resend_at_shutdown_is_resent_before_the_persist(store_config, offset_after):
    """stop() awaits the handle executor (5 s), whose already scheduled task still runs: a head asleep in doResend
    is resent when its sleep ends. 4.9.8 stops the schedule service before the message store, so the resend
    succeeds and delayOffset.json is persisted past it; 5.3.3 stops the message store first, so the resend fails
    and the file keeps the head (its unit comes again after the restart)."""
    script = Script({SITE_SCHEDULE_DELIVER: [1, 2, 3]})
    h = harness_with(script, store_config=store_config)
    new_topic(h)
    h.send(key="a", **{PROPERTY_DELAY_TIME_LEVEL: "1"})
    while len(script.when.get(SITE_SCHEDULE_DELIVER, ())) < 3:
        h.run_for(10)
    h.run_for(10)  # the head now sleeps before its third resend
    assert h.broker.schedule_message_service.put_result_tasks[1].pending[0].status == "EXCEPTION"
    h.broker.shutdown()
    assert len(script.when[SITE_SCHEDULE_DELIVER]) == 4  # the resend ran within stop()
    table = loads(h.disk.read_file("config/delayOffset.json").decode())["offsetTable"]
    assert table.get(1, 0) == offset_after
