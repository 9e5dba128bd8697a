"""RebalanceService: rebalance every 20 s, or at once when woken (start, membership change)."""

from __future__ import annotations

from collections.abc import Callable

from ..service import first_round_from, rounds_before

WAIT_INTERVAL_MS = 20_000  # rocketmq.client.rebalance.waitInterval


class RebalanceService:
    name = "rebalance-service"
    WAKE_FLOOR = "_next_ms"  # its only answer (see PeriodicService.WAKE_FLOOR)

    def __init__(self, do_rebalance: Callable[[int], None], first_mono_ms: int,
                 interval_ms: int = WAIT_INTERVAL_MS) -> None:
        self.do_rebalance = do_rebalance
        self.interval_ms = interval_ms
        self._next_ms = first_mono_ms
        # A driver may skip rounds that change nothing (see PeriodicService): ``idle_until`` bounds them. A wakeup
        # is never skipped: until the round it asks for has run, the grid stays where the wakeup put it.
        self.idle_skip = False
        self.idle_until: Callable[[], int | None] | None = None
        self._woken = False
        # A driver that arms services by their wake-ups learns here that one moved earlier outside its own step
        # (a pull answer's OFFSET_ILLEGAL fix, the 5.x channel-active heartbeat)
        self.on_wakeup: Callable[[], None] | None = None

    @property
    def woken(self) -> bool:
        """Whether a wakeup asked for a round that has not run yet (a skipping driver must not skip it)."""
        return self._woken

    def skip_idle_rounds(self, idle_until: Callable[[], int | None]) -> None:
        """Turn skipping on; a driver asks ``catch_up(now, turn_passed)`` before ``next_wakeup_ms`` (only then:
        the question may cost a driver a tie draw)."""
        self.idle_skip = True
        self.idle_until = idle_until
        self.catch_up = self._catch_up

    def _catch_up(self, mono_ms: int, turn_passed: bool) -> None:
        if self.idle_skip and not self._woken:
            self._next_ms += rounds_before(self._next_ms, self.interval_ms,
                                           mono_ms + 1 if turn_passed else mono_ms) * self.interval_ms

    def wakeup(self, mono_ms: int) -> None:
        """rebalanceImmediately: the waiting thread is interrupted."""
        self._catch_up(mono_ms, False)
        self._next_ms = min(self._next_ms, mono_ms)
        self._woken = self.idle_skip
        if self.on_wakeup is not None:
            self.on_wakeup()

    def next_wakeup_ms(self) -> int | None:
        if self.idle_skip and not self._woken and self.idle_until is not None:
            return first_round_from(self._next_ms, self.interval_ms, self.idle_until())
        return self._next_ms

    def step(self, mono_ms: int) -> None:
        self._catch_up(mono_ms, False)
        if mono_ms < self._next_ms:
            return
        self._woken = False
        self._next_ms = mono_ms + self.interval_ms
        self.do_rebalance(mono_ms)
