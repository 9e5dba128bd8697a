"""The CI correctness gate (``rmqsim gate``): the built-in scenarios over seeds derived from the commit.

Run ``i`` is built-in ``names[(start + i) % len(names)]`` with seed ``seed_base + i // len(names)``, where
``start = (seed_base * runs) % len(names)``: a gate of one round covers every scenario, and a gate of fewer
runs than built-ins starts where the gate of seed base ``seed_base - 1`` stopped, so two consecutive seed
bases cover the catalogue whenever ``2 * runs >= len(names)`` (and commits, whose seed bases are hashes,
start at a spread of places instead of always at the first names). Each commit explores new seeds, and
any commit replays exactly. The first violation stops the gate: that run is written out, shrunk to a
smaller scenario file (which, with mutants, holds on the clean build), and the exit code is 1.
``junit_xml`` renders the runs for CI (one testcase per run).
"""

from __future__ import annotations

import os
import subprocess
import time
import traceback
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from .catalogue import builtin_names, load_builtin

FALLBACK_SEED_BASE = 1


def commit_seed_base(cwd: str | None = None) -> int:
    """``int`` of the first 8 hex digits of ``git rev-parse HEAD`` (1 outside a git checkout)."""
    if cwd is None:
        cwd = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return FALLBACK_SEED_BASE
    sha = out.stdout.strip()
    if out.returncode != 0 or len(sha) < 8:
        return FALLBACK_SEED_BASE
    try:
        return int(sha[:8], 16)
    except ValueError:
        return FALLBACK_SEED_BASE


@dataclass
class GateRun:
    scenario: str
    seed: int
    wall_s: float
    failed: list[str] = field(default_factory=list)  # violated invariants
    violation: dict | None = None  # the first violation: {"invariant", "msg_id", "explanation"}
    repro: str = ""
    error: str | None = None  # the simulator raised (a bug too)
    vacuous: list[str] = field(default_factory=list)  # invariants that checked nothing they should have

    @property
    def ok(self) -> bool:
        return not self.failed and not self.vacuous and self.error is None


@dataclass
class GateResult:
    seed_base: int
    runs: list[GateRun]
    wall_s: float
    scenarios: list[str]
    stopped_by: str  # "runs", "budget" or "violation"
    start: int = 0  # index into ``scenarios`` of the first run (the rotation)
    run_dir: str | None = None  # the failing run's output
    shrink: object | None = None  # sim.shrink.ShrinkResult of the failing run
    shrink_error: str | None = None
    probes: dict[str, int] = field(default_factory=dict)  # coverage probes hit over all runs: name -> hits

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs)

    @property
    def failing(self) -> GateRun | None:
        return next((r for r in self.runs if not r.ok), None)


    @property
    def covered(self) -> list[str]:
        """The scenarios the gate ran, in name order."""
        return sorted({r.scenario for r in self.runs})


def rotation_start(seed_base: int, runs: int, count: int) -> int:
    """Where the round-robin starts: right after where the gate of ``seed_base - 1`` (with as many runs)
    stopped, so consecutive seed bases walk the whole catalogue instead of repeating its first names."""
    return (seed_base * runs) % count


def plan(index: int, names: list[str], seed_base: int, start: int = 0) -> tuple[str, int]:
    return names[(start + index) % len(names)], seed_base + index // len(names)


def planned(runs: int, names: list[str], seed_base: int) -> list[tuple[str, int]]:
    """The (scenario, seed) pairs a gate of ``runs`` runs over ``names`` makes (without a violation)."""
    names = sorted(names)
    start = rotation_start(seed_base, runs, len(names))
    return [plan(i, names, seed_base, start) for i in range(runs)]


