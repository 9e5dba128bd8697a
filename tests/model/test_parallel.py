"""``check(..., workers=N)`` (model/parallel.py) finds exactly what the serial search recorded: states, edges,
depth, generated successors, terminal states, verdict, stop reason, the counterexample's ids and its printed text
(tests/model/search_golden.json), whatever N and PYTHONHASHSEED; what it cannot run is refused clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from model.checker import check
from model.spec import ModelConfig
from scenarios.check_cli import check_main

from .test_search_golden import RECORDED, record

# Clean searches, both eras, symmetry used and not, POR, retire without compact, reductions off, a state limit,
# and mutants whose violation and counterexample must come out the same (one after 166 states of m1/c1).
CASES = ["m1c0", "m1c0-era4", "m1c1-clean", "m1c1-era4", "m1c1-por", "m1c1-retire", "m2c0", "m2c0-11",
         "m2c0-11-nosym", "m2c0-noticks", "small1-off", "small4-off", "m2c1-cap", "mutant-dlq_keeps_delay",
         "mutant-offset_from_task_start-off", "m1c1-dlq_keeps_delay", "m1c1-no_persist_at_shutdown",
         "m2c1-11-offset_from_task_start", "m2c1-11-drop_on_exception"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_cases_cover_violations_completions_and_a_limit():
    found = [RECORDED[name]["found"] for name in CASES]
    assert {f["verdict"] for f in found} == {"ok", "violation", "incomplete"}
    assert all(f["acyclic"] for f in found)  # workers run only acyclic searches


@pytest.mark.parametrize("name", CASES)
def test_two_workers_find_what_the_serial_search_recorded(name):
    case = RECORDED[name]
    got = record(case["bounds"], {**case["options"], "workers": 2})
    want = case["found"]
    if got["violation"] is not None and want["violation"] is not None:
        assert got["violation"]["text"] == want["violation"]["text"]
    assert got == want


@pytest.mark.parametrize("name", ["m1c1-clean", "m1c1-dlq_keeps_delay"])
def test_three_workers_too(name):
    case = RECORDED[name]
    assert record(case["bounds"], {**case["options"], "workers": 3}) == case["found"]


def test_the_result_says_how_many_workers_ran():
    r = check(ModelConfig(messages=1, crashes=0), workers=2)
    assert r.workers == 2 and r.stats()["workers"] == 2 and r.worker_peak_rss_mb > 0
    assert check(ModelConfig(messages=1, crashes=0)).stats()["workers"] == 1


def test_the_cli_flag_end_to_end_under_another_hash_seed():
    """``rmqsim check ... --workers 2 --json`` in a fresh process with PYTHONHASHSEED set: the recorded search."""
    case = RECORDED["m1c1-dlq_keeps_delay"]
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-m", "scenarios.check_cli", "--messages", "1", "--crashes", "1",
                          "--mutant", "dlq_keeps_delay", "--workers", "2", "--json", "--no-progress"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    want = case["found"]
    assert doc["stats"]["workers"] == 2
    assert (doc["stats"]["states"], doc["stats"]["edges"], doc["stats"]["depth"], doc["stats"]["generated"]) == (
        want["states"], want["edges"], want["depth"], want["generated"])
    assert doc["violation"]["property"] == want["violation"]["prop"]
    assert len(doc["violation"]["trace"]) == len(want["violation"]["path"]) - 1


@pytest.mark.parametrize("options", [{"store_edges": True}, {"keep_states": True}, {"explore_after_violation": 300}])
def test_searches_that_keep_edges_or_states_are_refused(options):
    with pytest.raises(ValueError, match="workers"):
        check(ModelConfig(messages=1, crashes=0), workers=2, **options)


def test_unbounded_put_failures_are_refused():
    with pytest.raises(ValueError, match="unbounded put failures"):
        check(ModelConfig(messages=1, crashes=0, put_failures=None), workers=2)


@pytest.mark.parametrize("extra, says", [(["--graph", "g.graphml"], "not with --graph"),
                                         (["--put-failures", "inf"], "not with --put-failures inf"),
                                         (["--workers", "0"], "--workers must be positive")])
def test_the_cli_refuses_what_workers_cannot_run(tmp_path, capsys, extra, says):
    extra = [str(tmp_path / e) if e.endswith(".graphml") else e for e in extra]
    code = check_main(["--messages", "1", "--crashes", "0", "--no-progress", "--workers", "2", *extra])
    assert code == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("limit, stop", [({"memory_mb": 1}, "memory limit"), ({"max_seconds": 0}, "time limit")])
def test_the_memory_and_time_limits_stop_where_the_serial_search_stops(limit, stop):
    """Both limits are looked at every 2 048 new states, in the same walk: a limit already passed at the first look
    stops both searches at the same state."""
    cfg = ModelConfig(messages=2, crashes=1)
    serial, parallel = check(cfg, **limit), check(cfg, workers=2, **limit)
    assert parallel.stop == serial.stop == stop
    assert (parallel.states, parallel.edges, parallel.graph.generated) == (
        serial.states, serial.edges, serial.graph.generated)
    assert parallel.states < 10_000


def test_a_limit_early_in_a_big_level_stops_the_workers_in_the_middle_of_it(monkeypatch):
    """m2/c1 stopped at 49 000 states: the parent walks level 17 (15 986 states; 48 431 states up to it) when it
    passes the limit, sets the halt, and each worker stops after the part it is expanding. So the workers expanded
    every state of the levels before and fewer than all of level 17, which they would finish if they ignored the
    halt. Small parts make the stop fine-grained (the forked workers inherit the patched constant)."""
    import model.parallel as parallel

    monkeypatch.setattr(parallel, "PART", 64)
    r = check(ModelConfig(messages=2, crashes=1), workers=2, max_states=49_000)
    assert r.stop == "state limit" and r.verdict() == "incomplete" and r.states < 60_000
    level = r.depth - 1  # the level the parent was walking: the states it found are one deeper
    before = sum(1 for d in r.graph.depth if d < level)
    whole = sum(1 for d in r.graph.depth if d <= level)
    assert whole - before > 15_000  # a big level: the halt has most of it to spare
    assert before <= r.worker_expanded < whole


def test_a_complete_search_has_its_workers_expand_every_state_once():
    """What the counter above counts: on a search that ends, each state is expanded once, by one worker."""
    r = check(ModelConfig(messages=2, crashes=0), workers=2)
    assert r.complete and r.worker_expanded == r.states


def test_the_progress_bar_hears_what_it_hears_from_the_serial_search():
    cfg = ModelConfig(messages=2, crashes=1)
    heard: dict[int, list] = {1: [], 2: []}
    for workers, calls in heard.items():
        check(cfg, workers=workers, max_states=12_000, progress=lambda *a, calls=calls: calls.append(a))
    assert len(heard[1]) >= 5 and heard[2] == heard[1]


@pytest.mark.parametrize("loose", [0, 40])
@pytest.mark.parametrize("name", ["m1c1-clean", "m1c1-dlq_keeps_delay", "m2c0"])
def test_packed_workers_find_what_the_serial_search_recorded(monkeypatch, name, loose):
    """Small parts, blobs and loose budget: every level spans many parts, packed (or some loose, then packed), and
    the blobs handed on are cut between routes: the forked workers inherit the patched constants. The workers'
    representative forgets its memos all the time; the parent's fingerprint table starts small, so that it grows many
    times during the walk."""
    import model.parallel as parallel
    import model.retire as retire
    from model.statestore import FingerprintSet

    monkeypatch.setattr(parallel, "FingerprintSet", lambda: FingerprintSet(capacity=16))
    monkeypatch.setattr(parallel, "PART", 16)
    monkeypatch.setattr(parallel, "BLOB", 7)
    monkeypatch.setattr(parallel, "LOOSE", loose)
    monkeypatch.setattr(retire, "MEMO_BOUND", 2)  # retire's memos emptied every few entries, in every worker
    case = RECORDED[name]
    for workers in (2, 3):
        assert record(case["bounds"], {**case["options"], "workers": workers}) == case["found"]


def test_the_met_table_holds_what_was_added_through_its_growth():
    """A fingerprint the table forgets is judged twice (slower, same result); one it invents stops the search
    (the parent refuses a new state its worker did not judge): both are looked at here."""
    from model.parallel import _Met

    met = _Met(capacity=8)
    added = [(k * 0x9E3779B97F4A7C15 % 2**64 - 2**63) or 1 for k in range(1, 3000)]
    for fp in added:
        assert fp not in met
        met.add(fp)
    assert len(met) == len(added) and all(fp in met for fp in added)
    assert not any(fp + 1 in met for fp in added if fp + 1 not in set(added))
    assert len(met.table) == 8192  # at most half full: 2999 fingerprints in 2**13 slots
