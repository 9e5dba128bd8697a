"""Deferred rounds change no history and no file anyone reads: delayOffset.json's persist, run late.

A broker's 10 s delayOffset.json persist is deferred (sim/scheduler.py): its rounds run just before someone could
tell, each at its own time, and a round that two later rounds overwrite leaves only its event. Each run here is
compared, byte for byte, with the same run stepping every round; delayOffset.json and its .bak are compared
wherever a crash, a shutdown or the end of the run can read them, and at every history record.
"""

from __future__ import annotations

import pytest
import simpy

from scenarios.catalogue import load_builtin
from scenarios.scenario import load_scenario_text
from sim import scheduler as scheduler_module
from sim.broker_host import BrokerHost
from sim.history_recorder import HistoryRecorder
from sim.run import run_scenario
from sim.world import World
from store.service import PeriodicService

from ..shared_runs import builtin_run
from .test_skip_equivalence import FAULT_HEAVY

# The fault-heavy sample without what turns deferral off (a power failure, a crash armed at delayOffset.json), and
# with a store rollback and a forward clock step: every other fault, while rounds are owed.
DEFERRED_HEAVY = (FAULT_HEAVY.replace("power_failures = 1", "power_failures = 0")
                  .replace("crash_before_delay_offset_flush = 1", "crash_before_delay_offset_flush = 0")
                  .replace('clock_steps = [{ at = "50s", by = "-20s" }]',
                           'store_rollbacks = 1\nclock_steps = [{ at = "50s", by = "-20s" }, { at = "70s", by = "30s" }]'))
DELAY_FILES = ("config/delayOffset.json", "config/delayOffset.json.bak")


def _delay_files(world) -> dict:
    return {path: bytes(f.data) for path, f in sorted(world.disk._files.items()) if path.endswith(DELAY_FILES)}


def _run(monkeypatch, scenario, seed, deferred: bool, era=None):
    """A run, with the delay-offset files as every crash, shutdown and history record found them (after it: a
    record settles the rounds before it first) and as the run left them. Not at a round's own persist event: an
    overwritten round writes nothing, by design."""
    seen = []
    crash, stop, record = BrokerHost.crash, BrokerHost.stop, HistoryRecorder.record

    def watch(original):
        def wrapped(host, *args, **kwargs):
            original(host, *args, **kwargs)
            seen.append((host.world.now_mono(), _delay_files(host.world)))
        return wrapped

    def watch_record(recorder, kind, **fields):
        event = record(recorder, kind, **fields)
        if not (kind == "persist" and fields.get("file") == "delayOffset.json"):
            seen.append((recorder.now_mono(), kind, _delay_files(world_of[0])))
        return event

    world_of = []
    world_init = World.__init__

    def remember_world(world, *args, **kwargs):
        world_init(world, *args, **kwargs)
        world_of[:] = [world]

    with monkeypatch.context() as m:
        m.setattr(BrokerHost, "crash", watch(crash))
        m.setattr(BrokerHost, "stop", watch(stop))
        m.setattr(HistoryRecorder, "record", watch_record)
        m.setattr(World, "__init__", remember_world)
        m.setattr(scheduler_module, "USE_DEFERRED_ROUNDS", deferred)
        result = run_scenario(scenario, seed, era=era, check=False)
    return result, seen + [("end", _delay_files(result.world))]


def _same(monkeypatch, scenario, seed=None, era=None):
    deferred, deferred_seen = _run(monkeypatch, scenario, seed, True, era)
    stepped, stepped_seen = _run(monkeypatch, scenario, seed, False, era)
    assert deferred.history.to_jsonl() == stepped.history.to_jsonl()
    assert deferred_seen == stepped_seen
    assert stepped.world.scheduler.deferred_steps == 0
    return deferred, stepped


@pytest.mark.parametrize(("name", "era"), [("retry-ladder-to-dlq", None), ("one-message-per-level", None),
                                           ("backwards-clock-step", None),
                                           pytest.param("graceful-restart", None, marks=pytest.mark.slow),
                                           pytest.param("graceful-restart", "4.9.8", marks=pytest.mark.slow),
                                           pytest.param("timer-wheel-crash", None, marks=pytest.mark.slow),
                                           pytest.param("store-rollback", None, marks=pytest.mark.slow),
                                           pytest.param("flaky-consumer-broker-crash", None, marks=pytest.mark.slow)])
