"""Fault injection for a run: the store's fault sites answered from the scenario's [faults] table,
and the plan of timed faults (crashes, power failures, consumer crashes, truncations, clock steps).

Timed faults happen at seeded times inside the traffic phase (10%..90% of ``duration``); the drain
phase has none, so liveness can be judged at its end. Every fault appears in the history.
"""

from __future__ import annotations

import random

from sim.scenario import FaultSpec
from store.faults import CRASH, FAIL, SITE_PERSIST_PREFIX, SITE_PUT, SITE_SCHEDULE_REBUILD, SITE_SEND_BACK

from . import fault_actions
from .fault_actions import (
    ArmCrashAt,
    CrashAt,
    CrashConsumerAt,
    FaultAction,
    PowerFailAt,
    RestartAt,
    RollbackStore,
    SnapshotStore,
    StepClock,
    TruncateCq,
)

CONSUMER_OFFSET_FILE = "consumerOffset.json"
DELAY_OFFSET_FILE = "delayOffset.json"


class SimFaults:
    """The store's ``FaultInjector``: rates per site, and crash sites armed by the plan (one shot each)."""

    def __init__(self, recorder, spec: FaultSpec, rng: random.Random) -> None:
        self.recorder = recorder
        self.spec = spec
        self.rng = rng
        self.active = True
        self.armed_crash_sites: list[str] = []
        self.fired: str | None = None  # the site that fired during the current step (reset before each step)
        self.damage_site: str | None = None  # the last fault that lost or rolled back stored data

    def at(self, site: str, detail: str = "") -> str | None:
        if not self.active:
            return None
        if site in self.armed_crash_sites:
            self.armed_crash_sites.remove(site)
            self.recorder.record("fault", site=site, action=CRASH, detail=detail)
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
            self.recorder.record("fault", site=site, action=FAIL, detail=detail)
            self.fired = site
            return FAIL
        return None


class FaultPlan:
    """The timed faults of the scenario as a service: each action fires once at its seeded time."""

    name = "fault-plan"

    def __init__(self, world, spec: FaultSpec, rng: random.Random, start_mono_ms: int, duration_ms: int) -> None:
        self.world = world
        self.plan: list[FaultAction] = []
        first = duration_ms // 10 if spec.start_ms is None else spec.start_ms
        low, high = start_mono_ms + first, start_mono_ms + duration_ms * 9 // 10

        def times(count: int) -> list[int]:
            return sorted(rng.randrange(low, max(low + 1, high)) for _ in range(count))

        add = self.plan.append
        for at in times(spec.process_crashes):
            add(CrashAt(at))
        for at in times(spec.power_failures):
            add(PowerFailAt(at))
        for at in times(spec.graceful_restarts):
            add(RestartAt(at))
        for at in times(spec.consumer_crashes):
            add(CrashConsumerAt(at, rng.random()))
        for at in times(spec.crash_before_offset_flush):
            add(ArmCrashAt(at, SITE_PERSIST_PREFIX + CONSUMER_OFFSET_FILE))
        for at in times(spec.crash_before_delay_offset_flush):
            add(ArmCrashAt(at, SITE_PERSIST_PREFIX + DELAY_OFFSET_FILE))
        for i, at in enumerate(times(spec.store_rollbacks)):  # keyed by index: two rollbacks may share a ms
            add(SnapshotStore(max(start_mono_ms, at - spec.rollback_age_ms), i))
            add(RollbackStore(at, i))
        for at in times(spec.cq_truncations):
            add(TruncateCq(at, rng.random()))
        for step in spec.clock_steps:
            add(StepClock(start_mono_ms + step.at_ms, step.by_ms))
        self.plan.sort(key=lambda action: action.at_ms)  # stable: actions due together keep the order above

    def next_wakeup_ms(self) -> int | None:
        return self.plan[0].at_ms if self.plan else None

    def step(self, mono_ms: int) -> None:
        while self.plan and self.plan[0].at_ms <= mono_ms:
            fault_actions.apply(self.world, self.plan.pop(0))
