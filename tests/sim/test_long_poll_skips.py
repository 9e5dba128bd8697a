"""Idle long polls repeated in place (sim/long_poll_skips.py): the same history and offset files as answering each
timed-out pull and pulling again, and the skip's conditions shown necessary by planting their absence."""

from __future__ import annotations

import pytest

from scenarios.catalogue import load_builtin
from scenarios.scenario import load_scenario_text
from sim.long_poll_skips import LongPollSkips
from sim.run import run_scenario
from sim.scheduler import Scheduler
from store.client.push_consumer import DefaultMQPushConsumer
from store.client.rebalance import RebalancePushImpl

from .test_client_skips import IDLE_OFFSETS
from .test_skip_equivalence import _same_history

# One queue, one consumer, and two messages sent 1 ms and 2 ms after a hold check times the idle pull out: each
# arrives while the repeat is on its way (answered at the check, pulled again 1 ms later, held again 2 ms later).
MID_CYCLE = """
name = "mid-cycle"
seed = 1
duration = "3m"
drain = "4m"
[[topic]]
name = "T"
queues = 1
[[producer]]
topic = "T"
messages = 1
start = "40001ms"
[[producer]]
topic = "T"
messages = 1
start = "100002ms"
[[consumer]]
group = "G"
topic = "T"
"""


# Two groups of idle pulls on different 20 s cycles: four queues pulled again after messages at 45 s, the other four
# and the retry queue on the cycle of the messages at 40 s. Each group's check repeats many cycles at once while the
# other's checks keep coming in between; their commits share one version counter that steps during the drain.
TWO_PHASES = """
name = "two-phases"
seed = 1
duration = "3m"
drain = "20m"
[[topic]]
name = "T"
queues = 8
[[producer]]
topic = "T"
messages = 8
rate = "1000/s"
start = "40001ms"
[[producer]]
topic = "T"
messages = 4
rate = "1000/s"
start = "45001ms"
[[consumer]]
group = "G"
topic = "T"
"""


def _mid_cycle():
    return load_scenario_text(MID_CYCLE, "mid-cycle")


def _idle_offsets():
    return load_scenario_text(IDLE_OFFSETS, "idle-offsets")


def _two_phases():
    return load_scenario_text(TWO_PHASES, "two-phases")


def test_a_check_repeats_many_idle_cycles_at_once_beside_another_cycle(monkeypatch):
    skipping, faithful = _same_history(_two_phases(), monkeypatch=monkeypatch)
    skips = skipping.world.long_poll_skips
    assert skips.cycles_ahead > 50  # 20 minutes of 20 s cycles, two groups
    assert skipping.world.brokers.broker.consumer_offset_manager.data_version.counter >= 2  # steps while idle
    assert skipping.world.scheduler.steps * 10 < faithful.world.scheduler.steps


def test_the_sparse_builtin_checks_a_few_times_for_hundreds_of_cycles():
    """retry-ladder-to-dlq: five hours of one consumer's idle pulls, 900 cycles, with a message waiting at a level
    most of the time; a check sees as far as the next step that could tell (the level's delivery, a version
    step of consumerOffset.json, the run's end)."""
    run = run_scenario(load_builtin("retry-ladder-to-dlq"), check=False)
    skips = run.world.long_poll_skips
    assert skips.cycles_ahead > 700
    assert run.world.scheduler.steps < 1000


def test_messages_sent_while_a_repeat_is_on_its_way_are_consumed_as_without_repeats(monkeypatch):
    skipping, faithful = _same_history(_mid_cycle(), monkeypatch=monkeypatch)
    consumed = [e["t_ms"] for e in skipping.history.events if e["kind"] == "consume"]
    # found by the repeat that arrives after it (40 002) or waking the repeat held just before it (100 002)
    assert consumed == [40_004, 100_004]
    assert skipping.world.long_poll_skips.repeated > 0
    assert faithful.world.long_poll_skips is None


def test_repeated_polls_give_the_offset_file_of_committing_them(monkeypatch):
    """Nine queues per consumer, a broker crash and a consumer crash: the repeats' commits and the skipped offset
    persists' share one version counter, which crosses a dataVersion step while the consumers are idle."""
    skipping, _ = _same_history(_idle_offsets(), monkeypatch=monkeypatch)
    assert skipping.world.long_poll_skips.repeated > 50
    assert skipping.world.brokers.broker.consumer_offset_manager.data_version.counter >= 1


