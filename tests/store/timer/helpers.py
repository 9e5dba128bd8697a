"""A broker with a small timer wheel, stepped service by service, recording what was stored and delivered."""

from __future__ import annotations

from store import message as codec
from store.driver import run_for
from store.faults import FAIL
from store.topic_config import TIMER_TOPIC

from ..broker_harness import SMALL_STORE, BrokerHarness

# 10 minutes of slots at 1 s, timer-log files of 8 units (so files roll and end with a blank).
TIMER_STORE = SMALL_STORE.with_(timer_slots_total=600, mapped_file_size_timer_log=52 * 8 + 16)
TOPIC = "TopicTest"


class TimerHarness(BrokerHarness):
    """BrokerHarness plus: a topic, the store/deliver events, and stepping with a step count and a stop test."""

    def __init__(self, *args, store_config=TIMER_STORE, idle_skip=False, literal_put_polls=False, **kwargs):
        super().__init__(*args, store_config=store_config, **kwargs)
        self.timer = self.broker.timer_message_store
        self.timer.idle_skip = idle_skip
        self.timer.literal_put_polls = literal_put_polls
        self.broker.schedule_message_service.idle_skip = idle_skip
        self.stored: list[tuple] = []  # (key, topic, queue_id, queue_offset, phy_offset, size, broker ms)
        self.deliveries: list[tuple] = []  # (key, due_ms, status, broker ms, topic, queue_id)
        self.steps = 0
        self.broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 4)
        self.broker.message_store.put_listeners.append(self._on_store)
        self.timer.deliver_listeners.append(self._on_deliver)

    def _on_store(self, msg, result) -> None:
        a = result.append
        self.stored.append((msg.uniq_key, a.topic, a.queue_id, a.logics_offset, a.wrote_offset, a.wrote_bytes,
                            a.store_timestamp))

    def _on_deliver(self, inner, level, due_ms, result, slot_ms) -> None:
        assert level == "timer"
        self.deliveries.append((inner.uniq_key, due_ms, result.status, self.clock.now_ms(), inner.topic,
                                inner.queue_id))

    def drive(self, duration_ms: int, stop=None, max_steps: int | None = None) -> bool:
        """run_for with a step counter; returns True when ``stop()`` held or ``max_steps`` were taken."""
        taken = 0

        def step(service, mono_ms: int) -> None:
            nonlocal taken
            service.step(mono_ms)
            self.steps += 1
            taken += 1

        def done() -> bool:
            return (stop is not None and stop()) or (max_steps is not None and taken >= max_steps)

        broker = self.broker
        return run_for(lambda: broker.all_services, self.clock, duration_ms, stop=done, step=step)

    def send_timer(self, key: str, delay_ms: int | None = None, queue_id: int = 0, **props) -> str:
        if delay_ms is not None:
            props["TIMER_DELAY_MS"] = str(delay_ms)
        return self.send(topic=TOPIC, queue_id=queue_id, key=key, **props)

    def real_copies(self, topic: str = TOPIC) -> list:
        """Every message in the real topic's queues (what consumers would see)."""
        out = []
        for qid in range(4):
            cq = self.broker.message_store.get_consume_queue(topic, qid)
            if cq is None:
                continue
            out += self.broker.message_store.get_message("G", topic, qid, cq.get_min_offset_in_queue(), 10_000).messages
        return out

    def records_in_log(self, topic: str = TOPIC) -> list:
        """Every valid record of ``topic`` in the commit log, read as recovery does (no consume queue involved)."""
        log = self.broker.message_store.commit_log
        out, offset = [], max(log.get_min_offset(), 0)
        while offset < log.get_max_offset():
            data = log.get_data(offset)
            if data is None:
                break
            pos = 0
            while pos < len(data):
                req = codec.check_message_and_return_size(data, pos, check_crc=True)
                if not req.success or req.msg_size <= 0:
                    break
                if req.topic == topic:
                    out.append(codec.decode_message(data, pos))
                pos += req.msg_size
            offset = log.roll_next_file(offset)
        return out

    def timer_topic_records(self) -> list:
        cq = self.broker.message_store.get_consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            return []
        return self.broker.message_store.get_message("G", TIMER_TOPIC, 0, cq.get_min_offset_in_queue(),
                                                     10_000).messages


class FailN:
    """FAIL the first ``n`` asks of one site (then nothing)."""

    def __init__(self, site: str, n: int) -> None:
        self.site, self.left = site, n
        self.asked = 0

    def at(self, site: str, detail: str = "") -> str | None:
        if site != self.site:
            return None
        self.asked += 1
        if self.left > 0:
            self.left -= 1
            return FAIL
        return None


class FailAsks:
    """FAIL the asks of one site whose numbers (1-based) are in ``which``."""

    def __init__(self, site: str, which) -> None:
        self.site, self.which = site, set(which)
        self.asked = 0

    def at(self, site: str, detail: str = "") -> str | None:
        if site != self.site:
            return None
        self.asked += 1
        return FAIL if self.asked in self.which else None


def ceil_to(value: int, precision: int) -> int:
    return -(-value // precision) * precision
