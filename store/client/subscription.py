"""SubscriptionData and FilterAPI.buildSubscriptionData: a topic's tag expression, parsed once."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..message import MessageExt, java_string_hash

SUB_ALL = "*"


@dataclass(slots=True)
class SubscriptionData:
    topic: str
    sub_string: str = SUB_ALL
    tags_set: frozenset[str] = field(default_factory=frozenset)  # empty: every message matches
    code_set: frozenset[int] = field(default_factory=frozenset)

    def matches(self, msg: MessageExt) -> bool:
        """The client-side re-filter (PullAPIWrapper.processPullResult): by tag string, since the
        broker only compared tag hash codes and two tags may share one."""
        if not self.tags_set:
            return True
        tags = msg.tags
        return tags is not None and tags in self.tags_set


def build_subscription_data(topic: str, sub_string: str | None) -> SubscriptionData:
    """``"TagA || TagB"`` -> tags {TagA, TagB}; empty or ``*`` -> everything."""
    if not sub_string or not sub_string.strip() or sub_string.strip() == SUB_ALL:
        return SubscriptionData(topic, SUB_ALL)
    tags = [t.strip() for t in sub_string.split("||") if t.strip()]
    return SubscriptionData(topic, sub_string, frozenset(tags), frozenset(java_string_hash(t) for t in tags))
