"""CommitLog: the append-only log of every message, its flushing and its recovery (1.4–1.7, 2.5).

The hot path of every simulation: ``put_message`` prepares the record once (codec), stamps it
under the "put lock" (there is no real lock: the store is single-threaded), and appends it.
"""

from __future__ import annotations

from collections.abc import Callable

from . import message as codec
from .checkpoint import StoreCheckpoint
from .clock import Clock
from .config import SYNC_FLUSH, MessageStoreConfig
from .disk import Disk
from .faults import SITE_PUT, FaultInjector, check_crash
from .log import DISK_DAMAGE, StoreLog, as_log
from .mapped_file import MappedFileQueue
from .probes import NO_PROBES
from .put_status import AppendMessageResult, AppendMessageStatus, PutMessageResult, PutMessageStatus
from .topics import RMQ_SYS_SCHEDULE_TOPIC

SCHEDULE_TOPIC = RMQ_SYS_SCHEDULE_TOPIC
_NOT_DISPATCHED = (codec.TRANSACTION_PREPARED_TYPE, codec.TRANSACTION_ROLLBACK_TYPE)
FLUSH_TRIES_4X = 2  # GroupCommitService.doCommit's flush calls per request (4.9.8)
FLUSH_TRIES_5X = 1000  # 5.2.0+ (#7524)


