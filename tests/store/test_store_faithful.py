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


# --- item 12: recovery at 5.3.3 ------------------------------------------------------------------------------
def _filled(config, messages=150):
    """A gracefully shut down store with ~5 commit-log files; returns the disk, clock and the records' offsets."""
    disk, clock = MemoryDisk(), ManualClock(1_700_000_000_000)
    store = _store(disk, clock, config)
    offsets = []
    for i in range(messages):
        clock.advance(10)
        offsets.append(store.put_message(new_msg(key=f"m{i}", body=b"z" * 40)).append.wrote_offset)
    store.do_reput()
    store.shutdown()
    assert len(disk.listdir("commitlog")) >= messages // 30
    return disk, clock, offsets


def _drop_cq_units_from(disk, unit: int, cq_file_size: int = 160) -> None:
    """Lose the consume queue's files from the one holding ``unit`` on (its tail, as a lost directory part)."""
    first = unit * 20 // cq_file_size * cq_file_size
    for name in disk.listdir("consumequeue/TopicTest/0"):
        if int(name) >= first:
            disk.delete(f"consumequeue/TopicTest/0/{name}")


def _reload(disk, clock, config) -> DefaultMessageStore:
    store = DefaultMessageStore(disk, config, clock)
    assert store.load(), store.load_error
    return store


def test_5_3_3_normal_recovery_dispatches_past_the_queues_during_the_scan():
    """CommitLog.recoverNormally (5.3.3): records with ``commitLogOffset > maxPhyOffsetOfConsumeQueue`` are
    dispatched while scanning, before start(), and start() reputs from the confirm offset (the log's end);
    4.9.8 dispatches nothing there and start() reputs from the queues' max physical offset.

    A quirk of the tag, kept: maxPhysicOffset is the *end* of the last unit, i.e. the start of the next record,
    and ``>`` passes over exactly that record; nothing dispatches it later. (Only reachable when the queues are
    behind after a clean shutdown, e.g. lost consume-queue files.)"""
    disk, clock, offsets = _filled(ERA_4)
    _drop_cq_units_from(disk, 40)
    store = _reload(disk, clock, ERA_4)
    assert store.get_consume_queue("TopicTest", 0).get_max_offset_in_queue() == 40
    store.start(0)
    assert store.get_consume_queue("TopicTest", 0).get_max_offset_in_queue() == 150

    disk, clock, offsets = _filled(SMALL)
    _drop_cq_units_from(disk, 40)
    store = _reload(disk, clock, SMALL)
    cq = store.get_consume_queue("TopicTest", 0)
    assert cq.get_max_offset_in_queue() == 149  # dispatched during load(), all but record 40
    assert cq.get_unit(40)[0] == offsets[41]
    store.start(0)
    assert store.reput_from_offset == store.commit_log.get_max_offset()
    assert cq.get_max_offset_in_queue() == 149


def test_5_3_3_normal_recovery_starts_at_the_file_holding_the_queues_max():
    """5.3.3 starts at the last file whose fileFromOffset <= maxPhyOffsetOfConsumeQueue, so a broken record
    between the queues' max and the 3rd-last file ends the log there; 4.9.8 scans only the last three files."""
    for config in (SMALL, ERA_4):
        disk, clock, offsets = _filled(config)
        end_before = _reload(disk, clock, config).commit_log.get_max_offset()
        disk2, clock2, offsets = _filled(config)
        _drop_cq_units_from(disk2, 16)
        broken = offsets[20]  # after the queues' max, before the 3rd-last commit-log file
        assert broken < int(disk2.listdir("commitlog")[-3])
        f = f"commitlog/{broken // 4096 * 4096:020d}"
        handle = disk2.open(f)
        handle.write(broken % 4096 + 4, b"\0\0\0\0")  # bad magic: the scan stops here
        handle.flush()
        store = _reload(disk2, clock2, config)
        if config.is_era_4:
            assert store.commit_log.get_max_offset() == end_before
        else:
            assert store.commit_log.get_max_offset() == broken
            assert store.checkpoint.confirm_phy_offset == offsets[19]  # the start of the last valid record


def test_consume_queues_are_truncated_only_when_they_reach_past_the_log():
    """Both tags, both modes: ``if (maxPhyOffsetOfConsumeQueue >= processOffset) truncateDirtyLogicFiles``. An
    empty queue keeps maxPhysicOffset -1 (develop's unconditional call would set it to processOffset)."""
    for config in (SMALL, ERA_4):
        disk, clock, _offsets = _filled(config, messages=20)
        _drop_cq_units_from(disk, 8)  # the queues end before the log: no truncation
        disk.makedirs("consumequeue/Other/1")
        store = _reload(disk, clock, config)
        assert store.get_consume_queue("Other", 1).max_physic_offset == -1, config.era
