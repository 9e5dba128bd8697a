"""Skipping consumers' periodic rounds that change nothing: the 30 s heartbeat of a client the broker has
registered, the 20 s rebalance that would keep the allocation, and the 5 s offset persist while it only
re-sends what the broker holds.

A heartbeat registers the client, its topics and (for a known group) its retry topic; once all of them are in
the broker's tables nothing takes them out but the broker's death or the client's own, so a round changes
nothing while the broker that registered it is up. A crash or stop of the broker re-asks every consumer: its
rounds then fail (and log) for real. A rebalance keeps everything while the routes, the group's members and the
held queues stay and no held queue's last pull grows older than pullMaxIdleTime; a member change wakes it
anyway, a topic change or a clock step re-asks it.

``persistAll`` sends every owned queue's offset one-way every 5 s, for the whole run. When each offset it
would send is the one the broker's table already holds, a round changes no table, writes no file and logs
nothing; what it does move is 5.x's ``versionChangeCounter`` (one per commit; every 500th moves the
dataVersion that consumerOffset.json carries). So a skipped round is owed ``n`` counter steps, and:

- the owed steps are paid (``settle``) before any real commit reads the counter, and before the broker
  or the consumer goes away;
- skipping stops short of the round whose commits would reach the next version step: that round runs for
  real, so the dataVersion moves at the time it would have (``idle_until``);
- whatever can change what a round sends (the client's offset table, the broker's table, a restart) settles
  and re-asks every skipping consumer.

A round is never skipped while the consumer's connection reaches no broker or a dead one (after a restart): its
request would open a new connection, and (5.x) the channel-active heartbeat and rebalance follow it.

Off when polling is faithful (the equivalence proof's reference) and when ties are shuffled (fewer re-arms
would change the tie draws).
"""

from __future__ import annotations

from store.client.offset_store import RemoteBrokerOffsetStore
from store.client.process_queue import PULL_MAX_IDLE_TIME_MS
from store.client.push_consumer import RUNNING
from store.client.rebalance import CLUSTERING
from store.service import IDLE_FOREVER


class _Entry:
    __slots__ = ("owner", "consumer", "service", "rank", "commits_per_round", "skipping", "rebalance_idle", "held")

    def __init__(self, owner: str, consumer, service, rank: int) -> None:
        self.owner = owner  # the consumer's timed owner
        self.consumer = consumer
        self.service = service  # its offset persist
        self.rank = rank
        self.commits_per_round = 0  # what each skipped round owes the counter (fixed while it skips)
        self.skipping = False
        self.rebalance_idle = False  # its rebalance rounds are skipped (a process queue removed re-asks it)
        self.held = 0  # the process queues it held then


_ALLOCATIONS_KEPT = 256


