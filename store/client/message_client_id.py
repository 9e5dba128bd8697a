"""MessageClientIDSetter: the UNIQ_KEY a producer gives every message (the msg id users see).

Layout as in RocketMQ, 16 bytes as 32 uppercase hex digits: 4 bytes for the host (here the Java
hash of the client id), 2 for the pid and 4 for the class loader (here drawn from the producer's
``random.Random``), then 4 bytes of milliseconds since the start of the month and a 2-byte counter.
No uuid, no wall clock: the same seed and clock give the same ids.
"""

from __future__ import annotations

import random
import struct
from datetime import UTC, datetime

from ..message import PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, MessageExt, java_string_hash

_TAIL = struct.Struct(">ih")


def _month_bounds_ms(now_ms: int) -> tuple[int, int]:
    """[start of this month, start of next month) in UTC epoch ms."""
    dt = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    start = datetime(dt.year, dt.month, 1, tzinfo=UTC)
    nxt = datetime(dt.year + (dt.month == 12), dt.month % 12 + 1, 1, tzinfo=UTC)
    return int(start.timestamp()) * 1000, int(nxt.timestamp()) * 1000


def _wrap_signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class MessageClientIDSetter:
    def __init__(self, client_id: str, rng: random.Random) -> None:
        fix = struct.pack(">iHI", java_string_hash(client_id), rng.randrange(1 << 16), rng.randrange(1 << 32))
        self.fix_string = fix.hex().upper()
        self.counter = 0
        self.start_time_ms = 0
        self.next_start_time_ms = 0

    def create_uniq_id(self, now_ms: int) -> str:
        if now_ms >= self.next_start_time_ms or now_ms < self.start_time_ms:
            self.start_time_ms, self.next_start_time_ms = _month_bounds_ms(now_ms)
        tail = _TAIL.pack(_wrap_signed(now_ms - self.start_time_ms, 32), _wrap_signed(self.counter, 16))
        self.counter += 1
        return self.fix_string + tail.hex().upper()

    def set_uniq_id(self, msg: MessageExt, now_ms: int) -> None:
        """Only a message without one gets an id: a retry copy keeps its original's."""
        if msg.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) is None:
            msg.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = self.create_uniq_id(now_ms)
