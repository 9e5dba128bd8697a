"""A copy of a hand-made store (a commit log, no consume queues) loads, and recovery rebuilds the queues."""

from __future__ import annotations

from store.clock import ManualClock
from store.config import MessageStoreConfig
from store.disk import MemoryDisk
from store.message_store import DefaultMessageStore
from store.store_dir import load_store_dir, mapped_file_sizes
from tests.store.test_locate import T0, _store


def test_recovery_rebuilds_the_consume_queues_of_a_commit_log_only_store(tmp_path):
    root = _store(tmp_path, [("T", i % 2, i // 2, T0 + i, 0, {"UNIQ_KEY": f"m{i}"}) for i in range(6)])
    sizes = mapped_file_sizes(root)
    assert sizes == {"commit_log": 8192}
    disk = MemoryDisk()
    assert load_store_dir(root, disk) == 1
    config = MessageStoreConfig(mapped_file_size_commit_log=sizes["commit_log"])
    store = DefaultMessageStore(disk, config, ManualClock(T0 + 10_000))
    assert store.load(), store.load_error
    store.start(0)
    keys = sorted(m.properties["UNIQ_KEY"] for q in (0, 1) for m in store.get_message("g", "T", q, 0, 32).messages)
    assert keys == [f"m{i}" for i in range(6)]
    assert store.get_max_offset_in_queue("T", 0) == 3
