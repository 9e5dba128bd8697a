"""Scenario files: every built-in loads, and malformed files fail with file, key and expectation."""

from __future__ import annotations

import pytest

from scenarios.catalogue import builtin_names, load_builtin, resolve_scenario
from scenarios.scenario import ScenarioError, load_scenario_file, load_scenario_text
from scenarios.units import parse_duration_ms, parse_rate_per_s

GOOD = """
name = "t"
duration = "10s"
drain = "1m"
[[topic]]
name = "TopicTest"
[[producer]]
topic = "TopicTest"
[[consumer]]
group = "G"
topic = "TopicTest"
"""


def test_catalogue_has_the_required_scenarios_and_all_load():
    names = builtin_names()
    assert len(names) >= 12
    for required in ("one-message-per-level", "all-levels-under-load", "retry-ladder-to-dlq",
                     "crash-before-delay-offset-flush", "crash-before-consumer-offset-flush",
                     "power-failure-async-flush", "put-failures-during-delivery", "consume-queue-truncation",
                     "backwards-clock-step", "broadcast-consumer-failure", "forward-clock-step",
                     "store-rollback-failing-consumer", "dozens-of-process-crashes"):
        assert required in names
    for name in names:
        scenario = load_builtin(name)
        assert scenario.name == name and len(scenario.description) > 80


def test_units():
    assert parse_duration_ms("90s") == 90_000
    assert parse_duration_ms("2h5m") == 7_500_000
    assert parse_duration_ms("-5m") == -300_000
    assert parse_duration_ms("250ms") == 250
    assert parse_rate_per_s("30/m") == 0.5
    with pytest.raises(ValueError):
        parse_duration_ms("5 minutes")


def test_a_good_file_gets_rocketmq_defaults(tmp_path):
    path = tmp_path / "good.toml"
    path.write_text(GOOD)
    s = load_scenario_file(str(path))
    assert s.broker.flush_delay_offset_interval_ms == 10_000
    assert s.consumers[0].max_reconsume_times == 16
    assert s.topics[0].queues == 4 and s.source == str(path)


MALFORMED = [
    ("unknown top key", "durration = '1s'\n" + GOOD, ["durration", "did you mean 'duration'"]),
    ("misspelled broker key", GOOD + "[broker]\nflush_delay_offset_intervall = '5s'\n",
     ["broker.flush_delay_offset_intervall", "flush_delay_offset_interval"]),
    ("bad duration", GOOD.replace('"10s"', '"ten seconds"'), ["'duration'", "a duration"]),
    ("negative duration", GOOD.replace('"1m"', '"-1m"'), ["'drain'", "not negative"]),
    ("wrong type", "seed = 'one'\n" + GOOD, ["'seed'", "an integer"]),
    ("probability out of range", GOOD + "fail_probability = 1.5\n",  # lands in the last [[consumer]]
     ["consumer[0].fail_probability", "[0.0, 1.0]"]),
    ("bad era", GOOD + "[broker]\nera = '4.3.0'\n", ["broker.era", "'5.3.3'", "'4.9.8'"]),
    ("bad delay levels", GOOD + "[broker]\nmessage_delay_level = '1s 5x'\n", ["broker.message_delay_level", "'5x'"]),
    ("producer to unknown topic", GOOD.replace('[[producer]]\ntopic = "TopicTest"', '[[producer]]\ntopic = "TopicTset"'),
     ["producer[0].topic", "TopicTset", "did you mean 'TopicTest'"]),
    ("missing group", GOOD.replace('group = "G"\n', ""), ["consumer[0].group", "missing"]),
    ("bad rate", GOOD.replace('[[producer]]\ntopic = "TopicTest"', '[[producer]]\ntopic = "TopicTest"\nrate = "fast"'),
     ["producer[0].rate", "a rate"]),
    ("bad clock step", GOOD + "[faults]\nclock_steps = [{ at = '30m' }]\n", ["faults.clock_steps[0]", "'at' and 'by'"]),
    ("delay and timer", GOOD.replace('[[producer]]\ntopic = "TopicTest"',
                                     '[[producer]]\ntopic = "TopicTest"\ndelay_level = 3\ntimer_delay = "90s"'),
     ["producer[0]", "timer_delay"]),
    ("weights mismatch", GOOD.replace('[[producer]]\ntopic = "TopicTest"',
                                      '[[producer]]\ntopic = "TopicTest"\ndelay_levels = [1, 2]\ndelay_weights = [1]'),
     ["producer[0].delay_weights", "one weight per delay level"]),
    ("not toml", "name = \n", ["not valid TOML"]),
    ("no name", GOOD.replace('name = "t"\n', ""), ["'name' is missing"]),
]


@pytest.mark.parametrize("label,text,needles", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_name_the_file_the_key_and_the_expectation(tmp_path, label, text, needles):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as error:
        load_scenario_file(str(path))
    message = str(error.value)
    assert message.startswith(str(path) + ":"), message
    for needle in needles:
        assert needle in message, (needle, message)


def test_missing_file_and_unknown_builtin():
    with pytest.raises(ScenarioError, match="cannot be read"):
        load_scenario_file("/nonexistent/x.toml")
    with pytest.raises(ScenarioError, match="did you mean 'retry-ladder-to-dlq'"):
        resolve_scenario("retry-ladder-to-dql")


def test_overrides_apply_to_tables_and_every_array_entry():
    s = load_scenario_text(GOOD, "x", {"broker.era": "4.9.8", "consumer.fail_probability": 0.25, "seed": 7})
    assert (s.broker.era, s.consumers[0].fail_probability, s.seed) == ("4.9.8", 0.25, 7)
    with pytest.raises(ScenarioError, match="override 'brokr.era'"):
        load_scenario_text(GOOD, "x", {"brokr.era": "4.9.8"})
