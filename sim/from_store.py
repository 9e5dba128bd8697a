"""``run --from-store DIR``: the simulated broker starts on a copy of a real store directory.

``load_store_image`` reads DIR once (never writing to it), refuses what RocketMQ would refuse or silently lose
(exit 2 with the path and offset), takes the mapped-file sizes from the files and the broker clock's start from
the newest timestamp in the store. The world copies the files into its own disk (``install``) and lets its
broker recover them as RocketMQ would: abnormally when the ``abort`` file is there, normally otherwise. Then
every message copy the recovered commit log holds is recorded as a ``preloaded`` event (``record_population``),
with what the config files say about it (delay offsets, the groups' committed offsets), so that the invariants
can judge the messages the store already held (model/invariants.py, ``preloaded_owed``).
"""

from __future__ import annotations

import dataclasses
import os
import random
from dataclasses import dataclass

from store import message as codec
from store.broker.broker_controller import BrokerController, BrokerStartError
from store.clock import ManualClock
from store.config import BrokerConfig, MessageStoreConfig
from store.delay_level import parse_delay_level
from store.disk import MemoryDisk
from store.inspect import inspect_store_dir, is_store_dir
from store.log import ERROR, StoreLog
from store.store_dir import mapped_file_sizes, read_store_files
from store.timer.timer_wheel import SLOT_SIZE
from store.topics import DLQ_GROUP_TOPIC_PREFIX, RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC

ABORT_FILE = "abort"
_NOT_DISPATCHED = (codec.TRANSACTION_PREPARED_TYPE, codec.TRANSACTION_ROLLBACK_TYPE)


class StoreImageError(Exception):
    """A directory ``run --from-store`` cannot start on: the path, where in it (if a byte offset), and why."""

    def __init__(self, path: str, reason: str, offset: int | None = None) -> None:
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"{path}{where}: {reason}")
        self.path = path
        self.offset = offset


@dataclass(frozen=True, eq=False)
class StoreImage:
    """A store directory read into memory: its files (relative path -> bytes), the sizes its files have, whether
    the broker that wrote it exited cleanly, and the broker-clock time it was last written at."""

    root: str
    files: tuple[tuple[str, bytes], ...]
    sizes: dict
    last_exit_ok: bool
    epoch_ms: int
    copies: tuple[dict, ...]  # the ``preloaded`` events' fields, from the files alone (``population``)

    def store_config(self, base: MessageStoreConfig) -> MessageStoreConfig:
        """The run's store settings with the store's own mapped-file sizes (RocketMQ refuses other sizes)."""
        return base.with_(**self.sizes)

    def install(self, world) -> None:
        """Copy the files into the world's disk (durably: they are on a disk already) and start the broker clock
        at the store's newest timestamp: the broker restarts right after the store was last written."""
        for rel, data in self.files:
            world.disk.write_file(rel, data, fsync=True)
        world.clock.epoch_ms = self.epoch_ms

    def record_population(self, world) -> int:
        """One ``preloaded`` event per message copy of the store, at the run's start; the copy count.

        A level copy due more than one of the run's level-delays after the start (a ``messageDelayLevel`` shortened
        since it was stored, or a broker clock now behind the store's) is due at once: correctDeliverTimestamp
        delivers it at the first poll. Its ``due_ms`` says so; ``deliver_ms`` keeps what the store says."""
        now_ms = world.clock.now_ms()
        table = parse_delay_level(world.store_config.message_delay_level)
        for copy in self.copies:
            event = {**copy, "broker_ms": now_ms}
            if (copy["topic"] == RMQ_SYS_SCHEDULE_TOPIC and copy["state"] == "pending"
                    and copy["deliver_ms"] > now_ms + table.get(copy["queue_id"] + 1, 1000)):
                event["due_ms"] = now_ms
            world.recorder.on_preloaded(event)
        return len(self.copies)


