"""DefaultMessageStore end to end on the in-memory and the OS disk."""

from __future__ import annotations

import pytest

from store.clock import ManualClock
from store.consume_queue import CQ_UNIT
from store.disk import MemoryDisk, OsDisk
from store.mapped_file import StoreLoadError
from store.message import BLANK_MAGIC_CODE
from store.message_store import ABORT_FILE, DefaultMessageStore, GetMessageStatus
from store.put_status import AppendMessageStatus, PutMessageStatus

from .conftest import SMALL, make_store, new_msg


@pytest.fixture(params=["memory", "os"])
def disk(request, tmp_path):
    return MemoryDisk() if request.param == "memory" else OsDisk(str(tmp_path / "store"))


def test_put_dispatch_get(disk):
    store = make_store(disk)
    results = [store.put_message(new_msg(queue_id=1, key=f"m{i}", body=b"x" * i)) for i in range(5)]
    assert [r.status for r in results] == [PutMessageStatus.PUT_OK] * 5
    assert [r.append.logics_offset for r in results] == [0, 1, 2, 3, 4]
    assert store.get_message("g", "TopicTest", 1, 0, 32).status == GetMessageStatus.NO_MESSAGE_IN_QUEUE
    assert store.do_reput() == 5
    got = store.get_message("g", "TopicTest", 1, 1, 3)
    assert got.status == GetMessageStatus.FOUND
    assert [m.properties["UNIQ_KEY"] for m in got.messages] == ["m1", "m2", "m3"]
    assert got.next_begin_offset == 4
    assert [m.queue_offset for m in got.messages] == [1, 2, 3]
    assert got.messages[0].commit_log_offset == results[1].append.wrote_offset


def test_get_message_statuses():
    store = make_store()
    for i in range(3):
        store.put_message(new_msg(key=f"m{i}"))
    store.do_reput()
    assert store.get_message("g", "Nope", 0, 0, 1).status == GetMessageStatus.NO_MESSAGE_IN_QUEUE
    assert store.get_message("g", "TopicTest", 0, 3, 1).status == GetMessageStatus.OFFSET_OVERFLOW_ONE
    bad = store.get_message("g", "TopicTest", 0, 9, 1)
    assert (bad.status, bad.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3)
    assert store.get_message("g", "TopicTest", 0, -1, 1).status == GetMessageStatus.OFFSET_TOO_SMALL
    filtered = store.get_message("g", "TopicTest", 0, 0, 5, tags_filter=lambda tags: False)
    assert filtered.status == GetMessageStatus.NO_MATCHED_MESSAGE and filtered.next_begin_offset == 3


def test_commit_log_rolls_with_a_blank_record_and_20_digit_names():
    store = make_store()
    for i in range(60):
        assert store.put_message(new_msg(key=f"m{i}", body=b"b" * 50)).is_ok
    names = store.disk.listdir("commitlog")
    assert names[:3] == ["00000000000000000000", "00000000000000004096", "00000000000000008192"]
    first = store.disk.read_file("commitlog/00000000000000000000")
    # The blank record sits right after the last record of the first file.
    pos = 0
    while int.from_bytes(first[pos + 4 : pos + 8], "big", signed=True) != -875286124:
        pos += int.from_bytes(first[pos : pos + 4], "big")
    assert int.from_bytes(first[pos : pos + 4], "big") == 4096 - pos
    store.do_reput()
    keys, offset = [], 0
    while offset < 60:  # a read never crosses a consume-queue file (8 units here)
        got = store.get_message("g", "TopicTest", 0, offset, 100)
        assert len(got.messages) <= 8
        keys += [m.properties["UNIQ_KEY"] for m in got.messages]
        offset = got.next_begin_offset
    assert keys == [f"m{i}" for i in range(60)]


def test_consume_queue_files_hold_20_byte_units_named_by_byte_offset():
    store = make_store()
    for i in range(10):
        store.put_message(new_msg(key=f"m{i}"))
    store.do_reput()
    assert store.disk.listdir("consumequeue/TopicTest/0") == ["00000000000000000000", "00000000000000000160"]
    raw = store.disk.read_file("consumequeue/TopicTest/0/00000000000000000000")
    phy, size, tags = CQ_UNIT.unpack_from(raw, 20)
    msg = store.look_message_by_offset(phy, size)
    assert msg.properties["UNIQ_KEY"] == "m1" and msg.queue_offset == 1 and tags == 0


