"""Every built-in scenario, run with its own seed and checked against every invariant: all hold, none is
vacuous, and its history matches the schema (#12.3, #12.5)."""

from __future__ import annotations

import pathlib

import pytest

from model.history import validate_history
from model.invariants import CHECKS
from scenarios import catalogue
from scenarios.catalogue import builtin_names, load_builtin

from ..shared_runs import builtin_params, builtin_run


def test_the_catalogue_is_all_here():
    """Every TOML file of the built-in folder is in the catalogue (so the parametrised test below sees it)."""
    folder = pathlib.Path(catalogue.__file__).parent / "builtin"
    files = sorted(p.stem for p in folder.glob("*.toml"))
    assert len(files) >= 23
    assert builtin_names() == files


@pytest.mark.parametrize("name", builtin_params(builtin_names()))
def test_builtin_holds_every_invariant_and_none_is_vacuous(name):
    scenario = load_builtin(name)
    assert not scenario.notes, scenario.notes  # a built-in's drain covers every delay it configures
    summary = builtin_run(name).summary  # the same run as test_causes_first's and the catalogue's, made once
    invariants = summary["invariants"]
    assert set(invariants) >= set(CHECKS)
    failing = {k: v["violations"][:2] for k, v in invariants.items() if not v["holds"]}
    assert not failing
    vacuous = {k: v.get("vacuous_reason") for k, v in invariants.items() if v["vacuous"]}
    assert not vacuous
    assert summary["verdict"] == "holds"
    assert summary["invariants"]["no_loss"]["checked"] > 0


def test_builtin_histories_match_the_schema():
    result = builtin_run("retries-with-flaky-consumers")  # the run the test above judges, made once
    assert validate_history(result.history.events) == len(result.history.events)
    kinds = {e["kind"] for e in result.history.events}
    assert {"send", "store", "deliver", "consume", "send_back", "consumer_start", "offset_commit"} <= kinds
