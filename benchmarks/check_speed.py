"""States per CPU second and bytes per state of the model checker, on one tree or two (before/after).

    .venv/bin/python benchmarks/check_speed.py [--tree DIR]... [--only m1c1]... [--seconds S] [--repeat N]

Why: the machine is shared, so wall time wanders; comparing two checkouts in one session, alternating
runs in fresh processes, and reading CPU seconds is what makes a before/after claim honest. Bytes per
state are the checker's own columns (fingerprint table, parent pointers, per-state flags, packed
frontier), as ``CheckResult.store_mb`` counts them, over the states explored.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = dict(levels=2, max_retries=1, put_failures=1, persist_points=1)
CONFIGS = {"m1c1": dict(BASE, messages=1, crashes=1), "m2c0": dict(BASE, messages=2, crashes=0),
           "m2c1": dict(BASE, messages=2, crashes=1), "m3c1": dict(BASE, messages=3, crashes=1)}


def run_one(spec: dict) -> dict:
    """Check one configuration in this process (the tree is first on sys.path)."""
    import resource

    sys.path.insert(0, spec["tree"])
    from model.checker import check
    from model.spec import ModelConfig

    r = check(ModelConfig(**spec["bounds"]), max_seconds=spec.get("seconds"), memory_mb=spec.get("memory_mb"))
    st = r.stats()
    return {"verdict": r.verdict(), "states": r.states, "edges": r.edges, "depth": r.depth,
            "seconds": round(r.seconds, 2), "cpu_seconds": round(r.cpu_seconds, 2),
            "states_per_s": round(r.states / r.seconds) if r.seconds else 0,
            "states_per_cpu_s": round(r.states / r.cpu_seconds) if r.cpu_seconds else 0,
            "store_bytes_per_state": round(st["store_mb"] * 2**20 / max(r.states, 1), 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def store_bytes(states: int) -> dict:
    """Bytes a state of the visited set and the parent columns, as tracemalloc sees them, for ``states``
    distinct 64-bit fingerprints (a deterministic stream; the store does not care where they come from)."""
    import random
    import tracemalloc
    from array import array

    sys.path.insert(0, ROOT)
    from model.statestore import Depths, FingerprintSet

    rng = random.Random(15)
    tracemalloc.start()
    seen, parent, action, depth = FingerprintSet(), array("i"), array("H"), Depths()
    for sid in range(states):
        seen.get_or_add(rng.getrandbits(64) - 2**63 or 1, sid)
        parent.append(sid // 3)
        action.append(sid % 300)
        depth.append(sid.bit_length())
    now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"states": states, "bytes_per_state": round(now / states, 2), "peak_bytes_per_state": round(peak / states, 2),
            "table_slots": seen.capacity, "load": round(states / seen.capacity, 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", action="append", help="a checkout to measure (default: this one)")
    p.add_argument("--only", action="append", choices=sorted(CONFIGS))
    p.add_argument("--seconds", type=float, default=600.0)
    p.add_argument("--memory-mb", type=float, default=2048.0)
    p.add_argument("--repeat", type=int, default=1, help="alternate the trees this many times")
    p.add_argument("--store-only", type=int, default=None, metavar="N",
                   help="only measure the store's bytes a state (tracemalloc) for N fingerprints")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.store_only is not None:
        print(json.dumps(store_bytes(args.store_only)))
        return 0
    if args.one is not None:
        print(json.dumps(run_one(json.loads(args.one))))
        return 0
    trees = [os.path.abspath(t) for t in (args.tree or [ROOT])]
    for name in args.only or ["m1c1", "m2c0"]:
        for _ in range(args.repeat):
            for tree in trees:
                spec = {"tree": tree, "bounds": CONFIGS[name], "seconds": args.seconds, "memory_mb": args.memory_mb}
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", json.dumps(spec)],
                                     capture_output=True, text=True, cwd=tree, check=True)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                print(json.dumps({"config": name, "tree": tree, **row, "load": round(os.getloadavg()[0], 1)}),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