def test_builtins_equal_with_every_round_stepped(monkeypatch, name, era):
    deferred, stepped = _same(monkeypatch, load_builtin(name), era=era)
    assert deferred.world.scheduler.deferred_steps > 0
    # every round a step of its own when stepped (and a repeat of idle long polls cannot see past one)
    assert deferred.world.scheduler.steps + deferred.world.scheduler.deferred_steps <= stepped.world.scheduler.steps


@pytest.mark.parametrize("seed", [7, pytest.param(8, marks=pytest.mark.slow)])
def test_fault_heavy_sample_equal_with_every_round_stepped(monkeypatch, seed):
    deferred, _ = _same(monkeypatch, load_scenario_text(DEFERRED_HEAVY, "deferred-heavy"), seed)
    kinds = {e["kind"] for e in deferred.history.events}
    assert {"crash", "restart", "fault"} <= kinds
    sites = {e.get("site") for e in deferred.history.events if e["kind"] in ("fault", "crash")}
    assert sites >= {"clock", "cq_truncation", "store_rollback", "plan"}
    assert deferred.world.scheduler.deferred_steps > 0


def test_the_sparse_builtin_steps_half_as_often():
    """Not a speed assertion: retry-ladder-to-dlq's 1 800 persist rounds cost no scheduler step, and all but the
    few a reader could see (the last two before each observer) write nothing."""
    run = builtin_run("retry-ladder-to-dlq")
    deferred = run.summary["sim_deferred_rounds"]
    end_ms = run.history.events[-1]["t_ms"]  # the shutdown's own persists come then
    assert deferred == sum(e["kind"] == "persist" and e["file"] == "delayOffset.json" and e["t_ms"] < end_ms
                           for e in run.history.events)
    assert run.summary["sim_steps"] < deferred


def test_no_deferral_where_a_round_could_be_seen_at_once():
    """A crash armed at delayOffset.json's persist, or a power failure (it tears what a round rewrote): every
    round is a step; and shuffled ties draw every service's priority, so nothing is deferred there either."""
    for name in ("crash-before-delay-offset-flush", "power-failure-async-flush"):
        assert builtin_run(name).summary["sim_deferred_rounds"] == 0
    shuffled = run_scenario(load_builtin("retry-ladder-to-dlq"), check=False, shuffle_ties=True)
    assert shuffled.world.scheduler.deferred_steps == 0


# --- the equalities above can fail: each piece of the mechanism, taken out, changes what they compare --------------
def _plant_and_compare(monkeypatch, scenario, plant) -> bool:
    """Whether the run with ``plant`` applied still equals the run stepping every round."""
    stepped, stepped_seen = _run(monkeypatch, scenario, None, False)
    with monkeypatch.context() as m:
        plant(m)
        deferred, deferred_seen = _run(monkeypatch, scenario, None, True)
    return deferred.history.to_jsonl() == stepped.history.to_jsonl() and deferred_seen == stepped_seen


def test_without_settling_at_records_the_events_come_out_of_order(monkeypatch):
    assert not _plant_and_compare(monkeypatch, load_builtin("retry-ladder-to-dlq"),
                                  lambda m: m.setattr(scheduler_module.Scheduler, "settle_before_now", lambda self: None))


def test_without_settling_at_the_end_the_last_rounds_are_lost(monkeypatch):
    original = World.run

    def run_without_final_settle(world, progress=None):
        settle = world.scheduler.settle_deferred
        world.scheduler.settle_deferred = lambda until_ms, before_rank=-1: (
            None if until_ms == world.end_mono_ms else settle(until_ms, before_rank))
        original(world, progress)

    assert not _plant_and_compare(monkeypatch, load_builtin("retry-ladder-to-dlq"),
                                  lambda m: m.setattr(World, "run", run_without_final_settle))


def test_overwritten_rounds_must_still_record_their_event(monkeypatch):
    original = PeriodicService.step_deferred

    def silent(service, mono_ms, rounds_after):
        if rounds_after >= service.rounds_kept:
            service._next_ms = mono_ms + service.interval_ms  # the round happens, and says nothing
            return
        original(service, mono_ms, rounds_after)

    def silent_run(service, first_ms, count):
        service._next_ms = first_ms + count * service.interval_ms  # a run of them, at once, saying nothing

    def plant(m):
        m.setattr(PeriodicService, "step_deferred", silent)
        m.setattr(PeriodicService, "step_overwritten", silent_run)

    assert not _plant_and_compare(monkeypatch, load_builtin("retry-ladder-to-dlq"), plant)


