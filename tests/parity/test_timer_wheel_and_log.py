"""Parity with RocketMQ's TimerWheelTest and TimerLogTest (store/src/test/.../timer, rocketmq-all-5.3.3).

4.9.8 has no timer wheel, so these mirror 5.3.3 only. Each test names the Java method it mirrors.
"""

from __future__ import annotations

import struct

import pytest

from store.disk import MemoryDisk
from store.mapped_file import StoreLoadError
from store.timer.timer_log import UNIT_SIZE, TimerLog
from store.timer.timer_wheel import IGNORE, TimerWheel

SLOTS_TOTAL = 30  # the Java test's slotsTotal and precisionMs
PRECISION_MS = 500
DEFAULT_DELAY_MS = 1_700_000_000_000 // PRECISION_MS * PRECISION_MS  # "now" floored to the precision
JAVA_LONG_MAX = (1 << 63) - 1


@pytest.fixture
def wheel_disk():
    return MemoryDisk()


@pytest.fixture
def wheel(wheel_disk):
    return TimerWheel(wheel_disk, SLOTS_TOTAL, PRECISION_MS)


def test_put_get(wheel):
    """Mirrors TimerWheelTest.testPutGet (rocketmq-all-5.3.3)."""
    delayed = DEFAULT_DELAY_MS + PRECISION_MS
    first = wheel.get_slot(delayed)
    assert (first.time_ms, first.first_pos, first.last_pos) == (-1, -1, -1)
    wheel.put_slot(delayed, 1, 2, 3, 4)
    second = wheel.get_slot(delayed)
    assert (second.time_ms, second.first_pos, second.last_pos, second.num, second.magic) == (delayed, 1, 2, 3, 4)


def test_get_num(wheel):
    """Mirrors TimerWheelTest.testGetNum (rocketmq-all-5.3.3)."""
    delayed = DEFAULT_DELAY_MS + PRECISION_MS
    wheel.put_slot(delayed, 1, 2, 3, 4)
    assert wheel.get_num(delayed) == 3
    assert wheel.get_all_num(delayed) == 3
    wheel.put_slot(delayed + 5 * PRECISION_MS, 5, 6, 7, 8)
    assert wheel.get_num(delayed + 5 * PRECISION_MS) == 7
    assert wheel.get_all_num(delayed) == 10


def test_check_phy_pos(wheel):
    """Mirrors TimerWheelTest.testCheckPhyPos (rocketmq-all-5.3.3)."""
    delayed = DEFAULT_DELAY_MS + PRECISION_MS
    wheel.put_slot(delayed, 1, 100, 1, 0)
    wheel.put_slot(delayed + 5 * PRECISION_MS, 2, 200, 2, 0)
    wheel.put_slot(delayed + 10 * PRECISION_MS, 3, 300, 3, 0)
    assert [wheel.check_phy_pos(delayed, m) for m in (50, 100, 200, 300, 400)] == [
        1, 2, 3, JAVA_LONG_MAX, JAVA_LONG_MAX]
    later = delayed + 5 * PRECISION_MS
    assert [wheel.check_phy_pos(later, m) for m in (50, 100, 200, 300, 400)] == [
        2, 2, 3, JAVA_LONG_MAX, JAVA_LONG_MAX]


def test_put_revise(wheel):
    """Mirrors TimerWheelTest.testPutRevise (rocketmq-all-5.3.3)."""
    delayed = DEFAULT_DELAY_MS + 3 * PRECISION_MS
    wheel.put_slot(delayed, 1, 2)
    wheel.revise_slot(delayed + 5 * PRECISION_MS, 3, 4, False)  # another slot, not forced: nothing
    second = wheel.get_slot(delayed)
    assert (second.time_ms, second.first_pos, second.last_pos) == (delayed, 1, 2)
    wheel.revise_slot(delayed, IGNORE, 4, False)
    assert (wheel.get_slot(delayed).first_pos, wheel.get_slot(delayed).last_pos) == (1, 4)
    wheel.revise_slot(delayed, 3, IGNORE, False)
    assert (wheel.get_slot(delayed).first_pos, wheel.get_slot(delayed).last_pos) == (3, 4)
    next_lap = delayed + 2 * SLOTS_TOTAL * PRECISION_MS  # the same slot index, one lap later: forced
    wheel.revise_slot(next_lap, IGNORE, 5, True)
    five = wheel.get_raw_slot(delayed)
    assert (five.time_ms, five.first_pos, five.last_pos) == (next_lap, 5, 5)


