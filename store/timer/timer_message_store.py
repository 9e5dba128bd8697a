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

By job: this module is the store (its state, enqueue, dequeue, put-back, checkpoint); ``services.py`` holds the
threads, ``requests.py`` the requests and their latches, ``recovery.py`` the recovery from the timer log, and
``dormancy.py`` a skipping driver's closed-form idle polls.
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
from .dormancy import before_clock_step, fast_forward, is_dormant
from .recovery import recover, recover_and_revise, revise_queue_offset
from .requests import (
    DEFAULT_CAPACITY,
    LONG_MAX,
    MAGIC_DEFAULT,
    MAGIC_DELETE,
    MAGIC_ROLL,
    PUT_NEED_RETRY,
    PUT_NO_RETRY,
    PUT_OK,
    CountDownLatch,
    TimerRequest,
    build_delete_key,  # noqa: F401  (re-exported for older callers)
    need_delete,
    need_roll,
)
from .services import (
    HOLD_MOMENT_MS,
    TimerDequeueGetService,
    TimerDequeuePutMessageService,
    TimerEnqueueGetService,
    TimerEnqueuePutService,
    TimerFlushService,
)
from .timer_checkpoint import TimerCheckpoint
from .timer_log import UNIT_SIZE, TimerLog, encode_unit
from .timer_wheel import TIMER_BLANK_SLOTS, TimerWheel

TIMER_WHEEL_TTL_DAY = 7
DAY_SECS = 24 * 3600
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
        recover(self)

    def recover_and_revise(self, begin_offset: int, check_timer_log: bool) -> int:
        return recover_and_revise(self, begin_offset, check_timer_log)

    def revise_queue_offset(self, process_offset: int) -> int:
        return revise_queue_offset(self, process_offset)

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

    def before_clock_step(self, mono_ms: int, turn: int = 0) -> None:
        """The wall clock steps next: no poll before it may later be evaluated against the stepped clock."""
        before_clock_step(self, mono_ms, turn)

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
            self.last_timer_topic_put_mono_ms = self.clock.monotonic_ms()

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
