"""model/retire.py's reductions change no verdict, and the facts their soundness argument rests on hold on
whole graphs: a representative has every property value of the states it stands for (P), its steps are
steps of each of them (M1), their steps are its steps or stay in the class (M2), and terminal states are
judged alike (T). Checked on the small clean configurations, every model mutant and the default bounds."""

from __future__ import annotations

import json

import pytest

from model import retire as retire_module
from model.checker import check
from model.properties import SAFETY, check_safety, check_terminal
from model.spec import ModelConfig, collapsible_ticks, initial_state, progress_rank, successors
from scenarios.check_cli import check_main

from .test_reductions import CASES, DEFAULTS, LONG_DEFAULTS, _ids, _tiered

MODES = {"off": dict(retire=False, compact=False), "retire": dict(retire=True, compact=False),
         "compact": dict(retire=True, compact=True)}


@pytest.mark.parametrize("case", _tiered(CASES) + _tiered(DEFAULTS, LONG_DEFAULTS))
def test_the_reductions_give_the_same_verdict_property_and_kind_with_no_more_states(case):
    cfg, _name = case
    runs = {mode: check(cfg, max_states=200_000, **options) for mode, options in MODES.items()}
    full = runs["off"]
    assert not full.graph.retire and not full.graph.compact
    assert full.complete or full.violation is not None
    for mode in ("retire", "compact"):
        reduced = runs[mode]
        assert reduced.graph.retire and reduced.graph.compact == (mode == "compact")
        assert reduced.verdict() == full.verdict(), mode
        assert reduced.states <= full.states, mode
        if full.violation is not None:
            assert reduced.violation.prop == full.violation.prop, mode
            assert reduced.violation.kind == full.violation.kind, mode
    assert runs["compact"].states <= runs["retire"].states


def _whole_graph(cfg):
    """Every state of the unreduced graph (no symmetry), violating ones expanded too."""
    result = check(cfg, invariants=lambda s, c: None, symmetry=False, keep_states=True, store_edges=False,
                   max_states=100_000, explore_after_violation=100_000, retire=False, compact=False)
    assert result.states < 100_000 and len(result.graph.states) == result.states
    return result.graph.states


def _values(s, cfg):
    return tuple(prop(s, cfg) is None for _name, prop in SAFETY)


def _terminal(s, cfg):
    """The name of the terminal check's verdict (its sentence names offsets, which compaction shifts)."""
    bad = check_terminal(s, cfg)
    return bad and bad[0]


def _judge(cfg, rep):
    """Check P, M1, M2 and T for the representative function ``rep`` on cfg's whole unreduced graph; the
    number of states it merged with another."""
    collapse = collapsible_ticks(cfg)
    merged = 0
    for x in _whole_graph(cfg):
        s = rep(x)
        assert rep(s) == s, "a representative is its own representative"
        if s is x:
            continue
        merged += 1
        assert _values(s, cfg) == _values(x, cfg), "P: a property differs on the representative"
        assert (check_safety(s, cfg) or (None,))[0] == (check_safety(x, cfg) or (None,))[0]
        assert _terminal(s, cfg) == _terminal(x, cfg), "T: a terminal check differs"
        of_s = {rep(t) for _a, t in successors(s, cfg, False, collapse)}
        of_x = {rep(t) for _a, t in successors(x, cfg, False, collapse)}
        for _a, t in successors(s, cfg, False, collapse):
            assert progress_rank(t) < progress_rank(s)
        assert s not in of_s, "a step of the representative stays in its class"
        assert of_s <= of_x, "M1: a step of the representative is not a step of a state it stands for"
        assert of_x <= of_s | {s}, "M2: a step leaves the class to one the representative cannot reach"
    return merged


# the default bounds' whole graph (56 143 states, each judged) take a minute: the slow tier
SMALL = _tiered(CASES) + [pytest.param(DEFAULTS[0], marks=pytest.mark.slow, id=_ids(DEFAULTS[0]))]


