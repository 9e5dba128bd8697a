"""The one manual-clock loop (``store.driver.run_for``) and the two faces of ``ManualClock``."""

from __future__ import annotations

import pytest

from store.clock import ManualClock
from store.driver import run_for


class Every:
    """A service due every ``period_ms`` from ``first_ms``, recording when it ran."""

    def __init__(self, name: str, first_ms: int, period_ms: int) -> None:
        self.name, self.at_ms, self.period_ms, self.ran = name, first_ms, period_ms, []

    def next_wakeup_ms(self) -> int | None:
        return self.at_ms

    def step(self, mono_ms: int) -> None:
        self.ran.append(mono_ms)
        self.at_ms = mono_ms + self.period_ms


def test_manual_clock_steps_move_the_wall_clock_only():
    clock = ManualClock(1_000_000, monotonic_start_ms=0)
    clock.advance(500)
    assert (clock.now_ms(), clock.monotonic_ms()) == (1_000_500, 500)
    clock.step(-60_000)  # NTP steps the wall clock back a minute
    assert (clock.now_ms(), clock.monotonic_ms()) == (940_500, 500)
    clock.set(940_000)  # backwards: a step
    assert (clock.now_ms(), clock.monotonic_ms()) == (940_000, 500)
    clock.set(941_000)  # forwards: time passes
    assert (clock.now_ms(), clock.monotonic_ms()) == (941_000, 1_500)
    with pytest.raises(ValueError):
        clock.advance(-1)
    assert ManualClock(7).monotonic_ms() == 7  # by default one clock for both faces


def test_run_for_steps_the_earliest_wakeup_first_and_ends_at_the_duration():
    clock = ManualClock(1_000_000, monotonic_start_ms=0)
    a, b = Every("a", 100, 300), Every("b", 100, 250)
    order = []

    def step(service, mono_ms):
        order.append((service.name, mono_ms, clock.monotonic_ms()))
        service.step(mono_ms)

    assert run_for([a, b], clock, 700, step=step) is False
    assert order == [("a", 100, 100), ("b", 100, 100), ("b", 350, 350), ("a", 400, 400), ("b", 600, 600),
                     ("a", 700, 700)]  # a wake-up at the end itself runs
    assert (clock.monotonic_ms(), clock.now_ms()) == (700, 1_000_700)
    run_for([a, b], clock, 0)  # nothing due exactly now: no step, no time
    assert clock.monotonic_ms() == 700 and a.ran == [100, 400, 700]


def test_run_for_runs_a_past_wakeup_now_and_stops_when_told():
    clock = ManualClock(0, monotonic_start_ms=1_000)
    late = Every("late", 10, 400)  # due long ago
    assert run_for(lambda: [late], clock, 10_000, stop=lambda: len(late.ran) == 3) is True
    assert late.ran == [1_000, 1_400, 1_800]
    assert clock.monotonic_ms() == 1_800  # left at the last step
