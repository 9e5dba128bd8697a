"""The clients' lifecycle in a run: producers, consumer instances (start, kill -9, restart) and the
scheduling owners they run under."""

from __future__ import annotations

from store.client.api import RemotingError
from store.client.errors import MQClientException
from store.client.producer import DefaultMQProducer
from store.client.push_consumer import DefaultMQPushConsumer
from store.client.rebalance_service import RebalanceService
from store.service import PeriodicService

from .network import SimNetwork
from .workload import ConsumeExecutor, ProducerActor

RANK_PRODUCERS, RANK_CONSUMERS = 2000, 3000
TIMED_SUFFIX = "/timed"  # a consumer's timed services (their own scheduling owner)


class Clients:
    """Every client of the world; ``consumers`` maps an owner (``GROUP-i``) to its consumer and executor."""

    def __init__(self, world) -> None:
        self.world = world
        self.consumers: dict[str, tuple[DefaultMQPushConsumer, ConsumeExecutor]] = {}
        self.consumer_specs: dict[str, tuple] = {}
        self.attempts: dict[tuple[str, str], int] = {}  # (group, msg_id) -> consume attempts

    def start_producers(self) -> None:
        world = self.world
        for i, spec in enumerate(world.scenario.producers):
            owner = f"producer-{i}"
            client = DefaultMQProducer(SimNetwork(world, owner), world.clock, producer_group=f"PG{i}",
                                       client_id=f"producer-{i}@sim", rng=world.rngs.stream(owner),
                                       log=world.log_to(f"RocketmqClient@{owner}"))
            actor = ProducerActor(world, i, spec, client, world.rngs.stream(owner + "/levels"))
            world.scheduler.add_owner(owner, [actor], RANK_PRODUCERS + 10 * i, blind=True)

    def start_consumers(self) -> None:
        rank = RANK_CONSUMERS
        for spec in self.world.scenario.consumers:
            for i in range(spec.instances):
                owner = f"{spec.group}-{i}"
                self.consumer_specs[owner] = (spec, rank)
                rank += 20
                self.start_consumer(owner)

    def start_consumer(self, owner: str, restart: bool = False) -> None:
        world = self.world
        recorder = world.recorder
        spec, rank = self.consumer_specs[owner]
        network = SimNetwork(world, owner)
        consumer = DefaultMQPushConsumer(
            network, world.clock, consumer_group=spec.group, client_id=f"{owner}@sim",
            message_model=spec.model, max_reconsume_times=spec.max_reconsume_times,
            consume_from_where=spec.consume_from_where, offset_store_disk=world.client_disk,
            rng=world.rngs.stream(f"{owner}/client/{world.now_mono()}"), era=world.store_config.era,
            mutants=world.mutants, events=lambda kind, fields, o=owner: recorder.on_client_event(o, kind, fields),
            log=world.log_to(f"RocketmqClient@{owner}"),
        )
        network.on_channel_active = consumer.on_channel_active
        consumer.attach_probes(world.probes)
        consumer.subscribe(spec.topic, spec.subscription)
        executor = ConsumeExecutor(world, owner, consumer, spec, world.rngs.stream(f"{owner}/listener"))
        self.consumers[owner] = (consumer, executor)
        if restart:
            recorder.record("restart", target=owner)
        try:
            consumer.start(world.now_mono())
        except MQClientException as error:
            recorder.record("restart", target=owner, ok=False, error=str(error))
            return
        recorder.record("consumer_start", group=spec.group, client_id=consumer.client_id, topic=spec.topic,
                        subscription=spec.subscription, model=spec.model,
                        max_reconsume_times=consumer.get_max_reconsume_times())
        # The client's timed services (rebalance, offset persist, expiry, heartbeat) under their own owner: a pull
        # answer or a consume result does not move their wake-ups, while their steps may feed the pull service;
        # only a rebalance woken at once (rebalanceImmediately) moves, and says so.
        consumer.rebalance_service.on_wakeup = lambda: world.scheduler.touch(owner + TIMED_SUFFIX)
        ranked = [(svc, rank + i) for i, svc in enumerate([*consumer.services, executor])]
        timed = [(svc, r) for svc, r in ranked if isinstance(svc, (PeriodicService, RebalanceService))]
        if world.client_skips is not None:  # before the scheduler looks at the services
            world.client_skips.add(owner + TIMED_SUFFIX, consumer, dict(timed)[consumer.offset_persist_service])
        # Clients see the broker only through requests, which touch no delay level (blind to deferred rounds).
        world.scheduler.add_ranked(owner + TIMED_SUFFIX, timed, blind=True)
        world.scheduler.links[owner + TIMED_SUFFIX] = owner
        world.scheduler.add_ranked(owner, [(svc, r) for svc, r in ranked if (svc, r) not in timed], blind=True)

    def crash_consumer(self, pick: float) -> None:
        """kill -9 of one running consumer instance (``pick`` in [0, 1) chooses it); it restarts later."""
        owners = [o for o in sorted(self.consumers) if self.consumers[o][0].services]
        if not owners:
            return
        world = self.world
        owner = owners[int(pick * len(owners))]
        consumer, executor = self.consumers[owner]
        world.recorder.record("crash", target=owner, crash_kind="process")
        if world.client_skips is not None:
            world.client_skips.remove(owner + TIMED_SUFFIX)  # what its skipped rounds sent reached the broker
        consumer.crash()
        executor.clear()
        world.scheduler.remove_owner(owner)
        world.scheduler.remove_owner(owner + TIMED_SUFFIX)
        if world.brokers.broker is not None:
            try:
                SimNetwork(world, owner).unregister_client(consumer.client_id, consumer.consumer_group)
            except RemotingError:
                pass
        world.network_service.deliver_at(world.now_mono() + world.scenario.faults.restart_after_ms,
                                         lambda: self.start_consumer(owner, restart=True))
        world.scheduler.touch("network")

    def on_ids_changed(self, group: str) -> None:
        """The broker's consumer list of ``group`` changed: its instances rebalance at once."""
        for owner, (consumer, _executor) in self.consumers.items():
            if consumer.consumer_group == group:
                consumer.rebalance_immediately()
                self.world.scheduler.touch(owner)

    def stop_all(self) -> None:
        for consumer, _ in self.consumers.values():
            consumer.crash()
