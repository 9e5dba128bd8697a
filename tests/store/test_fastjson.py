"""fastjson 1.2.x dialect: the example files of ROCKETMQ.md 6.4 byte for byte, parse errors, round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import fastjson
from store.fastjson import FastjsonError, dumps, loads

CONSUMER_OFFSET_4X = (
    "{\n"
    "\t\"offsetTable\":{\n"
    "\t\t\"TopicTest@GroupA\":{0:250,1:248,2:251,3:250\n"
    "\t\t},\n"
    "\t\t\"%RETRY%GroupA@GroupA\":{0:3\n"
    "\t\t}\n"
    "\t}\n"
    "}"
)
CONSUMER_OFFSET_4X_DATA = {"offsetTable": {"TopicTest@GroupA": {0: 250, 1: 248, 2: 251, 3: 250},
                                           "%RETRY%GroupA@GroupA": {0: 3}}}

CONSUMER_OFFSET_5X = (
    "{\n"
    "\t\"dataVersion\":{\n"
    "\t\t\"counter\":1448,\n"
    "\t\t\"stateVersion\":0,\n"
    "\t\t\"timestamp\":1736661762584\n"
    "\t},\n"
    "\t\"groupTopicMap\":{\n"
    "\t\t\"GroupA\":[\"%RETRY%GroupA\",\"TopicTest\"]\n"
    "\t},\n"
    "\t\"offsetTable\":{\n"
    "\t\t\"TopicTest@GroupA\":{0:37960,1:37961,2:37959,3:37959\n"
    "\t\t}\n"
    "\t}\n"
    "}"
)
CONSUMER_OFFSET_5X_DATA = {
    "dataVersion": {"counter": 1448, "stateVersion": 0, "timestamp": 1736661762584},
    "groupTopicMap": {"GroupA": ["%RETRY%GroupA", "TopicTest"]},
    "offsetTable": {"TopicTest@GroupA": {0: 37960, 1: 37961, 2: 37959, 3: 37959}},
}

DELAY_OFFSET = (
    "{\n"
    "\t\"offsetTable\":{1:7,2:0,3:1520\n"
    "\t}\n"
    "}"
)
DELAY_OFFSET_DATA = {"offsetTable": {1: 7, 2: 0, 3: 1520}}


def _topic_text(name: str, perm: int, queues: int) -> str:
    return (
        f"\t\t\"{name}\":{{\n"
        "\t\t\t\"order\":false,\n"
        f"\t\t\t\"perm\":{perm},\n"
        f"\t\t\t\"readQueueNums\":{queues},\n"
        "\t\t\t\"topicFilterType\":\"SINGLE_TAG\",\n"
        f"\t\t\t\"topicName\":\"{name}\",\n"
        "\t\t\t\"topicSysFlag\":0,\n"
        f"\t\t\t\"writeQueueNums\":{queues}\n"
        "\t\t}"
    )


def _topic_bean(name: str, perm: int, queues: int) -> dict:
    return {"order": False, "perm": perm, "readQueueNums": queues, "topicFilterType": "SINGLE_TAG",
            "topicName": name, "topicSysFlag": 0, "writeQueueNums": queues}


# The example of 6.4 with its "...same fields..." entries written out.
TOPICS = (
    "{\n"
    "\t\"dataVersion\":{\n"
    "\t\t\"counter\":3,\n"
    "\t\t\"timestamp\":1690000000000\n"
    "\t},\n"
    "\t\"topicConfigTable\":{\n"
    + _topic_text("TopicTest", 6, 4) + ",\n"
    + _topic_text("%RETRY%GroupA", 6, 1) + ",\n"
    + _topic_text("%DLQ%GroupA", 6, 1) + "\n"
    "\t}\n"
    "}"
)
TOPICS_DATA = {
    "dataVersion": {"counter": 3, "timestamp": 1690000000000},
    "topicConfigTable": {
        "TopicTest": _topic_bean("TopicTest", 6, 4),
        "%RETRY%GroupA": _topic_bean("%RETRY%GroupA", 6, 1),
        "%DLQ%GroupA": _topic_bean("%DLQ%GroupA", 6, 1),
    },
}

SUBSCRIPTION_GROUP = (
    "{\n"
    "\t\"dataVersion\":{\n"
    "\t\t\"counter\":1,\n"
    "\t\t\"timestamp\":1690000000000\n"
    "\t},\n"
    "\t\"subscriptionGroupTable\":{\n"
    "\t\t\"GroupA\":{\n"
    "\t\t\t\"brokerId\":0,\n"
    "\t\t\t\"consumeBroadcastEnable\":true,\n"
    "\t\t\t\"consumeEnable\":true,\n"
    "\t\t\t\"consumeFromMinEnable\":true,\n"
    "\t\t\t\"groupName\":\"GroupA\",\n"
    "\t\t\t\"notifyConsumerIdsChangedEnable\":true,\n"
    "\t\t\t\"retryMaxTimes\":16,\n"
    "\t\t\t\"retryQueueNums\":1,\n"
    "\t\t\t\"whichBrokerWhenConsumeSlowly\":1\n"
    "\t\t}\n"
    "\t}\n"
    "}"
)
SUBSCRIPTION_GROUP_DATA = {
    "dataVersion": {"counter": 1, "timestamp": 1690000000000},
    "subscriptionGroupTable": {
        "GroupA": {"brokerId": 0, "consumeBroadcastEnable": True, "consumeEnable": True,
                   "consumeFromMinEnable": True, "groupName": "GroupA", "notifyConsumerIdsChangedEnable": True,
                   "retryMaxTimes": 16, "retryQueueNums": 1, "whichBrokerWhenConsumeSlowly": 1},
    },
}

MQ3 = (("brokerName", "broker-a"), ("queueId", 3), ("topic", "TopicTest"))
MQ2 = (("brokerName", "broker-a"), ("queueId", 2), ("topic", "TopicTest"))
CLIENT_OFFSETS_COMPACT = ('{"offsetTable":{{"brokerName":"broker-a","queueId":3,"topic":"TopicTest"}:0,'
                          '{"brokerName":"broker-a","queueId":2,"topic":"TopicTest"}:0}}')

EXAMPLES = [
    (CONSUMER_OFFSET_4X, CONSUMER_OFFSET_4X_DATA),
    (CONSUMER_OFFSET_5X, CONSUMER_OFFSET_5X_DATA),
    (DELAY_OFFSET, DELAY_OFFSET_DATA),
    (TOPICS, TOPICS_DATA),
    (SUBSCRIPTION_GROUP, SUBSCRIPTION_GROUP_DATA),
]


@pytest.mark.parametrize("text,data", EXAMPLES, ids=["consumerOffset-4x", "consumerOffset-5x", "delayOffset",
                                                     "topics", "subscriptionGroup"])
def test_the_example_files_parse_and_are_written_byte_for_byte(text, data):
    parsed = loads(text)
    assert parsed == data
    assert list(parsed) == list(data)  # property order kept
    assert dumps(data) == text
    assert dumps(parsed) == text
    assert not text.endswith("\n") and "    " not in text


def test_integer_keys_are_bare_numbers_and_stay_ints():
    parsed = loads(DELAY_OFFSET)
    assert all(type(k) is int for k in parsed["offsetTable"])
    assert dumps({0: 12}, pretty=False) == "{0:12}"
    assert dumps({"a": {-1: 5, 7: -9}}, pretty=False) == '{"a":{-1:5,7:-9}}'


def test_object_keys_compact_and_pretty():
    data = {"offsetTable": {MQ3: 0, MQ2: 0}}
    assert dumps(data, pretty=False) == CLIENT_OFFSETS_COMPACT
    assert loads(CLIENT_OFFSETS_COMPACT) == data
    pretty = dumps(data)
    assert pretty == (
        "{\n"
        "\t\"offsetTable\":{{\n"
        "\t\t\t\"brokerName\":\"broker-a\",\n"
        "\t\t\t\"queueId\":3,\n"
        "\t\t\t\"topic\":\"TopicTest\"\n"
        "\t\t}:0,{\n"
        "\t\t\t\"brokerName\":\"broker-a\",\n"
        "\t\t\t\"queueId\":2,\n"
        "\t\t\t\"topic\":\"TopicTest\"\n"
        "\t\t}:0\n"
        "\t}\n"
        "}"
    )
    assert loads(pretty) == data
    assert list(loads(pretty)["offsetTable"]) == [MQ3, MQ2]  # key order and field order as read


def test_compact_format_and_empty_maps():
    assert dumps(CONSUMER_OFFSET_4X_DATA, pretty=False) == (
        '{"offsetTable":{"TopicTest@GroupA":{0:250,1:248,2:251,3:250},"%RETRY%GroupA@GroupA":{0:3}}}')
    assert dumps({"a": {}, "b": []}) == '{\n\t"a":{},\n\t"b":[]\n}'
    assert dumps({}) == "{}"
    assert dumps({"forbiddenTable": {}, "x": 1}, pretty=False) == '{"forbiddenTable":{},"x":1}'


def test_writer_keeps_the_callers_key_order():
    assert dumps({"b": 1, "a": 2}, pretty=False) == '{"b":1,"a":2}'


def test_null_properties_are_left_out_as_fastjson_does():
    assert dumps({"a": None, "b": 1}, pretty=False) == '{"b":1}'
    assert dumps([None, True, False], pretty=False) == "[null,true,false]"


def test_strings_are_escaped_and_read_back():
    value = 'q"\\/\n\r\t\b\f\x01é漢😀'
    text = dumps({"s": value}, pretty=False)
    assert text == '{"s":"q\\"\\\\/\\n\\r\\t\\b\\f\\u0001é漢😀"}'
    assert loads(text) == {"s": value}
    assert loads('"\\u00e9\\ud83d\\ude00\\/"') == "é😀/"


def test_any_whitespace_and_standard_json_are_accepted():
    assert loads(' \r\n{ "offsetTable" :\t{ 1 : 7 ,\n2:0 } }\n') == {"offsetTable": {1: 7, 2: 0}}
    assert loads('{"a": [1, 2.5, -3, 1e3, true, false, null], "b": {"c": "d"}}') == {
        "a": [1, 2.5, -3, 1000.0, True, False, None], "b": {"c": "d"}}
    assert loads('{ { "brokerName" : "b" , "queueId" : 0 , "topic" : "t" } : 12 }') == {
        (("brokerName", "b"), ("queueId", 0), ("topic", "t")): 12}


def test_negative_numbers_and_large_longs():
    big = 9_223_372_036_854_775_807
    assert loads(f'{{-1:-2,"x":{big},"y":-{big + 1}}}') == {-1: -2, "x": big, "y": -(big + 1)}
    assert dumps({"x": big}, pretty=False) == f'{{"x":{big}}}'


@pytest.mark.parametrize("text,offset,what", [
    ("", 0, "empty input"),
    ("   \n ", 5, "empty input"),
    ("{", 1, "unexpected end of input"),
    ('{"a":1,}', 7, "expected a key"),
    ('{"a" 1}', 5, "expected ':'"),
    ('{"a":1 "b":2}', 7, "expected ',' or '}'"),
    ("[1 2]", 3, "expected ',' or ']'"),
    ('"abc', 0, "unterminated string"),
    ('{"a":01}', 5, "must not start with 0"),
    ('{"a":1}x', 7, "after the value"),
    ('"\\q"', 1, "invalid escape"),
    ('"\\u12"', 1, "invalid \\u escape"),
    ('{"a":tru}', 5, "expected a value"),
    ('{"a":-}', 6, "a digit must follow '-'"),
    ('"a\x00b"', 2, "control character"),
    ('{"offsetTable":{"T@G":{0:5', 26, "unexpected end of input"),
])
def test_invalid_input_names_what_and_where(text, offset, what):
    with pytest.raises(FastjsonError) as info:
        loads(text)
    assert info.value.offset == offset
    assert what in str(info.value)
    assert f"at offset {offset} (line " in str(info.value)


def test_error_line_and_column():
    with pytest.raises(FastjsonError) as info:
        loads('{\n\t"a":1,\n\t"b" 2\n}')
    assert (info.value.line, info.value.column) == (3, 6)
    assert "line 3, column 6" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_deep_nesting_is_an_error_not_a_crash():
    with pytest.raises(FastjsonError, match="nesting too deep"):
        loads("[" * 100_000)


def test_unwritable_values_are_rejected():
    with pytest.raises(TypeError):
        dumps({"a": object()})
    with pytest.raises(TypeError):
        dumps({1.5: 1})
    with pytest.raises(TypeError):
        dumps({True: 1})


_keys = st.one_of(st.text(max_size=8), st.integers(min_value=-(2**63), max_value=2**63 - 1))
_leaves = st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.text(max_size=12), st.booleans())
_json = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(_keys, children, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(data=_json, pretty=st.booleans())
def test_dumps_then_loads_round_trips(data, pretty):
    text = dumps(data, pretty=pretty)
    assert loads(text) == data
    assert dumps(loads(text), pretty=pretty) == text  # keys keep their order and types


@settings(max_examples=100, deadline=None)
@given(data=_json)
def test_pretty_and_compact_differ_only_in_layout(data):
    """Strings escape newline and tab, so raw ones in pretty output are layout only."""
    pretty, compact = dumps(data), dumps(data, pretty=False)
    assert pretty.replace("\n", "").replace("\t", "") == compact


@given(st.text())
def test_strings_are_quoted_as_json_quotes_them(text):
    """The quick path (a regex finds nothing to escape) and the escaping loop together quote as json.dumps does
    without ASCII escapes: the regex must name exactly the characters the loop escapes."""
    assert fastjson._quote(text) == json.dumps(text, ensure_ascii=False)
