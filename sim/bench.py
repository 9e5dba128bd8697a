"""``rmqsim bench``: the simulator's speed against yardsticks measured in the same process.

Dense: the standard scenario (all 18 delay levels, 20 000 messages, one consumer group that fails
5% of its attempts, two broker crashes) in lifecycles per wall second, as a ratio to the store-bound
ceiling: a delayed message's lifecycle needs 2 puts and 2 dispatches (into SCHEDULE_TOPIC_XXXX, then
back into its topic), so the ceiling is ``1 / (2 / puts_per_s + 2 / dispatches_per_s)`` with both
rates measured here on the in-memory disk. Sparse: the built-in ``retry-ladder-to-dlq`` (one
message, 17 attempts, 5 virtual hours) in raw-SimPy-timeout equivalents (wall s x raw SimPy
timeouts/s): what a run costs that has almost nothing to do. It lasts about 0.05 s, so one sample
swings by half (a garbage collection, the machine's neighbours): it is run ``SPARSE_RUNS`` times, each
run against a raw SimPy yardstick of its own length measured just before it, and the median of those
products is the figure, with the lowest and highest beside it. Wall time is measured and reported, never
asserted.
"""

from __future__ import annotations

import json
import resource
import time
from statistics import median

import simpy

from sim.scenario import scenario_from_dict
from store.clock import ManualClock
from store.config import MessageStoreConfig
from store.disk import MemoryDisk
from store.message import MessageExt
from store.message_store import DefaultMessageStore

from .run import run_scenario

SPARSE_SCENARIO = "retry-ladder-to-dlq"
SPARSE_RUNS = 7  # the sparse figure is the median of this many runs (one run is ~0.05 s: one sample is noise)
SPARSE_YARDSTICK_TIMEOUTS = 50_000  # raw SimPy timeouts measured before each sparse run: about as long as it


def standard_scenario(messages: int = 20_000):
    rate = 100
    doc = {
        "name": "bench-standard",
        "description": "all 18 levels, a flaky consumer group, two crashes",
        "seed": 1,
        "duration": f"{messages // rate + 10}s",
        "drain": "2h10m",
        "topic": [{"name": "TopicTest", "queues": 8}],
        "producer": [{"topic": "TopicTest", "messages": messages, "rate": f"{rate}/s",
                      "delay_levels": list(range(1, 19))}],
        "consumer": [{"group": "GroupA", "topic": "TopicTest", "instances": 2, "fail_probability": 0.05}],
        "faults": {"process_crashes": 2},
        "broker": {"commit_log_file_size": 64 * 1024 * 1024, "consume_queue_units_per_file": 30_000},
    }
    return scenario_from_dict(doc, "bench")


def raw_simpy_rates(count: int = 300_000) -> tuple[float, float]:
    """Raw SimPy timeouts per wall second and per CPU second, both around the same ``count`` timeouts."""
    env = simpy.Environment()

    def ticker():
        for _ in range(count):
            yield env.timeout(1)

    env.process(ticker())
    cpu0, wall0 = time.process_time(), time.perf_counter()  # wall-clock ok: benchmark
    env.run()
    return count / (time.perf_counter() - wall0), count / (time.process_time() - cpu0)  # wall-clock ok


def _timed_run(scenario, progress=None):
    """A run with its wall and CPU seconds, both around the whole ``run_scenario`` (history hash and stats
    included); on a shared machine CPU time is the steadier yardstick of the two."""
    cpu0, wall0 = time.process_time(), time.perf_counter()  # wall-clock ok: benchmark
    result = run_scenario(scenario, progress=progress)
    return result, time.perf_counter() - wall0, time.process_time() - cpu0  # wall-clock ok


def bare_store(disk, messages: int, body_len: int = 100) -> tuple[DefaultMessageStore, list[MessageExt]]:
    """The ceiling's store (no broker, no sim; a manual clock the loop advances a millisecond per 1 000 puts)
    and its messages: 8 queues of one topic, each message with a key and a tag."""
    config = MessageStoreConfig(mapped_file_size_commit_log=64 * 1024 * 1024,
                                mapped_file_size_consume_queue=300_000 * 20)
    store = DefaultMessageStore(disk, config, ManualClock())
    store.load()
    store.start(0)
    body = b"x" * body_len
    msgs = [
        MessageExt(topic="BenchTopic", queue_id=i % 8, body=body, properties={"UNIQ_KEY": f"ID{i:012d}", "TAGS": "TagA"})
        for i in range(messages)
    ]
    return store, msgs


def store_rates(disk, messages: int = 100_000, body_len: int = 100, clock=time.perf_counter) -> dict:
    """Puts/s and dispatched consume-queue units/s through the bare store (no broker, no sim)."""
    store, msgs = bare_store(disk, messages, body_len)
    t0 = clock()  # wall-clock ok: benchmark
    for i, msg in enumerate(msgs):
        if i % 1000 == 0:
            store.clock.advance(1)
        store.put_message(msg)
    t1 = clock()  # wall-clock ok: benchmark
    dispatched = store.do_reput()
    t2 = clock()  # wall-clock ok: benchmark
    store.shutdown()
    return {
        "messages": messages,
        "body_bytes": body_len,
        "puts_per_s": round(messages / (t1 - t0)),
        "dispatched_units_per_s": round(dispatched / (t2 - t1)),
        "commitlog_mib": round(store.commit_log.get_max_offset() / 2**20, 1),
    }


def lifecycle_ceiling(puts_per_s: float, dispatches_per_s: float) -> float:
    """Lifecycles/s if the simulator cost nothing but the store's own work (2 puts + 2 dispatches each)."""
    return 1 / (2 / puts_per_s + 2 / dispatches_per_s)


def peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


STAGES = 4  # the dense run, SimPy's raw rates, the store's rates (wall, CPU); then the sparse runs


def measure(messages: int, sparse_scenario, bar=None) -> dict:
    """Dense scenario first (so the peak memory is its own), then the yardsticks and the sparse run.

    Every ratio is given per wall second (the issue's measure) and per CPU second of this process
    (``*_cpu``), which a busy shared machine disturbs much less. ``bar.update(done, total, note)`` hears of
    each stage (and of the dense run's virtual time): progress output only, it changes no number."""

    def stage(i: int, note: str) -> None:
        if bar is not None:
            bar.update(i, STAGES + 1, note)

    def run_progress(label: str, i: int):
        if bar is None:
            return None
        return lambda done_ms, total_ms: stage(i, f"{label}: {done_ms // 1000}/{total_ms // 1000} virtual s")

    scenario = standard_scenario(messages)
    result, wall_s, dense_cpu = _timed_run(scenario, run_progress(f"dense run of {messages} messages", 0))
    dense_peak = peak_rss_mib()
    env = result.world.env
    simpy_events = next(env._eid)  # events SimPy scheduled during the run
    summary = result.summary
    stats = summary["stats"]
    del result, env
    stage(1, "raw SimPy timeouts/s")
    raw_rate, raw_cpu_rate = raw_simpy_rates()
    stage(2, "store puts and dispatches/s (wall)")
    rates = store_rates(MemoryDisk())
    stage(3, "store puts and dispatches/s (CPU)")
    rates_cpu = store_rates(MemoryDisk(), clock=time.process_time)
    ceiling = lifecycle_ceiling(rates["puts_per_s"], rates["dispatched_units_per_s"])
    ceiling_cpu = lifecycle_ceiling(rates_cpu["puts_per_s"], rates_cpu["dispatched_units_per_s"])
    lifecycles = stats["consumed"] / wall_s
    # Each sparse run is paired with a raw SimPy yardstick of about its length, measured just before it: the
    # machine's speed drifts between stages (a neighbour, the CPU clock), and a ratio of neighbours cancels that.
    equivalents, equivalents_cpu, sparse_walls, sparse_cpus = [], [], [], []
    for i in range(SPARSE_RUNS):
        stage(4, f"sparse run of {SPARSE_SCENARIO} ({i + 1} of {SPARSE_RUNS})")
        raw_wall, raw_cpu = raw_simpy_rates(SPARSE_YARDSTICK_TIMEOUTS)
        sparse, sparse_wall, sparse_cpu = _timed_run(sparse_scenario)
        sparse_walls.append(sparse_wall)
        sparse_cpus.append(sparse_cpu)
        equivalents.append(sparse_wall * raw_wall)
        equivalents_cpu.append(sparse_cpu * raw_cpu)
    stage(STAGES + 1, "done")
    return {
        "scenario": scenario.name,
        "messages": messages,
        "wall_s": round(wall_s, 3),
        "cpu_s": round(dense_cpu, 3),
        "virtual_s": summary["virtual_ms"] / 1000,
        "virtual_s_per_wall_s": round(summary["virtual_ms"] / 1000 / wall_s, 1),
        "lifecycles_per_s": round(lifecycles, 1),
        "store_puts_per_s": rates["puts_per_s"],
        "store_dispatches_per_s": rates["dispatched_units_per_s"],
        "store_ceiling_lifecycles_per_s": round(ceiling, 1),
        "ceiling_ratio": round(lifecycles / ceiling, 3),
        "ceiling_ratio_cpu": round(stats["consumed"] / dense_cpu / ceiling_cpu, 3),
        # The run's parts: the simulation alone (the summary's wall_s), then checking, hashing and stats.
        "simulation_wall_s": summary["wall_s"],
        "ceiling_ratio_simulation_only": round(stats["consumed"] / summary["wall_s"] / ceiling, 3),
        "history_events": summary["events"],
        "service_steps": summary["sim_steps"],
        "simpy_events": simpy_events,
        "simpy_events_per_s": round(simpy_events / wall_s),
        "raw_simpy_timeouts_per_s": round(raw_rate),
        "raw_simpy_timeouts_per_cpu_s": round(raw_cpu_rate),
        "peak_rss_mib": dense_peak,
        "sparse_scenario": SPARSE_SCENARIO,
        "sparse_wall_s": round(median(sparse_walls), 3),
        "sparse_cpu_s": round(median(sparse_cpus), 3),
        "sparse_runs": SPARSE_RUNS,
        "sparse_wall_s_min_max": [round(min(sparse_walls), 3), round(max(sparse_walls), 3)],
        "sparse_service_steps": sparse.summary["sim_steps"],
        "sparse_deferred_rounds": sparse.summary["sim_deferred_rounds"],
        "sparse_raw_timeout_equivalents": round(median(equivalents)),
        "sparse_raw_timeout_equivalents_min_max": [round(min(equivalents)), round(max(equivalents))],
        "sparse_raw_timeout_equivalents_cpu": round(median(equivalents_cpu)),
        "stats": stats,
    }


def main(args, sparse_scenario, bar=None) -> int:
    """``sparse_scenario``: the built-in SPARSE_SCENARIO, loaded by the caller (sim must not import scenarios);
    ``bar``: a progress reporter (``update(done, total, note)``, ``close()``) on stderr, or None."""
    try:
        numbers = measure(args.messages, sparse_scenario, bar)
    finally:
        if bar is not None:
            bar.close()
    if not args.json:
        width = max(len(k) for k in numbers)
        for key, value in numbers.items():
            if key != "stats":
                print(f"{key:<{width}}  {value}")
    print(json.dumps(numbers))
    return 0
