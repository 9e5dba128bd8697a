"""The simulated world of one run: SimPy, the broker over a disk, clients, network, faults, history.

Owners and their scheduling ranks (lower runs first within one millisecond): the fault plan,
the broker's services, the network, producers, consumers.
"""

from __future__ import annotations

import gc

import simpy

from sim.scenario import Scenario
from store.broker.broker_controller import BrokerController, BrokerStartError
from store.client.api import RemotingError
from store.client.errors import MQClientException
from store.client.producer import DefaultMQProducer
from store.client.push_consumer import DefaultMQPushConsumer
from store.client.rebalance_service import RebalanceService
from store.config import BrokerConfig, MessageStoreConfig
from store.consume_queue import CQ_STORE_UNIT_SIZE
from store.disk import MemoryDisk
from store.faults import BrokerCrash
from store.log import DISK_DAMAGE, INFO, StoreLog
from store.message import PROPERTY_DELAY_TIME_LEVEL, PROPERTY_TIMER_OUT_MS
from store.probes import ProbeCollector
from store.service import PeriodicService
from store.subscription_group import SubscriptionGroupConfig
from store.timer.dormancy import ALL_TURNS
from store.topic_config import TIMER_TOPIC, TopicConfig
from store.topics import DLQ_GROUP_TOPIC_PREFIX, RMQ_SYS_SCHEDULE_TOPIC

from .clock import SimClock
from .faults import FaultPlan, SimFaults
from .history import History
from .network import NetworkService, SimNetwork
from .random_streams import RandomStreams
from .scheduler import Scheduler
from .workload import ConsumeExecutor, ProducerActor

