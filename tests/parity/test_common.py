"""Parity with RocketMQ's MixAllTest (common/src/test, rocketmq-all-4.9.8 and rocketmq-all-5.3.3) and DataVersionTest
(common/src/test at rocketmq-all-4.9.8, remoting/src/test at rocketmq-all-5.3.3)."""

from __future__ import annotations

import pytest

from store.clock import ManualClock
from store.config_manager import PERSIST_4X, PERSIST_5_3_3, string2file
from store.data_version import DataVersion
from store.disk import MemoryDisk, OsDisk
from store.fastjson import dumps


@pytest.fixture(params=["memory", "os"])
def disk(request, tmp_path):
    return MemoryDisk() if request.param == "memory" else OsDisk(str(tmp_path / "mixall"))


@pytest.mark.parametrize("persist_mode", [PERSIST_4X, PERSIST_5_3_3])
def test_string2file(disk, persist_mode):
    """Mirrors MixAllTest.testString2File (rocketmq-all-4.9.8, rocketmq-all-5.3.3), with each tag's algorithm; a
    second write keeps the first content as .bak."""
    string2file(disk, "MixAllTest", b"MixAll_testString2File", persist_mode)
    assert disk.read_file("MixAllTest") == b"MixAll_testString2File"
    string2file(disk, "MixAllTest", b"second", persist_mode)
    assert disk.read_file("MixAllTest") == b"second"
    assert disk.read_file("MixAllTest.bak") == b"MixAll_testString2File"


def test_file2string(disk):
    """Mirrors MixAllTest.testFile2String (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    disk.write_file("MixAllTest", b"TestForMixAll")
    assert disk.read_file("MixAllTest").decode() == "TestForMixAll"


def test_data_version_equals():
    """Mirrors DataVersionTest.testEquals (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    clock = ManualClock(1_700_000_000_000)
    version = DataVersion.now(clock)
    clock.advance(5)
    other = DataVersion.now(clock)
    other.timestamp_ms = version.timestamp_ms
    assert version == other


def test_data_version_equals_false_when_counter_different():
    """Mirrors DataVersionTest.testEquals_falseWhenCounterDifferent (rocketmq-all-4.9.8, rocketmq-all-5.3.3). (The
    null-counter variants have no counterpart: the counter here is a plain int.)"""
    clock = ManualClock(1_700_000_000_000)
    version, other = DataVersion.now(clock), DataVersion.now(clock)
    other.counter = 1
    assert version != other


@pytest.mark.parametrize("shape, keys", [("4.x", ["counter", "timestamp"]),
                                         ("5.x", ["counter", "stateVersion", "timestamp"])])
def test_data_version_encode(shape, keys):
    """Mirrors DataVersionTest.testEncode (rocketmq-all-5.3.3; the 4.x shape too): the version encodes to a
    non-empty JSON object and reads back equal."""
    version = DataVersion(1_700_000_000_000, 7, 3 if shape == "5.x" else 0)
    bean = version.to_json(shape)
    assert list(bean) == keys
    assert len(dumps(bean)) > 0
    assert DataVersion.from_json(bean) == version
