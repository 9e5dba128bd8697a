"""ProcessQueue: the messages of one queue that were pulled and are not yet acknowledged.

Its one job for correctness is ``remove_message``'s answer (ROCKETMQ.md 5.3): the offset that may
be committed is the smallest offset still being processed (or waiting for a local retry), so a
crash never skips an un-acked message; a slow message holds the whole queue back instead.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable

from ..clock import Clock
from ..log import as_log
from ..message import PROPERTY_CONSUME_START_TIMESTAMP, MessageExt
from .errors import REQUEST_ERRORS

PULL_MAX_IDLE_TIME_MS = 120_000  # rocketmq.client.pull.pullMaxIdleTime: no pull that long -> rebuilt
CLEAN_EXPIRE_MAX_MSGS = 16  # cleanExpireMsg looks at most at this many head messages per round
CLEAN_EXPIRE_DELAY_LEVEL = 3


class ProcessQueue:
    __slots__ = (
        "clock", "msg_tree_map", "_offsets", "queue_offset_max", "msg_count", "msg_size", "dropped",
        "consuming", "last_pull_timestamp_ms", "last_consume_timestamp_ms", "_commit_max_offset",
    )

    def __init__(self, clock: Clock, *, commit_max_offset: bool = False) -> None:
        self.clock = clock
        self.msg_tree_map: dict[int, MessageExt] = {}  # queue offset -> message; order kept in _offsets
        self._offsets: list[int] = []  # the keys of msg_tree_map, ascending (the TreeMap's order)
        self.queue_offset_max = 0
        self.msg_count = 0
        self.msg_size = 0
        self.dropped = False
        self.consuming = False
        now = clock.now_ms()
        self.last_pull_timestamp_ms = now
        self.last_consume_timestamp_ms = now
        self._commit_max_offset = commit_max_offset  # mutant "commit_max_offset"

    # --- the ordered map ---------------------------------------------------------------------------------
    def first_key(self) -> int | None:
        return self._offsets[0] if self._offsets else None

    def last_key(self) -> int | None:
        return self._offsets[-1] if self._offsets else None

    def offsets(self) -> list[int]:
        """The cached queue offsets, ascending."""
        return list(self._offsets)

    def __len__(self) -> int:
        return len(self._offsets)

    # --- ProcessQueue ------------------------------------------------------------------------------------
    def put_message(self, msgs: Iterable[MessageExt]) -> bool:
        """Cache pulled messages; True when a consumer should be dispatched (used by orderly consumers)."""
        valid = 0
        for msg in msgs:
            offset = msg.queue_offset
            if offset not in self.msg_tree_map:
                valid += 1
                self.msg_size += len(msg.body or b"")
                if not self._offsets or offset > self._offsets[-1]:
                    self._offsets.append(offset)
                else:
                    insort(self._offsets, offset)
                self.queue_offset_max = offset
            self.msg_tree_map[offset] = msg
        self.msg_count += valid
        dispatch = False
        if self._offsets and not self.consuming:
            dispatch = True
            self.consuming = True
        return dispatch

    def contains_message(self, msg: MessageExt) -> bool:
        """Still cached (5.1.0+, #5481): cleanExpireMsg may have sent it back and removed it meanwhile."""
        return msg.queue_offset in self.msg_tree_map

    def get_max_span(self) -> int:
        if not self._offsets:
            return 0
        return self._offsets[-1] - self._offsets[0]

    def remove_message(self, msgs: Iterable[MessageExt]) -> int:
        """Forget acknowledged messages; the offset that may now be committed.

        -1 when nothing was cached; else the smallest offset still cached, or
        ``queue_offset_max + 1`` when the cache became empty.
        """
        self.last_consume_timestamp_ms = self.clock.now_ms()
        if not self._offsets:
            return -1
        result = self.queue_offset_max + 1
        removed = 0
        for msg in msgs:
            prev = self.msg_tree_map.pop(msg.queue_offset, None)
            if prev is not None:
                removed += 1
                self.msg_size -= len(prev.body or b"")
                i = bisect_left(self._offsets, msg.queue_offset)
                del self._offsets[i]
        self.msg_count -= removed
        if self._offsets and not self._commit_max_offset:
            result = self._offsets[0]
        return result

    def is_pull_expired(self) -> bool:
        return self.clock.now_ms() - self.last_pull_timestamp_ms > PULL_MAX_IDLE_TIME_MS

    def clean_expire_msg(
        self,
        consume_timeout_min: int,
        send_message_back: Callable[[MessageExt, int], None],
        log: Callable[[str], None] | None = None,
    ) -> int:
        """Send back head messages whose consumption started more than ``consume_timeout_min`` ago.

        ``send_message_back(msg, delay_level)`` raises on failure; a failed one stays at the head and is
        tried again within this round, as in Java. Returns how many were removed. The original
        consumption may still finish later: a possible duplicate, never a loss.
        """
        removed = 0
        timeout_ms = consume_timeout_min * 60_000
        for _ in range(min(len(self._offsets), CLEAN_EXPIRE_MAX_MSGS)):
            if not self._offsets:
                break
            msg = self.msg_tree_map[self._offsets[0]]
            started = msg.properties.get(PROPERTY_CONSUME_START_TIMESTAMP)
            if not started or self.clock.now_ms() - int(started) <= timeout_ms:
                break
            try:
                send_message_back(msg, CLEAN_EXPIRE_DELAY_LEVEL)
            except REQUEST_ERRORS as error:  # Java logs it and goes on
                if log:
                    as_log(log).error(f"send expired msg exception: {error}", error)
                continue
            if self._offsets and msg.queue_offset == self._offsets[0]:
                self.remove_message([msg])
                removed += 1
        return removed
