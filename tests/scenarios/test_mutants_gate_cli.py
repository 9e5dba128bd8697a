"""``rmqsim mutants``, ``rmqsim gate`` and ``rmqsim run --shrink``: outputs, exit codes, the JUnit file."""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET

from scenarios.cli import main
from scenarios.gate import commit_seed_base, plan
from scenarios.mutants_runner import PREFERRED, scenario_order
from store.mutants import CATALOGUE, LEFT_OUT

FAST = "rebuild-errors-4x"  # the quickest built-in (0.2 s); drop_on_exception loses messages in it


# --- mutants -------------------------------------------------------------------------------------------------
def test_mutants_list_prints_every_mutant_and_its_bug(capsys):
    assert main(["mutants", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for line, (name, bug) in zip(lines[:len(CATALOGUE)], CATALOGUE.items(), strict=True):
        assert line.split()[0] == name and line.endswith(bug)
    rest = lines[len(CATALOGUE):]
    assert rest[1].startswith("34 counted") and rest[3] == "left out (not counted):"
    for line, (name, why) in zip(rest[4:], LEFT_OUT.items(), strict=True):
        assert line.split()[0] == name and line.endswith(why)


def test_mutants_prints_the_catching_invariant_and_exits_0(capsys):
    assert main(["mutants", "--mutant", "drop_on_exception", "--max-seeds", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| `drop_on_exception`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == CATALOGUE["drop_on_exception"]
    assert cells[2:6] == ["no_loss", FAST, "1", "1"]
    assert "1 of 1 mutants caught" in out


def test_a_mutant_nobody_catches_is_named_and_exits_1(capsys):
    # No consumer crashes in this scenario, so committing the largest offset cannot lose anything.
    assert main(["mutants", "--mutant", "commit_max_offset", "--scenario", FAST, "--max-seeds", "1"]) == 1
    out = capsys.readouterr().out
    assert "**NOT CAUGHT**" in out and "NOT CAUGHT: commit_max_offset" in out


def test_a_fidelity_only_mutant_is_pinned_not_hunted_and_not_counted_as_caught(capsys):
    assert main(["mutants", "--mutant", "physic_ts_every_flush", "--max-seeds", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| `physic_ts_every_flush`"))
    assert "no invariant (fidelity)" in row and "tests/store/test_store_faithful.py" in row
    assert "0 of 0 mutants caught" in out and "FIDELITY ONLY (not counted): physic_ts_every_flush" in out


def test_mutants_bad_input_exits_2(capsys):
    assert main(["mutants", "--mutant", "no_such_bug"]) == 2
    assert "unknown mutant 'no_such_bug'" in capsys.readouterr().err
    assert main(["mutants", "--scenario", "no-such-scenario"]) == 2
    assert main(["mutants", "--max-seeds", "0"]) == 2


def test_mutant_scenario_order_prefers_the_targeted_scenario():
    for mutant, preferred in PREFERRED.items():
        assert mutant in CATALOGUE
        order = scenario_order(mutant)
        assert order[: len(preferred)] == list(preferred) and len(order) == len(set(order))
    # A timer mutant only runs where timer messages are sent.
    assert scenario_order("timer_read_time_early", names=["graceful-restart", FAST]) == []


# --- gate ----------------------------------------------------------------------------------------------------
def test_gate_round_robin_plan():
    names = ["a", "b", "c"]
    assert [plan(i, names, 10) for i in range(5)] == [("a", 10), ("b", 10), ("c", 10), ("a", 11), ("b", 11)]


def test_gate_passes_and_writes_junit(tmp_path, capsys):
    junit = tmp_path / "gate.xml"
    code = main(["gate", "--runs", "3", "--scenario", FAST, "--scenario", "graceful-restart", "--seed-base", "3",
                 "--junit", str(junit), "--out", str(tmp_path / "gate")])
    assert code == 0
    out = capsys.readouterr().out
    assert "gate: 3 runs over 2 built-in scenarios, seeds 3..4 (seed base 3)" in out
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "3"
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    cases = suite.findall("testcase")
    # seed base 3, 3 runs over 2 names: the rotation starts at (3 * 3) % 2 = 1
    assert [c.get("name") for c in cases] == [f"{FAST} seed 3", "graceful-restart seed 3", f"{FAST} seed 4"]
    assert all(c.find("failure") is None for c in cases)


def test_gate_fails_with_a_shrunk_reproduction(tmp_path, capsys):
    junit, out_dir = tmp_path / "gate.xml", tmp_path / "gate"
    code = main(["gate", "--runs", "3", "--scenario", FAST, "--mutant", "drop_on_exception", "--seed-base", "1",
                 "--junit", str(junit), "--out", str(out_dir), "--shrink-runs", "12"])
    assert code == 1
    out = capsys.readouterr().out
    shrunk = out_dir / f"{FAST}-seed1" / "shrunk.toml"
    assert shrunk.is_file() and (out_dir / f"{FAST}-seed1" / "summary.json").is_file()
    assert f"FAIL {FAST} seed 1: no_loss violated" in out
    assert f"replay: rmqsim run {shrunk} --seed 1 --mutant drop_on_exception" in out
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "1", "0")  # stops at the first
    failure = suite.find("testcase").find("failure")
    assert failure.get("message").startswith("no_loss violated by ")
    assert f"replay: rmqsim run {FAST} --seed 1 --mutant drop_on_exception" in failure.text
    assert str(shrunk) in failure.text
    capsys.readouterr()
    assert main(["run", str(shrunk), "--seed", "1", "--mutant", "drop_on_exception", "--out", str(tmp_path / "r")]) == 1


def test_gate_budget_always_runs_once(tmp_path):
    junit = tmp_path / "g.xml"
    assert main(["gate", "--budget", "0.01", "--scenario", FAST, "--seed-base", "2", "--junit", str(junit)]) == 0
    assert ET.parse(junit).getroot().get("tests") == "1"


def test_gate_bad_input_exits_2(capsys):
    assert main(["gate", "--runs", "0"]) == 2
    assert main(["gate", "--runs", "2", "--budget", "5"]) == 2
    assert main(["gate", "--scenario", "nope"]) == 2
    assert main(["gate", "--mutant", "nope", "--runs", "1"]) == 2


def test_seed_base_comes_from_the_git_commit(tmp_path):
    assert commit_seed_base(str(tmp_path)) == 1  # not a git checkout
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=False)
    if head.returncode == 0:
        assert commit_seed_base(repo) == int(head.stdout.strip()[:8], 16)


# --- run --shrink --------------------------------------------------------------------------------------------
def test_run_shrink_writes_a_smaller_scenario_and_prints_trace_and_replay(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", FAST, "--mutant", "drop_on_exception", "--shrink", "--shrink-runs", "10",
                 "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert (out / "shrunk.toml").is_file()
    assert "shrinking on no_loss" in text and "trace of " in text
    assert f"replay: rmqsim run {out / 'shrunk.toml'} --seed 1 --mutant drop_on_exception" in text


def test_run_without_shrink_writes_no_shrunk_file(tmp_path):
    out = tmp_path / "run"
    assert main(["run", FAST, "--mutant", "drop_on_exception", "--out", str(out)]) == 1
    assert not (out / "shrunk.toml").exists()
