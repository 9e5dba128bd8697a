"""Reading a sweep directory (written by ``rmqsim sweep``) and summarising its rows with pandas.

Parameter columns are stored with their types in Parquet; on load they are turned into their display form
(``0.5``, ``true``, ``10s``: the sweep file's spelling) so that every summary groups by the same strings,
and ``SweepData.types`` keeps what they were (a numeric parameter gets a numeric axis).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass

import pandas as pd

from .sweep_metrics import ALL_GROUPS, METRICS, Metric

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
    def types(self) -> dict[str, str]:
        """key -> "bool" | "int" | "float" | "str" (older sweeps without types: all "str")."""
        return {k: self.meta.get("types", {}).get(k, "str") for k in self.keys}

    def categorical(self, key: str) -> bool:
        """A parameter whose values have no order on a line (strings, booleans, mutants): drawn as grouped
        points, never joined. Durations ("10s") are strings with an order: they get a numeric axis."""
        if self.types.get(key) in ("int", "float"):
            return False
        return numeric_axis(self.values(key))[0] is None or self.types.get(key) == "bool"

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


def display_value(value) -> str | None:
    """A stored parameter value in the sweep file's spelling (as ``scenarios.sweep_spec.format_value``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if isinstance(value, float):
        return format(float(value), "g")
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return display_value(value.item())
    return str(value)


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
    for col in (meta.get("columns") or {}).values():
        if col in runs:
            runs[col] = runs[col].map(display_value)
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


# --- what-if metrics (reports/sweep_metrics.py) ------------------------------------------------------


def _entries(frame: pd.DataFrame) -> list[tuple[int, dict]]:
    """(row index, group entry) for every per-group entry of the rows."""
    out = []
    if "groups" not in frame:
        return out
    for i, groups in frame["groups"].items():
        if groups is None or (isinstance(groups, float) and math.isnan(groups)):
            continue
        out.extend((i, dict(g)) for g in groups)
    return out


def metric_table(data: SweepData, metric: str, by: str) -> pd.DataFrame:
    """One row per (value of ``by``, group): ``estimate`` with its 95% interval ``lo``/``hi``, ``runs`` (seed
    replicates behind it) and, for a rate, the pooled counts ``k``/``n``. Rates: Wilson over the counts
    summed over the replicates of that value and group (never over groups). Means: the mean of one value per
    run with a normal interval. Other parameters are pooled. Empty when the rows lack what the metric needs."""
    m: Metric = METRICS[metric]
    col = data.column(by)
    ok = data.ok
    rows = []
    for value in data.values(by):
        frame = ok[ok[col] == value]
        per_group: dict[str, list] = {}
        if m.per_group:
            for _i, entry in _entries(frame):
                per_group.setdefault(entry["group"], []).append(entry)
        else:
            per_group[ALL_GROUPS] = [r for _, r in frame.iterrows()]
        for group, entries in per_group.items():
            row = {"value": value, "group": group, "runs": len(entries)}
            if m.kind == "rate":
                if m.per_group:
                    k = sum(int(e[m.numerator] or 0) for e in entries)
                    n = sum(int(e[m.denominator] or 0) for e in entries)
                else:  # violation_rate: runs with a violation / runs checked
                    checked = [r for r in entries if bool(r.get("checked"))]
                    k = sum(1 for r in checked if r.get("holds") is not None and not bool(r.get("holds")))
                    n = len(checked)
                est, lo, hi = wilson(k, n)
                row.update({"estimate": est, "lo": lo, "hi": hi, "k": k, "n": n})
            else:
                vals = []
                for e in entries:
                    num = e.get(m.numerator)
                    if num is None or (isinstance(num, float) and math.isnan(num)):
                        continue
                    if m.denominator:
                        den = e.get(m.denominator)
                        if not den:
                            continue
                        num = num / den
                    vals.append(float(num))
                est, lo, hi, n = mean_ci(vals)
                row.update({"estimate": est, "lo": lo, "hi": hi, "k": None, "n": n})
            rows.append(row)
    return pd.DataFrame(rows, columns=["value", "group", "runs", "estimate", "lo", "hi", "k", "n"])


def _fmt(v: float, metric: Metric) -> str:
    if metric.kind == "rate" and 0 < abs(v) < 0.01:
        return f"{v:.3f}"  # a small rate's interval would otherwise read [0.00, 0.00]
    if metric.kind == "rate" or abs(v) < 10:
        return f"{v:.2f}"
    return f"{v:.0f}"


def metric_sentence(data: SweepData, table: pd.DataFrame, metric: str, by: str) -> str:
    """One generated sentence per group stating the result with its 95% interval, from the first to the last
    value of ``by`` (numeric) or at every value (categorical)."""
    m = METRICS[metric]
    if table.empty or table["estimate"].isna().all():
        return f"No run produced {metric} (no finished run, or rows written before per-group counts existed)."
    groups = list(dict.fromkeys(table["group"]))
    parts = []
    for group in groups:
        sub = table[(table["group"] == group) & table["estimate"].notna()]
        if sub.empty:
            continue
        who = f" for {group}" if group != ALL_GROUPS and len(groups) > 1 else ""
        at = [f"{_fmt(r.estimate, m)} [{_fmt(r.lo, m)}, {_fmt(r.hi, m)}] at {by} = {r.value}"
              for r in sub.itertuples()]
        if data.categorical(by) or len(sub) == 1:
            parts.append(f"{metric}{who} is " + ", ".join(at))
            continue
        first, last = sub.iloc[0], sub.iloc[-1]
        verb = "rises" if last.estimate > first.estimate else "falls" if last.estimate < first.estimate else "stays"
        if verb == "stays":
            parts.append(f"{metric}{who} stays at {_fmt(first.estimate, m)} [{_fmt(first.lo, m)}, {_fmt(first.hi, m)}] "
                         f"at {first.value} and {_fmt(last.estimate, m)} [{_fmt(last.lo, m)}, {_fmt(last.hi, m)}] "
                         f"at {last.value}")
            continue
        overlap = not (last.lo > first.hi or last.hi < first.lo)
        text = (f"{metric}{who} {verb} from {_fmt(first.estimate, m)} [{_fmt(first.lo, m)}, {_fmt(first.hi, m)}] "
                f"at {first.value} to {_fmt(last.estimate, m)} [{_fmt(last.lo, m)}, {_fmt(last.hi, m)}] at {last.value}")
        if overlap:
            text += " (the 95% intervals overlap: more seeds would be needed to tell them apart)"
        parts.append(text)
    unit = f" ({m.unit}; 95% intervals, {'Wilson' if m.kind == 'rate' else 'normal, over the seed replicates'})"
    return "; ".join(parts) + unit + "."
