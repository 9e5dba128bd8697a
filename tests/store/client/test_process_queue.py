"""ProcessQueue: the smallest-un-acked rule (ROCKETMQ.md 5.3) and its bookkeeping."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from store.client.api import RemotingError
from store.client.process_queue import ProcessQueue
from store.clock import ManualClock
from store.message import PROPERTY_CONSUME_START_TIMESTAMP, MessageExt


def msg(offset: int, body: bytes = b"xy") -> MessageExt:
    return MessageExt(topic="T", queue_id=0, body=body, queue_offset=offset)


def test_remove_message_returns_the_smallest_un_acked_offset():
    pq = ProcessQueue(ManualClock())
    assert pq.remove_message([msg(0)]) == -1  # nothing cached
    batch = [msg(i) for i in range(10, 15)]
    pq.put_message(batch)
    assert pq.msg_count == 5 and pq.queue_offset_max == 14 and pq.msg_size == 10
    assert pq.remove_message([batch[2]]) == 10  # 10 is still being processed
    assert pq.remove_message([batch[0]]) == 11
    assert pq.remove_message([batch[1], batch[3]]) == 14
    assert pq.remove_message([batch[4]]) == 15  # empty: queueOffsetMax + 1
    assert pq.msg_count == 0 and pq.msg_size == 0
    assert pq.remove_message([batch[4]]) == -1


def test_removing_an_unknown_message_changes_nothing_but_answers():
    pq = ProcessQueue(ManualClock())
    pq.put_message([msg(3), msg(4)])
    assert pq.remove_message([msg(9)]) == 3
    assert pq.msg_count == 2


def test_put_twice_counts_once_and_span_is_last_minus_first():
    pq = ProcessQueue(ManualClock())
    assert pq.put_message([msg(5), msg(7)]) is True
    assert pq.put_message([msg(5), msg(2)]) is False  # already consuming
    assert pq.msg_count == 3
    assert pq.offsets() == [2, 5, 7]
    assert pq.get_max_span() == 5
    assert pq.queue_offset_max == 2  # the last *new* message put, as in Java


def test_mutant_commit_max_offset_answers_past_un_acked_messages():
    pq = ProcessQueue(ManualClock(), commit_max_offset=True)
    batch = [msg(i) for i in range(3)]
    pq.put_message(batch)
    assert pq.remove_message([batch[1]]) == 3  # 0 and 2 are still un-acked


@st.composite
def offsets_and_ack_batches(draw):
    offsets = sorted(draw(st.sets(st.integers(0, 200), min_size=1, max_size=40)))
    order = draw(st.permutations(offsets))
    cuts = sorted(draw(st.lists(st.integers(0, len(order)), max_size=10)))
    batches, start = [], 0
    for cut in [*cuts, len(order)]:
        batches.append(order[start:cut])
        start = cut
    return offsets, batches


def replay_acks(pq: ProcessQueue, offsets: list[int], batches: list[list[int]]) -> tuple[list[str], int]:
    """Ack ``batches`` in order; the violations of the rule seen on the way, and the final offset."""
    messages = {o: msg(o) for o in offsets}
    pq.put_message([messages[o] for o in offsets])
    committed = -1
    un_acked = set(offsets)
    violations = []
    for batch in batches:
        result = pq.remove_message([messages[o] for o in batch])
        un_acked -= set(batch)
        if result >= 0:
            committed = max(committed, result)  # updateOffset(increaseOnly=true)
        if un_acked and committed > min(un_acked):
            violations.append(f"committed {committed} passes un-acked {min(un_acked)}")
    return violations, committed


@given(offsets_and_ack_batches())
def test_committed_offset_never_passes_an_un_acked_message(case):
    offsets, batches = case
    violations, committed = replay_acks(ProcessQueue(ManualClock()), offsets, batches)
    assert violations == []
    assert committed == max(offsets) + 1


def test_the_same_check_catches_the_commit_max_offset_mutant():
    violations, _ = replay_acks(ProcessQueue(ManualClock(), commit_max_offset=True), [0, 1, 2], [[2], [0], [1]])
    assert violations == ["committed 3 passes un-acked 0", "committed 3 passes un-acked 1"]


def test_clean_expire_msg_sends_back_old_heads_only():
    clock = ManualClock(1_000_000)
    pq = ProcessQueue(clock)
    batch = [msg(i) for i in range(3)]
    pq.put_message(batch)
    batch[0].properties[PROPERTY_CONSUME_START_TIMESTAMP] = str(clock.now_ms())
    batch[1].properties[PROPERTY_CONSUME_START_TIMESTAMP] = str(clock.now_ms())
    clock.advance(15 * 60_000)
    sent = []
    assert pq.clean_expire_msg(15, lambda m, level: sent.append((m.queue_offset, level))) == 0  # not older yet
    clock.advance(1)
    assert pq.clean_expire_msg(15, lambda m, level: sent.append((m.queue_offset, level))) == 2
    assert sent == [(0, 3), (1, 3)]  # 2 never started: it stops the scan
    assert pq.offsets() == [2]


def test_clean_expire_msg_keeps_a_message_whose_send_back_failed():
    clock = ManualClock(1_000_000)
    pq = ProcessQueue(clock)
    head = msg(0)
    pq.put_message([head, msg(1)])
    head.properties[PROPERTY_CONSUME_START_TIMESTAMP] = str(clock.now_ms() - 16 * 60_000)
    attempts = []

    def failing(m, level):
        attempts.append(m.queue_offset)
        raise RemotingError("broker down")

    assert pq.clean_expire_msg(15, failing) == 0
    assert pq.offsets() == [0, 1]
    assert attempts == [0, 0]  # tried again within the round, as Java's loop does


def test_pull_expiry_uses_the_wall_clock():
    clock = ManualClock(0)
    pq = ProcessQueue(clock)
    clock.advance(120_000)
    assert not pq.is_pull_expired()
    clock.advance(1)
    assert pq.is_pull_expired()
