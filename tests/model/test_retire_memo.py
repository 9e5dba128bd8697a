"""model/retire.py's representative keeps its two memos within ``MEMO_BOUND`` entries (they grew without bound,
about 64 bytes a state reached), and the bound changes no representative and no search result."""

from __future__ import annotations

from collections import deque

import pytest

from model import retire as retire_module
from model.spec import ModelConfig, collapsible_ticks, initial_state, successors
from model.symmetry import canonical

from .test_search_golden import RECORDED, record

TINY = 3


def _reached(cfg: ModelConfig, rep, limit: int):
    """The representatives a breadth-first walk of ``cfg`` meets, as the checker builds them (symmetry form
    last), up to ``limit`` distinct ones; ``rep`` is called on every successor."""
    collapse = collapsible_ticks(cfg)
    s0 = canonical(rep(initial_state(cfg)))
    seen = {s0}
    queue = deque([s0])
    while queue and len(seen) < limit:
        state = queue.popleft()
        for _action, nxt in successors(state, cfg, True, collapse):
            c = canonical(rep(nxt))
            if c not in seen:
                seen.add(c)
                queue.append(c)
            yield nxt, c


@pytest.mark.parametrize("bounds", [dict(messages=1, crashes=1), dict(messages=2, crashes=1)], ids=["m1c1", "m2c1"])
def test_a_tiny_bound_gives_the_same_representatives_and_holds_its_memos_within_it(monkeypatch, bounds):
    """Over a real walk (past crashes and in calm states alike), a representative with memos of at most ``TINY``
    entries equals the unbounded one's on every successor, and neither memo ever holds more."""
    cfg = ModelConfig(levels=2, max_retries=1, **bounds)
    monkeypatch.setattr(retire_module, "MEMO_BOUND", 1 << 40)
    unbounded = retire_module.reducer(cfg, True, True)
    monkeypatch.setattr(retire_module, "MEMO_BOUND", TINY)
    bounded = retire_module.reducer(cfg, True, True)
    levels_memo, topics_memo = bounded.memos
    largest = calls = 0
    for nxt, _c in _reached(cfg, unbounded, 15_000):
        assert bounded(nxt) == unbounded(nxt)
        assert len(levels_memo) <= TINY and len(topics_memo) <= TINY
        largest = max(largest, len(levels_memo), len(topics_memo))
        calls += 1
    assert calls > 5_000 and largest == TINY  # the walk was long and filled the memos to the bound
    assert min(map(len, unbounded.memos)) > 10 * TINY  # without the bound they grow past it


@pytest.mark.parametrize("name", ["m1c1-clean", "m1c1-dlq_keeps_delay", "m2c0", "m2c1-11-offset_from_task_start"])
def test_a_search_with_a_tiny_bound_finds_what_was_recorded(monkeypatch, name):
    """The recorded searches (tests/model/search_golden.json) with memos emptied every few entries: the same states,
    edges, depth, verdict and counterexample."""
    monkeypatch.setattr(retire_module, "MEMO_BOUND", TINY)
    case = RECORDED[name]
    assert record(case["bounds"], case["options"]) == case["found"]


def _unmemoised(cfg: ModelConfig, s):
    """The representative computed from its parts, with no memo at all."""
    calm = retire_module.no_crash_can_come(s, cfg)
    levels = retire_module._retire_levels(s.levels, cfg, calm, True)
    topics, pq = retire_module._retire_topics(s.topics, s.pq, cfg, calm, True)
    return s._replace(persists=0 if calm else s.persists, levels=levels, topics=topics, pq=pq)


@pytest.mark.parametrize("bounds", [dict(messages=1, crashes=1), dict(messages=2, crashes=1), dict(messages=2, crashes=2)],
                         ids=["m1c1", "m2c1", "m2c2"])
def test_the_memos_in_front_answer_what_the_parts_compute(bounds):
    """The last answer by identity (and the memos behind it) hand out exactly what the part functions compute, in
    the order the checker asks: every successor of a walk, calm and not, consecutive calls sharing parts."""
    cfg = ModelConfig(levels=2, max_retries=1, **bounds)
    rep = retire_module.reducer(cfg, True, True)
    calls = reused = 0
    previous = None
    for nxt, _c in _reached(cfg, rep, 20_000):
        assert rep(nxt) == _unmemoised(cfg, nxt)
        calls += 1
        reused += previous is not None and nxt.levels is previous.levels
        previous = nxt
    assert calls > 5_000 and reused > calls // 10  # long, and the identity answer was asked often


def test_the_answer_by_identity_is_per_calm():
    """The same part objects asked for right after each other, once while a crash can come and once calm, get
    the two different representatives (the identity answer keys on calm too)."""
    cfg = ModelConfig(levels=2, max_retries=1, messages=2, crashes=1)
    rep = retire_module.reducer(cfg, True, True)
    asked = 0
    for nxt, _c in _reached(cfg, retire_module.reducer(cfg, True, True), 20_000):
        if not (nxt.up and nxt.crashes):
            continue
        calm = nxt._replace(crashes=0)  # the very same levels, topics and process queue objects
        if (retire_module._retire_levels(nxt.levels, cfg, True, True) == retire_module._retire_levels(nxt.levels, cfg, False, True)
                or retire_module._retire_topics(nxt.topics, nxt.pq, cfg, True, True)
                == retire_module._retire_topics(nxt.topics, nxt.pq, cfg, False, True)):
            continue
        for s in (nxt, calm, nxt):
            assert rep(s) == _unmemoised(cfg, s)
        asked += 1
    assert asked > 100


def test_the_answer_by_identity_is_per_process_queue():
    """The same topics object asked for right after each other with two process queues gets two answers."""
    cfg = ModelConfig(levels=2, max_retries=1, messages=2, crashes=1)
    rep = retire_module.reducer(cfg, True, True)
    asked = 0
    for nxt, _c in _reached(cfg, retire_module.reducer(cfg, True, True), 20_000):
        if not nxt.pq:
            continue
        for s in (nxt, nxt._replace(pq=()), nxt):
            assert rep(s) == _unmemoised(cfg, s)
        asked += 1
    assert asked > 100
