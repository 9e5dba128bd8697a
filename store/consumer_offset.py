"""ConsumerOffsetManager: the broker's committed consume offsets, ``consumerOffset.json`` (ROCKETMQ.md 5.1, 6.4).

Commits only change memory; the file is written by the periodic persist (every 5 s) and at
shutdown, so a crash loses the commits since the last persist and the group re-consumes
them: the duplicate window the invariants bound.
"""

from __future__ import annotations

from collections.abc import Callable

from .clock import Clock
from .config_manager import PERSIST_5_3_3, ConfigManager, require_object
from .data_version import SHAPE_4X, SHAPE_5X, DataVersion
from .disk import Disk
from .fastjson import dumps, loads
from .faults import NO_FAULTS, FaultInjector

TOPIC_GROUP_SEPARATOR = "@"
CONSUMER_OFFSET_UPDATE_VERSION_STEP = 500  # BrokerConfig.consumerOffsetUpdateVersionStep (5.x)


def split_topic_at_group(key: str) -> tuple[str, str] | None:
    """``key.split("@")`` with Java's semantics (trailing empty parts dropped); None unless two parts."""
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    while parts and parts[-1] == "":
        parts.pop()
    return (parts[0], parts[1]) if len(parts) == 2 else None


def _offset_int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where} must be an integer, not {value!r}")
    return value


def _queue_id(key: object, where: str) -> int:
    """A queue id key: a bare number as fastjson writes it, or a quoted one as strict JSON would."""
    if isinstance(key, str):
        try:
            return int(key)
        except ValueError:
            raise ValueError(f"{where}: queue id {key!r} is not a number") from None
    return _offset_int(key, f"{where}: queue id")


