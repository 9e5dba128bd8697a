"""TimerWheel and Slot: the ``timerwheel`` file of 32-byte slots (ROCKETMQ.md 7.3).

The wheel holds ``slots_total * 2`` slots; a time lands in slot ``(time_ms // precision_ms) mod (slots_total * 2)``
and the slot remembers its time (in precision units) so that a slot left over from a previous lap counts as
empty. As in RocketMQ the wheel works on an in-memory copy that reaches the file only at ``flush()``.

Layout of one slot (big-endian): long time / precision | long firstPos | long lastPos | int num | int magic.
"""

from __future__ import annotations

import heapq
import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..disk import Disk
from ..mapped_file import StoreLoadError

TIMER_WHEEL_FILE = "timerwheel"
SLOT_SIZE = 32
TIMER_BLANK_SLOTS = 60  # slots kept clear between the read time and the far end of the wheel
BLANK = -1
IGNORE = -2
SLOT_STRUCT = struct.Struct(">qqqii")
_TIME_FIRST_LAST = struct.Struct(">qqq")
_Q = struct.Struct(">q")
# A wheel is mostly zero: scans compare whole blocks with zero first, then the 4 KiB chunks of a non-zero block.
_SCAN_CHUNK = 4096
_SCAN_BLOCK = 256 * _SCAN_CHUNK
_ZERO_BLOCK = bytes(_SCAN_BLOCK)
_ZERO_CHUNK = bytes(_SCAN_CHUNK)


@dataclass(frozen=True, slots=True)
class Slot:
    """One slot as ``getSlot`` returns it; ``time_ms`` is -1 for an empty (or stale) slot."""

    time_ms: int
    first_pos: int
    last_pos: int
    num: int = 0
    magic: int = 0


EMPTY_SLOT = Slot(-1, -1, -1)


@dataclass(frozen=True, slots=True)
class StoredSlot:
    """A slot as the file holds it: ``time_units`` is the slot's time in precision units (0 for unused)."""

    index: int
    time_units: int
    first_pos: int
    last_pos: int
    num: int
    magic: int


def _nonzero_chunks(data, end: int) -> Iterator[tuple[int, int]]:
    """(start, end) of every ``_SCAN_CHUNK`` piece of ``data[:end]`` holding a non-zero byte, in order."""
    for block in range(0, end, _SCAN_BLOCK):
        block_end = min(block + _SCAN_BLOCK, end)
        if data[block:block_end] == (_ZERO_BLOCK if block_end - block == _SCAN_BLOCK else bytes(block_end - block)):
            continue
        for chunk in range(block, block_end, _SCAN_CHUNK):
            chunk_end = min(chunk + _SCAN_CHUNK, block_end)
            if data[chunk:chunk_end] != (_ZERO_CHUNK if chunk_end - chunk == _SCAN_CHUNK else bytes(chunk_end - chunk)):
                yield chunk, chunk_end


