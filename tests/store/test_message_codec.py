"""The commit-log codec against ROCKETMQ.md 1.1-1.3: hand-built byte vectors, round trips, corruption."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import message as codec
from store.message import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    STOREHOSTADDRESS_V6_FLAG,
    MessageExt,
    MessageIllegal,
    check_message_and_return_size,
    create_message_id,
    decode_message,
    encode_blank,
    encode_message,
    format_socket_address,
    java_string_hash,
    message_properties_to_string,
    prepare_message,
    socket_address,
    string_to_message_properties,
    tags_string_to_tags_code,
)

V4_LOCAL = (bytes([127, 0, 0, 1]), 5555)
V4_BROKER = (bytes([192, 168, 0, 1]), 10911)
V6_LOCAL = (bytes(15) + b"\x01", 6666)


def i32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "big", signed=True)


def i64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "big", signed=True)


def encode(msg: MessageExt, queue_offset=0, phy_offset=0, store_timestamp=0, **prepare_options) -> bytes:
    return encode_message(prepare_message(msg, **prepare_options), queue_offset, phy_offset, store_timestamp)


# --- fixed vectors ---------------------------------------------------------------------------------------------
def vector_message(**changes) -> MessageExt:
    fields = dict(
        topic="TopicTest",
        body=b"hello",
        queue_id=3,
        flag=7,
        properties={"TAGS": "TagA", "UNIQ_KEY": "ABC"},
        born_timestamp=1_700_000_000_000,
        born_host=V4_LOCAL,
        store_host=V4_BROKER,
        reconsume_times=2,
        prepared_transaction_offset=0,
    )
    fields.update(changes)
    return MessageExt(**fields)


def test_ipv4_v1_record_has_the_documented_fixed_offsets():
    props = "TAGS\x01TagA\x02UNIQ_KEY\x01ABC\x02".encode()
    data = encode(vector_message(), queue_offset=42, phy_offset=4096, store_timestamp=1_700_000_000_123)
    assert len(data) == 91 + len(b"hello") + len(b"TopicTest") + len(props)
    assert i32(data, 0) == len(data)
    assert i32(data, 4) == MESSAGE_MAGIC_CODE and data[4:8] == bytes.fromhex("DAA320A7")
    assert i32(data, 8) == 907060870 == zlib.crc32(b"hello") & 0x7FFFFFFF  # Java CRC32("hello")
    assert i32(data, 12) == 3  # QUEUEID
    assert i32(data, 16) == 7  # FLAG
    assert i64(data, 20) == 42  # QUEUEOFFSET
    assert i64(data, 28) == 4096  # PHYSICALOFFSET
    assert i32(data, 36) == 0  # SYSFLAG
    assert i64(data, 40) == 1_700_000_000_000  # BORNTIMESTAMP
    assert data[48:52] == bytes([127, 0, 0, 1]) and i32(data, 52) == 5555  # BORNHOST
    assert i64(data, 56) == 1_700_000_000_123  # STORETIMESTAMP
    assert data[64:68] == bytes([192, 168, 0, 1]) and i32(data, 68) == 10911  # STOREHOST
    assert i32(data, 72) == 2  # RECONSUMETIMES
    assert i64(data, 76) == 0  # PREPARED
    assert i32(data, 84) == 5 and data[88:93] == b"hello"  # BODYLEN, BODY
    assert data[93] == 9 and data[94:103] == b"TopicTest"  # 1-byte topic length (V1)
    assert int.from_bytes(data[103:105], "big") == len(props) and data[105:] == props


def test_whole_record_equals_a_field_by_field_concatenation():
    be = lambda value, n: value.to_bytes(n, "big", signed=True)  # noqa: E731
    props = "KEYS\x01k1\x02".encode()
    body = b"\x00\xffbody"
    expected_fields = [
        be(91 + len(body) + 1 + len(props), 4), bytes.fromhex("DAA320A7"), be(zlib.crc32(body) & 0x7FFFFFFF, 4),
        be(1, 4), be(0, 4), be(5, 8), be(123456, 8), be(0, 4), be(99, 8), bytes([127, 0, 0, 1]), be(5555, 4),
        be(100, 8), bytes([192, 168, 0, 1]), be(10911, 4), be(0, 4), be(0, 8), be(len(body), 4), body,
        b"\x01", b"T", be(len(props), 2), props,
    ]
    msg = MessageExt(topic="T", body=body, queue_id=1, properties={"KEYS": "k1"}, born_timestamp=99,
                     born_host=V4_LOCAL, store_host=V4_BROKER)
    assert encode(msg, 5, 123456, 100) == b"".join(expected_fields)


def test_v2_record_has_a_two_byte_topic_length_and_its_own_magic():
    topic = "a" * 200
    data = encode(vector_message(topic=topic, properties={}))
    assert data[4:8] == bytes.fromhex("DAA320AB") and i32(data, 4) == MESSAGE_MAGIC_CODE_V2
    assert i32(data, 0) == len(data) == 92 + 5 + 200  # one more byte of topic length than V1
    topic_at = 88 + 5
    assert int.from_bytes(data[topic_at : topic_at + 2], "big") == 200
    assert data[topic_at + 2 : topic_at + 202] == topic.encode()
    assert data[-2:] == b"\x00\x00"


def test_v1_up_to_127_topic_bytes_and_v2_from_128():
    assert i32(encode(vector_message(topic="t" * 127)), 4) == MESSAGE_MAGIC_CODE
    assert i32(encode(vector_message(topic="t" * 128)), 4) == MESSAGE_MAGIC_CODE_V2
    # UTF-8 bytes count, not characters: 64 two-byte characters are 128 bytes.
    assert i32(encode(vector_message(topic="é" * 64)), 4) == MESSAGE_MAGIC_CODE_V2


@pytest.mark.parametrize(
    "born, store, flags, extra",
    [
        (V6_LOCAL, V4_BROKER, BORNHOST_V6_FLAG, 12),
        (V4_LOCAL, V6_LOCAL, STOREHOSTADDRESS_V6_FLAG, 12),
        (V6_LOCAL, V6_LOCAL, BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG, 24),
    ],
)
def test_ipv6_hosts_grow_the_record_and_set_the_sysflag_bits(born, store, flags, extra):
    msg = vector_message(born_host=born, store_host=store, properties={}, sys_flag=codec.MULTI_TAGS_FLAG)
    data = encode(msg, store_timestamp=77)
    assert len(data) == 91 + 5 + 9 + extra
    assert i32(data, 36) == flags | codec.MULTI_TAGS_FLAG
    assert msg.sys_flag == flags | codec.MULTI_TAGS_FLAG
    born_len = 20 if born == V6_LOCAL else 8
    assert data[48 : 48 + born_len - 4] == born[0]
    assert i64(data, 48 + born_len) == 77  # STORETIMESTAMP moves with the born host length
    assert data[56 + born_len : 56 + born_len + len(store[0])] == store[0]


def test_stale_v6_bits_are_cleared_for_ipv4_hosts():
    msg = vector_message(sys_flag=BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG | codec.TRANSACTION_COMMIT_TYPE)
    data = encode(msg)
    assert i32(data, 36) == codec.TRANSACTION_COMMIT_TYPE and len(data) == i32(data, 0)
    assert check_message_and_return_size(data, 0).success


def test_host_address_of_a_wrong_length_is_refused():
    with pytest.raises(ValueError):
        prepare_message(vector_message(born_host=(b"\x01\x02\x03", 1)))


def test_blank_record_bytes():
    assert encode_blank(120) == (120).to_bytes(4, "big") + bytes.fromhex("CBD43194")
    assert i32(encode_blank(8), 4) == BLANK_MAGIC_CODE


# --- java hash, properties, ids --------------------------------------------------------------------------------
def java_hash_by_hand(code_units: list[int]) -> int:
    h = 0
    for unit in code_units:
        h = (31 * h + unit) % 2**32
    return h - 2**32 if h >= 2**31 else h


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", 0),
        ("a", 97),
        ("ab", 3105),
        ("hello", 99162322),
        ("polygenelubricants", -2147483648),
        ("TagA", 2598919),  # ((84*31+97)*31+103)*31+65
        ("aé😀", 4886539),  # code units 97, 233, 0xD83D, 0xDE00: the emoji counts as a surrogate pair
    ],
)
def test_java_string_hash_vectors(text, expected):
    assert java_string_hash(text) == expected


def test_java_hash_helper_agrees_with_the_listed_code_units():
    assert java_hash_by_hand([97, 233, 0xD83D, 0xDE00]) == 4886539
    assert java_hash_by_hand([ord(c) for c in "TagA"]) == 2598919


@given(st.text(max_size=40))
def test_java_string_hash_matches_the_formula_over_utf16_units(text):
    raw = text.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]
    assert java_string_hash(text) == java_hash_by_hand(units)


def test_tags_code():
    assert tags_string_to_tags_code(None) == 0
    assert tags_string_to_tags_code("") == 0
    assert tags_string_to_tags_code("TagA") == 2598919
    assert tags_string_to_tags_code("polygenelubricants") == -2147483648


def test_property_string_serialisation():
    props = {"KEYS": "k", "TAGS": "t", "SKIP": None}
    assert message_properties_to_string(props) == "KEYS\x01k\x02TAGS\x01t\x02"  # type: ignore[arg-type]
    assert message_properties_to_string({}) == ""


@pytest.mark.parametrize(
    "text, expected",
    [
        (None, {}),
        ("", {}),
        ("a\x01b\x02", {"a": "b"}),
        ("a\x01b", {"a": "b"}),  # no trailing separator
        ("ab\x02a\x01b\x02", {"a": "b"}),  # a chunk shorter than 3 chars is ignored
        ("\x01bc\x02k\x01v\x02", {"k": "v"}),  # empty key ignored
        ("ab\x01\x02k\x01v\x02", {"k": "v"}),  # empty value ignored
        ("abc\x02k\x01v\x02", {"k": "v"}),  # no name/value separator: ignored
        ("k\x01v\x01w\x02", {"k": "v\x01w"}),  # the key ends at the first separator
        ("k\x011\x02k\x012\x02", {"k": "2"}),  # later entries win
        ("\x02\x02\x02", {}),
    ],
)
def test_property_string_parser_rules(text, expected):
    assert string_to_message_properties(text) == expected


def test_offset_msg_id():
    msg_id = create_message_id((bytes([127, 0, 0, 1]), 10911), 4096)
    assert msg_id == "7F00000100002A9F0000000000001000" and len(msg_id) == 32
    assert len(create_message_id(V6_LOCAL, 1)) == 56


def test_socket_addresses():
    assert socket_address("127.0.0.1", 10911) == (bytes([127, 0, 0, 1]), 10911)
    assert format_socket_address(socket_address("10.0.0.7", 80)) == "10.0.0.7:80"
    v6 = socket_address("::1", 10911)
    assert len(v6[0]) == 16 and format_socket_address(v6) == "[::1]:10911"


def test_message_conveniences():
    msg = MessageExt(topic="T", properties={"UNIQ_KEY": "U1", "TAGS": "A", "DELAY": "3"}, store_host=V4_BROKER,
                     commit_log_offset=4096)
    assert (msg.uniq_key, msg.tags, msg.delay_time_level) == ("U1", "A", 3)
    assert msg.msg_id == create_message_id(V4_BROKER, 4096)
    assert MessageExt(topic="T").delay_time_level == 0
    msg.delay_time_level = 5
    assert msg.get_property("DELAY") == "5"
    msg.put_property("X", "y")
    msg.properties_string = message_properties_to_string(msg.properties)
    msg.clear_property("X")
    assert msg.get_property("X") is None and "X\x01y\x02" in msg.properties_string


def test_properties_string_is_written_verbatim():
    msg = vector_message(properties={"TAGS": "new"})
    msg.properties_string = "TAGS\x01old\x02DELAY\x013\x02"
    data = encode(msg)
    req = check_message_and_return_size(data, 0)
    assert req.properties == {"TAGS": "old", "DELAY": "3"}
    assert req.tags_code == java_string_hash("old")
    decoded = decode_message(data, 0)
    assert decoded.properties_string == "TAGS\x01old\x02DELAY\x013\x02"


# --- put-path limits -------------------------------------------------------------------------------------------
def test_properties_over_32767_bytes_are_refused():
    ok = vector_message(properties={}, properties_string="k\x01" + "v" * (32767 - 3) + "\x02")
    assert prepare_message(ok).total_size == 91 + 5 + 9 + 32767
    too_big = vector_message(properties={"k": "v" * (32768 - 3)})  # exactly 32768 bytes
    with pytest.raises(MessageIllegal) as info:
        prepare_message(too_big)
    assert info.value.status == "PROPERTIES_SIZE_EXCEEDED" and "32767" in str(info.value)


def test_body_over_max_message_size_is_refused():
    prepare_message(vector_message(body=b"x" * 1000), max_message_size=1000)
    with pytest.raises(MessageIllegal) as info:
        prepare_message(vector_message(body=b"x" * 1001), max_message_size=1000)
    assert info.value.status == "MESSAGE_ILLEGAL" and "1000" in str(info.value)


def test_topic_over_255_bytes_is_always_refused():
    prepare_message(vector_message(topic="t" * 255))
    for auto in (True, False):
        with pytest.raises(MessageIllegal) as info:
            prepare_message(vector_message(topic="t" * 256), auto_message_version_v2=auto)
        assert info.value.status == "MESSAGE_ILLEGAL"


def test_topic_over_127_bytes_without_auto_v2_is_refused():
    prep = prepare_message(vector_message(topic="t" * 127), auto_message_version_v2=False)
    assert prep.magic_code == MESSAGE_MAGIC_CODE
    with pytest.raises(MessageIllegal) as info:
        prepare_message(vector_message(topic="t" * 128), auto_message_version_v2=False)
    assert info.value.status == "MESSAGE_ILLEGAL" and "128" in str(info.value)
    with pytest.raises(MessageIllegal):
        prepare_message(vector_message(topic="t" * 20), auto_message_version_v2=False, max_topic_length_v1=10)


def test_illegal_message_is_left_untouched():
    msg = vector_message(body=b"x" * 11, sys_flag=0)
    with pytest.raises(MessageIllegal):
        prepare_message(msg, max_message_size=10)
    assert msg.body_crc == 0


# --- corruption ------------------------------------------------------------------------------------------------
def good_record() -> bytes:
    return encode(vector_message(), queue_offset=1, phy_offset=0, store_timestamp=5)


def test_flipped_body_byte_fails_the_crc_check_only_when_checked():
    data = bytearray(good_record())
    data[88] ^= 0x01  # first body byte
    failed = check_message_and_return_size(data, 0, check_crc=True)
    assert (failed.success, failed.msg_size) == (False, -1) and "CRC" in failed.error
    unchecked = check_message_and_return_size(data, 0, check_crc=False)
    assert unchecked.success and unchecked.msg_size == len(data)  # dispatch does not check the CRC
    assert decode_message(data, 0, check_crc=True) is None
    assert decode_message(data, 0).body == b"iello"


@pytest.mark.parametrize("delta", [+4, -4])
def test_changed_totalsize_is_a_size_mismatch_with_that_size(delta):
    data = bytearray(good_record() + bytes(16))
    real = i32(data, 0)
    data[0:4] = (real + delta).to_bytes(4, "big")
    req = check_message_and_return_size(data, 0)
    assert (req.success, req.msg_size) == (False, real + delta)
    assert req.error == f"TOTALSIZE {real + delta} but fields add up to {real}"


def test_blank_record_is_success_with_size_zero():
    data = good_record() + encode_blank(100) + bytes(92)
    first = check_message_and_return_size(data, 0)
    blank = check_message_and_return_size(data, first.msg_size)
    assert (blank.success, blank.msg_size) == (True, 0)
    assert decode_message(data, first.msg_size) is None


def test_zero_bytes_are_a_failure():
    req = check_message_and_return_size(bytes(4096), 0)
    assert (req.success, req.msg_size) == (False, -1) and "never written" in req.error
    assert decode_message(bytes(4096), 0) is None


def test_bad_magic_and_truncation_fail_with_minus_one():
    data = bytearray(good_record())
    data[4:8] = b"\x12\x34\x56\x78"
    bad = check_message_and_return_size(data, 0)
    assert (bad.success, bad.msg_size, bad.error) == (False, -1, "bad magic code 0x12345678")
    whole = good_record()
    for cut in (3, 20, 60, len(whole) - 1):
        req = check_message_and_return_size(whole[:cut], 0)
        assert (req.success, req.msg_size) == (False, -1) and "truncated" in req.error
        assert decode_message(whole[:cut], 0) is None
    limited = check_message_and_return_size(whole + bytes(50), 0, limit=len(whole) - 1)
    assert (limited.success, limited.msg_size) == (False, -1)


def test_negative_or_tiny_totalsize_fails_like_java():
    data = bytearray(good_record())
    data[0:4] = (-5).to_bytes(4, "big", signed=True)
    assert check_message_and_return_size(data, 0).msg_size == -1
    data[0:4] = (6).to_bytes(4, "big")
    assert check_message_and_return_size(data, 0).msg_size == -1


def test_consecutive_records_in_one_buffer():
    a = encode(vector_message(queue_id=1), 0, 0, 10)
    b = encode(vector_message(queue_id=2, topic="Other"), 0, len(a), 11)
    buf = memoryview(a + b + encode_blank(64) + bytes(56))
    first = check_message_and_return_size(buf, 0)
    second = check_message_and_return_size(buf, first.msg_size)
    third = check_message_and_return_size(buf, first.msg_size + second.msg_size)
    assert (first.queue_id, second.queue_id, second.topic, second.commit_log_offset) == (1, 2, "Other", len(a))
    assert (third.success, third.msg_size) == (True, 0)
    assert decode_message(buf, len(a)).topic == "Other"


# --- round trip ------------------------------------------------------------------------------------------------
_NO_SEPARATORS = st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",))
_PROPERTY_TEXT = st.text(_NO_SEPARATORS, min_size=1, max_size=24)


def _topic_strategy():
    short = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
    long = st.tuples(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=4),
                     st.integers(100, 300)).map(lambda t: (t[0] * t[1])[: t[1]])
    return st.one_of(short, long).filter(lambda t: 1 <= len(t.encode()) <= 300)


def _body_strategy():
    small = st.binary(max_size=300)
    large = st.tuples(st.binary(min_size=1, max_size=32), st.integers(1000, 65536)).map(
        lambda t: (t[0] * (t[1] // len(t[0]) + 1))[: t[1]]
    )
    return st.one_of(small, large)


def _host_strategy():
    ipv4 = st.binary(min_size=4, max_size=4)
    ipv6 = st.binary(min_size=16, max_size=16)
    return st.tuples(st.one_of(ipv4, ipv6), st.integers(0, 65535))


INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


ROUND_TRIP = dict(
    topic=_topic_strategy(),
    body=_body_strategy(),
    props=st.dictionaries(_PROPERTY_TEXT, _PROPERTY_TEXT, max_size=8),
    born_host=_host_strategy(),
    store_host=_host_strategy(),
    queue_id=INT32,
    flag=INT32,
    sys_flag=st.integers(0, 0xFFFF).map(lambda f: f & ~0x30),
    born_timestamp=INT64,
    reconsume_times=INT32,
    prepared_offset=INT64,
    queue_offset=INT64,
    phy_offset=INT64,
    store_timestamp=INT64,
    lead=st.binary(max_size=16),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**ROUND_TRIP)
def test_round_trip_quick(**fields):
    """The default tier's share of the round trip below (40 examples; the slow tier runs 300)."""
    test_round_trip.hypothesis.inner_test(**fields)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**ROUND_TRIP)
