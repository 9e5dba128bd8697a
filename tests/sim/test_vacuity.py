"""No vacuous verdicts (#12.3): checks read tags and subscriptions from the history, every run is checked,
and a verdict that checked nothing it should have is reported as vacuous (and fails the run)."""

from __future__ import annotations

import copy

import pytest

from model.invariants import check_events, overall_verdict
from scenarios.scenario import load_scenario_text
from sim.checking import context_of
from sim.run import run_scenario

TWO_TAGS = """
name = "two-tags"
seed = 3
duration = "20s"
drain = "20s"

[[topic]]
name = "T"

[[producer]]
topic = "T"
messages = 40
rate = "10/s"
tags = "TagA"

[[producer]]
topic = "T"
messages = 60
rate = "10/s"
tags = "TagB"

[[consumer]]
group = "GA"
topic = "T"
subscription = "TagA"
instances = 2
"""


@pytest.fixture(scope="module")
def two_tags():
    return run_scenario(load_scenario_text(TWO_TAGS, "two-tags.toml"))


def test_no_loss_checks_exactly_the_subscribed_tag(two_tags):
    no_loss = two_tags.summary["invariants"]["no_loss"]
    assert no_loss["holds"] and not no_loss["vacuous"]
    assert no_loss["checked"] == 40
    assert two_tags.summary["verdict"] == "holds"
    sends = [e for e in two_tags.history.events if e["kind"] == "send"]
    assert sorted({e["tags"] for e in sends}) == ["TagA", "TagB"]
    assert sum(e["tags"] == "TagA" for e in sends) == 40


def test_consumer_start_is_recorded_per_instance(two_tags):
    starts = [e for e in two_tags.history.events if e["kind"] == "consumer_start"]
    assert [(e["group"], e["client_id"], e["topic"], e["subscription"], e["model"], e["max_reconsume_times"])
            for e in starts] == [("GA", "GA-0@sim", "T", "TagA", "CLUSTERING", 16),
                                 ("GA", "GA-1@sim", "T", "TagA", "CLUSTERING", 16)]


def test_a_dropped_tag_a_message_fails_no_loss(two_tags):
    events = two_tags.history.events
    victim = next(e["msg_id"] for e in events if e["kind"] == "send" and e["tags"] == "TagA")
    dropped = [e for e in events if not (e["kind"] == "consume" and e["msg_id"] == victim)]
    verdict = check_events(dropped, context_of(two_tags.world, dropped), only=["no_loss"])["no_loss"]
    assert not verdict["holds"]
    assert [v["msg_id"] for v in verdict["violations"]] == [victim]


def test_tags_lost_from_the_history_make_no_loss_vacuous(two_tags):
    # The old bug (tags rebuilt per topic, the last producer winning) checked 0 messages and "held".
    events = copy.deepcopy(two_tags.history.events)
    for e in events:
        if e["kind"] == "send":
            e["tags"] = "TagB"
    verdicts = check_events(events, context_of(two_tags.world, events))
    assert verdicts["no_loss"]["checked"] == 0 and verdicts["no_loss"]["holds"]
    assert verdicts["no_loss"]["vacuous"]
    assert "GA consumed" in verdicts["no_loss"]["vacuous_reason"]
    assert overall_verdict(verdicts) == "vacuous"


def test_a_consumer_without_consumer_start_makes_group_checks_vacuous(two_tags):
    events = [e for e in two_tags.history.events if e["kind"] != "consumer_start"]
    verdicts = check_events(events, context_of(two_tags.world, events))
    for name in ("no_loss", "dlq_after_max_retries"):
        assert verdicts[name]["vacuous"], name
        assert "no consumer_start" in verdicts[name]["vacuous_reason"]


def test_every_run_is_checked_unless_told_otherwise(two_tags):
    from model.invariants import CHECKS

    assert set(two_tags.summary["invariants"]) == set(CHECKS)
    unchecked = run_scenario(load_scenario_text(TWO_TAGS, "two-tags.toml"), check=False)
    assert unchecked.summary["invariants"] == {} and unchecked.summary["verdict"] == "unchecked"
    assert overall_verdict({}) == "vacuous"  # a checker that returns nothing is no pass


def test_a_vacuous_summary_exits_1_and_fails_the_gate():
    from scenarios.cli import _verdict_exit
    from scenarios.gate import GateRun

    verdict = {"holds": True, "checked": 0, "violations": [], "vacuous": True}
    assert _verdict_exit({"invariants": {"no_loss": verdict}, "verdict": "vacuous"}) == 1
    assert _verdict_exit({"invariants": {"no_loss": {**verdict, "vacuous": False, "checked": 1}},
                          "verdict": "holds"}) == 0
    assert not GateRun("s", 1, 0.0, vacuous=["no_loss"]).ok


def test_the_gate_fails_a_vacuous_run_without_shrinking_it(tmp_path):
    from scenarios.gate import junit_xml, run_gate
    from sim.checking import check_run

    def hollow(history, world):
        verdicts = check_run(history, world)
        verdicts["no_loss"].update(checked=0, vacuous=True, vacuous_reason="planted")
        return verdicts

    gate = run_gate(runs=2, seed_base=1, out_dir=str(tmp_path), names=["consumer-crash"], check=hollow)
    assert not gate.ok and gate.stopped_by == "violation" and len(gate.runs) == 1
    assert gate.failing.vacuous == ["no_loss"] and gate.failing.failed == []
    assert gate.shrink is None and gate.run_dir is not None
    assert 'type="VacuousVerdict"' in junit_xml(gate) and "planted" in junit_xml(gate)


def test_the_report_of_a_vacuous_run_says_so(tmp_path, two_tags):
    pytest.importorskip("matplotlib")
    from reports.report import run_sections
    from sim.run import write_run

    summary = copy.deepcopy(two_tags.summary)
    summary["invariants"]["no_loss"].update(vacuous=True, vacuous_reason="planted reason")
    write_run(str(tmp_path / "run"), two_tags.history, summary, two_tags.world)
    (head,), violated = run_sections(str(tmp_path / "run"), str(tmp_path))
    html = "".join(str(part) for part in head.body)
    assert violated == [] and "Vacuous verdict" in html and "planted reason" in html
