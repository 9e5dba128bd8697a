"""The mutation self-test (``rmqsim mutants``): every historical bug of ``store.mutants.CATALOGUE`` is put
back, one at a time, and the built-in scenarios are run with seeds 1, 2, ... until an invariant fails.

A checker that catches no mutant is not trusted; a mutant that no scenario and no invariant catches
is reported by name (exit 1), never dropped. Each mutant tries its preferred scenarios first (the
ones written to make that bug observable), then every other built-in. A catch counts only when the
clean build holds the same invariant on the same scenario and seed, so the failure is the bug's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from store.mutants import CATALOGUE, FIDELITY_ONLY, validate

from .catalogue import builtin_names, load_builtin

# mutant -> the built-in scenarios that target it most directly, tried first (in this order).
PREFERRED: dict[str, tuple[str, ...]] = {
    "skip_failed_delivery": ("put-failures-during-delivery",),
    "no_correct_delay_offset": ("store-rollback",),
    "no_persist_at_shutdown": ("graceful-restart",),
    "offset_from_task_start": ("delayed-burst-then-crash", "crash-before-delay-offset-flush"),
    "persist_before_load": ("graceful-restart",),
    "drop_on_exception": ("rebuild-errors-4x",),
    "no_correct_deliver_timestamp": ("backwards-clock-step",),
    "correct_delay_offset_skips_missing_cq": ("store-rollback-lost-level-queue",),
    "resend_exception_escapes": ("async-deliver-resend-errors",),
    "dlq_keeps_delay": ("retry-ladder-to-dlq",),
    "dlq_threshold_gt": ("retry-ladder-to-dlq",),
    "retry_level_2_plus_r": ("retry-ladder-to-dlq", "retries-with-flaky-consumers"),
    "retry_level_4_plus_r": ("retry-ladder-to-dlq", "retries-with-flaky-consumers"),
    "commit_on_failed_send_back": ("flaky-consumer-broker-crash",),
    "fallback_dlq_ge": ("retry-fallback-to-dlq",),
    "no_contains_message_check": ("slow-listener-expired-retry",),
    "commit_max_offset": ("consumer-crash",),
    "timer_no_queue_offset_clamp": ("timer-power-failure",),
    "timer_drop_after_first_failure": ("timer-put-failures",),
    "timer_read_time_early": ("timer-restart-during-put-retry",),
    "timer_drop_after_3_retries": ("timer-put-failure-storm",),
    "error_ends_level_task": ("rebuild-errors-4x",),
    "correct_delay_offset_past_max": ("store-rollback",),
    "correct_delay_offset_to_min": ("store-rollback",),
    "ignore_client_max_reconsume": ("dozens-of-process-crashes",),
    "reconsume_times_not_bumped": ("slow-listener-expired-retry",),
    "timer_read_current_slot": ("timer-wheel-basic",),
    "next_begin_plus_one": ("all-levels-under-load",),
    "overflow_one_plus_one": ("slow-listener-expired-retry",),
    "not_due_offset_plus_one": ("dozens-of-process-crashes",),
    "overflow_badly_to_min": ("store-rollback",),
    "next_offset_at_last_put": ("delayed-burst-then-crash",),
    "allocate_average_ceil": ("retries-with-flaky-consumers",),
    "delay_level_off_by_one": ("one-message-per-level",),
}
TIMER_PREFIX = "timer_"  # mutants of the timer wheel: only scenarios that send timer messages can reach it
DEFAULT_MAX_SEEDS = 3


@dataclass
class MutantOutcome:
    mutant: str
    bug: str
    caught: bool
    invariant: str | None = None  # the first invariant that failed (and holds on the clean build)
    scenario: str | None = None
    seed: int | None = None  # seeds needed in that scenario: it was caught with seed N after 1..N-1
    runs: int = 0  # simulator runs with the mutant, over every scenario tried
    wall_s: float = 0.0
    explanation: str = ""  # the first violation's sentence
    msg_id: str = ""
    repro: str = ""
    note: str = ""  # why a mutant was not caught, or what was skipped
    pinned_by: str = ""  # a fidelity-only mutant: the conformance test that pins it (no invariant can see it)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def scenario_order(mutant: str, names: list[str] | None = None) -> list[str]:
    """The built-ins to try for ``mutant``: its preferred ones first, then the rest in name order; a timer
    mutant only gets scenarios that send timer messages (those with "timer" in their name first)."""
    names = sorted(names if names is not None else builtin_names())
    if mutant.startswith(TIMER_PREFIX):
        timer = [n for n in names if _sends_timer_messages(n)]
        rest = sorted(timer, key=lambda n: ("timer" not in n, n))
    else:
        rest = names
    preferred = [n for n in PREFERRED.get(mutant, ()) if n in names]
    return preferred + [n for n in rest if n not in preferred]


def _sends_timer_messages(name: str) -> bool:
    scenario = load_builtin(name)
    return scenario.broker.era != "4.9.8" and any(p.timer_delay_ms is not None for p in scenario.producers)


def run_mutants(mutants: list[str] | None = None, *, max_seeds: int = DEFAULT_MAX_SEEDS,
                scenarios: list[str] | None = None, check=None,
                on_run: Callable[[str, str, int], None] | None = None,
                progress: bool = False) -> list[MutantOutcome]:
    """One outcome per mutant (catalogue order unless ``mutants`` names some)."""
    from sim.run import run_scenario

    if check is None:
        from sim.checking import check_run as check
    names = list(CATALOGUE) if not mutants else list(dict.fromkeys(mutants))
    validate(names)
    clean_cache: dict[tuple[str, int], dict] = {}

    def clean_verdicts(scenario_name: str, seed: int) -> dict:
        key = (scenario_name, seed)
        if key not in clean_cache:
            clean_cache[key] = run_scenario(load_builtin(scenario_name), seed, check=check).summary["invariants"]
        return clean_cache[key]

    bar = None
    if progress:
        from .progress import progress_bar

        bar = progress_bar(total=len(names), desc="mutants", unit="mutant")
    outcomes = []
    try:
        for mutant in names:
            if bar is not None:
                bar.set_postfix_str(mutant)
            outcomes.append(_hunt(mutant, scenario_order(mutant, scenarios), max_seeds, check, clean_verdicts,
                                  on_run, run_scenario))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return outcomes


def _hunt(mutant, order, max_seeds, check, clean_verdicts, on_run, run_scenario) -> MutantOutcome:
    out = MutantOutcome(mutant=mutant, bug=CATALOGUE[mutant], caught=False)
    if mutant in FIDELITY_ONLY:
        out.pinned_by = FIDELITY_ONLY[mutant]
        out.note = "fidelity only: no invariant can observe it; pinned by a conformance test"
        return out
    start = time.perf_counter()  # wall-clock ok: reported, never part of a history
    notes = []
    if not order:
        out.note = ("no built-in scenario sends timer messages, so no run can reach the timer wheel"
                    if mutant.startswith(TIMER_PREFIX) else "no scenario to run")
    for scenario_name in order:
        for seed in range(1, max_seeds + 1):
            if on_run is not None:
                on_run(mutant, scenario_name, seed)
            result = run_scenario(load_builtin(scenario_name), seed, mutants=[mutant], check=check,
                                  scenario_arg=scenario_name)
            out.runs += 1
            failed = [name for name, v in result.summary["invariants"].items() if not v["holds"]]
            if not failed:
                continue
            clean = clean_verdicts(scenario_name, seed)
            caught_by = [name for name in failed if clean.get(name, {}).get("holds", True)]
            if not caught_by:
                notes.append(f"{scenario_name} seed {seed} fails {', '.join(failed)} on the clean build too")
                continue
            invariant = caught_by[0]
            violation = result.summary["invariants"][invariant]["violations"][0]
            out.caught, out.invariant, out.scenario, out.seed = True, invariant, scenario_name, seed
            out.explanation, out.msg_id = violation["explanation"], violation["msg_id"]
            out.repro = result.summary["repro"]
            break
        if out.caught:
            break
    if not out.caught and order:
        out.note = (f"no invariant failed in {out.runs} runs ({len(order)} scenarios x seeds 1..{max_seeds})")
    if notes:
        out.note = "; ".join(filter(None, [out.note, *notes]))
    out.wall_s = time.perf_counter() - start  # wall-clock ok
    return out


def format_list() -> list[str]:
    from store.mutants import LEFT_OUT

    width = max(len(name) for name in (*CATALOGUE, *LEFT_OUT))
    lines = [f"{name:{width}}  {bug}" for name, bug in CATALOGUE.items()]
    counted = len([n for n in CATALOGUE if n not in FIDELITY_ONLY])
    lines += ["", f"{counted} counted (caught by an invariant); fidelity only: {', '.join(FIDELITY_ONLY)}",
              "", "left out (not counted):"]
    lines += [f"{name:{width}}  {why}" for name, why in LEFT_OUT.items()]
    return lines


def all_accounted_for(outcomes: list[MutantOutcome]) -> bool:
    """Every mutant caught by an invariant, or fidelity-only and pinned by its conformance test."""
    return all(o.caught or o.pinned_by for o in outcomes)


def format_table(outcomes: list[MutantOutcome]) -> list[str]:
    """A Markdown table (readable in a terminal too): mutant, bug, catching invariant, scenario, seeds, time."""
    lines = ["| mutant | the bug it reproduces | caught by | scenario | seeds | runs | wall s |",
             "|---|---|---|---|---:|---:|---:|"]
    for o in outcomes:
        bug = o.bug.replace("|", "\\|")
        if o.caught:
            lines.append(f"| `{o.mutant}` | {bug} | {o.invariant} | {o.scenario} | {o.seed} | {o.runs} | "
                         f"{o.wall_s:.1f} |")
        elif o.pinned_by:
            test = o.pinned_by.split(" ", 1)[0]
            lines.append(f"| `{o.mutant}` | {bug} | no invariant (fidelity); pinned by `{test}` | — | — | "
                         f"{o.runs} | {o.wall_s:.1f} |")
        else:
            lines.append(f"| `{o.mutant}` | {bug} | **NOT CAUGHT** | — | — | {o.runs} | {o.wall_s:.1f} |")
    return lines


def format_summary(outcomes: list[MutantOutcome]) -> list[str]:
    caught = [o for o in outcomes if o.caught]
    pinned = [o for o in outcomes if o.pinned_by]
    missed = [o for o in outcomes if not o.caught and not o.pinned_by]
    invariants = sorted({o.invariant for o in caught if o.invariant})
    lines = [f"{len(caught)} of {len(outcomes) - len(pinned)} mutants caught, by "
             f"{', '.join(invariants) or 'no invariant'}; {sum(o.runs for o in outcomes)} runs in "
             f"{sum(o.wall_s for o in outcomes):.1f} s"]
    for o in pinned:
        lines.append(f"FIDELITY ONLY (not counted): {o.mutant}: pinned by {o.pinned_by}")
    for o in missed:
        lines.append(f"NOT CAUGHT: {o.mutant} ({o.bug}): {o.note}")
    return lines


@dataclass
class ExploreOutcome:
    mutant: str
    caught: bool = False
    runs: int | None = None  # generated scenarios run with the mutant up to and including the catch
    invariant: str | None = None
    scenario_file: str | None = None
    trace_events: int | None = None  # events of the violating message in the shrunk reproduction
    seed: int | None = None
    note: str = ""

    def as_json(self) -> dict:
        return {"caught": self.caught, "runs": self.runs, "invariant": self.invariant,
                "scenario_file": self.scenario_file, "trace_events": self.trace_events}


def run_explore(n: int, mutants: list[str] | None = None, *, out_dir: str, seed_base: int = 1, check=None,
                shuffle_ties: bool = True, steer: bool = True, shrink_runs: int = 40, progress: bool = False):
    """Each mutant (fidelity-only ones skipped) against generated scenarios ``seed_base .. seed_base+n-1``
    (the same for every mutant) until one fails an invariant that the clean build holds on the same
    scenario and seed. ``steer``: scenario S is generated with the weights that the clean runs of the seeds
    before it lead to (scenarios/steer.py); clean runs are asked for in seed order, so S's scenario is the same
    for every mutant. Returns (outcomes, clean findings: [(seed, failing invariants, file)])."""
    import os

    from sim.run import run_scenario
    from sim.shrink import shrink, write_shrunk

    from .explore import generate as generate_weighted
    from .explore import switches
    from .steer import Steering
    from .toml_out import dumps

    steering = Steering()
    scenarios: dict[int, object] = {}

    def generate(seed: int):
        if seed not in scenarios:
            weights = steering.weights() if steer else {}
            scenarios[seed] = (generate_weighted(seed, weights=weights), weights)
        return scenarios[seed][0]

    if check is None:
        from sim.checking import check_run as check
    names = [m for m in (list(CATALOGUE) if not mutants else list(dict.fromkeys(mutants))) if m not in FIDELITY_ONLY]
    validate(names)
    os.makedirs(out_dir, exist_ok=True)
    clean: dict[int, dict] = {}
    findings: list[tuple[int, list[str], str]] = []

    def clean_verdicts(seed: int) -> dict:
        if seed not in clean:
            scenario = generate(seed)
            summary = run_scenario(scenario, seed, check=check, shuffle_ties=shuffle_ties).summary
            inv = clean[seed] = summary["invariants"]
            steering.record(switches(seed, scenarios[seed][1]), summary.get("probes", {}))
            failed = [k for k, v in inv.items() if not v["holds"]]
            if failed:
                path = os.path.join(out_dir, f"clean-finding-explore-{seed}.toml")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(dumps(scenario.doc))
                findings.append((seed, failed, path))
        return clean[seed]

    bar = None
    if progress:
        from .progress import progress_bar

        bar = progress_bar(total=len(names) * n, desc="explore", unit="run")
    outcomes = []
    try:
        for mutant in names:
            out = ExploreOutcome(mutant)
            tried = 0
            for seed in range(seed_base, seed_base + n):
                if bar is not None:
                    bar.set_postfix_str(mutant)
                    bar.update(1)
                tried += 1
                base = clean_verdicts(seed)
                if any(not v["holds"] for v in base.values()):
                    continue  # a clean-build failure is a finding, never a catch
                scenario = generate(seed)
                result = run_scenario(scenario, seed, mutants=[mutant], check=check, shuffle_ties=shuffle_ties)
                failed = [k for k, v in result.summary["invariants"].items() if not v["holds"]]
                if not failed:
                    continue
                out.caught, out.runs, out.invariant, out.seed = True, tried, failed[0], seed
                path = os.path.join(out_dir, f"{mutant}-explore-{seed}.toml")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(dumps(scenario.doc))
                out.scenario_file = path
                try:
                    shrunk = shrink(scenario.doc, seed, failed[0], mutants=[mutant], max_runs=shrink_runs,
                                    first=result, check=check, shuffle_ties=shuffle_ties)
                    write_shrunk(shrunk, os.path.join(out_dir, f"{mutant}-explore-{seed}.shrunk.toml"))
                    out.trace_events = len(shrunk.trace())
                    if shrunk.note:
                        out.note = shrunk.note
                except ValueError as error:
                    out.note = f"not shrunk: {error}"
                break
            if bar is not None and not out.caught:
                pass
            elif bar is not None:
                bar.update(n - tried)
            if not out.caught:
                out.note = f"no invariant failed in {n} generated scenarios"
            outcomes.append(out)
    finally:
        if bar is not None:
            bar.close()
    return outcomes, findings


def format_explore(outcomes: list[ExploreOutcome], findings, n: int) -> list[str]:
    import statistics

    lines = ["| mutant | caught | runs | invariant | shrunk trace events | scenario |", "|---|---|---:|---|---:|---|"]
    for o in outcomes:
        lines.append(f"| `{o.mutant}` | {'yes' if o.caught else '**no**'} | {o.runs if o.runs else '—'} | "
                     f"{o.invariant or '—'} | {o.trace_events if o.trace_events is not None else '—'} | "
                     f"{o.scenario_file or '—'} |")
    caught = [o for o in outcomes if o.caught]
    runs = [o.runs for o in caught]
    traces = [o.trace_events for o in caught if o.trace_events is not None]
    share = 100 * len(caught) / len(outcomes) if outcomes else 0
    lines += ["", f"{len(caught)} of {len(outcomes)} mutants caught ({share:.0f}%) within {n} explored runs each; "
                  f"median runs to first catch {statistics.median(runs) if runs else '—'}; "
                  f"median shrunk trace {statistics.median(traces) if traces else '—'} events"]
    for seed, failed, path in findings:
        lines.append(f"CLEAN-BUILD FINDING: generated scenario {seed} fails {', '.join(failed)} without any "
                     f"mutant ({path})")
    return lines
