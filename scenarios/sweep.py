"""PySpark sweeps: ``rmqsim sweep SWEEP.toml [--master URL] [--out DIR]`` (DESIGN.md, "Sweeps and reports").

This is the only module that imports pyspark. A sweep file names a base scenario and either a
parameter grid with a number of seeds per cell, or a random "swarm" of parameter draws::

    name = "flush-interval"                 # optional (default: the file's stem)
    base = "crash-before-delay-offset-flush"  # a built-in scenario or a path (relative to this file)
    seeds = 10                              # per cell (grid mode)
    first_seed = 1                          # optional

    [overrides]                             # optional: fixed for every run
    "consumer.max_reconsume_times" = 2

    [grid]                                  # any key apply_overrides takes, and "mutant"
    "broker.flush_delay_offset_interval" = ["1s", "10s", "30s"]
    "broker.era" = ["5.3.3", "4.9.8"]
    mutant = ["none", "skip_failed_delivery"]   # a name, "none", or a list of names

or, instead of ``[grid]`` and ``seeds``::

    [swarm]                                 # one random draw per run, random.Random(seed)
    runs = 200
    "faults.process_crashes" = [0, 3]       # integers: uniform in [0, 3]
    "faults.put_failure_rate" = [0.0, 0.1]  # numbers: one of 5 evenly spaced values (or { range = [lo, hi], steps = N })
    "broker.era" = { choice = ["5.3.3", "4.9.8"] }

Every (parameters, seed) is one Spark task that runs ``sim.run.run_scenario`` and returns one row
(parameters, seed, verdicts, statistics, wall time, history hash, error). Rows go to
``DIR/runs/part-NNNNN.parquet`` as batches finish, keyed by (cell, seed): running the same sweep
again into the same DIR computes only the missing rows. Spark then aggregates the rows per cell
(``DIR/cells.parquet``/``.json``) and per parameter value (``DIR/marginals.parquet``/``.json``).
All file I/O happens on the driver (pyarrow), so a cluster needs no shared file system.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import os
import random
import re
import sys
import tempfile
import time
import tomllib
import traceback
from dataclasses import dataclass, field

from model.stats import percentile, time_to_dlq_ms

from .catalogue import resolve_scenario
from .scenario import ScenarioError, apply_overrides, scenario_from_dict

# The invariant names (DESIGN.md); each becomes a boolean column ``ok_<name>``. A checker that
# reports further invariants still lists them in ``violated``.
try:
    from model.invariants import CHECKS as _CHECKS

    INVARIANTS = tuple(_CHECKS)
except ImportError:  # pragma: no cover - the checker is part of the project
    INVARIANTS = ("no_loss", "at_least_once_redelivery", "no_early_delivery", "per_level_order",
                  "dlq_after_max_retries", "retry_schedule", "bounded_lateness", "duplicates")
SWARM_FLOAT_STEPS = 5
Z95 = 1.959963984540054
MAX_DLQ_SAMPLES = 2000  # time-to-DLQ values kept per run


class SweepError(ScenarioError):
    """A sweep file is wrong; the message names the file, the key and what was expected."""


# --- the sweep file --------------------------------------------------------------------------------


def format_value(value) -> str:
    """The display (and cell-key) form of a parameter value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, list | tuple):
        return "+".join(format_value(v) for v in value) if value else "none"
    return str(value)


def column_name(key: str) -> str:
    """The Parquet column of a parameter: ``broker.era`` -> ``p_broker_era``."""
    return "p_" + re.sub(r"[^0-9A-Za-z]+", "_", key).strip("_")


def mutants_of(value) -> tuple[str, ...]:
    if value in ("", "none", None):
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(v for v in value if v not in ("", "none"))