def run_gate(*, runs: int | None = None, budget_s: float | None = None, seed_base: int | None = None,
             out_dir: str = os.path.join("out", "gate"), shrink_runs: int = 40, names: list[str] | None = None,
             mutants=(), progress: bool = False, check=None, on_failure=None, explore: int = 0) -> GateResult:
    """Run until ``runs`` runs, or until ``budget_s`` wall seconds have passed (no new run starts after
    it; the first always does), or the first violation. Neither given: one round over the built-ins (or
    over ``names``). ``mutants`` puts historical bugs back, to see what the gate does with a broken build.
    ``on_failure(gate)`` is called when a run failed, before the (slow) write-out and shrink start.
    ``explore``: after the catalogue, that many generated swarm scenarios (scenarios/explore.py, seeds
    ``seed_base ..``, ties shuffled), so every commit also runs scenarios nobody wrote."""
    from sim.run import repro_command, run_scenario, write_run

    if check is None:
        from sim.checking import check_run as check
    from store.mutants import validate

    mutants = tuple(sorted(validate(mutants)))
    names = sorted(names or builtin_names())
    seed_base = commit_seed_base() if seed_base is None else seed_base
    if runs is None and budget_s is None:
        runs = len(names)
    # With a budget the number of runs is not known: start at a place of its own per seed base.
    start_index = rotation_start(seed_base, runs, len(names)) if runs is not None else seed_base % len(names)
    probe_hits: dict[str, int] = {}
    bar = None
    if progress:
        from .progress import progress as progress_reporter

        bar = progress_reporter("gate", None if runs is None else runs + explore, "run")
    start = time.perf_counter()  # wall-clock ok: the budget bounds the gate, never a history
    done: list[GateRun] = []
    stopped_by = "runs"
    result = None
    failing_result = None
    try:
        i = 0
        explored = -1  # -1: still in the catalogue; then the generated scenarios run so far
        while True:
            if explored < 0:
                if runs is not None and i >= runs:
                    stopped_by = "runs"
                elif budget_s is not None and i > 0 and time.perf_counter() - start >= budget_s:  # wall-clock ok
                    stopped_by = "budget"
                else:
                    stopped_by = None
                if stopped_by is not None:
                    if not explore:
                        break
                    explored = 0
            if explored >= explore:
                break
            if explored >= 0:
                from .explore import generate
                from .toml_out import dumps

                seed = seed_base + explored
                scenario = generate(seed, combos=False)  # the triaged shapes (scenarios/explore.py)
                name = os.path.join(out_dir, f"explore-{seed}.toml")  # written when the run fails
                explored += 1
            else:
                name, seed = plan(i, names, seed_base, start_index)
                scenario = load_builtin(name)
            if bar is not None:
                bar.update(i, note=f"{name} seed {seed}")
            t0 = time.perf_counter()  # wall-clock ok
            try:
                result = run_scenario(scenario, seed, mutants=mutants, check=check, scenario_arg=name,
                                      shuffle_ties=explored >= 0)
            except Exception as error:  # a crash of the simulator fails the gate, reported
                done.append(GateRun(name, seed, time.perf_counter() - t0,  # wall-clock ok
                                    repro=repro_command(name, seed, None, mutants, "memory"),
                                    error=f"{type(error).__name__}: {error}\n{traceback.format_exc()}"))
                stopped_by = "violation"
                break
            summary = result.summary
            add_probes(probe_hits, summary)
            sim_error = summary.get("simulator_error")
            if sim_error is not None:  # a bug in the simulated store: the gate fails, with the traceback
                done.append(GateRun(name, seed, summary["wall_s"], repro=summary["repro"],
                                    error=f"{sim_error['type']}: {sim_error['message']}\n{sim_error['traceback']}"))
                stopped_by = "violation"
                failing_result = result
                break
            failed = [k for k, v in summary["invariants"].items() if not v["holds"]]
            violation = None
            if failed:
                first = summary["invariants"][failed[0]]["violations"][0]
                violation = {"invariant": failed[0], "msg_id": first["msg_id"], "explanation": first["explanation"]}
            vacuous = [k for k, v in summary["invariants"].items() if v.get("vacuous")]
            if not failed and vacuous:
                violation = {"invariant": vacuous[0], "msg_id": None,
                             "explanation": "vacuous: " + summary["invariants"][vacuous[0]].get("vacuous_reason", "")}
            done.append(GateRun(name, seed, summary["wall_s"], failed, violation, summary["repro"], vacuous=vacuous))
            if bar is not None:
                bar.update(i + 1, note=f"{name} seed {seed}")
            i += 1
            if failed or vacuous:
                stopped_by = "violation"
                failing_result = result
                if explored >= 0:
                    os.makedirs(out_dir, exist_ok=True)
                    with open(name, "w", encoding="utf-8") as f:
                        f.write(dumps(scenario.doc))
                break
    finally:
        if bar is not None:
            bar.close()
    gate = GateResult(seed_base, done, 0.0, names, stopped_by, start=start_index, probes=probe_hits)
    failing = gate.failing
    if failing is not None and on_failure is not None:
        gate.wall_s = time.perf_counter() - start  # wall-clock ok
        on_failure(gate)
    if failing is not None and failing_result is not None:
        gate.run_dir = os.path.join(out_dir, f"{failing.scenario}-seed{failing.seed}")
        write_run(gate.run_dir, failing_result.history, failing_result.summary, failing_result.world)
    if failing is not None and failing_result is not None and failing.failed and failing.error is None:
        # a vacuous run has nothing to shrink, nor has a simulator error
        try:
            from sim.shrink import shrink, write_shrunk

            from .progress import shrink_progress

            shrunk = shrink(failing_result.scenario.doc, failing.seed, failing.failed[0], mutants=mutants,
                            max_runs=shrink_runs, first=failing_result, check=check,
                            shuffle_ties=failing_result.summary.get("shuffle_ties", False),
                            progress=shrink_progress() if progress else None)
            write_shrunk(shrunk, os.path.join(gate.run_dir, "shrunk.toml"))
            gate.shrink = shrunk
        except Exception as error:  # the violation stands even if shrinking breaks
            gate.shrink_error = f"{type(error).__name__}: {error}"
    gate.wall_s = time.perf_counter() - start  # wall-clock ok
    return gate


