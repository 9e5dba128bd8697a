"""Sans-IO services: every RocketMQ service thread becomes an object with a step method.

``step(mono_ms)`` does what is due at ``mono_ms``; ``next_wakeup_ms()`` says when the service next
has work (None: only when something pokes it). Both are in *monotonic* driver milliseconds, as
Java's executors and sleeps are: a wall-clock step (a fault) moves the broker's ``Clock`` and the
timestamps it stamps, never the schedule of the service threads. Drivers own time: the SimPy processes in
``sim/`` and the real-clock loop in ``store/driver.py`` run the same objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Service(Protocol):
    name: str

    def step(self, mono_ms: int) -> None: ...

    def next_wakeup_ms(self) -> int | None: ...


IDLE_FOREVER = -1  # ``idle_until``: every round ahead is a no-op


def rounds_before(next_ms: int, interval_ms: int, limit_ms: int) -> int:
    """How many rounds of the grid from ``next_ms`` fall before ``limit_ms``."""
    return -(-(limit_ms - next_ms) // interval_ms) if next_ms < limit_ms else 0


def first_round_from(next_ms: int, interval_ms: int, until_ms: int | None) -> int | None:
    """The round to wake for when the rounds before ``until_ms`` are no-ops (None: none is to come;
    ``until_ms`` None: not idle, the next round)."""
    if until_ms == IDLE_FOREVER:
        return None
    if until_ms is None:
        return next_ms
    return next_ms + rounds_before(next_ms, interval_ms, until_ms) * interval_ms


class PeriodicService:
    """Runs ``task(mono_ms)`` every ``interval_ms`` after a first delay (a ScheduledExecutor task)."""

    # For drivers: the attribute whose current value bounds the answer of ``next_wakeup_ms`` from below (and
    # ``catch_up`` has nothing to do for a wake-up at or below it). Armed at or below it, asking again is useless.
    WAKE_FLOOR = "_next_ms"

    def __init__(
        self, name: str, task: Callable[[int], None], interval_ms: int, first_delay_ms: int, start_ms: int
    ) -> None:
        self.name = name
        self.task = task
        self.interval_ms = interval_ms
        self._next_ms = start_ms + first_delay_ms
        # A driver may skip rounds that provably do nothing: with ``idle_skip`` and an ``idle`` predicate that
        # holds, no wake-up is named; ``catch_up`` then moves the grid over the skipped rounds. ``idle_until``
        # names a bound instead: the rounds before the time it returns are no-ops (IDLE_FOREVER: all of them;
        # None: not idle). ``on_skipped(rounds)`` hears how many rounds ``catch_up`` skipped, for a no-op round
        # that still moves a counter somewhere.
        self.idle_skip = False
        self.idle: Callable[[], bool] | None = None
        self.idle_until: Callable[[], int | None] | None = None
        self.on_skipped: Callable[[int], None] | None = None
        # A driver may also *defer* the rounds of a ``deferrable`` service: rounds whose effects no other service,
        # and nobody outside, can see before the driver's next other step (or the run's end). It then runs them
        # late, each at its own time, just before that observer (``step_deferred``). Rounds that ``rounds_kept``
        # later rounds of the same settlement overwrite entirely (a persist: the main file and its .bak hold the
        # last two) run ``overwritten_run(first_ms, interval_ms, count)`` instead of ``task``, a run of them at
        # once: only what each says outside (its event, at its own time) is left.
        self.deferrable = False
        self.rounds_kept = 1
        self.overwritten_run: Callable[[int, int, int], None] | None = None

    @property
    def next_round_ms(self) -> int:
        """The grid's next round (skipped or not): where a driver counts the rounds a skip still owes from."""
        return self._next_ms

    def catch_up(self, mono_ms: int, turn_passed: bool) -> None:
        """Rounds before ``mono_ms`` (and at it, once its turn passed) were skipped as no-ops: move the grid."""
        if not self.idle_skip:
            return
        rounds = rounds_before(self._next_ms, self.interval_ms, mono_ms + 1 if turn_passed else mono_ms)
        if rounds:
            self._next_ms += rounds * self.interval_ms
            if self.on_skipped is not None:
                self.on_skipped(rounds)

    def next_wakeup_ms(self) -> int | None:
        if self.idle_skip:
            if self.idle is not None and self.idle():
                return None
            if self.idle_until is not None:
                return first_round_from(self._next_ms, self.interval_ms, self.idle_until())
        return self._next_ms

    def rounds_until(self, limit_ms: int, inclusive: bool) -> int:
        """How many rounds of the grid fall before ``limit_ms`` (or at it, with ``inclusive``)."""
        return rounds_before(self._next_ms, self.interval_ms, limit_ms + 1 if inclusive else limit_ms)

    def step_deferred(self, mono_ms: int, rounds_after: int) -> None:
        """A deferred round at ``mono_ms`` (its own time), with ``rounds_after`` more of this settlement to come."""
        if rounds_after >= self.rounds_kept and self.overwritten_run is not None:
            self.step_overwritten(mono_ms, 1)
        else:
            self._next_ms = mono_ms + self.interval_ms
            self.task(mono_ms)

    def step_overwritten(self, first_ms: int, count: int) -> None:
        """``count`` deferred rounds from ``first_ms`` on that later rounds of their settlement overwrite."""
        self._next_ms = first_ms + count * self.interval_ms
        self.overwritten_run(first_ms, self.interval_ms, count)

    def step(self, mono_ms: int) -> None:
        self.catch_up(mono_ms, False)
        if mono_ms < self._next_ms:
            return
        self._next_ms = mono_ms + self.interval_ms
        self.task(mono_ms)
