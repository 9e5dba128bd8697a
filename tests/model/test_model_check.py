"""The exhaustive model checker: clean bounds hold, every model mutant is found with a readable trace,
liveness under fairness, limits, and the fast safety path agrees with the named properties."""

from __future__ import annotations

import random
import re
from functools import cache

import networkx as nx
import pytest

from model import properties
from model.checker import (
    STOP_MEMORY,
    STOP_STATES,
    STOP_TIME,
    StateGraph,
    check,
    fair_components,
    strongly_connected_components,
)
from model.spec import (
    ERA_4,
    MUTANTS,
    NOT_MODELLED,
    Action,
    ModelConfig,
    ModelConfigError,
    initial_state,
    successors,
)
from store.mutants import CATALOGUE


@cache
def _checked(cfg: ModelConfig, collapse_ticks: bool = True):
    """``check`` at 200 000 states, once per configuration: shared by the clean whole-state-space test below,
    test_reductions' edge-store and tick-collapse tests and test_por's same-verdict test; without
    model/retire.py's reductions (the edge store turns them off), which tests/model/test_retire.py judges."""
    return check(cfg, max_states=200_000, collapse_ticks=collapse_ticks, retire=False, compact=False)


CLEAN = [
    ModelConfig(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, persist_points=0),
    ModelConfig(messages=1, levels=3, max_retries=2, crashes=0, put_failures=1, persist_points=1),
    ModelConfig(messages=2, levels=2, max_retries=1, crashes=0, put_failures=1, persist_points=1),
    ModelConfig(messages=1, levels=2, max_retries=1, crashes=1, put_failures=0, persist_points=1),
    ModelConfig(messages=2, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1),
    ModelConfig(messages=3, levels=1, max_retries=0, crashes=0, put_failures=1, persist_points=1,
                send_levels=(0, 1, 1)),
    ModelConfig(messages=2, levels=1, max_retries=0, crashes=1, put_failures=1, persist_points=1, era=ERA_4),
]


@pytest.mark.parametrize("cfg", CLEAN, ids=lambda c: f"{c.messages}m{c.levels}l{c.max_retries}r{c.crashes}c"
                                                     f"{c.put_failures}f{c.persist_points}p-{c.era}")
def test_clean_configurations_hold_on_the_whole_state_space(cfg):
    result = _checked(cfg)
    assert result.violation is None, result.violation.format()
    assert result.complete and result.holds
    assert result.states > 8 and result.edges >= result.states - 1
    assert sum(result.graph.terminal) > 0  # every run can end, and every end was checked for loss


# A small configuration per mutant, the property that must catch it, and a verb its trace must show.
MUTANT_CASES = {
    "skip_failed_delivery": (dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=1, persist_points=0),
                             "delay_offset_covers_delivered", "fault site=schedule.deliver_put"),
    "offset_from_task_start": (dict(messages=2, levels=1, max_retries=0, crashes=1, put_failures=0,
                                    persist_points=1, crash_kinds=("process",)),
                               "bounded_redelivery", "persist file=delayOffset.json"),
    "no_persist_at_shutdown": (dict(messages=1, levels=1, max_retries=0, crashes=1, put_failures=0,
                                    persist_points=0, crash_kinds=("graceful",)),
                               "bounded_redelivery", "crash kind=graceful"),
    "persist_before_load": (dict(messages=1, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1,
                                 crash_kinds=("process",)), "bounded_redelivery", "restart"),
    "drop_on_exception": (dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=1, persist_points=0,
                               era=ERA_4), "delay_offset_covers_delivered", "fault site=schedule.rebuild"),
    "dlq_keeps_delay": (dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, persist_points=0),
                        "dlq_after_max_retries", "dlq "),
    "dlq_threshold_gt": (dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, persist_points=0),
                         "reconsume_times_bounded", "send_back "),
    "retry_level_2_plus_r": (dict(messages=1, levels=3, max_retries=1, crashes=0, put_failures=0, persist_points=0),
                             "retry_schedule", "level=2"),
    "commit_on_failed_send_back": (dict(messages=1, levels=1, max_retries=1, crashes=0, put_failures=1,
                                        persist_points=0), "consumer_offset_covers_acked",
                                   "fault site=broker.send_back"),
    "commit_max_offset": (dict(messages=1, levels=1, max_retries=1, crashes=0, put_failures=1, persist_points=0,
                               send_levels=(0,)), "consumer_offset_covers_acked", "fault site=broker.send_back"),
}


