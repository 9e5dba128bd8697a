"""Which of the invariants' excuses the generated runs of the current build lean on, and on which seeds.

An excuse is a predicate of model.invariants (a module function or an ``_Index`` method annotated ``-> bool``)
that lets a run pass when a fault explains what would otherwise be a violation. For each generated run that holds,
each predicate that answered True at least once is answered False instead and the history checked again: when an
invariant then fails, the run leans on it. The same for the rules a triage put in that are not predicates (each
replaced by what it replaced), and for the era (the run checked by the other era's rules). The seeds printed per predicate are live witnesses: a triage test whose
own seed no longer reaches its excuse (the store changed) can take one of them, and a predicate no run leans on is
an excuse only crafted histories reach. Predicates every run leans on are rules, not excuses (``_subscribed``).
Usage: python benchmarks/excuse_coverage.py [N] [SEED_BASE] [PROCS] [--combos] [--like SEED]
``--like SEED``: generate with the switches (features, fault kinds) of generated scenario SEED on at 0.85 and the
others at 0.1, to look for witnesses of an excuse near the shape of the run that first needed it (the repro of a
witness is then ``generate_doc(seed, combos, like_weights(SEED))``).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
from contextlib import contextmanager
from multiprocessing import Pool

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scenarios.progress import progress_bar  # noqa: E402

SHOWN_SEEDS = 6


def _rules(inv) -> dict:
    """Rules that are not predicates -> what answers as if the rule were not there (each a triage's fix)."""
    from model.stats import delivery_lateness

    paired = inv._fallback_that_stored

    def from_the_last_store(events):  # lateness before seeds 4137813379, 208, 1000000067: the message's last store
        return delivery_lateness([dict(e, due_ms=-1) if e["kind"] == "store" and "due_ms" in e
                                  else dict(e, schedule_queue_offset=-1) if e["kind"] == "deliver" else e
                                  for e in events])

    return {
        "delivery_lateness": from_the_last_store,
        "_copy_of": lambda c: c["seq"],  # every consume a copy of its own
        "_copies_of_repeated_deliveries": lambda ix: set(),
        "_unmarked_file_starts": lambda ix, ctx: {},
        "_unmarked_file_start_polls": lambda ix, ctx: {},
        "_retry_made_by": lambda events, j: events[j]["reconsume_times"] + 1,
        "_fallback_that_stored": lambda events, group, via, r, before_seq: paired(
            events, group, {"level": 0, "seq": -1}, r, before_seq),
    }


def excuses() -> dict[str, tuple[object, str, object]]:
    """Name -> (its owner, the attribute, what answers without it): every bool predicate of model.invariants
    (answering False) and the rules of ``_rules``."""
    import model.invariants as inv

    out = {}
    for owner, prefix in ((inv, ""), (inv._Index, "_Index.")):
        for name, fn in vars(owner).items():
            if (inspect.isfunction(fn) and fn.__module__ == inv.__name__
                    and fn.__annotations__.get("return") in ("bool", bool)):
                out[prefix + name] = (owner, name, lambda *args, **kwargs: False)
    for name, neutral in _rules(inv).items():
        out[name] = (inv, name, neutral)
    return out


@contextmanager
def _patched(owner, name: str, replacement):
    original = vars(owner)[name]
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _watching(fn, neutral, fired: set, key: str):
    """``fn``, noting ``key`` in ``fired`` once it answers other than its neutral would (``_copy_of``: once two
    consumes are one copy): only then can taking it out change a verdict."""
    seen: dict = {}

    def watched(*args, **kwargs):
        answer = fn(*args, **kwargs)
        if key == "_copy_of":
            if seen.setdefault(answer, args[0]["seq"]) != args[0]["seq"]:
                fired.add(key)
        elif answer != neutral(*args, **kwargs):
            fired.add(key)
        return answer

    return watched


def like_weights(seed: int) -> dict[str, float]:
    """Switch -> chance: generated scenario ``seed``'s switches likely, the others rare."""
    from scenarios.explore import FAULTS, FEATURES, switches

    on = switches(seed)
    return {name: 0.85 if name in on else 0.1 for name in (*FEATURES, *FAULTS)}


def leans_of(job: tuple[int, bool, dict | None]) -> tuple[int, dict[str, list[str]], str]:
    """(seed, excuse -> the invariants that fail without it, what failed when the run itself does not hold)."""
    from scenarios.explore import generate
    from sim.run import run_scenario

    seed, combos, weights = job
    try:
        result = run_scenario(generate(seed, combos=combos, weights=weights), seed, shuffle_ties=True)
    except Exception as error:  # a crash of the simulator: explore_rate.py's finding, not an excuse's
        return seed, {}, f"simulator crashed: {error!r}"
    broken = [k for k, v in result.summary["invariants"].items() if not v["holds"]]
    if result.summary.get("simulator_error") or broken:
        return seed, {}, result.summary.get("simulator_error") or ", ".join(broken)
    return seed, leans_of_run(result), ""


def leans_of_run(result) -> dict[str, list[str]]:
    """Excuse -> the invariants that fail when it is taken out of the check of ``result`` (a holding run)."""
    from model.invariants import check_events
    from sim.checking import context_of

    events = result.history.events
    ctx = context_of(result.world, events)
    table = excuses()
    fired: set[str] = set()
    originals = {key: vars(owner)[name] for key, (owner, name, _) in table.items()}
    try:
        for key, (owner, name, neutral) in table.items():
            setattr(owner, name, _watching(originals[key], neutral, fired, key))
        check_events(events, ctx)
    finally:
        for key, (owner, name, _) in table.items():
            setattr(owner, name, originals[key])

    def failed_now(context=ctx) -> list[str]:
        return [k for k, v in check_events(events, context).items() if not v["holds"]]

    leans = {}
    for key in sorted(fired):
        owner, name, neutral = table[key]
        with _patched(owner, name, neutral):
            leans[key] = failed_now()
    other_era = "4.9.8" if ctx.era == "5.3.3" else "5.3.3"
    leans[f"era {ctx.era} (as {other_era})"] = failed_now(dataclasses.replace(ctx, era=other_era))
    return {key: failed for key, failed in leans.items() if failed}


def main() -> None:
    argv = sys.argv[1:]
    like = int(argv.pop(argv.index("--like") + 1)) if "--like" in argv else None
    args = [a for a in argv if not a.startswith("--")]
    combos = "--combos" in argv
    weights = like_weights(like) if like is not None else None
    n = int(args[0]) if args else 100
    base = int(args[1]) if len(args) > 1 else 1
    procs = int(args[2]) if len(args) > 2 else os.cpu_count() or 1
    bar = progress_bar(total=n, desc="generated runs", unit="run")
    keys = [*excuses(), "era 4.9.8 (as 5.3.3)", "era 5.3.3 (as 4.9.8)"]
    witnesses: dict[str, list[tuple[int, list[str]]]] = {key: [] for key in keys}
    failing = []
    with Pool(procs) as pool:
        for seed, leans, failed in pool.imap_unordered(leans_of, [(s, combos, weights) for s in range(base, base + n)]):
            bar.update(1)
            if failed:
                failing.append((seed, failed))
            for key, invariants in leans.items():
                witnesses[key].append((seed, invariants))
    bar.close()
    held = n - len(failing)
    for key, seen in sorted(witnesses.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(f"{s} ({'+'.join(inv)})" for s, inv in sorted(seen)[:SHOWN_SEEDS])
        print(f"{key}: {len(seen)} of {held} runs" + (f": {shown}" if seen else ""))
    for seed, failed in sorted(failing):
        print(f"seed {seed} does not hold: {failed}")
    print(f"{held} of {n} runs held (seeds {base}..{base + n - 1}{', combos' if combos else ''}"
          f"{f', like {like}: weights {weights}' if weights else ''})")


if __name__ == "__main__":
    main()
