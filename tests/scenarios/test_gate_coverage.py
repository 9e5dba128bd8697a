"""The gate covers the catalogue: its round-robin starts where the previous seed base stopped, it says what
it covered, and it prints the FAIL line before the shrink starts (issue 19, item 3)."""

from __future__ import annotations

from scenarios.catalogue import builtin_names
from scenarios.cli import main
from scenarios.gate import commit_seed_base, plan, planned, rotation_start, run_gate

FAST = "rebuild-errors-4x"


def _covered(runs: int, seed_base: int) -> set[str]:
    return {name for name, _seed in planned(runs, builtin_names(), seed_base)}


def test_two_consecutive_seed_bases_of_20_runs_cover_every_builtin():
    names = set(builtin_names())
    assert len(names) > 20  # otherwise one gate covers them all and this test shows nothing
    bases = [commit_seed_base(), 1, 0xFFFFFFFF - 1, *range(2, 2000, 37)]
    for base in bases:
        assert _covered(20, base) | _covered(20, base + 1) == names, base


def test_a_short_gate_does_not_always_run_the_first_names():
    names = builtin_names()
    firsts = {planned(5, names, base)[0][0] for base in range(1, 200)}
    assert len(firsts) > 1
    assert {n for base in range(1, 200) for n, _ in planned(5, names, base)} == set(names)
    # and each scenario keeps its seed sequence: a full round still runs every name once per seed
    one_round = planned(len(names), names, 12345)
    assert sorted(n for n, _ in one_round) == sorted(names) and {s for _, s in one_round} == {12345}


def test_the_plan_is_what_the_gate_runs(tmp_path):
    names = [FAST, "graceful-restart"]
    gate = run_gate(runs=3, seed_base=3, names=names, out_dir=str(tmp_path))
    assert [(r.scenario, r.seed) for r in gate.runs] == planned(3, names, 3)
    assert gate.start == rotation_start(3, 3, 2) == 1
    assert plan(0, sorted(names), 3, gate.start) == (FAST, 3)
    assert gate.covered == sorted(names)


def test_the_gate_prints_what_it_covered(tmp_path, capsys):
    assert main(["gate", "--runs", "1", "--scenario", FAST, "--scenario", "graceful-restart", "--seed-base", "2",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    covered = next(line for line in out.splitlines() if line.strip().startswith("covered:"))
    ran = planned(1, [FAST, "graceful-restart"], 2)[0][0]
    missed = ({FAST, "graceful-restart"} - {ran}).pop()
    assert ran in covered and f"not this time: {missed}" in covered


def test_the_fail_line_comes_before_the_shrink(tmp_path, capsys):
    seen = []

    def on_failure(gate):
        seen.append((gate.failing.scenario, gate.shrink, gate.run_dir))
        print("FAIL-CALLBACK")

    gate = run_gate(runs=1, seed_base=1, names=[FAST], mutants=["drop_on_exception"], out_dir=str(tmp_path),
                    shrink_runs=3, on_failure=on_failure)
    assert seen == [(FAST, None, None)]  # nothing shrunk or written yet when the failure is announced
    assert gate.shrink is not None and gate.run_dir
    capsys.readouterr()
    assert main(["gate", "--runs", "1", "--scenario", FAST, "--mutant", "drop_on_exception", "--seed-base", "1",
                 "--out", str(tmp_path / "cli"), "--shrink-runs", "3"]) == 1
    out = capsys.readouterr().out
    assert out.index(f"FAIL {FAST} seed 1") < out.index("shrinking the failing run") < out.index("shrunk in ")
