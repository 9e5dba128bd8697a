"""The sweep file: its grammar, its checks and its plan (every (parameters, seed) as a task).

A sweep file names a base scenario and either a parameter grid with a number of seeds per cell, or a
random "swarm" of parameter draws, and optionally the question its report answers::

    name = "flush-interval"                 # optional (default: the file's stem)
    base = "crash-before-delay-offset-flush"  # a built-in scenario or a path (relative to this file)
    seeds = 10                              # per cell (grid mode)
    first_seed = 1                          # optional

    [overrides]                             # optional: fixed for every run
    "consumer.max_reconsume_times" = 2

    [grid]                                  # any key apply_overrides takes, and "mutant"
    "broker.flush_delay_offset_interval" = ["1s", "10s", "30s"]
    "consumer[1].fail_probability" = [0.1, 0.5]   # an indexed key: the second [[consumer]]
    mutant = ["none", "skip_failed_delivery"]   # a name, "none", or a list of names

    [report]                                # optional: the what-if question (reports/sweep_metrics.py)
    metric = "dlq_rate"
    by = "broker.flush_delay_offset_interval"   # one of the swept keys

or, instead of ``[grid]`` and ``seeds``::

    [swarm]                                 # one random draw per run, random.Random(seed)
    runs = 200
    "faults.process_crashes" = [0, 3]       # integers: uniform in [0, 3]
    "faults.put_failure_rate" = [0.0, 0.1]  # numbers: one of 5 evenly spaced values (or { range = [lo, hi], steps = N })
    "broker.era" = { choice = ["5.3.3", "4.9.8"] }
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
import tomllib
from dataclasses import dataclass, field

from reports.sweep_metrics import METRICS, metric_names

from .catalogue import resolve_scenario
from .scenario import ScenarioError, apply_overrides, scenario_from_dict, suggest

SWARM_FLOAT_STEPS = 5


class SweepError(ScenarioError):
    """A sweep file is wrong; the message names the file, the key and what was expected."""


def write_atomic(path: str, data: bytes) -> None:
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# --- values, columns and their types -----------------------------------------------------------------


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


def value_type(key: str, values) -> str:
    """The Parquet type of a parameter's column: "bool", "int", "float" or "str" (durations such as "10s",
    eras and mutant lists are strings; a mix of ints and floats is "float")."""
    if key == "mutant" or not values:
        return "str"
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "float"
    return "str"


def typed_value(kind: str, value):
    """A parameter value as its column stores it."""
    if kind == "str":
        return format_value(value)
    if kind == "float":
        return float(value)
    return value


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
    report: dict = field(default_factory=dict)  # {"metric": name, "by": key} or {}

    @property
    def columns(self) -> dict[str, str]:
        return {key: column_name(key) for key in self.keys}

    @property
    def types(self) -> dict[str, str]:
        """key -> "bool" | "int" | "float" | "str" (the Parquet type of its column)."""
        return {key: value_type(key, self.values[key]) for key in self.keys}

    @property
    def column_types(self) -> dict[str, str]:
        """column -> type, what the Parquet row schema needs."""
        return {self.columns[k]: t for k, t in self.types.items()}

    def typed_params(self, params: dict) -> dict:
        """One point's parameters as columns with their types."""
        types = self.types
        return {self.columns[k]: typed_value(types[k], v) for k, v in params.items()}

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
                "mode": self.mode, "keys": list(self.keys), "columns": self.columns, "types": self.types,
                "values": {k: [format_value(v) for v in self.values[k]] for k in self.keys},
                "seeds": self.seeds, "first_seed": self.first_seed, "swarm_runs": self.swarm_runs,
                "overrides": self.overrides, "invariants": list(invariant_names()), "report": self.report,
                "fingerprint": self.fingerprint()}


def invariant_names() -> tuple[str, ...]:
    from .sweep_rows import INVARIANTS

    return INVARIANTS


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


# --- the grammar ---------------------------------------------------------------------------------------

_TOP_KEYS = ("name", "description", "base", "seeds", "first_seed", "overrides", "grid", "swarm", "report")
_REPORT_KEYS = ("metric", "by")


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
            raise SweepError(f"{source}: unknown key '{key}'{suggest(key, _TOP_KEYS)}; "
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
    report = _report_table(source, doc.get("report"), keys)
    spec = SweepSpec(source=source, name=name, description=description, base=base, base_doc=base_doc,
                     base_source=base_scenario.source, mode=mode, keys=keys, values=values, seeds=seeds,
                     first_seed=first_seed, overrides=overrides, swarm_runs=swarm_runs, swarm=swarm, report=report)
    validate_spec(spec)
    return spec


def _report_table(source: str, raw, keys: tuple[str, ...]) -> dict:
    """``[report] metric = NAME, by = KEY``: the question the report opens with (a metric of
    ``reports/sweep_metrics.py`` against one swept key)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise SweepError(f"{source}: 'report' must be a table with 'metric' and 'by'")
    raw = dict(raw)
    for key in raw:
        if key not in _REPORT_KEYS:
            raise SweepError(f"{source}: unknown key 'report.{key}'{suggest(key, _REPORT_KEYS)}; "
                             f"known keys: {', '.join(_REPORT_KEYS)}")
    metric = raw.get("metric")
    if not isinstance(metric, str) or metric not in METRICS:
        hint = suggest(metric, METRICS) if isinstance(metric, str) else ""
        raise SweepError(f"{source}: key 'report.metric' must be one of {metric_names()}; got {metric!r}{hint}")
    by = raw.get("by")
    if not keys:
        raise SweepError(f"{source}: key 'report.by' needs a swept key, and this sweep sweeps none")
    if by is None and len(keys) == 1:
        by = keys[0]
    if not isinstance(by, str) or by not in keys:
        hint = suggest(by, keys) if isinstance(by, str) else ""
        raise SweepError(f"{source}: key 'report.by' must be one of the swept keys ({', '.join(keys)}); "
                         f"got {by!r}{hint}")
    return {"metric": metric, "by": by}


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
                                         f"{suggest(name, CATALOGUE)}; known: {', '.join(sorted(CATALOGUE))}")
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
            scenario_from_dict(apply_overrides(base, scenario_overrides(params), where), where)
        except ScenarioError as error:
            raise SweepError(str(error)) from None


def load_sweep_file(path: str) -> SweepSpec:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as error:
        raise SweepError(f"{path}: cannot be read: {error.strerror}") from None
    return parse_sweep_text(text, path)


def scenario_overrides(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "mutant"}


# --- the plan --------------------------------------------------------------------------------------


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
            doc = apply_overrides(base, scenario_overrides(params), spec.source)
            doc["description"] = (f"Sweep '{spec.name}', cell {cell}. " + doc.get("description", "")).strip()
            path = os.path.join(scen_dir, f"{cid}.toml")
            write_atomic(path, dumps(doc).encode())
            written[cid] = (doc, path)
        doc, path = written[cid]
        mutants = mutants_of(params.get("mutant"))
        repro = " ".join(["rmqsim", "run", path, "--seed", str(seed)] + [f"--mutant {m}" for m in sorted(mutants)])
        tasks.append({"cell": cell, "cell_id": cid, "seed": seed, "doc": doc, "source": path, "mutants": mutants,
                      "params": spec.typed_params(params), "repro": repro})
    return tasks

