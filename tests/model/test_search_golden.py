"""The checker's speed-ups change no search result: per case the states, edges, depth, generated successors,
terminal states, verdict and the whole printed counterexample are those recorded with the checker before them
(tests/model/search_golden.json, written by ``benchmarks/search_golden.py --record`` on main at d5764c4)."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.search_golden import record  # what one search found, as recorded

_FILE = os.path.join(os.path.dirname(__file__), "search_golden.json")
with open(_FILE, encoding="utf-8") as _f:
    RECORDED = json.load(_f)


def test_the_record_has_violations_completions_and_limits():
    """The record can fail: it holds every kind of outcome the comparison below must reproduce."""
    found = [case["found"] for case in RECORDED.values()]
    assert {f["verdict"] for f in found} == {"ok", "violation", "incomplete"}
    assert {f["violation"]["kind"] for f in found if f["violation"]} >= {"safety", "liveness"}
    assert sum(not case["slow"] for case in RECORDED.values()) >= 60


@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.slow] if case["slow"] else [], id=name)
                                  for name, case in sorted(RECORDED.items())])
def test_the_search_finds_what_it_found_before(name):
    case = RECORDED[name]
    got = record(case["bounds"], case["options"])
    want = case["found"]
    if got["violation"] is not None and want["violation"] is not None:
        assert got["violation"]["text"] == want["violation"]["text"]
    assert got == want
