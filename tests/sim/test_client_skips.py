"""Skipped consumer rounds (sim/client_skips.py): the same history and offset files as sending every offset
persist and heartbeat, and each skip's conditions shown necessary by planting their absence."""

from __future__ import annotations

import pytest

from scenarios.scenario import load_scenario_text
from sim.broker_host import BrokerHost
from sim.client_skips import ClientSkips
from sim.run import run_scenario
from store.client.push_consumer import DefaultMQPushConsumer
from store.client.rebalance import RebalancePushImpl
from store.consumer_offset import ConsumerOffsetManager
from store.service import IDLE_FOREVER

from .test_skip_equivalence import _run_seen, _same_history

# Eight queues and two instances: many re-sent offsets per round, so 5.x's version counter crosses a step
# (every 500 commits) while the consumers are idle; a broker crash and a consumer crash in between.
IDLE_OFFSETS = """
name = "idle-offsets"
seed = 3
duration = "10s"
drain = "6m"
[[topic]]
name = "T"
queues = 8
[[producer]]
topic = "T"
messages = 40
rate = "8/s"
delay_levels = [1, 3]
[[consumer]]
group = "G"
topic = "T"
instances = 2
fail_probability = 0.2
[faults]
process_crashes = 1
consumer_crashes = 1
"""


def _scenario():
    return load_scenario_text(IDLE_OFFSETS, "idle-offsets")


def test_skipped_persists_give_the_history_and_files_of_sending_them(monkeypatch):
    skipping, faithful = _same_history(_scenario(), monkeypatch=monkeypatch)
    assert {"crash", "restart", "consume"} <= {e["kind"] for e in skipping.history.events}
    manager = skipping.world.brokers.broker.consumer_offset_manager
    assert manager.data_version.counter >= 1  # a version step fell while the consumers were idle


@pytest.mark.parametrize(("method", "least"), [("persist_consumer_offset", 100), ("send_heartbeat", 20),
                                               ("do_rebalance", 30)])
def test_most_rounds_are_skipped(method, least, monkeypatch):
    rounds = {False: 0, True: 0}
    original = getattr(DefaultMQPushConsumer, method)
    faithful = False

    def counted(consumer):
        rounds[faithful] += 1
        original(consumer)

    monkeypatch.setattr(DefaultMQPushConsumer, method, counted)
    for faithful in (False, True):
        run_scenario(_scenario(), faithful_polling=faithful)
    assert rounds[True] > least  # two consumers, every 5 s (30 s, 20 s) for about 6 minutes
    assert rounds[False] * 3 < rounds[True]


def _plant(monkeypatch, what: str) -> None:
    if what == "any_offset_counts_as_the_brokers":
        def commits_per_round(self, entry):
            consumer = entry.consumer
            broker = self.world.brokers.broker
            if broker is None or consumer.service_state != "RUNNING" or not self._connected(consumer, broker):
                return None  # (a send that opens a connection changes the history, not only the offset file)
            return len(consumer.offset_store.offset_table)
        monkeypatch.setattr(ClientSkips, "_commits_per_round", commits_per_round)
    else:  # no_version_bound: skip past the version step, the counter moved without it
        idle_until = ClientSkips._idle_until
        monkeypatch.setattr(ClientSkips, "_idle_until",
                            lambda self, entry: None if idle_until(self, entry) is None else IDLE_FOREVER)
        monkeypatch.setattr(ConsumerOffsetManager, "account_skipped_commits",
                            lambda self, count: setattr(self, "_version_change_counter",
                                                        self._version_change_counter + count))


def _first_difference(monkeypatch) -> str | None:
    """Where a skipping run first differs from a faithful one: the watched files at a crash, a stop or the end,
    else the first history line that differs (its skipping side); None: no difference."""
    skipping, skipping_seen = _run_seen(monkeypatch, _scenario(), None, None, False)
    faithful, faithful_seen = _run_seen(monkeypatch, _scenario(), None, None, True)
    for (at, files), (_, expected) in zip(skipping_seen, faithful_seen, strict=True):
        if files != expected:
            return f"the watched files differ at {at}"
    lines, expected_lines = skipping.history.to_jsonl().splitlines(), faithful.history.to_jsonl().splitlines()
    for line, expected in zip(lines, expected_lines, strict=False):
        if line != expected:
            return f"history: {line}"
    return None if len(lines) == len(expected_lines) else "history: a longer history"


@pytest.mark.parametrize("what", ["any_offset_counts_as_the_brokers", "no_version_bound"])
def test_a_skip_without_its_condition_changes_the_offset_file(what):
    """The offset file differs where the runs are watched, or (with the pull-after-restart timeline) the broker
    persists consumerOffset.json at a time the faithful run does not."""
    plant, seen = pytest.MonkeyPatch(), pytest.MonkeyPatch()
    _plant(plant, what)
    try:
        difference = _first_difference(seen)
    finally:
        seen.undo()
        plant.undo()
    assert difference is not None
    assert "the watched files differ" in difference or (
        '"kind":"persist"' in difference and '"file":"consumerOffset.json"' in difference), difference


