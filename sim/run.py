"""One run: build the world, run it, write ``summary.json``, ``history.jsonl`` and ``store/``."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass

from model.invariants import overall_verdict
from sim.scenario import Scenario
from store.disk import MemoryDisk, OsDisk
from store.faults import BrokerCrash
from store.mutants import validate

from .checking import check_run
from .from_store import preloaded_counts
from .history import History
from .stats import run_stats
from .world import World


@dataclass
class RunResult:
    scenario: Scenario
    seed: int
    era: str
    mutants: tuple[str, ...]
    history: History
    summary: dict
    world: World


def repro_command(scenario_arg: str, seed: int, era: str | None, mutants, disk: str,
                  shuffle_ties: bool = False, from_store: str | None = None) -> str:
    parts = ["rmqsim", "run", scenario_arg, "--seed", str(seed)]
    if era:
        parts += ["--era", era]
    for m in sorted(mutants):
        parts += ["--mutant", m]
    if disk != "memory":
        parts += ["--disk", disk]
    if shuffle_ties:
        parts.append("--shuffle-ties")
    if from_store:
        parts += ["--from-store", from_store]
    return " ".join(parts)


def run_scenario(scenario: Scenario, seed: int | None = None, *, era: str | None = None, mutants=(),
                 disk: str = "memory", out_dir: str | None = None, faithful_polling: bool = False,
                 progress=None, scenario_arg: str | None = None, check=None, shuffle_ties: bool = False,
                 from_store=None) -> RunResult:
    """Run ``scenario`` deterministically; ``check(history, world) -> dict`` gives the invariant verdicts.

    Every invariant is checked unless told otherwise: ``check=None`` is ``sim.checking.check_run``; only
    ``check=False`` skips checking (the summary's verdict is then "unchecked", never "holds"). ``from_store``: a
    ``sim.from_store.StoreImage`` the broker starts on (``run --from-store``)."""
    seed = scenario.seed if seed is None else seed
    mutant_set = validate(mutants)
    tmp_root = None
    if disk == "os":
        tmp_root = tempfile.mkdtemp(prefix="rmqsim-store-")
        store_disk = OsDisk(tmp_root)
    else:
        store_disk = MemoryDisk()
    wall_start = time.perf_counter()  # wall-clock ok: reported, never part of the history
    world = World(scenario, seed, era=era, mutants=mutant_set, disk=store_disk, faithful_polling=faithful_polling,
                  shuffle_ties=shuffle_ties, preload=from_store)
    sim_error = None
    try:
        world.run(progress)
        world.finish()
    except (Exception, BrokerCrash) as error:  # a bug in the simulated store or the harness: the run's verdict
        sim_error = simulator_error_of(error, world.now_mono())
    wall_s = time.perf_counter() - wall_start  # wall-clock ok
    history = world.history
    if check is None:
        check = check_run
    # A history cut short by a bug proves nothing either way: it is not checked.
    invariants = check(history, world) if check is not False and sim_error is None else {}
    summary = {
        "scenario": scenario.name,
        "seed": seed,
        "era": world.store_config.era,
        "mutants": sorted(mutant_set),
        "virtual_ms": world.end_mono_ms,
        "wall_s": round(wall_s, 3),
        "events": len(history.events),
        "history_sha256": history.sha256(),
        "invariants": invariants,
        "stats": run_stats(history, world),
        "repro": repro_command(scenario_arg or scenario.source or scenario.name, seed, era, mutant_set, disk, shuffle_ties,
                               from_store.root if from_store is not None else None),
        "scenario_doc": scenario.doc,
        "faithful_polling": faithful_polling,
        "shuffle_ties": shuffle_ties,
        "disk": disk,
        "sim_steps": world.scheduler.steps,
        "sim_deferred_rounds": world.scheduler.deferred_steps,
        "verdict": verdict_of(invariants, sim_error, checked=check is not False),
        "probes": world.probes.as_dict(),
    }
    if from_store is not None:
        summary["from_store"] = from_store.root
        summary["preloaded"] = preloaded_counts(history.events)
    if sim_error is not None:
        summary["simulator_error"] = sim_error
    if out_dir is not None:
        write_run(out_dir, history, summary, world)
    if tmp_root is not None:
        shutil.rmtree(tmp_root, ignore_errors=True)
    return RunResult(scenario, seed, world.store_config.era, tuple(sorted(mutant_set)), history, summary, world)


def simulator_error_of(error: BaseException, t_ms: int) -> dict:
    """What ``summary.json`` says about an exception that stopped the run: type, message, traceback, and the
    virtual time it stopped at."""
    return {"type": type(error).__name__, "message": str(error),
            "traceback": "".join(traceback.format_exception(error)), "t_ms": t_ms}


def verdict_of(invariants: dict, sim_error: dict | None, checked: bool = True) -> str:
    """summary.json's verdict: simulator_error, unchecked (``check=False``), violated, vacuous or holds."""
    if sim_error is not None:
        return "simulator_error"
    if not checked:
        return "unchecked"
    return overall_verdict(invariants)


def simulator_error_line(summary: dict) -> str | None:
    """One line naming the exception that stopped the run and where it was raised, or None."""
    error = summary.get("simulator_error")
    if not error:
        return None
    where = ""
    for line in reversed(error["traceback"].splitlines()):
        line = line.strip()
        if line.startswith("File "):
            where = " (" + line.replace("File ", "", 1) + ")"
            break
    at = f" at t={error['t_ms']} ms" if error.get("t_ms") is not None else ""
    return f"simulator error{at}: {error['type']}: {error['message']}{where}"


def write_run(out_dir: str, history: History, summary: dict, world: World) -> None:
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "history.jsonl"), "w", encoding="utf-8") as f:
        f.write(history.to_jsonl())
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, sort_keys=False)
        f.write("\n")
    store_dir = os.path.join(out_dir, "store")
    shutil.rmtree(store_dir, ignore_errors=True)
    disk = world.disk
    if isinstance(disk, MemoryDisk):
        disk.dump(store_dir)
    else:
        shutil.copytree(disk.root, store_dir)
