"""After a broker restart the broker knows no consumer group: a pull answers SUBSCRIPTION_NOT_EXIST until the
client's heartbeat (both tags; ``postSubscriptionWhenPull`` is false). A 4.9.8 client heartbeats every 30 s; a
5.3.3 client as soon as a request reconnects (``MQClientInstance.onChannelActive``). The drain rules follow."""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import pytest

import model.stats as stats
from scenarios.scenario import load_scenario_file
from sim.checking import check_run
from sim.run import run_scenario

SCENARIO = Path(__file__).resolve().parent.parent / "data" / "scenarios" / "restart-before-a-short-drain.toml"
SENT_AFTER_RESTART = "0013"  # the one message sent after the broker came back (19 s)


@cache
def _run(era: str, drain_ms: int | None = None):
    scenario = load_scenario_file(str(SCENARIO))
    if drain_ms is not None:
        scenario = dataclasses.replace(scenario, drain_ms=drain_ms)
    return run_scenario(scenario, 1, era=era)


def _restart_ms(result) -> int:
    (restart,) = [e["t_ms"] for e in result.history.events if e["kind"] == "restart" and e["target"] == "broker"]
    return restart


def _consumed_ms(result) -> list[int]:
    return [e["t_ms"] for e in result.history.events
            if e["kind"] == "consume" and e["msg_id"].endswith(SENT_AFTER_RESTART)]


@pytest.mark.parametrize(("era", "gap_ms"), [("4.9.8", (6_000, 33_000)), ("5.3.3", (0, 6_000))])
def test_the_first_consume_after_a_restart_waits_for_the_clients_heartbeat(era, gap_ms):
    result = _run(era, drain_ms=60_000)
    restart_ms = _restart_ms(result)
    (consumed_ms,) = _consumed_ms(result)
    low, high = gap_ms
    assert restart_ms + low < consumed_ms <= restart_ms + high
    refused = [e for e in result.history.events if e["kind"] == "log" and e["logger"] == "PullMessageProcessor"
               and "the consumer's group info not exist" in e["message"]]
    assert refused and all(restart_ms < e["t_ms"] < consumed_ms and e["level"] == "WARN" for e in refused)


def test_a_4x_drain_that_ends_before_the_heartbeat_leaves_the_message_pending_not_lost(monkeypatch):
    result = _run("4.9.8")
    assert not _consumed_ms(result)
    assert result.summary["stats"]["pending"] == 1
    assert all(v["holds"] and not v.get("vacuous") for v in result.summary["invariants"].values())
    monkeypatch.setitem(stats.RESUME_AFTER_BROKER_RESTART_MS, "4.9.8", 0)  # as if pulls resumed with the broker
    (lost,) = check_run(result.history, result.world)["no_loss"]["violations"]
    assert lost["msg_id"].endswith(SENT_AFTER_RESTART)


def test_a_5x_client_pulls_again_within_the_same_drain():
    result = _run("5.3.3")
    assert _consumed_ms(result) and result.summary["stats"]["pending"] == 0