def test_a_run_of_overwritten_rounds_records_each_at_its_own_time(monkeypatch):
    """The rounds run at once (sim/scheduler.py) record one event per round, each at its round's time."""
    def at_the_last(service, first_ms, count):
        service._next_ms = first_ms + count * service.interval_ms
        service.overwritten_run(first_ms + service.interval_ms, service.interval_ms, count)  # each a round late

    assert not _plant_and_compare(monkeypatch, load_builtin("retry-ladder-to-dlq"),
                                  lambda m: m.setattr(PeriodicService, "step_overwritten", at_the_last))


def test_keeping_one_round_instead_of_two_loses_the_bak(monkeypatch):
    """The .bak holds the round before the last: a settlement that writes only its last round leaves an older .bak
    (seen by the graceful restart's shutdown and at the end)."""
    original = PeriodicService.step_deferred

    def keep_one(service, mono_ms, rounds_after):
        service.rounds_kept = 1
        original(service, mono_ms, rounds_after)

    assert not _plant_and_compare(monkeypatch, load_builtin("retry-ladder-to-dlq"),
                                  lambda m: m.setattr(PeriodicService, "step_deferred", keep_one))


def test_a_level_is_not_blind_to_the_rounds(monkeypatch):
    """The levels move the offset table and the dataVersion that a round writes: their steps settle first."""
    def all_blind(m):
        original = scheduler_module.Scheduler.add_ranked
        m.setattr(scheduler_module.Scheduler, "add_ranked",
                  lambda self, owner, ranked, blind=False: original(self, owner, ranked, True))

    assert not _plant_and_compare(monkeypatch, load_builtin("retry-ladder-to-dlq"), all_blind)


def test_a_deferred_round_that_crashes_is_a_simulator_error(monkeypatch):
    """Deferring a round a crash is armed at would move the crash: the scheduler refuses it loudly."""
    scenario = load_builtin("crash-before-delay-offset-flush")
    with monkeypatch.context() as m:
        start = BrokerHost.start

        def start_deferring(host):
            start(host)
            if host.broker is not None:
                service = host.broker.schedule_message_service.persist_service
                service.deferrable = True
                host._remove_services()
                host._add_services(host.broker)

        m.setattr(BrokerHost, "start", start_deferring)
        result = run_scenario(scenario, check=False)
    assert "should not have been deferred" in result.summary["simulator_error"]["message"]


def _two_deferred_services(scheduler) -> list:
    """Two deferrable services on different grids (10 s and 15 s) whose rounds tell ``told`` (name, time, kind);
    a persist-like pair: the last two rounds of a settlement run their task, the others are overwritten."""
    told: list = []

    def service(name: str, interval_ms: int) -> PeriodicService:
        s = PeriodicService(name, lambda ms: told.append((name, ms, "task")), interval_ms, interval_ms, 0)
        s.deferrable, s.rounds_kept = True, 2
        s.overwritten_run = lambda first_ms, every_ms, count: told.extend(
            (name, t, "overwritten") for t in range(first_ms, first_ms + count * every_ms, every_ms))
        return s

    scheduler.add_ranked("owner", [(service("a", 10_000), 1), (service("b", 15_000), 2)])
    return told


def test_runs_of_overwritten_rounds_of_two_services_interleave_in_time_and_rank_order():
    """A run of one service's overwritten rounds stops before another service's round that comes first, so every
    round runs in (time, rank) order, as one stepped round at a time would (only one service is deferred in the
    simulator today: this holds the mechanism to its promise for a second)."""
    def expected(until_ms: int) -> list:
        rounds = []
        for name, rank, interval_ms in (("a", 1, 10_000), ("b", 2, 15_000)):
            times = list(range(interval_ms, until_ms, interval_ms))
            rounds += [(t, rank, name, "task" if i >= len(times) - 2 else "overwritten") for i, t in enumerate(times)]
        return [(name, t, kind) for t, _, name, kind in sorted(rounds)]

    def settled(plant=None) -> list:
        scheduler = scheduler_module.Scheduler(simpy.Environment(), on_broker_crash=lambda crash: None)
        if plant is not None:
            scheduler._overwritten_run = plant.__get__(scheduler)
        told = _two_deferred_services(scheduler)
        scheduler.settle_deferred(100_000)
        return told

    assert settled() == expected(100_000)

    def blind_to_other_debts(self, service, at, rank, rounds_after):  # the whole run, whatever comes between
        count = rounds_after - service.rounds_kept + 1
        return max(0, count) if service.overwritten_run is not None else 0

    assert settled(blind_to_other_debts) != expected(100_000)
