"""ConsumerOffsetManager (5.1, consumerOffset.json) and the client's offsets.json (5.2, 6.4)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.client_offset_file import (
    OffsetFileCorrupt,
    decode_offsets,
    encode_offsets,
    read_offsets_file,
    write_offsets_file,
)
from store.clock import ManualClock
from store.consumer_offset import ConsumerOffsetManager, split_topic_at_group
from store.disk import MemoryDisk
from store.fastjson import loads

from .test_fastjson import CLIENT_OFFSETS_COMPACT, CONSUMER_OFFSET_4X, CONSUMER_OFFSET_5X

PATH = "config/consumerOffset.json"


def make(disk=None, clock=None, **kwargs):
    disk = disk if disk is not None else MemoryDisk()
    clock = clock if clock is not None else ManualClock(1_700_000_000_000)
    return disk, clock, ConsumerOffsetManager(disk, clock, **kwargs)


def test_commit_and_query():
    _, _, m = make()
    assert m.query_offset("G", "T", 0) == -1
    m.commit_offset("10.0.0.1", "G", "T", 0, 5)
    m.commit_offset("10.0.0.1", "G", "T", 1, 7)
    assert m.query_offset("G", "T", 0) == 5 and m.query_offset("G", "T", 1) == 7
    assert m.query_offset("G", "T", 2) == -1 and m.query_offset("H", "T", 0) == -1
    assert m.offset_table == {"T@G": {0: 5, 1: 7}}
    offsets = m.query_offsets("G", "T")
    assert offsets == {0: 5, 1: 7}
    offsets[0] = 99
    assert m.query_offset("G", "T", 0) == 5  # a copy
    assert m.query_offsets("G", "Other") == {}


def test_commit_is_a_plain_put_not_increase_only():
    logged = []
    _, _, m = make(log=logged.append)
    m.commit_offset("h", "G", "T", 0, 10)
    m.commit_offset("h", "G", "T", 0, 4)
    assert m.query_offset("G", "T", 0) == 4
    assert logged and logged[0].startswith("[NOTIFYME]update consumer offset less than store")


def test_commits_do_not_touch_the_disk():
    disk, _, m = make()
    m.commit_offset("h", "G", "T", 0, 10)
    assert not disk.exists(PATH)


def test_which_topic_and_group():
    _, _, m = make()
    m.commit_offset("h", "G", "TopicB", 0, 1)
    m.commit_offset("h", "G", "%RETRY%G", 0, 1)
    m.commit_offset("h", "H", "TopicB", 0, 1)
    m.offset_table["odd@key@x"] = {0: 1}
    assert m.which_topic_by_consumer("G") == ["%RETRY%G", "TopicB"]
    assert m.which_group_by_topic("TopicB") == ["G", "H"]
    assert m.group_topic_map() == {"G": ["%RETRY%G", "TopicB"], "H": ["TopicB"]}
    m.remove_offset("G")
    assert list(m.offset_table) == ["TopicB@H", "odd@key@x"]


def test_split_topic_at_group_follows_java_split():
    assert split_topic_at_group("T@G") == ("T", "G")
    assert split_topic_at_group("T@") is None and split_topic_at_group("T@G@") == ("T", "G")
    assert split_topic_at_group("@G") == ("", "G") and split_topic_at_group("a@b@c") is None


def test_the_4x_file_is_the_example_of_6_4():
    _, _, m = make(json_shape="4.x")
    for queue_id, offset in ((0, 250), (1, 248), (2, 251), (3, 250)):
        m.commit_offset("h", "GroupA", "TopicTest", queue_id, offset)
    m.commit_offset("h", "GroupA", "%RETRY%GroupA", 0, 3)
    assert m.encode() == CONSUMER_OFFSET_4X


def test_the_5x_file_is_the_example_of_6_4():
    _, _, m = make(json_shape="5.x")
    for queue_id, offset in ((3, 37959), (1, 37961), (0, 37960), (2, 37959)):  # queue ids come out sorted
        m.commit_offset("h", "GroupA", "TopicTest", queue_id, offset)
    m.data_version.counter, m.data_version.timestamp_ms = 1448, 1736661762584
    # groupTopicMap is derived from the table, which (unlike the example's) holds no %RETRY% offsets.
    assert m.encode() == CONSUMER_OFFSET_5X.replace('["%RETRY%GroupA","TopicTest"]', '["TopicTest"]')
    m.commit_offset("h", "GroupA", "%RETRY%GroupA", 0, 1)
    assert '"GroupA":["%RETRY%GroupA","TopicTest"]' in m.encode()


@pytest.mark.parametrize("text,shape", [(CONSUMER_OFFSET_4X, "4.x"), (CONSUMER_OFFSET_5X, "5.x")])
def test_the_example_files_load(text, shape):
    disk, _, m = make(json_shape=shape)
    disk.write_file(PATH, text.encode())
    assert m.load()
    if shape == "4.x":
        assert m.query_offsets("GroupA", "TopicTest") == {0: 250, 1: 248, 2: 251, 3: 250}
        assert m.query_offset("GroupA", "%RETRY%GroupA", 0) == 3
    else:
        assert m.offset_table == {"TopicTest@GroupA": {0: 37960, 1: 37961, 2: 37959, 3: 37959}}
        assert (m.data_version.counter, m.data_version.timestamp_ms) == (1448, 1736661762584)
    # Re-encoding in the file's own shape gives the file back.
    if shape == "4.x":
        assert m.encode() == text


def test_decode_replaces_the_table_and_ignores_group_topic_map():
    disk, _, m = make()
    m.commit_offset("h", "Old", "T", 0, 1)
    disk.write_file(PATH, b'{"groupTopicMap":{"X":["Y"]},"lmqOffsetTable":{},"offsetTable":{"T@G":{"0":4,1:5}}}')
    assert m.load()
    assert m.offset_table == {"T@G": {0: 4, 1: 5}}  # quoted queue ids accepted too


@pytest.mark.parametrize("bad", [b'{"offsetTable":{"T@G":{"x":1}}}', b'{"offsetTable":{"T@G":{0:"1"}}}',
                                 b'{"offsetTable":[1]}', b"[]", b'{"offsetTable":{"T@G":{0:1}'])
def test_bad_content_fails_the_load_through_bak(bad):
    disk, _, m = make()
    disk.write_file(PATH + ".bak", bad)
    assert not m.load()
    assert m.load_error.startswith("config/consumerOffset.json.bak unreadable:")


@pytest.mark.parametrize("shape", ["4.x", "5.x"])
def test_persist_then_load_after_a_restart(shape):
    disk, clock, m = make(json_shape=shape)
    m.commit_offset("h", "G", "T", 1, 8)
    m.commit_offset("h", "G", "T", 0, 9)
    m.commit_offset("h", "G", "%RETRY%G", 0, 2)
    m.persist()
    m.commit_offset("h", "G", "T", 0, 10)  # after the last persist: lost by a crash
    _, _, again = make(disk, clock, json_shape=shape)
    assert again.load()
    assert again.query_offset("G", "T", 0) == 9 and again.query_offset("G", "T", 1) == 8
    assert again.query_offset("G", "%RETRY%G", 0) == 2
    assert again.data_version == m.data_version or shape == "4.x"


def test_5x_data_version_moves_every_500_commits():
    _, _, m = make(json_shape="5.x")
    for i in range(499):
        m.commit_offset("h", "G", "T", 0, i)
    assert m.data_version.counter == 0
    m.commit_offset("h", "G", "T", 0, 500)
    assert m.data_version.counter == 1


@settings(max_examples=100, deadline=None)
@given(commits=st.lists(st.tuples(st.sampled_from(["G", "H", "%RETRY%G"]), st.sampled_from(["T", "U"]),
                                  st.integers(0, 40), st.integers(0, 2**63 - 1)), max_size=30),
       shape=st.sampled_from(["4.x", "5.x"]))
def test_json_round_trip(commits, shape):
    _, _, m = make(json_shape=shape)
    for group, topic, queue_id, offset in commits:
        m.commit_offset("h", group, topic, queue_id, offset)
    _, _, again = make(json_shape=shape)
    again.decode(m.encode())
    assert again.offset_table == m.offset_table
    again.decode(m.encode(pretty=False))
    assert again.offset_table == m.offset_table


# --- the client's offsets.json ---------------------------------------------------------------------------
OFFSETS = "store/.rocketmq_offsets/127.0.0.1@c1/GroupB/offsets.json"


@dataclass(frozen=True)
class MQ:
    topic: str
    broker_name: str
    queue_id: int


def test_offsets_file_shape_and_round_trip():
    disk = MemoryDisk()
    offsets = {("broker-a", "TopicTest", 3): 0, ("broker-a", "TopicTest", 2): 0}
    assert encode_offsets(offsets, pretty=False) == CLIENT_OFFSETS_COMPACT
    write_offsets_file(disk, OFFSETS, offsets)
    text = disk.read_file(OFFSETS).decode()
    assert text.startswith('{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":3,')
    assert read_offsets_file(disk, OFFSETS) == offsets
    assert list(read_offsets_file(disk, OFFSETS)) == list(offsets)
    assert loads(text) == loads(CLIENT_OFFSETS_COMPACT)


def test_offsets_file_accepts_message_queue_objects():
    disk = MemoryDisk()
    write_offsets_file(disk, OFFSETS, {MQ("T", "b", 1): 5})
    assert read_offsets_file(disk, OFFSETS) == {("b", "T", 1): 5}


def test_offsets_file_keeps_the_previous_content_in_bak():
    disk = MemoryDisk()
    write_offsets_file(disk, OFFSETS, {("b", "T", 0): 1})
    first = disk.read_file(OFFSETS)
    write_offsets_file(disk, OFFSETS, {("b", "T", 0): 2})
    assert disk.read_file(OFFSETS + ".bak") == first
    assert not disk.exists(OFFSETS + ".tmp")


@pytest.mark.parametrize("main", [None, b"", b"{garbage", b'{"offsetTable":{"T":1}}', b"\xff\xfe"])
def test_offsets_file_falls_back_to_bak(main):
    disk = MemoryDisk()
    write_offsets_file(disk, OFFSETS + ".bak", {("b", "T", 0): 7})
    if main is not None:
        disk.write_file(OFFSETS, main)
    assert read_offsets_file(disk, OFFSETS) == {("b", "T", 0): 7}


def test_offsets_file_after_a_power_failure_falls_back_to_bak():
    disk = MemoryDisk()
    write_offsets_file(disk, OFFSETS, {("b", "T", 0): 1})
    disk.open(OFFSETS).flush()
    write_offsets_file(disk, OFFSETS, {("b", "T", 0): 2})
    disk.open(OFFSETS + ".bak").flush()
    disk.power_failure(random.Random(1))
    assert read_offsets_file(disk, OFFSETS) == {("b", "T", 0): 1}


def test_a_corrupt_bak_is_a_clear_error():
    disk = MemoryDisk()
    disk.write_file(OFFSETS, b"")
    disk.write_file(OFFSETS + ".bak", b'{"offsetTable":{{"brokerName":"b"')
    with pytest.raises(OffsetFileCorrupt) as info:
        read_offsets_file(disk, OFFSETS)
    assert info.value.path == OFFSETS + ".bak"
    assert str(info.value).startswith(OFFSETS + ".bak is corrupt: unexpected end of input")


def test_no_files_is_an_empty_table():
    disk = MemoryDisk()
    assert read_offsets_file(disk, OFFSETS) == {}
    disk.write_file(OFFSETS, b"null")
    assert read_offsets_file(disk, OFFSETS) == {}
    assert decode_offsets('{"other":1}') == {}


def test_a_table_read_and_changed_by_its_caller_does_not_change_the_next_read_or_write():
    """Parsing and encoding are remembered: the next read of the same text must not see a caller's change."""
    disk = MemoryDisk()
    write_offsets_file(disk, OFFSETS, {("b", "T", 0): 1})
    first = read_offsets_file(disk, OFFSETS)
    first[("b", "T", 0)] = 99
    first[("b", "T", 1)] = 5
    assert read_offsets_file(disk, OFFSETS) == {("b", "T", 0): 1}
    offsets = {("b", "T", 0): 1}
    text = encode_offsets(offsets)
    offsets[("b", "T", 0)] = 2
    assert encode_offsets(offsets) != text and decode_offsets(encode_offsets(offsets)) == {("b", "T", 0): 2}


