"""Repeating a consumer's idle long poll in place: the 15 s cycle of a pull with nothing to read.

A held pull that times out is answered "no new message" (PULL_NOT_FOUND) at a hold check ``T``; the answer
reaches the client at ``T + L`` (the network's latency), which pulls again at once, and the repeat reaches the
broker at ``T + 2L``: it finds nothing, is held from then on and commits the client's offset. Four steps (the
check, two network deliveries, the client's pull service) that change only three things a later reader sees:

- the held pull's suspend time (``T + 2L``) and its place in its queue's list (last, as a new arrival);
- the process queue's last pull time (the wall clock at ``T + L``: the rebalance's stall check);
- one commit of an offset the broker's table already holds, which moves only 5.x's ``versionChangeCounter``
  (every 500th commit moves consumerOffset.json's dataVersion).

So the check does these itself, and the cycle costs one step, when provably nothing else can see the
difference:

- every pull the check answers timed out with nothing to read, would get PULL_NOT_FOUND starting at its own
  offset, and its client (running, the queue not dropped, nothing cached, the offset table at or past that
  offset) would send the very same request again; no queue holds two of them;
- no other service steps before the repeat arrives, nor the run ends (an arrival, a fault, a clock step, a
  crash or another client's request in between could tell the difference), but for those blind to it: a
  consumer's rebalance round that changes nothing whichever last pull time it reads, and its expired-message
  cleaning with nothing cached;
- each commit re-puts the broker's own value, and all of them, with the commits that skipped offset persists
  owe until the repeat arrives (sim/client_skips.py), stay short of the next dataVersion step: the skipped
  persists' debts are paid first and the repeats' commits join the same counter, so the step falls when and
  where it would have.

Off when polling is faithful and when ties are shuffled, like the other skips. No history event is involved:
the cycle records none (no log line on this path).
"""

from __future__ import annotations

from store.broker.pull_message_processor import (
    BROKER_SUSPEND_MAX_TIME_MS,
    HOLD_CHECK_INTERVAL_MS,
    PullMessageProcessor,
)
from store.client.api import CLUSTERING, MQBrokerException, PullStatus, ResponseCode
from store.client.offset_store import READ_FROM_MEMORY
from store.client.process_queue import PULL_MAX_IDLE_TIME_MS
from store.client.push_consumer import CLEAN_EXPIRE_MSG, RUNNING
from store.client.rebalance_service import RebalanceService
from store.service import IDLE_FOREVER, rounds_before

from .network import PullAnswer


