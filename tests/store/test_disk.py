import random

import pytest

from store.disk import MemoryDisk, OsDisk


@pytest.fixture(params=["memory", "os"])
def disk(request, tmp_path):
    return MemoryDisk() if request.param == "memory" else OsDisk(str(tmp_path / "root"))


def test_segment_files_positional_io_listing_rename_delete(disk):
    f = disk.open("commitlog/00000000000000000000", create_size=64)
    assert f.size() == 64
    f.write(10, b"hello")
    assert f.read(8, 9) == b"\0\0hello\0\0"
    f.flush()
    assert disk.listdir("commitlog") == ["00000000000000000000"]
    assert disk.listdir("") == ["commitlog"]
    assert disk.file_size("commitlog/00000000000000000000") == 64
    disk.write_file("config/topics.json", b"{}")
    assert disk.read_file("config/topics.json") == b"{}"
    disk.rename("config/topics.json", "config/topics.json.bak")
    assert disk.read_file("config/topics.json") is None
    assert disk.read_file("config/topics.json.bak") == b"{}"
    disk.delete("config/topics.json.bak")
    assert not disk.exists("config/topics.json.bak")
    with pytest.raises(FileNotFoundError):
        disk.open("nope")


def test_process_crash_keeps_every_write():
    disk = MemoryDisk()
    f = disk.open("a", create_size=16)
    f.write(0, b"abcd")
    disk.process_crash()
    assert disk.open("a").read(0, 4) == b"abcd"


def test_power_failure_keeps_flushed_bytes_and_tears_the_rest_at_sector_boundaries():
    volatile = bytes(range(256)) * 8  # 2048 bytes from position 8: sectors end at 512, 1024, 1536
    outcomes = set()
    for seed in range(60):
        disk = MemoryDisk()
        f = disk.open("a", create_size=4096)
        f.write(0, b"durable!")
        f.flush()
        f.write(8, volatile)
        lost = disk.power_failure(random.Random(seed))
        data = disk.open("a").read(0, 4096)
        assert data[:8] == b"durable!"
        survived = len(volatile) - lost
        assert data[8 : 8 + survived] == volatile[:survived]
        assert data[8 + survived :] == bytes(4096 - 8 - survived)
        outcomes.add(8 + survived)
    assert outcomes == {8, 512, 1024, 1536, 2048, 2056}  # nothing, whole sectors, or everything


def test_power_failure_empties_a_config_file_rewritten_in_place_without_fsync():
    outcomes = set()
    for seed in range(20):
        disk = MemoryDisk()
        disk.write_file("config/delayOffset.json", b"old", fsync=True)
        disk.write_file("config/delayOffset.json", b"new content")
        disk.power_failure(random.Random(seed))
        outcomes.add(disk.read_file("config/delayOffset.json"))
    assert outcomes == {b"", b"new content"}  # a 0-byte file (#5905) or the new one, never the old


def test_fsynced_write_file_survives_power_failure():
    disk = MemoryDisk()
    disk.write_file("x", b"kept", fsync=True)
    disk.power_failure(random.Random(3))
    assert disk.read_file("x") == b"kept"


def test_dump_writes_real_files(tmp_path):
    disk = MemoryDisk()
    disk.open("commitlog/00000000000000000000", create_size=8).write(0, b"12345678")
    disk.dump(str(tmp_path))
    assert (tmp_path / "commitlog" / "00000000000000000000").read_bytes() == b"12345678"
