"""The sweep-line search (model/sweep.py): what breadth-first search finds, with fewer fingerprints held."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model import checker as checker_module
from model import sweep as sweep_module
from model.checker import check
from model.properties import check_safety, check_terminal
from model.spec import ModelConfig, initial_state, successors
from model.statestore import collision_probability
from model.sweep import DiskColumn, sweep_key
from scenarios.check_cli import check_main

from .test_reductions import CASES, DEFAULTS, LONG_DEFAULTS, _tiered


def _same_search(bfs, swept):
    assert swept.sweep_layers > 0 and bfs.sweep_layers == 0
    assert swept.verdict() == bfs.verdict()
    if bfs.violation is None:
        assert (swept.states, swept.edges, swept.graph.generated) == (bfs.states, bfs.edges, bfs.graph.generated)
        assert swept.graph.terminal_states == bfs.graph.terminal_states
        assert swept.sweep_peak_states <= swept.states
        assert swept.depth >= bfs.depth  # a first path is no shorter than a shortest one
        return
    v = swept.violation
    assert not v.shortest and "not always the shortest" in v.format()
    assert len(v.steps) >= len(bfs.violation.steps)  # BFS's is a shortest one
    # the path is the model's (replayed on concrete states) and its last state violates what was reported
    final = v.steps[-1].state if v.steps else initial_state(swept.config)
    again = check_safety(final, swept.config) if v.kind == "safety" else check_terminal(final, swept.config)
    assert again is not None and again[0] == v.prop


@pytest.mark.parametrize("case", _tiered(CASES) + _tiered(DEFAULTS, LONG_DEFAULTS))
def test_the_sweep_finds_the_states_edges_and_verdicts_of_breadth_first_search(case):
    cfg, _name = case
    _same_search(check(cfg, max_states=300_000), check(cfg, max_states=300_000, sweep=True))


def test_on_m1c1_the_layer_being_expanded_holds_a_fifth_of_the_states():
    """The point of it: only one layer's fingerprints are held (measured: 593 of 3 294 at most; m2/c1 in the
    README)."""
    r = check(ModelConfig(messages=1, levels=2, max_retries=1, crashes=1), sweep=True)
    assert r.holds and r.states == 3294
    assert r.sweep_peak_states < r.states / 4
    assert r.stats()["sweep_layers"] == r.sweep_layers > 10


@pytest.mark.parametrize("workers", [1, 2])
def test_the_collision_estimate_of_a_sweep_counts_one_layers_fingerprints(workers):
    """A sweep opens a new fingerprint set for each layer, so a look-up can collide only with the layer being
    expanded: the estimate has the largest layer where breadth-first search has every state."""
    cfg = ModelConfig(messages=1, levels=2, max_retries=1, crashes=1)
    bfs, swept = check(cfg), check(cfg, sweep=True, workers=workers)
    assert (swept.states, swept.graph.generated) == (bfs.states, bfs.graph.generated)
    assert 0 < swept.sweep_peak_states < swept.states / 4
    assert swept.collision_probability == collision_probability(swept.states, swept.graph.generated,
                                                                swept.sweep_peak_states)
    assert swept.collision_probability == pytest.approx(bfs.collision_probability * swept.sweep_peak_states
                                                        / swept.states)


def test_the_key_never_rises_along_an_edge_of_the_reduced_graph():
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, put_failures=1, persist_points=1)
    r = check(cfg, max_states=20_000, sweep=True)  # the search itself raises SweepKeyRose at a rising edge
    assert r.sweep_layers > 0 and r.states >= 20_000
    s = initial_state(cfg)
    keys = [sweep_key(s)]
    for _ in range(40):  # and a walk on concrete states too
        moves = successors(s, cfg)
        if not moves:
            break
        s = moves[len(moves) // 2][1]
        keys.append(sweep_key(s))
    assert keys == sorted(keys, reverse=True)


def test_a_key_that_rises_sends_the_search_back_to_breadth_first(monkeypatch):
    """A planted key that grows with the messages gained: the sweep notices the first rising edge and the
    search is run again breadth-first, with the same result."""
    cfg = ModelConfig(messages=1, levels=2, max_retries=1, crashes=1)
    real = sweep_module.sweep_key
    monkeypatch.setattr(sweep_module, "sweep_key", lambda s: (-real(s)[4],))
    r = check(cfg, sweep=True)
    assert r.sweep_layers == 0 and r.holds and r.states == 3294


def test_a_limit_stops_the_sweep_and_says_so():
    r = check(ModelConfig(messages=2, levels=2, max_retries=1, crashes=1), max_states=5_000, sweep=True)
    assert r.stop == "state limit" and 5_000 <= r.states < 8_000


def test_what_a_sweep_cannot_run_is_refused():
    cfg = ModelConfig(messages=1, crashes=0)
    for options in (dict(keep_states=True), dict(explore_after_violation=10), dict(keep_states=True, workers=2)):
        with pytest.raises(ValueError, match="sweep"):
            check(cfg, sweep=True, **options)


def test_the_cli_flag(capsys):
    assert check_main(["--messages", "1", "--crashes", "1", "--sweep", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "3294 states" in out and "sweep-line (" in out
    assert "calculated (optimistic): 1.5E-13 (each look-up meets only its own layer: at most 593 fingerprints)" in out
    assert check_main(["--messages", "1", "--mutant", "dlq_threshold_gt", "--sweep", "--no-progress"]) == 1
    assert "a path (sweep order: not always the shortest)" in capsys.readouterr().out
    assert check_main(["--sweep", "--put-failures", "inf", "--no-progress"]) == 2
    assert "--sweep runs only searches without edges" in capsys.readouterr().err


@given(st.lists(st.integers(min_value=-(2**31), max_value=2**31 - 1), max_size=300), st.integers(1, 40))
def test_a_disk_column_reads_back_what_was_appended(values, flush_every):
    old = sweep_module.FLUSH_EVERY
    sweep_module.FLUSH_EVERY = flush_every
    try:
        column = DiskColumn("i")
        for v in values:
            column.append(v)
        assert len(column) == len(values)
        assert [column[i] for i in range(len(values))] == values
        if values:
            assert column[-1] == values[-1]
        with pytest.raises(IndexError):
            column[len(values)]
        assert column.nbytes < (flush_every + 1) * 4
        column.close()
    finally:
        sweep_module.FLUSH_EVERY = old


def test_a_spilling_frontier_is_a_fifo_through_its_file(monkeypatch):
    monkeypatch.setattr(sweep_module, "SPILL_CHUNK", 3)
    frontier = sweep_module._SpillingFrontier()
    frontier.loose = 3  # one chunk of objects, the rest in the file
    states = [(True, i, (i, i + 1), ()) for i in range(20)]
    out = []
    for i, s in enumerate(states):
        frontier.push(s)
        if i % 4 == 3:
            out.append(frontier.pop())
    assert frontier.spilled > 0
    while (s := frontier.pop()) is not None:
        out.append(s)
    assert out == states
    frontier.close()


def test_a_counterexample_is_read_back_from_the_parent_pointers_on_disk(monkeypatch):
    """Parent pointers flushed every 3 states: the trace is rebuilt from the file, and is the model's path."""
    monkeypatch.setattr(sweep_module, "FLUSH_EVERY", 3)
    cfg = ModelConfig(messages=2, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1,
                      crash_kinds=("process",), mutants=frozenset({"offset_from_task_start"}))
    swept = check(cfg, sweep=True)
    assert swept.violation is not None and swept.violation.state_id > 3 and len(swept.violation.steps) > 3
    _same_search(check(cfg), swept)


