"""Shrinking a failing run: a smaller scenario, same seed, era and mutants, that fails the same invariant.

The shrinker edits the raw scenario document (the one ``scenario_from_dict`` validates) in a fixed
order of reduction passes: fewer producers and consumers, fewer messages and delay levels, fewer
instances and retries, fewer faults (counts, rates, clock steps, earlier steps), a shorter traffic
phase, fewer queues; then, last, a shorter drain. A candidate is re-run with the same seed, era and
mutants and accepted only when it is the same failure: the same invariant fails on the same message
(``msg_id``), explained by a sentence of the same shape (numbers aside). With mutants, a candidate
must also hold on the clean build (same seed and era, no mutant): a reproduction of a historical bug
that fails without the bug reproduces something else (a run cut short, a real bug). The structural
passes are judged with the scenario's own drain, so that a message merely still on its way at the
end does not pass for a lost one; the drain is shortened last, only where exactly the same messages
still violate, and never below the longest delay the scenario configures (plus a polling allowance).
Each accepted step makes one measure of ``scenario_size`` smaller and none larger. Passes repeat
until a whole round accepts nothing or the run budget is spent; identical candidates run once. The
result is a pure function of (document, seed, era, mutants, invariant, budget): deterministic.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sim.scenario import ScenarioError, scenario_from_dict
from sim.units import format_duration_ms

from .run import RunResult, repro_command, run_scenario

FAULT_COUNTS = ("process_crashes", "power_failures", "graceful_restarts", "consumer_crashes",
                "crash_before_offset_flush", "crash_before_delay_offset_flush", "cq_truncations", "store_rollbacks")
FAULT_RATES = ("put_failure_rate", "send_back_failure_rate", "schedule_rebuild_failure_rate")
FAULT_KINDS = ("fault", "crash", "restart", "cq_truncate", "store_rollback")
MIN_DURATION_MS = 1000
DEFAULT_MAX_RUNS = 60
DRAIN_RESERVE = 8  # runs kept for the final drain pass
DRAIN_POLL_ALLOWANCE_MS = 60_000  # past the longest delay: schedule and pull polling, offset commits


@dataclass
class ShrinkResult:
    invariant: str
    seed: int
    era: str | None
    mutants: tuple[str, ...]
    original_doc: dict
    doc: dict  # the smallest failing document found
    runs: int  # simulator runs spent (cached candidates not counted)
    steps: list[str] = field(default_factory=list)  # the accepted reductions, in order
    result: RunResult | None = None  # the run of ``doc``
    violation: dict | None = None  # the violation of ``invariant`` the shrink kept (same message, same shape)
    path: str | None = None  # where ``write_shrunk`` put it
    clean_holds: bool | None = None  # with mutants: ``doc`` holds on the clean build (None: no mutants)
    note: str | None = None  # why the reproduction was not shrunk, or what to be careful about

    @property
    def smaller(self) -> bool:
        return is_smaller(scenario_size(self.doc), scenario_size(self.original_doc))

    def trace(self, with_faults: bool = False) -> list[dict]:
        """Every event of the violating message in the shrunk run (not only the quoted ones); with
        ``with_faults`` also the run's faults, crashes and restarts, which have no message of their own."""
        if self.result is None or self.violation is None:
            return []
        msg_id = self.violation.get("msg_id")
        return [e for e in self.result.history.events
                if e.get("msg_id") == msg_id or (with_faults and e["kind"] in FAULT_KINDS)]

    def replay_command(self, path: str | None = None) -> str:
        shuffle = bool(self.result is not None and self.result.summary.get("shuffle_ties"))
        return repro_command(path or self.path or "shrunk.toml", self.seed, self.era, self.mutants, "memory", shuffle)


# --- size ------------------------------------------------------------------------------------------------------
def scenario_size(doc: dict) -> dict[str, float]:
    """The measures a reduction makes smaller (all non-negative; smaller is simpler to read and faster to run)."""
    s = scenario_from_dict(doc, "<shrink>")
    f = s.faults
    return {
        "messages": sum(p.messages for p in s.producers),
        "producers": len(s.producers),
        "consumers": len(s.consumers),
        "instances": sum(c.instances for c in s.consumers),
        "delay_levels": sum(len(p.delay_levels) for p in s.producers),
        "max_reconsume_times": sum(16 if c.max_reconsume_times == -1 else c.max_reconsume_times for c in s.consumers),
        "fail_first": sum(c.fail_first for c in s.consumers),
        "faults": sum(getattr(f, k) for k in FAULT_COUNTS) + len(f.clock_steps),
        "fault_rates": sum(getattr(f, k) for k in FAULT_RATES),
        "clock_step_at_ms": sum(step.at_ms for step in f.clock_steps),
        "duration_ms": s.duration_ms,
        "drain_ms": s.drain_ms,
        "queues": sum(t.queues for t in s.topics),
        "topics": len(s.topics),
    }


