"""The clock seam: the store reads time only through a ``Clock`` (Trio-style injection).

A clock has two faces, as a JVM does: ``now_ms`` is the wall clock (``System.currentTimeMillis``, which an
operator or NTP may step) and ``monotonic_ms`` is the executors' clock (``System.nanoTime``, which never
steps); services read both from the clock they were given. The real clock is ``store.driver.SystemClock``
(the one place that reads real time); the simulator injects ``sim.clock.SimClock``; unit tests use
``ManualClock`` and ``store.driver.run_for``.
"""

from __future__ import annotations

from typing import Protocol

DEFAULT_START_MS = 1_700_000_000_000


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch, as the broker sees them (steps with the wall clock)."""
        ...

    def monotonic_ms(self) -> int:
        """The executors' time in milliseconds: never goes backwards, unaffected by clock steps."""
        ...


class ManualClock:
    """A clock that moves only when told to.

    ``advance`` moves both faces; ``step`` moves the wall clock alone (a clock-step fault, either way).
    The monotonic face starts at ``monotonic_start_ms``, by default equal to the wall clock (client tests
    read one clock for both); the broker harnesses start it at 0, as the simulator does."""

    def __init__(self, start_ms: int = DEFAULT_START_MS, *, monotonic_start_ms: int | None = None) -> None:
        self._mono_ms = start_ms if monotonic_start_ms is None else monotonic_start_ms
        self._wall_minus_mono_ms = start_ms - self._mono_ms

    def now_ms(self) -> int:
        return self._mono_ms + self._wall_minus_mono_ms

    def monotonic_ms(self) -> int:
        return self._mono_ms

    def advance(self, delta_ms: int) -> int:
        """Let ``delta_ms`` (>= 0) of time pass; the new wall time."""
        if delta_ms < 0:
            raise ValueError(f"time does not run backwards: advance({delta_ms}); use step() for a clock step")
        self._mono_ms += delta_ms
        return self.now_ms()

    def step(self, by_ms: int) -> None:
        """A wall-clock step (NTP jump, operator error): backwards when negative; monotonic time stays."""
        self._wall_minus_mono_ms += by_ms

    def set(self, now_ms: int) -> None:
        """Set the wall clock: forwards is time passing (both faces move), backwards is a step (wall only)."""
        delta_ms = now_ms - self.now_ms()
        if delta_ms >= 0:
            self.advance(delta_ms)
        else:
            self.step(delta_ms)
