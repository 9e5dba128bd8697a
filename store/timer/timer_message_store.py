"""TimerMessageStore: the 5.x timer wheel that delivers messages at an arbitrary time (ROCKETMQ.md 7).

A timer message is stored in ``rmq_sys_wheel_timer`` queue 0 with its (rounded) deliver time in
``TIMER_OUT_MS`` (the put hook, ``store/hook_utils.py``). The pipeline is RocketMQ's threads as sans-IO
services joined by deques, in this order (same-millisecond steps run in it):

* ``TimerEnqueueGetService`` reads the timer topic's consume queue into ``enqueue_put_queue``;
* ``TimerEnqueuePutService`` takes batches of up to 11 requests, appends a unit per request to the timer log
  and links it into the wheel slot of its time (an already-due request goes straight to the put side), waits
  for the whole batch, then commits the queue offset and moves the write time; a failed batch is redone;
* ``TimerDequeueGetService`` walks the slot of the read time, once the write time has passed it, backwards
  through the timer log, hands the requests to the workers, waits until the whole slot is done and only then
  moves the read time;
* ``TimerDequeuePutMessageService`` is the get workers (read each message) and ``timerPutMessageThreadNum``
  put workers (put it back into its real topic, or re-put a rolled one into the timer topic) in one service;
* ``TimerFlushService`` prepares the checkpoint, then flushes timer log, wheel and ``config/timercheck``.

Java's blocking waits become states: a latch wait (``checkDequeueLatch``) is a ``LatchWait``, a worker's sleep
before a retry is a wake-up time; processing takes no time. Everything a thread does between two waits
happens in one step, so the crash windows are RocketMQ's own: between steps, and at the fault sites of puts.
Where RocketMQ's code would spin forever (a slot chain that loops back, after a damaged timer log) the dequeue
stops for good (``dequeue_stuck``) instead of hanging the driver.
"""

from __future__ import annotations

import random
import struct
from collections import deque
from collections.abc import Callable

from .. import message as codec
from ..consume_queue import CQ_UNIT
from ..faults import SITE_TIMER_DEQUEUE_PUT, check_crash
from ..java_numbers import java_parse_int, java_parse_long  # re-exported for older callers
from ..log import DISK_DAMAGE, as_log
from ..mapped_file import StoreLoadError
from ..message_store import DefaultMessageStore
from ..probes import NO_PROBES
from ..put_status import PutMessageResult, PutMessageStatus
from ..service import PeriodicService
from ..topic_config import TIMER_TOPIC
from .dormancy import (
    ENQUEUE_PUT_FIRST_POLL_MS,
    dormant_dequeue_wakeup_ms,
    fast_forward,
    grid_at_or_after,
    is_dormant,
)
from .timer_checkpoint import TimerCheckpoint
from .timer_log import BLANK_MAGIC_CODE, HEAD_STRUCT, UNIT_PRE_SIZE_FOR_MSG, UNIT_SIZE, TimerLog, encode_unit
from .timer_wheel import IGNORE, TimerWheel

TIMER_WHEEL_TTL_DAY = 7
DAY_SECS = 24 * 3600
TIMER_BLANK_SLOTS = 60
MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2
PUT_OK, PUT_NEED_RETRY, PUT_NO_RETRY = 0, 1, 2
DEFAULT_CAPACITY = 1024
LONG_MAX = (1 << 63) - 1
ENQUEUE_PUT_NEXT_POLL_MS = 3  # ... then poll(3 ms) for each further one
ENQUEUE_PUT_MAX_BATCH = 11  # "if (trs.size() > 10) break"
HOLD_MOMENT_MS = 50  # holdMomentForUnknownError
LATCH_AWAIT_MS = 1000  # checkDequeueLatch awaits in 1 s steps
SPLIT_MIN = 100  # splitIntoLists: lists of at least 100 are split per commit-log file ...
SPLIT_EVERY = 2000  # ... and every 2000 requests
INITIAL, RUNNING, SHUTDOWN = 0, 1, 3
_UNIT_HEAD = struct.Struct(">iqiqiqi")  # the first 40 bytes of a unit: what the dequeue reads

_RETRY_STATUSES = {
    PutMessageStatus.SERVICE_NOT_AVAILABLE, PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.OS_PAGE_CACHE_BUSY, PutMessageStatus.CREATE_MAPPED_FILE_FAILED,
    PutMessageStatus.SLAVE_NOT_AVAILABLE,
}
_NO_RETRY_STATUSES = {
    PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
    PutMessageStatus.WHEEL_TIMER_NOT_ENABLE, PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL,
}

DeliverListener = Callable[..., None]  # (inner, "timer", due_ms, result, slot_ms=...)


def is_magic_ok(magic: int) -> bool:
    return (magic | 0xF) == 0xF


def need_roll(magic: int) -> bool:
    return magic & MAGIC_ROLL != 0


def need_delete(magic: int) -> bool:
    return magic & MAGIC_DELETE != 0


def build_delete_key(real_topic: str | None, uniq_key: str) -> str:
    return f"{real_topic}+{uniq_key}"


def _size_py(data: bytes, position: int) -> int:
    """The unit's message size (a real unit's is > 0; zeros past a torn sector make it 0)."""
    end = position + 40
    return int.from_bytes(data[position + 36 : end], "big", signed=True) if end <= len(data) else 0


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


