"""Sweeps: the sweep file's errors, runs with the Spark-free ``map`` executor (rows, cells, resume, error
rows), the proof that Spark gives the same rows, a task that dies on Spark, and the same sweep on a real
Spark standalone cluster started on 127.0.0.1."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib

import pyarrow.parquet as pq
import pytest

from scenarios import sweep as sw
from scenarios import sweep_spark
from scenarios.catalogue import builtin_names, load_builtin
from scenarios.cli import main
from scenarios.scenario import scenario_from_dict
from scenarios.toml_out import dumps
from sim.run import run_scenario

TINY = """
name = "tiny"
description = "A few delayed messages for the sweep tests."
duration = "3s"
drain = "20s"
[[topic]]
name = "TopicTest"
queues = 2
[[producer]]
topic = "TopicTest"
messages = 20
rate = "20/s"
delay_levels = [1, 2]
[[consumer]]
group = "GroupA"
topic = "TopicTest"
"""


def write_sweep(tmp_path, body: str, name: str = "s.toml") -> str:
    (tmp_path / "tiny.toml").write_text(TINY)
    path = tmp_path / name
    path.write_text(body)
    return str(path)


# --- the sweep file (no Spark) ---------------------------------------------------------------------


@pytest.mark.parametrize("body, expected", [
    ('base = "tiny.toml"\nseed = 3\n', ["unknown key 'seed'", "did you mean 'seeds'"]),
    ('seeds = 3\n', ["key 'base' is missing"]),
    ('base = "retry-ladder-to-dl"\nseeds = 1\n', ["key 'base'", "did you mean 'retry-ladder-to-dlq'"]),
    ('base = "tiny.toml"\n', ["key 'seeds' is missing"]),
    ('base = "tiny.toml"\nseeds = 0\n', ["key 'seeds' must be an integer >= 1", "got 0"]),
    ('base = "tiny.toml"\nseeds = 2\n[grid]\n"broker.era" = ["5.3.3", "3.0"]\n',
     ["[grid] broker.era = '3.0'", "key 'broker.era' must be one of '5.3.3', '4.9.8'", "got '3.0'"]),
    ('base = "tiny.toml"\nseeds = 2\n[grid]\n"brokr.era" = ["5.3.3"]\n', ["'brokr'", "did you mean 'broker'"]),
    ('base = "tiny.toml"\nseeds = 2\n[grid]\nbroker.flush_delay_offset_intervall = ["1s"]\n',
     ["unknown key 'broker.flush_delay_offset_intervall'", "did you mean 'flush_delay_offset_interval'"]),
    ('base = "tiny.toml"\nseeds = 2\n[grid]\n"faults.process_crashes" = 2\n',
     ["key 'grid.faults.process_crashes' must be a non-empty list"]),
    ('base = "tiny.toml"\nseeds = 2\n[grid]\n"faults.process_crashes" = [1, 1]\n', ["lists a value twice"]),
    ('base = "tiny.toml"\nseeds = 2\n[grid]\nmutant = ["none", "skip_faild_delivery"]\n',
     ["unknown mutant 'skip_faild_delivery'", "did you mean 'skip_failed_delivery'"]),
    ('base = "tiny.toml"\nseeds = 2\n[swarm]\nruns = 3\n"faults.process_crashes" = [0, 2]\n',
     ["key 'seeds' is for [grid] sweeps"]),
    ('base = "tiny.toml"\nseeds = 2\n[grid]\nmutant = ["none"]\n[swarm]\nruns = 3\n',
     ["either [grid] (with 'seeds') or [swarm]"]),
    ('base = "tiny.toml"\n[swarm]\nruns = 3\n"faults.process_crashes" = [2, 0]\n',
     ["key 'swarm.faults.process_crashes' must be a range [low, high]"]),
    ('base = "tiny.toml"\n[swarm]\n"faults.process_crashes" = [0, 2]\n', ["key 'swarm.runs' must be an integer"]),
    ('base = "tiny.toml"\nseeds = 2\n[overrides]\n"consumer.fail_probability" = 1.5\n',
     ["[overrides]", "key 'consumer[0].fail_probability' must be a number in [0.0, 1.0]"]),
])
def test_sweep_file_errors_name_file_key_and_expectation(tmp_path, body, expected):
    path = write_sweep(tmp_path, body)
    with pytest.raises(sw.SweepError) as info:
        sw.load_sweep_file(path)
    message = str(info.value)
    assert message.startswith(path), message
    for fragment in expected:
        assert fragment in message, message


def test_a_bad_sweep_file_fails_on_the_command_line_before_spark_starts(tmp_path, capsys, monkeypatch):
    def no_spark(*args, **kwargs):
        raise AssertionError("Spark must not start for a bad sweep file")

    monkeypatch.setattr(sweep_spark, "spark_session", no_spark)
    monkeypatch.setattr(sw, "run_sweep", no_spark)
    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 2\n[grid]\n"broker.era" = ["5.3.3", "6.0"]\n')
    assert main(["sweep", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and path in err[0] and "broker.era" in err[0]
    assert main(["sweep", str(tmp_path / "missing.toml")]) == 2
    assert "cannot be read" in capsys.readouterr().err
    good = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 1\n', "good.toml")
    assert main(["sweep", good, "--master", "nonsense://x"]) == 2
    assert "--master nonsense://x: expected local[N]" in capsys.readouterr().err


def test_grid_points_cells_and_nested_keys(tmp_path):
    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 3\nfirst_seed = 5\n[grid]\n'
                                 'broker.era = ["5.3.3", "4.9.8"]\nmutant = ["none", ["dlq_keeps_delay", "dlq_threshold_gt"]]\n')
    spec = sw.load_sweep_file(path)
    assert spec.keys == ("broker.era", "mutant") and spec.mode == "grid"
    points = spec.points()
    assert len(points) == 2 * 2 * 3 and {seed for _, seed in points} == {5, 6, 7}
    cells = {sw.cell_key(spec.keys, p) for p, _ in points}
    assert "broker.era=4.9.8 mutant=dlq_keeps_delay+dlq_threshold_gt" in cells and len(cells) == 4
    assert spec.columns == {"broker.era": "p_broker_era", "mutant": "p_mutant"}
    assert sw.mutants_of("none") == () and sw.mutants_of(["a", "b"]) == ("a", "b")


def test_swarm_draws_are_seeded_and_within_their_ranges(tmp_path):
    path = write_sweep(tmp_path, 'base = "tiny.toml"\n[swarm]\nruns = 40\n"faults.process_crashes" = [0, 3]\n'
                                 '"consumer.fail_probability" = [0.0, 0.2]\n'
                                 '"broker.era" = { choice = ["5.3.3", "4.9.8"] }\n')
    spec = sw.load_sweep_file(path)
    first, again = spec.points(), sw.load_sweep_file(path).points()
    assert first == again and len(first) == 40
    crashes = {p["faults.process_crashes"] for p, _ in first}
    probs = {p["consumer.fail_probability"] for p, _ in first}
    assert crashes <= {0, 1, 2, 3} and len(crashes) >= 3
    assert probs <= {0.0, 0.05, 0.1, 0.15, 0.2} and len(probs) >= 3
    assert {p["broker.era"] for p, _ in first} == {"5.3.3", "4.9.8"}
    assert sw.draw_swarm(spec.swarm, 7) == sw.draw_swarm(spec.swarm, 7)


def test_toml_writer_round_trips_every_builtin_scenario():
    for name in builtin_names():
        doc = load_builtin(name).doc
        assert tomllib.loads(dumps(doc)) == doc, name
    doc = {"name": "x", "faults": {"clock_steps": [{"at": "30m", "by": "-5m"}]}, "topic": [{"name": "T"}],
           "odd key": 'quote " and \\ backslash', "f": 0.1}
    assert tomllib.loads(dumps(doc)) == doc


@pytest.mark.parametrize("report, expected", [
    ('metric = "dlq_rat"\nby = "consumer.fail_probability"\n',
     ["key 'report.metric' must be one of dlq_rate,", "got 'dlq_rat'", "did you mean 'dlq_rate'"]),
    ('metric = "dlq_rate"\nby = "consumer.fail_probabilty"\n',
     ["key 'report.by' must be one of the swept keys (consumer.fail_probability, broker.era)",
      "did you mean 'consumer.fail_probability'"]),
    ('metric = "dlq_rate"\nby = "consumer.max_reconsume_times"\n', ["key 'report.by' must be one of the swept keys"]),
    ('metric = "dlq_rate"\n', ["key 'report.by' must be one of the swept keys", "got None"]),
    ('metric = "dlq_rate"\nby = "broker.era"\nplot = "bars"\n', ["unknown key 'report.plot'"]),
])
def test_report_table_errors_name_file_and_key(tmp_path, capsys, report, expected):
    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 2\n[grid]\n"consumer.fail_probability" = [0.1, 0.5]\n'
                                 '"broker.era" = ["5.3.3", "4.9.8"]\n[report]\n' + report)
    with pytest.raises(sw.SweepError) as info:
        sw.load_sweep_file(path)
    message = str(info.value)
    assert message.startswith(path), message
    for fragment in expected:
        assert fragment in message, message
    assert main(["sweep", path, "--executor", "map"]) == 2  # exit 2, one line naming the file and the key
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and path in err[0] and "report." in err[0]


def test_report_table_and_parameter_types(tmp_path):
    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 1\n[grid]\n"consumer.fail_probability" = [0, 0.5]\n'
                                 '"faults.process_crashes" = [0, 2]\n"broker.era" = ["5.3.3"]\n'
                                 'mutant = ["none", ["dlq_keeps_delay", "dlq_threshold_gt"]]\n'
                                 '[report]\nmetric = "loss_rate"\nby = "faults.process_crashes"\n')
    spec = sw.load_sweep_file(path)
    assert spec.report == {"metric": "loss_rate", "by": "faults.process_crashes"}
    assert spec.types == {"consumer.fail_probability": "float", "faults.process_crashes": "int",
                          "broker.era": "str", "mutant": "str"}
    params, _ = spec.points()[-1]
    assert spec.typed_params(params) == {"p_consumer_fail_probability": 0.5, "p_faults_process_crashes": 2,
                                         "p_broker_era": "5.3.3", "p_mutant": "dlq_keeps_delay+dlq_threshold_gt"}
    # a single swept key is the default 'by'
    one = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 1\n[grid]\n"consumer.fail_probability" = [0.1]\n'
                                '[report]\nmetric = "dlq_rate"\n', "one.toml")
    assert sw.load_sweep_file(one).report == {"metric": "dlq_rate", "by": "consumer.fail_probability"}


def test_group_counts_are_per_group_not_summed():
    def start(group, topic="T", subscription="*", model="CLUSTERING"):
        return {"kind": "consumer_start", "group": group, "client_id": f"{group}-0", "topic": topic,
                "subscription": subscription, "model": model, "max_reconsume_times": 1}

    def send(m, t, tags=None):
        return {"kind": "send", "msg_id": m, "topic": "T", "status": "SEND_OK", "t_ms": t, "tags": tags}

    def consume(g, m, ok=True):
        return {"kind": "consume", "group": g, "client_id": f"{g}-0", "msg_id": m,
                "status": "CONSUME_SUCCESS" if ok else "RECONSUME_LATER", "t_ms": 50}

    events = [start("A"), start("B", subscription="x"), send("m1", 0, "x"), send("m2", 10, "y"), send("m3", 20, "x"),
              consume("A", "m1"), consume("A", "m1"), consume("A", "m2", ok=False),
              {"kind": "dlq", "group": "A", "msg_id": "m2", "t_ms": 1010}, consume("B", "m1", ok=False),
              {"kind": "dlq", "group": "B", "msg_id": "m1", "t_ms": 3000}, consume("B", "m3")]
    a, b = sw.group_counts(events, end_ms=None)
    assert a == {"group": "A", "expected": 3, "consumed": 1, "dlq": 1, "lost": 1, "pending": 0, "duplicates": 1,
                 "attempts": 3, "time_to_dlq_mean_ms": 1000}
    assert b == {"group": "B", "expected": 2, "consumed": 1, "dlq": 1, "lost": 0, "pending": 0, "duplicates": 0,
                 "attempts": 2, "time_to_dlq_mean_ms": 3000}


def test_the_map_executor_on_the_command_line(tmp_path, capsys):
    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 1\n[grid]\n"faults.process_crashes" = [0, 1]\n')
    out = tmp_path / "out"
    assert main(["sweep", path, "--executor", "map", "--out", str(out)]) in (0, 1)
    text = capsys.readouterr().out
    assert "with the map executor: 2 runs (2 computed" in text
    assert json.load(open(out / "sweep.json"))["last_invocation"]["executor"] == "map"
    assert main(["sweep", path, "--executor", "map", "--master", "local[2]"]) == 2
    assert "--master is for --executor spark" in capsys.readouterr().err


# --- the map executor (no JVM) --------------------------------------------------------------------


def test_local_sweep_writes_rows_cells_and_marginals(tmp_path):
    def fake_verdicts(history, world):  # defined here so that Spark ships it by value to the workers
        """Even seeds violate no_loss: a checker whose answers the test knows."""
        holds = world.seed % 2 == 1
        return {"no_loss": {"holds": holds, "checked": 1,
                            "violations": [] if holds else [{"msg_id": "M", "explanation": "made up"}]}}

    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 4\n[grid]\n"faults.process_crashes" = [0, 1]\n')
    spec = sw.load_sweep_file(path)
    out = str(tmp_path / "out")
    result = sw.run_sweep(spec, out, executor="map", progress=False, check=fake_verdicts)
    assert (result.total, result.computed, result.reused, result.errors) == (8, 8, 0, 0)
    rows = sw.read_rows(out).to_pylist()
    assert len(rows) == 8 and len({(r["cell"], r["seed"]) for r in rows}) == 8
    row = next(r for r in rows if r["p_faults_process_crashes"] == 1 and r["seed"] == 3)
    assert row["error"] is None and 0 < row["sent"] <= 20 and row["crashes"] == 1 and row["checked"]
    assert all(r["sent"] == 20 and r["crashes"] == 0 for r in rows if r["p_faults_process_crashes"] == 0)
    assert row["ok_no_loss"] is True and row["violated"] == [] and row["wall_s"] > 0
    bad = next(r for r in rows if r["seed"] == 2)
    assert bad["holds"] is False and bad["violated"] == ["no_loss"] and bad["first_violation"].startswith("no_loss: M")
    # a row is the same run as one made in this process: same history, byte for byte
    doc = tomllib.loads(open(os.path.join(out, "scenarios", row["cell_id"] + ".toml")).read())
    local = run_scenario(scenario_from_dict(doc, "t"), 3)
    assert list(row["probes_hit"]) == sorted(local.summary["probes"]) and "store.recover_abnormally" in row["probes_hit"]
    assert local.summary["history_sha256"] == row["history_sha256"]
    assert row["repro"] == f"rmqsim run {os.path.join(out, 'scenarios', row['cell_id'] + '.toml')} --seed 3"
    # cells: 2 of 4 runs violated in each cell; Wilson 95% interval
    cells = pq.read_table(os.path.join(out, "cells.parquet")).to_pylist()
    assert [c["p_faults_process_crashes"] for c in cells] == [0, 1]  # typed: an int column, not '0'/'1'
    assert pq.read_table(os.path.join(out, "cells.parquet")).schema.field("p_faults_process_crashes").type == "int64"
    for c in cells:
        assert (c["runs"], c["checked"], c["violations"], c["violations_no_loss"]) == (4, 4, 2, 2)
        assert c["violation_rate"] == 0.5
        assert math.isclose(c["violation_rate_lo"], 0.15003898915214947, rel_tol=1e-9)
        assert math.isclose(c["violation_rate_hi"], 0.8499610108478506, rel_tol=1e-9)
    assert cells[0]["duplicates_mean"] == 0 and cells[1]["duplicates_mean"] > 0
    assert cells[1]["lateness_max_ms"] > cells[0]["lateness_max_ms"]
    assert json.load(open(os.path.join(out, "cells.json")))[1]["cell"] == "faults.process_crashes=1"
    marginals = pq.read_table(os.path.join(out, "marginals.parquet")).to_pylist()
    assert [(m["param"], m["value"], m["runs"]) for m in marginals] == [
        ("faults.process_crashes", "0", 4), ("faults.process_crashes", "1", 4)]
    meta = json.load(open(os.path.join(out, "sweep.json")))
    assert meta["complete"] and meta["rows"] == 8 and meta["last_invocation"]["master"] == "map"
    assert meta["types"] == {"faults.process_crashes": "int"}
    # the report reads what the sweep wrote: the Spark cells table, the heatmap and the curves
    from reports.report import write_report

    page = write_report(out)
    html = open(page.path).read()
    assert page.kind == "sweep" and page.plots == 2 and page.violated == ["4 of 8 runs"]
    assert "violation rate [95% CI]" in html and "0.50 [0.15, 0.85]" in html


def test_batches_are_single_runs_for_small_sweeps_and_small_groups_for_large_ones():
    assert sweep_spark.plan_batches(8, 2) == (1, 8)
    assert sweep_spark.plan_batches(100, 2) == (3, 24)
    assert sweep_spark.plan_batches(1000, 2) == (8, 64)
    assert sweep_spark.plan_batches(1000, 2, batch_size=10) == (8, 10)


def test_resume_computes_only_the_missing_rows(tmp_path):
    log = tmp_path / "executions.log"

    def counting(history, world):  # one line per executed run
        with open(log, "a") as f:
            f.write(f"{world.seed}\n")
        return {}

    out = str(tmp_path / "out")
    body = 'base = "tiny.toml"\nseeds = {n}\n[grid]\n"consumer.fail_probability" = [0.0, 0.5]\n'
    first = sw.run_sweep(sw.load_sweep_file(write_sweep(tmp_path, body.format(n=2))), out, executor="map",
                         progress=False, check=counting)
    assert (first.computed, first.reused) == (4, 0) and len(log.read_text().split()) == 4
    # one more seed per cell: only those two runs execute
    log.write_text("")
    second = sw.run_sweep(sw.load_sweep_file(write_sweep(tmp_path, body.format(n=3))), out, executor="map",
                          progress=False, check=counting)
    assert (second.computed, second.reused, second.total) == (2, 4, 6)
    assert sorted(log.read_text().split()) == ["3", "3"]
    # an interrupted sweep: rows of one part file are lost; re-running recomputes exactly those
    parts = sorted(os.listdir(os.path.join(out, "runs")))
    lost = pq.read_table(os.path.join(out, "runs", parts[-1])).num_rows
    os.remove(os.path.join(out, "runs", parts[-1]))
    log.write_text("")
    third = sw.run_sweep(sw.load_sweep_file(write_sweep(tmp_path, body.format(n=3))), out, executor="map",
                         progress=False, check=counting)
    assert third.computed == lost and len(log.read_text().split()) == lost
    rows = sw.read_rows(out).to_pylist()
    assert len(rows) == 6 and len({(r["cell"], r["seed"]) for r in rows}) == 6
    assert sum(c["runs"] for c in third.cells) == 6
    # nothing missing: nothing runs
    log.write_text("")
    fourth = sw.run_sweep(sw.load_sweep_file(write_sweep(tmp_path, body.format(n=3))), out, executor="map",
                          progress=False, check=counting)
    assert fourth.computed == 0 and log.read_text() == ""
    # a different base scenario cannot be mixed into the same DIR
    other = write_sweep(tmp_path, 'base = "retry-ladder-to-dlq"\nseeds = 1\n', "other.toml")
    with pytest.raises(sw.SweepError, match="different sweep"):
        sw.run_sweep(sw.load_sweep_file(other), out, executor="map", progress=False)


def test_rows_with_untyped_parameter_columns_are_not_mixed_with_typed_ones(tmp_path):
    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 1\n[grid]\n"consumer.fail_probability" = [0.0, 0.5]\n')
    out = str(tmp_path / "out")
    sw.run_sweep(sw.load_sweep_file(path), out, executor="map", progress=False, check=lambda h, w: {})
    meta_path = os.path.join(out, "sweep.json")
    meta = json.load(open(meta_path))
    del meta["types"]  # as a sweep written before parameters kept their types ('0.5' strings)
    json.dump(meta, open(meta_path, "w"))
    with pytest.raises(sw.SweepError, match="other types"):
        sw.run_sweep(sw.load_sweep_file(path), out, executor="map", progress=False)


def test_a_run_that_raises_is_an_error_row_not_a_failed_sweep(tmp_path):
    def flaky(history, world):
        if world.seed == 2:
            raise RuntimeError("checker exploded on purpose")
        return {}

    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 3\n')
    out = str(tmp_path / "out")
    result = sw.run_sweep(sw.load_sweep_file(path), out, executor="map", progress=False, check=flaky)
    assert result.errors == 1 and result.computed == 3
    rows = {r["seed"]: r for r in sw.read_rows(out).to_pylist()}
    assert rows[2]["error"].startswith("RuntimeError: checker exploded on purpose (at test_sweep.py:")
    assert rows[2]["sent"] is None and rows[2]["history_sha256"] is None
    assert rows[1]["error"] is None and rows[3]["error"] is None and rows[1]["sent"] == 20
    (cell,) = result.cells
    assert (cell["runs"], cell["errors"], cell["checked"]) == (3, 1, 0) and cell["violation_rate"] is None
    assert [r["seed"] for r in sw.example_rows(out)] == [2]


# --- Spark ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark():
    session = sweep_spark.spark_session("local[2]", app_name="rmqsim-tests")
    yield session
    session.stop()


def _comparable(rows: list[dict]) -> list[dict]:
    """Rows without their wall-clock time, in (cell, seed) order."""
    return sorted(({k: v for k, v in r.items() if k != "wall_s"} for r in rows), key=lambda r: (r["cell"], r["seed"]))


# The Spark smoke of the default tier is 2 runs, both with a crash, one of them a violating mutant row (the
# first Spark job's start-up, not the runs, is most of its time); the slow tier runs the 4-run grid with and
# without crashes, and the 16-run grid with two seeds and two failure rates.
# A consumer failing each message once: next_begin_plus_one then loses a retry across the crash (without the
# failure the broker's OFFSET_ILLEGAL fix and the restart's re-pull from the committed offsets heal the skips).
FAIL_ONCE = '"consumer.fail_first" = [1]\n'
SPARK_GRIDS = [pytest.param('seeds = 1\n[grid]\nmutant = ["none", "next_begin_plus_one"]\n"faults.process_crashes" = [1]\n'
                            + FAIL_ONCE, 2, id="2-runs"),
               pytest.param('seeds = 1\n[grid]\nmutant = ["none", "next_begin_plus_one"]\n"faults.process_crashes" = [0, 1]\n'
                            + FAIL_ONCE, 4, id="4-runs", marks=pytest.mark.slow),
               pytest.param('seeds = 2\n[grid]\n"consumer.fail_probability" = [0.0, 0.5]\n'
                            'mutant = ["none", "next_begin_plus_one"]\n"faults.process_crashes" = [0, 1]\n',
                            16, id="16-runs", marks=pytest.mark.slow)]


@pytest.mark.spark
@pytest.mark.parametrize(("grid", "runs"), SPARK_GRIDS)
def test_spark_and_map_give_identical_rows_and_cells(spark, tmp_path, grid, runs):
    body = 'base = "tiny.toml"\n' + grid
    spec = sw.load_sweep_file(write_sweep(tmp_path, body))
    on_spark, on_map = str(tmp_path / "spark"), str(tmp_path / "map")
    a = sw.run_sweep(spec, on_spark, executor="spark", spark=spark, progress=False)
    b = sw.run_sweep(spec, on_map, executor="map", progress=False)
    assert (a.computed, b.computed) == (runs, runs) and a.master == "local[2]" and b.master == "map"
    spark_rows, map_rows = _comparable(sw.read_rows(on_spark).to_pylist()), _comparable(sw.read_rows(on_map).to_pylist())
    assert len(spark_rows) == runs and any(r["holds"] is False for r in map_rows) and any(r["crashes"] for r in map_rows)
    # the replay commands name each directory's scenario files: the same file, byte for byte
    for r in spark_rows + map_rows:
        path = r.pop("repro").split()[2]
        r["scenario_text"] = open(path).read()
    assert spark_rows == map_rows
    drop = ("wall_s_mean",)
    assert ([{k: v for k, v in c.items() if k not in drop} for c in a.cells]
            == [{k: v for k, v in c.items() if k not in drop} for c in b.cells])


@pytest.mark.slow  # a dying Python worker costs Spark a task retry; the Spark-vs-map smoke above stays default
@pytest.mark.spark
def test_a_task_that_dies_is_an_error_row_and_is_recomputed_on_resume(spark, tmp_path):
    def dies_on_seed_2(history, world):
        if world.seed == 2:
            os._exit(3)  # the Python worker process dies: Spark sees a failed task, not an exception
        return {}

    path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 3\n')
    out = str(tmp_path / "out")
    first = sw.run_sweep(sw.load_sweep_file(path), out, spark=spark, progress=False, check=dies_on_seed_2)
    rows = {r["seed"]: r for r in sw.read_rows(out).to_pylist()}
    assert first.errors == 1 and rows[2]["error"].startswith("SparkTaskFailed: ")
    assert rows[1]["error"] is None and rows[3]["error"] is None
    # the dead task is not a verdict: resuming computes it again (and only it), and the new row wins
    second = sw.run_sweep(sw.load_sweep_file(path), out, spark=spark, progress=False, check=lambda h, w: {})
    assert (second.computed, second.reused, second.errors) == (1, 2, 0)
    rows = sw.read_rows(out).to_pylist()
    assert len(rows) == 3 and all(r["error"] is None for r in rows)


# --- a real standalone cluster -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path, text: str, proc, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if os.path.exists(path) and text in open(path, errors="replace").read():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"'{text}' not seen in {path}:\n" + (open(path, errors="replace").read()[-3000:]
                                                              if os.path.exists(path) else "(no log)"))


def _stop(proc) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.mark.cluster
def test_the_same_sweep_runs_on_a_spark_standalone_cluster(tmp_path):
    spark_home = subprocess.run([os.path.join(os.path.dirname(sys.executable), "find_spark_home.py")],
                                capture_output=True, text=True, check=True).stdout.strip()
    spark_class = os.path.join(spark_home, "bin", "spark-class")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": spark_home, "PYSPARK_PYTHON": sys.executable}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = []
    try:
        master_log = tmp_path / "master.log"
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(_free_port())],
            stdout=open(master_log, "w"), stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(master_log, "I have been elected leader", procs[0], 60)
        worker_log = tmp_path / "worker.log"
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
             "--memory", "2g", "--webui-port", str(_free_port()), "--work-dir", str(tmp_path / "work")],
            stdout=open(worker_log, "w"), stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(worker_log, "Successfully registered with master", procs[1], 60)
        path = write_sweep(tmp_path, 'base = "tiny.toml"\nseeds = 2\n[grid]\n"faults.process_crashes" = [0, 1]\n')
        out = tmp_path / "out"
        proc = subprocess.run([sys.executable, "-m", "scenarios.cli", "sweep", path, "--master", url, "--out", str(out)],
                              capture_output=True, text=True, timeout=240, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"on {url}: 4 runs (4 computed" in proc.stdout
        assert json.load(open(out / "sweep.json"))["last_invocation"]["master"] == url
        assert len(sw.read_rows(str(out)).to_pylist()) == 4
        # the executors really ran the tasks: the worker launched an executor for the application
        assert any(name.startswith("app-") for name in os.listdir(tmp_path / "work"))
    finally:
        for proc in reversed(procs):
            _stop(proc)
