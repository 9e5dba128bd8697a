"""The sweep on peer processes (model/sweep_workers.py): what breadth-first search finds, in N processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import checker as checker_module
from model import sweep as sweep_module
from model import sweep_workers
from model.checker import STOP_MEMORY, STOP_STATES, check, rss_mb
from model.spec import MUTANTS, ModelConfig, initial_state
from model.sweep import LayerFile, LayerReader, decode_entries, encode_entries
from scenarios.check_cli import check_main

from .test_reductions import CASES, DEFAULTS, LONG_DEFAULTS, _tiered
from .test_sweep import _same_search

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M1C1 = ModelConfig(messages=1, levels=2, max_retries=1, crashes=1)


@pytest.mark.parametrize("case", _tiered(CASES) + _tiered(DEFAULTS, LONG_DEFAULTS))
def test_two_peers_find_the_states_edges_and_verdicts_of_breadth_first_search(case):
    cfg, _name = case
    peers = check(cfg, max_states=300_000, sweep=True, workers=2)
    assert peers.workers == 2
    _same_search(check(cfg, max_states=300_000), peers)


@settings(max_examples=12, deadline=None)
@given(messages=st.integers(1, 2), levels=st.integers(1, 2), crashes=st.integers(0, 1), faults=st.integers(0, 1),
       persists=st.integers(0, 1), era=st.sampled_from(["5.3.3", "4.9.8"]),
       mutant=st.sampled_from([None, *sorted(MUTANTS)]), workers=st.integers(2, 4))
def test_any_number_of_peers_finds_what_breadth_first_search_finds(messages, levels, crashes, faults, persists, era,
                                                                    mutant, workers):
    """Complete searches only (two messages without a crash, or one with): states and edges are compared."""
    era = {"drop_on_exception": "4.9.8", "skip_failed_delivery": "5.3.3"}.get(mutant, era)  # the mutant's era
    cfg = ModelConfig(messages=messages, levels=levels, max_retries=1, crashes=crashes if messages == 1 else 0,
                      put_failures=faults, persist_points=persists, era=era,
                      mutants=frozenset({mutant} if mutant else ()))
    bfs = check(cfg)
    assert bfs.complete or bfs.violation is not None
    _same_search(bfs, check(cfg, sweep=True, workers=workers))


@pytest.mark.parametrize("workers", [3, 5])
def test_more_peers_too(workers):
    r = check(M1C1, sweep=True, workers=workers)
    assert r.holds and (r.states, r.edges, r.graph.terminal_states) == (3294, 7977, 22)
    assert r.worker_expanded == r.states  # each state expanded once, by its owner or by the peer that asked


def test_a_search_on_peers_is_the_same_every_time():
    """Rounds make it deterministic: the same counterexample (ids, actions) and depth, run after run."""
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, mutants=frozenset({"commit_max_offset"}))
    runs = [check(cfg, sweep=True, workers=2) for _ in range(2)]
    assert runs[0].violation is not None
    first, second = (r.violation for r in runs)
    assert first.path_ids == second.path_ids and first.format() == second.format()
    assert runs[0].depth == runs[1].depth and runs[0].states == runs[1].states


def test_the_initial_state_is_id_0_whoever_owns_it():
    """A violation in the initial state (planted: an invariant that flags every state) is reported at id 0, with
    an empty path, also when a peer other than the first owns it."""
    s0 = check(M1C1, max_states=1).canon(initial_state(M1C1))
    not_first = [n for n in range(2, 9) if sweep_workers.owner(hash(s0) or 1, n) != 0]
    assert not_first  # else this test would not test what it says
    r = check(M1C1, sweep=True, workers=not_first[0], invariants=lambda s, cfg: ("planted", "every state"))
    assert r.violation is not None and r.violation.state_id == 0 and r.violation.path_ids == [0]


def test_a_limit_stops_the_peers_and_says_so():
    r = check(ModelConfig(messages=2, levels=2, max_retries=1, crashes=1), max_states=5_000, sweep=True, workers=2)
    assert r.stop == STOP_STATES and r.verdict() == "incomplete" and r.states >= 5_000


def test_a_key_that_rises_in_a_peer_sends_the_search_back_to_breadth_first(monkeypatch):
    real = sweep_workers.sweep_key
    monkeypatch.setattr(sweep_workers, "sweep_key", lambda s: (-real(s)[4],))
    r = check(M1C1, sweep=True, workers=2)
    assert r.sweep_layers == 0 and r.workers == 1 and r.holds and r.states == 3294


def test_an_edge_that_does_not_lower_the_rank_in_a_peer_sends_the_search_to_the_edge_store(monkeypatch):
    monkeypatch.setattr(checker_module, "ranks_drop", lambda state, succ: False)
    r = check(ModelConfig(messages=1, levels=2, max_retries=1, crashes=0), sweep=True, workers=2)
    assert r.sweep_layers == 0 and not r.graph.acyclic and r.holds


def test_a_python_error_in_a_peer_is_raised_with_its_traceback(monkeypatch):
    """A bug in a peer is a simulator error, never a verdict."""
    def broken(*_args):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(sweep_workers, "check_terminal", broken)
    with pytest.raises(RuntimeError, match="ZeroDivisionError: planted"):
        check(M1C1, sweep=True, workers=2)


@pytest.mark.parametrize("remove", [True, False])
def test_lower_layer_files_come_back_in_order_in_whole_chunks(tmp_path, monkeypatch, remove):
    """Frames cut short (a checkpoint spills what a writer holds) do not change the chunks an owner takes, nor so the
    order of its ids; a file read to its end is gone unless a checkpoint still lists it."""
    monkeypatch.setattr(sweep_module, "SPILL_CHUNK", 5)
    entries = [((i, (i, i + 1)), i * 7 + 1, i - 1, i % 3, i) for i in range(12)]
    out = LayerFile(str(tmp_path / "k-0-1"))
    for i, entry in enumerate(entries):
        out.append(entry)
        if i in (1, 7):
            out.spill()  # frames of 2, 5, 1 and 4 entries
    out.spill()
    other = LayerFile(str(tmp_path / "k-1-1"))
    other.append(entries[0])
    other.spill()
    incoming = LayerReader([str(tmp_path / "k-0-1"), str(tmp_path / "k-9-1"), str(tmp_path / "k-1-1")], remove)
    back = []
    while (chunk := incoming.read()) is not None:
        back.append(chunk)
    assert [len(chunk) for chunk in back] == [5, 5, 2, 1]
    assert [entry for chunk in back for entry in chunk] == entries + entries[:1]
    assert sorted(os.listdir(tmp_path)) == ([] if remove else ["k-0-1", "k-1-1"])
    assert decode_entries(encode_entries(entries)) == entries


def _cli_json(hash_seed: str, *args: str) -> tuple[int, dict]:
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run([sys.executable, "-m", "scenarios.check_cli", *args, "--json", "--no-progress"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    doc = json.loads(out.stdout)
    for timing in ("seconds", "cpu_seconds", "liveness_seconds", "states_per_second", "peak_rss_mb", "store_mb",
                   "worker_peak_rss_mb", "worker_cpu_seconds"):
        doc["stats"].pop(timing)
    return out.returncode, doc


def test_the_cli_flag_end_to_end_the_same_under_other_hash_seeds():
    """Two fresh processes with different PYTHONHASHSEED: the same document, counterexample included."""
    args = ("--messages", "2", "--crashes", "1", "--mutant", "commit_max_offset", "--sweep", "--workers", "2")
    (code, doc), (code_again, doc_again) = _cli_json("4242", *args), _cli_json("7", *args)
    assert code == code_again == 1
    assert doc == doc_again
    assert doc["stats"]["workers"] == 2 and doc["stats"]["sweep_layers"] > 0
    assert doc["violation"]["property"] == check(ModelConfig(messages=2, crashes=1, levels=2, max_retries=1,
                                                             mutants=frozenset({"commit_max_offset"}))).violation.prop
    assert check_main(["--messages", "1", "--crashes", "1", "--sweep", "--workers", "2", "--no-progress"]) == 0


def test_a_memory_limit_counts_the_peers():
    """The peers' memory counts: a limit above what the parent holds, below the parent and its peers (forked
    from it, each about as big), stops the search."""
    limit = rss_mb() + 20
    r = check(ModelConfig(messages=2, levels=2, max_retries=1, crashes=1), sweep=True, workers=2, memory_mb=limit)
    assert r.stop == STOP_MEMORY and r.verdict() == "incomplete" and r.peak_rss_mb < limit


def test_the_progress_bar_hears_the_states_and_what_waits():
    heard = []
    check(ModelConfig(messages=2, levels=2, max_retries=1, crashes=1), max_states=20_000, sweep=True, workers=2,
          progress=lambda states, depth, waiting: heard.append((states, depth, waiting)))
    assert len(heard) >= 5
    assert [h[0] for h in heard] == sorted(h[0] for h in heard)
    assert all(waiting >= 0 for _s, _d, waiting in heard) and max(w for _s, _d, w in heard) > 0


@given(st.integers(0, 5000), st.integers(2, 8), st.data())
def test_an_action_code_names_the_peer_and_its_action(local_aid, peers, data):
    peer = data.draw(st.integers(0, peers - 1))
    tables = [[("peer", w, i) for i in range(local_aid + 1)] for w in range(peers)]
    code = sweep_workers.action_code(local_aid, peer, peers)
    assert code < 0xFFFF and sweep_workers._peer_action(tables, code) == ("peer", peer, local_aid)


def test_an_action_code_that_does_not_fit_16_bits_is_refused():
    assert sweep_workers.action_code(0xFFFE // 2 - 1, 1, 2) == 0xFFFD
    with pytest.raises(OverflowError, match="16-bit"):
        sweep_workers.action_code(0xFFFE // 2, 1, 2)  # 0xFFFF: the mark of the initial state's missing action