def _fail_on_errors(root: str, doc: dict) -> None:
    """What RocketMQ refuses to load, or would silently cut off, is bad input: the first such error."""
    abnormal = doc["abort"]
    cl = doc["commitlog"]
    last_file = cl["files"][-1] if cl["files"] else None
    for error in cl["errors"]:
        if error["error"].startswith("ignored:"):
            continue
        path = os.path.join(root, "commitlog", error["file"])
        if error["pos"] is None:  # the file as a whole (its size, a gap before it)
            raise StoreImageError(path, error["error"])
        # After an abnormal exit the last file may end in a torn record: recovery cuts it, as RocketMQ does.
        if abnormal and error["file"] == last_file:
            continue
        raise StoreImageError(path, f"corrupt record ({error['error']}); recovery would drop everything after it",
                              error["pos"])
    configs = doc["config"]
    for name in sorted(configs):
        if name.endswith(".bak") or not isinstance(configs[name], dict) or "error" not in configs[name]:
            continue
        bak = configs.get(name + ".bak")
        if isinstance(bak, dict) and "error" not in bak:
            continue  # RocketMQ falls back to the .bak copy
        raise StoreImageError(os.path.join(root, "config", name), configs[name]["error"] + " (and no usable .bak)")
    timer = doc.get("timer") or {}
    timer_log = timer.get("timerlog") or {}
    for error in timer_log.get("errors", []):
        if error["error"].startswith("ignored:") or (abnormal and error["pos"] is not None):
            continue
        raise StoreImageError(os.path.join(root, "timerlog", error["file"]), error["error"], error["pos"])
    wheel = timer.get("wheel") or {}
    for error in wheel.get("errors", []):
        raise StoreImageError(os.path.join(root, "timerwheel"), error)


def _cq_file_sizes(root: str) -> None:
    """Every consume-queue file has the first one's size, a whole number of 20-byte units (else RocketMQ refuses)."""
    first: tuple[str, int] | None = None
    cq_root = os.path.join(root, "consumequeue")
    if not os.path.isdir(cq_root):
        return
    for topic in sorted(os.listdir(cq_root)):
        topic_dir = os.path.join(cq_root, topic)
        for queue in sorted(os.listdir(topic_dir)) if os.path.isdir(topic_dir) else []:
            queue_dir = os.path.join(topic_dir, queue)
            for name in sorted(os.listdir(queue_dir)) if os.path.isdir(queue_dir) else []:
                path = os.path.join(queue_dir, name)
                if not name.isdigit() or not os.path.isfile(path):
                    continue
                size = os.path.getsize(path)
                if size == 0:
                    continue  # an empty file: RocketMQ's load deletes it (the last one) or ignores it
                if first is None:
                    first = (path, size)
                    if size % 20:
                        raise StoreImageError(path, f"consume-queue file size {size} is not a multiple of 20")
                elif size != first[1]:
                    raise StoreImageError(path, f"consume-queue file size {size} differs from {first[1]} "
                                                f"({first[0]}); RocketMQ refuses to load it")


def _sizes(root: str) -> dict:
    """MessageStoreConfig fields for the sizes the store's files have."""
    found = mapped_file_sizes(root)
    fields = {"commit_log": "mapped_file_size_commit_log", "consume_queue": "mapped_file_size_consume_queue",
              "timer_log": "mapped_file_size_timer_log"}
    sizes = {fields[k]: v for k, v in found.items() if k in fields}
    wheel = found.get("timer_wheel")
    if wheel is not None:
        if wheel % (2 * SLOT_SIZE):
            raise StoreImageError(os.path.join(root, "timerwheel"),
                                  f"timer wheel length {wheel} is not a whole number of slot pairs")
        sizes["timer_slots_total"] = wheel // (2 * SLOT_SIZE)
    return sizes


def _epoch_ms(doc: dict, fallback_ms: int) -> int:
    """One past the newest store timestamp the store holds (records, checkpoint, timer read time)."""
    times = [r["store_timestamp"] for r in doc["commitlog"]["records"]]
    cp = doc.get("checkpoint") or {}
    times += [cp.get("physic_msg_timestamp", 0), cp.get("logics_msg_timestamp", 0)]
    timer_cp = ((doc.get("timer") or {}).get("checkpoint") or {})
    times.append(timer_cp.get("last_read_time_ms", 0))
    newest = max((t for t in times if isinstance(t, int) and 0 < t < 1 << 62), default=0)
    return newest + 1 if newest else fallback_ms