class LongPollSkips:
    def __init__(self, world) -> None:
        self.world = world
        self.repeated = 0  # pulls repeated in place (for benchmarks and tests)
        self.cycles_ahead = 0  # cycles repeated by a check on behalf of the later checks it made unnecessary

    def attach_broker(self, broker) -> None:
        processor = broker.pull_processor
        broker.hold_service.repeat_idle = lambda mono_ms, due: self._repeat(processor, mono_ms, due)

    def _repeat(self, processor: PullMessageProcessor, mono_ms: int, due: list) -> int | None:
        """When the due pulls are held again if their cycle is repeated in place (see the module), else None."""
        world = self.world
        latency_ms = world.scenario.network.latency_ms
        again_ms = mono_ms + 2 * latency_ms
        scheduler = world.scheduler
        if scheduler.has_touched() or again_ms >= world.end_mono_ms - 1:
            return None
        if not self._nothing_sees_until(again_ms):
            return None
        keys = set()
        commits = 0
        clients = []
        for held in due:
            request = held.request
            key = (request.topic, request.queue_id)
            if key in keys:
                return None  # two repeats of one queue: their order there would be the clients' order
            keys.add(key)
            client = self._client_of(held)
            if client is None:
                return None
            clients.append(client)
            if request.commit_offset > 0:
                if processor.offsets.query_offset(request.consumer_group, request.topic,
                                                  request.queue_id) != request.commit_offset:
                    return None
                commits += 1
        offsets = processor.offsets
        counted = commits and offsets.commits_to_next_version() is not None  # 5.x: the commits move the counter
        if counted:
            if offsets.before_commit is not None:
                offsets.before_commit()  # the skipped persists' debts paid up to now, they are asked again
            if commits + self._persist_commits_until(again_ms) >= offsets.commits_to_next_version():
                return None
        for held in due:  # last (a store read, as the check's own): the broker's answer
            if not self._answer_is_idle(processor, held.request):
                return None
        cycles = self._cycles(processor, mono_ms, due, clients, commits if counted else 0)
        if counted:
            offsets.account_skipped_commits(commits * cycles)
        self.repeated += len(due) * cycles
        self.cycles_ahead += cycles - 1
        return again_ms + (cycles - 1) * self._cycle_ms(latency_ms)

    @staticmethod
    def _cycle_ms(latency_ms: int) -> int:
        """From one check that repeats the pulls to the next: the first 5 s check after the repeats time out."""
        after_ms = 2 * latency_ms + BROKER_SUSPEND_MAX_TIME_MS - HOLD_CHECK_INTERVAL_MS
        return HOLD_CHECK_INTERVAL_MS * (1 + max(0, -(-after_ms // HOLD_CHECK_INTERVAL_MS)))

    def _nothing_sees_until(self, until_ms: int) -> bool:
        """No service steps up to ``until_ms`` but those blind to a repeat (the run's end comes later)."""
        next_ms = self.world.scheduler.next_armed_ms()
        return next_ms is None or next_ms > until_ms or self._only_blind_steps_until(until_ms)

    def _cycles(self, processor: PullMessageProcessor, mono_ms: int, due: list, clients: list, commits: int) -> int:
        """How many cycles in a row the check at ``mono_ms`` can repeat at once (at least this one), and the
        clients' last pull times set as the last of them leaves them. Every later check would find the same pulls
        timed out with nothing to read and repeat them again, as long as, up to the last repeat's arrival, nothing
        but blind services steps and the run goes on. Pulls held on other cycles keep their own checks in between
        (which see nothing of these repeats): none may share a queue with a due pull (a queue's list order would
        tell), and their cycles' commits (one a pull, repeated or not) count with these and the skipped persists'
        towards the next version step, which must not come before the last repeat. A rebalance in between reads a
        last pull time: any of the cycles' keeps the queue fresh (a cycle is well within pullMaxIdleTime), so it
        is set to the last one's at once."""
        world = self.world
        latency_ms = world.scenario.network.latency_ms
        cycle_ms = self._cycle_ms(latency_ms)
        first_again_ms = mono_ms + 2 * latency_ms
        others = self._other_cycles(processor, mono_ms, due)

        def set_last_pull(cycles: int) -> None:
            wall_ms = world.clock.now_ms() + (cycles - 1) * cycle_ms + latency_ms  # no clock step comes before
            for pq in clients:
                pq.last_pull_timestamp_ms = wall_ms

        most = 1
        if cycle_ms + latency_ms < PULL_MAX_IDLE_TIME_MS and others is not None:
            most = max(1, (world.end_mono_ms - 2 - first_again_ms) // cycle_ms + 1)
        need = processor.offsets.commits_to_next_version() if commits else None

        def fits(cycles: int) -> bool:
            again_ms = first_again_ms + (cycles - 1) * cycle_ms
            if need is not None:
                theirs = sum(1 + (again_ms - first) // cycle_ms for first in others if first <= again_ms)
                if commits * cycles + theirs + self._persist_commits_until(again_ms) >= need:
                    return False
            set_last_pull(cycles)
            return self._nothing_sees_until(again_ms)

        low, high = 1, most  # fits(1) holds (the one-cycle checks above); fits is monotone: bisect the last
        while low < high:
            mid = (low + high + 1) // 2
            if fits(mid):
                low = mid
            else:
                high = mid - 1
        set_last_pull(low)
        return low

    @staticmethod
    def _other_cycles(processor: PullMessageProcessor, mono_ms: int, due: list) -> list[int] | None:
        """The first check of every held pull not due now (on the hold service's 5 s grid from ``mono_ms``);
        None when one shares a queue with a due pull."""
        due_ids = {id(held) for held in due}
        due_keys = {(held.request.topic, held.request.queue_id) for held in due}
        firsts = []
        for key, waiting in processor.held.items():
            for held in waiting:
                if id(held) in due_ids:
                    continue
                if key in due_keys:
                    return None
                timeout_ms = held.suspend_mono_ms + BROKER_SUSPEND_MAX_TIME_MS
                firsts.append(mono_ms + HOLD_CHECK_INTERVAL_MS * max(1, -(-(timeout_ms - mono_ms)
                                                                         // HOLD_CHECK_INTERVAL_MS)))
        return firsts

    def _only_blind_steps_until(self, until_ms: int) -> bool:
        """Whether every service armed up to ``until_ms`` is blind to the repeat: a consumer's rebalance round
        that changes nothing (sim/client_skips.py: no held queue's pull stalls by then, whichever last pull time
        it reads) or its expired-message cleaning with nothing cached."""
        world = self.world
        skips = world.client_skips
        for owner, service in world.scheduler.armed_until(until_ms):
            if isinstance(service, RebalanceService):
                entry = skips.entries.get(owner)
                if entry is None or service.woken or entry.consumer.rebalance_service is not service:
                    return False
                bound = skips.rebalance_idle_until(entry)
                if bound is None or (bound != IDLE_FOREVER and bound <= until_ms):
                    return False
            elif getattr(service, "name", None) == CLEAN_EXPIRE_MSG:
                entry = skips.entries.get(owner)
                if entry is None or any(pq.msg_count for pq in entry.consumer.process_queue_table.values()):
                    return False
            else:
                return False
        return True

    @staticmethod
    def _client_of(held):
        """The process queue of the client that would send ``held``'s request again, unchanged, on a "no new
        message" answer; None when it would do anything else."""
        answer = held.callback
        if not isinstance(answer, PullAnswer):
            return None
        callback = answer.callback
        consumer = getattr(callback, "consumer", None)
        if consumer is None or consumer.service_state != RUNNING:
            return None
        request = held.request
        pull_request = callback.pull_request
        pq = pull_request.process_queue
        mq = pull_request.message_queue
        if pq.dropped or pq.msg_count or pull_request.next_offset != request.queue_offset:
            return None
        subscription = consumer.rebalance_impl.subscription_inner.get(mq.topic)
        if subscription is not callback.subscription or subscription.sub_string != request.sub_expression:
            return None
        store = consumer.offset_store
        if mq not in store.frozen:  # correct_tags_offset must change nothing
            offset = store.offset_table.get(mq)
            if offset is None or offset < request.queue_offset:
                return None
        commit_offset = 0
        if consumer.message_model == CLUSTERING:
            in_memory = store.read_offset(mq, READ_FROM_MEMORY)
            if in_memory > 0:
                commit_offset = in_memory
        if (commit_offset != request.commit_offset or consumer.pull_batch_size != request.max_msg_nums
                or consumer.consumer_group != request.consumer_group or not request.suspend):
            return None
        return pq

    @staticmethod
    def _answer_is_idle(processor: PullMessageProcessor, request) -> bool:
        """PULL_NOT_FOUND from the request's own offset (then the repeat finds the same: nothing steps between)."""
        try:
            code, result = processor.pull(request)
        except MQBrokerException:  # an error answer: the check answers it for real
            return False
        return (code == ResponseCode.PULL_NOT_FOUND and result.pull_status == PullStatus.NO_NEW_MSG
                and result.next_begin_offset == request.queue_offset)

    def _persist_commits_until(self, until_ms: int) -> int:
        """The commits that skipped offset persists owe for their rounds up to ``until_ms`` (inclusive)."""
        skips = self.world.client_skips
        owed = 0
        for entry in skips.entries.values():
            if entry.skipping and entry.commits_per_round:
                service = entry.service
                owed += entry.commits_per_round * rounds_before(service.next_round_ms, service.interval_ms, until_ms + 1)
        return owed