RANK_FAULTS, RANK_BROKER, RANK_NETWORK, RANK_PRODUCERS, RANK_CONSUMERS, RANK_OS = 0, 100, 1000, 2000, 3000, 9000
WRITEBACK_INTERVAL_MS, DIRTY_EXPIRE_MS = 5000, 30_000  # Linux: dirty_writeback / dirty_expire_centisecs
DLQ_PREFIX = DLQ_GROUP_TOPIC_PREFIX
TIMED_SUFFIX = "/timed"  # a consumer's timed services (their own scheduling owner)


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
        self.scheduler = Scheduler(self.env, self.broker_crashed,
                                   tie_rng=self.rngs.stream("ties") if shuffle_ties else None)
        self.faults = SimFaults(self, scenario.faults, self.rngs.stream("faults"))
        self.broker: BrokerController | None = None
        self.broker_generation = 0
        self.network_service = NetworkService()
        self.due_of: dict[str, int] = {}  # msg_id -> due time of its scheduled copy (for the send event)
        self.attempts: dict[tuple[str, str], int] = {}  # (group, msg_id) -> consume attempts
        self.consumers: dict[str, tuple[DefaultMQPushConsumer, ConsumeExecutor]] = {}
        self.consumer_specs: dict[str, tuple] = {}
        self.start_mono_ms = 0
        self.traffic_end_mono_ms = scenario.duration_ms
        self.end_mono_ms = scenario.duration_ms + scenario.drain_ms
        self.broker_down_since: int | None = None
        self.restart_error: str | None = None
        self.snapshots: dict[int, tuple[int, int, dict]] = {}
        self.broker_owners: list[str] = []
        self.down_site: str | None = None  # the fault that took the broker down (what a refused call names)
        self.damage_site: str | None = None  # the last fault that lost or rolled back stored data

    # --- time and history -----------------------------------------------------------------------
    def now_mono(self) -> int:
        return int(self.env.now)

    def record(self, kind: str, **fields) -> None:
        self.history.record(self.now_mono(), kind, **fields)

    def log_to(self, name: str) -> StoreLog:
        """The logger a component of this world writes to: WARN and ERROR lines become ``log`` events."""
        return StoreLog(name, self._on_log)

    def _on_log(self, level: str, logger: str, message: str, fault_site: str | None, caught: bool) -> None:
        """A line without a cause of its own is put down to a fault site that fired in the same step; a caught
        exception is not (it names its fault, or none caused it)."""
        if level == INFO:
            return
        if fault_site == DISK_DAMAGE:  # inconsistent files: only an injected loss of data explains them
            fault_site = self.damage_site or (None if caught else self.faults.fired)
        elif fault_site is None and not caught:
            fault_site = self.faults.fired
        self.record("log", level=level, logger=logger, message=message, fault_site=fault_site)

    # --- the broker -------------------------------------------------------------------------------
    def start_broker(self) -> None:
        broker = BrokerController(
            self.disk, self.clock, rng=self.rngs.stream(f"broker/{self.broker_generation}"),
            broker_config=self.broker_config, store_config=self.store_config, faults=self.faults,
            mutants=self.mutants, log=self.log_to("RocketmqBroker"),
        )
        broker.attach_probes(self.probes)
        broker.message_store.unindexed_listeners.append(self._on_unindexed)
        timer = broker.timer_message_store
        if timer is not None:
            timer.torn_unit_listeners.append(self._on_torn_timer_unit)
        broker.initialize()
        if not self.faithful_polling:
            broker.schedule_message_service.idle_skip = True
            if timer is not None:
                timer.idle_skip = True
                timer.dormancy = not self.shuffle_ties  # dormancy relies on the timer services' fixed order
        if timer is not None:
            timer.deliver_listeners.append(self._on_deliver)
        store = broker.message_store
        store.put_listeners.append(self._on_store)
        store.new_message_listener = self._on_new_message
        store.arriving_listeners.append(self._on_arriving)
        broker.schedule_message_service.deliver_listeners.append(self._on_deliver)
        broker.consumer_manager.ids_changed_listeners.append(self._on_ids_changed)
        for manager in (broker.consumer_offset_manager, broker.schedule_message_service,
                        broker.topic_config_manager, broker.subscription_group_manager):
            manager.persist_listeners.append(self._on_persist)
        if self.broker_generation == 0:
            self._create_topics(broker)
        # Deliberate (history): `persist` events only for writes that change the file or its .bak, unless the run
        # can lose power (then every rewrite re-opens a torn-write window and is kept). Not delayOffset.json:
        # with idle skipping its dataVersion catches up on skipped polls only at the level's next poll, so
        # whether a persist rewrites the same bytes would depend on skipping.
        for manager in (broker.consumer_offset_manager, broker.topic_config_manager,
                        broker.subscription_group_manager):
            manager.skip_identical_persist = self.scenario.faults.power_failures == 0
        broker.start(self.now_mono())
        if not self.faithful_polling:
            for service in broker.message_store.services[1:]:  # the flush rounds
                service.idle_skip = True
            # consumerOffset.json's 5 s persist, while it would rewrite the same bytes and no crash waits at it.
            offsets, site = broker.consumer_offset_manager, "persist." + broker.consumer_offset_manager.file_name
            broker.offset_persist_service.idle_skip = True
            broker.hold_service.idle_skip = True  # checks that wake no held pull
            broker.offset_persist_service.idle = lambda: (offsets.persist_is_noop()
                                                          and site not in self.faults.armed_crash_sites)
        self.broker = broker
        self._add_broker_services(broker)

    def _create_topics(self, broker: BrokerController) -> None:
        """The scenario's ``[[topic]]`` tables, created before any traffic as an operator does
        (``mqadmin updateTopic -r N -w N``): topics.json holds them, routes and sends follow their queues.
        With ``[broker] retry_queue_nums`` the consumer groups are created too, with that many retry queues."""
        manager = broker.topic_config_manager
        for spec in self.scenario.topics:
            manager.update_topic_config(TopicConfig(spec.name, read_queue_nums=spec.queues,
                                                    write_queue_nums=spec.queues))
        retry_queue_nums = self.scenario.broker.retry_queue_nums
        if retry_queue_nums is not None:  # else the groups are auto-created (retryQueueNums 1) when allowed
            groups = broker.subscription_group_manager
            for group in sorted({c.group for c in self.scenario.consumers}):  # mqadmin updateSubGroup -q N
                groups.update_subscription_group_config(SubscriptionGroupConfig(group, retry_queue_nums=retry_queue_nums))

    def _add_broker_services(self, broker: BrokerController) -> None:
        """The broker's services under finer owners, so that a touch re-arms only what it can affect:
        ``broker.reput`` (poked by puts), ``broker.level.N`` (poked by dispatch into level N's queue),
        ``broker.flush`` (writes), ``broker.persist`` (committed offsets, armed crashes), ``broker.timer`` (timer-topic
        arrivals),
        and ``broker`` for the rest (poked by client requests). Ranks keep the broker's service order."""
        ranked = {id(svc): RANK_BROKER + i for i, svc in enumerate(broker.all_services)}
        reput = broker.message_store.services[0]
        sched = broker.schedule_message_service
        grouped: dict[str, list] = {"broker.reput": [reput]}
        for level, task in sched.tasks.items():
            grouped[f"broker.level.{level}"] = [task] + ([sched.put_result_tasks[level]]
                                                        if level in sched.put_result_tasks else [])
        # Periodic services whose wake-up only their own steps move, and the timer's, which only its own
        # steps, timer-topic arrivals and clock steps move: a client request need not re-arm them.
        store_services = broker.message_store.services
        grouped["broker.flush"] = [svc for svc in store_services[1:]]
        grouped["broker.persist"] = [svc for svc in (sched.persist_service, broker.offset_persist_service)
                                     if svc is not None]
        if broker.timer_message_store is not None:
            grouped["broker.timer"] = list(broker.timer_message_store.services)
        placed = {id(svc) for services in grouped.values() for svc in services}
        grouped["broker"] = [svc for svc in broker.all_services if id(svc) not in placed]
        self.broker_owners = sorted(grouped)
        for owner, services in grouped.items():
            self.scheduler.add_ranked(owner, [(svc, ranked[id(svc)]) for svc in services])

    def touch_broker(self) -> None:
        for owner in self.broker_owners:
            self.scheduler.touch(owner)

    def _on_new_message(self) -> None:
        self.scheduler.touch("broker.reput")
        self.scheduler.touch("broker.flush")

    def on_client_request(self, writes: bool = True) -> None:
        """A request reached the broker: what it may change (a put, a held pull) is re-armed; ``writes=False``:
        one that cannot write the store's files (a pull, an offset update) leaves the flush services alone. Not
        when ties are shuffled: there every re-arm may draw a tie priority, so fewer re-arms would change the
        draws and with them the shuffled histories of existing seeds."""
        self.scheduler.touch("broker")
        if writes or self.shuffle_ties:
            self.scheduler.touch("broker.flush")
        self.scheduler.touch("broker.persist")  # a committed offset

    def _on_arriving(self, topic: str, queue_id: int, _next_offset: int) -> None:
        self.scheduler.touch("broker.flush")  # a consume-queue unit and the checkpoint's logics timestamp
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            self.scheduler.touch(f"broker.level.{queue_id + 1}")
        elif topic == TIMER_TOPIC:
            self.scheduler.touch("broker.timer")
        else:
            self.scheduler.touch("broker")

    def _on_store(self, msg, result) -> None:
        a = result.append
        timer_out = msg.properties.get(PROPERTY_TIMER_OUT_MS) if a.topic == TIMER_TOPIC else None
        extra = {} if timer_out is None else {"timer_out_ms": int(timer_out)}  # its wheel slot
        if a.topic == RMQ_SYS_SCHEDULE_TOPIC:
            level = int(msg.properties.get(PROPERTY_DELAY_TIME_LEVEL, "0"))
            due = a.store_timestamp + self.broker.schedule_message_service.delay_level_table_ms.get(level, 1000)
            extra["due_ms"] = due  # what pending and vacuity are judged by (model/stats.py)
        self.record("store", msg_id=msg.uniq_key, topic=a.topic, queue_id=a.queue_id, queue_offset=a.logics_offset,
                    phy_offset=a.wrote_offset, size=a.wrote_bytes, reconsume_times=msg.reconsume_times,
                    broker_ms=a.store_timestamp, **extra)
        if a.topic == RMQ_SYS_SCHEDULE_TOPIC:
            self.due_of[msg.uniq_key] = extra["due_ms"]
        elif timer_out is not None:
            self.due_of[msg.uniq_key] = int(timer_out)
        elif a.topic.startswith(DLQ_PREFIX):
            self.record("dlq", group=a.topic[len(DLQ_PREFIX):], msg_id=msg.uniq_key,
                        reconsume_times=msg.reconsume_times)

    def _on_unindexed(self, req, unit) -> None:
        self.record("cq_unindexed", msg_id=req.uniq_key, topic=req.topic, queue_id=req.queue_id,
                    queue_offset=req.consume_queue_offset, phy_offset=req.commit_log_offset,
                    unit_phy_offset=None if unit is None else unit[0])

    def _on_torn_timer_unit(self, slot_ms: int, timer_log_pos: int) -> None:
        self.record("timer_torn_unit", slot_ms=slot_ms, timer_log_pos=timer_log_pos)

    def _on_deliver(self, inner, level, due_ms: int, result, schedule_queue_offset: int = -1,
                    slot_ms: int | None = None, resend: bool = False) -> None:
        if not result.is_ok:
            return
        extra = {} if slot_ms is None else {"slot_ms": slot_ms}  # timer: the slot whose chain led to it
        if resend:  # HandlePutResultTask's resend of a failed asynchronous put: later messages may be ahead of it
            extra["resend"] = True
        self.record("deliver", msg_id=inner.uniq_key, level=level, due_ms=due_ms, topic=inner.topic,
                    queue_id=inner.queue_id, broker_ms=result.append.store_timestamp,
                    schedule_queue_offset=schedule_queue_offset, **extra)

    def _on_persist(self, file_name: str) -> None:
        self.record("persist", file=file_name)

    def _on_ids_changed(self, group: str) -> None:
        for owner, (consumer, _executor) in self.consumers.items():
            if consumer.consumer_group == group:
                consumer.rebalance_immediately()
                self.scheduler.touch(owner)
                self.scheduler.touch(owner + TIMED_SUFFIX)

    def _timer_seen(self, clock_step: bool = False) -> None:
        """Something outside the timer is about to look at it (its files, its read time) or move the wall clock
        its dormant polls are computed from: account the polls it slept through first (store/timer/dormancy.py).
        An observer ranked after the broker's services (network, clients) comes after the timer's turn."""
        timer = self.broker.timer_message_store if self.broker is not None else None
        if timer is not None and timer.dormancy:
            rank = self.scheduler._rank
            turn = ALL_TURNS if rank is not None and rank >= RANK_NETWORK else 0
            if clock_step:
                timer.before_clock_step(self.now_mono(), turn)
            else:
                timer.fast_forward(self.now_mono(), turn)

    def broker_crashed(self, crash: BrokerCrash) -> None:
        self.crash_broker("process", site=crash.site)

    def crash_broker(self, kind: str, site: str = "") -> None:
        broker = self.broker
        if broker is None:
            return
        self._timer_seen()
        # After a power failure the copies past the flushed end of the commit log may be lost or torn.
        extra = {"commit_log_durable": broker.message_store.commit_log.get_flushed_where()} if kind == "power" else {}
        self.record("crash", target="broker", crash_kind=kind, site=site, **extra)
        self.down_site = {"process": "process_crash", "power": "power_failure"}.get(kind) if site == "plan" else site
        if kind == "power":
            self.damage_site = "power_failure"
        self.broker = None
        self.broker_generation += 1
        self._remove_broker_services()
        for held in broker.pull_processor.drop_held():
            held.callback(RemotingError("connection closed: the broker died", fault_site=self.down_site))
        if kind == "power":
            lost = self.disk.power_failure(self.rngs.stream(f"power/{self.broker_generation}"))
            self.record("fault", site="power", action="unflushed bytes lost", detail=str(lost))
        self.broker_down_since = self.now_mono()
        self.restart_at(self.now_mono() + self.scenario.faults.restart_after_ms)

    def stop_broker(self) -> None:
        """A graceful shutdown (persist everything, delete the abort file), then a restart."""
        broker = self.broker
        if broker is None:
            return
        self._timer_seen()
        timer = broker.timer_message_store
        # The read time the shutdown checkpoints: a slot not finished by then is read again after the restart.
        extra = {"timer_read_ms": timer.commit_read_time_ms} if timer is not None and timer.running else {}
        self.record("crash", target="broker", crash_kind="shutdown", site="plan", **extra)
        held = broker.pull_processor.drop_held()
        self.down_site = "graceful_restart"
        try:
            broker.shutdown()
        except BrokerCrash as crash:
            self.record("fault", site=crash.site, action="crash during shutdown")
        self.broker = None
        self.broker_generation += 1
        self._remove_broker_services()
        for request in held:
            request.callback(RemotingError("connection closed: the broker shut down", fault_site=self.down_site))
        self.broker_down_since = self.now_mono()
        self.restart_at(self.now_mono() + self.scenario.faults.restart_after_ms)

    def _remove_broker_services(self) -> None:
        for owner in self.broker_owners:
            self.scheduler.remove_owner(owner)
        self.broker_owners = []

    def restart_at(self, at_ms: int) -> None:
        self.network_service.deliver_at(at_ms, self.restart_broker)
        self.scheduler.touch("network")

    def restart_broker(self) -> None:
        if self.broker is not None:
            return
        # The dead broker is garbage in reference cycles (services, listeners) holding its copies of the store's
        # big files (timer wheel, mapped buffers); collect it before the next one allocates its own, so that
        # memory stays bounded however many crashes a run injects. Deterministic: no finalizer records events.
        gc.collect()
        try:
            self.start_broker()
        except BrokerStartError as error:
            self.restart_error = str(error)
            self.record("restart", target="broker", ok=False, error=str(error))
            return
        store = self.broker.message_store
        self.record("restart", target="broker", ok=True, last_exit_ok=store.last_exit_ok,
                    commit_log_end=store.commit_log.get_max_offset())
        self.broker_down_since = None

    # --- faults ----------------------------------------------------------------------------------
    def apply_fault(self, kind: str, arg) -> None:
        if kind == "process_crash":
            self.crash_broker("process", site="plan")
        elif kind == "power_failure":
            self.crash_broker("power", site="plan")
        elif kind == "graceful_restart":
            self.stop_broker()
        elif kind == "arm":
            self.faults.armed_crash_sites.append(arg)
            self.record("fault", site=arg, action="armed")
            self.scheduler.touch("broker.persist")
        elif kind == "consumer_crash":
            self._crash_consumer(arg)
        elif kind == "snapshot":
            self._take_snapshot(arg)
        elif kind == "store_rollback":
            self._rollback_store(arg)
        elif kind == "cq_truncation":
            self._truncate_consume_queue(arg)
        elif kind == "clock_step":
            self._timer_seen(clock_step=True)
            self.clock.step(arg)
            self.record("fault", site="clock", action="step", by_ms=arg, broker_ms=self.clock.now_ms())
            self.touch_broker()

    def _crash_consumer(self, pick: float) -> None:
        owners = [o for o in sorted(self.consumers) if self.consumers[o][0].services]
        if not owners:
            return
        owner = owners[int(pick * len(owners))]
        consumer, executor = self.consumers[owner]
        self.record("crash", target=owner, crash_kind="process")
        consumer.crash()
        executor.clear()
        self.scheduler.remove_owner(owner)
        self.scheduler.remove_owner(owner + TIMED_SUFFIX)
        if self.broker is not None:
            try:
                SimNetwork(self, owner).unregister_client(consumer.client_id, consumer.consumer_group)
            except RemotingError:
                pass
        self.network_service.deliver_at(self.now_mono() + self.scenario.faults.restart_after_ms,
                                        lambda: self._start_consumer(owner, restart=True))
        self.scheduler.touch("network")

    def _take_snapshot(self, key: int) -> None:
        """A store copy for rollback ``key``; copies taken at the same moment with nothing recorded in between
        share one (a hundred rollbacks whose copies all date from the start hold one copy, not a hundred)."""
        at, seq = self.now_mono(), len(self.history.events)
        previous = next((s for s in self.snapshots.values() if s[0] == at and s[1] == seq), None)
        copy = previous[2] if previous is not None else self.disk.snapshot(skip_prefix="config/")
        self.snapshots[key] = (at, seq, copy)

    def _rollback_store(self, key: int) -> None:
        """The broker restarts on a copy of its store taken ``rollback_age`` earlier, with today's config
        files (a store copied or rebuilt, #1869): everything stored since the copy is lost to the fault."""
        taken_at, seq, snapshot = self.snapshots.pop(key)
        if self.broker is None or not isinstance(self.disk, MemoryDisk):
            return
        lost = sorted({e["msg_id"] for e in self.history.events[seq:] if e["kind"] == "store"})
        self.crash_broker("process", site="store_rollback")
        self.disk.restore(snapshot, skip_prefix="config/")
        self.damage_site = "store_rollback"
        self.record("store_rollback", snapshot_t_ms=taken_at, lost_msg_ids=lost)

    def _truncate_consume_queue(self, pick: float) -> None:
        """Cut the last units of one consume queue on disk (as a lost or damaged tail would), then
        crash the broker so that it recovers through its own path. The cut messages are recorded:
        whatever recovery does not rebuild is lost to the fault, not to the broker."""
        broker = self.broker
        if broker is None:
            return
        wanted = self.scenario.faults.cq_truncation_topic
        queues = [cq for cq in broker.message_store._all_consume_queues()
                  if cq.get_max_offset_in_queue() > cq.get_min_offset_in_queue() and wanted in (None, cq.topic)]
        if not queues:
            return
        cq = queues[int(pick * len(queues))]
        from_offset = cq.get_max_offset_in_queue()
        units = from_offset - cq.get_min_offset_in_queue()
        to_offset = from_offset - 1 - int(pick * 997) % min(units, 10)
        cut = []
        for index in range(to_offset, from_offset):
            phy, size, _tags = cq.get_unit(index)
            msg = broker.message_store.look_message_by_offset(phy, size)
            cut.append(msg.uniq_key if msg is not None else None)
        self.crash_broker("process", site="cq_truncation")
        self.damage_site = "cq_truncation"
        for index in range(to_offset, from_offset):  # zero the tail units on disk
            pos = index * CQ_STORE_UNIT_SIZE
            mf = cq.mfq.find_mapped_file_by_offset(pos)
            if mf is not None:
                mf.handle.write(pos % cq.mapped_file_size, bytes(CQ_STORE_UNIT_SIZE))
        self.record("cq_truncate", topic=cq.topic, queue_id=cq.queue_id, from_offset=from_offset, to_offset=to_offset,
                    cut_msg_ids=cut)

    # --- clients ---------------------------------------------------------------------------------
    def _start_producers(self) -> None:
        for i, spec in enumerate(self.scenario.producers):
            owner = f"producer-{i}"
            client = DefaultMQProducer(SimNetwork(self, owner), self.clock, producer_group=f"PG{i}",
                                       client_id=f"producer-{i}@sim", rng=self.rngs.stream(owner),
                                       log=self.log_to(f"RocketmqClient@{owner}"))
            actor = ProducerActor(self, i, spec, client, self.rngs.stream(owner + "/levels"))
            self.scheduler.add_owner(owner, [actor], RANK_PRODUCERS + 10 * i)

    def _start_consumers(self) -> None:
        rank = RANK_CONSUMERS
        for spec in self.scenario.consumers:
            for i in range(spec.instances):
                owner = f"{spec.group}-{i}"
                self.consumer_specs[owner] = (spec, rank)
                rank += 20
                self._start_consumer(owner)

    def _start_consumer(self, owner: str, restart: bool = False) -> None:
        spec, rank = self.consumer_specs[owner]
        consumer = DefaultMQPushConsumer(
            SimNetwork(self, owner), self.clock, consumer_group=spec.group, client_id=f"{owner}@sim",
            message_model=spec.model, max_reconsume_times=spec.max_reconsume_times,
            consume_from_where=spec.consume_from_where, offset_store_disk=self.client_disk,
            rng=self.rngs.stream(f"{owner}/client/{self.now_mono()}"), era=self.store_config.era, mutants=self.mutants,
            events=lambda kind, fields, o=owner: self._client_event(o, kind, fields),
            log=self.log_to(f"RocketmqClient@{owner}"),
        )
        consumer.attach_probes(self.probes)
        consumer.subscribe(spec.topic, spec.subscription)
        executor = ConsumeExecutor(self, owner, consumer, spec, self.rngs.stream(f"{owner}/listener"))
        self.consumers[owner] = (consumer, executor)
        if restart:
            self.record("restart", target=owner)
        try:
            consumer.start(self.now_mono())
        except MQClientException as error:
            self.record("restart", target=owner, ok=False, error=str(error))
            return
        self.record("consumer_start", group=spec.group, client_id=consumer.client_id, topic=spec.topic,
                    subscription=spec.subscription, model=spec.model,
                    max_reconsume_times=consumer.get_max_reconsume_times())
        # The client's timed services (rebalance, offset persist, expiry, heartbeat) under their own owner: a pull
        # answer or a consume result does not move their wake-ups, while their steps may feed the pull service.
        ranked = [(svc, rank + i) for i, svc in enumerate([*consumer.services, executor])]
        timed = [(svc, r) for svc, r in ranked if isinstance(svc, (PeriodicService, RebalanceService))]
        self.scheduler.add_ranked(owner + TIMED_SUFFIX, timed)
        self.scheduler.links[owner + TIMED_SUFFIX] = owner
        self.scheduler.add_ranked(owner, [(svc, r) for svc, r in ranked if (svc, r) not in timed])

    def _client_event(self, owner: str, kind: str, fields: dict) -> None:
        self.record(kind, **fields)

    # --- running ---------------------------------------------------------------------------------
    def run(self, progress=None) -> None:
        self.start_broker()
        if self.preload is not None:  # the recovered store's messages join the checked population
            self.preload.record_population(self)
        self.scheduler.add_owner("network", [self.network_service], RANK_NETWORK)
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
        self._start_consumers()
        self._start_producers()
        self.env.process(self._phases())
        if progress is None:
            self.env.run(until=self.end_mono_ms)
        else:
            step = max(1, self.end_mono_ms // 100)
            for t in range(step, self.end_mono_ms + step, step):
                self.env.run(until=min(t, self.end_mono_ms))
                progress(min(t, self.end_mono_ms), self.end_mono_ms)

    def _phases(self):
        yield self.env.timeout(self.traffic_end_mono_ms)
        self.faults.active = False
        self.record("drain")

    def finish(self) -> None:
        """Stop the world: a graceful broker shutdown, so the store directory is complete."""
        for consumer, _ in self.consumers.values():
            consumer.crash()
        if self.broker is not None:
            self._timer_seen()
            try:
                self.broker.shutdown()
            except BrokerCrash:
                pass
