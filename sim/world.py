"""The simulated world of one run: it wires SimPy, the disk, the broker host, the clients, the network,
the fault plan and the history recorder together, and runs the loop.

Owners and their scheduling ranks (lower runs first within one millisecond): the fault plan,
the broker's services, the network, producers, consumers. The jobs live in their own modules:
``broker_host`` (broker lifecycle), ``clients`` (client lifecycle), ``fault_actions`` (what each
timed fault does), ``history_recorder`` (the one writer of the history).
"""

from __future__ import annotations

import simpy

from sim.scenario import Scenario
from store.config import BrokerConfig, MessageStoreConfig
from store.consume_queue import CQ_STORE_UNIT_SIZE
from store.disk import MemoryDisk
from store.faults import BrokerCrash
from store.log import StoreLog
from store.probes import ProbeCollector
from store.service import PeriodicService

from .broker_host import BrokerHost
from .client_skips import ClientSkips
from .clients import Clients
from .clock import SimClock
from .faults import FaultPlan, SimFaults
from .history import History
from .history_recorder import HistoryRecorder
from .long_poll_skips import LongPollSkips
from .network import NetworkService
from .random_streams import RandomStreams
from .scheduler import Scheduler

RANK_FAULTS, RANK_NETWORK, RANK_OS = 0, 1000, 9000  # the broker 100, producers 2000, consumers 3000
WRITEBACK_INTERVAL_MS, DIRTY_EXPIRE_MS = 5000, 30_000  # Linux: dirty_writeback / dirty_expire_centisecs


def store_config_of(scenario: Scenario, era: str | None = None) -> MessageStoreConfig:
    b = scenario.broker
    return MessageStoreConfig(
        era=era or b.era,
        mapped_file_size_commit_log=b.commit_log_file_size,
        mapped_file_size_consume_queue=b.consume_queue_units_per_file * CQ_STORE_UNIT_SIZE,
        flush_disk_type=b.flush_disk_type,
        message_delay_level=b.message_delay_level,
        flush_delay_offset_interval_ms=b.flush_delay_offset_interval_ms,
        enable_schedule_async_deliver=b.enable_schedule_async_deliver,
        timer_precision_ms=b.timer_precision_ms,
        timer_roll_window_slot=b.timer_roll_window_slot,
        timer_enable_retry_until_success=b.timer_enable_retry_until_success,
        timer_skip_unknown_error=b.timer_skip_unknown_error,
    )


