"""The broadcasting consumer's ``offsets.json`` (LocalFileOffsetStore, ROCKETMQ.md 5.2, 6.4).

``OffsetSerializeWrapper`` written pretty by fastjson: its keys are whole MessageQueue
objects. Writing goes through ``MixAll.string2File`` (5.3.3: copy to ``.bak``, overwrite in
place, no fsync); reading falls back to ``.bak`` when the main file is missing, empty or
unparseable, and a corrupt ``.bak`` is an error the consumer's ``start()`` fails on.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from .config_manager import BAK_SUFFIX, PERSIST_5_3_3, string2file
from .disk import Disk
from .fastjson import dumps, loads

OffsetKey = tuple[str, str, int]  # (broker_name, topic, queue_id)


class OffsetFileCorrupt(Exception):
    """``offsets.json.bak`` cannot be read (Java: MQClientException "readLocalOffset Exception")."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} is corrupt: {reason}")
        self.path = path
        self.reason = reason


def _key_of(mq: object) -> OffsetKey:
    """A (broker_name, topic, queue_id) tuple, or any object with those attributes (a MessageQueue)."""
    if isinstance(mq, tuple):
        broker_name, topic, queue_id = mq
        return broker_name, topic, queue_id
    return mq.broker_name, mq.topic, mq.queue_id  # type: ignore[attr-defined]


# A consumer's persist reads its file back and writes the merged table every 5 s, mostly the same text: encoding
# and parsing are pure, so both are remembered (bounded; immutable results, which no caller can change).
_MEMO = 256


def encode_offsets(offsets: Mapping, pretty: bool = True) -> str:
    """The OffsetSerializeWrapper JSON; MessageQueue keys with properties brokerName, queueId, topic."""
    return _encoded(tuple((_key_of(mq), offset) for mq, offset in offsets.items()), pretty)


@lru_cache(maxsize=_MEMO)
def _encoded(entries: tuple[tuple[OffsetKey, int], ...], pretty: bool) -> str:
    table = {(("brokerName", broker_name), ("queueId", queue_id), ("topic", topic)): offset
             for (broker_name, topic, queue_id), offset in entries}
    return dumps({"offsetTable": table}, pretty=pretty)


def decode_offsets(text: str) -> dict[OffsetKey, int]:
    """Parse an ``offsets.json``; raises ValueError (FastjsonError included) when it cannot."""
    return dict(_decoded(text))


@lru_cache(maxsize=_MEMO)
def _decoded(text: str) -> tuple[tuple[OffsetKey, int], ...]:
    root = loads(text)
    if root is None:
        return ()
    if not isinstance(root, dict):
        raise ValueError("offsets.json is not an object")
    table = root.get("offsetTable")
    if table is None:
        return ()
    if not isinstance(table, dict):
        raise ValueError("offsetTable is not an object")
    result: dict[OffsetKey, int] = {}
    for key, offset in table.items():
        if not isinstance(key, tuple):
            raise ValueError(f"offsetTable key {key!r} is not a MessageQueue object")
        fields = dict(key)
        broker_name, topic, queue_id = fields.get("brokerName"), fields.get("topic"), fields.get("queueId")
        if not isinstance(broker_name, str) or not isinstance(topic, str) or isinstance(queue_id, bool) or \
                not isinstance(queue_id, int):
            raise ValueError(f"offsetTable key {fields!r} is not a MessageQueue (brokerName, queueId, topic)")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ValueError(f"offset of {fields!r} must be an integer, not {offset!r}")
        result[(broker_name, topic, queue_id)] = offset
    return tuple(result.items())


def read_offsets_file(disk: Disk, path: str) -> dict[OffsetKey, int]:
    """The table of ``path``, else of ``path.bak``; empty when neither has content.

    Raises ``OffsetFileCorrupt`` when the main file is unusable and ``.bak`` is corrupt."""
    data = disk.read_file(path)
    if data:
        try:
            return decode_offsets(data.decode("utf-8"))
        except ValueError:  # "readLocalOffset Exception, and try to correct"
            pass
    bak_path = path + BAK_SUFFIX
    bak = disk.read_file(bak_path)
    if not bak:
        return {}
    try:
        return decode_offsets(bak.decode("utf-8"))
    except ValueError as error:
        raise OffsetFileCorrupt(bak_path, str(error)) from error


def write_offsets_file(disk: Disk, path: str, offsets: Mapping, *, persist_mode: str = PERSIST_5_3_3) -> None:
    """Write ``offsets`` (keyed (broker_name, topic, queue_id) or by MessageQueue) pretty, in the given order.

    ``persist_mode`` "5.3.3" (default) or "4.x" picks MixAll.string2File's era; OSError propagates."""
    string2file(disk, path, encode_offsets(offsets, pretty=True).encode("utf-8"), persist_mode)
