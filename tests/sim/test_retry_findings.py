"""Retry-path behaviour per era, on real runs (ROCKETMQ.md 4.2, 4.3 and 11), checked by the invariants."""

from __future__ import annotations

from scenarios.catalogue import load_builtin
from scenarios.scenario import load_scenario_text
from sim.checking import check_run
from sim.run import run_scenario


def _run(name: str, overrides: dict | None = None, era: str | None = None):
    result = run_scenario(load_builtin(name, overrides), 1, era=era, check=check_run)
    return result.history.events, result.summary["invariants"]


def _all_hold(invariants: dict) -> bool:
    return all(v["holds"] for v in invariants.values())


def test_5x_producer_fallback_dead_letters_after_max_plus_one_attempts_at_once():
    events, invariants = _run("retry-fallback-to-dlq", era="5.3.3")
    assert _all_hold(invariants), {k: v["violations"][:1] for k, v in invariants.items() if not v["holds"]}
    assert invariants["dlq_after_max_retries"]["checked"] == 3
    dlqs = [e for e in events if e["kind"] == "dlq"]
    assert [e["reconsume_times"] for e in dlqs] == [4, 4, 4]  # max 3: four failed attempts each
    assert not any(e["kind"] == "deliver" and e["topic"].startswith("%DLQ%") for e in events)
    fallbacks = [e for e in events if e["kind"] == "send_back" and e["path"] == "producer-fallback"]
    assert len(fallbacks) == 12 and all(e["result"] == "ok" for e in fallbacks)


def test_4x_producer_fallback_dead_letters_one_attempt_early_and_one_level_late():
    events, invariants = _run("retry-fallback-to-dlq", era="4.9.8")
    assert _all_hold(invariants), {k: v["violations"][:1] for k, v in invariants.items() if not v["holds"]}
    assert invariants["dlq_after_max_retries"]["checked"] == 3
    dlqs = [e for e in events if e["kind"] == "dlq"]
    assert [e["reconsume_times"] for e in dlqs] == [3, 3, 3]  # '>=': three failed attempts each
    via = [e for e in events if e["kind"] == "deliver" and e["topic"] == "%DLQ%GroupA"]
    assert [e["level"] for e in via] == [5, 5, 5]  # the client's DELAY 3 + 2 survived: one more minute
    for d in dlqs:
        cause = [b for b in events if b["kind"] == "send_back" and b["msg_id"] == d["msg_id"]
                 and b["path"] == "producer-fallback" and b["reconsume_times"] == 2][-1]
        assert 60_000 <= d["t_ms"] - cause["t_ms"] <= 61_000


FORWARD_STEP = """
name = "forward-clock-step"
duration = "20s"
drain = "2m"
[[topic]]
name = "TopicTest"
queues = 2
[[producer]]
topic = "TopicTest"
messages = 100
[[consumer]]
group = "GroupA"
topic = "TopicTest"
fail_first = 1
[faults]
clock_steps = [{ at = "5s", by = "8s" }]
"""


def test_a_forward_clock_step_shortens_retries_without_a_violation():
    # Issue 13's repro: every first attempt fails and the broker clock jumps 8 s forward at 5 s (50 false
    # violations before the checker exempted forward steps).
    result = run_scenario(load_scenario_text(FORWARD_STEP, "forward-clock-step"), 1, check=check_run)
    verdict = result.summary["invariants"]["retry_schedule"]
    assert verdict["holds"], verdict["violations"][:1]
    assert verdict["checked"] == 200  # 100 retries' waits and the levels of their 100 send-backs
    sent_back = {e["msg_id"]: e["t_ms"] for e in result.history.events if e["kind"] == "send_back"}
    waits = [e["t_ms"] - sent_back[e["msg_id"]] for e in result.history.events
             if e["kind"] == "consume" and e["reconsume_times"] == 1]
    assert len(waits) == 100 and min(waits) < 10_000  # the step did shorten some waits


def test_4x_has_no_contains_message_check_so_a_slow_listener_forks_the_retry_chain():
    # #5481, fixed in 5.1.0: the scenario holds in 5.3.3 and shows the 4.9.8 bug.
    _, clean = _run("slow-listener-expired-retry")
    assert _all_hold(clean)
    _, old = _run("slow-listener-expired-retry", era="4.9.8")
    assert not old["dlq_after_max_retries"]["holds"]
    assert "after it was dead-lettered" in old["dlq_after_max_retries"]["violations"][0]["explanation"]