class ClientSkips:
    def __init__(self, world) -> None:
        self.world = world
        self.entries: dict[str, _Entry] = {}
        # Allocations asked by the rebalance bound, by their inputs: the strategy is a pure function of them, and
        # the bound is asked again after most steps while the group and its routes stay as they are.
        self._allocations: dict[tuple, frozenset | None] = {}

    # --- wiring ------------------------------------------------------------------------------------------
    def add(self, owner: str, consumer, rank: int) -> None:
        """``owner``: the consumer's timed owner; ``rank``: its offset persist's rank."""
        heartbeat = consumer.heartbeat_service
        heartbeat.idle_skip = True
        heartbeat.idle = lambda: self._registered(consumer)
        service = consumer.offset_persist_service
        entry = _Entry(owner, consumer, service, rank)
        self.entries[owner] = entry
        consumer.rebalance_service.skip_idle_rounds(lambda: self.rebalance_idle_until(entry))
        service.idle_skip = True
        service.idle_until = lambda: self._idle_until(entry)
        service.on_skipped = lambda rounds: self._owe(entry, rounds)
        consumer.offset_store.changed = self.changed

    def remove(self, owner: str) -> None:
        """A consumer stops (kill -9): what its skipped rounds sent before reached the broker."""
        self.settle()
        self.entries.pop(owner, None)

    def attach_broker(self, broker) -> None:
        broker.consumer_offset_manager.before_commit = self.changed
        broker.topic_config_manager.changed_listeners.append(self.touch_all)  # routes: rebalances re-asked

    def touch_all(self) -> None:
        for owner in self.entries:
            self.world.scheduler.touch(owner)

    def broker_leaving(self) -> None:
        """The broker goes down: the skipped rounds' commits reached it; from now on each round fails (and logs)."""
        self.settle()
        self.touch_all()

    def _connected(self, consumer, broker) -> bool:
        """The consumer's connection reaches ``broker``: its next request opens none (no channel-active event)."""
        return getattr(consumer.api, "channel_to", broker) is broker

    # --- heartbeats -------------------------------------------------------------------------------------------
    def _registered(self, consumer) -> bool:
        """A heartbeat would change nothing: the broker is up and holds the client, its topics and its group's
        retry topic (never the auto-creating lookup: asking must not create the group)."""
        broker = self.world.brokers.broker
        if broker is None or consumer.service_state != RUNNING:
            return False
        group = consumer.consumer_group
        info = broker.consumer_manager.groups.get(group)
        return (info is not None and consumer.client_id in info.client_ids
                and info.topics.issuperset(consumer.rebalance_impl.subscription_inner)
                and broker.subscription_group_manager.contains_subscription_group(group)
                and broker.topic_config_manager.contains_topic(consumer.retry_topic))

    # --- paying and re-asking ------------------------------------------------------------------------------
    def changed(self) -> None:
        """Something a round's sends depend on changes now: pay what the skipped rounds owe, then re-ask."""
        entries = self.entries.values()
        if any(entry.skipping for entry in entries):
            self.settle()
        touch = self.world.scheduler.touch
        for entry in entries:
            # an idle rebalance cares about a removed process queue, not about offsets
            if entry.skipping or (entry.rebalance_idle
                                  and len(entry.consumer.rebalance_impl.process_queue_table) != entry.held):
                touch(entry.owner)

    def settle(self) -> None:
        """Move each skipping persist over its rounds up to now (those whose turn at now came too)."""
        now = self.world.now_mono()
        turn_passed = self.world.scheduler.turn_passed
        for entry in self.entries.values():
            if entry.skipping:
                entry.service.catch_up(now, turn_passed(entry.rank))

    def _owe(self, entry: _Entry, rounds: int) -> None:
        broker = self.world.brokers.broker
        if broker is not None and entry.commits_per_round:
            broker.consumer_offset_manager.account_skipped_commits(rounds * entry.commits_per_round)

    # --- rebalances ------------------------------------------------------------------------------------------
    def rebalance_idle_until(self, entry: _Entry) -> int | None:
        """A rebalance round changes nothing while the broker is up and gives every subscribed topic the route the
        client knows and an allocation equal to the queues it holds, and until a held queue's last pull is older
        than pullMaxIdleTime (120 s of the wall clock: a clock step re-asks). None: the next round may act."""
        entry.rebalance_idle = False
        consumer = entry.consumer
        broker = self.world.brokers.broker
        impl = consumer.rebalance_impl
        if (broker is None or consumer.service_state != RUNNING or impl.message_model != CLUSTERING
                or not self._connected(consumer, broker)):
            return None
        ids = broker.consumer_manager.get_consumer_id_list(consumer.consumer_group)
        if not ids:
            return None
        held = impl.process_queue_table
        for topic in impl.subscription_inner:
            config = broker.topic_config_manager.select_topic_config(topic)
            known = impl.topic_subscribe_info_table.get(topic)
            if config is None or known is None or len(known) != config.read_queue_nums:
                return None
            allocated = self._allocated(impl.allocate, consumer.consumer_group, consumer.client_id, known, ids)
            if allocated is None or allocated != {mq for mq in held if mq.topic == topic}:
                return None
        if any(mq.topic not in impl.subscription_inner for mq in held):
            return None
        entry.rebalance_idle, entry.held = True, len(held)
        if not held:
            return IDLE_FOREVER
        stalled_wall_ms = min(pq.last_pull_timestamp_ms for pq in held.values()) + PULL_MAX_IDLE_TIME_MS + 1
        clock = self.world.clock
        return self.world.now_mono() + max(0, stalled_wall_ms - clock.now_ms())

    def _allocated(self, allocate, group: str, client_id: str, known, ids) -> frozenset | None:
        """``allocate(group, client_id, known, ids)`` as a set (None when it raises), remembered by its inputs (the
        strategy sorts both lists: their order does not matter)."""
        key = (allocate, group, client_id, frozenset(known), tuple(sorted(ids)))
        if key in self._allocations:
            return self._allocations[key]
        try:
            allocated = frozenset(allocate(group, client_id, known, ids))
        except ValueError:
            allocated = None
        if len(self._allocations) >= _ALLOCATIONS_KEPT:
            self._allocations.clear()
        self._allocations[key] = allocated
        return allocated

    # --- the bound ----------------------------------------------------------------------------------------------
    def _commits_per_round(self, entry: _Entry) -> int | None:
        """The commits a round would send, each re-putting the broker's own value; None: a round does more."""
        consumer = entry.consumer
        store = consumer.offset_store
        broker = self.world.brokers.broker
        if broker is None or consumer.service_state != RUNNING or not isinstance(store, RemoteBrokerOffsetStore):
            return None
        owned = consumer.rebalance_impl.process_queue_table
        if not owned:
            return 0  # persistAll returns at once
        if not self._connected(consumer, broker):
            return None  # its first send opens the connection
        group = consumer.consumer_group
        manager = broker.consumer_offset_manager
        era4 = broker.store_config.is_era_4
        for mq, offset in store.offset_table.items():
            if mq not in owned:
                return None  # the round forgets it (and logs)
            if not era4 and not (broker.subscription_group_manager.contains_subscription_group(group)
                                 and broker.topic_config_manager.contains_topic(mq.topic)):
                return None  # refused without a commit: keep it simple, run the round
            if manager.query_offset(group, mq.topic, mq.queue_id) != offset:
                return None
        return len(store.offset_table)

    def _idle_until(self, entry: _Entry) -> int | None:
        """Rounds before the returned time are no-ops: up to the round whose commits, with every other skipping
        consumer's, would reach the next version step."""
        self.settle()  # every skipping consumer's next round within one interval of now, its debts paid
        n = self._commits_per_round(entry)
        entry.skipping = n is not None
        if n is None:
            return None
        entry.commits_per_round = n
        need = self.world.brokers.broker.consumer_offset_manager.commits_to_next_version()
        rounds = sorted((e.service._next_ms, e.rank, e.commits_per_round)
                        for e in self.entries.values() if e.skipping and e.commits_per_round)
        if need is None or not rounds:
            return IDLE_FOREVER
        # Every consumer persists every 5 s and each next round is within one interval of now, so the skipping
        # consumers' rounds repeat in this order: whole cycles first, then the rest of one.
        interval_ms = entry.service.interval_ms
        cycles, left = divmod(need - 1, sum(commits for _, _, commits in rounds))
        for at, _, commits in rounds:
            if left < commits:
                return at + cycles * interval_ms
            left -= commits
        raise AssertionError("unreachable: left < the commits of one cycle")
