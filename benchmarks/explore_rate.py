"""How often the gate's generated scenarios fail on the clean build: the number behind `.ci/run`'s `--explore`.

Runs seeds [SEED_BASE, SEED_BASE + N) as `rmqsim gate --explore` does (scenarios.explore.generate with the triaged
shapes, ties shuffled), on PROCS processes, and prints each failing seed with the invariants it breaks (or the
simulator error), then the count. A failing seed is a finding to triage (tests/sim/test_explore_triage.py).
Usage: python benchmarks/explore_rate.py [N] [SEED_BASE] [PROCS]
"""

from __future__ import annotations

import os
import sys
from multiprocessing import Pool

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scenarios.progress import progress_bar  # noqa: E402


def failure_of(seed: int) -> tuple[int, str]:
    """(seed, what failed: the broken invariants, a simulator error, or "" when the run holds)."""
    from scenarios.explore import generate
    from sim.run import run_scenario

    try:
        result = run_scenario(generate(seed, combos=False), seed, shuffle_ties=True)
    except Exception as error:  # a crash of the simulator is a finding too
        return seed, f"simulator crashed: {error!r}"
    error = result.summary.get("simulator_error")
    if error:
        return seed, f"simulator error: {error}"
    return seed, ", ".join(k for k, v in result.summary["invariants"].items() if not v["holds"])


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    base = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    procs = int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count() or 1
    bar = progress_bar(total=n, desc="generated runs", unit="run")
    failing = []
    with Pool(procs) as pool:
        for seed, what in pool.imap_unordered(failure_of, range(base, base + n)):
            bar.update(1)
            if what:
                failing.append((seed, what))
    bar.close()
    for seed, what in sorted(failing):
        print(f"seed {seed}: {what}")
    print(f"{len(failing)} of {n} generated runs failing (seeds {base}..{base + n - 1})")


if __name__ == "__main__":
    main()
