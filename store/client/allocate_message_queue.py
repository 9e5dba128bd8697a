"""AllocateMessageQueueAveragely: which queues of a topic one consumer of a group owns.

Every consumer computes its share alone from the same sorted inputs, so the shares are disjoint
and cover every queue without any coordination: consecutive blocks, the first ``n % k`` consumers
taking one queue more.
"""

from __future__ import annotations

from collections.abc import Iterable

from .api import MessageQueue


def allocate_message_queue_averagely(
    consumer_group: str, current_cid: str, mq_all: Iterable[MessageQueue], cid_all: Iterable[str],
    *, average_ceil: bool = False,
) -> list[MessageQueue]:
    """The queues ``current_cid`` owns; empty when it is not (yet) among the group's consumers.

    ``average_ceil`` (mutant "allocate_average_ceil"): every consumer takes ceil(n / k) queues from index * that,
    wrapping as Java's ``(startIndex + i) % mqAll.size()`` does: the last shares run onto the first ones."""
    if not current_cid:
        raise ValueError("currentCID is empty")
    mqs = sorted(mq_all)
    cids = sorted(cid_all)
    if not mqs:
        raise ValueError("mqAll is null or mqAll empty")
    if not cids:
        raise ValueError("cidAll is null or cidAll empty")
    if current_cid not in cids:
        return []  # the broker does not know us yet (heartbeat not seen): own nothing this round
    index = cids.index(current_cid)
    n, k = len(mqs), len(cids)
    if average_ceil:
        average = -(-n // k)
        return [mqs[(index * average + i) % n] for i in range(min(average, n))]
    mod = n % k
    if n <= k:
        average = 1
    elif mod > 0 and index < mod:
        average = n // k + 1
    else:
        average = n // k
    start = index * average if mod > 0 and index < mod else index * average + mod
    count = min(average, n - start)
    return [mqs[(start + i) % n] for i in range(count)]


class AllocateMessageQueueAveragely:
    """The strategy object, for code that wants RocketMQ's class name."""

    name = "AVG"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Iterable[MessageQueue], cid_all: Iterable[str]
    ) -> list[MessageQueue]:
        return allocate_message_queue_averagely(consumer_group, current_cid, mq_all, cid_all)
