"""The requests that travel between the timer's threads, and the latches their batches wait on.

A ``TimerRequest`` is one message on its way through the pipeline; a batch (an enqueue batch, a slot's delete
markers or messages) shares one ``CountDownLatch``; ``LatchWait`` is RocketMQ's ``checkDequeueLatch`` as a state a
service polls instead of a blocking await.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import message as codec

if TYPE_CHECKING:
    from .timer_message_store import TimerMessageStore

MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2
PUT_OK, PUT_NEED_RETRY, PUT_NO_RETRY = 0, 1, 2
DEFAULT_CAPACITY = 1024  # the queues between the threads
LONG_MAX = (1 << 63) - 1
LATCH_AWAIT_MS = 1000  # checkDequeueLatch awaits in 1 s steps


def is_magic_ok(magic: int) -> bool:
    return (magic | 0xF) == 0xF


def need_roll(magic: int) -> bool:
    return magic & MAGIC_ROLL != 0


def need_delete(magic: int) -> bool:
    return magic & MAGIC_DELETE != 0


def build_delete_key(real_topic: str | None, uniq_key: str) -> str:
    return f"{real_topic}+{uniq_key}"


class CountDownLatch:
    """A CountDownLatch that remembers when it opened (the waiting thread resumes at that moment)."""

    __slots__ = ("count", "opened_mono_ms")

    def __init__(self, count: int, mono_ms: int) -> None:
        self.count = count
        self.opened_mono_ms = mono_ms if count <= 0 else None

    def count_down(self, mono_ms: int) -> None:
        if self.count > 0:
            self.count -= 1
            if self.count == 0:
                self.opened_mono_ms = mono_ms


class TimerRequest:
    """One message on its way through the pipeline (TimerRequest.java)."""

    __slots__ = ("offset_py", "size_py", "delay_time_ms", "enqueue_time_ms", "magic", "msg", "latch", "released",
                 "succ", "delete_list", "slot_ms")

    def __init__(self, offset_py: int, size_py: int, delay_time_ms: int, enqueue_time_ms: int, magic: int,
                 msg: codec.MessageExt | None = None) -> None:
        self.offset_py = offset_py
        self.size_py = size_py
        self.delay_time_ms = delay_time_ms
        self.enqueue_time_ms = enqueue_time_ms
        self.magic = magic
        self.msg = msg
        self.latch: CountDownLatch | None = None
        self.released = False
        self.succ = False
        self.delete_list: set[str] | None = None
        self.slot_ms = -1  # the wheel slot it was read from (-1: due at enqueue, never in the wheel)

    def idempotent_release(self, mono_ms: int, succ: bool = True) -> None:
        """Counts the latch down once: a request put again after a batch redo never counts it again."""
        self.succ = succ
        if not self.released and self.latch is not None:
            self.released = True
            self.latch.count_down(mono_ms)


class LatchWait:
    """checkDequeueLatch: wait for the latch in 1 s steps; give up after two idle checks of the workers.

    Returns from ``poll`` True once the wait is over (opened, or given up: a lost request cannot block forever).
    """

    def __init__(self, ts: TimerMessageStore, latch: CountDownLatch, start_mono_ms: int) -> None:
        self.ts = ts
        self.latch = latch
        self.deadline_ms = start_mono_ms + LATCH_AWAIT_MS
        self.stage = "first"  # first await, then "loop" (checks), then "final" await
        self.check_num = 0

    def wakeup_ms(self) -> int:
        if self.latch.count == 0:
            return self.latch.opened_mono_ms
        return self.deadline_ms

    def poll(self, mono_ms: int) -> bool:
        while True:
            if self.latch.count == 0:
                return True
            if mono_ms < self.deadline_ms:
                return False
            if self.stage == "final":
                self.ts.log.warn(f"Check latch failed, gave up waiting at mono {self.deadline_ms}")
                return True
            self.stage = "loop"
            if not self.ts.dequeue_workers_busy():
                self.check_num += 1
                if self.check_num >= 2:
                    self.stage = "final"
            self.deadline_ms += LATCH_AWAIT_MS