def test_forgetting_the_expanded_states_ids_changes_nothing(monkeypatch):
    monkeypatch.setattr(sweep_module, "TRIM_AT", 2)
    cfg = ModelConfig(messages=1, levels=2, max_retries=1, crashes=1)
    _same_search(check(cfg), check(cfg, sweep=True))
    bad = ModelConfig(messages=2, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1,
                      crash_kinds=("process",), mutants=frozenset({"offset_from_task_start"}))
    _same_search(check(bad), check(bad, sweep=True))


def test_a_lower_layers_entries_come_back_in_order_through_its_file(monkeypatch, tmp_path):
    """What reaches a layer below the one being expanded waits in its file, duplicates included, in order."""
    monkeypatch.setattr(sweep_module, "SPILL_CHUNK", 4)
    layer = sweep_module.Layer(str(tmp_path / "k-0-0"))
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=0)
    s = initial_state(cfg)
    sent = []
    for i in range(11):
        entry = (s, -(2**63) + i if i % 2 else 2**62 + i, i - 1, i % 3, i)
        layer.append(*entry)
        sent.append(entry)
        moves = successors(s, cfg)
        s = moves[-1][1] if moves else s
    layer.append(*sent[3])  # a duplicate
    sent.append(sent[3])
    assert layer.pending == 12 and os.path.getsize(tmp_path / "k-0-0") > 0
    layer.open()
    back = []
    while (chunk := layer.read_chunk()) is not None:
        back.append(chunk)
    assert [len(chunk) for chunk in back] == [4, 4, 4]
    assert [entry for chunk in back for entry in chunk] == sent and layer.pending == 0
    assert not os.listdir(tmp_path)  # read to its end, the file is gone
    layer.close()


def test_a_sweep_that_cannot_run_says_so_on_the_command_line(monkeypatch, capsys):
    """A planted rising key: the CLI's search runs breadth-first and says why, with the same verdict."""
    real = sweep_module.sweep_key
    monkeypatch.setattr(sweep_module, "sweep_key", lambda s: (-real(s)[4],))
    assert check_main(["--messages", "1", "--crashes", "1", "--sweep", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "--sweep not used" in captured.err and "3294 states" in captured.out and "sweep-line" not in captured.out


def test_an_edge_that_does_not_lower_the_rank_sends_the_sweep_to_the_edge_store(monkeypatch):
    """A planted rank failure inside the sweep: the search runs again with edges and the SCC search, as BFS does."""
    monkeypatch.setattr(checker_module, "ranks_drop", lambda state, succ: False)
    r = check(ModelConfig(messages=1, levels=2, max_retries=1, crashes=0), sweep=True)
    assert r.sweep_layers == 0 and not r.graph.acyclic and r.holds
    assert r.verdict() == check(ModelConfig(messages=1, levels=2, max_retries=1, crashes=0)).verdict()
