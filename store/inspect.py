"""Decode a RocketMQ store directory on the real file system, read only (``rmqsim inspect``).

Works on a real broker's ``storePathRootDir`` as well as on a simulated store dumped to disk. Files are
mapped read-only with ``mmap`` (a real commit-log file is 1 GiB); nothing is ever written.

Document returned by ``inspect_store_dir(root)`` (the JSON of ``rmqsim inspect --json``)::

    {"root": str,
     "commitlog": {
        "file_size": int,            # size of the first (non-empty) file; every file should have it
        "files": [str],              # non-empty files, by name (20-digit start offset)
        "min_offset": int,           # start offset of the first file (0 when there is none)
        "max_offset": int,           # end of the last valid record (RocketMQ's recovered end)
        "record_count": int,         # valid records found (also when max_entries cuts "records")
        "records": [{"phy_offset", "file", "pos", "total_size", "magic" ("V1"/"V2"), "body_crc", "queue_id",
                     "flag", "queue_offset", "physical_offset" (the field as stored), "sys_flag",
                     "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
                     "prepared_transaction_offset", "topic", "body_len",
                     "body_preview" (first 64 bytes as UTF-8, undecodable bytes replaced),
                     "properties": {str: str}, "msg_id" (offsetMsgId)}],
        "errors": [{"file", "pos", "phy_offset", "error"}]},   # pos/phy_offset are null for file-level errors
     "consumequeue": {"<topic>": {"<queueId>": {
        "unit_size": 20, "files": [str], "min_offset": int, "max_offset": int,   # logical (unit) offsets
        "unit_count": int,
        "units": [{"queue_offset", "commit_log_offset", "size", "tags_code"}]}}},
     "config": {"<file name>": parsed JSON | {"error": str}},   # config/*.json and *.json.bak
     "checkpoint": {"physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp",
                    "master_flushed_offset", "confirm_phy_offset"} | null,  # fields missing if the file is short
     "abort": bool,                                               # abort file present: last exit not clean
     "timer": {                       # only when timerwheel, timerlog/ or config/timercheck exists (ROCKETMQ.md 7.3)
        "checkpoint": {"last_read_time_ms", "last_timer_log_flush_pos", "last_timer_queue_offset",
                       "master_timer_queue_offset", "data_version": {"state_version", "timestamp", "counter"}}
                      | null,        # fields missing if the file is short
        "wheel": {"file_size": int, "slots_total": int (file size / 64), "slot_count": int (2 x slots_total),
                  "precision_ms": int, "precision_source": "timerlog" | "default",  # not stored: inferred
                  "used_slot_count": int,   # slots with any non-zero byte
                  "slots": [{"index", "time_units" (time / precision, as stored), "time_ms", "first_pos",
                             "last_pos", "num", "magic",
                             "pending" (time_ms >= the checkpoint's last_read_time_ms; null without one)}],
                  "errors": [str]} | null,
        "timerlog": {"unit_size": 52, "file_size": int, "files": [str], "min_offset": int,
                     "max_offset": int,     # end of the last valid unit
                     "unit_count": int,
                     "units": [{"pos", "file", "size", "prev_pos", "magic", "flags" (["DEFAULT", "ROLL", "DELETE"]),
                                "curr_write_time_ms", "delay_ms", "delayed_time_ms", "offset_py", "size_py",
                                "real_topic_hash", "reserved"}],
                     "errors": [{"file", "pos", "error"}]} | null}}

Commit-log scan, as recovery does (ROCKETMQ.md 1.4, 2.5): per file from position 0 with CRC checks; a blank
record ends the file; a never-written (zero) tail ends it silently; any other failure is listed in ``errors``
and the scan goes on with the next file, except a size-mismatch record (TOTALSIZE > 0) which is skipped by its
size, as dispatch does. Consume queues (2.1, 2.5): 20-byte units, a queue ends at its first invalid unit
(offset < 0 or size <= 0; the pre-blank unit (0, 2147483647, 0) is valid). Timer log (7.3, 7.6): 52-byte units
per file from position 0; a blank (magic 0xCBD43194) or a never-written unit ends the file; a unit with a size
other than 52 or an unknown magic is listed in ``errors`` and ends the file (recovery stops the log there). The
wheel's precision is not stored: it is inferred from a slot whose lastPos names a unit (delayed time / stored
time units), else RocketMQ's default 1000 ms.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import re
from datetime import UTC, datetime

from . import fastjson
from . import message as codec
from .consume_queue import CQ_STORE_UNIT_SIZE, CQ_UNIT
from .timer.timer_checkpoint import CHECKPOINT_STRUCT
from .timer.timer_log import BLANK_MAGIC_CODE, HEAD_STRUCT, UNIT_SIZE, UNIT_STRUCT
from .timer.timer_wheel import SLOT_STRUCT

CQ_UNIT_SIZE = CQ_STORE_UNIT_SIZE  # the on-disk formats are declared by their modules (issue 16)
_CQ_UNIT = CQ_UNIT
_CHECKPOINT_FIELDS = ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp",
                      "master_flushed_offset", "confirm_phy_offset")
BODY_PREVIEW_BYTES = 64


def inspect_store_dir(root: str, *, max_entries: int | None = None) -> dict:
    """The whole store as one JSON-serialisable document (shape in the module docstring).

    ``max_entries`` caps the listed commit-log records and the listed units of each queue (the counts and
    offsets still cover everything), so that a 1 GiB commit log does not have to fit in memory as dicts.
    """
    doc: dict = {
        "root": root,
        "commitlog": _inspect_commit_log(os.path.join(root, "commitlog"), max_entries),
        "consumequeue": _inspect_consume_queues(os.path.join(root, "consumequeue"), max_entries),
        "config": _inspect_config(os.path.join(root, "config")),
        "checkpoint": _inspect_checkpoint(os.path.join(root, "checkpoint")),
        "abort": os.path.exists(os.path.join(root, "abort")),
    }
    timer = _inspect_timer(root, max_entries)
    if timer is not None:
        doc["timer"] = timer
    return _printable(doc)


STORE_ENTRIES = ("commitlog", "consumequeue", "config", "checkpoint", "abort", "timerwheel", "timerlog", "index")


def is_store_dir(root: str) -> bool:
    """Whether ``root`` holds any of a store's files (a broker's ``storePathRootDir``, or a run's ``store/``)."""
    return os.path.isdir(root) and any(os.path.exists(os.path.join(root, name)) for name in STORE_ENTRIES)


