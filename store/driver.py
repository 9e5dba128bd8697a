"""The two drivers of the store's sans-IO services: real time and manual time.

``run_services`` runs the same service objects the simulator drives with SimPy in a plain loop on the
``SystemClock``, sleeping until the earliest wake-up: proof that nothing in ``store/`` depends on the
simulator. ``run_for`` is the one manual-clock loop (unit tests, the model mapping, benchmarks): it jumps
a ``ManualClock`` from wake-up to wake-up. ``SystemClock`` is the only code in the project's store, sim and
model layers that reads real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from .clock import ManualClock
from .service import Service

IDLE_POLL_MS = 10  # how long to sleep when no service names a wake-up (it may be poked by a put)


class SystemClock:
    """The real clocks, for live runs: the wall clock and the monotonic clock, and sleeping on the latter."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000  # wall-clock ok: the live clock

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000  # wall-clock ok: the live clock

    def sleep_until_monotonic_ms(self, target_ms: int) -> None:
        delay_s = (target_ms - self.monotonic_ms()) / 1000
        if delay_s > 0:
            time.sleep(delay_s)


def run_services(
    services: Callable[[], Iterable[Service]],
    clock: SystemClock,
    until: Callable[[], bool],
    deadline_mono_ms: int,
) -> bool:
    """Step every due service until ``until()`` holds or the deadline passes; True if it held."""
    while not until():
        now = clock.monotonic_ms()
        if now >= deadline_mono_ms:
            return False
        wakeups = []
        for service in services():
            at = service.next_wakeup_ms()
            if at is not None and at <= now:
                service.step(now)
                at = service.next_wakeup_ms()
            if at is not None:
                wakeups.append(at)
        target = min([*wakeups, now + IDLE_POLL_MS, deadline_mono_ms])
        clock.sleep_until_monotonic_ms(max(target, now + 1) if target <= now else target)
    return True


def _step(service: Service, mono_ms: int) -> None:
    service.step(mono_ms)


def run_for(
    services: Callable[[], Sequence[Service]] | Sequence[Service],
    clock: ManualClock,
    duration_ms: int,
    *,
    stop: Callable[[], bool] | None = None,
    step: Callable[[Service, int], None] = _step,
) -> bool:
    """Let ``duration_ms`` pass on ``clock``, stepping one service at a time at its wake-up.

    The earliest wake-up goes first, ties in list order; a wake-up in the past runs now. ``services`` may be
    a callable, re-read before every step (a broker's list changes as it starts). ``step(service, mono_ms)``
    lets a caller watch or count steps. Returns True, leaving the clock at the last step, as soon as
    ``stop()`` holds after a step; else the clock ends at the start plus ``duration_ms`` and it returns False."""
    if duration_ms < 0:
        raise ValueError(f"run_for({duration_ms}): time does not run backwards")
    end_ms = clock.monotonic_ms() + duration_ms
    current = services if callable(services) else (lambda: services)
    while True:
        best = None
        for i, service in enumerate(current()):
            at = service.next_wakeup_ms()
            if at is not None and at <= end_ms and (best is None or (at, i) < best[:2]):
                best = (at, i, service)
        if best is None:
            break
        at, _, service = best
        now_ms = clock.monotonic_ms()
        if at > now_ms:
            clock.advance(at - now_ms)
        step(service, clock.monotonic_ms())
        if stop is not None and stop():
            return True
    clock.advance(end_ms - clock.monotonic_ms())
    return False