@dataclass(frozen=True)
class SweepSpec:
    source: str
    name: str
    description: str
    base: str
    base_doc: dict
    base_source: str
    mode: str                                   # "grid" or "swarm"
    keys: tuple[str, ...]                       # parameters, in file order
    values: dict                                # key -> ordered list of possible values
    seeds: int                                  # per cell (grid)
    first_seed: int
    overrides: dict = field(default_factory=dict)
    swarm_runs: int = 0
    swarm: dict = field(default_factory=dict)   # key -> ("int", lo, hi) | ("choice", [values])

    @property
    def columns(self) -> dict[str, str]:
        return {key: column_name(key) for key in self.keys}

    def fingerprint(self) -> str:
        """What rows of one DIR must share: base scenario, fixed overrides, mode and parameter keys."""
        doc = {"base_doc": self.base_doc, "overrides": self.overrides, "mode": self.mode, "keys": list(self.keys)}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()

    def points(self) -> list[tuple[dict, int]]:
        """Every (parameters, seed) of the sweep, in a stable order."""
        if self.mode == "grid":
            cells = [dict(zip(self.keys, combo, strict=True))
                     for combo in itertools.product(*(self.values[k] for k in self.keys))]
            return [(params, seed) for params in cells
                    for seed in range(self.first_seed, self.first_seed + self.seeds)]
        out = []
        for seed in range(self.first_seed, self.first_seed + self.swarm_runs):
            out.append((draw_swarm(self.swarm, seed), seed))
        return out

    def metadata(self) -> dict:
        return {"name": self.name, "description": self.description, "source": self.source, "base": self.base,
                "mode": self.mode, "keys": list(self.keys), "columns": self.columns,
                "values": {k: [format_value(v) for v in self.values[k]] for k in self.keys},
                "seeds": self.seeds, "first_seed": self.first_seed, "swarm_runs": self.swarm_runs,
                "overrides": self.overrides, "invariants": list(INVARIANTS), "fingerprint": self.fingerprint()}


def draw_swarm(swarm: dict, seed: int) -> dict:
    rng = random.Random(seed)
    params = {}
    for key, how in swarm.items():
        if how[0] == "int":
            params[key] = rng.randint(how[1], how[2])
        else:
            params[key] = rng.choice(how[1])
    return params


def cell_key(keys, params: dict) -> str:
    return " ".join(f"{k}={format_value(params[k])}" for k in keys) if keys else "base"


def cell_id(cell: str) -> str:
    return "c" + hashlib.sha256(cell.encode()).hexdigest()[:10]


_TOP_KEYS = ("name", "description", "base", "seeds", "first_seed", "overrides", "grid", "swarm")


