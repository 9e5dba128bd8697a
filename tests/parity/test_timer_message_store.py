"""Parity with RocketMQ's TimerMessageStoreTest (store/src/test/.../timer, rocketmq-all-5.3.3; 4.9.8 has no timer
wheel), on the real broker with a small wheel and a manual clock instead of sleeping threads and awaitility."""

from __future__ import annotations

from store.message import MessageExt
from store.put_status import PutMessageResult, PutMessageStatus
from store.timer.timer_message_store import build_delete_key

from ..store.timer.helpers import TIMER_STORE, TimerHarness

PRECISION_MS = 1000


def _now_floor(h: TimerHarness) -> int:
    return h.clock.now_ms() // PRECISION_MS * PRECISION_MS


def _timer_msg(h: TimerHarness, topic: str, key: str, delay_ms: int, relative: bool, **props) -> MessageExt:
    """buildMessage: TIMER_DELAY_SEC when relative, else the absolute TIMER_DELIVER_MS; queue 0."""
    timer = {"TIMER_DELAY_SEC": str(delay_ms // 1000)} if relative else {"TIMER_DELIVER_MS": str(delay_ms)}
    return MessageExt(topic=topic, queue_id=0, body=b"timer message",
                      properties={"UNIQ_KEY": key, "TAGS": key, "KEYS": "timer", **timer, **props},
                      born_timestamp=h.clock.now_ms())


def _put(h: TimerHarness, msg: MessageExt) -> str:
    return h.broker.message_store.put_message(msg).status


def _one_message(h: TimerHarness, topic: str, offset: int) -> MessageExt | None:
    got = h.broker.message_store.get_message("TimerGroup", topic, 0, offset, 1).messages
    return got[0] if got else None


def test_put_timer_message():
    """Mirrors TimerMessageStoreTest.testPutTimerMessage (rocketmq-all-5.3.3): 10 topics x 5 messages, half with a
    relative 3 s delay, half at an absolute time 3 s ahead, are all enqueued within 2 s and all delivered within
    4 s. (The TimerMetrics timing counts it also checks are not modelled.)"""
    h = TimerHarness()
    delay_ms = _now_floor(h) + 3000
    for i in range(10):
        for j in range(5):
            relative = i % 2 == 0
            msg = _timer_msg(h, f"TimerTest{i}", f"k{i}-{j}", 3000 if relative else delay_ms, relative)
            assert _put(h, msg) == PutMessageStatus.PUT_OK
    assert h.drive(2000, stop=lambda: h.timer.commit_queue_offset == 50)
    h.drive(4000)
    for i in range(10):
        for j in range(5):
            msg = _one_message(h, f"TimerTest{i}", j)
            assert msg is not None and msg.topic == f"TimerTest{i}"


def test_put_expired_timer_message():
    """Mirrors TimerMessageStoreTest.testPutExpiredTimerMessage (rocketmq-all-5.3.3): a deliver time already past
    is stored in the real topic at once."""
    h = TimerHarness()
    past = h.clock.now_ms() - 2 * PRECISION_MS
    for i in range(10):
        assert _put(h, _timer_msg(h, "TimerTest_expired", f"e{i}", past, False)) == PutMessageStatus.PUT_OK
    h.drive(1)
    for i in range(10):
        assert _one_message(h, "TimerTest_expired", i) is not None


def test_delete_timer_message():
    """Mirrors TimerMessageStoreTest.testDeleteTimerMessage (rocketmq-all-5.3.3): a delete marker for the first of
    five messages recalls it; four are delivered and queue offset 4 stays empty."""
    h = TimerHarness()
    topic = "TimerTest_delete"
    delay_ms = _now_floor(h) + 1000
    for i in range(5):
        assert _put(h, _timer_msg(h, topic, f"d{i}", delay_ms, False)) == PutMessageStatus.PUT_OK
    marker = _timer_msg(h, topic, "marker", delay_ms, False, TIMER_DEL_UNIQKEY=build_delete_key(topic, "d0"))
    assert _put(h, marker) == PutMessageStatus.PUT_OK
    h.drive(3000)
    first = _one_message(h, topic, 0)
    assert first is not None and first.uniq_key != "d0"
    assert _one_message(h, topic, 4) is None
    assert sorted(m.uniq_key for m in h.broker.message_store.get_message("G", topic, 0, 0, 10).messages) == [
        "d1", "d2", "d3", "d4"]


def test_delete_timer_message_uk_collision():
    """Mirrors TimerMessageStoreTest.testDeleteTimerMessage_ukCollision (rocketmq-all-5.3.3): a delete key names
    topic and uniq key; a marker for the same uniq key under another topic deletes nothing."""
    h = TimerHarness()
    topic, collision_topic = "TimerTest_delete", "TimerTest_delete_collision"
    delay_ms = _now_floor(h) + 1000
    assert _put(h, _timer_msg(h, topic, "first", delay_ms, False)) == PutMessageStatus.PUT_OK
    assert _put(h, _timer_msg(h, topic, "second", delay_ms, False)) == PutMessageStatus.PUT_OK
    for key in (build_delete_key(topic, "first"), build_delete_key(collision_topic, "second")):
        marker = _timer_msg(h, "whatever", f"m-{key}", delay_ms, False, TIMER_DEL_UNIQKEY=key)
        assert _put(h, marker) == PutMessageStatus.PUT_OK
    h.drive(3000)
    msg = _one_message(h, topic, 0)
    assert msg is not None and msg.uniq_key == "second"
    assert _one_message(h, topic, 1) is None


def test_put_delete_timer_message():
    """Mirrors TimerMessageStoreTest.testPutDeleteTimerMessage (rocketmq-all-5.3.3): a marker whose key matches
    nothing deletes nothing and is never delivered; an expired delete marker is WHEEL_TIMER_MSG_ILLEGAL."""
    h = TimerHarness()
    topic = "TimerTest_putDelete"
    delay_ms = _now_floor(h) + 1000
    for i in range(5):
        assert _put(h, _timer_msg(h, topic, f"p{i}", delay_ms, False)) == PutMessageStatus.PUT_OK
    assert _put(h, _timer_msg(h, topic, "marker", delay_ms, False, TIMER_DEL_UNIQKEY="XXX")) == PutMessageStatus.PUT_OK
    h.drive(3000)
    assert h.timer.curr_read_time_ms >= delay_ms
    for i in range(5):
        assert _one_message(h, topic, i) is not None
    assert _one_message(h, topic, 5) is None
    expired = _timer_msg(h, topic, "expired", h.clock.now_ms() - 100, False, TIMER_DEL_UNIQKEY="XXX")
    assert _put(h, expired) == PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL


def test_max_delay_sec():
    """Mirrors TimerMessageStoreTest.testMaxDelaySec (rocketmq-all-5.3.3): more than timerMaxDelaySec ahead is
    WHEEL_TIMER_MSG_ILLEGAL, absolute or relative."""
    h = TimerHarness()
    delay_sec = TIMER_STORE.timer_max_delay_sec + 20
    absolute = _timer_msg(h, "TimerTest_max", "a", _now_floor(h) + delay_sec * 1000, False)
    assert _put(h, absolute) == PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    relative = _timer_msg(h, "TimerTest_max", "r", delay_sec * 1000, True)
    assert _put(h, relative) == PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL


def test_roll_message():
    """Mirrors TimerMessageStoreTest.testRollMessage (rocketmq-all-5.3.3): with a roll window of 2 slots a message
    4 precisions ahead is rolled once and delivered with TIMER_ROLL_TIMES=1."""
    h = TimerHarness(store_config=TIMER_STORE.with_(timer_roll_window_slot=2))
    msg = _timer_msg(h, "TimerTest_roll", "roll", _now_floor(h) + 4 * PRECISION_MS, False)
    assert _put(h, msg) == PutMessageStatus.PUT_OK
    h.drive(5000)
    got = _one_message(h, "TimerTest_roll", 0)
    assert got is not None
    assert int(got.properties["TIMER_ROLL_TIMES"]) == 1


def test_state_and_recover():
    """Mirrors TimerMessageStoreTest.testStateAndRecover (rocketmq-all-5.3.3): 250 messages enqueued; the slot's
    ends are damaged in the wheel file before a shutdown; the next store recovers the queue offset and read
    time from the checkpoint and the timer log, and delivers all 250."""
    h = TimerHarness()
    msg_num = 250
    delay_ms = _now_floor(h) + 5000
    topic = "TimerTest_testStateAndRecover"
    for i in range(msg_num):
        relative = i % 2 == 0
        msg = _timer_msg(h, topic, f"s{i}", 5000 if relative else delay_ms, relative)
        assert _put(h, msg) == PutMessageStatus.PUT_OK
    first = h.timer
    assert h.drive(5000, stop=lambda: first.commit_queue_offset == msg_num
                   and first.curr_read_time_ms >= _now_floor(h))
    assert len(first.timer_log.mfq.mapped_files) >= msg_num // (TIMER_STORE.mapped_file_size_timer_log // 52)
    assert first.curr_queue_offset == msg_num and first.commit_queue_offset == first.curr_queue_offset
    assert first.commit_read_time_ms == first.curr_read_time_ms <= _now_floor(h) + PRECISION_MS
    first.timer_log.flush(0)
    slot = first.timer_wheel.get_slot(delay_ms - PRECISION_MS)
    assert slot.time_ms != -1
    first.timer_wheel.put_slot(slot.time_ms, -1, (1 << 63) - 1, slot.num, slot.magic)  # damage the wheel
    first.timer_wheel.flush()
    commit_read_time_ms = first.commit_read_time_ms
    h.broker.shutdown()
    second = TimerHarness(disk=h.disk, clock=h.clock)
    assert second.timer.curr_queue_offset == msg_num
    assert second.timer.commit_queue_offset == second.timer.curr_queue_offset
    assert second.timer.curr_read_time_ms == second.timer.commit_read_time_ms == commit_read_time_ms
    second.drive(30_000)
    for i in range(msg_num):
        assert _one_message(second, topic, i) is not None


def test_timer_flow_control():
    """Mirrors TimerMessageStoreTest.testTimerFlowControl (rocketmq-all-5.3.3): 500 messages into one slot with
    timerCongestNumEachSlot 100: below 100 every put passes; above it some pass (0 < passed < 120) and the slot
    never holds more than 220."""
    h = TimerHarness(store_config=TIMER_STORE.with_(timer_congest_num_each_slot=100))
    delay_ms = _now_floor(h) + 100_000
    passed_flow_control = 0
    for i in range(500):
        status = _put(h, _timer_msg(h, "TimerTest_flow", f"f{i}", delay_ms, False))
        h.drive(5)  # "wait reput": the enqueue counts it in the slot
        congest = h.timer.timer_wheel.get_num(delay_ms - PRECISION_MS)
        assert congest <= 220
        if congest < 100:
            assert status == PutMessageStatus.PUT_OK
        else:
            assert status in (PutMessageStatus.PUT_OK, PutMessageStatus.WHEEL_TIMER_FLOW_CONTROL)
            if status == PutMessageStatus.PUT_OK:
                passed_flow_control += 1
    assert 0 < passed_flow_control < 120


def test_retry_until_success():
    """Mirrors TimerMessageStoreTest.testRetryUntilSuccess (rocketmq-all-5.3.3): with timerEnableRetryUntilSuccess
    a due message whose put answers FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, OS_PAGE_CACHE_BUSY twice and
    UNKNOWN_ERROR is put a sixth time, successfully, and the dequeue-put queue drains."""
    h = TimerHarness(store_config=TIMER_STORE.with_(timer_enable_retry_until_success=True))
    answers = [PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
               PutMessageStatus.OS_PAGE_CACHE_BUSY, PutMessageStatus.OS_PAGE_CACHE_BUSY,
               PutMessageStatus.UNKNOWN_ERROR]
    puts = []

    def store_answers(msg: MessageExt) -> PutMessageResult | None:
        if msg.topic != "TestRetry":
            return None
        puts.append(msg.uniq_key)
        return PutMessageResult(answers.pop(0)) if answers else None

    msg = _timer_msg(h, "TestRetry", "retry", 3000, True)
    assert _put(h, msg) == PutMessageStatus.PUT_OK  # into the timer topic
    h.broker.message_store.put_hooks.insert(0, store_answers)  # now the store answers the due put (Java mocks)
    h.drive(15_000)
    assert puts == ["retry"] * 6
    assert not h.timer.dequeue_put_queue
    assert _one_message(h, "TestRetry", 0).uniq_key == "retry"
