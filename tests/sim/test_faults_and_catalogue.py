"""Every fault a scenario asks for visibly happens in its history; the whole catalogue runs."""

from __future__ import annotations

import pytest

from scenarios.catalogue import builtin_names
from scenarios.scenario import load_scenario_text
from sim.run import run_scenario

from ..shared_runs import builtin_params, builtin_run

BASE = """
name = "f"
duration = "1m"
drain = "1m"
[[topic]]
name = "T"
queues = 2
[[producer]]
topic = "T"
messages = 300
rate = "10/s"
delay_levels = [1, 2]
[[consumer]]
group = "G"
topic = "T"
instances = 2
fail_probability = 0.2
[faults]
"""


def run_with(faults: str, seed: int = 1):
    return run_scenario(load_scenario_text(BASE + faults, "f"), seed).history


def kinds(history, kind):
    return [e for e in history.events if e["kind"] == kind]


def test_put_failures_are_injected_and_recorded():
    faults = kinds(run_with("put_failure_rate = 0.1"), "fault")
    assert faults and all(e["site"] == "commitlog.put" and e["action"] == "fail" for e in faults)


def test_send_back_failures_are_recorded():
    assert any(e["site"] == "broker.send_back" for e in kinds(run_with("send_back_failure_rate = 0.5"), "fault"))


def test_process_crash_then_restart():
    h = run_with("process_crashes = 1")
    (crash,) = kinds(h, "crash")
    assert crash["target"] == "broker" and crash["crash_kind"] == "process"
    (restart,) = [e for e in kinds(h, "restart") if e["target"] == "broker"]
    assert restart["ok"] and restart["last_exit_ok"] is False and restart["t_ms"] == crash["t_ms"] + 2000


def test_power_failure_loses_unflushed_bytes():
    h = run_with("power_failures = 1")
    (crash,) = kinds(h, "crash")
    assert crash["crash_kind"] == "power"
    assert any(e["site"] == "power" for e in kinds(h, "fault"))


def test_consumer_crash_and_restart():
    h = run_with("consumer_crashes = 1")
    (crash,) = kinds(h, "crash")
    assert crash["target"].startswith("G-")
    assert any(e["target"] == crash["target"] for e in kinds(h, "restart"))


@pytest.mark.parametrize("key,file", [("crash_before_offset_flush", "consumerOffset.json"),
                                      ("crash_before_delay_offset_flush", "delayOffset.json")])
def test_crash_exactly_before_a_persist(key, file):
    h = run_with(f"{key} = 1")
    (crash,) = kinds(h, "crash")
    assert crash["site"] == f"persist.{file}"
    before = [e for e in h.events if e["seq"] < crash["seq"]]
    assert before[-1]["kind"] == "fault" and before[-1]["site"] == f"persist.{file}"


def test_cq_truncation_then_recovery():
    h = run_with("cq_truncations = 1")
    (cut,) = kinds(h, "cq_truncate")
    assert cut["to_offset"] < cut["from_offset"]
    assert any(e["target"] == "broker" and e["ok"] for e in kinds(h, "restart"))


def test_clock_step_backwards():
    h = run_with('clock_steps = [{ at = "30s", by = "-5m" }]')
    (step,) = [e for e in kinds(h, "fault") if e["site"] == "clock"]
    assert step["by_ms"] == -300_000 and step["t_ms"] == 30_000


def test_no_fault_in_the_drain_phase():
    h = run_with("process_crashes = 3\nput_failure_rate = 0.05")
    (drain,) = kinds(h, "drain")
    assert all(e["t_ms"] <= drain["t_ms"] for e in kinds(h, "fault") + kinds(h, "crash"))


@pytest.mark.parametrize("name", builtin_params(builtin_names()))
def test_every_builtin_scenario_runs_end_to_end(name):
    stats = builtin_run(name).summary["stats"]
    assert stats["sent"] > 0 and stats["consumed"] + stats["failed_attempts"] > 0
