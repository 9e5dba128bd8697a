"""The history schema: every event kind a run records, and its fields (DESIGN.md, run output).

One place declares what a history may hold, so that the writers (``sim/``), the checkers and the
statistics agree on it. ``History.record`` checks every event's kind and field names against
``EVENTS`` (cheap: two set comparisons); ``validate_event`` also checks the field types and is what
the tests run on every history they produce. Every event also has ``seq``, ``t_ms`` and ``kind``.
A new field or kind is declared here first.
"""

from __future__ import annotations

from dataclasses import dataclass

COMMON = ("seq", "t_ms", "kind")
_INT, _STR, _BOOL, _LIST, _DICT = (int,), (str,), (bool,), (list, tuple), (dict,)
_OPT_INT, _OPT_STR = (int, type(None)), (str, type(None))


@dataclass(frozen=True)
class EventKind:
    """``required`` and ``optional`` map a field name to the Python types its value may have."""

    required: dict
    optional: dict

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.required) | frozenset(self.optional)


def _kind(required: dict, optional: dict | None = None) -> EventKind:
    return EventKind(required, optional or {})


EVENTS: dict[str, EventKind] = {
    # a producer's send; deliver_ms: the due time of its scheduled copy; tags: the message's TAGS
    "send": _kind({"msg_id": _STR, "topic": _STR, "queue_id": _INT, "delay_level": _INT,
                   "timer_delay_ms": _OPT_INT, "deliver_ms": _OPT_INT, "status": _STR, "tags": _OPT_STR}),
    # every successful append; due_ms (broker clock) on a SCHEDULE_TOPIC_XXXX copy, timer_out_ms on a timer copy.
    # msg_id (store, deliver, dlq): the copy's UNIQ_KEY, None for a copy without one -- a power failure tore a copy
    # after its body (zeroed properties pass recovery) and its retries copy the properties it has (seed 940000253)
    "store": _kind({"msg_id": _OPT_STR, "topic": _STR, "queue_id": _INT, "queue_offset": _INT, "phy_offset": _INT,
                    "size": _INT, "reconsume_times": _INT, "broker_ms": _INT},
                   {"timer_out_ms": _INT, "due_ms": _INT}),
    # a put answered PUT_OK that stored nothing: the record is larger than a whole commit-log file, so it ended
    # the file it met and a new one (two blanks; phy_offset: the second). RocketMQ's loss (CommitLog END_OF_FILE)
    "unstored": _kind({"msg_id": _OPT_STR, "topic": _STR, "queue_id": _INT, "phy_offset": _INT,
                       "reconsume_times": _INT, "broker_ms": _INT}),
    "dlq": _kind({"group": _STR, "msg_id": _OPT_STR, "reconsume_times": _INT}),
    # run --from-store: one message copy the recovered store held at the start (t_ms 0), in commit-log order.
    # store_ms: when the old broker stored it; broker_ms: the run's broker clock at the start; deliver_ms: the
    # broker-clock due time of a scheduled copy (SCHEDULE_TOPIC_XXXX, timer); state: "pending" (scheduled, still
    # to be delivered), "delivered" (scheduled, its delay offset is past it) or "stored" (a consumable copy);
    # offsets: group -> committed offset (consumerOffset.json) of the queue it is consumed from (its real one)
    "preloaded": _kind({"msg_id": _STR, "topic": _STR, "queue_id": _INT, "queue_offset": _INT, "phy_offset": _INT,
                        "size": _INT, "store_ms": _INT, "broker_ms": _INT, "reconsume_times": _INT,
                        "tags": _OPT_STR, "real_topic": _OPT_STR, "real_queue_id": _OPT_INT, "delay_level": _INT,
                        "deliver_ms": _OPT_INT, "state": _STR, "offsets": _DICT},
                       {"due_ms": _INT}),  # due at once (correctDeliverTimestamp): the run's level-delay is shorter
    # a scheduled message put back to its real topic; level: a delay level or "timer"
    "deliver": _kind({"msg_id": _OPT_STR, "level": (int, str), "due_ms": _INT, "topic": _STR, "queue_id": _INT,
                      "broker_ms": _INT, "schedule_queue_offset": _INT}, {"slot_ms": _INT, "resend": _BOOL}),
    "consume": _kind({"group": _STR, "client_id": _STR, "msg_id": _STR, "topic": _STR, "queue_topic": _STR,
                      "queue_id": _INT, "queue_offset": _INT, "reconsume_times": _INT, "status": _STR}),
    "send_back": _kind({"group": _STR, "msg_id": _STR, "reconsume_times": _INT, "delay_level": _INT,
                        "result": _STR, "path": _STR}),
    # a local retry (send-back failed) skipped because its ProcessQueue was dropped before it came due
    "local_retry_dropped": _kind({"group": _STR, "client_id": _STR, "msg_id": _STR, "queue_topic": _STR,
                                  "queue_id": _INT, "queue_offset": _INT, "reconsume_times": _INT}),
    "offset_commit": _kind({"group": _STR, "topic": _STR, "queue_id": _INT, "offset": _INT},
                           {"client_id": _STR}),
    # one per consumer instance start (and restart): what the checks need to know about the group
    "consumer_start": _kind({"group": _STR, "client_id": _STR, "topic": _STR, "subscription": _STR,
                             "model": _STR, "max_reconsume_times": _INT}),
    "persist": _kind({"file": _STR}),
    "fault": _kind({"site": _STR, "action": _STR}, {"detail": _STR, "by_ms": _INT, "broker_ms": _INT}),
    "crash": _kind({"target": _STR, "crash_kind": _STR},
                   {"site": _STR, "commit_log_durable": _INT, "timer_read_ms": _INT}),
    "restart": _kind({"target": _STR}, {"ok": _BOOL, "last_exit_ok": _BOOL, "commit_log_end": _INT, "error": _STR}),
    "store_rollback": _kind({"snapshot_t_ms": _INT, "lost_msg_ids": _LIST}),
    "cq_truncate": _kind({"topic": _STR, "queue_id": _INT, "from_offset": _INT, "to_offset": _INT,
                          "cut_msg_ids": _LIST}),
    "cq_unindexed": _kind({"msg_id": _OPT_STR, "topic": _STR, "queue_id": _INT, "queue_offset": _INT,
                           "phy_offset": _INT, "unit_phy_offset": _OPT_INT}),
    "timer_torn_unit": _kind({"slot_ms": _INT, "timer_log_pos": _INT}),
    # a WARN or ERROR line of the broker, a store service or a client; fault_site: the injected fault behind it
    "log": _kind({"level": _STR, "logger": _STR, "message": _STR, "fault_site": _OPT_STR}),
    "drain": _kind({}),
}
NAMES = {kind: spec.names for kind, spec in EVENTS.items()}
REQUIRED = {kind: frozenset(spec.required) for kind, spec in EVENTS.items()}


