"""Parity with RocketMQ's DefaultMessageStoreTest, MappedFileQueueTest, StoreCheckpointTest and ConsumeQueueTest
(store/src/test/java/org/apache/rocketmq/store) at rocketmq-all-4.9.8 and rocketmq-all-5.3.3. (AppendCallbackTest
only appends message batches, which are not modelled: see test_not_mirrored.py.)

The Java tests run on real files and threads; here the same facts are checked on the in-memory disk with a
manual clock, dispatching with ``do_reput`` where Java waits for the reput thread.
"""

from __future__ import annotations

import pytest

from store import message as codec
from store.checkpoint import StoreCheckpoint
from store.clock import ManualClock
from store.config import SYNC_FLUSH, MessageStoreConfig
from store.disk import MemoryDisk
from store.mapped_file import MappedFileQueue
from store.message import MessageExt
from store.message_store import ABORT_FILE, DefaultMessageStore, GetMessageStatus
from store.put_status import PutMessageStatus

STORE_MESSAGE = "Once, there was a chance for me!"
IPV4_BORN = (bytes([127, 0, 0, 1]), 0)
IPV4_STORE = (bytes([10, 0, 0, 8]), 8123)
IPV6_BORN = (bytes.fromhex("10500000000000000005060030 0c326b".replace(" ", "")), 0)
IPV6_STORE = (bytes(15) + b"\x01", 0)  # ::1
# The Java test's store: SYNC_FLUSH, one big commit-log file (its damageCommitLog maps file 0 only).
CONFIG = MessageStoreConfig(mapped_file_size_commit_log=1024 * 1024, mapped_file_size_consume_queue=20 * 1000,
                            flush_disk_type=SYNC_FLUSH)


def build_store(disk=None, clock=None, config=CONFIG) -> DefaultMessageStore:
    store = DefaultMessageStore(disk if disk is not None else MemoryDisk(), config,
                                clock if clock is not None else ManualClock(1_700_000_000_000))
    assert store.load(), store.load_error
    store.start(0)
    return store


def build_message(body: bytes = STORE_MESSAGE.encode(), topic: str = "FooBar", queue_id: int = 0,
                  ipv6: bool = False, **props) -> MessageExt:
    """buildMessage / buildIPv6HostMessage: tag TAG1, a key, born and store hosts of either family."""
    return MessageExt(topic=topic, body=body, queue_id=queue_id, properties={"TAGS": "TAG1", "KEYS": "Hello", **props},
                      born_timestamp=1_700_000_000_000, born_host=IPV6_BORN if ipv6 else IPV4_BORN,
                      store_host=IPV6_STORE if ipv6 else IPV4_STORE)


def body_by_offset(i: int) -> bytes:
    return f"{STORE_MESSAGE} offset {i}".encode()


