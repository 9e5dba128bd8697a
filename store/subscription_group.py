"""SubscriptionGroupConfig and SubscriptionGroupManager (``subscriptionGroup.json``, ROCKETMQ.md 4.1, 6.3).

The group config decides a consumer's retries (``retryQueueNums``, ``retryMaxTimes``), and
the auto-creation path persists the file on every call that creates, which puts one more
config write (and crash window) on the first pull or heartbeat of a new group.
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

MASTER_ID = 0
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
FILTERSRV_CONSUMER_GROUP = "FILTERSRV_CONSUMER"
SELF_TEST_CONSUMER_GROUP = "SELF_TEST_C_GROUP"
ONS_HTTP_PROXY_GROUP = "CID_ONS-HTTP-PROXY"
CID_ONSAPI_PULL_GROUP = "CID_ONSAPI_PULL"
CID_ONSAPI_PERMISSION_GROUP = "CID_ONSAPI_PERMISSION"
CID_ONSAPI_OWNER_GROUP = "CID_ONSAPI_OWNER"
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"

GROUP_RETRY_POLICY_CUSTOMIZED = "CUSTOMIZED"


def is_sys_consumer_group(group: str) -> bool:
    """``MixAll.isSysConsumerGroup``: such groups are created even without auto-creation."""
    return group.startswith(CID_RMQ_SYS_PREFIX)


@dataclass(slots=True)
class SubscriptionGroupConfig:
    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    # 5.x only (written with the 5.x shape; the classic send-back ignores them).
    consume_message_orderly: bool = False
    group_sys_flag: int = 0
    consume_timeout_minute: int = 15
    group_retry_policy: dict = field(default_factory=lambda: {"type": GROUP_RETRY_POLICY_CUSTOMIZED})
    attributes: dict[str, str] = field(default_factory=dict)

    def to_json(self, json_shape: str = SHAPE_5X) -> dict:
        """The bean, properties in alphabetical order (``subscriptionDataSet`` is null, so omitted)."""
        five = json_shape == SHAPE_5X
        bean: dict = {"attributes": dict(self.attributes)} if five else {}
        bean.update(
            brokerId=self.broker_id,
            consumeBroadcastEnable=self.consume_broadcast_enable,
            consumeEnable=self.consume_enable,
            consumeFromMinEnable=self.consume_from_min_enable,
        )
        if five:
            bean.update(consumeMessageOrderly=self.consume_message_orderly,
                        consumeTimeoutMinute=self.consume_timeout_minute)
        bean["groupName"] = self.group_name
        if five:
            bean.update(groupRetryPolicy=dict(self.group_retry_policy), groupSysFlag=self.group_sys_flag)
        bean.update(
            notifyConsumerIdsChangedEnable=self.notify_consumer_ids_changed_enable,
            retryMaxTimes=self.retry_max_times,
            retryQueueNums=self.retry_queue_nums,
            whichBrokerWhenConsumeSlowly=self.which_broker_when_consume_slowly,
        )
        return bean

    @classmethod
    def from_json(cls, obj: object, group_name: str = "") -> SubscriptionGroupConfig:
        """Read either shape; unknown properties are ignored, missing ones take the defaults."""
        where = f"subscriptionGroupTable[{group_name!r}]"
        bean = require_object(obj, where)
        policy = bean.get("groupRetryPolicy")
        return cls(
            group_name=prop_str(bean, "groupName", group_name, where),
            consume_enable=prop_bool(bean, "consumeEnable", True, where),
            consume_from_min_enable=prop_bool(bean, "consumeFromMinEnable", True, where),
            consume_broadcast_enable=prop_bool(bean, "consumeBroadcastEnable", True, where),
            retry_queue_nums=prop_int(bean, "retryQueueNums", 1, where),
            retry_max_times=prop_int(bean, "retryMaxTimes", 16, where),
            broker_id=prop_int(bean, "brokerId", MASTER_ID, where),
            which_broker_when_consume_slowly=prop_int(bean, "whichBrokerWhenConsumeSlowly", 1, where),
            notify_consumer_ids_changed_enable=prop_bool(bean, "notifyConsumerIdsChangedEnable", True, where),
            consume_message_orderly=prop_bool(bean, "consumeMessageOrderly", False, where),
            group_sys_flag=prop_int(bean, "groupSysFlag", 0, where),
            consume_timeout_minute=prop_int(bean, "consumeTimeoutMinute", 15, where),
            group_retry_policy=(dict(require_object(policy, f"{where}.groupRetryPolicy")) if policy is not None
                                else {"type": GROUP_RETRY_POLICY_CUSTOMIZED}),
            attributes=prop_str_map(bean, "attributes", where),
        )


class SubscriptionGroupManager(ConfigManager):
    """The broker's consumer groups, ``config/subscriptionGroup.json``."""

    def __init__(
        self,
        disk: Disk,
        clock: Clock,
        *,
        auto_create_subscription_group: bool = True,
        faults: FaultInjector = NO_FAULTS,
        persist_mode: str = PERSIST_5_3_3,
        json_shape: str = SHAPE_5X,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(disk, "config/subscriptionGroup.json", faults=faults, persist_mode=persist_mode, log=log)
        if json_shape not in (SHAPE_4X, SHAPE_5X):
            raise ValueError(f"json_shape must be '4.x' or '5.x', not {json_shape!r}")
        self.clock = clock
        self.json_shape = json_shape
        self.auto_create_subscription_group = auto_create_subscription_group
        self.subscription_group_table: dict[str, SubscriptionGroupConfig] = {}
        self.forbidden_table: dict[str, dict[str, int]] = {}  # 5.x, kept as read
        self.data_version = DataVersion.now(clock)
        self._add_built_in_groups()

    def _add_built_in_groups(self) -> None:
        """4.9.8 ``init()``: the tool groups; the ONS ones broadcast-enabled (already the default)."""
        for name in (TOOLS_CONSUMER_GROUP, FILTERSRV_CONSUMER_GROUP, SELF_TEST_CONSUMER_GROUP):
            self.subscription_group_table[name] = SubscriptionGroupConfig(name)
        for name in (ONS_HTTP_PROXY_GROUP, CID_ONSAPI_PULL_GROUP, CID_ONSAPI_PERMISSION_GROUP,
                     CID_ONSAPI_OWNER_GROUP):
            self.subscription_group_table[name] = SubscriptionGroupConfig(name, consume_broadcast_enable=True)

    def _changed(self) -> None:
        self.data_version.next_version(self.clock, 0)
        self.persist()

    # --- look-ups and changes --------------------------------------------------------------
    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; an unknown group is auto-created (and the file persisted) when allowed."""
        sgc = self.subscription_group_table.get(group)
        if sgc is not None:
            return sgc
        if not (self.auto_create_subscription_group or is_sys_consumer_group(group)):
            return None
        sgc = self.subscription_group_table.setdefault(group, SubscriptionGroupConfig(group))
        self.log(f"auto create a subscription group, {sgc}")
        self._changed()
        return sgc

    def contains_subscription_group(self, group: str) -> bool:
        return bool(group.strip()) and group in self.subscription_group_table

    def update_subscription_group_config(self, config: SubscriptionGroupConfig) -> None:
        old = self.subscription_group_table.get(config.group_name)
        self.subscription_group_table[config.group_name] = config
        self.log(f"update subscription group config, old: {old} new: {config}" if old
                 else f"create new subscription group, {config}")
        self._changed()

    def delete_subscription_group_config(self, group: str) -> None:
        old = self.subscription_group_table.pop(group, None)
        self.forbidden_table.pop(group, None)
        if old is None:
            self.log.warn(f"delete subscription group failed, subscription groupName: {group} not exist")
            return
        self.log(f"delete subscription group OK, subscription group:{old}")
        self._changed()

    # --- ConfigManager ---------------------------------------------------------------------
    def encode(self, pretty: bool = True) -> str:
        groups = {name: sgc.to_json(self.json_shape) for name, sgc in self.subscription_group_table.items()}
        root: dict = {"dataVersion": self.data_version.to_json(self.json_shape)}
        if self.json_shape == SHAPE_5X:
            root["forbiddenTable"] = {g: dict(t) for g, t in self.forbidden_table.items()}
        root["subscriptionGroupTable"] = groups
        return dumps(root, pretty=pretty)

    def decode(self, text: str) -> None:
        """``putAll`` the stored groups over the built-ins and take the stored data version."""
        root = loads(text)
        if root is None:
            return
        root = require_object(root, "subscriptionGroup.json")
        table = require_object(root.get("subscriptionGroupTable") or {}, "subscriptionGroupTable")
        parsed: dict[str, SubscriptionGroupConfig] = {}
        for name, bean in table.items():
            if not isinstance(name, str):
                raise ValueError(f"subscriptionGroupTable key {name!r} is not a group name")
            parsed[name] = SubscriptionGroupConfig.from_json(bean, name)
        forbidden: dict[str, dict[str, int]] = {}
        for group, topics in require_object(root.get("forbiddenTable") or {}, "forbiddenTable").items():
            where = f"forbiddenTable[{group!r}]"
            forbidden[str(group)] = {str(t): prop_int({"v": v}, "v", 0, where)
                                     for t, v in require_object(topics, where).items()}
        stored = root.get("dataVersion")
        version = DataVersion.from_json(stored) if stored is not None else DataVersion.now(self.clock)
        self.subscription_group_table.update(parsed)
        self.forbidden_table.update(forbidden)
        self.data_version.assign_new_one(version)
