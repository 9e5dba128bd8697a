"""Sweeps: runs per minute on Spark, and Spark's parallel efficiency against a plain serial loop.

    .venv/bin/python benchmarks/sweep_bench.py [--runs 1000] [--master local[*]] [--serial-runs N]

The same run specs (a small scenario over a 2 x 2 grid, seeds to make ``--runs``) go once through a
plain loop in this process and once through Spark (one task per run, as ``rmqsim sweep`` does). The
two alternate in rounds (serial on a slice, then Spark on the same slice), so that other load on the
machine weighs on both alike. The history hashes of both must agree. Prints a readable summary and
one JSON line. Wall time is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from scenarios import sweep as sw
from scenarios import sweep_spark

SMALL = """
name = "bench-small"
description = "Small sweep benchmark scenario: 40 delayed messages, one consumer group."
duration = "4s"
drain = "40s"
[[topic]]
name = "TopicTest"
queues = 2
[[producer]]
topic = "TopicTest"
messages = 40
rate = "10/s"
delay_levels = [1, 2, 3]
[[consumer]]
group = "GroupA"
topic = "TopicTest"
"""


def tree_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process and every live descendant (the Spark
    JVM and its Python workers), from /proc; 0.0 where /proc is missing."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return 0.0
    for name in names:
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks)  # ppid, utime+stime
    me, total = os.getpid(), 0.0
    for pid, (_, cpu) in stats.items():
        p = pid
        while p in stats and p != me and p > 1:
            p = stats[p][0]
        if p == me:
            total += cpu
    return total


def make_spec(tmp: str, runs: int):
    with open(os.path.join(tmp, "bench-small.toml"), "w") as f:
        f.write(SMALL)
    seeds = max(1, runs // 4)
    path = os.path.join(tmp, "bench.toml")
    with open(path, "w") as f:
        f.write(f'name = "bench"\nbase = "bench-small.toml"\nseeds = {seeds}\n[grid]\n'
                f'"faults.process_crashes" = [0, 1]\n"consumer.fail_probability" = [0.0, 0.1]\n')
    return sw.load_sweep_file(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--rounds", type=int, default=5, help="alternate serial and Spark in this many slices")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="rmqsim-sweep-bench-")
    spec = make_spec(tmp, args.runs)
    out = os.path.join(tmp, "out")
    tasks = sw.make_tasks(spec, out)
    load_before = os.getloadavg()

    t0 = time.perf_counter()  # wall-clock ok: benchmark
    spark = sweep_spark.spark_session(args.master, app_name="rmqsim-sweep-bench")
    cores = spark.sparkContext.defaultParallelism
    sweep_spark.execute(spark, tasks[: 2 * cores], progress=False)  # start the Python workers (counted in the start time)
    startup_s = time.perf_counter() - t0  # wall-clock ok

    serial_rows, rows = [], []
    serial_s = spark_exec_s = serial_cpu = spark_cpu = 0.0
    size = -(-len(tasks) // max(1, args.rounds))
    for start in range(0, len(tasks), size):
        chunk = tasks[start:start + size]
        t, c = time.perf_counter(), tree_cpu_s()  # wall-clock ok
        serial_rows += [sw.run_task(task) for task in chunk]
        serial_s += time.perf_counter() - t  # wall-clock ok
        serial_cpu += tree_cpu_s() - c
        t, c = time.perf_counter(), tree_cpu_s()  # wall-clock ok
        rows += sweep_spark.execute(spark, chunk, progress=sys.stderr.isatty(),
                           on_rows=lambda r: sw.write_part(out, sw.rows_to_table(r, spec.column_types)))
        spark_exec_s += time.perf_counter() - t  # wall-clock ok
        spark_cpu += tree_cpu_s() - c
    t2 = time.perf_counter()  # wall-clock ok
    cells, _ = sw.aggregate(sw.read_rows(out), spec)
    aggregate_s = time.perf_counter() - t2  # wall-clock ok
    master = spark.sparkContext.master
    spark.stop()

    by_key = {(r["cell"], r["seed"]): r["history_sha256"] for r in rows}
    mismatched = sum(1 for r in serial_rows if by_key.get((r["cell"], r["seed"])) != r["history_sha256"])
    errors = sum(1 for r in rows if r["error"])
    total_s = startup_s + spark_exec_s + aggregate_s
    result = {
        "runs": len(tasks), "cores": cores, "master": master, "os_cpus": os.cpu_count(), "rounds": args.rounds,
        "mean_run_wall_s_serial": round(sum(r["wall_s"] for r in serial_rows) / len(serial_rows), 4),
        "mean_run_wall_s_spark_task": round(sum(r["wall_s"] for r in rows) / len(rows), 4),
        "serial_s": round(serial_s, 1),
        "spark_session_start_s": round(startup_s, 1), "spark_runs_s": round(spark_exec_s, 1),
        "spark_aggregate_s": round(aggregate_s, 1), "spark_total_s": round(total_s, 1),
        "runs_per_min_serial": round(len(tasks) / serial_s * 60),
        "runs_per_min_spark": round(len(tasks) / spark_exec_s * 60),
        "runs_per_min_spark_incl_startup": round(len(tasks) / total_s * 60),
        "speedup": round(serial_s / spark_exec_s, 2),
        "parallel_efficiency": round(serial_s / (cores * spark_exec_s), 2),
        "cpu_ms_per_run_serial": round(serial_cpu / len(tasks) * 1000, 1),
        "cpu_ms_per_run_spark": round(spark_cpu / len(tasks) * 1000, 1),
        "cores_obtained_serial": round(serial_cpu / serial_s, 2), "cores_obtained_spark": round(spark_cpu / spark_exec_s, 2),
        "cpu_efficiency": round(serial_cpu / spark_cpu, 2) if spark_cpu else None,
        "hash_mismatches": mismatched, "errors": errors, "cells": len(cells),
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(f"sweep benchmark: {result['runs']} runs of a small scenario ({result['mean_run_wall_s_serial'] * 1000:.0f} ms "
          f"each, serial), {cores} Spark cores on {master}")
    print(f"  serial loop      {result['serial_s']:>7.1f} s  {result['runs_per_min_serial']:>6} runs/min")
    print(f"  Spark, runs only {result['spark_runs_s']:>7.1f} s  {result['runs_per_min_spark']:>6} runs/min  "
          f"speedup {result['speedup']}x, parallel efficiency {result['parallel_efficiency']:.0%}")
    print(f"  Spark, total     {result['spark_total_s']:>7.1f} s  {result['runs_per_min_spark_incl_startup']:>6} runs/min  "
          f"(session and workers start {result['spark_session_start_s']} s, aggregation {result['spark_aggregate_s']} s)")
    print(f"  one run: {result['mean_run_wall_s_serial'] * 1000:.0f} ms in the loop, "
          f"{result['mean_run_wall_s_spark_task'] * 1000:.0f} ms inside a Spark task")
    print(f"  CPU per run: {result['cpu_ms_per_run_serial']} ms in the loop, {result['cpu_ms_per_run_spark']} ms "
          f"through Spark (JVM and workers included; CPU efficiency {result['cpu_efficiency']}); cores obtained: "
          f"{result['cores_obtained_serial']} by the loop, {result['cores_obtained_spark']} by Spark")
    print(f"  identical histories: {len(serial_rows) - mismatched}/{len(serial_rows)}; errors {errors}; "
          f"load average before/after {result['loadavg_before'][0]}/{result['loadavg_after'][0]}")
    print(json.dumps(result))
    return 0 if mismatched == 0 and errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