def put_messages(store: DefaultMessageStore, total: int, topic: str, queue_id: int, interval: bool = False):
    """putMessages: the first half IPv4, the second half IPv6; ``interval`` sleeps 10 ms between puts."""
    results = []
    for i in range(total):
        result = store.put_message(build_message(body_by_offset(i), topic, queue_id, ipv6=i >= total // 2))
        assert result.status == PutMessageStatus.PUT_OK
        results.append(result.append)
        if interval:
            store.clock.advance(10)
    return results


def verify_master_is_functional(store: DefaultMessageStore, total: int) -> None:
    for _ in range(total):
        store.put_message(build_message())
    store.do_reput()
    for i in range(total):
        got = store.get_message("GROUP_A", "FooBar", 0, i, 1024 * 1024)
        assert got.status == GetMessageStatus.FOUND


# --- DefaultMessageStoreTest -------------------------------------------------------------------------------
@pytest.mark.parametrize("tag", ["rocketmq-all-4.9.8", "rocketmq-all-5.3.3"])
def test_repeat_restart(tag):
    """Mirrors DefaultMessageStoreTest.test_repeat_restart (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    config = MessageStoreConfig(era=tag.rsplit("-", 1)[1], mapped_file_size_commit_log=1024 * 8,
                                mapped_file_size_consume_queue=1024 * 4)
    master = DefaultMessageStore(MemoryDisk(), config, ManualClock(1_700_000_000_000))
    assert master.load()
    master.start(0)
    master.start(0)
    assert master.put_message(build_message()).is_ok
    master.shutdown()
    assert not master.disk.exists(ABORT_FILE)


def test_write_and_read():
    """Mirrors DefaultMessageStoreTest.testWriteAndRead (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = build_store()
    for i in range(20):
        assert store.put_message(build_message(ipv6=i >= 10)).is_ok
    store.do_reput()
    for i in range(20):
        got = store.get_message("GROUP_A", "FooBar", 0, i, 1024 * 1024)
        assert got.status == GetMessageStatus.FOUND and got.messages[0].queue_offset == i
    hosts = [m.born_host for m in store.get_message("GROUP_A", "FooBar", 0, 0, 32).messages]
    assert hosts == [IPV4_BORN] * 10 + [IPV6_BORN] * 10
    verify_master_is_functional(store, 20)


def test_group_commit():
    """Mirrors DefaultMessageStoreTest.testGroupCommit (rocketmq-all-5.3.3)."""
    store = build_store()
    for _ in range(10):
        store.put_message(build_message())
    assert store.commit_log.get_flushed_where() == store.commit_log.get_max_offset()  # SYNC_FLUSH: all forced
    store.do_reput()
    for i in range(10):
        assert store.get_message("GROUP_A", "FooBar", 0, i, 1024 * 1024) is not None
    verify_master_is_functional(store, 10)


def test_look_message_by_offset_offset_is_first():
    """Mirrors DefaultMessageStoreTest.testLookMessageByOffset_OffsetIsFirst (rocketmq-all-4.9.8, 5.3.3)."""
    store = build_store()
    results = put_messages(store, 10, "FooBar", 7)
    first = results[0]
    assert store.look_message_by_offset(first.wrote_offset).body == body_by_offset(0)
    assert store.look_message_by_offset(first.wrote_offset, first.wrote_bytes).body == body_by_offset(0)


def test_look_message_by_offset_offset_is_last():
    """Mirrors DefaultMessageStoreTest.testLookMessageByOffset_OffsetIsLast (rocketmq-all-4.9.8, 5.3.3)."""
    store = build_store()
    results = put_messages(store, 10, "FooBar", 3)
    last = results[-1]
    assert store.look_message_by_offset(last.wrote_offset, last.wrote_bytes).body == body_by_offset(9)


def test_look_message_by_offset_offset_is_out_of_bound():
    """Mirrors DefaultMessageStoreTest.testLookMessageByOffset_OffsetIsOutOfBound (rocketmq-all-4.9.8, 5.3.3)."""
    store = build_store()
    results = put_messages(store, 10, "FooBar", 5)
    end = results[-1].wrote_offset + results[-1].wrote_bytes
    assert store.look_message_by_offset(end) is None


@pytest.mark.parametrize("skewing_ms, expect_first", [(0, False), (2, False), (20_000, True)],
                         ids=["testGetOffsetInQueueByTime", "testGetOffsetInQueueByTime_TimestampIsSkewing",
                              "testGetOffsetInQueueByTime_TimestampSkewingIsLarge"])
def test_get_offset_in_queue_by_time(skewing_ms, expect_first):
    """Mirrors DefaultMessageStoreTest.testGetOffsetInQueueByTime, ..._TimestampIsSkewing and
    ..._TimestampSkewingIsLarge (rocketmq-all-4.9.8, rocketmq-all-5.3.3): 10 puts 10 ms apart; the offset found
    for (store time - skewing) points at the same message, or at the first one when the skew is large."""
    store = build_store()
    results = put_messages(store, 10, "FooBar", 0, interval=True)
    store.do_reput()
    cq = store.find_consume_queue("FooBar", 0)
    for result in results:
        offset = store.get_offset_in_queue_by_time("FooBar", 0, result.store_timestamp - skewing_ms)
        phy, size, _tags = cq.get_unit(offset)
        expected = results[0] if expect_first else result
        assert (phy, size) == (expected.wrote_offset, expected.wrote_bytes)


def test_get_offset_in_queue_by_time_consume_queue_not_found1():
    """Mirrors DefaultMessageStoreTest.testGetOffsetInQueueByTime_ConsumeQueueNotFound1 (rocketmq-all-4.9.8, 5.3.3)."""
    store = build_store()
    results = put_messages(store, 10, "FooBar", 0)
    store.do_reput()
    assert store.get_offset_in_queue_by_time("FooBar", 1, results[0].store_timestamp) == 0


def test_get_offset_in_queue_by_time_consume_queue_not_found2():
    """Mirrors DefaultMessageStoreTest.testGetOffsetInQueueByTime_ConsumeQueueNotFound2 (rocketmq-all-4.9.8,
    5.3.3): the store time of offset 0 in a queue without messages is -1."""
    store = build_store()
    put_messages(store, 10, "FooBar", 0)
    store.do_reput()
    assert store.get_message_store_timestamp("FooBar", 1, 0) == -1


def test_get_offset_in_queue_by_time_consume_queue_offset_not_exist():
    """Mirrors DefaultMessageStoreTest.testGetOffsetInQueueByTime_ConsumeQueueOffsetNotExist (rocketmq-all-4.9.8,
    5.3.3): offset -1 of a queue without messages has store time -1."""
    store = build_store()
    put_messages(store, 10, "FooBar", 0, interval=True)
    store.do_reput()
    assert store.get_message_store_timestamp("FooBar", 1, -1) == -1


def test_get_message_store_time_stamp():
    """Mirrors DefaultMessageStoreTest.testGetMessageStoreTimeStamp (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = build_store()
    results = put_messages(store, 10, "FooBar", 0, interval=True)
    store.do_reput()
    cq = store.find_consume_queue("FooBar", 0)
    for i in range(cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()):
        assert store.get_message_store_timestamp("FooBar", 0, i) == results[i].store_timestamp


def test_put_message_when_message_property_is_too_long():
    """Mirrors DefaultMessageStoreTest.testPutMessage_whenMessagePropertyIsTooLong (rocketmq-all-5.3.3)."""
    store = build_store()
    topic = "messagePropertyIsTooLongTest"
    digits = "".join(str(i % 10) for i in range(32767 + 1))
    illegal = store.put_message(build_message(b"123", topic, test=digits))
    assert illegal.status == PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.commit_log.topic_queue_table.get(f"{topic}-0", 0) == 0
    normal = store.put_message(build_message(b"123", topic, test=digits[:100]))
    assert normal.status == PutMessageStatus.PUT_OK
    assert store.commit_log.topic_queue_table.get(f"{topic}-0", 0) == 1
    store.do_reput()
    assert store.get_max_offset_in_queue(topic, 0) == 1


def test_max_offset():
    """Mirrors DefaultMessageStoreTest.testMaxOffset (rocketmq-all-5.3.3): with the dispatcher stopped the
    queue's max offset stays at what was dispatched; the committed (assigned) offsets count all puts."""
    store = build_store()
    assert store.get_max_offset_in_queue("FooBar", 0) == 0
    for _ in range(3):
        store.put_message(build_message())
    store.do_reput()
    assert store.dispatch_behind_bytes() == 0
    assert store.get_max_offset_in_queue("FooBar", 0) == 3
    for _ in range(2):  # "Disable the dispatcher": no reput round runs
        store.put_message(build_message())
    assert store.get_max_offset_in_queue("FooBar", 0) == 3
    assert store.commit_log.topic_queue_table["FooBar-0"] == 5


def test_pull_size():
    """Mirrors DefaultMessageStoreTest.testPullSize (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    store = build_store()
    for _ in range(32):
        store.put_message(build_message(topic="pullSizeTopic"))
    store.do_reput()
    for wanted in (32, 20, 10):
        assert len(store.get_message("simple", "pullSizeTopic", 0, 0, wanted).messages) == wanted


def _damage_commit_log(disk: MemoryDisk, offset: int) -> None:
    """damageCommitLog: zero 16 bytes from the topic-length field of the record at ``offset`` (file 0)."""
    handle = disk.open("commitlog/00000000000000000000")
    body_len = int.from_bytes(handle.read(offset + 84, 4), "big")
    handle.write(offset + 84 + body_len + 4, bytes(16))
    handle.flush()


@pytest.mark.parametrize("era", ["4.9.8", "5.3.3"])
def test_recover(era):
    """Mirrors DefaultMessageStoreTest.testRecover (rocketmq-all-4.9.8, rocketmq-all-5.3.3): a plain reboot keeps
    both maxima; a damaged last record is cut by normal and by abnormal (abort file) recovery alike."""
    disk, clock, config = MemoryDisk(), ManualClock(1_700_000_000_000), CONFIG.with_(era=era)
    topic = "recoverTopic"
    store = build_store(disk, clock, config)

    def put(n):
        for _ in range(n):
            store.put_message(build_message(topic=topic))
        store.do_reput()

    put(100)
    max_phy, max_cq = store.commit_log.get_max_offset(), store.get_max_offset_in_queue(topic, 0)
    store.shutdown()
    store = build_store(disk, clock, config)  # 1. just reboot
    assert (store.commit_log.get_max_offset(), store.get_max_offset_in_queue(topic, 0)) == (max_phy, max_cq)
    for abnormal in (False, True):  # 2. damage and reboot normally; 3. damage and reboot abnormally
        put(100)
        second_last_phy, second_last_cq = store.commit_log.get_max_offset(), store.get_max_offset_in_queue(topic, 0)
        store.put_message(build_message(topic=topic))
        store.shutdown()
        _damage_commit_log(disk, second_last_phy)
        if abnormal:
            disk.write_file(ABORT_FILE, b"")
        store = build_store(disk, clock, config)
        assert store.last_exit_ok is not abnormal
        assert store.commit_log.get_max_offset() == second_last_phy
        assert store.get_max_offset_in_queue(topic, 0) == second_last_cq
    put(100)  # message write again
    assert store.get_max_offset_in_queue(topic, 0) == second_last_cq + 100


def test_put_msg_exceeds_max_length():
    """Mirrors DefaultMessageStoreTest.testPutMsgExceedsMaxLength (rocketmq-all-5.3.3)."""
    store = build_store()
    result = store.put_message(build_message(bytes(4 * 1024 * 1024 + 1)))
    assert result.status == PutMessageStatus.MESSAGE_ILLEGAL


def test_put_long_message():
    """Mirrors DefaultMessageStoreTest.testPutLongMessage (rocketmq-all-4.9.8, rocketmq-all-5.3.3): the encoder's
    size limits."""
    max_size = MessageStoreConfig().max_message_size

    def encode(body_len: int, topic_len: int, props_len: int) -> str | None:
        msg = MessageExt(topic="\0" * topic_len, body=bytes(body_len), properties_string="\0" * props_len,
                         born_host=IPV4_BORN, store_host=IPV4_STORE)
        try:
            codec.prepare_message(msg, max_message_size=max_size)
        except codec.MessageIllegal as illegal:
            return illegal.status
        return None

    assert encode(max_size, 127, 32767) is None  # body, topic and properties exactly at their maxima
    assert encode(max_size + 1, 127, 32767) == PutMessageStatus.MESSAGE_ILLEGAL
    assert encode(max_size + 64 * 1024, 127, 32767) == PutMessageStatus.MESSAGE_ILLEGAL
    assert encode(max_size, 127, 32768) == PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert encode(max_size, 32767, 32767) == PutMessageStatus.MESSAGE_ILLEGAL


@pytest.mark.parametrize("era", ["4.9.8", "5.3.3"])
def test_dynamic_max_message_size(era):
    """Mirrors DefaultMessageStoreTest.testDynamicMaxMessageSize (rocketmq-all-4.9.8, rocketmq-all-5.3.3): the same
    message is refused, accepted and refused again as maxMessageSize moves (configs are frozen here, so each
    size gets its own store on the same disk; 10 MiB commit-log files as in the Java test)."""
    disk, clock = MemoryDisk(), ManualClock(1_700_000_000_000)
    origin = CONFIG.max_message_size
    msg = build_message(bytes(origin + 10))
    for max_size, expected in ((origin, PutMessageStatus.MESSAGE_ILLEGAL), (origin + 10, PutMessageStatus.PUT_OK),
                               (10, PutMessageStatus.MESSAGE_ILLEGAL)):
        store = build_store(disk, clock, CONFIG.with_(era=era, max_message_size=max_size,
                                                      mapped_file_size_commit_log=10 * 1024 * 1024))
        assert store.put_message(msg).status == expected
        store.shutdown()


class _DispatchBehindStore(DefaultMessageStore):
    """The Java test's spy: dispatchBehindBytes() answers 100 whatever was dispatched."""

    def dispatch_behind_bytes(self) -> int:
        return 100


@pytest.mark.parametrize("era", ["4.9.8", "5.3.3"])
def test_dispatch_behind_when_shutdown(era):
    """Mirrors DefaultMessageStoreShutDownTest.testDispatchBehindWhenShutdown (rocketmq-all-4.9.8, 5.3.3): a store
    still behind in dispatching at shutdown keeps its abort file, so the next start recovers abnormally."""
    disk = MemoryDisk()
    store = _DispatchBehindStore(disk, CONFIG.with_(era=era), ManualClock(1_700_000_000_000))
    assert store.load()
    store.start(0)
    store.shutdown()
    assert disk.exists(ABORT_FILE)
    again = build_store(disk, ManualClock(1_700_000_000_000), CONFIG.with_(era=era))
    assert not again.last_exit_ok


# --- MappedFileQueueTest -----------------------------------------------------------------------------------
def _filled_queue(path: str, msg: bytes, count: int = 1024) -> MappedFileQueue:
    mfq = MappedFileQueue(MemoryDisk(), path, 1024)
    for _ in range(count):
        mf = mfq.get_last_mapped_file_for_append(0)
        assert mf is not None and mf.wrote_position + len(msg) <= mf.file_size
        mf.append(msg)
    return mfq


def test_get_last_mapped_file():
    """Mirrors MappedFileQueueTest.testGetLastMappedFile (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    mfq = _filled_queue("a", b"0123456789abcdef")
    assert len(mfq.mapped_files) == 16 and mfq.get_max_offset() == 16 * 1024


def test_find_mapped_file_by_offset():
    """Mirrors MappedFileQueueTest.testFindMappedFileByOffset (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    mfq = _filled_queue("b", b"abcd")
    assert mfq.get_max_offset() == 4 * 1024  # getMappedMemorySize
    for offset, start in ((0, 0), (100, 0), (1024, 1024), (1124, 1024), (2048, 2048), (2148, 2048)):
        assert mfq.find_mapped_file_by_offset(offset).file_from_offset == start
    assert mfq.find_mapped_file_by_offset(1024 * 4) is None
    assert mfq.find_mapped_file_by_offset(1024 * 4 + 100) is None


def test_find_mapped_file_by_offset_start_offset_is_non_zero():
    """Mirrors MappedFileQueueTest.testFindMappedFileByOffset_StartOffsetIsNonZero (rocketmq-all-4.9.8, 5.3.3),
    without the returnFirstOnNotFound overload, which nothing here uses."""
    mfq = MappedFileQueue(MemoryDisk(), "b", 1024)
    mf = mfq.get_last_mapped_file_for_append(1024)
    assert mf.file_from_offset == 1024
    assert mfq.find_mapped_file_by_offset(1025) is mf
    assert mfq.find_mapped_file_by_offset(0) is None
    assert mfq.find_mapped_file_by_offset(123) is None


def test_append_message():
    """Mirrors MappedFileQueueTest.testAppendMessage (rocketmq-all-4.9.8, rocketmq-all-5.3.3): each flush(0)
    forces one whole file and reports that the flushed position moved."""
    mfq = _filled_queue("c", b"0123456789abcdef")
    for n in range(1, 7):
        assert mfq.flush(0) is False
        assert mfq.flushed_where == 1024 * n


def test_find_mapped_file_by_iteration():
    """Mirrors MappedFileQueueTest.testFindMappedFile_ByIteration (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    mfq = MappedFileQueue(MemoryDisk(), "g", 1024)
    for i in range(3):
        mfq.get_last_mapped_file_for_append(1024 * i).wrote_position = 1024
    assert mfq.find_mapped_file_by_offset(1028).file_from_offset == 1024
    mfq.mapped_files[1], mfq.mapped_files[2] = mfq.mapped_files[2], mfq.mapped_files[1]
    assert mfq.find_mapped_file_by_offset(1028).file_from_offset == 1024


# --- StoreCheckpointTest -----------------------------------------------------------------------------------
def test_store_checkpoint_write_and_read():
    """Mirrors StoreCheckpointTest.testWriteAndRead (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    disk = MemoryDisk()
    checkpoint = StoreCheckpoint(disk, "checkpoint_test/0000")
    checkpoint.physic_msg_timestamp = 0xAABB
    checkpoint.logics_msg_timestamp = 0xCCDD
    checkpoint.flush()
    assert 0xAABB - checkpoint.get_min_timestamp() == 3000
    checkpoint.close()
    again = StoreCheckpoint(disk, "checkpoint_test/0000")
    assert (again.physic_msg_timestamp, again.logics_msg_timestamp) == (0xAABB, 0xCCDD)


# --- ConsumeQueueTest (4.9.8 store/ConsumeQueueTest) -------------------------------------------------------
def test_put_message_position_info_build_cq_repeatedly():
    """Mirrors ConsumeQueueTest.testPutMessagePositionInfo_buildCQRepeatedly (rocketmq-all-4.9.8): dispatching
    the first record again is accepted (true) and changes nothing."""
    store = build_store()
    for i in range(10):
        store.put_message(build_message(topic="StoreTest", queue_id=0, KEYS=f"k{i}"))
    store.do_reput()
    cq = store.get_consume_queue("StoreTest", 0)
    data = store.commit_log.get_data(0)
    req = store.commit_log.check_message_and_return_size(data, 0, check_crc=False)
    assert req.success and req.consume_queue_offset == 0
    before = [cq.get_unit(i) for i in range(10)]
    assert cq.put_message_position_info(req.commit_log_offset, req.msg_size, req.tags_code,
                                        req.consume_queue_offset) is True
    assert [cq.get_unit(i) for i in range(10)] == before and cq.get_max_offset_in_queue() == 10