class TimerMessageStore:
    probes = NO_PROBES  # the run's ProbeCollector when the world attaches one

    def __init__(
        self,
        store: DefaultMessageStore,
        *,
        rng: random.Random | None = None,
        mutants: frozenset[str] = frozenset(),
        log: Callable[[str], None] | None = None,
    ) -> None:
        cfg = store.config
        self.store = store
        self.config = cfg
        self.clock = store.clock
        self.faults = store.faults
        self.log = as_log(log or store.log)
        self.rng = rng or random.Random(0)
        self.precision_ms = cfg.timer_precision_ms
        self.slots_total = cfg.timer_slots_total
        self.timer_log_file_size = cfg.mapped_file_size_timer_log
        self.commit_log_file_size = cfg.mapped_file_size_commit_log
        window = cfg.timer_roll_window_slot
        if window > self.slots_total - TIMER_BLANK_SLOTS or window < 2:
            window = self.slots_total - TIMER_BLANK_SLOTS
        self.timer_roll_window_slots = window
        # Poll intervals scale with the precision (100 ms and 500 ms at 1 s); never 0 (Java would spin).
        self.poll_interval_ms = max(1, 100 * self.precision_ms // 1000)
        self.retry_sleep_ms = max(1, 500 * self.precision_ms // 1000)
        self.state = INITIAL
        self.running = False  # state == RUNNING, kept as a plain attribute: every driver step asks it
        self.load_error = ""
        self.should_running_dequeue = True  # a master
        self.dequeue_stuck = False  # a looping slot chain: the Java dequeue thread would never come back
        self.timer_wheel: TimerWheel | None = None
        self.timer_log = TimerLog(store.disk, self.timer_log_file_size, faults=store.faults)
        self.timer_checkpoint: TimerCheckpoint | None = None
        # In-memory state (7.4).
        self.curr_read_time_ms = 0
        self.curr_write_time_ms = 0
        self.commit_read_time_ms = 0
        self.curr_queue_offset = 0
        self.commit_queue_offset = 0
        self.last_commit_read_time_ms = 0
        self.last_commit_queue_offset = 0
        # Idle skipping must wake a service at the poll that would first *see* a change. Within one millisecond
        # the services run in list order, so a change made after a service's turn is seen one poll later:
        self._turn_ms = -1  # the millisecond of the latest timer-service step ...
        self._turn_index = -1  # ... and the highest service index that stepped in it
        self.write_time_passed_mono_ms = 0  # when the write time last moved past the read time
        self.write_time_passed_after_dequeue_turn = False  # ... after the dequeue's turn in that millisecond
        self.last_timer_topic_put_mono_ms = -1  # puts into the timer topic come after the enqueue-get's turn
        store.put_listeners.append(self._on_put)
        # A timer-log unit torn by a power failure (its head kept, the rest zeros) still passes the recovery
        # check and relinks the slot its torn bytes name: that slot's earlier units are no longer reachable.
        self.torn_unit_listeners: list[Callable[[int, int], None]] = []  # (slot_ms, timer-log position)
        # The queues between the threads.
        self.enqueue_put_queue: deque[TimerRequest] = deque()
        self.dequeue_get_queue: deque[list[TimerRequest]] = deque()
        self.dequeue_put_queue: deque[TimerRequest] = deque()
        # Observability and driving.
        self.deliver_listeners: list[DeliverListener] = []
        self.idle_skip = False  # sleep through idle polls (a driver's choice; the history stays identical)
        # TimerEnqueuePutService's empty 10 ms polls only move the write time and commit the queue offset; the
        # first poll that changes something is computed even without idle_skip (literal 10 ms steps would
        # triple the steps of every faithful run). True polls every 10 ms, to show both give the same history.
        self.literal_put_polls = False
        # A skipping driver may let the timer sleep while nothing is in flight (store/timer/dormancy.py); it must
        # then call ``fast_forward`` before anything outside the timer looks at it (crash, shutdown, clock step).
        self.dormancy = False
        self.mono_now: Callable[[], int] = lambda: 0
        self.enqueue_get_service: TimerEnqueueGetService | None = None
        self.enqueue_put_service: TimerEnqueuePutService | None = None
        self.dequeue_get_service: TimerDequeueGetService | None = None
        self.dequeue_put_message_service: TimerDequeuePutMessageService | None = None
        self.flush_service: PeriodicService | None = None
        # Mutants, read once.
        self.m_no_queue_offset_clamp = "timer_no_queue_offset_clamp" in mutants
        self.m_drop_after_first_failure = "timer_drop_after_first_failure" in mutants
        self.m_drop_after_3_retries = "timer_drop_after_3_retries" in mutants
        self.m_read_current_slot = "timer_read_current_slot" in mutants
        self.m_read_time_early = "timer_read_time_early" in mutants

    # --- load and recovery (7.6) -----------------------------------------------------------------------------
    def load(self) -> bool:
        """Open wheel, timer log and checkpoint, then recover; False (with ``load_error``) when a file is bad."""
        try:
            self.timer_wheel = TimerWheel(self.store.disk, self.slots_total, self.precision_ms)
            self.timer_log.load()
        except StoreLoadError as error:
            self.load_error = str(error)
            return False
        self.timer_checkpoint = TimerCheckpoint(self.store.disk, self.clock)
        self.recover()
        return True

    def recover(self) -> None:
        cp = self.timer_checkpoint
        mfq = self.timer_log.mfq
        last_flush_pos = cp.last_timer_log_flush_pos
        last_file = mfq.get_last_mapped_file()
        if last_file is not None:
            last_flush_pos -= last_file.file_size
        last_flush_pos = max(last_flush_pos, 0)
        process_offset = self.recover_and_revise(last_flush_pos, True)
        mfq.flushed_where = process_offset
        queue_offset = self.revise_queue_offset(process_offset)
        self.curr_queue_offset = cp.last_timer_queue_offset if queue_offset == -1 else queue_offset + 1
        self.curr_queue_offset = min(self.curr_queue_offset, cp.master_timer_queue_offset)
        cq = self.store.get_consume_queue(TIMER_TOPIC, 0)
        if cq is not None and not self.m_no_queue_offset_clamp:  # 5.3.2+ (#7480)
            if not cq.get_min_offset_in_queue() <= self.curr_queue_offset <= cq.get_max_offset_in_queue():
                self.probes.probe("timer.queue_offset_clamped")
            if self.curr_queue_offset < cq.get_min_offset_in_queue():
                self.log.warn(f"Timer currQueueOffset:{self.curr_queue_offset} is smaller than minOffsetInQueue:"
                         f"{cq.get_min_offset_in_queue()}")
                self.curr_queue_offset = cq.get_min_offset_in_queue()
            elif self.curr_queue_offset > cq.get_max_offset_in_queue():
                self.log.warn(f"Timer currQueueOffset:{self.curr_queue_offset} is larger than maxOffsetInQueue:"
                         f"{cq.get_max_offset_in_queue()}")
                self.curr_queue_offset = cq.get_max_offset_in_queue()
        p = self.precision_ms
        self.curr_read_time_ms = cp.last_read_time_ms
        horizon_ms = self.format_time_ms(self.clock.now_ms()) - self.slots_total * p + TIMER_BLANK_SLOTS * p
        if self.curr_read_time_ms < horizon_ms:
            self.curr_read_time_ms = horizon_ms  # slots older than ~7 days are never dequeued
        min_first = self.timer_wheel.check_phy_pos(self.curr_read_time_ms, process_offset)
        if min_first < process_offset:
            self.log.warn(f"Timer recheck because of minFirst:{min_first} processOffset:{process_offset}")
            self.recover_and_revise(min_first, False)
        self.log(f"Timer recover ok currReadTimerMs:{self.curr_read_time_ms} currQueueOffset:"
                 f"{self.curr_queue_offset} checkQueueOffset:{cp.last_timer_queue_offset} "
                 f"processOffset:{process_offset}")
        self.commit_read_time_ms = self.curr_read_time_ms
        self.commit_queue_offset = self.curr_queue_offset
        self.prepare_timer_check_point()

    def recover_and_revise(self, begin_offset: int, check_timer_log: bool) -> int:
        """Relink wheel slots from the timer-log units found from ``begin_offset``'s file on; the end found.

        With ``check_timer_log`` whole files are scanned, the first invalid unit ends the log and the log is
        truncated there; without it only up to each file's read position.
        """
        files = self.timer_log.mfq.mapped_files
        if not files:
            return 0
        index = len(files) - 1
        while index >= 0 and begin_offset < files[index].file_from_offset:
            index -= 1
        index = max(index, 0)
        check_offset = files[index].file_from_offset
        wheel = self.timer_wheel
        while index < len(files):
            mf = files[index]
            data = mf.handle.read(0, mf.file_size if check_timer_log else mf.wrote_position)
            position = 0
            stop = False
            while position < len(data):
                if position + 16 > len(data):  # a short read is Java's BufferUnderflowException
                    stop = True
                    break
                size, _prev, magic = HEAD_STRUCT.unpack_from(data, position)
                if magic == BLANK_MAGIC_CODE:
                    break
                if check_timer_log and (not is_magic_ok(magic) or size != UNIT_SIZE):
                    stop = True
                    break
                if position + 28 > len(data):
                    stop = True
                    break
                write_time = int.from_bytes(data[position + 16 : position + 24], "big", signed=True)
                delay = int.from_bytes(data[position + 24 : position + 28], "big", signed=True)
                if size == UNIT_SIZE and is_magic_ok(magic):
                    wheel.revise_slot(write_time + delay, IGNORE, mf.file_from_offset + position, True)
                    if self.torn_unit_listeners and _size_py(data, position) <= 0:
                        for listener in self.torn_unit_listeners:
                            listener(self.format_time_ms(write_time + delay), mf.file_from_offset + position)
                position += UNIT_SIZE
            check_offset = mf.file_from_offset + position
            if stop:
                break
            index += 1
        if check_timer_log:
            self.timer_log.mfq.truncate_dirty_files(check_offset)
        return check_offset

    def revise_queue_offset(self, process_offset: int) -> int:
        """The timer topic's queue offset of the message behind the last timer-log unit (-1: unknown)."""
        raw = self.timer_log.read(process_offset - (UNIT_SIZE - UNIT_PRE_SIZE_FOR_MSG), 12)
        if raw is None or len(raw) < 12:
            return -1
        offset_py = int.from_bytes(raw[0:8], "big", signed=True)
        size_py = int.from_bytes(raw[8:12], "big", signed=True)
        msg = self.get_message_by_commit_offset(offset_py, size_py)
        if msg is None:
            return -1
        msg_queue_offset = msg.queue_offset
        cq = self.store.get_consume_queue(TIMER_TOPIC, msg.queue_id)
        if cq is None:
            return msg_queue_offset
        cq_offset = tmp = msg_queue_offset
        for _ in range(20000):
            if tmp < 0:
                self.log.warn(f"reviseQueueOffset check cq offset fail, msg in cq is not found.{offset_py}, {size_py}")
                break
            unit = cq.get_unit(tmp)
            if unit is not None and unit[0] == offset_py and unit[1] == size_py:
                cq_offset = tmp
                break
            tmp -= 1
        return cq_offset

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self, mono_ms: int) -> None:
        self.maybe_move_write_time(self.clock.now_ms(), mono_ms)
        self.enqueue_get_service = TimerEnqueueGetService(self, mono_ms)
        self.enqueue_put_service = TimerEnqueuePutService(self, mono_ms)
        self.dequeue_get_service = TimerDequeueGetService(self, mono_ms)
        self.dequeue_put_message_service = TimerDequeuePutMessageService(
            self, max(self.config.timer_put_message_thread_num, 1))
        self.flush_service = TimerFlushService(self, mono_ms)
        self.state = RUNNING
        self.running = True

    @property
    def services(self) -> list:
        """In the order same-millisecond steps must run (the enqueue put before the dequeue that reads its time)."""
        if self.enqueue_get_service is None:
            return []
        return [self.enqueue_get_service, self.enqueue_put_service, self.dequeue_get_service,
                self.dequeue_put_message_service, self.flush_service]

    def shutdown(self) -> None:
        """Graceful stop: checkpoint prepared and forced, the timer log flushed once; the wheel is not flushed
        (RocketMQ's ``timerWheel.shutdown(false)``: recovery relinks it from the timer log)."""
        if self.state == SHUTDOWN:
            return
        self.state = SHUTDOWN
        self.running = False
        if self.timer_checkpoint is None:
            return
        self.prepare_timer_check_point()
        self.timer_checkpoint.flush()
        self.enqueue_put_queue.clear()
        self.dequeue_get_queue.clear()
        self.dequeue_put_queue.clear()
        self.timer_log.flush(0)

    # --- dormancy (store/timer/dormancy.py) ---------------------------------------------------------------------
    def dormant(self) -> bool:
        return is_dormant(self)

    def fast_forward(self, mono_ms: int, turn: int = 0) -> None:
        """Account the polls slept through while dormant, up to ``mono_ms`` (at it: the services before ``turn``;
        an observer ranked after the timer services passes ``dormancy.ALL_TURNS``)."""
        fast_forward(self, mono_ms, turn)

    # --- time ------------------------------------------------------------------------------------------------
    def format_time_ms(self, time_ms: int) -> int:
        return time_ms // self.precision_ms * self.precision_ms

    def maybe_move_write_time(self, now_ms: int, mono_ms: int) -> None:
        target = self.format_time_ms(now_ms)
        if self.curr_write_time_ms < target:
            if self.curr_write_time_ms <= self.curr_read_time_ms < target:
                self.write_time_passed_mono_ms = mono_ms
                self.write_time_passed_after_dequeue_turn = (
                    self._turn_ms == mono_ms and self._turn_index >= TimerDequeueGetService.INDEX)
            self.curr_write_time_ms = target

    def note_turn(self, mono_ms: int, index: int) -> None:
        """A timer service steps: the services before it in the list have had their turn in this millisecond."""
        if mono_ms != self._turn_ms:
            self._turn_ms, self._turn_index = mono_ms, index
        elif index > self._turn_index:
            self._turn_index = index

    def _on_put(self, msg: codec.MessageExt, result: PutMessageResult) -> None:
        if result.append is not None and result.append.topic == TIMER_TOPIC:
            self.last_timer_topic_put_mono_ms = self.mono_now()

    def read_caught_up(self) -> bool:
        """The dequeue waits while the read time has reached the write time (the current slot is not over)."""
        if self.m_read_current_slot:
            return self.curr_read_time_ms > self.curr_write_time_ms  # the mutant's '>' reads the current slot
        return self.curr_read_time_ms >= self.curr_write_time_ms

    def move_read_time(self) -> None:
        self.curr_read_time_ms += self.precision_ms
        self.commit_read_time_ms = self.curr_read_time_ms

    # --- checkpoint and flush --------------------------------------------------------------------------------
    def prepare_timer_check_point(self) -> None:
        cp = self.timer_checkpoint
        cp.last_timer_log_flush_pos = self.timer_log.mfq.flushed_where
        cp.last_read_time_ms = self.commit_read_time_ms
        if self.should_running_dequeue:
            cp.master_timer_queue_offset = self.commit_queue_offset
            if (self.commit_read_time_ms != self.last_commit_read_time_ms
                    or self.commit_queue_offset != self.last_commit_queue_offset):
                cp.data_version.next_version(self.clock, 0)
                self.last_commit_read_time_ms = self.commit_read_time_ms
                self.last_commit_queue_offset = self.commit_queue_offset
        cp.last_timer_queue_offset = min(self.commit_queue_offset, cp.master_timer_queue_offset)

    def flush_round(self, mono_ms: int = 0) -> None:
        """TimerFlushService: checkpoint values first, then timer log (one file), wheel, checkpoint."""
        self.note_turn(mono_ms, 4)
        if not self.running:
            return
        self.prepare_timer_check_point()
        self.timer_log.flush(0)
        self.timer_wheel.flush()
        self.timer_checkpoint.flush()

    # --- flow control (used by the put hook) -----------------------------------------------------------------
    def is_reject(self, deliver_ms: int) -> bool:
        limit = self.config.timer_congest_num_each_slot
        congest = self.timer_wheel.get_num(deliver_ms) if self.timer_wheel is not None else 0
        if congest <= limit:
            return False
        reject = congest >= limit * 2 or self.rng.randrange(1000) > 1000 * (congest - limit) / (limit + 0.1)
        if reject:
            self.probes.probe("timer.flow_control")
        return reject

    # --- reading messages ------------------------------------------------------------------------------------
    def get_message_by_commit_offset(self, offset_py: int, size_py: int) -> codec.MessageExt | None:
        if size_py <= 0 or offset_py < 0:
            return None
        return self.store.look_message_by_offset(offset_py, size_py)

    # --- enqueue (7.5 steps 1-3) -----------------------------------------------------------------------------
    def enqueue_can_progress(self) -> bool:
        cq = self.store.get_consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            return False
        return self.curr_queue_offset < cq.get_max_offset_in_queue() or \
            self.curr_queue_offset < cq.get_min_offset_in_queue()

    def enqueue(self, queue_id: int = 0) -> str:
        """One round of TimerEnqueueGetService: "true", "false", "blocked" (put queue full) or "error"."""
        if not self.running:
            return "false"
        cq = self.store.get_consume_queue(TIMER_TOPIC, queue_id)
        if cq is None:
            return "false"
        if self.curr_queue_offset < cq.get_min_offset_in_queue():
            self.log.warn(f"Timer currQueueOffset:{self.curr_queue_offset} is smaller than minOffsetInQueue:"
                     f"{cq.get_min_offset_in_queue()}")
            self.curr_queue_offset = cq.get_min_offset_in_queue()
        offset = self.curr_queue_offset
        buf = cq.get_index_buffer(offset)
        if buf is None:
            return "false"
        i = 0
        for offset_py, size_py, _tags in CQ_UNIT.iter_unpack(buf):
            if len(self.enqueue_put_queue) >= DEFAULT_CAPACITY:
                return "blocked"  # offer() waits for room; the unit is read again then
            i += 1
            msg = self.get_message_by_commit_offset(offset_py, size_py)
            if msg is None:
                self.log.warn(f"enqueue_get_miss: offsetPy {offset_py} sizePy {size_py} unreadable, skipped")
            else:
                try:
                    delayed_ms = java_parse_long(msg.properties.get(codec.PROPERTY_TIMER_OUT_MS))
                except ValueError as error:
                    if not self.config.timer_skip_unknown_error:
                        self.log.error(f"Unknown exception in enqueuing at queue offset {offset + i - 1}: {error}", error,
                                       DISK_DAMAGE)
                        return "error"  # the unit is read again after the hold
                    self.log.warn(f"Unknown error in skipped in enqueuing: {error}", error)
                else:
                    msg.queue_offset = offset + i  # the *next* offset: what committing this request means
                    self.enqueue_put_queue.append(
                        TimerRequest(offset_py, size_py, delayed_ms, self.clock.now_ms(), MAGIC_DEFAULT, msg))
            self.curr_queue_offset = offset + i
        self.curr_queue_offset = offset + i
        return "true" if i > 0 else "false"

    def put_message_to_timer_wheel(self, req: TimerRequest, mono_ms: int) -> None:
        if self.should_running_dequeue and req.delay_time_ms < self.curr_write_time_ms:
            req.enqueue_time_ms = LONG_MAX  # already due: straight to the put side, never in the timer log
            self.dequeue_put_queue.append(req)
        else:
            ok = self.do_enqueue(req.offset_py, req.size_py, req.delay_time_ms, req.msg)
            req.idempotent_release(mono_ms, ok or self.config.timer_skip_unknown_error)

    def do_enqueue(self, offset_py: int, size_py: int, delayed_time_ms: int, msg: codec.MessageExt) -> bool:
        """Append a unit for the slot of ``delayed_time_ms`` (rolled to within the window) and link it in."""
        w = self.curr_write_time_ms
        p, window = self.precision_ms, self.timer_roll_window_slots
        magic = MAGIC_DEFAULT
        if delayed_time_ms - w >= window * p:
            self.probes.probe("timer.roll")
            magic |= MAGIC_ROLL
            if delayed_time_ms - w - window * p < window // 3 * p:
                delayed_time_ms = w + window // 2 * p  # give enough time to the next roll
            else:
                delayed_time_ms = w + window * p
        is_delete = msg.properties.get(codec.PROPERTY_TIMER_DEL_UNIQKEY) is not None
        if is_delete:
            magic |= MAGIC_DELETE
        real_topic = msg.properties.get(codec.PROPERTY_REAL_TOPIC)
        slot = self.timer_wheel.get_slot(delayed_time_ms)
        unit = encode_unit(slot.last_pos, magic, w, delayed_time_ms, offset_py, size_py,
                           codec.java_string_hash(real_topic) if real_topic is not None else 0)
        pos = self.timer_log.append(unit)
        if pos != -1:
            self.timer_wheel.put_slot(delayed_time_ms, pos if slot.first_pos == -1 else slot.first_pos, pos,
                                      slot.num - 1 if is_delete else slot.num + 1, slot.magic)
        return pos != -1

    # --- dequeue (7.5 steps 4-6) -----------------------------------------------------------------------------
    def dequeue_workers_busy(self) -> bool:
        """checkDequeueLatch's "let it go": work queued for, or held by, the get/put workers."""
        svc = self.dequeue_put_message_service
        return bool(self.dequeue_put_queue) or bool(self.dequeue_get_queue) or (svc is not None and svc.busy > 0)

    def read_slot(self) -> tuple[list[TimerRequest], list[TimerRequest]] | None:
        """The slot at the read time, walked from lastPos back through prevPos: (delete markers, normal).

        None when the slot is empty. Normal requests come out in the order they were enqueued. A chain that
        comes back on itself (a damaged timer log) would keep a Java dequeue thread looping forever: the
        dequeue is then stuck for good (``dequeue_stuck``), which is what such a broker shows."""
        slot = self.timer_wheel.get_slot(self.curr_read_time_ms)
        if slot.time_ms == -1:
            return None
        curr = slot.last_pos
        delete_keys: set[str] = set()
        normal: deque[TimerRequest] = deque()
        deletes: list[TimerRequest] = []
        buffer = None  # (start offset, mapped file, read limit), re-fetched only when walking into an earlier file
        fsize = self.timer_log_file_size
        seen: set[int] = set()
        while curr != -1:
            if curr in seen:
                self.log.error(f"timer log chain of slot {self.curr_read_time_ms} loops at {curr}: dequeue stuck", fault_site=DISK_DAMAGE)
                self.dequeue_stuck = True
                return None
            seen.add(curr)
            if buffer is None or buffer[0] > curr:
                buffer = self.timer_log.whole_buffer(curr)
            if buffer is None:
                break
            _start, mf, limit = buffer
            position = curr % fsize if curr >= 0 else -((-curr) % fsize)  # Java's remainder
            prev = -1
            if position >= 0 and position + 12 <= limit:
                head = mf.handle.read(position, min(UNIT_SIZE, limit - position))
                prev = int.from_bytes(head[4:12], "big", signed=True)
                if len(head) >= 40:
                    _size, _p, magic, enqueue_ms, delay, offset_py, size_py = _UNIT_HEAD.unpack_from(head)
                    req = TimerRequest(offset_py, size_py, enqueue_ms + delay, enqueue_ms, magic)
                    req.delete_list = delete_keys
                    req.slot_ms = self.curr_read_time_ms
                    if need_delete(magic) and not need_roll(magic):
                        deletes.append(req)
                    else:
                        normal.appendleft(req)
            else:
                self.log.error(f"Error in dequeue_read_timerlog at {curr}: past the written end", fault_site=DISK_DAMAGE)
            curr = prev
        if not deletes and not normal:
            self.log.warn(f"dequeue time:{self.curr_read_time_ms} but read nothing from timerLog")
        return deletes, list(normal)

    def split_into_lists(self, origin: list[TimerRequest]) -> list[list[TimerRequest]]:
        if len(origin) < SPLIT_MIN:
            return [origin]
        lists: list[list[TimerRequest]] = []
        curr: list[TimerRequest] | None = None
        file_index = -1
        msg_index = 0
        for tr in origin:
            if file_index != tr.offset_py // self.commit_log_file_size:
                msg_index = 0
                if curr:
                    lists.append(curr)
                curr = [tr]
                file_index = tr.offset_py // self.commit_log_file_size
            else:
                curr.append(tr)
                msg_index += 1
                if msg_index % SPLIT_EVERY == 0:
                    lists.append(curr)
                    curr = []
        if curr:
            lists.append(curr)
        return lists

    def dispatch(self, requests: list[TimerRequest], mono_ms: int) -> CountDownLatch:
        latch = CountDownLatch(len(requests), mono_ms)
        for lst in self.split_into_lists(requests):
            for tr in lst:
                tr.latch = latch
            if lst:
                self.dequeue_get_queue.append(lst)
        return latch

    def convert(self, msg_ext: codec.MessageExt, enqueue_time_ms: int, roll: bool) -> codec.MessageExt:
        props = msg_ext.properties
        if enqueue_time_ms != -1:
            props[codec.PROPERTY_TIMER_ENQUEUE_MS] = str(enqueue_time_ms)
        if roll:
            times = props.get(codec.PROPERTY_TIMER_ROLL_TIMES)
            props[codec.PROPERTY_TIMER_ROLL_TIMES] = str(java_parse_int(times) + 1) if times is not None else "1"
        props[codec.PROPERTY_TIMER_DEQUEUE_MS] = str(self.clock.now_ms())
        return self.convert_message(msg_ext, roll)

    def convert_message(self, msg_ext: codec.MessageExt, roll: bool) -> codec.MessageExt:
        """The message to put: the property *string* is taken before REAL_TOPIC/REAL_QID leave the map (1.2)."""
        props = dict(msg_ext.properties)
        inner = codec.MessageExt(
            topic=msg_ext.topic,
            body=msg_ext.body,
            flag=msg_ext.flag,
            properties=props,
            properties_string=codec.message_properties_to_string(msg_ext.properties),
            sys_flag=msg_ext.sys_flag,
            born_timestamp=msg_ext.born_timestamp,
            born_host=msg_ext.born_host,
            store_host=msg_ext.store_host,
            reconsume_times=msg_ext.reconsume_times,
        )
        inner.tags_code = codec.tags_string_to_tags_code(props.get(codec.PROPERTY_TAGS))
        props[codec.PROPERTY_WAIT_STORE_MSG_OK] = "false"  # setWaitStoreMsgOK(false): the map only
        if roll:
            inner.topic, inner.queue_id = msg_ext.topic, msg_ext.queue_id
        else:
            real_topic = props.get(codec.PROPERTY_REAL_TOPIC)
            if real_topic is None:
                raise ValueError("timer message without REAL_TOPIC")
            inner.topic = real_topic
            inner.queue_id = java_parse_int(props.get(codec.PROPERTY_REAL_QUEUE_ID))
            props.pop(codec.PROPERTY_REAL_TOPIC, None)
            props.pop(codec.PROPERTY_REAL_QUEUE_ID, None)
        return inner

    def do_put(self, msg: codec.MessageExt, roll: bool) -> tuple[int, PutMessageResult | None, int]:
        """(PUT_OK / PUT_NEED_RETRY / PUT_NO_RETRY, the put result, ms held before answering)."""
        if not roll and msg.properties.get(codec.PROPERTY_TIMER_DEL_UNIQKEY) is not None:
            self.log.warn(f"Trying do put delete timer msg, roll {roll}")
            return PUT_NO_RETRY, None, 0
        if check_crash(self.faults, SITE_TIMER_DEQUEUE_PUT, msg.topic):
            result = PutMessageResult(PutMessageStatus.OS_PAGE_CACHE_BUSY, fault_site=SITE_TIMER_DEQUEUE_PUT)
        else:
            result = self.store.put_message(msg)
        status = result.status
        if status == PutMessageStatus.PUT_OK:
            return PUT_OK, result, 0
        if status in _NO_RETRY_STATUSES:
            return PUT_NO_RETRY, result, 0
        if status in _RETRY_STATUSES:
            return PUT_NEED_RETRY, result, 0
        if self.config.timer_skip_unknown_error:
            return PUT_NO_RETRY, result, 0
        return PUT_NEED_RETRY, result, HOLD_MOMENT_MS

    def delivered(self, inner: codec.MessageExt, result: PutMessageResult, slot_ms: int) -> None:
        """Tell the listeners about a put of a due (not rolled) message; due_ms = ceil(target / p) * p, and
        ``slot_ms`` the slot whose chain led to it (RocketMQ never compares the two)."""
        if not self.deliver_listeners:
            return
        try:
            due_ms = java_parse_long(inner.properties.get(codec.PROPERTY_TIMER_OUT_MS)) + self.precision_ms
        except ValueError:
            due_ms = -1
        for listener in self.deliver_listeners:
            listener(inner, "timer", due_ms, result, slot_ms=slot_ms)

    # --- numbers for inspection and tests --------------------------------------------------------------------
    def get_dequeue_behind_messages(self) -> int:
        return self.timer_wheel.get_all_num(self.curr_read_time_ms)

    def get_enqueue_behind_messages(self) -> int:
        cq = self.store.get_consume_queue(TIMER_TOPIC, 0)
        return (cq.get_max_offset_in_queue() if cq else 0) - self.curr_queue_offset




# --- the services ----------------------------------------------------------------------------------------------
class TimerEnqueueGetService:
    """Reads the timer topic's consume queue into the enqueue put queue; polls every 100 ms when idle."""

    name = "timer-enqueue-get"
    INDEX = 0

    def __init__(self, ts: TimerMessageStore, mono_ms: int) -> None:
        self.ts = ts
        self.at_mono_ms = mono_ms
        self.idle = False  # the last round found nothing: waiting out the poll interval
        self.blocked = False  # the put queue is full: waiting for room

    def next_wakeup_ms(self) -> int | None:
        ts = self.ts
        if not ts.running:
            return None
        if self.blocked:
            return ts.mono_now() if len(ts.enqueue_put_queue) < DEFAULT_CAPACITY else None
        if not self.idle or not ts.idle_skip:
            return self.at_mono_ms
        if not ts.enqueue_can_progress():
            return None
        # New units come from sends and roll re-puts, both after this service's turn in their millisecond;
        # dispatched at once, or by the next millisecond's reput (which runs before this service).
        changed_ms = max(ts.last_timer_topic_put_mono_ms + 1, 0)
        return grid_at_or_after(self.at_mono_ms, changed_ms, ts.poll_interval_ms)

    def step(self, mono_ms: int) -> None:
        ts = self.ts
        ts.fast_forward(mono_ms, self.INDEX)
        ts.note_turn(mono_ms, self.INDEX)
        if not ts.running or mono_ms < self.at_mono_ms:
            return
        if self.blocked and len(ts.enqueue_put_queue) >= DEFAULT_CAPACITY:
            return
        self.blocked = self.idle = False
        while True:
            answer = ts.enqueue(0)
            if answer == "true":
                continue
            if answer == "blocked":
                self.blocked = True
                self.at_mono_ms = mono_ms
            elif answer == "error":
                self.at_mono_ms = mono_ms + HOLD_MOMENT_MS + ts.poll_interval_ms
            else:
                self.idle = True
                self.at_mono_ms = mono_ms + ts.poll_interval_ms
            return


class TimerEnqueuePutService:
    """Batches requests into the timer log (or straight to the put side when already due).

    Phases: "poll" (waiting up to 10 ms for a first request), "collect" (3 ms for each further one, up to 11),
    "put" (handing the batch over), "latch" (waiting for every request of the batch), "redo" (50 ms before
    the whole batch is put again after a failure).
    """

    name = "timer-enqueue-put"
    INDEX = 1

    def __init__(self, ts: TimerMessageStore, mono_ms: int) -> None:
        self.ts = ts
        self.phase = "poll"
        self.poll_start_ms = mono_ms
        self.tmp_commit = ts.curr_queue_offset  # read before polling, committed if the poll comes back empty
        self.batch: list[TimerRequest] = []
        self.last_take_ms = 0
        self.put_index = 0
        self.latch_wait: LatchWait | None = None
        self.redo_at_ms = 0

    def next_wakeup_ms(self) -> int | None:
        ts = self.ts
        if not ts.running:
            return None
        phase = self.phase
        if phase == "poll":
            if ts.enqueue_put_queue:
                return ts.mono_now()
            if ts.dormancy and ts.dormant():
                return None  # its empty polls are clockwork: fast_forward accounts them
            first = self.poll_start_ms + ENQUEUE_PUT_FIRST_POLL_MS
            if ts.literal_put_polls and not ts.idle_skip:
                return first
            # The first empty poll that changes something: a new queue offset to commit, or a new write time.
            now_mono = ts.mono_now()
            if ts.commit_queue_offset == self.tmp_commit == ts.curr_queue_offset:
                now_mono += max(0, ts.curr_write_time_ms + ts.precision_ms - ts.clock.now_ms())
            if now_mono <= first:
                return first
            return first + -(-(now_mono - first) // ENQUEUE_PUT_FIRST_POLL_MS) * ENQUEUE_PUT_FIRST_POLL_MS
        if phase == "collect":
            if ts.enqueue_put_queue or len(self.batch) >= ENQUEUE_PUT_MAX_BATCH:
                return ts.mono_now()
            return self.last_take_ms + ENQUEUE_PUT_NEXT_POLL_MS
        if phase == "put":
            return ts.mono_now() if len(ts.dequeue_put_queue) < DEFAULT_CAPACITY else None
        if phase == "latch":
            return self.latch_wait.wakeup_ms()
        return self.redo_at_ms

    def step(self, mono_ms: int) -> None:
        ts = self.ts
        ts.fast_forward(mono_ms, self.INDEX)
        ts.note_turn(mono_ms, self.INDEX)
        if not ts.running:
            return
        while True:
            phase = self.phase
            if phase == "poll":
                if ts.enqueue_put_queue:
                    self.batch = [ts.enqueue_put_queue.popleft()]
                    self.last_take_ms = mono_ms
                    self.phase = "collect"
                    continue
                polls = (mono_ms - self.poll_start_ms) // ENQUEUE_PUT_FIRST_POLL_MS
                if polls < 1:
                    return
                last_poll_ms = self.poll_start_ms + polls * ENQUEUE_PUT_FIRST_POLL_MS
                ts.commit_queue_offset = self.tmp_commit if polls == 1 else ts.curr_queue_offset
                ts.maybe_move_write_time(ts.clock.now_ms() - (mono_ms - last_poll_ms), last_poll_ms)
                self.poll_start_ms = last_poll_ms
                self.tmp_commit = ts.curr_queue_offset
            elif phase == "collect":
                queue = ts.enqueue_put_queue
                while queue and len(self.batch) < ENQUEUE_PUT_MAX_BATCH:
                    self.batch.append(queue.popleft())
                    self.last_take_ms = mono_ms
                if len(self.batch) < ENQUEUE_PUT_MAX_BATCH and mono_ms < self.last_take_ms + ENQUEUE_PUT_NEXT_POLL_MS:
                    return
                self._start_batch(mono_ms)
            elif phase == "put":
                while self.put_index < len(self.batch):
                    req = self.batch[self.put_index]
                    if len(ts.dequeue_put_queue) >= DEFAULT_CAPACITY and req.delay_time_ms < ts.curr_write_time_ms:
                        return  # put() blocks until the put side makes room
                    ts.put_message_to_timer_wheel(req, mono_ms)
                    self.put_index += 1
                self.latch_wait = LatchWait(ts, self.batch[0].latch, mono_ms)
                self.phase = "latch"
            elif phase == "latch":
                if not self.latch_wait.poll(mono_ms):
                    return
                if all(req.succ for req in self.batch):
                    ts.commit_queue_offset = self.batch[-1].msg.queue_offset
                    ts.maybe_move_write_time(ts.clock.now_ms(), mono_ms)
                    self.batch = []
                    self.phase = "poll"
                    self.poll_start_ms = mono_ms
                    self.tmp_commit = ts.curr_queue_offset
                else:
                    self.redo_at_ms = mono_ms + HOLD_MOMENT_MS
                    self.phase = "redo"
            else:  # redo: the whole batch again (units already written are written twice, #6984)
                if mono_ms < self.redo_at_ms:
                    return
                ts.log.warn(f"Timer enqueue batch of {len(self.batch)} redone after a failure")
                self._start_batch(mono_ms)

    def _start_batch(self, mono_ms: int) -> None:
        latch = CountDownLatch(len(self.batch), mono_ms)
        for req in self.batch:
            req.latch = latch
        self.put_index = 0
        self.phase = "put"


class TimerDequeueGetService:
    """Walks the wheel at the read time; a slot is done (read time moved) only after all its puts finished."""

    name = "timer-dequeue-get"
    INDEX = 2

    def __init__(self, ts: TimerMessageStore, mono_ms: int) -> None:
        self.ts = ts
        self.at_mono_ms = mono_ms
        self.idle = False
        self.phase = "poll"  # or "delete" / "normal": waiting for the slot's delete markers / messages
        self.latch_wait: LatchWait | None = None
        self.normal: list[TimerRequest] = []

    def next_wakeup_ms(self) -> int | None:
        ts = self.ts
        if not ts.running or ts.dequeue_stuck:
            return None
        if self.phase != "poll":
            return self.latch_wait.wakeup_ms()
        if ts.dormancy and ts.dormant():
            return dormant_dequeue_wakeup_ms(ts, ts.mono_now())
        if not self.idle or not ts.idle_skip:
            return self.at_mono_ms
        if ts.read_caught_up():
            return None  # the enqueue put service moves the write time, and the driver asks again then
        changed_ms = ts.write_time_passed_mono_ms + (1 if ts.write_time_passed_after_dequeue_turn else 0)
        return grid_at_or_after(self.at_mono_ms, changed_ms, ts.poll_interval_ms)

    def step(self, mono_ms: int) -> None:
        ts = self.ts
        ts.fast_forward(mono_ms, self.INDEX)
        ts.note_turn(mono_ms, self.INDEX)
        if not ts.running or ts.dequeue_stuck:
            return
        if self.phase == "poll" and mono_ms < self.at_mono_ms:
            return
        self.idle = False
        while True:
            if self.phase == "delete":
                if not self.latch_wait.poll(mono_ms):
                    return
                self.latch_wait = LatchWait(ts, ts.dispatch(self.normal, mono_ms), mono_ms)
                self.normal = []
                self.phase = "normal"
                continue
            if self.phase == "normal":
                if not self.latch_wait.poll(mono_ms):
                    return
                self.phase = "poll"
                self.latch_wait = None
                if not ts.m_read_time_early:
                    ts.move_read_time()
                continue
            if not ts.should_running_dequeue or ts.read_caught_up():
                self.idle = True
                self.at_mono_ms = mono_ms + ts.poll_interval_ms
                return
            lists = ts.read_slot()
            if ts.dequeue_stuck:
                return
            if lists is None:
                self._skip_empty_slots()
                continue
            deletes, self.normal = lists
            if ts.m_read_time_early:
                ts.move_read_time()  # the mutant: the slot counts as done before its puts have finished
            self.latch_wait = LatchWait(ts, ts.dispatch(deletes, mono_ms), mono_ms)
            self.phase = "delete"

    def _skip_empty_slots(self) -> None:
        """moveReadTime over a run of empty slots at once (RocketMQ loops through them without waiting)."""
        ts = self.ts
        p = ts.precision_ms
        read, write = ts.curr_read_time_ms, ts.curr_write_time_ms
        target = ts.timer_wheel.next_used_time_ms(read + p, write)
        if target is None:
            target = write
        steps = max(1, -(-(target - read) // p))
        ts.curr_read_time_ms = read + steps * p
        ts.commit_read_time_ms = ts.curr_read_time_ms


class TimerFlushService(PeriodicService):
    """TimerFlushService: ``flush_round`` every ``timerFlushIntervalMs``; asleep while the timer is dormant (its
    rounds then only checkpoint the moving read time, which ``fast_forward`` accounts)."""

    INDEX = 4

    def __init__(self, ts: TimerMessageStore, mono_ms: int) -> None:
        super().__init__("timer-flush", ts.flush_round, ts.config.timer_flush_interval_ms, 0, mono_ms)
        self.ts = ts

    def next_wakeup_ms(self) -> int | None:
        if self.ts.dormancy and self.ts.dormant():
            return None
        return self._next_ms

    def step(self, mono_ms: int) -> None:
        self.ts.fast_forward(mono_ms, self.INDEX)
        super().step(mono_ms)


class _PutWorker:
    __slots__ = ("req", "inner", "retry_count", "wake_at_ms", "converted")

    def __init__(self) -> None:
        self.req: TimerRequest | None = None
        self.inner: codec.MessageExt | None = None
        self.retry_count = 0
        self.wake_at_ms = 0
        self.converted = False


class TimerDequeuePutMessageService:
    """The dequeue workers: TimerDequeueGetMessageService (read each request's message) and
    TimerDequeuePutMessageService x ``timerPutMessageThreadNum`` (put it back; sleep before a retry).

    Reading and putting take no time, so one worker keeps draining the queue; the other put workers matter
    while a worker sleeps (500 ms x precision / 1 s before a retry, 50 ms after an unknown error)."""

    name = "timer-dequeue-workers"
    INDEX = 3

    def __init__(self, ts: TimerMessageStore, workers: int) -> None:
        self.ts = ts
        self.workers = [_PutWorker() for _ in range(workers)]
        self.busy = 0  # put workers holding a request (sleeping before a retry)
        self.get_index = 0  # position in the head list (a get worker blocked on a full put queue resumes there)

    def next_wakeup_ms(self) -> int | None:
        ts = self.ts
        if not ts.running:
            return None
        if ts.dequeue_put_queue and self.busy < len(self.workers):
            return ts.mono_now()
        if ts.dequeue_get_queue and len(ts.dequeue_put_queue) < DEFAULT_CAPACITY:
            return ts.mono_now()
        if self.busy:
            return min(w.wake_at_ms for w in self.workers if w.req is not None)
        return None

    def step(self, mono_ms: int) -> None:
        ts = self.ts
        ts.fast_forward(mono_ms, self.INDEX)
        ts.note_turn(mono_ms, self.INDEX)
        if not ts.running:
            return
        for worker in self.workers:
            if worker.req is not None and worker.wake_at_ms <= mono_ms:
                self._run(worker, mono_ms)
        while True:
            self._take_puts(mono_ms)
            if not ts.dequeue_get_queue or len(ts.dequeue_put_queue) >= DEFAULT_CAPACITY:
                return
            self._get_messages(mono_ms)

    # --- TimerDequeueGetMessageService ------------------------------------------------------------------------
    def _get_messages(self, mono_ms: int) -> None:
        """Read the messages of the queued lists; unreadable ones are dropped, recalled ones too."""
        ts = self.ts
        while ts.dequeue_get_queue:
            lst = ts.dequeue_get_queue[0]
            while self.get_index < len(lst):
                tr = lst[self.get_index]
                msg = ts.get_message_by_commit_offset(tr.offset_py, tr.size_py)
                if msg is None:
                    ts.probes.probe("timer.get_msg_miss")
                    ts.log.warn(f"dequeue_get_msg_miss: offsetPy {tr.offset_py} sizePy {tr.size_py}; dropped")
                    tr.idempotent_release(mono_ms)
                elif need_delete(tr.magic) and not need_roll(tr.magic):
                    key = msg.properties.get(codec.PROPERTY_TIMER_DEL_UNIQKEY)
                    if key is not None and tr.delete_list is not None:
                        tr.delete_list.add(key)
                    tr.idempotent_release(mono_ms)
                else:
                    uniq = msg.properties.get(codec.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                    real_topic = msg.properties.get(codec.PROPERTY_REAL_TOPIC)
                    if uniq is not None and tr.delete_list and build_delete_key(real_topic, uniq) in tr.delete_list:
                        tr.idempotent_release(mono_ms)  # recalled by a delete marker of the same slot
                    else:
                        if len(ts.dequeue_put_queue) >= DEFAULT_CAPACITY:
                            return  # offer() waits for room
                        tr.msg = msg
                        ts.dequeue_put_queue.append(tr)
                self.get_index += 1
            ts.dequeue_get_queue.popleft()
            self.get_index = 0

    # --- TimerDequeuePutMessageService ------------------------------------------------------------------------
    def _take_puts(self, mono_ms: int) -> None:
        ts = self.ts
        while ts.dequeue_put_queue and self.busy < len(self.workers):
            worker = next(w for w in self.workers if w.req is None)
            worker.req = ts.dequeue_put_queue.popleft()
            worker.inner = None
            worker.converted = False
            worker.retry_count = 0
            self.busy += 1
            self._run(worker, mono_ms)

    def _run(self, w: _PutWorker, mono_ms: int) -> None:
        ts, tr = self.ts, w.req
        roll = need_roll(tr.magic)
        if not w.converted:
            msg_ext = tr.msg
            if tr.enqueue_time_ms == LONG_MAX:
                msg_ext.properties[codec.PROPERTY_TIMER_ENQUEUE_MS] = str(LONG_MAX)  # never enqueued, mark it
            try:
                w.inner = ts.convert(msg_ext, tr.enqueue_time_ms, roll)
            except ValueError as error:
                ts.probes.probe("timer.unknown_error")
                ts.log.warn(f"Unknown error while converting a due timer message: {error}", error)
                if ts.config.timer_skip_unknown_error:
                    self._done(w, mono_ms)
                else:
                    w.wake_at_ms = mono_ms + HOLD_MOMENT_MS
                return
            w.converted = True
        while True:
            code, result, held_ms = ts.do_put(w.inner, roll)
            if result is not None and not roll:
                ts.delivered(w.inner, result, tr.slot_ms)
            if code == PUT_OK:
                break
            if code == PUT_NO_RETRY:
                ts.probes.probe("timer.put_no_retry")
                ts.log.warn(f"Skipping message due to unrecoverable error ({result.status if result else 'delete'}). "
                       f"Msg: {w.inner.uniq_key}")
                break
            w.retry_count += 1
            ts.probes.probe("timer.put_retry")
            if ts.m_drop_after_first_failure or (
                    (ts.m_drop_after_3_retries or not ts.config.timer_enable_retry_until_success)
                    and w.retry_count >= 3):
                ts.probes.probe("timer.put_gave_up")
                ts.log.error(f"Message processing failed after {w.retry_count} retries. Msg: {w.inner.uniq_key}")
                break
            w.wake_at_ms = mono_ms + held_ms + ts.retry_sleep_ms
            return
        self._done(w, mono_ms)

    def _done(self, w: _PutWorker, mono_ms: int) -> None:
        w.req.idempotent_release(mono_ms)
        w.req = w.inner = None
        w.converted = False
        self.busy -= 1