def test_graceful_restart_recovers_normally_and_continues_queue_offsets(disk):
    clock = ManualClock()
    store = make_store(disk, clock)
    for i in range(7):
        store.put_message(new_msg(queue_id=2, key=f"m{i}"))
    store.shutdown()
    assert not disk.exists(ABORT_FILE)
    again = make_store(disk, clock)
    assert again.last_exit_ok
    assert again.put_message(new_msg(queue_id=2, key="m7")).append.logics_offset == 7
    again.do_reput()
    assert [m.queue_offset for m in again.get_message("g", "TopicTest", 2, 0, 32).messages] == list(range(8))


def test_crash_leaves_the_abort_file_and_recovers_abnormally_redispatching(disk):
    clock = ManualClock()
    store = make_store(disk, clock)
    for i in range(30):
        clock.advance(1000)
        store.put_message(new_msg(queue_id=i % 2, key=f"m{i}", body=b"z" * 40))
    # Crash before the reput ran: nothing is in the consume queues yet.
    assert disk.exists(ABORT_FILE)
    again = DefaultMessageStore(disk, SMALL, clock)
    assert again.load()
    assert not again.last_exit_ok
    again.start(0)
    keys = [
        m.properties["UNIQ_KEY"]
        for q in (0, 1)
        for start in (0, 8)
        for m in again.get_message("g", "TopicTest", q, start, 64).messages
    ]
    assert sorted(keys) == sorted(f"m{i}" for i in range(30))


def test_truncation_moves_positions_but_keeps_stale_bytes():
    disk = MemoryDisk()
    store = make_store(disk)
    for i in range(5):
        store.put_message(new_msg(key=f"m{i}"))
    store.do_reput()
    cq = store.get_consume_queue("TopicTest", 0)
    third = cq.get_unit(2)[0]
    cq.truncate_dirty_logic_files(third)
    assert cq.get_max_offset_in_queue() == 2
    raw = disk.read_file("consumequeue/TopicTest/0/00000000000000000000")
    assert CQ_UNIT.unpack_from(raw, 40)[0] == third  # the unit is still there, past the tail


def test_a_segment_of_the_wrong_length_is_a_clear_load_error():
    disk = MemoryDisk()
    disk.open("commitlog/00000000000000000000", create_size=100)
    store = DefaultMessageStore(disk, SMALL, ManualClock())
    assert not store.load()
    assert "commitlog/00000000000000000000" in store.load_error and "4096" in store.load_error
    with pytest.raises(StoreLoadError):
        store.commit_log.mfq.load()


def test_put_limits_give_rocketmq_statuses():
    store = make_store(max_message_size=10)
    assert store.put_message(new_msg(body=b"x" * 11)).status == PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(new_msg(**{"P": "v" * 40000})).status == PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    store.shutdown()
    assert store.put_message(new_msg()).status == PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_offset_in_queue_by_time():
    clock = ManualClock(1_000_000)
    store = make_store(clock=clock)
    for i in range(6):
        store.put_message(new_msg(key=f"m{i}"))
        clock.advance(100)
    store.do_reput()
    assert store.get_offset_in_queue_by_time("TopicTest", 0, 1_000_250) == 3
    assert store.get_offset_in_queue_by_time("TopicTest", 0, 0) == 0


def test_power_failure_before_the_first_cq_flush_leaves_rocketmqs_junk_head_unit():
    """truncateDirtyLogicFiles keeps a file's first unit without checking it (faithful; #495 family)."""
    import random

    for seed in range(50):  # the first seed whose power failure keeps nothing of queue 1's CQ head
        disk, clock = MemoryDisk(), ManualClock()
        store = make_store(disk, clock)
        store.put_message(new_msg(queue_id=0, key="a"))
        store.commit_log.flush(0)  # "a" is durable
        store.put_message(new_msg(queue_id=1, key="b"))  # "b" and both CQ units are not
        store.do_reput()
        disk.power_failure(random.Random(seed))
        if not any(disk.read_file("consumequeue/TopicTest/1/00000000000000000000")[:20]):
            break
    again = DefaultMessageStore(disk, SMALL, clock)
    assert again.load()
    again.start(0)
    cq = again.get_consume_queue("TopicTest", 1)
    assert cq.get_unit(0) == (0, 0, 0)  # a junk unit, pointing at nothing
    assert again.put_message(new_msg(queue_id=1, key="c")).append.logics_offset == 1  # offset 0 is gone


