"""Aggregating a sweep's rows, per cell and per value of each parameter (the marginals). Pure Python over
the rows table, on the driver, whatever executor ran the rows: Spark and ``map`` give the same files.

Per group of rows: runs, errors, checked runs, violations (in all and per invariant), the violation rate
with its Wilson 95% interval; mean, sample standard deviation, count and a normal 95% interval of the mean
of the per-run statistics; the exact median of the per-run lateness p99; time-to-DLQ quantiles over every
DLQ copy of the group's runs (nearest rank).
"""

from __future__ import annotations

import math

from .sweep_rows import INVARIANTS
from .sweep_spec import SweepSpec, cell_key, format_value

Z95 = 1.959963984540054
MEANS = ("duplicates", "dlq", "consumed", "sent", "lateness_p99_ms", "lateness_p50_ms")
INTERVALS = ("duplicates", "lateness_p99_ms", "dlq")


def wilson(k: int, n: int, z: float = Z95) -> tuple[float | None, float | None, float | None]:
    """The share k/n and its Wilson score interval (95%); Nones when n is 0."""
    if n <= 0:
        return None, None, None
    p = k / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return p, max(0.0, center - half), min(1.0, center + half)


def _nearest_rank(values: list[int], q: float):
    return values[max(1, math.ceil(len(values) * q)) - 1] if values else None


def _median(values: list):
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def metrics_of(rows: list[dict]) -> dict:
    """The aggregate columns of one group of rows."""
    ok = [r for r in rows if r.get("error") is None]
    checked = [r for r in ok if r.get("checked")]
    out = {"runs": len(rows), "errors": len(rows) - len(ok), "checked": len(checked),
           "violations": sum(1 for r in checked if r.get("holds") is False)}
    for name in INVARIANTS:
        out[f"violations_{name}"] = sum(1 for r in checked if r.get(f"ok_{name}") is False)
    for name in MEANS:
        vals = [r[name] for r in ok if r.get(name) is not None]
        n = len(vals)
        mean = sum(vals) / n if n else None
        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1)) if n > 1 else None
        out.update({f"{name}_mean": mean, f"{name}_sd": sd, f"{name}_n": n})
    late_max = [r["lateness_max_ms"] for r in ok if r.get("lateness_max_ms") is not None]
    out["lateness_max_ms"] = max(late_max) if late_max else None
    out["lateness_p99_ms_median"] = _median([r["lateness_p99_ms"] for r in ok if r.get("lateness_p99_ms") is not None])
    dlq = [r["dlq"] for r in ok if r.get("dlq") is not None]
    out["dlq_total"] = sum(dlq) if dlq else None
    walls = [r["wall_s"] for r in rows if r.get("wall_s") is not None]
    out["wall_s_mean"] = sum(walls) / len(walls) if walls else None
    rate, lo, hi = wilson(out["violations"], out["checked"])
    out.update({"violation_rate": rate, "violation_rate_lo": lo, "violation_rate_hi": hi})
    for name in INTERVALS:
        mean, sd, n = out[f"{name}_mean"], out[f"{name}_sd"] or 0.0, out[f"{name}_n"]
        half = Z95 * sd / math.sqrt(n) if n else None
        out[f"{name}_lo"] = mean - half if n else None
        out[f"{name}_hi"] = mean + half if n else None
    ttd = sorted(v for r in ok for v in (r.get("time_to_dlq_ms") or ()))
    out.update({"time_to_dlq_p50_ms": _nearest_rank(ttd, 0.5), "time_to_dlq_p90_ms": _nearest_rank(ttd, 0.9),
                "time_to_dlq_max_ms": ttd[-1] if ttd else None, "time_to_dlq_n": len(ttd)})
    return out


def aggregate(rows_table, spec: SweepSpec):
    """(cells, marginals) as pyarrow tables: one row per cell in the sweep's order (its parameter columns
    typed as in the rows), and one per (parameter, value) with ``value`` in its display form."""
    import pyarrow as pa

    rows = rows_table.to_pylist()
    cols = [spec.columns[k] for k in spec.keys]
    by_cell: dict[str, list[dict]] = {}
    for r in rows:
        by_cell.setdefault(r["cell"], []).append(r)
    order = {}
    for params, _seed in spec.points():
        order.setdefault(cell_key(spec.keys, params), len(order))
    cells = []
    for cell in sorted(by_cell, key=lambda c: (order.get(c, len(order)), c)):
        group = by_cell[cell]
        cells.append({"cell": cell, "cell_id": group[0]["cell_id"], **{c: group[0].get(c) for c in cols},
                      **metrics_of(group)})
    param_schema = [f for f in rows_table.schema if f.name in ("cell", "cell_id", *cols)]
    cells_t = pa.Table.from_pylist(cells, schema=_schema(param_schema, cells))
    if not spec.keys:
        return cells_t, None
    marginals = []
    for key, col in zip(spec.keys, cols, strict=True):
        by_value: dict[str, list[dict]] = {}
        for r in rows:
            by_value.setdefault(format_value(r.get(col)), []).append(r)
        known = [format_value(v) for v in spec.values[key]]
        for value in sorted(by_value, key=lambda v: (known.index(v) if v in known else len(known), v)):
            marginals.append({"param": key, "value": value, **metrics_of(by_value[value])})
    marg_t = pa.Table.from_pylist(marginals, schema=_schema([pa.field("param", pa.string()),
                                                             pa.field("value", pa.string())], marginals))
    return cells_t, marg_t


def _schema(head_fields, rows: list[dict]):
    """The head fields, then every metric column with a fixed type (counts int64, the rest float64)."""
    import pyarrow as pa

    fields = list(head_fields)
    names = {f.name for f in fields}
    ints = {"runs", "errors", "checked", "violations", "lateness_max_ms", "dlq_total", "time_to_dlq_p50_ms",
            "time_to_dlq_p90_ms", "time_to_dlq_max_ms", "time_to_dlq_n"}
    ints |= {f"violations_{n}" for n in INVARIANTS} | {f"{n}_n" for n in MEANS}
    sample = metrics_of([])
    for name in sample:
        if name not in names:
            fields.append(pa.field(name, pa.int64() if name in ints else pa.float64()))
    return pa.schema(fields)
