"""ConfigManager: .bak fallback on load, the three persist algorithms, crash and I/O fault sites (6.1)."""

from __future__ import annotations

import random

import pytest

from store.clock import ManualClock
from store.config_manager import PERSIST_4X, PERSIST_5_3_3, PERSIST_DEVELOP, ConfigManager, string2file
from store.consumer_offset import ConsumerOffsetManager
from store.disk import MemoryDisk, OsDisk
from store.faults import CRASH, FAIL, BrokerCrash

MAIN = "config/consumerOffset.json"
BAK = MAIN + ".bak"
TMP = MAIN + ".tmp"


class SiteFaults:
    """Answers ``action`` at one site and records every site asked."""

    def __init__(self, site: str, action: str) -> None:
        self.site, self.action = site, action
        self.asked: list[str] = []

    def at(self, site: str, detail: str = "") -> str | None:
        self.asked.append(site)
        return self.action if site == self.site else None


class RecordingDisk(MemoryDisk):
    """A MemoryDisk that remembers the file operations, to compare the persist algorithms."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple] = []

    def read_file(self, path):
        self.ops.append(("read", path))
        return super().read_file(path)

    def write_file(self, path, data, fsync=False):
        self.ops.append(("write", path, fsync))
        super().write_file(path, data, fsync)

    def delete(self, path):
        self.ops.append(("delete", path))
        super().delete(path)

    def rename(self, src, dst):
        self.ops.append(("rename", src, dst))
        super().rename(src, dst)

    def exists(self, path):
        self.ops.append(("exists", path))
        return super().exists(path)


def manager(disk, persist_mode=PERSIST_5_3_3, faults=None, json_shape="4.x"):
    kwargs = {"faults": faults} if faults is not None else {}
    return ConsumerOffsetManager(disk, ManualClock(), persist_mode=persist_mode, json_shape=json_shape, **kwargs)


def persisted(disk, offsets: dict[int, int], persist_mode=PERSIST_5_3_3) -> bytes:
    m = manager(disk, persist_mode)
    for queue_id, offset in offsets.items():
        m.commit_offset("h", "G", "T", queue_id, offset)
    m.persist()
    return disk.read_file(MAIN)


def reloaded(disk, persist_mode=PERSIST_5_3_3):
    m = manager(disk, persist_mode)
    ok = m.load()
    return ok, m


# --- load ---------------------------------------------------------------------------------------------------
def test_a_good_main_file_is_loaded():
    disk = MemoryDisk()
    persisted(disk, {0: 5})
    ok, m = reloaded(disk)
    assert ok and m.query_offset("G", "T", 0) == 5
    assert m.load_events == ["consumerOffset.json loaded"] and m.load_error is None


def test_a_malformed_main_file_falls_back_to_bak():
    disk = MemoryDisk()
    persisted(disk, {0: 5})
    persisted(disk, {0: 9})  # .bak holds 5
    disk.write_file(MAIN, b'{"offsetTable":{"T@G":{0:9')
    ok, m = reloaded(disk)
    assert ok and m.query_offset("G", "T", 0) == 5
    (event,) = m.load_events
    assert event.startswith("consumerOffset.json unreadable (FastjsonError: unexpected end of input")
    assert event.endswith("loaded .bak")
    assert disk.read_file(MAIN) == b'{"offsetTable":{"T@G":{0:9'  # 5.3.3 leaves the bad file in place


@pytest.mark.parametrize("main", [None, b""], ids=["missing", "empty"])
def test_a_missing_or_empty_main_file_falls_back_to_bak(main):
    disk = MemoryDisk()
    disk.write_file(BAK, b'{"offsetTable":{"T@G":{0:7}}}')
    if main is not None:
        disk.write_file(MAIN, main)
    ok, m = reloaded(disk)
    assert ok and m.query_offset("G", "T", 0) == 7
    assert m.load_events == [f"consumerOffset.json {'missing' if main is None else 'empty'}, loaded .bak"]


def test_a_structurally_wrong_main_file_falls_back_to_bak():
    disk = MemoryDisk()
    disk.write_file(MAIN, b'{"offsetTable":{"T@G":{"zero":1}}}')
    disk.write_file(BAK, b'{"offsetTable":{"T@G":{0:2}}}')
    ok, m = reloaded(disk)
    assert ok and m.query_offset("G", "T", 0) == 2
    assert "ValueError" in m.load_events[0]


def test_a_corrupt_bak_makes_load_fail_with_a_reason_naming_the_file_and_position():
    disk = MemoryDisk()
    disk.write_file(MAIN, b"{garbage")
    disk.write_file(BAK, b'{\n\t"offsetTable":{"T@G":{0:1,}}\n}')
    ok, m = reloaded(disk)
    assert not ok
    assert m.load_error.startswith("config/consumerOffset.json.bak unreadable: FastjsonError:")
    assert "line 2, column" in m.load_error and "\n" not in m.load_error
    assert m.load_events[-1].endswith("consumerOffset.json.bak unreadable (" + m.load_error.split(": ", 1)[1]
                                      + "): load failed")


def test_a_non_utf8_bak_also_fails():
    disk = MemoryDisk()
    disk.write_file(BAK, b'{"offsetTable":{"\xff@G":{0:1}}}')
    ok, m = reloaded(disk)
    assert not ok and "UnicodeDecodeError" in m.load_error


@pytest.mark.parametrize("bak", [None, b""], ids=["bak-missing", "bak-empty"])
def test_missing_or_empty_both_gives_an_empty_table_and_true(bak):
    disk = MemoryDisk()
    if bak is not None:
        disk.write_file(BAK, bak)
    ok, m = reloaded(disk)
    assert ok and m.offset_table == {}
    assert m.load_events == [
        f"consumerOffset.json missing, consumerOffset.json.bak {'missing' if bak is None else 'empty'}: "
        "starting with an empty table"]


def test_a_torn_main_file_after_a_power_failure_falls_back_to_bak():
    disk = MemoryDisk()
    good = b'{"offsetTable":{"T@G":{0:3}}}'
    disk.write_file(BAK, good, fsync=True)
    disk.write_file(MAIN, b'{"offsetTable":{"T@G":{0:4}}}')  # truncated and rewritten, never flushed
    assert disk.power_failure(random.Random(1)) > 0
    assert len(disk.read_file(MAIN)) < len(good)
    ok, m = reloaded(disk)
    assert ok and m.query_offset("G", "T", 0) == 3


def test_a_zero_byte_main_file_after_a_power_failure_falls_back_to_bak():
    new = b'{"offsetTable":{"T@G":{0:4}}}'
    for seed in range(1, 1000):  # the first seed whose torn write kept nothing (#5905's 0-byte file)
        disk = MemoryDisk()
        disk.write_file(BAK, b'{"offsetTable":{"T@G":{0:3}}}', fsync=True)
        disk.write_file(MAIN, new)
        disk.power_failure(random.Random(seed))
        if disk.read_file(MAIN) == b"":
            break
    else:
        pytest.fail("no seed leaves a 0-byte file")
    ok, m = reloaded(disk)
    assert ok and m.query_offset("G", "T", 0) == 3
    assert m.load_events == ["consumerOffset.json empty, loaded .bak"]


def test_develop_deletes_an_invalid_main_file_before_using_bak():
    disk = MemoryDisk()
    disk.write_file(MAIN, b"{broken")
    disk.write_file(BAK, b'{"offsetTable":{"T@G":{0:2}}}')
    ok, m = reloaded(disk, PERSIST_DEVELOP)
    assert ok and m.query_offset("G", "T", 0) == 2
    assert not disk.exists(MAIN)
    assert "deleted" in m.load_events[0]


# --- persist ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [PERSIST_5_3_3, PERSIST_4X, PERSIST_DEVELOP])
def test_each_persist_mode_leaves_main_and_bak_with_the_previous_content(mode):
    disk = MemoryDisk()
    first = persisted(disk, {0: 1}, mode)
    assert disk.read_file(MAIN) == first and not disk.exists(BAK) and not disk.exists(TMP)
    second = persisted(disk, {0: 2}, mode)
    assert first != second
    assert disk.read_file(MAIN) == second
    assert disk.read_file(BAK) == first
    assert not disk.exists(TMP)
    assert disk.listdir("config") == ["consumerOffset.json", "consumerOffset.json.bak"]


def _ops_of_second_persist(mode):
    disk = RecordingDisk()
    persisted(disk, {0: 1}, mode)
    m = manager(disk, mode)
    m.commit_offset("h", "G", "T", 0, 2)
    disk.ops.clear()
    m.persist()
    return disk.ops


def test_persist_5_3_3_copies_to_bak_then_overwrites_in_place_without_fsync():
    assert _ops_of_second_persist(PERSIST_5_3_3) == [
        ("read", MAIN), ("write", BAK, False), ("write", MAIN, False)]


def test_persist_4x_writes_tmp_copies_to_bak_deletes_and_renames_without_fsync():
    assert _ops_of_second_persist(PERSIST_4X) == [
        ("write", TMP, False), ("read", MAIN), ("write", BAK, False), ("delete", MAIN), ("rename", TMP, MAIN)]


def test_persist_develop_moves_main_to_bak_and_fsyncs_the_new_file():
    assert _ops_of_second_persist(PERSIST_DEVELOP) == [
        ("exists", MAIN), ("rename", MAIN, BAK), ("write", MAIN, True)]


def test_persist_5_3_3_loses_both_files_to_two_power_failures_but_develop_does_not():
    """#9705: after a 0-byte main, the next 5.3.3 persist copies the empty file over a good .bak."""
    results = {}
    for mode in (PERSIST_5_3_3, PERSIST_DEVELOP):
        for seed in range(100):  # the second power failure: the first seed that loses the unflushed write
            disk = MemoryDisk()
            disk.write_file(BAK, b'{"offsetTable":{"T@G":{0:3}}}', fsync=True)
            disk.write_file(MAIN, b"", fsync=True)  # what the first power failure left
            ok, m = reloaded(disk, mode)
            assert ok and m.query_offset("G", "T", 0) == 3
            m.commit_offset("h", "G", "T", 0, 4)
            m.persist()
            if disk.power_failure(random.Random(seed)) > 0 or mode == PERSIST_DEVELOP:
                break
        _, again = reloaded(disk, mode)
        results[mode] = again.query_offset("G", "T", 0)
    assert results[PERSIST_DEVELOP] == 4
    assert results[PERSIST_5_3_3] == -1  # torn main, empty .bak: the group's offsets are gone
    disk = MemoryDisk()
    disk.write_file(MAIN, b"")
    string2file(disk, MAIN, b"{}")
    assert disk.read_file(BAK) == b""