class CommitLog:
    probes = NO_PROBES  # the run's ProbeCollector when the world attaches one

    def __init__(
        self,
        disk: Disk,
        config: MessageStoreConfig,
        clock: Clock,
        faults: FaultInjector,
        checkpoint: StoreCheckpoint,
        delay_level_table_ms: dict[int, int],
        log: StoreLog | Callable[[str], None] | None,
        store_path: str = "commitlog",
        mutants: frozenset[str] = frozenset(),
    ) -> None:
        self.config = config
        self.clock = clock
        self.faults = faults
        self.checkpoint = checkpoint
        self.delay_level_table_ms = delay_level_table_ms
        self.max_delay_level = max(delay_level_table_ms) if delay_level_table_ms else 0
        self.log = as_log(log, "CommitLog")
        # A driver's choice (sim/broker_host.py): under shuffled ties every armed round draws a tie priority, so
        # the flush is armed as it was before light rounds were known to leave the store timestamp alone.
        self.light_rounds_see_timestamp = False
        self.mfq = MappedFileQueue(disk, store_path, config.mapped_file_size_commit_log,
                                   physic_ts_every_flush="physic_ts_every_flush" in mutants)
        self.topic_queue_table: dict[str, int] = {}  # "topic-queueId" -> next queue offset
        self.sync_flush = config.flush_disk_type == SYNC_FLUSH
        self.file_size = config.mapped_file_size_commit_log
        self.confirm_offset = -1  # 5.x: the start of the last valid record at recovery (setConfirmOffset)
        self._last_valid_msg_offset = 0

    def load(self) -> None:
        self.mfq.load()

    # --- put -----------------------------------------------------------------------------
    def put_message(self, msg: codec.MessageExt) -> PutMessageResult:
        if check_crash(self.faults, SITE_PUT, msg.topic):
            return PutMessageResult(PutMessageStatus.OS_PAGE_CACHE_BUSY, fault_site=SITE_PUT)
        try:
            prep = codec.prepare_message(
                msg,
                max_message_size=self.config.max_message_size,
                auto_message_version_v2=self.config.auto_message_version_on_topic_len,
            )
        except codec.MessageIllegal as illegal:
            return PutMessageResult(illegal.status)

        # Inside the put lock: stamp the time, pick the queue offset, append.
        store_timestamp = self.clock.now_ms()
        key = f"{msg.topic}-{msg.queue_id}"
        tran_type = msg.sys_flag & 0xC
        queue_offset = 0 if tran_type in _NOT_DISPATCHED else self.topic_queue_table.get(key, 0)
        mf = self.mfq.get_last_mapped_file_for_append(0)
        msg_len = prep.total_size
        status = AppendMessageStatus.PUT_OK
        if msg_len + codec.END_FILE_MIN_BLANK_LENGTH > self.file_size - mf.wrote_position:
            self._end_file(mf, store_timestamp)
            mf = self.mfq.get_last_mapped_file_for_append(0)
            if msg_len + codec.END_FILE_MIN_BLANK_LENGTH > self.file_size:
                # Appended again to the new file, it ends that file too, and asyncPutMessage (case END_OF_FILE,
                # 4.9.8 l. 698, 5.3.3 l. 1039) still answers PUT_OK: the send succeeds, nothing is stored and no
                # queue offset is taken
                status = AppendMessageStatus.END_OF_FILE
        phy_offset = mf.file_from_offset + mf.wrote_position
        if status == AppendMessageStatus.END_OF_FILE:
            wrote_bytes = self.file_size  # the blank declares the whole file written
            self._end_file(mf, store_timestamp)
        else:
            wrote_bytes = msg_len
            mf.append(codec.encode_message(prep, queue_offset, phy_offset, store_timestamp))
            mf.store_timestamp = store_timestamp
            if tran_type not in _NOT_DISPATCHED:
                self.topic_queue_table[key] = queue_offset + 1
            msg.commit_log_offset = phy_offset
            msg.queue_offset = queue_offset
            msg.store_size = msg_len
        msg.store_timestamp = store_timestamp
        if self.sync_flush:
            # GroupCommitService.doCommit: flush until the record (or an oversize put's blank file) is on disk, one
            # file per flush call: 4.9.8 tries twice (a record that opened a new file), 5.2.0+ up to 1000 times
            # (#7524). A record left unflushed would stay unconfirmed and undispatched in 5.x (explore seed
            # 910000562, when oversize puts were refused and flushed nothing)
            end = phy_offset + wrote_bytes
            for _ in range(FLUSH_TRIES_4X if self.config.is_era_4 else FLUSH_TRIES_5X):
                before = self.mfq.flushed_where
                self.flush(0)
                if self.mfq.flushed_where >= end or self.mfq.flushed_where == before:
                    break
        return PutMessageResult(
            PutMessageStatus.PUT_OK,
            AppendMessageResult(
                phy_offset,
                wrote_bytes,
                codec.create_message_id(msg.store_host, phy_offset),
                store_timestamp,
                queue_offset,
                msg.topic,
                msg.queue_id,
                status,
            ),
        )

    def _end_file(self, mf, store_timestamp: int) -> None:
        """END_OF_FILE: a blank marks the rest of ``mf`` garbage; like any append it stamps the file's store time
        (MappedFile.appendMessagesInner), which the flush hands to the checkpoint."""
        mf.append(codec.encode_blank(self.file_size - mf.wrote_position))
        mf.wrote_position = self.file_size
        mf.store_timestamp = store_timestamp

    # --- read ----------------------------------------------------------------------------
    def get_min_offset(self) -> int:
        first = self.mfq.get_first_mapped_file()
        return first.file_from_offset if first else -1

    def get_max_offset(self) -> int:
        return self.mfq.get_max_offset()

    def get_flushed_where(self) -> int:
        return self.mfq.flushed_where

    def get_confirm_offset(self) -> int:
        """How far dispatch may go: flushed data under SYNC_FLUSH in 5.x (#8240), else written."""
        if self.sync_flush and not self.config.is_era_4:
            return self.mfq.flushed_where
        return self.mfq.get_max_offset()

    def get_message(self, offset: int, size: int) -> bytes | None:
        return self.mfq.read(offset, size)

    def get_data(self, offset: int) -> bytes | None:
        """From ``offset`` to the written end of its file (what a reput round reads)."""
        mf = self.mfq.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        pos = offset % self.file_size
        if pos >= mf.wrote_position:
            return None
        return mf.read_to_end(pos)

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    def check_message_and_return_size(
        self, buf: bytes, pos: int, check_crc: bool, read_body: bool = False
    ) -> codec.DispatchRequest:
        """The codec's check plus the broker's one twist: a delayed message's tagsCode is its deliver time."""
        return self.with_deliver_tags_code(
            codec.check_message_and_return_size(buf, pos, check_crc=check_crc, read_body=read_body))

    def with_deliver_tags_code(self, req: codec.DispatchRequest) -> codec.DispatchRequest:
        """A record of SCHEDULE_TOPIC_XXXX gets its deliver time as tagsCode (the level's delay after storing)."""
        if req.success and req.msg_size > 0 and req.topic == SCHEDULE_TOPIC and req.properties:
            level_text = req.properties.get(codec.PROPERTY_DELAY_TIME_LEVEL)
            if level_text:
                level = min(int(level_text), self.max_delay_level)
                if level > 0:
                    delay_ms = self.delay_level_table_ms.get(level, 1000)
                    return codec.DispatchRequest(
                        True, req.msg_size, req.topic, req.queue_id, req.commit_log_offset,
                        req.store_timestamp + delay_ms, req.store_timestamp, req.consume_queue_offset, req.keys,
                        req.uniq_key, req.sys_flag, req.prepared_transaction_offset, req.properties, req.error)
        return req

    # --- flush ---------------------------------------------------------------------------
    def flush(self, least_pages: int) -> bool:
        unchanged = self.mfq.flush(least_pages)
        if self.mfq.store_timestamp > 0:
            self.checkpoint.physic_msg_timestamp = self.mfq.store_timestamp
        return unchanged

    def flush_would_change(self, least_pages: int) -> bool:
        """Whether ``flush(least_pages)`` would change the log or the checkpoint's physic timestamp (mirrors it).
        With ``light_rounds_see_timestamp`` a light round also counts as a change whenever the file's store
        timestamp is ahead (a harmless over-estimate: the round runs and changes nothing)."""
        mfq = self.mfq
        if mfq.flush_would_change(least_pages):
            return True
        mf = mfq.find_mapped_file_by_offset(mfq.flushed_where)
        if mf is None and mfq.flushed_where == 0:
            mf = mfq.get_first_mapped_file()
        if self.light_rounds_see_timestamp and mf is not None and mfq.store_timestamp != mf.store_timestamp:
            return True
        # what the round leaves in the queue's store timestamp, which it then copies to the checkpoint
        moves = mf is not None and mfq.moves_store_timestamp(least_pages)
        timestamp = mf.store_timestamp if moves else mfq.store_timestamp
        return timestamp > 0 and self.checkpoint.physic_msg_timestamp != timestamp

    # --- recovery ------------------------------------------------------------------------
    def recover_normally(self, max_phy_offset_of_cq: int, dispatch: Callable[[codec.DispatchRequest], None],
                         truncate_logic: Callable[[int], None], destroy_logics: Callable[[], None]) -> None:
        """4.9.8: scan the last three files, dispatch nothing (start() reputs from the queues' end).
        5.3.3: start at the last file beginning at or below the queues' max physical offset, dispatch every
        record past that offset during the scan, and set the confirm offset (start() reputs from it)."""
        files = self.mfq.mapped_files
        if not files:
            self._recover_empty(destroy_logics)
            return
        if self.config.is_era_4:
            index = max(0, len(files) - 3)
            process_offset = self._scan(index, dispatch_from=None, dispatch=dispatch)
        else:
            index = len(files) - 1
            while index > 0 and files[index].file_from_offset > max_phy_offset_of_cq:
                index -= 1
            self._last_valid_msg_offset = self.get_confirm_offset()
            # Java dispatches ``commitLogOffset > maxPhyOffsetOfConsumeQueue`` (strictly greater).
            process_offset = self._scan(index, dispatch_from=max_phy_offset_of_cq + 1, dispatch=dispatch)
            self.set_confirm_offset(self._last_valid_msg_offset)
        self._truncate(process_offset, max_phy_offset_of_cq, truncate_logic)

    def recover_abnormally(self, max_phy_offset_of_cq: int, dispatch: Callable[[codec.DispatchRequest], None],
                           truncate_logic: Callable[[int], None], destroy_logics: Callable[[], None]) -> None:
        files = self.mfq.mapped_files
        if not files:
            self._recover_empty(destroy_logics)
            return
        index = len(files) - 1
        while index >= 0 and not self._is_mapped_file_matched_recover(index):
            index -= 1
        index = max(index, 0)
        self._last_valid_msg_offset = self.mfq.mapped_files[index].file_from_offset
        process_offset = self._scan(index, dispatch_from=0, dispatch=dispatch)
        if not self.config.is_era_4:
            self.set_confirm_offset(self._last_valid_msg_offset)
        self._truncate(process_offset, max_phy_offset_of_cq, truncate_logic)

    def set_confirm_offset(self, phy_offset: int) -> None:
        """5.x ``setConfirmOffset``: kept in the checkpoint's confirmPhyOffset. A broker without controller mode
        or duplication never reads it back: ``getConfirmOffset`` is the flushed or the written end."""
        self.confirm_offset = phy_offset
        self.checkpoint.confirm_phy_offset = phy_offset

    def _recover_empty(self, destroy_logics: Callable[[], None]) -> None:
        self.mfq.flushed_where = 0
        destroy_logics()

    def _is_mapped_file_matched_recover(self, index: int) -> bool:
        mf = self.mfq.mapped_files[index]
        head = mf.handle.read(0, 64)
        if len(head) < 64:
            return False
        magic = int.from_bytes(head[4:8], "big", signed=True)
        if magic not in (codec.MESSAGE_MAGIC_CODE, codec.MESSAGE_MAGIC_CODE_V2):
            return False
        if magic == codec.MESSAGE_MAGIC_CODE_V2 and self.config.is_era_4:
            return False
        sys_flag = int.from_bytes(head[36:40], "big")
        born_host_len = 20 if sys_flag & codec.BORNHOST_V6_FLAG else 8
        store_ts_pos = 48 + born_host_len
        store_ts = int.from_bytes(head[store_ts_pos : store_ts_pos + 8], "big", signed=True)
        return store_ts != 0 and store_ts <= self.checkpoint.get_min_timestamp()

    def _scan(self, index: int, dispatch_from: int | None, dispatch: Callable[[codec.DispatchRequest], None]) -> int:
        """Walk records with CRC checks from file ``index`` (``codec.iter_records``, as ``inspect`` does) to the
        first invalid one; a blank goes on with the next file. Return the end of the last valid record."""
        files = self.mfq.mapped_files
        while True:
            mf = files[index]
            data = mf.handle.read(0, self.file_size)
            end = mf.file_from_offset
            blank = False
            for item in codec.iter_records(data, mf.file_from_offset, check_crc=self.config.check_crc_on_recover):
                if isinstance(item, codec.Record):
                    self._last_valid_msg_offset = item.offset
                    end = item.offset + item.request.msg_size
                    if dispatch_from is not None and item.request.commit_log_offset >= dispatch_from:
                        dispatch(self.with_deliver_tags_code(item.request))
                    continue
                end = item.offset
                if isinstance(item, codec.Blank):
                    blank = True
                else:
                    pos = item.offset - mf.file_from_offset
                    if item.reason and pos < self.file_size and any(data[pos : pos + 4]):
                        self.log.warn(f"recover: {mf.path} pos {pos}: {item.reason}; the commit log ends at "
                                      f"{item.offset}", fault_site=DISK_DAMAGE)
                break  # recovery stops at the first invalid record
            if not blank or index + 1 >= len(files):
                return end
            index += 1

    def _truncate(self, process_offset: int, max_phy_offset_of_cq: int, truncate_logic: Callable[[int], None]) -> None:
        self.mfq.flushed_where = process_offset
        if self.mfq.get_max_offset() > process_offset:
            self.probes.probe("store.recover_truncated_commitlog")
        self.mfq.truncate_dirty_files(process_offset)
        # Both tags, both modes: the consume queues are truncated only when they reach past the log (develop
        # truncates unconditionally, which gives an empty queue maxPhysicOffset = processOffset).
        if max_phy_offset_of_cq >= process_offset:
            truncate_logic(process_offset)

