"""Runs several test modules judge, made once per session: the default tier runs every built-in at its own
seed once instead of once per module (#14), and each module still makes its own assertions on the result.

Call these from a test body (the suite's strict history schema is on there) and only from tests that patch
nothing the run reads: the cached result must be the run a fresh ``run_scenario`` would give.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from scenarios.catalogue import load_builtin
from sim.history import History
from sim.run import run_scenario


@dataclass(frozen=True)
class SharedRun:
    """What the sharing tests read of a run: its summary (checked by ``sim.checking.check_run``) and history;
    the world is not kept, so a session holds every built-in's history but no store."""

    summary: dict
    history: History


def builtin_run(name: str, seed: int | None = None) -> SharedRun:
    """The built-in ``name`` at ``seed`` (its own seed if None), checked against every invariant."""
    return _builtin_run(name, load_builtin(name).seed if seed is None else seed)


@cache
def _builtin_run(name: str, seed: int) -> SharedRun:
    result = run_scenario(load_builtin(name), seed)
    return SharedRun(result.summary, result.history)
