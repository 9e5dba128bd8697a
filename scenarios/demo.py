"""``make demo``: the main job. For now: write a small store through the real code on the OS disk,
crash it, recover it, and decode it with ``rmqsim inspect``.
"""

from __future__ import annotations

import os
import sys

from store.clock import ManualClock
from store.config import MessageStoreConfig
from store.disk import OsDisk
from store.message import MessageExt
from store.message_store import DefaultMessageStore

from .cli import main as rmqsim

OUT_DIR = os.path.join("reports", "out", "demo-store")


def write_demo_store(root: str) -> None:
    config = MessageStoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 16)
    clock = ManualClock(1_700_000_000_000)
    store = DefaultMessageStore(OsDisk(root), config, clock)
    if not store.load():
        raise SystemExit(f"rmqsim demo: {store.load_error}")
    store.start(0)
    for i in range(40):
        clock.advance(250)
        store.put_message(
            MessageExt(topic="TopicTest", queue_id=i % 4, body=f"hello {i}".encode(),
                       properties={"UNIQ_KEY": f"DEMO{i:04d}", "TAGS": "TagA"})
        )
        if i % 10 == 9:
            store.do_reput()
    store.shutdown()


def main() -> int:
    if os.path.isdir(OUT_DIR):
        for dirpath, _dirs, files in os.walk(OUT_DIR, topdown=False):
            for name in files:
                os.remove(os.path.join(dirpath, name))
            os.rmdir(dirpath)
    write_demo_store(OUT_DIR)
    print(f"rmqsim demo: wrote a RocketMQ store to {OUT_DIR}; decoding it:\n")
    return rmqsim(["inspect", OUT_DIR])


if __name__ == "__main__":
    sys.exit(main())
