"""DefaultMessageStore: the facade over commit log, consume queues, checkpoint and their services.

Lifecycle as RocketMQ's (2.3): ``load`` (abort file decides normal vs abnormal recovery),
``start`` (re-dispatch from the consume queues' end, create the abort file), ``shutdown``
(final flushes; the abort file goes only when everything was dispatched).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from . import message as codec
from .checkpoint import StoreCheckpoint
from .clock import Clock
from .commit_log import CommitLog
from .config import SYNC_FLUSH, MessageStoreConfig
from .consume_queue import CQ_STORE_UNIT_SIZE, CQ_UNIT, ConsumeQueue
from .delay_level import parse_delay_level
from .disk import Disk
from .faults import NO_FAULTS, FaultInjector
from .log import DISK_DAMAGE, StoreLog, as_log
from .mapped_file import StoreLoadError
from .probes import NO_PROBES
from .put_status import PutMessageResult, PutMessageStatus
from .service import PeriodicService

ABORT_FILE = "abort"
CONSUME_QUEUE_DIR = "consumequeue"

PutHook = Callable[[codec.MessageExt], "PutMessageResult | None"]


class GetMessageStatus:
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class GetMessageResult:
    status: str
    next_begin_offset: int
    min_offset: int = 0
    max_offset: int = 0
    messages: list[codec.MessageExt] = field(default_factory=list)



def _just_indexed(cq: ConsumeQueue, req: codec.DispatchRequest) -> bool:
    """The put that just ran appended this copy's unit at its own queue offset (the common case: no read)."""
    pos = req.consume_queue_offset * CQ_STORE_UNIT_SIZE
    return cq.last_unit_pos == pos and pos >= cq.min_logic_offset


def _indexes(cq: ConsumeQueue, req: codec.DispatchRequest) -> bool:
    """Some unit points at the dispatched copy: at its queue offset, or lower (a unit appended after stale
    units lands below the offset its record carries). Units ascend by physical offset, so the scan is short."""
    index = min(req.consume_queue_offset, cq.get_max_offset_in_queue() - 1)
    while (unit := cq.get_unit(index)) is not None and unit[0] >= req.commit_log_offset:
        if unit[0] == req.commit_log_offset and unit[1] == req.msg_size:
            return True
        index -= 1
    return False


