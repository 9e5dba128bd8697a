"""Drives sans-IO services on SimPy's clock, in an order that does not depend on history.

Every service gets a *rank*; its wake-ups are SimPy events scheduled with that rank as their
priority, so events at the same millisecond run in rank order, whatever was scheduled first.
That makes "sleep until the next wake-up" and "poll every 100 ms" give the same history: an idle
poll changes nothing, and a real step happens at the same (time, rank) in both.

Services belong to *owners* (the broker, a consumer instance, ...). After a step, the services
of every owner marked as touched are asked for their next wake-up again; a wake-up earlier than
the armed one arms a new event, and a stale event is ignored when it fires.
"""

from __future__ import annotations

from collections.abc import Callable

import simpy
from simpy.events import Event

from store.faults import BrokerCrash


class _Slot:
    __slots__ = ("service", "owner", "rank", "armed_at", "token", "alive")

    def __init__(self, service, owner: str, rank: int) -> None:
        self.service = service
        self.owner = owner
        self.rank = rank
        self.armed_at: int | None = None
        self.token = 0
        self.alive = True


class Scheduler:
    def __init__(self, env: simpy.Environment, on_broker_crash: Callable[[BrokerCrash], None]) -> None:
        self.env = env
        self.on_broker_crash = on_broker_crash
        self.owners: dict[str, list[_Slot]] = {}
        self._touched: list[str] = []
        self._touched_set: set[str] = set()
        self.steps = 0
        self.before_step: Callable[[int], None] | None = None

    def add_owner(self, owner: str, services: list, base_rank: int) -> None:
        self.add_ranked(owner, [(svc, base_rank + i) for i, svc in enumerate(services)])

    def add_ranked(self, owner: str, ranked: list[tuple[object, int]]) -> None:
        """Services with explicit ranks (an owner's services need not have neighbouring ranks)."""
        self.remove_owner(owner)
        self.owners[owner] = [_Slot(svc, owner, rank) for svc, rank in ranked]
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
        while self._touched:
            owner = self._touched.pop(0)
            self._touched_set.discard(owner)
            for slot in self.owners.get(owner, ()):
                self._arm(slot)

    def _arm(self, slot: _Slot) -> None:
        at = slot.service.next_wakeup_ms()
        if at is None:
            return
        now = int(self.env.now)
        if at < now:
            at = now
        if slot.armed_at is not None and slot.armed_at <= at:
            return
        slot.armed_at = at
        slot.token += 1
        event = Event(self.env)
        event._ok = True
        event._value = None
        event.callbacks.append(lambda _e, s=slot, tok=slot.token: self._fire(s, tok))
        self.env.schedule(event, priority=10 + slot.rank, delay=at - now)

    def _fire(self, slot: _Slot, token: int) -> None:
        if not slot.alive or token != slot.token:
            return
        slot.armed_at = None
        now = int(self.env.now)
        if self.before_step is not None:
            self.before_step(now)
        self.steps += 1
        try:
            slot.service.step(now)
        except BrokerCrash as crash:
            self.on_broker_crash(crash)
        self.touch(slot.owner)
        self.flush_touched()