def _suggest(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _flatten(table: dict, prefix: str = "") -> dict:
    """``[grid] broker.era = [...]`` parses as nested tables; quoted ``"broker.era"`` does not. Accept both."""
    out = {}
    for key, value in table.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and not ({"choice", "range"} & set(value)):
            out.update(_flatten(value, dotted))
        else:
            out[dotted] = value
    return out


def _is_scalar(v) -> bool:
    return isinstance(v, str | int | float | bool)


def parse_sweep_text(text: str, source: str) -> SweepSpec:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SweepError(f"{source}: not valid TOML: {error}") from None
    for key in doc:
        if key not in _TOP_KEYS:
            raise SweepError(f"{source}: unknown key '{key}'{_suggest(key, _TOP_KEYS)}; "
                             f"known keys: {', '.join(_TOP_KEYS)}")

    def want(key, check, expected, default=None):
        if key not in doc:
            return default
        value = doc[key]
        if not check(value):
            raise SweepError(f"{source}: key '{key}' must be {expected}; got {value!r}")
        return value

    is_int = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
    base = want("base", lambda v: isinstance(v, str) and v, "a built-in scenario name or a scenario file path")
    if base is None:
        raise SweepError(f"{source}: key 'base' is missing (a built-in scenario name or a scenario file path)")
    name = want("name", lambda v: isinstance(v, str) and v, "a non-empty string",
                os.path.splitext(os.path.basename(source))[0])
    description = want("description", lambda v: isinstance(v, str), "a string", "")
    first_seed = want("first_seed", lambda v: is_int(v) and v >= 0, "an integer >= 0", 1)
    overrides = _flatten(want("overrides", lambda v: isinstance(v, dict), "a table of scenario keys", {}))
    if "grid" in doc and "swarm" in doc:
        raise SweepError(f"{source}: give either [grid] (with 'seeds') or [swarm], not both")

    # the base scenario, resolved relative to the sweep file when it is a path
    base_arg = base
    if not os.path.isabs(base) and (base.endswith(".toml") or os.sep in base) and os.path.exists(source):
        candidate = os.path.join(os.path.dirname(os.path.abspath(source)), base)
        if os.path.exists(candidate):
            base_arg = candidate
    try:
        base_scenario = resolve_scenario(base_arg)
    except ScenarioError as error:
        raise SweepError(f"{source}: key 'base': {error}") from None
    base_doc = base_scenario.doc

    swarm, swarm_runs = {}, 0
    if "swarm" in doc:
        if "seeds" in doc:
            raise SweepError(f"{source}: key 'seeds' is for [grid] sweeps; a [swarm] sweep has 'swarm.runs'")
        raw = doc["swarm"]
        if not isinstance(raw, dict):
            raise SweepError(f"{source}: 'swarm' must be a table")
        raw = _flatten(raw)
        swarm_runs = raw.pop("runs", None)
        if not is_int(swarm_runs) or swarm_runs < 1:
            raise SweepError(f"{source}: key 'swarm.runs' must be an integer >= 1 (runs to draw); got {swarm_runs!r}")
        if not raw:
            raise SweepError(f"{source}: '[swarm]' draws no parameter; add e.g. \"faults.process_crashes\" = [0, 3]")
        values = {}
        for key, how in raw.items():
            swarm[key], values[key] = _swarm_entry(source, key, how)
        mode, seeds = "swarm", 1
    else:
        seeds = want("seeds", lambda v: is_int(v) and v >= 1, "an integer >= 1 (runs per cell)", None)
        if seeds is None:
            raise SweepError(f"{source}: key 'seeds' is missing (runs per cell, e.g. seeds = 10)")
        raw = doc.get("grid", {})
        if not isinstance(raw, dict):
            raise SweepError(f"{source}: 'grid' must be a table of key = [values]")
        values = {}
        for key, vals in _flatten(raw).items():
            if not isinstance(vals, list) or not vals:
                raise SweepError(f"{source}: key 'grid.{key}' must be a non-empty list of values; got {vals!r}")
            for v in vals:
                ok = _is_scalar(v) or (key == "mutant" and isinstance(v, list) and all(isinstance(x, str) for x in v))
                if not ok:
                    raise SweepError(f"{source}: key 'grid.{key}' must list strings, numbers or booleans; got {v!r}")
            shown = [format_value(v) for v in vals]
            if len(set(shown)) != len(shown):
                raise SweepError(f"{source}: key 'grid.{key}' lists a value twice: {shown}")
            values[key] = list(vals)
        mode = "grid"
    keys = tuple(values)
    for key in keys:
        if key in ("seed", "name"):
            raise SweepError(f"{source}: '{key}' cannot be a sweep parameter (seeds come from 'seeds'/'first_seed')")
    names = {}
    for key in keys:
        col = column_name(key)
        if col in names:
            raise SweepError(f"{source}: keys '{names[col]}' and '{key}' map to the same column {col}")
        names[col] = key
    spec = SweepSpec(source=source, name=name, description=description, base=base, base_doc=base_doc,
                     base_source=base_scenario.source, mode=mode, keys=keys, values=values, seeds=seeds,
                     first_seed=first_seed, overrides=overrides, swarm_runs=swarm_runs, swarm=swarm)
    validate_spec(spec)
    return spec


def _swarm_entry(source: str, key: str, how):
    where = f"swarm.{key}"
    if isinstance(how, list):
        how = {"range": how}
    if not isinstance(how, dict) or set(how) - {"range", "steps", "choice"} or ("range" in how) == ("choice" in how):
        raise SweepError(f"{source}: key '{where}' must be [low, high], {{ range = [low, high], steps = N }} "
                         f"or {{ choice = [values] }}; got {how!r}")
    if "choice" in how:
        choices = how["choice"]
        if not isinstance(choices, list) or not choices or not all(
                _is_scalar(v) or (key == "mutant" and isinstance(v, list)) for v in choices):
            raise SweepError(f"{source}: key '{where}.choice' must be a non-empty list of values; got {choices!r}")
        return ("choice", list(choices)), list(choices)
    bounds = how["range"]
    numeric = isinstance(bounds, list) and len(bounds) == 2 and all(
        isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
    if not numeric or bounds[0] > bounds[1]:
        raise SweepError(f"{source}: key '{where}' must be a range [low, high] of two numbers, low <= high; "
                         f"got {bounds!r}")
    steps = how.get("steps", SWARM_FLOAT_STEPS)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise SweepError(f"{source}: key '{where}.steps' must be an integer >= 2; got {steps!r}")
    lo, hi = bounds
    if isinstance(lo, int) and isinstance(hi, int) and "steps" not in how:
        return ("int", lo, hi), list(range(lo, hi + 1))
    grid = [round(lo + (hi - lo) * i / (steps - 1), 6) for i in range(steps)]
    return ("choice", grid), grid


def validate_spec(spec: SweepSpec) -> None:
    """Every point's scenario must load (before Spark starts); mutant names must exist."""
    from store.mutants import CATALOGUE

    try:
        base = apply_overrides(spec.base_doc, spec.overrides, f"{spec.source} [overrides]")
        scenario_from_dict(base, f"{spec.source} [overrides]")
    except ScenarioError as error:
        raise SweepError(str(error)) from None
    table = "grid" if spec.mode == "grid" else "swarm"
    for key in spec.keys:
        for value in spec.values[key]:
            if key == "mutant":
                for name in mutants_of(value):
                    if name not in CATALOGUE:
                        raise SweepError(f"{spec.source}: key '{table}.mutant' names unknown mutant {name!r}"
                                         f"{_suggest(name, CATALOGUE)}; known: {', '.join(sorted(CATALOGUE))}")
                continue
            where = f"{spec.source} [{table}] {key} = {format_value(value)!r}"
            try:
                scenario_from_dict(apply_overrides(base, {key: value}, where), where)
            except ScenarioError as error:
                raise SweepError(str(error)) from None
    seen = set()
    for params, _seed in spec.points():
        combo = tuple(format_value(params[k]) for k in spec.keys)
        if combo in seen:
            continue
        seen.add(combo)
        where = f"{spec.source} [{table}] {cell_key(spec.keys, params)}"
        try:
            scenario_from_dict(apply_overrides(base, _scenario_overrides(params), where), where)
        except ScenarioError as error:
            raise SweepError(str(error)) from None


def load_sweep_file(path: str) -> SweepSpec:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as error:
        raise SweepError(f"{path}: cannot be read: {error.strerror}") from None
    return parse_sweep_text(text, path)


def _scenario_overrides(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "mutant"}


# --- tasks -----------------------------------------------------------------------------------------


def make_tasks(spec: SweepSpec, out_dir: str) -> list[dict]:
    """One task per (parameters, seed), with what a worker needs (no file access on the worker).

    Writes ``DIR/scenarios/<cell_id>.toml`` (the base with the cell's overrides) for the replay
    command of each row."""
    from .toml_out import dumps

    scen_dir = os.path.join(out_dir, "scenarios")
    os.makedirs(scen_dir, exist_ok=True)
    base = apply_overrides(spec.base_doc, spec.overrides, spec.source)
    written = {}
    tasks = []
    for params, seed in spec.points():
        cell = cell_key(spec.keys, params)
        cid = cell_id(cell)
        if cid not in written:
            doc = apply_overrides(base, _scenario_overrides(params), spec.source)
            doc["description"] = (f"Sweep '{spec.name}', cell {cell}. " + doc.get("description", "")).strip()
            path = os.path.join(scen_dir, f"{cid}.toml")
            _write_atomic(path, dumps(doc).encode())
            written[cid] = (doc, path)
        doc, path = written[cid]
        mutants = mutants_of(params.get("mutant"))
        repro = " ".join(["rmqsim", "run", path, "--seed", str(seed)] + [f"--mutant {m}" for m in sorted(mutants)])
        tasks.append({"cell": cell, "cell_id": cid, "seed": seed, "doc": doc, "source": path, "mutants": mutants,
                      "params": {spec.columns[k]: format_value(v) for k, v in params.items()}, "repro": repro})
    return tasks


def _default_checker():
    from sim.checking import check_run

    return check_run


def describe_error(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" (at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}{where}"[:500]


def run_task(task: dict, check=None) -> dict:
    """Run one (parameters, seed); never raises: an exception becomes the row's ``error``."""
    start = time.perf_counter()  # wall-clock ok: measured, never part of a history
    row = {"cell": task["cell"], "cell_id": task["cell_id"], "seed": task["seed"], **task["params"],
           "repro": task["repro"], "error": None, "checked": False, "holds": None, "violated": [],
           "first_violation": None, **{f"ok_{name}": None for name in INVARIANTS}}
    try:
        from sim.run import run_scenario, simulator_error_line

        scenario = scenario_from_dict(task["doc"], task["source"])
        checker = check if check is not None else _default_checker()
        result = run_scenario(scenario, task["seed"], mutants=task["mutants"], check=checker,
                              scenario_arg=task["source"])
        summary = result.summary
        if summary.get("simulator_error") is not None:  # the run stopped on a bug: the row's error says where
            row.update({"error": simulator_error_line(summary)[:500], "history_sha256": summary["history_sha256"],
                        "wall_s": round(time.perf_counter() - start, 4)})  # wall-clock ok
            return row
        invariants = summary["invariants"] or {}
        violated = sorted(name for name, v in invariants.items() if not v["holds"])
        first = None
        for name in violated:
            for violation in invariants[name]["violations"][:1]:
                first = f"{name}: {violation.get('msg_id')}: {violation.get('explanation')}"[:400]
                break
            if first:
                break
        stats = summary["stats"]
        late = stats.get("lateness_ms", {})
        dlq_times = time_to_dlq_ms(result.history.events)  # the same definition as summary.json's stats
        row.update({
            "era": summary["era"], "mutants": "+".join(summary["mutants"]), "virtual_ms": summary["virtual_ms"],
            "events": summary["events"], "history_sha256": summary["history_sha256"],
            "checked": bool(invariants), "holds": (not violated) if invariants else None,
            "violated": violated, "first_violation": first,
            **{f"ok_{name}": invariants[name]["holds"] if name in invariants else None for name in INVARIANTS},
            "sent": stats.get("sent"), "consumed": stats.get("consumed"),
            "failed_attempts": stats.get("failed_attempts"), "duplicates": stats.get("duplicates"),
            "dlq": stats.get("dlq"), "crashes": stats.get("crashes"), "faults": stats.get("faults"),
            "delivered_from_schedule": stats.get("delivered_from_schedule"),
            "lateness_p50_ms": late.get("p50"), "lateness_p99_ms": late.get("p99"), "lateness_max_ms": late.get("max"),
            "time_to_dlq_ms": dlq_times[:MAX_DLQ_SAMPLES],
            "time_to_dlq_p50_ms": percentile(dlq_times, 0.5), "time_to_dlq_max_ms": max(dlq_times) if dlq_times else None,
            "probes_hit": sorted(summary.get("probes", {})),  # coverage probes (store/probes.py) this run reached
        })
    except (Exception, SystemExit) as error:  # a run that raises is a row, never a failed sweep
        row["error"] = describe_error(error)
    row["wall_s"] = round(time.perf_counter() - start, 4)  # wall-clock ok
    return row


def row_schema(spec_columns):
    import pyarrow as pa

    fields = [("cell", pa.string()), ("cell_id", pa.string()), ("seed", pa.int64())]
    fields += [(col, pa.string()) for col in spec_columns]
    fields += [("era", pa.string()), ("mutants", pa.string()), ("error", pa.string()),
               ("checked", pa.bool_()), ("holds", pa.bool_()), ("violated", pa.list_(pa.string())),
               ("first_violation", pa.string())]
    fields += [(f"ok_{name}", pa.bool_()) for name in INVARIANTS]
    fields += [(name, pa.int64()) for name in (
        "sent", "consumed", "failed_attempts", "duplicates", "dlq", "crashes", "faults", "delivered_from_schedule",
        "lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms")]
    fields += [("time_to_dlq_ms", pa.list_(pa.int64())), ("time_to_dlq_p50_ms", pa.int64()),
               ("time_to_dlq_max_ms", pa.int64()), ("virtual_ms", pa.int64()), ("events", pa.int64()),
               ("wall_s", pa.float64()), ("history_sha256", pa.string()), ("repro", pa.string()),
               ("probes_hit", pa.list_(pa.string()))]
    return pa.schema(fields)


def rows_to_table(rows: list[dict], spec_columns):
    import pyarrow as pa

    schema = row_schema(spec_columns)
    return pa.Table.from_pylist([{f.name: row.get(f.name) for f in schema} for row in rows], schema=schema)


# --- the Parquet store of rows --------------------------------------------------------------------


def _write_atomic(path: str, data: bytes) -> None:
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


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


# --- Spark -----------------------------------------------------------------------------------------

_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
"""


def _log4j2_file() -> str:
    path = os.path.join(tempfile.gettempdir(), f"rmqsim-log4j2-{hashlib.sha256(_LOG4J2.encode()).hexdigest()[:8]}.properties")
    if not os.path.exists(path):
        _write_atomic(path, _LOG4J2.encode())
    return path


def spark_session(master: str | None = None, app_name: str = "rmqsim-sweep"):
    """A quiet SparkSession bound to 127.0.0.1: no UI, log level WARN, this interpreter for the workers."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    log4j = f"-Dlog4j2.configurationFile=file:{_log4j2_file()} -XX:TieredStopAtLevel=1"
    builder = (SparkSession.builder.master(master or "local[*]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.pyspark.driver.python", sys.executable)
               .config("spark.driver.extraJavaOptions", log4j)
               .config("spark.executor.extraJavaOptions", log4j)
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.debug.maxToStringFields", "1000")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.python.worker.reuse", "true"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def environment_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean Spark (or its cluster) failed, not a run: the command line reports them
    as a one-line environment error."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (Py4JError, PySparkException, ConnectionError, OSError, RuntimeError)


def _active_session():
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


SPARK_TASK_FAILED = "SparkTaskFailed"  # a row whose task died (not a Python exception); recomputed on resume


def _first_line(text: str) -> str:
    """The useful line of a Spark job failure (its Python or Java exception), shortened."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    match = re.search(r"most recent failure: [^\n]*?\): ([^\n]+)", text)
    if match:
        return match.group(1).replace("org.apache.spark.SparkException: ", "")[:300]
    for line in lines:
        if "Error" in line or "Exception" in line or "exited" in line or "crashed" in line:
            return line[:300]
    return lines[0][:300] if lines else "the task failed"


def _run_batch(spark, batch: list[dict], check, group: int) -> list[dict]:
    """One Spark job: the batch's runs in tasks of ``group`` runs each (a PySpark task costs some tens of
    milliseconds of scheduling and serialisation; small groups amortise it for short runs)."""
    sc = spark.sparkContext
    sc.setJobGroup("rmqsim-sweep", f"{len(batch)} runs", interruptOnCancel=True)
    slices = max(1, math.ceil(len(batch) / group))
    return sc.parallelize(batch, slices).mapPartitions(lambda tasks: [run_task(t, check) for t in tasks]).collect()


def _run_batch_isolating(spark, batch: list[dict], check, group: int) -> list[dict]:
    """A batch whose job failed (a worker died, not a Python exception) is re-run task by task; a task
    that still fails becomes an error row."""
    try:
        return _run_batch(spark, batch, check, group)
    except Exception as job_error:  # noqa: BLE001 - py4j raises several types
        if spark.sparkContext._jsc is None or any(
                text in str(job_error) for text in ("stopped SparkContext", "SparkContext was shut down")):
            raise  # the session or the cluster is gone: an environment failure, not a run's
        if len(batch) == 1:
            task = batch[0]
            text = str(job_error)
            return [{"cell": task["cell"], "cell_id": task["cell_id"], "seed": task["seed"], **task["params"],
                     "repro": task["repro"], "checked": False, "violated": [],
                     "error": f"{SPARK_TASK_FAILED}: {_first_line(text)}"}]
        return [row for task in batch for row in _run_batch_isolating(spark, [task], check, 1)]


def plan_batches(total: int, parallelism: int, batch_size: int | None = None) -> tuple[int, int]:
    """(runs per Spark task, runs per Spark job): one run per task for small sweeps (every core busy),
    groups of up to 8 for large ones; each job has about four tasks per core."""
    group = max(1, min(8, total // (parallelism * 16)))
    size = batch_size or max(4, group * parallelism * 4)
    return group, size


def execute(spark, tasks: list[dict], *, check=None, on_rows=None, progress: bool = True, batch_size: int | None = None):
    """Run ``tasks`` on Spark in batches (two jobs in flight, so stragglers do not idle the cores);
    ``on_rows(rows)`` as each batch finishes; a tqdm bar over finished runs. Returns all rows."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from .progress import progress_bar

    sc = spark.sparkContext
    parallelism = max(1, sc.defaultParallelism)
    group, size = plan_batches(len(tasks), parallelism, batch_size)
    batches = [tasks[i:i + size] for i in range(0, len(tasks), size)]
    bar = progress_bar(total=len(tasks), desc="sweep", unit="run", enabled=progress)
    rows: list[dict] = []
    done = 0
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rmqsim-sweep")
    pending = {}
    queue = list(batches)
    try:
        while queue or pending:
            while queue and len(pending) < 2:
                batch = queue.pop(0)
                pending[pool.submit(_run_batch_isolating, spark, batch, check, group)] = batch
            finished, _ = wait(list(pending), timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                pending.pop(future)
                batch_rows = future.result()
                done += len(batch_rows)
                rows.extend(batch_rows)
                if on_rows is not None:
                    on_rows(batch_rows)
            running = 0
            tracker = sc.statusTracker()
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    running += info.numCompletedTasks * group
            bar.n = min(len(tasks), done + running)
            bar.refresh()
    except BaseException:
        sc.cancelJobGroup("rmqsim-sweep")
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        bar.n = done
        bar.close()
    return rows


# --- aggregation -----------------------------------------------------------------------------------


def _metrics(F):
    ok = F.col("error").isNull()
    checked = ok & F.col("checked")
    out = [
        F.count(F.lit(1)).alias("runs"),
        F.sum((~ok).cast("int")).alias("errors"),
        F.sum(checked.cast("int")).alias("checked"),
        F.sum((checked & ~F.col("holds")).cast("int")).alias("violations"),
    ]
    out += [F.sum((checked & (F.col(f"ok_{n}") == F.lit(False))).cast("int")).alias(f"violations_{n}")
            for n in INVARIANTS]
    for name in ("duplicates", "dlq", "consumed", "sent", "lateness_p99_ms", "lateness_p50_ms"):
        value = F.when(ok, F.col(name))
        out += [F.avg(value).alias(f"{name}_mean"), F.stddev_samp(value).alias(f"{name}_sd"),
                F.count(value).alias(f"{name}_n")]
    out += [F.max(F.when(ok, F.col("lateness_max_ms"))).alias("lateness_max_ms"),
            F.expr("percentile_approx(CASE WHEN error IS NULL THEN lateness_p99_ms END, 0.5, 10000)")
             .alias("lateness_p99_ms_median"),
            F.sum(F.when(ok, F.col("dlq"))).alias("dlq_total"),
            F.avg("wall_s").alias("wall_s_mean")]
    return out


def _finish(F, df):
    n, v = F.col("checked"), F.col("violations")
    p = v / n
    z2 = Z95 * Z95
    center = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * F.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    df = (df.withColumn("violation_rate", F.when(n > 0, p))
            .withColumn("violation_rate_lo", F.when(n > 0, F.greatest(F.lit(0.0), center - half)))
            .withColumn("violation_rate_hi", F.when(n > 0, F.least(F.lit(1.0), center + half))))
    for name in ("duplicates", "lateness_p99_ms", "dlq"):
        mean, sd, cnt = F.col(f"{name}_mean"), F.coalesce(F.col(f"{name}_sd"), F.lit(0.0)), F.col(f"{name}_n")
        half = F.when(cnt > 0, Z95 * sd / F.sqrt(cnt))
        df = df.withColumn(f"{name}_lo", mean - half).withColumn(f"{name}_hi", mean + half)
    return df


def _dlq_quantiles(F, df):
    """Time-to-DLQ quantiles from the sorted, flattened per-run arrays (no explode, no join)."""
    arr, n = F.col("_ttd"), F.size(F.col("_ttd"))

    def q(p):
        return F.when(n > 0, F.element_at(arr, F.greatest(F.lit(1), F.ceil(n * p).cast("int"))))

    return (df.withColumn("time_to_dlq_p50_ms", q(0.5)).withColumn("time_to_dlq_p90_ms", q(0.9))
              .withColumn("time_to_dlq_max_ms", F.when(n > 0, F.element_at(arr, -1)))
              .withColumn("time_to_dlq_n", n).drop("_ttd"))


def aggregate(spark, rows_table, spec: SweepSpec):
    """Spark aggregation of the rows: per cell, and per value of each parameter (the marginals)."""
    from pyspark.sql import functions as F

    df = spark.createDataFrame(rows_table).cache()
    cols = [spec.columns[k] for k in spec.keys]
    ttd = F.array_sort(F.flatten(F.collect_list(F.when(F.col("error").isNull(), F.col("time_to_dlq_ms"))))).alias("_ttd")
    cells = _dlq_quantiles(F, _finish(F, df.groupBy("cell", "cell_id", *cols).agg(*_metrics(F), ttd)))
    marginals = None
    if spec.keys:
        long = None
        for key in spec.keys:
            part = df.withColumn("param", F.lit(key)).withColumn("value", F.col(spec.columns[key]))
            long = part if long is None else long.unionByName(part)
        marginals = _dlq_quantiles(F, _finish(F, long.groupBy("param", "value").agg(*_metrics(F), ttd)))
    cells_t = cells.toArrow()
    marg_t = marginals.toArrow() if marginals is not None else None
    df.unpersist()
    return _ordered_cells(cells_t, spec), _ordered_marginals(marg_t, spec)


def _ordered_cells(table, spec):
    order = {}
    for params, _seed in spec.points():
        order.setdefault(cell_key(spec.keys, params), len(order))
    cells = table.column("cell").to_pylist()
    return table.take(sorted(range(len(cells)), key=lambda i: order.get(cells[i], len(order))))


def _ordered_marginals(table, spec):
    if table is None:
        return None
    pos = {(k, format_value(v)): (ki, vi) for ki, k in enumerate(spec.keys) for vi, v in enumerate(spec.values[k])}
    params, values = table.column("param").to_pylist(), table.column("value").to_pylist()
    return table.take(sorted(range(len(params)), key=lambda i: pos.get((params[i], values[i]), (1 << 30, 0))))


def _json_rows(table) -> list[dict]:
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
        _write_atomic(os.path.join(out_dir, f"{name}.json"),
                      (json.dumps(_json_rows(table), indent=1) + "\n").encode())


# --- the sweep -------------------------------------------------------------------------------------


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
    master: str


def _check_dir(out_dir: str, spec: SweepSpec) -> None:
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


def run_sweep(spec: SweepSpec, out_dir: str, *, spark=None, master: str | None = None, progress: bool = True,
              check=None, batch_size: int | None = None) -> SweepResult:
    """Run the missing rows of ``spec`` into ``out_dir`` and aggregate them all.

    ``spark``: an existing SparkSession (kept open); otherwise one is made for ``master`` (default
    ``local[*]``; an already active session is reused and kept open) and stopped at the end.
    ``check``: the invariant checker ``(history, world) -> dict`` shipped to the workers; by default each
    worker uses ``model.invariants.check_history`` when it exists."""
    start = time.perf_counter()  # wall-clock ok: reported
    os.makedirs(out_dir, exist_ok=True)
    _check_dir(out_dir, spec)
    tasks = make_tasks(spec, out_dir)
    meta = spec.metadata()
    _write_atomic(os.path.join(out_dir, "sweep.json"), (json.dumps({**meta, "complete": False}, indent=1) + "\n").encode())
    columns = [spec.columns[k] for k in spec.keys]
    existing = read_rows(out_dir, columns=["cell", "seed", "error"])
    have = set()
    if existing is not None:
        have = {(r["cell"], r["seed"]) for r in existing.to_pylist()
                if not (r["error"] or "").startswith(SPARK_TASK_FAILED)}
    todo = [t for t in tasks if (t["cell"], t["seed"]) not in have]
    reused = len(tasks) - len(todo)

    owned = False
    if spark is None:
        spark = _active_session() if master is None else None
        if spark is None:
            spark = spark_session(master)
            owned = True
    try:
        if todo:
            execute(spark, todo, check=check, progress=progress, batch_size=batch_size,
                    on_rows=lambda rows: write_part(out_dir, rows_to_table(rows, columns)))
        wanted = {(t["cell"], t["seed"]) for t in tasks}
        table = read_rows(out_dir)
        keys = list(zip(table.column("cell").to_pylist(), table.column("seed").to_pylist(), strict=True))
        table = table.take([i for i, key in enumerate(keys) if key in wanted]).select(
            rows_to_table([], columns).schema.names)
        cells, marginals = aggregate(spark, table, spec)
        master_url = spark.sparkContext.master
    finally:
        if owned:
            spark.stop()
    write_aggregates(out_dir, cells, marginals)
    cell_rows = _json_rows(cells)
    errors = sum(r["errors"] or 0 for r in cell_rows)
    violated = sum(r["violations"] or 0 for r in cell_rows)
    wall_s = time.perf_counter() - start  # wall-clock ok
    _write_atomic(os.path.join(out_dir, "sweep.json"), (json.dumps(
        {**meta, "complete": True, "rows": len(tasks), "errors": errors, "violated_runs": violated,
         "last_invocation": {"master": master_url, "computed": len(todo), "reused": reused,
                             "wall_s": round(wall_s, 3)}}, indent=1) + "\n").encode())
    return SweepResult(out_dir=out_dir, spec=spec, total=len(tasks), computed=len(todo), reused=reused,
                       errors=errors, violated=violated, cells=cell_rows, wall_s=wall_s, master=master_url)


def format_result(result: SweepResult, limit: int = 40) -> str:
    spec = result.spec
    lines = [f"sweep '{spec.name}' on {result.master}: {result.total} runs ({result.computed} computed, "
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
        cell = " ".join(f"{row[c]:{w}}" for c, w in zip(cols, widths, strict=True)) if cols else "base"
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

