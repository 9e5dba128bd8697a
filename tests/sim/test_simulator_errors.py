"""Verdicts you can trust: a bug in the simulated store stops the run (``simulator_error``), never passes as a
modelled failure, and the store's ERROR lines are history events that ``no_unexpected_errors`` checks.

Each planted bug below passed silently before: the broad ``except Exception`` in the client turned a
TypeError in the broker's send-back handler into a "failed send-back" (the producer fallback took over) and
one in the offset commit into a logged one-way failure; every invariant held and the run exited 0.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from scenarios.catalogue import load_builtin
from scenarios.cli import main
from scenarios.scenario import load_scenario_text
from sim.checking import check_run
from sim.run import run_scenario
from store.broker.broker_controller import BrokerController
from store.broker.send_message_processor import SendMessageProcessor
from store.client.offset_store import RemoteBrokerOffsetStore
from store.faults import BrokerCrash
from store.schedule_message_service import DeliverDelayedMessageTimerTask, ScheduleMessageService

from ..shared_runs import builtin_run

# Three messages, a consumer that fails each twice: six send-backs and many offset commits in ~2 wall s.
RETRIES = """
name = "retries-small"
seed = 3
duration = "5s"
drain = "10m"

[[topic]]
name = "TopicTest"
queues = 1

[[producer]]
topic = "TopicTest"
messages = 3

