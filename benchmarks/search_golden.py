"""What a search finds, recorded once and compared later: the proof that a speed-up changed no result.

    .venv/bin/python benchmarks/search_golden.py --record tests/model/search_golden.json
    .venv/bin/python benchmarks/search_golden.py --compare tests/model/search_golden.json [--slow]

Why: the checker's hot path (successors, the rank check, the safety check, the fingerprint store) is tuned
for speed, and every such change must leave the search exactly as it was: per case the state count, the
edge count, the depth, the generated successors, the terminal states, the verdict and the printed
counterexample (``Violation.format()``, the whole trace and its last state). tests/model/test_search_golden.py
compares the same records. The cases: the small clean configurations and every model mutant
(tests/model/test_model_check.py), the default bounds m1/c1 under every mutant, m2/c0, m1/c0 and era 4.9.8,
each with the reductions on (the default) and off, and a few option variants (edge store, no symmetry, no
fairness, partial-order reduction, no tick collapse).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from model.checker import check  # noqa: E402
from model.spec import ERA_4, MUTANTS, ModelConfig  # noqa: E402

_B = dict(levels=2, max_retries=1, put_failures=1, persist_points=1)
_SMALL = [  # tests/model/test_model_check.py's CLEAN, by bounds
    dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, persist_points=0),
    dict(messages=1, levels=3, max_retries=2, crashes=0, put_failures=1, persist_points=1),
    dict(messages=2, levels=2, max_retries=1, crashes=0, put_failures=1, persist_points=1),
    dict(messages=1, levels=2, max_retries=1, crashes=1, put_failures=0, persist_points=1),
    dict(messages=2, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1),
    dict(messages=3, levels=1, max_retries=0, crashes=0, put_failures=1, persist_points=1, send_levels=[0, 1, 1]),
    dict(messages=2, levels=1, max_retries=0, crashes=1, put_failures=1, persist_points=1, era=ERA_4),
    dict(messages=1, levels=1, max_retries=1, crashes=0, put_failures=None, persist_points=0),
]
_MUTANT_BOUNDS = {  # tests/model/test_model_check.py's MUTANT_CASES, by bounds
    "skip_failed_delivery": dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=1, persist_points=0),
    "offset_from_task_start": dict(messages=2, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1,
                                   crash_kinds=["process"]),
    "no_persist_at_shutdown": dict(messages=1, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=0,
                                   crash_kinds=["graceful"]),
    "persist_before_load": dict(messages=1, levels=1, max_retries=0, crashes=1, put_failures=0, persist_points=1,
                                crash_kinds=["process"]),
    "drop_on_exception": dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=1, persist_points=0,
                              era=ERA_4),
    "dlq_keeps_delay": dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, persist_points=0),
    "dlq_threshold_gt": dict(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, persist_points=0),
    "retry_level_2_plus_r": dict(messages=1, levels=3, max_retries=1, crashes=0, put_failures=0, persist_points=0),
    "commit_on_failed_send_back": dict(messages=1, levels=1, max_retries=1, crashes=0, put_failures=1,
                                       persist_points=0),
    "commit_max_offset": dict(messages=1, levels=1, max_retries=1, crashes=0, put_failures=1, persist_points=0,
                              send_levels=[0]),
}
_OFF = {"retire": False, "compact": False}


def _era(name: str | None) -> str:
    return ERA_4 if name == "drop_on_exception" else "5.3.3"


def cases() -> list[tuple[str, dict, dict, bool]]:
    """(name, bounds, check options, slow) of every recorded search."""
    out: list[tuple[str, dict, dict, bool]] = []
    for i, bounds in enumerate(_SMALL):
        out.append((f"small{i}", bounds, {}, False))
        out.append((f"small{i}-off", bounds, _OFF, False))
    for name, bounds in sorted(_MUTANT_BOUNDS.items()):
        out.append((f"mutant-{name}", dict(bounds, mutants=[name]), {}, False))
        out.append((f"mutant-{name}-off", dict(bounds, mutants=[name]), _OFF, False))
    for name in [None, *sorted(MUTANTS)]:  # the default bounds m1/c1 under every mutant
        bounds = dict(_B, messages=1, crashes=1, mutants=[name] if name else [], era=_era(name))
        out.append((f"m1c1-{name or 'clean'}", bounds, {}, False))
        out.append((f"m1c1-{name or 'clean'}-off", bounds, _OFF, True))
    for name in [None, *sorted(MUTANTS)]:  # two messages of one level (symmetry at work) under every mutant
        bounds = dict(_B, messages=2, crashes=1, send_levels=[1, 1], mutants=[name] if name else [], era=_era(name))
        out.append((f"m2c1-11-{name or 'clean'}", bounds, {"max_states": 30_000},
                    name in (None, "retry_level_2_plus_r")))
    out += [
        ("m1c1-era4", dict(_B, messages=1, crashes=1, era=ERA_4), {}, False),
        ("m1c1-era4-off", dict(_B, messages=1, crashes=1, era=ERA_4), _OFF, True),
        ("m1c0", dict(_B, messages=1, crashes=0), {}, False),
        ("m1c0-off", dict(_B, messages=1, crashes=0), _OFF, False),
        ("m1c0-era4", dict(_B, messages=1, crashes=0, era=ERA_4), {}, False),
        ("m2c0", dict(_B, messages=2, crashes=0), {}, False),
        ("m2c0-off", dict(_B, messages=2, crashes=0), _OFF, False),
        ("m2c0-era4", dict(_B, messages=2, crashes=0, era=ERA_4), {}, False),
        ("m2c0-nosym", dict(_B, messages=2, crashes=0), {"symmetry": False}, False),
        ("m2c0-11", dict(_B, messages=2, crashes=0, send_levels=[1, 1]), {}, False),
        ("m2c0-11-nosym", dict(_B, messages=2, crashes=0, send_levels=[1, 1]), {"symmetry": False}, False),
        ("m2c0-por", dict(_B, messages=2, crashes=0), {"por": True}, False),
        ("m2c0-noticks", dict(_B, messages=2, crashes=0), {"collapse_ticks": False}, False),
        ("m1c1-por", dict(_B, messages=1, crashes=1), {"por": True}, False),
        ("m1c1-retire", dict(_B, messages=1, crashes=1), {"compact": False}, False),
        ("m1c1-edges", dict(_B, messages=1, crashes=1), {"store_edges": True}, True),
        ("unbounded-nofair", _SMALL[7], {"fairness": False}, False),
        ("m2c1-cap", dict(_B, messages=2, crashes=1), {"max_states": 40_000}, True),
    ]
    return out


def record(bounds: dict, options: dict) -> dict:
    """What one search found."""
    cfg = ModelConfig(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in bounds.items()})
    r = check(cfg, **options)
    v = r.violation
    return {"states": r.states, "edges": r.edges, "depth": r.depth, "generated": r.graph.generated,
            "terminal": sum(r.graph.terminal), "verdict": r.verdict(), "stop": r.stop,
            "por_pruned": r.graph.por_pruned, "acyclic": r.graph.acyclic,
            "violation": v and {"prop": v.prop, "kind": v.kind, "text": v.format(),
                                "path": v.path_ids, "cycle": v.cycle_ids}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--record", metavar="FILE")
    p.add_argument("--compare", metavar="FILE")
    p.add_argument("--slow", action="store_true", help="compare the slow cases too")
    args = p.parse_args(argv)
    if args.record:
        out = {}
        for name, bounds, options, slow in cases():
            out[name] = {"bounds": bounds, "options": options, "slow": slow, "found": record(bounds, options)}
            print(name, out[name]["found"]["states"], out[name]["found"]["verdict"], flush=True)
        with open(args.record, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
        return 0
    if args.compare:
        with open(args.compare, encoding="utf-8") as f:
            want = json.load(f)
        bad = 0
        for name, case in want.items():
            if case["slow"] and not args.slow:
                continue
            got = record(case["bounds"], case["options"])
            same = got == case["found"]
            bad += not same
            print(f"{'same' if same else 'DIFFERENT'} {name}", flush=True)
        print(f"{bad} different")
        return 1 if bad else 0
    p.error("give --record or --compare")
    return 2


if __name__ == "__main__":
    sys.exit(main())
