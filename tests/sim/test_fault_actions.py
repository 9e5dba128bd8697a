"""Fault actions are data: one frozen dataclass per timed fault, one handler each, planned from [faults]."""

from __future__ import annotations

import dataclasses
import random

import pytest

from sim import fault_actions
from sim.fault_actions import HANDLERS, ArmCrashAt, StepClock, apply
from sim.faults import FaultPlan
from sim.scenario import ClockStep, FaultSpec

ACTION_TYPES = [obj for obj in vars(fault_actions).values()
                if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == fault_actions.__name__]


def test_every_action_type_has_exactly_one_handler_and_is_frozen():
    assert len(ACTION_TYPES) == 9
    assert set(HANDLERS) == set(ACTION_TYPES)
    for action_type in ACTION_TYPES:
        assert dataclasses.fields(action_type)[0].name == "at_ms"
        action = action_type(*[0] * len(dataclasses.fields(action_type)))
        with pytest.raises(dataclasses.FrozenInstanceError):
            action.at_ms = 1


def test_the_plan_holds_one_typed_action_per_planned_fault_in_time_order():
    spec = FaultSpec(process_crashes=2, power_failures=1, graceful_restarts=1, consumer_crashes=1,
                     crash_before_offset_flush=1, crash_before_delay_offset_flush=1, cq_truncations=1,
                     store_rollbacks=2, clock_steps=(ClockStep(at_ms=5000, by_ms=-300),))
    plan = FaultPlan(None, spec, random.Random(3), 0, 60_000).plan
    counts = {t.__name__: sum(isinstance(a, t) for a in plan) for t in ACTION_TYPES}
    assert counts == {"CrashAt": 2, "PowerFailAt": 1, "RestartAt": 1, "ArmCrashAt": 2, "CrashConsumerAt": 1,
                      "SnapshotStore": 2, "RollbackStore": 2, "TruncateCq": 1, "StepClock": 1}
    assert [a.at_ms for a in plan] == sorted(a.at_ms for a in plan)
    assert StepClock(5000, -300) in plan
    assert {a.site for a in plan if isinstance(a, ArmCrashAt)} == {"persist.consumerOffset.json",
                                                                   "persist.delayOffset.json"}


def test_an_unknown_action_has_no_handler():
    @dataclasses.dataclass(frozen=True)
    class Meteor:
        at_ms: int

    with pytest.raises(KeyError):
        apply(None, Meteor(0))
