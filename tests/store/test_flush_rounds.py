"""Flush rounds skipped as provable no-ops leave the disk exactly as running every round does.

Two stores get the same puts at the same times; one steps its flush services every round, the other
with ``idle_skip`` only where ``next_wakeup_ms`` says a round would change something (after
``catch_up``, as the simulator's scheduler does). Durable bytes, flushed positions and the checkpoint
must agree after every millisecond that had a round.
"""

from __future__ import annotations

import random

from store.clock import ManualClock
from store.disk import MemoryDisk

from .conftest import SMALL, make_store, new_msg

CONFIG = SMALL.with_(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 400,
                     flush_commit_log_thorough_interval_ms=3_000, flush_consume_queue_thorough_interval_ms=7_000)


def _state(store, disk):
    files = {path: (f.durable_bytes(), f.dirty_lo) for path, f in sorted(disk._files.items())}
    cps = store.checkpoint
    return files, store.commit_log.mfq.flushed_where, (cps.physic_msg_timestamp, cps.logics_msg_timestamp)


def _run(skip: bool, seed: int, plant_bug: bool = False):
    rng = random.Random(seed)
    disk, clock = MemoryDisk(), ManualClock(1_700_000_000_000)
    store = make_store(disk, clock, CONFIG)
    services = store.services[1:]
    for service in services:
        service.idle_skip = skip
    stepped = 0
    states = []
    bursts = sorted(rng.randrange(0, 40_000) for _ in range(12))
    for now in range(0, 45_000, 50):
        clock.advance(50)
        while bursts and bursts[0] <= now:
            bursts.pop(0)
            for i in range(rng.randrange(1, 40)):
                store.put_message(new_msg(queue_id=rng.randrange(3), key=f"k{now}-{i}", body=b"x" * rng.randrange(10, 900)))
            store.do_reput()
        for service in services:
            if skip:
                service.catch_up(now, False)
            at = service.next_wakeup_ms()
            if plant_bug and skip and not service.would_change(False):
                at = None  # a driver that forgets the thorough rounds: the states must differ
            if at is not None and at <= now:
                service.step(now)
                stepped += 1
        if now % 1000 == 0:
            states.append(_state(store, disk))
    return states, stepped


def test_skipped_flush_rounds_leave_the_same_disk():
    for seed in range(3):
        faithful, all_rounds = _run(False, seed)
        skipping, some_rounds = _run(True, seed)
        assert skipping == faithful
        assert some_rounds < all_rounds / 3


def test_the_comparison_sees_a_driver_that_skips_real_work():
    faithful, _ = _run(False, 0)
    broken, _ = _run(True, 0, plant_bug=True)
    assert broken != faithful


def test_a_light_round_is_idle_when_only_the_store_timestamp_is_behind():
    """A light round (fewer dirty pages than it needs) flushes nothing and leaves the queue's store timestamp, so
    the checkpoint's physicMsgTimestamp too: only the thorough round takes a newer file timestamp. (Before this
    was known, retry-ladder-to-dlq stepped 319 such light rounds of the commit-log flush for nothing.) The mutant
    that moves the timestamp on every round makes the light round a change again. Under shuffled ties the round is
    still armed (every armed round draws a tie priority: the shuffled histories of existing seeds stay)."""
    for mutant in (False, True):
        disk, clock = MemoryDisk(), ManualClock(1_700_000_000_000)
        store = make_store(disk, clock, CONFIG)
        commit_log = store.commit_log
        commit_log.mfq.physic_ts_every_flush = mutant
        store.put_message(new_msg(queue_id=0, key="first", body=b"x" * 100))
        commit_log.flush(0)
        clock.advance(500)
        store.put_message(new_msg(queue_id=0, key="second", body=b"x" * 100))  # one page: too few for a light round
        before = _state(store, disk)
        assert commit_log.flush_would_change(0)
        assert commit_log.flush_would_change(4) == mutant
        commit_log.light_rounds_see_timestamp = True  # shuffled ties: armed as before, to keep the tie draws
        assert commit_log.flush_would_change(4)
        commit_log.light_rounds_see_timestamp = False
        commit_log.flush(4)
        assert (_state(store, disk) != before) == mutant  # the prediction, checked against the round itself