class ConsumerOffsetManager(ConfigManager):
    """``offset_table``: "topic@group" → {queue id → next offset to consume}."""

    def __init__(
        self,
        disk: Disk,
        clock: Clock,
        *,
        faults: FaultInjector = NO_FAULTS,
        persist_mode: str = PERSIST_5_3_3,
        json_shape: str = SHAPE_5X,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(disk, "config/consumerOffset.json", faults=faults, persist_mode=persist_mode, log=log)
        if json_shape not in (SHAPE_4X, SHAPE_5X):
            raise ValueError(f"json_shape must be '4.x' or '5.x', not {json_shape!r}")
        self.clock = clock
        self.json_shape = json_shape
        self.offset_table: dict[str, dict[int, int]] = {}
        self.data_version = DataVersion.now(clock)
        self._version_change_counter = 0
        # A driver that skips clients' no-op commits (re-sent offsets the table already holds) accounts them
        # here before any other commit reads the version counter.
        self.before_commit: Callable[[], None] | None = None

    # --- commits and queries ---------------------------------------------------------------
    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        """A plain put: a smaller offset than stored is accepted (and only logged)."""
        if self.before_commit is not None:
            self.before_commit()
        key = topic + TOPIC_GROUP_SEPARATOR + group
        queues = self.offset_table.get(key)
        if queues is None:
            self.offset_table[key] = {queue_id: offset}
        else:
            stored = queues.get(queue_id)
            queues[queue_id] = offset
            if stored is not None and offset < stored:
                self.log.warn(f"[NOTIFYME]update consumer offset less than store. clientHost={client_host}, key={key}, "
                         f"queueId={queue_id}, requestOffset={offset}, storeOffset={stored}")
        if self.json_shape == SHAPE_5X:
            self._version_change_counter += 1
            if self._version_change_counter % CONSUMER_OFFSET_UPDATE_VERSION_STEP == 0:
                self.data_version.next_version(self.clock, 0)

    def commits_to_next_version(self) -> int | None:
        """How many more commits move the 5.x dataVersion (the last of them does); None: none ever do (4.x)."""
        if self.json_shape != SHAPE_5X:
            return None
        return CONSUMER_OFFSET_UPDATE_VERSION_STEP - self._version_change_counter % CONSUMER_OFFSET_UPDATE_VERSION_STEP

    def account_skipped_commits(self, count: int) -> None:
        """``count`` commits a driver skipped as no-ops (each re-put a value the table held): only the version
        counter moves. The driver's bound (``commits_to_next_version``) keeps them short of a version step."""
        if self.json_shape != SHAPE_5X or not count:
            return
        if count >= self.commits_to_next_version():
            raise AssertionError(f"{count} skipped commits would move the dataVersion: the driver's bound is wrong")
        self._version_change_counter += count

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or −1 when there is none."""
        queues = self.offset_table.get(topic + TOPIC_GROUP_SEPARATOR + group)
        if queues is None:
            return -1
        return queues.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        """A copy of the group's offsets on ``topic`` (empty when none)."""
        return dict(self.offset_table.get(topic + TOPIC_GROUP_SEPARATOR + group, {}))

    def which_topic_by_consumer(self, group: str) -> list[str]:
        """The topics ``group`` has offsets for, sorted (Java returns a HashSet)."""
        topics = set()
        for key in self.offset_table:
            pair = split_topic_at_group(key)
            if pair is not None and pair[1] == group:
                topics.add(pair[0])
        return sorted(topics)

    def which_group_by_topic(self, topic: str) -> list[str]:
        groups = set()
        for key in self.offset_table:
            pair = split_topic_at_group(key)
            if pair is not None and pair[0] == topic:
                groups.add(pair[1])
        return sorted(groups)

    def group_topic_map(self) -> dict[str, list[str]]:
        """The derived ``groupTopicMap`` of the 5.x file: group → sorted topics, groups in table order."""
        result: dict[str, list[str]] = {}
        for key in self.offset_table:
            pair = split_topic_at_group(key)
            if pair is not None:
                topics = result.setdefault(pair[1], [])
                if pair[0] not in topics:
                    topics.append(pair[0])
        return {group: sorted(topics) for group, topics in result.items()}

    def remove_offset(self, group: str) -> None:
        """Drop every entry of ``group`` (admin group deletion)."""
        for key in list(self.offset_table):
            pair = split_topic_at_group(key)
            if pair is not None and pair[1] == group:
                del self.offset_table[key]
                self.log(f"clean group offset {key}")

    # --- ConfigManager ---------------------------------------------------------------------
    def content_token(self) -> object:
        """Everything ``encode`` reads, without the JSON: the table in its order, the version, the shape."""
        v = self.data_version
        return (self.json_shape, v.timestamp_ms, v.counter, v.state_version,
                tuple((key, tuple(queues.items())) for key, queues in self.offset_table.items()))

    def encode(self, pretty: bool = True) -> str:
        """Queue ids ascending (a ConcurrentHashMap of small Integers iterates so); keys in table order."""
        table = {key: {qid: queues[qid] for qid in sorted(queues)} for key, queues in self.offset_table.items()}
        if self.json_shape == SHAPE_4X:
            return dumps({"offsetTable": table}, pretty=pretty)
        root = {
            "dataVersion": self.data_version.to_json(SHAPE_5X),
            "groupTopicMap": self.group_topic_map(),
            "offsetTable": table,
        }
        return dumps(root, pretty=pretty)

    def decode(self, text: str) -> None:
        """Replace the table with the file's (``groupTopicMap`` and unknown properties are ignored)."""
        root = loads(text)
        if root is None:
            return
        root = require_object(root, "consumerOffset.json")
        table: dict[str, dict[int, int]] = {}
        for key, queues in require_object(root.get("offsetTable") or {}, "offsetTable").items():
            if not isinstance(key, str):
                raise ValueError(f"offsetTable key {key!r} is not \"topic@group\"")
            where = f"offsetTable[{key!r}]"
            table[key] = {_queue_id(qid, where): _offset_int(off, f"{where}[{qid!r}]")
                          for qid, off in require_object(queues, where).items()}
        stored = root.get("dataVersion")
        self.offset_table = table
        self.data_version = DataVersion.from_json(stored) if stored is not None else DataVersion.now(self.clock)
