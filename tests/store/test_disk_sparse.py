"""The in-memory disk is sparse: a preallocated 1 GiB file holds only what was written (issue 19: 2.2 GB
of RSS for 40 messages), and reads, flushes, power failures and snapshots behave as on a full file."""

from __future__ import annotations

import random

from store.disk import MemoryDisk

GIB = 1 << 30


def test_a_preallocated_file_holds_only_what_was_written(tmp_path):
    disk = MemoryDisk()
    f = disk.open("commitlog/00000000000000000000", create_size=GIB)
    f.write(100, b"abc")
    assert f.size() == disk.file_size("commitlog/00000000000000000000") == GIB
    assert len(f.data) == 103 and len(f.durable) == 0
    assert f.read(98, 8) == b"\0\0abc\0\0\0" and f.read(GIB - 2, 10) == b"\0\0" and f.read(GIB, 4) == b""
    f.flush()
    assert len(f.durable) == 103
    snapshot = disk.snapshot()
    assert sum(len(chunk) for _length, chunks in snapshot.values() for chunk in chunks.values()) == 103
    f.write(200, b"later")
    assert disk.power_failure(random.Random(1)) in (0, 5)
    assert f.size() == GIB and f.read(100, 3) == b"abc"
    disk.restore(snapshot)
    g = disk.open("commitlog/00000000000000000000")
    assert g.size() == GIB and g.read(100, 3) == b"abc" and g.read(200, 5) == b"\0" * 5
    disk.dump(str(tmp_path))
    written = tmp_path / "commitlog" / "00000000000000000000"
    assert written.stat().st_size == GIB
    with open(written, "rb") as out:
        out.seek(100)
        assert out.read(3) == b"abc"


def test_a_file_written_past_its_size_grows_and_a_power_failure_keeps_the_durable_length():
    disk = MemoryDisk()
    disk.write_file("config/topics.json", b"{}", fsync=True)
    f = disk.open("config/topics.json")
    f.write(2, b"x" * 600)  # unflushed growth
    assert f.size() == 602
    lost = disk.power_failure(random.Random(3))
    assert f.size() in (2, 512, 602) and lost == 602 - f.size()  # a sector-aligned prefix survives