def load_store_image(root: str, store_config: MessageStoreConfig, broker_config: BrokerConfig | None = None,
                     fallback_epoch_ms: int = 0) -> StoreImage:
    """Read ``root`` into a ``StoreImage`` and try a broker's load on a copy: raise ``StoreImageError`` for what
    is not a store, what RocketMQ refuses to load, and corrupt records recovery would silently cut off."""
    if not os.path.isdir(root):
        raise StoreImageError(root, "not a directory")
    if not is_store_dir(root):
        raise StoreImageError(root, "not a RocketMQ store directory (no commitlog/, consumequeue/, config/, "
                                    "checkpoint, timerlog/ or timerwheel in it)")
    try:
        doc = inspect_store_dir(root)
        _fail_on_errors(root, doc)
        _cq_file_sizes(root)
        sizes = _sizes(root)
        files = read_store_files(root)
    except OSError as error:
        raise StoreImageError(error.filename or root, f"cannot read: {error.strerror}") from None
    image = StoreImage(root=os.path.abspath(root), files=files, sizes=sizes, last_exit_ok=not doc["abort"],
                       epoch_ms=_epoch_ms(doc, fallback_epoch_ms), copies=())
    _trial_load(image, store_config, broker_config or BrokerConfig())
    return dataclasses.replace(image, copies=population(doc, parse_delay_level(store_config.message_delay_level)))


def _trial_load(image: StoreImage, store_config: MessageStoreConfig, broker_config: BrokerConfig) -> None:
    """The broker's own load over a scratch copy: whatever it refuses (a config file, a mapped file), or loads only
    with an ERROR (a config file it cannot decode and no .bak: RocketMQ starts with an empty table), is bad input."""
    disk = MemoryDisk()
    for rel, data in image.files:
        disk.write_file(rel, data, fsync=True)
    errors: list[str] = []

    def sink(level: str, logger: str, message: str, _site, _caught) -> None:
        if level == ERROR:
            errors.append(message)

    broker = BrokerController(disk, ManualClock(image.epoch_ms), rng=random.Random(0), broker_config=broker_config,
                              store_config=image.store_config(store_config), log=StoreLog("RocketmqBroker", sink))
    try:
        broker.initialize()
    except BrokerStartError as error:
        raise StoreImageError(image.root, f"the broker refuses to load it: {error}") from None
    if errors:  # e.g. a config file the broker cannot decode, without a .bak: it would start with an empty table
        raise StoreImageError(image.root, f"the broker's load logs an ERROR: {errors[0]}")


def preloaded_counts(events: list[dict]) -> dict:
    """summary.json's ``preloaded``: copies and messages the store held, how many messages were still waiting to be
    delivered (a pending scheduled copy) and how many were dead letters (a %DLQ% copy)."""
    copies = [e for e in events if e["kind"] == "preloaded"]
    return {"copies": len(copies), "messages": len({e["msg_id"] for e in copies}),
            "pending": len({e["msg_id"] for e in copies if e["state"] == "pending"}),
            "dead_letters": len({e["msg_id"] for e in copies if e["topic"].startswith(DLQ_GROUP_TOPIC_PREFIX)})}


# --- the population ---------------------------------------------------------------------------------------------
def _config(doc: dict, name: str) -> dict:
    """A config file as parsed from the directory, or its .bak when the file is unreadable (as RocketMQ loads)."""
    for candidate in (name, name + ".bak"):
        parsed = doc["config"].get(candidate)
        if isinstance(parsed, dict) and "error" not in parsed:
            return parsed
    return {}


def _committed(consumer_offsets: dict, topic: str | None, queue_id: int | None) -> dict[str, int]:
    """group -> its committed offset of ``topic``/``queue_id`` in consumerOffset.json, groups sorted."""
    out = {}
    if topic is None or queue_id is None:
        return out
    for key, queues in consumer_offsets.items():
        key_topic, _, group = key.partition("@")
        if key_topic == topic and isinstance(queues, dict) and isinstance(queues.get(str(queue_id)), int):
            out[group] = queues[str(queue_id)]
    return dict(sorted(out.items()))


