"""Steering exploration toward rare coverage probes (issue 17, part 4).

A failure path that few runs reach is where a bug can hide longest. After each explored run the steering
records which switches (workload features and fault kinds, scenarios/explore.py) the scenario turned on and
which probes the run hit. A probe hit by at most ``RARE_RUNS`` of the runs so far is rare; each switch's chance
is then moved by how much more often it was on in the runs that hit a rare probe than in all runs. Probes never
hit can't be attributed to anything, so they do not steer (the gate lists them).

Deterministic: the weights for the next scenario are a function of the runs recorded before it, in order.
"""

from __future__ import annotations

from collections import Counter

from .explore import FAULT_CHANCE, FAULTS, FEATURE_CHANCE, FEATURES

WARMUP_RUNS = 10  # no steering before this many runs: too few to call a probe rare
RARE_RUNS = 2
GAIN = 0.6  # how far a switch's chance moves per unit of lift
MIN_CHANCE, MAX_CHANCE = 0.05, 0.9


class Steering:
    """Per-run (switches on, probes hit) and the weights they lead to."""

    def __init__(self) -> None:
        self.runs: list[tuple[frozenset[str], frozenset[str]]] = []

    def record(self, switches_on: frozenset[str], probes_hit) -> None:
        self.runs.append((frozenset(switches_on), frozenset(name for name, n in dict(probes_hit).items() if n)))

    def rare_probes(self) -> set[str]:
        runs_per_probe = Counter(p for _, probes in self.runs for p in probes)
        return {p for p, n in runs_per_probe.items() if n <= RARE_RUNS}

    def weights(self) -> dict[str, float]:
        """Switch name -> chance to be on for the next scenario ({} before the warm-up or without rare probes)."""
        if len(self.runs) < WARMUP_RUNS:
            return {}
        rare = self.rare_probes()
        rare_runs = [on for on, probes in self.runs if probes & rare]
        if not rare_runs:
            return {}
        out = {}
        for name in (*FEATURES, *FAULTS):
            base = FEATURE_CHANCE if name in FEATURES else FAULT_CHANCE
            lift = (sum(name in on for on in rare_runs) / len(rare_runs)
                    - sum(name in on for on, _ in self.runs) / len(self.runs))
            out[name] = round(min(MAX_CHANCE, max(MIN_CHANCE, base + GAIN * lift)), 4)
        return out


def explore_coverage(n: int, *, seed_base: int = 1, steer: bool = True, combos: bool = True,
                     on_run=None) -> tuple[dict[str, int], list[dict]]:
    """Run generated scenarios ``seed_base .. seed_base+n-1`` on the clean build, ties shuffled, steered or not.
    Returns (probe name -> hits over all runs, one row per run: seed, weights used, probes hit, failed)."""
    from sim.run import run_scenario

    from .explore import generate, switches

    steering = Steering()
    total: dict[str, int] = {}
    rows = []
    for seed in range(seed_base, seed_base + n):
        weights = steering.weights() if steer else {}
        summary = run_scenario(generate(seed, combos, weights), seed, shuffle_ties=True).summary
        probes = summary.get("probes", {})
        for name, hits in probes.items():
            total[name] = total.get(name, 0) + hits
        steering.record(switches(seed, weights), probes)
        rows.append({"seed": seed, "weights": weights, "probes": sorted(probes),
                     "failed": [k for k, v in summary["invariants"].items() if not v["holds"]]})
        if on_run is not None:
            on_run(seed)
    return total, rows
