"""The checker's speed-ups change no search result: per case the states, edges, depth, generated successors,
terminal states, verdict and the whole printed counterexample are those recorded with the checker before them
(tests/model/search_golden.json, written by ``benchmarks/search_golden.py --record`` on main at d5764c4)."""

from __future__ import annotations

import json
import os

import pytest

from model.checker import check
from model.spec import ModelConfig

_FILE = os.path.join(os.path.dirname(__file__), "search_golden.json")
with open(_FILE, encoding="utf-8") as _f:
    RECORDED = json.load(_f)


def record(bounds: dict, options: dict) -> dict:
    """What one search found (as benchmarks/search_golden.py records it)."""
    cfg = ModelConfig(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in bounds.items()})
    r = check(cfg, **options)
    v = r.violation
    return {"states": r.states, "edges": r.edges, "depth": r.depth, "generated": r.graph.generated,
            "terminal": sum(r.graph.terminal), "verdict": r.verdict(), "stop": r.stop,
            "por_pruned": r.graph.por_pruned, "acyclic": r.graph.acyclic,
            "violation": v and {"prop": v.prop, "kind": v.kind, "text": v.format(),
                                "path": v.path_ids, "cycle": v.cycle_ids}}


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
