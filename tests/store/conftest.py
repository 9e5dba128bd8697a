"""Small stores for tests: tiny files so that rolling and truncation across files happen."""

from __future__ import annotations

from store.clock import ManualClock
from store.config import MessageStoreConfig
from store.disk import MemoryDisk
from store.message import MessageExt
from store.message_store import DefaultMessageStore

SMALL = MessageStoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8)


def make_store(disk=None, clock=None, config=SMALL, **changes) -> DefaultMessageStore:
    store = DefaultMessageStore(
        disk if disk is not None else MemoryDisk(),
        config.with_(**changes) if changes else config,
        clock if clock is not None else ManualClock(1_700_000_000_000),
    )
    assert store.load(), store.load_error
    store.start(0)
    return store


def new_msg(topic="TopicTest", queue_id=0, body=b"hello", key="k", **props) -> MessageExt:
    properties = {"UNIQ_KEY": key, **props}
    return MessageExt(topic=topic, queue_id=queue_id, body=body, properties=properties, born_timestamp=1)
