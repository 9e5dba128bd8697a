"""TimerCheckpoint: ``config/timercheck``, a 4096-byte page of where the timer wheel may resume (7.3).

@0 lastReadTimeMs, @8 lastTimerLogFlushPos, @16 lastTimerQueueOffset, @24 masterTimerQueueOffset,
@32 dataVersion.stateVersion, @40 dataVersion.timestamp, @48 dataVersion.counter (all big-endian longs).
Written only by ``flush()``, which also forces it.
"""

from __future__ import annotations

import struct

from ..clock import Clock
from ..data_version import DataVersion
from ..disk import Disk

TIMER_CHECKPOINT_FILE = "config/timercheck"
TIMER_CHECKPOINT_FILE_SIZE = 4096
CHECKPOINT_STRUCT = struct.Struct(">qqqqqqq")
FIELDS = ("last_read_time_ms", "last_timer_log_flush_pos", "last_timer_queue_offset", "master_timer_queue_offset")
DATA_VERSION_FIELDS = ("state_version", "timestamp", "counter")


def decode_fields(raw: bytes) -> dict:
    """The fields a (possibly short) ``timercheck`` holds: pure (``inspect`` reads with it). Only whole longs
    count; ``data_version`` only when all three of its longs are there."""
    longs = [int.from_bytes(raw[i : i + 8], "big", signed=True) for i in range(0, min(len(raw), 56) // 8 * 8, 8)]
    doc: dict = {name: longs[i] for i, name in enumerate(FIELDS) if i < len(longs)}
    if len(longs) == 7:
        doc["data_version"] = dict(zip(DATA_VERSION_FIELDS, longs[4:], strict=True))
    return doc


class TimerCheckpoint:
    def __init__(self, disk: Disk, clock: Clock, path: str = TIMER_CHECKPOINT_FILE) -> None:
        self.path = path
        self.last_read_time_ms = 0
        self.last_timer_log_flush_pos = 0
        self.last_timer_queue_offset = 0
        self.master_timer_queue_offset = 0
        self.data_version = DataVersion.now(clock)  # `new DataVersion()`: stamped at construction
        existed = disk.exists(path)
        self.handle = disk.open(path, create_size=None if existed else TIMER_CHECKPOINT_FILE_SIZE)
        if existed:
            raw = self.handle.read(0, CHECKPOINT_STRUCT.size).ljust(CHECKPOINT_STRUCT.size, b"\0")
            (self.last_read_time_ms, self.last_timer_log_flush_pos, self.last_timer_queue_offset,
             self.master_timer_queue_offset, state_version, timestamp, counter) = CHECKPOINT_STRUCT.unpack(raw)
            self.data_version = DataVersion(timestamp_ms=timestamp, counter=counter, state_version=state_version)

    def encode(self) -> bytes:
        dv = self.data_version
        return CHECKPOINT_STRUCT.pack(self.last_read_time_ms, self.last_timer_log_flush_pos,
                                      self.last_timer_queue_offset, self.master_timer_queue_offset,
                                      dv.state_version, dv.timestamp_ms, dv.counter)

    def flush(self) -> None:
        self.handle.write(0, self.encode())
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()
