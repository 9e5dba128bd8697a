"""ConsumerManager: which clients of a group are connected (heartbeats), so clients can rebalance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class ConsumerGroupInfo:
    group_name: str
    message_model: str
    topics: set[str] = field(default_factory=set)
    client_ids: set[str] = field(default_factory=set)


class ConsumerManager:
    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroupInfo] = {}
        # Called with the group whose membership changed (NOTIFY_CONSUMER_IDS_CHANGED).
        self.ids_changed_listeners: list[Callable[[str], None]] = []

    def register_consumer(self, group: str, client_id: str, message_model: str, topics: list[str]) -> bool:
        info = self.groups.get(group)
        if info is None:
            info = self.groups[group] = ConsumerGroupInfo(group, message_model)
        info.topics.update(topics)
        changed = client_id not in info.client_ids
        info.client_ids.add(client_id)
        if changed:
            self._notify(group)
        return changed

    def unregister_consumer(self, group: str, client_id: str) -> None:
        info = self.groups.get(group)
        if info is not None and client_id in info.client_ids:
            info.client_ids.discard(client_id)
            if not info.client_ids:
                # Java drops a group with no connection left, so its pulls answer SUBSCRIPTION_NOT_EXIST
                del self.groups[group]
            self._notify(group)

    def get_consumer_id_list(self, group: str) -> list[str]:
        info = self.groups.get(group)
        return sorted(info.client_ids) if info else []

    def _notify(self, group: str) -> None:
        for listener in self.ids_changed_listeners:
            listener(group)
