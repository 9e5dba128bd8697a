"""The one place that knows both vocabularies: the real store (store/) and the abstract model (model/).

Why it exists: the model checker proves properties of ``model.spec``; that proof says something
about the real store only if the store behaves like the model. This module drives a real
``BrokerController`` with the model's actions (the model's message ``i`` is the store's message with
``UNIQ_KEY = "m<i>"``; one model tick is one second, and delay level ``l`` is configured as ``l``
seconds) and maps the store's state back to the model's ``Observation``, so that a test can run both
side by side and compare after every step (tests/model/test_conformance.py).

Time alignment: every action happens on a whole second of the broker's monotonic clock, so a unit
that is due after ``l`` ticks is due exactly at the scheduler's 100 ms poll on that second. Periodic
persists are switched off (the model's ``persist`` action does them), and so is the timer wheel,
which the model does not cover.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model import spec
from model.spec import (
    CONSUMER_FILE,
    DELAY_FILE,
    DLQ_TOPIC,
    GROUP,
    RETRY_TOPIC,
    TOPIC,
    TOPIC_NAMES,
    ModelConfig,
    Observation,
)
from store.broker.broker_controller import BrokerController
from store.client.api import MQBrokerException, PullMessageRequest, PullResult, PullStatus
from store.clock import ManualClock
from store.commit_log import SCHEDULE_TOPIC
from store.config import BrokerConfig, MessageStoreConfig
from store.disk import MemoryDisk
from store.driver import run_for
from store.fastjson import loads
from store.faults import FAIL, SITE_PUT, SITE_SCHEDULE_DELIVER, SITE_SCHEDULE_REBUILD, SITE_SEND_BACK
from store.message import PROPERTY_DELAY_TIME_LEVEL, PROPERTY_REAL_TOPIC, MessageExt
from store.mutants import CATALOGUE

from .random_streams import RandomStreams

TICK_MS = 1000
EPOCH_MS = 1_700_000_000_000
NEVER_MS = 10**12  # periodic persists are the model's persist actions instead
PRODUCER_GROUP = "P"
CLIENT_ID = "model@1"
# The model's fault sites and the store's (the model names them as the history does).
STORE_SITE = {spec.SITE_PUT: SITE_PUT, spec.SITE_SCHEDULE_DELIVER: SITE_SCHEDULE_DELIVER,
              spec.SITE_SCHEDULE_REBUILD: SITE_SCHEDULE_REBUILD, spec.SITE_SEND_BACK: SITE_SEND_BACK}


def msg_key(i: int) -> str:
    return f"m{i}"


def delay_level_string(levels: int) -> str:
    """Delay level l waits l seconds: "1s 2s ... Ls" (one model tick = one second)."""
    return " ".join(f"{level}s" for level in range(1, levels + 1))


def store_configs(cfg: ModelConfig) -> tuple[MessageStoreConfig, BrokerConfig]:
    store = MessageStoreConfig(
        era=cfg.era,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 64,
        message_delay_level=delay_level_string(cfg.levels),
        flush_delay_offset_interval_ms=NEVER_MS,
        flush_delay_offset_first_delay_ms=NEVER_MS,
        timer_wheel_enable=False,
    )
    broker = BrokerConfig(flush_consumer_offset_interval_ms=NEVER_MS, flush_consumer_offset_first_delay_ms=NEVER_MS)
    return store, broker


class OneShotFaults:
    """The store's fault injector: fails the next question at one armed site, once."""

    def __init__(self) -> None:
        self.armed: str | None = None
        self.on_fire = lambda site: None

    def arm(self, site: str | None) -> None:
        self.armed = site

    def at(self, site: str, detail: str = "") -> str | None:
        if site == self.armed:
            self.armed = None
            self.on_fire(site)
            return FAIL
        return None


@dataclass
class SchedulerEvent:
    """What the scheduler did during a tick, in the model's words: a delivery or an injected fault."""

    verb: str  # "deliver" or "fault"
    level: int
    msg: str = ""
    r: int = 0
    to: str = ""
    site: str = ""


