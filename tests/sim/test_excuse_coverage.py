"""benchmarks/excuse_coverage.py finds what a run leans on: taken out, an invariant fails; and it leaves the
invariants as it found them."""

from __future__ import annotations

from pathlib import Path

from benchmarks.excuse_coverage import excuses, leans_of_run
from scenarios.scenario import load_scenario_file
from sim.run import run_scenario

REPRO = Path(__file__).resolve().parent.parent / "data" / "repro"


def _leans(name: str, seed: int) -> dict[str, list[str]]:
    result = run_scenario(load_scenario_file(str(REPRO / f"{name}.toml")), seed, shuffle_ties=True)
    assert all(v["holds"] for v in result.summary["invariants"].values())
    before = {key: vars(owner)[attr] for key, (owner, attr, _) in excuses().items()}
    leans = leans_of_run(result)
    assert {key: vars(owner)[attr] for key, (owner, attr, _) in excuses().items()} == before
    return leans


def test_a_predicate_excuse_and_the_eras_rules_a_run_leans_on():
    """4.9.8 client-local retries re-read copies with reconsumeTimes raised in memory (tests/sim/test_explore_triage)."""
    leans = _leans("explore-1060000086", 1060000086)
    assert leans["_local_repeat"] == ["dlq_after_max_retries"]
    assert leans["era 4.9.8 (as 5.3.3)"] == ["dlq_after_max_retries"]  # 5.x's fallback rule would not excuse it
    assert "_unmarked_file_start_polls" not in leans


def test_a_rule_a_triage_put_in_is_taken_out_as_it_was_before():
    """A zeroed consume-queue file costs its level an empty poll (seed 1070000135, combos)."""
    leans = _leans("explore-1070000135-combos", 1070000135)
    assert leans["_unmarked_file_start_polls"] == ["bounded_lateness"]
    assert leans["_unmarked_file_starts"] == ["bounded_lateness"]
    assert "_local_repeat" not in leans
