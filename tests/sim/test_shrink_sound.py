"""Sound reproductions (issue 19, item 1): a shrink step keeps the same failure (same invariant, same message,
a sentence of the same shape); with mutants the shrunk run holds on the clean build; the drain is never cut
below the scenario's longest delay."""

from __future__ import annotations

import pytest

from scenarios.catalogue import load_builtin, resolve_scenario
from scenarios.cli import main
from scenarios.scenario import scenario_from_dict
from sim.checking import check_run
from sim.run import run_scenario
from sim.shrink import drain_floor_ms, sentence_shape, shrink
from tests.model.test_mutants_caught import CASES

FAST = "rebuild-errors-4x"


def _verdict(holds, msg_id="M1", explanation="lost after 3 ms"):
    return {"holds": holds, "checked": 1,
            "violations": [] if holds else [{"msg_id": msg_id, "explanation": explanation, "events": []}]}


def _fake_check(rule):
    """A checker that decides from the scenario and mutants alone (the simulator still runs for real)."""
    def check(history, world):
        return {"no_loss": rule(world.scenario, world.mutants)}
    return check


def test_a_step_that_fails_on_another_message_is_rejected():
    # 400 messages fail on M1; any fewer fail on M2: the same invariant, but not the same failure.
    def rule(s, mutants):
        return _verdict(False, "M1" if s.producers[0].messages == 400 else "M2")

    result = shrink(load_builtin(FAST).doc, 1, max_runs=8, check=_fake_check(rule))
    assert not any("messages" in step for step in result.steps), result.steps
    assert result.violation["msg_id"] == "M1"


def test_a_step_that_fails_another_way_is_rejected():
    def rule(s, mutants):
        sentence = "lost after 17 ms" if s.producers[0].messages >= 100 else "consumed twice at 17 ms"
        return _verdict(False, "M1", sentence)

    result = shrink(load_builtin(FAST).doc, 1, max_runs=10, check=_fake_check(rule))
    assert "producer[0].messages 400 -> 100" in result.steps
    assert scenario_from_dict(result.doc).producers[0].messages >= 100
    assert sentence_shape("lost after 17 ms, offset 3") == sentence_shape("lost after 4 ms, offset 12")


def test_with_mutants_a_step_that_fails_without_them_is_rejected():
    # With the mutant every size fails; without it, fewer than 100 messages fail too (a run cut short).
    def rule(s, mutants):
        return _verdict(not mutants and s.producers[0].messages >= 100)

    result = shrink(load_builtin(FAST).doc, 1, mutants=["drop_on_exception"], max_runs=12, check=_fake_check(rule))
    assert scenario_from_dict(result.doc).producers[0].messages >= 100
    assert result.clean_holds is True and result.note is None


def test_with_mutants_a_scenario_failing_on_the_clean_build_is_handed_out_unshrunk_with_a_note():
    result = shrink(load_builtin(FAST).doc, 1, mutants=["drop_on_exception"], max_runs=12,
                    check=_fake_check(lambda s, mutants: _verdict(False)))
    assert result.doc == result.original_doc and not result.steps
    assert result.clean_holds is False and "clean build too" in result.note


def test_the_drain_is_not_cut_below_the_longest_delay():
    # 3 retries, always failing: the last retry waits level 5 (1 m); the drain is 30 m.
    doc = load_builtin("retry-ladder-to-dlq", {"consumer.max_reconsume_times": 3, "consumer.fail_first": 4,
                                               "drain": "30m"}).doc
    floor = drain_floor_ms(scenario_from_dict(doc))
    assert floor == 60_000 + 60_000
    # It fails whatever the drain, as long as the consumer keeps failing every attempt (the old shrinker went
    # down to a drain of 0 s in such a case, where the message is merely still on its way).
    keeps_failing = _fake_check(lambda s, mutants: _verdict(s.consumers[0].fail_first < 4))
    result = shrink(doc, 1, max_runs=6, check=keeps_failing)
    shrunk = scenario_from_dict(result.doc)
    assert drain_floor_ms(shrunk) == floor and shrunk.drain_ms == floor
    assert "drain 30m -> 2m" in result.steps


def _replays(path_or_doc, seed, mutants, invariant):
    scenario = resolve_scenario(path_or_doc) if isinstance(path_or_doc, str) else scenario_from_dict(path_or_doc)
    broken = run_scenario(scenario, seed, mutants=mutants, check=check_run).summary["invariants"]
    clean = run_scenario(scenario, seed, check=check_run).summary["invariants"]
    return (not broken[invariant]["holds"]), all(v["holds"] for v in clean.values())


@pytest.mark.slow  # a whole shrink (seconds); the step rules above and test_mutants_gate_cli's shrink stay default
def test_run_shrink_of_consumer_crash_with_commit_max_offset_is_sound(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "consumer-crash", "--mutant", "commit_max_offset", "--shrink", "--shrink-runs", "16",
                 "--out", str(out)]) == 1
    assert "without commit_max_offset the shrunk run holds" in capsys.readouterr().out
    fails, clean_holds = _replays(str(out / "shrunk.toml"), 1, ["commit_max_offset"], "no_loss")
    assert fails and clean_holds


@pytest.mark.slow  # about a minute: the ladder's runs have a 5 h drain
def test_gate_shrink_of_the_retry_ladder_with_dlq_threshold_gt_keeps_the_drain(tmp_path, capsys):
    out = tmp_path / "gate"
    assert main(["gate", "--runs", "1", "--scenario", "retry-ladder-to-dlq", "--mutant", "dlq_threshold_gt",
                 "--seed-base", "1", "--shrink-runs", "10", "--out", str(out)]) == 1
    shrunk = out / "retry-ladder-to-dlq-seed1" / "shrunk.toml"
    scenario = resolve_scenario(str(shrunk))
    assert scenario.drain_ms >= drain_floor_ms(scenario) > 0
    failed = capsys.readouterr().out.split("FAIL retry-ladder-to-dlq seed 1: ")[1].split(",")[0].split()[0]
    fails, clean_holds = _replays(str(shrunk), 1, ["dlq_threshold_gt"], failed)
    assert fails and clean_holds


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(CASES))
def test_every_mutants_shrunk_reproduction_fails_with_it_and_holds_without(mutant):
    name, overrides, seed, _invariant = CASES[mutant]
    doc = load_builtin(name, dict(overrides) or None).doc
    result = shrink(doc, seed, mutants=[mutant], max_runs=8, check=check_run)
    assert result.clean_holds is True, result.note
    fails, clean_holds = _replays(result.doc, seed, [mutant], result.invariant)
    assert fails and clean_holds
