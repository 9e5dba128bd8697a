"""Each timer mutant (store/mutants.py) changes an outcome the clean broker gets right."""

from __future__ import annotations

import random

from store.clock import ManualClock
from store.faults import SITE_TIMER_DEQUEUE_PUT

from .helpers import TIMER_STORE, FailAsks, FailN, TimerHarness

T0 = 1_700_000_000_000


def keys(h: TimerHarness) -> list[str]:
    return sorted(m.uniq_key for m in h.real_copies())


def test_no_queue_offset_clamp_7480_loses_new_timer_messages_after_the_consume_queue_shrank():
    def run(mutants):
        h = TimerHarness(mutants=mutants)
        h.drive(1200)
        for n in range(5):
            h.send_timer(f"old{n}", delay_ms=9 * 60_000)
        h.drive(1000)  # enqueued at 1300; the timer flush at 2000 persists masterTimerQueueOffset = 5
        assert h.timer.commit_queue_offset == 5
        h.disk.power_failure(random.Random(1))  # the commit log (async flush) never reached the disk
        again = TimerHarness(disk=h.disk, clock=h.clock, mutants=mutants)
        assert again.broker.message_store.get_max_offset_in_queue("rmq_sys_wheel_timer", 0) == 0
        for n in range(3):
            again.send_timer(f"new{n}", delay_ms=2000)
        again.drive(5000)
        return again

    clean = run(frozenset())
    assert clean.timer.curr_queue_offset == 3  # clamped to the consume queue's max (0) at recovery
    assert keys(clean) == ["new0", "new1", "new2"]
    mutant = run(frozenset({"timer_no_queue_offset_clamp"}))
    assert mutant.timer.curr_queue_offset == 5  # still waiting for offset 5: offsets 0-4 are never enqueued
    assert keys(mutant) == []


def test_drop_after_first_failure_loses_a_message_the_clean_broker_retries():
    for mutants, expected in ((frozenset(), ["a"]), (frozenset({"timer_drop_after_first_failure"}), [])):
        h = TimerHarness(mutants=mutants, faults=FailN(SITE_TIMER_DEQUEUE_PUT, 1))
        h.send_timer("a", delay_ms=1500)
        h.drive(4000)
        assert keys(h) == expected


def test_read_time_early_loses_the_rest_of_the_slot_after_a_crash():
    def run(mutants):
        config = TIMER_STORE.with_(timer_enable_retry_until_success=True)
        # Put #1 ("a") fails, #2 ("b", by another worker) succeeds, "a"'s retries every 500 ms fail for 2 s.
        h = TimerHarness(store_config=config, clock=ManualClock(T0 + 500), mutants=mutants,
                         faults=FailAsks(SITE_TIMER_DEQUEUE_PUT, {1, 3, 4, 5}))
        h.send_timer("a", delay_ms=1600)
        h.send_timer("b", delay_ms=1600)  # same slot; another worker delivers it at once
        assert h.drive(5000, stop=lambda: any(d[0] == "b" and d[2] == "PUT_OK" for d in h.deliveries))
        h.drive(1500)  # a checkpoint flush happens while "a" is still being retried
        assert [d[2] for d in h.deliveries if d[0] == "a"] == ["OS_PAGE_CACHE_BUSY"] * 4
        again = TimerHarness(disk=h.disk, clock=h.clock, mutants=mutants, store_config=config)  # kill -9
        again.drive(3000)
        return sorted(m.uniq_key for m in again.real_copies())

    assert run(frozenset()) == ["a", "b", "b"]  # the unfinished slot is done again (b twice)
    assert run(frozenset({"timer_read_time_early"})) == ["b"]  # the slot was already "read": a is lost