def test_a_good_main_file_wins_over_a_corrupt_bak():
    disk = MemoryDisk()
    write_offsets_file(disk, OFFSETS, {("b", "T", 0): 3})
    disk.write_file(OFFSETS + ".bak", b"{garbage")
    assert read_offsets_file(disk, OFFSETS) == {("b", "T", 0): 3}


_OFFSET_OPS = st.lists(st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(["G1", "G2"]), st.sampled_from(["T1", "T2"]), st.integers(0, 2),
              st.integers(0, 3)),
    st.tuples(st.just("remove"), st.sampled_from(["G1", "G2"])),
    st.tuples(st.just("tick"), st.integers(1, 5000)),
    st.tuples(st.just("persist"),)), max_size=25)


@settings(max_examples=80, deadline=None)
@given(ops=_OFFSET_OPS, shape=st.sampled_from(["4.x", "5.x"]))
def test_a_persist_writes_what_encode_says_now(ops, shape):
    """persist reuses the last text while content_token() is unchanged: the token must change whenever the text
    would (a table entry, a group removed, the dataVersion, the shape)."""
    disk, clock, mgr = make(json_shape=shape)
    for op in ops:
        if op[0] == "commit":
            mgr.commit_offset("127.0.0.1", op[1], op[2], op[3], op[4])
        elif op[0] == "remove":
            mgr.remove_offset(op[1])
        elif op[0] == "tick":
            clock.advance(op[1])
            mgr.data_version.next_version(clock)
        else:
            mgr.persist()
            assert disk.read_file(PATH) == mgr.encode(True).encode()
