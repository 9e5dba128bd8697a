"""TopicConfig, PermName, the system topic names and TopicConfigManager (``topics.json``, ROCKETMQ.md 6.2).

Topics matter to the testbed because retry and DLQ topics are created on the fly by the
broker, each creation bumps the data version and persists ``topics.json`` synchronously,
and an unknown topic is only accepted when the default topic (``TBW102``) carries INHERIT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .clock import Clock
from .config_manager import (
    PERSIST_5_3_3,
    ConfigManager,
    prop_bool,
    prop_int,
    prop_str,
    prop_str_map,
    require_object,
)
from .data_version import SHAPE_4X, SHAPE_5X, DataVersion
from .disk import Disk
from .fastjson import dumps, loads
from .faults import NO_FAULTS, FaultInjector
from .topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC

# --- PermName --------------------------------------------------------------------------------------------
PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1


def is_readable(perm: int) -> bool:
    return (perm & PERM_READ) == PERM_READ


def is_writeable(perm: int) -> bool:
    return (perm & PERM_WRITE) == PERM_WRITE


def is_inherited(perm: int) -> bool:
    return (perm & PERM_INHERIT) == PERM_INHERIT


def perm_to_string(perm: int) -> str:
    """``PermName.perm2String``: e.g. 6 → "RW-"."""
    return ("R" if is_readable(perm) else "-") + ("W" if is_writeable(perm) else "-") + (
        "X" if is_inherited(perm) else "-")


# --- topic names (TopicValidator, MixAll, TimerMessageStore) ---------------------------------------------
AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
SCHEDULE_TOPIC_QUEUE_NUM = 18
TIMER_TOPIC_QUEUE_NUM = 1
RMQ_SYS_SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
RMQ_SYS_BENCHMARK_TOPIC = "BenchmarkTest"
RMQ_SYS_OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
REVIVE_TOPIC_PREFIX = SYSTEM_TOPIC_PREFIX + "REVIVE_LOG_"  # PopAckConstants.REVIVE_TOPIC + cluster
SYNC_BROKER_MEMBER_GROUP_PREFIX = SYSTEM_TOPIC_PREFIX + "SYNC_BROKER_MEMBER_"
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
DEFAULT_REVIVE_QUEUE_NUM = 8  # BrokerConfig.reviveQueueNum
SELF_TEST_TOPIC = RMQ_SYS_SELF_TEST_TOPIC
BENCHMARK_TOPIC = RMQ_SYS_BENCHMARK_TOPIC
OFFSET_MOVED_EVENT = RMQ_SYS_OFFSET_MOVED_EVENT


SINGLE_TAG = "SINGLE_TAG"
MULTI_TAG = "MULTI_TAG"
DEFAULT_READ_QUEUE_NUMS = 16
DEFAULT_WRITE_QUEUE_NUMS = 16


def get_retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def get_dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_dlq_topic(topic: str) -> bool:
    return topic.startswith(DLQ_GROUP_TOPIC_PREFIX)


# --- TopicConfig -----------------------------------------------------------------------------------------
@dataclass(slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = DEFAULT_READ_QUEUE_NUMS
    write_queue_nums: int = DEFAULT_WRITE_QUEUE_NUMS
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)  # 5.x

    def to_json(self, json_shape: str = SHAPE_5X) -> dict:
        """The bean, properties in alphabetical order; 5.x adds ``attributes``."""
        bean: dict = {"attributes": dict(self.attributes)} if json_shape == SHAPE_5X else {}
        bean.update(
            order=self.order,
            perm=self.perm,
            readQueueNums=self.read_queue_nums,
            topicFilterType=self.topic_filter_type,
            topicName=self.topic_name,
            topicSysFlag=self.topic_sys_flag,
            writeQueueNums=self.write_queue_nums,
        )
        return bean

    @classmethod
    def from_json(cls, obj: object, topic_name: str = "") -> TopicConfig:
        """Read either shape; unknown properties are ignored, missing ones take the defaults."""
        where = f"topicConfigTable[{topic_name!r}]"
        bean = require_object(obj, where)
        return cls(
            topic_name=prop_str(bean, "topicName", topic_name, where),
            read_queue_nums=prop_int(bean, "readQueueNums", DEFAULT_READ_QUEUE_NUMS, where),
            write_queue_nums=prop_int(bean, "writeQueueNums", DEFAULT_WRITE_QUEUE_NUMS, where),
            perm=prop_int(bean, "perm", PERM_READ | PERM_WRITE, where),
            topic_filter_type=prop_str(bean, "topicFilterType", SINGLE_TAG, where),
            topic_sys_flag=prop_int(bean, "topicSysFlag", 0, where),
            order=prop_bool(bean, "order", False, where),
            attributes=prop_str_map(bean, "attributes", where),
        )


# --- TopicConfigManager ----------------------------------------------------------------------------------
class TopicConfigManager(ConfigManager):
    """The broker's topic table, ``config/topics.json``.

    The built-in topics exist in memory from construction but reach the file only with the
    first change (every change persists the whole table)."""

    def __init__(
        self,
        disk: Disk,
        clock: Clock,
        *,
        broker_cluster_name: str = "DefaultCluster",
        broker_name: str = "broker-a",
        auto_create_topic_enable: bool = True,
        default_topic_queue_nums: int = 8,
        timer_wheel_enable: bool = True,
        cluster_topic_enable: bool = True,
        broker_topic_enable: bool = True,
        trace_topic_enable: bool = False,
        system_topics_5x: bool = True,
        revive_queue_num: int = DEFAULT_REVIVE_QUEUE_NUM,
        faults: FaultInjector = NO_FAULTS,
        persist_mode: str = PERSIST_5_3_3,
        json_shape: str = SHAPE_5X,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(disk, "config/topics.json", faults=faults, persist_mode=persist_mode, log=log)
        if json_shape not in (SHAPE_4X, SHAPE_5X):
            raise ValueError(f"json_shape must be '4.x' or '5.x', not {json_shape!r}")
        self.clock = clock
        self.json_shape = json_shape
        self.changed_listeners: list[Callable[[], None]] = []  # told after every create/update/delete
        self.broker_cluster_name = broker_cluster_name
        self.broker_name = broker_name
        self.auto_create_topic_enable = auto_create_topic_enable
        self.default_topic_queue_nums = default_topic_queue_nums
        self.topic_config_table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion.now(clock)
        self.system_topics_5x = system_topics_5x
        self.revive_queue_num = revive_queue_num
        self._add_built_in_topics(timer_wheel_enable, cluster_topic_enable, broker_topic_enable,
                                  trace_topic_enable)

    def _add_built_in_topics(self, timer_wheel_enable: bool, cluster_topic_enable: bool,
                             broker_topic_enable: bool, trace_topic_enable: bool) -> None:
        """The topics ``init()`` creates, in its order: 4.9.8's set; 5.3.3 adds the POP revive topic, the
        broker-member sync topic, the two transaction topics and the timer topic."""
        put = self._put
        put(TopicConfig(RMQ_SYS_SELF_TEST_TOPIC, 1, 1))
        if self.auto_create_topic_enable:
            nums = self.default_topic_queue_nums
            put(TopicConfig(AUTO_CREATE_TOPIC_KEY_TOPIC, nums, nums, PERM_INHERIT | PERM_READ | PERM_WRITE))
        put(TopicConfig(RMQ_SYS_BENCHMARK_TOPIC, 1024, 1024))
        cluster_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if cluster_topic_enable else 0)
        put(TopicConfig(self.broker_cluster_name, perm=cluster_perm))
        broker_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if broker_topic_enable else 0)
        put(TopicConfig(self.broker_name, 1, 1, broker_perm))
        put(TopicConfig(RMQ_SYS_OFFSET_MOVED_EVENT, 1, 1))
        put(TopicConfig(RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, SCHEDULE_TOPIC_QUEUE_NUM))
        if trace_topic_enable:
            put(TopicConfig(RMQ_SYS_TRACE_TOPIC, 1, 1))
        put(TopicConfig(f"{self.broker_cluster_name}_{REPLY_TOPIC_POSTFIX}", 1, 1))
        if self.system_topics_5x:
            revive = self.revive_queue_num
            put(TopicConfig(REVIVE_TOPIC_PREFIX + self.broker_cluster_name, revive, revive))
            put(TopicConfig(SYNC_BROKER_MEMBER_GROUP_PREFIX + self.broker_name, 1, 1, PERM_INHERIT))
            put(TopicConfig(RMQ_SYS_TRANS_HALF_TOPIC, 1, 1))
            put(TopicConfig(RMQ_SYS_TRANS_OP_HALF_TOPIC, 1, 1))
        if timer_wheel_enable:
            put(TopicConfig(TIMER_TOPIC, TIMER_TOPIC_QUEUE_NUM, TIMER_TOPIC_QUEUE_NUM))

    def _put(self, tc: TopicConfig) -> TopicConfig | None:
        old = self.topic_config_table.get(tc.topic_name)
        self.topic_config_table[tc.topic_name] = tc
        return old

    def _changed(self) -> None:
        """Every create/update/delete: a new data version, then a synchronous persist."""
        self.data_version.next_version(self.clock, 0)
        self.persist()
        for listener in self.changed_listeners:
            listener()

    # --- look-ups and changes --------------------------------------------------------------
    def select_topic_config(self, topic: str) -> TopicConfig | None:
        return self.topic_config_table.get(topic)

    def contains_topic(self, topic: str) -> bool:
        return topic in self.topic_config_table

    def create_topic_in_send_message_method(
        self, topic: str, default_topic: str, client_default_topic_queue_nums: int = 4, topic_sys_flag: int = 0,
    ) -> TopicConfig | None:
        """A producer sent to an unknown topic: inherit from ``default_topic`` if it has INHERIT, else None."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        default = self.topic_config_table.get(default_topic)
        if default is None:
            self.log.warn(f"Create new topic failed, because the default topic[{default_topic}] not exist")
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self.auto_create_topic_enable:
            default.perm = PERM_READ | PERM_WRITE  # Java overwrites the stored TBW102's perm
        if not is_inherited(default.perm):
            self.log.warn(f"Create new topic failed, because the default topic[{default_topic}] has no perm "
                     f"[{default.perm}]")
            return None
        queue_nums = max(0, min(client_default_topic_queue_nums, default.write_queue_nums))
        tc = TopicConfig(
            topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=default.perm & ~PERM_INHERIT,
            topic_filter_type=default.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        self.log(f"Create new topic by default topic:[{default_topic}] config:[{tc}]")
        self._put(tc)
        self._changed()
        return tc

    def create_topic_in_send_message_back_method(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0,
    ) -> TopicConfig:
        """Retry and DLQ topics: the existing one, else a new one with exactly these parameters."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        tc = TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag)
        self.log(f"create new topic {tc}")
        self._put(tc)
        self._changed()
        return tc

    def update_topic_config(self, tc: TopicConfig) -> None:
        old = self._put(tc)
        self.log(f"update topic config, old:[{old}] new:[{tc}]" if old else f"create new topic [{tc}]")
        self._changed()

    def delete_topic_config(self, topic: str) -> None:
        old = self.topic_config_table.pop(topic, None)
        if old is None:
            self.log.warn(f"delete topic config failed, topic: {topic} not exists")
            return
        self.log(f"delete topic config OK, topic: {old}")
        self._changed()

    def is_order_topic(self, topic: str) -> bool:
        tc = self.topic_config_table.get(topic)
        return tc is not None and tc.order

    # --- ConfigManager ---------------------------------------------------------------------
    def encode(self, pretty: bool = True) -> str:
        table = {name: tc.to_json(self.json_shape) for name, tc in self.topic_config_table.items()}
        return dumps({"dataVersion": self.data_version.to_json(self.json_shape), "topicConfigTable": table},
                     pretty=pretty)

    def decode(self, text: str) -> None:
        """``putAll`` the stored topics over the built-ins and take the stored data version."""
        root = loads(text)
        if root is None:
            return
        root = require_object(root, "topics.json")
        table = require_object(root.get("topicConfigTable") or {}, "topicConfigTable")
        parsed: dict[str, TopicConfig] = {}
        for name, bean in table.items():
            if not isinstance(name, str):
                raise ValueError(f"topicConfigTable key {name!r} is not a topic name")
            parsed[name] = TopicConfig.from_json(bean, name)
        stored = root.get("dataVersion")
        version = DataVersion.from_json(stored) if stored is not None else DataVersion.now(self.clock)
        self.topic_config_table.update(parsed)
        self.data_version.assign_new_one(version)
