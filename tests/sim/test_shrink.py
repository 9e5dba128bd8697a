"""Shrinking: a strictly smaller scenario that still fails the same invariant, written as a scenario file
that replays the failure with ``rmqsim run``; deterministic for the same inputs."""

from __future__ import annotations

import tomllib

import pytest

from scenarios.catalogue import load_builtin, resolve_scenario
from scenarios.scenario import scenario_from_dict
from sim.checking import check_run
from sim.run import run_scenario
from sim.shrink import format_report, is_smaller, scenario_size, shrink, write_shrunk

MUTANT = "drop_on_exception"
NAME = "rebuild-errors-4x"  # 400 messages through levels 1-2 with rebuild failures, era 4.9.8


@pytest.fixture(scope="module")
def shrunk():
    return shrink(load_builtin(NAME).doc, 1, mutants=[MUTANT], max_runs=32)  # clean-build checks spend runs too


def test_shrinking_finds_a_strictly_smaller_scenario_that_still_fails(shrunk):
    assert shrunk.invariant == "no_loss"
    before, after = scenario_size(shrunk.original_doc), scenario_size(shrunk.doc)
    assert is_smaller(after, before) and shrunk.smaller
    assert after["messages"] < before["messages"] and after["duration_ms"] < before["duration_ms"]
    assert shrunk.runs <= 32 and shrunk.steps
    assert not shrunk.result.summary["invariants"]["no_loss"]["holds"]
    trace = shrunk.trace()
    assert trace and all(e["msg_id"] == shrunk.violation["msg_id"] for e in trace)


def test_the_shrunk_file_replays_the_failure_and_the_clean_build_passes_it(shrunk, tmp_path):
    path = write_shrunk(shrunk, str(tmp_path / "shrunk.toml"))
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    assert doc["name"] == f"{NAME}-shrunk" and doc["seed"] == 1
    scenario = resolve_scenario(path)
    again = run_scenario(scenario, 1, mutants=[MUTANT], check=check_run).summary["invariants"]
    assert not again["no_loss"]["holds"]
    # What is left is the bug, not a run cut short: without the mutant the same small run loses nothing.
    clean = run_scenario(scenario, 1, check=check_run).summary["invariants"]
    assert clean["no_loss"]["holds"]
    report = "\n".join(format_report(shrunk))
    assert f"replay: rmqsim run {path} --seed 1 --mutant {MUTANT}" in report
    assert f"trace of {shrunk.violation['msg_id']}" in report


def test_shrinking_is_deterministic():
    doc = load_builtin(NAME).doc
    a = shrink(doc, 1, mutants=[MUTANT], max_runs=6)
    b = shrink(doc, 1, mutants=[MUTANT], max_runs=6)
    assert a.doc == b.doc and a.steps == b.steps and a.runs == b.runs <= 6


def test_a_run_that_holds_cannot_be_shrunk():
    with pytest.raises(ValueError, match="nothing to shrink"):
        shrink(load_builtin(NAME).doc, 1, max_runs=3)


def test_every_reduction_keeps_a_valid_scenario(shrunk):
    scenario_from_dict(shrunk.doc, "shrunk")  # validates
