"""Tie-shuffling: same seed and options give the same history; shuffling changes some histories."""

from __future__ import annotations

import pytest

from scenarios.catalogue import load_builtin
from sim.run import run_scenario

from ..shared_runs import builtin_run


def _sha(name: str, seed: int, shuffle: bool) -> str:
    return run_scenario(load_builtin(name), seed, shuffle_ties=shuffle).summary["history_sha256"]


def test_shuffled_runs_are_deterministic_and_recorded():
    result = run_scenario(load_builtin("timer-wheel-basic"), 2, shuffle_ties=True)
    assert result.summary["shuffle_ties"] is True and result.summary["repro"].endswith("--shuffle-ties")
    assert _sha("timer-wheel-basic", 2, True) == result.summary["history_sha256"]


def _shared_sha(name: str, seed: int, shuffle: bool) -> str:
    return builtin_run(name, seed, shuffle_ties=shuffle).summary["history_sha256"]


def test_shuffling_changes_some_history_and_the_default_is_fixed():
    assert builtin_run("timer-wheel-basic", 1).summary["shuffle_ties"] is False
    assert any(_shared_sha(name, 1, False) != _shared_sha(name, 1, True)
               for name in ("timer-wheel-basic", "timer-restart-during-put-retry"))


# the longest of the three (seconds) in the slow tier; the other two keep a shuffled built-in in the default tier
@pytest.mark.parametrize("name", [pytest.param("timer-restart-during-put-retry", marks=pytest.mark.slow),
                                  "graceful-restart", "crash-before-delay-offset-flush"])
def test_shuffled_builtins_hold_on_the_clean_build(name):
    summary = builtin_run(name, 1, shuffle_ties=True).summary  # shared with the test above where it is the same run
    assert summary["verdict"] == "holds", (name, summary["verdict"])


def test_replay_reproduces_a_shuffled_run(tmp_path):
    import json

    from scenarios.cli import main

    out = str(tmp_path / "run")
    assert main(["run", "timer-wheel-basic", "--seed", "1", "--shuffle-ties", "--out", out]) == 0
    with open(f"{out}/summary.json", encoding="utf-8") as f:
        assert json.load(f)["shuffle_ties"] is True
    assert main(["replay", out]) == 0


@pytest.mark.slow  # four runs of a generated scenario (seconds); the shuffled built-ins and replay stay default
def test_shuffling_finds_a_mutant_the_fixed_order_misses_on_the_same_scenario():
    """timer_read_time_early moves a slot's read time before its puts finish; only a crash (or a checkpoint
    flush) that falls between the move and the puts shows it. Over generated scenarios 1..100, shuffling first
    catches it on seed 7, the fixed order only on seed 41 (measured, issue 17); seed 7 pins the difference."""
    from scenarios.explore import generate

    scenario = generate(7)
    for shuffle, should_fail in ((True, True), (False, False)):
        clean = run_scenario(scenario, 7, shuffle_ties=shuffle).summary["invariants"]
        assert all(v["holds"] for v in clean.values())
        mutated = run_scenario(scenario, 7, mutants=["timer_read_time_early"], shuffle_ties=shuffle)
        failed = [k for k, v in mutated.summary["invariants"].items() if not v["holds"]]
        assert bool(failed) == should_fail, (shuffle, failed)
