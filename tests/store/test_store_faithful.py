"""DefaultMessageStore / CommitLog against the tags (issue 13: items 6 and 12): the checkpoint's
physicMsgTimestamp, and 5.3.3's normal recovery and its conditional consume-queue truncation."""

from __future__ import annotations

from store.clock import ManualClock
from store.disk import MemoryDisk
from store.message_store import DefaultMessageStore, FlushCommitLogService

from .conftest import SMALL, new_msg

ERA_4 = SMALL.with_(era="4.9.8")


def _store(disk, clock, config=SMALL, mutants=frozenset()) -> DefaultMessageStore:
    store = DefaultMessageStore(disk, config, clock, mutants=mutants)
    assert store.load(), store.load_error
    store.start(0)
    return store


# --- item 6: physicMsgTimestamp moves only on a thorough flush ---------------------------------------------
def _flush_rounds(mutants=frozenset()) -> list[int]:
    """The checkpoint's physicMsgTimestamp after each 500 ms FlushRealTimeService round, while a message is put
    every 100 ms (enough dirty pages for a 4-page flush every round)."""
    clock = ManualClock(1_700_000_000_000)
    store = _store(MemoryDisk(), clock, SMALL.with_(mapped_file_size_commit_log=1024 * 1024), mutants)
    flusher = next(s for s in store.services if isinstance(s, FlushCommitLogService))
    seen = []
    for mono in range(100, 12_100, 100):
        clock.advance(100)
        store.put_message(new_msg(body=b"x" * 4096))
        if flusher.next_wakeup_ms() <= mono:
            flusher.step(mono)
            seen.append(store.checkpoint.physic_msg_timestamp)
    return seen


def test_physic_msg_timestamp_moves_only_on_a_thorough_flush():
    """MappedFileQueue.flush (4.9.8 and 5.3.3): ``if (0 == flushLeastPages) this.storeTimestamp = tmpTimeStamp``;
    FlushRealTimeService copies it into the checkpoint. The 500 ms rounds flush 4+ pages and leave it alone;
    the 10 s thorough round sets it."""
    seen = _flush_rounds()
    assert seen[:19] == [0] * 19  # rounds at 0.5 .. 9.5 s
    assert seen[19] == 1_700_000_010_000  # the thorough flush at 10 s
    assert all(ts == seen[19] for ts in seen[20:])


def test_the_mutant_moves_it_on_every_round():
    seen = _flush_rounds({"physic_ts_every_flush"})
    assert seen[0] == 1_700_000_000_500 and seen[1] == 1_700_000_001_000
