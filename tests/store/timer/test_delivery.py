"""Timer messages through the real broker: due times, rolls, properties, polling and idle skipping."""

from __future__ import annotations

import random

import pytest

from store.faults import SITE_TIMER_DEQUEUE_PUT
from store.message import PROPERTY_TIMER_OUT_MS, string_to_message_properties
from store.topic_config import TIMER_TOPIC

from .helpers import TIMER_STORE, TOPIC, FailN, TimerHarness, ceil_to

PUT_POLL_MS, BATCH_WAIT_MS = 10, 3  # enqueue-put: first poll(10 ms), then poll(3 ms) per further request


def lateness_bound_ms(precision_ms: int) -> int:
    """Write time moves at the enqueue put's next 10 ms poll, the dequeue sees it at its next poll."""
    return PUT_POLL_MS + max(1, 100 * precision_ms // 1000)


@pytest.mark.parametrize("precision_ms", [1000, 100])
def test_never_before_ceil_of_the_target_and_on_time_after_it(precision_ms):
    rng = random.Random(precision_ms)
    h = TimerHarness(store_config=TIMER_STORE.with_(timer_precision_ms=precision_ms))
    sent = {}  # key -> (send wall time, target)
    for n in range(40):
        h.drive(rng.randrange(1, 700))
        delay = rng.choice([rng.randrange(1, 3 * precision_ms), rng.randrange(1, 30_000), precision_ms,
                            2 * precision_ms, 5000])
        now = h.clock.now_ms()
        key = f"m{n}"
        kind = rng.choice(["ms", "sec", "deliver"])
        if kind == "sec":
            delay = delay // 1000 * 1000 + 1000
            assert h.send_timer(key, TIMER_DELAY_SEC=str(delay // 1000)) == "SEND_OK"
        elif kind == "deliver":
            assert h.send_timer(key, TIMER_DELIVER_MS=str(now + delay)) == "SEND_OK"
        else:
            assert h.send_timer(key, delay_ms=delay) == "SEND_OK"
        sent[key] = (now, now + delay)
    h.drive(40_000)
    copies = {m.uniq_key: m for m in h.real_copies()}
    assert sorted(copies) == sorted(sent)
    for key, msg in copies.items():
        send_ms, target = sent[key]
        due = ceil_to(target, precision_ms)
        assert msg.store_timestamp >= due, (key, msg.store_timestamp - due)
        # Enqueued within the enqueue-get poll (+ the batch wait) after the send; delivered one poll after due.
        earliest_possible = max(due, send_ms + 1 + max(1, 100 * precision_ms // 1000) + BATCH_WAIT_MS)
        assert msg.store_timestamp <= earliest_possible + lateness_bound_ms(precision_ms), (key, msg.store_timestamp
                                                                                             - due)
    assert len(h.deliveries) == len(copies)  # one put each, all PUT_OK, no duplicates
    for key, due_ms, status, at, topic, _qid in h.deliveries:
        assert status == "PUT_OK" and topic == TOPIC
        assert due_ms == ceil_to(sent[key][1], precision_ms) and at >= due_ms


def test_the_delivered_message_and_its_properties():
    h = TimerHarness()
    h.drive(300)
    t0 = h.clock.now_ms()
    h.send_timer("a", delay_ms=2000, queue_id=3, TAGS="TagA")
    h.drive(1)
    (timer_copy,) = h.timer_topic_records()
    assert (timer_copy.topic, timer_copy.queue_id) == (TIMER_TOPIC, 0)
    assert timer_copy.properties[PROPERTY_TIMER_OUT_MS] == str(ceil_to(t0 + 2000, 1000) - 1000)
    h.drive(3000)
    (msg,) = h.real_copies()
    assert (msg.topic, msg.queue_id, msg.tags_code) == (TOPIC, 3, timer_copy.tags_code)
    props = msg.properties
    # REAL_TOPIC/REAL_QID leave the map only after the property string was built: still on disk (1.2).
    assert (props["REAL_TOPIC"], props["REAL_QID"]) == (TOPIC, "3")
    assert props["TIMER_ENQUEUE_MS"] == str(h.timer.format_time_ms(t0))  # the write time of the unit
    assert t0 + 2000 <= int(props["TIMER_DEQUEUE_MS"]) == msg.store_timestamp
    assert "WAIT" not in props  # setWaitStoreMsgOK(false) touches the map after the string was built
    assert "TIMER_ROLL_TIMES" not in props and props["TIMER_DELAY_MS"] == "2000" and props["TAGS"] == "TagA"


def test_a_message_due_before_it_is_enqueued_skips_the_timer_log():
    h = TimerHarness()
    h.drive(950)
    h.send_timer("soon", delay_ms=1500)
    h.broker.shutdown()  # before the enqueue got to it
    h.clock.advance(5000)
    restart_ms = h.clock.now_ms()
    again = TimerHarness(disk=h.disk, clock=h.clock)
    again.drive(500)
    (msg,) = again.real_copies()
    assert msg.properties["TIMER_ENQUEUE_MS"] == str((1 << 63) - 1)  # "never enqueued": straight to the put
    assert again.timer.timer_log.mfq.get_max_offset() == 0
    assert again.deliveries[0][3] == restart_ms + 3  # the first enqueue poll at start, then the 3 ms batch wait


@pytest.mark.parametrize("delay_s, rolls", [(11, 1), (35, 3), (9, 0)])
def test_delays_beyond_the_roll_window_are_rolled_and_delivered_on_time(delay_s, rolls):
    h = TimerHarness(store_config=TIMER_STORE.with_(timer_roll_window_slot=10))  # a 10 s window
    h.drive(450)
    target = h.clock.now_ms() + delay_s * 1000
    h.send_timer("r", delay_ms=delay_s * 1000)
    h.drive(delay_s * 1000 + 2000)
    (msg,) = h.real_copies()
    due = ceil_to(target, 1000)
    assert due <= msg.store_timestamp <= due + lateness_bound_ms(1000)
    assert msg.properties.get("TIMER_ROLL_TIMES") == (str(rolls) if rolls else None)
    assert len(h.timer_topic_records()) == 1 + rolls  # every roll re-puts the message into the timer topic
    assert [d[0] for d in h.deliveries] == ["r"]  # rolls are not deliveries


def test_roll_landing_rule_half_window_when_the_excess_is_small():
    h = TimerHarness(store_config=TIMER_STORE.with_(timer_roll_window_slot=12))
    h.drive(450)
    write = h.timer.curr_write_time_ms
    h.send_timer("r1", delay_ms=13_000)  # excess 1 s < window/3: lands at write + window/2
    h.send_timer("r2", delay_ms=30_000)  # excess 18 s: lands at write + window
    h.drive(200)
    wheel = h.timer.timer_wheel
    assert wheel.get_slot(write + 6000).num == 1 and wheel.get_slot(write + 12_000).num == 1


def test_idle_skip_and_literal_polling_give_the_same_deliveries_at_the_same_times():
    def run(idle_skip, literal):
        h = TimerHarness(store_config=TIMER_STORE.with_(timer_roll_window_slot=8), idle_skip=idle_skip,
                         literal_put_polls=literal, faults=FailN(SITE_TIMER_DEQUEUE_PUT, 2))
        rng = random.Random(7)
        for n in range(25):
            h.drive(rng.randrange(0, 4000))
            h.send_timer(f"m{n}", delay_ms=rng.choice([rng.randrange(1, 20_000), 0, 999, 1000, 12_345]),
                         queue_id=rng.randrange(4))
        h.drive(40_000)
        return h

    literal, faithful, skipping = run(False, True), run(False, False), run(True, False)
    assert [d[2] for d in literal.deliveries].count("OS_PAGE_CACHE_BUSY") == 2  # two failed puts, retried
    assert sorted(m.uniq_key for m in literal.real_copies()) == sorted(f"m{n}" for n in range(25))
    assert any(key.startswith("m") for key, topic, *_ in literal.stored if topic == TIMER_TOPIC)
    for other in (faithful, skipping):
        assert other.deliveries == literal.deliveries
        assert other.stored == literal.stored
    assert skipping.steps < faithful.steps < literal.steps


def test_the_wheel_only_changes_on_disk_at_the_flush():
    h = TimerHarness()
    h.drive(100)  # the flush at start has run; the next one is at 1000
    before = h.disk.read_file("timerwheel")
    slot_ms = h.timer.format_time_ms(h.clock.now_ms() + 5000)
    h.send_timer("a", delay_ms=5000)
    h.drive(500)
    assert h.timer.timer_wheel.get_slot(slot_ms).num == 1
    assert h.disk.read_file("timerwheel") == before
    h.drive(600)
    assert h.disk.read_file("timerwheel") != before
    stored = string_to_message_properties(h.timer_topic_records()[0].properties_string)
    assert stored["REAL_TOPIC"] == TOPIC


def test_a_delete_marker_in_the_same_slot_recalls_the_message():
    h = TimerHarness()
    target = h.clock.now_ms() + 3500
    h.send_timer("keep", TIMER_DELIVER_MS=str(target))
    h.send_timer("gone", TIMER_DELIVER_MS=str(target))
    h.send_timer("marker", TIMER_DELIVER_MS=str(target), TIMER_DEL_UNIQKEY=f"{TOPIC}+gone")
    h.drive(6000)
    assert [m.uniq_key for m in h.real_copies()] == ["keep"]  # "gone" recalled, the marker itself never put
    assert [d[0] for d in h.deliveries] == ["keep"]
    assert h.timer.timer_wheel.get_slot(ceil_to(target, 1000) - 1000).num == 1  # +1 +1 -1
