"""RocketMQ 5.3.3 timer behaviour the simulator reproduces, as found by the built-in timer scenarios."""

from __future__ import annotations

from scenarios.catalogue import load_builtin
from sim.checking import check_run
from sim.run import run_scenario

from ..shared_runs import builtin_run


def test_10668_a_stale_timer_log_reference_wedges_the_dequeue_unless_unknown_errors_are_skipped():
    """After a power failure the timer log keeps units for messages the commit log lost; new messages reuse
    those offsets, so a due unit can read a message without REAL_TOPIC. 5.3.3 retries that unknown error
    forever and every later slot waits behind it; timerSkipUnknownError skips it."""
    wedged = run_scenario(load_builtin("timer-power-failure", {"broker.timer_skip_unknown_error": False}), 1,
                          check=check_run).summary["invariants"]["no_loss"]
    assert not wedged["holds"] and wedged["violation_count"] > 10
    skipping = builtin_run("timer-power-failure", 1).summary["invariants"]  # test_builtins_checked's run
    assert all(v["holds"] for v in skipping.values())
