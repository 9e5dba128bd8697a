"""The plan's timed faults as data: one frozen dataclass per action, one handler each.

``FaultPlan`` (sim/faults.py) builds the actions from the scenario's ``[faults]`` table; ``apply``
runs one through ``HANDLERS``, a table keyed by the action's type. Every handler records what it did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from store.consume_queue import CQ_STORE_UNIT_SIZE
from store.disk import MemoryDisk


@dataclass(frozen=True)
class CrashAt:
    """kill -9 of the broker; it restarts ``restart_after`` later."""

    at_ms: int


@dataclass(frozen=True)
class PowerFailAt:
    """The broker's host loses power: what the kernel has not written back may be lost or torn."""

    at_ms: int


@dataclass(frozen=True)
class RestartAt:
    """A graceful shutdown of the broker, then a restart."""

    at_ms: int


@dataclass(frozen=True)
class ArmCrashAt:
    """Arm a one-shot crash at a store fault site (``persist.<file>``): the broker dies when it gets there."""

    at_ms: int
    site: str


@dataclass(frozen=True)
class CrashConsumerAt:
    """kill -9 of one consumer instance, picked by ``pick`` in [0, 1) among the running ones."""

    at_ms: int
    pick: float


@dataclass(frozen=True)
class SnapshotStore:
    """Copy the store for the rollback with the same ``key``."""

    at_ms: int
    key: int


@dataclass(frozen=True)
class RollbackStore:
    """Restart the broker on the copy ``key`` of its store, with today's config files."""

    at_ms: int
    key: int


@dataclass(frozen=True)
class TruncateCq:
    """Cut the tail of one consume queue (picked by ``pick`` in [0, 1)), then crash the broker."""

    at_ms: int
    pick: float


@dataclass(frozen=True)
class StepClock:
    """The broker host's wall clock jumps by ``by_ms`` (negative: backwards)."""

    at_ms: int
    by_ms: int


FaultAction = CrashAt | PowerFailAt | RestartAt | ArmCrashAt | CrashConsumerAt | SnapshotStore | RollbackStore | \
    TruncateCq | StepClock


def _crash(world, action: CrashAt) -> None:
    world.brokers.crash("process", site="plan")


def _power_fail(world, action: PowerFailAt) -> None:
    world.brokers.crash("power", site="plan")


def _restart(world, action: RestartAt) -> None:
    world.brokers.stop()


def _arm(world, action: ArmCrashAt) -> None:
    world.faults.armed_crash_sites.append(action.site)
    world.recorder.record("fault", site=action.site, action="armed")
    world.scheduler.touch("broker.persist")


def _crash_consumer(world, action: CrashConsumerAt) -> None:
    world.clients.crash_consumer(action.pick)


def _snapshot(world, action: SnapshotStore) -> None:
    """A store copy for rollback ``key``; copies taken at the same moment with nothing recorded in between
    share one (a hundred rollbacks whose copies all date from the start hold one copy, not a hundred)."""
    at, seq = world.now_mono(), len(world.history.events)
    previous = next((s for s in world.snapshots.values() if s[0] == at and s[1] == seq), None)
    copy = previous[2] if previous is not None else world.disk.snapshot(skip_prefix="config/")
    world.snapshots[action.key] = (at, seq, copy)


def _rollback(world, action: RollbackStore) -> None:
    """The broker restarts on a copy of its store taken ``rollback_age`` earlier, with today's config
    files (a store copied or rebuilt, #1869): everything stored since the copy is lost to the fault."""
    taken_at, seq, snapshot = world.snapshots.pop(action.key)
    if world.brokers.broker is None or not isinstance(world.disk, MemoryDisk):
        return
    lost = sorted({e["msg_id"] for e in world.history.events[seq:] if e["kind"] == "store"})
    world.brokers.crash("process", site="store_rollback")
    world.disk.restore(snapshot, skip_prefix="config/")
    world.faults.damage_site = "store_rollback"
    world.recorder.record("store_rollback", snapshot_t_ms=taken_at, lost_msg_ids=lost)


def _truncate_cq(world, action: TruncateCq) -> None:
    """Cut the last units of one consume queue on disk (as a lost or damaged tail would), then
    crash the broker so that it recovers through its own path. The cut messages are recorded:
    whatever recovery does not rebuild is lost to the fault, not to the broker."""
    broker = world.brokers.broker
    if broker is None:
        return
    pick = action.pick
    wanted = world.scenario.faults.cq_truncation_topic
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
    world.brokers.crash("process", site="cq_truncation")
    world.faults.damage_site = "cq_truncation"
    for index in range(to_offset, from_offset):  # zero the tail units on disk
        pos = index * CQ_STORE_UNIT_SIZE
        mf = cq.mfq.find_mapped_file_by_offset(pos)
        if mf is not None:
            mf.handle.write(pos % cq.mapped_file_size, bytes(CQ_STORE_UNIT_SIZE))
    world.recorder.record("cq_truncate", topic=cq.topic, queue_id=cq.queue_id, from_offset=from_offset,
                          to_offset=to_offset, cut_msg_ids=cut)


def _step_clock(world, action: StepClock) -> None:
    world.brokers.timer_seen(clock_step=True)  # a dormant timer's skipped polls are computed on the old wall clock
    if world.broker is not None:  # and so are idle levels' skipped polls (5.x stamps a version step with its time)
        world.broker.schedule_message_service.settle_skipped_polls(0)
    world.clock.step(action.by_ms)
    world.recorder.record("fault", site="clock", action="step", by_ms=action.by_ms, broker_ms=world.clock.now_ms())
    world.brokers.touch_all()


HANDLERS: dict[type, Callable] = {
    CrashAt: _crash,
    PowerFailAt: _power_fail,
    RestartAt: _restart,
    ArmCrashAt: _arm,
    CrashConsumerAt: _crash_consumer,
    SnapshotStore: _snapshot,
    RollbackStore: _rollback,
    TruncateCq: _truncate_cq,
    StepClock: _step_clock,
}


def apply(world, action: FaultAction) -> None:
    """Run one fault action on ``world`` through its handler."""
    HANDLERS[type(action)](world, action)
