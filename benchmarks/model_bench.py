"""The model checker: states, edges, states/s, peak memory and the symmetry reduction, per configuration.

    .venv/bin/python benchmarks/model_bench.py [--only NAME]... [--seconds 1800] [--memory-mb 2048]
        [--reduce off|retire|compact]... [--json]

Each configuration runs in a fresh process (peak RSS is that process's ``ru_maxrss``), with symmetry
reduction and, when ``--no-symmetry`` is given too, without it (the reduction factor is the ratio of
the two state counts); with model/retire.py's reductions as ``--reduce`` says (compact by default; give
``--reduce off --reduce compact`` for the retire factor). The machine is usually shared: states per CPU second is the figure to compare,
and the load average is printed with every row. Wall time is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = dict(levels=2, max_retries=1, put_failures=1, persist_points=1)
CONFIGS = {  # the table of issue 15: rmqsim check --messages M --levels 2 --max-retries 1 --crashes C
    "m1c1": dict(BASE, messages=1, crashes=1),
    "m2c0": dict(BASE, messages=2, crashes=0),
    "m2c1": dict(BASE, messages=2, crashes=1),
    "m3c1": dict(BASE, messages=3, crashes=1),
}


def run_one(spec: dict) -> dict:
    """Check one configuration in this process; the numbers as a dict."""
    import resource

    sys.path.insert(0, ROOT)
    from model.checker import check
    from model.spec import ModelConfig

    reduce = spec.get("reduce", "compact")  # model/retire.py: "off", "retire" or "compact" (the default)
    result = check(ModelConfig(**spec["bounds"]), symmetry=spec["symmetry"], max_seconds=spec.get("seconds"),
                   memory_mb=spec.get("memory_mb"), retire=reduce != "off", compact=reduce == "compact")
    st = result.stats()
    return {"bounds": spec["bounds"], "symmetry": spec["symmetry"], "reduce": reduce, "verdict": result.verdict(),
            "stop": result.stop, "states": result.states, "edges": result.edges, "depth": result.depth,
            "seconds": round(result.seconds, 1), "cpu_seconds": round(result.cpu_seconds, 1),
            "liveness_seconds": st["liveness_seconds"],
            "states_per_s": round(result.states / result.seconds) if result.seconds else 0,
            "states_per_cpu_s": round(result.states / result.cpu_seconds) if result.cpu_seconds else 0,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "collision_probability": st["fingerprint_collision_probability"], "load": os.getloadavg()[0]}


def in_fresh_process(spec: dict) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", json.dumps(spec)],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(CONFIGS), help="only these configurations")
    parser.add_argument("--seconds", type=float, default=1800.0)
    parser.add_argument("--memory-mb", type=float, default=2048.0)
    parser.add_argument("--no-symmetry", action="store_true", help="also run without symmetry (reduction factor)")
    parser.add_argument("--reduce", action="append", choices=("off", "retire", "compact"),
                        help="model/retire.py's reductions: off, retire (persisted offsets) or compact (also the "
                             "processed queue prefixes, the default); repeat to compare")
    parser.add_argument("--json", action="store_true", help="print only the JSON summary")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(run_one(json.loads(args.one))))
        return 0
    rows = []
    for name in args.only or list(CONFIGS):
        for symmetry, reduce in [(sym, red) for sym in ((True, False) if args.no_symmetry else (True,))
                                 for red in args.reduce or ["compact"]]:
            row = in_fresh_process({"bounds": CONFIGS[name], "symmetry": symmetry, "seconds": args.seconds,
                                    "memory_mb": args.memory_mb, "reduce": reduce})
            row["name"] = name
            rows.append(row)
            if not args.json:
                print(f"{name} {'sym  ' if symmetry else 'nosym'} {reduce:8} {row['verdict']:10} "
                      f"{row['states']:>10} states {row['edges']:>10} edges depth {row['depth']:>3} {row['seconds']:>8.1f} s ({row['cpu_seconds']:.1f} cpu) "
                      f"{row['states_per_s']:>6} st/s {row['states_per_cpu_s']:>6} st/cpu-s "
                      f"{row['peak_rss_mb']:>5} MiB  load {row['load']:.1f}", flush=True)
    for name in {r["name"] for r in rows}:
        pair = {r["symmetry"]: r for r in rows if r["name"] == name and r["reduce"] == "compact"}
        if len(pair) == 2 and pair[True]["verdict"] == pair[False]["verdict"] == "ok":
            pair[True]["reduction_factor"] = round(pair[False]["states"] / pair[True]["states"], 2)
        by_reduce = {r["reduce"]: r for r in rows if r["name"] == name and r["symmetry"]}
        if "off" in by_reduce and "compact" in by_reduce:
            by_reduce["compact"]["retire_factor"] = round(by_reduce["off"]["states"] / by_reduce["compact"]["states"], 2)
    if args.json:
        print(json.dumps({"cpus": os.cpu_count(), "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
