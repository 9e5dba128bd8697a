"""Parity with RocketMQ's MessageDecoderTest and MessageClientIDSetterTest (common/src/test/.../message) at
rocketmq-all-4.9.8 and rocketmq-all-5.3.3 (the test methods are the same at both tags)."""

from __future__ import annotations

import random

import pytest

from store import message as codec
from store.client.message_client_id import MessageClientIDSetter, _month_bounds_ms
from store.message import NAME_VALUE_SEPARATOR as NV
from store.message import PROPERTY_SEPARATOR as PS
from store.message import MessageExt, socket_address, string_to_message_properties

V4 = (socket_address("127.0.0.1", 0), socket_address("10.0.0.8", 0))
V6 = (socket_address("1050:0000:0000:0000:0005:0600:300c:326b", 0), socket_address("::1", 0))


def _encoded(born_store, queue_id=1) -> tuple[MessageExt, bytes]:
    """MessageDecoder.encode of the Java test's message: topic abc, body hello!q!, offset 123456, queue offset 123."""
    born, store = born_store
    msg = MessageExt(topic="abc", body=b"hello!q!", queue_id=queue_id, born_timestamp=1_700_000_000_000,
                     born_host=born, store_host=store, properties={"a": "123", "b": "hello", "c": "3.14"})
    prep = codec.prepare_message(msg)
    return msg, codec.encode_message(prep, 123, 123456, 1_700_000_000_001)


@pytest.mark.parametrize("hosts", [V4, V6], ids=["testDecodeProperties", "testDecodePropertiesOnIPv6Host"])
def test_decode_properties(hosts):
    """Mirrors MessageDecoderTest.testDecodeProperties and testDecodePropertiesOnIPv6Host (rocketmq-all-4.9.8,
    rocketmq-all-5.3.3)."""
    _msg, raw = _encoded(hosts, queue_id=0)
    req = codec.check_message_and_return_size(raw, 0, check_crc=True)
    assert req.success
    assert (req.properties["a"], req.properties["b"], req.properties["c"]) == ("123", "hello", "3.14")


@pytest.mark.parametrize("hosts", [V4, V6], ids=["testEncodeAndDecode", "testEncodeAndDecodeOnIPv6Host"])
def test_encode_and_decode(hosts):
    """Mirrors MessageDecoderTest.testEncodeAndDecode and testEncodeAndDecodeOnIPv6Host (rocketmq-all-4.9.8,
    rocketmq-all-5.3.3): queue id, commit-log offset, body, msg id and topic survive; IPv6 sets the v6 flag."""
    msg, raw = _encoded(hosts)
    decoded = codec.decode_message(raw, 0, check_crc=True)
    assert decoded is not None
    assert (decoded.queue_id, decoded.commit_log_offset, decoded.body, decoded.topic) == (1, 123456, b"hello!q!",
                                                                                         "abc")
    assert decoded.msg_id == codec.create_message_id(msg.store_host, 123456)
    assert bool(decoded.sys_flag & codec.STOREHOSTADDRESS_V6_FLAG) == (hosts is V6)
    assert len(decoded.msg_id) == (2 * (16 + 4 + 8) if hosts is V6 else 2 * (4 + 4 + 8))


def test_null_value_property():
    """Mirrors MessageDecoderTest.testNullValueProperty (rocketmq-all-4.9.8, rocketmq-all-5.3.3): a property put
    with a null value is not encoded, and decoding finds no such key."""
    msg = MessageExt(topic="x", body=b"x", born_host=socket_address("127.0.0.1", 9000),
                     store_host=socket_address("127.0.0.1", 9000), properties={"NullValueKey": None})
    raw = codec.encode_message(codec.prepare_message(msg), 0, 0, 1)
    assert codec.decode_message(raw, 0).get_property("NullValueKey") is None


