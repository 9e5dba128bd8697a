"""The model checker: distinct states per second, and the largest configuration checked within a budget.

    .venv/bin/python benchmarks/model_bench.py [--seconds 60] [--memory-mb 2048] [--json]

1. Throughput: one fixed configuration (1 message, 2 levels, 1 retry, 1 crash, 1 put failure,
   1 persist point: about 72 000 states), with and without symmetry reduction: states/s on the wall
   clock and per CPU second (the CPU figure is what to compare when the machine is shared).
2. Capacity: two ladders of growing configurations, each run in a fresh process with the time and
   memory budget; the largest rung that completes is the answer, with and without symmetry.
   Ladder "no-crash": N messages all at delay level 1, 2 levels, 1 retry, 1 put failure, 1 persist
   point. Ladder "one-crash": N messages at level 1, 1 level, no retry, 1 crash, 1 put failure,
   1 persist point. Messages with the same level and no history are what symmetry merges.

Wall time is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THROUGHPUT = dict(messages=1, levels=2, max_retries=1, crashes=1, put_failures=1, persist_points=1)
LADDERS = {
    "no-crash": lambda n: dict(messages=n, levels=2, max_retries=1, crashes=0, put_failures=1, persist_points=1,
                               send_levels=[1] * n),
    "one-crash": lambda n: dict(messages=n, levels=1, max_retries=0, crashes=1, put_failures=1, persist_points=1,
                                send_levels=[1] * n),
}


def run_one(spec: dict) -> dict:
    """Check one configuration in this process; the numbers as a dict."""
    sys.path.insert(0, ROOT)
    from model.checker import check
    from model.spec import ModelConfig

    bounds = dict(spec["bounds"])
    bounds["send_levels"] = tuple(bounds.get("send_levels") or ())
    result = check(ModelConfig(**bounds), symmetry=spec["symmetry"], max_seconds=spec.get("seconds"),
                   memory_mb=spec.get("memory_mb"))
    return {"bounds": spec["bounds"], "symmetry": spec["symmetry"], "verdict": result.verdict(),
            "stop": result.stop, "states": result.states, "edges": result.edges, "depth": result.depth,
            "seconds": round(result.seconds, 2), "cpu_seconds": round(result.cpu_seconds, 2),
            "states_per_s": round(result.states / result.seconds) if result.seconds else 0,
            "states_per_cpu_s": round(result.states / result.cpu_seconds) if result.cpu_seconds else 0,
            "peak_rss_mb": round(result.peak_rss_mb)}


def in_fresh_process(spec: dict) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", json.dumps(spec)],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ladder(name: str, symmetry: bool, seconds: float, memory_mb: float, max_n: int, log) -> list[dict]:
    rows = []
    for n in range(1, max_n + 1):
        row = in_fresh_process({"bounds": LADDERS[name](n), "symmetry": symmetry, "seconds": seconds,
                                "memory_mb": memory_mb})
        row["ladder"], row["n"] = name, n
        rows.append(row)
        log(row)
        if row["verdict"] != "ok":
            break
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--memory-mb", type=float, default=2048.0)
    parser.add_argument("--max-n", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="print only the JSON summary")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(run_one(json.loads(args.one))))
        return 0

    def log(row: dict) -> None:
        if not args.json:
            mode = "sym  " if row["symmetry"] else "nosym"
            print(f"  {row.get('ladder', 'throughput'):10} n={row.get('n', '-'):<2} {mode} {row['verdict']:10} "
                  f"{row['states']:>9} states {row['seconds']:>7.1f} s  {row['states_per_s']:>6} st/s wall  "
                  f"{row['states_per_cpu_s']:>6} st/cpu-s  {row['peak_rss_mb']:>5} MiB", flush=True)

    summary: dict = {"cpus": os.cpu_count(), "budget": {"seconds": args.seconds, "memory_mb": args.memory_mb},
                     "throughput": [], "ladders": {}}
    if not args.json:
        print(f"throughput on {THROUGHPUT}:")
    for symmetry in (True, False):
        row = in_fresh_process({"bounds": THROUGHPUT, "symmetry": symmetry})
        summary["throughput"].append(row)
        log(row)
    for name in LADDERS:
        if not args.json:
            print(f"ladder {name} (budget {args.seconds:.0f} s, {args.memory_mb:.0f} MiB):")
        entry = {}
        for symmetry in (True, False):
            rows = ladder(name, symmetry, args.seconds, args.memory_mb, args.max_n, log)
            done = [r for r in rows if r["verdict"] == "ok"]
            entry["symmetry" if symmetry else "no_symmetry"] = {
                "largest_n": done[-1]["n"] if done else 0, "largest": done[-1] if done else None, "rows": rows}
        both = min(entry["symmetry"]["largest_n"], entry["no_symmetry"]["largest_n"])
        if both:
            with_sym = entry["symmetry"]["rows"][both - 1]["states"]
            without = entry["no_symmetry"]["rows"][both - 1]["states"]
            entry["reduction_at_n"] = {"n": both, "states_with": with_sym, "states_without": without,
                                       "factor": round(without / with_sym, 2)}
        summary["ladders"][name] = entry
    if args.json:
        print(json.dumps(summary))
    else:
        for name, entry in summary["ladders"].items():
            red = entry.get("reduction_at_n") or {}
            print(f"{name}: largest N within budget: {entry['symmetry']['largest_n']} with symmetry, "
                  f"{entry['no_symmetry']['largest_n']} without; at N={red.get('n')}: {red.get('states_without')} "
                  f"-> {red.get('states_with')} states (x{red.get('factor')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
