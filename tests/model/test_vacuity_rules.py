"""Each invariant's vacuity rule (``model.invariants.VACUITY``) on crafted histories: it fires when the
history shows something the invariant should have checked and it checked nothing, and stays quiet otherwise."""

from __future__ import annotations

from model.invariants import VACUITY, RunContext, _Index, check_events, groups_from_history, overall_verdict
from tests.model.test_invariants import B0, LEVELS, A, H, ctx


def _sched(h: H, t: int, level: int = 1) -> H:
    h.store(t, A, topic="SCHEDULE_TOPIC_XXXX", queue_id=level - 1)
    h.events[-1]["due_ms"] = B0 + t + LEVELS[level]
    return h


def _rule(name: str, h: H, checked: int = 0, context: RunContext | None = None):
    return VACUITY[name](_Index(h.events), context or ctx(), {"checked": checked})


def test_a_clean_history_is_not_vacuous():
    h = H().send(0, A).store(0, A).consume(2, A).commit(3, 1).drain()
    verdicts = check_events(h.events, ctx())
    assert not any(v["vacuous"] for v in verdicts.values())
    assert overall_verdict(verdicts) == "holds"


def test_no_loss_is_vacuous_when_a_consumed_message_was_not_checked():
    h = H().send(0, A).consume(2, A)
    h.events[0]["tags"] = "TagB"
    group = ctx().groups[0]
    context = RunContext(groups=(type(group)(**{**group.__dict__, "tags": frozenset({"TagA"})}),),
                         delay_level_ms=LEVELS, drain_start_ms=10_000, end_ms=100_000)
    verdict = check_events(h.events, context, only=["no_loss"])["no_loss"]
    assert verdict["checked"] == 0 and verdict["vacuous"]
    assert "G consumed AAAA0001 (tags 'TagB')" in verdict["vacuous_reason"]


def test_no_loss_with_nothing_checked_for_sends_to_a_consumed_topic():
    h = H().send(0, A)
    assert _rule("no_loss", h) == "nothing checked although 1 message(s) were sent with SEND_OK to topics with consumers"
    assert _rule("no_loss", h, checked=1) is None


def test_groups_unknown_to_the_history_make_the_group_checks_vacuous():
    h = H().send(0, A).consume(2, A, status="RECONSUME_LATER")
    nobody = RunContext(groups=(), delay_level_ms=LEVELS, drain_start_ms=10_000, end_ms=100_000)
    for name in ("no_loss", "at_least_once_redelivery", "dlq_after_max_retries"):
        assert "no consumer_start" in _rule(name, h, context=nobody), name


def test_at_least_once_with_failed_attempts_and_nothing_checked():
    h = H().send(0, A).consume(2, A, status="RECONSUME_LATER")
    assert _rule("at_least_once_redelivery", h) == "nothing checked although 1 consume attempt(s) failed"
    assert _rule("at_least_once_redelivery", h, context=ctx(model="BROADCASTING")) is None


def test_no_early_delivery_and_per_level_order_when_a_due_copy_was_never_delivered():
    h = _sched(H().send(0, A, level=1), 0)
    verdicts = check_events(h.events, ctx(), only=["no_early_delivery", "per_level_order"])
    assert verdicts["no_early_delivery"]["vacuous"] and verdicts["per_level_order"]["vacuous"]
    # Due after the end of the drain: pending, nothing to deliver yet, not vacuous.
    late = _sched(H().send(0, A, level=6), 0, level=6)
    verdicts = check_events(late.events, ctx(end_ms=60_000), only=["no_early_delivery", "per_level_order"])
    assert not verdicts["no_early_delivery"]["vacuous"] and not verdicts["per_level_order"]["vacuous"]


def test_per_level_order_when_deliveries_lack_their_queue_offset():
    h = _sched(H().send(0, A, level=1), 0).deliver(1000, A, 1, B0 + 1000, sq_offset=-1)
    verdict = check_events(h.events, ctx(), only=["per_level_order"])["per_level_order"]
    assert verdict["checked"] == 0 and verdict["vacuous"]


def test_retry_schedule_rule():
    h = H().send(0, A).consume(2, A, status="RECONSUME_LATER").send_back(2, A, 0)
    h.consume(10_102, A, reconsume_times=1, queue_topic="%RETRY%G")
    assert "was sent back and consumed again" in _rule("retry_schedule", h)
    assert _rule("retry_schedule", h, checked=1) is None
    h.add(5000, "fault", site="clock", action="step", by_ms=-60_000, broker_ms=B0)
    assert _rule("retry_schedule", h) is None  # a backwards step excuses the check, so nothing was owed


def test_bounded_lateness_rule():
    h = _sched(H().drain(10_000).send(20_000, A, level=1), 20_000)
    assert "due in the settled drain" in _rule("bounded_lateness", h)
    early = _sched(H().drain(10_000).send(2000, A, level=1), 2000)
    assert _rule("bounded_lateness", early) is None  # due before the drain: nothing owed


def test_duplicates_rule():
    h = H().send(0, A).store(0, A)
    verdict = check_events(h.events, ctx(), only=["duplicates"])["duplicates"]
    assert verdict["vacuous"] and verdict["checked"] == 0
    assert _rule("duplicates", H().send(0, A)) is None  # nothing stored where a group reads, nothing due
    # every consume of the stored copy failed (its retry copies lost): nothing to see; one success is evidence again
    failed = H().send(0, A).store(0, A).consume(100, A, status="RECONSUME_LATER")
    assert _rule("duplicates", failed) is None
    assert _rule("duplicates", failed.consume(200, A)) is not None


def _gone_for_good(h: H, t: int) -> H:
    """A power failure at ``t`` and a restart that #9705's torn topics.json refused (explore seed 131)."""
    h.crash(t, crash_kind="power")
    h.events[-1]["commit_log_durable"] = 0
    h.add(t + 1000, "restart", target="broker", ok=False, error="config/topics.json.bak unreadable")
    return h


def test_nothing_is_due_after_the_broker_went_for_good():
    late = _sched(H().send(0, A, level=3), 0, level=3)  # due at 10 s
    assert _rule("no_early_delivery", late) is not None
    assert _rule("per_level_order", late) is not None
    assert _rule("duplicates", late) is not None
    gone = _gone_for_good(_sched(H().send(0, A, level=3), 0, level=3), 5000)
    assert _rule("no_early_delivery", gone) is None
    assert _rule("per_level_order", gone) is None
    assert _rule("duplicates", gone) is None
    due_before = _gone_for_good(_sched(H().send(0, A, level=1), 0, level=1), 5000)  # due at 1 s
    assert _rule("no_early_delivery", due_before) is not None


def test_groups_come_from_consumer_start_events():
    h = H()
    for i, sub in enumerate(("*", "TagA || TagB")):
        h.add(i, "consumer_start", group="G", client_id=f"G-{i}@sim", topic="T", subscription=sub,
              model="CLUSTERING", max_reconsume_times=3)
    (g,) = groups_from_history(h.events)
    assert g.client_ids == ("G-0@sim", "G-1@sim") and g.tags == frozenset({"TagA", "TagB"})
    assert g.max_reconsume_times == 3
