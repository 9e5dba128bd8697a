"""Sleeping through idle time gives the identical history to RocketMQ's 100 ms polling."""

from __future__ import annotations

import pytest

from scenarios.catalogue import load_builtin
from scenarios.scenario import load_scenario_text
from sim.run import run_scenario

ASYNC = """
name = "async-levels"
duration = "20s"
drain = "40s"
[broker]
enable_schedule_async_deliver = true
[[topic]]
name = "T"
[[producer]]
topic = "T"
messages = 60
rate = "5/s"
delay_levels = [1, 2, 3]
[[consumer]]
group = "G"
topic = "T"
fail_probability = 0.2
[faults]
put_failure_rate = 0.1
"""


OFF_GRID = """
name = "off-grid"
duration = "30s"
drain = "1m"
[[topic]]
name = "T"
[[producer]]
topic = "T"
messages = 90
rate = "7/s"
delay_levels = [1, 2, 3, 4]
[[consumer]]
group = "G"
topic = "T"
fail_probability = 0.3
consume_time = "13ms"
[faults]
process_crashes = 1
"""
TEXTS = {"async": ASYNC, "off-grid": OFF_GRID}


# crash-before-delay-offset-flush in 5.x is slow-tier only: the era-4 test below runs the same built-in
@pytest.mark.parametrize("name", [pytest.param("crash-before-delay-offset-flush", marks=pytest.mark.slow),
                                  "put-failures-during-delivery",
                                  "backwards-clock-step", "async", "off-grid"])
def test_idle_skip_equals_faithful_polling(name):
    scenario = load_scenario_text(TEXTS[name], name) if name in TEXTS else load_builtin(name)
    skipping = run_scenario(scenario)
    faithful = run_scenario(scenario, faithful_polling=True)
    assert skipping.history.to_jsonl() == faithful.history.to_jsonl()
    assert skipping.world.scheduler.steps < faithful.world.scheduler.steps / 2  # and it does skip


def test_era_4_idle_skip_equals_faithful_polling():
    scenario = load_builtin("crash-before-delay-offset-flush")
    skipping = run_scenario(scenario, era="4.9.8")
    faithful = run_scenario(scenario, era="4.9.8", faithful_polling=True)
    assert skipping.history.sha256() == faithful.history.sha256()