def test_recovery_data(wheel_disk, wheel):
    """Mirrors TimerWheelTest.testRecoveryData (rocketmq-all-5.3.3)."""
    delayed = DEFAULT_DELAY_MS + 5 * PRECISION_MS
    wheel.put_slot(delayed, 1, 2, 3, 4)
    wheel.flush()
    again = TimerWheel(wheel_disk, SLOTS_TOTAL, PRECISION_MS)
    slot = again.get_slot(delayed)
    assert (slot.time_ms, slot.first_pos, slot.last_pos, slot.num, slot.magic) == (delayed, 1, 2, 3, 4)


def test_recovery_fixed_ttl(wheel_disk, wheel):
    """Mirrors TimerWheelTest.testRecoveryFixedTTL (rocketmq-all-5.3.3): another slot count cannot open the file."""
    wheel.flush()
    with pytest.raises(StoreLoadError):
        TimerWheel(wheel_disk, SLOTS_TOTAL + 1, PRECISION_MS)


def _unit() -> bytes:
    """The Java test's 52-byte unit: size, prevPos=MAX, magic 0, time MAX, delay 0, offsetPy 1000, sizePy 10,
    hash 123, then zeros (it puts an int where the reserved long goes; the buffer is zero-filled)."""
    return struct.pack(">iqiqiqiii", UNIT_SIZE, JAVA_LONG_MAX, 0, JAVA_LONG_MAX, 0, 1000, 10, 123, 0).ljust(
        UNIT_SIZE, b"\0")


def test_append_roll_select_delete():
    """Mirrors TimerLogTest.testAppendRollSelectDelete (rocketmq-all-5.3.3): appends, rolls with a blank, reads.

    The final ``deleteExpiredFileByOffsetForTimerLog`` is not mirrored: expired-file cleanup is out of scope
    (as DefaultMessageStoreCleanFilesTest is)."""
    log = TimerLog(MemoryDisk(), 1024)
    log.load()
    unit = _unit()
    assert len(unit) == UNIT_SIZE
    ret = -1
    for i in range(10):
        ret = log.append(unit)
        assert ret == i * UNIT_SIZE
    for _ in range(100):
        log.append(unit)
    assert len(log.mfq.mapped_files) == 6  # 19 units per 1024-byte file (a unit plus a blank must fit)
    read = log.read(ret, UNIT_SIZE)
    assert read is not None and struct.unpack_from(">i", read)[0] == UNIT_SIZE
    start, _mf, _limit = log.whole_buffer(ret)
    assert start == 0
    assert log.get_offset_for_last_unit() == 1024 - (1024 - 16) % UNIT_SIZE - 16 - UNIT_SIZE


def test_timer_log_recovery():
    """Mirrors TimerLogTest.testRecovery (rocketmq-all-5.3.3)."""
    disk = MemoryDisk()
    first = TimerLog(disk, 1024)
    first.load()
    first.append(bytes(512))
    first.append(bytes(510))  # 510 + a 16-byte blank no longer fits: blank, then the next file
    data = b"Hello Recovery"
    first.append(data)
    first.close()
    second = TimerLog(disk, 1024)
    second.load()
    assert len(second.mfq.mapped_files) == 2
    second.mfq.truncate_dirty_files(1204 + 1000)
    assert second.read(1024 + 510, len(data)) == data
