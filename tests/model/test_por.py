"""Partial-order reduction (model/por.py) changes no verdict, and the facts its soundness argument rests on
hold on whole graphs: the actions it postpones commute with the ones it keeps, the actions it keeps never
un-violate a property, and the offsets it reasons about stay at or below the cursor / pull offset."""

from __future__ import annotations

import json
from functools import cache

import pytest

from model import por
from model.checker import check
from model.properties import SAFETY
from model.spec import ModelConfig, collapsible_ticks, successors
from scenarios.check_cli import check_main

from .test_reductions import CASES, DEFAULTS, _checked, _ids

# the default bounds of `rmqsim check` under every mutant take a minute: the slow tier
SLOW_DEFAULTS = [pytest.param(case, marks=pytest.mark.slow, id=_ids(case)) for case in DEFAULTS]


@pytest.mark.parametrize("case", CASES + SLOW_DEFAULTS, ids=_ids)
def test_por_gives_the_same_verdict_with_no_more_states(case):
    cfg, _name = case
    reduced = check(cfg, max_states=200_000, por=True, retire=False, compact=False)  # POR on its own
    full = _checked(cfg)  # check(cfg, max_states=200_000) unreduced, shared with test_reductions' tick tests
    assert reduced.graph.por == por.applicable(cfg) and not full.graph.por
    assert reduced.complete or reduced.violation is not None
    assert reduced.verdict() == full.verdict()
    assert reduced.states <= full.states
    if full.violation is not None:
        assert reduced.violation.prop == full.violation.prop
        assert reduced.violation.kind == full.violation.kind


def test_por_saves_states_on_two_messages():
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=0)
    # without retire's reductions, which leave POR nothing to prune on this configuration (373 states both)
    reduced, full = check(cfg, por=True, retire=False, compact=False), check(cfg, retire=False, compact=False)
    assert reduced.holds and full.holds
    assert reduced.states < full.states and reduced.graph.por_pruned > 0


def test_por_is_off_where_the_graph_keeps_its_edges_or_the_mutant_ties_deliveries_to_ticks():
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=0)
    assert not check(cfg, store_edges=True, por=True).graph.por
    tied = ModelConfig(messages=2, levels=1, max_retries=0, crashes=0, mutants=frozenset({"offset_from_task_start"}))
    assert not por.applicable(tied) and not check(tied, por=True).graph.por


@cache  # the commute test and the offsets test of a configuration walk the same graph
def _whole_graph(cfg):
    """Every state of the unreduced graph, violating ones expanded too."""
    result = check(cfg, invariants=lambda s, c: None, symmetry=False, por=False, keep_states=True,
                   store_edges=False, max_states=100_000, explore_after_violation=100_000)
    assert result.states < 100_000 and len(result.graph.states) == result.states
    return result.graph.states


def _violated(s, cfg):
    return {name for name, prop in SAFETY if prop(s, cfg) is not None}


# the small clean configurations and every model mutant; the default bounds (a whole graph of seconds, as in
# test_reductions) in the slow tier, where clean-1m2l1c0f and clean-2m1l1c1f keep a crash in the default tier
SMALL = [pytest.param(c, id=_ids(c)) for c in CASES] + [pytest.param(c, marks=pytest.mark.slow, id=_ids(c))
                                                        for c in DEFAULTS[:1]]


# POR is off where it does not apply (test_por_is_off_where_...): only the configurations it reduces
@pytest.mark.parametrize("case", [c for c in SMALL if por.applicable(c.values[0][0])])
def test_kept_actions_commute_with_postponed_ones_and_never_unviolate(case):
    cfg, _name = case
    collapse = collapsible_ticks(cfg)
    reduced_somewhere = False
    for s in _whole_graph(cfg):
        succ = successors(s, cfg, False, collapse)
        kept = por.reduce(s, cfg, succ)
        if len(kept) == len(succ):
            continue
        reduced_somewhere = True
        assert kept, "a stubborn set of a state with successors is never empty"
        postponed = [pair for pair in succ if pair not in kept]
        bad = _violated(s, cfg)
        for a, after_a in kept:
            assert bad <= _violated(after_a, cfg), f"{a.text()} un-violates {bad - _violated(after_a, cfg)}"
            then_u = dict(successors(after_a, cfg, False, collapse))
            for u, after_u in postponed:
                then_a = dict(successors(after_u, cfg, False, collapse))
                assert u in then_u and a in then_a, f"{a.text()} and {u.text()} disable each other"
                assert then_u[u] == then_a[a], f"{a.text()} and {u.text()} do not commute"
    if cfg.crashes == 0 and cfg.messages > 1:
        assert reduced_somewhere


@pytest.mark.parametrize("case", SMALL)
def test_offsets_stay_at_or_below_the_cursor_and_the_pull_offset_while_up(case):
    """What por.py's visibility argument uses: while the broker is up, delayOffset.json <= offsetTable <=
    cursor for every level, and consumerOffset.json <= the broker's offset <= the pull offset."""
    cfg, _name = case
    for s in _whole_graph(cfg):
        if not s.up:
            continue
        for lv in s.levels:
            assert lv.persisted <= lv.cursor and lv.table <= lv.cursor
        for tp in s.topics:
            assert tp.cper <= tp.cmem <= tp.pull <= len(tp.entries)


def test_cli_por_turns_it_on_and_reports_it(capsys):
    argv = ["--messages", "2", "--levels", "2", "--max-retries", "1", "--crashes", "0", "--no-progress",
            "--no-retire", "--json"]
    assert check_main(argv + ["--por"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert check_main(argv) == 0
    off = json.loads(capsys.readouterr().out)
    assert on["stats"]["por"] and not off["stats"]["por"]
    assert on["verdict"] == off["verdict"] == "ok"
    assert on["stats"]["states"] < off["stats"]["states"]
    assert check_main(argv[:-1] + ["--por"]) == 0
    assert "partial-order reduction on" in capsys.readouterr().out
