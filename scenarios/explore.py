"""Swarm-style random scenarios for exploration (``rmqsim mutants --explore``, ``rmqsim gate --explore``).

Each generated scenario turns on a random subset of workload features and of fault kinds (Groce et al.,
swarm testing: random feature subsets find more bugs than one configuration with everything on), with
random rates and times. Everything is drawn from one ``random.Random(seed)``, so a seed names a scenario;
the document goes through the scenario loader, so its validation applies, and a loader warning (a drain
shorter than the scenario's delays) is a bug of this generator, raised as such. Sizes are kept small so a
run takes well under a second of wall time."""

from __future__ import annotations

import random

from .scenario import SCENARIO_VERSION, Scenario, scenario_from_dict
from .units import format_duration_ms

DELAY_TABLE = "1s 5s 10s 30s 1m 2m"  # a short level table: the retry ladder and every level fit a short drain
FEATURES = ("delay_levels", "timer", "broadcast", "tags", "groups", "max_retries", "failing_consumer",
            "fail_first", "slow_consumer", "big_bodies", "era_4_9_8", "retry_until_success", "async_deliver",
            "sync_flush", "small_files")
FAULTS = ("put_failure_rate", "process_crashes", "power_failures", "graceful_restarts", "consumer_crashes",
          "crash_before_offset_flush", "crash_before_delay_offset_flush", "cq_truncations", "store_rollbacks",
          "clock_step_back", "clock_step_forward", "send_back_failure_rate", "schedule_rebuild_failure_rate")


FEATURE_CHANCE, FAULT_CHANCE = 0.4, 0.3  # each switch's chance to be on, unless steering weights say otherwise


class GeneratorBug(AssertionError):
    """A generated scenario the loader rejects or warns about."""


def _draw_switches(rng: random.Random, weights) -> tuple[set[str], list[str]]:
    """The workload features and fault kinds turned on: one draw per switch whatever the weights, so the
    draws after these (and the default-weight scenarios triaged with them) stay the same."""
    weights = weights or {}
    on = {f for f in FEATURES if rng.random() < weights.get(f, FEATURE_CHANCE)}
    faults_on = [f for f in FAULTS if rng.random() < weights.get(f, FAULT_CHANCE)] or [rng.choice(FAULTS)]
    if "schedule_rebuild_failure_rate" in faults_on:
        # the rebuild-error fault models 4.9.8's damaged read (rebuild-errors-4x), not a 5.x path
        on.add("era_4_9_8")
        on.discard("timer")
    return on, faults_on


def switches(seed: int, weights=None) -> frozenset[str]:
    """The feature and fault switches generated scenario ``seed`` turns on (what steering learns from)."""
    on, faults_on = _draw_switches(random.Random(seed), weights)
    return frozenset(on) | frozenset(faults_on)


