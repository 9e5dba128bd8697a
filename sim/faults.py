"""Fault injection for a run: the store's fault sites answered from the scenario's [faults] table,
and the plan of timed faults (crashes, power failures, consumer crashes, truncations, clock steps).

Timed faults happen at seeded times inside the traffic phase (10%..90% of ``duration``); the drain
phase has none, so liveness can be judged at its end. Every fault appears in the history.
"""

from __future__ import annotations

import random

from sim.scenario import FaultSpec
from store.faults import CRASH, FAIL, SITE_PERSIST_PREFIX, SITE_PUT, SITE_SCHEDULE_REBUILD, SITE_SEND_BACK

CONSUMER_OFFSET_FILE = "consumerOffset.json"
DELAY_OFFSET_FILE = "delayOffset.json"


class SimFaults:
    """The store's ``FaultInjector``: rates per site, and crash sites armed by the plan (one shot each)."""

    def __init__(self, world, spec: FaultSpec, rng: random.Random) -> None:
        self.world = world
        self.spec = spec
        self.rng = rng
        self.active = True
        self.armed_crash_sites: list[str] = []
        self.fired: str | None = None  # the site that fired during the current step (reset before each step)

    def at(self, site: str, detail: str = "") -> str | None:
        if not self.active:
            return None
        if site in self.armed_crash_sites:
            self.armed_crash_sites.remove(site)
            self.world.record("fault", site=site, action=CRASH, detail=detail)
            self.fired = site
            return CRASH
        rate = 0.0
        if site == SITE_PUT:
            rate = self.spec.put_failure_rate
        elif site == SITE_SEND_BACK:
            rate = self.spec.send_back_failure_rate
        elif site == SITE_SCHEDULE_REBUILD:
            rate = self.spec.schedule_rebuild_failure_rate
        if rate > 0 and self.rng.random() < rate:
            self.world.record("fault", site=site, action=FAIL, detail=detail)
            self.fired = site
            return FAIL
        return None


class FaultPlan:
    """The timed faults of the scenario as a service: each fires once at its seeded time."""

    name = "fault-plan"

    def __init__(self, world, spec: FaultSpec, rng: random.Random, start_mono_ms: int, duration_ms: int) -> None:
        self.world = world
        self.plan: list[tuple[int, int, str, object]] = []
        first = duration_ms // 10 if spec.start_ms is None else spec.start_ms
        low, high = start_mono_ms + first, start_mono_ms + duration_ms * 9 // 10

        def times(count: int) -> list[int]:
            return sorted(rng.randrange(low, max(low + 1, high)) for _ in range(count))

        for at in times(spec.process_crashes):
            self._add(at, "process_crash", None)
        for at in times(spec.power_failures):
            self._add(at, "power_failure", None)
        for at in times(spec.graceful_restarts):
            self._add(at, "graceful_restart", None)
        for at in times(spec.consumer_crashes):
            self._add(at, "consumer_crash", rng.random())
        for at in times(spec.crash_before_offset_flush):
            self._add(at, "arm", SITE_PERSIST_PREFIX + CONSUMER_OFFSET_FILE)
        for at in times(spec.crash_before_delay_offset_flush):
            self._add(at, "arm", SITE_PERSIST_PREFIX + DELAY_OFFSET_FILE)
        for i, at in enumerate(times(spec.store_rollbacks)):  # keyed by index: two rollbacks may share a ms
            self._add(max(start_mono_ms, at - spec.rollback_age_ms), "snapshot", i)
            self._add(at, "store_rollback", i)
        for at in times(spec.cq_truncations):
            self._add(at, "cq_truncation", rng.random())
        for step in spec.clock_steps:
            self._add(start_mono_ms + step.at_ms, "clock_step", step.by_ms)
        self.plan.sort(key=lambda item: (item[0], item[1]))

    def _add(self, at: int, kind: str, arg) -> None:
        self.plan.append((at, len(self.plan), kind, arg))

    def next_wakeup_ms(self) -> int | None:
        return self.plan[0][0] if self.plan else None

    def step(self, mono_ms: int) -> None:
        while self.plan and self.plan[0][0] <= mono_ms:
            _, _, kind, arg = self.plan.pop(0)
            self.world.apply_fault(kind, arg)
