"""Skipping provably idle work gives the identical history: every built-in and a fault-heavy sample.

A skipping run (the default) sleeps through idle polls, flush rounds that would change nothing and,
without a planned power failure, the kernel's writeback; a faithful run (``faithful_polling``) steps
every poll and round. Both must record the same history, byte for byte.
"""

from __future__ import annotations

import pytest

from scenarios.catalogue import builtin_names, load_builtin
from scenarios.scenario import load_scenario_text
from sim.run import run_scenario

FAULT_HEAVY = """
name = "fault-heavy"
seed = 7
duration = "90s"
drain = "3m"
[broker]
flush_disk_type = "ASYNC_FLUSH"
[[topic]]
name = "T"
queues = 3
[[producer]]
topic = "T"
messages = 400
rate = "8/s"
delay_levels = [1, 2, 3, 5]
[[consumer]]
group = "G"
topic = "T"
instances = 2
fail_probability = 0.2
max_reconsume_times = 2
[faults]
put_failure_rate = 0.03
send_back_failure_rate = 0.05
process_crashes = 1
power_failures = 1
graceful_restarts = 1
consumer_crashes = 1
crash_before_offset_flush = 1
crash_before_delay_offset_flush = 1
cq_truncations = 1
clock_steps = [{ at = "50s", by = "-20s" }]
"""


def _same_history(scenario, seed=None, era=None):
    skipping = run_scenario(scenario, seed, era=era)
    faithful = run_scenario(scenario, seed, era=era, faithful_polling=True)
    assert skipping.history.to_jsonl() == faithful.history.to_jsonl()
    return skipping, faithful


@pytest.mark.parametrize("seed", [7, 8])
def test_fault_heavy_sample_skipping_equals_faithful(seed):
    skipping, faithful = _same_history(load_scenario_text(FAULT_HEAVY, "fault-heavy"), seed)
    kinds = {e["kind"] for e in skipping.history.events}
    assert {"crash", "restart", "fault"} <= kinds  # the faults did happen
    assert skipping.world.scheduler.steps < faithful.world.scheduler.steps


@pytest.mark.slow
@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_skipping_equals_faithful(name):
    _same_history(load_builtin(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["graceful-restart", "power-failure-async-flush"])
def test_era_4_builtins_skipping_equals_faithful(name):
    _same_history(load_builtin(name), era="4.9.8")