class DefaultMessageStore:
    probes = NO_PROBES  # the run's ProbeCollector when the world attaches one

    def __init__(
        self,
        disk: Disk,
        config: MessageStoreConfig | None = None,
        clock: Clock | None = None,
        faults: FaultInjector = NO_FAULTS,
        log: StoreLog | Callable[[str], None] | None = None,
        mutants: frozenset[str] = frozenset(),
    ) -> None:
        from .driver import SystemClock  # the live default; the simulator and tests inject theirs

        self.disk = disk
        self.config = config or MessageStoreConfig()
        self.clock = clock or SystemClock()
        self.faults = faults
        self.log = as_log(log, "DefaultMessageStore")
        self.mutants = frozenset(mutants)
        self.m_overflow_one_plus_one = "overflow_one_plus_one" in self.mutants
        self.m_next_begin_plus_one = "next_begin_plus_one" in self.mutants
        # mutant "delay_level_off_by_one": parseDelayLevel's ``level = i`` (0-based)
        self.delay_level_table_ms = parse_delay_level(self.config.message_delay_level,
                                                      from_zero="delay_level_off_by_one" in self.mutants)
        self.checkpoint: StoreCheckpoint | None = None
        self.commit_log: CommitLog | None = None
        self.consume_queue_table: dict[str, dict[int, ConsumeQueue]] = {}
        self.put_hooks: list[PutHook] = []  # 5.x put hooks (delay / timer routing), first answer wins
        self.put_listeners: list[Callable[[codec.MessageExt, PutMessageResult], None]] = []
        self.arriving_listeners: list[Callable[[str, int, int], None]] = []  # (topic, queue_id, next queue offset)
        # A dispatched message its queue does not index: its unit's place holds another (stale or junk) unit, and
        # the put was skipped as "built repeatedly". Only after a power failure; then no pull can reach the copy.
        self.unindexed_listeners: list[Callable[[codec.DispatchRequest, tuple[int, int, int] | None], None]] = []
        self.new_message_listener: Callable[[], None] | None = None  # pokes the reput driver
        self.last_exit_ok = True
        self.load_error = ""
        self.shutdown_flag = True
        self.writeable = True
        self.reput_from_offset = 0
        self.services: list = []
        # Consume queues written since their last complete flush, by (topic, queue id): what a flush round visits.
        self.dirty_consume_queues: dict[tuple[str, int], ConsumeQueue] = {}
        self.cq_flush_due = False  # some dirty queue has enough for a light (non-thorough) flush round

    # --- lifecycle -----------------------------------------------------------------------
    def load(self) -> bool:
        self.last_exit_ok = not self.disk.exists(ABORT_FILE)
        self.checkpoint = StoreCheckpoint(self.disk)
        self.commit_log = CommitLog(
            self.disk, self.config, self.clock, self.faults, self.checkpoint, self.delay_level_table_ms, self.log,
            mutants=self.mutants,
        )
        self.commit_log.probes = self.probes  # made at load: after the world attached the run's collector
        try:
            self.commit_log.load()
            self._load_consume_queues()
        except StoreLoadError as error:
            self.load_error = str(error)
            return False
        self._recover(self.last_exit_ok)
        return True

    def _load_consume_queues(self) -> None:
        for topic in self.disk.listdir(CONSUME_QUEUE_DIR):
            for qid_name in self.disk.listdir(f"{CONSUME_QUEUE_DIR}/{topic}"):
                if not qid_name.lstrip("-").isdigit():
                    continue
                cq = self._new_consume_queue(topic, int(qid_name))
                cq.load()

    def _new_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = ConsumeQueue(self.disk, topic, queue_id, self.config.consume_queue_file_size, log=self.log)
        self.consume_queue_table.setdefault(topic, {})[queue_id] = cq
        return cq

    def _all_consume_queues(self) -> list[ConsumeQueue]:
        return [
            self.consume_queue_table[t][q]
            for t in sorted(self.consume_queue_table)
            for q in sorted(self.consume_queue_table[t])
        ]

    def _recover(self, last_exit_ok: bool) -> None:
        max_phy_of_cq = -1
        for cq in self._all_consume_queues():
            cq.recover()
            max_phy_of_cq = max(max_phy_of_cq, cq.max_physic_offset)
        if not last_exit_ok:
            self.probes.probe("store.recover_abnormally")
        recover = self.commit_log.recover_normally if last_exit_ok else self.commit_log.recover_abnormally
        recover(max_phy_of_cq, self._dispatch, self._truncate_dirty_logic_files, self._destroy_logics)
        self._recover_topic_queue_table()

    def _truncate_dirty_logic_files(self, phy_offset: int) -> None:
        self.probes.probe("store.recover_truncated_cq")
        for cq in self._all_consume_queues():
            cq.truncate_dirty_logic_files(phy_offset)

    def _destroy_logics(self) -> None:
        for cq in self._all_consume_queues():
            cq.destroy_files()

    def _recover_topic_queue_table(self) -> None:
        table: dict[str, int] = {}
        min_phy = self.commit_log.get_min_offset()
        for cq in self._all_consume_queues():
            table[f"{cq.topic}-{cq.queue_id}"] = cq.get_max_offset_in_queue()
            cq.correct_min_offset(min_phy)
        self.commit_log.topic_queue_table = table

    def start(self, mono_ms: int) -> None:
        """Re-dispatch what the consume queues lack, create the abort file, start the services.

        4.9.8 reputs from the queues' max physical offset; 5.3.3 from ``commitLog.getConfirmOffset()`` (its
        recovery already dispatched the rest; recheckReputOffsetFromCq is false by default)."""
        if self.config.is_era_4:
            reput_from = self.commit_log.get_min_offset()
            for cq in self._all_consume_queues():
                reput_from = max(reput_from, cq.max_physic_offset)
        else:
            reput_from = self.commit_log.get_confirm_offset()
        self.reput_from_offset = max(reput_from, 0)
        self.do_reput()
        self._recover_topic_queue_table()
        self.disk.write_file(ABORT_FILE, b"")
        self.shutdown_flag = False
        self.dirty_consume_queues = {(cq.topic, cq.queue_id): cq for cq in self._all_consume_queues()
                                     if cq.mfq.flush_would_change(0)}
        least_pages = self.config.flush_consume_queue_least_pages
        self.cq_flush_due = any(cq.mfq.flush_would_change(least_pages) for cq in self.dirty_consume_queues.values())
        self.services = [ReputMessageService(self, mono_ms)]
        if self.config.flush_disk_type != SYNC_FLUSH:
            self.services.append(FlushCommitLogService(self, mono_ms))
        self.services.append(FlushConsumeQueueService(self, mono_ms))

    def shutdown(self) -> None:
        self.shutdown_flag = True
        self.do_reput()
        self.commit_log.mfq.flush_all()
        if self.commit_log.mfq.store_timestamp > 0:
            self.checkpoint.physic_msg_timestamp = self.commit_log.mfq.store_timestamp
        logics_ts = self.checkpoint.logics_msg_timestamp
        for cq in self._all_consume_queues():
            cq.mfq.flush_all()
        self.checkpoint.logics_msg_timestamp = logics_ts
        self.checkpoint.flush()
        if self.writeable and self.dispatch_behind_bytes() == 0:
            self.disk.delete(ABORT_FILE)

    # --- put -----------------------------------------------------------------------------
    def put_message(self, msg: codec.MessageExt) -> PutMessageResult:
        if self.shutdown_flag or not self.writeable:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        for hook in self.put_hooks:
            answer = hook(msg)
            if answer is not None:
                return answer
        result = self.commit_log.put_message(msg)
        if result.fault_site is not None:
            self.probes.probe("store.put_failed")
        if result.is_ok:
            for listener in self.put_listeners:
                listener(msg, result)
            if self.new_message_listener is not None:
                self.new_message_listener()
        return result

    # --- dispatch (ReputMessageService) --------------------------------------------------
    def dispatch_behind_bytes(self) -> int:
        return self.commit_log.get_confirm_offset() - self.reput_from_offset

    def do_reput(self) -> int:
        """Dispatch every record between reputFromOffset and the confirm offset; returns how many."""
        log = self.commit_log
        dispatched = 0
        if self.reput_from_offset < log.get_min_offset():
            self.reput_from_offset = log.get_min_offset()
        while self.reput_from_offset < log.get_confirm_offset():
            data = log.get_data(self.reput_from_offset)
            if data is None:
                break
            end = min(len(data), log.get_confirm_offset() - self.reput_from_offset)
            pos = 0
            while pos < end:
                req = log.check_message_and_return_size(data, pos, check_crc=False)
                if req.success and req.msg_size > 0:
                    self._dispatch(req)
                    dispatched += 1
                    pos += req.msg_size
                elif req.success:  # blank record: continue in the next file
                    self.reput_from_offset = log.roll_next_file(self.reput_from_offset)
                    break
                elif req.msg_size > 0:
                    self.log.error(f"[BUG]read total count not equals msg total size at {self.reput_from_offset + pos}",
                                   fault_site=DISK_DAMAGE)
                    pos += req.msg_size
                else:  # unreadable: a master skips the rest of the buffer (4.9.8 doReput)
                    self.log.warn(f"reput: unreadable record at {self.reput_from_offset + pos}: {req.error}",
                                  fault_site=DISK_DAMAGE)
                    self.reput_from_offset += end
                    return dispatched
            else:
                self.reput_from_offset += pos
                if pos == 0:
                    break
        return dispatched

    def _dispatch(self, req: codec.DispatchRequest) -> None:
        tran_type = req.sys_flag & 0xC
        if tran_type not in (codec.TRANSACTION_NOT_TYPE, codec.TRANSACTION_COMMIT_TYPE):
            return
        cq = self.find_consume_queue(req.topic, req.queue_id)
        cq.put_message_position_info(req.commit_log_offset, req.msg_size, req.tags_code, req.consume_queue_offset)
        self.dirty_consume_queues[(req.topic, req.queue_id)] = cq
        if not self.cq_flush_due and cq.mfq.flush_would_change(self.config.flush_consume_queue_least_pages):
            self.cq_flush_due = True
        if self.unindexed_listeners and not _just_indexed(cq, req) and not _indexes(cq, req):
            unit = cq.get_unit(req.consume_queue_offset)
            for listener in self.unindexed_listeners:
                listener(req, unit)
        self.checkpoint.logics_msg_timestamp = req.store_timestamp
        for listener in self.arriving_listeners:
            listener(req.topic, req.queue_id, req.consume_queue_offset + 1)

    # --- read ----------------------------------------------------------------------------
    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        queues = self.consume_queue_table.get(topic)
        cq = queues.get(queue_id) if queues else None
        return cq if cq is not None else self._new_consume_queue(topic, queue_id)

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        queues = self.consume_queue_table.get(topic)
        return queues.get(queue_id) if queues else None

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        return cq.get_max_offset_in_queue() if cq else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        return cq.get_min_offset_in_queue() if cq else -1

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, cq_offset: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        unit = cq.get_unit(cq_offset) if cq else None
        return unit[0] if unit else 0

    def check_in_disk_by_commit_offset(self, phy_offset: int) -> bool:
        """True when the message is no longer in the page cache budget (accessMessageInMemoryMaxRatio)."""
        memory = self.config.total_physical_memory_bytes * self.config.access_message_in_memory_max_ratio // 100
        return self.commit_log.get_max_offset() - phy_offset > memory

    def look_message_by_offset(self, phy_offset: int, size: int | None = None) -> codec.MessageExt | None:
        if size is None:
            head = self.commit_log.get_message(phy_offset, 4)
            if head is None:
                return None
            size = int.from_bytes(head, "big", signed=True)
            if size <= 0:
                return None
        raw = self.commit_log.get_message(phy_offset, size)
        return None if raw is None else codec.decode_message(raw, 0)

    def get_message_store_timestamp(self, topic: str, queue_id: int, cq_offset: int) -> int:
        """-1 when the queue has no unit at ``cq_offset`` (getStoreTime of a null buffer), at both tags."""
        cq = self.get_consume_queue(topic, queue_id)
        unit = cq.get_unit(cq_offset) if cq is not None else None
        if unit is None:
            return -1
        msg = self.look_message_by_offset(unit[0])
        return msg.store_timestamp if msg else -1

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """First queue offset whose message was stored at or after ``timestamp_ms`` (binary search)."""
        cq = self.get_consume_queue(topic, queue_id)
        if cq is None:
            return 0
        lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
        while lo < hi:
            mid = (lo + hi) // 2
            unit = cq.get_unit(mid)
            msg = self.look_message_by_offset(unit[0], unit[1]) if unit else None
            if msg is None or msg.store_timestamp < timestamp_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        tags_filter: Callable[[int], bool] | None = None,
    ) -> GetMessageResult:
        cq = self.find_consume_queue(topic, queue_id)  # created on demand, as RocketMQ does
        min_offset, max_offset = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
        result = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, offset, min_offset, max_offset)
        if max_offset == 0:
            result.status, result.next_begin_offset = GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0
        elif offset < min_offset:
            result.status, result.next_begin_offset = GetMessageStatus.OFFSET_TOO_SMALL, min_offset
            self.probes.probe("store.get_offset_too_small")
        elif offset == max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            if self.m_overflow_one_plus_one:
                result.next_begin_offset = offset + 1  # the mutant: the next message is skipped
        elif offset > max_offset:
            result.status, result.next_begin_offset = GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset
            self.probes.probe("store.get_offset_overflow_badly")
        else:
            buf = cq.get_index_buffer(offset)
            if buf is None:
                result.status, result.next_begin_offset = GetMessageStatus.OFFSET_FOUND_NULL, cq.roll_next_file(offset)
            else:
                self._collect(result, buf, offset, max_msg_nums, tags_filter)
        return result

    def _collect(self, result: GetMessageResult, buf: bytes, offset: int, max_msg_nums: int,
                 tags_filter: Callable[[int], bool] | None) -> None:
        """Only a missing commit-log entry skips to the next commit-log file (MESSAGE_WAS_REMOVING). A unit whose
        bytes are there but hold no record it can decode (a stale unit after a power failure, #495) is in the
        batch all the same: Java's commitLog.getMessage returns bytes without decoding them, so the broker answers
        FOUND and counts the unit and those after it in the batch and in nextBeginOffset; the client's
        MessageDecoder.decodesBatch stops at the first record it cannot decode, so none from there on reaches it
        (explore seed 1000000206)."""
        limit = min(len(buf), max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE))
        next_phy_file_start = None
        in_batch = 0  # units whose bytes the broker returns (getResult.getMessageCount)
        undecodable = False  # the client's decodesBatch stopped: the rest of the batch is not handed over
        i = 0
        while i < limit:
            offset_py, size_py, tags_code = CQ_UNIT.unpack_from(buf, i)
            if next_phy_file_start is not None and offset_py < next_phy_file_start:
                i += CQ_STORE_UNIT_SIZE
                continue
            if in_batch >= max_msg_nums:
                break
            if tags_filter is not None and not tags_filter(tags_code):
                i += CQ_STORE_UNIT_SIZE
                continue
            raw = self.commit_log.get_message(offset_py, size_py) if size_py > 0 else None
            if raw is None:
                self.probes.probe("store.get_message_unreadable")
                if not in_batch:
                    result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_phy_file_start = self.commit_log.roll_next_file(offset_py)
                i += CQ_STORE_UNIT_SIZE
                continue
            msg = None if undecodable else codec.decode_message(raw, 0)
            if msg is None:
                if not undecodable:
                    self.probes.probe("store.get_message_unreadable")
                undecodable = True
            else:
                result.messages.append(msg)
            in_batch += 1
            result.status = GetMessageStatus.FOUND
            next_phy_file_start = None
            i += CQ_STORE_UNIT_SIZE
        result.next_begin_offset = offset + i // CQ_STORE_UNIT_SIZE + (1 if self.m_next_begin_plus_one else 0)


