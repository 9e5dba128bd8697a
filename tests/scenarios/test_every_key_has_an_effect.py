"""Every scenario key changes the run, or is documented as having none (issue 12 item 4).

For each key of the loader's schema: a run with the key moved off its default (in a context where it can
matter: a timer key with timer messages, a fault's tuning with that fault) against the same run without it,
and the two histories must differ. The keys in ``NO_EFFECT`` are documented, in the loader and in README's
scenario section, as having no effect on the history.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from scenarios import scenario as loader
from scenarios.catalogue import load_builtin
from scenarios.scenario import apply_overrides, scenario_from_dict
from sim.run import run_scenario
from store.fastjson import loads

BASE = {
    "name": "keys",
    "duration": "20s",
    "drain": "40s",
    "topic": [{"name": "T", "queues": 2}],
    "producer": [{"topic": "T", "messages": 60, "rate": "5/s", "delay_levels": [1, 2]}],
    "consumer": [{"group": "G", "topic": "T", "fail_probability": 0.2, "max_reconsume_times": 2}],
}
BUILTIN = "__builtin__"  # a context key: start from that built-in scenario instead of BASE
TIMER = {"producer[0].delay_levels": None, "producer[0].timer_delay": "5s"}
TWO_TOPICS = {"topic": [{"name": "T", "queues": 2}, {"name": "U", "queues": 2}]}

# key -> (the context it needs, the key's value off its default)
VARIED = {
    "version": ({}, 1),  # version 1's bodies: the first 100 a pattern short of body_size
    "seed": ({}, 2),
    "duration": ({}, "25s"),
    "drain": ({}, "50s"),
    "broker.era": (TIMER, "4.9.8"),  # 4.9.8 has no timer wheel: the message is delivered at once
    "broker.message_delay_level": ({}, "2s 5s 10s 30s"),
    "broker.flush_delay_offset_interval": ({"faults.process_crashes": 2}, "1s"),
    "broker.flush_consumer_offset_interval": ({}, "1s"),
    "broker.auto_create_subscription_group": ({}, False),
    "broker.timer_precision": (TIMER, "500ms"),
    "broker.timer_roll_window_slot": ({**TIMER, "producer[0].timer_delay": "8s"}, 2),
    "broker.timer_enable_retry_until_success": ({**TIMER, "faults.put_failure_rate": 0.7}, True),
    "broker.timer_skip_unknown_error": ({BUILTIN: "timer-power-failure"}, False),  # #10668 wedges the dequeue
    "broker.flush_disk_type": ({"faults.power_failures": 1}, "SYNC_FLUSH"),
    "broker.enable_schedule_async_deliver": ({"faults.put_failure_rate": 0.2}, True),
    "broker.retry_queue_nums": ({}, 2),
    "broker.commit_log_file_size": ({}, 8192),
    "broker.consume_queue_units_per_file": ({"faults.cq_truncations": 2}, 10),
    "topic.name": ({}, {"topic[0].name": "V", "producer[0].topic": "V", "consumer[0].topic": "V"}),
    "topic.queues": ({}, 5),
    "producer.topic": (TWO_TOPICS, "U"),
    "producer.messages": ({}, 61),
    "producer.rate": ({}, "7/s"),
    "producer.delay_level": ({"producer[0].delay_levels": None}, 3),
    "producer.delay_levels": ({}, [1, 3]),
    "producer.delay_weights": ({}, [0.9, 0.1]),
    "producer.timer_delay": ({"producer[0].delay_levels": None}, "5s"),
    "producer.tags": ({"consumer[0].subscription": "TagA"}, "TagA"),
    "producer.body_size": ({}, 4000),
    "producer.start": ({}, "2s"),
    "consumer.group": ({}, "H"),
    "consumer.topic": (TWO_TOPICS, "U"),
    "consumer.model": ({}, "BROADCASTING"),
    "consumer.instances": ({}, 2),
    "consumer.max_reconsume_times": ({"consumer[0].fail_probability": 0.7}, 1),
    "consumer.fail_probability": ({}, 0.3),
    "consumer.fail_first": ({}, 1),
    "consumer.consume_time": ({}, "30ms"),
    "consumer.subscription": ({"producer[0].tags": "TagA"}, "TagB"),
    "faults.put_failure_rate": ({}, 0.1),
    "faults.process_crashes": ({}, 1),
    "faults.power_failures": ({}, 1),
    "faults.graceful_restarts": ({}, 1),
    "faults.consumer_crashes": ({}, 1),
    "faults.crash_before_offset_flush": ({}, 1),
    "faults.crash_before_delay_offset_flush": ({}, 1),
    "faults.cq_truncations": ({}, 1),
    "faults.send_back_failure_rate": ({}, 0.5),
    "faults.schedule_rebuild_failure_rate": ({"broker.era": "4.9.8"}, 0.2),
    "faults.cq_truncation_topic": ({"faults.cq_truncations": 3}, "T"),
    "faults.store_rollbacks": ({}, 1),
    "faults.rollback_age": ({"faults.store_rollbacks": 1}, "3s"),
    "faults.clock_steps": ({}, [{"at": "5s", "by": "10s"}]),
    "faults.restart_after": ({"faults.process_crashes": 1}, "5s"),
    "faults.start": ({"faults.process_crashes": 1}, "15s"),
    "network.latency": ({}, "5ms"),
}
# Keys without an effect on any simulated history, as the loader's schema and README's scenario section say:
# - name, description name or describe the run: they appear in summary.json, never in the history;
# - consumer.consume_from_where: every simulated group starts while its queues' first messages are still in
#   page cache, and then RocketMQ starts a group without an offset at the queue's first message whatever
#   the setting (ConsumerManageProcessor.queryConsumerOffset); it matters only for a store older than a run.
NO_EFFECT = {"name", "description", "consumer.consume_from_where"}


def _all_keys() -> set[str]:
    keys = set(loader._TOP)
    for table, schema in loader._TABLES.items():
        keys |= {f"{table}.{k}" for k in schema}
    for array, schema in loader._ARRAYS.items():
        keys |= {f"{array}.{k}" for k in schema}
    return keys


def test_every_key_is_varied_or_documented_as_without_effect():
    assert _all_keys() == set(VARIED) | NO_EFFECT


def _doc(overrides: dict) -> dict:
    overrides = dict(overrides)
    if BUILTIN in overrides:
        base = load_builtin(overrides.pop(BUILTIN)).doc
    else:
        base = BASE
    doc = {k: ([dict(e) for e in v] if isinstance(v, list) else v) for k, v in base.items()}
    plain = {k: v for k, v in overrides.items() if "." not in k}
    doc.update(plain)
    dotted = {k: v for k, v in overrides.items() if "." in k}
    doc = apply_overrides(doc, {k: v for k, v in dotted.items() if v is not None}, "keys")
    for k, v in dotted.items():
        if v is None:  # remove the key
            head, _, key = k.partition(".")
            head, _, idx = head[:-1].partition("[")
            doc[head][int(idx)].pop(key, None)
    return doc


def _history_hash(overrides: dict) -> str:
    """The run's history hash; a context shared by several keys (most share none, or one fault) runs once."""
    return _history_hash_of(json.dumps(overrides, sort_keys=True))


