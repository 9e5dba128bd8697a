"""The bridge from a simulated run to the invariant checkers of ``model/``: the broker's settings and phase
times. Groups, subscriptions, tags and clients are read from the history itself (``consumer_start``, ``send``)."""

from __future__ import annotations

from model.invariants import RunContext, check_events
from store.delay_level import parse_delay_level
from store.timer.timer_wheel import TIMER_BLANK_SLOTS


def context_of(world, events: list[dict] | None = None) -> RunContext:
    """The context for ``events`` (by default the world's own history) of a run of ``world``."""
    scenario = world.scenario
    b = scenario.broker
    window = b.flush_delay_offset_interval_ms + b.flush_consumer_offset_interval_ms + 5000 + 2000
    return RunContext.from_history(
        world.history.events if events is None else events,
        delay_level_ms=parse_delay_level(b.message_delay_level),
        drain_start_ms=scenario.duration_ms,
        end_ms=scenario.duration_ms + scenario.drain_ms,
        timer_precision_ms=b.timer_precision_ms,
        duplicate_window_ms=window,
        era=world.store_config.era,
        cq_units_per_file=b.consume_queue_units_per_file,
        timer_retry_until_success=b.timer_enable_retry_until_success,
        schedule_async_deliver=b.enable_schedule_async_deliver,
        timer_roll_window_slots=_roll_window_slots(world.store_config),
    )


def _roll_window_slots(cfg) -> int:
    """timerRollWindowSlots as TimerMessageStore's constructor takes it (out of range: the wheel but its blank)."""
    whole = cfg.timer_slots_total - TIMER_BLANK_SLOTS
    return whole if not 2 <= cfg.timer_roll_window_slot <= whole else cfg.timer_roll_window_slot


def check_run(history, world) -> dict:
    return check_events(history.events, context_of(world, history.events))
