"""Fixed-size segment files named by their start offset (RocketMQ's MappedFile/MappedFileQueue).

A file is named by the 20-digit zero-padded offset of its first byte. Positions live in memory:
at load every file counts as full until recovery truncates (``truncate_dirty_files``), and
truncation only moves positions — the stale bytes beyond stay on disk (ROCKETMQ.md 1.5, 2.6).
"""

from __future__ import annotations

from .disk import Disk, DiskFile

OS_PAGE_SIZE = 4096


class StoreLoadError(Exception):
    """A store file cannot be loaded; the message names the file and what is wrong."""


def offset_to_file_name(offset: int) -> str:
    return "%020d" % offset


class MappedFile:
    __slots__ = (
        "path", "file_from_offset", "file_size", "handle", "wrote_position", "flushed_position", "store_timestamp"
    )

    def __init__(self, disk: Disk, path: str, file_size: int, create: bool) -> None:
        self.path = path
        self.file_from_offset = int(path.rsplit("/", 1)[-1])
        self.file_size = file_size
        self.handle: DiskFile = disk.open(path, create_size=file_size if create else None)
        self.wrote_position = 0
        self.flushed_position = 0
        self.store_timestamp = 0  # store time of the last message appended (feeds the checkpoint)

    def is_full(self) -> bool:
        return self.wrote_position == self.file_size

    def append(self, data: bytes) -> None:
        self.handle.write(self.wrote_position, data)
        self.wrote_position += len(data)

    def read(self, pos: int, size: int) -> bytes | None:
        """Bytes [pos, pos+size) of this file, or None past the read position (selectMappedBuffer)."""
        if pos < 0 or pos + size > self.wrote_position:
            return None
        return self.handle.read(pos, size)

    def read_to_end(self, pos: int) -> bytes:
        return self.handle.read(pos, self.wrote_position - pos)

    def is_able_to_flush(self, least_pages: int) -> bool:
        if self.is_full():
            return self.flushed_position < self.wrote_position
        if least_pages > 0:
            return self.wrote_position // OS_PAGE_SIZE - self.flushed_position // OS_PAGE_SIZE >= least_pages
        return self.wrote_position > self.flushed_position

    def flush(self, least_pages: int) -> int:
        if self.is_able_to_flush(least_pages):
            self.handle.flush()
            self.flushed_position = self.wrote_position
        return self.flushed_position

    def set_positions(self, pos: int) -> None:
        self.wrote_position = self.flushed_position = pos