def test_every_model_mutant_has_a_case_and_the_names_are_the_simulators():
    assert set(MUTANT_CASES) == set(MUTANTS)
    # the model's switches carry the store's names; the rest of the catalogue is explained
    assert set(MUTANTS) <= set(CATALOGUE)
    assert set(MUTANTS) | set(NOT_MODELLED) == set(CATALOGUE)


@pytest.mark.parametrize("name", sorted(MUTANT_CASES))
def test_each_mutant_is_found_with_a_readable_shortest_trace(name):
    bounds, prop, shows = MUTANT_CASES[name]
    clean = check(ModelConfig(**bounds))
    assert clean.holds, clean.violation and clean.violation.format()
    result = check(ModelConfig(**bounds, mutants=frozenset({name})))
    v = result.violation
    assert v is not None and v.prop == prop, v and v.format()
    text = v.format()
    lines = text.splitlines()
    assert lines[0].startswith(f"VIOLATION of {prop} (safety): ")
    numbered = [line for line in lines if re.match(r"^\s+\d+\. [a-z_]+", line)]
    assert len(numbered) == len(v.steps) >= 2
    assert [int(line.split(".")[0]) for line in numbered] == list(range(1, len(numbered) + 1))
    assert any(shows in line for line in numbered), text
    assert "m0" in text
    # the trace is a real path of the concrete model, ending in the violating state
    state = initial_state(result.config)
    for step in v.steps:
        moves = dict(successors(state, result.config))
        assert step.action in moves
        state = moves[step.action]
    assert properties.check_safety(state, result.config)[0] == prop
    # BFS: no shorter path to any violation of this property exists
    assert len(v.steps) == result.graph.depth[v.state_id]


def test_mutants_that_do_nothing_in_an_era_are_refused():
    with pytest.raises(ModelConfigError, match="only changes era 5.3.3"):
        ModelConfig(mutants=frozenset({"skip_failed_delivery"}), era=ERA_4).validate()
    with pytest.raises(ModelConfigError, match="only changes era 4.9.8"):
        ModelConfig(mutants=frozenset({"drop_on_exception"})).validate()
    with pytest.raises(ModelConfigError, match="not modelled"):
        ModelConfig(mutants=frozenset({"timer_read_time_early"})).validate()
    with pytest.raises(ModelConfigError, match="unknown mutant"):
        ModelConfig(mutants=frozenset({"no_such_bug"})).validate()


def test_retry_ladder_levels_follow_three_plus_r_clamped():
    cfg = ModelConfig(levels=4, max_retries=16)
    assert [cfg.retry_level(r) for r in range(5)] == [3, 4, 4, 4, 4]
    assert ModelConfig(levels=2).retry_level(0) == 2
    assert [cfg.goes_to_dlq(r) for r in (15, 16, 17)] == [False, True, True]


# --- liveness ----------------------------------------------------------------------------------------------
def test_unbounded_put_failures_hold_under_fairness_and_fail_without_it():
    cfg = ModelConfig(messages=1, levels=1, max_retries=1, crashes=0, put_failures=None, persist_points=0)
    fair = check(cfg)
    assert fair.holds
    assert fair.nontrivial_sccs > 0 and fair.fair_sccs == 0  # the failure loops exist, none is fair
    unfair = check(cfg, fairness=False)
    v = unfair.violation
    assert v is not None and v.kind == "liveness" and v.prop == "liveness"
    assert v.cycle_steps, "a lasso: a loop after the prefix"
    g = unfair.graph
    assert v.cycle_ids[-1] == v.state_id  # the loop comes back to the knot
    assert all(g.pending[i] for i in v.cycle_ids)
    assert "forever" in v.format() and "fault " in v.format()


def _graph(n: int, edges: list[tuple[int, int, Action]]) -> StateGraph:
    g = StateGraph()
    for _ in range(n):
        g.parent.append(-1)
        g.parent_action.append(0xFFFF)
        g.pending.append(1)
        g.depth.append(0)
    for i in range(n):
        g.edge_start.append(len(g.edge_dst))
        for u, v, a in edges:
            if u == i:
                g.edge_dst.append(v)
                g.edge_action.append(g.action_id(a))
    return g


