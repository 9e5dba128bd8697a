"""Recovery (ROCKETMQ.md 7.6) and the crash windows of 7.7, produced by crashing the real broker."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.clock import ManualClock
from store.config import SYNC_FLUSH
from store.timer.timer_checkpoint import TIMER_CHECKPOINT_FILE, TimerCheckpoint

from .helpers import TIMER_STORE, TimerHarness

T0 = 1_700_000_000_000


def durable_checkpoint(h: TimerHarness) -> TimerCheckpoint:
    return TimerCheckpoint(h.disk, h.clock, TIMER_CHECKPOINT_FILE)


def delivered_ok(h: TimerHarness, key: str) -> bool:
    return any(k == key and status == "PUT_OK" for k, _d, status, *_ in h.deliveries)


def test_after_a_process_crash_the_slots_finished_since_the_last_checkpoint_flush_come_again():
    # Flushes run at wall x.500 (the broker starts half-way into a second); deliveries come at x.000 + polls.
    h = TimerHarness(clock=ManualClock(T0 + 500))
    h.send_timer("early", delay_ms=1600)  # slot T0+2000, delivered at ~T0+3000
    h.send_timer("late", delay_ms=3600)  # slot T0+4000, delivered at ~T0+5000
    assert h.drive(10_000, stop=lambda: delivered_ok(h, "late"))
    cp = durable_checkpoint(h)  # what a crash right now leaves on disk
    assert T0 + 3000 <= cp.last_read_time_ms <= T0 + 4000  # "late"'s slot is not covered by it
    again = TimerHarness(disk=h.disk, clock=h.clock)  # kill -9: the page cache survives
    again.drive(3000)
    assert [d[0] for d in again.deliveries] == ["late"]  # redelivered; "early" (checkpointed) is not
    assert Counter(m.uniq_key for m in again.real_copies()) == {"early": 1, "late": 2}


def test_a_graceful_restart_delivers_no_duplicates():
    h = TimerHarness(clock=ManualClock(T0 + 500))
    for n in range(6):
        h.send_timer(f"m{n}", delay_ms=1000 + 900 * n)
    assert h.drive(20_000, stop=lambda: delivered_ok(h, "m2"))
    h.drive(1)  # finish the millisecond: the slot is marked done right after its last put
    h.broker.shutdown()
    again = TimerHarness(disk=h.disk, clock=h.clock)
    again.drive(10_000)
    assert Counter(m.uniq_key for m in again.real_copies()) == {f"m{n}": 1 for n in range(6)}


def test_units_lost_in_a_power_failure_are_enqueued_again_from_the_consume_queue():
    config = TIMER_STORE.with_(flush_disk_type=SYNC_FLUSH)  # the timer topic's records are durable at once
    h = TimerHarness(store_config=config)
    h.drive(1200)  # the timer flush of 1000 has run
    for key in "abc":
        h.send_timer(key, delay_ms=8000)
    h.drive(300)
    assert h.timer.timer_log.mfq.get_max_offset() == 3 * 52 and h.timer.commit_queue_offset == 3
    assert h.disk.unflushed_bytes() > 0
    h.disk.power_failure(random.Random(10))  # before the timer flush of 2000
    assert h.disk.read_file("timerlog/00000000000000000000")[: 3 * 52] == bytes(3 * 52)  # no torn unit survived
    again = TimerHarness(disk=h.disk, clock=h.clock, store_config=config)
    timer = again.timer
    assert timer.timer_log.mfq.get_max_offset() == 0  # the units are gone ...
    assert timer.curr_queue_offset == 0  # ... and the queue offset comes back from the checkpoint
    again.drive(10_000)
    assert Counter(m.uniq_key for m in again.real_copies()) == {"a": 1, "b": 1, "c": 1}


def test_a_process_crash_before_the_checkpoint_enqueues_again_and_duplicates_future_slots():
    h = TimerHarness()
    h.drive(1200)
    for key in "ab":
        h.send_timer(key, delay_ms=5000)
    h.drive(300)  # enqueued; the checkpoint on disk still says queue offset 0
    again = TimerHarness(disk=h.disk, clock=h.clock)
    timer = again.timer
    assert timer.timer_log.mfq.get_max_offset() == 2 * 52  # the units survived in the page cache
    assert timer.curr_queue_offset == 0  # min(last unit + 1, masterTimerQueueOffset = 0)
    again.drive(8000)
    assert Counter(m.uniq_key for m in again.real_copies()) == {"a": 2, "b": 2}  # both units in the slot


def test_recovery_relinks_the_wheel_from_the_timer_log_after_a_graceful_stop():
    h = TimerHarness()
    h.drive(1200)
    h.send_timer("a", delay_ms=6000)
    h.drive(200)  # enqueued at the next poll (1300) + the 3 ms batch wait
    assert h.timer.timer_log.mfq.get_max_offset() == 52
    wheel_on_disk = h.disk.read_file("timerwheel")
    h.broker.shutdown()  # the wheel is not flushed at shutdown (timerWheel.shutdown(false))
    assert h.disk.read_file("timerwheel") == wheel_on_disk
    again = TimerHarness(disk=h.disk, clock=h.clock)
    slot = again.timer.timer_wheel.get_slot(h.timer.format_time_ms(T0 + 1200 + 6000))
    assert (slot.first_pos, slot.last_pos) == (0, 0)
    again.drive(8000)
    assert [m.uniq_key for m in again.real_copies()] == ["a"]


def test_slots_older_than_the_wheel_horizon_are_never_dequeued():
    h = TimerHarness()  # slotsTotal 600: the horizon is 10 minutes (7 days with RocketMQ's default)
    h.send_timer("a", delay_ms=5 * 60_000)
    h.drive(1000)
    h.broker.shutdown()
    h.clock.advance(30 * 60_000)
    again = TimerHarness(disk=h.disk, clock=h.clock)
    horizon = again.timer.format_time_ms(h.clock.now_ms()) - 600_000 + 60_000
    assert again.timer.curr_read_time_ms == horizon
    again.drive(5000)
    assert again.real_copies() == []

    h = TimerHarness()
    h.send_timer("a", delay_ms=5 * 60_000)
    h.drive(1000)
    h.broker.shutdown()
    h.clock.advance(7 * 60_000)  # down for less than the horizon: delivered late, after the restart
    again = TimerHarness(disk=h.disk, clock=h.clock)
    again.drive(1000)
    assert [m.uniq_key for m in again.real_copies()] == ["a"]


def test_a_torn_last_unit_relinks_the_slot_its_head_names_and_hides_that_slots_units():
    """A power failure that keeps only the first sector of the newest unit leaves its size, magic and write
    time but zeros for the delay and the message: recoverAndRevise accepts it and makes it the last unit of
    the slot of its write time, so the units that slot held before are no longer walked (faithful)."""
    def run(tear: bool):
        h = TimerHarness(clock=ManualClock(T0 + 500))
        h.drive(700)
        h.send_timer("a", delay_ms=3000)  # slot T0+4000, read at T0+5000
        h.drive(3100)  # now T0+4300: the write time is T0+4000, the read time has not passed it
        h.send_timer("b", delay_ms=60_000)
        h.drive(300)  # enqueued; still before T0+5000
        assert h.timer.timer_log.mfq.get_max_offset() == 2 * 52 and h.timer.curr_read_time_ms == T0 + 4000
        if tear:  # what survives of "b"'s unit: its first 24 bytes
            h.timer.timer_log.mfq.mapped_files[0].handle.write(52 + 24, bytes(52 - 24))
        torn = []
        again = TimerHarness(disk=h.disk, clock=h.clock, before_initialize=lambda broker: (
            broker.timer_message_store.torn_unit_listeners.append(lambda slot, pos: torn.append((slot, pos)))))
        again.drive(3000)
        return torn, [m.uniq_key for m in again.real_copies()]

    assert run(tear=False) == ([], ["a"])
    assert run(tear=True) == ([(T0 + 4000, 52)], [])  # "a" is lost behind the torn unit


_PIECES = ("unit", "unit", "torn", "zeros", "blank", "bad_magic")


def _relinked(pieces: list[str], tail: int, window_units: int | None, check_timer_log: bool, monkeypatch):
    """recover_and_revise over a one-file timer log of ``pieces`` (+ ``tail`` stray bytes), read in windows of
    ``window_units`` units (None: the whole file at once): the end found, the wheel, the torn units heard, the files."""
    from store.timer import recovery
    from store.timer.requests import MAGIC_DEFAULT
    from store.timer.timer_log import BLANK_MAGIC_CODE, BLANK_STRUCT, UNIT_SIZE, encode_unit

    size = UNIT_SIZE * (len(pieces) + 1) + 16
    h = TimerHarness(store_config=TIMER_STORE.with_(mapped_file_size_timer_log=size))
    ts = h.timer
    body = bytearray()
    for n, piece in enumerate(pieces):
        unit = encode_unit(-1, MAGIC_DEFAULT, T0 + 1000 * n, T0 + 5000 + 1000 * n, 100 * n, 0 if piece == "torn" else 90, 7)
        if piece == "zeros":
            unit = bytes(UNIT_SIZE)
        elif piece == "blank":
            unit = BLANK_STRUCT.pack(UNIT_SIZE, 0, BLANK_MAGIC_CODE) + bytes(UNIT_SIZE - BLANK_STRUCT.size)
        elif piece == "bad_magic":
            unit = unit[:12] + b"\x00\x00\x01\x00" + unit[16:]
        body += unit
    body += bytes(range(1, tail + 1))
    mf = ts.timer_log.mfq.get_last_mapped_file_for_append(0)
    mf.append(bytes(body))
    torn: list[tuple[int, int]] = []
    ts.torn_unit_listeners.append(lambda slot_ms, pos: torn.append((slot_ms, pos)))
    monkeypatch.setattr(recovery, "_WINDOW", UNIT_SIZE * window_units if window_units else 1 << 30)
    end = recovery.recover_and_revise(ts, 0, check_timer_log)
    files = [(f.file_from_offset, f.wrote_position) for f in ts.timer_log.mfq.mapped_files]
    return end, bytes(ts.timer_wheel.buf), torn, files


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=9), tail=st.integers(0, 51),
       window_units=st.integers(1, 4), check_timer_log=st.booleans())
def test_recovery_reads_the_timer_log_a_window_at_a_time_as_if_whole(pieces, tail, window_units, check_timer_log,
                                                                      monkeypatch):
    whole = _relinked(pieces, tail, None, check_timer_log, monkeypatch)
    assert _relinked(pieces, tail, window_units, check_timer_log, monkeypatch) == whole