def _printable(value: object) -> object:
    """The document as strict JSON can hold it and any terminal can print it: a lone surrogate (from a
    file name that is not UTF-8, or a ``\\ud800`` escape in a config file) becomes U+FFFD, and a number
    JSON has no literal for (``1e999`` is infinity) becomes its text."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if _has_surrogate(value) else value
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _inspect_timer(root: str, max_entries: int | None = None) -> dict | None:
    """The timer wheel's files (``timerwheel``, ``timerlog/``, ``config/timercheck``), or None without any."""
    wheel_path = os.path.join(root, "timerwheel")
    log_dir = os.path.join(root, "timerlog")
    check_path = os.path.join(root, "config", "timercheck")
    if not (os.path.isfile(wheel_path) or os.path.isdir(log_dir) or os.path.isfile(check_path)):
        return None
    checkpoint = _inspect_timer_checkpoint(check_path)
    timer_log = _inspect_timer_log(log_dir, max_entries) if os.path.isdir(log_dir) else None
    wheel = None
    if os.path.isfile(wheel_path):
        wheel = _inspect_timer_wheel(wheel_path, timer_log, checkpoint, max_entries)
    if timer_log is not None:
        timer_log.pop("_by_pos")
    return {"checkpoint": checkpoint, "wheel": wheel, "timerlog": timer_log}


_TIMER_CHECKPOINT_FIELDS = ("last_read_time_ms", "last_timer_log_flush_pos", "last_timer_queue_offset",
                            "master_timer_queue_offset")
_TIMER_DATA_VERSION_FIELDS = ("state_version", "timestamp", "counter")
_TIMER_UNIT = UNIT_STRUCT
_TIMER_SLOT = SLOT_STRUCT
_TIMER_UNIT_SIZE = UNIT_SIZE
_TIMER_BLANK_MAGIC = BLANK_MAGIC_CODE  # 0xCBD43194
_TIMER_MAGIC_FLAGS = ((1, "DEFAULT"), (2, "ROLL"), (4, "DELETE"))


