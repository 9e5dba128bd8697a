"""TimerLog: the ``timerlog/`` files of 52-byte units, one per enqueued timer request (ROCKETMQ.md 7.3).

Units of one slot form a chain through ``prevPos`` (newest first); the wheel slot keeps both ends. A file
ends with a 16-byte blank when the next unit plus a blank would not fit, like the commit log's blank.

Unit (big-endian): int size=52 | long prevPos | int magic | long currWriteTimeMs | int delay | long offsetPy |
int sizePy | int hashCode(REAL_TOPIC) | long reserved. ``delayedTime = currWriteTimeMs + delay``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..disk import Disk
from ..faults import NO_FAULTS, SITE_TIMER_LOG_APPEND, FaultInjector, check_crash
from ..mapped_file import MappedFile, MappedFileQueue
from ..message import Blank, Corrupt

TIMER_LOG_DIR = "timerlog"
UNIT_SIZE = 52
UNIT_PRE_SIZE_FOR_MSG = 28  # where offsetPy starts
UNIT_PRE_SIZE_FOR_METRIC = 40  # where the real topic's hash starts
MIN_BLANK_LEN = 4 + 8 + 4
BLANK_MAGIC_CODE = ((0xBBCCDDEE ^ (1880681586 + 8)) & 0xFFFFFFFF) - (1 << 32)  # 0xCBD43194, as the commit log's
UNIT_STRUCT = struct.Struct(">iqiqiqiiq")
BLANK_STRUCT = struct.Struct(">iqi")
HEAD_STRUCT = struct.Struct(">iqi")  # size, prevPos, magic
TIME_STRUCT = struct.Struct(">qi")  # at HEAD_STRUCT.size: the message's write time (ms) and its delay (ms)
SIZE_PY_STRUCT = struct.Struct(">i")  # at SIZE_PY_OFFSET: the message's size in the commit log
SIZE_PY_OFFSET = UNIT_PRE_SIZE_FOR_MSG + 8


def to_int32(value: int) -> int:
    """Java's (int) narrowing of a long."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@dataclass(frozen=True, slots=True)
class TimerLogUnit:
    size: int
    prev_pos: int
    magic: int
    curr_write_time_ms: int
    delay_ms: int
    offset_py: int
    size_py: int
    real_topic_hash: int
    reserved: int = 0

    @property
    def delayed_time_ms(self) -> int:
        return self.curr_write_time_ms + self.delay_ms


def encode_unit(prev_pos: int, magic: int, curr_write_time_ms: int, delayed_time_ms: int, offset_py: int,
                size_py: int, real_topic_hash: int) -> bytes:
    return UNIT_STRUCT.pack(UNIT_SIZE, prev_pos, magic, curr_write_time_ms,
                            to_int32(delayed_time_ms - curr_write_time_ms), offset_py, size_py, real_topic_hash, 0)


def decode_unit(buf, pos: int = 0) -> TimerLogUnit:
    return TimerLogUnit(*UNIT_STRUCT.unpack_from(buf, pos))


def encode_blank(remaining: int) -> bytes:
    return BLANK_STRUCT.pack(remaining, 0, BLANK_MAGIC_CODE)


MAGIC_FLAGS = ((1, "DEFAULT"), (2, "ROLL"), (4, "DELETE"))  # TimerMessageStore.MAGIC_*: the unit's magic bits


@dataclass(frozen=True, slots=True)
class TimerLogRecord:
    """A valid unit at ``pos`` (base offset + position in the file)."""

    pos: int
    unit: TimerLogUnit


def iter_units(buf, base_offset: int = 0) -> Iterator[TimerLogRecord | Blank | Corrupt]:
    """The units of one timer-log file's bytes, in order: pure (``inspect`` reads with it).

    Ends after a ``Blank`` (the file's filler), silently at a never-written (zero) unit or at the end of
    ``buf``, or after a ``Corrupt``: a size other than 52, a magic other than the flag bits, or a unit cut by
    the end of ``buf`` (recovery stops the log there)."""
    pos, end = 0, len(buf)
    while pos + HEAD_STRUCT.size <= end:
        head_size, _prev_pos, magic = HEAD_STRUCT.unpack_from(buf, pos)
        if magic == BLANK_MAGIC_CODE:
            yield Blank(base_offset + pos)
            return
        if not any(buf[pos : min(pos + UNIT_SIZE, end)]):
            return  # never written: the file's data ends here
        if head_size != UNIT_SIZE or (magic | 0xF) != 0xF or pos + UNIT_SIZE > end:
            yield Corrupt(base_offset + pos, f"invalid unit: size {head_size}, magic {magic} (recovery stops here)")
            return
        yield TimerLogRecord(base_offset + pos, decode_unit(buf, pos))
        pos += UNIT_SIZE


class TimerLog:
    def __init__(self, disk: Disk, file_size: int, path: str = TIMER_LOG_DIR,
                 faults: FaultInjector = NO_FAULTS) -> None:
        self.file_size = file_size
        self.mfq = MappedFileQueue(disk, path, file_size)
        self.faults = faults

    def load(self) -> None:
        """Every file counts as full until recovery truncates (StoreLoadError on a wrong file size)."""
        self.mfq.load()

    def append(self, data: bytes) -> int:
        """Append one unit; its position, or -1 when the append failed."""
        if check_crash(self.faults, SITE_TIMER_LOG_APPEND):
            return -1
        mfq = self.mfq
        mf = mfq.get_last_mapped_file_for_append(0)
        if len(data) + MIN_BLANK_LEN > self.file_size - mf.wrote_position:
            mf.append(encode_blank(self.file_size - mf.wrote_position))
            mf.wrote_position = self.file_size
            mf = mfq.get_last_mapped_file_for_append(0)
        pos = mf.file_from_offset + mf.wrote_position
        mf.append(data)
        return pos

    def get_offset_for_last_unit(self) -> int:
        return self.file_size - (self.file_size - MIN_BLANK_LEN) % UNIT_SIZE - MIN_BLANK_LEN - UNIT_SIZE

    def whole_buffer(self, offset: int) -> tuple[int, MappedFile, int] | None:
        """getWholeBuffer: (start offset, file, read limit) of the file holding ``offset`` (no copy)."""
        mf = self.mfq.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        return mf.file_from_offset, mf, mf.wrote_position

    def read(self, offset: int, size: int) -> bytes | None:
        """selectMappedBuffer(pos) of the file holding ``offset``, cut to ``size`` (None past the read position)."""
        return self.mfq.read(offset, size)

    def flush(self, least_pages: int = 0) -> bool:
        return self.mfq.flush(least_pages)

    def close(self) -> None:
        self.mfq.close()