def test_persist_develop_survives_a_power_failure():
    disk = MemoryDisk()
    persisted(disk, {0: 1}, PERSIST_DEVELOP)
    second = persisted(disk, {0: 2}, PERSIST_DEVELOP)
    assert disk.power_failure(random.Random(3)) == 0
    assert disk.read_file(MAIN) == second


def test_a_crash_fault_raises_broker_crash_before_anything_is_written():
    for mode in (PERSIST_5_3_3, PERSIST_4X, PERSIST_DEVELOP):
        disk = RecordingDisk()
        faults = SiteFaults("persist.consumerOffset.json", CRASH)
        m = manager(disk, mode, faults)
        m.commit_offset("h", "G", "T", 0, 1)
        with pytest.raises(BrokerCrash) as info:
            m.persist()
        assert info.value.site == "persist.consumerOffset.json"
        assert faults.asked == ["persist.consumerOffset.json"]
        assert disk.ops == [] and disk.listdir("") == []


def test_a_crash_fault_keeps_the_previous_files_untouched():
    disk = MemoryDisk()
    first = persisted(disk, {0: 1})
    m = manager(disk, faults=SiteFaults("persist.consumerOffset.json", CRASH))
    m.commit_offset("h", "G", "T", 0, 2)
    with pytest.raises(BrokerCrash):
        m.persist()
    assert disk.read_file(MAIN) == first and not disk.exists(BAK)


