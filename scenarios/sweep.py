"""Sweeps: ``rmqsim sweep SWEEP.toml [--executor spark|map] [--master URL] [--out DIR]`` (README, "Sweeps").

The jobs live in their own modules; this one runs them in order and re-exports their public names:

- ``sweep_spec``: the sweep file's grammar, its checks and the plan (one task per (parameters, seed));
- ``sweep_rows``: one task -> one row dict (pure; a run that raises is a row with its error);
- ``sweep_io``: the Parquet row schema, ``DIR/runs/part-NNNNN.parquet`` and the aggregate files;
- ``sweep_aggregate``: rows -> cells and marginals (pure Python, on the driver);
- ``sweep_spark``: the Spark executor, the only pyspark importer.

An executor turns the missing tasks into rows: ``spark`` (the default; ``local[*]`` unless ``--master``)
or ``map`` (the built-in ``map`` in this process, no JVM). Both give the same rows. Rows are keyed by
(cell, seed): running the same sweep again into the same DIR computes only the missing rows.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .sweep_aggregate import aggregate, wilson
from .sweep_io import (
    json_rows,
    read_rows,
    row_schema,
    rows_to_table,
    write_aggregates,
    write_json,
    write_part,
)
from .sweep_rows import (
    INVARIANTS,
    MAX_DLQ_SAMPLES,
    SPARK_TASK_FAILED,
    describe_error,
    group_counts,
    percentile,
    run_task,
    time_to_dlq_ms,
)
from .sweep_spec import (
    SweepError,
    SweepSpec,
    cell_id,
    cell_key,
    column_name,
    draw_swarm,
    format_value,
    load_sweep_file,
    make_tasks,
    mutants_of,
    parse_sweep_text,
    validate_spec,
)

__all__ = ["EXECUTORS", "INVARIANTS", "MAX_DLQ_SAMPLES", "SPARK_TASK_FAILED", "SweepError", "SweepResult",
           "SweepSpec", "aggregate", "cell_id", "cell_key", "column_name", "describe_error", "draw_swarm",
           "example_rows", "format_result", "format_value", "group_counts", "json_rows", "load_sweep_file",
           "make_tasks", "mutants_of", "parse_sweep_text", "percentile", "read_rows", "row_schema",
           "rows_to_table", "run_sweep", "run_task", "time_to_dlq_ms", "validate_spec", "wilson",
           "write_aggregates", "write_part"]

EXECUTORS = ("spark", "map")
MAP_BATCH = 8  # rows per part file with the map executor (what an interrupt can lose)


@dataclass
class SweepResult:
    out_dir: str
    spec: SweepSpec
    total: int            # rows of the sweep (all points)
    computed: int         # rows computed by this invocation
    reused: int           # rows found in DIR from an earlier invocation
    errors: int
    violated: int
    cells: list[dict]
    wall_s: float
    master: str           # the Spark master URL, or "map" for the map executor


def _check_dir(out_dir: str, spec: SweepSpec) -> None:
    import json

    meta_path = os.path.join(out_dir, "sweep.json")
    if not os.path.exists(meta_path):
        return
    try:
        with open(meta_path, encoding="utf-8") as f:
            old = json.load(f)
    except (OSError, ValueError):
        return
    if old.get("fingerprint") not in (None, spec.fingerprint()):
        raise SweepError(f"{out_dir}: holds rows of a different sweep (other base scenario, fixed overrides or "
                         f"parameter keys: '{old.get('source')}'); use another --out DIR")
    old_types = old.get("types") or {k: "str" for k in spec.keys}  # rows written before typed columns
    if old_types != spec.types and os.path.isdir(os.path.join(out_dir, "runs")):
        raise SweepError(f"{out_dir}: holds rows whose parameter columns have other types ({old_types}, now "
                         f"{spec.types}); use another --out DIR")


def execute_map(tasks: list[dict], *, check=None, on_rows=None, progress: bool = True,
                batch_size: int | None = None) -> list[dict]:
    """The Spark-free executor: the built-in ``map`` over the tasks in this process, ``on_rows`` every
    ``batch_size`` rows (so an interrupted sweep keeps what it finished)."""
    from .progress import progress_bar

    size = batch_size or MAP_BATCH
    bar = progress_bar(total=len(tasks), desc="sweep", unit="run", enabled=progress)
    rows: list[dict] = []
    try:
        for start in range(0, len(tasks), size):
            batch = list(map(lambda task: run_task(task, check), tasks[start:start + size]))
            rows.extend(batch)
            if on_rows is not None:
                on_rows(batch)
            bar.update(len(batch))
    finally:
        bar.close()
    return rows


def run_sweep(spec: SweepSpec, out_dir: str, *, executor: str = "spark", spark=None, master: str | None = None,
              progress: bool = True, check=None, batch_size: int | None = None) -> SweepResult:
    """Run the missing rows of ``spec`` into ``out_dir`` and aggregate them all.

    ``executor``: "spark" or "map". With Spark, ``spark`` is an existing SparkSession (kept open); otherwise
    one is made for ``master`` (default ``local[*]``; an already active session is reused and kept open) and
    stopped at the end. ``check``: the invariant checker ``(history, world) -> dict`` (shipped to the
    workers); by default ``sim.checking.check_run``."""
    if executor not in EXECUTORS:
        raise SweepError(f"executor {executor!r}: expected one of {', '.join(EXECUTORS)}")
    start = time.perf_counter()  # wall-clock ok: reported
    os.makedirs(out_dir, exist_ok=True)
    _check_dir(out_dir, spec)
    tasks = make_tasks(spec, out_dir)
    meta = spec.metadata()
    write_json(os.path.join(out_dir, "sweep.json"), {**meta, "complete": False})
    columns = spec.column_types
    existing = read_rows(out_dir, columns=["cell", "seed", "error"])
    have = set()
    if existing is not None:
        have = {(r["cell"], r["seed"]) for r in existing.to_pylist()
                if not (r["error"] or "").startswith(SPARK_TASK_FAILED)}
    todo = [t for t in tasks if (t["cell"], t["seed"]) not in have]
    reused = len(tasks) - len(todo)

    def on_rows(rows):
        write_part(out_dir, rows_to_table(rows, columns))

    if executor == "map":
        if todo:
            execute_map(todo, check=check, progress=progress, batch_size=batch_size, on_rows=on_rows)
        master_url = "map"
    else:
        master_url = _run_on_spark(todo, spark=spark, master=master, check=check, progress=progress,
                                   batch_size=batch_size, on_rows=on_rows)
    wanted = {(t["cell"], t["seed"]) for t in tasks}
    table = read_rows(out_dir)
    keys = list(zip(table.column("cell").to_pylist(), table.column("seed").to_pylist(), strict=True))
    table = table.take([i for i, key in enumerate(keys) if key in wanted]).select(row_schema(columns).names)
    cells, marginals = aggregate(table, spec)
    write_aggregates(out_dir, cells, marginals)
    cell_rows = json_rows(cells)
    errors = sum(r["errors"] or 0 for r in cell_rows)
    violated = sum(r["violations"] or 0 for r in cell_rows)
    wall_s = time.perf_counter() - start  # wall-clock ok
    write_json(os.path.join(out_dir, "sweep.json"),
               {**meta, "complete": True, "rows": len(tasks), "errors": errors, "violated_runs": violated,
                "last_invocation": {"executor": executor, "master": master_url, "computed": len(todo),
                                    "reused": reused, "wall_s": round(wall_s, 3)}})
    return SweepResult(out_dir=out_dir, spec=spec, total=len(tasks), computed=len(todo), reused=reused,
                       errors=errors, violated=violated, cells=cell_rows, wall_s=wall_s, master=master_url)


def _run_on_spark(todo, *, spark, master, check, progress, batch_size, on_rows) -> str:
    from . import sweep_spark

    owned = False
    if spark is None:
        spark = sweep_spark.active_session() if master is None else None
        if spark is None:
            spark = sweep_spark.spark_session(master)
            owned = True
    try:
        if todo:
            sweep_spark.execute(spark, todo, check=check, progress=progress, batch_size=batch_size, on_rows=on_rows)
        return spark.sparkContext.master
    finally:
        if owned:
            spark.stop()


def format_result(result: SweepResult, limit: int = 40) -> str:
    spec = result.spec
    where = "with the map executor" if result.master == "map" else f"on {result.master}"
    lines = [f"sweep '{spec.name}' {where}: {result.total} runs ({result.computed} computed, "
             f"{result.reused} already in {result.out_dir}), {len(result.cells)} cells, {result.wall_s:.1f} s"]
    cols = [spec.columns[k] for k in spec.keys]
    widths = [max(len(k), *(len(format_value(v)) for v in spec.values[k])) for k in spec.keys]
    params = " ".join(f"{k:{w}}" for k, w in zip(spec.keys, widths, strict=True)) if spec.keys else "cell"
    lines.append(f"  {params} {'runs':>5} {'violation rate [95% CI]':>24} {'dups':>7} {'late p99 ms':>11} "
                 f"{'dlq':>6} {'errors':>6}")
    for row in result.cells[:limit]:
        rate = ("-" if row["violation_rate"] is None else
                f"{row['violation_rate']:.2f} [{row['violation_rate_lo']:.2f}, {row['violation_rate_hi']:.2f}]")
        dups = "-" if row["duplicates_mean"] is None else f"{row['duplicates_mean']:.1f}"
        late = "-" if row["lateness_p99_ms_mean"] is None else f"{row['lateness_p99_ms_mean']:.0f}"
        dlq = "-" if row["dlq_mean"] is None else f"{row['dlq_mean']:.1f}"
        cell = " ".join(f"{format_value(row[c]):{w}}" for c, w in zip(cols, widths, strict=True)) if cols else "base"
        lines.append(f"  {cell} {row['runs']:>5} {rate:>24} {dups:>7} {late:>11} {dlq:>6} {row['errors']:>6}")
    if len(result.cells) > limit:
        lines.append(f"  ... {len(result.cells) - limit} more cells in {result.out_dir}/cells.json")
    if not any(row["checked"] for row in result.cells):
        lines.append("  (no invariant checker available: verdicts are empty, statistics only)")
    return "\n".join(lines)


def example_rows(out_dir: str, limit: int = 3) -> list[dict]:
    """A few violated or erroring rows (their replay commands), for the command line's summary."""
    table = read_rows(out_dir, columns=["cell", "seed", "error", "holds", "violated", "first_violation", "repro"])
    if table is None:
        return []
    out = []
    for row in table.to_pylist():
        if row["error"] or row["holds"] is False:
            out.append(row)
    return out[:limit]