@cache
def _history_hash_of(overrides_json: str) -> str:
    doc = _doc(json.loads(overrides_json))
    seed = doc.pop("seed", 1)
    return run_scenario(scenario_from_dict(doc, "keys"), seed).summary["history_sha256"]


# Keys whose runs are long run in the slow tier: broker.timer_skip_unknown_error needs the timer-power-failure
# built-in and wedges its dequeue (tests/sim/test_timer_findings.py's #10668 test shows its effect by default);
# the crash, rollback and truncation tunings need those faults. The other fault keys stay in the default tier.
LONG_KEYS = {"broker.timer_skip_unknown_error", "broker.flush_delay_offset_interval", "broker.consume_queue_units_per_file",
             "faults.start", "faults.restart_after", "faults.cq_truncation_topic", "faults.cq_truncations",
             "faults.rollback_age", "faults.store_rollbacks", "faults.crash_before_offset_flush",
             "faults.graceful_restarts", "faults.power_failures"}


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.slow) if k in LONG_KEYS else k for k in sorted(VARIED)])
def test_varying_the_key_changes_the_history(key):
    context, value = VARIED[key]
    dotted = key if key.split(".")[0] not in loader._ARRAYS else key.replace(".", "[0].", 1)
    varied = value if isinstance(value, dict) else {dotted: value}
    assert _history_hash(context) != _history_hash({**context, **varied})


@pytest.mark.parametrize("queues", [1, 3, 16])
def test_topic_queues_create_the_topic_before_traffic_and_sends_spread_over_them(queues):
    doc = _doc({"topic": [{"name": "T", "queues": queues}], "producer[0].messages": 48})
    result = run_scenario(scenario_from_dict(doc, "keys"), 1)
    config = result.world.broker.topic_config_manager.select_topic_config("T")
    assert (config.read_queue_nums, config.write_queue_nums) == (queues, queues)
    topics_json = loads(result.world.disk.open("config/topics.json").read(0, 1 << 20).decode().rstrip("\0"))
    entry = topics_json["topicConfigTable"]["T"]
    assert (entry["readQueueNums"], entry["writeQueueNums"]) == (queues, queues)
    used = {e["queue_id"] for e in result.history.events if e["kind"] == "send" and e["status"] == "SEND_OK"}
    assert used == set(range(queues))