@pytest.mark.parametrize("compact", [False, True], ids=["retire", "compact"])
@pytest.mark.parametrize("case", SMALL)
def test_representatives_keep_properties_steps_and_terminal_checks(case, compact):
    cfg, _name = case
    merged = _judge(cfg, lambda s: retire_module.retire(s, cfg, compact))
    assert merged > 0 or cfg.messages == 1 and cfg.levels == 1


def test_forgetting_while_a_crash_can_come_is_caught(monkeypatch):
    """The whole-graph check can fail: forget the persisted offsets while a crash can still read them."""
    cfg = ModelConfig(messages=1, levels=2, max_retries=1, crashes=1, put_failures=0)
    monkeypatch.setattr(retire_module, "no_crash_can_come", lambda s, c: s.up)
    with pytest.raises(AssertionError, match="M1|M2|P:"):
        _judge(cfg, lambda s: retire_module.retire(s, cfg, True))


def test_the_reductions_save_states_and_a_trace_is_concrete():
    cfg = ModelConfig(messages=1, levels=2, max_retries=1, crashes=1)
    off, on = check(cfg, retire=False, compact=False), check(cfg)
    assert on.holds and off.holds and on.graph.compact
    assert on.states * 5 < off.states
    # a counterexample found on representatives is replayed on the model's states: real offsets in the trace
    bad = ModelConfig(messages=2, levels=1, max_retries=1, crashes=0, put_failures=1, persist_points=0,
                      send_levels=(0, 0), mutants=frozenset({"commit_max_offset"}))
    v, v_off = check(bad).violation, check(bad, retire=False, compact=False).violation
    assert v is not None and v.prop == v_off.prop == "consumer_offset_covers_acked"
    state = initial_state(bad)
    for step in v.steps:
        moves = dict(successors(state, bad))
        assert step.action in moves, step.text()
        state = moves[step.action]
        assert step.state == state
    assert check_safety(state, bad)[0] == "consumer_offset_covers_acked"


def test_cli_switches_turn_them_off(capsys):
    argv = ["--messages", "1", "--levels", "2", "--max-retries", "1", "--crashes", "1", "--no-progress", "--json"]
    counts = {}
    for extra in ([], ["--no-compact"], ["--no-retire"]):
        assert check_main(argv + extra) == 0
        doc = json.loads(capsys.readouterr().out)
        counts[tuple(extra)] = (doc["stats"]["states"], doc["stats"]["retire"], doc["stats"]["compact"])
    assert counts[()][1:] == (True, True)
    assert counts[("--no-compact",)][1:] == (True, False)
    assert counts[("--no-retire",)][1:] == (False, False)
    assert counts[()][0] < counts[("--no-compact",)][0] < counts[("--no-retire",)][0] == 56143
    assert check_main(argv[:-1]) == 0
    assert "queues compacted" in capsys.readouterr().out


def test_the_explanation_names_the_traces_offsets_and_messages():
    """The search judges representatives (queues compacted, messages renamed): the printed sentence is said
    again of the trace's concrete last state, so its unit numbers and names are the trace's."""
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, send_levels=(0, 0),
                      mutants=frozenset({"offset_from_task_start"}))
    v = check(cfg).violation
    assert v is not None and v.prop == "bounded_redelivery"
    assert v.explanation == check_safety(v.steps[-1].state, cfg)[1]
    assert "level 2 unit 1 (m1)" in v.explanation  # unit 0 of the compacted level


@pytest.mark.parametrize("bounds, counts", [
    (dict(messages=1, crashes=1), {"off": (56143, 146403), "retire": (10537, 27407), "compact": (3294, 7977)}),
    (dict(messages=2, crashes=0), {"off": (7786, 16412), "retire": (1392, 2843), "compact": (373, 744)}),
], ids=["m1c1", "m2c0"])
def test_the_issue_configurations_shrink_as_measured(bounds, counts):
    """States and edges of `rmqsim check --messages M --levels 2 --max-retries 1 --crashes C` per switch."""
    cfg = ModelConfig(levels=2, max_retries=1, **bounds)
    for mode, options in MODES.items():
        result = check(cfg, **options)
        assert result.holds and (result.states, result.edges) == counts[mode], mode
