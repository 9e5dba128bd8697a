"""Skipping provably idle work gives the identical history: every built-in and a fault-heavy sample.

A skipping run (the default) sleeps through idle polls, flush rounds that would change nothing, a dormant
timer's clockwork (store/timer/dormancy.py), consumers' offset persists that re-send what the broker holds
(sim/client_skips.py), idle long polls (repeated in place by the hold check: sim/long_poll_skips.py) and, without
a planned power failure, the kernel's writeback; a faithful run
(``faithful_polling``) steps every poll and round. Both must record the same history, byte for byte, and leave
the timer's files (checkpoint, wheel, timer log) and consumerOffset.json (its 5.x dataVersion counts commits)
identical whenever a crash, a shutdown or the end of the run can see them.
"""

from __future__ import annotations

import pytest

from scenarios.catalogue import builtin_names, load_builtin
from scenarios.scenario import load_scenario_text
from sim.broker_host import BrokerHost
from sim.run import run_scenario

TIMER_FILES = ("config/timercheck", "timerwheel", "timerlog/")
# The offset files' 5.x dataVersion counts the commits that skipping leaves out. Their page-cache bytes only: a
# skipping run without a planned power failure leaves the kernel's writeback out, so the platter may lag.
OFFSET_FILES = ("config/consumerOffset.json", "config/delayOffset.json")

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


TIMER_FAULT_HEAVY = """
name = "timer-fault-heavy"
seed = 7
duration = "2m"
drain = "6m"
[broker]
flush_disk_type = "ASYNC_FLUSH"
timer_precision = "PRECISION"
timer_roll_window_slot = 40
[[topic]]
name = "T"
queues = 2
[[producer]]
topic = "T"
messages = 40
rate = "20/m"
timer_delay = "7s"
[[producer]]
topic = "T"
messages = 12
rate = "6/m"
timer_delay = "150s"
[[consumer]]
group = "G"
topic = "T"
instances = 2
fail_probability = 0.1
[faults]
process_crashes = 1
power_failures = 1
graceful_restarts = 1
clock_steps = [{ at = "45s", by = "25s" }, { at = "100s", by = "-40s" }, { at = "200s", by = "-3s" }, { at = "260s", by = "90s" }]
"""


def _watched_files(disk) -> dict:
    """The timer's files as the page cache and the platter hold them, the offset files as the page cache does."""
    return {path: (bytes(f.data), bytes(f.durable)) if path.startswith(TIMER_FILES) else bytes(f.data)
            for path, f in sorted(disk._files.items()) if path.startswith(TIMER_FILES + OFFSET_FILES)}


def _run_seen(monkeypatch, scenario, seed, era, faithful):
    """A run, with the watched files as every crash and shutdown found them (after it looked: a crash's own
    power failure included) and as the run left them."""
    seen = []
    crash, stop = BrokerHost.crash, BrokerHost.stop

    def crash_broker(host, *args, **kwargs):
        crash(host, *args, **kwargs)
        seen.append((host.world.now_mono(), _watched_files(host.world.disk)))

    def stop_broker(host, *args, **kwargs):
        stop(host, *args, **kwargs)
        seen.append((host.world.now_mono(), _watched_files(host.world.disk)))

    monkeypatch.setattr(BrokerHost, "crash", crash_broker)
    monkeypatch.setattr(BrokerHost, "stop", stop_broker)
    result = run_scenario(scenario, seed, era=era, faithful_polling=faithful)
    monkeypatch.undo()
    return result, seen + [("end", _watched_files(result.world.disk))]


def _same_history(scenario, seed=None, era=None, monkeypatch=None):
    if monkeypatch is None:
        skipping = run_scenario(scenario, seed, era=era)
        faithful = run_scenario(scenario, seed, era=era, faithful_polling=True)
    else:
        skipping, skipping_seen = _run_seen(monkeypatch, scenario, seed, era, False)
        faithful, faithful_seen = _run_seen(monkeypatch, scenario, seed, era, True)
        assert [t for t, _ in skipping_seen] == [t for t, _ in faithful_seen]
        for (at, files), (_, expected) in zip(skipping_seen, faithful_seen, strict=True):
            assert files == expected, f"the watched files differ at {at}"
    assert skipping.history.to_jsonl() == faithful.history.to_jsonl()
    return skipping, faithful


# 1s seed 3 in the default tier; seed 0 and the 300 ms grid (seconds each) in the slow tier
@pytest.mark.parametrize(("precision", "seed"), [pytest.param("1s", 0, marks=pytest.mark.slow), ("1s", 3),
                                                 pytest.param("300ms", 1, marks=pytest.mark.slow)])
def test_timer_fault_heavy_sample_dormancy_equals_faithful(precision, seed, monkeypatch):
    """Timer messages (rolled ones too) with crashes, a power failure, a graceful restart and clock steps both
    ways, some while the timer is dormant with slots still ahead: the trap of computing skipped polls. 300 ms
    precision: grids that do not repeat every flush round (no closed-form shortcut), and a clock step that finds
    the timer awake with lazily skipped polls behind it (seed 1)."""
    scenario = load_scenario_text(TIMER_FAULT_HEAVY.replace("PRECISION", precision), "timer-fault-heavy")
    skipping, faithful = _same_history(scenario, seed, monkeypatch=monkeypatch)
    kinds = {e["kind"] for e in skipping.history.events}
    assert {"crash", "restart", "fault", "deliver"} <= kinds
    assert sum(e["kind"] == "deliver" and e["level"] == "timer" for e in skipping.history.events) > 0
    assert skipping.world.scheduler.steps < faithful.world.scheduler.steps


# the fault-heavy sample in the slow tier; the timer fault-heavy sample above keeps crashes, a power failure and
# clock steps under idle skipping in the default tier
@pytest.mark.slow
@pytest.mark.parametrize("seed", [7, 8])
def test_fault_heavy_sample_skipping_equals_faithful(seed, monkeypatch):
    skipping, faithful = _same_history(load_scenario_text(FAULT_HEAVY, "fault-heavy"), seed, monkeypatch=monkeypatch)
    kinds = {e["kind"] for e in skipping.history.events}
    assert {"crash", "restart", "fault"} <= kinds  # the faults did happen
    assert skipping.world.scheduler.steps < faithful.world.scheduler.steps
    assert skipping.world.long_poll_skips.repeated > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_skipping_equals_faithful(name, monkeypatch):
    skipping, _ = _same_history(load_builtin(name), monkeypatch=monkeypatch)
    # two broadcasting consumers hold pulls of the same queues: never repeated in place
    assert (skipping.world.long_poll_skips.repeated > 0) == (name != "broadcast-consumer-failure")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["graceful-restart", "power-failure-async-flush"])
def test_era_4_builtins_skipping_equals_faithful(name):
    _same_history(load_builtin(name), era="4.9.8")
