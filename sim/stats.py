"""Statistics of a run, computed from its history alone (the definitions live in ``model/stats.py``)."""

from __future__ import annotations

from model.stats import percentile
from model.stats import run_stats as stats_of_events

__all__ = ["percentile", "run_stats"]


def run_stats(history, world=None) -> dict:
    events = history.events if hasattr(history, "events") else history
    if world is None:
        return stats_of_events(events)
    return stats_of_events(events, end_ms=world.end_mono_ms - world.start_mono_ms,
                           timer_precision_ms=world.store_config.timer_precision_ms, era=world.store_config.era)