def test_most_idle_pulls_are_repeated_in_place(monkeypatch):
    pulls = {False: 0, True: 0}
    original = DefaultMQPushConsumer.pull_message
    faithful = False

    def counted(consumer, request):
        pulls[faithful] += 1
        original(consumer, request)

    monkeypatch.setattr(DefaultMQPushConsumer, "pull_message", counted)
    for faithful in (False, True):
        run_scenario(_mid_cycle(), faithful_polling=faithful)
    assert pulls[True] > 10  # one queue and its retry queue, every 20 s for 7 minutes
    assert pulls[False] * 2 < pulls[True]


def _plant(monkeypatch, what: str) -> None:
    if what == "blind_to_arrivals":  # a repeat although something (a send) steps before it arrives
        monkeypatch.setattr(Scheduler, "next_armed_ms", lambda self: None)
    elif what == "no_span_budget":  # many cycles at once, their commits not weighed against the next version step
        cycles = LongPollSkips._cycles
        monkeypatch.setattr(LongPollSkips, "_cycles",
                            lambda self, processor, mono_ms, due, clients, commits: cycles(
                                self, processor, mono_ms, due, clients, 0))
    elif what == "blind_to_other_cycles":  # the other group's commits left out of the span's budget
        monkeypatch.setattr(LongPollSkips, "_other_cycles", staticmethod(lambda processor, mono_ms, due: []))
    else:  # no_commit_debt: the repeats' commits are not counted into the version counter
        repeat = LongPollSkips._repeat

        def repeat_without_debt(self, processor, mono_ms, due):
            offsets = processor.offsets
            offsets.account_skipped_commits = lambda count: None
            try:
                return repeat(self, processor, mono_ms, due)
            finally:
                del offsets.account_skipped_commits

        monkeypatch.setattr(LongPollSkips, "_repeat", repeat_without_debt)


@pytest.mark.parametrize(("what", "scenario"), [("blind_to_arrivals", _mid_cycle), ("no_commit_debt", _idle_offsets),
                                               ("no_span_budget", _two_phases),
                                               pytest.param("blind_to_other_cycles", _two_phases,
                                                            marks=pytest.mark.slow)])
def test_a_repeat_without_its_condition_changes_the_history_or_the_offset_file(what, scenario):
    plant, seen = pytest.MonkeyPatch(), pytest.MonkeyPatch()
    _plant(plant, what)
    try:
        with pytest.raises(AssertionError):
            _same_history(scenario(), monkeypatch=seen)
    finally:
        seen.undo()
        plant.undo()



def _dropped_queues(faithful: bool) -> list:
    """The queues a rebalance drops in the mid-cycle run: (mono ms, topic, queue id)."""
    drop = RebalancePushImpl.remove_unnecessary_message_queue
    dropped = []

    def noted_drop(impl, mq, pq):
        dropped.append((impl.clock.monotonic_ms(), mq.topic, mq.queue_id))
        return drop(impl, mq, pq)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RebalancePushImpl, "remove_unnecessary_message_queue", noted_drop)
        run_scenario(_mid_cycle(), faithful_polling=faithful)
    return dropped


def test_a_repeat_keeps_its_queue_fresh_for_the_stall_check():
    """A repeat sets the last pull time as the pull it stands for: no queue looks stalled (pulled last more than
    120 s ago) to a rebalance. Such a drop logs only at INFO, so the history alone would not tell."""
    assert _dropped_queues(False) == _dropped_queues(True) == []


def test_without_the_last_pull_time_a_rebalance_drops_queues_as_stalled(monkeypatch):
    repeat = LongPollSkips._repeat

    def repeat_keeping_the_old_time(self, processor, mono_ms, due):
        queues = [self._client_of(held) for held in due]
        old = [pq.last_pull_timestamp_ms for pq in queues if pq is not None]
        again = repeat(self, processor, mono_ms, due)
        for pq, at in zip([pq for pq in queues if pq is not None], old, strict=True):
            pq.last_pull_timestamp_ms = at
        return again

    monkeypatch.setattr(LongPollSkips, "_repeat", repeat_keeping_the_old_time)
    assert _dropped_queues(False) != _dropped_queues(True)
