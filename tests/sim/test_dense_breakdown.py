"""benchmarks/dense_breakdown.py charges each timed call its own time only: what a timed call inside it spent
goes to the inner call's part. Checked on a clock that moves only when the toy methods say so."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

from benchmarks.dense_breakdown import install, uninstall


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


CLOCK = _Clock()


class _Toy:
    def outer(self, inner_calls: int) -> str:
        CLOCK.now += 5
        for _ in range(inner_calls):
            self.inner()
        CLOCK.now += 1
        return "done"

    def inner(self) -> None:
        CLOCK.now += 10


def test_nested_time_goes_to_the_inner_part_only():
    exclusive, calls = Counter(), Counter()
    saved = install(exclusive, calls, [(_Toy, "outer", "outer"), (_Toy, "inner", "inner")], clock=CLOCK)
    try:
        toy = _Toy()
        assert toy.outer(3) == "done"
        toy.inner()  # a call outside any other counts whole
        assert toy.outer(0) == "done"
    finally:
        uninstall(saved)
    assert exclusive == {"outer": 12, "inner": 40}
    assert calls == {"outer": 2, "inner": 4}
    assert _Toy.outer.__qualname__ == "_Toy.outer"  # put back


def test_the_script_prints_every_part_for_a_small_run():
    out = subprocess.run([sys.executable, "benchmarks/dense_breakdown.py", "--messages", "300"],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    parts = doc["us_per_lifecycle"]
    assert doc["consumed"] > 0
    assert doc["calls"]["store: put"] == doc["calls"]["history: store events (a put's listener)"]
    assert {"checks", "stats", "history hash", "store: put", "store: reput and dispatch"} <= set(parts)
    assert all(v > 0 for v in parts.values()), parts
    assert doc["budget_us_per_lifecycle_at_0.33"] > doc["ceiling_us_per_lifecycle"] > 0
    assert doc["ceiling_one_at_a_time_us_per_lifecycle"] > 0 and doc["simulation_over_in_run_store_work"] > 1