def test_round_trip(topic, body, props, born_host, store_host, queue_id, flag, sys_flag, born_timestamp,
                    reconsume_times, prepared_offset, queue_offset, phy_offset, store_timestamp, lead):
    msg = MessageExt(topic=topic, body=body, queue_id=queue_id, flag=flag, properties=dict(props),
                     sys_flag=sys_flag, born_timestamp=born_timestamp, born_host=born_host, store_host=store_host,
                     reconsume_times=reconsume_times, prepared_transaction_offset=prepared_offset)
    topic_bytes = len(topic.encode())
    if topic_bytes > 255:
        with pytest.raises(MessageIllegal):
            prepare_message(msg)
        return
    prep = prepare_message(msg)
    record = encode_message(prep, queue_offset, phy_offset, store_timestamp)
    assert len(record) == prep.total_size == i32(record, 0)
    assert i32(record, 4) == (MESSAGE_MAGIC_CODE_V2 if topic_bytes > 127 else MESSAGE_MAGIC_CODE)
    expected_sys_flag = sys_flag | (0x10 if len(born_host[0]) == 16 else 0) | (0x20 if len(store_host[0]) == 16 else 0)
    buf = lead + record + b"\xee" * 7

    req = check_message_and_return_size(buf, len(lead), check_crc=True, read_body=True)
    assert req.success, req.error
    assert req.msg_size == len(record)
    assert (req.topic, req.queue_id, req.commit_log_offset, req.consume_queue_offset) == (
        topic, queue_id, phy_offset, queue_offset)
    assert (req.store_timestamp, req.sys_flag, req.prepared_transaction_offset) == (
        store_timestamp, expected_sys_flag, prepared_offset)
    assert req.properties == (props or None)
    assert req.tags_code == tags_string_to_tags_code(props.get("TAGS"))
    assert req.keys == props.get("KEYS", "") and req.uniq_key == props.get("UNIQ_KEY")

    got = decode_message(buf, len(lead), check_crc=True)
    assert got is not None
    assert (got.topic, got.body, got.queue_id, got.flag, got.properties) == (topic, body, queue_id, flag, props)
    assert got.properties_string == message_properties_to_string(props)
    assert (got.sys_flag, got.born_timestamp, got.born_host, got.store_host) == (
        expected_sys_flag, born_timestamp, born_host, store_host)
    assert (got.reconsume_times, got.prepared_transaction_offset, got.store_timestamp) == (
        reconsume_times, prepared_offset, store_timestamp)
    assert (got.queue_offset, got.commit_log_offset, got.store_size) == (queue_offset, phy_offset, len(record))
    assert (got.body_crc, got.magic_code) == (zlib.crc32(body) & 0x7FFFFFFF, i32(record, 4))
    assert got.msg_id == create_message_id(store_host, phy_offset)


