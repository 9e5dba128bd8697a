"""StoreCheckpoint: the 4096-byte ``checkpoint`` file of timestamps recovery starts from (2.4)."""

from __future__ import annotations

import struct

from .disk import Disk

CHECKPOINT_FILE = "checkpoint"
CHECKPOINT_FILE_SIZE = 4096
_FIELDS = struct.Struct(">qqqqq")
FIELDS = ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp", "master_flushed_offset",
          "confirm_phy_offset")  # big-endian longs from @0, in this order


def decode_fields(raw: bytes) -> dict[str, int]:
    """The fields a (possibly short) ``checkpoint`` holds, whole longs only: pure (``inspect`` reads with it)."""
    return {name: int.from_bytes(raw[i * 8 : i * 8 + 8], "big", signed=True)
            for i, name in enumerate(FIELDS) if len(raw) >= i * 8 + 8}
CHECKPOINT_MARGIN_MS = 3000  # getMinTimestamp's safety margin (alibaba #467)


class StoreCheckpoint:
    def __init__(self, disk: Disk, path: str = CHECKPOINT_FILE) -> None:
        self.disk = disk
        self.path = path
        existed = disk.exists(path)
        self.handle = disk.open(path, create_size=None if existed else CHECKPOINT_FILE_SIZE)
        raw = self.handle.read(0, _FIELDS.size).ljust(_FIELDS.size, b"\0")
        (
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.master_flushed_offset,
            self.confirm_phy_offset,
        ) = _FIELDS.unpack(raw)
        self._flushed_fields = raw[: _FIELDS.size]  # what the last flush (or the load) left on disk

    def _packed(self) -> bytes:
        return _FIELDS.pack(self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp,
                            self.master_flushed_offset, self.confirm_phy_offset)

    def is_flushed(self) -> bool:
        """True when ``flush`` would write the bytes already on disk (a driver may skip that round)."""
        return self._packed() == self._flushed_fields

    def flush(self) -> None:
        packed = self._packed()
        self.handle.write(0, packed)
        self.handle.flush()
        self._flushed_fields = packed

    def get_min_timestamp(self) -> int:
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - CHECKPOINT_MARGIN_MS)

    def get_min_timestamp_index(self) -> int:
        return min(self.get_min_timestamp(), self.index_msg_timestamp)

    def close(self) -> None:
        self.handle.close()