[[consumer]]
group = "GroupA"
topic = "TopicTest"
max_reconsume_times = 4
fail_first = 2
"""


def every_second_call_raises(monkeypatch, owner, name: str, error: type[Exception] = TypeError) -> list[int]:
    """Wrap ``owner.name`` so that calls 2, 4, 6 ... raise ``error``; returns the call counter."""
    original = getattr(owner, name)
    calls = [0]

    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] % 2 == 0:
            raise error(f"planted bug in {name}, call {calls[0]}")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)
    return calls


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "retries-small.toml"
    path.write_text(RETRIES)
    return path


def run_small(**kwargs):
    return run_scenario(load_scenario_text(RETRIES, "retries-small.toml"), check=check_run, **kwargs)


def test_the_clean_small_run_holds_and_logs_no_error():
    summary = run_small().summary
    assert summary["verdict"] == "holds"
    assert all(v["holds"] for v in summary["invariants"].values())
    assert summary["stats"]["dlq"] == 0 and summary["stats"]["sent"] == 3


@pytest.mark.parametrize("owner, name", [
    (SendMessageProcessor, "consumer_send_msg_back"),  # the broker's send-back handler
    (RemoteBrokerOffsetStore, "update_consume_offset_to_broker"),  # the client's offset commit
    (BrokerController, "update_consumer_offset_oneway"),  # the broker's side of the commit, across the network
])
def test_a_type_error_in_a_handler_stops_the_run_as_a_simulator_error(monkeypatch, tmp_path, owner, name):
    calls = every_second_call_raises(monkeypatch, owner, name)
    result = run_small(out_dir=str(tmp_path / "run"))
    assert calls[0] >= 2
    summary = result.summary
    assert summary["verdict"] == "simulator_error"
    error = summary["simulator_error"]
    assert error["type"] == "TypeError" and f"planted bug in {name}" in error["message"]
    assert 0 < error["t_ms"] < summary["virtual_ms"]  # where it stopped
    assert error["traceback"].startswith("Traceback")
    assert "wrapped" in error["traceback"]  # where it was raised
    assert summary["invariants"] == {}  # a history cut short is not checked
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert on_disk["verdict"] == "simulator_error" and on_disk["simulator_error"]["type"] == "TypeError"


def test_rmqsim_run_exits_1_and_names_the_type_error(monkeypatch, scenario_file, tmp_path, capsys):
    every_second_call_raises(monkeypatch, SendMessageProcessor, "consumer_send_msg_back")
    assert main(["run", str(scenario_file), "--out", str(tmp_path / "cli")]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "simulator error" in x)
    assert "TypeError: planted bug in consumer_send_msg_back, call 2" in line
    assert "replay: rmqsim run" in out


def test_rmqsim_run_exits_0_without_the_planted_bug(scenario_file, tmp_path, capsys):
    assert main(["run", str(scenario_file), "--out", str(tmp_path / "cli")]) == 0
    assert "simulator error" not in capsys.readouterr().out


def test_the_gate_reports_a_simulator_error_as_a_junit_failure_with_the_traceback(monkeypatch, tmp_path, capsys):
    every_second_call_raises(monkeypatch, ScheduleMessageService, "put_due_message")
    junit = tmp_path / "gate.xml"
    code = main(["gate", "--runs", "1", "--scenario", "rebuild-errors-4x", "--seed-base", "1",
                 "--out", str(tmp_path / "gate"), "--junit", str(junit)])
    assert code == 1
    assert "TypeError" in capsys.readouterr().out
    case = ET.parse(junit).getroot().find("testcase")
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "SimulatorError"
    assert "TypeError: planted bug in put_due_message" in failure.get("message")
    assert "Traceback" in failure.text and "replay: rmqsim run rebuild-errors-4x" in failure.text
    assert json.loads((tmp_path / "gate" / "rebuild-errors-4x-seed1" / "summary.json").read_text())[
        "verdict"] == "simulator_error"


def test_a_sweep_row_records_the_simulator_error(monkeypatch):
    from scenarios.sweep import run_task

    every_second_call_raises(monkeypatch, SendMessageProcessor, "consumer_send_msg_back")
    task = {"cell": "c", "cell_id": "c0", "seed": 3, "params": {}, "repro": "rmqsim run x", "doc": None,
            "source": "retries-small.toml", "mutants": ()}
    import tomllib

    task["doc"] = tomllib.loads(RETRIES)
    row = run_task(task, check=check_run)
    assert row["error"].startswith("simulator error at t=")
    assert "TypeError: planted bug in consumer_send_msg_back, call 2" in row["error"]
    assert row["holds"] is None


def test_the_injected_crash_cannot_be_swallowed_by_a_broad_except():
    assert not issubclass(BrokerCrash, Exception) and issubclass(BrokerCrash, BaseException)
    with pytest.raises(BrokerCrash):
        try:
            raise BrokerCrash("commitlog.put")
        except Exception:  # noqa: BLE001 - what a careless store path would write
            pytest.fail("a broad except swallowed the crash")


# --- no_unexpected_errors on real runs ------------------------------------------------------------------------
def log_events(result, level=None):
    return [e for e in result.history.events if e["kind"] == "log" and (level is None or e["level"] == level)]


@pytest.mark.parametrize("name", ["graceful-restart", "flaky-consumer-broker-crash", "store-rollback",
                                  "put-failures-during-delivery"])
def test_builtin_scenarios_with_faults_log_no_unexplained_error(name):
    result = builtin_run(name)  # checked by check_run, shared with test_builtins_checked
    verdict = result.summary["invariants"]["no_unexpected_errors"]
    assert verdict["holds"], verdict["violations"]
    assert all(e["fault_site"] for e in log_events(result, "ERROR"))
    assert all(v["holds"] for v in result.summary["invariants"].values())


def test_an_injected_faults_error_lines_are_explained():
    result = builtin_run("rebuild-errors-4x")  # checked by check_run, shared with test_builtins_checked
    errors = log_events(result, "ERROR")
    assert errors and {e["fault_site"] for e in errors} == {"schedule.rebuild"}
    verdict = result.summary["invariants"]["no_unexpected_errors"]
    assert verdict["holds"] and verdict["checked"] == len(errors)


def test_broker_down_warnings_name_the_crash_that_took_it_down():
    result = builtin_run("flaky-consumer-broker-crash")
    refused = [e for e in log_events(result) if "the broker is down" in e["message"]]
    assert refused and {e["fault_site"] for e in refused} == {"process_crash"}


def test_no_unexpected_errors_fails_on_a_planted_error_path(monkeypatch):
    """A store error path taken with no fault injected: the schedule service's run() catches a (documented)
    ValueError and logs ERROR, as RocketMQ's catch (Throwable) does; nothing explains it."""
    original = DeliverDelayedMessageTimerTask.execute_on_timeup
    calls = [0]

    def planted(self):
        calls[0] += 1
        if calls[0] == 5:
            raise ValueError("planted: a corrupt read nobody injected")
        return original(self)

    monkeypatch.setattr(DeliverDelayedMessageTimerTask, "execute_on_timeup", planted)
    result = run_scenario(load_builtin("put-failures-during-delivery"), check=check_run)
    verdict = result.summary["invariants"]["no_unexpected_errors"]
    assert not verdict["holds"]
    violation = verdict["violations"][0]
    assert "ScheduleMessageService logged an ERROR" in violation["explanation"]
    assert "no injected fault explains it" in violation["explanation"]
    assert "planted: a corrupt read nobody injected" in violation["explanation"]
    assert result.summary["verdict"] == "violated"