def test_a_crash_fault_at_another_file_does_not_stop_this_persist():
    disk = MemoryDisk()
    m = manager(disk, faults=SiteFaults("persist.delayOffset.json", CRASH))
    m.commit_offset("h", "G", "T", 0, 1)
    m.persist()
    assert disk.exists(MAIN)


def test_an_io_failure_fault_writes_nothing_and_is_swallowed():
    disk = MemoryDisk()
    m = manager(disk, faults=SiteFaults("persist.consumerOffset.json", FAIL))
    m.commit_offset("h", "G", "T", 0, 1)
    m.persist()
    assert not disk.exists(MAIN)
    assert m.persist_errors == ["persist file config/consumerOffset.json exception: injected I/O error"]


def test_a_real_os_error_is_swallowed_like_javas_ioexception(tmp_path):
    disk = OsDisk(str(tmp_path))
    (tmp_path / "config").write_text("a file where the directory should be")
    m = manager(disk)
    m.commit_offset("h", "G", "T", 0, 1)
    m.persist()
    assert len(m.persist_errors) == 1 and m.persist_errors[0].startswith("persist file config/consumerOffset.json")


def test_persist_and_load_on_real_files(tmp_path):
    disk = OsDisk(str(tmp_path))
    persisted(disk, {0: 1, 1: 2})
    persisted(disk, {0: 3})
    assert (tmp_path / "config" / "consumerOffset.json.bak").read_text() == (
        '{\n\t"offsetTable":{\n\t\t"T@G":{0:1,1:2\n\t\t}\n\t}\n}')
    ok, m = reloaded(disk)
    assert ok and m.query_offsets("G", "T") == {0: 3}


