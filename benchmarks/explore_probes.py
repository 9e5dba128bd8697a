"""Probe coverage of N explored runs, unsteered and steered (issue 17, part 4): the share of the probe
catalogue hit, and the probes each leaves unhit. Usage: python benchmarks/explore_probes.py [N] [SEED_BASE]"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scenarios.progress import progress_bar  # noqa: E402
from scenarios.steer import explore_coverage  # noqa: E402
from store.probes import CATALOGUE, never_hit  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    base = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    for steer in (False, True):
        bar = progress_bar(total=n, desc="steered" if steer else "unsteered", unit="run")
        hits, rows = explore_coverage(n, seed_base=base, steer=steer, on_run=lambda _s, bar=bar: bar.update(1))
        bar.close()
        missed = never_hit(hits)
        rare = sorted((sum(p in r["probes"] for r in rows), p) for p in CATALOGUE if p not in missed)
        findings = [r["seed"] for r in rows if r["failed"]]
        print(f"{'steered' if steer else 'unsteered'}: {len(CATALOGUE) - len(missed)} of {len(CATALOGUE)} probes hit "
              f"by {n} runs (seeds {base}..{base + n - 1}); clean-build failures: {findings or 'none'}")
        print(f"  rarest: {', '.join(f'{p} ({k} runs)' for k, p in rare[:8])}")
        print(f"  never hit: {', '.join(missed) or 'none'}")


if __name__ == "__main__":
    main()
