"""The checker's savings change no verdict: edges dropped on a proven-acyclic graph, and the canonical form
skipped where no two reachable states are renamings of each other. Checked on the small clean
configurations and on every model mutant (tests/model/test_model_check.py's MUTANT_CASES)."""

from __future__ import annotations

import random

import pytest

from model import checker as checker_module
from model import retire
from model.checker import check
from model.spec import MUTANTS, ModelConfig, initial_state, progress_rank, successors
from model.symmetry import canonical, renamings_can_meet

from .test_model_check import CLEAN, MUTANT_CASES, _checked

CASES = [(cfg, None) for cfg in CLEAN] + [
    (ModelConfig(**bounds, mutants=frozenset({name})), name) for name, (bounds, _p, _s) in sorted(MUTANT_CASES.items())]
# the default bounds of `rmqsim check`, with and without crashes, under every mutant
DEFAULTS = [(ModelConfig(messages=1, levels=2, max_retries=1, crashes=1, mutants=frozenset({name} if name else ()),
                         era="4.9.8" if name == "drop_on_exception" else "5.3.3"), name)
            for name in [None, *sorted(MUTANTS)]]
# Under these the default bounds explore the whole graph (seconds each): the slow tier runs them; CASES (the
# small clean configurations and every model mutant) and the mutants that stop early stay in the default tier.
LONG_DEFAULTS = {None, "offset_from_task_start", "retry_level_2_plus_r"}


# ... and the clean configurations that take seconds (the other clean ones stay default)
LONG_CASE_IDS = {"clean-1m2l1c0f", "clean-2m2l1c0f"}


def _tiered(cases, long_names=frozenset()):
    """``cases`` as parameters, the ones named in ``long_names`` (or LONG_CASE_IDS) marked slow."""
    return [pytest.param(c, marks=pytest.mark.slow, id=_ids(c)) if c[1] in long_names or _ids(c) in LONG_CASE_IDS
            else pytest.param(c, id=_ids(c)) for c in cases]


def _ids(case):
    cfg, name = case
    return f"{name or 'clean'}-{cfg.messages}m{cfg.levels}l{cfg.crashes}c{cfg.put_failures}f"


def _same_verdict(a, b):
    assert a.verdict() == b.verdict()
    if a.violation is not None:
        assert a.violation.prop == b.violation.prop
        assert len(a.violation.steps) == len(b.violation.steps)
        assert [s.action for s in a.violation.steps] == [s.action for s in b.violation.steps]
    assert (a.states, a.edges) == (b.states, b.edges)


@pytest.mark.parametrize("case", _tiered(CASES) + _tiered(DEFAULTS, LONG_DEFAULTS))
def test_without_the_edge_store_the_verdict_and_the_counts_are_the_same(case):
    cfg, _name = case
    lean = _checked(cfg, collapse_ticks=False)  # collapsing needs the acyclic mode
    full = check(cfg, max_states=200_000, store_edges=True)
    assert lean.graph.acyclic and len(lean.graph.edge_dst) == 0  # no fallback: every edge lowered the rank
    assert not full.graph.acyclic and full.nontrivial_sccs == 0
    _same_verdict(lean, full)


@pytest.mark.parametrize("case", _tiered(CASES) + _tiered(DEFAULTS[:1], LONG_DEFAULTS))
def test_every_edge_of_the_whole_graph_lowers_the_progress_rank(case):
    """Past the first violation too: the rank argument must hold on the mutant's whole graph."""
    cfg, _name = case
    result = check(cfg, invariants=lambda s, c: None, max_states=200_000, symmetry=False, keep_states=True,
                   explore_after_violation=200_000)  # a terminal violation must not end the walk
    assert len(result.graph.edge_start) == result.states  # every state expanded
    g = result.graph
    ranks = [progress_rank(s) for s in g.states]
    for i in range(g.expanded):
        for j in g.targets(i):
            assert ranks[j] < ranks[i]


@pytest.mark.parametrize("cfg", [ModelConfig(messages=1, levels=2, max_retries=1, crashes=0),
                                 pytest.param(ModelConfig(messages=1, levels=2, max_retries=1, crashes=1),
                                              marks=pytest.mark.slow)], ids=["1m2l0c", "1m2l1c"])
def test_a_rank_that_does_not_drop_falls_back_to_the_edge_store(monkeypatch, cfg):
    honest = check(cfg, collapse_ticks=False, retire=False, compact=False)
    monkeypatch.setattr(checker_module, "ranks_drop", lambda before, succ: False)
    fallback = check(cfg)  # retire's reductions are off on the edge store
    assert honest.graph.acyclic and not fallback.graph.acyclic
    assert len(fallback.graph.edge_dst) == fallback.edges > 0
    _same_verdict(honest, fallback)


