"""Steering exploration toward rare probes (scenarios/steer.py) and the generator's switch weights."""

from __future__ import annotations

import pytest

from scenarios.cli import main
from scenarios.explore import FAULTS, FEATURES, generate_doc, switches
from scenarios.steer import RARE_RUNS, WARMUP_RUNS, Steering, explore_coverage


def test_default_weights_give_the_scenarios_triaged_without_weights():
    for seed in range(1, 30):
        assert generate_doc(seed, weights={}) == generate_doc(seed)
        neutral = {name: (0.4 if name in FEATURES else 0.3) for name in (*FEATURES, *FAULTS)}
        assert generate_doc(seed, weights=neutral) == generate_doc(seed)


def test_a_weight_turns_a_switch_on_or_off_in_every_scenario():
    always = {"timer": 1.0}
    never = {"power_failures": 0.0, "store_rollbacks": 0.0}
    for seed in range(1, 30):
        if "schedule_rebuild_failure_rate" in switches(seed, always):
            assert "timer" not in switches(seed, always)  # a 4.9.8 fault: no timer wheel there
            continue
        assert "timer" in switches(seed, always)
        assert "timer_delay" in generate_doc(seed, weights=always)["producer"][0]
        assert not switches(seed, never) & {"power_failures", "store_rollbacks"}


def test_no_steering_before_the_warm_up_or_without_rare_probes():
    s = Steering()
    for _ in range(WARMUP_RUNS - 1):
        s.record(frozenset({"timer"}), {"rare.probe": 1})
    assert s.weights() == {}
    s = Steering()
    for _ in range(WARMUP_RUNS):
        s.record(frozenset({"timer"}), {"common": 1})
    assert s.weights() == {}


def test_switches_of_the_runs_that_hit_a_rare_probe_gain_weight():
    s = Steering()
    for i in range(20):
        on = frozenset({"power_failures", "timer"} if i < RARE_RUNS else {"timer", "graceful_restarts"})
        probes = {"common": 3, **({"config.bak_used": 1} if i < RARE_RUNS else {})}
        s.record(on, probes)
    assert s.rare_probes() == {"config.bak_used"}
    w = s.weights()
    assert w["power_failures"] > 0.3  # on in every rare run, in 10% of all runs
    assert w["timer"] == pytest.approx(0.4)  # on everywhere: no lift
    assert w["graceful_restarts"] < 0.3  # on in most runs, never where the rare probe was hit
    assert w["store_rollbacks"] == pytest.approx(0.3)  # never on: nothing learnt


@pytest.mark.slow  # two explorations of generated runs (tens of seconds); the weight rules above stay default
def test_steered_exploration_is_deterministic_and_steers():
    first, rows = explore_coverage(WARMUP_RUNS + 4, seed_base=1, steer=True, combos=False)
    again, rows_again = explore_coverage(WARMUP_RUNS + 4, seed_base=1, steer=True, combos=False)
    assert first == again and rows == rows_again
    assert not any(r["weights"] for r in rows[:WARMUP_RUNS])
    assert any(r["weights"] for r in rows[WARMUP_RUNS:])


def test_explore_only_flags_need_explore(capsys):
    for flag in ("--fixed-ties", "--no-steer", "--json"):
        assert main(["mutants", flag]) == 2
        assert "goes with --explore" in capsys.readouterr().err
