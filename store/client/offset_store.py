"""The client's consume-offset stores (ROCKETMQ.md 5.2).

``RemoteBrokerOffsetStore`` (CLUSTERING) keeps the group's offsets in memory and sends them to the
broker one-way every 5 s; ``LocalFileOffsetStore`` (BROADCASTING) keeps each instance's own offsets in
``{dir}/{client_id}/{group}/offsets.json``. Both hold the *next* offset to consume per queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..client_offset_file import OffsetFileCorrupt, read_offsets_file, write_offsets_file
from ..config import ERA_5
from ..disk import Disk
from ..log import DISK_DAMAGE, as_log
from .api import BrokerClientApi, MessageQueue, MQBrokerException, RemotingError, ResponseCode
from .errors import REQUEST_ERRORS, MQClientException

READ_FROM_MEMORY = "READ_FROM_MEMORY"
READ_FROM_STORE = "READ_FROM_STORE"
MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"

OffsetListener = Callable[[MessageQueue, int], None]



class _OffsetTable:
    """The in-memory part both stores share: ``offset_table`` and its increase-only update."""

    def __init__(self, on_update: OffsetListener | None, log: Callable[[str], None] | None) -> None:
        self.offset_table: dict[MessageQueue, int] = {}
        self.frozen: set[MessageQueue] = set()  # 5.2.0+ ControllableOffset.updateAndFreeze
        self.on_update = on_update
        self.log = as_log(log, "RocketmqClient")
        self.changed: Callable[[], None] | None = None  # told of every change to the table (a driver's hook)

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        if mq in self.frozen:
            return  # ControllableOffset: frozen by updateAndFreeze until the entry is removed
        old = self.offset_table.get(mq)
        if old is None:
            new = offset
        elif increase_only:
            new = offset if offset > old else old  # MixAll.compareAndIncreaseOnly
        else:
            new = offset
        self.offset_table[mq] = new
        if new != old:
            if self.changed is not None:
                self.changed()
            if self.on_update is not None:
                self.on_update(mq, new)

    def _set_from_store(self, mq: MessageQueue, offset: int) -> None:
        """What readOffset(READ_FROM_STORE) loads: not a commit by this consumer, so no event."""
        self.offset_table[mq] = offset
        if self.changed is not None:
            self.changed()

    def update_and_freeze_offset(self, mq: MessageQueue, offset: int) -> None:
        """5.2.0+ OFFSET_ILLEGAL: set the corrected offset and ignore later updates until removeOffset."""
        self.frozen.discard(mq)
        self.update_offset(mq, offset, False)
        self.frozen.add(mq)

    def remove_offset(self, mq: MessageQueue) -> None:
        """removeOffset (both stores, 4.9.8 and 5.3.3, #7740): forget the queue's entry and its freeze."""
        if self.offset_table.pop(mq, None) is not None and self.changed is not None:
            self.changed()
        self.frozen.discard(mq)

    def clone_offset_table(self, topic: str = "") -> dict[MessageQueue, int]:
        return {mq: off for mq, off in self.offset_table.items() if not topic or mq.topic == topic}


class RemoteBrokerOffsetStore(_OffsetTable):
    def __init__(
        self,
        api: BrokerClientApi,
        group_name: str,
        *,
        on_update: OffsetListener | None = None,
        log: Callable[[str], None] | None = None,
        era: str = ERA_5,
    ) -> None:
        super().__init__(on_update, log)
        self.api = api
        self.group_name = group_name
        self.era4 = era.startswith("4.")

    def load(self) -> None:
        """Nothing local to load: the broker holds the offsets."""

    def read_offset(self, mq: MessageQueue, read_type: str) -> int:
        """-1: no offset (in memory, or the broker answered QUERY_NOT_FOUND; in 4.9.8 any error answer);
        -2: the broker could not be asked (network failure) or, in 5.3.3, answered another error."""
        if read_type in (READ_FROM_MEMORY, MEMORY_FIRST_THEN_STORE):
            offset = self.offset_table.get(mq)
            if offset is not None:
                return offset
            if read_type == READ_FROM_MEMORY:
                return -1
        if read_type in (READ_FROM_STORE, MEMORY_FIRST_THEN_STORE):
            try:
                broker_offset = self.api.query_consumer_offset(self.group_name, mq.topic, mq.queue_id)
            except MQBrokerException as error:
                if error.code == ResponseCode.QUERY_NOT_FOUND:
                    return -1  # 5.3.3: OffsetNotFoundException
                self.log(f"fetchConsumeOffsetFromBroker error answer, {mq}: {error}")
                return -1 if self.era4 else -2
            except (RemotingError, MQClientException) as error:  # "could not ask"
                self.log.warn(f"fetchConsumeOffsetFromBroker exception, {mq}: {error}", error)
                return -2
            self._set_from_store(mq, broker_offset)
            return broker_offset
        return -1

    def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        """Send the offsets of the owned queues one-way; forget the others."""
        owned = set(mqs)
        if not owned:
            return
        unused = []
        for mq, offset in list(self.offset_table.items()):
            if mq in owned:
                self._send(mq, offset, "persistAll")
            else:
                unused.append(mq)
        for mq in unused:
            self.offset_table.pop(mq, None)
            self.log(f"remove unused mq, {mq}, {self.group_name}")

    def persist(self, mq: MessageQueue) -> None:
        offset = self.offset_table.get(mq)
        if offset is not None:
            self._send(mq, offset, "persist")

    def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, is_oneway: bool = True) -> None:
        self.api.update_consumer_offset_oneway(self.group_name, mq.topic, mq.queue_id, offset)

    def _send(self, mq: MessageQueue, offset: int, why: str) -> None:
        try:
            self.update_consume_offset_to_broker(mq, offset, True)
        except REQUEST_ERRORS as error:  # one-way: a failure is only logged
            self.log.error(f"[{why}] updateConsumeOffsetToBroker exception, {mq}: {error}", error)