def _inspect_timer_checkpoint(path: str) -> dict | None:
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        raw = f.read(CHECKPOINT_STRUCT.size)
    longs = [int.from_bytes(raw[i : i + 8], "big", signed=True) for i in range(0, len(raw) - len(raw) % 8, 8)]
    doc: dict = {name: longs[i] for i, name in enumerate(_TIMER_CHECKPOINT_FIELDS) if i < len(longs)}
    if len(longs) == 7:
        doc["data_version"] = dict(zip(_TIMER_DATA_VERSION_FIELDS, longs[4:], strict=True))
    return doc


def _inspect_timer_log(directory: str, max_entries: int | None) -> dict:
    files, others = _numbered_files(directory)
    units: list[dict] = []
    by_pos: dict[int, int] = {}  # unit position -> delayed time (to infer the wheel's precision)
    errors: list[dict] = [{"file": name, "pos": None, "error": "ignored: not named by a start offset"}
                          for name in others]
    file_size = files[0][2] if files else 0
    min_offset = files[0][0] if files else 0
    max_offset = min_offset
    unit_count = 0
    for from_offset, name, size in files:
        if size != file_size:
            errors.append({"file": name, "pos": None,
                           "error": f"file size {size} differs from {file_size} (RocketMQ refuses to load)"})
        with _ReadOnlyMap(os.path.join(directory, name)) as data:
            pos = 0
            while pos + 16 <= size:
                head_size, prev_pos, magic = HEAD_STRUCT.unpack_from(data, pos)
                if magic == _TIMER_BLANK_MAGIC:
                    break
                if not any(data[pos : min(pos + _TIMER_UNIT_SIZE, size)]):
                    break  # never written: the file's data ends here
                if head_size != _TIMER_UNIT_SIZE or (magic | 0xF) != 0xF or pos + _TIMER_UNIT_SIZE > size:
                    errors.append({"file": name, "pos": pos,
                                   "error": f"invalid unit: size {head_size}, magic {magic} (recovery stops here)"})
                    break
                fields = _TIMER_UNIT.unpack_from(data, pos)
                (_s, prev_pos, magic, write_ms, delay_ms, offset_py, size_py, topic_hash, reserved) = fields
                unit_count += 1
                max_offset = from_offset + pos + _TIMER_UNIT_SIZE
                by_pos[from_offset + pos] = write_ms + delay_ms
                if max_entries is None or len(units) < max_entries:
                    units.append({
                        "pos": from_offset + pos, "file": name, "size": head_size, "prev_pos": prev_pos,
                        "magic": magic, "flags": [flag for bit, flag in _TIMER_MAGIC_FLAGS if magic & bit],
                        "curr_write_time_ms": write_ms, "delay_ms": delay_ms, "delayed_time_ms": write_ms + delay_ms,
                        "offset_py": offset_py, "size_py": size_py, "real_topic_hash": topic_hash,
                        "reserved": reserved,
                    })
                pos += _TIMER_UNIT_SIZE
    return {"unit_size": _TIMER_UNIT_SIZE, "file_size": file_size, "files": [name for _, name, _ in files],
            "min_offset": min_offset, "max_offset": max_offset, "unit_count": unit_count, "units": units,
            "errors": errors, "_by_pos": by_pos}


