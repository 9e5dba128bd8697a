"""Text for ``rmqsim inspect STORE --key KEY``: one line per copy, then one plain sentence."""

from __future__ import annotations

import datetime


def _date(ms: int | None) -> str:
    if ms is None:
        return "?"
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _span(ms: int | None) -> str:
    if ms is None:
        return "?"
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def copy_line(copy: dict) -> str:
    place = f"{copy['topic']} queue {copy['queue_id']}"
    if copy["kind"] == "schedule":
        place += f" (level {copy['level']}, {_span(copy['delay_ms'])})"
    line = (f"  {place} offset {copy['queue_offset']}  phy {copy['phy_offset']}  stored {_date(copy['store_timestamp'])}"
            f"  reconsumeTimes {copy['reconsume_times']}")
    if copy.get("deliver_ms") is not None:
        line += f"  deliver {_date(copy['deliver_ms'])}"
    if copy["kind"] == "schedule":
        line += "  delivered" if copy["delivered"] else "  pending"
    return line


def where_sentence(state: dict) -> str:
    s = state["state"]
    if s == "not_found":
        return "not found in the commit log"
    if s == "dlq":
        return (f"in {state['topic']} since {_date(state['since_ms'])} (broker clock), "
                f"after {state['attempts']} attempts")
    if s == "waiting_delay":
        return (f"waiting in delay level {state['level']} until {_date(state['deliver_ms'])} (broker clock) "
                f"for {state['real_topic']}; its group has not consumed it")
    if s == "delivered_from_delay":
        return (f"delivered from delay level {state['level']} to {state['real_topic']}, "
                f"but that copy is not in the commit log")
    if s == "waiting_timer":
        return f"waiting in the timer wheel until {_date(state['deliver_ms'])} (broker clock) for {state['real_topic']}"
    if s == "timer_read_past":
        return (f"the timer wheel read its slot (deliver {_date(state['deliver_ms'])}, timercheck read time "
                f"{_date(state['timer_read_ms'])}), but its copy in {state['real_topic']} is not in the commit log")
    parts = []
    for group, done in state["consumed_by"].items():
        committed = state["committed"][group]
        rel = "<" if done else ">="
        verb = "consumed by" if done else "not yet consumed by"
        parts.append(f"{verb} {group} (offset {state['queue_offset']} {rel} committed {committed})")
    if not parts:
        return f"in {state['topic']} queue {state['queue_id']} offset {state['queue_offset']}; no group has committed an offset on it"
    return f"in {state['topic']} queue {state['queue_id']}: " + "; ".join(parts)


def format_location(result: dict) -> str:
    lines = [f"message {result['key']}: {len(result['copies'])} cop{'y' if len(result['copies']) == 1 else 'ies'}"]
    lines += [copy_line(c) for c in result["copies"]]
    lines.append("where: " + where_sentence(result["where"]))
    return "\n".join(lines) + "\n"
