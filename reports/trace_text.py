"""A message's journey as terminal text: one line per hop, context lines marked ``!!`` or ``..``.

Shared by ``rmqsim trace`` and the HTML report (which embeds the same text for violating messages).
"""

from __future__ import annotations

import datetime

from model.journey import SCHEDULE_TOPIC, TIMER_TOPIC, Hop, outcome, place


def clock(broker_ms: int | None) -> str:
    """A broker timestamp as a UTC date and time to the millisecond."""
    if broker_ms is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(broker_ms / 1000, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{broker_ms % 1000:03d}"


def seconds(ms: int) -> str:
    return f"{ms / 1000:10.3f}s"


def describe(hop: Hop) -> str:
    """What happened at this hop, in RocketMQ's words."""
    e = hop.event
    kind = hop.kind
    if kind == "send":
        text = f"send to {e['topic']} queue {e['queue_id']} -> {e['status']}"
        if e.get("delay_level"):
            text += f"; delay level {e['delay_level']}, due {clock(e.get('deliver_ms'))}"
        elif e.get("timer_delay_ms") is not None:
            text += f"; timer delay {e['timer_delay_ms']} ms, due {clock(e.get('deliver_ms'))}"
        return text
    if kind == "store":
        text = (f"store in {place(e)} @ cq {e['queue_offset']}, commit log {e['phy_offset']} (+{e['size']} B), "
                f"reconsumeTimes {e['reconsume_times']}")
        if e.get("topic") == SCHEDULE_TOPIC and e.get("due_ms") is not None:
            text += f"; due {clock(e['due_ms'])}"
        if e.get("topic") == TIMER_TOPIC and e.get("timer_out_ms") is not None:
            text += f"; wheel slot {clock(e['timer_out_ms'])}"
        return text
    if kind == "preloaded":  # run --from-store: a copy the store held at the start
        text = (f"in the store at the start: {place(e)} @ cq {e['queue_offset']}, commit log {e['phy_offset']}, "
                f"stored {clock(e['store_ms'])}, reconsumeTimes {e['reconsume_times']}")
        if e.get("state") == "pending":
            text += f"; waiting for {e['real_topic']}, due {clock(e['deliver_ms'])}"
        elif e.get("state") == "delivered":
            text += "; already delivered (its delay offset is past it)"
        return text
    if kind == "consume":
        return (f"consume by {e['client_id']} from {place(e)} @ cq {e['queue_offset']}, "
                f"reconsumeTimes {e['reconsume_times']} -> {e['status']}")
    if kind == "send_back":
        level = f"delay level {e['delay_level']}" if e.get("delay_level") else "broker-chosen level"
        return (f"send back by {e['group']} ({level}, reconsumeTimes {e['reconsume_times']}, "
                f"via {e['path']}) -> {e['result']}")
    if kind == "deliver":
        level = e["level"]
        source = "timer wheel" if level == "timer" else f"{SCHEDULE_TOPIC} level {level}"
        late_ms = e["broker_ms"] - e["due_ms"]
        text = (f"deliver from {source} to {e['topic']} queue {e['queue_id']}; due {clock(e['due_ms'])}, "
                f"{'late' if late_ms >= 0 else 'EARLY'} {abs(late_ms)} ms")
        if e.get("resend"):
            text += " (resend)"
        return text
    if kind == "dlq":
        return f"dead-lettered to %DLQ%{e['group']} after reconsumeTimes {e['reconsume_times']}"
    if kind == "crash":
        return f"CRASH {e['target']} ({e['crash_kind']}{', at ' + e['site'] if e.get('site') else ''})"
    if kind == "restart":
        ok = "" if e.get("ok", True) else f" FAILED: {e.get('error')}"
        return f"RESTART {e['target']}{ok}"
    if kind == "offset_commit":
        who = e.get("client_id") or e["group"]
        text = f"offset commit by {who}: {e['topic']} queue {e['queue_id']} -> {e['offset']} (passes this copy"
        return text + (" BEFORE it was consumed)" if hop.extra.get("before_consume") else ")")
    if kind == "persist":
        times = f" x{hop.count}" if hop.count > 1 else ""
        return f"flush {e['file']}{times} while a copy is pending"
    if kind == "fault":
        return f"FAULT {e['site']}: {e['action']}{' (' + e['detail'] + ')' if e.get('detail') else ''}"
    if kind in ("store_rollback", "cq_truncate"):
        return f"{kind.upper()} cuts this message"
    return kind


_MARK = {"crash": "!!", "restart": "!!", "fault": "!!", "store_rollback": "!!", "cq_truncate": "!!"}


def broker_time(hop: Hop) -> int | None:
    return hop.event.get("broker_ms")


def render(msg_id: str, hops: list[Hop], why: str | None = None) -> str:
    """The journey as text; ``why`` is the invariant's explanation when a violation names the message."""
    lines = [f"message {msg_id}: {outcome(hops)}"]
    if why:
        lines.append(f"  VIOLATION {why}")
    lines.append(f"  {'seq':>6} {'virtual':>11}  {'broker clock (UTC)':<23}  event")
    for hop in hops:
        mark = _MARK.get(hop.kind, "..") if hop.context else "  "
        if hop.extra.get("before_consume"):
            mark = "!!"
        lines.append(f"{mark}{hop.seq:>6} {seconds(hop.t_ms)}  {clock(broker_time(hop)):<23}  {describe(hop)}")
    return "\n".join(lines) + "\n"
