"""Runs several test modules judge, made once per session: the default tier runs every built-in at its own
seed once instead of once per module (#14), and each module still makes its own assertions on the result.

Call these only from tests that patch nothing the run reads: the cached result must be the run a fresh
``run_scenario`` would give. The run validates its history against the strict schema wherever it is called
from (a module fixture runs before the suite's autouse fixture turns it on).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sim.history
from scenarios.catalogue import load_builtin
from sim.history import History
from sim.run import run_scenario


@dataclass(frozen=True)
class SharedRun:
    """What the sharing tests read of a run: its summary (checked by ``sim.checking.check_run``) and history;
    the world is not kept, so a session holds every built-in's history but no store."""

    summary: dict
    history: History


def builtin_run(name: str, seed: int | None = None, shuffle_ties: bool = False) -> SharedRun:
    """The built-in ``name`` at ``seed`` (its own seed if None), ties shuffled if asked, checked against every
    invariant."""
    return _builtin_run(name, load_builtin(name).seed if seed is None else seed, shuffle_ties)


@cache
def _builtin_run(name: str, seed: int, shuffle_ties: bool) -> SharedRun:
    strict, sim.history.STRICT = sim.history.STRICT, True
    try:
        result = run_scenario(load_builtin(name), seed, shuffle_ties=shuffle_ties)
    finally:
        sim.history.STRICT = strict
    return SharedRun(result.summary, result.history)


# Built-ins whose run is long (seconds even alone): the modules that run every built-in run these in the slow tier.
# The three timer and level-load ones besides dozens-of-process-crashes keep representatives in the default tier:
# timer-wheel-basic, timer-power-failure, timer-put-failures and timer-store-rollback (the timer wheel, its
# recovery and its put retries), one-message-per-level and delayed-burst-then-crash (every level, a burst).
LONG_BUILTINS = frozenset({"dozens-of-process-crashes", "timer-wheel-crash", "all-levels-under-load",
                           "timer-restart-during-put-retry"})


def builtin_params(names) -> list:
    """``names`` as pytest parameters, the long built-ins marked slow."""
    import pytest

    return [pytest.param(n, marks=pytest.mark.slow) if n in LONG_BUILTINS else n for n in names]
