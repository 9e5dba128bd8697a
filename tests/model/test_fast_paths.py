"""The checker's per-state shortcuts answer what the plain functions answer: ``spec.ranks_drop`` is
``rank_drops`` over every successor, and ``properties.safe_successor`` (and the remembering
``successor_safety``) is ``_plainly_safe`` for a successor of a safe parent. Checked on random walks under
every model mutant, with the canonical forms and model/retire.py's representatives the checker hands them,
and on planted edges that do not lower the rank."""

from __future__ import annotations

import random

import pytest

from model import retire
from model.properties import _plainly_safe, check_safety, safe_successor, successor_safety
from model.spec import MUTANTS, ModelConfig, initial_state, rank_drops, ranks_drop, successors
from model.symmetry import canonical


def _configs():
    for name in [None, *sorted(MUTANTS)]:
        yield name, ModelConfig(messages=2, levels=3, max_retries=1, crashes=1, put_failures=1, persist_points=1,
                                send_levels=(1, 1), mutants=frozenset({name} if name else ()),
                                era="4.9.8" if name == "drop_on_exception" else "5.3.3")


def _walks(cfg, rng, walks=25):
    """(state, its successors) along random walks from the initial state, as the checker sees them: the
    state canonical, the successors raw."""
    rep = retire.reducer(cfg, True, True)
    for _ in range(walks):
        state = canonical(rep(initial_state(cfg)))
        while True:
            succ = successors(state, cfg, True, True)
            yield state, succ
            if not succ:
                break
            state = canonical(rep(rng.choice(succ)[1]))


@pytest.mark.parametrize("name, cfg", list(_configs()), ids=lambda x: str(x) if isinstance(x, str) or x is None else "")
def test_ranks_drop_is_rank_drops_for_every_successor(name, cfg):
    rng = random.Random(15)
    seen = 0
    for state, succ in _walks(cfg, rng):
        assert ranks_drop(state, succ) == all(rank_drops(state, nxt) for _a, nxt in succ)
        for move in succ:
            _a, nxt = move
            assert ranks_drop(state, [move]) is True and rank_drops(state, nxt)
            # an edge back up (the successor to its parent) does not lower the rank, wherever it is in the list
            assert ranks_drop(nxt, [move, (_a, state)]) is False
            assert ranks_drop(nxt, [(_a, state), move]) is False
            assert ranks_drop(nxt, [(_a, state)]) is False  # alone too: each changed part's work is counted right
            seen += 1
    assert seen > 100


def test_safe_successor_is_the_fused_check_below_a_safe_parent():
    caught = set()
    for name, cfg in _configs():
        rng = random.Random(15)
        rep = retire.reducer(cfg, True, True)
        remembering = successor_safety(cfg, memo_size=64)  # small: the memo also starts over on the way
        checked = 0
        for state, succ in _walks(cfg, rng, walks=15):
            if check_safety(state, cfg) is not None:
                continue
            for _a, nxt in succ:
                for c in (nxt, rep(nxt), canonical(rep(nxt))):
                    assert safe_successor(state, c, cfg) == _plainly_safe(c, cfg), (name, state, c)
                    assert remembering(state, c) == _plainly_safe(c, cfg), (name, state, c)
                    if not _plainly_safe(c, cfg):
                        caught.add(name)
                    checked += 1
        assert checked > 100
    assert len(caught) >= 3, f"the walks reached violations under {caught} only: the comparison saw too few"
