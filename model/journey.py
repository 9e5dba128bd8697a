"""One message's journey through a run's history: its own events plus the context that matters to it.

Pure (stdlib only) so the terminal trace and the HTML report draw the same hops. A hop is one event
of the message (send, store of a copy, consume, send_back, deliver, dlq); context lines are
crashes and restarts (always), offset commits on a queue that held a copy of the message, and
offset flushes (``persist``) while a copy was pending, collapsed to one line per run of flushes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
TIMER_TOPIC = "rmq_sys_wheel_timer"
OWN_KINDS = ("preloaded", "send", "store", "consume", "send_back", "deliver", "dlq")  # preloaded: run --from-store
_ALWAYS_KINDS = ("crash", "restart")  # few, and each may decide the message's fate
_SPAN_KINDS = ("fault",)  # injected faults while the message is in flight
_LOSS_KINDS = ("store_rollback", "cq_truncate")  # these name the messages they cut


@dataclass
class Hop:
    """One line of a journey; ``context`` is True for events that are not the message's own."""

    seq: int
    t_ms: int
    kind: str
    event: dict
    context: bool = False
    count: int = 1  # how many flushes a collapsed ``persist`` line stands for
    extra: dict = field(default_factory=dict)


def place(event: dict) -> str:
    """Where a stored copy sits, in RocketMQ's words (level for schedule queues, wheel for timers)."""
    topic = event.get("queue_topic") or event.get("topic") or ""
    queue_id = event.get("queue_id")
    if topic == SCHEDULE_TOPIC and queue_id is not None:
        return f"{SCHEDULE_TOPIC} level {queue_id + 1} (queue {queue_id})"
    if topic == TIMER_TOPIC:
        return "timer wheel"
    if queue_id is None:
        return topic
    return f"{topic} queue {queue_id}"


def message_ids(events: list[dict]) -> list[str]:
    """Every message id in the history, in first-seen order."""
    seen: dict[str, None] = {}
    for event in events:
        msg_id = event.get("msg_id")
        if msg_id is not None and event.get("kind") in OWN_KINDS:
            seen.setdefault(msg_id, None)
    return list(seen)


def build_journey(events: list[dict], msg_id: str) -> list[Hop]:
    """The message's hops with the context that matters to it, in history (seq) order."""
    own = [e for e in events if e.get("msg_id") == msg_id and e.get("kind") in OWN_KINDS]
    if not own:
        return []
    queues = {(e.get("topic"), e.get("queue_id")) for e in own if e.get("kind") in ("store", "preloaded")}
    queues |= {(e.get("queue_topic"), e.get("queue_id")) for e in own if e.get("kind") == "consume"}
    first_seq = own[0]["seq"]
    last_seq = own[-1]["seq"]
    pending = _pending_spans(own)
    hops: list[Hop] = []
    for event in events:
        kind = event.get("kind")
        seq = event.get("seq", 0)
        if event.get("msg_id") == msg_id and kind in OWN_KINDS:
            hops.append(Hop(seq, event.get("t_ms", 0), kind, event))
        elif kind in _ALWAYS_KINDS or (kind in _SPAN_KINDS and first_seq <= seq <= last_seq):
            hops.append(Hop(seq, event.get("t_ms", 0), kind, event, context=True))
        elif kind in _LOSS_KINDS and msg_id in (event.get("lost_msg_ids") or event.get("cut_msg_ids") or ()):
            hops.append(Hop(seq, event.get("t_ms", 0), kind, event, context=True))
        elif kind == "offset_commit" and first_seq <= seq and (event.get("topic"), event.get("queue_id")) in queues:
            hops.append(Hop(seq, event.get("t_ms", 0), kind, event, context=True))
        elif kind == "persist" and any(a <= seq <= b for a, b, f in pending if f == event.get("file")):
            if hops and hops[-1].kind == "persist" and hops[-1].event.get("file") == event.get("file"):
                hops[-1].count += 1
            else:
                hops.append(Hop(seq, event.get("t_ms", 0), kind, event, context=True))
    return hops


def _pending_spans(own: list[dict]) -> list[tuple[int, int, str]]:
    """Seq spans in which a copy waited, with the offset file whose flush decides its fate after a crash:
    delayOffset.json for a SCHEDULE_TOPIC_XXXX copy, timercheck for a timer copy, else consumerOffset.json."""
    spans = []
    open_seq, file = None, ""
    for event in own:
        if event["kind"] == "store" and open_seq is None:
            open_seq = event["seq"]
            topic = event.get("topic")
            file = ("delayOffset.json" if topic == SCHEDULE_TOPIC else
                    "timercheck" if topic == TIMER_TOPIC else "consumerOffset.json")
        elif event["kind"] in ("consume", "deliver", "dlq") and open_seq is not None:
            spans.append((open_seq, event["seq"], file))
            open_seq = None
    if open_seq is not None:
        spans.append((open_seq, 1 << 62, file))
    return spans


def mark_first_passing_commits(hops: list[Hop], own_events: list[dict]) -> list[Hop]:
    """Drop commits that pass an offset an earlier kept commit already passed."""
    kept: list[Hop] = []
    passed: set[tuple] = set()
    stores = [(e.get("topic"), e.get("queue_id"), e.get("queue_offset")) for e in own_events if e["kind"] == "store"]
    for hop in hops:
        if hop.kind != "offset_commit":
            kept.append(hop)
            continue
        key = (hop.event.get("topic"), hop.event.get("queue_id"))
        new = {s for s in stores if (s[0], s[1]) == key and s[2] is not None and hop.event["offset"] > s[2]} - passed
        if new:
            passed |= new
            consumed = {(e.get("queue_topic"), e.get("queue_id"), e.get("queue_offset")) for e in own_events
                        if e["kind"] == "consume" and e["seq"] < hop.seq}
            # a commit past a copy nobody has consumed yet: what loses a message if the consumer then crashes
            hop.extra["before_consume"] = any(s not in consumed for s in new)
            kept.append(hop)
    return kept


def journey(events: list[dict], msg_id: str) -> list[Hop]:
    """build_journey with only the first commit passing each stored copy. The history records causes
    before effects (a send, send_back or deliver before the store of the copy it made), so history
    order is the order things happened in."""
    own = [e for e in events if e.get("msg_id") == msg_id and e.get("kind") in OWN_KINDS]
    return mark_first_passing_commits(build_journey(events, msg_id), own)


def outcome(hops: list[Hop]) -> str:
    """How the journey ends: dlq, consumed, pending or lost-looking (no successful consume)."""
    own = [h for h in hops if not h.context]
    if any(h.kind == "dlq" for h in own):
        return "dead-lettered"
    if any(h.kind == "consume" and h.event.get("status") == "CONSUME_SUCCESS" for h in own):
        return "consumed"
    if any(h.kind == "preloaded" and h.event.get("topic", "").startswith("%DLQ%") for h in own):
        return "dead-lettered before the run (in the store it started on)"
    return "not consumed"