class _KeepNothingUnflushed:
    """A power failure's rng that tears nothing: every byte not flushed is lost."""

    def choice(self, options):
        return options[0]


def test_stale_cq_unit_after_two_power_failures_leaves_a_durable_message_unindexed():
    """#495: truncateDirtyLogicFiles only moves positions; a second power failure resurrects the stale unit and
    the recovery's re-dispatch of the durable message at that queue offset is skipped ("built repeatedly")."""
    disk, clock = MemoryDisk(), ManualClock()
    store = make_store(disk, clock)
    store.put_message(new_msg(key="a"))
    store.commit_log.flush(0)  # "a" is durable
    store.put_message(new_msg(key="b"))  # "b" is not ...
    store.do_reput()
    store.get_consume_queue("TopicTest", 0).mfq.flush(0)  # ... but its CQ unit is
    disk.power_failure(_KeepNothingUnflushed())

    second = make_store(disk, clock)  # the CQ is cut back to "a": unit 1 (for "b") stays on disk
    c = second.put_message(new_msg(key="c", body=b"a longer body than b had"))
    assert c.append.logics_offset == 1
    second.do_reput()
    second.commit_log.flush(0)  # "c" is durable, its CQ unit is not
    disk.power_failure(_KeepNothingUnflushed())

    third = DefaultMessageStore(disk, SMALL, clock)
    skipped = []
    third.unindexed_listeners.append(lambda req, unit: skipped.append((req.uniq_key, req.consume_queue_offset, unit)))
    assert third.load()
    third.start(0)
    cq = third.get_consume_queue("TopicTest", 0)
    stale = cq.get_unit(1)
    assert stale[0] == c.append.wrote_offset and stale[1] != c.append.wrote_bytes  # b's unit, not c's
    assert skipped == [("c", 1, stale)]


@pytest.mark.parametrize("era", ["5.3.3", "4.9.8"])
def test_sync_flush_put_that_opens_a_new_file_is_flushed_and_dispatched(era):
    """GroupCommitService.doCommit flushes until the record is on disk: one flush call covers one file, so a record
    that opened a new commit-log file needs two. With one, 5.x (reput up to the flushed end under SYNC_FLUSH)
    left the last record undispatched until the next put (explore seed 4: a timer copy never consumed)."""
    store = make_store(flush_disk_type="SYNC_FLUSH", era=era)
    body = b"x" * 3000  # one record per 4 KiB file: every put after the first opens a new file
    for i in range(3):
        result = store.put_message(new_msg(key=f"m{i}", body=body))
        assert result.is_ok
        end = result.append.wrote_offset + result.append.wrote_bytes
        assert store.commit_log.get_flushed_where() == end
        assert store.commit_log.get_confirm_offset() == end
    assert store.do_reput() == 3
    assert store.get_message("g", "TopicTest", 0, 0, 32).status == GetMessageStatus.FOUND
    assert len(store.get_message("g", "TopicTest", 0, 0, 32).messages) == 3


def test_a_put_that_ends_a_file_stamps_it_with_its_store_time():
    """MappedFile.appendMessagesInner sets storeTimestamp for an END_OF_FILE append too (both tags), so the flush
    hands the checkpoint the time of the put that ended the file, not that of the file's last record."""
    clock = ManualClock(1_700_000_000_000)
    store = make_store(clock=clock)
    store.put_message(new_msg(key="m0", body=b"x" * 3000))
    clock.advance(5000)
    ended = store.put_message(new_msg(key="m1", body=b"x" * 3000))  # too big for the rest of file 0: ends it
    assert ended.append.wrote_offset == 4096
    assert store.commit_log.mfq.mapped_files[0].store_timestamp == 1_700_000_005_000
    store.commit_log.flush(0)  # file 0 (one file per call)
    assert store.commit_log.mfq.store_timestamp == 1_700_000_005_000