@pytest.mark.parametrize("text, expected", [
    (f"k1{NV}v1", {"k1": "v1"}),
    ("", {}),
    (" ", {}),
    ("aaa", {}),
    (f"k1{NV}", {}),
    (f"{NV}v1", {}),
    (f"k1{NV}v1{PS}", {"k1": "v1"}),
    (f"k1{NV}v1{PS}k2{NV}v2", {"k1": "v1", "k2": "v2"}),
    (f"k1{NV}v1{PS}{NV}v2", {"k1": "v1"}),
    (f"k1{NV}v1{PS}k2{NV}", {"k1": "v1"}),
    (f"{NV}v1{PS}k2{NV}v2", {"k2": "v2"}),
    (f"k1{NV}{PS}k2{NV}v2", {"k2": "v2"}),
    (f"1{NV}1{PS}2{NV}2", {"1": "1", "2": "2"}),
    (f"1{NV}{PS}2{NV}2", {"2": "2"}),
    (f"{NV}1{PS}2{NV}2", {"2": "2"}),
    (f"1{NV}1{PS}2{NV}", {"1": "1"}),
    (f"1{NV}1{PS}{NV}2", {"1": "1"}),
])
def test_string2message_properties(text, expected):
    """Mirrors MessageDecoderTest.testString2messageProperties (rocketmq-all-4.9.8, rocketmq-all-5.3.3), one
    parameter per assertion block."""
    assert string_to_message_properties(text) == expected


@pytest.mark.parametrize("store_host", [socket_address("127.0.0.1", 9103), socket_address("::1", 0)])
def test_message_id(store_host):
    """Mirrors MessageDecoderTest.testMessageId (rocketmq-all-4.9.8, rocketmq-all-5.3.3): the offset msg id
    decodes back to the store address and the commit-log offset."""
    msg_id = codec.create_message_id(store_host, 123456)
    raw = bytes.fromhex(msg_id)
    ip_len = len(raw) - 12
    assert ip_len == len(store_host[0])
    assert (raw[:ip_len], int.from_bytes(raw[ip_len:ip_len + 4], "big")) == store_host
    assert int.from_bytes(raw[ip_len + 4:], "big") == 123456


def test_get_count_from_id():
    """Mirrors MessageClientIDSetterTest.testGetCountFromID (rocketmq-all-4.9.8, rocketmq-all-5.3.3)."""
    setter = MessageClientIDSetter("10.0.0.1@p1", random.Random(3))
    first, second = setter.create_uniq_id(1_700_000_000_000), setter.create_uniq_id(1_700_000_000_000)
    assert int(first[-4:], 16) == int(second[-4:], 16) - 1


def test_get_time_from_id():
    """Mirrors MessageClientIDSetterTest.testGetTimeFromID (rocketmq-all-4.9.8, rocketmq-all-5.3.3): the id's
    4 time bytes (ms since the start of the month) give back the creation time (getNearlyTimeFromID)."""
    now = 1_700_000_123_456
    uniq = MessageClientIDSetter("10.0.0.1@p1", random.Random(3)).create_uniq_id(now)
    raw = bytes.fromhex(uniq)
    month_start, _ = _month_bounds_ms(now)
    nearly = month_start + int.from_bytes(raw[-6:-2], "big", signed=True)
    assert 0 <= now - nearly < 20


def test_get_ip_and_pid_from_id():
    """In place of MessageClientIDSetterTest.testGetIPStrFromID / testGetPidFromID (rocketmq-all-4.9.8, 5.3.3),
    which read the host IP and the JVM pid back from an id: here the host field (bytes 0-3) holds the Java hash of
    the client id, and the pid and class-loader fields (bytes 4-9) come from the producer's seeded random, so the
    same client id and seed give the same prefix and another seed another one."""
    uniq = bytes.fromhex(MessageClientIDSetter("10.0.0.1@p1", random.Random(3)).create_uniq_id(1_700_000_000_000))
    assert int.from_bytes(uniq[:4], "big", signed=True) == codec.java_string_hash("10.0.0.1@p1")
    rng = random.Random(3)
    assert uniq[4:10] == rng.randrange(1 << 16).to_bytes(2, "big") + rng.randrange(1 << 32).to_bytes(4, "big")
    other = bytes.fromhex(MessageClientIDSetter("10.0.0.1@p1", random.Random(4)).create_uniq_id(1_700_000_000_000))
    assert other[:4] == uniq[:4] and other[4:10] != uniq[4:10]
