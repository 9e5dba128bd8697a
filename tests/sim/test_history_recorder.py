"""HistoryRecorder is the one writer of history events in sim/ (issue #16 item 5)."""

from __future__ import annotations

import ast
import pathlib
import sys

SIM = pathlib.Path(__file__).resolve().parents[2] / "sim"


def _record_calls_outside_the_recorder() -> list[str]:
    """Every ``X.record(...)`` call in sim/ whose receiver is not a HistoryRecorder (named ``recorder``)."""
    found = []
    for path in sorted(SIM.glob("*.py")):
        if path.name in ("history_recorder.py", "history.py"):  # the recorder, and the storage it writes to
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "record", "on_send", "on_client_event"):
                receiver = node.func.value
                name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
                if name != "recorder":
                    found.append(f"{path.name}:{node.lineno}")
    return found


def test_only_the_recorder_writes_history_events():
    assert _record_calls_outside_the_recorder() == []


def test_the_check_sees_a_write_that_bypasses_the_recorder(tmp_path, monkeypatch):
    (tmp_path / "rogue.py").write_text("def f(world):\n    world.history.record(0, 'drain')\n")
    monkeypatch.setattr(sys.modules[__name__], "SIM", tmp_path)
    assert _record_calls_outside_the_recorder() == ["rogue.py:2"]


def test_a_cause_recorded_late_goes_to_its_mark_and_seq_stays_the_line_number():
    from sim.history import History
    from sim.history_recorder import HistoryRecorder

    history = History()
    recorder = HistoryRecorder(history, lambda: 7)
    recorder.record("drain")
    recorder.open_request("producer-0")
    recorder.open_request("producer-0")  # a retry of the same send keeps the first mark
    recorder.record("persist", file="a")  # stands for the effects recorded during the request
    recorder.record("persist", file="b")
    recorder.record_cause("producer-0", "send", msg_id="M", topic="T", queue_id=0, delay_level=0,
                          timer_delay_ms=None, deliver_ms=None, status="SEND_OK", tags=None)
    assert [(e["seq"], e["kind"]) for e in history.events] == [(0, "drain"), (1, "send"), (2, "persist"),
                                                               (3, "persist")]
    recorder.open_request("producer-0")
    recorder.end_step()  # a mark never outlives its step: a later cause is recorded where it happens
    recorder.record("drain")
    recorder.record_cause("producer-0", "drain")
    assert [e["kind"] for e in history.events][-2:] == ["drain", "drain"] and history.events[-1]["seq"] == 5
