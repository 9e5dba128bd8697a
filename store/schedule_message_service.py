"""ScheduleMessageService: delivers delay-level messages from SCHEDULE_TOPIC_XXXX (ROCKETMQ.md 3).

One ``DeliverDelayedMessageTimerTask`` chain per level, each a sans-IO service; the offset table
is persisted to ``config/delayOffset.json`` every ``flushDelayOffsetInterval`` and at shutdown.
Two eras are modelled: 5.3.3 (E5, the default) and 4.9.8 (E3); the historical bugs of the other
eras come back as mutants (store/mutants.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from . import message as codec
from .commit_log import SCHEDULE_TOPIC
from .config_manager import ConfigManager
from .consume_queue import CQ_UNIT
from .data_version import DataVersion
from .fastjson import dumps, loads
from .faults import SITE_SCHEDULE_DELIVER, SITE_SCHEDULE_REBUILD, check_crash, injected
from .log import DISK_DAMAGE, as_log
from .message_store import DefaultMessageStore
from .put_status import PutMessageResult, PutMessageStatus
from .service import PeriodicService, rounds_before

FIRST_DELAY_TIME_MS = 1000
DELAY_FOR_A_WHILE_MS = 100
DELAY_FOR_A_PERIOD_MS = 10_000
DELAY_FOR_A_SLEEP_MS = 10
WAIT_FOR_SHUTDOWN_MS = 5000  # stop()'s awaitTermination on each executor
DELAY_OFFSET_UPDATE_VERSION_STEP = 200
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
SCHEDULE_TOPIC_QUEUE_NUM = 18

# (delivered message, level, due_ms, put result, the scheduled copy's queue offset in its level's queue);
# an asynchronous resend also passes ``resend=True`` (it may land after later messages of its level).
DeliverListener = Callable[..., None]


# What rebuilding a stored delayed message can raise when the record is corrupt (a property missing or not a
# number, an illegal message): the errors Java's catch blocks in executeOnTimeUp are there for. Any other
# exception is a bug in this code and must stop a simulation, not be logged and skipped.
MESSAGE_TIMEUP_ERRORS = (ValueError, KeyError, codec.MessageIllegal)


ALL_LEVELS_POLLED = 1 << 30  # settle_skipped_polls: every level's poll at this millisecond had its turn


def delay_level_to_queue_id(level: int) -> int:
    return level - 1


def queue_id_to_delay_level(queue_id: int) -> int:
    return queue_id + 1


class ScheduleMessageService(ConfigManager):
    def __init__(
        self,
        store: DefaultMessageStore,
        *,
        mutants: frozenset[str] = frozenset(),
        persist_mode: str | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        era4 = store.config.is_era_4
        super().__init__(
            store.disk,
            "config/delayOffset.json",
            faults=store.faults,
            persist_mode=persist_mode or ("4.x" if era4 else "5.3.3"),
        )
        self.store = store
        self.clock = store.clock
        self.era4 = era4
        self.log = as_log(log or store.log)
        self.offset_table: dict[int, int] = {}
        self.delay_level_table_ms = dict(store.delay_level_table_ms)
        self.max_delay_level = max(self.delay_level_table_ms)
        self.data_version = DataVersion.now(store.clock)
        self._updates_since_version = 0
        self.started = False
        self.async_deliver = store.config.enable_schedule_async_deliver
        self.max_pending_limit = store.config.schedule_async_deliver_max_pending_limit
        self.max_resend_num_to_block = store.config.schedule_async_deliver_max_resend_num_2_blocked
        self.deliver_listeners: list[DeliverListener] = []
        self.tasks: dict[int, DeliverDelayedMessageTimerTask] = {}
        self.put_result_tasks: dict[int, HandlePutResultTask] = {}
        self.persist_service: PeriodicService | None = None
        # Idle skipping (a driver's choice, not RocketMQ's): an idle level sleeps until its next poll that
        # can see a change, on the same 100 ms grid, instead of polling; the history stays identical.
        self.idle_skip = False
        # A driver that keeps turns within a millisecond (no shuffled ties): a level idle for want of data sees data
        # stored after its turn only at its next poll, and skipped polls are accounted across levels in time order,
        # both as polling does. Without: each level accounts its own skipped polls at its next step.
        self.exact_turns = True
        # Mutants, read once.
        self.m_skip_failed_delivery = "skip_failed_delivery" in mutants
        self.m_no_correct_delay_offset = "no_correct_delay_offset" in mutants
        self.m_no_persist_at_shutdown = "no_persist_at_shutdown" in mutants
        self.m_offset_from_task_start = "offset_from_task_start" in mutants
        self.m_drop_on_exception = "drop_on_exception" in mutants
        self.m_no_correct_deliver_timestamp = "no_correct_deliver_timestamp" in mutants
        self.m_correct_delay_offset_skips_missing_cq = "correct_delay_offset_skips_missing_cq" in mutants
        self.m_resend_exception_escapes = "resend_exception_escapes" in mutants
        self.m_error_ends_level_task = "error_ends_level_task" in mutants
        self.m_not_due_offset_plus_one = "not_due_offset_plus_one" in mutants
        self.m_next_offset_at_last_put = "next_offset_at_last_put" in mutants
        self.m_correct_delay_offset_past_max = "correct_delay_offset_past_max" in mutants
        self.m_correct_delay_offset_to_min = "correct_delay_offset_to_min" in mutants
        self._encoded_key: tuple | None = None  # the last encode's input and text (encode is pure in them)
        self._encoded = ""
        self._template_key: tuple | None = None  # 5.x: the last table's text, cut around the dataVersion's numbers
        self._template: tuple[str, str, str, str] | None = None

    # --- ConfigManager -------------------------------------------------------------------
    def encode(self, pretty: bool = True) -> str:
        table = {level: self.offset_table[level] for level in sorted(self.offset_table)}
        dv = self.data_version
        key = (pretty, self.era4, tuple(table.items()), dv.timestamp_ms, dv.counter, dv.state_version)
        if key == self._encoded_key:  # the 10 s persist mostly writes what it wrote last time
            return self._encoded
        if self.era4:
            text = dumps({"offsetTable": table}, pretty=pretty)
        else:
            # The table changes only when a level moves, the dataVersion every 200 polls of a waiting level: the
            # table's text is written once and the version's three numbers are put into it.
            if key[:3] != self._template_key:
                self._template_key, self._template = key[:3], _dv_template(table, pretty)
            if self._template is None:
                text = dumps({"dataVersion": dv.to_json("5.x"), "offsetTable": table}, pretty=pretty)
            else:
                head, after_counter, after_state, tail = self._template
                text = f"{head}{dv.counter}{after_counter}{dv.state_version}{after_state}{dv.timestamp_ms}{tail}"
        self._encoded_key, self._encoded = key, text
        return text

    def decode(self, text: str) -> None:
        obj = loads(text)
        if not isinstance(obj, dict):
            raise ValueError("delayOffset.json is not an object")
        table = obj.get("offsetTable") or {}
        self.offset_table.update({int(level): int(offset) for level, offset in table.items()})
        if "dataVersion" in obj:
            self.data_version = DataVersion.from_json(obj["dataVersion"])

    # --- load / start / stop -------------------------------------------------------------
    def load(self) -> bool:
        ok = super().load()
        if ok and not self.m_no_correct_delay_offset:
            self.correct_delay_offset()
        return ok

    def correct_delay_offset(self) -> None:
        """Clamp each level's offset into its consume queue's [min, max] (4.9.2+, #1869).

        Java walks the level table (levels only in the file are ignored) and finds *or creates* each level's
        queue, so an offset stored for a level whose queue is gone (a store rollback, a lost directory) is
        clamped to 0; skipping it would later skip every message below the stale offset."""
        for level in sorted(self.delay_level_table_ms):
            offset = self.offset_table.get(level)
            if offset is None:
                continue
            queue_id = delay_level_to_queue_id(level)
            if self.m_correct_delay_offset_skips_missing_cq:
                cq = self.store.get_consume_queue(SCHEDULE_TOPIC, queue_id)
                if cq is None:
                    continue
            else:
                cq = self.store.find_consume_queue(SCHEDULE_TOPIC, queue_id)
            low, high = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
            corrected = low if offset < low else high if offset > high else offset
            if self.m_correct_delay_offset_past_max and offset > high:
                corrected = high + 1  # the mutant's off-by-one: one past the queue's max offset
            if self.m_correct_delay_offset_to_min and offset > high:
                corrected = low  # the mutant's swapped branches
            if corrected != offset:
                self.probes.probe("delay.correct_delay_offset")
                self.log.error(f"schedule CQ offset invalid, level {level}: correct delay offset from {offset} to {corrected}", fault_site=DISK_DAMAGE)
                self.offset_table[level] = corrected

    def start(self, mono_ms: int) -> None:
        self.load()
        self.started = True
        for level in sorted(self.delay_level_table_ms):
            offset = self.offset_table.get(level, 0)
            self.tasks[level] = DeliverDelayedMessageTimerTask(self, level, offset, mono_ms + FIRST_DELAY_TIME_MS)
            if self.async_deliver:
                self.put_result_tasks[level] = HandlePutResultTask(self, level, mono_ms + FIRST_DELAY_TIME_MS)
        # scheduleAtFixedRate(persist, 10000, flushDelayOffsetInterval): the first run is always 10 s after start.
        cfg = self.store.config
        self.persist_service = PeriodicService("delay-offset-persist", lambda _m: self._persist_round(),
                                               cfg.flush_delay_offset_interval_ms,
                                               cfg.flush_delay_offset_first_delay_ms, mono_ms)
        # Deferred by a driver (when it can prove nobody reads the file in between), only the last two rounds
        # before a reader write; the earlier ones leave their persist event. Their skipped polls are accounted in
        # closed form by the next round that settles, at the polls' own times.
        self.persist_service.rounds_kept = 2
        self.persist_service.overwritten_run = lambda first_ms, every_ms, count: self.persist_overwritten(
            range(first_ms, first_ms + count * every_ms, every_ms))

    def _persist_round(self) -> None:
        self.settle_skipped_polls(ALL_LEVELS_POLLED)
        self.persist()

    def shutdown(self) -> None:
        if not self.started:
            return
        self.settle_skipped_polls(0)
        self.started = False
        for task in self.put_result_tasks.values():
            task.finish_at_shutdown(self.clock.monotonic_ms())
        if not self.m_no_persist_at_shutdown:
            self.persist()

    @property
    def services(self) -> list:
        out: list = [self.tasks[level] for level in sorted(self.tasks)]
        out += [self.put_result_tasks[level] for level in sorted(self.put_result_tasks)]
        if self.persist_service is not None:
            out.append(self.persist_service)
        return out

    # --- the table -----------------------------------------------------------------------
    def update_offset(self, level: int, offset: int) -> None:
        self.offset_table[level] = offset
        self._updates_since_version += 1
        if self._updates_since_version % DELAY_OFFSET_UPDATE_VERSION_STEP == 0:
            self.data_version.next_version(self.clock)

    def settle_skipped_polls(self, polled_below_level: int, own_level: int | None = None) -> None:
        """5.x: the not-due polls that idle levels slept through up to now, each an ``updateOffset``, accounted in
        time order across levels, so that the dataVersion steps as often and at the time polling would have stepped
        it. At this millisecond only the levels below ``polled_below_level`` had their turn (a level's own step passes
        its level; the put-result handlers and the persist, which run after every level, ALL_LEVELS_POLLED; a
        shutdown or a clock step, which run before them, 0). Whoever reads the counter or the version settles first.
        Without ``exact_turns`` only a level's own step (``own_level``) settles, and only its own polls."""
        if self.era4 or not self.idle_skip:
            return
        if self.exact_turns:
            tasks = self.tasks.items()
        elif own_level is not None:
            tasks = ((own_level, self.tasks[own_level]),)
        else:
            return
        now = self.clock.monotonic_ms()
        polls: list[tuple[int, int]] = []  # (first poll's mono ms, polls) per level
        for level, task in tasks:
            if task.idle is None or task.idle[0] != "due" or task.dead:
                continue
            # never the poll that finds the head due: that one is a real step (under shuffled ties it may come after
            # the settling service within this millisecond)
            limit = now + 1 if level < polled_below_level else now
            if task.at_mono_ms >= limit:
                continue
            limit = min(limit, task.due_poll_ms())
            count = rounds_before(task.at_mono_ms, DELAY_FOR_A_WHILE_MS, limit)
            if count:
                polls.append((task.at_mono_ms, count))
                task.at_mono_ms += count * DELAY_FOR_A_WHILE_MS
        if polls:
            self._account_polls(polls, now)

    def _account_polls(self, polls: list[tuple[int, int]], now_mono: int) -> None:
        """Count the polls into the version counter; a version step is stamped with its poll's time, found by
        bisecting the merged poll times (only the last step's time survives)."""
        before = self._updates_since_version
        after = self._updates_since_version = before + sum(count for _, count in polls)
        steps = after // DELAY_OFFSET_UPDATE_VERSION_STEP - before // DELAY_OFFSET_UPDATE_VERSION_STEP
        if not steps:
            return
        nth = after // DELAY_OFFSET_UPDATE_VERSION_STEP * DELAY_OFFSET_UPDATE_VERSION_STEP - before  # 1-based

        def polls_by(t: int) -> int:
            return sum(min(count, max(0, (t - first) // DELAY_FOR_A_WHILE_MS + 1)) for first, count in polls)

        lo = min(first for first, _ in polls)
        hi = max(first + (count - 1) * DELAY_FOR_A_WHILE_MS for first, count in polls)
        while lo < hi:
            mid = (lo + hi) // 2
            if polls_by(mid) >= nth:
                hi = mid
            else:
                lo = mid + 1
        self.data_version.timestamp_ms = self.clock.now_ms() - (now_mono - lo)
        self.data_version.counter += steps

    def compute_deliver_timestamp(self, level: int, store_timestamp: int) -> int:
        return store_timestamp + self.delay_level_table_ms.get(level, 1000)

    def correct_deliver_timestamp(self, now_ms: int, deliver_ms: int, level: int) -> int:
        """A deliver time more than one level-delay ahead (clock stepped back) means: deliver now."""
        if self.m_no_correct_deliver_timestamp:
            return deliver_ms
        max_ms = now_ms + self.delay_level_table_ms.get(level, 1000)
        if deliver_ms > max_ms:
            self.probes.probe("delay.correct_deliver_timestamp")
            return now_ms
        return deliver_ms

    # --- building and putting the real message ------------------------------------------
    def message_timeup(self, msg_ext: codec.MessageExt) -> codec.MessageExt:
        """The message to put back: the property *string* still carries DELAY/REAL_TOPIC/REAL_QID (1.2)."""
        if check_crash(self.store.faults, SITE_SCHEDULE_REBUILD, msg_ext.topic):
            raise injected(ValueError("messageTimeup: the message could not be rebuilt (injected fault)"),
                           SITE_SCHEDULE_REBUILD)
        props = msg_ext.properties  # the same map object, as in Java
        # Positional, in MessageExt's field order (keywords cost three times as much): topic, body, queue_id,
        # flag, properties, properties_string, sys_flag, born_timestamp, born_host, store_host, reconsume_times.
        inner = codec.MessageExt(msg_ext.topic, msg_ext.body, 0, msg_ext.flag, props,
                                 codec.message_properties_to_string(props), msg_ext.sys_flag, msg_ext.born_timestamp,
                                 msg_ext.born_host, msg_ext.store_host, msg_ext.reconsume_times)
        inner.tags_code = codec.tags_string_to_tags_code(props.get(codec.PROPERTY_TAGS))
        props[codec.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        props.pop(codec.PROPERTY_DELAY_TIME_LEVEL, None)
        if not self.era4:
            props.pop(codec.PROPERTY_TIMER_DELIVER_MS, None)
            props.pop(codec.PROPERTY_TIMER_DELAY_SEC, None)
        inner.topic = props.get(codec.PROPERTY_REAL_TOPIC) or ""
        inner.queue_id = int(props[codec.PROPERTY_REAL_QUEUE_ID])  # KeyError/ValueError: the exception path
        return inner

    def put_due_message(self, inner: codec.MessageExt) -> PutMessageResult:
        if check_crash(self.store.faults, SITE_SCHEDULE_DELIVER, inner.topic):
            return PutMessageResult(PutMessageStatus.OS_PAGE_CACHE_BUSY, fault_site=SITE_SCHEDULE_DELIVER)
        return self.store.put_message(inner)

    def _delivered(self, inner: codec.MessageExt, level: int, due_ms: int, result: PutMessageResult,
                   queue_offset: int, resend: bool = False) -> None:
        extra = {"resend": True} if resend else {}
        for listener in self.deliver_listeners:
            listener(inner, level, due_ms, result, queue_offset, **extra)


class DeliverDelayedMessageTimerTask:
    """One level's self-rescheduling task: scan the level's queue, put back what is due."""

    WAKE_FLOOR = "at_mono_ms"  # every wake-up it names is at or after it (see PeriodicService.WAKE_FLOOR)

    def __init__(self, svc: ScheduleMessageService, level: int, offset: int, at_mono_ms: int) -> None:
        self.svc = svc
        self.level = level
        self.name = f"schedule-level-{level}"
        self.offset = offset
        self.at_mono_ms = at_mono_ms
        self._now_mono = at_mono_ms
        self.idle: tuple | None = None  # ("data",) or ("due", tags_code): what the last poll waited for
        self.dead = False  # mutant error_ends_level_task: an Error ended this level's self-rescheduling chain
        self._due_poll: tuple | None = None  # (idle state, wall - mono offset, due poll): due_poll_ms's last answer
        if svc.idle_skip and svc.exact_turns:  # a driver asks catch_up(now, turn_passed) before next_wakeup_ms
            self.catch_up = self._catch_up_data_idle

    def next_wakeup_ms(self) -> int | None:
        svc = self.svc
        if not svc.started or self.dead:
            return None
        if not svc.idle_skip or self.idle is None:
            return self.at_mono_ms
        now_mono = svc.clock.monotonic_ms()
        if self.idle[0] == "data":
            cq = svc.store.get_consume_queue(SCHEDULE_TOPIC, delay_level_to_queue_id(self.level))
            # A queue that appears below the offset changes the next poll too: it resets to the queue's max.
            if cq is None or cq.get_max_offset_in_queue() == self.offset:
                return None
            target = now_mono
        else:
            return self.due_poll_ms()
        return self._poll_at_or_after(target)

    def due_poll_ms(self) -> int:
        """Idle on a not-due head: the first poll that finds it due (a real step, never a skipped poll). The same
        until the idle state or the wall clock's offset from the monotonic one changes, unless the deliver time was
        corrected (a clock stepped back): then it moves with the clock."""
        svc = self.svc
        now_wall, now_mono = svc.clock.now_ms(), svc.clock.monotonic_ms()
        cached = self._due_poll
        if cached is not None and cached[0] is self.idle and cached[1] == now_wall - now_mono:
            return cached[2]
        deliver_ms = svc.correct_deliver_timestamp(now_wall, self.idle[1], self.level)
        due_poll = self._poll_at_or_after(now_mono + max(0, deliver_ms - now_wall))
        if deliver_ms == self.idle[1]:
            self._due_poll = (self.idle, now_wall - now_mono, due_poll)
        return due_poll

    def _poll_at_or_after(self, target: int) -> int:
        return self.at_mono_ms + rounds_before(self.at_mono_ms, DELAY_FOR_A_WHILE_MS, target) * DELAY_FOR_A_WHILE_MS

    def _catch_up_data_idle(self, mono_ms: int, turn_passed: bool) -> None:
        """A level idle for want of data slept through its polls before ``mono_ms`` (and at it, once its turn
        passed): data arriving now is first seen by the next poll, as polling would see it. (Polls that wait for
        a due time are counted by ``settle_skipped_polls``; their wake-up is computed ahead, on the grid.)"""
        if self.idle is None or self.idle[0] != "data":
            return
        self.at_mono_ms = self._poll_at_or_after(mono_ms + 1 if turn_passed else mono_ms)

    def step(self, mono_ms: int) -> None:
        if mono_ms < self.at_mono_ms or not self.svc.started or self.dead:
            return
        self.svc.settle_skipped_polls(self.level, self.level)
        self._now_mono = mono_ms
        self.idle = None
        try:
            self.execute_on_timeup()
        except MESSAGE_TIMEUP_ERRORS as error:  # run(): what escapes executeOnTimeup (anything else is a bug)
            self.svc.log.error(f"ScheduleMessageService, executeOnTimeup exception: {error!r}", error, DISK_DAMAGE)
            self.schedule_next(self.offset, DELAY_FOR_A_PERIOD_MS)

    def schedule_next(self, offset: int, delay_ms: int) -> None:
        self.offset = offset
        self.at_mono_ms = self._now_mono + delay_ms

    def execute_on_timeup(self) -> None:
        svc, level = self.svc, self.level
        store = svc.store
        cq = store.get_consume_queue(SCHEDULE_TOPIC, delay_level_to_queue_id(level))
        if cq is None:
            self.idle = ("data",)
            self.schedule_next(self.offset, DELAY_FOR_A_WHILE_MS)
            return
        buf = cq.get_index_buffer(self.offset)
        if buf is None:
            reset = self.offset
            if cq.get_min_offset_in_queue() > self.offset:
                reset = cq.get_min_offset_in_queue()
            elif cq.get_max_offset_in_queue() < self.offset:
                reset = cq.get_max_offset_in_queue()
            if reset != self.offset:
                svc.probes.probe("delay.cq_offset_reset")
                svc.log.error(f"schedule CQ offset invalid. offset={self.offset}, level={level}, reset to {reset}", fault_site=DISK_DAMAGE)
            else:
                self.idle = ("data",)
            self.schedule_next(reset, DELAY_FOR_A_WHILE_MS)
            return

        next_offset = self.offset
        scanned = 0
        try:
            for phy, size, tags_code in CQ_UNIT.iter_unpack(buf):
                if not svc.started:
                    break
                curr_offset = self.offset + scanned
                scanned += 1
                now_ms = svc.clock.now_ms()
                deliver_ms = svc.correct_deliver_timestamp(now_ms, tags_code, level)
                # E4/E5 compute nextOffset = currOffset + 1 before delivering; E3 keeps the unit's index.
                next_offset = curr_offset if svc.era4 else curr_offset + 1
                if deliver_ms - now_ms > 0:
                    if scanned == 1:
                        self.idle = ("due", tags_code)
                    self.schedule_next(curr_offset, DELAY_FOR_A_WHILE_MS)
                    if not svc.era4:
                        svc.update_offset(level, curr_offset + (1 if svc.m_not_due_offset_plus_one else 0))
                    return
                msg_ext = store.look_message_by_offset(phy, size)
                if msg_ext is None:
                    svc.probes.probe("delay.message_unreadable")
                    continue  # commit log expired / unreadable: skipped silently
                try:
                    inner = svc.message_timeup(msg_ext)
                except MESSAGE_TIMEUP_ERRORS as error:
                    svc.probes.probe("delay.timeup_error")
                    if not svc.m_drop_on_exception:
                        raise
                    svc.log.error(f"messageTimeup execute error, drop it. msgId={msg_ext.uniq_key} {error!r}", error,
                                  DISK_DAMAGE)
                    continue
                if inner.topic == RMQ_SYS_TRANS_HALF_TOPIC:
                    svc.log.error(f"[BUG] the real topic of schedule msg is {inner.topic}, discard the msg")
                    continue
                if svc.async_deliver:
                    delivered = self._async_deliver(inner, curr_offset, phy, size, tags_code)
                else:
                    delivered = self._sync_deliver(inner, curr_offset, tags_code)
                if not delivered:
                    retry_at = curr_offset + 1 if (svc.m_skip_failed_delivery and not svc.era4) else curr_offset
                    svc.probes.probe("delay.deliver_failed_skip" if retry_at != curr_offset
                                     else "delay.deliver_failed_retry")
                    self.schedule_next(retry_at, DELAY_FOR_A_WHILE_MS)
                    return
            next_offset = self.offset + scanned
            if svc.m_next_offset_at_last_put and scanned >= 2:
                next_offset -= 1
        except MESSAGE_TIMEUP_ERRORS as error:
            if svc.m_error_ends_level_task:
                # < 5.3.0 (#8124): run() caught only Exception; an Error left it and the chain was never rescheduled.
                svc.log.error(f"level {level} task ended by {error!r}", error, DISK_DAMAGE)
                self.dead = True
                return
            # E3: nextOffset still names the failing unit (retried); E4/E5: it is already past it (skipped).
            svc.log.error(f"ScheduleMessageService, messageTimeup execute error, level {level} offset={next_offset}: "
                          f"{error!r}", error, DISK_DAMAGE)
        self.schedule_next(next_offset, DELAY_FOR_A_WHILE_MS)

    def _recorded_offset(self, curr_offset: int) -> int:
        return (self.offset if self.svc.m_offset_from_task_start else curr_offset) + 1

    def _sync_deliver(self, inner: codec.MessageExt, curr_offset: int, due_ms: int) -> bool:
        result = self.svc.put_due_message(inner)
        self.svc._delivered(inner, self.level, due_ms, result, curr_offset)
        if result.is_ok:
            self.svc.update_offset(self.level, self._recorded_offset(curr_offset))
            return True
        self.svc.log.warn(f"ScheduleMessageService, a message time up, but reput it failed, level {self.level} "
                     f"offset {curr_offset}: {result.status}")
        return False

    def _async_deliver(self, inner: codec.MessageExt, curr_offset: int, phy: int, size: int, due_ms: int) -> bool:
        svc = self.svc
        pending = svc.put_result_tasks[self.level].pending
        if len(pending) > svc.max_pending_limit:
            svc.log.warn(f"Asynchronous deliver triggers flow control, level {self.level}")
            return False
        if pending and pending[0].resend_count > svc.max_resend_num_to_block:
            svc.log.warn(f"Asynchronous deliver block, level {self.level}")
            return False
        result = svc.put_due_message(inner)
        svc._delivered(inner, self.level, due_ms, result, curr_offset)
        pending.append(PutResultProcess(self._recorded_offset(curr_offset) - 1, phy, size, due_ms, result.is_ok))
        return True


class PutResultProcess:
    """One asynchronous delivery waiting for HandlePutResultTask (status SUCCESS/EXCEPTION/SKIP)."""

    __slots__ = ("offset", "physic_offset", "physic_size", "due_ms", "status", "resend_count", "resend_at_mono")

    def __init__(self, offset: int, physic_offset: int, physic_size: int, due_ms: int, ok: bool) -> None:
        self.offset = offset
        self.physic_offset = physic_offset
        self.physic_size = physic_size
        self.due_ms = due_ms
        self.status = "SUCCESS" if ok else "EXCEPTION"
        self.resend_count = 0
        self.resend_at_mono: int | None = None


_DV_MARKS = (-7_313_131_313_131_313_131, -7_323_232_323_232_323_232, -7_333_333_333_333_333_333)  # no offset's


def _dv_template(table: dict, pretty: bool) -> tuple[str, str, str, str] | None:
    """delayOffset.json (5.x) for ``table`` cut at its dataVersion's counter, stateVersion and timestamp (written
    with marks no offset takes), or None when a mark is not found exactly once."""
    counter, state, timestamp = (str(mark) for mark in _DV_MARKS)
    marked = DataVersion(timestamp_ms=_DV_MARKS[2], counter=_DV_MARKS[0], state_version=_DV_MARKS[1])
    text = dumps({"dataVersion": marked.to_json("5.x"), "offsetTable": table}, pretty=pretty)
    if any(text.count(mark) != 1 for mark in (counter, state, timestamp)):
        return None
    head, rest = text.split(counter)
    after_counter, rest = rest.split(state)
    after_state, tail = rest.split(timestamp)
    return head, after_counter, after_state, tail


class HandlePutResultTask:
    """Every 10 ms: commit finished async puts in CQ order; resend failed ones with back-off.

    ``doResend`` sleeps ``min(resendCount * 100, 60 s)`` on the handler's own thread, so nothing behind the
    head moves meanwhile; a failed resend loops on the head at once (the next sleep starts right away)."""

    def __init__(self, svc: ScheduleMessageService, level: int, at_mono_ms: int) -> None:
        self.svc = svc
        self.level = level
        self.name = f"schedule-put-result-{level}"
        self.pending: deque[PutResultProcess] = deque()
        self.at_mono_ms = at_mono_ms
        self.dead = False  # mutant resend_exception_escapes: an exception killed this level's handler chain

    def next_wakeup_ms(self) -> int | None:
        svc = self.svc
        if not svc.started or self.dead:
            return None
        if not svc.idle_skip:
            return self.at_mono_ms
        if not self.pending:
            return None
        target = max(svc.clock.monotonic_ms(), self.pending[0].resend_at_mono or 0)
        if target <= self.at_mono_ms:
            return self.at_mono_ms
        return self.at_mono_ms + -(-(target - self.at_mono_ms) // DELAY_FOR_A_SLEEP_MS) * DELAY_FOR_A_SLEEP_MS

    def finish_at_shutdown(self, mono_ms: int) -> None:
        """stop() shuts the handle executor down and awaits it (5 s) before persisting: a ScheduledThreadPoolExecutor
        still runs the task already scheduled (executeExistingDelayedTasksAfterShutdownPolicy defaults to true),
        and one asleep in doResend resends when its sleep ends. That run applies the SUCCESS heads and returns at an
        EXCEPTION head, since isStarted() is false; it schedules nothing. (Explore: without it a graceful restart
        re-delivered the units behind a head waiting for its resend.)"""
        while not self.dead:
            head = self._apply_finished_heads()
            if head is None or head.resend_at_mono is None or head.resend_at_mono - mono_ms > WAIT_FOR_SHUTDOWN_MS:
                return
            head.resend_at_mono = None
            self._resend(head)  # the sleep ends within awaitTermination: the resend runs, the loop goes on

    def step(self, mono_ms: int) -> None:
        if mono_ms < self.at_mono_ms or not self.svc.started or self.dead:
            return
        self.svc.settle_skipped_polls(ALL_LEVELS_POLLED)
        self.at_mono_ms = mono_ms + DELAY_FOR_A_SLEEP_MS
        while (head := self._apply_finished_heads()) is not None:
            # EXCEPTION: doResend, which first sleeps min(resendCount * 100, 60 s)
            if head.resend_at_mono is None:
                self._start_sleep(head, mono_ms)
            if mono_ms < head.resend_at_mono:
                return
            head.resend_at_mono = None
            self._resend(head)
            if self.dead:
                return

    def _apply_finished_heads(self) -> PutResultProcess | None:
        """The run's loop over the queue's head: SUCCESS moves the table past it, SKIP drops it; the first head still
        EXCEPTION is returned (None when the queue is empty)."""
        while self.pending:
            head = self.pending[0]
            if head.status == "SUCCESS":
                self.svc.update_offset(self.level, head.offset + 1)
            elif head.status != "SKIP":
                return head
            self.pending.popleft()
        return None

    def _start_sleep(self, head: PutResultProcess, mono_ms: int) -> None:
        """4.9.8 sleeps ``resendCount++ * 100``, 5.x ``incrementAndGet() * 100``; the count moves before the sleep."""
        count = head.resend_count if self.svc.era4 else head.resend_count + 1
        head.resend_count += 1
        head.resend_at_mono = mono_ms + min(count * 100, 60_000)

    def _resend(self, head: PutResultProcess) -> None:
        """PutResultProcess.doResend after its sleep: look the message up again and put it synchronously.
        Whatever the rebuild or the put throws is caught and leaves the head EXCEPTION (retried)."""
        svc = self.svc
        msg_ext = svc.store.look_message_by_offset(head.physic_offset, head.physic_size)
        if msg_ext is None:  # need2Skip: resendCount > 2 x scheduleAsyncDeliverMaxResendNum2Blocked
            head.status = "SKIP" if head.resend_count > 2 * svc.max_resend_num_to_block else "EXCEPTION"
            svc.log(f"ScheduleMessageService resend not found message, level {self.level} offset {head.offset}")
            return
        svc.probes.probe("delay.async_resend")
        try:
            inner = svc.message_timeup(msg_ext)
        except (KeyError, ValueError) as error:  # what messageTimeup can throw here (REAL_QID, a corrupt read)
            svc.probes.probe("delay.async_resend_error")
            head.status = "EXCEPTION"
            svc.log(f"Resend message error, level {self.level} offset {head.offset}: {error!r}")
            if svc.m_resend_exception_escapes:
                # The exception leaves run(): the executor never reschedules this level's handler.
                self.dead = True
            return
        result = svc.put_due_message(inner)
        svc._delivered(inner, self.level, head.due_ms, result, head.offset, resend=True)
        head.status = "SUCCESS" if result.is_ok else "EXCEPTION"
