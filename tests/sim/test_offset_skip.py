"""Skipped consumer offset persists (sim/offset_skip.py): the same history and consumerOffset.json as sending
every 5 s, and each of the skip's two conditions shown necessary by planting its absence."""

from __future__ import annotations

import pytest

from scenarios.scenario import load_scenario_text
from sim.offset_skip import OffsetPersistSkipping
from sim.run import run_scenario
from store.client.push_consumer import DefaultMQPushConsumer
from store.consumer_offset import ConsumerOffsetManager
from store.service import IDLE_FOREVER

from .test_skip_equivalence import _same_history

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


def test_most_persist_rounds_are_skipped(monkeypatch):
    rounds = {False: 0, True: 0}
    persist = DefaultMQPushConsumer.persist_consumer_offset
    faithful = False

    def counted(consumer):
        rounds[faithful] += 1
        persist(consumer)

    monkeypatch.setattr(DefaultMQPushConsumer, "persist_consumer_offset", counted)
    for faithful in (False, True):
        run_scenario(_scenario(), faithful_polling=faithful)
    assert rounds[True] > 100  # two consumers, every 5 s for about 6 minutes
    assert rounds[False] * 3 < rounds[True]


def _plant(monkeypatch, what: str) -> None:
    if what == "any_offset_counts_as_the_brokers":
        def commits_per_round(self, entry):
            consumer = entry.consumer
            if self.world.brokers.broker is None or consumer.service_state != "RUNNING":
                return None
            return len(consumer.offset_store.offset_table)
        monkeypatch.setattr(OffsetPersistSkipping, "_commits_per_round", commits_per_round)
    else:  # no_version_bound: skip past the version step, the counter moved without it
        idle_until = OffsetPersistSkipping._idle_until
        monkeypatch.setattr(OffsetPersistSkipping, "_idle_until",
                            lambda self, entry: None if idle_until(self, entry) is None else IDLE_FOREVER)
        monkeypatch.setattr(ConsumerOffsetManager, "account_skipped_commits",
                            lambda self, count: setattr(self, "_version_change_counter",
                                                        self._version_change_counter + count))


@pytest.mark.parametrize("what", ["any_offset_counts_as_the_brokers", "no_version_bound"])
def test_a_skip_without_its_condition_changes_the_offset_file(what):
    plant, seen = pytest.MonkeyPatch(), pytest.MonkeyPatch()
    _plant(plant, what)
    try:
        with pytest.raises(AssertionError, match="differ"):
            _same_history(_scenario(), monkeypatch=seen)
    finally:
        seen.undo()
        plant.undo()
