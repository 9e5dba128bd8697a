"""Where is my message? Find every copy of one message in a store and say where it is now.

Works on the document of ``store.inspect.inspect_store_dir`` (the store's own decoder, every record):
a message is matched by its UNIQ_KEY, one of its KEYS or its offsetMsgId; its copies (SCHEDULE_TOPIC_XXXX,
%RETRY%group, %DLQ%group, the timer topic) carry the same UNIQ_KEY. delayOffset.json says which schedule
units were delivered, consumerOffset.json which units a group has consumed (offset < committed).
"""

from __future__ import annotations

from .config import DEFAULT_DELAY_LEVELS
from .delay_level import parse_delay_level

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
TIMER_TOPIC = "rmq_sys_wheel_timer"


def _matches(record: dict, key: str) -> bool:
    props = record.get("properties") or {}
    if props.get("UNIQ_KEY") == key or record.get("msg_id") == key:
        return True
    return key in (props.get("KEYS") or "").split(" ")


def _kind(topic: str) -> str:
    if topic == SCHEDULE_TOPIC:
        return "schedule"
    if topic == TIMER_TOPIC:
        return "timer"
    if topic.startswith(DLQ_PREFIX):
        return "dlq"
    if topic.startswith(RETRY_PREFIX):
        return "retry"
    return "topic"


def _offset_table(config: dict, name: str) -> dict:
    doc = config.get(name) or config.get(name + ".bak") or {}
    table = doc.get("offsetTable") if isinstance(doc, dict) else None
    return table if isinstance(table, dict) else {}


def delay_levels_ms(config: dict) -> dict[int, int]:
    """The level -> delay table: the store's messageDelayLevel is not in the store, so the default."""
    return parse_delay_level(DEFAULT_DELAY_LEVELS)


def _committed(consumer_offsets: dict, topic: str) -> dict[str, dict[int, int]]:
    """group -> {queue id: committed offset} for one topic, from consumerOffset.json's ``topic@group`` keys."""
    result: dict[str, dict[int, int]] = {}
    for key in sorted(consumer_offsets):
        name, _, group = str(key).rpartition("@")
        if name == topic and isinstance(consumer_offsets[key], dict):
            result[group] = {int(q): int(o) for q, o in consumer_offsets[key].items()}
    return result


def locate_message(doc: dict, key: str, *, delay_ms: dict[int, int] | None = None) -> dict:
    """Every copy of the message named by ``key`` and a plain statement of where it is (JSON-serialisable)."""
    records = doc["commitlog"]["records"]
    config = doc.get("config") or {}
    levels = delay_ms if delay_ms is not None else delay_levels_ms(config)
    direct = [r for r in records if _matches(r, key)]
    uniq = {(r.get("properties") or {}).get("UNIQ_KEY") for r in direct} - {None}
    ids = {r.get("msg_id") for r in direct}
    copies_raw = [r for r in records
                  if r in direct or (r.get("properties") or {}).get("UNIQ_KEY") in uniq
                  or (r.get("properties") or {}).get("ORIGIN_MESSAGE_ID") in ids]
    delay_offsets = {int(k): int(v) for k, v in _offset_table(config, "delayOffset.json").items()}
    consumer_offsets = _offset_table(config, "consumerOffset.json")
    copies = []
    for r in sorted(copies_raw, key=lambda r: r["phy_offset"]):
        props = r.get("properties") or {}
        copy = {
            "kind": _kind(r["topic"]), "topic": r["topic"], "queue_id": r["queue_id"],
            "queue_offset": r["queue_offset"], "phy_offset": r["phy_offset"], "msg_id": r.get("msg_id"),
            "store_timestamp": r["store_timestamp"], "reconsume_times": r["reconsume_times"],
            "real_topic": props.get("REAL_TOPIC"),
        }
        if copy["kind"] == "schedule":
            level = r["queue_id"] + 1
            copy["level"] = level
            copy["delay_ms"] = levels.get(level)
            copy["deliver_ms"] = r["store_timestamp"] + levels[level] if level in levels else None
            delivered_to = delay_offsets.get(level)
            copy["delivered"] = delivered_to is not None and r["queue_offset"] < delivered_to
        elif copy["kind"] == "timer":
            deliver = props.get("TIMER_OUT_MS") or props.get("TIMER_DELIVER_MS")
            copy["deliver_ms"] = int(deliver) if deliver and deliver.lstrip("-").isdigit() else None
        else:
            groups = _committed(consumer_offsets, r["topic"])
            copy["consumed_by"] = {g: r["queue_offset"] < q.get(r["queue_id"], 0) for g, q in groups.items()}
            copy["committed"] = {g: q.get(r["queue_id"]) for g, q in groups.items()}
        copies.append(copy)
    state = where(copies)
    timer_checkpoint = (doc.get("timer") or {}).get("checkpoint") or {}
    if state["state"] == "waiting_timer" and "last_read_time_ms" in timer_checkpoint:
        read_ms = timer_checkpoint["last_read_time_ms"]
        state["timer_read_ms"] = read_ms
        if state["deliver_ms"] is not None and read_ms > state["deliver_ms"]:
            state["state"] = "timer_read_past"  # the wheel read its slot; the topic copy is not in the log
    return {"key": key, "found": bool(copies), "copies": copies, "where": state}


def where(copies: list[dict]) -> dict:
    """The message's current place: the last copy written decides (a retry or DLQ copy supersedes the rest)."""
    if not copies:
        return {"state": "not_found"}
    last = copies[-1]
    state: dict = {"topic": last["topic"], "queue_id": last["queue_id"], "queue_offset": last["queue_offset"],
                   "since_ms": last["store_timestamp"], "attempts": last["reconsume_times"]}
    if last["kind"] == "dlq":
        state["state"] = "dlq"
        state["group"] = last["topic"][len(DLQ_PREFIX):]
    elif last["kind"] == "schedule":
        state["state"] = "delivered_from_delay" if last["delivered"] else "waiting_delay"
        state.update(level=last["level"], deliver_ms=last["deliver_ms"], real_topic=last["real_topic"])
    elif last["kind"] == "timer":
        state["state"] = "waiting_timer"
        state.update(deliver_ms=last["deliver_ms"], real_topic=last["real_topic"])
    else:
        state["state"] = "consumable"
        state["consumed_by"] = last["consumed_by"]
        state["committed"] = last["committed"]
    return state