def add_probes(total: dict[str, int], summary: dict) -> None:
    """Add one run's coverage probes (summary.json "probes") into ``total``."""
    for name, hits in summary.get("probes", {}).items():
        total[name] = total.get(name, 0) + hits


def format_probes(hits: dict[str, int]) -> list[str]:
    """The share of the probe catalogue hit, then the probes never hit (store/probes.py)."""
    from store.probes import CATALOGUE, never_hit

    missed = never_hit(hits)
    hit = len(CATALOGUE) - len(missed)
    lines = [f"  probes: {hit} of {len(CATALOGUE)} hit ({100 * hit // len(CATALOGUE)}%)"]
    if missed:
        lines.append(f"  never hit: {', '.join(missed)}")
    return lines


def junit_xml(gate: GateResult) -> str:
    """JUnit XML: one ``testsuite`` "rmqsim-gate", one ``testcase`` per run; a violation is a ``failure``
    (message: the invariant and its sentence; text: the replay command and the shrunk reproduction), and so is
    a simulator error (type ``SimulatorError``; text: the traceback and the replay command)."""
    failures = sum(1 for r in gate.runs if not r.ok)
    errors = 0
    suite = ET.Element("testsuite", name="rmqsim-gate", tests=str(len(gate.runs)), failures=str(failures),
                       errors=str(errors), skipped="0", time=f"{sum(r.wall_s for r in gate.runs):.3f}")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="seed_base", value=str(gate.seed_base))
    ET.SubElement(props, "property", name="stopped_by", value=gate.stopped_by)
    for r in gate.runs:
        case = ET.SubElement(suite, "testcase", classname=f"rmqsim.gate.{r.scenario}",
                             name=f"{r.scenario} seed {r.seed}", time=f"{r.wall_s:.3f}")
        if r.error is not None:
            el = ET.SubElement(case, "failure", message=f"simulator error: {r.error.splitlines()[0]}",
                               type="SimulatorError")
            el.text = f"{r.error}\nreplay: {r.repro}\n"
        elif r.failed:
            v = r.violation or {}
            message = f"{v.get('invariant')} violated by {v.get('msg_id')}: {v.get('explanation')}"
            el = ET.SubElement(case, "failure", message=message, type="InvariantViolation")
            text = [message, f"violated: {', '.join(r.failed)}", f"replay: {r.repro}"]
            if gate.shrink is not None and gate.failing is r:
                text.append(f"shrunk reproduction: {gate.shrink.replay_command()}")
            el.text = "\n".join(text) + "\n"
        elif r.vacuous:
            message = f"vacuous verdict: {', '.join(r.vacuous)} checked nothing they should have"
            el = ET.SubElement(case, "failure", message=message, type="VacuousVerdict")
            el.text = f"{message}\n{(r.violation or {}).get('explanation', '')}\nreplay: {r.repro}\n"
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def write_junit(gate: GateResult, path: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(junit_xml(gate))
    return path
