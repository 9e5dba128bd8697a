"""The run's history: one event per line, in order, hashed for replay (DESIGN.md, run output)."""

from __future__ import annotations

import hashlib
import json

from model.history import check_fields, validate_event

_LINE_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_BETWEEN_EVENTS, _BETWEEN_LINES = '},{"seq":', '}\n{"seq":'
STRICT = False  # the tests set it: every event's value types are checked too (model.history.validate_event)


class History:
    def __init__(self, start_mono_ms: int = 0) -> None:
        self.events: list[dict] = []
        self._seq = 0
        self.start_mono_ms = start_mono_ms

    def record(self, t_ms: int, kind: str, **fields) -> dict:
        check_fields(kind, fields)
        event = {"seq": self._seq, "t_ms": t_ms - self.start_mono_ms, "kind": kind, **fields}
        if STRICT:
            validate_event(event)
        self._seq += 1
        self.events.append(event)
        return event

    def record_at(self, times_ms, kind: str, **fields) -> None:
        """The same event at each of ``times_ms`` (monotonic, ascending, none before the last recorded)."""
        check_fields(kind, fields)
        start, events, seq = self.start_mono_ms, self.events, self._seq
        for t_ms in times_ms:
            event = {"seq": seq, "t_ms": t_ms - start, "kind": kind, **fields}
            if STRICT:
                validate_event(event)
            events.append(event)
            seq += 1
        self._seq = seq

    def insert(self, index: int, t_ms: int, kind: str, **fields) -> dict:
        """Record an event at position ``index`` (a cause after its effects were recorded, in the same step):
        the events after it move one ``seq`` on, so ``seq`` stays the position in the history."""
        if index >= len(self.events):
            return self.record(t_ms, kind, **fields)
        check_fields(kind, fields)
        event = {"seq": self.events[index]["seq"], "t_ms": t_ms - self.start_mono_ms, "kind": kind, **fields}
        if STRICT:
            validate_event(event)
        for later in self.events[index:]:
            later["seq"] += 1
        self._seq += 1
        self.events.insert(index, event)
        return event

    def lines(self) -> list[str]:
        encode = _LINE_ENCODER.encode  # what json.dumps(e, separators=(",", ":"), ensure_ascii=False) builds per call
        return [encode(e) for e in self.events]

    def to_jsonl(self) -> str:
        """The lines, each ending in a newline. Encoded as one list and cut between its events (twice as fast as
        one encode per event): every event starts with its ``seq`` (record and insert build them so), and a quote
        inside a JSON string is escaped, so ``},{"seq":`` stands only between two events, or between two dicts of
        a nested list that also start with "seq": the count tells, and then each event is encoded alone."""
        events = self.events
        if not events:
            return ""
        text = _LINE_ENCODER.encode(events)[1:-1]
        if text.count(_BETWEEN_EVENTS) == len(events) - 1:
            return text.replace(_BETWEEN_EVENTS, _BETWEEN_LINES) + "\n"
        return "".join(line + "\n" for line in self.lines())

    def sha256(self) -> str:
        return hashlib.sha256(self.to_jsonl().encode()).hexdigest()

    def of_kind(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["kind"] == kind]


def load_history(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
