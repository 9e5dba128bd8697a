"""Where a dense lifecycle's CPU time goes, against the budget ``rmqsim bench``'s goal ratio leaves it.

    .venv/bin/python benchmarks/dense_breakdown.py [--messages N] [--goal-ratio R]

Runs the bench's standard scenario unchecked with the store's entry points (put, reput, reads) and the
listeners they call out to (the history recorder, the broker's long-poll wake-up) timed on CPU, exclusive of
each other; then checks, stats and hashes the history apart. Prints microseconds per consumed lifecycle for
each part, the store-bound ceiling measured here the way ``rmqsim bench`` measures it, and the budget a
lifecycle has at ``--goal-ratio`` of that ceiling (issue 14: 0.33). The timers add about a microsecond per
call; the parts are for comparing with each other, the bench gives the headline.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from sim.bench import lifecycle_ceiling, standard_scenario, store_rates
from sim.checking import check_run
from sim.history_recorder import HistoryRecorder
from sim.run import run_scenario
from sim.stats import run_stats
from store.broker.broker_controller import BrokerController
from store.disk import MemoryDisk
from store.message_store import DefaultMessageStore

# (class, method, part): each call's time goes to its part, minus the time of timed calls nested in it
TIMED = [
    (DefaultMessageStore, "put_message", "store: put"),
    (DefaultMessageStore, "do_reput", "store: reput and dispatch"),
    (DefaultMessageStore, "get_message", "store: reads (pull, delivery)"),
    (DefaultMessageStore, "look_message_by_offset", "store: reads (pull, delivery)"),
    (HistoryRecorder, "on_store", "history: store events (a put's listener)"),
    (BrokerController, "_message_arriving", "broker: long-poll wake-up (a dispatch's listener)"),
]


def install(exclusive: Counter, calls: Counter, timed=TIMED, clock=time.process_time) -> list:
    """Wrap the ``timed`` methods to add each call's exclusive seconds on ``clock`` to ``exclusive[part]``;
    returns what ``uninstall`` puts back."""
    nested = [0.0]  # CPU seconds of timed calls made inside the one running now

    def wrap(fn, part):
        def timed(*args, **kwargs):
            outer_nested, nested[0] = nested[0], 0.0
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = clock() - t0
                exclusive[part] += spent - nested[0]
                calls[part] += 1
                nested[0] = outer_nested + spent
        return timed

    saved = []
    for cls, name, part in timed:
        fn = cls.__dict__[name]
        saved.append((cls, name, fn))
        setattr(cls, name, wrap(fn, part))
    return saved


def uninstall(saved: list) -> None:
    for cls, name, fn in saved:
        setattr(cls, name, fn)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--goal-ratio", type=float, default=0.33)
    args = parser.parse_args()
    exclusive, calls = Counter(), Counter()
    saved = install(exclusive, calls)
    try:
        t0 = time.process_time()
        result = run_scenario(standard_scenario(args.messages), check=False)
        run_cpu = time.process_time() - t0
    finally:
        uninstall(saved)
    history, world = result.history, result.world
    after = {}
    for part, fn in (("checks", lambda: check_run(history, world)), ("stats", lambda: run_stats(history, world)),
                     ("history hash", history.sha256)):
        t0 = time.process_time()
        fn()
        after[part] = time.process_time() - t0
    consumed = result.summary["stats"]["consumed"]
    # run_scenario's own stats and hash are inside run_cpu: the rest of the simulation is what is left of it
    rest = run_cpu - sum(exclusive.values()) - after["stats"] - after["history hash"]
    rates = store_rates(MemoryDisk(), clock=time.process_time)
    ceiling = lifecycle_ceiling(rates["puts_per_s"], rates["dispatched_units_per_s"])
    per = {part: round(1e6 * s / consumed, 1) for part, s in sorted(exclusive.items(), key=lambda kv: -kv[1])}
    per["simulation: the rest (clients, broker processors, scheduler, other history)"] = round(1e6 * rest / consumed, 1)
    for part, s in after.items():
        per[part] = round(1e6 * s / consumed, 1)
    print(json.dumps({
        "messages": args.messages, "consumed": consumed, "calls": dict(calls),
        "us_per_lifecycle": per, "us_per_lifecycle_total": round(sum(per.values()), 1),
        "store_puts_per_cpu_s": rates["puts_per_s"], "store_dispatches_per_cpu_s": rates["dispatched_units_per_s"],
        "ceiling_us_per_lifecycle": round(1e6 / ceiling, 1),
        f"budget_us_per_lifecycle_at_{args.goal_ratio}": round(1e6 / (args.goal_ratio * ceiling), 1),
    }, indent=1))


if __name__ == "__main__":
    main()
