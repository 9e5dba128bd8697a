"""Text for ``rmqsim inspect STORE``: the human-readable rendering of ``store.inspect.inspect_store_dir``'s document.

The store decodes (``store/inspect.py``, with the format modules' iterators); this module only words it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from store.checkpoint import FIELDS as CHECKPOINT_FIELDS


def _utc(ms: int) -> str:
    """Epoch milliseconds as UTC text (pure arithmetic on the value, no clock involved)."""
    if ms <= 0:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return "?"


def _short(value: object, width: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= width else text[: width - 3] + "..."


def _properties_text(props: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in props.items())


def format_inspection(doc: dict) -> str:
    """Human-readable text of an ``inspect_store_dir`` document."""
    out: list[str] = [f"store {doc['root']}"]
    out.append("abort file: present (the last shutdown was not clean)" if doc.get("abort")
               else "abort file: absent")

    cp = doc.get("checkpoint")
    if cp is None:
        out.append("checkpoint: none")
    else:
        out.append("checkpoint:")
        for field in CHECKPOINT_FIELDS:
            if field in cp:
                note = f"  ({_utc(cp[field])})" if field.endswith("timestamp") else ""
                out.append(f"  {field} = {cp[field]}{note}")

    cl = doc["commitlog"]
    out.append(f"commitlog: {len(cl['files'])} file(s) of {cl['file_size']} bytes, "
               f"offsets [{cl['min_offset']}, {cl['max_offset']}), {cl.get('record_count', len(cl['records']))} "
               f"record(s), {len(cl['errors'])} error(s)")
    for rec in cl["records"]:
        out.append(
            f"  @{rec['phy_offset']} {rec['file']}+{rec['pos']} {rec['magic']} size {rec['total_size']}: "
            f"{rec['topic']} q{rec['queue_id']} #{rec['queue_offset']} stored {_utc(rec['store_timestamp'])} "
            f"reconsume {rec['reconsume_times']} sysflag 0x{rec['sys_flag']:x} body {rec['body_len']}B "
            f"msgId {rec['msg_id']}"
        )
        if rec["properties"]:
            out.append(f"      {_properties_text(rec['properties'])}")
        if rec["body_preview"]:
            out.append(f"      body {rec['body_preview']!r}")
    listed = len(cl["records"])
    if listed < cl.get("record_count", listed):
        out.append(f"  ... {cl['record_count'] - listed} more record(s) not listed")
    for err in cl["errors"]:
        where = f"{err['file']}" + (f" pos {err['pos']} (phy {err['phy_offset']})" if err["pos"] is not None else "")
        out.append(f"  ERROR {where}: {err['error']}")

    cq = doc["consumequeue"]
    out.append(f"consumequeue: {sum(len(q) for q in cq.values())} queue(s) in {len(cq)} topic(s)")
    for topic, queues in cq.items():
        for queue_id, queue in queues.items():
            out.append(f"  {topic}/{queue_id}: offsets [{queue['min_offset']}, {queue['max_offset']}) "
                       f"in {len(queue['files'])} file(s)")
            for unit in queue["units"]:
                out.append(f"    #{unit['queue_offset']} -> phy {unit['commit_log_offset']} size {unit['size']} "
                           f"tagsCode {unit['tags_code']}")
            listed = len(queue["units"])
            if listed < queue.get("unit_count", listed):
                out.append(f"    ... {queue['unit_count'] - listed} more unit(s) not listed")

    config = doc["config"]
    out.append(f"config: {len(config)} file(s)")
    for name, parsed in config.items():
        if isinstance(parsed, dict) and set(parsed) == {"error"}:
            out.append(f"  {name}: ERROR {parsed['error']}")
        else:
            out.append(f"  {name}: {_short(parsed)}")

    if "timer" in doc:
        out.extend(_format_timer(doc["timer"]))
    return "\n".join(out) + "\n"


def _format_timer(timer: dict) -> list[str]:
    out = ["timer:"]
    cp = timer.get("checkpoint")
    if cp is None:
        out.append("  timercheck: none")
    else:
        read = cp.get("last_read_time_ms")
        out.append(f"  timercheck: last_read_time_ms = {read} ({_utc(read or 0)}), "
                   f"last_timer_log_flush_pos = {cp.get('last_timer_log_flush_pos')}, "
                   f"last_timer_queue_offset = {cp.get('last_timer_queue_offset')}, "
                   f"master_timer_queue_offset = {cp.get('master_timer_queue_offset')}, "
                   f"data_version = {_short(cp.get('data_version'))}")
    wheel = timer.get("wheel")
    if wheel is None:
        out.append("  timerwheel: none")
    else:
        out.append(f"  timerwheel: {wheel['slot_count']} slots (slotsTotal {wheel['slots_total']}), precision "
                   f"{wheel['precision_ms']} ms ({wheel['precision_source']}), {wheel['used_slot_count']} used")
        for slot in wheel["slots"]:
            pending = {True: " pending", False: " done", None: ""}[slot["pending"]]
            out.append(f"    slot {slot['index']}: {_utc(slot['time_ms'])} first {slot['first_pos']} "
                       f"last {slot['last_pos']} num {slot['num']}{pending}")
        if len(wheel["slots"]) < wheel["used_slot_count"]:
            out.append(f"    ... {wheel['used_slot_count'] - len(wheel['slots'])} more slot(s) not listed")
        for err in wheel["errors"]:
            out.append(f"    ERROR {err}")
    log = timer.get("timerlog")
    if log is None:
        out.append("  timerlog: none")
    else:
        out.append(f"  timerlog: {len(log['files'])} file(s) of {log['file_size']} bytes, offsets "
                   f"[{log['min_offset']}, {log['max_offset']}), {log['unit_count']} unit(s), "
                   f"{len(log['errors'])} error(s)")
        for unit in log["units"]:
            out.append(f"    @{unit['pos']} prev {unit['prev_pos']} {'|'.join(unit['flags'])} "
                       f"due {_utc(unit['delayed_time_ms'])} (written {_utc(unit['curr_write_time_ms'])}) "
                       f"-> phy {unit['offset_py']} size {unit['size_py']}")
        if len(log["units"]) < log["unit_count"]:
            out.append(f"    ... {log['unit_count'] - len(log['units'])} more unit(s) not listed")
        for err in log["errors"]:
            where = err["file"] + (f" pos {err['pos']}" if err["pos"] is not None else "")
            out.append(f"    ERROR {where}: {err['error']}")
    return out