def is_smaller(a: dict, b: dict) -> bool:
    """``a`` is no larger than ``b`` in every measure and smaller in at least one."""
    return all(a[k] <= b[k] for k in b) and any(a[k] < b[k] for k in b)


# --- candidates ------------------------------------------------------------------------------------------------
def _int_candidates(value: int, low: int) -> list[int]:
    """Smaller values to try, smallest first: the floor, a quarter and half of the way down."""
    if value <= low:
        return []
    out = []
    for c in (low, low + (value - low) // 4, low + (value - low) // 2, value - 1 if value - low <= 4 else low):
        if low <= c < value and c not in out:
            out.append(c)
    return out


def _set(doc: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def _drop(doc: dict, path: tuple) -> dict:
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return out


Candidate = tuple[str, dict]
Pass = Callable[[dict], Iterator[Candidate]]


def longest_delay_ms(s) -> int:
    """The longest single wait the scenario configures: a producer's delay level or timer delay, or the
    retry level a failing consumer can reach (level ``3 + k - 1`` for retry ``k``, clamped to the last)."""
    from store.delay_level import parse_delay_level

    table = parse_delay_level(s.broker.message_delay_level)
    top = max(table)
    waits = [0]
    for p in s.producers:
        waits += [table[min(level, top)] for level in p.delay_levels]
        if p.timer_delay_ms is not None:
            waits.append(p.timer_delay_ms)
    for c in s.consumers:
        limit = 16 if c.max_reconsume_times == -1 else c.max_reconsume_times
        retries = limit if c.fail_probability > 0 else min(c.fail_first, limit)
        if retries > 0:
            waits.append(table[min(3 + retries - 1, top)])
    return max(waits)


def drain_floor_ms(s) -> int:
    """The shortest drain the shrinker may give ``s``: long enough for its longest delay to come due and
    be delivered, so that a message still on its way does not pass for a lost one."""
    return longest_delay_ms(s) + DRAIN_POLL_ALLOWANCE_MS


def _pass_drain(doc):
    s = scenario_from_dict(doc, "<shrink>")
    for ms in _int_candidates(s.drain_ms, min(s.drain_ms, drain_floor_ms(s))):
        yield f"drain {format_duration_ms(s.drain_ms)} -> {format_duration_ms(ms) if ms else '0s'}", \
            _set(doc, ("drain",), format_duration_ms(ms) if ms else "0s")


def _pass_remove_entries(kind: str):
    def run(doc):
        entries = doc.get(kind, [])
        if len(entries) <= 1:
            return
        for i in range(len(entries)):
            out = copy.deepcopy(doc)
            del out[kind][i]
            yield f"remove {kind}[{i}]", out
    return run


def _pass_messages(doc):
    s = scenario_from_dict(doc, "<shrink>")
    for i, p in enumerate(s.producers):
        for n in _int_candidates(p.messages, 1):
            yield f"producer[{i}].messages {p.messages} -> {n}", _set(doc, ("producer", i, "messages"), n)


def _pass_delay_levels(doc):
    s = scenario_from_dict(doc, "<shrink>")
    for i, p in enumerate(s.producers):
        raw = doc["producer"][i]
        levels = list(p.delay_levels)
        if len(levels) <= 1 or "delay_levels" not in raw:
            continue
        weights = list(p.delay_weights)
        half = len(levels) // 2
        choices = [list(range(half)), list(range(half, len(levels)))] + [
            [j for j in range(len(levels)) if j != k] for k in range(len(levels))]
        for keep in choices:
            out = copy.deepcopy(doc)
            out["producer"][i]["delay_levels"] = [levels[j] for j in keep]
            if weights:
                out["producer"][i]["delay_weights"] = [raw["delay_weights"][j] for j in keep]
            yield f"producer[{i}].delay_levels {levels} -> {[levels[j] for j in keep]}", out


def _pass_consumers(doc):
    s = scenario_from_dict(doc, "<shrink>")
    for i, c in enumerate(s.consumers):
        for n in _int_candidates(c.instances, 1):
            yield f"consumer[{i}].instances {c.instances} -> {n}", _set(doc, ("consumer", i, "instances"), n)
        limit = 16 if c.max_reconsume_times == -1 else c.max_reconsume_times
        can_fail = c.fail_probability > 0 or c.fail_first > 0
        for n in _int_candidates(limit, 0) if can_fail else ():
            out = _set(doc, ("consumer", i, "max_reconsume_times"), n)
            if c.fail_first > n + 1:  # "always fails" stays "always fails"
                out["consumer"][i]["fail_first"] = n + 1
            yield f"consumer[{i}].max_reconsume_times {limit} -> {n}", out
        for n in _int_candidates(c.fail_first, 0):
            yield f"consumer[{i}].fail_first {c.fail_first} -> {n}", _set(doc, ("consumer", i, "fail_first"), n)


def _pass_fault_counts(doc):
    faults = doc.get("faults", {})
    for key in FAULT_COUNTS:
        value = faults.get(key, 0)
        for n in _int_candidates(value, 0):
            yield f"faults.{key} {value} -> {n}", _set(doc, ("faults", key), n)


def _pass_fault_rates(doc):
    faults = doc.get("faults", {})
    for key in FAULT_RATES:
        value = float(faults.get(key, 0.0))
        if value <= 0:
            continue
        for r in (0.0, round(value / 2, 6)):
            if r < value:
                yield f"faults.{key} {value} -> {r}", _set(doc, ("faults", key), r)


def _pass_clock_steps(doc):
    s = scenario_from_dict(doc, "<shrink>")
    steps = doc.get("faults", {}).get("clock_steps", [])
    for i in range(len(steps)):
        out = copy.deepcopy(doc)
        del out["faults"]["clock_steps"][i]
        yield f"remove faults.clock_steps[{i}]", out
    for i, step in enumerate(s.faults.clock_steps):
        for ms in _int_candidates(step.at_ms, 0):
            text = format_duration_ms(ms) if ms else "0s"
            yield (f"faults.clock_steps[{i}].at {format_duration_ms(step.at_ms)} -> {text}",
                   _set(doc, ("faults", "clock_steps", i, "at"), text))


def _pass_duration(doc):
    s = scenario_from_dict(doc, "<shrink>")
    latest_step = max((step.at_ms + 1 for step in s.faults.clock_steps), default=MIN_DURATION_MS)
    for ms in _int_candidates(s.duration_ms, max(MIN_DURATION_MS, latest_step)):
        yield f"duration {format_duration_ms(s.duration_ms)} -> {format_duration_ms(ms)}", \
            _set(doc, ("duration",), format_duration_ms(ms))


def _pass_topics(doc):
    s = scenario_from_dict(doc, "<shrink>")
    used = {p.topic for p in s.producers} | {c.topic for c in s.consumers}
    for i, t in enumerate(s.topics):
        if t.name not in used and len(s.topics) > 1:
            yield f"remove unused topic {t.name}", _drop(doc, ("topic", i))
    for i, t in enumerate(s.topics):
        for n in _int_candidates(t.queues, 1):
            yield f"topic {t.name} queues {t.queues} -> {n}", _set(doc, ("topic", i, "queues"), n)


PASSES: tuple[tuple[str, Pass], ...] = (
    ("producers", _pass_remove_entries("producer")),
    ("consumers", _pass_remove_entries("consumer")),
    ("messages", _pass_messages),
    ("delay_levels", _pass_delay_levels),
    ("consumer", _pass_consumers),
    ("fault_counts", _pass_fault_counts),
    ("fault_rates", _pass_fault_rates),
    ("clock_steps", _pass_clock_steps),
    ("duration", _pass_duration),
    ("topics", _pass_topics),
)
DRAIN_PASSES: tuple[tuple[str, Pass], ...] = (("drain", _pass_drain),)


# --- the search ----------------------------------------------------------------------------------------------
def _violating(result: RunResult, invariant: str) -> frozenset[str] | None:
    """The messages that violate ``invariant``, and how many violations (None: it holds)."""
    verdict = result.summary["invariants"].get(invariant)
    if verdict is None or verdict["holds"]:
        return None
    return frozenset(str(v.get("msg_id")) for v in verdict["violations"]) | {f"#{verdict.get('violation_count')}"}


def first_failing_invariant(summary: dict) -> str | None:
    return next((name for name, v in summary["invariants"].items() if not v["holds"]), None)


def sentence_shape(explanation: object) -> str:
    """A violation's sentence with its numbers blanked: the same failure traced the same way has the same
    shape however many messages, milliseconds or offsets the run had."""
    return _NUMBER.sub("#", str(explanation))


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _signature(violation: dict) -> tuple[str, str]:
    return str(violation.get("msg_id")), sentence_shape(violation.get("explanation"))


def _same_failure(result: RunResult, invariant: str, target: tuple[str, str]) -> dict | None:
    """The violation of ``invariant`` in ``result`` on the target message with the target shape, if any."""
    verdict = result.summary["invariants"].get(invariant)
    if verdict is None or verdict["holds"]:
        return None
    return next((v for v in verdict["violations"] if _signature(v) == target), None)


def _holds(result: RunResult) -> bool:
    return all(v["holds"] for v in result.summary["invariants"].values())


def shrink(doc: dict, seed: int, invariant: str | None = None, *, era: str | None = None, mutants=(),
           max_runs: int = DEFAULT_MAX_RUNS, first: RunResult | None = None, check=None,
           progress: Callable[[int, int, str], None] | None = None, shuffle_ties: bool = False) -> ShrinkResult:
    """Shrink the failing run of ``doc`` with ``seed``; ``first`` is that run when the caller already has it.

    ``invariant`` defaults to the first one the run violates. Raises ``ValueError`` when the run holds."""
    if check is None:
        from .checking import check_run as check
    mutants = tuple(sorted(mutants))
    cache: dict[str, frozenset[str] | None] = {}
    runs = 0

    def run(candidate: dict, with_mutants: tuple[str, ...] = mutants) -> RunResult:
        nonlocal runs
        runs += 1
        scenario = scenario_from_dict(candidate, "<shrink>")
        return run_scenario(scenario, seed, era=era, mutants=with_mutants, check=check, shuffle_ties=shuffle_ties)

    base = first if first is not None else run(doc)
    invariant = invariant or first_failing_invariant(base.summary)
    if invariant is None or _violating(base, invariant) is None:
        raise ValueError(f"the run of {doc.get('name')!r} with seed {seed} does not violate "
                         f"{invariant or 'any invariant'}: nothing to shrink")
    first_violation = base.summary["invariants"][invariant]["violations"]
    target = _signature(first_violation[0]) if first_violation else ("None", "")
    state = {"doc": copy.deepcopy(doc), "result": base, "set": _violating(base, invariant)}
    cache[_key(state["doc"])] = state["set"]
    steps: list[str] = []

    def result_of(note: str | None, clean_holds: bool | None) -> ShrinkResult:
        best = state["result"]
        violation = _same_failure(best, invariant, target) if first_violation else None
        return ShrinkResult(invariant=invariant, seed=seed, era=era, mutants=mutants,
                            original_doc=copy.deepcopy(doc), doc=state["doc"], runs=runs, steps=steps, result=best,
                            violation=violation, clean_holds=clean_holds, note=note)

    if mutants:
        # The unshrunk run must hold without the mutants, or no shrink of it can show the mutants' bug.
        clean = run(state["doc"], ())
        if progress is not None:
            progress(runs, max_runs, "the unshrunk scenario on the clean build")
        if not _holds(clean):
            failed = first_failing_invariant(clean.summary)
            return result_of(f"not shrunk: the scenario fails {failed} with seed {seed} on the clean build too "
                             f"(without {', '.join(mutants)}), so no smaller run could isolate the mutants", False)

    def fixpoint(passes, limit: int, exact: bool) -> None:
        """Apply ``passes`` in order, each again after every accepted candidate, until a round accepts nothing."""
        progressed = True
        while progressed and runs < limit:
            progressed = False
            for _name, make in passes:
                accepted = True
                while accepted and runs < limit:
                    accepted = False
                    for label, candidate in make(state["doc"]):
                        key = _key(candidate)
                        if key in cache:
                            continue  # tried before, and not accepted then (or it would be the current doc)
                        if runs >= limit:
                            break
                        try:
                            scenario_from_dict(candidate, "<shrink>")
                        except ScenarioError:
                            cache[key] = None
                            continue
                        result = run(candidate)
                        got = cache[key] = _violating(result, invariant)
                        if progress is not None:
                            progress(runs, max_runs, label)
                        if got is None or (exact and got != state["set"]):
                            continue
                        if first_violation and _same_failure(result, invariant, target) is None:
                            continue  # another message, or the same one failing another way
                        if mutants:
                            if runs >= limit:
                                break
                            clean_ok = _holds(run(candidate, ()))
                            if progress is not None:
                                progress(runs, max_runs, f"{label} (clean build)")
                            if not clean_ok:
                                continue  # it fails without the mutants too: not the mutants' bug any more
                        state.update(doc=candidate, result=result, set=got)
                        steps.append(label)
                        accepted = progressed = True
                        break

    # Structure, traffic and faults first, judged with the scenario's own drain; the drain last, and only
    # where exactly the same messages still violate (no later step may then make a message merely late).
    fixpoint(PASSES, max_runs - min(DRAIN_RESERVE, max_runs // 4), exact=False)
    fixpoint(DRAIN_PASSES, max_runs, exact=True)
    return result_of(None, True if mutants else None)


def _key(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True, default=str)


# --- output --------------------------------------------------------------------------------------------------
def shrunk_document(result: ShrinkResult) -> dict:
    """The shrunk scenario as it is written: renamed, described, seeded."""
    doc = copy.deepcopy(result.doc)
    name = str(doc.get("name", "scenario"))
    doc["name"] = name if name.endswith("-shrunk") else f"{name}-shrunk"
    how = f"seed {result.seed}" + (f", era {result.era}" if result.era else "") + (
        f", mutants {', '.join(result.mutants)}" if result.mutants else "")
    doc["description"] = (f"Shrunk by rmqsim from '{name}' ({how}) in {len(result.steps)} steps: "
                          f"it still violates {result.invariant}.")
    doc["seed"] = result.seed
    ordered = {k: doc[k] for k in ("name", "description", "seed", "duration", "drain") if k in doc}
    ordered.update({k: v for k, v in doc.items() if k not in ordered})
    return ordered


def write_shrunk(result: ShrinkResult, path: str) -> str:
    """Write the shrunk scenario as TOML at ``path``; ``rmqsim run PATH --seed N ...`` replays the failure."""
    from sim.toml_out import dumps

    header = [f"# Shrunk by rmqsim: {result.invariant} still fails with seed {result.seed}.",
              f"# Replay: {result.replay_command(path)}"]
    if result.clean_holds:
        header.append("# Without the mutants the same run holds: what fails is the mutants' bug.")
    if result.note:
        header.append(f"# Note: {result.note}")
    header += [f"#   step: {step}" for step in result.steps]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(header) + "\n" + dumps(shrunk_document(result)))
    result.path = path
    return path


def format_event(e: dict) -> str:
    fields = " ".join(f"{k}={v}" for k, v in e.items() if k not in ("seq", "t_ms", "kind", "msg_id"))
    return f"{e['t_ms']:>10} ms  {e['kind']:<13} {fields}"


def format_report(result: ShrinkResult) -> list[str]:
    """What a person needs: what fails, the smaller scenario, the violating message's trace, the replay."""
    before, after = scenario_size(result.original_doc), scenario_size(result.doc)
    changed = ", ".join(f"{k} {_num(before[k])} -> {_num(after[k])}" for k in before if before[k] != after[k])
    lines = [f"shrunk in {result.runs} runs, {len(result.steps)} steps: {changed or 'no smaller run found'}"]
    if result.note:
        lines.append(f"  note: {result.note}")
    elif result.clean_holds:
        lines.append(f"  checked: without {', '.join(result.mutants)} the shrunk run holds")
    if result.violation is not None:
        lines.append(f"  {result.invariant} violated by {result.violation.get('msg_id')}: "
                     f"{result.violation.get('explanation')}")
        msg_id = result.violation.get("msg_id")
        trace = result.trace(with_faults=True)
        lines.append(f"  trace of {msg_id} ({sum(e.get('msg_id') == msg_id for e in trace)} events; "
                     f"'!' marks the run's faults):")
        lines += [("  ! " if e.get("msg_id") != msg_id else "    ") + format_event(e) for e in trace]
    if result.path:
        lines.append(f"  wrote {result.path}")
    lines.append(f"  replay: {result.replay_command()}")
    return lines


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)