def test_content_is_utf8():
    disk = MemoryDisk()
    m = manager(disk)
    m.commit_offset("h", "Gé", "主题", 0, 1)
    m.persist()
    assert "主题@Gé".encode() in disk.read_file(MAIN)
    ok, again = reloaded(disk)
    assert ok and again.query_offset("Gé", "主题", 0) == 1


def test_unknown_persist_mode_is_rejected():
    with pytest.raises(ValueError, match="persist_mode"):
        ConsumerOffsetManager(MemoryDisk(), ManualClock(), persist_mode="6.0")


def test_encode_returning_none_writes_nothing():
    class Nothing(ConfigManager):
        def encode(self, pretty=True):
            return None

        def decode(self, text):
            raise ValueError("never read")

    disk = MemoryDisk()
    Nothing(disk, "config/x.json").persist()
    assert disk.listdir("") == []


@pytest.mark.parametrize("mode", [PERSIST_5_3_3, PERSIST_4X, PERSIST_DEVELOP])
def test_skipping_identical_persists_leaves_the_same_files(mode):
    """A skipped persist is one that would rewrite main and .bak with the bytes they hold: the files agree
    with a manager that writes every time, and only the rewrites are missing from the listener's calls."""
    runs = {}
    for skip in (False, True):
        disk, told = MemoryDisk(), []
        manager = ConsumerOffsetManager(disk, ManualClock(1_700_000_000_000), persist_mode=mode)
        manager.skip_identical_persist = skip
        manager.persist_listeners.append(lambda name, _rounds, told=told: told.append(name))
        files = []
        for offset in (1, 1, 1, 1, 2, 2, 2, 3):
            manager.offset_table = {"T@G": {0: offset}}
            manager.persist()
            files.append((disk.read_file(manager.config_file_path), disk.read_file(manager.config_file_path + ".bak")))
        runs[skip] = files, len(told)
    assert runs[True][0] == runs[False][0]
    assert runs[False][1] == 8 and runs[True][1] == 5  # 1 1 . . 2 2 . 3: the third and later same bytes are skipped