class MappedFileQueue:
    """The segment files of one directory: the commit log, or one consume queue."""

    def __init__(self, disk: Disk, store_path: str, mapped_file_size: int, *, physic_ts_every_flush: bool = False
                 ) -> None:
        self.disk = disk
        self.store_path = store_path
        self.mapped_file_size = mapped_file_size
        self.mapped_files: list[MappedFile] = []
        self.flushed_where = 0
        self.store_timestamp = 0  # of the file the last *thorough* flush looked at (feeds physicMsgTimestamp)
        self.physic_ts_every_flush = physic_ts_every_flush  # mutant: every flush round moves it

    # --- loading -------------------------------------------------------------------------
    def load(self) -> None:
        for name in self.disk.listdir(self.store_path):
            if not (len(name) == 20 and name.isdigit()):
                continue
            path = f"{self.store_path}/{name}"
            size = self.disk.file_size(path)
            if size != self.mapped_file_size:
                raise StoreLoadError(
                    f"{path}: length {size} bytes, expected {self.mapped_file_size} (the configured file size)"
                )
            mf = MappedFile(self.disk, path, self.mapped_file_size, create=False)
            mf.set_positions(self.mapped_file_size)
            self.mapped_files.append(mf)

    # --- finding -------------------------------------------------------------------------
    def get_first_mapped_file(self) -> MappedFile | None:
        return self.mapped_files[0] if self.mapped_files else None

    def get_last_mapped_file(self) -> MappedFile | None:
        return self.mapped_files[-1] if self.mapped_files else None

    def get_last_mapped_file_for_append(self, start_offset: int = 0) -> MappedFile:
        """The file to append to, creating the first or next one when needed."""
        last = self.mapped_files[-1] if self.mapped_files else None
        if last is not None and not last.is_full():
            return last
        if last is None:
            create_offset = start_offset - start_offset % self.mapped_file_size
        else:
            create_offset = last.file_from_offset + self.mapped_file_size
        mf = MappedFile(
            self.disk, f"{self.store_path}/{offset_to_file_name(create_offset)}", self.mapped_file_size, create=True
        )
        self.mapped_files.append(mf)
        return mf

    def find_mapped_file_by_offset(self, offset: int) -> MappedFile | None:
        if not self.mapped_files:
            return None
        size = self.mapped_file_size
        first = self.mapped_files[0].file_from_offset
        index = offset // size - first // size
        if 0 <= index < len(self.mapped_files):
            target = self.mapped_files[index]
            if target.file_from_offset <= offset < target.file_from_offset + size:
                return target
        if first <= offset < self.mapped_files[-1].file_from_offset + size:
            # the index names the wrong file (a gap or disorder in the list): Java falls back to a scan
            for mf in self.mapped_files:
                if mf.file_from_offset <= offset < mf.file_from_offset + size:
                    return mf
        return None

    def get_min_offset(self) -> int:
        return self.mapped_files[0].file_from_offset if self.mapped_files else -1

    def get_max_offset(self) -> int:
        last = self.get_last_mapped_file()
        return last.file_from_offset + last.wrote_position if last else 0

    def get_max_wrote_position(self) -> int:
        return self.get_max_offset()

    def read(self, offset: int, size: int) -> bytes | None:
        mf = self.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        return mf.read(offset % self.mapped_file_size, size)

    def roll_next_file(self, offset: int) -> int:
        return offset + self.mapped_file_size - offset % self.mapped_file_size

    # --- flushing ------------------------------------------------------------------------
    def flush(self, least_pages: int) -> bool:
        """Flush the file holding ``flushed_where`` (at most one file per call). True if nothing moved."""
        mf = self.find_mapped_file_by_offset(self.flushed_where)
        if mf is None:
            mf = self.get_first_mapped_file() if self.flushed_where == 0 else None
            if mf is None:
                return True
        if self.moves_store_timestamp(least_pages):  # Java: if (0 == flushLeastPages) setStoreTimestamp
            self.store_timestamp = mf.store_timestamp
        where = mf.file_from_offset + mf.flush(least_pages)
        unchanged = where == self.flushed_where
        self.flushed_where = where
        return unchanged

    def flush_all(self) -> None:
        for _ in range(len(self.mapped_files) + 1):
            if self.flush(0):
                break

    def flush_would_change(self, least_pages: int) -> bool:
        """Whether ``flush(least_pages)`` would change anything (bytes, positions, the timestamp it keeps).

        Mirrors ``flush``: a driver uses it to skip flush rounds that are provably no-ops."""
        mf = self.find_mapped_file_by_offset(self.flushed_where)
        if mf is None:
            mf = self.get_first_mapped_file() if self.flushed_where == 0 else None
            if mf is None:
                return False
        return (mf.is_able_to_flush(least_pages) or mf.file_from_offset + mf.flushed_position != self.flushed_where
                or (self.moves_store_timestamp(least_pages) and self.store_timestamp != mf.store_timestamp))

    def moves_store_timestamp(self, least_pages: int) -> bool:
        """Whether ``flush(least_pages)`` takes the file's store timestamp: only a thorough one does (Java's
        ``if (0 == flushLeastPages)``), unless the mutant moves it every round."""
        return least_pages == 0 or self.physic_ts_every_flush

    # --- truncation ----------------------------------------------------------------------
    def truncate_dirty_files(self, offset: int) -> None:
        """Cut the queue at ``offset``: later files are deleted, bytes beyond stay unzeroed."""
        keep: list[MappedFile] = []
        for mf in self.mapped_files:
            file_tail = mf.file_from_offset + self.mapped_file_size
            if file_tail > offset:
                if offset >= mf.file_from_offset:
                    mf.set_positions(offset % self.mapped_file_size)
                    keep.append(mf)
                else:
                    mf.handle.close()
                    self.disk.delete(mf.path)
            else:
                keep.append(mf)
        self.mapped_files = keep

    def delete_last_mapped_file(self) -> None:
        mf = self.mapped_files.pop()
        mf.handle.close()
        self.disk.delete(mf.path)

    def close(self) -> None:
        for mf in self.mapped_files:
            mf.handle.close()
