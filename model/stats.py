"""Statistics of a run, from its history alone: the one place that defines them (summary.json, sweep rows, reports).

Delivery lateness is measured one way everywhere: on the simulator's monotonic clock, from the due time
of the scheduled copy (its store time plus the delay it was given, ``due_ms - broker_ms`` of its store
event, or of the delivery for the timer) to the delivery back to the real topic. Without clock steps this
is the broker clock's ``broker_ms - due_ms`` of the delivery; a broker clock that jumps (and a scheduler that
does not correct for it) shows up as lateness, which the broker clock alone would hide.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from model.topics import RETRY_PREFIX, SCHEDULE_TOPIC, TIMER_TOPIC  # noqa: F401 (re-exported)

CONSUME_SUCCESS = "CONSUME_SUCCESS"
POLL_SLACK_MS = 100 + 10 + 1  # a level's 100 ms poll, the async handler's 10 ms, one reput round
CONSUME_SLACK_MS = 1000  # from the real topic to a consumer: dispatch, a held pull woken, the network, a consume
# After a broker restart its ConsumerManager is empty and a pull answers SUBSCRIPTION_NOT_EXIST until the client's
# heartbeat (the client tries again PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION = 3 s later): a 4.9.8 client heartbeats
# every heartbeatBrokerInterval (30 s); a 5.3.3 client at once when a request reconnects (onChannelActive), so
# its second pull after the restart is served.
PULL_RETRY_MS = 3000  # DefaultMQPushConsumerImpl.pullTimeDelayMillsWhenException: a failed pull is tried again
RESUME_AFTER_BROKER_RESTART_MS = {"4.9.8": 30_000 + PULL_RETRY_MS, "5.3.3": 2 * PULL_RETRY_MS}


def percentile(values: list[int], q: float) -> int | None:
    """Nearest-rank percentile (``q`` in [0, 1]); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def is_schedule_store(e: dict) -> bool:
    return e["kind"] == "store" and e["topic"] in (SCHEDULE_TOPIC, TIMER_TOPIC)


def is_pending_preloaded(e: dict) -> bool:
    """A scheduled copy the store held at the start of a ``run --from-store``, still to be delivered."""
    return e["kind"] == "preloaded" and e["state"] == "pending" and e["deliver_ms"] is not None


def due_mono_of_preloaded(e: dict) -> int:
    """The monotonic due time of a pending preloaded copy: the run's start maps to ``broker_ms``; ``due_ms`` when the
    broker corrects the stored due time (``deliver_ms``) to now."""
    return e["t_ms"] + max(0, e.get("due_ms", e["deliver_ms"]) - e["broker_ms"])


def due_mono_of_store(store: dict) -> int | None:
    """The monotonic due time of a scheduled copy, from its store event alone (None when not scheduled)."""
    if store["topic"] == SCHEDULE_TOPIC and "due_ms" in store:
        return store["t_ms"] + max(0, store["due_ms"] - store["broker_ms"])
    if store["topic"] == TIMER_TOPIC and "timer_out_ms" in store:
        return store["t_ms"] + max(0, store["timer_out_ms"] - store["broker_ms"])
    return None


@dataclass(frozen=True)
class Lateness:
    msg_id: str
    level: int | str  # a delay level or "timer"
    t_ms: int  # the delivery
    due_mono_ms: int
    lateness_ms: int
    retry: bool  # the delivery of a retry (to %RETRY%group)

    @property
    def label(self) -> str:
        return "timer" if self.level == "timer" else f"L{self.level}"


_LATENESS_KINDS = frozenset({"store", "preloaded", "deliver"})


