"""Statistics of a run, computed from its history alone."""

from __future__ import annotations


def percentile(values: list[int], q: float) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def run_stats(history, world=None) -> dict:
    broadcast = set()
    if world is not None:
        broadcast = {c.group for c in world.scenario.consumers if c.model == "BROADCASTING"}
    sent = consumed = failed_attempts = duplicates = 0
    seen: set[tuple[str, str]] = set()
    dlq = 0
    lateness: list[int] = []
    lateness_by_level: dict[int, list[int]] = {}
    crashes = faults = 0
    for e in history.events:
        kind = e["kind"]
        if kind == "send":
            sent += e["status"] == "SEND_OK"
        elif kind == "consume":
            if e["status"] == "CONSUME_SUCCESS":
                group = e["group"] + "/" + e["client_id"] if e["group"] in broadcast else e["group"]
                key = (group, e["msg_id"])
                if key in seen:
                    duplicates += 1
                else:
                    seen.add(key)
                consumed += 1
            else:
                failed_attempts += 1
        elif kind == "dlq":
            dlq += 1
        elif kind == "deliver":
            late = e["broker_ms"] - e["due_ms"]
            lateness.append(late)
            lateness_by_level.setdefault(e["level"], []).append(late)
        elif kind == "crash":
            crashes += 1
        elif kind == "fault":
            faults += 1
    return {
        "sent": sent,
        "consumed": consumed,
        "failed_attempts": failed_attempts,
        "duplicates": duplicates,
        "dlq": dlq,
        "delivered_from_schedule": len(lateness),
        "lateness_ms": {"p50": percentile(lateness, 0.5), "p99": percentile(lateness, 0.99),
                        "max": max(lateness) if lateness else None},
        # levels are ints and "timer": numbers first, in order, then the timer (a mixed sort raises)
        "lateness_max_ms_by_level": {str(k): max(v) for k, v in sorted(
            lateness_by_level.items(), key=lambda kv: (isinstance(kv[0], str), str(kv[0]).zfill(12)))},
        "crashes": crashes,
        "faults": faults,
    }
