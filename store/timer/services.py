"""The timer's services: RocketMQ's timer threads as sans-IO services (store/service.py), in list order.

TimerEnqueueGetService (index 0), TimerEnqueuePutService (1), TimerDequeueGetService (2), the dequeue
workers (3) and TimerFlushService (4): same-millisecond steps run in that order. Each step first lets a dormant
timer account the polls it slept through (store/timer/dormancy.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import message as codec
from ..service import PeriodicService
from .dormancy import ENQUEUE_PUT_FIRST_POLL_MS, dormant_dequeue_wakeup_ms, grid_at_or_after
from .requests import (
    DEFAULT_CAPACITY,
    LONG_MAX,
    PUT_NO_RETRY,
    PUT_OK,
    CountDownLatch,
    LatchWait,
    TimerRequest,
    build_delete_key,
    need_delete,
    need_roll,
)

if TYPE_CHECKING:
    from .timer_message_store import TimerMessageStore

ENQUEUE_PUT_NEXT_POLL_MS = 3  # TimerEnqueuePutService: poll(3 ms) for each further request of a batch
ENQUEUE_PUT_MAX_BATCH = 11  # "if (trs.size() > 10) break"
HOLD_MOMENT_MS = 50  # holdMomentForUnknownError


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
            return ts.clock.monotonic_ms() if len(ts.enqueue_put_queue) < DEFAULT_CAPACITY else None
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
                return ts.clock.monotonic_ms()
            if ts.dormancy and ts.dormant():
                return None  # its empty polls are clockwork: fast_forward accounts them
            first = self.poll_start_ms + ENQUEUE_PUT_FIRST_POLL_MS
            if ts.literal_put_polls and not ts.idle_skip:
                return first
            # The first empty poll that changes something: a new queue offset to commit, or a new write time.
            now_mono = ts.clock.monotonic_ms()
            if ts.commit_queue_offset == self.tmp_commit == ts.curr_queue_offset:
                now_mono += max(0, ts.curr_write_time_ms + ts.precision_ms - ts.clock.now_ms())
            if now_mono <= first:
                return first
            return first + -(-(now_mono - first) // ENQUEUE_PUT_FIRST_POLL_MS) * ENQUEUE_PUT_FIRST_POLL_MS
        if phase == "collect":
            if ts.enqueue_put_queue or len(self.batch) >= ENQUEUE_PUT_MAX_BATCH:
                return ts.clock.monotonic_ms()
            return self.last_take_ms + ENQUEUE_PUT_NEXT_POLL_MS
        if phase == "put":
            return ts.clock.monotonic_ms() if len(ts.dequeue_put_queue) < DEFAULT_CAPACITY else None
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
            return dormant_dequeue_wakeup_ms(ts, ts.clock.monotonic_ms())
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
            return ts.clock.monotonic_ms()
        if ts.dequeue_get_queue and len(ts.dequeue_put_queue) < DEFAULT_CAPACITY:
            return ts.clock.monotonic_ms()
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
