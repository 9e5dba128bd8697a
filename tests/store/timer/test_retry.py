"""Dequeue put results (5.3.3 classification and retries) and the enqueue batch redo (#6984)."""

from __future__ import annotations

from store.faults import SITE_TIMER_DEQUEUE_PUT, SITE_TIMER_LOG_APPEND
from store.message import message_properties_to_string

from .helpers import TIMER_STORE, TOPIC, FailAsks, FailN, TimerHarness


def statuses(h: TimerHarness, key: str) -> list[tuple[str, int]]:
    return [(status, at) for k, _due, status, at, _t, _q in h.deliveries if k == key]


def test_need_retry_is_retried_every_500_ms_and_given_up_after_3_attempts():
    h = TimerHarness(faults=FailN(SITE_TIMER_DEQUEUE_PUT, 2))
    h.send_timer("a", delay_ms=1500)
    h.drive(5000)
    attempts = statuses(h, "a")
    assert [s for s, _ in attempts] == ["OS_PAGE_CACHE_BUSY", "OS_PAGE_CACHE_BUSY", "PUT_OK"]
    assert [b - a for (_, a), (_, b) in zip(attempts, attempts[1:], strict=False)] == [500, 500]
    assert [m.uniq_key for m in h.real_copies()] == ["a"]

    lost = TimerHarness(faults=FailN(SITE_TIMER_DEQUEUE_PUT, 3))
    lost.send_timer("a", delay_ms=1500)
    lost.drive(5000)
    assert [s for s, _ in statuses(lost, "a")] == ["OS_PAGE_CACHE_BUSY"] * 3
    assert lost.real_copies() == []  # the message is lost (5.3.2+ without timerEnableRetryUntilSuccess)
    assert any("failed after 3 retries" in line for line in lost.logs)


def test_retry_until_success_keeps_trying():
    h = TimerHarness(store_config=TIMER_STORE.with_(timer_enable_retry_until_success=True),
                     faults=FailN(SITE_TIMER_DEQUEUE_PUT, 7))
    h.send_timer("a", delay_ms=1500)
    h.drive(8000)
    assert [s for s, _ in statuses(h, "a")] == ["OS_PAGE_CACHE_BUSY"] * 7 + ["PUT_OK"]


def test_a_sleeping_worker_does_not_hold_up_the_rest_of_the_slot_but_the_slot_waits_for_it():
    h = TimerHarness(faults=FailN(SITE_TIMER_DEQUEUE_PUT, 1))
    target = h.clock.now_ms() + 2500
    for key in "abc":
        h.send_timer(key, TIMER_DELIVER_MS=str(target))
    h.send_timer("later", TIMER_DELIVER_MS=str(target + 1000))
    h.drive(6000)
    ok = {k: at for k, _d, s, at, _t, _q in h.deliveries if s == "PUT_OK"}
    assert ok["b"] == ok["c"] < ok["a"] == ok["b"] + 500  # b and c by the other workers, a after its sleep
    # The next slot is only read after the whole slot is done, although its time came earlier.
    assert ok["later"] >= ok["a"]


def test_properties_too_large_after_the_timer_properties_is_dropped_without_retry():
    h = TimerHarness()
    in_timer_topic = {"UNIQ_KEY": "big", "TIMER_DELAY_MS": "1500", "FILL": "", "TIMER_OUT_MS": "1" * 13,
                      "REAL_TOPIC": TOPIC, "REAL_QID": "0"}
    # 10 bytes short of the limit in the timer topic; TIMER_ENQUEUE_MS and TIMER_DEQUEUE_MS add 62.
    filler = "x" * (32767 - 10 - len(message_properties_to_string(in_timer_topic)))
    h.send_timer("big", delay_ms=1500, FILL=filler)
    h.drive(4000)
    assert len(h.timer_topic_records()) == 1
    assert [s for s, _ in statuses(h, "big")] == ["PROPERTIES_SIZE_EXCEEDED"]
    assert h.real_copies() == []


def test_a_failed_timer_log_append_redoes_the_whole_batch_and_duplicates_the_written_units():
    h = TimerHarness(faults=FailAsks(SITE_TIMER_LOG_APPEND, {2}))  # "a" is written, "b" fails
    h.drive(250)
    target = h.clock.now_ms() + 5000
    h.send_timer("a", TIMER_DELIVER_MS=str(target))
    h.send_timer("b", TIMER_DELIVER_MS=str(target))
    h.drive(200)
    timer = h.timer
    assert timer.timer_log.mfq.get_max_offset() == 3 * 52  # a, then the redo 50 ms later: a again, b
    # The redo's latch never opens (the requests were already released): checkDequeueLatch gives up ~3 s later.
    assert timer.commit_queue_offset == 0
    h.drive(3000)
    assert timer.commit_queue_offset == 2
    h.drive(3000)
    assert sorted(m.uniq_key for m in h.real_copies()) == ["a", "a", "b"]  # #6984: "a" is delivered twice
