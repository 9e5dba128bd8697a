"""The history schema of ``model/history.py``: what it accepts, what it rejects, and that every writer goes
through it (#12.5)."""

from __future__ import annotations

import pytest

import sim.history
from model.history import EVENTS, HistorySchemaError, check_fields, validate_event, validate_history
from sim.history import History


def _send(**over):
    event = {"seq": 0, "t_ms": 5, "kind": "send", "msg_id": "M", "topic": "T", "queue_id": 0, "delay_level": 0,
             "timer_delay_ms": None, "deliver_ms": None, "status": "SEND_OK", "tags": "TagA"}
    event.update(over)
    return event


def test_the_contract_kinds_are_declared():
    assert set(EVENTS["log"].required) == {"level", "logger", "message", "fault_site"}
    assert set(EVENTS["consumer_start"].required) == {"group", "client_id", "topic", "subscription", "model",
                                                      "max_reconsume_times"}
    assert "tags" in EVENTS["send"].required


def test_a_valid_event_passes():
    validate_event(_send())
    validate_event(_send(tags=None))


def test_a_copy_without_a_uniq_key_is_recorded_with_no_id():
    """A torn copy's retries have no UNIQ_KEY (explore seed 940000253): their store, deliver and dlq name none."""
    store = {"seq": 1, "t_ms": 5, "kind": "store", "msg_id": None, "topic": "%RETRY%G", "queue_id": 0,
             "queue_offset": 3, "phy_offset": 100, "size": 299, "reconsume_times": 2, "broker_ms": 5}
    validate_event(store)
    validate_event({"seq": 2, "t_ms": 5, "kind": "dlq", "group": "G", "msg_id": None, "reconsume_times": 3})
    with pytest.raises(HistorySchemaError):
        validate_event({**_send(), "msg_id": None})  # a producer's send always has its UNIQ_KEY


@pytest.mark.parametrize("event, words", [
    ({**_send(), "kind": "sned"}, "unknown history event kind 'sned'"),
    ({k: v for k, v in _send().items() if k != "tags"}, "missing ['tags']"),
    (_send(colour="red"), "undeclared ['colour']"),
    (_send(queue_id="0"), "field 'queue_id'"),
    (_send(queue_id=True), "field 'queue_id'"),
    ({k: v for k, v in _send().items() if k != "seq"}, "without 'seq'"),
])
def test_a_wrong_event_is_rejected_naming_what_is_wrong(event, words):
    with pytest.raises(HistorySchemaError, match=None) as info:
        validate_event(event)
    assert words in str(info.value)


def test_history_record_checks_kind_and_fields_always():
    h = History()
    with pytest.raises(HistorySchemaError):
        h.record(0, "sned", msg_id="M")
    with pytest.raises(HistorySchemaError):
        h.record(0, "drain", extra=1)
    assert h.events == []
    h.record(3, "drain")
    assert h.events == [{"seq": 0, "t_ms": 3, "kind": "drain"}]


def test_history_record_checks_types_under_the_tests():
    assert sim.history.STRICT  # tests/conftest.py: every run in the tests is validated
    with pytest.raises(HistorySchemaError):
        History().record(0, "persist", file=3)


def test_check_fields_is_cheap_enough_for_every_event():
    # Two set comparisons; no type checks outside the tests.
    check_fields("drain", {})
    with pytest.raises(HistorySchemaError):
        check_fields("drain", {"x": 1})


def test_a_whole_history_is_ordered():
    with pytest.raises(HistorySchemaError, match="seq 1"):
        validate_history([_send(seq=1)])
    with pytest.raises(HistorySchemaError, match="back in time"):
        validate_history([_send(), _send(seq=1, t_ms=4)])
    assert validate_history([_send(), _send(seq=1, t_ms=5)]) == 2
