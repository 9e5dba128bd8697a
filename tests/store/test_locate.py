"""``inspect STORE --key``: find every copy of one message in a hand-made store and say where it is."""

from __future__ import annotations

import json
import os

import pytest

from scenarios.cli import main
from scenarios.locate_text import format_location
from store.inspect import inspect_store_dir
from store.locate import locate_message
from store.message import MessageExt, encode_message, prepare_message

BROKER = (bytes([10, 0, 0, 5]), 10911)
T0 = 1_795_472_100_000  # 2026-11-23 ...


def _record(topic, queue_id, queue_offset, phy, store_ms, reconsume=0, **props) -> bytes:
    msg = MessageExt(topic=topic, queue_id=queue_id, body=b"hello", properties=props,
                     born_timestamp=T0, store_host=BROKER, reconsume_times=reconsume)
    return encode_message(prepare_message(msg), queue_offset, phy, store_ms)


def _store(tmp_path, copies: list[tuple], delay=None, consumer=None) -> str:
    root = tmp_path / "store"
    data = b""
    for topic, qid, qoff, store_ms, reconsume, props in copies:
        data += _record(topic, qid, qoff, len(data), store_ms, reconsume, **props)
    os.makedirs(root / "commitlog")
    (root / "commitlog" / ("%020d" % 0)).write_bytes(data + bytes(8192 - len(data)))
    os.makedirs(root / "config")
    if delay is not None:
        (root / "config" / "delayOffset.json").write_text(json.dumps({"offsetTable": delay}))
    if consumer is not None:
        (root / "config" / "consumerOffset.json").write_text(json.dumps({"offsetTable": consumer}))
    return str(root)


def test_waiting_in_a_delay_level(tmp_path):
    root = _store(tmp_path, [("SCHEDULE_TOPIC_XXXX", 4, 0, T0, 0,
                              {"UNIQ_KEY": "U1", "KEYS": "order-7 x", "REAL_TOPIC": "T", "REAL_QID": "0", "DELAY": "5"})],
                  delay={"5": 0})
    result = locate_message(inspect_store_dir(root), "order-7")
    assert result["where"]["state"] == "waiting_delay"
    assert result["where"]["level"] == 5 and result["where"]["deliver_ms"] == T0 + 60_000
    text = format_location(result)
    assert "SCHEDULE_TOPIC_XXXX queue 4 (level 5, 1m)" in text
    assert "waiting in delay level 5 until" in text and "its group has not consumed it" in text


def test_delivered_schedule_copy_then_consumed_topic_copy(tmp_path):
    root = _store(tmp_path, [
        ("SCHEDULE_TOPIC_XXXX", 1, 0, T0, 0, {"UNIQ_KEY": "U2", "REAL_TOPIC": "T", "REAL_QID": "0", "DELAY": "2"}),
        ("T", 0, 12, T0 + 5000, 0, {"UNIQ_KEY": "U2"}),
    ], delay={"2": 1}, consumer={"T@GroupA": {"0": 15}, "T@GroupB": {"0": 12}})
    result = locate_message(inspect_store_dir(root), "U2")
    assert [c["kind"] for c in result["copies"]] == ["schedule", "topic"]
    assert result["copies"][0]["delivered"] is True
    assert result["where"]["consumed_by"] == {"GroupA": True, "GroupB": False}
    text = format_location(result)
    assert "consumed by GroupA (offset 12 < committed 15)" in text
    assert "not yet consumed by GroupB (offset 12 >= committed 12)" in text


def test_in_the_dlq_after_its_attempts(tmp_path, capsys):
    root = _store(tmp_path, [
        ("T", 0, 0, T0, 0, {"UNIQ_KEY": "U3"}),
        ("%RETRY%GroupA", 0, 0, T0 + 1000, 1, {"UNIQ_KEY": "U3"}),
        ("%DLQ%GroupA", 0, 0, T0 + 9000, 17, {"UNIQ_KEY": "U3"}),
        ("T", 0, 1, T0, 0, {"UNIQ_KEY": "OTHER"}),
    ])
    doc = inspect_store_dir(root)
    first_id = doc["commitlog"]["records"][0]["msg_id"]
    result = locate_message(doc, first_id)  # by offsetMsgId
    assert len(result["copies"]) == 3
    assert result["where"]["state"] == "dlq" and result["where"]["attempts"] == 17
    assert main(["inspect", root, "--key", "U3"]) == 0
    assert "in %DLQ%GroupA since" in capsys.readouterr().out and "after 17 attempts" in format_location(result)
    assert main(["inspect", root, "--key", "U3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["where"]["group"] == "GroupA"


def test_unknown_key_and_non_store_exit_2(tmp_path, capsys):
    root = _store(tmp_path, [("T", 0, 0, T0, 0, {"UNIQ_KEY": "U4"})])
    assert main(["inspect", root, "--key", "nope"]) == 2
    err = capsys.readouterr().err
    assert "nope: no message" in err and "Traceback" not in err
    (tmp_path / "empty").mkdir()
    assert main(["inspect", str(tmp_path / "empty"), "--key", "U4"]) == 2


@pytest.mark.parametrize("key", ["", "  "])
def test_empty_key_exit_2(tmp_path, key):
    root = _store(tmp_path, [("T", 0, 0, T0, 0, {"UNIQ_KEY": "U4"})])
    assert main(["inspect", root, "--key", key]) == 2


def test_timer_copy_against_the_timer_checkpoint(tmp_path):
    deliver = T0 + 90_000
    root = _store(tmp_path, [("rmq_sys_wheel_timer", 0, 0, T0, 0,
                              {"UNIQ_KEY": "U5", "REAL_TOPIC": "T", "TIMER_OUT_MS": str(deliver)})])
    checkpoint = os.path.join(root, "config", "timercheck")
    for read_ms, state in ((T0, "waiting_timer"), (deliver + 1000, "timer_read_past")):
        with open(checkpoint, "wb") as f:
            f.write(b"".join(v.to_bytes(8, "big", signed=True) for v in (read_ms, 0, 0, 0)))
        doc = inspect_store_dir(root)
        assert "timer" in doc, "the timer checkpoint is found at config/timercheck"
        result = locate_message(doc, "U5")
        assert result["where"]["state"] == state
        assert result["where"]["deliver_ms"] == deliver
        assert "timer" in format_location(result)
