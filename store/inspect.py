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

from . import checkpoint as store_checkpoint
from . import fastjson
from . import message as codec
from .consume_queue import CQ_STORE_UNIT_SIZE, CqUnit, iter_units
from .timer import timer_checkpoint, timer_log
from .timer.timer_wheel import SLOT_SIZE, iter_used_slots

# The on-disk formats are declared once, by their modules (issue 16): this module only walks the files with the
# modules' pure iterators and turns what they yield into the document. The text is scenarios/inspect_text.py.
CQ_UNIT_SIZE = CQ_STORE_UNIT_SIZE
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


def _inspect_timer_checkpoint(path: str) -> dict | None:
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return timer_checkpoint.decode_fields(f.read(timer_checkpoint.CHECKPOINT_STRUCT.size))


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
            for item in timer_log.iter_units(data):
                if isinstance(item, codec.Corrupt):
                    errors.append({"file": name, "pos": item.offset, "error": item.reason})
                if not isinstance(item, timer_log.TimerLogRecord):
                    break
                unit = item.unit
                unit_count += 1
                max_offset = from_offset + item.pos + timer_log.UNIT_SIZE
                by_pos[from_offset + item.pos] = unit.delayed_time_ms
                if max_entries is None or len(units) < max_entries:
                    units.append({
                        "pos": from_offset + item.pos, "file": name, "size": unit.size, "prev_pos": unit.prev_pos,
                        "magic": unit.magic, "flags": [flag for bit, flag in timer_log.MAGIC_FLAGS if unit.magic & bit],
                        "curr_write_time_ms": unit.curr_write_time_ms, "delay_ms": unit.delay_ms,
                        "delayed_time_ms": unit.delayed_time_ms, "offset_py": unit.offset_py, "size_py": unit.size_py,
                        "real_topic_hash": unit.real_topic_hash, "reserved": unit.reserved,
                    })
    return {"unit_size": timer_log.UNIT_SIZE, "file_size": file_size, "files": [name for _, name, _ in files],
            "min_offset": min_offset, "max_offset": max_offset, "unit_count": unit_count, "units": units,
            "errors": errors, "_by_pos": by_pos}


def _inspect_timer_wheel(path: str, timer_log: dict | None, checkpoint: dict | None,
                         max_entries: int | None) -> dict:
    size = os.path.getsize(path)
    errors: list[str] = []
    if size % (2 * SLOT_SIZE):
        errors.append(f"length {size} is not a whole number of slot pairs (2 x {SLOT_SIZE} bytes)")
    used: list[tuple] = []
    if size:
        with _ReadOnlyMap(path) as data:
            used = [(slot.index, slot.time_units, slot.first_pos, slot.last_pos, slot.num, slot.magic)
                    for slot in iter_used_slots(data)]
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
    return {"file_size": size, "slots_total": size // (2 * SLOT_SIZE), "slot_count": size // SLOT_SIZE,
            "precision_ms": precision,
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
            for item in codec.iter_records(data, from_offset, check_crc=True):
                if isinstance(item, codec.Record):
                    record_count += 1
                    max_offset = item.offset + item.request.msg_size
                    if max_entries is None or len(records) < max_entries:
                        records.append(_record_entry(data, name, from_offset, item.offset - from_offset))
                elif isinstance(item, codec.Corrupt):  # one with a size is skipped by it, as dispatch does
                    errors.append({"file": name, "pos": item.offset - from_offset, "phy_offset": item.offset,
                                   "error": item.reason})
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
    for from_offset, name, _size in files:
        if from_offset // CQ_UNIT_SIZE != max_offset:  # a missing file or an invalid unit came before
            break
        with _ReadOnlyMap(os.path.join(directory, name)) as data:
            complete = True
            for unit in iter_units(data, from_offset // CQ_UNIT_SIZE):
                if not isinstance(unit, CqUnit):
                    complete = False
                    break
                unit_count += 1
                max_offset = unit.queue_offset + 1
                if max_entries is None or len(units) < max_entries:
                    units.append({"queue_offset": unit.queue_offset, "commit_log_offset": unit.commit_log_offset,
                                  "size": unit.size, "tags_code": unit.tags_code})
            if not complete:
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
        return store_checkpoint.decode_fields(f.read(8 * len(store_checkpoint.FIELDS)))