def delivery_lateness(events: list[dict]) -> list[Lateness]:
    """One record per delivery of a scheduled copy whose store event the history holds, in history order.

    A level's delivery belongs to the copy it was read from: the latest copy of the message stored (or preloaded,
    ``run --from-store``) before it at the level's queue offset it names (an offset is used again after a
    consume-queue cut or rollback), measured from that copy's due time. Its own due time may be no copy's: a power failure can tear the unit and zero its
    tagsCode (explore seed 1000000067), and the message's last store is then a later copy. Without a copy at its
    offset (a timer delivery, a unit indexed again elsewhere after a power failure) it belongs to the copy stored
    with its due time: a level may deliver a copy again after the message was stored at another level (explore
    seed 4137813379); else to the message's last store."""
    last_store: dict[str, dict] = {}
    store_by_due: dict[tuple[str, int], dict] = {}
    copy_at: dict[tuple[str, int, int], dict] = {}  # (msg_id, level queue, queue offset) -> the latest copy there
    out = []
    for e in events:
        if e["kind"] not in _LATENESS_KINDS:  # most of a sparse history is persist events
            continue
        if is_schedule_store(e) or is_pending_preloaded(e):  # the broker_ms of a preloaded copy is the run's start
            last_store[e["msg_id"]] = e
            if e["kind"] == "store" and "due_ms" in e:
                store_by_due[(e["msg_id"], e["due_ms"])] = e
            if e["topic"] == SCHEDULE_TOPIC and "queue_offset" in e and (e["kind"] == "preloaded" or "due_ms" in e):
                copy_at[(e["msg_id"], e["queue_id"], e["queue_offset"])] = e
        elif e["kind"] == "deliver":
            level, offset = e["level"], e.get("schedule_queue_offset", -1)
            copy = copy_at.get((e["msg_id"], level - 1, offset)) if isinstance(level, int) and offset >= 0 else None
            if copy is not None:
                due_mono = due_mono_of_preloaded(copy) if copy["kind"] == "preloaded" else due_mono_of_store(copy)
            else:
                store = store_by_due.get((e["msg_id"], e["due_ms"])) or last_store.get(e["msg_id"])
                if store is None:
                    continue
                due_mono = (due_mono_of_preloaded(store) if store["kind"] == "preloaded"
                            else store["t_ms"] + max(0, e["due_ms"] - store["broker_ms"]))
            out.append(Lateness(e["msg_id"], level, e["t_ms"], due_mono, e["t_ms"] - due_mono,
                                e["topic"].startswith(RETRY_PREFIX)))
    return out


def lateness_summary(records: list[Lateness]) -> dict:
    values = [r.lateness_ms for r in records]
    return {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "max": max(values) if values else None}


def max_lateness_by_level(records: list[Lateness]) -> dict[str, int]:
    """Level (as a string, "timer" for the wheel) -> the largest lateness, levels in numeric order."""
    per: dict[str, int] = {}
    for r in records:
        key = str(r.level)
        per[key] = max(per.get(key, r.lateness_ms), r.lateness_ms)
    return dict(sorted(per.items(), key=lambda kv: (not kv[0].isdigit(), int(kv[0]) if kv[0].isdigit() else 0)))


def broadcast_groups(events: list[dict]) -> set[str]:
    return {e["group"] for e in events if e["kind"] == "consumer_start" and e["model"] == "BROADCASTING"}


def duplicate_consumes(events: list[dict]) -> int:
    """Successful consumes of a message its group (its instance, when broadcasting) had already consumed."""
    broadcast = broadcast_groups(events)
    seen: set[tuple[str, str]] = set()
    count = 0
    for e in events:
        if e["kind"] == "consume" and e["status"] == CONSUME_SUCCESS:
            group = e["group"] + "/" + e["client_id"] if e["group"] in broadcast else e["group"]
            key = (group, e["msg_id"])
            count += key in seen
            seen.add(key)
    return count


def time_to_dlq_ms(events: list[dict]) -> list[int]:
    """For each DLQ event: its time minus the first send of the same message (virtual ms)."""
    first_send: dict[str, int] = {}
    out = []
    for e in events:
        if e["kind"] == "send" and e["msg_id"] not in first_send:
            first_send[e["msg_id"]] = e["t_ms"]
        elif e["kind"] == "dlq" and e["msg_id"] in first_send:
            out.append(e["t_ms"] - first_send[e["msg_id"]])
    return out