class LocalFileOffsetStore(_OffsetTable):
    def __init__(
        self,
        disk: Disk,
        offset_store_dir: str,
        client_id: str,
        group_name: str,
        *,
        on_update: OffsetListener | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(on_update, log)
        self.disk = disk
        self.group_name = group_name
        base = offset_store_dir.rstrip("/")
        self.store_path = f"{base}/{client_id}/{group_name}/offsets.json" if base else (
            f"{client_id}/{group_name}/offsets.json")

    def _read_local_offset(self) -> dict[MessageQueue, int]:
        """The file's table (the main file, else ``.bak``); raises MQClientException if ``.bak`` is corrupt."""
        try:
            table = read_offsets_file(self.disk, self.store_path)
        except OffsetFileCorrupt as error:
            raise MQClientException(f"readLocalOffset Exception: {error}") from error
        return {MessageQueue(topic, broker_name, queue_id): offset
                for (broker_name, topic, queue_id), offset in table.items()}

    def load(self) -> None:
        """Read the offsets of an earlier run; raises MQClientException (start fails) on a corrupt ``.bak``."""
        table = self._read_local_offset()
        if table:
            self.offset_table.update(table)

    def read_offset(self, mq: MessageQueue, read_type: str) -> int:
        if read_type in (READ_FROM_MEMORY, MEMORY_FIRST_THEN_STORE):
            offset = self.offset_table.get(mq)
            if offset is not None:
                return offset
            if read_type == READ_FROM_MEMORY:
                return -1
        if read_type in (READ_FROM_STORE, MEMORY_FIRST_THEN_STORE):
            try:
                table = self._read_local_offset()
            except MQClientException:
                return -1
            if mq in table:
                self._set_from_store(mq, table[mq])
                return table[mq]
        return -1

    def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        """Overwrite the owned queues' entries in the file, keeping the other entries it holds."""
        owned = set(mqs)
        if not owned:
            return
        self._write({mq: off for mq, off in self.offset_table.items() if mq in owned})

    def persist(self, mq: MessageQueue) -> None:
        offset = self.offset_table.get(mq)
        if offset is not None:
            self._write({mq: offset})

    def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, is_oneway: bool = True) -> None:
        """Broadcasting offsets never go to the broker."""

    def _write(self, entries: dict[MessageQueue, int]) -> None:
        try:
            table = self._read_local_offset()
        except MQClientException as error:
            self.log.error(f"readLocalOffset exception: {error}", error, fault_site=DISK_DAMAGE)
            return
        merged = dict(table)
        merged.update(entries)
        try:
            write_offsets_file(self.disk, self.store_path, merged)
        except OSError as error:
            self.log.error(f"persist consumer offset exception, {self.store_path}: {error}", error)
