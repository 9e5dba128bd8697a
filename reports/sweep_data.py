"""Reading a sweep directory (written by ``rmqsim sweep``) and summarising its rows with pandas."""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass

import pandas as pd

Z95 = 1.959963984540054
ERA_KEY = "broker.era"
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass
class SweepData:
    dir: str
    meta: dict
    runs: pd.DataFrame
    cells: pd.DataFrame | None
    marginals: pd.DataFrame | None

    @property
    def keys(self) -> list[str]:
        return list(self.meta.get("keys", []))

    def column(self, key: str) -> str:
        return self.meta["columns"][key]

    def values(self, key: str) -> list[str]:
        """The key's values in the sweep file's order, restricted to those present in the rows."""
        present = set(self.runs[self.column(key)].dropna().astype(str))
        ordered = [v for v in self.meta.get("values", {}).get(key, []) if v in present]
        return ordered + sorted(present - set(ordered))

    @property
    def ok(self) -> pd.DataFrame:
        """Rows of runs that finished (no error)."""
        return self.runs[self.runs["error"].isna()]

    @property
    def checked(self) -> bool:
        return bool(self.ok["checked"].fillna(False).astype(bool).any()) if len(self.runs) else False


def is_sweep_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "sweep.json")) and os.path.isdir(os.path.join(path, "runs"))


def load_sweep(path: str) -> SweepData:
    with open(os.path.join(path, "sweep.json"), encoding="utf-8") as f:
        meta = json.load(f)
    runs_dir = os.path.join(path, "runs")
    parts = sorted(n for n in os.listdir(runs_dir) if n.startswith("part-") and n.endswith(".parquet"))
    frames = [pd.read_parquet(os.path.join(runs_dir, n)) for n in parts]
    runs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["cell", "seed", "error"])
    runs = runs.drop_duplicates(subset=["cell", "seed"], keep="last").reset_index(drop=True)
    cells = marginals = None
    if os.path.isfile(os.path.join(path, "cells.parquet")):
        cells = pd.read_parquet(os.path.join(path, "cells.parquet"))
    if os.path.isfile(os.path.join(path, "marginals.parquet")):
        marginals = pd.read_parquet(os.path.join(path, "marginals.parquet"))
    return SweepData(path, meta, runs, cells, marginals)


def wilson(violations: int, n: int, z: float = Z95) -> tuple[float, float, float]:
    """Violation rate and its Wilson score interval (95%)."""
    if n <= 0:
        return (math.nan, math.nan, math.nan)
    p = violations / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return p, max(0.0, center - half), min(1.0, center + half)


def mean_ci(values) -> tuple[float, float, float, int]:
    """Mean and a normal-approximation 95% interval of the mean."""
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    n = len(vals)
    if n == 0:
        return (math.nan, math.nan, math.nan, 0)
    mean = sum(vals) / n
    if n == 1:
        return mean, mean, mean, 1
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    half = Z95 * sd / math.sqrt(n)
    return mean, mean - half, mean + half, n


def summarize(data: SweepData, keys: list[str]) -> pd.DataFrame:
    """One row per combination of ``keys``' values: violation rate (Wilson), duplicates, lateness p99, DLQ."""
    cols = [data.column(k) for k in keys]
    rows = []
    runs = data.runs
    groups = runs.groupby(cols, dropna=False, sort=False) if cols else [((), runs)]
    for values, frame in groups:
        values = values if isinstance(values, tuple) else (values,)
        ok = frame[frame["error"].isna()]
        checked = ok[ok["checked"].fillna(False).astype(bool)]
        violations = int((~checked["holds"].fillna(True).astype(bool)).sum())
        rate, lo, hi = wilson(violations, len(checked))
        row = {k: str(v) for k, v in zip(keys, values, strict=True)}
        row.update({"runs": len(frame), "errors": len(frame) - len(ok), "checked": len(checked),
                    "violations": violations, "rate": rate, "rate_lo": lo, "rate_hi": hi})
        for name in ("duplicates", "lateness_p99_ms", "dlq"):
            mean, mlo, mhi, n = mean_ci(ok[name].tolist() if name in ok else [])
            row.update({f"{name}_mean": mean, f"{name}_lo": mlo, f"{name}_hi": mhi, f"{name}_n": n})
        rows.append(row)
    return pd.DataFrame(rows)


def numeric_axis(values: list[str]) -> tuple[list[float] | None, str]:
    """Positions for ordered values: numbers as they are, durations in seconds; (None, "") otherwise."""
    try:
        return [float(v) for v in values], ""
    except ValueError:
        pass
    out = []
    for v in values:
        m = _DURATION.match(v)
        if not m:
            return None, ""
        out.append(float(m.group(1)) * _UNIT_S[m.group(2)])
    return out, "s"