def test_a_heartbeat_is_skipped_only_while_the_broker_up_holds_the_client(monkeypatch):
    """Right after a restart the broker holds no client: each consumer's next heartbeat must run (a broker that
    forgot the client answers its rebalances "no consumer for this group"); after a heartbeat it is held."""
    seen, after_heartbeat = [], []
    restart, heartbeat = BrokerHost.restart, DefaultMQPushConsumer.send_heartbeat
    world = None

    def restarted(host):
        nonlocal world
        world = host.world
        restart(host)
        seen.append([world.client_skips._registered(c) for c, _ in world.clients.consumers.values()])

    def beat(consumer):
        heartbeat(consumer)
        if world is not None and world.brokers.broker is not None:
            after_heartbeat.append(world.client_skips._registered(consumer))

    monkeypatch.setattr(BrokerHost, "restart", restarted)
    monkeypatch.setattr(DefaultMQPushConsumer, "send_heartbeat", beat)
    run_scenario(_scenario())
    assert seen == [[False, False]]
    assert after_heartbeat and all(after_heartbeat)


def _lose_one_pull_request(monkeypatch) -> list:
    """The first pull request of queue T:3 after 20 s is lost (never executed): its process queue's last pull ages
    until a rebalance, 120 s later, drops it ("because pull is pause") and adds it again. Returns the list the
    drops are noted in: (mono ms, queue). (20 s: a pull both runs send through ``pull_message``; from the next
    idle long poll on, a skipping run repeats T:3's pull in place, where no patch of ``pull_message`` sees it.)"""
    pull, drop = DefaultMQPushConsumer.pull_message, RebalancePushImpl.remove_unnecessary_message_queue
    lost, dropped = [], []

    def pull_or_lose(consumer, request):
        mq = request.message_queue
        if not lost and mq.topic == "T" and mq.queue_id == 3 and consumer.clock.monotonic_ms() > 20_000:
            lost.append(request)
            return
        pull(consumer, request)

    def noted_drop(impl, mq, pq):
        dropped.append((impl.clock.monotonic_ms(), mq.queue_id))
        return drop(impl, mq, pq)

    monkeypatch.setattr(DefaultMQPushConsumer, "pull_message", pull_or_lose)
    monkeypatch.setattr(RebalancePushImpl, "remove_unnecessary_message_queue", noted_drop)
    return dropped


def test_a_stalled_queue_is_rebuilt_when_polling_would_rebuild_it(monkeypatch):
    dropped_skipping = _lose_one_pull_request(monkeypatch)
    skipping = run_scenario(_scenario())
    monkeypatch.undo()
    dropped_faithful = _lose_one_pull_request(monkeypatch)
    faithful = run_scenario(_scenario(), faithful_polling=True)
    assert any(queue_id == 3 and at > 130_000 for at, queue_id in dropped_faithful)
    assert dropped_skipping == dropped_faithful
    assert skipping.history.to_jsonl() == faithful.history.to_jsonl()


def test_without_the_stall_bound_a_stalled_queue_is_rebuilt_late(monkeypatch):
    idle_until = ClientSkips.rebalance_idle_until
    monkeypatch.setattr(ClientSkips, "rebalance_idle_until",
                        lambda self, entry: None if idle_until(self, entry) is None else IDLE_FOREVER)
    dropped_skipping = _lose_one_pull_request(monkeypatch)
    run_scenario(_scenario())
    monkeypatch.undo()
    dropped_faithful = _lose_one_pull_request(monkeypatch)
    run_scenario(_scenario(), faithful_polling=True)
    assert dropped_skipping != dropped_faithful


def test_skipped_commits_past_a_version_step_are_a_simulator_error(monkeypatch):
    """The store's guard: a driver whose skips would cross a dataVersion step stops the run as a simulator error,
    never a silently wrong consumerOffset.json."""
    idle_until = ClientSkips._idle_until
    monkeypatch.setattr(ClientSkips, "_idle_until",
                        lambda self, entry: None if idle_until(self, entry) is None else IDLE_FOREVER)
    error = run_scenario(_scenario()).summary["simulator_error"]
    assert error["type"] == "AssertionError" and "the driver's bound is wrong" in error["message"]


def test_the_rebalance_bound_remembers_allocations_by_their_inputs():
    """The strategy sorts both lists, so their order is not part of the key; a change of either set is."""
    from store.client.allocate_message_queue import allocate_message_queue_averagely
    from store.client.api import MessageQueue

    asked = []

    def allocate(group, client_id, known, ids):
        asked.append(client_id)
        return allocate_message_queue_averagely(group, client_id, known, ids)

    skips = ClientSkips(world=None)
    mqs = [MessageQueue("T", "broker-a", i) for i in range(4)]
    share = skips._allocated(allocate, "G", "c1", mqs, ["c1", "c2"])
    assert share == frozenset(mqs[:2])
    assert skips._allocated(allocate, "G", "c1", mqs[::-1], ["c2", "c1"]) == share and len(asked) == 1
    assert skips._allocated(allocate, "G", "c1", mqs, ["c1"]) == frozenset(mqs)  # a consumer left
    assert skips._allocated(allocate, "G", "c1", mqs[:3], ["c1", "c2"]) == frozenset(mqs[:2])  # a queue went
    assert skips._allocated(allocate, "G", "c2", mqs[:3], ["c1", "c2"]) == frozenset(mqs[2:3])
    assert skips._allocated(allocate, "G", "c3", mqs, ["c1", "c2"]) == frozenset()  # not among them: owns none
    assert skips._allocated(allocate, "G", "", mqs, ["c1"]) is None  # refused (the strategy raised)
    assert len(asked) == 6