@pytest.mark.parametrize("flush", ["SYNC_FLUSH", "ASYNC_FLUSH"])
@pytest.mark.parametrize("era", ["5.3.3", "4.9.8"])
def test_an_oversize_record_answers_put_ok_and_stores_nothing(era, flush):
    """A record larger than a whole commit-log file ends the file it meets with a blank, is appended again to a new
    file, ends that one too, and both tags still answer PUT_OK (CommitLog.asyncPutMessage, case END_OF_FILE,
    4.9.8 l. 698, 5.3.3 l. 1039): the append's status is END_OF_FILE, its offset the second blank's, its size the
    whole file; no queue offset is taken. Under SYNC_FLUSH the put flushes up to the end of that blank (the
    GroupCommitRequest's next offset). The records around it are stored, dispatched and recovered after a crash."""
    disk = MemoryDisk()
    store = make_store(disk, flush_disk_type=flush, era=era)
    assert store.put_message(new_msg(key="m0", body=b"x" * 3000)).is_ok
    files = 1
    for i in range(2):
        result = store.put_message(new_msg(key=f"big{i}", body=b"y" * 4096))
        assert result.status == PutMessageStatus.PUT_OK and result.is_ok
        a = result.append
        assert not a.stored and a.status == AppendMessageStatus.END_OF_FILE
        files += 1 if i == 0 else 2  # the rest of m0's file and a new one, then two fresh files, all blank
        assert (a.wrote_offset, a.wrote_bytes, a.logics_offset) == ((files - 1) * 4096, 4096, 1)
        assert store.commit_log.get_max_offset() == files * 4096
        blank = disk.read_file(f"commitlog/{a.wrote_offset:020d}")
        assert blank[4:8] == BLANK_MAGIC_CODE.to_bytes(4, "big", signed=True) and int.from_bytes(blank[:4]) == 4096
        if flush == "SYNC_FLUSH":
            assert store.commit_log.get_flushed_where() == files * 4096
    result = store.put_message(new_msg(key="m1", body=b"x" * 3000))
    assert result.is_ok and result.append.stored and result.append.logics_offset == 1
    assert result.append.wrote_offset == files * 4096
    assert store.do_reput() == 2
    got = store.get_message("g", "TopicTest", 0, 0, 32)
    assert [m.properties["UNIQ_KEY"] for m in got.messages] == ["m0", "m1"]
    again = DefaultMessageStore(disk, store.config, store.clock)  # a crash: the abort file is still there
    assert again.load() and not again.last_exit_ok
    again.start(0)
    got = again.get_message("g", "TopicTest", 0, 0, 32)
    assert [m.properties["UNIQ_KEY"] for m in got.messages] == ["m0", "m1"]
    assert again.put_message(new_msg(key="m2")).append.wrote_offset == result.append.wrote_offset + result.append.wrote_bytes


def test_a_readable_unit_that_holds_no_record_ends_the_batch_for_the_client_but_not_the_scan():
    """A stale unit (#495) points into the middle of a durable record: Java's commitLog.getMessage returns those
    bytes undecoded, so the broker answers FOUND and counts up to maxMsgNums units in nextBeginOffset; the client's
    decodesBatch stops at the record it cannot decode. Only a missing entry skips to the next commit-log file
    (explore seed 1000000206: a pull at a stale unit skipped 56 retry copies to the queue's end)."""
    store = make_store()
    records = [store.put_message(new_msg(topic="Other", key=f"m{i}")).append for i in range(4)]
    cq = store.find_consume_queue("TopicTest", 0)
    for i, r in enumerate(records):
        at = r.wrote_offset + (10 if i == 1 else 0)  # unit 1: readable bytes, no record starts there
        assert cq.put_message_position_info(at, r.wrote_bytes, 0, i)
    whole = store.get_message("g", "TopicTest", 0, 0, 32)
    assert (whole.status, whole.next_begin_offset) == (GetMessageStatus.FOUND, 4)
    assert [m.properties["UNIQ_KEY"] for m in whole.messages] == ["m0"]  # m2, m3 sit behind the bad record
    at_stale = store.get_message("g", "TopicTest", 0, 1, 2)
    assert (at_stale.status, at_stale.next_begin_offset, at_stale.messages) == (GetMessageStatus.FOUND, 3, [])
    after = store.get_message("g", "TopicTest", 0, at_stale.next_begin_offset, 2)
    assert [m.properties["UNIQ_KEY"] for m in after.messages] == ["m3"]
