"""RebalanceService: every 20 s, or at once when woken; a woken round is never skipped, and its driver hears of it."""

from __future__ import annotations

from store.client.rebalance_service import WAIT_INTERVAL_MS, RebalanceService


def test_a_wakeup_moves_the_next_round_to_now_and_tells_the_driver():
    rounds, told = [], []
    service = RebalanceService(rounds.append, first_mono_ms=0)
    service.step(0)
    assert rounds == [0] and service.next_wakeup_ms() == WAIT_INTERVAL_MS
    service.on_wakeup = lambda: told.append(service.next_wakeup_ms())
    service.wakeup(7_500)  # a pull answer's OFFSET_ILLEGAL fix (5.x) or the channel-active heartbeat
    assert told == [7_500]  # a driver that arms services by their wake-ups re-arms this one now
    service.step(7_500)
    assert rounds == [0, 7_500] and service.next_wakeup_ms() == 7_500 + WAIT_INTERVAL_MS


def test_a_skipping_driver_never_skips_a_woken_round():
    rounds = []
    service = RebalanceService(rounds.append, first_mono_ms=0)
    service.skip_idle_rounds(lambda: None)  # idle for ever
    service.step(0)
    service.wakeup(45_000)
    assert service.woken and service.next_wakeup_ms() == 45_000
    service.step(45_000)
    assert rounds == [0, 45_000] and not service.woken