class World:
    def __init__(self, scenario: Scenario, seed: int, *, era: str | None = None, mutants=frozenset(),
                 disk=None, faithful_polling: bool = False, shuffle_ties: bool = False, preload=None) -> None:
        self.scenario = scenario
        self.shuffle_ties = shuffle_ties
        self.seed = seed
        self.mutants = frozenset(mutants)
        self.probes = ProbeCollector()  # coverage probes hit by this run: never history events
        self.faithful_polling = faithful_polling
        self.env = simpy.Environment()
        self.clock = SimClock(self.env)
        self.rngs = RandomStreams(seed)
        self.history = History()
        self.recorder = HistoryRecorder(self.history, self.now_mono)
        self.disk = disk if disk is not None else MemoryDisk()
        self.client_disk = MemoryDisk()  # the consumers' hosts (BROADCASTING offsets.json)
        self.store_config = store_config_of(scenario, era)
        self.broker_config = BrokerConfig(
            auto_create_subscription_group=scenario.broker.auto_create_subscription_group,
            flush_consumer_offset_interval_ms=scenario.broker.flush_consumer_offset_interval_ms,
        )
        self.preload = preload  # run --from-store: a StoreImage whose files, sizes and clock the run starts on
        if preload is not None:
            self.store_config = preload.store_config(self.store_config)
            preload.install(self)
        self.brokers = BrokerHost(self)
        self.scheduler = Scheduler(self.env, self.brokers.crashed,
                                   tie_rng=self.rngs.stream("ties") if shuffle_ties else None)
        self.scheduler.before_step = self._before_step
        self.recorder.before_write = self.scheduler.settle_before_now
        self.faults = SimFaults(self.recorder, scenario.faults, self.rngs.stream("faults"))
        self.recorder.faults = self.faults
        self.clients = Clients(self)
        # Consumers' rounds that change nothing: offset persists re-sending the broker's own offsets, heartbeats of a
        # registered client, rebalances that keep the allocation (sim/client_skips.py).
        self.client_skips = ClientSkips(self) if not (faithful_polling or shuffle_ties) else None
        # Idle long polls repeated in place by the hold check (sim/long_poll_skips.py).
        self.long_poll_skips = LongPollSkips(self) if self.client_skips is not None else None
        self.network_service = NetworkService()
        self.start_mono_ms = 0
        self.traffic_end_mono_ms = scenario.duration_ms
        self.end_mono_ms = scenario.duration_ms + scenario.drain_ms
        self.snapshots: dict[int, tuple[int, int, dict]] = {}  # rollback key -> (t, history length, store copy)

    @property
    def broker(self):
        """The broker that is up, or None while it is down."""
        return self.brokers.broker

    # --- time -------------------------------------------------------------------------------------------
    def now_mono(self) -> int:
        return int(self.env.now)

    def log_to(self, name: str) -> StoreLog:
        """The logger a component of this world writes to: WARN and ERROR lines become ``log`` events."""
        return StoreLog(name, self.recorder.on_log)

    def _before_step(self, _now_mono: int) -> None:
        """A new scheduler step: a log line is put down only to a fault that fired in its own step."""
        self.recorder.end_step()
        self.faults.fired = None

    # --- running ---------------------------------------------------------------------------------
    def run(self, progress=None) -> None:
        self.brokers.start()
        if self.preload is not None:  # the recovered store's messages join the checked population
            self.preload.record_population(self)
        # Deliveries of requests and answers (and a restart, which a crash's record has settled before).
        self.scheduler.add_owner("network", [self.network_service], RANK_NETWORK, blind=True)
        # The kernel's writeback only moves bytes from the page cache to the platter: only a power failure can
        # tell. Without one in the plan, a skipping run leaves it out.
        power = self.scenario.faults.power_failures > 0 or self.faithful_polling
        if isinstance(self.disk, MemoryDisk) and power:
            writeback = PeriodicService("kernel-writeback", lambda now: self.disk.writeback(now, DIRTY_EXPIRE_MS),
                                        WRITEBACK_INTERVAL_MS, WRITEBACK_INTERVAL_MS, self.now_mono())
            self.scheduler.add_owner("os", [writeback], RANK_OS)
        plan = FaultPlan(self, self.scenario.faults, self.rngs.stream("plan"), self.start_mono_ms,
                         self.scenario.duration_ms)
        self.scheduler.add_owner("faults", [plan], RANK_FAULTS)
        self.clients.start_consumers()
        self.clients.start_producers()
        self.env.process(self._phases())
        if progress is None:
            self.env.run(until=self.end_mono_ms)
        else:
            step = max(1, self.end_mono_ms // 100)
            for t in range(step, self.end_mono_ms + step, step):
                self.env.run(until=min(t, self.end_mono_ms))
                progress(min(t, self.end_mono_ms), self.end_mono_ms)
        self.scheduler.settle_deferred(self.end_mono_ms)  # the rounds a faithful run would have stepped

    def _phases(self):
        yield self.env.timeout(self.traffic_end_mono_ms)
        self.scheduler.settle_deferred(self.traffic_end_mono_ms)  # this event comes before the services' wakes
        self.faults.active = False
        self.recorder.record("drain")

    def finish(self) -> None:
        """Stop the world: a graceful broker shutdown, so the store directory is complete."""
        self.clients.stop_all()
        if self.brokers.broker is not None:
            self.brokers.timer_seen()
            try:
                self.brokers.broker.shutdown()
            except BrokerCrash:
                pass
