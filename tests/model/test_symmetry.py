"""Symmetry reduction: the same verdicts as the full search, on fewer states, and a true canonical form."""

from __future__ import annotations

import random

import pytest

from model.checker import check
from model.spec import Copy, Level, ModelConfig, Sched, State, Topic, initial_state, successors
from model.symmetry import canonical

SMALL = [
    dict(messages=3, levels=1, max_retries=0, crashes=0, put_failures=1, persist_points=1),
    dict(messages=2, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1),
    dict(messages=3, levels=2, max_retries=0, crashes=0, put_failures=0, persist_points=1, send_levels=(1, 1, 2)),
    dict(messages=2, levels=1, max_retries=1, crashes=0, put_failures=1, persist_points=0),
]
MUTANTS = [None, "offset_from_task_start", "commit_max_offset", "dlq_threshold_gt", "skip_failed_delivery"]


@pytest.mark.parametrize("bounds", SMALL, ids=lambda b: f"{b['messages']}m{b['levels']}l{b['crashes']}c")
@pytest.mark.parametrize("mutant", MUTANTS)
def test_symmetry_gives_the_same_verdict_with_fewer_states(bounds, mutant):
    cfg = ModelConfig(**bounds, mutants=frozenset({mutant} if mutant else ()))
    reduced = check(cfg, symmetry=True, max_states=300_000)
    full = check(cfg, symmetry=False, max_states=300_000)
    assert reduced.verdict() == full.verdict()
    if full.violation is not None:
        assert reduced.violation.prop == full.violation.prop
        assert len(reduced.violation.steps) == len(full.violation.steps)  # shortest either way
    else:
        assert reduced.complete and full.complete
        # interchangeable messages (same level, no history) exist in every SMALL configuration
        assert reduced.states < full.states
        assert reduced.nontrivial_sccs == full.nontrivial_sccs == 0


def test_the_reduction_factor_grows_with_interchangeable_messages():
    factors = []
    for n in (2, 3, 4):
        cfg = ModelConfig(messages=n, levels=1, max_retries=0, crashes=0, put_failures=0, persist_points=0)
        factors.append(check(cfg, symmetry=False).states / check(cfg, symmetry=True).states)
    assert 1.0 < factors[0] < factors[1] < factors[2]


def _rename(s: State, perm: list[int]) -> State:
    """The same state with message i called perm[i]."""
    msgs = [None] * len(s.msgs)
    for old, m in enumerate(s.msgs):
        msgs[perm[old]] = m
    levels = tuple(Level(tuple(Sched(perm[e.msg], e.r, e.wait, e.status, e.dest) for e in lv.entries), lv.cursor,
                         lv.table, lv.persisted, lv.running) for lv in s.levels)
    topics = tuple(Topic(tuple(Copy(perm[c.msg], c.r, c.acked, c.level) for c in tp.entries), tp.pull, tp.cmem,
                         tp.cper) for tp in s.topics)
    return State(s.up, s.crashes, s.faults, s.persists, tuple(msgs), levels, topics, s.pq,
                 tuple((perm[m], r) for m, r in s.dlq))


def test_canonical_form_is_invariant_under_renaming_and_keeps_successors():
    cfg = ModelConfig(messages=3, levels=2, max_retries=1, crashes=1, put_failures=1, persist_points=1,
                      send_levels=(1, 1, 1))
    rng = random.Random(3)
    state = initial_state(cfg)
    checked = 0
    for _ in range(400):
        moves = successors(state, cfg)
        if not moves:
            state = initial_state(cfg)
            continue
        state = rng.choice(moves)[1]
        perm = list(range(cfg.messages))
        rng.shuffle(perm)
        renamed = _rename(state, perm)
        assert canonical(renamed) == canonical(state)
        assert canonical(canonical(state)) == canonical(state)
        # renaming commutes with the transition relation, up to canonical form
        ours = {canonical(t) for _a, t in successors(state, cfg)}
        theirs = {canonical(t) for _a, t in successors(renamed, cfg)}
        assert ours == theirs
        checked += 1
    assert checked > 300