class ReputMessageService:
    """Dispatches new commit-log records into consume queues every ``reput_interval_ms``."""

    name = "reput"
    WAKE_FLOOR = "_next_ms"  # its only answer, when it has one (see PeriodicService.WAKE_FLOOR)

    def __init__(self, store: DefaultMessageStore, mono_ms: int) -> None:
        self.store = store
        self._next_ms = mono_ms + store.config.reput_interval_ms  # the last round plus the interval

    def next_wakeup_ms(self) -> int | None:
        store = self.store
        if store.commit_log.get_confirm_offset() > store.reput_from_offset:  # dispatch_behind_bytes() > 0
            return self._next_ms
        return None

    def step(self, mono_ms: int) -> None:
        self._next_ms = mono_ms + self.store.config.reput_interval_ms
        self.store.do_reput()


class _FlushRounds(PeriodicService):
    """A flush thread's rounds: every ``interval_ms`` a light flush, a thorough one when ``thorough_ms`` passed.

    With ``idle_skip`` (a driver's choice) rounds that provably change nothing are not stepped: the
    driver calls ``catch_up`` before asking for the next wake-up, which accounts the skipped rounds
    (the grid and the thorough-round clock move as if they had run), and ``next_wakeup_ms`` names
    the first round that would change something (None: none until something is written)."""

    def __init__(self, name: str, store: DefaultMessageStore, interval_ms: int, thorough_ms: int,
                 mono_ms: int) -> None:
        super().__init__(name, self._round, interval_ms, interval_ms, mono_ms)
        self.store = store
        self.thorough_ms = thorough_ms
        self._last_thorough_ms = mono_ms
        self._thorough_every = max(1, -(-thorough_ms // interval_ms))  # rounds between thorough ones
        self.idle_skip = False
        self._due_ms = -1  # a round known to change something (writes only add to that until it runs)
        # The thorough round known to change something, for the grid (next round, last thorough round) it was
        # computed on: writes only add to what such a round flushes, so only a round (which moves the grid) can
        # make it wrong. Saves the dirty-queue scan on every re-arm.
        self._thorough_for: tuple[int, int] | None = None
        self._thorough_at = -1

    def _round(self, mono_ms: int) -> None:
        thorough = mono_ms >= self._last_thorough_ms + self.thorough_ms
        if thorough:
            self._last_thorough_ms = mono_ms
        self.flush_round(mono_ms, thorough)

    @abstractmethod
    def flush_round(self, mono_ms: int, thorough: bool) -> None:
        """One round of the flush thread (each subclass flushes its own files)."""

    @abstractmethod
    def would_change(self, thorough: bool) -> bool:
        """Whether a round now would write anything (False: the round may be skipped)."""

    def catch_up(self, mono_ms: int, turn_passed: bool) -> None:
        """Rounds before ``mono_ms`` (and at it, once its turn passed) were skipped as no-ops: account them."""
        if not self.idle_skip:
            return
        first, interval = self._next_ms, self.interval_ms
        limit = mono_ms + 1 if turn_passed else mono_ms
        if first >= limit:
            return
        skipped = -(-(limit - first) // interval)
        j0 = max(0, -(-(self._last_thorough_ms + self.thorough_ms - first) // interval))
        if j0 < skipped:
            self._last_thorough_ms = first + (j0 + (skipped - 1 - j0) // self._thorough_every
                                              * self._thorough_every) * interval
        self._next_ms = first + skipped * interval

    def next_wakeup_ms(self) -> int | None:
        if not self.idle_skip or self._due_ms == self._next_ms:
            return self._next_ms
        if self.would_change(False):
            self._due_ms = self._next_ms
            return self._next_ms
        grid = (self._next_ms, self._last_thorough_ms)
        if grid == self._thorough_for:
            return self._thorough_at
        if not self.would_change(True):
            return None
        first, target = self._next_ms, self._last_thorough_ms + self.thorough_ms
        at = first if first >= target else first + -(-(target - first) // self.interval_ms) * self.interval_ms
        self._thorough_for, self._thorough_at = grid, at
        return at

    def step(self, mono_ms: int) -> None:
        self.catch_up(mono_ms, False)
        super().step(mono_ms)


class FlushCommitLogService(_FlushRounds):
    """FlushRealTimeService: every 500 ms flush >= 4 dirty pages, every 10 s whatever is dirty."""

    def __init__(self, store: DefaultMessageStore, mono_ms: int) -> None:
        cfg = store.config
        super().__init__("flush-commitlog", store, cfg.flush_interval_commit_log_ms,
                         cfg.flush_commit_log_thorough_interval_ms, mono_ms)

    def flush_round(self, mono_ms: int, thorough: bool) -> None:
        self.store.commit_log.flush(0 if thorough else self.store.config.flush_commit_log_least_pages)

    def would_change(self, thorough: bool) -> bool:
        return self.store.commit_log.flush_would_change(0 if thorough else self.store.config.flush_commit_log_least_pages)


class FlushConsumeQueueService(_FlushRounds):
    """Every second flush >= 2 dirty pages per queue; every 60 s all of it plus the checkpoint.

    Only the queues written since they were last fully flushed are visited (``dirty_consume_queues``):
    a flush of any other queue is a no-op."""

    def __init__(self, store: DefaultMessageStore, mono_ms: int) -> None:
        cfg = store.config
        super().__init__("flush-consumequeue", store, cfg.flush_interval_consume_queue_ms,
                         cfg.flush_consume_queue_thorough_interval_ms, mono_ms)

    def flush_round(self, mono_ms: int, thorough: bool) -> None:
        store = self.store
        least_pages = 0 if thorough else store.config.flush_consume_queue_least_pages
        logics_ts = store.checkpoint.logics_msg_timestamp if thorough else 0
        dirty = store.dirty_consume_queues
        light = store.config.flush_consume_queue_least_pages
        due = False
        for key in sorted(dirty):
            cq = dirty[key]
            cq.flush(least_pages)
            if not cq.mfq.flush_would_change(0):
                del dirty[key]
            elif not due and cq.mfq.flush_would_change(light):
                due = True
        store.cq_flush_due = due
        if thorough:
            if logics_ts > 0:
                store.checkpoint.logics_msg_timestamp = logics_ts
            store.checkpoint.flush()

    def would_change(self, thorough: bool) -> bool:
        store = self.store
        if thorough and not store.checkpoint.is_flushed():
            return True
        if not thorough:
            return store.cq_flush_due  # kept by every dispatch and every round: no scan of the dirty queues
        return any(cq.mfq.flush_would_change(0) for cq in store.dirty_consume_queues.values())