@dataclass
class StoreUnderModel:
    """A real broker on a memory disk and a manual clock, driven with the model's actions."""

    cfg: ModelConfig
    seed: int = 1
    disk: MemoryDisk = field(default_factory=MemoryDisk)
    clock: ManualClock = field(default_factory=lambda: ManualClock(EPOCH_MS, monotonic_start_ms=0))
    faults: OneShotFaults = field(default_factory=OneShotFaults)

    def __post_init__(self) -> None:
        self.store_config, self.broker_config = store_configs(self.cfg)
        self.mutants = frozenset(m for m in self.cfg.mutants if m in CATALOGUE)
        self.broker: BrokerController | None = None
        self.events: list[SchedulerEvent] = []
        self._stepping = None  # the service being stepped (a fault names its level)
        self.faults.on_fire = self._on_fault
        self.held: dict[tuple[int, int], MessageExt] = {}  # the consumer's copies of failed messages
        self._streams = RandomStreams(self.seed)
        self.restart()

    # --- lifecycle ----------------------------------------------------------------------------------------
    @property
    def mono_ms(self) -> int:
        return self.clock.monotonic_ms()

    @property
    def up(self) -> bool:
        return self.broker is not None

    def restart(self) -> None:
        broker = BrokerController(self.disk, self.clock, rng=self._streams.stream(f"broker{self.mono_ms}"),
                                  broker_config=self.broker_config, store_config=self.store_config,
                                  faults=self.faults, mutants=self.mutants)
        broker.initialize()
        broker.start(self.mono_ms)
        broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 1)
        # the consumer heartbeats its topic and the group's retry topic (a CLUSTERING push consumer subscribes
        # both): without FLAG_SUBSCRIPTION the broker serves pulls of heartbeated topics only
        broker.heart_beat(CLIENT_ID, GROUP, "CLUSTERING", [TOPIC, RETRY_TOPIC])
        broker.schedule_message_service.deliver_listeners.append(self._on_deliver)
        self.broker = broker
        self.held.clear()
        self.settle()

    def crash(self, kind: str) -> None:
        """``process``: kill -9 (the page cache survives); ``graceful``: shutdown() first."""
        assert self.broker is not None
        if kind == "graceful":
            self.broker.shutdown()
        else:
            self.disk.process_crash()
        self.broker = None
        self.held.clear()

    # --- time ---------------------------------------------------------------------------------------------
    def _on_deliver(self, inner: MessageExt, level: int, due_ms: int, result, *_more, **_kw) -> None:
        if result.is_ok:  # a failed put was reported by the fault injector already
            self.events.append(SchedulerEvent("deliver", level, inner.uniq_key or "", inner.reconsume_times,
                                              inner.topic))

    def _on_fault(self, site: str) -> None:
        level = getattr(self._stepping, "level", 0)
        model_site = next(m for m, s in STORE_SITE.items() if s == site)
        self.events.append(SchedulerEvent("fault", level, site=model_site))

    def run_for(self, duration_ms: int) -> None:
        """Advance both clocks, stepping every service at each of its wake-ups (earliest first)."""
        assert self.broker is not None
        broker = self.broker
        run_for(lambda: broker.all_services, self.clock, duration_ms, step=self._step)

    def _step(self, service, mono_ms: int) -> None:
        self._stepping = service
        service.step(mono_ms)
        self._stepping = None

    def settle(self) -> None:
        """Dispatch what was just stored into the consume queues (the reput service would, 1 ms later)."""
        assert self.broker is not None
        self.broker.message_store.do_reput()
        self.run_for(0)

    def tick(self, fail_site: str | None = None) -> list[SchedulerEvent]:
        """One model tick (one second), with one failure armed at a model fault site; what happened."""
        self.events = []
        self.faults.arm(STORE_SITE[fail_site] if fail_site else None)
        self.run_for(TICK_MS)
        self.settle()  # what the scheduler put back on the last poll reaches the consume queues now
        self.faults.arm(None)
        return self.events

    # --- the model's actions ------------------------------------------------------------------------------
    def send(self, i: int, level: int, fail: bool = False) -> bool:
        assert self.broker is not None
        props = {"UNIQ_KEY": msg_key(i)}
        if level > 0:
            props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        msg = MessageExt(topic=TOPIC, queue_id=0, body=b"body", properties=props, born_timestamp=self.clock.now_ms())
        self.faults.arm(SITE_PUT if fail else None)
        try:
            self.broker.send_message(msg, PRODUCER_GROUP)
            ok = True
        except MQBrokerException:
            ok = False
        self.faults.arm(None)
        self.settle()
        return ok

    def pull(self, t: int, offset: int, commit_offset: int) -> MessageExt:
        """The consumer's pull of one message at ``offset``, carrying its offset for the broker to commit."""
        assert self.broker is not None
        answers: list = []
        request = PullMessageRequest(GROUP, TOPIC_NAMES[t], 0, offset, 1, commit_offset, suspend=False)
        self.broker.pull_message_async(request, answers.append)
        (answer,) = answers
        if not isinstance(answer, PullResult) or answer.pull_status != PullStatus.FOUND:
            raise AssertionError(f"pull of {TOPIC_NAMES[t]}@{offset} found nothing: {answer}")
        (msg,) = answer.msg_found_list
        return msg

    def hold(self, t: int, offset: int, msg: MessageExt) -> None:
        self.held[(t, offset)] = msg

    def release(self, t: int, offset: int) -> MessageExt:
        return self.held.pop((t, offset))

    def send_back(self, msg: MessageExt, fail: bool = False) -> bool:
        """consumerSendMsgBack with delay level 0 (the broker picks 3 + reconsumeTimes)."""
        assert self.broker is not None
        self.faults.arm(SITE_SEND_BACK if fail else None)
        try:
            self.broker.consumer_send_msg_back(GROUP, msg, 0, self.cfg.max_retries)
            ok = True
        except MQBrokerException:
            ok = False
        self.faults.arm(None)
        self.settle()
        return ok

    def commit(self, t: int, offset: int) -> None:
        assert self.broker is not None
        self.broker.update_consumer_offset_oneway(GROUP, TOPIC_NAMES[t], 0, offset)

    def persist(self, file: str) -> None:
        assert self.broker is not None
        if file == DELAY_FILE:
            self.broker.schedule_message_service.persist()
        elif file == CONSUMER_FILE:
            self.broker.consumer_offset_manager.persist()
        else:
            raise ValueError(file)

    # --- the store's state in the model's terms -------------------------------------------------------------
    def _queue(self, topic: str, queue_id: int) -> list[tuple[MessageExt, int]]:
        store = self.broker.message_store
        cq = store.get_consume_queue(topic, queue_id)
        if cq is None:
            return []
        out = []
        for i in range(cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()):
            phy, size, tags_code = cq.get_unit(i)
            msg = store.look_message_by_offset(phy, size)
            assert msg is not None, f"{topic}/{queue_id}@{i}: commit log entry unreadable"
            out.append((msg, tags_code))
        return out

    def _persisted(self, name: str) -> dict:
        data = self.disk.read_file("config/" + name)
        if not data:
            return {}
        doc = loads(data.decode("utf-8"))
        return doc.get("offsetTable") or {} if isinstance(doc, dict) else {}

    def observe(self) -> Observation:
        """The store's state as the model's Observation (only meaningful while the broker is up)."""
        assert self.broker is not None
        broker = self.broker
        now = self.clock.now_ms()
        sms = broker.schedule_message_service
        delay_file = self._persisted(DELAY_FILE)
        levels = []
        for level in range(1, self.cfg.levels + 1):
            units = tuple(
                (msg.uniq_key, msg.reconsume_times, max(0, -(-(tags - now) // TICK_MS)),
                 msg.properties.get(PROPERTY_REAL_TOPIC, "?"))
                for msg, tags in self._queue(SCHEDULE_TOPIC, level - 1))
            task = sms.tasks.get(level)
            levels.append((units, task.offset if task is not None else 0, sms.offset_table.get(level, 0),
                           int(delay_file.get(level, 0))))
        offsets_file = self._persisted(CONSUMER_FILE)
        topics = []
        for name in (TOPIC, RETRY_TOPIC):
            units = tuple((msg.uniq_key, msg.reconsume_times) for msg, _ in self._queue(name, 0))
            committed = broker.consumer_offset_manager.query_offset(GROUP, name, 0)
            persisted = (offsets_file.get(f"{name}@{GROUP}") or {}).get(0, 0)
            topics.append((name, units, max(committed, 0), int(persisted)))
        dlq = tuple((msg.uniq_key, msg.reconsume_times) for msg, _ in self._queue(DLQ_TOPIC, 0))
        return Observation(True, tuple(levels), tuple(topics), dlq)