def generate_doc(seed: int, combos: bool = True, weights=None) -> dict:
    """The raw TOML document of generated scenario ``seed`` (deterministic). ``combos``: add the feature
    combinations the mutant explorer needs (traffic into the fault window, a slow listener); the CI gate runs
    without them, on the shapes whose clean-build findings are triaged (tests/sim/test_explore_triage.py).
    ``weights``: switch name -> chance to be on (scenarios/steer.py); the defaults otherwise."""
    rng = random.Random(seed)
    on, faults_on = _draw_switches(rng, weights)
    era = "4.9.8" if "era_4_9_8" in on and "timer" not in on else "5.3.3"
    duration_ms = rng.choice((15_000, 20_000, 30_000))
    fault_start_ms = None
    if "power_failures" in faults_on or "store_rollbacks" in faults_on:
        # the kernel writes the topic tables back 30 s after they change: a power loss (or a copy of the
        # store) before that loses topics.json with its .bak (#9705), which power-failure-async-flush
        # keeps apart; start the faults after that window
        duration_ms, fault_start_ms = 60_000, 40_000
    broker: dict = {"era": era, "message_delay_level": DELAY_TABLE,
                    "flush_delay_offset_interval": format_duration_ms(rng.choice((1000, 5000, 10_000))),
                    "flush_consumer_offset_interval": format_duration_ms(rng.choice((1000, 5000)))}
    if "retry_until_success" in on and era == "5.3.3":
        broker["timer_enable_retry_until_success"] = True
    if "async_deliver" in on:
        broker["enable_schedule_async_deliver"] = True
    if "sync_flush" in on:
        broker["flush_disk_type"] = "SYNC_FLUSH"
    if "small_files" in on:
        broker["commit_log_file_size"] = rng.choice((4096, 16_384))
        broker["consume_queue_units_per_file"] = rng.choice((10, 50))
    topics = [{"name": "TopicA", "queues": rng.choice((1, 2, 4))}]
    producer: dict = {"topic": "TopicA", "messages": rng.randint(20, 200),
                      "rate": f"{rng.choice((5, 10, 20, 40))}/s"}
    if "timer" in on:
        producer["timer_delay"] = format_duration_ms(rng.choice((1000, 3000, 5000, 10_000)))
    elif "delay_levels" in on:
        levels = sorted(rng.sample(range(1, 7), rng.randint(1, 3)))
        producer["delay_levels"] = levels
    if "tags" in on:
        producer["tags"] = rng.choice(("TagA", "TagB"))
    if "big_bodies" in on:
        # A 4 KiB commit-log file holds the record of a 3 900-byte body but not its retry or scheduled copies (more
        # properties): those puts answer PUT_OK and store nothing (``unstored``). Bigger bodies would lose every
        # message at its send, a run with nothing left to check.
        small = broker.get("commit_log_file_size") == 4096
        producer["body_size"] = rng.choice((1024, 3900) if small else (1024, 4000, 4096))
    consumers = []
    groups = rng.randint(2, 3) if "groups" in on else 1
    for g in range(groups):
        c: dict = {"group": f"Group{chr(65 + g)}", "topic": "TopicA",
                   "instances": rng.randint(1, 3)}
        if "broadcast" in on and g == 0 and "consumer_crashes" not in faults_on:
            # a crashed BROADCASTING instance loses its local offsets.json writes: not a broker property
            c["model"] = "BROADCASTING"
        if "tags" in on and rng.random() < 0.5:
            c["subscription"] = rng.choice(("TagA", "TagA || TagB", "*"))
        if "max_retries" in on:
            c["max_reconsume_times"] = rng.randint(0, 3)
        if "failing_consumer" in on:
            c["fail_probability"] = rng.choice((0.05, 0.1, 0.3))
        if "fail_first" in on:
            c["fail_first"] = rng.randint(1, 3)
        if g == 0 and "fail_first" in c and c.get("max_reconsume_times", 16) < c["fail_first"]:
            # the first group gets through: with every attempt failing into the DLQ nothing is consumed, and the
            # duplicates check has nothing to look at (explore seed 163, vacuous); the others keep the DLQ path
            c["max_reconsume_times"] = c["fail_first"]
        if c.get("model") == "BROADCASTING":
            # BROADCASTING drops a failed message (no retry): with fail_first every message fails once and nothing
            # is ever consumed, so duplicates checks nothing (explore seed 185, vacuous)
            c.pop("fail_first", None)
        if "slow_consumer" in on:
            c["consume_time"] = format_duration_ms(rng.choice((50, 200, 500)))
        consumers.append(c)
    faults: dict = {}
    for kind in faults_on:
        if kind.endswith("_rate"):
            faults[kind] = rng.choice((0.01, 0.05, 0.1, 0.2))
        elif kind == "clock_step_back" or kind == "clock_step_forward":
            sign = -1 if kind == "clock_step_back" else 1
            step = {"at": format_duration_ms(rng.randint(2, 13) * 1000),
                    "by": format_duration_ms(sign * rng.choice((2000, 10_000, 60_000)))}
            faults.setdefault("clock_steps", []).append(step)
        elif kind == "store_rollbacks":
            faults[kind] = 1
            faults["rollback_age"] = format_duration_ms(rng.choice((2000, 5000, 10_000)))
        else:
            faults[kind] = rng.randint(1, 3)
    if fault_start_ms is not None:
        faults["start"] = format_duration_ms(fault_start_ms)
    if faults and rng.random() < 0.5:
        faults["restart_after"] = format_duration_ms(rng.choice((500, 1000, 3000)))
    # Feature combinations the mutants of issue 17 need, drawn from a second stream so the draws above (and the
    # scenarios triaged with them) stay as they were.
    extra = random.Random(f"explore-extra:{seed}")
    if combos and fault_start_ms is not None:
        # traffic into the fault window: a rollback or a power failure must find copies in flight (level queues
        # moving past the copy's snapshot, timer units not yet flushed), or it has nothing to cut
        start_ms = extra.choice((0, 20_000, 30_000))
        rate = extra.choice((5, 10))
        producer["rate"], producer["messages"] = f"{rate}/s", rate * (55_000 - start_ms) // 1000
        if start_ms:
            producer["start"] = format_duration_ms(start_ms)
        if "store_rollbacks" in faults_on and "timer" not in on and extra.random() < 0.7:
            producer["delay_levels"] = sorted(extra.sample(range(1, 4), extra.randint(1, 2)))  # rollback + delay offsets
        if "timer" in on and "power_failures" in faults_on:
            # a lost timer message's unit points at whatever was written there since (#10668): without this 5.3.3
            # retries the unknown error forever and the dequeue wedges (timer-power-failure keeps it on too)
            broker["timer_skip_unknown_error"] = True
    if combos and "timer" in on and extra.random() < 0.3:
        # a short roll window (timerRollWindowSlot): delays beyond it are rolled (probe timer.roll, never hit by
        # the default two-day window and delays of seconds)
        broker["timer_roll_window_slot"] = extra.choice((2, 3, 5))
    if combos and extra.random() < 0.12 and "timer" not in on:
        # a slow listener (slow-listener-expired-retry): an attempt older than consumeTimeout (15 min) is sent back
        # by cleanExpireMsg and removed from its ProcessQueue while the listener still runs
        duration_ms = 900_000
        era = broker["era"] = "5.3.3"  # 4.9.8 lacks the containsMessage check: its second retry chain is its own bug
        producer = {"topic": "TopicA", "messages": extra.randint(1, 3), "rate": "1/s",
                    "start": format_duration_ms(extra.choice((850_000, 870_000, 880_000)))}
        consumers = [{"group": "GroupA", "topic": "TopicA", "max_reconsume_times": extra.randint(1, 3),
                      "fail_first": 100, "consume_time": format_duration_ms(extra.choice((960_000, 1_000_000)))}]
        faults = {k: v for k, v in faults.items() if k in ("send_back_failure_rate", "put_failure_rate")}
    if producer.get("tags") and not any(_takes(c.get("subscription", "*"), producer["tags"]) for c in consumers):
        consumers[0]["subscription"] = "*"  # a group that takes the messages, or no_loss checks nothing (vacuous)
    doc = {"version": SCENARIO_VERSION, "name": f"explore-{seed}", "description": f"generated by scenarios.explore, seed {seed}",
           "seed": seed, "duration": format_duration_ms(duration_ms), "drain": "0s", "broker": broker,
           "topic": topics, "producer": [producer], "consumer": consumers, "faults": faults}
    doc["drain"] = format_duration_ms(_drain_ms(doc))
    return doc


