"""Recovery after a crash at any point (Hypothesis).

For any sequence of puts, flushes, dispatch rounds and clock moves, then a process crash or a
power failure: after recovery every consume-queue unit points at a valid record of its own
topic-queue below the recovered commit-log end, nothing that was flushed is lost, and queue
offsets continue from each consume queue's max offset.

One exception is RocketMQ's own and is asserted as such: a consume-queue file whose first unit
never reached the disk (all zeros after a power failure) keeps a junk unit (0, 0, 0), because
``truncateDirtyLogicFiles`` does not check the validity of a file's first unit; the real message
of that queue offset is then "built repeatedly" and skipped (a relative of #495).
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from store.clock import ManualClock
from store.disk import MemoryDisk
from store.message import decode_message
from store.message_store import DefaultMessageStore

from .conftest import SMALL, make_store, new_msg

TOPICS = ("TopicA", "TopicB")

op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 1), st.integers(0, 1), st.integers(0, 300)),
    st.tuples(st.just("flush_log"), st.sampled_from([0, 1, 4])),
    st.tuples(st.just("flush_cq"), st.sampled_from([0, 2])),
    st.tuples(st.just("checkpoint")),
    st.tuples(st.just("reput")),
    st.tuples(st.just("tick"), st.integers(1, 5000)),
)


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(op, max_size=80), power=st.booleans(), tear_seed=st.integers(0, 2**32 - 1))
def test_recovery_after_any_crash(ops, power, tear_seed):
    disk, clock = MemoryDisk(), ManualClock(1_700_000_000_000)
    store = make_store(disk, clock)
    puts = []  # (phy_offset, size, topic, queue_id, key)
    for n, (kind, *args) in enumerate(ops):
        if kind == "put":
            t, q, body_len = args
            result = store.put_message(new_msg(TOPICS[t], q, b"b" * body_len, key=f"m{n}"))
            assert result.is_ok
            a = result.append
            puts.append((a.wrote_offset, a.wrote_bytes, TOPICS[t], q, f"m{n}"))
        elif kind == "flush_log":
            store.commit_log.flush(args[0])
        elif kind == "flush_cq":
            for cq in store._all_consume_queues():
                cq.flush(args[0])
        elif kind == "checkpoint":
            # What FlushConsumeQueueService does on its thorough round.
            logics = store.checkpoint.logics_msg_timestamp
            for cq in store._all_consume_queues():
                cq.flush(0)
            store.checkpoint.logics_msg_timestamp = logics
            store.checkpoint.flush()
        elif kind == "reput":
            store.do_reput()
        else:
            clock.advance(args[0])
    flushed_where = store.commit_log.get_flushed_where()
    if power:
        disk.power_failure(random.Random(tear_seed))
    else:
        disk.process_crash()

    zero_head_queues = {
        (topic, int(qid))
        for topic in disk.listdir("consumequeue")
        for qid in disk.listdir(f"consumequeue/{topic}")
        for name in disk.listdir(f"consumequeue/{topic}/{qid}")
        if not any(disk.read_file(f"consumequeue/{topic}/{qid}/{name}")[:20])
    }
    again = DefaultMessageStore(disk, SMALL, clock)
    assert again.load(), again.load_error
    again.start(0)
    log_end = again.commit_log.get_max_offset()

    # Every consume-queue unit points at a valid record of its own queue below the log end.
    for cq in again._all_consume_queues():
        for index in range(cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()):
            phy, size, _tags = cq.get_unit(index)
            if (cq.topic, cq.queue_id) in zero_head_queues and (phy, size, _tags) == (0, 0, 0):
                continue  # RocketMQ's junk head unit, see the module docstring
            assert 0 <= phy and phy + size <= log_end, (cq.topic, cq.queue_id, index, phy, size, log_end)
            msg = decode_message(again.commit_log.get_message(phy, size), 0, check_crc=True)
            assert msg is not None
            assert (msg.topic, msg.queue_id, msg.queue_offset) == (cq.topic, cq.queue_id, index)

    # Nothing flushed (or, after a process crash, nothing at all) is lost.
    must_survive = [
        p for p in puts if (not power or p[0] + p[1] <= flushed_where) and (p[2], p[3]) not in zero_head_queues
    ]
    for phy, size, topic, qid, key in must_survive:
        assert phy + size <= log_end
        msg = again.look_message_by_offset(phy, size)
        assert msg is not None and msg.properties["UNIQ_KEY"] == key
        got = again.get_message("g", topic, qid, msg.queue_offset, 1)
        assert got.messages and got.messages[0].properties["UNIQ_KEY"] == key, (key, got.status)

    # Queue offsets continue from each consume queue's max offset.
    for t in TOPICS:
        for q in (0, 1):
            expected = again.get_max_offset_in_queue(t, q)
            result = again.put_message(new_msg(t, q, key="after"))
            assert result.append.logics_offset == expected
