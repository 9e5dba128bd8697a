"""The scheduler's re-arm shortcuts change no history, only how often services are asked for their next wake-up.

Two shortcuts keep dense runs cheap: a service armed at or below its ``WAKE_FLOOR`` is not asked again when its
owner is touched, and a request that cannot write the store (a pull, an offset update) does not re-arm the
flush services. Each run here is compared, byte for byte, with the same run without them.
"""

from __future__ import annotations

import pytest

from scenarios.catalogue import load_builtin
from scenarios.scenario import load_scenario_text
from sim import scheduler as scheduler_module
from sim.broker_host import BrokerHost
from sim.run import run_scenario

from ..shared_runs import builtin_run
from .test_skip_equivalence import FAULT_HEAVY


def _without_shortcuts(monkeypatch, scenario, seed, **options):
    with monkeypatch.context() as m:
        m.setattr(scheduler_module, "USE_WAKE_FLOORS", False)
        original = BrokerHost.on_client_request
        m.setattr(BrokerHost, "on_client_request", lambda self, writes=True: original(self, True))
        return run_scenario(scenario, seed, check=False, **options)


# dozens-of-process-crashes (the longest built-in), the power failure, the timer crash and the fault-heavy sample
# run in the slow tier; the other built-ins keep crashes, resend errors and the retry ladder in the default tier
# (test_shuffled_ties_do_not_take_the_shortcuts keeps a timer built-in).
@pytest.mark.parametrize(("name", "seed"), [("consumer-crash", 3),
                                            pytest.param("dozens-of-process-crashes", 1, marks=pytest.mark.slow),
                                            pytest.param("power-failure-async-flush", 2, marks=pytest.mark.slow),
                                            ("async-deliver-resend-errors", 5),
                                            pytest.param("timer-wheel-crash", 4, marks=pytest.mark.slow),
                                            ("retry-ladder-to-dlq", 1)])
def test_builtins_equal_without_the_shortcuts(monkeypatch, name, seed):
    # a built-in at its own seed: the shared run (its history does not depend on checking)
    fast = builtin_run(name) if seed == load_builtin(name).seed else run_scenario(load_builtin(name), seed, check=False)
    slow = _without_shortcuts(monkeypatch, load_builtin(name), seed)
    assert fast.history.to_jsonl() == slow.history.to_jsonl()


@pytest.mark.slow
def test_fault_heavy_sample_equal_without_the_shortcuts(monkeypatch):
    scenario = load_scenario_text(FAULT_HEAVY, "fault-heavy")
    fast = run_scenario(scenario, 7, check=False)
    slow = _without_shortcuts(monkeypatch, scenario, 7)
    assert fast.history.to_jsonl() == slow.history.to_jsonl()


def test_shuffled_ties_do_not_take_the_shortcuts(monkeypatch):
    """With shuffled ties every re-arm may draw a tie priority: the shortcuts stay off, so the draws (and the
    shuffled histories of existing seeds) are those of a scheduler without them."""
    fast = run_scenario(load_builtin("timer-wheel-basic"), 7, check=False, shuffle_ties=True)
    slow = _without_shortcuts(monkeypatch, load_builtin("timer-wheel-basic"), 7, shuffle_ties=True)
    assert fast.history.to_jsonl() == slow.history.to_jsonl()
    assert fast.world.scheduler.asks == slow.world.scheduler.asks


@pytest.mark.slow  # the dense bench shape twice (seconds); the equalities above stay in the default tier
def test_the_shortcuts_save_questions(monkeypatch):
    """Not a speed assertion: in the dense bench's shape the services are asked for their next wake-up less often."""
    from sim.bench import standard_scenario

    fast = run_scenario(standard_scenario(300), check=False)
    slow = _without_shortcuts(monkeypatch, standard_scenario(300), None)
    assert fast.history.to_jsonl() == slow.history.to_jsonl()
    assert fast.world.scheduler.asks < 0.8 * slow.world.scheduler.asks
