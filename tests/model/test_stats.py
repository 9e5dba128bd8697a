"""One definition of the statistics of a history (``model/stats.py``), used by summary.json, the sweep rows,
the reports and the bounded_lateness invariant (#12.5); pending messages are not lost (#19.2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import model.stats as ms
from model.invariants import check_events
from scenarios.catalogue import load_builtin
from scenarios.scenario import load_scenario_text
from sim.checking import context_of
from sim.run import run_scenario

from ..shared_runs import builtin_run

README = Path(__file__).resolve().parents[2] / "README.md"


B0 = 1_700_000_000_000


def test_a_copy_delivered_again_is_measured_from_the_store_of_its_due_time():
    """A unit a power failure left twice in a level's queue is delivered again after the message was stored at
    another level (explore seed 4137813379): it is still the first copy, due when that copy was due."""
    def store(t, due_after, queue_id):
        return {"kind": "store", "msg_id": "A", "topic": ms.SCHEDULE_TOPIC, "queue_id": queue_id, "t_ms": t,
                "broker_ms": B0 + t, "due_ms": B0 + t + due_after}

    def deliver(t, due_ms, level):
        return {"kind": "deliver", "msg_id": "A", "level": level, "t_ms": t, "due_ms": due_ms, "topic": "%RETRY%G"}

    events = [store(1000, 1000, 0), deliver(2050, B0 + 2000, 1), store(3000, 5000, 1), deliver(3500, B0 + 2000, 1),
              deliver(8040, B0 + 8000, 2)]
    records = ms.delivery_lateness(events)
    assert [(r.level, r.due_mono_ms, r.lateness_ms) for r in records] == [(1, 2000, 50), (1, 2000, 1500), (2, 8000, 40)]


def test_percentile_is_nearest_rank():
    assert ms.percentile([], 0.5) is None
    assert ms.percentile([5, 1, 3], 0.5) == 3
    assert ms.percentile(list(range(101)), 0.99) == 99


@pytest.fixture(scope="module")
def stepped():
    # A backwards clock step: the broker clock and the simulator's clock disagree about lateness.
    return builtin_run("backwards-clock-step")  # its summary and history, shared with test_builtins_checked


def test_summary_has_one_lateness_by_level_and_it_is_model_stats(stepped):
    summary = stepped.summary
    assert "max_lateness_ms_by_level" not in summary["invariants"]["bounded_lateness"]
    records = ms.delivery_lateness(stepped.history.events)
    assert records and summary["stats"]["delivered_from_schedule"] == len(records)
    assert summary["stats"]["lateness_max_ms_by_level"] == ms.max_lateness_by_level(records)
    assert summary["stats"]["lateness_ms"] == ms.lateness_summary(records)


def test_lateness_is_measured_on_the_simulators_clock(stepped):
    events = stepped.history.events
    assert any(e["kind"] == "fault" and e.get("site") == "clock" for e in events)
    records = ms.delivery_lateness(events)
    broker_clock = [d["broker_ms"] - d["due_ms"] for d in events if d["kind"] == "deliver"]
    assert [r.lateness_ms for r in records] != broker_clock  # the step shows on one clock only
    for r in records:
        assert r.lateness_ms == r.t_ms - r.due_mono_ms


def test_reports_plot_the_same_lateness(stepped):
    pytest.importorskip("matplotlib")
    from reports.run_plots import lateness_by_level

    plotted = sorted(v for values in lateness_by_level(stepped.history.events).values() for v, _ in values)
    assert plotted == sorted(r.lateness_ms for r in ms.delivery_lateness(stepped.history.events))


def test_bounded_lateness_judges_the_same_numbers():
    # Plant a late delivery: the invariant's sentence quotes exactly the lateness model.stats computes.
    run = run_scenario(load_builtin("timer-wheel-basic"))
    events = [dict(e) for e in run.history.events]
    last = max(i for i, e in enumerate(events) if e["kind"] == "deliver")
    events[last]["t_ms"] += 5000
    record = [r for r in ms.delivery_lateness(events) if r.t_ms == events[last]["t_ms"]][-1]
    assert record.lateness_ms > 5000 - 1000
    verdict = check_events(events, context_of(run.world, events), only=["bounded_lateness"])["bounded_lateness"]
    assert not verdict["holds"]
    assert f"delivered {record.lateness_ms} ms late" in verdict["violations"][-1]["explanation"]


def test_the_duplicates_invariant_counts_what_the_stats_count():
    summary = builtin_run("consumer-crash").summary
    assert summary["stats"]["duplicates"] > 0
    assert summary["invariants"]["duplicates"]["duplicates"] == summary["stats"]["duplicates"]


def test_sweep_rows_use_the_same_functions():
    import scenarios.sweep_rows as sweep

    assert sweep.time_to_dlq_ms is ms.time_to_dlq_ms and sweep.percentile is ms.percentile


def test_duplicates_and_time_to_dlq():
    events = [
        {"seq": 0, "t_ms": 0, "kind": "consumer_start", "group": "B", "client_id": "B-0@sim", "topic": "T",
         "subscription": "*", "model": "BROADCASTING", "max_reconsume_times": 16},
        {"seq": 1, "t_ms": 10, "kind": "send", "msg_id": "M", "status": "SEND_OK"},
        {"seq": 2, "t_ms": 20, "kind": "consume", "group": "G", "client_id": "G-0", "msg_id": "M",
         "status": "CONSUME_SUCCESS"},
        {"seq": 3, "t_ms": 30, "kind": "consume", "group": "G", "client_id": "G-1", "msg_id": "M",
         "status": "CONSUME_SUCCESS"},
        {"seq": 4, "t_ms": 40, "kind": "consume", "group": "B", "client_id": "B-0@sim", "msg_id": "M",
         "status": "CONSUME_SUCCESS"},
        {"seq": 5, "t_ms": 50, "kind": "consume", "group": "B", "client_id": "B-1@sim", "msg_id": "M",
         "status": "CONSUME_SUCCESS"},
        {"seq": 6, "t_ms": 90, "kind": "dlq", "group": "G", "msg_id": "M", "reconsume_times": 17},
    ]
    assert ms.duplicate_consumes(events) == 1  # G twice; B's two instances each once
    assert ms.time_to_dlq_ms(events) == [80]


# --- pending is not lost (#19.2) -----------------------------------------------------------------------------
def _readme_example() -> str:
    match = re.search(r"```toml\n(name = \"my-retries\".*?)```", README.read_text(encoding="utf-8"), re.S)
    assert match, "the README's scenario example is gone"
    return match.group(1)


@pytest.fixture(scope="module")
def readme_run():
    scenario = load_scenario_text(_readme_example(), "README.md")
    return run_scenario(scenario)


def test_the_readme_example_holds_with_its_2h_messages_pending(readme_run):
    summary = readme_run.summary
    assert summary["verdict"] == "holds", {k: v["violations"][:1] for k, v in summary["invariants"].items()}
    level18 = sum(1 for e in readme_run.history.events if e["kind"] == "send" and e["delay_level"] == 18)
    assert level18 == 200
    assert summary["stats"]["pending"] == level18
    assert summary["invariants"]["no_loss"]["pending"] == level18
    assert "pending" in README.read_text(encoding="utf-8")


def test_the_same_messages_are_lost_if_the_drain_had_covered_them(readme_run):
    events = readme_run.history.events
    ctx = context_of(readme_run.world, events)
    longer = type(ctx)(**{**ctx.__dict__, "end_ms": ctx.end_ms + 3 * 3_600_000})
    verdict = check_events(events, longer, only=["no_loss"])["no_loss"]
    assert not verdict["holds"] and verdict["violation_count"] == 200 and verdict["pending"] == 0


def test_a_truly_lost_message_still_fails_no_loss(readme_run):
    events = readme_run.history.events
    victim = next(e["msg_id"] for e in events if e["kind"] == "send" and e["delay_level"] == 1)
    lost = [e for e in events if not (e["msg_id" if "msg_id" in e else "kind"] == victim
                                      and e["kind"] in ("deliver", "consume"))]
    verdict = check_events(lost, context_of(readme_run.world, lost), only=["no_loss"])["no_loss"]
    assert not verdict["holds"]
    assert [v["msg_id"] for v in verdict["violations"]] == [victim]


def test_pending_needs_the_due_time_after_the_end():
    def store(t, due_after, topic=ms.SCHEDULE_TOPIC):
        extra = {"due_ms": 10**12 + t + due_after} if topic == ms.SCHEDULE_TOPIC else {
            "timer_out_ms": 10**12 + t + due_after}
        return {"seq": 0, "t_ms": t, "kind": "store", "msg_id": "M", "topic": topic, "broker_ms": 10**12 + t,
                **extra}

    end = 100_000
    assert ms.pending_messages([store(0, 200_000)], end) == {"M": 200_000 + ms.POLL_SLACK_MS}
    assert ms.pending_messages([store(0, 50_000)], end) == {}  # due well before the end: if missing, it is lost
    assert "M" in ms.pending_messages([store(0, end - 500)], end)  # the polling bound: not consumable in time
    assert "M" in ms.pending_messages([store(0, end - 3000, ms.TIMER_TOPIC)], end)  # the timer's precision
    delivered = [store(0, 10_000), {"seq": 1, "t_ms": 10_050, "kind": "deliver", "msg_id": "M"}]
    assert ms.pending_messages(delivered, end) == {}


def test_a_message_is_pending_until_the_clients_pull_again_after_the_brokers_last_restart():
    """A restarted broker answers pulls SUBSCRIPTION_NOT_EXIST until a heartbeat: 4.9.8 clients send one every
    30 s, 5.3.3 clients as soon as a request reconnects."""
    end = 100_000
    stored = {"seq": 1, "t_ms": 80_000, "kind": "store", "msg_id": "M", "topic": "TopicTest", "broker_ms": 80_000}

    def restart(t_ms, ok=True):
        return {"seq": 0, "t_ms": t_ms, "kind": "restart", "target": "broker", "ok": ok}

    assert ms.pending_messages([restart(75_000), stored], end, era="4.9.8") == {"M": 108_000}
    assert ms.pending_messages([restart(75_000), stored], end, era="5.3.3") == {}  # pulled again by 81 s
    assert ms.pending_messages([restart(50_000), stored], end, era="4.9.8") == {}  # heartbeat by 83 s
    assert ms.pending_messages([restart(75_000, ok=False), stored], end, era="4.9.8") == {}  # never came up
    assert ms.pending_messages([{**restart(75_000), "target": "GroupA-0"}, stored], end, era="4.9.8") == {}
    assert ms.pending_messages([restart(75_000), stored], end) == {}  # no era: the rule is not applied


# --- a level delivery is paired with the copy at its queue offset --------------------------------------------
def _copy(t, delay_ms, level, offset, msg_id="A"):
    return {"kind": "store", "msg_id": msg_id, "topic": ms.SCHEDULE_TOPIC, "queue_id": level - 1,
            "queue_offset": offset, "t_ms": t, "broker_ms": B0 + t, "due_ms": B0 + t + delay_ms}


def _level_delivery(t, due_ms, level, offset, msg_id="A"):
    return {"kind": "deliver", "msg_id": msg_id, "level": level, "t_ms": t, "due_ms": due_ms, "topic": "%RETRY%G",
            "queue_id": 0, "broker_ms": B0 + t, "schedule_queue_offset": offset}


def _torn(due_ms: int) -> int:
    """A tagsCode whose last bytes a power failure zeroed (the unit straddled a sector: explore seed 1000000067)."""
    return due_ms >> 16 << 16


def test_a_delivery_with_a_torn_due_time_is_measured_from_the_copy_at_its_queue_offset():
    """The torn due time is no copy's: measured from the message's last store, a later copy, it was 2050 ms late."""
    events = [_copy(1000, 5000, 2, 7), _copy(4000, 5000, 2, 9), _level_delivery(6050, _torn(B0 + 6000), 2, 7),
              _level_delivery(9040, B0 + 9000, 2, 9)]
    records = ms.delivery_lateness(events)
    assert [(r.level, r.due_mono_ms, r.lateness_ms) for r in records] == [(2, 6000, 50), (2, 9000, 40)]


def test_a_queue_offset_used_again_after_a_cut_belongs_to_the_latest_copy_stored_there_before_the_delivery():
    """Level 1's offset 3 held a copy a cut destroyed; the retry stored again there is the one delivered (its unit
    torn); a copy stored there after the delivery is not its copy."""
    events = [_copy(1000, 1000, 1, 3), {"kind": "cq_truncate", "t_ms": 1500}, _copy(5000, 1000, 1, 3),
              _copy(5500, 10_000, 3, 0), _level_delivery(6030, _torn(B0 + 6000), 1, 3),
              _copy(7000, 1000, 1, 3), _level_delivery(8020, B0 + 8000, 1, 3)]
    records = ms.delivery_lateness(events)
    assert [(r.level, r.due_mono_ms, r.lateness_ms) for r in records] == [(1, 6000, 30), (1, 8000, 20)]


def test_copies_of_one_message_at_the_same_offset_of_two_levels_are_told_apart_by_the_level():
    """Two copies of a message (a send-back answered twice) at offset 4 of levels 2 and 3: each delivery is
    measured from its own level's copy, though its due time is torn."""
    events = [_copy(1000, 5000, 2, 4), _copy(1200, 10_000, 3, 4), _level_delivery(6040, _torn(B0 + 6000), 2, 4),
              _level_delivery(11_260, _torn(B0 + 11_200), 3, 4)]
    records = ms.delivery_lateness(events)
    assert [(r.level, r.due_mono_ms, r.lateness_ms) for r in records] == [(2, 6000, 40), (3, 11_200, 60)]


