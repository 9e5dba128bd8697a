"""Timer recovery (ROCKETMQ.md 7.6): relink the wheel from the timer log, then find where to resume.

Functions of the ``TimerMessageStore`` they recover (its ``recover`` and friends call them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..topic_config import TIMER_TOPIC
from .requests import is_magic_ok
from .timer_log import (
    BLANK_MAGIC_CODE,
    HEAD_STRUCT,
    SIZE_PY_OFFSET,
    SIZE_PY_STRUCT,
    TIME_STRUCT,
    UNIT_PRE_SIZE_FOR_MSG,
    UNIT_SIZE,
)
from .timer_wheel import IGNORE, TIMER_BLANK_SLOTS

if TYPE_CHECKING:
    from .timer_message_store import TimerMessageStore


_WINDOW = UNIT_SIZE * 20_000  # bytes of timer log read at once by recovery (whole units)


def _size_py(data: bytes, position: int) -> int:
    """The unit's message size (a real unit's is > 0; zeros past a torn sector make it 0)."""
    at = position + SIZE_PY_OFFSET
    return SIZE_PY_STRUCT.unpack_from(data, at)[0] if at + SIZE_PY_STRUCT.size <= len(data) else 0


def recover(ts: TimerMessageStore) -> None:
    """Recovery (7.6): relink the wheel from the timer log, then the queue offset and read time to resume from."""
    cp = ts.timer_checkpoint
    mfq = ts.timer_log.mfq
    last_flush_pos = cp.last_timer_log_flush_pos
    last_file = mfq.get_last_mapped_file()
    if last_file is not None:
        last_flush_pos -= last_file.file_size
    last_flush_pos = max(last_flush_pos, 0)
    process_offset = recover_and_revise(ts, last_flush_pos, True)
    mfq.flushed_where = process_offset
    queue_offset = revise_queue_offset(ts, process_offset)
    ts.curr_queue_offset = cp.last_timer_queue_offset if queue_offset == -1 else queue_offset + 1
    ts.curr_queue_offset = min(ts.curr_queue_offset, cp.master_timer_queue_offset)
    cq = ts.store.get_consume_queue(TIMER_TOPIC, 0)
    if cq is not None and not ts.m_no_queue_offset_clamp:  # 5.3.2+ (#7480)
        if not cq.get_min_offset_in_queue() <= ts.curr_queue_offset <= cq.get_max_offset_in_queue():
            ts.probes.probe("timer.queue_offset_clamped")
        if ts.curr_queue_offset < cq.get_min_offset_in_queue():
            ts.log.warn(f"Timer currQueueOffset:{ts.curr_queue_offset} is smaller than minOffsetInQueue:"
                     f"{cq.get_min_offset_in_queue()}")
            ts.curr_queue_offset = cq.get_min_offset_in_queue()
        elif ts.curr_queue_offset > cq.get_max_offset_in_queue():
            ts.log.warn(f"Timer currQueueOffset:{ts.curr_queue_offset} is larger than maxOffsetInQueue:"
                     f"{cq.get_max_offset_in_queue()}")
            ts.curr_queue_offset = cq.get_max_offset_in_queue()
    p = ts.precision_ms
    ts.curr_read_time_ms = cp.last_read_time_ms
    horizon_ms = ts.format_time_ms(ts.clock.now_ms()) - ts.slots_total * p + TIMER_BLANK_SLOTS * p
    if ts.curr_read_time_ms < horizon_ms:
        ts.curr_read_time_ms = horizon_ms  # slots older than ~7 days are never dequeued
    min_first = ts.timer_wheel.check_phy_pos(ts.curr_read_time_ms, process_offset)
    if min_first < process_offset:
        ts.log.warn(f"Timer recheck because of minFirst:{min_first} processOffset:{process_offset}")
        recover_and_revise(ts, min_first, False)
    ts.log(f"Timer recover ok currReadTimerMs:{ts.curr_read_time_ms} currQueueOffset:"
             f"{ts.curr_queue_offset} checkQueueOffset:{cp.last_timer_queue_offset} "
             f"processOffset:{process_offset}")
    ts.commit_read_time_ms = ts.curr_read_time_ms
    ts.commit_queue_offset = ts.curr_queue_offset
    ts.prepare_timer_check_point()

def recover_and_revise(ts: TimerMessageStore, begin_offset: int, check_timer_log: bool) -> int:
    """Relink wheel slots from the timer-log units found from ``begin_offset``'s file on; the end found.

    Its own loop over timer_log's structs, not ``timer_log.iter_units``: Java's recovery reads differently from
    a decoder (without ``check_timer_log`` it steps over an invalid unit by 52 bytes, a zero unit is not the
    end, and a short read stops it as a BufferUnderflowException).

    With ``check_timer_log`` whole files are scanned, the first invalid unit ends the log and the log is
    truncated there; without it only up to each file's read position.
    """
    files = ts.timer_log.mfq.mapped_files
    if not files:
        return 0
    index = len(files) - 1
    while index >= 0 and begin_offset < files[index].file_from_offset:
        index -= 1
    index = max(index, 0)
    check_offset = files[index].file_from_offset
    while index < len(files):
        mf = files[index]
        position, stop = _relink_file(ts, mf, mf.file_size if check_timer_log else mf.wrote_position, check_timer_log)
        check_offset = mf.file_from_offset + position
        if stop:
            break
        index += 1
    if check_timer_log:
        ts.timer_log.mfq.truncate_dirty_files(check_offset)
    return check_offset

def _relink_file(ts: TimerMessageStore, mf, limit: int, check_timer_log: bool) -> tuple[int, bool]:
    """``recover_and_revise`` over one file's first ``limit`` bytes: (where it ended, whether the log ends there).

    Read a window at a time (a window is whole units, so no unit is split; the end of the file comes only in the
    last one): a 100 MiB timer-log file of zeros behind a few units is not copied whole to find its first one."""
    wheel = ts.timer_wheel
    base = 0
    while True:
        data = mf.handle.read(base, min(_WINDOW, limit - base)) if base < limit else b""
        position = 0
        while position < len(data):
            if position + HEAD_STRUCT.size > len(data):  # a short read is Java's BufferUnderflowException
                return base + position, True
            size, _prev, magic = HEAD_STRUCT.unpack_from(data, position)
            if magic == BLANK_MAGIC_CODE:
                return base + position, False
            if check_timer_log and (not is_magic_ok(magic) or size != UNIT_SIZE):
                return base + position, True
            if position + HEAD_STRUCT.size + TIME_STRUCT.size > len(data):
                return base + position, True
            write_time, delay = TIME_STRUCT.unpack_from(data, position + HEAD_STRUCT.size)
            if size == UNIT_SIZE and is_magic_ok(magic):
                wheel.revise_slot(write_time + delay, IGNORE, mf.file_from_offset + base + position, True)
                if ts.torn_unit_listeners and _size_py(data, position) <= 0:
                    for listener in ts.torn_unit_listeners:
                        listener(ts.format_time_ms(write_time + delay), mf.file_from_offset + base + position)
            position += UNIT_SIZE
        if len(data) < _WINDOW:  # the file's (or the limit's) end
            return base + position, False
        base += _WINDOW


def revise_queue_offset(ts: TimerMessageStore, process_offset: int) -> int:
    """The timer topic's queue offset of the message behind the last timer-log unit (-1: unknown)."""
    raw = ts.timer_log.read(process_offset - (UNIT_SIZE - UNIT_PRE_SIZE_FOR_MSG), 12)
    if raw is None or len(raw) < 12:
        return -1
    offset_py = int.from_bytes(raw[0:8], "big", signed=True)
    size_py = int.from_bytes(raw[8:12], "big", signed=True)
    msg = ts.get_message_by_commit_offset(offset_py, size_py)
    if msg is None:
        return -1
    msg_queue_offset = msg.queue_offset
    cq = ts.store.get_consume_queue(TIMER_TOPIC, msg.queue_id)
    if cq is None:
        return msg_queue_offset
    cq_offset = tmp = msg_queue_offset
    for _ in range(20000):
        if tmp < 0:
            ts.log.warn(f"reviseQueueOffset check cq offset fail, msg in cq is not found.{offset_py}, {size_py}")
            break
        unit = cq.get_unit(tmp)
        if unit is not None and unit[0] == offset_py and unit[1] == size_py:
            cq_offset = tmp
            break
        tmp -= 1
    return cq_offset
