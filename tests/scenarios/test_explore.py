"""The swarm generator (scenarios/explore.py) and ``rmqsim mutants --explore``."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenarios.cli import main
from scenarios.explore import FAULTS, GeneratorBug, generate, generate_doc
from scenarios.scenario import scenario_from_dict
from scenarios.toml_out import dumps


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=(1 << 63) - 1))
def test_every_generated_scenario_loads_without_a_warning(seed):
    scenario = generate(seed)  # raises GeneratorBug on a loader error or note
    assert scenario.notes == ()
    assert scenario.drain_ms > 0 and scenario.producers and scenario.consumers


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=1 << 32))
def test_the_generator_is_deterministic_and_its_toml_round_trips(seed):
    doc = generate_doc(seed)
    assert generate_doc(seed) == doc
    import tomllib

    assert scenario_from_dict(tomllib.loads(dumps(doc))) == scenario_from_dict(doc)


def test_seeds_turn_on_different_subsets_of_faults():
    subsets = {frozenset(k for k in generate_doc(seed)["faults"] if k not in ("start", "restart_after"))
               for seed in range(1, 41)}
    assert len(subsets) >= 20
    seen = {k for s in subsets for k in s}
    assert seen >= set(FAULTS) - {"clock_step_back", "clock_step_forward"} and "clock_steps" in seen, seen


def test_a_loader_warning_is_a_generator_bug(monkeypatch):
    import scenarios.explore as explore

    monkeypatch.setattr(explore, "_drain_ms", lambda doc: 0)
    seed = next(s for s in range(1, 100) if "delay_levels" in generate_doc(s)["producer"][0])
    try:
        generate(seed)
    except GeneratorBug as error:
        assert "drain" in str(error)
    else:
        raise AssertionError("a drain of 0 s must be reported as a generator bug")


def test_mutants_explore_json_schema(tmp_path, capsys):
    code = main(["mutants", "--explore", "1", "--mutant", "skip_failed_delivery", "--mutant", "dlq_keeps_delay",
                 "--json", "--out", str(tmp_path)])
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"mutants"} and set(doc["mutants"]) == {"skip_failed_delivery", "dlq_keeps_delay"}
    for entry in doc["mutants"].values():
        assert set(entry) == {"caught", "runs", "invariant", "scenario_file", "trace_events"}
        if entry["caught"]:
            assert entry["runs"] == 1 and entry["invariant"] and entry["scenario_file"].endswith(".toml")
        else:
            assert entry["runs"] is None and entry["invariant"] is None and entry["scenario_file"] is None
    assert code == (0 if all(e["caught"] for e in doc["mutants"].values()) else 1)


def test_mutants_explore_table_and_bad_n(tmp_path, capsys):
    main(["mutants", "--explore", "1", "--mutant", "dlq_keeps_delay", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "| `dlq_keeps_delay` |" in out and "within 1 explored runs each" in out
    assert main(["mutants", "--explore", "0"]) == 2


def test_a_tagged_producer_always_has_a_group_that_takes_its_tag():
    """Explore seed 117: TagB messages and only a TagA subscription left no_loss nothing to check (vacuous)."""
    from scenarios.explore import _takes

    for seed in range(1, 300):
        doc = generate_doc(seed)
        tag = doc["producer"][0].get("tags")
        if tag:
            assert any(_takes(c.get("subscription", "*"), tag) for c in doc["consumer"]), seed


def test_the_combinations_are_only_in_the_explorer_shapes():
    """The fault-window traffic and the slow listener are drawn from a second stream: without them a seed gives
    the shape the gate runs, and the draws of the first stream are the same either way."""
    for seed in range(1, 200):
        full, base = generate_doc(seed), generate_doc(seed, combos=False)
        assert base["duration"] != "15m"
        assert "start" not in base["producer"][0]
        if full["duration"] != "15m":
            assert full["faults"] == base["faults"] and full["topic"] == base["topic"]
    combos = [s for s in range(1, 200) if generate_doc(s) != generate_doc(s, combos=False)]
    assert len(combos) > 20


def test_the_first_group_can_get_through_its_failures():
    """Explore seed 163: fail_first 3 with max_reconsume_times 0 sent every message to the DLQ; nothing was
    consumed and the duplicates verdict was vacuous."""
    for seed in range(1, 300):
        c = generate_doc(seed, combos=False)["consumer"][0]
        if "fail_first" in c and "max_reconsume_times" in c:
            assert c["max_reconsume_times"] >= c["fail_first"], seed


def test_sends_fit_a_small_commit_log_file_and_some_retry_copies_do_not():
    """With 4 KiB commit-log files, 4 000-byte bodies lose every message at its send (PUT_OK, nothing stored): a
    run with nothing to check. The generator gives them 1 024 or 3 900 bytes, whose retry copies do not fit."""
    sizes = set()
    for seed in range(1, 400):
        doc = generate_doc(seed)
        body = doc["producer"][0].get("body_size")
        if doc["broker"].get("commit_log_file_size") == 4096 and body is not None:
            sizes.add(body)
    assert sizes == {1024, 3900}


def test_a_broadcasting_group_never_fails_every_first_attempt():
    """Explore seed 185: BROADCASTING drops a failed message, so fail_first left nothing consumed (vacuous)."""
    for seed in range(1, 300):
        for c in generate_doc(seed)["consumer"]:
            if c.get("model") == "BROADCASTING":
                assert "fail_first" not in c, seed


@pytest.mark.slow  # seconds: a generated timer run; tests/store/timer/test_delivery.py rolls in the default tier
def test_some_explorer_timer_shapes_roll():
    """The probe timer.roll: never hit with the default two-day roll window; the explorer shrinks it at times."""
    from scenarios.explore import generate
    from sim.run import run_scenario

    seed = next(s for s in range(1, 200) if "timer_roll_window_slot" in generate_doc(s)["broker"]
                and "timer_roll_window_slot" not in generate_doc(s, combos=False)["broker"])
    assert seed == 58
    result = run_scenario(generate(seed), seed, shuffle_ties=True)
    assert result.summary["probes"].get("timer.roll", 0) > 0
    assert all(v["holds"] for v in result.summary["invariants"].values())
