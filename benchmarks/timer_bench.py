"""Timer messages per wall second through the real broker on the in-memory disk: enqueued and delivered.

    .venv/bin/python benchmarks/timer_bench.py [--messages N] [--spread-s S] [--precision-ms P]

Sends N timer messages (delays spread over S seconds) through the broker's put path, then drives the broker's
services on a manual clock (idle skipping on) until every message is back in its real topic. Prints one JSON
line: wall time of the sends (put + hook), of the enqueue (consume queue -> timer log + wheel) and of the
delivery (wheel -> real topic), and the rates. Wall time is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from store.broker.broker_controller import BrokerController
from store.clock import ManualClock
from store.config import MessageStoreConfig
from store.disk import MemoryDisk
from store.driver import run_for
from store.message import MessageExt

TOPIC = "BenchTopic"


class Driver:
    """Steps every service at its wake-up, earliest first (``store.driver.run_for``), counting steps."""

    def __init__(self, broker: BrokerController, clock: ManualClock) -> None:
        self.broker, self.clock = broker, clock
        self.steps = 0

    @property
    def mono(self) -> int:
        return self.clock.monotonic_ms()

    def _step(self, service, mono_ms: int) -> None:
        service.step(mono_ms)
        self.steps += 1

    def run_until(self, end_mono: int, done=lambda: False) -> None:
        if not done():
            run_for(lambda: self.broker.all_services, self.clock, end_mono - self.mono, stop=done, step=self._step)


def bench(messages: int, spread_s: int, precision_ms: int, body_len: int) -> dict:
    config = MessageStoreConfig(mapped_file_size_commit_log=64 * 1024 * 1024, timer_precision_ms=precision_ms,
                                timer_slots_total=3600, mapped_file_size_timer_log=52 * 100_000 + 16)
    clock = ManualClock(monotonic_start_ms=0)
    broker = BrokerController(MemoryDisk(), clock, rng=random.Random(1), store_config=config)
    broker.initialize()
    broker.start(0)
    timer = broker.timer_message_store
    timer.idle_skip = True
    broker.schedule_message_service.idle_skip = True
    broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 8)
    driver = Driver(broker, clock)
    driver.run_until(1000)
    rng = random.Random(7)
    body = b"x" * body_len
    msgs = [MessageExt(topic=TOPIC, queue_id=i % 8, body=body,
                       properties={"UNIQ_KEY": f"ID{i:012d}", "TIMER_DELAY_MS": str(1000 + rng.randrange(spread_s * 1000))})
            for i in range(messages)]
    store = broker.message_store

    t0 = time.perf_counter()  # wall-clock ok: benchmark
    for msg in msgs:
        broker.send_message(msg, "P")
    t1 = time.perf_counter()  # wall-clock ok: benchmark
    driver.run_until(driver.mono + spread_s * 1000, done=lambda: timer.commit_queue_offset >= messages)
    t2 = time.perf_counter()  # wall-clock ok: benchmark
    enqueued = timer.commit_queue_offset
    cq_max = store.get_max_offset_in_queue("rmq_sys_wheel_timer", 0)
    delivered = lambda: sum(store.get_max_offset_in_queue(TOPIC, q) for q in range(8))  # noqa: E731
    driver.run_until(driver.mono + (spread_s + 10) * 1000, done=lambda: delivered() >= messages)
    t3 = time.perf_counter()  # wall-clock ok: benchmark
    return {
        "messages": messages, "spread_s": spread_s, "precision_ms": precision_ms, "body_bytes": body_len,
        "timer_topic_records": cq_max, "enqueued": enqueued, "delivered": delivered(),
        "sends_per_s": round(messages / (t1 - t0)),
        "enqueued_per_s": round(enqueued / (t2 - t1)),
        "delivered_per_s": round(delivered() / (t3 - t2)),
        "end_to_end_per_s": round(messages / (t3 - t0)),
        "driver_steps": driver.steps,
        "virtual_s": round(driver.mono / 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--spread-s", type=int, default=60)
    parser.add_argument("--precision-ms", type=int, default=1000)
    parser.add_argument("--body", type=int, default=100)
    args = parser.parse_args()
    print(json.dumps({"disk": "memory", **bench(args.messages, args.spread_s, args.precision_ms, args.body)}))


if __name__ == "__main__":
    main()