def pending_messages(events: list[dict], end_ms: int, timer_precision_ms: int = 1000,
                     era: str | None = None) -> dict[str, int]:
    """msg_id -> the monotonic time from which it can be consumed, for each message not due early enough.

    A message is pending when the time it becomes consumable plus the documented polling bound falls after
    ``end_ms`` (the end of the drain): its last scheduled copy (a delay level, a retry level or the timer)
    not yet delivered, due at ``due_mono_of_store`` + ``POLL_SLACK_MS`` (+ the timer's precision), or its
    last copy stored in a consumable topic, but no earlier than the clients of ``era`` pull again after the
    broker's last restart (``RESUME_AFTER_BROKER_RESTART_MS``); then ``CONSUME_SLACK_MS`` for a consumer to get
    it. Such a message was not lost: the run ended before it could be consumed."""
    last: dict[str, dict] = {}
    restarted_ms = -1
    for e in events:
        if e["kind"] in ("store", "deliver", "preloaded") and e.get("msg_id"):
            last[e["msg_id"]] = e
        elif e["kind"] == "restart" and e["target"] == "broker" and e.get("ok") is not False:
            restarted_ms = e["t_ms"]
    resumed_ms = restarted_ms + RESUME_AFTER_BROKER_RESTART_MS[era] if era and restarted_ms >= 0 else -1
    out = {}
    for msg_id, e in last.items():
        if is_pending_preloaded(e):  # run --from-store: still scheduled at the start
            ready = due_mono_of_preloaded(e) + POLL_SLACK_MS + (2 * timer_precision_ms if e["topic"] == TIMER_TOPIC else 0)
        elif e["kind"] == "store" and is_schedule_store(e):
            due = due_mono_of_store(e)
            if due is None:
                continue
            ready = due + POLL_SLACK_MS + (2 * timer_precision_ms if e["topic"] == TIMER_TOPIC else 0)
        else:
            ready = e["t_ms"]
        ready = max(ready, resumed_ms)
        if ready + CONSUME_SLACK_MS > end_ms:
            out[msg_id] = ready
    return out


def run_stats(events: list[dict], end_ms: int | None = None, timer_precision_ms: int = 1000,
              era: str | None = None) -> dict:
    """The ``stats`` of summary.json (and the sweep rows): counts, duplicates, lateness, time to DLQ, pending."""
    sent = consumed = failed_attempts = dlq = crashes = faults = unstored = 0
    for e in events:
        kind = e["kind"]
        if kind == "send":
            sent += e["status"] == "SEND_OK"
        elif kind == "consume":
            if e["status"] == CONSUME_SUCCESS:
                consumed += 1
            else:
                failed_attempts += 1
        elif kind == "dlq":
            dlq += 1
        elif kind == "crash":
            crashes += 1
        elif kind == "fault":
            faults += 1
        elif kind == "unstored":
            unstored += 1
    lateness = delivery_lateness(events)
    dlq_times = time_to_dlq_ms(events)
    sent_ok = {e["msg_id"] for e in events if e["kind"] == "send" and e["status"] == "SEND_OK"}
    done = {e["msg_id"] for e in events if (e["kind"] == "consume" and e["status"] == CONSUME_SUCCESS)
            or e["kind"] == "dlq"}
    pending = pending_messages(events, end_ms, timer_precision_ms, era) if end_ms is not None else {}
    return {
        "sent": sent,
        "consumed": consumed,
        "failed_attempts": failed_attempts,
        "duplicates": duplicate_consumes(events),
        "dlq": dlq,
        "delivered_from_schedule": len(lateness),
        "lateness_ms": lateness_summary(lateness),
        "lateness_max_ms_by_level": max_lateness_by_level(lateness),
        "time_to_dlq_ms": {"p50": percentile(dlq_times, 0.5), "max": max(dlq_times) if dlq_times else None},
        "pending": sum(1 for m in pending if m in sent_ok and m not in done),  # sent, not yet due: not lost
        "crashes": crashes,
        "faults": faults,
        "unstored": unstored,  # puts answered PUT_OK that stored nothing (records larger than a commit-log file)
    }


def lateness_by_label(events: list[dict]) -> dict[str, list[Lateness]]:
    """Deliveries grouped by level label (``L3``, ``timer``), for plots."""
    out: dict[str, list[Lateness]] = defaultdict(list)
    for r in delivery_lateness(events):
        out[r.label].append(r)
    return out