def population(doc: dict, delay_level_ms: dict[int, int]) -> tuple[dict, ...]:
    """The ``preloaded`` events' fields (but ``broker_ms``) for every message copy of the store, from its files
    alone (an oracle independent of the broker that recovers them): where it is, what is due, who committed past it.

    ``state``: ``pending`` (a SCHEDULE_TOPIC_XXXX copy at or past its level's offset in delayOffset.json, or a
    timer copy with no later copy of the message in its real topic: still to be delivered), ``delivered`` (a
    scheduled copy already delivered), ``stored`` (a copy in a consumable topic). ``deliver_ms``: the due time
    the level queue's unit holds (its tagsCode), or, where no unit is, store time + the run's level delay.
    ``offsets``: the groups' committed offsets of the queue the copy is consumed from (a scheduled copy's real one)."""
    delay_offsets = _config(doc, "delayOffset.json").get("offsetTable")
    consumer_offsets = _config(doc, "consumerOffset.json").get("offsetTable")
    delay_offsets = delay_offsets if isinstance(delay_offsets, dict) else {}
    consumer_offsets = consumer_offsets if isinstance(consumer_offsets, dict) else {}
    # Recovery ends the commit log at its first bad record (a torn tail after an abnormal exit): nothing after it.
    end = min((e["phy_offset"] for e in doc["commitlog"]["errors"] if e["pos"] is not None), default=None)
    records = [r for r in doc["commitlog"]["records"] if codec.transaction_type(r["sys_flag"]) not in _NOT_DISPATCHED
               and (end is None or r["phy_offset"] < end)]
    later_real: dict[str, list[tuple[int, str]]] = {}  # msg_id -> (phy_offset, topic) of consumable copies
    for r in records:
        if r["topic"] not in (RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC):
            later_real.setdefault(_msg_id(r), []).append((r["phy_offset"], r["topic"]))
    top = max(delay_level_ms) if delay_level_ms else 0
    level_units = {(int(qid), u["queue_offset"], u["commit_log_offset"]): u["tags_code"]
                   for qid, queue in doc["consumequeue"].get(RMQ_SYS_SCHEDULE_TOPIC, {}).items() for u in queue["units"]}
    out = []
    for r in records:
        msg_id, props, phy = _msg_id(r), r["properties"], r["phy_offset"]
        real_topic = props.get(codec.PROPERTY_REAL_TOPIC)
        real_qid = props.get(codec.PROPERTY_REAL_QUEUE_ID)
        real_queue_id = int(real_qid) if real_qid and real_qid.lstrip("-").isdigit() else None
        level = _int(props.get(codec.PROPERTY_DELAY_TIME_LEVEL))
        deliver_ms = None
        scheduled = r["topic"] in (RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC)
        if r["topic"] == RMQ_SYS_SCHEDULE_TOPIC:
            unit = level_units.get((r["queue_id"], r["queue_offset"], phy))
            deliver_ms = unit if unit is not None else (
                r["store_timestamp"] + delay_level_ms.get(min(max(level, 1), top), 0))
            done = r["queue_offset"] < _int(str(delay_offsets.get(str(r["queue_id"] + 1), 0)))
            state = "delivered" if done else "pending"
        elif r["topic"] == TIMER_TOPIC:
            deliver_ms = _int(props.get(codec.PROPERTY_TIMER_OUT_MS)) or None
            done = any(p > phy and t == real_topic for p, t in later_real.get(msg_id, ()))
            state = "delivered" if done else "pending"
        else:
            state = "stored"
        queue = (real_topic, real_queue_id) if scheduled else (r["topic"], r["queue_id"])
        out.append({"msg_id": msg_id, "topic": r["topic"], "queue_id": r["queue_id"],
                    "queue_offset": r["queue_offset"], "phy_offset": phy, "size": r["total_size"],
                    "store_ms": r["store_timestamp"], "reconsume_times": r["reconsume_times"],
                    "tags": props.get(codec.PROPERTY_TAGS), "real_topic": real_topic, "real_queue_id": real_queue_id,
                    "delay_level": level, "deliver_ms": deliver_ms, "state": state,
                    "offsets": _committed(consumer_offsets, *queue)})
    return tuple(out)


def _msg_id(record: dict) -> str:
    """The message's UNIQ_KEY, or its offsetMsgId when it has none (as RocketMQ's getMsgId falls back)."""
    return record["properties"].get(codec.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or record["msg_id"]


def _int(text: str | None) -> int:
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 0