def test_fairness_refinement_finds_a_fair_subcycle():
    tick, deliver = Action("tick"), Action("deliver", (("level", 1),))
    fault = Action("fault", (("site", "commitlog.put"),))
    # 0 -tick-> 1 -tick-> 0 is fair on its own; state 2 loops on a fault and could deliver (leaving): unfair
    g = _graph(4, [(0, 1, tick), (1, 0, tick), (1, 2, tick), (2, 2, fault), (2, 3, deliver)])
    fair, count = fair_components(g, range(4), True)
    assert count == 2
    assert sorted(map(sorted, fair)) == [[0, 1]]
    # a loop whose states also enable an escaping fair action is refined away
    g = _graph(3, [(0, 1, tick), (1, 0, tick), (0, 2, deliver)])
    fair, _ = fair_components(g, range(3), True)
    assert fair == []
    fair, _ = fair_components(g, range(3), False)
    assert sorted(map(sorted, fair)) == [[0, 1]]


def test_tarjan_agrees_with_networkx():
    rng = random.Random(7)
    for _ in range(40):
        n = rng.randint(1, 40)
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 3 * n))]
        adj: dict[int, list[int]] = {i: [] for i in range(n)}
        for u, v in edges:
            adj[u].append(v)
        ours = {frozenset(c) for c in strongly_connected_components(n, range(n), adj.__getitem__)}
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(edges)
        assert ours == {frozenset(c) for c in nx.strongly_connected_components(g)}


# --- limits and statistics -----------------------------------------------------------------------------------
def test_limits_stop_the_search_and_say_it_is_incomplete():
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, put_failures=1, persist_points=1)
    by_states = check(cfg, max_states=5000)
    assert by_states.stop == STOP_STATES and not by_states.complete and by_states.verdict() == "incomplete"
    assert 5000 <= by_states.states < 5000 + 2048 + 64
    by_memory = check(cfg, memory_mb=1)
    assert by_memory.stop == STOP_MEMORY and not by_memory.holds
    by_time = check(cfg, max_seconds=0.0)
    assert by_time.stop == STOP_TIME
    stats = by_states.stats()
    assert stats["states"] == by_states.states and stats["depth"] > 0 and stats["states_per_second"] > 0


def test_the_fast_safety_path_agrees_with_the_named_properties():
    """Explore without stopping (no invariant), then compare the fused check with the named ones."""
    seen = 0
    for name, (bounds, _prop, _shows) in sorted(MUTANT_CASES.items()):
        cfg = ModelConfig(**bounds, mutants=frozenset({name}))
        result = check(cfg, invariants=lambda s, c: None, max_states=3000, symmetry=False, keep_states=True)
        for state in result.graph.states:
            slow = any(fn(state, cfg) is not None for _n, fn in properties.SAFETY)
            if properties._plainly_safe(state, cfg):
                assert not slow, (name, state)
            seen += slow
    assert seen > 0


# --- terminal states -----------------------------------------------------------------------------------------
def test_loss_is_found_at_the_end_even_without_the_safety_properties():
    bounds, _prop, _shows = MUTANT_CASES["skip_failed_delivery"]
    result = check(ModelConfig(**bounds, mutants=frozenset({"skip_failed_delivery"})), invariants=lambda s, c: None)
    v = result.violation
    assert v is not None and (v.prop, v.kind) == ("no_loss", "terminal"), v and v.format()
    assert "neither consumed successfully nor in %DLQ%" in v.explanation
    assert result.graph.terminal[v.state_id] and not successors(v.steps[-1].state, result.config)


def test_terminal_check_tells_loss_from_deadlock_from_done():
    cfg = ModelConfig(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, persist_points=0)
    s = initial_state(cfg)
    moves = dict(successors(s, cfg))
    sent = next(t for a, t in moves.items() if a.verb == "send")
    assert properties.check_terminal(sent, cfg)[0] == "deadlock"  # a copy waits in level 1
    lost = sent._replace(levels=(sent.levels[0]._replace(cursor=1),))
    assert properties.check_terminal(lost, cfg)[0] == "no_loss"
    assert properties.check_terminal(s, cfg)[0] == "deadlock"  # never sent
    done = lost._replace(msgs=(lost.msgs[0]._replace(done=True),))
    assert properties.check_terminal(done, cfg) is None


