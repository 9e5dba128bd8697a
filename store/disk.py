"""The disk seam: a small file-system interface with two implementations.

``OsDisk`` writes real files under a root directory. ``MemoryDisk`` keeps files in memory and
remembers, per file, what has been made durable by ``flush`` so that it can play the two crash
kinds of a broker host:

* a *process crash* (kill -9) keeps every write (the page cache survives): nothing to do;
* a *power failure* keeps only flushed bytes, except that a prefix of the unflushed range may
  have reached the platter (a torn write), chosen by the caller's ``random.Random``. The tear falls
  on a 512-byte sector boundary: a sector is written whole or not at all.

File length is data, not metadata: a file truncated and rewritten in place (a config file) but
never flushed comes back short or empty after a power failure, like #5905's 0-byte files.
Creating, renaming and deleting files are taken as durable at once (a simplification: the store
never relies on a directory fsync).

Paths are relative, '/'-separated and rooted at the store directory.
"""

from __future__ import annotations

import os
import random
from typing import Protocol


class DiskFile(Protocol):
    path: str

    def size(self) -> int: ...

    def read(self, pos: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``pos`` (short at the end of the file)."""
        ...

    def write(self, pos: int, data: bytes) -> None: ...

    def flush(self) -> None:
        """Make every write so far durable (fsync / MappedByteBuffer.force)."""
        ...

    def close(self) -> None: ...


class Disk(Protocol):
    def exists(self, path: str) -> bool: ...

    def isdir(self, path: str) -> bool: ...

    def listdir(self, path: str) -> list[str]:
        """Sorted names directly below ``path``; empty when it does not exist."""
        ...

    def makedirs(self, path: str) -> None: ...

    def open(self, path: str, create_size: int | None = None) -> DiskFile:
        """Open an existing file, or create it zero-filled with ``create_size`` bytes."""
        ...

    def file_size(self, path: str) -> int: ...

    def read_file(self, path: str) -> bytes | None:
        """The whole file, or None when it does not exist."""
        ...

    def write_file(self, path: str, data: bytes, fsync: bool = False) -> None:
        """Truncate and write in place, as ordinary Java file I/O does (no fsync unless asked)."""
        ...

    def delete(self, path: str) -> None: ...

    def rename(self, src: str, dst: str) -> None: ...


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


# --------------------------------------------------------------------------------------------
# Real files


class _OsFile:
    __slots__ = ("path", "_fd")

    def __init__(self, path: str, real: str, create_size: int | None) -> None:
        self.path = path
        exists = os.path.exists(real)
        if not exists and create_size is None:
            raise FileNotFoundError(real)
        self._fd = os.open(real, os.O_RDWR | os.O_CREAT, 0o644)
        if not exists and create_size:
            os.ftruncate(self._fd, create_size)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def read(self, pos: int, length: int) -> bytes:
        return os.pread(self._fd, length, pos)

    def write(self, pos: int, data: bytes) -> None:
        os.pwrite(self._fd, data, pos)

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class OsDisk:
    """Real files below ``root``."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        os.makedirs(self.root, exist_ok=True)

    def _real(self, path: str) -> str:
        return os.path.join(self.root, *path.split("/")) if path else self.root

    def exists(self, path: str) -> bool:
        return os.path.exists(self._real(path))

    def isdir(self, path: str) -> bool:
        return os.path.isdir(self._real(path))

    def listdir(self, path: str) -> list[str]:
        real = self._real(path)
        return sorted(os.listdir(real)) if os.path.isdir(real) else []

    def makedirs(self, path: str) -> None:
        os.makedirs(self._real(path), exist_ok=True)

    def open(self, path: str, create_size: int | None = None) -> _OsFile:
        if create_size is not None:
            self.makedirs(parent_of(path))
        return _OsFile(path, self._real(path), create_size)

    def file_size(self, path: str) -> int:
        return os.path.getsize(self._real(path))

    def read_file(self, path: str) -> bytes | None:
        try:
            with open(self._real(path), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write_file(self, path: str, data: bytes, fsync: bool = False) -> None:
        self.makedirs(parent_of(path))
        with open(self._real(path), "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())

    def delete(self, path: str) -> None:
        real = self._real(path)
        if os.path.isdir(real):
            os.rmdir(real)
        elif os.path.exists(real):
            os.remove(real)

    def rename(self, src: str, dst: str) -> None:
        os.replace(self._real(src), self._real(dst))


# --------------------------------------------------------------------------------------------
# In-memory files with crash semantics


SECTOR_SIZE = 512


SNAPSHOT_CHUNK = 64 * 1024
_ZERO_CHUNK = bytes(SNAPSHOT_CHUNK)


def _nonzero_chunks(data: bytearray) -> dict[int, bytes]:
    chunks = {}
    for index, start in enumerate(range(0, len(data), SNAPSHOT_CHUNK)):
        chunk = bytes(data[start : start + SNAPSHOT_CHUNK])
        if chunk != _ZERO_CHUNK[: len(chunk)]:
            chunks[index] = chunk
    return chunks


class _MemFile:
    """One file: what the page cache holds (``data``) and what is on the platter (``durable``).

    Sparse, like a preallocated file on a real file system: ``length`` (``durable_length``) is the
    file's size, and only the bytes up to the last one ever written are held; the rest reads as zeros.
    A 1 GiB commit-log file with 40 messages in it costs a few kilobytes."""

    __slots__ = ("path", "data", "length", "durable", "durable_length", "dirty_lo", "dirty_hi")

    def __init__(self, path: str, size: int) -> None:
        self.path = path
        self.data = bytearray()
        self.length = size
        self.durable = bytearray()
        self.durable_length = size
        self.dirty_lo = -1  # unflushed byte range [dirty_lo, dirty_hi); -1 when clean
        self.dirty_hi = -1

    # The DiskFile interface (handles are the file objects themselves: no per-call look-up).
    def size(self) -> int:
        return self.length

    def read(self, pos: int, length: int) -> bytes:
        end = min(pos + length, self.length)
        if end <= pos:
            return b""
        chunk = bytes(self.data[pos:end])
        return chunk if len(chunk) == end - pos else chunk + bytes(end - pos - len(chunk))

    def contents(self) -> bytes:
        """The whole file, zeros included."""
        return self.read(0, self.length)

    def durable_bytes(self) -> bytes:
        """What the platter holds (the page cache aside), zeros included."""
        return bytes(self.durable[: self.durable_length]) + bytes(max(0, self.durable_length - len(self.durable)))

    def write(self, pos: int, data: bytes) -> None:
        end = pos + len(data)
        if end > self.length:
            self.length = end
        if end > len(self.data):
            self.data.extend(bytes(end - len(self.data)))
        self.data[pos:end] = data
        if self.dirty_lo < 0:
            self.dirty_lo, self.dirty_hi = pos, end
        else:
            if pos < self.dirty_lo:
                self.dirty_lo = pos
            if end > self.dirty_hi:
                self.dirty_hi = end

    def flush(self) -> None:
        if self.dirty_lo < 0:
            return
        if self.durable_length != self.length:
            self.durable = bytearray(self.data)
            self.durable_length = self.length
        else:
            if len(self.durable) < self.dirty_hi:
                self.durable.extend(bytes(self.dirty_hi - len(self.durable)))
            self.durable[self.dirty_lo : self.dirty_hi] = self.data[self.dirty_lo : self.dirty_hi]
        self.dirty_lo = self.dirty_hi = -1

    def close(self) -> None:
        pass

    def lose_unflushed(self, rng: random.Random) -> int:
        """Power failure: keep the durable bytes plus a torn prefix of the unflushed range.

        Returns how many unflushed bytes were lost."""
        if self.dirty_lo < 0:
            return 0
        lo, hi = self.dirty_lo, self.dirty_hi
        first_boundary = (lo // SECTOR_SIZE + 1) * SECTOR_SIZE
        cuts = [lo, *range(first_boundary, hi, SECTOR_SIZE), hi]
        torn = rng.choice(cuts) - lo
        survived = bytearray(self.durable)
        if len(survived) < lo + torn:
            survived.extend(bytes(lo + torn - len(survived)))
        survived[lo : lo + torn] = self.data[lo : lo + torn]
        self.data = survived
        self.durable = bytearray(survived)
        self.length = self.durable_length = max(self.durable_length, lo + torn)
        self.dirty_lo = self.dirty_hi = -1
        return hi - lo - torn


class MemoryDisk:
    """Files in memory with page-cache vs durable state, for simulation and crash tests."""

    def __init__(self) -> None:
        self._files: dict[str, _MemFile] = {}
        self._dirs: set[str] = {""}
        self._dirty_seen_ms: dict[str, int] = {}  # when writeback first saw a file dirty

    def exists(self, path: str) -> bool:
        return path in self._files or path in self._dirs

    def isdir(self, path: str) -> bool:
        return path in self._dirs

    def listdir(self, path: str) -> list[str]:
        prefix = path + "/" if path else ""
        names = {
            p[len(prefix) :].split("/", 1)[0]
            for p in (*self._files, *self._dirs)
            if p.startswith(prefix) and len(p) > len(prefix)
        }
        return sorted(names)

    def makedirs(self, path: str) -> None:
        while path and path not in self._dirs:
            self._dirs.add(path)
            path = parent_of(path)

    def open(self, path: str, create_size: int | None = None) -> _MemFile:
        f = self._files.get(path)
        if f is None:
            if create_size is None:
                raise FileNotFoundError(path)
            self.makedirs(parent_of(path))
            f = self._files[path] = _MemFile(path, create_size)
        return f

    def file_size(self, path: str) -> int:
        return self._files[path].length

    def read_file(self, path: str) -> bytes | None:
        f = self._files.get(path)
        return None if f is None else f.contents()

    def write_file(self, path: str, data: bytes, fsync: bool = False) -> None:
        self.makedirs(parent_of(path))
        f = self._files.get(path)
        if f is None:
            f = self._files[path] = _MemFile(path, 0)
        # Truncation reaches the disk at once (metadata); the new content only with a flush.
        f.data = bytearray()
        del f.durable[:]
        f.length = f.durable_length = 0
        f.dirty_lo = f.dirty_hi = -1
        f.write(0, data)
        if fsync:
            f.flush()

    def delete(self, path: str) -> None:
        if self._files.pop(path, None) is None:
            self._dirs.discard(path)

    def rename(self, src: str, dst: str) -> None:
        f = self._files.pop(src)
        f.path = dst
        self.makedirs(parent_of(dst))
        self._files[dst] = f

    def unflushed_from(self, path: str) -> int | None:
        """The first byte of ``path`` the page cache holds but the platter may not (None: all flushed).
        A recovery sets the store's flushed position without flushing, so only the disk knows this."""
        f = self._files.get(path)
        return None if f is None or f.dirty_lo < 0 else f.dirty_lo

    # Crash semantics --------------------------------------------------------------------
    def process_crash(self) -> None:
        """kill -9: the page cache survives, so every write is kept. Nothing to do."""

    def power_failure(self, rng: random.Random) -> int:
        """OS crash: drop what was not flushed (a torn prefix may survive). Returns bytes lost."""
        return sum(self._files[p].lose_unflushed(rng) for p in sorted(self._files))

    def snapshot(self, skip_prefix: str = "") -> dict[str, tuple[int, dict[int, bytes]]]:
        """A copy of every file (page-cache view) not under ``skip_prefix``: an operator's store backup.

        Each file is kept as (its length, the non-zero chunks of what was written, by index): preallocated
        mapped files and the sparse timer wheel cost what they hold, not what they reserve."""
        return {p: (f.length, _nonzero_chunks(f.data)) for p, f in sorted(self._files.items())
                if not (skip_prefix and p.startswith(skip_prefix))}

    def restore(self, snapshot: dict[str, tuple[int, dict[int, bytes]]], skip_prefix: str = "") -> None:
        """Put a snapshot back (files and directories not in it are deleted, as a restored backup has none of
        them: e.g. a consume-queue directory created since), leaving ``skip_prefix`` files as they are now."""
        for path in sorted(self._files):
            if not (skip_prefix and path.startswith(skip_prefix)) and path not in snapshot:
                del self._files[path]
        kept = {""}
        for path in (*snapshot, *self._files):
            while path:
                path = parent_of(path)
                kept.add(path)
        self._dirs = {d for d in self._dirs if d in kept or (skip_prefix and d.startswith(skip_prefix))}
        for path, (length, chunks) in snapshot.items():
            f = _MemFile(path, length)
            f.data = bytearray(max((i * SNAPSHOT_CHUNK + len(c) for i, c in chunks.items()), default=0))
            for index, chunk in chunks.items():
                f.data[index * SNAPSHOT_CHUNK : index * SNAPSHOT_CHUNK + len(chunk)] = chunk
            f.durable = bytearray(f.data)
            self.makedirs(parent_of(path))
            self._files[path] = f

    def writeback(self, now_ms: int, expire_ms: int = 30_000) -> int:
        """The kernel's flusher (run every few seconds): write back files dirty for ``expire_ms`` or longer.

        Linux writes dirty pages older than ``dirty_expire_centisecs`` (30 s) on its own; without this a
        file written once and never fsynced would stay volatile forever. Returns how many files it wrote."""
        written = 0
        for path in sorted(self._files):
            f = self._files[path]
            if f.dirty_lo < 0:
                self._dirty_seen_ms.pop(path, None)
                continue
            seen = self._dirty_seen_ms.setdefault(path, now_ms)
            if now_ms - seen >= expire_ms:
                f.flush()
                del self._dirty_seen_ms[path]
                written += 1
        return written

    def unflushed_bytes(self) -> int:
        return sum(f.dirty_hi - f.dirty_lo for f in self._files.values() if f.dirty_lo >= 0)

    def dump(self, os_root: str) -> None:
        """Write every file (page-cache view) below a real directory, e.g. a run's ``store/``."""
        for d in sorted(self._dirs):
            os.makedirs(os.path.join(os_root, *d.split("/")) if d else os_root, exist_ok=True)
        for p in sorted(self._files):
            real = os.path.join(os_root, *p.split("/"))
            os.makedirs(os.path.dirname(real), exist_ok=True)
            f = self._files[p]
            with open(real, "wb") as out:
                out.write(f.data[: f.length])
                out.truncate(f.length)  # the never-written rest: zeros (a sparse file where the FS can)