def _inspect_timer_wheel(path: str, timer_log: dict | None, checkpoint: dict | None,
                         max_entries: int | None) -> dict:
    size = os.path.getsize(path)
    errors: list[str] = []
    if size % 64:
        errors.append(f"length {size} is not a whole number of slot pairs (2 x 32 bytes)")
    used: list[tuple] = []
    if size:
        with _ReadOnlyMap(path) as data:
            zero_chunk = bytes(4096)
            for chunk in range(0, size - size % 32, 4096):
                end = min(chunk + 4096, size - size % 32)
                if data[chunk:end] == zero_chunk[: end - chunk]:
                    continue
                for pos in range(chunk, end, 32):
                    if any(data[pos : pos + 32]):
                        used.append((pos // 32, *_TIMER_SLOT.unpack_from(data, pos)))
    by_pos = timer_log["_by_pos"] if timer_log is not None else {}
    precision, source = 1000, "default"
    for _index, units, _first, last, _num, _magic in used:
        delayed = by_pos.get(last)
        if delayed is not None and units > 0 and delayed % units == 0 and delayed // units > 0:
            precision, source = delayed // units, "timerlog"
            break
    read_ms = checkpoint.get("last_read_time_ms") if checkpoint else None
    slots = [{"index": index, "time_units": units, "time_ms": units * precision, "first_pos": first,
              "last_pos": last, "num": num, "magic": magic,
              "pending": None if read_ms is None else units * precision >= read_ms}
             for index, units, first, last, num, magic in used[: max_entries]]
    return {"file_size": size, "slots_total": size // 64, "slot_count": size // 32, "precision_ms": precision,
            "precision_source": source, "used_slot_count": len(used), "slots": slots, "errors": errors}


# --- files ---------------------------------------------------------------------------------------------------
def _numbered_files(directory: str) -> tuple[list[tuple[int, str, int]], list[str]]:
    """(offset, name, size) of the non-empty files named by an offset, sorted; plus the other names."""
    if not os.path.isdir(directory):
        return [], []
    found, others = [], []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        if not (name.isascii() and name.isdigit()):
            others.append(name)
            continue
        size = os.path.getsize(path)
        if size > 0:
            found.append((int(name), name, size))
    found.sort()
    return found, others


class _ReadOnlyMap:
    """A read-only mmap of a whole file, closed with its file."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed in __exit__
        try:
            self.map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            self._file.close()
            raise

    def __enter__(self) -> mmap.mmap:
        return self.map

    def __exit__(self, *exc) -> None:
        self.map.close()
        self._file.close()


# --- commit log ----------------------------------------------------------------------------------------------
def _inspect_commit_log(directory: str, max_entries: int | None) -> dict:
    files, others = _numbered_files(directory)
    records: list[dict] = []
    errors: list[dict] = [
        {"file": name, "pos": None, "phy_offset": None, "error": "ignored: not named by a start offset"}
        for name in others
    ]
    file_size = files[0][2] if files else 0
    min_offset = files[0][0] if files else 0
    max_offset = min_offset
    record_count = 0
    expected_from = min_offset
    for from_offset, name, size in files:
        if size != file_size:
            errors.append({"file": name, "pos": None, "phy_offset": from_offset,
                           "error": f"file size {size} differs from {file_size} (RocketMQ refuses to load)"})
        if from_offset != expected_from:
            errors.append({"file": name, "pos": None, "phy_offset": from_offset,
                           "error": f"gap: the previous file ends at {expected_from}"})
        expected_from = from_offset + size
        with _ReadOnlyMap(os.path.join(directory, name)) as data:
            pos = 0
            while pos < size:
                req = codec.check_message_and_return_size(data, pos, check_crc=True)
                if req.success and req.msg_size > 0:
                    record_count += 1
                    max_offset = from_offset + pos + req.msg_size
                    if max_entries is None or len(records) < max_entries:
                        records.append(_record_entry(data, name, from_offset, pos))
                    pos += req.msg_size
                    continue
                if req.success:  # blank: the rest of the file is filler
                    break
                if not any(data[pos : pos + 8]):  # never written: the file's data ends here
                    break
                errors.append({"file": name, "pos": pos, "phy_offset": from_offset + pos, "error": req.error})
                if req.msg_size > 0:  # size mismatch: dispatch skips the record by its TOTALSIZE
                    pos += req.msg_size
                    continue
                break
    return {
        "file_size": file_size,
        "files": [name for _, name, _ in files],
        "min_offset": min_offset,
        "max_offset": max_offset,
        "record_count": record_count,
        "records": records,
        "errors": errors,
    }


def _record_entry(data, name: str, from_offset: int, pos: int) -> dict:
    msg = codec.decode_message(data, pos)
    assert msg is not None  # check_message_and_return_size accepted it; decoding is less strict
    return {
        "phy_offset": from_offset + pos,
        "file": name,
        "pos": pos,
        "total_size": msg.store_size,
        "magic": "V2" if msg.magic_code == codec.MESSAGE_MAGIC_CODE_V2 else "V1",
        "body_crc": msg.body_crc,
        "queue_id": msg.queue_id,
        "flag": msg.flag,
        "queue_offset": msg.queue_offset,
        "physical_offset": msg.commit_log_offset,
        "sys_flag": msg.sys_flag,
        "born_timestamp": msg.born_timestamp,
        "born_host": codec.format_socket_address(msg.born_host),
        "store_timestamp": msg.store_timestamp,
        "store_host": codec.format_socket_address(msg.store_host),
        "reconsume_times": msg.reconsume_times,
        "prepared_transaction_offset": msg.prepared_transaction_offset,
        "topic": msg.topic,
        "body_len": len(msg.body),
        "body_preview": msg.body[:BODY_PREVIEW_BYTES].decode("utf-8", "replace"),
        "properties": dict(msg.properties),
        "msg_id": msg.msg_id,
    }


# --- consume queues ------------------------------------------------------------------------------------------
_QUEUE_ID = re.compile(r"[+-]?[0-9]{1,11}")  # what Integer.parseInt takes (ASCII digits only here)


def _inspect_consume_queues(directory: str, max_entries: int | None) -> dict:
    """Every ``consumequeue/<topic>/<queueId>``; like RocketMQ's load, non-integer queue ids are skipped."""
    result: dict = {}
    if not os.path.isdir(directory):
        return result
    for topic in sorted(os.listdir(directory)):
        topic_dir = os.path.join(directory, topic)
        if not os.path.isdir(topic_dir):
            continue
        queues = {}
        queue_names = [q for q in os.listdir(topic_dir) if _QUEUE_ID.fullmatch(q) and -(1 << 31) <= int(q) < 1 << 31
                       and os.path.isdir(os.path.join(topic_dir, q))]
        for queue_name in sorted(queue_names, key=int):
            queues[queue_name] = _inspect_consume_queue(os.path.join(topic_dir, queue_name), max_entries)
        result[topic] = queues
    return result


def _inspect_consume_queue(directory: str, max_entries: int | None) -> dict:
    files, _ = _numbered_files(directory)
    units: list[dict] = []
    unit_count = 0
    min_offset = files[0][0] // CQ_UNIT_SIZE if files else 0
    max_offset = min_offset
    for from_offset, name, size in files:
        if from_offset // CQ_UNIT_SIZE != max_offset:  # a missing file or an invalid unit came before
            break
        with _ReadOnlyMap(os.path.join(directory, name)) as data:
            usable = size - size % CQ_UNIT_SIZE
            complete = True
            for index, (phy_offset, msg_size, tags_code) in enumerate(_CQ_UNIT.iter_unpack(data[:usable])):
                if phy_offset < 0 or msg_size <= 0:
                    complete = False
                    break
                queue_offset = from_offset // CQ_UNIT_SIZE + index
                unit_count += 1
                max_offset = queue_offset + 1
                if max_entries is None or len(units) < max_entries:
                    units.append({"queue_offset": queue_offset, "commit_log_offset": phy_offset,
                                  "size": msg_size, "tags_code": tags_code})
            if not complete or usable != size:
                break
    return {
        "unit_size": CQ_UNIT_SIZE,
        "files": [name for _, name, _ in files],
        "min_offset": min_offset,
        "max_offset": max_offset,
        "unit_count": unit_count,
        "units": units,
    }


# --- config, checkpoint --------------------------------------------------------------------------------------
def _key_text(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, tuple) and all(isinstance(item, tuple) and len(item) == 2 for item in key):
        return json.dumps({str(k): _json_safe(v) for k, v in key}, separators=(",", ":"))  # an object key
    items = getattr(key, "items", None)
    if callable(items):
        return json.dumps({str(k): _json_safe(v) for k, v in items()}, separators=(",", ":"))
    return str(key)


def _json_safe(value: object) -> object:
    if isinstance(value, dict):
        return {_key_text(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _inspect_config(directory: str) -> dict:
    result: dict = {}
    if not os.path.isdir(directory):
        return result
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not (name.endswith(".json") or name.endswith(".json.bak")) or not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            result[name] = _json_safe(fastjson.loads(text))
        except Exception as error:  # noqa: BLE001 - any unreadable file is reported, never fatal
            result[name] = {"error": f"{type(error).__name__}: {error}"}
    return result


def _inspect_checkpoint(path: str) -> dict | None:
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        raw = f.read(8 * len(_CHECKPOINT_FIELDS))
    return {field: int.from_bytes(raw[i * 8 : i * 8 + 8], "big", signed=True)
            for i, field in enumerate(_CHECKPOINT_FIELDS) if len(raw) >= i * 8 + 8}


# --- text ----------------------------------------------------------------------------------------------------
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
        for field in _CHECKPOINT_FIELDS:
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
