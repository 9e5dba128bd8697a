"""Fuzzing the scenario loader: mutated built-in files and generated documents either load or raise
``ScenarioError`` (one line), and the CLI answers a rejected file with exit 2 and no traceback."""

from __future__ import annotations

import math
import tempfile
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenarios.catalogue import builtin_names
from scenarios.cli import main
from scenarios.scenario import (
    _ARRAYS,
    _BROKER,
    _FAULTS,
    _TOP,
    MAX_PHASE_MS,
    ScenarioError,
    load_scenario_text,
    scenario_from_dict,
)

TEXTS = {name: (resources.files("scenarios") / "builtin" / f"{name}.toml").read_text(encoding="utf-8")
         for name in builtin_names()}
HOSTILE_SNIPPETS = [
    "version = 1.5", "version = true", "faults = [1]", "duration = \"999999d\"", 'duration = "' + "9" * 400 + 's"',
    'drain = "-1s"', "seed = -1", "seed = " + "9" * 30, "[broker]\ncommit_log_file_size = 1073741824",
    '[[topic]]\nname = "../x"', '[[consumer]]\ngroup = ""\ntopic = "TopicTest"', "[faults]\nstore_rollbacks = 1e9",
    '[faults]\nclock_steps = [{ at = "1s", by = "' + "9" * 25 + 'd" }]', "delay_weights = [0, 0]",
    "delay_levels = []", "rate = \"1e999/s\"", "fail_probability = nan", "fail_probability = inf", "x = 1979-05-27",
    'name = "\\ud800"', "a = " + "1" * 5000, "[[producer]]\ntopic = 1", "queues = 0", "[network]\nlatency = [1]",
]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _accepts_or_one_line(text: str) -> None:
    try:
        scenario = load_scenario_text(text, "fuzz.toml")
    except ScenarioError as error:
        message = str(error)
        assert message.startswith("fuzz.toml: ") and "\n" not in message, message
        return
    assert 0 < scenario.duration_ms <= MAX_PHASE_MS and 0 <= scenario.drain_ms <= MAX_PHASE_MS
    assert all(math.isfinite(p.rate_per_s) and p.rate_per_s > 0 for p in scenario.producers)


@st.composite
def mutated_builtin(draw) -> str:
    text = TEXTS[draw(st.sampled_from(sorted(TEXTS)))]
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["insert", "delete", "replace_value", "flip"]))
        at = draw(st.integers(0, max(len(lines) - 1, 0)))
        if op == "insert":
            lines.insert(at, draw(st.sampled_from(HOSTILE_SNIPPETS)))
        elif op == "delete" and lines:
            del lines[at]
        elif op == "replace_value" and lines and "=" in lines[at]:
            key = lines[at].split("=", 1)[0]
            value = draw(st.sampled_from(['""', "0", "-1", "1.5", "true", "[]", "{}", '"0s"', '"9999999d"', "nan",
                                          '"%RETRY%G"', '"SCHEDULE_TOPIC_XXXX"', "9" * 40, '"²"', '"a b"']))
            lines[at] = f"{key}= {value}"
        elif op == "flip" and lines and lines[at]:
            i = draw(st.integers(0, len(lines[at]) - 1))
            lines[at] = lines[at][:i] + draw(st.characters(codec="utf-8")) + lines[at][i + 1:]
    return "\n".join(lines) + "\n"


@settings(SETTINGS, max_examples=15)
@given(mutated_builtin())
def test_mutated_builtin_files_load_or_fail_with_one_line_quick(text):
    """The default tier's share of the fuzzing below (15 examples; the slow tier runs 60)."""
    _accepts_or_one_line(text)


@pytest.mark.slow
@SETTINGS
@given(mutated_builtin())
def test_mutated_builtin_files_load_or_fail_with_one_line(text):
    _accepts_or_one_line(text)


HOSTILE_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**18, max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["1s", "0s", "-5m", "999999d", "10/s", "1e9/s", "../x", "%DLQ%G", "TBW102", "", "²s", "2h5m"]),
    st.lists(st.integers(-5, 200), max_size=4), st.lists(st.floats(), max_size=3),
    st.dictionaries(st.sampled_from(["at", "by", "x"]), st.sampled_from(["1s", "-1s", 5, "99999999999999999999d"]),
                    max_size=3),
)


def _table(schema: dict):
    return st.dictionaries(st.sampled_from(sorted(schema) + ["unknown_key"]), HOSTILE_VALUES, max_size=4)


GENERATED = st.fixed_dictionaries(
    {"name": st.one_of(st.just("fuzz"), HOSTILE_VALUES)},
    optional={
        **{key: HOSTILE_VALUES for key in _TOP if key != "name"},
        "broker": st.one_of(_table(_BROKER), HOSTILE_VALUES),
        "faults": st.one_of(_table(_FAULTS), HOSTILE_VALUES),
        **{name: st.one_of(st.lists(_table(schema), max_size=2), HOSTILE_VALUES) for name, schema in _ARRAYS.items()},
    },
)


@SETTINGS
@given(GENERATED)
def test_generated_documents_validate_or_fail_with_one_line(doc):
    try:
        scenario_from_dict(doc, "gen.toml")
    except ScenarioError as error:
        assert str(error).startswith("gen.toml: ") and "\n" not in str(error)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_builtin())
def test_the_cli_answers_a_rejected_file_with_exit_2(text):
    try:
        load_scenario_text(text, "fuzz.toml")
    except ScenarioError:
        pass
    else:
        return  # a valid file would run the simulator: the loader tests above cover what it accepted
    with tempfile.TemporaryDirectory(prefix="rmqsim-fuzz-") as tmp:
        path = Path(tmp) / "fuzz.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        assert main(["run", str(path), "--out", str(Path(tmp) / "out")]) == 2
        assert not (Path(tmp) / "out").exists()


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_are_rejected_with_exit_2(data):
    with tempfile.TemporaryDirectory(prefix="rmqsim-fuzz-") as tmp:
        path = Path(tmp) / "bytes.toml"
        path.write_bytes(data)
        assert main(["run", str(path), "--out", str(Path(tmp) / "out")]) == 2
