"""Byte layouts of the timer wheel's files (ROCKETMQ.md 7.3), as literal vectors."""

from __future__ import annotations

import random

import pytest

from store.clock import ManualClock
from store.disk import MemoryDisk
from store.mapped_file import StoreLoadError
from store.message import java_string_hash
from store.timer.timer_checkpoint import TIMER_CHECKPOINT_FILE, TimerCheckpoint
from store.timer.timer_log import BLANK_MAGIC_CODE, UNIT_SIZE, TimerLog, decode_unit, encode_unit
from store.timer.timer_wheel import EMPTY_SLOT, TIMER_WHEEL_FILE, Slot, TimerWheel, encode_slot

T0 = 1_700_000_000_000


def h(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


def test_a_slot_is_32_bytes_time_in_precision_units_first_last_num_magic():
    assert encode_slot(1_700_000_005_000, 1000, 52, 104, 2, 0) == h(
        "000000006553f105",  # 1700000005 = time / precision
        "0000000000000034",  # firstPos 52
        "0000000000000068",  # lastPos 104
        "00000002",  # num
        "00000000",  # magic
    )
    # With 100 ms precision the same time is stored in tenths of a second.
    assert encode_slot(1_700_000_005_100, 100, -1, -1)[:8] == (17_000_000_051).to_bytes(8, "big")


def test_wheel_file_size_slot_index_and_stale_slots():
    disk = MemoryDisk()
    wheel = TimerWheel(disk, slots_total=10, precision_ms=1000)
    assert disk.file_size(TIMER_WHEEL_FILE) == 10 * 2 * 32  # slotsTotal x 2 slots of 32 bytes
    t = 1_700_000_005_000
    assert wheel.get_slot_index(t) == 1_700_000_005 % 20 == 5
    assert wheel.get_slot_index(t + 999) == 5  # the whole precision unit shares the slot
    wheel.put_slot(t, 52, 104, 2, 0)
    assert wheel.get_slot(t) == Slot(t, 52, 104, 2, 0)
    assert wheel.get_slot(t + 20_000) == EMPTY_SLOT  # same index, another lap: a stale slot is empty
    assert wheel.get_raw_slot(t + 20_000) == Slot(t, 52, 104, 2, 0)
    # The wheel is an in-memory copy: the file changes only at flush, then the bytes are durable.
    assert disk.read_file(TIMER_WHEEL_FILE) == bytes(640)
    wheel.flush()
    raw = disk.read_file(TIMER_WHEEL_FILE)
    assert raw[5 * 32 : 6 * 32] == encode_slot(t, 1000, 52, 104, 2, 0)
    assert raw[: 5 * 32] == bytes(160) and raw[6 * 32 :] == bytes(640 - 192)  # nothing else written
    disk.power_failure(random.Random(1))
    assert TimerWheel(disk, 10, 1000).get_slot(t) == Slot(t, 52, 104, 2, 0)


def test_revise_slot_relinks_or_recreates_a_slot_of_another_lap():
    wheel = TimerWheel(MemoryDisk(), slots_total=10, precision_ms=1000)
    t = T0 + 3000
    wheel.put_slot(t, 0, 52, 2, 0)
    wheel.revise_slot(t, -2, 104, force=True)  # IGNORE the first position, move the last
    assert wheel.get_slot(t) == Slot(t, 0, 104, 2, 0)
    wheel.revise_slot(t + 20_000, -2, 156, force=True)  # another lap: re-created with first = last = pos
    assert wheel.get_slot(t + 20_000) == Slot(t + 20_000, 156, 156, 2, 0)  # num left as it was (3-arg putSlot)
    wheel.revise_slot(t, -2, 208, force=False)  # not forced: a slot of another lap is left alone
    assert wheel.get_slot(t) == EMPTY_SLOT


def test_check_phy_pos_finds_the_smallest_first_of_slots_pointing_past_the_log_end():
    wheel = TimerWheel(MemoryDisk(), slots_total=10, precision_ms=1000)
    wheel.put_slot(T0 + 1000, 0, 52, 1, 0)
    wheel.put_slot(T0 + 2000, 104, 520, 1, 0)
    wheel.put_slot(T0 + 3000, 156, 572, 1, 0)
    assert wheel.check_phy_pos(T0, 500) == 104
    assert wheel.check_phy_pos(T0 + 3000, 500) == 156  # slots before the start time are not looked at
    assert wheel.check_phy_pos(T0 + 2500, 500) == 104  # the start time's own slot counts (2500 -> 2000)
    assert wheel.check_phy_pos(T0, 1000) == (1 << 63) - 1


def test_a_wheel_file_of_another_length_refuses_to_load():
    disk = MemoryDisk()
    TimerWheel(disk, slots_total=10, precision_ms=1000)
    with pytest.raises(StoreLoadError, match="timer wheel length 640 bytes, expected 1280"):
        TimerWheel(disk, slots_total=20, precision_ms=1000)


def test_a_unit_is_52_bytes():
    unit = encode_unit(-1, 3, T0, T0 + 3000, 4096, 200, java_string_hash("TopicTest"))
    assert unit == h(
        "00000034",  # size 52
        "ffffffffffffffff",  # prevPos -1: first of its slot
        "00000003",  # magic DEFAULT | ROLL
        "0000018bcfe56800",  # currWriteTimeMs
        "00000bb8",  # delay 3000 ms: delayedTime = write time + delay
        "0000000000001000",  # offsetPy 4096
        "000000c8",  # sizePy 200
        "8e987641",  # "TopicTest".hashCode() = -1902610879
        "0000000000000000",  # reserved
    )
    assert len(unit) == UNIT_SIZE
    decoded = decode_unit(unit)
    assert (decoded.prev_pos, decoded.delayed_time_ms, decoded.offset_py, decoded.real_topic_hash) == (
        -1, T0 + 3000, 4096, -1902610879)


def test_timer_log_files_end_with_a_16_byte_blank_and_have_20_digit_names():
    disk = MemoryDisk()
    log = TimerLog(disk, file_size=52 * 3 + 16)
    positions = [log.append(encode_unit(-1, 1, T0, T0 + 1000, n, 10, 0)) for n in range(4)]
    assert positions == [0, 52, 104, 172]  # 3 units fit with room for a blank; the 4th starts the next file
    assert disk.listdir("timerlog") == ["00000000000000000000", "00000000000000000172"]
    first = disk.read_file("timerlog/00000000000000000000")
    assert first[156:172] == h("00000010", "0000000000000000", "cbd43194")  # remaining 16, 0, blank magic
    assert BLANK_MAGIC_CODE & 0xFFFFFFFF == 0xBBCCDDEE ^ (1880681586 + 8) == 0xCBD43194
    assert log.get_offset_for_last_unit() == 104


def test_checkpoint_is_a_4096_byte_page_of_longs():
    disk, clock = MemoryDisk(), ManualClock(T0)
    cp = TimerCheckpoint(disk, clock)
    assert disk.file_size(TIMER_CHECKPOINT_FILE) == 4096
    assert disk.read_file(TIMER_CHECKPOINT_FILE) == bytes(4096)  # written only by flush()
    cp.last_read_time_ms = T0 + 7000
    cp.last_timer_log_flush_pos = 520
    cp.last_timer_queue_offset = 11
    cp.master_timer_queue_offset = 12
    cp.data_version.counter = 3
    cp.flush()
    assert disk.read_file(TIMER_CHECKPOINT_FILE)[:56] == h(
        "0000018bcfe58358",  # lastReadTimeMs
        "0000000000000208",  # lastTimerLogFlushPos 520
        "000000000000000b",  # lastTimerQueueOffset 11
        "000000000000000c",  # masterTimerQueueOffset 12
        "0000000000000000",  # dataVersion.stateVersion
        "0000018bcfe56800",  # dataVersion.timestamp (construction time)
        "0000000000000003",  # dataVersion.counter
    )
    again = TimerCheckpoint(disk, ManualClock(T0 + 99))
    assert (again.last_read_time_ms, again.last_timer_log_flush_pos, again.last_timer_queue_offset,
            again.master_timer_queue_offset, again.data_version.timestamp_ms, again.data_version.counter) == (
        T0 + 7000, 520, 11, 12, T0, 3)