# --- positional construction on the hot paths ------------------------------------------------------------------
def _every_field_distinct() -> MessageExt:
    return MessageExt("T1", b"body", 5, 6, {"TAGS": "TagB", "UNIQ_KEY": "K"}, "TAGS\x01TagB\x02", 0x10, 11,
                      (bytes(16), 12), (b"\x01\x02\x03\x04", 13), 14, 15, 16, 17, 18, 19, 20, 21, MESSAGE_MAGIC_CODE_V2)


def test_copy_is_a_field_by_field_copy_with_its_own_map_when_given():
    import dataclasses

    msg = _every_field_distinct()
    assert msg.copy() == dataclasses.replace(msg)
    assert msg.copy().properties is msg.properties
    own = msg.copy(properties=dict(msg.properties))
    assert own == msg and own.properties is not msg.properties
    for f in dataclasses.fields(MessageExt):  # a field added without updating copy() is caught here
        assert getattr(msg.copy(), f.name) == getattr(msg, f.name), f.name


def test_decode_fills_every_field_in_its_place():
    msg = vector_message(sys_flag=0, born_host=V6_LOCAL, properties={"TAGS": "TagZ", "KEYS": "k1"})
    data = encode(msg, queue_offset=41, phy_offset=0, store_timestamp=1_700_000_000_999)
    got = decode_message(data, 0)
    assert (got.topic, got.body, got.queue_id, got.flag) == ("TopicTest", b"hello", 3, 7)
    assert got.properties == {"TAGS": "TagZ", "KEYS": "k1"} and got.properties_string == "TAGS\x01TagZ\x02KEYS\x01k1\x02"
    assert (got.sys_flag, got.born_timestamp, got.born_host, got.store_host) == (
        BORNHOST_V6_FLAG, 1_700_000_000_000, V6_LOCAL, V4_BROKER)
    assert (got.reconsume_times, got.prepared_transaction_offset, got.store_timestamp) == (2, 0, 1_700_000_000_999)
    assert (got.queue_offset, got.commit_log_offset, got.store_size) == (41, 0, len(data))
    assert (got.body_crc, got.tags_code, got.magic_code) == (
        zlib.crc32(b"hello") & 0x7FFFFFFF, java_string_hash("TagZ"), MESSAGE_MAGIC_CODE)
