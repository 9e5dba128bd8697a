"""``rmqsim bench``: the simulator's speed on the standard scenario, against raw SimPy.

Standard scenario: all 18 delay levels, 20 000 messages, one consumer group that fails 5% of its
attempts, two broker crashes. Wall time is measured here and reported, never asserted.
"""

from __future__ import annotations

import json
import resource
import time

import simpy

from scenarios.scenario import scenario_from_dict

from .run import run_scenario


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


def raw_simpy_timeouts_per_s(count: int = 300_000) -> float:
    env = simpy.Environment()

    def ticker():
        for _ in range(count):
            yield env.timeout(1)

    env.process(ticker())
    start = time.perf_counter()  # wall-clock ok: benchmark
    env.run()
    return count / (time.perf_counter() - start)  # wall-clock ok


def measure(messages: int) -> dict:
    scenario = standard_scenario(messages)
    raw_rate = raw_simpy_timeouts_per_s()
    result = run_scenario(scenario)
    wall_s = result.summary["wall_s"]
    env = result.world.env
    simpy_events = next(env._eid)  # events SimPy scheduled during the run
    stats = result.summary["stats"]
    return {
        "scenario": scenario.name,
        "messages": messages,
        "wall_s": wall_s,
        "virtual_s": result.summary["virtual_ms"] / 1000,
        "virtual_s_per_wall_s": round(result.summary["virtual_ms"] / 1000 / wall_s, 1),
        "lifecycles_per_s": round(stats["consumed"] / wall_s, 1),
        "history_events": result.summary["events"],
        "service_steps": result.summary["sim_steps"],
        "simpy_events": simpy_events,
        "simpy_events_per_s": round(simpy_events / wall_s),
        "raw_simpy_timeouts_per_s": round(raw_rate),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "stats": stats,
    }


def main(args) -> int:
    numbers = measure(args.messages)
    if not args.json:
        width = max(len(k) for k in numbers)
        for key, value in numbers.items():
            if key != "stats":
                print(f"{key:<{width}}  {value}")
    print(json.dumps(numbers))
    return 0
