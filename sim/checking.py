"""The bridge from a simulated run to the invariant checkers of ``model/``: facts a history lacks."""

from __future__ import annotations

from model.invariants import GroupInfo, RunContext, check_events
from store.delay_level import parse_delay_level


def context_of(world) -> RunContext:
    scenario = world.scenario
    groups = []
    for spec in scenario.consumers:
        tags = None
        if spec.subscription.strip() not in ("", "*"):
            tags = frozenset(t.strip() for t in spec.subscription.split("||") if t.strip())
        groups.append(GroupInfo(
            group=spec.group, topic=spec.topic, model=spec.model,
            client_ids=tuple(f"{spec.group}-{i}@sim" for i in range(spec.instances)),
            max_reconsume_times=16 if spec.max_reconsume_times == -1 else spec.max_reconsume_times,
            tags=tags,
        ))
    tags_of = {}
    producers = scenario.producers
    for e in world.history.events:
        if e["kind"] == "send":
            tags_of[e["msg_id"]] = None
    for p in producers:
        if p.tags:
            for e in world.history.events:
                if e["kind"] == "send" and e["topic"] == p.topic:
                    tags_of[e["msg_id"]] = p.tags
    b = scenario.broker
    window = b.flush_delay_offset_interval_ms + b.flush_consumer_offset_interval_ms + 5000 + 2000
    return RunContext(
        groups=tuple(groups),
        delay_level_ms=parse_delay_level(b.message_delay_level),
        drain_start_ms=scenario.duration_ms,
        end_ms=scenario.duration_ms + scenario.drain_ms,
        timer_precision_ms=b.timer_precision_ms,
        duplicate_window_ms=window,
        extra={"tags_of": tags_of},
        era=world.store_config.era,
    )


def check_run(history, world) -> dict:
    return check_events(history.events, context_of(world))
