"""The clock seam: the store reads time only through a ``Clock`` (Trio-style injection).

``SystemClock`` is the one place in ``store/`` that looks at the wall clock; the simulator
injects its own virtual clock, and unit tests use ``ManualClock``.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch, as the broker sees them."""
        ...


class SystemClock:
    """The real clocks, for live runs and the real-clock driver (``store/driver.py``).

    The only place in ``store/`` that reads the wall clock, the monotonic clock or sleeps."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000  # wall-clock ok: the live clock

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000  # wall-clock ok: the live clock

    def sleep_until_monotonic_ms(self, target_ms: int) -> None:
        delay_s = (target_ms - self.monotonic_ms()) / 1000
        if delay_s > 0:
            time.sleep(delay_s)


class ManualClock:
    """A clock that moves only when told to; steps backwards are allowed (a clock-step fault)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = start_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, delta_ms: int) -> int:
        self._now_ms += delta_ms
        return self._now_ms

    def set(self, now_ms: int) -> None:
        self._now_ms = now_ms

    def monotonic_ms(self) -> int:
        return self._now_ms
