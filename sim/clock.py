"""The SimPy clock adapter: virtual milliseconds since a fixed epoch, with injectable steps.

SimPy time is in milliseconds. ``monotonic_ms`` is SimPy's ``now`` (the executors' time);
``now_ms`` is the broker's wall clock: the epoch plus ``now`` plus every clock step so far.
"""

from __future__ import annotations

import simpy

SIM_EPOCH_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z: fixed, non-zero


class SimClock:
    def __init__(self, env: simpy.Environment, epoch_ms: int = SIM_EPOCH_MS) -> None:
        self.env = env
        self.epoch_ms = epoch_ms
        self.step_offset_ms = 0

    def now_ms(self) -> int:
        return self.epoch_ms + int(self.env.now) + self.step_offset_ms

    def monotonic_ms(self) -> int:
        return int(self.env.now)

    def step(self, by_ms: int) -> None:
        """A wall-clock step (NTP jump, operator error): backwards when negative."""
        self.step_offset_ms += by_ms
