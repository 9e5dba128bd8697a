"""RebalanceService: rebalance every 20 s, or at once when woken (start, membership change)."""

from __future__ import annotations

from collections.abc import Callable

WAIT_INTERVAL_MS = 20_000  # rocketmq.client.rebalance.waitInterval


class RebalanceService:
    name = "rebalance-service"
    WAKE_FLOOR = "_next_ms"  # its only answer (see PeriodicService.WAKE_FLOOR)

    def __init__(self, do_rebalance: Callable[[int], None], first_mono_ms: int,
                 interval_ms: int = WAIT_INTERVAL_MS) -> None:
        self.do_rebalance = do_rebalance
        self.interval_ms = interval_ms
        self._next_ms = first_mono_ms

    def wakeup(self, mono_ms: int) -> None:
        """rebalanceImmediately: the waiting thread is interrupted."""
        self._next_ms = min(self._next_ms, mono_ms)

    def next_wakeup_ms(self) -> int | None:
        return self._next_ms

    def step(self, mono_ms: int) -> None:
        if mono_ms < self._next_ms:
            return
        self._next_ms = mono_ms + self.interval_ms
        self.do_rebalance(mono_ms)
