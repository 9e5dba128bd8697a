"""Where a dense lifecycle's CPU time goes, against the budget ``rmqsim bench``'s goal ratio leaves it.

    .venv/bin/python benchmarks/dense_breakdown.py [--messages N] [--goal-ratio R]

Runs the bench's standard scenario unchecked with the store's entry points (put, reput, reads) and the
listeners they call out to (the history recorder, the broker's long-poll wake-up) timed on CPU, exclusive of
each other; then checks, stats and hashes the history apart. Prints microseconds per consumed lifecycle for
each part, the store-bound ceiling measured here the way ``rmqsim bench`` measures it (one reput over all the
puts), the same loop dispatched one message at a time as a run does, the budget a lifecycle has at
``--goal-ratio`` of the ceiling (issue 14: 0.33), and the simulation's CPU (without checks) over the store's own
calls in the run (the issue's title: within 3x). The timers add about a microsecond per call; the parts are for
comparing with each other, the bench gives the headline.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from sim.bench import bare_store, lifecycle_ceiling, standard_scenario, store_rates
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


def one_at_a_time_us(messages: int = 100_000, clock=time.process_time) -> float:
    """The ceiling's loop (sim/bench.py store_rates, on the same ``bare_store``) with each put dispatched before the
    next, as in a run, where the reput steps after every put, instead of one reput over all of them: CPU
    microseconds for a lifecycle's 2 puts and 2 dispatches. What the batched ceiling's amortisation hides."""
    store, msgs = bare_store(MemoryDisk(), messages)
    t0 = clock()
    for i, msg in enumerate(msgs):
        if i % 1000 == 0:
            store.clock.advance(1)
        store.put_message(msg)
        store.do_reput()
    spent = clock() - t0
    store.shutdown()
    return 2 * 1e6 * spent / messages


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
    one_at_a_time = one_at_a_time_us()
    per = {part: round(1e6 * s / consumed, 1) for part, s in sorted(exclusive.items(), key=lambda kv: -kv[1])}
    in_run_store = sum(exclusive[part] for part in exclusive if part.startswith("store:"))
    per["simulation: the rest (clients, broker processors, scheduler, other history)"] = round(1e6 * rest / consumed, 1)
    for part, s in after.items():
        per[part] = round(1e6 * s / consumed, 1)
    print(json.dumps({
        "messages": args.messages, "consumed": consumed, "calls": dict(calls),
        "us_per_lifecycle": per, "us_per_lifecycle_total": round(sum(per.values()), 1),
        "store_puts_per_cpu_s": rates["puts_per_s"], "store_dispatches_per_cpu_s": rates["dispatched_units_per_s"],
        "ceiling_us_per_lifecycle": round(1e6 / ceiling, 1),
        "ceiling_one_at_a_time_us_per_lifecycle": round(one_at_a_time, 1),
        # the title, "within 3x of the store's own work", measured against the store's calls in the run
        "simulation_over_in_run_store_work": round((run_cpu - after["stats"] - after["history hash"]) / in_run_store,
                                                   2),
        f"budget_us_per_lifecycle_at_{args.goal_ratio}": round(1e6 / (args.goal_ratio * ceiling), 1),
    }, indent=1))


if __name__ == "__main__":
    main()