# --- the same search as before the compact store and the faster successors -----------------------------------
_B = dict(levels=2, max_retries=1, put_failures=1, persist_points=1)
# (bounds, check options) -> (states, edges, verdict, property, trace length, loop length), as measured with
# the checker before the compact store and the positional successors (commit 3536c68): neither may change them.
BEFORE = [
    (dict(_B, messages=1, crashes=1), {}, (56143, 146403, "ok", None, None, None)),
    (dict(_B, messages=2, crashes=0), {}, (7786, 16412, "ok", None, None, None)),
    (dict(_B, messages=2, crashes=0), {"symmetry": False}, (7786, 16412, "ok", None, None, None)),
    (dict(_B, messages=2, crashes=0, send_levels=(1, 1)), {}, (3249, 6901, "ok", None, None, None)),
    (dict(_B, messages=1, crashes=1, era=ERA_4), {}, (56143, 146403, "ok", None, None, None)),
    (dict(_B, messages=1, crashes=1), {"store_edges": True}, (71566, 192195, "ok", None, None, None)),
    (dict(messages=1, levels=1, max_retries=1, crashes=0, put_failures=None, persist_points=0), {},
     (26, 42, "ok", None, None, None)),
    (dict(messages=1, levels=1, max_retries=1, crashes=0, put_failures=None, persist_points=0), {"fairness": False},
     (26, 42, "violation", "liveness", 0, 1)),
    (dict(_B, messages=2, crashes=1, send_levels=(1, 1), mutants=frozenset({"commit_max_offset"})), {},
     (67, 88, "violation", "consumer_offset_covers_acked", 5, 0)),
    (dict(_B, messages=2, crashes=1, send_levels=(1, 1), mutants=frozenset({"dlq_keeps_delay"})), {},
     (907, 1497, "violation", "dlq_after_max_retries", 9, 0)),
    (dict(_B, messages=2, crashes=1, send_levels=(1, 1), mutants=frozenset({"dlq_threshold_gt"})), {},
     (907, 1497, "violation", "reconsume_times_bounded", 9, 0)),
    (dict(_B, messages=2, crashes=1, send_levels=(1, 1), mutants=frozenset({"drop_on_exception"}), era=ERA_4), {},
     (18, 19, "violation", "delay_offset_covers_delivered", 3, 0)),
    (dict(_B, messages=2, crashes=1, send_levels=(1, 1), mutants=frozenset({"no_persist_at_shutdown"})), {},
     (140, 201, "violation", "bounded_redelivery", 6, 0)),
    (dict(_B, messages=2, crashes=1, send_levels=(1, 1), mutants=frozenset({"offset_from_task_start"})), {},
     (337, 510, "violation", "bounded_redelivery", 8, 0)),
]


# The era-4.9.8 and edge-store copies of case0 (its 56 143 states again, seconds each) in the slow tier; case0,
# the 2-message cases and the mutants' stay in the default tier.
SLOW_BEFORE = {4, 5}


@pytest.mark.parametrize("bounds, options, before", [
    pytest.param(*case, id=f"case{i}", marks=[pytest.mark.slow] if i in SLOW_BEFORE else [])
    for i, case in enumerate(BEFORE)])
def test_the_search_finds_the_same_states_edges_and_verdicts_as_before(bounds, options, before):
    result = check(ModelConfig(**bounds), **{"retire": False, "compact": False, **options})  # the unreduced search
    v = result.violation
    got = (result.states, result.edges, result.verdict(), v and v.prop, v and len(v.steps),
           v and len(v.cycle_steps))
    assert got == before


def test_the_fast_successor_paths_keep_the_record_types():
    """Successors are built positionally now: every part must still be the named record it was."""
    from model.spec import Copy, Level, Msg, Sched, State, Topic

    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, send_levels=(0, 1))
    result = check(cfg, keep_states=True, symmetry=False, max_states=4000)
    kinds = set()
    for s in result.graph.states:
        for action, t in successors(s, cfg):
            kinds.add(action.verb)
            assert type(t) is State and all(type(m) is Msg for m in t.msgs)
            assert all(type(lv) is Level and all(type(e) is Sched for e in lv.entries) for lv in t.levels)
            assert all(type(tp) is Topic and all(type(c) is Copy for c in tp.entries) for tp in t.topics)
    assert {"send", "deliver", "tick", "consume", "send_back", "dlq", "offset_commit", "persist", "crash",
            "restart", "fault"} <= kinds
