"""The Parquet files of a sweep directory: the row schema, ``runs/part-NNNNN.parquet`` (append-only, the
newest row of a (cell, seed) wins) and the aggregates ``cells``/``marginals`` (``.parquet`` and ``.json``).
All file I/O of a sweep happens here, on the driver (pyarrow), so a cluster needs no shared file system."""

from __future__ import annotations

import json
import math
import os

from .sweep_rows import GROUP_FIELDS, INVARIANTS
from .sweep_spec import write_atomic


def _arrow_type(kind: str):
    import pyarrow as pa

    return {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "str": pa.string()}[kind]


def _param_fields(spec_columns) -> list[tuple[str, str]]:
    """``{column: type}`` (``SweepSpec.column_types``), or a plain list of columns (all strings)."""
    if isinstance(spec_columns, dict):
        return list(spec_columns.items())
    return [(col, "str") for col in spec_columns]


def group_type():
    import pyarrow as pa

    return pa.list_(pa.struct([("group", pa.string())] + [(name, pa.int64()) for name in GROUP_FIELDS]))


def row_schema(spec_columns):
    """The schema of a row; parameter columns carry their types (``SweepSpec.column_types``)."""
    import pyarrow as pa

    fields = [("cell", pa.string()), ("cell_id", pa.string()), ("seed", pa.int64())]
    fields += [(col, _arrow_type(kind)) for col, kind in _param_fields(spec_columns)]
    fields += [("era", pa.string()), ("mutants", pa.string()), ("error", pa.string()),
               ("checked", pa.bool_()), ("holds", pa.bool_()), ("violated", pa.list_(pa.string())),
               ("first_violation", pa.string())]
    fields += [(f"ok_{name}", pa.bool_()) for name in INVARIANTS]
    fields += [(name, pa.int64()) for name in (
        "sent", "consumed", "failed_attempts", "duplicates", "dlq", "crashes", "faults", "delivered_from_schedule",
        "lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms", "pending", "unstored")]
    fields += [("time_to_dlq_ms", pa.list_(pa.int64())), ("time_to_dlq_p50_ms", pa.int64()),
               ("time_to_dlq_max_ms", pa.int64()), ("virtual_ms", pa.int64()), ("events", pa.int64()),
               ("wall_s", pa.float64()), ("history_sha256", pa.string()), ("repro", pa.string()),
               ("probes_hit", pa.list_(pa.string())), ("groups", group_type())]
    return pa.schema(fields)


def rows_to_table(rows: list[dict], spec_columns):
    import pyarrow as pa

    schema = row_schema(spec_columns)
    return pa.Table.from_pylist([{f.name: row.get(f.name) for f in schema} for row in rows], schema=schema)


# --- the Parquet store of rows --------------------------------------------------------------------


def _part_files(runs_dir: str) -> list[str]:
    if not os.path.isdir(runs_dir):
        return []
    return sorted(os.path.join(runs_dir, n) for n in os.listdir(runs_dir)
                  if n.startswith("part-") and n.endswith(".parquet"))


def read_rows(out_dir: str, columns=None):
    """Every row under DIR/runs, one per (cell, seed) (the newest part wins: a row is written again only
    when its task had failed), or None."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(p, columns=columns) for p in _part_files(os.path.join(out_dir, "runs"))]
    if not tables:
        return None
    table = pa.concat_tables(tables, promote_options="default")
    keys = list(zip(table.column("cell").to_pylist(), table.column("seed").to_pylist(), strict=True))
    last = {key: i for i, key in enumerate(keys)}
    if len(last) == len(keys):
        return table
    return table.take(sorted(last.values()))


def write_part(out_dir: str, table) -> str:
    import pyarrow.parquet as pq

    runs_dir = os.path.join(out_dir, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    existing = [int(os.path.basename(p)[5:10]) for p in _part_files(runs_dir) if os.path.basename(p)[5:10].isdigit()]
    path = os.path.join(runs_dir, f"part-{(max(existing) + 1) if existing else 0:05d}.parquet")
    tmp = os.path.join(runs_dir, "." + os.path.basename(path) + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def json_rows(table) -> list[dict]:
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v
    return [{k: clean(v) for k, v in row.items()} for row in table.to_pylist()]


def write_aggregates(out_dir: str, cells, marginals) -> None:
    import pyarrow.parquet as pq

    for name, table in (("cells", cells), ("marginals", marginals)):
        if table is None:
            continue
        tmp = os.path.join(out_dir, f".{name}.parquet.tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, os.path.join(out_dir, f"{name}.parquet"))
        write_atomic(os.path.join(out_dir, f"{name}.json"), (json.dumps(json_rows(table), indent=1) + "\n").encode())


def write_json(path: str, doc: dict) -> None:
    write_atomic(path, (json.dumps(doc, indent=1) + "\n").encode())