def test_unbounded_put_failures_keep_the_edges_and_their_cycles():
    cfg = ModelConfig(messages=1, levels=1, max_retries=0, crashes=0, put_failures=None, persist_points=0)
    result = check(cfg)
    assert not result.graph.acyclic and result.nontrivial_sccs > 0


def test_a_random_walk_lowers_the_rank_at_every_step():
    rng = random.Random(15)
    for name in [None, *sorted(MUTANTS)]:
        cfg = ModelConfig(messages=3, levels=3, max_retries=2, crashes=2, put_failures=2, persist_points=2,
                          mutants=frozenset({name} if name else ()),
                          era="4.9.8" if name == "drop_on_exception" else "5.3.3")
        for _ in range(30):
            state = initial_state(cfg)
            while True:
                moves = successors(state, cfg)
                if not moves:
                    break
                for _a, nxt in moves:
                    assert progress_rank(nxt) < progress_rank(state)
                state = rng.choice(moves)[1]


DISTINCT = [(ModelConfig(messages=2, levels=2, max_retries=0, crashes=1, put_failures=0, persist_points=1), None),
            (ModelConfig(messages=3, levels=2, max_retries=0, crashes=0, put_failures=1, persist_points=1,
                         send_levels=(0, 1, 2)), None)]


@pytest.mark.parametrize("case", _tiered(DISTINCT + [c for c in CASES if not renamings_can_meet(c[0].send_levels)
                                                     and c[0].messages > 1]))
def test_with_distinct_send_levels_the_canonical_form_merges_nothing(case):
    """The proof in symmetry.renamings_can_meet, checked: the canonical form itself finds no two states
    of the graph that are renamings of each other."""
    cfg, _name = case
    result = check(cfg, invariants=lambda s, c: None, symmetry=False, keep_states=True, max_states=200_000,
                   explore_after_violation=200_000)
    assert len(result.graph.edge_start) == result.states
    assert len({canonical(s) for s in result.graph.states}) == result.states
    skipped = check(cfg, max_states=200_000)
    assert skipped.renaming is not canonical
    _same_verdict(skipped, check(cfg, symmetry=False, max_states=200_000))


def test_with_compaction_renamings_do_meet_and_skipping_them_keeps_the_verdict():
    """symmetry.renamings_can_meet's other half: compaction drops the copies that told the messages apart, so
    the reachable representatives of even the smallest two-message graph hold renamings of each other; the
    checker skipping the canonical form there is a speed choice (measured), and both searches agree."""
    cfg = ModelConfig(messages=2, levels=2, max_retries=0, crashes=0, put_failures=0, persist_points=0)
    assert not renamings_can_meet(cfg.send_levels)
    rep = retire.reducer(cfg, True, True)
    seen = {rep(initial_state(cfg))}
    todo = list(seen)
    while todo:
        for _a, nxt in successors(todo.pop(), cfg, False, True):
            r = rep(nxt)
            if r not in seen:
                seen.add(r)
                todo.append(r)
    skipped = check(cfg)
    assert skipped.renaming is not canonical and skipped.graph.compact
    assert skipped.states == len(seen) == 55
    assert len({canonical(s) for s in seen}) == 53
    assert skipped.verdict() == check(cfg, retire=False, compact=False).verdict() == "ok"


def test_equal_send_levels_keep_the_canonical_form():
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=0, send_levels=(1, 1))
    reduced = check(cfg)
    assert reduced.renaming is canonical
    assert reduced.states < check(cfg, symmetry=False).states


@pytest.mark.parametrize("case", _tiered(CASES) + _tiered(DEFAULTS, LONG_DEFAULTS))
def test_collapsed_ticks_give_the_same_verdict(case):
    cfg, name = case
    collapsed = _checked(cfg)
    ticking = _checked(cfg, collapse_ticks=False)
    assert collapsed.graph.collapse_ticks == (name != "offset_from_task_start")
    assert not ticking.graph.collapse_ticks
    assert collapsed.verdict() == ticking.verdict()
    assert collapsed.states <= ticking.states
    if ticking.violation is not None:
        assert collapsed.violation.prop == ticking.violation.prop
        assert collapsed.violation.kind == ticking.violation.kind


def test_collapsed_ticks_save_states_and_a_trace_shows_the_jump():
    cfg = ModelConfig(messages=1, levels=2, max_retries=1, crashes=1, put_failures=0)
    assert _checked(cfg).states < _checked(cfg, collapse_ticks=False).states  # whole graphs, shared
    assert _checked(cfg).complete and _checked(cfg, collapse_ticks=False).complete
    v = check(ModelConfig(messages=1, levels=3, max_retries=1, crashes=0, put_failures=0, persist_points=0,
                          send_levels=(3,), mutants=frozenset({"retry_level_2_plus_r"}))).violation
    assert v is not None and v.prop == "retry_schedule"
    assert any(step.action.text() == "tick ticks=3" for step in v.steps), v.format()
