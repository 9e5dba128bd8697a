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
        if path.name == "history_recorder.py":
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