class HistorySchemaError(ValueError):
    """An event that the schema does not declare: a bug of whatever recorded it."""


def check_fields(kind: str, fields) -> None:
    """The cheap check ``History.record`` makes on every event: a declared kind, no missing or unknown field."""
    names = NAMES.get(kind)
    if names is None:
        raise HistorySchemaError(f"unknown history event kind {kind!r}: declare it in model/history.py")
    keys = fields.keys()
    if not (REQUIRED[kind] <= keys and keys <= names):
        missing = sorted(REQUIRED[kind] - keys)
        unknown = sorted(keys - names)
        raise HistorySchemaError(f"history event {kind!r}: missing {missing}, undeclared {unknown} "
                                 f"(declare new fields in model/history.py)")


def validate_event(event: dict) -> None:
    """The full check of one recorded event: common fields, kind, field names and value types."""
    for name in COMMON:
        if name not in event:
            raise HistorySchemaError(f"history event without {name!r}: {event}")
    if not isinstance(event["seq"], int) or not isinstance(event["t_ms"], int):
        raise HistorySchemaError(f"history event with a non-integer seq or t_ms: {event}")
    kind = event["kind"]
    fields = {k: v for k, v in event.items() if k not in COMMON}
    check_fields(kind, fields)
    spec = EVENTS[kind]
    for name, value in fields.items():
        types = spec.required.get(name) or spec.optional[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise HistorySchemaError(f"history event {kind!r} field {name!r}: {value!r} is not "
                                     f"{' or '.join(t.__name__ for t in types)} (seq {event['seq']})")


def validate_history(events: list[dict]) -> int:
    """Every event valid, ``seq`` counting from 0, ``t_ms`` never going back; returns the number of events."""
    last_t = None
    for i, event in enumerate(events):
        validate_event(event)
        if event["seq"] != i:
            raise HistorySchemaError(f"history event {i} has seq {event['seq']}")
        if last_t is not None and event["t_ms"] < last_t:
            raise HistorySchemaError(f"history event {i} goes back in time ({event['t_ms']} < {last_t})")
        last_t = event["t_ms"]
    return len(events)
