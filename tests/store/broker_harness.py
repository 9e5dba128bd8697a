"""A broker on a manual clock, stepped like a driver would: for unit tests of the real services."""

from __future__ import annotations

import random

from store.broker.broker_controller import BrokerController
from store.client.api import CLUSTERING, PullMessageRequest, PullResult
from store.clock import ManualClock
from store.config import MessageStoreConfig
from store.disk import MemoryDisk
from store.driver import run_for
from store.message import MessageExt

SMALL_STORE = MessageStoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64,
                                 timer_slots_total=3600, mapped_file_size_timer_log=52 * 64 + 16)


class BrokerHarness:
    def __init__(self, disk=None, clock=None, store_config=SMALL_STORE, mutants=frozenset(), faults=None, seed=1,
                 before_initialize=None, **broker_kwargs):
        self.disk = disk if disk is not None else MemoryDisk()
        # Monotonic time starts at 0, as in the simulator; a harness handed a clock (a restart) continues it.
        self.clock = clock if clock is not None else ManualClock(1_700_000_000_000, monotonic_start_ms=0)
        self.logs: list[str] = []
        kwargs = dict(rng=random.Random(seed), store_config=store_config, mutants=frozenset(mutants),
                      log=self.logs.append, **broker_kwargs)
        if faults is not None:
            kwargs["faults"] = faults
        self.broker = BrokerController(self.disk, self.clock, **kwargs)
        if before_initialize is not None:  # e.g. a listener that must see the recovery
            before_initialize(self.broker)
        self.broker.initialize()
        self.broker.start(self.mono_ms)

    @property
    def mono_ms(self) -> int:
        return self.clock.monotonic_ms()

    def run_for(self, duration_ms: int) -> None:
        """Advance both clocks, stepping every service at each of its wake-ups (earliest first)."""
        broker = self.broker
        run_for(lambda: broker.all_services, self.clock, duration_ms)

    def send(self, topic="TopicTest", queue_id=0, body=b"hi", key="k", **props) -> str:
        msg = MessageExt(topic=topic, queue_id=queue_id, body=body, properties={"UNIQ_KEY": key, **props},
                         born_timestamp=self.clock.now_ms())
        return self.broker.send_message(msg, "P").send_status

    def pull(self, group, topic, queue_id, offset, max_nums=32, commit_offset=0, heartbeat=True) -> PullResult:
        """``heartbeat``: play a real client, which heartbeats its subscription before it pulls (a pull from a
        group the broker has no heartbeat from answers SUBSCRIPTION_NOT_EXIST)."""
        info = self.broker.consumer_manager.groups.get(group)
        if heartbeat and (info is None or topic not in info.topics):
            self.broker.heart_beat(f"{group}@harness", group, CLUSTERING, [topic])
        answers = []
        self.broker.pull_message_async(
            PullMessageRequest(group, topic, queue_id, offset, max_nums, commit_offset, suspend=False),
            answers.append)
        assert len(answers) == 1
        return answers[0]
