"""The broker's lifecycle in a run: start on the world's disk, crash (kill -9 or power failure), graceful
stop, restart; and the scheduling owners its services run under."""

from __future__ import annotations

from store.broker.broker_controller import BrokerController, BrokerStartError
from store.client.api import RemotingError
from store.faults import BrokerCrash
from store.subscription_group import SubscriptionGroupConfig
from store.timer.dormancy import ALL_TURNS
from store.topic_config import TIMER_TOPIC, TopicConfig
from store.topics import RMQ_SYS_SCHEDULE_TOPIC

RANK_BROKER = 100


class BrokerHost:
    """The one broker of the world (or none while it is down); ``world`` gives disk, clock, scheduler, recorder."""

    def __init__(self, world) -> None:
        self.world = world
        self.broker: BrokerController | None = None
        self.generation = 0
        self.owners: list[str] = []
        self.down_since: int | None = None
        self.restart_error: str | None = None
        self.down_site: str | None = None  # the fault that took the broker down (what a refused call names)

    # --- starting --------------------------------------------------------------------------------------
    def start(self) -> None:
        world = self.world
        recorder = world.recorder
        broker = BrokerController(
            world.disk, world.clock, rng=world.rngs.stream(f"broker/{self.generation}"),
            broker_config=world.broker_config, store_config=world.store_config, faults=world.faults,
            mutants=world.mutants, log=world.log_to("RocketmqBroker"),
        )
        broker.attach_probes(world.probes)
        recorder.attach_recovery(broker)
        timer = broker.timer_message_store
        broker.initialize()
        if not world.faithful_polling:
            broker.schedule_message_service.idle_skip = True
            # not when ties are shuffled: existing seeds keep their histories (turns there follow the draws)
            broker.schedule_message_service.exact_turns = not world.shuffle_ties
            if timer is not None:
                timer.idle_skip = True
                timer.dormancy = not world.shuffle_ties  # dormancy relies on the timer services' fixed order
        recorder.attach(broker)
        if world.client_skips is not None:
            world.client_skips.attach_broker(broker)
        store = broker.message_store
        store.new_message_listener = self._on_new_message
        store.arriving_listeners.append(self._on_arriving)
        broker.consumer_manager.ids_changed_listeners.append(world.clients.on_ids_changed)
        if self.generation == 0:
            self._create_topics(broker)
        # Deliberate (history): `persist` events only for writes that change the file or its .bak, unless the run
        # can lose power (then every rewrite re-opens a torn-write window and is kept). Not delayOffset.json:
        # with idle skipping its dataVersion catches up on skipped polls only at the level's next poll, so
        # whether a persist rewrites the same bytes would depend on skipping.
        for manager in (broker.consumer_offset_manager, broker.topic_config_manager,
                        broker.subscription_group_manager):
            manager.skip_identical_persist = world.scenario.faults.power_failures == 0
        broker.start(world.now_mono())
        if not world.faithful_polling:
            for service in broker.message_store.services[1:]:  # the flush rounds
                service.idle_skip = True
            # fewer armed rounds would change the tie draws, and with them the shuffled histories of existing seeds
            broker.message_store.commit_log.light_rounds_see_timestamp = world.shuffle_ties
            # consumerOffset.json's 5 s persist, while it would rewrite the same bytes and no crash waits at it.
            offsets, site = broker.consumer_offset_manager, "persist." + broker.consumer_offset_manager.file_name
            faults = world.faults
            broker.offset_persist_service.idle_skip = True
            # checks that wake no held pull; not when ties are shuffled (fewer re-arms would change the tie draws)
            broker.hold_service.idle_skip = not world.shuffle_ties
            if world.long_poll_skips is not None:
                world.long_poll_skips.attach_broker(broker)
            broker.offset_persist_service.idle = lambda: (offsets.persist_is_noop()
                                                          and site not in faults.armed_crash_sites)
            # delayOffset.json's 10 s persist is read only by a restart's load: its rounds are run late, just before
            # the next other step (sim/scheduler.py, deferred rounds). Not where a round could be seen at once: a
            # crash armed at it, or a power failure that tears what a round rewrote.
            spec = world.scenario.faults
            persist = broker.schedule_message_service.persist_service
            if persist is not None:
                persist.deferrable = spec.power_failures == 0 and spec.crash_before_delay_offset_flush == 0
        self.broker = broker
        self._add_services(broker)

    def _create_topics(self, broker: BrokerController) -> None:
        """The scenario's ``[[topic]]`` tables, created before any traffic as an operator does
        (``mqadmin updateTopic -r N -w N``): topics.json holds them, routes and sends follow their queues.
        With ``[broker] retry_queue_nums`` the consumer groups are created too, with that many retry queues."""
        scenario = self.world.scenario
        manager = broker.topic_config_manager
        for spec in scenario.topics:
            manager.update_topic_config(TopicConfig(spec.name, read_queue_nums=spec.queues,
                                                    write_queue_nums=spec.queues))
        retry_queue_nums = scenario.broker.retry_queue_nums
        if retry_queue_nums is not None:  # else the groups are auto-created (retryQueueNums 1) when allowed
            groups = broker.subscription_group_manager
            for group in sorted({c.group for c in scenario.consumers}):  # mqadmin updateSubGroup -q N
                groups.update_subscription_group_config(SubscriptionGroupConfig(group, retry_queue_nums=retry_queue_nums))

    # --- scheduling owners -----------------------------------------------------------------------------
    def _add_services(self, broker: BrokerController) -> None:
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
        self.owners = sorted(grouped)
        for owner, services in grouped.items():
            # Only the levels (and their put-result handlers) read or move what delayOffset.json's deferred rounds
            # read: the offset table, the dataVersion and the levels' skipped polls.
            self.world.scheduler.add_ranked(owner, [(svc, ranked[id(svc)]) for svc in services],
                                            blind=not owner.startswith("broker.level."))

    def _remove_services(self) -> None:
        for owner in self.owners:
            self.world.scheduler.remove_owner(owner)
        self.owners = []

    def touch_all(self) -> None:
        for owner in self.owners:
            self.world.scheduler.touch(owner)

    def _on_new_message(self) -> None:
        self.world.scheduler.touch("broker.reput")
        self.world.scheduler.touch("broker.flush")

    def on_client_request(self, writes: bool = True) -> None:
        """A request reached the broker: what it may change (a put, a held pull) is re-armed; ``writes=False``:
        one that cannot write the store's files (a pull, an offset update) leaves the flush services alone. Not
        when ties are shuffled: there every re-arm may draw a tie priority, so fewer re-arms would change the
        draws and with them the shuffled histories of existing seeds."""
        scheduler = self.world.scheduler
        scheduler.touch("broker")
        if writes or self.world.shuffle_ties:
            scheduler.touch("broker.flush")
        scheduler.touch("broker.persist")  # a committed offset

    def _on_arriving(self, topic: str, queue_id: int, _next_offset: int) -> None:
        scheduler = self.world.scheduler
        scheduler.touch("broker.flush")  # a consume-queue unit and the checkpoint's logics timestamp
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            scheduler.touch(f"broker.level.{queue_id + 1}")
        elif topic == TIMER_TOPIC:
            scheduler.touch("broker.timer")
        else:
            scheduler.touch("broker")

    # --- going down and coming back --------------------------------------------------------------------
    def timer_seen(self, clock_step: bool = False) -> None:
        """Something outside the timer is about to look at it (its files, its read time) or move the wall clock
        its dormant polls are computed from: account the polls it slept through first (store/timer/dormancy.py).
        An observer ranked after the broker's services (network, clients) comes after the timer's turn."""
        timer = self.broker.timer_message_store if self.broker is not None else None
        if timer is not None and timer.dormancy:
            from .world import RANK_NETWORK

            rank = self.world.scheduler._rank
            turn = ALL_TURNS if rank is not None and rank >= RANK_NETWORK else 0
            if clock_step:
                timer.before_clock_step(self.world.now_mono(), turn)
            else:
                timer.fast_forward(self.world.now_mono(), turn)

    def crashed(self, crash: BrokerCrash) -> None:
        """An armed crash site fired inside the broker (the scheduler or a client call caught it)."""
        self.crash("process", site=crash.site)

    def crash(self, kind: str, site: str = "") -> None:
        """kill -9 (``process``) or a power failure (``power``) of the broker, then a restart later."""
        broker = self.broker
        if broker is None:
            return
        world = self.world
        self.timer_seen()
        if world.client_skips is not None:
            world.client_skips.broker_leaving()
        # After a power failure the copies past the durable end of the commit log may be lost or torn.
        extra = {"commit_log_durable": self._commit_log_on_platter(broker)} if kind == "power" else {}
        world.recorder.record("crash", target="broker", crash_kind=kind, site=site, **extra)
        self.down_site = {"process": "process_crash", "power": "power_failure"}.get(kind) if site == "plan" else site
        if kind == "power":
            world.faults.damage_site = "power_failure"
        self.broker = None
        self.generation += 1
        self._remove_services()
        _let_go(broker)
        for held in broker.pull_processor.drop_held():
            held.callback(RemotingError("connection closed: the broker died", fault_site=self.down_site))
        if kind == "power":
            lost = world.disk.power_failure(world.rngs.stream(f"power/{self.generation}"))
            world.recorder.record("fault", site="power", action="unflushed bytes lost", detail=str(lost))
        self.down_since = world.now_mono()
        self.restart_at(world.now_mono() + world.scenario.faults.restart_after_ms)

    def _commit_log_on_platter(self, broker) -> int:
        """Where the commit log stops being durable: its flushed position, or earlier when a recovery after a
        process crash set that position over bytes still only in the page cache (recoverNormally/Abnormally
        call setFlushedWhere(processOffset) without a flush)."""
        commit_log = broker.message_store.commit_log
        durable = commit_log.get_flushed_where()
        for mapped in commit_log.mfq.mapped_files:
            lo = self.world.disk.unflushed_from(mapped.path)
            if lo is not None:
                durable = min(durable, mapped.file_from_offset + lo)
        return durable

    def stop(self) -> None:
        """A graceful shutdown (persist everything, delete the abort file), then a restart."""
        broker = self.broker
        if broker is None:
            return
        world = self.world
        self.timer_seen()
        if world.client_skips is not None:
            world.client_skips.broker_leaving()
        timer = broker.timer_message_store
        # The read time the shutdown checkpoints: a slot not finished by then is read again after the restart.
        extra = {"timer_read_ms": timer.commit_read_time_ms} if timer is not None and timer.running else {}
        world.recorder.record("crash", target="broker", crash_kind="shutdown", site="plan", **extra)
        held = broker.pull_processor.drop_held()
        self.down_site = "graceful_restart"
        try:
            broker.shutdown()
        except BrokerCrash as crash:
            world.recorder.record("fault", site=crash.site, action="crash during shutdown")
        self.broker = None
        self.generation += 1
        self._remove_services()
        _let_go(broker)
        for request in held:
            request.callback(RemotingError("connection closed: the broker shut down", fault_site=self.down_site))
        self.down_since = world.now_mono()
        self.restart_at(world.now_mono() + world.scenario.faults.restart_after_ms)

    def restart_at(self, at_ms: int) -> None:
        self.world.network_service.deliver_at(at_ms, self.restart)
        self.world.scheduler.touch("network")

    def restart(self) -> None:
        if self.broker is not None:
            return
        recorder = self.world.recorder
        try:
            self.start()
        except BrokerStartError as error:
            self.restart_error = str(error)
            recorder.record("restart", target="broker", ok=False, error=str(error))
            return
        store = self.broker.message_store
        recorder.record("restart", target="broker", ok=True, last_exit_ok=store.last_exit_ok,
                        commit_log_end=store.commit_log.get_max_offset())
        self.down_since = None


def _let_go(broker: BrokerController) -> None:
    """A broker that died or shut down: its one large private buffer (the timer wheel's in-memory copy, up to 38
    MiB) goes at once. The rest of it is garbage in reference cycles (services, listeners) that Python's own
    collections free; a full collection at every restart cost 2-12 ms (it walks the whole history), 11-19% of
    dozens-of-process-crashes' CPU."""
    timer = broker.timer_message_store
    if timer is not None and timer.timer_wheel is not None:
        timer.timer_wheel.release()
