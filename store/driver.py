"""The real-clock driver: runs the store's sans-IO services against the system clock.

The same service objects the simulator drives with SimPy run here in a plain loop, sleeping on
the real monotonic clock until the earliest wake-up: proof that nothing in ``store/`` depends on
the simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .clock import SystemClock
from .service import Service

IDLE_POLL_MS = 10  # how long to sleep when no service names a wake-up (it may be poked by a put)


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
