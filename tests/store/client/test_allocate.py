"""AllocateMessageQueueAveragely: known vectors and the partition property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.client.allocate_message_queue import (
    AllocateMessageQueueAveragely,
    allocate_message_queue_averagely,
)
from store.client.api import MessageQueue


def mqs(n: int, topic: str = "T") -> list[MessageQueue]:
    return [MessageQueue(topic, "broker-a", i) for i in range(n)]


def ids(queues: list[MessageQueue]) -> list[int]:
    return [q.queue_id for q in queues]


def test_eight_queues_over_three_consumers_are_three_three_two_in_order():
    cids = ["c0", "c1", "c2"]
    got = [ids(allocate_message_queue_averagely("G", c, mqs(8), cids)) for c in cids]
    assert got == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_ten_over_four_and_three_over_five():
    cids4 = ["a", "b", "c", "d"]
    assert [ids(allocate_message_queue_averagely("G", c, mqs(10), cids4)) for c in cids4] == [
        [0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    cids5 = ["a", "b", "c", "d", "e"]
    assert [ids(allocate_message_queue_averagely("G", c, mqs(3), cids5)) for c in cids5] == [
        [0], [1], [2], [], []]


def test_inputs_are_sorted_first():
    shuffled_mqs = [mqs(8)[i] for i in (5, 0, 7, 2, 1, 6, 3, 4)]
    assert ids(allocate_message_queue_averagely("G", "c1", shuffled_mqs, ["c2", "c0", "c1"])) == [3, 4, 5]


def test_a_consumer_the_broker_does_not_list_owns_nothing():
    assert allocate_message_queue_averagely("G", "stranger", mqs(4), ["c0", "c1"]) == []


def test_empty_inputs_are_errors():
    with pytest.raises(ValueError):
        allocate_message_queue_averagely("G", "c0", [], ["c0"])
    with pytest.raises(ValueError):
        allocate_message_queue_averagely("G", "c0", mqs(2), [])


def test_strategy_object_delegates():
    assert AllocateMessageQueueAveragely().allocate("G", "c0", mqs(2), ["c0"]) == mqs(2)


@given(st.integers(1, 40), st.integers(1, 12))
def test_shares_partition_the_queues_and_differ_by_at_most_one(n, k):
    cids = [f"c{i:02d}" for i in range(k)]
    shares = [allocate_message_queue_averagely("G", c, mqs(n), cids) for c in cids]
    flat = [q for share in shares for q in share]
    assert sorted(flat) == mqs(n)  # every queue exactly once
    sizes = [len(s) for s in shares]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # the first consumers take the extra queues