def iter_used_slots(buf, chunks=None) -> Iterator[StoredSlot]:
    """Every slot with a non-zero byte, by index: pure (``inspect`` reads with it). Only the (start, end) ``chunks``
    are looked at when given (those known to hold every non-zero byte), else ``_nonzero_chunks``'s. A partial slot
    at the end is ignored."""
    if chunks is None:
        chunks = _nonzero_chunks(buf, len(buf) - len(buf) % SLOT_SIZE)
    for chunk, chunk_end in chunks:
        for pos in range(chunk, chunk_end, SLOT_SIZE):
            if any(buf[pos : pos + SLOT_SIZE]):
                yield StoredSlot(pos // SLOT_SIZE, *SLOT_STRUCT.unpack_from(buf, pos))


def encode_slot(time_ms: int, precision_ms: int, first_pos: int, last_pos: int, num: int = 0, magic: int = 0) -> bytes:
    """The 32 bytes of a slot; the time is stored in precision units (compatible with 1 s-only versions)."""
    return SLOT_STRUCT.pack(time_ms // precision_ms, first_pos, last_pos, num, magic)


class TimerWheel:
    def __init__(self, disk: Disk, slots_total: int, precision_ms: int, path: str = TIMER_WHEEL_FILE) -> None:
        self.slots_total = slots_total
        self.precision_ms = precision_ms
        self.path = path
        self.slot_count = slots_total * 2
        self.wheel_length = self.slot_count * SLOT_SIZE
        if disk.exists(path):
            size = disk.file_size(path)
            if size != 0 and size != self.wheel_length:
                raise StoreLoadError(f"{path}: timer wheel length {size} bytes, expected {self.wheel_length} "
                                     f"(timer_slots_total {slots_total} x 2 x {SLOT_SIZE})")
            if size == 0:  # RandomAccessFile.setLength extends an empty file
                disk.delete(path)
        existed = disk.exists(path)
        self.handle = disk.open(path, create_size=None if existed else self.wheel_length)
        # The in-memory copy: anonymous memory is zero pages until written, so a fresh 7-day wheel (38 MiB at 1 s)
        # costs what its used slots touch, not a 38 MiB allocation and copy at every broker start.
        self.buf = mmap.mmap(-1, self.wheel_length)
        if existed:
            loaded = self._load_nonzero()
        self._dirty: set[int] = set()  # slot indices changed since the last flush
        # Acceleration only (not RocketMQ state): the slot times (precision units) ever written, as a heap, so
        # the dequeue can jump over a run of empty slots instead of testing them one by one.
        self._times: list[int] = []
        self._queued: set[int] = set()
        self._used: set[int] = set()  # indices of slots with a non-zero byte
        if existed:
            self._index_used_slots(loaded)

    def release(self) -> None:
        """Its broker is gone: give the in-memory copy back now, not when a collection finds the dead broker's
        reference cycles. Any later read of this wheel raises (ValueError: mmap closed)."""
        self.buf.close()

    # --- reading ---------------------------------------------------------------------------------------------
    def get_slot_index(self, time_ms: int) -> int:
        return (time_ms // self.precision_ms) % self.slot_count

    def get_raw_slot(self, time_ms: int) -> Slot:
        units, first, last, num, magic = SLOT_STRUCT.unpack_from(self.buf, self.get_slot_index(time_ms) * SLOT_SIZE)
        return Slot(units * self.precision_ms, first, last, num, magic)

    def get_slot(self, time_ms: int) -> Slot:
        """The slot of ``time_ms``, or EMPTY_SLOT when the stored time is another lap's (or zero)."""
        pos = self.get_slot_index(time_ms) * SLOT_SIZE
        units, first, last, num, magic = SLOT_STRUCT.unpack_from(self.buf, pos)
        if units * self.precision_ms != time_ms // self.precision_ms * self.precision_ms:
            return EMPTY_SLOT
        return Slot(units * self.precision_ms, first, last, num, magic)

    def has_dirty_slots(self) -> bool:
        return bool(self._dirty)

    def get_num(self, time_ms: int) -> int:
        return self.get_slot(time_ms).num

    # --- writing ---------------------------------------------------------------------------------------------
    def put_slot(self, time_ms: int, first_pos: int, last_pos: int, num: int | None = None,
                 magic: int | None = None) -> None:
        """putSlot: the 3-argument form leaves num and magic as they were (RocketMQ does the same)."""
        index = self.get_slot_index(time_ms)
        pos = index * SLOT_SIZE
        units = time_ms // self.precision_ms
        if num is None:
            _TIME_FIRST_LAST.pack_into(self.buf, pos, units, first_pos, last_pos)
        else:
            SLOT_STRUCT.pack_into(self.buf, pos, units, first_pos, last_pos, num, magic or 0)
        self._dirty.add(index)
        self._used.add(index)
        self._remember(units)

    def revise_slot(self, time_ms: int, first_pos: int, last_pos: int, force: bool) -> None:
        """reviseSlot (recovery): relink a slot's ends; a slot of another lap is re-created when forced."""
        index = self.get_slot_index(time_ms)
        pos = index * SLOT_SIZE
        if time_ms // self.precision_ms != _Q.unpack_from(self.buf, pos)[0]:
            if force:
                self.put_slot(time_ms, last_pos if first_pos == IGNORE else first_pos, last_pos)
            return
        if first_pos != IGNORE:
            _Q.pack_into(self.buf, pos + 8, first_pos)
        if last_pos != IGNORE:
            _Q.pack_into(self.buf, pos + 16, last_pos)
        self._dirty.add(index)

    # --- whole-wheel questions -------------------------------------------------------------------------------
    def check_phy_pos(self, time_start_ms: int, max_offset: int) -> int:
        """Smallest firstPos of the live slots (one lap from ``time_start_ms``) whose lastPos > ``max_offset``.

        RocketMQ walks every slot; only slots ever written can match, so only those are looked at."""
        min_first = (1 << 63) - 1
        start_units = time_start_ms // self.precision_ms
        first_index = start_units % self.slot_count
        for index in self._used_indices():
            units, first, last = _TIME_FIRST_LAST.unpack_from(self.buf, index * SLOT_SIZE)
            if units != start_units + (index - first_index) % self.slot_count:
                continue
            if last > max_offset and first < min_first:
                min_first = first
        return min_first

    def get_all_num(self, time_start_ms: int) -> int:
        total = 0
        start_units = time_start_ms // self.precision_ms
        first_index = start_units % self.slot_count
        for index in self._used_indices():
            units, _f, _l, num, _m = SLOT_STRUCT.unpack_from(self.buf, index * SLOT_SIZE)
            if units == start_units + (index - first_index) % self.slot_count:
                total += num
        return total

    def used_slots(self) -> list[tuple[int, Slot]]:
        """(index, raw slot) of every slot with a non-zero byte, by index (for inspection and tests)."""
        out = []
        for index in self._used_indices():
            units, first, last, num, magic = SLOT_STRUCT.unpack_from(self.buf, index * SLOT_SIZE)
            out.append((index, Slot(units * self.precision_ms, first, last, num, magic)))
        return out

    def next_used_time_ms(self, from_ms: int, before_ms: int) -> int | None:
        """The earliest time in [from_ms, before_ms) whose slot may be non-empty, or None (an acceleration)."""
        p = self.precision_ms
        lo, hi = from_ms // p, -(-before_ms // p)
        heap = self._times
        while heap and heap[0] < lo:
            self._queued.discard(heapq.heappop(heap))
        if heap and heap[0] < hi:
            return heap[0] * p
        return None

    # --- flush -----------------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Copy the changed slots into the file and force it (the only way the file changes)."""
        if self._dirty:
            indices = sorted(self._dirty)
            self._dirty.clear()
            run_start = prev = indices[0]
            for index in indices[1:] + [-2]:
                if index != prev + 1:
                    lo, hi = run_start * SLOT_SIZE, (prev + 1) * SLOT_SIZE
                    self.handle.write(lo, bytes(self.buf[lo:hi]))
                    run_start = index
                prev = index
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()

    # --- internals -------------------------------------------------------------------------------------------
    def _remember(self, units: int) -> None:
        if units not in self._queued:
            self._queued.add(units)
            heapq.heappush(self._times, units)

    def _used_indices(self) -> list[int]:
        return sorted(self._used)

    def _load_nonzero(self) -> list[tuple[int, int]]:
        """Copy the file into the buffer a block at a time, leaving the (still zero) pages of empty chunks alone;
        the non-zero chunks copied, in order."""
        buf, length = self.buf, self.wheel_length
        loaded = []
        for block in range(0, length, _SCAN_BLOCK):
            raw = self.handle.read(block, min(_SCAN_BLOCK, length - block))
            for chunk, chunk_end in _nonzero_chunks(raw, len(raw)):
                buf[block + chunk : block + chunk_end] = raw[chunk:chunk_end]
                loaded.append((block + chunk, block + chunk_end))
        return loaded

    def _index_used_slots(self, loaded: list[tuple[int, int]]) -> None:
        """At load: note every slot with a non-zero byte (a zero slot can never match a real time), in index order;
        only the chunks the load copied can hold one."""
        for slot in iter_used_slots(self.buf, loaded):
            self._used.add(slot.index)
            self._remember(slot.time_units)