def test_a_timer_delivery_is_paired_as_before_with_the_messages_last_store():
    """The timer names no queue offset (-1): its delivery belongs to the message's last store, the timer copy, and
    is due at the time it names (TIMER_OUT_MS + the precision), not the copy's TIMER_OUT_MS; the level copy of its
    retry, stored after it, is measured from its own queue offset."""
    timer = {"kind": "store", "msg_id": "A", "topic": ms.TIMER_TOPIC, "queue_id": 0, "queue_offset": 0,
             "t_ms": 1000, "broker_ms": B0 + 1000, "timer_out_ms": B0 + 3000}
    events = [timer, {"kind": "deliver", "msg_id": "A", "level": "timer", "t_ms": 4300, "due_ms": B0 + 4000,
                      "topic": "T", "queue_id": 0, "broker_ms": B0 + 4300, "schedule_queue_offset": -1},
              _copy(5000, 10_000, 3, 0), _level_delivery(15_080, B0 + 15_000, 3, 0)]
    records = ms.delivery_lateness(events)
    assert [(r.level, r.due_mono_ms, r.lateness_ms) for r in records] == [("timer", 4000, 300), (3, 15_000, 80)]


def test_a_preloaded_copy_is_paired_by_its_queue_offset_too():
    """``run --from-store``: a copy the store held at the start names its level queue offset (its commit-log
    record's), so a delivery of it (its unit torn) is not measured from a copy stored after it at another level."""
    preloaded = {"kind": "preloaded", "msg_id": "A", "topic": ms.SCHEDULE_TOPIC, "queue_id": 1, "queue_offset": 5,
                 "t_ms": 0, "broker_ms": B0, "deliver_ms": B0 + 3000, "state": "pending"}
    events = [preloaded, _copy(1000, 10_000, 3, 0), _level_delivery(3070, _torn(B0 + 3000), 2, 5)]
    records = ms.delivery_lateness(events)
    assert [(r.level, r.due_mono_ms, r.lateness_ms) for r in records] == [(2, 3000, 70)]
