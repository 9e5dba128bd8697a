"""ConsumeQueue: per topic-queue index of 20-byte units (ROCKETMQ.md 2.1, 2.2, 2.5, 2.6).

Unit = long commitLogOffset | int size | long tagsCode. The logical "queue offset" L lives at
byte L*20 of the concatenated files, which are named by their first byte offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .disk import Disk
from .log import StoreLog, as_log
from .mapped_file import MappedFile, MappedFileQueue
from .message import Corrupt

CQ_STORE_UNIT_SIZE = 20
CQ_UNIT = struct.Struct(">qiq")
PRE_BLANK_UNIT = CQ_UNIT.pack(0, 0x7FFFFFFF, 0)


@dataclass(frozen=True, slots=True)
class CqUnit:
    """One valid unit; ``queue_offset`` is logical (unit index), the others are as stored."""

    queue_offset: int
    commit_log_offset: int
    size: int
    tags_code: int


def iter_units(buf, base_queue_offset: int = 0) -> Iterator[CqUnit | Corrupt]:
    """The units of one consume-queue file's bytes, in order: pure, shared by recovery and ``inspect``.

    A queue ends at its first invalid unit (commit-log offset < 0 or size <= 0, which includes a never-written
    zero unit; the pre-blank unit (0, 2147483647, 0) is valid), reported as a ``Corrupt`` at its queue offset;
    a tail shorter than a unit is a ``Corrupt`` too."""
    usable = len(buf) - len(buf) % CQ_STORE_UNIT_SIZE
    queue_offset = base_queue_offset
    for phy_offset, size, tags_code in CQ_UNIT.iter_unpack(buf[:usable]):
        if phy_offset < 0 or size <= 0:
            yield Corrupt(queue_offset, f"invalid unit: commit-log offset {phy_offset}, size {size}")
            return
        yield CqUnit(queue_offset, phy_offset, size, tags_code)
        queue_offset += 1
    if usable != len(buf):
        yield Corrupt(queue_offset, f"truncated unit: {len(buf) - usable} of {CQ_STORE_UNIT_SIZE} bytes")



class ConsumeQueue:
    def __init__(
        self,
        disk: Disk,
        topic: str,
        queue_id: int,
        mapped_file_size: int,
        store_path: str = "consumequeue",
        log: StoreLog | Callable[[str], None] | None = None,
    ) -> None:
        if mapped_file_size % CQ_STORE_UNIT_SIZE:
            raise ValueError(f"consume queue file size {mapped_file_size} is not a multiple of 20")
        self.topic = topic
        self.queue_id = queue_id
        self.mapped_file_size = mapped_file_size
        self.mfq = MappedFileQueue(disk, f"{store_path}/{topic}/{queue_id}", mapped_file_size)
        self.max_physic_offset = -1
        self.min_logic_offset = 0  # bytes
        self.last_unit_pos = -1  # logical byte position of the unit the last put_message_position_info appended
        self.log = as_log(log, "ConsumeQueue")

    # --- lifecycle -----------------------------------------------------------------------
    def load(self) -> None:
        self.mfq.load()

    def recover(self) -> None:
        """Scan from the 3rd-last file to the first invalid unit; cut the queue there."""
        files = self.mfq.mapped_files
        if not files:
            return
        index = max(0, len(files) - 3)
        mf = files[index]
        process_offset = mf.file_from_offset
        mapped_file_offset = 0
        while True:
            mapped_file_offset = 0
            for unit in iter_units(mf.handle.read(0, self.mapped_file_size)):
                if isinstance(unit, Corrupt):
                    break
                mapped_file_offset = (unit.queue_offset + 1) * CQ_STORE_UNIT_SIZE
                self.max_physic_offset = unit.commit_log_offset + unit.size
            if mapped_file_offset == self.mapped_file_size:
                index += 1
                if index >= len(files):
                    break
                mf = files[index]
                process_offset = mf.file_from_offset
            else:
                break
        process_offset += mapped_file_offset
        self.mfq.flushed_where = process_offset
        self.mfq.truncate_dirty_files(process_offset)

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop units pointing at or past ``phy_offset``; stale bytes stay on disk (#495)."""
        self.max_physic_offset = phy_offset
        while True:
            mf = self.mfq.get_last_mapped_file()
            if mf is None:
                return
            mf.set_positions(0)
            data = mf.handle.read(0, self.mapped_file_size)
            for i in range(0, self.mapped_file_size, CQ_STORE_UNIT_SIZE):
                offset, size, _tags = CQ_UNIT.unpack_from(data, i)
                if i == 0:
                    if offset >= phy_offset:
                        self.mfq.delete_last_mapped_file()
                        break
                    mf.set_positions(CQ_STORE_UNIT_SIZE)
                    self.max_physic_offset = offset + size
                else:
                    if not (offset >= 0 and size > 0) or offset >= phy_offset:
                        return
                    pos = i + CQ_STORE_UNIT_SIZE
                    mf.set_positions(pos)
                    self.max_physic_offset = offset + size
                    if pos == self.mapped_file_size:
                        return
            else:
                return

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """minLogicOffset = first unit of the first file that still points into the commit log."""
        mf = self.mfq.get_first_mapped_file()
        if mf is None:
            return
        data = mf.read_to_end(0)
        for i in range(0, len(data) - CQ_STORE_UNIT_SIZE + 1, CQ_STORE_UNIT_SIZE):
            offset, _size, _tags = CQ_UNIT.unpack_from(data, i)
            if offset >= phy_min_offset:
                self.min_logic_offset = mf.file_from_offset + i
                return
        self.min_logic_offset = mf.file_from_offset + len(data)

    def destroy_files(self) -> None:
        while self.mfq.mapped_files:
            self.mfq.delete_last_mapped_file()
        self.max_physic_offset = -1
        self.min_logic_offset = 0

    # --- building ------------------------------------------------------------------------
    def put_message_position_info(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        self.last_unit_pos = -1
        if offset + size <= self.max_physic_offset:
            return True  # already built (idempotent by physical offset)
        expect_logic_offset = cq_offset * CQ_STORE_UNIT_SIZE
        mf = self.mfq.get_last_mapped_file_for_append(expect_logic_offset)
        if mf is self.mfq.mapped_files[0] and cq_offset != 0 and mf.wrote_position == 0:
            self.min_logic_offset = expect_logic_offset
            self.mfq.flushed_where = expect_logic_offset
            self._fill_pre_blank(mf, expect_logic_offset)
        if cq_offset != 0:
            current = mf.wrote_position + mf.file_from_offset
            if expect_logic_offset < current:
                self.log.warn(f"build consume queue repeatedly, expect {expect_logic_offset} < current {current}, "
                         f"topic {self.topic} queue {self.queue_id}")
                return True
            if expect_logic_offset != current:
                self.log.warn(f"[BUG]logic queue order maybe wrong, expect {expect_logic_offset} current {current} "
                         f"topic {self.topic} queue {self.queue_id}")
        self.max_physic_offset = offset + size
        self.last_unit_pos = mf.file_from_offset + mf.wrote_position
        mf.append(CQ_UNIT.pack(offset, size, tags_code))
        return True

    def _fill_pre_blank(self, mf: MappedFile, until_where: int) -> None:
        count = (until_where % self.mapped_file_size) // CQ_STORE_UNIT_SIZE
        if count:
            mf.append(PRE_BLANK_UNIT * count)

    # --- reading -------------------------------------------------------------------------
    def get_max_offset_in_queue(self) -> int:
        return self.mfq.get_max_offset() // CQ_STORE_UNIT_SIZE

    def get_min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    def get_unit(self, index: int) -> tuple[int, int, int] | None:
        """(commitLogOffset, size, tagsCode) at logical offset ``index``, or None."""
        pos = index * CQ_STORE_UNIT_SIZE
        if index < 0 or pos < self.min_logic_offset:
            return None
        raw = self.mfq.read(pos, CQ_STORE_UNIT_SIZE)
        return None if raw is None else CQ_UNIT.unpack(raw)

    def get_index_buffer(self, start_index: int) -> bytes | None:
        """Units from ``start_index`` to the end of that file's written data (never crosses files)."""
        pos = start_index * CQ_STORE_UNIT_SIZE
        if start_index < 0 or pos < self.min_logic_offset:
            return None
        mf = self.mfq.find_mapped_file_by_offset(pos)
        if mf is None:
            return None
        in_file = pos % self.mapped_file_size
        if in_file >= mf.wrote_position:
            return None
        return mf.read_to_end(in_file)

    def iterate_from(self, start_index: int) -> Iterator[tuple[int, int, int, int]]:
        """(queue_offset, commitLogOffset, size, tagsCode) from ``start_index`` to the end of that file."""
        buf = self.get_index_buffer(start_index)
        if buf is None:
            return
        for n, (offset, size, tags) in enumerate(CQ_UNIT.iter_unpack(buf)):
            yield start_index + n, offset, size, tags

    def roll_next_file(self, index: int) -> int:
        units = self.mapped_file_size // CQ_STORE_UNIT_SIZE
        return index + units - index % units

    def get_last_offset(self) -> int:
        """Commit-log end of the last unit (-1 when empty)."""
        return self.max_physic_offset

    def flush(self, least_pages: int) -> bool:
        return self.mfq.flush(least_pages)
