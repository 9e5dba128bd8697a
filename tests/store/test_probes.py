"""Coverage probes (store/probes.py): the catalogue names every probe() call in store/, a probe fires on a
run that takes its path and not on one that doesn't, and collecting probes never changes a history."""

from __future__ import annotations

import ast
import pathlib

import sim.world
from scenarios.catalogue import load_builtin
from sim.run import run_scenario
from store.probes import CATALOGUE, NO_PROBES, ProbeCollector, never_hit

from ..shared_runs import builtin_run

STORE = pathlib.Path(__file__).resolve().parents[2] / "store"


def probe_calls() -> list[tuple[str, str]]:
    """(file, name) of every ``<x>.probe(...)`` call in store/; a non-literal name is reported as ``?``."""
    calls = []
    for path in sorted(STORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "probe":
                for arg in node.args[:1]:
                    names = [arg] if not isinstance(arg, ast.IfExp) else [arg.body, arg.orelse]
                    for a in names:
                        literal = isinstance(a, ast.Constant) and isinstance(a.value, str)
                        calls.append((path.name, a.value if literal else "?"))
    return calls


def test_the_catalogue_covers_every_probe_call_and_nothing_else():
    calls = probe_calls()
    assert len(calls) >= 30
    assert [c for c in calls if c[1] not in CATALOGUE] == []  # "?" (a computed name) fails here too
    assert sorted(set(CATALOGUE) - {name for _, name in calls}) == []


def test_no_probes_costs_nothing_and_the_collector_counts():
    NO_PROBES.probe("store.put_failed")
    collector = ProbeCollector()
    collector.probe("store.put_failed")
    collector.probe("store.put_failed")
    assert collector.as_dict() == {"store.put_failed": 2}
    assert "store.put_failed" not in never_hit(collector.as_dict())
    assert "timer.roll" in never_hit(collector.as_dict())


def summary(name: str) -> dict:
    """The built-in's run at its own seed (its probes and history hash), shared with the modules that judge it."""
    return builtin_run(name).summary


def test_a_probe_fires_on_its_path_and_not_elsewhere():
    failing = summary("put-failures-during-delivery")["probes"]
    assert failing.get("store.put_failed", 0) > 0
    assert failing.get("delay.deliver_failed_retry", 0) > 0
    clean = summary("one-message-per-level")["probes"]
    assert "store.put_failed" not in clean and "delay.deliver_failed_retry" not in clean
    assert "store.recover_abnormally" not in clean


def test_recovery_probes_fire_after_a_power_failure():
    probes = summary("timer-power-failure")["probes"]
    assert probes.get("store.recover_abnormally", 0) > 0
    assert probes.get("store.recover_truncated_cq", 0) > 0
    assert probes.get("store.recover_truncated_commitlog", 0) > 0  # the commit log is made at load, after attach
    assert probes.get("timer.queue_offset_clamped", 0) > 0


class _Silent:
    """No collector at all: what a run looks like without probes."""

    def probe(self, name: str) -> None:
        pass

    def as_dict(self) -> dict:
        return {}


def test_probes_do_not_change_the_history(monkeypatch):
    with_probes = summary("put-failures-during-delivery")
    monkeypatch.setattr(sim.world, "ProbeCollector", _Silent)
    without = run_scenario(load_builtin("put-failures-during-delivery"), 1, check=False).summary
    assert without["probes"] == {} and with_probes["probes"]
    assert without["history_sha256"] == with_probes["history_sha256"]


def test_the_gate_sums_the_runs_probes_and_names_those_never_hit():
    from scenarios.gate import add_probes, format_probes

    total: dict[str, int] = {}
    add_probes(total, {"probes": {"timer.roll": 2}})
    add_probes(total, {"probes": {"timer.roll": 1, "store.put_failed": 4}})
    add_probes(total, {})  # a summary from before probes existed
    assert total == {"timer.roll": 3, "store.put_failed": 4}
    head, missed = format_probes(total)
    assert head == f"  probes: 2 of {len(CATALOGUE)} hit ({200 // len(CATALOGUE)}%)"
    assert "timer.roll" not in missed and "store.put_failed" not in missed and "config.bak_used" in missed
