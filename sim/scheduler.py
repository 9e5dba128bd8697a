"""Drives sans-IO services on SimPy's clock, in an order that does not depend on history.

Every service gets a *rank*; its wake-ups run in (time, rank, arming order), so wake-ups in the
same millisecond run in rank order, whatever was scheduled first. That makes "sleep until the
next wake-up" and "poll every 100 ms" give the same history: an idle poll changes nothing, and a
real step happens at the same (time, rank) in both.

Services belong to *owners* (the broker's flushers, a consumer instance, ...). After a step, the
services of every owner marked as touched are asked for their next wake-up again; a wake-up
earlier than the armed one is pushed on one heap of (time, rank, seq, slot, token), and a stale
entry (its token superseded, or its owner removed) is dropped when it reaches the top. SimPy sees
one wake event per distinct due millisecond, not one per service; within that millisecond the
heap is drained in order, as SimPy itself would have ordered one event per service (no other
SimPy event is scheduled while services step).

Deferred rounds: a ``deferrable`` periodic service (store/service.py) is not woken at all. Its armed rounds wait
on a second heap until someone could tell: just before a service that is not ``blind`` to them steps, before any
history record or request mark (the recorder asks ``settle_before_now``), and at the run's own observers (the
drain, the end), every round due before that (time, rank) runs at its own virtual time, as it would have. Rounds
that later rounds of the same settlement overwrite only leave their event. A broker's delayOffset.json persist,
every 10 s for hours of a sparse run, costs no SimPy event and almost no work this way.

Tie-shuffling (``tie_rng``): in RocketMQ the flush, reput, schedule, timer and persist services (and each
client's pull, consume and rebalance services) are different threads, so work due in the same millisecond
may run in any order. With a ``tie_rng`` each (millisecond, service) gets a random priority drawn from that
stream, and the services due in one millisecond run in that order instead of rank order. Still fixed: the
steps of one service (one thread runs them in turn) and the fault plan (rank < ``SHUFFLE_FLOOR``): it is
the harness choosing when a fault strikes, not a RocketMQ thread, and always acts first.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

import simpy
from simpy.events import Event

from store.faults import BrokerCrash

# The wake-floor shortcut (``WAKE_FLOOR``) and deferred rounds: tests turn them off to prove they change no history.
USE_WAKE_FLOORS = True
USE_DEFERRED_ROUNDS = True
SHUFFLE_FLOOR = 100  # ranks below it (the fault plan) keep running first when ties are shuffled
WAKE_PRIORITY = 10  # after SimPy's own URGENT/NORMAL events at the same time (the run's phase timeout)


class _Slot:
    __slots__ = ("service", "owner", "rank", "armed_at", "token", "alive", "catch_up", "floor", "deferred", "blind")

    def __init__(self, service, owner: str, rank: int, blind: bool) -> None:
        self.service = service
        # A service may name (``WAKE_FLOOR``) an attribute whose current value bounds its next answer from below (and
        # at or below which its catch_up has nothing to account): armed at or below it, a touch cannot move the
        # wake-up earlier, so the service is not asked.
        self.floor = getattr(type(service), "WAKE_FLOOR", None) if USE_WAKE_FLOORS else None
        # Services that skip provably idle rounds account them when asked again: catch_up(now, turn_passed).
        self.catch_up = getattr(service, "catch_up", None)
        self.deferred = USE_DEFERRED_ROUNDS and getattr(service, "deferrable", False)
        self.blind = blind  # its steps neither read nor change what a deferred round reads (see add_ranked)
        self.owner = owner
        self.rank = rank
        self.armed_at: int | None = None
        self.token = 0
        self.alive = True


class Scheduler:
    def __init__(self, env: simpy.Environment, on_broker_crash: Callable[[BrokerCrash], None],
                 tie_rng: random.Random | None = None) -> None:
        self.env = env
        self.tie_rng = tie_rng
        self._ties: dict[int, dict[_Slot, int]] = {}  # shuffled: millisecond -> slot -> its priority there
        self.on_broker_crash = on_broker_crash
        self.owners: dict[str, list[_Slot]] = {}
        self._touched: list[str] = []
        self._touched_set: set[str] = set()
        self._heap: list[tuple[int, int, int, _Slot, int]] = []
        self._debts: list[tuple[int, int, int, _Slot, int]] = []  # deferred rounds: (time, rank, seq, slot, token)
        self._settling = False
        self._seq = 0
        self._wakes: set[int] = set()  # milliseconds with a SimPy wake event pending (membership only)
        self._rank: int | None = None  # priority (rank, or shuffled draw) of the service stepping now (None outside a step)
        # The highest priority stepped in millisecond ``_turn_ms``: a service fired late in a millisecond (touched by a
        # later one) does not give the turn back to the services ranked between.
        self._turn_ms = -1
        self._turn_high = -1
        self.links: dict[str, str] = {}  # owner -> another owner its steps may affect (touched with it)
        self.steps = 0
        self.deferred_steps = 0  # deferred rounds run (not counted in ``steps``)
        self.arms = 0
        self.asks = 0  # next_wakeup_ms questions asked by re-arms (what the re-arm shortcuts save)
        self.before_step: Callable[[int], None] | None = None

    def add_owner(self, owner: str, services: list, base_rank: int, blind: bool = False) -> None:
        self.add_ranked(owner, [(svc, base_rank + i) for i, svc in enumerate(services)], blind)

    def add_ranked(self, owner: str, ranked: list[tuple[object, int]], blind: bool = False) -> None:
        """Services with explicit ranks (an owner's services need not have neighbouring ranks). ``blind``: their
        steps neither read nor change what a deferred round reads, so the deferred rounds before them need not run
        first (what such a step records still comes after them: the recorder settles before every record)."""
        self.remove_owner(owner)
        slots = self.owners[owner] = [_Slot(svc, owner, rank, blind) for svc, rank in ranked]
        if self.tie_rng is not None:
            for slot in slots:  # a shuffled millisecond draws every service's priority in it: none is deferred
                slot.deferred = False
        self.touch(owner)
        self.flush_touched()

    def remove_owner(self, owner: str) -> None:
        for slot in self.owners.pop(owner, ()):
            slot.alive = False
            slot.service = None  # its armed events stay queued until they fire: let a dead broker go now

    def touch(self, owner: str) -> None:
        if owner not in self._touched_set:
            self._touched_set.add(owner)
            self._touched.append(owner)

    def flush_touched(self) -> None:
        """Ask the services of every touched owner for their next wake-up; push what moved earlier.

        The hottest loop of a dense run: arming is inlined here (one call per service saved)."""
        touched = self._touched
        if not touched:
            return
        now = int(self.env._now)
        owners = self.owners
        rank = self._rank
        shuffled = self.tie_rng is not None
        heap = self._heap
        wakes = self._wakes
        i = 0
        while i < len(touched):  # arming does not touch, but keep the loop honest if a service ever does
            slots = owners.get(touched[i])
            i += 1
            if not slots:
                continue
            for slot in slots:
                armed = slot.armed_at
                if armed is not None:
                    if armed <= now:
                        continue  # armed for this millisecond: no answer can be earlier
                    # Not when shuffling: there catch_up's question may draw a tie priority (the draws must not
                    # depend on this shortcut).
                    floor = slot.floor
                    if floor is not None and not shuffled and armed <= getattr(slot.service, floor):
                        continue
                catch_up = slot.catch_up
                if catch_up is not None:
                    # Its round at ``now`` already had its turn (and was skipped) if it ranks before a service that
                    # stepped in this millisecond (``turn_passed``). The priority is drawn only inside a step, as it
                    # always was: draws must not move.
                    catch_up(now, rank is not None and self.turn_passed(self._prio(slot, now) if shuffled else slot.rank))
                self.asks += 1
                at = slot.service.next_wakeup_ms()
                if at is None:
                    continue
                if at < now:
                    at = now
                if armed is not None and armed <= at:
                    continue
                self.arms += 1
                slot.armed_at = at
                token = slot.token = slot.token + 1
                seq = self._seq = self._seq + 1
                if slot.deferred:
                    heapq.heappush(self._debts, (at, slot.rank, seq, slot, token))
                    continue
                heapq.heappush(heap, (at, self._prio(slot, at) if shuffled else slot.rank, seq, slot, token))
                if at not in wakes:
                    self._wake_at(at, now)
        touched.clear()
        self._touched_set.clear()

    def has_touched(self) -> bool:
        """Whether some owner was touched and not yet re-armed (its next wake-up is not known yet)."""
        return bool(self._touched)

    def armed_until(self, until_ms: int):
        """(owner, service) of every live wake-up armed at or before ``until_ms``, in no particular order."""
        for at, _, _, slot, token in self._heap:
            if at <= until_ms and slot.alive and token == slot.token:
                yield slot.owner, slot.service

    def next_armed_ms(self) -> int | None:
        """When the next armed service steps (None: none is armed); stale entries on top are dropped, as a wake
        would drop them. Owners touched but not yet re-armed are not seen: ask before anything is touched."""
        heap = self._heap
        while heap:
            top = heap[0]
            slot = top[3]
            if slot.alive and top[4] == slot.token:
                return top[0]
            heapq.heappop(heap)
        return None

    def settle_deferred(self, until_ms: int, before_rank: int = -1) -> None:
        """Run every deferred round due before (``until_ms``, ``before_rank``), each at its own time, in (time,
        rank) order (``before_rank`` -1: only the rounds before ``until_ms``). A deferred round may not crash the
        broker or wake anyone: the driver defers a service only where it cannot (sim/broker_host.py), and a breach
        is a simulator error, not a crash."""
        if self._settling:
            return  # a deferred round's own history event
        debts = self._debts
        env = self.env
        self._settling = True
        try:
            while debts:
                at, rank, _, slot, token = debts[0]
                if at > until_ms or (at == until_ms and rank >= before_rank):
                    return
                heapq.heappop(debts)
                if not slot.alive or token != slot.token:
                    continue
                service = slot.service
                rounds_after = service.rounds_until(until_ms, before_rank > rank) - 1
                slot.armed_at = None
                now = env._now
                run = self._overwritten_run(service, at, rank, rounds_after)
                if run:  # rounds that only record their event, back to back: no heap, no asking in between
                    last_ms = at + (run - 1) * service.interval_ms
                    self.deferred_steps += run - 1
                    self._took_turn(last_ms, rank)
                    env._now = last_ms
                    try:
                        service.step_overwritten(at, run)
                    finally:
                        env._now = now
                    at = last_ms + service.interval_ms
                    rounds_after -= run
                    if debts and (debts[0][0], debts[0][1]) < (at, rank):  # another debt first: this one waits
                        self._owe(slot, at, rank)
                        continue
                self._took_turn(at, rank)
                env._now = at  # the round's own time: what it records and stamps
                try:
                    service.step_deferred(at, rounds_after)
                    nxt = service.next_wakeup_ms()
                except BrokerCrash as crash:
                    raise RuntimeError(f"deferred round of {service.name} at {at} ms crashed the broker "
                                       f"({crash.site}): it should not have been deferred") from crash
                finally:
                    env._now = now
                if nxt is not None:
                    self._owe(slot, nxt, rank)
        finally:
            self._settling = False

    def _overwritten_run(self, service, at: int, rank: int, rounds_after: int) -> int:
        """How many rounds from ``at`` on run at once: those that later rounds of this settlement overwrite
        (``rounds_after`` more come after the one at ``at``), none after another debt's turn; 0 when the service
        has no ``overwritten_run``."""
        count = rounds_after - service.rounds_kept + 1
        if count <= 0 or service.overwritten_run is None:
            return 0
        if self._debts:
            next_at, next_rank = self._debts[0][0], self._debts[0][1]
            bound_ms = next_at - 1 if next_rank <= rank else next_at  # the last time this rank comes before it
            count = min(count, (bound_ms - at) // service.interval_ms + 1)
        return max(0, count)

    def _owe(self, slot: _Slot, at: int, rank: int) -> None:
        """``slot``'s next round, at ``at``, is deferred."""
        slot.armed_at = at
        slot.token = token = slot.token + 1
        seq = self._seq = self._seq + 1
        heapq.heappush(self._debts, (at, rank, seq, slot, token))

    def _took_turn(self, at: int, rank: int) -> None:
        """A deferred round runs: the turn it would have had (a step ranked before it may be under way)."""
        self.deferred_steps += 1
        if at > self._turn_ms:
            self._turn_ms, self._turn_high = at, rank
        elif at == self._turn_ms and rank > self._turn_high:
            self._turn_high = rank

    def settle_before_now(self) -> None:
        """An observer (a history record, a request's mark) is about to look: the deferred rounds that came
        before it run first. Inside a step that is everything before the step's own (time, rank)."""
        if self._debts:
            self.settle_deferred(int(self.env._now), -1 if self._rank is None else self._rank)

    def _prio(self, slot: _Slot, at: int) -> int:
        """The order of ``slot`` among the services due at ``at``: its rank, or a draw when shuffling."""
        if self.tie_rng is None or slot.rank < SHUFFLE_FLOOR:
            return slot.rank
        ties = self._ties.get(at)
        if ties is None:
            ties = self._ties[at] = {}
        prio = ties.get(slot)
        if prio is None:  # drawn on first need; the order of needs is itself deterministic
            prio = ties[slot] = SHUFFLE_FLOOR + self.tie_rng.getrandbits(40)
        return prio

    def turn_passed(self, prio: int) -> bool:
        """Whether a service of priority ``prio`` already had its turn in the millisecond stepping now: some service
        after it stepped. (With shuffled ties: the one stepping now, as before the high-water mark was kept, so that
        existing seeds keep their histories.)"""
        if self._rank is None:
            return False
        return prio < (self._rank if self.tie_rng is not None else self._turn_high)

    def _wake_at(self, at: int, now: int) -> None:
        self._wakes.add(at)
        env = self.env
        event = Event(env)
        event._ok = True
        event._value = at
        event.callbacks.append(self._on_wake)
        # env.schedule(event, priority=WAKE_PRIORITY, delay=at - now), without its keyword-argument overhead
        heapq.heappush(env._queue, (env._now + (at - now), WAKE_PRIORITY, next(env._eid), event))

    def _on_wake(self, event: Event) -> None:
        at = event._value
        self._wakes.discard(at)
        heap = self._heap
        while heap and heap[0][0] <= at:
            _, prio, _, slot, token = heapq.heappop(heap)
            if slot.alive and token == slot.token:
                self._fire(slot, at, prio)
        if self._ties:
            for done in [ms for ms in self._ties if ms <= at]:
                del self._ties[done]
        # A wake event for the next due millisecond (entries may be stale: they cost one pop there).
        while heap:
            top = heap[0]
            slot = top[3]
            if slot.alive and top[4] == slot.token:
                if top[0] not in self._wakes:
                    self._wake_at(top[0], at)
                return
            heapq.heappop(heap)

    def _fire(self, slot: _Slot, now: int, prio: int) -> None:
        if self._debts and not slot.blind:
            self.settle_deferred(now, prio)
        slot.armed_at = None
        if self.before_step is not None:
            self.before_step(now)
        self.steps += 1
        self._rank = prio
        if now != self._turn_ms:
            self._turn_ms, self._turn_high = now, prio
        elif prio > self._turn_high:
            self._turn_high = prio
        try:
            slot.service.step(now)
        except BrokerCrash as crash:
            self.on_broker_crash(crash)
        touched_set = self._touched_set
        owner = slot.owner
        if owner not in touched_set:
            touched_set.add(owner)
            self._touched.append(owner)
        linked = self.links.get(owner)
        if linked is not None and linked not in touched_set:
            touched_set.add(linked)
            self._touched.append(linked)
        self.flush_touched()
        self._rank = None