def _drain_ms(doc: dict) -> int:
    """Long enough for the longest delay plus the retry ladder (what the loader's drain check asks), plus
    slack for restarts and the clock stepping back."""
    from sim.shrink import longest_delay_ms

    s = scenario_from_dict(doc, "<explore>")
    ladder = max(_ladder(s), default=0)  # groups work through their ladders side by side
    back = max([-st.by_ms for st in s.faults.clock_steps] + [0])
    # a slow consumer works through its backlog after the last send: messages x consume time / instances
    # (each attempt of a failing listener takes its consume time again)
    sent = sum(p.messages for p in s.producers)
    backlog = max([sent * max(c.consume_time_ms, 1) * (1 + _retries(c)) // c.instances for c in s.consumers] + [0])
    return longest_delay_ms(s) + ladder + back + backlog + 30_000


def _ladder(s: Scenario):
    from store.delay_level import parse_delay_level

    table = parse_delay_level(s.broker.message_delay_level)
    top = max(table)
    for c in s.consumers:
        yield sum(table[min(3 + k, top)] for k in range(_retries(c)))


def _retries(c) -> int:
    limit = 16 if c.max_reconsume_times == -1 else c.max_reconsume_times
    return limit if c.fail_probability > 0 else min(max(c.fail_first, 1), limit)


def _takes(subscription: str, tag: str) -> bool:
    return subscription == "*" or tag in [t.strip() for t in subscription.split("||")]


def generate(seed: int, combos: bool = True, weights=None) -> Scenario:
    """Generated scenario ``seed``, validated by the loader; raises ``GeneratorBug`` on an error or a warning."""
    doc = generate_doc(seed, combos, weights)
    try:
        scenario = scenario_from_dict(doc, f"<explore seed {seed}>")
    except ValueError as error:
        raise GeneratorBug(f"seed {seed}: the loader rejects the generated scenario: {error}") from None
    if scenario.notes:
        raise GeneratorBug(f"seed {seed}: the loader warns: {scenario.notes[0]}")
    return scenario
