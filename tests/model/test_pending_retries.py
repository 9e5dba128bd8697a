"""A retry whose next copy is due after the drain is pending, not a missed redelivery (found by the from-store
work: at_least_once_redelivery reported the retry ladder cut short by its drain)."""

from __future__ import annotations

import dataclasses

from model.invariants import check_events
from scenarios.catalogue import load_builtin
from sim.checking import context_of
from sim.run import run_scenario


def test_a_retry_due_after_the_drain_is_pending_and_one_due_before_it_is_missed():
    result = run_scenario(load_builtin("retry-ladder-to-dlq", {"drain": "5m"}), 1)
    verdict = result.summary["invariants"]["at_least_once_redelivery"]
    assert verdict["holds"] and verdict["pending"] == 1 and verdict["checked"] == 4
    assert not any(v["violations"] for v in result.summary["invariants"].values())  # (no_loss is vacuous: pending)
    events = result.history.events
    ctx = context_of(result.world, events)
    # The same history judged as if the run had gone on for another 3 hours: the retry copy was due, never came.
    longer = dataclasses.replace(ctx, end_ms=ctx.end_ms + 3 * 3_600_000)
    missed = check_events(events, longer, only=["at_least_once_redelivery"])["at_least_once_redelivery"]
    assert not missed["holds"] and missed["pending"] == 0
    assert "never delivered to GroupA again" in missed["violations"][0]["explanation"]


def test_a_copy_in_the_retry_topic_without_a_counted_attempt_breaks_the_retry_schedule():
    ladder = load_builtin("retry-ladder-to-dlq", {"consumer.max_reconsume_times": 3, "drain": "10m"})
    clean = run_scenario(ladder, 1).summary["invariants"]["retry_schedule"]
    broken = run_scenario(ladder, 1, mutants=["reconsume_times_not_bumped"]).summary["invariants"]["retry_schedule"]
    assert clean["holds"] and not broken["holds"]
    assert "reconsumeTimes 0" in broken["violations"][0]["explanation"]
