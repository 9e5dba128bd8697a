"""Puts/s and dispatched units/s through the real store, on the in-memory and the OS disk.

    .venv/bin/python benchmarks/store_bench.py [--messages N] [--body BYTES]

Prints one JSON line per disk. Wall time is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from store.clock import ManualClock
from store.config import MessageStoreConfig
from store.disk import MemoryDisk, OsDisk
from store.message import MessageExt
from store.message_store import DefaultMessageStore


def bench(disk, messages: int, body_len: int) -> dict:
    config = MessageStoreConfig(mapped_file_size_commit_log=64 * 1024 * 1024,
                                mapped_file_size_consume_queue=300_000 * 20)
    clock = ManualClock()
    store = DefaultMessageStore(disk, config, clock)
    store.load()
    store.start(0)
    body = b"x" * body_len
    msgs = [
        MessageExt(topic="BenchTopic", queue_id=i % 8, body=body, properties={"UNIQ_KEY": f"ID{i:012d}", "TAGS": "TagA"})
        for i in range(messages)
    ]
    t0 = time.perf_counter()  # wall-clock ok: benchmark
    for i, msg in enumerate(msgs):
        if i % 1000 == 0:
            clock.advance(1)
        store.put_message(msg)
    t1 = time.perf_counter()  # wall-clock ok: benchmark
    dispatched = store.do_reput()
    t2 = time.perf_counter()  # wall-clock ok: benchmark
    store.shutdown()
    return {
        "messages": messages,
        "body_bytes": body_len,
        "puts_per_s": round(messages / (t1 - t0)),
        "dispatched_units_per_s": round(dispatched / (t2 - t1)),
        "commitlog_mib": round(store.commit_log.get_max_offset() / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--body", type=int, default=100)
    args = parser.parse_args()
    print(json.dumps({"disk": "memory", **bench(MemoryDisk(), args.messages, args.body)}))
    with tempfile.TemporaryDirectory() as root:
        print(json.dumps({"disk": "os", **bench(OsDisk(root), args.messages, args.body)}))


if __name__ == "__main__":
    main()
