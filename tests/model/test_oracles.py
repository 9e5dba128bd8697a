"""Two oracles that check each other: the model's properties and the history invariants.

Every counterexample the checker prints, rendered as a history in the simulator's schema
(model/render.py), must be flagged by the history invariant that states the same promise; a few
thousand random complete paths of the clean model must satisfy every history invariant."""

from __future__ import annotations

import random

import pytest

from model import render
from model.checker import check
from model.invariants import check_events
from model.spec import ERA_4, ModelConfig
from tests.model.test_model_check import CLEAN, MUTANT_CASES

# commit_max_offset's offset passes a message the client still holds: only a crash after the offset was
# committed and persisted makes the loss observable, so its cross-check has a crash and a persist point.
CROSS_CHECK_BOUNDS = {**{name: bounds for name, (bounds, _p, _s) in MUTANT_CASES.items()},
                      "commit_max_offset": dict(MUTANT_CASES["commit_max_offset"][0], crashes=1, persist_points=1,
                                                crash_kinds=("process",))}


@pytest.mark.parametrize("name", sorted(MUTANT_CASES))
def test_every_counterexample_is_flagged_by_the_corresponding_history_invariant(name):
    cfg = ModelConfig(**CROSS_CHECK_BOUNDS[name], mutants=frozenset({name}))
    v = check(cfg).violation
    assert v is not None and v.prop == MUTANT_CASES[name][1]
    flagged, agreed = render.cross_check(v, cfg)
    assert agreed, f"{name}: {v.prop} but the history invariants flag {flagged}\n{v.format()}"


def test_the_same_counterexample_rendered_without_the_bug_is_clean():
    """The flag comes from the bug, not from the rendering: the clean model's own paths to the same
    point hold (the counterexample's actions replayed where the clean model allows them)."""
    bounds, _prop, _shows = MUTANT_CASES["skip_failed_delivery"]
    cfg = ModelConfig(**bounds)
    rng = random.Random(5)
    for _ in range(50):
        assert render.violated(render.judge(cfg, render.random_path(cfg, rng))) == []


RANDOM_CONFIGS = CLEAN + [
    ModelConfig(messages=2, levels=2, max_retries=1, crashes=1),
    ModelConfig(messages=2, levels=3, max_retries=2, crashes=1, persist_points=2, send_levels=(0, 2)),
    ModelConfig(messages=3, levels=3, max_retries=2, crashes=2, persist_points=2, put_failures=2),
    ModelConfig(messages=2, levels=2, max_retries=1, crashes=2, persist_points=2, era=ERA_4),
]


@pytest.mark.parametrize("cfg", RANDOM_CONFIGS, ids=lambda c: f"{c.messages}m{c.levels}l{c.max_retries}r{c.crashes}c"
                                                              f"{c.put_failures}f{c.persist_points}p-{c.era}")
def test_random_complete_paths_of_the_clean_model_hold_every_history_invariant(cfg):
    rng = random.Random(f"{cfg.as_dict()}")
    checked = 0
    for _ in range(300):
        path = render.random_path(cfg, rng)
        events, ctx = render.render(cfg, path)
        verdicts = check_events(events, ctx)
        bad = {name: v["violations"][0]["explanation"] for name, v in verdicts.items() if not v["holds"]}
        assert not bad, (bad, [a.text() for a, _b, _c in path])
        checked += sum(v["checked"] for v in verdicts.values())
    assert checked > 300  # the invariants had something to check


@pytest.mark.parametrize("era", ["5.3.3", ERA_4])
def test_a_rendered_path_is_judged_by_its_eras_rules_and_waits_out_the_heartbeat_after_a_restart(era):
    """The history invariants apply per-era rules (4.9.8's producer fallback); and after a broker restart a
    client pulls again only once its heartbeat reached the broker, so a complete path's drain reaches past it."""
    from model.stats import RESUME_AFTER_BROKER_RESTART_MS

    cfg = ModelConfig(messages=1, levels=1, max_retries=1, crashes=1, persist_points=1, era=era)
    rng = random.Random(3)
    paths = [render.random_path(cfg, rng) for _ in range(40)]
    restarted = next(p for p in paths if any(a.verb == "restart" for a, _b, _c in p))
    events, ctx = render.render(cfg, restarted)
    assert ctx.era == era
    last_restart_ms = max(e["t_ms"] for e in events if e["kind"] == "restart")
    assert ctx.end_ms >= last_restart_ms + RESUME_AFTER_BROKER_RESTART_MS[era]


def test_the_renderer_speaks_the_simulators_schema():
    cfg = ModelConfig(messages=1, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1)
    path = render.random_path(cfg, random.Random(2))
    events, _ctx = render.render(cfg, path)
    kinds = {e["kind"] for e in events}
    assert {"send", "store", "deliver", "consume"} <= kinds
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert all(e["t_ms"] <= f["t_ms"] for e, f in zip(events, events[1:], strict=False))
    send = next(e for e in events if e["kind"] == "send")
    assert send["status"] == "SEND_OK" and send["delay_level"] == 1
